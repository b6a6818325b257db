//! `controllers --embedded --embedded-platform openstack`: the OpenStack samples are
//! mirrored, the simulated Machine API OpenStack actuator, Cluster API and CAPO
//! controllers run them, and a MachineAPI-authoritative Machine migrates to Cluster API
//! with its OpenStackMachine unpaused and ready.
#![cfg(feature = "embedded")]

mod common;

use std::process::Command;

use common::{Operator, TIMEOUT, wait_for};
use serde_json::Value;

const MAPI_MACHINE: &str = "machines.machine.openshift.io/openstack-workers-1";
const CAPI_MACHINE: &str = "machines.cluster.x-k8s.io/openstack-workers-1";
const OPENSTACK_MACHINE: &str = "openstackmachines/openstack-workers-1";
const PAUSED: &str = "cluster.x-k8s.io/paused";

fn kubectl(kubeconfig: &str, args: &[&str]) -> String {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output();
    match output {
        Ok(output) if output.status.success() => String::from_utf8_lossy(&output.stdout).into_owned(),
        Ok(output) => panic!(
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!("running kubectl: {error}"),
    }
}

/// The object `resource` (`kind/name`) of `namespace` as JSON, if it exists.
fn get(kubeconfig: &str, resource: &str, namespace: &str) -> Option<Value> {
    let text = kubectl(
        kubeconfig,
        &[
            "get",
            resource,
            "-n",
            namespace,
            "--ignore-not-found",
            "-o",
            "json",
        ],
    );
    serde_json::from_str(&text).ok()
}

fn mapi(kubeconfig: &str, resource: &str) -> Option<Value> {
    get(kubeconfig, resource, "openshift-machine-api")
}

fn capi(kubeconfig: &str, resource: &str) -> Option<Value> {
    get(kubeconfig, resource, "openshift-cluster-api")
}

/// The status of the condition `type_`, if the object has it.
fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a str> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .and_then(|c| c["status"].as_str())
}

fn paused(object: &Value) -> bool {
    object["metadata"]["annotations"].get(PAUSED).is_some()
}

fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == finalizer))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_openstack_machine_is_mirrored_run_and_migrated_to_cluster_api() {
    let mut operator = Operator::spawn(&[
        "--embedded",
        "--embedded-platform",
        "openstack",
        "--metrics-bind-address",
        "127.0.0.1:0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
    ]);
    let kubeconfig = operator
        .wait_line("the kubeconfig line", |line| {
            line.strip_prefix("kubeconfig: ").map(str::to_owned)
        })
        .await;
    let first = operator
        .wait_line("the server line", |line| {
            line.starts_with("Embedded API server on")
                .then(|| line.to_owned())
        })
        .await;
    assert!(
        first.ends_with(
            "sample objects of an OpenStack cluster from deploy/examples and deploy/examples/openstack."
        ),
        "{first}"
    );
    let banner = operator
        .wait_line("the CAPI kubectl line", |line| {
            line.contains("machines.cluster.x-k8s.io")
                .then(|| line.to_owned())
        })
        .await;
    assert!(banner.ends_with(",openstackmachines -A"), "{banner}");
    let kubeconfig = kubeconfig.as_str();

    // MachineAPI-authoritative: the simulated OpenStack actuator runs the Machine (a Nova
    // server's providerID, its state in the annotation, no providerStatus) and the sync
    // mirrors it into a paused CAPI Machine and OpenStackMachine of the same server.
    let provider_id = wait_for("the MAPI Machine Running and synchronized", TIMEOUT, || async {
        let machine = mapi(kubeconfig, MAPI_MACHINE)?;
        let running = machine["status"]["phase"] == "Running"
            && has_finalizer(&machine, "machine.machine.openshift.io")
            && machine["metadata"]["annotations"]["machine.openshift.io/instance-state"] == "ACTIVE"
            && condition(&machine, "Synchronized") == Some("True");
        let provider_id = machine["spec"]["providerID"].as_str()?.to_owned();
        assert!(machine["status"].get("providerStatus").is_none(), "{machine}");
        (running && provider_id.starts_with("openstack:///")).then_some(provider_id)
    })
    .await;
    wait_for("the paused CAPI mirror and OpenStackMachine", TIMEOUT, || async {
        let machine = capi(kubeconfig, CAPI_MACHINE)?;
        let infra = capi(kubeconfig, OPENSTACK_MACHINE)?;
        (paused(&machine)
            && paused(&infra)
            && infra["spec"]["providerID"] == provider_id.as_str()
            && condition(&infra, "Paused") == Some("True"))
        .then_some(())
    })
    .await;

    // Migrate: the OpenStackMachine is unpaused, taken over by the simulated CAPO (its
    // finalizer, the server's state) and ready; the MAPI Machine pauses.
    kubectl(
        kubeconfig,
        &[
            "patch",
            MAPI_MACHINE,
            "-n",
            "openshift-machine-api",
            "--type=merge",
            "-p",
            r#"{"spec":{"authoritativeAPI":"ClusterAPI"}}"#,
        ],
    );
    wait_for("the migration to complete", TIMEOUT, || async {
        let machine = mapi(kubeconfig, MAPI_MACHINE)?;
        let capi_machine = capi(kubeconfig, CAPI_MACHINE)?;
        let infra = capi(kubeconfig, OPENSTACK_MACHINE)?;
        (machine["status"]["authoritativeAPI"] == "ClusterAPI"
            && condition(&machine, "Paused") == Some("True")
            && !paused(&capi_machine)
            && capi_machine["status"]["phase"] == "Running"
            && !paused(&infra)
            && condition(&infra, "Paused") == Some("False")
            && has_finalizer(&infra, "openstackmachine.infrastructure.cluster.x-k8s.io")
            && infra["status"]["ready"] == true
            && infra["status"]["instanceState"] == "ACTIVE")
            .then_some(())
    })
    .await;
    let infra = capi(kubeconfig, OPENSTACK_MACHINE);
    let machine = mapi(kubeconfig, MAPI_MACHINE);
    let same_server = |object: &Option<Value>| {
        object.as_ref().map(|o| o["spec"]["providerID"].clone()) == Some(Value::from(provider_id.as_str()))
    };
    assert!(same_server(&infra), "{infra:?}");
    assert!(same_server(&machine), "{machine:?}");

    // The sample loaded half-way through its migration completes too, on a server the
    // simulated CAPO launched.
    wait_for(
        "openstack-migrating-1 to complete its migration",
        TIMEOUT,
        || async {
            let machine = mapi(kubeconfig, "machines.machine.openshift.io/openstack-migrating-1")?;
            let infra = capi(kubeconfig, "openstackmachines/openstack-migrating-1")?;
            (machine["status"]["authoritativeAPI"] == "ClusterAPI"
                && infra["status"]["ready"] == true
                && infra["spec"]["providerID"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("openstack:///"))
                && machine["spec"]["providerID"] == infra["spec"]["providerID"])
                .then_some(())
        },
    )
    .await;

    operator.signal("TERM");
    let status = operator.wait_exit().await;
    assert!(status.success(), "{}", operator.lines().join("\n"));
}
