//! The command line: every flag has an environment-variable fallback (`--help` lists them).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

use super::samples::SamplePlatform;
use crate::args::NamespaceArgs;
use crate::convert::ConvertArgs;
use crate::feature_gate::GateSource;

/// The default lease name (`--leader-election-id`).
pub const DEFAULT_LEASE_NAME: &str = "machine-sync-controllers";

/// Where the metrics are served unless told otherwise.
pub const DEFAULT_METRICS_PORT: u16 = 8080;

/// Where the probes are served unless told otherwise.
pub const DEFAULT_PROBE_PORT: u16 = 8081;

/// The operator's command line.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "controllers",
    version,
    about = "Keeps Machine API and Cluster API Machines and MachineSets in sync.",
    long_about = "Keeps Machine API (machine.openshift.io) and Cluster API (cluster.x-k8s.io) \
Machines and MachineSets in sync: the object that is authoritative drives, its mirror of the \
same name in the other namespace follows.\n\n\
Connects through --kubeconfig, else $KUBECONFIG or ~/.kube/config, else the in-cluster \
service account. With --embedded it starts its own in-process API server loaded with sample \
objects instead, so it runs on a laptop without a cluster:\n\n    \
cargo run -p controllers -- --embedded",
    after_help = "Every flag can also be given through the environment variable shown with it; \
a flag on the command line wins."
)]
pub struct Cli {
    /// A tool instead of the operator (without one, the operator runs).
    #[command(subcommand)]
    pub command: Option<Command>,

    /// The Machine API and Cluster API namespaces.
    #[command(flatten)]
    pub namespaces: NamespaceArgs,

    /// Kubeconfig file to connect with [default: $KUBECONFIG, ~/.kube/config, or the
    /// in-cluster service account].
    #[arg(long, env = "SYNC_KUBECONFIG", value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,

    /// Kubeconfig context to use [default: the current context].
    #[arg(long, env = "SYNC_KUBE_CONTEXT", value_name = "NAME")]
    pub context: Option<String>,

