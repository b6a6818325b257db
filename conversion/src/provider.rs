//! What one platform contributes to a conversion: its providerSpec ⇄ its Cluster API
//! provider's infrastructure machine, and their statuses.
//!
//! Everything else about a Machine or MachineSet (names, labels, annotations, lifecycle
//! hooks, owners, bootstrap secret, failure domain, replicas, templates and their hashed
//! names) is the same on every platform and is done once, in [`crate::machine`], over a
//! [`Provider`]. A platform folder (`aws/`, `openstack/`, `powervs/`) implements this trait
//! with plain functions of its own types.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sync_core::api::mapi;

use crate::errors::{FieldPath, Report};

/// A platform's Cluster API infrastructure kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfraKinds {
    /// `AWS`, `OpenStack`, `PowerVS`: `Infrastructure.status.platformStatus.type`.
    pub platform: &'static str,
    /// `infrastructure.cluster.x-k8s.io`.
    pub group: &'static str,
    /// The served version the conversion speaks, e.g. `v1beta2`.
    pub version: &'static str,
    /// The infrastructure machine, e.g. `AWSMachine`.
    pub machine: &'static str,
    /// The infrastructure machine template, e.g. `AWSMachineTemplate`.
    pub template: &'static str,
    /// The infrastructure cluster, e.g. `AWSCluster`.
    pub cluster: &'static str,
    /// Its resource name, e.g. `awsclusters`.
    pub cluster_plural: &'static str,
}

impl InfraKinds {
    /// `group/version`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }
}

/// The MAPI providerSpec's kind and the apiVersions it is accepted with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProviderSpecKind {
    /// e.g. `AWSMachineProviderConfig`.
    pub kind: &'static str,
    /// e.g. `["machine.openshift.io/v1beta1", "awsproviderconfig.openshift.io/v1beta1"]`.
    pub api_versions: &'static [&'static str],
}

/// A MAPI providerSpec as the infrastructure machine's spec, and the two facts of it that
/// belong to the CAPI Machine instead.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct InfraSpec<S> {
    /// The infrastructure machine's (or template's) spec.
    pub spec: S,
    /// `spec.failureDomain` of the CAPI Machine (the zone), if the providerSpec names one.
    pub failure_domain: Option<String>,
    /// `spec.bootstrap.dataSecretName` (the providerSpec's user-data Secret).
    pub user_data_secret: Option<String>,
}

/// What the MAPI providerSpec takes from the CAPI Machine besides its infrastructure spec.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MachineFacts<'a> {
    /// `spec.failureDomain`.
    pub failure_domain: Option<&'a str>,
    /// `spec.bootstrap.dataSecretName`.
    pub user_data_secret: Option<&'a str>,
    /// The machine carries the `cluster.x-k8s.io/control-plane` label.
    pub control_plane: bool,
}

/// The infrastructure machine's status as the Machine API reports it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProviderStatus {
    /// `status.providerStatus` of the MAPI Machine.
    pub value: Option<serde_json::Value>,
    /// `machine.openshift.io/instance-state` (e.g. `running`, `ACTIVE`).
    pub instance_state: Option<String>,
}

/// One platform's half of every conversion. Each method reports every field it cannot
/// convert into `report` (with its path under `path`) and still returns its best value,
/// so that one run lists all the problems.
pub(crate) trait Provider: Send + Sync + 'static {
    /// The MAPI providerSpec type (hand-written from openshift/api).
    type Config: Serialize + DeserializeOwned + Default;
    /// The infrastructure machine's spec type (generated from the provider's CRD); the
    /// template's `spec.template.spec` has the same schema.
    type Spec: Serialize + DeserializeOwned + Default + Clone + PartialEq;
    /// The infrastructure machine's status type.
    type Status: Serialize + DeserializeOwned + Default;

    /// The infrastructure kinds.
    fn kinds(&self) -> &'static InfraKinds;
    /// The providerSpec kind this platform converts.
    fn provider_spec_kind(&self) -> &'static ProviderSpecKind;
    /// A decoded providerSpec's `kind` and `apiVersion`.
    fn config_type<'c>(&self, config: &'c Self::Config) -> (Option<&'c str>, Option<&'c str>);
    /// The Cluster API cluster name (`Infrastructure.status.infrastructureName`).
    fn cluster_name(&self) -> &str;

    /// providerSpec → infrastructure machine spec. `control_plane`: the machine has the
    /// `master` role label.
    fn to_infra_spec(
        &self,
        config: &Self::Config,
        control_plane: bool,
        path: &FieldPath,
        report: &mut Report,
    ) -> InfraSpec<Self::Spec>;

    /// The machine's `spec.providerID` into the infrastructure machine's spec (a template
    /// has none). The default copies nothing.
    fn set_provider_id(
        &self,
        _provider_id: &str,
        _spec: &mut Self::Spec,
        _path: &FieldPath,
        _report: &mut Report,
    ) {
    }

    /// The labels the Machine API controller sets on a Machine of this spec
    /// (`machine.openshift.io/instance-type`, `region`, `zone`), for the CAPI → MAPI side.
    fn machine_labels(&self, spec: &Self::Spec, failure_domain: Option<&str>) -> Vec<(&'static str, String)>;

    /// Infrastructure machine spec → providerSpec.
    fn to_config(
        &self,
        spec: &Self::Spec,
        facts: &MachineFacts<'_>,
        path: &FieldPath,
        report: &mut Report,
    ) -> Self::Config;

    /// MAPI Machine status → the infrastructure machine's status (`spec` is the converted
    /// infrastructure spec, for what the status derives from it).
    fn to_infra_status(
        &self,
        spec: &Self::Spec,
        status: &mapi::MachineStatus,
        now: &Time,
        report: &mut Report,
    ) -> Self::Status;

    /// Infrastructure machine (spec and status) → the MAPI providerStatus.
    fn to_provider_status(&self, spec: &Self::Spec, status: &Self::Status, now: &Time) -> ProviderStatus;
}
