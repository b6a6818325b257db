//! A MachineSet controller's cache of Machines, with the expectations of the Kubernetes
//! ReplicaSet controller: a set reads its Machines from a reflector store, indexed by
//! controlling set, instead of listing them from the API server on every reconcile (a
//! list per Machine event is O(sets × Machines)), and it does not scale again until the
//! store shows every Machine it created or deleted, so a store that is a few events
//! behind never makes it create or delete twice. A set's Machines are read, and orphans
//! adopted, here ([`adopt_members`]).

use std::collections::{BTreeSet, HashMap};
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::api::Api;
use kube::core::Selector;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio::sync::watch;

use super::runtime::{Ctx, Error};
use super::scaling::{self, Member};

/// How long a create or delete is waited for before the set acts without having seen it
/// (the Kubernetes controllers' `ExpectationsTimeout`).
pub(super) const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The name of the set that controls a Machine, if one does.
pub(super) type OwnerOf<M> = fn(&M) -> Option<String>;

/// The Machines of one namespace as the last watch event left them, which set controls
/// each, and what each set is waiting to see.
pub(super) struct MachineCache<M: Resource<DynamicType = ()> + 'static> {
    store: Store<M>,
    /// True once the first list is in the store. kube's `Store::wait_until_ready` wakes
    /// only the last of several concurrent waiters (a oneshot receiver keeps one waker),
    /// and every set waits at once when the providers start.
    ready: watch::Sender<bool>,
    owner_of: OwnerOf<M>,
    index: Mutex<OwnerIndex>,
    namespace: String,
    expected: Mutex<HashMap<String, Vec<Expected>>>,
    timeout: Duration,
}

/// Machine names by controlling set (`None`: orphans), kept with the store.
#[derive(Default)]
struct OwnerIndex {
    owner: HashMap<String, Option<String>>,
    machines: HashMap<Option<String>, BTreeSet<String>>,
}

impl OwnerIndex {
    fn set(&mut self, machine: String, owner: Option<String>) {
        self.remove(&machine);
        self.machines
            .entry(owner.clone())
            .or_default()
            .insert(machine.clone());
        self.owner.insert(machine, owner);
    }

    fn remove(&mut self, machine: &str) {
        if let Some(owner) = self.owner.remove(machine)
            && let Some(names) = self.machines.get_mut(&owner)
        {
            names.remove(machine);
            if names.is_empty() {
                self.machines.remove(&owner);
            }
        }
    }

    fn names(&self, owner: Option<String>) -> impl Iterator<Item = &String> {
        self.machines.get(&owner).into_iter().flatten()
    }
}

/// A Machine a set created (to appear) or deleted (to disappear or be marked deleted).
struct Expected {
    name: String,
    deleted: bool,
    since: Instant,
}

