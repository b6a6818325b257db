//! In-memory storage: objects by (resource, namespace, name), one global resourceVersion
//! counter, and the retained event log that watches resume from.
//!
//! The log is bounded by events and by bytes (the objects' approximate JSON size), so a
//! burst of large objects cannot pin their history in memory: the oldest events go first,
//! as etcd's compaction would drop them, and watches from before them get 410.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::watch;

pub use super::event::{Collection, Event, EventType};
use crate::resources::Registry;
use crate::storage::encode::JsonCache;
use crate::storage::persist::Journal;

/// The default byte bound of the event history.
pub const DEFAULT_HISTORY_BYTES: usize = 64 * 1024 * 1024;

/// The approximate size of a value's JSON text: exact for the structure, strings counted
/// without escapes, numbers at their usual width. Cheap enough for every write.
pub fn approximate_size(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 5,
        Value::Number(_) => 8,
        Value::String(s) => s.len() + 2,
        Value::Array(items) => 2 + items.iter().map(|v| approximate_size(v) + 1).sum::<usize>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(k, v)| k.len() + 4 + approximate_size(v))
                .sum::<usize>()
        }
    }
}

/// Everything behind the store lock.
#[derive(Debug)]
pub struct State {
    /// The global resourceVersion counter (the last assigned).
    pub rv: u64,
    /// Objects by storage key.
    pub collections: HashMap<String, Collection>,
    /// Retained events, oldest first.
    pub log: VecDeque<Arc<Event>>,
    /// Watches may resume from any rv >= this.
    pub compacted: u64,
    /// Maximum retained events.
    pub window: usize,
    /// Maximum retained bytes of events' objects (see [`Event::bytes`]).
    pub window_bytes: usize,
    /// Bytes of the retained events.
    pub log_bytes: usize,
    /// The served resources.
    pub registry: Arc<Registry>,
    /// Where every change is also written, with a state directory.
    pub journal: Option<Journal>,
    /// Whether the garbage collector runs: DELETE then honours `propagationPolicy` with the
    /// `orphan` / `foregroundDeletion` finalizers.
    pub garbage_collection: bool,
}

impl State {
    /// An object by key.
    pub fn get(&self, key: &str, namespace: &str, name: &str) -> Option<&Arc<Value>> {
        self.collections
            .get(key)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Stores an object under a fresh resourceVersion and records the event.
    /// The object's `metadata.resourceVersion` is set here.
    pub fn put(
        &mut self,
        key: &str,
        namespace: &str,
        name: &str,
        mut object: Value,
        kind: EventType,
    ) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        set_rv(&mut object, rv);
        let object = Arc::new(object);
        let collection = self.collections.entry(key.to_string()).or_default();
        let slot = (namespace.to_string(), name.to_string());
        let old = if kind == EventType::Deleted {
            collection.remove(&slot)
        } else {
            collection.insert(slot, object.clone())
        };
        let old = if kind == EventType::Added { None } else { old };
        let bytes = approximate_size(&object);
        self.record(Event {
            rv,
            key: key.into(),
            namespace: namespace.into(),
            kind,
            object: object.clone(),
            old,
            bytes,
        });
        object
    }

    fn record(&mut self, event: Event) {
        if let Some(journal) = self.journal.as_mut() {
            journal.append(&event);
        }
        self.log_bytes += event.bytes;
        self.log.push_back(Arc::new(event));
        // The newest event stays whatever its size: a watch must see every change.
        while self.log.len() > self.window || (self.log_bytes > self.window_bytes && self.log.len() > 1) {
            let Some(front) = self.log.pop_front() else { break };
            self.log_bytes -= front.bytes;
            self.compacted = front.rv;
        }
        // A queue that shrank a lot keeps its peak capacity: give it back.
        if self.log.capacity() > 1024 && self.log.capacity() > 4 * self.log.len() {
            self.log.shrink_to(self.log.len() * 2);
        }
    }

    /// Forgets the whole history: every watch resuming from an older rv gets 410.
    pub fn compact_all(&mut self) {
        self.log.clear();
        self.log.shrink_to_fit();
        self.log_bytes = 0;
        self.compacted = self.rv;
    }

    /// Events with rv > `after`, or `Err(oldest)` when they are no longer retained.
    pub fn events_after(&self, after: u64) -> Result<Vec<Arc<Event>>, u64> {
        if after < self.compacted {
            return Err(self.compacted + 1);
        }
        let start = self.log.partition_point(|e| e.rv <= after);
        Ok(self.log.range(start..).cloned().collect())
    }
}

