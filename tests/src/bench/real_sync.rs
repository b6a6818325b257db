//! The real sync at scale: the operator's Machine and MachineSet controllers with the AWS
//! hooks, on an envtest holding CAPA's AWS CRDs and a fleet of MAPI objects only.
//!
//! * **Converge**: N MAPI Machines (AWS providerSpecs, each owned by one of N/100 MAPI
//!   MachineSets) → until every CAPI Machine, AWSMachine, CAPI MachineSet and
//!   AWSMachineTemplate exists and every MAPI object is `Synchronized=True` at its
//!   generation, then until the controllers stop writing; API requests by verb.
//! * **Floor**: the same final objects (read back from the converged cluster) written by a
//!   plain client into a fresh envtest holding the same MAPI input, at the controllers'
//!   concurrency: what the writes alone cost.
//! * **Idle**: a window without changes, with every watch expired (a relist) in the middle:
//!   writes and hook calls.
//! * **Restart**: the controllers started again over the synchronized fleet: time until
//!   quiet and writes.
//!
//! Writes are counted twice: on the controllers' client ([`requests`](super::requests))
//! and as the server's resourceVersion advance (every write bumps it).

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use controllers::machine::MachineSync;
use envtest::TestEnv;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};
use sync_core::MapiObject;
use sync_core::api::mapi;

use super::fill::{self, Fleet};
use super::real_controllers::Wiring;
pub use super::real_controllers::{CONCURRENCY, Controllers, QUIET, TimedObserver};
use super::requests::{Requests, Snapshot, counted_client};
use super::{BenchError, ms};
use crate::real::{AWS, CLUSTER_NAME, OPENSTACK, REGION, Size, TestPlatform};

/// Requests in flight while filling the input.
const FILL_IN_FLIGHT: usize = 32;
const SET_LABEL: &str = "machine.openshift.io/cluster-api-machineset";

/// How much a run does.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct RealSettings {
    /// The fleet (MAPI Machines, MAPI MachineSets).
    pub fleet: Fleet,
    /// The idle window (the relist is in its middle).
    pub idle: Duration,
    /// The project's admission policies (`deploy/admission-policies/`) are installed: the
    /// controllers run as the operator's ServiceAccount and the fleet is seeded (and the
    /// simulated providers write) as the providers' user, the users the policies exempt,
    /// as in a cluster. The floor runs without them.
    pub policies: bool,
    /// The platform of the fleet's machines: its providerSpecs, CRDs, `Infrastructure` and
    /// the sync's hooks ([`AWS`] or [`OPENSTACK`], `--platform`).
    #[serde(serialize_with = "platform_name")]
    pub platform: &'static TestPlatform,
}

fn platform_name<S: serde::Serializer>(platform: &&'static TestPlatform, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(platform.name)
}

/// An envtest with the project's CRDs, the platform's provider CRDs and the fleet's
/// namespaces, with the project's admission policies installed when `policies` (and the
/// users they exempt: [`Writers`]).
pub async fn start_env(platform: &TestPlatform, policies: bool) -> Result<TestEnv, BenchError> {
    use controllers::operator::policies::{OPERATOR_USER, PROVIDERS_USER};
    let namespaces = fill::namespaces();
    let mut builder = TestEnv::builder()
        .crd_dir(crate::crd_dir())
        .namespace(&namespaces.mapi)
        .namespace(&namespaces.capi);
    if policies {
        builder = builder
            .user(OPERATOR_USER, &["system:masters"])
            .user(PROVIDERS_USER, &["system:masters"]);
    }
    let crds = platform
        .crds()
        .map_err(|e| BenchError::Other(format!("{} CRDs: {e}", platform.name)))?;
    let builder = crds.into_iter().fold(builder, |b, crd| b.crd_object(crd));
    let env = builder.start().await?;
    if policies {
        crate::install_policies(&env.client(), &namespaces)
            .await
            .map_err(|e| BenchError::Other(format!("installing the admission policies: {e}")))?;
    }
    Ok(env)
}

/// Who writes: the fleet's seed and the simulated providers (`seed`), the controllers
/// (`controllers`: a kubeconfig). With the policies, the users they exempt.
struct Writers {
    seed: Client,
    controllers: String,
}

impl Writers {
    async fn of(env: &TestEnv, policies: bool) -> Result<Self, BenchError> {
        use controllers::operator::policies::{OPERATOR_USER, PROVIDERS_USER};
        if !policies {
            return Ok(Self {
                seed: env.client(),
                controllers: env.kubeconfig(),
            });
        }
        let controllers = env
            .kubeconfig_for(OPERATOR_USER)
            .ok_or_else(|| BenchError::Other(format!("no kubeconfig for {OPERATOR_USER}")))?;
        Ok(Self {
            seed: env.client_as(PROVIDERS_USER).await?,
            controllers,
        })
    }
}

/// A realistic AWS providerSpec (an installer-made worker's) in the cluster's region.
pub fn provider_spec(zone: &str) -> Value {
    json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "AWSMachineProviderConfig",
        "ami": {"id": "ami-0123456789abcdef0"},
        "instanceType": "m6i.xlarge",
        "placement": {"availabilityZone": zone, "region": REGION},
        "blockDevices": [{"ebs": {"encrypted": true, "iops": 0, "kmsKey": {"arn": ""},
                                  "volumeSize": 120, "volumeType": "gp3"}}],
        "credentialsSecret": {"name": "aws-cloud-credentials"},
        "iamInstanceProfile": {"id": format!("{CLUSTER_NAME}-worker-profile")},
        "metadataServiceOptions": {},
        "securityGroups": [{"filters": [{"name": "tag:Name", "values": [format!("{CLUSTER_NAME}-node")]}]},
                           {"filters": [{"name": "tag:Name", "values": [format!("{CLUSTER_NAME}-lb")]}]}],
        "subnet": {"filters": [{"name": "tag:Name", "values": [format!("{CLUSTER_NAME}-subnet-private-{zone}")]}]},
        "tags": [{"name": format!("kubernetes.io/cluster/{CLUSTER_NAME}"), "value": "owned"}],
        "userDataSecret": {"name": "worker-user-data"},
    })
}

