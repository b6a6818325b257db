//! Cluster API's Machine controller (`core/reconcilers/machine`):
//!
//! | state | what it does |
//! |---|---|
//! | no finalizer (not being deleted) | adds `machine.cluster.x-k8s.io` |
//! | `cluster.x-k8s.io/paused` | nothing but the v1beta2 `Paused`=True (`Paused`) — not even deletion |
//! | otherwise | `Paused`=False (`NotPaused`), then on: |
//! | InfraMachine not owned | makes the Machine its controller owner, labels it with the cluster name |
//! | being deleted | phase `Deleting`, `Deleting`=True; waits for pre-terminate hooks; deletes the InfraMachine and waits for it to go; removes its finalizer |
//! | InfraMachine provisioned | copies its providerID and addresses, `initialization.infrastructureProvisioned` |
//! | infrastructure provisioned and recorded | the Node joined: `status.nodeRef` |
//! | always | phase (`Pending` → `Provisioning` → `Provisioned` → `Running`), v1beta2 conditions, observedGeneration |

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DeleteParams, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::capi::{Machine, MachineStatus};

use super::capi_machine_set::{CLUSTER_NAME_LABEL, paused_condition};
use super::conditions::{Condition, Conditions};
use super::runtime::{self, Ctx, Error, Shared, has_paused_annotation};
use super::{CAPI_MACHINE_FINALIZER, infra_machine};

/// The field manager of this controller's writes.
pub(super) const MANAGER: &str = "simulated-capi-machine-controller";
/// The annotation prefix of pre-terminate hooks.
const PRE_TERMINATE_HOOK_PREFIX: &str = "pre-terminate.delete.hook.machine.cluster.x-k8s.io";
/// How often a Machine waiting for an InfraMachine of a kind it does not watch looks again.
const POLL: Duration = Duration::from_secs(1);

pub(super) async fn run(shared: Shared, shutdown: tokio_util::sync::CancellationToken) {
    let client = shared.client.clone();
    let namespace = shared.namespaces.capi.clone();
    let mut controller = Controller::new(
        Api::<Machine>::namespaced(client, &namespace),
        watcher::Config::default(),
    );
    // InfraMachines of the simulated providers wake their Machine up (CAPI watches every
    // referenced kind; the kinds not served at start, and the other kinds, are polled).
    for platform in infra_machine::PLATFORMS {
        match shared.infra_resource(infra_machine::GROUP, platform.kind).await {
            Ok(resource) => {
                let api = Api::<DynamicObject>::namespaced_with(shared.client.clone(), &namespace, &resource);
                controller = controller.owns_with(api, resource, watcher::Config::default());
            }
            Err(error) => {
                tracing::debug!(%error, kind = platform.kind, "not served; Machines poll these InfraMachines")
            }
        }
    }
    runtime::run(controller, Ctx::new(shared, MANAGER), reconcile, shutdown).await;
}

async fn reconcile(machine: Arc<Machine>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let machines = Api::<Machine>::namespaced(ctx.client(), &ctx.shared.namespaces.capi);
    let deleting = machine.meta().deletion_timestamp.is_some();
    if !deleting && !machine.finalizers().iter().any(|f| f == CAPI_MACHINE_FINALIZER) {
        ctx.add_finalizer(&machines, &machine, CAPI_MACHINE_FINALIZER)
            .await?;
        return Ok(Action::await_change());
    }
    let status = machine.status.clone().unwrap_or_default();
    let mut conditions = Conditions::from_list(&status.conditions);
    let paused = has_paused_annotation(machine.as_ref());
    conditions.set(&paused_condition(paused, "Machine", machine.meta().generation));
    if conditions.changed() {
        ctx.patch_status(
            &machines,
            &machine,
            json!({ "conditions": conditions.into_json() }),
        )
        .await?;
        return Ok(Action::await_change());
    }
    if paused {
        return Ok(Action::await_change());
    }

    let reference = &machine.spec.infrastructure_ref;
    let infra_api = ctx
        .shared
        .infra_api(&reference.api_group, &reference.kind)
        .await?;
    let infra = infra_api.get_opt(&reference.name).await?;
    if deleting {
        return delete(&machines, &machine, &infra_api, infra, conditions, &ctx).await;
    }
    let Some(infra) = infra else {
        tracing::debug!(machine = %machine.name_any(), infra = %reference.name, "waiting for the InfraMachine");
        return Ok(Action::requeue(POLL));
    };
    adopt(&machine, &infra, &infra_api, &ctx).await?;
    if copy_from_infra_machine(&machines, &machine, &infra, &ctx).await? {
        return Ok(Action::await_change());
    }
    update_status(&machines, &machine, &infra, &status, conditions, &ctx).await?;
    Ok(Action::await_change())
}

