//! Machine API → Cluster API on AWS: a MAPI Machine becomes a CAPI Machine and an
//! `AWSMachine`; a MAPI MachineSet a CAPI MachineSet and an `AWSMachineTemplate`. The
//! shared part is [`crate::machine::to_capi`]; this module types its output.

mod fields;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use sync_core::api::{capi, mapi};

pub(crate) use self::fields::{Context, dual_stack_dns_name, to_aws_machine_spec};
pub use self::fields::{DEFAULT_CREDENTIALS_SECRET, DEFAULT_ROOT_VOLUME_SIZE};
use crate::aws::capa::{
    AwsMachine, AwsMachineStatus, AwsMachineTemplate, AwsMachineTemplateSpec, awsmachinetemplates,
};
use crate::aws::infrastructure::AwsInfrastructure;
use crate::aws::provider::AwsMachineProviderConfig;
use crate::decode::decode;
use crate::errors::{ConversionResult, Converted, FieldPath, Report};
use crate::machine;
pub use crate::machine::status::selector_string;
pub use crate::machine::to_capi::{CapiOwner, infra_machine_owner, machine_owner_reference};

/// A MAPI Machine as Cluster API objects.
#[derive(Clone, Debug, PartialEq)]
pub struct CapiMachine {
    /// The CAPI Machine: same name, CAPI namespace; no status, no owner references.
    pub machine: capi::Machine,
    /// Its `AWSMachine`: same name, same labels and annotations; no owner references (see
    /// [`infra_machine_owner`]).
    pub aws_machine: AwsMachine,
    /// What the CAPI Machine must be owned by.
    pub owner: CapiOwner,
}

/// A MAPI MachineSet as Cluster API objects.
#[derive(Clone, Debug, PartialEq)]
pub struct CapiMachineSet {
    /// The CAPI MachineSet, its template pointing at `template`; no status.
    pub machine_set: capi::MachineSet,
    /// The `AWSMachineTemplate`, named `<set>-<hash of its spec>` and labelled
    /// `machine.openshift.io/cluster-api-machineset=<set>`. Immutable: a different spec is a
    /// different name.
    pub template: AwsMachineTemplate,
}

/// The status of both Cluster API objects a MAPI Machine becomes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CapiMachineStatus {
    /// For the CAPI Machine's `/status`.
    pub machine: capi::MachineStatus,
    /// For the `AWSMachine`'s `/status`.
    pub aws_machine: AwsMachineStatus,
}

/// Converts a MAPI Machine with an AWS providerSpec (see [`machine::to_capi::machine`];
/// every providerSpec field is mapped to the `AWSMachine` or reported).
pub fn convert_machine(machine: &mapi::Machine, infra: &AwsInfrastructure) -> ConversionResult<CapiMachine> {
    Ok(
        machine::to_capi::machine(infra, machine)?.map(|parts| CapiMachine {
            machine: parts.machine,
            aws_machine: AwsMachine {
                metadata: parts.infra_meta,
                spec: parts.infra_spec,
                status: None,
            },
            owner: parts.owner,
        }),
    )
}

/// Converts a MAPI MachineSet with an AWS providerSpec in its template (see
/// [`machine::to_capi::machine_set`]).
pub fn convert_machine_set(
    set: &mapi::MachineSet,
    infra: &AwsInfrastructure,
) -> ConversionResult<CapiMachineSet> {
    let Converted {
        value: parts,
        warnings,
    } = machine::to_capi::machine_set(infra, set)?;
    let mut report = Report::with_warnings(warnings);
    let path = FieldPath::new("spec.template.spec.providerSpec.value");
    let spec = super::retype(&parts.template_spec, &path, &mut report);
    report.finish(CapiMachineSet {
        machine_set: parts.machine_set,
        template: AwsMachineTemplate {
            metadata: parts.template_meta,
            spec: AwsMachineTemplateSpec {
                template: awsmachinetemplates::AwsMachineTemplateTemplate { metadata: None, spec },
            },
            status: None,
        },
    })
}

/// The CAPI Machine and `AWSMachine` status of a MAPI Machine (see
/// [`machine::status::machine_to_capi`] and the `AWSMachine`'s in `aws::status`).
pub fn convert_machine_status(machine: &mapi::Machine, now: &Time) -> ConversionResult<CapiMachineStatus> {
    let mut report = Report::default();
    let no_status = mapi::MachineStatus::default();
    let status = machine.status.as_ref().unwrap_or(&no_status);
    let capi = machine::status::machine_to_capi(machine, now, &mut report);
    let aws = super::status::to_aws_status(status, is_spot(&machine.spec), now, &mut report);
    report.finish(CapiMachineStatus {
        machine: capi,
        aws_machine: aws,
    })
}

pub use crate::machine::status::machine_set_to_capi as convert_machine_set_status;

/// The providerSpec asks for a spot instance (the `AWSMachine` is interruptible).
fn is_spot(spec: &mapi::MachineSpec) -> bool {
    let raw = spec.provider_spec.as_ref().and_then(|p| p.value.as_ref());
    raw.and_then(|raw| decode::<AwsMachineProviderConfig>(raw.as_str(), &FieldPath::default()).ok())
        .is_some_and(|decoded| decoded.value.spot_market_options.is_some())
}
