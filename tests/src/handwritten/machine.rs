//! The Machine controller, by hand: MAPI Machines ⇄ CAPI Machines.
//!
//! A name is reconciled when its MAPI Machine, its CAPI Machine, the `DevMachine` or
//! `AWSMachine` it references (or that it owns), or — for a CAPI-only Machine — the MAPI
//! mirror of its CAPI MachineSet changes.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kube::api::{Api, ApiResource};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use sync_core::api::{AuthoritativeApi, ContractVersionedObjectReference, capi, mapi};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::{Direction, Fetched, HookError, Hooks, INFRA_GROUP, InfraMeta, Namespaces, in_group};

/// The infrastructure kinds Machines may reference: `(kind, plural)`.
pub const INFRA_KINDS: [(&str, &str); 2] = [("DevMachine", "devmachines"), ("AWSMachine", "awsmachines")];

/// The controller's name, for logs and Events.
pub const NAME: &str = "machine-sync-handwritten";

/// What one reconcile of a Machine name read.
pub type MachinePair = Fetched<mapi::Machine, capi::Machine>;

/// Reverse indexes built from the CAPI Machines, to map other objects' events to names.
#[derive(Default)]
struct Index {
    /// CAPI MachineSet name → the CAPI Machines it owns.
    owned: HashMap<String, HashSet<String>>,
    /// CAPI Machine → the CAPI MachineSets owning it.
    owners: HashMap<String, Vec<String>>,
    /// (infrastructure kind, object name) → the CAPI Machines referencing it.
    referrers: HashMap<(usize, String), HashSet<String>>,
    /// CAPI Machine → its infrastructure reference.
    references: HashMap<String, (usize, String)>,
}

impl Index {
    fn update(&mut self, name: &str, machine: Option<&capi::Machine>) {
        for owner in self.owners.remove(name).unwrap_or_default() {
            if let Some(owned) = self.owned.get_mut(&owner) {
                owned.remove(name);
                if owned.is_empty() {
                    self.owned.remove(&owner);
                }
            }
        }
        if let Some(old) = self.references.remove(name)
            && let Some(referrers) = self.referrers.get_mut(&old)
        {
            referrers.remove(name);
            if referrers.is_empty() {
                self.referrers.remove(&old);
            }
        }
        let Some(machine) = machine else { return };
        let owners: Vec<String> = machine_set_owners(machine).map(str::to_owned).collect();
        for owner in &owners {
            self.owned
                .entry(owner.clone())
                .or_default()
                .insert(name.to_owned());
        }
        if !owners.is_empty() {
            self.owners.insert(name.to_owned(), owners);
        }
        if let Some(kind) = infra_kind(&machine.spec.infrastructure_ref) {
            let key = (kind, machine.spec.infrastructure_ref.name.clone());
            self.referrers
                .entry(key.clone())
                .or_default()
                .insert(name.to_owned());
            self.references.insert(name.to_owned(), key);
        }
    }
}

/// The CAPI MachineSets that own a CAPI Machine (ownerReferences in the CAPI group).
fn machine_set_owners(machine: &capi::Machine) -> impl Iterator<Item = &str> {
    machine
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|owner| owner.kind == "MachineSet" && in_group(&owner.api_version, capi::GROUP))
        .map(|owner| owner.name.as_str())
}

/// Which of [`INFRA_KINDS`] a reference names.
fn infra_kind(reference: &ContractVersionedObjectReference) -> Option<usize> {
    if reference.api_group != INFRA_GROUP {
        return None;
    }
    INFRA_KINDS.iter().position(|(kind, _)| *kind == reference.kind)
}

struct Context {
    namespaces: Namespaces,
    mapi: Store<mapi::Machine>,
    capi: Store<capi::Machine>,
    machine_sets: Store<mapi::MachineSet>,
    infra: Vec<(ApiResource, Store<InfraMeta>)>,
    recorder: Recorder,
}

fn lock(index: &Mutex<Index>) -> MutexGuard<'_, Index> {
    index.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs the controller until `shutdown` resolves; reconciles in flight then finish.
