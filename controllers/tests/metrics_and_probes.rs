//! Metrics and probes of a running operator, scraped over HTTP: readiness is false until
//! the caches have synced, and `/metrics` counts reconciles and reports caches, watches
//! and leadership.

mod common;

use std::net::SocketAddr;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, http_get, metric, scrape, wait_for};
use controllers::operator::health::Phase;
use controllers::operator::{Exit, Operator, Settings};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use sync_core::Namespaces;
use sync_core::api::mapi;
use tokio_util::sync::CancellationToken;

fn settings() -> Settings {
    let local = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    Settings {
        namespaces: Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        },
        concurrency: 2,
        replica: "metrics-test".into(),
        leader_election: None,
        metrics_address: local,
        probe_address: local,
        shutdown_grace: std::time::Duration::from_secs(10),
        migration: controllers::migration::MigrationConfig::default(),
        checkpoint_namespace: None,
        gate: controllers::feature_gate::GateSource::Enabled,
        release_version: None,
        upstream_lease: None,
        platforms: controllers::operator::run::default_platforms(),
    }
}

async fn start(env: &envtest::TestEnv) -> Operator {
    match Operator::start(env.client(), settings(), CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    }
}

async fn stop(operator: Operator) {
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_is_false_before_the_caches_sync_and_true_after() {
    let env = common::env_with_samples().await;
    // The MachineSet caches cannot list until the fault is cleared.
    env.faults().fail(Some("list"), Some("machinesets"), 503, None);
    let operator = start(&env).await;
    let Some(probes) = operator.probe_address() else {
        panic!("no probe address")
    };
    assert_ne!(
        operator.metrics_address(),
        Some(probes),
        "port 0 twice gives two listeners"
    );

    let (status, _) = http_get(probes, "/healthz", None).await.unwrap_or_default();
    assert_eq!(status, 200, "liveness does not depend on the caches");
    wait_for("the controllers to start", TIMEOUT, || async {
        (operator.health().phase() == Phase::Leading).then_some(())
    })
    .await;
    // Leading comes a moment before the controllers are built and report their caches
    // ("controllers starting"); from then on the MachineSet caches report failure.
    let (status, body) = wait_for("/readyz to report the caches", TIMEOUT, || async {
        let answer = http_get(probes, "/readyz", None).await.ok()?;
        answer.1.contains("caches synced").then_some(answer)
    })
    .await;
    assert_eq!(status, 503, "{body}");
    assert!(
        body.contains("[-]machine-set-sync caches synced failed"),
        "{body}"
    );

    env.faults().clear();
    let body = wait_for("/readyz to pass", TIMEOUT, || async {
        match http_get(probes, "/readyz", None).await {
            Ok((200, body)) => Some(body),
            _ => None,
        }
    })
    .await;
    assert!(body.contains("[+]machine-sync caches synced ok"), "{body}");
    assert!(body.contains("[+]machine-set-sync caches synced ok"), "{body}");
    stop(operator).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_reconciles_and_report_caches_watches_and_leadership() {
    let env = common::env_with_samples().await;
    let operator = start(&env).await;
    let Some(address) = operator.metrics_address() else {
        panic!("no metrics address")
    };
    let reconciles = |text: &str, controller: &str, direction: &str, result: &str| {
        metric(
            text,
            "sync_reconcile_total",
            &[
                ("controller", controller),
                ("direction", direction),
                ("result", result),
            ],
        )
    };

    // Every sample name is reconciled: worker-a-1 (MachineAPI), worker-b-1 (CAPI-only,
    // owner mirrored) and worker-b-2 (ClusterAPI), migrating-1 (skipped), stray-1
    // (owner not mirrored); MachineSets worker-a, worker-b, and stray (CAPI-only).
    let text = wait_for("every sample to be reconciled", TIMEOUT, || async {
        let text = scrape(address).await;
        let done = reconciles(&text, "machine-sync", "mapi_to_capi", "success") >= 1.0
            && reconciles(&text, "machine-sync", "capi_to_mapi", "success") >= 2.0
            && metric(&text, "sync_reconcile_skipped_total", &[("reason", "migrating")]) >= 1.0
            && metric(
                &text,
                "sync_reconcile_skipped_total",
                &[("reason", "capi_only_owner_not_mirrored")],
            ) >= 1.0
            && reconciles(&text, "machine-set-sync", "mapi_to_capi", "success") >= 1.0
            && reconciles(&text, "machine-set-sync", "capi_to_mapi", "success") >= 1.0
            && metric(
                &text,
                "sync_reconcile_skipped_total",
                &[("reason", "capi_only_ignored")],
            ) >= 1.0
            && metric(&text, "sync_infrastructure_watches", &[("state", "watching")]) >= 4.0
            // The samples, and the AWS sample's mirrors: aws-workers-1's AWSMachine and
            // aws-workers' hashed template.
            && [
                ("DevMachine", 2.0),
                ("AWSMachine", 3.0),
                ("DevMachineTemplate", 1.0),
                ("AWSMachineTemplate", 2.0),
            ]
            .iter()
            .all(|(kind, n)| metric(&text, "sync_infrastructure_cache_objects", &[("kind", kind)]) == *n);
        done.then_some(text)
    })
    .await;
    // The real hooks may meet a stale cache (a refused finalizer patch, retried): errors
    // are counted as failed reconciles, one for one.
    assert_eq!(
        metric(&text, "sync_reconcile_errors_total", &[]),
        metric(&text, "sync_reconcile_total", &[("result", "error")]),
        "{text}"
    );
    assert!(
        metric(
            &text,
            "sync_reconcile_duration_seconds_count",
            &[("controller", "machine-sync")]
        ) >= 3.0,
        "{text}"
    );
    assert_eq!(metric(&text, "sync_leader", &[]), 1.0, "{text}");
    assert_eq!(
        metric(
            &text,
            "sync_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    // The samples, and the mirrors the sync creates (the caches follow them).
    for (controller, cache, count) in [
        ("machine-sync", "mapi", 4.0),
        ("machine-sync", "capi", 4.0),
        ("machine-sync", "owner_mirror", 3.0),
        ("machine-set-sync", "mapi", 3.0),
        ("machine-set-sync", "capi", 3.0),
    ] {
        let labels = [("controller", controller), ("cache", cache)];
        assert!(
            metric(&text, "sync_cache_objects", &labels) >= count,
            "{controller}/{cache}\n{text}"
        );
    }
    // The samples' platform is AWS: synced.
    assert_eq!(
        metric(&text, "sync_platform_supported", &[("platform", "AWS")]),
        1.0,
        "{text}"
    );
    for kind in [
        "DevMachine",
        "DevMachineTemplate",
        "AWSMachine",
        "AWSMachineTemplate",
    ] {
        let labels = [("kind", kind), ("state", "watching")];
        assert_eq!(
            metric(&text, "sync_infrastructure_watches", &labels),
            1.0,
            "{kind}\n{text}"
        );
    }
    assert!(metric(&text, "process_resident_memory_bytes", &[]) > 0.0);

    // A new MachineAPI-authoritative Machine is one more mapi_to_capi reconcile.
    let before = reconciles(&text, "machine-sync", "mapi_to_capi", "success");
    let machines: Api<mapi::Machine> = Api::namespaced(env.client(), MAPI_NS);
    let machine: mapi::Machine = match serde_json::from_value(serde_json::json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": "worker-c-1", "namespace": MAPI_NS},
        "spec": {},
    })) {
        Ok(machine) => machine,
        Err(error) => panic!("{error}"),
    };
    let created = machines.create(&PostParams::default(), &machine).await;
    assert!(created.is_ok(), "{created:?}");
    let status = Patch::Merge(serde_json::json!({"status": {"authoritativeAPI": "MachineAPI"}}));
    let patched = machines
        .patch_status("worker-c-1", &PatchParams::default(), &status)
        .await;
    assert!(patched.is_ok(), "{patched:?}");
    wait_for("the new Machine to be counted", TIMEOUT, || async {
        let text = scrape(address).await;
        (reconciles(&text, "machine-sync", "mapi_to_capi", "success") > before).then_some(())
    })
    .await;

    // OpenMetrics when asked for.
    let open = http_get(
        address,
        "/metrics",
        Some("application/openmetrics-text;version=1.0.0"),
    )
    .await
    .map(|(_, body)| body)
    .unwrap_or_default();
    assert!(open.ends_with("# EOF\n"), "{open}");
    let (status, _) = http_get(address, "/nope", None).await.unwrap_or_default();
    assert_eq!(status, 404);
    stop(operator).await;
}
