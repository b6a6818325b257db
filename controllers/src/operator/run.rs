//! Wires the pieces together: client, controllers, metrics, probes, leader election and
//! shutdown.
//!
//! Life of a replica: bind the HTTP listeners → (with leader election) wait as a
//! standby until the Lease is acquired → run both controllers concurrently while the
//! Lease is renewed → on SIGTERM/SIGINT stop taking work, let in-flight reconciles
//! finish, release the Lease, stop serving HTTP, exit 0. On losing the Lease the
//! controllers are stopped at once (in-flight reconciles get the little time left before
//! a successor may start) and the process exits 1, as controller-runtime managers do: the
//! kubelet restarts it as a fresh standby with empty caches.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Client;
use kube::runtime::events::{Event, EventType, Reporter};
use sync_core::events::Recorder;
use sync_core::{Checkpoint, InfraTracker, Namespaces, SyncConfig};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::cli::{Cli, Listener};
use super::health::{Health, Phase};
use super::http::{self, BindError, Routes};
use super::leader::{self, LeaderElector, LeaseError, LeaseSettings};
use super::metrics::Metrics;
use super::pairs::{Mode, Pairs, Shared, Syncing};
use super::requests;
use super::shutdown::{Deadlines, ShutdownBudget};
use crate::client::{ClientError, client_from};
use crate::feature_gate::{self, GateSource};
use crate::migration::MigrationConfig;
use crate::sync::cluster::InfraCluster;
use crate::sync::{Cluster, PlatformHooks};
use crate::user_data::{References, UserDataSync};

/// Where the service account's namespace is mounted in a pod.
const SERVICE_ACCOUNT_NAMESPACE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The operator could not start or run.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// No client for the cluster (kubeconfig, in-cluster configuration).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// Leader election is misconfigured.
    #[error(transparent)]
    Lease(#[from] LeaseError),
    /// An HTTP listener could not be opened.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// The signal handlers could not be installed.
    #[error("cannot handle signals: {0}")]
    Signals(#[source] std::io::Error),
    /// `--embedded` failed.
    #[cfg(feature = "embedded")]
    #[error(transparent)]
    Embedded(Box<super::embedded::EmbeddedError>),
    /// `--embedded` was asked of a build without the `embedded` feature.
    #[error("--embedded needs a build with the `embedded` feature (on by default)")]
    EmbeddedUnavailable,
    /// `--upstream-lease` is malformed.
    #[error(transparent)]
    Upstream(#[from] super::upstream::UpstreamError),
    /// A task of the operator panicked.
    #[error("the operator task failed: {0}")]
    Task(String),
}

#[cfg(feature = "embedded")]
impl From<super::embedded::EmbeddedError> for OperatorError {
    fn from(error: super::embedded::EmbeddedError) -> Self {
        Self::Embedded(Box::new(error))
    }
}

/// How the operator ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Asked to stop (signal): controllers drained, Lease released. Exit code 0.
    Shutdown,
    /// The Lease was lost (or taken): controllers stopped. Exit code 1.
    LeadershipLost(String),
    /// Upstream's migration controllers run (their Lease is held): nothing was started.
    /// Exit code 3.
    UpstreamRunning(String),
}

/// What the operator runs with.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The MAPI and CAPI namespaces.
    pub namespaces: Namespaces,
    /// Names each controller reconciles at once.
    pub concurrency: usize,
    /// This replica's name (`--pod-name`, else the hostname): the `reportingInstance` of
    /// its Events.
    pub replica: String,
    /// Leader election, if enabled.
    pub leader_election: Option<LeaseSettings>,
    /// Where `/metrics` is served (`None`: not served).
    pub metrics_address: Option<SocketAddr>,
    /// Where `/healthz` and `/readyz` are served (`None`: not served).
    pub probe_address: Option<SocketAddr>,
    /// The whole shutdown, signal to exit: in-flight work, the Lease release and the
    /// HTTP drain share it (see [`ShutdownBudget`]).
    pub shutdown_grace: Duration,
    /// The migration controllers' settings.
    pub migration: MigrationConfig,
    /// Where the sync controllers keep their restart checkpoints (`None`: none kept, every
    /// pair is reconciled at each start); see [`sync_core::checkpoint`].
    pub checkpoint_namespace: Option<String>,
    /// Where the `MachineAPIMigration` feature gate is read from.
    pub gate: GateSource,
    /// The operator's release version, whose gates count (`None`: the cluster's version).
    pub release_version: Option<String>,
    /// Upstream's migration controllers' Lease (`namespace/name`): while it is held the
    /// operator does not start (`None`: not checked); see [`super::upstream`].
    pub upstream_lease: Option<String>,
    /// The platforms the sync runs on (`--platforms`); see [`platform_enabled`].
    pub platforms: Vec<String>,
}

