//! Prometheus metrics: reconciles (by controller, direction and result), their
//! durations and errors, skipped reconciles by reason, active infrastructure watches,
//! cache object counts, leader status, build information and resident memory.
//!
//! Counters and histograms are fed by the engine's [`Observer`] hook; watches, cache sizes
//! and memory are read at scrape time, so they cost nothing between scrapes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use sync_core::infra::WatchStatus;
use sync_core::store::{KeptScan, Store};

use crate::migration::{MigrationMetrics, MigrationResult};
use sync_core::observe::{Observer, Outcome};
use sync_core::toolkit::status::SYNCHRONIZED;
use sync_core::{Caches, InfraTracker, MapiObject, SyncPair};

/// Labels of a family whose label values are all static.
type Labels<const N: usize> = [(&'static str, &'static str); N];

/// The exposition format of a scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics text 1.0.0 (what Prometheus asks for first).
    OpenMetrics,
    /// The classic Prometheus text format 0.0.4.
    Prometheus,
}

impl Format {
    /// The format an `Accept` header asks for.
    pub fn negotiate(accept: Option<&str>) -> Self {
        match accept {
            Some(accept) if accept.contains("application/openmetrics-text") => Self::OpenMetrics,
            _ => Self::Prometheus,
        }
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Self::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// The operator's metrics registry; reports reconciles as the engine's [`Observer`].
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels<3>, Counter>,
    errors: Family<Labels<2>, Counter>,
    skipped: Family<Labels<2>, Counter>,
    durations: Family<Labels<2>, Histogram, fn() -> Histogram>,
    leader: Gauge,
    platform: Family<Labels<1>, Gauge>,
    migrations: Family<Labels<2>, Counter>,
    migration_durations: Family<Labels<2>, Histogram, fn() -> Histogram>,
    gate: Family<Labels<1>, Gauge>,
    gated_requests: Family<Labels<1>, Gauge>,
    caches: SharedCaches,
}

/// The running controllers' caches: replaced each time the feature gate starts them.
type SharedCaches = Arc<RwLock<Vec<CacheCount>>>;

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

fn migration_histogram() -> Histogram {
    // 0.1 s … ~55 min.
    Histogram::new(exponential_buckets(0.1, 2.0, 16))
}

fn duration_histogram() -> Histogram {
    // 1 ms … ~33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

impl Metrics {
    /// A registry exporting `caches` and the watches of `infra`.
    pub fn new(caches: Vec<CacheCount>, infra: Option<InfraTracker>) -> Self {
        let mut registry = Registry::default();
        let reconciles = Family::<Labels<3>, Counter>::default();
        registry.register(
            "sync_reconcile",
            "Reconciles by controller, direction (mapi_to_capi, capi_to_mapi, none) and result (success, error, skipped)",
            reconciles.clone(),
        );
        let errors = Family::<Labels<2>, Counter>::default();
        registry.register(
            "sync_reconcile_errors",
            "Reconciles whose hook returned an error (retried with backoff)",
            errors.clone(),
        );
        let skipped = Family::<Labels<2>, Counter>::default();
        registry.register(
            "sync_reconcile_skipped",
            "Reconciles that called no hook, by reason (nothing_to_do, migrating, no_authority, unknown_authority, …)",
            skipped.clone(),
        );
        let durations = Family::<Labels<2>, Histogram, fn() -> Histogram>::new_with_constructor(
            duration_histogram as fn() -> Histogram,
        );
        registry.register(
            "sync_reconcile_duration_seconds",
            "Time a reconcile took, by controller and direction",
            durations.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "sync_leader",
            "1 while this replica is the leader and runs the controllers (always 1 once running without leader election)",
            leader.clone(),
        );
        let platform = Family::<Labels<1>, Gauge>::default();
        registry.register(
            "sync_platform_supported",
            "1 when the cluster's platform (Infrastructure status.platformStatus.type) has a conversion and is synced, 0 when its objects are left alone",
            platform.clone(),
        );
        let migrations = Family::<Labels<2>, Counter>::default();
        registry.register(
            "sync_migrations",
            "Migrations by controller and result (completed, rolled_back, stalled: waited past --migration-stall-timeout)",
            migrations.clone(),
        );
        let migration_durations = Family::<Labels<2>, Histogram, fn() -> Histogram>::new_with_constructor(
            migration_histogram as fn() -> Histogram,
        );
        registry.register(
            "sync_migration_duration_seconds",
            "Time from a migration's request to its end (or to its stall), by controller and result",
            migration_durations.clone(),
        );
        let gate = Family::<Labels<1>, Gauge>::default();
        registry.register(
            "sync_feature_gate_enabled",
            "1 while the feature gate the controllers obey (gate: MachineAPIMigration) is enabled and they run, 0 while they are stopped",
            gate.clone(),
        );
        let gated_requests = Family::<Labels<1>, Gauge>::default();
        registry.register(
            "sync_gated_requests",
            "While the feature gate keeps the controllers off: MAPI objects by kind (Machine, MachineSet) whose spec.authoritativeAPI asks for ClusterAPI",
            gated_requests.clone(),
        );
        let caches = Arc::new(RwLock::new(caches));
        registry.register_collector(Box::new(StateCollector {
            caches: caches.clone(),
            infra,
        }));
        Self {
            registry,
            reconciles,
            errors,
            skipped,
            durations,
            leader,
            platform,
            migrations,
            migration_durations,
            gate,
            gated_requests,
            caches,
        }
    }

    /// Records how many MAPI objects of `kind` request ClusterAPI while the gate is off.
    pub fn set_gated_requests(&self, kind: &'static str, count: usize) {
        self.gated_requests
            .get_or_create(&[("kind", kind)])
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Removes the gated-request series (the controllers run again).
    pub fn clear_gated_requests(&self) {
        self.gated_requests.clear();
    }

    /// Records whether the `MachineAPIMigration` gate lets the controllers run.
    pub fn set_gate(&self, enabled: bool) {
        self.gate
            .get_or_create(&[("gate", crate::feature_gate::GATE)])
            .set(i64::from(enabled));
    }

    /// Makes every migration series of `controllers` (their migration-metrics names,
    /// [`crate::migration::MigratingPair::CONTROLLER`]) exist at 0, so that `increase()`
    /// in an alert sees the first stall.
    pub fn expect_migrations(&self, controllers: &[&'static str]) {
        for &controller in controllers {
            for result in [
                MigrationResult::Completed,
                MigrationResult::RolledBack,
                MigrationResult::Stalled,
            ] {
                let labels = [("controller", controller), ("result", result.label())];
                drop(self.migrations.get_or_create(&labels));
            }
        }
    }

    /// Exports these caches (those of the controllers now running) instead of the last ones.
    pub fn set_caches(&self, caches: Vec<CacheCount>) {
        *self
            .caches
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = caches;
    }

    /// Records the cluster's platform and whether it is synced.
    pub fn set_platform(&self, platform: &str, supported: bool) {
        // A bounded label: the converted platforms' names, else `unknown` or `other`.
        let platform: &'static str = match conversion::platform::kinds(platform) {
            Some(kinds) => kinds.platform,
            None if platform.is_empty() => "unknown",
            None => "other",
        };
        self.platform
            .get_or_create(&[("platform", platform)])
            .set(i64::from(supported));
    }

    /// Records whether this replica leads.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Encodes every metric for a scrape.
    pub fn encode(&self, format: Format) -> Result<String, fmt::Error> {
        let mut out = String::new();
        match format {
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &self.registry)?,
            Format::Prometheus => {
                prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry)?
            }
        }
        Ok(out)
    }
}

impl Observer for Metrics {
    fn reconciled(&self, controller: &'static str, _name: &str, outcome: &Outcome, elapsed: Duration) {
        let direction = outcome.direction();
        let result = outcome.result();
        self.reconciles
            .get_or_create(&[
                ("controller", controller),
                ("direction", direction),
                ("result", result),
            ])
            .inc();
        if result == "error" {
            self.errors
                .get_or_create(&[("controller", controller), ("direction", direction)])
                .inc();
        }
        if let Outcome::Skipped(reason) = outcome {
            self.skipped
                .get_or_create(&[("controller", controller), ("reason", reason.label())])
                .inc();
        }
        self.durations
            .get_or_create(&[("controller", controller), ("direction", direction)])
            .observe(elapsed.as_secs_f64());
    }
}

impl MigrationMetrics for Metrics {
    fn migration(&self, controller: &'static str, result: MigrationResult, duration: Option<Duration>) {
        let labels = [("controller", controller), ("result", result.label())];
        self.migrations.get_or_create(&labels).inc();
        if let Some(duration) = duration {
            self.migration_durations
                .get_or_create(&labels)
                .observe(duration.as_secs_f64());
        }
    }
}

/// Objects by (status, reason) of their `Synchronized` condition, read at scrape time.
type SynchronizedCounts = Box<dyn Fn() -> BTreeMap<(String, String), i64> + Send + Sync>;

/// One reflector cache whose size is exported as `sync_cache_objects`; for a MAPI cache,
/// also its objects' `Synchronized` conditions as `sync_objects`.
pub struct CacheCount {
    controller: &'static str,
    cache: &'static str,
    len: Box<dyn Fn() -> usize + Send + Sync>,
    synchronized: Option<SynchronizedCounts>,
}

impl CacheCount {
    /// The caches of a controller of pair `P`: `mapi`, `capi`, and `owner_mirror` when
    /// the pair has one.
    pub fn of<P: SyncPair>(caches: &Caches<P>) -> Vec<Self> {
        let mapi = caches.mapi.clone();
        let mut counts = vec![
            Self {
                synchronized: Some(counted_on_change(mapi)),
                ..Self::store(P::NAME, "mapi", caches.mapi.clone())
            },
            Self::store(P::NAME, "capi", caches.capi.clone()),
        ];
        if let Some(store) = &caches.owner_mirrors {
            counts.push(Self::store(P::NAME, "owner_mirror", store.clone()));
        }
        counts
    }

