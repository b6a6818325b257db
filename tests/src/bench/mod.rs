//! The sync benchmark suite (`cargo bench -p e2e --bench sync`): the macro-generated
//! `MachineSync`/`MachineSetSync` on the sync-core engine against the hand-written
//! equivalent on kube-runtime ([`crate::handwritten`]), on envtest, at scale.
//!
//! Scenarios, each on an envtest of its own, filled by [`fill`]:
//! 1. **cold start** and 2. **event-to-hook latency** ([`scenarios::session`]):
//!    sessions alternate between the implementations; each starts one, times until every
//!    Machine pair was reconciled once, then times updates of each watched kind one at a
//!    time, from just before the write to the hook call that saw its resourceVersion. Issue
//!    4's figure (InfraMachine update to hook, 1 000 pairs, two kinds) is the InfraMachine
//!    latency at 1 000 pairs.
//! 3. **throughput** ([`scenarios::throughput`]): a stream of updates to distinct Machines.
//! 4. **memory** ([`memory`]): each implementation in a child process.
//! 5. every figure for both implementations, with the macro/hand-written ratio.
//! 6. **envtest**'s own figures (`envtest::bench`).
//!
//! And a correctness check at scale, **watch restart** ([`scenarios::restart`]): updates
//! made while the watches are down must reach a hook after the relist (`docs/design.md` §4's
//! "no event is lost").
//!
//! The implementations run in-process on a tokio runtime of their own, apart from the
//! envtest's, so their CPU time is measured too. Nothing here asserts on time: the suite
//! reports.

pub mod fill;
pub mod memory;
pub mod probe;
pub mod procfs;
pub mod real_controllers;
pub mod real_sync;
pub mod report;
pub mod requests;
pub mod scenarios;
pub mod shipped;
pub mod sut;

use std::path::Path;
use std::time::{Duration, Instant};

use envtest::harness::bench::{Report, Sizes, Stats};
use serde_json::{Value, json};

use fill::Fleet;
use real_sync::{RealOutcome, RealSettings};
use report::Figure;
use scenarios::{Restart, Session, Throughput, Watched};
use sut::Implementation;

