//! PowerVS: Machine API `PowerVSMachineProviderConfig` ⇄ Cluster API Provider IBM Cloud
//! `IBMPowerVSMachine`.

pub mod capibm;
pub mod provider;
