//! deploy/'s RBAC under envtest's RBAC enforcement: the operator, running as its
//! ServiceAccount with exactly those rules, meets no Forbidden in a scenario that uses
//! every permission; and every verb of every rule is needed — without it the same
//! scenario is refused.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, metric, scrape};
use controllers::operator::cli::DEFAULT_LEASE_NAME;
use controllers::operator::leader::LeaseSettings;
use controllers::operator::samples::{SamplePlatform, deploy_dir, load_samples};
use controllers::operator::upstream;
use controllers::operator::{Exit, Operator, Settings};
use envtest::{TestEnv, service_account_user};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use sync_core::Namespaces;
use tokio_util::sync::CancellationToken;

/// The operator's namespace and ServiceAccount (deploy/operator).
const SA_NS: &str = "openshift-machine-sync";
const SA: &str = "machine-sync-controllers";
/// Cluster API's infrastructure group (AWSMachines, their templates).
const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// Who the operator runs as, and where its Lease and checkpoints are.
#[derive(Clone, Copy)]
struct Identity {
    namespace: &'static str,
    name: &'static str,
    /// The kustomization that deploys it (under deploy/).
    kustomization: &'static str,
}

/// deploy/: the operator's own ServiceAccount and namespace.
const OPERATOR: Identity = Identity {
    namespace: SA_NS,
    name: SA,
    kustomization: "",
};

/// deploy/openshift/: in upstream's place, as upstream's ServiceAccount.
const IN_UPSTREAM_PLACE: Identity = Identity {
    namespace: CAPI_NS,
    name: "capi-controllers",
    kustomization: "openshift",
};

/// The RBAC objects of `kubectl kustomize deploy/` granted to the operator.
fn rbac() -> Vec<Value> {
    rbac_of(OPERATOR)
}

