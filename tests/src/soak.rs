//! The migration soak: Machines and MachineSets migrated back and forth by two operator
//! replicas with leader election, under envtest fault injection (dropped and expired
//! watches, 5xx answers, latency), with the leader killed (no Lease release) half-way.
//! `tests/tests/migration_soak.rs` runs it small on every test run and at full size on
//! request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use controllers::operator::leader::{self, LeaseSettings};
use controllers::operator::{Operator, Settings};
use controllers::simulate::SimulatedProviders;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, ListParams, PostParams};
use sync_core::api::{capi, mapi};
use sync_core::toolkit::SYNC_FINALIZER;
use tokio_util::sync::CancellationToken;

use crate::migration::{AuthorityMonitor, is_paused, request_machine, request_machine_set, settled_on};
use crate::real::{
    aws, aws_cluster, create_aws_machine, create_aws_machine_set, eventually_within, provider_spec,
};
use crate::{Cluster, TestResult, apply_crd};

/// The size of a soak run.
#[derive(Clone, Copy, Debug)]
pub struct Soak {
    /// Standalone Machines.
    pub machines: usize,
    /// MachineSets (zero replicas: their Machines would be more Machines).
    pub sets: usize,
    /// Migrations to Cluster API and back, for every object.
    pub round_trips: usize,
    /// How long every object may take to settle after a request.
    pub bound: Duration,
}

/// What a soak measured.
#[derive(Clone, Debug)]
pub struct SoakReport {
    /// From the first request to the last object settled back on the Machine API.
    pub migrating: Duration,
    /// Each half round trip: (to, time to settle every object).
    pub legs: Vec<(&'static str, Duration)>,
    /// Watch events replayed by the authority monitor.
    pub events_checked: usize,
    /// Times a replica stopped (its Lease lost) and was started again.
    pub restarts: usize,
}

/// The operator's Lease (`--leader-election-id`), which deploy/'s RBAC lets it renew.
const LEASE: &str = "machine-sync-controllers";

/// One operator replica on its own runtime, so that killing it kills every task it
/// started at once, like SIGKILL: nothing releases the Lease. Until killed, it is started
/// again whenever it stops, as a Deployment's pod is: the operator exits when it loses
/// its Lease (as controller-runtime's managers do), which a starved replica can, and
/// kubelet restarts it as a candidate.
struct Replica {
    name: String,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How long a stopped replica waits before it starts again (kubelet's first back-off is
/// 10 s; shorter here, the soak is short).
const RESTART_DELAY: Duration = Duration::from_millis(500);

impl Replica {
    fn start(kubeconfig: String, settings: Settings, restarts: Arc<AtomicUsize>) -> Self {
        let name = settings.replica.clone();
        let (kill, mut killed) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                loop {
                    let run = async {
                        let client = sync_core::client::from_kubeconfig(&kubeconfig).await?;
                        let operator = Operator::start(client, settings.clone(), CancellationToken::new()).await?;
                        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(operator.wait().await?)
                    };
                    tokio::select! {
                        exit = run => {
                            tracing::info!(replica = %settings.replica, ?exit, "the operator stopped; starting it again");
                            restarts.fetch_add(1, Ordering::Relaxed);
                        }
                        _ = &mut killed => return,
                    }
                    tokio::select! {
                        () = tokio::time::sleep(RESTART_DELAY) => {}
                        _ = &mut killed => return,
                    }
                }
            });
            runtime.shutdown_background();
        });
        Self {
            name,
            kill: Some(kill),
            thread: Some(thread),
        }
    }

    fn kill(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

fn settings(cluster: &Cluster, replica: &str) -> Settings {
    Settings {
        namespaces: cluster.namespaces.clone(),
        concurrency: 4,
        replica: replica.to_owned(),
        leader_election: Some(LeaseSettings {
            namespace: crate::OPERATOR_NAMESPACE.into(),
            name: LEASE.into(),
            identity: leader::identity(replica),
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: Duration::from_millis(300),
        }),
        metrics_address: None,
        probe_address: None,
        shutdown_grace: Duration::from_secs(5),
        migration: controllers::migration::MigrationConfig::default(),
        checkpoint_namespace: Some(crate::OPERATOR_NAMESPACE.into()),
        gate: controllers::feature_gate::GateSource::Enabled,
        release_version: None,
        upstream_lease: None,
        platforms: controllers::operator::run::default_platforms(),
    }
}

async fn install_infrastructure(cluster: &Cluster) -> TestResult {
    crate::real::install_infrastructure(&cluster.client, &crate::real::AWS).await?;
    install_aws_cluster(cluster).await
}

/// The cluster's AWSCluster, as OpenShift creates it: the operator's conversion to the
/// Machine API reads it.
async fn install_aws_cluster(cluster: &Cluster) -> TestResult {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/examples/crds/infrastructure.cluster.x-k8s.io_awsclusters.yaml");
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&std::fs::read_to_string(file)?)?;
    apply_crd(&cluster.client, &crd).await?;
    let resource = kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
        crate::INFRA_GROUP,
        crate::real::AWS_VERSION,
        "AWSCluster",
    ));
    let api: Api<kube::api::DynamicObject> =
        Api::namespaced_with(cluster.client.clone(), &cluster.namespaces.capi, &resource);
    let object: kube::api::DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": format!("{}/{}", crate::INFRA_GROUP, crate::real::AWS_VERSION),
        "kind": "AWSCluster",
        "metadata": {"name": crate::real::CLUSTER_NAME, "namespace": cluster.namespaces.capi},
        "spec": {"region": crate::real::REGION}
    }))?;
    eventually_within(Duration::from_secs(10), "the AWSCluster CRD served", || {
        let (api, object) = (api.clone(), object.clone());
        async move { Ok(api.create(&PostParams::default(), &object).await.ok()) }
    })
    .await?;
    Ok(())
}

