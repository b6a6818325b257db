//! The shipped operator binary over the synchronized fleet (`--operator PATH`): what a user
//! runs, with its user-data copier, gate counter and code layout, where the bench's own
//! children ([`super::memory`]) run the controllers from the bench binary.
//!
//! A cold start (its restart checkpoints deleted first), then [`RESTARTS`] restarts, each
//! from the checkpoints the run before saved when it stopped (`SIGTERM`, as a pod is
//! stopped). Each run lasts until quiet, told from its metrics (`sync_reconcile_total`
//! polled every [`POLL`]), and its memory is read from `/proc/<pid>/status` [`SETTLE`]
//! later. The operator runs as `--leader-elect=false --machine-api-migration-gate
//! enabled`, so that its migration controllers run too.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use envtest::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use super::fill::Fleet;
use super::procfs;
use super::report::Figure;
use super::{BenchError, ms};

/// Restarts after the cold start.
pub const RESTARTS: usize = 5;

/// How often the operator's metrics are read: the error on "until quiet".
const POLL: Duration = Duration::from_millis(20);

/// How long without a reconcile counts as quiet (as [`super::real_sync::QUIET`]).
const QUIET: Duration = super::real_sync::QUIET;

/// How long after quiet memory is read (as [`super::memory`]'s children).
const SETTLE: Duration = Duration::from_secs(5);

/// The longest a run may take to fall quiet.
const TIMEOUT: Duration = Duration::from_secs(300);

/// One run of the operator, from its spawn.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ShippedRun {
    /// Spawn to the last reconcile before [`QUIET`] (within [`POLL`]).
    pub quiet_ms: f64,
    /// The process's CPU until then (10 ms resolution).
    pub cpu_ms: f64,
    /// Reconciles counted by its metrics until then.
    pub reconciles: u64,
    /// The server's resourceVersion advance from spawn to quiet (every write bumps it).
    pub rv_advance: u64,
    /// `VmRSS` [`SETTLE`] after quiet, KiB.
    pub rss_kib: u64,
    /// Of which anonymous (`RssAnon`), KiB.
    pub anon_kib: u64,
    /// Of which file-backed (`RssFile`: the binary's pages the kernel mapped), KiB.
    pub file_kib: u64,
    /// `VmHWM` (the peak) then, KiB.
    pub peak_kib: u64,
}

/// The cold start and the restarts.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Shipped {
    /// The binary measured.
    pub binary: PathBuf,
    /// The run without checkpoints.
    pub cold: ShippedRun,
    /// The runs from the checkpoints of the run before, in order.
    pub restarts: Vec<ShippedRun>,
}

impl Shipped {
    /// The restart whose time until quiet is the median.
    pub fn median_restart(&self) -> Option<&ShippedRun> {
        let mut runs: Vec<&ShippedRun> = self.restarts.iter().collect();
        runs.sort_by(|a, b| a.quiet_ms.total_cmp(&b.quiet_ms));
        runs.get(runs.len() / 2).copied()
    }

    /// The largest of a figure over the restarts.
    pub fn most(&self, figure: impl Fn(&ShippedRun) -> f64) -> f64 {
        self.restarts.iter().map(figure).fold(0.0, f64::max)
    }

    /// The smallest of a figure over the restarts.
    pub fn least(&self, figure: impl Fn(&ShippedRun) -> f64) -> f64 {
        self.restarts.iter().map(figure).fold(f64::INFINITY, f64::min)
    }

