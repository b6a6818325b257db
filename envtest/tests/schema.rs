//! Structural schemas on the envtest server: every OpenAPI keyword the server enforces
//! (worded as kube-apiserver), defaulting on write and on read, pruning under each
//! `fieldValidation` mode, the `status`/`scale` subresources, ratcheting, storage versions,
//! and the real upstream Machine API / Cluster API CRDs.

mod common;

use common::{TestResult, call, create, expect, get, merge, put};
use envtest::TestEnv;
use serde_json::{Value, json};

const GADGETS: &str = "/apis/schema.example.com/v1/namespaces/test/gadgets";

fn fixtures() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

async fn gadget_env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    let crds = envtest::harness::read_crd_dir(&fixtures())?;
    let mut builder = TestEnv::builder().namespace("test");
    for crd in crds {
        builder = builder.crd_object(serde_json::from_value(crd)?);
    }
    Ok(builder.start().await?)
}

fn gadget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "schema.example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn valid_objects_are_accepted_and_defaulted() -> TestResult {
    let env = gadget_env().await?;
    let reply = create(&env, GADGETS, &gadget("a", json!({"mode": "fast", "ports": [{"name": "http"}], "port": "http", "name": null, "nullable": null}))).await?;
    expect(&reply, 201)?;
    let spec = &reply.body["spec"];
    assert_eq!(spec["replicas"], 1, "default of a missing scalar");
    assert_eq!(
        spec["nested"],
        json!({"level": "info"}),
        "defaults inside a defaulted object"
    );
    assert_eq!(
        spec["ports"],
        json!([{"name": "http", "port": 80}]),
        "defaults in list items"
    );
    assert!(spec.get("name").is_none(), "a null non-nullable field is dropped");
    assert_eq!(spec["nullable"], Value::Null, "a null nullable field is kept");
    assert!(spec.as_object().is_some_and(|s| s.contains_key("nullable")));
    let reply = create(
        &env,
        GADGETS,
        &gadget(
            "b",
            json!({
                "mode": "slow", "replicas": 10, "name": "abc", "ratio": 0.5, "step": 10,
                "created": "2024-01-02T03:04:05Z", "data": "aGVsbG8=", "tags": ["x"],
                "unique": ["a", "b"], "set": ["a", "b"], "labels": {"a": "1"}, "port": 8080,
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}},
                "config": {"anything": {"goes": [1, 2]}}, "atomic": {"a": "b"}
            }),
        ),
    )
    .await?;
    expect(&reply, 201)?;
    assert_eq!(
        reply.body["spec"]["config"],
        json!({"anything": {"goes": [1, 2]}})
    );
    assert_eq!(reply.body["spec"]["template"]["spec"], json!({"x": 1}));
    Ok(())
}

