//! The real sync on a test cluster: both controllers with the AWS hooks (as the operator's
//! ServiceAccount), optionally the simulated providers, and AWS object builders.

use std::sync::Arc;
use std::time::Duration;

use controllers::machine::{MachineHooks, MachineSync};
use controllers::machine_set::{MachineSetHooks, MachineSetSync};
use controllers::migration::{
    MachineMigration, MachineMigrationHooks, MachineSetMigration, MachineSetMigrationHooks, MigrationConfig,
};
use controllers::simulate::SimulatedProviders;
use controllers::sync::Cluster as ClusterFacts;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::{AuthoritativeApi, mapi};
use sync_core::testing::RecordingObserver;
use sync_core::{InfraConfig, InfraTracker, SyncConfig, SyncController};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{Cluster, INFRA_GROUP, TestResult, WAIT, apply_crd, infra_resource};

/// The infrastructure name of the test clusters.
pub const CLUSTER_NAME: &str = "demo-x7k2p";
/// Their region.
pub const REGION: &str = "us-east-1";
/// The AWS kinds' served version.
pub const AWS_VERSION: &str = "v1beta2";

/// A cluster with CAPA's real AWSMachine and AWSMachineTemplate CRDs (and the admission
/// policies).
pub async fn aws_cluster() -> TestResult<Cluster> {
    with_aws_crds(Cluster::start().await?).await
}

/// [`aws_cluster`] without the admission policies: for the sync's own defenses.
pub async fn aws_cluster_without_policies() -> TestResult<Cluster> {
    with_aws_crds(Cluster::start_without_policies().await?).await
}

async fn with_aws_crds(cluster: Cluster) -> TestResult<Cluster> {
    crate::init_logging();
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../envtest/tests/fixtures/upstream-crds");
    for file in [
        "infrastructure.cluster.x-k8s.io_awsmachines.yaml",
        "infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml",
    ] {
        let text = std::fs::read_to_string(fixtures.join(file))?;
        let crd: CustomResourceDefinition = serde_saphyr::from_str(&text)?;
        apply_crd(&cluster.client, &crd).await?;
    }
    Ok(cluster)
}

/// The `Infrastructure` object of the test clusters: AWS, [`CLUSTER_NAME`], [`REGION`].
pub fn infrastructure() -> TestResult<sync_core::api::Infrastructure> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "config.openshift.io/v1", "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "spec": {"platformSpec": {"type": "AWS"}},
        "status": {"infrastructureName": CLUSTER_NAME, "platform": "AWS",
                   "platformStatus": {"type": "AWS", "aws": {"region": REGION}}}
    }))?)
}

/// The controllers with the real hooks (and the simulated providers).
pub struct RealSync {
    /// Every reconcile of both controllers.
    pub observer: RecordingObserver,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    server: Option<Arc<envtest::api::Shared>>,
}

impl RealSync {
    /// Starts both controllers (and, with `providers`, the simulated providers, as admin:
    /// they stand for other controllers) and waits for their caches.
    pub async fn start(cluster: &Cluster, providers: bool) -> TestResult<Self> {
        Self::start_with(cluster, providers, None).await
    }

    /// [`RealSync::start`], plus the Machine and MachineSet migration controllers with
    /// `migration`.
    pub async fn start_migrating(
        cluster: &Cluster,
        providers: bool,
        migration: MigrationConfig,
    ) -> TestResult<Self> {
        Self::start_with(cluster, providers, Some(migration)).await
    }