    /// The report's rows: the median restart's figures (the targets' rows), the spread
    /// of the restarts, the cold start's.
    pub fn figures(&self) -> Vec<Figure> {
        let Some(median) = self.median_restart() else {
            return Vec::new();
        };
        let mib = |kib: u64| kib as f64 / 1024.0;
        let n = self.restarts.len();
        vec![
            Figure::lower(
                format!(
                    "the shipped operator ({}): restart until quiet, median of {n}",
                    self.binary.display()
                ),
                "ms",
                median.quiet_ms,
                None,
            )
            .target(500.0),
            Figure::lower(
                "the shipped operator: the fastest restart",
                "ms",
                self.least(|r| r.quiet_ms),
                None,
            ),
            Figure::lower(
                "the shipped operator: the slowest restart",
                "ms",
                self.most(|r| r.quiet_ms),
                None,
            ),
            Figure::lower(
                "the shipped operator: CPU until quiet, the median restart",
                "ms",
                median.cpu_ms,
                None,
            ),
            Figure::lower(
                "the shipped operator: resourceVersion advance until quiet (the most of any restart)",
                "count",
                self.most(|r| r.rv_advance as f64),
                None,
            )
            .target(0.0),
            Figure::lower(
                "the shipped operator: VmRSS 5 s after quiet, the largest of the restarts",
                "MiB",
                self.most(|r| mib(r.rss_kib)),
                None,
            )
            .target(32.0),
            Figure::lower(
                "the shipped operator: VmRSS 5 s after quiet, the smallest of the restarts",
                "MiB",
                self.least(|r| mib(r.rss_kib)),
                None,
            ),
            Figure::lower(
                "of which anonymous, the median restart",
                "MiB",
                mib(median.anon_kib),
                None,
            ),
            Figure::lower(
                "of which file-backed, the median restart",
                "MiB",
                mib(median.file_kib),
                None,
            ),
            Figure::lower(
                "the shipped operator: peak (VmHWM), the median restart",
                "MiB",
                mib(median.peak_kib),
                None,
            ),
            Figure::lower(
                "the shipped operator: cold start until quiet",
                "ms",
                self.cold.quiet_ms,
                None,
            ),
            Figure::lower(
                "the shipped operator: cold start's CPU until quiet",
                "ms",
                self.cold.cpu_ms,
                None,
            ),
            Figure::lower(
                "the shipped operator: VmRSS 5 s after the cold start's quiet",
                "MiB",
                mib(self.cold.rss_kib),
                None,
            )
            .target(32.0),
        ]
    }
}

/// Runs `binary` over `env`'s synchronized `fleet`: a cold start, then [`RESTARTS`].
pub async fn measure(
    binary: &Path,
    env: &TestEnv,
    fleet: Fleet,
    progress: &impl Fn(&str),
) -> Result<Shipped, BenchError> {
    if !binary.is_file() {
        return Err(BenchError::Other(format!(
            "--operator {}: no such file; build the shipped operator first: cargo build --release -p controllers --no-default-features",
            binary.display()
        )));
    }
    let kubeconfig = env
        .kubeconfig_path()
        .map_err(|e| BenchError::Other(format!("kubeconfig: {e}")))?;
    // Each controller of the operator reconciles each of its names at least once: the
    // Machine and MachineSet sync and their migration controllers.
    let expected = 2 * (fleet.machines + fleet.machine_sets) as u64;
    delete_checkpoints(env).await?;
    let cold = run_once(binary, &kubeconfig, env, expected).await?;
    progress(&line("cold start", &cold));
    let mut restarts = Vec::new();
    for _ in 0..RESTARTS {
        let restart = run_once(binary, &kubeconfig, env, expected).await?;
        progress(&line("restart", &restart));
        restarts.push(restart);
    }
    Ok(Shipped {
        binary: binary.to_owned(),
        cold,
        restarts,
    })
}

/// A run's progress line.
fn line(what: &str, run: &ShippedRun) -> String {
    format!(
        "  the shipped operator, {what}: quiet after {:.2} s, CPU {:.2} s, {} reconciles, resourceVersion +{}; VmRSS {:.1} MiB ({:.1} anonymous, {:.1} file-backed), peak {:.1} MiB",
        run.quiet_ms / 1e3,
        run.cpu_ms / 1e3,
        run.reconciles,
        run.rv_advance,
        run.rss_kib as f64 / 1024.0,
        run.anon_kib as f64 / 1024.0,
        run.file_kib as f64 / 1024.0,
        run.peak_kib as f64 / 1024.0,
    )
}

/// Deletes every restart checkpoint (`<controller>-checkpoint` ConfigMaps, in the CAPI
/// namespace where a process without a pod namespace keeps them), the bench's
/// controllers' included, so that the first run starts cold.
async fn delete_checkpoints(env: &TestEnv) -> Result<(), BenchError> {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), &super::fill::namespaces().capi);
    for config_map in api.list(&ListParams::default()).await? {
        let name = config_map.metadata.name.unwrap_or_default();
        if name.ends_with("-checkpoint") {
            api.delete(&name, &DeleteParams::default()).await?;
        }
    }
    Ok(())
}