/// Sets `metadata.resourceVersion`.
pub fn set_rv(object: &mut Value, rv: u64) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// The shared store: state under one lock, plus a notifier of the last rv.
#[derive(Debug)]
pub struct Store {
    state: Mutex<State>,
    notify: watch::Sender<u64>,
    json: JsonCache,
}

impl Store {
    /// An empty store retaining `window` events (and [`DEFAULT_HISTORY_BYTES`]).
    pub fn new(window: usize) -> Self {
        Self::with_history(window, DEFAULT_HISTORY_BYTES)
    }

    /// An empty store retaining at most `window` events and `bytes` bytes of them.
    pub fn with_history(window: usize, bytes: usize) -> Self {
        let state = State {
            rv: 1,
            collections: HashMap::new(),
            log: VecDeque::new(),
            compacted: 1,
            window: window.max(1),
            window_bytes: bytes,
            log_bytes: 0,
            journal: None,
            registry: Arc::new(Registry::build([])),
            garbage_collection: true,
        };
        Self {
            state: Mutex::new(state),
            notify: watch::Sender::new(1),
            json: JsonCache::default(),
        }
    }

    /// A store kept in the state directory `dir` (see [`crate::storage::persist`]): its objects
    /// and resourceVersion as the last run left them, every change written there. The
    /// caller rebuilds the registry from the restored CRDs.
    pub fn persistent(dir: &std::path::Path, window: usize, bytes: usize) -> std::io::Result<Self> {
        let (restored, journal) = crate::storage::persist::open(dir)?;
        let store = Self::with_history(window, bytes);
        {
            let mut state = store.read();
            if restored.rv > 0 {
                state.rv = restored.rv;
                state.compacted = restored.rv;
            }
            state.collections = restored.collections;
            state.journal = Some(journal);
        }
        store.notify.send_replace(store.read().rv);
        Ok(store)
    }

    /// Locks the state for reading.
    pub fn read(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs a mutation under the lock and wakes watchers when it wrote something.
    pub fn write<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let (out, rv) = {
            let mut state = self.read();
            let before = state.rv;
            let out = f(&mut state);
            (out, (state.rv != before).then_some(state.rv))
        };
        if let Some(rv) = rv {
            self.notify.send_replace(rv);
        }
        out
    }

    /// Wakes every watcher (used after compaction).
    pub fn poke(&self) {
        let rv = self.read().rv;
        self.notify.send_replace(rv);
    }

    /// The serialized JSON of stored objects (see [`crate::storage::encode`]).
    pub fn json(&self) -> &JsonCache {
        &self.json
    }

    /// A receiver that changes on every write.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.notify.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(name: &str, payload: usize) -> Value {
        json!({"metadata": {"name": name}, "data": {"blob": "x".repeat(payload)}})
    }

    #[test]
    fn the_history_is_bounded_by_bytes_and_older_watches_expire() {
        let store = Store::with_history(1000, 10_000);
        for i in 0..50 {
            store.write(|state| {
                state.put(
                    "configmaps",
                    "ns",
                    "big",
                    object("big", 1_000),
                    EventType::Modified,
                );
            });
            let state = store.read();
            assert!(state.log_bytes <= 10_000, "after {i}: {}", state.log_bytes);
            assert_eq!(state.log_bytes, state.log.iter().map(|e| e.bytes).sum::<usize>());
        }
        let state = store.read();
        assert!(state.log.len() < 10, "{} events kept", state.log.len());
        assert!(state.events_after(2).is_err(), "a watch from the start expired");
        assert!(
            state
                .events_after(state.rv - 1)
                .is_ok_and(|events| events.len() == 1)
        );
    }

    #[test]
    fn an_event_larger_than_the_bound_is_still_delivered() {
        let store = Store::with_history(1000, 100);
        let before = store.read().rv;
        store.write(|state| {
            state.put(
                "configmaps",
                "ns",
                "huge",
                object("huge", 10_000),
                EventType::Added,
            );
        });
        let events = store.read().events_after(before);
        assert!(events.is_ok_and(|events| events.len() == 1));
    }

    #[test]
    fn approximate_size_tracks_the_json_length() {
        let value = object("name", 5_000);
        let exact = serde_json::to_vec(&value).map(|v| v.len()).unwrap_or_default();
        let approximate = approximate_size(&value);
        assert!(
            approximate >= exact && approximate < exact + 64,
            "{approximate} vs {exact}"
        );
    }
}
