//! The conversion of real providerSpecs (as the OpenShift installer writes them and as a
//! running cluster holds them; sources in `tests/fixtures/`), checked object by object:
//! every field of every output is compared.

mod common;

use common::{assert_json_eq, fixture, infra, json};
use conversion::aws::capa::AwsMachine;
use conversion::aws::to_capi::{self, CapiOwner};
use conversion::aws::to_mapi;
use conversion::{AwsInfrastructure, names};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;
use sync_core::api::{Infrastructure, mapi};

/// The AWSMachine spec every fixture's worker providerSpec becomes.
fn worker_aws_spec() -> serde_json::Value {
    json!({
        "additionalSecurityGroups": [{"filters": [{"name": "tag:Name", "values": ["demo-x7k2p-worker-sg"]}]}],
        "additionalTags": {"kubernetes.io/cluster/demo-x7k2p": "owned"},
        "ami": {"id": "ami-0a1b2c3d4e5f60718"},
        "hostAffinity": "default",
        "iamInstanceProfile": "demo-x7k2p-worker-profile",
        "ignition": {"storageType": "UnencryptedUserData"},
        "instanceMetadataOptions": {
            "httpEndpoint": "enabled",
            "httpPutResponseHopLimit": 1,
            "httpTokens": "optional",
            "instanceMetadataTags": "disabled"
        },
        "instanceType": "m6i.xlarge",
        "rootVolume": {"encrypted": true, "size": 120, "type": "gp3"},
        "subnet": {"filters": [{"name": "tag:Name", "values": ["demo-x7k2p-private-us-east-2a"]}]}
    })
}

#[test]
fn the_fixture_infrastructure_is_an_aws_cluster() {
    let infrastructure: Infrastructure = fixture("infrastructure.yaml");
    assert_eq!(
        AwsInfrastructure::from_infrastructure(&infrastructure),
        Ok(infra())
    );
}

#[test]
fn installer_worker_machine_set() {
    let set: mapi::MachineSet = fixture("installer-worker-machineset.yaml");
    let converted = to_capi::convert_machine_set(&set, &infra()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(converted.warnings, []);
    let template = converted.value.template;
    let spec_json = serde_json::to_vec(&template.spec.template.spec).unwrap_or_default();
    let template_name = names::template_name("demo-x7k2p-worker-us-east-2a", &spec_json);
    assert_json_eq(
        &json(&template),
        &json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AWSMachineTemplate",
            "metadata": {
                "name": template_name,
                "namespace": "openshift-cluster-api",
                "labels": {"machine.openshift.io/cluster-api-machineset": "demo-x7k2p-worker-us-east-2a"}
            },
            "spec": {"template": {"spec": worker_aws_spec()}}
        }),
    );
    assert_json_eq(
        &json(&converted.value.machine_set),
        &json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "MachineSet",
            "metadata": {
                "name": "demo-x7k2p-worker-us-east-2a",
                "namespace": "openshift-cluster-api",
                "labels": {
                    "cluster.x-k8s.io/cluster-name": "demo-x7k2p",
                    "machine.openshift.io/cluster-api-cluster": "demo-x7k2p"
                }
            },
            "spec": {
                "clusterName": "demo-x7k2p",
                "replicas": 2,
                "deletion": {"order": "Random"},
                "selector": {"matchLabels": {
                    "machine.openshift.io/cluster-api-cluster": "demo-x7k2p",
                    "machine.openshift.io/cluster-api-machineset": "demo-x7k2p-worker-us-east-2a"
                }},
                "template": {
                    "metadata": {"labels": {
                        "cluster.x-k8s.io/cluster-name": "demo-x7k2p",
                        "machine.openshift.io/cluster-api-cluster": "demo-x7k2p",
                        "machine.openshift.io/cluster-api-machineset": "demo-x7k2p-worker-us-east-2a",
                        "node-role.kubernetes.io/worker": ""
                    }},
                    "spec": {
                        "clusterName": "demo-x7k2p",
                        "bootstrap": {"dataSecretName": "worker-user-data"},
                        "infrastructureRef": {
                            "apiGroup": "infrastructure.cluster.x-k8s.io",
                            "kind": "AWSMachineTemplate",
                            "name": template_name
                        },
                        "failureDomain": "us-east-2a",
                        "deletion": {"nodeDeletionTimeoutSeconds": 10}
                    }
                }
            }
        }),
    );
}

