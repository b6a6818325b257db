//! What a hook is given: the direction of the sync and the objects fetched for one name.

use std::sync::Arc;

use kube::Resource;

use crate::api::{InfraRef, MalformedRef};
use crate::pair::SyncPair;
use crate::runtime::infra::InfraObject;

/// Which way a reconcile copies: from the authoritative side to its mirror.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The Machine API is authoritative; the CAPI object mirrors it.
    MapiToCapi,
    /// Cluster API is authoritative; the MAPI object mirrors it.
    CapiToMapi,
}

impl Direction {
    /// `mapi_to_capi` / `capi_to_mapi`, for logs and metric labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MapiToCapi => "mapi_to_capi",
            Self::CapiToMapi => "capi_to_mapi",
        }
    }
}

impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The objects one reconcile fetched from the caches, for one name.
#[derive(Debug)]
pub struct SyncObjects<P: SyncPair> {
    /// The name reconciled (the same on both sides).
    pub name: String,
    /// The MAPI object, `None` when it does not exist.
    pub mapi: Option<Arc<P::Mapi>>,
    /// The CAPI object, `None` when it does not exist.
    pub capi: Option<Arc<P::Capi>>,
    /// The CAPI object's infrastructure reference: `None` without a CAPI object or
    /// reference, `Some(Err)` when the reference is malformed.
    pub infra_ref: Option<Result<InfraRef, MalformedRef>>,
    /// The referenced infrastructure object as cached, when its kind is watched and it
    /// exists (whole, or metadata only: see [`crate::runtime::infra::InfraCache`]);
    /// [`SyncContext::infra_object`](crate::SyncContext::infra_object) falls back to the API server.
    pub infra: Option<Arc<InfraObject>>,
}

impl<P: SyncPair> Clone for SyncObjects<P> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            mapi: self.mapi.clone(),
            capi: self.capi.clone(),
            infra_ref: self.infra_ref.clone(),
            infra: self.infra.clone(),
        }
    }
}

impl<P: SyncPair> SyncObjects<P> {
    /// The usable infrastructure reference, if there is one.
    pub fn infra_ref(&self) -> Option<&InfraRef> {
        self.infra_ref.as_ref()?.as_ref().ok()
    }

    /// The object Events about the pair go to: the MAPI object, else the CAPI one.
    pub fn event_target(&self) -> Option<k8s_openapi::api::core::v1::ObjectReference> {
        match (&self.mapi, &self.capi) {
            (Some(mapi), _) => Some(mapi.object_ref(&())),
            (None, Some(capi)) => Some(capi.object_ref(&())),
            (None, None) => None,
        }
    }

    /// The object being deleted (`metadata.deletionTimestamp` set), MAPI first.
    pub fn deleting(&self) -> Option<Deleting<'_, P>> {
        if let Some(mapi) = self
            .mapi
            .as_deref()
            .filter(|o| o.meta().deletion_timestamp.is_some())
        {
            return Some(Deleting::Mapi(mapi));
        }
        self.capi
            .as_deref()
            .filter(|o| o.meta().deletion_timestamp.is_some())
            .map(Deleting::Capi)
    }
}

/// The side of a pair that is being deleted.
#[derive(Debug)]
pub enum Deleting<'a, P: SyncPair> {
    /// The MAPI object has a deletion timestamp.
    Mapi(&'a P::Mapi),
    /// The CAPI object has a deletion timestamp (and the MAPI one has not).
    Capi(&'a P::Capi),
}
