//! The platform of the cluster the operator runs in, through the `conversion` crate's one
//! seam ([`conversion::platform::for_cluster`], the only place that names platforms).

use std::sync::Arc;

use crate::sync::{Cluster, Platform};

/// The conversion for the cluster's platform. `Err`: the platform has none (or its
/// `Infrastructure` does not describe a cluster it can serve), and why.
pub fn for_cluster(cluster: &Cluster) -> Result<Arc<dyn Platform>, String> {
    conversion::platform::for_cluster(&cluster.infrastructure, &cluster.infra_cluster)
        .map_err(|e| e.to_string())
}
