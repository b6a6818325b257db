//! The envtest server driven by the kube client: CRUD, conflicts, finalizers,
//! subresources, selectors, pagination and error reasons.

use std::time::Duration;

use envtest::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use kube::core::Status;
use kube::{Api, CustomResource, CustomResourceExt, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A test custom resource with status and scale subresources.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "test.example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wd",
    category = "all",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    )
)]
pub struct WidgetSpec {
    /// Replicas.
    pub replicas: i32,
    /// Free text.
    #[serde(default)]
    pub note: String,
}

/// Status of a Widget.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
pub struct WidgetStatus {
    /// Observed replicas.
    pub replicas: i32,
    /// Selector.
    #[serde(default)]
    pub selector: String,
}

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> Result<Box<Status>, String> {
    match result {
        Err(kube::Error::Api(status)) => Ok(status),
        other => Err(format!("expected an API error, got {other:?}")),
    }
}

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "data": {"k": "v"}
    }))
    .unwrap_or_default()
}

#[tokio::test]
async fn configmap_crud_and_errors() -> TestResult {
    let env = TestEnv::builder().namespace("test").start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "test");
    let created = api.create(&PostParams::default(), &cm("a")).await?;
    let meta = &created.metadata;
    assert!(meta.uid.is_some());
    assert!(meta.creation_timestamp.is_some());
    let rv1: u64 = created.resource_version().unwrap_or_default().parse()?;

    // AlreadyExists
    let status = api_error(api.create(&PostParams::default(), &cm("a")).await)?;
    assert_eq!((status.code, status.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(status.message, "configmaps \"a\" already exists");

    // Invalid name
    let status = api_error(api.create(&PostParams::default(), &cm("Bad_Name")).await)?;
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    assert!(
        status
            .message
            .starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value")
    );

    // NotFound
    let status = api_error(api.get("missing").await)?;
    assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"));
    assert_eq!(status.message, "configmaps \"missing\" not found");

    // Missing namespace
    let missing: Api<ConfigMap> = Api::namespaced(env.client(), "nope");
    let status = api_error(missing.create(&PostParams::default(), &cm("x")).await)?;
    assert_eq!(status.code, 404);
    assert_eq!(status.message, "namespaces \"nope\" not found");

    // Update bumps the global rv; stale rv conflicts.
    let mut changed = created.clone();
    changed.data = Some([("k".to_string(), "w".to_string())].into());
    let updated = api.replace("a", &PostParams::default(), &changed).await?;
    let rv2: u64 = updated.resource_version().unwrap_or_default().parse()?;
    assert!(rv2 > rv1);
    let status = api_error(api.replace("a", &PostParams::default(), &changed).await)?;
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        status.message,
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // No-op update keeps the resourceVersion.
    let same = api.replace("a", &PostParams::default(), &updated).await?;
    assert_eq!(same.resource_version(), updated.resource_version());

    // generateName
    let mut generated = cm("");
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let generated = api.create(&PostParams::default(), &generated).await?;
    assert!(generated.name_any().starts_with("gen-") && generated.name_any().len() == 9);

    // Merge and JSON patch
    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"m": "1"}})),
        )
        .await?;
    assert_eq!(
        patched.data.as_ref().and_then(|d| d.get("m")).map(String::as_str),
        Some("1")
    );
    let json_patch: json_patch::Patch = serde_json::from_value(json!([{"op": "remove", "path": "/data/m"}]))?;
    let patched = api
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(json_patch))
        .await?;
    assert!(patched.data.as_ref().is_some_and(|d| !d.contains_key("m")));

    // dryRun does not persist.
    let dry = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &cm("dry"),
        )
        .await?;
    assert_eq!(dry.name_any(), "dry");
    assert!(api_error(api.get("dry").await).is_ok());

    // Delete preconditions
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("wrong".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let status = api_error(api.delete("a", &dp).await)?;
    assert_eq!(status.code, 409);
    assert!(
        status
            .message
            .contains("Precondition failed: UID in precondition: wrong")
    );
    api.delete("a", &DeleteParams::default()).await?;
    assert!(api_error(api.get("a").await).is_ok());
    Ok(())
}

