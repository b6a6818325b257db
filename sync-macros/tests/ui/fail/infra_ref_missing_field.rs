use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

#[sync_controller(
    mapi = mapi::MachineSet,
    capi = capi::MachineSet,
    infra_ref = spec.template.infrastructure_ref,
)]
pub struct MachineSetSync;

fn main() {}
