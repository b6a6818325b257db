//! The hooks of both pairs on one platform, and the steps every hook shares: convert or
//! report the failure, refuse with a report, apply the CAPI mirror, and the mirror's pause
//! and finalizer.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::Api;
use kube::{Resource, ResourceExt};
use sync_core::hooks::{Step, Stop, SyncObjects};
use sync_core::toolkit::{Applied, Part, apply, pause, report};
use sync_core::{SyncContext, SyncPair};

use super::owners::MirroredSets;
use super::{Cluster, Platform, drift};

/// The Machine and MachineSet hooks of one platform: its conversion, the cluster, and
/// where Machines read the CAPI MachineSets that own them.
#[derive(Clone)]
pub struct PlatformHooks {
    /// The platform's conversion.
    pub platform: Arc<dyn Platform>,
    /// The cluster.
    pub cluster: Arc<Cluster>,
    /// The MachineSet sync's CAPI MachineSets, to read Machines' owners from and wait
    /// for them in (`None`: read them from the API server, poll for a missing one); see
    /// [`PlatformHooks::with_capi_sets`].
    pub capi_sets: Option<MirroredSets>,
}

impl PlatformHooks {
    /// The hooks of `platform` in `cluster`, reading owners from the API server.
    pub fn new(platform: Arc<dyn Platform>, cluster: Arc<Cluster>) -> Self {
        Self {
            platform,
            cluster,
            capi_sets: None,
        }
    }

    /// Reads the CAPI MachineSets that own Machines from the MachineSet sync's cache
    /// instead of one GET per reconcile (a set the cache does not hold yet is still read
    /// live), and has a Machine whose set does not exist yet wait for its watch to
    /// report it rather than poll.
    #[must_use]
    pub fn with_capi_sets(mut self, sets: MirroredSets) -> Self {
        self.capi_sets = Some(sets);
        self
    }
}

/// What a hook reports a failure under: its controller (the field manager) and the
/// condition reason.
#[derive(Clone, Copy, Debug)]
pub struct Failure<'a> {
    /// The controller writing the report.
    pub controller: &'a str,
    /// The `Synchronized=False` reason (`FailedToConvertMAPIMachineToCAPI`, …).
    pub reason: &'a str,
}

/// The conversion's value, its warnings published as `ConversionWarning` Events on `on`;
/// or the failure reported (`Synchronized=False`, a Warning Event) and the hook stopped
/// until a change: retrying cannot fix a conversion error.
pub async fn converted<P: SyncPair, T>(
    ctx: &SyncContext<P>,
    objects: &SyncObjects<P>,
    failure: Failure<'_>,
    on: ObjectReference,
    conversion: conversion::ConversionResult<T>,
) -> Step<T> {
    match conversion {
        Ok(converted) => {
            for warning in &converted.warnings {
                ctx.warn(&on, "ConversionWarning", warning.to_string()).await;
            }
            Ok(converted.value)
        }
        Err(error) => Err(refuse(ctx, objects, failure, error).await),
    }
}

/// Reports `message` as the hook's failure and stops the hook until a change.
pub async fn refuse<P: SyncPair>(
    ctx: &SyncContext<P>,
    objects: &SyncObjects<P>,
    failure: Failure<'_>,
    message: impl std::fmt::Display,
) -> Stop {
    match report::fail(ctx, failure.controller, objects, failure.reason, message).await {
        Ok(action) => Stop::Done(action),
        Err(error) => Stop::Failed(error),
    }
}

/// Applies `desired`, the CAPI mirror of `mapi`, under `controller` (the spec fields
/// another writer added reverted first, [`drift::revert_added_fields`]); the live mirror
/// after the write.
pub async fn apply_capi_mirror<P: SyncPair>(
    ctx: &SyncContext<P>,
    api: &Api<P::Capi>,
    controller: &str,
    mapi: &P::Mapi,
    objects: &SyncObjects<P>,
    desired: P::Capi,
) -> Step<P::Capi> {
    let kind = P::Mapi::kind(&());
    let source = format!(
        "the MachineAPI {kind} {}/{}",
        ctx.namespaces.mapi,
        mapi.name_any()
    );
    let live = objects.capi.as_deref();
    let reverted = drift::revert_added_fields(ctx, api, controller, live, &desired, &source).await?;
    let live = reverted.as_ref().or(live);
    Ok(
        match apply(api, controller, live, &desired, Part::Object).await? {
            Applied::Written(written) => *written,
            Applied::Unchanged => live.cloned().unwrap_or(desired),
        },
    )
}

/// Sets or removes the paused annotation of a mirror (paused: its own controller must not
/// act while the other API drives).
pub fn set_paused(annotations: &mut Option<BTreeMap<String, String>>, paused: bool) {
    let map = annotations.get_or_insert_with(BTreeMap::new);
    pause::set_paused(map, paused);
}

/// Adds `finalizer` to a desired object's list unless it is there.
pub fn add_finalizer(list: &mut Option<Vec<String>>, finalizer: &str) {
    let list = list.get_or_insert_with(Vec::new);
    if !list.iter().any(|f| f == finalizer) {
        list.push(finalizer.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mirror_is_paused_and_unpaused_by_its_annotation() {
        let mut annotations = None;
        set_paused(&mut annotations, true);
        assert!(
            annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(pause::PAUSED_ANNOTATION))
        );
        set_paused(&mut annotations, false);
        assert!(annotations.is_some_and(|a| !a.contains_key(pause::PAUSED_ANNOTATION)));
    }

    #[test]
    fn the_sync_finalizer_is_added_once() {
        let mut list = Some(vec!["other".to_owned()]);
        add_finalizer(&mut list, "sync");
        add_finalizer(&mut list, "sync");
        assert_eq!(list, Some(vec!["other".to_owned(), "sync".to_owned()]));
    }
}
