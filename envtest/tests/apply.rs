//! Server-side apply on the envtest server: managedFields, conflicts between managers,
//! force, removal of fields a manager stops applying, set and map list semantics, Update
//! managers of ordinary writes, and `kubectl apply` in both modes.

use std::process::Command;

use envtest::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{GroupVersionKind, Status};
use kube::{Api, Client};
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

fn crd() -> Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    serde_json::Error,
> {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.test.example.com"},
        "spec": {
            "group": "test.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer"},
                        "note": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "protocol"],
                            "items": {"type": "object", "required": ["name", "protocol"], "properties": {
                                "name": {"type": "string"}, "protocol": {"type": "string"}, "port": {"type": "integer"}}}},
                        "args": {"type": "array", "items": {"type": "string"}},
                        "backend": {"type": "object", "properties": {
                            "docker": {"type": "object", "properties": {"image": {"type": "string"}}},
                            "inMemory": {"type": "object", "properties": {"delay": {"type": "string"}}}}},
                    }},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                }}},
            }],
        },
    }))
}

async fn env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    Ok(TestEnv::builder()
        .crd_object(crd()?)
        .namespace("test")
        .start()
        .await?)
}

fn gadgets(client: Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("test.example.com", "v1", "Gadget");
    Api::namespaced_with(client, "test", &ApiResource::from_gvk(&gvk))
}

fn gadget(spec: Value) -> Value {
    json!({"apiVersion": "test.example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": spec})
}

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> Result<Box<Status>, String> {
    match result {
        Err(kube::Error::Api(status)) => Ok(status),
        other => Err(format!("expected an API error, got {other:?}")),
    }
}

fn managed(object: &DynamicObject) -> Result<Value, serde_json::Error> {
    serde_json::to_value(&object.metadata.managed_fields)
}

fn entry<'a>(fields: &'a Value, manager: &str, operation: &str) -> Option<&'a Value> {
    fields
        .as_array()?
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

async fn apply(
    api: &Api<DynamicObject>,
    manager: &str,
    force: bool,
    object: Value,
) -> Result<DynamicObject, kube::Error> {
    let mut params = PatchParams::apply(manager);
    if force {
        params = params.force();
    }
    api.patch("g", &params, &Patch::Apply(object)).await
}

