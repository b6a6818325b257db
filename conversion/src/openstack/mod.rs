//! OpenStack: Machine API `OpenstackProviderSpec` ⇄ Cluster API Provider OpenStack
//! `OpenStackMachine` (`infrastructure.cluster.x-k8s.io/v1beta1`).
//!
//! The behaviour follows OpenShift's own conversion (openshift/cluster-capi-operator
//! `pkg/conversion/{mapi2capi,capi2mapi}/openstack.go`), corrected where the Machine API
//! OpenStack provider (openshift/machine-api-provider-openstack) reads a field differently
//! from what that conversion assumes; each such place says so.

pub mod capo;
pub mod provider;
mod status;
mod to_capi;
mod to_mapi;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sync_core::api::{Infrastructure, mapi};

use crate::errors::{ConversionErrors, ConversionResult, FieldPath, Report};
use crate::provider::{InfraKinds, InfraSpec, MachineFacts, Provider, ProviderSpecKind, ProviderStatus};
use capo::{OpenStackMachineSpec, OpenStackMachineStatus};
use provider::OpenstackProviderSpec;

/// `platformStatus.type` of an OpenStack cluster.
pub const PLATFORM: &str = "OpenStack";

/// The Cluster API Provider OpenStack kinds the conversion speaks.
pub const KINDS: InfraKinds = InfraKinds {
    platform: PLATFORM,
    group: "infrastructure.cluster.x-k8s.io",
    version: "v1beta1",
    machine: "OpenStackMachine",
    template: "OpenStackMachineTemplate",
    cluster: "OpenStackCluster",
    cluster_plural: "openstackclusters",
};

/// The Machine API OpenStack providerSpec.
pub const PROVIDER_SPEC_KIND: ProviderSpecKind = ProviderSpecKind {
    kind: provider::PROVIDER_SPEC_KIND,
    api_versions: &[provider::PROVIDER_API_VERSION],
};

/// What the conversion of OpenStack machines needs to know about the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenStack {
    /// `status.infrastructureName`: the Cluster API cluster name.
    pub infrastructure_name: String,
    /// `status.platformStatus.openstack.cloudName`, when the cluster reports one.
    pub cloud_name: Option<String>,
}

impl OpenStack {
    /// The facts of `infrastructure`, or every reason it does not describe an OpenStack
    /// cluster (paths start with `infrastructure.`).
    pub fn from_infrastructure(infrastructure: &Infrastructure) -> Result<Self, ConversionErrors> {
        let mut report = Report::default();
        let (infrastructure_name, status) =
            crate::infrastructure::common_facts(infrastructure, PLATFORM, &mut report);
        let cloud_name = status
            .platform_status
            .as_ref()
            .and_then(|p| p.openstack.as_ref())
            .and_then(|o| o.cloud_name.clone())
            .filter(|name| !name.is_empty());
        report
            .finish(Self {
                infrastructure_name,
                cloud_name,
            })
            .map(|converted| converted.value)
    }
}

/// The provider half on its own, with a report per call: for callers and tests that
/// convert a providerSpec or an infrastructure machine spec without a whole Machine.
impl OpenStack {
    /// A providerSpec (`spec.providerSpec.value`, as JSON) as an OpenStackMachine spec:
    /// fields the type does not know and a wrong kind or apiVersion are errors too.
    pub fn convert_provider_spec(
        &self,
        value: &serde_json::Value,
    ) -> ConversionResult<InfraSpec<OpenStackMachineSpec>> {
        let path = FieldPath::new("spec.providerSpec.value");
        let mut report = Report::default();
        // Decoded exactly as inside a Machine: unknown fields, kind and apiVersion checked.
        let machine = mapi::MachineSpec {
            provider_spec: Some(mapi::ProviderSpec {
                value: sync_core::api::RawObject::from_value(value).ok(),
            }),
            ..mapi::MachineSpec::default()
        };
        let spec = crate::machine::to_capi::parse_provider(self, &machine, &path, &mut report)
            .map(|config| self.to_infra_spec(&config, false, &path, &mut report))
            .unwrap_or_default();
        report.finish(spec)
    }

    /// An OpenStackMachine spec (at `spec`) and its Machine's facts as a providerSpec.
    pub fn convert_machine_spec(
        &self,
        spec: &OpenStackMachineSpec,
        facts: &MachineFacts<'_>,
    ) -> ConversionResult<OpenstackProviderSpec> {
        let mut report = Report::default();
        let config = self.to_config(spec, facts, &FieldPath::new("spec"), &mut report);
        report.finish(config)
    }

    /// A MAPI Machine status as the OpenStackMachine's.
    pub fn convert_machine_status(
        &self,
        status: &mapi::MachineStatus,
        now: &Time,
    ) -> ConversionResult<OpenStackMachineStatus> {
        let mut report = Report::default();
        let status = self.to_infra_status(&OpenStackMachineSpec::default(), status, now, &mut report);
        report.finish(status)
    }

