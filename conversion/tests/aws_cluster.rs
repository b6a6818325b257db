//! What the conversion reads from the cluster's `AWSCluster`, one test per row:
//!
//! | AWSCluster | direction | result |
//! |---|---|---|
//! | controller identity `default` | CAPI → MAPI | the default credentials Secret |
//! | another identity kind or name | CAPI → MAPI | errors at `AWSCluster … spec.identityRef.kind` / `.name` |
//! | none | CAPI → MAPI | an error naming the AWSCluster and what to do |
//! | none | MAPI → CAPI, worker | converts (a worker needs nothing of it) |
//! | control plane load balancers | CAPI → MAPI, control plane Machine | `loadBalancers` (classic/elb → classic, nlb → network) |
//! | `alb` / `disabled` balancer | CAPI → MAPI, control plane Machine | error at the AWSCluster's field |
//! | load balancers | MAPI → CAPI, control plane Machine | exactly the AWSCluster's, by name and type, else errors at `loadBalancers[i]` |

mod common;

use common::{error_paths, fixture, infra, json, merge};
use conversion::AwsInfrastructure;
use conversion::aws::capa::AwsMachine;
use conversion::aws::cluster::AwsCluster;
use conversion::aws::{to_capi, to_mapi};
use serde_json::{Value, json};
use sync_core::api::{capi, mapi};

fn with_cluster(spec: Value) -> AwsInfrastructure {
    let object =
        json!({"metadata": {"namespace": "openshift-cluster-api", "name": "demo-x7k2p"}, "spec": spec});
    AwsInfrastructure {
        aws_cluster: Some(AwsCluster::from_object(&object)),
        ..infra()
    }
}

fn without_cluster() -> AwsInfrastructure {
    AwsInfrastructure {
        aws_cluster: None,
        ..infra()
    }
}

fn worker() -> mapi::Machine {
    let mut machine: Value = fixture("running-worker-machine.yaml");
    if let Some(object) = machine.as_object_mut() {
        object.remove("status");
    }
    serde_json::from_value(machine).unwrap_or_else(|e| panic!("{e}"))
}

fn master() -> mapi::Machine {
    fixture("installer-master-machine.yaml")
}

/// The CAPI pair of `machine` (converted with the installer's AWSCluster).
fn capi_pair(machine: &mapi::Machine) -> (capi::Machine, AwsMachine) {
    let converted = to_capi::convert_machine(machine, &infra()).unwrap_or_else(|e| panic!("{e}"));
    let mut capi = json(&converted.value.machine);
    merge(&mut capi, &json!({"metadata": {"labels": {}}}));
    (
        serde_json::from_value(capi).unwrap_or_else(|e| panic!("{e}")),
        converted.value.aws_machine,
    )
}

/// A CAPI control plane Machine (the label Cluster API's control plane providers set).
fn control_plane_pair() -> (capi::Machine, AwsMachine) {
    let (mut machine, aws) = capi_pair(&master());
    machine
        .metadata
        .labels
        .get_or_insert_default()
        .insert("cluster.x-k8s.io/control-plane".into(), String::new());
    (machine, aws)
}

fn load_balancers(machine: &mapi::Machine) -> Value {
    json(machine)["spec"]["providerSpec"]["value"]["loadBalancers"].clone()
}

#[test]
fn the_controller_identity_is_the_default_credentials_secret() {
    let (machine, aws) = capi_pair(&worker());
    let infra =
        with_cluster(json!({"identityRef": {"kind": "AWSClusterControllerIdentity", "name": "default"}}));
    let converted = to_mapi::convert_machine(&machine, &aws, &infra).unwrap_or_else(|e| panic!("{e}"));
    let spec = json(&converted.value)["spec"]["providerSpec"]["value"].clone();
    assert_eq!(
        spec["credentialsSecret"],
        json!({"name": "aws-cloud-credentials"})
    );
    assert_eq!(spec["loadBalancers"], Value::Null, "a worker has none");
}

