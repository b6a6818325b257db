//! The operator binary shuts down cleanly on SIGTERM (and SIGINT): it stops reconciling,
//! releases its leader Lease, stops serving, and exits 0; its JSON logs are one object
//! per line.

mod common;

use common::{Operator, TIMEOUT, http_get, lease_holder, wait_for};
use serde_json::Value;

async fn run_then_signal(signal: &str, lease: &str) {
    let env = common::env_with_samples().await;
    let kubeconfig = common::kubeconfig(&env);
    let mut operator = Operator::against(&kubeconfig, "replica", lease, &[]);
    let probes = operator.probe_address().await;
    wait_for("the operator to be ready", TIMEOUT, || async {
        match http_get(probes, "/readyz", None).await {
            Ok((200, body)) if body.contains("caches synced ok") => Some(()),
            _ => None,
        }
    })
    .await;
    let holder = lease_holder(&env, lease).await.unwrap_or_default();
    assert!(holder.starts_with("replica_"), "{holder}");

    operator.signal(signal);
    let status = operator.wait_exit().await;
    let lines = operator.lines();
    assert!(status.success(), "exit {status:?}:\n{}", lines.join("\n"));
    assert_eq!(
        lease_holder(&env, lease).await,
        None,
        "the lease was not released"
    );
    let messages: Vec<String> = lines
        .iter()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(json) => json["message"].as_str().unwrap_or_default().to_owned(),
            Err(error) => panic!("not a JSON log line ({error}): {line}"),
        })
        .collect();
    for expected in [
        "shutting down",
        "controllers stopped",
        "released the leader lease",
        "stopped",
    ] {
        assert!(
            messages.iter().any(|m| m == expected),
            "no {expected:?} in\n{}",
            lines.join("\n")
        );
    }
    assert!(
        http_get(probes, "/healthz", None).await.is_err(),
        "still serving after exit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_cleanly_and_releases_the_lease() {
    run_then_signal("TERM", "shutdown-term").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigint_stops_cleanly_and_releases_the_lease() {
    run_then_signal("INT", "shutdown-int").await;
}
