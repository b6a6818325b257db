//! The real sync on a test cluster: both controllers with the real hooks of a platform
//! ([`TestPlatform`]: [`AWS`], [`OPENSTACK`]) as the operator's ServiceAccount, optionally
//! the simulated providers, and the platforms' object builders.

use std::sync::Arc;
use std::time::Duration;

use controllers::machine::{MachineHooks, MachineSync, beside_machine_sets};
use controllers::machine_set::{MachineSetHooks, MachineSetSync};
use controllers::migration::{
    MachineMigrationHooks, MachineSetMigrationHooks, MigratingPair, MigrationConfig,
};
use controllers::simulate::SimulatedProviders;
use controllers::sync::Cluster as ClusterFacts;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde_json::{Value, json};
use sync_core::api::{AuthoritativeApi, mapi};
use sync_core::testing::RecordingObserver;
use sync_core::{InfraTracker, SyncConfig, SyncController};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{Cluster, INFRA_GROUP, TestResult, WAIT, apply_crd, infra_resource};

/// The infrastructure name of the test clusters.
pub const CLUSTER_NAME: &str = "demo-x7k2p";
/// Their region.
pub const REGION: &str = "us-east-1";
/// The AWS kinds' served version.
pub const AWS_VERSION: &str = "v1beta2";

/// How many of a platform's machine sizes the scenarios use (AWS instance types, OpenStack
/// flavors), smallest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// `m6i.large` / `m1.large`.
    Large,
    /// `m6i.xlarge` / `m1.xlarge`.
    XLarge,
    /// `m6i.2xlarge` / `m1.2xlarge`.
    X2Large,
    /// `m6i.4xlarge` / `m1.4xlarge`.
    X4Large,
}

/// A platform the real-sync scenarios run on: its `Infrastructure`, the provider's CRDs,
/// kinds and version, and the Machine API providerSpec of its machines.
#[derive(Debug)]
pub struct TestPlatform {
    /// `platformStatus.type`.
    pub name: &'static str,
    /// The infrastructure machine kind (`AWSMachine`).
    pub machine_kind: &'static str,
    /// Its template kind (`AWSMachineTemplate`).
    pub template_kind: &'static str,
    /// The version the conversion writes and the scenarios read the kinds at.
    pub version: &'static str,
    /// The machine kind's resource (for fault injection).
    pub machine_resource: &'static str,
    /// The zone of the machines of [`TestPlatform::provider_spec`].
    pub zone: &'static str,
    /// Another zone.
    pub other_zone: &'static str,
    /// The providerSpec field that is both the size and the infrastructure spec's field of
    /// the same name (`instanceType`, `flavor`).
    pub size_field: &'static str,
    /// The infrastructure machine's `spec.rootVolume` for [`TestPlatform::provider_spec`].
    pub root_volume: fn() -> Value,
    crds: &'static [&'static str],
    /// `Some(v)`: the CRDs are applied with `v` as their storage version (see
    /// [`with_crds`]).
    storage: Option<&'static str>,
    sizes: [&'static str; 4],
    infrastructure: fn() -> Value,
    provider_spec: fn(&str) -> Value,
    infra_spec: fn(&str) -> Value,
    unconvertible: fn() -> (Value, Value),
    running: fn(&Value) -> bool,
}

/// AWS: CAPA's AWSMachine and AWSMachineTemplate (v1beta2), in [`REGION`].
pub const AWS: TestPlatform = TestPlatform {
    name: "AWS",
    machine_kind: "AWSMachine",
    template_kind: "AWSMachineTemplate",
    version: AWS_VERSION,
    machine_resource: "awsmachines",
    zone: "us-east-1a",
    other_zone: "us-east-1b",
    size_field: "instanceType",
    root_volume: || json!({"size": 120, "type": "gp3"}),
    crds: &[
        "infrastructure.cluster.x-k8s.io_awsmachines.yaml",
        "infrastructure.cluster.x-k8s.io_awsmachinetemplates.yaml",
    ],
    storage: None,
    sizes: ["m6i.large", "m6i.xlarge", "m6i.2xlarge", "m6i.4xlarge"],
    infrastructure: || {
        json!({
            "spec": {"platformSpec": {"type": "AWS"}},
            "status": {"infrastructureName": CLUSTER_NAME, "platform": "AWS",
                       "platformStatus": {"type": "AWS", "aws": {"region": REGION}}}
        })
    },
    provider_spec: aws_provider_spec,
    infra_spec: |size| json!({"instanceType": size, "ami": {"id": "ami-1"}}),
    unconvertible: || {
        (
            json!({"credentialsSecret": {"name": "my-own-credentials"}}),
            json!({"credentialsSecret": {"name": "aws-cloud-credentials"}}),
        )
    },
    running: |infra| infra["status"]["instanceState"] == "running",
};

