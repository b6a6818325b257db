//! The in-process scenarios: cold start and event-to-hook latency (sessions that start an
//! implementation, wait until every pair was reconciled once, then time updates one at a
//! time), throughput (a stream of updates to distinct objects), and a watch restart at
//! scale (updates made while the watches are down must reach a hook after the relist).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use envtest::TestEnv;
use futures::{StreamExt, TryStreamExt};
use kube::Client;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::BenchError;
use super::fill::{self, Fleet};
use super::probe::{Probe, Side};
use super::sut::{Implementation, Probes, Running};

/// How long a session waits for the cold start (every pair reconciled once).
const COLD_START_TIMEOUT: Duration = Duration::from_secs(300);
/// How long without a hook call counts as the end of a cold start.
const QUIET: Duration = Duration::from_millis(300);
/// How long a timed update waits for its hook call before it counts as missed.
const HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// The kinds whose updates are timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Watched {
    /// A MAPI Machine (Machine controller).
    MapiMachine,
    /// A CAPI Machine (Machine controller).
    CapiMachine,
    /// An infrastructure machine, alternately a `DevMachine` and an `AWSMachine` (Machine
    /// controller).
    InfraMachine,
    /// An infrastructure machine template, alternately a `DevMachineTemplate` and an
    /// `AWSMachineTemplate` (MachineSet controller).
    InfraMachineTemplate,
}

impl Watched {
    /// Every watched kind.
    pub const ALL: [Self; 4] = [
        Self::MapiMachine,
        Self::CapiMachine,
        Self::InfraMachine,
        Self::InfraMachineTemplate,
    ];

    /// A label for tables.
    pub fn label(self) -> &'static str {
        match self {
            Self::MapiMachine => "MAPI Machine",
            Self::CapiMachine => "CAPI Machine",
            Self::InfraMachine => "InfraMachine (Dev/AWS)",
            Self::InfraMachineTemplate => "InfraMachineTemplate (Dev/AWS)",
        }
    }
}

/// The values updates write: every write changes its object (a no-op write would not).
static SEQUENCE: AtomicUsize = AtomicUsize::new(1);

/// A write whose hook call is awaited.
struct Update {
    machine_set: bool,
    name: String,
    side: Side,
    version: String,
}

/// Writes updates of the watched kinds.
#[derive(Clone)]
pub struct Writer {
    client: Client,
    namespaces: sync_core::Namespaces,
}

impl Writer {
    /// Writes through `client` to the fleet's namespaces.
    pub fn new(client: Client) -> Self {
        Self {
            client,
            namespaces: fill::namespaces(),
        }
    }

    /// Updates the object of `kind` belonging to Machine `i` (MachineSet `i` for templates)
    /// with a value never written before; returns what the hook call must see.
    async fn update(&self, kind: Watched, i: usize) -> Result<Update, BenchError> {
        let seq = SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let annotate = json!({"metadata": {"annotations": {"bench.example.com/seq": seq.to_string()}}});
        let spec = json!({"spec": {"generation": seq}});
        let (api, name, side, machine_set, patch) = match kind {
            Watched::MapiMachine => (
                fill::dynamic(&self.client, &self.namespaces.mapi, &fill::mapi_machines()),
                Fleet::machine(i),
                Side::Mapi,
                false,
                annotate,
            ),
            Watched::CapiMachine => (
                fill::dynamic(&self.client, &self.namespaces.capi, &fill::capi_machines()),
                Fleet::machine(i),
                Side::Capi,
                false,
                annotate,
            ),
            Watched::InfraMachine => (
                fill::dynamic(
                    &self.client,
                    &self.namespaces.capi,
                    &fill::infra_resource(Fleet::infra_kind(i)),
                ),
                Fleet::machine(i),
                Side::Infra,
                false,
                spec,
            ),
            Watched::InfraMachineTemplate => (
                fill::dynamic(
                    &self.client,
                    &self.namespaces.capi,
                    &fill::infra_resource(Fleet::template_kind(i)),
                ),
                Fleet::machine_set(i),
                Side::Infra,
                true,
                spec,
            ),
        };
        let version = patch_version(&api, &name, &patch).await?;
        Ok(Update {
            machine_set,
            name,
            side,
            version,
        })
    }
}

