//! Restart checkpoints: which pairs a controller had found in sync, at which
//! resourceVersions, when it last stopped — so that a restart over a synchronized fleet
//! does not run every hook again only to find nothing to write.
//!
//! A pair is *verified* when its last reconcile ran a sync hook (not a deletion) that
//! returned [`Action::await_change`](crate::Action::await_change) without an error. Its
//! *fingerprint* hashes the controller's scope, the name, the MAPI and CAPI objects'
//! resourceVersions and the referenced infrastructure object's reference and
//! resourceVersion. A controller with a checkpoint saves its verified fingerprints when
//! it stops (a ConfigMap `<pair name>-checkpoint`, written by server-side apply); the
//! next run loads them and, at each name's first reconcile, skips the hook when the
//! fingerprint of the cached objects is among them ([`SkipReason::Checkpointed`]).
//!
//! Why this is sound: a resourceVersion changes with every write to an object, and two
//! versions of one object are compared only for equality, as informers do. A fingerprint
//! in the set says "a hook given exactly these objects, under this scope, wrote nothing
//! that changed them", which stays true forever: a stale checkpoint (a crash, a replica
//! that lost its Lease) only skips less. What the scope must cover is everything else the
//! hooks' writes depend on: the running build ([`Checkpoint::this_build`], so an upgrade
//! re-checks every pair), the namespaces and the cluster's facts. A change to an object a
//! hook reads beyond the pair (an owner) reaches the pair's own objects too (ownership is
//! by uid, so the garbage collector or the owner's controller writes them).
//!
//! A run that stops before it reconciled every cached name carries over the loaded
//! fingerprints that still match those names' cached objects.
//!
//! [`SkipReason::Checkpointed`]: crate::SkipReason::Checkpointed

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Mutex, OnceLock};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::{Client, Resource};

mod build;

use crate::api::InfraRef;
use crate::hooks::SyncObjects;
use crate::pair::SyncPair;

/// The data key holding the scope a checkpoint was written under (hex).
const SCOPE_KEY: &str = "scope";
/// The binaryData key holding the fingerprints: sorted little-endian `u64`s.
const FINGERPRINTS_KEY: &str = "fingerprints";
/// A ConfigMap holds at most 1 MiB of data; a larger fleet checkpoints a subset (any
/// subset of true claims is a valid checkpoint).
pub const MAX_FINGERPRINTS: usize = 120_000;

/// Where a controller keeps its checkpoint, and the scope its fingerprints are valid in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// The namespace of the ConfigMap (the operator's own).
    pub namespace: String,
    /// Everything besides the pair's objects that the hooks' writes depend on, hashed.
    pub scope: u64,
}

impl Checkpoint {
    /// A checkpoint in `namespace` whose fingerprints hold only for `scope` (hash here
    /// what the hooks depend on besides the pair's objects: [`Checkpoint::this_build`],
    /// the namespaces, the cluster's facts).
    pub fn new(namespace: impl Into<String>, scope: &impl Hash) -> Self {
        let mut hasher = DefaultHasher::new();
        scope.hash(&mut hasher);
        Self {
            namespace: namespace.into(),
            scope: hasher.finish(),
        }
    }

    /// A hash naming the running executable's build (found once per process, on a
    /// blocking thread): another build may convert differently, so its checkpoints must
    /// not be trusted.
    pub async fn this_build() -> Result<u64, String> {
        static BUILD: OnceLock<Result<u64, String>> = OnceLock::new();
        let identity = || BUILD.get_or_init(build::identity).clone();
        tokio::task::spawn_blocking(identity)
            .await
            .map_err(|e| format!("naming the running build: {e}"))?
    }

    /// The ConfigMap's name for the pair `P`.
    pub fn name<P: SyncPair>() -> String {
        format!("{}-checkpoint", P::NAME)
    }
}

