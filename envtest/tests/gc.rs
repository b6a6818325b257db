//! The garbage collector against the kube client and kubectl: background, foreground and
//! orphan cascading, `propagationPolicy` / `orphanDependents` on DELETE and
//! deletecollection, several owners, dangling owner uids, references across namespaces,
//! and a server with the collector turned off.

use std::path::PathBuf;
use std::time::Duration;

use envtest::TestEnv;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace, Secret};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams, PropagationPolicy};
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client, Resource, ResourceExt};
use serde_json::{Value, json};

type TestResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Upper bound of every wait: the collector acts within milliseconds.
const WAIT: Duration = Duration::from_secs(20);

struct Owned {
    api_version: String,
    kind: String,
    name: String,
    uid: String,
    block: bool,
}

fn owner_of<K: Resource<DynamicType = ()>>(owner: &K, block: bool) -> Owned {
    Owned {
        api_version: K::api_version(&()).into_owned(),
        kind: K::kind(&()).into_owned(),
        name: owner.meta().name.clone().unwrap_or_default(),
        uid: owner.meta().uid.clone().unwrap_or_default(),
        block,
    }
}

fn configmap(name: &str, owners: &[Owned], finalizers: &[&str]) -> TestResult<ConfigMap> {
    let refs: Vec<Value> = owners
        .iter()
        .map(|o| {
            json!({"apiVersion": o.api_version, "kind": o.kind, "name": o.name, "uid": o.uid,
                   "blockOwnerDeletion": o.block})
        })
        .collect();
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": refs, "finalizers": finalizers},
        "data": {"k": "v"},
    }))?)
}

async fn create(
    api: &Api<ConfigMap>,
    name: &str,
    owners: &[Owned],
    finalizers: &[&str],
) -> TestResult<ConfigMap> {
    Ok(api
        .create(&PostParams::default(), &configmap(name, owners, finalizers)?)
        .await?)
}

/// Waits until the object `name` with `uid` is gone.
async fn gone<K>(api: &Api<K>, name: &str, uid: &str) -> TestResult
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), name, conditions::is_deleted(uid)),
    )
    .await
    .map_err(|_| format!("{name} was not deleted"))??;
    Ok(())
}

/// Waits until `test` holds for the object `name` (which must exist).
async fn until<K>(api: &Api<K>, name: &str, test: impl Fn(&K) -> bool) -> TestResult<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let found = tokio::time::timeout(
        WAIT,
        await_condition(api.clone(), name, move |o: Option<&K>| o.is_some_and(&test)),
    )
    .await
    .map_err(|_| format!("{name} never reached the expected state"))??;
    found.ok_or_else(|| format!("{name} is gone").into())
}

fn owner_uids(object: &impl Resource) -> Vec<String> {
    object
        .meta()
        .owner_references
        .iter()
        .flatten()
        .map(|r| r.uid.clone())
        .collect()
}

async fn env(namespaces: &[&str]) -> TestResult<(TestEnv, Client)> {
    let mut builder = TestEnv::builder();
    for ns in namespaces {
        builder = builder.namespace(*ns);
    }
    let env = builder.start().await?;
    let client = env.client();
    Ok((env, client))
}

fn delete_with(policy: PropagationPolicy) -> DeleteParams {
    DeleteParams {
        propagation_policy: Some(policy),
        ..DeleteParams::default()
    }
}

