//! The conversion a platform provides between the two APIs' objects.
//!
//! The hooks are platform-neutral: they ask a [`Platform`] for the mirror of an object and
//! write it. A platform without one (see [`super::Cluster::platform`]) is not synced.

use kube::api::DynamicObject;
use sync_core::api::{capi, mapi};

/// A converted object and the conversion's warnings (fields it had to approximate).
#[derive(Clone, Debug)]
pub struct Converted<T> {
    /// The object, with `status` converted too.
    pub value: T,
    /// Human-readable warnings, published as `ConversionWarning` Events.
    pub warnings: Vec<String>,
}

/// A conversion failed: every unsupported or invalid field, with its path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("; "))]
pub struct ConversionError(pub Vec<String>);

/// The CAPI side of a MAPI Machine.
#[derive(Clone, Debug)]
pub struct CapiMachine {
    /// The Machine.
    pub machine: capi::Machine,
    /// Its InfraMachine (e.g. an `AWSMachine`), named like the Machine.
    pub infra: DynamicObject,
}

/// The CAPI side of a MAPI MachineSet.
#[derive(Clone, Debug)]
pub struct CapiMachineSet {
    /// The MachineSet; its template's `infrastructureRef` names `template`.
    pub set: capi::MachineSet,
    /// Its InfraMachineTemplate, named `<set>-<hash of its spec>`.
    pub template: DynamicObject,
}

/// The conversions of one platform.
pub trait Platform: Send + Sync + 'static {
    /// `AWS`, as in `Infrastructure.status.platformStatus.type`.
    fn name(&self) -> &'static str;
    /// MAPI Machine → CAPI Machine and InfraMachine.
    fn machine_to_capi(&self, machine: &mapi::Machine) -> Result<Converted<CapiMachine>, ConversionError>;
    /// CAPI Machine and InfraMachine → MAPI Machine.
    fn machine_to_mapi(
        &self,
        machine: &capi::Machine,
        infra: &DynamicObject,
    ) -> Result<Converted<mapi::Machine>, ConversionError>;
    /// MAPI MachineSet → CAPI MachineSet and InfraMachineTemplate.
    fn machine_set_to_capi(
        &self,
        set: &mapi::MachineSet,
    ) -> Result<Converted<CapiMachineSet>, ConversionError>;
    /// CAPI MachineSet and InfraMachineTemplate → MAPI MachineSet.
    fn machine_set_to_mapi(
        &self,
        set: &capi::MachineSet,
        template: &DynamicObject,
    ) -> Result<Converted<mapi::MachineSet>, ConversionError>;
}
