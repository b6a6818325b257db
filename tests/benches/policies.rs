//! The admission-policy benchmark: a write's latency on envtest with the project's
//! policies (`deploy/admission-policies/`) installed, against the same envtest without.
//!
//! ```text
//! cargo bench -p e2e --bench policies -- [--quick] [--pairs N] [--writes N] [--cycles N]
//! ```
//!
//! The fleet is N synchronized pairs (default 1 000; `--quick` 200): MachineAPI
//! authoritative MAPI Machines and their paused CAPI mirrors. The bench times W
//! sequential merge patches of each kind without the policies and W with them (default
//! 2 000; `--quick` 500), round-robin over the fleet:
//!
//! * `user MAPI label`: a user's label on a MAPI Machine — matched by the MAPI guard and
//!   the migration policies, whose params are every CAPI Machine (`selector: {}`);
//! * `user CAPI label`: a user's unguarded label on a CAPI mirror — the CAPI guard, params
//!   every MAPI Machine;
//! * `operator CAPI label`: the operator's write, which every policy's first match
//!   condition exempts.
//!
//! The writes are made in C cycles (default 4): a round without the policies, then they
//! are installed, a round with them, and they are deleted again. Alternating spreads the
//! machine's drift (other tenants, a later round's larger history) over both sides. It
//! prints p50 / p99 (ms) per kind of write over all rounds without the policies and all
//! rounds with them, and the ratio (target ≤ 1.2). Nothing here fails on a missed target:
//! it reports.

use std::time::{Duration, Instant};

use kube::Client;
use serde_json::{Value, json};

type BenchResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const MAPI: &str = "openshift-machine-api";
const CAPI: &str = "openshift-cluster-api";
const OPERATOR: &str = controllers::operator::policies::OPERATOR_USER;
const PROVIDERS: &str = controllers::operator::policies::PROVIDERS_USER;

struct Args {
    pairs: usize,
    writes: usize,
    cycles: usize,
}

fn parse() -> BenchResult<Args> {
    let mut args = Args {
        pairs: 1000,
        writes: 2000,
        cycles: 4,
    };
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        let mut number = |flag: &str| -> BenchResult<usize> {
            let n = given.next().ok_or(format!("{flag} needs a number"))?;
            Ok(n.parse().map_err(|_| format!("{flag} {n}: not a number"))?)
        };
        match arg.as_str() {
            "--quick" => {
                args = Args {
                    pairs: 200,
                    writes: 500,
                    cycles: 2,
                }
            }
            "--pairs" => args.pairs = number("--pairs")?,
            "--writes" => args.writes = number("--writes")?,
            "--cycles" => args.cycles = number("--cycles")?.max(1),
            // `cargo bench` passes `--bench`.
            _ => {}
        }
    }
    Ok(args)
}

/// The operator binary's allocator (controllers/src/main.rs): `controllers --embedded` runs
/// envtest, with these policies installed, in that process.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("policies bench: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("policies bench: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The clients of the writes: a user the policies check, and the operator they exempt.
struct Writers {
    user: Client,
    operator: Client,
}

async fn run() -> BenchResult<()> {
    let args = parse()?;
    let env = e2e::policy_env().await?;
    let seeder = env.client_as(PROVIDERS).await?;
    let started = Instant::now();
    fill(&seeder, args.pairs).await?;
    println!(
        "fleet: {} pairs in {:.1} s",
        args.pairs,
        started.elapsed().as_secs_f64()
    );
    let writers = Writers {
        user: env.client_as("alice").await?,
        operator: env.client_as(OPERATOR).await?,
    };
    let per_round = args.writes.div_ceil(args.cycles);
    let (mut without, mut with) = (Samples::default(), Samples::default());
    for cycle in 0..args.cycles {
        without.add(round(&writers, &args, per_round, &format!("a{cycle}")).await?);
        let installed = e2e::install_policies(&env.client(), &e2e::default_namespaces()).await?;
        with.add(round(&writers, &args, per_round, &format!("b{cycle}")).await?);
        uninstall(&env.client(), &installed).await?;
    }
    println!(
        "\n{:<22} {:>12} {:>12} {:>12} {:>12} {:>7} {:>7}",
        "write", "p50 none", "p99 none", "p50 with", "p99 with", "p50 ×", "p99 ×"
    );
    for ((name, a), (_, b)) in without.sorted().iter().zip(&with.sorted()) {
        let (n50, n99, w50, w99) = (ms(pct(a, 50)), ms(pct(a, 99)), ms(pct(b, 50)), ms(pct(b, 99)));
        println!(
            "{name:<22} {n50:>12.3} {n99:>12.3} {w50:>12.3} {w99:>12.3} {:>7.2} {:>7.2}",
            w50 / n50,
            w99 / n99
        );
    }
    println!(
        "(target: ≤ 1.2× with the policies; {} writes of each kind with and without, in {} cycles)",
        per_round * args.cycles,
        args.cycles
    );
    Ok(())
}