async fn patch_version(
    api: &Api<DynamicObject>,
    name: &str,
    patch: &serde_json::Value,
) -> Result<String, BenchError> {
    let written = api
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await?;
    written
        .metadata
        .resource_version
        .ok_or_else(|| BenchError::Other(format!("{name}: no resourceVersion in the answer")))
}

impl Update {
    fn probe<'a>(&self, probes: &'a Probes) -> &'a Probe {
        if self.machine_set {
            &probes.machine_sets
        } else {
            &probes.machines
        }
    }

    async fn wait(&self, probes: &Probes, timeout: Duration) -> Result<Instant, BenchError> {
        Ok(self
            .probe(probes)
            .wait_seen(&self.name, self.side, &self.version, timeout)
            .await?)
    }
}

/// What one session measured.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Session {
    /// Start to every Machine pair reconciled once.
    pub cold_start: Duration,
    /// Start to every MachineSet pair reconciled once.
    pub cold_start_machine_sets: Duration,
    /// CPU time of the implementation's threads until then.
    pub cold_start_cpu: Duration,
    /// Start to every Machine pair reconciled with its infrastructure object (the hooks
    /// of a pair may first be called before the infrastructure cache has it).
    pub complete: Duration,
    /// Start to the last Machine hook call before the controllers fell quiet.
    pub quiet: Duration,
    /// CPU time of the implementation's threads until quiet.
    pub quiet_cpu: Duration,
    /// Machine hook calls until quiet (a name reconciled again counts again).
    pub quiet_hook_calls: u64,
    /// Write-to-hook latencies by kind.
    pub latencies: Vec<(Watched, Vec<Duration>)>,
    /// Timed updates whose hook call never came.
    pub missed: usize,
}

/// The object of each kind a session updates: Machines 0–3 and MachineSets 0–1, so that
/// the InfraMachine updates alternate between a `DevMachine` (even) and an `AWSMachine`
/// (odd), and the template updates between the two template kinds.
fn target(kind: Watched, seq: usize) -> usize {
    match kind {
        Watched::MapiMachine => 0,
        Watched::CapiMachine => 1,
        Watched::InfraMachine => 2 + seq % 2,
        Watched::InfraMachineTemplate => seq % 2,
    }
}

/// Starts `implementation` against `env`, waits for its cold start, then times `samples`
/// updates of each of `kinds` (round-robin, one at a time, after `warmup` untimed ones).
pub async fn session(
    env: &TestEnv,
    fleet: Fleet,
    implementation: Implementation,
    number: usize,
    kinds: &[Watched],
    samples: usize,
    warmup: usize,
) -> Result<Session, BenchError> {
    let probes = Probes::default();
    probes.machines.expect_distinct(fleet.machines);
    probes.machine_sets.expect_distinct(fleet.machine_sets);
    let running = Running::start(
        implementation,
        &env.kubeconfig(),
        fill::namespaces(),
        probes.clone(),
        number,
    )?;
    let measured = async {
        let machines_at = probes.machines.wait_distinct(COLD_START_TIMEOUT).await?;
        let cold_start_cpu = running.cpu();
        let sets_at = probes.machine_sets.wait_distinct(COLD_START_TIMEOUT).await?;
        let complete_at = probes
            .machines
            .wait_distinct_with_infra(COLD_START_TIMEOUT)
            .await?;
        let (quiet_hook_calls, quiet_at) = probes.machines.wait_quiet(QUIET, COLD_START_TIMEOUT).await;
        let quiet_cpu = running.cpu();
        let since_start = |at: Instant| at.saturating_duration_since(running.started);
        let mut result = Session {
            cold_start: since_start(machines_at),
            cold_start_machine_sets: since_start(sets_at),
            cold_start_cpu,
            complete: since_start(complete_at),
            quiet: since_start(quiet_at),
            quiet_cpu,
            quiet_hook_calls,
            latencies: Vec::new(),
            missed: 0,
        };
        let timed = timed_updates(env, &probes, kinds, samples, warmup, implementation.as_str()).await?;
        (result.latencies, result.missed) = timed;
        Ok::<_, BenchError>(result)
    }
    .await;
    let stopped = running.stop().await;
    let result = measured?;
    stopped?;
    Ok(result)
}

