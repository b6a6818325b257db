//! Support for the migration suites: requesting a migration, waiting for it to settle,
//! and the authority monitor that checks, over every watch event of a pair in
//! resourceVersion order, that two sides never drive at once.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde_json::json;
use sync_core::api::mapi;
use sync_core::toolkit::condition;
use sync_core::toolkit::pause::PAUSED_ANNOTATION;
use tokio::task::JoinHandle;

use crate::real::{aws, eventually, eventually_within, synchronized};
use crate::{Cluster, TestResult};

/// What one watch event said about one object of a pair.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    /// The MAPI object's `status.authoritativeAPI`.
    Authority(Option<String>),
    /// Whether the CAPI object carries the pause annotation.
    CapiPaused(bool),
    /// Whether the infrastructure object carries the pause annotation.
    InfraPaused(bool),
}

/// Records, for every pair of a namespace, the authority and pause annotations as the
/// watches deliver them, to replay in resourceVersion order.
pub struct AuthorityMonitor {
    events: Arc<Mutex<Vec<(u64, String, Seen)>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl AuthorityMonitor {
    /// Watches the MAPI kind `M`, the CAPI kind `C` and the AWS infrastructure `infra_kind`
    /// (`None`: none) of `cluster` (names of infrastructure objects are the pairs' names
    /// for Machines; templates are matched by their MachineSet label).
    pub fn start<M, C>(cluster: &Cluster, infra_kind: Option<&str>) -> Self
    where
        M: sync_core::MapiObject,
        C: sync_core::SyncObject,
    {
        Self::start_with_infra::<M, C>(cluster, infra_kind.map(|kind| aws(cluster, kind)))
    }

    /// [`AuthorityMonitor::start`] with the infrastructure objects of `infra` (any
    /// platform's: [`crate::real::TestPlatform::machines`] or `templates`).
    pub fn start_with_infra<M, C>(cluster: &Cluster, infra: Option<Api<DynamicObject>>) -> Self
    where
        M: sync_core::MapiObject,
        C: sync_core::SyncObject,
    {
        let events = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        let mapi = Api::<M>::namespaced(cluster.client.clone(), &cluster.namespaces.mapi);
        tasks.push(record(
            mapi,
            events.clone(),
            |o: &M| Seen::Authority(o.authoritative_api().map(ToString::to_string)),
            |o| o.name_any(),
        ));
        let capi = Api::<C>::namespaced(cluster.client.clone(), &cluster.namespaces.capi);
        tasks.push(record(
            capi,
            events.clone(),
            |o: &C| Seen::CapiPaused(paused(o)),
            |o| o.name_any(),
        ));
        if let Some(infra) = infra {
            tasks.push(record(
                infra,
                events.clone(),
                |o: &DynamicObject| Seen::InfraPaused(paused(o)),
                |o| {
                    o.labels()
                        .get("machine.openshift.io/cluster-api-machineset")
                        .cloned()
                        .unwrap_or_else(|| o.name_any())
                },
            ));
        }
        Self { events, tasks }
    }

    /// Replays every event seen so far in resourceVersion order; an error names the first
    /// moment at which a pair had two driving sides (`MachineAPI` with an unpaused CAPI or
    /// infrastructure object) or, after a migration, none (`ClusterAPI` with a paused
    /// one). Returns how many events were checked.
    pub fn check(&self) -> TestResult<usize> {
        let mut events = self.events.lock().map_err(|_| "poisoned")?.clone();
        events.sort_by_key(|(rv, _, _)| *rv);
        #[derive(Default)]
        struct Pair {
            authority: Option<String>,
            capi_paused: Option<bool>,
            infra_paused: Option<bool>,
        }
        let mut pairs: BTreeMap<String, Pair> = BTreeMap::new();
        for (rv, name, seen) in &events {
            let pair = pairs.entry(name.clone()).or_default();
            match seen {
                Seen::Authority(a) => pair.authority = a.clone(),
                Seen::CapiPaused(p) => pair.capi_paused = Some(*p),
                Seen::InfraPaused(p) => pair.infra_paused = Some(*p),
            }
            let both = pair.authority.as_deref() == Some("MachineAPI")
                && (pair.capi_paused == Some(false) || pair.infra_paused == Some(false));
            // Cluster API authoritative with its side still paused: nobody drives, and
            // nothing will lift the pause (upstream #309's outcome).
            let none = pair.authority.as_deref() == Some("ClusterAPI")
                && (pair.capi_paused == Some(true) || pair.infra_paused == Some(true));
            if both || none {
                return Err(format!(
                    "{name} at resourceVersion {rv}: status.authoritativeAPI {:?} while CAPI paused {:?}, infra paused {:?}",
                    pair.authority, pair.capi_paused, pair.infra_paused
                )
                .into());
            }
        }
        Ok(events.len())
    }
}

impl Drop for AuthorityMonitor {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

fn paused<K: Resource>(object: &K) -> bool {
    object
        .meta()
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(PAUSED_ANNOTATION))
}

fn record<K>(
    api: Api<K>,
    events: Arc<Mutex<Vec<(u64, String, Seen)>>>,
    seen: impl Fn(&K) -> Seen + Send + 'static,
    name: impl Fn(&K) -> String + Send + 'static,
) -> JoinHandle<()>
where
    K: Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + Sync + 'static,
{
    tokio::spawn(async move {
        let mut stream = watcher(api, watcher::Config::default())
            .default_backoff()
            .touched_objects()
            .boxed();
        while let Some(item) = stream.next().await {
            let Ok(object) = item else { continue };
            let Some(rv) = object.resource_version().and_then(|rv| rv.parse::<u64>().ok()) else {
                continue;
            };
            if let Ok(mut events) = events.lock() {
                events.push((rv, name(&object), seen(&object)));
            }
        }
    })
}

/// Sets `spec.authoritativeAPI` of a MAPI Machine (the user's request).
pub async fn request_machine(cluster: &Cluster, name: &str, to: &str) -> TestResult<mapi::Machine> {
    Ok(cluster
        .mapi_machines()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "authoritativeAPI": to } })),
        )
        .await?)
}

