//! Object lifecycle answers as kube-apiserver gives them: replicas behind a scale
//! subresource validated, a DELETE held by finalizers bumping the generation, `/status`
//! and `/scale` only where a version declares them, and the resourceVersion / uid
//! preconditions of create, update and get.

mod common;

use common::{Reply, TestResult, call, create, get};
use envtest::TestEnv;
use serde_json::{Value, json};

/// A CRD with two versions: `v1` declares status and scale, `v2` neither.
fn gadgets() -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}, "note": {"type": "string"}}},
        "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
    }}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.test.example.com"},
        "spec": {
            "group": "test.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema,
                 "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}},
                {"name": "v2", "served": true, "storage": false, "schema": schema},
            ],
        },
    })
}

const V1: &str = "/apis/test.example.com/v1/namespaces/default/gadgets";
const V2: &str = "/apis/test.example.com/v2/namespaces/default/gadgets";

async fn env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    let crd = serde_json::from_value(gadgets())?;
    Ok(TestEnv::builder()
        .crd_object(crd)
        .garbage_collection(false)
        .start()
        .await?)
}

fn gadget(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "test.example.com/v1", "kind": "Gadget",
           "metadata": {"name": name}, "spec": {"replicas": replicas}})
}

async fn put(env: &TestEnv, path: &str, body: &Value) -> Result<Reply, Box<dyn std::error::Error>> {
    call(env, "PUT", path, "application/json", body).await
}

async fn patch(env: &TestEnv, path: &str, body: &Value) -> Result<Reply, Box<dyn std::error::Error>> {
    call(env, "PATCH", path, "application/merge-patch+json", body).await
}

const NEGATIVE: &str = "Gadget.test.example.com \"g\" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer";

#[tokio::test]
async fn replicas_behind_a_scale_subresource_are_validated() -> TestResult {
    let env = env().await?;
    let reply = create(&env, V1, &gadget("g", -1)).await?;
    assert_eq!(reply.code, 422, "{}", reply.body);
    assert_eq!(reply.body["message"], NEGATIVE);
    assert_eq!(
        reply.causes(),
        vec![(
            ".spec.replicas".to_string(),
            "FieldValueInvalid".to_string(),
            "Invalid value: -1: should be a non-negative integer".to_string()
        )]
    );
    assert_eq!(create(&env, V1, &gadget("g", 1)).await?.code, 201);

    // The main resource.
    let reply = patch(&env, &format!("{V1}/g"), &json!({"spec": {"replicas": -1}})).await?;
    assert_eq!(
        (reply.code, reply.body["message"].clone()),
        (422, json!(NEGATIVE))
    );
    // The scale subresource.
    let reply = patch(&env, &format!("{V1}/g/scale"), &json!({"spec": {"replicas": -1}})).await?;
    assert_eq!(
        (reply.code, reply.body["message"].clone()),
        (422, json!(NEGATIVE))
    );
    let scale = get(&env, &format!("{V1}/g/scale")).await?;
    assert_eq!(scale.body["spec"]["replicas"], 1, "nothing was written");
    // The status: its replicas too.
    let reply = patch(
        &env,
        &format!("{V1}/g/status"),
        &json!({"status": {"replicas": -3}}),
    )
    .await?;
    assert_eq!(reply.code, 422);
    assert_eq!(
        reply.body["message"],
        "Gadget.test.example.com \"g\" is invalid: .status.replicas: Invalid value: -3: should be a non-negative integer"
    );
    // A version without the scale subresource does not check.
    let mut other = gadget("h", -1);
    other["apiVersion"] = json!("test.example.com/v2");
    assert_eq!(create(&env, V2, &other).await?.code, 201);
    Ok(())
}

#[tokio::test]
async fn a_delete_held_by_finalizers_bumps_the_generation() -> TestResult {
    let env = env().await?;
    let mut held = gadget("g", 1);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let created = create(&env, V1, &held).await?;
    assert_eq!(created.body["metadata"]["generation"], 1);
    let deleted = call(
        &env,
        "DELETE",
        &format!("{V1}/g"),
        "application/json",
        &Value::Null,
    )
    .await?;
    assert_eq!(deleted.code, 200);
    assert_eq!(deleted.body["metadata"]["generation"], 2);
    assert!(deleted.body["metadata"]["deletionTimestamp"].is_string());
    // A second DELETE changes nothing (same resourceVersion, same generation).
    let again = call(
        &env,
        "DELETE",
        &format!("{V1}/g"),
        "application/json",
        &Value::Null,
    )
    .await?;
    assert_eq!(again.body["metadata"]["generation"], 2);
    assert_eq!(
        again.body["metadata"]["resourceVersion"],
        deleted.body["metadata"]["resourceVersion"]
    );
    Ok(())
}

