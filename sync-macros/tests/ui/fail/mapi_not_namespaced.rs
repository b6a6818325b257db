use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sync_core::api::{MapiStatus, SyncStatus, capi};
use sync_macros::sync_controller;

// `namespaced` left out of the MAPI kind's attribute: it is cluster-scoped.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(group = "machine.openshift.io", version = "v1beta1", kind = "Widget", status = "WidgetStatus")]
pub struct WidgetSpec {
    pub size: Option<i32>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct WidgetStatus {
    #[serde(flatten)]
    pub sync: SyncStatus,
}

impl MapiStatus for WidgetStatus {
    fn sync_status(&self) -> &SyncStatus {
        &self.sync
    }
    fn sync_status_mut(&mut self) -> &mut SyncStatus {
        &mut self.sync
    }
}

#[sync_controller(mapi = Widget, capi = capi::Machine)]
pub struct WidgetSync;

fn main() {}
