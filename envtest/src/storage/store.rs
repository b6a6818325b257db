//! In-memory storage: objects by (resource, namespace, name), one global resourceVersion
//! counter, and the retained event log that watches resume from.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::watch;

use crate::resources::Registry;
use crate::storage::encode::JsonCache;

/// The type of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `ADDED`.
    Added,
    /// `MODIFIED`.
    Modified,
    /// `DELETED`.
    Deleted,
}

impl EventType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// One change, as retained in the event log.
#[derive(Debug, Clone)]
pub struct Event {
    /// The resourceVersion of this change.
    pub rv: u64,
    /// The storage key of the resource (`configmaps`, `widgets.example.com`).
    pub key: Arc<str>,
    /// Namespace of the object (`""` when cluster scoped).
    pub namespace: Arc<str>,
    /// The event type.
    pub kind: EventType,
    /// The object after the change (for DELETED: the last state, with the delete's rv).
    pub object: Arc<Value>,
    /// The object before the change (MODIFIED and DELETED).
    pub old: Option<Arc<Value>>,
}

/// Objects of one resource, by (namespace, name).
pub type Collection = BTreeMap<(String, String), Arc<Value>>;

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
    /// The served resources.
    pub registry: Arc<Registry>,
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
        self.record(Event {
            rv,
            key: key.into(),
            namespace: namespace.into(),
            kind,
            object: object.clone(),
            old,
        });
        object
    }

    fn record(&mut self, event: Event) {
        self.log.push_back(Arc::new(event));
        while self.log.len() > self.window {
            if let Some(front) = self.log.pop_front() {
                self.compacted = front.rv;
            }
        }
    }

    /// Forgets the whole history: every watch resuming from an older rv gets 410.
    pub fn compact_all(&mut self) {
        self.log.clear();
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
    /// An empty store retaining `window` events.
    pub fn new(window: usize) -> Self {
        let state = State {
            rv: 1,
            collections: HashMap::new(),
            log: VecDeque::new(),
            compacted: 1,
            window: window.max(1),
            registry: Arc::new(Registry::build([])),
            garbage_collection: true,
        };
        Self {
            state: Mutex::new(state),
            notify: watch::Sender::new(1),
            json: JsonCache::default(),
        }
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
