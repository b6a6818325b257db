//! The sync engine: watches and caches, triggers, the work queue and the workers that
//! fetch a pair, decide, and call the hooks.
//!
//! kube-runtime's `Controller` cannot be used as is: it drops a request whose object is
//! missing from its store, and here a name must be reconciled when only its CAPI side
//! exists. So the engine keeps kube-runtime's watchers, reflectors and scheduler and runs
//! its own client-go style queue ([`crate::queue`]).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::FutureExt;
use kube::api::Api;
use kube::runtime::events::Reporter;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::checkpoint::{Checkpoint, Ledger, PairVersions, Reference};
use crate::context::{Caches, MalformedObjects, Namespaces, SyncContext};
use crate::decision::{Decision, Skip, capi_owner_names, decide};
use crate::events::Recorder;
use crate::hooks::{Action, Direction, HookError, SyncHooks, SyncObjects};
use crate::infra::{InfraConfig, InfraTracker};
use crate::lenient::{Lenient, Malformed};
use crate::migration::MigrationHooks;
use crate::observe::{Observer, Outcome, SkipReason};
use crate::pair::{CapiOnly, SyncPair};
use crate::queue::{Backoff, WorkQueue};
use crate::reflect::{Listed, Touched, reflect, reflect_previewing};
use crate::store::Writer;

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
    client: Client,
    config: SyncConfig,
    infra: Option<InfraTracker>,
    observer: Option<Arc<dyn Observer>>,
    checkpoint: Option<Checkpoint>,
    ready: watch::Sender<bool>,
    caches: Caches<P>,
    writers: Writers<P>,
}

/// The write halves of the caches, handed to the watches when the controller runs.
struct Writers<P: SyncPair> {
    mapi: Writer<P::Mapi>,
    capi: Writer<P::Capi>,
    owner_mirrors: Option<Writer<P::OwnerMirror>>,
}

impl<P: SyncPair> SyncController<P> {
    /// A controller that talks to the API server through `client`.
    pub fn new(client: Client, config: SyncConfig) -> Self {
        let (mapi_writer, capi_writer) = (Writer::<P::Mapi>::default(), Writer::<P::Capi>::default());
        let (mapi, capi) = (mapi_writer.as_reader(), capi_writer.as_reader());
        let (owner_mirrors, owner_writer) = match P::CAPI_ONLY {
            CapiOnly::MirrorIfOwnerMirrored => {
                let writer = Writer::<P::OwnerMirror>::default();
                (Some(writer.as_reader()), Some(writer))
            }
            CapiOnly::Ignore => (None, None),
        };
        Self {
            client,
            config,
            infra: None,
            observer: None,
            checkpoint: None,
            ready: watch::Sender::new(false),
            caches: Caches {
                mapi,
                capi,
                owner_mirrors,
                malformed: MalformedObjects::default(),
            },
            writers: Writers {
                mapi: mapi_writer,
                capi: capi_writer,
                owner_mirrors: owner_writer,
            },
        }
    }

    /// Keeps a restart checkpoint ([`crate::checkpoint`]): saved when the controller stops,
    /// loaded when it starts, so that pairs it had verified in sync and whose objects did
    /// not change meanwhile run no hook at the restart. Sync controllers only (`run`).
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

    /// A handle that says when the caches have synced.
    pub fn readiness(&self) -> Readiness {
        Readiness(self.ready.subscribe())
    }

    /// Runs until `shutdown` resolves, then lets in-flight reconciles finish and returns.
    pub async fn run<H: SyncHooks<P>>(mut self, hooks: H, shutdown: impl Future<Output = ()> + Send) {
        let ledger = self.checkpoint.take().map(|c| Arc::new(Ledger::new(c)));
        let dispatch = SyncDispatch {
            hooks,
            ledger: ledger.clone(),
        };
        self.run_with(dispatch, ledger, shutdown).await;
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
        self.run_with(MigrationDispatch(hooks), None, shutdown).await;
    }

