//! The sync engine, in named steps: the pair's [`watches`] fill the caches and queue
//! names, [`triggers`] queue the names other objects affect, the [`workers`] take names
//! from the queue and [`dispatch`] them — a [`reconcile`] (fetch, decide, call the hook),
//! wrapped by the restart [`checkpoint`] ([`checkpointed`]), or a migration — and hand
//! the result back to the queue.
//!
//! kube-runtime's `Controller` cannot be used as is: it drops a request whose object is
//! missing from its store, and here a name must be reconciled when only its CAPI side
//! exists. So the engine keeps kube-runtime's watchers, reflectors and scheduler and runs
//! its own client-go style queue ([`crate::runtime::queue`]).

pub mod checkpoint;
mod checkpointed;
mod dispatch;
mod follow;
pub mod observe;
mod reconcile;
mod triggers;
mod watches;
mod workers;

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::stream::{BoxStream, Stream, StreamExt};

use kube::Client;
use kube::runtime::events::Reporter;
use kube::runtime::watcher;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::engine::checkpoint::{Checkpoint, Ledger};
use crate::engine::checkpointed::Checkpointed;
use crate::engine::dispatch::{Dispatch, MigrationDispatch, SyncDispatch};
use crate::engine::follow::{Fanout, Following, Leader};
use crate::engine::observe::Observer;
use crate::engine::triggers::OwnerIndex;
pub use crate::engine::watches::WatchTap;
use crate::engine::watches::{Feeds, Taps, Watches, Writers};
use crate::hooks::SyncHooks;
use crate::hooks::context::{Caches, MalformedObjects, Namespaces, SyncContext};
use crate::hooks::migration::MigrationHooks;
use crate::pair::{CapiOnly, SyncPair};
use crate::runtime::events::Recorder;
use crate::runtime::infra::{ControllerHandle, InfraRegistration, InfraTracker};
use crate::runtime::queue::{Backoff, WorkQueue};
use crate::runtime::store::{Encoding, Writer};

/// How a controller runs.
#[derive(Clone, Debug)]
pub struct SyncConfig {
    /// The MAPI and CAPI namespaces.
    pub namespaces: Namespaces,
    /// Names reconciled at once (never the same name twice).
    pub concurrency: usize,
    /// Backoff of a name whose hook failed.
    pub backoff: Backoff,
    /// How the watches list and watch (e.g. streaming lists).
    pub watcher: watcher::Config,
    /// The `reportingInstance` of the Events the controller publishes (the pod name), so
    /// that replicas can be told apart.
    pub instance: Option<String>,
}

impl Default for SyncConfig {
    fn default() -> Self {
        Self {
            namespaces: Namespaces::default(),
            concurrency: 4,
            backoff: Backoff::default(),
            watcher: watcher::Config::default(),
            instance: None,
        }
    }
}

/// Whether a controller's caches have synced; for readiness probes and tests.
#[derive(Clone, Debug)]
pub struct Readiness(watch::Receiver<bool>);

