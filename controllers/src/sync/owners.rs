//! Owner references across the two APIs, and the owners a conversion cannot express.

use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use sync_core::api::api_group;
use sync_core::api::{capi, mapi};
use sync_core::store::Store;
use sync_core::wakeups::{Wakeups, Woken};
use sync_core::{SyncContext, SyncController, SyncPair, Touched, WatchTap};

use super::Cluster;

/// An owner a conversion cannot express: the object is reported, not retried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsupportedOwner {
    /// A Machine of the control plane (owned by the ControlPlaneMachineSet).
    #[error(
        "metadata.ownerReferences: conversion of control plane machines owned by control plane machine set is currently not supported"
    )]
    ControlPlane,
    /// An owner of a kind the other API has no counterpart for.
    #[error("metadata.ownerReferences: owner kind {api_version} {kind} is not supported for conversion")]
    Kind {
        /// The owner's `apiVersion`.
        api_version: String,
        /// The owner's kind.
        kind: String,
    },
    /// More than one owner.
    #[error("metadata.ownerReferences: must have at most 1 item, has {0}")]
    TooMany(usize),
    /// A MAPI MachineSet with any owner.
    #[error("metadata.ownerReferences: owner references conversion is not supported for machine set")]
    MachineSet,
}

/// How a Machine waiting for its CAPI MachineSet learns that the set appeared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// The MachineSet sync's watch wakes it when it reports the set.
    OnEvent,
    /// Nothing here reports the set (no MachineSet sync in this process): it polls.
    Poll,
}

/// Why no owner reference can be given (yet).
#[derive(Debug, thiserror::Error)]
pub enum OwnerError {
    /// The owner cannot be converted: a field error, not retried.
    #[error(transparent)]
    Unsupported(#[from] UnsupportedOwner),
    /// The owner's mirror does not exist yet.
    #[error("CAPI MachineSet {set} does not exist yet")]
    Waiting {
        /// The CAPI MachineSet's name.
        set: String,
        /// How the Machine learns that the set appeared ([`CapiSets::wait`]).
        wake: Wake,
    },
    /// Reading the owner failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// What owns the CAPI mirror of a MAPI Machine, by the MAPI Machine's owners.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapiMachineOwner {
    /// No owner: the CAPI `Cluster`, when it exists.
    Cluster,
    /// A MAPI MachineSet: the CAPI MachineSet of the same name.
    MachineSet(String),
}

/// The owner rule of a MAPI Machine's mirror: none or the Cluster, a MAPI MachineSet's
/// mirror; a control-plane or foreign owner, or more than one, does not convert.
pub fn capi_machine_owner(owners: &[OwnerReference]) -> Result<CapiMachineOwner, UnsupportedOwner> {
    match owners {
        [] => Ok(CapiMachineOwner::Cluster),
        [owner] if owner.kind == "MachineSet" && api_group(&owner.api_version) == mapi::GROUP => {
            Ok(CapiMachineOwner::MachineSet(owner.name.clone()))
        }
        [owner] if owner.kind == "ControlPlaneMachineSet" => Err(UnsupportedOwner::ControlPlane),
        [owner] => Err(unsupported_kind(owner)),
        more => Err(UnsupportedOwner::TooMany(more.len())),
    }
}

/// A CAPI Machine converts when it has at most one owner: its MachineSet or the Cluster.
pub fn check_capi_machine_owners(owners: &[OwnerReference]) -> Result<(), UnsupportedOwner> {
    match owners {
        [] => Ok(()),
        [owner]
            if api_group(&owner.api_version) == capi::GROUP
                && matches!(owner.kind.as_str(), "MachineSet" | "Cluster") =>
        {
            Ok(())
        }
        [owner] => Err(unsupported_kind(owner)),
        more => Err(UnsupportedOwner::TooMany(more.len())),
    }
}

/// A CAPI MachineSet converts with at most one owner, the Cluster (of this API version).
pub fn check_capi_machine_set_owners(owners: &[OwnerReference]) -> Result<(), UnsupportedOwner> {
    match owners {
        [] => Ok(()),
        [owner]
            if owner.kind == "Cluster"
                && owner.api_version == format!("{}/{}", capi::GROUP, capi::VERSION) =>
        {
            Ok(())
        }
        [owner] => Err(unsupported_kind(owner)),
        more => Err(UnsupportedOwner::TooMany(more.len())),
    }
}

/// A MAPI MachineSet converts without owners: the CAPI set's owner is the Cluster.
pub fn check_mapi_machine_set_owners(owners: &[OwnerReference]) -> Result<(), UnsupportedOwner> {
    match owners {
        [] => Ok(()),
        _ => Err(UnsupportedOwner::MachineSet),
    }
}

fn unsupported_kind(owner: &OwnerReference) -> UnsupportedOwner {
    UnsupportedOwner::Kind {
        api_version: owner.api_version.clone(),
        kind: owner.kind.clone(),
    }
}

/// A controller owner reference to `owner` (`blockOwnerDeletion`, as garbage collection
/// of dependents expects).
pub fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    OwnerReference {
        controller: Some(true),
        block_owner_deletion: Some(true),
        ..owner.controller_owner_ref(&()).unwrap_or_default()
    }
}

