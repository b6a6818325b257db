//! The infrastructure providers' InfraMachine controllers — the AWS provider's AWSMachine
//! controller (CAPA's `controllers/awsmachine_controller.go`) and the OpenStack provider's
//! OpenStackMachine controller (CAPO's `controllers/openstackmachine_controller.go`) — as
//! the sync sees them. One reconcile; what differs per provider is a [`Platform`] row:
//!
//! | state | what it does |
//! |---|---|
//! | no owner Machine | nothing ("Machine Controller has not yet set OwnerRef") |
//! | `cluster.x-k8s.io/paused` on the InfraMachine | nothing but `Paused`=True (`Paused`) — not even deletion |
//! | otherwise | `Paused`=False (`NotPaused`), then on: |
//! | being deleted | "terminates the instance" (the provider's terminated state, not ready), then removes its finalizer |
//! | no finalizer | adds the provider's finalizer |
//! | no `spec.providerID` | "runs an instance": `spec.providerID` (`aws:///<zone>/i-…`, `openstack:///<server uuid>`), CAPA's `spec.instanceID` |
//! | not ready, or the state not the running one | `status.ready`, `status.initialization.provisioned`, the running state, addresses, CAPO's `status.instanceID`, `InstanceReady` |
//!
//! The providers pause on the InfraMachine's own annotation or its Cluster's `spec.paused`;
//! there is no Cluster object here, so only the annotation counts. Their conditions are
//! Cluster API v1beta1 conditions (with a severity), as both APIs still have them.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::capi::Machine;
use tokio_util::sync::CancellationToken;

use super::conditions::{Condition, Conditions};
use super::instance::{Cloud, Instance, Server, zone_of_provider_id};
use super::runtime::{self, Ctx, Error, Shared, has_paused_annotation};
use super::{AWS_MACHINE_FINALIZER, OPENSTACK_MACHINE_FINALIZER};

/// The infrastructure providers' API group.
pub(super) const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// How long to wait before looking again for a missing InfraMachine CRD.
const CRD_RETRY: Duration = Duration::from_secs(5);

/// Where a provider keeps the ID of the instance it launched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InstanceIdIn {
    /// `spec.instanceID` (CAPA), written with the providerID.
    Spec,
    /// `status.instanceID` (CAPO), written when the instance is ready.
    Status,
}

/// What one infrastructure provider's InfraMachine controller does differently.
#[derive(Debug)]
pub(super) struct Platform {
    /// The InfraMachine kind it reconciles.
    pub kind: &'static str,
    /// Its finalizer on the InfraMachine.
    pub finalizer: &'static str,
    /// The field manager of its writes (and [`super::Reconciled::controller`]).
    pub manager: &'static str,
    /// `status.instanceState` of a running instance.
    pub running: &'static str,
    /// `status.instanceState` of a terminated one.
    pub terminated: &'static str,
    /// Where the instance ID goes.
    pub instance_id_in: InstanceIdIn,
    /// The instance of an InfraMachine, given its providerID if it has one.
    pub instance: fn(&Launch<'_>) -> Launched,
}

/// The AWS provider (CAPA).
pub(super) const AWS: Platform = Platform {
    kind: conversion::aws::KINDS.machine,
    finalizer: AWS_MACHINE_FINALIZER,
    manager: "simulated-aws-machine-controller",
    running: "running",
    terminated: "terminated",
    instance_id_in: InstanceIdIn::Spec,
    instance: ec2_instance,
};

/// The OpenStack provider (CAPO, `v1beta1`): Nova's server states are upper case.
pub(super) const OPENSTACK: Platform = Platform {
    kind: conversion::openstack::KINDS.machine,
    finalizer: OPENSTACK_MACHINE_FINALIZER,
    manager: "simulated-openstack-machine-controller",
    running: "ACTIVE",
    terminated: "DELETED",
    instance_id_in: InstanceIdIn::Status,
    instance: nova_server,
};

/// Every simulated infrastructure provider.
pub(super) const PLATFORMS: [&Platform; 2] = [&AWS, &OPENSTACK];

/// What an instance is derived from.
pub(super) struct Launch<'a> {
    /// The InfraMachine.
    pub infra: &'a DynamicObject,
    /// Its owner Machine.
    pub machine: &'a Machine,
    /// The default zone.
    pub cloud: &'a Cloud,
}

