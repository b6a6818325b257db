//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds,
//! as apimachinery's `strategicpatch` applies it: maps merge, `null` deletes, lists are
//! replaced unless their field has `x-kubernetes-patch-strategy: merge` (then scalar
//! lists are unions and lists of objects merge item by item on
//! `x-kubernetes-patch-merge-key`), with the directives `$patch: replace|delete`,
//! `$retainKeys`, `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>`.
//!
//! The patch metadata comes from the built-in definitions of [`crate::resources::definitions`] (the
//! extensions kube-apiserver publishes for the kinds served here).
//!
//! `$patch: merge` is refused in maps (`unknown patch type: merge in map`) and lists
//! (`merging lists cannot yet be specified in the patch`), as upstream.
//!
//! Differences from apimachinery: merged lists keep the original order with new items
//! appended (upstream interleaves by the patch's order); the `retainKeys` strategy is
//! honoured only through the `$retainKeys` directive.

use serde_json::{Map, Value};

use crate::meta::errors::{ApiError, ApiResult};
use crate::patch::apply::typed::Ty;
use crate::resources::definitions;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

fn bad(message: impl Into<String>) -> ApiError {
    ApiError::bad_request(message.into())
}

/// Applies a strategic merge patch to a built-in object (its type is found from the
/// object's `apiVersion` and `kind`).
pub fn apply(original: &Value, patch: &Value) -> ApiResult<Value> {
    let defs = definitions::builtin_definitions();
    let definition = definitions::builtin_definition_of(
        original["apiVersion"].as_str().unwrap_or_default(),
        original["kind"].as_str().unwrap_or_default(),
    );
    let ty = Ty::object(definition.and_then(|d| defs.get(d)), defs);
    let (Value::Object(original), Value::Object(patch)) = (original, patch) else {
        return Err(bad("error decoding patch: patch must be a JSON object"));
    };
    Ok(Value::Object(merge_map(original.clone(), patch.clone(), ty)?))
}

/// Removes every directive (for values taken from the patch as they are).
fn strip(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k, strip(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .filter(|i| i.get(DIRECTIVE).is_none())
                .map(strip)
                .collect(),
        ),
        other => other,
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    ty: Ty<'_>,
) -> ApiResult<Map<String, Value>> {
    if let Some(directive) = patch.remove(DIRECTIVE) {
        match directive.as_str() {
            Some("replace") => {
                return match strip(Value::Object(patch)) {
                    Value::Object(map) => Ok(map),
                    _ => Ok(Map::new()),
                };
            }
            Some("delete") => return Ok(Map::new()),
            _ => {
                return Err(bad(format!(
                    "unknown patch type: {} in map: {}",
                    directive.as_str().unwrap_or_default(),
                    Value::Object(patch)
                )));
            }
        }
    }
    if let Some(keys) = patch.remove(RETAIN_KEYS) {
        let keys = keys
            .as_array()
            .ok_or_else(|| bad("invalid patch: $retainKeys must be a list of field names"))?;
        let keep: Vec<&str> = keys.iter().filter_map(Value::as_str).collect();
        for (k, v) in &patch {
            if v.is_null() || k.starts_with(DELETE_FROM_PRIMITIVE_LIST) || k.starts_with(SET_ELEMENT_ORDER) {
                continue;
            }
            if !keep.contains(&k.as_str()) {
                return Err(bad(
                    "doesn't satisfy strategic merge patch format: all fields in the patch must be present in $retainKeys",
                ));
            }
        }
        original.retain(|k, _| keep.contains(&k.as_str()));
    }
    // Orders and deletions of primitive lists apply after the lists are merged.
    let mut orders = Vec::new();
    let mut deletions = Vec::new();
    let keys: Vec<String> = patch.keys().cloned().collect();
    for key in keys {
        if let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) {
            if let Some(order) = patch.remove(&key) {
                orders.push((field.to_string(), order));
            }
        } else if let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST)
            && let Some(values) = patch.remove(&key)
        {
            deletions.push((field.to_string(), values));
        }
    }
    for (key, value) in patch {
        if value.is_null() {
            original.remove(&key);
            continue;
        }
        let child = ty.child(&key);
        let merged = match (original.remove(&key), value) {
            (Some(Value::Object(o)), Value::Object(p)) => {
                if child.patch_strategies().contains(&"replace") {
                    strip(Value::Object(p))
                } else {
                    Value::Object(merge_map(o, p, child)?)
                }
            }
            (Some(Value::Array(o)), Value::Array(p)) => {
                if child.patch_strategies().contains(&"merge") {
                    Value::Array(merge_list(o, p, child)?)
                } else {
                    Value::Array(replace_list(p)?)
                }
            }
            (_, Value::Array(p)) => Value::Array(replace_list(p)?),
            (_, Value::Object(p)) => {
                if p.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                    continue;
                }
                // New maps are merged into nothing, so their directives are processed.
                Value::Object(merge_map(Map::new(), p, child)?)
            }
            (_, other) => other,
        };
        original.insert(key, merged);
    }
    for (field, values) in deletions {
        let values = values.as_array().ok_or_else(|| {
            bad(format!(
                "invalid patch: {DELETE_FROM_PRIMITIVE_LIST}{field} must be a list"
            ))
        })?;
        if let Some(Value::Array(items)) = original.get_mut(&field) {
            items.retain(|i| !values.contains(i));
        }
    }
    for (field, order) in orders {
        let order = order.as_array().ok_or_else(|| {
            bad(format!(
                "invalid patch: {SET_ELEMENT_ORDER}{field} must be a list"
            ))
        })?;
        let key = ty.child(&field).patch_merge_key().map(String::from);
        if let Some(Value::Array(items)) = original.get_mut(&field) {
            reorder(items, order, key.as_deref());
        }
    }
    Ok(original)
}

