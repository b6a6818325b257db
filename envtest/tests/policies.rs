//! ValidatingAdmissionPolicies on the envtest server, one kube-apiserver rule per test:
//! matching (operations, groups, versions, resources, subresources, names, exclusions,
//! selectors, equivalent versions, bindings' resources), match conditions, variables,
//! validations and their messages, params, failure policies, validation actions, the CEL
//! variables, the error envelope, the kinds' own validation and defaults, and kubectl.
#![recursion_limit = "256"]

mod common;

use common::{Reply, TestResult, call, call_as, create, expect, get, merge};
use envtest::TestEnv;
use serde_json::{Value, json};

const CONFIGMAPS: &str = "/api/v1/namespaces/test/configmaps";
const POLICIES: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
const BINDINGS: &str = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings";
const WIDGETS_V1: &str = "/apis/example.com/v1/namespaces/test/widgets";
const WIDGETS_V2: &str = "/apis/example.com/v2/namespaces/test/widgets";

async fn env() -> Result<TestEnv, Box<dyn std::error::Error>> {
    Ok(TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(widget_crd())?)
        .user("alice", &["system:masters"])
        .start()
        .await?)
}

/// A namespaced CRD served as v1 (storage) and v2, with a status subresource.
fn widget_crd() -> Value {
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
        })
    };
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [version("v1", true), version("v2", false)]
        }
    })
}

/// A policy on ConfigMap creates and updates; `spec` is merged over that.
fn policy(name: &str, spec: Value) -> Value {
    let mut base = json!({
        "matchConstraints": {"resourceRules": [{
            "apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]
        }]},
        "validations": [{"expression": "!has(object.data) || !('deny' in object.data)", "message": "no deny key"}]
    });
    merge_into(&mut base, spec);
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
           "metadata": {"name": name}, "spec": base})
}

/// A binding of `policy` named `<policy>-binding` that denies; `spec` is merged over that.
fn binding(policy: &str, spec: Value) -> Value {
    let mut base = json!({"policyName": policy, "validationActions": ["Deny"]});
    merge_into(&mut base, spec);
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
           "metadata": {"name": format!("{policy}-binding")}, "spec": base})
}

fn merge_into(base: &mut Value, patch: Value) {
    if let (Some(base), Value::Object(patch)) = (base.as_object_mut(), patch) {
        for (k, v) in patch {
            base.insert(k, v);
        }
    }
}

async fn install(env: &TestEnv, policy: Value, binding: Value) -> TestResult {
    expect(&create(env, POLICIES, &policy).await?, 201)?;
    expect(&create(env, BINDINGS, &binding).await?, 201)?;
    Ok(())
}

fn configmap(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

fn widget(name: &str, version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

/// The `Warning` header of a `Warn` binding of `policy` (named as [`binding`] names it)
/// whose validation failed with `message`.
fn warning(policy: &str, message: &str) -> String {
    format!(
        "299 - \"Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{policy}-binding': {message}\""
    )
}

/// Fails unless `reply` is a denial whose message ends with `message`.
fn denied(reply: &Reply, code: u16, message: &str) -> TestResult {
    expect(reply, code)?;
    let got = reply.body["message"].as_str().unwrap_or_default();
    if !got.ends_with(message) {
        return Err(format!("expected a denial ending {message:?}, got {got:?}").into());
    }
    Ok(())
}

#[tokio::test]
async fn a_denial_is_kube_s_status_byte_for_byte() -> TestResult {
    let env = env().await?;
    install(&env, policy("no-deny", json!({})), binding("no-deny", json!({}))).await?;
    let reply = create(&env, CONFIGMAPS, &configmap("c", json!({"deny": "1"}))).await?;
    let message = "configmaps \"c\" is forbidden: ValidatingAdmissionPolicy 'no-deny' with binding 'no-deny-binding' denied request: no deny key";
    assert_eq!(
        reply.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": "Invalid", "code": 422,
            "details": {"name": "c", "kind": "configmaps", "causes": [{
                "message": "ValidatingAdmissionPolicy 'no-deny' with binding 'no-deny-binding' denied request: no deny key"
            }]}
        })
    );
    expect(
        &create(&env, CONFIGMAPS, &configmap("ok", json!({"a": "1"}))).await?,
        201,
    )?;
    Ok(())
}

