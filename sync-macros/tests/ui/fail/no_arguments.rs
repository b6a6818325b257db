use sync_macros::sync_controller;

#[sync_controller]
pub struct MachineSync;

fn main() {}