/// OpenStack: CAPO's OpenStackMachine and OpenStackMachineTemplate (v1beta1, the version
/// the conversion speaks), machines shaped like the installer's (see
/// `conversion/tests/fixtures/openstack/`).
pub const OPENSTACK: TestPlatform = TestPlatform {
    name: "OpenStack",
    machine_kind: "OpenStackMachine",
    template_kind: "OpenStackMachineTemplate",
    version: OPENSTACK_VERSION,
    machine_resource: "openstackmachines",
    zone: "az0",
    other_zone: "az1",
    size_field: "flavor",
    root_volume: || json!({"sizeGiB": 100, "type": "fast", "availabilityZone": {"from": "Name", "name": "cinder-az0"}}),
    crds: &[
        "capo/infrastructure.cluster.x-k8s.io_openstackmachines.yaml",
        "capo/infrastructure.cluster.x-k8s.io_openstackmachinetemplates.yaml",
    ],
    storage: Some(OPENSTACK_VERSION),
    sizes: ["m1.large", "m1.xlarge", "m1.2xlarge", "m1.4xlarge"],
    infrastructure: || {
        json!({
            "spec": {"platformSpec": {"type": "OpenStack", "openstack": {}}},
            "status": {"infrastructureName": CLUSTER_NAME, "platform": "OpenStack",
                       "platformStatus": {"type": "OpenStack", "openstack": {"cloudName": "openstack"}}}
        })
    },
    provider_spec: openstack_provider_spec,
    infra_spec: |size| {
        json!({"flavor": size, "image": {"filter": {"name": "rhcos"}},
               "identityRef": {"cloudName": "openstack", "name": "openstack-cloud-credentials"}})
    },
    // A fixed floating IP, which an OpenStackMachine cannot name.
    unconvertible: || (json!({"floatingIP": "203.0.113.7"}), json!({"floatingIP": null})),
    running: |infra| infra["status"]["ready"] == true,
};

/// Both platforms.
pub const PLATFORMS: [&TestPlatform; 2] = [&AWS, &OPENSTACK];

impl TestPlatform {
    /// The platform of `platformStatus.type` `name` (any case).
    pub fn named(name: &str) -> Option<&'static TestPlatform> {
        PLATFORMS.into_iter().find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// The provider's CRDs from `envtest/tests/fixtures/upstream-crds`, with the storage
    /// version [`TestPlatform::storage`] says (see [`with_crds`]).
    pub fn crds(&self) -> TestResult<Vec<CustomResourceDefinition>> {
        let fixtures =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../envtest/tests/fixtures/upstream-crds");
        let mut crds = Vec::new();
        for file in self.crds {
            let text = std::fs::read_to_string(fixtures.join(file))?;
            let mut crd: CustomResourceDefinition = serde_saphyr::from_str(&text)?;
            if let Some(storage) = self.storage {
                for version in &mut crd.spec.versions {
                    version.storage = version.name == storage;
                }
            }
            crds.push(crd);
        }
        Ok(crds)
    }

