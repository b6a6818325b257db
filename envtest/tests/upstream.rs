//! The real upstream CRDs of `tests/fixtures/upstream-crds` on the envtest server.
//!
//! The Machine API's Machines and MachineSets, Cluster API's Machine and MachineSet (v1beta1
//! and v1beta2) and the AWS provider's AWSMachine and AWSMachineTemplate (provenance in the
//! fixtures' README.md) are accepted and served, a realistic object of each kind is admitted
//! (and defaulted), violations of each CRD's own constraints are rejected with
//! kube-apiserver's 422 causes, and every CEL rule they contain is evaluated, none skipped.

mod common;

use common::{Reply, TestResult, create, expect, get, merge, put};
use envtest::TestEnv;
use serde_json::{Value, json};

const NS: &str = "capi";
const CAPI_V1: &str = "/apis/cluster.x-k8s.io/v1beta1/namespaces/capi";
const CAPI_V2: &str = "/apis/cluster.x-k8s.io/v1beta2/namespaces/capi";
const AWS: &str = "/apis/infrastructure.cluster.x-k8s.io/v1beta2/namespaces/capi";
const MAPI: &str = "/apis/machine.openshift.io/v1beta1/namespaces/capi";

/// kube-apiserver's cause when a type, enum, required, maxLength or maxItems violation keeps
/// the CEL rules from running.
const BLOCKED: &str = "<nil>: Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// The taint key rule of Cluster API v1beta2 (Machine, MachineSet template).
const TAINT_KEY_MESSAGE: &str = "key must be a valid qualified name of max size 63 characters with an optional subdomain prefix of max size 253 characters";

/// Every `x-kubernetes-validations` rule of the fixtures, and the test here that makes it
/// pass and (where the schema lets a value reach it) fail.
const RULES: &[(&str, &str)] = &[
    (
        "self.contains('/') ? ( self.split('/') [0].size() <= 253 && self.split('/') [1].size() <= 63 && self.split('/').size() == 2 ) : self.size() <= 63",
        "capi_machine_v1beta2 / capi_machine_set_in_both_versions",
    ),
    (
        "!has(self.capacityReservationId) || !has(self.marketType) || self.marketType != 'Spot'",
        "aws_machine / aws_machine_template",
    ),
    (
        "!has(self.capacityReservationId) || !has(self.spotMarketOptions)",
        "aws_machine / aws_machine_template",
    ),
    (
        "self in ['none','amazon-pool']",
        "aws_machine / aws_machine_template",
    ),
    (
        "self == 'Migrating' || self == oldSelf || oldSelf == 'Migrating'",
        "machine_api_rules",
    ),
    (
        "!has(oldSelf.synchronizedGeneration) || (has(self.synchronizedGeneration) && self.synchronizedGeneration >= oldSelf.synchronizedGeneration) || (oldSelf.authoritativeAPI == 'Migrating' && self.authoritativeAPI != 'Migrating')",
        "machine_api_rules",
    ),
    (
        "self.authoritativeAPI != '' || oldSelf.authoritativeAPI == ''",
        "machine_api_rules",
    ),
];

fn upstream() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-crds")
}

async fn start() -> Result<TestEnv, Box<dyn std::error::Error>> {
    // The samples carry owner references to objects this suite never creates (it is about
    // the schemas): without the collector they stay, as they would be deleted otherwise.
    let env = TestEnv::builder()
        .crd_dir(upstream())
        .namespace(NS)
        .garbage_collection(false)
        .start()
        .await?;
    assert!(
        env.skipped_cel_rules().is_empty(),
        "{:?}",
        env.skipped_cel_rules()
    );
    Ok(env)
}

/// `field: message` of each cause.
fn causes(reply: &Reply) -> Vec<String> {
    reply
        .causes()
        .into_iter()
        .map(|(field, _, message)| format!("{field}: {message}"))
        .collect()
}

/// Asserts a 422 Invalid whose causes are exactly `expected`.
fn invalid(reply: &Reply, expected: &[&str], case: &str) -> TestResult {
    expect(reply, 422)?;
    assert_eq!(reply.body["reason"], "Invalid", "{case}");
    assert_eq!(causes(reply), expected, "{case}");
    Ok(())
}

fn no_skipped_rules(env: &TestEnv) {
    assert!(
        env.skipped_cel_rules().is_empty(),
        "{:?}",
        env.skipped_cel_rules()
    );
}

fn with_spec(api_version: &str, kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": spec})
}

fn pattern(field: &str, value: &str, regex: &str) -> String {
    format!("{field}: Invalid value: \"{value}\": {field} in body should match '{regex}'")
}

/// [`pattern`] on a `/status` write: kube-apiserver validates `status` against the status
/// schema as its own root (`customResourceValidator.ValidateStatusUpdate`), so the message
/// names the field relative to `status` (`field` is given without `status.`).
fn status_pattern(field: &str, value: &str, regex: &str) -> String {
    format!("status.{field}: Invalid value: \"{value}\": {field} in body should match '{regex}'")
}

const DNS_SUBDOMAIN: &str = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";
const CONDITION_TYPE: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";
const TAINT_KEY: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$";

