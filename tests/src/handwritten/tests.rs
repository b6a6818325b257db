//! The hand-written controllers against envtest: the `docs/design.md` §3–§4 behaviours the benchmark
//! relies on (which hook runs, with which objects, on which trigger), so that the
//! comparison is between equivalent controllers.

use std::sync::{Arc, Mutex, PoisonError};

use kube::ResourceExt;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::json;
use tokio::sync::{Notify, oneshot};

use super::{Direction, Fetched, HookError, Hooks, Namespaces};
use crate::{Cluster, TestResult, WAIT};

/// One recorded hook call.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Call {
    hook: &'static str,
    name: String,
    mapi: bool,
    capi: bool,
    infra: Option<String>,
    deleting: bool,
}

/// Hooks that record every call.
#[derive(Clone, Default)]
struct Recording {
    calls: Arc<Mutex<Vec<Call>>>,
    changed: Arc<Notify>,
}

impl Recording {
    fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    async fn wait_for(&self, what: &str, matches: impl Fn(&Call) -> bool) -> TestResult<Call> {
        let wait = async {
            loop {
                let changed = self.changed.notified();
                futures::pin_mut!(changed);
                changed.as_mut().enable();
                if let Some(call) = self.calls().into_iter().find(|c| matches(c)) {
                    return call;
                }
                changed.await;
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .map_err(|_| format!("no hook call {what}; calls: {:?}", self.calls()).into())
    }

    fn record<M: kube::Resource, C: kube::Resource>(&self, hook: &'static str, pair: &Fetched<M, C>) {
        let deleting = pair
            .mapi
            .as_ref()
            .is_some_and(|m| m.meta().deletion_timestamp.is_some())
            || pair
                .capi
                .as_ref()
                .is_some_and(|c| c.meta().deletion_timestamp.is_some());
        let call = Call {
            hook,
            name: pair.name.clone(),
            mapi: pair.mapi.is_some(),
            capi: pair.capi.is_some(),
            infra: pair
                .infra
                .as_ref()
                .and_then(|i| i.metadata.resource_version.clone()),
            deleting,
        };
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
        self.changed.notify_waiters();
    }
}

impl<M, C> Hooks<M, C> for Recording
where
    M: kube::Resource + Send + Sync + 'static,
    C: kube::Resource + Send + Sync + 'static,
{
    async fn mapi_to_capi(&self, pair: &Fetched<M, C>) -> Result<(), HookError> {
        self.record("mapi_to_capi", pair);
        Ok(())
    }

    async fn capi_to_mapi(&self, pair: &Fetched<M, C>) -> Result<(), HookError> {
        self.record("capi_to_mapi", pair);
        Ok(())
    }

    async fn deletion(&self, direction: Direction, pair: &Fetched<M, C>) -> Result<(), HookError> {
        let hook = match direction {
            Direction::MapiToCapi => "deletion_mapi_to_capi",
            Direction::CapiToMapi => "deletion_capi_to_mapi",
        };
        self.record(hook, pair);
        Ok(())
    }
}

/// Both hand-written controllers against a cluster with the four infrastructure kinds.
struct Running {
    machines: Recording,
    machine_sets: Recording,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

async fn start(cluster: &Cluster) -> TestResult<Running> {
    for crd in crate::bench::fill::infra_crds() {
        cluster.install_crd(&crd).await?;
    }
    let namespaces = Namespaces {
        mapi: cluster.namespaces.mapi.clone(),
        capi: cluster.namespaces.capi.clone(),
    };
    let (machines, machine_sets) = (Recording::default(), Recording::default());
    let (stop, stopped) = oneshot::channel::<()>();
    let stopped = futures::FutureExt::shared(async move {
        let _ = stopped.await;
    });
    let client = cluster.client.clone();
    let hooks = (machines.clone(), machine_sets.clone());
    let task = tokio::spawn(async move {
        tokio::join!(
            super::machine::run(client.clone(), namespaces.clone(), 4, hooks.0, stopped.clone()),
            super::machine_set::run(client, namespaces, 4, hooks.1, stopped),
        );
    });
    Ok(Running {
        machines,
        machine_sets,
        stop: Some(stop),
        task,
    })
}

impl Running {
    async fn stop(mut self) -> TestResult {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        tokio::time::timeout(WAIT, &mut self.task).await??;
        Ok(())
    }
}

const DEV: &str = "DevMachine";
const AWS: &str = "AWSMachine";

#[tokio::test]
async fn the_decision_table_and_the_triggers() -> TestResult {
    // The table stages pairs the admission policies refuse (both sides created by hand).
    let cluster = Cluster::start_without_policies().await?;
    let running = start(&cluster).await?;
    let (machines, machine_sets) = (&running.machines, &running.machine_sets);

    // The authoritative API switch, with both objects and the infrastructure object.
    cluster.create_infra(DEV, "v1beta2", "mapi-auth", &[]).await?;
    cluster
        .create_capi_machine("mapi-auth", (DEV, "mapi-auth"), None)
        .await?;
    cluster
        .create_mapi_machine("mapi-auth", Some("MachineAPI"))
        .await?;
    machines
        .wait_for("mapi_to_capi with both objects and the DevMachine", |c| {
            c.name == "mapi-auth" && c.hook == "mapi_to_capi" && c.mapi && c.capi && c.infra.is_some()
        })
        .await?;
    cluster
        .create_mapi_machine("capi-auth", Some("ClusterAPI"))
        .await?;
    machines
        .wait_for("capi_to_mapi", |c| {
            c.name == "capi-auth" && c.hook == "capi_to_mapi"
        })
        .await?;
    cluster
        .create_mapi_machine("migrating", Some("Migrating"))
        .await?;

    // CAPI-only Machines: synced when their MachineSet is mirrored, once it is.
    let mirrored = cluster
        .create_capi_machine_set("mirrored", ("DevMachineTemplate", "mirrored"))
        .await?;
    cluster
        .create_mapi_machine_set("mirrored", Some("MachineAPI"))
        .await?;
    cluster
        .create_capi_machine("owned", (AWS, "owned"), Some(&mirrored))
        .await?;
    machines
        .wait_for("capi_to_mapi without a MAPI object", |c| {
            c.name == "owned" && c.hook == "capi_to_mapi" && !c.mapi && c.capi
        })
        .await?;
    let later = cluster
        .create_capi_machine_set("later", ("AWSMachineTemplate", "later"))
        .await?;
    cluster
        .create_capi_machine("orphan-for-now", (AWS, "orphan-for-now"), Some(&later))
        .await?;
    cluster.create_mapi_machine_set("later", None).await?;
    machines
        .wait_for("capi_to_mapi once the MachineSet is mirrored", |c| {
            c.name == "orphan-for-now" && c.hook == "capi_to_mapi"
        })
        .await?;

    // Infrastructure changes of both kinds reconcile the Machine using them.
    cluster.create_infra(AWS, "v1beta2", "owned", &[]).await?;
    for (kind, name) in [(DEV, "mapi-auth"), (AWS, "owned")] {
        cluster.touch_infra(kind, "v1beta2", name, 7).await?;
        let touched = cluster.infra(kind, "v1beta2").get(name).await?;
        machines
            .wait_for("a call with the changed infrastructure object", |c| {
                c.name == name && c.infra == touched.resource_version()
            })
            .await?;
    }

    // A template change reconciles the MachineSet.
    cluster
        .create_infra("DevMachineTemplate", "v1beta2", "mirrored", &[])
        .await?;
    cluster
        .touch_infra("DevMachineTemplate", "v1beta2", "mirrored", 3)
        .await?;
    let template = cluster
        .infra("DevMachineTemplate", "v1beta2")
        .get("mirrored")
        .await?;
    machine_sets
        .wait_for("the MachineSet with its changed template", |c| {
            c.name == "mirrored" && c.hook == "mapi_to_capi" && c.infra == template.resource_version()
        })
        .await?;

    // Deletion fork: a finalizer holds the MAPI Machine, which is deleted.
    let finalizer = json!({"metadata": {"finalizers": ["bench.example.com/hold"]}});
    cluster
        .mapi_machines()
        .patch("mapi-auth", &PatchParams::default(), &Patch::Merge(&finalizer))
        .await?;
    cluster
        .mapi_machines()
        .delete("mapi-auth", &DeleteParams::default())
        .await?;
    machines
        .wait_for("the deletion hook", |c| {
            c.name == "mapi-auth" && c.hook == "deletion_mapi_to_capi" && c.deleting
        })
        .await?;

    // Nothing for a Migrating Machine, or a MachineSet without status.authoritativeAPI.
    let calls = machines.calls();
    assert!(calls.iter().all(|c| c.name != "migrating"), "{calls:?}");
    let set_calls = machine_sets.calls();
    assert!(set_calls.iter().all(|c| c.name != "later"), "{set_calls:?}");

    let released = json!({"metadata": {"finalizers": null}});
    cluster
        .mapi_machines()
        .patch("mapi-auth", &PatchParams::default(), &Patch::Merge(&released))
        .await?;
    running.stop().await
}
