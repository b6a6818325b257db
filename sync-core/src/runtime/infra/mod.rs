//! Dynamic watches on the infrastructure kinds that CAPI objects reference.
//!
//! The kinds are not known at compile time: a CAPI Machine may reference an AWSMachine, a
//! DevMachine, or a kind whose CRD is installed tomorrow. The [`InfraTracker`] keeps, per
//! controller, which CAPI object references which infrastructure object; it runs one
//! metadata-only watch per referenced GroupKind in the CAPI namespace, shared by every
//! controller, and maps each infrastructure event to the names it must reconcile.
//!
//! * Each watch caches the whole objects by default ([`InfraCache::Objects`]): the hooks
//!   read an InfraMachine's spec, status and apply entries on every reconcile, and one
//!   cache read is far cheaper than a GET per reconcile. Controllers whose hooks never
//!   read them can keep metadata only ([`InfraCache::Metadata`]).
//!
//! * A GroupKind is watched from its first reference and stopped a grace period after its
//!   last one goes away.
//! * A GroupKind that cannot be resolved (no CRD, no permission) is retried with capped
//!   backoff, with a Warning Event on each referencing CAPI object and a log line; when
//!   the CRD appears, the watch starts without a restart.
//! * A malformed reference is a Warning Event on the CAPI object.
//! * Dropped watches and 410 Expired relist; objects gone meanwhile still trigger.

mod mapping;
mod object;
mod resolve;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, DynamicObject, ObjectMeta};
use kube::core::ApiResource;
use kube::runtime::events::{Event, EventType, Reporter};

use crate::runtime::events::Recorder;
use crate::runtime::hash::Map;
use crate::runtime::index::{NameIndex, Names};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

pub use mapping::names_to_reconcile;
use object::InfraMetadata;
pub use object::InfraObject;
pub use resolve::{
    Resolution, ResolveError, choose_version, newest_contract_version, resolve, resolve_served,
};

use crate::api::{GroupKind, InfraRef, MalformedRef};
use crate::pair::SyncPair;
use crate::runtime::queue::Backoff;
use crate::runtime::reflect::{Listed, Touched, map_event, reflect};
use crate::runtime::store::{Encoding, Store, Writer};

/// What the infrastructure caches keep of each object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InfraCache {
    /// Metadata only (a metadata watch): enough to trigger reconciles; whole objects are
    /// read from the API server.
    Metadata,
    /// The whole object (`metadata.managedFields` but for apply entries dropped, as in
    /// every cache; the rest as JSON text, see [`InfraObject`]): hooks read it from the
    /// cache.
    Objects,
}

/// What a cache says about one object.
#[derive(Clone, Debug)]
pub enum Lookup {
    /// The cache holds it.
    Cached(Arc<InfraObject>),
    /// Its kind's cache has listed and does not hold it: it does not exist (as far as
    /// the watch has seen; as controller-runtime's cached client, a miss is NotFound).
    Absent,
    /// No cache can tell: the kind is not watched, has not listed yet, or is cached as
    /// metadata only. Read it from the API server.
    Unknown,
}

/// How the tracker watches.
#[derive(Clone, Debug)]
pub struct InfraConfig {
    /// The CAPI namespace, where infrastructure objects live.
    pub namespace: String,
    /// How long a GroupKind's watch outlives its last reference (so that a reference
    /// replaced by another of the same kind does not restart the watch).
    pub grace: Duration,
    /// Retry of a GroupKind that cannot be resolved.
    pub retry: Backoff,
    /// How the watches list and watch.
    pub watcher: watcher::Config,
    /// The `reportingInstance` of its Events (the pod name).
    pub instance: Option<String>,
    /// How long a controller's workers wait at start for the kinds its CAPI objects
    /// reference to list (or fail to resolve), so that the first reconcile of each pair
    /// already has its infrastructure object; past it they start anyway.
    pub first_list_wait: Duration,
    /// What the caches keep of each object.
    pub cache: InfraCache,
    /// The version to watch and write a kind at, over its CRD's contract label and
    /// discovery's preference: the version the hooks' conversion speaks (the objects it
    /// reads must decode as that version, and the API server converts the rest).
    pub versions: BTreeMap<GroupKind, String>,
}

