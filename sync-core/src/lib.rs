//! The runtime under `#[sync_controller]`.
pub mod api;
pub mod checkpoint;
pub mod context;
pub mod decision;
pub mod engine;
pub mod events;
mod field_sets;
pub mod hooks;
pub mod infra;
pub mod lenient;
pub mod migration;
pub mod observe;
pub mod pair;
pub mod queue;
mod reflect;
pub mod store;
#[cfg(test)]
mod test_fixtures;
pub mod testing;
pub mod toolkit;

pub use checkpoint::Checkpoint;
pub use context::{Caches, MalformedObjects, Namespaces, SyncContext};
pub use engine::{Readiness, SyncConfig, SyncController};
pub use hooks::{
    Action, Deleting, Direction, HookError, HookResult, StaleRead, SyncHooks, SyncObjects, is_stale_read,
};
pub use infra::{InfraConfig, InfraTracker};
pub use observe::{Outcome, SkipReason};
pub use pair::{CapiOnly, MapiObject, NoOwner, SyncObject, SyncPair};
#[cfg(feature = "testkit")]
pub mod testkit;
