//! Machine API's PowerVS provider payloads, `providerSpec.value`
//! (`PowerVSMachineProviderConfig`) and `status.providerStatus`
//! (`PowerVSMachineProviderStatus`), with the wire names of openshift/api
//! `machine/v1/types_powervsprovider.go` (commit `2a3d73913b5a7caec4c57d5c3d04f51106ec4da3`).
//!
//! Written by hand: they travel inside a Machine as an opaque object and have no CRD.
//! Enumerations are strings, so a value this build does not know is read and reported by
//! the conversion with its path instead of failing the parse; unknown fields are found by
//! the neutral decoder. Fields Go writes even when empty (no `omitempty`) are always
//! written here too.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `kind` of a Machine API PowerVS providerSpec.
pub const PROVIDER_CONFIG_KIND: &str = "PowerVSMachineProviderConfig";
/// The `kind` of a Machine API PowerVS providerStatus.
pub const PROVIDER_STATUS_KIND: &str = "PowerVSMachineProviderStatus";
/// The only `apiVersion` of the PowerVS payloads.
pub const PROVIDER_API_VERSION: &str = "machine.openshift.io/v1";

/// `PowerVSResource.type`: the resource is named by its ID.
pub const RESOURCE_TYPE_ID: &str = "ID";
/// `PowerVSResource.type`: the resource is named by its name.
pub const RESOURCE_TYPE_NAME: &str = "Name";
/// `PowerVSResource.type`: the resource is the one whose name matches a regular expression.
pub const RESOURCE_TYPE_REGEX: &str = "RegEx";

/// `providerSpec.value` of a PowerVS Machine API Machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PowerVsMachineProviderConfig {
    /// `machine.openshift.io/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `PowerVSMachineProviderConfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Object metadata: no function (only there for the raw extension); Go writes
    /// `{creationTimestamp: null}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The Secret holding the Ignition user data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data_secret: Option<PowerVsSecretReference>,
    /// The Secret holding the IBM Cloud credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<PowerVsSecretReference>,
    /// The PowerVS workspace the instance is created in.
    #[serde(default)]
    pub service_instance: PowerVsResource,
    /// The boot image.
    #[serde(default)]
    pub image: PowerVsResource,
    /// The network the instance is attached to.
    #[serde(default)]
    pub network: PowerVsResource,
    /// The SSH key pair name (Go writes it even when empty).
    #[serde(default)]
    pub key_pair_name: String,
    /// Machine type, e.g. `s922` (the instance-type label).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub system_type: String,
    /// `Dedicated`, `Shared` or `Capped`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub processor_type: String,
    /// Number of processors: an integer or a decimal string such as `"0.5"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processors: Option<IntOrString>,
    /// Memory in GiB.
    #[serde(rename = "memoryGiB", default, skip_serializing_if = "is_zero")]
    pub memory_gib: i32,
    /// IBM VPC load balancers to attach the instance to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_balancers: Vec<LoadBalancerReference>,
}

/// A PowerVS resource named one of three ways, chosen by `type`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct PowerVsResource {
    /// `ID`, `Name` or `RegEx`.
    #[serde(rename = "type", default, skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// The resource ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The resource name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A regular expression the resource's name matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
}

/// A Secret in the machine's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct PowerVsSecretReference {
    /// The Secret's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// An IBM VPC load balancer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadBalancerReference {
    /// Its name.
    #[serde(default)]
    pub name: String,
    /// `Application`.
    #[serde(rename = "type", default)]
    pub type_: String,
}

/// `status.providerStatus` of a PowerVS Machine API Machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PowerVsMachineProviderStatus {
    /// `machine.openshift.io/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `PowerVSMachineProviderStatus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The provider's conditions (`MachineCreation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The PowerVS instance ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// The workspace the instance is in.
    #[serde(
        rename = "serviceInstanceID",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub service_instance_id: Option<String>,
    /// The instance state, e.g. `ACTIVE`, `BUILD`, `ERROR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_state: Option<String>,
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_zero(value: &i32) -> bool {
    *value == 0
}