impl InfraConfig {
    /// Defaults for `namespace`: a 2 s grace, retries from 100 ms up to 30 s, workers
    /// waiting up to 10 s for the first lists, whole objects cached.
    pub fn new(namespace: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            grace: Duration::from_secs(2),
            retry: Backoff {
                base: Duration::from_millis(100),
                max: Duration::from_secs(30),
            },
            watcher: watcher::Config::default(),
            instance: None,
            first_list_wait: Duration::from_secs(10),
            cache: InfraCache::Objects,
            versions: BTreeMap::new(),
        }
    }

    /// The version `group_kind` is read and written at: a reference's own (`hint`), else
    /// the pinned one, else none (the contract label or discovery decides).
    fn version<'a>(&'a self, group_kind: &GroupKind, hint: Option<&'a str>) -> Option<&'a str> {
        hint.or_else(|| self.versions.get(group_kind).map(String::as_str))
    }
}

/// The state of one GroupKind's watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchStatus {
    /// Looking up its version and resource.
    Resolving,
    /// It cannot be resolved; retrying with backoff.
    Failed(String),
    /// Watching at this version.
    Watching {
        /// The version watched.
        version: String,
    },
}

/// Shared dynamic watches on infrastructure kinds; clone it into every controller.
#[derive(Clone)]
pub struct InfraTracker {
    inner: Arc<Inner>,
}

struct Inner {
    client: Client,
    config: InfraConfig,
    state: Mutex<State>,
    /// Bumped whenever a watch is added, resolved or fails (for [`InfraTracker::listed`]).
    changes: tokio::sync::watch::Sender<u64>,
}

#[derive(Default)]
struct State {
    controllers: Vec<Registered>,
    watches: HashMap<GroupKind, Watch>,
    generation: u64,
}

/// One controller's references.
struct Registered {
    capi_api_version: String,
    capi_kind: String,
    triggers: mpsc::UnboundedSender<String>,
    recorder: Recorder,
    /// CAPI object name → its reference.
    refs: Map<Box<str>, Tracked>,
    /// The kinds `refs` point to, each once (a fleet references one or two).
    targets: Vec<Arc<Target>>,
    /// GroupKind → infrastructure object name → the CAPI objects referencing it.
    referrers: HashMap<GroupKind, NameIndex>,
}

/// A kind references point to, with the version they gave (v1beta1 style) or none.
#[derive(Debug, PartialEq, Eq)]
struct Target {
    group_kind: GroupKind,
    version: Option<String>,
}

/// One CAPI object's reference as the tracker keeps it: its kind shared, its name.
struct Tracked {
    target: Arc<Target>,
    name: Box<str>,
}

impl Tracked {
    fn is(&self, reference: &InfraRef) -> bool {
        let Target { group_kind, version } = &*self.target;
        *self.name == reference.name
            && group_kind.group == reference.group
            && group_kind.kind == reference.kind
            && *version == reference.version
    }

    fn to_ref(&self) -> InfraRef {
        InfraRef {
            group: self.target.group_kind.group.clone(),
            version: self.target.version.clone(),
            kind: self.target.group_kind.kind.clone(),
            name: self.name.to_string(),
        }
    }
}

impl Registered {
    /// The shared [`Target`] of `reference`, added if new.
    fn target(&mut self, reference: &InfraRef) -> Arc<Target> {
        let wanted = Target {
            group_kind: reference.group_kind(),
            version: reference.version.clone(),
        };
        if let Some(target) = self.targets.iter().find(|target| ***target == wanted) {
            return target.clone();
        }
        let target = Arc::new(wanted);
        self.targets.push(target.clone());
        target
    }
}