/// The platforms the sync runs on unless told otherwise: upstream's (AWS and OpenStack).
pub fn default_platforms() -> Vec<String> {
    vec!["AWS".to_owned(), "OpenStack".to_owned()]
}

/// The cluster's platform is not one the sync runs on (`--platforms`): its Machines and
/// MachineSets are left alone, and the message says which flag to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "platform {platform:?} is not in --platforms ({listed}); add it to sync and migrate its machines",
    listed = .platforms.join(",")
)]
pub struct PlatformNotEnabled {
    /// The cluster's platform.
    pub platform: String,
    /// `--platforms`.
    pub platforms: Vec<String>,
}

/// Whether the sync runs on `platform`: it must be listed in `--platforms`; why not, if not.
pub fn platform_enabled(platforms: &[String], platform: &str) -> Result<(), PlatformNotEnabled> {
    if platforms.iter().any(|p| p == platform) {
        return Ok(());
    }
    Err(PlatformNotEnabled {
        platform: platform.to_owned(),
        platforms: platforms.to_vec(),
    })
}

impl Settings {
    /// The settings a command line asks for (leader election off with `--embedded`).
    pub fn from_cli(cli: &Cli) -> Self {
        let leader_election = (cli.leader_elect && !cli.embedded).then(|| LeaseSettings {
            namespace: leader_election_namespace(cli),
            name: cli.leader_election_id.clone(),
            identity: leader::identity(&replica_name(cli)),
            lease_duration: cli.leader_election_lease_duration,
            renew_deadline: cli.leader_election_renew_deadline,
            retry_period: cli.leader_election_retry_period,
        });
        Self {
            namespaces: cli.namespaces.namespaces(),
            concurrency: usize::from(cli.concurrency),
            replica: replica_name(cli),
            leader_election,
            metrics_address: cli.metrics_address(),
            probe_address: cli.probe_address(),
            shutdown_grace: cli.graceful_shutdown_timeout,
            migration: MigrationConfig {
                stall_timeout: cli.migration_stall_timeout,
            },
            checkpoint_namespace: cli.restart_checkpoint.then(|| leader_election_namespace(cli)),
            gate: cli.machine_api_migration_gate,
            release_version: cli.release_version.clone().filter(|v| !v.is_empty()),
            upstream_lease: (!cli.embedded && !cli.upstream_lease.is_empty())
                .then(|| cli.upstream_lease.clone()),
            platforms: cli.platforms.clone(),
        }
    }
}

/// `--leader-election-namespace`, else `$POD_NAMESPACE`, else the service account's
/// namespace, else the CAPI namespace.
fn leader_election_namespace(cli: &Cli) -> String {
    let non_empty = |s: String| {
        let s = s.trim().to_owned();
        (!s.is_empty()).then_some(s)
    };
    cli.leader_election_namespace
        .clone()
        .and_then(non_empty)
        .or_else(|| std::env::var("POD_NAMESPACE").ok().and_then(non_empty))
        .or_else(|| {
            std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE)
                .ok()
                .and_then(non_empty)
        })
        .unwrap_or_else(|| cli.namespaces.capi_namespace.clone())
}

/// `--pod-name`/`$POD_NAME`, else the hostname.
fn replica_name(cli: &Cli) -> String {
    cli.pod_name
        .clone()
        .filter(|name| !name.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "controllers".to_owned())
}

/// A client from `--kubeconfig`/`--context`, else `$KUBECONFIG`/`~/.kube/config`, else
/// the in-cluster service account.
pub async fn client(cli: &Cli) -> Result<Client, OperatorError> {
    Ok(client_from(cli.kubeconfig.as_deref(), cli.context.as_deref())
        .await?
        .client)
}