#[tokio::test]
async fn each_keyword_is_enforced_with_kube_apiserver_messages() -> TestResult {
    let env = gadget_env().await?;
    let cases: Vec<(Value, &str, &str, &str)> = vec![
        (
            json!({"replicas": -1}),
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            json!({"replicas": 11}),
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ),
        (
            json!({"replicas": "3"}),
            "spec.replicas",
            "FieldValueTypeInvalid",
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        ),
        (
            json!({"replicas": 1.5}),
            "spec.replicas",
            "FieldValueTypeInvalid",
            "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
        ),
        (
            json!({"mode": "x"}),
            "spec.mode",
            "FieldValueNotSupported",
            "Unsupported value: \"x\": supported values: \"fast\", \"slow\"",
        ),
        (
            json!({"name": "ab"}),
            "spec.name",
            "FieldValueInvalid",
            "Invalid value: \"ab\": spec.name in body should be at least 3 chars long",
        ),
        (
            json!({"name": "abcdefghi"}),
            "spec.name",
            "FieldValueTooLong",
            "Too long: may not be more than 8 bytes",
        ),
        (
            json!({"name": "ABC"}),
            "spec.name",
            "FieldValueInvalid",
            "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            json!({"ratio": 0}),
            "spec.ratio",
            "FieldValueInvalid",
            "Invalid value: 0: spec.ratio in body should be greater than 0",
        ),
        (
            json!({"ratio": 1}),
            "spec.ratio",
            "FieldValueInvalid",
            "Invalid value: 1: spec.ratio in body should be less than 1",
        ),
        (
            json!({"step": 7}),
            "spec.step",
            "FieldValueInvalid",
            "Invalid value: 7: spec.step in body should be a multiple of 5",
        ),
        (
            json!({"created": "yesterday"}),
            "spec.created",
            "FieldValueTypeInvalid",
            "Invalid value: \"yesterday\": spec.created in body must be of type date-time: \"yesterday\"",
        ),
        (
            json!({"data": "%%%"}),
            "spec.data",
            "FieldValueTypeInvalid",
            "Invalid value: \"%%%\": spec.data in body must be of type byte: \"%%%\"",
        ),
        (
            json!({"tags": []}),
            "spec.tags",
            "FieldValueInvalid",
            "Invalid value: 0: spec.tags in body should have at least 1 items",
        ),
        (
            json!({"tags": ["a", "b", "c", "d"]}),
            "spec.tags",
            "FieldValueTooMany",
            "Too many: 4: must have at most 3 items",
        ),
        (
            json!({"unique": ["a", "a"]}),
            "spec.unique",
            "FieldValueInvalid",
            "Invalid value: \"\": spec.unique in body shouldn't contain duplicates",
        ),
        // A repeated item is reported at its second appearance only (listtype.validateListSet).
        (
            json!({"set": ["a", "b", "a", "a"]}),
            "spec.set[2]",
            "FieldValueDuplicate",
            "Duplicate value: \"a\"",
        ),
        (
            json!({"ports": [{"name": "a"}, {"name": "a", "port": 81}]}),
            "spec.ports[1]",
            "FieldValueDuplicate",
            "Duplicate value: map[string]interface {}{\"name\":\"a\"}",
        ),
        (
            json!({"ports": [{"port": 1}]}),
            "spec.ports[0].name",
            "FieldValueRequired",
            "Required value",
        ),
        (
            json!({"labels": {}}),
            "spec.labels",
            "FieldValueInvalid",
            "Invalid value: 0: spec.labels in body should have at least 1 properties",
        ),
        (
            json!({"labels": {"a": "1", "b": "2", "c": "3"}}),
            "spec.labels",
            "FieldValueTooMany",
            "Too many: 3: must have at most 2 items",
        ),
        (
            json!({"labels": {"a": 1}}),
            "spec.labels.a",
            "FieldValueTypeInvalid",
            "Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"",
        ),
        (
            json!({"port": true}),
            "spec.port",
            "FieldValueTypeInvalid",
            "Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
        ),
        // Embedded resources: apiextensions-apiserver's schemaobjectmeta.Validate.
        (
            json!({"template": {"kind": "Pod"}}),
            "spec.template.apiVersion",
            "FieldValueRequired",
            "Required value",
        ),
        (
            json!({"template": {"apiVersion": "a/b/c", "kind": "Pod"}}),
            "spec.template.apiVersion",
            "FieldValueInvalid",
            "Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
        ),
        (
            json!({"template": {"apiVersion": "v1", "kind": "Pod_2"}}),
            "spec.template.kind",
            "FieldValueInvalid",
            "Invalid value: \"Pod_2\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ),
        (
            json!({"atomic": {"a": 1}}),
            "spec.atomic.a",
            "FieldValueTypeInvalid",
            "Invalid value: \"integer\": spec.atomic.a in body must be of type string: \"integer\"",
        ),
        (
            json!({"mode": null}),
            "spec.mode",
            "FieldValueRequired",
            "Required value",
        ),
    ];
    for (i, (patch, field, reason, message)) in cases.into_iter().enumerate() {
        let mut spec = json!({"mode": "fast"});
        json_patch::merge(&mut spec, &patch);
        if patch == json!({"mode": null}) {
            spec = json!({"mode": null});
        }
        let reply = create(&env, GADGETS, &gadget(&format!("g{i}"), spec)).await?;
        expect(&reply, 422)?;
        assert_eq!(reply.body["reason"], "Invalid");
        assert_eq!(reply.body["details"]["kind"], "Gadget");
        assert_eq!(reply.body["details"]["group"], "schema.example.com");
        assert_eq!(
            reply.causes(),
            vec![(field.to_string(), reason.to_string(), message.to_string())],
            "case {patch}"
        );
        assert_eq!(
            reply.body["message"],
            format!("Gadget.schema.example.com \"g{i}\" is invalid: {field}: {message}"),
        );
    }
    Ok(())
}

#[tokio::test]
async fn several_violations_are_one_invalid_with_a_cause_each() -> TestResult {
    let env = gadget_env().await?;
    let reply = create(
        &env,
        GADGETS,
        &gadget("many", json!({"replicas": -1, "name": "ABC"})),
    )
    .await?;
    expect(&reply, 422)?;
    let causes = reply.causes();
    assert_eq!(causes.len(), 3, "{causes:?}");
    assert!(
        causes
            .iter()
            .any(|c| c.0 == "spec.mode" && c.2 == "Required value")
    );
    assert!(causes.iter().any(|c| c.0 == "spec.replicas"));
    assert!(causes.iter().any(|c| c.0 == "spec.name"));
    let message = reply.body["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("Gadget.schema.example.com \"many\" is invalid: ["),
        "{message}"
    );
    Ok(())
}

