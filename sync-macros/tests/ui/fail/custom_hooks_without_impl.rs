use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, custom_hooks)]
pub struct MachineSync;

fn main() {}
