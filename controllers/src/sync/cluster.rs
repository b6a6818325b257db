//! The cluster the controllers run in, from the `Infrastructure` object (`cluster`).

use kube::Client;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};

/// What the sync needs to know about the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// `status.infrastructureName`: the CAPI cluster name (`spec.clusterName`, the
    /// `cluster.x-k8s.io/cluster-name` label, the CAPI `Cluster` owner).
    pub infrastructure_name: String,
    /// `status.platformStatus.type` (`AWS`, `OpenStack`, …).
    pub platform: String,
    /// The platform's region, when it has one.
    pub region: Option<String>,
}

/// Why the `Infrastructure` object could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// The request failed (including NotFound: the object must exist).
    #[error("reading Infrastructure/cluster: {0}")]
    Api(#[from] kube::Error),
    /// A field the sync needs is missing.
    #[error("Infrastructure/cluster has no {0}")]
    Missing(&'static str),
}

impl Cluster {
    /// Reads `config.openshift.io/v1` `Infrastructure` `cluster`.
    pub async fn read(client: &Client) -> Result<Self, ClusterError> {
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("config.openshift.io", "v1", "Infrastructure"),
            "infrastructures",
        );
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        Self::from_object(&api.get("cluster").await?)
    }

    /// The facts of an `Infrastructure` object.
    pub fn from_object(object: &DynamicObject) -> Result<Self, ClusterError> {
        let status = &object.data["status"];
        let text = |value: &serde_json::Value| value.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
        let platform_status = &status["platformStatus"];
        let platform = text(&platform_status["type"])
            .or_else(|| text(&status["platform"]))
            .ok_or(ClusterError::Missing("status.platformStatus.type"))?;
        let region = platform_status
            .as_object()
            .and_then(|p| p.values().find_map(|v| text(&v["region"])));
        Ok(Self {
            infrastructure_name: text(&status["infrastructureName"])
                .ok_or(ClusterError::Missing("status.infrastructureName"))?,
            platform,
            region,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_name_platform_and_region() -> Result<(), Box<dyn std::error::Error>> {
        let object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
            "metadata": {"name": "cluster"},
            "status": {"infrastructureName": "demo-x7k2p", "platform": "AWS",
                       "platformStatus": {"type": "AWS", "aws": {"region": "eu-west-1"}}}
        }))?;
        let cluster = Cluster::from_object(&object)?;
        assert_eq!(cluster.infrastructure_name, "demo-x7k2p");
        assert_eq!(
            (cluster.platform.as_str(), cluster.region.as_deref()),
            ("AWS", Some("eu-west-1"))
        );
        let empty: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure", "metadata": {"name": "cluster"}}))?;
        assert!(matches!(
            Cluster::from_object(&empty),
            Err(ClusterError::Missing(_))
        ));
        Ok(())
    }
}