/// Chaos until stopped: watches dropped every half second, a burst of 5xx answers to
/// writes of every kind the migration touches every two seconds, and a little latency on
/// every request.
fn chaos(env: &envtest::TestEnv, stop: Arc<AtomicBool>) -> tokio::task::JoinHandle<()> {
    let shared = env.shared();
    tokio::spawn(async move {
        shared.faults.set_latency(Duration::from_millis(1));
        let mut round = 0u64;
        while !stop.load(Ordering::Relaxed) {
            tokio::time::sleep(Duration::from_millis(250)).await;
            round += 1;
            // Dropped, not expired: a watch resumed from its resourceVersion misses no
            // event, so the authority monitor sees every state in between. (Expired
            // watches, whose relists skip states, are a scenario of their own.)
            if round.is_multiple_of(2) {
                shared.faults.drop_watches();
            }
            // A burst of 5xx every two seconds. 500, not 503: kube's client retries a
            // 503 itself (Retry-After), and rules added faster than one retry a second
            // would never run out. Not more often: every writer backs off per object
            // (up to minutes), and faults on most writes of a kind would measure the
            // backoff cap, not the migration.
            if round % 8 == 4 {
                shared.faults.fail(Some("patch"), Some("machines"), 500, Some(3));
                shared
                    .faults
                    .fail(Some("patch"), Some("awsmachines"), 500, Some(1));
                shared
                    .faults
                    .fail(Some("patch"), Some("machinesets"), 500, Some(1));
            }
        }
        shared.faults.clear();
    })
}

async fn lease_holder(cluster: &Cluster) -> TestResult<Option<String>> {
    let leases: Api<Lease> = Api::namespaced(cluster.client.clone(), crate::OPERATOR_NAMESPACE);
    Ok(leases.get_opt(LEASE).await?.and_then(|l| l.spec?.holder_identity))
}

/// Requests `to` for every object, as a user would: retrying the injected 5xx answers.
async fn request_all(cluster: &Cluster, soak: &Soak, to: &str) -> TestResult {
    for i in 0..soak.machines {
        let name = format!("m-{i}");
        retrying(|| request_machine(cluster, &name, to)).await?;
    }
    for i in 0..soak.sets {
        let name = format!("s-{i}");
        retrying(|| request_machine_set(cluster, &name, to)).await?;
    }
    Ok(())
}