/// Runs the operator the command line describes until a signal (or a lost Lease).
pub async fn run(cli: Cli) -> Result<Exit, OperatorError> {
    let shutdown = CancellationToken::new();
    let _signals = stop_on_signals(shutdown.clone())?;
    if cli.embedded {
        #[cfg(feature = "embedded")]
        return run_embedded(&cli, shutdown).await;
        #[cfg(not(feature = "embedded"))]
        return Err(OperatorError::EmbeddedUnavailable);
    }
    let client = client(&cli).await?;
    let settings = Settings::from_cli(&cli);
    if let Some(lease) = &settings.leader_election {
        tracing::info!(
            lease = format!("{}/{}", lease.namespace, lease.name),
            identity = %lease.identity,
            "leader election enabled"
        );
    }
    Operator::start(client, settings, shutdown).await?.wait().await
}

/// `--embedded`: start the in-process API server (and the simulated providers), print how
/// to reach it, and run the controllers against it (no leader election) until a signal.
#[cfg(feature = "embedded")]
async fn run_embedded(cli: &Cli, shutdown: CancellationToken) -> Result<Exit, OperatorError> {
    let embedded = super::embedded::start(cli).await?;
    let settings = Settings::from_cli(cli);
    let providers = embedded.start_providers(cli, shutdown.clone()).await?;
    // The default metrics and probe ports give way to free ones when busy (a second
    // `--embedded` on the same machine); the banner prints the ones in use.
    let ports = MovablePorts::from_cli(cli);
    let client = embedded.operator_client().await?;
    let operator = Operator::start_with_ports(client, settings, shutdown.clone(), ports).await?;
    embedded.print_banner(cli, operator.metrics_address(), operator.probe_address());
    let exit = operator.wait().await;
    if let Some(providers) = providers {
        // They stop on the same signal; a failed or cancelled task only ends them sooner.
        shutdown.cancel();
        let _ = providers.await;
    }
    embedded.env.stop().await;
    exit
}

/// Cancels `shutdown` on the first SIGTERM or SIGINT; a second one exits at once.
pub fn stop_on_signals(shutdown: CancellationToken) -> Result<JoinHandle<()>, OperatorError> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(OperatorError::Signals)?;
    let mut int = signal(SignalKind::interrupt()).map_err(OperatorError::Signals)?;
    Ok(tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        tracing::info!(signal = name, "shutting down");
        shutdown.cancel();
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        tracing::warn!("second signal; exiting at once");
        std::process::exit(1);
    }))
}

/// Which listeners may serve on a free port when their address's port is busy (only the
/// `--embedded` defaults; see [`Cli::metrics_port_may_move`]). By default none: a busy
/// port is an error that names the flag to change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MovablePorts {
    /// `/metrics`.
    pub metrics: bool,
    /// `/healthz` and `/readyz`.
    pub probes: bool,
}

impl MovablePorts {
    /// What the command line allows.
    pub fn from_cli(cli: &Cli) -> Self {
        Self {
            metrics: cli.metrics_port_may_move(),
            probes: cli.probe_port_may_move(),
        }
    }
}

/// A running operator: both controllers, the HTTP endpoints and leader election.
pub struct Operator {
    metrics: Arc<Metrics>,
    health: Health,
    metrics_address: Option<SocketAddr>,
    probe_address: Option<SocketAddr>,
    shutdown: CancellationToken,
    http_stop: CancellationToken,
    servers: Vec<JoinHandle<()>>,
    driver: JoinHandle<(Exit, Option<Deadlines>)>,
}

impl Operator {
    /// Binds the listeners and starts; the controllers run once the Lease is held.
    /// Cancelling `shutdown` stops the operator (see [`Operator::wait`]).
    pub async fn start(
        client: Client,
        settings: Settings,
        shutdown: CancellationToken,
    ) -> Result<Self, OperatorError> {
        Self::start_with_ports(client, settings, shutdown, MovablePorts::default()).await
    }

    /// [`Operator::start`], serving on a free port instead of a busy one where `ports`
    /// allows it.
    pub async fn start_with_ports(
        client: Client,
        settings: Settings,
        shutdown: CancellationToken,
        ports: MovablePorts,
    ) -> Result<Self, OperatorError> {
        if let Some(lease) = &settings.leader_election {
            lease.validate()?;
        }
        let upstream = settings
            .upstream_lease
            .as_deref()
            .map(super::upstream::UpstreamLease::parse)
            .transpose()?;
        let wiring = Wiring::new(client.clone(), &settings, upstream);
        let (metrics, health) = (wiring.metrics.clone(), wiring.health.clone());
        let http_stop = CancellationToken::new();
        let endpoints = serve_endpoints(&settings, ports, &metrics, &health, &http_stop).await?;
        let budget = ShutdownBudget::new(settings.shutdown_grace, settings.leader_election.as_ref());
        let driver = tokio::spawn(drive(
            client,
            settings.leader_election,
            budget,
            wiring,
            health.clone(),
            metrics.clone(),
            shutdown.clone(),
        ));
        Ok(Self {
            metrics,
            health,
            metrics_address: endpoints.metrics_address,
            probe_address: endpoints.probe_address,
            shutdown,
            http_stop,
            servers: endpoints.servers,
            driver,
        })
    }

