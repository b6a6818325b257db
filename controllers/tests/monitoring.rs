//! `deploy/monitoring/`: the PrometheusRule's alerts name only metrics, labels and label
//! values the running operator exports (their expressions parsed with `promql-parser`,
//! every vector selector checked against real scrapes), each alert carries what OpenShift
//! expects of one, and the Service, ServiceMonitor and NetworkPolicies point at the
//! operator's pods and ports.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::process::Command;

use common::{CAPI_NS, MAPI_NS, TIMEOUT, http_get, wait_for};
use controllers::feature_gate::GateSource;
use controllers::operator::samples::deploy_dir;
use controllers::operator::{Exit, Operator, Settings};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use promql_parser::label::{MatchOp, Matcher};
use promql_parser::parser::{self, Expr, LabelModifier};
use serde_json::Value;
use sync_core::Namespaces;
use tokio_util::sync::CancellationToken;

/// Labels Prometheus adds to every series of a ServiceMonitor target (not exported by
/// the operator, but usable in `by` and `on`).
const TARGET_LABELS: &[&str] = &[
    "namespace",
    "pod",
    "service",
    "endpoint",
    "container",
    "job",
    "instance",
];

/// The alerts deploy/monitoring/prometheusrule.yaml must define.
const ALERTS: &[&str] = &[
    "MachineSyncMigrationStalled",
    "MachineSyncObjectsNotSynchronized",
    "MachineSyncPlatformUnsupported",
    "MachineSyncFeatureGateOffWithRequests",
];

/// `kubectl kustomize deploy/`: what `kubectl apply -k deploy/` installs.
fn rendered() -> Vec<Value> {
    let output = Command::new("kubectl")
        .arg("kustomize")
        .arg(deploy_dir())
        .output();
    let output = match output {
        Ok(output) if output.status.success() => output,
        Ok(output) => panic!(
            "kubectl kustomize deploy/: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
        Err(error) => panic!("running kubectl: {error}"),
    };
    match serde_saphyr::from_multiple::<Value>(&String::from_utf8_lossy(&output.stdout)) {
        Ok(docs) => docs.into_iter().filter(|d| !d.is_null()).collect(),
        Err(error) => panic!("kubectl kustomize deploy/: {error}"),
    }
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found = of_kind(docs, kind);
    assert_eq!(found.len(), 1, "one {kind}");
    found[0]
}

/// Every alerting rule of the rendered PrometheusRules.
fn alert_rules(docs: &[Value]) -> Vec<Value> {
    of_kind(docs, "PrometheusRule")
        .into_iter()
        .flat_map(|rule| rule["spec"]["groups"].as_array().cloned().unwrap_or_default())
        .flat_map(|group| group["rules"].as_array().cloned().unwrap_or_default())
        .filter(|rule| rule["alert"].is_string())
        .collect()
}

/// A vector selector of an alert expression.
#[derive(Debug)]
struct Selector {
    metric: String,
    matchers: Vec<Matcher>,
}

/// What an expression reads: its vector selectors, the labels it groups or matches on,
/// and whether it looks at a range (a range vector or a subquery).
#[derive(Debug, Default)]
struct Reads {
    selectors: Vec<Selector>,
    grouping: BTreeSet<String>,
    range: bool,
}

fn modifier_labels(modifier: Option<&LabelModifier>, out: &mut BTreeSet<String>) {
    if let Some(modifier) = modifier {
        out.extend(modifier.labels().labels.iter().cloned());
    }
}

fn walk(expr: &Expr, reads: &mut Reads) {
    match expr {
        Expr::VectorSelector(vs) => {
            let named = vs.matchers.matchers.iter().find(|m| m.name == "__name__");
            let metric = vs
                .name
                .clone()
                .or_else(|| named.map(|m| m.value.clone()))
                .unwrap_or_default();
            assert!(
                vs.matchers.or_matchers.is_empty(),
                "{expr}: `or` inside a selector is not checked"
            );
            let matchers = vs
                .matchers
                .matchers
                .iter()
                .filter(|m| m.name != "__name__")
                .cloned()
                .collect();
            reads.selectors.push(Selector { metric, matchers });
        }
        Expr::MatrixSelector(ms) => {
            reads.range = true;
            walk(&Expr::VectorSelector(ms.vs.clone()), reads);
        }
        Expr::Subquery(sq) => {
            reads.range = true;
            walk(&sq.expr, reads);
        }
        Expr::Aggregate(agg) => {
            modifier_labels(agg.modifier.as_ref(), &mut reads.grouping);
            walk(&agg.expr, reads);
            if let Some(param) = &agg.param {
                walk(param, reads);
            }
        }
        Expr::Binary(binary) => {
            if let Some(modifier) = &binary.modifier {
                modifier_labels(modifier.matching.as_ref(), &mut reads.grouping);
            }
            walk(&binary.lhs, reads);
            walk(&binary.rhs, reads);
        }
        Expr::Unary(unary) => walk(&unary.expr, reads),
        Expr::Paren(paren) => walk(&paren.expr, reads),
        Expr::Call(call) => {
            for arg in &call.args.args {
                walk(arg, reads);
            }
        }
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) => {}
        Expr::Extension(_) => panic!("{expr}: the parser makes no extension nodes"),
    }
}