/// Write-to-seen latencies by kind, and the updates never seen.
type Timed = (Vec<(Watched, Vec<Duration>)>, usize);

/// Times `samples` updates of each of `kinds` (round-robin, one at a time, after `warmup`
/// untimed ones), each until `probes` saw it; `who` names what was waited for in errors.
async fn timed_updates(
    env: &TestEnv,
    probes: &Probes,
    kinds: &[Watched],
    samples: usize,
    warmup: usize,
    who: &str,
) -> Result<Timed, BenchError> {
    probes.machines.set_recording(true);
    probes.machine_sets.set_recording(true);
    let writer = Writer::new(env.client());
    // Untimed: the infrastructure watches may still be starting.
    for seq in 0..warmup {
        for kind in kinds {
            let update = writer.update(*kind, target(*kind, seq)).await?;
            update.wait(probes, COLD_START_TIMEOUT).await?;
        }
    }
    let mut latencies: Vec<_> = kinds.iter().map(|k| (*k, Vec::with_capacity(samples))).collect();
    let mut missed = 0;
    for seq in warmup..warmup + samples {
        for (kind, latencies) in &mut latencies {
            let started = Instant::now();
            let update = writer.update(*kind, target(*kind, seq)).await?;
            match update.wait(probes, HOOK_TIMEOUT).await {
                Ok(at) => latencies.push(at.saturating_duration_since(started)),
                Err(error) => {
                    eprintln!("  {who}: {error}");
                    missed += 1;
                }
            }
        }
    }
    Ok((latencies, missed))
}

/// The floor under the event-to-hook latency: the same timed updates, each until a plain
/// watch of its kind (a kube-runtime `watcher`, objects decoded, no cache, queue or hook)
/// receives the event that carries its resourceVersion. What the server's write, its watch
/// fan-out and the client's decoding cost on this machine; an implementation's latency
/// minus this is its own.
pub async fn watch_floor(
    env: &TestEnv,
    kinds: &[Watched],
    samples: usize,
    warmup: usize,
) -> Result<Timed, BenchError> {
    let probes = Probes::default();
    let client = env.client();
    let namespaces = fill::namespaces();
    let mut watches = vec![
        (
            fill::dynamic(&client, &namespaces.mapi, &fill::mapi_machines()),
            Side::Mapi,
            &probes.machines,
        ),
        (
            fill::dynamic(&client, &namespaces.capi, &fill::capi_machines()),
            Side::Capi,
            &probes.machines,
        ),
    ];
    for i in 0..2 {
        let machines = fill::infra_resource(Fleet::infra_kind(i));
        watches.push((
            fill::dynamic(&client, &namespaces.capi, &machines),
            Side::Infra,
            &probes.machines,
        ));
        let templates = fill::infra_resource(Fleet::template_kind(i));
        watches.push((
            fill::dynamic(&client, &namespaces.capi, &templates),
            Side::Infra,
            &probes.machine_sets,
        ));
    }
    let tasks: Vec<_> = watches
        .into_iter()
        .map(|(api, side, probe)| tokio::spawn(watch_into(api, side, probe.clone())))
        .collect();
    let timed = timed_updates(env, &probes, kinds, samples, warmup, "watch floor").await;
    for task in &tasks {
        task.abort();
    }
    timed
}

