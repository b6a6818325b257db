//! The Machine pair: MAPI Machines ⇄ CAPI Machines, and their InfraMachines.
//!
//! | the MAPI Machine says | the hooks |
//! |---|---|
//! | `MachineAPI` | sync finalizer on it; owner check; convert; CAPI Machine applied **paused**, owned by the same-name CAPI MachineSet or else the Cluster; InfraMachine applied, owned by the CAPI Machine — re-created when its spec changed; status copied once `synchronizedGeneration == generation`; `Synchronized=True` |
//! | `ClusterAPI`, no CAPI Machine | as above but **unpaused**: the CAPI Machine is created from the MAPI one (upstream #288) |
//! | `ClusterAPI` (or a CAPI-only Machine of a mirrored MachineSet) | sync finalizer on the CAPI Machine and InfraMachine; convert; MAPI Machine applied over the version read (its own authority kept; changed since → 409, retried), a new one with `authoritativeAPI: ClusterAPI`, owned by the mirrored MAPI MachineSet; status copied; `Synchronized=True` |
//! | owned by a MAPI MachineSet whose CAPI mirror does not exist yet | `Synchronized=Unknown` `WaitingForCAPIMachineSet`, nothing mirrored; reconciled when the MachineSet sync's watch reports the set ([`beside_machine_sets`]), else after 60 s (5 s without a MachineSet sync in the process); deleted meanwhile, it waits no more |
//! | a conversion error, a control-plane or foreign owner | `Synchronized=False`, Warning Event, no retry until a change |
//! | either side deleted | the other side deleted; the mirror's finalizers stripped only once the authoritative side's provider finalizer is gone; the authoritative side's sync finalizer last |
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::{Resource, ResourceExt};
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_core::hooks::{Action, Direction, HookResult, Step, Stop, SyncHooks, SyncObjects, finish};
use sync_core::toolkit::status::{self, Synchronized};
use sync_core::toolkit::{Applied, Part, SYNC_FINALIZER, apply, apply_over, apply_typed, finalizers, pause};
use sync_core::{SyncContext, SyncController};
use sync_macros::sync_controller;

use crate::machine_set::MachineSetSync;
pub use crate::sync::MACHINE_CONTROLLER as CONTROLLER;
use crate::sync::hooks::{Failure, add_finalizer, apply_capi_mirror, converted, refuse, set_paused};
use crate::sync::infra;
use crate::sync::owners::{self, MirroredSets, OwnerError, SetWaits, Wake};
use crate::sync::takeover::{self, SYNC_MANAGERS};
use crate::sync::teardown::{delete, delete_pair, holds};
use crate::sync::{CAPI_MACHINE_FINALIZER, INFRA_FINALIZER_SUFFIX, MAPI_MACHINE_FINALIZER, PlatformHooks};

/// Mirrors Machine API Machines and Cluster API Machines.
#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    infra_ref = spec.infrastructure_ref,
    capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
)]
pub struct MachineSync;

/// The Machine hooks of one platform: the platform's hooks, which serve both pairs.
pub type MachineHooks = PlatformHooks;

/// Links a Machine sync to the MachineSet sync running beside it, as the operator's pairs
/// are linked: Machines read their CAPI MachineSets from the MachineSet sync's cache, a
/// Machine waiting for its set is reconciled when that sync's CAPI watch reports it, and
/// waits no more once deleted.
/// Give the returned sets to the Machine hooks ([`PlatformHooks::with_capi_sets`]).
pub fn beside_machine_sets(
    machines: SyncController<MachineSync>,
    sets: SyncController<MachineSetSync>,
) -> (
    SyncController<MachineSync>,
    SyncController<MachineSetSync>,
    MirroredSets,
) {
    let waits = SetWaits::default();
    let mirrored = waits.mirrored(sets.caches().capi);
    (waits.machines(machines), waits.sets(sets), mirrored)
}