fn reads(expr: &str) -> Reads {
    let parsed = match parser::parse(expr) {
        Ok(parsed) => parsed,
        Err(error) => panic!("{expr}: {error}"),
    };
    let mut reads = Reads::default();
    walk(&parsed, &mut reads);
    assert!(!reads.selectors.is_empty(), "{expr} reads no metric");
    reads
}

/// One sample line: name, labels and value.
type Sample = (String, BTreeMap<String, String>, f64);

/// One scrape: the `# TYPE` of each family, and every sample.
#[derive(Debug, Default)]
struct Scrape {
    types: BTreeMap<String, String>,
    samples: Vec<Sample>,
}

impl Scrape {
    /// The sum of the samples of `name` having every label of `labels` (`None`: no such
    /// series).
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let values: Vec<f64> = self
            .samples
            .iter()
            .filter(|(sample, have, _)| {
                sample == name
                    && labels
                        .iter()
                        .all(|(k, v)| have.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, _, value)| *value)
            .collect();
        (!values.is_empty()).then(|| values.iter().sum())
    }
}

/// The labels of a sample line (`{a="x",b="y\"z"}`), unescaped.
fn parse_labels(text: &str) -> Option<(BTreeMap<String, String>, &str)> {
    let mut labels = BTreeMap::new();
    let mut rest = text.strip_prefix('{')?;
    loop {
        rest = rest.trim_start_matches(',');
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after));
        }
        let (name, after) = rest.split_once("=\"")?;
        let mut value = String::new();
        let mut chars = after.char_indices();
        let end = loop {
            let (i, c) = chars.next()?;
            match c {
                '\\' => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    other => value.push(other),
                },
                '"' => break i,
                c => value.push(c),
            }
        };
        labels.insert(name.to_owned(), value);
        rest = &after[end + 1..];
    }
}

