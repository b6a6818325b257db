//! How kube-apiserver's decoder answers a create or update body: a custom resource without
//! `kind` or `apiVersion`, duplicate keys under each `fieldValidation` mode, and the
//! `cannot be handled as` prefix of strict decoding errors (custom and built-in kinds).

mod common;

use common::{TestResult, call_raw, expect, get};
use envtest::TestEnv;

const GADGETS: &str = "/apis/schema.example.com/v1/namespaces/test/gadgets";
const CONFIGMAPS: &str = "/api/v1/namespaces/test/configmaps";

async fn gadget_env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut builder = TestEnv::builder().namespace("test");
    for crd in envtest::harness::read_crd_dir(&fixtures)? {
        builder = builder.crd_object(serde_json::from_value(crd)?);
    }
    Ok(builder.start().await?)
}

async fn post(env: &TestEnv, path: &str, body: &str) -> Result<common::Reply, Box<dyn std::error::Error>> {
    call_raw(env, "POST", path, "application/json", body.as_bytes().to_vec()).await
}

#[tokio::test]
async fn a_custom_resource_without_kind_or_api_version_is_refused() -> TestResult {
    let env = gadget_env().await?;
    let body = r#"{"apiVersion":"schema.example.com/v1","metadata":{"name":"a"},"spec":{"mode":"fast"}}"#;
    let reply = post(&env, GADGETS, body).await?;
    expect(&reply, 400)?;
    assert_eq!(reply.body["reason"], "BadRequest");
    assert_eq!(
        reply.body["message"],
        format!(
            "the object provided is unrecognized (must be of type Gadget): Object 'Kind' is missing in '{body}' ({{\"apiVersion\":\"schema.example. ...)"
        )
    );
    let reply = post(
        &env,
        GADGETS,
        r#"{"kind":"Gadget","metadata":{"name":"a"},"spec":{"mode":"fast"}}"#,
    )
    .await?;
    expect(&reply, 400)?;
    assert_eq!(
        reply.body["message"],
        "the API version in the data () does not match the expected API version (schema.example.com/v1)"
    );
    expect(&get(&env, &format!("{GADGETS}/a")).await?, 404)?;
    // Built-in kinds take both from the URL.
    let reply = post(&env, CONFIGMAPS, r#"{"metadata":{"name":"c"},"data":{"k":"v"}}"#).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["kind"], "ConfigMap");
    assert_eq!(reply.body["apiVersion"], "v1");
    Ok(())
}

const DUPLICATED: &str = r#"{"apiVersion":"schema.example.com/v1","kind":"Gadget","metadata":{"name":"d"},"spec":{"mode":"fast","replicas":1,"replicas":2,"foo":1,"ports":[{"name":"a","name":"b"}]}}"#;

#[tokio::test]
async fn duplicate_keys_under_each_field_validation_mode() -> TestResult {
    let env = gadget_env().await?;
    let strict = post(&env, &format!("{GADGETS}?fieldValidation=Strict"), DUPLICATED).await?;
    expect(&strict, 400)?;
    assert_eq!(strict.body["reason"], "BadRequest");
    assert_eq!(
        strict.body["message"],
        "Gadget in version \"v1\" cannot be handled as a Gadget: strict decoding error: duplicate field \"spec.replicas\", duplicate field \"spec.ports[0].name\", unknown field \"spec.foo\""
    );
    expect(&get(&env, &format!("{GADGETS}/d")).await?, 404)?;

    let warn = post(&env, GADGETS, DUPLICATED).await?;
    expect(&warn, 201)?;
    assert_eq!(
        warn.warnings,
        vec![
            r#"299 - "duplicate field \"spec.replicas\"""#,
            r#"299 - "duplicate field \"spec.ports[0].name\"""#,
            r#"299 - "unknown field \"spec.foo\"""#,
        ]
    );
    assert_eq!(warn.body["spec"]["replicas"], 2, "the last value wins");
    assert_eq!(warn.body["spec"]["ports"][0]["name"], "b");

    let put = call_raw(
        &env,
        "PUT",
        &format!("{GADGETS}/d?fieldValidation=Ignore"),
        "application/json",
        DUPLICATED
            .replace(
                r#""name":"d"}"#,
                &format!(
                    r#""name":"d","resourceVersion":"{}"}}"#,
                    warn.body["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                ),
            )
            .into_bytes(),
    )
    .await?;
    expect(&put, 200)?;
    assert!(put.warnings.is_empty(), "{:?}", put.warnings);
    Ok(())
}

#[tokio::test]
async fn strict_errors_of_built_in_kinds_carry_the_decoders_prefix() -> TestResult {
    let env = gadget_env().await?;
    let reply = post(
        &env,
        &format!("{CONFIGMAPS}?fieldValidation=Strict"),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","name":"b"},"dta":{}}"#,
    )
    .await?;
    expect(&reply, 400)?;
    assert_eq!(
        reply.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"metadata.name\", unknown field \"dta\""
    );
    Ok(())
}