fn with_unknown(name: &str) -> Value {
    json!({
        "apiVersion": "schema.example.com/v1", "kind": "Gadget",
        "metadata": {"name": name, "junk": true},
        "spec": {"mode": "fast", "foo": 1, "ports": [{"name": "a", "bar": 2}], "config": {"kept": 3}}
    })
}

#[tokio::test]
async fn unknown_fields_under_each_field_validation_mode() -> TestResult {
    let env = gadget_env().await?;
    let strict = create(
        &env,
        &format!("{GADGETS}?fieldValidation=Strict"),
        &with_unknown("s"),
    )
    .await?;
    expect(&strict, 400)?;
    assert_eq!(strict.body["reason"], "BadRequest");
    assert_eq!(
        strict.body["message"],
        "Gadget in version \"v1\" cannot be handled as a Gadget: strict decoding error: unknown field \"metadata.junk\", unknown field \"spec.foo\", unknown field \"spec.ports[0].bar\""
    );
    assert_eq!(get(&env, &format!("{GADGETS}/s")).await?.code, 404);

    let warn = create(&env, GADGETS, &with_unknown("w")).await?;
    expect(&warn, 201)?;
    assert_eq!(
        warn.warnings,
        vec![
            "299 - \"unknown field \\\"metadata.junk\\\"\"",
            "299 - \"unknown field \\\"spec.foo\\\"\"",
            "299 - \"unknown field \\\"spec.ports[0].bar\\\"\"",
        ]
    );
    let explicit = create(
        &env,
        &format!("{GADGETS}?fieldValidation=Warn"),
        &with_unknown("w2"),
    )
    .await?;
    assert_eq!(explicit.warnings.len(), 3);

    let ignore = create(
        &env,
        &format!("{GADGETS}?fieldValidation=Ignore"),
        &with_unknown("i"),
    )
    .await?;
    expect(&ignore, 201)?;
    assert!(ignore.warnings.is_empty());
    for reply in [&warn, &ignore] {
        let spec = &reply.body["spec"];
        assert!(spec.get("foo").is_none());
        assert_eq!(spec["ports"], json!([{"name": "a", "port": 80}]));
        assert_eq!(
            spec["config"],
            json!({"kept": 3}),
            "preserve-unknown-fields keeps everything"
        );
        assert!(reply.body["metadata"].get("junk").is_none());
    }

    // A merge patch adding an unknown field, strict: 400; the same patch warned: pruned.
    let patch = json!({"spec": {"extra": true}});
    let reply = call(
        &env,
        "PATCH",
        &format!("{GADGETS}/i?fieldValidation=Strict"),
        "application/merge-patch+json",
        &patch,
    )
    .await?;
    expect(&reply, 400)?;
    assert_eq!(
        reply.body["message"],
        "strict decoding error: unknown field \"spec.extra\""
    );
    let reply = merge(&env, &format!("{GADGETS}/i"), &patch).await?;
    expect(&reply, 200)?;
    assert!(reply.body["spec"].get("extra").is_none());
    assert_eq!(reply.warnings, vec!["299 - \"unknown field \\\"spec.extra\\\"\""]);

    let bad = create(
        &env,
        &format!("{GADGETS}?fieldValidation=Loud"),
        &with_unknown("x"),
    )
    .await?;
    expect(&bad, 400)?;
    Ok(())
}