struct Watch {
    references: usize,
    generation: u64,
    status: WatchStatus,
    /// The kind as the watch resolved it (the resource it watches, and every served one).
    resolution: Option<Resolution>,
    store: Option<Store<InfraObject>>,
    /// Set once the first list's objects were dispatched to the controllers.
    listed: Option<Listed>,
    task: Option<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let state = self
            .state
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for watch in state.watches.values() {
            if let Some(task) = &watch.task {
                task.abort();
            }
        }
    }
}

impl InfraTracker {
    /// A tracker with no watches yet.
    pub fn new(client: Client, config: InfraConfig) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                config,
                state: Mutex::default(),
                changes: tokio::sync::watch::Sender::new(0),
            }),
        }
    }

    /// Registers `controller`, of pair `P` (its Events carry that name); the registration reports its CAPI objects'
    /// references and yields the names infrastructure changes reconcile.
    pub fn register<P: SyncPair>(&self, controller: &str) -> InfraRegistration {
        let (triggers, receiver) = mpsc::unbounded_channel();
        let recorder = Recorder::new(
            self.inner.client.clone(),
            Reporter {
                controller: controller.to_owned(),
                instance: self.inner.config.instance.clone(),
            },
        );
        let mut state = self.inner.lock();
        state.controllers.push(Registered {
            capi_api_version: <P::Capi as Resource>::api_version(&()).into_owned(),
            capi_kind: <P::Capi as Resource>::kind(&()).into_owned(),
            triggers,
            recorder,
            refs: Map::default(),
            targets: Vec::new(),
            referrers: HashMap::new(),
        });
        let id = state.controllers.len() - 1;
        InfraRegistration {
            handle: ControllerHandle {
                inner: self.inner.clone(),
                id,
            },
            triggers: receiver,
        }
    }

    /// Every GroupKind watched or being resolved, and its state.
    pub fn watches(&self) -> BTreeMap<GroupKind, WatchStatus> {
        self.inner
            .lock()
            .watches
            .iter()
            .map(|(gk, watch)| (gk.clone(), watch.status.clone()))
            .collect()
    }

    /// How many objects each watched GroupKind's cache holds.
    pub fn cache_sizes(&self) -> BTreeMap<GroupKind, usize> {
        self.inner
            .lock()
            .watches
            .iter()
            .filter_map(|(gk, watch)| Some((gk.clone(), watch.store.as_ref()?.len())))
            .collect()
    }

    /// Waits until each of `kinds` has listed into its cache and dispatched the list's
    /// names to the controllers, or failed to resolve, for at most
    /// [`InfraConfig::first_list_wait`]; returns the kinds still pending then.
    ///
    /// A kind not watched yet is waited for too: the CAPI objects' references are reported
    /// just after the CAPI cache has listed, so a kind read from that cache may appear a
    /// moment later.
    pub async fn listed(&self, kinds: &HashSet<GroupKind>) -> Vec<GroupKind> {
        let deadline = tokio::time::Instant::now() + self.inner.config.first_list_wait;
        let mut changes = self.inner.changes.subscribe();
        let mut pending: Vec<GroupKind> = kinds.iter().cloned().collect();
        loop {
            // Kinds with a cache: wait for its list; failed kinds are done; the others
            // wait for the next change of the tracker's state.
            let mut lists = Vec::new();
            let mut unresolved = Vec::new();
            {
                let state = self.inner.lock();
                for group_kind in pending {
                    match state.watches.get(&group_kind) {
                        Some(Watch {
                            status: WatchStatus::Failed(_),
                            ..
                        }) => {}
                        Some(Watch {
                            listed: Some(listed), ..
                        }) => lists.push((group_kind, listed.clone())),
                        _ => unresolved.push(group_kind),
                    }
                }
                changes.borrow_and_update();
            }
            let mut still = Vec::new();
            for (group_kind, listed) in lists {
                match tokio::time::timeout_at(deadline, listed.wait()).await {
                    Ok(_) => {}
                    Err(_) => still.push(group_kind),
                }
            }
            if unresolved.is_empty() || tokio::time::Instant::now() >= deadline {
                still.extend(unresolved);
                return still;
            }
            pending = unresolved;
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return pending;
            }
        }
    }

    /// The cached object `reference` names, if its kind is watched and the cache holds it
    /// (whole or metadata only, see [`InfraConfig::cache`]).
    pub fn cached(&self, reference: &InfraRef) -> Option<Arc<InfraObject>> {
        match self.lookup(&reference.group_kind(), &reference.name, true) {
            Lookup::Cached(object) => Some(object),
            Lookup::Absent | Lookup::Unknown => None,
        }
    }

    /// What the cache of `group_kind` says about the object `name`; `metadata`: whether a
    /// metadata-only cache answers too.
    pub fn lookup(&self, group_kind: &GroupKind, name: &str, metadata: bool) -> Lookup {
        if !metadata && self.inner.config.cache == InfraCache::Metadata {
            return Lookup::Unknown;
        }
        let Some(store) = self.listed_store(group_kind) else {
            return Lookup::Unknown;
        };
        // The cache's MessagePack keeps a metadata-only object's missing body missing.
        match store.get_named(Some(&self.inner.config.namespace), name) {
            Some(object) => Lookup::Cached(object),
            None => Lookup::Absent,
        }
    }

    /// The resourceVersion of the cached object `reference` names, without decoding it;
    /// `None` when the cache does not hold it (or has not listed).
    pub fn cached_version(&self, reference: &InfraRef) -> Option<String> {
        let store = self.listed_store(&reference.group_kind())?;
        store.resource_version(Some(&self.inner.config.namespace), &reference.name)
    }

    /// The cache of `group_kind`, once it has listed.
    fn listed_store(&self, group_kind: &GroupKind) -> Option<Store<InfraObject>> {
        let state = self.inner.lock();
        let Some(Watch {
            store: Some(store),
            resolution: Some(_),
            ..
        }) = state.watches.get(group_kind)
        else {
            return None;
        };
        store.is_ready().then(|| store.clone())
    }

    /// The whole object `reference` names: from the cache when it can tell, else from the
    /// API server (the reference's version, if any, is preferred when the kind must be
    /// resolved). A cache that has not listed yet never hides an existing object, and one
    /// that holds the kind at another version than the reference's is not asked: the API
    /// server converts.
    pub async fn get(&self, reference: &InfraRef) -> Result<Option<Arc<DynamicObject>>, ResolveError> {
        let group_kind = reference.group_kind();
        let lookup = if self.caches_at(&group_kind, reference.version.as_deref()) {
            self.lookup(&group_kind, &reference.name, false)
        } else {
            Lookup::Unknown
        };
        match lookup {
            Lookup::Cached(object) => Ok(Some(Arc::new(object.to_dynamic()))),
            Lookup::Absent => Ok(None),
            Lookup::Unknown => Ok(self.fetch(reference).await?.map(Arc::new)),
        }
    }

    /// Whether the cache of `group_kind` holds its objects at `version` (`None`: any).
    fn caches_at(&self, group_kind: &GroupKind, version: Option<&str>) -> bool {
        let Some(version) = version else { return true };
        let state = self.inner.lock();
        state
            .watches
            .get(group_kind)
            .and_then(|w| w.resolution.as_ref())
            .is_none_or(|r| r.chosen.version == version)
    }

    /// The whole object `reference` names, read from the API server.
    pub async fn fetch(&self, reference: &InfraRef) -> Result<Option<DynamicObject>, ResolveError> {
        let (api, _) = self
            .api(&reference.group_kind(), reference.version.as_deref())
            .await?;
        api.get_opt(&reference.name)
            .await
            .map_err(|source| ResolveError::Api {
                group_kind: reference.group_kind(),
                source,
            })
    }

    /// A client for the objects of `group_kind` in the CAPI namespace, and the resource it
    /// resolved to (a watched kind's resolution is reused; `hint`: a version to prefer).
    pub async fn api(
        &self,
        group_kind: &GroupKind,
        hint: Option<&str>,
    ) -> Result<(Api<DynamicObject>, ApiResource), ResolveError> {
        let version = self.inner.config.version(group_kind, hint);
        // The watch's resolution, at the caller's version if it has one (a body is written
        // at its own apiVersion); a version the watch's discovery did not list is resolved
        // afresh (it may be served since, else the error says which versions are).
        let known = self
            .inner
            .lock()
            .watches
            .get(group_kind)
            .and_then(|w| w.resolution.as_ref()?.at(version).cloned());
        let resource = match known {
            Some(resource) => resource,
            None => resolve(&self.inner.client, group_kind, version).await?,
        };
        let api = Api::namespaced_with(self.inner.client.clone(), &self.inner.config.namespace, &resource);
        Ok((api, resource))
    }
}