    async fn run_with<D: Dispatch<P>>(
        self,
        hooks: D,
        ledger: Option<Arc<Ledger>>,
        shutdown: impl Future<Output = ()> + Send,
    ) {
        let Self {
            client,
            config,
            infra,
            observer,
            checkpoint: _,
            ready,
            caches,
            writers,
        } = self;
        // The last run's checkpoint loads alongside the lists; the workers wait for both.
        let loading = ledger.clone().map(|ledger| {
            let client = client.clone();
            tokio::spawn(async move { ledger.load::<P>(client).await })
        });
        let namespaces = config.namespaces.clone();
        let queue = WorkQueue::new(config.backoff);
        let mut background = JoinSet::new();

        let owners = OwnerIndex::default();
        let (mapi_listed, capi_listed) = (Listed::default(), Listed::default());
        let owners_listed = writers.owner_mirrors.as_ref().map(|_| Listed::default());

        let malformed = caches.malformed.clone();
        background.spawn(reflect(
            "mapi",
            watcher(
                Api::<Lenient<P::Mapi>>::namespaced(client.clone(), &namespaces.mapi),
                config.watcher.clone(),
            )
            .default_backoff(),
            writers.mapi,
            mapi_listed.clone(),
            {
                let queue = queue.clone();
                let malformed = malformed.clone();
                move |touched| {
                    MalformedObjects::set(&malformed.mapi, touched.name(), malformed_of(&touched));
                    queue.add(touched.name());
                }
            },
        ));

        // The infrastructure watches follow from the declaration, not from extra wiring.
        let infra = infra.or_else(|| {
            P::INFRA_REF.map(|field| {
                tracing::debug!(
                    controller = P::NAME,
                    field,
                    "watching the infrastructure kinds the CAPI objects reference"
                );
                InfraTracker::new(client.clone(), own_infra_config(&config))
            })
        });
        let infra_registration = infra
            .as_ref()
            .filter(|_| P::INFRA_REF.is_some())
            .map(|tracker| tracker.register::<P>());
        let infra_handle = infra_registration.as_ref().map(|r| r.tracker());
        background.spawn(reflect_previewing(
            "capi",
            watcher(
                Api::<Lenient<P::Capi>>::namespaced(client.clone(), &namespaces.capi),
                config.watcher.clone(),
            )
            .default_backoff(),
            writers.capi,
            capi_listed.clone(),
            // The kinds a list references start their watches from its first page, and so
            // list alongside it rather than after it; the list's report tracks the same
            // references again, which changes nothing.
            move |object| {
                if let Some(infra) = &infra_handle {
                    let name = object.meta().name.as_deref().unwrap_or_default();
                    infra.track(name, Some(P::infra_ref(object)));
                }
            },
            {
                let queue = queue.clone();
                let owners = owners.clone();
                let infra = infra_registration.as_ref().map(|r| r.tracker());
                move |touched| {
                    let name = touched.name();
                    MalformedObjects::set(&malformed.capi, name, malformed_of(&touched));
                    let present = match &touched {
                        Touched::Present(object) => Some(*object),
                        _ => None,
                    };
                    if P::CAPI_ONLY == CapiOnly::MirrorIfOwnerMirrored {
                        owners.set(name, present.into_iter().flat_map(capi_owner_names::<P>));
                    }
                    if let Some(infra) = &infra {
                        infra.track(name, present.map(P::infra_ref));
                    }
                    queue.add(name);
                }
            },
        ));

        if let Some(writer) = writers.owner_mirrors {
            background.spawn(reflect(
                "owner-mirror",
                watcher(
                    Api::<Lenient<P::OwnerMirror>>::namespaced(client.clone(), &namespaces.mapi),
                    config.watcher.clone(),
                )
                .default_backoff(),
                writer,
                owners_listed.clone().unwrap_or_default(),
                {
                    let queue = queue.clone();
                    let owners = owners.clone();
                    move |touched| {
                        for owned in owners.owned_by(touched.name()) {
                            queue.add(owned);
                        }
                    }
                },
            ));
        }

        let mut infra_triggers = infra_registration;

        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: P::NAME.into(),
                instance: config.instance.clone(),
            },
        );
        let ctx = Arc::new(SyncContext::<P> {
            client,
            namespaces,
            recorder,
            caches: caches.clone(),
            infra,
            infra_refs: infra_triggers.as_ref().map(|r| r.tracker()),
        });
        let hooks = Arc::new(hooks);

        // Shutdown may come before the caches ever sync (an unreachable API server, a
        // missing CRD): the wait for them must not outlive it.
        let stop = CancellationToken::new();
        let run = async {
            tokio::select! {
                () = listed([Some(&mapi_listed), Some(&capi_listed), owners_listed.as_ref()]) => {}
                () = stop.cancelled() => return,
            }
            // Start with the infrastructure caches too: a pair reconciled before its
            // kind's cache has listed would reach the hook without its infrastructure
            // object, and be reconciled again once the list arrives.
            if let Some(infra) = ctx.infra.as_ref().filter(|_| P::INFRA_REF.is_some()) {
                let kinds = ctx.infra_refs.as_ref().map(|r| r.kinds()).unwrap_or_default();
                tokio::select! {
                    pending = infra.listed(&kinds) => if !pending.is_empty() {
                        let pending: Vec<String> = pending.iter().map(ToString::to_string).collect();
                        tracing::warn!(
                            controller = P::NAME, ?pending,
                            "infrastructure kinds not listed in time; reconciling without them"
                        );
                    },
                    () = stop.cancelled() => return,
                }
            }
            if let Some(loading) = loading {
                tokio::select! {
                    _ = loading => {}
                    () = stop.cancelled() => return,
                }
            }
            // What the infrastructure lists triggered is queued before the workers start
            // (the names are mostly queued already, and the queue holds each once); later
            // triggers are forwarded while they run.
            if let Some(registration) = infra_triggers.as_mut() {
                while let Some(name) = registration.try_next_trigger() {
                    queue.add(name);
                }
            }
            let forward = async {
                if let Some(registration) = infra_triggers.as_mut() {
                    while let Some(name) = tokio::select! {
                        name = registration.next_trigger() => name,
                        () = stop.cancelled() => None,
                    } {
                        queue.add(name);
                    }
                }
            };
            ready.send_replace(true);
            tracing::info!(controller = P::NAME, "caches synced; reconciling");
            let mut workers = JoinSet::new();
            for _ in 0..config.concurrency.max(1) {
                let (queue, ctx, hooks, observer) =
                    (queue.clone(), ctx.clone(), hooks.clone(), observer.clone());
                workers.spawn(async move {
                    while let Some(name) = queue.get().await {
                        let started = Instant::now();
                        let (outcome, result) = hooks.dispatch(&ctx, &name).await;
                        let elapsed = started.elapsed();
                        match result {
                            Ok(action) => {
                                queue.forget(&name);
                                if let Some(delay) = action.requeue_after() {
                                    queue.add_after(name.clone(), delay);
                                }
                            }
                            Err(error) => {
                                let retry_in = queue.add_rate_limited(&name);
                                if crate::hooks::is_stale_read(error.as_ref()) {
                                    tracing::debug!(
                                        controller = P::NAME, name, error = %error, ?retry_in,
                                        "read stale data; retrying with backoff"
                                    );
                                } else {
                                    tracing::error!(
                                        controller = P::NAME, name, error = %error, ?retry_in,
                                        "reconcile failed; retrying with backoff"
                                    );
                                }
                            }
                        }
                        if let Some(observer) = &observer {
                            observer.reconciled(P::NAME, &name, &outcome, elapsed);
                        }
                        queue.done(&name);
                    }
                });
            }
            let drained = async { while workers.join_next().await.is_some() {} };
            futures::future::join(drained, forward).await;
        };

        let stopping = async {
            shutdown.await;
            tracing::info!(
                controller = P::NAME,
                "shutting down; finishing in-flight reconciles"
            );
            stop.cancel();
            queue.shut_down();
        };
        // The worker loop ends once the queue is shut down and the in-flight reconciles
        // have returned.
        futures::future::join(run, stopping).await;
        let started = ready.send_replace(false);
        background.shutdown().await;
        if let Some(ledger) = ledger.filter(|_| started) {
            let mut names = caches.mapi.names();
            names.extend(caches.capi.names());
            let saving = ledger.save::<P>(ctx.client.clone(), names.iter().map(String::as_str), |name| {
                cached_fingerprint(&ctx, &ledger, name)
            });
            if tokio::time::timeout(CHECKPOINT_SAVE_TIMEOUT, saving)
                .await
                .is_err()
            {
                tracing::warn!(controller = P::NAME, "saving the restart checkpoint timed out");
            }
        }
    }
}

