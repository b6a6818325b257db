//! A MachineHealthCheck pair: the example of sync-macros/ADDING_A_PAIR.md.
use sync_macros::sync_controller;

/// Step 1: the Machine API kind, whose status embeds the sync-status block.
pub mod mapi {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};
    use sync_core::api::{MapiStatus, SyncStatus};

    /// Desired state of a Machine API MachineHealthCheck.
    #[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "machine.openshift.io",
        version = "v1beta1",
        kind = "MachineHealthCheck",
        namespaced,
        status = "MachineHealthCheckStatus"
    )]
    #[serde(rename_all = "camelCase")]
    pub struct MachineHealthCheckSpec {
        /// How many machines may be unhealthy before remediation stops (`40%`).
        pub max_unhealthy: Option<String>,
    }

    /// Observed state of a Machine API MachineHealthCheck.
    #[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct MachineHealthCheckStatus {
        /// Machines the check counts as healthy.
        pub current_healthy: Option<i32>,
        /// `authoritativeAPI` (which picks the sync direction), `synchronizedAPI`,
        /// `synchronizedGeneration` and `conditions`, with their wire names and rules.
        #[serde(flatten)]
        pub sync: SyncStatus,
    }

    // Step 2: say where the block is; the kind is then a `sync_core::MapiObject`.
    impl MapiStatus for MachineHealthCheckStatus {
        fn sync_status(&self) -> &SyncStatus {
            &self.sync
        }
        fn sync_status_mut(&mut self) -> &mut SyncStatus {
            &mut self.sync
        }
    }
}

/// Step 1, continued: the Cluster API kind.
pub mod capi {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// Desired state of a Cluster API MachineHealthCheck.
    #[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
    #[kube(
        group = "cluster.x-k8s.io",
        version = "v1beta2",
        kind = "MachineHealthCheck",
        namespaced
    )]
    #[serde(rename_all = "camelCase")]
    pub struct MachineHealthCheckSpec {
        /// The cluster the checked machines belong to.
        pub cluster_name: String,
    }
}

// Step 5: declare the pair (no `infra_ref`: step 3; the default CAPI-only policy: step 4).
/// Mirrors Machine API and Cluster API MachineHealthChecks.
#[sync_controller(mapi = mapi::MachineHealthCheck, capi = capi::MachineHealthCheck)]
pub struct MachineHealthCheckSync;

/// Step 7: the business logic, as hooks of their own type, passed to `run` (with
/// `custom_hooks`, the pair's struct can carry them instead). MAPI → CAPI writes the
/// mirror with the toolkit and reports `Synchronized` on the MAPI object.
pub mod hooks {
    use kube::ResourceExt;
    use kube::api::Api;
    use sync_core::api::AuthoritativeApi;
    use sync_core::toolkit::status::{self, Synchronized};
    use sync_core::toolkit::{Part, apply};
    use sync_core::{Action, HookResult, SyncContext, SyncHooks, SyncObjects};

    use super::{MachineHealthCheckSync, capi};

    /// The field manager of every write, and the prefix of the condition's.
    pub const CONTROLLER: &str = "MachineHealthCheckSyncController";

    /// What the hooks need beyond the objects: the cluster the mirrors belong to.
    pub struct MirrorHooks {
        /// The Cluster API cluster name.
        pub cluster_name: String,
    }

    type Objects = SyncObjects<MachineHealthCheckSync>;
    type Ctx = SyncContext<MachineHealthCheckSync>;

    impl SyncHooks<MachineHealthCheckSync> for MirrorHooks {
        async fn reconcile_mapi_to_capi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
            let Some(mapi) = objects.mapi.as_deref() else {
                return Ok(Action::await_change());
            };
            let spec = capi::MachineHealthCheckSpec {
                cluster_name: self.cluster_name.clone(),
            };
            let mut mirror = capi::MachineHealthCheck::new(&mapi.name_any(), spec);
            mirror.metadata.namespace = Some(ctx.namespaces.capi.clone());
            // Server-side apply under the controller's name; nothing is sent when the live
            // mirror (`objects.capi`, from the cache) already says the same.
            let capis = Api::namespaced(ctx.client.clone(), &ctx.namespaces.capi);
            apply(&capis, CONTROLLER, objects.capi.as_deref(), &mirror, Part::Object).await?;
            // `Synchronized=True` at this generation, under a field manager of its own.
            let mapis = Api::namespaced(ctx.client.clone(), &ctx.namespaces.mapi);
            let generation = mapi.metadata.generation.unwrap_or_default();
            let done = Synchronized::done(generation, AuthoritativeApi::MachineApi);
            status::write(&mapis, CONTROLLER, mapi, &done).await?;
            Ok(Action::await_change())
        }
    }
}
