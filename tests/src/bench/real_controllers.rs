//! The operator's Machine and MachineSet controllers with the AWS hooks, on a runtime of
//! their own with a counted client: what the real-sync bench and the memory child run —
//! the two sync controllers, or the operator's whole list ([`Wiring::Operator`]: each
//! sync controller and its migration controller on the same caches).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use controllers::machine::{MachineHooks, MachineSync, beside_machine_sets};
use controllers::machine_set::{MachineSetHooks, MachineSetSync};
use controllers::migration::MigrationConfig;
use controllers::operator::pairs::{Mode, Pairs, Shared, Syncing};
use controllers::sync::{Cluster as ClusterFacts, PlatformHooks};
use kube::Client;
use sync_core::observe::{Observer, Outcome};
use sync_core::{InfraTracker, SyncConfig, SyncController};
use tokio_util::sync::CancellationToken;

use super::BenchError;
use super::fill;
use super::requests::{Requests, counted_client};
use super::sut::Running;
use crate::real::TestPlatform;

/// Names each controller reconciles at once (sync-core's default), and the floor's writes
/// in flight per kind of pair.
pub const CONCURRENCY: usize = 4;
/// How long without a write or a reconcile counts as quiet.
pub const QUIET: Duration = Duration::from_secs(1);
/// What an [`Observer`] has seen so far: running totals, so that the process whose
/// memory the bench reads holds nothing per reconcile.
#[derive(Clone, Debug, Default)]
struct Seen {
    /// Reconciles, and of those the ones where a hook ran (not a skip).
    reconciles: usize,
    hook_calls: usize,
    /// When the last reconcile finished.
    last: Option<Instant>,
    /// When each controller's first reconcile finished.
    first: HashMap<&'static str, Instant>,
    /// The names whose last reconcile failed (the sync retries them with backoff, up to
    /// 5 minutes apart).
    failing: HashSet<(&'static str, String)>,
}

/// An [`Observer`] that counts reconciles and hook calls, and keeps when the first and
/// the last finished and which names are failing.
#[derive(Clone, Default)]
pub struct TimedObserver(Arc<Mutex<Seen>>);

impl Observer for TimedObserver {
    fn reconciled(&self, controller: &'static str, name: &str, outcome: &Outcome, _: Duration) {
        let now = Instant::now();
        let mut seen = self.seen();
        seen.reconciles += 1;
        seen.hook_calls += usize::from(!matches!(outcome, Outcome::Skipped(_)));
        seen.last = Some(now);
        seen.first.entry(controller).or_insert(now);
        if outcome.result() == "error" {
            seen.failing.insert((controller, name.to_owned()));
        } else if !seen.failing.is_empty() {
            seen.failing.remove(&(controller, name.to_owned()));
        }
    }
}

impl TimedObserver {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// (reconciles, hook calls) so far.
    pub fn counts(&self) -> (usize, usize) {
        let seen = self.seen();
        (seen.reconciles, seen.hook_calls)
    }

    /// When `controller`'s first reconcile finished.
    pub fn first_of(&self, controller: &str) -> Option<Instant> {
        self.seen().first.get(controller).copied()
    }

    /// How many names' last reconcile failed: each waits for its retry.
    pub fn failing(&self) -> usize {
        self.seen().failing.len()
    }

    /// When the last reconcile finished.
    pub fn last(&self) -> Option<Instant> {
        self.seen().last
    }
}

/// Which controllers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wiring {
    /// The Machine and MachineSet sync controllers.
    Sync,
    /// The operator's pairs ([`Pairs::build`]): each sync controller and, following it on
    /// its caches, its migration controller.
    Operator,
}

/// The controllers with the real hooks, on a runtime of their own, with a counted client.
pub struct Controllers {
    running: Running,
    /// Their requests.
    pub requests: Arc<Requests>,
    /// Their reconciles.
    pub observer: TimedObserver,
}

impl Controllers {
    /// Starts both sync controllers against the cluster of `kubeconfig`, with `platform`'s
    /// hooks.
    pub fn start(
        kubeconfig: &str,
        session: usize,
        platform: &'static TestPlatform,
    ) -> Result<Self, BenchError> {
        Self::start_wired(kubeconfig, session, Wiring::Sync, platform)
    }

