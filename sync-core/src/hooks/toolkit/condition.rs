//! Server-side apply of a MAPI object's status fragments under a field manager of their
//! own, and of single conditions in them.
//!
//! `status.conditions` is a list-map keyed by `type`: a manager that applies only the
//! conditions it owns never takes ownership of — nor removes — the others' (the bug
//! upstream fixed in #313, where resetting the sync status took every condition). Each
//! writer of a condition or field gets its own manager, so that one writer's apply never
//! drops another's fields.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};

use super::patch::Part;
use crate::api::mapi::Condition;
use crate::pair::MapiObject;

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

/// One MAPI condition as a controller reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report<'a> {
    /// The condition type.
    pub type_: &'a str,
    /// Its status.
    pub status: Status,
    /// Machine-readable reason.
    pub reason: &'a str,
    /// Human-readable message.
    pub message: &'a str,
}

impl Report<'_> {
    /// Whether `live` already says this (type, status, reason, message, severity).
    pub fn matches(&self, live: Option<&Condition>) -> bool {
        live.is_some_and(|c| {
            c.type_ == self.type_
                && c.status == self.status.as_str()
                && c.reason.as_deref() == Some(self.reason)
                && c.message.as_deref().unwrap_or_default() == self.message
                && c.severity.as_deref().filter(|s| !s.is_empty()) == self.status.severity()
        })
    }

    /// The condition's wire form; `lastTransitionTime` is kept from `live` unless the
    /// status changes.
    pub fn to_json(&self, live: Option<&Condition>) -> Value {
        let transition = match live {
            Some(c) if c.status == self.status.as_str() => c.last_transition_time.clone(),
            _ => None,
        }
        .unwrap_or_else(|| Time(k8s_openapi::jiff::Timestamp::now()));
        let mut condition = json!({
            "type": self.type_,
            "status": self.status.as_str(),
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": transition,
        });
        if let Some(severity) = self.status.severity() {
            condition["severity"] = severity.into();
        }
        condition
    }
}

/// The live condition `type_` of `mapi`, if any.
pub fn find<'m, M: MapiObject>(mapi: &'m M, type_: &str) -> Option<&'m Condition> {
    mapi.sync_status()?
        .conditions
        .as_deref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Applies `status` (a fragment of the object's status) under `manager`, with force.
///
/// The API server's answer is checked to be a success and not decoded: no writer of a
/// status reads it back, and the new version reaches the caches through their watch.
pub async fn apply_status<M>(api: &Api<M>, manager: &str, mapi: &M, status: Value) -> Result<(), kube::Error>
where
    M: MapiObject + Resource<DynamicType = ()>,
{
    let body = json!({
        "apiVersion": M::api_version(&()),
        "kind": M::kind(&()),
        "metadata": { "name": mapi.name_any(), "namespace": mapi.namespace() },
        "status": status,
    });
    let params = PatchParams::apply(manager).force();
    super::patch::patch_unread(api, Part::Status, &mapi.name_any(), &params, &Patch::Apply(&body)).await
}

/// Applies the one condition `report` under `manager` unless the live one already says
/// so. `Ok(true)`: a write was sent.
pub async fn apply<M>(api: &Api<M>, manager: &str, mapi: &M, report: &Report<'_>) -> Result<bool, kube::Error>
where
    M: MapiObject + Resource<DynamicType = ()>,
{
    let live = find(mapi, report.type_);
    if report.matches(live) {
        return Ok(false);
    }
    apply_status(
        api,
        manager,
        mapi,
        json!({ "conditions": [report.to_json(live)] }),
    )
    .await?;
    Ok(true)
}