pub async fn run<H: Hooks<mapi::Machine, capi::Machine>>(
    client: Client,
    namespaces: Namespaces,
    concurrency: usize,
    hooks: H,
    shutdown: impl Future<Output = ()>,
) {
    let (triggers, queue) = mpsc::unbounded_channel();
    let index = Arc::new(Mutex::new(Index::default()));
    let mut watches = JoinSet::new();

    // MAPI Machines: their own name.
    let writer = Writer::default();
    let mapi = writer.as_reader();
    let api = Api::<mapi::Machine>::namespaced(client.clone(), &namespaces.mapi);
    watches.spawn(super::reflect(
        super::watch(api),
        writer,
        triggers.clone(),
        |machine: &mapi::Machine, _, names: &mut Vec<String>| names.push(machine.name_any()),
    ));

    // CAPI Machines: their name (in the MAPI namespace); they also feed the indexes.
    let writer = Writer::default();
    let capi = writer.as_reader();
    let api = Api::<capi::Machine>::namespaced(client.clone(), &namespaces.capi);
    let capi_index = index.clone();
    watches.spawn(super::reflect(
        super::watch(api),
        writer,
        triggers.clone(),
        move |machine: &capi::Machine, gone, names: &mut Vec<String>| {
            let name = machine.name_any();
            lock(&capi_index).update(&name, (!gone).then_some(machine));
            names.push(name);
        },
    ));

    // MAPI MachineSets: the CAPI-only Machines of the same-named CAPI MachineSet.
    let writer = Writer::default();
    let machine_sets = writer.as_reader();
    let api = Api::<mapi::MachineSet>::namespaced(client.clone(), &namespaces.mapi);
    let set_index = index.clone();
    watches.spawn(super::reflect(
        super::watch(api),
        writer,
        triggers.clone(),
        move |set: &mapi::MachineSet, _, names: &mut Vec<String>| {
            if let Some(owned) = lock(&set_index).owned.get(set.name_any().as_str()) {
                names.extend(owned.iter().cloned());
            }
        },
    ));

    // Infrastructure machines (metadata only): the CAPI Machine owning or referencing one.
    let mut infra = Vec::new();
    for (position, (kind, plural)) in INFRA_KINDS.into_iter().enumerate() {
        let resource = super::infra_resource((kind, plural));
        let writer = Writer::new(resource.clone());
        infra.push((resource.clone(), writer.as_reader()));
        // `Api<PartialObjectMeta<_>>` lists and watches metadata only.
        let api = Api::<InfraMeta>::namespaced_with(client.clone(), &namespaces.capi, &resource);
        let infra_index = index.clone();
        watches.spawn(super::reflect(
            super::watch(api),
            writer,
            triggers.clone(),
            move |object: &InfraMeta, _, names: &mut Vec<String>| {
                let owners = object.metadata.owner_references.iter().flatten();
                names.extend(
                    owners
                        .filter(|o| o.kind == "Machine" && in_group(&o.api_version, capi::GROUP))
                        .map(|o| o.name.clone()),
                );
                let key = (position, object.name_any());
                if let Some(referrers) = lock(&infra_index).referrers.get(&key) {
                    names.extend(referrers.iter().cloned());
                }
            },
        ));
    }
    drop(triggers);

    let recorder = Recorder::new(
        client,
        Reporter {
            controller: NAME.into(),
            instance: None,
        },
    );
    let context = Arc::new(Context {
        namespaces,
        mapi,
        capi,
        machine_sets,
        infra,
        recorder,
    });
    let hooks = Arc::new(hooks);

    let synced = async {
        let (a, b, c) = tokio::join!(
            context.mapi.wait_until_ready(),
            context.capi.wait_until_ready(),
            context.machine_sets.wait_until_ready()
        );
        a.is_ok() && b.is_ok() && c.is_ok()
    };
    let shutdown = futures::FutureExt::shared(Box::pin(shutdown));
    tokio::select! {
        synced = synced => {
            if synced {
                super::queue::run(queue, concurrency, shutdown, |name| {
                    let (context, hooks) = (context.clone(), hooks.clone());
                    async move { reconcile(&context, &*hooks, name).await }
                })
                .await;
            }
        }
        () = shutdown.clone() => {}
    }
    watches.shutdown().await;
}

