//! The well-known names both APIs agree on: namespaces, labels, annotations, finalizers,
//! and the name of an infrastructure machine template.

/// Where Machine API objects live.
pub const MAPI_NAMESPACE: &str = "openshift-machine-api";
/// Where their Cluster API mirrors live.
pub const CAPI_NAMESPACE: &str = "openshift-cluster-api";

/// The Cluster API cluster a Machine belongs to (the infrastructure name).
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// The Cluster API MachineSet a Machine belongs to.
pub const SET_NAME_LABEL: &str = "cluster.x-k8s.io/set-name";
/// Marks a Cluster API control plane Machine.
pub const CAPI_CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
/// The prefix of the node role labels Cluster API propagates to Nodes.
pub const NODE_ROLE_LABEL_PREFIX: &str = "node-role.kubernetes.io";
/// Machine API's role label (`master`, `worker`, `infra`, …).
pub const MAPI_ROLE_LABEL: &str = "machine.openshift.io/cluster-api-machine-role";
/// Machine API's type label (same values as the role).
pub const MAPI_TYPE_LABEL: &str = "machine.openshift.io/cluster-api-machine-type";
/// The instance type label the Machine API controller sets.
pub const MAPI_INSTANCE_TYPE_LABEL: &str = "machine.openshift.io/instance-type";
/// The region label the Machine API controller sets.
pub const MAPI_REGION_LABEL: &str = "machine.openshift.io/region";
/// The zone label the Machine API controller sets.
pub const MAPI_ZONE_LABEL: &str = "machine.openshift.io/zone";
/// The instance state annotation the Machine API controller sets.
pub const MAPI_INSTANCE_STATE_ANNOTATION: &str = "machine.openshift.io/instance-state";
/// The label on an infrastructure machine template naming its MachineSet.
pub const MACHINESET_LABEL: &str = sync_core::api::MACHINESET_LABEL;

/// Asks the Machine API to delete this Machine first when scaling down.
pub const MAPI_DELETE_MACHINE_ANNOTATION: &str = "machine.openshift.io/delete-machine";
/// Asks Cluster API to delete this Machine first when scaling down.
pub const CAPI_DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";
/// Stops the Cluster API controllers from acting on an object.
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
/// Prefix of the annotations that hold a Machine's deletion before drain.
pub const PRE_DRAIN_HOOK_PREFIX: &str = "pre-drain.delete.hook.machine.cluster.x-k8s.io";
/// Prefix of the annotations that hold a Machine's deletion before termination.
pub const PRE_TERMINATE_HOOK_PREFIX: &str = "pre-terminate.delete.hook.machine.cluster.x-k8s.io";

/// The Cluster API Machine controller's finalizer.
pub const CAPI_MACHINE_FINALIZER: &str = "machine.cluster.x-k8s.io";
/// The Machine API Machine controller's finalizer.
pub const MAPI_MACHINE_FINALIZER: &str = "machine.machine.openshift.io";

/// The Cluster API node deletion timeout the conversion writes (Cluster API's default;
/// the Machine API has no such setting).
pub const NODE_DELETION_TIMEOUT_SECONDS: i32 = 10;

/// The name of the infrastructure machine template of MachineSet `set` with template spec
/// `spec_json` (the template spec serialized as JSON): `<set>-<FNV-1a 32-bit hash, 8 hex
/// digits>`. Templates are immutable, so a new spec gets a new name.
pub fn template_name(set: &str, spec_json: &[u8]) -> String {
    format!("{set}-{:08x}", fnv1a_32(spec_json))
}

/// FNV-1a, 32 bits (Go's `hash/fnv.New32a`).
fn fnv1a_32(bytes: &[u8]) -> u32 {
    const OFFSET_BASIS: u32 = 0x811c_9dc5;
    const PRIME: u32 = 0x0100_0193;
    bytes.iter().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u32::from(*byte)).wrapping_mul(PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_32_matches_the_reference_vectors() {
        // From the FNV reference test suite (http://www.isthe.com/chongo/src/fnv/test_fnv.c),
        // the values Go's hash/fnv returns.
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn template_names_change_with_the_spec() {
        assert_eq!(template_name("worker-a", b""), "worker-a-811c9dc5");
        assert_ne!(
            template_name("worker-a", br#"{"instanceType":"m6i.large"}"#),
            template_name("worker-a", br#"{"instanceType":"m6i.xlarge"}"#)
        );
    }
}
