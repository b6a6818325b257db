//! Resident memory of an implementation at scale, in a process of its own: the bench
//! binary re-executes itself in a hidden child mode ([`child`]) that runs one
//! implementation against the envtest's kubeconfig and prints a line once every name has
//! been reconciled; the parent then reads the child's `/proc/<pid>/status`.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

use super::BenchError;
use super::fill::{self, Fleet};
use super::procfs;
use super::real_controllers::Wiring;
use super::sut::{self, Implementation, Probes};
use crate::real::{AWS, TestPlatform};

/// The argument that selects the child mode.
pub const CHILD_FLAG: &str = "--child";

/// The line the child prints once every name has been reconciled.
const RECONCILED: &str = "reconciled";

/// How long the child may take to reconcile everything.
const TIMEOUT: Duration = Duration::from_secs(600);

/// What one measurement found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Memory {
    /// `VmRSS` [`SETTLE`] after every name had been reconciled, KiB.
    pub rss_kib: u64,
    /// Of which anonymous (`RssAnon`: the heap, stacks, the allocator's retained pages), KiB.
    pub anon_kib: u64,
    /// Of which file-backed (`RssFile`: the binary's code and data pages, shared and
    /// reclaimable; how many the kernel maps depends on the binary's size), KiB.
    pub file_kib: u64,
    /// `VmHWM` (peak resident set) then, KiB.
    pub peak_kib: u64,
    /// CPU time of the child until then (10 ms resolution).
    pub cpu: Duration,
    /// Time from the child's start to every name reconciled, as the child measured it.
    pub reconciled_after: Duration,
}

/// The child mode of the real sync (the operator's controllers with the AWS hooks), next
/// to [`Implementation::as_str`]'s.
pub const REAL: &str = "real";

/// The child mode of the operator's pairs: the real sync and, following it on its caches,
/// the migration controllers.
pub const REAL_OPERATOR: &str = "real-operator";

/// Runs `exe` in child mode for `implementation` against the cluster of `kubeconfig` and
/// reads its memory once it has reconciled `fleet`.
pub async fn measure(
    exe: &Path,
    kubeconfig: &Path,
    fleet: Fleet,
    implementation: Implementation,
) -> Result<Memory, BenchError> {
    measure_mode(exe, kubeconfig, fleet, implementation.as_str(), &AWS).await
}

/// [`measure`] for a child mode by name ([`Implementation::as_str`] or [`REAL`]);
/// `platform`: the real sync's.
pub async fn measure_mode(
    exe: &Path,
    kubeconfig: &Path,
    fleet: Fleet,
    mode: &str,
    platform: &TestPlatform,
) -> Result<Memory, BenchError> {
    let mut child = Command::new(exe)
        .arg(CHILD_FLAG)
        .arg(mode)
        .arg(kubeconfig)
        .arg(fleet.machines.to_string())
        .arg(fleet.machine_sets.to_string())
        .arg(platform.name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| BenchError::Other(format!("starting {}: {e}", exe.display())))?;
    let pid = child
        .id()
        .ok_or_else(|| BenchError::Other("the child exited at once".into()))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| BenchError::Other("no child stdout".into()))?;
    let mut lines = BufReader::new(stdout).lines();
    let reconciled_after = tokio::time::timeout(TIMEOUT, async {
        while let Some(line) = lines.next_line().await? {
            if let Some(ms) = line.strip_prefix(RECONCILED) {
                let ms: u64 = ms.trim().parse().unwrap_or_default();
                return Ok(Some(Duration::from_millis(ms)));
            }
        }
        Ok::<_, std::io::Error>(None)
    })
    .await
    .map_err(|_| BenchError::Other(format!("the {mode} child did not reconcile in time")))?
    .map_err(|e| BenchError::Other(e.to_string()))?
    .ok_or_else(|| BenchError::Other(format!("the {mode} child exited early")))?;
    // CPU until every name was reconciled; memory once the allocator settled after that.
    let cpu = procfs::process_cpu(pid).unwrap_or_default();
    tokio::time::sleep(SETTLE).await;
    let rss_kib = procfs::status_kib(pid, "VmRSS").ok_or_else(|| BenchError::Other("no VmRSS".into()))?;
    let anon_kib = procfs::status_kib(pid, "RssAnon").unwrap_or_default();
    let file_kib = procfs::status_kib(pid, "RssFile").unwrap_or_default();
    let peak_kib = procfs::status_kib(pid, "VmHWM").unwrap_or_default();
    // Closing stdin asks the child to stop.
    drop(child.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .map_err(|_| BenchError::Other("the child did not stop".into()))?
        .map_err(|e| BenchError::Other(e.to_string()))?;
    if !status.success() {
        return Err(BenchError::Other(format!("the child exited with {status}")));
    }
    Ok(Memory {
        rss_kib,
        anon_kib,
        file_kib,
        peak_kib,
        cpu,
        reconciled_after,
    })
}

