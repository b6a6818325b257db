//! Machine API types: `machine.openshift.io/v1beta1` `Machine` and `MachineSet`.
//!
//! Only the fields the sync controllers read or mirror are typed; opaque provider payloads
//! (`providerSpec.value`, `providerStatus`) are kept whole with unknown fields preserved.

// kube's `printcolumn(...)` repeats `type_ = …` by design; clippy mistakes that for a duplicate.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeAddress, ObjectReference, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};
use kube::{CustomResource, KubeSchema};
use serde::{Deserialize, Serialize};

use super::authoritative::AuthoritativeApi;
use super::raw::RawObject;
use super::schema::{int64, string_enum};
pub use super::sync_status::Condition;
use super::sync_status::{MapiStatus, SyncStatus};

/// The Machine API group.
pub const GROUP: &str = "machine.openshift.io";
/// The Machine API version these types speak.
pub const VERSION: &str = "v1beta1";

/// Desired state of a Machine API Machine.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "machine.openshift.io",
    version = "v1beta1",
    kind = "Machine",
    namespaced,
    status = "MachineStatus",
    derive = "Default",
    derive = "PartialEq",
    shortname = "ma",
    category = "machine-api",
    doc = "A Machine API Machine: one host, driven by the Machine API or mirrored from Cluster API.",
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(name = "Requested", type_ = "string", json_path = ".spec.authoritativeAPI"),
    printcolumn(
        name = "Authoritative",
        type_ = "string",
        json_path = ".status.authoritativeAPI"
    ),
    printcolumn(
        name = "Migration",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Migration\")].reason"
    ),
    printcolumn(
        name = "ProviderID",
        type_ = "string",
        json_path = ".spec.providerID",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSpec {
    /// Metadata propagated to the Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMeta>,
    /// Hooks that pause the machine's deletion before drain or termination.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle_hooks: Option<LifecycleHooks>,
    /// Taints applied to the Node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
    /// The provider's identifier of the host.
    #[serde(default, rename = "providerID", skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Provider-specific configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_spec: Option<ProviderSpec>,
    /// The API the user asks to be authoritative.
    #[serde(default, rename = "authoritativeAPI", skip_serializing_if = "Option::is_none")]
    pub authoritative_api: Option<AuthoritativeApi>,
}

/// Observed state of a Machine API Machine.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineStatus {
    /// The Node this machine became.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_ref: Option<ObjectReference>,
    /// When the status was last written.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::times::optional::serialize",
        deserialize_with = "super::times::optional::deserialize"
    )]
    pub last_updated: Option<Time>,
    /// A terminal problem, machine-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// A terminal problem, human-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// Provider-specific status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_status: Option<RawObject>,
    /// Addresses of the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<NodeAddress>>,
    /// The last operation the actuator performed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_operation: Option<LastOperation>,
    /// Lifecycle phase (`Provisioning`, `Running`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// `authoritativeAPI`, `synchronizedAPI`, `synchronizedGeneration`, `conditions`.
    #[serde(flatten)]
    pub sync: SyncStatus,
}

/// Desired state of a Machine API MachineSet.
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "machine.openshift.io",
    version = "v1beta1",
    kind = "MachineSet",
    namespaced,
    status = "MachineSetStatus",
    derive = "Default",
    derive = "PartialEq",
    shortname = "ms",
    category = "machine-api",
    doc = "A Machine API MachineSet: keeps a number of Machines from one template.",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.labelSelector"
    ),
    printcolumn(name = "Desired", type_ = "integer", json_path = ".spec.replicas"),
    printcolumn(name = "Current", type_ = "integer", json_path = ".status.replicas"),
    printcolumn(name = "Ready", type_ = "integer", json_path = ".status.readyReplicas"),
    printcolumn(name = "Requested", type_ = "string", json_path = ".spec.authoritativeAPI"),
    printcolumn(
        name = "Authoritative",
        type_ = "string",
        json_path = ".status.authoritativeAPI"
    ),
    printcolumn(
        name = "Migration",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Migration\")].reason"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetSpec {
    /// How many machines to keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub replicas: Option<i32>,
    /// Seconds a new machine must be ready before it counts as available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
    /// Which machines go first when scaling down: `Random`, `Newest` or `Oldest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "delete_policy_schema")]
    pub delete_policy: Option<String>,
    /// Selects the machines this set owns.
    #[serde(default)]
    pub selector: LabelSelector,
    /// The machine template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<MachineTemplateSpec>,
    /// The API the user asks to be authoritative for the set.
    #[serde(default, rename = "authoritativeAPI", skip_serializing_if = "Option::is_none")]
    pub authoritative_api: Option<AuthoritativeApi>,
}

/// Observed state of a Machine API MachineSet.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineSetStatus {
    /// Machines the set currently has.
    #[serde(default)]
    pub replicas: i32,
    /// Machines whose labels match the template's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fully_labeled_replicas: Option<i32>,
    /// Machines that are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,
    /// Machines ready for at least `minReadySeconds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_replicas: Option<i32>,
    /// The generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int64")]
    pub observed_generation: Option<i64>,
    /// A terminal problem, machine-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_reason: Option<String>,
    /// A terminal problem, human-readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_message: Option<String>,
    /// The selector in string form, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<String>,
    /// `authoritativeAPI`, `synchronizedAPI`, `synchronizedGeneration`, `conditions`.
    #[serde(flatten)]
    pub sync: SyncStatus,
}

/// The Machine API's own metadata subset, used inside specs and templates.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// Prefix for a generated name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Owners.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<OwnerReference>>,
}

/// `spec.template` of a MachineSet.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MachineTemplateSpec {
    /// Metadata of the machines created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMeta>,
    /// Spec of the machines created from the template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<MachineSpec>,
}

/// Deletion lifecycle hooks.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleHooks {
    /// Hooks that hold the machine before its node is drained.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_drain: Option<Vec<LifecycleHook>>,
    /// Hooks that hold the machine before its instance is terminated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_terminate: Option<Vec<LifecycleHook>>,
}

/// One lifecycle hook.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct LifecycleHook {
    /// Unique name of the hook.
    pub name: String,
    /// Who owns the hook.
    pub owner: String,
}

/// `spec.providerSpec`: the provider's configuration, kept whole.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct ProviderSpec {
    /// The provider's configuration object; unknown fields preserved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<RawObject>,
}

/// `status.lastOperation`.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct LastOperation {
    /// What was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::times::optional::serialize",
        deserialize_with = "super::times::optional::deserialize"
    )]
    pub last_updated: Option<Time>,
    /// Its state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Its type (`Create`, `Update`, `Delete`).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

impl MapiStatus for MachineStatus {
    fn sync_status(&self) -> &SyncStatus {
        &self.sync
    }
    fn sync_status_mut(&mut self) -> &mut SyncStatus {
        &mut self.sync
    }
}

impl MapiStatus for MachineSetStatus {
    fn sync_status(&self) -> &SyncStatus {
        &self.sync
    }
    fn sync_status_mut(&mut self) -> &mut SyncStatus {
        &mut self.sync
    }
}

fn delete_policy_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    string_enum(generator, &["Random", "Newest", "Oldest"])
}
