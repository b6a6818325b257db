//! What the Machine and MachineSet hooks share: the cluster they run in, the conversion
//! its platform provides, their infrastructure objects, the names they write under, and
//! the deletion order.
pub mod cluster;
pub mod convert;
pub mod drift;
pub mod hooks;
pub mod infra;
pub mod owners;
pub mod takeover;
pub mod teardown;
#[cfg(test)]
pub(crate) mod testing;

pub use cluster::Cluster;
pub use convert::{Platform, Warning};
pub use hooks::PlatformHooks;

/// The field manager of the Machine sync's writes, and the prefix of its condition's.
pub const MACHINE_CONTROLLER: &str = "MachineSyncController";
/// The field manager of the MachineSet sync's writes, and the prefix of its condition's.
pub const MACHINE_SET_CONTROLLER: &str = "MachineSetSyncController";

/// The finalizer the MAPI machine controller keeps until it has deleted the instance.
pub const MAPI_MACHINE_FINALIZER: &str = "machine.machine.openshift.io";
/// The finalizer the CAPI machine controller keeps until the InfraMachine is gone.
pub const CAPI_MACHINE_FINALIZER: &str = "machine.cluster.x-k8s.io";
/// InfraMachine finalizers are matched by this suffix (`awsmachine.infrastructure.cluster.x-k8s.io`, …).
pub const INFRA_FINALIZER_SUFFIX: &str = ".cluster.x-k8s.io";
/// The finalizer of the CAPI MachineSet controller.
pub const CAPI_MACHINE_SET_FINALIZER: &str = "cluster.x-k8s.io/machineset";
/// The label that ties an InfraMachineTemplate to its MachineSet.
pub const MACHINE_SET_LABEL: &str = "machine.openshift.io/cluster-api-machineset";
