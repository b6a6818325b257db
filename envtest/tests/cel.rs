//! CEL `x-kubernetes-validations` on the envtest server: each construct, transition rules,
//! `messageExpression`, `fieldPath`, `reason`, `optionalOldSelf`, evaluation errors, rules
//! the engine cannot run (reported, never passed), and the real upstream CRDs' rules,
//! including the `authoritativeAPI` transition rule of `docs/design.md` §6.
#![recursion_limit = "512"]

mod common;

use common::{TestResult, create, expect, merge};
use envtest::TestEnv;
use serde_json::{Value, json};

const RULES: &str = "/apis/cel.example.com/v1/namespaces/test/rules";

fn rules_crd(extra_rule: Option<&str>) -> Value {
    let mut root_rules =
        vec![json!({"rule": "self.metadata.name.startsWith('r')", "message": "name must start with r"})];
    if let Some(rule) = extra_rule {
        root_rules.push(json!({"rule": rule}));
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "rules.cel.example.com"},
        "spec": {
            "group": "cel.example.com", "scope": "Namespaced",
            "names": {"kind": "Rule", "plural": "rules", "singular": "rule", "listKind": "RuleList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-validations": root_rules,
                    "properties": {
                        "spec": {
                            "type": "object",
                            "x-kubernetes-validations": [
                                {"rule": "self.min <= self.max", "message": "min must not exceed max"},
                                {"rule": "!has(self.secret) || has(self.owner)", "messageExpression": "'secret needs an owner, min is ' + string(self.min)"},
                                {"rule": "self.max < 100", "fieldPath": ".max", "reason": "FieldValueForbidden", "message": "too big"},
                                {"rule": "self.min >= 0", "reason": "FieldValueRequired", "message": "min must be set non-negative"},
                                {"rule": "!has(self.x__dash__mode) || self.x__dash__mode in ['a', 'b']", "message": "escaped names"}
                            ],
                            "properties": {
                                "min": {"type": "integer"},
                                "max": {"type": "integer"},
                                "secret": {"type": "string"},
                                "owner": {"type": "string"},
                                "x-mode": {"type": "string"},
                                "immutable": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
                                "growing": {"type": "integer", "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || self >= oldSelf.value()", "optionalOldSelf": true, "message": "may only grow"}]},
                                "names": {
                                    "type": "array", "items": {"type": "string"},
                                    "x-kubernetes-validations": [
                                        {"rule": "self.all(n, n.startsWith('n') && n.endsWith('x'))", "message": "all"},
                                        {"rule": "size(self) == 0 || self.exists(n, n.contains('1'))", "message": "exists"},
                                        {"rule": "self.filter(n, n.contains('1')).size() <= 1 && self.map(n, size(n)).all(l, l == 3)", "message": "filter/map"},
                                        {"rule": "size(self) < 2 || self.exists_one(n, n.startsWith('n2'))", "message": "exists_one"},
                                        {"rule": "self.isSorted()", "message": "sorted"}
                                    ]
                                },
                                "ports": {
                                    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                                    "items": {"type": "object", "properties": {
                                        "name": {"type": "string"},
                                        "port": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "port is immutable"}]}
                                    }}
                                },
                                "labels": {"type": "object", "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "size(self) <= 3"}]}},
                                "deadline": {"type": "string", "format": "date-time", "x-kubernetes-validations": [{"rule": "self > timestamp('2020-01-01T00:00:00Z')", "message": "after 2020"}]},
                                "timeout": {"type": "string", "format": "duration", "x-kubernetes-validations": [{"rule": "self <= duration('1h')", "message": "at most an hour"}]},
                                "missing": {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [{"rule": "self.a == 'x'"}]}
                            }
                        },
                        "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
                    }
                }}
            }]
        }
    })
}

async fn env_with(extra_rule: Option<&str>) -> Result<TestEnv, Box<dyn std::error::Error>> {
    Ok(TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(rules_crd(extra_rule))?)
        .start()
        .await?)
}

fn rule(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "cel.example.com/v1", "kind": "Rule", "metadata": {"name": name}, "spec": spec})
}

fn base() -> Value {
    json!({"min": 1, "max": 5})
}

