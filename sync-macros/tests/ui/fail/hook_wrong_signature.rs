use sync_core::api::{capi, mapi};
use sync_core::{Action, HookResult, SyncContext, SyncHooks, SyncObjects};
use sync_macros::sync_controller;

#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, custom_hooks)]
pub struct MachineSync;

impl SyncHooks<MachineSync> for MachineSync {
    // The objects are borrowed, not owned.
    async fn reconcile_mapi_to_capi(
        &self,
        objects: SyncObjects<MachineSync>,
        _ctx: &SyncContext<MachineSync>,
    ) -> HookResult {
        let _ = objects;
        Ok(Action::await_change())
    }

    // The context is missing.
    async fn reconcile_capi_to_mapi(&self, _objects: &SyncObjects<MachineSync>) -> HookResult {
        Ok(Action::await_change())
    }
}

fn main() {}
