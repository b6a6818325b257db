//! Support for the end-to-end suites: a cluster (envtest, or an existing cluster with
//! `USE_EXISTING_CLUSTER=true` and `KUBECONFIG`), object builders, and the real
//! `MachineSync`/`MachineSetSync` wiring run with recording hooks.
//!
//! Every test gets its own pair of namespaces (random suffix), so the same tests run
//! unchanged against a shared real cluster.
//!
//! [`bench`] is the benchmark suite (`cargo bench -p e2e --bench sync`) and
//! [`handwritten`] the kube-runtime controllers it measures the macro against.

pub mod bench;
pub mod handwritten;
pub mod migration;
pub mod real;
pub mod soak;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use controllers::machine::MachineSync;
use controllers::machine_set::MachineSetSync;
use envtest::TestEnv;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionSpec,
    CustomResourceDefinitionVersion, CustomResourceValidation, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::json;
use sync_core::api::{AuthoritativeApi, ContractVersionedObjectReference, capi, mapi};
use sync_core::testing::{RecordingHooks, RecordingObserver};
use sync_core::{InfraTracker, Namespaces, SyncConfig, SyncController};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The group of every infrastructure kind the suites use.
pub const INFRA_GROUP: &str = "infrastructure.cluster.x-k8s.io";

/// How long a test waits for something that should happen.
pub const WAIT: Duration = Duration::from_secs(20);

/// A boxed error for test bodies.
pub type TestResult<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

/// Whether the suites run against an existing cluster instead of envtest.
pub fn use_existing_cluster() -> bool {
    std::env::var("USE_EXISTING_CLUSTER").is_ok_and(|v| v == "true" || v == "1")
}

/// The namespace of the operator's ServiceAccount in `deploy/`.
pub const OPERATOR_NAMESPACE: &str = "openshift-machine-sync";
/// The operator's ServiceAccount in `deploy/`.
pub const OPERATOR_SERVICE_ACCOUNT: &str = "machine-sync-controllers";
/// The user the simulated providers run as on envtest: the Cluster API controllers'
/// ServiceAccount, which `deploy/admission-policies/` exempts.
pub const PROVIDERS_USER: &str = "system:serviceaccount:openshift-cluster-api:capi-controllers";

/// A cluster for one test, with its own MAPI and CAPI namespaces.
pub struct Cluster {
    /// The in-process server (`None` against an existing cluster).
    pub env: Option<TestEnv>,
    /// An admin client, for the test's own reads and writes.
    pub client: Client,
    /// The client the controllers run with: on envtest, the operator's ServiceAccount
    /// under exactly `deploy/`'s RBAC (enforced); on an existing cluster, the admin.
    pub controller_client: Client,
    /// The client the simulated providers run with: on envtest, the Cluster API
    /// controllers' ServiceAccount name (which the admission policies exempt, as they
    /// exempt the real providers), with an admin's permissions; else the admin.
    pub providers_client: Client,
    /// This test's namespaces.
    pub namespaces: Namespaces,
}

impl Cluster {
    /// Starts envtest with the project's CRDs (or connects to the existing cluster and
    /// installs them), creates this test's namespaces and, on envtest, installs the
    /// project's admission policies, as a cluster running the operator has them.
    pub async fn start() -> TestResult<Self> {
        Self::start_with_rbac(|_| {}).await
    }

    /// [`Cluster::start`] without `deploy/admission-policies/`: for the sync's own
    /// defenses, and for tests that stage what the policies forbid.
    pub async fn start_without_policies() -> TestResult<Self> {
        Self::start_with(|_| {}, false).await
    }

    /// [`Cluster::start`], with `edit` applied to `deploy/`'s RBAC objects first (to show a
    /// permission is needed).
    pub async fn start_with_rbac(edit: impl FnOnce(&mut Vec<serde_json::Value>)) -> TestResult<Self> {
        Self::start_with(edit, true).await
    }

