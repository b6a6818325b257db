//! The Machine pair: MAPI Machines ⇄ CAPI Machines, and their InfraMachines.
//!
//! | the MAPI Machine says | the hooks |
//! |---|---|
//! | `MachineAPI` | sync finalizer on it; owner check; convert; CAPI Machine applied **paused**, owned by the same-name CAPI MachineSet or else the Cluster; InfraMachine applied, owned by the CAPI Machine — re-created when its spec changed; status copied once `synchronizedGeneration == generation`; `Synchronized=True` |
//! | `ClusterAPI`, no CAPI Machine | as above but **unpaused**: the CAPI Machine is created from the MAPI one (upstream #288) |
//! | `ClusterAPI` (or a CAPI-only Machine of a mirrored MachineSet) | sync finalizer on the CAPI Machine and InfraMachine; convert; MAPI Machine applied over the version read (its own authority kept; changed since → 409, retried), a new one with `authoritativeAPI: ClusterAPI`, owned by the mirrored MAPI MachineSet; status copied; `Synchronized=True` |
//! | a conversion error, a control-plane or foreign owner | `Synchronized=False`, Warning Event, no retry until a change |
//! | either side deleted | the other side deleted; the mirror's finalizers stripped only once the authoritative side's provider finalizer is gone; the authoritative side's sync finalizer last |
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::Api;
use kube::{Resource, ResourceExt};
use sync_core::SyncContext;
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_core::hooks::{Action, Direction, HookResult, SyncHooks, SyncObjects};
use sync_core::store::Store;
use sync_core::toolkit::status::{self, Synchronized};
use sync_core::toolkit::{
    Applied, Part, SYNC_FINALIZER, apply, apply_over, apply_typed, finalizers, pause, report,
};
use sync_macros::sync_controller;

use crate::sync::takeover::{self, SYNC_MANAGERS};
use crate::sync::teardown::{delete, delete_pair, holds};
use crate::sync::{
    CAPI_MACHINE_FINALIZER, Cluster, INFRA_FINALIZER_SUFFIX, MAPI_MACHINE_FINALIZER, Platform, owners,
};
use crate::sync::{drift, infra};

/// Mirrors Machine API Machines and Cluster API Machines.
#[sync_controller(
    mapi = mapi::Machine,
    capi = capi::Machine,
    infra_ref = spec.infrastructure_ref,
    capi_only = mirror_if_owner_mirrored(mapi::MachineSet),
)]
pub struct MachineSync;

/// The field manager of every write, and the prefix of the condition's.
pub const CONTROLLER: &str = "MachineSyncController";

/// How long to wait before re-creating an InfraMachine deleted for a spec change.
const RECREATE_DELAY: Duration = Duration::from_secs(1);

/// The Machine hooks of one platform.
#[derive(Clone)]
pub struct MachineHooks {
    /// The platform's conversion.
    pub platform: Arc<dyn Platform>,
    /// The cluster.
    pub cluster: Arc<Cluster>,
    /// The MachineSet controller's CAPI cache, to read Machines' owners from (`None`: read
    /// them from the API server); see [`MachineHooks::with_capi_sets`].
    pub capi_sets: Option<Store<capi::MachineSet>>,
}

type Ctx = SyncContext<MachineSync>;
type Objects = SyncObjects<MachineSync>;

impl SyncHooks<MachineSync> for MachineHooks {
    async fn reconcile_mapi_to_capi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        let Some(mapi) = objects.mapi.as_deref() else {
            return Ok(Action::await_change());
        };
        self.mirror_to_capi(mapi, objects, ctx, true).await
    }

    async fn reconcile_capi_to_mapi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        match (objects.mapi.as_deref(), objects.capi.as_deref()) {
            (Some(mapi), None) => self.mirror_to_capi(mapi, objects, ctx, false).await,
            (mapi, Some(capi)) => self.mirror_to_mapi(mapi, capi, objects, ctx).await,
            (None, None) => Ok(Action::await_change()),
        }
    }

    async fn reconcile_deletion(&self, direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
        self.teardown(direction, objects, ctx).await
    }
}

impl MachineHooks {
    /// The hooks of `platform` in `cluster`, reading owners from the API server.
    pub fn new(platform: Arc<dyn Platform>, cluster: Arc<Cluster>) -> Self {
        Self {
            platform,
            cluster,
            capi_sets: None,
        }
    }

