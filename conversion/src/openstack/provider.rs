//! Machine API's OpenStack providerSpec (`OpenstackProviderSpec`), with the wire names of
//! openshift/api `machine/v1alpha1/types_openstack.go`.
//!
//! It has no CRD (it travels inside a Machine as an opaque object), so it is written by
//! hand. Fields this type does not know are found while it decodes (`crate::decode`) and
//! reported, so nothing in a providerSpec is dropped silently. Empty optional fields are
//! left out on output like Go's `omitempty`; the four fields Go always writes (`cloudsSecret`,
//! `cloudName`, `flavor`, `image`) are always written. The Machine API OpenStack provider
//! writes no `providerStatus`, so there is no status type.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `kind` of a Machine API OpenStack providerSpec.
pub const PROVIDER_SPEC_KIND: &str = "OpenstackProviderSpec";
/// The `apiVersion` of a Machine API OpenStack providerSpec.
pub const PROVIDER_API_VERSION: &str = "machine.openshift.io/v1alpha1";

fn is_false(value: &bool) -> bool {
    !*value
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// `providerSpec.value` of an OpenStack Machine API Machine.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OpenstackProviderSpec {
    /// `machine.openshift.io/v1alpha1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `OpenstackProviderSpec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Object metadata: has no function (only there for the raw extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// The Secret holding `clouds.yaml`.
    #[serde(default)]
    pub clouds_secret: Option<SecretReference>,
    /// The entry of `clouds.yaml` to use.
    #[serde(default)]
    pub cloud_name: String,
    /// The Nova flavor name.
    #[serde(default)]
    pub flavor: String,
    /// The Glance image name.
    #[serde(default)]
    pub image: String,
    /// The Nova SSH key pair.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub key_name: String,
    /// Unused by the Machine API OpenStack provider.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ssh_user_name: String,
    /// Networks to attach, one port per network (or per subnet).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub networks: Vec<NetworkParam>,
    /// Ports to create and attach.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<PortOpts>,
    /// A floating IP to associate (unused by the Machine API OpenStack provider).
    #[serde(default, rename = "floatingIP", skip_serializing_if = "String::is_empty")]
    pub floating_ip: String,
    /// The Nova availability zone.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub availability_zone: String,
    /// Security groups of the server's ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub security_groups: Vec<SecurityGroupParam>,
    /// The Secret holding the Ignition user data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_data_secret: Option<SecretReference>,
    /// Create trunk ports.
    #[serde(default, skip_serializing_if = "is_false")]
    pub trunk: bool,
    /// Tags of the server and its ports.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Nova server metadata.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub server_metadata: BTreeMap<String, String>,
    /// Attach a config drive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_drive: Option<bool>,
    /// Boot from a Cinder volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_volume: Option<RootVolume>,
    /// Extra ephemeral or volume disks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_block_devices: Vec<AdditionalBlockDevice>,
    /// Server group by UUID (wins over the name).
    #[serde(default, rename = "serverGroupID", skip_serializing_if = "String::is_empty")]
    pub server_group_id: String,
    /// Server group by name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub server_group_name: String,
    /// The subnet whose address is the node's (unused since OpenShift 4.13).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub primary_subnet: String,
}

/// A core/v1 `SecretReference`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SecretReference {
    /// The Secret's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The Secret's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// A security group by UUID, name or filter.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct SecurityGroupParam {
    /// The group's UUID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uuid: String,
    /// The group's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A Neutron query.
    #[serde(default, skip_serializing_if = "SecurityGroupFilter::is_empty")]
    pub filter: SecurityGroupFilter,
}

/// A Neutron security group query.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecurityGroupFilter {
    /// By ID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// By name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// By description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// By tenant (the old name of the project).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant_id: String,
    /// By project.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    /// Comma-separated tags, all present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags: String,
    /// Comma-separated tags, any present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags_any: String,
    /// Comma-separated tags, not all present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub not_tags: String,
    /// Comma-separated tags, none present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub not_tags_any: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub limit: i64,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub marker: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sort_key: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sort_dir: String,
}

impl SecurityGroupFilter {
    /// Nothing set (Go writes `{}`; this type leaves it out).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A network to attach, by UUID or filter, with the subnets to take addresses from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NetworkParam {
    /// The network's UUID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uuid: String,
    /// Unused by the Machine API OpenStack provider.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub fixed_ip: String,
    /// A Neutron network query.
    #[serde(default, skip_serializing_if = "Filter::is_empty")]
    pub filter: Filter,
    /// Subnets of the network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subnets: Vec<SubnetParam>,
    /// Create the port with no allowed address pairs.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_allowed_address_pairs: bool,
    /// Tags of the port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub port_tags: Vec<String>,
    /// `normal`, `direct`, `macvtap`, ….
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vnic_type: String,
    /// The port's binding profile.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profile: BTreeMap<String, String>,
    /// Port security of the port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_security: Option<bool>,
}

/// A Neutron network query.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Filter {
    /// By ID (deprecated: the network's `uuid`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// By name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// By description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// By tenant (the old name of the project).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant_id: String,
    /// By project.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    /// Comma-separated tags, all present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags: String,
    /// Comma-separated tags, any present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags_any: String,
    /// Comma-separated tags, not all present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub not_tags: String,
    /// Comma-separated tags, none present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub not_tags_any: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared: Option<bool>,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub marker: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub limit: i64,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sort_key: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sort_dir: String,
}

