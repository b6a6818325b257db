//! The writes of a pair's teardown: deleting the other side, stripping finalizers.
//!
//! The order is the hooks' business (each pair's deletion table); these helpers make each
//! step idempotent, so that a teardown interrupted anywhere resumes on the next event.

use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use sync_core::hooks::{Direction, SyncObjects};
use sync_core::{SyncContext, SyncPair};

/// The Event on the MAPI object when its mirror's deletion deletes it.
pub const DELETED_WITH_MIRROR: &str = "DeletedWithMirror";
/// The Event on the MAPI object when its deletion deletes its mirror.
pub const DELETING_MIRROR: &str = "DeletingMirror";

/// Deleting either side of a pair deletes the other (as upstream does): deletes both
/// objects of `objects`, and tells the user on the MAPI object, since a Machine going
/// away because its mirror was deleted is a surprise worth an Event of its own.
pub async fn delete_pair<P: SyncPair>(
    ctx: &SyncContext<P>,
    direction: Direction,
    objects: &SyncObjects<P>,
    mapi_api: &Api<P::Mapi>,
    capi_api: &Api<P::Capi>,
) -> Result<(), kube::Error>
where
    P::Mapi: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
    P::Capi: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    let (mapi, capi) = (objects.mapi.as_deref(), objects.capi.as_deref());
    let kind = <P::Mapi as Resource>::kind(&());
    let kind = kind.as_ref();
    let note = mapi_note(direction, kind, ctx, &objects.name);
    if let Some(mapi) = mapi
        && delete(mapi_api, mapi, &note).await?
    {
        let on = mapi.object_ref(&());
        if direction == Direction::CapiToMapi {
            ctx.inform(&on, DELETED_WITH_MIRROR, note).await;
        } else {
            ctx.warn(&on, DELETED_WITH_MIRROR, note).await;
        }
    }
    let note = match direction {
        Direction::MapiToCapi => format!("this {kind} is being deleted; deleting its Cluster API mirror"),
        Direction::CapiToMapi => {
            format!("this {kind} (a mirror) is being deleted; deleting the authoritative Cluster API {kind}")
        }
    };
    if let Some(capi) = capi
        && delete(capi_api, capi, &note).await?
        && let Some(mapi) = mapi
    {
        ctx.inform(&mapi.object_ref(&()), DELETING_MIRROR, note).await;
    }
    Ok(())
}

/// Why the MAPI object of `name` is deleted with its CAPI twin.
fn mapi_note<P: SyncPair>(direction: Direction, kind: &str, ctx: &SyncContext<P>, name: &str) -> String {
    let capi = format!("{}/{name}", ctx.namespaces.capi);
    match direction {
        Direction::MapiToCapi => format!(
            "the Cluster API {kind} {capi}, this {kind}'s mirror, was deleted; deleting this {kind} too, \
             since deleting either side of a synchronized pair deletes the other"
        ),
        Direction::CapiToMapi => {
            format!(
                "the Cluster API {kind} {capi}, which is authoritative, was deleted; deleting this {kind}, its mirror"
            )
        }
    }
}

/// Deletes `object` unless it is already being deleted; a gone object is success.
/// Whether a delete was sent; a sent one is logged with `reason`.
pub async fn delete<K>(api: &Api<K>, object: &K, reason: &str) -> Result<bool, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    if object.meta().deletion_timestamp.is_some() {
        return Ok(false);
    }
    let params = DeleteParams {
        preconditions: object.uid().map(|uid| kube::api::Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&object.name_any(), &params).await {
        Ok(_) => {
            let namespace = object.namespace().map(|ns| format!("{ns}/")).unwrap_or_default();
            tracing::info!(object = %format!("{namespace}{}", object.name_any()), reason, "deleted");
            Ok(true)
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(false),
        Err(error) => Err(error),
    }
}

/// Whether `object` still carries a finalizer `matches` selects.
pub fn holds<K: Resource>(object: &K, matches: impl Fn(&str) -> bool) -> bool {
    object.meta().finalizers.iter().flatten().any(|f| matches(f))
}
