//! The cluster the controllers run in, from the `Infrastructure` object (`cluster`).

use kube::Client;
use kube::api::Api;
use sync_core::api::Infrastructure;
use sync_core::{Checkpoint, Namespaces};

/// What the sync needs to know about the cluster.
#[derive(Clone, Debug)]
pub struct Cluster {
    /// `status.infrastructureName`: the CAPI cluster name (the CAPI `Cluster` owner).
    pub infrastructure_name: String,
    /// `status.platformStatus.type` (`AWS`, `OpenStack`, …); empty when unknown.
    pub platform: String,
    /// The whole object, for the platform's conversion.
    pub infrastructure: Infrastructure,
}

impl Cluster {
    /// Reads `config.openshift.io/v1` `Infrastructure` `cluster`.
    pub async fn read(client: &Client) -> Result<Self, kube::Error> {
        let api: Api<Infrastructure> = Api::all(client.clone());
        Ok(Self::from_infrastructure(
            api.get(sync_core::api::infrastructure::CLUSTER).await?,
        ))
    }

    /// The facts of an `Infrastructure` object.
    pub fn from_infrastructure(infrastructure: Infrastructure) -> Self {
        let status = infrastructure.status.clone().unwrap_or_default();
        Self {
            infrastructure_name: status.infrastructure_name.clone().unwrap_or_default(),
            platform: status.platform_type().unwrap_or_default().to_owned(),
            infrastructure,
        }
    }

    /// The sync controllers' restart checkpoint in `namespace`: valid only for this build,
    /// these namespaces and this cluster's facts (the conversion reads them).
    pub async fn checkpoint(&self, namespace: &str, namespaces: &Namespaces) -> Result<Checkpoint, String> {
        let build = Checkpoint::this_build().await?;
        let facts = (&self.infrastructure.spec, &self.infrastructure.status);
        let facts = serde_json::to_string(&facts).map_err(|e| format!("the cluster's facts: {e}"))?;
        Ok(Checkpoint::new(
            namespace,
            &(build, &namespaces.mapi, &namespaces.capi, facts),
        ))
    }
}