#[test]
fn the_suite_exercises_every_rule_of_the_fixtures() -> TestResult {
    let crds = envtest::harness::read_crd_dir(&upstream())?;
    let mut names: Vec<&str> = crds
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "awsmachines.infrastructure.cluster.x-k8s.io",
            "awsmachinetemplates.infrastructure.cluster.x-k8s.io",
            "machines.cluster.x-k8s.io",
            "machines.machine.openshift.io",
            "machinesets.cluster.x-k8s.io",
            "machinesets.machine.openshift.io",
        ]
    );
    fn collect(node: &Value, out: &mut Vec<String>) {
        match node {
            Value::Object(map) => {
                for rule in map
                    .get("x-kubernetes-validations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.extend(rule["rule"].as_str().map(String::from));
                }
                map.values().for_each(|v| collect(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| collect(v, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    for crd in &crds {
        for version in crd["spec"]["versions"].as_array().into_iter().flatten() {
            assert_eq!(version["served"], true, "only served versions are kept");
            collect(&version["schema"], &mut found);
        }
    }
    found.sort();
    found.dedup();
    let mut known: Vec<String> = RULES.iter().map(|(r, _)| r.to_string()).collect();
    known.sort();
    assert_eq!(
        found, known,
        "a fixture rule is not exercised here (or a listed rule is gone)"
    );
    Ok(())
}

#[tokio::test]
async fn every_upstream_crd_is_accepted_and_served() -> TestResult {
    let env = start().await?;
    let group = get(&env, "/apis/cluster.x-k8s.io").await?;
    expect(&group, 200)?;
    assert_eq!(
        group.body["versions"],
        json!([
            {"groupVersion": "cluster.x-k8s.io/v1beta2", "version": "v1beta2"},
            {"groupVersion": "cluster.x-k8s.io/v1beta1", "version": "v1beta1"}
        ])
    );
    assert_eq!(group.body["preferredVersion"]["version"], "v1beta2");
    let names = |reply: &Reply| -> Vec<String> {
        reply.body["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str().map(String::from))
            .collect()
    };
    for version in ["v1beta1", "v1beta2"] {
        let list = get(&env, &format!("/apis/cluster.x-k8s.io/{version}")).await?;
        expect(&list, 200)?;
        assert_eq!(
            names(&list),
            [
                "machines",
                "machines/status",
                "machinesets",
                "machinesets/status",
                "machinesets/scale"
            ]
        );
        let resources = list.body["resources"].as_array().cloned().unwrap_or_default();
        assert_eq!(resources[0]["shortNames"], json!(["ma"]));
        assert_eq!(resources[0]["categories"], json!(["cluster-api"]));
        assert_eq!(resources[2]["shortNames"], json!(["ms"]));
        assert_eq!(resources[4]["kind"], "Scale");
    }
    // The provider serves v1beta2 only (its v1beta1 is `served: false` upstream).
    let infra = get(&env, "/apis/infrastructure.cluster.x-k8s.io").await?;
    assert_eq!(
        infra.body["versions"],
        json!([{"groupVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "version": "v1beta2"}])
    );
    let list = get(&env, "/apis/infrastructure.cluster.x-k8s.io/v1beta2").await?;
    assert_eq!(
        names(&list),
        [
            "awsmachines",
            "awsmachines/status",
            "awsmachinetemplates",
            "awsmachinetemplates/status"
        ]
    );
    assert_eq!(list.body["resources"][0]["shortNames"], json!(["awsm"]));
    assert_eq!(list.body["resources"][2]["shortNames"], json!(["awsmt"]));
    expect(
        &get(&env, "/apis/infrastructure.cluster.x-k8s.io/v1beta1").await?,
        404,
    )?;
    expect(
        &get(&env, &format!("{AWS}/awsmachines").replace("v1beta2", "v1beta1")).await?,
        404,
    )?;
    let mapi = get(&env, "/apis/machine.openshift.io/v1beta1").await?;
    assert_eq!(
        names(&mapi),
        [
            "machines",
            "machines/status",
            "machinesets",
            "machinesets/status",
            "machinesets/scale"
        ]
    );
    no_skipped_rules(&env);
    Ok(())
}

fn capi_machine(name: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": "sample", "cluster.x-k8s.io/set-name": "workers"}},
        "spec": {
            "clusterName": "sample",
            "version": "v1.31.2",
            "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfig", "name": name}},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": name},
            "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
            "failureDomain": "us-east-1a",
            "minReadySeconds": 30,
            "deletion": {"nodeDrainTimeoutSeconds": 600, "nodeVolumeDetachTimeoutSeconds": 300, "nodeDeletionTimeoutSeconds": 10},
            "readinessGates": [{"conditionType": "example.com/NetworkReady"}, {"conditionType": "Degraded", "polarity": "Negative"}],
            "taints": [
                {"key": "node-role.kubernetes.io/worker", "effect": "NoSchedule", "propagation": "Always"},
                {"key": "example.com/gpu", "value": "a100", "effect": "NoExecute", "propagation": "OnInitialization"}
            ]
        }
    })
}

fn capi_machine_spec(extra: Value) -> Value {
    let mut spec = json!({
        "clusterName": "sample",
        "bootstrap": {"dataSecretName": "bootstrap"},
        "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": "m"}
    });
    json_patch::merge(&mut spec, &extra);
    spec
}

fn taint(key: &str) -> Value {
    json!({"key": key, "effect": "NoSchedule", "propagation": "Always"})
}

#[tokio::test]
async fn capi_machine_v1beta2() -> TestResult {
    let env = start().await?;
    let machines = format!("{CAPI_V2}/machines");
    let machine = capi_machine("worker-a-x7k2p");
    let reply = create(&env, &machines, &machine).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["spec"], machine["spec"], "no defaults in this schema");

    // Served in v1beta1 too: the same object with its apiVersion rewritten.
    let v1 = get(&env, &format!("{CAPI_V1}/machines/worker-a-x7k2p")).await?;
    expect(&v1, 200)?;
    assert_eq!(v1.body["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(v1.body["kind"], "Machine");
    for field in [
        "clusterName",
        "version",
        "providerID",
        "failureDomain",
        "readinessGates",
    ] {
        assert_eq!(v1.body["spec"][field], machine["spec"][field], "{field}");
    }
    let list = get(&env, &format!("{CAPI_V1}/machines")).await?;
    assert_eq!(list.body["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(list.body["kind"], "MachineList");
    assert_eq!(list.body["items"][0]["apiVersion"], "cluster.x-k8s.io/v1beta1");

    // v1beta1's fields in a v1beta2 Machine are unknown: pruned with a warning by default,
    // refused under fieldValidation=Strict.
    let mut mixed = capi_machine("mixed");
    mixed["spec"]["nodeDrainTimeout"] = json!("5m0s");
    mixed["spec"]["infrastructureRef"]["apiVersion"] = json!("infrastructure.cluster.x-k8s.io/v1beta2");
    let strict = create(&env, &format!("{machines}?fieldValidation=Strict"), &mixed).await?;
    expect(&strict, 400)?;
    assert_eq!(
        strict.body["message"],
        "Machine in version \"v1beta2\" cannot be handled as a Machine: strict decoding error: unknown field \"spec.infrastructureRef.apiVersion\", unknown field \"spec.nodeDrainTimeout\""
    );
    let warned = create(&env, &machines, &mixed).await?;
    expect(&warned, 201)?;
    assert_eq!(
        warned.warnings,
        [
            "299 - \"unknown field \\\"spec.infrastructureRef.apiVersion\\\"\"",
            "299 - \"unknown field \\\"spec.nodeDrainTimeout\\\"\""
        ]
    );
    assert_eq!(warned.body["spec"], capi_machine("mixed")["spec"]);

    // A realistic status through the status subresource.
    let status = format!("{machines}/worker-a-x7k2p/status");
    let reply = merge(&env, &status, &json!({"status": {
        "observedGeneration": 1, "phase": "Running",
        "initialization": {"bootstrapDataSecretCreated": true, "infrastructureProvisioned": true},
        "nodeRef": {"name": "ip-10-0-1-23.ec2.internal"},
        "addresses": [{"type": "InternalIP", "address": "10.0.1.23"}, {"type": "InternalDNS", "address": "ip-10-0-1-23.ec2.internal"}],
        "certificatesExpiryDate": "2026-06-01T10:00:00Z",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2025-06-01T10:00:00Z", "observedGeneration": 1}],
        "nodeInfo": {"architecture": "amd64", "bootID": "b", "containerRuntimeVersion": "containerd://1.7.22", "kernelVersion": "6.1.0",
                     "kubeProxyVersion": "", "kubeletVersion": "v1.31.2", "machineID": "m", "operatingSystem": "linux",
                     "osImage": "Amazon Linux 2023", "systemUUID": "ec2e0000-0000-0000-0000-000000000000"},
        "deprecated": {"v1beta1": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-06-01T10:00:00Z"}]}}
    }})).await?;
    expect(&reply, 200)?;
    assert_eq!(reply.body["status"]["phase"], "Running");

    // v1beta2 requires `spec`; v1beta1 does not.
    let reply = create(&env, &machines, &json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "no-spec"}})).await?;
    invalid(&reply, &["spec: Required value", BLOCKED], "no spec")?;
    let reply = create(&env, &format!("{CAPI_V1}/machines"), &json!({"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine", "metadata": {"name": "no-spec"}})).await?;
    expect(&reply, 201)?;

    let long = "a".repeat(64);
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "required fields",
            json!({}),
            vec![
                "spec.bootstrap: Required value".into(),
                "spec.clusterName: Required value".into(),
                "spec.infrastructureRef: Required value".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "v1beta1's ObjectReference is not a v1beta2 contract reference",
            capi_machine_spec(json!({"infrastructureRef": {"apiGroup": null, "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2"}})),
            vec!["spec.infrastructureRef.apiGroup: Required value".into(), BLOCKED.into()],
        ),
        (
            "reference patterns",
            capi_machine_spec(json!({
                "bootstrap": {"configRef": {"kind": "KubeadmConfig", "name": "m"}},
                "infrastructureRef": {"apiGroup": "Infra_", "kind": "AWS Machine", "name": "Worker_A"}
            })),
            vec![
                "spec.bootstrap.configRef.apiGroup: Required value".into(),
                pattern("spec.infrastructureRef.apiGroup", "Infra_", DNS_SUBDOMAIN),
                pattern("spec.infrastructureRef.kind", "AWS Machine", "^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"),
                pattern("spec.infrastructureRef.name", "Worker_A", DNS_SUBDOMAIN),
                BLOCKED.into(),
            ],
        ),
        (
            "lengths, bounds, minItems, minProperties",
            capi_machine_spec(json!({
                "clusterName": long, "providerID": "", "version": "",
                "deletion": {}, "minReadySeconds": -1, "readinessGates": []
            })),
            vec![
                "spec.clusterName: Too long: may not be more than 63 bytes".into(),
                "spec.deletion: Invalid value: 0: spec.deletion in body should have at least 1 properties".into(),
                "spec.minReadySeconds: Invalid value: -1: spec.minReadySeconds in body should be greater than or equal to 0".into(),
                "spec.providerID: Invalid value: \"\": spec.providerID in body should be at least 1 chars long".into(),
                "spec.readinessGates: Invalid value: 0: spec.readinessGates in body should have at least 1 items".into(),
                "spec.version: Invalid value: \"\": spec.version in body should be at least 1 chars long".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "int32 bounds",
            capi_machine_spec(json!({"deletion": {"nodeDrainTimeoutSeconds": -5}})),
            vec!["spec.deletion.nodeDrainTimeoutSeconds: Invalid value: -5: spec.deletion.nodeDrainTimeoutSeconds in body should be greater than or equal to 0".into()],
        ),
        (
            "readiness gates: pattern, enum, list-map key",
            capi_machine_spec(json!({"readinessGates": [
                {"conditionType": "not a condition"},
                {"conditionType": "Ready", "polarity": "Sideways"},
                {"conditionType": "Ready"}
            ]})),
            vec![
                pattern("spec.readinessGates[0].conditionType", "not a condition", CONDITION_TYPE),
                "spec.readinessGates[1].polarity: Unsupported value: \"Sideways\": supported values: \"Positive\", \"Negative\"".into(),
                "spec.readinessGates[2]: Duplicate value: map[string]interface {}{\"conditionType\":\"Ready\"}".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "taints: enum, required, value pattern, two-key list map",
            capi_machine_spec(json!({"taints": [
                {"key": "k", "value": "not valid!", "effect": "Sometimes"},
                {"key": "k", "effect": "NoSchedule", "propagation": "Always"},
                {"key": "k", "effect": "NoSchedule", "propagation": "OnInitialization"}
            ]})),
            // An object's properties before its `required` (kube-openapi's objectValidator),
            // list-map duplicates after every schema cause (the strategy's second pass).
            vec![
                "spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into(),
                pattern("spec.taints[0].value", "not valid!", "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"),
                "spec.taints[0].propagation: Required value".into(),
                "spec.taints[2]: Duplicate value: map[string]interface {}{\"effect\":\"NoSchedule\", \"key\":\"k\"}".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "taints: maxItems",
            capi_machine_spec(json!({"taints": (0..65).map(|i| taint(&format!("k{i}"))).collect::<Vec<_>>()})),
            vec!["spec.taints: Too many: 65: must have at most 64 items".into(), BLOCKED.into()],
        ),
        (
            "taints: the key rule (CEL split) where the pattern lets the key through",
            capi_machine_spec(json!({"taints": [
                taint(&format!("example.com/{long}")),
                taint(&long),
                taint("a/b/c"),
                taint(&format!("{}.x/y", "a".repeat(252)))
            ]})),
            vec![
                pattern("spec.taints[2].key", "a/b/c", TAINT_KEY),
                format!("spec.taints[0].key: Invalid value: \"string\": {TAINT_KEY_MESSAGE}"),
                format!("spec.taints[1].key: Invalid value: \"string\": {TAINT_KEY_MESSAGE}"),
                format!("spec.taints[2].key: Invalid value: \"string\": {TAINT_KEY_MESSAGE}"),
                format!("spec.taints[3].key: Invalid value: \"string\": {TAINT_KEY_MESSAGE}"),
            ],
        ),
    ];
    for (i, (case, spec, expected)) in cases.into_iter().enumerate() {
        let body = with_spec("cluster.x-k8s.io/v1beta2", "Machine", &format!("bad-{i}"), spec);
        let reply = create(&env, &machines, &body).await?;
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        invalid(&reply, &expected, case)?;
    }
    // Reasons as kube-apiserver sets them.
    let reply = create(&env, &machines, &with_spec("cluster.x-k8s.io/v1beta2", "Machine", "reasons",
        capi_machine_spec(json!({"clusterName": long, "taints": [{"key": "k", "effect": "Sometimes"}, taint("k"), taint("k")]})))).await?;
    let reasons: Vec<String> = reply.causes().into_iter().map(|c| c.1).collect();
    assert_eq!(
        reasons,
        [
            "FieldValueTooLong",
            "FieldValueNotSupported",
            "FieldValueRequired",
            "FieldValueDuplicate",
            "FieldValueInvalid"
        ]
    );
    // The key rule's boundaries pass: a 253-character prefix with a 63-character name (the
    // 317-character maxLength), and a 63-character key without a prefix.
    let prefix = ["a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61)].join(".");
    let ok = capi_machine_spec(json!({"taints": [
        taint(&format!("{prefix}/{}", "n".repeat(63))),
        taint(&"k".repeat(63))
    ]}));
    expect(
        &create(
            &env,
            &machines,
            &with_spec("cluster.x-k8s.io/v1beta2", "Machine", "boundaries", ok),
        )
        .await?,
        201,
    )?;

    // Status: the v1beta2 status schema's constraints, named relative to `status` in the
    // messages (a `/status` write validates `status` against its own schema).
    let status_cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "phase enum, bounds, node name pattern, minProperties",
            json!({"phase": "Exploded", "observedGeneration": 0, "nodeRef": {"name": "Bad_Node"}, "initialization": {"bootstrapDataSecretCreated": null, "infrastructureProvisioned": null}}),
            vec![
                "status.initialization: Invalid value: 0: initialization in body should have at least 1 properties".into(),
                status_pattern("nodeRef.name", "Bad_Node", DNS_SUBDOMAIN),
                "status.observedGeneration: Invalid value: 0: observedGeneration in body should be greater than or equal to 1".into(),
                "status.phase: Unsupported value: \"Exploded\": supported values: \"Pending\", \"Provisioning\", \"Provisioned\", \"Running\", \"Updating\", \"Deleting\", \"Deleted\", \"Failed\", \"Unknown\"".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "metav1.Condition",
            json!({"conditions": [{"type": "Ready", "status": "Maybe", "reason": "not camel", "lastTransitionTime": "yesterday"}]}),
            vec![
                "status.conditions[0].lastTransitionTime: Invalid value: \"yesterday\": conditions[0].lastTransitionTime in body must be of type date-time: \"yesterday\"".into(),
                status_pattern("conditions[0].reason", "not camel", "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"),
                "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"True\", \"False\", \"Unknown\"".into(),
                "status.conditions[0].message: Required value".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "addresses",
            json!({"addresses": (0..33).map(|i| json!({"type": if i == 0 { "PublicIP" } else { "InternalIP" }, "address": format!("10.0.0.{i}")})).collect::<Vec<_>>()}),
            vec![
                "status.addresses[0].type: Unsupported value: \"PublicIP\": supported values: \"Hostname\", \"ExternalIP\", \"InternalIP\", \"ExternalDNS\", \"InternalDNS\"".into(),
                "status.addresses: Too many: 33: must have at most 32 items".into(),
                BLOCKED.into(),
            ],
        ),
    ];
    for (case, patch, expected) in status_cases {
        let reply = merge(&env, &status, &json!({"status": patch})).await?;
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        invalid(&reply, &expected, case)?;
    }
    no_skipped_rules(&env);
    Ok(())
}

fn capi_machine_set(name: &str) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
        "metadata": {"name": name, "labels": {"cluster.x-k8s.io/cluster-name": "sample"}},
        "spec": {
            "clusterName": "sample",
            "replicas": 2,
            "selector": {"matchLabels": {"cluster.x-k8s.io/cluster-name": "sample", "pool": name}},
            "deletion": {"order": "Oldest"},
            "machineNaming": {"template": "{{ .machineSet.name }}-{{ .random }}"},
            "template": {
                "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "sample", "pool": name}},
                "spec": {
                    "clusterName": "sample",
                    "version": "v1.31.2",
                    "bootstrap": {"configRef": {"apiGroup": "bootstrap.cluster.x-k8s.io", "kind": "KubeadmConfigTemplate", "name": name}},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachineTemplate", "name": name},
                    "failureDomain": "us-east-1a",
                    "deletion": {"nodeDrainTimeoutSeconds": 600},
                    "taints": [{"key": "example.com/pool", "value": name, "effect": "NoSchedule", "propagation": "Always"}]
                }
            }
        }
    })
}

#[tokio::test]
async fn capi_machine_set_in_both_versions() -> TestResult {
    let env = start().await?;
    let sets = format!("{CAPI_V2}/machinesets");
    let set = capi_machine_set("workers");
    let reply = create(&env, &sets, &set).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["spec"], set["spec"]);
    let v1 = get(&env, &format!("{CAPI_V1}/machinesets/workers")).await?;
    assert_eq!(v1.body["apiVersion"], "cluster.x-k8s.io/v1beta1");
    for field in ["clusterName", "replicas", "selector"] {
        assert_eq!(v1.body["spec"][field], set["spec"][field], "{field}");
    }
    assert_eq!(
        v1.body["spec"]["template"]["metadata"],
        set["spec"]["template"]["metadata"]
    );

    // Written through v1beta1 in its own shape (ObjectReference, duration strings), stored in
    // v1beta2, read through both.
    let legacy = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet", "metadata": {"name": "legacy"},
        "spec": {
            "clusterName": "sample", "replicas": 1, "deletePolicy": "Newest", "minReadySeconds": 0,
            "selector": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["legacy"]}]},
            "template": {
                "metadata": {"labels": {"pool": "legacy"}},
                "spec": {
                    "clusterName": "sample",
                    "bootstrap": {"dataSecretName": "legacy-bootstrap"},
                    "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachineTemplate", "name": "legacy", "namespace": NS},
                    "nodeDrainTimeout": "5m0s",
                    "readinessGates": [{"conditionType": "example.com/NetworkReady"}]
                }
            }
        }
    });
    let reply = create(&env, &format!("{CAPI_V1}/machinesets"), &legacy).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["apiVersion"], "cluster.x-k8s.io/v1beta1");
    let v2 = get(&env, &format!("{sets}/legacy")).await?;
    assert_eq!(v2.body["apiVersion"], "cluster.x-k8s.io/v1beta2");
    assert_eq!(v2.body["spec"]["selector"], legacy["spec"]["selector"]);
    let list = get(&env, &sets).await?;
    let items: Vec<(&str, &str)> = list.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap_or_default(),
                i["apiVersion"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            ("legacy", "cluster.x-k8s.io/v1beta2"),
            ("workers", "cluster.x-k8s.io/v1beta2")
        ]
    );

    // The scale subresource, in both versions.
    for version in [CAPI_V1, CAPI_V2] {
        let scale = get(&env, &format!("{version}/machinesets/workers/scale")).await?;
        expect(&scale, 200)?;
        assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
        assert_eq!(scale.body["kind"], "Scale");
        assert_eq!(scale.body["spec"]["replicas"], 2);
    }
    let scaled = merge(
        &env,
        &format!("{CAPI_V1}/machinesets/workers/scale"),
        &json!({"spec": {"replicas": 3}}),
    )
    .await?;
    expect(&scaled, 200)?;
    assert_eq!(
        get(&env, &format!("{sets}/workers")).await?.body["spec"]["replicas"],
        3
    );
    let status = format!("{sets}/workers/status");
    let reply = merge(&env, &status, &json!({"status": {
        "replicas": 3, "readyReplicas": 3, "availableReplicas": 3, "upToDateReplicas": 3, "observedGeneration": 2,
        "selector": "cluster.x-k8s.io/cluster-name=sample,pool=workers",
        "conditions": [{"type": "MachinesReady", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2025-06-01T10:00:00Z"}]
    }})).await?;
    expect(&reply, 200)?;
    let scale = get(&env, &format!("{sets}/workers/scale")).await?;
    assert_eq!(scale.body["status"]["replicas"], 3);
    assert_eq!(
        scale.body["status"]["selector"],
        "cluster.x-k8s.io/cluster-name=sample,pool=workers"
    );
    let reply = merge(&env, &status, &json!({"status": {"selector": "", "observedGeneration": 0, "conditions": [
        {"type": "MachinesReady", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2025-06-01T10:00:00Z"},
        {"type": "MachinesReady", "status": "False", "reason": "NotReady", "message": "", "lastTransitionTime": "2025-06-01T10:00:00Z"}
    ]}})).await?;
    // statusStrategy.ValidateUpdate: the status schema's causes (status validated against its
    // own schema, so messages name `selector`, not `status.selector`), then the list-map
    // duplicates (structurallisttype, only when the old object had none). Sibling properties
    // come in kube-openapi's map order, which Go randomizes; this is one of its orders.
    let expected = [
        "status.observedGeneration: Invalid value: 0: observedGeneration in body should be greater than or equal to 1",
        "status.selector: Invalid value: \"\": selector in body should be at least 1 chars long",
        "status.conditions[1]: Duplicate value: map[string]interface {}{\"type\":\"MachinesReady\"}",
    ];
    invalid(&reply, &expected, "status")?;
    assert_eq!(
        reply.body["message"],
        format!(
            "MachineSet.cluster.x-k8s.io \"workers\" is invalid: [{}]",
            expected.join(", ")
        )
    );

    let long = "a".repeat(64);
    let mut with_taint = capi_machine_set("t")["spec"].clone();
    with_taint["template"]["spec"]["taints"] = json!([taint(&long)]);
    let v2_cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "v1beta2 requires the template",
            json!({"clusterName": "sample", "selector": {}}),
            vec!["spec.template: Required value".into(), BLOCKED.into()],
        ),
        (
            "enum, minProperties, required, label selector",
            json!({
                "clusterName": "sample", "deletion": {"order": "Random2"}, "machineNaming": {},
                "selector": {"matchExpressions": [{"key": "pool"}]},
                "template": {"metadata": {}}
            }),
            vec![
                "spec.deletion.order: Unsupported value: \"Random2\": supported values: \"Random\", \"Newest\", \"Oldest\"".into(),
                "spec.machineNaming: Invalid value: 0: spec.machineNaming in body should have at least 1 properties".into(),
                "spec.selector.matchExpressions[0].operator: Required value".into(),
                "spec.template.metadata: Invalid value: 0: spec.template.metadata in body should have at least 1 properties".into(),
                "spec.template.spec: Required value".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "type",
            json!({"clusterName": "sample", "replicas": "2", "selector": {}, "template": {"spec": capi_machine_spec(json!({}))}}),
            vec![
                "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"".into(),
                BLOCKED.into(),
            ],
        ),
        (
            "the template's taint key rule",
            with_taint,
            vec![format!("spec.template.spec.taints[0].key: Invalid value: \"string\": {TAINT_KEY_MESSAGE}")],
        ),
    ];
    for (i, (case, spec, expected)) in v2_cases.into_iter().enumerate() {
        let body = with_spec(
            "cluster.x-k8s.io/v1beta2",
            "MachineSet",
            &format!("bad-{i}"),
            spec,
        );
        let reply = create(&env, &sets, &body).await?;
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        invalid(&reply, &expected, case)?;
    }
    // v1beta1 has no CEL rule, so nothing is "not checked".
    let v1_cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "v1beta1: required, enum",
            json!({"deletePolicy": "Random2", "selector": {}}),
            vec![
                "spec.deletePolicy: Unsupported value: \"Random2\": supported values: \"Random\", \"Newest\", \"Oldest\"",
                "spec.clusterName: Required value",
            ],
        ),
        (
            "v1beta1: the template's required references",
            json!({"clusterName": "sample", "selector": {}, "template": {"spec": {"clusterName": "sample", "readinessGates": [{"conditionType": "Ready"}, {"conditionType": "Ready"}]}}}),
            vec![
                "spec.template.spec.bootstrap: Required value",
                "spec.template.spec.infrastructureRef: Required value",
                "spec.template.spec.readinessGates[1]: Duplicate value: map[string]interface {}{\"conditionType\":\"Ready\"}",
            ],
        ),
    ];
    for (i, (case, spec, expected)) in v1_cases.into_iter().enumerate() {
        let body = with_spec(
            "cluster.x-k8s.io/v1beta1",
            "MachineSet",
            &format!("bad-v1-{i}"),
            spec,
        );
        let reply = create(&env, &format!("{CAPI_V1}/machinesets"), &body).await?;
        invalid(&reply, &expected, case)?;
    }
    no_skipped_rules(&env);
    Ok(())
}

