//! `meta.k8s.io` Table output: CRD printer columns (JSONPath, types, priority, the `Name`
//! and default `Age` columns), `includeObject`, built-in printers, and `kubectl get` /
//! `kubectl get -o wide` printing the real columns.

use std::process::Command;

use envtest::TestEnv;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn crd(
    plural: &str,
    kind: &str,
    columns: Value,
) -> Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    serde_json::Error,
> {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.test.example.com")},
        "spec": {
            "group": "test.example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "additionalPrinterColumns": columns,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    }))
}

async fn env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    let columns = json!([
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "The phase."},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Note", "type": "string", "jsonPath": ".spec.note", "priority": 1},
        {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused", "priority": 1},
    ]);
    let env = TestEnv::builder()
        .crd_object(crd("gadgets", "Gadget", columns)?)
        .crd_object(crd("plains", "Plain", json!([]))?)
        .namespace("test")
        .start()
        .await?;
    let client = env.client();
    for (name, replicas, phase) in [("a", 1, "Running"), ("b", 2, "Pending")] {
        let body = json!({
            "apiVersion": "test.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name, "labels": {"app": "x"}},
            "spec": {"replicas": replicas, "note": format!("note-{name}"), "paused": false},
            "status": {"phase": phase, "conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]},
        });
        let request = http::Request::post("/apis/test.example.com/v1/namespaces/test/gadgets")
            .header("Content-Type", "application/json")
            .body(serde_json::to_vec(&body)?)?;
        let _: Value = client.request(request).await?;
    }
    let plain = json!({"apiVersion": "test.example.com/v1", "kind": "Plain", "metadata": {"name": "p"}});
    let request = http::Request::post("/apis/test.example.com/v1/namespaces/test/plains")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&plain)?)?;
    let _: Value = client.request(request).await?;
    Ok(env)
}

async fn get_table(env: &TestEnv, path: &str, accept: &str) -> Result<Value, Box<dyn std::error::Error>> {
    let request = http::Request::get(path)
        .header("Accept", accept)
        .body(Vec::new())?;
    Ok(env.client().request(request).await?)
}