#[test]
fn installer_master_machine_s_load_balancers_are_the_aws_cluster_s() {
    let machine: mapi::Machine = fixture("installer-master-machine.yaml");
    // The installer's AWSCluster holds demo-x7k2p-int and -ext: nothing to copy or warn.
    let converted = to_capi::convert_machine(&machine, &infra()).unwrap_or_else(|e| panic!("{e}"));
    assert!(converted.warnings.is_empty(), "{:?}", converted.warnings);
    assert_eq!(
        converted.value.owner,
        CapiOwner::Cluster {
            name: "demo-x7k2p".into()
        }
    );
    let labels = json!({
        "cluster.x-k8s.io/cluster-name": "demo-x7k2p",
        "machine.openshift.io/cluster-api-cluster": "demo-x7k2p",
        "node-role.kubernetes.io/master": ""
    });
    assert_json_eq(
        &json(&converted.value.machine),
        &json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {
                "name": "demo-x7k2p-master-0",
                "namespace": "openshift-cluster-api",
                "labels": labels,
                "finalizers": ["machine.cluster.x-k8s.io"]
            },
            "spec": {
                "clusterName": "demo-x7k2p",
                "bootstrap": {"dataSecretName": "master-user-data"},
                "infrastructureRef": {
                    "apiGroup": "infrastructure.cluster.x-k8s.io",
                    "kind": "AWSMachine",
                    "name": "demo-x7k2p-master-0"
                },
                "failureDomain": "us-east-2a",
                "deletion": {"nodeDeletionTimeoutSeconds": 10}
            }
        }),
    );
    let mut aws = worker_aws_spec();
    common::merge(
        &mut aws,
        &json!({
            "additionalSecurityGroups": [{"filters": [{"name": "tag:Name", "values": ["demo-x7k2p-master-sg"]}]}],
            "iamInstanceProfile": "demo-x7k2p-master-profile",
            "rootVolume": {
                "encrypted": true,
                "encryptionKey": "arn:aws:kms:us-east-2:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
                "iops": 4000,
                "size": 120,
                "type": "io1"
            }
        }),
    );
    assert_json_eq(
        &json(&converted.value.aws_machine),
        &json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
            "kind": "AWSMachine",
            "metadata": {"name": "demo-x7k2p-master-0", "namespace": "openshift-cluster-api", "labels": labels},
            "spec": aws
        }),
    );
}