/// One reconcile: the dual fetch, then `docs/design.md` §3's decision table.
async fn reconcile<H: Hooks<mapi::Machine, capi::Machine>>(
    context: &Context,
    hooks: &H,
    name: String,
) -> Result<(), HookError> {
    let span = tracing::info_span!("reconcile", controller = NAME, name = %name);
    decide(context, hooks, name).instrument(span).await
}

async fn decide<H: Hooks<mapi::Machine, capi::Machine>>(
    context: &Context,
    hooks: &H,
    name: String,
) -> Result<(), HookError> {
    let namespaces = &context.namespaces;
    let mapi = context.mapi.get(&ObjectRef::new(&name).within(&namespaces.mapi));
    let capi = context.capi.get(&ObjectRef::new(&name).within(&namespaces.capi));
    let infra = capi.as_deref().and_then(|capi| {
        let reference = &capi.spec.infrastructure_ref;
        let (resource, store) = context.infra.get(infra_kind(reference)?)?;
        store.get(&ObjectRef::new_with(&reference.name, resource.clone()).within(&namespaces.capi))
    });
    let pair = MachinePair {
        name,
        mapi,
        capi,
        infra,
    };
    let deleting = pair
        .mapi
        .as_ref()
        .is_some_and(|m| m.metadata.deletion_timestamp.is_some())
        || pair
            .capi
            .as_ref()
            .is_some_and(|c| c.metadata.deletion_timestamp.is_some());
    match (&pair.mapi, &pair.capi) {
        (None, None) => Ok(()),
        // CAPI-only: the CAPI side is the only authority there is.
        (None, Some(_)) if deleting => hooks.deletion(Direction::CapiToMapi, &pair).await,
        (None, Some(capi)) => {
            let mirrored = machine_set_owners(capi).any(|owner| {
                context
                    .machine_sets
                    .get(&ObjectRef::new(owner).within(&namespaces.mapi))
                    .is_some()
            });
            if mirrored {
                hooks.capi_to_mapi(&pair).await
            } else {
                tracing::debug!(name = %pair.name, "CAPI-only Machine of an unmirrored MachineSet; not syncing");
                Ok(())
            }
        }
        (Some(mapi), _) => {
            let authority = mapi
                .status
                .as_ref()
                .and_then(|s| s.sync.authoritative_api.as_ref());
            let direction = match authority {
                Some(AuthoritativeApi::MachineApi) => Direction::MapiToCapi,
                Some(AuthoritativeApi::ClusterApi) => Direction::CapiToMapi,
                Some(AuthoritativeApi::Migrating) => {
                    tracing::info!(name = %pair.name, "authoritativeAPI is Migrating; not syncing");
                    return Ok(());
                }
                Some(AuthoritativeApi::Unknown(value)) if !value.is_empty() => {
                    warn_unknown_authority(context, mapi, value).await;
                    return Ok(());
                }
                _ => {
                    tracing::debug!(name = %pair.name, "status.authoritativeAPI not set; not syncing");
                    return Ok(());
                }
            };
            match (deleting, direction) {
                (true, direction) => hooks.deletion(direction, &pair).await,
                (false, Direction::MapiToCapi) => hooks.mapi_to_capi(&pair).await,
                (false, Direction::CapiToMapi) => hooks.capi_to_mapi(&pair).await,
            }
        }
    }
}

async fn warn_unknown_authority(context: &Context, machine: &mapi::Machine, value: &str) {
    tracing::warn!(name = %machine.name_any(), value, "unknown status.authoritativeAPI; not syncing");
    let event = Event {
        type_: EventType::Warning,
        reason: "UnknownAuthoritativeAPI".into(),
        note: Some(format!(
            "{}/{}: status.authoritativeAPI {value:?} is not MachineAPI, ClusterAPI or Migrating; not syncing",
            context.namespaces.mapi,
            machine.name_any()
        )),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(error) = context.recorder.publish(&event, &machine.object_ref(&())).await {
        tracing::warn!(%error, "failed to publish event");
    }
}
