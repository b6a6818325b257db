//! The runtime under `#[sync_controller]`.
pub mod api;
pub mod context;
pub mod hooks;
pub mod pair;

pub use context::{Caches, Namespaces, SyncContext};
pub use hooks::{Action, Deleting, Direction, HookError, HookResult, SyncHooks, SyncObjects};
pub use pair::{CapiOnly, MapiObject, NoOwner, SyncObject, SyncPair};