/// An instance as an InfraMachine reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Launched {
    /// `spec.providerID`, which the CAPI Machine copies.
    pub provider_id: String,
    /// The cloud's own ID of the instance.
    pub instance_id: String,
    /// `status.addresses`, which the CAPI Machine copies.
    pub addresses: Value,
}

/// Runs `platform`'s controller once its CRD is served (it may be installed after the
/// providers start, as in a cluster; on a cluster of another platform it never is).
pub(super) async fn run(platform: &'static Platform, shared: Shared, shutdown: CancellationToken) {
    let mut logged = false;
    let resource = loop {
        match shared.infra_resource(GROUP, platform.kind).await {
            Ok(resource) => break resource,
            Err(error) => {
                if logged {
                    tracing::debug!(%error, kind = platform.kind, "not served yet; its provider waits");
                } else {
                    tracing::info!(%error, kind = platform.kind, "not served yet; its provider waits");
                    logged = true;
                }
                tokio::select! {
                    () = tokio::time::sleep(CRD_RETRY) => {}
                    () = shutdown.cancelled() => return,
                }
            }
        }
    };
    let api =
        Api::<DynamicObject>::namespaced_with(shared.client.clone(), &shared.namespaces.capi, &resource);
    let controller = Controller::new_with(api, watcher::Config::default(), resource);
    let reconcile = move |infra, ctx| reconcile(infra, ctx, platform);
    runtime::run(
        controller,
        Ctx::new(shared, platform.manager),
        reconcile,
        shutdown,
    )
    .await;
}

async fn reconcile(
    infra: Arc<DynamicObject>,
    ctx: Arc<Ctx>,
    platform: &'static Platform,
) -> Result<Action, Error> {
    let Some(owner) = infra
        .owner_references()
        .iter()
        .find(|o| o.kind == "Machine" && o.api_version.starts_with("cluster.x-k8s.io/"))
    else {
        tracing::debug!(kind = platform.kind, infra = %infra.name_any(), "Machine Controller has not yet set OwnerRef");
        return Ok(Action::await_change());
    };
    let machines = Api::<Machine>::namespaced(ctx.client(), &ctx.shared.namespaces.capi);
    let Some(machine) = machines.get_opt(&owner.name).await? else {
        tracing::debug!(kind = platform.kind, infra = %infra.name_any(), machine = %owner.name, "owner Machine not found");
        return Ok(Action::await_change());
    };
    let api = ctx.shared.infra_api(GROUP, platform.kind).await?;
    let status = &infra.data["status"];

    let mut conditions = Conditions::from_list(&status["conditions"]);
    let paused = has_paused_annotation(infra.as_ref());
    conditions.set(&if paused {
        Condition::new("Paused", true, "Paused").message(format!(
            "{} has the cluster.x-k8s.io/paused annotation",
            platform.kind
        ))
    } else {
        Condition::new("Paused", false, "NotPaused")
    });
    if conditions.changed() {
        let update = json!({ "conditions": conditions.into_json() });
        ctx.patch_status(&api, &infra, update).await?;
        return Ok(Action::await_change());
    }
    if paused {
        return Ok(Action::await_change());
    }

    let finalized = infra.finalizers().iter().any(|f| f == platform.finalizer);
    if infra.meta().deletion_timestamp.is_some() {
        if finalized {
            terminate(&api, &infra, platform, &ctx).await?;
        }
        return Ok(Action::await_change());
    }
    if !finalized {
        ctx.add_finalizer(&api, &infra, platform.finalizer).await?;
        return Ok(Action::await_change());
    }

    provision(&api, &infra, &machine, conditions, platform, &ctx).await?;
    Ok(Action::await_change())
}

