//! The Machine and MachineSet sync controllers.
pub mod machine;
pub mod machine_set;