/// The RBAC objects of `identity`'s kustomization granted to it.
fn rbac_of(identity: Identity) -> Vec<Value> {
    let path = deploy_dir().join(identity.kustomization).display().to_string();
    let output = std::process::Command::new("kubectl")
        .args(["kustomize", &path])
        .output();
    let text = match output {
        Ok(output) if output.status.success() => String::from_utf8_lossy(&output.stdout).into_owned(),
        other => panic!("kubectl kustomize deploy/: {other:?}"),
    };
    let docs: Vec<Value> = match serde_saphyr::from_multiple(&text) {
        Ok(docs) => docs,
        Err(error) => panic!("{error}"),
    };
    let rbac: Vec<Value> = docs
        .into_iter()
        .filter(|d| {
            d["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("rbac.authorization.k8s.io/"))
        })
        .collect();
    // The operator's own: its bindings and the roles they grant (deploy/ also grants
    // Prometheus what it needs to scrape the operator, which is not the operator's).
    let ours = |binding: &Value| {
        binding["subjects"].as_array().is_some_and(|subjects| {
            subjects.iter().any(|s| {
                s["kind"] == "ServiceAccount"
                    && s["name"] == identity.name
                    && s["namespace"] == identity.namespace
            })
        })
    };
    let granted: Vec<(Value, Value, Value)> = rbac
        .iter()
        .filter(|d| d["kind"].as_str().is_some_and(|k| k.ends_with("Binding")) && ours(d))
        .map(|b| {
            (
                b["roleRef"]["kind"].clone(),
                b["roleRef"]["name"].clone(),
                b["metadata"]["namespace"].clone(),
            )
        })
        .collect();
    rbac.into_iter()
        .filter(|d| match d["kind"].as_str() {
            Some("Role" | "ClusterRole") => granted.iter().any(|(kind, name, namespace)| {
                *kind == d["kind"]
                    && *name == d["metadata"]["name"]
                    && (kind == "ClusterRole" || *namespace == d["metadata"]["namespace"])
            }),
            _ => ours(d),
        })
        .collect()
}

/// Grants this scenario cannot need, each shown needed by the end-to-end suite instead,
/// which runs as the operator's ServiceAccount under deploy/'s RBAC (any Forbidden fails
/// a scenario there):
/// * `create` of Events in `default` (about the cluster-scoped Infrastructure) is needed on
///   a platform without a conversion only: `an_unsupported_platform_is_reported_and_left_alone`;
/// * `get` on infrastructure kinds serves `SyncContext::infra_object` (tests/tests/sync.rs
///   `s17_reading_a_whole_infrastructure_object_needs_get`);
/// * `get` on CAPI MachineSets reads a Machine's owner the MachineSet controller's cache
///   has not seen yet, which this scenario meets or not depending on which list comes
///   first: `an_owner_set_the_cache_has_not_seen_is_read_with_get` below;
/// * this scenario deletes nothing and runs no providers, so tests/tests/real_sync.rs proves
///   the rest: `delete` of CAPI Machines and of MAPI Machines (the two Machine deletion
///   scenarios), of CAPI and MAPI MachineSets and of InfraMachines and their templates
///   (`deleting_either_side_of_a_machine_set_deletes_the_other_and_the_templates`,
///   `an_infra_machine_spec_change_recreates_it`), and `patch` of CAPI Machines' status (the
///   status copy of a Running Machine).
fn proven_elsewhere(docs: &[Value], (d, r, verb): &Grant) -> bool {
    let rule = &docs[*d]["rules"][*r];
    let group = &rule["apiGroups"][0];
    let resource = rule["resources"][0].as_str().unwrap_or_default();
    let namespace = &docs[*d]["metadata"]["namespace"];
    let deletes_the_pair = verb == "delete"
        && ((namespace == "openshift-cluster-api"
            && (group == "cluster.x-k8s.io" || group == "infrastructure.cluster.x-k8s.io"))
            || (namespace == "openshift-machine-api" && group == "machine.openshift.io"));
    // The Event about an unsupported platform: its own test below.
    let unsupported_platform_event = namespace == "default" && group == "" && resource == "events";
    (verb == "get" && group == "infrastructure.cluster.x-k8s.io")
        || is_capi_set_get(&docs[*d], rule, verb)
        || unsupported_platform_event
        || deletes_the_pair
        || (group == "cluster.x-k8s.io"
            && namespace == "openshift-cluster-api"
            && verb == "patch"
            && resource == "machines/status")
}

/// `get` on CAPI MachineSets in the CAPI namespace.
fn is_capi_set_get(doc: &Value, rule: &Value, verb: &str) -> bool {
    verb == "get"
        && doc["metadata"]["namespace"] == CAPI_NS
        && rule["apiGroups"][0] == "cluster.x-k8s.io"
        && rule["resources"]
            .as_array()
            .is_some_and(|resources| resources.iter().any(|r| r == "machinesets"))
}

/// One verb of one rule: (document, rule, verb).
type Grant = (usize, usize, String);

fn grants(docs: &[Value]) -> Vec<Grant> {
    let mut grants = Vec::new();
    for (d, doc) in docs.iter().enumerate() {
        for (r, rule) in doc["rules"].as_array().into_iter().flatten().enumerate() {
            for verb in rule["verbs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                grants.push((d, r, verb.to_owned()));
            }
        }
    }
    grants
}

fn describe(docs: &[Value], (d, r, verb): &Grant) -> String {
    let doc = &docs[*d];
    format!(
        "{} {}/{} rule {}: {verb} on {}",
        doc["kind"].as_str().unwrap_or_default(),
        doc["metadata"]["namespace"].as_str().unwrap_or("-"),
        doc["metadata"]["name"].as_str().unwrap_or_default(),
        r,
        doc["rules"][*r]["resources"]
    )
}

fn without(docs: &[Value], (d, r, verb): &Grant) -> Vec<Value> {
    let mut docs = docs.to_vec();
    if let Some(verbs) = docs[*d]["rules"][*r]["verbs"].as_array_mut() {
        verbs.retain(|v| v != verb.as_str());
    }
    docs
}

async fn apply(client: &Client, object: &Value) {
    let object: DynamicObject = match serde_json::from_value(object.clone()) {
        Ok(object) => object,
        Err(error) => panic!("{error}: {object}"),
    };
    let Some(types) = object.types.clone() else {
        panic!("no type")
    };
    let Ok(gvk) = GroupVersionKind::try_from(&types) else {
        panic!("bad apiVersion {}", types.api_version)
    };
    let (resource, capabilities) = match kube::discovery::pinned_kind(client, &gvk).await {
        Ok(found) => found,
        Err(error) => panic!("{gvk:?}: {error}"),
    };
    let api: Api<DynamicObject> = match (capabilities.scope, object.namespace()) {
        (Scope::Namespaced, Some(namespace)) => Api::namespaced_with(client.clone(), &namespace, &resource),
        _ => Api::all_with(client.clone(), &resource),
    };
    if let Err(error) = api.create(&PostParams::default(), &object).await {
        panic!("creating {} {}: {error}", types.kind, object.name_any());
    }
}

/// An envtest with the CRDs, the namespaces, the operator's ServiceAccount and the samples.
async fn env_with_samples(identity: Identity) -> TestEnv {
    let deploy = deploy_dir();
    let mut builder = TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .namespace(MAPI_NS)
        .namespace(CAPI_NS);
    if ![MAPI_NS, CAPI_NS].contains(&identity.namespace) {
        builder = builder.namespace(identity.namespace);
    }
    let env = builder
        .service_account(identity.namespace, identity.name)
        .start()
        .await;
    let env = match env {
        Ok(env) => env,
        Err(error) => panic!("envtest: {error}"),
    };
    if let Err(error) = load_samples(
        &env.client(),
        &deploy.join("examples"),
        SamplePlatform::Aws,
        &|ns| ns.to_owned(),
    )
    .await
    {
        panic!("samples: {error}");
    }
    env
}

/// The operator's settings in these scenarios.
fn settings(identity: Identity, leader_election: Option<LeaseSettings>) -> Settings {
    Settings {
        namespaces: Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        },
        concurrency: 2,
        replica: "rbac-test".into(),
        leader_election,
        metrics_address: Some(SocketAddr::from(([127, 0, 0, 1], 0))),
        probe_address: None,
        // Room for the Lease release on a loaded machine (the budget itself: tests/shutdown.rs).
        shutdown_grace: Duration::from_secs(10),
        migration: controllers::migration::MigrationConfig::default(),
        checkpoint_namespace: Some(identity.namespace.into()),
        gate: controllers::feature_gate::GateSource::Cluster,
        release_version: None,
        // What the binary checks before starting: upstream's Lease (get, by name).
        upstream_lease: Some(upstream::UPSTREAM_LEASE.into()),
        platforms: controllers::operator::run::default_platforms(),
    }
}

