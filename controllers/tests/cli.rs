//! The binary as a user meets it (issue 29): what `controllers status`, `convert`,
//! `samples` and the operator say when something is wrong (the URL or flag, and what to
//! do), `status`'s namespace flags, `controllers samples` against any cluster, the
//! `--embedded` ports, and how soon the process exits after `stopped`.

mod common;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Operator, TIMEOUT, http_get, wait_for};
use controllers::operator::samples::{
    SamplePlatform, deploy_dir, load_samples, sample_files, sample_namespaces,
};
use envtest::TestEnv;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

/// A scratch directory of this test process.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("controllers-cli-{}-{name}", std::process::id()));
    if let Err(error) = std::fs::create_dir_all(&dir) {
        panic!("creating {}: {error}", dir.display());
    }
    dir
}

/// A port nobody listens on (bound, then released).
fn free_port() -> u16 {
    match TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(address) => address.port(),
        Err(error) => panic!("finding a free port: {error}"),
    }
}

/// A kubeconfig for an API server at `https://127.0.0.1:port` that is not running.
fn stopped_server_kubeconfig(name: &str) -> (PathBuf, u16) {
    let port = free_port();
    let path = scratch(name).join("kubeconfig");
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: stopped\n  cluster:\n    server: https://127.0.0.1:{port}\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    cluster: stopped\n    user: u\ncurrent-context: c\n"
    );
    if let Err(error) = std::fs::write(&path, yaml) {
        panic!("writing {}: {error}", path.display());
    }
    (path, port)
}

/// Runs `controllers ARGS` to its end: (exit code, stdout, stderr).
async fn run(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_controllers"));
    command
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("SYNC_MAPI_NAMESPACE")
        .env_remove("SYNC_CAPI_NAMESPACE")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .kill_on_drop(true);
    let output = match tokio::time::timeout(TIMEOUT, command.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(error)) => panic!("running controllers {args:?}: {error}"),
        Err(_) => panic!("controllers {args:?} did not end"),
    };
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test]
async fn status_and_convert_against_a_stopped_server_name_its_url_and_what_to_do() {
    let (kubeconfig, port) = stopped_server_kubeconfig("stopped");
    let kubeconfig = path_text(&kubeconfig);
    let explained = format!(
        "cannot connect to the API server at https://127.0.0.1:{port}/ (from kubeconfig {kubeconfig}): \
         Connection refused (os error 111); is it running? Start it, or point --kubeconfig and \
         --context at one that is"
    );

    let (code, out, err) = run(&["status", "--kubeconfig", &kubeconfig], &[]).await;
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert_eq!(err, format!("controllers status: {explained}\n"));

    let (code, _, err) = run(&["convert", "--from-cluster", "--kubeconfig", &kubeconfig], &[]).await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err,
        format!("controllers convert: listing MachineSets in openshift-machine-api: {explained}\n")
    );

    let (code, _, err) = run(&["samples", "--kubeconfig", &kubeconfig], &[]).await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(
        err,
        format!("controllers samples: creating namespace openshift-machine-api: {explained}\n")
    );
}

/// The operator's error line (JSON logs): its message.
fn error_messages(output: &str) -> Vec<String> {
    output
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|json| json["level"] == "ERROR")
        .map(|json| json["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn a_busy_port_is_named_once_with_the_flag_that_moves_it() {
    let (kubeconfig, _) = stopped_server_kubeconfig("busy");
    let kubeconfig = path_text(&kubeconfig);
    let taken = match TcpListener::bind("127.0.0.1:0") {
        Ok(listener) => listener,
        Err(error) => panic!("binding: {error}"),
    };
    let address = match taken.local_addr() {
        Ok(address) => address.to_string(),
        Err(error) => panic!("{error}"),
    };
    let port = address.rsplit(':').next().unwrap_or_default().to_owned();
    let base = [
        "--kubeconfig",
        kubeconfig.as_str(),
        "--leader-elect=false",
        "--log-format",
        "json",
    ];

    let (code, out, err) = run(&[&base[..], &["--metrics-bind-address", &address]].concat(), &[]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        error_messages(&format!("{out}{err}")),
        [format!(
            "cannot serve metrics on {address}: the port is in use by another process; choose another \
             with --metrics-bind-address HOST:PORT (or $SYNC_METRICS_BIND_ADDRESS), or 0 to turn metrics off"
        )]
    );

    // The same through the environment variable: still an error, never moved.
    let (code, out, err) = run(
        &[&base[..], &["--metrics-bind-address", "0"]].concat(),
        &[("SYNC_HEALTH_PROBE_BIND_ADDRESS", &address)],
    )
    .await;
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        error_messages(&format!("{out}{err}")),
        [format!(
            "cannot serve probes on {address}: the port is in use by another process; choose another \
             with --health-probe-bind-address HOST:PORT (or $SYNC_HEALTH_PROBE_BIND_ADDRESS), or 0 to \
             turn the probes off"
        )]
    );

    // An explicit embedded API server port.
    let (code, out, err) = run(
        &[
            "--embedded",
            "--embedded-port",
            &port,
            "--log-format",
            "json",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ],
        &[],
    )
    .await;
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(
        error_messages(&format!("{out}{err}")),
        [format!(
            "cannot serve the embedded API server on 127.0.0.1:{port}: the port is in use by another \
             process; choose another with --embedded-port PORT (or $SYNC_EMBEDDED_PORT), or leave it \
             out for a free one"
        )]
    );
    drop(taken);
}

