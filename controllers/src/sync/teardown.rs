//! The writes of a pair's teardown: deleting the other side, stripping finalizers.
//!
//! The order is the hooks' business (each pair's deletion table); these helpers make each
//! step idempotent, so that a teardown interrupted anywhere resumes on the next event.

use kube::api::{Api, DeleteParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;

/// Deletes `object` unless it is already being deleted; a gone object is success.
pub async fn delete<K>(api: &Api<K>, object: &K) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    if object.meta().deletion_timestamp.is_some() {
        return Ok(());
    }
    let params = DeleteParams {
        preconditions: object.uid().map(|uid| kube::api::Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&object.name_any(), &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(error) => Err(error),
    }
}

/// Whether `object` still carries a finalizer `matches` selects.
pub fn holds<K: Resource>(object: &K, matches: impl Fn(&str) -> bool) -> bool {
    object.meta().finalizers.iter().flatten().any(|f| matches(f))
}
