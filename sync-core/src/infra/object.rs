//! The infrastructure caches' form of an object: its metadata decoded (what the event
//! mapping and the decision read), everything else kept as compact JSON text and decoded
//! when a hook reads it.
//!
//! An infrastructure kind's schema is not known at compile time, so a whole object would
//! be a `serde_json::Value` tree, where every map is a B-tree node of ~600 bytes however
//! few its entries: an AWSMachine took ~17 KB of heap that way against ~2 KB as text. A
//! hook reads its pair's object once or twice per reconcile; decoding it then costs a few
//! microseconds.

use std::borrow::Cow;

use kube::Resource;
use kube::api::{DynamicObject, ObjectMeta, TypeMeta};
use kube::core::{ApiResource, DynamicResourceScope};

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
    /// The cached form of `object`.
    pub fn compact(object: DynamicObject) -> Self {
        let body = match &object.data {
            serde_json::Value::Null => None,
            data => Some(data.to_string().into_boxed_str()),
        };
        Self {
            types: object.types,
            metadata: object.metadata,
            body,
        }
    }

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
                // The text was written from a valid `Value`: it always parses back.
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_compacted_object_decodes_to_the_same_object() -> Result<(), serde_json::Error> {
        let object: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AWSMachine",
            "metadata": {"name": "m-1", "namespace": "capi", "labels": {"a": "b"}},
            "spec": {"instanceType": "m6i.xlarge", "subnet": {"filters": [{"name": "tag:Name", "values": ["x"]}]}},
            "status": {"ready": true},
        }))?;
        let cached = InfraObject::compact(object.clone());
        assert!(cached.is_whole());
        assert_eq!(cached.meta().name.as_deref(), Some("m-1"));
        assert_eq!(cached.to_dynamic(), object);
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
