//! What a DELETE asks of the garbage collector, as kube-apiserver's generic registry
//! decides it: the `DeleteOptions` (`propagationPolicy`, the deprecated
//! `orphanDependents`) read from the body or the query, validated, and turned into the
//! `orphan` / `foregroundDeletion` finalizers the deleted object carries while the
//! collector works.

use std::collections::HashMap;

use serde_json::Value;

use crate::meta::errors::{ApiError, ApiResult, Cause};

/// The finalizer that makes the collector orphan an object's dependents.
pub const ORPHAN: &str = "orphan";
/// The finalizer that keeps an object until its blocking dependents are gone.
pub const FOREGROUND: &str = "foregroundDeletion";

/// `DeleteOptions.propagationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents lose their reference to the object and stay.
    Orphan,
    /// The object goes at once; the collector deletes the dependents afterwards.
    Background,
    /// The object stays (finalizer `foregroundDeletion`) until its blocking dependents are gone.
    Foreground,
}

impl Propagation {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Orphan => "Orphan",
            Self::Background => "Background",
            Self::Foreground => "Foreground",
        }
    }
}

/// The garbage-collection part of a DELETE's options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cascade {
    /// `propagationPolicy`.
    pub propagation: Option<Propagation>,
    /// `orphanDependents` (deprecated, still honoured).
    pub orphan_dependents: Option<bool>,
}

impl Cascade {
    /// A cascade with only a propagation policy.
    pub fn policy(propagation: Propagation) -> Self {
        Self {
            propagation: Some(propagation),
            orphan_dependents: None,
        }
    }

    /// Reads the options from a decoded DeleteOptions body, or, when the body is empty, from
    /// the query (kube-apiserver reads the query only then).
    pub fn parse(body: Option<&Value>, params: &HashMap<String, String>) -> ApiResult<Self> {
        let (policy, orphan) = match body {
            Some(body) => (
                match &body["propagationPolicy"] {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    other => return Err(decode_error("propagationPolicy", other, "string")),
                },
                match &body["orphanDependents"] {
                    Value::Null => None,
                    Value::Bool(b) => Some(*b),
                    other => return Err(decode_error("orphanDependents", other, "bool")),
                },
            ),
            None => (
                params.get("propagationPolicy").cloned(),
                match params.get("orphanDependents").map(String::as_str) {
                    None => None,
                    Some("true" | "1") => Some(true),
                    Some("false" | "0") => Some(false),
                    Some(other) => {
                        return Err(ApiError::bad_request(format!(
                            "strconv.ParseBool: parsing {other:?}: invalid syntax"
                        )));
                    }
                },
            ),
        };
        let mut causes = Vec::new();
        if let (Some(policy), Some(_)) = (&policy, orphan) {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {policy:?}: orphanDependents and deletionPropagation cannot be both set"
                ),
                field: "propagationPolicy".into(),
            });
        }
        let propagation = match policy.as_deref() {
            None => None,
            Some("Orphan") => Some(Propagation::Orphan),
            Some("Background") => Some(Propagation::Background),
            Some("Foreground") => Some(Propagation::Foreground),
            Some(other) => {
                causes.push(Cause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!(
                        "Unsupported value: {other:?}: supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\""
                    ),
                    field: "propagationPolicy".into(),
                });
                None
            }
        };
        if !causes.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", "DeleteOptions", "", causes));
        }
        Ok(Self {
            propagation,
            orphan_dependents: orphan,
        })
    }

    /// Whether the dependents are to be orphaned (kube's `shouldOrphanDependents`): the
    /// options first, then the object's own finalizers, then the default (background).
    fn orphans(&self, finalizers: &[String]) -> bool {
        if let Some(orphan) = self.orphan_dependents {
            return orphan;
        }
        match self.propagation {
            Some(Propagation::Orphan) => return true,
            Some(_) => return false,
            None => {}
        }
        finalizers
            .iter()
            .find_map(|f| match f.as_str() {
                ORPHAN => Some(true),
                FOREGROUND => Some(false),
                _ => None,
            })
            .unwrap_or(false)
    }

    /// Whether the dependents are deleted in the foreground (kube's `shouldDeleteDependents`).
    fn foreground(&self, finalizers: &[String]) -> bool {
        if self.orphan_dependents.is_some() {
            return false;
        }
        match self.propagation {
            Some(Propagation::Foreground) => return true,
            Some(_) => return false,
            None => {}
        }
        finalizers
            .iter()
            .find_map(|f| match f.as_str() {
                FOREGROUND => Some(true),
                ORPHAN => Some(false),
                _ => None,
            })
            .unwrap_or(false)
    }

    /// The finalizers the object carries once this DELETE is applied: the collector's two are
    /// removed and added back as the options ask (kube's
    /// `deletionFinalizersForGarbageCollection`). `None` when the set does not change.
    pub fn finalizers(&self, current: &[String]) -> Option<Vec<String>> {
        let mut wanted: Vec<String> = current
            .iter()
            .filter(|f| *f != ORPHAN && *f != FOREGROUND)
            .cloned()
            .collect();
        if self.orphans(current) {
            wanted.push(ORPHAN.into());
        }
        if self.foreground(current) {
            wanted.push(FOREGROUND.into());
        }
        let same = wanted.len() == dedup(current).len() && wanted.iter().all(|f| current.contains(f));
        (!same).then_some(wanted)
    }
}

