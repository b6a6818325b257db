//! `--embedded`: an in-process API server (sync-core's envtest) with the project's CRDs,
//! example infrastructure CRDs and sample objects, so that the operator runs, reconciles
//! and answers `kubectl` on a laptop without a cluster; with the simulated providers
//! (`crate::simulate`) unless `--simulate-providers=false`.

use std::net::SocketAddr;
use std::path::PathBuf;

use envtest::{EnvtestError, TestEnv};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::cli::{Cli, Listener};
use super::http::BindError;
use super::policies;
use super::samples::{SampleError, SamplePlatform, create_all, load_samples, sample_namespaces};
use crate::simulate::SimulatedProviders;

/// `--embedded` failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// The API server did not start.
    #[error("embedded API server: {0}")]
    Envtest(#[from] EnvtestError),
    /// `--embedded-port` is taken.
    #[error(transparent)]
    Port(BindError),
    /// The operator's client could not be built for the server.
    #[error("the operator's client for the embedded API server: {0}")]
    Client(#[from] sync_core::client::Error),
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
    /// How many admission policies and bindings were installed.
    pub policies: usize,
}

impl Embedded {
    /// A client as `user` (one of [`policies::OPERATOR_USER`], [`policies::PROVIDERS_USER`]).
    pub async fn client_as(&self, user: &str) -> Result<kube::Client, EmbeddedError> {
        Ok(self.env.client_as(user).await?)
    }

    /// The operator's client, as on a cluster ([`sync_core::client`]), as the user the
    /// admission policies exempt.
    pub async fn operator_client(&self) -> Result<kube::Client, EmbeddedError> {
        let user = policies::OPERATOR_USER;
        let yaml = self
            .env
            .kubeconfig_for(user)
            .ok_or_else(|| EnvtestError::NoUser(user.to_owned()))?;
        Ok(sync_core::client::from_kubeconfig(&yaml).await?)
    }

    /// The simulated providers, when the command line asks for them: they run as the user
    /// the admission policies exempt, until `shutdown`.
    pub async fn start_providers(
        &self,
        cli: &Cli,
        shutdown: CancellationToken,
    ) -> Result<Option<JoinHandle<()>>, EmbeddedError> {
        if !cli.simulated_providers() {
            return Ok(None);
        }
        let client = self.client_as(policies::PROVIDERS_USER).await?;
        let providers = SimulatedProviders::new(client, cli.namespaces.namespaces());
        Ok(Some(tokio::spawn(providers.run(shutdown))))
    }

    /// Tells the person at the terminal what the server holds, how to reach it with
    /// kubectl, what runs against it, and where the operator's endpoints are.
    pub fn print_banner(&self, cli: &Cli, metrics: Option<SocketAddr>, probes: Option<SocketAddr>) {
        let kubeconfig = self.kubeconfig.display();
        let platform = cli.embedded_platform;
        println!(
            "Embedded API server on {} with {} sample objects of an {} cluster from deploy/examples and deploy/examples/{}.",
            self.env.url(),
            self.samples,
            platform.kinds().platform,
            platform.dir_name()
        );
        if self.policies > 0 {
            println!(
                "Admission policies: {} objects from deploy/admission-policies, enforced on kubectl's writes (--admission-policies=false to leave them out).",
                self.policies
            );
        }
        println!("kubeconfig: {kubeconfig}");
        println!("Try:");
        println!("  kubectl --kubeconfig {kubeconfig} get machines.machine.openshift.io -A");
        println!(
            "  kubectl --kubeconfig {kubeconfig} get machines.cluster.x-k8s.io,machinesets.cluster.x-k8s.io,{} -A",
            capi_infra_resources(platform)
        );
        if cli.simulated_providers() {
            println!(
                "Simulated providers: Machine API machines and MachineSets, Cluster API Machines and MachineSets, {}s (--simulate-providers=false to turn them off).",
                platform.kinds().machine
            );
        }
        if let Some(address) = metrics {
            println!("metrics: http://{address}/metrics");
        }
        if let Some(address) = probes {
            println!("readiness: http://{address}/readyz");
        }
        println!("Stop with Ctrl-C.");
    }
}

/// Starts the server, installs the CRDs, creates the namespaces, loads the samples and
/// writes the kubeconfig.
pub async fn start(cli: &Cli) -> Result<Embedded, EmbeddedError> {
    let deploy = super::samples::deploy_dir();
    let examples = deploy.join("examples");
    let platform = cli.embedded_platform;
    let namespaces = cli.namespaces.namespaces();
    let mut builder = TestEnv::builder()
        .port(cli.embedded_port)
        .crd_dir(deploy.join("crds"))
        .crd_dir(examples.join("crds"));
    if let Some(crds) = platform.crd_dir(&examples) {
        builder = builder.crd_dir(crds);
    }
    let env = builder
        .namespace(&namespaces.mapi)
        .namespace(&namespaces.capi)
        .user(policies::OPERATOR_USER, &["system:masters"])
        .user(policies::PROVIDERS_USER, &["system:masters"])
        .start()
        .await
        .map_err(|error| match error {
            // Only an explicit port can be busy (the default is a free one).
            EnvtestError::Io(error) if error.kind() == std::io::ErrorKind::AddrInUse => {
                EmbeddedError::Port(BindError {
                    address: SocketAddr::from(([127, 0, 0, 1], cli.embedded_port)),
                    listener: Listener::EmbeddedApi,
                    error,
                })
            }
            other => EmbeddedError::Envtest(other),
        })?;
    let rename = sample_namespaces(&namespaces);
    let samples = load_samples(&env.client(), &examples, platform, &rename).await?;
    let policies = if cli.admission_policies {
        let rendered = policies::render(&policies::dir(&deploy), &rename)?;
        create_all(&env.client(), rendered, &rename).await?.created
    } else {
        0
    };
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
        policies,
    })
}

/// The infrastructure resources the platform's samples have, for the banner's kubectl line
/// (the AWS samples also have a made-up provider's DevMachines).
fn capi_infra_resources(platform: SamplePlatform) -> String {
    match platform {
        SamplePlatform::Aws => format!("devmachines,{}", platform.infra_machines()),
        SamplePlatform::OpenStack => platform.infra_machines().to_owned(),
    }
}
