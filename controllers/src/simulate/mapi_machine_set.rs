//! The Machine API MachineSet controller (machine-api-operator's `pkg/controller/machineset`):
//!
//! | state | what it does |
//! |---|---|
//! | being deleted | nothing (its Machines go with it through garbage collection) |
//! | `status.authoritativeAPI` set and not `MachineAPI` | nothing but `Paused`=True (`AuthoritativeAPINotMachineAPI`) |
//! | otherwise | `Paused`=False (`AuthoritativeAPIMachineAPI`), then on: |
//! | orphans matching the selector | adopts them (controller owner reference) |
//! | fewer Machines than `spec.replicas` | creates `<set>-<random>` from the template, owned by the set |
//! | more | deletes the surplus (delete-machine annotation first, then not running, then `deletePolicy`) |
//! | always | status: replicas, fullyLabeled/ready/available replicas, observedGeneration, labelSelector |

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::api::{Api, DeleteParams, PostParams};
use kube::core::Selector;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::AuthoritativeApi;
use sync_core::api::mapi::{Machine, MachineSet, MachineSetStatus, MachineTemplateSpec};

use super::conditions::{Condition, Conditions};
use super::members::{self, MachineCache};
use super::runtime::{self, Ctx, Error, Shared, controller_owner};
use super::scaling::{self, Member};

/// The field manager of this controller's writes.
pub(super) const MANAGER: &str = "simulated-machine-api-machineset-controller";
/// Marks a Machine to go first when its set scales down.
const DELETE_ANNOTATION: &str = "machine.openshift.io/delete-machine";

pub(super) async fn run(shared: Shared, shutdown: tokio_util::sync::CancellationToken) {
    let client = shared.client.clone();
    let namespace = shared.namespaces.mapi.clone();
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
    if set.meta().deletion_timestamp.is_some() {
        cache.forget(&set.name_any());
        return Ok(Action::await_change());
    }
    let namespace = &ctx.shared.namespaces.mapi;
    let sets = Api::<MachineSet>::namespaced(ctx.client(), namespace);
    let status = set.status.clone().unwrap_or_default();
    let mut conditions = Conditions::from_list(&status.sync.conditions);
    let authority = status.sync.authoritative_api.as_ref();
    let paused = authority.is_some_and(|a| *a != AuthoritativeApi::MachineApi);
    conditions.set(&paused_condition(paused, authority));
    if paused {
        if conditions.changed() {
            ctx.patch_status(&sets, &set, json!({ "conditions": conditions.into_json() }))
                .await?;
        }
        return Ok(Action::await_change());
    }

    let selector = scaling::selector(&set.spec.selector)?;
    let template = set.spec.template.clone().unwrap_or_default();
    let template_meta = template.metadata.clone().unwrap_or_default();
    let template_labels = template_meta.labels.clone().unwrap_or_default();
    if !scaling::selects(&selector, &template_labels) {
        return Err(Error::Invalid(format!(
            "MachineSet {}: the selector does not match the template's labels",
            set.name_any()
        )));
    }

    let machines = Api::<Machine>::namespaced(ctx.client(), namespace);
    let members = members::adopt_members(set.as_ref(), &machines, &cache, &selector, &ctx, member).await?;
    if !cache.settled(&set.name_any()) {
        // Counted without Machines it just created or deleted: their events come back here.
        return Ok(Action::requeue(members::EXPECTATION_TIMEOUT));
    }
    scale(&set, &template, &machines, &members, &cache).await?;
    let desired = desired_status(&set, &members, &selector, &template_labels);
    if desired != current_status(&status) || conditions.changed() {
        let mut update = desired;
        update["conditions"] = conditions.into_json();
        ctx.patch_status(&sets, &set, update).await?;
    }
    Ok(Action::await_change())
}

/// The name of the MachineSet that controls `machine`, if one does.
fn owner_set(machine: &Machine) -> Option<String> {
    controller_owner(machine, "machine.openshift.io", "MachineSet")
}

