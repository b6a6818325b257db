//! The Machine and MachineSet conversion every platform shares, generic over the
//! platform's [`Provider`](crate::provider::Provider): names, namespaces, labels,
//! annotations, lifecycle hooks, owners, bootstrap secret, failure domain, replicas,
//! template names, the providerSpec's decoding, and the CAPI/MAPI statuses.

pub mod status;
pub mod to_capi;
pub mod to_mapi;