#[tokio::test]
async fn messages_come_from_the_message_expression_the_message_or_the_expression() -> TestResult {
    let env = env().await?;
    let validations = json!({"validations": [
        {"expression": "!has(object.data.a)", "messageExpression": "'a is ' + object.data.a", "message": "unused"},
        {"expression": "!has(object.data.b)", "messageExpression": "'two\\nlines'", "message": "b is refused"},
        {"expression": "!has(object.data.c)"},
        {"expression": "!has(object.data.d)", "reason": "Forbidden", "message": "d is forbidden"}
    ]});
    install(
        &env,
        policy("messages", validations),
        binding("messages", json!({})),
    )
    .await?;
    let prefix = "ValidatingAdmissionPolicy 'messages' with binding 'messages-binding' denied request: ";
    for (key, code, message) in [
        ("a", 422, "a is x".to_string()),
        ("b", 422, "b is refused".into()),
        ("c", 422, "failed expression: !has(object.data.c)".into()),
        ("d", 403, "d is forbidden".into()),
    ] {
        let reply = create(&env, CONFIGMAPS, &configmap("c", json!({key: "x"}))).await?;
        denied(&reply, code, &format!("{prefix}{message}"))?;
    }
    let reply = create(&env, CONFIGMAPS, &configmap("c", json!({"d": "x"}))).await?;
    assert_eq!(reply.body["reason"], "Forbidden");
    Ok(())
}

#[tokio::test]
async fn operations_groups_and_resources_choose_the_writes_a_policy_sees() -> TestResult {
    let env = env().await?;
    let rules = |operations: Value, groups: Value, resources: Value| {
        json!({"matchConstraints": {"resourceRules": [{
            "apiGroups": groups, "apiVersions": ["*"], "operations": operations, "resources": resources
        }]}})
    };
    install(
        &env,
        policy(
            "updates",
            rules(json!(["UPDATE"]), json!([""]), json!(["configmaps"])),
        ),
        binding("updates", json!({})),
    )
    .await?;
    install(
        &env,
        policy("apps", rules(json!(["*"]), json!(["apps"]), json!(["*"]))),
        binding("apps", json!({})),
    )
    .await?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("c", json!({"deny": "1"}))).await?,
        201,
    )?;
    let reply = merge(&env, &format!("{CONFIGMAPS}/c"), &json!({"data": {"other": "2"}})).await?;
    denied(
        &reply,
        422,
        "'updates' with binding 'updates-binding' denied request: no deny key",
    )?;
    install(
        &env,
        policy("everything", rules(json!(["*"]), json!(["*"]), json!(["*"]))),
        binding("everything", json!({})),
    )
    .await?;
    let reply = create(&env, CONFIGMAPS, &configmap("d", json!({"deny": "1"}))).await?;
    denied(
        &reply,
        422,
        "'everything' with binding 'everything-binding' denied request: no deny key",
    )?;
    Ok(())
}

#[tokio::test]
async fn subresources_match_only_as_listed() -> TestResult {
    let env = env().await?;
    let on = |name: &str, resources: Value| {
        policy(
            name,
            json!({
                "matchConstraints": {"resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"],
                    "operations": ["UPDATE"], "resources": resources}]},
                "validations": [{"expression": "!has(object.status) || object.status.ok", "message": name}]
            }),
        )
    };
    expect(
        &create(&env, WIDGETS_V1, &widget("w", "v1", json!({}))).await?,
        201,
    )?;
    let status = json!({"status": {"ok": false}});
    install(
        &env,
        on("main-only", json!(["widgets"])),
        binding("main-only", json!({})),
    )
    .await?;
    expect(
        &merge(&env, &format!("{WIDGETS_V1}/w/status"), &status).await?,
        200,
    )?;
    install(
        &env,
        on("status-only", json!(["widgets/status"])),
        binding("status-only", json!({})),
    )
    .await?;
    let reply = merge(&env, &format!("{WIDGETS_V1}/w/status"), &status).await?;
    denied(&reply, 422, "denied request: status-only")?;
    let reply = merge(
        &env,
        &format!("{WIDGETS_V1}/w"),
        &json!({"metadata": {"labels": {"a": "b"}}}),
    )
    .await?;
    denied(&reply, 422, "denied request: main-only")?;
    Ok(())
}

#[tokio::test]
async fn resource_names_and_excluded_rules_narrow_the_match() -> TestResult {
    let env = env().await?;
    let spec = json!({"matchConstraints": {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["configmaps"], "resourceNames": ["named", "excluded"]}],
        "excludeResourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"],
                                  "resources": ["configmaps"], "resourceNames": ["excluded"]}]
    }});
    install(&env, policy("names", spec), binding("names", json!({}))).await?;
    let deny = json!({"deny": "1"});
    expect(
        &create(&env, CONFIGMAPS, &configmap("other", deny.clone())).await?,
        201,
    )?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("excluded", deny.clone())).await?,
        201,
    )?;
    denied(
        &create(&env, CONFIGMAPS, &configmap("named", deny)).await?,
        422,
        "no deny key",
    )?;
    Ok(())
}

