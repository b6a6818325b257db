//! A pair's infrastructure objects (InfraMachines, InfraMachineTemplates) through the
//! shared infrastructure tracker: the API of their kind, and the live object.

use std::sync::Arc;

use kube::ResourceExt;
use kube::api::{Api, ApiResource, DynamicObject};
use sync_core::api::GroupKind;
use sync_core::infra::InfraTracker;
use sync_core::{HookError, SyncContext, SyncPair};

/// The API of `object`'s kind (resolved by the tracker), and its resource.
pub async fn api<P: SyncPair>(
    ctx: &SyncContext<P>,
    object: &DynamicObject,
) -> Result<(Api<DynamicObject>, ApiResource), HookError> {
    let (group_kind, version) = kind_of(object)?;
    Ok(tracker(ctx)?.api(&group_kind, Some(version)).await?)
}

/// The live object `desired` names: from the infrastructure cache once its kind has
/// listed, else from the API server (a cache that has not listed hides nothing).
pub async fn live<P: SyncPair>(
    ctx: &SyncContext<P>,
    desired: &DynamicObject,
) -> Result<Option<Arc<DynamicObject>>, HookError> {
    let (group_kind, version) = kind_of(desired)?;
    Ok(tracker(ctx)?
        .get(&group_kind, Some(version), &desired.name_any())
        .await?)
}

/// The group, kind and version `object`'s `apiVersion` and `kind` name.
fn kind_of(object: &DynamicObject) -> Result<(GroupKind, &str), HookError> {
    let types = object.types.as_ref().ok_or_else(|| {
        format!(
            "infrastructure object {} without apiVersion/kind",
            object.name_any()
        )
    })?;
    let (group, version) = types
        .api_version
        .split_once('/')
        .unwrap_or(("", &types.api_version));
    let group_kind = GroupKind {
        group: group.to_owned(),
        kind: types.kind.clone(),
    };
    Ok((group_kind, version))
}

fn tracker<P: SyncPair>(ctx: &SyncContext<P>) -> Result<&InfraTracker, HookError> {
    ctx.infra
        .as_ref()
        .ok_or_else(|| format!("{} runs without infrastructure tracking", P::NAME).into())
}
