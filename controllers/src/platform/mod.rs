//! The platforms whose Machines and MachineSets the sync converts.
pub mod aws;

use std::sync::Arc;

use crate::sync::{Cluster, Platform};

/// The conversion for the cluster's platform; `None`: the platform has none, and its
/// objects are left alone.
pub fn for_cluster(cluster: &Cluster) -> Option<Arc<dyn Platform>> {
    match cluster.platform.as_str() {
        "AWS" => Some(Arc::new(aws::Aws::new(cluster.clone()))),
        _ => None,
    }
}
