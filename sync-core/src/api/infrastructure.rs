//! OpenShift's cluster-wide `Infrastructure` object (`config.openshift.io/v1`,
//! cluster-scoped, always named `cluster`).
//!
//! The Machine API ⇄ Cluster API conversion needs two facts only the cluster knows: the
//! infrastructure name (the Cluster API cluster name, `status.infrastructureName`) and the
//! platform and region (`status.platformStatus`). Only the fields the operator reads are
//! typed; the rest of the object is ignored on read. The CRD is upstream's (openshift/api),
//! not generated from this type: see `tests/fixtures/openshift-crds/`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of the OpenShift config objects.
pub const GROUP: &str = "config.openshift.io";
/// The version of `Infrastructure` these types speak.
pub const VERSION: &str = "v1";
/// The name of the one `Infrastructure` object a cluster has.
pub const CLUSTER: &str = "cluster";

/// `spec` of the `Infrastructure` object (nothing in it is read by the operator).
#[derive(CustomResource, JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[kube(
    group = "config.openshift.io",
    version = "v1",
    kind = "Infrastructure",
    plural = "infrastructures",
    status = "InfrastructureStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "OpenShift's cluster-wide infrastructure configuration (`infrastructures.config.openshift.io/cluster`)."
)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureSpec {
    /// The platform the cluster is configured for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_spec: Option<PlatformSpec>,
}

/// `spec.platformSpec`.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct PlatformSpec {
    /// `AWS`, `Azure`, `None`, ….
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// `status` of the `Infrastructure` object.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InfrastructureStatus {
    /// The unique name of the cluster's infrastructure: the Cluster API cluster name and the
    /// prefix of every cloud resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_name: Option<String>,
    /// Deprecated: the platform type (`platformStatus.type` supersedes it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// The platform and its settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_status: Option<PlatformStatus>,
    /// The external API server URL.
    #[serde(default, rename = "apiServerURL", skip_serializing_if = "Option::is_none")]
    pub api_server_url: Option<String>,
    /// The internal API server URL.
    #[serde(
        default,
        rename = "apiServerInternalURI",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_server_internal_uri: Option<String>,
    /// Deprecated etcd discovery domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etcd_discovery_domain: Option<String>,
    /// `HighlyAvailable`, `SingleReplica`, `External`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control_plane_topology: Option<String>,
    /// `HighlyAvailable`, `SingleReplica`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infrastructure_topology: Option<String>,
}

impl InfrastructureStatus {
    /// The platform type: `platformStatus.type`, else the deprecated `platform`.
    pub fn platform_type(&self) -> Option<&str> {
        self.platform_status
            .as_ref()
            .and_then(|status| status.type_.as_deref())
            .or(self.platform.as_deref())
            .filter(|platform| !platform.is_empty())
    }
}

/// `status.platformStatus`.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct PlatformStatus {
    /// `AWS`, `Azure`, `None`, ….
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// AWS settings, when the platform is AWS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws: Option<AwsPlatformStatus>,
    /// OpenStack settings, when the platform is OpenStack.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub openstack: Option<OpenStackPlatformStatus>,
    /// PowerVS settings, when the platform is PowerVS.
    #[serde(default, rename = "powervs", skip_serializing_if = "Option::is_none")]
    pub power_vs: Option<PowerVsPlatformStatus>,
}

/// `status.platformStatus.openstack` (the fields a conversion reads).
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OpenStackPlatformStatus {
    /// The `clouds.yaml` entry the cluster's credentials are under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cloud_name: Option<String>,
}

/// `status.platformStatus.powervs` (the fields a conversion reads).
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PowerVsPlatformStatus {
    /// The IBM Cloud region, e.g. `dal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// The PowerVS zone, e.g. `dal10`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
    /// The resource group the cluster's resources are in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_group: Option<String>,
}

/// `status.platformStatus.aws`.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AwsPlatformStatus {
    /// The AWS region every machine of the cluster lives in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// `IPv4` (default), `DualStackIPv4Primary` or `DualStackIPv6Primary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family: Option<String>,
    /// Tags applied to every AWS resource the cluster creates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_tags: Option<Vec<AwsResourceTag>>,
}

/// `status.platformStatus.aws.resourceTags[]`.
#[derive(JsonSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct AwsResourceTag {
    /// Tag key.
    pub key: String,
    /// Tag value.
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_installer_written_object_and_ignores_the_rest() {
        // Shape of `oc get infrastructure cluster -o yaml` on AWS (openshift/api config/v1).
        let yaml = r#"
apiVersion: config.openshift.io/v1
kind: Infrastructure
metadata:
  name: cluster
spec:
  cloudConfig:
    name: ""
  platformSpec:
    type: AWS
    aws: {}
status:
  apiServerInternalURI: https://api-int.demo.example.com:6443
  apiServerURL: https://api.demo.example.com:6443
  controlPlaneTopology: HighlyAvailable
  cpuPartitioning: None
  etcdDiscoveryDomain: ""
  infrastructureName: demo-x7k2p
  infrastructureTopology: HighlyAvailable
  platform: AWS
  platformStatus:
    type: AWS
    aws:
      region: us-east-2
      cloudLoadBalancerConfig:
        dnsType: PlatformDefault
"#;
        let infra: Infrastructure = serde_saphyr::from_str(yaml).unwrap_or_default();
        let status = infra.status.unwrap_or_default();
        assert_eq!(status.infrastructure_name.as_deref(), Some("demo-x7k2p"));
        assert_eq!(status.platform_type(), Some("AWS"));
        assert_eq!(
            status
                .platform_status
                .and_then(|p| p.aws)
                .and_then(|a| a.region)
                .as_deref(),
            Some("us-east-2")
        );
    }

    #[test]
    fn platform_type_falls_back_to_the_deprecated_field() {
        let status = InfrastructureStatus {
            platform: Some("AWS".into()),
            ..InfrastructureStatus::default()
        };
        assert_eq!(status.platform_type(), Some("AWS"));
        assert_eq!(InfrastructureStatus::default().platform_type(), None);
    }
}