async fn remove_finalizers(api: &Api<ConfigMap>, name: &str) -> TestResult {
    let patch = json!({"metadata": {"finalizers": null}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[tokio::test]
async fn background_deletes_dependents_after_the_owner_and_keeps_those_with_a_live_owner() -> TestResult {
    let (_env, client) = env(&["gc"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gc");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "gc");
    let owner = create(&cms, "owner", &[], &[]).await?;
    let other = create(&cms, "other", &[], &[]).await?;
    let only = create(&cms, "only", &[owner_of(&owner, false)], &[]).await?;
    create(
        &cms,
        "both",
        &[owner_of(&owner, false), owner_of(&other, true)],
        &[],
    )
    .await?;
    let secret: Secret = serde_json::from_value(json!({"metadata": {"name": "s",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.uid()}]}}))?;
    let secret = secrets.create(&PostParams::default(), &secret).await?;

    // The DELETE answers at once with the owner gone (background is the default).
    let deleted = cms.delete("owner", &DeleteParams::default()).await?;
    assert!(deleted.is_right(), "the owner is gone when the DELETE answers");
    assert!(cms.get_opt("owner").await?.is_none());

    gone(&cms, "only", &only.uid().unwrap_or_default()).await?;
    gone(&secrets, "s", &secret.uid().unwrap_or_default()).await?;
    // A dependent with a live owner left stays and loses only the dead reference.
    let both = until(&cms, "both", |cm| owner_uids(cm).len() == 1).await?;
    assert_eq!(owner_uids(&both), vec![other.uid().unwrap_or_default()]);
    assert_eq!(
        both.data.as_ref().and_then(|d| d.get("k")).map(String::as_str),
        Some("v")
    );

    // Once the last owner goes, so does the dependent.
    cms.delete("other", &DeleteParams::default()).await?;
    gone(&cms, "both", &both.uid().unwrap_or_default()).await?;
    Ok(())
}

#[tokio::test]
async fn a_dependent_whose_owner_uid_matches_no_object_is_deleted() -> TestResult {
    let (_env, client) = env(&["gc"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gc");
    let owner = create(&cms, "owner", &[], &[]).await?;
    // Same name, another uid: the reference is dangling.
    let stale = Owned {
        uid: "00000000-0000-4000-8000-000000000000".into(),
        ..owner_of(&owner, false)
    };
    let dependent = create(&cms, "dependent", &[stale], &[]).await?;
    gone(&cms, "dependent", &dependent.uid().unwrap_or_default()).await?;
    assert!(
        cms.get_opt("owner").await?.is_some(),
        "the owner named is left alone"
    );
    Ok(())
}

#[tokio::test]
async fn foreground_keeps_the_owner_until_blocking_dependents_are_gone() -> TestResult {
    let (_env, client) = env(&["gc"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gc");
    let owner = create(&cms, "owner", &[], &[]).await?;
    let blocking = create(&cms, "blocking", &[owner_of(&owner, true)], &["example.com/hold"]).await?;
    let free = create(&cms, "free", &[owner_of(&owner, false)], &[]).await?;

    let answered = cms
        .delete("owner", &delete_with(PropagationPolicy::Foreground))
        .await?;
    let answered = answered
        .left()
        .ok_or("the owner must stay while its dependents go")?;
    assert!(answered.meta().deletion_timestamp.is_some());
    assert_eq!(answered.finalizers(), ["foregroundDeletion"]);

    // Every dependent is deleted; the non-blocking one goes, the blocking one waits on its
    // own finalizer, and the owner waits on it.
    gone(&cms, "free", &free.uid().unwrap_or_default()).await?;
    until(&cms, "blocking", |cm| cm.meta().deletion_timestamp.is_some()).await?;
    let waiting = cms.get("owner").await?;
    assert_eq!(waiting.finalizers(), ["foregroundDeletion"]);

    remove_finalizers(&cms, "blocking").await?;
    gone(&cms, "blocking", &blocking.uid().unwrap_or_default()).await?;
    gone(&cms, "owner", &owner.uid().unwrap_or_default()).await?;
    Ok(())
}

#[tokio::test]
async fn orphan_removes_the_reference_then_the_finalizer() -> TestResult {
    let (env, client) = env(&["gc"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gc");
    let owner = create(&cms, "owner", &[], &[]).await?;
    let keeper = create(&cms, "keeper", &[], &[]).await?;
    create(
        &cms,
        "child",
        &[owner_of(&owner, true), owner_of(&keeper, false)],
        &[],
    )
    .await?;
    create(&cms, "lone", &[owner_of(&owner, true)], &[]).await?;

    cms.delete("owner", &delete_with(PropagationPolicy::Orphan))
        .await?;
    gone(&cms, "owner", &owner.uid().unwrap_or_default()).await?;
    let child = until(&cms, "child", |cm| owner_uids(cm).len() == 1).await?;
    assert_eq!(owner_uids(&child), vec![keeper.uid().unwrap_or_default()]);
    let lone = cms.get("lone").await?;
    assert!(
        owner_uids(&lone).is_empty(),
        "orphaned: {:?}",
        lone.meta().owner_references
    );

    // The deprecated orphanDependents=true orphans too.
    let owner = create(&cms, "owner2", &[], &[]).await?;
    create(&cms, "child2", &[owner_of(&owner, false)], &[]).await?;
    let orphan = json!({"orphanDependents": true});
    let reply = raw_delete(&env, "/api/v1/namespaces/gc/configmaps/owner2", &orphan).await?;
    assert_eq!(reply.0, 200);
    assert_eq!(reply.1["metadata"]["finalizers"], json!(["orphan"]));
    gone(&cms, "owner2", &owner.uid().unwrap_or_default()).await?;
    assert!(owner_uids(&cms.get("child2").await?).is_empty());
    Ok(())
}

#[tokio::test]
async fn delete_options_are_validated_and_answered_as_kube_does() -> TestResult {
    let (env, client) = env(&["gc"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gc");
    create(&cms, "held", &[], &["example.com/hold"]).await?;

    let both = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Orphan", "orphanDependents": true});
    let reply = raw_delete(&env, "/api/v1/namespaces/gc/configmaps/held", &both).await?;
    assert_eq!(reply.0, 422);
    assert_eq!(
        reply.1["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Orphan\": orphanDependents and deletionPropagation cannot be both set"
    );
    let unknown = json!({"propagationPolicy": "Sideways"});
    let reply = raw_delete(&env, "/api/v1/namespaces/gc/configmaps/held", &unknown).await?;
    assert_eq!(reply.0, 422);
    assert_eq!(
        reply.1["details"]["causes"][0]["reason"],
        "FieldValueNotSupported"
    );

    // orphanDependents=false on an object that stays: 202 Accepted, in the query too.
    let reply = raw_delete(
        &env,
        "/api/v1/namespaces/gc/configmaps/held?orphanDependents=false",
        &Value::Null,
    )
    .await?;
    assert_eq!(reply.0, 202);
    assert_eq!(reply.1["metadata"]["finalizers"], json!(["example.com/hold"]));
    // A second DELETE may change the policy of an object being deleted.
    let reply = raw_delete(
        &env,
        "/api/v1/namespaces/gc/configmaps/held?propagationPolicy=Orphan",
        &Value::Null,
    )
    .await?;
    assert_eq!(reply.0, 200);
    assert_eq!(
        reply.1["metadata"]["finalizers"],
        json!(["example.com/hold", "orphan"])
    );
    Ok(())
}

async fn raw_delete(env: &TestEnv, path: &str, body: &Value) -> TestResult<(u16, Value)> {
    use http_body_util::BodyExt;
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(body)?
    };
    let request = http::Request::builder()
        .method("DELETE")
        .uri(path)
        .header("content-type", "application/json")
        .body(kube::client::Body::from(bytes))?;
    let response = env.client().send(request).await?;
    let code = response.status().as_u16();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((code, serde_json::from_slice(&bytes).unwrap_or(Value::Null)))
}

#[tokio::test]
async fn deletecollection_propagates_its_policy() -> TestResult {
    let (_env, client) = env(&["gc"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gc");
    let labelled = |name: &str, owners: &[Owned]| -> TestResult<ConfigMap> {
        let mut cm = configmap(name, owners, &[])?;
        cm.metadata.labels = Some([("role".to_string(), "owner".to_string())].into());
        Ok(cm)
    };
    let a = cms.create(&PostParams::default(), &labelled("a", &[])?).await?;
    let b = cms.create(&PostParams::default(), &labelled("b", &[])?).await?;
    create(&cms, "of-a", &[owner_of(&a, true)], &[]).await?;
    let of_b = create(&cms, "of-b", &[owner_of(&b, true)], &[]).await?;

    let list = ListParams::default().labels("role=owner");
    cms.delete_collection(&delete_with(PropagationPolicy::Orphan), &list)
        .await?;
    gone(&cms, "a", &a.uid().unwrap_or_default()).await?;
    gone(&cms, "b", &b.uid().unwrap_or_default()).await?;
    assert!(owner_uids(&until(&cms, "of-a", |cm| owner_uids(cm).is_empty()).await?).is_empty());

    // Background through deletecollection: the dependents follow their owners.
    let c = cms.create(&PostParams::default(), &labelled("c", &[])?).await?;
    let of_c = create(&cms, "of-c", &[owner_of(&c, false)], &[]).await?;
    cms.delete_collection(&delete_with(PropagationPolicy::Background), &list)
        .await?;
    gone(&cms, "of-c", &of_c.uid().unwrap_or_default()).await?;
    assert!(
        cms.get_opt("of-b")
            .await?
            .is_some_and(|cm| cm.uid() == of_b.uid())
    );
    Ok(())
}

#[tokio::test]
async fn references_across_namespaces_are_not_followed_and_get_an_event() -> TestResult {
    let (_env, client) = env(&["a", "b"]).await?;
    let in_a: Api<ConfigMap> = Api::namespaced(client.clone(), "a");
    let in_b: Api<ConfigMap> = Api::namespaced(client.clone(), "b");
    let owner = create(&in_a, "owner", &[], &[]).await?;
    let stray = create(&in_b, "stray", &[owner_of(&owner, false)], &[]).await?;
    // The owner is looked up in the dependent's namespace only: absent, so it goes.
    gone(&in_b, "stray", &stray.uid().unwrap_or_default()).await?;
    assert!(in_a.get_opt("owner").await?.is_some());
    let events: Api<Event> = Api::namespaced(client.clone(), "b");
    let event = wait_for_event(&events, "OwnerRefInvalidNamespace").await?;
    assert_eq!(event.type_.as_deref(), Some("Warning"));
    assert_eq!(event.involved_object.name.as_deref(), Some("stray"));
    assert_eq!(event.involved_object.uid, stray.uid());
    assert_eq!(
        event.message.as_deref(),
        Some(
            format!(
                "ownerRef [v1/ConfigMap, namespace: b, name: owner, uid: {}] does not exist in namespace \"b\"",
                owner.uid().unwrap_or_default()
            )
            .as_str()
        )
    );

    // A cluster-scoped dependent cannot have a namespaced owner.
    let roles: Api<ClusterRole> = Api::all(client.clone());
    let role: ClusterRole = serde_json::from_value(json!({"metadata": {"name": "stray-role",
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.uid()}]}}))?;
    let role = roles.create(&PostParams::default(), &role).await?;
    gone(&roles, "stray-role", &role.uid().unwrap_or_default()).await?;
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let event = wait_for_event(&events, "OwnerRefInvalidNamespace").await?;
    assert_eq!(event.involved_object.kind.as_deref(), Some("ClusterRole"));

    // A namespaced dependent may have a cluster-scoped owner.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns_b = namespaces.get("b").await?;
    let root = roles
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "root"}}))?,
        )
        .await?;
    let held = create(&in_b, "held", &[owner_of(&root, false)], &[]).await?;
    let _ = ns_b;
    roles.delete("root", &DeleteParams::default()).await?;
    gone(&in_b, "held", &held.uid().unwrap_or_default()).await?;
    Ok(())
}

async fn wait_for_event(events: &Api<Event>, reason: &str) -> TestResult<Event> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let list = events.list(&ListParams::default()).await?;
        if let Some(event) = list
            .items
            .into_iter()
            .find(|e| e.reason.as_deref() == Some(reason))
        {
            return Ok(event);
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("no {reason} event").into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn without_the_collector_references_are_left_alone() -> TestResult {
    let env = TestEnv::builder()
        .namespace("gc")
        .garbage_collection(false)
        .start()
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "gc");
    let owner = create(&cms, "owner", &[], &[]).await?;
    let stale = Owned {
        uid: "00000000-0000-4000-8000-000000000000".into(),
        ..owner_of(&owner, false)
    };
    create(&cms, "dangling", &[stale], &[]).await?;
    create(&cms, "dependent", &[owner_of(&owner, true)], &[]).await?;
    // Foreground is ignored: no finalizer, the owner goes at once.
    let answered = cms
        .delete("owner", &delete_with(PropagationPolicy::Foreground))
        .await?;
    assert!(answered.is_right());
    // A later write is a point after which the collector would have acted.
    create(&cms, "marker", &[], &[]).await?;
    assert!(cms.get_opt("dangling").await?.is_some());
    assert!(cms.get_opt("dependent").await?.is_some());
    Ok(())
}

fn kubectl_available() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir: PathBuf| dir.join("kubectl").is_file()))
}

async fn kubectl(env: &TestEnv, args: &[&str]) -> TestResult<(bool, String, String)> {
    let dir = std::env::temp_dir().join(format!("envtest-gc-{}-{}", std::process::id(), env.addr().port()));
    let mut command = tokio::process::Command::new("kubectl");
    command
        .arg("--kubeconfig")
        .arg(env.kubeconfig_path()?)
        .arg("--cache-dir")
        .arg(dir.join("cache"))
        .args(args)
        .kill_on_drop(true);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .map_err(|_| format!("kubectl {args:?} did not finish"))??;
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

#[tokio::test]
async fn kubectl_delete_cascade_modes() -> TestResult {
    if !kubectl_available() {
        eprintln!("kubectl is not installed: skipping (CI requires it)");
        return Ok(());
    }
    let (env, client) = env(&["gc"]).await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "gc");
    for mode in ["foreground", "background", "orphan"] {
        let owner = create(&cms, &format!("owner-{mode}"), &[], &[]).await?;
        let child = create(&cms, &format!("child-{mode}"), &[owner_of(&owner, true)], &[]).await?;
        let cascade = format!("--cascade={mode}");
        let (ok, out, err) = kubectl(
            &env,
            &["-n", "gc", "delete", "configmap", &owner.name_any(), &cascade],
        )
        .await?;
        assert!(ok, "kubectl delete {cascade}: {err}");
        assert_eq!(out.trim(), format!("configmap \"owner-{mode}\" deleted"));
        // kubectl waits for the owner to be gone: in the foreground, the child went first.
        assert!(cms.get_opt(&owner.name_any()).await?.is_none());
        let child_uid = child.uid().unwrap_or_default();
        match mode {
            "foreground" => assert!(cms.get_opt(&child.name_any()).await?.is_none()),
            "background" => gone(&cms, &child.name_any(), &child_uid).await?,
            _ => {
                let left = cms.get(&child.name_any()).await?;
                assert!(owner_uids(&left).is_empty());
            }
        }
    }
    Ok(())
}
