//! The hook writer's surface: the hooks a synced pair's business logic plugs into and
//! their stub defaults, what they are given ([`objects`], [`context`]) and return
//! ([`outcome`]), the decision table that picks them ([`decision`]), the migration hooks
//! ([`migration`]) and the toolkit they are written with ([`toolkit`]).
//!
//! Every hook has a working default (a debug log and "wait for the next change"), so a
//! declaration alone yields a running controller. Overriding a method is an ordinary,
//! type-checked trait impl; nothing generated has to be touched.

pub mod context;
pub mod decision;
pub mod migration;
pub mod objects;
pub mod outcome;
pub mod toolkit;

use std::future::Future;

use kube::{Resource, ResourceExt};

use crate::pair::SyncPair;
pub use context::SyncContext;
pub use objects::{Deleting, Direction, SyncObjects};
pub use outcome::{
    Action, ErrorKind, HookError, HookResult, RetryAfter, StaleRead, Step, Stop, Terminal, finish, is_stale_read,
};

/// The business logic of a synced pair.
///
/// `#[sync_controller]` implements this trait with the stubs for the declared type unless
/// told `custom_hooks`; then write `impl SyncHooks<MyPair> for MyPair { … }` and override
/// what you need. Any other type can carry hooks too (tests use a recording one) and is
/// passed to [`crate::SyncController::run`].
pub trait SyncHooks<P: SyncPair>: Send + Sync + 'static {
    /// Machine API is authoritative: make the CAPI side mirror `objects.mapi`.
    fn reconcile_mapi_to_capi(
        &self,
        objects: &SyncObjects<P>,
        ctx: &SyncContext<P>,
    ) -> impl Future<Output = HookResult> + Send {
        stub(Direction::MapiToCapi, objects, ctx)
    }

    /// Cluster API is authoritative: make the MAPI side mirror `objects.capi` (which may
    /// mean creating it: `objects.mapi` is `None` for a CAPI-only Machine).
    fn reconcile_capi_to_mapi(
        &self,
        objects: &SyncObjects<P>,
        ctx: &SyncContext<P>,
    ) -> impl Future<Output = HookResult> + Send {
        stub(Direction::CapiToMapi, objects, ctx)
    }

    /// One of the objects is being deleted; `direction` is the authoritative one. A
    /// CAPI-only object being deleted comes here too (`CapiToMapi`, `objects.mapi` is
    /// `None`), whatever the CAPI-only policy, so that the pair can release its finalizer
    /// once the MAPI side is gone; release only your own (`docs/design.md` §5).
    fn reconcile_deletion(
        &self,
        direction: Direction,
        objects: &SyncObjects<P>,
        ctx: &SyncContext<P>,
    ) -> impl Future<Output = HookResult> + Send {
        stub(direction, objects, ctx)
    }
}

/// The stub every hook defaults to: log at debug level (with the resourceVersions it
/// saw, so a test of a separate process can tell which change reached it), wait for the
/// next change.
pub async fn stub<P: SyncPair>(
    direction: Direction,
    objects: &SyncObjects<P>,
    ctx: &SyncContext<P>,
) -> HookResult {
    tracing::debug!(
        controller = P::NAME,
        name = %objects.name,
        %direction,
        mapi = objects.mapi.as_ref().map(|o| o.name_any()).as_deref(),
        capi = objects.capi.as_ref().map(|o| o.name_any()).as_deref(),
        mapi_resource_version = objects.mapi.as_ref().and_then(|o| o.meta().resource_version.as_deref()),
        capi_resource_version = objects.capi.as_ref().and_then(|o| o.meta().resource_version.as_deref()),
        capi_namespace = %ctx.namespaces.capi,
        "stub hook: no sync logic yet"
    );
    Ok(Action::await_change())
}