    /// Reads the CAPI MachineSets that own Machines from `cache` (the MachineSet
    /// controller's, [`sync_core::SyncController::caches`]) instead of one GET per
    /// reconcile; a set the cache does not hold yet is still read live.
    #[must_use]
    pub fn with_capi_sets(mut self, cache: Store<capi::MachineSet>) -> Self {
        self.capi_sets = Some(cache);
        self
    }

    /// MAPI is the source (`paused`: the mirror must not act while MAPI drives).
    async fn mirror_to_capi(
        &self,
        mapi: &mapi::Machine,
        objects: &Objects,
        ctx: &Ctx,
        paused: bool,
    ) -> HookResult {
        if let Some(message) = takeover::foreign_capi(mapi, objects.capi.as_deref(), SYNC_MANAGERS) {
            return report::fail(ctx, CONTROLLER, objects, takeover::REASON, message).await;
        }
        let apis = Apis::new(ctx, self.capi_sets.clone());
        if finalizers::ensure(&apis.mapi, mapi, SYNC_FINALIZER).await? {
            return Ok(Action::await_change());
        }
        let owner = match owners::capi_owner_of_mapi_machine(mapi, &apis.capi_sets, &self.cluster, ctx).await
        {
            Ok(owner) => owner,
            Err(owners::OwnerError::Unsupported(message)) => {
                return report::fail(
                    ctx,
                    CONTROLLER,
                    objects,
                    "FailedToConvertMAPIMachineToCAPI",
                    message,
                )
                .await;
            }
            Err(owners::OwnerError::Waiting(message)) => {
                status::write(
                    &apis.mapi,
                    CONTROLLER,
                    mapi,
                    &Synchronized::progressing("WaitingForCAPIMachineSet", message),
                )
                .await?;
                return Ok(Action::requeue(Duration::from_secs(5)));
            }
            Err(owners::OwnerError::Api(error)) => return Err(error.into()),
        };
        let converted = match self.platform.machine_to_capi(mapi) {
            Ok(converted) => converted,
            Err(error) => {
                return report::fail(
                    ctx,
                    CONTROLLER,
                    objects,
                    "FailedToConvertMAPIMachineToCAPI",
                    error,
                )
                .await;
            }
        };
        warn_conversion(ctx, mapi.object_ref(&()), &converted.warnings).await;
        let (mut machine, mut infra) = (converted.value.machine, converted.value.infra);
        let machine_status = machine.status.take();

        machine.metadata.namespace = Some(ctx.namespaces.capi.clone());
        machine.metadata.owner_references = owner.map(|o| vec![o]);
        set_paused(&mut machine.metadata.annotations, paused);
        add_finalizer(&mut machine.metadata.finalizers, SYNC_FINALIZER);
        let source = format!(
            "the MachineAPI Machine {}/{}",
            ctx.namespaces.mapi,
            mapi.name_any()
        );
        let live = objects.capi.as_deref();
        let reverted =
            drift::revert_added_fields(ctx, &apis.capi, CONTROLLER, live, &machine, &source).await?;
        let live = reverted.as_ref().or(live);
        let machine = match apply(&apis.capi, CONTROLLER, live, &machine, Part::Object).await? {
            Applied::Written(written) => *written,
            Applied::Unchanged => live.cloned().unwrap_or(machine),
        };

        let (infra_api, resource) = infra::api(ctx, &infra).await?;
        infra.metadata.namespace = Some(ctx.namespaces.capi.clone());
        infra.metadata.owner_references = Some(vec![owners::controller_ref(&machine)]);
        set_paused(&mut infra.metadata.annotations, paused);
        add_finalizer(&mut infra.metadata.finalizers, SYNC_FINALIZER);
        let live_infra = infra::live(ctx, &infra).await?;
        if let Some(live) = &live_infra
            && live.meta().deletion_timestamp.is_none()
            && !contains(&live.data["spec"], &infra.data["spec"])
        {
            // InfraMachine specs are immutable in practice: re-create it.
            finalizers::release_matching(&infra_api, live.as_ref(), |_| true).await?;
            delete(&infra_api, live.as_ref(), "its spec changed; re-creating it").await?;
            let message = format!("{} {} changed; re-creating it", resource.kind, live.name_any());
            let progressing = Synchronized::progressing("ProgressingToCreateCAPIInfraMachine", message);
            status::write(&apis.mapi, CONTROLLER, mapi, &progressing).await?;
            return Ok(Action::requeue(RECREATE_DELAY));
        }
        if live_infra
            .as_ref()
            .is_some_and(|l| l.meta().deletion_timestamp.is_some())
        {
            return Ok(Action::requeue(RECREATE_DELAY));
        }
        let infra_status = infra.data.get("status").cloned();
        let live_infra = match apply_typed(
            &infra_api,
            &resource,
            CONTROLLER,
            live_infra.as_deref(),
            &infra,
            Part::Object,
        )
        .await?
        {
            Applied::Written(written) => Some(Arc::new(*written)),
            Applied::Unchanged => live_infra,
        };

        if status::synchronized_generation(mapi) == mapi.metadata.generation {
            let status = machine_status.map(|mut status| {
                status.observed_generation = machine.metadata.generation;
                status
            });
            let copy = capi::Machine {
                status,
                ..machine.clone()
            };
            apply(&apis.capi, CONTROLLER, Some(&machine), &copy, Part::Status).await?;
            if infra_status.is_some() {
                apply_typed(
                    &infra_api,
                    &resource,
                    CONTROLLER,
                    live_infra.as_deref(),
                    &infra,
                    Part::Status,
                )
                .await?;
            }
        }
        let generation = mapi.metadata.generation.unwrap_or_default();
        status::write(
            &apis.mapi,
            CONTROLLER,
            mapi,
            &Synchronized::done(generation, AuthoritativeApi::MachineApi),
        )
        .await?;
        Ok(Action::await_change())
    }

