//! A fleet at scale in an envtest: N Machine pairs with their infrastructure machines
//! (half `DevMachine`, half `AWSMachine`) and M MachineSet pairs with their templates,
//! created through the kube client with many requests in flight.
//!
//! * Machine `m-000042`: a MAPI Machine (provider spec, `status.authoritativeAPI`
//!   `MachineAPI`, every fourth `ClusterAPI`), a CAPI Machine owned by CAPI MachineSet
//!   `ms-{42 % M}` and referencing its infrastructure machine, which the CAPI Machine owns.
//! * MachineSet `ms-007`: a MAPI MachineSet (`MachineAPI`), a CAPI MachineSet whose template
//!   references `DevMachineTemplate`/`AWSMachineTemplate` `ms-007`, labelled with the set.

use std::time::{Duration, Instant};

use envtest::TestEnv;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use sync_core::Namespaces;
use sync_core::api::{MACHINESET_LABEL, capi, mapi};

use super::BenchError;
use crate::{INFRA_GROUP, infra_crd};

/// The infrastructure machine kinds, alternating by index.
pub const INFRA_MACHINES: [&str; 2] = ["DevMachine", "AWSMachine"];
/// The infrastructure template kinds, alternating by index.
pub const INFRA_TEMPLATES: [&str; 2] = ["DevMachineTemplate", "AWSMachineTemplate"];
/// The version infrastructure objects are written at.
pub const INFRA_VERSION: &str = "v1beta2";

/// Requests in flight while filling.
const IN_FLIGHT: usize = 32;

/// How big a fleet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Fleet {
    /// Machine pairs (and infrastructure machines).
    pub machines: usize,
    /// MachineSet pairs (and templates).
    pub machine_sets: usize,
}

impl Fleet {
    /// The name of Machine `i`.
    pub fn machine(i: usize) -> String {
        format!("m-{i:06}")
    }

    /// The name of MachineSet `j`.
    pub fn machine_set(j: usize) -> String {
        format!("ms-{j:03}")
    }

    /// The infrastructure machine kind of Machine `i`.
    pub fn infra_kind(i: usize) -> &'static str {
        INFRA_MACHINES[i % 2]
    }

    /// The template kind of MachineSet `j`.
    pub fn template_kind(j: usize) -> &'static str {
        INFRA_TEMPLATES[j % 2]
    }
}

/// The namespaces of the fleet.
pub fn namespaces() -> Namespaces {
    Namespaces::default()
}

/// An envtest with the project's CRDs, the four infrastructure CRDs (`DevMachine*` with
/// the contract label, `AWSMachine*` resolved by discovery) and the fleet's namespaces,
/// filled with `fleet`. Returns the server and how long filling took.
pub async fn start(fleet: Fleet) -> Result<(TestEnv, Duration), BenchError> {
    let namespaces = namespaces();
    let builder = TestEnv::builder()
        .crd_dir(crate::crd_dir())
        .namespace(&namespaces.mapi)
        .namespace(&namespaces.capi);
    let builder = infra_crds().into_iter().fold(builder, |b, crd| b.crd_object(crd));
    let env = builder.start().await?;
    let started = Instant::now();
    fill(&env.client(), &namespaces, fleet).await?;
    let filled = started.elapsed();
    warm(&env.client(), &namespaces).await?;
    Ok((env, filled))
}

/// Lists every kind of the fleet once, so that the first implementation measured does not
/// pay for the server's first serialization of each object.
pub async fn warm(client: &Client, namespaces: &Namespaces) -> Result<(), BenchError> {
    let mut resources = vec![
        (namespaces.mapi.as_str(), mapi_machines()),
        (namespaces.mapi.as_str(), mapi_machine_sets()),
        (namespaces.capi.as_str(), capi_machines()),
        (namespaces.capi.as_str(), capi_machine_sets()),
    ];
    for kind in INFRA_MACHINES.into_iter().chain(INFRA_TEMPLATES) {
        resources.push((namespaces.capi.as_str(), infra_resource(kind)));
    }
    for (namespace, resource) in resources {
        dynamic(client, namespace, &resource)
            .list(&Default::default())
            .await?;
    }
    Ok(())
}

