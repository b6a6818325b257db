//! Conditions as the providers write them: set one by type, keep `lastTransitionTime` while
//! the status stays the same, and tell whether anything changed (so an unchanged condition
//! is never rewritten).
//!
//! Works on the JSON list, so the one helper serves the Machine API conditions (with a
//! severity), `metav1.Condition` (with an observedGeneration) and Cluster API v1beta1
//! conditions (the AWS provider's), and keeps every other writer's conditions untouched.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Map, Value};

/// One condition to set.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Condition<'a> {
    pub type_: &'a str,
    pub status: bool,
    pub reason: &'a str,
    pub message: String,
    /// Machine API and Cluster API v1beta1 conditions: `Error`, `Warning`, `Info`.
    pub severity: Option<&'a str>,
    /// `metav1.Condition`: the generation it reflects.
    pub observed_generation: Option<i64>,
}

impl<'a> Condition<'a> {
    /// A condition with the given type, status and reason, and no message.
    pub fn new(type_: &'a str, status: bool, reason: &'a str) -> Self {
        Self {
            type_,
            status,
            reason,
            message: String::new(),
            severity: None,
            observed_generation: None,
        }
    }

    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    pub fn severity(mut self, severity: &'a str) -> Self {
        self.severity = Some(severity);
        self
    }

    pub fn generation(mut self, generation: Option<i64>) -> Self {
        self.observed_generation = generation;
        self
    }

    fn to_json(&self, last_transition_time: Value) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), self.type_.into());
        map.insert("status".into(), if self.status { "True" } else { "False" }.into());
        map.insert("reason".into(), self.reason.into());
        // `metav1.Condition` requires a message (it may be empty); Machine API and Cluster
        // API v1beta1 conditions omit an empty one (CAPA's schema rejects "").
        if !self.message.is_empty() || self.observed_generation.is_some() {
            map.insert("message".into(), self.message.clone().into());
        }
        if let Some(severity) = self.severity {
            map.insert("severity".into(), severity.into());
        }
        if let Some(generation) = self.observed_generation {
            map.insert("observedGeneration".into(), generation.into());
        }
        map.insert("lastTransitionTime".into(), last_transition_time);
        Value::Object(map)
    }
}

/// A condition list being edited; [`Conditions::changed`] says whether it needs a write.
#[derive(Debug, Clone, Default)]
pub(super) struct Conditions {
    list: Vec<Value>,
    changed: bool,
}

impl Conditions {
    /// The list as stored (anything serializable to a JSON array; anything else is empty).
    pub fn from_list(list: impl serde::Serialize) -> Self {
        let list = match serde_json::to_value(list) {
            Ok(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        Self { list, changed: false }
    }

    /// Sets `condition`, replacing the one of its type.
    pub fn set(&mut self, condition: &Condition<'_>) {
        let now = now();
        match self.list.iter_mut().find(|c| c["type"] == condition.type_) {
            Some(existing) => {
                let status = if condition.status { "True" } else { "False" };
                let since = if existing["status"] == status && !existing["lastTransitionTime"].is_null() {
                    existing["lastTransitionTime"].clone()
                } else {
                    now
                };
                let new = condition.to_json(since);
                if *existing != new {
                    *existing = new;
                    self.changed = true;
                }
            }
            None => {
                self.list.push(condition.to_json(now));
                self.changed = true;
            }
        }
    }

    /// Whether a set changed anything.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// The condition of `type_`, if set.
    #[cfg(test)]
    pub fn get(&self, type_: &str) -> Option<&Value> {
        self.list.iter().find(|c| c["type"] == type_)
    }

    /// The whole list, for the status patch.
    pub fn into_json(self) -> Value {
        Value::Array(self.list)
    }
}

/// Now, as the API server writes times.
pub(super) fn now() -> Value {
    serde_json::to_value(Time(k8s_openapi::jiff::Timestamp::now())).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn setting_a_new_condition_appends_it_and_keeps_the_others() {
        let mut conditions = Conditions::from_list(json!([
            {"type": "Synchronized", "status": "True", "reason": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]));
        conditions.set(&Condition::new("Paused", true, "Paused").message("paused"));
        assert!(conditions.changed());
        let list = conditions.into_json();
        assert_eq!(list[0]["type"], "Synchronized");
        assert_eq!(list[1]["type"], "Paused");
        assert_eq!(list[1]["status"], "True");
        assert_eq!(list[1]["message"], "paused");
        assert!(list[1]["lastTransitionTime"].is_string());
    }

    #[test]
    fn an_unchanged_condition_is_not_a_change() {
        let mut conditions = Conditions::from_list(json!([]));
        conditions.set(&Condition::new("Paused", false, "NotPaused").severity("Info"));
        let mut again = Conditions::from_list(conditions.into_json());
        again.set(&Condition::new("Paused", false, "NotPaused").severity("Info"));
        assert!(!again.changed());
    }

    #[test]
    fn the_transition_time_moves_only_with_the_status() {
        let old = "2026-01-01T00:00:00Z";
        let mut conditions = Conditions::from_list(json!([
            {"type": "Ready", "status": "False", "reason": "A", "message": "", "lastTransitionTime": old}
        ]));
        conditions.set(&Condition::new("Ready", false, "B"));
        assert!(conditions.changed());
        assert_eq!(
            conditions.get("Ready").map(|c| c["lastTransitionTime"].clone()),
            Some(json!(old))
        );
        conditions.set(&Condition::new("Ready", true, "B"));
        assert_ne!(
            conditions.get("Ready").map(|c| c["lastTransitionTime"].clone()),
            Some(json!(old))
        );
    }

    #[test]
    fn generation_and_severity_are_written_when_given() {
        let mut conditions = Conditions::default();
        conditions.set(
            &Condition::new("Paused", true, "Paused")
                .generation(Some(3))
                .severity("Info"),
        );
        let paused = conditions.get("Paused").cloned().unwrap_or_default();
        assert_eq!(paused["observedGeneration"], 3);
        assert_eq!(paused["severity"], "Info");
    }

    #[test]
    fn an_empty_message_is_omitted_except_on_metav1_conditions() {
        let mut conditions = Conditions::default();
        conditions.set(&Condition::new("InstanceReady", true, "InstanceReady"));
        conditions.set(&Condition::new("Ready", true, "Ready").generation(Some(1)));
        let list = conditions.into_json();
        assert!(list[0].get("message").is_none(), "{list}");
        assert_eq!(list[1]["message"], "");
    }
}