#[tokio::test]
async fn status_and_scale_subresources_are_validated() -> TestResult {
    let env = gadget_env().await?;
    expect(
        &create(&env, GADGETS, &gadget("st", json!({"mode": "fast"}))).await?,
        201,
    )?;
    let reply = merge(
        &env,
        &format!("{GADGETS}/st/status"),
        &json!({"status": {"phase": "Bad", "replicas": 1}}),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "status.phase".into(),
            "FieldValueNotSupported".into(),
            "Unsupported value: \"Bad\": supported values: \"Pending\", \"Running\"".into()
        )]
    );
    let reply = merge(
        &env,
        &format!("{GADGETS}/st/status"),
        &json!({"status": {"phase": "Running", "replicas": 1}}),
    )
    .await?;
    expect(&reply, 200)?;
    let reply = call(
        &env,
        "PATCH",
        &format!("{GADGETS}/st/scale"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 11}}),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(reply.causes()[0].0, "spec.replicas");
    let reply = call(
        &env,
        "PATCH",
        &format!("{GADGETS}/st/scale"),
        "application/merge-patch+json",
        &json!({"spec": {"replicas": 4}}),
    )
    .await?;
    expect(&reply, 200)?;
    assert_eq!(reply.body["spec"]["replicas"], 4);
    Ok(())
}

const CRD: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.schema.example.com";

async fn change_schema(env: &TestEnv, change: impl FnOnce(&mut Value)) -> TestResult {
    let mut crd = get(env, CRD).await?.body;
    change(&mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]);
    expect(&put(env, CRD, &crd).await?, 200)?;
    Ok(())
}

#[tokio::test]
async fn defaults_added_later_apply_on_read() -> TestResult {
    let env = gadget_env().await?;
    expect(
        &create(&env, GADGETS, &gadget("old", json!({"mode": "fast"}))).await?,
        201,
    )?;
    change_schema(&env, |props| {
        props["added"] = json!({"type": "string", "default": "later"});
    })
    .await?;
    let reply = get(&env, &format!("{GADGETS}/old")).await?;
    assert_eq!(reply.body["spec"]["added"], "later");
    let list = get(&env, GADGETS).await?;
    assert_eq!(list.body["items"][0]["spec"]["added"], "later");
    Ok(())
}

#[tokio::test]
async fn unchanged_invalid_values_are_ratcheted_on_update() -> TestResult {
    let env = gadget_env().await?;
    expect(
        &create(
            &env,
            GADGETS,
            &gadget("r", json!({"mode": "fast", "name": "abcdef"})),
        )
        .await?,
        201,
    )?;
    change_schema(&env, |props| {
        props["name"]["maxLength"] = json!(4);
    })
    .await?;
    // The name is not touched: the stricter schema does not reject the update.
    expect(
        &merge(&env, &format!("{GADGETS}/r"), &json!({"spec": {"mode": "slow"}})).await?,
        200,
    )?;
    // Changing it to another too-long value is rejected.
    let reply = merge(
        &env,
        &format!("{GADGETS}/r"),
        &json!({"spec": {"name": "abcdefg"}}),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(reply.causes()[0].2, "Too long: may not be more than 4 bytes");
    Ok(())
}

fn two_versions(conversion: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 1}}}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.versions.example.com"},
        "spec": {
            "group": "versions.example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "conversion": conversion,
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema}
            ]
        }
    })
}

#[tokio::test]
async fn objects_are_stored_in_the_storage_version_and_served_in_every_version() -> TestResult {
    for conversion in [
        json!({"strategy": "None"}),
        json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://conversion.invalid"}}}),
    ] {
        let env = TestEnv::builder()
            .namespace("test")
            .crd_object(serde_json::from_value(two_versions(conversion))?)
            .start()
            .await?;
        let base = "/apis/versions.example.com";
        let body = json!({"apiVersion": "versions.example.com/v2", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 2}});
        let reply = create(&env, &format!("{base}/v2/namespaces/test/widgets"), &body).await?;
        expect(&reply, 201)?;
        assert_eq!(reply.body["apiVersion"], "versions.example.com/v2");
        let v1 = get(&env, &format!("{base}/v1/namespaces/test/widgets/w")).await?;
        assert_eq!(v1.body["apiVersion"], "versions.example.com/v1");
        assert_eq!(v1.body["spec"], json!({"size": 2}));
        let v2 = get(&env, &format!("{base}/v2/namespaces/test/widgets")).await?;
        assert_eq!(v2.body["items"][0]["apiVersion"], "versions.example.com/v2");
        // Written back through v2 unchanged: no new generation (stored as v1 all along).
        let mut same = get(&env, &format!("{base}/v2/namespaces/test/widgets/w"))
            .await?
            .body;
        same["metadata"]["labels"] = json!({"a": "b"});
        let updated = put(&env, &format!("{base}/v2/namespaces/test/widgets/w"), &same).await?;
        expect(&updated, 200)?;
        assert_eq!(updated.body["metadata"]["generation"], 1);
        // Validation runs in every served version.
        let bad = create(&env, &format!("{base}/v1/namespaces/test/widgets"), &json!({"apiVersion": "versions.example.com/v1", "kind": "Widget", "metadata": {"name": "x"}, "spec": {"size": 0}})).await?;
        expect(&bad, 422)?;
    }
    Ok(())
}