/// Makes the Machine the InfraMachine's controller owner and labels it with the cluster
/// name, as Cluster API does (dropping a MachineSet's owner reference); refused while
/// another object controls it.
async fn adopt(
    machine: &Machine,
    infra: &DynamicObject,
    infra_api: &Api<DynamicObject>,
    ctx: &Ctx,
) -> Result<(), Error> {
    if owns(machine, infra) && infra.labels().get(CLUSTER_NAME_LABEL) == Some(&machine.spec.cluster_name) {
        return Ok(());
    }
    if let Some(other) = infra
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && Some(&o.uid) != machine.uid().as_ref())
    {
        let reference = &machine.spec.infrastructure_ref;
        return Err(Error::Invalid(format!(
            "{} {} is already controlled by {} {}",
            reference.kind, reference.name, other.kind, other.name
        )));
    }
    let mut owners: Vec<Value> = infra
        .owner_references()
        .iter()
        .filter(|o| Some(&o.uid) != machine.uid().as_ref())
        .filter(|o| !(o.kind == "MachineSet" && o.api_version.starts_with("cluster.x-k8s.io/")))
        .filter_map(|o| serde_json::to_value(o).ok())
        .collect();
    owners.extend(
        machine
            .controller_owner_ref(&())
            .and_then(|o| serde_json::to_value(o).ok()),
    );
    let patch = json!({ "metadata": {
        "ownerReferences": owners,
        "labels": { CLUSTER_NAME_LABEL: machine.spec.cluster_name },
    }});
    ctx.patch(infra_api, infra, patch).await?;
    Ok(())
}

/// Whether the InfraMachine reports its instance provisioned (the contract's
/// `status.initialization.provisioned`, or the older `status.ready`).
fn infra_machine_provisioned(infra: &DynamicObject) -> bool {
    infra.data["status"]["initialization"]["provisioned"].as_bool() == Some(true)
        || infra.data["status"]["ready"].as_bool() == Some(true)
}

/// Labels the Machine with its cluster's name and, once the InfraMachine is provisioned,
/// copies its providerID into the spec. `true` when it wrote: that write's event starts
/// the next step.
async fn copy_from_infra_machine(
    machines: &Api<Machine>,
    machine: &Machine,
    infra: &DynamicObject,
    ctx: &Ctx,
) -> Result<bool, Error> {
    let provisioned = infra_machine_provisioned(infra);
    let infra_provider_id = infra.data["spec"]["providerID"]
        .as_str()
        .filter(|id| !id.is_empty());
    let mut patch = json!({});
    if machine.labels().get(CLUSTER_NAME_LABEL) != Some(&machine.spec.cluster_name) {
        patch["metadata"] = json!({ "labels": { CLUSTER_NAME_LABEL: machine.spec.cluster_name } });
    }
    if let (true, Some(provider_id)) = (provisioned, infra_provider_id)
        && machine.spec.provider_id.as_deref() != Some(provider_id)
    {
        patch["spec"] = json!({ "providerID": provider_id });
    }
    if patch == json!({}) {
        return Ok(false);
    }
    ctx.patch(machines, machine, patch).await?;
    Ok(true)
}

/// The status Cluster API keeps: phase, the v1beta2 conditions, initialization, the
/// InfraMachine's addresses and the Node once it joined. Written only when it changed.
async fn update_status(
    machines: &Api<Machine>,
    machine: &Machine,
    infra: &DynamicObject,
    status: &MachineStatus,
    mut conditions: Conditions,
    ctx: &Ctx,
) -> Result<(), Error> {
    let bootstrapped = machine.spec.bootstrap.data_secret_name.is_some();
    let infra_provisioned = infra_machine_provisioned(infra) && machine.spec.provider_id.is_some();
    let addresses = infra.data["status"]["addresses"].clone();
    // The Node joins once the provisioned infrastructure is recorded (a reconcile later,
    // as a real Node registers after its instance boots).
    let recorded = status
        .initialization
        .as_ref()
        .and_then(|i| i.infrastructure_provisioned)
        == Some(true);
    let node = match &status.node_ref {
        Some(node) => Some(node.name.clone()),
        None => (infra_provisioned && recorded).then(|| node_name(&addresses, machine)),
    };
    let phase = phase(bootstrapped, infra_provisioned, machine, node.is_some());
    set_conditions(
        &mut conditions,
        machine.meta().generation,
        bootstrapped,
        infra_provisioned,
        node.is_some(),
    );
    let mut update = json!({
        "phase": phase,
        "observedGeneration": machine.meta().generation,
        "initialization": {
            "bootstrapDataSecretCreated": bootstrapped,
            "infrastructureProvisioned": infra_provisioned,
        },
    });
    if infra_provisioned && addresses.is_array() {
        update["addresses"] = addresses;
    }
    if let Some(node) = node {
        update["nodeRef"] = json!({ "name": node });
    }
    let current = serde_json::to_value(status).unwrap_or_default();
    let unchanged = update
        .as_object()
        .is_some_and(|fields| fields.iter().all(|(key, value)| current[key] == *value));
    if !unchanged || conditions.changed() {
        update["conditions"] = conditions.into_json();
        ctx.patch_status(machines, machine, update).await?;
    }
    Ok(())
}

