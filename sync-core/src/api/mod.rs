//! The API types the sync controllers read: Machine API (`machine.openshift.io/v1beta1`)
//! and Cluster API (`cluster.x-k8s.io/v1beta2`) Machines and MachineSets, and the
//! infrastructure reference shapes, and OpenShift's cluster `Infrastructure` object.

pub mod authoritative;
pub mod capi;
pub mod crds;
pub mod infra_ref;
pub mod infrastructure;
pub(crate) mod json_text;
pub mod mapi;
pub mod partial;
pub mod raw;
mod schema;
pub mod sync_status;
pub(crate) mod times;

pub use authoritative::AuthoritativeApi;
pub use infra_ref::{AsInfraRef, ContractVersionedObjectReference, GroupKind, InfraRef, MalformedRef};
pub use infrastructure::Infrastructure;
pub use partial::Partial;
pub use raw::RawObject;
pub use sync_status::{MapiStatus, SyncStatus};

/// The group of an `apiVersion` (`""` for the core group's `v1`).
pub fn api_group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// The label on infrastructure machine templates naming the MachineSet they serve.
pub const MACHINESET_LABEL: &str = "machine.openshift.io/cluster-api-machineset";

/// The label an infrastructure CRD carries to say which of its versions implement the
/// Cluster API v1beta2 contract (`v1beta1_v1beta2`: newest last).
pub const CONTRACT_LABEL_V1BETA2: &str = "cluster.x-k8s.io/v1beta2";

#[cfg(test)]
mod tests {
    use super::api_group;

    #[test]
    fn api_group_of_core_and_grouped_versions() {
        assert_eq!(api_group("v1"), "");
        assert_eq!(api_group("cluster.x-k8s.io/v1beta2"), "cluster.x-k8s.io");
    }
}