/// How long a stopping controller may take to save its checkpoint (it is only a hint for
/// the next start; the shutdown budget has better uses).
const CHECKPOINT_SAVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The configuration of a controller's own infrastructure tracker: the CAPI namespace and
/// the controller's watcher settings and Event instance.
fn own_infra_config(config: &SyncConfig) -> InfraConfig {
    let mut infra = InfraConfig::new(config.namespaces.capi.clone());
    infra.watcher = config.watcher.clone();
    infra.instance = config.instance.clone();
    infra
}

/// Until every given watch has reported its first list.
async fn listed(watches: [Option<&Listed>; 3]) {
    futures::future::join_all(watches.into_iter().flatten().map(Listed::wait)).await;
}

fn malformed_of<'a, K: Resource>(touched: &Touched<'a, K>) -> Option<&'a Malformed> {
    match touched {
        Touched::Malformed(malformed) => Some(malformed),
        _ => None,
    }
}

/// What a worker does with a name: the sync's decision table, or a migration.
trait Dispatch<P: SyncPair>: Send + Sync + 'static {
    fn dispatch(
        &self,
        ctx: &SyncContext<P>,
        name: &str,
    ) -> impl Future<Output = (Outcome, Result<Action, HookError>)> + Send;
}

/// The sync hooks, routed by the decision table, with the restart checkpoint if kept.
struct SyncDispatch<H> {
    hooks: H,
    ledger: Option<Arc<Ledger>>,
}