#[tokio::test]
async fn selectors_and_pagination() -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for i in 0..25 {
        let mut object = cm(&format!("cm-{i:02}"));
        object.metadata.labels = Some(
            [(
                "app".to_string(),
                if i % 2 == 0 { "even" } else { "odd" }.to_string(),
            )]
            .into(),
        );
        api.create(&PostParams::default(), &object).await?;
    }
    let even = api.list(&ListParams::default().labels("app=even")).await?;
    assert_eq!(even.items.len(), 13);
    let in_set = api
        .list(&ListParams::default().labels("app in (even,odd)"))
        .await?;
    assert_eq!(in_set.items.len(), 25);
    let not = api.list(&ListParams::default().labels("app!=even")).await?;
    assert_eq!(not.items.len(), 12);
    let missing = api.list(&ListParams::default().labels("!app")).await?;
    assert_eq!(missing.items.len(), 0);
    let named = api
        .list(&ListParams::default().fields("metadata.name=cm-03"))
        .await?;
    assert_eq!(named.items.len(), 1);

    let mut names = Vec::new();
    let mut params = ListParams::default().limit(10);
    loop {
        let page = api.list(&params).await?;
        names.extend(page.items.iter().map(ResourceExt::name_any));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(names.len(), 25);
    assert_eq!(names.first().map(String::as_str), Some("cm-00"));

    let status = api_error(api.list(&ListParams::default().labels("app in in")).await)?;
    assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
    let status = api_error(api.list(&ListParams::default().fields("spec.x=1")).await)?;
    assert_eq!(status.code, 400);
    Ok(())
}

/// Pages of one namespace stay in it, and each says how many items remain, as
/// kube-apiserver's do; pages across namespaces read on from one to the next.
#[tokio::test]
async fn pages_stay_in_their_namespace_and_count_what_remains() -> TestResult {
    let env = TestEnv::start().await?;
    let namespaces: Api<Namespace> = Api::all(env.client());
    for (namespace, count) in [("a", 1), ("ns", 5), ("ns-2", 2)] {
        let object = serde_json::from_value(json!({"metadata": {"name": namespace}}))?;
        namespaces.create(&PostParams::default(), &object).await?;
        let api: Api<ConfigMap> = Api::namespaced(env.client(), namespace);
        for i in 0..count {
            api.create(&PostParams::default(), &cm(&format!("cm-{i}")))
                .await?;
        }
    }
    let pages = |api: Api<ConfigMap>| async move {
        let (mut seen, mut params) = (Vec::new(), ListParams::default().limit(2));
        loop {
            let page = api.list(&params).await?;
            let names = page
                .items
                .iter()
                .map(|o| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()));
            seen.push((names.collect::<Vec<_>>(), page.metadata.remaining_item_count));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => return Ok::<_, kube::Error>(seen),
            }
        }
    };
    let in_ns = pages(Api::namespaced(env.client(), "ns")).await?;
    let expected = vec![
        (vec!["ns/cm-0".to_owned(), "ns/cm-1".to_owned()], Some(3)),
        (vec!["ns/cm-2".to_owned(), "ns/cm-3".to_owned()], Some(1)),
        (vec!["ns/cm-4".to_owned()], None),
    ];
    assert_eq!(in_ns, expected);
    let everywhere: Vec<String> = pages(Api::all(env.client()))
        .await?
        .into_iter()
        .flat_map(|(names, _)| names)
        .collect();
    let expected = [
        "a/cm-0",
        "ns/cm-0",
        "ns/cm-1",
        "ns/cm-2",
        "ns/cm-3",
        "ns/cm-4",
        "ns-2/cm-0",
        "ns-2/cm-1",
    ];
    assert!(
        everywhere
            .iter()
            .filter(|n| !n.starts_with("kube-"))
            .eq(expected.iter()),
        "{everywhere:?}"
    );
    Ok(())
}

