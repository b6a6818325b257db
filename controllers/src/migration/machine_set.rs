//! The MachineSet migration controller: a follower of the MachineSet sync
//! ([`sync_core::SyncController::follower`]) under a name of its own (logs, metrics,
//! Events). It reads the sync's caches, and the sync's watches of both sides and of the
//! InfraMachineTemplates queue its names; it runs the protocol of [`super`] instead of
//! the sync hooks.
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use sync_core::api::{AuthoritativeApi, capi, mapi};

use super::protocol::{MigratingPair, Migrator};
use crate::machine_set::MachineSetSync;

/// The MachineSet migration controller's hooks.
pub type MachineSetMigrationHooks = Migrator<MachineSetSync>;

impl MigratingPair for MachineSetSync {
    const MIGRATION: &'static str = "machineset-migration";

    const CONTROLLER: &'static str = "MachineSetMigrationController";

    const INFRA_REPORTS_PAUSED: bool = false;

    fn requested(mapi: &mapi::MachineSet) -> Option<&AuthoritativeApi> {
        mapi.spec.authoritative_api.as_ref()
    }

    fn capi_conditions(capi: &capi::MachineSet) -> &[Condition] {
        capi.status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
    }
}
