use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, infra_ref = spec.provider_id)]
pub struct MachineSync;

fn main() {}