impl<P: SyncPair, H: SyncHooks<P>> Dispatch<P> for SyncDispatch<H> {
    async fn dispatch(&self, ctx: &SyncContext<P>, name: &str) -> (Outcome, Result<Action, HookError>) {
        reconcile(&self.hooks, ctx, name, self.ledger.as_deref()).await
    }
}

/// The migration hook, for every name whose MAPI object exists.
struct MigrationDispatch<H>(H);

impl<P: SyncPair, H: MigrationHooks<P>> Dispatch<P> for MigrationDispatch<H> {
    async fn dispatch(&self, ctx: &SyncContext<P>, name: &str) -> (Outcome, Result<Action, HookError>) {
        let span = tracing::info_span!("migrate", controller = P::NAME, object = name);
        async {
            if let Some(skip) = report_malformed(ctx, name).await {
                return (skip, Ok(Action::await_change()));
            }
            let objects = fetch(ctx, name);
            if objects.mapi.is_none() {
                return (
                    Outcome::Skipped(SkipReason::NothingToDo),
                    Ok(Action::await_change()),
                );
            }
            let result = AssertUnwindSafe(self.0.reconcile_migration(&objects, ctx))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| Err("hook panicked".into()));
            (
                Outcome::Migration {
                    failed: result.is_err(),
                },
                result,
            )
        }
        .instrument(span)
        .await
    }
}

/// Reconciles one name: fetches the pair from the caches, decides, calls the hook.
///
/// A hook that panics is reported as a failure (and retried), never a dead worker. With
/// a `ledger`, a name's first reconcile skips the sync hook when the last run verified
/// the pair at the same objects, and every reconcile records whether it verified it.
pub(crate) async fn reconcile<P: SyncPair, H: SyncHooks<P>>(
    hooks: &H,
    ctx: &SyncContext<P>,
    name: &str,
    ledger: Option<&Ledger>,
) -> (Outcome, Result<Action, HookError>) {
    // The object's name is `object`, not `name`: JSON log formatters (tracing-subscriber's
    // among them) write the span's own name under `name`, and a second `name` key would
    // hide one of the two from every JSON reader.
    let span = tracing::info_span!(
        "reconcile",
        controller = P::NAME,
        object = name,
        direction = tracing::field::Empty
    );
    async {
        if let Some(skip) = report_malformed(ctx, name).await {
            if let Some(ledger) = ledger {
                ledger.record(name, None);
            }
            return (skip, Ok(Action::await_change()));
        }
        // A first reconcile compares the cached versions with the checkpoint before
        // decoding anything: a fingerprint was saved only for a pair whose objects, at
        // exactly these versions, decided a sync that changed nothing.
        if let Some(ledger) = ledger
            && ledger.restoring(name)
            && ledger.restored(name, cached_fingerprint(ctx, ledger, name))
        {
            tracing::debug!("unchanged since the last run verified it in sync");
            return (
                Outcome::Skipped(SkipReason::Checkpointed),
                Ok(Action::await_change()),
            );
        }
        let objects = fetch(ctx, name);
        let decision = decide::<P>(objects.mapi.as_deref(), objects.capi.as_deref(), |owner| {
            ctx.caches.owner_mirrored(&ctx.namespaces, owner)
        });
        tracing::debug!(
            ?decision,
            mapi = objects.mapi.is_some(),
            capi = objects.capi.is_some(),
            "decided"
        );
        let (outcome, hook) = match &decision {
            Decision::NothingToDo => (Outcome::Skipped(SkipReason::NothingToDo), None),
            Decision::Skip(skip) => {
                report_skip(ctx, &objects, skip).await;
                (Outcome::Skipped(skip.into()), None)
            }
            Decision::Sync(direction) => (
                Outcome::Synced {
                    direction: *direction,
                    failed: false,
                },
                Some((false, *direction)),
            ),
            Decision::Deletion(direction) => (
                Outcome::Deletion {
                    direction: *direction,
                    failed: false,
                },
                Some((true, *direction)),
            ),
        };
        let fingerprint = ledger
            .filter(|_| matches!(decision, Decision::Sync(_)))
            .and_then(|ledger| ledger.fingerprint(&objects));
        let Some((deletion, direction)) = hook else {
            if let Some(ledger) = ledger {
                ledger.record(name, None);
            }
            return (outcome, Ok(Action::await_change()));
        };
        tracing::Span::current().record("direction", direction.as_str());
        let call = async {
            match (deletion, direction) {
                (true, direction) => hooks.reconcile_deletion(direction, &objects, ctx).await,
                (false, Direction::MapiToCapi) => hooks.reconcile_mapi_to_capi(&objects, ctx).await,
                (false, Direction::CapiToMapi) => hooks.reconcile_capi_to_mapi(&objects, ctx).await,
            }
        };
        let result = AssertUnwindSafe(call)
            .catch_unwind()
            .await
            .unwrap_or_else(|_| Err("hook panicked".into()));
        let result = hold_off_contest(ctx, &objects, result).await;
        if let Some(ledger) = ledger {
            let settled = result
                .as_ref()
                .is_ok_and(|action| action.requeue_after().is_none());
            ledger.record(name, fingerprint.filter(|_| settled));
        }
        (outcome.with_error(result.is_err()), result)
    }
    .instrument(span)
    .await
}

