use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine)]
pub union MachineSync {
    id: u32,
}

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine)]
pub fn machine_sync() {}

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine)]
pub mod machine_sync {}

fn main() {}
