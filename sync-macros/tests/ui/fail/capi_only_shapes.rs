use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, capi_only = mirror_if_owner_mirrored())]
pub struct EmptySync;

#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    capi_only = mirror_if_owner_mirrored(mapi::MachineSet, mapi::Machine),
)]
pub struct TwoOwnersSync;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, capi_only = ignore(mapi::MachineSet))]
pub struct IgnoreWithOwnerSync;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, capi_only = "ignore")]
pub struct QuotedSync;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, capi_only = mirror_if_owner_mirrored("mapi::MachineSet"))]
pub struct QuotedOwnerSync;

fn main() {}
