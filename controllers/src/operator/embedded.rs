//! `--embedded`: an in-process API server (sync-core's envtest) with the project's CRDs,
//! example infrastructure CRDs and sample objects, so that the operator runs, reconciles
//! and answers `kubectl` on a laptop without a cluster.

use std::path::PathBuf;

use envtest::{EnvtestError, TestEnv};
use tokio_util::sync::CancellationToken;

use super::cli::Cli;
use super::run::{Exit, Operator, OperatorError, Settings};
use super::samples::{SampleError, load_samples};

/// The namespaces the samples are written for (rewritten to `--mapi-namespace` and
/// `--capi-namespace`).
const SAMPLE_NAMESPACES: [&str; 2] = ["openshift-machine-api", "openshift-cluster-api"];

/// `--embedded` failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// The API server did not start.
    #[error("embedded API server: {0}")]
    Envtest(#[from] EnvtestError),
    /// A sample could not be loaded.
    #[error(transparent)]
    Sample(#[from] SampleError),
    /// The kubeconfig could not be written.
    #[error("writing the kubeconfig {path}: {source}")]
    Kubeconfig {
        /// Where.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// A running embedded API server with the samples loaded.
pub struct Embedded {
    /// The server.
    pub env: TestEnv,
    /// The admin kubeconfig for kubectl.
    pub kubeconfig: PathBuf,
    /// How many sample objects were created.
    pub samples: usize,
}

/// Starts the server, installs the CRDs, creates the namespaces, loads the samples and
/// writes the kubeconfig.
pub async fn start(cli: &Cli) -> Result<Embedded, EmbeddedError> {
    let deploy = super::samples::deploy_dir();
    let env = TestEnv::builder()
        .port(cli.embedded_port)
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .namespace(&cli.mapi_namespace)
        .namespace(&cli.capi_namespace)
        .start()
        .await?;
    let rename = |namespace: &str| match namespace {
        n if n == SAMPLE_NAMESPACES[0] => cli.mapi_namespace.clone(),
        n if n == SAMPLE_NAMESPACES[1] => cli.capi_namespace.clone(),
        other => other.to_owned(),
    };
    let samples = load_samples(&env.client(), &deploy.join("examples"), &rename).await?;
    let kubeconfig = match &cli.embedded_kubeconfig {
        Some(path) => {
            env.write_kubeconfig(path)
                .map_err(|source| EmbeddedError::Kubeconfig {
                    path: path.clone(),
                    source,
                })?;
            path.clone()
        }
        None => env
            .kubeconfig_path()
            .map_err(|source| EmbeddedError::Kubeconfig {
                path: std::env::temp_dir(),
                source,
            })?,
    };
    Ok(Embedded {
        env,
        kubeconfig,
        samples,
    })
}

/// `--embedded`: start, print how to reach the server, run the controllers against it
/// (no leader election) until a signal.
pub async fn run(cli: &Cli, shutdown: CancellationToken) -> Result<Exit, OperatorError> {
    let embedded = start(cli).await?;
    let settings = Settings::from_cli(cli);
    let operator = Operator::start(embedded.env.client(), settings, shutdown).await?;
    let kubeconfig = embedded.kubeconfig.display();
    println!(
        "Embedded API server on {} with {} sample objects from deploy/examples.",
        embedded.env.url(),
        embedded.samples
    );
    println!("kubeconfig: {kubeconfig}");
    println!("Try:");
    println!("  kubectl --kubeconfig {kubeconfig} get machines.machine.openshift.io -A");
    println!(
        "  kubectl --kubeconfig {kubeconfig} get machines.cluster.x-k8s.io,machinesets.cluster.x-k8s.io,devmachines,awsmachines -A"
    );
    if let Some(address) = operator.metrics_address() {
        println!("metrics: http://{address}/metrics");
    }
    if let Some(address) = operator.probe_address() {
        println!("readiness: http://{address}/readyz");
    }
    println!("Stop with Ctrl-C.");
    let exit = operator.wait().await;
    embedded.env.stop().await;
    exit
}
