//! Decoding objects with their managed field sets kept as JSON text.
//!
//! `metadata.managedFields[].fieldsV1` is a tree of many tiny maps, about 40 % of a cached
//! mirror's JSON. Decoded as `serde_json::Value` it costs a B-tree node per map, and the
//! caches keep it as text anyway (`reflect`): a list of 10,000 objects spent more time
//! building and printing those trees than decoding the objects. Here the set's text is
//! cut out of the object's JSON as it is, and the rest decodes plainly; `toolkit::owned`
//! parses a set only when an apply is compared.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry, ObjectMeta, Time};
use kube::Resource;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

/// `text` decoded as `K`, its field sets as their JSON text (`Value::String`).
pub fn object<K: DeserializeOwned + Resource>(text: &str) -> Result<K, serde_json::Error> {
    let outline: ObjectOutline<'_> = serde_json::from_str(text)?;
    let Some(managed) = outline.metadata.and_then(|m| m.managed_fields) else {
        return serde_json::from_str(text);
    };
    let mut object: K = serde_json::from_str(&without(text, managed))?;
    object.meta_mut().managed_fields = entries(managed)?;
    Ok(object)
}

/// A `metadata` object's `text` decoded, its field sets as their JSON text.
pub fn metadata(text: &str) -> Result<ObjectMeta, serde_json::Error> {
    let outline: MetaOutline<'_> = serde_json::from_str(text)?;
    let Some(managed) = outline.managed_fields else {
        return serde_json::from_str(text);
    };
    let mut metadata: ObjectMeta = serde_json::from_str(&without(text, managed))?;
    metadata.managed_fields = entries(managed)?;
    Ok(metadata)
}

#[derive(Deserialize)]
struct ObjectOutline<'a> {
    #[serde(borrow)]
    metadata: Option<MetaOutline<'a>>,
}

#[derive(Deserialize)]
struct MetaOutline<'a> {
    #[serde(borrow, rename = "managedFields")]
    managed_fields: Option<&'a RawValue>,
}

/// One `managedFields` entry, its set borrowed as text.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    api_version: Option<String>,
    fields_type: Option<String>,
    #[serde(borrow, rename = "fieldsV1")]
    fields_v1: Option<&'a RawValue>,
    manager: Option<String>,
    operation: Option<String>,
    subresource: Option<String>,
    time: Option<Time>,
}

/// `text` with the value `part` (a slice of it) replaced by `null`.
fn without(text: &str, part: &RawValue) -> String {
    let start = (part.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let end = start + part.get().len();
    let mut spliced = String::with_capacity(text.len());
    spliced.push_str(&text[..start]);
    spliced.push_str("null");
    spliced.push_str(&text[end..]);
    spliced
}

fn entries(managed: &RawValue) -> Result<Option<Vec<ManagedFieldsEntry>>, serde_json::Error> {
    let entries: Option<Vec<Entry<'_>>> = serde_json::from_str(managed.get())?;
    entries
        .map(|entries| {
            entries
                .into_iter()
                .map(|e| {
                    Ok(ManagedFieldsEntry {
                        api_version: e.api_version,
                        fields_type: e.fields_type,
                        fields_v1: e
                            .fields_v1
                            .map(set_text)
                            .transpose()?
                            .map(|text| FieldsV1(Value::String(text))),
                        manager: e.manager,
                        operation: e.operation,
                        subresource: e.subresource,
                        time: e.time,
                    })
                })
                .collect()
        })
        .transpose()
}

/// A field set's text: the set as sent, or, from JSON this crate wrote (the caches', with
/// the set already kept as text), the string's content.
fn set_text(set: &RawValue) -> Result<String, serde_json::Error> {
    if set.get().starts_with('"') {
        serde_json::from_str(set.get())
    } else {
        Ok(set.get().to_owned())
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    use super::*;

    fn with_sets() -> Value {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "a", "namespace": "ns",
                "labels": {"managedFields": "a label of that name"},
                "managedFields": [
                    {"manager": "me", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                     "time": "2026-12-01T00:00:00Z",
                     "fieldsV1": {"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {".": {}}}}},
                    {"manager": "kubectl", "operation": "Update", "subresource": "status",
                     "fieldsV1": {"f:status": {}}}
                ]
            },
            "data": {"k": "v"}
        })
    }

    #[test]
    fn an_object_decodes_as_usual_but_its_field_sets_as_text() -> Result<(), serde_json::Error> {
        let value = with_sets();
        let text = serde_json::to_string(&value)?;
        let decoded: ConfigMap = object(&text)?;
        let mut plain: ConfigMap = serde_json::from_value(value)?;
        for entry in plain.metadata.managed_fields.iter_mut().flatten() {
            if let Some(fields) = entry.fields_v1.as_mut() {
                fields.0 = Value::String(fields.0.to_string());
            }
        }
        assert_eq!(decoded, plain);
        let sets: Vec<_> = decoded
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|e| e.fields_v1.as_ref())
            .collect();
        assert_eq!(
            sets[0].0,
            Value::String(r#"{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{".":{}}}}"#.into())
        );
        Ok(())
    }

    #[test]
    fn metadata_decodes_the_same_way() -> Result<(), serde_json::Error> {
        let value = with_sets();
        let text = serde_json::to_string(&value["metadata"])?;
        let decoded = metadata(&text)?;
        let expected: ConfigMap = object(&serde_json::to_string(&value)?)?;
        assert_eq!(decoded, expected.metadata);
        Ok(())
    }

    #[test]
    fn objects_without_field_sets_and_bad_input() -> Result<(), serde_json::Error> {
        let plain: ConfigMap = object(r#"{"metadata":{"name":"a","managedFields":null},"data":{"k":"v"}}"#)?;
        assert_eq!(plain.metadata.managed_fields, None);
        let bare: ConfigMap = object(r#"{"data":{"k":"v"}}"#)?;
        assert_eq!(bare.metadata.name, None);
        assert!(object::<ConfigMap>(r#"{"metadata":{"managedFields":[{"manager":5}]}}"#).is_err());
        assert!(object::<ConfigMap>(r#"{"metadata":{"managedFields":{}}}"#).is_err());
        assert!(object::<ConfigMap>("[").is_err());
        Ok(())
    }
}
