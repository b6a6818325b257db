//! The `authoritativeAPI` value shared by the MAPI types.
//!
//! It must deserialize any string: an object carrying a value this build does not know is
//! still read, and the engine reports the value instead of failing the whole object.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which API drives a machine: `status.authoritativeAPI` (and the user's request in
/// `spec.authoritativeAPI`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AuthoritativeApi {
    /// The Machine API (`machine.openshift.io`) is authoritative.
    MachineApi,
    /// Cluster API (`cluster.x-k8s.io`) is authoritative.
    ClusterApi,
    /// Authority is being handed over; the sync controllers stand still.
    Migrating,
    /// A value this build does not know, kept verbatim so it can be reported.
    Unknown(String),
}

impl AuthoritativeApi {
    /// The value as it appears on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Self::MachineApi => "MachineAPI",
            Self::ClusterApi => "ClusterAPI",
            Self::Migrating => "Migrating",
            Self::Unknown(other) => other,
        }
    }
}

impl From<&str> for AuthoritativeApi {
    fn from(value: &str) -> Self {
        match value {
            "MachineAPI" => Self::MachineApi,
            "ClusterAPI" => Self::ClusterApi,
            "Migrating" => Self::Migrating,
            other => Self::Unknown(other.to_owned()),
        }
    }
}

impl fmt::Display for AuthoritativeApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AuthoritativeApi {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for AuthoritativeApi {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Cow::<'de, str>::deserialize(deserializer)?;
        Ok(Self::from(value.as_ref()))
    }
}

/// Schema of `spec.authoritativeAPI`: what a user may request.
impl JsonSchema for AuthoritativeApi {
    fn schema_name() -> Cow<'static, str> {
        "AuthoritativeApi".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": ["MachineAPI", "ClusterAPI"],
            "description": "The API that is authoritative for this resource."
        })
    }
}

/// Schema of `status.authoritativeAPI`: the spec values plus `Migrating`, and the rule that
/// authority changes only through `Migrating` (what [`super::SyncStatus`] uses).
pub fn status_authoritative_api_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "enum": ["MachineAPI", "ClusterAPI", "Migrating"],
        "description": "The API that is currently authoritative for this resource.",
        "x-kubernetes-validations": [{
            "rule": "self == 'Migrating' || self == oldSelf || oldSelf == 'Migrating'",
            "message": "The authoritativeAPI field must not transition directly from MachineAPI to ClusterAPI or vice versa. It must transition through Migrating."
        }]
    })
}

/// Schema of `status.synchronizedAPI`: `MachineAPI` or `ClusterAPI`.
pub fn synchronized_api_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "enum": ["MachineAPI", "ClusterAPI"],
        "description": "The API that the last synchronization was made from."
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_round_trip() {
        for (wire, value) in [
            ("MachineAPI", AuthoritativeApi::MachineApi),
            ("ClusterAPI", AuthoritativeApi::ClusterApi),
            ("Migrating", AuthoritativeApi::Migrating),
        ] {
            let json = format!("\"{wire}\"");
            assert_eq!(
                serde_json::from_str::<AuthoritativeApi>(&json).ok(),
                Some(value.clone())
            );
            assert_eq!(serde_json::to_string(&value).ok(), Some(json));
        }
    }

    #[test]
    fn unknown_value_is_kept_not_rejected() {
        let parsed: AuthoritativeApi =
            serde_json::from_str("\"Kubelet\"").unwrap_or(AuthoritativeApi::MachineApi);
        assert_eq!(parsed, AuthoritativeApi::Unknown("Kubelet".into()));
        assert_eq!(
            serde_json::to_string(&parsed).ok().as_deref(),
            Some("\"Kubelet\"")
        );
    }
}
