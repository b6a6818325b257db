//! Simulated providers: the controllers a cluster would run next to the sync — the Machine
//! API machine and MachineSet controllers (with the AWS and OpenStack actuators), Cluster
//! API's Machine and MachineSet controllers and the AWS and OpenStack infrastructure
//! providers (CAPA, CAPO) — reduced to what the sync can see, with no cloud behind them.
//!
//! They let deletion, status and migration complete on envtest and in `--embedded` mode:
//! they add and remove their finalizers, move phases, fill provider IDs, node references
//! and provider status, keep MachineSets at their replica count, and honour pausing with a
//! `Paused` condition exactly as the real ones do (the MAPI side pauses itself while
//! `status.authoritativeAPI` is not `MachineAPI`; the CAPI side while an object carries
//! `cluster.x-k8s.io/paused`).
//!
//! Each controller is a kube-runtime [`Controller`](kube::runtime::Controller) and writes
//! only its own fields, with merge patches under its own field manager that carry the
//! `resourceVersion` they were computed from: a write made on a stale read is refused with
//! a conflict and retried from the newer object, so nothing another writer (the sync) set
//! in between is lost. Every reconcile makes at most one write and ends; the watch event
//! of that write starts the next step.

mod capi_machine;
mod capi_machine_set;
mod conditions;
mod infra_machine;
mod instance;
mod mapi_machine;
mod mapi_machine_set;
mod members;
mod runtime;
mod scaling;

use kube::Client;
use sync_core::Namespaces;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use instance::Cloud;

/// The `cluster.x-k8s.io/paused` annotation: Cluster API controllers leave an object that
/// carries it alone (whatever its value).
pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";
/// The finalizer of the Machine API machine controller.
pub const MAPI_MACHINE_FINALIZER: &str = "machine.machine.openshift.io";
/// The finalizer of the Cluster API Machine controller.
pub const CAPI_MACHINE_FINALIZER: &str = "machine.cluster.x-k8s.io";
/// The finalizer of the Cluster API MachineSet controller.
pub const CAPI_MACHINE_SET_FINALIZER: &str = "cluster.x-k8s.io/machineset";
/// The finalizer of the AWS provider's AWSMachine controller.
pub const AWS_MACHINE_FINALIZER: &str = "awsmachine.infrastructure.cluster.x-k8s.io";
/// The finalizer of the OpenStack provider's OpenStackMachine controller.
pub const OPENSTACK_MACHINE_FINALIZER: &str = "openstackmachine.infrastructure.cluster.x-k8s.io";

/// A reconcile that finished without error: which controller (its field manager), which
/// object, and the resourceVersion it was computed from. Lets a test wait until a
/// controller has seen a change, to assert what it did *not* do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reconciled {
    /// The controller's field manager, e.g. [`MAPI_MACHINE_SET_CONTROLLER`].
    pub controller: &'static str,
    /// The object's name.
    pub name: String,
    /// The object's resourceVersion as the reconcile read it.
    pub resource_version: String,
}

/// The field managers (and [`Reconciled::controller`] names) of the simulated controllers.
pub const MAPI_MACHINE_CONTROLLER: &str = mapi_machine::MANAGER;
/// See [`MAPI_MACHINE_CONTROLLER`].
pub const MAPI_MACHINE_SET_CONTROLLER: &str = mapi_machine_set::MANAGER;
/// See [`MAPI_MACHINE_CONTROLLER`].
pub const CAPI_MACHINE_CONTROLLER: &str = capi_machine::MANAGER;
/// See [`MAPI_MACHINE_CONTROLLER`].
pub const CAPI_MACHINE_SET_CONTROLLER: &str = capi_machine_set::MANAGER;
/// See [`MAPI_MACHINE_CONTROLLER`].
pub const AWS_MACHINE_CONTROLLER: &str = infra_machine::AWS.manager;
/// See [`MAPI_MACHINE_CONTROLLER`].
pub const OPENSTACK_MACHINE_CONTROLLER: &str = infra_machine::OPENSTACK.manager;

/// The simulated providers, run together.
pub struct SimulatedProviders {
    client: Client,
    namespaces: Namespaces,
    cloud: Cloud,
    observer: Option<UnboundedSender<Reconciled>>,
}

impl SimulatedProviders {
    /// Providers for the Machine API objects of `namespaces.mapi` and the Cluster API and
    /// infrastructure objects of `namespaces.capi`.
    pub fn new(client: Client, namespaces: Namespaces) -> Self {
        Self {
            client,
            namespaces,
            cloud: Cloud::default(),
            observer: None,
        }
    }

    /// Reports every finished reconcile to `observer`.
    pub fn with_observer(mut self, observer: UnboundedSender<Reconciled>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Uses `cloud` for the zone and region of instances whose spec names none.
    pub fn with_cloud(mut self, cloud: Cloud) -> Self {
        self.cloud = cloud;
        self
    }

    /// Runs every provider until `shutdown` is cancelled.
    pub async fn run(self, shutdown: CancellationToken) {
        tracing::info!(
            mapi = %self.namespaces.mapi,
            capi = %self.namespaces.capi,
            "starting the simulated providers"
        );
        let shared = runtime::Shared::new(self.client, self.namespaces, self.cloud, self.observer);
        tokio::join!(
            mapi_machine::run(shared.clone(), shutdown.clone()),
            mapi_machine_set::run(shared.clone(), shutdown.clone()),
            capi_machine::run(shared.clone(), shutdown.clone()),
            capi_machine_set::run(shared.clone(), shutdown.clone()),
            infra_machine::run(&infra_machine::AWS, shared.clone(), shutdown.clone()),
            infra_machine::run(&infra_machine::OPENSTACK, shared, shutdown),
        );
        tracing::info!("simulated providers stopped");
    }
}
