//! What every simulated controller shares: the client and namespaces, its field manager,
//! optimistic merge patches, finalizer edits, and the error policy (conflicts and
//! failures are retried with per-object exponential backoff; NotFound means "gone, done").

use std::collections::HashMap;
use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sync_core::Namespaces;
use sync_core::api::GroupKind;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use super::Reconciled;
use super::instance::Cloud;
use super::scaling::SelectorError;

/// The first retry delay after a failure; it doubles per failure of the same object.
const FIRST_RETRY: Duration = Duration::from_millis(50);
/// The longest retry delay.
const MAX_RETRY: Duration = Duration::from_secs(30);

/// What all the simulated controllers are given.
#[derive(Clone)]
pub(super) struct Shared {
    pub client: Client,
    pub namespaces: Namespaces,
    pub cloud: Cloud,
    /// Where finished reconciles are reported, if anywhere.
    pub observer: Option<UnboundedSender<Reconciled>>,
    /// Infrastructure kinds already resolved to their resource.
    resources: Arc<Mutex<HashMap<GroupKind, ApiResource>>>,
}

impl Shared {
    pub fn new(
        client: Client,
        namespaces: Namespaces,
        cloud: Cloud,
        observer: Option<UnboundedSender<Reconciled>>,
    ) -> Self {
        Self {
            client,
            namespaces,
            cloud,
            observer,
            resources: Arc::default(),
        }
    }

    /// An infrastructure kind's resource, its version resolved as the sync resolves it
    /// (the CRD's contract label, else the preferred version).
    pub async fn infra_resource(&self, group: &str, kind: &str) -> Result<ApiResource, Error> {
        let group_kind = GroupKind {
            group: group.to_owned(),
            kind: kind.to_owned(),
        };
        if let Some(resource) = self
            .resources
            .lock()
            .ok()
            .and_then(|r| r.get(&group_kind).cloned())
        {
            return Ok(resource);
        }
        // The version the sync reads and writes (what the provider's webhook would convert).
        let pinned = crate::platform::infra_versions().remove(&group_kind);
        let resource = sync_core::infra::resolve(&self.client, &group_kind, pinned.as_deref())
            .await
            .map_err(|e| Error::Invalid(e.to_string()))?;
        if let Ok(mut resources) = self.resources.lock() {
            resources.insert(group_kind, resource.clone());
        }
        Ok(resource)
    }

    /// The API of an infrastructure kind in the CAPI namespace.
    pub async fn infra_api(&self, group: &str, kind: &str) -> Result<Api<DynamicObject>, Error> {
        let resource = self.infra_resource(group, kind).await?;
        Ok(Api::namespaced_with(
            self.client.clone(),
            &self.namespaces.capi,
            &resource,
        ))
    }
}

/// One controller's context: the shared parts, its field manager and its retry state.
pub(super) struct Ctx {
    pub shared: Shared,
    /// The field manager of every write this controller makes.
    pub manager: &'static str,
    retries: Retries,
}

impl Ctx {
    pub fn new(shared: Shared, manager: &'static str) -> Arc<Self> {
        Arc::new(Self {
            shared,
            manager,
            retries: Retries::default(),
        })
    }

    pub fn client(&self) -> Client {
        self.shared.client.clone()
    }

    fn params(&self) -> PatchParams {
        PatchParams {
            field_manager: Some(self.manager.to_owned()),
            ..PatchParams::default()
        }
    }

    /// Merge-patches the object (main resource), conditional on `resource_version`.
    pub async fn patch<K>(&self, api: &Api<K>, object: &K, mut patch: Value) -> Result<(), Error>
    where
        K: Resource + Clone + DeserializeOwned + Debug,
    {
        lock(&mut patch, object);
        quiet_not_found(
            api.patch(&object.name_any(), &self.params(), &Patch::Merge(&patch))
                .await,
        )
    }