#[tokio::test]
async fn each_construct_passes_and_fails_as_kube_apiserver() -> TestResult {
    let env = env_with(None).await?;
    let mut ok = base();
    json_patch::merge(
        &mut ok,
        &json!({"names": ["n1x", "n2x"], "labels": {"a": "abc"}, "x-mode": "a", "secret": "s", "owner": "o",
                "deadline": "2024-01-01T00:00:00Z", "timeout": "30m", "immutable": "i", "growing": 3}),
    );
    let reply = create(&env, RULES, &rule("r-ok", ok)).await?;
    expect(&reply, 201)?;
    let cases: Vec<(&str, Value, &str, &str, &str)> = vec![
        (
            "r1",
            json!({"min": 6}),
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"object\": min must not exceed max",
        ),
        (
            "r2",
            json!({"secret": "s"}),
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"object\": secret needs an owner, min is 1",
        ),
        (
            "r3",
            json!({"max": 100, "min": 1}),
            "spec.max",
            "FieldValueForbidden",
            "Forbidden: too big",
        ),
        (
            "r4",
            json!({"min": -1}),
            "spec",
            "FieldValueRequired",
            "Required value: min must be set non-negative",
        ),
        (
            "r5",
            json!({"x-mode": "c"}),
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"object\": escaped names",
        ),
        (
            "r6",
            json!({"names": ["nx1"]}),
            "spec.names",
            "FieldValueInvalid",
            "Invalid value: \"array\": all",
        ),
        (
            "r7",
            json!({"names": ["n2x"]}),
            "spec.names",
            "FieldValueInvalid",
            "Invalid value: \"array\": exists",
        ),
        (
            "r8",
            json!({"names": ["n11x", "n2x"]}),
            "spec.names",
            "FieldValueInvalid",
            "Invalid value: \"array\": filter/map",
        ),
        (
            "r9",
            json!({"names": ["n1x", "n2x", "n2x"]}),
            "spec.names",
            "FieldValueInvalid",
            "Invalid value: \"array\": exists_one",
        ),
        (
            "r10",
            json!({"names": ["n3x", "n2x", "n1x"]}),
            "spec.names",
            "FieldValueInvalid",
            "Invalid value: \"array\": sorted",
        ),
        (
            "r11",
            json!({"labels": {"k": "long!"}}),
            "spec.labels[k]",
            "FieldValueInvalid",
            "Invalid value: \"string\": failed rule: size(self) <= 3",
        ),
        (
            "r12",
            json!({"deadline": "2019-01-01T00:00:00Z"}),
            "spec.deadline",
            "FieldValueInvalid",
            "Invalid value: \"string\": after 2020",
        ),
        (
            "r13",
            json!({"timeout": "2h"}),
            "spec.timeout",
            "FieldValueInvalid",
            "Invalid value: \"string\": at most an hour",
        ),
        (
            "r14",
            json!({"missing": {}}),
            "spec.missing",
            "FieldValueInvalid",
            "Invalid value: \"object\": no such key: a evaluating rule: self.a == 'x'",
        ),
    ];
    for (name, patch, field, reason, message) in cases {
        let mut spec = base();
        json_patch::merge(&mut spec, &patch);
        let reply = create(&env, RULES, &rule(name, spec)).await?;
        expect(&reply, 422)?;
        assert_eq!(
            reply.causes(),
            vec![(field.to_string(), reason.to_string(), message.to_string())],
            "{name}: {patch}"
        );
    }
    // A rule on the resource root: `self.metadata.name`, reported at `<nil>`.
    let reply = create(&env, RULES, &rule("bad-name", base())).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "<nil>".into(),
            "FieldValueInvalid".into(),
            "Invalid value: \"object\": name must start with r".into()
        )]
    );
    assert_eq!(
        reply.body["message"],
        "Rule.cel.example.com \"bad-name\" is invalid: <nil>: Invalid value: \"object\": name must start with r"
    );
    assert!(
        env.skipped_cel_rules().is_empty(),
        "{:?}",
        env.skipped_cel_rules()
    );
    Ok(())
}

