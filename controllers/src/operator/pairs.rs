//! The pairs the operator runs. Each is one declaration (`#[sync_controller]`, its
//! [`MigratingPair`] and [`OperatorPair`] impls) and one line in [`run`]'s list; for each,
//! the operator runs its sync controller and, as a follower on the same caches, its
//! migration controller ([`sync_core::SyncController::follower`]).
//!
//! [`run`]: super::run

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube::Client;
use sync_core::observe::Observer;
use sync_core::{
    Checkpoint, InfraTracker, Readiness, Store, Stubs, SyncConfig, SyncController, SyncHooks, SyncPair,
};
use tokio_util::sync::CancellationToken;

use super::metrics::CacheCount;
use crate::machine::MachineSync;
use crate::machine_set::MachineSetSync;
use crate::migration::{MigratingPair, MigrationConfig, MigrationMetrics, Migrator};
use crate::sync::PlatformHooks;
use crate::sync::owners::{MirroredSets, SetWaits};
use crate::user_data::{References, Referrer, Tap};

/// A pair the operator syncs and migrates; its MAPI objects name user-data Secrets, which
/// the copier learns from its sync controller's MAPI watch.
pub trait OperatorPair: MigratingPair<Mapi: Referrer> + Sized {
    /// The pair's sync hooks: the platform's, with what they read from the other pairs.
    fn sync_hooks(platform: PlatformHooks, links: &Links) -> impl SyncHooks<Self>;

    /// Links the pair's sync controller to the other pairs' (a tap on its watches, names
    /// it reconciles on); by default, nothing.
    fn link(sync: SyncController<Self>, _links: &Links) -> SyncController<Self> {
        sync
    }
}

impl OperatorPair for MachineSync {
    /// Machines read the CAPI MachineSets that own them from the MachineSet sync's cache,
    /// and wait there for a set not mirrored yet.
    fn sync_hooks(platform: PlatformHooks, links: &Links) -> impl SyncHooks<Self> {
        match links.mirrored_sets() {
            Some(sets) => platform.with_capi_sets(sets),
            None => platform,
        }
    }

    /// A Machine waiting for its CAPI MachineSet is reconciled when the MachineSet sync's
    /// watch reports the set, and waits no more once deleted.
    fn link(sync: SyncController<Self>, links: &Links) -> SyncController<Self> {
        links.set_waits.machines(sync)
    }
}

impl OperatorPair for MachineSetSync {
    fn sync_hooks(platform: PlatformHooks, _: &Links) -> impl SyncHooks<Self> {
        platform
    }

    /// Its CAPI watch wakes the Machines waiting for a set it reports.
    fn link(sync: SyncController<Self>, links: &Links) -> SyncController<Self> {
        links.set_waits.sets(sync)
    }
}

/// What the pairs read of each other: every pair's CAPI cache by kind, and the Machines
/// waiting for a CAPI MachineSet (parked by the Machine hooks, woken by the MachineSet
/// sync's watch, reconciled by the Machine sync).
pub struct Links {
    stores: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
    set_waits: SetWaits,
}

impl Links {
    fn new() -> Self {
        Self {
            stores: HashMap::new(),
            set_waits: SetWaits::default(),
        }
    }

    /// The cache of CAPI kind `K`, if a pair of the list syncs it.
    pub fn get<K: 'static>(&self) -> Option<Store<K>> {
        self.stores
            .get(&TypeId::of::<K>())?
            .downcast_ref::<Store<K>>()
            .cloned()
    }

    /// The MachineSet sync's CAPI MachineSets and the Machines waiting there, if the list
    /// syncs MachineSets.
    pub fn mirrored_sets(&self) -> Option<MirroredSets> {
        Some(self.set_waits.mirrored(self.get()?))
    }

    fn insert<K: Send + Sync + 'static>(&mut self, store: Store<K>) {
        self.stores.insert(TypeId::of::<K>(), Box::new(store));
    }
}

/// What every pair's controllers run with.
#[derive(Clone)]
pub struct Shared {
    /// The client.
    pub client: Client,
    /// The controllers' configuration.
    pub config: SyncConfig,
    /// The infrastructure watches all pairs share.
    pub infra: InfraTracker,
    /// Where every reconcile is reported.
    pub observer: Arc<dyn Observer>,
}