/// The CAPI MachineSets of the MachineSet sync running in the same process, as the
/// Machine hooks read them: its cache, and where a Machine waits for a set the cache does
/// not hold yet.
#[derive(Clone)]
pub struct MirroredSets {
    /// The MachineSet sync's CAPI cache ([`sync_core::SyncController::caches`]).
    pub cache: Store<capi::MachineSet>,
    /// Machines waiting for a CAPI MachineSet, by its name: the MachineSet sync's CAPI
    /// watch wakes them into the Machine sync's
    /// [`sync_core::SyncController::reconcile_on`] ([`SetWaits`]).
    pub waiting: Wakeups,
}

/// How a Machine sync and the MachineSet sync beside it are linked: the Machine hooks park
/// a Machine whose CAPI MachineSet is not mirrored yet, the MachineSet sync's CAPI watch
/// wakes it when it reports the set, the Machine sync reconciles it, and the Machine
/// sync's MAPI watch forgets it once deleted. Both the operator and
/// `crate::machine::beside_machine_sets` link their pairs through one.
pub struct SetWaits {
    waiting: Wakeups,
    /// The names `waiting` wakes, until the Machine sync takes them.
    woken: Mutex<Option<Woken>>,
}

impl Default for SetWaits {
    fn default() -> Self {
        let (waiting, woken) = Wakeups::new();
        Self {
            waiting,
            woken: Mutex::new(Some(woken)),
        }
    }
}

impl SetWaits {
    /// The Machine sync: it reconciles the Machines woken (the first one linked; there is
    /// one) and forgets the Machines deleted.
    pub fn machines<P: SyncPair<Mapi = mapi::Machine>>(&self, sync: SyncController<P>) -> SyncController<P> {
        let woken = self.woken.lock().unwrap_or_else(PoisonError::into_inner).take();
        let sync = match woken {
            Some(woken) => sync.reconcile_on(woken),
            None => sync,
        };
        sync.with_mapi_tap(forget_deleted_machines(self.waiting.clone()))
    }

    /// The MachineSet sync: its CAPI watch wakes the Machines waiting for a set it reports.
    pub fn sets<P: SyncPair<Capi = capi::MachineSet>>(&self, sync: SyncController<P>) -> SyncController<P> {
        sync.with_capi_tap(wake_waiting_machines(self.waiting.clone()))
    }

    /// What the Machine hooks read: the MachineSet sync's CAPI cache, and where to wait.
    pub fn mirrored(&self, cache: Store<capi::MachineSet>) -> MirroredSets {
        MirroredSets {
            cache,
            waiting: self.waiting.clone(),
        }
    }

