//! The `MachineAPIMigration` feature gate, read from the cluster's FeatureGate for its
//! version: while it is off the sync and migration controllers do not run (nothing is
//! mirrored, `/readyz` is ready and says why, the gate metric is 0); turned on, they start
//! and mirror; turned off again, they stop — all in one operator process, no restart.

mod common;

use std::net::SocketAddr;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, http_get, metric, scrape, wait_for};
use controllers::feature_gate::GateSource;
use controllers::operator::{Exit, Operator, Settings};
use kube::api::{Api, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;
use sync_core::Namespaces;
use sync_core::api::{capi, mapi};
use tokio_util::sync::CancellationToken;

const GATE_METRIC: &str = "sync_feature_gate_enabled";

fn settings() -> Settings {
    let local = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    Settings {
        namespaces: Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        },
        concurrency: 2,
        replica: "gate-test".into(),
        leader_election: None,
        metrics_address: local,
        probe_address: local,
        shutdown_grace: std::time::Duration::from_secs(10),
        migration: controllers::migration::MigrationConfig::default(),
        checkpoint_namespace: None,
        gate: GateSource::Cluster,
        release_version: None,
        upstream_lease: None,
        platforms: controllers::operator::run::default_platforms(),
    }
}

/// Sets the gate for the samples' version (4.22.0) in the FeatureGate's status.
async fn set_gate(env: &envtest::TestEnv, enabled: bool) {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("config.openshift.io", "v1", "FeatureGate"),
        "featuregates",
    );
    let api: Api<DynamicObject> = Api::all_with(env.client(), &resource);
    let gate = json!([{"name": "MachineAPIMigration"}]);
    let (on, off) = if enabled {
        (gate, json!([]))
    } else {
        (json!([]), gate)
    };
    let patch = json!({"status": {"featureGates": [{"version": "4.22.0", "enabled": on, "disabled": off}]}});
    if let Err(error) = api
        .patch_status("cluster", &PatchParams::default(), &Patch::Merge(patch))
        .await
    {
        panic!("setting the gate: {error}");
    }
}

async fn mirrored(env: &envtest::TestEnv, name: &str) -> bool {
    let api: Api<capi::Machine> = Api::namespaced(env.client(), CAPI_NS);
    matches!(api.get_opt(name).await, Ok(Some(_)))
}

/// Waits until the gate metric and `/readyz` agree the controllers are (not) running.
async fn wait_gate(operator: &Operator, enabled: bool) -> String {
    let (Some(metrics), Some(probes)) = (operator.metrics_address(), operator.probe_address()) else {
        panic!("no metrics or probe address")
    };
    wait_for(&format!("the gate to read {enabled}"), TIMEOUT, || async move {
        let text = scrape(metrics).await;
        let value = metric(&text, GATE_METRIC, &[("gate", "MachineAPIMigration")]);
        let (status, body) = http_get(probes, "/readyz", None).await.unwrap_or_default();
        let gated = body.contains("controllers not running");
        (value == f64::from(u8::from(enabled)) && status == 200 && gated != enabled).then_some(body)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_run_only_while_the_gate_is_enabled_and_follow_it_without_a_restart() {
    let env = common::env_with_samples().await;
    set_gate(&env, false).await;
    let operator = match Operator::start(env.client(), settings(), CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    let Some(address) = operator.metrics_address() else {
        panic!("no metrics address")
    };

    // Off: ready, saying why; nothing reconciled, nothing mirrored.
    let body = wait_gate(&operator, false).await;
    assert!(
        body.contains("[+]controllers not running: MachineAPIMigration is disabled in featuregates.config.openshift.io/cluster status.featureGates[version=4.22.0] ok"),
        "{body}"
    );
    let text = scrape(address).await;
    assert!(!text.contains("sync_reconcile_total{"), "{text}");
    assert!(!mirrored(&env, "aws-workers-1").await);
    // What asks for Cluster API meanwhile is counted (worker-b-2 and migrating-1, and the
    // MachineSet worker-b), for the alert on requests the gate keeps from being honoured.
    wait_for("the requests the gate holds to be counted", TIMEOUT, || async {
        let text = scrape(address).await;
        let count = |kind| metric(&text, "sync_gated_requests", &[("kind", kind)]);
        (count("Machine") == 2.0 && count("MachineSet") == 1.0).then_some(())
    })
    .await;

    // On: the controllers start and mirror the MachineAPI-authoritative sample.
    set_gate(&env, true).await;
    let body = wait_gate(&operator, true).await;
    assert!(body.contains("[+]machine-sync caches synced ok"), "{body}");
    wait_for("aws-workers-1 to be mirrored", TIMEOUT, || async {
        mirrored(&env, "aws-workers-1").await.then_some(())
    })
    .await;
    assert!(
        !scrape(address).await.contains("sync_gated_requests{"),
        "no counts while running"
    );

    // Off again: they stop; a Machine created now is left alone until the gate returns.
    set_gate(&env, false).await;
    wait_gate(&operator, false).await;
    let machines: Api<mapi::Machine> = Api::namespaced(env.client(), MAPI_NS);
    let mut machine = match machines.get("aws-workers-1").await {
        Ok(machine) => machine,
        Err(error) => panic!("{error}"),
    };
    machine.metadata = ObjectMeta {
        name: Some("gated-1".into()),
        namespace: Some(MAPI_NS.into()),
        labels: machine.metadata.labels.clone(),
        ..ObjectMeta::default()
    };
    machine.status = None;
    if let Err(error) = machines.create(&PostParams::default(), &machine).await {
        panic!("creating gated-1: {error}");
    }
    assert!(!mirrored(&env, "gated-1").await);
    let before = metric(
        &scrape(address).await,
        "sync_reconcile_total",
        &[
            ("controller", "machine-sync"),
            ("direction", "mapi_to_capi"),
            ("result", "success"),
        ],
    );

    set_gate(&env, true).await;
    wait_gate(&operator, true).await;
    wait_for(
        "gated-1 to be mirrored once the gate is back",
        TIMEOUT,
        || async { mirrored(&env, "gated-1").await.then_some(()) },
    )
    .await;
    let after = metric(
        &scrape(address).await,
        "sync_reconcile_total",
        &[
            ("controller", "machine-sync"),
            ("direction", "mapi_to_capi"),
            ("result", "success"),
        ],
    );
    assert!(after > before, "{before} → {after}");

    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_feature_gate_api_nothing_runs_unless_the_flag_says_enabled() {
    // An envtest without the FeatureGate and ClusterVersion CRDs: plain Kubernetes.
    let env = common::env_without_config_crds().await;
    let operator = match Operator::start(env.client(), settings(), CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    let body = wait_gate(&operator, false).await;
    assert!(body.contains("--machine-api-migration-gate=enabled"), "{body}");
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));

    let mut enabled = settings();
    enabled.gate = GateSource::Enabled;
    let operator = match Operator::start(env.client(), enabled, CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    wait_gate(&operator, true).await;
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabled_by_the_flag_the_operator_stays_up_and_runs_nothing() {
    let env = common::env_with_samples().await;
    let mut disabled = settings();
    disabled.gate = GateSource::Disabled;
    let operator = match Operator::start(env.client(), disabled, CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    let body = wait_gate(&operator, false).await;
    assert!(body.contains("--machine-api-migration-gate=disabled"), "{body}");
    // Still serving, ready, and leading (a fixed source never changes; it does not end the run).
    assert_eq!(
        operator.health().phase(),
        controllers::operator::health::Phase::Leading
    );
    assert!(!mirrored(&env, "aws-workers-1").await);
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
}
