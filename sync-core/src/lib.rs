//! The runtime under `#[sync_controller]`, in four layers, each using only those before it:
//!
//! * [`api`] and [`SyncPair`]: the Kubernetes types and what a declaration says;
//! * `runtime`: the machinery any controller needs, knowing pairs but not hooks: the
//!   caches ([`store`]) and the watches that fill them from objects read [`lenient`]ly, the work queue, the
//!   infrastructure watches ([`infra`]), Events ([`events`]);
//! * [`hooks`]: what a hook writer uses: the hooks, what they are given
//!   ([`SyncContext`]) and return, the decision table, migration, the [`toolkit`];
//! * the engine ([`SyncController`]): the watches, triggers, workers and reconcile that
//!   drive the hooks, the restart [`checkpoint`] around them, and what it reports
//!   ([`observe`]).
//!
//! [`testing`] (and `testkit`, behind its feature) is the support for tests of hooks.
pub mod api;
mod engine;
pub mod hooks;
mod pair;
mod runtime;
pub mod testing;

pub use engine::{Readiness, SyncConfig, SyncController, WatchTap, checkpoint, observe};
pub use hooks::{context, decision, migration, toolkit};
pub use runtime::{client, events, infra, lenient, store, wakeups};

pub use checkpoint::Checkpoint;
pub use context::{Caches, MalformedObjects, Namespaces, SyncContext};
pub use hooks::{
    Action, DeclaredWithoutCustomHooks, Deleting, Direction, HookError, HookFuture, HookResult, RetryAfter,
    StaleRead, Stubs, SyncHooks, SyncObjects, Terminal, is_stale_read,
};
pub use infra::{InfraConfig, InfraTracker};
pub use observe::{Outcome, SkipReason};
pub use pair::{CapiOnly, MapiObject, Namespaced, NoOwner, SyncObject, SyncPair};
pub use runtime::queue::Backoff;
pub use runtime::reflect::Touched;
pub use store::Store;
#[cfg(feature = "testkit")]
pub use testing::testkit;
