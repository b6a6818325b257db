//! PowerVS converts but is opt-in (`--platforms`, default AWS and OpenStack as upstream):
//! on a PowerVS cluster the operator leaves the Machines alone and says which flag turns
//! it on; listed, it mirrors a Machine API Machine to a paused CAPI Machine and an
//! `IBMPowerVSMachine`, on envtest serving Cluster API Provider IBM Cloud's real CRDs.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, wait_for};
use controllers::feature_gate::GateSource;
use controllers::operator::{Exit, Operator, Settings};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use sync_core::Namespaces;
use sync_core::api::{Infrastructure, mapi};
use tokio_util::sync::CancellationToken;

fn settings(platforms: &[&str]) -> Settings {
    Settings {
        namespaces: Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        },
        concurrency: 2,
        replica: "powervs-test".into(),
        leader_election: None,
        metrics_address: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        probe_address: None,
        shutdown_grace: std::time::Duration::from_secs(10),
        migration: controllers::migration::MigrationConfig::default(),
        checkpoint_namespace: None,
        gate: GateSource::Enabled,
        release_version: None,
        upstream_lease: None,
        platforms: platforms.iter().map(|p| (*p).to_owned()).collect(),
    }
}

fn conversion_fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../conversion/tests/fixtures/powervs")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// envtest with the project's CRDs and CAPIBM's, a PowerVS `Infrastructure` and a
/// MachineAPI-authoritative Machine of the installer's worker MachineSet.
async fn powervs_cluster() -> envtest::TestEnv {
    let deploy = controllers::operator::samples::deploy_dir();
    let capibm =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../envtest/tests/fixtures/upstream-crds/capibm");
    let env = envtest::TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .crd_dir(capibm)
        .namespace(MAPI_NS)
        .namespace(CAPI_NS)
        .start()
        .await
        .unwrap_or_else(|e| panic!("starting envtest: {e}"));
    let infrastructure: Infrastructure = serde_json::from_value(conversion_fixture("infrastructure.yaml"))
        .unwrap_or_else(|e| panic!("the PowerVS Infrastructure: {e}"));
    let infrastructures: Api<Infrastructure> = Api::all(env.client());
    let created = infrastructures
        .create(&PostParams::default(), &infrastructure)
        .await;
    assert!(created.is_ok(), "{created:?}");
    let status = Patch::Merge(json!({"status": infrastructure.status}));
    let patched = infrastructures
        .patch_status("cluster", &PatchParams::default(), &status)
        .await;
    assert!(patched.is_ok(), "{patched:?}");

    let set = conversion_fixture("installer-worker-machineset.yaml");
    let machine = json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": "pvs-worker-1", "namespace": MAPI_NS,
                     "labels": set["spec"]["template"]["metadata"]["labels"]},
        "spec": {"authoritativeAPI": "MachineAPI", "providerSpec": set["spec"]["template"]["spec"]["providerSpec"]}
    });
    let machine: mapi::Machine = serde_json::from_value(machine).unwrap_or_else(|e| panic!("{e}"));
    let machines: Api<mapi::Machine> = Api::namespaced(env.client(), MAPI_NS);
    let created = machines.create(&PostParams::default(), &machine).await;
    assert!(created.is_ok(), "{created:?}");
    env
}

fn capi_api(env: &envtest::TestEnv, group: &str, version: &str, kind: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(env.client(), CAPI_NS, &resource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn powervs_is_left_alone_unless_listed_in_platforms_and_synced_when_it_is() {
    let env = powervs_cluster().await;
    let capi_machines = capi_api(&env, "cluster.x-k8s.io", "v1beta2", "Machine");

    // Default platforms: an UnsupportedPlatform Event that names the flag, nothing mirrored.
    let operator = Operator::start(
        env.client(),
        settings(&["AWS", "OpenStack"]),
        CancellationToken::new(),
    )
    .await
    .unwrap_or_else(|e| panic!("starting the operator: {e}"));
    let events: Api<Event> = Api::namespaced(env.client(), "default");
    let note = wait_for("the UnsupportedPlatform Event", TIMEOUT, || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some("UnsupportedPlatform"))
            .and_then(|e| e.note)
    })
    .await;
    assert!(
        note.starts_with("platform \"PowerVS\" is not in --platforms (AWS,OpenStack); add it"),
        "{note}"
    );
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
    let mirror = capi_machines.get_opt("pvs-worker-1").await;
    assert!(
        matches!(mirror, Ok(None)),
        "mirrored while PowerVS is not listed: {mirror:?}"
    );

    // Listed: a paused CAPI mirror and its IBMPowerVSMachine, Synchronized=True.
    let operator = Operator::start(
        env.client(),
        settings(&["AWS", "PowerVS"]),
        CancellationToken::new(),
    )
    .await
    .unwrap_or_else(|e| panic!("starting the operator: {e}"));
    let machines: Api<mapi::Machine> = Api::namespaced(env.client(), MAPI_NS);
    wait_for("pvs-worker-1 Synchronized=True", TIMEOUT, || async {
        let machine = machines.get("pvs-worker-1").await.ok()?;
        let conditions = machine.status?.sync.conditions?;
        conditions
            .iter()
            .any(|c| c.type_ == "Synchronized" && c.status == "True")
            .then_some(())
    })
    .await;
    let mirror = capi_machines
        .get("pvs-worker-1")
        .await
        .unwrap_or_else(|e| panic!("the CAPI mirror: {e}"));
    let reference = &mirror.data["spec"]["infrastructureRef"];
    assert_eq!(reference["kind"], "IBMPowerVSMachine");
    let annotations = mirror.metadata.annotations.clone().unwrap_or_default();
    assert!(
        annotations.contains_key("cluster.x-k8s.io/paused"),
        "not paused: {annotations:?}"
    );
    let infra = capi_api(
        &env,
        "infrastructure.cluster.x-k8s.io",
        "v1beta2",
        "IBMPowerVSMachine",
    )
    .get("pvs-worker-1")
    .await
    .unwrap_or_else(|e| panic!("the IBMPowerVSMachine: {e}"));
    assert_eq!(infra.data["spec"]["systemType"], "s922");
    assert_eq!(
        infra.data["spec"]["serviceInstance"]["id"],
        "3f0c9a8e-5b1d-4c2e-9a7f-1e2d3c4b5a69"
    );
    assert_eq!(infra.data["spec"]["image"]["name"], "rhcos-mycluster-8kq4r");
    let owner = infra.metadata.owner_references.clone().unwrap_or_default();
    assert!(
        owner
            .iter()
            .any(|o| o.kind == "Machine" && o.name == "pvs-worker-1"),
        "{owner:?}"
    );
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
}