fn parse_scrape(text: &str) -> Scrape {
    let mut scrape = Scrape::default();
    for line in text.lines() {
        if let Some(declared) = line.strip_prefix("# TYPE ") {
            let mut words = declared.split_whitespace();
            if let (Some(name), Some(kind)) = (words.next(), words.next()) {
                scrape.types.insert(name.to_owned(), kind.to_owned());
            }
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let end = line.find(['{', ' ']).unwrap_or(line.len());
        let (name, rest) = line.split_at(end);
        let (labels, rest) = if rest.starts_with('{') {
            match parse_labels(rest) {
                Some(parsed) => parsed,
                None => panic!("cannot read the labels of {line:?}"),
            }
        } else {
            (BTreeMap::new(), rest)
        };
        let value = rest.split_whitespace().next().and_then(|v| v.parse().ok());
        let Some(value) = value else {
            panic!("cannot read the value of {line:?}")
        };
        scrape.samples.push((name.to_owned(), labels, value));
    }
    scrape
}

/// The family a sample name belongs to, by its `# TYPE`: a counter's samples end in
/// `_total` (its TYPE line names it without the suffix in OpenMetrics, with it in the
/// classic format), a histogram's in `_bucket`, `_sum` and `_count`.
fn family<'a>(scrape: &'a Scrape, sample: &str) -> Option<(&'a str, &'a str)> {
    let suffixes: &[(&str, &[&str])] = &[
        (
            "",
            &["counter", "gauge", "untyped", "unknown", "stateset", "info"],
        ),
        ("_total", &["counter"]),
        ("_created", &["counter", "histogram", "summary"]),
        ("_bucket", &["histogram"]),
        ("_sum", &["histogram", "summary"]),
        ("_count", &["histogram", "summary"]),
        ("_info", &["info"]),
    ];
    suffixes.iter().find_map(|(suffix, kinds)| {
        let base = sample.strip_suffix(suffix)?;
        let (name, kind) = scrape.types.get_key_value(base)?;
        kinds
            .contains(&kind.as_str())
            .then_some((name.as_str(), kind.as_str()))
    })
}

/// Checks one selector against scrapes of the operator (named by the first of each
/// pair): its metric is a declared family, and the samples of that name, across the scrapes, carry every
/// label it matches on with, for `=` and `=~`, a value it matches.
fn check_selector(alert: &str, selector: &Selector, scrapes: &[(&str, Scrape)]) -> BTreeSet<String> {
    let metric = &selector.metric;
    // prometheus-client leaves out a family that has no series yet (no `# TYPE` line):
    // the metric must be declared where it has samples, and in one scrape at least.
    assert!(
        scrapes.iter().any(|(_, scrape)| family(scrape, metric).is_some()),
        "{alert}: no scrape declares {metric} (no # TYPE family for it)"
    );
    for (name, scrape) in scrapes {
        if scrape.samples.iter().any(|(sample, _, _)| sample == metric) {
            assert!(
                family(scrape, metric).is_some(),
                "{alert}: the {name} scrape has {metric} samples outside any # TYPE family"
            );
        }
    }
    let series: Vec<&BTreeMap<String, String>> = scrapes
        .iter()
        .flat_map(|(_, scrape)| scrape.samples.iter())
        .filter(|(name, _, _)| name == metric)
        .map(|(_, labels, _)| labels)
        .collect();
    assert!(
        !series.is_empty(),
        "{alert}: {metric} has no series in any scrape ({:?})",
        scrapes.iter().map(|(name, _)| *name).collect::<Vec<_>>()
    );
    let carried: BTreeSet<String> = series.iter().flat_map(|labels| labels.keys().cloned()).collect();
    for matcher in &selector.matchers {
        assert!(
            carried.contains(&matcher.name),
            "{alert}: {metric} has no label {} (its labels: {carried:?})",
            matcher.name
        );
        let values: BTreeSet<&str> = series
            .iter()
            .filter_map(|labels| labels.get(&matcher.name).map(String::as_str))
            .collect();
        if matches!(matcher.op, MatchOp::Equal | MatchOp::Re(_)) {
            assert!(
                values.iter().any(|value| matcher.is_match(value)),
                "{alert}: no {metric} series has {}{}{:?} (values: {values:?})",
                matcher.name,
                matcher.op,
                matcher.value
            );
        }
    }
    carried
}

fn settings(gate: GateSource) -> Settings {
    let local = Some(SocketAddr::from(([127, 0, 0, 1], 0)));
    Settings {
        namespaces: Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        },
        concurrency: 2,
        replica: "monitoring-test".into(),
        leader_election: None,
        metrics_address: local,
        probe_address: None,
        shutdown_grace: std::time::Duration::from_secs(10),
        migration: controllers::migration::MigrationConfig::default(),
        checkpoint_namespace: None,
        gate,
        release_version: None,
        upstream_lease: None,
        platforms: controllers::operator::run::default_platforms(),
    }
}