#[tokio::test]
async fn transition_rules_run_on_update_only() -> TestResult {
    let env = env_with(None).await?;
    let mut spec = base();
    json_patch::merge(
        &mut spec,
        &json!({"immutable": "a", "growing": 5, "ports": [{"name": "http", "port": 80}]}),
    );
    expect(&create(&env, RULES, &rule("r-t", spec)).await?, 201)?;
    let path = format!("{RULES}/r-t");
    let reply = merge(&env, &path, &json!({"spec": {"immutable": "b"}})).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "spec.immutable".into(),
            "FieldValueInvalid".into(),
            "Invalid value: \"string\": Value is immutable".into()
        )]
    );
    let reply = merge(&env, &path, &json!({"spec": {"growing": 4}})).await?;
    expect(&reply, 422)?;
    assert_eq!(reply.causes()[0].2, "Invalid value: \"integer\": may only grow");
    expect(&merge(&env, &path, &json!({"spec": {"growing": 6}})).await?, 200)?;
    // Map-list items correlate by key: a new port has no oldSelf, a changed one does.
    let reply = merge(
        &env,
        &path,
        &json!({"spec": {"ports": [{"name": "http", "port": 81}]}}),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(reply.causes()[0].0, "spec.ports[0].port");
    expect(
        &merge(
            &env,
            &path,
            &json!({"spec": {"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}}),
        )
        .await?,
        200,
    )?;
    // Removing the field: the transition rule has no new value to check.
    expect(
        &merge(&env, &path, &json!({"spec": {"immutable": null}})).await?,
        200,
    )?;
    Ok(())
}

#[tokio::test]
async fn rules_the_engine_cannot_run_are_reported_not_passed() -> TestResult {
    let env = env_with(Some("self.spec.min.nosuchfunction()")).await?;
    // Loading the CRD did not find it (it parses); the first evaluation does.
    expect(&create(&env, RULES, &rule("r-x", base())).await?, 201)?;
    let skipped = env.skipped_cel_rules();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].rule, "self.spec.min.nosuchfunction()");
    assert_eq!(skipped[0].crd, "rules.cel.example.com");
    Ok(())
}

/// kube's CRD validation compiles every rule: a CRD whose rule does not compile is refused
/// on create and update with 422 on the rule's field path (and a builder given one fails
/// to start), instead of being served with the rule skipped.
#[tokio::test]
async fn crds_whose_rules_do_not_compile_are_refused() -> TestResult {
    const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    const DETAIL: &str = "compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | self.spec.min ==\n | ................^";
    let env = TestEnv::builder().namespace("test").start().await?;
    let reply = create(&env, CRDS, &rules_crd(Some("self.spec.min =="))).await?;
    expect(&reply, 422)?;
    assert_eq!(reply.body["reason"], "Invalid");
    let field = "spec.validation.openAPIV3Schema.x-kubernetes-validations[1].rule";
    let message = format!(
        "Invalid value: apiextensions.ValidationRule{{Rule:\"self.spec.min ==\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: {DETAIL}"
    );
    assert_eq!(
        reply.causes(),
        vec![(
            field.to_string(),
            "FieldValueInvalid".to_string(),
            message.clone()
        )]
    );
    assert_eq!(
        reply.body["message"],
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"rules.cel.example.com\" is invalid: {field}: {message}"
        )
    );
    // Nothing was stored or served.
    expect(
        &common::get(&env, &format!("{CRDS}/rules.cel.example.com")).await?,
        404,
    )?;
    expect(&common::get(&env, RULES).await?, 404)?;

    // An update that breaks a rule is refused the same way; the stored CRD keeps serving.
    expect(&create(&env, CRDS, &rules_crd(None)).await?, 201)?;
    let mut stored = common::get(&env, &format!("{CRDS}/rules.cel.example.com"))
        .await?
        .body;
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"]
        .as_array_mut()
        .ok_or("no root rules")?
        .push(json!({"rule": "self.spec.min =="}));
    let reply = common::put(&env, &format!("{CRDS}/rules.cel.example.com"), &stored).await?;
    expect(&reply, 422)?;
    assert_eq!(reply.causes()[0].0, field);
    assert_eq!(reply.causes()[0].2, message);
    let refused = create(&env, RULES, &rule("bad", base())).await?;
    expect(&refused, 422)?;
    assert!(
        env.skipped_cel_rules().is_empty(),
        "{:?}",
        env.skipped_cel_rules()
    );

    // The builder refuses to start with such a CRD.
    let started = TestEnv::builder()
        .crd_object(serde_json::from_value(rules_crd(Some("self.spec.min ==")))?)
        .start()
        .await;
    match started {
        Ok(_) => return Err("a CRD whose rule does not compile was seeded".into()),
        Err(error) => assert!(error.to_string().contains(DETAIL), "{error}"),
    }
    Ok(())
}

fn upstream() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-crds")
}

fn deploy_crds() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds")
}