#[tokio::test]
async fn custom_resources_status_scale_finalizers() -> TestResult {
    let env = TestEnv::builder().crd::<Widget>().start().await?;
    let api: Api<Widget> = Api::namespaced(env.client(), "default");
    let mut widget = Widget::new(
        "w",
        WidgetSpec {
            replicas: 1,
            note: String::new(),
        },
    );
    widget.status = Some(WidgetStatus {
        replicas: 9,
        selector: String::new(),
    });
    let created = api.create(&PostParams::default(), &widget).await?;
    assert_eq!(created.metadata.generation, Some(1));
    assert!(created.status.is_none(), "status is dropped on create");

    // Status through the main endpoint is ignored; /status changes only status.
    let patched = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 3}})),
        )
        .await?;
    assert!(patched.status.is_none());
    assert_eq!(patched.metadata.generation, Some(1));
    let patched = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}, "status": {"replicas": 3, "selector": "a=b"}})),
        )
        .await?;
    assert_eq!(patched.status.as_ref().map(|s| s.replicas), Some(3));
    assert_eq!(patched.spec.replicas, 1);
    assert_eq!(patched.metadata.generation, Some(1));

    // Spec change bumps generation.
    let patched = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"note": "x"}})),
        )
        .await?;
    assert_eq!(patched.metadata.generation, Some(2));

    // Scale subresource.
    let scale = api.get_scale("w").await?;
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(1));
    assert_eq!(scale.status.as_ref().map(|s| s.replicas), Some(3));
    assert_eq!(
        scale.status.as_ref().and_then(|s| s.selector.clone()).as_deref(),
        Some("a=b")
    );
    api.patch_scale(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 5}})),
    )
    .await?;
    assert_eq!(api.get("w").await?.spec.replicas, 5);

    // Strategic merge patch is 415 for custom resources.
    let status = api_error(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"replicas": 2}})),
        )
        .await,
    )?;
    assert_eq!(
        (status.code, status.reason.as_str()),
        (415, "UnsupportedMediaType")
    );

    // Update without resourceVersion is Invalid for custom resources.
    let mut current = api.get("w").await?;
    current.metadata.resource_version = None;
    let status = api_error(api.replace("w", &PostParams::default(), &current).await)?;
    assert_eq!(status.code, 422);

    // Finalizers keep the object until removed; no new ones once deleting.
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["a/b"]}})),
    )
    .await?;
    let deleted = api.delete("w", &DeleteParams::default()).await?;
    assert!(deleted.is_left(), "object returned while finalizers are pending");
    let deleting = api.get("w").await?;
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let status = api_error(
        api.patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["a/b", "c/d"]}})),
        )
        .await,
    )?;
    assert_eq!(status.code, 422);
    assert!(
        status
            .message
            .contains("no new finalizers can be added if the object is being deleted")
    );
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    assert!(api_error(api.get("w").await).is_ok());
    Ok(())
}

#[tokio::test]
async fn crd_lifecycle_and_discovery() -> TestResult {
    let env = TestEnv::start().await?;
    let client = env.client();
    let crds: Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = Api::all(client.clone());
    let crd = crds.create(&PostParams::default(), &Widget::crd()).await?;
    let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "NamesAccepted" && c.status == "True")
    );

    let discovery = kube::Discovery::new(client.clone()).run().await?;
    let group = discovery
        .groups()
        .find(|g| g.name() == "test.example.com")
        .ok_or("group not discovered")?;
    let (resource, caps) = group.recommended_kind("Widget").ok_or("kind not discovered")?;
    assert_eq!(resource.plural, "widgets");
    assert!(
        caps.subresources
            .iter()
            .any(|(r, _)| r.plural == "widgets/status" || r.plural == "status")
    );

    let api: Api<Widget> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &Widget::new("w", WidgetSpec::default()))
        .await?;
    crds.delete("widgets.test.example.com", &DeleteParams::default())
        .await?;
    let status = api_error(api.list(&ListParams::default()).await)?;
    assert_eq!(status.code, 404);

    // Namespace deletion removes its objects.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": "gone"}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gone");
    cms.create(&PostParams::default(), &cm("c")).await?;
    namespaces.delete("gone", &DeleteParams::default()).await?;
    let status = api_error(cms.get("c").await)?;
    assert_eq!(status.code, 404);
    tokio::time::timeout(Duration::from_secs(5), async {
        while namespaces.get_opt("gone").await.ok().flatten().is_some() {
            tokio::task::yield_now().await;
        }
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn unauthenticated_is_401() -> TestResult {
    // An authenticated user with no role is forbidden (RBAC is enforced); a member of
    // system:masters is allowed; no token at all is 401.
    let env = TestEnv::builder()
        .user("bob", &["devs"])
        .user("root", &["system:masters"])
        .start()
        .await?;
    let bob: Api<ConfigMap> = Api::namespaced(env.client_as("bob").await?, "default");
    let status = api_error(bob.list(&ListParams::default()).await)?;
    assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
    let root: Api<ConfigMap> = Api::namespaced(env.client_as("root").await?, "default");
    root.list(&ListParams::default()).await?;
    let mut config = kube::Config::new(env.url().parse()?);
    config.root_cert = None;
    config.accept_invalid_certs = true;
    let anonymous = kube::Client::try_from(config)?;
    let api: Api<ConfigMap> = Api::namespaced(anonymous, "default");
    let status = api_error(api.list(&ListParams::default()).await)?;
    assert_eq!((status.code, status.reason.as_str()), (401, "Unauthorized"));
    Ok(())
}