/// With conversion `None`, kube-apiserver converts an object by rewriting `apiVersion` and
/// then prunes it against the structural schema of the version it was converted to
/// (`schemaCoercingConverter`): on a write to the storage version (the response is the stored
/// object read back), on a read to the requested version.
#[tokio::test]
async fn capi_machine_set_conversion_prunes_to_the_target_version() -> TestResult {
    let env = start().await?;
    let v1_sets = format!("{CAPI_V1}/machinesets");
    let v2_sets = format!("{CAPI_V2}/machinesets");

    // v1beta1 write → v1beta2 storage: what v1beta2 does not know is pruned from the stored
    // object (spec.deletePolicy, spec.minReadySeconds, template.spec.nodeDrainTimeout,
    // infrastructureRef.apiVersion/namespace), so from the 201 response as well.
    let legacy = json!({
        "apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "MachineSet", "metadata": {"name": "legacy"},
        "spec": {
            "clusterName": "sample", "replicas": 1, "deletePolicy": "Newest", "minReadySeconds": 0,
            "selector": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["legacy"]}]},
            "template": {
                "metadata": {"labels": {"pool": "legacy"}},
                "spec": {
                    "clusterName": "sample",
                    "bootstrap": {"dataSecretName": "legacy-bootstrap"},
                    "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachineTemplate", "name": "legacy", "namespace": NS},
                    "nodeDrainTimeout": "5m0s",
                    "readinessGates": [{"conditionType": "example.com/NetworkReady"}]
                }
            }
        }
    });
    let stored = json!({
        "clusterName": "sample", "replicas": 1,
        "selector": {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["legacy"]}]},
        "template": {
            "metadata": {"labels": {"pool": "legacy"}},
            "spec": {
                "clusterName": "sample",
                "bootstrap": {"dataSecretName": "legacy-bootstrap"},
                "infrastructureRef": {"kind": "AWSMachineTemplate", "name": "legacy"},
                "readinessGates": [{"conditionType": "example.com/NetworkReady"}]
            }
        }
    });
    let dry = create(&env, &format!("{v1_sets}?dryRun=All"), &legacy).await?;
    expect(&dry, 201)?;
    assert_eq!(dry.body["spec"], stored, "dry run");
    let reply = create(&env, &v1_sets, &legacy).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(reply.body["spec"], stored);
    let v2 = get(&env, &format!("{v2_sets}/legacy")).await?;
    assert_eq!(v2.body["apiVersion"], "cluster.x-k8s.io/v1beta2");
    assert_eq!(v2.body["spec"], stored);
    assert_eq!(
        get(&env, &format!("{v1_sets}/legacy")).await?.body["spec"],
        stored
    );

    // A v1beta2 object read through v1beta1: what v1beta1 does not know is pruned from what
    // is served (spec.deletion, spec.machineNaming, template.spec.deletion and taints, the
    // references' apiGroup), in a get and in a list; storage keeps it.
    let set = capi_machine_set("workers");
    expect(&create(&env, &v2_sets, &set).await?, 201)?;
    let as_v1 = json!({
        "clusterName": "sample", "replicas": 2,
        "selector": {"matchLabels": {"cluster.x-k8s.io/cluster-name": "sample", "pool": "workers"}},
        "template": {
            "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "sample", "pool": "workers"}},
            "spec": {
                "clusterName": "sample",
                "version": "v1.31.2",
                "bootstrap": {"configRef": {"kind": "KubeadmConfigTemplate", "name": "workers"}},
                "infrastructureRef": {"kind": "AWSMachineTemplate", "name": "workers"},
                "failureDomain": "us-east-1a"
            }
        }
    });
    let v1 = get(&env, &format!("{v1_sets}/workers")).await?;
    expect(&v1, 200)?;
    assert_eq!(v1.body["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(v1.body["spec"], as_v1);
    let list = get(&env, &v1_sets).await?;
    let listed: Vec<&Value> = list.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["metadata"]["name"] == "workers")
        .collect();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["spec"], as_v1);
    assert_eq!(
        get(&env, &format!("{v2_sets}/workers")).await?.body["spec"],
        set["spec"]
    );

    // Written back through v1beta1 as read: the object is unchanged in v1beta1, so its
    // generation is too, but what only v1beta2 carried is gone from storage.
    let updated = put(&env, &format!("{v1_sets}/workers"), &v1.body).await?;
    expect(&updated, 200)?;
    assert_eq!(updated.body["metadata"]["generation"], 1);
    assert_ne!(
        updated.body["metadata"]["resourceVersion"],
        v1.body["metadata"]["resourceVersion"]
    );
    assert_eq!(
        get(&env, &format!("{v2_sets}/workers")).await?.body["spec"],
        as_v1
    );
    no_skipped_rules(&env);
    Ok(())
}