async fn authoritative_api_transitions(env: &TestEnv, machines: &str) -> TestResult {
    let body = json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine", "metadata": {"name": "m"}, "spec": {}});
    let created = create(env, machines, &body).await?;
    expect(&created, 201)?;
    let status = format!("{machines}/m/status");
    expect(
        &merge(
            env,
            &status,
            &json!({"status": {"authoritativeAPI": "MachineAPI"}}),
        )
        .await?,
        200,
    )?;
    let reply = merge(
        env,
        &status,
        &json!({"status": {"authoritativeAPI": "ClusterAPI"}}),
    )
    .await?;
    expect(&reply, 422)?;
    let causes = reply.causes();
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0].0, "status.authoritativeAPI");
    assert_eq!(
        causes[0].2,
        "Invalid value: \"string\": The authoritativeAPI field must not transition directly from MachineAPI to ClusterAPI or vice versa. It must transition through Migrating."
    );
    expect(
        &merge(
            env,
            &status,
            &json!({"status": {"authoritativeAPI": "Migrating"}}),
        )
        .await?,
        200,
    )?;
    expect(
        &merge(
            env,
            &status,
            &json!({"status": {"authoritativeAPI": "ClusterAPI"}}),
        )
        .await?,
        200,
    )?;
    let reply = merge(
        env,
        &status,
        &json!({"status": {"authoritativeAPI": "MachineAPI"}}),
    )
    .await?;
    expect(&reply, 422)?;
    Ok(())
}

#[tokio::test]
async fn authoritative_api_transition_rule_on_our_and_upstream_crds() -> TestResult {
    for dir in [deploy_crds(), upstream()] {
        let env = TestEnv::builder()
            .crd_dir(&dir)
            .namespace("openshift-machine-api")
            .start()
            .await?;
        authoritative_api_transitions(
            &env,
            "/apis/machine.openshift.io/v1beta1/namespaces/openshift-machine-api/machines",
        )
        .await?;
        assert!(
            env.skipped_cel_rules().is_empty(),
            "{:?}",
            env.skipped_cel_rules()
        );
    }
    Ok(())
}

/// CEL's `matches` is an unanchored search (as kube-apiserver evaluates it): the rule Cluster
/// API's main branch once had on `status.nodeRef.name` (at 048876a9) lets "Bad_Node" through
/// and refuses a name without a lower-case letter or digit.
#[tokio::test]
async fn matches_is_an_unanchored_search() -> TestResult {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "noderefs.cel.example.com"},
        "spec": {
            "group": "cel.example.com", "scope": "Namespaced",
            "names": {"kind": "NodeRef", "plural": "noderefs", "singular": "noderef", "listKind": "NodeRefList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {"name": {
                    "type": "string",
                    "x-kubernetes-validations": [{
                        "rule": "self.matches('[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                        "message": "name must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character."
                    }]
                }}}}
            }}}]
        }
    });
    let env = TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(crd)?)
        .start()
        .await?;
    let path = "/apis/cel.example.com/v1/namespaces/test/noderefs";
    let node = |name: &str, value: &str| json!({"apiVersion": "cel.example.com/v1", "kind": "NodeRef", "metadata": {"name": name}, "spec": {"name": value}});
    expect(&create(&env, path, &node("a", "Bad_Node")).await?, 201)?;
    let reply = create(&env, path, &node("b", "NODE")).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![("spec.name".into(), "FieldValueInvalid".into(), "Invalid value: \"string\": name must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character.".into())]
    );
    assert!(
        env.skipped_cel_rules().is_empty(),
        "{:?}",
        env.skipped_cel_rules()
    );
    Ok(())
}

