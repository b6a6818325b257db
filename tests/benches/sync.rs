//! The sync benchmark: the macro-generated Machine/MachineSet controllers on the sync-core
//! engine against a hand-written kube-runtime equivalent, on envtest, at scale.
//!
//! ```text
//! cargo bench -p e2e --bench sync -- [--quick] [--pairs N] [--out FILE] [--no-envtest]
//! ```
//!
//! * default: 10 000 Machine pairs (+ 10 000 infrastructure machines, 100 MachineSet pairs);
//!   `--quick`: 1 000 pairs and fewer samples (under a minute on two cores);
//! * `--pairs N`: another fleet size;
//! * `--out FILE`: where the JSON result goes (default `target/bench/sync.json`; a
//!   Markdown table is written next to it, `FILE` with the extension `.md`);
//! * `--no-envtest`: skip envtest's own figures;
//! * `--no-real`: skip the real sync's converge/idle/restart scenarios; `--real-only`: run
//!   only those;
//! * `--policies`: the real sync's scenarios with the project's admission policies
//!   installed (the controllers as the operator's ServiceAccount, which they exempt);
//! * `--platform OpenStack`: the real sync's scenarios on an OpenStack fleet (default AWS);
//! * `--operator PATH`: after the real sync's scenarios, the shipped operator binary
//!   (`cargo build --release -p controllers --no-default-features`, then
//!   `target/release/controllers`) over the same synchronized fleet: a cold start and
//!   restarts, until quiet, CPU and memory (`e2e::bench::shipped`);
//! * `--serve`: only fill an envtest with the fleet (with `--real-only`: the real sync's
//!   fleet, synchronized, the platform's Infrastructure and the user-data Secret, so that
//!   the shipped operator syncs over it as over a cluster), print its kubeconfig path and serve
//!   until stdin closes — to profile one implementation on its own, e.g.
//!   `valgrind --tool=massif <bench binary> --child macro <kubeconfig> 10000 100`.
//!
//! Prints a table (figure, macro value, hand-written value, target, met?, ratio) and
//! writes the JSON. See `e2e::bench` for what each scenario does and `tests/PERFORMANCE.md`
//! for the latest figures. Nothing here fails on a missed target: it reports.

use std::path::PathBuf;
use std::process::ExitCode;

use e2e::bench::{self, Settings, memory, report};
use serde_json::json;

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// The command line.
struct Args {
    quick: bool,
    pairs: Option<usize>,
    out: PathBuf,
    envtest: bool,
    serve: bool,
    real: bool,
    real_only: bool,
    policies: bool,
    platform: &'static e2e::real::TestPlatform,
    operator: Option<PathBuf>,
}

fn parse(args: &[String]) -> BenchResult<Option<Args>> {
    let mut parsed = Args {
        quick: false,
        pairs: None,
        out: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/bench/sync.json"),
        envtest: true,
        serve: false,
        real: true,
        real_only: false,
        policies: false,
        platform: &e2e::real::AWS,
        operator: None,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => parsed.quick = true,
            "--pairs" => {
                let n = args.next().ok_or("--pairs needs a number")?;
                parsed.pairs = Some(n.parse().map_err(|_| format!("--pairs {n}: not a number"))?);
            }
            "--out" => parsed.out = from_shell(args.next().ok_or("--out needs a file")?),
            "--no-envtest" => parsed.envtest = false,
            "--serve" => parsed.serve = true,
            "--no-real" => parsed.real = false,
            "--real-only" => parsed.real_only = true,
            "--policies" => parsed.policies = true,
            "--platform" => {
                let name = args.next().ok_or("--platform needs AWS or OpenStack")?;
                parsed.platform = e2e::real::TestPlatform::named(name)
                    .ok_or_else(|| format!("--platform {name}: not AWS or OpenStack"))?;
            }
            "--operator" => {
                let path = args.next().ok_or("--operator needs the operator binary's path")?;
                parsed.operator = Some(from_shell(path));
            }
            "-h" | "--help" => {
                println!(
                    "usage: cargo bench -p e2e --bench sync -- [--quick] [--pairs N] [--out FILE] [--no-envtest] [--no-real] [--real-only] [--policies] [--platform AWS|OpenStack] [--operator PATH] [--serve]"
                );
                return Ok(None);
            }
            // `cargo bench` passes `--bench`; other harness flags are ignored too.
            flag if flag.starts_with('-') => {}
            other => return Err(format!("unexpected argument {other:?} (see --help)").into()),
        }
    }
    Ok(Some(parsed))
}

