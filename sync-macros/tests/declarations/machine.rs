//! The real Machine declaration (controllers/src/machine.rs).
use sync_core::api::{capi, mapi};
use sync_macros::sync_controller;

/// Mirrors Machine API Machines and Cluster API Machines.
#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    infra_ref = spec.infrastructure_ref,
    capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
)]
pub struct MachineSync;

#[test]
fn expands() {
    use sync_core::api::{ContractVersionedObjectReference, InfraRef};
    use sync_core::{CapiOnly, SyncPair};

    assert_eq!(MachineSync::NAME, "machine-sync");
    assert_eq!(MachineSync::CAPI_ONLY, CapiOnly::MirrorIfOwnerMirrored);

    let mut machine = capi::Machine::new("worker-a", capi::MachineSpec::default());
    assert_eq!(MachineSync::infra_ref(&machine), Ok(None));
    machine.spec.infrastructure_ref = ContractVersionedObjectReference {
        api_group: "infrastructure.cluster.x-k8s.io".into(),
        kind: "AWSMachine".into(),
        name: "worker-a".into(),
    };
    assert_eq!(
        MachineSync::infra_ref(&machine),
        Ok(Some(InfraRef {
            group: "infrastructure.cluster.x-k8s.io".into(),
            version: None,
            kind: "AWSMachine".into(),
            name: "worker-a".into(),
        }))
    );
}