#[test]
fn running_worker_machine_and_its_status() {
    let machine: mapi::Machine = fixture("running-worker-machine.yaml");
    let converted = to_capi::convert_machine(&machine, &infra()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(converted.warnings, []);
    let set = "demo-x7k2p-worker-us-east-2a";
    assert_eq!(converted.value.owner, CapiOwner::MachineSet { name: set.into() });
    let labels = json!({
        "cluster.x-k8s.io/cluster-name": "demo-x7k2p",
        "cluster.x-k8s.io/set-name": set,
        "machine.openshift.io/cluster-api-cluster": "demo-x7k2p",
        "machine.openshift.io/cluster-api-machineset": set,
        "node-role.kubernetes.io/worker": ""
    });
    let name = "demo-x7k2p-worker-us-east-2a-8xk2p";
    assert_json_eq(
        &json(&converted.value.machine),
        &json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2",
            "kind": "Machine",
            "metadata": {
                "name": name,
                "namespace": "openshift-cluster-api",
                "labels": labels,
                "finalizers": ["machine.cluster.x-k8s.io"]
            },
            "spec": {
                "clusterName": "demo-x7k2p",
                "bootstrap": {"dataSecretName": "worker-user-data"},
                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": name},
                "providerID": "aws:///us-east-2a/i-0a1b2c3d4e5f67890",
                "failureDomain": "us-east-2a",
                "deletion": {"nodeDeletionTimeoutSeconds": 10}
            }
        }),
    );
    let mut aws = worker_aws_spec();
    common::merge(
        &mut aws,
        &json!({"instanceID": "i-0a1b2c3d4e5f67890", "providerID": "aws:///us-east-2a/i-0a1b2c3d4e5f67890"}),
    );
    assert_json_eq(&json(&converted.value.aws_machine.spec), &aws);
    assert_json_eq(&json(&converted.value.aws_machine.metadata.labels), &labels);

    // Status, both objects.
    let now = Time("2026-12-01T08:00:00Z".parse().unwrap_or_default());
    let status = to_capi::convert_machine_status(&machine, &now).unwrap_or_else(|e| panic!("{e}"));
    let capi = json(&status.value.machine);
    assert_eq!(capi["phase"], "Running");
    assert_eq!(
        capi["nodeRef"],
        json!({"name": "ip-10-0-12-34.us-east-2.compute.internal"})
    );
    assert_eq!(capi["lastUpdated"], "2026-11-30T10:21:44Z");
    assert_eq!(
        capi["initialization"],
        json!({"infrastructureProvisioned": true, "bootstrapDataSecretCreated": true})
    );
    assert_eq!(
        capi["addresses"],
        json!([
            {"type": "InternalIP", "address": "10.0.12.34"},
            {"type": "InternalDNS", "address": "ip-10-0-12-34.us-east-2.compute.internal"},
            {"type": "Hostname", "address": "ip-10-0-12-34.us-east-2.compute.internal"}
        ])
    );
    let conditions: Vec<(String, String, String)> = status
        .value
        .machine
        .conditions
        .iter()
        .flatten()
        .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("Available", "True", "Available"),
        ("Ready", "True", "Ready"),
        ("BootstrapConfigReady", "True", "BootstrapConfigReady"),
        ("InfrastructureReady", "True", "InfrastructureReady"),
        ("Deleting", "False", "NotDeleting"),
        ("NodeReady", "True", "NodeReady"),
    ]
    .iter()
    .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
    .collect();
    assert_eq!(conditions, expected);
    let aws_status = json(&status.value.aws_machine);
    assert_eq!(aws_status["ready"], true);
    assert_eq!(aws_status["instanceState"], "running");
    assert_eq!(aws_status["interruptible"], false);
    assert_eq!(aws_status["conditions"][0]["status"], "True");
    assert_eq!(aws_status["conditions"][1]["type"], "InstanceReady");

    // Back: the CAPI pair as the sync would read it gives the Machine API Machine again.
    let mut aws_machine: AwsMachine = converted.value.aws_machine;
    aws_machine.status = Some(status.value.aws_machine);
    let mut capi_machine = converted.value.machine;
    capi_machine.status = Some(status.value.machine);
    let back =
        to_mapi::convert_machine(&capi_machine, &aws_machine, &infra()).unwrap_or_else(|e| panic!("{e}"));
    let back_json = json(&back.value);
    assert_eq!(
        back_json["metadata"]["labels"],
        json!({
            "machine.openshift.io/cluster-api-cluster": "demo-x7k2p",
            "machine.openshift.io/cluster-api-machine-role": "worker",
            "machine.openshift.io/cluster-api-machine-type": "worker",
            "machine.openshift.io/cluster-api-machineset": set,
            "machine.openshift.io/instance-type": "m6i.xlarge",
            "machine.openshift.io/region": "us-east-2",
            "machine.openshift.io/zone": "us-east-2a"
        })
    );
    assert_eq!(
        back_json["metadata"]["annotations"],
        json!({"machine.openshift.io/instance-state": "running"})
    );
    assert_eq!(
        back_json["spec"]["providerID"],
        "aws:///us-east-2a/i-0a1b2c3d4e5f67890"
    );
    let provider = &back_json["spec"]["providerSpec"]["value"];
    assert_json_eq(
        provider,
        &json!({
            "apiVersion": "machine.openshift.io/v1beta1",
            "kind": "AWSMachineProviderConfig",
            "ami": {"id": "ami-0a1b2c3d4e5f60718"},
            "blockDevices": [{"ebs": {"encrypted": true, "volumeSize": 120, "volumeType": "gp3"}}],
            "credentialsSecret": {"name": "aws-cloud-credentials"},
            "deviceIndex": 0,
            "iamInstanceProfile": {"id": "demo-x7k2p-worker-profile"},
            "instanceType": "m6i.xlarge",
            "metadataServiceOptions": {"authentication": "Optional"},
            "placement": {"availabilityZone": "us-east-2a", "region": "us-east-2"},
            "securityGroups": [{"filters": [{"name": "tag:Name", "values": ["demo-x7k2p-worker-sg"]}]}],
            "subnet": {"filters": [{"name": "tag:Name", "values": ["demo-x7k2p-private-us-east-2a"]}]},
            "tags": [{"name": "kubernetes.io/cluster/demo-x7k2p", "value": "owned"}],
            "userDataSecret": {"name": "worker-user-data"}
        }),
    );
    let back_status = to_mapi::convert_machine_status(&capi_machine, &aws_machine, &now)
        .unwrap_or_else(|e| panic!("{e}"))
        .value;
    let original = machine.status.clone().unwrap_or_default();
    assert_eq!(back_status.phase, original.phase);
    assert_eq!(back_status.addresses, original.addresses);
    assert_eq!(back_status.last_updated, original.last_updated);
    assert_eq!(
        back_status.node_ref.as_ref().and_then(|n| n.name.clone()),
        original.node_ref.as_ref().and_then(|n| n.name.clone())
    );
    let provider_status = json(&back_status.provider_status);
    assert_eq!(provider_status["instanceId"], "i-0a1b2c3d4e5f67890");
    assert_eq!(provider_status["instanceState"], "running");
    assert_eq!(
        provider_status["conditions"][0]["reason"],
        "MachineCreationSucceeded"
    );
}
