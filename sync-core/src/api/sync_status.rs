//! The Machine API's sync-status block: the part of a MAPI object's `status` that the sync
//! and migration controllers read and write, identical on every MAPI kind.
//!
//! A MAPI kind embeds [`SyncStatus`] with `#[serde(flatten)]` (or uses it as its whole
//! status) and implements [`MapiStatus`]; it is then a [`crate::MapiObject`] with no
//! further code, and the wire names (`authoritativeAPI`, not `authoritativeApi`), the
//! `Migrating` value and the CRD's validation rules come from here, so they cannot be
//! wrong.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::KubeSchema;
use serde::{Deserialize, Serialize};

use super::authoritative::{AuthoritativeApi, status_authoritative_api_schema, synchronized_api_schema};
use super::schema::int64;

/// `status.authoritativeAPI`, `status.synchronizedAPI`, `status.synchronizedGeneration`
/// and `status.conditions` of a Machine API object, with the real CRDs' rules.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = kube::core::Rule::new("has(self.authoritativeAPI) || !has(oldSelf.authoritativeAPI)").message("authoritativeAPI is required once set"))]
pub struct SyncStatus {
    /// Conditions of the object (the sync controllers own `Synchronized`). A list-map
    /// keyed by `type`, as upstream: each controller applies only its own conditions.
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// The API that currently drives this object: selects the sync direction.
    /// `MachineAPI`, `ClusterAPI` or, while authority is handed over, `Migrating`.
    #[serde(default, rename = "authoritativeAPI", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "status_authoritative_api_schema")]
    pub authoritative_api: Option<AuthoritativeApi>,
    /// The API the last synchronization was made from (`MachineAPI` or `ClusterAPI`).
    #[serde(default, rename = "synchronizedAPI", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "synchronized_api_schema")]
    pub synchronized_api: Option<AuthoritativeApi>,
    /// The generation of the authoritative object last synchronized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "int64")]
    pub synchronized_generation: Option<i64>,
}

/// A MAPI status that carries the [`SyncStatus`] block.
///
/// Implemented by [`SyncStatus`] itself (for a kind whose status is only the block) and by
/// the MAPI statuses of [`crate::api::mapi`]; a new kind's status implements it in two
/// lines, returning its flattened field.
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not carry the Machine API sync-status block",
    note = "embed `sync_core::api::SyncStatus` with `#[serde(flatten)]` and implement `MapiStatus` returning it",
    note = "if `{Self}` is a Cluster API kind's status, `mapi` and `capi` are swapped: `mapi =` takes the Machine API kind (`machine.openshift.io`), `capi =` the Cluster API one (`cluster.x-k8s.io`)"
)]
pub trait MapiStatus {
    /// The sync-status block.
    fn sync_status(&self) -> &SyncStatus;
    /// The sync-status block, to change it.
    fn sync_status_mut(&mut self) -> &mut SyncStatus;
}

impl MapiStatus for SyncStatus {
    fn sync_status(&self) -> &SyncStatus {
        self
    }
    fn sync_status_mut(&mut self) -> &mut SyncStatus {
        self
    }
}

/// A Machine API condition (it has a severity, unlike `metav1.Condition`).
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// Condition type.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// `Error`, `Warning`, `Info` or empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
    /// When the status last changed.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "super::times::optional::serialize",
        deserialize_with = "super::times::optional::deserialize"
    )]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use schemars::SchemaGenerator;
    use serde_json::json;

    use super::*;

    #[test]
    fn wire_names_are_the_real_crds() -> serde_json::Result<()> {
        let status = SyncStatus {
            conditions: Some(vec![]),
            authoritative_api: Some(AuthoritativeApi::Migrating),
            synchronized_api: Some(AuthoritativeApi::ClusterApi),
            synchronized_generation: Some(3),
        };
        let wire = json!({
            "conditions": [],
            "authoritativeAPI": "Migrating",
            "synchronizedAPI": "ClusterAPI",
            "synchronizedGeneration": 3,
        });
        assert_eq!(serde_json::to_value(&status)?, wire);
        assert_eq!(serde_json::from_value::<SyncStatus>(wire)?, status);
        Ok(())
    }

    /// The block's schema, flattened into a kind's status, keeps `Migrating` and both rules.
    #[test]
    fn flattened_schema_accepts_migrating_and_keeps_the_rules() -> serde_json::Result<()> {
        #[derive(KubeSchema, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct WidgetStatus {
            /// The kind's own field.
            ready: Option<bool>,
            /// The block.
            #[serde(flatten)]
            sync: SyncStatus,
        }
        let schema = serde_json::to_value(SchemaGenerator::default().into_root_schema_for::<WidgetStatus>())?;
        let properties = &schema["properties"];
        assert!(properties["ready"].is_object(), "{schema}");
        assert_eq!(
            properties["authoritativeAPI"]["enum"],
            json!(["MachineAPI", "ClusterAPI", "Migrating"])
        );
        assert!(properties["authoritativeAPI"]["x-kubernetes-validations"].is_array());
        assert_eq!(
            properties["synchronizedAPI"]["enum"],
            json!(["MachineAPI", "ClusterAPI"])
        );
        assert_eq!(
            schema["x-kubernetes-validations"][0]["rule"],
            "has(self.authoritativeAPI) || !has(oldSelf.authoritativeAPI)"
        );
        Ok(())
    }
}