/// The fingerprint of a pair's objects under `scope`; `None` unless both sides exist
/// (a one-sided pair's decision depends on more than its objects). `DefaultHasher` is
/// only stable within one build, which is all a scope that hashes the build needs.
pub fn fingerprint<P: SyncPair>(scope: u64, objects: &SyncObjects<P>) -> Option<u64> {
    let reference = match &objects.infra_ref {
        Some(Ok(reference)) => Reference::Valid(reference),
        Some(Err(_)) => Reference::Malformed,
        None => Reference::None,
    };
    let versions = PairVersions {
        name: &objects.name,
        mapi: objects.mapi.as_deref()?.meta().resource_version.as_deref()?,
        capi: objects.capi.as_deref()?.meta().resource_version.as_deref()?,
        infra_ref: reference,
        infra: objects
            .infra
            .as_deref()
            .and_then(|infra| infra.metadata.resource_version.as_deref()),
    };
    Some(versions.fingerprint(scope))
}

/// What a fingerprint covers: a pair's name, and the versions of its objects as the
/// caches hold them (read without decoding any object on a restart's first pass).
#[derive(Clone, Copy, Debug)]
pub struct PairVersions<'a> {
    /// The pair's name.
    pub name: &'a str,
    /// The MAPI object's resourceVersion.
    pub mapi: &'a str,
    /// The CAPI object's resourceVersion.
    pub capi: &'a str,
    /// The CAPI object's infrastructure reference.
    pub infra_ref: Reference<'a>,
    /// The referenced object's resourceVersion, when cached.
    pub infra: Option<&'a str>,
}

/// A CAPI object's infrastructure reference, as far as a fingerprint tells them apart.
#[derive(Clone, Copy, Debug)]
pub enum Reference<'a> {
    /// None.
    None,
    /// One that does not parse.
    Malformed,
    /// This one.
    Valid(&'a InfraRef),
}

impl PairVersions<'_> {
    /// The fingerprint under `scope`.
    pub fn fingerprint(&self, scope: u64) -> u64 {
        let mut hasher = DefaultHasher::new();
        (scope, self.name, self.mapi, self.capi).hash(&mut hasher);
        match self.infra_ref {
            Reference::Valid(reference) => reference.to_string().hash(&mut hasher),
            Reference::Malformed => "malformed".hash(&mut hasher),
            Reference::None => "none".hash(&mut hasher),
        }
        self.infra.hash(&mut hasher);
        hasher.finish()
    }
}

/// A running controller's checkpoint: what it loaded, and what it verified since.
#[derive(Debug)]
pub(crate) struct Ledger {
    checkpoint: Checkpoint,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The fingerprints the last run saved (consumed as names are reconciled).
    restored: HashSet<u64>,
    /// The loaded checkpoint, as a set, to tell whether saving would change it.
    loaded: Option<HashSet<u64>>,
    /// Every name reconciled since the start, with the fingerprint its last reconcile
    /// verified (`None`: it did not). One map, not two: it holds every name of the fleet.
    reconciled: HashMap<Box<str>, Option<u64>>,
}