    /// Elect a leader among the replicas through a coordination.k8s.io Lease; only the
    /// leader reconciles. `--leader-elect=false` for a single replica.
    #[arg(
        long,
        env = "SYNC_LEADER_ELECT",
        value_name = "BOOL",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true,
        action = ArgAction::Set
    )]
    pub leader_elect: bool,

    /// Namespace of the leader-election Lease [default: $POD_NAMESPACE, else the
    /// service account's namespace, else --capi-namespace].
    #[arg(long, env = "SYNC_LEADER_ELECTION_NAMESPACE", value_name = "NAMESPACE")]
    pub leader_election_namespace: Option<String>,

    /// Name of the leader-election Lease.
    #[arg(
        long,
        env = "SYNC_LEADER_ELECTION_ID",
        value_name = "NAME",
        default_value = DEFAULT_LEASE_NAME
    )]
    pub leader_election_id: String,

    /// How long a Lease stays valid after its last renewal; a standby replica takes over
    /// at most this long after the leader stopped renewing (e.g. `15s`, `1m`).
    #[arg(
        long,
        env = "SYNC_LEADER_ELECTION_LEASE_DURATION",
        value_name = "DURATION",
        default_value = "15s",
        value_parser = parse_duration
    )]
    pub leader_election_lease_duration: Duration,

    /// How long the leader keeps retrying to renew before it gives up leadership (and
    /// exits); shorter than the lease duration.
    #[arg(
        long,
        env = "SYNC_LEADER_ELECTION_RENEW_DEADLINE",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = parse_duration
    )]
    pub leader_election_renew_deadline: Duration,

    /// Interval between attempts to acquire or renew the Lease.
    #[arg(
        long,
        env = "SYNC_LEADER_ELECTION_RETRY_PERIOD",
        value_name = "DURATION",
        default_value = "2s",
        value_parser = parse_duration
    )]
    pub leader_election_retry_period: Duration,

    /// The whole shutdown, signal to exit: in-flight reconciles, then the Lease release
    /// (at most a quarter of it), then the HTTP drain (at most a tenth); keep it a few
    /// seconds below the pod's terminationGracePeriodSeconds.
    #[arg(
        long,
        env = "SYNC_GRACEFUL_SHUTDOWN_TIMEOUT",
        value_name = "DURATION",
        default_value = "20s",
        value_parser = parse_duration
    )]
    pub graceful_shutdown_timeout: Duration,

    /// How long a migration may wait on another controller (the sync to catch up, the
    /// old side to report Paused) before it is reported stalled: `Migration=False` on
    /// the object and a Warning Event with the same reason (`PauseTimedOut`,
    /// `SynchronizationTimedOut`). It keeps waiting; changing
    /// spec.authoritativeAPI back cancels it.
    #[arg(
        long,
        env = "SYNC_MIGRATION_STALL_TIMEOUT",
        value_name = "DURATION",
        default_value = "10m",
        value_parser = parse_duration
    )]
    pub migration_stall_timeout: Duration,

    /// Keep a restart checkpoint: each sync controller saves, when it stops, which pairs
    /// it had verified in sync at which resourceVersions (a ConfigMap
    /// `<controller>-checkpoint` in the leader-election namespace), and a restart runs
    /// no hook for those that did not change meanwhile. `--restart-checkpoint=false`
    /// reconciles every pair at each start.
    #[arg(
        long,
        env = "SYNC_RESTART_CHECKPOINT",
        value_name = "BOOL",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true,
        action = ArgAction::Set
    )]
    pub restart_checkpoint: bool,

    /// Name of this replica: its Lease holder identity is `<name>_<random>`
    /// [default: the hostname].
    #[arg(long, env = "POD_NAME", value_name = "NAME")]
    pub pod_name: Option<String>,

    /// Address of the Prometheus /metrics endpoint (`HOST:PORT`, `:PORT`, or `0` to
    /// disable) [default: 0.0.0.0:8080; 127.0.0.1:8080 with --embedded].
    #[arg(long, env = "SYNC_METRICS_BIND_ADDRESS", value_name = "ADDRESS")]
    pub metrics_bind_address: Option<BindAddress>,

    /// Address of the /healthz and /readyz probes (`HOST:PORT`, `:PORT`, or `0` to
    /// disable) [default: 0.0.0.0:8081; 127.0.0.1:8081 with --embedded].
    #[arg(long, env = "SYNC_HEALTH_PROBE_BIND_ADDRESS", value_name = "ADDRESS")]
    pub health_probe_bind_address: Option<BindAddress>,

    /// Log format.
    #[arg(
        long,
        env = "SYNC_LOG_FORMAT",
        value_name = "FORMAT",
        value_enum,
        default_value_t = LogFormat::Text
    )]
    pub log_format: LogFormat,

    /// Log level or filter directives [default: `info`: every write the sync makes to
    /// the other side (created, updated with its fields, reverted, deleted, with the
    /// object and reason) and every failure; with --embedded also
    /// `sync_core::hooks=debug`, the calls of hooks left as stubs]. `info,sync_core=debug`
    /// adds each reconcile's decision.
    #[arg(long, env = "RUST_LOG", value_name = "FILTER")]
    pub log_level: Option<String>,

    /// Where the `MachineAPIMigration` feature gate is read: `cluster` follows
    /// featuregates.config.openshift.io/cluster for the release version (the controllers
    /// start and stop as it changes); `enabled` for clusters without that API (plain
    /// Kubernetes); `disabled` to run none of them.
    #[arg(
        long,
        env = "SYNC_MACHINE_API_MIGRATION_GATE",
        value_name = "SOURCE",
        value_enum,
        default_value_t = GateSource::Cluster
    )]
    pub machine_api_migration_gate: GateSource,

    /// The release version whose feature gates count [default: the cluster's,
    /// clusterversions.config.openshift.io/version status.desired.version].
    #[arg(long, env = "RELEASE_VERSION", value_name = "VERSION")]
    pub release_version: Option<String>,

    /// Refuse to start while this Lease (`NAMESPACE/NAME`) is held: upstream's migration
    /// controllers (openshift/cluster-capi-operator's machine-api-migration) hold it while
    /// they run the same sync. `''` to skip the check. Not checked with --embedded.
    #[arg(
        long,
        env = "SYNC_UPSTREAM_LEASE",
        value_name = "NAMESPACE/NAME",
        default_value = super::upstream::UPSTREAM_LEASE
    )]
    pub upstream_lease: String,

    /// The platforms whose Machines and MachineSets are synced and migrated, comma
    /// separated (`AWS`, `OpenStack`, `PowerVS`). Upstream runs its sync on AWS and
    /// OpenStack only; PowerVS converts but is opt-in until it is run there.
    #[arg(
        long,
        env = "SYNC_PLATFORMS",
        value_name = "PLATFORM,...",
        value_delimiter = ',',
        default_value = "AWS,OpenStack"
    )]
    pub platforms: Vec<String>,

    /// Names each controller reconciles at once.
    #[arg(
        long,
        env = "SYNC_CONCURRENCY",
        value_name = "N",
        default_value_t = 4,
        value_parser = clap::value_parser!(u16).range(1..)
    )]
    pub concurrency: u16,

    /// Start an in-process API server with the CRDs of deploy/crds and
    /// deploy/examples/crds (and the --embedded-platform's own) and the samples of
    /// deploy/examples (the shared ones and the platform's), print a kubeconfig for
    /// kubectl, and run the controllers against it (no leader election).
    #[arg(long, env = "SYNC_EMBEDDED", conflicts_with_all = ["kubeconfig", "context"])]
    pub embedded: bool,

    /// With --embedded: where to write the kubeconfig [default: a temporary file,
    /// removed on exit].
    #[arg(
        long,
        env = "SYNC_EMBEDDED_KUBECONFIG",
        value_name = "PATH",
        requires = "embedded"
    )]
    pub embedded_kubeconfig: Option<PathBuf>,

    /// With --embedded: the platform of the sample cluster — its Infrastructure, machines
    /// and provider CRDs (deploy/examples/<platform>/), loaded with the shared samples of
    /// deploy/examples.
    #[arg(
        long,
        env = "SYNC_EMBEDDED_PLATFORM",
        value_enum,
        value_name = "PLATFORM",
        default_value_t = SamplePlatform::Aws,
        requires = "embedded"
    )]
    pub embedded_platform: SamplePlatform,

    /// With --embedded: the API server's port [default: a free one].
    #[arg(
        long,
        env = "SYNC_EMBEDDED_PORT",
        value_name = "PORT",
        default_value_t = 0,
        requires = "embedded"
    )]
    pub embedded_port: u16,

    /// With --embedded: also run simulated providers (the Machine API machine and
    /// MachineSet controllers, Cluster API's Machine and MachineSet controllers, the AWS
    /// and OpenStack providers' AWSMachine and OpenStackMachine controllers), so that
    /// finalizers, phases, provider IDs, node references and pausing behave as in a cluster. `--simulate-providers=false` to
    /// watch the sync alone. Never run outside --embedded.
    #[arg(
        long,
        env = "SYNC_SIMULATE_PROVIDERS",
        value_name = "BOOL",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true,
        action = ArgAction::Set
    )]
    pub simulate_providers: bool,

    /// With --embedded: install deploy/admission-policies/ after the samples, so that
    /// kubectl is refused what a cluster with the operator refuses (the operator and the
    /// simulated providers run as the users the policies exempt). `--admission-policies=false`
    /// to try the sync's own defenses without them.
    #[arg(
        long,
        env = "SYNC_ADMISSION_POLICIES",
        value_name = "BOOL",
        default_value_t = true,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true,
        action = ArgAction::Set
    )]
    pub admission_policies: bool,
}

