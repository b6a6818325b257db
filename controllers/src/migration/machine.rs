//! The Machine migration controller: a follower of the Machine sync
//! ([`sync_core::SyncController::follower`]) under a name of its own (logs, metrics,
//! Events). It reads the sync's caches, and the sync's watches of both sides and of the
//! InfraMachines queue its names (upstream #300: a migration stuck because CAPI objects
//! were not watched); it runs the protocol of [`super`] instead of the sync hooks.
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use sync_core::api::{AuthoritativeApi, capi, mapi};

use super::protocol::{MigratingPair, Migrator};
use crate::machine::MachineSync;

/// The Machine migration controller's hooks.
pub type MachineMigrationHooks = Migrator<MachineSync>;

impl MigratingPair for MachineSync {
    const MIGRATION: &'static str = "machine-migration";

    const CONTROLLER: &'static str = "MachineMigrationController";

    const INFRA_REPORTS_PAUSED: bool = true;

    fn requested(mapi: &mapi::Machine) -> Option<&AuthoritativeApi> {
        mapi.spec.authoritative_api.as_ref()
    }

    fn capi_conditions(capi: &capi::Machine) -> &[Condition] {
        capi.status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default()
    }
}