impl Readiness {
    /// True once every cache of the controller has listed.
    pub fn is_ready(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the caches have synced; returns false if the controller stopped first.
    pub async fn wait(&mut self) -> bool {
        self.0.wait_for(|ready| *ready).await.is_ok()
    }
}

/// A controller for one synced pair `P`.
pub struct SyncController<P: SyncPair> {
    name: &'static str,
    client: Client,
    config: SyncConfig,
    infra: Option<InfraTracker>,
    observer: Option<Arc<dyn Observer>>,
    checkpoint: Option<Checkpoint>,
    /// What [`Self::reconcile_on`] was given (in a mutex only so that the controller is
    /// `Sync`; it is moved, never locked).
    triggers: Mutex<Option<BoxStream<'static, String>>>,
    ready: watch::Sender<bool>,
    caches: Caches<P>,
    source: Source<P>,
}

/// Where a controller's caches and queued names come from.
enum Source<P: SyncPair> {
    /// Its own watches, which queue names for its followers too.
    Watches {
        /// Boxed: the writers with their buffers outweigh a follower's handle.
        writers: Box<Writers<P>>,
        following: Following,
        taps: Taps<P>,
    },
    /// Its leader's ([`SyncController::follower`]).
    Leader(Leader),
}

impl<P: SyncPair> SyncController<P> {
    /// A controller that talks to the API server through `client`, named after its pair.
    pub fn new(client: Client, config: SyncConfig) -> Self {
        let (mapi_writer, capi_writer) = (
            Writer::<P::Mapi>::new(Encoding::MessagePack),
            Writer::<P::Capi>::new(Encoding::MessagePack),
        );
        let (mapi, capi) = (mapi_writer.as_reader(), capi_writer.as_reader());
        let (owner_mirrors, owner_writer) = match P::CAPI_ONLY {
            CapiOnly::MirrorIfOwnerMirrored => {
                let writer = Writer::<P::OwnerMirror>::new(Encoding::MessagePack);
                (Some(writer.as_reader()), Some(writer))
            }
            CapiOnly::Ignore => (None, None),
        };
        let writers = Writers {
            mapi: mapi_writer,
            capi: capi_writer,
            owner_mirrors: owner_writer,
        };
        Self {
            name: P::NAME,
            client,
            config,
            infra: None,
            observer: None,
            checkpoint: None,
            triggers: Mutex::default(),
            ready: watch::Sender::new(false),
            caches: Caches {
                mapi,
                capi,
                owner_mirrors,
                malformed: MalformedObjects::default(),
            },
            source: Source::Watches {
                writers: Box::new(writers),
                following: Following::default(),
                taps: Taps::default(),
            },
        }
    }

    /// Another controller of the same pair, named `name` (its logs, metrics and Events),
    /// that runs on this one's caches: it watches nothing itself, this controller's
    /// watches queue its names too. The fleet is cached once however many controllers
    /// act on it (the sync and the migration of one kind).
    ///
    /// Run it alongside this controller: it starts reconciling once this one's caches
    /// have synced and stops when this one stops. It shares this controller's client,
    /// configuration and observer as they are now (configure them first) and, once it
    /// runs, its infrastructure tracker; it keeps no restart checkpoint.
    pub fn follower(&self, name: &'static str) -> Self {
        let leader = match &self.source {
            Source::Watches { following, .. } => Leader {
                ready: self.ready.subscribe(),
                following: following.clone(),
            },
            Source::Leader(leader) => leader.clone(),
        };
        Self {
            name,
            client: self.client.clone(),
            config: self.config.clone(),
            // The leader's tracker (its own, if it was given none) comes with its
            // registration once it runs ([`Following::infra`]).
            infra: None,
            observer: self.observer.clone(),
            checkpoint: None,
            triggers: Mutex::default(),
            ready: watch::Sender::new(false),
            caches: self.caches.clone(),
            source: Source::Leader(leader),
        }
    }

    /// The controller's name: its pair's, or the one given to [`Self::follower`].
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Keeps a restart checkpoint ([`crate::engine::checkpoint`]): saved when the controller stops,
    /// loaded when it starts, so that pairs it had verified in sync and whose objects did
    /// not change meanwhile run no hook at the restart. Sync controllers with their own
    /// watches only (`run` on a [`Self::new`] controller; a follower ignores it).
    #[must_use]
    pub fn with_checkpoint(mut self, checkpoint: Checkpoint) -> Self {
        self.checkpoint = Some(checkpoint);
        self
    }

    /// The namespaces it syncs between.
    pub fn namespaces(&self) -> &Namespaces {
        &self.config.namespaces
    }

    /// Read access to the controller's caches (they fill once it runs).
    pub fn caches(&self) -> Caches<P> {
        self.caches.clone()
    }

    /// Shares `tracker`'s infrastructure watches with the other controllers given it (one
    /// watch per GroupKind for all of them). A pair with an infrastructure reference
    /// ([`SyncPair::INFRA_REF`]) watches the kinds it references either way: without a
    /// shared tracker, [`Self::run`] starts its own.
    pub fn with_infra(mut self, tracker: InfraTracker) -> Self {
        self.infra = Some(tracker);
        self
    }

