use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

// The owner mirror lives on the Machine API side: a CAPI type is a mistake.
#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    capi_only = mirror_if_owner_mirrored(capi::MachineSet),
)]
pub struct MachineSync;

fn main() {}
