//! The cluster facts a conversion needs, read once from OpenShift's `Infrastructure`
//! object and passed to every conversion as a value (the conversion does no I/O): what
//! every platform shares; each platform's own facts are in its module.

use sync_core::api::Infrastructure;
use sync_core::api::infrastructure::InfrastructureStatus;

use crate::errors::{FieldError, FieldPath, Report};

/// Where the installer's `AWSCluster` is (named after the infrastructure name).
pub const DEFAULT_CAPI_NAMESPACE: &str = "openshift-cluster-api";

/// What every platform's facts start from, checked: the infrastructure name (the Cluster
/// API cluster name, required) and the platform type (must be `platform`); errors go to
/// `report` with paths under `infrastructure.status`.
pub(crate) fn common_facts(
    infrastructure: &Infrastructure,
    platform: &str,
    report: &mut Report,
) -> (String, InfrastructureStatus) {
    let root = FieldPath::new("infrastructure.status");
    let status = infrastructure.status.clone().unwrap_or_default();
    let infrastructure_name = status.infrastructure_name.clone().unwrap_or_default();
    if infrastructure_name.is_empty() {
        report.error(FieldError::required(
            root.child("infrastructureName"),
            "the infrastructure name (the Cluster API cluster name) is required",
        ));
    }
    let actual = status.platform_type().unwrap_or_default();
    if actual != platform {
        report.error(FieldError::unsupported(
            root.child("platformStatus").child("type"),
            actual,
            format!("only the {platform} platform can be converted by this conversion"),
        ));
    }
    (infrastructure_name, status)
}
