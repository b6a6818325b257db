//! The migration controllers end to end on envtest, with the sync and the simulated
//! providers (as the operator's ServiceAccount: any Forbidden fails the scenario). Each
//! scenario ends by replaying every watch event of the pair in resourceVersion order
//! ([`AuthorityMonitor`]): never two driving sides.
//!
//! Every scenario runs on AWS and OpenStack (`scenario::aws`, `scenario::openstack`, by
//! [`e2e::on_each_platform!`]), with the simulated CAPA or CAPO provider. Scenarios without
//! providers stand in for them themselves ([`infra_reports_paused`]).

use std::time::Duration;

use controllers::machine::MachineSync;
use controllers::migration::{MigratingPair, MigrationConfig};
use e2e::migration::{
    AuthorityMonitor, capi_machine_provisioned, capi_paused, events_about, infrastructure_provisioned,
    is_paused, machine_set_settles, machine_settles, migration, request_machine, request_machine_set,
    wait_for_events,
};
use e2e::real::{
    AWS, OPENSTACK, RealSync, Size, TestPlatform, cluster_on, create_machine, create_machine_set, eventually,
};
use e2e::{TestResult, WAIT};
use kube::ResourceExt;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use sync_core::api::{capi, mapi};
use sync_core::toolkit::SYNC_FINALIZER;
use sync_core::toolkit::condition;

e2e::on_each_platform!(
    machine_set_migrates_to_cluster_api_and_back,
    a_request_waits_for_the_sync_before_migrating,
    a_pause_that_never_comes_is_reported_and_can_be_cancelled,
    a_failed_unpause_is_retried_before_the_final_write,
    a_conflict_on_the_final_write_is_retried,
    a_restarted_operator_resumes_a_migration,
    a_capi_side_change_alone_moves_a_migration_on,
    machine_migrates_to_cluster_api_and_back,
    cancelling_after_the_unpause_pauses_the_new_side_again,
    migrations_survive_dropped_and_expired_watches,
    the_migration_owns_only_its_own_conditions,
);

fn config() -> MigrationConfig {
    MigrationConfig::default()
}

async fn mapi_paused(cluster: &e2e::Cluster, name: &str, paused: bool) -> TestResult<mapi::Machine> {
    let api = cluster.mapi_machines();
    eventually(&format!("MAPI Machine {name} Paused={paused}"), || {
        let api = api.clone();
        async move {
            let m = api.get(name).await?;
            let status = condition::find(&m, "Paused").map(|c| c.status == "True");
            Ok((status == Some(paused)).then_some(m))
        }
    })
    .await
}