/// How the controllers run this time.
#[derive(Clone)]
pub enum Mode {
    /// The platform cannot be synced: the sync controllers watch, on the stub hooks, and
    /// nothing migrates.
    Watch,
    /// Sync and migrate.
    Sync(Arc<Syncing>),
}

/// What syncing and migrating take.
pub struct Syncing {
    /// The platform's hooks.
    pub hooks: PlatformHooks,
    /// The sync controllers' restart checkpoint, if kept.
    pub checkpoint: Option<Checkpoint>,
    /// The migration controllers' settings.
    pub migration: MigrationConfig,
    /// Where migrations are counted, if anywhere.
    pub metrics: Option<Arc<dyn MigrationMetrics>>,
}

/// The operator's pairs, built.
pub struct Pairs {
    pairs: Vec<Box<dyn Built>>,
    links: Arc<Links>,
}

impl Pairs {
    /// The pairs the operator runs: one line each. With them, the user-data Secrets
    /// their MAPI objects name, as their sync controllers' watches see them, for the
    /// copier (dropped, the watches stop reading them).
    pub fn build(shared: &Shared) -> (Self, References) {
        PairsBuilder::new(shared)
            .pair::<MachineSync>()
            .pair::<MachineSetSync>()
            .build()
    }

    /// The sync controllers' names and readiness.
    pub fn sync_readiness(&self) -> Vec<(&'static str, Readiness)> {
        self.pairs.iter().map(|pair| pair.sync_readiness()).collect()
    }

    /// The migration controllers' names and readiness.
    pub fn migration_readiness(&self) -> Vec<(&'static str, Readiness)> {
        self.pairs.iter().map(|pair| pair.migration_readiness()).collect()
    }

    /// Every cache, for `sync_cache_objects` (each cached once, by its sync controller).
    pub fn caches(&self) -> Vec<CacheCount> {
        self.pairs.iter().flat_map(|pair| pair.caches()).collect()
    }

    /// The migration controllers' names in migration metrics.
    pub fn migration_controllers(&self) -> Vec<&'static str> {
        self.pairs
            .iter()
            .map(|pair| pair.migration_controller())
            .collect()
    }

    /// Runs every pair's controllers in `mode` until `stop`.
    pub async fn run(self, mode: Mode, stop: CancellationToken) {
        let links = self.links;
        let runs = self
            .pairs
            .into_iter()
            .map(|pair| pair.run(mode.clone(), links.clone(), stop.clone()));
        futures::future::join_all(runs).await;
    }
}

/// Builds the list, one pair at a time.
struct PairsBuilder<'a> {
    shared: &'a Shared,
    pairs: Vec<Box<dyn Built>>,
    links: Links,
    tap: Tap,
    references: References,
}

impl<'a> PairsBuilder<'a> {
    fn new(shared: &'a Shared) -> Self {
        let (tap, references) = Tap::channel();
        Self {
            shared,
            pairs: Vec::new(),
            links: Links::new(),
            tap,
            references,
        }
    }

    /// Adds pair `P`: its sync controller, and its migration controller on the same caches.
    fn pair<P: OperatorPair>(mut self) -> Self {
        let Shared {
            client,
            config,
            infra,
            observer,
        } = self.shared.clone();
        let sync = SyncController::<P>::new(client, config)
            .with_infra(infra)
            .with_observer(observer);
        let sync = P::link(self.tap.install(sync), &self.links);
        let migration = sync.follower(P::MIGRATION);
        self.links.insert(sync.caches().capi);
        self.pairs.push(Box::new(PairControllers { sync, migration }));
        self
    }

    fn build(self) -> (Pairs, References) {
        let pairs = Pairs {
            pairs: self.pairs,
            links: Arc::new(self.links),
        };
        (pairs, self.references)
    }
}

/// One pair's controllers.
struct PairControllers<P: SyncPair> {
    sync: SyncController<P>,
    migration: SyncController<P>,
}