/// The providerSpec of the fleet's machines in zone `zone` (AWS: [`provider_spec`]; other
/// platforms: their test machines', of one size and zone).
fn fleet_provider_spec(platform: &TestPlatform, zone: &str) -> Value {
    if std::ptr::eq(platform, &AWS) {
        provider_spec(zone)
    } else {
        platform.provider_spec(Size::XLarge)
    }
}

/// A Running Machine's provider ID, instance-state annotation and providerStatus (the
/// Machine API OpenStack provider writes none: the annotation says the server's state).
fn running_instance(
    platform: &TestPlatform,
    name: &str,
    zone: &str,
) -> (String, &'static str, Option<Value>) {
    if std::ptr::eq(platform, &OPENSTACK) {
        return (format!("openstack:///{name}"), "ACTIVE", None);
    }
    let status = json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderStatus",
                        "instanceId": format!("i-{name}"), "instanceState": "running"});
    (format!("aws:///{zone}/i-{name}"), "running", Some(status))
}

fn zone(j: usize) -> String {
    format!("{REGION}{}", ["a", "b", "c"][j % 3])
}

fn object<K: serde::de::DeserializeOwned>(value: Value) -> Result<K, BenchError> {
    serde_json::from_value(value).map_err(|e| BenchError::Other(format!("fixture: {e}")))
}

/// Creates the MAPI side of the fleet: MachineSet `ms-007` (`MachineAPI`, replicas N/M) and
/// Machine `m-000042` owned by `ms-{42 % M}`, both with `status.authoritativeAPI`.
pub async fn fill_mapi(client: &Client, fleet: Fleet, platform: &TestPlatform) -> Result<(), BenchError> {
    let namespace = fill::namespaces().mapi;
    let sets_api: Api<mapi::MachineSet> = Api::namespaced(client.clone(), &namespace);
    let machines_api: Api<mapi::Machine> = Api::namespaced(client.clone(), &namespace);
    let sets = fleet.machine_sets.max(1);
    let replicas = fleet.machines / sets;
    let created: Vec<mapi::MachineSet> = futures::stream::iter(0..sets)
        .map(|j| {
            let api = sets_api.clone();
            async move {
                let name = Fleet::machine_set(j);
                let set: mapi::MachineSet = object(json!({
                    "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                    "metadata": {"name": name, "labels": {"machine.openshift.io/cluster-api-cluster": CLUSTER_NAME}},
                    "spec": {
                        "replicas": replicas, "authoritativeAPI": "MachineAPI",
                        "selector": {"matchLabels": {"machine.openshift.io/cluster-api-cluster": CLUSTER_NAME, SET_LABEL: name}},
                        "template": {
                            "metadata": {"labels": {
                                "machine.openshift.io/cluster-api-cluster": CLUSTER_NAME,
                                "machine.openshift.io/cluster-api-machine-role": "worker",
                                "machine.openshift.io/cluster-api-machine-type": "worker",
                                SET_LABEL: name,
                            }},
                            "spec": {"authoritativeAPI": "MachineAPI", "providerSpec": {"value": fleet_provider_spec(platform, &zone(j))}},
                        },
                    },
                }))?;
                api.create(&PostParams::default(), &set).await?;
                let status = json!({"status": {"authoritativeAPI": "MachineAPI", "replicas": replicas}});
                Ok::<_, BenchError>(api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status)).await?)
            }
        })
        .buffered(FILL_IN_FLIGHT)
        .try_collect()
        .await?;
    futures::stream::iter(0..fleet.machines)
        .map(|i| {
            let api = machines_api.clone();
            let set = &created[i % sets];
            async move {
                let name = Fleet::machine(i);
                let set_name = set.name_any();
                let zone = zone(i % sets);
                let (provider_id, state, provider_status) = running_instance(platform, &name, &zone);
                let machine: mapi::Machine = object(json!({
                    "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
                    "metadata": {
                        "name": name,
                        "labels": {
                            "machine.openshift.io/cluster-api-cluster": CLUSTER_NAME,
                            "machine.openshift.io/cluster-api-machine-role": "worker",
                            "machine.openshift.io/cluster-api-machine-type": "worker",
                            SET_LABEL: set_name,
                        },
                        "annotations": {"machine.openshift.io/instance-state": state},
                        "ownerReferences": [{
                            "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                            "name": set_name, "uid": set.uid().unwrap_or_default(),
                            "controller": true, "blockOwnerDeletion": true,
                        }],
                    },
                    "spec": {
                        "authoritativeAPI": "MachineAPI",
                        "providerID": provider_id,
                        "lifecycleHooks": {},
                        "providerSpec": {"value": fleet_provider_spec(platform, &zone)},
                    },
                }))?;
                api.create(&PostParams::default(), &machine).await?;
                let mut status = json!({"status": {
                    "authoritativeAPI": "MachineAPI",
                    "phase": "Running",
                    "addresses": [{"type": "InternalIP", "address": "10.0.12.34"},
                                  {"type": "InternalDNS", "address": "ip-10-0-12-34.ec2.internal"}],
                }});
                if let Some(provider_status) = provider_status {
                    status["status"]["providerStatus"] = provider_status;
                }
                api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                    .await?;
                Ok::<_, BenchError>(())
            }
        })
        .buffer_unordered(FILL_IN_FLIGHT)
        .try_collect::<()>()
        .await
}

