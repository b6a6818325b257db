//! One mistake in the attribute is one error: the pair's uses (the controller, the hooks
//! impl, the imports) still compile against the placeholder impls.
use sync_core::api::{capi, mapi};
use sync_core::{HookResult, SyncConfig, SyncContext, SyncController, SyncHooks, SyncObjects};
use sync_macros::sync_controller;

/// A value of the wrong shape.
#[sync_controller(mapi = mapi::Machine, capi = capi::Machine, capi_only = always)]
pub struct MachineSync;

/// An unknown key (darling rejects the whole list), with custom hooks.
#[sync_controller(
    mapi = mapi::MachineSet,
    capi = capi::MachineSet,
    infra_rf = spec.template.spec.infrastructure_ref,
    custom_hooks,
)]
pub struct MachineSetSync;

impl SyncHooks<MachineSetSync> for MachineSetSync {
    async fn reconcile_mapi_to_capi(
        &self,
        objects: &SyncObjects<MachineSetSync>,
        _ctx: &SyncContext<MachineSetSync>,
    ) -> HookResult {
        let _replicas = objects.mapi.as_ref().and_then(|set| set.spec.replicas);
        Ok(sync_core::Action::await_change())
    }
}

async fn run(client: kube::Client) {
    SyncController::<MachineSync>::new(client.clone(), SyncConfig::default())
        .run(MachineSync, async {})
        .await;
    SyncController::<MachineSetSync>::new(client, SyncConfig::default())
        .run(MachineSetSync, async {})
        .await;
}

fn main() {
    let _ = run;
}
