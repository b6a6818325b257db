//! The hooks a synced pair's business logic plugs into, and their stub defaults.
//!
//! Every method has a working default (a debug log and "wait for the next change"), so a
//! declaration alone yields a running controller. Overriding a method is an ordinary,
//! type-checked trait impl; nothing generated has to be touched.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kube::{Resource, ResourceExt};

use crate::api::{InfraRef, MalformedRef};
use crate::context::SyncContext;
use crate::infra::InfraObject;
use crate::pair::SyncPair;

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

/// What the controller does next with a name after a hook returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Reconcile the name again after `duration`, even if nothing changes.
    pub const fn requeue(duration: Duration) -> Self {
        Self {
            requeue_after: Some(duration),
        }
    }

    /// Reconcile the name again only when a watched object changes.
    pub const fn await_change() -> Self {
        Self { requeue_after: None }
    }

    /// The requested delay, if any.
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// The error a hook returns; the name is retried with backoff. Any error type converts
/// with `?`.
pub type HookError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What a hook returns.
pub type HookResult = Result<Action, HookError>;

/// A write refused because the object changed since the hook read it (a stale cache):
/// retried with backoff like any error, but expected, so logged at debug level rather
/// than as a failure.
#[derive(Debug, thiserror::Error)]
#[error("{what} changed since it was read; retrying on fresh data")]
pub struct StaleRead {
    /// What changed (`finalizers of openshift-machine-api/worker-1`).
    pub what: String,
    /// The API server's answer.
    #[source]
    pub source: kube::Error,
}

/// Whether `error` only says the hook read stale data: a [`StaleRead`], or a 409 Conflict
/// from the API server (a resourceVersion precondition), anywhere in its source chain.
pub fn is_stale_read(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(error) = next {
        if error.is::<StaleRead>() {
            return true;
        }
        if let Some(kube::Error::Api(status)) = error.downcast_ref::<kube::Error>()
            && status.code == 409
        {
            return true;
        }
        next = error.source();
    }
    false
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
    /// exists (whole, or metadata only: see [`crate::infra::InfraCache`]);
    /// [`SyncContext::infra_object`] falls back to the API server.
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

/// The business logic of a synced pair.
///
/// `#[sync_controller]` implements this trait with the stubs for the declared type unless
/// told `custom_hooks`; then write `impl SyncHooks<MyPair> for MyPair { … }` and override
/// what you need. Any other type can carry hooks too (tests use a recording one) and is
/// passed to [`crate::SyncController::run`].
pub trait SyncHooks<P: SyncPair>: Send + Sync + 'static {
    /// Machine API is authoritative: make the CAPI side mirror `objects.mapi`.
    fn reconcile_mapi_to_capi(
        &self,
        objects: &SyncObjects<P>,
        ctx: &SyncContext<P>,
    ) -> impl Future<Output = HookResult> + Send {
        stub(Direction::MapiToCapi, objects, ctx)
    }

    /// Cluster API is authoritative: make the MAPI side mirror `objects.capi` (which may
    /// mean creating it: `objects.mapi` is `None` for a CAPI-only Machine).
    fn reconcile_capi_to_mapi(
        &self,
        objects: &SyncObjects<P>,
        ctx: &SyncContext<P>,
    ) -> impl Future<Output = HookResult> + Send {
        stub(Direction::CapiToMapi, objects, ctx)
    }

    /// One of the objects is being deleted; `direction` is the authoritative one. A
    /// CAPI-only object being deleted comes here too (`CapiToMapi`, `objects.mapi` is
    /// `None`), whatever the CAPI-only policy, so that the pair can release its finalizer
    /// once the MAPI side is gone; release only your own (`docs/design.md` §5).
    fn reconcile_deletion(
        &self,
        direction: Direction,
        objects: &SyncObjects<P>,
        ctx: &SyncContext<P>,
    ) -> impl Future<Output = HookResult> + Send {
        stub(direction, objects, ctx)
    }
}

/// The stub every hook defaults to: log at debug level (with the resourceVersions it
/// saw, so a test of a separate process can tell which change reached it), wait for the
/// next change.
pub async fn stub<P: SyncPair>(
    direction: Direction,
    objects: &SyncObjects<P>,
    ctx: &SyncContext<P>,
) -> HookResult {
    tracing::debug!(
        controller = P::NAME,
        name = %objects.name,
        %direction,
        mapi = objects.mapi.as_ref().map(|o| o.name_any()).as_deref(),
        capi = objects.capi.as_ref().map(|o| o.name_any()).as_deref(),
        mapi_resource_version = objects.mapi.as_ref().and_then(|o| o.meta().resource_version.as_deref()),
        capi_resource_version = objects.capi.as_ref().and_then(|o| o.meta().resource_version.as_deref()),
        capi_namespace = %ctx.namespaces.capi,
        "stub hook: no sync logic yet"
    );
    Ok(Action::await_change())
}

#[cfg(test)]
mod stale_read_tests {
    use super::*;

    fn api_error(code: u16) -> kube::Error {
        kube::Error::Api(kube::core::Status::failure("m", "r").with_code(code).boxed())
    }

    #[derive(Debug, thiserror::Error)]
    #[error("wrapped")]
    struct Wrapped(#[source] kube::Error);

    #[test]
    fn conflicts_and_stale_reads_are_told_from_failures() {
        let stale: HookError = Box::new(StaleRead {
            what: "x".into(),
            source: api_error(422),
        });
        assert!(is_stale_read(stale.as_ref()));
        let conflict: HookError = Box::new(api_error(409));
        assert!(is_stale_read(conflict.as_ref()));
        let wrapped: HookError = Box::new(Wrapped(api_error(409)));
        assert!(is_stale_read(wrapped.as_ref()));
        for failure in [api_error(422), api_error(500), api_error(403)] {
            let failure: HookError = Box::new(failure);
            assert!(!is_stale_read(failure.as_ref()));
        }
        let other: HookError = "no".into();
        assert!(!is_stale_read(other.as_ref()));
    }
}
