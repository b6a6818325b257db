//! The flag groups the operator shares with its tools: which namespaces hold the objects
//! (the operator's flags, environment variables and defaults) and, for the tools, which
//! cluster to connect to. Below the operator and the tools, so that each takes them
//! without depending on the other.

use std::path::PathBuf;

use crate::client::{ClientError, Connection, client_from};

/// `--mapi-namespace` and `--capi-namespace`: the operator's, and the same flags (with the
/// same environment variables and defaults) for the tools that read what it syncs.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct NamespaceArgs {
    /// Namespace of the Machine API objects.
    #[arg(
        long,
        env = "SYNC_MAPI_NAMESPACE",
        value_name = "NAMESPACE",
        default_value = "openshift-machine-api"
    )]
    pub mapi_namespace: String,

    /// Namespace of the Cluster API objects and their infrastructure objects.
    #[arg(
        long,
        env = "SYNC_CAPI_NAMESPACE",
        value_name = "NAMESPACE",
        default_value = "openshift-cluster-api"
    )]
    pub capi_namespace: String,
}

impl NamespaceArgs {
    /// The namespaces as the controllers take them.
    pub fn namespaces(&self) -> sync_core::Namespaces {
        sync_core::Namespaces {
            mapi: self.mapi_namespace.clone(),
            capi: self.capi_namespace.clone(),
        }
    }
}

/// `--kubeconfig` and `--context` of the tools that read or load a cluster (`status`,
/// `samples`); the operator's own take environment variables too.
#[derive(Debug, Clone, PartialEq, Eq, clap::Args)]
pub struct KubeconfigArgs {
    /// Kubeconfig [default: $KUBECONFIG, ~/.kube/config, in-cluster].
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

impl KubeconfigArgs {
    /// A client for the cluster these name (an unreachable one's error names its URL).
    pub async fn connect(&self) -> Result<Connection, ClientError> {
        client_from(self.kubeconfig.as_deref(), self.context.as_deref()).await
    }
}