/// The flags and environment variables that set a listener's address, for messages that
/// tell how to change it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    /// `/metrics`.
    Metrics,
    /// `/healthz` and `/readyz`.
    Probes,
    /// Both, on one address.
    MetricsAndProbes,
    /// The `--embedded` API server.
    EmbeddedApi,
}

impl Listener {
    /// What it serves, for messages.
    pub fn what(self) -> &'static str {
        match self {
            Self::Metrics => "metrics",
            Self::Probes => "probes",
            Self::MetricsAndProbes => "metrics and probes",
            Self::EmbeddedApi => "the embedded API server",
        }
    }

    /// How to choose another address: the flag(s), their environment variables, and the
    /// value that turns the listener off where there is one.
    pub fn how_to_change(self) -> &'static str {
        match self {
            Self::Metrics => {
                "choose another with --metrics-bind-address HOST:PORT (or $SYNC_METRICS_BIND_ADDRESS), or 0 to turn metrics off"
            }
            Self::Probes => {
                "choose another with --health-probe-bind-address HOST:PORT (or $SYNC_HEALTH_PROBE_BIND_ADDRESS), or 0 to turn the probes off"
            }
            Self::MetricsAndProbes => {
                "choose another with --metrics-bind-address and --health-probe-bind-address HOST:PORT (or $SYNC_METRICS_BIND_ADDRESS and $SYNC_HEALTH_PROBE_BIND_ADDRESS)"
            }
            Self::EmbeddedApi => {
                "choose another with --embedded-port PORT (or $SYNC_EMBEDDED_PORT), or leave it out for a free one"
            }
        }
    }
}