/// A replaced list: directive items are not allowed there (`$patch: replace` items are
/// dropped, as the list is replaced anyway).
fn replace_list(patch: Vec<Value>) -> ApiResult<Vec<Value>> {
    Ok(patch
        .into_iter()
        .filter(|i| i.get(DIRECTIVE).and_then(Value::as_str) != Some("replace"))
        .map(strip)
        .collect())
}

fn merge_list(original: Vec<Value>, patch: Vec<Value>, ty: Ty<'_>) -> ApiResult<Vec<Value>> {
    let scalars = patch
        .iter()
        .chain(original.iter())
        .all(|v| !v.is_object() && !v.is_array());
    if scalars {
        let mut out = original;
        for item in patch {
            if !out.contains(&item) {
                out.push(item);
            }
        }
        return Ok(out);
    }
    let Some(key) = ty.patch_merge_key() else {
        return Err(bad("cannot merge lists without merge key"));
    };
    let mut out = original;
    let mut rest = Vec::new();
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE).and_then(Value::as_str) {
            Some("delete") => {
                let wanted = item
                    .get(key)
                    .ok_or_else(|| bad(format!("map: {item} does not contain declared merge key: {key}")))?;
                out.retain(|o| o.get(key) != Some(wanted));
            }
            Some("replace") => replace = true,
            Some("merge") => return Err(bad("merging lists cannot yet be specified in the patch")),
            Some(other) => return Err(bad(format!("Unknown patch type: {other} in map: {item}"))),
            None => rest.push(item),
        }
    }
    if replace {
        return Ok(rest.into_iter().map(strip).collect());
    }
    let item_ty = ty.items();
    for item in rest {
        let Value::Object(patch_item) = item else {
            return Err(bad(format!(
                "merging an object in json but data type is not map: {item}"
            )));
        };
        let wanted = patch_item.get(key).cloned().ok_or_else(|| {
            bad(format!(
                "map: {} does not contain declared merge key: {key}",
                Value::Object(patch_item.clone())
            ))
        })?;
        match out.iter_mut().find(|o| o.get(key) == Some(&wanted)) {
            Some(Value::Object(existing)) => {
                let merged = merge_map(std::mem::take(existing), patch_item, item_ty)?;
                *existing = merged;
            }
            _ => out.push(Value::Object(merge_map(Map::new(), patch_item, item_ty)?)),
        }
    }
    Ok(out)
}

/// Puts the items named in `order` first, in that order; the others keep their order after.
fn reorder(items: &mut [Value], order: &[Value], key: Option<&str>) {
    let id = |v: &Value| -> Value {
        match key {
            Some(k) => v.get(k).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let position = |v: &Value| order.iter().position(|o| id(o) == id(v)).unwrap_or(usize::MAX);
    items.sort_by_key(position);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(original: Value, patch: Value) -> Value {
        match apply(&original, &patch) {
            Ok(v) => v,
            Err(e) => panic!("patch failed: {e}"),
        }
    }

    #[test]
    fn owner_references_merge_on_uid_and_finalizers_are_a_set() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "a",
            "finalizers": ["a", "b"],
            "ownerReferences": [{"uid": "1", "name": "x", "kind": "K", "apiVersion": "v1"}],
        }, "data": {"k": "v", "gone": "x"}});
        let out = patched(
            cm.clone(),
            json!({"metadata": {
            "finalizers": ["c"],
            "$deleteFromPrimitiveList/finalizers": ["a"],
            "ownerReferences": [{"uid": "2", "name": "y", "kind": "K", "apiVersion": "v1"}, {"uid": "1", "name": "x2"}],
        }, "data": {"gone": null}}),
        );
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "c"]));
        assert_eq!(out["metadata"]["ownerReferences"][0]["name"], "x2");
        assert_eq!(out["metadata"]["ownerReferences"][1]["uid"], "2");
        assert_eq!(out["data"], json!({"k": "v"}));
        let out = patched(
            cm.clone(),
            json!({"metadata": {"ownerReferences": [{"uid": "1", "$patch": "delete"}]}}),
        );
        assert_eq!(out["metadata"]["ownerReferences"], json!([]));
        let out = patched(cm, json!({"data": {"$patch": "replace", "new": "1"}}));
        assert_eq!(out["data"], json!({"new": "1"}));
    }

    #[test]
    fn rbac_rules_are_replaced() {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        let out = patched(
            role,
            json!({"rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]}),
        );
        assert_eq!(out["rules"].as_array().map(Vec::len), Some(1));
        assert_eq!(out["rules"][0]["resources"], json!(["secrets"]));
    }
}
