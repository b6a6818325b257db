use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine)]
pub struct MachineSync<T> {
    hooks: T,
}

fn main() {}
