//! Events are one resource seen through two APIs, as in kube-apiserver: `core/v1` and
//! `events.k8s.io/v1` Events share one storage (the core form, kube's storage version),
//! so `kubectl get events` shows what a controller recorded through `events.k8s.io`, and
//! the other way round. Writes through `events.k8s.io/v1` are stored in the core form;
//! reads through it are converted back, with kube's field mapping:
//!
//! | `events.k8s.io/v1` | `core/v1` |
//! |---|---|
//! | `regarding` | `involvedObject` |
//! | `note` | `message` |
//! | `reportingController` | `reportingComponent` |
//! | `deprecatedSource` | `source` |
//! | `deprecatedFirstTimestamp` | `firstTimestamp` |
//! | `deprecatedLastTimestamp` | `lastTimestamp` |
//! | `deprecatedCount` | `count` |
//!
//! (`reason`, `type`, `action`, `related`, `reportingInstance`, `eventTime` and `series`
//! have the same names in both.)

use serde_json::{Map, Value};

use crate::resources::ResourceInfo;

/// The group of the second API.
pub const GROUP: &str = "events.k8s.io";

/// `events.k8s.io/v1` name → `core/v1` name.
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Whether `info` is `events.k8s.io/v1` Events.
pub fn is_events_api(info: &ResourceInfo) -> bool {
    info.group == GROUP && info.plural == "events" && !info.custom
}

/// An `events.k8s.io/v1` Event in its stored (`core/v1`) form.
pub fn to_core(object: &mut Value) {
    rename(object, |name| {
        RENAMED.iter().find(|(new, _)| *new == name).map(|(_, old)| *old)
    });
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), Value::String("v1".into()));
    }
}

/// A stored (`core/v1`) Event as `events.k8s.io/v1` shows it.
pub fn from_core(object: &Value) -> Value {
    let mut shown = object.clone();
    rename(&mut shown, |name| {
        RENAMED.iter().find(|(_, old)| *old == name).map(|(new, _)| *new)
    });
    if let Some(map) = shown.as_object_mut() {
        map.insert("apiVersion".into(), Value::String(format!("{GROUP}/v1")));
    }
    shown
}

/// A field selector path of `events.k8s.io/v1` as it applies to the stored form
/// (`regarding.name` → `involvedObject.name`).
pub fn stored_field(field: &str) -> String {
    let (head, rest) = field.split_once('.').unwrap_or((field, ""));
    match RENAMED.iter().find(|(new, _)| *new == head) {
        Some((_, old)) if rest.is_empty() => (*old).to_owned(),
        Some((_, old)) => format!("{old}.{rest}"),
        None => field.to_owned(),
    }
}

fn rename(object: &mut Value, to: impl Fn(&str) -> Option<&'static str>) {
    let Some(map) = object.as_object_mut() else { return };
    let renamed: Map<String, Value> = std::mem::take(map)
        .into_iter()
        .map(|(key, value)| match to(&key) {
            Some(new) => (new.to_owned(), value),
            None => (key, value),
        })
        .collect();
    *map = renamed;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_two_forms_map_field_by_field_and_back() {
        let new = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "ns"},
            "regarding": {"kind": "Machine", "name": "m"}, "note": "hello",
            "reason": "Synced", "type": "Normal", "action": "Sync",
            "reportingController": "machine-sync", "reportingInstance": "pod-1",
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"},
            "deprecatedCount": 3
        });
        let mut core = new.clone();
        to_core(&mut core);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "m");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "machine-sync");
        assert_eq!(core["count"], 3);
        assert_eq!(core["series"]["count"], 2);
        assert!(core.get("regarding").is_none() && core.get("note").is_none());
        assert_eq!(from_core(&core), new);
    }

    #[test]
    fn field_selectors_follow_the_stored_names() {
        assert_eq!(stored_field("regarding.name"), "involvedObject.name");
        assert_eq!(stored_field("reason"), "reason");
        assert_eq!(stored_field("reportingController"), "reportingComponent");
        assert_eq!(stored_field("metadata.name"), "metadata.name");
    }
}