/// A hook that stopped because another writer keeps undoing its writes
/// ([`crate::toolkit::contest`]) is not a failure to retry with backoff: it is logged, a
/// Warning Event names the other manager, and the name comes back after the hold-off.
async fn hold_off_contest<P: SyncPair>(
    ctx: &SyncContext<P>,
    objects: &SyncObjects<P>,
    result: Result<Action, HookError>,
) -> Result<Action, HookError> {
    let contest = match &result {
        Err(error) => crate::toolkit::contest::find(error.as_ref()).cloned(),
        Ok(_) => None,
    };
    let Some(contest) = contest else { return result };
    tracing::warn!(error = %contest, "another writer keeps undoing the sync's writes; holding off");
    if let Some(on) = objects.event_target() {
        ctx.warn(&on, crate::toolkit::contest::REASON, contest.to_string())
            .await;
    }
    Ok(Action::requeue(contest.retry_in))
}

/// The dual fetch: both objects from the caches, and the CAPI object's infra reference.
pub(crate) fn fetch<P: SyncPair>(ctx: &SyncContext<P>, name: &str) -> SyncObjects<P> {
    let mapi = ctx.caches.mapi(&ctx.namespaces, name);
    let capi = ctx.caches.capi(&ctx.namespaces, name);
    let infra_ref = capi.as_deref().and_then(|capi| P::infra_ref(capi).transpose());
    let infra = match (&ctx.infra, &infra_ref) {
        (Some(tracker), Some(Ok(reference))) => tracker.cached(reference),
        _ => None,
    };
    SyncObjects {
        name: name.to_owned(),
        mapi,
        capi,
        infra_ref,
        infra,
    }
}

/// The fingerprint of the pair `name` as the caches hold it, from the objects' versions
/// and the tracked infrastructure reference: no object is decoded. `None` unless both
/// sides are cached. (A malformed reference is not tracked and reads as none: such a
/// pair never matches its saved fingerprint, which only costs it the skip.)
fn cached_fingerprint<P: SyncPair>(ctx: &SyncContext<P>, ledger: &Ledger, name: &str) -> Option<u64> {
    let mapi = ctx
        .caches
        .mapi
        .resource_version(Some(&ctx.namespaces.mapi), name)?;
    let capi = ctx
        .caches
        .capi
        .resource_version(Some(&ctx.namespaces.capi), name)?;
    let reference = ctx.infra_refs.as_ref().and_then(|refs| refs.reference(name));
    let infra = match (&ctx.infra, &reference) {
        (Some(tracker), Some(reference)) => tracker.cached_version(reference),
        _ => None,
    };
    Some(ledger.fingerprint_of(&PairVersions {
        name,
        mapi: &mapi,
        capi: &capi,
        infra_ref: reference.as_ref().map_or(Reference::None, Reference::Valid),
        infra: infra.as_deref(),
    }))
}