    /// The platform's name for `size`.
    pub fn size(&self, size: Size) -> &'static str {
        self.sizes[size as usize]
    }

    /// The `Infrastructure` object of a cluster of this platform, [`CLUSTER_NAME`].
    pub fn infrastructure(&self) -> TestResult<sync_core::api::Infrastructure> {
        let mut value = (self.infrastructure)();
        value["apiVersion"] = json!("config.openshift.io/v1");
        value["kind"] = json!("Infrastructure");
        value["metadata"] = json!({"name": "cluster"});
        Ok(serde_json::from_value(value)?)
    }

    /// A Machine API providerSpec value of a machine of `size` in [`TestPlatform::zone`].
    pub fn provider_spec(&self, size: Size) -> Value {
        (self.provider_spec)(self.size(size))
    }

    /// A merge patch of a providerSpec value changing only its size.
    pub fn size_patch(&self, size: Size) -> Value {
        json!({ self.size_field: self.size(size) })
    }

    /// The spec of an infrastructure machine of `size` made by hand (as a user or a CAPI
    /// MachineSet would).
    pub fn infra_spec(&self, size: Size) -> Value {
        (self.infra_spec)(self.size(size))
    }

    /// Two merge patches of a providerSpec value: one the conversion refuses, and the one
    /// that fixes it again.
    pub fn unconvertible(&self) -> (Value, Value) {
        (self.unconvertible)()
    }

    /// Whether an infrastructure machine's status (mirrored from a Running MAPI Machine
    /// with an instance) says it runs.
    pub fn infra_running(&self, infra: &Value) -> bool {
        (self.running)(infra)
    }

    /// The CAPI namespace's objects of the platform's machine kind.
    pub fn machines(&self, cluster: &Cluster) -> Api<DynamicObject> {
        cluster.infra(self.machine_kind, self.version)
    }

    /// The CAPI namespace's objects of the platform's template kind.
    pub fn templates(&self, cluster: &Cluster) -> Api<DynamicObject> {
        cluster.infra(self.template_kind, self.version)
    }
}

/// The OpenStack kinds' version: v1beta1, which the conversion reads and writes.
pub const OPENSTACK_VERSION: &str = "v1beta1";

/// A cluster with the platform's real provider CRDs (and the admission policies).
pub async fn cluster_on(platform: &TestPlatform) -> TestResult<Cluster> {
    with_crds(Cluster::start().await?, platform).await
}

/// [`cluster_on`] without the admission policies: for the sync's own defenses.
pub async fn cluster_without_policies_on(platform: &TestPlatform) -> TestResult<Cluster> {
    with_crds(Cluster::start_without_policies().await?, platform).await
}

/// A cluster with CAPA's real AWSMachine and AWSMachineTemplate CRDs (and the admission
/// policies).
pub async fn aws_cluster() -> TestResult<Cluster> {
    cluster_on(&AWS).await
}

/// [`aws_cluster`] without the admission policies: for the sync's own defenses.
pub async fn aws_cluster_without_policies() -> TestResult<Cluster> {
    cluster_without_policies_on(&AWS).await
}

/// Applies the platform's provider CRDs from `envtest/tests/fixtures/upstream-crds`.
///
/// CAPO serves OpenStackMachines (and their templates) in v1beta1 and v1beta2, v1beta2
/// stored, converting between them with a webhook that its kustomization adds. The
/// fixtures are `config/crd/bases`, without it, and envtest calls no webhook anyway: it
/// converts with the `None` strategy, rewriting `apiVersion` and pruning against the target
/// version's schema (`envtest/src/resources/versions.rs`). The conversion writes v1beta1,
/// whose shapes v1beta2 does not share (`spec.flavor` is a string in v1beta1 and an object
/// in v1beta2; v1beta2's conditions require a `reason`), so a v1beta1 object stored as
/// v1beta2 loses fields. For such a platform ([`TestPlatform::storage`]) the CRDs are
/// applied with v1beta1 as their storage version (the parsed CRD is edited, not the
/// fixture file). Both versions stay served and the CRDs carry no contract label: the sync
/// writes each object at its own apiVersion (the tracker reuses a watch's resolution only
/// for objects of that version) and reads the kind at the version its conversion speaks
/// (the tracker pins it: `controllers::platform::infra_versions`, proven in
/// `tests/sync.rs` s21). Before the first of these, the sync wrote its v1beta1 bodies at
/// the watched v1beta2 and 7 of the 17 OpenStack real-sync scenarios failed with 422s
/// (`spec.flavor in body must be of type object: "string"`). The pin's effect on reads
/// does not show here: envtest's `None` conversion hands out v1beta1-shaped objects at
/// v1beta2, where a real cluster's webhook would reshape them.
async fn with_crds(cluster: Cluster, platform: &TestPlatform) -> TestResult<Cluster> {
    crate::init_logging();
    for crd in platform.crds()? {
        apply_crd(&cluster.client, &crd).await?;
    }
    Ok(cluster)
}