/// A controller's link to the tracker; see [`InfraTracker::register`].
pub struct InfraRegistration {
    handle: ControllerHandle,
    triggers: mpsc::UnboundedReceiver<String>,
}

impl InfraRegistration {
    /// The handle that reports references.
    pub fn tracker(&self) -> ControllerHandle {
        self.handle.clone()
    }

    /// The next name an infrastructure change reconciles.
    pub async fn next_trigger(&mut self) -> Option<String> {
        self.triggers.recv().await
    }

    /// The next name already sent, if any (without waiting).
    pub fn try_next_trigger(&mut self) -> Option<String> {
        self.triggers.try_recv().ok()
    }
}

/// Reports one controller's CAPI objects' references to the tracker.
#[derive(Clone)]
pub struct ControllerHandle {
    inner: Arc<Inner>,
    id: usize,
}

impl ControllerHandle {
    /// The reference the CAPI object `capi_name` had when last reported (none when it
    /// has none, or a malformed one).
    pub fn reference(&self, capi_name: &str) -> Option<InfraRef> {
        let state = self.inner.lock();
        state
            .controllers
            .get(self.id)?
            .refs
            .get(capi_name)
            .map(Tracked::to_ref)
    }

    /// The kinds this controller's CAPI objects reference now.
    pub fn kinds(&self) -> HashSet<GroupKind> {
        let state = self.inner.lock();
        state
            .controllers
            .get(self.id)
            .map_or_else(HashSet::new, |controller| {
                controller
                    .referrers
                    .iter()
                    .filter(|(_, by_name)| !by_name.is_empty())
                    .map(|(group_kind, _)| group_kind.clone())
                    .collect()
            })
    }