async fn machine_migrates_to_cluster_api_and_back(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    let monitor = AuthorityMonitor::start_with_infra::<mapi::Machine, capi::Machine>(
        &cluster,
        Some(platform.machines(&cluster)),
    );
    create_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &[("team", "a")],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    mapi_paused(&cluster, "w-1", false).await?;
    capi_machine_provisioned(&cluster, "w-1").await?;
    // Settled under the Machine API: the migration controller reads the MAPI Machine
    // alone and calls no hook.
    let settled_before = settled_skips(&sync, "w-1").await?;

    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    let machine = machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    assert_eq!(migration(&machine), Some(("True".into(), "Migrated".into())));
    // Settled under the Cluster API, the hook still runs: it lifts a pause annotation
    // left on the authoritative side.
    assert!(
        matches!(
            migration_outcomes(&sync, "w-1").last(),
            Some(sync_core::Outcome::Migration { .. })
        ),
        "{:?}",
        migration_outcomes(&sync, "w-1")
    );
    let capi = cluster.capi_machines().get("w-1").await?;
    assert!(
        !is_paused(&capi),
        "the CAPI Machine drives: {:?}",
        capi.annotations()
    );
    assert!(!is_paused(&platform.machines(&cluster).get("w-1").await?));
    assert!(capi.finalizers().contains(&SYNC_FINALIZER.to_owned()));
    assert_eq!(machine.labels().get("team").map(String::as_str), Some("a"));
    mapi_paused(&cluster, "w-1", true).await?;
    wait_for_events(
        &cluster,
        &cluster.namespaces.mapi,
        "w-1",
        &[
            "MigrationStarted",
            "WaitingForPaused",
            "Unpausing",
            "MigrationCompleted",
        ],
    )
    .await?;

    request_machine(&cluster, "w-1", "MachineAPI").await?;
    let machine = machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    assert_eq!(migration(&machine), Some(("True".into(), "Migrated".into())));
    let capi = cluster.capi_machines().get("w-1").await?;
    assert!(is_paused(&capi));
    assert!(is_paused(&platform.machines(&cluster).get("w-1").await?));
    let paused = eventually("the CAPI Machine reports Paused", || async {
        let capi = cluster.capi_machines().get("w-1").await?;
        Ok(
            (capi_paused(capi.status.as_ref().and_then(|s| s.conditions.as_deref())) == Some(true))
                .then_some(()),
        )
    });
    paused.await?;
    mapi_paused(&cluster, "w-1", false).await?;
    eventually("the Machine settled under the Machine API again", || async {
        Ok((settled_skips(&sync, "w-1").await? > settled_before).then_some(()))
    })
    .await?;
    wait_for_events(&cluster, &cluster.namespaces.mapi, "w-1", &["Pausing"]).await?;
    // Each direction is an Event of its own, with its own note (a series keeps its first).
    let started: Vec<(String, String)> = events_about(&cluster, &cluster.namespaces.mapi, "w-1")
        .await?
        .into_iter()
        .filter(|e| e.reason == "MigrationStarted")
        .map(|e| (e.action, e.note))
        .collect();
    assert_eq!(
        started,
        [
            (
                "MigrateToClusterAPI".to_owned(),
                "migrating from MachineAPI to ClusterAPI".to_owned()
            ),
            (
                "MigrateToMachineAPI".to_owned(),
                "migrating from ClusterAPI to MachineAPI".to_owned()
            ),
        ]
    );
    assert!(monitor.check()? > 0);
    sync.stop().await
}

async fn machine_set_migrates_to_cluster_api_and_back(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    let monitor = AuthorityMonitor::start_with_infra::<mapi::MachineSet, capi::MachineSet>(
        &cluster,
        Some(platform.templates(&cluster)),
    );
    create_machine_set(
        &cluster,
        "s-1",
        "MachineAPI",
        0,
        platform.provider_spec(Size::Large),
    )
    .await?;
    machine_set_settles(&cluster, "s-1", "MachineAPI", WAIT).await?;

    request_machine_set(&cluster, "s-1", "ClusterAPI").await?;
    let set = machine_set_settles(&cluster, "s-1", "ClusterAPI", WAIT).await?;
    assert_eq!(migration(&set), Some(("True".into(), "Migrated".into())));
    let capi = cluster.capi_machine_sets().get("s-1").await?;
    assert!(!is_paused(&capi));
    let template = capi.spec.template.spec.infrastructure_ref.name.clone();
    assert!(!is_paused(&platform.templates(&cluster).get(&template).await?));

    request_machine_set(&cluster, "s-1", "MachineAPI").await?;
    let set = machine_set_settles(&cluster, "s-1", "MachineAPI", WAIT).await?;
    assert_eq!(migration(&set), Some(("True".into(), "Migrated".into())));
    assert!(is_paused(&cluster.capi_machine_sets().get("s-1").await?));
    wait_for_events(
        &cluster,
        &cluster.namespaces.mapi,
        "s-1",
        &["MigrationStarted", "Pausing", "MigrationCompleted"],
    )
    .await?;
    monitor.check()?;
    sync.stop().await
}