    /// Starts the controllers `wiring` says against the cluster of `kubeconfig`.
    pub fn start_wired(
        kubeconfig: &str,
        session: usize,
        wiring: Wiring,
        platform: &'static TestPlatform,
    ) -> Result<Self, BenchError> {
        let requests = Requests::new();
        let observer = TimedObserver::default();
        let (kubeconfig, counted, observed) = (kubeconfig.to_owned(), requests.clone(), observer.clone());
        let running = Running::spawn(&format!("real-{session}"), move |stopped| async move {
            let client = counted_client(&kubeconfig, counted).await?;
            run_controllers(client, observed, wiring, platform, async move {
                let _ = stopped.await;
            })
            .await
        })?;
        Ok(Self {
            running,
            requests,
            observer,
        })
    }

    /// When they were started.
    pub fn started(&self) -> Instant {
        self.running.started
    }

    /// Their CPU time so far.
    pub fn cpu(&self) -> Duration {
        self.running.cpu()
    }

    /// Stops them.
    pub async fn stop(self) -> Result<(), BenchError> {
        self.running.stop().await
    }

    /// Waits until at least `reconciles` reconciles happened and then neither a write nor
    /// a reconcile for [`QUIET`] (at most `bound`); returns the last activity's time after
    /// the start. The floor on reconciles keeps the lists of a large fleet (longer than
    /// [`QUIET`], and silent) from passing for quiet.
    pub async fn quiet(&self, reconciles: usize, bound: Duration) -> Result<Duration, BenchError> {
        let deadline = Instant::now() + bound;
        loop {
            if self.observer.counts().0 < reconciles {
                if Instant::now() >= deadline {
                    return Err(BenchError::Other(format!(
                        "fewer than {reconciles} reconciles within {bound:?}"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let last = [self.requests.last_write(), self.observer.last()]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(self.started());
            if last.elapsed() >= QUIET {
                return Ok(last.saturating_duration_since(self.started()));
            }
            if Instant::now() >= deadline {
                return Err(BenchError::Other(format!(
                    "the controllers did not fall quiet within {bound:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The controllers `wiring` says with `platform`'s hooks until `shutdown`.
async fn run_controllers(
    client: Client,
    observer: TimedObserver,
    wiring: Wiring,
    platform: &TestPlatform,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), BenchError> {
    let namespaces = fill::namespaces();
    let config = SyncConfig {
        namespaces: namespaces.clone(),
        concurrency: CONCURRENCY,
        ..SyncConfig::default()
    };
    let facts = Arc::new(ClusterFacts::from_infrastructure(
        platform
            .infrastructure()
            .map_err(|e| BenchError::Other(e.to_string()))?,
    ));
    let platform =
        controllers::platform::for_cluster(&facts).map_err(|e| BenchError::Other(e.to_string()))?;
    // The operator's restart checkpoint (its namespace here: the CAPI one).
    let checkpoint = facts
        .checkpoint(&namespaces.capi, &namespaces)
        .await
        .map_err(|e| BenchError::Other(e.to_string()))?;
    let tracker = InfraTracker::new(
        client.clone(),
        controllers::platform::infra_config(&namespaces.capi),
    );
    let observer: Arc<dyn Observer> = Arc::new(observer);
    if wiring == Wiring::Operator {
        // No user-data copier: the tap's references are dropped, and it reads nothing.
        let (pairs, _) = Pairs::build(&Shared {
            client,
            config,
            infra: tracker,
            observer,
        });
        let syncing = Syncing {
            hooks: PlatformHooks::new(platform, facts),
            checkpoint: Some(checkpoint),
            migration: MigrationConfig::default(),
            metrics: None,
        };
        let stop = CancellationToken::new();
        let stopping = async {
            shutdown.await;
            stop.cancel();
        };
        futures::future::join(pairs.run(Mode::Sync(Arc::new(syncing)), stop.clone()), stopping).await;
        return Ok(());
    }
    let machines = SyncController::<MachineSync>::new(client.clone(), config.clone())
        .with_infra(tracker.clone())
        .with_observer(observer.clone())
        .with_checkpoint(checkpoint.clone());
    let sets = SyncController::<MachineSetSync>::new(client, config)
        .with_infra(tracker)
        .with_observer(observer)
        .with_checkpoint(checkpoint);
    let (machines, sets, capi_sets) = beside_machine_sets(machines, sets);
    let shutdown = futures::FutureExt::shared(Box::pin(shutdown));
    tokio::join!(
        machines.run(
            MachineHooks::new(platform.clone(), facts.clone()).with_capi_sets(capi_sets),
            shutdown.clone(),
        ),
        sets.run(MachineSetHooks::new(platform, facts), shutdown,),
    );
    Ok(())
}
