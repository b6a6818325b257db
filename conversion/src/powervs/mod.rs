//! PowerVS: Machine API `PowerVSMachineProviderConfig` ⇄ Cluster API Provider IBM Cloud
//! `IBMPowerVSMachine`.
//!
//! [`PowerVs`] holds the cluster facts and implements [`Provider`]; the neutral Machine
//! and MachineSet conversion does the rest. The field logic follows
//! openshift/cluster-capi-operator `pkg/conversion/{mapi2capi,capi2mapi}/powervs.go`.

// Nothing calls the `Provider` impl until the neutral Machine layer that takes a provider
// is merged; remove this then.

pub mod capibm;
pub mod provider;
mod status;
#[cfg(test)]
mod tests;
mod to_capi;
mod to_mapi;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sync_core::api::{Infrastructure, mapi};

use crate::ConversionErrors;
use crate::errors::{FieldPath, Report};
use crate::names::{MAPI_INSTANCE_TYPE_LABEL, MAPI_REGION_LABEL, MAPI_ZONE_LABEL};
use crate::provider::{InfraKinds, InfraSpec, MachineFacts, Provider, ProviderSpecKind, ProviderStatus};
use capibm::{IbmPowerVsMachineSpec, IbmPowerVsMachineStatus};
use provider::PowerVsMachineProviderConfig;

/// `platformStatus.type` of a PowerVS cluster.
pub const PLATFORM: &str = "PowerVS";

/// The Cluster API infrastructure kinds of PowerVS.
pub const KINDS: InfraKinds = InfraKinds {
    platform: PLATFORM,
    group: capibm::GROUP,
    version: capibm::VERSION,
    machine: capibm::MACHINE_KIND,
    template: capibm::MACHINE_TEMPLATE_KIND,
    cluster: capibm::CLUSTER_KIND,
    cluster_plural: "ibmpowervsclusters",
};

/// The PowerVS providerSpec: one apiVersion only.
pub const PROVIDER_SPEC_KIND: ProviderSpecKind = ProviderSpecKind {
    kind: provider::PROVIDER_CONFIG_KIND,
    api_versions: &[provider::PROVIDER_API_VERSION],
};

/// What the conversion of PowerVS machines needs to know about the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PowerVs {
    /// `status.infrastructureName`: the Cluster API cluster name.
    pub infrastructure_name: String,
    /// `status.platformStatus.powervs.region` (empty if unset): the region label, and
    /// the `IBMPowerVSMachine`'s `status.region`.
    pub region: String,
    /// `status.platformStatus.powervs.zone` (empty if unset): the zone label, and the
    /// `IBMPowerVSMachine`'s `status.zone`. PowerVS machines have no failure domain of
    /// their own: every machine is in the cluster's zone.
    pub zone: String,
}

impl PowerVs {
    /// The facts of `infrastructure`, or every reason it does not describe a PowerVS
    /// cluster (paths start with `infrastructure.`).
    pub fn from_infrastructure(infrastructure: &Infrastructure) -> Result<Self, ConversionErrors> {
        let mut report = Report::default();
        let (infrastructure_name, status) =
            crate::infrastructure::common_facts(infrastructure, PLATFORM, &mut report);
        let power_vs = status
            .platform_status
            .and_then(|p| p.power_vs)
            .unwrap_or_default();
        let facts = Self {
            infrastructure_name,
            region: power_vs.region.unwrap_or_default(),
            zone: power_vs.zone.unwrap_or_default(),
        };
        report.finish(facts).map(|converted| converted.value)
    }
}

impl Provider for PowerVs {
    type Config = PowerVsMachineProviderConfig;
    type Spec = IbmPowerVsMachineSpec;
    type Status = IbmPowerVsMachineStatus;

    fn kinds(&self) -> &'static InfraKinds {
        &KINDS
    }

    fn provider_spec_kind(&self) -> &'static ProviderSpecKind {
        &PROVIDER_SPEC_KIND
    }

    fn config_type<'c>(
        &self,
        config: &'c PowerVsMachineProviderConfig,
    ) -> (Option<&'c str>, Option<&'c str>) {
        (config.kind.as_deref(), config.api_version.as_deref())
    }

    fn cluster_name(&self) -> &str {
        &self.infrastructure_name
    }

    /// PowerVS has no failure domains (upstream clears the Machine's), so none is given.
    fn to_infra_spec(
        &self,
        config: &PowerVsMachineProviderConfig,
        _control_plane: bool,
        path: &FieldPath,
        report: &mut Report,
    ) -> InfraSpec<IbmPowerVsMachineSpec> {
        InfraSpec {
            spec: to_capi::to_machine_spec(config, path, report),
            failure_domain: None,
            user_data_secret: config
                .user_data_secret
                .as_ref()
                .map(|secret| secret.name.clone())
                .filter(|name| !name.is_empty()),
        }
    }

    /// Deliberately nothing, as upstream: CAPIBM finds the instance by the machine's name
    /// in the service instance and writes `providerID` itself.
    fn set_provider_id(&self, _: &str, _: &mut IbmPowerVsMachineSpec, _: &FieldPath, _: &mut Report) {}

    /// As the Machine API PowerVS controller sets them: the system type, and the
    /// cluster's region and zone (its client's, not the machine's), each only when set.
    fn machine_labels(
        &self,
        spec: &IbmPowerVsMachineSpec,
        _failure_domain: Option<&str>,
    ) -> Vec<(&'static str, String)> {
        let system_type = spec
            .system_type
            .as_ref()
            .map(to_mapi::system_type)
            .unwrap_or_default();
        [
            (MAPI_INSTANCE_TYPE_LABEL, system_type),
            (MAPI_REGION_LABEL, self.region.clone()),
            (MAPI_ZONE_LABEL, self.zone.clone()),
        ]
        .into_iter()
        .filter(|(_, value)| !value.is_empty())
        .collect()
    }

    fn to_config(
        &self,
        spec: &IbmPowerVsMachineSpec,
        facts: &MachineFacts<'_>,
        path: &FieldPath,
        report: &mut Report,
    ) -> PowerVsMachineProviderConfig {
        to_mapi::to_provider_config(spec, facts, path, report)
    }

    fn to_infra_status(
        &self,
        _spec: &IbmPowerVsMachineSpec,
        status: &mapi::MachineStatus,
        now: &Time,
        report: &mut Report,
    ) -> IbmPowerVsMachineStatus {
        status::to_infra_status(self, status, now, report)
    }

    fn to_provider_status(
        &self,
        spec: &IbmPowerVsMachineSpec,
        status: &IbmPowerVsMachineStatus,
        now: &Time,
    ) -> ProviderStatus {
        status::to_provider_status(spec, status, now)
    }
}
