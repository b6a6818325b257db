use sync_core::SyncHooks;
use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

// The stubs are generated unless `custom_hooks` is given: a second impl conflicts.
#[sync_controller(mapi = mapi::Machine, capi = capi::Machine)]
pub struct MachineSync;

impl SyncHooks<MachineSync> for MachineSync {}

fn main() {}