/// The synchronized check comes before `Migrating`: a pair whose mirror is not in sync
/// waits (and says so), and migrates once the sync catches up.
async fn a_request_waits_for_the_sync_before_migrating(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    // A providerSpec the conversion refuses.
    let (unconvertible, fix) = platform.unconvertible();
    let mut bad = platform.provider_spec(Size::Large);
    for (key, value) in unconvertible.as_object().into_iter().flatten() {
        bad[key] = value.clone();
    }
    create_machine(&cluster, "w-1", "MachineAPI", &[], None, bad).await?;
    eventually("Synchronized=False", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((e2e::real::synchronized(&m).is_some_and(|(s, _)| s == "False")).then_some(()))
    })
    .await?;
    // The admission policies refuse a request while the machine is Provisioning.
    eventually("the MAPI Machine Running", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((m.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")).then_some(()))
    })
    .await?;
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    let waiting = eventually("Migration=Unknown WaitingForSynchronization", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((migration(&m) == Some(("Unknown".into(), "WaitingForSynchronization".into()))).then_some(m))
    })
    .await?;
    assert_eq!(
        e2e::real::authority_of(&waiting)
            .map(|a| a.to_string())
            .as_deref(),
        Some("MachineAPI")
    );
    // Fixed: the sync catches up, the migration goes on by itself.
    cluster
        .mapi_machines()
        .patch(
            "w-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"providerSpec": {"value": fix}}})),
        )
        .await?;
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    sync.stop().await
}