fn aws_machine_spec() -> Value {
    json!({
        "instanceType": "m6i.xlarge",
        "ami": {"id": "ami-0123456789abcdef0"},
        "iamInstanceProfile": "nodes.cluster-api-provider-aws.sigs.k8s.io",
        "sshKeyName": "default",
        "providerID": "aws:///us-east-1a/i-0123456789abcdef0",
        "instanceID": "i-0123456789abcdef0",
        "subnet": {"filters": [{"name": "tag:Name", "values": ["sample-subnet-private-us-east-1a"]}]},
        "additionalSecurityGroups": [{"id": "sg-0123456789abcdef0"}, {"filters": [{"name": "tag:role", "values": ["node"]}]}],
        "additionalTags": {"team": "infra"},
        "securityGroupOverrides": {"node": "sg-0fedcba9876543210"},
        "rootVolume": {"size": 120, "type": "gp3", "encrypted": true},
        "nonRootVolumes": [{"deviceName": "/dev/sdb", "size": 200, "type": "gp3", "iops": 3000, "throughput": 250}],
        "networkInterfaces": ["eni-0123456789abcdef0"],
        "networkInterfaceType": "efa",
        "cloudInit": {"secureSecretsBackend": "secrets-manager"},
        "ignition": {"version": "3.4", "proxy": {"httpsProxy": "http://proxy:3128", "noProxy": [".svc", "10.0.0.0/8"]}},
        "instanceMetadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 2},
        "elasticIpPool": {"publicIpv4Pool": "ipv4pool-ec2-0123456789abcdef0", "publicIpv4PoolFallbackOrder": "amazon-pool"},
        "capacityReservationId": "cr-0123456789abcdef0",
        "capacityReservationPreference": "CapacityReservationsOnly",
        "marketType": "CapacityBlock",
        "placementGroupName": "pg",
        "placementGroupPartition": 3,
        "privateDnsName": {"hostnameType": "resource-name", "enableResourceNameDnsARecord": true},
        "tenancy": "host",
        "hostID": "h-0123456789abcdef0",
        "cpuOptions": {"confidentialCompute": "AMDEncryptedVirtualizationNestedPaging"},
        "uncompressedUserData": false,
        "publicIP": false
    })
}