    /// Reports every reconcile's outcome (metrics).
    pub fn with_observer(mut self, observer: Arc<dyn Observer>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// Hands `tap` every change the MAPI watch sees ([`WatchTap`]), so that another
    /// component can follow the MAPI objects without listing and watching them again.
    /// Taps add up: each is called, in the order added. A controller with its own watches
    /// only: a follower watches nothing, and ignores it (with a warning).
    #[must_use]
    pub fn with_mapi_tap(mut self, tap: WatchTap<P::Mapi>) -> Self {
        match &mut self.source {
            Source::Watches { taps, .. } => taps.mapi.push(tap),
            Source::Leader(_) => self.ignore_tap("MAPI"),
        }
        self
    }

    /// [`Self::with_mapi_tap`] for the CAPI watch.
    #[must_use]
    pub fn with_capi_tap(mut self, tap: WatchTap<P::Capi>) -> Self {
        match &mut self.source {
            Source::Watches { taps, .. } => taps.capi.push(tap),
            Source::Leader(_) => self.ignore_tap("CAPI"),
        }
        self
    }

    fn ignore_tap(&self, side: &str) {
        tracing::warn!(
            controller = self.name,
            "a follower watches nothing: its {side} tap sees nothing; give it to its leader"
        );
    }

    /// Also reconciles every name `names` yields, as kube-runtime's
    /// `Controller::reconcile_on` does: for what no watch of the pair sees, such as
    /// another kind's object a hook waits for ([`crate::wakeups`]). The names go to this
    /// controller's queue only, from its start to its stop; given twice, both streams
    /// are read.
    #[must_use]
    pub fn reconcile_on(mut self, names: impl Stream<Item = String> + Send + 'static) -> Self {
        let triggers = self.triggers.get_mut().unwrap_or_else(PoisonError::into_inner);
        *triggers = Some(match triggers.take() {
            Some(before) => futures::stream::select(before, names).boxed(),
            None => names.boxed(),
        });
        self
    }

    /// A handle that says when the caches have synced.
    pub fn readiness(&self) -> Readiness {
        Readiness(self.ready.subscribe())
    }

    /// Runs until `shutdown` resolves, then lets in-flight reconciles finish and returns.
    pub async fn run<H: SyncHooks<P>>(mut self, hooks: H, shutdown: impl Future<Output = ()> + Send) {
        let checkpoint = self.checkpoint.take();
        if checkpoint.is_some() && matches!(self.source, Source::Leader(_)) {
            tracing::warn!(
                controller = self.name,
                "a follower keeps no restart checkpoint; every pair is reconciled at its start"
            );
        }
        match checkpoint.filter(|_| matches!(self.source, Source::Watches { .. })) {
            Some(checkpoint) => {
                let ledger = Arc::new(Ledger::new(checkpoint));
                self.run_with(Checkpointed { hooks, ledger }, shutdown).await;
            }
            None => self.run_with(SyncDispatch(hooks), shutdown).await,
        }
    }

    /// Runs a migration controller (`docs/design.md` §9) on the same watches, queue and
    /// workers: the decision table is not consulted, `hooks` sees every name whose MAPI
    /// object exists, `Migrating` included, on changes to either side or the referenced
    /// infrastructure object.
    pub async fn run_migration<H: MigrationHooks<P>>(
        self,
        hooks: H,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        self.run_with(MigrationDispatch(hooks), shutdown).await;
    }

    /// The controller's life: fill the caches (its own watches, or its leader's), run the
    /// workers until `shutdown`, then let `dispatch` finish (save a checkpoint).
    async fn run_with<D: Dispatch<P>>(self, dispatch: D, shutdown: impl Future<Output = ()> + Send) {
        let Self {
            name,
            client,
            config,
            infra,
            observer,
            checkpoint: _,
            triggers,
            ready,
            caches,
            source,
        } = self;
        let dispatch = Arc::new(dispatch);
        // What the dispatch prepares (the last run's checkpoint) loads alongside the
        // lists; the workers wait for both.
        let preparing = tokio::spawn({
            let (dispatch, client) = (dispatch.clone(), client.clone());
            async move { dispatch.prepare(client).await }
        });
        let queue = WorkQueue::new(config.backoff);
        let triggers = triggers.into_inner().unwrap_or_else(PoisonError::into_inner);
        let triggered = triggers::queue_names(triggers, queue.clone());
        let run = Run {
            name,
            queue,
            client,
            config,
            observer,
            ready,
            caches,
            dispatch,
        };
        let run = async {
            match source {
                Source::Watches {
                    writers,
                    following,
                    taps,
                } => {
                    run.lead(*writers, taps, following, infra, preparing, shutdown)
                        .await;
                }
                Source::Leader(leader) => run.follow(leader, preparing, shutdown).await,
            }
        };
        // The triggers never end the run (they wait forever once their stream ends).
        tokio::select! {
            () = run => {}
            () = triggered => {}
        }
    }
}

/// What one run of a controller works with.
struct Run<P: SyncPair, D> {
    name: &'static str,
    queue: WorkQueue,
    client: Client,
    config: SyncConfig,
    observer: Option<Arc<dyn Observer>>,
    ready: watch::Sender<bool>,
    caches: Caches<P>,
    dispatch: Arc<D>,
}

impl<P: SyncPair, D: Dispatch<P>> Run<P, D> {
    /// A controller with its own watches: start them (tapped by `taps`; through `infra`,
    /// the infrastructure watches), wait for their lists, run the workers until
    /// `shutdown`, stop the watches.
    async fn lead(
        self,
        writers: Writers<P>,
        taps: Taps<P>,
        following: Following,
        infra: Option<InfraTracker>,
        preparing: JoinHandle<()>,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        let owners = OwnerIndex::default();
        let infra = infra.or_else(|| own_tracker::<P>(&self.client, &self.config));
        let mut registration = infra
            .as_ref()
            .filter(|_| P::INFRA_REF.is_some())
            .map(|tracker| tracker.register::<P>(self.name));
        let fanout = Fanout::new(self.queue.clone(), following.clone());
        let feeds = Feeds {
            queue: &fanout,
            caches: &self.caches,
            owners: &owners,
            infra: registration.as_ref().map(InfraRegistration::tracker),
            taps,
        };
        let mut watches = watches::start(&self.client, &self.config, writers, feeds);
        let infra_refs = registration.as_ref().map(InfraRegistration::tracker);
        following.set_infra(infra.clone(), infra_refs.clone());
        let ctx = Arc::new(self.context(infra, infra_refs));

        // Shutdown may come before the caches ever sync (an unreachable API server, a
        // missing CRD): the wait for them must not outlive it.
        let stop = CancellationToken::new();
        let run = async {
            if !until_ready(&ctx, &watches, preparing, &stop).await {
                return;
            }
            triggers::queue_infra_triggers(registration.as_mut(), &fanout);
            self.started();
            let forward = triggers::forward_infra_triggers(registration.as_mut(), &fanout, &stop);
            futures::future::join(self.work(&ctx), forward).await;
        };
        futures::future::join(run, self.stopping(shutdown, &stop)).await;
        let started = self.ready.send_replace(false);
        watches.tasks.shutdown().await;
        if started {
            self.dispatch.finish(&ctx).await;
        }
    }

