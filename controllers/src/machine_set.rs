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
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DynamicObject, ListParams};
use kube::{Resource, ResourceExt};
use sync_core::api::{AuthoritativeApi, capi, mapi};
use sync_core::hooks::{Action, Direction, HookResult, Step, SyncHooks, SyncObjects, finish};
use sync_core::toolkit::status::{self, Synchronized};
use sync_core::toolkit::{Applied, Part, SYNC_FINALIZER, apply, apply_over, apply_typed, finalizers, pause};
use sync_core::{Deleting, SyncContext};
use sync_macros::sync_controller;

pub use crate::sync::MACHINE_SET_CONTROLLER as CONTROLLER;
use crate::sync::hooks::{Failure, add_finalizer, apply_capi_mirror, converted, refuse, set_paused};
use crate::sync::infra;
use crate::sync::takeover::{self, SYNC_MANAGERS};
use crate::sync::teardown::{delete, delete_pair};
use crate::sync::{CAPI_MACHINE_SET_FINALIZER, MACHINE_SET_LABEL, PlatformHooks, owners};

/// Mirrors Machine API MachineSets and Cluster API MachineSets.
#[sync_controller(
    mapi = mapi::MachineSet,
    capi = capi::MachineSet,
    infra_ref = spec.template.spec.infrastructure_ref,
)]
pub struct MachineSetSync;

/// The MachineSet hooks of one platform: the platform's hooks, which serve both pairs.
pub type MachineSetHooks = PlatformHooks;

/// A failed MAPI → CAPI sync.
const TO_CAPI: Failure<'static> = Failure {
    controller: CONTROLLER,
    reason: "FailedToConvertMAPIMachineSetToCAPI",
};
/// A failed CAPI → MAPI sync.
const TO_MAPI: Failure<'static> = Failure {
    controller: CONTROLLER,
    reason: "FailedToConvertCAPIMachineSetToMAPI",
};
/// A CAPI object the sync did not create.
const TAKEOVER: Failure<'static> = Failure {
    controller: CONTROLLER,
    reason: takeover::REASON,
};

type Ctx = SyncContext<MachineSetSync>;
type Objects = SyncObjects<MachineSetSync>;

impl SyncHooks<MachineSetSync> for PlatformHooks {
    async fn reconcile_mapi_to_capi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        let Some(mapi) = objects.mapi.as_deref() else {
            return Ok(Action::await_change());
        };
        finish(mirror_to_capi(self, mapi, objects, ctx, true).await)
    }

    async fn reconcile_capi_to_mapi(&self, objects: &Objects, ctx: &Ctx) -> HookResult {
        match (objects.mapi.as_deref(), objects.capi.as_deref()) {
            (Some(mapi), None) => finish(mirror_to_capi(self, mapi, objects, ctx, false).await),
            (Some(mapi), Some(capi)) => finish(mirror_to_mapi(self, mapi, capi, objects, ctx).await),
            // A CAPI-only MachineSet is not mirrored (the engine does not call this).
            (None, _) => Ok(Action::await_change()),
        }
    }

    async fn reconcile_deletion(&self, direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
        teardown(direction, objects, ctx).await
    }
}