/// A pair's controllers, whatever its kinds.
trait Built: Send + Sync {
    fn sync_readiness(&self) -> (&'static str, Readiness);
    fn migration_readiness(&self) -> (&'static str, Readiness);
    fn caches(&self) -> Vec<CacheCount>;
    fn migration_controller(&self) -> &'static str;
    fn run(self: Box<Self>, mode: Mode, links: Arc<Links>, stop: CancellationToken)
    -> BoxFuture<'static, ()>;
}

impl<P: OperatorPair> Built for PairControllers<P> {
    fn sync_readiness(&self) -> (&'static str, Readiness) {
        (self.sync.name(), self.sync.readiness())
    }

    fn migration_readiness(&self) -> (&'static str, Readiness) {
        (self.migration.name(), self.migration.readiness())
    }

    fn caches(&self) -> Vec<CacheCount> {
        CacheCount::of(&self.sync.caches())
    }

    fn migration_controller(&self) -> &'static str {
        P::CONTROLLER
    }

    fn run(
        self: Box<Self>,
        mode: Mode,
        links: Arc<Links>,
        stop: CancellationToken,
    ) -> BoxFuture<'static, ()> {
        let Self { sync, migration } = *self;
        Box::pin(async move {
            let Mode::Sync(syncing) = mode else {
                return sync.run(Stubs, stop.cancelled_owned()).await;
            };
            let sync = match &syncing.checkpoint {
                Some(checkpoint) => sync.with_checkpoint(checkpoint.clone()),
                None => sync,
            };
            let hooks = P::sync_hooks(syncing.hooks.clone(), &links);
            let migrator = Migrator::<P>::new(syncing.migration.clone());
            let migrator = match &syncing.metrics {
                Some(metrics) => migrator.with_metrics(metrics.clone()),
                None => migrator,
            };
            futures::future::join(
                sync.run(hooks, stop.clone().cancelled_owned()),
                migration.run_migration(migrator, stop.cancelled_owned()),
            )
            .await;
        })
    }
}

#[cfg(test)]
mod tests {
    use sync_core::api::{capi, mapi};
    use sync_core::testing::RecordingObserver;
    use sync_core::{InfraConfig, Namespaces};

    use super::*;

    type TestResult = Result<(), Box<dyn std::error::Error>>;

    /// Nothing listens there: building the controllers sends no request.
    fn shared() -> Result<Shared, Box<dyn std::error::Error>> {
        let client = Client::try_from(kube::Config::new("http://127.0.0.1:9".parse()?))?;
        let namespaces = Namespaces::default();
        Ok(Shared {
            infra: InfraTracker::new(client.clone(), InfraConfig::new(namespaces.capi.clone())),
            config: SyncConfig {
                namespaces,
                ..SyncConfig::default()
            },
            client,
            observer: Arc::new(RecordingObserver::new()),
        })
    }

    #[tokio::test]
    async fn each_pair_runs_a_sync_and_a_migration_controller_on_one_set_of_caches() -> TestResult {
        let (pairs, _) = Pairs::build(&shared()?);
        let names = |controllers: Vec<(&'static str, Readiness)>| -> Vec<&'static str> {
            controllers.into_iter().map(|(name, _)| name).collect()
        };
        assert_eq!(
            names(pairs.sync_readiness()),
            ["machine-sync", "machine-set-sync"]
        );
        assert_eq!(
            names(pairs.migration_readiness()),
            ["machine-migration", "machineset-migration"]
        );
        assert_eq!(
            pairs.migration_controllers(),
            ["MachineMigrationController", "MachineSetMigrationController"]
        );
        // Cached once: the Machines' MAPI, CAPI and owner-mirror caches and the
        // MachineSets' MAPI and CAPI caches, all the sync controllers'.
        let caches: Vec<(&str, &str)> = pairs.caches().iter().map(CacheCount::labels).collect();
        assert_eq!(
            caches,
            [
                ("machine-sync", "mapi"),
                ("machine-sync", "capi"),
                ("machine-sync", "owner_mirror"),
                ("machine-set-sync", "mapi"),
                ("machine-set-sync", "capi"),
            ]
        );
        // The Machine hooks find the MachineSet sync's CAPI cache and wait there; the
        // Machine sync took the names its watch wakes.
        assert!(pairs.links.get::<capi::MachineSet>().is_some());
        assert!(pairs.links.mirrored_sets().is_some());
        assert!(
            pairs.links.set_waits.taken(),
            "the Machine sync reconciles on them"
        );
        assert!(
            pairs.links.get::<mapi::MachineSet>().is_none(),
            "MAPI caches are not shared by kind"
        );
        Ok(())
    }
}