    /// Whether a Machine sync took the woken names.
    pub fn taken(&self) -> bool {
        self.woken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }
}

/// The tap for the MachineSet sync's CAPI watch: a CAPI MachineSet present (listed,
/// created or changed) wakes the Machines that wait for it.
fn wake_waiting_machines(waiting: Wakeups) -> WatchTap<capi::MachineSet> {
    Arc::new(move |touched: &Touched<'_, capi::MachineSet>| {
        if let Touched::Present(_) = touched {
            waiting.wake(touched.name());
        }
    })
}

/// The tap for the Machine sync's MAPI watch: a MAPI Machine deleted waits for no set
/// any more, so that Machines deleted while their set never comes do not pile up.
fn forget_deleted_machines(waiting: Wakeups) -> WatchTap<mapi::Machine> {
    Arc::new(move |touched: &Touched<'_, mapi::Machine>| {
        if let Touched::Gone(_) | Touched::MalformedGone(_) = touched {
            waiting.forget(touched.name());
        }
    })
}

/// The MAPI Machines a Machine sync holds: whether a Machine about to wait still exists.
pub struct CachedMachines<'a> {
    /// The Machine sync's MAPI cache.
    pub cache: &'a Store<mapi::Machine>,
    /// The MAPI namespace.
    pub namespace: &'a str,
}

/// Where the CAPI MachineSets that own CAPI Machines are read.
#[derive(Clone)]
pub struct CapiSets {
    /// Reads what the cache does not hold.
    pub api: Api<capi::MachineSet>,
    /// The CAPI namespace.
    pub namespace: String,
    /// The MachineSet sync's sets, when it runs in the same process.
    pub mirrored: Option<MirroredSets>,
}

impl CapiSets {
    /// The CAPI MachineSet `name`: from the cache, else (not cached yet, or no cache) from
    /// the API server, so that a set the cache has not seen yet is never taken as missing.
    pub async fn get(&self, name: &str) -> Result<Option<Arc<capi::MachineSet>>, kube::Error> {
        if let Some(set) = self.cached(name) {
            return Ok(Some(set));
        }
        Ok(self.api.get_opt(name).await?.map(Arc::new))
    }

    /// Machine `machine` waits for the CAPI MachineSet `name`, which [`Self::get`] did not
    /// find: it is parked until the MachineSet sync's watch reports the set. Parked, the
    /// cache is read once more, as the set may have come in between: a watched change
    /// wakes after the cache holds it, so one of the two sees it (a set that arrives in
    /// the watch's first list may be seen by neither: the caller's backstop requeue
    /// covers that; found then, it stays parked, and the set's next report wakes it once
    /// for nothing). Without a MachineSet sync in this process, nothing is parked: the
    /// caller must poll.
    ///
    /// `machines` is the Machine sync's MAPI cache: a Machine deleted after the reconcile
    /// read it is forgotten by that cache's watch once the cache dropped it, so parked
    /// after that, it would wait for nothing. Parked, the cache is asked, as for the set.
    pub fn wait(
        &self,
        name: &str,
        machine: &str,
        machines: &CachedMachines<'_>,
    ) -> Result<Arc<capi::MachineSet>, Wake> {
        let Some(mirrored) = &self.mirrored else {
            return Err(Wake::Poll);
        };
        mirrored.waiting.park(name, machine);
        if !machines.cache.contains(Some(machines.namespace), machine) {
            mirrored.waiting.forget(machine);
        }
        self.cached(name).ok_or(Wake::OnEvent)
    }

    fn cached(&self, name: &str) -> Option<Arc<capi::MachineSet>> {
        let key = ObjectRef::new(name).within(&self.namespace);
        self.mirrored.as_ref()?.cache.get(&key)
    }
}

