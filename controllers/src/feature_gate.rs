//! The `MachineAPIMigration` feature gate: the sync and migration controllers run only
//! while it is enabled, as upstream's migration controllers do.
//!
//! The gate is read as library-go's feature-gate accessor reads it: the cluster's
//! `featuregates.config.openshift.io/cluster` lists enabled and disabled gates per
//! release version (`status.featureGates[].version`); the version that counts is the
//! operator's own release version (`--release-version`, `$RELEASE_VERSION`) or, without
//! one, the version the cluster is moving to (`clusterversions.config.openshift.io/version`
//! `status.desired.version`, else the newest `status.history` entry). Unlike upstream's
//! binaries, which exit when a gate changes, the operator starts or stops its controllers
//! in place (see `operator::run`).
//!
//! Below the operator: `controllers status` reads the gate too.

use clap::ValueEnum;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The gate's name in `FeatureGate` status.
pub const GATE: &str = "MachineAPIMigration";
/// The singleton `FeatureGate`.
pub const FEATURE_GATE: &str = "cluster";
/// The singleton `ClusterVersion`.
pub const CLUSTER_VERSION: &str = "version";

/// Where the gate's state comes from (`--machine-api-migration-gate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum GateSource {
    /// The cluster's `FeatureGate` `cluster`, followed as it changes.
    Cluster,
    /// Always enabled: for clusters without the `FeatureGate` API (plain Kubernetes).
    Enabled,
    /// Always disabled: watch nothing, sync nothing.
    Disabled,
}

/// Whether the controllers may run, and why (the log line, `controllers status`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateState {
    /// The gate is enabled for the version that counts.
    pub enabled: bool,
    /// Why, in a sentence that names the object and field it was read from.
    pub reason: String,
    /// Whether the gate has been read (until then it counts as disabled, and the replica
    /// is not ready).
    pub known: bool,
}

impl GateState {
    fn on(reason: impl Into<String>) -> Self {
        Self {
            enabled: true,
            reason: reason.into(),
            known: true,
        }
    }

    fn off(reason: impl Into<String>) -> Self {
        Self {
            enabled: false,
            reason: reason.into(),
            known: true,
        }
    }

    fn reading() -> Self {
        Self {
            enabled: false,
            reason: format!("{GATE}: reading featuregates.config.openshift.io/{FEATURE_GATE}"),
            known: false,
        }
    }

    /// The state a fixed source gives (`None` for [`GateSource::Cluster`]).
    pub fn fixed(source: GateSource) -> Option<Self> {
        match source {
            GateSource::Cluster => None,
            GateSource::Enabled => Some(Self::on(format!(
                "{GATE} enabled by --machine-api-migration-gate=enabled"
            ))),
            GateSource::Disabled => Some(Self::off(format!(
                "{GATE} disabled by --machine-api-migration-gate=disabled"
            ))),
        }
    }
}

/// Why no version tells which gates count: the reason the gate counts as disabled, naming
/// the object and field it was looked for in and what to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum UnknownVersion {
    /// The cluster has no `ClusterVersion` (and no `--release-version` was given).
    #[error(
        "no clusterversions.config.openshift.io/{CLUSTER_VERSION} to tell the cluster's version \
         (set --release-version)"
    )]
    NoClusterVersion,
    /// The `ClusterVersion` names no version yet.
    #[error(
        "clusterversions.config.openshift.io/{CLUSTER_VERSION} has neither status.desired.version \
         nor status.history[0].version yet"
    )]
    NotYetReported,
}

/// The version whose gates count: `own` (the operator's release version) when given, else
/// the cluster's desired version, else its newest history entry.
pub fn version_that_counts(
    own: Option<&str>,
    cluster_version: Option<&Value>,
) -> Result<String, UnknownVersion> {
    if let Some(own) = own.filter(|v| !v.is_empty()) {
        return Ok(own.to_owned());
    }
    let Some(cluster_version) = cluster_version else {
        return Err(UnknownVersion::NoClusterVersion);
    };
    let status = &cluster_version["status"];
    let desired = status["desired"]["version"].as_str();
    let newest = status["history"][0]["version"].as_str();
    desired
        .or(newest)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .ok_or(UnknownVersion::NotYetReported)
}

