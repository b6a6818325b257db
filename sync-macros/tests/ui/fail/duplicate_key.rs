use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, mapi = mapi::MachineSet)]
pub struct MachineSync;

fn main() {}
