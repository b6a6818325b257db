//! `cargo run -p controllers -- --embedded`: the binary starts its own API server with the
//! samples, prints a kubeconfig that kubectl can use, reconciles the samples, and stops
//! cleanly.
#![cfg(feature = "embedded")]

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::{Operator, TIMEOUT, metric, scrape, wait_for};

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

/// `controllers --embedded` on free ports, and the kubeconfig it printed.
async fn embedded() -> (Operator, String) {
    let mut operator = Operator::spawn(&[
        "--embedded",
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
    (operator, kubeconfig)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_mode_serves_kubectl_and_reconciles_the_samples() {
    let (mut operator, kubeconfig) = embedded().await;
    let paste = operator
        .wait_line("the kubectl line", |line| {
            line.trim()
                .starts_with("kubectl --kubeconfig")
                .then(|| line.trim().to_owned())
        })
        .await;
    assert_eq!(
        paste,
        format!("kubectl --kubeconfig {kubeconfig} get machines.machine.openshift.io -A")
    );
    let metrics = operator.printed_address("metrics:", "/metrics").await;

    // The ready-to-paste command works.
    let args: Vec<&str> = paste.split_whitespace().skip(3).collect();
    let table = kubectl(&kubeconfig, &args);
    for name in ["worker-a-1", "worker-b-2", "migrating-1"] {
        assert!(table.contains(name), "{table}");
    }
    let capi = kubectl(
        &kubeconfig,
        &[
            "get",
            "machines.cluster.x-k8s.io,devmachines,awsmachines",
            "-A",
            "-o",
            "name",
        ],
    );
    // The 8 samples, and the mirrors the sync creates meanwhile.
    assert!(capi.lines().count() >= 8, "{capi}");

    // kubectl shows the AWS samples mirrored and Synchronized=True.
    let synchronized = "jsonpath={.status.conditions[?(@.type==\"Synchronized\")].status}";
    for resource in [
        "machines.machine.openshift.io/aws-workers-1",
        "machinesets.machine.openshift.io/aws-workers",
    ] {
        wait_for(&format!("{resource} Synchronized=True"), TIMEOUT, || async {
            let out = kubectl(
                &kubeconfig,
                &["get", resource, "-n", "openshift-machine-api", "-o", synchronized],
            );
            (out.trim() == "True").then_some(())
        })
        .await;
    }
    let mirrors = kubectl(
        &kubeconfig,
        &[
            "get",
            "machines.cluster.x-k8s.io/aws-workers-1",
            "awsmachines/aws-workers-1",
            "-n",
            "openshift-cluster-api",
            "-o",
            "name",
        ],
    );
    assert_eq!(mirrors.lines().count(), 2, "{mirrors}");

    // The simulated providers run by default: the MachineAPI-authoritative Machine gets
    // the machine controller's finalizer and its instance.
    wait_for("the simulated MAPI machine controller", TIMEOUT, || async {
        let jsonpath = "jsonpath={.metadata.finalizers[*]} {.spec.providerID}";
        let out = kubectl(
            &kubeconfig,
            &[
                "get",
                "machines.machine.openshift.io",
                "-n",
                "openshift-machine-api",
                "aws-workers-1",
                "-o",
                jsonpath,
            ],
        );
        (out.contains("machine.machine.openshift.io") && out.contains("aws:///")).then_some(())
    })
    .await;

    // The samples get reconciled in both directions.
    wait_for("the samples to be reconciled", TIMEOUT, || async {
        let text = scrape(metrics).await;
        let count = |controller, direction| {
            metric(
                &text,
                "sync_reconcile_total",
                &[
                    ("controller", controller),
                    ("direction", direction),
                    ("result", "success"),
                ],
            )
        };
        (count("machine-sync", "mapi_to_capi") >= 1.0
            && count("machine-sync", "capi_to_mapi") >= 2.0
            && count("machine-set-sync", "mapi_to_capi") >= 1.0
            && count("machine-set-sync", "capi_to_mapi") >= 1.0)
            .then_some(())
    })
    .await;

    // The sample `migrating-1` is loaded half-way (spec ClusterAPI, status Migrating): the
    // migration controller completes it at start (README, "Migrating on a laptop").
    wait_for("migrating-1 to complete its migration", TIMEOUT, || async {
        let out = kubectl(
            &kubeconfig,
            &[
                "get",
                "machines.machine.openshift.io/migrating-1",
                "-n",
                "openshift-machine-api",
                "-o",
                "jsonpath={.status.authoritativeAPI} {.status.conditions[?(@.type==\"Migration\")].reason}",
            ],
        );
        (out.trim() == "ClusterAPI Migrated").then_some(())
    })
    .await;

    operator.signal("TERM");
    let status = operator.wait_exit().await;
    assert!(status.success(), "{}", operator.lines().join("\n"));
    assert!(
        !PathBuf::from(&kubeconfig).exists(),
        "the temporary kubeconfig outlived the server"
    );
}

/// Every synced object's kind and name with its resourceVersion, as kubectl lists them.
fn versions(kubeconfig: &str) -> String {
    kubectl(
        kubeconfig,
        &[
            "get",
            "machines.machine.openshift.io,machinesets.machine.openshift.io,machines.cluster.x-k8s.io,\
             machinesets.cluster.x-k8s.io,awsmachines,awsmachinetemplates,devmachines,devmachinetemplates",
            "-A",
            "-o",
            "jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{\"\\n\"}{end}",
        ],
    )
}

/// The embedded default, simulated providers on, goes quiet: once the samples settle,
/// nothing writes to any synced object (the AWSMachine conditions loop of issue 29 wrote
/// 60 times a second). Also: the Events sort by `lastTimestamp`, as `kubectl get events`
/// users sort them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_default_writes_nothing_once_the_samples_settle() {
    const QUIET: std::time::Duration = std::time::Duration::from_secs(5);
    const WINDOW: std::time::Duration = std::time::Duration::from_secs(15);
    let (mut operator, kubeconfig) = embedded().await;
    // Settled: the AWS sample's AWSMachine is running and nothing changed for QUIET.
    let mut last = (versions(&kubeconfig), std::time::Instant::now());
    wait_for("the samples to settle", TIMEOUT * 2, || {
        let now = versions(&kubeconfig);
        let running = kubectl(
            &kubeconfig,
            &[
                "get",
                "awsmachines",
                "-n",
                "openshift-cluster-api",
                "aws-workers-1",
                "--ignore-not-found",
                "-o",
                "jsonpath={.status.ready}",
            ],
        );
        if now != last.0 {
            last = (now, std::time::Instant::now());
        }
        let settled = running.trim() == "true" && last.1.elapsed() >= QUIET;
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            settled.then_some(())
        }
    })
    .await;
    let before = versions(&kubeconfig);
    let started = std::time::Instant::now();
    wait_for("the idle window", WINDOW * 2, || {
        let done = started.elapsed() >= WINDOW;
        async move {
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
            done.then_some(())
        }
    })
    .await;
    let after = versions(&kubeconfig);
    assert_eq!(before, after, "writes to synced objects while idle");
    assert!(before.lines().count() >= 10, "{before}");

    let events = kubectl(&kubeconfig, &["get", "events", "-A", "--sort-by=.lastTimestamp"]);
    assert!(events.contains("LAST SEEN"), "{events}");
    assert!(events.contains("SynchronizationError"), "{events}");
    // Quiet by agreement, not because the sync stopped fighting: no writer contest at all.
    assert!(!events.contains("ConflictingWriter"), "{events}");

    operator.signal("TERM");
    let status = operator.wait_exit().await;
    assert!(status.success(), "{}", operator.lines().join("\n"));
}
