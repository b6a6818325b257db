//! `metadata` validation on create and update for built-in and custom kinds, answered as
//! kube-apiserver does: 422 with kube's field paths and messages, the object unchanged, and
//! the `Warning` for finalizers that are not domain-qualified.

mod common;

use common::{TestResult, call, create, expect, get, put};
use envtest::TestEnv;
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/test/configmaps";
const GADGETS: &str = "/apis/schema.example.com/v1/namespaces/test/gadgets";

async fn gadget_env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut builder = TestEnv::builder().namespace("test");
    for crd in envtest::harness::read_crd_dir(&fixtures)? {
        builder = builder.crd_object(serde_json::from_value(crd)?);
    }
    Ok(builder.start().await?)
}

fn configmap(metadata: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
}

#[tokio::test]
async fn invalid_labels_annotations_finalizers_and_owner_references_are_422() -> TestResult {
    let env = gadget_env().await?;
    let reply = create(
        &env,
        CONFIGMAPS,
        &configmap(json!({
            "name": "bad",
            "labels": {"-key": "ok", "good": "-value"},
            "annotations": {"a/b/c": "x"},
            "finalizers": ["bad finalizer"],
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "controller": true},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "o2", "uid": "u2", "controller": true},
            ],
        })),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(reply.body["reason"], "Invalid");
    let causes = reply.causes();
    let fields: Vec<&str> = causes.iter().map(|(f, _, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "metadata.labels",
            "metadata.labels",
            "metadata.annotations",
            "metadata.ownerReferences.uid",
            "metadata.ownerReferences",
            "metadata.finalizers",
        ]
    );
    assert_eq!(
        causes[0].2,
        "Invalid value: \"-key\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    );
    assert!(
        causes[1]
            .2
            .starts_with("Invalid value: \"-value\": a valid label must be an empty string"),
        "{}",
        causes[1].2
    );
    assert!(
        causes[2]
            .2
            .starts_with("Invalid value: \"a/b/c\": a qualified name must consist of"),
        "{}",
        causes[2].2
    );
    assert_eq!(causes[3].2, "Invalid value: \"\": must not be empty");
    assert!(
        causes[4].2.ends_with("Only one reference can have Controller set to true. Found \"true\" in references for ConfigMap/o1 and ConfigMap/o2"),
        "{}",
        causes[4].2
    );
    assert!(
        causes[5]
            .2
            .starts_with("Invalid value: \"bad finalizer\": name part must consist of"),
        "{}",
        causes[5].2
    );
    assert!(
        reply.body["message"].as_str().is_some_and(
            |m| m.starts_with("ConfigMap \"bad\" is invalid: [metadata.labels: Invalid value: \"-key\"")
        ),
        "{}",
        reply.body["message"]
    );
    expect(&get(&env, &format!("{CONFIGMAPS}/bad")).await?, 404)?;

    // The same rules on update, for a custom resource; the stored object is unchanged.
    let created = create(
        &env,
        GADGETS,
        &json!({"apiVersion": "schema.example.com/v1", "kind": "Gadget", "metadata": {"name": "g", "labels": {"a": "b"}}, "spec": {"mode": "fast"}}),
    )
    .await?;
    expect(&created, 201)?;
    let mut changed = created.body.clone();
    changed["metadata"]["labels"] = json!({"a": "b", "c": "x".repeat(64)});
    let reply = put(&env, &format!("{GADGETS}/g"), &changed).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "metadata.labels".to_string(),
            "FieldValueInvalid".to_string(),
            format!(
                "Invalid value: \"{}\": must be no more than 63 characters",
                "x".repeat(64)
            )
        ),]
    );
    let stored = get(&env, &format!("{GADGETS}/g")).await?;
    assert_eq!(stored.body["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(
        stored.body["metadata"]["resourceVersion"],
        created.body["metadata"]["resourceVersion"]
    );
    Ok(())
}

#[tokio::test]
async fn annotations_over_256_kib_are_too_long() -> TestResult {
    let env = gadget_env().await?;
    let reply = create(
        &env,
        CONFIGMAPS,
        &configmap(json!({"name": "big", "annotations": {"a": "x".repeat(256 * 1024)}})),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "metadata.annotations".to_string(),
            "FieldValueTooLong".to_string(),
            "Too long: must have at most 262144 bytes".to_string()
        )]
    );
    Ok(())
}

#[tokio::test]
async fn finalizers_without_a_domain_are_accepted_with_a_warning() -> TestResult {
    let env = gadget_env().await?;
    let reply = create(
        &env,
        CONFIGMAPS,
        &configmap(json!({"name": "f", "finalizers": ["plain", "example.com/qualified", "kubernetes"]})),
    )
    .await?;
    expect(&reply, 201)?;
    let plain = r#"299 - "metadata.finalizers: \"plain\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers""#;
    assert_eq!(reply.warnings, vec![plain]);
    // An update that keeps the finalizer (a label, as `kubectl label` sends) is not warned
    // again: kube warns about the finalizers an update adds.
    let path = format!("{CONFIGMAPS}/f");
    let label = json!({"metadata": {"labels": {"a": "b"}}});
    let reply = call(&env, "PATCH", &path, "application/merge-patch+json", &label).await?;
    expect(&reply, 200)?;
    assert!(reply.warnings.is_empty(), "{:?}", reply.warnings);
    let readd = json!({"metadata": {"finalizers": ["example.com/qualified", "kubernetes"]}});
    expect(
        &call(&env, "PATCH", &path, "application/merge-patch+json", &readd).await?,
        200,
    )?;
    let readd = json!({"metadata": {"finalizers": ["plain", "example.com/qualified", "kubernetes"]}});
    let reply = call(&env, "PATCH", &path, "application/merge-patch+json", &readd).await?;
    expect(&reply, 200)?;
    assert_eq!(reply.warnings, vec![plain], "added again by this update");
    let reply = call(
        &env,
        "PATCH",
        &format!("{CONFIGMAPS}/f"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": ["example.com/qualified"]}}),
    )
    .await?;
    expect(&reply, 200)?;
    assert!(reply.warnings.is_empty(), "{:?}", reply.warnings);
    Ok(())
}