/// The `Infrastructure` object of the AWS test clusters: AWS, [`CLUSTER_NAME`], [`REGION`].
pub fn infrastructure() -> TestResult<sync_core::api::Infrastructure> {
    AWS.infrastructure()
}

/// Serves the Infrastructure kind and creates `platform`'s `cluster` object with its status
/// (a subresource: a second write), as the installer leaves it: what the operator reads to
/// tell the platform. Without it the operator only watches.
pub async fn install_infrastructure(client: &Client, platform: &TestPlatform) -> TestResult {
    use sync_core::api::Infrastructure;
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/examples/crds/config.openshift.io_infrastructures.yaml");
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&std::fs::read_to_string(file)?)?;
    apply_crd(client, &crd).await?;
    let api: Api<Infrastructure> = Api::all(client.clone());
    let wanted = platform.infrastructure()?;
    let created = eventually_within(Duration::from_secs(10), "the Infrastructure CRD served", || {
        let (api, wanted) = (api.clone(), wanted.clone());
        async move { Ok(api.create(&PostParams::default(), &wanted).await.ok()) }
    })
    .await?;
    let status = json!({ "status": serde_json::to_value(&wanted.status)? });
    api.patch_status(
        &created.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&status),
    )
    .await?;
    Ok(())
}

/// The controllers with the real hooks (and the simulated providers).
pub struct RealSync {
    /// Every reconcile of both controllers.
    pub observer: RecordingObserver,
    /// The Machines waiting for a CAPI MachineSet (`controllers::sync::owners::CapiSets::wait`).
    pub waiting_machines: sync_core::wakeups::Wakeups,
    stop: CancellationToken,
    tasks: Vec<JoinHandle<()>>,
    server: Option<Arc<envtest::api::Shared>>,
}

impl RealSync {
    /// Starts both controllers (and, with `providers`, the simulated providers, as admin:
    /// they stand for other controllers) and waits for their caches.
    pub async fn start(cluster: &Cluster, providers: bool) -> TestResult<Self> {
        Self::start_with(cluster, &AWS, providers, None).await
    }

    /// [`RealSync::start`] on `platform`: the facts (and so the hooks) of its
    /// `Infrastructure`.
    pub async fn start_on(cluster: &Cluster, platform: &TestPlatform, providers: bool) -> TestResult<Self> {
        Self::start_with(cluster, platform, providers, None).await
    }

    /// [`RealSync::start`], plus the Machine and MachineSet migration controllers with
    /// `migration`.
    pub async fn start_migrating(
        cluster: &Cluster,
        providers: bool,
        migration: MigrationConfig,
    ) -> TestResult<Self> {
        Self::start_with(cluster, &AWS, providers, Some(migration)).await
    }

    /// [`RealSync::start_migrating`] on `platform`.
    pub async fn start_migrating_on(
        cluster: &Cluster,
        platform: &TestPlatform,
        providers: bool,
        migration: MigrationConfig,
    ) -> TestResult<Self> {
        Self::start_with(cluster, platform, providers, Some(migration)).await
    }

