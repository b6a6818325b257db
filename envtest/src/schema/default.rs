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
pub fn needed(value: &Value, schema: &Schema) -> bool {
    if !schema.has_defaults {
        return false;
    }
    match value {
        Value::Object(map) => {
            schema.properties.iter().any(|(name, prop)| {
                prop.default.is_some() && map.get(name).is_none_or(|v| non_nullable_null(v, prop))
            }) || map.iter().any(|(name, v)| match schema.child(name) {
                Some(child) => non_nullable_null(v, child) || needed(v, child),
                None => false,
            })
        }
        Value::Array(items) => schema
            .items
            .as_deref()
            .is_some_and(|s| items.iter().any(|v| non_nullable_null(v, s) || needed(v, s))),
        _ => false,
    }
}
