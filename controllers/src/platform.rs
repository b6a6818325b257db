//! The platform of the cluster the operator runs in, through the `conversion` crate's one
//! seam ([`conversion::platform::for_cluster`], the only place that names platforms).

use std::collections::BTreeMap;
use std::sync::Arc;

use sync_core::InfraConfig;
use sync_core::api::GroupKind;

use conversion::ConversionErrors;

use crate::sync::{Cluster, Platform};

/// The conversion for the cluster's platform. `Err`: the platform has none (or its
/// `Infrastructure` does not describe a cluster it can serve), and why, field by field.
pub fn for_cluster(cluster: &Cluster) -> Result<Arc<dyn Platform>, ConversionErrors> {
    conversion::platform::for_cluster(&cluster.infrastructure, &cluster.infra_cluster)
}

/// The infrastructure tracker's configuration for the CAPI namespace `capi_namespace`, with
/// every converted kind pinned to the version its conversion speaks ([`infra_versions`]).
/// Unpinned, a kind is watched at its contract label's version, and the conversion's reads
/// and writes at another version are not served from that cache.
pub fn infra_config(capi_namespace: impl Into<String>) -> InfraConfig {
    let mut config = InfraConfig::new(capi_namespace);
    config.versions = infra_versions();
    config
}

/// The version each converted platform's infrastructure kinds are read and written at: the
/// one its conversion speaks (for the infrastructure tracker's `versions`). On a cluster
/// whose provider serves a newer storage version, the API server converts.
pub fn infra_versions() -> BTreeMap<GroupKind, String> {
    conversion::platform::ALL
        .iter()
        .flat_map(|kinds| {
            [kinds.machine, kinds.template].map(|kind| {
                let group_kind = GroupKind {
                    group: kinds.group.to_owned(),
                    kind: kind.to_owned(),
                };
                (group_kind, kinds.version.to_owned())
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_platform_s_kinds_are_pinned_to_the_version_its_conversion_speaks() {
        let versions = infra_versions();
        let version = |kind: &str| {
            versions
                .get(&GroupKind {
                    group: "infrastructure.cluster.x-k8s.io".to_owned(),
                    kind: kind.to_owned(),
                })
                .cloned()
        };
        assert_eq!(version("AWSMachineTemplate").as_deref(), Some("v1beta2"));
        assert_eq!(version("OpenStackMachine").as_deref(), Some("v1beta1"));
        assert_eq!(version("IBMPowerVSMachineTemplate").as_deref(), Some("v1beta2"));
        assert_eq!(versions.len(), 6);
    }
}
