//! Reconcile outcomes, reported to an [`Observer`] (the operator's metrics).

use std::time::Duration;

use crate::hooks::Direction;

/// What one reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No hook ran, for this reason (`nothing_to_do`, `migrating`, …).
    Skipped(&'static str),
    /// A sync hook ran; `failed` when it returned an error.
    Synced {
        /// The hook's direction.
        direction: Direction,
        /// The hook returned an error (or panicked).
        failed: bool,
    },
    /// The deletion hook ran; `failed` when it returned an error.
    Deletion {
        /// The hook's direction.
        direction: Direction,
        /// The hook returned an error (or panicked).
        failed: bool,
    },
}

impl Outcome {
    /// The direction label: `mapi_to_capi`, `capi_to_mapi` or `none`.
    pub fn direction(&self) -> &'static str {
        match self {
            Self::Skipped(_) => "none",
            Self::Synced { direction, .. } | Self::Deletion { direction, .. } => direction.as_str(),
        }
    }

    /// The result label: `success`, `error` or `skipped`.
    pub fn result(&self) -> &'static str {
        match self {
            Self::Skipped(_) => "skipped",
            Self::Synced { failed: true, .. } | Self::Deletion { failed: true, .. } => "error",
            Self::Synced { .. } | Self::Deletion { .. } => "success",
        }
    }

    pub(crate) fn with_error(self, error: bool) -> Self {
        match self {
            Self::Synced { direction, .. } => Self::Synced {
                direction,
                failed: error,
            },
            Self::Deletion { direction, .. } => Self::Deletion {
                direction,
                failed: error,
            },
            skipped => skipped,
        }
    }
}

/// Receives every reconcile's outcome; implementations must be cheap and never block.
pub trait Observer: Send + Sync + 'static {
    /// One reconcile of `name` by `controller` finished after `elapsed`.
    fn reconciled(&self, controller: &'static str, name: &str, outcome: &Outcome, elapsed: Duration);
}