impl Filter {
    /// Nothing set (Go writes `{}`; this type leaves it out).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A subnet of a network, by UUID or filter.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubnetParam {
    /// The subnet's UUID.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uuid: String,
    /// A Neutron subnet query.
    #[serde(default, skip_serializing_if = "SubnetFilter::is_empty")]
    pub filter: SubnetFilter,
    /// Tags of the port on this subnet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub port_tags: Vec<String>,
    /// Port security of the port on this subnet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_security: Option<bool>,
}

/// A Neutron subnet query.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SubnetFilter {
    /// By ID (deprecated: the subnet's `uuid`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub id: String,
    /// By name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// By description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// By network (ignored by the Machine API OpenStack provider).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub network_id: String,
    /// By tenant (the old name of the project).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant_id: String,
    /// By project.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    /// By IP version (4 or 6).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ip_version: i64,
    /// By gateway address.
    #[serde(default, rename = "gateway_ip", skip_serializing_if = "String::is_empty")]
    pub gateway_ip: String,
    /// By CIDR.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cidr: String,
    /// By IPv6 address mode.
    #[serde(default, rename = "ipv6AddressMode", skip_serializing_if = "String::is_empty")]
    pub ipv6_address_mode: String,
    /// By IPv6 router advertisement mode.
    #[serde(default, rename = "ipv6RaMode", skip_serializing_if = "String::is_empty")]
    pub ipv6_ra_mode: String,
    /// By subnet pool.
    #[serde(default, rename = "subnetpoolId", skip_serializing_if = "String::is_empty")]
    pub subnetpool_id: String,
    /// Comma-separated tags, all present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags: String,
    /// Comma-separated tags, any present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tags_any: String,
    /// Comma-separated tags, not all present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub not_tags: String,
    /// Comma-separated tags, none present.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub not_tags_any: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_dhcp: Option<bool>,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub limit: i64,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub marker: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sort_key: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub sort_dir: String,
}

impl SubnetFilter {
    /// Nothing set (Go writes `{}`; this type leaves it out).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// A port to create on a network.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PortOpts {
    /// The network's UUID (Go always writes it).
    #[serde(default, rename = "networkID")]
    pub network_id: String,
    /// Appended to the port's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name_suffix: String,
    /// The port's description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The port's administrative state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_state_up: Option<bool>,
    /// The port's MAC address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac_address: String,
    /// Addresses of the port.
    #[serde(default, rename = "fixedIPs", skip_serializing_if = "Vec::is_empty")]
    pub fixed_ips: Vec<FixedIps>,
    /// Ignored by the Machine API OpenStack provider.
    #[serde(default, rename = "tenantID", skip_serializing_if = "String::is_empty")]
    pub tenant_id: String,
    /// Ignored by the Machine API OpenStack provider.
    #[serde(default, rename = "projectID", skip_serializing_if = "String::is_empty")]
    pub project_id: String,
    /// Security group UUIDs of the port (`None`: the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_groups: Option<Vec<String>>,
    /// Extra addresses the port may use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_address_pairs: Vec<AddressPair>,
    /// Tags of the port.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// `normal`, `direct`, `macvtap`, ….
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub vnic_type: String,
    /// The port's binding profile.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub profile: BTreeMap<String, String>,
    /// Port security of the port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port_security: Option<bool>,
    /// Create a trunk for this port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trunk: Option<bool>,
    /// Deprecated, ignored.
    #[serde(default, rename = "hostID", skip_serializing_if = "String::is_empty")]
    pub host_id: String,
}

/// An allowed address pair of a port.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AddressPair {
    /// The address (or CIDR).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ip_address: String,
    /// The MAC address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mac_address: String,
}

/// An address of a port on a subnet.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FixedIps {
    /// The subnet's UUID (Go always writes it).
    #[serde(default, rename = "subnetID")]
    pub subnet_id: String,
    /// The address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub ip_address: String,
}

/// The Cinder volume the server boots from.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RootVolume {
    /// Superseded by the providerSpec's `image`.
    #[serde(default, rename = "sourceUUID", skip_serializing_if = "String::is_empty")]
    pub source_uuid: String,
    /// The Cinder volume type.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub volume_type: String,
    /// Size in GiB.
    #[serde(default, rename = "diskSize", skip_serializing_if = "is_zero")]
    pub size: i64,
    /// The Cinder availability zone.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub availability_zone: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_type: String,
    /// Deprecated, ignored.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub device_type: String,
}

/// An extra disk of the server.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AdditionalBlockDevice {
    /// Its name, unique in the server.
    #[serde(default)]
    pub name: String,
    /// Size in GiB.
    #[serde(default, rename = "sizeGiB")]
    pub size_gib: i64,
    /// Where it is stored.
    #[serde(default)]
    pub storage: BlockDeviceStorage,
}

/// Where an extra disk is stored.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct BlockDeviceStorage {
    /// `Local` (ephemeral) or `Volume` (Cinder). Kept as text: an unknown value is a
    /// field error of the conversion, not a parse failure.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// The Cinder volume, for `Volume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume: Option<BlockDeviceVolume>,
}

/// A Cinder volume of an extra disk.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct BlockDeviceVolume {
    /// The Cinder volume type.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// The Cinder availability zone.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub availability_zone: String,
}
