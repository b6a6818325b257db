//! A mirror's spec is the conversion of its authoritative object, and nothing else.
//!
//! Server-side apply restores a field of the conversion another writer changed (see
//! `toolkit::apply`), but leaves a field another writer *added*. Admission policies
//! refuse such edits where they are installed; without them (another distribution,
//! `failurePolicy: Ignore`, an admin) this removes the added fields before the mirror is
//! applied, logs them and records a `MirrorSpecDrift` Warning Event naming each one, so
//! the mirror is back to its source within one reconcile.

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
    let paths = foreign::added_by_others(&live_value, managed, ours, &desired_value, &[]);
    if paths.is_empty() {
        return Ok(None);
    }
    let fields = foreign::describe(&paths).join(", ");
    let object = format!(
        "{} {}/{}",
        K::kind(&()),
        live.namespace().unwrap_or_default(),
        live.name_any()
    );
    let written = foreign::remove(api, manager, live, &paths).await?;
    tracing::info!(%object, %fields, "removed spec fields another writer added to a mirror");
    let note = format!(
        "removed {fields} from {object}: a mirror's spec is the conversion of {source}; change {source} instead"
    );
    ctx.warn(&live.object_ref(&()), REASON, note).await;
    Ok(Some(written))
}