    async fn start_with(
        cluster: &Cluster,
        test_platform: &TestPlatform,
        providers: bool,
        migration: Option<MigrationConfig>,
    ) -> TestResult<Self> {
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
        let facts = Arc::new(ClusterFacts::from_infrastructure(test_platform.infrastructure()?));
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
        let sets = SyncController::<MachineSetSync>::new(cluster.controller_client.clone(), config)
            .with_infra(tracker.clone())
            .with_observer(Arc::new(observer.clone()))
            .with_checkpoint(checkpoint);
        let (machines, sets, capi_sets) = beside_machine_sets(machines, sets);
        let waiting_machines = capi_sets.waiting.clone();
        // The migration controllers follow the sync controllers, on their caches, as the
        // operator runs them.
        let followers = migration.map(|migration| {
            let machines = machines.follower(<MachineSync as MigratingPair>::MIGRATION);
            let sets = sets.follower(<MachineSetSync as MigratingPair>::MIGRATION);
            (machines, sets, migration)
        });
        let mut ready = vec![machines.readiness(), sets.readiness()];
        let mut tasks = vec![
            tokio::spawn(machines.run(
                MachineHooks::new(platform.clone(), facts.clone()).with_capi_sets(capi_sets),
                stop.clone().cancelled_owned(),
            )),
            tokio::spawn(sets.run(
                MachineSetHooks::new(platform, facts),
                stop.clone().cancelled_owned(),
            )),
        ];
        if let Some((machines, sets, migration)) = followers {
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
            waiting_machines,
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
    aws_provider_spec(instance_type)
}

fn aws_provider_spec(instance_type: &str) -> Value {
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

/// An OpenStack providerSpec value as the installer writes one (a root volume, so no
/// image; a subnet by filter and a network by UUID; a security group by name), of
/// `flavor`, in zone `az0`.
fn openstack_provider_spec(flavor: &str) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1alpha1",
        "kind": "OpenstackProviderSpec",
        "availabilityZone": "az0",
        "cloudName": "openstack",
        "cloudsSecret": {"name": "openstack-cloud-credentials", "namespace": "openshift-machine-api"},
        "flavor": flavor,
        "image": "",
        "networks": [
            {"filter": {}, "subnets": [{"filter": {"name": format!("{CLUSTER_NAME}-nodes"),
                                                    "tags": format!("openshiftClusterID={CLUSTER_NAME}")}}]},
            {"filter": {}, "noAllowedAddressPairs": true, "uuid": "0a9b5a4e-2c43-4f6c-a2d5-9c1a3f43c1aa"},
        ],
        "rootVolume": {"availabilityZone": "cinder-az0", "diskSize": 100,
                       "sourceUUID": format!("{CLUSTER_NAME}-rhcos"), "volumeType": "fast"},
        "securityGroups": [{"filter": {}, "name": format!("{CLUSTER_NAME}-worker")}],
        "serverGroupName": format!("{CLUSTER_NAME}-worker-az0"),
        "serverMetadata": {"Name": format!("{CLUSTER_NAME}-worker"), "openshiftClusterID": CLUSTER_NAME},
        "tags": [format!("openshiftClusterID={CLUSTER_NAME}")],
        "trunk": true,
        "userDataSecret": {"name": "worker-user-data"},
    })
}

/// [`create_machine`] (the name the AWS-only suites use).
pub use create_machine as create_aws_machine;
/// [`create_machine_set`] (the name the AWS-only suites use).
pub use create_machine_set as create_aws_machine_set;
/// [`create_owned_machine_set`] (the name the AWS-only suites use).
pub use create_owned_machine_set as create_owned_aws_machine_set;

/// A MAPI Machine with providerSpec `provider`, `labels`, and `status.authoritativeAPI`.
pub async fn create_machine(
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

/// A MAPI MachineSet with a template of providerSpec `provider`, and
/// `status.authoritativeAPI`.
pub async fn create_machine_set(
    cluster: &Cluster,
    name: &str,
    authority: &str,
    replicas: i32,
    provider: Value,
) -> TestResult<mapi::MachineSet> {
    create_owned_machine_set(cluster, name, authority, replicas, provider, json!([])).await
}

/// [`create_machine_set`] with `ownerReferences` from the start.
pub async fn create_owned_machine_set(
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

/// Runs each scenario (`async fn scenario(platform: &TestPlatform) -> TestResult`) on every
/// platform, as the tests `scenario::aws` and `scenario::openstack`, so that a failure
/// names the platform. The calling file must have `AWS`, `OPENSTACK` and `TestResult` in
/// scope.
#[macro_export]
macro_rules! on_each_platform {
    ($($scenario:ident),* $(,)?) => {$(
        mod $scenario {
            use super::*;

            #[tokio::test]
            async fn aws() -> TestResult {
                super::$scenario(&AWS).await
            }

            #[tokio::test]
            async fn openstack() -> TestResult {
                super::$scenario(&OPENSTACK).await
            }
        }
    )*};
}
