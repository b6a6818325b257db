//! The MachineSet pair: MAPI MachineSets ⇄ CAPI MachineSets.
use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

/// Mirrors Machine API MachineSets and Cluster API MachineSets.
#[sync_controller(
    mapi = mapi::MachineSet,
    capi = capi::MachineSet,
    infra_ref = spec.template.spec.infrastructure_ref,
)]
pub struct MachineSetSync;