fn names(table: &Value) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn crd_printer_columns() -> TestResult {
    let env = env().await?;
    let table = get_table(&env, "/apis/test.example.com/v1/namespaces/test/gadgets", TABLE).await?;
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
    assert!(table["metadata"]["resourceVersion"].as_str().is_some());
    // Name first; the CRD declares no Age column, so there is none (as kube-apiserver).
    assert_eq!(
        names(&table),
        ["Name", "Replicas", "Phase", "Ready", "Note", "Paused"]
    );
    let columns = table["columnDefinitions"].as_array().ok_or("no columns")?;
    assert_eq!(columns[0]["format"], "name");
    assert_eq!(columns[1]["type"], "integer");
    assert_eq!(columns[2]["description"], "The phase.");
    assert_eq!(
        columns[3]["description"],
        "Custom resource definition column (in JSONPath format): .status.conditions[?(@.type==\"Ready\")].status"
    );
    assert_eq!(columns[4]["priority"], 1);
    let rows = table["rows"].as_array().ok_or("no rows")?;
    assert_eq!(rows.len(), 2);
    assert_eq!(
        rows[0]["cells"],
        json!(["a", 1, "Running", "True", "note-a", false])
    );
    assert_eq!(
        rows[1]["cells"],
        json!(["b", 2, "Pending", "True", "note-b", false])
    );
    // Rows carry PartialObjectMetadata by default.
    assert_eq!(rows[0]["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(rows[0]["object"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(rows[0]["object"]["metadata"]["labels"]["app"], "x");
    assert!(rows[0]["object"].get("spec").is_none());

    // includeObject=Object and None.
    let full = get_table(
        &env,
        "/apis/test.example.com/v1/namespaces/test/gadgets?includeObject=Object",
        TABLE,
    )
    .await?;
    assert_eq!(full["rows"][0]["object"]["kind"], "Gadget");
    assert_eq!(full["rows"][0]["object"]["spec"]["replicas"], 1);
    let none = get_table(
        &env,
        "/apis/test.example.com/v1/namespaces/test/gadgets?includeObject=None",
        TABLE,
    )
    .await?;
    assert_eq!(none["rows"][0]["object"], Value::Null);

    // One object, and v1beta1.
    let one = get_table(
        &env,
        "/apis/test.example.com/v1/namespaces/test/gadgets/b",
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
    )
    .await?;
    assert_eq!(one["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(one["rows"].as_array().map(Vec::len), Some(1));
    assert_eq!(one["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");

    // A CRD without columns gets Name and Age.
    let plain = get_table(&env, "/apis/test.example.com/v1/namespaces/test/plains", TABLE).await?;
    assert_eq!(names(&plain), ["Name", "Age"]);
    assert_eq!(plain["columnDefinitions"][1]["type"], "date");
    let age = plain["rows"][0]["cells"][1].as_str().ok_or("no age")?;
    assert!(age.ends_with('s'), "{age}");

    // Pagination metadata is kept.
    let page = get_table(
        &env,
        "/apis/test.example.com/v1/namespaces/test/gadgets?limit=1",
        TABLE,
    )
    .await?;
    assert_eq!(page["rows"].as_array().map(Vec::len), Some(1));
    assert!(page["metadata"]["continue"].as_str().is_some());
    assert_eq!(page["metadata"]["remainingItemCount"], 1);
    Ok(())
}

#[tokio::test]
async fn built_in_tables() -> TestResult {
    let env = env().await?;
    let client = env.client();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1", "b": "2"}});
    let request = http::Request::post("/api/v1/namespaces/test/configmaps")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&cm)?)?;
    let _: Value = client.request(request).await?;
    let table = get_table(&env, "/api/v1/namespaces/test/configmaps", TABLE).await?;
    assert_eq!(names(&table), ["Name", "Data", "Age"]);
    let row = table["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["cells"][0] == "c")
        .ok_or("no row for c")?;
    assert_eq!(row["cells"][1], 2);
    let namespaces = get_table(&env, "/api/v1/namespaces/test", TABLE).await?;
    assert_eq!(names(&namespaces), ["Name", "Status", "Age"]);
    assert_eq!(namespaces["rows"][0]["cells"][1], "Active");
    let crds = get_table(
        &env,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        TABLE,
    )
    .await?;
    assert_eq!(names(&crds), ["Name", "Created At"]);
    // A bad includeObject is a 400.
    let request = http::Request::get("/api/v1/namespaces/test/configmaps?includeObject=All")
        .header("Accept", TABLE)
        .body(Vec::new())?;
    match client.request::<Value>(request).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 400),
        other => return Err(format!("expected 400, got {other:?}").into()),
    }
    Ok(())
}

fn kubectl(env: &TestEnv, args: &[&str]) -> Result<(bool, String, String), Box<dyn std::error::Error>> {
    let output = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(env.kubeconfig_path()?)
        .args(args)
        .output()?;
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

fn header(out: &str) -> Vec<String> {
    out.lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn kubectl_get_prints_the_real_columns() -> TestResult {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        eprintln!("kubectl not installed: skipped");
        return Ok(());
    }
    let env = env().await?;
    let (ok, out, err) = kubectl(&env, &["get", "gadgets", "-n", "test"])?;
    assert!(ok, "{err}");
    assert_eq!(header(&out), ["NAME", "REPLICAS", "PHASE", "READY"]);
    let first: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(first, ["a", "1", "Running", "True"]);

    let (ok, out, err) = kubectl(&env, &["get", "gadgets", "-n", "test", "-o", "wide"])?;
    assert!(ok, "{err}");
    assert_eq!(
        header(&out),
        ["NAME", "REPLICAS", "PHASE", "READY", "NOTE", "PAUSED"]
    );
    let second: Vec<&str> = out
        .lines()
        .nth(2)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(second, ["b", "2", "Pending", "True", "note-b", "false"]);

    // -A adds the namespace column from the rows' metadata; --show-labels the labels.
    let (ok, out, err) = kubectl(&env, &["get", "gadgets", "-A", "--show-labels"])?;
    assert!(ok, "{err}");
    assert_eq!(
        header(&out),
        ["NAMESPACE", "NAME", "REPLICAS", "PHASE", "READY", "LABELS"]
    );
    assert!(
        out.lines().nth(1).unwrap_or_default().starts_with("test"),
        "{out}"
    );
    assert!(out.contains("app=x"), "{out}");

    let (ok, out, err) = kubectl(&env, &["get", "plains", "-n", "test"])?;
    assert!(ok, "{err}");
    assert_eq!(header(&out), ["NAME", "AGE"]);

    let (ok, out, err) = kubectl(&env, &["get", "gadget", "a", "-n", "test"])?;
    assert!(ok, "{err}");
    assert_eq!(out.lines().count(), 2, "{out}");

    let (ok, out, err) = kubectl(&env, &["get", "namespaces"])?;
    assert!(ok, "{err}");
    assert_eq!(header(&out), ["NAME", "STATUS", "AGE"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("test ") && l.contains("Active")),
        "{out}"
    );

    // Sorting asks for whole objects in the rows.
    let (ok, out, err) = kubectl(
        &env,
        &["get", "gadgets", "-n", "test", "--sort-by", ".spec.replicas"],
    )?;
    assert!(ok, "{err}");
    assert!(out.lines().nth(1).unwrap_or_default().starts_with('a'), "{out}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn table_watches() -> TestResult {
    let env = env().await?;
    let request =
        http::Request::get("/apis/test.example.com/v1/namespaces/test/gadgets?watch=true&timeoutSeconds=1")
            .header("Accept", TABLE)
            .body(Vec::new())?;
    let text = env.client().request_text(request).await?;
    let events: Vec<Value> = text.lines().map(serde_json::from_str).collect::<Result<_, _>>()?;
    assert_eq!(events.len(), 2, "{text}");
    assert_eq!(events[0]["type"], "ADDED");
    let first = &events[0]["object"];
    assert_eq!(first["kind"], "Table");
    assert_eq!(
        names(first),
        ["Name", "Replicas", "Phase", "Ready", "Note", "Paused"]
    );
    assert_eq!(
        first["rows"][0]["cells"],
        json!(["a", 1, "Running", "True", "note-a", false])
    );
    // Only the first event carries the column definitions.
    assert_eq!(events[1]["object"]["columnDefinitions"], Value::Null);
    assert_eq!(events[1]["object"]["rows"][0]["cells"][0], "b");

    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_ok()
    {
        let (_, out, _) = kubectl(
            &env,
            &["get", "gadgets", "-n", "test", "-w", "--request-timeout=2s"],
        )?;
        assert_eq!(header(&out), ["NAME", "REPLICAS", "PHASE", "READY"], "{out}");
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["b", "2", "Pending", "True"]),
            "{out}"
        );
    }
    Ok(())
}

/// The Machine API's Machine columns, whose JSONPaths escape the dots of label keys, and a
/// column over a list, through the Table view and `kubectl get` (client-go's JSONPath:
/// `['a\.b/c']` and `.a\.b/c` name one key, a list or map prints as JSON).
#[tokio::test(flavor = "multi_thread")]
async fn escaped_label_keys_and_list_columns() -> TestResult {
    let upstream = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-crds");
    let columns = json!([
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
        {"name": "Zone", "type": "string", "jsonPath": ".metadata.labels.topology\\.kubernetes\\.io/zone"},
        {"name": "Unescaped", "type": "string", "jsonPath": ".metadata.labels['topology.kubernetes.io/zone']"},
    ]);
    let env = TestEnv::builder()
        .crd_dir(upstream)
        .crd_object(crd("shelves", "Shelf", columns)?)
        .namespace("test")
        .start()
        .await?;
    let client = env.client();
    let machine = json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": "m", "labels": {
            "machine.openshift.io/instance-type": "m6i.xlarge",
            "machine.openshift.io/region": "us-east-1",
            "machine.openshift.io/zone": "us-east-1a",
        }},
        "spec": {},
    });
    let request = http::Request::post("/apis/machine.openshift.io/v1beta1/namespaces/test/machines")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&machine)?)?;
    let _: Value = client.request(request).await?;
    let status = http::Request::patch("/apis/machine.openshift.io/v1beta1/namespaces/test/machines/m/status")
        .header("Content-Type", "application/merge-patch+json")
        .body(serde_json::to_vec(&json!({"status": {"phase": "Running"}}))?)?;
    let _: Value = client.request(status).await?;
    let list = json!({
        "apiVersion": "test.example.com/v1", "kind": "Shelf",
        "metadata": {"name": "l", "labels": {"topology.kubernetes.io/zone": "z1"}},
        "spec": {"tags": ["a", "b"]},
    });
    let request = http::Request::post("/apis/test.example.com/v1/namespaces/test/shelves")
        .header("Content-Type", "application/json")
        .body(serde_json::to_vec(&list)?)?;
    let _: Value = client.request(request).await?;

    let table = get_table(
        &env,
        "/apis/machine.openshift.io/v1beta1/namespaces/test/machines",
        TABLE,
    )
    .await?;
    assert_eq!(
        names(&table),
        [
            "Name",
            "Phase",
            "Type",
            "Region",
            "Zone",
            "Age",
            "Node",
            "ProviderID",
            "State"
        ]
    );
    let cells = table["rows"][0]["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        cells[0..5],
        [
            json!("m"),
            json!("Running"),
            json!("m6i.xlarge"),
            json!("us-east-1"),
            json!("us-east-1a")
        ]
    );
    assert_eq!(cells[6], Value::Null);
    let table = get_table(&env, "/apis/test.example.com/v1/namespaces/test/shelves", TABLE).await?;
    assert_eq!(
        table["rows"][0]["cells"],
        json!(["l", r#"["a","b"]"#, "z1", null])
    );

    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        eprintln!("kubectl not installed: skipped");
        return Ok(());
    }
    let (ok, out, err) = kubectl(&env, &["get", "machines.machine.openshift.io", "-n", "test"])?;
    assert!(ok, "{err}");
    assert_eq!(header(&out), ["NAME", "PHASE", "TYPE", "REGION", "ZONE", "AGE"]);
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row[..5],
        ["m", "Running", "m6i.xlarge", "us-east-1", "us-east-1a"]
    );
    let (ok, out, err) = kubectl(&env, &["get", "shelves", "-n", "test"])?;
    assert!(ok, "{err}");
    let row: Vec<&str> = out
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header(&out), ["NAME", "TAGS", "ZONE", "UNESCAPED"]);
    // The unescaped key resolves to nothing: kubectl prints an empty cell.
    assert_eq!(row, ["l", r#"["a","b"]"#, "z1"]);
    // kubectl's own JSONPath (client-go's) resolves the same paths the same way.
    let (ok, out, err) = kubectl(
        &env,
        &[
            "get",
            "machines.machine.openshift.io",
            "m",
            "-n",
            "test",
            "-o",
            r"jsonpath={.metadata.labels['machine\.openshift\.io/region']} {.metadata.labels.machine\.openshift\.io/zone} {.metadata.labels['machine.openshift.io/zone']}",
        ],
    )?;
    assert!(ok, "{err}");
    assert_eq!(out.trim_end(), "us-east-1 us-east-1a");
    let (ok, out, err) = kubectl(
        &env,
        &[
            "get",
            "shelves",
            "-n",
            "test",
            "-o",
            r"custom-columns=TAGS:.spec.tags,ZONE:.metadata.labels.topology\.kubernetes\.io/zone",
        ],
    )?;
    assert!(ok, "{err}");
    assert_eq!(
        out.lines()
            .nth(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>()),
        Some(vec!["[a", "b]", "z1"])
    );
    Ok(())
}