fn dedup(list: &[String]) -> Vec<&String> {
    let mut out: Vec<&String> = Vec::new();
    for item in list {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

fn decode_error(field: &str, value: &Value, expected: &str) -> ApiError {
    ApiError::bad_request(format!(
        "error decoding DeleteOptions: json: cannot unmarshal {} into Go struct field DeleteOptions.{field} of type {expected}",
        json_type(value)
    ))
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn parse(body: Value) -> ApiResult<Cascade> {
        Cascade::parse(Some(&body), &HashMap::new())
    }

    #[test]
    fn policies_set_and_clear_the_collector_finalizers() {
        let foreground = Cascade::policy(Propagation::Foreground);
        let orphan = Cascade::policy(Propagation::Orphan);
        let background = Cascade::policy(Propagation::Background);
        assert_eq!(foreground.finalizers(&[]), Some(strings(&["foregroundDeletion"])));
        assert_eq!(
            orphan.finalizers(&strings(&["x.io/a"])),
            Some(strings(&["x.io/a", "orphan"]))
        );
        assert_eq!(background.finalizers(&[]), None);
        // A later DELETE changes its mind: the other finalizer replaces the first.
        assert_eq!(
            background.finalizers(&strings(&["orphan", "x.io/a"])),
            Some(strings(&["x.io/a"]))
        );
        assert_eq!(
            foreground.finalizers(&strings(&["orphan"])),
            Some(strings(&["foregroundDeletion"]))
        );
        assert_eq!(orphan.finalizers(&strings(&["orphan"])), None);
    }

    #[test]
    fn without_options_the_object_finalizers_decide() {
        let none = Cascade::default();
        assert_eq!(none.finalizers(&strings(&["orphan"])), None);
        assert_eq!(none.finalizers(&strings(&["foregroundDeletion"])), None);
        assert_eq!(none.finalizers(&[]), None);
    }

    #[test]
    fn orphan_dependents_overrides_the_finalizers() {
        let orphan = Cascade {
            propagation: None,
            orphan_dependents: Some(true),
        };
        let cascade = Cascade {
            propagation: None,
            orphan_dependents: Some(false),
        };
        assert_eq!(
            orphan.finalizers(&strings(&["foregroundDeletion"])),
            Some(strings(&["orphan"]))
        );
        assert_eq!(cascade.finalizers(&strings(&["orphan"])), Some(vec![]));
    }

    #[test]
    fn options_come_from_the_body_or_else_the_query() {
        assert_eq!(
            parse(json!({"propagationPolicy": "Foreground"})).ok(),
            Some(Cascade::policy(Propagation::Foreground))
        );
        let params = HashMap::from([("propagationPolicy".to_string(), "Orphan".to_string())]);
        assert_eq!(
            Cascade::parse(None, &params).ok(),
            Some(Cascade::policy(Propagation::Orphan))
        );
        let params = HashMap::from([("orphanDependents".to_string(), "false".to_string())]);
        assert_eq!(
            Cascade::parse(None, &params)
                .ok()
                .and_then(|c| c.orphan_dependents),
            Some(false)
        );
    }

    #[test]
    fn invalid_options_are_kubes_errors() {
        let both = parse(json!({"propagationPolicy": "Orphan", "orphanDependents": true})).err();
        assert_eq!(
            both.map(|e| (e.code, e.message)),
            Some((
                422,
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set".to_string()
            ))
        );
        let unknown = parse(json!({"propagationPolicy": "Sideways"})).err();
        assert_eq!(
            unknown.map(|e| e.message),
            Some("DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Sideways\": supported values: \"Foreground\", \"Background\", \"Orphan\", \"nil\"".to_string())
        );
        assert_eq!(
            parse(json!({"orphanDependents": "yes"})).err().map(|e| e.code),
            Some(400)
        );
    }
}
