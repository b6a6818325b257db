//! Events expire after the server's Event TTL (kube-apiserver's `--event-ttl`), counted
//! from their last write; other objects never do.

use std::time::Duration;

use envtest::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Event};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);

fn event(name: &str) -> TestResult<Event> {
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "involvedObject": {"kind": "ConfigMap", "name": "c", "namespace": "default"},
        "reason": "Tested", "message": "m", "type": "Normal",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    }))?)
}

#[tokio::test]
async fn an_event_not_written_for_the_ttl_is_deleted_and_one_written_meanwhile_stays() -> TestResult {
    let env = TestEnv::builder()
        .event_ttl(Duration::from_secs(3))
        .start()
        .await?;
    let events: Api<Event> = Api::namespaced(env.client(), "default");
    let configs: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    configs
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "c"}}))?,
        )
        .await?;
    events.create(&PostParams::default(), &event("left")?).await?;
    events.create(&PostParams::default(), &event("repeated")?).await?;

    // "repeated" is written again every half second (a series), "left" never.
    let started = std::time::Instant::now();
    let mut count = 1;
    while events.get_opt("left").await?.is_some() {
        assert!(
            started.elapsed() < WAIT,
            "the Event left alone for the TTL was not deleted"
        );
        count += 1;
        let renew = json!({"lastTimestamp": k8s_openapi::jiff::Timestamp::now().to_string(), "count": count});
        let params = PatchParams {
            field_manager: Some("recorder".into()),
            ..PatchParams::default()
        };
        events.patch("repeated", &params, &Patch::Merge(&renew)).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "deleted before its TTL"
    );
    assert!(
        events.get_opt("repeated").await?.is_some(),
        "a renewed Event expired"
    );
    assert!(configs.get_opt("c").await?.is_some(), "only Events expire");
    Ok(())
}
