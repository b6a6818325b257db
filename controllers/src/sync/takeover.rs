//! The sync's own guard against taking over a Cluster API object it did not create.
//!
//! A MachineAPI-authoritative MAPI object's mirror is applied with force: the conversion
//! replaces the CAPI object's spec. When a CAPI object of that name already exists that
//! the sync never wrote (a MachineSet made by hand, another tool's), the apply would
//! destroy it (its `infrastructureRef` replaced). Admission policies refuse creating such
//! a MAPI object; without them (another distribution, an admin, `failurePolicy: Ignore`)
//! this guard refuses the sync: `Synchronized=False` (`CAPIObjectNotCreatedBySync`), a
//! Warning Event, nothing written, until one of the two changes.
//!
//! The CAPI object counts as the pair's when the sync ever wrote it: it carries the sync
//! finalizer, or a managed-fields entry of a sync controller (the caches keep every
//! entry's manager). A pair that was synchronized before (migrated either way) is the
//! pair's too: the MAPI object's `status.synchronizedAPI` or `synchronizedGeneration`.

use kube::{Resource, ResourceExt};
use sync_core::MapiObject;
use sync_core::toolkit::SYNC_FINALIZER;

/// The field managers of the controllers that write a pair (each writes under its name
/// or a name it prefixes).
pub const SYNC_MANAGERS: &[&str] = &[
    super::MACHINE_CONTROLLER,
    super::MACHINE_SET_CONTROLLER,
    "MachineMigrationController",
    "MachineSetMigrationController",
];

/// The reason of the refusal.
pub const REASON: &str = "CAPIObjectNotCreatedBySync";

/// The refusal's message when `capi` exists but belongs to someone else than the pair of
/// `mapi`; `managers` are the sync's field managers' prefixes.
pub fn foreign_capi<M, C>(mapi: &M, capi: Option<&C>, managers: &[&str]) -> Option<String>
where
    M: MapiObject,
    C: Resource<DynamicType = ()>,
{
    let capi = capi?;
    let synchronized_before = mapi
        .sync_status()
        .is_some_and(|s| s.synchronized_api.is_some() || s.synchronized_generation.is_some());
    let written_by_sync = capi.finalizers().iter().any(|f| f == SYNC_FINALIZER)
        || capi
            .meta()
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|e| e.manager.as_deref())
            .any(|manager| managers.iter().any(|m| manager.starts_with(m)));
    if synchronized_before || written_by_sync {
        return None;
    }
    let kind = C::kind(&());
    Some(format!(
        "the Cluster API {kind} {}/{} exists and was not created by the sync; it is not written over. \
         Delete it or give this {kind} another name to mirror it, or set spec.authoritativeAPI: ClusterAPI \
         to make it the authoritative side",
        capi.namespace().unwrap_or_default(),
        capi.name_any()
    ))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
    use sync_core::api::{SyncStatus, capi, mapi};

    use super::*;

    const MANAGERS: &[&str] = &["MachineSetSyncController"];

    fn capi_set(finalizers: &[&str], managers: &[&str]) -> capi::MachineSet {
        let mut set = capi::MachineSet::new("s", capi::MachineSetSpec::default());
        set.metadata.namespace = Some("openshift-cluster-api".into());
        set.metadata.finalizers = Some(finalizers.iter().map(|f| (*f).to_owned()).collect());
        set.metadata.managed_fields = Some(
            managers
                .iter()
                .map(|m| ManagedFieldsEntry {
                    manager: Some((*m).to_owned()),
                    ..Default::default()
                })
                .collect(),
        );
        set
    }

    fn mapi_set(synchronized_generation: Option<i64>) -> mapi::MachineSet {
        let mut set = mapi::MachineSet::new("s", mapi::MachineSetSpec::default());
        set.status = Some(mapi::MachineSetStatus {
            sync: SyncStatus {
                synchronized_generation,
                ..Default::default()
            },
            ..Default::default()
        });
        set
    }

    #[test]
    fn a_capi_object_made_by_someone_else_for_a_never_synchronized_pair_is_refused() {
        let foreign = capi_set(
            &["cluster.x-k8s.io/machineset"],
            &["kubectl-create", "capi-controller"],
        );
        let message = foreign_capi(&mapi_set(None), Some(&foreign), MANAGERS);
        assert_eq!(
            message.as_deref(),
            Some(
                "the Cluster API MachineSet openshift-cluster-api/s exists and was not created by the sync; \
                 it is not written over. Delete it or give this MachineSet another name to mirror it, or set \
                 spec.authoritativeAPI: ClusterAPI to make it the authoritative side"
            )
        );
    }

    #[test]
    fn no_capi_object_or_one_the_sync_wrote_or_a_synchronized_pair_is_the_pair_s() {
        let none: Option<&capi::MachineSet> = None;
        assert_eq!(foreign_capi(&mapi_set(None), none, MANAGERS), None);
        let finalized = capi_set(&[SYNC_FINALIZER], &[]);
        assert_eq!(foreign_capi(&mapi_set(None), Some(&finalized), MANAGERS), None);
        let applied = capi_set(&[], &["MachineSetSyncController"]);
        assert_eq!(foreign_capi(&mapi_set(None), Some(&applied), MANAGERS), None);
        let foreign = capi_set(&[], &["kubectl-create"]);
        assert_eq!(foreign_capi(&mapi_set(Some(3)), Some(&foreign), MANAGERS), None);
    }
}