/// MAPI is the source (`paused`: the mirror must not act while MAPI drives).
async fn mirror_to_capi(
    hooks: &PlatformHooks,
    mapi: &mapi::MachineSet,
    objects: &Objects,
    ctx: &Ctx,
    paused: bool,
) -> Step<Action> {
    if let Some(message) = takeover::foreign_capi(mapi, objects.capi.as_deref(), SYNC_MANAGERS) {
        return Err(refuse(ctx, objects, TAKEOVER, message).await);
    }
    let apis = Apis::new(ctx);
    if finalizers::ensure(&apis.mapi, mapi, SYNC_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    if let Err(unsupported) = owners::check_mapi_machine_set_owners(mapi.owner_references()) {
        return Err(refuse(ctx, objects, TO_CAPI, unsupported).await);
    }
    let conversion = hooks.platform.machine_set_to_capi(mapi);
    let converted = converted(ctx, objects, TO_CAPI, mapi.object_ref(&()), conversion).await?;
    let (mut set, template) = (converted.set, converted.template);
    let set_status = set.status.take();
    let cluster_owner = owners::cluster_owner(ctx, &hooks.cluster).await?;
    // The template first: the set must never point at a template that does not exist.
    let namespace = &ctx.namespaces.capi;
    let template = desired_template(
        template,
        &mapi.name_any(),
        cluster_owner.clone(),
        paused,
        namespace,
    );
    let templates = apply_template(&template, ctx).await?;
    let set = desired_capi_set(set, &template.name_any(), cluster_owner, paused, namespace);
    let set = apply_capi_mirror(ctx, &apis.capi, CONTROLLER, mapi, objects, set).await?;
    delete_older_templates(&templates, &mapi.name_any(), &template.name_any()).await?;
    let observed = mapi.status.as_ref().and_then(|s| s.observed_generation);
    if observed.is_some() && observed == mapi.metadata.generation {
        copy_status_to_capi(&set, set_status, &apis).await?;
    }
    let generation = mapi.metadata.generation.unwrap_or_default();
    let done = Synchronized::done(generation, AuthoritativeApi::MachineApi);
    status::write(&apis.mapi, CONTROLLER, mapi, &done).await?;
    Ok(Action::await_change())
}

/// The InfraMachineTemplate as the sync writes it: labelled with its MachineSet, owned by
/// the Cluster, paused while MAPI drives.
fn desired_template(
    mut template: DynamicObject,
    set: &str,
    owner: Option<OwnerReference>,
    paused: bool,
    namespace: &str,
) -> DynamicObject {
    template.metadata.namespace = Some(namespace.to_owned());
    template
        .labels_mut()
        .insert(MACHINE_SET_LABEL.into(), set.to_owned());
    template.metadata.owner_references = owner.map(|o| vec![o]);
    set_paused(&mut template.metadata.annotations, paused);
    template
}

/// Applies the template (its name carries its spec's hash: a changed spec is a new
/// template); the API of its kind.
async fn apply_template(template: &DynamicObject, ctx: &Ctx) -> Step<Api<DynamicObject>> {
    let (templates, resource) = infra::api(ctx, template).await?;
    let live = infra::live(ctx, template).await?;
    apply_typed(
        &templates,
        &resource,
        CONTROLLER,
        live.as_deref(),
        template,
        Part::Object,
    )
    .await?;
    Ok(templates)
}

/// The CAPI MachineSet as the sync writes it: in the CAPI namespace, owned by the Cluster,
/// pointed at `template`, paused while MAPI drives, with the sync finalizer.
fn desired_capi_set(
    mut set: capi::MachineSet,
    template: &str,
    owner: Option<OwnerReference>,
    paused: bool,
    namespace: &str,
) -> capi::MachineSet {
    set.metadata.namespace = Some(namespace.to_owned());
    set.metadata.owner_references = owner.map(|o| vec![o]);
    set.spec.template.spec.infrastructure_ref.name = template.to_owned();
    set_paused(&mut set.metadata.annotations, paused);
    add_finalizer(&mut set.metadata.finalizers, SYNC_FINALIZER);
    set
}

/// Rotation: once the set points at `current`, the set's other labelled templates go
/// (upstream #295).
async fn delete_older_templates(templates: &Api<DynamicObject>, set: &str, current: &str) -> Step<()> {
    let selector = ListParams::default().labels(&format!("{MACHINE_SET_LABEL}={set}"));
    for old in templates.list(&selector).await?.items {
        if old.name_any() != current {
            delete(templates, &old, "the MachineSet now uses a newer template").await?;
        }
    }
    Ok(())
}

/// Copies the converted status to the CAPI MachineSet.
async fn copy_status_to_capi(
    set: &capi::MachineSet,
    status: Option<capi::MachineSetStatus>,
    apis: &Apis,
) -> Step<()> {
    let mut status = status.unwrap_or_default();
    status.up_to_date_replicas.get_or_insert(0);
    status.observed_generation = set.metadata.generation;
    let copy = capi::MachineSet {
        status: Some(status),
        ..set.clone()
    };
    apply(&apis.capi, CONTROLLER, Some(set), &copy, Part::Status).await?;
    Ok(())
}

/// CAPI is the source: the existing MAPI set is updated, never created.
async fn mirror_to_mapi(
    hooks: &PlatformHooks,
    mapi: &mapi::MachineSet,
    capi: &capi::MachineSet,
    objects: &Objects,
    ctx: &Ctx,
) -> Step<Action> {
    let apis = Apis::new(ctx);
    if finalizers::ensure(&apis.capi, capi, SYNC_FINALIZER).await? {
        return Ok(Action::await_change());
    }
    if let Err(unsupported) = owners::check_capi_machine_set_owners(capi.owner_references()) {
        return Err(refuse(ctx, objects, TO_MAPI, unsupported).await);
    }
    let Some(template) = ctx.infra_object(objects).await? else {
        let awaited = objects.infra_ref().map(ToString::to_string).unwrap_or_default();
        let progressing = Synchronized::progressing(
            "WaitingForCAPIInfraMachineTemplate",
            format!("waiting for {awaited}"),
        );
        status::write(&apis.mapi, CONTROLLER, mapi, &progressing).await?;
        return Ok(Action::await_change());
    };
    let conversion = hooks.platform.machine_set_to_mapi(capi, &template);
    let converted = converted(ctx, objects, TO_MAPI, mapi.object_ref(&()), conversion).await?;
    let mut set = desired_mapi_set(converted, mapi, &ctx.namespaces.mapi);
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
    let done = Synchronized::done(generation, AuthoritativeApi::ClusterApi);
    status::write(&apis.mapi, CONTROLLER, &written, &done).await?;
    Ok(Action::await_change())
}

/// The MAPI MachineSet as the sync writes it: no owners, never paused, the sync
/// finalizer; it keeps the live set's own selector and authority.
fn desired_mapi_set(mut set: mapi::MachineSet, live: &mapi::MachineSet, namespace: &str) -> mapi::MachineSet {
    set.metadata.namespace = Some(namespace.to_owned());
    set.metadata.owner_references = None;
    set.spec.selector = live.spec.selector.clone();
    set.spec.authoritative_api = live.spec.authoritative_api.clone();
    if let Some(annotations) = set.metadata.annotations.as_mut() {
        annotations.remove(pause::PAUSED_ANNOTATION);
    }
    add_finalizer(&mut set.metadata.finalizers, SYNC_FINALIZER);
    set
}

/// Deleting either side deletes the other (see the table); deleting the MAPI mirror of a
/// `ClusterAPI` set releases only the mirror.
async fn teardown(direction: Direction, objects: &Objects, ctx: &Ctx) -> HookResult {
    let apis = Apis::new(ctx);
    let (mapi, capi) = (objects.mapi.as_deref(), objects.capi.as_deref());
    if only_the_mapi_mirror_goes(direction, objects.deleting()) {
        // Only the mirror goes; the CAPI set keeps running its Machines.
        if let Some(mapi) = mapi {
            finalizers::release(&apis.mapi, mapi, SYNC_FINALIZER).await?;
        }
        return Ok(Action::await_change());
    }
    delete_pair(ctx, direction, objects, &apis.mapi, &apis.capi).await?;
    if let Some(capi) = capi {
        let strip = |f: &str| released_from_capi_set(direction, f);
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

/// Whether only the MAPI mirror goes: it was deleted while Cluster API drives; the CAPI
/// set keeps running its Machines.
fn only_the_mapi_mirror_goes(direction: Direction, deleting: Option<Deleting<'_, MachineSetSync>>) -> bool {
    direction == Direction::CapiToMapi && matches!(deleting, Some(Deleting::Mapi(_)))
}

/// The finalizers released from a CAPI set on deletion: the sync's, and when MAPI drove,
/// the CAPI MachineSet controller's (the mirror is paused: that controller will not finish).
fn released_from_capi_set(direction: Direction, finalizer: &str) -> bool {
    finalizer == SYNC_FINALIZER
        || (direction == Direction::MapiToCapi && finalizer == CAPI_MACHINE_SET_FINALIZER)
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

/// One test per row of the table at the top (named after it), on the pure parts of the
/// hooks; the API round trips are proven by the e2e suites (`tests/tests/sync.rs`).
#[cfg(test)]
mod tests {
    use kube::api::ApiResource;
    use sync_core::api::mapi::MachineSetSpec;

    use super::*;

    const CAPI_NS: &str = "openshift-cluster-api";

    fn cluster() -> OwnerReference {
        OwnerReference {
            api_version: "cluster.x-k8s.io/v1beta2".into(),
            kind: "Cluster".into(),
            name: "demo".into(),
            ..OwnerReference::default()
        }
    }

    fn paused(annotations: Option<&std::collections::BTreeMap<String, String>>) -> bool {
        annotations.is_some_and(|a| a.contains_key(pause::PAUSED_ANNOTATION))
    }

    #[test]
    fn machine_api_template_is_labelled_with_its_set_and_the_set_points_at_it_paused() {
        let resource = ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
            "infrastructure.cluster.x-k8s.io",
            "v1beta2",
            "AWSMachineTemplate",
        ));
        let template = DynamicObject::new("workers-5d8f", &resource);
        let template = desired_template(template, "workers", Some(cluster()), true, CAPI_NS);
        assert_eq!(
            template.labels().get(MACHINE_SET_LABEL).map(String::as_str),
            Some("workers")
        );
        assert_eq!(template.metadata.owner_references, Some(vec![cluster()]));
        assert!(paused(template.metadata.annotations.as_ref()));

        let set = desired_capi_set(
            capi::MachineSet::new("workers", Default::default()),
            "workers-5d8f",
            Some(cluster()),
            true,
            CAPI_NS,
        );
        assert_eq!(set.spec.template.spec.infrastructure_ref.name, "workers-5d8f");
        assert_eq!(set.metadata.namespace.as_deref(), Some(CAPI_NS));
        assert_eq!(set.metadata.owner_references, Some(vec![cluster()]));
        assert!(paused(set.metadata.annotations.as_ref()));
        assert_eq!(set.metadata.finalizers, Some(vec![SYNC_FINALIZER.to_owned()]));
    }

    #[test]
    fn cluster_api_without_capi_set_creates_it_unpaused() {
        let mut converted = capi::MachineSet::new("workers", Default::default());
        converted
            .annotations_mut()
            .insert(pause::PAUSED_ANNOTATION.into(), String::new());
        let set = desired_capi_set(converted, "workers-5d8f", None, false, CAPI_NS);
        assert!(!paused(set.metadata.annotations.as_ref()));
    }

    #[test]
    fn cluster_api_updates_the_mapi_set_keeping_its_selector_and_authority() {
        let mut live = mapi::MachineSet::new("workers", MachineSetSpec::default());
        live.spec.authoritative_api = Some(AuthoritativeApi::ClusterApi);
        live.spec.selector.match_labels = Some([("pool".to_owned(), "a".to_owned())].into());
        let mut converted = mapi::MachineSet::new("workers", MachineSetSpec::default());
        converted.spec.selector.match_labels = Some([("pool".to_owned(), "b".to_owned())].into());
        converted.metadata.owner_references = Some(vec![cluster()]);
        converted
            .annotations_mut()
            .insert(pause::PAUSED_ANNOTATION.into(), String::new());
        let set = desired_mapi_set(converted, &live, "openshift-machine-api");
        assert_eq!(set.spec.selector, live.spec.selector);
        assert_eq!(set.spec.authoritative_api, Some(AuthoritativeApi::ClusterApi));
        assert_eq!(set.metadata.owner_references, None);
        assert!(!paused(set.metadata.annotations.as_ref()));
        assert_eq!(set.metadata.finalizers, Some(vec![SYNC_FINALIZER.to_owned()]));
    }

    #[test]
    fn mapi_mirror_of_a_cluster_api_set_deleted_releases_only_the_mirror() {
        let mirror = mapi::MachineSet::new("workers", MachineSetSpec::default());
        let deleting = Some(Deleting::<MachineSetSync>::Mapi(&mirror));
        assert!(only_the_mapi_mirror_goes(Direction::CapiToMapi, deleting));
        let capi_deleted = capi::MachineSet::new("workers", Default::default());
        let deleting = Some(Deleting::<MachineSetSync>::Capi(&capi_deleted));
        assert!(!only_the_mapi_mirror_goes(Direction::CapiToMapi, deleting));
        let deleting = Some(Deleting::<MachineSetSync>::Mapi(&mirror));
        assert!(!only_the_mapi_mirror_goes(Direction::MapiToCapi, deleting));
    }

    #[test]
    fn otherwise_either_side_deleted_releases_the_paused_controllers_finalizer_too() {
        assert!(released_from_capi_set(Direction::MapiToCapi, SYNC_FINALIZER));
        assert!(released_from_capi_set(
            Direction::MapiToCapi,
            CAPI_MACHINE_SET_FINALIZER
        ));
        assert!(released_from_capi_set(Direction::CapiToMapi, SYNC_FINALIZER));
        assert!(!released_from_capi_set(
            Direction::CapiToMapi,
            CAPI_MACHINE_SET_FINALIZER
        ));
        assert!(!released_from_capi_set(Direction::MapiToCapi, "example.com/keep"));
    }
}
