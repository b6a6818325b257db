use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, capi_only = always)]
pub struct MachineSync;

fn main() {}