/// A name with a side that does not decode is not synced until it is fixed: the hooks
/// would otherwise act on a half-known pair. Reported as a Warning Event on the object.
async fn report_malformed<P: SyncPair>(ctx: &SyncContext<P>, name: &str) -> Option<Outcome> {
    let sides = [
        (
            MalformedObjects::get(&ctx.caches.malformed.mapi, name),
            P::Mapi::kind(&()),
            P::Mapi::api_version(&()),
        ),
        (
            MalformedObjects::get(&ctx.caches.malformed.capi, name),
            P::Capi::kind(&()),
            P::Capi::api_version(&()),
        ),
    ];
    let mut found = false;
    for (malformed, kind, api_version) in sides {
        let Some(malformed) = malformed else { continue };
        found = true;
        tracing::warn!(object = %malformed, "object does not decode; not syncing until it is fixed");
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some(api_version.into_owned()),
            kind: Some(kind.into_owned()),
            name: malformed.metadata.name.clone(),
            namespace: malformed.metadata.namespace.clone(),
            uid: malformed.metadata.uid.clone(),
            resource_version: malformed.metadata.resource_version.clone(),
            ..Default::default()
        };
        ctx.warn(
            &reference,
            "MalformedObject",
            format!("{malformed}; not syncing until it is fixed"),
        )
        .await;
    }
    found.then_some(Outcome::Skipped(SkipReason::Malformed))
}

async fn report_skip<P: SyncPair>(ctx: &SyncContext<P>, objects: &SyncObjects<P>, skip: &Skip) {
    match skip {
        Skip::UnknownAuthority(value) => {
            tracing::warn!(value = %value, "unknown status.authoritativeAPI; not syncing");
            if let Some(mapi) = &objects.mapi {
                let note = format!(
                    "{}/{}: status.authoritativeAPI {value:?} is not MachineAPI, ClusterAPI or Migrating; not syncing",
                    ctx.namespaces.mapi, objects.name
                );
                ctx.warn(&mapi.object_ref(&()), "UnknownAuthoritativeAPI", note)
                    .await;
            }
        }
        Skip::Migrating => tracing::info!("authoritativeAPI is Migrating; not syncing"),
        Skip::NoAuthority => tracing::debug!("status.authoritativeAPI is not set yet; not syncing"),
        Skip::CapiOnlyIgnored | Skip::CapiOnlyOwnerNotMirrored => {
            tracing::debug!(reason = %SkipReason::from(skip), "CAPI-only object; not syncing")
        }
    }
}

/// CAPI object names by the names of their CAPI owners, so that an owner mirror appearing
/// reconciles exactly the objects it owns.
#[derive(Clone, Default)]
struct OwnerIndex {
    inner: Arc<Mutex<OwnerIndexState>>,
}

#[derive(Default)]
struct OwnerIndexState {
    owned: HashMap<String, HashSet<String>>,
    owners_of: HashMap<String, Vec<String>>,
}

