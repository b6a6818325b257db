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
    Action, ErrorKind, HookError, HookResult, RetryAfter, StaleRead, Step, Stop, Terminal, finish,
    is_stale_read,
};

/// The business logic of a synced pair.
///
/// `#[sync_controller]` gives the declared type the stubs (through
/// [`DeclaredWithoutCustomHooks`]) unless told `custom_hooks`; then write
/// `impl SyncHooks<MyPair> for MyPair { … }` and override what you need, each hook an
/// `async fn`. Any other type can carry hooks too (tests use a recording one) and is
/// passed to [`crate::SyncController::run`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no hooks for the pair `{P}`",
    label = "`SyncHooks<{P}>` is not implemented",
    note = "a pair declared with `custom_hooks` implements them itself: `impl SyncHooks<{P}> for {P} {{ … }}` overriding the hooks it needs; without `custom_hooks` it runs on the stubs"
)]
pub trait SyncHooks<P: SyncPair>: Send + Sync + 'static {
    /// Machine API is authoritative: make the CAPI side mirror `objects.mapi`.
    fn reconcile_mapi_to_capi(&self, objects: &SyncObjects<P>, ctx: &SyncContext<P>) -> impl HookFuture {
        stub(Direction::MapiToCapi, objects, ctx)
    }

    /// Cluster API is authoritative: make the MAPI side mirror `objects.capi` (which may
    /// mean creating it: `objects.mapi` is `None` for a CAPI-only Machine).
    fn reconcile_capi_to_mapi(&self, objects: &SyncObjects<P>, ctx: &SyncContext<P>) -> impl HookFuture {
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
    ) -> impl HookFuture {
        stub(direction, objects, ctx)
    }
}

/// What a hook returns: the future of an `async fn` ending in a [`HookResult`]. A trait of
/// its own so that a hook written as a plain `fn` is told to be `async`.
#[diagnostic::on_unimplemented(
    message = "a hook must be an `async fn` returning `HookResult`, not a plain `fn` returning `{Self}`",
    label = "not the future of an `async fn`",
    note = "write the hook as `async fn`, e.g. `async fn reconcile_mapi_to_capi(&self, objects: &SyncObjects<P>, ctx: &SyncContext<P>) -> HookResult`"
)]
pub trait HookFuture: Future<Output = HookResult> + Send {}

#[diagnostic::do_not_recommend]
impl<F: Future<Output = HookResult> + Send> HookFuture for F {}

/// A pair that runs on the stub hooks: `#[sync_controller]` implements it unless the
/// attribute says `custom_hooks`. A pair with an `impl SyncHooks` of its own must say
/// `custom_hooks`, or that impl conflicts with this one (the compiler's note names it).
pub trait DeclaredWithoutCustomHooks: SyncPair {}

#[diagnostic::do_not_recommend]
impl<P: DeclaredWithoutCustomHooks> SyncHooks<P> for P {}

/// The stub hooks for any pair: its objects are watched and cached, and nothing is
/// written (an operator that cannot sync a platform still serves its caches).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stubs;

// Kept out of the compiler's "other types implement `SyncHooks`" list: a pair that lacks
// its hooks is told how to write them, not pointed at the stubs.
#[diagnostic::do_not_recommend]
impl<P: SyncPair> SyncHooks<P> for Stubs {}

/// The stub every hook defaults to: log at debug level (with the resourceVersions it
/// saw, so a test of a separate process can tell which change reached it), wait for the
/// next change.
pub async fn stub<P: SyncPair>(
    direction: Direction,
    objects: &SyncObjects<P>,
    ctx: &SyncContext<P>,
) -> HookResult {
    tracing::debug!(
        controller = ctx.controller,
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
