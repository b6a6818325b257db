//! A mirror's spec is the conversion of its authoritative object, and nothing else.
//!
//! Server-side apply restores a field of the conversion another writer changed (see
//! `toolkit::apply`), but leaves a field another writer *added*. Admission policies
//! refuse such edits where they are installed; without them (another distribution,
//! `failurePolicy: Ignore`, an admin) this removes the added fields before the mirror is
//! applied, and logs and records a `MirrorSpecDrift` Warning Event naming each field
//! removed or (by the apply) restored, so the mirror is back to its source within one
//! reconcile.

use kube::api::Api;
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use sync_core::SyncPair;
use sync_core::context::SyncContext;
use sync_core::toolkit::foreign;

use super::takeover::SYNC_MANAGERS;

/// The reason of the Event.
pub const REASON: &str = "MirrorSpecDrift";

/// Removes from `live` the spec fields another writer added that `desired` (the
/// conversion) lacks. Returns the object as written when something was removed.
pub async fn revert_added_fields<P, K>(
    ctx: &SyncContext<P>,
    api: &Api<K>,
    manager: &str,
    live: Option<&K>,
    desired: &K,
    source: &str,
) -> Result<Option<K>, kube::Error>
where
    P: SyncPair,
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let Some(live) = live else { return Ok(None) };
    let (Ok(live_value), Ok(desired_value)) = (serde_json::to_value(live), serde_json::to_value(desired))
    else {
        return Ok(None);
    };
    let managed = live.meta().managed_fields.as_deref().unwrap_or_default();
    let ours = |m: &str| SYNC_MANAGERS.iter().any(|prefix| m.starts_with(prefix));
    let drift = foreign::drift(&live_value, managed, ours, &desired_value, &[]);
    if drift.is_empty() {
        return Ok(None);
    }
    let object = format!(
        "{} {}/{}",
        K::kind(&()),
        live.namespace().unwrap_or_default(),
        live.name_any()
    );
    let mut done = Vec::new();
    let written = if drift.added.is_empty() {
        None
    } else {
        done.push(format!("removed {}", foreign::describe(&drift.added).join(", ")));
        Some(foreign::remove(api, manager, live, &drift.added).await?)
    };
    if !drift.changed.is_empty() {
        // The apply that follows writes them back.
        done.push(format!(
            "restored {}",
            foreign::describe(&drift.changed).join(", ")
        ));
    }
    let done = done.join("; ");
    tracing::info!(%object, fields = %done, "undid another writer's changes to a mirror's spec");
    let note =
        format!("{done} on {object}: a mirror's spec is the conversion of {source}; change {source} instead");
    ctx.warn(&live.object_ref(&()), REASON, note).await;
    Ok(written)
}
