//! `--embedded`: an in-process API server (sync-core's envtest) with the project's CRDs,
//! example infrastructure CRDs and sample objects, so that the operator runs, reconciles
//! and answers `kubectl` on a laptop without a cluster.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Client, ResourceExt};
use serde_json::Value;
use sync_core::envtest::{EnvtestError, TestEnv};
use tokio_util::sync::CancellationToken;

use super::cli::Cli;
use super::run::{Exit, Operator, OperatorError, Settings};

/// The namespaces the samples are written for (rewritten to `--mapi-namespace` and
/// `--capi-namespace`).
const SAMPLE_NAMESPACES: [&str; 2] = ["openshift-machine-api", "openshift-cluster-api"];

/// `--embedded` failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedError {
    /// The API server did not start.
    #[error("embedded API server: {0}")]
    Envtest(#[from] EnvtestError),
    /// A sample file could not be read or parsed.
    #[error("sample {path}: {message}")]
    Sample {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The server refused a sample object.
    #[error("sample {path}: {kind} {name}: {source}")]
    Api {
        /// The file.
        path: PathBuf,
        /// The object's kind.
        kind: String,
        /// The object's namespace/name.
        name: String,
        /// The error.
        #[source]
        source: kube::Error,
    },
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

/// The `deploy/` directory of this source tree.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
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
    let deploy = deploy_dir();
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

/// Creates the objects of every `*.yaml` file directly in `dir` (sorted by name), the way
/// `kubectl create` would, then sets their `status` through the status subresource.
/// Owner references' `uid`s are filled in from the objects created before them.
pub async fn load_samples(
    client: &Client,
    dir: &Path,
    rename_namespace: &dyn Fn(&str) -> String,
) -> Result<usize, EmbeddedError> {
    let sample_error = |path: &Path, message: String| EmbeddedError::Sample {
        path: path.to_path_buf(),
        message,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| sample_error(dir, e.to_string()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    files.sort();
    // (group, kind, namespace, name) → uid
    let mut uids: HashMap<(String, String, String, String), String> = HashMap::new();
    let mut created = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(|e| sample_error(&path, e.to_string()))?;
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&text).map_err(|e| sample_error(&path, e.to_string()))?;
        for mut doc in docs.into_iter().filter(Value::is_object) {
            let namespace = doc["metadata"]["namespace"].as_str().map(rename_namespace);
            if let Some(namespace) = &namespace {
                doc["metadata"]["namespace"] = Value::String(namespace.clone());
            }
            let namespace = namespace.unwrap_or_default();
            fill_owner_uids(&mut doc, &namespace, &uids);
            let status = doc.as_object_mut().and_then(|map| map.remove("status"));
            let object: DynamicObject =
                serde_json::from_value(doc).map_err(|e| sample_error(&path, e.to_string()))?;
            let types = object
                .types
                .clone()
                .ok_or_else(|| sample_error(&path, "an object without apiVersion/kind".into()))?;
            let gvk = GroupVersionKind::try_from(&types).map_err(|e| sample_error(&path, e.to_string()))?;
            let name = object.name_any();
            let api_error = |source| EmbeddedError::Api {
                path: path.clone(),
                kind: types.kind.clone(),
                name: format!("{namespace}/{name}"),
                source,
            };
            let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
                .await
                .map_err(api_error)?;
            let api: Api<DynamicObject> = match capabilities.scope {
                Scope::Namespaced => Api::namespaced_with(client.clone(), &namespace, &resource),
                Scope::Cluster => Api::all_with(client.clone(), &resource),
            };
            let stored = api
                .create(&PostParams::default(), &object)
                .await
                .map_err(api_error)?;
            if let Some(uid) = stored.uid() {
                uids.insert(
                    (
                        gvk.group.clone(),
                        gvk.kind.clone(),
                        namespace.clone(),
                        name.clone(),
                    ),
                    uid,
                );
            }
            if let Some(status) = status {
                let patch = Patch::Merge(serde_json::json!({ "status": status }));
                api.patch_status(&name, &PatchParams::default(), &patch)
                    .await
                    .map_err(api_error)?;
            }
            created += 1;
        }
    }
    Ok(created)
}

/// Sets the `uid` of every owner reference that names an object created before.
fn fill_owner_uids(
    doc: &mut Value,
    namespace: &str,
    uids: &HashMap<(String, String, String, String), String>,
) {
    let Some(owners) = doc["metadata"]["ownerReferences"].as_array_mut() else {
        return;
    };
    for owner in owners {
        let group = owner["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/').map(|(group, _)| group.to_owned()))
            .unwrap_or_default();
        let key = (
            group,
            owner["kind"].as_str().unwrap_or_default().to_owned(),
            namespace.to_owned(),
            owner["name"].as_str().unwrap_or_default().to_owned(),
        );
        if let Some(uid) = uids.get(&key) {
            owner["uid"] = Value::String(uid.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn owner_uids_come_from_objects_created_before() {
        let mut uids = HashMap::new();
        uids.insert(
            (
                "cluster.x-k8s.io".into(),
                "MachineSet".into(),
                "ns".into(),
                "set-a".into(),
            ),
            "uid-1".to_owned(),
        );
        let mut doc = json!({"metadata": {"ownerReferences": [
            {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "set-a", "uid": "x"},
            {"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "name": "other", "uid": "y"},
        ]}});
        fill_owner_uids(&mut doc, "ns", &uids);
        assert_eq!(doc["metadata"]["ownerReferences"][0]["uid"], "uid-1");
        assert_eq!(doc["metadata"]["ownerReferences"][1]["uid"], "y");
    }
}
