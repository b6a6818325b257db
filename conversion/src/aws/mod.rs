//! The AWS types on both sides: Machine API's providerSpec/providerStatus (written by
//! hand, they have no CRD) and Cluster API Provider AWS's kinds (generated).

pub mod capa;
pub mod cluster;
pub mod provider;

pub use provider::{AwsMachineProviderConfig, AwsMachineProviderStatus};
