//! Reconcile outcomes, reported to an [`Observer`] (the operator's metrics).

use std::time::Duration;

use crate::hooks::Direction;
use crate::hooks::decision::Skip;

/// What one reconcile did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No hook ran, for this reason.
    Skipped(SkipReason),
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
    /// A migration controller's hook ran; `failed` when it returned an error.
    Migration {
        /// The hook returned an error (or panicked).
        failed: bool,
    },
}

impl Outcome {
    /// The direction label: `mapi_to_capi`, `capi_to_mapi` or `none`.
    pub fn direction(&self) -> &'static str {
        match self {
            Self::Skipped(_) | Self::Migration { .. } => "none",
            Self::Synced { direction, .. } | Self::Deletion { direction, .. } => direction.as_str(),
        }
    }

    /// The result label: `success`, `error` or `skipped`.
    pub fn result(&self) -> &'static str {
        match self {
            Self::Skipped(_) => "skipped",
            Self::Synced { failed: true, .. }
            | Self::Deletion { failed: true, .. }
            | Self::Migration { failed: true } => "error",
            Self::Synced { .. } | Self::Deletion { .. } | Self::Migration { .. } => "success",
        }
    }
}

/// Why a reconcile ran no hook: the decision table's skips (docs/design.md §3) and the
/// malformed-object guard before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SkipReason {
    /// Neither object exists.
    NothingToDo,
    /// One of the objects does not decode as its Rust type (a Warning Event says why).
    Malformed,
    /// A CAPI-only object under the `ignore` policy.
    CapiOnlyIgnored,
    /// A CAPI-only object whose CAPI owner has no MAPI mirror (yet).
    CapiOnlyOwnerNotMirrored,
    /// `status.authoritativeAPI` is `Migrating`.
    Migrating,
    /// `status.authoritativeAPI` is not set (or empty).
    NoAuthority,
    /// `status.authoritativeAPI` has a value this build does not know (a Warning Event
    /// names it).
    UnknownAuthority,
    /// The first reconcile since a restart found the pair at the resourceVersions the last
    /// run had verified it in sync at ([`crate::engine::checkpoint`]).
    Checkpointed,
    /// A migration controller's name whose MAPI object shows it settled, with no step to
    /// take ([`crate::migration::MigrationHooks::settled`]).
    Settled,
}

impl SkipReason {
    /// The label in logs and the `reason` label of the skipped-reconciles metric.
    pub fn label(self) -> &'static str {
        match self {
            Self::NothingToDo => "nothing_to_do",
            Self::Malformed => "malformed",
            Self::CapiOnlyIgnored => "capi_only_ignored",
            Self::CapiOnlyOwnerNotMirrored => "capi_only_owner_not_mirrored",
            Self::Migrating => "migrating",
            Self::NoAuthority => "no_authority",
            Self::UnknownAuthority => "unknown_authority",
            Self::Checkpointed => "checkpointed",
            Self::Settled => "settled",
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

impl From<&Skip> for SkipReason {
    fn from(skip: &Skip) -> Self {
        match skip {
            Skip::CapiOnlyIgnored => Self::CapiOnlyIgnored,
            Skip::CapiOnlyOwnerNotMirrored => Self::CapiOnlyOwnerNotMirrored,
            Skip::Migrating => Self::Migrating,
            Skip::NoAuthority => Self::NoAuthority,
            Skip::UnknownAuthority(_) => Self::UnknownAuthority,
        }
    }
}

/// Receives every reconcile's outcome; implementations must be cheap and never block.
pub trait Observer: Send + Sync + 'static {
    /// One reconcile of `name` by `controller` finished after `elapsed`.
    fn reconciled(&self, controller: &'static str, name: &str, outcome: &Outcome, elapsed: Duration);
}
