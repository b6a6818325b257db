//! The Machine API machine controller with the AWS and OpenStack actuators
//! (machine-api-operator's `pkg/controller/machine`, machine-api-provider-aws and
//! machine-api-provider-openstack), as the sync sees it — the actuator chosen by the
//! providerSpec's kind (`OpenstackProviderSpec` is OpenStack, anything else AWS):
//!
//! | state | what it does |
//! |---|---|
//! | `status.authoritativeAPI` empty | copies `spec.authoritativeAPI` (default `MachineAPI`) into it |
//! | authority not `MachineAPI` | nothing but `Paused`=True (`AuthoritativeAPINotMachineAPI`) — not even deletion |
//! | authority `MachineAPI` | `Paused`=False (`AuthoritativeAPIMachineAPI`), then on: |
//! | no finalizer | adds `machine.machine.openshift.io` |
//! | no phase | `Provisioning` |
//! | no `spec.providerID` | "creates the instance": AWS `aws:///<zone>/i-…`, instance type/region/zone labels, instance-state annotation `running`; OpenStack `openstack:///<server uuid>`, instance-state annotation `ACTIVE` |
//! | no addresses (AWS: or provider status) | addresses, `Provisioned`; AWS also providerStatus (`instanceId`, `instanceState`, `MachineCreation`) — the OpenStack actuator writes none |
//! | no `status.nodeRef` | the Node joined: nodeRef, `Running` |
//! | being deleted | `Deleting`; waits for pre-terminate hooks; "terminates the instance"; removes its finalizer |

use std::sync::Arc;

use kube::api::Api;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::AuthoritativeApi;
use sync_core::api::mapi::Machine;

use super::MAPI_MACHINE_FINALIZER;
use super::conditions::{Condition, Conditions, now};
use super::instance::{Instance, Server, zone_of_provider_id};
use super::runtime::{self, Ctx, Error, Shared};

/// The field manager of this controller's writes.
pub(super) const MANAGER: &str = "simulated-machine-api-machine-controller";
/// The Machine API's `Paused` condition.
const PAUSED: &str = "Paused";
/// The labels and annotation the AWS actuator keeps on a Machine.
const INSTANCE_TYPE_LABEL: &str = "machine.openshift.io/instance-type";
const REGION_LABEL: &str = "machine.openshift.io/region";
const ZONE_LABEL: &str = "machine.openshift.io/zone";
const INSTANCE_STATE_ANNOTATION: &str = "machine.openshift.io/instance-state";
/// The kind of the Machine API OpenStack providerSpec.
const OPENSTACK_PROVIDER_SPEC: &str = conversion::openstack::provider::PROVIDER_SPEC_KIND;

pub(super) async fn run(shared: Shared, shutdown: tokio_util::sync::CancellationToken) {
    let api = Api::<Machine>::namespaced(shared.client.clone(), &shared.namespaces.mapi);
    let controller = Controller::new(api, watcher::Config::default());
    runtime::run(controller, Ctx::new(shared, MANAGER), reconcile, shutdown).await;
}

