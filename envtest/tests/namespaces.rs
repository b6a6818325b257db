//! Namespace deletion as kube-apiserver and its namespace controller do it: the DELETE
//! answers the namespace `Terminating`, new content is forbidden, the content goes, objects
//! with finalizers hold the namespace, and so do the namespace's own `metadata.finalizers`.
//! Also: deletes held by finalizers answer 200, 202 only with `orphanDependents=false`.

use std::time::Duration;

use envtest::TestEnv;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn object<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, serde_json::Error> {
    serde_json::from_value(value)
}

fn phase(ns: &Namespace) -> Option<&str> {
    ns.status.as_ref().and_then(|s| s.phase.as_deref())
}

#[tokio::test]
async fn deleting_an_empty_namespace() -> TestResult {
    let env = TestEnv::builder().namespace("empty").start().await?;
    let namespaces: Api<Namespace> = Api::all(env.client());
    let rv = env.resource_version().to_string();
    let mut events = namespaces
        .watch(&WatchParams::default().fields("metadata.name=empty"), &rv)
        .await?
        .boxed();
    let answer = namespaces.delete("empty", &DeleteParams::default()).await?;
    let ns = answer
        .left()
        .ok_or("a namespace delete answers the namespace, not a Status")?;
    assert_eq!(phase(&ns), Some("Terminating"));
    assert!(ns.metadata.deletion_timestamp.is_some());
    assert!(namespaces.get_opt("empty").await?.is_none());
    // Watchers see it terminate, then go.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await??
            .ok_or("the watch ended")?;
        match event {
            WatchEvent::Modified(ns) => seen.push(format!("MODIFIED {}", phase(&ns).unwrap_or_default())),
            WatchEvent::Deleted(_) => seen.push("DELETED".to_owned()),
            _ => {}
        }
    }
    assert_eq!(seen, ["MODIFIED Terminating", "DELETED"]);
    Ok(())
}

#[tokio::test]
async fn content_with_finalizers_holds_a_terminating_namespace() -> TestResult {
    let env = TestEnv::builder().namespace("busy").start().await?;
    let namespaces: Api<Namespace> = Api::all(env.client());
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "busy");
    cms.create(
        &PostParams::default(),
        &object(json!({"metadata": {"name": "plain"}}))?,
    )
    .await?;
    let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    cms.create(&PostParams::default(), &object(held)?).await?;

    let answer = namespaces.delete("busy", &DeleteParams::default()).await?;
    assert!(answer.left().is_some_and(|ns| phase(&ns) == Some("Terminating")));
    let ns = namespaces.get("busy").await?;
    assert_eq!(phase(&ns), Some("Terminating"));
    assert_eq!(
        ns.spec.and_then(|s| s.finalizers),
        Some(vec!["kubernetes".to_owned()])
    );
    assert!(cms.get_opt("plain").await?.is_none());
    assert!(cms.get("held").await?.metadata.deletion_timestamp.is_some());

    // No new content in a terminating namespace.
    let new: ConfigMap = object(json!({"metadata": {"name": "new"}}))?;
    match cms.create(&PostParams::default(), &new).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
            assert!(
                status.message.contains("because it is being terminated"),
                "{}",
                status.message
            );
        }
        other => return Err(format!("expected Forbidden, got {other:?}").into()),
    }

    // The last finalizer goes, the object goes, the namespace goes.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    assert!(cms.get_opt("held").await?.is_none());
    assert!(namespaces.get_opt("busy").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn metadata_finalizers_hold_an_emptied_namespace() -> TestResult {
    let env = TestEnv::start().await?;
    let namespaces: Api<Namespace> = Api::all(env.client());
    let ns = json!({"metadata": {"name": "kept", "finalizers": ["example.com/keep"]}});
    namespaces.create(&PostParams::default(), &object(ns)?).await?;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "kept");
    cms.create(
        &PostParams::default(),
        &object(json!({"metadata": {"name": "a"}}))?,
    )
    .await?;

    namespaces.delete("kept", &DeleteParams::default()).await?;
    assert!(cms.get_opt("a").await?.is_none());
    let ns = namespaces.get("kept").await?;
    assert_eq!(phase(&ns), Some("Terminating"));
    // The namespace controller finished (spec.finalizers emptied); metadata.finalizers hold it.
    assert_eq!(ns.spec.clone().and_then(|s| s.finalizers), Some(Vec::new()));
    assert_eq!(ns.finalizers(), ["example.com/keep"]);

    namespaces
        .patch(
            "kept",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;
    assert!(namespaces.get_opt("kept").await?.is_none());
    Ok(())
}

#[tokio::test]
async fn held_deletes_answer_200_and_202_only_when_orphaning_is_refused() -> TestResult {
    let env = TestEnv::start().await?;
    let client = env.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    for name in ["a", "b"] {
        let held = json!({"metadata": {"name": name, "finalizers": ["example.com/hold"]}});
        cms.create(&PostParams::default(), &object(held)?).await?;
    }
    let request = |name: &str, body: serde_json::Value| {
        http::Request::delete(format!("/api/v1/namespaces/default/configmaps/{name}"))
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(body.to_string().into_bytes())
    };
    let response = client.send(request("a", json!({}))?.map(Into::into)).await?;
    assert_eq!(response.status().as_u16(), 200);
    let response = client
        .send(request("b", json!({"orphanDependents": false}))?.map(Into::into))
        .await?;
    assert_eq!(response.status().as_u16(), 202);
    Ok(())
}
