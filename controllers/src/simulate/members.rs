//! A MachineSet controller's cache of Machines, with the expectations of the Kubernetes
//! ReplicaSet controller: a set reads its Machines from a reflector store instead of
//! listing them from the API server on every reconcile (a list per Machine event is
//! O(sets × Machines)), and it does not scale again until the store shows every Machine
//! it created or deleted, so a store that is a few events behind never makes it create
//! or delete twice.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use kube::Resource;
use kube::api::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::watch;

/// How long a create or delete is waited for before the set acts without having seen it
/// (the Kubernetes controllers' `ExpectationsTimeout`).
pub(super) const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The Machines of one namespace as the last watch event left them, and what each set
/// is waiting to see.
pub(super) struct MachineCache<M: Resource<DynamicType = ()> + 'static> {
    store: Store<M>,
    /// True once the first list is in the store. kube's `Store::wait_until_ready` wakes
    /// only the last of several concurrent waiters (a oneshot receiver keeps one waker),
    /// and every set waits at once when the providers start.
    ready: Arc<watch::Sender<bool>>,
    namespace: String,
    expected: Mutex<HashMap<String, Vec<Expected>>>,
    timeout: Duration,
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
    /// to the controller (`owns_stream`), so each event reaches the store before the
    /// reconcile it triggers.
    pub fn new(
        api: Api<M>,
        namespace: &str,
    ) -> (Arc<Self>, impl Stream<Item = watcher::Result<M>> + Send + use<M>) {
        let (store, writer) = reflector::store();
        let cache = Self::from_store(store, namespace, false);
        let ready = cache.ready.clone();
        let stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .reflect(writer)
            .inspect(move |event| {
                if matches!(event, Ok(watcher::Event::InitDone)) {
                    ready.send_replace(true);
                }
            })
            .touched_objects();
        (Arc::new(cache), stream)
    }

    fn from_store(store: Store<M>, namespace: &str, ready: bool) -> Self {
        Self {
            store,
            ready: Arc::new(watch::Sender::new(ready)),
            namespace: namespace.to_owned(),
            expected: Mutex::default(),
            timeout: EXPECTATION_TIMEOUT,
        }
    }

    /// The cached Machines `keep` selects, once the first list is in (before it, an empty
    /// store would read as a set without Machines).
    pub async fn select(&self, keep: impl Fn(&M) -> bool) -> Vec<Arc<M>> {
        // The sender lives in `self`: the wait ends only by becoming ready.
        let _ = self.ready.subscribe().wait_for(|ready| *ready).await;
        self.store.state_filter(keep)
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

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use kube::runtime::reflector::store::Writer;
    use sync_core::api::mapi::Machine;

    use super::*;

    fn machine(name: &str) -> Machine {
        let mut machine = Machine::new(name, Default::default());
        machine.metadata.namespace = Some("ns".into());
        machine
    }

    fn cache() -> (MachineCache<Machine>, Writer<Machine>) {
        let (store, mut writer) = reflector::store();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(machine("m-1")));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        (MachineCache::from_store(store, "ns", true), writer)
    }

    #[tokio::test]
    async fn a_set_reads_the_cached_machines_it_selects() {
        let (cache, _writer) = cache();
        assert_eq!(cache.select(|_| true).await.len(), 1);
        let none = cache.select(|m| m.metadata.name.as_deref() == Some("m-2")).await;
        assert!(none.is_empty());
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
