//! Two replicas of the operator binary with leader election: only the leader reconciles;
//! a leader that stops cleanly releases the Lease and the standby takes over; a leader
//! that crashes is replaced once its lease has expired.

mod common;

use common::{Operator, TIMEOUT, http_get, lease_holder, lease_transitions, metric, scrape, wait_for};

const LEASE: &str = "leader-test";

/// Waits until the replica behind `metrics` leads and has reconciled something.
async fn wait_leading(metrics: std::net::SocketAddr, who: &str) -> String {
    wait_for(&format!("{who} to lead and reconcile"), TIMEOUT, || async {
        let text = scrape(metrics).await;
        (metric(&text, "sync_leader", &[]) == 1.0 && metric(&text, "sync_reconcile_total", &[]) > 0.0)
            .then_some(text)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_reconciles_and_a_standby_takes_over_when_it_stops() {
    let env = common::env_with_samples().await;
    let kubeconfig = common::kubeconfig(&env);

    let mut a = Operator::against(&kubeconfig, "replica-a", LEASE, &[]);
    let a_metrics = a.metrics_address().await;
    wait_leading(a_metrics, "replica-a").await;
    let holder = lease_holder(&env, LEASE).await.unwrap_or_default();
    assert!(holder.starts_with("replica-a_"), "{holder}");

    // The second replica stands by: ready, not leading, not reconciling.
    let mut b = Operator::against(&kubeconfig, "replica-b", LEASE, &[]);
    let b_metrics = b.metrics_address().await;
    let b_probes = b.probe_address().await;
    let body = wait_for("replica-b to stand by", TIMEOUT, || async {
        match http_get(b_probes, "/readyz", None).await {
            Ok((200, body)) if body.contains("standby") => Some(body),
            _ => None,
        }
    })
    .await;
    assert!(
        body.contains("[+]standby: waiting for the leader lease ok"),
        "{body}"
    );
    // It has tried (and failed) to acquire the lease at least once by now.
    b.wait_line("an acquisition attempt", |line| {
        line.contains("attempting to acquire the leader lease")
            .then_some(())
    })
    .await;
    let text = scrape(b_metrics).await;
    assert_eq!(metric(&text, "sync_leader", &[]), 0.0, "{text}");
    assert_eq!(metric(&text, "sync_reconcile_total", &[]), 0.0, "{text}");
    assert!(
        lease_holder(&env, LEASE)
            .await
            .unwrap_or_default()
            .starts_with("replica-a_")
    );

    // A clean stop releases the lease: the standby takes over without waiting for it to
    // expire.
    a.signal("TERM");
    assert!(a.wait_exit().await.success(), "{}", a.lines().join("\n"));
    let holder = lease_holder(&env, LEASE).await;
    assert!(
        holder.as_deref().is_none_or(|h| h.starts_with("replica-b_")),
        "replica-a did not release the lease: {holder:?}"
    );
    wait_leading(b_metrics, "replica-b").await;
    assert!(
        lease_holder(&env, LEASE)
            .await
            .unwrap_or_default()
            .starts_with("replica-b_")
    );
    let transitions = lease_transitions(&env, LEASE).await;

    // A crashed leader keeps the lease until it expires (4 s here); then the standby
    // takes it.
    let mut c = Operator::against(&kubeconfig, "replica-c", LEASE, &[]);
    let c_metrics = c.metrics_address().await;
    c.wait_line("an acquisition attempt", |line| {
        line.contains("attempting to acquire the leader lease")
            .then_some(())
    })
    .await;
    assert_eq!(metric(&scrape(c_metrics).await, "sync_reconcile_total", &[]), 0.0);
    b.signal("KILL");
    let _ = b.wait_exit().await;
    assert!(
        lease_holder(&env, LEASE)
            .await
            .unwrap_or_default()
            .starts_with("replica-b_"),
        "a killed leader cannot release its lease"
    );
    wait_leading(c_metrics, "replica-c").await;
    assert!(
        lease_holder(&env, LEASE)
            .await
            .unwrap_or_default()
            .starts_with("replica-c_")
    );
    assert_eq!(lease_transitions(&env, LEASE).await, transitions + 1);

    c.signal("TERM");
    assert!(c.wait_exit().await.success(), "{}", c.lines().join("\n"));
}