/// Errors of the suite.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// envtest failed to start.
    #[error("envtest: {0}")]
    Envtest(#[from] envtest::EnvtestError),
    /// A request failed.
    #[error("request: {0}")]
    Kube(#[from] kube::Error),
    /// A wait timed out.
    #[error(transparent)]
    TimedOut(#[from] probe::TimedOut),
    /// envtest's own benchmark failed.
    #[error(transparent)]
    Envbench(#[from] envtest::harness::bench::BenchError),
    /// Anything else, in words.
    #[error("{0}")]
    Other(String),
}

/// How much work a run does.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Settings {
    /// `quick` or `full`.
    pub mode: &'static str,
    /// The fleet of every scenario.
    pub fleet: Fleet,
    /// Cold-start/latency sessions per implementation.
    pub sessions: usize,
    /// Timed updates per watched kind per implementation.
    pub latency_samples: usize,
    /// Untimed updates per kind at the start of a session.
    pub warmup: usize,
    /// Updates in the throughput stream.
    pub throughput_updates: usize,
    /// Writes in flight in the throughput stream.
    pub throughput_in_flight: usize,
    /// MAPI Machines updated while the watches are down in the restart scenario.
    pub restart_updates: usize,
    /// Pairs of issue 4's InfraMachine figure.
    pub issue4_pairs: usize,
    /// envtest's own benchmark (`None`: skipped).
    pub envtest: Option<Sizes>,
    /// The real sync's converge/idle/restart scenarios (`None`: skipped).
    pub real: Option<RealSettings>,
    /// Only the real sync's scenarios (not the stub-hook comparison).
    pub real_only: bool,
    /// The shipped operator binary, run over the real sync's synchronized fleet
    /// ([`shipped`]; `None`: not run).
    pub operator: Option<std::path::PathBuf>,
}

impl Settings {
    /// The full run: 10 000 pairs (or `pairs`).
    pub fn full(pairs: Option<usize>) -> Self {
        let machines = pairs.unwrap_or(10_000);
        Self {
            mode: "full",
            fleet: Fleet {
                machines,
                machine_sets: 100,
            },
            sessions: 3,
            latency_samples: 200,
            warmup: 3,
            throughput_updates: machines,
            throughput_in_flight: 16,
            restart_updates: (machines / 5).clamp(1, 2_000),
            issue4_pairs: 1_000,
            envtest: Some(Sizes::full()),
            real: Some(RealSettings {
                fleet: Fleet {
                    machines,
                    machine_sets: (machines / 100).max(1),
                },
                idle: Duration::from_secs(60),
                policies: false,
                platform: &crate::real::AWS,
            }),
            real_only: false,
            operator: None,
        }
    }

    /// The quick run: 1 000 pairs (or `pairs`), fewer samples, envtest's quick sizes.
    pub fn quick(pairs: Option<usize>) -> Self {
        let machines = pairs.unwrap_or(1_000);
        Self {
            mode: "quick",
            latency_samples: 100,
            envtest: Some(Sizes::quick()),
            real: Some(RealSettings {
                fleet: Fleet {
                    machines,
                    machine_sets: (machines / 100).max(1),
                },
                idle: Duration::from_secs(15),
                policies: false,
                platform: &crate::real::AWS,
            }),
            ..Self::full(Some(machines))
        }
    }
}

/// Everything a run measured.
pub struct Outcome {
    /// The figures, in table order.
    pub figures: Vec<Figure>,
    /// envtest's own report.
    pub envtest: Option<Report>,
    /// The raw measurements.
    pub raw: Value,
    /// The real sync's figures (sync against the floor), in table order.
    pub real_figures: Vec<Figure>,
}

/// The sessions of one implementation.
#[derive(Default)]
struct Sessions {
    sessions: Vec<Session>,
}

impl Sessions {
    fn cold_starts(&self, of: impl Fn(&Session) -> Duration) -> Stats {
        let samples: Vec<Duration> = self.sessions.iter().map(of).collect();
        Stats::of("cold start", &samples, None)
    }

    fn latencies(&self, kind: Watched) -> Stats {
        let samples: Vec<Duration> = self
            .sessions
            .iter()
            .flat_map(|s| s.latencies.iter().filter(|(k, _)| *k == kind))
            .flat_map(|(_, samples)| samples.iter().copied())
            .collect();
        Stats::of(kind.label(), &samples, None)
    }

    fn missed(&self) -> usize {
        self.sessions.iter().map(|s| s.missed).sum()
    }

    /// A small JSON summary (no raw samples).
    fn summary(&self) -> Value {
        let list =
            |of: fn(&Session) -> Duration| -> Vec<f64> { self.sessions.iter().map(|s| ms(of(s))).collect() };
        let kinds: Vec<Watched> = self
            .sessions
            .first()
            .map(|s| s.latencies.iter().map(|(k, _)| *k).collect())
            .unwrap_or_default();
        json!({
            "cold_start_ms": list(|s| s.cold_start),
            "cold_start_cpu_ms": list(|s| s.cold_start_cpu),
            "cold_start_machine_sets_ms": list(|s| s.cold_start_machine_sets),
            "complete_ms": list(|s| s.complete),
            "quiet_ms": list(|s| s.quiet),
            "quiet_cpu_ms": list(|s| s.quiet_cpu),
            "quiet_hook_calls": self.sessions.iter().map(|s| s.quiet_hook_calls).collect::<Vec<_>>(),
            "latency": kinds.into_iter().map(|k| self.latencies(k)).collect::<Vec<_>>(),
            "missed": self.missed(),
        })
    }
}

/// Runs cold-start/latency sessions on one envtest filled with `fleet`, alternating the
/// implementations (the first round macro first, the next hand-written first, …), then,
/// with `floor`, the same updates seen by plain watches ([`scenarios::watch_floor`]):
/// macro, hand-written, floor (empty without).
async fn sessions(
    fleet: Fleet,
    rounds: usize,
    kinds: &[Watched],
    samples: usize,
    warmup: usize,
    floor: bool,
    progress: &impl Fn(&str),
) -> Result<[Sessions; 3], BenchError> {
    let (env, filled) = fill::start(fleet).await?;
    progress(&format!(
        "filled {} Machine pairs and {} MachineSet pairs in {:.1} s",
        fleet.machines,
        fleet.machine_sets,
        filled.as_secs_f64()
    ));
    let mut results = [Sessions::default(), Sessions::default(), Sessions::default()];
    let rounds = rounds.max(1);
    for round in 0..rounds {
        let mut order = Implementation::BOTH;
        if round % 2 == 1 {
            order.reverse();
        }
        // Spread the samples over the rounds.
        let per_round = samples / rounds + usize::from(round < samples % rounds);
        for implementation in order {
            let number = round * 2 + usize::from(implementation == Implementation::HandWritten);
            let session =
                scenarios::session(&env, fleet, implementation, number, kinds, per_round, warmup).await?;
            progress(&format!(
                "  {:<12} cold start {:>5.0} ms (CPU {:>4.0} ms), with infrastructure {:>5.0} ms, quiet {:>5.0} ms \
                 (CPU {:>4.0} ms, {} hook calls); {} timed updates",
                implementation.as_str(),
                ms(session.cold_start),
                ms(session.cold_start_cpu),
                ms(session.complete),
                ms(session.quiet),
                ms(session.quiet_cpu),
                session.quiet_hook_calls,
                per_round * kinds.len()
            ));
            results[index(implementation)].sessions.push(session);
        }
    }
    if floor {
        let (latencies, missed) = scenarios::watch_floor(&env, kinds, samples, warmup).await?;
        results[2].sessions.push(Session {
            latencies,
            missed,
            ..Session::default()
        });
    }
    env.stop().await;
    Ok(results)
}

fn index(implementation: Implementation) -> usize {
    match implementation {
        Implementation::Macro => 0,
        Implementation::HandWritten => 1,
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Runs every scenario; `exe` is the bench binary (re-executed for the memory figures);
/// `progress` is told what happens.
pub async fn run(settings: &Settings, exe: &Path, progress: impl Fn(&str)) -> Result<Outcome, BenchError> {
    let fleet = settings.fleet;
    let started = Instant::now();
    let mut figures = Vec::new();

    let real = match settings.real {
        Some(real) => {
            progress(&format!(
                "0. the real sync: {} MAPI Machines and {} MachineSets (converge, idle, restart, floor)",
                real.fleet.machines, real.fleet.machine_sets
            ));
            Some(real_sync::run(real, exe, settings.operator.as_deref(), &progress).await?)
        }
        None => None,
    };
    let real_figures = real
        .as_ref()
        .map(|r| real_figures(settings, r))
        .unwrap_or_default();
    if settings.real_only {
        return Ok(Outcome {
            figures,
            envtest: None,
            raw: json!({ "real_sync": real }),
            real_figures,
        });
    }

    progress("1+2. cold start and event-to-hook latency");
    let [macro_sessions, hand_sessions, floor] = sessions(
        fleet,
        settings.sessions,
        &Watched::ALL,
        settings.latency_samples,
        settings.warmup,
        true,
        &progress,
    )
    .await?;
    let pairs = fleet.machines;
    let cold = |s: &Sessions| s.cold_starts(|s| s.cold_start).median_ms;
    figures.push(
        Figure::lower(
            format!(
                "cold start: {pairs} Machine pairs reconciled once, median of {}",
                settings.sessions
            ),
            "ms",
            cold(&macro_sessions),
            Some(cold(&hand_sessions)),
        )
        .target(3000.0),
    );
    let cpu = |s: &Sessions| s.cold_starts(|s| s.cold_start_cpu).median_ms;
    figures.push(Figure::lower(
        "cold start: controllers' CPU time until then",
        "ms",
        cpu(&macro_sessions),
        Some(cpu(&hand_sessions)),
    ));
    let complete = |s: &Sessions| s.cold_starts(|s| s.complete).median_ms;
    figures.push(Figure::lower(
        "cold start: every Machine pair reconciled with its infrastructure object",
        "ms",
        complete(&macro_sessions),
        Some(complete(&hand_sessions)),
    ));
    let quiet = |s: &Sessions| s.cold_starts(|s| s.quiet).median_ms;
    figures.push(Figure::lower(
        "cold start: last Machine hook call before 300 ms of quiet",
        "ms",
        quiet(&macro_sessions),
        Some(quiet(&hand_sessions)),
    ));
    let quiet_cpu = |s: &Sessions| s.cold_starts(|s| s.quiet_cpu).median_ms;
    figures.push(Figure::lower(
        "cold start: controllers' CPU time until quiet",
        "ms",
        quiet_cpu(&macro_sessions),
        Some(quiet_cpu(&hand_sessions)),
    ));
    let calls = |s: &Sessions| {
        let calls: u64 = s.sessions.iter().map(|s| s.quiet_hook_calls).sum();
        calls as f64 / (s.sessions.len().max(1) * pairs.max(1)) as f64
    };
    figures.push(Figure::lower(
        "cold start: Machine hook calls per pair until quiet",
        "calls",
        calls(&macro_sessions),
        Some(calls(&hand_sessions)),
    ));
    let sets = |s: &Sessions| s.cold_starts(|s| s.cold_start_machine_sets).median_ms;
    figures.push(Figure::lower(
        format!(
            "cold start: {} MachineSet pairs reconciled once",
            fleet.machine_sets
        ),
        "ms",
        sets(&macro_sessions),
        Some(sets(&hand_sessions)),
    ));
    for kind in Watched::ALL {
        let (m, h) = (macro_sessions.latencies(kind), hand_sessions.latencies(kind));
        figures.push(
            Figure::lower(
                format!(
                    "latency p50: {} update → hook ({} samples)",
                    kind.label(),
                    m.samples
                ),
                "ms",
                m.median_ms,
                Some(h.median_ms),
            )
            .target(0.5),
        );
        figures.push(
            Figure::lower(
                format!("latency p99: {} update → hook", kind.label()),
                "ms",
                m.p99_ms,
                Some(h.p99_ms),
            )
            .target(1.0),
        );
        let f = floor.latencies(kind);
        figures.push(Figure::lower(
            format!(
                "latency floor p50: {} update → a plain watch's event",
                kind.label()
            ),
            "ms",
            f.median_ms,
            None,
        ));
        figures.push(Figure::lower(
            format!(
                "latency floor p99: {} update → a plain watch's event",
                kind.label()
            ),
            "ms",
            f.p99_ms,
            None,
        ));
    }

    let issue4 = if settings.issue4_pairs == pairs {
        None
    } else {
        progress(&format!(
            "issue 4: InfraMachine update → hook at {} pairs",
            settings.issue4_pairs
        ));
        let small = Fleet {
            machines: settings.issue4_pairs,
            ..fleet
        };
        Some(
            sessions(
                small,
                1,
                &[Watched::InfraMachine],
                settings.latency_samples,
                settings.warmup,
                false,
                &progress,
            )
            .await?,
        )
    };
    let [m4, h4] = match &issue4 {
        Some([m, h, _]) => [m, h],
        None => [&macro_sessions, &hand_sessions],
    };
    let (m, h) = (
        m4.latencies(Watched::InfraMachine),
        h4.latencies(Watched::InfraMachine),
    );
    figures.push(
        Figure::lower(
            format!(
                "issue 4: InfraMachine (Dev/AWS) update → hook p50, {} pairs",
                settings.issue4_pairs
            ),
            "ms",
            m.median_ms,
            Some(h.median_ms),
        )
        .target(2.0),
    );
    figures.push(
        Figure::lower(
            format!(
                "issue 4: InfraMachine (Dev/AWS) update → hook p99, {} pairs",
                settings.issue4_pairs
            ),
            "ms",
            m.p99_ms,
            Some(h.p99_ms),
        )
        .target(10.0),
    );

    progress("3. throughput");
    let (env, filled) = fill::start(fleet).await?;
    progress(&format!("filled in {:.1} s", filled.as_secs_f64()));
    // Two runs each, in the order macro, hand-written, hand-written, macro.
    let mut throughput: [Vec<Throughput>; 2] = Default::default();
    let order = [
        Implementation::Macro,
        Implementation::HandWritten,
        Implementation::HandWritten,
        Implementation::Macro,
    ];
    for (number, implementation) in order.into_iter().enumerate() {
        let result = scenarios::throughput(
            &env,
            fleet,
            implementation,
            100 + number,
            settings.throughput_updates,
            settings.throughput_in_flight,
        )
        .await?;
        progress(&format!(
            "  {:<12} {:>7.0} hooks/s ({} updates written in {:.2} s, all hooks by {:.2} s; CPU {:.0} µs per update)",
            implementation.as_str(),
            result.hooks_per_second,
            result.updates,
            result.writing.as_secs_f64(),
            result.elapsed.as_secs_f64(),
            result.cpu.as_secs_f64() * 1e6 / result.updates.max(1) as f64,
        ));
        throughput[index(implementation)].push(result);
    }
    env.stop().await;
    let [mt, ht] = &throughput;
    let mean = |runs: &[Throughput], of: fn(&Throughput) -> f64| {
        runs.iter().map(of).sum::<f64>() / runs.len().max(1) as f64
    };
    let updates = mt.first().map_or(0, |t| t.updates);
    figures.push(Figure::higher(
        format!(
            "throughput: hooks/s, {updates} updates to distinct Machines, {} writes in flight, mean of 2",
            settings.throughput_in_flight
        ),
        "1/s",
        mean(mt, |t| t.hooks_per_second),
        Some(mean(ht, |t| t.hooks_per_second)),
    ));
    let per_update = |t: &Throughput| t.cpu.as_secs_f64() * 1e6 / t.updates.max(1) as f64;
    figures.push(Figure::lower(
        "throughput: controllers' CPU time per update",
        "µs",
        mean(mt, per_update),
        Some(mean(ht, per_update)),
    ));

    progress("4. memory (each implementation in its own process)");
    let (env, filled) = fill::start(fleet).await?;
    progress(&format!("filled in {:.1} s", filled.as_secs_f64()));
    let kubeconfig = env
        .kubeconfig_path()
        .map_err(|e| BenchError::Other(format!("kubeconfig: {e}")))?;
    let mut memory = Vec::new();
    for implementation in Implementation::BOTH {
        let reading = memory::measure(exe, &kubeconfig, fleet, implementation).await?;
        progress(&format!(
            "  {:<12} VmRSS {:.1} MiB (peak {:.1} MiB), all reconciled after {:.2} s",
            implementation.as_str(),
            reading.rss_kib as f64 / 1024.0,
            reading.peak_kib as f64 / 1024.0,
            reading.reconciled_after.as_secs_f64()
        ));
        memory.push(reading);
    }
    env.stop().await;
    let mib = |kib: u64| kib as f64 / 1024.0;
    if let [m, h] = memory.as_slice() {
        figures.push(
            Figure::lower(
                format!("memory: VmRSS 5 s after {pairs} pairs were reconciled"),
                "MiB",
                mib(m.rss_kib),
                Some(mib(h.rss_kib)),
            )
            .target(64.0),
        );
        figures.push(Figure::lower(
            "memory: peak resident set (VmHWM)",
            "MiB",
            mib(m.peak_kib),
            Some(mib(h.peak_kib)),
        ));
        figures.push(Figure::lower(
            "separate process: start to every pair reconciled with its infrastructure object",
            "ms",
            ms(m.reconciled_after),
            Some(ms(h.reconciled_after)),
        ));
        figures.push(Figure::lower(
            "separate process: CPU time until then",
            "ms",
            ms(m.cpu),
            Some(ms(h.cpu)),
        ));
    }
    progress("4b. watch restart (updates made while the watches are down)");
    let (env, filled) = fill::start(fleet).await?;
    progress(&format!("filled in {:.1} s", filled.as_secs_f64()));
    let mut restarts: Vec<Restart> = Vec::new();
    for (number, implementation) in Implementation::BOTH.into_iter().enumerate() {
        let result = scenarios::restart(
            &env,
            fleet,
            implementation,
            200 + number,
            settings.restart_updates,
        )
        .await?;
        progress(&format!(
            "  {:<12} {} of {} updates not seen by a hook within {} s ({} of them reconciled with an older object), {} not within {} s; {}",
            implementation.as_str(),
            result.lost,
            result.updates,
            scenarios::RESTART_DEADLINE.as_secs(),
            result.reconciled_stale,
            result.never,
            scenarios::RESTART_GIVE_UP.as_secs(),
            result
                .recovered_after
                .map_or("not recovered".to_owned(), |d| format!(
                    "all seen {:.2} s after the watches returned",
                    d.as_secs_f64()
                ))
        ));
        restarts.push(result);
    }
    env.stop().await;
    if let [m, h] = restarts.as_slice() {
        figures.push(
            Figure::lower(
                format!(
                    "watch restart: of {} updates made while the watches were down, not seen by a hook within {} s",
                    m.updates,
                    scenarios::RESTART_DEADLINE.as_secs()
                ),
                "count",
                m.lost as f64,
                Some(h.lost as f64),
            )
            .target(0.0),
        );
        figures.push(
            Figure::lower(
                format!(
                    "watch restart: of those, not seen within {} s (lost)",
                    scenarios::RESTART_GIVE_UP.as_secs()
                ),
                "count",
                m.never as f64,
                Some(h.never as f64),
            )
            .target(0.0),
        );
        let recovered = |r: &Restart| r.recovered_after.map_or(f64::NAN, |d| d.as_secs_f64());
        figures.push(Figure::lower(
            "watch restart: every update seen, after the watches returned",
            "s",
            recovered(m),
            Some(recovered(h)),
        ));
    }

    let missed =
        |s: &Sessions, t: &[Throughput]| (s.missed() + t.iter().map(|t| t.missed).sum::<usize>()) as f64;
    figures.push(
        Figure::lower(
            "timed updates whose hook call never came",
            "count",
            missed(&macro_sessions, mt) + issue4.as_ref().map_or(0.0, |[m, _, _]| m.missed() as f64),
            Some(missed(&hand_sessions, ht) + issue4.as_ref().map_or(0.0, |[_, h, _]| h.missed() as f64)),
        )
        .target(0.0),
    );

    let envtest = match settings.envtest {
        Some(sizes) => {
            progress("6. envtest");
            Some(envtest::harness::bench::run(sizes, &envtest::harness::bench::default_crd_dir()).await?)
        }
        None => None,
    };
    progress(&format!("done in {:.0} s", started.elapsed().as_secs_f64()));

    let raw = json!({
        "cold_start_and_latency": {"macro": macro_sessions.summary(), "hand-written": hand_sessions.summary(), "watch floor": floor.summary()},
        "issue4": issue4.as_ref().map(|[m, h, _]| json!({"macro": m.summary(), "hand-written": h.summary()})),
        "throughput": {"macro": mt, "hand-written": ht},
        "memory": memory,
        "restart": {"macro": restarts.first(), "hand-written": restarts.get(1)},
        "real_sync": real,
    });
    Ok(Outcome {
        figures,
        envtest,
        raw,
        real_figures,
    })
}

/// The real sync's figures: its own values, with targets (the floor's in rows of their
/// own; no hand-written column).
fn real_figures(settings: &Settings, real: &RealOutcome) -> Vec<Figure> {
    let Some(RealSettings {
        fleet,
        idle,
        policies,
        platform,
    }) = settings.real
    else {
        return Vec::new();
    };
    let installed = if policies {
        ", the admission policies installed"
    } else {
        ""
    };
    let pairs = (fleet.machines + fleet.machine_sets).max(1) as f64;
    let ratio = if real.floor_ms > 0.0 {
        real.converged_ms / real.floor_ms
    } else {
        0.0
    };
    let mut figures = vec![
        Figure::lower(
            format!(
                "real sync converge: {} {} Machines and {} MachineSets synchronized (every mirror created{installed})",
                fleet.machines, platform.name, fleet.machine_sets
            ),
            "ms",
            real.converged_ms,
            None,
        ),
        Figure::lower(
            "real sync converge: last write or reconcile before 1 s of quiet",
            "ms",
            real.converge_quiet_ms,
            None,
        ),
        Figure::lower(
            format!(
                "floor: the same objects written by a plain client, {} pairs at once",
                real_sync::CONCURRENCY
            ),
            "ms",
            real.floor_ms,
            None,
        ),
        Figure::lower(
            "floor: CPU of the API server and the plain client",
            "ms",
            real.floor_cpu_ms,
            None,
        ),
        Figure::lower("real sync converge / floor (wall time)", "ratio", ratio, None).target(0.5),
        Figure::lower(
            "real sync converge: write requests per pair",
            "requests",
            real.converge_writes as f64 / pairs,
            None,
        ),
        Figure::lower(
            "floor: write requests per pair",
            "requests",
            real.floor_writes as f64 / pairs,
            None,
        ),
        Figure::lower(
            "real sync converge: hook calls per pair",
            "calls",
            real.converge_hook_calls as f64 / pairs,
            None,
        ),
        Figure::lower(
            "real sync converge: controllers' CPU time until quiet",
            "ms",
            real.converge_cpu_ms,
            None,
        ),
        Figure::lower(
            "real sync converge: the API server's CPU until quiet (the rest of the bench process)",
            "ms",
            real.converge_server_cpu_ms,
            None,
        ),
        Figure::lower(
            format!(
                "idle {} s with a relist in the middle: write requests",
                idle.as_secs()
            ),
            "count",
            real.idle_writes as f64,
            None,
        )
        .target(0.0),
        Figure::lower(
            "idle: server resourceVersion advance",
            "count",
            real.idle_rv_advance as f64,
            None,
        )
        .target(0.0),
        Figure::lower(
            "idle: hook calls (the relist's)",
            "calls",
            real.idle_hook_calls as f64,
            None,
        ),
        Figure::lower(
            "idle with the simulated providers: until they and the sync settle",
            "ms",
            real.providers.settled_ms,
            None,
        ),
        Figure::lower(
            format!(
                "idle {} s with the simulated providers: server resourceVersion advance",
                idle.as_secs()
            ),
            "count",
            real.providers.rv_advance as f64,
            None,
        )
        .target(0.0),
        Figure::lower(
            "idle with the simulated providers: sync write requests",
            "count",
            real.providers.sync_writes as f64,
            None,
        )
        .target(0.0),
        Figure::lower(
            "idle with the simulated providers: ConflictingWriter Events (writer contests held off)",
            "count",
            real.providers.contests as f64,
            None,
        )
        .target(0.0),
        Figure::lower(
            format!(
                "restart over the synchronized fleet: until quiet, median of {}{installed}",
                real_sync::RESTARTS
            ),
            "ms",
            real.restart_quiet_ms,
            None,
        )
        .target(500.0),
        Figure::lower(
            "restart: the fastest of them until quiet",
            "ms",
            real.restart_quiet_runs_ms.iter().copied().fold(f64::INFINITY, f64::min),
            None,
        ),
        Figure::lower(
            "restart: the slowest of them until quiet",
            "ms",
            real.restart_quiet_runs_ms.iter().copied().fold(0.0, f64::max),
            None,
        ),
        Figure::lower(
            "restart: until the first Machine reconcile (the lists)",
            "ms",
            real.restart_first_machine_ms,
            None,
        ),
        Figure::lower(
            "restart's list floor: a plain client lists the watched kinds at once (median of 3)",
            "ms",
            real.restart_list_floor_ms,
            None,
        ),
        Figure::lower(
            "restart until quiet / its list floor",
            "ratio",
            real.restart_quiet_ms / real.restart_list_floor_ms,
            None,
        ),
        Figure::lower(
            "restart's serving floor: the same pages fetched, not decoded (median of 3)",
            "ms",
            real.restart_serve_floor_ms,
            None,
        ),
        Figure::lower(
            "restart until quiet / its serving floor",
            "ratio",
            real.restart_quiet_ms / real.restart_serve_floor_ms,
            None,
        ),
        Figure::lower(
            "restart: the API server's CPU until quiet (the rest of the bench process)",
            "ms",
            real.restart_server_cpu_ms,
            None,
        ),
        Figure::lower(
            "restart: write requests (the most of any restart)",
            "count",
            real.restart_writes as f64,
            None,
        )
        .target(0.0),
        Figure::lower(
            "restart: hook calls per pair (the most of any restart)",
            "calls",
            real.restart_hook_calls as f64 / pairs,
            None,
        ),
        Figure::lower(
            "restart: controllers' CPU time until quiet",
            "ms",
            real.restart_cpu_ms,
            None,
        ),
        Figure::lower(
            format!(
                "restart with the migration controllers (the operator's pairs): until quiet, median of {}",
                real_sync::OPERATOR_RESTARTS
            ),
            "ms",
            real.operator_restart_quiet_ms,
            None,
        ),
        Figure::lower(
            "restart with the migration controllers: controllers' CPU time until quiet",
            "ms",
            real.operator_restart_cpu_ms,
            None,
        ),
        Figure::lower(
            "restart with the migration controllers: hook calls per pair (the most of any)",
            "calls",
            real.operator_restart_hook_calls as f64 / pairs,
            None,
        ),
        Figure::lower(
            format!(
                "real sync resident memory over {} synchronized pairs and their infrastructure objects (own process, VmRSS 5 s after quiet)",
                fleet.machines + fleet.machine_sets
            ),
            "MiB",
            real.memory.as_ref().map_or(0.0, |m| m.rss_kib as f64 / 1024.0),
            None,
        )
        .target(32.0),
        Figure::lower(
            "of which anonymous (RssAnon: the heap, stacks and the allocator's retained pages)",
            "MiB",
            real.memory.as_ref().map_or(0.0, |m| m.anon_kib as f64 / 1024.0),
            None,
        ),
        Figure::lower(
            "of which file-backed (RssFile: the binary's pages the kernel mapped)",
            "MiB",
            real.memory.as_ref().map_or(0.0, |m| m.file_kib as f64 / 1024.0),
            None,
        ),
        Figure::lower(
            "the same with the migration controllers (the operator's pairs: each follows its sync controller, on its caches)",
            "MiB",
            real.operator_memory.as_ref().map_or(0.0, |m| m.rss_kib as f64 / 1024.0),
            None,
        ),
    ];
    figures.extend(
        real.shipped
            .as_ref()
            .map(shipped::Shipped::figures)
            .unwrap_or_default(),
    );
    figures
}