#[tokio::test]
async fn namespace_and_object_selectors_match_by_labels() -> TestResult {
    let env = env().await?;
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}});
    expect(&create(&env, "/api/v1/namespaces", &namespace).await?, 201)?;
    install(&env, policy("prod", json!({"matchConstraints": {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["configmaps"]}],
        "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    }})), binding("prod", json!({}))).await?;
    let deny = json!({"deny": "1"});
    expect(
        &create(&env, CONFIGMAPS, &configmap("test-ns", deny.clone())).await?,
        201,
    )?;
    let reply = create(
        &env,
        "/api/v1/namespaces/prod/configmaps",
        &configmap("prod-ns", deny.clone()),
    )
    .await?;
    denied(&reply, 422, "no deny key")?;

    install(&env, policy("guarded", json!({"matchConstraints": {
        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["configmaps"]}],
        "objectSelector": {"matchLabels": {"guarded": "yes"}}
    }})), binding("guarded", json!({}))).await?;
    let mut labeled = configmap("labeled", json!({}));
    labeled["metadata"]["labels"] = json!({"guarded": "yes"});
    expect(&create(&env, CONFIGMAPS, &labeled).await?, 201)?;
    // The old object's labels match too: dropping the label does not escape the policy.
    let unlabel = json!({"metadata": {"labels": null}, "data": {"deny": "1"}});
    denied(
        &merge(&env, &format!("{CONFIGMAPS}/labeled"), &unlabel).await?,
        422,
        "no deny key",
    )?;
    Ok(())
}

#[tokio::test]
async fn equivalent_versions_match_unless_the_policy_is_exact() -> TestResult {
    let env = env().await?;
    let spec = |policy_name: &str, match_policy: &str| {
        json!({
            "matchConstraints": {"matchPolicy": match_policy, "resourceRules": [{
                "apiGroups": ["example.com"], "apiVersions": ["v2"], "operations": ["CREATE"], "resources": ["widgets"]}]},
            "validations": [{
                "expression": "!has(object.spec.deny)",
                "messageExpression": format!("'{policy_name} saw ' + request.kind.version + ' (' + object.apiVersion + ') for ' + request.requestKind.version")
            }]
        })
    };
    // Policies are evaluated in name order: `direct` (Exact) before `equivalent`.
    install(
        &env,
        policy("direct", spec("direct", "Exact")),
        binding("direct", json!({})),
    )
    .await?;
    expect(
        &create(&env, WIDGETS_V1, &widget("a", "v1", json!({"deny": true}))).await?,
        201,
    )?;
    install(
        &env,
        policy("equivalent", spec("equivalent", "Equivalent")),
        binding("equivalent", json!({})),
    )
    .await?;
    let reply = create(&env, WIDGETS_V1, &widget("b", "v1", json!({"deny": true}))).await?;
    denied(&reply, 422, "equivalent saw v2 (example.com/v2) for v1")?;
    let reply = create(&env, WIDGETS_V2, &widget("c", "v2", json!({"deny": true}))).await?;
    denied(&reply, 422, "direct saw v2 (example.com/v2) for v2")?;
    Ok(())
}

