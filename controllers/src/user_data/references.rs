//! The MAPI Machines and MachineSets as the user-data copier reads them ([`Partial`]):
//! identity, and the providerSpec whose `userDataSecret` names a Secret. The copier
//! watches every MAPI Machine beside the sync's own caches; decoding each whole cost
//! 13 MiB at 10 000 Machines in fragmented heap.

use kube::Resource;
use kube::core::NamespaceResourceScope;
use serde::Deserialize;
use sync_core::api::{Partial, mapi};

/// A MAPI object of the kind `S` is part of, reduced to what the copier reads.
pub(super) type Referencing<S> = Partial<<S as Referrer>::Kind, S>;

/// The user-data Secret an object names, if any.
pub(super) fn secret<S: Referrer>(object: &Referencing<S>) -> Option<String> {
    referenced(object.spec.provider_spec())
}

/// The one field of a providerSpec the copier reads.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct UserDataReference {
    user_data_secret: Option<SecretName>,
}

#[derive(serde::Deserialize)]
struct SecretName {
    name: String,
}

/// The user-data Secret a MAPI providerSpec names (`userDataSecret.name`), decoded from
/// the raw text without building the whole providerSpec.
fn referenced(provider_spec: Option<&mapi::ProviderSpec>) -> Option<String> {
    let value = provider_spec?.value.as_ref()?;
    let reference: UserDataReference = value.parse().ok()?;
    reference.user_data_secret.map(|secret| secret.name)
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
    fn a_machine_names_the_secret_of_its_provider_spec() {
        let machine: Referencing<MachineSpec> = decode(json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": "worker-a-x1", "namespace": "openshift-machine-api", "resourceVersion": "42",
                "uid": "u-1", "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {}}}]},
            "spec": {"providerSpec": provider_spec(json!({"name": "infra-user-data"}))},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
        }));
        assert_eq!(secret(&machine).as_deref(), Some("infra-user-data"));
        assert_eq!(machine.name_any(), "worker-a-x1");
    }

    #[test]
    fn a_machine_set_names_the_secret_of_its_template() {
        let set: Referencing<MachineSetSpec> = decode(json!({
            "metadata": {"name": "worker-a", "resourceVersion": "7"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}},
                "template": {"metadata": {"labels": {"a": "b"}},
                    "spec": {"providerSpec": provider_spec(json!({"name": "worker-user-data"}))}}}
        }));
        assert_eq!(secret(&set).as_deref(), Some("worker-user-data"));
        assert_eq!(set.name_any(), "worker-a");
    }

    #[test]
    fn an_object_without_a_reference_or_with_a_malformed_one_names_none_and_still_decodes() {
        let bare: Referencing<MachineSpec> = decode(json!({"metadata": {"name": "m"}}));
        assert_eq!(secret(&bare), None);
        let malformed: Referencing<MachineSpec> =
            decode(json!({"metadata": {"name": "m"}, "spec": {"providerSpec": provider_spec(json!("x"))}}));
        assert_eq!(secret(&malformed), None);
        let no_template: Referencing<MachineSetSpec> = decode(json!({"metadata": {"name": "s"}, "spec": {}}));
        assert_eq!(secret(&no_template), None);
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

    #[test]
    fn the_referenced_secret_is_the_provider_spec_s_user_data_secret() {
        let spec: mapi::ProviderSpec = match serde_json::from_value(
            serde_json::json!({"value": {"userDataSecret": {"name": "infra-user-data"}}}),
        ) {
            Ok(spec) => spec,
            Err(error) => panic!("{error}"),
        };
        assert_eq!(referenced(Some(&spec)).as_deref(), Some("infra-user-data"));
        assert_eq!(referenced(None), None);
    }
}
