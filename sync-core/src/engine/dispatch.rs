//! What a worker does with a name: the sync's decision table and hooks, or a migration.
//! The restart checkpoint wraps the first ([`super::checkpointed`]).

use std::panic::AssertUnwindSafe;

use kube::Client;
use tracing::Instrument;

use crate::engine::observe::{Outcome, SkipReason};
use crate::engine::reconcile::{caught, fetch_beside, is_malformed, reconcile, report_malformed};
use crate::hooks::SyncHooks;
use crate::hooks::context::SyncContext;
use crate::hooks::migration::MigrationHooks;
use crate::hooks::outcome::{Action, HookResult};
use crate::pair::SyncPair;

/// Reconciles one name for a worker: what happened (for the observer) and the result
/// (for the queue).
pub(crate) trait Dispatch<P: SyncPair>: Send + Sync + 'static {
    /// Reconciles `name`.
    fn dispatch(
        &self,
        ctx: &SyncContext<P>,
        name: &str,
    ) -> impl Future<Output = (Outcome, HookResult)> + Send;

    /// Prepares, alongside the watches' lists (the workers wait for both).
    fn prepare(&self, _client: Client) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// Finishes, once the workers and watches have stopped (if the caches ever synced).
    fn finish(&self, _ctx: &SyncContext<P>) -> impl Future<Output = ()> + Send {
        async {}
    }
}

/// The sync hooks, routed by the decision table.
pub(crate) struct SyncDispatch<H>(pub H);

impl<P: SyncPair, H: SyncHooks<P>> Dispatch<P> for SyncDispatch<H> {
    async fn dispatch(&self, ctx: &SyncContext<P>, name: &str) -> (Outcome, HookResult) {
        let reconciled = reconcile(&self.0, ctx, name).await;
        (reconciled.outcome, reconciled.result)
    }
}

/// The migration hook, for every name whose MAPI object exists.
pub(crate) struct MigrationDispatch<H>(pub H);

impl<P: SyncPair, H: MigrationHooks<P>> Dispatch<P> for MigrationDispatch<H> {
    async fn dispatch(&self, ctx: &SyncContext<P>, name: &str) -> (Outcome, HookResult) {
        // A settled name logs nothing: it is told before its span is made (a span with its
        // fields costs about a third as much as the glance, decompression included).
        if !is_malformed(ctx, name) && self.settled(ctx, name) {
            return (Outcome::Skipped(SkipReason::Settled), Ok(Action::await_change()));
        }
        let span = tracing::info_span!("migrate", controller = ctx.controller, object = name);
        async {
            if let Some(skip) = report_malformed(ctx, name).await {
                return (skip, Ok(Action::await_change()));
            }
            let Some(mapi) = ctx.caches.mapi(&ctx.namespaces, name) else {
                return (
                    Outcome::Skipped(SkipReason::NothingToDo),
                    Ok(Action::await_change()),
                );
            };
            let objects = fetch_beside(ctx, name, Some(mapi));
            let result = caught(self.0.reconcile_migration(&objects, ctx)).await;
            let outcome = Outcome::Migration {
                failed: result.is_err(),
            };
            (outcome, result)
        }
        .instrument(span)
        .await
    }
}

impl<H> MigrationDispatch<H> {
    /// Whether the hook calls `name` settled from its glance at the cached MAPI object (not
    /// the decoded whole). A hook that panics telling is asked the whole way, where its
    /// panic is caught.
    fn settled<P: SyncPair>(&self, ctx: &SyncContext<P>, name: &str) -> bool
    where
        H: MigrationHooks<P>,
    {
        let glance = ctx.caches.mapi_glance::<H::Glance>(&ctx.namespaces, name);
        glance.is_some_and(|glance| {
            std::panic::catch_unwind(AssertUnwindSafe(|| self.0.settled(&glance))).unwrap_or(false)
        })
    }
}
