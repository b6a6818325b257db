//! Hooks that measure: they count the distinct names reconciled and, when asked, log when
//! each hook call happened and which resourceVersions it saw. The same [`Probe`] serves
//! the macro-generated controllers ([`sync_core::SyncHooks`]) and the hand-written ones
//! ([`crate::handwritten::Hooks`]), so both do identical work per hook call.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
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

#[derive(Default)]
struct Inner {
    names: Mutex<HashSet<String>>,
    distinct: AtomicUsize,
    calls: AtomicU64,
    goal: Mutex<Option<(usize, Option<Instant>)>>,
    recording: AtomicBool,
    log: Mutex<HashMap<String, Vec<Seen>>>,
    changed: Notify,
}

/// Counts and (optionally) logs hook calls; cheap to clone.
#[derive(Clone, Default)]
pub struct Probe {
    inner: Arc<Inner>,
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
        let new = {
            let mut names = lock(&inner.names);
            !names.contains(name) && names.insert(name.to_owned())
        };
        let mut notify = false;
        if new {
            let distinct = inner.distinct.fetch_add(1, Ordering::AcqRel) + 1;
            let mut goal = lock(&inner.goal);
            if let Some((target, reached @ None)) = &mut *goal
                && distinct >= *target
            {
                *reached = Some(at);
                notify = true;
            }
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
        self.inner.distinct.load(Ordering::Acquire)
    }

    /// Hook calls so far.
    pub fn calls(&self) -> u64 {
        self.inner.calls.load(Ordering::Relaxed)
    }

    /// Sets the number of distinct names [`Self::wait_distinct`] waits for.
    pub fn expect_distinct(&self, target: usize) {
        let reached = (self.distinct() >= target).then(Instant::now);
        *lock(&self.inner.goal) = Some((target, reached));
    }

    /// Waits until the goal of [`Self::expect_distinct`] is reached; returns when the hook
    /// call that reached it happened.
    pub async fn wait_distinct(&self, timeout: Duration) -> Result<Instant, TimedOut> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.inner.changed.notified();
            futures::pin_mut!(changed);
            changed.as_mut().enable();
            match *lock(&self.inner.goal) {
                Some((_, Some(at))) => return Ok(at),
                None => return Err(TimedOut(timeout, "no goal set".into())),
                _ => {}
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let goal = lock(&self.inner.goal).map_or(0, |(target, _)| target);
                return Err(TimedOut(
                    timeout,
                    format!("{goal} distinct names (saw {})", self.distinct()),
                ));
            }
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