#[tokio::test]
async fn a_binding_s_match_resources_narrow_its_policy() -> TestResult {
    let env = env().await?;
    let narrow = json!({"matchResources": {"resourceRules": [{
        "apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["configmaps"]}]}});
    install(&env, policy("narrowed", json!({})), binding("narrowed", narrow)).await?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("c", json!({"deny": "1"}))).await?,
        201,
    )?;
    let reply = merge(&env, &format!("{CONFIGMAPS}/c"), &json!({"data": {"x": "1"}})).await?;
    denied(&reply, 422, "no deny key")?;
    Ok(())
}

#[tokio::test]
async fn match_conditions_skip_the_policy_or_fail_by_the_failure_policy() -> TestResult {
    let env = env().await?;
    let conditions = |failure: &str| {
        json!({"failurePolicy": failure, "matchConditions": [
            {"name": "marked", "expression": "has(object.metadata.labels) && 'check' in object.metadata.labels"},
            {"name": "broken", "expression": "object.data.nope == 'x'"}
        ]})
    };
    install(
        &env,
        policy("fail", conditions("Fail")),
        binding("fail", json!({})),
    )
    .await?;
    // A false condition skips the policy, even beside an erroring one.
    expect(
        &create(&env, CONFIGMAPS, &configmap("unmarked", json!({"deny": "1"}))).await?,
        201,
    )?;
    let mut marked = configmap("marked", json!({"a": "1"}));
    marked["metadata"]["labels"] = json!({"check": "yes"});
    let reply = create(&env, CONFIGMAPS, &marked).await?;
    denied(
        &reply,
        422,
        "'fail' with binding 'fail-binding' denied request: expression 'object.data.nope == 'x'' resulted in error: no such key: nope",
    )?;
    let policy_path = format!("{POLICIES}/fail");
    expect(
        &merge(&env, &policy_path, &json!({"spec": {"failurePolicy": "Ignore"}})).await?,
        200,
    )?;
    expect(&create(&env, CONFIGMAPS, &marked).await?, 201)?;
    Ok(())
}

#[tokio::test]
async fn variables_are_evaluated_only_when_read() -> TestResult {
    let env = env().await?;
    let spec = json!({
        "variables": [
            {"name": "broken", "expression": "object.data.missing"},
            {"name": "keys", "expression": "has(object.data) ? size(object.data) : 0"},
            {"name": "many", "expression": "variables.keys > 1"}
        ],
        "validations": [
            {"expression": "!variables.many", "messageExpression": "'too many keys: ' + string(variables.keys)"},
            {"expression": "!has(object.data.probe) || variables.broken == 'x'", "message": "probe"}
        ]
    });
    install(&env, policy("vars", spec), binding("vars", json!({}))).await?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("one", json!({"a": "1"}))).await?,
        201,
    )?;
    denied(
        &create(&env, CONFIGMAPS, &configmap("two", json!({"a": "1", "b": "2"}))).await?,
        422,
        "too many keys: 2",
    )?;
    let reply = create(&env, CONFIGMAPS, &configmap("probe", json!({"probe": "1"}))).await?;
    denied(
        &reply,
        422,
        "expression '!has(object.data.probe) || variables.broken == 'x'' resulted in error: composited variable \"broken\" fails to evaluate: no such key: missing",
    )?;
    Ok(())
}

/// A missing key is told as the failed variable's error only in an expression that reads
/// that variable; elsewhere it is the object's missing key, even when a variable of that
/// name failed earlier in the same evaluation.
#[tokio::test]
async fn a_missing_key_is_a_failed_variable_only_where_that_variable_is_read() -> TestResult {
    let env = env().await?;
    let spec = json!({
        "variables": [{"name": "size", "expression": "object.data.nothing"}],
        "validations": [
            {"expression": "variables.size == 'x'"},
            {"expression": "object.data.size == 'x'"}
        ]
    });
    let warn = json!({"validationActions": ["Warn"]});
    install(&env, policy("names", spec), binding("names", warn)).await?;
    let reply = create(&env, CONFIGMAPS, &configmap("c", json!({"a": "1"}))).await?;
    expect(&reply, 201)?;
    assert_eq!(
        reply.warnings,
        vec![
            warning(
                "names",
                "expression 'variables.size == 'x'' resulted in error: composited variable \\\"size\\\" fails to evaluate: no such key: nothing"
            ),
            warning(
                "names",
                "expression 'object.data.size == 'x'' resulted in error: no such key: size"
            ),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn params_are_found_by_name_in_the_request_s_namespace_or_the_binding_s() -> TestResult {
    let env = env().await?;
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["secrets"]}]},
        "validations": [{"expression": "!has(object.data) || size(object.data) <= int(params.data.max)",
                         "messageExpression": "'at most ' + params.data.max + ' keys (' + params.metadata.namespace + ')'"}]
    });
    let reference = json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Allow"}});
    install(&env, policy("limits", spec), binding("limits", reference)).await?;
    let secret = |name: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {"a": "YQ==", "b": "Yg=="}});
    let secrets = "/api/v1/namespaces/test/secrets";
    expect(&create(&env, secrets, &secret("before")).await?, 201)?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("limits", json!({"max": "1"}))).await?,
        201,
    )?;
    denied(
        &create(&env, secrets, &secret("after")).await?,
        422,
        "at most 1 keys (test)",
    )?;
    // An updated param is seen by the next write, not the copy prepared before.
    let raised = json!({"data": {"max": "2"}});
    expect(&merge(&env, &format!("{CONFIGMAPS}/limits"), &raised).await?, 200)?;
    expect(&create(&env, secrets, &secret("raised")).await?, 201)?;
    let lowered = json!({"data": {"max": "0"}});
    expect(
        &merge(&env, &format!("{CONFIGMAPS}/limits"), &lowered).await?,
        200,
    )?;
    denied(
        &create(&env, secrets, &secret("lowered")).await?,
        422,
        "at most 0 keys (test)",
    )?;

    let elsewhere = json!({"spec": {"paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}});
    expect(
        &merge(&env, &format!("{BINDINGS}/limits-binding"), &elsewhere).await?,
        200,
    )?;
    let reply = create(&env, secrets, &secret("missing")).await?;
    denied(
        &reply,
        422,
        "'limits' with binding 'limits-binding' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
    )?;
    let defaults = "/api/v1/namespaces/default/configmaps";
    expect(
        &create(&env, defaults, &configmap("limits", json!({"max": "5"}))).await?,
        201,
    )?;
    expect(&create(&env, secrets, &secret("found")).await?, 201)?;
    Ok(())
}

#[tokio::test]
async fn every_param_a_selector_finds_is_evaluated() -> TestResult {
    let env = env().await?;
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["secrets"]}]},
        "validations": [{"expression": "object.metadata.name != params.data.banned", "messageExpression": "params.metadata.name + ' bans it'"}]
    });
    let reference = json!({"paramRef": {"selector": {"matchLabels": {"role": "ban"}}, "parameterNotFoundAction": "Allow"}});
    install(&env, policy("bans", spec), binding("bans", reference)).await?;
    for (name, banned) in [("ban-a", "alpha"), ("ban-b", "beta")] {
        let mut param = configmap(name, json!({"banned": banned}));
        param["metadata"]["labels"] = json!({"role": "ban"});
        expect(&create(&env, CONFIGMAPS, &param).await?, 201)?;
    }
    let secret = |name: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}});
    let secrets = "/api/v1/namespaces/test/secrets";
    denied(
        &create(&env, secrets, &secret("beta")).await?,
        422,
        "ban-b bans it",
    )?;
    denied(
        &create(&env, secrets, &secret("alpha")).await?,
        422,
        "ban-a bans it",
    )?;
    expect(&create(&env, secrets, &secret("gamma")).await?, 201)?;
    Ok(())
}