#[test]
fn another_identity_is_refused_at_the_aws_cluster_s_fields() {
    let (machine, aws) = capi_pair(&worker());
    let infra = with_cluster(json!({"identityRef": {"kind": "AWSClusterRoleIdentity", "name": "ops"}}));
    let Err(errors) = to_mapi::convert_machine(&machine, &aws, &infra) else {
        panic!("converted")
    };
    assert_eq!(
        error_paths(&errors),
        [
            "AWSCluster openshift-cluster-api/demo-x7k2p spec.identityRef.kind",
            "AWSCluster openshift-cluster-api/demo-x7k2p spec.identityRef.name"
        ]
    );
}

#[test]
fn without_an_aws_cluster_nothing_converts_to_the_machine_api() {
    let (machine, aws) = capi_pair(&worker());
    let Err(errors) = to_mapi::convert_machine(&machine, &aws, &without_cluster()) else {
        panic!("converted")
    };
    let text = errors.to_string();
    assert!(
        text.contains("AWSCluster openshift-cluster-api/demo-x7k2p"),
        "{text}"
    );
    assert!(text.contains("create it"), "{text}");
    // A worker needs nothing of it the other way.
    assert!(to_capi::convert_machine(&worker(), &without_cluster()).is_ok());
}

#[test]
fn a_control_plane_machine_lists_the_aws_cluster_s_load_balancers() {
    let (machine, aws) = control_plane_pair();
    let infra = with_cluster(json!({
        "controlPlaneLoadBalancer": {"name": "demo-x7k2p-int", "loadBalancerType": "elb"},
        "secondaryControlPlaneLoadBalancer": {"name": "demo-x7k2p-ext"}
    }));
    let converted = to_mapi::convert_machine(&machine, &aws, &infra).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        load_balancers(&converted.value),
        json!([{"name": "demo-x7k2p-int", "type": "classic"}, {"name": "demo-x7k2p-ext", "type": "network"}])
    );
}

#[test]
fn an_application_load_balancer_has_no_machine_api_type() {
    let (machine, aws) = control_plane_pair();
    let infra = with_cluster(json!({"controlPlaneLoadBalancer": {"name": "lb", "loadBalancerType": "alb"}}));
    let Err(errors) = to_mapi::convert_machine(&machine, &aws, &infra) else {
        panic!("converted")
    };
    assert_eq!(
        error_paths(&errors),
        ["AWSCluster openshift-cluster-api/demo-x7k2p spec.controlPlaneLoadBalancer"]
    );
}

#[test]
fn a_machine_api_control_plane_machine_must_list_exactly_the_aws_cluster_s_load_balancers() {
    // The installer's master lists demo-x7k2p-int and -ext, both network.
    let primary_only = with_cluster(
        json!({"controlPlaneLoadBalancer": {"name": "demo-x7k2p-int", "loadBalancerType": "nlb"}}),
    );
    let Err(errors) = to_capi::convert_machine(&master(), &primary_only) else {
        panic!("converted")
    };
    assert_eq!(
        error_paths(&errors),
        ["spec.providerSpec.value.loadBalancers[1].name"]
    );

    let classic = with_cluster(json!({
        "controlPlaneLoadBalancer": {"name": "demo-x7k2p-int"},
        "secondaryControlPlaneLoadBalancer": {"name": "demo-x7k2p-ext"}
    }));
    let Err(errors) = to_capi::convert_machine(&master(), &classic) else {
        panic!("converted")
    };
    assert_eq!(
        error_paths(&errors),
        ["spec.providerSpec.value.loadBalancers[0].type"]
    );

    let three = with_cluster(json!({
        "controlPlaneLoadBalancer": {"name": "demo-x7k2p-int", "loadBalancerType": "nlb"},
        "secondaryControlPlaneLoadBalancer": {"name": "other"}
    }));
    let Err(errors) = to_capi::convert_machine(&master(), &three) else {
        panic!("converted")
    };
    let text = errors.to_string();
    assert!(
        text.contains("must include load balancer named \"other\""),
        "{text}"
    );

    let none = without_cluster();
    let Err(errors) = to_capi::convert_machine(&master(), &none) else {
        panic!("converted")
    };
    assert_eq!(error_paths(&errors), ["spec.providerSpec.value.loadBalancers"]);
}
