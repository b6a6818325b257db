//! Events expire, as kube-apiserver's do (`--event-ttl`, 1 h by default): an Event not
//! written for the TTL is deleted. kube-apiserver stores each Event with an etcd lease
//! renewed on every write; here a sweep beside the server deletes, through the same
//! object semantics a client's DELETE takes, every Event whose last write (the newest
//! of its creation and its managed-fields entries' times, which the server sets on every
//! write; never the client's own timestamps) is older than the TTL. Without it, a long-running server's Events (every controller's) only
//! grow.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;

use crate::objects::{self, DeleteOptions};
use crate::storage::store::{State, Store};

/// kube-apiserver's default `--event-ttl`.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

/// The storage key of Events (both APIs share it).
const EVENTS: &str = "events";

/// Sweeps `store` for expired Events every `ttl / 60` (between 1 s and 1 min) until the
/// task is aborted (the harness does on drop).
pub fn spawn(store: Arc<Store>, ttl: Duration) -> tokio::task::JoinHandle<()> {
    let every = (ttl / 60).clamp(Duration::from_secs(1), Duration::from_secs(60));
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            store.write(|state| sweep(state, ttl, Timestamp::now()));
        }
    })
}

/// Deletes the Events of `state` last written more than `ttl` before `now`; how many.
pub fn sweep(state: &mut State, ttl: Duration, now: Timestamp) -> usize {
    let Some(collection) = state.collections.get(EVENTS) else {
        return 0;
    };
    let expired: Vec<(String, String)> = collection
        .iter()
        .filter(|(_, event)| last_write(event).is_some_and(|at| now.duration_since(at).unsigned_abs() > ttl))
        .map(|((namespace, name), _)| (namespace.clone(), name.clone()))
        .collect();
    let Some(info) = state
        .registry
        .all()
        .find(|i| i.group.is_empty() && i.plural == EVENTS)
        .cloned()
    else {
        return 0;
    };
    let mut deleted = 0;
    for (namespace, name) in expired {
        match objects::delete(state, &info, &namespace, &name, &DeleteOptions::default()) {
            Ok(_) => deleted += 1,
            Err(error) => tracing::warn!(%error, %namespace, %name, "envtest: expired Event not deleted"),
        }
    }
    deleted
}

/// When `event` was last written, as the server recorded it.
fn last_write(event: &Value) -> Option<Timestamp> {
    let managed = event["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten();
    std::iter::once(&event["metadata"]["creationTimestamp"])
        .chain(managed.map(|entry| &entry["time"]))
        .filter_map(|time| time.as_str()?.parse::<Timestamp>().ok())
        .max()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_last_write_is_the_newest_time_the_server_recorded() {
        let event = json!({
            "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z", "managedFields": [
                {"manager": "a", "time": "2026-01-01T01:00:00Z"},
                {"manager": "b", "time": "2026-01-01T00:30:00Z"}]},
            "lastTimestamp": "2027-01-01T02:00:00Z",
        });
        assert_eq!(last_write(&event), "2026-01-01T01:00:00Z".parse().ok());
        assert_eq!(last_write(&json!({})), None);
    }
}
