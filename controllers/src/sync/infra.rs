//! A pair's infrastructure objects (InfraMachines, InfraMachineTemplates) through the
//! shared infrastructure tracker: the API of their kind, and the live object.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject};
use sync_core::api::{AsInfraRef, InfraRef};
use sync_core::infra::InfraTracker;
use sync_core::{HookError, SyncContext, SyncPair};

/// The API of `object`'s kind (resolved by the tracker), and its resource.
pub async fn api<P: SyncPair>(
    ctx: &SyncContext<P>,
    object: &DynamicObject,
) -> Result<(Api<DynamicObject>, ApiResource), HookError> {
    let reference = reference_to(object)?;
    Ok(tracker(ctx)?
        .api(&reference.group_kind(), reference.version.as_deref())
        .await?)
}

/// The live object `desired` names: from the infrastructure cache once its kind has
/// listed, else from the API server (a cache that has not listed hides nothing).
pub async fn live<P: SyncPair>(
    ctx: &SyncContext<P>,
    desired: &DynamicObject,
) -> Result<Option<Arc<DynamicObject>>, HookError> {
    Ok(tracker(ctx)?.get(&reference_to(desired)?).await?)
}

/// `object` as an infrastructure reference: its `apiVersion`, `kind` and name, read as a
/// CAPI object's v1beta1-style reference is.
fn reference_to(object: &DynamicObject) -> Result<InfraRef, HookError> {
    let types = object.types.as_ref();
    let reference = ObjectReference {
        api_version: types.map(|t| t.api_version.clone()),
        kind: types.map(|t| t.kind.clone()),
        name: Some(object.name_any()),
        ..ObjectReference::default()
    };
    reference
        .as_infra_ref()?
        .ok_or_else(|| "infrastructure object without apiVersion, kind or name".into())
}

fn tracker<P: SyncPair>(ctx: &SyncContext<P>) -> Result<&InfraTracker, HookError> {
    ctx.infra
        .as_ref()
        .ok_or_else(|| format!("{} runs without infrastructure tracking", P::NAME).into())
}
