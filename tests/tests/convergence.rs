//! Convergence: 200 Machine pairs, both directions, created, edited and deleted in a
//! seeded random order while the real sync and the simulated providers run, end in the
//! right state with no leftover object or finalizer.

use std::collections::BTreeSet;
use std::time::Duration;

use e2e::TestResult;
use e2e::real::{
    RealSync, aws, aws_cluster, create_aws_machine, eventually_every, provider_spec, synchronized,
};
use kube::ResourceExt;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

const PAIRS: usize = 200;
const SEED: u64 = 0x5eed_2026;
/// Generous: 200 pairs and five simulated providers on a shared 2-core machine.
const BOUND: Duration = Duration::from_secs(180);

/// xorshift64*: a seeded order, reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Edit(usize),
    Delete(usize),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_pairs_created_edited_and_deleted_in_random_order_converge() -> TestResult {
    let cluster = aws_cluster().await?;
    let sync = RealSync::start(&cluster, true).await?;
    let mut rng = Rng(SEED);
    let name = |i: usize| format!("m-{i:03}");
    let authority = |i: usize| {
        if i.is_multiple_of(2) {
            "MachineAPI"
        } else {
            "ClusterAPI"
        }
    };

    let mut order: Vec<usize> = (0..PAIRS).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, rng.below(i + 1));
    }
    let mut ops = Vec::new();
    let mut deleted = BTreeSet::new();
    let begun = std::time::Instant::now();
    for &i in &order {
        create_aws_machine(
            &cluster,
            &name(i),
            authority(i),
            &[("batch", "one")],
            None,
            provider_spec("m6i.large"),
        )
        .await?;
        // Interleave edits and deletes of earlier pairs with the creations.
        match rng.below(3) {
            0 => ops.push(Op::Edit(i)),
            1 => {
                ops.push(Op::Delete(i));
                deleted.insert(i);
            }
            _ => {}
        }
        if !ops.is_empty() && rng.below(2) == 0 {
            let op = ops.remove(rng.below(ops.len()));
            if !run(&cluster, op, &name).await? {
                ops.push(op);
            }
        }
    }
    let deadline = tokio::time::Instant::now() + BOUND;
    while !ops.is_empty() {
        let op = ops.remove(rng.below(ops.len()));
        if !run(&cluster, op, &name).await? {
            // Its CAPI Machine is not there yet: later.
            ops.push(op);
            if tokio::time::Instant::now() >= deadline {
                return Err(format!("the sync never created the CAPI Machine for {op:?}").into());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // Deleted pairs: nothing left on either side.
    let c = &cluster;
    let started = std::time::Instant::now();
    eventually_every(
        BOUND,
        Duration::from_millis(500),
        "every deleted pair gone and every kept pair synchronized",
        || {
            let deleted = &deleted;
            async move {
                let mapi = c.mapi_machines().list(&ListParams::default()).await?.items;
                let capi = c.capi_machines().list(&ListParams::default()).await?.items;
                let infra = aws(c, "AWSMachine").list(&ListParams::default()).await?.items;
                let kept = PAIRS - deleted.len();
                if mapi.len() != kept || capi.len() != kept || infra.len() != kept {
                    return Ok(None);
                }
                let names = |items: Vec<String>| items.into_iter().collect::<BTreeSet<_>>();
                let expected: BTreeSet<String> =
                    (0..PAIRS).filter(|i| !deleted.contains(i)).map(name).collect();
                if names(mapi.iter().map(ResourceExt::name_any).collect()) != expected
                    || names(capi.iter().map(ResourceExt::name_any).collect()) != expected
                    || names(infra.iter().map(ResourceExt::name_any).collect()) != expected
                {
                    return Ok(None);
                }
                let all_synced = mapi
                    .iter()
                    .all(|m| synchronized(m).is_some_and(|(s, _)| s == "True"));
                Ok(all_synced.then_some(()))
            }
        },
    )
    .await?;

    // Not an assertion (machines are noisy): where the test's time goes.
    eprintln!(
        "convergence: {PAIRS} pairs written in {:.1} s, converged {:.1} s later, {} reconciles",
        (started - begun).as_secs_f64(),
        started.elapsed().as_secs_f64(),
        sync.observer.reconciles().len()
    );

    // Kept pairs carry the last edit on the CAPI side, and their sync finalizers.
    for machine in cluster.capi_machines().list(&ListParams::default()).await?.items {
        let mapi = cluster.mapi_machines().get(&machine.name_any()).await?;
        assert_eq!(
            machine.labels().get("batch"),
            mapi.labels().get("batch"),
            "{}: CAPI labels {:?}, MAPI labels {:?}",
            machine.name_any(),
            machine.labels(),
            mapi.labels()
        );
        assert!(
            machine
                .finalizers()
                .iter()
                .any(|f| f == sync_core::toolkit::SYNC_FINALIZER)
        );
        assert!(
            mapi.finalizers()
                .iter()
                .any(|f| f == sync_core::toolkit::SYNC_FINALIZER)
        );
    }
    sync.stop().await
}

/// Runs `op` on the pair's authoritative side; `false` when that is the CAPI Machine and
/// the sync has not created it yet (the op is tried again later, so that the writes go on
/// meanwhile).
async fn run(cluster: &e2e::Cluster, op: Op, name: &impl Fn(usize) -> String) -> TestResult<bool> {
    let (Op::Edit(i) | Op::Delete(i)) = op;
    let n = name(i);
    let mapi_driven = i.is_multiple_of(2);
    if !mapi_driven && cluster.capi_machines().get_opt(&n).await?.is_none() {
        return Ok(false);
    }
    match op {
        Op::Edit(_) => {
            // An edit of the authoritative side's labels.
            let patch = Patch::Merge(json!({"metadata": {"labels": {"batch": "two"}}}));
            if mapi_driven {
                cluster
                    .mapi_machines()
                    .patch(&n, &PatchParams::default(), &patch)
                    .await?;
            } else {
                cluster
                    .capi_machines()
                    .patch(&n, &PatchParams::default(), &patch)
                    .await?;
            }
        }
        Op::Delete(_) => {
            // Delete the authoritative side: it deletes the other.
            let params = DeleteParams::default();
            if mapi_driven {
                cluster.mapi_machines().delete(&n, &params).await?;
            } else {
                cluster.capi_machines().delete(&n, &params).await?;
            }
        }
    }
    Ok(true)
}