    /// Where `/metrics` is served (with the port actually bound).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_address
    }

    /// Where `/healthz` and `/readyz` are served (with the port actually bound).
    pub fn probe_address(&self) -> Option<SocketAddr> {
        self.probe_address
    }

    /// The metrics registry.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The readiness state.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// Asks the operator to stop (as a signal does).
    pub fn shutdown(&self) {
        self.shutdown.cancel();
    }

    /// Waits until the operator stopped, then stops serving HTTP (by the shutdown
    /// budget's deadline when a signal asked for the stop).
    pub async fn wait(self) -> Result<Exit, OperatorError> {
        let driven = self.driver.await;
        self.http_stop.cancel();
        let exit_by = driven
            .as_ref()
            .ok()
            .and_then(|(_, deadlines)| *deadlines)
            .map(|d| d.exit);
        for mut server in self.servers {
            match exit_by {
                Some(deadline) => {
                    if tokio::time::timeout_at(deadline, &mut server).await.is_err() {
                        tracing::debug!("the shutdown budget is spent; closing open HTTP connections");
                        server.abort();
                    }
                }
                None => {
                    let _ = server.await;
                }
            }
        }
        let exit = driven
            .map(|(exit, _)| exit)
            .map_err(|e| OperatorError::Task(e.to_string()))?;
        match &exit {
            Exit::Shutdown => tracing::info!("stopped"),
            Exit::LeadershipLost(reason) => tracing::error!(%reason, "stopped: leadership lost"),
            Exit::UpstreamRunning(reason) => tracing::error!("{reason}"),
        }
        Ok(exit)
    }
}

/// The HTTP endpoints as bound: where they serve (with the ports actually bound), and
/// their servers, which [`Operator::wait`] stops last.
struct Endpoints {
    metrics_address: Option<SocketAddr>,
    probe_address: Option<SocketAddr>,
    servers: Vec<JoinHandle<()>>,
}

/// Binds and serves `/metrics` and the probes where the settings say, until `stop`: one
/// listener for both when they share an address (port 0 means two free ports).
async fn serve_endpoints(
    settings: &Settings,
    ports: MovablePorts,
    metrics: &Arc<Metrics>,
    health: &Health,
    stop: &CancellationToken,
) -> Result<Endpoints, OperatorError> {
    let mut servers = Vec::new();
    let mut metrics_address = None;
    let mut probe_address = None;
    let same = settings
        .metrics_address
        .is_some_and(|a| a.port() != 0 && Some(a) == settings.probe_address);
    if let Some(address) = settings.metrics_address {
        let which = if same {
            Listener::MetricsAndProbes
        } else {
            Listener::Metrics
        };
        let listener = http::bind_or_move(address, which, ports.metrics).await?;
        let local = listener.local_addr().unwrap_or(address);
        metrics_address = Some(local);
        let routes = Routes {
            metrics: Some(metrics.clone()),
            health: same.then(|| health.clone()),
        };
        tracing::info!(address = %local, "serving metrics on http://{local}/metrics");
        servers.push(http::serve(listener, routes, stop.clone()));
    }
    if same {
        probe_address = metrics_address;
    } else if let Some(address) = settings.probe_address {
        let listener = http::bind_or_move(address, Listener::Probes, ports.probes).await?;
        let local = listener.local_addr().unwrap_or(address);
        probe_address = Some(local);
        let routes = Routes {
            metrics: None,
            health: Some(health.clone()),
        };
        tracing::info!(address = %local, "serving probes on http://{local}/healthz and /readyz");
        servers.push(http::serve(listener, routes, stop.clone()));
    }
    if same {
        tracing::info!("serving probes on the metrics address");
    }
    Ok(Endpoints {
        metrics_address,
        probe_address,
        servers,
    })
}