    /// Its `controller` and `cache` labels.
    pub fn labels(&self) -> (&'static str, &'static str) {
        (self.controller, self.cache)
    }

    fn store<K: Send + Sync + 'static>(
        controller: &'static str,
        cache: &'static str,
        store: Store<K>,
    ) -> Self {
        Self {
            controller,
            cache,
            len: Box::new(move || store.len()),
            synchronized: None,
        }
    }
}

/// [`synchronized_by_reason`], counted again only once the store has changed since the
/// last scrape: counting decodes every object (~50 ms of CPU at 10 000 Machines), and an
/// idle operator's scrapes then decode nothing.
fn counted_on_change<K: MapiObject>(store: Store<K>) -> SynchronizedCounts {
    let kept = KeptScan::new(store, synchronized_by_reason);
    Box::new(move || kept.get())
}

/// Objects by the status and reason of their `Synchronized` condition (`None`/`""`: not
/// reported yet). Only the conditions are decoded ([`Store::each_glance`]): the whole
/// object, as a scrape after a change decoded it, cost about 50 ms of CPU at 10 000
/// Machines, and a 20 ms poll of the metrics added a tenth to a restart's CPU.
fn synchronized_by_reason<K: MapiObject>(store: &Store<K>) -> BTreeMap<(String, String), i64> {
    let mut counts = BTreeMap::new();
    for object in store.each_glance::<Conditions>() {
        let synchronized = object
            .status
            .and_then(|status| status.conditions)
            .and_then(|conditions| conditions.into_iter().find(|c| c.type_ == SYNCHRONIZED));
        let key = match synchronized {
            Some(condition) => (condition.status, condition.reason.unwrap_or_default()),
            None => ("None".to_owned(), String::new()),
        };
        *counts.entry(key).or_insert(0) += 1;
    }
    counts
}

