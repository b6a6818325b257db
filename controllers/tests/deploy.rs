//! `deploy/`: every YAML parses, the Deployment is locked down, the RBAC is least
//! privilege, the kustomizations render, and the rendered manifests apply to envtest.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Parser;
use controllers::operator::Settings;
use controllers::operator::cli::{Cli, DEFAULT_LEASE_NAME};
use controllers::operator::samples::deploy_dir;
use controllers::operator::shutdown::ShutdownBudget;
use serde_json::Value;
use std::time::Duration;

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        panic!("cannot read {}", dir.display())
    };
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

fn parse(text: &str, what: &str) -> Vec<Value> {
    match serde_saphyr::from_multiple::<Value>(text) {
        Ok(docs) => docs.into_iter().filter(|d| !d.is_null()).collect(),
        Err(error) => panic!("{what}: {error}"),
    }
}

/// Every document of every YAML file under `deploy/`, with its file.
fn all_documents() -> Vec<(PathBuf, Value)> {
    let mut files = Vec::new();
    yaml_files(&deploy_dir(), &mut files);
    files.sort();
    files
        .into_iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            parse(&text, &path.display().to_string())
                .into_iter()
                .map(move |doc| (path.clone(), doc))
        })
        .collect()
}

fn kubectl(args: &[&str]) -> Result<String, String> {
    let output = Command::new("kubectl")
        .args(args)
        .output()
        .map_err(|e| format!("running kubectl: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// `kubectl kustomize DIR` (offline).
fn kustomize(dir: &str) -> Vec<Value> {
    let path = deploy_dir().join(dir);
    match kubectl(&["kustomize", &path.display().to_string()]) {
        Ok(text) => parse(&text, dir),
        Err(error) => panic!("kubectl kustomize {dir}: {error}"),
    }
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

#[test]
fn every_yaml_under_deploy_parses_and_names_its_kind() {
    let docs = all_documents();
    assert!(docs.len() > 20, "{} documents", docs.len());
    for (path, doc) in &docs {
        assert!(doc["apiVersion"].is_string(), "{}: no apiVersion", path.display());
        assert!(doc["kind"].is_string(), "{}: no kind", path.display());
    }
}

#[test]
fn the_deployment_is_locked_down() {
    let docs = kustomize("");
    let deployments = of_kind(&docs, "Deployment");
    assert_eq!(deployments.len(), 1);
    let deployment = deployments[0];
    assert!(
        deployment["spec"]["replicas"].as_u64() >= Some(2),
        "a standby replica"
    );
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(pod["hostNetwork"], Value::Null);
    let service_account = pod["serviceAccountName"].as_str().unwrap_or_default();
    assert_eq!(
        of_kind(&docs, "ServiceAccount")[0]["metadata"]["name"],
        service_account
    );

    let containers = pod["containers"].as_array().cloned().unwrap_or_default();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    let security = &container["securityContext"];
    assert_eq!(security["runAsNonRoot"], true);
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"], serde_json::json!(["ALL"]));
    assert_eq!(security["capabilities"]["add"], Value::Null);
    assert_ne!(security["privileged"], true);
    assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault");
    for (kind, resource) in [
        ("requests", "cpu"),
        ("requests", "memory"),
        ("limits", "cpu"),
        ("limits", "memory"),
    ] {
        assert!(
            container["resources"][kind][resource].is_string(),
            "no {kind}.{resource}"
        );
    }

    let args: Vec<&str> = container["args"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(args.contains(&"--leader-elect=true"), "{args:?}");
    assert!(args.contains(&"--health-probe-bind-address=:8081"), "{args:?}");
    assert!(args.contains(&"--metrics-bind-address=:8080"), "{args:?}");
    // The whole shutdown (reconciles, Lease release, HTTP drain) fits in the budget, and
    // the budget leaves the kubelet's SIGKILL a margin.
    let cli = match Cli::try_parse_from(std::iter::once("controllers").chain(args.iter().copied())) {
        Ok(cli) => cli,
        Err(error) => panic!("the Deployment's args do not parse: {error}"),
    };
    let settings = Settings::from_cli(&cli);
    let budget = ShutdownBudget::new(settings.shutdown_grace, settings.leader_election.as_ref());
    let termination_grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap_or(30);
    assert!(
        budget.total + Duration::from_secs(5) <= Duration::from_secs(termination_grace),
        "shutdown budget {budget:?} vs terminationGracePeriodSeconds {termination_grace}"
    );
    let port = |name: &str| {
        container["ports"]
            .as_array()
            .and_then(|ports| ports.iter().find(|p| p["name"] == name))
            .and_then(|p| p["containerPort"].as_u64())
    };
    assert_eq!(port("probes"), Some(8081));
    assert_eq!(port("metrics"), Some(8080));
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["livenessProbe"]["httpGet"]["port"], "probes");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(container["readinessProbe"]["httpGet"]["port"], "probes");
    let env = container["env"].as_array().cloned().unwrap_or_default();
    for (name, field) in [
        ("POD_NAME", "metadata.name"),
        ("POD_NAMESPACE", "metadata.namespace"),
    ] {
        assert!(
            env.iter()
                .any(|e| e["name"] == name && e["valueFrom"]["fieldRef"]["fieldPath"] == field),
            "{name} from {field}"
        );
    }
}

#[test]
fn rbac_is_least_privilege() {
    let docs = kustomize("");
    let namespace = of_kind(&docs, "Deployment")[0]["metadata"]["namespace"].clone();
    let machine_groups = [
        "machine.openshift.io",
        "cluster.x-k8s.io",
        "infrastructure.cluster.x-k8s.io",
    ];
    let rules = |doc: &Value| doc["rules"].as_array().cloned().unwrap_or_default();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };

    for role in of_kind(&docs, "ClusterRole")
        .iter()
        .chain(&of_kind(&docs, "Role"))
    {
        for rule in rules(role) {
            assert!(!strings(&rule["verbs"]).iter().any(|v| v == "*"), "{rule}");
            assert!(!strings(&rule["apiGroups"]).iter().any(|g| g == "*"), "{rule}");
        }
    }
    // Cluster-wide: reading CRDs (discovery is every authenticated user's), the one
    // Infrastructure object, and the feature gate's FeatureGate and ClusterVersion.
    for role in of_kind(&docs, "ClusterRole") {
        let rules = rules(role);
        assert_eq!(rules.len(), 4, "{role}");
        assert_eq!(
            strings(&rules[0]["apiGroups"]),
            ["apiextensions.k8s.io"],
            "{role}"
        );
        assert_eq!(
            strings(&rules[0]["resources"]),
            ["customresourcedefinitions"],
            "{role}"
        );
        assert_eq!(strings(&rules[0]["verbs"]), ["get"], "{role}");
        assert_eq!(strings(&rules[1]["apiGroups"]), ["config.openshift.io"], "{role}");
        assert_eq!(strings(&rules[1]["resources"]), ["infrastructures"], "{role}");
        assert_eq!(strings(&rules[1]["resourceNames"]), ["cluster"], "{role}");
        assert_eq!(strings(&rules[1]["verbs"]), ["get"], "{role}");
        // The feature gate's two singletons, watched by name.
        for (rule, resource, name) in [
            (&rules[2], "featuregates", "cluster"),
            (&rules[3], "clusterversions", "version"),
        ] {
            assert_eq!(strings(&rule["apiGroups"]), ["config.openshift.io"], "{role}");
            assert_eq!(strings(&rule["resources"]), [resource], "{role}");
            assert_eq!(strings(&rule["resourceNames"]), [name], "{role}");
            assert_eq!(strings(&rule["verbs"]), ["list", "watch"], "{role}");
        }
    }
    // Machines only in their namespaces; no update (writes are server-side apply and
    // patches), no deletecollection, no RBAC verbs.
    let allowed = ["get", "list", "watch", "create", "patch", "delete"];
    for role in of_kind(&docs, "Role") {
        let role_namespace = role["metadata"]["namespace"].as_str().unwrap_or_default();
        if role_namespace == "default" {
            // Only the Events about the cluster-scoped Infrastructure object.
            assert_eq!(
                rules(role),
                [serde_json::json!({"apiGroups": [""], "resources": ["events"], "verbs": ["create"]})],
                "{role}"
            );
        }
        for rule in rules(role) {
            let groups = strings(&rule["apiGroups"]);
            if groups.iter().any(|g| machine_groups.contains(&g.as_str())) {
                assert!(
                    [common::MAPI_NS, common::CAPI_NS].contains(&role_namespace),
                    "{role_namespace}: {rule}"
                );
                let verbs = strings(&rule["verbs"]);
                assert!(verbs.iter().all(|v| allowed.contains(&v.as_str())), "{rule}");
                // Status subresources are only patched.
                if strings(&rule["resources"]).iter().any(|r| r.ends_with("/status")) {
                    assert_eq!(verbs, ["patch"], "{rule}");
                }
            }
            if groups.iter().any(|g| g == "coordination.k8s.io") && role_namespace == common::CAPI_NS {
                // Only reading upstream's Lease, to refuse to run beside it.
                assert_eq!(
                    strings(&rule["resourceNames"]),
                    ["machine-api-migration-leader"],
                    "{rule}"
                );
                assert_eq!(strings(&rule["verbs"]), ["get"], "{rule}");
            } else if groups.iter().any(|g| g == "coordination.k8s.io") {
                assert_eq!(role["metadata"]["namespace"], namespace, "the Lease role");
                let verbs = strings(&rule["verbs"]);
                if verbs != ["create"] {
                    assert_eq!(strings(&rule["resourceNames"]), [DEFAULT_LEASE_NAME], "{rule}");
                }
            }
        }
    }
    // Every binding grants to the operator's service account, but the one that lets the
    // platform Prometheus find its scrape targets (deploy/monitoring/prometheus-rbac.yaml):
    // read-only, in the operator's namespace.
    for binding in of_kind(&docs, "RoleBinding")
        .iter()
        .chain(&of_kind(&docs, "ClusterRoleBinding"))
    {
        let subjects = binding["subjects"].as_array().cloned().unwrap_or_default();
        assert_eq!(subjects.len(), 1, "{binding}");
        if subjects[0]["name"] == "prometheus-k8s" {
            assert_eq!(binding["kind"], "RoleBinding");
            assert_eq!(binding["metadata"]["namespace"], namespace);
            assert_eq!(subjects[0]["kind"], "ServiceAccount");
            assert_eq!(subjects[0]["namespace"], "openshift-monitoring");
            let role = of_kind(&docs, "Role")
                .into_iter()
                .find(|r| r["metadata"]["name"] == binding["roleRef"]["name"]);
            let Some(role) = role else {
                panic!("no Role for {binding}")
            };
            for rule in rules(role) {
                assert_eq!(strings(&rule["verbs"]), ["get", "list", "watch"], "{rule}");
            }
            continue;
        }
        assert_eq!(subjects[0]["kind"], "ServiceAccount");
        assert_eq!(subjects[0]["namespace"], namespace);
    }
}

#[test]
fn the_dev_overlay_adds_the_two_namespaces_and_every_file_is_used() {
    let base = kustomize("");
    let dev = kustomize("dev");
    let names = |docs: &[Value]| -> Vec<String> {
        of_kind(docs, "Namespace")
            .iter()
            .filter_map(|ns| ns["metadata"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(names(&base).len(), 1);
    for namespace in [common::MAPI_NS, common::CAPI_NS] {
        assert!(
            !names(&base).iter().any(|n| n == namespace),
            "the base must not own {namespace}"
        );
        assert!(
            names(&dev).iter().any(|n| n == namespace),
            "dev lacks {namespace}"
        );
    }
    // deploy/monitoring is the base's only: development clusters have no Prometheus
    // Operator (monitoring.coreos.com) and no openshift-monitoring namespace.
    let monitoring = kustomize("monitoring");
    assert!(!monitoring.is_empty());
    assert_eq!(dev.len(), base.len() - monitoring.len() + 2);
    for doc in &dev {
        let api_version = doc["apiVersion"].as_str().unwrap_or_default();
        assert!(!api_version.starts_with("monitoring.coreos.com/"), "{doc}");
        assert_ne!(doc["kind"], "NetworkPolicy", "{doc}");
    }
    // Every manifest of deploy/operator and deploy/monitoring is part of its kustomization.
    for folder in ["operator", "monitoring"] {
        let mut files = Vec::new();
        yaml_files(&deploy_dir().join(folder), &mut files);
        let kustomization =
            std::fs::read_to_string(deploy_dir().join(folder).join("kustomization.yaml")).unwrap_or_default();
        for file in files {
            let Ok(relative) = file.strip_prefix(deploy_dir().join(folder)) else {
                continue;
            };
            let relative = relative.display().to_string();
            if relative != "kustomization.yaml" {
                assert!(
                    kustomization.contains(&relative),
                    "{folder}/{relative} is not listed"
                );
            }
        }
    }
}

#[test]
fn the_containerfile_builds_a_minimal_non_root_image() {
    let text = std::fs::read_to_string(deploy_dir().join("Containerfile")).unwrap_or_default();
    let last_from = text.lines().rfind(|l| l.starts_with("FROM ")).unwrap_or_default();
    assert!(last_from.contains("distroless"), "{last_from}");
    assert!(
        text.contains("--no-default-features"),
        "the image leaves out --embedded"
    );
    assert!(text.contains("--locked"));
    let user = text.lines().rfind(|l| l.starts_with("USER ")).unwrap_or_default();
    assert!(
        user.trim_start_matches("USER ")
            .split(':')
            .all(|id| id.parse::<u32>().is_ok_and(|id| id != 0)),
        "{user}"
    );
}

/// The image's binary is linked with `controllers/link/hot-functions.txt` first in its
/// code (controllers/build.rs): the list must be what LLD reads, one symbol name per
/// line, each once, made by the refresh script from a run of the image's build (the
/// functions of the crates a restart uses, C ones included).
#[test]
fn the_hot_functions_list_is_a_linker_symbol_order() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("link");
    let list = std::fs::read_to_string(root.join("hot-functions.txt")).unwrap_or_default();
    let names: Vec<&str> = list.lines().collect();
    assert!(names.len() > 1000, "{} functions listed", names.len());
    let unique: std::collections::HashSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "a function is listed twice");
    let symbol_char = |c: char| c.is_ascii_alphanumeric() || "_$.".contains(c);
    for name in &names {
        assert!(name.chars().all(symbol_char), "not a symbol name: {name:?}");
    }
    // Rust's two manglings (the standard library's is v0); the rest is the C and
    // assembly linked in (jemalloc, ring).
    let rust = names
        .iter()
        .filter(|n| n.starts_with("_ZN") || n.starts_with("_R"))
        .count();
    assert!(
        rust * 5 > names.len() * 4,
        "{rust} of {} are Rust symbols",
        names.len()
    );
    for used in [
        "serde_json",
        "sync_core",
        "controllers",
        "lz4_flex",
        "tokio",
        "rustls",
    ] {
        assert!(
            names.iter().any(|n| n.contains(used)),
            "no function of {used} listed"
        );
    }
    let script = std::fs::read_to_string(root.join("refresh-hot-functions.sh")).unwrap_or_default();
    let containerfile = std::fs::read_to_string(deploy_dir().join("Containerfile")).unwrap_or_default();
    let image_build = "cargo build --release -p controllers --no-default-features";
    assert!(
        script.contains(image_build)
            && containerfile.contains("--release -p controllers --no-default-features")
    );
}

/// Applies the rendered manifests with kubectl; envtest does not serve apps/v1, so the
/// Deployment is left out (see `kubectl_apply_k_deploy`). The envtest serves the
/// Prometheus Operator's CRDs, for deploy/monitoring.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rendered_manifests_apply_to_envtest() {
    let env = common::env_with_monitoring_crds().await;
    let kubeconfig = common::kubeconfig(&env).display().to_string();
    let docs: Vec<Value> = kustomize("")
        .into_iter()
        .filter(|d| d["kind"] != "Deployment")
        .collect();
    let manifest = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": docs});
    let dir = kubeconfig.trim_end_matches("kubeconfig").to_owned();
    let file = format!("{dir}manifests.json");
    assert!(std::fs::write(&file, manifest.to_string()).is_ok());
    let applied = kubectl(&[
        "--kubeconfig",
        &kubeconfig,
        "apply",
        "--validate=false",
        "-f",
        &file,
    ]);
    assert!(applied.is_ok(), "{applied:?}");
    // Applying again is a no-op.
    let again = kubectl(&[
        "--kubeconfig",
        &kubeconfig,
        "apply",
        "--validate=false",
        "-f",
        &file,
    ]);
    assert!(
        again.as_deref().is_ok_and(|out| out.contains("unchanged")),
        "{again:?}"
    );
    let listed = kubectl(&[
        "--kubeconfig",
        &kubeconfig,
        "get",
        "roles,rolebindings",
        "-A",
        "-l",
        "app.kubernetes.io/part-of=machine-sync",
        "-o",
        "name",
    ]);
    // The operator's four Roles and bindings, and the platform Prometheus's one.
    assert_eq!(listed.map(|out| out.lines().count()), Ok(10));
}

/// `kubectl apply -k deploy/`, as a user would run it, with kubectl's validation on: the
/// Deployment and its security settings are served back as applied, and so are the
/// monitoring objects (against the Prometheus Operator's own CRD schemas).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_k_deploy() {
    let env = common::env_with_monitoring_crds().await;
    let kubeconfig = common::kubeconfig(&env).display().to_string();
    let deploy = deploy_dir().display().to_string();
    let applied = kubectl(&["--kubeconfig", &kubeconfig, "apply", "-k", &deploy]);
    assert!(applied.is_ok(), "{applied:?}");
    let deployment = kubectl(&[
        "--kubeconfig",
        &kubeconfig,
        "get",
        "deployment",
        "-n",
        "openshift-machine-sync",
        "machine-sync-controllers",
        "-o",
        "json",
    ]);
    let deployment: Value = deployment
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let security = &deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    let monitoring = kubectl(&[
        "--kubeconfig",
        &kubeconfig,
        "get",
        "services,servicemonitors,prometheusrules,networkpolicies",
        "-n",
        "openshift-machine-sync",
        "-o",
        "name",
    ]);
    let mut names: Vec<String> = monitoring
        .as_deref()
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "networkpolicy.networking.k8s.io/allow-egress-to-api-server-and-dns",
            "networkpolicy.networking.k8s.io/allow-metrics-from-openshift-monitoring",
            "networkpolicy.networking.k8s.io/default-deny",
            "prometheusrule.monitoring.coreos.com/machine-sync-controllers",
            "service/machine-sync-controllers-metrics",
            "servicemonitor.monitoring.coreos.com/machine-sync-controllers",
        ],
        "{monitoring:?}"
    );
    let namespace = kubectl(&[
        "--kubeconfig",
        &kubeconfig,
        "get",
        "namespace",
        "openshift-machine-sync",
        "-o",
        "jsonpath={.metadata.labels.openshift\\.io/cluster-monitoring}",
    ]);
    assert_eq!(
        namespace.as_deref(),
        Ok("true"),
        "the platform Prometheus reads the namespace"
    );
}

