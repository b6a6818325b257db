//! Machine API ⇄ Cluster API conversion for AWS: pure functions, no I/O.
//!
//! | direction | input | output |
//! |---|---|---|
//! | [`mapi_to_capi::convert_machine`] | MAPI Machine (AWS providerSpec) | CAPI Machine + `AWSMachine` + the owner to point at |
//! | [`mapi_to_capi::convert_machine_set`] | MAPI MachineSet | CAPI MachineSet + `AWSMachineTemplate` named `<set>-<fnv32a hash>` |
//! | [`capi_to_mapi::convert_machine`] | CAPI Machine + `AWSMachine` | MAPI Machine |
//! | [`capi_to_mapi::convert_machine_set`] | CAPI MachineSet + `AWSMachineTemplate` | MAPI MachineSet |
//! | [`mapi_to_capi::convert_machine_status`], [`capi_to_mapi::convert_machine_status`] | one side's status | the other side's status (Machine and infrastructure machine) |
//! | [`mapi_to_capi::convert_machine_set_status`], [`capi_to_mapi::convert_machine_set_status`] | one side's status | the other side's |
//!
//! Every conversion takes the cluster's facts as a value, [`AwsInfrastructure`], read once
//! from `infrastructures.config.openshift.io/cluster` with
//! [`AwsInfrastructure::from_infrastructure`]. It returns a [`Converted`] value with its
//! [`Warning`]s (lossy but acceptable), or [`ConversionErrors`] listing **every** field that
//! cannot be represented on the other side, each with its path in the source object
//! ([`FieldPath`], e.g. `spec.providerSpec.value.blockDevices[1].ebs.deleteOnTermination`).
//! Nothing is dropped silently: a field is converted, reported as an error, or (for a few,
//! documented at the function) deliberately ignored because the other side derives it.
//!
//! # How a sync hook calls it
//!
//! ```no_run
//! # fn hook(
//! #     infrastructure: &sync_core::api::Infrastructure,
//! #     mapi_machine: &sync_core::api::mapi::Machine,
//! #     mapi_set: &sync_core::api::mapi::MachineSet,
//! # ) -> Result<(), conversion::ConversionErrors> {
//! use conversion::{AwsInfrastructure, capi_to_mapi, mapi_to_capi};
//!
//! let infra = AwsInfrastructure::from_infrastructure(infrastructure)?;
//!
//! // MAPI authoritative: build (or compare with) the CAPI mirror and its AWSMachine.
//! let converted = mapi_to_capi::convert_machine(mapi_machine, &infra)?;
//! for warning in &converted.warnings { /* Event `ConversionWarning` */ }
//! let mapi_to_capi::CapiMachine { mut machine, mut aws_machine, owner } = converted.value;
//! // The hook owns identity and lifecycle: owner references (with uids, `owner` names the
//! // target), the paused annotation, the sync finalizer, resourceVersion for the update.
//! // aws_machine gets `mapi_to_capi::infra_machine_owner(&created_machine)`.
//!
//! // Status, only when the MAPI object's synchronizedGeneration == generation:
//! let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default());
//! let status = mapi_to_capi::convert_machine_status(mapi_machine, &now)?.value;
//! // status.machine → CAPI Machine /status (observedGeneration = the CAPI generation),
//! // status.aws_machine → AWSMachine /status.
//!
//! // MachineSets: the template is immutable, its name is a hash of its spec.
//! let set = mapi_to_capi::convert_machine_set(mapi_set, &infra)?.value;
//! // create set.template if no template of that name exists, point set.machine_set at it
//! // (it already is), then delete the other templates labelled
//! // `machine.openshift.io/cluster-api-machineset=<set>`.
//!
//! // CAPI authoritative: the reverse, from the CAPI object and its infrastructure object.
//! # let (capi_machine, aws_machine_obj): (sync_core::api::capi::Machine, conversion::aws::capa::AwsMachine) = todo!();
//! let mapi = capi_to_mapi::convert_machine(&capi_machine, &aws_machine_obj, &infra)?.value;
//! // Keep the existing MAPI object's spec.authoritativeAPI and finalizers when updating.
//! # Ok(()) }
//! ```
//!
//! Identity and lifecycle fields — uid, resourceVersion, generation, owner references'
//! uids, the sync finalizer, the paused annotation, `observedGeneration` — are the hook's:
//! the conversion cannot know them and never guesses.

pub mod aws;
pub mod capi_to_mapi;
mod decode;
pub mod errors;
pub mod infrastructure;
pub mod mapi_to_capi;
mod meta;
pub mod names;
pub mod openstack;
pub mod powervs;
pub mod provider;

pub use errors::{ConversionErrors, ConversionResult, Converted, ErrorKind, FieldError, FieldPath, Warning};
pub use infrastructure::{AwsInfrastructure, IpFamily};