#[tokio::test]
async fn a_param_kind_that_is_not_served_blocks_only_the_writes_its_policy_matches() -> TestResult {
    let env = TestEnv::builder().namespace("test").start().await?;
    let spec = json!({"paramKind": {"apiVersion": "example.com/v1", "kind": "Widget"}});
    let reference = json!({"paramRef": {"name": "w", "parameterNotFoundAction": "Allow"}});
    install(
        &env,
        policy("widget-params", spec),
        binding("widget-params", reference),
    )
    .await?;
    let reply = create(&env, CONFIGMAPS, &configmap("c", json!({}))).await?;
    denied(
        &reply,
        422,
        "ValidatingAdmissionPolicy 'widget-params' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Widget'",
    )?;
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    expect(
        &create(&env, "/api/v1/namespaces/test/secrets", &secret).await?,
        201,
    )?;
    let ignore = json!({"spec": {"failurePolicy": "Ignore"}});
    expect(
        &merge(&env, &format!("{POLICIES}/widget-params"), &ignore).await?,
        200,
    )?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("d", json!({"deny": "1"}))).await?,
        201,
    )?;
    // Once the kind is served the policy works, with no param (Allow) admitting.
    let fail = json!({"spec": {"failurePolicy": "Fail"}});
    expect(
        &merge(&env, &format!("{POLICIES}/widget-params"), &fail).await?,
        200,
    )?;
    expect(
        &create(
            &env,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &widget_crd(),
        )
        .await?,
        201,
    )?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("e", json!({"deny": "1"}))).await?,
        201,
    )?;
    expect(
        &create(&env, WIDGETS_V1, &widget("w", "v1", json!({}))).await?,
        201,
    )?;
    denied(
        &create(&env, CONFIGMAPS, &configmap("f", json!({"deny": "1"}))).await?,
        422,
        "no deny key",
    )?;
    Ok(())
}

#[tokio::test]
async fn warn_adds_a_warning_header_and_audit_admits() -> TestResult {
    let env = env().await?;
    install(
        &env,
        policy("warned", json!({})),
        binding("warned", json!({"validationActions": ["Warn", "Audit"]})),
    )
    .await?;
    let reply = create(&env, CONFIGMAPS, &configmap("c", json!({"deny": "1"}))).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.warnings, vec![warning("warned", "no deny key")]);
    let audit_only = json!({"spec": {"validationActions": ["Audit"]}});
    expect(
        &merge(&env, &format!("{BINDINGS}/warned-binding"), &audit_only).await?,
        200,
    )?;
    let reply = create(&env, CONFIGMAPS, &configmap("d", json!({"deny": "1"}))).await?;
    expect(&reply, 201)?;
    assert!(reply.warnings.is_empty(), "{:?}", reply.warnings);
    Ok(())
}