/// Runs the operator on `env` with `gate` until `ready` holds for an OpenMetrics scrape
/// (what Prometheus asks for first); returns that scrape and a classic one taken after it.
async fn scrape_operator(
    env: &envtest::TestEnv,
    gate: GateSource,
    what: &str,
    ready: impl Fn(&Scrape) -> bool,
) -> (Scrape, Scrape) {
    let operator = match Operator::start(env.client(), settings(gate), CancellationToken::new()).await {
        Ok(operator) => operator,
        Err(error) => panic!("starting the operator: {error}"),
    };
    let Some(address) = operator.metrics_address() else {
        panic!("no metrics address")
    };
    // The last scrape, shown if `ready` never holds.
    let last = std::sync::Mutex::new(String::new());
    let waited = tokio::time::timeout(
        TIMEOUT,
        wait_for(what, TIMEOUT * 2, || async {
            let (status, body) = http_get(
                address,
                "/metrics",
                Some("application/openmetrics-text;version=1.0.0"),
            )
            .await
            .ok()?;
            let scrape = parse_scrape(&body);
            if let Ok(mut last) = last.lock() {
                *last = body;
            }
            (status == 200 && ready(&scrape)).then_some(scrape)
        }),
    )
    .await;
    let Ok(open) = waited else {
        let last = last.lock().map(|l| l.clone()).unwrap_or_default();
        panic!("timed out after {TIMEOUT:?} waiting for {what}; the last scrape:\n{last}")
    };
    let classic = parse_scrape(&common::scrape(address).await);
    operator.shutdown();
    assert!(matches!(operator.wait().await, Ok(Exit::Shutdown)));
    (open, classic)
}

#[test]
fn every_alert_has_a_duration_a_severity_a_summary_and_a_description() {
    let docs = rendered();
    let rule = one(&docs, "PrometheusRule");
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    let alerts = alert_rules(&docs);
    let names: Vec<&str> = alerts.iter().filter_map(|a| a["alert"].as_str()).collect();
    assert_eq!(names, ALERTS);
    for alert in &alerts {
        let name = alert["alert"].as_str().unwrap_or_default();
        let expr = alert["expr"].as_str().unwrap_or_default();
        let reads = reads(expr);
        assert!(
            alert["for"].is_string() || reads.range,
            "{name}: neither `for` nor a range: one bad scrape would fire it"
        );
        assert!(
            ["critical", "warning", "info"]
                .contains(&alert["labels"]["severity"].as_str().unwrap_or_default()),
            "{name}: severity {}",
            alert["labels"]["severity"]
        );
        for annotation in ["summary", "description"] {
            let text = alert["annotations"][annotation].as_str().unwrap_or_default();
            assert!(text.len() > 20, "{name}: {annotation} {text:?}");
        }
        // The console files an alert under its namespace: every aggregation keeps it.
        assert!(
            reads.grouping.contains("namespace"),
            "{name}: the `namespace` label is aggregated away"
        );
    }
}

