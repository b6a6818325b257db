use sync_macros::sync_controller;

// A quoted type and an expression where a type path belongs.
#[sync_controller(mapi = "mapi::Machine", capi = capi::Machine::default())]
pub struct MachineSync;

fn main() {}
