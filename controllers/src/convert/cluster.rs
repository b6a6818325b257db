//! `--from-cluster`: the objects to convert and the `Infrastructure`, read from a cluster.

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::core::GroupVersionKind;
use kube::{Client, Resource};
use serde_json::Value;
use sync_core::api::{Infrastructure, capi, infrastructure, mapi};

use super::input::{Direction, Inputs, Origin};
use crate::client::Connection;

/// What went wrong talking to the cluster.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A list or get failed.
    #[error("cluster: {what}: {source}")]
    Api {
        /// What was being read.
        what: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
}

impl ClusterError {
    /// The message for a person: what was being read, and what the failure means (the
    /// API server's URL and what to do when it cannot be reached).
    pub fn explain(&self, connection: &Connection) -> String {
        match self {
            Self::Api { what, source } => format!("{what}: {}", connection.explain(source)),
        }
    }
}

/// Adds every object of the direction's kinds in `namespace` to `inputs`; the errors of
/// objects that do not decode are returned, naming them.
pub async fn read_objects(
    client: &Client,
    namespace: &str,
    direction: Direction,
    inputs: &mut Inputs,
) -> Result<Vec<String>, ClusterError> {
    let kinds: Vec<GroupVersionKind> = match direction {
        Direction::MapiToCapi => vec![gvk::<mapi::MachineSet>(), gvk::<mapi::Machine>()],
        Direction::CapiToMapi => vec![gvk::<capi::MachineSet>(), gvk::<capi::Machine>()]
            .into_iter()
            .chain(conversion::platform::ALL.iter().flat_map(|p| {
                [
                    GroupVersionKind::gvk(p.group, p.version, p.machine),
                    GroupVersionKind::gvk(p.group, p.version, p.template),
                ]
            }))
            .collect(),
    };
    let optional = |kind: &GroupVersionKind| kind.group == conversion::aws::capa::GROUP;
    let mut errors = Vec::new();
    for kind in kinds {
        let resource = ApiResource::from_gvk(&kind);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        let list = match api.list(&ListParams::default()).await {
            Ok(list) => list,
            // Another platform's kinds are not served here.
            Err(kube::Error::Api(status)) if status.code == 404 && optional(&kind) => continue,
            Err(source) => {
                return Err(ClusterError::Api {
                    what: format!("listing {}s in {namespace}", kind.kind),
                    source,
                });
            }
        };
        for (index, object) in list.items.into_iter().enumerate() {
            let mut value = serde_json::to_value(&object).unwrap_or(Value::Null);
            // Lists carry no per-item type.
            if let Some(fields) = value.as_object_mut() {
                fields.insert("apiVersion".into(), Value::String(resource.api_version.clone()));
                fields.insert("kind".into(), Value::String(resource.kind.clone()));
            }
            let origin = Origin {
                source: "cluster".to_owned(),
                document: index + 1,
                object: format!(
                    "{} {namespace}/{}",
                    kind.kind,
                    object.metadata.name.as_deref().unwrap_or_default()
                ),
            };
            if let Err(problem) = inputs.add(origin.clone(), value, direction) {
                errors.push(format!("{origin}: {problem}"));
            }
        }
    }
    Ok(errors)
}

/// `infrastructures.config.openshift.io/cluster`.
pub async fn read_infrastructure(client: &Client) -> Result<Infrastructure, ClusterError> {
    let api: Api<Infrastructure> = Api::all(client.clone());
    api.get(infrastructure::CLUSTER)
        .await
        .map_err(|source| ClusterError::Api {
            what: format!(
                "reading infrastructures.{}/{}",
                infrastructure::GROUP,
                infrastructure::CLUSTER
            ),
            source,
        })
}

fn gvk<K: Resource<DynamicType = ()>>() -> GroupVersionKind {
    GroupVersionKind::gvk(&K::group(&()), &K::version(&()), &K::kind(&()))
}
