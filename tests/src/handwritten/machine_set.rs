//! The MachineSet controller, by hand: MAPI MachineSets ⇄ CAPI MachineSets.
//!
//! A name is reconciled when its MAPI MachineSet, its CAPI MachineSet, or the
//! `DevMachineTemplate` or `AWSMachineTemplate` it references (or that names it in its
//! `machine.openshift.io/cluster-api-machineset` label) changes. CAPI-only MachineSets are
//! not synced.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use kube::api::{Api, ApiResource};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use sync_core::api::{AuthoritativeApi, ContractVersionedObjectReference, MACHINESET_LABEL, capi, mapi};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::{Direction, Fetched, HookError, Hooks, INFRA_GROUP, InfraMeta, Namespaces, in_group};

/// The infrastructure template kinds MachineSets may reference: `(kind, plural)`.
pub const INFRA_KINDS: [(&str, &str); 2] = [
    ("DevMachineTemplate", "devmachinetemplates"),
    ("AWSMachineTemplate", "awsmachinetemplates"),
];

/// The controller's name, for logs and Events.
pub const NAME: &str = "machineset-sync-handwritten";

/// What one reconcile of a MachineSet name read.
pub type MachineSetPair = Fetched<mapi::MachineSet, capi::MachineSet>;

/// (template kind, template name) → the CAPI MachineSets referencing it, and back.
#[derive(Default)]
struct Index {
    referrers: HashMap<(usize, String), HashSet<String>>,
    references: HashMap<String, (usize, String)>,
}

impl Index {
    fn update(&mut self, name: &str, set: Option<&capi::MachineSet>) {
        if let Some(old) = self.references.remove(name)
            && let Some(referrers) = self.referrers.get_mut(&old)
        {
            referrers.remove(name);
            if referrers.is_empty() {
                self.referrers.remove(&old);
            }
        }
        let Some(set) = set else { return };
        let reference = &set.spec.template.spec.infrastructure_ref;
        if let Some(kind) = infra_kind(reference) {
            let key = (kind, reference.name.clone());
            self.referrers
                .entry(key.clone())
                .or_default()
                .insert(name.to_owned());
            self.references.insert(name.to_owned(), key);
        }
    }
}

fn infra_kind(reference: &ContractVersionedObjectReference) -> Option<usize> {
    if reference.api_group != INFRA_GROUP {
        return None;
    }
    INFRA_KINDS.iter().position(|(kind, _)| *kind == reference.kind)
}

fn lock(index: &Mutex<Index>) -> MutexGuard<'_, Index> {
    index.lock().unwrap_or_else(PoisonError::into_inner)
}

struct Context {
    namespaces: Namespaces,
    mapi: Store<mapi::MachineSet>,
    capi: Store<capi::MachineSet>,
    infra: Vec<(ApiResource, Store<InfraMeta>)>,
    recorder: Recorder,
}

/// Runs the controller until `shutdown` resolves; reconciles in flight then finish.
pub async fn run<H: Hooks<mapi::MachineSet, capi::MachineSet>>(
    client: Client,
    namespaces: Namespaces,
    concurrency: usize,
    hooks: H,
    shutdown: impl Future<Output = ()>,
) {
    let (triggers, queue) = mpsc::unbounded_channel();
    let index = Arc::new(Mutex::new(Index::default()));
    let mut watches = JoinSet::new();

    let writer = Writer::default();
    let mapi = writer.as_reader();
    let api = Api::<mapi::MachineSet>::namespaced(client.clone(), &namespaces.mapi);
    watches.spawn(super::reflect(
        super::watch(api),
        writer,
        triggers.clone(),
        |set: &mapi::MachineSet, _, names: &mut Vec<String>| names.push(set.name_any()),
    ));

    let writer = Writer::default();
    let capi = writer.as_reader();
    let api = Api::<capi::MachineSet>::namespaced(client.clone(), &namespaces.capi);
    let capi_index = index.clone();
    watches.spawn(super::reflect(
        super::watch(api),
        writer,
        triggers.clone(),
        move |set: &capi::MachineSet, gone, names: &mut Vec<String>| {
            let name = set.name_any();
            lock(&capi_index).update(&name, (!gone).then_some(set));
            names.push(name);
        },
    ));

    // Templates (metadata only): the MachineSet their label names, an owning CAPI
    // MachineSet, or the CAPI MachineSets referencing them.
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
                        .filter(|o| o.kind == "MachineSet" && in_group(&o.api_version, capi::GROUP))
                        .map(|o| o.name.clone()),
                );
                if let Some(set) = object.labels().get(MACHINESET_LABEL).filter(|s| !s.is_empty()) {
                    names.push(set.clone());
                }
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
        infra,
        recorder,
    });
    let hooks = Arc::new(hooks);
    let synced = async {
        let (a, b) = tokio::join!(context.mapi.wait_until_ready(), context.capi.wait_until_ready());
        a.is_ok() && b.is_ok()
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

async fn reconcile<H: Hooks<mapi::MachineSet, capi::MachineSet>>(
    context: &Context,
    hooks: &H,
    name: String,
) -> Result<(), HookError> {
    let span = tracing::info_span!("reconcile", controller = NAME, name = %name);
    decide(context, hooks, name).instrument(span).await
}

/// The dual fetch, then `docs/design.md` §3's decision table (CAPI-only MachineSets are ignored).
async fn decide<H: Hooks<mapi::MachineSet, capi::MachineSet>>(
    context: &Context,
    hooks: &H,
    name: String,
) -> Result<(), HookError> {
    let namespaces = &context.namespaces;
    let mapi = context.mapi.get(&ObjectRef::new(&name).within(&namespaces.mapi));
    let capi = context.capi.get(&ObjectRef::new(&name).within(&namespaces.capi));
    let infra = capi.as_deref().and_then(|capi| {
        let reference = &capi.spec.template.spec.infrastructure_ref;
        let (resource, store) = context.infra.get(infra_kind(reference)?)?;
        store.get(&ObjectRef::new_with(&reference.name, resource.clone()).within(&namespaces.capi))
    });
    let pair = MachineSetPair {
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
    let Some(mapi) = &pair.mapi else {
        return match &pair.capi {
            Some(_) if deleting => hooks.deletion(Direction::CapiToMapi, &pair).await,
            _ => Ok(()),
        };
    };
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
        _ => return Ok(()),
    };
    match (deleting, direction) {
        (true, direction) => hooks.deletion(direction, &pair).await,
        (false, Direction::MapiToCapi) => hooks.mapi_to_capi(&pair).await,
        (false, Direction::CapiToMapi) => hooks.capi_to_mapi(&pair).await,
    }
}

async fn warn_unknown_authority(context: &Context, set: &mapi::MachineSet, value: &str) {
    tracing::warn!(name = %set.name_any(), value, "unknown status.authoritativeAPI; not syncing");
    let event = Event {
        type_: EventType::Warning,
        reason: "UnknownAuthoritativeAPI".into(),
        note: Some(format!(
            "{}/{}: status.authoritativeAPI {value:?} is not MachineAPI, ClusterAPI or Migrating; not syncing",
            context.namespaces.mapi,
            set.name_any()
        )),
        action: "Reconcile".into(),
        secondary: None,
    };
    if let Err(error) = context.recorder.publish(&event, &set.object_ref(&())).await {
        tracing::warn!(%error, "failed to publish event");
    }
}
