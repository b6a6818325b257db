//! Hooks that measure: they count the distinct names reconciled and, when asked, log when
//! each hook call happened and which resourceVersions it saw. The same [`Probe`] serves
//! the macro-generated controllers ([`sync_core::SyncHooks`]) and the hand-written ones
//! ([`crate::handwritten::Hooks`]), so both do identical work per hook call.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use kube::Resource;
use sync_core::{Action, Direction, HookResult, SyncContext, SyncHooks, SyncObjects, SyncPair};
use tokio::sync::Notify;

use crate::handwritten;

/// Which object of a pair a resourceVersion belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The MAPI object.
    Mapi,
    /// The CAPI object.
    Capi,
    /// The infrastructure object the CAPI object references.
    Infra,
}

/// One logged hook call.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The MAPI object's resourceVersion, if it was given one.
    pub mapi: Option<String>,
    /// The CAPI object's resourceVersion.
    pub capi: Option<String>,
    /// The infrastructure object's resourceVersion.
    pub infra: Option<String>,
    /// When the hook was called.
    pub at: Instant,
}

impl Seen {
    fn version(&self, side: Side) -> Option<&str> {
        match side {
            Side::Mapi => self.mapi.as_deref(),
            Side::Capi => self.capi.as_deref(),
            Side::Infra => self.infra.as_deref(),
        }
    }
}

/// The distinct names of some hook calls, and when a goal count was reached.
#[derive(Default)]
struct Distinct {
    names: Mutex<HashSet<String>>,
    count: AtomicUsize,
    goal: Mutex<Option<(usize, Option<Instant>)>>,
}

impl Distinct {
    /// Counts `name`; true when this reached the goal.
    fn add(&self, name: &str, at: Instant) -> bool {
        let new = {
            let mut names = lock(&self.names);
            !names.contains(name) && names.insert(name.to_owned())
        };
        if !new {
            return false;
        }
        let count = self.count.fetch_add(1, Ordering::AcqRel) + 1;
        let mut goal = lock(&self.goal);
        if let Some((target, reached @ None)) = &mut *goal
            && count >= *target
        {
            *reached = Some(at);
            return true;
        }
        false
    }

    fn expect(&self, target: usize) {
        let reached = (self.count.load(Ordering::Acquire) >= target).then(Instant::now);
        *lock(&self.goal) = Some((target, reached));
    }
}

#[derive(Default)]
struct Inner {
    /// Every hook call's name.
    any: Distinct,
    /// The names of hook calls that were given the infrastructure object.
    with_infra: Distinct,
    calls: AtomicU64,
    /// When the last hook call came, in nanoseconds since [`epoch`].
    last_call: AtomicU64,
    recording: AtomicBool,
    log: Mutex<HashMap<String, Vec<Seen>>>,
    changed: Notify,
}

/// Counts and (optionally) logs hook calls; cheap to clone.
#[derive(Clone, Default)]
pub struct Probe {
    inner: Arc<Inner>,
}

/// The instant hook-call times are counted from.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A wait that timed out.
#[derive(Debug, thiserror::Error)]
#[error("timed out after {0:?} waiting for {1}")]
pub struct TimedOut(pub Duration, pub String);

impl Probe {
    /// A probe with nothing recorded.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a hook call for `name` that saw these resourceVersions.
    pub fn record(&self, name: &str, mapi: Option<&str>, capi: Option<&str>, infra: Option<&str>) {
        let at = Instant::now();
        let inner = &*self.inner;
        inner.calls.fetch_add(1, Ordering::Relaxed);
        let since = u64::try_from(at.saturating_duration_since(epoch()).as_nanos()).unwrap_or(u64::MAX);
        inner.last_call.fetch_max(since, Ordering::Relaxed);
        let mut notify = inner.any.add(name, at);
        if infra.is_some() {
            notify |= inner.with_infra.add(name, at);
        }
        if inner.recording.load(Ordering::Acquire) {
            let seen = Seen {
                mapi: mapi.map(str::to_owned),
                capi: capi.map(str::to_owned),
                infra: infra.map(str::to_owned),
                at,
            };
            lock(&inner.log).entry(name.to_owned()).or_default().push(seen);
            notify = true;
        }
        if notify {
            inner.changed.notify_waiters();
        }
    }

    /// Distinct names seen so far.
    pub fn distinct(&self) -> usize {
        self.inner.any.count.load(Ordering::Acquire)
    }

    /// Distinct names seen so far by hook calls given their infrastructure object.
    pub fn distinct_with_infra(&self) -> usize {
        self.inner.with_infra.count.load(Ordering::Acquire)
    }

    /// Hook calls so far.
    pub fn calls(&self) -> u64 {
        self.inner.calls.load(Ordering::Relaxed)
    }

    /// Sets the number of distinct names [`Self::wait_distinct`] and
    /// [`Self::wait_distinct_with_infra`] wait for.
    pub fn expect_distinct(&self, target: usize) {
        self.inner.any.expect(target);
        self.inner.with_infra.expect(target);
    }

    /// Waits until the goal of [`Self::expect_distinct`] is reached; returns when the hook
    /// call that reached it happened.
    pub async fn wait_distinct(&self, timeout: Duration) -> Result<Instant, TimedOut> {
        self.wait_goal(&self.inner.any, timeout, "distinct names").await
    }