/// The AWS machine spec's violations, at `prefix` (`spec` or `spec.template.spec`).
fn aws_spec_cases(prefix: &str) -> Vec<(&'static str, Value, Vec<String>)> {
    let cel = |message: &str| format!("{prefix}: Invalid value: \"object\": {message}");
    vec![
        (
            "instanceType is required",
            json!({}),
            vec![format!("{prefix}.instanceType: Required value"), BLOCKED.into()],
        ),
        (
            "bounds, lengths, items, patterns",
            json!({
                "instanceType": "m", "hostID": "h-123", "placementGroupPartition": 8,
                "networkInterfaces": ["a", "b", "c"], "rootVolume": {"size": 4}, "nonRootVolumes": [{}],
                "cpuOptions": {}, "elasticIpPool": {"publicIpv4Pool": "ipv4pool-ec2-0123456789abcdef0123"},
                "instanceMetadataOptions": {"httpPutResponseHopLimit": 65},
                "ignition": {"tls": {"certificateAuthorities": vec!["a"; 65]}}
            }),
            vec![
                format!(
                    "{prefix}.cpuOptions: Invalid value: 0: {prefix}.cpuOptions in body should have at least 1 properties"
                ),
                format!("{prefix}.elasticIpPool.publicIpv4Pool: Too long: may not be more than 30 bytes"),
                format!(
                    "{prefix}.hostID: Invalid value: \"h-123\": {prefix}.hostID in body should match '^h-[0-9a-f]{{17}}$'"
                ),
                format!(
                    "{prefix}.ignition.tls.certificateAuthorities: Too many: 65: must have at most 64 items"
                ),
                format!(
                    "{prefix}.instanceMetadataOptions.httpPutResponseHopLimit: Invalid value: 65: {prefix}.instanceMetadataOptions.httpPutResponseHopLimit in body should be less than or equal to 64"
                ),
                format!(
                    "{prefix}.instanceType: Invalid value: \"m\": {prefix}.instanceType in body should be at least 2 chars long"
                ),
                format!("{prefix}.networkInterfaces: Too many: 3: must have at most 2 items"),
                format!("{prefix}.nonRootVolumes[0].size: Required value"),
                format!(
                    "{prefix}.placementGroupPartition: Invalid value: 8: {prefix}.placementGroupPartition in body should be less than or equal to 7"
                ),
                format!(
                    "{prefix}.rootVolume.size: Invalid value: 4: {prefix}.rootVolume.size in body should be greater than or equal to 8"
                ),
                BLOCKED.into(),
            ],
        ),
        (
            "enums",
            json!({
                "instanceType": "m5.large", "tenancy": "shared", "marketType": "Reserved",
                "ami": {"eksLookupType": "Bottlerocket"}, "ignition": {"version": "4.0", "storageType": "S3"},
                "instanceMetadataOptions": {"httpTokens": "sometimes"}, "networkInterfaceType": "ena",
                "privateDnsName": {"hostnameType": "fqdn"}, "cloudInit": {"secureSecretsBackend": "vault"},
                "hostAffinity": "any", "elasticIpPool": {"publicIpv4PoolFallbackOrder": "other"}
            }),
            vec![
                format!(
                    "{prefix}.ami.eksLookupType: Unsupported value: \"Bottlerocket\": supported values: \"AmazonLinux\", \"AmazonLinuxGPU\", \"AmazonLinux2023\", \"AmazonLinux2023GPU\""
                ),
                format!(
                    "{prefix}.cloudInit.secureSecretsBackend: Unsupported value: \"vault\": supported values: \"secrets-manager\", \"ssm-parameter-store\""
                ),
                format!(
                    "{prefix}.elasticIpPool.publicIpv4PoolFallbackOrder: Unsupported value: \"other\": supported values: \"amazon-pool\", \"none\""
                ),
                format!(
                    "{prefix}.hostAffinity: Unsupported value: \"any\": supported values: \"default\", \"host\""
                ),
                format!(
                    "{prefix}.ignition.storageType: Unsupported value: \"S3\": supported values: \"ClusterObjectStore\", \"UnencryptedUserData\""
                ),
                format!(
                    "{prefix}.ignition.version: Unsupported value: \"4.0\": supported values: \"2.3\", \"3.0\", \"3.1\", \"3.2\", \"3.3\", \"3.4\""
                ),
                format!(
                    "{prefix}.instanceMetadataOptions.httpTokens: Unsupported value: \"sometimes\": supported values: \"optional\", \"required\""
                ),
                format!(
                    "{prefix}.marketType: Unsupported value: \"Reserved\": supported values: \"OnDemand\", \"Spot\", \"CapacityBlock\""
                ),
                format!(
                    "{prefix}.networkInterfaceType: Unsupported value: \"ena\": supported values: \"interface\", \"efa\""
                ),
                format!(
                    "{prefix}.privateDnsName.hostnameType: Unsupported value: \"fqdn\": supported values: \"ip-name\", \"resource-name\""
                ),
                format!(
                    "{prefix}.tenancy: Unsupported value: \"shared\": supported values: \"default\", \"dedicated\", \"host\""
                ),
                BLOCKED.into(),
            ],
        ),
        (
            "a capacity reservation with marketType Spot",
            json!({"instanceType": "m5.large", "capacityReservationId": "cr-1", "marketType": "Spot"}),
            vec![cel(
                "capacityReservationId may not be set when marketType is Spot",
            )],
        ),
        (
            "a capacity reservation with spotMarketOptions",
            json!({"instanceType": "m5.large", "capacityReservationId": "cr-1", "spotMarketOptions": {"maxPrice": "0.10"}}),
            vec![cel(
                "capacityReservationId cannot be set when spotMarketOptions is specified",
            )],
        ),
        (
            "both capacity reservation rules",
            json!({"instanceType": "m5.large", "capacityReservationId": "cr-1", "marketType": "Spot", "spotMarketOptions": {}}),
            vec![
                cel("capacityReservationId may not be set when marketType is Spot"),
                cel("capacityReservationId cannot be set when spotMarketOptions is specified"),
            ],
        ),
    ]
}