/// Whether a MAPI object says `Synchronized=True` at its own generation.
fn synchronized<M: MapiObject>(object: &M) -> bool {
    let condition = sync_core::toolkit::status::synchronized(object);
    condition.is_some_and(|c| c.status == "True")
        && sync_core::toolkit::status::synchronized_generation(object) == object.meta().generation
}

/// Until every MAPI Machine and MachineSet of `fleet` is Synchronized=True (at most `bound`).
async fn fleet_synchronized(client: &Client, fleet: Fleet, bound: Duration) -> Result<(), BenchError> {
    let (machines, sets) = tokio::join!(
        all_synchronized::<mapi::Machine>(client, fleet.machines, bound),
        all_synchronized::<mapi::MachineSet>(client, fleet.machine_sets, bound),
    );
    machines.and(sets)
}

/// Watches MAPI `K`s until `expected` of them are synchronized (at most `bound`).
async fn all_synchronized<K>(client: &Client, expected: usize, bound: Duration) -> Result<(), BenchError>
where
    K: MapiObject + kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>,
    K: Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let api: Api<K> = Api::namespaced(client.clone(), &fill::namespaces().mapi);
    let mut done: HashMap<String, bool> = HashMap::new();
    let mut synced = 0usize;
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let waited = tokio::time::timeout(bound, async {
        while let Some(event) = stream.next().await {
            let objects = match event {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => vec![o],
                _ => continue,
            };
            for object in objects {
                let now = synchronized(&object);
                let before = done.insert(object.name_any(), now).unwrap_or(false);
                match (before, now) {
                    (false, true) => synced += 1,
                    (true, false) => synced -= 1,
                    _ => {}
                }
            }
            if synced >= expected {
                return;
            }
        }
    })
    .await;
    waited.map_err(|_| {
        BenchError::Other(format!(
            "{synced} of {expected} {} synchronized after {bound:?}",
            K::kind(&())
        ))
    })
}

