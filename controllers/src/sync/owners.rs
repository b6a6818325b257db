//! Owner references across the two APIs, and the owners a conversion cannot express.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::reflector::ObjectRef;
use kube::{Resource, ResourceExt};
use sync_core::SyncContext;
use sync_core::api::{capi, mapi};
use sync_core::decision::api_group;
use sync_core::store::Store;

use super::Cluster;
use crate::machine::MachineSync;

/// Why no owner reference can be given (yet).
#[derive(Debug)]
pub enum OwnerError {
    /// The owner cannot be converted: a field error, not retried.
    Unsupported(String),
    /// The owner's mirror does not exist yet.
    Waiting(String),
    /// Reading the owner failed.
    Api(kube::Error),
}

/// A controller owner reference to `owner` (`blockOwnerDeletion`, as garbage collection
/// of dependents expects).
pub fn controller_ref<K: Resource<DynamicType = ()>>(owner: &K) -> OwnerReference {
    OwnerReference {
        controller: Some(true),
        block_owner_deletion: Some(true),
        ..owner.controller_owner_ref(&()).unwrap_or_default()
    }
}

/// Where the CAPI MachineSets that own CAPI Machines are read.
#[derive(Clone)]
pub struct CapiSets {
    /// Reads what the cache does not hold.
    pub api: Api<capi::MachineSet>,
    /// The CAPI namespace.
    pub namespace: String,
    /// The MachineSet controller's CAPI cache, when it runs in the same process.
    pub cache: Option<Store<capi::MachineSet>>,
}

impl CapiSets {
    /// The CAPI MachineSet `name`: from the cache, else (not cached yet, or no cache) from
    /// the API server, so that a set the cache has not seen yet is never taken as missing.
    pub async fn get(&self, name: &str) -> Result<Option<Arc<capi::MachineSet>>, kube::Error> {
        if let Some(set) = self
            .cache
            .as_ref()
            .and_then(|store| store.get(&ObjectRef::new(name).within(&self.namespace)))
        {
            return Ok(Some(set));
        }
        Ok(self.api.get_opt(name).await?.map(Arc::new))
    }
}

/// The owner of a CAPI Machine mirroring `mapi`: the same-name CAPI MachineSet when a
/// MAPI MachineSet owns it, else the CAPI `Cluster` (when it exists).
pub async fn capi_owner_of_mapi_machine(
    mapi: &mapi::Machine,
    capi_sets: &CapiSets,
    cluster: &Cluster,
    ctx: &SyncContext<MachineSync>,
) -> Result<Option<OwnerReference>, OwnerError> {
    match mapi.owner_references() {
        [] => cluster_owner(ctx, cluster).await.map_err(OwnerError::Api),
        [owner] if owner.kind == "MachineSet" && api_group(&owner.api_version) == mapi::GROUP => {
            match capi_sets.get(&owner.name).await.map_err(OwnerError::Api)? {
                Some(set) => Ok(Some(controller_ref(set.as_ref()))),
                None => Err(OwnerError::Waiting(format!("CAPI MachineSet {} does not exist yet", owner.name))),
            }
        }
        [owner] if owner.kind == "ControlPlaneMachineSet" => Err(OwnerError::Unsupported(
            "metadata.ownerReferences: conversion of control plane machines owned by control plane machine set is currently not supported"
                .into(),
        )),
        [owner] => Err(OwnerError::Unsupported(format!(
            "metadata.ownerReferences: owner kind {} {} is not supported for conversion",
            owner.api_version, owner.kind
        ))),
        more => Err(OwnerError::Unsupported(format!(
            "metadata.ownerReferences: must have at most 1 item, has {}",
            more.len()
        ))),
    }
}

/// A CAPI Machine converts when it has at most one owner: its MachineSet or the Cluster.
pub fn check_capi_machine_owners(machine: &capi::Machine) -> Result<(), String> {
    match machine.owner_references() {
        [] => Ok(()),
        [owner]
            if api_group(&owner.api_version) == capi::GROUP
                && matches!(owner.kind.as_str(), "MachineSet" | "Cluster") =>
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

/// The owner of a MAPI Machine mirroring `machine`: the MAPI MachineSet mirroring its
/// CAPI MachineSet owner, when there is one.
pub fn mapi_owner_of_capi_machine(
    machine: &capi::Machine,
    ctx: &SyncContext<MachineSync>,
) -> Option<Vec<OwnerReference>> {
    let owner = machine
        .owner_references()
        .iter()
        .find(|o| o.kind == "MachineSet" && api_group(&o.api_version) == capi::GROUP)?;
    let store = ctx.caches.owner_mirrors.as_ref()?;
    let set =
        store.get(&kube::runtime::reflector::ObjectRef::new(&owner.name).within(&ctx.namespaces.mapi))?;
    Some(vec![controller_ref(set.as_ref())])
}

/// The CAPI `Cluster` named by the infrastructure name, as a non-controller owner; `None`
/// when the kind is not served or the object does not exist.
pub async fn cluster_owner<P: sync_core::SyncPair>(
    ctx: &SyncContext<P>,
    cluster: &Cluster,
) -> Result<Option<OwnerReference>, kube::Error> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(capi::GROUP, capi::VERSION, "Cluster"),
        "clusters",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(ctx.client.clone(), &ctx.namespaces.capi, &resource);
    match api.get_opt(&cluster.infrastructure_name).await {
        Ok(Some(object)) => Ok(Some(OwnerReference {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
            name: object.name_any(),
            uid: object.uid().unwrap_or_default(),
            controller: Some(false),
            block_owner_deletion: Some(true),
        })),
        Ok(None) => Ok(None),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(None),
        Err(error) => Err(error),
    }
}
