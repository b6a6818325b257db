use sync_macros::sync_controller;

#[sync_controller(capi = capi::Machine, infra_ref = spec.infrastructure_ref)]
pub struct MachineSync;

fn main() {}
