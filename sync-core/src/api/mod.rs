//! The API types the sync controllers read: Machine API (`machine.openshift.io/v1beta1`)
//! and Cluster API (`cluster.x-k8s.io/v1beta2`) Machines and MachineSets, and the
//! infrastructure reference shapes.

pub mod authoritative;
pub mod capi;
pub mod crds;
pub mod infra_ref;
pub mod mapi;
pub mod raw;
mod schema;
pub mod sync_status;

pub use authoritative::AuthoritativeApi;
pub use infra_ref::{AsInfraRef, ContractVersionedObjectReference, GroupKind, InfraRef, MalformedRef};
pub use raw::RawObject;
pub use sync_status::{MapiStatus, SyncStatus};

/// The label on infrastructure machine templates naming the MachineSet they serve.
pub const MACHINESET_LABEL: &str = "machine.openshift.io/cluster-api-machineset";

/// The label an infrastructure CRD carries to say which of its versions implement the
/// Cluster API v1beta2 contract (`v1beta1_v1beta2`: newest last).
pub const CONTRACT_LABEL_V1BETA2: &str = "cluster.x-k8s.io/v1beta2";