    /// A follower: once the leader's caches have synced, queue every cached name and run
    /// the workers until `shutdown` or the leader's stop.
    async fn follow(
        self,
        mut leader: Leader,
        preparing: JoinHandle<()>,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        leader.following.join(self.queue.clone());
        let stop = CancellationToken::new();
        let stopped = leader.clone().stopped();
        let run = async {
            if !until_leader_ready(&mut leader, preparing, &stop).await {
                return None;
            }
            let (infra, infra_refs) = leader.following.infra();
            let ctx = Arc::new(self.context(infra, infra_refs));
            for name in follow::cached_names(&self.caches) {
                self.queue.add(name);
            }
            self.started();
            self.work(&ctx).await;
            Some(ctx)
        };
        let either = async {
            tokio::select! {
                () = shutdown => {}
                () = stopped => tracing::info!(controller = self.name, "its leader stopped"),
            }
        };
        let (ctx, ()) = futures::future::join(run, self.stopping(either, &stop)).await;
        self.ready.send_replace(false);
        if let Some(ctx) = ctx {
            self.dispatch.finish(&ctx).await;
        }
    }

    /// Marks the controller ready: its caches are synced and its workers start.
    fn started(&self) {
        self.ready.send_replace(true);
        tracing::info!(controller = self.name, "caches synced; reconciling");
    }

    /// The workers, until the queue is shut down and the in-flight reconciles returned.
    async fn work(&self, ctx: &Arc<SyncContext<P>>) {
        let observer = self.observer.as_ref();
        workers::run(
            self.name,
            self.config.concurrency,
            &self.queue,
            ctx,
            &self.dispatch,
            observer,
        )
        .await;
    }

