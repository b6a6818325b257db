//! Writes of `status.authoritativeAPI`, by the migration controllers only, under their
//! own field manager `<controller>-AuthoritativeAPI`.
//!
//! The manager owns `authoritativeAPI` alone, except in the final write of a migration,
//! which also resets the sync state (`synchronizedGeneration: 0`, `Synchronized=Unknown`
//! `AuthoritativeAPIChanged`): the new authority has not been mirrored yet. The sync takes
//! those back with its next `Synchronized=True` (its manager forces them), which the next
//! migration waits for, so the next write here, which names only `authoritativeAPI`, never
//! removes a field of theirs. (Nothing else may go into the final write: a field this
//! manager alone owns would be removed, or half removed, by its next write.)

use kube::Resource;
use kube::api::Api;
use serde_json::json;

use super::condition::{Report, apply_status, find};
use super::status::{SYNCHRONIZED, Status};
use crate::api::AuthoritativeApi;
use crate::pair::MapiObject;

/// The reason of `Synchronized=Unknown` after authority changed.
pub const AUTHORITY_CHANGED: &str = "AuthoritativeAPIChanged";

/// The field manager of `status.authoritativeAPI` for `controller`.
pub fn field_manager(controller: &str) -> String {
    format!("{controller}-AuthoritativeAPI")
}

/// Sets `status.authoritativeAPI` to `api` (`Migrating` to begin a migration, or the
/// request when the status had none) and nothing else.
pub async fn set<M>(
    api: &Api<M>,
    controller: &str,
    mapi: &M,
    value: &AuthoritativeApi,
) -> Result<(), kube::Error>
where
    M: MapiObject + Resource<DynamicType = ()>,
{
    apply_status(
        api,
        &field_manager(controller),
        mapi,
        json!({ "authoritativeAPI": value.as_str() }),
    )
    .await
}

/// The final write of a migration: `status.authoritativeAPI` = `to`, and the sync state
/// reset, in one server-side apply.
pub async fn complete<M>(
    api: &Api<M>,
    controller: &str,
    mapi: &M,
    to: &AuthoritativeApi,
) -> Result<(), kube::Error>
where
    M: MapiObject + Resource<DynamicType = ()>,
{
    let message = format!("authoritativeAPI changed to {to}; waiting for the first synchronization");
    let synchronized = Report {
        type_: SYNCHRONIZED,
        status: Status::Unknown,
        reason: AUTHORITY_CHANGED,
        message: &message,
    };
    let status = json!({
        "authoritativeAPI": to.as_str(),
        "synchronizedGeneration": 0,
        "conditions": [synchronized.to_json(find(mapi, SYNCHRONIZED))],
    });
    apply_status(api, &field_manager(controller), mapi, status).await
}
