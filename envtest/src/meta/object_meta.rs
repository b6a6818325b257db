//! `ObjectMeta` validation on every create and update, whatever the kind, as
//! apimachinery's `ValidateObjectMetaAccessor` does it: label keys and values, annotation
//! keys and their total size, owner references, finalizer names; and the warning
//! kube-apiserver adds for finalizers that are not domain-qualified.
//!
//! Field paths and messages are kube's: label, annotation and finalizer errors name the
//! map or list (`metadata.labels`) with the offending key as the value; owner reference
//! errors name the field without an index (`metadata.ownerReferences.uid`).

use serde_json::Value;

use super::errors::{Cause, invalid_value};
use super::labels::{label_value_errors, qualified_name_errors};

/// kube-apiserver's limit on the total size of an object's annotation keys and values.
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;

/// Finalizers kube's own controllers use without a domain.
const STANDARD_FINALIZERS: [&str; 3] = ["kubernetes", "orphan", "foregroundDeletion"];

fn strings(map: Option<&Value>) -> impl Iterator<Item = (&String, &str)> {
    map.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
}

/// The causes of a 422 for `metadata`, in kube's order (labels, annotations, owner
/// references, finalizers); keys in sorted order (kube's map order varies per request).
pub fn validate(metadata: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (key, value) in strings(metadata.get("labels")) {
        for message in qualified_name_errors(key) {
            causes.push(invalid_value("metadata.labels", key, &message));
        }
        for message in label_value_errors(value) {
            causes.push(invalid_value("metadata.labels", value, &message));
        }
    }
    let mut size = 0;
    for (key, value) in strings(metadata.get("annotations")) {
        // Annotation keys are qualified names whatever their case.
        for message in qualified_name_errors(&key.to_lowercase()) {
            causes.push(invalid_value("metadata.annotations", key, &message));
        }
        size += key.len() + value.len();
    }
    if size > ANNOTATIONS_LIMIT {
        causes.push(Cause {
            reason: "FieldValueTooLong".into(),
            message: format!("Too long: must have at most {ANNOTATIONS_LIMIT} bytes"),
            field: "metadata.annotations".into(),
        });
    }
    causes.extend(owner_references(metadata.get("ownerReferences")));
    for finalizer in finalizers(metadata) {
        for message in qualified_name_errors(finalizer) {
            causes.push(invalid_value("metadata.finalizers", finalizer, &message));
        }
    }
    causes
}

fn finalizers(metadata: &Value) -> impl Iterator<Item = &str> {
    metadata
        .get("finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The warnings kube-apiserver adds for `metadata`: a finalizer without a domain and path,
/// on create, or on update when `old` (the stored object's metadata) does not have it yet,
/// so a writer is told once, when it adds the finalizer.
pub fn warnings(metadata: &Value, old: Option<&Value>) -> Vec<String> {
    let kept: Vec<&str> = old.map(|old| finalizers(old).collect()).unwrap_or_default();
    finalizers(metadata)
        .filter(|f| !f.contains('/') && !STANDARD_FINALIZERS.contains(f) && !kept.contains(f))
        .map(|f| {
            format!(
                "metadata.finalizers: {f:?}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers"
            )
        })
        .collect()
}

fn field<'a>(reference: &'a Value, name: &str) -> &'a str {
    reference.get(name).and_then(Value::as_str).unwrap_or_default()
}

/// The version part of an `apiVersion` as `schema.ParseGroupVersion` reads it (empty when
/// it does not parse).
fn version_of(api_version: &str) -> &str {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [version] => version,
        [_, version] => version,
        _ => "",
    }
}

fn owner_references(references: Option<&Value>) -> Vec<Cause> {
    const PATH: &str = "metadata.ownerReferences";
    let references = references
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut causes = Vec::new();
    let mut first_controller: Option<String> = None;
    for reference in references {
        let api_version = field(reference, "apiVersion");
        if version_of(api_version).is_empty() {
            causes.push(invalid_value(
                &format!("{PATH}.apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        for (name, detail) in [
            ("kind", "must not be empty"),
            ("name", "must not be empty"),
            ("uid", "must not be empty"),
        ] {
            let value = field(reference, name);
            if value.is_empty() {
                causes.push(invalid_value(&format!("{PATH}.{name}"), value, detail));
            }
        }
        if api_version == "v1" && field(reference, "kind") == "Event" {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: {}: /v1, Kind=Event is disallowed from being an owner",
                    go_string(reference)
                ),
                field: PATH.into(),
            });
        }
        if reference.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{}/{}", field(reference, "kind"), field(reference, "name"));
            match &first_controller {
                Some(first) => causes.push(Cause {
                    reason: "FieldValueInvalid".into(),
                    message: format!(
                        "Invalid value: {}: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}",
                        go_dump(references)
                    ),
                    field: PATH.into(),
                }),
                None => first_controller = Some(current),
            }
        }
    }
    causes
}