/// The gate's state in `feature_gate` (a `FeatureGate` object) for `version`.
pub fn state_for(feature_gate: Option<&Value>, version: &str) -> GateState {
    let Some(feature_gate) = feature_gate else {
        return GateState::off(format!(
            "no featuregates.config.openshift.io/{FEATURE_GATE}: {GATE} counts as disabled \
             (on plain Kubernetes pass --machine-api-migration-gate=enabled)"
        ));
    };
    let empty = Vec::new();
    let per_version = feature_gate["status"]["featureGates"]
        .as_array()
        .unwrap_or(&empty);
    let Some(entry) = per_version
        .iter()
        .find(|e| e["version"].as_str() == Some(version))
    else {
        return GateState::off(format!(
            "featuregates.config.openshift.io/{FEATURE_GATE} status.featureGates has no entry for \
             version {version} yet: {GATE} counts as disabled until it does"
        ));
    };
    let lists = |key: &str| {
        entry[key]
            .as_array()
            .is_some_and(|gates| gates.iter().any(|g| g["name"].as_str() == Some(GATE)))
    };
    let place =
        format!("featuregates.config.openshift.io/{FEATURE_GATE} status.featureGates[version={version}]");
    match (lists("enabled"), lists("disabled")) {
        (true, _) => GateState::on(format!("{GATE} is enabled in {place}")),
        (false, true) => GateState::off(format!("{GATE} is disabled in {place}")),
        (false, false) => GateState::off(format!(
            "{GATE} is listed neither enabled nor disabled in {place}: counts as disabled"
        )),
    }
}

/// The gate's state from the two objects (either may be missing).
pub fn evaluate(
    feature_gate: Option<&Value>,
    cluster_version: Option<&Value>,
    own_version: Option<&str>,
) -> GateState {
    if feature_gate.is_none() {
        return state_for(None, "");
    }
    match version_that_counts(own_version, cluster_version) {
        Ok(version) => state_for(feature_gate, &version),
        Err(reason) => GateState::off(format!("{reason}: {GATE} counts as disabled")),
    }
}

/// The gate's state now, read once (for `controllers status`): a singleton that cannot be
/// read counts as missing, and the reason says which.
pub async fn read_once(client: &kube::Client, own_version: Option<&str>) -> GateState {
    let get = |kind: &'static str, plural: &'static str, name: &'static str| async move {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource(kind, plural));
        match api.get_opt(name).await {
            Ok(object) => object.and_then(|o| serde_json::to_value(o).ok()),
            Err(error) => {
                tracing::debug!(kind, %error, "cannot read an input of the {GATE} feature gate");
                None
            }
        }
    };
    let feature_gate = get("FeatureGate", "featuregates", FEATURE_GATE).await;
    let cluster_version = get("ClusterVersion", "clusterversions", CLUSTER_VERSION).await;
    evaluate(feature_gate.as_ref(), cluster_version.as_ref(), own_version)
}

/// The `FeatureGate` and `ClusterVersion` kinds.
fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("config.openshift.io", "v1", kind), plural)
}

/// The gate's state, kept current from the cluster (or fixed by `source`) until `stop`.
pub fn follow(
    client: kube::Client,
    source: GateSource,
    own_version: Option<String>,
    stop: CancellationToken,
) -> watch::Receiver<GateState> {
    if let Some(fixed) = GateState::fixed(source) {
        return watch::channel(fixed).1;
    }
    let (sender, receiver) = watch::channel(GateState::reading());
    tokio::spawn(async move {
        tokio::select! {
            () = track(client, own_version, sender) => {}
            () = stop.cancelled() => {}
        }
    });
    receiver
}

