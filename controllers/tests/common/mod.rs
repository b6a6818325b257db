//! Shared helpers of the operator tests: an envtest with the project's CRDs and samples,
//! the operator binary as a child process with its log lines, a minimal HTTP client for
//! the metrics and probe endpoints, and waits with timeouts (never fixed sleeps).
#![allow(dead_code)]

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use controllers::operator::samples::{SamplePlatform, deploy_dir, load_samples};
use envtest::TestEnv;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};
use tokio::sync::watch;

/// The Machine API namespace of the tests.
pub const MAPI_NS: &str = "openshift-machine-api";
/// The Cluster API namespace of the tests.
pub const CAPI_NS: &str = "openshift-cluster-api";
/// Where the tests keep their leader-election Leases.
pub const LEASE_NS: &str = "machine-sync";
/// How long a test waits for anything.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// An envtest with the project's CRDs, the example infrastructure CRDs and the namespaces.
pub async fn env() -> TestEnv {
    let deploy = deploy_dir();
    let started = TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .namespace(MAPI_NS)
        .namespace(CAPI_NS)
        .namespace(LEASE_NS)
        .start()
        .await;
    match started {
        Ok(env) => env,
        Err(error) => panic!("starting envtest: {error}"),
    }
}

/// An envtest with the project's CRDs only: no OpenShift config kinds (FeatureGate,
/// ClusterVersion, Infrastructure), as on plain Kubernetes.
#[allow(dead_code)]
pub async fn env_without_config_crds() -> TestEnv {
    let started = TestEnv::builder()
        .crd_dir(deploy_dir().join("crds"))
        .namespace(MAPI_NS)
        .namespace(CAPI_NS)
        .start()
        .await;
    match started {
        Ok(env) => env,
        Err(error) => panic!("starting envtest: {error}"),
    }
}

/// The Prometheus Operator's `ServiceMonitor` and `PrometheusRule` CRDs (see the README
/// beside them).
pub fn monitoring_crd_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/monitoring-crds")
}

/// [`env`] that also serves `monitoring.coreos.com/v1`, as a cluster running the
/// Prometheus Operator (OpenShift) does: what `deploy/monitoring/` needs to apply.
pub async fn env_with_monitoring_crds() -> TestEnv {
    let deploy = deploy_dir();
    let started = TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .crd_dir(monitoring_crd_dir())
        .namespace(MAPI_NS)
        .namespace(CAPI_NS)
        .namespace(LEASE_NS)
        .start()
        .await;
    match started {
        Ok(env) => env,
        Err(error) => panic!("starting envtest: {error}"),
    }
}

/// [`env`] with the AWS samples of `deploy/examples` loaded (as `--embedded` does).
pub async fn env_with_samples() -> TestEnv {
    let env = env().await;
    match load_samples(
        &env.client(),
        &deploy_dir().join("examples"),
        SamplePlatform::Aws,
        &|ns| ns.to_owned(),
    )
    .await
    {
        Ok(count) => assert!(count > 0),
        Err(error) => panic!("loading the samples: {error}"),
    }
    env
}

/// Polls `check` every 50 ms until it returns `Some`, for at most `timeout`.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let waited = tokio::time::timeout(timeout, async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    match waited {
        Ok(value) => value,
        Err(_) => panic!("timed out after {timeout:?} waiting for {what}"),
    }
}

/// `GET path` over HTTP/1.1: (status, body).
pub async fn http_get(
    address: SocketAddr,
    path: &str,
    accept: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(address).await?;
    let accept = accept.map(|a| format!("Accept: {a}\r\n")).unwrap_or_default();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {address}\r\n{accept}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

/// Scrapes `/metrics` (empty on a connection error).
pub async fn scrape(address: SocketAddr) -> String {
    http_get(address, "/metrics", None)
        .await
        .map(|(_, body)| body)
        .unwrap_or_default()
}

/// The sum of the samples of metric `name` (exact name) having every label of `labels`.
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
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

/// The leader-election Lease's holder, if the Lease exists and is held.
pub async fn lease_holder(env: &TestEnv, name: &str) -> Option<String> {
    let api: Api<Lease> = Api::namespaced(env.client(), LEASE_NS);
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
        .filter(|holder| !holder.is_empty())
}

/// The Lease's transitions count.
pub async fn lease_transitions(env: &TestEnv, name: &str) -> i32 {
    let api: Api<Lease> = Api::namespaced(env.client(), LEASE_NS);
    api.get_opt(name)
        .await
        .ok()
        .flatten()
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.lease_transitions)
        .unwrap_or(0)
}