#[tokio::test]
async fn status_and_scale_are_served_only_for_versions_that_declare_them() -> TestResult {
    let env = env().await?;
    assert_eq!(create(&env, V1, &gadget("g", 1)).await?.code, 201);
    assert_eq!(get(&env, &format!("{V1}/g/status")).await?.code, 200);
    assert_eq!(get(&env, &format!("{V1}/g/scale")).await?.code, 200);
    for sub in ["status", "scale"] {
        let reply = get(&env, &format!("{V2}/g/{sub}")).await?;
        assert_eq!(reply.code, 404, "{sub}: {}", reply.body);
        assert_eq!(reply.body["reason"], "NotFound");
        assert_eq!(reply.body["message"], "gadgets.test.example.com \"g\" not found");
        let reply = patch(
            &env,
            &format!("{V2}/g/{sub}"),
            &json!({"status": {"replicas": 1}}),
        )
        .await?;
        assert_eq!(reply.code, 404);
    }
    // A built-in kind without the subresource: its route does not exist.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    assert_eq!(
        create(&env, "/api/v1/namespaces/default/configmaps", &cm)
            .await?
            .code,
        201
    );
    let reply = get(&env, "/api/v1/namespaces/default/configmaps/c/status").await?;
    assert_eq!(reply.code, 404);
    assert_eq!(
        reply.body["message"],
        "the server could not find the requested resource"
    );
    Ok(())
}

#[tokio::test]
async fn resource_version_and_uid_preconditions_answer_as_kube() -> TestResult {
    let env = env().await?;
    // Create with a resourceVersion.
    let mut versioned = gadget("g", 1);
    versioned["metadata"]["resourceVersion"] = json!("7");
    let reply = create(&env, V1, &versioned).await?;
    assert_eq!(reply.code, 500);
    assert_eq!(reply.body["reason"], "InternalError");
    assert_eq!(
        reply.body["message"],
        "Internal error occurred: resourceVersion should not be set on objects to be created"
    );

    // Update with another uid.
    let created = create(&env, V1, &gadget("g", 1)).await?.body;
    let mut other = created.clone();
    other["metadata"]["uid"] = json!("00000000-0000-4000-8000-000000000000");
    let reply = put(&env, &format!("{V1}/g"), &other).await?;
    assert_eq!(reply.code, 409);
    assert_eq!(reply.body["reason"], "Conflict");
    assert_eq!(
        reply.body["message"],
        format!(
            "Operation cannot be fulfilled on gadgets.test.example.com \"g\": Precondition failed: UID in precondition: 00000000-0000-4000-8000-000000000000, UID in object meta: {}",
            created["metadata"]["uid"].as_str().unwrap_or_default()
        )
    );
    // The same uid (or none) is fine.
    assert_eq!(put(&env, &format!("{V1}/g"), &created).await?.code, 200);

    // A GET at a resourceVersion the server has not reached: kube waits, then 504 (read
    // with a client that does not retry it, as kube's client does by default).
    let future = env.resource_version() + 1000;
    let (code, body) = get_once(&env, &format!("{V1}/g?resourceVersion={future}")).await?;
    let reply = Reply {
        code,
        body,
        warnings: Vec::new(),
    };
    assert_eq!(reply.code, 504);
    assert_eq!(reply.body["reason"], "Timeout");
    assert!(
        reply.body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with(&format!("Too large resource version: {future}, current: "))),
        "{}",
        reply.body
    );
    assert_eq!(
        reply.body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    // An older one answers the current object.
    let reply = get(&env, &format!("{V1}/g?resourceVersion=1")).await?;
    assert_eq!(reply.code, 200);
    Ok(())
}

/// One GET, without the kube client's retries of 504.
async fn get_once(env: &TestEnv, path: &str) -> Result<(u16, Value), Box<dyn std::error::Error>> {
    use http_body_util::BodyExt;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&env.kubeconfig())?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.default_retry = false;
    let client = kube::Client::try_from(config)?;
    let request = http::Request::get(path).body(kube::client::Body::empty())?;
    let response = client.send(request).await?;
    let code = response.status().as_u16();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((code, serde_json::from_slice(&bytes)?))
}
