//! The cluster the controllers run in, from the `Infrastructure` object (`cluster`).

use futures::StreamExt;
use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, watcher};
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

pub use conversion::platform::InfraCluster;

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
        let Some((api, kind)) = self.infra_cluster_api(client, capi_namespace) else {
            return;
        };
        let key = format!("{capi_namespace}/{}", self.infrastructure_name);
        self.infra_cluster = match api.get_opt(&self.infrastructure_name).await {
            Ok(Some(object)) => found(object, kind, &key),
            Ok(None) => InfraCluster::Missing(format!("there is no {kind} {key}")),
            Err(error) => InfraCluster::Missing(format!("{kind} {key} could not be read: {error}")),
        };
        if let InfraCluster::Missing(why) = &self.infra_cluster {
            tracing::warn!(%why, "conversions that need the infrastructure cluster object fail until it exists");
        }
    }

    /// Resolves with the infrastructure cluster object's new state once it differs from
    /// what was read (created, changed, deleted); never for a platform without one. The
    /// conversions read it, so the operator restarts its controllers then.
    pub async fn infra_cluster_changes(&self, client: &Client, capi_namespace: &str) -> InfraCluster {
        let Some((api, kind)) = self.infra_cluster_api(client, capi_namespace) else {
            return std::future::pending().await;
        };
        let key = format!("{capi_namespace}/{}", self.infrastructure_name);
        let config =
            watcher::Config::default().fields(&format!("metadata.name={}", self.infrastructure_name));
        let mut events = std::pin::pin!(watcher(api, config).default_backoff());
        let mut listed = None;
        while let Some(event) = events.next().await {
            let now = match event {
                Ok(watcher::Event::Init) => {
                    listed = Some(InfraCluster::Missing(format!("there is no {kind} {key}")));
                    continue;
                }
                Ok(watcher::Event::InitApply(object)) => {
                    listed = Some(found(object, kind, &key));
                    continue;
                }
                Ok(watcher::Event::InitDone) => match listed.take() {
                    Some(read) => read,
                    None => continue,
                },
                Ok(watcher::Event::Apply(object)) => found(object, kind, &key),
                Ok(watcher::Event::Delete(_)) => InfraCluster::Missing(format!("{kind} {key} was deleted")),
                Err(error) => {
                    tracing::debug!(%error, "watching the infrastructure cluster object; retrying");
                    continue;
                }
            };
            if !same(&now, &self.infra_cluster) {
                return now;
            }
        }
        std::future::pending().await
    }

    /// The API of the platform's infrastructure cluster kind in `capi_namespace`.
    fn infra_cluster_api(
        &self,
        client: &Client,
        capi_namespace: &str,
    ) -> Option<(Api<DynamicObject>, &'static str)> {
        let kinds = conversion::platform::kinds(&self.platform)?;
        let gvk = GroupVersionKind::gvk(kinds.group, kinds.version, kinds.cluster);
        let resource = ApiResource::from_gvk_with_plural(&gvk, kinds.cluster_plural);
        Some((
            Api::namespaced_with(client.clone(), capi_namespace, &resource),
            kinds.cluster,
        ))
    }

    /// The sync controllers' restart checkpoint in `namespace`: valid only for this build,
    /// these namespaces and this cluster's facts (the conversion reads them).
    pub async fn checkpoint(
        &self,
        namespace: &str,
        namespaces: &Namespaces,
    ) -> Result<Checkpoint, CheckpointError> {
        let build = Checkpoint::this_build().await.map_err(CheckpointError::Build)?;
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
        let facts = serde_json::to_string(&facts)?;
        Ok(Checkpoint::new(
            namespace,
            &(build, &namespaces.mapi, &namespaces.capi, facts),
        ))
    }
}

/// Why there is no restart checkpoint: the operator then reconciles every pair at start.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// This build's identity could not be read.
    #[error("{0}")]
    Build(String),
    /// The cluster's facts did not serialize.
    #[error("the cluster's facts: {0}")]
    Facts(#[from] serde_json::Error),
}

/// A read object as what is known of it.
fn found(object: DynamicObject, kind: &str, key: &str) -> InfraCluster {
    match serde_json::to_value(object) {
        Ok(value) => InfraCluster::Found(value),
        Err(error) => InfraCluster::Missing(format!("{kind} {key} could not be read: {error}")),
    }
}

/// Whether two reads tell the conversion the same (a missing object's reason aside; for
/// an object, its spec).
fn same(a: &InfraCluster, b: &InfraCluster) -> bool {
    match (a, b) {
        (InfraCluster::Found(a), InfraCluster::Found(b)) => a["spec"] == b["spec"],
        (InfraCluster::Missing(_), InfraCluster::Missing(_))
        | (InfraCluster::NotRead, InfraCluster::NotRead) => true,
        _ => false,
    }
}
