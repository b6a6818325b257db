//! Decoding objects with their managed field sets kept as JSON text.
//!
//! `metadata.managedFields[].fieldsV1` is a tree of many tiny maps, about 40 % of a cached
//! mirror's JSON. Decoded as `serde_json::Value` it costs a B-tree node per map, and the
//! caches keep it as text anyway (`reflect`): a list of 10,000 objects spent more time
//! building and printing those trees than decoding the objects. Here each set's text is
//! captured as it is while the rest decodes plainly, in the same pass ([`text`]);
//! `toolkit::owned` parses a set only when an apply is compared. Which sets a cache keeps,
//! and of which only a part, is [`kept`]'s.

mod kept;
mod text;

use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{DeserializeOwned, DeserializeSeed, Deserializer};

pub(crate) use kept::trim;
use text::SetsAsText;

/// `text` decoded as `K`, its field sets as their JSON text (`Value::String`).
pub fn object<K: DeserializeOwned>(text: &str) -> Result<K, serde_json::Error> {
    let mut decoder = serde_json::Deserializer::from_str(text);
    let object = SetsAsTextSeed::<K>::default().deserialize(&mut decoder)?;
    decoder.end()?;
    Ok(object)
}

/// Decodes a `K` in the middle of a JSON document (a map's value, `next_value_seed`) the
/// way [`object`] decodes a whole one, in the same pass as the document.
pub struct SetsAsTextSeed<K>(PhantomData<K>);

impl<K> Default for SetsAsTextSeed<K> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<'de, K: Deserialize<'de>> DeserializeSeed<'de> for SetsAsTextSeed<K> {
    type Value = K;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K, D::Error> {
        K::deserialize(SetsAsText(deserializer))
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use serde_json::{Value, json};

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

    /// `meta`'s field sets printed as text, as the decoding keeps them.
    fn sets_printed(meta: &mut ObjectMeta) {
        for entry in meta.managed_fields.iter_mut().flatten() {
            if let Some(fields) = entry.fields_v1.as_mut() {
                fields.0 = Value::String(fields.0.to_string());
            }
        }
    }

    #[test]
    fn an_object_decodes_as_usual_but_its_field_sets_as_text() -> Result<(), serde_json::Error> {
        let value = with_sets();
        let text = serde_json::to_string(&value)?;
        let decoded: ConfigMap = object(&text)?;
        let mut plain: ConfigMap = serde_json::from_value(value)?;
        sets_printed(&mut plain.metadata);
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
        let decoded: ObjectMeta = object(&text)?;
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
        assert!(
            object::<ConfigMap>(r#"{"data":{}} {"#).is_err(),
            "text after the object"
        );
        assert!(object::<ConfigMap>(r#"{"metadata":{"managedFields":[{"fieldsV1":{"f:a":}}]}}"#).is_err());
        Ok(())
    }

    /// A set that the caches wrote as a string decodes to its content, not to a quoted
    /// string; decoding again what was printed gives the same object.
    #[test]
    fn a_set_kept_as_text_reads_back_as_the_same_text() -> Result<(), serde_json::Error> {
        let decoded: ConfigMap = object(&serde_json::to_string(&with_sets())?)?;
        let printed = serde_json::to_string(&decoded)?;
        assert!(printed.contains(r#""fieldsV1":"{\"f:status\":{}}""#), "{printed}");
        assert_eq!(object::<ConfigMap>(&printed)?, decoded);
        Ok(())
    }

    /// Everything but the sets decodes exactly as a plain decoding has it, through every
    /// shape a kind uses: a flattened status block, an object kept as text, options, lists
    /// and maps.
    #[test]
    fn a_machine_decodes_as_a_plain_decoding_does() -> Result<(), serde_json::Error> {
        use crate::api::mapi;
        let mut value = json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "spec": {"providerSpec": {"value": {"kind": "AWSMachineProviderConfig", "tags": [{"name": "a", "value": "b"}]}},
                     "taints": [{"key": "k", "effect": "NoSchedule"}]},
            "status": {"phase": "Running", "authoritativeAPI": "ClusterAPI", "synchronizedGeneration": 3,
                       "providerStatus": {"instanceId": "i-1"},
                       "conditions": [{"type": "Synchronized", "status": "True", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}
        });
        value["metadata"] = with_sets()["metadata"].clone();
        let decoded: mapi::Machine = object(&serde_json::to_string(&value)?)?;
        let mut plain: mapi::Machine = serde_json::from_value(value)?;
        sets_printed(&mut plain.metadata);
        assert_eq!(decoded, plain);
        Ok(())
    }

    /// The adapter reaches a set through every shape serde has: enum variants of each
    /// kind, tuples, boxes and options.
    #[test]
    fn a_set_is_text_wherever_it_is() -> Result<(), serde_json::Error> {
        #[derive(serde::Deserialize)]
        enum Shape {
            Newtype(ObjectMeta),
            Tuple(u8, ObjectMeta),
            Struct { meta: ObjectMeta },
            Unit,
        }
        #[derive(serde::Deserialize)]
        struct Holder {
            shapes: Vec<Shape>,
            pair: (ObjectMeta, bool),
            boxed: Option<Box<ObjectMeta>>,
        }
        let meta = r#"{"managedFields":[{"manager":"m","fieldsV1":{"f:a":{}}}]}"#;
        let text = format!(
            r#"{{"shapes":[{{"Newtype":{meta}}},{{"Tuple":[1,{meta}]}},{{"Struct":{{"meta":{meta}}}}},"Unit"],
                "pair":[{meta},true],"boxed":{meta}}}"#
        );
        let holder: Holder = object(&text)?;
        let mut metas = Vec::new();
        for shape in &holder.shapes {
            match shape {
                Shape::Newtype(meta) | Shape::Tuple(1, meta) | Shape::Struct { meta } => metas.push(meta),
                Shape::Tuple(..) | Shape::Unit => {}
            }
        }
        assert!(matches!(holder.shapes.last(), Some(Shape::Unit)));
        assert!(holder.pair.1);
        metas.push(&holder.pair.0);
        metas.extend(holder.boxed.as_deref());
        let sets: Vec<_> = metas
            .iter()
            .flat_map(|meta| meta.managed_fields.iter().flatten())
            .map(|entry| entry.fields_v1.as_ref().map(|set| set.0.clone()))
            .collect();
        assert_eq!(sets, vec![Some(Value::String(r#"{"f:a":{}}"#.into())); 5]);
        Ok(())
    }
}