async fn reconcile(machine: Arc<Machine>, ctx: Arc<Ctx>) -> Result<Action, Error> {
    let api = Api::<Machine>::namespaced(ctx.client(), &ctx.shared.namespaces.mapi);
    let status = machine.status.clone().unwrap_or_default();
    let mut conditions = Conditions::from_list(&status.sync.conditions);

    // Pausing comes first: a Machine another API drives is not touched, not even deleted.
    match &status.sync.authoritative_api {
        None => {
            let requested = machine
                .spec
                .authoritative_api
                .clone()
                .unwrap_or(AuthoritativeApi::MachineApi);
            ctx.patch_status(&api, &machine, json!({ "authoritativeAPI": requested }))
                .await?;
            return Ok(Action::await_change());
        }
        Some(AuthoritativeApi::Unknown(value)) => {
            tracing::warn!(machine = %machine.name_any(), %value, "invalid status.authoritativeAPI; leaving the machine alone");
            return Ok(Action::await_change());
        }
        Some(authority) => {
            let message = format!("The AuthoritativeAPI status is set to '{authority}'");
            let paused = *authority != AuthoritativeApi::MachineApi;
            conditions.set(&if paused {
                Condition::new(PAUSED, true, "AuthoritativeAPINotMachineAPI").message(message)
            } else {
                Condition::new(PAUSED, false, "AuthoritativeAPIMachineAPI")
                    .message(message)
                    .severity("Info")
            });
            if conditions.changed() {
                ctx.patch_status(&api, &machine, json!({ "conditions": conditions.into_json() }))
                    .await?;
                return Ok(Action::await_change());
            }
            if paused {
                return Ok(Action::await_change());
            }
        }
    }

    if machine.meta().deletion_timestamp.is_some() {
        return delete(&api, &machine, &ctx).await;
    }
    if !machine.finalizers().iter().any(|f| f == MAPI_MACHINE_FINALIZER) {
        ctx.add_finalizer(&api, &machine, MAPI_MACHINE_FINALIZER).await?;
        return Ok(Action::await_change());
    }
    if status.phase.as_deref() == Some("Failed") {
        return Ok(Action::await_change());
    }

    let spec = provider_spec(&machine);
    let vm = Vm::of(&machine, &spec, &ctx);
    let needs_provision = match vm {
        Vm::Ec2(_) => status.provider_status.is_none() || status.addresses.is_none(),
        Vm::Nova(_) => status.addresses.is_none(),
    };
    if status.phase.is_none() {
        ctx.patch_status(&api, &machine, phase("Provisioning")).await?;
    } else if machine.spec.provider_id.is_none() {
        ctx.patch(&api, &machine, vm.launch_patch(&spec)).await?;
    } else if needs_provision {
        ctx.patch_status(&api, &machine, vm.provisioned()).await?;
    } else if status.node_ref.is_none() {
        let mut update = phase("Running");
        update["nodeRef"] = json!({ "kind": "Node", "name": node_name(&status, &vm) });
        ctx.patch_status(&api, &machine, update).await?;
    } else if status.phase.as_deref() != Some("Running") {
        ctx.patch_status(&api, &machine, phase("Running")).await?;
    }
    Ok(Action::await_change())
}

/// Deleting: phase, lifecycle hooks, instance termination, then the finalizer.
async fn delete(api: &Api<Machine>, machine: &Machine, ctx: &Ctx) -> Result<Action, Error> {
    let status = machine.status.clone().unwrap_or_default();
    if status.phase.as_deref() != Some("Deleting") {
        ctx.patch_status(api, machine, phase("Deleting")).await?;
        return Ok(Action::await_change());
    }
    if !machine.finalizers().iter().any(|f| f == MAPI_MACHINE_FINALIZER) {
        return Ok(Action::await_change());
    }
    let pre_terminate = machine
        .spec
        .lifecycle_hooks
        .as_ref()
        .and_then(|hooks| hooks.pre_terminate.as_ref())
        .is_some_and(|hooks| !hooks.is_empty());
    if pre_terminate {
        tracing::info!(machine = %machine.name_any(), "not terminating the instance: a pre-terminate hook holds it");
        return Ok(Action::await_change());
    }
    let state = status
        .provider_status
        .as_ref()
        .map(|raw| raw.to_value()["instanceState"].clone())
        .unwrap_or(Value::Null);
    if status.provider_status.is_some() && state != "terminated" {
        let update = json!({ "providerStatus": { "instanceState": "terminated" }, "lastUpdated": now() });
        ctx.patch_status(api, machine, update).await?;
        return Ok(Action::await_change());
    }
    ctx.remove_finalizer(api, machine, MAPI_MACHINE_FINALIZER).await?;
    Ok(Action::await_change())
}

fn phase(phase: &str) -> Value {
    json!({ "phase": phase, "lastUpdated": now() })
}

fn provider_spec(machine: &Machine) -> Value {
    machine
        .spec
        .provider_spec
        .as_ref()
        .and_then(|spec| spec.value.as_ref())
        .map(|value| value.to_value())
        .unwrap_or(Value::Null)
}

