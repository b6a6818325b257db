//! Watch semantics of the envtest server, through `Api::watch` and kube-runtime's
//! watcher (list-then-watch and streaming list) and reflector, plus fault injection.

use std::time::Duration;

use envtest::TestEnv;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(10);

fn cm(name: &str, app: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "data": {"k": "v"}
    }))
    .unwrap_or_default()
}

async fn next<S, T>(stream: &mut S) -> Result<T, Box<dyn std::error::Error>>
where
    S: futures::Stream<Item = Result<T, kube::Error>> + Unpin,
{
    Ok(tokio::time::timeout(WAIT, stream.next())
        .await?
        .ok_or("stream ended")??)
}

fn describe(event: &WatchEvent<ConfigMap>) -> String {
    match event {
        WatchEvent::Added(o) => format!("ADDED {}", o.name_any()),
        WatchEvent::Modified(o) => format!("MODIFIED {}", o.name_any()),
        WatchEvent::Deleted(o) => format!("DELETED {}", o.name_any()),
        WatchEvent::Bookmark(b) => format!("BOOKMARK {}", b.metadata.resource_version),
        WatchEvent::Error(e) => format!("ERROR {} {}", e.code, e.reason),
    }
}

#[tokio::test]
async fn watch_from_resource_version_in_order() -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("before", "a")).await?;
    let rv = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut stream = api.watch(&WatchParams::default(), &rv).await?.boxed();
    api.create(&PostParams::default(), &cm("x", "a")).await?;
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await?;
    api.delete("x", &Default::default()).await?;
    let mut seen = Vec::new();
    for _ in 0..3 {
        seen.push(describe(&next(&mut stream).await?));
    }
    assert_eq!(seen, ["ADDED x", "MODIFIED x", "DELETED x"]);
    Ok(())
}

#[tokio::test]
async fn watch_without_rv_sends_existing_objects() -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("a", "a")).await?;
    let mut stream = api.watch(&WatchParams::default(), "0").await?.boxed();
    assert_eq!(describe(&next(&mut stream).await?), "ADDED a");
    Ok(())
}

#[tokio::test]
async fn selector_transitions_and_bookmarks() -> TestResult {
    let env = TestEnv::builder()
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let rv = env.resource_version().to_string();
    let params = WatchParams::default().labels("app=in");
    let mut stream = api.watch(&params, &rv).await?.boxed();
    api.create(&PostParams::default(), &cm("x", "out")).await?;
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "in"}}})),
    )
    .await?;
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await?;
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "out"}}})),
    )
    .await?;
    assert_eq!(describe(&next(&mut stream).await?), "ADDED x");
    assert_eq!(describe(&next(&mut stream).await?), "MODIFIED x");
    assert_eq!(describe(&next(&mut stream).await?), "DELETED x");

    let mut bookmarks = api
        .watch(
            &WatchParams {
                bookmarks: true,
                ..WatchParams::default()
            },
            &rv,
        )
        .await?
        .boxed();
    loop {
        if let WatchEvent::Bookmark(b) = next(&mut bookmarks).await? {
            assert_eq!(b.metadata.resource_version, env.resource_version().to_string());
            break;
        }
    }
    Ok(())
}

#[tokio::test]
async fn streaming_list_initial_events_end_bookmark() -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("a", "a")).await?;
    let params = WatchParams::streaming_lists();
    let mut stream = api.watch(&params, "0").await?.boxed();
    assert_eq!(describe(&next(&mut stream).await?), "ADDED a");
    match next(&mut stream).await? {
        WatchEvent::Bookmark(b) => {
            assert_eq!(
                b.metadata
                    .annotations
                    .get("k8s.io/initial-events-end")
                    .map(String::as_str),
                Some("true")
            );
        }
        other => {
            return Err(format!(
                "expected the initial-events-end bookmark, got {}",
                describe(&other)
            )
            .into());
        }
    }
    Ok(())
}

#[tokio::test]
async fn too_old_resource_version_is_410() -> TestResult {
    let env = TestEnv::builder().history_window(5).start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let old = env.resource_version().to_string();
    for i in 0..10 {
        api.create(&PostParams::default(), &cm(&format!("c{i}"), "a"))
            .await?;
    }
    let mut stream = api.watch(&WatchParams::default(), &old).await?.boxed();
    let event = next(&mut stream).await?;
    assert_eq!(describe(&event), "ERROR 410 Expired");
    if let WatchEvent::Error(e) = event {
        assert!(
            e.message
                .starts_with(&format!("too old resource version: {old} ("))
        );
    }
    Ok(())
}

#[tokio::test]
async fn watch_timeout_ends_stream() -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let rv = env.resource_version().to_string();
    let mut stream = api.watch(&WatchParams::default().timeout(1), &rv).await?.boxed();
    let end = tokio::time::timeout(WAIT, stream.next()).await?;
    assert!(end.is_none());
    Ok(())
}

async fn watcher_sees_everything(config: watcher::Config) -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("pre", "a")).await?;
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector::reflector(writer, watcher(api.clone(), config))
        .default_backoff()
        .applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    reader.wait_until_ready().await?;
    assert!(
        reader
            .get(&reflector::ObjectRef::new("pre").within("default"))
            .is_some()
    );
    api.create(&PostParams::default(), &cm("post", "a")).await?;
    api.delete("pre", &Default::default()).await?;
    tokio::time::timeout(WAIT, async {
        loop {
            let names: Vec<String> = reader.state().iter().map(|o| o.name_any()).collect();
            if names == ["post"] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await?;

    // Faults: dropped watches and forced expiry are recovered by the watcher.
    env.faults().drop_watches();
    api.create(&PostParams::default(), &cm("after-drop", "a")).await?;
    env.faults().expire_watches();
    api.create(&PostParams::default(), &cm("after-expire", "a"))
        .await?;
    tokio::time::timeout(WAIT, async {
        loop {
            if reader.state().len() == 3 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await?;
    task.abort();
    Ok(())
}

#[tokio::test]
async fn watcher_list_watch() -> TestResult {
    watcher_sees_everything(watcher::Config::default()).await
}

#[tokio::test]
async fn watcher_streaming_list() -> TestResult {
    watcher_sees_everything(watcher::Config::default().streaming_lists()).await
}

#[tokio::test]
async fn restart_keeps_state_and_port() -> TestResult {
    let mut env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let (reader, writer) = reflector::store::<ConfigMap>();
    let stream = reflector::reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    api.create(&PostParams::default(), &cm("a", "a")).await?;
    let port = env.addr().port();
    env.restart().await?;
    assert_eq!(env.addr().port(), port);
    assert_eq!(api.get("a").await?.name_any(), "a");
    api.create(&PostParams::default(), &cm("b", "a")).await?;
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            if reader.state().len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await?;
    task.abort();
    Ok(())
}

#[tokio::test]
async fn injected_errors_and_latency() -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    env.faults()
        .fail(Some("create"), Some("configmaps"), 500, Some(1));
    match api.create(&PostParams::default(), &cm("a", "a")).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 500),
        other => return Err(format!("expected 500, got {other:?}").into()),
    }
    api.create(&PostParams::default(), &cm("a", "a")).await?;
    env.faults().set_latency(Duration::from_millis(200));
    let started = std::time::Instant::now();
    api.get("a").await?;
    assert!(started.elapsed() >= Duration::from_millis(200));
    env.faults().clear();
    Ok(())
}
