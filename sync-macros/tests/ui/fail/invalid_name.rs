use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, name = "Machine_Sync")]
pub struct MachineSync;

#[sync_controller(mapi = mapi::MachineSet, capi = capi::MachineSet, name = machine_set_sync)]
pub struct MachineSetSync;

fn main() {}
