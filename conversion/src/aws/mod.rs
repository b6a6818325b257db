//! AWS: Machine API `AWSMachineProviderConfig` ⇄ Cluster API Provider AWS `AWSMachine`.
//! The types on both sides (the providerSpec/providerStatus written by hand, they have no
//! CRD; CAPA's kinds generated), the field conversions each way, the statuses, and the
//! [`Provider`] that plugs them into the shared Machine/MachineSet conversion.

pub mod capa;
pub mod cluster;
pub mod infrastructure;
pub mod provider;
mod status;
pub mod to_capi;
pub mod to_mapi;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sync_core::api::mapi;

use self::capa::{AwsMachineSpec, AwsMachineStatus};
pub use self::provider::{AwsMachineProviderConfig, AwsMachineProviderStatus};
use crate::aws::infrastructure::AwsInfrastructure;
use crate::errors::{FieldError, FieldPath, Report};
use crate::infrastructure::DEFAULT_CAPI_NAMESPACE;
use crate::names::{MAPI_INSTANCE_TYPE_LABEL, MAPI_REGION_LABEL, MAPI_ZONE_LABEL};
use crate::provider::{InfraKinds, InfraSpec, MachineFacts, Provider, ProviderSpecKind, ProviderStatus};

/// The Cluster API Provider AWS kinds the conversion writes and reads.
pub const KINDS: InfraKinds = InfraKinds {
    platform: crate::aws::infrastructure::AWS_PLATFORM,
    group: capa::GROUP,
    version: capa::VERSION,
    machine: capa::AWS_MACHINE_KIND,
    template: capa::AWS_MACHINE_TEMPLATE_KIND,
    cluster: "AWSCluster",
    cluster_plural: "awsclusters",
};

/// The MAPI providerSpec the conversion reads and writes.
pub const PROVIDER_SPEC_KIND: ProviderSpecKind = ProviderSpecKind {
    kind: provider::PROVIDER_CONFIG_KIND,
    api_versions: &provider::PROVIDER_API_VERSIONS,
};

impl Provider for AwsInfrastructure {
    type Config = AwsMachineProviderConfig;
    type Spec = AwsMachineSpec;
    type Status = AwsMachineStatus;

    fn kinds(&self) -> &'static InfraKinds {
        &KINDS
    }

    fn provider_spec_kind(&self) -> &'static ProviderSpecKind {
        &PROVIDER_SPEC_KIND
    }

    fn config_type<'c>(&self, config: &'c AwsMachineProviderConfig) -> (Option<&'c str>, Option<&'c str>) {
        (config.kind.as_deref(), config.api_version.as_deref())
    }

    fn cluster_name(&self) -> &str {
        &self.infrastructure_name
    }

    fn to_infra_spec(
        &self,
        config: &AwsMachineProviderConfig,
        control_plane: bool,
        path: &FieldPath,
        report: &mut Report,
    ) -> InfraSpec<AwsMachineSpec> {
        let context = to_capi::Context {
            infra: self,
            control_plane,
        };
        InfraSpec {
            spec: to_capi::to_aws_machine_spec(config, &context, path, report),
            failure_domain: Some(config.placement.availability_zone.clone()),
            user_data_secret: config.user_data_secret.as_ref().map(|s| s.name.clone()),
        }
    }

    /// The EC2 instance ID at the end of the providerID goes to `instanceID`.
    fn set_provider_id(
        &self,
        provider_id: &str,
        spec: &mut AwsMachineSpec,
        path: &FieldPath,
        report: &mut Report,
    ) {
        match instance_id(provider_id) {
            Some(instance) => {
                spec.instance_id = Some(instance.to_owned());
                spec.provider_id = Some(provider_id.to_owned());
            }
            None => report.error(FieldError::invalid(
                path.clone(),
                provider_id,
                "no EC2 instance ID (i-…) in the providerID",
            )),
        }
    }

    fn machine_labels(
        &self,
        spec: &AwsMachineSpec,
        failure_domain: Option<&str>,
    ) -> Vec<(&'static str, String)> {
        vec![
            (MAPI_INSTANCE_TYPE_LABEL, spec.instance_type.clone()),
            (MAPI_REGION_LABEL, self.region.clone()),
            (MAPI_ZONE_LABEL, failure_domain.unwrap_or_default().to_owned()),
        ]
    }

    fn to_config(
        &self,
        spec: &AwsMachineSpec,
        facts: &MachineFacts<'_>,
        path: &FieldPath,
        report: &mut Report,
    ) -> AwsMachineProviderConfig {
        let machine = to_mapi::MachineFacts {
            failure_domain: facts.failure_domain,
            user_data_secret: facts.user_data_secret,
            load_balancers: self.cluster_facts(facts.control_plane, report),
        };
        to_mapi::to_provider_config(spec, &machine, self, path, report)
    }

    fn to_infra_status(
        &self,
        spec: &AwsMachineSpec,
        status: &mapi::MachineStatus,
        now: &Time,
        report: &mut Report,
    ) -> AwsMachineStatus {
        status::to_aws_status(status, spec.spot_market_options.is_some(), now, report)
    }

    fn to_provider_status(
        &self,
        spec: &AwsMachineSpec,
        status: &AwsMachineStatus,
        now: &Time,
    ) -> ProviderStatus {
        status::to_provider_status(spec, status, now)
    }
}

