//! Cluster API → Machine API on AWS: a CAPI Machine and its `AWSMachine` become a MAPI
//! Machine, a CAPI MachineSet and its `AWSMachineTemplate` a MAPI MachineSet. The shared
//! part is [`crate::machine::to_mapi`]; this module takes the typed AWS objects.

mod fields;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sync_core::api::{capi, mapi};

pub(crate) use self::fields::{MachineFacts, to_provider_config};
use crate::aws::capa::{AwsMachine, AwsMachineSpec, AwsMachineTemplate};
use crate::aws::infrastructure::AwsInfrastructure;
use crate::errors::{ConversionResult, FieldPath, Report};
use crate::machine;
pub use crate::machine::status::machine_set_to_mapi as convert_machine_set_status;

/// Where the paths of errors in the `AWSMachine` start (the CAPI Machine's start at `spec`
/// or `metadata`).
pub const AWS_MACHINE_PATH: &str = "awsMachine.spec";
/// Where the paths of errors in the `AWSMachineTemplate` start.
pub const AWS_MACHINE_TEMPLATE_PATH: &str = "awsMachineTemplate.spec.template.spec";

/// Converts a CAPI Machine and its `AWSMachine` (see [`machine::to_mapi::machine`]): the
/// providerSpec from the `AWSMachine` spec, the region from the infrastructure,
/// credentials the default secret; the `AWSMachine`'s `providerID`/`instanceID` are
/// ignored (the CAPI Machine's `providerID` is copied).
pub fn convert_machine(
    machine: &capi::Machine,
    aws_machine: &AwsMachine,
    infra: &AwsInfrastructure,
) -> ConversionResult<mapi::Machine> {
    let state = aws_machine
        .status
        .as_ref()
        .and_then(|s| s.instance_state.as_deref());
    machine::to_mapi::machine(
        infra,
        machine,
        &aws_machine.spec,
        state,
        &FieldPath::new(AWS_MACHINE_PATH),
    )
}

/// Converts a CAPI MachineSet and its `AWSMachineTemplate` (see
/// [`machine::to_mapi::machine_set`]).
pub fn convert_machine_set(
    set: &capi::MachineSet,
    template: &AwsMachineTemplate,
    infra: &AwsInfrastructure,
) -> ConversionResult<mapi::MachineSet> {
    let path = FieldPath::new(AWS_MACHINE_TEMPLATE_PATH);
    let mut report = Report::default();
    let spec: AwsMachineSpec = super::retype(&template.spec.template.spec, &path, &mut report);
    // With errors absorbed, the placeholder is never returned.
    let converted = report.absorb(machine::to_mapi::machine_set(infra, set, &spec, &path));
    report.finish(converted.unwrap_or_default())
}

/// The MAPI Machine status of a CAPI Machine and its `AWSMachine` (see
/// [`machine::status::machine_to_mapi`]): a providerStatus with the instance state,
/// instance ID, dedicated host and the `MachineCreation` condition.
pub fn convert_machine_status(
    machine: &capi::Machine,
    aws_machine: &AwsMachine,
    now: &Time,
) -> ConversionResult<mapi::MachineStatus> {
    let mut report = Report::default();
    let status = aws_machine.status.clone().unwrap_or_default();
    let provider = super::status::to_provider_status(&aws_machine.spec, &status, now);
    let value = machine::status::machine_to_mapi(machine, provider.value.as_ref(), &mut report);
    report.finish(value)
}
