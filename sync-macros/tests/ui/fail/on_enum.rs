use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine)]
pub enum MachineSync {
    Machines,
}

fn main() {}
