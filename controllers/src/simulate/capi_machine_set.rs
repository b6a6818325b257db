//! Cluster API's MachineSet controller (`core/reconcilers/machineset`):
//!
//! | state | what it does |
//! |---|---|
//! | no finalizer (not being deleted) | adds `cluster.x-k8s.io/machineset` |
//! | `cluster.x-k8s.io/paused` | nothing but the v1beta2 `Paused`=True (`Paused`) — not even deletion |
//! | otherwise | `Paused`=False (`NotPaused`), then on: |
//! | being deleted | deletes its Machines; once none is left, removes its finalizer |
//! | orphans matching the selector | adopts them |
//! | fewer Machines than `spec.replicas` | clones the InfraMachineTemplate into an InfraMachine, then creates the Machine that references it |
//! | more | deletes the surplus (`cluster.x-k8s.io/delete-machine` first, then not running, then `deletion.order`) |
//! | always | status: replicas, ready/available/upToDate replicas, selector, observedGeneration |

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::Selector;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::ContractVersionedObjectReference;
use sync_core::api::capi::{Machine, MachineSet, MachineSetStatus};

use super::conditions::{Condition, Conditions};
use super::members::{self, MachineCache};
use super::runtime::{self, Ctx, Error, Shared, controller_owner, has_paused_annotation};
use super::scaling::{self, Member};
use super::{CAPI_MACHINE_FINALIZER, CAPI_MACHINE_SET_FINALIZER};

/// The field manager of this controller's writes.
pub(super) const MANAGER: &str = "simulated-capi-machineset-controller";
/// Marks a Machine to go first when its set scales down.
const DELETE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";
/// The label naming the MachineSet of a Machine.
const SET_NAME_LABEL: &str = "cluster.x-k8s.io/set-name";
/// The label naming the cluster of an object.
pub(super) const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";

pub(super) async fn run(shared: Shared, shutdown: tokio_util::sync::CancellationToken) {
    let client = shared.client.clone();
    let namespace = shared.namespaces.capi.clone();
    let (cache, machines) = MachineCache::new(
        Api::<Machine>::namespaced(client.clone(), &namespace),
        &namespace,
        owner_set,
    );
    let controller = Controller::new(
        Api::<MachineSet>::namespaced(client, &namespace),
        watcher::Config::default(),
    )
    .owns_stream(machines);
    let reconcile = move |set, ctx| reconcile(set, ctx, cache.clone());
    runtime::run(controller, Ctx::new(shared, MANAGER), reconcile, shutdown).await;
}

async fn reconcile(
    set: Arc<MachineSet>,
    ctx: Arc<Ctx>,
    cache: Arc<MachineCache<Machine>>,
) -> Result<Action, Error> {
    let namespace = &ctx.shared.namespaces.capi;
    let sets = Api::<MachineSet>::namespaced(ctx.client(), namespace);
    let deleting = set.meta().deletion_timestamp.is_some();
    if !deleting && !set.finalizers().iter().any(|f| f == CAPI_MACHINE_SET_FINALIZER) {
        ctx.add_finalizer(&sets, &set, CAPI_MACHINE_SET_FINALIZER).await?;
        return Ok(Action::await_change());
    }
    let status = set.status.clone().unwrap_or_default();
    let mut conditions = Conditions::from_list(&status.conditions);
    let paused = has_paused_annotation(set.as_ref());
    conditions.set(&paused_condition(paused, "MachineSet", set.meta().generation));
    if conditions.changed() {
        ctx.patch_status(&sets, &set, json!({ "conditions": conditions.into_json() }))
            .await?;
        return Ok(Action::await_change());
    }
    if paused {
        return Ok(Action::await_change());
    }

    let machines = Api::<Machine>::namespaced(ctx.client(), namespace);
    if deleting {
        return delete(&sets, &set, &machines, &cache, &ctx).await;
    }
    let selector = scaling::selector(&set.spec.selector)?;
    let members = members::adopt_members(set.as_ref(), &machines, &cache, &selector, &ctx, member).await?;
    if !cache.settled(&set.name_any()) {
        // Counted without Machines it just created or deleted: their events come back here.
        return Ok(Action::requeue(members::EXPECTATION_TIMEOUT));
    }
    scale(&set, &machines, &members, &cache, &ctx).await?;
    let desired = desired_status(&set, &members, &selector);
    if desired != current_status(&status) {
        ctx.patch_status(&sets, &set, desired).await?;
    }
    Ok(Action::await_change())
}

