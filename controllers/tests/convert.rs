//! `controllers convert`, run as the binary: from files, from stdin, `--check`, bad input,
//! `--reverse`, and `--from-cluster` against envtest with objects made by kubectl.

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conversion/tests/fixtures")
        .join(name)
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs `controllers convert ARGS`, feeding `stdin`, and waits for it (bounded).
async fn convert(args: &[&str], stdin: Option<&str>) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_controllers"))
        .arg("convert")
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawning controllers: {e}"));
    if let Some(mut pipe) = child.stdin.take() {
        if let Some(text) = stdin {
            pipe.write_all(text.as_bytes())
                .await
                .unwrap_or_else(|e| panic!("stdin: {e}"));
        }
        drop(pipe);
    }
    let output = tokio::time::timeout(common::TIMEOUT, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("controllers convert {args:?} did not finish"))
        .unwrap_or_else(|e| panic!("controllers convert: {e}"));
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn documents(yaml: &str) -> Vec<Value> {
    serde_saphyr::from_multiple(yaml).unwrap_or_else(|e| panic!("output is not YAML: {e}\n{yaml}"))
}

fn kinds_and_names(documents: &[Value]) -> Vec<(String, String)> {
    documents
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap_or_default().to_owned(),
                d["metadata"]["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn path_str(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

#[tokio::test]
async fn converts_files_and_stdin_alike() {
    let infra = fixture("infrastructure.yaml");
    let set = fixture("installer-worker-machineset.yaml");
    let machine = fixture("running-worker-machine.yaml");
    let from_files = convert(
        &[
            "--infrastructure",
            path_str(&infra),
            path_str(&set),
            path_str(&machine),
        ],
        None,
    )
    .await;
    assert_eq!(from_files.code, Some(0), "{}", from_files.stderr);
    assert_eq!(from_files.stderr, "");
    let docs = documents(&from_files.stdout);
    let names = kinds_and_names(&docs);
    assert_eq!(names.len(), 4);
    assert_eq!(
        names[0],
        ("MachineSet".into(), "demo-x7k2p-worker-us-east-2a".into())
    );
    assert_eq!(names[1].0, "AWSMachineTemplate");
    assert!(names[1].1.starts_with("demo-x7k2p-worker-us-east-2a-"));
    assert_eq!(
        names[2],
        ("Machine".into(), "demo-x7k2p-worker-us-east-2a-8xk2p".into())
    );
    assert_eq!(
        names[3],
        ("AWSMachine".into(), "demo-x7k2p-worker-us-east-2a-8xk2p".into())
    );
    assert_eq!(docs[2]["apiVersion"], "cluster.x-k8s.io/v1beta2");
    assert_eq!(docs[2]["spec"]["clusterName"], "demo-x7k2p");
    assert_eq!(docs[3]["spec"]["instanceID"], "i-0a1b2c3d4e5f67890");
    assert_eq!(
        docs[0]["spec"]["template"]["spec"]["infrastructureRef"]["name"],
        docs[1]["metadata"]["name"]
    );

    // The same objects on stdin, the Infrastructure as one more document.
    let stdin = [&infra, &set, &machine]
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n---\n");
    let from_stdin = convert(&[], Some(&stdin)).await;
    assert_eq!(from_stdin.code, Some(0), "{}", from_stdin.stderr);
    assert_eq!(from_stdin.stdout, from_files.stdout);
    let dash = convert(&["-"], Some(&stdin)).await;
    assert_eq!(dash.stdout, from_files.stdout);
}

#[tokio::test]
async fn check_reports_every_blocking_field_and_fails() {
    let broken = std::fs::read_to_string(fixture("running-worker-machine.yaml"))
        .unwrap_or_default()
        .replace("deviceIndex: 0", "deviceIndex: 1")
        .replace("name: aws-cloud-credentials", "name: team-creds")
        .replace(
            "  lifecycleHooks: {}",
            "  taints:\n  - key: gpu\n    effect: NoSchedule",
        );
    let infra = fixture("infrastructure.yaml");
    let master = fixture("installer-master-machine.yaml");
    let run = convert(
        &[
            "--check",
            "--infrastructure",
            path_str(&infra),
            path_str(&master),
            "-",
        ],
        Some(&broken),
    )
    .await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].ends_with("(Machine openshift-machine-api/demo-x7k2p-master-0): convertible"),
        "{}",
        run.stdout
    );
    // Its load balancers are the installer's AWSCluster's (assumed offline): no warning.
    assert!(
        lines[1].starts_with("<stdin> document 1 (Machine openshift-machine-api/demo-x7k2p-worker-us-east-2a-8xk2p): NOT convertible"),
        "{}",
        run.stdout
    );
    let errors: Vec<&str> = lines.iter().filter_map(|l| l.strip_prefix("  error: ")).collect();
    let paths: Vec<&str> = errors.iter().filter_map(|e| e.split(':').next()).collect();
    assert_eq!(
        paths,
        [
            "spec.taints",
            "spec.providerSpec.value.credentialsSecret.name",
            "spec.providerSpec.value.deviceIndex"
        ]
    );
    assert_eq!(lines.last(), Some(&"1 of 2 objects can migrate"));

    // Without --check: the convertible object is printed, the other is reported on stderr.
    let run = convert(
        &["--infrastructure", path_str(&infra), path_str(&master), "-"],
        Some(&broken),
    )
    .await;
    assert_eq!(run.code, Some(1));
    assert_eq!(kinds_and_names(&documents(&run.stdout)).len(), 2);
    assert_eq!(
        run.stderr
            .lines()
            .filter(|l| l.starts_with("error: <stdin> document 1"))
            .count(),
        3,
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn bad_input_is_a_clear_error_naming_the_document() {
    let infra = fixture("infrastructure.yaml");
    let infra = path_str(&infra);
    let cases: [(&[&str], &str, &str); 6] = [
        (
            &["--infrastructure", infra],
            "a: [unclosed",
            "<stdin> document 0: not YAML",
        ),
        (
            &["--infrastructure", infra],
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: demo}\n",
            "<stdin> document 1 (ConfigMap demo/c): v1 ConfigMap cannot be converted to Cluster API",
        ),
        (
            &["--reverse", "--infrastructure", infra],
            "apiVersion: machine.openshift.io/v1beta1\nkind: Machine\nmetadata: {name: m}\nspec: {}\n",
            "<stdin> document 1 (Machine m): machine.openshift.io/v1beta1 Machine cannot be converted to the Machine API",
        ),
        (
            &[],
            "apiVersion: machine.openshift.io/v1beta1\nkind: Machine\nmetadata: {name: m}\nspec: {}\n",
            "no Infrastructure: give --infrastructure FILE",
        ),
        (
            &[],
            "apiVersion: config.openshift.io/v1\nkind: Infrastructure\nmetadata: {name: cluster}\nspec: {}\n\
             status: {infrastructureName: x, platformStatus: {type: GCP}}\n---\n\
             apiVersion: machine.openshift.io/v1beta1\nkind: Machine\nmetadata: {name: m}\nspec: {}\n",
            "<stdin> document 1 (Infrastructure cluster): not an Infrastructure the conversion can use: \
             infrastructure.status.platformStatus.type: Unsupported value: \"GCP\": no Machine API ⇄ Cluster API conversion for this platform",
        ),
        (
            &["--infrastructure", infra],
            "",
            "no Machine or MachineSet in the input",
        ),
    ];
    for (args, stdin, expected) in cases {
        let run = convert(args, Some(stdin)).await;
        assert_eq!(run.code, Some(2), "{args:?} {stdin:?}: {}", run.stderr);
        assert!(
            run.stderr.contains(expected),
            "{args:?} {stdin:?}: expected {expected:?} in:\n{}",
            run.stderr
        );
        assert_eq!(run.stdout, "", "nothing is printed on bad input");
    }
}

#[tokio::test]
async fn reverse_turns_the_output_back_into_the_machine() {
    let infra = fixture("infrastructure.yaml");
    let machine = fixture("running-worker-machine.yaml");
    let forward = convert(&["--infrastructure", path_str(&infra), path_str(&machine)], None).await;
    assert_eq!(forward.code, Some(0), "{}", forward.stderr);
    let back = convert(
        &["--reverse", "--infrastructure", path_str(&infra)],
        Some(&forward.stdout),
    )
    .await;
    assert_eq!(back.code, Some(0), "{}", back.stderr);
    let docs = documents(&back.stdout);
    assert_eq!(
        kinds_and_names(&docs),
        [(
            "Machine".to_owned(),
            "demo-x7k2p-worker-us-east-2a-8xk2p".to_owned()
        )]
    );
    assert_eq!(docs[0]["apiVersion"], "machine.openshift.io/v1beta1");
    assert_eq!(docs[0]["metadata"]["namespace"], "openshift-machine-api");
    assert_eq!(
        docs[0]["spec"]["providerSpec"]["value"]["instanceType"],
        "m6i.xlarge"
    );
    assert_eq!(
        docs[0]["spec"]["providerID"],
        "aws:///us-east-2a/i-0a1b2c3d4e5f67890"
    );
}

fn kubectl(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running kubectl: {e}"));
    if let (Some(mut pipe), Some(text)) = (child.stdin.take(), stdin) {
        pipe.write_all(text.as_bytes())
            .unwrap_or_else(|e| panic!("kubectl stdin: {e}"));
    }
    let output = child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("kubectl: {e}"));
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_cluster_reads_kubectl_made_objects_both_ways() {
    let env = common::env().await;
    let kubeconfig = env
        .kubeconfig_path()
        .unwrap_or_else(|e| panic!("kubeconfig: {e}"));
    let kc = kubeconfig.as_path();

    // Without an Infrastructure object the cluster cannot be converted.
    let run = convert(&["--from-cluster", "--kubeconfig", path_str(kc), "--check"], None).await;
    assert_eq!(run.code, Some(2));
    assert!(
        run.stderr
            .contains("reading infrastructures.config.openshift.io/cluster"),
        "{}",
        run.stderr
    );

    // The Infrastructure, as the installer creates it: spec by apply, status through the
    // status subresource.
    let infra: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(fixture("infrastructure.yaml")).unwrap_or_default())
            .unwrap_or_default();
    kubectl(
        kc,
        &["apply", "-f", path_str(&fixture("infrastructure.yaml"))],
        None,
    );
    let status = serde_json::json!({"status": infra["status"]}).to_string();
    kubectl(
        kc,
        &[
            "patch",
            "infrastructure",
            "cluster",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status,
        ],
        None,
    );
    kubectl(
        kc,
        &[
            "apply",
            "-f",
            path_str(&fixture("installer-worker-machineset.yaml")),
        ],
        None,
    );
    kubectl(
        kc,
        &["apply", "-f", path_str(&fixture("installer-master-machine.yaml"))],
        None,
    );

    // The cluster's AWSCluster is read: without one, the control plane Machine's load
    // balancers have nowhere to live.
    let check = convert(&["--from-cluster", "--kubeconfig", path_str(kc), "--check"], None).await;
    assert_eq!(check.code, Some(1), "{}\n{}", check.stdout, check.stderr);
    assert!(
        check.stdout.contains(
            "error: spec.providerSpec.value.loadBalancers: Required value: the cluster has no AWSCluster openshift-cluster-api/demo-x7k2p"
        ),
        "{}",
        check.stdout
    );
    let aws_cluster = serde_json::json!({
        "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSCluster",
        "metadata": {"name": "demo-x7k2p", "namespace": "openshift-cluster-api"},
        "spec": {"region": "us-east-2",
                 "controlPlaneLoadBalancer": {"name": "demo-x7k2p-int", "loadBalancerType": "nlb"},
                 "secondaryControlPlaneLoadBalancer": {"name": "demo-x7k2p-ext", "loadBalancerType": "nlb"}}
    });
    kubectl(kc, &["apply", "-f", "-"], Some(&aws_cluster.to_string()));

    let check = convert(&["--from-cluster", "--kubeconfig", path_str(kc), "--check"], None).await;
    assert_eq!(check.code, Some(0), "{}\n{}", check.stdout, check.stderr);
    assert!(
        check.stdout.contains(
            "cluster document 1 (MachineSet openshift-machine-api/demo-x7k2p-worker-us-east-2a): convertible"
        ),
        "{}",
        check.stdout
    );
    assert!(
        check
            .stdout
            .contains("(Machine openshift-machine-api/demo-x7k2p-master-0): convertible"),
        "{}",
        check.stdout
    );
    assert!(
        check.stdout.ends_with("2 of 2 objects can migrate\n"),
        "{}",
        check.stdout
    );

    // The objects it prints are accepted by the API server (the CAPI and AWS CRDs), and
    // read back with --reverse they give the Machine API objects again.
    let forward = convert(&["--from-cluster", "--kubeconfig", path_str(kc)], None).await;
    assert_eq!(forward.code, Some(0), "{}", forward.stderr);
    assert_eq!(kinds_and_names(&documents(&forward.stdout)).len(), 4);
    kubectl(kc, &["create", "-f", "-"], Some(&forward.stdout));
    let back = convert(
        &["--from-cluster", "--reverse", "--kubeconfig", path_str(kc)],
        None,
    )
    .await;
    assert_eq!(back.code, Some(0), "{}", back.stderr);
    let docs = documents(&back.stdout);
    let mut names = kinds_and_names(&docs);
    names.sort();
    assert_eq!(
        names,
        [
            ("Machine".to_owned(), "demo-x7k2p-master-0".to_owned()),
            ("MachineSet".to_owned(), "demo-x7k2p-worker-us-east-2a".to_owned())
        ]
    );
    for doc in &docs {
        assert_eq!(doc["apiVersion"], "machine.openshift.io/v1beta1");
    }
}