#[tokio::test]
async fn apply_creates_and_records_the_manager() -> TestResult {
    let env = env().await?;
    let api = gadgets(env.client());
    let created = apply(&api, "one", false, gadget(json!({"replicas": 1, "note": "hi"}))).await?;
    assert_eq!(created.data["spec"], json!({"replicas": 1, "note": "hi"}));
    let fields = managed(&created)?;
    let one = entry(&fields, "one", "Apply").ok_or("no Apply entry for one")?;
    assert_eq!(one["apiVersion"], "test.example.com/v1");
    assert_eq!(one["fieldsType"], "FieldsV1");
    assert_eq!(
        one["fieldsV1"],
        json!({"f:spec": {"f:note": {}, "f:replicas": {}}})
    );
    assert!(one["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert!(one.get("subresource").is_none());

    // Applying the same configuration again changes nothing.
    let again = apply(&api, "one", false, gadget(json!({"replicas": 1, "note": "hi"}))).await?;
    assert_eq!(again.metadata.resource_version, created.metadata.resource_version);

    // Without fieldManager: 422 as kube-apiserver.
    let request = http::Request::patch("/apis/test.example.com/v1/namespaces/test/gadgets/g")
        .header("Content-Type", "application/apply-patch+yaml")
        .body(serde_json::to_vec(&gadget(json!({})))?)?;
    let status = api_error(env.client().request::<Value>(request).await)?;
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    // YAML bodies are accepted.
    let yaml = "apiVersion: test.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\nspec:\n  replicas: 1\n  note: from-yaml\n";
    let request =
        http::Request::patch("/apis/test.example.com/v1/namespaces/test/gadgets/g?fieldManager=one")
            .header("Content-Type", "application/apply-patch+yaml")
            .body(yaml.as_bytes().to_vec())?;
    let object: Value = env.client().request(request).await?;
    assert_eq!(object["spec"]["note"], "from-yaml");
    // A wrong apiVersion is refused.
    let wrong = json!({"apiVersion": "test.example.com/v2", "kind": "Gadget", "metadata": {"name": "g"}});
    let status = api_error(apply(&api, "one", false, wrong).await)?;
    assert_eq!(status.code, 400);
    assert_eq!(
        status.message,
        "Incorrect version specified in apply patch. Specified patch version: test.example.com/v2, expected: test.example.com/v1"
    );
    Ok(())
}

#[tokio::test]
async fn empty_maps_are_kept_and_owned() -> TestResult {
    let env = env().await?;
    let api = gadgets(env.client());
    let config = json!({"backend": {"docker": {}}, "note": "a", "replicas": 1});
    let created = apply(&api, "capd", false, gadget(config)).await?;
    // kube keeps the empty map and owns it as a leaf (structured-merge-diff's ToFieldSet
    // makes an empty map a member of the set).
    assert_eq!(
        created.data["spec"],
        json!({"backend": {"docker": {}}, "note": "a", "replicas": 1})
    );
    let fields = managed(&created)?;
    let capd = entry(&fields, "capd", "Apply").ok_or("no Apply entry for capd")?;
    assert_eq!(
        capd["fieldsV1"],
        json!({"f:spec": {"f:backend": {"f:docker": {}}, "f:note": {}, "f:replicas": {}}})
    );
    let stored = api.get("g").await?;
    assert_eq!(stored.data["spec"]["backend"], json!({"docker": {}}));
    assert_eq!(managed(&stored)?, fields);

    // Dropping one field removes only that field.
    let fewer = apply(
        &api,
        "capd",
        false,
        gadget(json!({"backend": {"docker": {}}, "note": "a"})),
    )
    .await?;
    assert_eq!(
        fewer.data["spec"],
        json!({"backend": {"docker": {}}, "note": "a"})
    );
    let fields = managed(&fewer)?;
    let capd = entry(&fields, "capd", "Apply").ok_or("no Apply entry for capd")?;
    assert_eq!(
        capd["fieldsV1"],
        json!({"f:spec": {"f:backend": {"f:docker": {}}, "f:note": {}}})
    );
    // Dropping the map removes it, and its parent that nobody owns any more.
    let gone = apply(&api, "capd", false, gadget(json!({"note": "a"}))).await?;
    assert_eq!(gone.data["spec"], json!({"note": "a"}));
    // A configuration that is nothing but an empty map keeps its manager entry.
    let only = apply(&api, "capd", false, gadget(json!({"backend": {"docker": {}}}))).await?;
    assert_eq!(only.data["spec"], json!({"backend": {"docker": {}}}));
    let fields = managed(&api.get("g").await?)?;
    let capd = entry(&fields, "capd", "Apply").ok_or("no Apply entry for capd")?;
    assert_eq!(
        capd["fieldsV1"],
        json!({"f:spec": {"f:backend": {"f:docker": {}}}})
    );
    Ok(())
}

#[tokio::test]
async fn conflicts_force_and_removal() -> TestResult {
    let env = env().await?;
    let api = gadgets(env.client());
    apply(&api, "one", false, gadget(json!({"replicas": 1, "note": "mine"}))).await?;

    // Another manager changing an owned field conflicts.
    let status = api_error(apply(&api, "two", false, gadget(json!({"replicas": 3}))).await)?;
    assert_eq!(status.code, 409);
    assert_eq!(status.reason, "Conflict");
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"one\": .spec.replicas"
    );
    let causes = status
        .details
        .as_ref()
        .map(|d| d.causes.clone())
        .unwrap_or_default();
    assert_eq!(causes.len(), 1);
    assert_eq!(causes[0].reason, "FieldManagerConflict");
    assert_eq!(causes[0].message, "conflict with \"one\"");
    assert_eq!(causes[0].field, ".spec.replicas");

    // Applying the same value is shared ownership, not a conflict.
    let shared = apply(&api, "two", false, gadget(json!({"note": "mine"}))).await?;
    let fields = managed(&shared)?;
    assert_eq!(
        entry(&fields, "two", "Apply").map(|e| e["fieldsV1"].clone()),
        Some(json!({"f:spec": {"f:note": {}}}))
    );

    // Two conflicting fields: both listed.
    let status = api_error(
        apply(
            &api,
            "two",
            false,
            gadget(json!({"replicas": 3, "note": "theirs"})),
        )
        .await,
    )?;
    assert_eq!(
        status.message,
        "Apply failed with 2 conflicts: conflicts with \"one\":\n- .spec.note\n- .spec.replicas"
    );

    // force takes ownership.
    let forced = apply(&api, "two", true, gadget(json!({"replicas": 3, "note": "mine"}))).await?;
    assert_eq!(forced.data["spec"]["replicas"], 3);
    let fields = managed(&forced)?;
    assert_eq!(
        entry(&fields, "one", "Apply").map(|e| e["fieldsV1"].clone()),
        Some(json!({"f:spec": {"f:note": {}}}))
    );
    assert_eq!(
        entry(&fields, "two", "Apply").map(|e| e["fieldsV1"].clone()),
        Some(json!({"f:spec": {"f:note": {}, "f:replicas": {}}}))
    );

    // "one" stops applying note: "two" still owns it, it stays. (An applied `spec: {}`
    // would own `f:spec`, an empty map being a leaf; this configuration has no spec.)
    let no_spec = json!({"apiVersion": "test.example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}});
    let kept = apply(&api, "one", false, no_spec).await?;
    assert_eq!(kept.data["spec"], json!({"replicas": 3, "note": "mine"}));
    assert!(entry(&managed(&kept)?, "one", "Apply").is_none());
    // "two" stops applying replicas: nobody else owns it, it is removed.
    let removed = apply(&api, "two", false, gadget(json!({"note": "mine"}))).await?;
    assert_eq!(removed.data["spec"], json!({"note": "mine"}));
    Ok(())
}

#[tokio::test]
async fn set_and_map_lists_merge_per_item() -> TestResult {
    let env = env().await?;
    let api = gadgets(env.client());
    let port = |name: &str, port: i64| json!({"name": name, "protocol": "TCP", "port": port});
    apply(
        &api,
        "one",
        false,
        gadget(json!({"tags": ["a"], "ports": [port("http", 80)], "args": ["x"]})),
    )
    .await?;
    let both = apply(
        &api,
        "two",
        false,
        gadget(json!({"tags": ["b"], "ports": [port("ssh", 22)]})),
    )
    .await?;
    assert_eq!(both.data["spec"]["tags"], json!(["a", "b"]));
    assert_eq!(
        both.data["spec"]["ports"],
        json!([port("http", 80), port("ssh", 22)])
    );
    let fields = managed(&both)?;
    assert_eq!(
        entry(&fields, "two", "Apply").map(|e| e["fieldsV1"].clone()),
        Some(json!({"f:spec": {
            "f:ports": {"k:{\"name\":\"ssh\",\"protocol\":\"TCP\"}": {".": {}, "f:name": {}, "f:port": {}, "f:protocol": {}}},
            "f:tags": {"v:\"b\"": {}},
        }}))
    );
    // Atomic lists are replaced whole, and owned whole.
    let status = api_error(apply(&api, "two", false, gadget(json!({"args": ["y"]}))).await)?;
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"one\": .spec.args"
    );
    // A map-list item's field owned by another manager conflicts with its key in the path.
    let status = api_error(apply(&api, "two", false, gadget(json!({"ports": [port("http", 8080)]}))).await)?;
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"one\": .spec.ports[name=\"http\",protocol=\"TCP\"].port"
    );
    // "one" drops its items: only they disappear.
    let after = apply(&api, "one", false, gadget(json!({"args": ["x"]}))).await?;
    assert_eq!(after.data["spec"]["tags"], json!(["b"]));
    assert_eq!(after.data["spec"]["ports"], json!([port("ssh", 22)]));
    Ok(())
}

#[tokio::test]
async fn ordinary_writes_record_update_managers() -> TestResult {
    let env = env().await?;
    let api = gadgets(env.client());
    let object: DynamicObject = serde_json::from_value(gadget(json!({"replicas": 1})))?;
    let created = api
        .create(
            &PostParams {
                field_manager: Some("creator".into()),
                ..Default::default()
            },
            &object,
        )
        .await?;
    let fields = managed(&created)?;
    let creator = entry(&fields, "creator", "Update").ok_or("no Update entry")?;
    assert_eq!(creator["apiVersion"], "test.example.com/v1");
    assert_eq!(
        creator["fieldsV1"],
        json!({"f:spec": {".": {}, "f:replicas": {}}})
    );

    let status = api_error(apply(&api, "applier", false, gadget(json!({"replicas": 2}))).await)?;
    assert_eq!(
        status.message,
        "Apply failed with 1 conflict: conflict with \"creator\" using test.example.com/v1: .spec.replicas"
    );
    // A merge patch by another manager takes the field over.
    let patched = api
        .patch(
            "g",
            &PatchParams {
                field_manager: Some("patcher".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await?;
    let fields = managed(&patched)?;
    assert_eq!(
        entry(&fields, "patcher", "Update").map(|e| e["fieldsV1"].clone()),
        Some(json!({"f:spec": {"f:replicas": {}}}))
    );
    // The creator keeps only `spec` itself (it created the map).
    assert_eq!(
        entry(&fields, "creator", "Update").map(|e| e["fieldsV1"].clone()),
        Some(json!({"f:spec": {}}))
    );
    // The status subresource records its own entry.
    let status_patch = api
        .patch_status(
            "g",
            &PatchParams {
                field_manager: Some("controller".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await?;
    let fields = managed(&status_patch)?;
    let controller = entry(&fields, "controller", "Update").ok_or("no status entry")?;
    assert_eq!(controller["subresource"], "status");
    assert_eq!(
        controller["fieldsV1"],
        json!({"f:status": {".": {}, "f:ready": {}}})
    );
    // force on a non-apply patch is refused.
    let request = http::Request::patch("/apis/test.example.com/v1/namespaces/test/gadgets/g?force=true")
        .header("Content-Type", "application/merge-patch+json")
        .body(b"{}".to_vec())?;
    let status = api_error(env.client().request::<Value>(request).await)?;
    assert_eq!(status.code, 422);
    assert_eq!(
        status.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    // Sending `[{}]` as managedFields clears them.
    let cleared = api
        .patch(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"managedFields": [{}]}})),
        )
        .await?;
    assert_eq!(cleared.metadata.managed_fields, None);
    Ok(())
}

#[tokio::test]
async fn built_in_apply_uses_known_list_semantics() -> TestResult {
    let env = env().await?;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "test");
    let cm = |data: Value, finalizers: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": finalizers}, "data": data});
    cms.patch(
        "c",
        &PatchParams::apply("one"),
        &Patch::Apply(cm(json!({"a": "1"}), json!(["x.io/one"]))),
    )
    .await?;
    let both = cms
        .patch(
            "c",
            &PatchParams::apply("two"),
            &Patch::Apply(cm(json!({"b": "2"}), json!(["x.io/two"]))),
        )
        .await?;
    assert_eq!(
        both.metadata.finalizers,
        Some(vec!["x.io/one".into(), "x.io/two".into()])
    );
    let fields = serde_json::to_value(&both.metadata.managed_fields)?;
    assert_eq!(
        entry(&fields, "two", "Apply").map(|e| e["fieldsV1"].clone()),
        Some(json!({"f:data": {"f:b": {}}, "f:metadata": {"f:finalizers": {"v:\"x.io/two\"": {}}}}))
    );
    assert_eq!(both.data.map(|d| d.len()), Some(2));
    Ok(())
}

fn kubectl(
    env: &TestEnv,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<(bool, String, String), Box<dyn std::error::Error>> {
    let kubeconfig = env.kubeconfig_path()?;
    let mut command = Command::new("kubectl");
    command.arg("--kubeconfig").arg(&kubeconfig).args(args);
    command.stdin(std::process::Stdio::piped());
    command.stdout(std::process::Stdio::piped());
    command.stderr(std::process::Stdio::piped());
    let mut child = command.spawn()?;
    if let Some(input) = stdin
        && let Some(mut pipe) = child.stdin.take()
    {
        use std::io::Write;
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
async fn kubectl_apply_client_side_and_server_side() -> TestResult {
    if !kubectl_available() {
        eprintln!("kubectl not installed: skipped");
        return Ok(());
    }
    let env = env().await?;
    let cm = |value: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: k\n  namespace: test\ndata:\n  key: {value}\n"
        )
    };
    let (ok, out, err) = kubectl(&env, &["apply", "-f", "-"], Some(&cm("one")))?;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "configmap/k created");
    assert!(!err.contains("validat"), "{err}");
    let (ok, out, err) = kubectl(&env, &["apply", "-f", "-"], Some(&cm("two")))?;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "configmap/k configured");
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "test");
    let live = cms.get("k").await?;
    assert_eq!(
        live.data.and_then(|d| d.get("key").cloned()).as_deref(),
        Some("two")
    );
    let fields = serde_json::to_value(&live.metadata.managed_fields)?;
    assert!(
        entry(&fields, "kubectl-client-side-apply", "Update").is_some(),
        "{fields}"
    );

    // Server-side, over the client-side apply: no conflict for unchanged values.
    let (ok, out, err) = kubectl(&env, &["apply", "--server-side", "-f", "-"], Some(&cm("two")))?;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "configmap/k serverside-applied");
    let (ok, out, err) = kubectl(&env, &["apply", "--server-side", "-f", "-"], Some(&cm("three")))?;
    assert!(ok, "{out}{err}");
    let live = cms.get("k").await?;
    assert_eq!(
        live.data.and_then(|d| d.get("key").cloned()).as_deref(),
        Some("three")
    );

    // Custom resources, both modes.
    let gadget = |replicas: i64| {
        format!(
            "apiVersion: test.example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n  namespace: test\nspec:\n  replicas: {replicas}\n"
        )
    };
    let (ok, out, err) = kubectl(&env, &["apply", "-f", "-"], Some(&gadget(1)))?;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "gadget.test.example.com/g created");
    let (ok, out, err) = kubectl(&env, &["apply", "-f", "-"], Some(&gadget(2)))?;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "gadget.test.example.com/g configured");
    // kubectl asked for the protobuf v2 document (406 here) and fell back to a merge
    // patch without a word.
    assert!(err.is_empty(), "{err}");
    let (ok, out, err) = kubectl(
        &env,
        &["apply", "--server-side", "--field-manager", "ssa", "-f", "-"],
        Some(&gadget(3)),
    )?;
    assert!(!ok, "a conflict was expected: {out}");
    assert!(
        err.contains("conflict with \"kubectl-client-side-apply\" using test.example.com/v1: .spec.replicas"),
        "{err}"
    );
    let (ok, out, err) = kubectl(
        &env,
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager",
            "ssa",
            "-f",
            "-",
        ],
        Some(&gadget(3)),
    )?;
    assert!(ok, "{out}{err}");
    assert_eq!(out.trim(), "gadget.test.example.com/g serverside-applied");
    let object = gadgets(env.client()).get("g").await?;
    assert_eq!(object.data["spec"]["replicas"], 3);
    Ok(())
}