/// The name of the MachineSet that controls `machine`, if one does.
fn owner_set(machine: &Machine) -> Option<String> {
    controller_owner(machine, "cluster.x-k8s.io", "MachineSet")
}

/// Being deleted: deletes its Machines; once none is left, removes its finalizer.
async fn delete(
    sets: &Api<MachineSet>,
    set: &MachineSet,
    machines: &Api<Machine>,
    cache: &MachineCache<Machine>,
    ctx: &Ctx,
) -> Result<Action, Error> {
    let name = set.name_any();
    let remaining = cache
        .members(&name, |m| owner_set(m).as_deref() == Some(name.as_str()))
        .await;
    for machine in &remaining {
        if machine.meta().deletion_timestamp.is_none() {
            delete_quietly(machines, &machine.name_any()).await?;
        }
    }
    if remaining.is_empty() {
        cache.forget(&name);
        ctx.remove_finalizer(sets, set, CAPI_MACHINE_SET_FINALIZER)
            .await?;
    }
    Ok(Action::await_change())
}

/// Creates or deletes Machines until the set has `spec.replicas` (default 1), the best
/// candidates (`spec.deletion.order`) deleted first.
async fn scale(
    set: &MachineSet,
    machines: &Api<Machine>,
    members: &[Member],
    cache: &MachineCache<Machine>,
    ctx: &Ctx,
) -> Result<(), Error> {
    let replicas = usize::try_from(set.spec.replicas.unwrap_or(1)).unwrap_or(0);
    let name = set.name_any();
    if members.len() < replicas {
        for _ in members.len()..replicas {
            let created = create_machine(set, machines, ctx).await?;
            cache.expect_created(&name, &created);
        }
    } else if members.len() > replicas {
        let order = set.spec.deletion.as_ref().and_then(|d| d.order.as_deref());
        for doomed in scaling::to_delete(members.to_vec(), members.len() - replicas, order) {
            delete_quietly(machines, &doomed.name).await?;
            cache.expect_deleted(&name, &doomed.name);
        }
    }
    Ok(())
}

/// The status Cluster API keeps: replica counts, the selector, observedGeneration.
fn desired_status(set: &MachineSet, members: &[Member], selector: &Selector) -> Value {
    let count = |f: &dyn Fn(&Member) -> bool| {
        i32::try_from(members.iter().filter(|m| f(m)).count()).unwrap_or(i32::MAX)
    };
    json!({
        "replicas": count(&|_| true),
        "readyReplicas": count(&|m| m.ready),
        "availableReplicas": count(&|m| m.ready),
        "upToDateReplicas": count(&|_| true),
        "selector": selector.to_string(),
        "observedGeneration": set.meta().generation,
    })
}

/// The same fields of the status as it is, to tell whether it must be written.
fn current_status(status: &MachineSetStatus) -> Value {
    json!({
        "replicas": status.replicas,
        "readyReplicas": status.ready_replicas,
        "availableReplicas": status.available_replicas,
        "upToDateReplicas": status.up_to_date_replicas,
        "selector": status.selector,
        "observedGeneration": status.observed_generation,
    })
}

/// The v1beta2 `Paused` condition as Cluster API's `paused.EnsurePausedCondition` sets it.
pub(super) fn paused_condition(paused: bool, kind: &str, generation: Option<i64>) -> Condition<'static> {
    if paused {
        Condition::new("Paused", true, "Paused")
            .message(format!("{kind} has the cluster.x-k8s.io/paused annotation"))
            .generation(generation)
    } else {
        Condition::new("Paused", false, "NotPaused").generation(generation)
    }
}

fn member(machine: &Machine) -> Member {
    let status = machine.status.as_ref();
    Member {
        name: machine.name_any(),
        uid: machine.uid().unwrap_or_default(),
        created: machine.meta().creation_timestamp.clone(),
        labels: machine.labels().clone(),
        marked: machine.annotations().contains_key(DELETE_ANNOTATION),
        ready: status.is_some_and(|s| s.node_ref.is_some() && s.phase.as_deref() == Some("Running")),
    }
}