/// The tools the binary also is.
#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    /// Print what the sync would create from Machine API (or Cluster API) objects, or a
    /// migration readiness report.
    Convert(ConvertArgs),
    /// Print one line per Machine and MachineSet pair: authoritative API (spec and
    /// status), Synchronized, generations, migration step and last error. Connects like
    /// the operator (--kubeconfig, $KUBECONFIG, in-cluster).
    Status(crate::status::StatusArgs),
    /// Load the samples of deploy/examples (the objects --embedded starts with) into the
    /// cluster --kubeconfig/--context points at: owner references get the uids of the
    /// objects created before them, status is written through the status subresource, and
    /// objects already there are kept. The cluster needs the CRDs of deploy/crds and
    /// deploy/examples/crds, e.g. `envtest-server --crds deploy/crds --crds
    /// deploy/examples/crds`.
    Samples(super::samples::SamplesArgs),
}

impl Cli {
    /// The log filter: `--log-level`, else `info` (with `--embedded`, also the stub hooks'
    /// debug lines, so a newcomer sees each hook run).
    pub fn log_filter(&self) -> &str {
        match (&self.log_level, self.embedded) {
            (Some(filter), _) => filter,
            (None, true) => "info,sync_core::hooks=debug",
            (None, false) => "info",
        }
    }

    /// Whether the simulated providers run: by default with `--embedded`, never without.
    pub fn simulated_providers(&self) -> bool {
        self.embedded && self.simulate_providers
    }

    /// Whether a busy metrics port may be replaced by a free one: only the `--embedded`
    /// default; an address given on the command line or in the environment is kept (and a
    /// busy one is an error).
    pub fn metrics_port_may_move(&self) -> bool {
        self.embedded && self.metrics_bind_address.is_none()
    }

    /// As [`Cli::metrics_port_may_move`], for the probes.
    pub fn probe_port_may_move(&self) -> bool {
        self.embedded && self.health_probe_bind_address.is_none()
    }

    /// The metrics address after defaults (`None`: disabled).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics_bind_address
            .unwrap_or_else(|| self.default_bind(DEFAULT_METRICS_PORT))
            .socket_addr()
    }

    /// The probe address after defaults (`None`: disabled).
    pub fn probe_address(&self) -> Option<SocketAddr> {
        self.health_probe_bind_address
            .unwrap_or_else(|| self.default_bind(DEFAULT_PROBE_PORT))
            .socket_addr()
    }

    fn default_bind(&self, port: u16) -> BindAddress {
        let host = if self.embedded {
            [127, 0, 0, 1]
        } else {
            [0, 0, 0, 0]
        };
        BindAddress::Listen(SocketAddr::from((host, port)))
    }
}

