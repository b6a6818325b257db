//! OpenAPI documents of the envtest server: the v3 index and group/version documents
//! (shape, GVK extensions, patch operations), CRD changes reflected, the v2 document and
//! its media-type negotiation, `kubectl explain` and `kubectl apply` validating against
//! them.

use std::process::Command;

use envtest::TestEnv;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const CRDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../deploy/crds");

async fn env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    Ok(TestEnv::builder().crd_dir(CRDS).namespace("test").start().await?)
}

async fn get(
    env: &TestEnv,
    path: &str,
    accept: Option<&str>,
) -> Result<Result<Value, kube::Error>, Box<dyn std::error::Error>> {
    let mut request = http::Request::get(path);
    if let Some(accept) = accept {
        request = request.header("Accept", accept);
    }
    Ok(env.client().request::<Value>(request.body(Vec::new())?).await)
}

async fn document(env: &TestEnv, key: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let index = get(env, "/openapi/v3", None).await??;
    let url = index["paths"][key]["serverRelativeURL"]
        .as_str()
        .ok_or_else(|| format!("{key} not in the index: {index}"))?
        .to_string();
    Ok(get(env, &url, Some("application/json")).await??)
}

fn patch_operation<'a>(doc: &'a Value, group: &str, kind: &str) -> Option<&'a Value> {
    doc["paths"].as_object()?.values().find_map(|item| {
        let op = item.get("patch")?;
        let gvk = &op["x-kubernetes-group-version-kind"];
        (gvk["group"] == group && gvk["kind"] == kind).then_some(op)
    })
}

