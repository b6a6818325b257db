//! Pruning of unknown fields, as apiextensions-apiserver's `structuralpruning` plus the
//! ObjectMeta coercion: every field the schema does not specify is dropped (unless
//! `x-kubernetes-preserve-unknown-fields`), and its path is returned for `fieldValidation`
//! (`spec.items[0].foo`). `null`s of non-nullable fields without a default are dropped too
//! (`PruneNonNullableNullsWithoutDefaults`), before defaulting.

use serde_json::{Map, Value};

use super::Schema;

/// The fields of `metav1.ObjectMeta`.
pub const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

struct Pruner {
    path: Vec<String>,
    unknown: Vec<String>,
}

impl Pruner {
    fn record(&mut self, key: &str) {
        let mut p = self.path.concat();
        if !p.is_empty() {
            p.push('.');
        }
        p.push_str(key);
        self.unknown.push(p);
    }

    fn enter(&mut self, key: &str) {
        if self.path.is_empty() {
            self.path.push(key.to_string());
        } else {
            self.path.push(format!(".{key}"));
        }
    }

    fn metadata(&mut self, meta: &mut Value) {
        let Value::Object(map) = meta else {
            return;
        };
        self.enter("metadata");
        let unknown: Vec<String> = map
            .keys()
            .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in unknown {
            map.remove(&key);
            self.record(&key);
        }
        self.path.pop();
    }

    fn node(&mut self, value: &mut Value, schema: &Schema) {
        match value {
            Value::Object(map) => self.object(map, schema, schema.embedded),
            Value::Array(items) => {
                if let Some(item_schema) = &schema.items {
                    for (i, item) in items.iter_mut().enumerate() {
                        self.path.push(format!("[{i}]"));
                        self.node(item, item_schema);
                        self.path.pop();
                    }
                }
            }
            _ => {}
        }
    }

    fn object(&mut self, map: &mut Map<String, Value>, schema: &Schema, resource: bool) {
        let mut remove = Vec::new();
        for (key, child) in map.iter_mut() {
            if resource && matches!(key.as_str(), "apiVersion" | "kind") {
                continue;
            }
            if resource && key == "metadata" {
                self.metadata(child);
                continue;
            }
            let child_schema = schema.properties.get(key).or(schema.additional.as_deref());
            match child_schema {
                Some(s) => {
                    if child.is_null() && !s.nullable && s.default.is_none() {
                        remove.push((key.clone(), false));
                        continue;
                    }
                    self.enter(key);
                    self.node(child, s);
                    self.path.pop();
                }
                None if schema.preserve_unknown => {}
                None => {
                    self.record(key);
                    remove.push((key.clone(), true));
                }
            }
        }
        for (key, _) in remove {
            map.remove(&key);
        }
    }
}

/// Prunes a whole object (`apiVersion`, `kind` and `metadata` are always known); returns the
/// paths of the unknown fields that were dropped, in the object's field order.
pub fn prune(object: &mut Value, root: &Schema) -> Vec<String> {
    let mut pruner = Pruner {
        path: Vec::new(),
        unknown: Vec::new(),
    };
    if let Value::Object(map) = object {
        pruner.object(map, root, true);
    }
    pruner.unknown
}
