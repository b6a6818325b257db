//! References from a CAPI object to its infrastructure object, in both wire shapes.
//!
//! Cluster API v1beta2 references carry no version (`apiGroup`, `kind`, `name`); the version
//! is resolved later from the CRD's contract label or discovery. v1beta1-style references
//! (`apiVersion`, `kind`, `name`, `namespace`) carry it and it is used as given.

use std::fmt;

use k8s_openapi::api::core::v1::ObjectReference;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A Cluster API v1beta2 `ContractVersionedObjectReference`: group, kind and name, no version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContractVersionedObjectReference {
    /// API group of the referenced object, e.g. `infrastructure.cluster.x-k8s.io`.
    #[schemars(length(min = 1, max = 253))]
    pub api_group: String,
    /// Kind of the referenced object, e.g. `AWSMachine`.
    #[schemars(length(min = 1, max = 63))]
    pub kind: String,
    /// Name of the referenced object, in the referrer's namespace.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
}

/// An infrastructure reference, normalised from either wire shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InfraRef {
    /// API group (empty never: infrastructure kinds are never in the core group).
    pub group: String,
    /// The version when the reference carried one (v1beta1 style); `None` means "resolve it".
    pub version: Option<String>,
    /// Kind, e.g. `AWSMachine`.
    pub kind: String,
    /// Object name, in the CAPI namespace.
    pub name: String,
}

impl InfraRef {
    /// The group and kind, the unit one infrastructure watch is started for.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind {
            group: self.group.clone(),
            kind: self.kind.clone(),
        }
    }
}

impl fmt::Display for InfraRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}/{}", self.kind, self.group, self.name)
    }
}

/// A Kubernetes group and kind (`AWSMachine.infrastructure.cluster.x-k8s.io`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupKind {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
}

impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.kind, self.group)
    }
}

/// Why a reference cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MalformedRef {
    /// A required part (kind, name, group) is empty.
    #[error("infrastructure reference has an empty {0}")]
    Empty(&'static str),
    /// `apiVersion` is not `group/version`.
    #[error("infrastructure reference apiVersion {0:?} is not of the form group/version")]
    BadApiVersion(String),
}

/// A field that holds an infrastructure reference: what `infra_ref = <field path>` must name.
///
/// Implemented for both wire shapes and for `Option` of either. `Ok(None)` means "no
/// reference"; `Err` means a reference is there but unusable, which is reported.
pub trait AsInfraRef {
    /// Normalises the field to an [`InfraRef`].
    fn as_infra_ref(&self) -> Result<Option<InfraRef>, MalformedRef>;
}

impl AsInfraRef for ContractVersionedObjectReference {
    fn as_infra_ref(&self) -> Result<Option<InfraRef>, MalformedRef> {
        if self.api_group.is_empty() && self.kind.is_empty() && self.name.is_empty() {
            return Ok(None);
        }
        Ok(Some(InfraRef {
            group: non_empty("apiGroup", &self.api_group)?,
            version: None,
            kind: non_empty("kind", &self.kind)?,
            name: non_empty("name", &self.name)?,
        }))
    }
}

impl AsInfraRef for ObjectReference {
    fn as_infra_ref(&self) -> Result<Option<InfraRef>, MalformedRef> {
        let api_version = self.api_version.as_deref().unwrap_or_default();
        let kind = self.kind.as_deref().unwrap_or_default();
        let name = self.name.as_deref().unwrap_or_default();
        if api_version.is_empty() && kind.is_empty() && name.is_empty() {
            return Ok(None);
        }
        let (group, version) = api_version
            .split_once('/')
            .filter(|(group, version)| !group.is_empty() && !version.is_empty() && !version.contains('/'))
            .ok_or_else(|| MalformedRef::BadApiVersion(api_version.to_owned()))?;
        Ok(Some(InfraRef {
            group: group.to_owned(),
            version: Some(version.to_owned()),
            kind: non_empty("kind", kind)?,
            name: non_empty("name", name)?,
        }))
    }
}

impl<T: AsInfraRef> AsInfraRef for Option<T> {
    fn as_infra_ref(&self) -> Result<Option<InfraRef>, MalformedRef> {
        self.as_ref().map_or(Ok(None), AsInfraRef::as_infra_ref)
    }
}

fn non_empty(what: &'static str, value: &str) -> Result<String, MalformedRef> {
    if value.is_empty() {
        Err(MalformedRef::Empty(what))
    } else {
        Ok(value.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1beta2(group: &str, kind: &str, name: &str) -> ContractVersionedObjectReference {
        ContractVersionedObjectReference {
            api_group: group.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    fn v1beta1(api_version: &str, kind: &str, name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
            name: Some(name.into()),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn v1beta2_reference_has_no_version() {
        let r = v1beta2("infrastructure.cluster.x-k8s.io", "AWSMachine", "worker-a").as_infra_ref();
        assert_eq!(
            r,
            Ok(Some(InfraRef {
                group: "infrastructure.cluster.x-k8s.io".into(),
                version: None,
                kind: "AWSMachine".into(),
                name: "worker-a".into(),
            }))
        );
    }

    #[test]
    fn v1beta1_reference_keeps_its_version() {
        let r = v1beta1("infrastructure.cluster.x-k8s.io/v1beta1", "DevMachine", "m").as_infra_ref();
        assert_eq!(r.ok().flatten().and_then(|r| r.version), Some("v1beta1".into()));
    }

    #[test]
    fn empty_reference_is_absent() {
        assert_eq!(v1beta2("", "", "").as_infra_ref(), Ok(None));
        assert_eq!(ObjectReference::default().as_infra_ref(), Ok(None));
        assert_eq!(None::<ObjectReference>.as_infra_ref(), Ok(None));
    }

    #[test]
    fn malformed_references_are_errors() {
        assert_eq!(
            v1beta2("g", "", "n").as_infra_ref(),
            Err(MalformedRef::Empty("kind"))
        );
        assert_eq!(
            v1beta2("", "K", "n").as_infra_ref(),
            Err(MalformedRef::Empty("apiGroup"))
        );
        assert_eq!(
            v1beta2("g", "K", "").as_infra_ref(),
            Err(MalformedRef::Empty("name"))
        );
        assert_eq!(
            v1beta1("v1", "K", "n").as_infra_ref(),
            Err(MalformedRef::BadApiVersion("v1".into()))
        );
        assert_eq!(
            v1beta1("a/b/c", "K", "n").as_infra_ref(),
            Err(MalformedRef::BadApiVersion("a/b/c".into()))
        );
    }
}
