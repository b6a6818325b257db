//! The AWS infrastructure provider's AWSMachine controller (CAPA's
//! `controllers/awsmachine_controller.go`), as the sync sees it:
//!
//! | state | what it does |
//! |---|---|
//! | no owner Machine | nothing ("Machine Controller has not yet set OwnerRef") |
//! | `cluster.x-k8s.io/paused` on the AWSMachine | nothing but `Paused`=True (`Paused`) — not even deletion |
//! | otherwise | `Paused`=False (`NotPaused`), then on: |
//! | being deleted | "terminates the instance" (`instanceState: terminated`, not ready), then removes its finalizer |
//! | no finalizer | adds `awsmachine.infrastructure.cluster.x-k8s.io` |
//! | no `spec.providerID` | "runs an instance": `spec.providerID` `aws:///<zone>/i-…`, `spec.instanceID` |
//! | not ready | `status.ready`, `status.initialization.provisioned`, `instanceState: running`, addresses, `InstanceReady` |
//!
//! CAPA pauses on the AWSMachine's own annotation or its Cluster's `spec.paused`; there is
//! no Cluster object here, so only the annotation counts. Its conditions are Cluster API
//! v1beta1 conditions (with a severity), as CAPA's v1beta2 API still has them.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::json;
use sync_core::api::capi::Machine;
use tokio_util::sync::CancellationToken;

use super::AWS_MACHINE_FINALIZER;
use super::conditions::{Condition, Conditions};
use super::instance::{Instance, zone_of_provider_id};
use super::runtime::{self, Ctx, Error, Shared, has_paused_annotation};

/// The field manager of this controller's writes.
pub(super) const MANAGER: &str = "simulated-aws-machine-controller";
/// The AWS provider's API group.
pub(super) const GROUP: &str = "infrastructure.cluster.x-k8s.io";
/// The kind this provider reconciles.
pub(super) const KIND: &str = "AWSMachine";
/// How long to wait before looking again for a missing AWSMachine CRD.
const CRD_RETRY: Duration = Duration::from_secs(5);

pub(super) async fn run(shared: Shared, shutdown: CancellationToken) {
    // The CRD may be installed after the provider starts, as in a cluster.
    let resource = loop {
        match shared.infra_resource(GROUP, KIND).await {
            Ok(resource) => break resource,
            Err(error) => {
                tracing::info!(%error, "AWSMachines are not served yet; the AWS provider waits");
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
    runtime::run(controller, Ctx::new(shared, MANAGER), reconcile, shutdown).await;
}

async fn reconcile(aws_machine: Arc<DynamicObject>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let Some(owner) = aws_machine
        .owner_references()
        .iter()
        .find(|o| o.kind == "Machine" && o.api_version.starts_with("cluster.x-k8s.io/"))
    else {
        tracing::debug!(aws_machine = %aws_machine.name_any(), "Machine Controller has not yet set OwnerRef");
        return Ok(Action::await_change());
    };
    let machines = Api::<Machine>::namespaced(ctx.client(), &ctx.shared.namespaces.capi);
    let Some(machine) = machines.get_opt(&owner.name).await? else {
        tracing::debug!(aws_machine = %aws_machine.name_any(), machine = %owner.name, "owner Machine not found");
        return Ok(Action::await_change());
    };
    let api = ctx.shared.infra_api(GROUP, KIND).await?;
    let status = &aws_machine.data["status"];

    let mut conditions = Conditions::from_list(&status["conditions"]);
    let paused = has_paused_annotation(aws_machine.as_ref());
    conditions.set(&if paused {
        Condition::new("Paused", true, "Paused")
            .message("AWSMachine has the cluster.x-k8s.io/paused annotation")
    } else {
        Condition::new("Paused", false, "NotPaused")
    });
    if conditions.changed() {
        ctx.patch_status(
            &api,
            &aws_machine,
            json!({ "conditions": conditions.into_json() }),
        )
        .await?;
        return Ok(Action::await_change());
    }
    if paused {
        return Ok(Action::await_change());
    }

    if aws_machine.meta().deletion_timestamp.is_some() {
        if !aws_machine
            .finalizers()
            .iter()
            .any(|f| f == AWS_MACHINE_FINALIZER)
        {
            return Ok(Action::await_change());
        }
        let launched = aws_machine.data["spec"]["instanceID"].is_string();
        if launched && status["instanceState"] != "terminated" {
            let update = json!({ "instanceState": "terminated", "ready": false });
            ctx.patch_status(&api, &aws_machine, update).await?;
        } else {
            ctx.remove_finalizer(&api, &aws_machine, AWS_MACHINE_FINALIZER)
                .await?;
        }
        return Ok(Action::await_change());
    }
    if !aws_machine
        .finalizers()
        .iter()
        .any(|f| f == AWS_MACHINE_FINALIZER)
    {
        ctx.add_finalizer(&api, &aws_machine, AWS_MACHINE_FINALIZER)
            .await?;
        return Ok(Action::await_change());
    }

    let instance = instance_of(&aws_machine, &machine, &ctx);
    if !aws_machine.data["spec"]["providerID"].is_string() {
        let patch = json!({ "spec": { "providerID": instance.provider_id(), "instanceID": instance.id } });
        ctx.patch(&api, &aws_machine, patch).await?;
    } else if status["ready"] != true {
        conditions.set(&Condition::new("InstanceReady", true, "InstanceReady"));
        let update = json!({
            // Both contracts: `ready` (CAPA's CRD today) and the v1beta2 contract's
            // `initialization.provisioned` (pruned where the CRD does not have it).
            "ready": true,
            "initialization": { "provisioned": true },
            "instanceState": "running",
            "addresses": instance.addresses(),
            "conditions": conditions.into_json(),
        });
        ctx.patch_status(&api, &aws_machine, update).await?;
    }
    Ok(Action::await_change())
}

/// The AWSMachine's instance: the one its providerID names, else a new one in its
/// Machine's failure domain (or the cloud's default zone).
fn instance_of(aws_machine: &DynamicObject, machine: &Machine, ctx: &Ctx) -> Instance {
    let uid = aws_machine.uid().unwrap_or_default();
    let spec = &aws_machine.data["spec"];
    if let Some(provider_id) = spec["providerID"].as_str() {
        let zone = zone_of_provider_id(provider_id).unwrap_or(&ctx.shared.cloud.zone);
        let mut instance = Instance::for_uid(&uid, zone);
        if let Some(id) = spec["instanceID"].as_str() {
            id.clone_into(&mut instance.id);
        }
        return instance;
    }
    let zone = machine
        .spec
        .failure_domain
        .as_deref()
        .filter(|zone| !zone.is_empty())
        .unwrap_or(&ctx.shared.cloud.zone);
    Instance::for_uid(&uid, zone)
}
