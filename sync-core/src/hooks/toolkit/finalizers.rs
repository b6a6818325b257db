//! Finalizers: add one, remove one, remove one only once another is gone.
//!
//! Both writes are JSON patches that test the list first (as kube-runtime's finalizer
//! helper does): the API server does not deduplicate finalizers, and a stale cache must
//! not overwrite a finalizer another controller just added. A failed test is a 422 —
//! [`crate::StaleRead`]: the reconcile is retried on fresher data.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, TestOperation};
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::patch::Part;
use crate::hooks::StaleRead;

/// The finalizer the sync controllers keep on both sides of a pair (and on the
/// InfraMachine): the mirror must not disappear before the sync has seen the deletion.
pub const SYNC_FINALIZER: &str = "sync.machine.openshift.io/finalizer";

/// Why a finalizer write failed.
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError {
    /// The object's finalizers changed, or it began deleting (no finalizer may be added
    /// then), since it was read: the test of the patch failed with a 422.
    #[error("{0}")]
    Stale(#[from] StaleRead),
    /// Any other failure.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// Sends a finalizer patch (a test, then the change). A 422 can only be the failed test
/// (or a finalizer added to an object being deleted), so it is a stale read.
async fn send<K>(api: &Api<K>, object: &K, ops: Vec<PatchOperation>) -> Result<bool, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let result = super::patch::patch_unread(
        api,
        Part::Object,
        &object.name_any(),
        &PatchParams::default(),
        &Patch::<()>::Json(json_patch::Patch(ops)),
    )
    .await;
    match result {
        Ok(()) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 422 => Err(StaleRead {
            what: format!(
                "the finalizers of {}/{}",
                object.namespace().unwrap_or_default(),
                object.name_any()
            ),
            source: kube::Error::Api(status),
        }
        .into()),
        Err(error) => Err(error.into()),
    }
}

/// A removal from an object that is gone did what was asked.
fn gone_is_done(answer: Result<bool, FinalizerError>) -> Result<bool, FinalizerError> {
    match answer {
        Err(FinalizerError::Api(kube::Error::Api(status))) if status.is_not_found() => Ok(false),
        other => other,
    }
}

/// Whether `object` carries `finalizer`.
pub fn has<K: Resource>(object: &K, finalizer: &str) -> bool {
    object.meta().finalizers.iter().flatten().any(|f| f == finalizer)
}

/// Adds `finalizer` to `object` unless it is there. `Ok(true)`: it was added; the caller
/// ends its reconcile there (the write's own event starts the next one, on fresh data).
pub async fn ensure<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<bool, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    if has(object, finalizer) {
        return Ok(false);
    }
    let current = object.finalizers();
    let ops = if current.is_empty() {
        vec![
            test("/metadata/finalizers", serde_json::Value::Null),
            add("/metadata/finalizers", vec![finalizer].into()),
        ]
    } else {
        vec![
            test("/metadata/finalizers", current.into()),
            add("/metadata/finalizers/-", finalizer.into()),
        ]
    };
    send(api, object, ops).await
}

/// Removes `finalizer` from `object`. `Ok(true)`: it was removed; `Ok(false)`: it was not
/// there, or the object is already gone (NotFound is success: what was asked is true).
pub async fn release<K>(api: &Api<K>, object: &K, finalizer: &str) -> Result<bool, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let Some(index) = object.finalizers().iter().position(|f| f == finalizer) else {
        return Ok(false);
    };
    let path = format!("/metadata/finalizers/{index}");
    let ops = vec![
        test(&path, finalizer.into()),
        PatchOperation::Remove(RemoveOperation { path: pointer(&path) }),
    ];
    gone_is_done(send(api, object, ops).await)
}

/// Removes every finalizer `strip` matches from `object` in one write (a mirror whose own
/// controller is paused: nobody else will remove them). `Ok(true)`: some were removed;
/// a gone object is success.
pub async fn release_matching<K>(
    api: &Api<K>,
    object: &K,
    strip: impl Fn(&str) -> bool,
) -> Result<bool, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let current = object.finalizers();
    let kept: Vec<&str> = current.iter().map(String::as_str).filter(|f| !strip(f)).collect();
    if kept.len() == current.len() {
        return Ok(false);
    }
    let ops = vec![
        test("/metadata/finalizers", current.into()),
        PatchOperation::Replace(json_patch::ReplaceOperation {
            path: pointer("/metadata/finalizers"),
            value: kept.into(),
        }),
    ];
    gone_is_done(send(api, object, ops).await)
}

/// What [`release_after`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// The finalizer is not (or no longer) on the object.
    Released,
    /// `blocker` is still there: nothing was written; wait for its removal.
    Waiting,
}

/// Removes `finalizer` from `object` only once no finalizer matching `blocker` remains on
/// `gate` (the same object or another): the order of teardown between controllers.
pub async fn release_after<K, G>(
    api: &Api<K>,
    object: &K,
    finalizer: &str,
    gate: Option<&G>,
    blocker: impl Fn(&str) -> bool,
) -> Result<Release, FinalizerError>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    G: Resource,
{
    if gate.is_some_and(|gate| gate.meta().finalizers.iter().flatten().any(|f| blocker(f))) {
        return Ok(Release::Waiting);
    }
    release(api, object, finalizer).await?;
    Ok(Release::Released)
}

fn pointer(path: &str) -> PointerBuf {
    PointerBuf::parse(path).unwrap_or_default()
}

fn test(path: &str, value: serde_json::Value) -> PatchOperation {
    PatchOperation::Test(TestOperation {
        path: pointer(path),
        value,
    })
}

fn add(path: &str, value: serde_json::Value) -> PatchOperation {
    PatchOperation::Add(AddOperation {
        path: pointer(path),
        value,
    })
}