    /// Once `shutdown` resolves: stop waiting for the caches, and stop handing out names.
    async fn stopping(&self, shutdown: impl Future<Output = ()> + Send, stop: &CancellationToken) {
        shutdown.await;
        tracing::info!(
            controller = self.name,
            "shutting down; finishing in-flight reconciles"
        );
        stop.cancel();
        self.queue.shut_down();
    }

    /// What the hooks are given.
    fn context(&self, infra: Option<InfraTracker>, infra_refs: Option<ControllerHandle>) -> SyncContext<P> {
        let reporter = Reporter {
            controller: self.name.into(),
            instance: self.config.instance.clone(),
        };
        SyncContext {
            controller: self.name,
            recorder: Recorder::new(self.client.clone(), reporter),
            client: self.client.clone(),
            namespaces: self.config.namespaces.clone(),
            caches: self.caches.clone(),
            infra,
            infra_refs,
        }
    }
}

/// A tracker of the controller's own, for a pair with an infrastructure reference that
/// was given none to share: the infrastructure watches follow from the declaration, not
/// from extra wiring.
fn own_tracker<P: SyncPair>(client: &Client, config: &SyncConfig) -> Option<InfraTracker> {
    let field = P::INFRA_REF?;
    tracing::debug!(
        controller = P::NAME,
        field,
        "watching the infrastructure kinds the CAPI objects reference"
    );
    Some(InfraTracker::new(
        client.clone(),
        watches::own_infra_config(config),
    ))
}

/// Waits for the watches' lists, the infrastructure kinds' lists and what the dispatch
/// prepares; false when stopped first.
async fn until_ready<P: SyncPair>(
    ctx: &SyncContext<P>,
    watches: &Watches,
    preparing: JoinHandle<()>,
    stop: &CancellationToken,
) -> bool {
    tokio::select! {
        () = watches.listed() => {}
        () = stop.cancelled() => return false,
    }
    // Start with the infrastructure caches too: a pair reconciled before its kind's cache
    // has listed would reach the hook without its infrastructure object, and be
    // reconciled again once the list arrives.
    if let Some(infra) = ctx.infra.as_ref().filter(|_| P::INFRA_REF.is_some()) {
        let kinds = ctx.infra_refs.as_ref().map(|r| r.kinds()).unwrap_or_default();
        tokio::select! {
            pending = infra.listed(&kinds) => if !pending.is_empty() {
                let pending: Vec<String> = pending.iter().map(ToString::to_string).collect();
                tracing::warn!(
                    controller = ctx.controller, ?pending,
                    "infrastructure kinds not listed in time; reconciling without them"
                );
            },
            () = stop.cancelled() => return false,
        }
    }
    prepared(preparing, stop).await
}

/// Waits for what the dispatch prepares; false when stopped first.
async fn prepared(preparing: JoinHandle<()>, stop: &CancellationToken) -> bool {
    tokio::select! {
        _ = preparing => true,
        () = stop.cancelled() => false,
    }
}

/// Waits for the leader's caches and what the dispatch prepares; false when stopped (or
/// the leader stopped) first.
async fn until_leader_ready(
    leader: &mut Leader,
    preparing: JoinHandle<()>,
    stop: &CancellationToken,
) -> bool {
    let synced = tokio::select! {
        synced = leader.synced() => synced,
        () = stop.cancelled() => false,
    };
    synced && prepared(preparing, stop).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::reconcile::tests::recording_client;
    use crate::testing::RecordingHooks;
    use crate::testing::fixtures::MachinePair;

    #[tokio::test]
    async fn shutdown_before_the_caches_sync_returns() {
        // Every list answers `{}`, which is no list: the caches never sync.
        let (client, _) = recording_client();
        let controller = SyncController::<MachinePair>::new(client, SyncConfig::default());
        let mut readiness = controller.readiness();
        let run = controller.run(RecordingHooks::new(), async {});
        let finished = tokio::time::timeout(std::time::Duration::from_secs(10), run).await;
        assert!(finished.is_ok(), "run() outlived its shutdown");
        assert!(!readiness.is_ready());
        assert!(
            !readiness.wait().await,
            "readiness reports the controller stopped unsynced"
        );
    }
}
