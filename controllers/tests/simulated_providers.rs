//! The simulated providers on envtest: each provider's lifecycle (finalizers, phases,
//! provider IDs, node references, provider status, replica counts), pausing and unpausing,
//! and deletion ordering, asserted on the objects' final state.
#![cfg(feature = "embedded")]

mod common;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, wait_for};
use controllers::simulate::{
    self, AWS_MACHINE_FINALIZER, CAPI_MACHINE_FINALIZER, CAPI_MACHINE_SET_FINALIZER, MAPI_MACHINE_FINALIZER,
    OPENSTACK_MACHINE_FINALIZER, Reconciled, SimulatedProviders,
};
use envtest::TestEnv;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use sync_core::Namespaces;
use sync_core::api::{capi, mapi};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

/// An envtest with the providers running against it.
struct Providers {
    env: TestEnv,
    reconciled: UnboundedReceiver<Reconciled>,
    /// Reconciles received so far.
    seen: Vec<Reconciled>,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Providers {
    async fn start() -> Self {
        Self::start_on(common::env().await).await
    }

    /// The providers on `env`.
    async fn start_on(env: TestEnv) -> Self {
        let (tx, reconciled) = unbounded_channel();
        let namespaces = Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        };
        let stop = CancellationToken::new();
        let providers = SimulatedProviders::new(env.client(), namespaces).with_observer(tx);
        let task = tokio::spawn(providers.run(stop.clone()));
        Self {
            env,
            reconciled,
            seen: Vec::new(),
            stop,
            task,
        }
    }

    fn client(&self) -> Client {
        self.env.client()
    }

