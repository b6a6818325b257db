//! `MachineSync` and `MachineSetSync` written by hand, directly on kube-runtime: no
//! `#[sync_controller]`, no sync-core engine. Only sync-core's API types
//! (`sync_core::api`) are shared. It is the baseline the benchmark measures the
//! macro-generated controllers against (`cargo bench -p e2e --bench sync`).
//!
//! Written the way a kube-rs user would write it without our scaffolding:
//!
//! * **Watches**: typed `watcher`s into reflector stores for the MAPI and CAPI kinds (and,
//!   for Machines, MAPI MachineSets); metadata-only `watcher`s for the infrastructure kinds,
//!   which are **static**: `DevMachine` and `AWSMachine` (`DevMachineTemplate`,
//!   `AWSMachineTemplate` for MachineSets) at `infrastructure.cluster.x-k8s.io/v1beta2`.
//!   A person writing one operator for known providers lists them; the dynamic discovery
//!   of sync-core's `InfraTracker` is not reproduced. Managed fields are dropped before
//!   objects are cached, as kube.rs's optimization guide recommends.
//! * **Queue**: kube-runtime's `Controller` (and `applier`) skip a request whose main object
//!   is missing from its store, and a CAPI-only Machine must still be reconciled. Two
//!   `Controller`s (one per side) would need each other's caches, and with the stable
//!   kube-runtime API a trigger from one controller's watch can arrive before the other
//!   controller's store has the change (a stale read, then no further trigger). So this
//!   version does what `applier` does without the store gate: every watch applies an event
//!   to its store first and then sends the names it concerns; kube-runtime's `scheduler`
//!   deduplicates them and holds a name while it is being reconciled; up to `concurrency`
//!   names run at once ([`queue`]).
//! * **Reconcile**: the dual fetch from the stores and `docs/design.md` §3's decision table,
//!   written out in each controller.
//!
//! Unlike sync-core, objects are decoded the plain typed way: one object that does not
//! decode fails its watch's list (as with any typed kube-runtime watcher) instead of being
//! reported and skipped.

pub mod machine;
pub mod machine_set;
mod queue;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::api::{Api, ApiResource, DynamicObject, PartialObjectMeta};
use kube::runtime::reflector::Store;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

/// Cached metadata of an infrastructure object.
pub type InfraMeta = PartialObjectMeta<DynamicObject>;

/// The error a hook returns (the name is retried with backoff).
pub type HookError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The group of the infrastructure kinds.
pub const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// The version the infrastructure kinds are watched at.
pub const INFRA_VERSION: &str = "v1beta2";

/// Which way a hook copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The Machine API is authoritative.
    MapiToCapi,
    /// Cluster API is authoritative.
    CapiToMapi,
}

/// The namespaces of the two sides.
#[derive(Clone, Debug)]
pub struct Namespaces {
    /// Machine API objects.
    pub mapi: String,
    /// Cluster API and infrastructure objects.
    pub capi: String,
}

/// What one reconcile of a name read from the caches.
#[derive(Debug)]
pub struct Fetched<M, C> {
    /// The name (the same on both sides).
    pub name: String,
    /// The MAPI object, if it exists.
    pub mapi: Option<Arc<M>>,
    /// The CAPI object, if it exists.
    pub capi: Option<Arc<C>>,
    /// The metadata of the infrastructure object the CAPI object references, if cached.
    pub infra: Option<Arc<InfraMeta>>,
}

/// The business logic of one controller.
pub trait Hooks<M, C>: Send + Sync + 'static {
    /// The Machine API is authoritative.
    fn mapi_to_capi(&self, fetched: &Fetched<M, C>) -> impl Future<Output = Result<(), HookError>> + Send;
    /// Cluster API is authoritative (`fetched.mapi` is `None` for a CAPI-only Machine).
    fn capi_to_mapi(&self, fetched: &Fetched<M, C>) -> impl Future<Output = Result<(), HookError>> + Send;
    /// One side is being deleted; `direction` is the authoritative one.
    fn deletion(
        &self,
        direction: Direction,
        fetched: &Fetched<M, C>,
    ) -> impl Future<Output = Result<(), HookError>> + Send;
}

/// An infrastructure kind watched statically: `(kind, plural)`.
pub(crate) fn infra_resource((kind, plural): (&str, &str)) -> ApiResource {
    ApiResource {
        group: INFRA_GROUP.into(),
        version: INFRA_VERSION.into(),
        api_version: format!("{INFRA_GROUP}/{INFRA_VERSION}"),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// A watch of every object of `api`, restarted with backoff, without managed fields: the
/// controllers never read them, and they are the bulk of a cached object (kube.rs's
/// optimization guide, "pruning fields"; controller-runtime's `TransformStripManagedFields`).
pub(crate) fn watch<K>(api: Api<K>) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|object| object.meta_mut().managed_fields = None)
}

/// Drives a watch into `writer` and sends the names each change concerns to `triggers`,
/// once the change is in the store. `names` says which names an object concerns (`gone`:
/// it was deleted, or is missing from a relist after a watch restart).
///
/// A (re)list only reaches the store at its end, so the names it concerns are sent then:
/// a reconcile started earlier would read the state from before the list.
pub(crate) async fn reflect<K>(
    stream: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    mut writer: Writer<K>,
    triggers: mpsc::UnboundedSender<String>,
    mut names: impl FnMut(&K, bool, &mut Vec<String>),
) where
    K: Resource + Clone + Debug + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    let reader: Store<K> = writer.as_reader();
    // The objects cached before a relist, by name, to find those deleted during the gap.
    let mut before_relist: HashMap<String, Arc<K>> = HashMap::new();
    let mut listing = false;
    let mut pending = Vec::new();
    futures::pin_mut!(stream);
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(event) => event,
            Err(error) => {
                tracing::warn!(%error, "watch failed; retrying");
                continue;
            }
        };
        writer.apply_watcher_event(&event);
        match &event {
            watcher::Event::Init => {
                listing = true;
                before_relist = reader
                    .state()
                    .into_iter()
                    .map(|object| (object.meta().name.clone().unwrap_or_default(), object))
                    .collect();
            }
            watcher::Event::InitApply(object) => {
                if let Some(name) = &object.meta().name {
                    before_relist.remove(name);
                }
                names(object, false, &mut pending);
            }
            watcher::Event::Apply(object) => names(object, false, &mut pending),
            watcher::Event::Delete(object) => names(object, true, &mut pending),
            watcher::Event::InitDone => {
                listing = false;
                for gone in std::mem::take(&mut before_relist).into_values() {
                    names(&gone, true, &mut pending);
                }
            }
        }
        if !listing {
            for name in pending.drain(..) {
                let _ = triggers.send(name);
            }
        }
    }
}

/// Whether an `apiVersion` is in `group` (`cluster.x-k8s.io/v1beta2` is in `cluster.x-k8s.io`).
pub(crate) fn in_group(api_version: &str, group: &str) -> bool {
    api_version.split_once('/').is_some_and(|(g, _)| g == group)
}
