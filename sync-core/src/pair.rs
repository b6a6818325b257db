//! What a synced pair is: the per-pair facts `#[sync_controller]` declares.
//!
//! Everything else — watches, caches, the decision table, the work queue — is generic over
//! [`SyncPair`] and lives in the engine.

use std::borrow::Cow;
use std::fmt::Debug;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use kube::Resource;
use kube::core::NamespaceResourceScope;
use kube::core::object::HasStatus;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::api::{AuthoritativeApi, InfraRef, MalformedRef, MapiStatus, SyncStatus};

/// A namespaced kind: every synced object lives in a namespace (MAPI objects in
/// `openshift-machine-api`, CAPI ones in `openshift-cluster-api`). Checked first on the
/// declared kinds, so that a cluster-scoped kind is told to add `namespaced` rather than
/// shown a scope mismatch ([`SyncObject`] carries the scope the engine relies on).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is cluster-scoped, but a synced kind must be namespaced",
    label = "a cluster-scoped kind",
    note = "add `namespaced` to the kind's `#[kube(...)]` attribute"
)]
pub trait Namespaced: Resource {}

#[diagnostic::do_not_recommend]
impl<K: Resource> Namespaced for K where K::Scope: NamespacedScope {}

/// The scope of a namespaced kind (kube's [`NamespaceResourceScope`]).
pub trait NamespacedScope {}

impl NamespacedScope for NamespaceResourceScope {}

/// A namespaced Kubernetes object type the engine can watch and cache.
pub trait SyncObject:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + Debug
    + DeserializeOwned
    + Serialize
    + Send
    + Sync
    + 'static
{
}

impl<T> SyncObject for T where
    T: Resource<DynamicType = (), Scope = NamespaceResourceScope>
        + Clone
        + Debug
        + DeserializeOwned
        + Serialize
        + Send
        + Sync
        + 'static
{
}

/// A Machine API object: its status carries the sync-status block ([`SyncStatus`]), whose
/// `authoritativeAPI` selects the direction of every reconcile.
///
/// Every `kube::CustomResource` whose status implements [`MapiStatus`] is one, through the
/// blanket impl below: a new MAPI kind embeds [`SyncStatus`] and writes nothing else.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Machine API object (`sync_core::MapiObject`)",
    label = "not a MAPI kind: its status must carry `sync_core::api::SyncStatus`",
    note = "a MAPI kind is a namespaced `kube::CustomResource` whose status implements `sync_core::api::MapiStatus` (embed `SyncStatus` with `#[serde(flatten)]`, or use it as the status)"
)]
pub trait MapiObject: SyncObject {
    /// The sync-status block, `None` while the object has no status.
    fn sync_status(&self) -> Option<&SyncStatus>;

    /// `status.authoritativeAPI`, the field that selects the sync direction.
    fn authoritative_api(&self) -> Option<&AuthoritativeApi> {
        self.sync_status()?.authoritative_api.as_ref()
    }
}

impl<K> MapiObject for K
where
    K: SyncObject + HasStatus,
    K::Status: MapiStatus,
{
    fn sync_status(&self) -> Option<&SyncStatus> {
        self.status().map(MapiStatus::sync_status)
    }
}

/// What to do with a CAPI object that has no MAPI mirror while it lives.
///
/// Under either policy, a CAPI-only object **being deleted** goes to
/// `reconcile_deletion(CapiToMapi)` with `mapi: None` (`docs/design.md` §5): once the MAPI
/// side is gone, only that hook can release the pair's finalizer on the CAPI side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapiOnly {
    /// No sync hook runs for it (MachineSets: a CAPI-only set is not ours to mirror); its
    /// deletion still reaches the deletion hook.
    Ignore,
    /// Mirror it when one of its owners is a CAPI object whose MAPI mirror exists
    /// (Machines: a CAPI Machine of a mirrored MachineSet gets a MAPI mirror).
    MirrorIfOwnerMirrored,
}

/// The per-pair glue that `#[sync_controller]` generates.
///
/// Implement it by hand only when the macro cannot express a pair; the generated impl is
/// what a person would write.
pub trait SyncPair: Send + Sync + 'static {
    /// The Machine API kind, watched in the MAPI namespace.
    type Mapi: Namespaced + MapiObject;
    /// The Cluster API kind, watched in the CAPI namespace.
    type Capi: Namespaced + SyncObject;
    /// The MAPI kind whose objects mirror the CAPI owners of CAPI-only objects, under
    /// [`CapiOnly::MirrorIfOwnerMirrored`]: a CAPI owner `kind` of this type's kind, in the
    /// CAPI group, is mirrored when a MAPI object of this type has the owner's name.
    /// [`NoOwner`] for [`CapiOnly::Ignore`]. It is a MAPI kind: the owner's mirror is on
    /// the Machine API side.
    type OwnerMirror: MapiObject;

    /// Name for logs, metrics and events (`machine-sync`).
    const NAME: &'static str;
    /// The CAPI-only policy.
    const CAPI_ONLY: CapiOnly;
    /// The Rust field path of the CAPI kind's infrastructure reference
    /// (`"spec.infrastructure_ref"`), `None` for a pair without one. A pair with one
    /// watches the infrastructure kinds its CAPI objects reference.
    const INFRA_REF: Option<&'static str>;

    /// The infrastructure reference of a CAPI object, if the pair has one.
    fn infra_ref(capi: &Self::Capi) -> Result<Option<InfraRef>, MalformedRef>;
}

/// The [`SyncPair::OwnerMirror`] of pairs whose CAPI-only policy is [`CapiOnly::Ignore`]:
/// a placeholder kind that no watch is ever started for. (Also the placeholder kind of the
/// impl `#[sync_controller]` emits when its attribute has an error, so that the error is
/// the only one.)
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct NoOwner {
    /// Unused; present because every [`Resource`] has metadata.
    pub metadata: ObjectMeta,
    /// Always `None`; present so that the placeholder is a [`MapiObject`].
    #[serde(default, skip)]
    pub status: Option<SyncStatus>,
}

impl HasStatus for NoOwner {
    type Status = SyncStatus;
    fn status(&self) -> Option<&SyncStatus> {
        self.status.as_ref()
    }
    fn status_mut(&mut self) -> &mut Option<SyncStatus> {
        &mut self.status
    }
}

impl Resource for NoOwner {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "NoOwner".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v0".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "noowners".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The CAPI kind an owner reference must name to be an owner mirrored by `P::OwnerMirror`.
pub fn owner_kind<P: SyncPair>() -> Cow<'static, str> {
    <P::OwnerMirror as Resource>::kind(&())
}
