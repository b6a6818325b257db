//! Publishing Kubernetes Events the way `kubectl get events` reads them.
//!
//! kube-rs's recorder writes `events.k8s.io/v1` Events with only `eventTime`, and the
//! API server forbids the `deprecated*` fields there, so `kubectl get events
//! --sort-by=.lastTimestamp` (the usual idiom) finds nothing to sort by and `COUNT` stays
//! empty. This recorder writes `core/v1` Events as client-go's `tools/record` (and so
//! controller-runtime's recorder) does: `firstTimestamp`, `lastTimestamp` and `count`,
//! plus the newer `eventTime`, `series`, `action` and `reportingComponent`, so both APIs
//! show everything.
//!
//! An Event repeated with the same object, type, reason, action **and note** within
//! [`SERIES_TTL`] is one series: its count and last timestamp move, nothing else. A new
//! note is a new Event (a different error), never the first text with a higher count;
//! a caller may name the series too (a migration: each one is its own). The series cache
//! is bounded by time and size.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event as CoreEvent, EventSeries, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use serde_json::json;
use tokio::sync::Mutex;

/// How long a repeated Event joins its series (client-go's and kube-rs's: 6 minutes).
pub const SERIES_TTL: Duration = Duration::from_secs(6 * 60);
/// How many series are remembered at most.
const SERIES: usize = 4096;
/// The API server's limit on an Event's message.
const MESSAGE_LIMIT: usize = 1024;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    regarding: (Option<String>, Option<String>, Option<String>, Option<String>),
    type_: &'static str,
    reason: String,
    action: String,
    note: String,
    series: String,
}

#[derive(Clone, Debug)]
struct Series {
    name: String,
    count: i32,
    seen: Instant,
}

/// Publishes Events as one controller (cheap to clone: the series cache is shared).
#[derive(Clone)]
pub struct Recorder {
    client: Client,
    reporter: Reporter,
    series: Arc<Mutex<HashMap<Key, Series>>>,
}

impl Recorder {
    /// A recorder publishing as `reporter`.
    pub fn new(client: Client, reporter: Reporter) -> Self {
        Self {
            client,
            reporter,
            series: Arc::default(),
        }
    }

    /// Publishes `event` about `regarding`: a new Event, or the next of its series.
    pub async fn publish(&self, event: &Event, regarding: &ObjectReference) -> Result<(), kube::Error> {
        self.publish_in_series(event, regarding, "").await
    }

    /// [`Self::publish`], where `series` also tells series apart: the same text in another
    /// series (another migration of the object) is a new Event.
    pub async fn publish_in_series(
        &self,
        event: &Event,
        regarding: &ObjectReference,
        series: &str,
    ) -> Result<(), kube::Error> {
        let type_ = match event.type_ {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        };
        let note = truncate(event.note.clone().unwrap_or_default());
        let key = Key {
            regarding: (
                regarding.kind.clone(),
                regarding.namespace.clone(),
                regarding.name.clone(),
                regarding.uid.clone(),
            ),
            type_,
            reason: event.reason.clone(),
            action: event.action.clone(),
            note: note.clone(),
            series: series.to_owned(),
        };
        let namespace = regarding
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_owned());
        let api: Api<CoreEvent> = Api::namespaced(self.client.clone(), &namespace);
        let now = Timestamp::now();
        // The cache is held only to read and count, never across a request: Events of
        // other objects are not serialized behind a slow API server.
        let next = {
            let mut cache = self.series.lock().await;
            let expired = Instant::now().checked_sub(SERIES_TTL);
            cache.retain(|_, s| expired.is_none_or(|e| s.seen > e));
            if cache.len() >= SERIES {
                cache.clear();
            }
            cache.get_mut(&key).map(|series| {
                series.count += 1;
                series.seen = Instant::now();
                (series.name.clone(), series.count)
            })
        };
        if let Some((name, count)) = next {
            let patch = json!({
                "count": count,
                "lastTimestamp": Time(now),
                "series": {"count": count, "lastObservedTime": MicroTime(now)},
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(()),
                // Expired or deleted meanwhile: start a new series.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        let created = api
            .create(
                &PostParams::default(),
                &self.event(event, type_, note, regarding, &namespace, now),
            )
            .await?;
        let series = Series {
            name: created.metadata.name.unwrap_or_default(),
            count: 1,
            seen: Instant::now(),
        };
        self.series.lock().await.insert(key, series);
        Ok(())
    }

    fn event(
        &self,
        event: &Event,
        type_: &str,
        note: String,
        regarding: &ObjectReference,
        namespace: &str,
        now: Timestamp,
    ) -> CoreEvent {
        let object = regarding.name.as_deref().unwrap_or("event");
        CoreEvent {
            metadata: ObjectMeta {
                name: Some(event_name(object, now)),
                namespace: Some(namespace.to_owned()),
                ..ObjectMeta::default()
            },
            involved_object: regarding.clone(),
            type_: Some(type_.to_owned()),
            reason: Some(event.reason.clone()),
            action: Some(event.action.clone()),
            message: Some(note),
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            event_time: Some(MicroTime(now)),
            series: None::<EventSeries>,
            source: Some(EventSource {
                component: Some(self.reporter.controller.clone()),
                host: None,
            }),
            reporting_component: Some(self.reporter.controller.clone()),
            reporting_instance: Some(
                self.reporter
                    .instance
                    .clone()
                    .unwrap_or_else(|| self.reporter.controller.clone()),
            ),
            related: None,
        }
    }
}

/// A message within the API server's limit, cut at a character boundary.
fn truncate(mut note: String) -> String {
    if note.len() > MESSAGE_LIMIT {
        let mut end = MESSAGE_LIMIT - 3;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
        note.push_str("...");
    }
    note
}

/// A name for a new Event about `object`: kube's form, `<object>.<hex>`, from the time
/// and a process-wide sequence, so that two Events of one nanosecond differ.
fn event_name(object: &str, now: Timestamp) -> String {
    static SEQUENCE: AtomicU64 = AtomicU64::new(0);
    let sequence = SEQUENCE.fetch_add(1, Ordering::Relaxed);
    let nanos = u64::try_from(now.as_nanosecond()).unwrap_or_default();
    format!("{object}.{:x}", nanos.wrapping_add(sequence))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_message_is_cut_within_the_limit_at_a_character() {
        let note = truncate("é".repeat(MESSAGE_LIMIT));
        assert!(note.len() <= MESSAGE_LIMIT);
        assert!(note.ends_with("..."));
        assert_eq!(truncate("short".into()), "short");
    }
}
