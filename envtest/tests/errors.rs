//! Raw requests against the envtest server: every bad input gets a Status with the real
//! reason and code, never a panic; discovery documents.

use envtest::TestEnv;
use http::Request;
use http_body_util::BodyExt;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

async fn call(
    env: &TestEnv,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(u16, Value), Box<dyn std::error::Error>> {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header("content-type", content_type)
        .body(kube::client::Body::from(body))?;
    let response = env.client().send(request).await?;
    let code = response.status().as_u16();
    let bytes = response.into_body().collect().await?.to_bytes();
    let value =
        serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()));
    Ok((code, value))
}

fn reason(value: &Value) -> &str {
    value["reason"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn bad_requests_get_status_errors() -> TestResult {
    let env = TestEnv::start().await?;
    let cms = "/api/v1/namespaces/default/configmaps";
    let json = "application/json";

    let (code, body) = call(&env, "POST", cms, json, b"{not json".to_vec()).await?;
    assert_eq!((code, reason(&body)), (400, "BadRequest"));
    assert_eq!(body["kind"], "Status");

    let wrong_kind =
        serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}))?;
    let (code, body) = call(&env, "POST", cms, json, wrong_kind).await?;
    assert_eq!((code, reason(&body)), (400, "BadRequest"));

    let wrong_version =
        serde_json::to_vec(&json!({"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "a"}}))?;
    let (code, _) = call(&env, "POST", cms, json, wrong_version).await?;
    assert_eq!(code, 400);

    let (code, body) = call(
        &env,
        "GET",
        "/api/v1/namespaces/default/widgets",
        json,
        Vec::new(),
    )
    .await?;
    assert_eq!((code, reason(&body)), (404, "NotFound"));

    let (code, body) = call(&env, "PUT", cms, json, b"{}".to_vec()).await?;
    assert_eq!((code, reason(&body)), (405, "MethodNotAllowed"));

    let big = serde_json::to_vec(
        &json!({"metadata": {"name": "big"}, "data": {"x": "a".repeat(3 * 1024 * 1024 + 10)}}),
    )?;
    let (code, body) = call(&env, "POST", cms, json, big).await?;
    assert_eq!((code, reason(&body)), (413, "RequestEntityTooLarge"));

    let created = serde_json::to_vec(&json!({"metadata": {"name": "a"}}))?;
    let (code, _) = call(&env, "POST", cms, json, created).await?;
    assert_eq!(code, 201);
    let (code, body) = call(
        &env,
        "PATCH",
        &format!("{cms}/a"),
        "application/xml",
        b"{}".to_vec(),
    )
    .await?;
    assert_eq!((code, reason(&body)), (415, "UnsupportedMediaType"));
    let (code, _) = call(
        &env,
        "PATCH",
        &format!("{cms}/a"),
        "application/strategic-merge-patch+json",
        br#"{"data":{"a":"b"}}"#.to_vec(),
    )
    .await?;
    assert_eq!(code, 200, "strategic merge is accepted for built-ins");
    let (code, body) = call(
        &env,
        "PATCH",
        &format!("{cms}/a"),
        "application/json-patch+json",
        b"[{\"op\":\"nope\"}]".to_vec(),
    )
    .await?;
    assert_eq!((code, reason(&body)), (400, "BadRequest"));

    let (code, body) = call(
        &env,
        "GET",
        &format!("{cms}?labelSelector=a%20in%20in"),
        json,
        Vec::new(),
    )
    .await?;
    assert_eq!((code, reason(&body)), (400, "BadRequest"));
    let (code, body) = call(&env, "GET", &format!("{cms}?continue=garbage"), json, Vec::new()).await?;
    assert_eq!((code, reason(&body)), (400, "BadRequest"));
    let (code, body) = call(
        &env,
        "GET",
        &format!("{cms}?resourceVersionMatch=Exact"),
        json,
        Vec::new(),
    )
    .await?;
    assert_eq!((code, reason(&body)), (422, "Invalid"));
    let (code, _) = call(&env, "GET", "/api/v1/configmaps/a", json, Vec::new()).await?;
    assert_eq!(code, 404);
    let (code, body) = call(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps?dryRun=Some",
        json,
        b"{}".to_vec(),
    )
    .await?;
    assert_eq!((code, reason(&body)), (400, "BadRequest"));
    let (code, body) = call(
        &env,
        "POST",
        cms,
        json,
        serde_json::to_vec(&json!({"metadata": {}}))?,
    )
    .await?;
    assert_eq!((code, reason(&body)), (422, "Invalid"));
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
    Ok(())
}

#[tokio::test]
async fn discovery_documents() -> TestResult {
    let env = TestEnv::builder()
        .crd_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/crds"))
        .start()
        .await?;
    let json = "application/json";
    let (code, body) = call(&env, "GET", "/version", json, Vec::new()).await?;
    assert_eq!((code, body["major"].as_str()), (200, Some("1")));
    let (_, body) = call(&env, "GET", "/api", json, Vec::new()).await?;
    assert_eq!(body["versions"], json!(["v1"]));
    let (_, body) = call(&env, "GET", "/api/v1", json, Vec::new()).await?;
    let names: Vec<&str> = body["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect();
    for name in [
        "namespaces",
        "namespaces/status",
        "configmaps",
        "secrets",
        "serviceaccounts",
        "events",
    ] {
        assert!(names.contains(&name), "{name} in {names:?}");
    }
    let (_, body) = call(&env, "GET", "/apis", json, Vec::new()).await?;
    let groups: Vec<&str> = body["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|g| g["name"].as_str())
        .collect();
    for group in [
        "apiextensions.k8s.io",
        "coordination.k8s.io",
        "events.k8s.io",
        "rbac.authorization.k8s.io",
        "cluster.x-k8s.io",
        "machine.openshift.io",
    ] {
        assert!(groups.contains(&group), "{group} in {groups:?}");
    }
    let (code, body) = call(&env, "GET", "/apis/cluster.x-k8s.io", json, Vec::new()).await?;
    assert_eq!((code, body["kind"].as_str()), (200, Some("APIGroup")));
    let version = body["preferredVersion"]["version"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (code, body) = call(
        &env,
        "GET",
        &format!("/apis/cluster.x-k8s.io/{version}"),
        json,
        Vec::new(),
    )
    .await?;
    assert_eq!(code, 200);
    let machines = body["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["name"] == "machines")
        .cloned()
        .unwrap_or_default();
    assert_eq!(machines["kind"], "Machine");
    assert_eq!(machines["namespaced"], true);
    assert!(machines["verbs"].as_array().is_some_and(|v| v.len() == 8));
    let (code, _) = call(&env, "GET", "/apis/nope.example.com", json, Vec::new()).await?;
    assert_eq!(code, 404);
    Ok(())
}

#[tokio::test]
async fn standalone_command_serves_deploy_crds() -> TestResult {
    use std::io::BufRead;
    let dir = std::env::temp_dir().join(format!("envtest-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = dir.join("kubeconfig");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_envtest-server"))
        .arg("--crds")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/crds"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    assert!(line.contains("ready"), "{line}");
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig)?,
        &Default::default(),
    )
    .await?;
    let client = kube::Client::try_from(config)?;
    let crds: kube::Api<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    > = kube::Api::all(client);
    let list = crds.list(&Default::default()).await?;
    assert_eq!(list.items.len(), 4);
    std::process::Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()?;
    let status = child.wait()?;
    assert!(status.success(), "{status:?}");
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
