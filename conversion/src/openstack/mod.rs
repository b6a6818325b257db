//! OpenStack: Machine API `OpenstackProviderSpec` ⇄ Cluster API Provider OpenStack `OpenStackMachine`.

pub mod capo;
pub mod provider;
