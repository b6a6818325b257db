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

// Step 3: declare the pair.
/// Mirrors Machine API and Cluster API MachineHealthChecks.
#[sync_controller(mapi = mapi::MachineHealthCheck, capi = capi::MachineHealthCheck)]
pub struct MachineHealthCheckSync;
