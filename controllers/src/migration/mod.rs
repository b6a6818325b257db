//! The migration controllers: hand a Machine's or MachineSet's authority from one API to
//! the other when `spec.authoritativeAPI` asks for it, and back when the request is
//! changed back mid-way (`docs/design.md` §9).
//!
//! Each step is one write; its watch event (or the paused controller's) brings the next.
//! The next step always comes from the objects themselves ([`sync_core::migration::plan`]),
//! so a restarted operator, a dropped watch or a failed write resumes where it stopped.
//!
//! | step | what is written | Event (its action: `MigrateTo<requested API>`) |
//! |---|---|---|
//! | request, status unset | `status.authoritativeAPI` = the request | `AuthoritativeAPIInitialized` |
//! | request ≠ status, mirror not `Synchronized=True` at the source's generation | `Migration=Unknown` `WaitingForSynchronization`; after `--migration-stall-timeout`: `Migration=False` `SynchronizationTimedOut` | `MigrationRequested`; `SynchronizationTimedOut` (Warning) |
//! | request ≠ status, in sync | `status.authoritativeAPI: Migrating`; `Migration=Unknown` `Migrating` | `MigrationStarted` |
//! | pause the old side | to Machine API: `cluster.x-k8s.io/paused` on the CAPI object and its infrastructure object; to Cluster API: nothing, the MAPI controllers pause themselves on `Migrating` | `Pausing` |
//! | wait for the old side's `Paused=True` | `Migration=Unknown` `WaitingForPaused`; after `--migration-stall-timeout`: `Migration=False` `PauseTimedOut` | `WaitingForPaused`; `PauseTimedOut` (Warning) |
//! | unpause the new side | to Cluster API: the annotations removed; to Machine API: nothing, the final write resumes it | `Unpausing` |
//! | last: the final write | `Migration=True` `Migrated` or `RolledBack`, then one server-side apply under `<controller>-AuthoritativeAPI`: `authoritativeAPI` = the target, `synchronizedGeneration: 0`, `Synchronized=Unknown` `AuthoritativeAPIChanged` | `MigrationCompleted` / `MigrationRolledBack` |
//! | settled, the authoritative CAPI side still annotated | the annotations removed | `Unpausing` |
//!
//! A request changed back while `Migrating` targets the previous authority and takes the
//! same steps: the side unpaused meanwhile is paused again and seen paused before the
//! previous authority resumes, so no moment has two sides driving.

mod machine;
mod machine_set;
mod protocol;

pub use machine::MachineMigrationHooks;
pub use machine_set::MachineSetMigrationHooks;
pub use protocol::{
    MIGRATION_CONDITION, MigratingPair, MigrationConfig, MigrationMetrics, MigrationResult, Migrator,
    condition_field_manager,
};
