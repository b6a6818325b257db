//! Loading example manifests into an API server, for `--embedded`, `controllers samples`
//! (any cluster), the tests and the memory benchmark: the files every platform shares
//! (`deploy/examples/*.yaml`: feature gate, user data) and those of one platform
//! (`deploy/examples/<platform>/*.yaml`: Infrastructure, machines), as one sequence.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use std::io::Write;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::discovery::Scope;
use kube::{Client, ResourceExt};
use serde_json::Value;

use crate::args::{KubeconfigArgs, NamespaceArgs};

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
        source: Box<kube::Error>,
    },
}

/// The namespaces the samples are written for (rewritten to `--mapi-namespace` and
/// `--capi-namespace`).
pub const SAMPLE_NAMESPACES: [&str; 2] = ["openshift-machine-api", "openshift-cluster-api"];

/// Renames the namespaces the samples are written for to `namespaces`.
pub fn sample_namespaces(namespaces: &sync_core::Namespaces) -> impl Fn(&str) -> String + '_ {
    move |namespace: &str| match namespace {
        n if n == SAMPLE_NAMESPACES[0] => namespaces.mapi.clone(),
        n if n == SAMPLE_NAMESPACES[1] => namespaces.capi.clone(),
        other => other.to_owned(),
    }
}

/// The platform of the sample cluster: which `deploy/examples/<platform>/` is loaded with
/// the shared samples, and which extra CRDs it needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SamplePlatform {
    /// An AWS cluster (Machine API AWS, CAPA), with a made-up second provider.
    #[default]
    Aws,
    /// An OpenStack cluster (Machine API OpenStack, CAPO `v1beta1`).
    #[value(name = "openstack")]
    OpenStack,
}

impl SamplePlatform {
    /// The platform's folder under the samples directory.
    pub fn dir_name(self) -> &'static str {
        match self {
            Self::Aws => "aws",
            Self::OpenStack => "openstack",
        }
    }

    /// The platform's own CRDs under `examples` (the AWS ones live in `examples/crds/`
    /// with the shared ones, which the tests load without any sample).
    pub fn crd_dir(self, examples: &Path) -> Option<PathBuf> {
        match self {
            Self::Aws => None,
            Self::OpenStack => Some(examples.join(self.dir_name()).join("crds")),
        }
    }

    /// The platform's conversion kinds (its name as `platformStatus.type` spells it, its
    /// InfraMachine kind).
    pub fn kinds(self) -> &'static conversion::platform::InfraKinds {
        match self {
            Self::Aws => &conversion::aws::KINDS,
            Self::OpenStack => &conversion::openstack::KINDS,
        }
    }

    /// The plural of the platform's InfraMachine kind, for kubectl.
    pub fn infra_machines(self) -> &'static str {
        match self {
            Self::Aws => "awsmachines",
            Self::OpenStack => "openstackmachines",
        }
    }
}

/// `controllers samples` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct SamplesArgs {
    /// The cluster to load them into.
    #[command(flatten)]
    pub cluster: KubeconfigArgs,
    /// Where the samples are written to: the operator's flags, environment variables and
    /// defaults (the samples' own namespaces are renamed to these).
    #[command(flatten)]
    pub namespaces: NamespaceArgs,
    /// The directory of sample manifests: its `*.yaml` and those of its `<platform>/`.
    #[arg(long, value_name = "DIR", default_value_os_t = deploy_dir().join("examples"))]
    pub dir: PathBuf,
    /// Which platform's samples.
    #[arg(long, value_enum, value_name = "PLATFORM", default_value_t = SamplePlatform::Aws)]
    pub platform: SamplePlatform,
}

