//! The real MachineSet declaration (controllers/src/machine_set.rs).
use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

/// Mirrors Machine API MachineSets and Cluster API MachineSets.
#[sync_controller(
    mapi = mapi::MachineSet,
    capi = capi::MachineSet,
    infra_ref = spec.template.spec.infrastructure_ref,
)]
pub struct MachineSetSync;

#[test]
fn expands() {
    use sync_core::api::ContractVersionedObjectReference;
    use sync_core::{CapiOnly, NoOwner, SyncPair};

    assert_eq!(MachineSetSync::NAME, "machine-set-sync");
    assert_eq!(MachineSetSync::CAPI_ONLY, CapiOnly::Ignore);
    let _: Option<<MachineSetSync as SyncPair>::OwnerMirror> = None::<NoOwner>;

    let mut set = capi::MachineSet::new("workers", capi::MachineSetSpec::default());
    set.spec.template.spec.infrastructure_ref = ContractVersionedObjectReference {
        api_group: "infrastructure.cluster.x-k8s.io".into(),
        kind: "AWSMachineTemplate".into(),
        name: "workers".into(),
    };
    let infra = MachineSetSync::infra_ref(&set).ok().flatten().map(|r| r.kind);
    assert_eq!(infra.as_deref(), Some("AWSMachineTemplate"));
}
