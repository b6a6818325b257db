//! What queues a name besides its own objects: its CAPI owner's mirror appearing (the
//! CAPI-only policy), its infrastructure object changing, and the names given to
//! [`crate::SyncController::reconcile_on`].

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use crate::engine::follow::Fanout;
use crate::runtime::hash::Map;
use crate::runtime::index::NameIndex;
use crate::runtime::infra::InfraRegistration;
use crate::runtime::queue::WorkQueue;

/// Queues every name `names` yields, then waits forever: the controller's run, not the
/// stream, decides when it stops.
pub(crate) async fn queue_names(names: Option<BoxStream<'static, String>>, queue: WorkQueue) {
    if let Some(mut names) = names {
        while let Some(name) = names.next().await {
            queue.add(&name);
        }
    }
    std::future::pending().await
}

/// Queues what the infrastructure watches triggered so far (before the workers start:
/// the names are mostly queued already, and the queue holds each once).
pub(crate) fn queue_infra_triggers(registration: Option<&mut InfraRegistration>, queue: &Fanout) {
    if let Some(registration) = registration {
        while let Some(name) = registration.try_next_trigger() {
            queue.add(&name);
        }
    }
}

/// Forwards the infrastructure watches' triggers to the queue until `stop`.
pub(crate) async fn forward_infra_triggers(
    registration: Option<&mut InfraRegistration>,
    queue: &Fanout,
    stop: &CancellationToken,
) {
    let Some(registration) = registration else { return };
    while let Some(name) = tokio::select! {
        name = registration.next_trigger() => name,
        () = stop.cancelled() => None,
    } {
        queue.add(&name);
    }
}

/// CAPI object names by the names of their CAPI owners, so that an owner mirror appearing
/// reconciles exactly the objects it owns.
#[derive(Clone, Default)]
pub(crate) struct OwnerIndex {
    inner: Arc<Mutex<OwnerIndexState>>,
}

#[derive(Default)]
struct OwnerIndexState {
    /// Owner name → the names of the objects it owns.
    owned: NameIndex,
    /// Object name → its owners' names (nearly always one).
    owners_of: Map<Box<str>, Box<[Box<str>]>>,
}

impl OwnerIndex {
    pub(crate) fn set<'a>(&self, name: &str, owners: impl Iterator<Item = &'a str>) {
        let owners: Box<[Box<str>]> = owners.map(Into::into).collect();
        let mut state = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if state.owners_of.get(name) == Some(&owners) {
            return;
        }
        for old in state.owners_of.remove(name).unwrap_or_default() {
            state.owned.remove(&old, name);
        }
        for owner in &owners {
            state.owned.add(owner, name);
        }
        if !owners.is_empty() {
            state.owners_of.insert(name.into(), owners);
        }
    }

    pub(crate) fn owned_by(&self, owner: &str) -> Vec<String> {
        let state = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        state
            .owned
            .get(owner)
            .map(|names| names.iter().map(str::to_owned).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