/// How long to wait before re-creating an InfraMachine deleted for a spec change.
const RECREATE_DELAY: Duration = Duration::from_secs(1);
/// How long to wait for the CAPI MachineSet that will own a Machine's mirror, when no
/// MachineSet sync in this process reports it.
const OWNER_DELAY: Duration = Duration::from_secs(5);
/// The backstop of a Machine the MachineSet sync's watch wakes when its set appears
/// ([`owners::CapiSets::wait`]).
const OWNER_RECHECK: Duration = Duration::from_secs(60);

/// A failed MAPI → CAPI sync.
const TO_CAPI: Failure<'static> = Failure {
    controller: CONTROLLER,
    reason: "FailedToConvertMAPIMachineToCAPI",
};
/// A failed CAPI → MAPI sync.
const TO_MAPI: Failure<'static> = Failure {
    controller: CONTROLLER,
    reason: "FailedToConvertCAPIMachineToMAPI",
};
/// A CAPI object the sync did not create.
const TAKEOVER: Failure<'static> = Failure {
    controller: CONTROLLER,
    reason: takeover::REASON,
};

type Ctx = SyncContext<MachineSync>;
type Objects = SyncObjects<MachineSync>;

impl SyncHooks<MachineSync> for PlatformHooks {
    async fn reconcile_mapi_to_capi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        let Some(mapi) = objects.mapi.as_deref() else {
            return Ok(Action::await_change());
        };
        finish(mirror_to_capi(self, mapi, objects, ctx, true).await)
    }

    async fn reconcile_capi_to_mapi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        match (objects.mapi.as_deref(), objects.capi.as_deref()) {
            (Some(mapi), None) => finish(mirror_to_capi(self, mapi, objects, ctx, false).await),
            (mapi, Some(capi)) => finish(mirror_to_mapi(self, mapi, capi, objects, ctx).await),
            (None, None) => Ok(Action::await_change()),
        }
    }

    async fn reconcile_deletion(&self, direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
        teardown(direction, objects, ctx).await
    }
}

