//! Storage: objects by resource, namespace and name, the event history that lists and
//! watches read, consistent snapshots, and the serialized JSON of stored objects.

pub mod encode;
pub mod event;
pub mod persist;
pub mod snapshot;
pub mod store;
