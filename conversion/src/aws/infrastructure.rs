//! What the conversion of AWS machines needs to know about the cluster, read from
//! OpenShift's `Infrastructure` object.

use sync_core::api::Infrastructure;

use super::cluster::AwsCluster;
use crate::errors::{ConversionErrors, FieldError, FieldPath, Report};
use crate::infrastructure::{DEFAULT_CAPI_NAMESPACE, common_facts};

/// `platformStatus.type` of an AWS cluster.
pub const AWS_PLATFORM: &str = "AWS";

/// The IP families an AWS cluster's machines use (`platformStatus.aws.ipFamily`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum IpFamily {
    /// IPv4 only (the default).
    #[default]
    IPv4,
    /// Dual stack, IPv4 addresses first.
    DualStackIPv4Primary,
    /// Dual stack, IPv6 addresses first.
    DualStackIPv6Primary,
}

/// What the conversion of AWS machines needs to know about the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AwsInfrastructure {
    /// `status.infrastructureName`: the Cluster API cluster name.
    pub infrastructure_name: String,
    /// `status.platformStatus.aws.region`: every machine's region.
    pub region: String,
    /// `status.platformStatus.aws.ipFamily`.
    pub ip_family: IpFamily,
    /// The cluster's `AWSCluster` (`None`: the cluster has none, and nothing that needs it
    /// converts). [`Self::from_infrastructure`] assumes the installer's; the operator
    /// replaces it with what it reads.
    pub aws_cluster: Option<AwsCluster>,
}

impl AwsInfrastructure {
    /// The facts of `infrastructure`, or every reason it does not describe an AWS cluster
    /// the conversion can serve (paths start with `infrastructure.`).
    pub fn from_infrastructure(infrastructure: &Infrastructure) -> Result<Self, ConversionErrors> {
        let root = FieldPath::new("infrastructure.status");
        let mut report = Report::default();
        let (infrastructure_name, status) = common_facts(infrastructure, AWS_PLATFORM, &mut report);
        let aws = status
            .platform_status
            .as_ref()
            .and_then(|p| p.aws.clone())
            .unwrap_or_default();
        let region = aws.region.clone().unwrap_or_default();
        let mut ip_family = IpFamily::IPv4;
        if status.platform_type() == Some(AWS_PLATFORM) {
            if region.is_empty() {
                report.error(FieldError::required(
                    root.child("platformStatus").child("aws").child("region"),
                    "the AWS region is required",
                ));
            }
            ip_family = match aws.ip_family.as_deref().unwrap_or_default() {
                "" | "IPv4" => IpFamily::IPv4,
                "DualStackIPv4Primary" => IpFamily::DualStackIPv4Primary,
                "DualStackIPv6Primary" => IpFamily::DualStackIPv6Primary,
                other => {
                    report.error(FieldError::invalid(
                        root.child("platformStatus").child("aws").child("ipFamily"),
                        other,
                        "must be IPv4, DualStackIPv4Primary or DualStackIPv6Primary",
                    ));
                    IpFamily::IPv4
                }
            };
        }
        report
            .finish(Self {
                aws_cluster: Some(AwsCluster::installer_default(
                    DEFAULT_CAPI_NAMESPACE,
                    &infrastructure_name,
                )),
                infrastructure_name,
                region,
                ip_family,
            })
            .map(|converted| converted.value)
    }
}

#[cfg(test)]
mod tests {
    use sync_core::api::infrastructure::{AwsPlatformStatus, InfrastructureStatus, PlatformStatus};

    use super::*;

    fn infrastructure(name: &str, platform: &str, region: &str, ip_family: Option<&str>) -> Infrastructure {
        let mut infra = Infrastructure::new("cluster", Default::default());
        infra.status = Some(InfrastructureStatus {
            infrastructure_name: Some(name.into()),
            platform_status: Some(PlatformStatus {
                type_: Some(platform.into()),
                aws: Some(AwsPlatformStatus {
                    region: Some(region.into()),
                    ip_family: ip_family.map(Into::into),
                    resource_tags: None,
                }),
                ..PlatformStatus::default()
            }),
            ..InfrastructureStatus::default()
        });
        infra
    }

    #[test]
    fn reads_an_aws_cluster() {
        let facts =
            AwsInfrastructure::from_infrastructure(&infrastructure("demo-x7k2p", "AWS", "us-east-2", None));
        assert_eq!(
            facts,
            Ok(AwsInfrastructure {
                infrastructure_name: "demo-x7k2p".into(),
                region: "us-east-2".into(),
                ip_family: IpFamily::IPv4,
                aws_cluster: Some(AwsCluster::installer_default(
                    "openshift-cluster-api",
                    "demo-x7k2p"
                )),
            })
        );
        let dual = AwsInfrastructure::from_infrastructure(&infrastructure(
            "d",
            "AWS",
            "eu-west-1",
            Some("DualStackIPv6Primary"),
        ));
        assert_eq!(dual.map(|f| f.ip_family), Ok(IpFamily::DualStackIPv6Primary));
    }

    #[test]
    fn reports_every_missing_or_wrong_fact() {
        let paths = |infra: &Infrastructure| -> Vec<String> {
            AwsInfrastructure::from_infrastructure(infra)
                .err()
                .map(|e| e.errors.iter().map(|e| e.path.to_string()).collect())
                .unwrap_or_default()
        };
        assert_eq!(
            paths(&infrastructure("", "AWS", "", Some("IPv5"))),
            [
                "infrastructure.status.infrastructureName",
                "infrastructure.status.platformStatus.aws.region",
                "infrastructure.status.platformStatus.aws.ipFamily"
            ]
        );
        assert_eq!(
            paths(&infrastructure("x", "GCP", "us-central1", None)),
            ["infrastructure.status.platformStatus.type"]
        );
        assert_eq!(
            paths(&Infrastructure::new("cluster", Default::default())),
            [
                "infrastructure.status.infrastructureName",
                "infrastructure.status.platformStatus.type"
            ]
        );
    }
}
