//! A Kubernetes client from a kubeconfig, for the operator and its tools (`status`,
//! `samples`, `convert --from-cluster`), with where it connects: a failed request can then
//! name the API server and say how to point at another. Below the operator and the tools,
//! so that both use it without depending on each other.

use std::path::{Path, PathBuf};

use kube::Client;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// No client could be built for the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The kubeconfig could not be read or used.
    #[error("kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// Neither a kubeconfig nor the in-cluster configuration was found.
    #[error(transparent)]
    Infer(#[from] kube::config::InferConfigError),
    /// The client could not be built from the configuration.
    #[error("cannot build the Kubernetes client: {0}")]
    Build(#[source] kube::Error),
}

/// A client, and where it connects: what the tools (`status`, `convert --from-cluster`,
/// `samples`) need to say which server they could not reach and how to point them at
/// another.
#[derive(Clone)]
pub struct Connection {
    /// The client.
    pub client: Client,
    /// The API server's URL.
    pub url: String,
    /// Where the configuration came from (`kubeconfig /path, context c`, `the in-cluster
    /// service account`).
    pub source: String,
}

impl Connection {
    /// What a failed request means to the person who ran the command: for a server that
    /// could not be reached, its URL, the cause and what to do; for an answer, the
    /// server's message and code.
    pub fn explain(&self, error: &kube::Error) -> String {
        let Self { url, source, .. } = self;
        match error {
            kube::Error::Api(response) => format!(
                "the API server at {url} answered {} {}: {}",
                response.code, response.reason, response.message
            ),
            kube::Error::HyperError(_) | kube::Error::Service(_) => format!(
                "cannot connect to the API server at {url} (from {source}): {}; is it running? \
                 Start it, or point --kubeconfig and --context at one that is",
                root_cause(error)
            ),
            other => format!("talking to the API server at {url} (from {source}): {other}"),
        }
    }
}

/// The innermost error of a chain (for a refused connection: `Connection refused (os error
/// 111)`, not hyper's `client error (Connect)`).
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// Where [`client_from`]'s configuration comes from, in words.
fn config_source(kubeconfig: Option<&Path>, context: Option<&str>) -> String {
    let file = match kubeconfig {
        Some(path) => Some(format!("kubeconfig {}", path.display())),
        None => match std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
            Some(paths) => Some(format!("kubeconfig $KUBECONFIG={}", paths.to_string_lossy())),
            None => {
                let default = std::env::var_os("HOME")
                    .map(|home| PathBuf::from(home).join(".kube/config"))
                    .filter(|path| path.exists());
                default.map(|path| format!("kubeconfig {}", path.display()))
            }
        },
    };
    match (file, context) {
        (Some(file), Some(context)) => format!("{file}, context {context}"),
        (Some(file), None) => file,
        (None, Some(context)) => format!("context {context}"),
        (None, None) => "the in-cluster service account".to_owned(),
    }
}

/// A client from a kubeconfig file and context, else `$KUBECONFIG`/`~/.kube/config`, else
/// the in-cluster service account, and where it connects. Its connections keep small read
/// buffers ([`sync_core::client`]).
pub async fn client_from(
    kubeconfig: Option<&Path>,
    context: Option<&str>,
) -> Result<Connection, ClientError> {
    let options = KubeConfigOptions {
        context: context.map(str::to_owned),
        ..KubeConfigOptions::default()
    };
    let config = match (kubeconfig, context) {
        (Some(path), _) => {
            kube::Config::from_custom_kubeconfig(Kubeconfig::read_from(path)?, &options).await?
        }
        (None, Some(_)) => kube::Config::from_kubeconfig(&options).await?,
        (None, None) => kube::Config::infer().await?,
    };
    let url = config.cluster_url.to_string();
    let source = config_source(kubeconfig, context);
    let client = sync_core::client::client(config).map_err(ClientError::Build)?;
    Ok(Connection { client, url, source })
}