    /// Merge-patches the object's status subresource, conditional on `resource_version`.
    pub async fn patch_status<K>(&self, api: &Api<K>, object: &K, status: Value) -> Result<(), Error>
    where
        K: Resource + Clone + DeserializeOwned + Debug,
    {
        let mut patch = json!({ "status": status });
        lock(&mut patch, object);
        quiet_not_found(
            api.patch_status(&object.name_any(), &self.params(), &Patch::Merge(&patch))
                .await,
        )
    }

    /// Adds `finalizer` (keeping every other one).
    pub async fn add_finalizer<K>(&self, api: &Api<K>, object: &K, finalizer: &str) -> Result<(), Error>
    where
        K: Resource + Clone + DeserializeOwned + Debug,
    {
        let mut finalizers = object.finalizers().to_vec();
        finalizers.push(finalizer.to_owned());
        self.patch(api, object, json!({ "metadata": { "finalizers": finalizers } }))
            .await
    }

    /// Removes `finalizer` (keeping every other one).
    pub async fn remove_finalizer<K>(&self, api: &Api<K>, object: &K, finalizer: &str) -> Result<(), Error>
    where
        K: Resource + Clone + DeserializeOwned + Debug,
    {
        let finalizers: Vec<&String> = object.finalizers().iter().filter(|f| *f != finalizer).collect();
        self.patch(api, object, json!({ "metadata": { "finalizers": finalizers } }))
            .await
    }
}

/// Per-object retry delays: doubling from [`FIRST_RETRY`] with each failure of the same
/// object, capped at [`MAX_RETRY`], forgotten on its next success.
#[derive(Default)]
struct Retries(Mutex<HashMap<String, u32>>);

impl Retries {
    fn next_delay(&self, name: &str) -> Duration {
        let attempt = self
            .0
            .lock()
            .map(|mut failures| {
                let count = failures.entry(name.to_owned()).or_insert(0);
                *count = count.saturating_add(1);
                *count
            })
            .unwrap_or(1);
        FIRST_RETRY
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1).min(16)))
            .min(MAX_RETRY)
    }

    fn succeeded(&self, name: &str) {
        if let Ok(mut failures) = self.0.lock() {
            failures.remove(name);
        }
    }
}

/// Sets `metadata.resourceVersion` in the patch: the server refuses it with a conflict if
/// the object changed since it was read.
fn lock<K: Resource>(patch: &mut Value, object: &K) {
    if let (Some(map), Some(rv)) = (patch.as_object_mut(), object.resource_version()) {
        let metadata = map.entry("metadata").or_insert_with(|| json!({}));
        metadata["resourceVersion"] = Value::String(rv);
    }
}

fn quiet_not_found<T>(result: Result<T, kube::Error>) -> Result<(), Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
        Err(error) => Err(Error::Kube(error)),
    }
}

