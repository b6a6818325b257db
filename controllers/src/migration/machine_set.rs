//! The MachineSet migration controller: a second declaration of the MachineSet pair, so that it
//! has its own name (logs, metrics, Events), watches both sides and the InfraMachineTemplates
//! (upstream #300: a migration stuck because CAPI objects were not watched), and runs the
//! protocol of [`super`] instead of the sync hooks.
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_macros::sync_controller;

use super::protocol::{MigratingPair, Migrator};

/// Hands MachineSets over between the Machine API and Cluster API. Run with
/// `SyncController::run_migration`; its sync hooks are the unused stubs.
#[sync_controller(
    mapi = mapi::MachineSet,
    capi = capi::MachineSet,
    infra_ref = spec.template.spec.infrastructure_ref,
    name = "machineset-migration",
)]
pub struct MachineSetMigration;

/// The MachineSet migration controller's hooks.
pub type MachineSetMigrationHooks = Migrator<MachineSetMigration>;

impl MigratingPair for MachineSetMigration {
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