/// Specs the AWS machine rules let through (each rule evaluated to true).
fn aws_passing_specs() -> Vec<Value> {
    vec![
        json!({"instanceType": "m5.large", "marketType": "Spot", "spotMarketOptions": {"maxPrice": "0.10"}}),
        json!({"instanceType": "m5.large", "capacityReservationId": "cr-1", "marketType": "OnDemand", "capacityReservationPreference": "Open"}),
        json!({"instanceType": "m5.large", "capacityReservationPreference": "None", "elasticIpPool": {"publicIpv4PoolFallbackOrder": "none"}}),
        json!({"instanceType": "m5.large", "capacityReservationPreference": ""}),
    ]
}

#[tokio::test]
async fn aws_machine() -> TestResult {
    let env = start().await?;
    let machines = format!("{AWS}/awsmachines");
    let spec = aws_machine_spec();
    let reply = create(&env, &machines, &json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
        "metadata": {"name": "worker-a-x7k2p", "labels": {"cluster.x-k8s.io/cluster-name": "sample"},
                     "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "name": "worker-a-x7k2p", "uid": "00000000-0000-0000-0000-000000000001"}]},
        "spec": spec
    })).await?;
    expect(&reply, 201)?;
    // The schema's defaults, applied inside the objects that were sent.
    let mut defaulted = spec.clone();
    json_patch::merge(
        &mut defaulted,
        &json!({
            "hostAffinity": "default",
            "ignition": {"storageType": "ClusterObjectStore"},
            "instanceMetadataOptions": {"httpEndpoint": "enabled", "instanceMetadataTags": "disabled"}
        }),
    );
    assert_eq!(reply.body["spec"], defaulted);
    let reply = merge(&env, &format!("{machines}/worker-a-x7k2p/status"), &json!({"status": {
        "ready": true, "instanceState": "running", "interruptible": false,
        "addresses": [{"type": "InternalIP", "address": "10.0.1.23"}, {"type": "InternalDNS", "address": "ip-10-0-1-23.ec2.internal"}],
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-06-01T10:00:00Z"}],
        "dedicatedHost": {"id": "h-0123456789abcdef0"}
    }})).await?;
    expect(&reply, 200)?;
    let reply = merge(&env, &format!("{machines}/worker-a-x7k2p/status"), &json!({"status": {
        "addresses": [{"type": "Private", "address": ""}],
        "conditions": [{"type": "", "status": "True", "lastTransitionTime": "2025-06-01T10:00:00Z", "severity": "x".repeat(33)}]
    }})).await?;
    invalid(
        &reply,
        &[
            "status.addresses[0].address: Invalid value: \"\": addresses[0].address in body should be at least 1 chars long",
            "status.addresses[0].type: Unsupported value: \"Private\": supported values: \"Hostname\", \"ExternalIP\", \"InternalIP\", \"ExternalDNS\", \"InternalDNS\"",
            "status.conditions[0].severity: Too long: may not be more than 32 bytes",
            "status.conditions[0].type: Invalid value: \"\": conditions[0].type in body should be at least 1 chars long",
            BLOCKED,
        ],
        "status",
    )?;

    for (i, (case, spec, expected)) in aws_spec_cases("spec").into_iter().enumerate() {
        let body = with_spec(
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "AWSMachine",
            &format!("bad-{i}"),
            spec,
        );
        let reply = create(&env, &machines, &body).await?;
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        invalid(&reply, &expected, case)?;
    }
    for (i, spec) in aws_passing_specs().into_iter().enumerate() {
        let body = with_spec(
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "AWSMachine",
            &format!("ok-{i}"),
            spec,
        );
        expect(&create(&env, &machines, &body).await?, 201)?;
    }
    // capacityReservationPreference is two `allOf` enums, both rejecting the value. Each
    // branch reports the same enum error, which kube-openapi's Result keeps once
    // (`AddErrors` drops a message already reported), then the allOf composite error, which
    // apiextensions-apiserver reports at the validation's root (`<nil>`) with an empty value;
    // the enum error keeps the CEL rules from running.
    let body = with_spec(
        "infrastructure.cluster.x-k8s.io/v1beta2",
        "AWSMachine",
        "all-of",
        json!({"instanceType": "m5.large", "capacityReservationPreference": "Sometimes"}),
    );
    let reply = create(&env, &machines, &body).await?;
    let expected = [
        "spec.capacityReservationPreference: Unsupported value: \"Sometimes\": supported values: \"\", \"None\", \"CapacityReservationsOnly\", \"Open\"",
        "<nil>: Invalid value: \"\": \"spec.capacityReservationPreference\" must validate all the schemas (allOf). None validated",
        BLOCKED,
    ];
    invalid(&reply, &expected, "allOf")?;
    assert_eq!(
        reply.causes()[1],
        (
            "<nil>".to_string(),
            "FieldValueInvalid".to_string(),
            "Invalid value: \"\": \"spec.capacityReservationPreference\" must validate all the schemas (allOf). None validated".to_string()
        )
    );
    assert_eq!(
        reply.body["message"],
        format!(
            "AWSMachine.infrastructure.cluster.x-k8s.io \"all-of\" is invalid: [{}]",
            expected.join(", ")
        )
    );
    no_skipped_rules(&env);
    Ok(())
}