    /// CAPI is the source; `mapi: None` is a CAPI-only Machine of a mirrored MachineSet.
    async fn mirror_to_mapi(
        &self,
        mapi: Option<&mapi::Machine>,
        capi: &capi::Machine,
        objects: &Objects,
        ctx: &Ctx,
    ) -> HookResult {
        let apis = Apis::new(ctx, None);
        if finalizers::ensure(&apis.capi, capi, SYNC_FINALIZER).await? {
            return Ok(Action::await_change());
        }
        let Some(infra) = ctx.infra_object(objects).await? else {
            if let Some(mapi) = mapi {
                let message = format!(
                    "waiting for {}",
                    objects.infra_ref().map(ToString::to_string).unwrap_or_default()
                );
                status::write(
                    &apis.mapi,
                    CONTROLLER,
                    mapi,
                    &Synchronized::progressing("WaitingForCAPIInfraMachine", message),
                )
                .await?;
            }
            return Ok(Action::await_change());
        };
        let infra = infra.as_ref();
        let (infra_api, _) = infra::api(ctx, infra).await?;
        if finalizers::ensure(&infra_api, infra, SYNC_FINALIZER).await? {
            return Ok(Action::await_change());
        }
        if let Err(message) = owners::check_capi_machine_owners(capi) {
            return report::fail(
                ctx,
                CONTROLLER,
                objects,
                "FailedToConvertCAPIMachineToMAPI",
                message,
            )
            .await;
        }
        let converted = match self.platform.machine_to_mapi(capi, infra) {
            Ok(converted) => converted,
            Err(error) => {
                return report::fail(
                    ctx,
                    CONTROLLER,
                    objects,
                    "FailedToConvertCAPIMachineToMAPI",
                    error,
                )
                .await;
            }
        };
        warn_conversion(
            ctx,
            mapi.map_or_else(|| capi.object_ref(&()), |m| m.object_ref(&())),
            &converted.warnings,
        )
        .await;
        let mut machine = converted.value;
        machine.metadata.namespace = Some(ctx.namespaces.mapi.clone());
        // The MAPI object keeps its own authority; a new mirror is driven by Cluster API.
        machine.spec.authoritative_api = Some(
            mapi.and_then(|m| m.spec.authoritative_api.clone())
                .unwrap_or(AuthoritativeApi::ClusterApi),
        );
        machine.metadata.owner_references = owners::mapi_owner_of_capi_machine(capi, ctx);
        if let Some(annotations) = machine.metadata.annotations.as_mut() {
            annotations.remove(pause::PAUSED_ANNOTATION);
        }
        add_finalizer(&mut machine.metadata.finalizers, SYNC_FINALIZER);
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
            // A new mirror: its status says Cluster API drives it.
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
            apply(
                &apis.mapi,
                &format!("{CONTROLLER}-AuthoritativeAPI"),
                None,
                &authority,
                Part::Status,
            )
            .await?;
            return Ok(Action::await_change());
        }
        if status::synchronized_generation(&written) == capi.metadata.generation {
            let mut copy = written.clone();
            copy.status = machine.status.map(status_without_sync_fields);
            apply(&apis.mapi, CONTROLLER, Some(&written), &copy, Part::Status).await?;
        }
        let generation = capi.metadata.generation.unwrap_or_default();
        status::write(
            &apis.mapi,
            CONTROLLER,
            &written,
            &Synchronized::done(generation, AuthoritativeApi::ClusterApi),
        )
        .await?;
        Ok(Action::await_change())
    }

    /// Deleting either side deletes the other; the mirror's finalizers go only once the
    /// authoritative side's controller has removed its own (it deletes the instance).
    async fn teardown(&self, direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
        let apis = Apis::new(ctx, None);
        let (mapi, capi) = (objects.mapi.as_deref(), objects.capi.as_deref());
        let infra = ctx.infra_object(objects).await?;
        let infra = infra.as_deref();
        let infra_api = match infra {
            Some(infra) => Some(infra::api(ctx, infra).await?.0),
            None => None,
        };
        delete_pair(ctx, direction, objects, &apis.mapi, &apis.capi).await?;
        match direction {
            Direction::MapiToCapi => {
                if mapi.is_some_and(|m| holds(m, |f| f == MAPI_MACHINE_FINALIZER)) {
                    return Ok(Action::await_change());
                }
                // The paused CAPI controllers will not: delete the mirror's InfraMachine
                // and strip the mirror's finalizers.
                if let (Some(infra), Some(api)) = (infra, &infra_api) {
                    delete(api, infra, "its Machine is deleted").await?;
                    finalizers::release_matching(api, infra, |f| {
                        f == SYNC_FINALIZER || f.ends_with(INFRA_FINALIZER_SUFFIX)
                    })
                    .await?;
                }
                if let Some(capi) = capi {
                    finalizers::release_matching(&apis.capi, capi, |f| {
                        f == SYNC_FINALIZER || f == CAPI_MACHINE_FINALIZER
                    })
                    .await?;
                }
                if let Some(mapi) = mapi {
                    finalizers::release(&apis.mapi, mapi, SYNC_FINALIZER).await?;
                }
            }
            Direction::CapiToMapi => {
                // The CAPI controller deletes the InfraMachine before its Machine.
                if let (Some(infra), Some(api)) = (infra, &infra_api) {
                    finalizers::release(api, infra, SYNC_FINALIZER).await?;
                }
                if capi.is_some_and(|c| holds(c, |f| f == CAPI_MACHINE_FINALIZER)) {
                    return Ok(Action::await_change());
                }
                if let Some(mapi) = mapi {
                    finalizers::release_matching(&apis.mapi, mapi, |f| {
                        f == SYNC_FINALIZER || f == MAPI_MACHINE_FINALIZER
                    })
                    .await?;
                }
                if let Some(capi) = capi {
                    finalizers::release(&apis.capi, capi, SYNC_FINALIZER).await?;
                }
            }
        }
        Ok(Action::await_change())
    }
}