    /// Like [`Self::wait_distinct`], counting only hook calls that were given the
    /// infrastructure object.
    pub async fn wait_distinct_with_infra(&self, timeout: Duration) -> Result<Instant, TimedOut> {
        self.wait_goal(
            &self.inner.with_infra,
            timeout,
            "distinct names with their infrastructure object",
        )
        .await
    }

    async fn wait_goal(
        &self,
        distinct: &Distinct,
        timeout: Duration,
        what: &str,
    ) -> Result<Instant, TimedOut> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.inner.changed.notified();
            futures::pin_mut!(changed);
            changed.as_mut().enable();
            match *lock(&distinct.goal) {
                Some((_, Some(at))) => return Ok(at),
                None => return Err(TimedOut(timeout, "no goal set".into())),
                _ => {}
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let goal = lock(&distinct.goal).map_or(0, |(target, _)| target);
                let seen = distinct.count.load(Ordering::Acquire);
                return Err(TimedOut(timeout, format!("{goal} {what} (saw {seen})")));
            }
        }
    }

    /// Waits until no hook call has come for `quiet` (or `timeout` passed); returns the
    /// calls so far and when the last one came.
    pub async fn wait_quiet(&self, quiet: Duration, timeout: Duration) -> (u64, Instant) {
        let started = Instant::now();
        loop {
            let last = epoch() + Duration::from_nanos(self.inner.last_call.load(Ordering::Relaxed));
            if last.elapsed() >= quiet || started.elapsed() >= timeout {
                return (self.calls(), last);
            }
            tokio::time::sleep(quiet / 10).await;
        }
    }

    /// Starts (or stops) logging every hook call with its resourceVersions.
    pub fn set_recording(&self, on: bool) {
        self.inner.recording.store(on, Ordering::Release);
        if !on {
            lock(&self.inner.log).clear();
        }
    }

    /// Whether any logged hook call was for `name`.
    pub fn seen_any(&self, name: &str) -> bool {
        lock(&self.inner.log).get(name).is_some_and(|v| !v.is_empty())
    }

    /// When a hook call for `name` first saw `version` on `side`, if one did.
    pub fn seen(&self, name: &str, side: Side, version: &str) -> Option<Instant> {
        lock(&self.inner.log)
            .get(name)?
            .iter()
            .find(|seen| seen.version(side) == Some(version))
            .map(|seen| seen.at)
    }

    /// Waits for a hook call for `name` that saw `version` on `side` (one already made
    /// counts); returns when it happened. Needs [`Self::set_recording`].
    pub async fn wait_seen(
        &self,
        name: &str,
        side: Side,
        version: &str,
        timeout: Duration,
    ) -> Result<Instant, TimedOut> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.inner.changed.notified();
            futures::pin_mut!(changed);
            changed.as_mut().enable();
            if let Some(at) = self.seen(name, side, version) {
                return Ok(at);
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(TimedOut(
                    timeout,
                    format!("a hook call for {name} seeing {side:?} resourceVersion {version}"),
                ));
            }
        }
    }
}

fn version<K: Resource>(object: Option<&K>) -> Option<&str> {
    object.and_then(|o| o.meta().resource_version.as_deref())
}

/// The probe as the hooks of a macro-generated controller.
#[derive(Clone)]
pub struct MacroHooks(pub Probe);

impl MacroHooks {
    fn record<P: SyncPair>(&self, objects: &SyncObjects<P>) -> HookResult {
        self.0.record(
            &objects.name,
            version(objects.mapi.as_deref()),
            version(objects.capi.as_deref()),
            objects
                .infra
                .as_deref()
                .and_then(|i| i.metadata.resource_version.as_deref()),
        );
        Ok(Action::await_change())
    }
}

impl<P: SyncPair> SyncHooks<P> for MacroHooks {
    async fn reconcile_mapi_to_capi(&self, objects: &SyncObjects<P>, _: &SyncContext<P>) -> HookResult {
        self.record(objects)
    }

    async fn reconcile_capi_to_mapi(&self, objects: &SyncObjects<P>, _: &SyncContext<P>) -> HookResult {
        self.record(objects)
    }

    async fn reconcile_deletion(
        &self,
        _: Direction,
        objects: &SyncObjects<P>,
        _: &SyncContext<P>,
    ) -> HookResult {
        self.record(objects)
    }
}

/// The probe as the hooks of a hand-written controller.
#[derive(Clone)]
pub struct HandHooks(pub Probe);

impl HandHooks {
    fn record<M: Resource, C: Resource>(
        &self,
        pair: &handwritten::Fetched<M, C>,
    ) -> Result<(), handwritten::HookError> {
        self.0.record(
            &pair.name,
            version(pair.mapi.as_deref()),
            version(pair.capi.as_deref()),
            pair.infra
                .as_deref()
                .and_then(|i| i.metadata.resource_version.as_deref()),
        );
        Ok(())
    }
}

impl<M, C> handwritten::Hooks<M, C> for HandHooks
where
    M: Resource + Send + Sync + 'static,
    C: Resource + Send + Sync + 'static,
{
    async fn mapi_to_capi(&self, pair: &handwritten::Fetched<M, C>) -> Result<(), handwritten::HookError> {
        self.record(pair)
    }

    async fn capi_to_mapi(&self, pair: &handwritten::Fetched<M, C>) -> Result<(), handwritten::HookError> {
        self.record(pair)
    }

    async fn deletion(
        &self,
        _: handwritten::Direction,
        pair: &handwritten::Fetched<M, C>,
    ) -> Result<(), handwritten::HookError> {
        self.record(pair)
    }
}
