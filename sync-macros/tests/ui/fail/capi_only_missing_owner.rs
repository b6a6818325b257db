use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, capi_only = mirror_if_owner_mirrored)]
pub struct MachineSync;

fn main() {}
