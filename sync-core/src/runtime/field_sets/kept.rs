//! Which field sets of `metadata.managedFields` a cache keeps.
//!
//! Update entries' sets can outweigh the rest of the metadata (controller-runtime users
//! strip them with `TransformStripManagedFields` for the same reason), so only the `spec`
//! part of the main resource's update entries is kept: `toolkit::foreign` finds what
//! another writer added to a mirror's spec (on a mirror nobody else writes spec, so such
//! parts are rare). Every entry's manager, subresource and time stay: `toolkit::contest`
//! reads who wrote over the sync last. Apply entries stay whole: `toolkit::apply` compares
//! what a manager owns with what it would apply, so that an unchanged mirror is not
//! written again.
//!
//! A kept set is its JSON text (`toolkit::owned` reads both forms): as a
//! `serde_json::Value` tree each of its many small maps is a B-tree node of ~640 bytes,
//! which made the sets the largest part of a cached mirror. The caches' decoders keep them
//! as text already ([`super::object`]); a set that arrives as a tree is printed here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ObjectMeta};
use serde_json::Value;

/// Trims `meta`'s managed field sets to what a cache keeps.
pub(crate) fn trim(meta: &mut ObjectMeta) {
    for entry in meta.managed_fields.iter_mut().flatten() {
        let Some(fields) = entry.fields_v1.take() else {
            continue;
        };
        entry.fields_v1 = if entry.operation.as_deref() == Some("Apply") {
            Some(as_text(fields))
        } else if entry.subresource.as_deref().is_none_or(str::is_empty) {
            spec_part(fields)
        } else {
            None
        };
    }
}

/// An update set reduced to its `f:spec` part, as text (`None`: it has none).
///
/// Not remembered between objects: a set lists field names, not values, but owner
/// references are keyed by uid (`k:{"uid":...}`), so the sets of a fleet's objects
/// differ (on the bench's fleet a memory of cut parts almost never found one again).
fn spec_part(fields: FieldsV1) -> Option<FieldsV1> {
    let text = match fields.0 {
        Value::String(text) => spec_text(&text)?,
        // Rare: a set that arrived as a tree.
        tree => spec_only(&tree.get("f:spec")?.to_string()),
    };
    Some(FieldsV1(Value::String(text)))
}

/// A set as its JSON text.
fn as_text(fields: FieldsV1) -> FieldsV1 {
    match fields.0 {
        Value::String(_) => fields,
        tree => FieldsV1(Value::String(tree.to_string())),
    }
}

/// The `f:spec` part of a set's text, cut out as it is: the rest is skipped, never built
/// into a tree (at a fleet's first list, building and printing the trees took a fifth of
/// the controllers' CPU). `None`: no such part, or not a set.
fn spec_text(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct SpecPart<'a> {
        #[serde(borrow, rename = "f:spec")]
        spec: Option<&'a serde_json::value::RawValue>,
    }
    let part = serde_json::from_str::<SpecPart<'_>>(text).ok()?;
    Some(spec_only(part.spec?.get()))
}

/// The text of the set holding only `spec`, given as text.
fn spec_only(spec: &str) -> String {
    const OPEN: &str = "{\"f:spec\":";
    let mut text = String::with_capacity(OPEN.len() + spec.len() + 1);
    text.push_str(OPEN);
    text.push_str(spec);
    text.push('}');
    text
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;

    const SET: &str = r#"{"f:metadata":{"f:labels":{"f:a":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{".":{}}}}}"#;
    const SPEC: &str = r#"{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{".":{}}}}}"#;

    fn entry(manager: &str, operation: &str, subresource: Option<&str>, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some(operation.into()),
            subresource: subresource.map(Into::into),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        }
    }

    fn text(set: &str) -> Value {
        Value::String(set.to_owned())
    }

    /// Each entry's (manager, kept set) after trimming `entries`.
    fn trimmed(entries: Vec<ManagedFieldsEntry>) -> Vec<(String, Option<Value>)> {
        let mut meta = ObjectMeta {
            managed_fields: Some(entries),
            ..ObjectMeta::default()
        };
        trim(&mut meta);
        meta.managed_fields
            .unwrap_or_default()
            .into_iter()
            .map(|e| (e.manager.unwrap_or_default(), e.fields_v1.map(|f| f.0)))
            .collect()
    }

    /// Update entries keep only their `f:spec` part of the main resource, as text; apply
    /// entries keep their whole set; a tree is read like text; manager and subresource
    /// stay on every entry.
    #[test]
    fn apply_sets_stay_whole_and_update_sets_keep_their_spec_part() -> Result<(), serde_json::Error> {
        let tree: Value = serde_json::from_str(SET)?;
        let sets = trimmed(vec![
            entry("sync", "Apply", None, text(SET)),
            entry("user", "Update", None, text(SET)),
            entry("tree", "Update", None, tree.clone()),
            entry("status", "Update", Some("status"), text(SET)),
            entry("empty-subresource", "Update", Some(""), text(SET)),
            entry(
                "labels",
                "Update",
                None,
                text(r#"{"f:metadata":{"f:labels":{}}}"#),
            ),
            entry("not-a-set", "Update", None, text("[1,")),
            // Printed: its keys are in the text's (sorted) order already.
            entry("applied-tree", "Apply", None, tree),
        ]);
        let expected = [
            ("sync", Some(text(SET))),
            ("user", Some(text(SPEC))),
            ("tree", Some(text(SPEC))),
            ("status", None),
            ("empty-subresource", Some(text(SPEC))),
            ("labels", None),
            ("not-a-set", None),
            ("applied-tree", Some(text(SET))),
        ]
        .map(|(manager, set)| (manager.to_owned(), set));
        assert_eq!(sets, expected);
        Ok(())
    }
}