    async fn start_with(
        cluster: &Cluster,
        providers: bool,
        migration: Option<MigrationConfig>,
    ) -> TestResult<Self> {
        let config = SyncConfig {
            namespaces: cluster.namespaces.clone(),
            ..SyncConfig::default()
        };
        let mut infra = InfraConfig::new(&cluster.namespaces.capi);
        infra.grace = Duration::from_millis(300);
        infra.retry.base = Duration::from_millis(50);
        infra.retry.max = Duration::from_secs(1);
        let tracker = InfraTracker::new(cluster.controller_client.clone(), infra);
        let observer = RecordingObserver::new();
        let facts = Arc::new(ClusterFacts::from_infrastructure(infrastructure()?));
        let platform = controllers::platform::for_cluster(&facts)?;
        // As the operator keeps them: in its own namespace, for this build and cluster.
        let checkpoint = facts
            .checkpoint(crate::OPERATOR_NAMESPACE, &cluster.namespaces)
            .await?;
        let stop = CancellationToken::new();
        let machines = SyncController::<MachineSync>::new(cluster.controller_client.clone(), config.clone())
            .with_infra(tracker.clone())
            .with_observer(Arc::new(observer.clone()))
            .with_checkpoint(checkpoint.clone());
        let sets = SyncController::<MachineSetSync>::new(cluster.controller_client.clone(), config.clone())
            .with_infra(tracker.clone())
            .with_observer(Arc::new(observer.clone()))
            .with_checkpoint(checkpoint);
        let mut ready = vec![machines.readiness(), sets.readiness()];
        let mut tasks = vec![
            tokio::spawn(machines.run(
                MachineHooks::new(platform.clone(), facts.clone()).with_capi_sets(sets.caches().capi),
                stop.clone().cancelled_owned(),
            )),
            tokio::spawn(sets.run(
                MachineSetHooks {
                    platform,
                    cluster: facts,
                },
                stop.clone().cancelled_owned(),
            )),
        ];
        if let Some(migration) = migration {
            let machines =
                SyncController::<MachineMigration>::new(cluster.controller_client.clone(), config.clone())
                    .with_infra(tracker.clone())
                    .with_observer(Arc::new(observer.clone()));
            let sets = SyncController::<MachineSetMigration>::new(cluster.controller_client.clone(), config)
                .with_infra(tracker)
                .with_observer(Arc::new(observer.clone()));
            ready.extend([machines.readiness(), sets.readiness()]);
            tasks.push(tokio::spawn(machines.run_migration(
                MachineMigrationHooks::new(migration.clone()),
                stop.clone().cancelled_owned(),
            )));
            tasks.push(tokio::spawn(sets.run_migration(
                MachineSetMigrationHooks::new(migration),
                stop.clone().cancelled_owned(),
            )));
        }
        if providers {
            let simulated =
                SimulatedProviders::new(cluster.providers_client.clone(), cluster.namespaces.clone());
            tasks.push(tokio::spawn(simulated.run(stop.clone())));
        }
        for readiness in &mut ready {
            tokio::time::timeout(WAIT, readiness.wait()).await?;
        }
        Ok(Self {
            observer,
            stop,
            tasks,
            server: cluster.env.as_ref().map(envtest::TestEnv::shared),
        })
    }

    /// Stops everything; fails on any Forbidden the controllers met.
    pub async fn stop(mut self) -> TestResult {
        self.stop.cancel();
        for task in self.tasks.drain(..) {
            tokio::time::timeout(WAIT, task).await??;
        }
        let denials = self.server.as_ref().map(|s| s.denials.all()).unwrap_or_default();
        if !denials.is_empty() {
            return Err(format!("the controllers met Forbidden: {denials:#?}").into());
        }
        Ok(())
    }
}

impl Drop for RealSync {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// An AWS providerSpec value.
pub fn provider_spec(instance_type: &str) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "AWSMachineProviderConfig",
        "instanceType": instance_type,
        "ami": {"id": "ami-0123456789abcdef0"},
        "credentialsSecret": {"name": "aws-cloud-credentials"},
        "userDataSecret": {"name": "worker-user-data"},
        "placement": {"region": REGION, "availabilityZone": "us-east-1a"},
        "iamInstanceProfile": {"id": "demo-worker-profile"},
        "subnet": {"id": "subnet-1"},
        "blockDevices": [{"ebs": {"volumeSize": 120, "volumeType": "gp3"}}],
    })
}

/// A MAPI Machine with an AWS providerSpec, `labels`, and `status.authoritativeAPI`.
pub async fn create_aws_machine(
    cluster: &Cluster,
    name: &str,
    authority: &str,
    labels: &[(&str, &str)],
    owner: Option<&mapi::MachineSet>,
    provider: Value,
) -> TestResult<mapi::Machine> {
    let mut machine: mapi::Machine = serde_json::from_value(json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": name, "labels": labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()},
        "spec": {"authoritativeAPI": authority, "providerSpec": {"value": provider}},
    }))?;
    if let Some(owner) = owner {
        machine.metadata.owner_references =
            Some(vec![owner.controller_owner_ref(&()).ok_or("owner without uid")?]);
    }
    cluster
        .mapi_machines()
        .create(&PostParams::default(), &machine)
        .await?;
    cluster.set_machine_authority(name, authority).await
}

