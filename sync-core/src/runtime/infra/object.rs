//! The infrastructure caches' form of an object: its metadata decoded (what the event
//! mapping and the decision read), everything else kept as compact JSON text and decoded
//! when a hook reads it.
//!
//! An infrastructure kind's schema is not known at compile time, so a whole object would
//! be a `serde_json::Value` tree, where every map is a B-tree node of ~600 bytes however
//! few its entries: an AWSMachine took ~17 KB of heap that way against ~2 KB as text. A
//! hook reads its pair's object once or twice per reconcile; decoding it then costs a few
//! microseconds. The text is cut from the API server's JSON as it arrives (never built
//! as a tree first), and the metadata's field sets are kept as text in the same pass
//! (`field_sets`).

use std::borrow::Cow;
use std::fmt;

use kube::Resource;
use kube::api::{DynamicObject, ObjectMeta, TypeMeta};
use kube::core::{ApiResource, DynamicResourceScope};
use serde::de::{Deserializer, Error as _, MapAccess, Visitor};
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::api::json_text::JsonText;
use crate::runtime::field_sets::SetsAsTextSeed;

/// A cached infrastructure object: metadata, and the rest of the object as JSON text
/// (none when only metadata is cached, [`super::InfraCache::Metadata`]).
#[derive(Clone, Debug, PartialEq)]
pub struct InfraObject {
    /// `apiVersion` and `kind`.
    pub types: Option<TypeMeta>,
    /// The object's metadata.
    pub metadata: ObjectMeta,
    body: Option<Box<str>>,
}

impl InfraObject {
    /// Metadata only.
    pub fn metadata_only(types: Option<TypeMeta>, metadata: ObjectMeta) -> Self {
        Self {
            types,
            metadata,
            body: None,
        }
    }

    /// Whether the whole object is cached (not only its metadata).
    pub fn is_whole(&self) -> bool {
        self.body.is_some()
    }

    /// The whole object, decoded (`data` is `null` when only metadata is cached).
    pub fn to_dynamic(&self) -> DynamicObject {
        let data = self
            .body
            .as_deref()
            .map(|body| {
                // The text was cut from valid JSON (or printed from a `Value`): it parses.
                serde_json::from_str(body).unwrap_or(serde_json::Value::Null)
            })
            .unwrap_or_default();
        DynamicObject {
            types: self.types.clone(),
            metadata: self.metadata.clone(),
            data,
        }
    }
}

/// Decodes a whole object: `apiVersion`, `kind` and `metadata` decoded, every other
/// top-level field kept as its JSON text. From a binary format, what `serialize` wrote
/// there (`Binary`).
impl<'de> Deserialize<'de> for InfraObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if !deserializer.is_human_readable() {
            let Binary {
                types,
                metadata,
                body,
            } = Binary::deserialize(deserializer)?;
            return Ok(Self {
                types,
                metadata,
                body,
            });
        }
        deserializer.deserialize_map(ObjectVisitor { whole: true })
    }
}

/// An object's form in a binary format (the caches' MessagePack, `runtime::store`): its
/// parts as they are held, the body as one string, so that a cache write and read copy
/// the body rather than split it into fields and join them again.
#[derive(Deserialize, Serialize)]
struct Binary<T, M, B> {
    types: T,
    metadata: M,
    body: B,
}

/// An object decoded for a metadata cache ([`super::InfraCache::Metadata`]): `apiVersion`,
/// `kind` and `metadata` as [`InfraObject`] decodes them (field sets as text), every other
/// field skipped unread. kube's `PartialObjectMeta` would build each field set as a tree.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct InfraMetadata(pub(crate) InfraObject);

impl<'de> Deserialize<'de> for InfraMetadata {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_map(ObjectVisitor { whole: false })
            .map(Self)
    }
}

/// Decodes an object's map; `whole`: keep the fields other than the metadata as text.
struct ObjectVisitor {
    whole: bool,
}

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = InfraObject;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<InfraObject, A::Error> {
        let (mut api_version, mut kind, mut metadata) = (None, None, None);
        let mut body = self.whole.then(|| String::from("{"));
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "apiVersion" => api_version = map.next_value::<Option<String>>()?,
                "kind" => kind = map.next_value::<Option<String>>()?,
                "metadata" => {
                    metadata = Some(map.next_value_seed(SetsAsTextSeed::<ObjectMeta>::default())?);
                }
                _ => match body.as_mut() {
                    Some(body) => {
                        let raw = map.next_value_seed(JsonText)?;
                        if body.len() > 1 {
                            body.push(',');
                        }
                        body.push_str(&serde_json::to_string(&key).map_err(A::Error::custom)?);
                        body.push(':');
                        body.push_str(&raw);
                    }
                    None => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                },
            }
        }
        let types = api_version
            .zip(kind)
            .map(|(api_version, kind)| TypeMeta { api_version, kind });
        Ok(InfraObject {
            types,
            metadata: metadata.unwrap_or_default(),
            body: body.map(|mut body| {
                body.push('}');
                body.into_boxed_str()
            }),
        })
    }
}

