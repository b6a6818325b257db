//! The MachineSet pair: MAPI MachineSets ⇄ CAPI MachineSets, and their InfraMachineTemplates.
//!
//! | the MAPI MachineSet says | the hooks |
//! |---|---|
//! | `MachineAPI` | sync finalizer on it; no owner references allowed; convert; the InfraMachineTemplate `<set>-<spec hash>` created (templates are immutable: a spec change is a new name), the CAPI MachineSet applied **paused** and pointed at it, then the set's other labelled templates deleted (upstream #295); status copied once the MAPI set's `observedGeneration == generation`; `Synchronized=True` |
//! | `ClusterAPI`, no CAPI MachineSet | as above, **unpaused** (upstream #288) |
//! | `ClusterAPI` | sync finalizer on the CAPI set; at most one owner, the Cluster; convert; the existing MAPI set updated (never created) over the version read, keeping its selector and authority (changed since → 409, retried); status copied once the CAPI set's `observedGeneration == generation`; `Synchronized=True` |
//! | a conversion error, an unsupported owner | `Synchronized=False`, Warning Event, no retry until a change |
//! | the MAPI mirror of a `ClusterAPI` set deleted | its finalizer released; the CAPI set stays |
//! | otherwise either side deleted | the other side deleted, finalizers released (the mirror's paused controller's too), a MAPI-driven set's templates deleted; a CAPI set whose MAPI set is gone is released too (upstream #626) |
use std::sync::Arc;

use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_core::hooks::{Action, Direction, HookResult, SyncHooks, SyncObjects};
use sync_core::toolkit::status::{self, Synchronized};
use sync_core::toolkit::{Applied, Part, SYNC_FINALIZER, apply, apply_over, apply_typed, finalizers, report};
use sync_core::{Deleting, SyncContext};
use sync_macros::sync_controller;

use crate::machine::{add_finalizer, set_paused, warn_conversion};
use crate::sync::takeover::{self, SYNC_MANAGERS};
use crate::sync::teardown::{delete, delete_pair};
use crate::sync::{CAPI_MACHINE_SET_FINALIZER, Cluster, MACHINE_SET_LABEL, Platform, owners};
use crate::sync::{drift, infra};

/// Mirrors Machine API MachineSets and Cluster API MachineSets.
#[sync_controller(
    mapi = mapi::MachineSet,
    capi = capi::MachineSet,
    infra_ref = spec.template.spec.infrastructure_ref,
)]
pub struct MachineSetSync;

/// The field manager of every write, and the prefix of the condition's.
pub const CONTROLLER: &str = "MachineSetSyncController";

/// The MachineSet hooks of one platform.
#[derive(Clone)]
pub struct MachineSetHooks {
    /// The platform's conversion.
    pub platform: Arc<dyn Platform>,
    /// The cluster.
    pub cluster: Arc<Cluster>,
}

type Ctx = SyncContext<MachineSetSync>;
type Objects = SyncObjects<MachineSetSync>;

impl SyncHooks<MachineSetSync> for MachineSetHooks {
    async fn reconcile_mapi_to_capi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        let Some(mapi) = objects.mapi.as_deref() else {
            return Ok(Action::await_change());
        };
        self.mirror_to_capi(mapi, objects, ctx, true).await
    }

    async fn reconcile_capi_to_mapi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        match (objects.mapi.as_deref(), objects.capi.as_deref()) {
            (Some(mapi), None) => self.mirror_to_capi(mapi, objects, ctx, false).await,
            (Some(mapi), Some(capi)) => self.mirror_to_mapi(mapi, capi, objects, ctx).await,
            // A CAPI-only MachineSet is not mirrored (the engine does not call this).
            (None, _) => Ok(Action::await_change()),
        }
    }

    async fn reconcile_deletion(&self, direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
        self.teardown(direction, objects, ctx).await
    }
}