    /// Waits until `controller` has reconciled `name` as of `resource_version` or later:
    /// from then on, what it did not do, it will not do for that change.
    async fn reconciled(&mut self, controller: &str, name: &str, resource_version: &str) {
        let target: u64 = resource_version.parse().unwrap_or(u64::MAX);
        let matches = |done: &Reconciled| {
            done.controller == controller
                && done.name == name
                && done.resource_version.parse::<u64>().unwrap_or(0) >= target
        };
        if self.seen.iter().any(matches) {
            return;
        }
        let waited = tokio::time::timeout(TIMEOUT, async {
            while let Some(done) = self.reconciled.recv().await {
                let found = matches(&done);
                self.seen.push(done);
                if found {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(
            waited,
            Ok(true),
            "{controller} never reconciled {name} at {resource_version}"
        );
    }

    async fn stop(self) {
        self.stop.cancel();
        assert!(self.task.await.is_ok(), "the providers' task failed");
        self.env.stop().await;
    }
}

fn aws_machines(client: Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("infrastructure.cluster.x-k8s.io", "v1beta2", "AWSMachine");
    Api::namespaced_with(client, CAPI_NS, &ApiResource::from_gvk(&gvk))
}

fn aws_machine_templates(client: Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("infrastructure.cluster.x-k8s.io", "v1beta2", "AWSMachineTemplate");
    Api::namespaced_with(client, CAPI_NS, &ApiResource::from_gvk(&gvk))
}

async fn create<K>(api: &Api<K>, object: Value) -> K
where
    K: Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = match serde_json::from_value(object) {
        Ok(object) => object,
        Err(error) => panic!("test object: {error}"),
    };
    match api.create(&PostParams::default(), &object).await {
        Ok(created) => created,
        Err(error) => panic!("creating {}: {error}", object.name_any()),
    }
}

async fn merge<K>(api: &Api<K>, name: &str, patch: Value, status: bool) -> K
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let params = PatchParams::default();
    let result = if status {
        api.patch_status(name, &params, &Patch::Merge(&patch)).await
    } else {
        api.patch(name, &params, &Patch::Merge(&patch)).await
    };
    match result {
        Ok(object) => object,
        Err(error) => panic!("patching {name}: {error}"),
    }
}

async fn delete<K>(api: &Api<K>, name: &str)
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    if let Err(error) = api.delete(name, &DeleteParams::default()).await {
        panic!("deleting {name}: {error}");
    }
}

/// A watch stream past its first list (`what` names it if it never gets there).
async fn established<K>(
    api: Api<K>,
    config: watcher::Config,
    what: &str,
) -> std::pin::Pin<Box<impl futures::Stream<Item = watcher::Result<watcher::Event<K>>> + Send + use<K>>>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let mut stream = Box::pin(watcher(api, config));
    let started = tokio::time::timeout(TIMEOUT, async {
        while let Some(event) = stream.next().await {
            if matches!(event, Ok(watcher::Event::InitDone)) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(started, Ok(true), "{what} never started");
    stream
}

/// Records the distinct phases `name` goes through until it reaches `last`. Returns once
/// the watch is established (before the object exists), so no phase is missed.
async fn record_phases<K>(api: Api<K>, name: &str, last: &'static str) -> tokio::task::JoinHandle<Vec<String>>
where
    K: Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug + Send + 'static,
{
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut stream = established(api, config, &format!("the watch on {name}")).await;
    tokio::spawn(async move {
        let mut phases: Vec<String> = Vec::new();
        let recorded = tokio::time::timeout(TIMEOUT, async {
            while let Some(event) = stream.next().await {
                let Ok(watcher::Event::Apply(object)) = event else {
                    continue;
                };
                if let Some(phase) = json_of(&object)["status"]["phase"].as_str() {
                    if phases.last().map(String::as_str) != Some(phase) {
                        phases.push(phase.to_owned());
                    }
                    if phase == last {
                        break;
                    }
                }
            }
        })
        .await;
        assert!(recorded.is_ok(), "never reached {last}: {phases:?}");
        phases
    })
}

/// Polls `name` until `ready` holds (or it is gone, if `ready` accepts `None`).
async fn wait_until<K>(api: &Api<K>, name: &str, what: &str, ready: impl Fn(Option<&K>) -> bool) -> Option<K>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    wait_for(what, TIMEOUT, || async {
        let object = api.get_opt(name).await.ok()?;
        ready(object.as_ref()).then_some(object)
    })
    .await
}

fn json_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The condition of `type_` in a JSON object's `status.conditions`.
fn condition(object: &Value, type_: &str) -> Value {
    object["status"]["conditions"]
        .as_array()
        .and_then(|list| list.iter().find(|c| c["type"] == type_).cloned())
        .unwrap_or(Value::Null)
}

fn mapi_machine(name: &str, authority: &str) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": { "name": name, "namespace": MAPI_NS },
        "spec": {
            "authoritativeAPI": authority,
            "providerSpec": { "value": {
                "apiVersion": "machine.openshift.io/v1beta1",
                "kind": "AWSMachineProviderConfig",
                "instanceType": "m6i.xlarge",
                "placement": { "region": "eu-west-1", "availabilityZone": "eu-west-1b" },
            }},
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapi_machine_is_provisioned_then_terminated_before_its_finalizer_goes() {
    let providers = Providers::start().await;
    let machines = Api::<mapi::Machine>::namespaced(providers.client(), MAPI_NS);
    let phases = record_phases(machines.clone(), "worker-1", "Running").await;
    create(&machines, mapi_machine("worker-1", "MachineAPI")).await;
    assert_eq!(
        phases.await.ok(),
        Some(vec![
            "Provisioning".to_owned(),
            "Provisioned".to_owned(),
            "Running".to_owned()
        ])
    );

    let running = wait_until(&machines, "worker-1", "a Running MAPI Machine", |m| {
        m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    let machine = json_of(&running);
    assert_eq!(machine["status"]["authoritativeAPI"], "MachineAPI");
    assert_eq!(machine["metadata"]["finalizers"], json!([MAPI_MACHINE_FINALIZER]));
    let provider_id = machine["spec"]["providerID"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let instance_id = provider_id.strip_prefix("aws:///eu-west-1b/").unwrap_or_default();
    assert!(
        instance_id.starts_with("i-0") && instance_id.len() == 19,
        "{provider_id}"
    );
    assert_eq!(
        machine["metadata"]["labels"]["machine.openshift.io/instance-type"],
        "m6i.xlarge"
    );
    assert_eq!(
        machine["metadata"]["labels"]["machine.openshift.io/region"],
        "eu-west-1"
    );
    assert_eq!(
        machine["metadata"]["labels"]["machine.openshift.io/zone"],
        "eu-west-1b"
    );
    assert_eq!(
        machine["metadata"]["annotations"]["machine.openshift.io/instance-state"],
        "running"
    );
    let status = &machine["status"];
    let host = status["nodeRef"]["name"].as_str().unwrap_or_default();
    assert!(
        host.starts_with("ip-10-") && host.ends_with(".eu-west-1.compute.internal"),
        "{host}"
    );
    assert_eq!(status["nodeRef"]["kind"], "Node");
    assert_eq!(status["addresses"].as_array().map(Vec::len), Some(3));
    assert!(status["lastUpdated"].is_string());
    let provider_status = &status["providerStatus"];
    assert_eq!(provider_status["kind"], "AWSMachineProviderStatus");
    assert_eq!(provider_status["instanceId"], instance_id);
    assert_eq!(provider_status["instanceState"], "running");
    assert_eq!(provider_status["conditions"][0]["type"], "MachineCreation");
    assert_eq!(provider_status["conditions"][0]["status"], "True");
    assert_eq!(
        provider_status["conditions"][0]["reason"],
        "MachineCreationSucceeded"
    );
    let managers: Vec<&str> = machine["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["manager"].as_str())
        .collect();
    assert!(
        managers.contains(&simulate::MAPI_MACHINE_CONTROLLER),
        "{managers:?}"
    );
    let paused = condition(&machine, "Paused");
    assert_eq!(paused["status"], "False");
    assert_eq!(paused["reason"], "AuthoritativeAPIMachineAPI");
    assert_eq!(
        paused["message"],
        "The AuthoritativeAPI status is set to 'MachineAPI'"
    );

    // Another finalizer (as the sync's would) keeps the object, so its end state shows.
    merge(
        &machines,
        "worker-1",
        json!({"metadata": {"finalizers": [MAPI_MACHINE_FINALIZER, "test.example/hold"]}}),
        false,
    )
    .await;
    delete(&machines, "worker-1").await;
    let deleted = wait_until(&machines, "worker-1", "the MAPI finalizer released", |m| {
        m.is_some_and(|m| m.finalizers() == ["test.example/hold"])
    })
    .await;
    let machine = json_of(&deleted);
    assert_eq!(machine["status"]["phase"], "Deleting");
    assert_eq!(machine["status"]["providerStatus"]["instanceState"], "terminated");
    assert_eq!(machine["spec"]["providerID"], provider_id.as_str());
    providers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapi_machine_waits_for_pre_terminate_hooks() {
    let mut providers = Providers::start().await;
    let machines = Api::<mapi::Machine>::namespaced(providers.client(), MAPI_NS);
    let mut object = mapi_machine("worker-2", "MachineAPI");
    object["spec"]["lifecycleHooks"] = json!({"preTerminate": [{"name": "keep", "owner": "test"}]});
    create(&machines, object).await;
    wait_until(&machines, "worker-2", "a Running MAPI Machine", |m| {
        m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    delete(&machines, "worker-2").await;
    let deleting = wait_until(&machines, "worker-2", "phase Deleting", |m| {
        m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Deleting")
    })
    .await;
    let rv = deleting
        .as_ref()
        .and_then(|m| m.resource_version())
        .unwrap_or_default();
    providers
        .reconciled(simulate::MAPI_MACHINE_CONTROLLER, "worker-2", &rv)
        .await;
    let held = json_of(&machines.get("worker-2").await.ok());
    assert_eq!(held["metadata"]["finalizers"], json!([MAPI_MACHINE_FINALIZER]));
    assert_eq!(held["status"]["providerStatus"]["instanceState"], "running");

    merge(
        &machines,
        "worker-2",
        json!({"spec": {"lifecycleHooks": {"preTerminate": null}}}),
        false,
    )
    .await;
    wait_until(&machines, "worker-2", "the Machine gone", |o| o.is_none()).await;
    providers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapi_machine_pauses_while_another_api_is_authoritative_and_resumes_after() {
    let mut providers = Providers::start().await;
    let machines = Api::<mapi::Machine>::namespaced(providers.client(), MAPI_NS);
    create(&machines, mapi_machine("worker-3", "ClusterAPI")).await;
    // Another writer's condition (the sync's Synchronized), set while the provider works.
    let synchronized = json!({"type": "Synchronized", "status": "True", "reason": "",
        "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    merge(
        &machines,
        "worker-3",
        json!({"status": {"conditions": [synchronized.clone()]}}),
        true,
    )
    .await;

    let paused = wait_until(&machines, "worker-3", "Paused=True", |m| {
        m.is_some_and(|m| condition(&json_of(m), "Paused")["status"] == "True")
    })
    .await;
    let rv = paused
        .as_ref()
        .and_then(|m| m.resource_version())
        .unwrap_or_default();
    providers
        .reconciled(simulate::MAPI_MACHINE_CONTROLLER, "worker-3", &rv)
        .await;
    let machine = json_of(&machines.get("worker-3").await.ok());
    assert_eq!(machine["status"]["authoritativeAPI"], "ClusterAPI");
    let condition_now = condition(&machine, "Paused");
    assert_eq!(condition_now["reason"], "AuthoritativeAPINotMachineAPI");
    assert_eq!(
        condition_now["message"],
        "The AuthoritativeAPI status is set to 'ClusterAPI'"
    );
    assert!(
        machine["metadata"]["finalizers"].is_null(),
        "a paused Machine got a finalizer"
    );
    assert!(machine["status"]["phase"].is_null());
    assert!(machine["spec"]["providerID"].is_null());
    assert_eq!(
        condition(&machine, "Synchronized"),
        synchronized,
        "another writer's condition was lost"
    );

    // Migrating keeps it paused; MachineAPI resumes it.
    merge(
        &machines,
        "worker-3",
        json!({"status": {"authoritativeAPI": "Migrating"}}),
        true,
    )
    .await;
    wait_until(&machines, "worker-3", "the Migrating message", |m| {
        m.is_some_and(|m| {
            condition(&json_of(m), "Paused")["message"] == "The AuthoritativeAPI status is set to 'Migrating'"
        })
    })
    .await;
    merge(
        &machines,
        "worker-3",
        json!({"status": {"authoritativeAPI": "MachineAPI"}}),
        true,
    )
    .await;
    let resumed = wait_until(&machines, "worker-3", "a Running MAPI Machine", |m| {
        m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    let machine = json_of(&resumed);
    let condition_now = condition(&machine, "Paused");
    assert_eq!(condition_now["status"], "False");
    assert_eq!(condition_now["severity"], "Info");
    assert_eq!(machine["metadata"]["finalizers"], json!([MAPI_MACHINE_FINALIZER]));
    providers.stop().await;
}

fn aws_machine(name: &str) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "AWSMachine",
        "metadata": { "name": name, "namespace": CAPI_NS },
        "spec": { "instanceType": "m6i.xlarge" },
    })
}

fn capi_machine(name: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": { "name": name, "namespace": CAPI_NS },
        "spec": {
            "clusterName": "sample",
            "failureDomain": "us-west-2c",
            "bootstrap": { "dataSecretName": "worker-user-data" },
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "AWSMachine",
                "name": name,
            },
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_machine_runs_on_its_aws_machine_and_deletes_it_before_its_finalizer_goes() {
    let providers = Providers::start().await;
    let machines = Api::<capi::Machine>::namespaced(providers.client(), CAPI_NS);
    let infra = aws_machines(providers.client());
    create(&infra, aws_machine("worker-4")).await;
    let phases = record_phases(machines.clone(), "worker-4", "Running").await;
    let created = create(&machines, capi_machine("worker-4")).await;
    // Provisioning shows when the Machine looks before its AWSMachine is ready.
    let phases = phases.await.unwrap_or_default();
    assert!(
        phases == ["Provisioned", "Running"] || phases == ["Provisioning", "Provisioned", "Running"],
        "{phases:?}"
    );

    let running = wait_until(&machines, "worker-4", "a Running CAPI Machine", |m| {
        m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    let machine = json_of(&running);
    let aws = json_of(&infra.get("worker-4").await.ok());
    assert_eq!(machine["metadata"]["finalizers"], json!([CAPI_MACHINE_FINALIZER]));
    assert_eq!(
        machine["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"],
        "sample"
    );
    let provider_id = machine["spec"]["providerID"].as_str().unwrap_or_default();
    assert!(provider_id.starts_with("aws:///us-west-2c/i-0"), "{provider_id}");
    assert_eq!(aws["spec"]["providerID"], provider_id);
    assert_eq!(
        Some(provider_id),
        aws["spec"]["instanceID"]
            .as_str()
            .map(|id| format!("aws:///us-west-2c/{id}"))
            .as_deref()
    );
    let status = &machine["status"];
    assert!(
        status["nodeRef"]["name"]
            .as_str()
            .is_some_and(|n| n.ends_with(".us-west-2.compute.internal"))
    );
    assert_eq!(status["addresses"], aws["status"]["addresses"]);
    assert_eq!(
        status["initialization"],
        json!({"bootstrapDataSecretCreated": true, "infrastructureProvisioned": true})
    );
    assert_eq!(status["observedGeneration"], machine["metadata"]["generation"]);
    for (type_, expected) in [
        ("Paused", "False"),
        ("BootstrapConfigReady", "True"),
        ("InfrastructureReady", "True"),
        ("NodeReady", "True"),
        ("Ready", "True"),
        ("Available", "True"),
        ("Deleting", "False"),
    ] {
        assert_eq!(condition(&machine, type_)["status"], expected, "{type_}");
    }
    assert_eq!(condition(&machine, "Paused")["reason"], "NotPaused");
    // The AWSMachine: owned by its Machine, provisioned.
    assert_eq!(aws["metadata"]["finalizers"], json!([AWS_MACHINE_FINALIZER]));
    let owner = &aws["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["controller"].as_bool()),
        (Some("Machine"), Some(true))
    );
    assert_eq!(owner["uid"].as_str(), created.uid().as_deref());
    assert_eq!(
        aws["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"],
        "sample"
    );
    assert_eq!(aws["status"]["ready"], true, "{aws}");
    assert_eq!(aws["status"]["instanceState"], "running");
    assert_eq!(condition(&aws, "InstanceReady")["status"], "True");
    assert_eq!(condition(&aws, "Paused")["reason"], "NotPaused");

    // A second finalizer on the AWSMachine holds it: the Machine must wait for it to go.
    merge(
        &infra,
        "worker-4",
        json!({"metadata": {"finalizers": [AWS_MACHINE_FINALIZER, "test.example/hold"]}}),
        false,
    )
    .await;
    delete(&machines, "worker-4").await;
    let terminated = wait_until(&infra, "worker-4", "the AWSMachine's finalizer released", |a| {
        a.is_some_and(|a| a.finalizers() == ["test.example/hold"])
    })
    .await;
    let aws = json_of(&terminated);
    assert_eq!(aws["status"]["instanceState"], "terminated");
    assert_eq!(aws["status"]["ready"], false);
    let waiting = wait_until(
        &machines,
        "worker-4",
        "the Machine waiting for its AWSMachine",
        |m| {
            m.is_some_and(|m| {
                condition(&json_of(m), "Deleting")["reason"] == "WaitingForInfrastructureDeletion"
            })
        },
    )
    .await;
    let machine = json_of(&waiting);
    assert_eq!(machine["status"]["phase"], "Deleting");
    assert_eq!(machine["metadata"]["finalizers"], json!([CAPI_MACHINE_FINALIZER]));

    merge(
        &infra,
        "worker-4",
        json!({"metadata": {"finalizers": null}}),
        false,
    )
    .await;
    wait_until(&infra, "worker-4", "the AWSMachine gone", |o| o.is_none()).await;
    wait_until(&machines, "worker-4", "the Machine gone", |o| o.is_none()).await;
    providers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_machine_and_aws_machine_pause_on_the_annotation_and_resume_without_it() {
    let mut providers = Providers::start().await;
    let machines = Api::<capi::Machine>::namespaced(providers.client(), CAPI_NS);
    let infra = aws_machines(providers.client());
    let mut object = capi_machine("worker-5");
    object["metadata"]["annotations"] = json!({"cluster.x-k8s.io/paused": ""});
    let machine = create(&machines, object).await;
    // Owned by its Machine, as the sync creates it.
    let mut object = aws_machine("worker-5");
    object["metadata"]["annotations"] = json!({"cluster.x-k8s.io/paused": ""});
    object["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "worker-5",
        "uid": machine.uid(), "controller": true, "blockOwnerDeletion": true,
    }]);
    create(&infra, object).await;

    let paused = wait_until(&machines, "worker-5", "the Machine Paused=True", |m| {
        m.is_some_and(|m| condition(&json_of(m), "Paused")["status"] == "True")
    })
    .await;
    let aws_paused = wait_until(&infra, "worker-5", "the AWSMachine Paused=True", |a| {
        a.is_some_and(|a| condition(&json_of(a), "Paused")["status"] == "True")
    })
    .await;
    let machine_rv = paused
        .as_ref()
        .and_then(|m| m.resource_version())
        .unwrap_or_default();
    let aws_rv = aws_paused
        .as_ref()
        .and_then(|a| a.resource_version())
        .unwrap_or_default();
    providers
        .reconciled(simulate::CAPI_MACHINE_CONTROLLER, "worker-5", &machine_rv)
        .await;
    providers
        .reconciled(simulate::AWS_MACHINE_CONTROLLER, "worker-5", &aws_rv)
        .await;
    let machine = json_of(&machines.get("worker-5").await.ok());
    let aws = json_of(&infra.get("worker-5").await.ok());
    let machine_paused = condition(&machine, "Paused");
    assert_eq!(machine_paused["reason"], "Paused");
    assert_eq!(
        machine_paused["message"],
        "Machine has the cluster.x-k8s.io/paused annotation"
    );
    assert_eq!(
        machine_paused["observedGeneration"],
        machine["metadata"]["generation"]
    );
    // Cluster API adds its finalizer before looking at the annotation; nothing else moves.
    assert_eq!(machine["metadata"]["finalizers"], json!([CAPI_MACHINE_FINALIZER]));
    assert!(machine["status"]["phase"].is_null());
    assert!(machine["spec"]["providerID"].is_null());
    assert_eq!(
        condition(&aws, "Paused")["message"],
        "AWSMachine has the cluster.x-k8s.io/paused annotation"
    );
    assert!(aws["metadata"]["finalizers"].is_null());
    assert!(aws["spec"]["providerID"].is_null());

    let unpause = json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": null}}});
    merge(&machines, "worker-5", unpause.clone(), false).await;
    merge(&infra, "worker-5", unpause, false).await;
    let running = wait_until(&machines, "worker-5", "a Running CAPI Machine", |m| {
        m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    assert_eq!(condition(&json_of(&running), "Paused")["status"], "False");
    let aws = json_of(&infra.get("worker-5").await.ok());
    assert_eq!(condition(&aws, "Paused")["status"], "False");
    assert_eq!(aws["status"]["ready"], true, "{aws}");
    providers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapi_machine_set_scales_from_its_template_only_while_authoritative() {
    let mut providers = Providers::start().await;
    let sets = Api::<mapi::MachineSet>::namespaced(providers.client(), MAPI_NS);
    let machines = Api::<mapi::Machine>::namespaced(providers.client(), MAPI_NS);
    let selector = json!({"machine.openshift.io/cluster-api-machineset": "workers"});
    let mut template = mapi_machine("unused", "MachineAPI");
    let set = create(
        &sets,
        json!({
            "apiVersion": "machine.openshift.io/v1beta1",
            "kind": "MachineSet",
            "metadata": { "name": "workers", "namespace": MAPI_NS },
            "spec": {
                "replicas": 2,
                "selector": { "matchLabels": selector },
                "template": {
                    "metadata": { "labels": selector, "annotations": { "team": "a" } },
                    "spec": template["spec"].take(),
                },
            },
            "status": { "replicas": 0 },
        }),
    )
    .await;
    merge(
        &sets,
        "workers",
        json!({"status": {"authoritativeAPI": "MachineAPI"}}),
        true,
    )
    .await;

    let ready = wait_until(&sets, "workers", "2 ready replicas", |s| {
        s.and_then(|s| s.status.as_ref()).and_then(|s| s.ready_replicas) == Some(2)
    })
    .await;
    let status = json_of(&ready)["status"].clone();
    assert_eq!(status["replicas"], 2);
    assert_eq!(status["fullyLabeledReplicas"], 2);
    assert_eq!(status["availableReplicas"], 2);
    assert_eq!(
        status["labelSelector"],
        "machine.openshift.io/cluster-api-machineset=workers"
    );
    assert_eq!(
        status["observedGeneration"],
        json_of(&set)["metadata"]["generation"]
    );
    assert_eq!(condition(&json_of(&ready), "Paused")["status"], "False");
    let owned = machines
        .list(&Default::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    assert_eq!(owned.len(), 2);
    for machine in &owned {
        assert!(machine.name_any().starts_with("workers-"));
        assert_eq!(
            machine
                .labels()
                .get("machine.openshift.io/cluster-api-machineset")
                .map(String::as_str),
            Some("workers")
        );
        assert_eq!(machine.annotations().get("team").map(String::as_str), Some("a"));
        let owner = &machine.owner_references()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("MachineSet", "workers", Some(true))
        );
        assert_eq!(
            json_of(&machine.spec.provider_spec)["value"]["instanceType"],
            "m6i.xlarge"
        );
        assert_eq!(
            machine.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running")
        );
    }

    merge(&sets, "workers", json!({"spec": {"replicas": 1}}), false).await;
    wait_for("one Machine left", TIMEOUT, || async {
        let items = machines.list(&Default::default()).await.ok()?.items;
        (items.len() == 1).then_some(())
    })
    .await;

    // Not authoritative: paused, and a scale-up is not acted on.
    merge(
        &sets,
        "workers",
        json!({"status": {"authoritativeAPI": "Migrating"}}),
        true,
    )
    .await;
    wait_until(&sets, "workers", "Paused=True", |s| {
        s.is_some_and(|s| {
            let paused = condition(&json_of(s), "Paused");
            paused["status"] == "True" && paused["reason"] == "AuthoritativeAPINotMachineAPI"
        })
    })
    .await;
    let scaled = merge(&sets, "workers", json!({"spec": {"replicas": 3}}), false).await;
    let rv = scaled.resource_version().unwrap_or_default();
    providers
        .reconciled(simulate::MAPI_MACHINE_SET_CONTROLLER, "workers", &rv)
        .await;
    let items = machines
        .list(&Default::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    assert_eq!(items.len(), 1, "a paused MachineSet created Machines");

    merge(
        &sets,
        "workers",
        json!({"status": {"authoritativeAPI": "MachineAPI"}}),
        true,
    )
    .await;
    wait_until(&sets, "workers", "3 ready replicas", |s| {
        s.and_then(|s| s.status.as_ref()).and_then(|s| s.ready_replicas) == Some(3)
    })
    .await;
    providers.stop().await;
}

/// MachineSets that exist when the providers start all wait for the first list of the
/// Machine cache at once, and each is scaled once it is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_sets_waiting_together_for_the_machine_cache_are_all_scaled() {
    let env = common::env().await;
    let sets = Api::<mapi::MachineSet>::namespaced(env.client(), MAPI_NS);
    let names = ["a", "b", "c", "d", "e"];
    for name in names {
        let selector = json!({"machine.openshift.io/cluster-api-machineset": name});
        let mut template = mapi_machine("unused", "MachineAPI");
        create(
            &sets,
            json!({
                "apiVersion": "machine.openshift.io/v1beta1",
                "kind": "MachineSet",
                "metadata": { "name": name, "namespace": MAPI_NS },
                "spec": {
                    "replicas": 1,
                    "selector": { "matchLabels": selector },
                    "template": { "metadata": { "labels": selector }, "spec": template["spec"].take() },
                },
            }),
        )
        .await;
        merge(
            &sets,
            name,
            json!({"status": {"authoritativeAPI": "MachineAPI"}}),
            true,
        )
        .await;
    }
    let providers = Providers::start_on(env).await;
    for name in names {
        wait_until(&sets, name, &format!("{name}: 1 ready replica"), |s| {
            s.and_then(|s| s.status.as_ref()).and_then(|s| s.ready_replicas) == Some(1)
        })
        .await;
    }
    providers.stop().await;
}

/// Records the name of every object the watch sees, from its start until the handle is
/// aborted (so a Machine created and deleted again is counted).
async fn record_names<K>(api: Api<K>) -> (Arc<Mutex<BTreeSet<String>>>, tokio::task::JoinHandle<()>)
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let mut stream = established(api, watcher::Config::default(), "the watch").await;
    let names = Arc::new(Mutex::new(BTreeSet::new()));
    let recorded = names.clone();
    let task = tokio::spawn(async move {
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(object) | watcher::Event::Delete(object)) = event
                && let Ok(mut names) = recorded.lock()
            {
                names.insert(object.name_any());
            }
        }
    });
    (names, task)
}

/// The cached Machines and expectations: scaling from an adopted orphan to 30 creates each
/// missing Machine once, although the creates' events arrive while the set is still
/// creating (a reconcile on a store that has not seen them all would create more, then
/// delete the surplus).
///
/// The orphan exists before the providers start, so their Machine cache's first list has
/// it: created after, its event could reach the cache after the set's first reconcile,
/// which would then rightly create 30 and delete one once it adopts the orphan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapi_machine_set_adopts_an_orphan_and_creates_each_missing_machine_once() {
    let env = common::env().await;
    let sets = Api::<mapi::MachineSet>::namespaced(env.client(), MAPI_NS);
    let machines = Api::<mapi::Machine>::namespaced(env.client(), MAPI_NS);
    let selector = json!({"machine.openshift.io/cluster-api-machineset": "workers"});
    let mut orphan = mapi_machine("orphan", "MachineAPI");
    orphan["metadata"]["labels"] = selector.clone();
    create(&machines, orphan).await;
    let mut providers = Providers::start_on(env).await;
    let (names, recorder) = record_names(machines.clone()).await;
    let mut template = mapi_machine("unused", "MachineAPI");
    create(
        &sets,
        json!({
            "apiVersion": "machine.openshift.io/v1beta1",
            "kind": "MachineSet",
            "metadata": { "name": "workers", "namespace": MAPI_NS },
            "spec": {
                "replicas": 30,
                "selector": { "matchLabels": selector },
                "template": { "metadata": { "labels": selector }, "spec": template["spec"].take() },
            },
        }),
    )
    .await;
    let set = merge(
        &sets,
        "workers",
        json!({"status": {"authoritativeAPI": "MachineAPI"}}),
        true,
    )
    .await;
    let ready = wait_until(&sets, "workers", "30 ready replicas", |s| {
        s.and_then(|s| s.status.as_ref()).and_then(|s| s.ready_replicas) == Some(30)
    })
    .await;
    let rv = ready.and_then(|s| s.resource_version()).unwrap_or_default();
    providers
        .reconciled(simulate::MAPI_MACHINE_SET_CONTROLLER, "workers", &rv)
        .await;
    recorder.abort();

    let items = machines
        .list(&Default::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    assert_eq!(items.len(), 30);
    let adopted = items
        .iter()
        .find(|m| m.name_any() == "orphan")
        .map(|m| m.owner_references().to_vec());
    let owner = adopted.as_ref().and_then(|owners| owners.first());
    assert_eq!(
        owner.map(|o| (o.name.as_str(), o.uid.as_str(), o.controller)),
        Some(("workers", set.uid().unwrap_or_default().as_str(), Some(true))),
        "the orphan is adopted"
    );
    let seen = names.lock().map(|n| n.len()).unwrap_or_default();
    assert_eq!(
        seen, 30,
        "every Machine ever seen: 29 created and the orphan, none more"
    );
    providers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_machine_set_clones_its_template_scales_and_deletes_its_machines() {
    let mut providers = Providers::start().await;
    let sets = Api::<capi::MachineSet>::namespaced(providers.client(), CAPI_NS);
    let machines = Api::<capi::Machine>::namespaced(providers.client(), CAPI_NS);
    let infra = aws_machines(providers.client());
    create(
        &aws_machine_templates(providers.client()),
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AWSMachineTemplate",
            "metadata": { "name": "workers-abc", "namespace": CAPI_NS },
            "spec": { "template": { "spec": { "instanceType": "m6i.large", "ami": { "id": "ami-1" } } } },
        }),
    )
    .await;
    let selector = json!({"machine.openshift.io/cluster-api-machineset": "workers"});
    create(
        &sets,
        json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "MachineSet",
            "metadata": { "name": "workers", "namespace": CAPI_NS },
            "spec": {
                "clusterName": "sample",
                "replicas": 2,
                "selector": { "matchLabels": selector },
                "template": {
                    "metadata": { "labels": selector },
                    "spec": {
                        "clusterName": "sample",
                        "bootstrap": { "dataSecretName": "worker-user-data" },
                        "infrastructureRef": {
                            "apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "AWSMachineTemplate",
                            "name": "workers-abc",
                        },
                    },
                },
            },
        }),
    )
    .await;

    let ready = wait_until(&sets, "workers", "2 ready replicas", |s| {
        s.and_then(|s| s.status.as_ref()).and_then(|s| s.ready_replicas) == Some(2)
    })
    .await;
    let set = json_of(&ready);
    assert_eq!(set["metadata"]["finalizers"], json!([CAPI_MACHINE_SET_FINALIZER]));
    assert_eq!(set["status"]["replicas"], 2);
    assert_eq!(set["status"]["availableReplicas"], 2);
    assert_eq!(set["status"]["upToDateReplicas"], 2);
    assert_eq!(
        set["status"]["selector"],
        "machine.openshift.io/cluster-api-machineset=workers"
    );
    assert_eq!(set["status"]["observedGeneration"], set["metadata"]["generation"]);
    let owned = machines
        .list(&Default::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    assert_eq!(owned.len(), 2);
    for machine in &owned {
        let name = machine.name_any();
        assert!(
            name.starts_with("workers-") && name.len() == "workers-".len() + 5,
            "{name}"
        );
        assert_eq!(
            machine
                .labels()
                .get("cluster.x-k8s.io/set-name")
                .map(String::as_str),
            Some("workers")
        );
        assert_eq!(machine.spec.infrastructure_ref.kind, "AWSMachine");
        assert_eq!(machine.spec.infrastructure_ref.name, name);
        assert!(machine.finalizers().iter().any(|f| f == CAPI_MACHINE_FINALIZER));
        let aws = json_of(&infra.get(&name).await.ok());
        assert_eq!(aws["spec"]["instanceType"], "m6i.large");
        assert_eq!(
            aws["metadata"]["annotations"]["cluster.x-k8s.io/cloned-from-name"],
            "workers-abc"
        );
        assert_eq!(
            aws["metadata"]["annotations"]["cluster.x-k8s.io/cloned-from-groupkind"],
            "AWSMachineTemplate.infrastructure.cluster.x-k8s.io"
        );
        // The Machine controller replaced the MachineSet owner with itself.
        let owners = aws["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(owners.len(), 1, "{owners:?}");
        assert_eq!(owners[0]["kind"], "Machine");
        assert_eq!(
            aws["spec"]["providerID"].as_str(),
            machine.spec.provider_id.as_deref()
        );
    }

    // Paused: a scale-up is not acted on.
    let paused = merge(
        &sets,
        "workers",
        json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": ""}}, "spec": {"replicas": 3}}),
        false,
    )
    .await;
    let rv = paused.resource_version().unwrap_or_default();
    providers
        .reconciled(simulate::CAPI_MACHINE_SET_CONTROLLER, "workers", &rv)
        .await;
    let set = json_of(&sets.get("workers").await.ok());
    assert_eq!(
        condition(&set, "Paused")["message"],
        "MachineSet has the cluster.x-k8s.io/paused annotation"
    );
    let count = machines
        .list(&Default::default())
        .await
        .map(|l| l.items.len())
        .unwrap_or_default();
    assert_eq!(count, 2, "a paused MachineSet created Machines");

    merge(
        &sets,
        "workers",
        json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": null}}, "spec": {"replicas": 1}}),
        false,
    )
    .await;
    wait_for("one Machine and one AWSMachine left", TIMEOUT, || async {
        let machines = machines.list(&Default::default()).await.ok()?.items.len();
        let infra = infra.list(&Default::default()).await.ok()?.items.len();
        (machines == 1 && infra == 1).then_some(())
    })
    .await;

    delete(&sets, "workers").await;
    wait_until(&sets, "workers", "the MachineSet gone", |o| o.is_none()).await;
    let left = machines
        .list(&Default::default())
        .await
        .map(|l| l.items.len())
        .unwrap_or_default();
    let left_infra = infra
        .list(&Default::default())
        .await
        .map(|l| l.items.len())
        .unwrap_or_default();
    assert_eq!(
        (left, left_infra),
        (0, 0),
        "the set left Machines or AWSMachines behind"
    );
    providers.stop().await;
}

/// A stop that comes before the providers' caches have listed ends them at once
/// (kube-runtime's graceful shutdown alone would wait for a cache that never fills).
#[tokio::test]
async fn providers_stopped_before_their_first_list_stop_at_once() {
    let env = common::env().await;
    let namespaces = Namespaces {
        mapi: MAPI_NS.into(),
        capi: CAPI_NS.into(),
    };
    let stop = CancellationToken::new();
    stop.cancel();
    let run = SimulatedProviders::new(env.client(), namespaces).run(stop);
    assert!(
        tokio::time::timeout(TIMEOUT, run).await.is_ok(),
        "the providers did not stop"
    );
    env.stop().await;
}

/// [`common::env`] that also serves the OpenStack provider's kinds, as
/// `--embedded --embedded-platform openstack` does.
async fn openstack_env() -> TestEnv {
    let deploy = controllers::operator::samples::deploy_dir();
    let examples = deploy.join("examples");
    let started = TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(examples.join("crds"))
        .crd_dir(examples.join("openstack/crds"))
        .namespace(MAPI_NS)
        .namespace(CAPI_NS)
        .start()
        .await;
    match started {
        Ok(env) => env,
        Err(error) => panic!("starting envtest: {error}"),
    }
}

fn openstack_machines(client: Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("infrastructure.cluster.x-k8s.io", "v1beta1", "OpenStackMachine");
    Api::namespaced_with(client, CAPI_NS, &ApiResource::from_gvk(&gvk))
}

/// Whether `id` is shaped as a UUID (8-4-4-4-12 hex digits).
fn is_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12])
        && groups.iter().all(|g| g.chars().all(|c| c.is_ascii_hexdigit()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mapi_openstack_machine_runs_a_server_without_provider_status() {
    let providers = Providers::start_on(openstack_env().await).await;
    let machines = Api::<mapi::Machine>::namespaced(providers.client(), MAPI_NS);
    let mut machine = mapi_machine("os-worker-1", "MachineAPI");
    machine["spec"]["providerSpec"]["value"] = json!({
        "apiVersion": "machine.openshift.io/v1alpha1",
        "kind": "OpenstackProviderSpec",
        "flavor": "m1.xlarge",
        "image": "rhcos",
        "cloudName": "openstack",
    });
    create(&machines, machine).await;
    let running = wait_until(
        &machines,
        "os-worker-1",
        "a Running OpenStack MAPI Machine",
        |m| m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running"),
    )
    .await;
    let machine = json_of(&running);
    let provider_id = machine["spec"]["providerID"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let server = provider_id.strip_prefix("openstack:///").unwrap_or_default();
    assert!(is_uuid(server), "{provider_id}");
    assert_eq!(
        machine["metadata"]["annotations"]["machine.openshift.io/instance-state"],
        "ACTIVE"
    );
    assert_eq!(
        machine["metadata"]["labels"]["machine.openshift.io/region"],
        Value::Null
    );
    let status = &machine["status"];
    assert_eq!(status["providerStatus"], Value::Null, "{status}");
    assert_eq!(status["nodeRef"]["name"], "os-worker-1");
    assert_eq!(status["addresses"][0]["type"], "InternalIP");

    // Deleting: no provider status to mark terminated; the finalizer goes.
    merge(
        &machines,
        "os-worker-1",
        json!({"metadata": {"finalizers": [MAPI_MACHINE_FINALIZER, "test.example/hold"]}}),
        false,
    )
    .await;
    delete(&machines, "os-worker-1").await;
    let deleted = wait_until(&machines, "os-worker-1", "the MAPI finalizer released", |m| {
        m.is_some_and(|m| m.finalizers() == ["test.example/hold"])
    })
    .await;
    assert_eq!(json_of(&deleted)["status"]["phase"], "Deleting");
    providers.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capi_machine_runs_on_its_openstack_machine_which_terminates_before_its_finalizer_goes() {
    let providers = Providers::start_on(openstack_env().await).await;
    let machines = Api::<capi::Machine>::namespaced(providers.client(), CAPI_NS);
    let infra = openstack_machines(providers.client());
    create(
        &infra,
        json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
            "kind": "OpenStackMachine",
            "metadata": { "name": "os-worker-2", "namespace": CAPI_NS },
            "spec": { "flavor": "m1.xlarge", "image": { "filter": { "name": "rhcos" } } },
        }),
    )
    .await;
    let mut machine = capi_machine("os-worker-2");
    machine["spec"]["infrastructureRef"]["kind"] = json!("OpenStackMachine");
    create(&machines, machine).await;
    let running = wait_until(&machines, "os-worker-2", "a Running CAPI Machine", |m| {
        m.and_then(|m| m.status.as_ref()).and_then(|s| s.phase.as_deref()) == Some("Running")
    })
    .await;
    let machine = json_of(&running);
    let openstack = json_of(&infra.get("os-worker-2").await.ok());
    let provider_id = machine["spec"]["providerID"].as_str().unwrap_or_default();
    assert_eq!(openstack["spec"]["providerID"], provider_id);
    assert_eq!(
        Some(provider_id),
        openstack["status"]["instanceID"]
            .as_str()
            .filter(|id| is_uuid(id))
            .map(|id| format!("openstack:///{id}"))
            .as_deref()
    );
    assert_eq!(machine["status"]["nodeRef"]["name"], "os-worker-2");
    assert_eq!(machine["status"]["addresses"], openstack["status"]["addresses"]);
    assert_eq!(
        openstack["metadata"]["finalizers"],
        json!([OPENSTACK_MACHINE_FINALIZER])
    );
    assert_eq!(openstack["status"]["ready"], true, "{openstack}");
    assert_eq!(openstack["status"]["instanceState"], "ACTIVE");
    assert_eq!(condition(&openstack, "InstanceReady")["status"], "True");
    assert_eq!(condition(&openstack, "Paused")["reason"], "NotPaused");
    let managers: Vec<&str> = openstack["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|entry| entry["manager"].as_str())
        .collect();
    assert!(
        managers.contains(&simulate::OPENSTACK_MACHINE_CONTROLLER),
        "{managers:?}"
    );

    merge(
        &infra,
        "os-worker-2",
        json!({"metadata": {"finalizers": [OPENSTACK_MACHINE_FINALIZER, "test.example/hold"]}}),
        false,
    )
    .await;
    delete(&machines, "os-worker-2").await;
    let terminated = wait_until(
        &infra,
        "os-worker-2",
        "the OpenStackMachine's finalizer released",
        |a| a.is_some_and(|a| a.finalizers() == ["test.example/hold"]),
    )
    .await;
    let openstack = json_of(&terminated);
    assert_eq!(openstack["status"]["instanceState"], "DELETED");
    assert_eq!(openstack["status"]["ready"], false);
    merge(
        &infra,
        "os-worker-2",
        json!({"metadata": {"finalizers": null}}),
        false,
    )
    .await;
    wait_until(&infra, "os-worker-2", "the OpenStackMachine gone", |o| {
        o.is_none()
    })
    .await;
    wait_until(&machines, "os-worker-2", "the Machine gone", |o| o.is_none()).await;
    providers.stop().await;
}
