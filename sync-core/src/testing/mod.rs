//! Test support: hooks that record every call, and an observer that records every
//! reconcile, both with waits that time out instead of sleeping.

#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(feature = "testkit")]
pub mod testkit;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use crate::engine::observe::{Observer, Outcome};
use crate::hooks::context::SyncContext;
use crate::hooks::{Action, Direction, HookResult, SyncHooks, SyncObjects};
use crate::pair::SyncPair;

/// Which hook ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// `reconcile_mapi_to_capi`.
    MapiToCapi,
    /// `reconcile_capi_to_mapi`.
    CapiToMapi,
    /// `reconcile_deletion` in this direction.
    Deletion(Direction),
}

/// One recorded hook call: which hook, with which objects.
pub struct HookCall<P: SyncPair> {
    /// The hook.
    pub hook: Hook,
    /// The objects it was given.
    pub objects: SyncObjects<P>,
}

impl<P: SyncPair> Clone for HookCall<P> {
    fn clone(&self) -> Self {
        Self {
            hook: self.hook,
            objects: self.objects.clone(),
        }
    }
}

impl<P: SyncPair> fmt::Debug for HookCall<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HookCall")
            .field("hook", &self.hook)
            .field("name", &self.objects.name)
            .field("mapi", &self.objects.mapi.is_some())
            .field("capi", &self.objects.capi.is_some())
            .finish()
    }
}

/// A wait timed out; carries what was recorded, for the assertion message.
#[derive(Debug)]
pub struct TimedOut(pub String);

impl fmt::Display for TimedOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "timed out; recorded: {}", self.0)
    }
}

impl std::error::Error for TimedOut {}

/// An append-only log with a change signal, shared by the recorders below.
struct Log<T> {
    entries: Mutex<Vec<T>>,
    changed: watch::Sender<usize>,
}

impl<T: Clone + fmt::Debug> Log<T> {
    fn new() -> Self {
        Self {
            entries: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<T>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, entry: T) {
        let len = {
            let mut entries = self.lock();
            entries.push(entry);
            entries.len()
        };
        self.changed.send_replace(len);
    }

    async fn wait_for(&self, timeout: Duration, matches: impl Fn(&T) -> bool) -> Result<T, TimedOut> {
        let mut changed = self.changed.subscribe();
        let wait = async {
            loop {
                if let Some(found) = self.lock().iter().find(|e| matches(e)).cloned() {
                    return found;
                }
                if changed.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .map_err(|_| TimedOut(format!("{:?}", self.lock())))
    }
}

/// Hooks that record every call and return `Action::await_change()`.
pub struct RecordingHooks<P: SyncPair> {
    log: Arc<Log<HookCall<P>>>,
}

impl<P: SyncPair> Clone for RecordingHooks<P> {
    fn clone(&self) -> Self {
        Self {
            log: self.log.clone(),
        }
    }
}

impl<P: SyncPair> Default for RecordingHooks<P> {
    fn default() -> Self {
        Self {
            log: Arc::new(Log::new()),
        }
    }
}

impl<P: SyncPair> RecordingHooks<P> {
    /// A recorder with no calls yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<HookCall<P>> {
        self.log.lock().clone()
    }

    /// The calls for `name` so far.
    pub fn calls_for(&self, name: &str) -> Vec<HookCall<P>> {
        self.log
            .lock()
            .iter()
            .filter(|c| c.objects.name == name)
            .cloned()
            .collect()
    }

    /// Waits for a call `matches` accepts (one already made counts).
    pub async fn wait_for(
        &self,
        timeout: Duration,
        matches: impl Fn(&HookCall<P>) -> bool,
    ) -> Result<HookCall<P>, TimedOut> {
        self.log.wait_for(timeout, matches).await
    }

    fn record(&self, hook: Hook, objects: &SyncObjects<P>) -> HookResult {
        self.log.push(HookCall {
            hook,
            objects: objects.clone(),
        });
        Ok(Action::await_change())
    }
}

impl<P: SyncPair> SyncHooks<P> for RecordingHooks<P> {
    async fn reconcile_mapi_to_capi(&self, objects: &SyncObjects<P>, _: &SyncContext<P>) -> HookResult {
        self.record(Hook::MapiToCapi, objects)
    }

    async fn reconcile_capi_to_mapi(&self, objects: &SyncObjects<P>, _: &SyncContext<P>) -> HookResult {
        self.record(Hook::CapiToMapi, objects)
    }

    async fn reconcile_deletion(
        &self,
        direction: Direction,
        objects: &SyncObjects<P>,
        _: &SyncContext<P>,
    ) -> HookResult {
        self.record(Hook::Deletion(direction), objects)
    }
}

/// One recorded reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciled {
    /// The controller's name.
    pub controller: &'static str,
    /// The name reconciled.
    pub name: String,
    /// What it did.
    pub outcome: Outcome,
}

/// An [`Observer`] that records every reconcile, so a test can wait for the reconcile
/// that decided *not* to call a hook.
#[derive(Clone)]
pub struct RecordingObserver {
    log: Arc<Log<Reconciled>>,
}

impl Default for RecordingObserver {
    fn default() -> Self {
        Self {
            log: Arc::new(Log::new()),
        }
    }
}

impl RecordingObserver {
    /// A recorder with nothing recorded yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Every reconcile so far.
    pub fn reconciles(&self) -> Vec<Reconciled> {
        self.log.lock().clone()
    }

    /// Waits for a reconcile `matches` accepts (one already made counts).
    pub async fn wait_for(
        &self,
        timeout: Duration,
        matches: impl Fn(&Reconciled) -> bool,
    ) -> Result<Reconciled, TimedOut> {
        self.log.wait_for(timeout, matches).await
    }
}

impl Observer for RecordingObserver {
    fn reconciled(&self, controller: &'static str, name: &str, outcome: &Outcome, _: Duration) {
        self.log.push(Reconciled {
            controller,
            name: name.to_owned(),
            outcome: outcome.clone(),
        });
    }
}