/// The phase, as Cluster API's setMachinePhase decides it, in its order.
fn phase(bootstrapped: bool, infra_provisioned: bool, machine: &Machine, has_node: bool) -> &'static str {
    let mut phase = "Pending";
    if bootstrapped && !infra_provisioned {
        phase = "Provisioning";
    }
    if machine.spec.provider_id.is_some() {
        phase = "Provisioned";
    }
    if has_node && infra_provisioned {
        phase = "Running";
    }
    phase
}

/// The v1beta2 conditions of a Machine that is not being deleted: bootstrap,
/// infrastructure, Node, and the summaries built on them.
fn set_conditions(
    conditions: &mut Conditions,
    generation: Option<i64>,
    bootstrapped: bool,
    infra_provisioned: bool,
    ready: bool,
) {
    conditions.set(
        &Condition::new(
            "BootstrapConfigReady",
            bootstrapped,
            if bootstrapped {
                "DataSecretAvailable"
            } else {
                "DataSecretNotAvailable"
            },
        )
        .generation(generation),
    );
    conditions.set(
        &Condition::new(
            "InfrastructureReady",
            infra_provisioned,
            if infra_provisioned { "Ready" } else { "NotReady" },
        )
        .generation(generation),
    );
    conditions.set(
        &Condition::new(
            "NodeReady",
            ready,
            if ready { "NodeReady" } else { "NodeDoesNotExist" },
        )
        .generation(generation),
    );
    conditions.set(
        &Condition::new("Ready", ready, if ready { "Ready" } else { "NotReady" }).generation(generation),
    );
    conditions.set(
        &Condition::new(
            "Available",
            ready,
            if ready { "Available" } else { "NotAvailable" },
        )
        .generation(generation),
    );
    conditions.set(&Condition::new("Deleting", false, "NotDeleting").generation(generation));
}

/// Deleting: phase and condition, pre-terminate hooks, the InfraMachine, the finalizer.
async fn delete(
    machines: &Api<Machine>,
    machine: &Machine,
    infra_api: &Api<DynamicObject>,
    infra: Option<DynamicObject>,
    mut conditions: Conditions,
    ctx: &Ctx,
) -> Result<Action, Error> {
    if !machine.finalizers().iter().any(|f| f == CAPI_MACHINE_FINALIZER) {
        return Ok(Action::await_change());
    }
    let hooks: Vec<&String> = machine
        .annotations()
        .keys()
        .filter(|key| key.starts_with(PRE_TERMINATE_HOOK_PREFIX))
        .collect();
    let (reason, message) = match (&infra, hooks.is_empty()) {
        (_, false) => (
            "WaitingForPreTerminateHook",
            format!(
                "Waiting for pre-terminate hooks to succeed (hooks: {})",
                hooks.iter().map(|h| h.as_str()).collect::<Vec<_>>().join(",")
            ),
        ),
        (Some(_), true) => (
            "WaitingForInfrastructureDeletion",
            format!(
                "Waiting for {} to be deleted",
                machine.spec.infrastructure_ref.kind
            ),
        ),
        (None, true) => ("DeletionCompleted", "Deletion completed".to_owned()),
    };
    let generation = machine.meta().generation;
    conditions.set(
        &Condition::new("Deleting", true, reason)
            .message(message)
            .generation(generation),
    );
    let phase_changed = machine.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Deleting");
    if phase_changed || conditions.changed() {
        let update = json!({ "phase": "Deleting", "conditions": conditions.into_json() });
        ctx.patch_status(machines, machine, update).await?;
        return Ok(Action::await_change());
    }
    if !hooks.is_empty() {
        return Ok(Action::await_change());
    }
    match infra {
        Some(infra) => {
            if infra.meta().deletion_timestamp.is_none() {
                match infra_api
                    .delete(&infra.name_any(), &DeleteParams::background())
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(error) => return Err(error.into()),
                }
            }
            // Its deletion event wakes us for the kinds we watch; the others are polled.
            Ok(Action::requeue(POLL))
        }
        None => {
            ctx.remove_finalizer(machines, machine, CAPI_MACHINE_FINALIZER)
                .await?;
            Ok(Action::await_change())
        }
    }
}

/// Whether the Machine is the InfraMachine's controller owner.
fn owns(machine: &Machine, infra: &DynamicObject) -> bool {
    let uid = machine.uid();
    infra
        .owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && o.kind == "Machine" && Some(&o.uid) == uid.as_ref())
}

/// The Node's name: the InfraMachine's host name, else the Machine's name.
fn node_name(addresses: &Value, machine: &Machine) -> String {
    addresses
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == "InternalDNS")
        .and_then(|a| a["address"].as_str())
        .map_or_else(|| machine.name_any(), str::to_owned)
}