#[tokio::test]
async fn upstream_crds_are_served_and_validated() -> TestResult {
    let env = TestEnv::builder()
        .crd_dir(upstream())
        .namespace("ns")
        .start()
        .await?;
    // Machine API: defaults, list-map keys, patterns, the status rules.
    let mapi = "/apis/machine.openshift.io/v1beta1/namespaces/ns";
    let machine = json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine", "metadata": {"name": "m"},
        "spec": {"providerSpec": {"value": {"anything": {"kept": true}}},
                 "lifecycleHooks": {"preDrain": [{"name": "hook", "owner": "me-owner"}]},
                 "taints": [{"key": "k", "effect": "NoSchedule"}]}});
    let reply = create(&env, &format!("{mapi}/machines"), &machine).await?;
    expect(&reply, 201)?;
    assert_eq!(
        reply.body["spec"]["authoritativeAPI"], "MachineAPI",
        "upstream default"
    );
    assert_eq!(
        reply.body["spec"]["providerSpec"]["value"],
        json!({"anything": {"kept": true}})
    );
    let bad = json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine", "metadata": {"name": "b"},
        "spec": {"authoritativeAPI": "Other", "lifecycleHooks": {"preDrain": [{"name": "h", "owner": "me-owner"}, {"name": "hook", "owner": "o"}]}}});
    let reply = create(&env, &format!("{mapi}/machines"), &bad).await?;
    expect(&reply, 422)?;
    let fields: Vec<String> = reply
        .causes()
        .into_iter()
        .map(|c| format!("{}: {}", c.0, c.2))
        .collect();
    assert_eq!(
        fields,
        vec![
            "spec.authoritativeAPI: Unsupported value: \"Other\": supported values: \"MachineAPI\", \"ClusterAPI\"",
            "spec.lifecycleHooks.preDrain[0].name: Invalid value: \"h\": spec.lifecycleHooks.preDrain[0].name in body should be at least 3 chars long",
            "spec.lifecycleHooks.preDrain[1].owner: Invalid value: \"o\": spec.lifecycleHooks.preDrain[1].owner in body should be at least 3 chars long",
            // The CRD has CEL rules and the object has an enum error: kube-apiserver skips them.
            "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ]
    );
    // The synchronizedGeneration rule, with its fieldPath and reason.
    let status = format!("{mapi}/machines/m/status");
    expect(
        &merge(
            &env,
            &status,
            &json!({"status": {"authoritativeAPI": "MachineAPI", "synchronizedGeneration": 5}}),
        )
        .await?,
        200,
    )?;
    let reply = merge(&env, &status, &json!({"status": {"synchronizedGeneration": 4}})).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![("status.synchronizedGeneration".into(), "FieldValueInvalid".into(), "Invalid value: \"object\": synchronizedGeneration must not decrease unless authoritativeAPI is transitioning from Migrating to another value".into())]
    );

    // MachineSet: scale subresource, replicas default, the status rules (one of which reads a
    // missing key: an evaluation error, as kube-apiserver reports it).
    let set = json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "metadata": {"name": "s"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {}}}});
    let reply = create(&env, &format!("{mapi}/machinesets"), &set).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["spec"]["replicas"], 1);
    assert_eq!(
        reply.body["spec"]["template"]["spec"]["authoritativeAPI"],
        "MachineAPI"
    );
    let status = format!("{mapi}/machinesets/s/status");
    expect(
        &merge(&env, &status, &json!({"status": {"replicas": 0}})).await?,
        200,
    )?;
    let reply = merge(&env, &status, &json!({"status": {"replicas": 1}})).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![("status".into(), "FieldValueInvalid".into(), "Invalid value: \"object\": no such key: authoritativeAPI evaluating rule: authoritativeAPI cannot be unset once it has been set".into())]
    );
    expect(
        &merge(
            &env,
            &status,
            &json!({"status": {"replicas": 1, "authoritativeAPI": "MachineAPI"}}),
        )
        .await?,
        200,
    )?;

    // Cluster API Machine: v1beta2 stored, v1beta1 served; required fields, the taint key rule.
    let capi = "/apis/cluster.x-k8s.io";
    let m = json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "metadata": {"name": "c"},
        "spec": {"clusterName": "cluster", "bootstrap": {"dataSecretName": "s"},
                 "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine", "name": "c"}}});
    expect(
        &create(&env, &format!("{capi}/v1beta1/namespaces/ns/machines"), &m).await?,
        201,
    )?;
    let v2 = common::get(&env, &format!("{capi}/v1beta2/namespaces/ns/machines/c")).await?;
    assert_eq!(v2.body["apiVersion"], "cluster.x-k8s.io/v1beta2");
    let missing = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "d"}, "spec": {"clusterName": ""}});
    let reply = create(&env, &format!("{capi}/v1beta2/namespaces/ns/machines"), &missing).await?;
    expect(&reply, 422)?;
    let fields: Vec<String> = reply.causes().into_iter().map(|c| c.0).collect();
    // kube-openapi's objectValidator checks an object's properties before its `required`.
    assert_eq!(
        fields,
        vec![
            "spec.clusterName",
            "spec.bootstrap",
            "spec.infrastructureRef",
            "<nil>"
        ]
    );
    // Cluster API's one CEL rule (v1beta2 taint keys, with the strings library's `split`): a
    // key whose name part is longer than 63 characters passes the pattern and fails the rule.
    let long = "n".repeat(64);
    let tainted = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "t"},
        "spec": {"clusterName": "cluster", "bootstrap": {"dataSecretName": "s"},
                 "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": "t"},
                 "taints": [{"key": format!("example.com/{long}"), "effect": "NoSchedule", "propagation": "Always"},
                            {"key": "example.com/ok", "effect": "NoSchedule", "propagation": "Always"}]}});
    let reply = create(&env, &format!("{capi}/v1beta2/namespaces/ns/machines"), &tainted).await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![(
            "spec.taints[0].key".into(),
            "FieldValueInvalid".into(),
            "Invalid value: \"string\": key must be a valid qualified name of max size 63 characters with an optional subdomain prefix of max size 253 characters".to_string()
        )]
    );
    let status = format!("{capi}/v1beta2/namespaces/ns/machines/c/status");
    // The released v1beta2 checks a node name with a pattern (anchored, unlike CEL `matches`).
    // A `/status` write validates `status` against the status schema as its own root
    // (customResourceValidator.ValidateStatusUpdate): the message names `nodeRef.name`.
    let reply = merge(
        &env,
        &status,
        &json!({"status": {"nodeRef": {"name": "Bad_Node"}}}),
    )
    .await?;
    expect(&reply, 422)?;
    assert_eq!(
        reply.causes(),
        vec![("status.nodeRef.name".into(), "FieldValueInvalid".into(), "Invalid value: \"Bad_Node\": nodeRef.name in body should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'".into())]
    );
    expect(
        &merge(
            &env,
            &status,
            &json!({"status": {"nodeRef": {"name": "node-1"}, "phase": "Running"}}),
        )
        .await?,
        200,
    )?;

    assert!(
        env.skipped_cel_rules().is_empty(),
        "{:?}",
        env.skipped_cel_rules()
    );
    Ok(())
}

