//! Lists at a resourceVersion, as kube-apiserver serves them from etcd: every page of a
//! paginated list shows the snapshot of the first page, `resourceVersionMatch=Exact`
//! reads an earlier state, and both answer 410 Expired once the retained history no longer
//! reaches back that far.

use envtest::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, VersionMatch};
use kube::core::Status;
use kube::{Api, ResourceExt};
use serde_json::json;

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn cm(name: &str, value: &str) -> Result<ConfigMap, serde_json::Error> {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": value}}))
}

fn shown(list: &kube::core::ObjectList<ConfigMap>) -> Vec<String> {
    list.items
        .iter()
        .map(|c| {
            let value = c
                .data
                .as_ref()
                .and_then(|d| d.get("k"))
                .cloned()
                .unwrap_or_default();
            format!("{}={value}", c.name_any())
        })
        .collect()
}

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> Result<Box<Status>, String> {
    match result {
        Err(kube::Error::Api(status)) => Ok(status),
        other => Err(format!("expected an API error, got {other:?}")),
    }
}

#[tokio::test]
async fn pages_show_the_snapshot_of_the_first_page() -> TestResult {
    let env = TestEnv::builder().namespace("p").start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "p");
    for name in ["a", "b", "c", "d", "e"] {
        api.create(&PostParams::default(), &cm(name, "1")?).await?;
    }
    let first = api.list(&ListParams::default().limit(2)).await?;
    assert_eq!(shown(&first), ["a=1", "b=1"]);
    let snapshot = first.metadata.resource_version.clone();
    let token = first.metadata.continue_.clone().ok_or("no continue token")?;
    assert_eq!(first.metadata.remaining_item_count, Some(3));

    // Changes after the first page do not show on the next ones.
    api.create(&PostParams::default(), &cm("c0", "new")?).await?;
    api.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await?;
    api.delete("d", &DeleteParams::default()).await?;
    api.delete("a", &DeleteParams::default()).await?;

    let second = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await?;
    assert_eq!(shown(&second), ["c=1", "d=1"]);
    assert_eq!(second.metadata.resource_version, snapshot);
    let token = second.metadata.continue_.clone().ok_or("no continue token")?;
    let third = api
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await?;
    assert_eq!(shown(&third), ["e=1"]);
    assert_eq!(third.metadata.continue_, None);

    // A fresh list sees the present.
    let now = api.list(&ListParams::default()).await?;
    assert_eq!(shown(&now), ["b=1", "c=2", "c0=new", "e=1"]);
    Ok(())
}

#[tokio::test]
async fn continue_tokens_expire_with_the_history() -> TestResult {
    let env = TestEnv::builder()
        .namespace("p")
        .history_window(4)
        .start()
        .await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "p");
    for name in ["a", "b", "c", "d"] {
        api.create(&PostParams::default(), &cm(name, "1")?).await?;
    }
    let first = api.list(&ListParams::default().limit(2)).await?;
    let token = first.metadata.continue_.clone().ok_or("no continue token")?;
    for i in 0..5 {
        let patch = Patch::Merge(json!({"data": {"k": format!("{}", i + 2)}}));
        api.patch("c", &PatchParams::default(), &patch).await?;
    }
    let status = api_error(
        api.list(&ListParams::default().limit(2).continue_token(&token))
            .await,
    )?;
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert!(
        status
            .message
            .starts_with("The provided continue parameter is too old to display a consistent list result."),
        "{}",
        status.message
    );
    // The Status carries a token that goes on from the present state.
    let inconsistent = status
        .metadata
        .and_then(|m| m.continue_)
        .ok_or("no token in the Expired status")?;
    let rest = api
        .list(&ListParams::default().limit(2).continue_token(&inconsistent))
        .await?;
    assert_eq!(shown(&rest), ["c=6", "d=1"]);
    assert_eq!(
        rest.metadata.resource_version,
        Some(env.resource_version().to_string())
    );
    Ok(())
}

#[tokio::test]
async fn exact_resource_version_reads_the_past() -> TestResult {
    let env = TestEnv::builder()
        .namespace("p")
        .history_window(4)
        .start()
        .await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "p");
    api.create(&PostParams::default(), &cm("a", "1")?).await?;
    let then = env.resource_version().to_string();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "2"}})),
    )
    .await?;
    api.create(&PostParams::default(), &cm("b", "1")?).await?;

    let exact = ListParams::default().at(&then).matching(VersionMatch::Exact);
    let past = api.list(&exact).await?;
    assert_eq!(shown(&past), ["a=1"]);
    assert_eq!(past.metadata.resource_version.as_deref(), Some(then.as_str()));
    // NotOlderThan (and no match without a limit) reads the present.
    let recent = api
        .list(
            &ListParams::default()
                .at(&then)
                .matching(VersionMatch::NotOlderThan),
        )
        .await?;
    assert_eq!(shown(&recent), ["a=2", "b=1"]);
    // A resourceVersion with a limit and no match is Exact (kube-apiserver's legacy rule).
    let legacy = api.list(&ListParams::default().at(&then).limit(10)).await?;
    assert_eq!(shown(&legacy), ["a=1"]);

    for i in 0..5 {
        let patch = Patch::Merge(json!({"data": {"k": format!("{}", i + 3)}}));
        api.patch("b", &PatchParams::default(), &patch).await?;
    }
    let status = api_error(api.list(&exact).await)?;
    assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
    assert_eq!(
        status.message,
        "The resourceVersion for the provided list is too old."
    );
    Ok(())
}

#[tokio::test]
async fn continue_with_a_resource_version_is_a_bad_request() -> TestResult {
    let env = TestEnv::builder().namespace("p").start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "p");
    for name in ["a", "b"] {
        api.create(&PostParams::default(), &cm(name, "1")?).await?;
    }
    let first = api.list(&ListParams::default().limit(1)).await?;
    let token = first.metadata.continue_.clone().ok_or("no continue token")?;
    // (kube's ListParams drops resourceVersion with a continue token: a raw request.)
    let token: String = token
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    let request = http::Request::get(format!(
        "/api/v1/namespaces/p/configmaps?limit=1&continue={token}&resourceVersion=5"
    ))
    .body(Vec::new())?;
    let status = api_error(env.client().request_text(request).await)?;
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    assert_eq!(
        status.message,
        "specifying resource version is not allowed when using continue"
    );
    Ok(())
}