/// `Paused` as the Machine API controllers set it: true while `status.authoritativeAPI` is
/// set and not `MachineAPI`, with a message naming it either way.
fn paused_condition(paused: bool, authority: Option<&AuthoritativeApi>) -> Condition<'static> {
    let message = format!(
        "The AuthoritativeAPI is set to {}",
        authority.map(AuthoritativeApi::as_str).unwrap_or_default()
    );
    if paused {
        Condition::new("Paused", true, "AuthoritativeAPINotMachineAPI").message(message)
    } else {
        Condition::new("Paused", false, "AuthoritativeAPIMachineAPI").message(message)
    }
}

/// Creates Machines from the template or deletes the surplus until the set has
/// `spec.replicas` (default 1), the best candidates (`spec.deletePolicy`) deleted first.
async fn scale(
    set: &MachineSet,
    template: &MachineTemplateSpec,
    machines: &Api<Machine>,
    members: &[Member],
    cache: &MachineCache<Machine>,
) -> Result<(), Error> {
    let replicas = usize::try_from(set.spec.replicas.unwrap_or(1)).unwrap_or(0);
    let name = set.name_any();
    if members.len() < replicas {
        for _ in members.len()..replicas {
            let machine = new_machine(set, template);
            let created = machines.create(&post_params(), &machine).await?;
            cache.expect_created(&name, &created.name_any());
        }
    } else if members.len() > replicas {
        let policy = set.spec.delete_policy.as_deref();
        for doomed in scaling::to_delete(members.to_vec(), members.len() - replicas, policy) {
            match machines.delete(&doomed.name, &DeleteParams::default()).await {
                Ok(_) => cache.expect_deleted(&name, &doomed.name),
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error.into()),
            }
        }
    }
    Ok(())
}

/// The status the Machine API controller keeps: replica counts (fully labeled: with every
/// label of the template), observedGeneration and the selector.
fn desired_status(
    set: &MachineSet,
    members: &[Member],
    selector: &Selector,
    template_labels: &BTreeMap<String, String>,
) -> Value {
    let count = |f: &dyn Fn(&Member) -> bool| {
        i32::try_from(members.iter().filter(|m| f(m)).count()).unwrap_or(i32::MAX)
    };
    let fully_labeled = count(&|m| template_labels.iter().all(|(k, v)| m.labels.get(k) == Some(v)));
    let ready = count(&|m| m.ready);
    json!({
        "replicas": count(&|_| true),
        "fullyLabeledReplicas": fully_labeled,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "observedGeneration": set.meta().generation,
        "labelSelector": selector.to_string(),
    })
}

/// The same fields of the status as it is, to tell whether it must be written.
fn current_status(status: &MachineSetStatus) -> Value {
    json!({
        "replicas": status.replicas,
        "fullyLabeledReplicas": status.fully_labeled_replicas,
        "readyReplicas": status.ready_replicas,
        "availableReplicas": status.available_replicas,
        "observedGeneration": status.observed_generation,
        "labelSelector": status.label_selector,
    })
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

/// A Machine from the set's template, as the real controller creates it.
fn new_machine(set: &MachineSet, template: &MachineTemplateSpec) -> Machine {
    let meta = template.metadata.clone().unwrap_or_default();
    let mut machine = Machine::new("", template.spec.clone().unwrap_or_default());
    machine.metadata.name = None;
    machine.metadata.generate_name = Some(format!("{}-", set.name_any()));
    machine.metadata.namespace = set.namespace();
    machine.metadata.labels = meta
        .labels
        .filter(|l| !l.is_empty())
        .or_else(|| Some(BTreeMap::new()));
    machine.metadata.annotations = meta.annotations;
    machine.metadata.owner_references = set.controller_owner_ref(&()).map(|owner| vec![owner]);
    machine
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(MANAGER.to_owned()),
        ..PostParams::default()
    }
}
