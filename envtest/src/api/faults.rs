//! Fault injection for reliability tests: latency, injected errors, watch expiry and drops.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::watch;

use crate::meta::errors::ApiError;
use crate::storage::store::Store;

/// One injected error rule.
#[derive(Debug, Clone)]
struct Rule {
    verb: Option<String>,
    resource: Option<String>,
    error: ApiError,
    remaining: Option<usize>,
}

/// What a watch is told to do by a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WatchFault {
    /// Nothing.
    #[default]
    None,
    /// Close every watch without an event.
    Drop,
    /// Send a 410 Expired ERROR event and close.
    Expire,
}

/// The fault injection handle (`TestEnv::faults()`).
#[derive(Debug)]
pub struct Faults {
    latency: Mutex<Duration>,
    rules: Mutex<Vec<Rule>>,
    pub(crate) watch_signal: watch::Sender<(u64, WatchFault)>,
    store: Weak<Store>,
}

impl Faults {
    pub(crate) fn new(store: &Arc<Store>) -> Self {
        Self {
            latency: Mutex::new(Duration::ZERO),
            rules: Mutex::new(Vec::new()),
            watch_signal: watch::Sender::new((0, WatchFault::None)),
            store: Arc::downgrade(store),
        }
    }

    /// Adds `latency` before every request is handled (zero to disable).
    pub fn set_latency(&self, latency: Duration) {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner()) = latency;
    }

    /// The current added latency.
    pub fn latency(&self) -> Duration {
        *self.latency.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Answers requests matching `verb` (`get`, `list`, `watch`, `create`, `update`,
    /// `patch`, `delete`, `deletecollection`; `None` = any) and `resource` (plural, e.g.
    /// `configmaps`; `None` = any) with an error of HTTP `code` (reason derived from the
    /// code), `times` times (`None` = until cleared).
    pub fn fail(&self, verb: Option<&str>, resource: Option<&str>, code: u16, times: Option<usize>) {
        let reason = match code {
            400 => "BadRequest",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "NotFound",
            409 => "Conflict",
            410 => "Expired",
            422 => "Invalid",
            429 => "TooManyRequests",
            503 => "ServiceUnavailable",
            504 => "Timeout",
            _ => "InternalError",
        };
        let mut error = ApiError::new(code, reason, format!("injected fault: {reason}"));
        if code == 429 || code == 503 {
            error.details.retry_after = Some(1);
        }
        self.fail_with(verb, resource, error, times);
    }

    /// Like [`Faults::fail`] with a complete error.
    pub fn fail_with(
        &self,
        verb: Option<&str>,
        resource: Option<&str>,
        error: ApiError,
        times: Option<usize>,
    ) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).push(Rule {
            verb: verb.map(String::from),
            resource: resource.map(String::from),
            error,
            remaining: times,
        });
    }

    /// Removes every injected error and the latency.
    pub fn clear(&self) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.set_latency(Duration::ZERO);
    }

    /// Closes every open watch without an event (clients re-watch from their last rv).
    pub fn drop_watches(&self) {
        self.watch_signal.send_modify(|(n, f)| {
            *n += 1;
            *f = WatchFault::Drop;
        });
    }

    /// Forgets the event history and ends every open watch with a 410 Expired ERROR
    /// event, so clients must relist.
    pub fn expire_watches(&self) {
        if let Some(store) = self.store.upgrade() {
            store.write(|state| state.compact_all());
        }
        self.watch_signal.send_modify(|(n, f)| {
            *n += 1;
            *f = WatchFault::Expire;
        });
    }

    /// The injected error for a request, if any.
    pub(crate) fn check(&self, verb: &str, resource: &str) -> Option<ApiError> {
        let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
        let index = rules.iter().position(|r| {
            r.verb.as_deref().is_none_or(|v| v == verb) && r.resource.as_deref().is_none_or(|x| x == resource)
        })?;
        let rule = &mut rules[index];
        let error = rule.error.clone();
        if let Some(remaining) = rule.remaining.as_mut() {
            *remaining = remaining.saturating_sub(1);
            if *remaining == 0 {
                rules.remove(index);
            }
        }
        Some(error)
    }
}