impl OwnerIndex {
    fn set<'a>(&self, name: &str, owners: impl Iterator<Item = &'a str>) {
        let owners: Vec<String> = owners.map(str::to_owned).collect();
        let mut state = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for old in state.owners_of.remove(name).unwrap_or_default() {
            if let Some(set) = state.owned.get_mut(&old) {
                set.remove(name);
                if set.is_empty() {
                    state.owned.remove(&old);
                }
            }
        }
        for owner in &owners {
            state
                .owned
                .entry(owner.clone())
                .or_default()
                .insert(name.to_owned());
        }
        if !owners.is_empty() {
            state.owners_of.insert(name.to_owned(), owners);
        }
    }

    fn owned_by(&self, owner: &str) -> Vec<String> {
        let state = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state
            .owned
            .get(owner)
            .map(|set| set.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use http::{Request, Response};
    use kube::client::Body;
    use kube::runtime::watcher::Event;

    use super::*;
    use crate::api::{capi, mapi};
    use crate::store::Store;
    use crate::test_fixtures::{CAPI_NS, MAPI_NS, MachinePair, capi_machine, mapi_machine, mapi_machine_set};
    use crate::testing::{Hook, RecordingHooks};

    /// (path, body) of every request a test client sent.
    type Requests = Arc<Mutex<Vec<(String, String)>>>;

    /// A client whose every request is recorded and answered `201 {}`.
    fn recording_client() -> (Client, Requests) {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let service = tower::service_fn(move |request: Request<Body>| {
            let seen = seen.clone();
            async move {
                let path = request.uri().path().to_owned();
                let body = request.into_body().collect_bytes().await.unwrap_or_default();
                if let Ok(mut seen) = seen.lock() {
                    seen.push((path, String::from_utf8_lossy(&body).into_owned()));
                }
                Response::builder().status(201).body(Body::from(b"{}".to_vec()))
            }
        });
        (Client::new(service, "default"), requests)
    }

    fn store_of<K: Resource + serde::Serialize>(objects: Vec<K>) -> Store<K> {
        let mut writer = Writer::<K>::default();
        for object in objects {
            writer.apply_watcher_event(&Event::Apply(object));
        }
        writer.as_reader()
    }

    fn context(
        mapi: Vec<mapi::Machine>,
        capi: Vec<capi::Machine>,
        owners: Vec<mapi::MachineSet>,
    ) -> (SyncContext<MachinePair>, Requests) {
        let (client, requests) = recording_client();
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: "machine-sync".into(),
                instance: None,
            },
        );
        let ctx = SyncContext {
            client,
            namespaces: Namespaces {
                mapi: MAPI_NS.into(),
                capi: CAPI_NS.into(),
            },
            recorder,
            caches: Caches {
                mapi: store_of(mapi),
                capi: store_of(capi),
                owner_mirrors: Some(store_of(owners)),
                malformed: MalformedObjects::default(),
            },
            infra: None,
            infra_refs: None,
        };
        (ctx, requests)
    }

    async fn run(ctx: &SyncContext<MachinePair>, name: &str) -> (RecordingHooks<MachinePair>, Outcome) {
        let hooks = RecordingHooks::new();
        let (outcome, result) = reconcile(&hooks, ctx, name, None).await;
        assert!(result.is_ok(), "{result:?}");
        (hooks, outcome)
    }

    #[tokio::test]
    async fn mapi_authoritative_calls_mapi_to_capi_with_both_cached_objects() {
        let mapi = mapi_machine("worker-a", Some("MachineAPI"), false);
        let capi = capi_machine("worker-a", None, false);
        let (ctx, _) = context(vec![mapi.clone()], vec![capi.clone()], vec![]);
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::MapiToCapi);
        assert_eq!(calls[0].objects.mapi.as_deref(), Some(&mapi));
        assert_eq!(calls[0].objects.capi.as_deref(), Some(&capi));
        assert_eq!(
            calls[0].objects.infra_ref().map(|r| r.kind.as_str()),
            Some("DevMachine")
        );
        assert_eq!(
            outcome,
            Outcome::Synced {
                direction: Direction::MapiToCapi,
                failed: false
            }
        );
    }

    #[tokio::test]
    async fn cluster_api_authoritative_calls_capi_to_mapi() {
        let (ctx, _) = context(
            vec![mapi_machine("worker-a", Some("ClusterAPI"), false)],
            vec![],
            vec![],
        );
        let (hooks, _) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::CapiToMapi);
        assert!(calls[0].objects.capi.is_none());
    }

    #[tokio::test]
    async fn capi_only_machine_of_a_mirrored_set_calls_capi_to_mapi_without_a_mapi_object() {
        let capi = capi_machine("worker-a", Some(("cluster.x-k8s.io/v1beta2", "set-a")), false);
        let (ctx, _) = context(vec![], vec![capi.clone()], vec![mapi_machine_set("set-a")]);
        let (hooks, _) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::CapiToMapi);
        assert!(calls[0].objects.mapi.is_none());
        assert_eq!(calls[0].objects.capi.as_deref(), Some(&capi));
    }

    #[tokio::test]
    async fn capi_only_machine_of_an_unmirrored_set_calls_nothing() {
        let capi = capi_machine("worker-a", Some(("cluster.x-k8s.io/v1beta2", "set-a")), false);
        let (ctx, _) = context(vec![], vec![capi], vec![mapi_machine_set("set-b")]);
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        assert!(hooks.calls().is_empty());
        assert_eq!(outcome, Outcome::Skipped(SkipReason::CapiOnlyOwnerNotMirrored));
    }

    #[tokio::test]
    async fn deletion_calls_the_deletion_hook_with_the_deleting_object() {
        let mapi = mapi_machine("worker-a", Some("MachineAPI"), true);
        let (ctx, _) = context(
            vec![mapi.clone()],
            vec![capi_machine("worker-a", None, false)],
            vec![],
        );
        let (hooks, _) = run(&ctx, "worker-a").await;
        let calls = hooks.calls();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].hook, Hook::Deletion(Direction::MapiToCapi));
        assert!(matches!(calls[0].objects.deleting(), Some(crate::hooks::Deleting::Mapi(m)) if *m == mapi));
    }

    #[tokio::test]
    async fn migrating_empty_and_absent_call_nothing() {
        let (ctx, _) = context(
            vec![
                mapi_machine("migrating", Some("Migrating"), false),
                mapi_machine("empty", None, false),
            ],
            vec![],
            vec![],
        );
        for (name, skipped) in [
            ("migrating", SkipReason::Migrating),
            ("empty", SkipReason::NoAuthority),
            ("absent", SkipReason::NothingToDo),
        ] {
            let (hooks, outcome) = run(&ctx, name).await;
            assert!(hooks.calls().is_empty(), "{name}");
            assert_eq!(outcome, Outcome::Skipped(skipped));
        }
    }

    #[tokio::test]
    async fn unknown_authority_calls_nothing_and_publishes_a_warning_event() {
        let (ctx, requests) = context(
            vec![mapi_machine("worker-a", Some("Kubelet"), false)],
            vec![],
            vec![],
        );
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        assert!(hooks.calls().is_empty());
        assert_eq!(outcome, Outcome::Skipped(SkipReason::UnknownAuthority));
        let requests = requests.lock().map(|r| r.clone()).unwrap_or_default();
        let event = requests.iter().find(|(path, _)| path.ends_with("/events"));
        let Some((path, body)) = event else {
            panic!("no event published: {requests:?}")
        };
        assert!(path.contains(MAPI_NS), "{path}");
        assert!(body.contains("\"type\":\"Warning\""), "{body}");
        assert!(body.contains("UnknownAuthoritativeAPI"), "{body}");
        assert!(body.contains("Kubelet"), "{body}");
    }

    #[tokio::test]
    async fn a_panicking_hook_is_a_failure_not_a_dead_worker() {
        struct Panics;
        impl SyncHooks<MachinePair> for Panics {
            async fn reconcile_mapi_to_capi(
                &self,
                _: &SyncObjects<MachinePair>,
                _: &SyncContext<MachinePair>,
            ) -> crate::HookResult {
                panic!("boom")
            }
        }
        let (ctx, _) = context(
            vec![mapi_machine("worker-a", Some("MachineAPI"), false)],
            vec![],
            vec![],
        );
        let (outcome, result) = reconcile(&Panics, &ctx, "worker-a", None).await;
        assert!(result.is_err());
        assert_eq!(
            outcome,
            Outcome::Synced {
                direction: Direction::MapiToCapi,
                failed: true
            }
        );
    }

    #[tokio::test]
    async fn a_malformed_side_is_reported_and_not_synced() {
        let (ctx, requests) = context(
            vec![mapi_machine("worker-a", Some("MachineAPI"), false)],
            vec![],
            vec![],
        );
        let malformed = Malformed {
            metadata: crate::test_fixtures::meta("worker-a", CAPI_NS, false),
            error: "spec.clusterName: invalid type: integer `5`, expected a string".into(),
        };
        MalformedObjects::set(&ctx.caches.malformed.capi, "worker-a", Some(&malformed));
        let (hooks, outcome) = run(&ctx, "worker-a").await;
        assert!(hooks.calls().is_empty());
        assert_eq!(outcome, Outcome::Skipped(SkipReason::Malformed));
        let requests = requests.lock().map(|r| r.clone()).unwrap_or_default();
        let Some((path, body)) = requests.iter().find(|(path, _)| path.ends_with("/events")) else {
            panic!("no event: {requests:?}")
        };
        assert!(path.contains(CAPI_NS), "{path}");
        assert!(
            body.contains("MalformedObject") && body.contains("spec.clusterName"),
            "{body}"
        );

        // Fixed: synced again.
        MalformedObjects::set(&ctx.caches.malformed.capi, "worker-a", None);
        let (hooks, _) = run(&ctx, "worker-a").await;
        assert_eq!(hooks.calls().len(), 1);
    }

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

    #[test]
    fn owner_index_follows_changes_of_ownership() {
        let index = OwnerIndex::default();
        index.set("m1", ["set-a"].into_iter());
        index.set("m2", ["set-a"].into_iter());
        let mut owned = index.owned_by("set-a");
        owned.sort();
        assert_eq!(owned, ["m1", "m2"]);
        index.set("m1", ["set-b"].into_iter());
        assert_eq!(index.owned_by("set-a"), ["m2"]);
        assert_eq!(index.owned_by("set-b"), ["m1"]);
        index.set("m2", std::iter::empty());
        assert!(index.owned_by("set-a").is_empty());
    }
}
