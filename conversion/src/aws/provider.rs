//! Machine API's AWS provider payloads, `providerSpec.value` (`AWSMachineProviderConfig`)
//! and `status.providerStatus` (`AWSMachineProviderStatus`), with the wire names of
//! openshift/api `machine/v1beta1/types_awsprovider.go`.
//!
//! They have no CRD (they travel inside a Machine as an opaque object), so they are
//! written by hand. Enumerations are kept as strings: a value this build does not know is
//! read and reported as a field error by the conversion, instead of failing the parse.
//! Fields this type does not know are found while it decodes (`crate::decode`) and
//! reported too, so nothing in a providerSpec is dropped silently.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `kind` of a Machine API AWS providerSpec.
pub const PROVIDER_CONFIG_KIND: &str = "AWSMachineProviderConfig";
/// The `kind` of a Machine API AWS providerStatus.
pub const PROVIDER_STATUS_KIND: &str = "AWSMachineProviderStatus";
/// The `apiVersion` the conversion writes (the installer also writes the older
/// `awsproviderconfig.openshift.io/v1beta1`, which is read the same way).
pub const PROVIDER_API_VERSION: &str = "machine.openshift.io/v1beta1";
/// The `apiVersion`s a providerSpec may carry.
pub const PROVIDER_API_VERSIONS: [&str; 2] = [PROVIDER_API_VERSION, "awsproviderconfig.openshift.io/v1beta1"];

/// `providerSpec.value` of an AWS Machine API Machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AwsMachineProviderConfig {
    /// `machine.openshift.io/v1beta1` or `awsproviderconfig.openshift.io/v1beta1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `AWSMachineProviderConfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Object metadata: has no function (only there for the raw extension); Go writes
    /// `{creationTimestamp: null}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The machine image.
    #[serde(default)]
    pub ami: AwsResourceReference,
    /// EC2 instance type, e.g. `m6i.xlarge`.
    #[serde(default)]
    pub instance_type: String,
    /// CPU options (confidential computing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_options: Option<CpuOptions>,
    /// Tags applied to the instance and its volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<TagSpecification>>,
    /// The IAM instance profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iam_instance_profile: Option<AwsResourceReference>,
    /// The Secret holding the Ignition user data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data_secret: Option<LocalObjectReference>,
    /// The Secret holding the AWS credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_secret: Option<LocalObjectReference>,
    /// SSH key pair name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_name: Option<String>,
    /// Network interface device index (only 0 works).
    #[serde(default)]
    pub device_index: i64,
    /// Whether the instance gets a public IP.
    #[serde(default, rename = "publicIp", skip_serializing_if = "Option::is_none")]
    pub public_ip: Option<bool>,
    /// `ENA` or `EFA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_interface_type: Option<String>,
    /// Security groups of the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_groups: Option<Vec<AwsResourceReference>>,
    /// The subnet of the instance.
    #[serde(default)]
    pub subnet: AwsResourceReference,
    /// Region, zone, tenancy, dedicated host.
    #[serde(default)]
    pub placement: Placement,
    /// Load balancers to register the instance with (control plane only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancers: Option<Vec<LoadBalancerReference>>,
    /// Volumes: the one without a device name is the root volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_devices: Option<Vec<BlockDeviceMappingSpec>>,
    /// Spot instance options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spot_market_options: Option<SpotMarketOptions>,
    /// Instance metadata service options.
    #[serde(default, skip_serializing_if = "MetadataServiceOptions::is_empty")]
    pub metadata_service_options: MetadataServiceOptions,
    /// Placement group name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub placement_group_name: String,
    /// Partition of a partition placement group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement_group_partition: Option<i32>,
    /// Capacity reservation to launch into.
    #[serde(
        default,
        rename = "capacityReservationId",
        skip_serializing_if = "String::is_empty"
    )]
    pub capacity_reservation_id: String,
    /// `OnDemand`, `Spot` or `CapacityBlock`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub market_type: Option<String>,
}

