use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

// The two kinds swapped: the diagnostic says which side takes which API.
#[sync_controller(mapi = capi::Machine, capi = mapi::Machine)]
pub struct MachineSync;

fn main() {}
