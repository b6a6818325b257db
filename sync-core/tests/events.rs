//! The Event recorder against the envtest server: Events as `kubectl get events` reads
//! them (first and last timestamp, count), one series per object, reason, action, note
//! and named series.

use envtest::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent};
use kube::Resource;
use kube::api::{Api, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};
use sync_core::events::Recorder;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const NS: &str = "events";

fn event(note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: "SynchronizationError".into(),
        note: Some(note.into()),
        action: "Reconcile".into(),
        secondary: None,
    }
}

#[tokio::test]
async fn repeats_count_in_one_event_and_another_note_or_series_is_a_new_one() -> TestResult {
    let env = TestEnv::builder().namespace(NS).start().await?;
    let client = env.client();
    let object = Api::<ConfigMap>::namespaced(client.clone(), NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({
            "metadata": {"name": "m"}}))?,
        )
        .await?;
    let regarding = object.object_ref(&());
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "machine-sync".into(),
            instance: Some("pod-1".into()),
        },
    );
    for _ in 0..3 {
        recorder.publish(&event("bad region"), &regarding).await?;
    }
    recorder.publish(&event("bad zone"), &regarding).await?;
    recorder
        .publish_in_series(&event("bad zone"), &regarding, "2")
        .await?;

    let events = Api::<CoreEvent>::namespaced(client, NS)
        .list(&Default::default())
        .await?
        .items;
    let mut seen: Vec<(String, i32)> = events
        .iter()
        .map(|e| (e.message.clone().unwrap_or_default(), e.count.unwrap_or_default()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("bad region".into(), 3),
            ("bad zone".into(), 1),
            ("bad zone".into(), 1)
        ]
    );
    let repeated = events.iter().find(|e| e.count == Some(3)).ok_or("no series")?;
    let (first, last) = (
        repeated.first_timestamp.as_ref().ok_or("no firstTimestamp")?,
        repeated.last_timestamp.as_ref().ok_or("no lastTimestamp")?,
    );
    assert!(last.0 >= first.0);
    assert_eq!(repeated.series.as_ref().map(|s| s.count), Some(Some(3)));
    assert_eq!(repeated.type_.as_deref(), Some("Warning"));
    assert_eq!(repeated.reporting_component.as_deref(), Some("machine-sync"));
    assert_eq!(repeated.reporting_instance.as_deref(), Some("pod-1"));
    assert_eq!(
        repeated.source.as_ref().and_then(|s| s.component.as_deref()),
        Some("machine-sync")
    );
    assert_eq!(repeated.involved_object.name.as_deref(), Some("m"));
    Ok(())
}
