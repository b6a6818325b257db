//! Cluster API types: `cluster.x-k8s.io/v1beta2` `Machine` and `MachineSet`.
//!
//! Only the fields the sync controllers read or mirror are typed.

// kube's `printcolumn(...)` repeats `type_ = …` by design; clippy mistakes that for a duplicate.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::infra_ref::ContractVersionedObjectReference;
use super::schema::{int64, string_enum};

/// The Cluster API group.
pub const GROUP: &str = "cluster.x-k8s.io";
/// The Cluster API storage version these types speak.
pub const VERSION: &str = "v1beta2";

/// Desired state of a Cluster API Machine.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "Machine",
    namespaced,
    status = "MachineStatus",
    derive = "Default",
    derive = "PartialEq",
    shortname = "ma",
    category = "cluster-api",
    doc = "A Cluster API Machine.",
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.clusterName"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Version", type_ = "string", json_path = ".spec.version", priority = 1)
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// The cluster this machine belongs to.
    #[schemars(length(min = 1, max = 63))]
    pub cluster_name: String,
    /// Where the bootstrap data comes from.
    pub bootstrap: Bootstrap,
    /// The infrastructure object that provides the host.
    pub infrastructure_ref: ContractVersionedObjectReference,
    /// Kubernetes version of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The provider's identifier of the host.
    #[serde(default, rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Failure domain to place the machine in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,
    /// Seconds a new node must be ready before the machine counts as available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
    /// Extra conditions the machine's readiness waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_gates: Option<Vec<ReadinessGate>>,
    /// Taints applied to the Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
    /// Timeouts for the deletion of the machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion: Option<MachineDeletionSpec>,
}

/// `spec.bootstrap` of a Cluster API Machine.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Bootstrap {
    /// The bootstrap provider's config object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_ref: Option<ContractVersionedObjectReference>,
    /// A Secret that already holds the bootstrap data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_secret_name: Option<String>,
}

/// `spec.readinessGates[]`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReadinessGate {
    /// The condition type that must be true.
    pub condition_type: String,
    /// `Positive` (default) or `Negative`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub polarity: Option<String>,
}

/// `spec.deletion` of a Cluster API Machine.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeletionSpec {
    /// How long to drain the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_drain_timeout_seconds: Option<i32>,
    /// How long to wait for volumes to detach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_volume_detach_timeout_seconds: Option<i32>,
    /// How long to wait for the Node to be deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_deletion_timeout_seconds: Option<i32>,
}

/// Observed state of a Cluster API Machine.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    /// The Node this machine became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<MachineNodeReference>,
    /// Lifecycle phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Conditions (`metav1.Condition`).
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::times::conditions::serialize",
        deserialize_with = "super::times::conditions::deserialize"
    )]
    pub conditions: Option<Vec<Condition>>,
    /// Addresses of the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<MachineAddress>>,
    /// The generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int64")]
    pub observed_generation: Option<i64>,
    /// Provisioning milestones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initialization: Option<MachineInitializationStatus>,
    /// When the phase last changed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::times::optional::serialize",
        deserialize_with = "super::times::optional::deserialize"
    )]
    pub last_updated: Option<Time>,
    /// Fields kept for the v1beta1 contract (failure reason and message, v1beta1 conditions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<MachineDeprecatedStatus>,
}

/// `status.deprecated` of a Cluster API Machine.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineDeprecatedStatus {
    /// The v1beta1 fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v1beta1: Option<MachineV1Beta1DeprecatedStatus>,
}

/// `status.deprecated.v1beta1` of a Cluster API Machine.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineV1Beta1DeprecatedStatus {
    /// v1beta1 conditions (they have a severity).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<V1Beta1Condition>>,
    /// A terminal problem, machine-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// A terminal problem, human-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
}

/// A Cluster API v1beta1 condition (`status.deprecated.v1beta1.conditions[]`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct V1Beta1Condition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// `Error`, `Warning`, `Info` or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// When the status last changed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::times::optional::serialize",
        deserialize_with = "super::times::optional::deserialize"
    )]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `status.nodeRef` of a Cluster API Machine (v1beta2: name only).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MachineNodeReference {
    /// Node name.
    pub name: String,
}

/// `status.addresses[]`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MachineAddress {
    /// `Hostname`, `ExternalIP`, `InternalIP`, `ExternalDNS` or `InternalDNS`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The address.
    pub address: String,
}

/// `status.initialization`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineInitializationStatus {
    /// The infrastructure provider has provisioned the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_provisioned: Option<bool>,
    /// The bootstrap data secret exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap_data_secret_created: Option<bool>,
}

/// Desired state of a Cluster API MachineSet.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "cluster.x-k8s.io",
    version = "v1beta2",
    kind = "MachineSet",
    namespaced,
    status = "MachineSetStatus",
    derive = "Default",
    derive = "PartialEq",
    shortname = "ms",
    category = "cluster-api",
    doc = "A Cluster API MachineSet.",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.clusterName"),
    printcolumn(name = "Desired", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Current", type_ = "integer", json_path = ".status.replicas")
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetSpec {
    /// The cluster the machines belong to.
    #[schemars(length(min = 1, max = 63))]
    pub cluster_name: String,
    /// How many machines to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Selects the machines this set owns.
    pub selector: LabelSelector,
    /// How machine names are generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_naming: Option<MachineNamingSpec>,
    /// Which machines go first when scaling down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion: Option<MachineSetDeletionSpec>,
    /// The machine template.
    pub template: MachineTemplateSpec,
}

/// `spec.machineNaming`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MachineNamingSpec {
    /// Name template, e.g. `{{ .machineSet.name }}-{{ .random }}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<String>,
}

/// `spec.deletion` of a Cluster API MachineSet.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MachineSetDeletionSpec {
    /// `Random`, `Newest` or `Oldest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "deletion_order_schema")]
    pub order: Option<String>,
}

/// `spec.template` of a Cluster API MachineSet.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct MachineTemplateSpec {
    /// Labels and annotations of the machines created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<TemplateMeta>,
    /// Spec of the machines created from the template.
    pub spec: MachineSpec,
}

/// `spec.template.metadata`: labels and annotations only.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct TemplateMeta {
    /// Labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Observed state of a Cluster API MachineSet.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetStatus {
    /// Machines the set currently has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Machines that are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Machines that are available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// Machines that match the current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_to_date_replicas: Option<i32>,
    /// The selector in string form, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,
    /// The generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int64")]
    pub observed_generation: Option<i64>,
    /// Conditions (`metav1.Condition`).
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::times::conditions::serialize",
        deserialize_with = "super::times::conditions::deserialize"
    )]
    pub conditions: Option<Vec<Condition>>,
    /// Fields kept for the v1beta1 contract (replica counts with v1beta1 meaning, failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated: Option<MachineSetDeprecatedStatus>,
}

/// `status.deprecated` of a Cluster API MachineSet.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetDeprecatedStatus {
    /// The v1beta1 fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub v1beta1: Option<MachineSetV1Beta1DeprecatedStatus>,
}

/// `status.deprecated.v1beta1` of a Cluster API MachineSet.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetV1Beta1DeprecatedStatus {
    /// Machines whose labels match the template's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fully_labeled_replicas: Option<i32>,
    /// Machines that are ready (v1beta1 meaning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Machines that are available (v1beta1 meaning).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// A terminal problem, machine-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    /// A terminal problem, human-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_message: Option<String>,
    /// v1beta1 conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<V1Beta1Condition>>,
}

fn deletion_order_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    string_enum(generator, &["Random", "Newest", "Oldest"])
}