/// What a watch of one singleton saw.
enum Seen {
    /// A (re)list starts: what follows until [`Seen::Listed`] replaces what was known.
    Listing,
    /// The object, as it is now (from the list or an event).
    Object(Value),
    /// The object was deleted.
    Deleted,
    /// The (re)list ended.
    Listed,
    /// The watch expired (410 Gone); it relists.
    Expired,
    /// The watch failed; it is retried with backoff.
    Failed(String),
}

/// What is known of one singleton.
#[derive(Default)]
struct Singleton {
    current: Option<Value>,
    /// During a relist: what the list brought so far.
    listing: Option<Option<Value>>,
    listed: bool,
}

impl Singleton {
    fn see(&mut self, kind: &str, seen: Seen) {
        match seen {
            Seen::Listing => self.listing = Some(None),
            Seen::Object(object) => match self.listing.as_mut() {
                Some(listing) => *listing = Some(object),
                None => self.current = Some(object),
            },
            Seen::Deleted => self.current = None,
            Seen::Listed => {
                self.current = self.listing.take().flatten();
                self.listed = true;
            }
            // A watch that expired is relisted at once: nothing to report.
            Seen::Expired => {}
            Seen::Failed(error) => {
                tracing::warn!(kind, %error, "cannot watch an input of the {GATE} feature gate; retrying with backoff");
                // A failed relist keeps what was known; a first list that fails (an API
                // the cluster does not serve) counts as a missing object.
                self.listing = None;
                self.listed = true;
            }
        }
    }
}