#[tokio::test]
async fn expressions_see_kube_s_variables() -> TestResult {
    let env = env().await?;
    let spec = json!({
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"], "resources": ["configmaps"]}]},
        "validations": [
            {"expression": "request.operation != 'CREATE' || (oldObject == null && object.metadata.name == request.name)", "message": "create"},
            {"expression": "request.operation != 'UPDATE' || oldObject.data.v != object.data.v", "message": "update"},
            {"expression": "request.operation != 'DELETE' || (object == null && oldObject.data.?keep.orValue('') != 'yes')", "message": "kept"},
            {"expression": "request.userInfo.username != 'alice' || 'system:authenticated' in request.userInfo.groups", "message": "user"},
            {"expression": "namespaceObject.metadata.name == request.namespace && request.resource.resource == 'configmaps'", "message": "namespace"},
            {"expression": "!request.dryRun || object.metadata.?labels[?'dry'].orValue('') == 'ok'", "message": "dry run"}
        ]
    });
    install(&env, policy("env", spec), binding("env", json!({}))).await?;
    let alice = env.client_as("alice").await?;
    let json_type = "application/json";
    let reply = call_as(
        &alice,
        "POST",
        CONFIGMAPS,
        json_type,
        &configmap("c", json!({"v": "1", "keep": "yes"})),
    )
    .await?;
    expect(&reply, 201)?;
    let path = format!("{CONFIGMAPS}/c");
    denied(
        &merge(&env, &path, &json!({"metadata": {"labels": {"x": "y"}}})).await?,
        422,
        "update",
    )?;
    expect(&merge(&env, &path, &json!({"data": {"v": "2"}})).await?, 200)?;
    denied(
        &call(&env, "DELETE", &path, json_type, &Value::Null).await?,
        422,
        "kept",
    )?;
    denied(
        &create(
            &env,
            &format!("{CONFIGMAPS}?dryRun=All"),
            &configmap("dry", json!({})),
        )
        .await?,
        422,
        "dry run",
    )?;
    expect(
        &merge(&env, &path, &json!({"data": {"keep": "no", "v": "3"}})).await?,
        200,
    )?;
    expect(&call(&env, "DELETE", &path, json_type, &Value::Null).await?, 200)?;
    Ok(())
}

#[tokio::test]
async fn audit_annotations_must_be_strings_or_null() -> TestResult {
    let env = env().await?;
    let spec = json!({"validations": [], "auditAnnotations": [
        {"key": "name", "valueExpression": "object.metadata.name"},
        {"key": "count", "valueExpression": "has(object.data) && has(object.data.n) ? size(object.data) : null"}
    ]});
    install(&env, policy("audit", spec), binding("audit", json!({}))).await?;
    expect(&create(&env, CONFIGMAPS, &configmap("c", json!({}))).await?, 201)?;
    let reply = create(&env, CONFIGMAPS, &configmap("d", json!({"n": "1"}))).await?;
    denied(
        &reply,
        422,
        "valueExpression 'has(object.data) && has(object.data.n) ? size(object.data) : null' resulted in unsupported return type: int. Return type must be either string or null.",
    )?;
    Ok(())
}

#[tokio::test]
async fn evaluation_errors_follow_the_failure_policy() -> TestResult {
    let env = env().await?;
    let spec = json!({"validations": [{"expression": "object.data.missing == 'x'"}]});
    install(&env, policy("errors", spec), binding("errors", json!({}))).await?;
    let reply = create(&env, CONFIGMAPS, &configmap("c", json!({"a": "1"}))).await?;
    denied(
        &reply,
        422,
        "denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing",
    )?;
    expect(
        &merge(
            &env,
            &format!("{POLICIES}/errors"),
            &json!({"spec": {"failurePolicy": "Ignore"}}),
        )
        .await?,
        200,
    )?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("c", json!({"a": "1"}))).await?,
        201,
    )?;
    Ok(())
}

/// A condition or validation that reads only the write is evaluated once per write, however
/// many policies repeat it; each policy still decides on that result by its own failure
/// policy, actions and messages.
#[tokio::test]
async fn an_expression_several_policies_share_is_decided_by_each_policy() -> TestResult {
    let env = env().await?;
    let shared = |message: &str, failure: &str| {
        json!({
            "failurePolicy": failure,
            "matchConditions": [{"name": "not-alice", "expression": "request.userInfo.username != 'alice'"}],
            "validations": [
                {"expression": "object.data.size == 'small'", "message": message},
                {"expression": "object.data.missing == 'x'"}
            ]
        })
    };
    let warn = json!({"validationActions": ["Warn"]});
    install(
        &env,
        policy("a-fails", shared("a says small", "Fail")),
        binding("a-fails", warn.clone()),
    )
    .await?;
    install(
        &env,
        policy("b-ignores", shared("b says small", "Ignore")),
        binding("b-ignores", warn),
    )
    .await?;
    let reply = create(
        &env,
        CONFIGMAPS,
        &configmap("c", json!({"size": "big", "missing": "x"})),
    )
    .await?;
    expect(&reply, 201)?;
    assert_eq!(
        reply.warnings,
        vec![
            warning("a-fails", "a says small"),
            warning("b-ignores", "b says small")
        ]
    );
    let reply = create(&env, CONFIGMAPS, &configmap("d", json!({"size": "small"}))).await?;
    expect(&reply, 201)?;
    let error = "expression 'object.data.missing == 'x'' resulted in error: no such key: missing";
    assert_eq!(
        reply.warnings,
        vec![warning("a-fails", error)],
        "b ignores the error"
    );
    let deny = json!({"spec": {"validationActions": ["Deny"]}});
    expect(
        &merge(&env, &format!("{BINDINGS}/a-fails-binding"), &deny).await?,
        200,
    )?;
    let reply = create(&env, CONFIGMAPS, &configmap("e", json!({"size": "small"}))).await?;
    denied(
        &reply,
        422,
        &format!("'a-fails' with binding 'a-fails-binding' denied request: {error}"),
    )?;
    let alice = env.client_as("alice").await?;
    let body = configmap("f", json!({"size": "big"}));
    let reply = call_as(&alice, "POST", CONFIGMAPS, "application/json", &body).await?;
    expect(&reply, 201)?;
    assert!(
        reply.warnings.is_empty(),
        "the shared match condition skips both: {:?}",
        reply.warnings
    );
    Ok(())
}