/// A reconcile failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum Error {
    /// The API server refused or failed a request (409 Conflict included).
    #[error(transparent)]
    Kube(#[from] kube::Error),
    /// The object cannot be handled as it is (retried: another writer may fix it).
    #[error("{0}")]
    Invalid(String),
    /// A MachineSet's selector cannot be used (retried as [`Error::Invalid`] is).
    #[error(transparent)]
    Selector(#[from] SelectorError),
}

impl Error {
    fn is_conflict(&self) -> bool {
        matches!(self, Self::Kube(kube::Error::Api(status)) if status.code == 409)
    }
}

/// Runs `controller` with `reconcile` until `shutdown`, logging outcomes: conflicts at debug
/// level (they are the normal price of optimistic writes), other failures as warnings.
pub(super) async fn run<K, F, Fut>(
    controller: Controller<K>,
    ctx: Arc<Ctx>,
    reconcile: F,
    shutdown: CancellationToken,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Debug + Eq + Hash + Clone + Unpin,
    F: Fn(Arc<K>, Arc<Ctx>) -> Fut + Send + Sync + Clone + 'static,
    Fut: Future<Output = Result<Action, Error>> + Send + 'static,
{
    let manager = ctx.manager;
    let wrapped = move |object: Arc<K>, ctx: Arc<Ctx>| {
        let reconcile = reconcile.clone();
        async move {
            let name = object.name_any();
            let resource_version = object.resource_version().unwrap_or_default();
            let result = reconcile(object, ctx.clone()).await;
            if result.is_ok() {
                ctx.retries.succeeded(&name);
                if let Some(observer) = &ctx.shared.observer {
                    // A closed receiver only means nobody listens any more.
                    let _ = observer.send(Reconciled {
                        controller: ctx.manager,
                        name,
                        resource_version,
                    });
                }
            }
            result
        }
    };
    // kube-runtime holds its runner until the cache is ready, and a graceful shutdown
    // before the first list completes would then wait forever: stop at once in that case
    // (nothing has been reconciled, so there is nothing to finish).
    let store = controller.store();
    let stopped = shutdown.clone();
    let unready_at_shutdown = async move {
        stopped.cancelled().await;
        if store.wait_until_ready().now_or_never().is_none() {
            return;
        }
        std::future::pending::<()>().await;
    };
    let running = controller
        .graceful_shutdown_on(async move { shutdown.cancelled().await })
        .run(wrapped, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(error) = result {
                log_failure(manager, &error);
            }
        });
    tokio::select! {
        () = running => {}
        () = unready_at_shutdown => {}
    }
}

fn error_policy<K: Resource>(object: Arc<K>, error: &Error, ctx: Arc<Ctx>) -> Action {
    let delay = ctx.retries.next_delay(&object.name_any());
    if error.is_conflict() {
        tracing::debug!(controller = ctx.manager, name = %object.name_any(), ?delay, "conflict; retrying");
    } else {
        tracing::warn!(controller = ctx.manager, name = %object.name_any(), %error, ?delay, "reconcile failed; retrying");
    }
    Action::requeue(delay)
}

fn log_failure(
    manager: &str,
    error: &kube::runtime::controller::Error<Error, kube::runtime::watcher::Error>,
) {
    use kube::runtime::controller::Error as ControllerError;
    match error {
        // Reported by the error policy already.
        ControllerError::ReconcilerFailed(..) => {}
        ControllerError::ObjectNotFound(object) => {
            tracing::debug!(controller = manager, %object, "object gone before its reconcile")
        }
        other => tracing::warn!(controller = manager, error = %other, "controller error"),
    }
}

/// The controller owner reference's name, if `object` has one of the given kind and group.
pub(super) fn controller_owner<K: Resource>(object: &K, api_group: &str, kind: &str) -> Option<String> {
    object
        .owner_references()
        .iter()
        .find(|owner| {
            owner.controller == Some(true)
                && owner.kind == kind
                && owner.api_version.split('/').next() == Some(api_group)
        })
        .map(|owner| owner.name.clone())
}

/// Whether `object` carries `cluster.x-k8s.io/paused`.
pub(super) fn has_paused_annotation<K: Resource>(object: &K) -> bool {
    object.annotations().contains_key(super::PAUSED_ANNOTATION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_per_object_up_to_a_cap_and_reset_on_success() {
        let retries = Retries::default();
        let delays: Vec<Duration> = (0..4).map(|_| retries.next_delay("a")).collect();
        assert_eq!(delays, [50, 100, 200, 400].map(Duration::from_millis).to_vec());
        assert_eq!(
            retries.next_delay("b"),
            FIRST_RETRY,
            "another object starts afresh"
        );
        for _ in 0..30 {
            retries.next_delay("a");
        }
        assert_eq!(retries.next_delay("a"), MAX_RETRY);
        retries.succeeded("a");
        assert_eq!(retries.next_delay("a"), FIRST_RETRY);
    }
}