/// What building the controllers takes: they are built afresh each time the feature gate
/// lets them run, and dropped (caches and all) when it stops them.
struct Wiring {
    client: Client,
    config: SyncConfig,
    infra: InfraTracker,
    metrics: Arc<Metrics>,
    health: Health,
    migration: MigrationConfig,
    checkpoint_namespace: Option<String>,
    instance: String,
    gate: GateSource,
    release_version: Option<String>,
    /// Checked before anything starts.
    upstream: Option<super::upstream::UpstreamLease>,
    platforms: Vec<String>,
}

impl Wiring {
    /// What the settings ask for: the controllers' configuration, the infrastructure
    /// tracker (at the versions the conversions speak), and fresh metrics and readiness
    /// that the operator's endpoints serve.
    fn new(client: Client, settings: &Settings, upstream: Option<super::upstream::UpstreamLease>) -> Self {
        let config = SyncConfig {
            namespaces: settings.namespaces.clone(),
            concurrency: settings.concurrency,
            instance: Some(settings.replica.clone()),
            ..SyncConfig::default()
        };
        let mut infra_config = crate::platform::infra_config(settings.namespaces.capi.clone());
        infra_config.instance = Some(settings.replica.clone());
        let infra = InfraTracker::new(client.clone(), infra_config);
        let metrics = Arc::new(Metrics::new(Vec::new(), Some(infra.clone())));
        let health = Health::new(Vec::new());
        Self {
            client,
            config,
            infra,
            metrics,
            health,
            migration: settings.migration.clone(),
            checkpoint_namespace: settings.checkpoint_namespace.clone(),
            instance: settings.replica.clone(),
            gate: settings.gate,
            release_version: settings.release_version.clone(),
            upstream,
            platforms: settings.platforms.clone(),
        }
    }

    /// Runs the controllers while the `MachineAPIMigration` gate is enabled, until `stop`:
    /// started when it turns on, stopped (in-flight reconciles finished) when it turns off.
    async fn run_gated(self, stop: CancellationToken) {
        let mut gate = feature_gate::follow(
            self.client.clone(),
            self.gate,
            self.release_version.clone(),
            stop.child_token(),
        );
        loop {
            let state = gate.borrow_and_update().clone();
            self.metrics.set_gate(state.enabled);
            if !state.enabled {
                tracing::info!(reason = %state.reason, "the sync and migration controllers are not running");
                self.health.set_gated(state.reason, state.known);
                let counting = stop.child_token();
                let namespace = self.config.namespaces.mapi.clone();
                let requests = requests::count(
                    self.client.clone(),
                    namespace,
                    self.metrics.clone(),
                    counting.clone(),
                );
                let requests = tokio::spawn(requests);
                // A fixed source never changes (its sender is gone): wait for the stop.
                let changed = async {
                    if gate.changed().await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                let changed = tokio::select! {
                    () = changed => true,
                    () = stop.cancelled() => false,
                };
                counting.cancel();
                let _ = requests.await;
                if changed {
                    continue;
                }
                return;
            }
            tracing::info!(reason = %state.reason, "starting the sync and migration controllers");
            self.health.set_controllers(Vec::new());
            let running = stop.child_token();
            let run = self.build().run(running.clone());
            tokio::pin!(run);
            let gate_closed = async {
                while gate.changed().await.is_ok() {
                    if !gate.borrow().enabled {
                        return;
                    }
                }
                std::future::pending::<()>().await;
            };
            tokio::select! {
                ended = &mut run => if ended == Ended::Stopped || stop.is_cancelled() { return },
                () = gate_closed => {
                    tracing::info!("stopping the sync and migration controllers: the feature gate turned off");
                    running.cancel();
                    run.await;
                }
            }
            if stop.is_cancelled() {
                return;
            }
        }
    }

    /// Every pair's controllers ([`Pairs::build`]), their caches exported and their
    /// readiness reported.
    fn build(&self) -> Controllers {
        let shared = Shared {
            client: self.client.clone(),
            config: self.config.clone(),
            infra: self.infra.clone(),
            observer: self.metrics.clone(),
        };
        let (pairs, user_data_references) = Pairs::build(&shared);
        self.metrics.set_caches(pairs.caches());
        self.metrics.expect_migrations(&pairs.migration_controllers());
        Controllers {
            pairs,
            user_data_references,
            namespaces: self.config.namespaces.clone(),
            migration: self.migration.clone(),
            checkpoint_namespace: self.checkpoint_namespace.clone(),
            client: self.client.clone(),
            metrics: self.metrics.clone(),
            health: self.health.clone(),
            instance: self.instance.clone(),
            platforms: self.platforms.clone(),
        }
    }
}

/// The sync and migration controllers, run together.
struct Controllers {
    pairs: Pairs,
    /// What the pairs' MAPI watches tell the user-data copier.
    user_data_references: References,
    namespaces: Namespaces,
    migration: MigrationConfig,
    checkpoint_namespace: Option<String>,
    client: Client,
    metrics: Arc<Metrics>,
    health: Health,
    instance: String,
    platforms: Vec<String>,
}

/// Why the controllers stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Asked to (shutdown, the gate turned off).
    Stopped,
    /// The cluster facts the conversions read changed: build them again.
    FactsChanged,
}