/// Runs `controllers samples`: 0 when every sample is there, 2 otherwise (the message
/// names the file, the object and, for a server that cannot be reached, its URL).
pub async fn run(args: &SamplesArgs, out: &mut impl Write, err: &mut impl Write) -> u8 {
    let connection = match args.cluster.connect().await {
        Ok(connection) => connection,
        Err(error) => {
            let _ = writeln!(err, "controllers samples: {error}");
            return 2;
        }
    };
    let namespaces = args.namespaces.namespaces();
    let client = &connection.client;
    for namespace in [&namespaces.mapi, &namespaces.capi] {
        if let Err(error) = ensure_namespace(client, namespace).await {
            let _ = writeln!(
                err,
                "controllers samples: creating namespace {namespace}: {}",
                connection.explain(&error)
            );
            return 2;
        }
    }
    match load(client, &args.dir, args.platform, &sample_namespaces(&namespaces)).await {
        Ok(loaded) => {
            let _ = writeln!(
                out,
                "{} sample objects from {} in {} and {}: {} created, {} already there.",
                loaded.created + loaded.existing,
                args.dir.display(),
                namespaces.mapi,
                namespaces.capi,
                loaded.created,
                loaded.existing
            );
            0
        }
        Err(SampleError::Api {
            path,
            kind,
            name,
            source,
        }) => {
            let _ = writeln!(
                err,
                "controllers samples: {}: {kind} {name}: {}",
                path.display(),
                connection.explain(&source)
            );
            2
        }
        Err(error) => {
            let _ = writeln!(err, "controllers samples: {error}");
            2
        }
    }
}

/// Creates `name` unless it exists.
async fn ensure_namespace(client: &Client, name: &str) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(response)) if response.code == 409 => Ok(()),
        Err(error) => Err(error),
    }
}

/// The `deploy/` directory of this source tree.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// How many sample objects [`load`] created, and how many were there already.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Loaded {
    /// Created now.
    pub created: usize,
    /// Found (by name), and kept.
    pub existing: usize,
}

/// Creates the objects of every `*.yaml` file directly in `dir` and in `dir/<platform>/`
/// (sorted by file name across both, so that a platform's `10-…` comes between the shared
/// `05-…` and `15-…`), the way `kubectl create` would, then sets their `status` through
/// the status subresource. Owner references' `uid`s are filled in from the objects created
/// before them. Returns how many were created (see [`load`]).
pub async fn load_samples(
    client: &Client,
    dir: &Path,
    platform: SamplePlatform,
    rename_namespace: &dyn Fn(&str) -> String,
) -> Result<usize, SampleError> {
    load(client, dir, platform, rename_namespace)
        .await
        .map(|loaded| loaded.created)
}

/// [`load_samples`], counting the objects already there: one that exists is kept as it
/// is (its uid fills the owner references of the objects after it), so loading twice is
/// harmless.
pub async fn load(
    client: &Client,
    dir: &Path,
    platform: SamplePlatform,
    rename_namespace: &dyn Fn(&str) -> String,
) -> Result<Loaded, SampleError> {
    let mut documents = Vec::new();
    for path in sample_files(dir, platform)? {
        let docs = read_documents(&path)?;
        documents.extend(docs.into_iter().map(|doc| (path.clone(), doc)));
    }
    create_all(client, documents, rename_namespace).await
}

/// The shared sample files of `dir` and those of its platform folder, in load order.
pub fn sample_files(dir: &Path, platform: SamplePlatform) -> Result<Vec<PathBuf>, SampleError> {
    let mut files = yaml_files(dir)?;
    files.extend(yaml_files(&dir.join(platform.dir_name()))?);
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()).then_with(|| a.cmp(b)));
    Ok(files)
}