/// The infrastructure CRDs.
pub fn infra_crds() -> Vec<CustomResourceDefinition> {
    let contract = Some("v1beta1_v1beta2");
    vec![
        infra_crd("DevMachine", &["v1beta1", INFRA_VERSION], contract),
        infra_crd("DevMachineTemplate", &["v1beta1", INFRA_VERSION], contract),
        infra_crd("AWSMachine", &[INFRA_VERSION], None),
        infra_crd("AWSMachineTemplate", &[INFRA_VERSION], None),
    ]
}

/// The API of any kind of the fleet, as dynamic objects.
pub fn dynamic(client: &Client, namespace: &str, resource: &ApiResource) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), namespace, resource)
}

/// The resource of an infrastructure kind.
pub fn infra_resource(kind: &str) -> ApiResource {
    crate::infra_resource(kind, INFRA_VERSION)
}

/// The resources of the four sync kinds.
pub fn mapi_machines() -> ApiResource {
    ApiResource::erase::<mapi::Machine>(&())
}

/// MAPI MachineSets.
pub fn mapi_machine_sets() -> ApiResource {
    ApiResource::erase::<mapi::MachineSet>(&())
}

/// CAPI Machines.
pub fn capi_machines() -> ApiResource {
    ApiResource::erase::<capi::Machine>(&())
}

/// CAPI MachineSets.
pub fn capi_machine_sets() -> ApiResource {
    ApiResource::erase::<capi::MachineSet>(&())
}

fn object(value: Value) -> Result<DynamicObject, BenchError> {
    serde_json::from_value(value).map_err(|e| BenchError::Other(format!("fixture: {e}")))
}

/// Creates the fleet.
pub async fn fill(client: &Client, namespaces: &Namespaces, fleet: Fleet) -> Result<(), BenchError> {
    let sets = fleet.machine_sets.max(1);
    let uids: Vec<String> = futures::stream::iter(0..sets)
        .map(|j| {
            let (client, namespaces) = (client.clone(), namespaces.clone());
            async move { machine_set(&client, &namespaces, fleet, j).await }
        })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    futures::stream::iter(0..fleet.machines)
        .map(|i| {
            let (client, namespaces) = (client.clone(), namespaces.clone());
            let set_uid = uids[i % sets].clone();
            async move { machine(&client, &namespaces, i, sets, &set_uid).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<()>()
        .await
}

/// Creates MachineSet `j` on both sides and its template; returns the CAPI set's uid.
async fn machine_set(
    client: &Client,
    namespaces: &Namespaces,
    fleet: Fleet,
    j: usize,
) -> Result<String, BenchError> {
    let name = Fleet::machine_set(j);
    let kind = Fleet::template_kind(j);
    let replicas = fleet.machines / fleet.machine_sets.max(1);
    let template = object(json!({
        "apiVersion": format!("{INFRA_GROUP}/{INFRA_VERSION}"),
        "kind": kind,
        "metadata": {"name": name, "labels": {MACHINESET_LABEL: name}},
        "spec": {"template": {"spec": {"instanceType": "m6i.xlarge", "ami": {"id": "ami-0123456789abcdef0"}}}},
    }))?;
    dynamic(client, &namespaces.capi, &infra_resource(kind))
        .create(&PostParams::default(), &template)
        .await?;
    let labels = json!({"cluster.x-k8s.io/set-name": name});
    let capi_set = object(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "MachineSet",
        "metadata": {"name": name},
        "spec": {
            "clusterName": "sample-x7k2p",
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "clusterName": "sample-x7k2p",
                    "bootstrap": {"dataSecretName": "worker-user-data"},
                    "infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": kind, "name": name},
                    "version": "v1.32.4",
                },
            },
        },
    }))?;
    let created = dynamic(client, &namespaces.capi, &capi_machine_sets())
        .create(&PostParams::default(), &capi_set)
        .await?;
    let mapi_set = object(json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machineset": name}},
            "template": {
                "metadata": {"labels": {"machine.openshift.io/cluster-api-machineset": name}},
                "spec": {"providerSpec": {"value": provider_spec()}},
            },
        },
    }))?;
    let sets = dynamic(client, &namespaces.mapi, &mapi_machine_sets());
    sets.create(&PostParams::default(), &mapi_set).await?;
    let status = json!({"status": {"authoritativeAPI": "MachineAPI", "replicas": replicas}});
    sets.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    created
        .metadata
        .uid
        .ok_or_else(|| BenchError::Other(format!("CAPI MachineSet {name} has no uid")))
}