/// The owner of a CAPI Machine mirroring `mapi` ([`capi_machine_owner`]): the same-name
/// CAPI MachineSet, or the CAPI `Cluster` when it exists.
pub async fn capi_owner_of_mapi_machine<P: SyncPair<Mapi = mapi::Machine>>(
    mapi: &mapi::Machine,
    capi_sets: &CapiSets,
    cluster: &Cluster,
    ctx: &SyncContext<P>,
) -> Result<Option<OwnerReference>, OwnerError> {
    match capi_machine_owner(mapi.owner_references())? {
        CapiMachineOwner::Cluster => Ok(cluster_owner(ctx, cluster).await?),
        CapiMachineOwner::MachineSet(name) => match capi_sets.get(&name).await? {
            Some(set) => Ok(Some(controller_ref(set.as_ref()))),
            None => match capi_sets.wait(
                &name,
                &mapi.name_any(),
                &CachedMachines {
                    cache: &ctx.caches.mapi,
                    namespace: &ctx.namespaces.mapi,
                },
            ) {
                Ok(set) => Ok(Some(controller_ref(set.as_ref()))),
                Err(wake) => Err(OwnerError::Waiting { set: name, wake }),
            },
        },
    }
}

/// The owner of a MAPI Machine mirroring `machine`: the MAPI MachineSet mirroring its
/// CAPI MachineSet owner, when `mirrors` (the MAPI MachineSets in `mapi_namespace`) holds it.
pub fn mapi_owner_of_capi_machine(
    machine: &capi::Machine,
    mirrors: Option<&Store<mapi::MachineSet>>,
    mapi_namespace: &str,
) -> Option<Vec<OwnerReference>> {
    let owner = machine
        .owner_references()
        .iter()
        .find(|o| o.kind == "MachineSet" && api_group(&o.api_version) == capi::GROUP)?;
    let set = mirrors?.get(&ObjectRef::new(&owner.name).within(mapi_namespace))?;
    Some(vec![controller_ref(set.as_ref())])
}

