//! The migration soak (see `e2e::soak`). The small one runs with every test run; the full
//! one (100 Machines, 10 MachineSets, 3 round trips) on request:
//!
//! ```sh
//! cargo test -p e2e --test migration_soak -- --ignored --nocapture
//! ```

use std::time::Duration;

use e2e::TestResult;
use e2e::soak::{Soak, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_soak_two_replicas_leader_killed_under_faults() -> TestResult {
    let report = run(Soak {
        machines: 4,
        sets: 1,
        round_trips: 1,
        bound: Duration::from_secs(60),
    })
    .await?;
    println!("small soak: {report:?}");
    assert!(report.events_checked > 0);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the full soak takes minutes: cargo test -p e2e --test migration_soak -- --ignored --nocapture"]
async fn full_soak_100_machines_10_machine_sets_3_round_trips() -> TestResult {
    let report = run(Soak {
        machines: 100,
        sets: 10,
        round_trips: 3,
        bound: Duration::from_secs(300),
    })
    .await?;
    println!(
        "full soak: migrating took {:.1} s; legs {:?}; {} watch events checked; {} replica restarts",
        report.migrating.as_secs_f64(),
        report.legs,
        report.events_checked,
        report.restarts
    );
    Ok(())
}