/// The namespaced APIs a Machine reconcile writes, and where it reads owners.
struct Apis {
    mapi: Api<mapi::Machine>,
    capi: Api<capi::Machine>,
    capi_sets: owners::CapiSets,
}

impl Apis {
    fn new(ctx: &Ctx, capi_sets: Option<Store<capi::MachineSet>>) -> Self {
        Self {
            mapi: Api::namespaced(ctx.client.clone(), &ctx.namespaces.mapi),
            capi: Api::namespaced(ctx.client.clone(), &ctx.namespaces.capi),
            capi_sets: owners::CapiSets {
                api: Api::namespaced(ctx.client.clone(), &ctx.namespaces.capi),
                namespace: ctx.namespaces.capi.clone(),
                cache: capi_sets,
            },
        }
    }
}

/// Publishes a conversion's warnings as `ConversionWarning` Events.
pub(crate) async fn warn_conversion<P: sync_core::SyncPair>(
    ctx: &SyncContext<P>,
    on: k8s_openapi::api::core::v1::ObjectReference,
    warnings: &[crate::sync::Warning],
) {
    for warning in warnings {
        ctx.warn(&on, "ConversionWarning", warning.to_string()).await;
    }
}

pub(crate) fn set_paused(annotations: &mut Option<BTreeMap<String, String>>, paused: bool) {
    let map = annotations.get_or_insert_with(BTreeMap::new);
    pause::set_paused(map, paused);
}

pub(crate) fn add_finalizer(list: &mut Option<Vec<String>>, finalizer: &str) {
    let list = list.get_or_insert_with(Vec::new);
    if !list.iter().any(|f| f == finalizer) {
        list.push(finalizer.to_owned());
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
