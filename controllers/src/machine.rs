//! The Machine pair: MAPI Machines ⇄ CAPI Machines.
use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

/// Mirrors Machine API Machines and Cluster API Machines.
#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    infra_ref = spec.infrastructure_ref,
    capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
)]
pub struct MachineSync;