/// The operator binary, running as a child process; stdout and stderr lines are kept.
pub struct Operator {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    changed: watch::Receiver<usize>,
    /// The tasks reading stdout and stderr; they end at EOF, after the last line.
    readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Operator {
    /// Starts `controllers ARGS`.
    pub fn spawn(args: &[&str]) -> Self {
        Self::spawn_command(Command::new(env!("CARGO_BIN_EXE_controllers")), args)
    }

    /// Starts `controllers ARGS` with at most `limit` open file descriptors (`ulimit -n`
    /// in a shell that then `exec`s the operator, so the pid is the operator's).
    pub fn spawn_with_fd_limit(limit: u32, args: &[&str]) -> Self {
        let mut command = Command::new("sh");
        command.args([
            "-c",
            &format!("ulimit -n {limit} && exec \"$0\" \"$@\""),
            env!("CARGO_BIN_EXE_controllers"),
        ]);
        Self::spawn_command(command, args)
    }

    fn spawn_command(mut command: Command, args: &[&str]) -> Self {
        command
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("POD_NAME")
            .env_remove("POD_NAMESPACE")
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(error) => panic!("starting the operator: {error}"),
        };
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (notify, changed) = watch::channel(0);
        let notify = Arc::new(notify);
        let mut readers = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            readers.push(collect(stdout, lines.clone(), notify.clone()));
        }
        if let Some(stderr) = child.stderr.take() {
            readers.push(collect(stderr, lines.clone(), notify));
        }
        Self {
            child,
            lines,
            changed,
            readers,
        }
    }

    /// Starts the operator against an envtest with fast leader election.
    pub fn against(kubeconfig: &Path, pod_name: &str, lease: &str, extra: &[&str]) -> Self {
        let kubeconfig = kubeconfig.display().to_string();
        let mut args = vec![
            "--kubeconfig",
            kubeconfig.as_str(),
            "--pod-name",
            pod_name,
            "--leader-election-namespace",
            LEASE_NS,
            "--leader-election-id",
            lease,
            "--leader-election-lease-duration",
            "4s",
            "--leader-election-renew-deadline",
            "3s",
            "--leader-election-retry-period",
            "500ms",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--log-level",
            "info",
        ];
        args.extend_from_slice(extra);
        Self::spawn(&args)
    }

    /// Every line printed so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// Waits for a line for which `find` returns `Some`.
    pub async fn wait_line<T>(&mut self, what: &str, mut find: impl FnMut(&str) -> Option<T>) -> T {
        let lines = self.lines.clone();
        let mut changed = self.changed.clone();
        let found = tokio::time::timeout(TIMEOUT, async move {
            loop {
                let hit = lines
                    .lock()
                    .ok()
                    .and_then(|lines| lines.iter().find_map(|line| find(line)));
                if let Some(hit) = hit {
                    return Some(hit);
                }
                if changed.changed().await.is_err() {
                    return None;
                }
            }
        })
        .await;
        match found {
            Ok(Some(hit)) => hit,
            _ => panic!("no {what} in the operator's output:\n{}", self.lines().join("\n")),
        }
    }

    /// The address of a JSON log line whose message starts with `message`.
    pub async fn logged_address(&mut self, message: &str) -> SocketAddr {
        self.wait_line(message, |line| {
            let json: Value = serde_json::from_str(line).ok()?;
            json["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(message))
                .then(|| json["address"].as_str()?.parse().ok())
                .flatten()
        })
        .await
    }

    /// The address of the URL `--embedded` prints after `label` (`metrics:`,
    /// `readiness:`), the URL ending in `path`.
    pub async fn printed_address(&mut self, label: &str, path: &str) -> SocketAddr {
        let prefix = format!("{label} http://");
        self.wait_line(&format!("the {label} line"), |line| {
            line.strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_suffix(path))
                .and_then(|address| address.parse().ok())
        })
        .await
    }

    /// The metrics address (from the `serving metrics` log line).
    pub async fn metrics_address(&mut self) -> SocketAddr {
        self.logged_address("serving metrics").await
    }

    /// The probe address (from the `serving probes` log line).
    pub async fn probe_address(&mut self) -> SocketAddr {
        self.logged_address("serving probes").await
    }

    /// The process id (while it runs).
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Sends a signal (`TERM`, `KILL`, …) with `kill(1)`.
    pub fn signal(&self, signal: &str) {
        let Some(pid) = self.child.id() else {
            panic!("the operator has exited already")
        };
        let status = std::process::Command::new("kill")
            .args(["-s", signal, &pid.to_string()])
            .status();
        assert!(status.is_ok_and(|s| s.success()), "kill -s {signal} {pid} failed");
    }

    /// Waits for the process to exit and for its output to be read to the end (the
    /// exit can be seen before the reader has taken the last lines).
    pub async fn wait_exit(&mut self) -> ExitStatus {
        let status = match tokio::time::timeout(TIMEOUT, self.child.wait()).await {
            Ok(Ok(status)) => status,
            Ok(Err(error)) => panic!("waiting for the operator: {error}"),
            Err(_) => panic!("the operator did not exit:\n{}", self.lines().join("\n")),
        };
        for reader in std::mem::take(&mut self.readers) {
            if tokio::time::timeout(TIMEOUT, reader).await.is_err() {
                panic!("the operator's output did not end:\n{}", self.lines().join("\n"));
            }
        }
        status
    }
}

fn collect(
    stream: impl AsyncRead + Unpin + Send + 'static,
    lines: Arc<Mutex<Vec<String>>>,
    notify: Arc<watch::Sender<usize>>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut reader = BufReader::new(stream).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if let Ok(mut lines) = lines.lock() {
                lines.push(line);
            }
            notify.send_modify(|n| *n += 1);
        }
    })
}

/// A kubeconfig file for the envtest admin (removed with the env).
pub fn kubeconfig(env: &TestEnv) -> PathBuf {
    match env.kubeconfig_path() {
        Ok(path) => path,
        Err(error) => panic!("writing the kubeconfig: {error}"),
    }
}