/// Sets `spec.authoritativeAPI` of a MAPI MachineSet (its template's is left as it is:
/// while Cluster API is authoritative, the admission policies refuse any other spec
/// change of the MAPI MachineSet, as upstream's do).
pub async fn request_machine_set(cluster: &Cluster, name: &str, to: &str) -> TestResult<mapi::MachineSet> {
    Ok(cluster
        .mapi_machine_sets()
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "authoritativeAPI": to } })),
        )
        .await?)
}

/// The `Migration` condition of a MAPI object: (status, reason).
pub fn migration<M: sync_core::MapiObject>(object: &M) -> Option<(String, String)> {
    let c = condition::find(object, controllers::migration::MIGRATION_CONDITION)?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default()))
}

/// Whether a MAPI object settled on `to`: status = request = `to`, `Synchronized=True`
/// at the authoritative side's generation, recorded from `to`.
pub fn settled_on<M: sync_core::MapiObject>(object: &M, to: &str, source_generation: Option<i64>) -> bool {
    let sync = object.sync_status();
    object.authoritative_api().map(|a| a.as_str()) == Some(to)
        && synchronized(object).is_some_and(|(s, _)| s == "True")
        && sync.and_then(|s| s.synchronized_api.as_ref()).map(|a| a.as_str()) == Some(to)
        && sync.and_then(|s| s.synchronized_generation) == source_generation
        && source_generation.is_some()
}

/// Waits until MAPI Machine `name` settled on `to` (see [`settled_on`]).
pub async fn machine_settles(
    cluster: &Cluster,
    name: &str,
    to: &str,
    bound: std::time::Duration,
) -> TestResult<mapi::Machine> {
    let (mapi, capi) = (cluster.mapi_machines(), cluster.capi_machines());
    eventually_within(bound, &format!("Machine {name} settled on {to}"), || {
        let (mapi, capi) = (mapi.clone(), capi.clone());
        async move {
            let machine = mapi.get(name).await?;
            let source = if to == "MachineAPI" {
                machine.metadata.generation
            } else {
                capi.get_opt(name).await?.and_then(|c| c.metadata.generation)
            };
            Ok(settled_on(&machine, to, source).then_some(machine))
        }
    })
    .await
}