async fn fill(client: &Client, pairs: usize) -> BenchResult<()> {
    for i in 0..pairs {
        let name = format!("m-{i}");
        let mapi = json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": name, "namespace": MAPI, "labels": {"team": "a"}},
            "spec": {"authoritativeAPI": "MachineAPI", "providerSpec": {"value": {"instanceType": "m6i.large"}}}
        });
        let path = format!("/apis/machine.openshift.io/v1beta1/namespaces/{MAPI}/machines");
        send(client, "POST", &path, &mapi).await?;
        let status = json!({"status": {"authoritativeAPI": "MachineAPI", "phase": "Running"}});
        send(client, "PATCH", &format!("{path}/{name}/status"), &status).await?;
        let capi = json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": CAPI, "labels": {"team": "a"}, "annotations": {"cluster.x-k8s.io/paused": ""}},
            "spec": {"clusterName": "c1", "bootstrap": {"dataSecretName": "worker-user-data"},
                     "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": name}}
        });
        send(
            client,
            "POST",
            &format!("/apis/cluster.x-k8s.io/v1beta2/namespaces/{CAPI}/machines"),
            &capi,
        )
        .await?;
    }
    Ok(())
}

/// The policies installed by [`e2e::install_policies`], deleted.
async fn uninstall(client: &Client, installed: &[Value]) -> BenchResult<()> {
    for doc in installed {
        let plural = if doc["kind"] == "ValidatingAdmissionPolicy" {
            "validatingadmissionpolicies"
        } else {
            "validatingadmissionpolicybindings"
        };
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}/{name}");
        send(client, "DELETE", &path, &json!({})).await?;
    }
    Ok(())
}

/// The latencies of each kind of write, over several rounds.
#[derive(Default)]
struct Samples(Vec<(&'static str, Vec<Duration>)>);

impl Samples {
    fn add(&mut self, round: Vec<(&'static str, Vec<Duration>)>) {
        for (name, samples) in round {
            match self.0.iter_mut().find(|(n, _)| *n == name) {
                Some((_, all)) => all.extend(samples),
                None => self.0.push((name, samples)),
            }
        }
    }

    fn sorted(mut self) -> Vec<(&'static str, Vec<Duration>)> {
        self.0.iter_mut().for_each(|(_, samples)| samples.sort());
        self.0
    }
}

/// A kind of write: its name, who writes, and the path of the i-th object it patches.
type Kind<'a> = (&'static str, &'a Client, fn(usize) -> String);

/// One round: `writes` writes of each kind, timed one by one.
async fn round(
    writers: &Writers,
    args: &Args,
    writes: usize,
    tag: &str,
) -> BenchResult<Vec<(&'static str, Vec<Duration>)>> {
    let kinds: [Kind<'_>; 3] = [
        ("user MAPI label", &writers.user, mapi_path),
        ("user CAPI label", &writers.user, capi_path),
        ("operator CAPI label", &writers.operator, capi_path),
    ];
    let mut out = Vec::new();
    for (name, client, path) in kinds {
        let mut samples = Vec::with_capacity(writes);
        // Each kind its own label: one a MAPI Machine carries would be mirrored (and its
        // CAPI value held to the MAPI one).
        let key = format!("bench-{}", name.replace(' ', "-"));
        for w in 0..writes {
            let patch = json!({"metadata": {"labels": {key.as_str(): format!("{tag}-{w}")}}});
            let started = Instant::now();
            send(client, "PATCH", &path(w % args.pairs), &patch).await?;
            samples.push(started.elapsed());
        }
        out.push((name, samples));
    }
    Ok(out)
}

fn mapi_path(i: usize) -> String {
    format!("/apis/machine.openshift.io/v1beta1/namespaces/{MAPI}/machines/m-{i}")
}

fn capi_path(i: usize) -> String {
    format!("/apis/cluster.x-k8s.io/v1beta2/namespaces/{CAPI}/machines/m-{i}")
}

async fn send(client: &Client, method: &str, path: &str, body: &Value) -> BenchResult<()> {
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(kube::client::Body::from(serde_json::to_vec(body)?))?;
    let response = client.send(request).await?;
    let code = response.status();
    if !code.is_success() {
        return Err(format!("{method} {path}: {code}").into());
    }
    Ok(())
}

fn pct(sorted: &[Duration], p: usize) -> Duration {
    sorted[((sorted.len() * p) / 100).min(sorted.len().saturating_sub(1))]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