impl Ledger {
    pub(crate) fn new(checkpoint: Checkpoint) -> Self {
        Self {
            checkpoint,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The fingerprint of `objects` under this controller's scope.
    pub(crate) fn fingerprint<P: SyncPair>(&self, objects: &SyncObjects<P>) -> Option<u64> {
        fingerprint(self.checkpoint.scope, objects)
    }

    /// The fingerprint of `versions` under this controller's scope.
    pub(crate) fn fingerprint_of(&self, versions: &PairVersions<'_>) -> u64 {
        versions.fingerprint(self.checkpoint.scope)
    }

    /// Whether a reconcile of `name` would be its first while the loaded checkpoint
    /// still has fingerprints to match (worth computing its fingerprint then).
    pub(crate) fn restoring(&self, name: &str) -> bool {
        let state = self.state();
        !state.restored.is_empty() && !state.reconciled.contains_key(name)
    }

    /// Whether `name`'s first reconcile finds it as the last run verified it (then it
    /// stays verified and its hook need not run).
    pub(crate) fn restored(&self, name: &str, fingerprint: Option<u64>) -> bool {
        let mut state = self.state();
        if state.reconciled.contains_key(name) {
            return false;
        }
        let restored = fingerprint.filter(|fingerprint| state.restored.remove(fingerprint));
        state.reconciled.insert(name.into(), restored);
        restored.is_some()
    }

    /// Records how `name`'s reconcile ended: `Some` when it verified the pair at that
    /// fingerprint.
    pub(crate) fn record(&self, name: &str, verified: Option<u64>) {
        let mut state = self.state();
        match state.reconciled.get_mut(name) {
            Some(last) => *last = verified,
            None => {
                state.reconciled.insert(name.into(), verified);
            }
        }
    }

    /// Forgets `name`, whose objects are both gone: the map would otherwise keep every
    /// name the process ever reconciled. A new pair of that name cannot match a saved
    /// fingerprint (its objects have new resourceVersions), so nothing is wrongly skipped.
    pub(crate) fn forget(&self, name: &str) {
        self.state().reconciled.remove(name);
    }

    /// Loads the checkpoint the last run saved; an absent, unreadable or foreign one
    /// (another scope) restores nothing.
    pub(crate) async fn load<P: SyncPair>(&self, client: Client) {
        let name = Checkpoint::name::<P>();
        let api = Api::<ConfigMap>::namespaced(client, &self.checkpoint.namespace);
        let config_map = match api.get_opt(&name).await {
            Ok(config_map) => config_map,
            Err(error) => {
                tracing::warn!(controller = P::NAME, checkpoint = name, %error,
                    "cannot read the restart checkpoint; reconciling every pair");
                return;
            }
        };
        let restored = match config_map.as_ref().map(|c| decode(c, self.checkpoint.scope)) {
            None => {
                tracing::debug!(controller = P::NAME, checkpoint = name, "no restart checkpoint");
                return;
            }
            Some(Ok(restored)) => restored,
            Some(Err(reason)) => {
                tracing::info!(
                    controller = P::NAME,
                    checkpoint = name,
                    reason,
                    "restart checkpoint not used; reconciling every pair"
                );
                return;
            }
        };
        tracing::info!(
            controller = P::NAME,
            checkpoint = name,
            pairs = restored.len(),
            "restart checkpoint loaded"
        );
        let mut state = self.state();
        state.loaded = Some(restored.clone());
        state.restored = restored;
    }

    /// What to save: the verified fingerprints, and those of the loaded checkpoint that
    /// still hold for names not reconciled since the start (`unreconciled` gives the
    /// current fingerprint of such a cached name). `None` when it would not change.
    fn to_save<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
        mut unreconciled: impl FnMut(&str) -> Option<u64>,
    ) -> Option<HashSet<u64>> {
        let state = self.state();
        let mut fingerprints: HashSet<u64> = state.reconciled.values().flatten().copied().collect();
        for name in names {
            if !state.reconciled.contains_key(name)
                && let Some(fingerprint) = unreconciled(name)
                && state.restored.contains(&fingerprint)
            {
                fingerprints.insert(fingerprint);
            }
        }
        (state.loaded.as_ref() != Some(&fingerprints)).then_some(fingerprints)
    }

    /// Saves what [`Ledger::to_save`] selects among the cached `names`, if it changed.
    pub(crate) async fn save<'a, P: SyncPair>(
        &self,
        client: Client,
        names: impl IntoIterator<Item = &'a str>,
        unreconciled: impl FnMut(&str) -> Option<u64>,
    ) {
        let name = Checkpoint::name::<P>();
        let Some(fingerprints) = self.to_save(names, unreconciled) else {
            return;
        };
        let config_map = encode(&name, &self.checkpoint, fingerprints);
        let api = Api::<ConfigMap>::namespaced(client, &self.checkpoint.namespace);
        let params = PatchParams::apply(P::NAME).force();
        match api.patch(&name, &params, &Patch::Apply(&config_map)).await {
            Ok(_) => tracing::info!(
                controller = P::NAME,
                checkpoint = name,
                "restart checkpoint saved"
            ),
            Err(error) => tracing::warn!(controller = P::NAME, checkpoint = name, %error,
                "cannot save the restart checkpoint; the next start reconciles every pair"),
        }
    }
}