/// The kinds the sync writes, in the order the floor creates them.
fn written_kinds(platform: &TestPlatform) -> [(&'static str, ApiResource); 4] {
    let infra = |kind| crate::infra_resource(kind, platform.version);
    [
        ("CAPI MachineSet", fill::capi_machine_sets()),
        (platform.template_kind, infra(platform.template_kind)),
        ("CAPI Machine", fill::capi_machines()),
        (platform.machine_kind, infra(platform.machine_kind)),
    ]
}

/// The converged objects, read back for the floor.
pub struct Converged {
    /// The kinds the sync wrote ([`written_kinds`]).
    kinds: [(&'static str, ApiResource); 4],
    /// The objects the sync created, by kind.
    created: Vec<Vec<DynamicObject>>,
    /// The MAPI MachineSets and Machines as the sync left them.
    mapi_sets: Vec<DynamicObject>,
    mapi_machines: Vec<DynamicObject>,
}

impl Converged {
    /// Reads every kind; fails unless each holds as many objects as the fleet has pairs.
    pub async fn read(client: &Client, fleet: Fleet, platform: &TestPlatform) -> Result<Self, BenchError> {
        let namespaces = fill::namespaces();
        let kinds = written_kinds(platform);
        let mut created = Vec::new();
        for (label, resource) in kinds.clone() {
            let expected = if resource.kind.contains("Set") || resource.kind.contains("Template") {
                fleet.machine_sets
            } else {
                fleet.machines
            };
            let list = fill::dynamic(client, &namespaces.capi, &resource)
                .list(&ListParams::default())
                .await?;
            if list.items.len() != expected {
                return Err(BenchError::Other(format!(
                    "{label}: {} objects, expected {expected}",
                    list.items.len()
                )));
            }
            created.push(list.items);
        }
        let mapi = |resource: ApiResource| {
            let api = fill::dynamic(client, &namespaces.mapi, &resource);
            async move { Ok::<_, BenchError>(api.list(&ListParams::default()).await?.items) }
        };
        Ok(Self {
            kinds,
            created,
            mapi_sets: mapi(fill::mapi_machine_sets()).await?,
            mapi_machines: mapi(fill::mapi_machines()).await?,
        })
    }

    /// Objects written in total by the floor.
    pub fn objects(&self) -> usize {
        self.created.iter().map(Vec::len).sum::<usize>() + self.mapi_sets.len() + self.mapi_machines.len()
    }
}

/// An object as a client would create it: no server-set metadata, no status, owner uids
/// mapped to the new cluster's.
fn to_create(object: &DynamicObject, uids: &HashMap<String, String>) -> (DynamicObject, Option<Value>) {
    let mut copy = object.clone();
    let meta = &mut copy.metadata;
    meta.uid = None;
    meta.resource_version = None;
    meta.creation_timestamp = None;
    meta.generation = None;
    meta.managed_fields = None;
    if let Some(owners) = &mut meta.owner_references {
        for owner in owners {
            if let Some(uid) = uids.get(&owner.uid) {
                owner.uid = uid.clone();
            }
        }
    }
    let status = copy.data.as_object_mut().and_then(|d| d.remove("status"));
    (
        copy,
        status.filter(|s| s.as_object().is_some_and(|o| !o.is_empty())),
    )
}

/// Creates `object` (then its status) with `api`; returns (old uid, new uid).
async fn create(
    api: &Api<DynamicObject>,
    object: &DynamicObject,
    uids: &HashMap<String, String>,
) -> Result<(String, String), BenchError> {
    let (body, status) = to_create(object, uids);
    let created = api.create(&PostParams::default(), &body).await?;
    if let Some(status) = status {
        api.patch_status(
            &object.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    }
    Ok((
        object.uid().unwrap_or_default(),
        created.uid().unwrap_or_default(),
    ))
}

/// Brings a MAPI object to its converged state: its metadata (finalizers, labels,
/// annotations) and its status, one merge patch each.
async fn converge_mapi(api: &Api<DynamicObject>, object: &DynamicObject) -> Result<(), BenchError> {
    let name = object.name_any();
    if !object.finalizers().is_empty() {
        let metadata = json!({"metadata": {"finalizers": object.finalizers()}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(metadata))
            .await?;
    }
    if let Some(status) = object.data.get("status") {
        api.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": status })),
        )
        .await?;
    }
    Ok(())
}

/// The floor: writes `converged` into `env` (filled with the same MAPI input) with a
/// plain client, [`CONCURRENCY`] objects at once. Returns the wall time and the requests.
pub async fn floor(env: &TestEnv, converged: &Converged) -> Result<(Duration, Snapshot), BenchError> {
    let requests = Requests::new();
    let client = counted_client(&env.kubeconfig(), requests.clone()).await?;
    let namespaces = fill::namespaces();
    let mapi_uids = |resource: ApiResource, old: &[DynamicObject]| {
        let api = fill::dynamic(&client, &namespaces.mapi, &resource);
        let old: HashMap<String, String> = old
            .iter()
            .map(|o| (o.name_any(), o.uid().unwrap_or_default()))
            .collect();
        async move {
            let listed = api.list(&ListParams::default()).await?.items;
            Ok::<_, BenchError>(
                listed
                    .into_iter()
                    .filter_map(|o| Some((old.get(&o.name_any())?.clone(), o.uid()?)))
                    .collect::<Vec<_>>(),
            )
        }
    };
    let mut uids: HashMap<String, String> = HashMap::new();
    uids.extend(mapi_uids(fill::mapi_machine_sets(), &converged.mapi_sets).await?);
    uids.extend(mapi_uids(fill::mapi_machines(), &converged.mapi_machines).await?);
    let before = requests.snapshot();
    let started = Instant::now();
    // Kind by kind, owners before what they own (a CAPI MachineSet before its template
    // and Machines, a CAPI Machine before its AWSMachine), then the MAPI objects' state.
    for ((_, resource), objects) in converged.kinds.iter().zip(&converged.created) {
        let api = fill::dynamic(&client, &namespaces.capi, resource);
        let created: Vec<(String, String)> = futures::stream::iter(objects)
            .map(|object| create(&api, object, &uids))
            .buffer_unordered(CONCURRENCY)
            .try_collect()
            .await?;
        uids.extend(created);
    }
    for (resource, objects) in [
        (fill::mapi_machine_sets(), &converged.mapi_sets),
        (fill::mapi_machines(), &converged.mapi_machines),
    ] {
        let api = fill::dynamic(&client, &namespaces.mapi, &resource);
        futures::stream::iter(objects)
            .map(|object| converge_mapi(&api, object))
            .buffer_unordered(CONCURRENCY)
            .try_collect::<()>()
            .await?;
    }
    Ok((started.elapsed(), requests.snapshot().since(&before)))
}

/// Everything the real-sync scenarios measured.
#[derive(Debug, serde::Serialize)]
pub struct RealOutcome {
    /// Filling the MAPI input.
    pub fill_ms: f64,
    /// Start to every MAPI object synchronized.
    pub converged_ms: f64,
    /// Start to the last write or reconcile before [`QUIET`].
    pub converge_quiet_ms: f64,
    /// The controllers' CPU time until quiet.
    pub converge_cpu_ms: f64,
    /// The CPU of the rest of the bench process until quiet: the in-process API server
    /// taking the writes and serving the watches (and the bench's own watch of the MAPI
    /// objects' conditions).
    pub converge_server_cpu_ms: f64,
    /// Requests until quiet.
    pub converge_requests: Value,
    /// Hook calls and reconciles until quiet.
    pub converge_hook_calls: usize,
    /// Reconciles until quiet.
    pub converge_reconciles: usize,
    /// The floor's wall time.
    pub floor_ms: f64,
    /// The bench process's CPU during the floor: the API server and the plain client.
    pub floor_cpu_ms: f64,
    /// The floor's requests.
    pub floor_requests: Value,
    /// Objects the floor wrote (created or brought to their state).
    pub floor_objects: usize,
    /// Idle: the window.
    pub idle_ms: f64,
    /// Idle: requests.
    pub idle_requests: Value,
    /// Idle: writes (client side).
    pub idle_writes: u64,
    /// Idle: the server's resourceVersion advance.
    pub idle_rv_advance: u64,
    /// Idle: hook calls (the relist's included).
    pub idle_hook_calls: usize,
    /// Idle: reconciles.
    pub idle_reconciles: usize,
    /// Restart: start to the last write or reconcile before [`QUIET`]; this and the other
    /// restart figures are the median restart's (by this figure) of [`RESTARTS`].
    pub restart_quiet_ms: f64,
    /// Each restart's time until quiet, in the order they ran.
    pub restart_quiet_runs_ms: Vec<f64>,
    /// Restart: start to the first Machine reconcile (the lists, and the workers' wait
    /// for them).
    pub restart_first_machine_ms: f64,
    /// Restart: CPU until quiet.
    pub restart_cpu_ms: f64,
    /// The same restart with the operator's wiring (each sync controller followed by its
    /// migration controller, [`Wiring::Operator`]): until quiet, the median of
    /// [`OPERATOR_RESTARTS`].
    pub operator_restart_quiet_ms: f64,
    /// Its CPU until quiet (the median restart's).
    pub operator_restart_cpu_ms: f64,
    /// Its hook calls, the most of any of its restarts (the migration controllers' hooks
    /// count).
    pub operator_restart_hook_calls: usize,
    /// Restart: requests.
    pub restart_requests: Value,
    /// Restart: writes (client side), the most of any restart.
    pub restart_writes: u64,
    /// Restart: the server's resourceVersion advance, the most of any restart.
    pub restart_rv_advance: u64,
    /// Restart: hook calls, the most of any restart.
    pub restart_hook_calls: usize,
    /// A plain client's lists of what the controllers watch ([`ListFloors::decoded`]).
    pub restart_list_floor_ms: f64,
    /// The same pages fetched without decoding ([`ListFloors::served`]): what a restart
    /// cannot go below on this server.
    pub restart_serve_floor_ms: f64,
    /// Restart: the CPU of the rest of the bench process until quiet (the in-process API
    /// server serving the lists; the bench itself waits).
    pub restart_server_cpu_ms: f64,
    /// The real sync's resident memory over the synchronized fleet, in a process of its
    /// own, 5 s after quiet.
    pub memory: Option<super::memory::Memory>,
    /// The same for the operator's pairs: the sync controllers and, on their caches, the
    /// migration controllers.
    pub operator_memory: Option<super::memory::Memory>,
    /// The shipped operator binary over the same fleet (`--operator`), if run.
    pub shipped: Option<super::shipped::Shipped>,
    /// Converge: writes (client side), for the ratio to the floor.
    pub converge_writes: u64,
    /// Idle with the simulated providers running.
    pub providers: ProvidersIdle,
    /// The floor's writes.
    pub floor_writes: u64,
}

/// An envtest holding the fleet synchronized by the real sync (converged, then the
/// controllers stopped), for profiling the `--child real` mode on its own.
pub async fn converged_env(fleet: Fleet, platform: &'static TestPlatform) -> Result<TestEnv, BenchError> {
    let bound = Duration::from_secs(60) + Duration::from_millis(20 * fleet.machines as u64);
    let env = start_env(platform, false).await?;
    fill_mapi(&env.client(), fleet, platform).await?;
    let controllers = Controllers::start(&env.kubeconfig(), 0, platform)?;
    fleet_synchronized(&env.client(), fleet, bound).await?;
    controllers.quiet(0, bound).await?;
    controllers.stop().await?;
    Ok(env)
}

/// What a cluster has beside the fleet and the shipped operator reads: the platform's
/// `Infrastructure` (without it, the operator only watches) and the Machines' user-data
/// Secret (without it, its copier warns with an Event at every start).
pub async fn install_cluster_objects(env: &TestEnv, platform: &TestPlatform) -> Result<(), BenchError> {
    crate::real::install_infrastructure(&env.client(), platform)
        .await
        .map_err(|e| BenchError::Other(format!("the Infrastructure: {e}")))?;
    let secrets: Api<Secret> = Api::namespaced(env.client(), &fill::namespaces().mapi);
    let user_data = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("worker-user-data".into()),
            ..Default::default()
        },
        string_data: Some([("userData".to_owned(), "#cloud-config\n".to_owned())].into()),
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &user_data).await?;
    Ok(())
}

/// Runs converge, idle, restart and the floor for `settings.fleet`.
pub async fn run(
    settings: RealSettings,
    exe: &std::path::Path,
    operator: Option<&std::path::Path>,
    progress: &impl Fn(&str),
) -> Result<RealOutcome, BenchError> {
    let fleet = settings.fleet;
    let bound = Duration::from_secs(60) + Duration::from_millis(20 * fleet.machines as u64);
    let platform = settings.platform;
    let env = start_env(platform, settings.policies).await?;
    let writers = Writers::of(&env, settings.policies).await?;
    if settings.policies {
        progress(
            "  the project's admission policies are installed: the controllers run as the operator's ServiceAccount, the seed and the providers as the providers' user",
        );
    }
    let filling = Instant::now();
    fill_mapi(&writers.seed, fleet, platform).await?;
    let fill_ms = ms(filling.elapsed());
    fill::warm(&env.client(), &fill::namespaces()).await.ok();
    progress(&format!(
        "  filled {} MAPI Machines and {} MAPI MachineSets in {:.1} s",
        fleet.machines,
        fleet.machine_sets,
        fill_ms / 1e3
    ));

    // Converge.
    let kubeconfig = writers.controllers.clone();
    let cpu_before = process_cpu();
    let controllers = Controllers::start(&kubeconfig, 0, platform)?;
    fleet_synchronized(&env.client(), fleet, bound).await?;
    let converged_ms = ms(controllers.started().elapsed());
    let converge_quiet = controllers.quiet(0, bound).await?;
    let converge_cpu = controllers.cpu();
    let converge_cpu_ms = ms(converge_cpu);
    let converge_server_cpu_ms = ms(process_cpu().saturating_sub(cpu_before + converge_cpu));
    let converge = controllers.requests.snapshot();
    let (converge_reconciles, converge_hook_calls) = controllers.observer.counts();
    progress(&format!(
        "  converge: synchronized after {:.2} s, quiet after {:.2} s, CPU {:.2} s (the API server's {:.2} s), {} hook calls; requests: {}",
        converged_ms / 1e3,
        converge_quiet.as_secs_f64(),
        converge_cpu_ms / 1e3,
        converge_server_cpu_ms / 1e3,
        converge_hook_calls,
        converge.summary()
    ));
    let converged = Converged::read(&env.client(), fleet, platform).await?;

    // Idle, with every watch expired in the middle (a relist).
    let (rv, counted, (reconciles, hooks)) = (
        env.resource_version(),
        controllers.requests.snapshot(),
        controllers.observer.counts(),
    );
    let idle_started = Instant::now();
    tokio::time::sleep(settings.idle / 2).await;
    env.faults().expire_watches();
    tokio::time::sleep(settings.idle / 2).await;
    let idle_ms = ms(idle_started.elapsed());
    let idle = controllers.requests.snapshot().since(&counted);
    let idle_rv_advance = env.resource_version().saturating_sub(rv);
    let (r, h) = controllers.observer.counts();
    let (idle_reconciles, idle_hook_calls) = (r - reconciles, h - hooks);
    progress(&format!(
        "  idle {:.0} s (a relist in the middle): {} writes, resourceVersion +{idle_rv_advance}, {idle_hook_calls} hook calls; requests: {}",
        idle_ms / 1e3,
        idle.writes(),
        idle.summary()
    ));
    let providers =
        idle_with_providers(&env, &writers.seed, &controllers, fleet, settings.idle, bound * 4).await?;
    progress(&format!(
        "  idle with the simulated providers: they settled after {:.1} s; then {:.0} s: {} sync writes, resourceVersion +{}, {} writer contests",
        providers.settled_ms / 1e3,
        settings.idle.as_secs_f64(),
        providers.sync_writes,
        providers.rv_advance,
        providers.contests
    ));
    controllers.stop().await?;

    // Restarts over the synchronized fleet: the median of several, since one restart's
    // 0.6–1 s swings with the VM more than the changes it should show.
    let mut restarts = Vec::new();
    for _ in 0..RESTARTS {
        let restart = restart_once(&env, &kubeconfig, fleet, platform, Wiring::Sync, bound).await?;
        progress(&restart.line(Wiring::Sync));
        restarts.push(restart);
    }
    let mut operator_restarts = Vec::new();
    for _ in 0..OPERATOR_RESTARTS {
        let restart = restart_once(&env, &kubeconfig, fleet, platform, Wiring::Operator, bound).await?;
        progress(&restart.line(Wiring::Operator));
        operator_restarts.push(restart);
    }
    let operator_restart_hook_calls = most(&operator_restarts, |r| r.hook_calls);
    let operator_restart = median(operator_restarts);
    let restart_quiet_runs_ms: Vec<f64> = restarts.iter().map(|r| r.quiet_ms).collect();
    let restart_writes = most(&restarts, |r| r.requests.writes());
    let restart_rv_advance = most(&restarts, |r| r.rv_advance);
    let restart_hook_calls = most(&restarts, |r| r.hook_calls);
    let restart = median(restarts);
    let restart_list_floor = list_floors(&env, platform).await?;
    progress(&format!(
        "  restart's list floors: a plain client lists what the controllers watch in {:.2} s, fetches the same pages without decoding them in {:.2} s (medians of 3)",
        restart_list_floor.decoded.as_secs_f64(),
        restart_list_floor.served.as_secs_f64()
    ));

    // Memory over the synchronized fleet, in a process of its own.
    let kubeconfig_file = env
        .kubeconfig_path()
        .map_err(|e| BenchError::Other(format!("kubeconfig: {e}")))?;
    let memory =
        super::memory::measure_mode(exe, &kubeconfig_file, fleet, super::memory::REAL, platform).await?;
    progress(&format!(
        "  memory: {:.1} MiB resident (peak {:.1} MiB) over the synchronized fleet, quiet after {:.2} s",
        memory.rss_kib as f64 / 1024.0,
        memory.peak_kib as f64 / 1024.0,
        memory.reconciled_after.as_secs_f64()
    ));
    let operator_memory = super::memory::measure_mode(
        exe,
        &kubeconfig_file,
        fleet,
        super::memory::REAL_OPERATOR,
        platform,
    )
    .await?;
    progress(&format!(
        "  memory with the migration controllers: {:.1} MiB resident (peak {:.1} MiB), quiet after {:.2} s",
        operator_memory.rss_kib as f64 / 1024.0,
        operator_memory.peak_kib as f64 / 1024.0,
        operator_memory.reconciled_after.as_secs_f64()
    ));
    let shipped = match operator {
        Some(binary) => Some(shipped_operator(binary, &env, fleet, platform, progress).await?),
        None => None,
    };
    env.stop().await;

    // The floor.
    let env = start_env(platform, false).await?;
    fill_mapi(&env.client(), fleet, platform).await?;
    fill::warm(&env.client(), &fill::namespaces()).await.ok();
    let cpu_before = process_cpu();
    let (floor_time, floor_requests) = floor(&env, &converged).await?;
    let floor_cpu_ms = ms(process_cpu().saturating_sub(cpu_before));
    env.stop().await;
    progress(&format!(
        "  floor: {} objects written in {:.2} s, CPU {:.2} s (the API server's and the plain client's); requests: {}",
        converged.objects(),
        floor_time.as_secs_f64(),
        floor_cpu_ms / 1e3,
        floor_requests.summary()
    ));

    Ok(RealOutcome {
        fill_ms,
        converged_ms,
        converge_quiet_ms: ms(converge_quiet),
        converge_cpu_ms,
        converge_server_cpu_ms,
        converge_writes: converge.writes(),
        converge_requests: converge.to_json(),
        converge_hook_calls,
        converge_reconciles,
        floor_ms: ms(floor_time),
        floor_cpu_ms,
        floor_writes: floor_requests.writes(),
        floor_requests: floor_requests.to_json(),
        floor_objects: converged.objects(),
        idle_ms,
        idle_writes: idle.writes(),
        idle_requests: idle.to_json(),
        idle_rv_advance,
        idle_hook_calls,
        idle_reconciles,
        restart_quiet_ms: restart.quiet_ms,
        restart_quiet_runs_ms,
        restart_first_machine_ms: restart.first_machine_ms,
        restart_cpu_ms: restart.cpu_ms,
        operator_restart_quiet_ms: operator_restart.quiet_ms,
        operator_restart_cpu_ms: operator_restart.cpu_ms,
        operator_restart_hook_calls,
        restart_writes,
        restart_requests: restart.requests.to_json(),
        restart_rv_advance,
        restart_hook_calls,
        restart_list_floor_ms: ms(restart_list_floor.decoded),
        restart_serve_floor_ms: ms(restart_list_floor.served),
        restart_server_cpu_ms: restart.server_cpu_ms,
        memory: Some(memory),
        operator_memory: Some(operator_memory),
        shipped,
        providers,
    })
}

/// The shipped operator over the synchronized fleet ([`super::shipped`]), once the
/// cluster's own objects are there ([`install_cluster_objects`]).
async fn shipped_operator(
    binary: &std::path::Path,
    env: &TestEnv,
    fleet: Fleet,
    platform: &TestPlatform,
    progress: &impl Fn(&str),
) -> Result<super::shipped::Shipped, BenchError> {
    install_cluster_objects(env, platform).await?;
    progress(&format!(
        "  the shipped operator, {}: a cold start, then restarts",
        binary.display()
    ));
    super::shipped::measure(binary, env, fleet, progress).await
}

/// The CPU this bench process has used (the in-process API server, the bench's clients
/// and the controllers' runtime, which each figure then subtracts).
fn process_cpu() -> Duration {
    super::procfs::process_cpu(std::process::id()).unwrap_or_default()
}

/// How many times the controllers are restarted over the synchronized fleet.
pub const RESTARTS: usize = 5;
/// How many times the operator's wiring is restarted after them.
pub const OPERATOR_RESTARTS: usize = 3;

/// One restart of the controllers over the synchronized fleet, until quiet.
struct Restart {
    quiet_ms: f64,
    first_machine_ms: f64,
    cpu_ms: f64,
    /// The CPU of the rest of the bench process (the in-process API server).
    server_cpu_ms: f64,
    requests: Snapshot,
    rv_advance: u64,
    hook_calls: usize,
}

impl Restart {
    /// The restart's progress line, named by the controllers `wiring` ran.
    fn line(&self, wiring: Wiring) -> String {
        let what = match wiring {
            Wiring::Sync => "restart",
            Wiring::Operator => "restart with the migration controllers",
        };
        format!(
            "  {what}: first Machine reconcile after {:.2} s, quiet after {:.2} s, CPU {:.2} s (the API server's {:.2} s), {} writes, resourceVersion +{}, {} hook calls; requests: {}",
            self.first_machine_ms / 1e3,
            self.quiet_ms / 1e3,
            self.cpu_ms / 1e3,
            self.server_cpu_ms / 1e3,
            self.requests.writes(),
            self.rv_advance,
            self.hook_calls,
            self.requests.summary()
        )
    }
}

/// The restart whose time until quiet is the median.
fn median(mut restarts: Vec<Restart>) -> Restart {
    restarts.sort_by(|a, b| a.quiet_ms.total_cmp(&b.quiet_ms));
    restarts.swap_remove(restarts.len() / 2)
}

/// The largest of a figure over the restarts (writes, hook calls: any restart's count).
fn most<T: Ord + Default>(restarts: &[Restart], figure: impl Fn(&Restart) -> T) -> T {
    restarts.iter().map(figure).max().unwrap_or_default()
}

/// Starts the controllers `wiring` says over the synchronized fleet, waits until every
/// pair was reconciled and nothing more happens, and stops them.
async fn restart_once(
    env: &TestEnv,
    kubeconfig: &str,
    fleet: Fleet,
    platform: &'static TestPlatform,
    wiring: Wiring,
    bound: Duration,
) -> Result<Restart, BenchError> {
    let rv = env.resource_version();
    let cpu_before = process_cpu();
    let controllers = Controllers::start_wired(kubeconfig, 1, wiring, platform)?;
    // Every pair is reconciled once at a restart (its objects' list events), and once
    // more by its migration controller.
    let per_pair = match wiring {
        Wiring::Sync => 1,
        Wiring::Operator => 2,
    };
    let quiet = controllers
        .quiet(per_pair * (fleet.machines + fleet.machine_sets), bound)
        .await?;
    let cpu = controllers.cpu();
    let server_cpu = process_cpu().saturating_sub(cpu_before + cpu);
    let first_machine_ms = controllers
        .observer
        .first_of(<MachineSync as sync_core::SyncPair>::NAME)
        .map_or(f64::NAN, |at| {
            ms(at.saturating_duration_since(controllers.started()))
        });
    let restart = Restart {
        quiet_ms: ms(quiet),
        first_machine_ms,
        cpu_ms: ms(cpu),
        server_cpu_ms: ms(server_cpu),
        requests: controllers.requests.snapshot(),
        rv_advance: env.resource_version().saturating_sub(rv),
        hook_calls: controllers.observer.counts().1,
    };
    controllers.stop().await?;
    Ok(restart)
}

/// What a restart's lists cost a plain client on this server, each the median of 3.
#[derive(Clone, Copy, Debug)]
struct ListFloors {
    /// Every kind the controllers watch (MAPI and CAPI Machines and MachineSets, the
    /// infrastructure machines and templates) listed all at once, in pages of the
    /// watcher's default size (500), each object decoded as JSON. A restart lists the same
    /// before it can tell that nothing changed.
    decoded: Duration,
    /// The same pages fetched as text, of which only the continue token is read (the
    /// items are skipped, not decoded): the server's part of a restart, which no client
    /// goes below.
    served: Duration,
}

async fn list_floors(env: &TestEnv, platform: &TestPlatform) -> Result<ListFloors, BenchError> {
    let client = counted_client(&env.kubeconfig(), Requests::new()).await?;
    let namespaces = fill::namespaces();
    // The MAPI kinds the sync reads, and the CAPI-side kinds it writes.
    let mapi = [fill::mapi_machines(), fill::mapi_machine_sets()];
    let capi = written_kinds(platform).map(|(_, resource)| resource);
    let apis: Vec<_> = (mapi.iter().map(|r| fill::dynamic(&client, &namespaces.mapi, r)))
        .chain(capi.iter().map(|r| fill::dynamic(&client, &namespaces.capi, r)))
        .collect();
    let decoded = median_of_3(|| futures::future::try_join_all(apis.iter().cloned().map(list_pages))).await?;
    let served =
        median_of_3(|| futures::future::try_join_all(apis.iter().map(|api| list_pages_text(&client, api))))
            .await?;
    Ok(ListFloors { decoded, served })
}

/// The median time of three runs of `run`.
async fn median_of_3<T, F: Future<Output = Result<T, BenchError>>>(
    mut run: impl FnMut() -> F,
) -> Result<Duration, BenchError> {
    let mut times = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        run().await?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[1])
}

/// Every object of `api`, listed in pages of 500; how many.
async fn list_pages(api: Api<DynamicObject>) -> Result<usize, BenchError> {
    paged(|params| {
        let api = api.clone();
        async move {
            let page = api.list(&params).await?;
            Ok((page.items.len(), page.metadata.continue_))
        }
    })
    .await
}

/// Every page of `api` (500 objects each) fetched as text; only the continue token is
/// read. Its bytes.
async fn list_pages_text(client: &Client, api: &Api<DynamicObject>) -> Result<usize, BenchError> {
    #[derive(serde::Deserialize)]
    struct Page {
        metadata: kube::core::ListMeta,
    }
    paged(|params| async move {
        let request = kube::core::Request::new(api.resource_url())
            .list(&params)
            .map_err(|e| BenchError::Other(format!("list {}: {e}", api.resource_url())))?;
        let text = client.request_text(request).await?;
        let page: Page = serde_json::from_str(&text)
            .map_err(|e| BenchError::Other(format!("a page of {}: {e}", api.resource_url())))?;
        Ok((text.len(), page.metadata.continue_))
    })
    .await
}

/// Follows a list's pages of 500 from the first: `page` fetches one and says how much it
/// held and its continue token; the sum over the pages.
async fn paged<F: Future<Output = Result<(usize, Option<String>), BenchError>>>(
    mut page: impl FnMut(ListParams) -> F,
) -> Result<usize, BenchError> {
    let mut params = ListParams::default().limit(500);
    let mut total = 0;
    loop {
        let (held, token) = page(params.clone()).await?;
        total += held;
        match token.filter(|token| !token.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(total),
        }
    }
}

/// The simulated providers' phase: they provision the fleet (phases, instances,
/// provider status) and the sync copies their status, until each provider has reconciled
/// each of its objects, no name waits for the sync's retry after a failed reconcile, and
/// the server is then quiet for [`PROVIDERS_QUIET`]; then nothing
/// may write for `window` (the AWSMachine conditions loop of issue 29 wrote without end
/// here).
async fn idle_with_providers(
    env: &TestEnv,
    client: &Client,
    controllers: &Controllers,
    fleet: Fleet,
    window: Duration,
    bound: Duration,
) -> Result<ProvidersIdle, BenchError> {
    let stop = tokio_util::sync::CancellationToken::new();
    let (reconciled, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let providers = controllers::simulate::SimulatedProviders::new(client.clone(), fill::namespaces())
        .with_observer(reconciled);
    let task = tokio::spawn(providers.run(stop.clone()));
    // Each provider has reconciled each of its objects once (its first list can take longer
    // than the quiet below, and nothing is written until it is done): MAPI Machines, CAPI
    // Machines and infrastructure machines, MAPI and CAPI MachineSets.
    let expected = 3 * fleet.machines + 2 * fleet.machine_sets;
    let mut seen: HashSet<(&'static str, String)> = HashSet::new();
    let started = Instant::now();
    let (mut rv, mut since) = (env.resource_version(), Instant::now());
    // Quiet is not enough at scale: a name the sync failed to write waits for its retry,
    // up to 5 minutes (30 000 pairs showed a 35 s lull, then 4 813 sync writes).
    while seen.len() < expected || since.elapsed() < PROVIDERS_QUIET || controllers.observer.failing() > 0 {
        if started.elapsed() > bound {
            stop.cancel();
            return Err(BenchError::Other(format!(
                "the simulated providers and the sync did not fall quiet within {bound:?} ({} of {expected} objects reconciled by their provider, {} names waiting for the sync's retry)",
                seen.len(),
                controllers.observer.failing()
            )));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        while let Ok(report) = reports.try_recv() {
            seen.insert((report.controller, report.name));
        }
        let now = env.resource_version();
        if now != rv {
            (rv, since) = (now, Instant::now());
        }
    }
    let settled_ms = ms(since.saturating_duration_since(started));
    let counted = controllers.requests.snapshot();
    tokio::time::sleep(window).await;
    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(env.client(), &fill::namespaces().mapi);
    let contests = events
        .list(&ListParams::default())
        .await
        .map_err(|e| BenchError::Other(format!("listing Events: {e}")))?
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some(sync_core::toolkit::contest::REASON))
        .count();
    let outcome = ProvidersIdle {
        settled_ms,
        sync_writes: controllers.requests.snapshot().since(&counted).writes(),
        rv_advance: env.resource_version().saturating_sub(rv),
        contests,
    };
    stop.cancel();
    task.await.ok();
    Ok(outcome)
}

/// How long the server must see no write before the providers' fleet counts as settled:
/// longer than the providers' longest retry (30 s, `controllers::simulate`), so a lull
/// while they back off after conflicts is not taken for quiet (a 10 s quiet passed after
/// 153.6 s at 10 000 pairs, and the window then saw 11 720 of the providers' writes).
const PROVIDERS_QUIET: Duration = Duration::from_secs(35);

/// What [`idle_with_providers`] measured.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct ProvidersIdle {
    /// From the providers' start to the last write before the quiet.
    pub settled_ms: f64,
    /// The sync's writes in the window.
    pub sync_writes: u64,
    /// The server's resourceVersion advance in the window (every writer's).
    pub rv_advance: u64,
    /// `ConflictingWriter` Events since the providers started: a contest the sync held
    /// off would also read as a quiet window, so it is counted apart.
    pub contests: usize,
}
