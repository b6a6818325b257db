//! The cluster the controllers run in, from the `Infrastructure` object (`cluster`).

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
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
    /// The cluster's infrastructure cluster object (the `AWSCluster` named after the
    /// infrastructure name in the CAPI namespace), as read by [`Self::read_infra_cluster`].
    pub infra_cluster: InfraCluster,
}

/// What is known of the cluster's infrastructure cluster object.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum InfraCluster {
    /// Not read (offline tools, tests): the conversion assumes the installer's.
    #[default]
    NotRead,
    /// Read: the cluster has none (`namespace/name`, and why).
    Missing(String),
    /// Read: the object.
    Found(serde_json::Value),
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
            infra_cluster: InfraCluster::NotRead,
        }
    }

    /// Reads the platform's infrastructure cluster object (`AWSCluster` on AWS), named after
    /// the infrastructure name, in `capi_namespace`. Platforms without one are left as they are.
    pub async fn read_infra_cluster(&mut self, client: &Client, capi_namespace: &str) {
        let Some(kind) = crate::platform::infra_cluster_kind(&self.platform) else {
            return;
        };
        let gvk = GroupVersionKind::gvk(kind.group, kind.version, kind.kind);
        let resource = ApiResource::from_gvk_with_plural(&gvk, kind.plural);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), capi_namespace, &resource);
        let key = format!("{capi_namespace}/{}", self.infrastructure_name);
        self.infra_cluster = match api.get_opt(&self.infrastructure_name).await {
            Ok(Some(object)) => match serde_json::to_value(object) {
                Ok(value) => InfraCluster::Found(value),
                Err(error) => {
                    InfraCluster::Missing(format!("{} {key} could not be read: {error}", kind.kind))
                }
            },
            Ok(None) => InfraCluster::Missing(format!("there is no {} {key}", kind.kind)),
            Err(error) => InfraCluster::Missing(format!("{} {key} could not be read: {error}", kind.kind)),
        };
        if let InfraCluster::Missing(why) = &self.infra_cluster {
            tracing::warn!(%why, "conversions that need the infrastructure cluster object fail until the operator restarts with it");
        }
    }

    /// The sync controllers' restart checkpoint in `namespace`: valid only for this build,
    /// these namespaces and this cluster's facts (the conversion reads them).
    pub async fn checkpoint(&self, namespace: &str, namespaces: &Namespaces) -> Result<Checkpoint, String> {
        let build = Checkpoint::this_build().await?;
        let infra_cluster = match &self.infra_cluster {
            InfraCluster::Found(object) => object["spec"].clone(),
            InfraCluster::Missing(_) => serde_json::Value::Bool(false),
            InfraCluster::NotRead => serde_json::Value::Null,
        };
        let facts = (
            &self.infrastructure.spec,
            &self.infrastructure.status,
            infra_cluster,
        );
        let facts = serde_json::to_string(&facts).map_err(|e| format!("the cluster's facts: {e}"))?;
        Ok(Checkpoint::new(
            namespace,
            &(build, &namespaces.mapi, &namespaces.capi, facts),
        ))
    }
}
