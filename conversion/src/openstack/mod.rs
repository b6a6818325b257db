//! OpenStack: Machine API `OpenstackProviderSpec` ⇄ Cluster API Provider OpenStack `OpenStackMachine`.