#[tokio::test]
async fn aws_machine_template() -> TestResult {
    let env = start().await?;
    let templates = format!("{AWS}/awsmachinetemplates");
    let mut spec = aws_machine_spec();
    if let Some(map) = spec.as_object_mut() {
        for per_machine in ["providerID", "instanceID", "hostID", "networkInterfaces"] {
            map.remove(per_machine);
        }
    }
    let template = json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachineTemplate",
        "metadata": {"name": "workers", "labels": {"cluster.x-k8s.io/cluster-name": "sample"}},
        "spec": {"template": {"metadata": {"labels": {"pool": "workers"}, "annotations": {"example.com/owner": "infra"}}, "spec": spec}}
    });
    let reply = create(&env, &templates, &template).await?;
    expect(&reply, 201)?;
    assert_eq!(reply.body["spec"]["template"]["spec"]["hostAffinity"], "default");
    assert_eq!(
        reply.body["spec"]["template"]["spec"]["instanceMetadataOptions"],
        json!({"httpEndpoint": "enabled", "httpPutResponseHopLimit": 2, "httpTokens": "required", "instanceMetadataTags": "disabled"})
    );
    assert_eq!(
        reply.body["spec"]["template"]["metadata"],
        template["spec"]["template"]["metadata"]
    );
    // Autoscaling from zero: capacity is a map of quantities (int-or-string with a pattern).
    let status = format!("{templates}/workers/status");
    let reply = merge(
        &env,
        &status,
        &json!({"status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": 1, "ephemeral-storage": "120G"},
            "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux"},
            "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2025-06-01T10:00:00Z"}]
        }}),
    )
    .await?;
    expect(&reply, 200)?;
    assert_eq!(reply.body["status"]["capacity"]["nvidia.com/gpu"], 1);
    let quantity = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";
    let reply = merge(
        &env,
        &status,
        &json!({"status": {
            "capacity": {"cpu": "four", "memory": true},
            "nodeInfo": {"architecture": "riscv64", "operatingSystem": "plan9"}
        }}),
    )
    .await?;
    let bad_cpu = status_pattern("capacity.cpu", "four", quantity);
    invalid(
        &reply,
        &[
            &bad_cpu,
            "status.capacity.memory: Invalid value: \"boolean\": capacity.memory in body must be of type integer,string: \"boolean\"",
            "status.nodeInfo.architecture: Unsupported value: \"riscv64\": supported values: \"amd64\", \"arm64\"",
            "status.nodeInfo.operatingSystem: Unsupported value: \"plan9\": supported values: \"linux\", \"windows\"",
            BLOCKED,
        ],
        "status",
    )?;

    let template_of = |spec: Value| json!({"template": {"spec": spec}});
    let mut cases = vec![
        (
            "the template is required",
            json!({}),
            vec!["spec.template: Required value".to_string(), BLOCKED.into()],
        ),
        (
            "so is its spec",
            json!({"template": {"metadata": {}}}),
            vec!["spec.template.spec: Required value".to_string(), BLOCKED.into()],
        ),
    ];
    cases.extend(
        aws_spec_cases("spec.template.spec")
            .into_iter()
            .map(|(case, spec, expected)| (case, template_of(spec), expected)),
    );
    for (i, (case, spec, expected)) in cases.into_iter().enumerate() {
        let body = with_spec(
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "AWSMachineTemplate",
            &format!("bad-{i}"),
            spec,
        );
        let reply = create(&env, &templates, &body).await?;
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        invalid(&reply, &expected, case)?;
    }
    for (i, spec) in aws_passing_specs().into_iter().enumerate() {
        let body = with_spec(
            "infrastructure.cluster.x-k8s.io/v1beta2",
            "AWSMachineTemplate",
            &format!("ok-{i}"),
            template_of(spec),
        );
        expect(&create(&env, &templates, &body).await?, 201)?;
    }
    no_skipped_rules(&env);
    Ok(())
}