async fn delete_quietly<K>(api: &Api<K>, name: &str) -> Result<(), Error>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// One new Machine: its InfraMachine cloned from the template first, then the Machine
/// that references it (if the Machine cannot be created, the InfraMachine is removed).
/// Returns the Machine's name.
async fn create_machine(set: &MachineSet, machines: &Api<Machine>, ctx: &Ctx) -> Result<String, Error> {
    let name = machine_name(set);
    let template = &set.spec.template;
    let labels = machine_labels(set);
    let template_ref = &template.spec.infrastructure_ref;
    let infra_kind = template_ref
        .kind
        .strip_suffix("Template")
        .filter(|kind| !kind.is_empty())
        .ok_or_else(|| {
            Error::Invalid(format!(
                "{} is not an infrastructure machine template",
                template_ref.kind
            ))
        })?;
    let templates = ctx
        .shared
        .infra_api(&template_ref.api_group, &template_ref.kind)
        .await?;
    let source = templates.get(&template_ref.name).await?;
    let infra_machines = ctx.shared.infra_api(&template_ref.api_group, infra_kind).await?;
    let mut infra_labels = labels.clone();
    infra_labels.insert(CLUSTER_NAME_LABEL.to_owned(), set.spec.cluster_name.clone());
    let mut infra_annotations = source.data["spec"]["template"]["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    infra_annotations.insert(
        "cluster.x-k8s.io/cloned-from-name".into(),
        json!(template_ref.name),
    );
    infra_annotations.insert(
        "cluster.x-k8s.io/cloned-from-groupkind".into(),
        json!(format!("{}.{}", template_ref.kind, template_ref.api_group)),
    );
    let infra: DynamicObject = serde_json::from_value(json!({
        "apiVersion": source.types.as_ref().map(|t| t.api_version.clone()).unwrap_or_default(),
        "kind": infra_kind,
        "metadata": {
            "name": name,
            "namespace": set.namespace(),
            "labels": infra_labels,
            "annotations": infra_annotations,
            "ownerReferences": [{
                "apiVersion": MachineSet::api_version(&()),
                "kind": "MachineSet",
                "name": set.name_any(),
                "uid": set.uid().unwrap_or_default(),
            }],
        },
        "spec": source.data["spec"]["template"]["spec"].clone(),
    }))
    .map_err(|e| Error::Invalid(format!("InfraMachine for {name}: {e}")))?;
    infra_machines.create(&post_params(), &infra).await?;

    let mut spec = template.spec.clone();
    spec.cluster_name.clone_from(&set.spec.cluster_name);
    spec.infrastructure_ref = ContractVersionedObjectReference {
        api_group: template_ref.api_group.clone(),
        kind: infra_kind.to_owned(),
        name: name.clone(),
    };
    let mut machine = Machine::new(&name, spec);
    machine.metadata.namespace = set.namespace();
    machine.metadata.labels = Some(labels);
    machine.metadata.annotations = template.metadata.as_ref().and_then(|m| m.annotations.clone());
    machine.metadata.finalizers = Some(vec![CAPI_MACHINE_FINALIZER.to_owned()]);
    machine.metadata.owner_references = set.controller_owner_ref(&()).map(|owner| vec![owner]);
    if let Err(error) = machines.create(&post_params(), &machine).await {
        delete_quietly(&infra_machines, &name).await?;
        return Err(error.into());
    }
    Ok(name)
}

/// `spec.machineNaming.template` (default `{{ .machineSet.name }}-{{ .random }}`).
fn machine_name(set: &MachineSet) -> String {
    let template = set
        .spec
        .machine_naming
        .as_ref()
        .and_then(|naming| naming.template.as_deref())
        .filter(|t| t.contains("{{ .random }}"))
        .unwrap_or("{{ .machineSet.name }}-{{ .random }}");
    template
        .replace("{{ .machineSet.name }}", &set.name_any())
        .replace("{{ .cluster.name }}", &set.spec.cluster_name)
        .replace("{{ .random }}", &scaling::random_suffix(5))
}

/// The template's labels and the set's name label.
fn machine_labels(set: &MachineSet) -> BTreeMap<String, String> {
    let mut labels = set
        .spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    labels.insert(SET_NAME_LABEL.to_owned(), set.name_any());
    labels
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    }
}