/// The log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (with the reconcile span's fields).
    Json,
}

/// A listen address, or `0` for "disabled" (as controller-runtime's bind addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BindAddress {
    /// Do not listen.
    Disabled,
    /// Listen here.
    Listen(SocketAddr),
}

impl BindAddress {
    /// The address, unless disabled.
    pub fn socket_addr(self) -> Option<SocketAddr> {
        match self {
            Self::Disabled => None,
            Self::Listen(addr) => Some(addr),
        }
    }
}

impl FromStr for BindAddress {
    type Err = String;

    /// `0` → disabled; `:8080` → all interfaces; otherwise `HOST:PORT`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        if s == "0" {
            return Ok(Self::Disabled);
        }
        let full = match s.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => s.to_owned(),
        };
        full.parse()
            .map(Self::Listen)
            .map_err(|_| format!("{s:?} is not HOST:PORT, :PORT or 0"))
    }
}

/// A `--*-duration`, `--*-timeout` or `--*-period` value that is not a duration; clap prints
/// the message after the flag's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// No number before the unit.
    #[error("{text:?} is not a duration such as 500ms, 15s or 2m")]
    NotANumber {
        /// The value as given (trimmed).
        text: String,
    },
    /// A unit other than `ms`, `s`, `m` or `h`.
    #[error("{text:?}: unknown unit {unit:?} (use ms, s, m or h)")]
    UnknownUnit {
        /// The value as given (trimmed).
        text: String,
        /// The unit in it.
        unit: String,
    },
    /// Negative, or too long for a [`Duration`].
    #[error("{text:?}: {source}")]
    OutOfRange {
        /// The value as given (trimmed).
        text: String,
        /// Why it is no `Duration`.
        source: std::time::TryFromFloatSecsError,
    },
}

