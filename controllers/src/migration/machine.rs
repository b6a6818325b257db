//! The Machine migration controller: a second declaration of the Machine pair, so that it
//! has its own name (logs, metrics, Events), watches both sides and the InfraMachines
//! (upstream #300: a migration stuck because CAPI objects were not watched), and runs the
//! protocol of [`super`] instead of the sync hooks.
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_macros::sync_controller;

use super::protocol::{MigratingPair, Migrator};

/// Hands Machines over between the Machine API and Cluster API. Run with
/// `SyncController::run_migration`; its sync hooks are the unused stubs.
#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    infra_ref = spec.infrastructure_ref,
    name = "machine-migration",
)]
pub struct MachineMigration;

/// The Machine migration controller's hooks.
pub type MachineMigrationHooks = Migrator<MachineMigration>;

impl MigratingPair for MachineMigration {
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
