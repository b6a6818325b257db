//! The `Synchronized` condition and `status.synchronizedGeneration` on the MAPI object.
//!
//! Written by server-side apply under a field manager of their own,
//! `<controller>-SynchronizedCondition`, holding only that condition (conditions are a
//! list-map keyed by `type`), so that the sync never takes ownership of — nor removes —
//! conditions other controllers own. Nothing is sent when the live condition already says
//! the same; `lastTransitionTime` moves only when the status changes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::json;

use crate::api::mapi::Condition;
use crate::pair::MapiObject;

/// The condition type.
pub const SYNCHRONIZED: &str = "Synchronized";

/// A condition's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// In sync.
    True,
    /// Failed; the reason says why (`FailedTo…`).
    False,
    /// In progress.
    Unknown,
}

impl Status {
    /// `True`, `False`, `Unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        }
    }

    /// The Machine API severity that goes with it: none, `Error`, `Info`.
    pub fn severity(self) -> Option<&'static str> {
        match self {
            Self::True => None,
            Self::False => Some("Error"),
            Self::Unknown => Some("Info"),
        }
    }
}

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
}

impl Synchronized {
    /// `True`: the mirror matches the authoritative object's `generation`.
    pub fn done(generation: i64) -> Self {
        Self {
            status: Status::True,
            reason: "ResourceSynchronized".into(),
            message: "Successfully synchronized".into(),
            generation: Some(generation),
        }
    }

    /// `False` with a `FailedTo…` reason.
    pub fn failed(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: Status::False,
            reason: reason.into(),
            message: message.into(),
            generation: None,
        }
    }

    /// `Unknown`: in progress.
    pub fn progressing(reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            status: Status::Unknown,
            reason: reason.into(),
            message: message.into(),
            generation: None,
        }
    }
}

/// The field manager of the condition for `controller` (e.g. `MachineSyncController`).
pub fn field_manager(controller: &str) -> String {
    format!("{controller}-SynchronizedCondition")
}

/// The live `Synchronized` condition of `mapi`, if any.
pub fn synchronized<M: MapiObject>(mapi: &M) -> Option<&Condition> {
    mapi.sync_status()?
        .conditions
        .as_deref()?
        .iter()
        .find(|c| c.type_ == SYNCHRONIZED)
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
    let generation = match report.status {
        Status::True => report.generation.or(synchronized_generation(mapi)),
        _ => synchronized_generation(mapi),
    };
    let unchanged = live.is_some_and(|c| {
        c.status == report.status.as_str()
            && c.reason.as_deref() == Some(report.reason.as_str())
            && c.message.as_deref().unwrap_or_default() == report.message
            && c.severity.as_deref().filter(|s| !s.is_empty()) == report.status.severity()
    }) && synchronized_generation(mapi) == generation;
    if unchanged {
        return Ok(false);
    }
    let transition = match live {
        Some(c) if c.status == report.status.as_str() => c.last_transition_time.clone(),
        _ => None,
    }
    .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now()));
    let mut condition = json!({
        "type": SYNCHRONIZED,
        "status": report.status.as_str(),
        "reason": report.reason,
        "message": report.message,
        "lastTransitionTime": transition,
    });
    if let Some(severity) = report.status.severity() {
        condition["severity"] = severity.into();
    }
    let mut status = json!({ "conditions": [condition] });
    if let Some(generation) = generation {
        status["synchronizedGeneration"] = generation.into();
    }
    let body = json!({
        "apiVersion": M::api_version(&()),
        "kind": M::kind(&()),
        "metadata": { "name": mapi.name_any(), "namespace": mapi.namespace() },
        "status": status,
    });
    let params = PatchParams::apply(&field_manager(controller)).force();
    api.patch_status(&mapi.name_any(), &params, &Patch::Apply(&body))
        .await?;
    Ok(true)
}
