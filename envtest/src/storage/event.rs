//! The records of the store: one change as the event log keeps it (and the journal writes
//! it), and the objects of one resource.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

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
    /// The approximate JSON size of `object`, counted against the history's byte bound
    /// (`old` is the previous event's `object`, counted there).
    pub bytes: usize,
}

/// Objects of one resource, by (namespace, name).
pub type Collection = BTreeMap<(String, String), Arc<Value>>;