    /// CAPI object `capi_name` now has `reference` (`None`: the object is gone).
    pub fn track(&self, capi_name: &str, reference: Option<Result<Option<InfraRef>, MalformedRef>>) {
        let (new, malformed) = match reference {
            Some(Ok(reference)) => (reference, None),
            Some(Err(error)) => (None, Some(error)),
            None => (None, None),
        };
        let mut state = self.inner.lock();
        if let Some(error) = malformed {
            tracing::warn!(name = capi_name, %error, "malformed infrastructure reference");
            let note = format!("{}/{capi_name}: {error}", self.inner.config.namespace);
            self.inner
                .warn(&state, self.id, capi_name, "InvalidInfrastructureReference", note);
        }
        let old = state.controllers.get(self.id).and_then(|c| c.refs.get(capi_name));
        let unchanged = match (old, &new) {
            (Some(old), Some(new)) => old.is(new),
            (None, None) => true,
            _ => false,
        };
        if unchanged {
            return;
        }
        let old = old.map(Tracked::to_ref);
        if let Some(old) = old {
            self.inner.forget_reference(&mut state, self.id, capi_name, &old);
        }
        if let Some(new) = new {
            self.inner.add_reference(&mut state, self.id, capi_name, new);
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add_reference(self: &Arc<Self>, state: &mut State, id: usize, capi_name: &str, reference: InfraRef) {
        let group_kind = reference.group_kind();
        let Some(controller) = state.controllers.get_mut(id) else {
            return;
        };
        controller
            .referrers
            .entry(group_kind.clone())
            .or_default()
            .add(&reference.name, capi_name);
        let tracked = Tracked {
            target: controller.target(&reference),
            name: reference.name.as_str().into(),
        };
        controller.refs.insert(capi_name.into(), tracked);
        if let Some(watch) = state.watches.get_mut(&group_kind) {
            watch.references += 1;
            if let WatchStatus::Failed(error) = &watch.status {
                let note = format!("cannot watch {group_kind}: {error}");
                self.warn(state, id, capi_name, "InfrastructureKindUnavailable", note);
            }
            return;
        }
        state.generation += 1;
        let generation = state.generation;
        tracing::info!(%group_kind, "watching infrastructure kind");
        let version = self
            .config
            .version(&group_kind, reference.version.as_deref())
            .map(str::to_owned);
        let task = tokio::spawn(run_watch(Arc::downgrade(self), group_kind.clone(), version));
        state.watches.insert(
            group_kind,
            Watch {
                references: 1,
                generation,
                status: WatchStatus::Resolving,
                resolution: None,
                store: None,
                listed: None,
                task: Some(task),
            },
        );
        self.changed();
    }

    fn forget_reference(
        self: &Arc<Self>,
        state: &mut State,
        id: usize,
        capi_name: &str,
        reference: &InfraRef,
    ) {
        let group_kind = reference.group_kind();
        if let Some(controller) = state.controllers.get_mut(id) {
            controller.refs.remove(capi_name);
            controller.targets.retain(|target| Arc::strong_count(target) > 1);
            if let Some(by_name) = controller.referrers.get_mut(&group_kind) {
                by_name.remove(&reference.name, capi_name);
                if by_name.is_empty() {
                    controller.referrers.remove(&group_kind);
                }
            }
        }
        let Some(watch) = state.watches.get_mut(&group_kind) else {
            return;
        };
        watch.references = watch.references.saturating_sub(1);
        if watch.references == 0 {
            let (weak, generation, grace) = (Arc::downgrade(self), watch.generation, self.config.grace);
            tokio::spawn(async move {
                tokio::time::sleep(grace).await;
                if let Some(inner) = weak.upgrade() {
                    inner.stop_if_unused(&group_kind, generation);
                }
            });
        }
    }

    fn stop_if_unused(&self, group_kind: &GroupKind, generation: u64) {
        let mut state = self.lock();
        let unused = state
            .watches
            .get(group_kind)
            .is_some_and(|w| w.references == 0 && w.generation == generation);
        if unused {
            if let Some(task) = state.watches.remove(group_kind).and_then(|w| w.task) {
                task.abort();
            }
            tracing::info!(%group_kind, "no reference left; stopped watching infrastructure kind");
        }
    }

    /// Marks `group_kind` failed; on the first failure of an episode, warns every CAPI
    /// object referencing it (later retries only log).
    fn resolution_failed(&self, group_kind: &GroupKind, error: &ResolveError, first: bool) {
        let mut state = self.lock();
        let Some(watch) = state.watches.get_mut(group_kind) else {
            return;
        };
        watch.status = WatchStatus::Failed(error.to_string());
        self.changed();
        if first {
            for (id, name) in referrers_of(&state, group_kind) {
                let note = format!("cannot watch {group_kind}: {error}");
                self.warn(&state, id, &name, "InfrastructureKindUnavailable", note);
            }
        }
    }

    fn watching(
        &self,
        group_kind: &GroupKind,
        resolution: &Resolution,
        store: Store<InfraObject>,
        listed: Listed,
    ) {
        let mut state = self.lock();
        if let Some(watch) = state.watches.get_mut(group_kind) {
            watch.status = WatchStatus::Watching {
                version: resolution.chosen.version.clone(),
            };
            watch.resolution = Some(resolution.clone());
            watch.store = Some(store);
            watch.listed = Some(listed);
        }
        self.changed();
    }

    fn changed(&self) {
        self.changes.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Sends the names an infrastructure object's change reconciles to the controllers
    /// that reference its kind.
    fn dispatch(&self, group_kind: &GroupKind, meta: &ObjectMeta) {
        let state = self.lock();
        let name = meta.name.as_deref().unwrap_or_default();
        for controller in &state.controllers {
            let Some(by_name) = controller.referrers.get(group_kind) else {
                continue;
            };
            let referrers = by_name.get(name).into_iter().flat_map(Names::iter);
            for target in names_to_reconcile(&controller.capi_kind, meta, referrers) {
                let _ = controller.triggers.send(target);
            }
        }
    }

    /// Publishes a Warning Event on a controller's CAPI object, in the background.
    fn warn(&self, state: &State, id: usize, capi_name: &str, reason: &'static str, note: String) {
        let Some(controller) = state.controllers.get(id) else {
            return;
        };
        let reference = ObjectReference {
            api_version: Some(controller.capi_api_version.clone()),
            kind: Some(controller.capi_kind.clone()),
            name: Some(capi_name.to_owned()),
            namespace: Some(self.config.namespace.clone()),
            ..ObjectReference::default()
        };
        let recorder = controller.recorder.clone();
        let event = Event {
            type_: EventType::Warning,
            reason: reason.to_owned(),
            note: Some(note),
            action: "Watch".into(),
            secondary: None,
        };
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&event, &reference).await {
                tracing::warn!(%error, reason, "failed to publish event");
            }
        });
    }
}

