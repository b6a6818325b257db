//! Resident memory of the operator, idle and with many objects in its caches.
//!
//! ```text
//! cargo bench -p controllers --bench memory            # 10 000 pairs
//! MEMORY_BENCH_PAIRS=2000 cargo bench -p controllers --bench memory
//! MEMORY_BENCH_ONLY=mapi cargo bench -p controllers --bench memory   # one kind only
//!                                                    # (mapi, capi, infra = capi + infra)
//! ```
//!
//! For each scenario an in-process envtest is filled (in this process), then the release
//! operator binary runs against it in a separate process (no leader election); once its
//! caches hold every object and every name has been reconciled, its `VmRSS` is read from
//! `/proc/<pid>/status` once a second for five seconds (the last reading is reported,
//! with the peak `VmHWM`).
//!
//! Scenarios: idle (the CRDs, no objects) and N Machine pairs (a MAPI Machine with a
//! provider spec and `status.authoritativeAPI: MachineAPI`, and its CAPI Machine) plus N
//! DevMachines they reference.

use std::process::Stdio;
use std::time::{Duration, Instant};

use envtest::TestEnv;
use futures::{StreamExt, stream};
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Command;

const MAPI_NS: &str = "openshift-machine-api";
const CAPI_NS: &str = "openshift-cluster-api";

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::main]
async fn main() -> BenchResult<()> {
    let pairs: usize = std::env::var("MEMORY_BENCH_PAIRS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    println!("operator resident memory (VmRSS of the release binary, in its own process)");
    let idle = measure(0).await?;
    println!("  idle, no objects:                               {idle}");
    let full = measure(pairs).await?;
    println!("  {pairs} Machine pairs + {pairs} DevMachines:         {full}");
    Ok(())
}

/// One measurement.
struct Reading {
    rss_kib: u64,
    peak_kib: u64,
    synced_after: Duration,
}

impl std::fmt::Display for Reading {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:6.1} MiB (peak {:6.1} MiB; caches synced and all reconciled {:.1} s after start)",
            self.rss_kib as f64 / 1024.0,
            self.peak_kib as f64 / 1024.0,
            self.synced_after.as_secs_f64()
        )
    }
}

async fn measure(pairs: usize) -> BenchResult<Reading> {
    let env = fill(pairs).await?;
    let kubeconfig = env.kubeconfig_path()?;
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_controllers"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args([
            "--leader-elect=false",
            // envtest serves no FeatureGate API: without this the controllers never start.
            "--machine-api-migration-gate",
            "enabled",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "0",
            "--log-format",
            "json",
            "--log-level",
            "info,sync_core=warn",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().ok_or("the operator exited")?.to_string();
    let stderr = child.stderr.take().ok_or("no stderr")?;
    let (address_tx, address_rx) = tokio::sync::oneshot::channel();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut address_tx = Some(address_tx);
        while let Ok(Some(line)) = lines.next_line().await {
            let json: Value = serde_json::from_str(&line).unwrap_or_default();
            let message = json["message"].as_str().unwrap_or_default();
            if message.starts_with("serving metrics")
                && let Some(tx) = address_tx.take()
            {
                let _ = tx.send(json["address"].as_str().unwrap_or_default().to_owned());
            } else if json["level"] == "ERROR" || json["level"] == "WARN" {
                eprintln!("operator: {line}");
            }
        }
    });
    let address = tokio::time::timeout(Duration::from_secs(30), address_rx).await??;

    // Wait until the caches hold everything and every name was reconciled.
    let only = std::env::var("MEMORY_BENCH_ONLY").unwrap_or_default();
    let count = |kind: &str| {
        let kept = only.is_empty() || only == kind || (kind == "capi" && only == "infra");
        if kept { pairs as f64 } else { 0.0 }
    };
    let (mapi, capi, infra) = (count("mapi"), count("capi"), count("infra"));
    loop {
        let text = scrape(&address).await.unwrap_or_default();
        let machine = |name: &str, labels: &[(&str, &str)]| metric(&text, name, labels);
        let cache = |name: &str| {
            machine(
                "sync_cache_objects",
                &[("cache", name), ("controller", "machine-sync")],
            )
        };
        let reconciled = |direction: Option<&str>| {
            let mut labels = vec![("controller", "machine-sync")];
            labels.extend(direction.map(|d| ("direction", d)));
            machine("sync_reconcile_total", &labels)
        };
        let done = cache("mapi") >= mapi
            && cache("capi") >= capi
            && reconciled(None) >= mapi.max(capi)
            && reconciled(Some("mapi_to_capi")) >= mapi
            && (infra == 0.0
                || machine(
                    "sync_infrastructure_watches",
                    &[("kind", "DevMachine"), ("state", "watching")],
                ) >= 1.0)
            && text.contains("sync_leader 1")
            && metric(
                &text,
                "sync_feature_gate_enabled",
                &[("gate", "MachineAPIMigration")],
            ) >= 1.0;
        if done {
            break;
        }
        if started.elapsed() > Duration::from_secs(600) {
            return Err(format!("the operator did not sync {pairs} pairs in 10 minutes:\n{text}").into());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let synced_after = started.elapsed();

    let mut rss_kib = 0;
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        rss_kib = status_kib(&pid, "VmRSS:").ok_or("no VmRSS")?;
    }
    let peak_kib = status_kib(&pid, "VmHWM:").ok_or("no VmHWM")?;
    std::process::Command::new("kill")
        .args(["-s", "TERM", &pid])
        .status()?;
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait()).await??;
    if !status.success() {
        return Err(format!("the operator exited with {status}").into());
    }
    env.stop().await;
    Ok(Reading {
        rss_kib,
        peak_kib,
        synced_after,
    })
}