/// Records every object `api`'s watch delivers on `probe`, as a hook call that saw its
/// resourceVersion on `side`.
async fn watch_into(api: Api<DynamicObject>, side: Side, probe: Probe) {
    let events = kube::runtime::watcher(api, kube::runtime::watcher::Config::default());
    futures::pin_mut!(events);
    while let Some(event) = events.next().await {
        let object = match event {
            Ok(kube::runtime::watcher::Event::Apply(o) | kube::runtime::watcher::Event::InitApply(o)) => o,
            _ => continue,
        };
        let (name, version) = (
            object.metadata.name.as_deref(),
            object.metadata.resource_version.as_deref(),
        );
        if let Some(name) = name {
            let at = |s: Side| version.filter(|_| s == side);
            probe.record(name, at(Side::Mapi), at(Side::Capi), at(Side::Infra));
        }
    }
}

/// What the throughput scenario measured for one implementation.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Throughput {
    /// Updates written (to distinct Machines, cycling MAPI Machine, CAPI Machine and
    /// infrastructure machine).
    pub updates: usize,
    /// Time to write them all.
    pub writing: Duration,
    /// Time from the first write to the last hook call that saw an update.
    pub elapsed: Duration,
    /// Hook calls that saw an update, per second.
    pub hooks_per_second: f64,
    /// All hook calls during the stream (a name updated while queued is reconciled once).
    pub hook_calls: u64,
    /// CPU time of the implementation's threads during the stream.
    pub cpu: Duration,
    /// Updates whose hook call never came.
    pub missed: usize,
}

/// Starts `implementation`, waits for its cold start, then writes `updates` updates to
/// distinct Machines with `in_flight` writes at a time and waits for every hook call.
pub async fn throughput(
    env: &TestEnv,
    fleet: Fleet,
    implementation: Implementation,
    number: usize,
    updates: usize,
    in_flight: usize,
) -> Result<Throughput, BenchError> {
    let probes = Probes::default();
    probes.machines.expect_distinct(fleet.machines);
    probes.machine_sets.expect_distinct(fleet.machine_sets);
    let running = Running::start(
        implementation,
        &env.kubeconfig(),
        fill::namespaces(),
        probes.clone(),
        number,
    )?;
    let measured = async {
        probes.machines.wait_distinct(COLD_START_TIMEOUT).await?;
        probes.machine_sets.wait_distinct(COLD_START_TIMEOUT).await?;
        probes.machines.set_recording(true);
        let writer = Writer::new(env.client());
        // Untimed: every kind's watch is serving.
        for (seq, kind) in [Watched::MapiMachine, Watched::CapiMachine, Watched::InfraMachine]
            .into_iter()
            .enumerate()
        {
            let update = writer.update(kind, seq).await?;
            update.wait(&probes, COLD_START_TIMEOUT).await?;
        }
        let kinds = [Watched::MapiMachine, Watched::CapiMachine, Watched::InfraMachine];
        let updates = updates.min(fleet.machines);
        let calls_before = probes.machines.calls();
        let cpu_before = running.cpu();
        let started = Instant::now();
        let written: Vec<Update> = futures::stream::iter(0..updates)
            .map(|i| {
                let writer = writer.clone();
                async move { writer.update(kinds[i % kinds.len()], i).await }
            })
            .buffer_unordered(in_flight.max(1))
            .try_collect()
            .await?;
        let writing = started.elapsed();
        let mut last = started;
        let mut missed = 0;
        for update in &written {
            match update.wait(&probes, HOOK_TIMEOUT).await {
                Ok(at) => last = last.max(at),
                Err(error) => {
                    eprintln!("  {}: {error}", implementation.as_str());
                    missed += 1;
                }
            }
        }
        let elapsed = last.saturating_duration_since(started);
        let cpu = running.cpu().saturating_sub(cpu_before);
        Ok::<_, BenchError>(Throughput {
            updates,
            writing,
            elapsed,
            hooks_per_second: (updates - missed) as f64 / elapsed.as_secs_f64().max(1e-9),
            hook_calls: probes.machines.calls() - calls_before,
            cpu,
            missed,
        })
    }
    .await;
    let stopped = running.stop().await;
    let result = measured?;
    stopped?;
    Ok(result)
}