#[tokio::test]
async fn policies_apply_once_stored_and_stop_once_deleted() -> TestResult {
    let env = env().await?;
    expect(
        &create(&env, POLICIES, &policy("lifecycle", json!({}))).await?,
        201,
    )?;
    // Without a binding, a policy does nothing.
    expect(
        &create(&env, CONFIGMAPS, &configmap("a", json!({"deny": "1"}))).await?,
        201,
    )?;
    expect(
        &create(&env, BINDINGS, &binding("lifecycle", json!({}))).await?,
        201,
    )?;
    denied(
        &create(&env, CONFIGMAPS, &configmap("b", json!({"deny": "1"}))).await?,
        422,
        "no deny key",
    )?;
    let changed = json!({"spec": {"validations": [{"expression": "!has(object.data.other)", "message": "no other key"}]}});
    expect(
        &merge(&env, &format!("{POLICIES}/lifecycle"), &changed).await?,
        200,
    )?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("b", json!({"deny": "1"}))).await?,
        201,
    )?;
    denied(
        &create(&env, CONFIGMAPS, &configmap("c", json!({"other": "1"}))).await?,
        422,
        "no other key",
    )?;
    expect(
        &call(
            &env,
            "DELETE",
            &format!("{BINDINGS}/lifecycle-binding"),
            "application/json",
            &Value::Null,
        )
        .await?,
        200,
    )?;
    expect(
        &create(&env, CONFIGMAPS, &configmap("c", json!({"other": "1"}))).await?,
        201,
    )?;
    Ok(())
}

#[tokio::test]
async fn the_policy_kinds_are_never_subject_to_policies() -> TestResult {
    let env = env().await?;
    let everything = json!({
        "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]},
        "validations": [{"expression": "false", "message": "nothing"}]
    });
    install(&env, policy("nothing", everything), binding("nothing", json!({}))).await?;
    denied(
        &create(&env, CONFIGMAPS, &configmap("c", json!({}))).await?,
        422,
        "nothing",
    )?;
    expect(&create(&env, POLICIES, &policy("another", json!({}))).await?, 201)?;
    expect(
        &call(
            &env,
            "DELETE",
            &format!("{BINDINGS}/nothing-binding"),
            "application/json",
            &Value::Null,
        )
        .await?,
        200,
    )?;
    expect(&create(&env, CONFIGMAPS, &configmap("c", json!({}))).await?, 201)?;
    Ok(())
}

#[tokio::test]
async fn the_policy_kinds_are_defaulted_and_validated_as_kube_does() -> TestResult {
    let env = env().await?;
    expect(
        &create(&env, POLICIES, &policy("defaults", json!({}))).await?,
        201,
    )?;
    let stored = get(&env, &format!("{POLICIES}/defaults")).await?.body;
    assert_eq!(stored["spec"]["failurePolicy"], "Fail");
    assert_eq!(stored["metadata"]["generation"], 1);
    let constraints = &stored["spec"]["matchConstraints"];
    assert_eq!(constraints["matchPolicy"], "Equivalent");
    assert_eq!(constraints["namespaceSelector"], json!({}));
    assert_eq!(constraints["objectSelector"], json!({}));
    assert_eq!(constraints["resourceRules"][0]["scope"], "*");

    let broken = policy(
        "broken",
        json!({
            "failurePolicy": "Sometimes",
            "validations": [{"expression": "object.data.(", "reason": "Teapot"}],
            "matchConditions": [{"name": "a", "expression": "true"}, {"name": "a", "expression": "true"}]
        }),
    );
    let reply = create(&env, POLICIES, &broken).await?;
    expect(&reply, 422)?;
    let fields: Vec<String> = reply.causes().into_iter().map(|(field, _, _)| field).collect();
    assert_eq!(
        fields,
        [
            "spec.failurePolicy",
            "spec.validations[0].expression",
            "spec.validations[0].reason",
            "spec.matchConditions[1].name"
        ]
    );
    let reply = create(
        &env,
        BINDINGS,
        &binding("x", json!({"policyName": "", "validationActions": []})),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![
            (
                "spec.policyName".into(),
                "FieldValueRequired".into(),
                "Required value".into()
            ),
            (
                "spec.validationActions".into(),
                "FieldValueRequired".into(),
                "Required value: at least one validation action is required".into()
            ),
        ]
    );
    Ok(())
}