fn go_bool_pointer(reference: &Value, name: &str) -> String {
    match reference.get(name).and_then(Value::as_bool) {
        // Go prints the pointer's address, which differs on every request.
        Some(_) => "(*bool)(0xc000000000)".to_string(),
        None => "(*bool)(nil)".to_string(),
    }
}

/// `%#v` of a `[]metav1.OwnerReference`, as apimachinery prints the list as the bad value.
fn go_dump(references: &[Value]) -> String {
    let items: Vec<String> = references
        .iter()
        .map(|r| {
            format!(
                "v1.OwnerReference{{APIVersion:{:?}, Kind:{:?}, Name:{:?}, UID:{:?}, Controller:{}, BlockOwnerDeletion:{}}}",
                field(r, "apiVersion"),
                field(r, "kind"),
                field(r, "name"),
                field(r, "uid"),
                go_bool_pointer(r, "controller"),
                go_bool_pointer(r, "blockOwnerDeletion"),
            )
        })
        .collect();
    format!("[]v1.OwnerReference{{{}}}", items.join(", "))
}

/// The protobuf-generated `String()` of one `metav1.OwnerReference`.
fn go_string(reference: &Value) -> String {
    let pointer = |name: &str| match reference.get(name).and_then(Value::as_bool) {
        Some(b) => b.to_string(),
        None => "nil".to_string(),
    };
    format!(
        "&OwnerReference{{APIVersion:{},Kind:{},Name:{},UID:{},Controller:{},BlockOwnerDeletion:{},}}",
        field(reference, "apiVersion"),
        field(reference, "kind"),
        field(reference, "name"),
        field(reference, "uid"),
        pointer("controller"),
        pointer("blockOwnerDeletion"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(causes: &[Cause]) -> Vec<(&str, &str)> {
        causes
            .iter()
            .map(|c| (c.field.as_str(), c.message.as_str()))
            .collect()
    }

    #[test]
    fn valid_metadata_passes() {
        let meta = json!({
            "labels": {"example.com/a": "B_c.1", "x": ""},
            "annotations": {"Example.com/Upper": "anything at all"},
            "finalizers": ["example.com/f", "kubernetes"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "a", "uid": "1", "controller": true}],
        });
        assert!(validate(&meta).is_empty());
        assert!(warnings(&meta, None).is_empty());
    }

    #[test]
    fn owner_references_as_kube_checks_them() {
        let meta = json!({"ownerReferences": [
            {"apiVersion": "a/b/c", "kind": "", "name": "n", "controller": true},
            {"apiVersion": "apps/v1", "kind": "K", "name": "m", "uid": "2", "controller": true},
        ]});
        let causes = validate(&meta);
        let got = fields(&causes);
        assert_eq!(
            got[0],
            (
                "metadata.ownerReferences.apiVersion",
                "Invalid value: \"a/b/c\": version must not be empty"
            )
        );
        assert_eq!(
            got[1],
            (
                "metadata.ownerReferences.kind",
                "Invalid value: \"\": must not be empty"
            )
        );
        assert_eq!(
            got[2],
            (
                "metadata.ownerReferences.uid",
                "Invalid value: \"\": must not be empty"
            )
        );
        assert!(got[3].1.ends_with("Only one reference can have Controller set to true. Found \"true\" in references for /n and K/m"), "{}", got[3].1);
        assert_eq!(got.len(), 4);
    }

    #[test]
    fn annotations_size_and_finalizer_warnings() {
        let meta =
            json!({"annotations": {"a": "x".repeat(ANNOTATIONS_LIMIT)}, "finalizers": ["plain", "orphan"]});
        assert_eq!(
            fields(&validate(&meta)),
            vec![("metadata.annotations", "Too long: must have at most 262144 bytes")]
        );
        let plain = "metadata.finalizers: \"plain\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers";
        assert_eq!(warnings(&meta, None), vec![plain]);
        let before = json!({"finalizers": ["plain"]});
        assert_eq!(
            warnings(&meta, Some(&before)),
            Vec::<String>::new(),
            "kept: no warning"
        );
        let other = json!({"finalizers": ["other"]});
        assert_eq!(warnings(&meta, Some(&other)), vec![plain], "added by this update");
    }
}