/// The checkpoint ConfigMap of `fingerprints` (at most [`MAX_FINGERPRINTS`] of them).
fn encode(name: &str, checkpoint: &Checkpoint, fingerprints: HashSet<u64>) -> ConfigMap {
    let mut sorted: Vec<u64> = fingerprints.into_iter().collect();
    sorted.sort_unstable();
    sorted.truncate(MAX_FINGERPRINTS);
    let bytes = sorted.iter().flat_map(|f| f.to_le_bytes()).collect();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(checkpoint.namespace.clone()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            SCOPE_KEY.to_owned(),
            format!("{:016x}", checkpoint.scope),
        )])),
        binary_data: Some(BTreeMap::from([(FINGERPRINTS_KEY.to_owned(), ByteString(bytes))])),
        ..ConfigMap::default()
    }
}

/// The fingerprints of a checkpoint written under `scope`, or why it cannot be used.
fn decode(config_map: &ConfigMap, scope: u64) -> Result<HashSet<u64>, &'static str> {
    let written = config_map.data.as_ref().and_then(|d| d.get(SCOPE_KEY));
    if written.map(String::as_str) != Some(format!("{scope:016x}").as_str()) {
        return Err("written under another scope (another build, namespaces or cluster)");
    }
    let bytes = config_map
        .binary_data
        .as_ref()
        .and_then(|d| d.get(FINGERPRINTS_KEY))
        .ok_or("no fingerprints")?;
    if bytes.0.len() % 8 != 0 {
        return Err("fingerprints are not a whole number of 8-byte values");
    }
    Ok(bytes
        .0
        .chunks_exact(8)
        .map(|chunk| {
            let mut word = [0; 8];
            word.copy_from_slice(chunk);
            u64::from_le_bytes(word)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::{capi, mapi};
    use crate::testing::fixtures::MachinePair;

    fn meta(name: &str, version: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.into()),
            resource_version: Some(version.into()),
            ..ObjectMeta::default()
        }
    }

    fn objects(mapi_version: Option<&str>, capi_version: Option<&str>) -> SyncObjects<MachinePair> {
        SyncObjects {
            name: "m".into(),
            mapi: mapi_version.map(|v| {
                Arc::new(mapi::Machine {
                    metadata: meta("m", v),
                    ..mapi::Machine::default()
                })
            }),
            capi: capi_version.map(|v| {
                Arc::new(capi::Machine {
                    metadata: meta("m", v),
                    ..capi::Machine::default()
                })
            }),
            infra_ref: None,
            infra: None,
        }
    }

    #[test]
    fn a_fingerprint_changes_with_every_input_and_needs_both_sides() {
        let base = fingerprint(1, &objects(Some("1"), Some("2")));
        assert!(base.is_some());
        assert_eq!(base, fingerprint(1, &objects(Some("1"), Some("2"))));
        assert_ne!(base, fingerprint(2, &objects(Some("1"), Some("2"))), "scope");
        assert_ne!(
            base,
            fingerprint(1, &objects(Some("3"), Some("2"))),
            "MAPI version"
        );
        assert_ne!(
            base,
            fingerprint(1, &objects(Some("1"), Some("3"))),
            "CAPI version"
        );
        let mut renamed = objects(Some("1"), Some("2"));
        renamed.name = "n".into();
        assert_ne!(base, fingerprint(1, &renamed), "name");
        assert_eq!(fingerprint(1, &objects(None, Some("2"))), None);
        assert_eq!(fingerprint(1, &objects(Some("1"), None)), None);
    }

    #[test]
    fn a_checkpoint_round_trips_and_rejects_another_scope_or_torn_data() {
        let checkpoint = Checkpoint {
            namespace: "ns".into(),
            scope: 7,
        };
        let fingerprints = HashSet::from([3, u64::MAX, 0]);
        let config_map = encode("c", &checkpoint, fingerprints.clone());
        assert_eq!(decode(&config_map, 7), Ok(fingerprints));
        assert!(decode(&config_map, 8).is_err());
        let mut torn = config_map.clone();
        if let Some(bytes) = torn
            .binary_data
            .as_mut()
            .and_then(|d| d.get_mut(FINGERPRINTS_KEY))
        {
            bytes.0.pop();
        }
        assert!(decode(&torn, 7).is_err());
        assert!(decode(&ConfigMap::default(), 7).is_err());
    }

    /// A ledger of scope 1 with nothing loaded yet.
    fn new_ledger() -> Ledger {
        Ledger::new(Checkpoint {
            namespace: "ns".into(),
            scope: 1,
        })
    }

    #[test]
    fn only_a_first_reconcile_is_restored_and_a_failure_unverifies() {
        let ledger = new_ledger();
        ledger.state().restored = HashSet::from([10, 20]);
        assert!(ledger.restored("a", Some(10)));
        assert!(!ledger.restored("a", Some(10)), "only the first reconcile");
        assert!(!ledger.restored("b", Some(30)), "another fingerprint");
        assert!(!ledger.restored("c", None));
        ledger.record("b", Some(30));
        ledger.record("a", None);
        let state = ledger.state();
        let verified: HashMap<&str, u64> = state
            .reconciled
            .iter()
            .filter_map(|(name, verified)| Some((&**name, (*verified)?)))
            .collect();
        assert_eq!(verified, HashMap::from([("b", 30)]));
        assert_eq!(state.reconciled.len(), 3, "every name reconciled is remembered");
    }

    #[test]
    fn a_name_whose_objects_are_gone_is_forgotten_and_a_new_pair_of_that_name_is_not_restored() {
        let ledger = new_ledger();
        ledger.state().restored = HashSet::from([10, 20]);
        assert!(ledger.restored("a", Some(10)));
        ledger.forget("a");
        assert!(
            ledger.state().reconciled.is_empty(),
            "nothing kept of a gone pair"
        );
        assert!(
            ledger.restoring("a"),
            "a new pair of that name gets a first reconcile"
        );
        assert!(
            !ledger.restored("a", Some(11)),
            "its own objects, not the saved ones"
        );
        assert!(ledger.restored("b", Some(20)));
    }

    #[test]
    fn a_save_keeps_what_still_holds_for_names_not_reconciled_and_skips_no_change() {
        let ledger = new_ledger();
        {
            let mut state = ledger.state();
            state.restored = HashSet::from([10, 20, 30]);
            state.loaded = Some(HashSet::from([10, 20, 30]));
        }
        // "a" was reconciled (verified anew), "b" and "c" not: "b" is as saved, "c" changed.
        assert!(!ledger.restored("a", Some(11)));
        ledger.record("a", Some(11));
        let current = |name: &str| match name {
            "b" => Some(20),
            "c" => Some(31),
            _ => None,
        };
        let saved = ledger.to_save(["a", "b", "c"], current);
        assert_eq!(saved, Some(HashSet::from([11, 20])));
        // Nothing changed since the load: nothing to write.
        let unchanged = new_ledger();
        {
            let mut state = unchanged.state();
            state.restored = HashSet::from([10]);
            state.loaded = Some(HashSet::from([10]));
        }
        assert_eq!(unchanged.to_save(["a"], |_| Some(10)), None);
    }

    #[tokio::test]
    async fn this_build_is_stable_within_a_process() {
        let build = Checkpoint::this_build().await;
        assert!(build.is_ok());
        assert_eq!(build, Checkpoint::this_build().await);
    }
}
