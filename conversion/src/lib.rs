//! Machine API ⇄ Cluster API conversion of Machines and MachineSets, per platform: pure
//! functions, no I/O.
//!
//! | layer | what it holds |
//! |---|---|
//! | [`platform`] | the seam the sync uses: [`platform::Platform`] over kind-neutral objects, and [`platform::for_cluster`], the one place that names the platforms |
//! | `machine` | what every platform shares: names, labels, annotations, owners, lifecycle hooks, bootstrap secret, failure domain, templates `<set>-<fnv32a hash>`, statuses |
//! | [`provider`] | what a platform adds: its providerSpec ⇄ its infrastructure machine spec, and their statuses |
//! | [`aws`], [`openstack`], [`powervs`] | one folder per platform: its types (hand-written MAPI providerSpec, kopium-generated provider kinds), `Provider` impl, field conversions both ways |
//!
//! Every conversion takes the cluster's facts as a value, read once from
//! `infrastructures.config.openshift.io/cluster` (and the platform's infrastructure cluster
//! object). It returns a [`Converted`] value with its [`Warning`]s (lossy but acceptable),
//! or [`ConversionErrors`] listing **every** field that cannot be represented on the other
//! side, each with its path in the source object ([`FieldPath`], e.g.
//! `spec.providerSpec.value.blockDevices[1].ebs.deleteOnTermination`). Nothing is dropped
//! silently: a field is converted, reported as an error, or (for a few, documented at the
//! function) deliberately ignored because the other side derives it.
//!
//! # How a sync hook calls it
//!
//! ```no_run
//! # fn hook(
//! #     infrastructure: &sync_core::api::Infrastructure,
//! #     mapi_machine: &sync_core::api::mapi::Machine,
//! # ) -> Result<(), conversion::ConversionErrors> {
//! use conversion::platform::{self, InfraCluster};
//!
//! let platform = platform::for_cluster(infrastructure, &InfraCluster::NotRead)?;
//! // MAPI authoritative: build (or compare with) the CAPI mirror and its infrastructure
//! // machine, statuses included.
//! let converted = platform.machine_to_capi(mapi_machine)?;
//! for warning in &converted.warnings { /* Event `ConversionWarning` */ }
//! let platform::CapiMachine { machine, infra, owner } = converted.value;
//! // The hook owns identity and lifecycle: owner references (with uids, `owner` names the
//! // target), the paused annotation, the sync finalizer, resourceVersion for the update.
//! # Ok(()) }
//! ```
//!
//! Identity and lifecycle fields — uid, resourceVersion, generation, owner references'
//! uids, the sync finalizer, the paused annotation, `observedGeneration` — are the hook's:
//! the conversion cannot know them and never guesses.

pub mod aws;
mod decode;
pub mod errors;
pub mod infrastructure;
pub(crate) mod machine;
mod meta;
pub mod names;
pub mod openstack;
pub mod platform;
pub mod powervs;
pub mod provider;

pub use aws::infrastructure::{AwsInfrastructure, IpFamily};
pub use errors::{ConversionErrors, ConversionResult, Converted, ErrorKind, FieldError, FieldPath, Warning};
