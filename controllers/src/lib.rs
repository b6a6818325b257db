//! The Machine and MachineSet sync controllers, and the operator that runs them.
pub mod args;
pub mod client;
pub mod convert;
pub mod feature_gate;
pub mod machine;
pub mod machine_set;
pub mod migration;
pub mod operator;
pub mod platform;
#[cfg(feature = "embedded")]
pub mod simulate;
pub mod status;
pub mod sync;
pub mod user_data;