/// The `*.yaml` (`*.yml`) files directly in `dir`.
fn yaml_files(dir: &Path) -> Result<Vec<PathBuf>, SampleError> {
    let entries = std::fs::read_dir(dir).map_err(|e| SampleError::File {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    Ok(entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect())
}

/// The objects of a multi-document YAML file.
pub fn read_documents(path: &Path) -> Result<Vec<Value>, SampleError> {
    let sample_error = |message: String| SampleError::File {
        path: path.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(path).map_err(|e| sample_error(e.to_string()))?;
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).map_err(|e| sample_error(e.to_string()))?;
    Ok(docs.into_iter().filter(Value::is_object).collect())
}

/// (group, kind, namespace, name) → uid of the objects created so far.
type Uids = HashMap<(String, String, String, String), String>;

/// Creates `documents` (each with the file it came from, for messages) in order, as
/// [`load`] does.
pub async fn create_all(
    client: &Client,
    documents: Vec<(PathBuf, Value)>,
    rename_namespace: &dyn Fn(&str) -> String,
) -> Result<Loaded, SampleError> {
    let mut uids = Uids::new();
    let mut loaded = Loaded::default();
    for (path, mut doc) in documents {
        let namespace = doc["metadata"]["namespace"].as_str().map(rename_namespace);
        if let Some(namespace) = &namespace {
            doc["metadata"]["namespace"] = Value::String(namespace.clone());
        }
        let namespace = namespace.unwrap_or_default();
        fill_owner_uids(&mut doc, &namespace, &uids);
        if create_one(client, &path, doc, &namespace, &mut uids).await? {
            loaded.created += 1;
        } else {
            loaded.existing += 1;
        }
    }
    Ok(loaded)
}

/// Creates one object (kept as it is when it exists: `false`), then sets its status.
async fn create_one(
    client: &Client,
    path: &Path,
    mut doc: Value,
    namespace: &str,
    uids: &mut Uids,
) -> Result<bool, SampleError> {
    let sample_error = |message: String| SampleError::File {
        path: path.to_path_buf(),
        message,
    };
    let status = doc.as_object_mut().and_then(|map| map.remove("status"));
    let object: DynamicObject = serde_json::from_value(doc).map_err(|e| sample_error(e.to_string()))?;
    let types = object
        .types
        .clone()
        .ok_or_else(|| sample_error("an object without apiVersion/kind".into()))?;
    let gvk = GroupVersionKind::try_from(&types).map_err(|e| sample_error(e.to_string()))?;
    let name = object.name_any();
    let api_error = |source| SampleError::Api {
        path: path.to_path_buf(),
        kind: types.kind.clone(),
        name: format!("{namespace}/{name}"),
        source: Box::new(source),
    };
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .map_err(api_error)?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(client.clone(), namespace, &resource),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let (stored, created) = match api.create(&PostParams::default(), &object).await {
        Ok(stored) => (stored, true),
        Err(kube::Error::Api(response)) if response.code == 409 => {
            (api.get(&name).await.map_err(api_error)?, false)
        }
        Err(error) => return Err(api_error(error)),
    };
    if let Some(uid) = stored.uid() {
        let key = (
            gvk.group.clone(),
            gvk.kind.clone(),
            namespace.to_owned(),
            name.clone(),
        );
        uids.insert(key, uid);
    }
    if let Some(status) = status.filter(|_| created) {
        let patch = Patch::Merge(serde_json::json!({ "status": status }));
        api.patch_status(&name, &PatchParams::default(), &patch)
            .await
            .map_err(api_error)?;
    }
    Ok(created)
}

/// Sets the `uid` of every owner reference that names an object created before.
fn fill_owner_uids(doc: &mut Value, namespace: &str, uids: &Uids) {
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

    #[test]
    fn a_platform_loads_the_shared_files_and_its_own_in_file_name_order() -> Result<(), SampleError> {
        let examples = deploy_dir().join("examples");
        for platform in [SamplePlatform::Aws, SamplePlatform::OpenStack] {
            let files = sample_files(&examples, platform)?;
            let names: Vec<String> = files
                .iter()
                .filter_map(|f| f.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect();
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted, "{platform:?}");
            assert!(names.starts_with(&[
                "05-feature-gate.yaml".to_owned(),
                "10-infrastructure.yaml".to_owned()
            ]));
            assert!(names.contains(&"15-user-data.yaml".to_owned()));
            let own = files
                .iter()
                .filter(|f| f.parent().is_some_and(|p| p.ends_with(platform.dir_name())))
                .count();
            assert!(own >= 3, "{platform:?}: {files:?}");
        }
        Ok(())
    }
}