#[tokio::test]
async fn v3_index_and_documents() -> TestResult {
    let env = env().await?;
    let index = get(&env, "/openapi/v3", None).await??;
    for key in [
        "api/v1",
        "apis/machine.openshift.io/v1beta1",
        "apis/cluster.x-k8s.io/v1beta2",
        "apis/apiextensions.k8s.io/v1",
    ] {
        let url = index["paths"][key]["serverRelativeURL"].as_str().ok_or(key)?;
        assert!(url.starts_with(&format!("/openapi/v3/{key}?hash=")), "{url}");
    }

    let machines = document(&env, "apis/machine.openshift.io/v1beta1").await?;
    assert_eq!(machines["openapi"], "3.0.0");
    let schema = &machines["components"]["schemas"]["io.openshift.machine.v1beta1.Machine"];
    assert_eq!(
        schema["x-kubernetes-group-version-kind"],
        json!([{"group": "machine.openshift.io", "version": "v1beta1", "kind": "Machine"}])
    );
    assert!(schema["properties"]["spec"]["properties"]["authoritativeAPI"].is_object());
    assert_eq!(
        schema["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    // Referenced definitions travel with the document.
    assert!(machines["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"].is_object());
    let patch =
        patch_operation(&machines, "machine.openshift.io", "Machine").ok_or("no PATCH for Machine")?;
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(
        params.contains(&"fieldValidation") && params.contains(&"force"),
        "{params:?}"
    );
    let content = patch["requestBody"]["content"].as_object().ok_or("no body")?;
    assert!(content.contains_key("application/apply-patch+yaml"));
    assert!(content.contains_key("application/merge-patch+json"));
    // Custom resources take no strategic merge patch.
    assert!(!content.contains_key("application/strategic-merge-patch+json"));
    assert!(
        machines["paths"]["/apis/machine.openshift.io/v1beta1/namespaces/{namespace}/machines/{name}/status"]
            .is_object()
    );

    let core = document(&env, "api/v1").await?;
    let cm = &core["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(
        cm["x-kubernetes-group-version-kind"],
        json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
    );
    let patch = patch_operation(&core, "", "ConfigMap").ok_or("no PATCH for ConfigMap")?;
    assert!(patch["requestBody"]["content"]["application/strategic-merge-patch+json"].is_object());
    let meta = &core["components"]["schemas"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
    assert_eq!(
        meta["properties"]["ownerReferences"]["x-kubernetes-patch-merge-key"],
        "uid"
    );
    assert_eq!(meta["properties"]["finalizers"]["x-kubernetes-list-type"], "set");

    // Unknown group/versions are 404.
    match get(&env, "/openapi/v3/apis/nope.example.com/v1", None).await? {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => return Err(format!("expected 404, got {other:?}").into()),
    }
    Ok(())
}

#[tokio::test]
async fn crd_changes_are_reflected() -> TestResult {
    let env = env().await?;
    let client = env.client();
    let crd = |extra: Value| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gizmos.late.example.com"},
            "spec": {"group": "late.example.com", "scope": "Cluster",
                "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
                "versions": [{"name": "v1alpha1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": extra}}}}}]},
        })
    };
    let index = get(&env, "/openapi/v3", None).await??;
    assert!(index["paths"].get("apis/late.example.com/v1alpha1").is_none());
    let request = http::Request::post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&crd(json!({"size": {"type": "integer"}})))?)?;
    let created: Value = client.request(request).await?;
    let before = get(&env, "/openapi/v3", None).await??["paths"]["apis/late.example.com/v1alpha1"]["serverRelativeURL"].clone();
    let doc = document(&env, "apis/late.example.com/v1alpha1").await?;
    let spec =
        &doc["components"]["schemas"]["com.example.late.v1alpha1.Gizmo"]["properties"]["spec"]["properties"];
    assert!(spec["size"].is_object());
    assert!(doc["paths"]["/apis/late.example.com/v1alpha1/gizmos/{name}"].is_object());

    let mut updated = crd(json!({"size": {"type": "integer"}, "color": {"type": "string"}}));
    updated["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    let request =
        http::Request::put("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.late.example.com")
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&updated)?)?;
    let _: Value = client.request(request).await?;
    let after = get(&env, "/openapi/v3", None).await??["paths"]["apis/late.example.com/v1alpha1"]["serverRelativeURL"].clone();
    assert_ne!(before, after, "the hash follows the document");
    let doc = document(&env, "apis/late.example.com/v1alpha1").await?;
    assert!(doc["components"]["schemas"]["com.example.late.v1alpha1.Gizmo"]["properties"]["spec"]["properties"]["color"].is_object());

    let request = http::Request::delete(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gizmos.late.example.com",
    )
    .body(Vec::new())?;
    let _: Value = client.request(request).await?;
    let index = get(&env, "/openapi/v3", None).await??;
    assert!(index["paths"].get("apis/late.example.com/v1alpha1").is_none());
    Ok(())
}

#[tokio::test]
async fn v2_document_and_negotiation() -> TestResult {
    let env = env().await?;
    let v2 = get(&env, "/openapi/v2", Some("application/json")).await??;
    assert_eq!(v2["swagger"], "2.0");
    let machine = &v2["definitions"]["io.openshift.machine.v1beta1.Machine"];
    assert_eq!(machine["x-kubernetes-group-version-kind"][0]["kind"], "Machine");
    assert_eq!(
        machine["properties"]["metadata"]["allOf"][0]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    assert!(v2["definitions"]["io.k8s.api.core.v1.ConfigMap"].is_object());
    let patch = &v2["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"];
    assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "ConfigMap");
    assert!(
        patch["consumes"]
            .as_array()
            .is_some_and(|c| c.contains(&json!("application/strategic-merge-patch+json")))
    );
    assert!(
        patch["parameters"]
            .as_array()
            .is_some_and(|p| p.iter().any(|p| p["name"] == "fieldValidation"))
    );
    // Only JSON is produced: protobuf alone is not acceptable, with JSON as a fallback it is.
    let pb = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    match get(&env, "/openapi/v2", Some(pb)).await? {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 406);
            assert_eq!(status.reason, "NotAcceptable");
        }
        other => return Err(format!("expected 406, got {other:?}").into()),
    }
    let fallback = get(&env, "/openapi/v2", Some(&format!("{pb}, application/json"))).await??;
    assert_eq!(fallback["swagger"], "2.0");
    Ok(())
}