#[tokio::test]
async fn an_owner_reference_without_uid_is_refused_as_kube_refuses_it() -> TestResult {
    let env = env().await?;
    let mut owned = configmap("owned", json!({}));
    owned["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner"}]);
    let reply = create(&env, CONFIGMAPS, &owned).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "metadata.ownerReferences.uid".into(),
            "FieldValueInvalid".into(),
            "Invalid value: \"\": must not be empty".into()
        )]
    );
    let apply = format!("{CONFIGMAPS}/owned?fieldManager=test");
    let reply = call(&env, "PATCH", &apply, "application/apply-patch+yaml", &owned).await?;
    denied(
        &reply,
        500,
        ".metadata.ownerReferences: element 0: associative list with keys has an element that omits key field \"uid\" (and doesn't have default value)",
    )?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_lists_policies_and_bindings_with_kube_s_columns() -> TestResult {
    let env = env().await?;
    let params = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}});
    let reference = json!({"paramRef": {"name": "limits", "parameterNotFoundAction": "Allow"}});
    install(&env, policy("listed", params), binding("listed", reference)).await?;
    let selected =
        json!({"paramRef": {"selector": {"matchLabels": {"a": "b"}}, "parameterNotFoundAction": "Deny"}});
    expect(
        &create(&env, BINDINGS, &binding("selected", selected)).await?,
        201,
    )?;
    let kubeconfig = env.kubeconfig_path()?;
    let kubectl = |args: &[&str]| -> Result<String, Box<dyn std::error::Error>> {
        let output = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .output()?;
        if !output.status.success() {
            return Err(String::from_utf8_lossy(&output.stderr).into_owned().into());
        }
        Ok(String::from_utf8(output.stdout)?)
    };
    let policies = kubectl(&["get", "validatingadmissionpolicies"])?;
    let header: Vec<&str> = policies
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"]);
    assert!(
        policies.contains("listed   1             v1/ConfigMap"),
        "{policies}"
    );
    let bindings = kubectl(&["get", "validatingadmissionpolicybindings"])?;
    let header: Vec<&str> = bindings
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    assert!(bindings.contains("*/limits"), "{bindings}");
    assert!(
        bindings.contains("&LabelSelector{MatchLabels:map[string]string{a: b,},MatchExpressions:[]LabelSelectorRequirement{},}"),
        "{bindings}"
    );
    let described = kubectl(&["describe", "validatingadmissionpolicy", "listed"])?;
    assert!(described.contains("Failure Policy:  Fail"), "{described}");
    kubectl(&["delete", "validatingadmissionpolicybinding", "selected-binding"])?;
    Ok(())
}

#[tokio::test]
async fn a_name_condition_picks_the_twin_and_a_false_condition_wins_over_errors() -> TestResult {
    let env = env().await?;
    let spec = json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "DELETE"], "resources": ["secrets"]}]},
        "matchConditions": [
            {"name": "twin", "expression": "object.metadata.name == params.metadata.name"},
            {"name": "flagged", "expression": "'check' in object.metadata.?labels.orValue({})"}
        ],
        "validations": [{"expression": "params.data.allowed == 'yes'", "messageExpression": "'twin ' + params.metadata.name + ' says no'"}]
    });
    let reference = json!({"paramRef": {"selector": {}, "parameterNotFoundAction": "Allow"}});
    install(&env, policy("twins", spec), binding("twins", reference)).await?;
    for i in 0..20 {
        let allowed = if i == 2 { "yes" } else { "no" };
        expect(
            &create(
                &env,
                CONFIGMAPS,
                &configmap(&format!("s{i}"), json!({"allowed": allowed})),
            )
            .await?,
            201,
        )?;
    }
    let secrets = "/api/v1/namespaces/test/secrets";
    let secret = |name: &str, flagged: bool| {
        let labels = if flagged {
            json!({"check": "yes"})
        } else {
            json!({})
        };
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "labels": labels}})
    };
    denied(
        &create(&env, secrets, &secret("s1", true)).await?,
        422,
        "twin s1 says no",
    )?;
    expect(&create(&env, secrets, &secret("s2", true)).await?, 201)?;
    expect(&create(&env, secrets, &secret("lonely", true)).await?, 201)?;
    // The flag is false: skipped, whichever param.
    expect(&create(&env, secrets, &secret("s1", false)).await?, 201)?;
    // On DELETE there is no object: the name condition errors for every param.
    let reply = call(
        &env,
        "DELETE",
        &format!("{secrets}/s1"),
        "application/json",
        &Value::Null,
    )
    .await?;
    expect(&reply, 422)?;
    let message = reply.body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("expression 'object.metadata.name == params.metadata.name' resulted in error"),
        "{message}"
    );
    Ok(())
}
