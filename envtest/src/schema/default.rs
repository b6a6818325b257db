//! Structural defaulting, as apiextensions-apiserver's `structuraldefaulting.Default`:
//! a missing property (or a `null` one that is not nullable) takes a deep copy of its
//! `default`, then defaulting recurses into properties, `additionalProperties` and items, so
//! defaults inside defaulted values apply too. Applied on write (request version) and on read
//! from storage (storage version).

use serde_json::Value;

use super::Schema;

fn non_nullable_null(value: &Value, schema: &Schema) -> bool {
    value.is_null() && !schema.nullable && schema.default.is_some()
}

/// Applies the defaults of `schema` to `value`; returns whether anything changed.
pub fn apply(value: &mut Value, schema: &Schema) -> bool {
    if !schema.has_defaults {
        return false;
    }
    let mut changed = false;
    match value {
        Value::Object(map) => {
            for (name, prop) in &schema.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                match map.get_mut(name) {
                    None => {
                        map.insert(name.clone(), default.clone());
                        changed = true;
                    }
                    Some(v) if non_nullable_null(v, prop) => {
                        *v = default.clone();
                        changed = true;
                    }
                    Some(_) => {}
                }
            }
            for (name, v) in map.iter_mut() {
                if let Some(prop) = schema.properties.get(name) {
                    changed |= apply(v, prop);
                } else if let Some(additional) = &schema.additional {
                    if non_nullable_null(v, additional)
                        && let Some(default) = &additional.default
                    {
                        *v = default.clone();
                        changed = true;
                    }
                    changed |= apply(v, additional);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = &schema.items {
                for v in items.iter_mut() {
                    if non_nullable_null(v, item_schema)
                        && let Some(default) = &item_schema.default
                    {
                        *v = default.clone();
                        changed = true;
                    }
                    changed |= apply(v, item_schema);
                }
            }
        }
        _ => {}
    }
    changed
}

/// Whether [`apply`] would change `value` (checked before copying a stored object on read).
/// Runs on every object a list or watch shows, so it walks the schema's defaulted branches
/// rather than every field of the object.
pub fn needed(value: &Value, schema: &Schema) -> bool {
    if !schema.has_defaults {
        return false;
    }
    match value {
        Value::Object(map) => {
            let mut declared = schema.properties.iter().filter(|(_, prop)| prop.has_defaults);
            let by_declared = declared.any(|(name, prop)| match map.get(name) {
                None => prop.default.is_some(),
                Some(v) => non_nullable_null(v, prop) || needed(v, prop),
            });
            by_declared
                || schema
                    .additional
                    .as_deref()
                    .filter(|a| a.has_defaults)
                    .is_some_and(|additional| {
                        map.iter().any(|(name, v)| {
                            !schema.properties.contains_key(name)
                                && (non_nullable_null(v, additional) || needed(v, additional))
                        })
                    })
        }
        Value::Array(items) => schema
            .items
            .as_deref()
            .is_some_and(|s| items.iter().any(|v| non_nullable_null(v, s) || needed(v, s))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::{Origin, compile_node};

    fn schema() -> Schema {
        let origin = Origin {
            crd: "widgets.example.com".into(),
            version: "v1".into(),
        };
        let raw = json!({
            "type": "object",
            "properties": {
                "plain": {"type": "string"},
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "mode": {"type": "string", "nullable": true, "default": "auto"},
                    "ports": {"type": "array", "items": {"type": "object", "properties": {
                        "protocol": {"type": "string", "default": "TCP"},
                    }}},
                    "other": {"type": "object", "properties": {"x": {"type": "string"}}},
                }},
                "labels": {"type": "object", "additionalProperties": {
                    "type": "object", "properties": {"weight": {"type": "integer", "default": 5}},
                }},
            },
        });
        compile_node(&raw, &origin, "openAPIV3Schema")
    }

    /// `needed` answers exactly whether `apply` changes the object, case by case.
    #[test]
    fn needed_is_whether_apply_changes_anything() {
        let schema = schema();
        let full = json!({"replicas": 2, "mode": null, "ports": [{"protocol": "UDP"}], "other": {}});
        let cases = [
            (json!({"plain": "a"}), false),
            (json!({"spec": full}), false),
            (json!({"spec": {"mode": "x", "other": {"x": "y"}}}), true),
            (json!({"spec": {"replicas": null, "mode": "x"}}), true),
            (
                json!({"spec": {"replicas": 3, "mode": "x", "ports": [{"protocol": "UDP"}, {}]}}),
                true,
            ),
            (
                json!({"spec": {"replicas": 3, "mode": "x", "ports": [null]}}),
                false,
            ),
            (json!({"labels": {"a": {"weight": 1}, "b": {"weight": 2}}}), false),
            (json!({"labels": {"a": {"weight": 1}, "b": {}}}), true),
            (json!({"labels": {"a": {"weight": null}}}), true),
            (json!({"spec": "not an object"}), false),
        ];
        for (object, expected) in cases {
            let mut copy = object.clone();
            let changed = apply(&mut copy, &schema);
            assert_eq!(needed(&object, &schema), expected, "needed for {object}");
            assert_eq!(changed, expected, "apply for {object} gave {copy}");
        }
    }
}