/// A reference to an AWS resource by ID, ARN or filters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct AwsResourceReference {
    /// Resource ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Resource ARN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arn: Option<String>,
    /// Filters that select the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Vec<Filter>>,
}

impl AwsResourceReference {
    /// A reference by ID.
    pub fn id(id: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            ..Self::default()
        }
    }
}

/// An EC2 filter.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    /// Filter name, e.g. `tag:Name`.
    pub name: String,
    /// Accepted values.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
}

/// A tag.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct TagSpecification {
    /// Tag key.
    pub name: String,
    /// Tag value.
    #[serde(default)]
    pub value: String,
}

/// A reference to a Secret in the Machine's namespace.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalObjectReference {
    /// Secret name.
    #[serde(default)]
    pub name: String,
}

/// `cpuOptions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CpuOptions {
    /// `Disabled` or `AMDEncryptedVirtualizationNestedPaging`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidential_compute: Option<String>,
}

/// `blockDevices[]`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceMappingSpec {
    /// Device name (`/dev/sdf`); none means the root volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_name: Option<String>,
    /// The EBS volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ebs: Option<EbsBlockDeviceSpec>,
    /// Suppresses a device of the AMI (never used by the Machine API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_device: Option<String>,
    /// Instance store volume name (never used by the Machine API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtual_name: Option<String>,
}

/// `blockDevices[].ebs`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct EbsBlockDeviceSpec {
    /// Deprecated: whether the volume is deleted with the instance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete_on_termination: Option<bool>,
    /// Whether the volume is encrypted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted: Option<bool>,
    /// The KMS key encrypting the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms_key: Option<AwsResourceReference>,
    /// Provisioned IOPS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iops: Option<i64>,
    /// Throughput in MiB/s (gp3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_mib: Option<i32>,
    /// Size in GiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_size: Option<i64>,
    /// `gp2`, `gp3`, `io1`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_type: Option<String>,
}

/// `spotMarketOptions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct SpotMarketOptions {
    /// Maximum hourly price; none means the on-demand price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_price: Option<String>,
}

/// `metadataServiceOptions`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct MetadataServiceOptions {
    /// `Required` (IMDSv2) or `Optional`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<String>,
}

impl MetadataServiceOptions {
    fn is_empty(&self) -> bool {
        self.authentication.is_none()
    }
}

/// `placement`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// AWS region.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,
    /// Availability zone.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub availability_zone: String,
    /// `default`, `dedicated` or `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenancy: Option<String>,
    /// Dedicated host placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostPlacement>,
}

/// `placement.host`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct HostPlacement {
    /// `AnyAvailable` or `DedicatedHost`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
    /// The dedicated host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedicated_host: Option<DedicatedHost>,
}

/// `placement.host.dedicatedHost`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct DedicatedHost {
    /// `UserProvided` (default) or `Dynamic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_strategy: Option<String>,
    /// Host ID (`h-…`), for `UserProvided`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// Tags of a dynamically allocated host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_host_allocation: Option<DynamicHostAllocationSpec>,
}

/// `placement.host.dedicatedHost.dynamicHostAllocation`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct DynamicHostAllocationSpec {
    /// Tags of the allocated host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<TagSpecification>>,
}

/// `loadBalancers[]`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadBalancerReference {
    /// Load balancer name.
    pub name: String,
    /// `classic` or `network`.
    #[serde(rename = "type")]
    pub type_: String,
}

/// `status.providerStatus` of an AWS Machine API Machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AwsMachineProviderStatus {
    /// `machine.openshift.io/v1beta1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `AWSMachineProviderStatus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// EC2 instance ID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    /// EC2 instance state (`pending`, `running`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instance_state: Option<String>,
    /// Conditions (`MachineCreation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The dedicated host the instance runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedicated_host: Option<DedicatedHostStatus>,
}

/// `providerStatus.dedicatedHost`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct DedicatedHostStatus {
    /// Host ID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
}