#[tokio::test]
async fn every_platform_converts_both_ways_and_checks() {
    // (platform folder, its infrastructure machine template kind)
    for (platform, template_kind) in [
        ("", "AWSMachineTemplate"),
        ("openstack/", "OpenStackMachineTemplate"),
        ("powervs/", "IBMPowerVSMachineTemplate"),
    ] {
        let infra = fixture(&format!("{platform}infrastructure.yaml"));
        let set = fixture(&format!("{platform}installer-worker-machineset.yaml"));
        let forward = convert(&["--infrastructure", path_str(&infra), path_str(&set)], None).await;
        assert_eq!(forward.code, Some(0), "{platform}: {}", forward.stderr);
        let out = documents(&forward.stdout);
        let kinds: Vec<String> = kinds_and_names(&out).into_iter().map(|(kind, _)| kind).collect();
        assert_eq!(kinds, ["MachineSet", template_kind], "{platform}");
        assert!(
            out.iter().all(|d| d.get("status").is_none()),
            "{platform}: no status is printed"
        );

        let back = convert(
            &["--reverse", "--check", "--infrastructure", path_str(&infra)],
            Some(&forward.stdout),
        )
        .await;
        assert_eq!(back.code, Some(0), "{platform}: {}{}", back.stdout, back.stderr);
        assert!(
            back.stdout.ends_with("1 of 1 objects can migrate\n"),
            "{platform}: {}",
            back.stdout
        );
    }
}
