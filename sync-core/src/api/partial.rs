//! An object of a known kind decoded only as far as a controller reads it: the metadata a
//! watch needs (name, namespace, resourceVersion) and a projection of its `spec`; every
//! other field is skipped unread.
//!
//! A side controller that follows every Machine for one field (a Secret's name, the API
//! a user asks for) would otherwise decode each whole, labels, conditions and every
//! managed field set as a tree, millions of short-lived allocations at 10 000 Machines.
//! Made while the sync's long-lived caches fill, they also leave the allocator's pages
//! fragmented for the life of the process (`tests/PERFORMANCE.md`, "The user-data
//! copier's second watch of every Machine").

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use kube::Resource;
use kube::api::ObjectMeta;
use serde::{Deserialize, Deserializer};

/// An object of kind `K` with only its identity and `spec` as `S` decoded. `S` declares
/// the fields it reads; serde skips the rest without allocating.
#[derive(Deserialize)]
#[serde(bound = "S: Deserialize<'de> + Default")]
pub struct Partial<K, S> {
    #[serde(deserialize_with = "identity")]
    metadata: ObjectMeta,
    /// The part of `spec` that `S` declares (its default when the object has none).
    #[serde(default)]
    pub spec: S,
    #[serde(skip)]
    kind: PhantomData<fn() -> K>,
}

impl<K, S: Clone> Clone for Partial<K, S> {
    fn clone(&self) -> Self {
        Self {
            metadata: self.metadata.clone(),
            spec: self.spec.clone(),
            kind: PhantomData,
        }
    }
}

impl<K, S: fmt::Debug> fmt::Debug for Partial<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Partial")
            .field("metadata", &self.metadata)
            .field("spec", &self.spec)
            .finish()
    }
}

/// The metadata a watch needs: it resumes from the resourceVersion, and events are
/// matched to objects by namespace and name.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity {
    name: Option<String>,
    namespace: Option<String>,
    resource_version: Option<String>,
}

fn identity<'de, D: Deserializer<'de>>(deserializer: D) -> Result<ObjectMeta, D::Error> {
    let Identity {
        name,
        namespace,
        resource_version,
    } = Identity::deserialize(deserializer)?;
    Ok(ObjectMeta {
        name,
        namespace,
        resource_version,
        ..ObjectMeta::default()
    })
}

/// The kind's own resource: a watch of `Partial<K, _>` asks for `K`'s URL.
impl<K: Resource<DynamicType = ()>, S> Resource for Partial<K, S> {
    type DynamicType = ();
    type Scope = K::Scope;

    fn kind(dt: &()) -> Cow<'_, str> {
        K::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        K::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        K::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        K::plural(dt)
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
    use kube::ResourceExt as _;
    use serde_json::json;

    use super::*;
    use crate::api::{AuthoritativeApi, mapi};

    #[derive(Clone, Debug, Default, Deserialize)]
    struct Asked {
        #[serde(rename = "authoritativeAPI")]
        authoritative_api: Option<AuthoritativeApi>,
    }

    fn decode(object: serde_json::Value) -> Partial<mapi::Machine, Asked> {
        match serde_json::from_value(object) {
            Ok(decoded) => decoded,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn only_the_identity_and_the_declared_spec_fields_are_kept() {
        let machine = decode(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "worker-a-x1", "namespace": "openshift-machine-api", "resourceVersion": "42",
                "uid": "u-1", "labels": {"a": "b"}, "finalizers": ["f"],
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:authoritativeAPI": {}}}}]},
            "spec": {"authoritativeAPI": "ClusterAPI", "providerSpec": {"value": {"instanceType": "m6i.xlarge"}}},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }));
        let expected = ObjectMeta {
            name: Some("worker-a-x1".into()),
            namespace: Some("openshift-machine-api".into()),
            resource_version: Some("42".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(machine.meta(), &expected);
        assert_eq!(machine.spec.authoritative_api, Some(AuthoritativeApi::ClusterApi));
        assert_eq!(machine.clone().name_any(), "worker-a-x1");
    }

    #[test]
    fn an_object_without_a_spec_decodes_with_the_projection_s_default() {
        let machine = decode(json!({"metadata": {"name": "m"}}));
        assert_eq!(machine.spec.authoritative_api, None);
    }

    #[test]
    fn a_watch_asks_for_the_kind_s_own_url() {
        assert_eq!(
            Partial::<mapi::Machine, Asked>::url_path(&(), Some("ns")),
            mapi::Machine::url_path(&(), Some("ns"))
        );
        assert_eq!(Partial::<mapi::MachineSet, Asked>::kind(&()), "MachineSet");
    }
}