impl MachineSetHooks {
    async fn mirror_to_capi(
        &self,
        mapi: &mapi::MachineSet,
        objects: &Objects,
        ctx: &Ctx,
        paused: bool,
    ) -> HookResult {
        if let Some(message) = takeover::foreign_capi(mapi, objects.capi.as_deref(), SYNC_MANAGERS) {
            return report::fail(ctx, CONTROLLER, objects, takeover::REASON, message).await;
        }
        let apis = Apis::new(ctx);
        if finalizers::ensure(&apis.mapi, mapi, SYNC_FINALIZER).await? {
            return Ok(Action::await_change());
        }
        if !mapi.owner_references().is_empty() {
            let message =
                "metadata.ownerReferences: owner references conversion is not supported for machine set";
            return report::fail(
                ctx,
                CONTROLLER,
                objects,
                "FailedToConvertMAPIMachineSetToCAPI",
                message,
            )
            .await;
        }
        let converted = match self.platform.machine_set_to_capi(mapi) {
            Ok(converted) => converted,
            Err(error) => {
                return report::fail(
                    ctx,
                    CONTROLLER,
                    objects,
                    "FailedToConvertMAPIMachineSetToCAPI",
                    error,
                )
                .await;
            }
        };
        warn_conversion(ctx, mapi.object_ref(&()), &converted.warnings).await;
        let (mut set, mut template) = (converted.value.set, converted.value.template);
        let set_status = set.status.take();
        let cluster_owner = owners::cluster_owner(ctx, &self.cluster).await?;

        // The template first: the set must never point at a template that does not exist.
        let (templates, resource) = infra::api(ctx, &template).await?;
        template.metadata.namespace = Some(ctx.namespaces.capi.clone());
        template
            .labels_mut()
            .insert(MACHINE_SET_LABEL.into(), mapi.name_any());
        template.metadata.owner_references = cluster_owner.clone().map(|o| vec![o]);
        set_paused(&mut template.metadata.annotations, paused);
        let live_template = infra::live(ctx, &template).await?;
        apply_typed(
            &templates,
            &resource,
            CONTROLLER,
            live_template.as_deref(),
            &template,
            Part::Object,
        )
        .await?;

        set.metadata.namespace = Some(ctx.namespaces.capi.clone());
        set.metadata.owner_references = cluster_owner.map(|o| vec![o]);
        set.spec.template.spec.infrastructure_ref.name = template.name_any();
        set_paused(&mut set.metadata.annotations, paused);
        add_finalizer(&mut set.metadata.finalizers, SYNC_FINALIZER);
        let source = format!(
            "the MachineAPI MachineSet {}/{}",
            ctx.namespaces.mapi,
            mapi.name_any()
        );
        let reverted = drift::revert_added_fields(
            ctx,
            &apis.capi,
            CONTROLLER,
            objects.capi.as_deref(),
            &set,
            &source,
        )
        .await?;
        let live = reverted.as_ref().or(objects.capi.as_deref());
        let set = match apply(&apis.capi, CONTROLLER, live, &set, Part::Object).await? {
            Applied::Written(written) => *written,
            Applied::Unchanged => live.cloned().unwrap_or(set),
        };

        // Rotation: the set points at the new template; the set's other templates go.
        let selector = ListParams::default().labels(&format!("{MACHINE_SET_LABEL}={}", mapi.name_any()));
        for old in templates.list(&selector).await?.items {
            if old.name_any() != template.name_any() {
                delete(&templates, &old, "the MachineSet now uses a newer template").await?;
            }
        }

        let observed = mapi.status.as_ref().and_then(|s| s.observed_generation);
        if observed.is_some() && observed == mapi.metadata.generation {
            let mut status = set_status.unwrap_or_default();
            status.up_to_date_replicas.get_or_insert(0);
            status.observed_generation = set.metadata.generation;
            let copy = capi::MachineSet {
                status: Some(status),
                ..set.clone()
            };
            apply(&apis.capi, CONTROLLER, Some(&set), &copy, Part::Status).await?;
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

    async fn mirror_to_mapi(
        &self,
        mapi: &mapi::MachineSet,
        capi: &capi::MachineSet,
        objects: &Objects,
        ctx: &Ctx,
    ) -> HookResult {
        let apis = Apis::new(ctx);
        if finalizers::ensure(&apis.capi, capi, SYNC_FINALIZER).await? {
            return Ok(Action::await_change());
        }
        if let Err(message) = check_capi_owners(capi) {
            return report::fail(
                ctx,
                CONTROLLER,
                objects,
                "FailedToConvertCAPIMachineSetToMAPI",
                message,
            )
            .await;
        }
        let Some(template) = ctx.infra_object(objects).await? else {
            let message = format!(
                "waiting for {}",
                objects.infra_ref().map(ToString::to_string).unwrap_or_default()
            );
            status::write(
                &apis.mapi,
                CONTROLLER,
                mapi,
                &Synchronized::progressing("WaitingForCAPIInfraMachineTemplate", message),
            )
            .await?;
            return Ok(Action::await_change());
        };
        let converted = match self.platform.machine_set_to_mapi(capi, template.as_ref()) {
            Ok(converted) => converted,
            Err(error) => {
                return report::fail(
                    ctx,
                    CONTROLLER,
                    objects,
                    "FailedToConvertCAPIMachineSetToMAPI",
                    error,
                )
                .await;
            }
        };
        warn_conversion(ctx, mapi.object_ref(&()), &converted.warnings).await;
        let mut set = converted.value;
        set.metadata.namespace = Some(ctx.namespaces.mapi.clone());
        set.metadata.owner_references = None;
        // The MAPI set keeps its own selector and authority.
        set.spec.selector = mapi.spec.selector.clone();
        set.spec.authoritative_api = mapi.spec.authoritative_api.clone();
        if let Some(annotations) = set.metadata.annotations.as_mut() {
            annotations.remove(sync_core::toolkit::pause::PAUSED_ANNOTATION);
        }
        add_finalizer(&mut set.metadata.finalizers, SYNC_FINALIZER);
        let set_status = set.status.take();
        // Over exactly the MAPI MachineSet read: it copies that set's selector and authority.
        let written = match apply_over(&apis.mapi, CONTROLLER, mapi, &set, Part::Object).await? {
            Applied::Written(written) => *written,
            Applied::Unchanged => mapi.clone(),
        };
        let observed = capi.status.as_ref().and_then(|s| s.observed_generation);
        if let Some(mut status) = set_status
            && observed.is_some()
            && observed == capi.metadata.generation
        {
            status.sync.authoritative_api = None;
            status.sync.synchronized_api = None;
            status.sync.synchronized_generation = None;
            status.sync.conditions = None;
            let copy = mapi::MachineSet {
                status: Some(status),
                ..written.clone()
            };
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

    async fn teardown(&self, direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
        let apis = Apis::new(ctx);
        let (mapi, capi) = (objects.mapi.as_deref(), objects.capi.as_deref());
        let mapi_mirror_deleted =
            direction == Direction::CapiToMapi && matches!(objects.deleting(), Some(Deleting::Mapi(_)));
        if mapi_mirror_deleted {
            // Only the mirror goes; the CAPI set keeps running its Machines.
            if let Some(mapi) = mapi {
                finalizers::release(&apis.mapi, mapi, SYNC_FINALIZER).await?;
            }
            return Ok(Action::await_change());
        }
        delete_pair(ctx, direction, objects, &apis.mapi, &apis.capi).await?;
        if let Some(capi) = capi {
            // A MAPI-driven set's mirror is paused: its controller will not finish.
            let strip = |f: &str| {
                f == SYNC_FINALIZER || (direction == Direction::MapiToCapi && f == CAPI_MACHINE_SET_FINALIZER)
            };
            finalizers::release_matching(&apis.capi, capi, strip).await?;
        }
        if direction == Direction::MapiToCapi
            && let Some(template) = ctx.infra_object(objects).await?
        {
            let (templates, _) = infra::api(ctx, &template).await?;
            let selector = ListParams::default().labels(&format!("{MACHINE_SET_LABEL}={}", objects.name));
            for old in templates.list(&selector).await?.items {
                delete(&templates, &old, "the MachineSet now uses a newer template").await?;
            }
        }
        if let Some(mapi) = mapi {
            finalizers::release(&apis.mapi, mapi, SYNC_FINALIZER).await?;
        }
        Ok(Action::await_change())
    }
}

/// A CAPI MachineSet converts with at most one owner, the Cluster.
fn check_capi_owners(set: &capi::MachineSet) -> Result<(), String> {
    match set.owner_references() {
        [] => Ok(()),
        [owner]
            if owner.kind == "Cluster"
                && owner.api_version == format!("{}/{}", capi::GROUP, capi::VERSION) =>
        {
            Ok(())
        }
        [owner] => Err(format!(
            "metadata.ownerReferences: owner kind {} {} is not supported for conversion",
            owner.api_version, owner.kind
        )),
        more => Err(format!(
            "metadata.ownerReferences: must have at most 1 item, has {}",
            more.len()
        )),
    }
}

/// The namespaced APIs a MachineSet reconcile writes.
struct Apis {
    mapi: Api<mapi::MachineSet>,
    capi: Api<capi::MachineSet>,
}

impl Apis {
    fn new(ctx: &Ctx) -> Self {
        Self {
            mapi: Api::namespaced(ctx.client.clone(), &ctx.namespaces.mapi),
            capi: Api::namespaced(ctx.client.clone(), &ctx.namespaces.capi),
        }
    }
}
