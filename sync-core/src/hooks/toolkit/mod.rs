//! The sync toolkit: the writes every pair's hooks make, generic over the kinds.
//!
//! | module | what it does |
//! |---|---|
//! | [`mod@apply`] | server-side apply of a mirror (or its status) that writes nothing when nothing would change |
//! | [`contest`] | another writer that keeps undoing the sync's writes: held off, not fought |
//! | [`foreign`] | the `spec` fields another writer added to a mirror, which an apply cannot remove |
//! | [`owned`] | the fields a manager owns, from `managedFields` (what [`apply()`] compares with) |
//! | [`condition`] | server-side apply of a status fragment or one condition under its own field manager |
//! | [`status`] | the `Synchronized` condition, `status.synchronizedGeneration` and `synchronizedAPI` |
//! | [`authority`] | `status.authoritativeAPI`: the migration's writes, the final one resetting the sync state |
//! | [`finalizers`] | ensure, release, release after another finalizer is gone |
//! | [`pause`] | the `cluster.x-k8s.io/paused` annotation and the `Paused` condition |
//! | `patch` | the patches above, the API server's answer decoded with its field sets as text, or not at all |
//! | [`report`] | a failed sync: `Synchronized=False`, a Warning Event, no hot retry |
pub mod apply;
pub mod authority;
pub mod condition;
pub mod contest;
pub mod finalizers;
pub mod foreign;
pub mod owned;
mod patch;
pub mod pause;
pub mod report;
mod settle;
pub mod status;

pub use apply::{Applied, ApplyError, Part, apply, apply_over, apply_typed};
pub use finalizers::{FinalizerError, Release, SYNC_FINALIZER};
pub use status::Synchronized;