/// v1 (storage) knows `legacy` and keeps anything under `free`
/// (`x-kubernetes-preserve-unknown-fields`); v2 knows `extra` and only `free.known`.
fn diverging_versions(conversion: Value) -> Value {
    let v1 = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"},
        "legacy": {"type": "string"},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    }}}}});
    let v2 = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer"},
        "extra": {"type": "string"},
        "free": {"type": "object", "properties": {"known": {"type": "string"}}}
    }}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.versions.example.com"},
        "spec": {
            "group": "versions.example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "conversion": conversion,
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": v1},
                {"name": "v2", "served": true, "storage": false, "schema": v2}
            ]
        }
    })
}

/// Conversion `None` rewrites `apiVersion`, then prunes against the target version's
/// structural schema, honouring `x-kubernetes-preserve-unknown-fields`: to the storage
/// version on a write (what the response shows too), to the requested version on a read.
#[tokio::test]
async fn conversion_prunes_against_the_target_version() -> TestResult {
    let env = TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(diverging_versions(
            json!({"strategy": "None"}),
        ))?)
        .start()
        .await?;
    let v1 = "/apis/versions.example.com/v1/namespaces/test/widgets";
    let v2 = "/apis/versions.example.com/v2/namespaces/test/widgets";
    // Written in v2: `extra` is unknown to the storage version, `free.known` is kept by its
    // preserve-unknown-fields.
    let body = json!({"apiVersion": "versions.example.com/v2", "kind": "Widget", "metadata": {"name": "a"},
        "spec": {"size": 2, "extra": "x", "free": {"known": "k"}}});
    let reply = create(&env, v2, &body).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["apiVersion"], "versions.example.com/v2");
    assert_eq!(reply.body["spec"], json!({"size": 2, "free": {"known": "k"}}));
    assert!(reply.warnings.is_empty(), "{:?}", reply.warnings);
    assert_eq!(
        get(&env, &format!("{v1}/a")).await?.body["spec"],
        json!({"size": 2, "free": {"known": "k"}})
    );
    // Written in v1: read through v2, `legacy` and `free.other` are unknown there.
    let body = json!({"apiVersion": "versions.example.com/v1", "kind": "Widget", "metadata": {"name": "b"},
        "spec": {"size": 3, "legacy": "l", "free": {"known": "k", "other": 1}}});
    let reply = create(&env, v1, &body).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["spec"], body["spec"]);
    let through_v2 = get(&env, &format!("{v2}/b")).await?;
    assert_eq!(through_v2.body["apiVersion"], "versions.example.com/v2");
    assert_eq!(
        through_v2.body["spec"],
        json!({"size": 3, "free": {"known": "k"}})
    );
    let list = get(&env, v2).await?;
    assert_eq!(
        list.body["items"][1]["spec"],
        json!({"size": 3, "free": {"known": "k"}})
    );
    assert_eq!(get(&env, &format!("{v1}/b")).await?.body["spec"], body["spec"]);
    Ok(())
}

/// A `Webhook` conversion is not called here: objects are not converted, so nothing is
/// pruned on conversion either (the field mapping is the webhook's); only `apiVersion`
/// changes. This is a documented difference from kube-apiserver.
#[tokio::test]
async fn webhook_conversion_is_not_pruned() -> TestResult {
    let env = TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(diverging_versions(json!({
            "strategy": "Webhook",
            "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {"url": "https://conversion.invalid"}}
        })))?)
        .start()
        .await?;
    let body = json!({"apiVersion": "versions.example.com/v2", "kind": "Widget", "metadata": {"name": "a"},
        "spec": {"size": 2, "extra": "x"}});
    let reply = create(
        &env,
        "/apis/versions.example.com/v2/namespaces/test/widgets",
        &body,
    )
    .await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["spec"], body["spec"]);
    let v1 = get(&env, "/apis/versions.example.com/v1/namespaces/test/widgets/a").await?;
    assert_eq!(v1.body["apiVersion"], "versions.example.com/v1");
    assert_eq!(v1.body["spec"], body["spec"]);
    Ok(())
}