impl AwsInfrastructure {
    /// What the Machine API side takes from the cluster's AWSCluster: its identity must be
    /// the one the default credentials Secret stands for, and a control plane machine
    /// lists the control plane's load balancers, as upstream converts them. Without an
    /// AWSCluster nothing converts.
    fn cluster_facts(
        &self,
        control_plane: bool,
        report: &mut Report,
    ) -> Option<Vec<provider::LoadBalancerReference>> {
        let Some(cluster) = &self.aws_cluster else {
            report.error(FieldError::required(
                FieldPath::new(format!(
                    "AWSCluster {DEFAULT_CAPI_NAMESPACE}/{}",
                    self.infrastructure_name
                )),
                "the cluster has no AWSCluster: its identity and load balancers are needed to convert to the \
                 Machine API (the Cluster API AWS provider needs it too); create it",
            ));
            return None;
        };
        cluster.check_identity(report);
        if !control_plane {
            return None;
        }
        match cluster.load_balancer_references() {
            Ok(references) => Some(references).filter(|r| !r.is_empty()),
            Err(errors) => {
                for error in errors.errors {
                    report.error(error);
                }
                None
            }
        }
    }
}

/// `AWSMachine.spec` as `AWSMachineTemplate.spec.template.spec` or back: one schema,
/// generated twice (`tests/crd_drift.rs` pins them to each other), so this cannot fail
/// unless they part ways; if they do, `path` is reported rather than defaulted.
pub(crate) fn retype<From: serde::Serialize, To: serde::de::DeserializeOwned + Default>(
    value: &From,
    path: &FieldPath,
    report: &mut Report,
) -> To {
    // Through compact text: one buffer, where a `Value` tree allocates every node.
    serde_json::to_vec(value)
        .and_then(|json| serde_json::from_slice(&json))
        .unwrap_or_else(|error| {
            report.error(FieldError::invalid(
                path.clone(),
                error.to_string(),
                "AWSMachine and AWSMachineTemplate specs differ in this build",
            ));
            To::default()
        })
}

/// The EC2 instance ID at the end of a providerID (`aws:///us-east-1a/i-0abc…`).
fn instance_id(provider_id: &str) -> Option<&str> {
    let last = provider_id.rsplit('/').next().unwrap_or_default();
    last.find("i-")
        .map(|start| &last[start..])
        .filter(|id| id.len() > 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_ids_come_from_the_end_of_the_provider_id() {
        assert_eq!(
            instance_id("aws:///us-east-1a/i-0123456789abcdef0"),
            Some("i-0123456789abcdef0")
        );
        assert_eq!(instance_id("i-1"), Some("i-1"));
        assert_eq!(instance_id("aws:///us-east-1a/"), None);
        assert_eq!(instance_id("aws:///us-east-1a/i-"), None);
        assert_eq!(instance_id("gce://p/z/n"), None);
    }
}