impl Controllers {
    async fn run(self, stop: CancellationToken) -> Ended {
        // The sync controllers run whatever the platform: /readyz reports their caches
        // from the start, not only once the platform has been read.
        let mut running = self.pairs.sync_readiness();
        self.health.set_controllers(running.clone());
        let hooks = self.platform_hooks().await;
        tracing::info!(synced = hooks.is_some(), "starting the controllers");
        let Some((hooks, cluster)) = hooks else {
            // Watched but left alone: the stub hooks write nothing, and nothing migrates
            // without a sync to keep the sides equal. Nothing is copied either: the
            // watches stop telling the copier what the Machines name.
            drop(self.user_data_references);
            self.pairs.run(Mode::Watch, stop).await;
            tracing::info!("controllers stopped");
            return Ended::Stopped;
        };
        running.extend(self.pairs.migration_readiness());
        self.health.set_controllers(running);
        let user_data = UserDataSync::new(self.client.clone(), self.namespaces.clone(), self.recorder());
        let syncing = Syncing {
            hooks,
            checkpoint: self.checkpoint(&cluster).await,
            migration: self.migration.clone(),
            metrics: Some(self.metrics.clone()),
        };
        // The conversions read the infrastructure cluster object once: when it changes,
        // the controllers stop and are built again with the new facts.
        let controllers = stop.child_token();
        let all = futures::future::join(
            user_data.run(self.user_data_references, controllers.clone()),
            self.pairs.run(Mode::Sync(Arc::new(syncing)), controllers.clone()),
        );
        tokio::pin!(all);
        tokio::select! {
            _ = &mut all => {}
            read = cluster.infra_cluster_changes(&self.client, &self.namespaces.capi) => {
                let present = matches!(read, InfraCluster::Found(_));
                tracing::info!(present, "the infrastructure cluster object changed; restarting the controllers");
                controllers.cancel();
                all.await;
                tracing::info!("controllers stopped");
                return Ended::FactsChanged;
            }
        }
        tracing::info!("controllers stopped");
        Ended::Stopped
    }

    /// The sync controllers' restart checkpoint, if one is kept and can be.
    async fn checkpoint(&self, cluster: &Cluster) -> Option<Checkpoint> {
        let namespace = self.checkpoint_namespace.as_ref()?;
        match cluster.checkpoint(namespace, &self.namespaces).await {
            Ok(checkpoint) => Some(checkpoint),
            Err(error) => {
                tracing::warn!(%error, "no restart checkpoint: every pair is reconciled at each start");
                None
            }
        }
    }

    /// The operator's Event recorder (as this replica).
    fn recorder(&self) -> Recorder {
        Recorder::new(
            self.client.clone(),
            Reporter {
                controller: "machine-sync-controllers".into(),
                instance: Some(self.instance.clone()),
            },
        )
    }