/// What the scenario saw.
struct Run {
    denials: Vec<String>,
    completed: bool,
    /// The Lease's holder after the operator stopped.
    holder: Option<String>,
    /// `reportingInstance` of every Event in the two namespaces.
    instances: Vec<Option<String>>,
}

/// Runs the operator as its ServiceAccount with `rbac` applied through a scenario that
/// needs every permission: all samples reconciled (list/watch of every kind, the
/// infrastructure kinds resolved through their CRDs), a Warning Event created and then
/// patched in the MAPI namespace (unknown authoritativeAPI, reconciled twice), the same
/// in the CAPI namespace (an unresolvable infrastructure kind, referenced twice), the
/// Lease created, renewed and released. Stops early at the first denial when `until_denied`.
async fn scenario(identity: Identity, rbac: &[Value], until_denied: bool) -> Run {
    let env = env_with_samples(identity).await;
    let admin = env.client();
    let extra = [
        json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
               "metadata": {"name": "unknown-authority", "namespace": MAPI_NS}, "spec": {}}),
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
               "metadata": {"name": "unresolvable", "namespace": CAPI_NS},
               "spec": {"clusterName": "sample", "bootstrap": {"dataSecretName": "x"},
                        "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io",
                                              "kind": "NoSuchMachine", "name": "unresolvable"}}}),
    ];
    for object in &extra {
        apply(&admin, object).await;
    }
    let mapi_machines: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        MAPI_NS,
        &kube::core::ApiResource::from_gvk(&GroupVersionKind::gvk(
            "machine.openshift.io",
            "v1beta1",
            "Machine",
        )),
    );
    // The CRD's enum refuses an unknown status.authoritativeAPI; a cluster whose CRD does
    // not pin the values (which the engine supports) lets it through: drop the enum.
    let crds: Api<DynamicObject> = Api::all_with(
        admin.clone(),
        &kube::core::ApiResource::from_gvk(&GroupVersionKind::gvk(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
        )),
    );
    let unpin = Patch::Json::<()>(
        match serde_json::from_value(json!([
            {"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/authoritativeAPI/enum"},
            {"op": "remove", "path": "/spec/versions/0/schema/openAPIV3Schema/properties/status/properties/authoritativeAPI/x-kubernetes-validations"},
        ])) {
            Ok(patch) => patch,
            Err(error) => panic!("{error}"),
        },
    );
    if let Err(error) = crds
        .patch("machines.machine.openshift.io", &PatchParams::default(), &unpin)
        .await
    {
        panic!("unpinning status.authoritativeAPI: {error}");
    }
    let unknown = Patch::Merge(json!({"status": {"authoritativeAPI": "Kubelet"}}));
    if let Err(error) = mapi_machines
        .patch_status("unknown-authority", &PatchParams::default(), &unknown)
        .await
    {
        panic!("setting an unknown authoritativeAPI: {error}");
    }
    for object in rbac {
        apply(&admin, object).await;
    }

    let client = match env
        .client_as(&service_account_user(identity.namespace, identity.name))
        .await
    {
        Ok(client) => client,
        Err(error) => panic!("{error}"),
    };
    let settings = settings(
        identity,
        Some(LeaseSettings {
            namespace: identity.namespace.into(),
            name: DEFAULT_LEASE_NAME.into(),
            identity: controllers::operator::leader::identity("rbac-test"),
            lease_duration: Duration::from_secs(4),
            renew_deadline: Duration::from_secs(3),
            retry_period: Duration::from_millis(300),
        }),
    );
    let operator = match Operator::start(client, settings, CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    let Some(metrics) = operator.metrics_address() else {
        panic!("no metrics")
    };

    let events = |namespace: &str| Api::<Event>::namespaced(admin.clone(), namespace);
    let (mapi_events, capi_events) = (events(MAPI_NS), events(CAPI_NS));
    let event_count = |events: Api<Event>, reason: &'static str| async move {
        events
            .list(&ListParams::default())
            .await
            .map(|list| {
                list.items
                    .iter()
                    .filter(|e| e.reason.as_deref() == Some(reason))
                    .map(|e| e.series.as_ref().map_or(1, |s| s.count))
                    .max()
                    .unwrap_or(0)
            })
            .unwrap_or(0)
    };
    let capi_machines: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        CAPI_NS,
        &kube::core::ApiResource::from_gvk(&GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Machine")),
    );
    let dynamic = |group: &str, version: &str, kind: &str| {
        Api::<DynamicObject>::namespaced_with(
            admin.clone(),
            CAPI_NS,
            &kube::core::ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)),
        )
    };
    let capi_sets = dynamic("cluster.x-k8s.io", "v1beta2", "MachineSet");
    let aws_machines = dynamic(INFRA_GROUP, "v1beta2", "AWSMachine");
    let aws_templates = dynamic(INFRA_GROUP, "v1beta2", "AWSMachineTemplate");
    // The AWS samples' mirrors: the Machine and its AWSMachine, the MachineSet and its
    // hashed template (the MachineSet has no owner, so the sync reads the CAPI Cluster).
    let mirrored = || async {
        let exists = |api: Api<DynamicObject>, name: &'static str| async move {
            api.get_opt(name).await.ok().flatten().is_some()
        };
        let templated = aws_templates
            .list(&ListParams::default())
            .await
            .is_ok_and(|list| {
                list.items
                    .iter()
                    .any(|t| t.name_any().starts_with("aws-workers-"))
            });
        templated
            && exists(capi_machines.clone(), "aws-workers-1").await
            && exists(aws_machines.clone(), "aws-workers-1").await
            && exists(capi_sets.clone(), "aws-workers").await
    };
    let denied = || !env.denials().is_empty();
    let (mut touched, mut retargeted) = (false, false);
    let completed = tokio::time::timeout(TIMEOUT, async {
        loop {
            if until_denied && denied() {
                return false;
            }
            let text = scrape(metrics).await;
            let reconciled = metric(&text, "sync_reconcile_total", &[("controller", "machine-sync")]) >= 6.0
                && metric(
                    &text,
                    "sync_reconcile_total",
                    &[("controller", "machine-set-sync")],
                ) >= 3.0
                && metric(&text, "sync_infrastructure_watches", &[("state", "watching")]) >= 4.0
                && metric(&text, "sync_infrastructure_watches", &[("state", "failed")]) >= 1.0;
            let capi_event = event_count(capi_events.clone(), "InfrastructureKindUnavailable").await;
            if capi_event == 1 && !retargeted {
                // Another reference to the same unavailable kind: the same Warning again,
                // which the recorder patches into a series.
                let retarget =
                    Patch::Merge(json!({"spec": {"infrastructureRef": {"name": "unresolvable-2"}}}));
                let _ = capi_machines
                    .patch("unresolvable", &PatchParams::default(), &retarget)
                    .await;
                retargeted = true;
            }
            let mapi_event = event_count(mapi_events.clone(), "UnknownAuthoritativeAPI").await;
            if mapi_event == 1 && !touched {
                // Reconcile it again: the recorder patches the event into a series.
                let label = Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}}));
                let _ = mapi_machines
                    .patch("unknown-authority", &PatchParams::default(), &label)
                    .await;
                touched = true;
            }
            if reconciled && capi_event >= 2 && mapi_event >= 2 && mirrored().await {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or(false);
    operator.shutdown();
    let exit = operator.wait().await;
    assert!(matches!(exit, Ok(Exit::Shutdown)), "{exit:?}");
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(admin.clone(), identity.namespace);
    let holder = leases
        .get_opt(DEFAULT_LEASE_NAME)
        .await
        .ok()
        .flatten()
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity);
    let mut instances = Vec::new();
    for namespace in [MAPI_NS, CAPI_NS] {
        if let Ok(list) = events(namespace).list(&ListParams::default()).await {
            instances.extend(list.items.into_iter().map(|e| e.reporting_instance));
        }
    }
    Run {
        denials: env.denials().into_iter().map(|d| d.message).collect(),
        completed,
        holder,
        instances,
    }
}