/// deploy/openshift/ runs the operator in upstream's place: as upstream's ServiceAccount
/// `openshift-cluster-api:capi-controllers` (the identity upstream's admission policies
/// exempt), everything of the operator's namespace moved there, the namespace and the
/// ServiceAccount left to OpenShift, and a default deny that selects the operator's pods
/// only (the namespace's other pods are Cluster API's providers).
#[test]
fn the_openshift_overlay_runs_in_upstream_s_place() {
    let base = kustomize("");
    let docs = kustomize("openshift");
    assert!(
        of_kind(&docs, "Namespace").is_empty(),
        "the namespace is OpenShift's"
    );
    assert!(
        of_kind(&docs, "ServiceAccount").is_empty(),
        "the ServiceAccount is upstream's"
    );
    assert_eq!(
        docs.len(),
        base.len() - 2,
        "every other object of deploy/ is kept"
    );
    for doc in &docs {
        assert_ne!(doc["metadata"]["namespace"], "openshift-machine-sync", "{doc}");
    }
    let deployment = of_kind(&docs, "Deployment")[0];
    assert_eq!(deployment["metadata"]["namespace"], common::CAPI_NS);
    assert_eq!(
        deployment["spec"]["template"]["spec"]["serviceAccountName"],
        "capi-controllers"
    );
    let upstream_identity = serde_json::json!({
        "kind": "ServiceAccount", "name": "capi-controllers", "namespace": common::CAPI_NS
    });
    for binding in of_kind(&docs, "RoleBinding")
        .into_iter()
        .chain(of_kind(&docs, "ClusterRoleBinding"))
    {
        if binding["metadata"]["name"] == "machine-sync-prometheus" {
            continue;
        }
        assert_eq!(
            binding["subjects"],
            serde_json::json!([upstream_identity]),
            "{binding}"
        );
    }
    // The Lease and checkpoints move with the pod's namespace (POD_NAMESPACE).
    let lease_roles: Vec<_> = of_kind(&docs, "Role")
        .into_iter()
        .filter(|r| r["metadata"]["name"] == "machine-sync-controllers-leader-election")
        .collect();
    assert_eq!(lease_roles.len(), 1);
    assert_eq!(lease_roles[0]["metadata"]["namespace"], common::CAPI_NS);
    let deny = of_kind(&docs, "NetworkPolicy")
        .into_iter()
        .find(|p| p["metadata"]["name"] == "default-deny");
    assert_eq!(
        deny.map(|p| p["spec"]["podSelector"].clone()),
        Some(serde_json::json!({"matchLabels": {"app.kubernetes.io/name": "machine-sync-controllers"}}))
    );
    // The policies exempt that identity.
    let policies = of_kind(&docs, "ValidatingAdmissionPolicy");
    assert!(!policies.is_empty());
    for policy in policies {
        let exempt = policy["spec"]["matchConditions"][0]["expression"]
            .as_str()
            .unwrap_or_default();
        assert!(
            exempt.contains("'system:serviceaccount:openshift-cluster-api:capi-controllers'"),
            "{exempt}"
        );
    }
}