/// A MAPI object's `status.conditions`, all that [`synchronized_by_reason`] reads of it.
#[derive(serde::Deserialize)]
struct Conditions {
    #[serde(default)]
    status: Option<ConditionList>,
}

#[derive(serde::Deserialize)]
struct ConditionList {
    #[serde(default)]
    conditions: Option<Vec<ConditionGlance>>,
}

/// A condition's type, status and reason (the MAPI `Condition`'s wire names).
#[derive(serde::Deserialize)]
struct ConditionGlance {
    #[serde(rename = "type")]
    type_: String,
    status: String,
    #[serde(default)]
    reason: Option<String>,
}

/// Reads the state metrics at scrape time.
struct StateCollector {
    caches: SharedCaches,
    infra: Option<InfraTracker>,
}

impl fmt::Debug for StateCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateCollector")
            .field("caches", &self.caches.read().map(|c| c.len()).unwrap_or_default())
            .finish_non_exhaustive()
    }
}

impl Collector for StateCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let gauge = ConstGauge::new(1i64);
        let caches = self
            .caches
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);

        let mut family = encoder.encode_descriptor(
            "sync_build_info",
            "Build information; always 1",
            None,
            MetricType::Gauge,
        )?;
        let labels: Labels<2> = [
            ("version", env!("CARGO_PKG_VERSION")),
            (
                "revision",
                option_env!("SYNC_BUILD_REVISION").unwrap_or("unknown"),
            ),
        ];
        gauge.encode(family.encode_family(&labels)?)?;

        let mut family = encoder.encode_descriptor(
            "sync_cache_objects",
            "Objects in a controller's reflector cache",
            None,
            MetricType::Gauge,
        )?;
        for cache in caches.iter() {
            let labels: Labels<2> = [("controller", cache.controller), ("cache", cache.cache)];
            let count = i64::try_from((cache.len)()).unwrap_or(i64::MAX);
            ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "sync_objects",
            "MAPI objects by controller and the status (True: synchronized, False: failing, Unknown: in progress, None: not reported) and reason of their Synchronized condition",
            None,
            MetricType::Gauge,
        )?;
        for cache in caches.iter() {
            let Some(synchronized) = &cache.synchronized else {
                continue;
            };
            for ((status, reason), count) in synchronized() {
                let labels = [
                    ("controller", cache.controller),
                    ("status", status.as_str()),
                    ("reason", reason.as_str()),
                ];
                ConstGauge::new(count).encode(family.encode_family(&labels)?)?;
            }
        }

        let mut family = encoder.encode_descriptor(
            "sync_infrastructure_watches",
            "Infrastructure kinds referenced by CAPI objects, by state (watching, resolving, failed); 1 per GroupKind",
            None,
            MetricType::Gauge,
        )?;
        for (group_kind, status) in self.infra.iter().flat_map(InfraTracker::watches) {
            let state = match status {
                WatchStatus::Watching { .. } => "watching",
                WatchStatus::Resolving => "resolving",
                WatchStatus::Failed(_) => "failed",
            };
            let labels = [
                ("group", group_kind.group.as_str()),
                ("kind", group_kind.kind.as_str()),
                ("state", state),
            ];
            gauge.encode(family.encode_family(&labels)?)?;
        }

        let mut family = encoder.encode_descriptor(
            "sync_infrastructure_cache_objects",
            "Objects (metadata only) in the shared cache of an infrastructure kind",
            None,
            MetricType::Gauge,
        )?;
        for (group_kind, count) in self.infra.iter().flat_map(InfraTracker::cache_sizes) {
            let labels = [
                ("group", group_kind.group.as_str()),
                ("kind", group_kind.kind.as_str()),
            ];
            ConstGauge::new(i64::try_from(count).unwrap_or(i64::MAX))
                .encode(family.encode_family(&labels)?)?;
        }

        if let Some(bytes) = resident_memory_bytes() {
            let family = encoder.encode_descriptor(
                "process_resident_memory_bytes",
                "Resident memory size in bytes",
                None,
                MetricType::Gauge,
            )?;
            ConstGauge::new(i64::try_from(bytes).unwrap_or(i64::MAX)).encode(family)?;
        }
        Ok(())
    }
}

