//! Loading example manifests (`deploy/examples/*.yaml`) into an API server, for
//! `--embedded`, the tests and the memory benchmark.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Client, ResourceExt};
use serde_json::Value;

/// A sample could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum SampleError {
    /// A file could not be read or parsed.
    #[error("sample {path}: {message}")]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The server refused an object.
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
}

/// The `deploy/` directory of this source tree.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Creates the objects of every `*.yaml` file directly in `dir` (sorted by name), the way
/// `kubectl create` would, then sets their `status` through the status subresource.
/// Owner references' `uid`s are filled in from the objects created before them.
pub async fn load_samples(
    client: &Client,
    dir: &Path,
    rename_namespace: &dyn Fn(&str) -> String,
) -> Result<usize, SampleError> {
    let sample_error = |path: &Path, message: String| SampleError::File {
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
            let api_error = |source| SampleError::Api {
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