fn status_kib(pid: &str, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// An envtest with the CRDs and `pairs` Machine pairs and DevMachines.
async fn fill(pairs: usize) -> BenchResult<TestEnv> {
    let deploy = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let mut builder = TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .namespace(MAPI_NS)
        .namespace(CAPI_NS);
    // MEMORY_BENCH_ONLY=mapi|capi|infra keeps one kind (to attribute the memory).
    let only = std::env::var("MEMORY_BENCH_ONLY").unwrap_or_default();
    let with = |kind: &str| only.is_empty() || only == kind;
    for i in 0..pairs {
        let name = format!("worker-{i:05}");
        if with("mapi") {
            builder = builder.object(mapi_machine(&name));
        }
        if with("capi") || with("infra") {
            builder = builder.object(capi_machine(&name));
        }
        if with("infra") {
            builder = builder.object(dev_machine(&name));
        }
    }
    let env = builder.start().await?;
    // Status is not taken on create (status subresource): set it as a controller would.
    let machines: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        MAPI_NS,
        &ApiResource::from_gvk(&GroupVersionKind::gvk(
            "machine.openshift.io",
            "v1beta1",
            "Machine",
        )),
    );
    let status = Patch::Merge(json!({"status": {
        "authoritativeAPI": "MachineAPI",
        "phase": "Running",
        "providerStatus": {"instanceId": "i-0123456789abcdef0", "instanceState": "running"},
        "addresses": [{"type": "InternalIP", "address": "10.0.12.34"},
                      {"type": "InternalDNS", "address": "ip-10-0-12-34.ec2.internal"}],
    }}));
    let patched = if with("mapi") { pairs } else { 0 };
    let results: Vec<_> = stream::iter(0..patched)
        .map(|i| {
            let (machines, status) = (machines.clone(), status.clone());
            async move {
                machines
                    .patch_status(&format!("worker-{i:05}"), &PatchParams::default(), &status)
                    .await
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    for result in results {
        result?;
    }
    Ok(env)
}

fn mapi_machine(name: &str) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": MAPI_NS,
            "labels": {
                "machine.openshift.io/cluster-api-cluster": "sample-x7k2p",
                "machine.openshift.io/cluster-api-machine-role": "worker",
                "machine.openshift.io/cluster-api-machine-type": "worker",
                "machine.openshift.io/cluster-api-machineset": "sample-x7k2p-worker-us-east-1a",
            },
            "annotations": {"machine.openshift.io/instance-state": "running"},
        },
        "spec": {
            "authoritativeAPI": "MachineAPI",
            "providerID": format!("aws:///us-east-1a/i-{name}"),
            "lifecycleHooks": {},
            "providerSpec": {"value": {
                "apiVersion": "machine.openshift.io/v1beta1",
                "kind": "AWSMachineProviderConfig",
                "ami": {"id": "ami-0123456789abcdef0"},
                "instanceType": "m6i.xlarge",
                "placement": {"availabilityZone": "us-east-1a", "region": "us-east-1"},
                "blockDevices": [{"ebs": {"encrypted": true, "volumeSize": 120, "volumeType": "gp3"}}],
                "credentialsSecret": {"name": "aws-cloud-credentials"},
                "iamInstanceProfile": {"id": "sample-x7k2p-worker-profile"},
                "securityGroups": [{"filters": [{"name": "tag:Name", "values": ["sample-x7k2p-node"]}]}],
                "subnet": {"filters": [{"name": "tag:Name", "values": ["sample-x7k2p-subnet-private-us-east-1a"]}]},
                "tags": [{"name": "kubernetes.io/cluster/sample-x7k2p", "value": "owned"}],
                "userDataSecret": {"name": "worker-user-data"},
            }},
        },
    })
}

fn capi_machine(name: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {
            "name": name,
            "namespace": CAPI_NS,
            "labels": {
                "cluster.x-k8s.io/cluster-name": "sample-x7k2p",
                "machine.openshift.io/cluster-api-machineset": "sample-x7k2p-worker-us-east-1a",
            },
        },
        "spec": {
            "clusterName": "sample-x7k2p",
            "bootstrap": {"dataSecretName": "worker-user-data"},
            "infrastructureRef": {
                "apiGroup": "infrastructure.cluster.x-k8s.io",
                "kind": "DevMachine",
                "name": name,
            },
            "providerID": format!("aws:///us-east-1a/i-{name}"),
            "failureDomain": "us-east-1a",
            "version": "v1.32.4",
        },
    })
}

fn dev_machine(name: &str) -> Value {
    json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2",
        "kind": "DevMachine",
        "metadata": {
            "name": name,
            "namespace": CAPI_NS,
            "labels": {"cluster.x-k8s.io/cluster-name": "sample-x7k2p"},
        },
        "spec": {"providerID": format!("aws:///us-east-1a/i-{name}"), "backend": {"docker": {}}},
    })
}

async fn scrape(address: &str) -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = TcpStream::connect(address).await?;
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    Ok(response)
}

/// Sum of the samples of `name` carrying every label of `labels`.
fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, label_text) = match series.split_once('{') {
                Some((metric, rest)) => (metric, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            let matches = metric == name
                && labels
                    .iter()
                    .all(|(k, v)| label_text.split(',').any(|pair| pair == format!("{k}=\"{v}\"")));
            matches.then(|| value.parse::<f64>().ok()).flatten()
        })
        .sum()
}