async fn retrying<T, F, Fut>(mut write: F) -> TestResult<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = TestResult<T>>,
{
    let mut attempts = 0;
    loop {
        match write().await {
            Ok(value) => return Ok(value),
            Err(error) if attempts < 50 => {
                attempts += 1;
                tracing::debug!(%error, "retrying a request");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(error) => return Err(error),
        }
    }
}

/// Requests `to` for every object and waits until each settled on it.
async fn leg(cluster: &Cluster, soak: &Soak, to: &'static str) -> TestResult<Duration> {
    let started = Instant::now();
    request_all(cluster, soak, to).await?;
    settle_all(cluster, soak, to).await?;
    eprintln!(
        "soak: every object on {to} after {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(started.elapsed())
}

async fn settle_all(cluster: &Cluster, soak: &Soak, to: &str) -> TestResult {
    eventually_within(soak.bound, &format!("every object settled on {to}"), || async {
        let list = ListParams::default();
        let mapi = cluster.mapi_machines().list(&list).await?.items;
        let capi = cluster.capi_machines().list(&list).await?.items;
        let mapi_sets = cluster.mapi_machine_sets().list(&list).await?.items;
        let capi_sets = cluster.capi_machine_sets().list(&list).await?.items;
        let capi_generation = |name: &str| {
            capi.iter()
                .find(|c| c.name_any() == name)
                .and_then(|c| c.metadata.generation)
        };
        let set_generation = |name: &str| {
            capi_sets
                .iter()
                .find(|c| c.name_any() == name)
                .and_then(|c| c.metadata.generation)
        };
        let describe = |name: String, sync: Option<&sync_core::api::SyncStatus>| {
            let conditions: Vec<String> = sync
                .and_then(|s| s.conditions.as_ref())
                .map(|c| {
                    c.iter()
                        .map(|c| {
                            format!(
                                "{}={}({})",
                                c.type_,
                                c.status,
                                c.reason.clone().unwrap_or_default()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            format!(
                "{name}: {:?} synced {:?}@{:?} {conditions:?}",
                sync.and_then(|s| s.authoritative_api.clone()),
                sync.and_then(|s| s.synchronized_api.clone()),
                sync.and_then(|s| s.synchronized_generation)
            )
        };
        let unsettled: Vec<String> = mapi
            .iter()
            .filter(|m| {
                let source = if to == "MachineAPI" {
                    m.metadata.generation
                } else {
                    capi_generation(&m.name_any())
                };
                !settled_on(*m, to, source)
            })
            .map(|m| describe(m.name_any(), m.status.as_ref().map(|s| &s.sync)))
            .chain(
                mapi_sets
                    .iter()
                    .filter(|s| {
                        let source = if to == "MachineAPI" {
                            s.metadata.generation
                        } else {
                            set_generation(&s.name_any())
                        };
                        !settled_on(*s, to, source)
                    })
                    .map(|s| describe(s.name_any(), s.status.as_ref().map(|s| &s.sync))),
            )
            .collect();
        let counted = mapi.len() == soak.machines && mapi_sets.len() == soak.sets;
        if unsettled.is_empty() && counted {
            Ok(Some(()))
        } else {
            Err(format!(
                "{} of {} unsettled ({} Machines, {} MachineSets): {:?}",
                unsettled.len(),
                soak.machines + soak.sets,
                mapi.len(),
                mapi_sets.len(),
                &unsettled[..unsettled.len().min(3)]
            )
            .into())
        }
    })
    .await
}

/// Nothing left behind: one CAPI Machine and AWSMachine per MAPI Machine, one CAPI
/// MachineSet per MAPI one, nothing being deleted, finalizers once each, the mirrors
/// paused (the pairs ended on the Machine API).
async fn nothing_left_behind(cluster: &Cluster, soak: &Soak) -> TestResult {
    let list = ListParams::default();
    let capi = cluster.capi_machines().list(&list).await?.items;
    let infra = aws(cluster, "AWSMachine").list(&list).await?.items;
    let capi_sets = cluster.capi_machine_sets().list(&list).await?.items;
    let mapi = cluster.mapi_machines().list(&list).await?.items;
    if capi.len() != soak.machines || infra.len() != soak.machines || capi_sets.len() != soak.sets {
        return Err(format!(
            "{} CAPI Machines, {} AWSMachines, {} CAPI MachineSets for {} Machines and {} MachineSets",
            capi.len(),
            infra.len(),
            capi_sets.len(),
            soak.machines,
            soak.sets
        )
        .into());
    }
    for (kind, name, deleting, finalizers, paused) in capi
        .iter()
        .map(|o| {
            (
                "CAPI Machine",
                o.name_any(),
                o.metadata.deletion_timestamp.is_some(),
                o.finalizers().to_vec(),
                Some(is_paused(o)),
            )
        })
        .chain(infra.iter().map(|o| {
            (
                "AWSMachine",
                o.name_any(),
                o.metadata.deletion_timestamp.is_some(),
                o.finalizers().to_vec(),
                Some(is_paused(o)),
            )
        }))
        .chain(capi_sets.iter().map(|o| {
            (
                "CAPI MachineSet",
                o.name_any(),
                o.metadata.deletion_timestamp.is_some(),
                o.finalizers().to_vec(),
                Some(is_paused(o)),
            )
        }))
        .chain(mapi.iter().map(|o| {
            (
                "MAPI Machine",
                o.name_any(),
                o.metadata.deletion_timestamp.is_some(),
                o.finalizers().to_vec(),
                None,
            )
        }))
    {
        let mut unique = finalizers.clone();
        unique.sort();
        unique.dedup();
        if deleting
            || unique.len() != finalizers.len()
            || !finalizers.contains(&SYNC_FINALIZER.to_owned())
            || paused == Some(false)
        {
            return Err(format!(
                "{kind} {name}: deleting {deleting}, finalizers {finalizers:?}, paused {paused:?}"
            )
            .into());
        }
    }
    Ok(())
}

/// Runs a soak; the report has its timings.
pub async fn run(soak: Soak) -> TestResult<SoakReport> {
    let cluster = aws_cluster().await?;
    install_infrastructure(&cluster).await?;
    let env = cluster.env.as_ref().ok_or("the soak needs envtest")?;
    // The replicas run as the operator's ServiceAccount, under deploy/'s RBAC and exempt
    // from the admission policies, as in a cluster.
    let operator = envtest::service_account_user(crate::OPERATOR_NAMESPACE, crate::OPERATOR_SERVICE_ACCOUNT);
    let kubeconfig = env
        .kubeconfig_for(&operator)
        .ok_or("no kubeconfig for the operator")?;
    let providers_stop = CancellationToken::new();
    let providers = tokio::spawn(
        SimulatedProviders::new(cluster.providers_client.clone(), cluster.namespaces.clone())
            .run(providers_stop.clone()),
    );
    let restarts = Arc::new(AtomicUsize::new(0));
    let mut replicas = vec![
        Replica::start(kubeconfig.clone(), settings(&cluster, "soak-a"), restarts.clone()),
        Replica::start(kubeconfig.clone(), settings(&cluster, "soak-b"), restarts.clone()),
    ];
    let machines_monitor =
        AuthorityMonitor::start::<mapi::Machine, capi::Machine>(&cluster, Some("AWSMachine"));
    let sets_monitor =
        AuthorityMonitor::start::<mapi::MachineSet, capi::MachineSet>(&cluster, Some("AWSMachineTemplate"));
    for i in 0..soak.machines {
        create_aws_machine(
            &cluster,
            &format!("m-{i}"),
            "MachineAPI",
            &[("soak", "yes")],
            None,
            provider_spec("m6i.large"),
        )
        .await?;
    }
    for i in 0..soak.sets {
        create_aws_machine_set(
            &cluster,
            &format!("s-{i}"),
            "MachineAPI",
            0,
            provider_spec("m6i.large"),
        )
        .await?;
    }
    settle_all(&cluster, &soak, "MachineAPI").await?;
    eprintln!(
        "soak: {} Machines and {} MachineSets synced",
        soak.machines, soak.sets
    );

    let stop_chaos = Arc::new(AtomicBool::new(false));
    let chaos = chaos(env, stop_chaos.clone());
    let started = Instant::now();
    let mut legs = Vec::new();
    for round in 0..soak.round_trips {
        // Half-way through the first round trip, the leader dies with the migrations
        // to Cluster API in flight; the standby takes over once its lease expires.
        if round == soak.round_trips / 2 {
            let leg_started = Instant::now();
            eprintln!("soak: requesting ClusterAPI");
            request_all(&cluster, &soak, "ClusterAPI").await?;
            eprintln!("soak: requested ClusterAPI");
            let holder = lease_holder(&cluster).await?.unwrap_or_default();
            let leader = replicas
                .iter()
                .position(|r| holder.starts_with(&format!("{}_", r.name)))
                .ok_or_else(|| format!("no replica holds the lease ({holder:?})"))?;
            tracing::info!(leader = %replicas[leader].name, "killing the leader");
            replicas[leader].kill();
            eprintln!(
                "soak: killed the leader {} after {:.1} s",
                replicas[leader].name,
                leg_started.elapsed().as_secs_f64()
            );
            settle_all(&cluster, &soak, "ClusterAPI").await?;
            legs.push(("ClusterAPI (leader killed)", leg_started.elapsed()));
        } else {
            legs.push(("ClusterAPI", leg(&cluster, &soak, "ClusterAPI").await?));
        }
        legs.push(("MachineAPI", leg(&cluster, &soak, "MachineAPI").await?));
    }
    let migrating = started.elapsed();
    stop_chaos.store(true, Ordering::Relaxed);
    chaos.await?;
    settle_all(&cluster, &soak, "MachineAPI").await?;
    nothing_left_behind(&cluster, &soak).await?;
    let events_checked = machines_monitor.check()? + sets_monitor.check()?;
    for replica in &mut replicas {
        replica.kill();
    }
    providers_stop.cancel();
    let _ = providers.await;
    Ok(SoakReport {
        migrating,
        legs,
        events_checked,
        restarts: restarts.load(Ordering::Relaxed),
    })
}