#[test]
fn the_service_the_service_monitor_and_the_network_policies_point_at_the_operator() {
    let docs = rendered();
    let deployment = one(&docs, "Deployment");
    let namespace = deployment["metadata"]["namespace"].clone();
    let pod_labels = &deployment["spec"]["template"]["metadata"]["labels"];
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let container_port = |name: &str| {
        container["ports"]
            .as_array()
            .and_then(|ports| ports.iter().find(|p| p["name"] == name))
            .and_then(|p| p["containerPort"].as_u64())
    };
    let selects = |selector: &Value, labels: &Value| {
        selector
            .as_object()
            .is_some_and(|s| !s.is_empty() && s.iter().all(|(k, v)| &labels[k] == v))
    };

    let service = one(&docs, "Service");
    assert_eq!(service["metadata"]["namespace"], namespace);
    assert!(selects(&service["spec"]["selector"], pod_labels), "{service}");
    let ports = service["spec"]["ports"].as_array().cloned().unwrap_or_default();
    assert_eq!(ports.len(), 1, "only the metrics port: {service}");
    assert_eq!(ports[0]["name"], "metrics");
    assert_eq!(ports[0]["targetPort"], "metrics");
    assert_eq!(container_port("metrics"), Some(8080));

    let monitor = one(&docs, "ServiceMonitor");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["metadata"]["namespace"], namespace);
    assert!(
        selects(
            &monitor["spec"]["selector"]["matchLabels"],
            &service["metadata"]["labels"]
        ),
        "{monitor}"
    );
    assert_eq!(
        monitor["spec"]["namespaceSelector"]["matchNames"],
        serde_json::json!([namespace])
    );
    let endpoints = monitor["spec"]["endpoints"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0]["port"], "metrics");
    assert_eq!(endpoints[0]["path"], "/metrics");
    assert_eq!(endpoints[0]["interval"], "30s");

    // The platform Prometheus reads this namespace's ServiceMonitors and rules, and may
    // discover its targets.
    let ns = one(&docs, "Namespace");
    assert_eq!(ns["metadata"]["name"], namespace);
    assert_eq!(
        ns["metadata"]["labels"]["openshift.io/cluster-monitoring"],
        "true"
    );
    let binding = of_kind(&docs, "RoleBinding")
        .into_iter()
        .find(|b| b["subjects"][0]["name"] == "prometheus-k8s");
    assert!(
        binding.is_some_and(|b| b["subjects"][0]["namespace"] == "openshift-monitoring"),
        "{binding:?}"
    );

    let policies = of_kind(&docs, "NetworkPolicy");
    assert_eq!(policies.len(), 3);
    for policy in &policies {
        assert_eq!(policy["metadata"]["namespace"], namespace);
    }
    let by_name = |name: &str| {
        let found = policies.iter().find(|p| p["metadata"]["name"] == name);
        let Some(found) = found else {
            panic!("no NetworkPolicy {name}")
        };
        &found["spec"]
    };
    let deny = by_name("default-deny");
    assert_eq!(deny["podSelector"], serde_json::json!({}));
    assert_eq!(deny["policyTypes"], serde_json::json!(["Ingress", "Egress"]));
    assert_eq!(deny["ingress"], Value::Null);
    assert_eq!(deny["egress"], Value::Null);

    let metrics = by_name("allow-metrics-from-openshift-monitoring");
    assert!(
        selects(&metrics["podSelector"]["matchLabels"], pod_labels),
        "{metrics}"
    );
    assert_eq!(metrics["policyTypes"], serde_json::json!(["Ingress"]));
    let ingress = metrics["ingress"].as_array().cloned().unwrap_or_default();
    assert_eq!(ingress.len(), 1);
    assert_eq!(
        ingress[0]["from"],
        serde_json::json!([{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "openshift-monitoring"}}}])
    );
    assert_eq!(
        ingress[0]["ports"],
        serde_json::json!([{"protocol": "TCP", "port": "metrics"}])
    );
    // No policy opens the probes port: the kubelet's probes come from the node.
    for policy in &policies {
        assert!(!policy.to_string().contains("\"probes\""), "{policy}");
    }

    let egress = by_name("allow-egress-to-api-server-and-dns");
    assert!(
        selects(&egress["podSelector"]["matchLabels"], pod_labels),
        "{egress}"
    );
    assert_eq!(egress["policyTypes"], serde_json::json!(["Egress"]));
    let allowed: BTreeSet<(String, u64)> = egress["egress"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|rule| rule["ports"].as_array().cloned().unwrap_or_default())
        .map(|p| {
            (
                p["protocol"].as_str().unwrap_or_default().to_owned(),
                p["port"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let expected: BTreeSet<(String, u64)> = [
        ("TCP", 6443),
        ("TCP", 443),
        ("UDP", 53),
        ("TCP", 53),
        ("UDP", 5353),
        ("TCP", 5353),
    ]
    .into_iter()
    .map(|(protocol, port)| (protocol.to_owned(), port))
    .collect();
    assert_eq!(allowed, expected);
}

/// Turns MachineAPIMigration off for the samples' version (4.22.0) in the FeatureGate's
/// status.
async fn disable_the_gate(env: &envtest::TestEnv) {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("config.openshift.io", "v1", "FeatureGate"),
        "featuregates",
    );
    let api: Api<DynamicObject> = Api::all_with(env.client(), &resource);
    let patch = serde_json::json!({"status": {"featureGates": [{
        "version": "4.22.0",
        "enabled": [],
        "disabled": [{"name": "MachineAPIMigration"}],
    }]}});
    let patched = api
        .patch_status("cluster", &PatchParams::default(), &Patch::Merge(patch))
        .await;
    assert!(patched.is_ok(), "turning the gate off: {patched:?}");
}

/// Two runs of the operator on the samples: with the cluster's FeatureGate (which enables
/// MachineAPIMigration), the controllers sync and export their series; with the gate
/// turned off in the FeatureGate, the operator exports `sync_feature_gate_enabled 0` and counts the samples'
/// `spec.authoritativeAPI: ClusterAPI` requests in `sync_gated_requests`. Every selector
/// of every alert is checked against both runs' scrapes, in both exposition formats.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alerts_read_only_metrics_and_labels_the_operator_exports() {
    let docs = rendered();
    let alerts = alert_rules(&docs);
    assert!(!alerts.is_empty());
    let env = common::env_with_samples().await;
    let gate = [("gate", "MachineAPIMigration")];

    let (enabled, enabled_classic) = scrape_operator(
        &env,
        GateSource::Cluster,
        "the controllers to run and report the samples",
        |scrape| {
            scrape.value("sync_feature_gate_enabled", &gate) == Some(1.0)
                && scrape.value("sync_platform_supported", &[("platform", "AWS")]) == Some(1.0)
                && scrape.value("sync_objects", &[("controller", "machine-sync")]) > Some(0.0)
                && scrape.value("sync_objects", &[("controller", "machine-set-sync")]) > Some(0.0)
                && scrape
                    .value("sync_migrations_total", &[("result", "stalled")])
                    .is_some()
        },
    )
    .await;
    assert_eq!(
        enabled.value("sync_gated_requests", &[]),
        None,
        "sync_gated_requests is exported only while the gate is off"
    );

    // The cluster turns the gate off (as an admin or an upgrade would): a fixed
    // `GateSource::Disabled` would do for the metrics too, but the cluster's FeatureGate is
    // what the alert is about.
    disable_the_gate(&env).await;
    let (disabled, disabled_classic) = scrape_operator(
        &env,
        GateSource::Cluster,
        "the gate to read as off and the ClusterAPI requests to be counted",
        |scrape| {
            // The samples ask for ClusterAPI on Machines and MachineSets
            // (deploy/examples/aws/20-machinesets.yaml, 30-machines.yaml).
            scrape.value("sync_feature_gate_enabled", &gate) == Some(0.0)
                && scrape.value("sync_gated_requests", &[("kind", "Machine")]) > Some(0.0)
                && scrape.value("sync_gated_requests", &[("kind", "MachineSet")]) > Some(0.0)
        },
    )
    .await;

    let scrapes = [
        ("gate on (OpenMetrics)", enabled),
        ("gate on (classic)", enabled_classic),
        ("gate off (OpenMetrics)", disabled),
        ("gate off (classic)", disabled_classic),
    ];
    for alert in &alerts {
        let name = alert["alert"].as_str().unwrap_or_default();
        let reads = reads(alert["expr"].as_str().unwrap_or_default());
        let mut carried = BTreeSet::new();
        for selector in &reads.selectors {
            carried.extend(check_selector(name, selector, &scrapes));
        }
        // `by`, `without` and `on` name labels a read metric carries, or a target label.
        for label in &reads.grouping {
            assert!(
                carried.contains(label) || TARGET_LABELS.contains(&label.as_str()),
                "{name}: groups or matches on {label}, which none of its metrics carries ({carried:?})"
            );
        }
    }
}