/// Creates Machine `i`: its CAPI Machine, infrastructure machine and MAPI Machine.
async fn machine(
    client: &Client,
    namespaces: &Namespaces,
    i: usize,
    sets: usize,
    set_uid: &str,
) -> Result<(), BenchError> {
    let name = Fleet::machine(i);
    let set = Fleet::machine_set(i % sets);
    let kind = Fleet::infra_kind(i);
    let provider_id = format!("aws:///us-east-1a/i-{name}");
    let capi_machine = object(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "labels": {"cluster.x-k8s.io/cluster-name": "sample-x7k2p", "cluster.x-k8s.io/set-name": set},
            "ownerReferences": [{
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": set,
                "uid": set_uid, "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "clusterName": "sample-x7k2p",
            "bootstrap": {"dataSecretName": "worker-user-data"},
            "infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": kind, "name": name},
            "providerID": provider_id,
            "failureDomain": "us-east-1a",
            "version": "v1.32.4",
        },
    }))?;
    let created = dynamic(client, &namespaces.capi, &capi_machines())
        .create(&PostParams::default(), &capi_machine)
        .await?;
    let uid = created.metadata.uid.unwrap_or_default();
    let infra = object(json!({
        "apiVersion": format!("{INFRA_GROUP}/{INFRA_VERSION}"),
        "kind": kind,
        "metadata": {
            "name": name,
            "labels": {"cluster.x-k8s.io/cluster-name": "sample-x7k2p"},
            "ownerReferences": [{
                "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": name,
                "uid": uid, "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {"providerID": provider_id, "instanceType": "m6i.xlarge", "generation": 0},
    }))?;
    dynamic(client, &namespaces.capi, &infra_resource(kind))
        .create(&PostParams::default(), &infra)
        .await?;
    let authority = if i % 4 == 3 { "ClusterAPI" } else { "MachineAPI" };
    let mapi_machine = object(json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "labels": {
                "machine.openshift.io/cluster-api-cluster": "sample-x7k2p",
                "machine.openshift.io/cluster-api-machine-role": "worker",
                "machine.openshift.io/cluster-api-machine-type": "worker",
                "machine.openshift.io/cluster-api-machineset": set,
            },
            "annotations": {"machine.openshift.io/instance-state": "running"},
        },
        "spec": {
            "authoritativeAPI": authority,
            "providerID": provider_id,
            "lifecycleHooks": {},
            "providerSpec": {"value": provider_spec()},
        },
    }))?;
    let machines = dynamic(client, &namespaces.mapi, &mapi_machines());
    machines.create(&PostParams::default(), &mapi_machine).await?;
    let status = json!({"status": {
        "authoritativeAPI": authority,
        "phase": "Running",
        "providerStatus": {"instanceId": format!("i-{name}"), "instanceState": "running"},
        "addresses": [{"type": "InternalIP", "address": "10.0.12.34"},
                      {"type": "InternalDNS", "address": "ip-10-0-12-34.ec2.internal"}],
    }});
    machines
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await?;
    Ok(())
}

/// An AWS provider spec of the size real clusters carry.
fn provider_spec() -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "AWSMachineProviderConfig",
        "ami": {"id": "ami-0123456789abcdef0"},
        "instanceType": "m6i.xlarge",
        "placement": {"availabilityZone": "us-east-1a", "region": "us-east-1"},
        "blockDevices": [{"ebs": {"encrypted": true, "volumeSize": 120, "volumeType": "gp3"}}],
        "credentialsSecret": {"name": "aws-cloud-credentials"},
        "iamInstanceProfile": {"id": "sample-x7k2p-worker-profile"},
        "securityGroups": [{"filters": [{"name": "tag:Name", "values": ["sample-x7k2p-node"]}]}],
        "subnet": {"filters": [{"name": "tag:Name", "values": ["sample-x7k2p-subnet-private-us-east-1a"]}]},
        "tags": [{"name": "kubernetes.io/cluster/sample-x7k2p", "value": "owned"}],
        "userDataSecret": {"name": "worker-user-data"},
    })
}