fn composition_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "mixes.compose.example.com"},
        "spec": {
            "group": "compose.example.com", "scope": "Namespaced",
            "names": {"kind": "Mix", "plural": "mixes", "singular": "mix", "listKind": "MixList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "a": {"type": "string", "anyOf": [{"maxLength": 2}, {"pattern": "^x"}]},
                        "b": {"type": "string", "oneOf": [{"minLength": 1}, {"maxLength": 3}]},
                        "c": {"type": "string", "not": {"pattern": "^x"}},
                        "d": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
                        "e": {"type": "string", "allOf": [{"pattern": "^e"}, {"maxLength": 3}]}
                    }},
                    "status": {"type": "object", "properties": {
                        "phase": {"type": "string", "not": {"enum": ["Unknown"]}}
                    }}
                }}}
            }]
        }
    })
}

/// `anyOf`, `oneOf`, `allOf` and `not` failures as kube-openapi words them (composite
/// errors, reported by apiextensions-apiserver at the validation's root with an empty value:
/// `<nil>`, or `status` on a `/status` write, whose names are relative to `status`), each
/// followed by the errors of the branch kube-openapi keeps, in the order of its
/// schemaPropsValidator (anyOf, oneOf, allOf, not).
#[tokio::test]
async fn composition_failures_are_worded_as_kube_openapi() -> TestResult {
    let env = TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(composition_crd())?)
        .start()
        .await?;
    let mixes = "/apis/compose.example.com/v1/namespaces/test/mixes";
    let body = json!({"apiVersion": "compose.example.com/v1", "kind": "Mix", "metadata": {"name": "m"},
        "spec": {"a": "abc", "b": "ab", "c": "xyz", "d": "c", "e": "long"}});
    let reply = create(&env, mixes, &body).await?;
    expect(&reply, 422)?;
    let expected = [
        (
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: \"\": \"spec.a\" must validate at least one schema (anyOf)",
        ),
        (
            "spec.a",
            "FieldValueTooLong",
            "Too long: may not be more than 2 bytes",
        ),
        (
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: \"\": \"spec.b\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
        ),
        (
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: \"\": \"spec.c\" must not validate the schema (not)",
        ),
        (
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: \"\": \"spec.d\" must validate one and only one schema (oneOf). Found none valid",
        ),
        (
            "spec.d",
            "FieldValueInvalid",
            "Invalid value: \"c\": spec.d in body should match '^a'",
        ),
        (
            "spec.e",
            "FieldValueInvalid",
            "Invalid value: \"long\": spec.e in body should match '^e'",
        ),
        (
            "spec.e",
            "FieldValueTooLong",
            "Too long: may not be more than 3 bytes",
        ),
        (
            "<nil>",
            "FieldValueInvalid",
            "Invalid value: \"\": \"spec.e\" must validate all the schemas (allOf). None validated",
        ),
    ];
    let expected: Vec<(String, String, String)> = expected
        .iter()
        .map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string()))
        .collect();
    assert_eq!(reply.causes(), expected);
    let lines: Vec<String> = expected.iter().map(|(f, _, m)| format!("{f}: {m}")).collect();
    assert_eq!(
        reply.body["message"],
        format!("Mix.compose.example.com \"m\" is invalid: [{}]", lines.join(", "))
    );
    // One branch of an allOf failing: no "None validated".
    let body = json!({"apiVersion": "compose.example.com/v1", "kind": "Mix", "metadata": {"name": "m"},
        "spec": {"e": "e234"}});
    let reply = create(&env, mixes, &body).await?;
    assert_eq!(
        reply.causes(),
        vec![
            (
                "spec.e".into(),
                "FieldValueTooLong".into(),
                "Too long: may not be more than 3 bytes".into()
            ),
            (
                "<nil>".into(),
                "FieldValueInvalid".into(),
                "Invalid value: \"\": \"spec.e\" must validate all the schemas (allOf)".into()
            ),
        ]
    );

    // On a `/status` write the root of the validation is `status`.
    let ok = json!({"apiVersion": "compose.example.com/v1", "kind": "Mix", "metadata": {"name": "ok"}, "spec": {}});
    expect(&create(&env, mixes, &ok).await?, 201)?;
    let reply = merge(
        &env,
        &format!("{mixes}/ok/status"),
        &json!({"status": {"phase": "Unknown"}}),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "status".into(),
            "FieldValueInvalid".into(),
            "Invalid value: \"\": \"phase\" must not validate the schema (not)".into()
        )]
    );
    assert_eq!(
        reply.body["message"],
        "Mix.compose.example.com \"ok\" is invalid: status: Invalid value: \"\": \"phase\" must not validate the schema (not)"
    );
    Ok(())
}