    /// An OpenStackMachine's status as the Machine API reports it.
    pub fn convert_infra_status(
        &self,
        spec: &OpenStackMachineSpec,
        status: &OpenStackMachineStatus,
        now: &Time,
    ) -> ProviderStatus {
        self.to_provider_status(spec, status, now)
    }

    /// The labels the Machine API provider sets on a Machine of `spec`.
    pub fn labels(
        &self,
        spec: &OpenStackMachineSpec,
        failure_domain: Option<&str>,
    ) -> Vec<(&'static str, String)> {
        self.machine_labels(spec, failure_domain)
    }

    /// `spec` with the Machine's provider ID.
    pub fn with_provider_id(
        &self,
        provider_id: &str,
        mut spec: OpenStackMachineSpec,
    ) -> OpenStackMachineSpec {
        self.set_provider_id(
            provider_id,
            &mut spec,
            &FieldPath::new("spec.providerID"),
            &mut Report::default(),
        );
        spec
    }
}

/// For logs: `OpenStack cluster <name> (OpenStackMachine infrastructure.cluster.x-k8s.io/v1beta1)`.
impl std::fmt::Display for OpenStack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kinds = self.kinds();
        write!(
            f,
            "{} cluster {} ({} {})",
            kinds.platform,
            self.cluster_name(),
            kinds.machine,
            kinds.api_version()
        )
    }
}

impl Provider for OpenStack {
    type Config = OpenstackProviderSpec;
    type Spec = OpenStackMachineSpec;
    type Status = OpenStackMachineStatus;

    fn kinds(&self) -> &'static InfraKinds {
        &KINDS
    }

    fn provider_spec_kind(&self) -> &'static ProviderSpecKind {
        &PROVIDER_SPEC_KIND
    }

    fn config_type<'c>(&self, config: &'c OpenstackProviderSpec) -> (Option<&'c str>, Option<&'c str>) {
        (config.kind.as_deref(), config.api_version.as_deref())
    }

    fn cluster_name(&self) -> &str {
        &self.infrastructure_name
    }

    fn to_infra_spec(
        &self,
        config: &OpenstackProviderSpec,
        _control_plane: bool,
        path: &FieldPath,
        report: &mut Report,
    ) -> InfraSpec<OpenStackMachineSpec> {
        InfraSpec {
            spec: to_capi::machine_spec(config, path, report),
            failure_domain: non_empty(&config.availability_zone),
            user_data_secret: config
                .user_data_secret
                .as_ref()
                .and_then(|secret| non_empty(&secret.name)),
        }
    }

    /// CAPO keeps the provider ID in the machine's spec (`openstack:///<server uuid>`).
    fn set_provider_id(
        &self,
        provider_id: &str,
        spec: &mut OpenStackMachineSpec,
        _: &FieldPath,
        _: &mut Report,
    ) {
        spec.provider_id = non_empty(provider_id);
    }

    /// The flavor and the zone, as the Machine API provider sets them. Its `region` label
    /// comes from the `clouds.yaml` entry, which a conversion cannot read: it is left for
    /// the Machine API controller (as OpenShift's conversion does).
    fn machine_labels(
        &self,
        spec: &OpenStackMachineSpec,
        failure_domain: Option<&str>,
    ) -> Vec<(&'static str, String)> {
        let mut labels = Vec::new();
        if let Some(flavor) = spec.flavor.as_deref().filter(|f| !f.is_empty()) {
            labels.push(("machine.openshift.io/instance-type", flavor.to_owned()));
        }
        if let Some(zone) = failure_domain.filter(|z| !z.is_empty()) {
            labels.push(("machine.openshift.io/zone", zone.to_owned()));
        }
        labels
    }

    fn to_config(
        &self,
        spec: &OpenStackMachineSpec,
        facts: &MachineFacts<'_>,
        path: &FieldPath,
        report: &mut Report,
    ) -> OpenstackProviderSpec {
        to_mapi::provider_spec(spec, facts, path, report)
    }

    fn to_infra_status(
        &self,
        _spec: &OpenStackMachineSpec,
        status: &mapi::MachineStatus,
        now: &Time,
        report: &mut Report,
    ) -> OpenStackMachineStatus {
        status::to_infra_status(status, now, report)
    }

    fn to_provider_status(
        &self,
        _spec: &OpenStackMachineSpec,
        status: &OpenStackMachineStatus,
        _now: &Time,
    ) -> ProviderStatus {
        status::to_provider_status(status)
    }
}

/// `Some` of a non-empty string: the Go side's empty string is "unset".
fn non_empty(value: &str) -> Option<String> {
    (!value.is_empty()).then(|| value.to_owned())
}
