//! `custom_hooks`: the user's impl overrides one hook with real (async) logic and keeps the
//! stubs for the others.
use std::time::Duration;

use kube::Resource;
use sync_core::api::{capi, mapi};
use sync_core::{Action, HookResult, SyncContext, SyncHooks, SyncObjects};
use sync_macros::sync_controller;

/// Mirrors Machine API Machines and Cluster API Machines.
#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    infra_ref = spec.infrastructure_ref,
    capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
    custom_hooks,
)]
pub struct MachineSync;

impl SyncHooks<MachineSync> for MachineSync {
    async fn reconcile_capi_to_mapi(
        &self,
        objects: &SyncObjects<MachineSync>,
        ctx: &SyncContext<MachineSync>,
    ) -> HookResult {
        let Some(capi) = objects.capi.as_deref() else {
            return Ok(Action::await_change());
        };
        if objects.mapi.is_none() {
            // A CAPI-only Machine of a mirrored MachineSet: announce the mirror to come.
            let infra = objects
                .infra_ref()
                .map_or_else(|| "no infrastructure".to_owned(), ToString::to_string);
            ctx.inform(
                &capi.object_ref(&()),
                "MirrorPending",
                format!("a MAPI mirror of {} ({infra}) will be created", objects.name),
            )
            .await;
            return Ok(Action::requeue(Duration::from_secs(5)));
        }
        Ok(Action::await_change())
    }
}

#[test]
fn expands() {
    fn assert_hooks<H: SyncHooks<MachineSync>>(_: &H) {}
    assert_hooks(&MachineSync);
}