/// The machine's instance, as its actuator sees it.
enum Vm {
    /// The AWS actuator's EC2 instance.
    Ec2(Instance),
    /// The OpenStack actuator's Nova server.
    Nova(Server),
}

impl Vm {
    /// The instance of a Machine: the one its providerID names, else a new one (in the
    /// zone of an AWS providerSpec, or the cloud's default zone).
    fn of(machine: &Machine, spec: &Value, ctx: &Ctx) -> Self {
        let uid = machine.uid().unwrap_or_default();
        let provider_id = machine.spec.provider_id.as_deref();
        if spec["kind"] == OPENSTACK_PROVIDER_SPEC {
            let name = machine.name_any();
            return Self::Nova(match provider_id {
                Some(provider_id) => Server::with_provider_id(provider_id, &uid, &name),
                None => Server::for_uid(&uid, &name),
            });
        }
        if let Some(provider_id) = provider_id {
            let zone = zone_of_provider_id(provider_id).unwrap_or(&ctx.shared.cloud.zone);
            let mut instance = Instance::for_uid(&uid, zone);
            if let Some(id) = provider_id.rsplit('/').next().filter(|id| id.starts_with("i-")) {
                id.clone_into(&mut instance.id);
            }
            return Self::Ec2(instance);
        }
        let zone = spec["placement"]["availabilityZone"]
            .as_str()
            .filter(|zone| !zone.is_empty())
            .unwrap_or(&ctx.shared.cloud.zone);
        Self::Ec2(Instance::for_uid(&uid, zone))
    }

    /// "Creating the instance": the providerID and what the actuator labels and annotates
    /// the Machine with (the OpenStack actuator reports the server's state only in the
    /// instance-state annotation).
    fn launch_patch(&self, spec: &Value) -> Value {
        match self {
            Self::Ec2(instance) => {
                let mut labels = json!({
                    REGION_LABEL: instance.region(),
                    ZONE_LABEL: instance.zone,
                });
                if let Some(instance_type) = spec["instanceType"].as_str() {
                    labels[INSTANCE_TYPE_LABEL] = json!(instance_type);
                }
                json!({
                    "metadata": {
                        "labels": labels,
                        "annotations": { INSTANCE_STATE_ANNOTATION: "running" },
                    },
                    "spec": { "providerID": instance.provider_id() },
                })
            }
            Self::Nova(server) => json!({
                "metadata": { "annotations": { INSTANCE_STATE_ANNOTATION: "ACTIVE" } },
                "spec": { "providerID": server.provider_id() },
            }),
        }
    }

    /// The status of a provisioned machine: addresses, and AWS's providerStatus (the
    /// OpenStack actuator writes none).
    fn provisioned(&self) -> Value {
        let mut update = phase("Provisioned");
        match self {
            Self::Ec2(instance) => {
                update["addresses"] = instance.addresses();
                update["providerStatus"] = json!({
                    "apiVersion": "machine.openshift.io/v1beta1",
                    "kind": "AWSMachineProviderStatus",
                    "instanceId": instance.id,
                    "instanceState": "running",
                    "conditions": [{
                        "type": "MachineCreation",
                        "status": "True",
                        "reason": "MachineCreationSucceeded",
                        "message": "Machine successfully created",
                        "lastTransitionTime": now(),
                    }],
                });
            }
            Self::Nova(server) => update["addresses"] = server.addresses(),
        }
        update
    }

    /// The host name the Node registers as.
    fn host_name(&self) -> String {
        match self {
            Self::Ec2(instance) => instance.host_name(),
            Self::Nova(server) => server.name.clone(),
        }
    }
}

/// The Node's name: the host name among the addresses, else the instance's.
fn node_name(status: &sync_core::api::mapi::MachineStatus, vm: &Vm) -> String {
    status
        .addresses
        .iter()
        .flatten()
        .find(|address| address.type_ == "InternalDNS")
        .map(|address| address.address.clone())
        .unwrap_or_else(|| vm.host_name())
}
