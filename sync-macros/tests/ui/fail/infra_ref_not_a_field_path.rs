use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, infra_ref = "spec.infrastructure_ref")]
pub struct QuotedSync;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, infra_ref = spec.infrastructure_ref())]
pub struct MethodSync;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, infra_ref = capi::Machine.spec)]
pub struct TypePathSync;

fn main() {}