/// Watches both singletons and publishes the state whenever it changes (never in the
/// middle of a relist, so a reconnecting watch does not flap the controllers).
async fn track(client: kube::Client, own_version: Option<String>, sender: watch::Sender<GateState>) {
    let singleton = |index: usize, kind: &'static str, plural: &'static str, name: &'static str| {
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource(kind, plural));
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        watcher(api, config).default_backoff().map(move |event| {
            let seen = match event {
                Ok(watcher::Event::Init) => Seen::Listing,
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                    serde_json::to_value(o).map_or_else(|e| Seen::Failed(e.to_string()), Seen::Object)
                }
                Ok(watcher::Event::Delete(_)) => Seen::Deleted,
                Ok(watcher::Event::InitDone) => Seen::Listed,
                Err(watcher::Error::WatchError(status)) if status.code == 410 => Seen::Expired,
                Err(error) => Seen::Failed(error.to_string()),
            };
            (index, kind, seen)
        })
    };
    let gates = singleton(0, "FeatureGate", "featuregates", FEATURE_GATE);
    let versions = singleton(1, "ClusterVersion", "clusterversions", CLUSTER_VERSION);
    let mut events = std::pin::pin!(futures::stream::select(gates, versions));
    let mut known: [Singleton; 2] = Default::default();
    while let Some((index, kind, seen)) = events.next().await {
        known[index].see(kind, seen);
        if known.iter().any(|s| !s.listed || s.listing.is_some()) {
            continue;
        }
        let state = evaluate(
            known[0].current.as_ref(),
            known[1].current.as_ref(),
            own_version.as_deref(),
        );
        sender.send_if_modified(|current| {
            let changed = *current != state;
            if changed {
                *current = state;
            }
            changed
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn feature_gate(version: &str, enabled: &[&str], disabled: &[&str]) -> Value {
        let names = |gates: &[&str]| gates.iter().map(|g| json!({"name": g})).collect::<Vec<_>>();
        json!({"status": {"featureGates": [
            {"version": "4.0.0-old", "enabled": [{"name": GATE}], "disabled": []},
            {"version": version, "enabled": names(enabled), "disabled": names(disabled)},
        ]}})
    }

    fn cluster_version(desired: Option<&str>, history: &[&str]) -> Value {
        let history: Vec<_> = history
            .iter()
            .map(|v| json!({"state": "Completed", "version": v}))
            .collect();
        json!({"status": {"desired": desired.map(|v| json!({"version": v})), "history": history}})
    }

    #[test]
    fn enabled_for_the_desired_version_runs_the_controllers() {
        let gate = feature_gate("4.22.0", &[GATE], &[]);
        let state = evaluate(Some(&gate), Some(&cluster_version(Some("4.22.0"), &[])), None);
        assert!(state.enabled, "{state:?}");
        assert!(
            state.reason.contains("status.featureGates[version=4.22.0]"),
            "{}",
            state.reason
        );
    }

    #[test]
    fn disabled_or_unlisted_for_that_version_stops_them() {
        let version = cluster_version(Some("4.22.0"), &[]);
        let disabled = feature_gate("4.22.0", &[], &[GATE]);
        assert!(!evaluate(Some(&disabled), Some(&version), None).enabled);
        let unlisted = feature_gate("4.22.0", &["Other"], &[]);
        let state = evaluate(Some(&unlisted), Some(&version), None);
        assert!(!state.enabled);
        assert!(
            state.reason.contains("neither enabled nor disabled"),
            "{}",
            state.reason
        );
    }

    #[test]
    fn the_operator_s_own_version_wins_over_the_cluster_s() {
        // Enabled only for the old version: the operator of that version runs.
        let gate = feature_gate("4.22.0", &[], &[GATE]);
        let version = cluster_version(Some("4.22.0"), &[]);
        assert!(evaluate(Some(&gate), Some(&version), Some("4.0.0-old")).enabled);
        assert!(!evaluate(Some(&gate), Some(&version), None).enabled);
    }

    #[test]
    fn without_a_desired_version_the_newest_history_entry_counts() {
        let gate = feature_gate("4.22.0", &[GATE], &[]);
        let version = cluster_version(None, &["4.22.0", "4.21.3"]);
        assert!(evaluate(Some(&gate), Some(&version), None).enabled);
    }

    #[test]
    fn a_version_the_feature_gate_does_not_list_yet_counts_as_disabled() {
        let gate = feature_gate("4.22.0", &[GATE], &[]);
        let state = evaluate(Some(&gate), Some(&cluster_version(Some("4.23.0"), &[])), None);
        assert!(!state.enabled);
        assert!(
            state.reason.contains("no entry for version 4.23.0"),
            "{}",
            state.reason
        );
    }

    #[test]
    fn missing_objects_count_as_disabled_and_say_what_to_do() {
        let state = evaluate(None, Some(&cluster_version(Some("4.22.0"), &[])), None);
        assert!(!state.enabled);
        assert!(
            state.reason.contains("--machine-api-migration-gate=enabled"),
            "{}",
            state.reason
        );
        let gate = feature_gate("4.22.0", &[GATE], &[]);
        let state = evaluate(Some(&gate), None, None);
        assert!(!state.enabled);
        assert!(state.reason.contains("--release-version"), "{}", state.reason);
    }

    #[test]
    fn an_unknown_version_says_where_it_was_looked_for() {
        let missing = version_that_counts(None, None).err().map(|e| e.to_string());
        assert_eq!(
            missing.as_deref(),
            Some(
                "no clusterversions.config.openshift.io/version to tell the cluster's version \
                 (set --release-version)"
            )
        );
        let empty = version_that_counts(None, Some(&cluster_version(None, &[])))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            empty.as_deref(),
            Some(
                "clusterversions.config.openshift.io/version has neither status.desired.version \
                 nor status.history[0].version yet"
            )
        );
        assert_eq!(version_that_counts(Some("4.22.0"), None).as_deref(), Ok("4.22.0"));
    }

    #[test]
    fn fixed_sources_ignore_the_cluster() {
        assert!(GateState::fixed(GateSource::Enabled).is_some_and(|s| s.enabled));
        assert!(GateState::fixed(GateSource::Disabled).is_some_and(|s| !s.enabled));
        assert_eq!(GateState::fixed(GateSource::Cluster), None);
    }
}