    /// [`Cluster::start_with_rbac`], with the admission policies or without.
    pub async fn start_with(
        edit: impl FnOnce(&mut Vec<serde_json::Value>),
        policies: bool,
    ) -> TestResult<Self> {
        let suffix = random_suffix();
        let namespaces = Namespaces {
            mapi: format!("mapi-{suffix}"),
            capi: format!("capi-{suffix}"),
        };
        let (env, client) = if use_existing_cluster() {
            let client = Client::try_default().await?;
            for (_, crd) in sync_core::api::crds::all() {
                apply_crd(&client, &crd).await?;
            }
            (None, client)
        } else {
            let env = TestEnv::builder()
                .crd_dir(crd_dir())
                .service_account(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT)
                .user(PROVIDERS_USER, &["system:masters"])
                .start()
                .await?;
            let client = env.client();
            (Some(env), client)
        };
        let mut cluster = Self {
            env,
            controller_client: client.clone(),
            providers_client: client.clone(),
            client,
            namespaces,
        };
        for namespace in [&cluster.namespaces.mapi, &cluster.namespaces.capi] {
            cluster.create_namespace(namespace).await?;
        }
        if let Some(env) = &cluster.env {
            cluster.create_namespace(OPERATOR_NAMESPACE).await?;
            let mut rbac = operator_rbac(&cluster.namespaces)?;
            edit(&mut rbac);
            for object in rbac {
                apply_object(&cluster.client, object).await?;
            }
            let user = envtest::service_account_user(OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT);
            cluster.controller_client = env.client_as(&user).await?;
            cluster.providers_client = env.client_as(PROVIDERS_USER).await?;
            if policies {
                cluster.install_policies().await?;
            }
        }
        Ok(cluster)
    }

    /// Installs `deploy/admission-policies/` for this test's namespaces: the controllers
    /// (the operator's ServiceAccount) are exempt, the test's admin client is not.
    pub async fn install_policies(&self) -> TestResult {
        install_policies(&self.client, &self.namespaces).await?;
        Ok(())
    }

    /// The in-process server, for fault injection; `None` against a real cluster.
    pub fn envtest(&self) -> Option<&TestEnv> {
        self.env.as_ref()
    }

    /// Creates a namespace.
    pub async fn create_namespace(&self, name: &str) -> TestResult {
        let namespace = Namespace {
            metadata: meta(name),
            ..Namespace::default()
        };
        Api::<Namespace>::all(self.client.clone())
            .create(&PostParams::default(), &namespace)
            .await?;
        Ok(())
    }

    /// Installs an infrastructure CRD (see [`infra_crd`]) and waits until it is served.
    pub async fn install_crd(&self, crd: &CustomResourceDefinition) -> TestResult {
        apply_crd(&self.client, crd).await
    }

