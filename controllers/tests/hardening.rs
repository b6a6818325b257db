//! The operator under hostile conditions: its probe port with the file-descriptor limit
//! reached, its JSON logs read by a strict JSON reader, and a shutdown whose Lease release
//! hangs.

mod common;

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use common::{LEASE_NS, Operator, TIMEOUT, http_get, lease_holder, wait_for};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A JSON value parsed by a reader that refuses duplicate object keys (serde_json, jq and
/// Python silently keep the last one).
struct UniqueKeys;

impl<'de> serde::Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueKeysVisitor)
    }
}

struct UniqueKeysVisitor;

impl<'de> Visitor<'de> for UniqueKeysVisitor {
    type Value = UniqueKeys;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_unit<E>(self) -> Result<UniqueKeys, E> {
        Ok(UniqueKeys)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<UniqueKeys, A::Error> {
        while seq.next_element::<UniqueKeys>()?.is_some() {}
        Ok(UniqueKeys)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<UniqueKeys, A::Error> {
        let mut seen = BTreeSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            map.next_value::<UniqueKeys>()?;
        }
        Ok(UniqueKeys)
    }
}

/// Item 3: every JSON line has unique keys, and a reconcile's lines name their object
/// inside the span (`span.object`) next to the span's own name (`span.name`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_log_lines_have_unique_keys_and_name_the_object() {
    let mut operator = Operator::spawn(&[
        "--embedded",
        "--log-format",
        "json",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
    ]);
    let line = operator
        // A hook's line inside a reconcile: the Dev samples cannot be converted (only AWS
        // can), which the sync reports naming the object.
        .wait_line("a hook's JSON line", |line| {
            let json: Value = serde_json::from_str(line).ok()?;
            (json["message"] == "sync failed").then(|| line.to_owned())
        })
        .await;
    operator.signal("TERM");
    let status = operator.wait_exit().await;
    assert!(status.success(), "{status:?}");

    for line in operator.lines().iter().filter(|l| l.starts_with('{')) {
        if let Err(error) = serde_json::from_str::<UniqueKeys>(line) {
            panic!("{error} in {line}");
        }
    }
    let json: Value = serde_json::from_str(&line).unwrap_or_default();
    let span = &json["span"];
    assert_eq!(span["name"], "reconcile", "{line}");
    assert!(span["object"].is_string(), "{line}");
    assert_eq!(span["object"], json["name"], "{line}");
    assert!(span["controller"].is_string(), "{line}");
}

/// Item 1: with the file-descriptor limit reached by idle connections to the probe port,
/// the accept loop backs off (a handful of warnings, not a flood) and idle connections
/// are closed, so `/readyz` answers again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_probe_port_survives_fd_exhaustion_without_a_log_flood() {
    const FD_LIMIT: u32 = 64;
    const IDLE: usize = 60;
    let env = common::env_with_samples().await;
    let kubeconfig = common::kubeconfig(&env);
    let kubeconfig = kubeconfig.display().to_string();
    let mut operator = Operator::spawn_with_fd_limit(
        FD_LIMIT,
        &[
            "--kubeconfig",
            &kubeconfig,
            "--leader-elect=false",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ],
    );
    let probes = operator.probe_address().await;
    wait_for("the operator to be ready", TIMEOUT, || async {
        matches!(http_get(probes, "/readyz", None).await, Ok((200, _))).then_some(())
    })
    .await;

    // Connections that never send a byte: more than the descriptors left.
    let mut idle = Vec::new();
    for _ in 0..IDLE {
        match tokio::net::TcpStream::connect(probes).await {
            Ok(stream) => idle.push(stream),
            Err(error) => panic!("connecting to the probe port: {error}"),
        }
    }
    let accept_failures = |operator: &Operator| {
        operator
            .lines()
            .iter()
            .filter(|line| line.contains("accepting an HTTP connection failed"))
            .count()
    };
    wait_for("the accept loop to run out of descriptors", TIMEOUT, || async {
        (accept_failures(&operator) > 0).then_some(())
    })
    .await;
    wait_for("/readyz to answer again", TIMEOUT, || async {
        let probe = tokio::time::timeout(Duration::from_secs(2), http_get(probes, "/readyz", None));
        matches!(probe.await, Ok(Ok((200, _)))).then_some(())
    })
    .await;
    let failures = accept_failures(&operator);
    assert!(
        failures < 100,
        "{failures} accept warnings: the loop does not back off"
    );
    drop(idle);
    operator.signal("TERM");
    let status = operator.wait_exit().await;
    assert!(status.success(), "{status:?}");
}

/// Item 9: the whole shutdown fits in `--graceful-shutdown-timeout`, even when the Lease
/// release hangs and the renew deadline (which used to bound the release on its own,
/// after the controllers' full grace) is longer than the budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_lease_release_cannot_outlast_the_shutdown_budget() {
    let env = common::env_with_samples().await;
    let kubeconfig = common::kubeconfig(&env);
    let kubeconfig = kubeconfig.display().to_string();
    let lease = "budget";
    let mut operator = Operator::spawn(&[
        "--kubeconfig",
        &kubeconfig,
        "--pod-name",
        "replica",
        "--leader-election-namespace",
        LEASE_NS,
        "--leader-election-id",
        lease,
        "--leader-election-lease-duration",
        "10m",
        "--leader-election-renew-deadline",
        "5m",
        "--leader-election-retry-period",
        "1s",
        "--graceful-shutdown-timeout",
        "2s",
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "127.0.0.1:0",
        "--log-format",
        "json",
    ]);
    let probes = operator.probe_address().await;
    wait_for("the operator to lead and be ready", TIMEOUT, || async {
        match http_get(probes, "/readyz", None).await {
            Ok((200, body)) if body.contains("caches synced ok") => Some(()),
            _ => None,
        }
    })
    .await;
    assert!(lease_holder(&env, lease).await.is_some());

    // Every request from now on hangs (the release among them).
    env.faults().set_latency(Duration::from_secs(3600));
    operator.signal("TERM");
    // Before the budget covered the release, this waited for the 5 min renew deadline.
    let status = operator.wait_exit().await;
    env.faults().clear();
    let lines = operator.lines();
    assert!(status.success(), "exit {status:?}:\n{}", lines.join("\n"));
    assert!(
        lines
            .iter()
            .any(|l| l.contains("releasing the leader lease did not finish within the shutdown budget")),
        "{}",
        lines.join("\n")
    );
}