impl<M> MachineCache<M>
where
    M: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// The cache of `api`'s Machines, and the watch stream that fills it: give the stream
    /// to the controller (`owns_stream`), so each event reaches the store and the index
    /// before the reconcile it triggers.
    pub fn new(
        api: Api<M>,
        namespace: &str,
        owner_of: OwnerOf<M>,
    ) -> (Arc<Self>, impl Stream<Item = watcher::Result<M>> + Send + use<M>) {
        let (store, writer) = reflector::store();
        let cache = Arc::new(Self::from_store(store, namespace, owner_of));
        let observer = cache.clone();
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .inspect(move |event| {
                if let Ok(event) = event {
                    observer.observe(event);
                }
            })
            .touched_objects();
        (cache, stream)
    }

    fn from_store(store: Store<M>, namespace: &str, owner_of: OwnerOf<M>) -> Self {
        Self {
            store,
            ready: watch::Sender::new(false),
            owner_of,
            index: Mutex::default(),
            namespace: namespace.to_owned(),
            expected: Mutex::default(),
            timeout: EXPECTATION_TIMEOUT,
        }
    }

    /// Keeps the index with the store, after the store applied `event`. A relist replaces
    /// the store at its end, so the index is rebuilt from the store then.
    fn observe(&self, event: &watcher::Event<M>) {
        let Ok(mut index) = self.index.lock() else {
            return;
        };
        match event {
            watcher::Event::Apply(machine) => index.set(machine.name_any(), (self.owner_of)(machine)),
            watcher::Event::Delete(machine) => index.remove(&machine.name_any()),
            watcher::Event::InitDone => {
                *index = OwnerIndex::default();
                for machine in self.store.state() {
                    index.set(machine.name_any(), (self.owner_of)(&machine));
                }
                self.ready.send_replace(true);
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    /// The cached Machines `set` controls and the orphans, those `keep` selects, once the
    /// first list is in (before it, an empty store would read as a set without Machines).
    pub async fn members(&self, set: &str, keep: impl Fn(&M) -> bool) -> Vec<Arc<M>> {
        // The sender lives in `self`: the wait ends only by becoming ready.
        let _ = self.ready.subscribe().wait_for(|ready| *ready).await;
        let names: Vec<String> = match self.index.lock() {
            Ok(index) => index
                .names(Some(set.to_owned()))
                .chain(index.names(None))
                .cloned()
                .collect(),
            Err(_) => Vec::new(),
        };
        names
            .iter()
            .filter_map(|name| self.store.get(&ObjectRef::new(name).within(&self.namespace)))
            .filter(|machine| keep(machine))
            .collect()
    }

    /// Whether a set controls `machine` (else it is an orphan, to adopt).
    pub fn is_controlled(&self, machine: &M) -> bool {
        (self.owner_of)(machine).is_some()
    }

    /// `set` created `machine`: its next scaling waits until the store has it.
    pub fn expect_created(&self, set: &str, machine: &str) {
        self.expect(set, machine, false);
    }

    /// `set` deleted `machine`: its next scaling waits until the store has it gone or
    /// marked for deletion.
    pub fn expect_deleted(&self, set: &str, machine: &str) {
        self.expect(set, machine, true);
    }

    fn expect(&self, set: &str, machine: &str, deleted: bool) {
        if let Ok(mut expected) = self.expected.lock() {
            expected.entry(set.to_owned()).or_default().push(Expected {
                name: machine.to_owned(),
                deleted,
                since: Instant::now(),
            });
        }
    }

    /// Whether the store shows every create and delete of `set` (or the wait for one
    /// exceeded [`EXPECTATION_TIMEOUT`]): only then are its counts right to scale on.
    pub fn settled(&self, set: &str) -> bool {
        let Ok(mut expected) = self.expected.lock() else {
            return true;
        };
        let Some(pending) = expected.get_mut(set) else {
            return true;
        };
        pending.retain(|e| e.since.elapsed() < self.timeout && !self.seen(e));
        let settled = pending.is_empty();
        if settled {
            expected.remove(set);
        }
        settled
    }

    fn seen(&self, expected: &Expected) -> bool {
        let key = ObjectRef::new(&expected.name).within(&self.namespace);
        match self.store.get(&key) {
            None => expected.deleted,
            Some(machine) => !expected.deleted || machine.meta().deletion_timestamp.is_some(),
        }
    }

    /// Forgets what `set` waits for (it is gone).
    pub fn forget(&self, set: &str) {
        if let Ok(mut expected) = self.expected.lock() {
            expected.remove(set);
        }
    }
}

/// The set's Machines: those it controls and the orphans its selector matches, which it
/// adopts (controller owner reference); Machines being deleted no longer count.
pub(super) async fn adopt_members<S, M>(
    set: &S,
    machines: &Api<M>,
    cache: &MachineCache<M>,
    selector: &Selector,
    ctx: &Ctx,
    member: fn(&M) -> Member,
) -> Result<Vec<Member>, Error>
where
    S: Resource<DynamicType = ()>,
    M: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    let mut members = Vec::new();
    for machine in cache
        .members(&set.name_any(), |m| scaling::selects(selector, m.labels()))
        .await
    {
        if machine.meta().deletion_timestamp.is_some() {
            continue;
        }
        if !cache.is_controlled(&machine) {
            let mut owners = machine.owner_references().to_vec();
            owners.extend(set.controller_owner_ref(&()));
            ctx.patch(
                machines,
                machine.as_ref(),
                json!({ "metadata": { "ownerReferences": owners } }),
            )
            .await?;
        }
        members.push(member(&machine));
    }
    Ok(members)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use kube::ResourceExt;
    use kube::runtime::reflector::store::Writer;
    use sync_core::api::mapi::Machine;

    use super::*;

    fn machine(name: &str) -> Machine {
        let mut machine = Machine::new(name, Default::default());
        machine.metadata.namespace = Some("ns".into());
        machine
    }

    /// The controlling set: the test Machines name it in an annotation.
    fn owner(machine: &Machine) -> Option<String> {
        machine.annotations().get("set").cloned()
    }

    fn owned(name: &str, set: &str) -> Machine {
        let mut machine = machine(name);
        machine.metadata.annotations = Some([("set".to_owned(), set.to_owned())].into());
        machine
    }

    /// What the watch stream does: the store applies the event, then the cache sees it.
    fn apply(cache: &MachineCache<Machine>, writer: &mut Writer<Machine>, event: watcher::Event<Machine>) {
        writer.apply_watcher_event(&event);
        cache.observe(&event);
    }

    fn cache() -> (MachineCache<Machine>, Writer<Machine>) {
        let (store, mut writer) = reflector::store();
        let cache = MachineCache::from_store(store, "ns", owner);
        apply(&cache, &mut writer, watcher::Event::Init);
        apply(&cache, &mut writer, watcher::Event::InitApply(machine("m-1")));
        apply(&cache, &mut writer, watcher::Event::InitDone);
        (cache, writer)
    }

    async fn names(cache: &MachineCache<Machine>, set: &str) -> Vec<String> {
        let mut names: Vec<String> = cache
            .members(set, |_| true)
            .await
            .iter()
            .map(|m| m.name_any())
            .collect();
        names.sort();
        names
    }

    #[tokio::test]
    async fn a_set_reads_the_machines_it_controls_and_the_orphans() {
        let (cache, mut writer) = cache();
        apply(&cache, &mut writer, watcher::Event::Apply(owned("a-1", "a")));
        apply(&cache, &mut writer, watcher::Event::Apply(owned("b-1", "b")));
        assert_eq!(names(&cache, "a").await, ["a-1", "m-1"]);
        assert_eq!(names(&cache, "b").await, ["b-1", "m-1"]);
        let kept = cache.members("a", |m| m.name_any() == "m-1").await;
        assert_eq!(kept.len(), 1, "only those `keep` selects");
    }

    #[tokio::test]
    async fn the_index_follows_adoption_deletion_and_relists() {
        let (cache, mut writer) = cache();
        apply(&cache, &mut writer, watcher::Event::Apply(owned("m-1", "a")));
        assert_eq!(names(&cache, "b").await, Vec::<String>::new(), "adopted by a");
        apply(&cache, &mut writer, watcher::Event::Delete(owned("m-1", "a")));
        assert_eq!(names(&cache, "a").await, Vec::<String>::new());
        // A relist that finds b-1 only: the index is the store's once it ends.
        apply(&cache, &mut writer, watcher::Event::Apply(owned("a-1", "a")));
        apply(&cache, &mut writer, watcher::Event::Init);
        apply(&cache, &mut writer, watcher::Event::InitApply(owned("b-1", "b")));
        assert_eq!(
            names(&cache, "a").await,
            ["a-1"],
            "the old list until the relist ends"
        );
        apply(&cache, &mut writer, watcher::Event::InitDone);
        assert_eq!(names(&cache, "a").await, Vec::<String>::new());
        assert_eq!(names(&cache, "b").await, ["b-1"]);
    }

    #[tokio::test]
    async fn a_set_waits_for_the_first_list() {
        let (store, mut writer) = reflector::store();
        let cache = Arc::new(MachineCache::from_store(store, "ns", owner));
        let waiters: Vec<_> = ["a", "b", "c"]
            .into_iter()
            .map(|set| {
                let cache = cache.clone();
                tokio::spawn(async move { cache.members(set, |_| true).await.len() })
            })
            .collect();
        apply(&cache, &mut writer, watcher::Event::Init);
        apply(&cache, &mut writer, watcher::Event::InitApply(machine("m-1")));
        apply(&cache, &mut writer, watcher::Event::InitDone);
        for waiter in waiters {
            let seen = tokio::time::timeout(Duration::from_secs(10), waiter).await;
            assert_eq!(seen.ok().and_then(Result::ok), Some(1), "every waiter is woken");
        }
    }

    #[test]
    fn a_set_without_changes_in_flight_is_settled() {
        let (cache, _writer) = cache();
        assert!(cache.settled("ms"));
    }

    #[test]
    fn a_created_machine_is_waited_for_until_the_store_has_it() {
        let (cache, mut writer) = cache();
        cache.expect_created("ms", "m-2");
        assert!(!cache.settled("ms"), "not in the store yet");
        assert!(cache.settled("other"), "another set does not wait");
        writer.apply_watcher_event(&watcher::Event::Apply(machine("m-2")));
        assert!(cache.settled("ms"));
    }

    #[test]
    fn a_deleted_machine_is_waited_for_until_it_is_gone_or_marked() {
        let (cache, mut writer) = cache();
        writer.apply_watcher_event(&watcher::Event::Apply(machine("m-2")));
        cache.expect_deleted("ms", "m-1");
        cache.expect_deleted("ms", "m-2");
        assert!(!cache.settled("ms"));
        writer.apply_watcher_event(&watcher::Event::Delete(machine("m-1")));
        assert!(!cache.settled("ms"), "m-2 is still there, unmarked");
        let mut marked = machine("m-2");
        marked.metadata.deletion_timestamp = Timestamp::from_second(1).ok().map(Time);
        writer.apply_watcher_event(&watcher::Event::Apply(marked));
        assert!(cache.settled("ms"));
    }

    #[test]
    fn a_change_never_seen_is_given_up_after_the_timeout() {
        let (mut cache, _writer) = cache();
        cache.timeout = Duration::ZERO;
        cache.expect_created("ms", "m-9");
        assert!(cache.settled("ms"));
    }

    #[test]
    fn a_forgotten_set_waits_for_nothing() {
        let (cache, _writer) = cache();
        cache.expect_created("ms", "m-9");
        cache.forget("ms");
        assert!(cache.settled("ms"));
    }
}