/// deploy/openshift/ grants the same to upstream's ServiceAccount in openshift-cluster-api,
/// where the operator keeps its Lease and checkpoints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_upstream_s_place_the_operator_meets_no_forbidden_as_capi_controllers() {
    let run = scenario(IN_UPSTREAM_PLACE, &rbac_of(IN_UPSTREAM_PLACE), false).await;
    assert!(run.denials.is_empty(), "Forbidden: {:#?}", run.denials);
    assert!(run.completed, "the scenario did not complete");
    assert_eq!(run.holder, None, "the lease was not released");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_meets_no_forbidden_as_its_service_account() {
    let run = scenario(OPERATOR, &rbac(), false).await;
    assert!(run.denials.is_empty(), "Forbidden: {:#?}", run.denials);
    assert!(run.completed, "the scenario did not complete");
    assert_eq!(run.holder, None, "the lease was not released");
    // Events name the replica that published them.
    assert!(!run.instances.is_empty());
    assert!(
        run.instances.iter().all(|i| i.as_deref() == Some("rbac-test")),
        "{:?}",
        run.instances
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_verb_of_every_rule_is_needed() {
    let docs = rbac();
    let grants = grants(&docs);
    assert!(grants.len() >= 10, "{grants:?}");
    let mut unneeded = Vec::new();
    for grant in &grants {
        if proven_elsewhere(&docs, grant) {
            continue;
        }
        let run = scenario(OPERATOR, &without(&docs, grant), true).await;
        let verb = &grant.2;
        let refused = run
            .denials
            .iter()
            .any(|message| message.contains(&format!("cannot {verb} resource")));
        if !refused {
            unneeded.push(format!("{} (denials: {:?})", describe(&docs, grant), run.denials));
        }
    }
    assert!(
        unneeded.is_empty(),
        "grants no scenario needs:\n{}",
        unneeded.join("\n")
    );
}

/// On a platform without a conversion the operator, as its ServiceAccount, says so with a
/// Warning Event on the Infrastructure (in `default`, as for every cluster-scoped object)
/// and the metric, and leaves the Machines alone; without the Events rule in `default`
/// that Event is Forbidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unsupported_platform_is_reported_and_left_alone() {
    let docs = rbac();
    let run = unsupported_platform(&docs).await;
    assert!(run.denials.is_empty(), "Forbidden: {:#?}", run.denials);
    assert!(
        run.completed,
        "no UnsupportedPlatform Event, or the metric did not say 0"
    );

    let events_rule = grants(&docs)
        .into_iter()
        .find(|(d, _, verb)| docs[*d]["metadata"]["namespace"] == "default" && verb == "create");
    let Some(events_rule) = events_rule else {
        panic!("no rule for Events in default")
    };
    let run = unsupported_platform(&without(&docs, &events_rule)).await;
    assert!(
        run.denials.iter().any(|m| m
            .contains("cannot create resource \"events\" in API group \"\" in the namespace \"default\"")),
        "{:?}",
        run.denials
    );
}

/// Runs the operator as its ServiceAccount under `rbac` on a GCP cluster with the samples
/// until the Event and the metric say the platform is unsupported (or a denial).
async fn unsupported_platform(rbac: &[Value]) -> Run {
    let env = env_with_samples(OPERATOR).await;
    let admin = env.client();
    let infrastructures: Api<sync_core::api::Infrastructure> = Api::all(admin.clone());
    let gcp =
        Patch::Merge(json!({"status": {"platform": "GCP", "platformStatus": {"type": "GCP", "aws": null}}}));
    if let Err(error) = infrastructures
        .patch_status("cluster", &PatchParams::default(), &gcp)
        .await
    {
        panic!("making the cluster GCP: {error}");
    }
    for object in rbac {
        apply(&admin, object).await;
    }
    let client = match env.client_as(&service_account_user(SA_NS, SA)).await {
        Ok(client) => client,
        Err(error) => panic!("{error}"),
    };
    let settings = settings(OPERATOR, None);
    let operator = match Operator::start(client, settings, CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    let Some(metrics) = operator.metrics_address() else {
        panic!("no metrics")
    };
    let events = Api::<Event>::namespaced(admin.clone(), "default");
    let mapi_machines: Api<sync_core::api::mapi::Machine> = Api::namespaced(admin.clone(), MAPI_NS);
    let completed = tokio::time::timeout(TIMEOUT, async {
        loop {
            if !env.denials().is_empty() {
                return false;
            }
            let reported = events.list(&ListParams::default()).await.is_ok_and(|list| {
                list.items.iter().any(|e| {
                    e.reason.as_deref() == Some("UnsupportedPlatform")
                        && e.type_.as_deref() == Some("Warning")
                        && e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("Infrastructure")
                        && e.reporting_instance.as_deref() == Some("rbac-test")
                })
            });
            let text = scrape(metrics).await;
            let unsupported = metric(&text, "sync_platform_supported", &[("platform", "other")]) == 0.0
                && text.contains("sync_platform_supported{platform=\"other\"}");
            let reconciled = metric(&text, "sync_reconcile_total", &[("controller", "machine-sync")]) >= 5.0;
            if reported && unsupported && reconciled {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .unwrap_or(false);
    // Left alone: the AWS sample got no finalizer and no mirror.
    if completed {
        let machine = mapi_machines.get("aws-workers-1").await;
        assert!(
            machine.is_ok_and(|m| m.metadata.finalizers.unwrap_or_default().is_empty()),
            "the sync touched a Machine on an unsupported platform"
        );
        let capi = Api::<sync_core::api::capi::Machine>::namespaced(admin.clone(), CAPI_NS);
        assert!(matches!(capi.get_opt("aws-workers-1").await, Ok(None)));
    }
    operator.shutdown();
    let exit = operator.wait().await;
    assert!(matches!(exit, Ok(Exit::Shutdown)), "{exit:?}");
    Run {
        denials: env.denials().into_iter().map(|d| d.message).collect(),
        completed,
        holder: None,
        instances: Vec::new(),
    }
}

/// The owner of a mirrored Machine is read from the MachineSet controller's cache; a set
/// the cache has not seen yet (its list still running, or its watch behind) is read with
/// `get` rather than taken as missing. As the operator's ServiceAccount, deploy/'s rule on
/// CAPI MachineSets allows that read, and without its `get` the read is Forbidden.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_set_the_cache_has_not_seen_is_read_with_get() -> Result<(), Box<dyn std::error::Error>> {
    let docs = rbac();
    let env = TestEnv::builder()
        .crd_dir(deploy_dir().join("crds"))
        .namespace(MAPI_NS)
        .namespace(CAPI_NS)
        .namespace(SA_NS)
        .service_account(SA_NS, SA)
        .start()
        .await?;
    let admin = env.client();
    apply(
        &admin,
        &json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
                "metadata": {"name": "workers", "namespace": CAPI_NS},
                "spec": {"clusterName": "sample", "selector": {}, "template": {"spec": {
                    "clusterName": "sample", "bootstrap": {"dataSecretName": "x"},
                    "infrastructureRef": {"apiGroup": INFRA_GROUP, "kind": "AWSMachineTemplate", "name": "workers"}}}}}),
    )
    .await;
    let Some(grant) = grants(&docs)
        .into_iter()
        .find(|(d, r, verb)| is_capi_set_get(&docs[*d], &docs[*d]["rules"][*r], verb))
    else {
        panic!("no rule grants get on CAPI MachineSets")
    };
    for object in without(&docs, &grant) {
        apply(&admin, &object).await;
    }
    let client = env.client_as(&service_account_user(SA_NS, SA)).await?;
    let empty = sync_core::store::Store::<sync_core::api::capi::MachineSet>::empty();
    let (waiting, _woken) = sync_core::wakeups::Wakeups::new();
    let sets = controllers::sync::owners::CapiSets {
        api: Api::namespaced(client, CAPI_NS),
        namespace: CAPI_NS.into(),
        mirrored: Some(controllers::sync::owners::MirroredSets {
            cache: empty,
            waiting,
        }),
    };

    let refused = sets.get("workers").await;
    assert!(
        matches!(&refused, Err(kube::Error::Api(status)) if status.code == 403),
        "{refused:?}"
    );
    assert!(
        env.denials()
            .iter()
            .any(|d| d.message.contains("cannot get resource \"machinesets\"")),
        "{:?}",
        env.denials()
    );

    // deploy/'s rules as they are: the same read succeeds.
    let roles: Api<k8s_openapi::api::rbac::v1::Role> = Api::namespaced(admin.clone(), CAPI_NS);
    let rules = Patch::Merge(json!({"rules": docs[grant.0]["rules"]}));
    let name = docs[grant.0]["metadata"]["name"].as_str().unwrap_or_default();
    roles.patch(name, &PatchParams::default(), &rules).await?;
    let read = sets.get("workers").await?;
    assert_eq!(read.map(|set| set.name_any()), Some("workers".to_owned()));
    Ok(())
}

/// On an OpenStack cluster (the OpenStack samples, CAPO's kinds) the operator, as its
/// ServiceAccount with the same RBAC, mirrors the MachineAPI Machine and MachineSet to
/// their `OpenStackMachine` and hashed `OpenStackMachineTemplate` and meets no Forbidden: the CAPI-namespace rule over the infrastructure group
/// covers another platform's kinds without a change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_openstack_the_operator_meets_no_forbidden_as_its_service_account() {
    let deploy = deploy_dir();
    let examples = deploy.join("examples");
    let mut builder = TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(examples.join("crds"))
        .namespace(MAPI_NS)
        .namespace(CAPI_NS)
        .namespace(SA_NS);
    if let Some(dir) = SamplePlatform::OpenStack.crd_dir(&examples) {
        builder = builder.crd_dir(dir);
    }
    let env = builder
        .service_account(SA_NS, SA)
        .start()
        .await
        .unwrap_or_else(|e| panic!("envtest: {e}"));
    let admin = env.client();
    let loaded = load_samples(&admin, &examples, SamplePlatform::OpenStack, &|ns| ns.to_owned()).await;
    assert!(loaded.is_ok(), "samples: {loaded:?}");
    for object in rbac() {
        apply(&admin, &object).await;
    }
    let client = env
        .client_as(&service_account_user(SA_NS, SA))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let operator = Operator::start(client, settings(OPERATOR, None), CancellationToken::new())
        .await
        .unwrap_or_else(|e| panic!("starting the operator: {e}"));
    let dynamic = |group: &str, version: &str, kind: &str, namespace: &str| {
        Api::<DynamicObject>::namespaced_with(
            admin.clone(),
            namespace,
            &kube::core::ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)),
        )
    };
    let infra_machines = dynamic(INFRA_GROUP, "v1beta1", "OpenStackMachine", CAPI_NS);
    let templates = dynamic(INFRA_GROUP, "v1beta1", "OpenStackMachineTemplate", CAPI_NS);
    let done = tokio::time::timeout(TIMEOUT, async {
        loop {
            let mirrored = infra_machines
                .get_opt("openstack-workers-1")
                .await
                .ok()
                .flatten()
                .is_some();
            let templated = templates.list(&ListParams::default()).await.is_ok_and(|l| {
                l.items
                    .iter()
                    .any(|t| t.name_any().starts_with("openstack-workers-"))
            });
            if (mirrored && templated) || !env.denials().is_empty() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
    let denials = env.denials();
    assert!(denials.is_empty(), "Forbidden: {denials:#?}");
    assert!(
        done.is_ok(),
        "the OpenStack samples were not mirrored and migrated"
    );
}