/// An envtest with the project's CRDs and the two namespaces.
async fn env_with_namespaces(mapi: &str, capi: &str) -> TestEnv {
    let deploy = deploy_dir();
    let started = TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .namespace(mapi)
        .namespace(capi)
        .start()
        .await;
    match started {
        Ok(env) => env,
        Err(error) => panic!("starting envtest: {error}"),
    }
}

#[tokio::test]
async fn status_reads_the_namespaces_of_the_operators_flags_and_variables() {
    let namespaces = sync_core::Namespaces {
        mapi: "team-mapi".into(),
        capi: "team-capi".into(),
    };
    let env = env_with_namespaces(&namespaces.mapi, &namespaces.capi).await;
    let rename = sample_namespaces(&namespaces);
    if let Err(error) = load_samples(
        &env.client(),
        &deploy_dir().join("examples"),
        SamplePlatform::Aws,
        &rename,
    )
    .await
    {
        panic!("loading the samples: {error}");
    }
    let kubeconfig = path_text(&common::kubeconfig(&env));
    let status = ["status", "--kubeconfig", kubeconfig.as_str()];

    let (code, by_flags, err) = run(
        &[
            &status[..],
            &["--mapi-namespace", "team-mapi", "--capi-namespace", "team-capi"],
        ]
        .concat(),
        &[],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        by_flags.starts_with("MachineAPIMigration feature gate: enabled: MachineAPIMigration is enabled in featuregates.config.openshift.io/cluster status.featureGates[version=4.22.0]\n"),
        "{by_flags}"
    );
    let names: Vec<&str> = by_flags
        .lines()
        .skip(2)
        .filter_map(|line| line.split_whitespace().nth(1))
        .collect();
    for name in [
        "worker-a",
        "worker-a-1",
        "worker-b-1",
        "migrating-1",
        "aws-workers-1",
    ] {
        assert!(names.contains(&name), "no {name} in\n{by_flags}");
    }

    let (code, by_variables, err) = run(
        &status,
        &[
            ("SYNC_MAPI_NAMESPACE", "team-mapi"),
            ("SYNC_CAPI_NAMESPACE", "team-capi"),
        ],
    )
    .await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(by_variables, by_flags);

    // The defaults are the operator's: nothing there.
    let (code, by_default, err) = run(&status, &[]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(by_default.lines().count(), 2, "{by_default}");
}

/// Every object of the sample files: (apiVersion, kind, namespace, name).
fn sample_objects() -> Vec<(String, String, String, String)> {
    let dir = deploy_dir().join("examples");
    let files = match sample_files(&dir, SamplePlatform::Aws) {
        Ok(files) => files,
        Err(error) => panic!("{}: {error}", dir.display()),
    };
    let mut objects = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_default();
        for doc in docs.iter().filter(|d| d.is_object()) {
            let text = |pointer: &str| {
                doc.pointer(pointer)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            objects.push((
                text("/apiVersion"),
                text("/kind"),
                text("/metadata/namespace"),
                text("/metadata/name"),
            ));
        }
    }
    objects
}

/// The stored object, if it exists.
async fn get(
    client: &Client,
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
) -> Option<DynamicObject> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await.ok()?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), namespace, &resource),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    api.get_opt(name).await.ok().flatten()
}