/// How long after the last reconcile the resident set is read, as the operator's memory
/// bench does: right then the allocator still holds freed pages it gives back within
/// about a second (`.cargo/config.toml`), 3-7 MiB at 10 000 pairs; the row is what the
/// process keeps.
const SETTLE: Duration = Duration::from_secs(5);

/// The child mode: `--child <implementation> <kubeconfig> <machines> <machine sets>
/// [<platform>]` (default AWS). Runs the implementation until every name is reconciled,
/// prints `reconciled <ms>`, then runs on until stdin closes. The real sync ([`REAL`], [`REAL_OPERATOR`]) runs until quiet
/// instead: it reconciles a synchronized fleet without writing.
pub async fn child(args: &[String]) -> Result<(), BenchError> {
    let usage = || {
        BenchError::Other(format!(
            "usage: {CHILD_FLAG} <macro|hand-written|{REAL}|{REAL_OPERATOR}> <kubeconfig> <machines> <sets> [AWS|OpenStack]"
        ))
    };
    let (implementation, kubeconfig, machines, sets, platform) = match args {
        [i, k, m, s] => (i, k, m, s, &AWS),
        [i, k, m, s, p] => (i, k, m, s, TestPlatform::named(p).ok_or_else(usage)?),
        _ => return Err(usage()),
    };
    if implementation == REAL || implementation == REAL_OPERATOR {
        let wiring = if implementation == REAL {
            Wiring::Sync
        } else {
            Wiring::Operator
        };
        let machines: usize = machines.parse().map_err(|_| usage())?;
        let sets: usize = sets.parse().map_err(|_| usage())?;
        let started = Instant::now();
        let kubeconfig = std::fs::read_to_string(kubeconfig).map_err(|e| BenchError::Other(e.to_string()))?;
        let controllers =
            super::real_controllers::Controllers::start_wired(&kubeconfig, 0, wiring, platform)?;
        controllers.quiet(machines + sets, TIMEOUT).await?;
        println!("{RECONCILED} {}", started.elapsed().as_millis());
        let mut rest = Vec::new();
        let _ = tokio::io::stdin().read_to_end(&mut rest).await;
        return controllers.stop().await;
    }
    let implementation = Implementation::parse(implementation).ok_or_else(usage)?;
    let machines: usize = machines.parse().map_err(|_| usage())?;
    let sets: usize = sets.parse().map_err(|_| usage())?;
    let started = Instant::now();
    let kubeconfig = std::fs::read_to_string(kubeconfig).map_err(|e| BenchError::Other(e.to_string()))?;
    let client = sut::client(&kubeconfig).await?;
    let probes = Probes::default();
    probes.machines.expect_distinct(machines);
    probes.machine_sets.expect_distinct(sets);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let controllers = tokio::spawn(sut::run(
        implementation,
        client,
        fill::namespaces(),
        probes.clone(),
        async move {
            let _ = stopped.await;
        },
    ));
    // Every pair reconciled with its infrastructure object: every cache is full.
    probes.machines.wait_distinct_with_infra(TIMEOUT).await?;
    probes.machine_sets.wait_distinct_with_infra(TIMEOUT).await?;
    println!("{RECONCILED} {}", started.elapsed().as_millis());
    let mut rest = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut rest).await;
    let _ = stop.send(());
    controllers
        .await
        .map_err(|e| BenchError::Other(format!("controllers: {e}")))
}