/// Two rules failing with the same message at the same field: `causes[]` has both, while the
/// Status message is apimachinery's `ErrorList.ToAggregate()`, which lists each distinct
/// `field: message` once (a single one without brackets).
#[tokio::test]
async fn identical_causes_are_listed_once_in_the_message() -> TestResult {
    let shared = "name must be a short lowercase word";
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "words.cel.example.com"},
        "spec": {
            "group": "cel.example.com", "scope": "Namespaced",
            "names": {"kind": "Word", "plural": "words", "singular": "word", "listKind": "WordList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {
                        "type": "object",
                        "x-kubernetes-validations": [
                            {"rule": "self.name.size() <= 5", "fieldPath": ".name", "message": shared},
                            {"rule": "self.name.lowerAscii() == self.name", "fieldPath": ".name", "message": shared},
                            {"rule": "self.count >= 0", "fieldPath": ".count", "message": "count must not be negative"}
                        ],
                        "properties": {"name": {"type": "string"}, "count": {"type": "integer"}}
                    }
                }}}
            }]
        }
    });
    let env = TestEnv::builder()
        .namespace("test")
        .crd_object(serde_json::from_value(crd)?)
        .start()
        .await?;
    let words = "/apis/cel.example.com/v1/namespaces/test/words";
    let word = |name: &str, spec: Value| json!({"apiVersion": "cel.example.com/v1", "kind": "Word", "metadata": {"name": name}, "spec": spec});
    let line = format!("spec.name: Invalid value: \"object\": {shared}");
    let twice = (
        "spec.name".to_string(),
        "FieldValueInvalid".to_string(),
        format!("Invalid value: \"object\": {shared}"),
    );

    let reply = create(&env, words, &word("a", json!({"name": "LongName", "count": 1}))).await?;
    expect(&reply, 422)?;
    assert_eq!(reply.causes(), vec![twice.clone(), twice.clone()]);
    assert_eq!(
        reply.body["message"],
        format!("Word.cel.example.com \"a\" is invalid: {line}")
    );

    let reply = create(&env, words, &word("b", json!({"name": "LongName", "count": -1}))).await?;
    expect(&reply, 422)?;
    let count = (
        "spec.count".to_string(),
        "FieldValueInvalid".to_string(),
        "Invalid value: \"object\": count must not be negative".to_string(),
    );
    assert_eq!(reply.causes(), vec![twice.clone(), twice, count]);
    assert_eq!(
        reply.body["message"],
        format!(
            "Word.cel.example.com \"b\" is invalid: [{line}, spec.count: Invalid value: \"object\": count must not be negative]"
        )
    );
    Ok(())
}
