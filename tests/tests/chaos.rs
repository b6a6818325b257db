//! Chaos: the operator binary against `envtest-server` run as a separate process with a
//! state directory. While MAPI Machines change, the server is killed with SIGKILL and
//! restarted twice and the operator once; every change must still reach a hook.
//!
//! The observable is the operator's own log: the stub hooks log every call at debug
//! level with the resourceVersion of the MAPI object they were given, so a change with
//! resourceVersion `rv` reached a hook when a hook call for that Machine saw `rv` or a
//! later one (controllers are level-triggered: a later state covers an earlier change).
//!
//! Both binaries come from the workspace's target directory (`cargo test --workspace`
//! builds them; alone: `cargo build -p controllers -p envtest --bins` first).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::mapi;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const MAPI_NS: &str = "openshift-machine-api";
const CAPI_NS: &str = "openshift-cluster-api";
const TIMEOUT: Duration = Duration::from_secs(30);
const MACHINES: usize = 4;

/// A workspace binary next to this test's executable (`target/<profile>/NAME`).
fn binary(name: &str) -> TestResult<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = exe.parent().and_then(Path::parent).ok_or("no target directory")?;
    let path = dir.join(name);
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "{} is not built: cargo build -p controllers -p envtest --bins",
            path.display()
        )
        .into())
    }
}

/// A child process whose output lines are collected.
struct Process {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Process {
    fn spawn(program: &Path, args: &[String]) -> TestResult<Self> {
        let mut child = Command::new(program)
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let lines = lines.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(stream).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if let Ok(mut lines) = lines.lock() {
                        lines.push(line);
                    }
                }
            });
        }
        Ok(Self { child, lines })
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }

    async fn wait_line(&self, what: &str, find: impl Fn(&str) -> bool) -> TestResult {
        poll(what, || async {
            self.lines().iter().any(|l| find(l)).then_some(())
        })
        .await
    }

    async fn kill9(mut self) -> Vec<String> {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
        let _ = tokio::time::timeout(TIMEOUT, self.child.wait()).await;
        self.lines()
    }
}

/// Polls `check` every 50 ms until it returns `Some`, for at most [`TIMEOUT`].
async fn poll<T, F, Fut>(what: &str, mut check: F) -> TestResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let found = tokio::time::timeout(TIMEOUT, async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    found.map_err(|_| format!("timed out after {TIMEOUT:?} waiting for {what}").into())
}

fn server_args(dir: &Path) -> Vec<String> {
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    [
        "--kubeconfig",
        &dir.join("admin.kubeconfig").display().to_string(),
        "--state-dir",
        &dir.join("state").display().to_string(),
        "--crds",
        &deploy.join("crds").display().to_string(),
        "--crds",
        &deploy.join("examples/crds").display().to_string(),
        "--namespace",
        MAPI_NS,
        "--namespace",
        CAPI_NS,
    ]
    .map(String::from)
    .to_vec()
}

async fn start_server(dir: &Path) -> TestResult<Process> {
    let server = Process::spawn(&binary("envtest-server")?, &server_args(dir))?;
    server
        .wait_line("envtest-server ready", |l| l.contains("ready on"))
        .await?;
    Ok(server)
}

fn start_operator(dir: &Path) -> TestResult<Process> {
    let args = [
        "--kubeconfig",
        &dir.join("admin.kubeconfig").display().to_string(),
        "--leader-elect=false",
        // A plain cluster: no FeatureGate API.
        "--machine-api-migration-gate=enabled",
        "--mapi-namespace",
        MAPI_NS,
        "--capi-namespace",
        CAPI_NS,
        "--metrics-bind-address",
        "0",
        "--health-probe-bind-address",
        "0",
        "--log-format",
        "json",
        "--log-level",
        "info,sync_core::hooks=debug",
    ]
    .map(String::from);
    Process::spawn(&binary("controllers")?, &args)
}

/// The highest MAPI resourceVersion a hook call saw, per Machine, in `lines`.
fn seen_by_hooks(lines: &[String]) -> BTreeMap<String, u64> {
    let mut seen = BTreeMap::new();
    for line in lines {
        let Ok(json) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if json["message"] != "stub hook: no sync logic yet" || json["controller"] != "machine-sync" {
            continue;
        }
        let (Some(name), Some(rv)) = (
            json["name"].as_str(),
            json["mapi_resource_version"]
                .as_str()
                .and_then(|rv| rv.parse::<u64>().ok()),
        ) else {
            continue;
        };
        let entry = seen.entry(name.to_owned()).or_insert(0);
        *entry = (*entry).max(rv);
    }
    seen
}

async fn admin(dir: &Path) -> TestResult<Client> {
    let yaml = std::fs::read_to_string(dir.join("admin.kubeconfig"))?;
    let config =
        kube::Config::from_custom_kubeconfig(Kubeconfig::from_yaml(&yaml)?, &KubeConfigOptions::default())
            .await?;
    Ok(Client::try_from(config)?)
}

/// Labels Machine `name` with the step; retried past the connections a restart killed.
async fn change(machines: &Api<mapi::Machine>, name: &str, step: usize) -> TestResult<u64> {
    let patch = json!({"metadata": {"labels": {"chaos-step": step.to_string()}}});
    let patched = poll("a Machine patch to go through", || async {
        machines
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .ok()
    })
    .await?;
    Ok(patched
        .resource_version()
        .and_then(|rv| rv.parse().ok())
        .unwrap_or(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_reaches_a_hook_across_kill_9_restarts() -> TestResult {
    let dir = std::env::temp_dir().join(format!("machine-sync-chaos-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let mut server = start_server(&dir).await?;
    let client = admin(&dir).await?;
    let machines: Api<mapi::Machine> = Api::namespaced(client, MAPI_NS);
    let names: Vec<String> = (0..MACHINES).map(|i| format!("chaos-{i}")).collect();
    let mut written: BTreeMap<String, u64> = BTreeMap::new();
    for name in &names {
        machines
            .create(
                &PostParams::default(),
                &mapi::Machine::new(name, mapi::MachineSpec::default()),
            )
            .await?;
        let status = json!({"status": {"authoritativeAPI": "MachineAPI"}});
        let set = machines
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        written.insert(
            name.clone(),
            set.resource_version().and_then(|rv| rv.parse().ok()).unwrap_or(0),
        );
    }
    let mut operator = start_operator(&dir)?;
    let mut operator_lines: Vec<String> = Vec::new();

    // 12 rounds of changes; the server dies at rounds 3 and 8, the operator at 5.
    for step in 0..12 {
        for name in &names {
            let rv = change(&machines, name, step).await?;
            written.insert(name.clone(), rv);
        }
        match step {
            3 | 8 => {
                server.kill9().await;
                server = start_server(&dir).await?;
            }
            5 => {
                operator_lines.extend(operator.kill9().await);
                operator = start_operator(&dir)?;
            }
            _ => {}
        }
    }

    let all_seen = poll("every change to reach a hook", || async {
        let mut lines = operator_lines.clone();
        lines.extend(operator.lines());
        let seen = seen_by_hooks(&lines);
        written
            .iter()
            .all(|(name, rv)| seen.get(name).is_some_and(|s| s >= rv))
            .then_some(seen)
    })
    .await;
    let mut lines = operator_lines.clone();
    lines.extend(operator.lines());
    let Ok(seen) = all_seen else {
        panic!(
            "changes lost: written {written:?}, seen by hooks {:?}\n{}",
            seen_by_hooks(&lines),
            lines.join("\n")
        );
    };
    assert_eq!(seen.len(), MACHINES, "{seen:?}");
    operator.kill9().await;
    server.kill9().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
