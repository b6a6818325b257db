//! The MAPI Machines and MachineSets as the user-data copier reads them: the name, the
//! resourceVersion a watch resumes from, and the providerSpec whose `userDataSecret`
//! names a Secret; every other field is skipped unread.
//!
//! The copier watches every MAPI Machine beside the sync's own cache. Decoded whole (every
//! label, condition and managed field set), a 10 000-Machine list built and dropped
//! millions of small maps and strings while the sync's caches filled, which left the
//! allocator's pages fragmented for the life of the process.

use std::borrow::Cow;

use kube::Resource;
use kube::api::ObjectMeta;
use kube::core::NamespaceResourceScope;
use serde::{Deserialize, Deserializer};
use sync_core::api::mapi;

/// A MAPI object of the kind `S` describes, reduced to what the copier reads.
#[derive(Clone, Debug, Deserialize)]
#[serde(bound = "S: Deserialize<'de> + Default")]
pub(super) struct Referencing<S> {
    #[serde(deserialize_with = "identity")]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: S,
}

impl<S: Referrer> Referencing<S> {
    /// The user-data Secret this object names, if any.
    pub(super) fn secret(&self) -> Option<String> {
        super::referenced(self.spec.provider_spec())
    }
}

/// The spec of one kind, as far as its providerSpec.
pub(super) trait Referrer:
    serde::de::DeserializeOwned + Clone + std::fmt::Debug + Default + Send + Sync + 'static
{
    /// The full kind this is part of (its group, version, plural).
    type Kind: Resource<DynamicType = (), Scope = NamespaceResourceScope>;
    /// The kind's name, which keys its references.
    const KIND: &'static str;
    /// The providerSpec this spec holds.
    fn provider_spec(&self) -> Option<&mapi::ProviderSpec>;
}

/// A Machine's `spec`, as far as `providerSpec`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct MachineSpec {
    #[serde(default)]
    provider_spec: Option<mapi::ProviderSpec>,
}

impl Referrer for MachineSpec {
    type Kind = mapi::Machine;
    const KIND: &'static str = "Machine";

    fn provider_spec(&self) -> Option<&mapi::ProviderSpec> {
        self.provider_spec.as_ref()
    }
}

/// A MachineSet's `spec`, as far as `template.spec.providerSpec`.
#[derive(Clone, Debug, Default, Deserialize)]
pub(super) struct MachineSetSpec {
    #[serde(default)]
    template: Option<Template>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct Template {
    #[serde(default)]
    spec: Option<MachineSpec>,
}

impl Referrer for MachineSetSpec {
    type Kind = mapi::MachineSet;
    const KIND: &'static str = "MachineSet";

    fn provider_spec(&self) -> Option<&mapi::ProviderSpec> {
        self.template.as_ref()?.spec.as_ref()?.provider_spec()
    }
}

/// The metadata a watch needs: name, namespace, resourceVersion.
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

impl<S: Referrer> Resource for Referencing<S> {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        S::Kind::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        S::Kind::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        S::Kind::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        S::Kind::plural(dt)
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

    fn decode<S: Referrer>(object: serde_json::Value) -> Referencing<S> {
        match serde_json::from_value(object) {
            Ok(decoded) => decoded,
            Err(error) => panic!("{error}"),
        }
    }

    fn provider_spec(user_data_secret: serde_json::Value) -> serde_json::Value {
        json!({"value": {"apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
            "instanceType": "m6i.xlarge", "userDataSecret": user_data_secret}})
    }

    #[test]
    fn a_machine_keeps_its_identity_and_the_secret_its_provider_spec_names() {
        let machine: Referencing<MachineSpec> = decode(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "worker-a-x1", "namespace": "openshift-machine-api", "resourceVersion": "42",
                "uid": "u-1", "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {}}}]},
            "spec": {"providerSpec": provider_spec(json!({"name": "infra-user-data"}))},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }));
        assert_eq!(machine.secret().as_deref(), Some("infra-user-data"));
        let expected = ObjectMeta {
            name: Some("worker-a-x1".into()),
            namespace: Some("openshift-machine-api".into()),
            resource_version: Some("42".into()),
            ..ObjectMeta::default()
        };
        assert_eq!(machine.meta(), &expected, "only what a watch needs is kept");
    }

    #[test]
    fn a_machine_set_names_the_secret_of_its_template() {
        let set: Referencing<MachineSetSpec> = decode(json!({
            "metadata": {"name": "worker-a", "resourceVersion": "7"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"providerSpec": provider_spec(json!({"name": "worker-user-data"}))}}}
        }));
        assert_eq!(set.secret().as_deref(), Some("worker-user-data"));
        assert_eq!(set.name_any(), "worker-a");
    }

    #[test]
    fn an_object_without_a_reference_or_with_a_malformed_one_names_none_and_still_decodes() {
        let bare: Referencing<MachineSpec> = decode(json!({"metadata": {"name": "m"}}));
        assert_eq!(bare.secret(), None);
        let malformed: Referencing<MachineSpec> =
            decode(json!({"metadata": {"name": "m"}, "spec": {"providerSpec": provider_spec(json!("x"))}}));
        assert_eq!(malformed.secret(), None);
        let no_template: Referencing<MachineSetSpec> = decode(json!({"metadata": {"name": "s"}, "spec": {}}));
        assert_eq!(no_template.secret(), None);
    }

    #[test]
    fn the_watch_asks_for_the_full_kinds_resources() {
        assert_eq!(
            Referencing::<MachineSpec>::url_path(&(), Some("ns")),
            mapi::Machine::url_path(&(), Some("ns"))
        );
        assert_eq!(
            Referencing::<MachineSetSpec>::url_path(&(), Some("ns")),
            mapi::MachineSet::url_path(&(), Some("ns"))
        );
    }
}