    /// The hooks for the cluster's platform, from the `Infrastructure` object; `None` (the
    /// objects are left alone) when it cannot be read or its platform has no conversion.
    async fn platform_hooks(&self) -> Option<(PlatformHooks, Arc<Cluster>)> {
        let mut cluster = match Cluster::read(&self.client).await {
            Ok(cluster) => cluster,
            Err(error) => {
                tracing::warn!(%error, "cannot tell the cluster's platform; leaving Machines and MachineSets alone");
                self.metrics.set_platform("", false);
                return None;
            }
        };
        cluster
            .read_infra_cluster(&self.client, &self.namespaces.capi)
            .await;
        // The reason goes into a log line and an Event's note: words, whichever check failed.
        let enabled = platform_enabled(&self.platforms, &cluster.platform).map_err(|e| e.to_string());
        let platform =
            match enabled.and_then(|()| crate::platform::for_cluster(&cluster).map_err(|e| e.to_string())) {
                Ok(platform) => platform,
                Err(reason) => {
                    self.refuse_platform(&cluster.platform, &reason).await;
                    return None;
                }
            };
        tracing::info!(platform = %cluster.platform, cluster = %cluster.infrastructure_name, "syncing");
        self.metrics.set_platform(&cluster.platform, true);
        let cluster = Arc::new(cluster);
        Some((PlatformHooks::new(platform, cluster.clone()), cluster))
    }

    /// Says why `platform` is not synced: a log line, the metric, and a Warning Event on
    /// the `Infrastructure` object.
    async fn refuse_platform(&self, platform: &str, reason: &str) {
        tracing::warn!(%platform, %reason, "leaving Machines and MachineSets alone");
        self.metrics.set_platform(platform, false);
        let event = Event {
            type_: EventType::Warning,
            reason: "UnsupportedPlatform".into(),
            note: Some(format!("{reason}; Machines and MachineSets are not synced")),
            action: "Sync".into(),
            secondary: None,
        };
        let reference = ObjectReference {
            api_version: Some("config.openshift.io/v1".into()),
            kind: Some("Infrastructure".into()),
            name: Some("cluster".into()),
            ..ObjectReference::default()
        };
        if let Err(error) = self.recorder().publish(&event, &reference).await {
            tracing::warn!(%error, "failed to publish the UnsupportedPlatform event");
        }
    }
}

