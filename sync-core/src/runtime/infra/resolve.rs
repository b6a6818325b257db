//! Resolving the version (and resource) of an infrastructure GroupKind.
//!
//! As Cluster API does: the CRD's contract label `cluster.x-k8s.io/v1beta2` lists the
//! versions implementing the contract (`v1beta1_v1beta2`), the newest of which is used;
//! without the label, the group's preferred version from discovery. A version given by a
//! v1beta1-style reference is used as given.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::core::{ApiResource, Version};
use kube::{Api, Client};

use crate::api::{CONTRACT_LABEL_V1BETA2, GroupKind};

/// Why a GroupKind cannot be watched (yet).
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Discovery does not know the group.
    #[error("API group {group:?} is not served (is its CRD installed?)")]
    GroupNotFound {
        /// The group.
        group: String,
    },
    /// The group does not serve the kind in any version.
    #[error("{group_kind} is not served (is its CRD installed?)")]
    KindNotFound {
        /// The group and kind.
        group_kind: GroupKind,
    },
    /// The version a reference (or the contract label) names does not serve the kind.
    #[error("{group_kind} is not served in version {version:?}; served: {served:?}")]
    VersionNotServed {
        /// The group and kind.
        group_kind: GroupKind,
        /// The version asked for.
        version: String,
        /// The versions that do serve it.
        served: Vec<String>,
    },
    /// The API server refused or failed.
    #[error("resolving {group_kind}: {source}")]
    Api {
        /// The group and kind.
        group_kind: GroupKind,
        /// The error.
        #[source]
        source: kube::Error,
    },
}

/// The newest version a contract label value lists (`v1beta1_v1beta2` → `v1beta2`).
pub fn newest_contract_version(label: &str) -> Option<&str> {
    label
        .split('_')
        .filter(|v| !v.is_empty())
        .max_by_key(|v| Version::parse(v).priority())
}

/// Chooses the version to watch a kind at.
///
/// `served` are the versions whose discovery lists the kind; `hint` a version from a
/// v1beta1-style reference; `contract` the CRD's contract label; `preferred` the group's
/// preferred version.
pub fn choose_version(
    group_kind: &GroupKind,
    served: &[String],
    hint: Option<&str>,
    contract: Option<&str>,
    preferred: Option<&str>,
) -> Result<String, ResolveError> {
    if served.is_empty() {
        return Err(ResolveError::KindNotFound {
            group_kind: group_kind.clone(),
        });
    }
    let wanted = hint.or_else(|| contract.and_then(newest_contract_version));
    if let Some(version) = wanted {
        return if served.iter().any(|s| s == version) {
            Ok(version.to_owned())
        } else {
            Err(ResolveError::VersionNotServed {
                group_kind: group_kind.clone(),
                version: version.to_owned(),
                served: served.to_vec(),
            })
        };
    }
    if let Some(preferred) = preferred.filter(|p| served.iter().any(|s| s == p)) {
        return Ok(preferred.to_owned());
    }
    served
        .iter()
        .max_by_key(|v| Version::parse(v).priority())
        .cloned()
        .ok_or_else(|| ResolveError::KindNotFound {
            group_kind: group_kind.clone(),
        })
}

/// Resolves `group_kind` against the API server to the resource to watch.
pub async fn resolve(
    client: &Client,
    group_kind: &GroupKind,
    hint: Option<&str>,
) -> Result<ApiResource, ResolveError> {
    Ok(resolve_served(client, group_kind, hint).await?.chosen)
}

/// A kind resolved: the resource chosen, and the kind's resource in every version
/// discovery listed it in (a later read or write at another of them needs no discovery).
#[derive(Clone, Debug)]
pub struct Resolution {
    /// The resource at the version chosen.
    pub chosen: ApiResource,
    /// The kind's resource in each served version, the chosen one included.
    pub served: Vec<ApiResource>,
}

impl Resolution {
    /// The kind's resource at `version` (`None`: the chosen one), if that version serves it.
    pub fn at(&self, version: Option<&str>) -> Option<&ApiResource> {
        match version {
            None => Some(&self.chosen),
            Some(version) => self.served.iter().find(|r| r.version == version),
        }
    }
}

