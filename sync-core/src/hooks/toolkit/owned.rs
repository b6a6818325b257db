//! The part of an object a field manager owns, read from `metadata.managedFields`.
//!
//! Server-side apply makes an object's owned fields exactly what the manager last applied
//! (fields it stops sending are removed). So "would this apply change anything?" is "does
//! the desired object differ from the manager's owned projection of the live one?" —
//! client-go answers it the same way with its `Extract…` apply configurations.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use serde_json::{Map, Value};

/// The fields of `object` that `manager` owns through server-side apply on `subresource`
/// (`None`: the main resource), as a partial object. Empty when it owns nothing.
pub fn owned_by(
    object: &Value,
    managed: &[ManagedFieldsEntry],
    manager: &str,
    subresource: Option<&str>,
) -> Value {
    let mut owned = Value::Object(Map::new());
    for entry in managed.iter().filter(|e| {
        e.manager.as_deref() == Some(manager)
            && e.operation.as_deref() == Some("Apply")
            && e.subresource.as_deref().filter(|s| !s.is_empty()) == subresource
    }) {
        match entry.fields_v1.as_ref().map(|fields| &fields.0) {
            // As the caches and the toolkit's patches keep it (`runtime::field_sets`): the
            // set's JSON text.
            Some(Value::String(text)) => {
                if let Ok(fields) = serde_json::from_str::<Value>(text) {
                    merge(&mut owned, project(&fields, object));
                }
            }
            Some(fields) => merge(&mut owned, project(fields, object)),
            None => {}
        }
    }
    owned
}

/// Walks a `fieldsV1` set and the object together, keeping the owned values.
fn project(fields: &Value, value: &Value) -> Value {
    let Some(set) = fields.as_object().filter(|set| set.keys().any(|k| k != ".")) else {
        // A leaf (`{}` or only `.`): the whole value is owned.
        return value.clone();
    };
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, sub) in set {
                if let Some(name) = key.strip_prefix("f:")
                    && let Some(child) = map.get(name)
                {
                    out.insert(name.to_owned(), project(sub, child));
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            for (key, sub) in set {
                if let Some(keys) = key.strip_prefix("k:") {
                    let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(keys) else {
                        continue;
                    };
                    if let Some(item) = items
                        .iter()
                        .find(|item| keys.iter().all(|(k, v)| item.get(k) == Some(v)))
                    {
                        let mut projected = project(sub, item);
                        if let Value::Object(projected) = &mut projected {
                            projected.extend(keys.clone());
                        }
                        out.push(projected);
                    }
                } else if let Some(literal) = key.strip_prefix("v:") {
                    if let Ok(literal) = serde_json::from_str::<Value>(literal)
                        && items.contains(&literal)
                    {
                        out.push(literal);
                    }
                } else if let Some(index) = key.strip_prefix("i:").and_then(|i| i.parse::<usize>().ok())
                    && let Some(item) = items.get(index)
                {
                    out.push(project(sub, item));
                }
            }
            // Keep the live order, so that comparing with a desired list is order-exact.
            // Each item's position is found once: a sort asks for keys O(n log n) times,
            // and each is a deep search of the live list.
            out.sort_by_cached_key(|item| {
                items
                    .iter()
                    .position(|live| contains(live, item))
                    .unwrap_or(usize::MAX)
            });
            Value::Array(out)
        }
        scalar => scalar.clone(),
    }
}

/// Whether `part` is a sub-tree of `whole` (every field of `part` present and equal).
fn contains(whole: &Value, part: &Value) -> bool {
    match (whole, part) {
        (Value::Object(whole), Value::Object(part)) => part
            .iter()
            .all(|(k, v)| whole.get(k).is_some_and(|w| contains(w, v))),
        (whole, part) => whole == part,
    }
}

/// Merges two projections (several Apply entries of one manager, e.g. after a rename).
fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(into), Value::Object(from)) => {
            for (k, v) in from {
                match into.get_mut(&k) {
                    Some(existing) => merge(existing, v),
                    None => {
                        into.insert(k, v);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
    use serde_json::json;

    use super::*;

    fn entry(manager: &str, subresource: Option<&str>, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Apply".into()),
            subresource: subresource.map(Into::into),
            fields_v1: Some(FieldsV1(fields)),
            ..Default::default()
        }
    }

    #[test]
    fn reads_a_set_kept_as_its_json_text_as_the_set_itself() {
        let object = json!({"spec": {"a": 1, "b": {"c": 2, "d": 3}}});
        let fields = json!({"f:spec": {"f:b": {"f:c": {}}}});
        let tree = owned_by(&object, &[entry("me", None, fields.clone())], "me", None);
        let text = owned_by(
            &object,
            &[entry("me", None, Value::String(fields.to_string()))],
            "me",
            None,
        );
        assert_eq!(tree, json!({"spec": {"b": {"c": 2}}}));
        assert_eq!(text, tree);
    }

    #[test]
    fn keeps_only_the_managers_fields_maps_lists_and_sets() {
        let object = json!({
            "metadata": {"name": "a", "labels": {"mine": "1", "theirs": "2"},
                         "finalizers": ["x", "y"],
                         "ownerReferences": [{"uid": "u1", "name": "o", "kind": "K", "apiVersion": "v1"}]},
            "spec": {"a": 1, "b": {"c": 2}, "list": [1, 2]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synchronized", "status": "False", "reason": "R"}]}
        });
        let managed = [
            entry(
                "me",
                None,
                json!({
                    "f:metadata": {"f:labels": {"f:mine": {}}, "f:finalizers": {"v:\"y\"": {}},
                                   "f:ownerReferences": {"k:{\"uid\":\"u1\"}": {".": {}, "f:name": {}}}},
                    "f:spec": {"f:b": {"f:c": {}}, "f:list": {}}
                }),
            ),
            entry(
                "me",
                Some("status"),
                json!({"f:status": {"f:conditions": {"k:{\"type\":\"Synchronized\"}": {"f:reason": {}}}}}),
            ),
            entry("other", None, json!({"f:spec": {"f:a": {}}})),
        ];
        assert_eq!(
            owned_by(&object, &managed, "me", None),
            json!({"metadata": {"labels": {"mine": "1"}, "finalizers": ["y"],
                                "ownerReferences": [{"uid": "u1", "name": "o"}]},
                   "spec": {"b": {"c": 2}, "list": [1, 2]}})
        );
        assert_eq!(
            owned_by(&object, &managed, "me", Some("status")),
            json!({"status": {"conditions": [{"type": "Synchronized", "reason": "R"}]}})
        );
        assert_eq!(owned_by(&object, &managed, "nobody", None), json!({}));
    }
}