/// Standby → leader → stopped. Returns how it ended and, for a stop asked by a signal
/// while leading, the shutdown's deadlines.
async fn drive(
    client: Client,
    lease: Option<LeaseSettings>,
    budget: ShutdownBudget,
    controllers: Wiring,
    health: Health,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> (Exit, Option<Deadlines>) {
    if let Some(exit) = wait_for_upstream(controllers.upstream.as_ref(), &client, &health, &shutdown).await {
        return (exit, None);
    }
    let mut elector = lease.map(|settings| LeaderElector::new(client, settings));
    if let Some(elector) = elector.as_mut()
        && !acquire(elector, &health, &shutdown).await
    {
        return (Exit::Shutdown, None);
    }
    metrics.set_leader(true);
    health.set_phase(Phase::Leading);
    let (exit, signalled) = lead(
        controllers,
        elector.as_mut(),
        &budget,
        &health,
        &metrics,
        &shutdown,
    )
    .await;
    // Without a signal (the controllers ended on their own) the clock starts now.
    let deadlines = match (&exit, signalled) {
        (Exit::Shutdown, None) => Some(budget.deadlines(tokio::time::Instant::now())),
        (Exit::Shutdown, some) => some,
        (Exit::LeadershipLost(_) | Exit::UpstreamRunning(_), _) => None,
    };
    health.set_phase(Phase::Stopping);
    metrics.set_leader(false);
    if let (Some(deadlines), Some(elector)) = (deadlines, elector.as_mut()) {
        release(elector, deadlines, &budget).await;
    }
    (exit, deadlines)
}

/// Nothing starts while upstream's migration controllers run the same sync: waits until
/// their Lease is free. How the replica ends instead, if they run or a signal comes first.
async fn wait_for_upstream(
    upstream: Option<&super::upstream::UpstreamLease>,
    client: &Client,
    health: &Health,
    shutdown: &CancellationToken,
) -> Option<Exit> {
    let upstream = upstream?;
    let exit = tokio::select! {
        checked = upstream.wait_until_clear(client) => match checked {
            Ok(()) => return None,
            Err(running) => Exit::UpstreamRunning(running.to_string()),
        },
        () = shutdown.cancelled() => Exit::Shutdown,
    };
    health.set_phase(Phase::Stopping);
    Some(exit)
}

/// A standby replica waits for the Lease; `false` when a signal came first.
async fn acquire(elector: &mut LeaderElector, health: &Health, shutdown: &CancellationToken) -> bool {
    health.set_phase(Phase::Standby);
    tokio::select! {
        () = elector.acquire() => true,
        () = shutdown.cancelled() => {
            health.set_phase(Phase::Stopping);
            tracing::info!("stopped while waiting for the leader lease");
            false
        }
    }
}

/// Runs the controllers until they end, the controllers' share of a signal's budget is
/// spent, or the Lease is lost. How it ended and, after a signal, the shutdown's deadlines.
async fn lead(
    controllers: Wiring,
    elector: Option<&mut LeaderElector>,
    budget: &ShutdownBudget,
    health: &Health,
    metrics: &Metrics,
    shutdown: &CancellationToken,
) -> (Exit, Option<Deadlines>) {
    let stop = shutdown.child_token();
    let run = controllers.run_gated(stop.clone());
    tokio::pin!(run);
    let mut deadlines = None;
    let exit = {
        let overdue = overdue_after_signal(shutdown, budget, &mut deadlines);
        tokio::pin!(overdue);
        match elector {
            None => {
                // `overdue` first, so it has seen the signal (and started the budget's
                // clock) by the time the controllers' end is seen.
                tokio::select! {
                    biased;
                    () = &mut overdue => {}
                    () = &mut run => {}
                }
                Exit::Shutdown
            }
            Some(elector) => hold(elector, run.as_mut(), overdue.as_mut(), &stop, health, metrics).await,
        }
    };
    (exit, deadlines)
}

/// Once shutdown is asked for, the budget's clock runs: records its deadlines, then ends
/// when the controllers' share is spent.
async fn overdue_after_signal(
    shutdown: &CancellationToken,
    budget: &ShutdownBudget,
    deadlines: &mut Option<Deadlines>,
) {
    shutdown.cancelled().await;
    let started = budget.deadlines(tokio::time::Instant::now());
    *deadlines = Some(started);
    tokio::time::sleep_until(started.controllers).await;
    tracing::warn!(
        grace = ?budget.controllers(),
        "the controllers did not stop in time; abandoning in-flight work"
    );
}

/// Leads while the Lease is held (`overdue` first, as without one). Losing it stops the
/// controllers at once: in-flight reconciles get only what is left before a successor may
/// start.
async fn hold(
    elector: &mut LeaderElector,
    mut run: Pin<&mut impl Future<Output = ()>>,
    mut overdue: Pin<&mut impl Future<Output = ()>>,
    stop: &CancellationToken,
    health: &Health,
    metrics: &Metrics,
) -> Exit {
    // A successor may start once our last record is a lease duration old; we give up
    // renewing a retry period plus the renew deadline after it.
    let settings = elector.settings();
    let grace = settings
        .lease_duration
        .saturating_sub(settings.renew_deadline + settings.retry_period);
    tokio::select! {
        biased;
        () = &mut overdue => Exit::Shutdown,
        () = &mut run => Exit::Shutdown,
        lost = elector.hold() => {
            metrics.set_leader(false);
            health.set_phase(Phase::Stopping);
            tracing::error!(reason = %lost, "leadership lost; stopping the controllers");
            stop.cancel();
            if tokio::time::timeout(grace, &mut run).await.is_err() {
                tracing::warn!(?grace, "in-flight reconciles did not finish in time; abandoning them");
            }
            Exit::LeadershipLost(lost.0)
        }
    }
}

/// Releases the Lease so that a successor starts at once, within the shutdown budget's
/// share (else it expires).
async fn release(elector: &mut LeaderElector, deadlines: Deadlines, budget: &ShutdownBudget) {
    let by = deadlines
        .release
        .min(tokio::time::Instant::now() + elector.settings().renew_deadline);
    match tokio::time::timeout_at(by, elector.release()).await {
        Ok(Ok(_)) => {}
        Ok(Err(error)) => tracing::warn!(%error, "could not release the leader lease; it will expire"),
        Err(_) => tracing::warn!(
            budget = ?budget.total,
            "releasing the leader lease did not finish within the shutdown budget; it will expire"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_platforms_are_synced_and_the_refusal_names_the_flag() {
        let defaults = default_platforms();
        assert_eq!(platform_enabled(&defaults, "AWS"), Ok(()));
        assert_eq!(platform_enabled(&defaults, "OpenStack"), Ok(()));
        let refused = platform_enabled(&defaults, "PowerVS")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert_eq!(
            refused,
            "platform \"PowerVS\" is not in --platforms (AWS,OpenStack); add it to sync and migrate its machines"
        );
        assert_eq!(platform_enabled(&["PowerVS".to_owned()], "PowerVS"), Ok(()));
    }
}
