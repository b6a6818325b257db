use sync_core::api::capi;
use sync_macros::sync_controller;

// Both sides CAPI: the MAPI side must say which API is authoritative.
#[sync_controller(mapi = capi::Machine, capi = capi::Machine)]
pub struct MachineSync;

fn main() {}
