//! The main command left alone: `controllers --embedded` (simulated providers on), once
//! its samples settle, idles for a while; reports the writes to synced objects, its CPU
//! use and its resident memory over the window.
//!
//! ```text
//! cargo bench -p controllers --bench embedded_idle                   # 10 minutes
//! EMBEDDED_IDLE_SECONDS=60 cargo bench -p controllers --bench embedded_idle
//! ```
//!
//! The release binary runs in its own process (the embedded API server is in it too, so
//! CPU and memory are the whole product's). Settled: no synced object changed for 10 s.
//! Then every 30 s: `VmRSS` from `/proc/<pid>/status` and the CPU time from
//! `/proc/<pid>/stat`; at the end, the synced objects' resourceVersions compared with the
//! window's start (kubectl, as a user reads them).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::io::{BufRead, BufReader};

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const SYNCED: &str = "machines.machine.openshift.io,machinesets.machine.openshift.io,machines.cluster.x-k8s.io,\
                      machinesets.cluster.x-k8s.io,awsmachines,awsmachinetemplates,devmachines,devmachinetemplates";
const SETTLED: Duration = Duration::from_secs(10);
const SAMPLE: Duration = Duration::from_secs(30);

fn main() -> BenchResult<()> {
    let window = Duration::from_secs(
        std::env::var("EMBEDDED_IDLE_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(600),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_controllers"))
        .args([
            "--embedded",
            "--metrics-bind-address",
            "127.0.0.1:0",
            "--health-probe-bind-address",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let pid = child.id();
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut kubeconfig = None;
    for line in BufReader::new(stdout).lines() {
        if let Some(path) = line?.strip_prefix("kubeconfig: ") {
            kubeconfig = Some(path.to_owned());
            break;
        }
    }
    let kubeconfig = kubeconfig.ok_or("the operator printed no kubeconfig")?;
    let outcome = measure(pid, &kubeconfig, window);
    Command::new("kill").args(["-TERM", &pid.to_string()]).status()?;
    child.wait()?;
    let outcome = outcome?;
    println!(
        "controllers --embedded, simulated providers on, idle {} s after the samples settled",
        window.as_secs()
    );
    println!(
        "  settled after:                 {:.1} s",
        outcome.settled.as_secs_f64()
    );
    println!(
        "  synced objects changed:        {} of {}",
        outcome.changed, outcome.objects
    );
    println!(
        "  CPU over the window:           {:.2} s = {:.2} % of a core",
        outcome.cpu.as_secs_f64(),
        100.0 * outcome.cpu.as_secs_f64() / window.as_secs_f64()
    );
    let mib = |kib: u64| kib as f64 / 1024.0;
    let (first, last) = (
        outcome.rss.first().copied().unwrap_or(0),
        outcome.rss.last().copied().unwrap_or(0),
    );
    let (low, high) = (
        outcome.rss.iter().copied().min().unwrap_or(0),
        outcome.rss.iter().copied().max().unwrap_or(0),
    );
    println!(
        "  VmRSS at the start / end:      {:.1} / {:.1} MiB (low {:.1}, high {:.1}, every {} s)",
        mib(first),
        mib(last),
        mib(low),
        mib(high),
        SAMPLE.as_secs()
    );
    Ok(())
}

struct Outcome {
    settled: Duration,
    objects: usize,
    changed: usize,
    cpu: Duration,
    rss: Vec<u64>,
}

fn measure(pid: u32, kubeconfig: &str, window: Duration) -> BenchResult<Outcome> {
    let started = Instant::now();
    let (mut last, mut since) = (versions(kubeconfig)?, Instant::now());
    while since.elapsed() < SETTLED {
        if started.elapsed() > Duration::from_secs(300) {
            return Err("the samples did not settle within 5 minutes".into());
        }
        std::thread::sleep(Duration::from_millis(500));
        let now = versions(kubeconfig)?;
        if now != last {
            (last, since) = (now, Instant::now());
        }
    }
    let settled = since.saturating_duration_since(started);
    let cpu_before = cpu(pid)?;
    let window_started = Instant::now();
    let mut rss = vec![rss_kib(pid)?];
    while window_started.elapsed() < window {
        std::thread::sleep(SAMPLE.min(window.saturating_sub(window_started.elapsed())));
        rss.push(rss_kib(pid)?);
    }
    let cpu = cpu(pid)?.saturating_sub(cpu_before);
    let after = versions(kubeconfig)?;
    let changed = after
        .lines()
        .filter(|line| !last.lines().any(|l| l == *line))
        .count();
    Ok(Outcome {
        settled,
        objects: last.lines().count(),
        changed,
        cpu,
        rss,
    })
}

/// Every synced object with its resourceVersion, one a line.
fn versions(kubeconfig: &str) -> BenchResult<String> {
    let output = Command::new("kubectl")
        .args(["--kubeconfig", kubeconfig, "get", SYNCED, "-A", "-o"])
        .arg("jsonpath={range .items[*]}{.kind}/{.metadata.namespace}/{.metadata.name}={.metadata.resourceVersion}{\"\\n\"}{end}")
        .output()?;
    if !output.status.success() {
        return Err(format!("kubectl: {}", String::from_utf8_lossy(&output.stderr)).into());
    }
    Ok(String::from_utf8(output.stdout)?)
}

fn rss_kib(pid: u32) -> BenchResult<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| "no VmRSS".into())
}

/// User and system CPU time of `pid` (fields 14 and 15 of `/proc/<pid>/stat`, in ticks
/// of 1/100 s on Linux).
fn cpu(pid: u32) -> BenchResult<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    // After the command's closing parenthesis, utime and stime are the 12th and 13th.
    Ok(Duration::from_millis((ticks(11) + ticks(12)) * 10))
}