/// `VmRSS` of a process, from `/proc/<pid>/status` (`None` off Linux).
pub fn resident_memory_bytes_of(pid: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn resident_memory_bytes() -> Option<u64> {
    resident_memory_bytes_of("self")
}

/// A shareable handle, as the engine wants its observer.
pub fn observer(metrics: &Arc<Metrics>) -> Arc<dyn Observer> {
    metrics.clone()
}

#[cfg(test)]
mod tests {
    use sync_core::{Direction, SkipReason};

    use super::*;

    #[test]
    fn reconciles_are_counted_by_controller_direction_and_result() -> Result<(), fmt::Error> {
        let metrics = Metrics::new(Vec::new(), None);
        let ok = Outcome::Synced {
            direction: Direction::MapiToCapi,
            failed: false,
        };
        let failed = Outcome::Synced {
            direction: Direction::CapiToMapi,
            failed: true,
        };
        metrics.reconciled("machine-sync", "a", &ok, Duration::from_millis(3));
        metrics.reconciled("machine-sync", "b", &ok, Duration::from_millis(3));
        metrics.reconciled("machine-sync", "c", &failed, Duration::from_millis(3));
        metrics.reconciled(
            "machine-set-sync",
            "d",
            &Outcome::Skipped(SkipReason::Migrating),
            Duration::ZERO,
        );
        metrics.set_leader(true);
        let text = metrics.encode(Format::Prometheus)?;
        for line in [
            r#"sync_reconcile_total{controller="machine-sync",direction="mapi_to_capi",result="success"} 2"#,
            r#"sync_reconcile_total{controller="machine-sync",direction="capi_to_mapi",result="error"} 1"#,
            r#"sync_reconcile_total{controller="machine-set-sync",direction="none",result="skipped"} 1"#,
            r#"sync_reconcile_errors_total{controller="machine-sync",direction="capi_to_mapi"} 1"#,
            r#"sync_reconcile_skipped_total{controller="machine-set-sync",reason="migrating"} 1"#,
            r#"sync_reconcile_duration_seconds_count{controller="machine-sync",direction="mapi_to_capi"} 2"#,
            "sync_leader 1",
            r#"sync_build_info{version="0.1.0","#,
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        let open = metrics.encode(Format::OpenMetrics)?;
        assert!(open.ends_with("# EOF\n"), "{open}");
        Ok(())
    }

    #[test]
    fn a_migration_counts_on_the_series_that_existed_at_zero() -> Result<(), fmt::Error> {
        let metrics = Metrics::new(Vec::new(), None);
        metrics.expect_migrations(&["MachineMigrationController"]);
        let zero = r#"sync_migrations_total{controller="MachineMigrationController",result="stalled"} 0"#;
        assert!(metrics.encode(Format::Prometheus)?.contains(zero));
        MigrationMetrics::migration(
            &metrics,
            "MachineMigrationController",
            MigrationResult::Stalled,
            None,
        );
        let text = metrics.encode(Format::Prometheus)?;
        let one = r#"sync_migrations_total{controller="MachineMigrationController",result="stalled"} 1"#;
        assert!(text.contains(one), "{text}");
        assert_eq!(
            text.matches("result=\"stalled\"").count(),
            1,
            "one series: {text}"
        );
        Ok(())
    }

    /// The glance counts what reading every whole Machine's condition counts.
    #[test]
    fn synchronized_objects_are_counted_from_their_conditions_alone() {
        use sync_core::api::mapi;
        use sync_core::store::{Encoding, Writer};
        let condition = |type_: &str, status: &str, reason: Option<&str>| sync_core::api::mapi::Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.map(Into::into),
            ..Default::default()
        };
        let mut writer = Writer::<mapi::Machine>::new(Encoding::MessagePack);
        let conditions = [
            vec![condition(SYNCHRONIZED, "True", None)],
            vec![condition(SYNCHRONIZED, "True", None)],
            vec![
                condition("Drained", "True", Some("x")),
                condition(SYNCHRONIZED, "False", Some("Failed")),
            ],
            vec![condition("Drained", "True", Some("x"))],
            vec![],
        ];
        for (index, conditions) in conditions.into_iter().enumerate() {
            let mut machine = mapi::Machine::default();
            machine.metadata.name = Some(format!("m-{index}"));
            machine.metadata.namespace = Some("ns".into());
            if index < 4 {
                machine.status.get_or_insert_default().sync.conditions = Some(conditions);
            }
            writer.apply_decoded(std::sync::Arc::new(machine));
        }
        let store = writer.as_reader();
        let mut whole = BTreeMap::new();
        for machine in store.each() {
            let key = sync_core::toolkit::status::synchronized(&machine)
                .map_or(("None".to_owned(), String::new()), |c| {
                    (c.status.clone(), c.reason.clone().unwrap_or_default())
                });
            *whole.entry(key).or_insert(0) += 1;
        }
        let counted = synchronized_by_reason(&store);
        assert_eq!(counted, whole);
        assert_eq!(counted.get(&("True".to_owned(), String::new())), Some(&2));
        assert_eq!(counted.get(&("False".to_owned(), "Failed".to_owned())), Some(&1));
        assert_eq!(counted.get(&("None".to_owned(), String::new())), Some(&2));
    }

    #[test]
    fn the_format_follows_the_accept_header() {
        assert_eq!(
            Format::negotiate(Some(
                "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"
            )),
            Format::OpenMetrics
        );
        assert_eq!(Format::negotiate(Some("text/plain")), Format::Prometheus);
        assert_eq!(Format::negotiate(None), Format::Prometheus);
    }

    #[test]
    fn resident_memory_is_read_from_proc() {
        assert!(resident_memory_bytes().is_some_and(|b| b > 0));
    }
}
