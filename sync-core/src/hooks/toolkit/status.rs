//! The `Synchronized` condition and `status.synchronizedGeneration` on the MAPI object.
//!
//! Written by server-side apply under a field manager of their own,
//! `<controller>-SynchronizedCondition`, holding only that condition (conditions are a
//! list-map keyed by `type`), so that the sync never takes ownership of — nor removes —
//! conditions other controllers own. Nothing is sent when the live condition already says
//! the same; `lastTransitionTime` moves only when the status changes.

use kube::Resource;
use kube::api::Api;
use serde_json::json;

pub use super::condition::Status;
use super::condition::{Report, apply_status};
use crate::api::AuthoritativeApi;
use crate::api::mapi::Condition;
use crate::pair::MapiObject;

/// The condition type.
pub const SYNCHRONIZED: &str = "Synchronized";

/// What the sync reports about one MAPI object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Synchronized {
    /// The condition's status.
    pub status: Status,
    /// Machine-readable reason.
    pub reason: String,
    /// Human-readable message.
    pub message: String,
    /// With `True`: the authoritative object's generation that is now mirrored, written
    /// to `status.synchronizedGeneration`. Otherwise the field keeps its value.
    pub generation: Option<i64>,
    /// With `True`: the side the mirror was synchronized from, written to
    /// `status.synchronizedAPI` (the migration's record of which side was last in sync).
    pub from: Option<AuthoritativeApi>,
}

impl Synchronized {
    /// `True`: the mirror matches the `generation` of the authoritative object, on side
    /// `from`.
    pub fn done(generation: i64, from: AuthoritativeApi) -> Self {
        Self {
            status: Status::True,
            reason: "ResourceSynchronized".into(),
            message: "Successfully synchronized".into(),
            generation: Some(generation),
            from: Some(from),
        }
    }

    /// `False` with a `FailedTo…` reason.
    pub fn failed(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: Status::False,
            reason: reason.into(),
            message: message.into(),
            generation: None,
            from: None,
        }
    }

    /// `Unknown`: in progress.
    pub fn progressing(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: Status::Unknown,
            reason: reason.into(),
            message: message.into(),
            generation: None,
            from: None,
        }
    }
}

/// The field manager of the condition for `controller` (e.g. `MachineSyncController`).
pub fn field_manager(controller: &str) -> String {
    format!("{controller}-SynchronizedCondition")
}

/// The live `Synchronized` condition of `mapi`, if any.
pub fn synchronized<M: MapiObject>(mapi: &M) -> Option<&Condition> {
    super::condition::find(mapi, SYNCHRONIZED)
}

/// `status.synchronizedAPI` of `mapi`.
pub fn synchronized_api<M: MapiObject>(mapi: &M) -> Option<&AuthoritativeApi> {
    mapi.sync_status()?.synchronized_api.as_ref()
}

/// `status.synchronizedGeneration` of `mapi`.
pub fn synchronized_generation<M: MapiObject>(mapi: &M) -> Option<i64> {
    mapi.sync_status()?.synchronized_generation
}

/// Writes `report` on `mapi` unless it already says so. `Ok(true)`: a write was sent.
pub async fn write<M>(
    api: &Api<M>,
    controller: &str,
    mapi: &M,
    report: &Synchronized,
) -> Result<bool, kube::Error>
where
    M: MapiObject + Resource<DynamicType = ()>,
{
    let live = synchronized(mapi);
    let (generation, api_from) = match report.status {
        Status::True => (
            report.generation.or(synchronized_generation(mapi)),
            report.from.clone().or_else(|| synchronized_api(mapi).cloned()),
        ),
        _ => (synchronized_generation(mapi), synchronized_api(mapi).cloned()),
    };
    let condition = Report {
        type_: SYNCHRONIZED,
        status: report.status,
        reason: &report.reason,
        message: &report.message,
    };
    if condition.matches(live)
        && synchronized_generation(mapi) == generation
        && synchronized_api(mapi) == api_from.as_ref()
    {
        return Ok(false);
    }
    let mut status = json!({ "conditions": [condition.to_json(live)] });
    if let Some(generation) = generation {
        status["synchronizedGeneration"] = generation.into();
    }
    if let Some(from) = api_from {
        status["synchronizedAPI"] = from.as_str().into();
    }
    apply_status(api, &field_manager(controller), mapi, status).await?;
    Ok(true)
}
