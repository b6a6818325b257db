//! The admission policies of `deploy/admission-policies/` on envtest, as a user the
//! policies do not exempt (`alice`) and as the controllers they exempt: each policy's
//! deny and allow cases, with kube-apiserver's exact envelope (docs/design.md §11).
//!
//! Objects are seeded as the Cluster API controllers' ServiceAccount, which the policies
//! exempt, so that each test starts from the state it names.

use envtest::TestEnv;
use http_body_util::BodyExt;
use kube::Client;
use serde_json::{Value, json};

type TestResult = Result<(), Box<dyn std::error::Error>>;

const MAPI: &str = "openshift-machine-api";
const CAPI: &str = "openshift-cluster-api";
const OPERATOR: &str = controllers::operator::policies::OPERATOR_USER;
const PROVIDERS: &str = controllers::operator::policies::PROVIDERS_USER;
const PAUSED: &str = "cluster.x-k8s.io/paused";

/// An envtest with the project's CRDs, the two namespaces and the policies.
struct Guards {
    env: TestEnv,
    alice: Client,
    operator: Client,
    seeder: Client,
}

/// A reply: code, message, `Warning` headers.
#[derive(Debug)]
struct Reply {
    code: u16,
    message: String,
    warnings: Vec<String>,
}

impl Guards {
    async fn start() -> Result<Self, Box<dyn std::error::Error>> {
        let env = e2e::policy_env().await.map_err(|e| e.to_string())?;
        e2e::install_policies(&env.client(), &e2e::default_namespaces())
            .await
            .map_err(|e| e.to_string())?;
        Ok(Self {
            alice: env.client_as("alice").await?,
            operator: env.client_as(OPERATOR).await?,
            seeder: env.client_as(PROVIDERS).await?,
            env,
        })
    }

    /// Creates `object` (and its `status`) as an exempt controller.
    async fn seed(&self, mut object: Value) -> TestResult {
        let status = object.as_object_mut().and_then(|o| o.remove("status"));
        let collection = collection_of(&object);
        expect(&send(&self.seeder, "POST", &collection, &object).await?, 201)?;
        if let Some(status) = status {
            let path = format!("{}/status", path_of(&object));
            expect(
                &send(&self.seeder, "PATCH", &path, &json!({ "status": status })).await?,
                200,
            )?;
        }
        Ok(())
    }

    /// Merge-patches the status of `object` as an exempt controller.
    async fn status(&self, object: &Value, status: Value) -> TestResult {
        let path = format!("{}/status", path_of(object));
        expect(
            &send(&self.seeder, "PATCH", &path, &json!({ "status": status })).await?,
            200,
        )
    }

    async fn patch(
        &self,
        client: &Client,
        object: &Value,
        patch: Value,
    ) -> Result<Reply, Box<dyn std::error::Error>> {
        send(client, "PATCH", &path_of(object), &patch).await
    }

    async fn create(&self, client: &Client, object: &Value) -> Result<Reply, Box<dyn std::error::Error>> {
        send(client, "POST", &collection_of(object), object).await
    }
}

/// Sends a JSON request (`PATCH` bodies as merge patches) and reads the status, message
/// and warnings.
async fn send(
    client: &Client,
    method: &str,
    path: &str,
    body: &Value,
) -> Result<Reply, Box<dyn std::error::Error>> {
    send_as(client, None, method, path, body).await
}

/// [`send`], impersonating `user` (`kubectl --as USER --as-group system:masters`) when given.
async fn send_as(
    client: &Client,
    user: Option<&str>,
    method: &str,
    path: &str,
    body: &Value,
) -> Result<Reply, Box<dyn std::error::Error>> {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type);
    if let Some(user) = user {
        // In system:masters, so that RBAC lets it through to admission.
        request = request
            .header("impersonate-user", user)
            .header("impersonate-group", "system:masters");
    }
    let request = request.body(kube::client::Body::from(serde_json::to_vec(body)?))?;
    let response = client.send(request).await?;
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|h| h.to_str().ok().map(String::from))
        .collect();
    let bytes = response.into_body().collect().await?.to_bytes();
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let message = body["message"].as_str().unwrap_or_default().to_owned();
    Ok(Reply {
        code,
        message,
        warnings,
    })
}

fn expect(reply: &Reply, code: u16) -> TestResult {
    if reply.code != code {
        return Err(format!("expected {code}, got {reply:?}").into());
    }
    Ok(())
}

/// Admitted (200/201), without a warning.
fn allowed(reply: &Reply) -> TestResult {
    if !(200..300).contains(&reply.code) || !reply.warnings.is_empty() {
        return Err(format!("expected an admitted request without warnings, got {reply:?}").into());
    }
    Ok(())
}

/// Denied by `policy` (whose binding has its name) with `message`, in kube's envelope.
fn denied(reply: &Reply, policy: &str, message: &str) -> TestResult {
    let wanted =
        format!("ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: {message}");
    if reply.code != 422 || !reply.message.ends_with(&wanted) || !reply.message.contains(" is forbidden: ") {
        return Err(format!("expected a 422 ending {wanted:?}, got {reply:?}").into());
    }
    Ok(())
}