/// The Machine API CRDs' rules (each construct is covered in depth by `tests/cel.rs`): run here
/// too, so that one server has evaluated every rule of every upstream CRD.
#[tokio::test]
async fn machine_api_rules() -> TestResult {
    let env = start().await?;
    for plural in ["machines", "machinesets"] {
        let kind = if plural == "machines" {
            "Machine"
        } else {
            "MachineSet"
        };
        let spec = if plural == "machines" {
            json!({"providerSpec": {"value": {"instanceType": "m6i.xlarge"}}})
        } else {
            json!({"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}}})
        };
        let body = json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": kind, "metadata": {"name": "m"}, "spec": spec});
        expect(&create(&env, &format!("{MAPI}/{plural}"), &body).await?, 201)?;
        let status = format!("{MAPI}/{plural}/m/status");
        let step = |patch: Value| {
            let env = &env;
            let status = status.clone();
            async move { merge(env, &status, &json!({"status": patch})).await }
        };
        expect(
            &step(json!({"authoritativeAPI": "MachineAPI", "synchronizedGeneration": 3})).await?,
            200,
        )?;
        invalid(
            &step(json!({"authoritativeAPI": "ClusterAPI"})).await?,
            &[
                "status.authoritativeAPI: Invalid value: \"string\": The authoritativeAPI field must not transition directly from MachineAPI to ClusterAPI or vice versa. It must transition through Migrating.",
            ],
            plural,
        )?;
        invalid(
            &step(json!({"synchronizedGeneration": 2})).await?,
            &[
                "status.synchronizedGeneration: Invalid value: \"object\": synchronizedGeneration must not decrease unless authoritativeAPI is transitioning from Migrating to another value",
            ],
            plural,
        )?;
        expect(
            &step(json!({"authoritativeAPI": "Migrating", "synchronizedGeneration": 4})).await?,
            200,
        )?;
        // Leaving Migrating may reset the generation.
        expect(
            &step(json!({"authoritativeAPI": "ClusterAPI", "synchronizedGeneration": 1})).await?,
            200,
        )?;
        if plural == "machinesets" {
            // Unsetting authoritativeAPI: `self.authoritativeAPI` has no such key, an
            // evaluation error, as kube-apiserver reports it.
            invalid(
                &step(json!({"authoritativeAPI": null})).await?,
                &[
                    "status: Invalid value: \"object\": no such key: authoritativeAPI evaluating rule: authoritativeAPI cannot be unset once it has been set",
                ],
                plural,
            )?;
        }
    }
    no_skipped_rules(&env);
    Ok(())
}