    /// Replaces the schema of every version of CRD `name` with one that accepts any
    /// object: a cluster whose CRD is skewed from our types (a newer API with values or
    /// shapes this build does not know). The only way such objects reach the controllers.
    pub async fn skew_crd(&self, name: &str) -> TestResult {
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
            CustomResourceSubresourceStatus, CustomResourceSubresources,
        };
        let crds: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let mut crd = crds.get(name).await?;
        for version in &mut crd.spec.versions {
            version.schema = Some(CustomResourceValidation {
                open_api_v3_schema: Some(JSONSchemaProps {
                    type_: Some("object".into()),
                    x_kubernetes_preserve_unknown_fields: Some(true),
                    ..Default::default()
                }),
            });
            version.subresources = Some(CustomResourceSubresources {
                status: Some(CustomResourceSubresourceStatus(serde_json::Value::Object(
                    Default::default(),
                ))),
                scale: None,
            });
        }
        crds.replace(name, &PostParams::default(), &crd).await?;
        Ok(())
    }

    /// The raw (schema-free) API of a CAPI kind, for objects our types cannot express.
    pub fn raw_capi<K: Resource<DynamicType = ()>>(&self) -> Api<DynamicObject> {
        let resource = ApiResource::erase::<K>(&());
        Api::namespaced_with(self.client.clone(), &self.namespaces.capi, &resource)
    }

    /// MAPI Machines in this test's MAPI namespace.
    pub fn mapi_machines(&self) -> Api<mapi::Machine> {
        Api::namespaced(self.client.clone(), &self.namespaces.mapi)
    }

    /// MAPI MachineSets in this test's MAPI namespace.
    pub fn mapi_machine_sets(&self) -> Api<mapi::MachineSet> {
        Api::namespaced(self.client.clone(), &self.namespaces.mapi)
    }

    /// CAPI Machines in this test's CAPI namespace.
    pub fn capi_machines(&self) -> Api<capi::Machine> {
        Api::namespaced(self.client.clone(), &self.namespaces.capi)
    }

    /// CAPI MachineSets in this test's CAPI namespace.
    pub fn capi_machine_sets(&self) -> Api<capi::MachineSet> {
        Api::namespaced(self.client.clone(), &self.namespaces.capi)
    }

    /// Infrastructure objects of `kind` (served at `version`) in the CAPI namespace.
    pub fn infra(&self, kind: &str, version: &str) -> Api<DynamicObject> {
        let resource = infra_resource(kind, version);
        Api::namespaced_with(self.client.clone(), &self.namespaces.capi, &resource)
    }

    /// Creates a MAPI Machine and sets its `status.authoritativeAPI` (`None`: unset).
    pub async fn create_mapi_machine(
        &self,
        name: &str,
        authority: Option<&str>,
    ) -> TestResult<mapi::Machine> {
        let machine = mapi::Machine::new(name, mapi::MachineSpec::default());
        let created = self
            .mapi_machines()
            .create(&PostParams::default(), &machine)
            .await?;
        match authority {
            Some(authority) => self.set_machine_authority(name, authority).await,
            None => Ok(created),
        }
    }

    /// Sets a MAPI Machine's `status.authoritativeAPI` through the status subresource.
    pub async fn set_machine_authority(&self, name: &str, authority: &str) -> TestResult<mapi::Machine> {
        let patch = json!({ "status": { "authoritativeAPI": authority } });
        Ok(self
            .mapi_machines()
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    /// Creates a MAPI MachineSet and sets its `status.authoritativeAPI`.
    pub async fn create_mapi_machine_set(
        &self,
        name: &str,
        authority: Option<&str>,
    ) -> TestResult<mapi::MachineSet> {
        let set = mapi::MachineSet::new(name, mapi::MachineSetSpec::default());
        let created = self
            .mapi_machine_sets()
            .create(&PostParams::default(), &set)
            .await?;
        let Some(authority) = authority else {
            return Ok(created);
        };
        let patch = json!({ "status": { "authoritativeAPI": authority, "replicas": 0 } });
        Ok(self
            .mapi_machine_sets()
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?)
    }

    /// Creates a CAPI Machine referencing `infra` (`(kind, name)` in [`INFRA_GROUP`]),
    /// owned by the CAPI MachineSet `owner` if given.
    pub async fn create_capi_machine(
        &self,
        name: &str,
        infra: (&str, &str),
        owner: Option<&capi::MachineSet>,
    ) -> TestResult<capi::Machine> {
        let mut machine = capi::Machine::new(name, capi_machine_spec(infra));
        machine.metadata.owner_references = owner.map(|set| vec![controller_owner(set)]);
        Ok(self
            .capi_machines()
            .create(&PostParams::default(), &machine)
            .await?)
    }

    /// Creates a CAPI MachineSet whose template references `infra`.
    pub async fn create_capi_machine_set(
        &self,
        name: &str,
        infra: (&str, &str),
    ) -> TestResult<capi::MachineSet> {
        let spec = capi::MachineSetSpec {
            cluster_name: "cluster".into(),
            selector: Default::default(),
            template: capi::MachineTemplateSpec {
                metadata: None,
                spec: capi_machine_spec(infra),
            },
            ..Default::default()
        };
        let set = capi::MachineSet::new(name, spec);
        Ok(self
            .capi_machine_sets()
            .create(&PostParams::default(), &set)
            .await?)
    }

    /// Creates an infrastructure object, with optional labels.
    pub async fn create_infra(
        &self,
        kind: &str,
        version: &str,
        name: &str,
        labels: &[(&str, &str)],
    ) -> TestResult<DynamicObject> {
        let resource = infra_resource(kind, version);
        let mut object = DynamicObject::new(name, &resource).data(json!({ "spec": { "generation": 0 } }));
        object.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<BTreeMap<_, _>>(),
        );
        Ok(self
            .infra(kind, version)
            .create(&PostParams::default(), &object)
            .await?)
    }

    /// Changes an infrastructure object's spec (a change its watch sees).
    pub async fn touch_infra(&self, kind: &str, version: &str, name: &str, generation: u64) -> TestResult {
        let patch = json!({ "spec": { "generation": generation } });
        self.infra(kind, version)
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    /// Warning Events in `namespace` with `reason`, as `(involved object name, note)`.
    pub async fn warning_events(&self, namespace: &str, reason: &str) -> TestResult<Vec<(String, String)>> {
        use k8s_openapi::api::events::v1::Event;
        let events = Api::<Event>::namespaced(self.client.clone(), namespace)
            .list(&Default::default())
            .await?;
        Ok(events
            .items
            .into_iter()
            .filter(|e| e.type_.as_deref() == Some("Warning") && e.reason.as_deref() == Some(reason))
            .map(|e| {
                let regarding = e.regarding.and_then(|r| r.name).unwrap_or_default();
                (regarding, e.note.unwrap_or_default())
            })
            .collect())
    }

    /// Waits until a Warning Event with `reason` about `name` exists in `namespace`;
    /// returns its note.
    pub async fn wait_for_warning(&self, namespace: &str, reason: &str, name: &str) -> TestResult<String> {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let events = self.warning_events(namespace, reason).await?;
            if let Some((_, note)) = events.into_iter().find(|(regarding, _)| regarding == name) {
                return Ok(note);
            }
            if tokio::time::Instant::now() > deadline {
                return Err(format!("no Warning Event {reason} about {namespace}/{name}").into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The project's generated CRDs.
pub fn crd_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds")
}

/// A CAPI Machine spec referencing `(kind, name)` in [`INFRA_GROUP`].
pub fn capi_machine_spec((kind, name): (&str, &str)) -> capi::MachineSpec {
    capi::MachineSpec {
        cluster_name: "cluster".into(),
        bootstrap: capi::Bootstrap {
            config_ref: None,
            data_secret_name: Some("bootstrap".into()),
        },
        infrastructure_ref: ContractVersionedObjectReference {
            api_group: INFRA_GROUP.into(),
            kind: kind.into(),
            name: name.into(),
        },
        ..Default::default()
    }
}

/// The controller ownerReference a CAPI MachineSet puts on its Machines.
pub fn controller_owner(set: &capi::MachineSet) -> OwnerReference {
    OwnerReference {
        api_version: capi::MachineSet::api_version(&()).into_owned(),
        kind: "MachineSet".into(),
        name: set.name_any(),
        uid: set.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The resource of an infrastructure kind (`DevMachine` → `devmachines`).
pub fn infra_resource(kind: &str, version: &str) -> ApiResource {
    ApiResource {
        group: INFRA_GROUP.into(),
        version: version.into(),
        api_version: format!("{INFRA_GROUP}/{version}"),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    }
}

/// A namespaced infrastructure CRD serving `versions` (the last is the storage version),
/// with the Cluster API contract label when given (e.g. `v1beta1_v1beta2`).
pub fn infra_crd(kind: &str, versions: &[&str], contract: Option<&str>) -> CustomResourceDefinition {
    let plural = format!("{}s", kind.to_lowercase());
    let schema = JSONSchemaProps {
        type_: Some("object".into()),
        x_kubernetes_preserve_unknown_fields: Some(true),
        ..Default::default()
    };
    let versions = versions
        .iter()
        .enumerate()
        .map(|(i, name)| CustomResourceDefinitionVersion {
            name: (*name).into(),
            served: true,
            storage: i + 1 == versions.len(),
            schema: Some(CustomResourceValidation {
                open_api_v3_schema: Some(schema.clone()),
            }),
            ..Default::default()
        })
        .collect();
    let mut metadata = meta(&format!("{plural}.{INFRA_GROUP}"));
    metadata.labels =
        contract.map(|c| [(sync_core::api::CONTRACT_LABEL_V1BETA2.to_owned(), c.to_owned())].into());
    CustomResourceDefinition {
        metadata,
        spec: CustomResourceDefinitionSpec {
            group: INFRA_GROUP.into(),
            names: CustomResourceDefinitionNames {
                kind: kind.into(),
                plural: plural.clone(),
                singular: Some(kind.to_lowercase()),
                list_kind: Some(format!("{kind}List")),
                ..Default::default()
            },
            scope: "Namespaced".into(),
            versions,
            ..Default::default()
        },
        status: None,
    }
}

/// Creates `deploy/admission-policies/` through `client`, its namespaces renamed to
/// `namespaces`; returns the policies and bindings created.
pub async fn install_policies(
    client: &Client,
    namespaces: &Namespaces,
) -> TestResult<Vec<serde_json::Value>> {
    let deploy = controllers::operator::samples::deploy_dir();
    let rename = controllers::operator::samples::sample_namespaces(namespaces);
    let policies =
        controllers::operator::policies::render(&controllers::operator::policies::dir(&deploy), &rename)?;
    let created = policies.iter().map(|(_, doc)| doc.clone()).collect();
    controllers::operator::samples::create_all(client, policies, &rename).await?;
    Ok(created)
}

/// An envtest for the admission policies on their own: the project's and the examples'
/// CRDs, the `openshift-machine-api` and `openshift-cluster-api` namespaces, and three
/// users with an admin's permissions: `alice` (whom the policies check), the operator and
/// the providers (whom they exempt).
pub async fn policy_env() -> TestResult<TestEnv> {
    use controllers::operator::policies::{OPERATOR_USER, PROVIDERS_USER};
    let deploy = controllers::operator::samples::deploy_dir();
    let namespaces = default_namespaces();
    Ok(TestEnv::builder()
        .crd_dir(deploy.join("crds"))
        .crd_dir(deploy.join("examples/crds"))
        .namespace(&namespaces.mapi)
        .namespace(&namespaces.capi)
        .user("alice", &["system:masters"])
        .user(OPERATOR_USER, &["system:masters"])
        .user(PROVIDERS_USER, &["system:masters"])
        .start()
        .await?)
}

/// The namespaces `deploy/` is written for: `openshift-machine-api`, `openshift-cluster-api`.
pub fn default_namespaces() -> Namespaces {
    let [mapi, capi] = controllers::operator::samples::SAMPLE_NAMESPACES;
    Namespaces {
        mapi: mapi.into(),
        capi: capi.into(),
    }
}

/// The RBAC objects of `deploy/` as `kubectl kustomize` renders them, with the MAPI and
/// CAPI namespaces replaced by this test's.
pub fn operator_rbac(namespaces: &Namespaces) -> TestResult<Vec<serde_json::Value>> {
    let deploy = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let output = std::process::Command::new("kubectl")
        .arg("kustomize")
        .arg(&deploy)
        .output()?;
    if !output.status.success() {
        return Err(format!(
            "kubectl kustomize deploy/: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    let text = String::from_utf8_lossy(&output.stdout)
        .replace(
            "namespace: openshift-machine-api",
            &format!("namespace: {}", namespaces.mapi),
        )
        .replace(
            "namespace: openshift-cluster-api",
            &format!("namespace: {}", namespaces.capi),
        );
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(&text)?;
    Ok(docs
        .into_iter()
        .filter(|d| {
            d["apiVersion"]
                .as_str()
                .is_some_and(|v| v.starts_with("rbac.authorization.k8s.io/"))
        })
        .collect())
}

async fn apply_object(client: &Client, object: serde_json::Value) -> TestResult {
    let object: DynamicObject = serde_json::from_value(object)?;
    let types = object.types.clone().ok_or("object without apiVersion/kind")?;
    let gvk = kube::core::GroupVersionKind::try_from(&types)?;
    let resource = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = match object.metadata.namespace.as_deref() {
        Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.create(&PostParams::default(), &object).await?;
    Ok(())
}

pub(crate) async fn apply_crd(client: &Client, crd: &CustomResourceDefinition) -> TestResult {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.create(&PostParams::default(), crd).await {
        Ok(_) => {}
        // An existing cluster may have it already.
        Err(kube::Error::Api(status)) if status.reason == "AlreadyExists" => {}
        Err(error) => return Err(error.into()),
    }
    let established = kube::runtime::conditions::is_crd_established();
    tokio::time::timeout(
        WAIT,
        kube::runtime::wait::await_condition(crds, &crd.name_any(), established),
    )
    .await??;
    Ok(())
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        ..ObjectMeta::default()
    }
}

fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("{:08x}", hasher.finish() as u32)
}

/// Both controllers running with recording hooks and one shared infrastructure tracker.
pub struct Controllers {
    /// Calls of the Machine controller's hooks.
    pub machines: RecordingHooks<MachineSync>,
    /// Calls of the MachineSet controller's hooks.
    pub machine_sets: RecordingHooks<MachineSetSync>,
    /// Every reconcile of both controllers.
    pub observer: RecordingObserver,
    /// The shared infrastructure watches.
    pub tracker: InfraTracker,
    stop: Option<oneshot::Sender<()>>,
    tasks: Vec<JoinHandle<()>>,
    server: Option<Arc<envtest::api::Shared>>,
}

impl Controllers {
    /// Starts both controllers against `cluster` and waits until their caches synced.
    pub async fn start(cluster: &Cluster) -> TestResult<Self> {
        let config = SyncConfig {
            namespaces: cluster.namespaces.clone(),
            ..SyncConfig::default()
        };
        let mut infra = controllers::platform::infra_config(&cluster.namespaces.capi);
        infra.grace = Duration::from_millis(300);
        infra.retry.base = Duration::from_millis(50);
        infra.retry.max = Duration::from_secs(1);
        let tracker = InfraTracker::new(cluster.controller_client.clone(), infra);
        let observer = RecordingObserver::new();
        let (stop, stopped) = oneshot::channel::<()>();
        let stopped = futures::FutureExt::shared(async move {
            let _ = stopped.await;
        });

        let machines = RecordingHooks::<MachineSync>::new();
        let machine_controller =
            SyncController::<MachineSync>::new(cluster.controller_client.clone(), config.clone())
                .with_infra(tracker.clone())
                .with_observer(Arc::new(observer.clone()));
        let machine_sets = RecordingHooks::<MachineSetSync>::new();
        let set_controller = SyncController::<MachineSetSync>::new(cluster.controller_client.clone(), config)
            .with_infra(tracker.clone())
            .with_observer(Arc::new(observer.clone()));
        let mut ready = [machine_controller.readiness(), set_controller.readiness()];
        let tasks = vec![
            tokio::spawn(machine_controller.run(machines.clone(), stopped.clone())),
            tokio::spawn(set_controller.run(machine_sets.clone(), stopped)),
        ];
        for readiness in &mut ready {
            tokio::time::timeout(WAIT, readiness.wait()).await?;
        }
        let server = cluster.env.as_ref().map(TestEnv::shared);
        Ok(Self {
            machines,
            machine_sets,
            observer,
            tracker,
            stop: Some(stop),
            tasks,
            server,
        })
    }

    /// Stops both controllers and waits for them to finish.
    pub async fn stop(mut self) -> TestResult {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        for task in self.tasks.drain(..) {
            tokio::time::timeout(WAIT, task).await??;
        }
        // The controllers ran as the operator's ServiceAccount: any Forbidden means
        // deploy/'s RBAC lacks a permission they use.
        let denials = self.server.as_ref().map(|s| s.denials.all()).unwrap_or_default();
        if !denials.is_empty() {
            return Err(format!("the controllers met Forbidden: {denials:#?}").into());
        }
        Ok(())
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// `AuthoritativeApi` of a MAPI object's status, for assertions.
pub fn status_authority(machine: &mapi::Machine) -> Option<AuthoritativeApi> {
    machine.status.as_ref()?.sync.authoritative_api.clone()
}

/// Installs a tracing subscriber once (RUST_LOG controls it), for debugging a test.
pub fn init_logging() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
}