/// Admitted with `policy`'s warning.
fn warned(reply: &Reply, policy: &str, message: &str) -> TestResult {
    let wanted = format!(
        "299 - \"Validation failed for ValidatingAdmissionPolicy '{policy}' with binding '{policy}': {message}\""
    );
    if !(200..300).contains(&reply.code) || reply.warnings != [wanted.clone()] {
        return Err(format!("expected an admitted request warned {wanted:?}, got {reply:?}").into());
    }
    Ok(())
}

fn collection_of(object: &Value) -> String {
    let api_version = object["apiVersion"].as_str().unwrap_or_default();
    let plural = match object["kind"].as_str().unwrap_or_default() {
        "Machine" => "machines",
        "MachineSet" => "machinesets",
        "AWSMachine" => "awsmachines",
        "AWSMachineTemplate" => "awsmachinetemplates",
        other => other,
    };
    let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
    format!("/apis/{api_version}/namespaces/{namespace}/{plural}")
}

fn path_of(object: &Value) -> String {
    format!(
        "{}/{}",
        collection_of(object),
        object["metadata"]["name"].as_str().unwrap_or_default()
    )
}

fn meta(name: &str, namespace: &str, labels: Value, annotations: Value) -> Value {
    json!({"name": name, "namespace": namespace, "labels": labels, "annotations": annotations})
}

fn mapi_machine(name: &str, authority: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": meta(name, MAPI, labels, annotations),
        "spec": {"authoritativeAPI": authority, "providerSpec": {"value": {"instanceType": "m6i.large"}}}
    })
}

fn capi_machine(name: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
        "metadata": meta(name, CAPI, labels, annotations),
        "spec": {
            "clusterName": "c1", "bootstrap": {"dataSecretName": "worker-user-data"},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": name}
        }
    })
}

fn mapi_machine_set(name: &str, authority: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
        "metadata": meta(name, MAPI, labels, annotations),
        "spec": {
            "authoritativeAPI": authority, "replicas": 1, "selector": {"matchLabels": {"ms": name}},
            "template": {"metadata": {"labels": {"ms": name}},
                         "spec": {"authoritativeAPI": authority, "providerSpec": {"value": {"instanceType": "m6i.large"}}}}
        }
    })
}

fn capi_machine_set(name: &str, labels: Value, annotations: Value) -> Value {
    json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
        "metadata": meta(name, CAPI, labels, annotations),
        "spec": {
            "clusterName": "c1", "replicas": 1, "selector": {"matchLabels": {"ms": name}},
            "template": {"metadata": {"labels": {"ms": name}}, "spec": {
                "clusterName": "c1", "bootstrap": {"dataSecretName": "worker-user-data"},
                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachineTemplate", "name": name}
            }}
        }
    })
}

fn with_status(mut object: Value, status: Value) -> Value {
    object["status"] = status;
    object
}

