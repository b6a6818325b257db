use sync_core::api::{capi, mapi};
use sync_core::{Action, HookResult, SyncContext, SyncHooks, SyncObjects};
use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, custom_hooks)]
pub struct MachineSync;

impl SyncHooks<MachineSync> for MachineSync {
    // A hook is an `async fn`.
    fn reconcile_mapi_to_capi(
        &self,
        _objects: &SyncObjects<MachineSync>,
        _ctx: &SyncContext<MachineSync>,
    ) -> HookResult {
        Ok(Action::await_change())
    }
}

fn main() {}
