use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, custom_hooks = true)]
pub struct MachineSync;

fn main() {}