/// "Runs the instance" (its providerID first), then reports it running and ready: one
/// write per reconcile, the watch event of the first bringing the second.
async fn provision(
    api: &Api<DynamicObject>,
    infra: &DynamicObject,
    machine: &Machine,
    mut conditions: Conditions,
    platform: &Platform,
    ctx: &Ctx,
) -> Result<(), Error> {
    let launch = Launch {
        infra,
        machine,
        cloud: &ctx.shared.cloud,
    };
    let instance = (platform.instance)(&launch);
    let status = &infra.data["status"];
    if !infra.data["spec"]["providerID"].is_string() {
        let mut spec = json!({ "providerID": instance.provider_id });
        if platform.instance_id_in == InstanceIdIn::Spec {
            spec["instanceID"] = json!(instance.instance_id);
        }
        ctx.patch(api, infra, json!({ "spec": spec })).await?;
    } else if status["ready"] != true || status["instanceState"] != platform.running {
        // Also after a migration, when the sync has already copied `ready` from the
        // Machine API: the provider reports the instance's state on every reconcile.
        conditions.set(&Condition::new("InstanceReady", true, "InstanceReady"));
        let mut update = json!({
            // Both contracts: `ready` (the providers' CRDs today) and the v1beta2 contract's
            // `initialization.provisioned` (pruned where the CRD does not have it).
            "ready": true,
            "initialization": { "provisioned": true },
            "instanceState": platform.running,
            "addresses": instance.addresses,
            "conditions": conditions.into_json(),
        });
        if platform.instance_id_in == InstanceIdIn::Status {
            update["instanceID"] = json!(instance.instance_id);
        }
        ctx.patch_status(api, infra, update).await?;
    }
    Ok(())
}

/// Deleting: "terminates the instance" if one was launched, then removes the finalizer.
async fn terminate(
    api: &Api<DynamicObject>,
    infra: &DynamicObject,
    platform: &Platform,
    ctx: &Ctx,
) -> Result<(), Error> {
    let launched = match platform.instance_id_in {
        InstanceIdIn::Spec => infra.data["spec"]["instanceID"].is_string(),
        InstanceIdIn::Status => infra.data["spec"]["providerID"].is_string(),
    };
    if launched && infra.data["status"]["instanceState"] != platform.terminated {
        let update = json!({ "instanceState": platform.terminated, "ready": false });
        ctx.patch_status(api, infra, update).await
    } else {
        ctx.remove_finalizer(api, infra, platform.finalizer).await
    }
}

/// The AWSMachine's EC2 instance: the one its providerID names, else a new one in its
/// Machine's failure domain (or the cloud's default zone).
fn ec2_instance(launch: &Launch<'_>) -> Launched {
    let uid = launch.infra.uid().unwrap_or_default();
    let spec = &launch.infra.data["spec"];
    let instance = if let Some(provider_id) = spec["providerID"].as_str() {
        let zone = zone_of_provider_id(provider_id).unwrap_or(&launch.cloud.zone);
        let mut instance = Instance::for_uid(&uid, zone);
        if let Some(id) = spec["instanceID"].as_str() {
            id.clone_into(&mut instance.id);
        }
        instance
    } else {
        let zone = launch
            .machine
            .spec
            .failure_domain
            .as_deref()
            .filter(|zone| !zone.is_empty())
            .unwrap_or(&launch.cloud.zone);
        Instance::for_uid(&uid, zone)
    };
    Launched {
        provider_id: instance.provider_id(),
        instance_id: instance.id.clone(),
        addresses: instance.addresses(),
    }
}

/// The OpenStackMachine's Nova server, named after the OpenStackMachine (as CAPO names
/// it): the one its providerID names, else a new one.
fn nova_server(launch: &Launch<'_>) -> Launched {
    let uid = launch.infra.uid().unwrap_or_default();
    let name = launch.infra.name_any();
    let server = match launch.infra.data["spec"]["providerID"].as_str() {
        Some(provider_id) => Server::with_provider_id(provider_id, &uid, &name),
        None => Server::for_uid(&uid, &name),
    };
    Launched {
        provider_id: server.provider_id(),
        instance_id: server.id.clone(),
        addresses: server.addresses(),
    }
}