/// Without providers nothing reports Paused: after the stall timeout the migration says
/// why (condition and Warning Event); changing the request back cancels it.
async fn a_pause_that_never_comes_is_reported_and_can_be_cancelled(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(
        &cluster,
        platform,
        false,
        MigrationConfig {
            stall_timeout: Duration::from_secs(1),
        },
    )
    .await?;
    let monitor = AuthorityMonitor::start_with_infra::<mapi::Machine, capi::Machine>(
        &cluster,
        Some(platform.machines(&cluster)),
    );
    create_machine(
        &cluster,
        "w-1",
        "MachineAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    infrastructure_provisioned(&cluster, "w-1").await?;
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    let stalled = eventually("Migration=False PauseTimedOut", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((migration(&m) == Some(("False".into(), "PauseTimedOut".into()))).then_some(m))
    })
    .await?;
    assert_eq!(
        stalled
            .status
            .as_ref()
            .and_then(|s| s.sync.authoritative_api.as_ref())
            .map(|a| a.as_str()),
        Some("Migrating")
    );
    let note = cluster
        .wait_for_warning(&cluster.namespaces.mapi, "PauseTimedOut", "w-1")
        .await?;
    assert!(note.contains("MachineAPI to report Paused=True"), "{note}");
    // The CAPI side was never unpaused.
    assert!(is_paused(&cluster.capi_machines().get("w-1").await?));

    request_machine(&cluster, "w-1", "MachineAPI").await?;
    // Rolling back waits for the CAPI side to report Paused too; with no providers the
    // test is the CAPI Machine controller.
    eventually("the rollback waiting for ClusterAPI to pause", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        let c = condition::find(&m, "Migration").cloned();
        Ok(c.filter(|c| {
            c.message
                .as_deref()
                .is_some_and(|m| m.contains("ClusterAPI to report Paused"))
        })
        .map(|_| ()))
    })
    .await?;
    let paused = json!({"status": {"conditions": [{
        "type": "Paused", "status": "True", "reason": "Paused", "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    cluster
        .capi_machines()
        .patch_status("w-1", &PatchParams::default(), &Patch::Merge(&paused))
        .await?;
    infra_reports_paused(&cluster, platform, "w-1").await?;
    let machine = machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    assert_eq!(migration(&machine), Some(("True".into(), "RolledBack".into())));
    assert!(is_paused(&cluster.capi_machines().get("w-1").await?));
    wait_for_events(
        &cluster,
        &cluster.namespaces.mapi,
        "w-1",
        &["MigrationRolledBack"],
    )
    .await?;
    monitor.check()?;
    sync.stop().await
}

/// The infrastructure machine `name` reports `Paused=True`, as CAPA (or CAPO) does once it
/// sees the annotation (the tests without providers stand in for it).
async fn infra_reports_paused(cluster: &e2e::Cluster, platform: &TestPlatform, name: &str) -> TestResult {
    let paused = json!({"status": {"conditions": [{
        "type": "Paused", "status": "True", "reason": "Paused", "message": "paused by annotation",
        "severity": "Info", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    platform
        .machines(cluster)
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&paused))
        .await?;
    Ok(())
}

/// What the Machine migration controller did with `name`, in order.
fn migration_outcomes(sync: &RealSync, name: &str) -> Vec<sync_core::Outcome> {
    sync.observer
        .reconciles()
        .into_iter()
        .filter(|r| r.controller == <MachineSync as MigratingPair>::MIGRATION && r.name == name)
        .map(|r| r.outcome)
        .collect()
}

/// How many times the Machine migration controller has found `name` settled, once it has.
async fn settled_skips(sync: &RealSync, name: &str) -> TestResult<usize> {
    let settled = sync_core::Outcome::Skipped(sync_core::SkipReason::Settled);
    eventually(
        &format!("{name} found settled by the migration controller"),
        || async {
            let count = migration_outcomes(sync, name)
                .iter()
                .filter(|outcome| **outcome == settled)
                .count();
            Ok((count > 0).then_some(count))
        },
    )
    .await
}

fn failed_migrations(sync: &RealSync, name: &str) -> usize {
    sync.observer
        .reconciles()
        .iter()
        .filter(|r| r.name == name && r.outcome == sync_core::Outcome::Migration { failed: true })
        .count()
}

/// Waits until the CAPI Machine has been unpaused while the MAPI one still says Migrating.
async fn capi_unpaused_mid_migration(cluster: &e2e::Cluster, name: &str) -> TestResult {
    eventually("the CAPI Machine unpaused, status still Migrating", || async {
        let capi = cluster.capi_machines().get(name).await?;
        let mapi = cluster.mapi_machines().get(name).await?;
        let migrating = e2e::real::authority_of(&mapi).is_some_and(|a| a.as_str() == "Migrating");
        Ok((migrating && !is_paused(&capi)).then_some(()))
    })
    .await
}

async fn machine_api_pair(cluster: &e2e::Cluster, platform: &TestPlatform) -> TestResult {
    create_machine(
        cluster,
        "w-1",
        "MachineAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    machine_settles(cluster, "w-1", "MachineAPI", WAIT).await?;
    mapi_paused(cluster, "w-1", false).await?;
    // The simulated provider's last status (Running, with a node) copied to the
    // infrastructure machine: no sync write to it is still on its way when a scenario
    // injects faults into infrastructure machine writes.
    let (mapi, infra) = (cluster.mapi_machines(), platform.machines(cluster));
    eventually(
        "the provider's final status mirrored to the infrastructure machine",
        || {
            let (mapi, infra) = (mapi.clone(), infra.clone());
            async move {
                let machine = mapi.get("w-1").await?;
                let status = machine.status.as_ref();
                let running = status.and_then(|s| s.phase.as_deref()) == Some("Running")
                    && status.is_some_and(|s| s.node_ref.is_some());
                let mirrored = platform.infra_running(&infra.get("w-1").await?.data);
                Ok((running && mirrored).then_some(()))
            }
        },
    )
    .await?;
    capi_machine_provisioned(cluster, "w-1").await
}

fn env(cluster: &e2e::Cluster) -> TestResult<&envtest::TestEnv> {
    Ok(cluster.env.as_ref().ok_or("fault injection needs envtest")?)
}

/// Upstream #309: the final write came before the unpause, so a failed unpause was never
/// retried and the machine stayed paused under Cluster API. Here the unpause fails three
/// times, is retried, and the final write waits for it.
async fn a_failed_unpause_is_retried_before_the_final_write(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    let monitor = AuthorityMonitor::start_with_infra::<mapi::Machine, capi::Machine>(
        &cluster,
        Some(platform.machines(&cluster)),
    );
    machine_api_pair(&cluster, platform).await?;
    env(&cluster)?
        .faults()
        .fail(Some("patch"), Some(platform.machine_resource), 500, Some(3));
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    assert!(!is_paused(&platform.machines(&cluster).get("w-1").await?));
    assert!(
        failed_migrations(&sync, "w-1") >= 1,
        "the unpause failed and was retried"
    );
    monitor.check()?;
    sync.stop().await
}

/// The final write refused (409) until the fault goes: the pair stays Migrating with the
/// new side running, then completes; nothing is written out of order.
async fn a_conflict_on_the_final_write_is_retried(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    let monitor = AuthorityMonitor::start_with_infra::<mapi::Machine, capi::Machine>(
        &cluster,
        Some(platform.machines(&cluster)),
    );
    machine_api_pair(&cluster, platform).await?;
    let faults = env(&cluster)?.faults();
    // Hold the migration at the unpause of the infrastructure machine (after the CAPI Machine's)...
    faults.fail(Some("patch"), Some(platform.machine_resource), 500, None);
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    capi_unpaused_mid_migration(&cluster, "w-1").await?;
    // ... then let the unpause through and refuse every Machine write, the final one too.
    faults.clear();
    faults.fail(Some("patch"), Some("machines"), 409, None);
    eventually("the infrastructure machine unpaused", || async {
        Ok((!is_paused(&platform.machines(&cluster).get("w-1").await?)).then_some(()))
    })
    .await?;
    let before = failed_migrations(&sync, "w-1");
    eventually("the final write refused twice more", || async {
        Ok((failed_migrations(&sync, "w-1") >= before + 2).then_some(()))
    })
    .await?;
    let mapi = cluster.mapi_machines().get("w-1").await?;
    assert_eq!(
        e2e::real::authority_of(&mapi).map(|a| a.to_string()).as_deref(),
        Some("Migrating")
    );
    faults.clear();
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    monitor.check()?;
    sync.stop().await
}

/// The operator stops in the middle of a migration (the new side half unpaused); a new
/// one resumes from what the objects say.
async fn a_restarted_operator_resumes_a_migration(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    let monitor = AuthorityMonitor::start_with_infra::<mapi::Machine, capi::Machine>(
        &cluster,
        Some(platform.machines(&cluster)),
    );
    machine_api_pair(&cluster, platform).await?;
    let faults = env(&cluster)?.faults();
    faults.fail(Some("patch"), Some(platform.machine_resource), 500, None);
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    capi_unpaused_mid_migration(&cluster, "w-1").await?;
    sync.stop().await?;
    faults.clear();
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    assert!(!is_paused(&platform.machines(&cluster).get("w-1").await?));
    monitor.check()?;
    sync.stop().await
}

/// A cancel after the new side was unpaused: it is paused again, seen paused, and only
/// then does the previous authority resume.
async fn cancelling_after_the_unpause_pauses_the_new_side_again(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    let monitor = AuthorityMonitor::start_with_infra::<mapi::Machine, capi::Machine>(
        &cluster,
        Some(platform.machines(&cluster)),
    );
    machine_api_pair(&cluster, platform).await?;
    let faults = env(&cluster)?.faults();
    faults.fail(Some("patch"), Some(platform.machine_resource), 500, None);
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    capi_unpaused_mid_migration(&cluster, "w-1").await?;
    request_machine(&cluster, "w-1", "MachineAPI").await?;
    faults.clear();
    let machine = machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    assert_eq!(migration(&machine), Some(("True".into(), "RolledBack".into())));
    assert!(is_paused(&cluster.capi_machines().get("w-1").await?));
    assert!(is_paused(&platform.machines(&cluster).get("w-1").await?));
    wait_for_events(
        &cluster,
        &cluster.namespaces.mapi,
        "w-1",
        &["MigrationRolledBack"],
    )
    .await?;
    monitor.check()?;
    sync.stop().await
}

/// Watches dropped and expired throughout two migrations: the relists bring every step.
async fn migrations_survive_dropped_and_expired_watches(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    machine_api_pair(&cluster, platform).await?;
    let shared = env(&cluster)?.shared();
    let chaos = tokio::spawn(async move {
        for round in 0..40 {
            tokio::time::sleep(Duration::from_millis(40)).await;
            if round % 4 == 3 {
                shared.faults.expire_watches();
            } else {
                shared.faults.drop_watches();
            }
        }
    });
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    request_machine(&cluster, "w-1", "MachineAPI").await?;
    machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    chaos.await?;
    assert!(is_paused(&cluster.capi_machines().get("w-1").await?));
    sync.stop().await
}

/// Upstream #300: the migration controller did not watch CAPI objects, so a migration
/// whose only remaining change was the CAPI side's Paused condition never went on. With
/// no providers and a stall timeout far away, only the CAPI watches can move it here.
/// The InfraMachine reports Paused late: until it does, the CAPI Machine's Paused alone
/// does not end the wait (upstream waits for both).
async fn a_capi_side_change_alone_moves_a_migration_on(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, false, config()).await?;
    create_machine(
        &cluster,
        "w-1",
        "ClusterAPI",
        &[],
        None,
        platform.provider_spec(Size::Large),
    )
    .await?;
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    infrastructure_provisioned(&cluster, "w-1").await?;
    request_machine(&cluster, "w-1", "MachineAPI").await?;
    eventually("waiting for ClusterAPI to report Paused", || async {
        let m = cluster.mapi_machines().get("w-1").await?;
        Ok((migration(&m) == Some(("Unknown".into(), "WaitingForPaused".into()))).then_some(()))
    })
    .await?;
    assert!(is_paused(&cluster.capi_machines().get("w-1").await?));
    let paused = json!({"status": {"conditions": [{
        "type": "Paused", "status": "True", "reason": "Paused", "message": "",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    let reconciled = || {
        sync.observer
            .reconciles()
            .iter()
            .filter(|r| r.controller == "machine-migration" && r.name == "w-1")
            .count()
    };
    let before = reconciled();
    cluster
        .capi_machines()
        .patch_status("w-1", &PatchParams::default(), &Patch::Merge(&paused))
        .await?;
    // The CAPI Machine's change is seen, and the migration still waits for the infrastructure machine.
    eventually("a migration reconcile after the CAPI Machine paused", || async {
        Ok((reconciled() > before).then_some(()))
    })
    .await?;
    let machine = cluster.mapi_machines().get("w-1").await?;
    assert_eq!(
        migration(&machine),
        Some(("Unknown".into(), "WaitingForPaused".into()))
    );
    let message = condition::find(&machine, "Migration").and_then(|c| c.message.clone());
    assert_eq!(
        message.as_deref(),
        Some("waiting for ClusterAPI to report Paused=True, on its object and its infrastructure object")
    );
    infra_reports_paused(&cluster, platform, "w-1").await?;
    machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    sync.stop().await
}

/// Upstream #313: resetting the sync status took server-side-apply ownership of every
/// condition. Another controller's condition survives two migrations untouched, and each
/// of the migration's managers owns only its own fields.
async fn the_migration_owns_only_its_own_conditions(platform: &TestPlatform) -> TestResult {
    let cluster = cluster_on(platform).await?;
    let sync = RealSync::start_migrating_on(&cluster, platform, true, config()).await?;
    machine_api_pair(&cluster, platform).await?;
    let theirs = json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": "w-1"},
        "status": {"conditions": [{"type": "Drained", "status": "True", "reason": "Done",
                                   "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
    cluster
        .mapi_machines()
        .patch_status(
            "w-1",
            &PatchParams::apply("node-drain-controller").force(),
            &Patch::Apply(&theirs),
        )
        .await?;
    request_machine(&cluster, "w-1", "ClusterAPI").await?;
    machine_settles(&cluster, "w-1", "ClusterAPI", WAIT).await?;
    request_machine(&cluster, "w-1", "MachineAPI").await?;
    let machine = machine_settles(&cluster, "w-1", "MachineAPI", WAIT).await?;
    let drained = condition::find(&machine, "Drained").ok_or("the Drained condition is gone")?;
    assert_eq!(
        (drained.status.as_str(), drained.reason.as_deref()),
        ("True", Some("Done"))
    );
    let managed = machine.metadata.managed_fields.clone().unwrap_or_default();
    let fields_of = |manager: &str| {
        managed
            .iter()
            .filter(|m| m.manager.as_deref() == Some(manager))
            .map(|m| serde_json::to_string(&m.fields_v1).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("")
    };
    assert!(fields_of("node-drain-controller").contains(r#"k:{\"type\":\"Drained\"}"#));
    for manager in [
        "MachineMigrationController-AuthoritativeAPI",
        "MachineMigrationController-MigrationCondition",
        "MachineSyncController-SynchronizedCondition",
    ] {
        let fields = fields_of(manager);
        assert!(
            !fields.contains("Drained"),
            "{manager} owns the Drained condition: {fields}"
        );
    }
    let condition_fields = fields_of("MachineMigrationController-MigrationCondition");
    assert!(
        condition_fields.contains(r#"k:{\"type\":\"Migration\"}"#),
        "{condition_fields}"
    );
    assert!(!condition_fields.contains("Synchronized"), "{condition_fields}");
    sync.stop().await
}
