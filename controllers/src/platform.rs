//! The platforms whose Machines and MachineSets the sync converts, as [`Platform`]s: thin
//! adapters over the `conversion` crate that hand the hooks kind-neutral objects.

use std::sync::Arc;

use conversion::aws::capa::{AwsMachine, AwsMachineTemplate};
use conversion::aws::cluster::AwsCluster;
use conversion::{AwsInfrastructure, ConversionErrors, capi_to_mapi, mapi_to_capi};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::DynamicObject;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sync_core::api::{capi, mapi};

use crate::sync::cluster::InfraCluster;
use crate::sync::{CapiMachine, CapiMachineSet, Cluster, ConversionError, Converted, Platform};

/// The conversion for the cluster's platform. `Err`: the platform has none (or its
/// `Infrastructure` does not describe a cluster it can serve), and why.
pub fn for_cluster(cluster: &Cluster) -> Result<Arc<dyn Platform>, String> {
    match cluster.platform.as_str() {
        conversion::infrastructure::AWS_PLATFORM => {
            let mut infra = AwsInfrastructure::from_infrastructure(&cluster.infrastructure)
                .map_err(|errors| errors.to_string())?;
            with_aws_cluster(&mut infra, &cluster.infra_cluster);
            Ok(Arc::new(Aws::new(infra)) as Arc<dyn Platform>)
        }
        other => Err(format!(
            "platform {other:?} has no Machine API ⇄ Cluster API conversion"
        )),
    }
}

/// The AWS facts with what was read of the cluster's AWSCluster (not read: the
/// installer's is assumed).
pub fn with_aws_cluster(infra: &mut AwsInfrastructure, read: &InfraCluster) {
    match read {
        InfraCluster::NotRead => {}
        InfraCluster::Missing(_) => infra.aws_cluster = None,
        InfraCluster::Found(object) => infra.aws_cluster = Some(AwsCluster::from_object(object)),
    }
}

/// A platform's infrastructure cluster kind (the object a conversion reads cluster-wide
/// facts from), in Cluster API's infrastructure group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InfraClusterKind {
    /// `infrastructure.cluster.x-k8s.io`.
    pub group: &'static str,
    /// `AWSCluster`.
    pub kind: &'static str,
    /// `awsclusters`.
    pub plural: &'static str,
    /// The served version.
    pub version: &'static str,
}

/// The infrastructure cluster kind the conversion of `platform` reads (`None`: none).
pub fn infra_cluster_kind(platform: &str) -> Option<InfraClusterKind> {
    (platform == conversion::infrastructure::AWS_PLATFORM).then_some(InfraClusterKind {
        group: conversion::aws::capa::GROUP,
        kind: "AWSCluster",
        plural: "awsclusters",
        version: "v1beta2",
    })
}

/// AWS, through `conversion`.
#[derive(Clone, Debug)]
pub struct Aws {
    infra: AwsInfrastructure,
}

impl Aws {
    /// The AWS platform of a cluster with these facts.
    pub fn new(infra: AwsInfrastructure) -> Self {
        Self { infra }
    }
}

fn errors(errors: ConversionErrors) -> ConversionError {
    ConversionError(errors.errors.iter().map(ToString::to_string).collect())
}

fn converted<T>(value: T, warnings: &[conversion::Warning]) -> Converted<T> {
    Converted {
        value,
        warnings: warnings.iter().map(ToString::to_string).collect(),
    }
}

/// A typed CAPA object as the kind-neutral object the hooks write.
fn dynamic(object: &impl Serialize) -> Result<DynamicObject, ConversionError> {
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|e| ConversionError(vec![format!("encoding the infrastructure object: {e}")]))
}

/// A live infrastructure object as its CAPA type.
fn typed<T: DeserializeOwned>(object: &DynamicObject, kind: &str) -> Result<T, ConversionError> {
    serde_json::to_value(object)
        .and_then(serde_json::from_value)
        .map_err(|e| {
            ConversionError(vec![format!(
                "{kind} {}: {e}",
                object.metadata.name.as_deref().unwrap_or_default()
            )])
        })
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::now())
}

impl Platform for Aws {
    fn name(&self) -> &'static str {
        conversion::infrastructure::AWS_PLATFORM
    }

    fn machine_to_capi(&self, machine: &mapi::Machine) -> Result<Converted<CapiMachine>, ConversionError> {
        let objects = mapi_to_capi::convert_machine(machine, &self.infra).map_err(errors)?;
        let status = mapi_to_capi::convert_machine_status(machine, &now()).map_err(errors)?;
        let mapi_to_capi::CapiMachine {
            mut machine,
            mut aws_machine,
            ..
        } = objects.value;
        machine.status = Some(status.value.machine);
        aws_machine.status = Some(status.value.aws_machine);
        let mut warnings = objects.warnings;
        warnings.extend(status.warnings);
        Ok(converted(
            CapiMachine {
                machine,
                infra: dynamic(&aws_machine)?,
            },
            &warnings,
        ))
    }

    fn machine_to_mapi(
        &self,
        machine: &capi::Machine,
        infra: &DynamicObject,
    ) -> Result<Converted<mapi::Machine>, ConversionError> {
        let aws_machine: AwsMachine = typed(infra, "AWSMachine")?;
        let objects = capi_to_mapi::convert_machine(machine, &aws_machine, &self.infra).map_err(errors)?;
        let status = capi_to_mapi::convert_machine_status(machine, &aws_machine, &now()).map_err(errors)?;
        let mut out = objects.value;
        out.status = Some(status.value);
        let mut warnings = objects.warnings;
        warnings.extend(status.warnings);
        Ok(converted(out, &warnings))
    }

    fn machine_set_to_capi(
        &self,
        set: &mapi::MachineSet,
    ) -> Result<Converted<CapiMachineSet>, ConversionError> {
        let objects = mapi_to_capi::convert_machine_set(set, &self.infra).map_err(errors)?;
        let status = mapi_to_capi::convert_machine_set_status(set, &now()).map_err(errors)?;
        let mapi_to_capi::CapiMachineSet {
            mut machine_set,
            template,
        } = objects.value;
        machine_set.status = Some(status.value);
        let mut warnings = objects.warnings;
        warnings.extend(status.warnings);
        Ok(converted(
            CapiMachineSet {
                set: machine_set,
                template: dynamic(&template)?,
            },
            &warnings,
        ))
    }

    fn machine_set_to_mapi(
        &self,
        set: &capi::MachineSet,
        template: &DynamicObject,
    ) -> Result<Converted<mapi::MachineSet>, ConversionError> {
        let template: AwsMachineTemplate = typed(template, "AWSMachineTemplate")?;
        let objects = capi_to_mapi::convert_machine_set(set, &template, &self.infra).map_err(errors)?;
        let status = capi_to_mapi::convert_machine_set_status(set).map_err(errors)?;
        let mut out = objects.value;
        out.status = Some(status.value);
        let mut warnings = objects.warnings;
        warnings.extend(status.warnings);
        Ok(converted(out, &warnings))
    }
}