/// Parses `500ms`, `15s`, `2m`, `1h` (or a bare number of seconds).
pub fn parse_duration(s: &str) -> Result<Duration, DurationError> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| DurationError::NotANumber { text: s.to_owned() })?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        _ => {
            return Err(DurationError::UnknownUnit {
                text: s.to_owned(),
                unit: unit.to_owned(),
            });
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|source| DurationError::OutOfRange {
        text: s.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("controllers").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults_match_the_design() -> Result<(), clap::Error> {
        let cli = parse(&[])?;
        assert_eq!(cli.namespaces.mapi_namespace, "openshift-machine-api");
        assert_eq!(cli.namespaces.capi_namespace, "openshift-cluster-api");
        assert!(cli.leader_elect);
        assert_eq!(cli.leader_election_id, DEFAULT_LEASE_NAME);
        assert_eq!(cli.leader_election_lease_duration, Duration::from_secs(15));
        assert_eq!(
            cli.metrics_address(),
            Some(SocketAddr::from(([0, 0, 0, 0], 8080)))
        );
        assert_eq!(cli.probe_address(), Some(SocketAddr::from(([0, 0, 0, 0], 8081))));
        assert_eq!(cli.log_format, LogFormat::Text);
        assert_eq!(cli.concurrency, 4);
        assert_eq!(cli.platforms, ["AWS", "OpenStack"]);
        assert_eq!(
            parse(&["--platforms", "AWS,PowerVS"])?.platforms,
            ["AWS", "PowerVS"]
        );
        Ok(())
    }

    #[test]
    fn status_and_samples_take_the_operators_namespace_flags() -> Result<(), clap::Error> {
        let expected = NamespaceArgs {
            mapi_namespace: "team-mapi".into(),
            capi_namespace: "team-capi".into(),
        };
        let flags = ["--mapi-namespace", "team-mapi", "--capi-namespace", "team-capi"];
        let status = parse(&[&["status"][..], &flags].concat())?;
        let Some(Command::Status(args)) = status.command else {
            panic!("not status: {status:?}");
        };
        assert_eq!(args.namespaces, expected);
        let samples = parse(&[&["samples"][..], &flags].concat())?;
        let Some(Command::Samples(args)) = samples.command else {
            panic!("not samples: {samples:?}");
        };
        assert_eq!(args.namespaces, expected);
        // The same defaults as the operator's.
        let Some(Command::Status(args)) = parse(&["status"])?.command else {
            panic!("not status");
        };
        assert_eq!(args.namespaces, parse(&[])?.namespaces);
        Ok(())
    }

    #[test]
    fn only_embedded_default_ports_may_move() -> Result<(), clap::Error> {
        let embedded = parse(&["--embedded"])?;
        assert!(embedded.metrics_port_may_move() && embedded.probe_port_may_move());
        let explicit = parse(&["--embedded", "--metrics-bind-address", "127.0.0.1:8080"])?;
        assert!(!explicit.metrics_port_may_move() && explicit.probe_port_may_move());
        let cluster = parse(&[])?;
        assert!(!cluster.metrics_port_may_move() && !cluster.probe_port_may_move());
        Ok(())
    }

    #[test]
    fn leader_election_can_be_switched_off_and_on() -> Result<(), clap::Error> {
        assert!(!parse(&["--leader-elect=false"])?.leader_elect);
        assert!(parse(&["--leader-elect"])?.leader_elect);
        Ok(())
    }

    #[test]
    fn embedded_mode_listens_on_loopback_and_excludes_a_kubeconfig() -> Result<(), clap::Error> {
        let cli = parse(&["--embedded"])?;
        assert_eq!(
            cli.metrics_address(),
            Some(SocketAddr::from(([127, 0, 0, 1], 8080)))
        );
        assert!(parse(&["--embedded", "--kubeconfig", "/x"]).is_err());
        assert!(parse(&["--embedded-port", "1"]).is_err());
        Ok(())
    }

    #[test]
    fn the_embedded_platform_is_aws_unless_openstack_is_asked_for() -> Result<(), clap::Error> {
        assert_eq!(parse(&["--embedded"])?.embedded_platform, SamplePlatform::Aws);
        let openstack = parse(&["--embedded", "--embedded-platform", "openstack"])?;
        assert_eq!(openstack.embedded_platform, SamplePlatform::OpenStack);
        assert!(parse(&["--embedded", "--embedded-platform", "gcp"]).is_err());
        assert!(parse(&["--embedded-platform", "openstack"]).is_err());
        Ok(())
    }

    #[test]
    fn simulated_providers_run_only_in_embedded_mode_unless_switched_off() -> Result<(), clap::Error> {
        assert!(parse(&["--embedded"])?.simulated_providers());
        assert!(!parse(&["--embedded", "--simulate-providers=false"])?.simulated_providers());
        assert!(parse(&["--embedded", "--simulate-providers"])?.simulated_providers());
        assert!(!parse(&[])?.simulated_providers());
        Ok(())
    }

    #[test]
    fn bind_addresses() {
        assert_eq!("0".parse(), Ok(BindAddress::Disabled));
        assert_eq!(
            ":9090".parse(),
            Ok(BindAddress::Listen(SocketAddr::from(([0, 0, 0, 0], 9090))))
        );
        assert_eq!(
            "127.0.0.1:0".parse(),
            Ok(BindAddress::Listen(SocketAddr::from(([127, 0, 0, 1], 0))))
        );
        assert!("nope".parse::<BindAddress>().is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("3d").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn a_bad_duration_says_what_it_should_look_like() {
        let message = |text: &str| parse_duration(text).err().map(|e| e.to_string());
        assert_eq!(
            message(" s ").as_deref(),
            Some("\"s\" is not a duration such as 500ms, 15s or 2m")
        );
        assert_eq!(
            message("3d").as_deref(),
            Some("\"3d\": unknown unit \"d\" (use ms, s, m or h)")
        );
        let huge = format!("{}h", "9".repeat(30));
        assert!(
            message(&huge).is_some_and(|m| m.starts_with(&format!("{huge:?}: "))),
            "{:?}",
            message(&huge)
        );
    }
}