fn referrers_of(state: &State, group_kind: &GroupKind) -> Vec<(usize, String)> {
    state
        .controllers
        .iter()
        .enumerate()
        .flat_map(|(id, controller)| {
            controller
                .referrers
                .get(group_kind)
                .into_iter()
                .flat_map(move |by_name| by_name.names().map(move |capi_name| (id, capi_name.to_owned())))
        })
        .collect()
}

/// Resolves a GroupKind (retrying with capped backoff) and then watches it until aborted.
async fn run_watch(inner: Weak<Inner>, group_kind: GroupKind, hint: Option<String>) {
    let mut failures = 0u32;
    let resolution = loop {
        let Some((client, retry)) = inner.upgrade().map(|i| (i.client.clone(), i.config.retry)) else {
            return;
        };
        match resolve_served(&client, &group_kind, hint.as_deref()).await {
            Ok(resolution) => break resolution,
            Err(error) => {
                failures = failures.saturating_add(1);
                let retry_in = retry.delay(failures);
                tracing::warn!(%group_kind, %error, ?retry_in, "cannot watch infrastructure kind; retrying");
                let Some(strong) = inner.upgrade() else { return };
                strong.resolution_failed(&group_kind, &error, failures == 1);
                drop(strong);
                tokio::time::sleep(retry_in).await;
            }
        }
    };
    let Some(strong) = inner.upgrade() else { return };
    let (client, namespace) = (strong.client.clone(), strong.config.namespace.clone());
    let writer = Writer::new(Encoding::MessagePack);
    let listed = Listed::default();
    strong.watching(&group_kind, &resolution, writer.as_reader(), listed.clone());
    let resource = resolution.chosen;
    let (config, cache) = (strong.config.watcher.clone(), strong.config.cache);
    drop(strong);
    tracing::info!(%group_kind, version = %resource.version, ?cache, "infrastructure watch started");
    let what = group_kind.to_string();
    let stream = match cache {
        InfraCache::Objects => {
            let api: Api<InfraObject> = Api::namespaced_with(client, &namespace, &resource);
            watcher(api, config).default_backoff().boxed()
        }
        InfraCache::Metadata => {
            let api: Api<InfraMetadata> = Api::namespaced_with(client, &namespace, &resource);
            watcher(api, config)
                .default_backoff()
                .map_ok(|event| map_event(event, |o| o.0))
                .boxed()
        }
    }
    .map_ok(crate::runtime::reflect::always_valid);
    reflect(&what, stream, writer, listed, |touched| {
        let meta = match touched {
            Touched::Present(object) | Touched::Gone(object) => &object.metadata,
            Touched::Malformed(malformed) | Touched::MalformedGone(malformed) => &malformed.metadata,
        };
        if let Some(inner) = inner.upgrade() {
            inner.dispatch(&group_kind, meta);
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::fixtures::MachinePair;

    fn aws(name: &str, version: Option<&str>) -> InfraRef {
        InfraRef {
            group: "infrastructure.cluster.x-k8s.io".into(),
            version: version.map(Into::into),
            kind: "AWSMachine".into(),
            name: name.into(),
        }
    }

    fn referrers(tracker: &InfraTracker, group_kind: &GroupKind) -> Vec<String> {
        let mut names: Vec<String> = referrers_of(&tracker.inner.lock(), group_kind)
            .into_iter()
            .map(|(_, name)| name)
            .collect();
        names.sort();
        names
    }

    /// The compact bookkeeping gives back what was tracked: the reference, its kind, its
    /// referrers; a reference that changes only its version or name is re-tracked.
    #[tokio::test]
    async fn tracked_references_read_back_and_follow_changes() {
        let config = kube::Config::new(http::Uri::from_static("http://127.0.0.1:9"));
        let Ok(client) = Client::try_from(config) else {
            panic!("a client for an address that is never dialled");
        };
        let mut infra = InfraConfig::new("capi");
        infra.grace = Duration::from_secs(3600);
        let tracker = InfraTracker::new(client, infra);
        let handle = tracker.register::<MachinePair>("machine-sync").tracker();
        let group_kind = aws("x", None).group_kind();

        handle.track("m-1", Some(Ok(Some(aws("m-1", None)))));
        handle.track("m-2", Some(Ok(Some(aws("shared", None)))));
        handle.track("m-3", Some(Ok(Some(aws("shared", None)))));
        assert_eq!(handle.reference("m-1"), Some(aws("m-1", None)));
        assert_eq!(handle.kinds(), HashSet::from([group_kind.clone()]));
        assert_eq!(referrers(&tracker, &group_kind), ["m-1", "m-2", "m-3"]);

        handle.track("m-1", Some(Ok(Some(aws("m-1", Some("v1beta1"))))));
        assert_eq!(handle.reference("m-1"), Some(aws("m-1", Some("v1beta1"))));
        handle.track("m-2", Some(Ok(Some(aws("m-2", None)))));
        assert_eq!(handle.reference("m-2"), Some(aws("m-2", None)));
        assert_eq!(referrers(&tracker, &group_kind), ["m-1", "m-2", "m-3"]);
        assert_eq!(
            tracker.inner.lock().controllers[0].targets.len(),
            2,
            "one per version given"
        );

        handle.track("m-1", None);
        handle.track("m-2", Some(Ok(None)));
        assert_eq!(handle.reference("m-1"), None);
        assert_eq!(handle.reference("m-2"), None);
        assert_eq!(referrers(&tracker, &group_kind), ["m-3"]);
        assert_eq!(
            tracker.inner.lock().controllers[0].targets.len(),
            1,
            "an unused kind is dropped"
        );
        handle.track("m-3", None);
        assert!(handle.kinds().is_empty());
        assert!(tracker.inner.lock().controllers[0].targets.is_empty());
    }
}