#[tokio::test]
async fn strategic_merge_patch_on_built_ins() -> TestResult {
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::rbac::v1::Role;
    let env = env().await?;
    let client = env.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "test");
    let owner =
        |uid: &str, name: &str| json!({"apiVersion": "v1", "kind": "Thing", "name": name, "uid": uid});
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "s", "finalizers": ["x.io/a", "x.io/b"], "ownerReferences": [owner("1", "one")]},
        "data": {"a": "1", "b": "2", "c": "3"},
    }))?;
    cms.create(&PostParams::default(), &cm).await?;
    let smp = |patch: Value| Patch::Strategic(patch);
    let params = PatchParams::default();

    // ownerReferences merge on uid; finalizers are a set; null deletes a key.
    let out = cms
        .patch("s", &params, &smp(json!({
            "metadata": {"ownerReferences": [owner("2", "two"), {"uid": "1", "name": "uno"}], "finalizers": ["x.io/c"]},
            "data": {"b": null},
        })))
        .await?;
    let owners: Vec<(String, String)> = out
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|o| (o.uid, o.name))
        .collect();
    assert_eq!(owners, [("1".into(), "uno".into()), ("2".into(), "two".into())]);
    assert_eq!(
        out.metadata.finalizers,
        Some(vec!["x.io/a".into(), "x.io/b".into(), "x.io/c".into()])
    );
    assert_eq!(
        out.data.as_ref().map(|d| d.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["a".into(), "c".into()])
    );

    // $patch: delete on a list item, $deleteFromPrimitiveList, $setElementOrder (accepted).
    let out = cms
        .patch(
            "s",
            &params,
            &smp(json!({"metadata": {
                "ownerReferences": [{"uid": "1", "$patch": "delete"}],
                "$deleteFromPrimitiveList/finalizers": ["x.io/a"],
                "$setElementOrder/finalizers": ["x.io/c", "x.io/b"],
            }})),
        )
        .await?;
    assert_eq!(out.metadata.owner_references.map(|o| o.len()), Some(1));
    assert_eq!(
        out.metadata.finalizers,
        Some(vec!["x.io/c".into(), "x.io/b".into()])
    );

    // $retainKeys keeps only the listed keys; $patch: replace replaces the map.
    let out = cms
        .patch(
            "s",
            &params,
            &smp(json!({"data": {"$retainKeys": ["a", "d"], "d": "4"}})),
        )
        .await?;
    assert_eq!(
        out.data.as_ref().map(|d| d.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["a".into(), "d".into()])
    );
    let out = cms
        .patch(
            "s",
            &params,
            &smp(json!({"data": {"$patch": "replace", "z": "26"}})),
        )
        .await?;
    assert_eq!(
        out.data.as_ref().map(|d| d.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["z".into()])
    );
    // A $retainKeys list missing a patched key is a 400.
    let status = api_error(
        cms.patch(
            "s",
            &params,
            &smp(json!({"data": {"$retainKeys": ["a"], "q": "1"}})),
        )
        .await,
    )?;
    assert_eq!(status.code, 400);
    // An unknown $patch is a 400; so is `merge` in a map, as upstream.
    let status = api_error(
        cms.patch("s", &params, &smp(json!({"data": {"$patch": "explode"}})))
            .await,
    )?;
    assert_eq!(status.code, 400);
    let status = api_error(
        cms.patch("s", &params, &smp(json!({"data": {"$patch": "merge", "y": "1"}})))
            .await,
    )?;
    assert_eq!(status.code, 400);
    assert!(
        status.message.starts_with("unknown patch type: merge in map"),
        "{}",
        status.message
    );
    // Strategic patches are recorded as Update managers too.
    let fields = serde_json::to_value(&out.metadata.managed_fields)?;
    assert!(fields.as_array().is_some_and(|a| !a.is_empty()), "{fields}");

    // RBAC rules are atomic: a patched list replaces the old one.
    let roles: Api<Role> = Api::namespaced(client.clone(), "test");
    let role: Role = serde_json::from_value(json!({"metadata": {"name": "r"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
    ]}))?;
    roles.create(&PostParams::default(), &role).await?;
    let out = roles
        .patch(
            "r",
            &params,
            &smp(json!({"rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]})),
        )
        .await?;
    assert_eq!(out.rules.map(|r| r.len()), Some(1));

    // A Lease has no merge keys: spec fields merge as a map.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "test");
    let lease: Lease = serde_json::from_value(
        json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a", "leaseDurationSeconds": 10}}),
    )?;
    leases.create(&PostParams::default(), &lease).await?;
    let out = leases
        .patch("l", &params, &smp(json!({"spec": {"holderIdentity": "b"}})))
        .await?;
    let spec = out.spec.ok_or("no spec")?;
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_duration_seconds, Some(10));

    // Custom resources answer 415, as kube-apiserver.
    apply(
        &gadgets(client.clone()),
        "one",
        false,
        gadget(json!({"replicas": 1})),
    )
    .await?;
    let status = api_error(
        gadgets(client)
            .patch("g", &params, &smp(json!({"spec": {"replicas": 2}})))
            .await,
    )?;
    assert_eq!(status.code, 415);
    assert_eq!(status.reason, "UnsupportedMediaType");
    Ok(())
}
