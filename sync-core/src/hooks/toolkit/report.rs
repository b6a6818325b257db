//! Reporting a failed sync: `Synchronized=False` on the MAPI object and a Warning Event
//! (on the CAPI object when there is no MAPI one), then waiting for a change.
//!
//! A conversion error does not go away by retrying: the input must change, and a change
//! reconciles the name again. So the hook ends with "await change", not an error that the
//! queue would retry with backoff forever. A failure to *write* the report is an error,
//! retried with backoff.

use kube::api::Api;

use super::status::{self, Synchronized};
use crate::hooks::context::SyncContext;
use crate::hooks::{Action, HookResult, SyncObjects};
use crate::pair::SyncPair;

/// The Event reason of a failed sync.
pub const SYNCHRONIZATION_ERROR: &str = "SynchronizationError";

/// Reports `reason: message` as `Synchronized=False` on the MAPI object (if any) and as a
/// Warning Event, and ends the reconcile until something changes.
pub async fn fail<P: SyncPair>(
    ctx: &SyncContext<P>,
    controller: &str,
    objects: &SyncObjects<P>,
    reason: &str,
    message: impl std::fmt::Display,
) -> HookResult {
    let message = message.to_string();
    tracing::warn!(controller, name = %objects.name, reason, error = %message, "sync failed");
    if let Some(reference) = objects.event_target() {
        ctx.warn(&reference, SYNCHRONIZATION_ERROR, format!("{reason}: {message}"))
            .await;
    }
    if let Some(mapi) = &objects.mapi {
        let api: Api<P::Mapi> = Api::namespaced(ctx.client.clone(), &ctx.namespaces.mapi);
        status::write(
            &api,
            controller,
            mapi.as_ref(),
            &Synchronized::failed(reason, message),
        )
        .await?;
    }
    Ok(Action::await_change())
}