fn synced() -> Value {
    json!({"type": "Synchronized", "status": "True", "reason": "Synchronized", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

fn label(key: &str, value: Value) -> Value {
    json!({"metadata": {"labels": {key: value}}})
}

fn annotate(key: &str, value: Value) -> Value {
    json!({"metadata": {"annotations": {key: value}}})
}

const CAPI_MACHINE_GUARD: &str = "machine-sync-capi-machine-guard";
const CAPI_SET_GUARD: &str = "machine-sync-capi-machineset-guard";
const MAPI_MACHINE_GUARD: &str = "machine-sync-mapi-machine-guard";
const MAPI_SET_GUARD: &str = "machine-sync-mapi-machineset-guard";
const MAPI_READ_ONLY: &str = "only spec.authoritativeAPI may change while Cluster API is authoritative";
const LABELS_WHILE_MAPI: &str = "machine.openshift.io, kubernetes.io and cluster.x-k8s.io labels are read-only while the Machine API is authoritative";
const ANNOTATIONS_WHILE_MAPI: &str = "machine.openshift.io, kubernetes.io and cluster.x-k8s.io annotations are read-only while the Machine API is authoritative";
const HASH: &str =
    "the machine-template-hash label is Cluster API's own and may not be added, changed or removed";

#[tokio::test]
async fn a_capi_machine_spec_is_read_only_while_the_machine_api_is_authoritative() -> TestResult {
    let g = Guards::start().await?;
    g.seed(with_status(
        mapi_machine("g1", "MachineAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    let capi = capi_machine("g1", json!({}), json!({PAUSED: ""}));
    g.seed(capi.clone()).await?;
    let edit = json!({"spec": {"providerID": "aws:///us-east-1a/i-0abc"}});
    denied(
        &g.patch(&g.alice, &capi, edit.clone()).await?,
        CAPI_MACHINE_GUARD,
        "spec is read-only while the Machine API is authoritative (change the Machine API Machine instead): spec.providerID",
    )?;
    allowed(&g.patch(&g.operator, &capi, edit).await?)
}

#[tokio::test]
async fn a_capi_machine_s_protected_labels_and_annotations_are_read_only_while_the_machine_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    g.seed(with_status(
        mapi_machine("g2", "MachineAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    let capi = capi_machine(
        "g2",
        json!({"cluster.x-k8s.io/cluster-name": "c1"}),
        json!({PAUSED: ""}),
    );
    g.seed(capi.clone()).await?;
    let subdomain = g
        .patch(&g.alice, &capi, label("node-role.kubernetes.io/infra", json!("")))
        .await?;
    denied(
        &subdomain,
        CAPI_MACHINE_GUARD,
        &format!("{LABELS_WHILE_MAPI}: node-role.kubernetes.io/infra"),
    )?;
    let removed = g
        .patch(
            &g.alice,
            &capi,
            label("cluster.x-k8s.io/cluster-name", Value::Null),
        )
        .await?;
    denied(
        &removed,
        CAPI_MACHINE_GUARD,
        &format!("{LABELS_WHILE_MAPI}: cluster.x-k8s.io/cluster-name"),
    )?;
    let unpaused = g.patch(&g.alice, &capi, annotate(PAUSED, Value::Null)).await?;
    denied(
        &unpaused,
        CAPI_MACHINE_GUARD,
        &format!("{ANNOTATIONS_WHILE_MAPI}: {PAUSED}"),
    )?;
    allowed(&g.patch(&g.alice, &capi, label("team", json!("b"))).await?)?;
    allowed(
        &g.patch(&g.alice, &capi, annotate("example.com/note", json!("hello")))
            .await?,
    )
}

#[tokio::test]
async fn a_capi_machine_label_mirrored_from_mapi_may_only_take_the_mapi_value() -> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine("g3", "MachineAPI", json!({"team": "a"}), json!({}));
    g.seed(with_status(mapi, json!({"authoritativeAPI": "MachineAPI"})))
        .await?;
    let capi = capi_machine("g3", json!({"team": "stale"}), json!({}));
    g.seed(capi.clone()).await?;
    let message = "labels of the Machine API Machine may only be set to its values while the Machine API is authoritative: team";
    denied(
        &g.patch(&g.alice, &capi, label("team", json!("b"))).await?,
        CAPI_MACHINE_GUARD,
        message,
    )?;
    denied(
        &g.patch(&g.alice, &capi, label("team", Value::Null)).await?,
        CAPI_MACHINE_GUARD,
        message,
    )?;
    allowed(&g.patch(&g.alice, &capi, label("team", json!("a"))).await?)
}

#[tokio::test]
async fn a_capi_machine_may_not_get_a_machine_template_hash_label_while_the_machine_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    g.seed(with_status(
        mapi_machine("g4", "MachineAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    let capi = capi_machine("g4", json!({}), json!({}));
    g.seed(capi.clone()).await?;
    denied(
        &g.patch(&g.alice, &capi, label("machine-template-hash", json!("12345")))
            .await?,
        CAPI_MACHINE_GUARD,
        HASH,
    )
}

#[tokio::test]
async fn a_capi_machine_is_writable_while_cluster_api_is_authoritative() -> TestResult {
    let g = Guards::start().await?;
    g.seed(with_status(
        mapi_machine("g5", "ClusterAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "ClusterAPI"}),
    ))
    .await?;
    let capi = capi_machine("g5", json!({}), json!({}));
    g.seed(capi.clone()).await?;
    let edit = json!({"spec": {"providerID": "aws:///us-east-1a/i-0abc"}});
    allowed(&g.patch(&g.alice, &capi, edit.clone()).await?)?;
    allowed(
        &g.patch(&g.alice, &capi, label("node-role.kubernetes.io/infra", json!("")))
            .await?,
    )?;
    // A CAPI Machine without a MAPI twin is not guarded.
    let lone = capi_machine("g6", json!({}), json!({}));
    g.seed(lone.clone()).await?;
    allowed(&g.patch(&g.alice, &lone, edit).await?)
}

#[tokio::test]
async fn a_capi_machine_set_spec_is_read_only_while_the_machine_api_is_authoritative() -> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine_set("s1", "MachineAPI", json!({}), json!({}));
    g.seed(with_status(mapi, json!({"authoritativeAPI": "MachineAPI"})))
        .await?;
    let capi = capi_machine_set("s1", json!({}), json!({PAUSED: ""}));
    g.seed(capi.clone()).await?;
    let edit = json!({"spec": {"replicas": 3}});
    denied(
        &g.patch(&g.alice, &capi, edit.clone()).await?,
        CAPI_SET_GUARD,
        "spec is read-only while the Machine API is authoritative (change the Machine API MachineSet instead): spec.replicas",
    )?;
    allowed(&g.patch(&g.operator, &capi, edit).await?)?;
    // kube-apiserver does not match `machinesets/scale` against a `machinesets` rule.
    let scale = format!("{}/scale", path_of(&capi));
    allowed(&send(&g.alice, "PATCH", &scale, &json!({"spec": {"replicas": 4}})).await?)
}

#[tokio::test]
async fn a_capi_machine_set_s_protected_and_mirrored_labels_are_read_only_while_the_machine_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    let capacity = "capacity.cluster-autoscaler.kubernetes.io/labels";
    let mapi = mapi_machine_set(
        "s2",
        "MachineAPI",
        json!({"team": "a"}),
        json!({capacity: "kubernetes.io/arch=amd64"}),
    );
    g.seed(with_status(mapi, json!({"authoritativeAPI": "MachineAPI"})))
        .await?;
    let labels = json!({"team": "a", "cluster.x-k8s.io/cluster-name": "c1"});
    let capi = capi_machine_set(
        "s2",
        labels,
        json!({PAUSED: "", capacity: "kubernetes.io/arch=amd64"}),
    );
    g.seed(capi.clone()).await?;
    let cluster = g
        .patch(
            &g.alice,
            &capi,
            label("cluster.x-k8s.io/cluster-name", json!("c2")),
        )
        .await?;
    denied(
        &cluster,
        CAPI_SET_GUARD,
        &format!("{LABELS_WHILE_MAPI}: cluster.x-k8s.io/cluster-name"),
    )?;
    let arch = g
        .patch(
            &g.alice,
            &capi,
            annotate(capacity, json!("kubernetes.io/arch=arm64")),
        )
        .await?;
    denied(
        &arch,
        CAPI_SET_GUARD,
        &format!("{ANNOTATIONS_WHILE_MAPI}: {capacity}"),
    )?;
    let team = g.patch(&g.alice, &capi, label("team", json!("b"))).await?;
    let mirrored = "labels of the Machine API MachineSet may only be set to its values while the Machine API is authoritative: team";
    denied(&team, CAPI_SET_GUARD, mirrored)?;
    allowed(
        &g.patch(&g.alice, &capi, label("cost-center", json!("42")))
            .await?,
    )
}

#[tokio::test]
async fn a_mapi_machine_spec_is_read_only_but_for_the_authoritative_api_while_cluster_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine("m1", "ClusterAPI", json!({}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI", "conditions": [synced()]}),
    ))
    .await?;
    let capi = capi_machine("m1", json!({}), json!({}));
    g.seed(with_status(
        capi,
        json!({"initialization": {"infrastructureProvisioned": true}}),
    ))
    .await?;
    let resize = json!({"spec": {"providerSpec": {"value": {"instanceType": "m6i.xlarge"}}}});
    let message = format!("{MAPI_READ_ONLY}: spec.providerSpec");
    denied(
        &g.patch(&g.alice, &mapi, resize).await?,
        MAPI_MACHINE_GUARD,
        &message,
    )?;
    let both = json!({"spec": {"authoritativeAPI": "MachineAPI", "providerSpec": {"value": {"instanceType": "m6i.xlarge"}}}});
    denied(
        &g.patch(&g.alice, &mapi, both).await?,
        MAPI_MACHINE_GUARD,
        &message,
    )?;
    allowed(
        &g.patch(
            &g.alice,
            &mapi,
            json!({"spec": {"authoritativeAPI": "MachineAPI"}}),
        )
        .await?,
    )
}

#[tokio::test]
async fn a_mapi_machine_s_protected_labels_and_annotations_are_read_only_while_cluster_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    let role = "machine.openshift.io/cluster-api-machine-role";
    let state = "machine.openshift.io/instance-state";
    let mapi = mapi_machine(
        "m2",
        "ClusterAPI",
        json!({role: "worker"}),
        json!({state: "running"}),
    );
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI"}),
    ))
    .await?;
    g.seed(capi_machine("m2", json!({}), json!({}))).await?;
    let labels = "machine.openshift.io, kubernetes.io and cluster.x-k8s.io labels are read-only while Cluster API is authoritative";
    let annotations = "machine.openshift.io, kubernetes.io and cluster.x-k8s.io annotations are read-only while Cluster API is authoritative";
    denied(
        &g.patch(&g.alice, &mapi, label(role, json!("infra"))).await?,
        MAPI_MACHINE_GUARD,
        &format!("{labels}: {role}"),
    )?;
    let stopped = g
        .patch(&g.alice, &mapi, annotate(state, json!("stopped")))
        .await?;
    denied(&stopped, MAPI_MACHINE_GUARD, &format!("{annotations}: {state}"))?;
    allowed(&g.patch(&g.alice, &mapi, label("team", json!("b"))).await?)
}

#[tokio::test]
async fn a_mapi_machine_label_mirrored_from_capi_may_only_take_the_capi_value() -> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine("m3", "ClusterAPI", json!({"team": "stale"}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI"}),
    ))
    .await?;
    g.seed(capi_machine("m3", json!({"team": "a"}), json!({})))
        .await?;
    let message = "labels of the Cluster API Machine may only be set to its values while Cluster API is authoritative: team";
    denied(
        &g.patch(&g.alice, &mapi, label("team", json!("b"))).await?,
        MAPI_MACHINE_GUARD,
        message,
    )?;
    allowed(&g.patch(&g.alice, &mapi, label("team", json!("a"))).await?)
}

#[tokio::test]
async fn a_mapi_machine_may_not_get_a_machine_template_hash_label_while_cluster_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine("m4", "ClusterAPI", json!({}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI"}),
    ))
    .await?;
    g.seed(capi_machine("m4", json!({}), json!({}))).await?;
    denied(
        &g.patch(&g.alice, &mapi, label("machine-template-hash", json!("12345")))
            .await?,
        MAPI_MACHINE_GUARD,
        HASH,
    )
}

#[tokio::test]
async fn a_mapi_machine_is_writable_while_the_machine_api_is_authoritative() -> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine("m5", "MachineAPI", json!({}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    g.seed(capi_machine("m5", json!({}), json!({PAUSED: ""}))).await?;
    allowed(
        &g.patch(
            &g.alice,
            &mapi,
            json!({"spec": {"providerID": "aws:///us-east-1a/i-0abc"}}),
        )
        .await?,
    )
}

#[tokio::test]
async fn a_mapi_machine_set_spec_is_read_only_but_for_the_authoritative_api_while_cluster_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine_set("s3", "ClusterAPI", json!({}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI", "conditions": [synced()]}),
    ))
    .await?;
    g.seed(capi_machine_set("s3", json!({}), json!({}))).await?;
    let template = json!({"spec": {"template": {"spec": {"authoritativeAPI": "MachineAPI"}}}});
    denied(
        &g.patch(&g.alice, &mapi, template).await?,
        MAPI_SET_GUARD,
        &format!("{MAPI_READ_ONLY}: spec.template"),
    )?;
    let replicas = json!({"spec": {"replicas": 5}});
    denied(
        &g.patch(&g.alice, &mapi, replicas).await?,
        MAPI_SET_GUARD,
        &format!("{MAPI_READ_ONLY}: spec.replicas"),
    )?;
    allowed(
        &g.patch(
            &g.alice,
            &mapi,
            json!({"spec": {"authoritativeAPI": "MachineAPI"}}),
        )
        .await?,
    )
}

#[tokio::test]
async fn a_mapi_machine_set_s_protected_annotations_and_mirrored_labels_are_read_only_while_cluster_api_is_authoritative()
-> TestResult {
    let g = Guards::start().await?;
    let vcpu = "machine.openshift.io/vCPU";
    let mapi = mapi_machine_set("s4", "ClusterAPI", json!({"team": "stale"}), json!({vcpu: "4"}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI"}),
    ))
    .await?;
    g.seed(capi_machine_set("s4", json!({"team": "a"}), json!({})))
        .await?;
    let annotations = "machine.openshift.io, kubernetes.io and cluster.x-k8s.io annotations are read-only while Cluster API is authoritative";
    denied(
        &g.patch(&g.alice, &mapi, annotate(vcpu, Value::Null)).await?,
        MAPI_SET_GUARD,
        &format!("{annotations}: {vcpu}"),
    )?;
    let mirrored = "labels of the Cluster API MachineSet may only be set to its values while Cluster API is authoritative: team";
    denied(
        &g.patch(&g.alice, &mapi, label("team", json!("b"))).await?,
        MAPI_SET_GUARD,
        mirrored,
    )?;
    allowed(&g.patch(&g.alice, &mapi, label("team", json!("a"))).await?)
}

#[tokio::test]
async fn a_mapi_machine_created_beside_a_capi_machine_must_be_cluster_api_authoritative() -> TestResult {
    let g = Guards::start().await?;
    g.seed(capi_machine("c1", json!({}), json!({}))).await?;
    let reply = g
        .create(&g.alice, &mapi_machine("c1", "MachineAPI", json!({}), json!({})))
        .await?;
    expect(&reply, 422)?;
    assert!(
        reply.message.contains(
            "ValidatingAdmissionPolicy 'machine-sync-mapi-machine-create' with binding 'machine-sync-mapi-machine-create' denied request: a Cluster API Machine of this name exists"
        ),
        "{reply:?}"
    );
    allowed(
        &g.create(&g.alice, &mapi_machine("c1", "ClusterAPI", json!({}), json!({})))
            .await?,
    )?;
    // No twin: MachineAPI is fine, with a generated name too.
    allowed(
        &g.create(&g.alice, &mapi_machine("c2", "MachineAPI", json!({}), json!({})))
            .await?,
    )?;
    let mut generated = mapi_machine("", "MachineAPI", json!({}), json!({}));
    generated["metadata"] = json!({"generateName": "w-", "namespace": MAPI});
    allowed(&g.create(&g.alice, &generated).await?)
}

#[tokio::test]
async fn a_mapi_machine_set_created_beside_a_capi_machine_set_must_be_cluster_api_authoritative() -> TestResult
{
    let g = Guards::start().await?;
    g.seed(capi_machine_set("cs1", json!({}), json!({}))).await?;
    let reply = g
        .create(
            &g.alice,
            &mapi_machine_set("cs1", "MachineAPI", json!({}), json!({})),
        )
        .await?;
    expect(&reply, 422)?;
    assert!(
        reply.message.contains("with binding 'machine-sync-mapi-machineset-create' denied request: a Cluster API MachineSet of this name exists"),
        "{reply:?}"
    );
    allowed(
        &g.create(
            &g.alice,
            &mapi_machine_set("cs1", "ClusterAPI", json!({}), json!({})),
        )
        .await?,
    )
}

#[tokio::test]
async fn a_capi_machine_created_beside_a_machine_api_authoritative_mapi_machine_must_be_paused() -> TestResult
{
    let g = Guards::start().await?;
    let policy = "machine-sync-capi-machine-create";
    for name in ["c3", "c6"] {
        g.seed(with_status(
            mapi_machine(name, "MachineAPI", json!({}), json!({})),
            json!({"authoritativeAPI": "MachineAPI"}),
        ))
        .await?;
    }
    let message = "the Machine API Machine of this name is authoritative: a Cluster API Machine beside it must be created paused (annotation cluster.x-k8s.io/paused)";
    denied(
        &g.create(&g.alice, &capi_machine("c3", json!({}), json!({})))
            .await?,
        policy,
        message,
    )?;
    allowed(
        &g.create(&g.alice, &capi_machine("c3", json!({}), json!({PAUSED: ""})))
            .await?,
    )?;
    allowed(
        &g.create(&g.operator, &capi_machine("c6", json!({}), json!({})))
            .await?,
    )?;
    g.seed(with_status(
        mapi_machine("c5", "ClusterAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "Migrating"}),
    ))
    .await?;
    allowed(
        &g.create(&g.alice, &capi_machine("c5", json!({}), json!({})))
            .await?,
    )
}

#[tokio::test]
async fn a_capi_machine_created_beside_a_cluster_api_authoritative_mapi_machine_waits_for_it_to_pause()
-> TestResult {
    let g = Guards::start().await?;
    let mapi = mapi_machine("c4", "ClusterAPI", json!({}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI"}),
    ))
    .await?;
    let message = "the Machine API Machine of this name has status.authoritativeAPI: ClusterAPI but is not paused yet (condition Paused is not True): create the Cluster API Machine once it is";
    let capi = capi_machine("c4", json!({}), json!({}));
    denied(
        &g.create(&g.alice, &capi).await?,
        "machine-sync-capi-machine-create",
        message,
    )?;
    let paused = json!({"type": "Paused", "status": "True", "reason": "Paused", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    g.status(&mapi, json!({"conditions": [paused]})).await?;
    allowed(&g.create(&g.alice, &capi).await?)
}

#[tokio::test]
async fn a_capi_machine_set_created_beside_a_mapi_machine_set_follows_its_authority() -> TestResult {
    let g = Guards::start().await?;
    let policy = "machine-sync-capi-machineset-create";
    g.seed(with_status(
        mapi_machine_set("cs2", "MachineAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    let message = "the Machine API MachineSet of this name is authoritative: a Cluster API MachineSet beside it must be created paused (annotation cluster.x-k8s.io/paused)";
    denied(
        &g.create(&g.alice, &capi_machine_set("cs2", json!({}), json!({})))
            .await?,
        policy,
        message,
    )?;
    allowed(
        &g.create(&g.alice, &capi_machine_set("cs2", json!({}), json!({PAUSED: ""})))
            .await?,
    )?;
    let mapi = mapi_machine_set("cs3", "ClusterAPI", json!({}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "ClusterAPI"}),
    ))
    .await?;
    let message = "the Machine API MachineSet of this name has status.authoritativeAPI: ClusterAPI but is not paused yet (condition Paused is not True): create the Cluster API MachineSet once it is";
    denied(
        &g.create(&g.alice, &capi_machine_set("cs3", json!({}), json!({})))
            .await?,
        policy,
        message,
    )?;
    let paused = json!({"type": "Paused", "status": "True", "reason": "Paused", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"});
    g.status(&mapi, json!({"conditions": [paused]})).await?;
    allowed(
        &g.create(&g.alice, &capi_machine_set("cs3", json!({}), json!({})))
            .await?,
    )
}

#[tokio::test]
async fn the_authoritative_api_of_a_provisioning_or_deleted_machine_cannot_change() -> TestResult {
    let g = Guards::start().await?;
    let policy = "machine-sync-migration-machine-settled";
    let mapi = mapi_machine("r1", "MachineAPI", json!({}), json!({}));
    let status = json!({"authoritativeAPI": "MachineAPI", "phase": "Provisioning", "conditions": [synced()]});
    g.seed(with_status(mapi.clone(), status)).await?;
    let request = json!({"spec": {"authoritativeAPI": "ClusterAPI"}});
    let message = "spec.authoritativeAPI cannot change while the machine is Provisioning (status.phase)";
    denied(&g.patch(&g.alice, &mapi, request.clone()).await?, policy, message)?;
    allowed(&g.patch(&g.alice, &mapi, label("team", json!("a"))).await?)?;
    g.status(&mapi, json!({"phase": "Running"})).await?;
    allowed(&g.patch(&g.alice, &mapi, request.clone()).await?)?;

    let mut held = mapi_machine("r2", "MachineAPI", json!({}), json!({}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let status = json!({"authoritativeAPI": "MachineAPI", "phase": "Running", "conditions": [synced()]});
    g.seed(with_status(held.clone(), status)).await?;
    expect(
        &send(&g.seeder, "DELETE", &path_of(&held), &json!({})).await?,
        200,
    )?;
    let message = "spec.authoritativeAPI cannot change while the machine is being deleted";
    denied(&g.patch(&g.alice, &held, request).await?, policy, message)
}

#[tokio::test]
async fn the_authoritative_api_cannot_change_before_the_capi_machine_is_provisioned_or_while_it_goes()
-> TestResult {
    let g = Guards::start().await?;
    let policy = "machine-sync-migration-capi-machine-ready";
    let running = json!({"authoritativeAPI": "MachineAPI", "phase": "Running", "conditions": [synced()]});
    let mapi = mapi_machine("r3", "MachineAPI", json!({}), json!({}));
    g.seed(with_status(mapi.clone(), running.clone())).await?;
    let capi = capi_machine("r3", json!({}), json!({PAUSED: ""}));
    g.seed(capi.clone()).await?;
    let request = json!({"spec": {"authoritativeAPI": "ClusterAPI"}});
    let message = "spec.authoritativeAPI cannot change until the Cluster API Machine of this name reports status.initialization.infrastructureProvisioned: true";
    denied(&g.patch(&g.alice, &mapi, request.clone()).await?, policy, message)?;
    g.status(
        &capi,
        json!({"initialization": {"infrastructureProvisioned": false}}),
    )
    .await?;
    denied(&g.patch(&g.alice, &mapi, request.clone()).await?, policy, message)?;
    allowed(&g.patch(&g.alice, &mapi, label("team", json!("a"))).await?)?;
    g.status(
        &capi,
        json!({"initialization": {"infrastructureProvisioned": true}}),
    )
    .await?;
    allowed(&g.patch(&g.alice, &mapi, request.clone()).await?)?;
    // No CAPI twin: nothing to wait for.
    let lone = mapi_machine("r5", "MachineAPI", json!({}), json!({}));
    g.seed(with_status(lone.clone(), running.clone())).await?;
    allowed(&g.patch(&g.alice, &lone, request.clone()).await?)?;

    let mapi = mapi_machine("r4", "MachineAPI", json!({}), json!({}));
    g.seed(with_status(mapi.clone(), running)).await?;
    let mut capi = capi_machine("r4", json!({}), json!({PAUSED: ""}));
    capi["metadata"]["finalizers"] = json!(["example.com/hold"]);
    g.seed(with_status(
        capi.clone(),
        json!({"initialization": {"infrastructureProvisioned": true}}),
    ))
    .await?;
    expect(
        &send(&g.seeder, "DELETE", &path_of(&capi), &json!({})).await?,
        200,
    )?;
    let message =
        "spec.authoritativeAPI cannot change while the Cluster API Machine of this name is being deleted";
    denied(&g.patch(&g.alice, &mapi, request).await?, policy, message)
}

#[tokio::test]
async fn changing_the_authoritative_api_while_not_synchronized_warns() -> TestResult {
    let g = Guards::start().await?;
    let policy = "machine-sync-migration-unsynchronized";
    let message = "spec.authoritativeAPI changed while the Synchronized condition is not True: the migration waits until the mirror is in sync";
    let mapi = mapi_machine("r6", "MachineAPI", json!({}), json!({}));
    g.seed(with_status(
        mapi.clone(),
        json!({"authoritativeAPI": "MachineAPI", "phase": "Running"}),
    ))
    .await?;
    let capi = capi_machine("r6", json!({}), json!({PAUSED: ""}));
    g.seed(with_status(
        capi,
        json!({"initialization": {"infrastructureProvisioned": true}}),
    ))
    .await?;
    warned(
        &g.patch(
            &g.alice,
            &mapi,
            json!({"spec": {"authoritativeAPI": "ClusterAPI"}}),
        )
        .await?,
        policy,
        message,
    )?;
    allowed(&g.patch(&g.alice, &mapi, label("team", json!("a"))).await?)?;
    g.status(&mapi, json!({"conditions": [synced()]})).await?;
    allowed(
        &g.patch(
            &g.alice,
            &mapi,
            json!({"spec": {"authoritativeAPI": "MachineAPI"}}),
        )
        .await?,
    )?;
    // The operator is exempt from this policy and from the phase check.
    let provisioning = mapi_machine("r8", "MachineAPI", json!({}), json!({}));
    g.seed(with_status(
        provisioning.clone(),
        json!({"authoritativeAPI": "MachineAPI", "phase": "Provisioning"}),
    ))
    .await?;
    allowed(
        &g.patch(
            &g.operator,
            &provisioning,
            json!({"spec": {"authoritativeAPI": "ClusterAPI"}}),
        )
        .await?,
    )
}

#[tokio::test]
async fn capi_fields_the_machine_api_cannot_represent_are_refused() -> TestResult {
    let g = Guards::start().await?;
    let policy = "machine-sync-capi-unrepresentable-fields";
    let prefix = "fields the Machine API cannot represent may not be set: ";
    let mut versioned = capi_machine("f1", json!({}), json!({}));
    versioned["spec"]["version"] = json!("v1.31.0");
    denied(
        &g.create(&g.alice, &versioned).await?,
        policy,
        &format!("{prefix}spec.version"),
    )?;
    versioned["spec"]["readinessGates"] = json!([{"conditionType": "Foo"}]);
    denied(
        &g.create(&g.alice, &versioned).await?,
        policy,
        &format!("{prefix}spec.version, spec.readinessGates"),
    )?;
    let plain = capi_machine("f1", json!({}), json!({}));
    allowed(&g.create(&g.alice, &plain).await?)?;
    let gates = json!({"spec": {"readinessGates": [{"conditionType": "Foo"}]}});
    denied(
        &g.patch(&g.alice, &plain, gates).await?,
        policy,
        &format!("{prefix}spec.readinessGates"),
    )?;
    let set = capi_machine_set("f2", json!({}), json!({}));
    allowed(&g.create(&g.alice, &set).await?)?;
    let template_gates =
        json!({"spec": {"template": {"spec": {"readinessGates": [{"conditionType": "Foo"}]}}}});
    denied(
        &g.patch(&g.alice, &set, template_gates).await?,
        policy,
        &format!("{prefix}spec.template.spec.readinessGates"),
    )?;
    let mut versioned_set = capi_machine_set("f3", json!({}), json!({}));
    versioned_set["spec"]["template"]["spec"]["version"] = json!("v1.31.0");
    denied(
        &g.create(&g.alice, &versioned_set).await?,
        policy,
        &format!("{prefix}spec.template.spec.version"),
    )
}

#[tokio::test]
async fn aws_fields_the_machine_api_cannot_represent_are_refused() -> TestResult {
    let g = Guards::start().await?;
    let policy = "machine-sync-aws-unrepresentable-fields";
    let prefix = "fields the Machine API cannot represent may not be set: ";
    let aws = |extra: Value| {
        let mut spec = json!({"instanceType": "m6i.large"});
        merge(&mut spec, extra);
        json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
               "metadata": {"name": "a1", "namespace": CAPI}, "spec": spec})
    };
    denied(
        &g.create(&g.alice, &aws(json!({"imageLookupOrg": "123"}))).await?,
        policy,
        &format!("{prefix}spec.imageLookupOrg"),
    )?;
    let several = aws(
        json!({"ami": {"eksLookupType": "AmazonLinux"}, "ignition": {"proxy": {"httpProxy": "http://p"}}, "cloudInit": {"secretCount": 2}}),
    );
    let message = format!("{prefix}spec.ami.eksLookupType, spec.ignition.proxy, spec.cloudInit.secretCount");
    denied(&g.create(&g.alice, &several).await?, policy, &message)?;
    allowed(
        &g.create(
            &g.alice,
            &aws(json!({"ami": {"id": "ami-1"}, "ignition": {"version": "3.4"}})),
        )
        .await?,
    )?;
    let template = json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachineTemplate",
        "metadata": {"name": "t1", "namespace": CAPI}, "spec": {"template": {"spec": {"instanceType": "m6i.large"}}}});
    allowed(&g.create(&g.alice, &template).await?)?;
    let uncompressed = json!({"spec": {"template": {"spec": {"uncompressedUserData": false}}}});
    denied(
        &g.patch(&g.alice, &template, uncompressed).await?,
        policy,
        &format!("{prefix}spec.template.spec.uncompressedUserData"),
    )
}

fn merge(base: &mut Value, extra: Value) {
    if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), extra) {
        base.extend(extra);
    }
}

#[tokio::test]
async fn the_exempt_controllers_pass_the_guards() -> TestResult {
    let g = Guards::start().await?;
    g.seed(with_status(
        mapi_machine("x-1", "MachineAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    g.seed(with_status(
        mapi_machine("y-1", "MachineAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    let capi = capi_machine("x-1", json!({}), json!({PAUSED: ""}));
    g.seed(capi.clone()).await?;
    for client in [&g.operator, &g.seeder] {
        allowed(
            &g.patch(
                client,
                &capi,
                json!({"spec": {"providerID": "aws:///us-east-1a/i-0abc"}}),
            )
            .await?,
        )?;
    }
    allowed(&g.patch(&g.operator, &capi, annotate(PAUSED, Value::Null)).await?)?;
    allowed(
        &g.create(&g.operator, &capi_machine("y-1", json!({}), json!({})))
            .await?,
    )?;
    let alice = g.patch(&g.alice, &capi, annotate(PAUSED, json!(""))).await?;
    denied(
        &alice,
        CAPI_MACHINE_GUARD,
        &format!("{ANNOTATIONS_WHILE_MAPI}: {PAUSED}"),
    )
}

/// An admin impersonating someone (`kubectl --as`) is checked as that user: as anyone
/// else, refused; as the operator's ServiceAccount, exempt.
#[tokio::test]
async fn an_impersonated_user_is_checked_as_that_user() -> TestResult {
    let g = Guards::start().await?;
    g.seed(with_status(
        mapi_machine("i1", "MachineAPI", json!({}), json!({})),
        json!({"authoritativeAPI": "MachineAPI"}),
    ))
    .await?;
    let capi = capi_machine("i1", json!({}), json!({PAUSED: ""}));
    g.seed(capi.clone()).await?;
    let admin = g.env.client();
    let edit = json!({"spec": {"providerID": "aws:///us-east-1a/i-0abc"}});
    let as_bob = send_as(&admin, Some("bob"), "PATCH", &path_of(&capi), &edit).await?;
    let message = "spec is read-only while the Machine API is authoritative (change the Machine API Machine instead): spec.providerID";
    denied(&as_bob, CAPI_MACHINE_GUARD, message)?;
    denied(
        &send(&admin, "PATCH", &path_of(&capi), &edit).await?,
        CAPI_MACHINE_GUARD,
        message,
    )?;
    allowed(&send_as(&admin, Some(OPERATOR), "PATCH", &path_of(&capi), &edit).await?)
}
