//! Followers: other controllers of the same pair (a migration controller next to the
//! sync) that run on a leader's caches instead of keeping their own copy of the fleet.
//!
//! The leader's watches queue every name they touch in the followers' queues too
//! ([`Fanout`]), and so do its infrastructure triggers; a follower starts once the
//! leader's caches have synced, queues every cached name once (what its own lists would
//! have queued), and stops when the leader stops.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio::sync::watch;

use crate::hooks::context::Caches;
use crate::pair::SyncPair;
use crate::runtime::infra::{ControllerHandle, InfraTracker};
use crate::runtime::queue::WorkQueue;

/// What a leader shares with its followers: their queues, and once it runs its
/// infrastructure tracker and registration (the CAPI objects' references, which only its
/// watches report).
#[derive(Clone, Default)]
pub(crate) struct Following {
    inner: Arc<FollowingState>,
}

#[derive(Default)]
struct FollowingState {
    queues: Mutex<Vec<WorkQueue>>,
    infra: OnceLock<LeaderInfra>,
}

/// The leader's infrastructure tracker and its registration with it.
type LeaderInfra = (Option<InfraTracker>, Option<ControllerHandle>);

impl Following {
    /// Adds a follower's queue; the queues of followers that stopped are let go.
    pub(crate) fn join(&self, queue: WorkQueue) {
        let mut queues = self.queues();
        queues.retain(|queue| !queue.is_shut_down());
        queues.push(queue);
    }

    /// Publishes the leader's infrastructure tracker and registration (once, when it
    /// starts).
    pub(crate) fn set_infra(&self, tracker: Option<InfraTracker>, refs: Option<ControllerHandle>) {
        let _ = self.inner.infra.set((tracker, refs));
    }

    /// The leader's infrastructure tracker and registration, once it has started.
    pub(crate) fn infra(&self) -> LeaderInfra {
        self.inner.infra.get().cloned().unwrap_or_default()
    }

    fn queues(&self) -> std::sync::MutexGuard<'_, Vec<WorkQueue>> {
        self.inner.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a leader's watches queue a name: its own queue and its followers'.
#[derive(Clone)]
pub(crate) struct Fanout {
    own: WorkQueue,
    following: Following,
}

impl Fanout {
    /// The leader's queue, followed by `following`'s.
    pub(crate) fn new(own: WorkQueue, following: Following) -> Self {
        Self { own, following }
    }

    /// Queues `name` for the leader and every follower.
    pub(crate) fn add(&self, name: &str) {
        self.own.add(name);
        for queue in self.following.queues().iter() {
            queue.add(name);
        }
    }
}

/// A follower's link to its leader.
#[derive(Clone)]
pub(crate) struct Leader {
    /// The leader's readiness: true while its caches are synced and it runs.
    pub ready: watch::Receiver<bool>,
    /// What it shares.
    pub following: Following,
}

impl Leader {
    /// Until the leader's caches have synced; false if it stopped (or was dropped) first.
    pub(crate) async fn synced(&mut self) -> bool {
        self.ready.wait_for(|ready| *ready).await.is_ok()
    }

    /// Until the leader stops (its caches no longer follow the cluster), after it synced.
    pub(crate) async fn stopped(mut self) {
        if self.synced().await {
            let _ = self.ready.wait_for(|ready| !*ready).await;
        }
    }
}

/// Every name the leader's caches know of, each once: the objects of both sides and the
/// malformed ones (which its watches queued too).
pub(crate) fn cached_names<P: SyncPair>(caches: &Caches<P>) -> HashSet<String> {
    let mut names: HashSet<String> = caches.mapi.names().into_iter().collect();
    names.extend(caches.capi.names());
    for side in [&caches.malformed.mapi, &caches.malformed.capi] {
        let side = side.lock().unwrap_or_else(PoisonError::into_inner);
        names.extend(side.keys().cloned());
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::queue::Backoff;

    #[tokio::test]
    async fn a_name_reaches_the_leader_and_every_running_follower() {
        let following = Following::default();
        let leader = WorkQueue::new(Backoff::default());
        let (first, second) = (
            WorkQueue::new(Backoff::default()),
            WorkQueue::new(Backoff::default()),
        );
        following.join(first.clone());
        following.join(second.clone());
        let fanout = Fanout::new(leader.clone(), following.clone());
        fanout.add("m1");
        assert_eq!((leader.len(), first.len(), second.len()), (1, 1, 1));
        second.shut_down();
        following.join(WorkQueue::new(Backoff::default()));
        assert_eq!(
            following.queues().len(),
            2,
            "a stopped follower's queue is let go"
        );
        fanout.add("m2");
        assert_eq!((leader.len(), first.len()), (2, 2));
    }

    #[tokio::test]
    async fn a_follower_sees_its_leader_sync_and_stop() {
        let (sender, ready) = watch::channel(false);
        let leader = Leader {
            ready,
            following: Following::default(),
        };
        let stopped = tokio::spawn(leader.clone().stopped());
        let mut synced = leader.clone();
        let synced = tokio::spawn(async move { synced.synced().await });
        sender.send_replace(true);
        assert!(synced.await.unwrap_or(false));
        assert!(!stopped.is_finished());
        sender.send_replace(false);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), stopped).await;
        assert!(ended.is_ok(), "the follower did not see its leader stop");
    }

    #[tokio::test]
    async fn a_dropped_leader_is_a_stopped_one() {
        let (sender, ready) = watch::channel(false);
        let mut leader = Leader {
            ready,
            following: Following::default(),
        };
        drop(sender);
        assert!(!leader.synced().await);
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), leader.stopped()).await;
        assert!(ended.is_ok());
    }
}