/// The object as the API server sends it, for a client that writes one back; the body's
/// fields are written as their text, never decoded. In a binary format (the caches',
/// `crate::runtime::store`), its `Binary` form.
impl Serialize for InfraObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if !serializer.is_human_readable() {
            let binary = Binary {
                types: &self.types,
                metadata: &self.metadata,
                body: self.body.as_deref(),
            };
            return binary.serialize(serializer);
        }
        let body: Vec<(String, &RawValue)> = match self.body.as_deref() {
            Some(body) => {
                serde_json::from_str::<BodyFields<'_>>(body)
                    .map_err(S::Error::custom)?
                    .0
            }
            None => Vec::new(),
        };
        let mut map = serializer.serialize_map(None)?;
        if let Some(types) = &self.types {
            map.serialize_entry("apiVersion", &types.api_version)?;
            map.serialize_entry("kind", &types.kind)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (key, value) in body {
            map.serialize_entry(&key, value)?;
        }
        map.end()
    }
}

/// A body's top-level fields, in order, their values borrowed as text.
struct BodyFields<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for BodyFields<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Fields<'a> {
            type Value = BodyFields<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object's fields")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<BodyFields<'a>, A::Error> {
                let mut fields = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    fields.push(entry);
                }
                Ok(BodyFields(fields))
            }
        }
        deserializer.deserialize_map(Fields(std::marker::PhantomData))
    }
}

impl Resource for InfraObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// The same resource as [`InfraObject`]: a watch of it reads the kind's objects.
impl Resource for InfraMetadata {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        InfraObject::group(dt)
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        InfraObject::version(dt)
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        InfraObject::kind(dt)
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        InfraObject::api_version(dt)
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        InfraObject::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_decoded_object_is_the_same_object() -> Result<(), serde_json::Error> {
        let value = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AWSMachine",
            "metadata": {"name": "m-1", "namespace": "capi", "labels": {"a": "b"}},
            "spec": {"instanceType": "m6i.xlarge", "subnet": {"filters": [{"name": "tag:Name", "values": ["x"]}]}},
            "status": {"ready": true},
        });
        let cached: InfraObject = serde_json::from_value(value.clone())?;
        assert!(cached.is_whole());
        assert_eq!(cached.meta().name.as_deref(), Some("m-1"));
        assert_eq!(
            cached.to_dynamic(),
            serde_json::from_value::<DynamicObject>(value.clone())?
        );
        assert_eq!(serde_json::to_value(&cached)?, value);
        // From text (as a list decodes it), the same; a list of them too.
        let list = format!(r#"{{"items":[{value}, {{"metadata":{{"name":"bare"}}}}]}}"#);
        let list: kube::core::ObjectList<InfraObject> = serde_json::from_str(&list)?;
        assert_eq!(list.items[0], cached);
        assert_eq!(list.items[1].to_dynamic().data, json!({}));
        assert!(list.items[1].types.is_none());
        assert!(serde_json::from_str::<InfraObject>(r#"{"metadata": 5}"#).is_err());
        assert!(serde_json::from_str::<InfraObject>("[]").is_err());
        Ok(())
    }

    /// A metadata watch's decoding: the same types and metadata as the whole object's
    /// (field sets as text), and no body.
    #[test]
    fn a_metadata_decoding_keeps_the_whole_decodings_metadata_and_skips_the_rest()
    -> Result<(), serde_json::Error> {
        let value = json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AWSMachine",
            "metadata": {"name": "m-1", "namespace": "capi", "resourceVersion": "9",
                "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:instanceType": {}}}}]},
            "spec": {"instanceType": "m6i.xlarge"},
            "status": {"ready": true},
        });
        let whole: InfraObject = serde_json::from_value(value.clone())?;
        let InfraMetadata(metadata) = serde_json::from_str(&value.to_string())?;
        assert!(!metadata.is_whole());
        assert_eq!(metadata.types, whole.types);
        assert_eq!(metadata.metadata, whole.metadata);
        let sets: Vec<_> = metadata
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|e| e.fields_v1.clone())
            .collect();
        let set = serde_json::Value::String(r#"{"f:spec":{"f:instanceType":{}}}"#.to_owned());
        assert_eq!(
            sets,
            [Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1(
                set
            ))]
        );
        assert!(serde_json::from_str::<InfraMetadata>(r#"{"metadata": 5}"#).is_err());
        Ok(())
    }

    #[test]
    fn a_metadata_only_object_decodes_without_data() {
        let cached = InfraObject::metadata_only(
            None,
            ObjectMeta {
                name: Some("m-1".into()),
                ..ObjectMeta::default()
            },
        );
        assert!(!cached.is_whole());
        let decoded = cached.to_dynamic();
        assert!(decoded.data.is_null());
        assert_eq!(decoded.metadata.name.as_deref(), Some("m-1"));
    }
}