/// The operator binary's allocator (controllers/src/main.rs), so that the child processes
/// measured here (`--child`) stand for it.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => match args.first().map(String::as_str) {
            Some(memory::CHILD_FLAG) => runtime.block_on(memory::child(&args[1..])).map_err(Into::into),
            _ => runtime.block_on(benchmark(&args)),
        },
        Err(error) => Err(error.into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sync bench: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn benchmark(args: &[String]) -> BenchResult<()> {
    let Some(args) = parse(args)? else {
        return Ok(());
    };
    let mut settings = if args.quick {
        Settings::quick(args.pairs)
    } else {
        Settings::full(args.pairs)
    };
    if !args.envtest {
        settings.envtest = None;
    }
    if !args.real {
        settings.real = None;
    }
    settings.real_only = args.real_only && settings.real.is_some();
    settings.operator = args.operator.filter(|_| settings.real.is_some());
    if let Some(real) = settings.real.as_mut() {
        real.policies = args.policies;
        real.platform = args.platform;
    }
    if args.serve {
        return serve(&settings).await;
    }
    let machine = machine();
    println!(
        "sync bench ({} mode): {} Machine pairs, {} MachineSet pairs; {}",
        settings.mode,
        settings.fleet.machines,
        settings.fleet.machine_sets,
        machine["summary"].as_str().unwrap_or_default()
    );
    let load_before = load_average();
    let exe = std::env::current_exe()?;
    let outcome = bench::run(&settings, &exe, |line| println!("{line}")).await?;
    let load_after = load_average();

    if !outcome.real_figures.is_empty() {
        println!();
        println!("the real sync (AWS hooks):");
        print!("{}", report::table(&outcome.real_figures));
    }
    if !outcome.figures.is_empty() {
        println!();
        print!("{}", report::table(&outcome.figures));
    }
    if let Some(envtest) = &outcome.envtest {
        println!();
        println!("envtest (envtest::bench, {} mode):", settings.mode);
        print!("{}", envtest.table());
    }
    println!("load average before {load_before}, after {load_after}");

    let result = json!({
        "suite": "sync",
        "command": "cargo bench -p e2e --bench sync",
        "settings": settings,
        "machine": machine,
        "load_average": {"before": load_before, "after": load_after},
        "figures": report::json(&outcome.figures),
        "real_sync_figures": report::json(&outcome.real_figures),
        "raw": outcome.raw,
        "envtest": outcome.envtest.as_ref().map(|r| r.to_json()),
    });
    if let Some(parent) = args.out.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&args.out, format!("{result:#}\n"))?;
    let markdown = args.out.with_extension("md");
    let mut tables = String::new();
    if !outcome.real_figures.is_empty() {
        tables.push_str(&report::markdown(&outcome.real_figures));
        tables.push('\n');
    }
    tables.push_str(&report::markdown(&outcome.figures));
    std::fs::write(&markdown, tables)?;
    println!(
        "results written to {} (table: {})",
        args.out.display(),
        markdown.display()
    );
    Ok(())
}

/// A path given on the command line: relative to the shell's directory (`$PWD`), not to
/// the package directory `cargo bench` runs the binary in.
fn from_shell(path: &str) -> PathBuf {
    let path = PathBuf::from(path);
    match std::env::var_os("PWD") {
        Some(cwd) if path.is_relative() => PathBuf::from(cwd).join(path),
        _ => path,
    }
}

/// `--serve`: an envtest filled with the fleet, until stdin closes.
async fn serve(settings: &Settings) -> BenchResult<()> {
    use tokio::io::AsyncReadExt;
    if let Some(real) = settings.real.as_ref().filter(|_| settings.real_only) {
        let started = std::time::Instant::now();
        let env = bench::real_sync::converged_env(real.fleet, real.platform).await?;
        // The shipped operator run against it then syncs, as over a cluster.
        bench::real_sync::install_cluster_objects(&env, real.platform).await?;
        eprintln!(
            "{} MAPI Machines and {} MachineSets synchronized by the real sync in {:.1} s, with the {} Infrastructure and the user-data Secret; serving until stdin closes",
            real.fleet.machines,
            real.fleet.machine_sets,
            started.elapsed().as_secs_f64(),
            real.platform.name
        );
        println!("{}", env.kubeconfig_path()?.display());
        let mut rest = Vec::new();
        tokio::io::stdin().read_to_end(&mut rest).await?;
        env.stop().await;
        return Ok(());
    }
    let (env, filled) = bench::fill::start(settings.fleet).await?;
    let kubeconfig = env.kubeconfig_path()?;
    eprintln!(
        "filled {} Machine pairs and {} MachineSet pairs in {:.1} s; serving until stdin closes",
        settings.fleet.machines,
        settings.fleet.machine_sets,
        filled.as_secs_f64()
    );
    println!("{}", kubeconfig.display());
    let mut rest = Vec::new();
    tokio::io::stdin().read_to_end(&mut rest).await?;
    env.stop().await;
    Ok(())
}

/// The machine the figures were taken on.
fn machine() -> serde_json::Value {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_gib = meminfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemTotal:")?
                .split_whitespace()
                .next()?
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kib| kib / 1024.0 / 1024.0);
    let rustc = std::process::Command::new("rustc")
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    json!({
        "cpus": cpus,
        "cpu_model": model,
        "memory_gib": (memory_gib * 10.0).round() / 10.0,
        "rustc": rustc,
        "summary": format!("{cpus} CPUs ({model}), {memory_gib:.1} GiB, {rustc}"),
    })
}

/// `/proc/loadavg`'s three averages.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}