/// [`resolve`], keeping every served version's resource.
pub async fn resolve_served(
    client: &Client,
    group_kind: &GroupKind,
    hint: Option<&str>,
) -> Result<Resolution, ResolveError> {
    let api_error = |source| ResolveError::Api {
        group_kind: group_kind.clone(),
        source,
    };
    let group = match kube::discovery::group(client, &group_kind.group).await {
        Ok(group) => group,
        Err(kube::Error::Api(status)) if status.code == 404 => {
            return Err(ResolveError::GroupNotFound {
                group: group_kind.group.clone(),
            });
        }
        Err(kube::Error::Discovery(_)) => {
            return Err(ResolveError::GroupNotFound {
                group: group_kind.group.clone(),
            });
        }
        Err(error) => return Err(api_error(error)),
    };
    let served: Vec<ApiResource> = group
        .versions()
        .filter_map(|version| {
            group
                .versioned_resources(version)
                .into_iter()
                .find(|(r, _)| r.kind == group_kind.kind)
                .map(|(resource, _)| resource)
        })
        .collect();
    let contract = match (served.first(), hint) {
        (Some(resource), None) => {
            contract_label(client, &format!("{}.{}", resource.plural, group_kind.group)).await
        }
        _ => None,
    };
    let versions: Vec<String> = served.iter().map(|r| r.version.clone()).collect();
    let version = choose_version(
        group_kind,
        &versions,
        hint,
        contract.as_deref(),
        group.preferred_version(),
    )?;
    let chosen = served
        .iter()
        .find(|r| r.version == version)
        .cloned()
        .ok_or_else(|| ResolveError::KindNotFound {
            group_kind: group_kind.clone(),
        })?;
    Ok(Resolution { chosen, served })
}

/// The CRD's contract label, if the CRD can be read and has one. Not being allowed to
/// read CRDs is not an error: discovery's preferred version is the fallback.
async fn contract_label(client: &Client, crd_name: &str) -> Option<String> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    match crds.get_metadata_opt(crd_name).await {
        Ok(Some(crd)) => crd
            .metadata
            .labels
            .and_then(|mut labels| labels.remove(CONTRACT_LABEL_V1BETA2)),
        Ok(None) => None,
        Err(error) => {
            tracing::debug!(crd = crd_name, %error, "cannot read the CRD's contract label; using discovery");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gk() -> GroupKind {
        GroupKind {
            group: "infrastructure.cluster.x-k8s.io".into(),
            kind: "AWSMachine".into(),
        }
    }

    fn served(versions: &[&str]) -> Vec<String> {
        versions.iter().map(|v| (*v).to_owned()).collect()
    }

    #[test]
    fn contract_label_picks_the_newest_version() {
        assert_eq!(newest_contract_version("v1beta1_v1beta2"), Some("v1beta2"));
        assert_eq!(newest_contract_version("v1beta2_v1beta1"), Some("v1beta2"));
        assert_eq!(newest_contract_version("v1alpha4_v1beta1_v1"), Some("v1"));
        assert_eq!(newest_contract_version("v1beta1"), Some("v1beta1"));
        assert_eq!(newest_contract_version(""), None);
    }

    #[test]
    fn contract_label_wins_over_discovery_preference() {
        let v = choose_version(
            &gk(),
            &served(&["v1beta1", "v1beta2"]),
            None,
            Some("v1beta1_v1beta2"),
            Some("v1beta1"),
        );
        assert_eq!(v.ok().as_deref(), Some("v1beta2"));
    }

    #[test]
    fn without_label_the_preferred_version_is_used() {
        let v = choose_version(
            &gk(),
            &served(&["v1beta1", "v1beta2"]),
            None,
            None,
            Some("v1beta1"),
        );
        assert_eq!(v.ok().as_deref(), Some("v1beta1"));
        // A preferred version that does not serve the kind falls back to the newest that does.
        let v = choose_version(&gk(), &served(&["v1alpha1", "v1beta1"]), None, None, Some("v1"));
        assert_eq!(v.ok().as_deref(), Some("v1beta1"));
    }

    #[test]
    fn a_v1beta1_reference_version_is_used_as_given() {
        let v = choose_version(
            &gk(),
            &served(&["v1beta1", "v1beta2"]),
            Some("v1beta1"),
            Some("v1beta2"),
            None,
        );
        assert_eq!(v.ok().as_deref(), Some("v1beta1"));
    }

    #[test]
    fn unserved_versions_and_kinds_are_errors() {
        let v = choose_version(&gk(), &served(&["v1beta1"]), Some("v1beta2"), None, None);
        assert!(matches!(v, Err(ResolveError::VersionNotServed { .. })), "{v:?}");
        let v = choose_version(&gk(), &served(&[]), None, None, Some("v1beta1"));
        assert!(matches!(v, Err(ResolveError::KindNotFound { .. })), "{v:?}");
        let v = choose_version(&gk(), &served(&["v1beta1"]), None, Some("v1beta2"), None);
        assert!(matches!(v, Err(ResolveError::VersionNotServed { .. })), "{v:?}");
    }
}
