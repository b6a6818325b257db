//! The restart checkpoint around the sync's dispatch ([`super::checkpoint`]): a name's
//! first reconcile skips the hooks when the last run verified the pair at the same
//! objects, and every reconcile records whether it verified it.

use std::sync::Arc;

use kube::Client;

use crate::engine::checkpoint::{Ledger, PairVersions, Reference};
use crate::engine::dispatch::Dispatch;
use crate::engine::observe::{Outcome, SkipReason};
use crate::engine::reconcile::{is_malformed, reconcile};
use crate::hooks::SyncHooks;
use crate::hooks::context::SyncContext;
use crate::hooks::outcome::{Action, HookResult};
use crate::pair::SyncPair;

/// How long a stopping controller may take to save its checkpoint (it is only a hint for
/// the next start; the shutdown budget has better uses).
const SAVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The sync hooks with a restart checkpoint.
pub(crate) struct Checkpointed<H> {
    pub hooks: H,
    pub ledger: Arc<Ledger>,
}

impl<P: SyncPair, H: SyncHooks<P>> Dispatch<P> for Checkpointed<H> {
    async fn dispatch(&self, ctx: &SyncContext<P>, name: &str) -> (Outcome, HookResult) {
        let ledger = &self.ledger;
        // A first reconcile compares the cached versions with the checkpoint before
        // decoding anything: a fingerprint was saved only for a pair whose objects, at
        // exactly these versions, decided a sync that changed nothing. A malformed side
        // is reported by the reconcile instead, whatever its cached version.
        if ledger.restoring(name)
            && !is_malformed(ctx, name)
            && ledger.restored(name, cached_fingerprint(ctx, ledger, name))
        {
            tracing::debug!(
                controller = P::NAME,
                object = name,
                "unchanged since the last run verified it in sync"
            );
            return (
                Outcome::Skipped(SkipReason::Checkpointed),
                Ok(Action::await_change()),
            );
        }
        let reconciled = reconcile(&self.hooks, ctx, name).await;
        // Verified: a sync hook that asked for nothing but the next change.
        let settled = reconciled
            .result
            .as_ref()
            .is_ok_and(|action| action.requeue_after().is_none());
        let verified = reconciled
            .synced
            .filter(|_| settled)
            .and_then(|objects| ledger.fingerprint(&objects));
        if matches!(reconciled.outcome, Outcome::Skipped(SkipReason::NothingToDo)) {
            ledger.forget(name);
        } else {
            ledger.record(name, verified);
        }
        (reconciled.outcome, reconciled.result)
    }

    /// Loads the last run's checkpoint (before the workers start).
    async fn prepare(&self, client: Client) {
        self.ledger.load::<P>(client).await;
    }

    /// Saves the verified fingerprints of the cached names, within [`SAVE_TIMEOUT`].
    async fn finish(&self, ctx: &SyncContext<P>) {
        let mut names = ctx.caches.mapi.names();
        names.extend(ctx.caches.capi.names());
        let ledger = &self.ledger;
        let saving = ledger.save::<P>(ctx.client.clone(), names.iter().map(String::as_str), |name| {
            cached_fingerprint(ctx, ledger, name)
        });
        if tokio::time::timeout(SAVE_TIMEOUT, saving).await.is_err() {
            tracing::warn!(controller = P::NAME, "saving the restart checkpoint timed out");
        }
    }
}

/// The fingerprint of the pair `name` as the caches hold it, from the objects' versions
/// and the tracked infrastructure reference: no object is decoded. `None` unless both
/// sides are cached. (A malformed reference is not tracked and reads as none: such a
/// pair never matches its saved fingerprint, which only costs it the skip.)
fn cached_fingerprint<P: SyncPair>(ctx: &SyncContext<P>, ledger: &Ledger, name: &str) -> Option<u64> {
    let mapi = ctx
        .caches
        .mapi
        .resource_version(Some(&ctx.namespaces.mapi), name)?;
    let capi = ctx
        .caches
        .capi
        .resource_version(Some(&ctx.namespaces.capi), name)?;
    let reference = ctx.infra_refs.as_ref().and_then(|refs| refs.reference(name));
    let infra = match (&ctx.infra, &reference) {
        (Some(tracker), Some(reference)) => tracker.cached_version(reference),
        _ => None,
    };
    Some(ledger.fingerprint_of(&PairVersions {
        name,
        mapi: &mapi,
        capi: &capi,
        infra_ref: reference.as_ref().map_or(Reference::None, Reference::Valid),
        infra: infra.as_deref(),
    }))
}
