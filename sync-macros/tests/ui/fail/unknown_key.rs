use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, infra_rf = spec.infrastructure_ref)]
pub struct MachineSync;

fn main() {}
