use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine)]
pub struct MachineSync;

fn main() {}
