//! What a hook returns: the next action, or an error and how the engine treats it.

use std::time::Duration;

/// What the controller does next with a name after a hook returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the name again after `duration`, even if nothing changes.
    pub const fn requeue(duration: Duration) -> Self {
        Self {
            requeue_after: Some(duration),
        }
    }

    /// Reconcile the name again only when a watched object changes.
    pub const fn await_change() -> Self {
        Self { requeue_after: None }
    }

    /// The requested delay, if any.
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// The error a hook returns; the name is retried with backoff. Any error type converts
/// with `?`.
pub type HookError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a hook returns.
pub type HookResult = Result<Action, HookError>;

/// How one step of a hook ends the reconcile before the hook's last line: with an action
/// (a failure already reported, a dependency to wait for) or with an error. Steps return
/// [`Step`] so that a hook reads as its steps joined by `?`, like the behaviour table it
/// implements; [`finish`] turns the outcome back into a [`HookResult`].
#[derive(Debug)]
pub enum Stop {
    /// The reconcile is over for now: return this action.
    Done(Action),
    /// The reconcile failed: return this error.
    Failed(HookError),
}

impl<E: Into<HookError>> From<E> for Stop {
    fn from(error: E) -> Self {
        Self::Failed(error.into())
    }
}

/// What a step of a hook returns: its value, or why the hook stops here.
pub type Step<T> = Result<T, Stop>;

/// The hook's result of steps that ran to `Ok(action)` or stopped early.
pub fn finish(step: Step<Action>) -> HookResult {
    match step {
        Ok(action) | Err(Stop::Done(action)) => Ok(action),
        Err(Stop::Failed(error)) => Err(error),
    }
}

/// A write refused because the object changed since the hook read it (a stale cache):
/// retried with backoff like any error, but expected, so logged at debug level rather
/// than as a failure.
#[derive(Debug, thiserror::Error)]
#[error("{what} changed since it was read; retrying on fresh data")]
pub struct StaleRead {
    /// What changed (`finalizers of openshift-machine-api/worker-1`).
    pub what: String,
    /// The API server's answer.
    #[source]
    pub source: kube::Error,
}

/// A failure that retrying cannot fix (a spec the conversion refuses, an owner the sync
/// does not support): the engine logs it and waits for a change of the pair instead of
/// retrying with backoff (controller-runtime's `TerminalError`). Report it to the user
/// first (a condition, an Event): nothing retries it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Terminal(#[source] pub HookError);

impl Terminal {
    /// `error`, marked as not worth retrying.
    pub fn error(error: impl Into<HookError>) -> HookError {
        Box::new(Self(error.into()))
    }
}

/// A failure that a later attempt can fix, and when (a dependency not ready yet, a
/// server that asked to come back later): the engine retries after `after` instead of
/// its exponential backoff.
#[derive(Debug, thiserror::Error)]
#[error("{source} (retrying in {after:?})")]
pub struct RetryAfter {
    /// When to try again.
    pub after: Duration,
    /// What failed.
    #[source]
    pub source: HookError,
}

impl RetryAfter {
    /// `error`, to be retried after `after`.
    pub fn error(after: Duration, error: impl Into<HookError>) -> HookError {
        Box::new(Self {
            after,
            source: error.into(),
        })
    }
}

/// How the engine treats a hook's error: the first marker found in its source chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A [`Terminal`] failure: not retried until the pair changes.
    Terminal,
    /// A [`RetryAfter`]: retried after the given delay.
    RetryAfter(Duration),
    /// A [`StaleRead`] or a 409 Conflict: retried with backoff, logged at debug level.
    StaleRead,
    /// Any other error: retried with backoff.
    Failure,
}

impl ErrorKind {
    /// Classifies `error` by the markers in its source chain.
    pub fn of(error: &(dyn std::error::Error + 'static)) -> Self {
        let mut next = Some(error);
        while let Some(error) = next {
            if error.is::<Terminal>() {
                return Self::Terminal;
            }
            if let Some(retry) = error.downcast_ref::<RetryAfter>() {
                return Self::RetryAfter(retry.after);
            }
            next = error.source();
        }
        if is_stale_read(error) {
            Self::StaleRead
        } else {
            Self::Failure
        }
    }
}

/// Whether `error` only says the hook read stale data: a [`StaleRead`], or a 409 Conflict
/// from the API server (a resourceVersion precondition), anywhere in its source chain.
pub fn is_stale_read(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<StaleRead>() {
            return true;
        }
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>()
            && status.code == 409
        {
            return true;
        }
        next = error.source();
    }
    false
}

#[cfg(test)]
mod stale_read_tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(kube::core::Status::failure("m", "r").with_code(code).boxed())
    }

    #[derive(Debug, thiserror::Error)]
    #[error("wrapped")]
    struct Wrapped(#[source] kube::Error);

    #[test]
    fn conflicts_and_stale_reads_are_told_from_failures() {
        let stale: HookError = Box::new(StaleRead {
            what: "x".into(),
            source: api_error(422),
        });
        assert!(is_stale_read(stale.as_ref()));
        let conflict: HookError = Box::new(api_error(409));
        assert!(is_stale_read(conflict.as_ref()));
        let wrapped: HookError = Box::new(Wrapped(api_error(409)));
        assert!(is_stale_read(wrapped.as_ref()));
        for failure in [api_error(422), api_error(500), api_error(403)] {
            let failure: HookError = Box::new(failure);
            assert!(!is_stale_read(failure.as_ref()));
        }
        let other: HookError = "no".into();
        assert!(!is_stale_read(other.as_ref()));
    }

    #[test]
    fn terminal_and_retry_after_are_found_anywhere_in_the_chain() {
        let terminal = Terminal::error("the spec cannot be converted");
        assert_eq!(ErrorKind::of(terminal.as_ref()), ErrorKind::Terminal);
        assert_eq!(terminal.to_string(), "the spec cannot be converted");
        let delay = Duration::from_secs(7);
        let retry = RetryAfter::error(delay, api_error(429));
        assert_eq!(ErrorKind::of(retry.as_ref()), ErrorKind::RetryAfter(delay));
        let wrapped: HookError = Box::new(Outer(Terminal(api_error(409).into())));
        assert_eq!(
            ErrorKind::of(wrapped.as_ref()),
            ErrorKind::Terminal,
            "a marker wins over a conflict"
        );
        let conflict: HookError = Box::new(api_error(409));
        assert_eq!(ErrorKind::of(conflict.as_ref()), ErrorKind::StaleRead);
        let failure: HookError = Box::new(api_error(500));
        assert_eq!(ErrorKind::of(failure.as_ref()), ErrorKind::Failure);
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Terminal);
}

#[cfg(test)]
mod step_tests {
    use super::*;

    fn stops_early(wait: bool) -> Step<u32> {
        if wait {
            return Err(Stop::Done(Action::requeue(Duration::from_secs(5))));
        }
        Err("the API server is down")?
    }

    #[test]
    fn a_step_that_stops_returns_its_action_and_an_error_stays_an_error() {
        let done = finish(stops_early(true).map(|_| Action::await_change()));
        assert_eq!(done.ok(), Some(Action::requeue(Duration::from_secs(5))));
        let failed = finish(stops_early(false).map(|_| Action::await_change()));
        assert_eq!(
            failed.err().map(|e| e.to_string()).as_deref(),
            Some("the API server is down")
        );
        assert_eq!(
            finish(Ok(Action::await_change())).ok(),
            Some(Action::await_change())
        );
    }
}