/// What the watch-restart scenario found for one implementation.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Restart {
    /// MAPI Machines updated while the watches were down.
    pub updates: usize,
    /// Updates no hook call saw within [`RESTART_DEADLINE`] of the watches' return.
    pub lost: usize,
    /// Of those, the updates no hook call saw within [`RESTART_GIVE_UP`] either.
    pub never: usize,
    /// Of those, the names that were reconciled after the restart, with an older object.
    pub reconciled_stale: usize,
    /// Time from the watches' return to the last update seen (all seen, late ones too).
    pub recovered_after: Option<Duration>,
}

/// How long after the watches' return every update must have reached a hook
/// (`docs/design.md` §4's "no event is lost", timed).
pub const RESTART_DEADLINE: Duration = Duration::from_secs(10);

/// How long the restart scenario waits for the updates not seen by [`RESTART_DEADLINE`]: a relist
/// is linear in the fleet, and at 100 000 pairs, with 10 ms on every list page, it takes
/// longer than 10 s; whether an update is late or lost is told apart here.
pub const RESTART_GIVE_UP: Duration = Duration::from_secs(120);

/// Starts `implementation`, waits for its cold start, then makes the Machine watches fail
/// (every re-watch answered 503), updates `updates` distinct MAPI Machines, and lets the
/// watches back with the history expired (410 on re-watch, so a relist) and a 10 ms delay
/// on every request (a remote API server's list pages); then waits for a hook call that
/// saw each update. `docs/design.md` §4: "Watch restarts and 410 Expired are handled by
/// relisting; no event is lost."
pub async fn restart(
    env: &TestEnv,
    fleet: Fleet,
    implementation: Implementation,
    number: usize,
    updates: usize,
) -> Result<Restart, BenchError> {
    let probes = Probes::default();
    probes.machines.expect_distinct(fleet.machines);
    probes.machine_sets.expect_distinct(fleet.machine_sets);
    let running = Running::start(
        implementation,
        &env.kubeconfig(),
        fill::namespaces(),
        probes.clone(),
        number,
    )?;
    let measured = async {
        probes.machines.wait_distinct(COLD_START_TIMEOUT).await?;
        probes.machine_sets.wait_distinct(COLD_START_TIMEOUT).await?;
        probes.machines.set_recording(true);
        let faults = env.faults();
        faults.fail(Some("watch"), Some("machines"), 503, None);
        faults.drop_watches();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let writer = Writer::new(env.client());
        let stride = (fleet.machines / updates.max(1)).max(1);
        let written: Vec<Update> = futures::stream::iter(0..updates.min(fleet.machines))
            .map(|i| {
                let writer = writer.clone();
                async move { writer.update(Watched::MapiMachine, i * stride).await }
            })
            .buffer_unordered(16)
            .try_collect()
            .await?;
        faults.clear();
        faults.set_latency(Duration::from_millis(10));
        faults.expire_watches();
        let back = Instant::now();
        let mut result = Restart {
            updates: written.len(),
            ..Restart::default()
        };
        let mut last = back;
        let mut late = Vec::new();
        for update in &written {
            let left = RESTART_DEADLINE.saturating_sub(back.elapsed());
            match update.wait(&probes, left).await {
                Ok(at) => last = last.max(at),
                Err(_) => {
                    result.lost += 1;
                    if probes.machines.seen_any(&update.name) {
                        result.reconciled_stale += 1;
                    }
                    late.push(update);
                }
            }
        }
        for update in late {
            let left = RESTART_GIVE_UP.saturating_sub(back.elapsed());
            match update.wait(&probes, left).await {
                Ok(at) => last = last.max(at),
                Err(_) => result.never += 1,
            }
        }
        faults.clear();
        if result.never == 0 {
            result.recovered_after = Some(last.saturating_duration_since(back));
        }
        Ok::<_, BenchError>(result)
    }
    .await;
    env.faults().clear();
    let stopped = running.stop().await;
    let result = measured?;
    stopped?;
    Ok(result)
}