#[tokio::test]
async fn the_samples_command_loads_the_samples_into_any_cluster() {
    // An API server with the CRDs and nothing else (not even the namespaces), as
    // `envtest-server --crds deploy/crds --crds deploy/examples/crds` is.
    let deploy = deploy_dir();
    let env = match TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .start()
        .await
    {
        Ok(env) => env,
        Err(error) => panic!("starting envtest: {error}"),
    };
    let client = env.client();
    let kubeconfig = path_text(&common::kubeconfig(&env));
    let dir = path_text(&deploy.join("examples"));
    let samples = sample_objects();
    let count = samples.len();
    assert!(count > 15, "{samples:?}");

    let (code, out, err) = run(&["samples", "--kubeconfig", &kubeconfig], &[]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{count} sample objects from {dir} in openshift-machine-api and openshift-cluster-api: \
             {count} created, 0 already there.\n"
        )
    );

    // The collector has seen everything once a dependent with a dangling owner created
    // after the samples is gone.
    let canaries: Api<ConfigMap> = Api::namespaced(client.clone(), "openshift-cluster-api");
    let canary: ConfigMap = match serde_json::from_value(json!({
        "metadata": {"name": "canary", "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": "gone",
            "uid": "00000000-0000-4000-8000-000000000000"
        }]}
    })) {
        Ok(canary) => canary,
        Err(error) => panic!("{error}"),
    };
    if let Err(error) = canaries.create(&PostParams::default(), &canary).await {
        panic!("creating the canary: {error}");
    }
    wait_for("the collector to delete the canary", TIMEOUT, || async {
        matches!(canaries.get_opt("canary").await, Ok(None)).then_some(())
    })
    .await;

    // Every sample is there; every owner reference names its owner's real uid.
    let mut owned = 0;
    for (api_version, kind, namespace, name) in &samples {
        let Some(object) = get(&client, api_version, kind, namespace, name).await else {
            panic!("{kind} {namespace}/{name} is missing (garbage-collected?)");
        };
        for owner in object.owner_references() {
            let Some(stored) = get(&client, &owner.api_version, &owner.kind, namespace, &owner.name).await
            else {
                panic!(
                    "{kind} {name}: owner {} {} does not exist",
                    owner.kind, owner.name
                );
            };
            assert_eq!(
                Some(&owner.uid),
                stored.metadata.uid.as_ref(),
                "{kind} {name}'s owner {}",
                owner.name
            );
            owned += 1;
        }
    }
    assert!(owned >= 3, "only {owned} owner references");

    // The Infrastructure's status went through the status subresource.
    let infrastructure = get(&client, "config.openshift.io/v1", "Infrastructure", "", "cluster").await;
    let status = infrastructure
        .map(|i| i.data["status"].clone())
        .unwrap_or_default();
    assert_eq!(status["platformStatus"]["type"], "AWS", "{status}");
    assert_eq!(status["platformStatus"]["aws"]["region"], "us-east-2", "{status}");

    // Loading again changes nothing.
    let (code, out, err) = run(&["samples", "--kubeconfig", &kubeconfig], &[]).await;
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        format!(
            "{count} sample objects from {dir} in openshift-machine-api and openshift-cluster-api: \
             0 created, {count} already there.\n"
        )
    );
}

/// The `metrics: http://…/metrics` and `readiness: http://…/readyz` addresses it prints.
async fn printed_addresses(operator: &mut Operator) -> (SocketAddr, SocketAddr) {
    let metrics = operator.printed_address("metrics:", "/metrics").await;
    let probes = operator.printed_address("readiness:", "/readyz").await;
    (metrics, probes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_default_ports_give_way_to_free_ones_and_it_exits_soon_after_stopped() {
    // Whoever holds 8080 and 8081 (this test, or anything else on the machine), the
    // default ports are busy.
    let _held: Vec<TcpListener> = ["127.0.0.1:8080", "127.0.0.1:8081"]
        .into_iter()
        .filter_map(|address| TcpListener::bind(address).ok())
        .collect();
    let args = ["--embedded", "--simulate-providers=false", "--log-format", "json"];
    let mut operator = Operator::spawn(&args);
    let (metrics, probes) = printed_addresses(&mut operator).await;
    assert!(
        metrics.port() != 8080 && probes.port() != 8081,
        "{metrics} {probes}"
    );
    assert!(metrics.ip().is_loopback() && probes.ip().is_loopback());
    wait_for("the moved probes to answer ready", TIMEOUT, || async {
        matches!(http_get(probes, "/readyz", None).await, Ok((200, _))).then_some(())
    })
    .await;
    let moved = operator.lines();
    assert!(
        moved
            .iter()
            .any(|line| line.contains("port 8080 is in use; serving metrics on a free port instead")),
        "{}",
        moved.join("\n")
    );

    // A second one beside it starts too.
    let mut second = Operator::spawn(&args);
    let (second_metrics, second_probes) = printed_addresses(&mut second).await;
    assert!(second_metrics != metrics && second_probes != probes);

    // Exit soon after `stopped`: the deadline is behaviour (a pod's grace period, a
    // terminal waiting), not a performance figure; the bound is generous.
    for (name, mut running) in [("first", operator), ("second", second)] {
        running.signal("TERM");
        running
            .wait_line("the stopped line", |line| {
                let json: Value = serde_json::from_str(line).ok()?;
                (json["message"] == "stopped").then_some(())
            })
            .await;
        let stopped = Instant::now();
        let status = running.wait_exit().await;
        let took = stopped.elapsed();
        eprintln!("{name} --embedded exited {took:?} after logging `stopped`");
        assert!(status.success(), "{}", running.lines().join("\n"));
        assert!(
            took < Duration::from_secs(3),
            "exited {took:?} after `stopped`:\n{}",
            running.lines().join("\n")
        );
    }
}