/// MAPI is the source (`paused`: the mirror must not act while MAPI drives).
async fn mirror_to_capi(
    hooks: &PlatformHooks,
    mapi: &mapi::Machine,
    objects: &Objects,
    ctx: &Ctx,
    paused: bool,
) -> Step<Action> {
    if let Some(message) = takeover::foreign_capi(mapi, objects.capi.as_deref(), SYNC_MANAGERS) {
        return Err(refuse(ctx, objects, TAKEOVER, message).await);
    }
    let apis = Apis::new(ctx, hooks.capi_sets.clone());
    if finalizers::ensure(&apis.mapi, mapi, SYNC_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    let owner = capi_owner(hooks, mapi, &apis, objects, ctx).await?;
    let conversion = hooks.platform.machine_to_capi(mapi);
    let converted = converted(ctx, objects, TO_CAPI, mapi.object_ref(&()), conversion).await?;
    let (mut machine, infra) = (converted.machine, converted.infra);
    let machine_status = machine.status.take();
    let desired = desired_capi_machine(machine, owner, paused, &ctx.namespaces.capi);
    let machine = apply_capi_mirror(ctx, &apis.capi, CONTROLLER, mapi, objects, desired).await?;
    let infra = apply_infra_machine(mapi, infra, &machine, ctx, &apis, paused).await?;
    if status::synchronized_generation(mapi) == mapi.metadata.generation {
        copy_status_to_capi(&machine, machine_status, &infra, &apis).await?;
    }
    let generation = mapi.metadata.generation.unwrap_or_default();
    let done = Synchronized::done(generation, AuthoritativeApi::MachineApi);
    status::write(&apis.mapi, CONTROLLER, mapi, &done).await?;
    Ok(Action::await_change())
}

/// The CAPI Machine's owner ([`owners::capi_machine_owner`]); an owner that does not
/// convert is reported, a CAPI MachineSet not mirrored yet is waited for.
async fn capi_owner(
    hooks: &PlatformHooks,
    mapi: &mapi::Machine,
    apis: &Apis,
    objects: &Objects,
    ctx: &Ctx,
) -> Step<Option<OwnerReference>> {
    match owners::capi_owner_of_mapi_machine(mapi, &apis.capi_sets, &hooks.cluster, ctx).await {
        Ok(owner) => Ok(owner),
        Err(OwnerError::Unsupported(unsupported)) => Err(refuse(ctx, objects, TO_CAPI, unsupported).await),
        Err(waiting @ OwnerError::Waiting { wake, .. }) => {
            let progressing = Synchronized::progressing("WaitingForCAPIMachineSet", waiting.to_string());
            status::write(&apis.mapi, CONTROLLER, mapi, &progressing).await?;
            let delay = match wake {
                Wake::OnEvent => OWNER_RECHECK,
                Wake::Poll => OWNER_DELAY,
            };
            Err(Stop::Done(Action::requeue(delay)))
        }
        Err(OwnerError::Api(error)) => Err(error.into()),
    }
}

/// The CAPI Machine as the sync writes it: in the CAPI namespace, owned by `owner`,
/// paused while MAPI drives, with the sync finalizer.
fn desired_capi_machine(
    mut machine: capi::Machine,
    owner: Option<OwnerReference>,
    paused: bool,
    namespace: &str,
) -> capi::Machine {
    machine.metadata.namespace = Some(namespace.to_owned());
    machine.metadata.owner_references = owner.map(|o| vec![o]);
    set_paused(&mut machine.metadata.annotations, paused);
    add_finalizer(&mut machine.metadata.finalizers, SYNC_FINALIZER);
    machine
}

/// The InfraMachine as applied, with what copying its status needs.
struct InfraMachine {
    api: Api<DynamicObject>,
    resource: ApiResource,
    desired: DynamicObject,
    live: Option<Arc<DynamicObject>>,
}

/// Applies the InfraMachine, owned by `machine`; one whose spec changed is deleted and
/// re-created (InfraMachine specs are immutable in practice).
async fn apply_infra_machine(
    mapi: &mapi::Machine,
    mut infra: DynamicObject,
    machine: &capi::Machine,
    ctx: &Ctx,
    apis: &Apis,
    paused: bool,
) -> Step<InfraMachine> {
    let (api, resource) = infra::api(ctx, &infra).await?;
    infra.metadata.namespace = Some(ctx.namespaces.capi.clone());
    infra.metadata.owner_references = Some(vec![owners::controller_ref(machine)]);
    set_paused(&mut infra.metadata.annotations, paused);
    add_finalizer(&mut infra.metadata.finalizers, SYNC_FINALIZER);
    let live = infra::live(ctx, &infra).await?;
    if let Some(live) = &live {
        if live.meta().deletion_timestamp.is_some() {
            return Err(Stop::Done(Action::requeue(RECREATE_DELAY)));
        }
        if !contains(&live.data["spec"], &infra.data["spec"]) {
            finalizers::release_matching(&api, live.as_ref(), |_| true).await?;
            delete(&api, live.as_ref(), "its spec changed; re-creating it").await?;
            let message = format!("{} {} changed; re-creating it", resource.kind, live.name_any());
            let progressing = Synchronized::progressing("ProgressingToCreateCAPIInfraMachine", message);
            status::write(&apis.mapi, CONTROLLER, mapi, &progressing).await?;
            return Err(Stop::Done(Action::requeue(RECREATE_DELAY)));
        }
    }
    let live = match apply_typed(&api, &resource, CONTROLLER, live.as_deref(), &infra, Part::Object).await? {
        Applied::Written(written) => Some(Arc::new(*written)),
        Applied::Unchanged => live,
    };
    Ok(InfraMachine {
        api,
        resource,
        desired: infra,
        live,
    })
}

/// Copies the converted statuses to the CAPI Machine and its InfraMachine.
async fn copy_status_to_capi(
    machine: &capi::Machine,
    machine_status: Option<capi::MachineStatus>,
    infra: &InfraMachine,
    apis: &Apis,
) -> Step<()> {
    let status = machine_status.map(|mut status| {
        status.observed_generation = machine.metadata.generation;
        status
    });
    let copy = capi::Machine {
        status,
        ..machine.clone()
    };
    apply(&apis.capi, CONTROLLER, Some(machine), &copy, Part::Status).await?;
    if infra.desired.data.get("status").is_some() {
        let live = infra.live.as_deref();
        apply_typed(
            &infra.api,
            &infra.resource,
            CONTROLLER,
            live,
            &infra.desired,
            Part::Status,
        )
        .await?;
    }
    Ok(())
}

/// CAPI is the source; `mapi: None` is a CAPI-only Machine of a mirrored MachineSet.
async fn mirror_to_mapi(
    hooks: &PlatformHooks,
    mapi: Option<&mapi::Machine>,
    capi: &capi::Machine,
    objects: &Objects,
    ctx: &Ctx,
) -> Step<Action> {
    let apis = Apis::new(ctx, None);
    if finalizers::ensure(&apis.capi, capi, SYNC_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    let infra = infra_machine_or_wait(mapi, objects, ctx, &apis).await?;
    let (infra_api, _) = infra::api(ctx, &infra).await?;
    if finalizers::ensure(&infra_api, infra.as_ref(), SYNC_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    if let Err(unsupported) = owners::check_capi_machine_owners(capi.owner_references()) {
        return Err(refuse(ctx, objects, TO_MAPI, unsupported).await);
    }
    let on = mapi.map_or_else(|| capi.object_ref(&()), |m| m.object_ref(&()));
    let conversion = hooks.platform.machine_to_mapi(capi, &infra);
    let converted = converted(ctx, objects, TO_MAPI, on, conversion).await?;
    let owner =
        owners::mapi_owner_of_capi_machine(capi, ctx.caches.owner_mirrors.as_ref(), &ctx.namespaces.mapi);
    let machine = desired_mapi_machine(converted, mapi, owner, &ctx.namespaces.mapi);
    // Over exactly the MAPI Machine read: it copies that object's authority, which a
    // stale cache must never write back over a newer request.
    let applied = match mapi {
        Some(live) => apply_over(&apis.mapi, CONTROLLER, live, &machine, Part::Object).await?,
        None => apply(&apis.mapi, CONTROLLER, None, &machine, Part::Object).await?,
    };
    let written = match applied {
        Applied::Written(written) => *written,
        Applied::Unchanged => mapi.cloned().unwrap_or_else(|| machine.clone()),
    };
    if mapi.is_none() {
        write_cluster_api_authority(&written, &apis).await?;
        return Ok(Action::await_change());
    }
    if status::synchronized_generation(&written) == capi.metadata.generation {
        let mut copy = written.clone();
        copy.status = machine.status.map(status_without_sync_fields);
        apply(&apis.mapi, CONTROLLER, Some(&written), &copy, Part::Status).await?;
    }
    let generation = capi.metadata.generation.unwrap_or_default();
    let done = Synchronized::done(generation, AuthoritativeApi::ClusterApi);
    status::write(&apis.mapi, CONTROLLER, &written, &done).await?;
    Ok(Action::await_change())
}

/// The CAPI Machine's InfraMachine; until it exists, the MAPI Machine (if any) says what
/// the sync waits for.
async fn infra_machine_or_wait(
    mapi: Option<&mapi::Machine>,
    objects: &Objects,
    ctx: &Ctx,
    apis: &Apis,
) -> Step<Arc<DynamicObject>> {
    if let Some(infra) = ctx.infra_object(objects).await? {
        return Ok(infra);
    }
    if let Some(mapi) = mapi {
        let awaited = objects.infra_ref().map(ToString::to_string).unwrap_or_default();
        let progressing =
            Synchronized::progressing("WaitingForCAPIInfraMachine", format!("waiting for {awaited}"));
        status::write(&apis.mapi, CONTROLLER, mapi, &progressing).await?;
    }
    Err(Stop::Done(Action::await_change()))
}

/// The MAPI Machine as the sync writes it: the live one keeps its own authority, a new
/// mirror is driven by Cluster API; owned by the mirrored MAPI MachineSet; never paused;
/// with the sync finalizer.
fn desired_mapi_machine(
    mut machine: mapi::Machine,
    live: Option<&mapi::Machine>,
    owner: Option<Vec<OwnerReference>>,
    namespace: &str,
) -> mapi::Machine {
    machine.metadata.namespace = Some(namespace.to_owned());
    machine.spec.authoritative_api = Some(
        live.and_then(|m| m.spec.authoritative_api.clone())
            .unwrap_or(AuthoritativeApi::ClusterApi),
    );
    machine.metadata.owner_references = owner;
    if let Some(annotations) = machine.metadata.annotations.as_mut() {
        annotations.remove(pause::PAUSED_ANNOTATION);
    }
    add_finalizer(&mut machine.metadata.finalizers, SYNC_FINALIZER);
    machine
}

/// A new MAPI mirror's status says Cluster API drives it (under a field manager of its own).
async fn write_cluster_api_authority(written: &mapi::Machine, apis: &Apis) -> Step<()> {
    let authority = mapi::Machine {
        status: Some(mapi::MachineStatus {
            sync: sync_core::api::SyncStatus {
                authoritative_api: Some(AuthoritativeApi::ClusterApi),
                ..Default::default()
            },
            ..Default::default()
        }),
        ..written.clone()
    };
    let manager = format!("{CONTROLLER}-AuthoritativeAPI");
    apply(&apis.mapi, &manager, None, &authority, Part::Status).await?;
    Ok(())
}

/// Deleting either side deletes the other; the mirror's finalizers go only once the
/// authoritative side's controller has removed its own (it deletes the instance).
async fn teardown(direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
    let apis = Apis::new(ctx, None);
    let infra = ctx.infra_object(objects).await?;
    let infra = match infra.as_deref() {
        Some(infra) => Some((infra, infra::api(ctx, infra).await?.0)),
        None => None,
    };
    delete_pair(ctx, direction, objects, &apis.mapi, &apis.capi).await?;
    let (mapi, capi) = (objects.mapi.as_deref(), objects.capi.as_deref());
    match direction {
        Direction::MapiToCapi => release_capi_mirror(mapi, capi, infra, &apis).await,
        Direction::CapiToMapi => release_mapi_mirror(mapi, capi, infra, &apis).await,
    }
}

/// MAPI drove: once the MAPI controller has deleted the instance, the paused CAPI
/// controllers will not finish, so the sync deletes the InfraMachine and strips the
/// mirror's finalizers, then its own.
async fn release_capi_mirror(
    mapi: Option<&mapi::Machine>,
    capi: Option<&capi::Machine>,
    infra: Option<(&DynamicObject, Api<DynamicObject>)>,
    apis: &Apis,
) -> HookResult {
    if mapi.is_some_and(|m| holds(m, |f| f == MAPI_MACHINE_FINALIZER)) {
        return Ok(Action::await_change());
    }
    if let Some((infra, api)) = infra {
        delete(&api, infra, "its Machine is deleted").await?;
        finalizers::release_matching(&api, infra, released_from_infra_mirror).await?;
    }
    if let Some(capi) = capi {
        finalizers::release_matching(&apis.capi, capi, released_from_capi_mirror).await?;
    }
    if let Some(mapi) = mapi {
        finalizers::release(&apis.mapi, mapi, SYNC_FINALIZER).await?;
    }
    Ok(Action::await_change())
}

/// CAPI drove: the CAPI controller deletes the InfraMachine before its Machine; once the
/// CAPI Machine's finalizer is gone, the MAPI mirror's finalizers go, then the sync's own.
async fn release_mapi_mirror(
    mapi: Option<&mapi::Machine>,
    capi: Option<&capi::Machine>,
    infra: Option<(&DynamicObject, Api<DynamicObject>)>,
    apis: &Apis,
) -> HookResult {
    if let Some((infra, api)) = infra {
        finalizers::release(&api, infra, SYNC_FINALIZER).await?;
    }
    if capi.is_some_and(|c| holds(c, |f| f == CAPI_MACHINE_FINALIZER)) {
        return Ok(Action::await_change());
    }
    if let Some(mapi) = mapi {
        finalizers::release_matching(&apis.mapi, mapi, released_from_mapi_mirror).await?;
    }
    if let Some(capi) = capi {
        finalizers::release(&apis.capi, capi, SYNC_FINALIZER).await?;
    }
    Ok(Action::await_change())
}

/// The finalizers stripped from a CAPI mirror's InfraMachine: the sync's and its paused
/// provider's.
fn released_from_infra_mirror(finalizer: &str) -> bool {
    finalizer == SYNC_FINALIZER || finalizer.ends_with(INFRA_FINALIZER_SUFFIX)
}

/// The finalizers stripped from a CAPI mirror: the sync's and the paused CAPI machine
/// controller's.
fn released_from_capi_mirror(finalizer: &str) -> bool {
    finalizer == SYNC_FINALIZER || finalizer == CAPI_MACHINE_FINALIZER
}

/// The finalizers stripped from a MAPI mirror: the sync's and the MAPI machine
/// controller's (it does not act on a Machine Cluster API drives).
fn released_from_mapi_mirror(finalizer: &str) -> bool {
    finalizer == SYNC_FINALIZER || finalizer == MAPI_MACHINE_FINALIZER
}

/// The namespaced APIs a Machine reconcile writes, and where it reads owners.
struct Apis {
    mapi: Api<mapi::Machine>,
    capi: Api<capi::Machine>,
    capi_sets: owners::CapiSets,
}

impl Apis {
    fn new(ctx: &Ctx, capi_sets: Option<MirroredSets>) -> Self {
        Self {
            mapi: Api::namespaced(ctx.client.clone(), &ctx.namespaces.mapi),
            capi: Api::namespaced(ctx.client.clone(), &ctx.namespaces.capi),
            capi_sets: owners::CapiSets {
                api: Api::namespaced(ctx.client.clone(), &ctx.namespaces.capi),
                namespace: ctx.namespaces.capi.clone(),
                mirrored: capi_sets,
            },
        }
    }
}

/// A MAPI status as the main field manager writes it: authority, generation and the
/// Synchronized condition belong to other owners.
fn status_without_sync_fields(mut status: mapi::MachineStatus) -> mapi::MachineStatus {
    status.sync.authoritative_api = None;
    status.sync.synchronized_api = None;
    status.sync.synchronized_generation = None;
    if let Some(conditions) = status.sync.conditions.as_mut() {
        conditions.retain(|c| c.type_ != status::SYNCHRONIZED);
    }
    status
}

/// Whether every field of `part` is in `whole` with the same value (providers add fields
/// of their own, e.g. `spec.providerID`).
pub(crate) fn contains(whole: &serde_json::Value, part: &serde_json::Value) -> bool {
    match (whole, part) {
        (serde_json::Value::Object(whole), serde_json::Value::Object(part)) => part
            .iter()
            .all(|(k, v)| v.is_null() || whole.get(k).is_some_and(|w| contains(w, v))),
        (whole, part) => whole == part,
    }
}

/// One test per row of the table at the top (named after it), on the pure parts of the
/// hooks; the API round trips are proven by the e2e suites (`tests/tests/sync.rs`).
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;
    use crate::sync::testing;

    const CAPI_NS: &str = "openshift-cluster-api";
    const MAPI_NS: &str = "openshift-machine-api";

    fn owner(kind: &str, name: &str) -> OwnerReference {
        OwnerReference {
            api_version: "cluster.x-k8s.io/v1beta2".into(),
            kind: kind.into(),
            name: name.into(),
            ..OwnerReference::default()
        }
    }

    fn paused(annotations: Option<&BTreeMap<String, String>>) -> bool {
        annotations.is_some_and(|a| a.contains_key(pause::PAUSED_ANNOTATION))
    }

    #[tokio::test]
    async fn a_conversion_error_reports_synchronized_false_with_a_warning_and_waits_for_a_change() {
        let mut machine = mapi::Machine::new("worker-1", Default::default());
        machine.metadata.namespace = Some(MAPI_NS.into());
        machine.metadata.uid = Some("uid-1".into());
        let (client, requests) = testing::recording_client(json!(machine));
        let namespaces = sync_core::Namespaces {
            mapi: MAPI_NS.into(),
            capi: CAPI_NS.into(),
        };
        let ctx = testing::context::<MachineSync>(client, namespaces);
        let objects = SyncObjects::<MachineSync> {
            name: "worker-1".into(),
            mapi: Some(Arc::new(machine.clone())),
            capi: None,
            infra_ref: None,
            infra: None,
        };
        let path = conversion::FieldPath::new("spec.providerSpec.value.kind");
        let unsupported = conversion::FieldError::unsupported(path, "DevMachineProviderSpec", "only AWS");
        let failed: conversion::ConversionResult<()> = Err(conversion::ConversionErrors {
            errors: vec![unsupported],
            warnings: Vec::new(),
        });
        let step = converted(&ctx, &objects, TO_CAPI, machine.object_ref(&()), failed).await;
        // Not retried: the reconcile ends awaiting a change.
        assert!(matches!(step, Err(Stop::Done(action)) if action.requeue_after().is_none()));

        let sent = requests.lock().map(|r| r.clone()).unwrap_or_default();
        let event = sent
            .iter()
            .find(|s| s.method == "POST" && s.uri.contains("/events"));
        let event = event.map(|e| &e.body).cloned().unwrap_or_default();
        assert_eq!(event["type"], "Warning", "{sent:?}");
        assert_eq!(event["reason"], "SynchronizationError");
        assert_eq!(event["involvedObject"]["name"], "worker-1");
        let note = event["message"].as_str().unwrap_or_default();
        assert!(
            note.starts_with("FailedToConvertMAPIMachineToCAPI: spec.providerSpec.value.kind"),
            "{note}"
        );

        let status = sent.iter().find(|s| s.method == "PATCH");
        let status = status.cloned().map(|s| (s.uri, s.body)).unwrap_or_default();
        assert!(
            status
                .0
                .contains("/namespaces/openshift-machine-api/machines/worker-1/status"),
            "{}",
            status.0
        );
        assert!(
            status.0.contains("fieldManager=MachineSyncController"),
            "{}",
            status.0
        );
        let condition = &status.1["status"]["conditions"][0];
        assert_eq!(condition["type"], "Synchronized");
        assert_eq!(condition["status"], "False");
        assert_eq!(condition["reason"], "FailedToConvertMAPIMachineToCAPI");
        assert_eq!(sent.len(), 2, "nothing else is written: {sent:?}");
    }

    #[test]
    fn machine_api_mirror_is_paused_owned_and_holds_the_sync_finalizer() {
        let converted = capi::Machine::new("worker-1", Default::default());
        let set = owner("MachineSet", "workers");
        let machine = desired_capi_machine(converted, Some(set.clone()), true, CAPI_NS);
        assert_eq!(machine.metadata.namespace.as_deref(), Some(CAPI_NS));
        assert_eq!(machine.metadata.owner_references, Some(vec![set]));
        assert!(paused(machine.metadata.annotations.as_ref()));
        assert_eq!(machine.metadata.finalizers, Some(vec![SYNC_FINALIZER.to_owned()]));
    }

    #[test]
    fn cluster_api_without_capi_machine_creates_it_unpaused() {
        let mut converted = capi::Machine::new("worker-1", Default::default());
        converted
            .annotations_mut()
            .insert(pause::PAUSED_ANNOTATION.into(), String::new());
        let machine = desired_capi_machine(converted, None, false, CAPI_NS);
        assert!(!paused(machine.metadata.annotations.as_ref()));
        assert_eq!(machine.metadata.owner_references, None);
    }

    #[test]
    fn cluster_api_mirror_keeps_its_own_authority_and_a_new_one_is_driven_by_cluster_api() {
        let converted = || {
            let mut machine = mapi::Machine::new("worker-1", Default::default());
            machine.spec.authoritative_api = Some(AuthoritativeApi::MachineApi);
            machine
                .annotations_mut()
                .insert(pause::PAUSED_ANNOTATION.into(), String::new());
            machine
        };
        let mut live = mapi::Machine::new("worker-1", Default::default());
        live.spec.authoritative_api = Some(AuthoritativeApi::MachineApi);
        let kept = desired_mapi_machine(converted(), Some(&live), None, MAPI_NS);
        assert_eq!(kept.spec.authoritative_api, Some(AuthoritativeApi::MachineApi));
        assert_eq!(kept.metadata.namespace.as_deref(), Some(MAPI_NS));
        assert!(!paused(kept.metadata.annotations.as_ref()));
        assert_eq!(kept.metadata.finalizers, Some(vec![SYNC_FINALIZER.to_owned()]));

        let set = owner("MachineSet", "workers");
        let new = desired_mapi_machine(converted(), None, Some(vec![set.clone()]), MAPI_NS);
        assert_eq!(new.spec.authoritative_api, Some(AuthoritativeApi::ClusterApi));
        assert_eq!(new.metadata.owner_references, Some(vec![set]));
    }

    #[test]
    fn cluster_api_status_copy_leaves_the_sync_fields_to_their_owners() {
        let status = mapi::MachineStatus {
            sync: sync_core::api::SyncStatus {
                authoritative_api: Some(AuthoritativeApi::ClusterApi),
                synchronized_api: Some(AuthoritativeApi::ClusterApi),
                synchronized_generation: Some(3),
                conditions: Some(vec![
                    mapi::Condition {
                        type_: status::SYNCHRONIZED.into(),
                        status: "True".into(),
                        ..Default::default()
                    },
                    mapi::Condition {
                        type_: "Drainable".into(),
                        status: "True".into(),
                        ..Default::default()
                    },
                ]),
            },
            ..Default::default()
        };
        let copied = status_without_sync_fields(status);
        assert_eq!(copied.sync.authoritative_api, None);
        assert_eq!(copied.sync.synchronized_api, None);
        assert_eq!(copied.sync.synchronized_generation, None);
        let kept: Vec<_> = copied
            .sync
            .conditions
            .iter()
            .flatten()
            .map(|c| c.type_.as_str())
            .collect();
        assert_eq!(kept, ["Drainable"]);
    }

    #[test]
    fn machine_api_infra_machine_is_recreated_only_when_its_spec_changed() {
        let desired = json!({ "instanceType": "m6i.large", "ami": { "id": "ami-1" } });
        let provider_added =
            json!({ "instanceType": "m6i.large", "ami": { "id": "ami-1" }, "providerID": "aws:///i-1" });
        assert!(
            contains(&provider_added, &desired),
            "fields a provider adds are not a change"
        );
        let changed = json!({ "instanceType": "m6i.xlarge", "ami": { "id": "ami-1" } });
        assert!(!contains(&changed, &desired));
        assert!(
            contains(&changed, &json!({ "ignored": null })),
            "null desired fields are not compared"
        );
    }

    #[test]
    fn either_side_deleted_strips_only_the_mirrors_sync_and_controller_finalizers() {
        let foreign = "example.com/keep";
        assert!(
            released_from_capi_mirror(SYNC_FINALIZER) && released_from_capi_mirror(CAPI_MACHINE_FINALIZER)
        );
        assert!(!released_from_capi_mirror(foreign) && !released_from_capi_mirror(MAPI_MACHINE_FINALIZER));
        assert!(released_from_infra_mirror(
            "awsmachine.infrastructure.cluster.x-k8s.io"
        ));
        assert!(released_from_infra_mirror(SYNC_FINALIZER) && !released_from_infra_mirror(foreign));
        assert!(
            released_from_mapi_mirror(SYNC_FINALIZER) && released_from_mapi_mirror(MAPI_MACHINE_FINALIZER)
        );
        assert!(!released_from_mapi_mirror(foreign) && !released_from_mapi_mirror(CAPI_MACHINE_FINALIZER));
    }
}