fn kubectl(
    env: &TestEnv,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<(bool, String, String), Box<dyn std::error::Error>> {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(env.kubeconfig_path()?)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(input.as_bytes())?;
    }
    drop(child.stdin.take());
    let output = child.wait_with_output()?;
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_explain() -> TestResult {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipped");
        return Ok(());
    }
    let env = env().await?;
    let (ok, out, err) = kubectl(&env, &["explain", "machines.machine.openshift.io.spec"], None)?;
    assert!(ok, "{out}{err}");
    assert!(out.contains("GROUP:      machine.openshift.io"), "{out}");
    assert!(out.contains("KIND:       Machine"), "{out}");
    assert!(out.contains("VERSION:    v1beta1"), "{out}");
    assert!(out.contains("FIELD: spec <Object>"), "{out}");
    assert!(out.contains("Desired state of a Machine API Machine."), "{out}");
    assert!(out.contains("authoritativeAPI"), "{out}");

    let (ok, out, err) = kubectl(
        &env,
        &[
            "explain",
            "machines.spec.authoritativeAPI",
            "--api-version=machine.openshift.io/v1beta1",
        ],
        None,
    )?;
    assert!(ok, "{out}{err}");
    assert!(out.contains("FIELD: authoritativeAPI <string>"), "{out}");
    assert!(out.contains("ENUM:"), "{out}");

    let (ok, out, err) = kubectl(
        &env,
        &["explain", "machines", "--api-version=cluster.x-k8s.io/v1beta2"],
        None,
    )?;
    assert!(ok, "{out}{err}");
    assert!(out.contains("VERSION:    v1beta2"), "{out}");
    assert!(out.contains("metadata\t<ObjectMeta>"), "{out}");

    let (ok, out, err) = kubectl(&env, &["explain", "configmaps.data"], None)?;
    assert!(ok, "{out}{err}");
    assert!(out.contains("KIND:       ConfigMap"), "{out}");
    assert!(out.contains("FIELD: data <map[string]string>"), "{out}");

    let (ok, out, err) = kubectl(&env, &["explain", "machines.metadata.ownerReferences"], None)?;
    assert!(ok, "{out}{err}");
    assert!(out.contains("uid\t<string> -required-"), "{out}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_apply_validates_against_the_server() -> TestResult {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipped");
        return Ok(());
    }
    let env = env().await?;
    let machine = |extra: &str| {
        format!(
            "apiVersion: machine.openshift.io/v1beta1\nkind: Machine\nmetadata:\n  name: m\n  namespace: test\nspec:\n  authoritativeAPI: MachineAPI\n{extra}"
        )
    };
    let (ok, out, err) = kubectl(&env, &["apply", "-f", "-"], Some(&machine("")))?;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "machine.machine.openshift.io/m created");
    assert!(err.is_empty(), "{err}");
    // An unknown field is refused by the server's strict field validation.
    let (ok, out, err) = kubectl(&env, &["apply", "-f", "-"], Some(&machine("  bogus: 1\n")))?;
    assert!(!ok, "{out}");
    assert!(err.contains("unknown field \"spec.bogus\""), "{err}");
    let (ok, out, err) = kubectl(
        &env,
        &["apply", "--server-side", "-f", "-"],
        Some(&machine("  bogus: 1\n")),
    )?;
    assert!(!ok, "{out}");
    assert!(err.contains("bogus"), "{err}");
    // Built-ins too.
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: test\ndata:\n  a: b\n";
    let (ok, out, err) = kubectl(&env, &["apply", "-f", "-"], Some(cm))?;
    assert!(ok, "{out}{err}");
    assert!(err.is_empty(), "{err}");
    Ok(())
}