/// Spawns the operator, waits until it is quiet, reads its memory, stops it with SIGTERM
/// (which saves its checkpoints) and waits for its exit.
async fn run_once(
    binary: &Path,
    kubeconfig: &Path,
    env: &TestEnv,
    expected: u64,
) -> Result<ShippedRun, BenchError> {
    let port = free_port()?;
    let log = std::env::temp_dir().join(format!("sync-bench-operator-{}.log", std::process::id()));
    let log_file =
        std::fs::File::create(&log).map_err(|e| BenchError::Other(format!("{}: {e}", log.display())))?;
    let rv_before = env.resource_version();
    let spawned = Instant::now();
    let mut child = Command::new(binary)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--leader-elect=false", "--machine-api-migration-gate", "enabled"])
        .args(["--health-probe-bind-address", "0", "--metrics-bind-address"])
        .arg(format!("127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log_file)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BenchError::Other(format!("starting {}: {e}", binary.display())))?;
    let pid = child.id().ok_or_else(|| {
        BenchError::Other(format!(
            "{} exited at once; its log: {}",
            binary.display(),
            log.display()
        ))
    })?;
    let (quiet_at, reconciles) = until_quiet(port, spawned, expected)
        .await
        .map_err(|e| BenchError::Other(format!("{e}; the operator's log: {}", log.display())))?;
    let cpu = procfs::process_cpu(pid).unwrap_or_default();
    let rv_advance = env.resource_version().saturating_sub(rv_before);
    tokio::time::sleep(SETTLE).await;
    let kib = |field| procfs::status_kib(pid, field).unwrap_or_default();
    let run = ShippedRun {
        quiet_ms: ms(quiet_at),
        cpu_ms: ms(cpu),
        reconciles,
        rv_advance,
        rss_kib: kib("VmRSS"),
        anon_kib: kib("RssAnon"),
        file_kib: kib("RssFile"),
        peak_kib: kib("VmHWM"),
    };
    stop(&mut child, pid, &log).await?;
    Ok(run)
}

/// Polls the metrics until `expected` reconciles were counted and none came for [`QUIET`]:
/// the time of the last change from `spawned`, and the count.
async fn until_quiet(port: u16, spawned: Instant, expected: u64) -> Result<(Duration, u64), BenchError> {
    let mut last = None;
    let mut changed = spawned.elapsed();
    loop {
        tokio::time::sleep(POLL).await;
        // Not serving yet: the process is starting.
        let count = scrape(port).await.ok().map(|metrics| reconciles(&metrics));
        // Read once the answer is in: a busy operator answers late, and its count may be
        // as new as that (the time before asking understated a cold start by a second).
        let now = spawned.elapsed();
        if count != last {
            last = count;
            changed = now;
        } else if count.is_some_and(|n| n >= expected) && now - changed >= QUIET {
            return Ok((changed, count.unwrap_or_default()));
        }
        if now >= TIMEOUT {
            return Err(BenchError::Other(format!(
                "the shipped operator counted {} of at least {expected} reconciles in {TIMEOUT:?}",
                last.unwrap_or_default()
            )));
        }
    }
}

/// The sum of `sync_reconcile_total` over its labels.
fn reconciles(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|line| line.starts_with("sync_reconcile_total{") || line.starts_with("sync_reconcile_total "))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// `GET /metrics` on `127.0.0.1:port`, HTTP/1.1 with the connection closed after.
async fn scrape(port: u16) -> std::io::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await?;
    match response.split_once("\r\n\r\n") {
        Some((head, body)) if head.starts_with("HTTP/1.1 200") => Ok(body.to_owned()),
        _ => Err(std::io::Error::other("not a 200 answer")),
    }
}

/// A port nothing listens on now (the operator binds it a moment later).
fn free_port() -> Result<u16, BenchError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| BenchError::Other(format!("a free port: {e}")))
}

/// SIGTERM (the graceful stop that saves the checkpoints), then the exit, which must be a
/// success.
async fn stop(child: &mut Child, pid: u32, log: &Path) -> Result<(), BenchError> {
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .map_err(|e| BenchError::Other(format!("kill -TERM {pid}: {e}")))?;
    if !sent.success() {
        return Err(BenchError::Other(format!("kill -TERM {pid}: {sent}")));
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .map_err(|_| {
            BenchError::Other(format!(
                "the shipped operator did not stop; its log: {}",
                log.display()
            ))
        })?
        .map_err(|e| BenchError::Other(e.to_string()))?;
    if !status.success() {
        return Err(BenchError::Other(format!(
            "the shipped operator exited with {status}; its log: {}",
            log.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconciles_sum_every_label_set_and_nothing_else() {
        let metrics = "# HELP sync_reconcile_total x\n\
            sync_reconcile_total{controller=\"machine-sync\",result=\"success\"} 10000\n\
            sync_reconcile_total{controller=\"machine-set-sync\",result=\"skipped\"} 100\n\
            sync_reconcile_errors_total{controller=\"machine-sync\"} 7\n\
            sync_reconcile_duration_seconds_count 3\n";
        assert_eq!(reconciles(metrics), 10_100);
    }
}