/// A MAPI MachineSet with an AWS template and `status.authoritativeAPI`.
pub async fn create_aws_machine_set(
    cluster: &Cluster,
    name: &str,
    authority: &str,
    replicas: i32,
    provider: Value,
) -> TestResult<mapi::MachineSet> {
    create_owned_aws_machine_set(cluster, name, authority, replicas, provider, json!([])).await
}

/// [`create_aws_machine_set`] with `ownerReferences` from the start.
pub async fn create_owned_aws_machine_set(
    cluster: &Cluster,
    name: &str,
    authority: &str,
    replicas: i32,
    provider: Value,
    owners: Value,
) -> TestResult<mapi::MachineSet> {
    let set: mapi::MachineSet = serde_json::from_value(json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
        "metadata": {"name": name, "labels": {"team": "infra"}, "ownerReferences": owners},
        "spec": {
            "replicas": replicas, "authoritativeAPI": authority,
            "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machineset": name}},
            "template": {
                "metadata": {"labels": {"machine.openshift.io/cluster-api-machineset": name}},
                "spec": {"authoritativeAPI": authority, "providerSpec": {"value": provider}}
            }
        }
    }))?;
    cluster
        .mapi_machine_sets()
        .create(&PostParams::default(), &set)
        .await?;
    let patch = json!({ "status": { "authoritativeAPI": authority, "replicas": 0 } });
    Ok(cluster
        .mapi_machine_sets()
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?)
}

/// The CAPI namespace's AWS objects of `kind`.
pub fn aws(cluster: &Cluster, kind: &str) -> Api<DynamicObject> {
    Api::namespaced_with(
        cluster.client.clone(),
        &cluster.namespaces.capi,
        &infra_resource(kind, AWS_VERSION),
    )
}

/// Polls `check` until it returns `Some`, for at most [`WAIT`]; the last error or `None`
/// explains a timeout.
pub async fn eventually<T, F, Fut>(what: &str, check: F) -> TestResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = TestResult<Option<T>>>,
{
    eventually_within(WAIT, what, check).await
}

/// [`eventually`] with a bound of its own.
pub async fn eventually_within<T, F, Fut>(bound: Duration, what: &str, check: F) -> TestResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = TestResult<Option<T>>>,
{
    eventually_every(bound, Duration::from_millis(25), what, check).await
}

/// [`eventually_within`], polling every `interval`: for checks that list whole fleets,
/// whose polling would otherwise compete with the controllers being checked.
pub async fn eventually_every<T, F, Fut>(
    bound: Duration,
    interval: Duration,
    what: &str,
    mut check: F,
) -> TestResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = TestResult<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + bound;
    loop {
        let last = match check().await {
            Ok(Some(value)) => return Ok(value),
            Ok(None) => "condition not met".to_owned(),
            Err(error) => error.to_string(),
        };
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("timed out waiting for {what}: {last}").into());
        }
        tokio::time::sleep(interval).await;
    }
}

/// The `Synchronized` condition of a MAPI object: (status, reason).
pub fn synchronized<M: sync_core::MapiObject>(object: &M) -> Option<(String, String)> {
    let condition = sync_core::toolkit::status::synchronized(object)?;
    Some((
        condition.status.clone(),
        condition.reason.clone().unwrap_or_default(),
    ))
}

/// Whether `object` is the authoritative-side mirror of a MAPI object's authority.
pub fn authority_of(machine: &mapi::Machine) -> Option<AuthoritativeApi> {
    machine.status.as_ref()?.sync.authoritative_api.clone()
}

/// The object's finalizers.
pub fn finalizers_of<K: Resource>(object: &K) -> Vec<String> {
    object.finalizers().to_vec()
}

/// The group of the AWS kinds (for owner assertions).
pub const AWS_GROUP: &str = INFRA_GROUP;