/// Waits until MAPI MachineSet `name` settled on `to` (see [`settled_on`]).
pub async fn machine_set_settles(
    cluster: &Cluster,
    name: &str,
    to: &str,
    bound: std::time::Duration,
) -> TestResult<mapi::MachineSet> {
    let (mapi, capi) = (cluster.mapi_machine_sets(), cluster.capi_machine_sets());
    eventually_within(bound, &format!("MachineSet {name} settled on {to}"), || {
        let (mapi, capi) = (mapi.clone(), capi.clone());
        async move {
            let set = mapi.get(name).await?;
            let source = if to == "MachineAPI" {
                set.metadata.generation
            } else {
                capi.get_opt(name).await?.and_then(|c| c.metadata.generation)
            };
            Ok(settled_on(&set, to, source).then_some(set))
        }
    })
    .await
}

/// One Event as an administrator reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSeen {
    /// Why (`MigrationStarted`).
    pub reason: String,
    /// What was done (`MigrateToClusterAPI`).
    pub action: String,
    /// The human-readable note.
    pub note: String,
}

/// The Events about `name` in `namespace`, oldest first.
pub async fn events_about(cluster: &Cluster, namespace: &str, name: &str) -> TestResult<Vec<EventSeen>> {
    use k8s_openapi::api::events::v1::Event;
    let events = Api::<Event>::namespaced(cluster.client.clone(), namespace)
        .list(&Default::default())
        .await?;
    let mut about: Vec<_> = events
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .map(|e| {
            (
                e.metadata.creation_timestamp.clone(),
                EventSeen {
                    reason: e.reason.unwrap_or_default(),
                    action: e.action.unwrap_or_default(),
                    note: e.note.unwrap_or_default(),
                },
            )
        })
        .collect();
    about.sort_by(|a, b| a.0.as_ref().map(|t| t.0).cmp(&b.0.as_ref().map(|t| t.0)));
    Ok(about.into_iter().map(|(_, event)| event).collect())
}

/// The reasons of the Events about `name` in `namespace`, oldest first.
pub async fn event_reasons(cluster: &Cluster, namespace: &str, name: &str) -> TestResult<Vec<String>> {
    Ok(events_about(cluster, namespace, name)
        .await?
        .into_iter()
        .map(|e| e.reason)
        .collect())
}

/// Waits until the Events about `name` include every one of `reasons`.
pub async fn wait_for_events(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    reasons: &[&str],
) -> TestResult<Vec<String>> {
    eventually_within(
        crate::WAIT,
        &format!("Events {reasons:?} about {name}"),
        || async {
            let seen = event_reasons(cluster, namespace, name).await?;
            Ok(reasons
                .iter()
                .all(|r| seen.iter().any(|s| s == r))
                .then_some(seen))
        },
    )
    .await
}

/// Whether an object carries the pause annotation.
pub fn is_paused<K: Resource>(object: &K) -> bool {
    paused(object)
}

/// The v1beta2 `Paused` condition of a CAPI object's status conditions.
pub fn capi_paused(
    conditions: Option<&[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition]>,
) -> Option<bool> {
    sync_core::toolkit::pause::paused_condition(conditions.unwrap_or_default())
}

/// Waits until the CAPI Machine `name` reports its infrastructure provisioned (mirrored
/// from the MAPI Machine's status by the sync, after `Synchronized` may already be True):
/// the admission policies refuse a migration request before that.
pub async fn capi_machine_provisioned(cluster: &Cluster, name: &str) -> TestResult {
    let capi = cluster.capi_machines();
    eventually(&format!("CAPI Machine {name} infrastructure provisioned"), || {
        let capi = capi.clone();
        async move {
            let machine = capi.get_opt(name).await?;
            let status = machine.and_then(|m| m.status);
            let provisioned = status
                .and_then(|s| s.initialization)
                .and_then(|i| i.infrastructure_provisioned);
            Ok((provisioned == Some(true)).then_some(()))
        }
    })
    .await
}

/// Reports the CAPI Machine's infrastructure provisioned (`status.initialization.
/// infrastructureProvisioned`), as its provider would: the admission policies refuse a
/// migration request before that.
pub async fn infrastructure_provisioned(cluster: &Cluster, name: &str) -> TestResult {
    let patch = json!({"status": {"initialization": {"infrastructureProvisioned": true}}});
    cluster
        .capi_machines()
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}