/// The CAPI `Cluster` named by the infrastructure name, as a non-controller owner; `None`
/// when the kind is not served or the object does not exist.
pub async fn cluster_owner<P: SyncPair>(
    ctx: &SyncContext<P>,
    cluster: &Cluster,
) -> Result<Option<OwnerReference>, kube::Error> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(capi::GROUP, capi::VERSION, "Cluster"),
        "clusters",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ctx.namespaces.capi, &resource);
    match api.get_opt(&cluster.infrastructure_name).await {
        Ok(Some(object)) => Ok(Some(OwnerReference {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            name: object.name_any(),
            uid: object.uid().unwrap_or_default(),
            controller: Some(false),
            block_owner_deletion: Some(true),
        })),
        Ok(None) => Ok(None),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use futures::{FutureExt, StreamExt};
    use sync_core::store::{Encoding, Writer};

    use super::*;

    /// Sets read from `cache` (and from nowhere else: nothing listens on the API's port,
    /// and `wait` sends no request).
    fn sets(mirrored: Option<MirroredSets>) -> Result<CapiSets, Box<dyn std::error::Error>> {
        let client = kube::Client::try_from(kube::Config::new("http://127.0.0.1:9".parse()?))?;
        Ok(CapiSets {
            api: Api::namespaced(client, "capi"),
            namespace: "capi".into(),
            mirrored,
        })
    }

    /// A MAPI Machine `name` in namespace "mapi".
    fn machine(name: &str) -> mapi::Machine {
        let mut machine = mapi::Machine::default();
        machine.metadata.name = Some(name.into());
        machine.metadata.namespace = Some("mapi".into());
        machine
    }

    /// A MAPI cache holding the Machines `names`.
    fn machines(names: &[&str]) -> Writer<mapi::Machine> {
        let mut writer = Writer::<mapi::Machine>::new(Encoding::MessagePack);
        for name in names {
            writer.apply_decoded(Arc::new(machine(name)));
        }
        writer
    }

    #[tokio::test]
    async fn a_machine_waits_on_the_event_with_a_machine_set_sync_and_polls_without()
    -> Result<(), Box<dyn std::error::Error>> {
        let mut writer = Writer::<capi::MachineSet>::new(Encoding::MessagePack);
        let (waiting, mut woken) = Wakeups::new();
        let mirrored = MirroredSets {
            cache: writer.as_reader(),
            waiting: waiting.clone(),
        };
        let with_sync = sets(Some(mirrored))?;
        let cache = machines(&["ws-a", "ws-b", "ws-c"]).as_reader();
        let cached = CachedMachines {
            cache: &cache,
            namespace: "mapi",
        };

        // Not there: parked, woken when the set's watch reports it.
        assert_eq!(with_sync.wait("ws", "ws-a", &cached).err(), Some(Wake::OnEvent));
        assert_eq!(waiting.parked(), 1);
        let mut set = capi::MachineSet::new("ws", capi::MachineSetSpec::default());
        set.metadata.namespace = Some("capi".into());
        set.metadata.uid = Some("set-uid".into());
        let set = Arc::new(set);
        writer.apply_decoded(set.clone());
        let tap = wake_waiting_machines(waiting.clone());
        tap(&Touched::Gone(set.as_ref()));
        assert_eq!(waiting.parked(), 1, "only a set present wakes");
        tap(&Touched::Present(set.as_ref()));
        assert_eq!(woken.next().now_or_never().flatten().as_deref(), Some("ws-a"));

        // There by the second look (it came between the read and the park): no wait.
        let found = with_sync
            .wait("ws", "ws-b", &cached)
            .map_err(|wake| format!("{wake:?}"))?;
        assert_eq!(found.metadata.uid.as_deref(), Some("set-uid"));

        // No MachineSet sync in the process: nothing parks, the caller polls.
        assert_eq!(sets(None)?.wait("ws", "ws-c", &cached).err(), Some(Wake::Poll));
        Ok(())
    }

    /// The race the tap alone leaves: a reconcile read the Machine, the Machine was
    /// deleted (the cache dropped it, then the tap forgot it while it was parked nowhere
    /// yet), then the reconcile parks it. It must not stay parked; a Machine still cached
    /// does.
    #[tokio::test]
    async fn a_machine_deleted_before_it_parks_does_not_stay_parked() -> Result<(), Box<dyn std::error::Error>>
    {
        let (waiting, _woken) = Wakeups::new();
        let mirrored = MirroredSets {
            cache: Writer::<capi::MachineSet>::new(Encoding::MessagePack).as_reader(),
            waiting: waiting.clone(),
        };
        let with_sync = sets(Some(mirrored))?;
        let mut writer = machines(&["stays", "deleted"]);
        let cache = writer.as_reader();
        let cached = CachedMachines {
            cache: &cache,
            namespace: "mapi",
        };
        writer.apply_watcher_event(&kube::runtime::watcher::Event::Delete(machine("deleted")));
        assert!(!cache.contains(Some("mapi"), "deleted"));

        assert_eq!(
            with_sync.wait("ws", "deleted", &cached).err(),
            Some(Wake::OnEvent)
        );
        assert_eq!(waiting.parked(), 0, "the deleted Machine waits for nothing");
        assert_eq!(with_sync.wait("ws", "stays", &cached).err(), Some(Wake::OnEvent));
        assert_eq!(waiting.parked(), 1, "a cached Machine waits");
        Ok(())
    }

    #[test]
    fn a_machine_deleted_while_it_waits_waits_no_more() {
        let (waiting, mut woken) = Wakeups::new();
        waiting.park("ws", "gone-a");
        waiting.park("ws", "stays-b");
        let tap = forget_deleted_machines(waiting.clone());
        let machine = |name: &str| {
            let mut machine = mapi::Machine::default();
            machine.metadata.name = Some(name.into());
            machine
        };
        tap(&Touched::Present(&machine("stays-b")));
        assert_eq!(waiting.parked(), 2, "a Machine changed still waits");
        tap(&Touched::Gone(&machine("gone-a")));
        assert_eq!(waiting.parked(), 1);
        waiting.wake("ws");
        assert_eq!(woken.next().now_or_never().flatten().as_deref(), Some("stays-b"));
        assert_eq!(
            woken.next().now_or_never(),
            None,
            "the deleted Machine is not woken"
        );
    }

    fn owner(api_version: &str, kind: &str, name: &str) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: name.into(),
            ..OwnerReference::default()
        }
    }

    fn capi_owner(kind: &str) -> OwnerReference {
        owner(&format!("{}/{}", capi::GROUP, capi::VERSION), kind, "x")
    }

    /// Machine row `MachineAPI`: owned by the same-name CAPI MachineSet or else the Cluster.
    #[test]
    fn machine_mirror_is_owned_by_the_same_name_capi_set_or_else_the_cluster() {
        assert_eq!(capi_machine_owner(&[]), Ok(CapiMachineOwner::Cluster));
        let set = owner("machine.openshift.io/v1beta1", "MachineSet", "workers");
        assert_eq!(
            capi_machine_owner(&[set]),
            Ok(CapiMachineOwner::MachineSet("workers".into()))
        );
    }

    /// Machine row "a control-plane or foreign owner": reported, not converted.
    #[test]
    fn machine_with_a_control_plane_or_foreign_owner_does_not_convert() {
        let cpms = owner("machine.openshift.io/v1", "ControlPlaneMachineSet", "cluster");
        assert_eq!(capi_machine_owner(&[cpms]), Err(UnsupportedOwner::ControlPlane));
        let foreign = owner("apps/v1", "Deployment", "d");
        let refused = capi_machine_owner(std::slice::from_ref(&foreign)).map_err(|e| e.to_string());
        assert_eq!(
            refused,
            Err(
                "metadata.ownerReferences: owner kind apps/v1 Deployment is not supported for conversion"
                    .into()
            )
        );
        assert_eq!(
            capi_machine_owner(&[foreign.clone(), foreign]),
            Err(UnsupportedOwner::TooMany(2))
        );
    }

    /// Machine row `ClusterAPI`: a CAPI Machine owned by its MachineSet or the Cluster converts.
    #[test]
    fn capi_machine_converts_with_its_set_or_the_cluster_as_owner() {
        assert_eq!(check_capi_machine_owners(&[]), Ok(()));
        assert_eq!(check_capi_machine_owners(&[capi_owner("MachineSet")]), Ok(()));
        assert_eq!(check_capi_machine_owners(&[capi_owner("Cluster")]), Ok(()));
        let refused = check_capi_machine_owners(&[capi_owner("MachineDeployment")]);
        assert!(
            matches!(refused, Err(UnsupportedOwner::Kind { .. })),
            "{refused:?}"
        );
        let two = [capi_owner("MachineSet"), capi_owner("Cluster")];
        assert_eq!(
            check_capi_machine_owners(&two).map_err(|e| e.to_string()),
            Err("metadata.ownerReferences: must have at most 1 item, has 2".into())
        );
    }

    /// MachineSet rows: a MAPI set has no owners; a CAPI set at most the Cluster.
    #[test]
    fn machine_sets_convert_without_owners_or_with_the_cluster_only() {
        assert_eq!(check_mapi_machine_set_owners(&[]), Ok(()));
        assert_eq!(
            check_mapi_machine_set_owners(&[capi_owner("Cluster")]).map_err(|e| e.to_string()),
            Err(
                "metadata.ownerReferences: owner references conversion is not supported for machine set"
                    .into()
            )
        );
        assert_eq!(check_capi_machine_set_owners(&[capi_owner("Cluster")]), Ok(()));
        let old_cluster = owner("cluster.x-k8s.io/v1beta1", "Cluster", "c");
        assert!(check_capi_machine_set_owners(&[old_cluster]).is_err());
        assert!(check_capi_machine_set_owners(&[capi_owner("MachineDeployment")]).is_err());
    }
}
