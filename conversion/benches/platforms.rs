//! Conversion throughput per platform, through the seam the sync uses
//! (`platform::for_cluster` → `Platform`, statuses and kind-neutral objects included).
//!
//! ```text
//! cargo bench -p conversion --bench platforms            # 10 000 Machines per platform, 5 rounds
//! cargo bench -p conversion --bench platforms -- --quick # 1 000, 2 rounds
//! cargo bench -p conversion --bench platforms -- --quick OpenStack   # one platform
//! ```
//!
//! Instruction counts, which the machine's load does not change: `valgrind
//! --tool=callgrind target/release/deps/platforms-* --quick <platform>` per platform.
//!
//! Each platform's Machines are made from its installer-shaped worker MachineSet
//! (`tests/fixtures/{,openstack/,powervs/}installer-worker-machineset.yaml`), each with its
//! own name and owner; MAPI → CAPI converts each, CAPI → MAPI converts those results back.
//! Rounds are timed whole (wall clock, one thread); the best and the median are reported
//! per object, with each platform's best as a ratio of AWS's.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conversion::platform::{self, CapiMachine, InfraCluster, Platform};
use serde::de::DeserializeOwned;
use serde_json::json;
use sync_core::api::{Infrastructure, mapi};

/// (platform, its Infrastructure, its installer-shaped MachineSet), under tests/fixtures.
const PLATFORMS: [(&str, &str, &str); 3] = [
    ("AWS", "infrastructure.yaml", "installer-worker-machineset.yaml"),
    (
        "OpenStack",
        "openstack/infrastructure.yaml",
        "openstack/installer-worker-machineset.yaml",
    ),
    (
        "PowerVS",
        "powervs/infrastructure.yaml",
        "powervs/installer-worker-machineset.yaml",
    ),
];

fn fixture<T: DeserializeOwned>(name: &str) -> T {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `index`th Machine of `set`: its template, its own name, owned by the set.
fn machine(set: &mapi::MachineSet, index: usize) -> mapi::Machine {
    let template = set.spec.template.clone().unwrap_or_default();
    let name = set.metadata.name.clone().unwrap_or_default();
    let mut machine: mapi::Machine = serde_json::from_value(json!({
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
        "metadata": {"name": format!("{name}-{index:05}"), "namespace": "openshift-machine-api",
            "ownerReferences": [{"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                "name": name, "uid": "6c1c9d0e", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {}
    }))
    .unwrap_or_default();
    machine.metadata.labels = template.metadata.and_then(|m| m.labels);
    machine.spec = template.spec.unwrap_or_default();
    machine
}

fn best_and_median(mut rounds: Vec<Duration>, objects: usize) -> (f64, f64) {
    rounds.sort();
    let per_object = |d: Duration| d.as_secs_f64() * 1e6 / objects as f64;
    (per_object(rounds[0]), per_object(rounds[rounds.len() / 2]))
}

fn time(rounds: usize, mut body: impl FnMut() -> usize) -> Vec<Duration> {
    (0..rounds)
        .map(|_| {
            let start = Instant::now();
            assert_eq!(body(), 0, "every benchmark object converts");
            start.elapsed()
        })
        .collect()
}

/// Best µs per object each way.
fn measure(
    name: &str,
    platform: &Arc<dyn Platform>,
    machines: &[mapi::Machine],
    rounds: usize,
) -> (f64, f64) {
    let converted: Vec<CapiMachine> = machines
        .iter()
        .filter_map(|m| platform.machine_to_capi(m).ok())
        .map(|c| c.value)
        .collect();
    assert_eq!(converted.len(), machines.len(), "{name}: every Machine converts");
    let to_capi = time(rounds, || {
        machines
            .iter()
            .filter(|m| platform.machine_to_capi(m).is_err())
            .count()
    });
    let to_mapi = time(rounds, || {
        converted
            .iter()
            .filter(|c| platform.machine_to_mapi(&c.machine, &c.infra).is_err())
            .count()
    });
    let (capi_best, capi_median) = best_and_median(to_capi, machines.len());
    let (mapi_best, mapi_median) = best_and_median(to_mapi, machines.len());
    println!(
        "{name:<10} MAPI → CAPI best {capi_best:>6.1} µs median {capi_median:>6.1} µs   \
         CAPI → MAPI best {mapi_best:>6.1} µs median {mapi_median:>6.1} µs"
    );
    (capi_best, mapi_best)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let only: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let (count, rounds) = if quick { (1_000, 2) } else { (10_000, 5) };
    println!(
        "per-platform conversion ({}): {count} Machines each, {rounds} rounds, release: {}",
        if quick { "quick" } else { "full" },
        !cfg!(debug_assertions)
    );
    let mut aws = None;
    for (name, infrastructure, set) in PLATFORMS {
        if !only.is_empty() && !only.iter().any(|o| o == name) {
            continue;
        }
        let infrastructure: Infrastructure = fixture(infrastructure);
        let platform = platform::for_cluster(&infrastructure, &InfraCluster::NotRead)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let set: mapi::MachineSet = fixture(set);
        let machines: Vec<mapi::Machine> = (0..count).map(|i| machine(&set, i)).collect();
        let (to_capi, to_mapi) = measure(name, &platform, &machines, rounds);
        let (aws_capi, aws_mapi) = *aws.get_or_insert((to_capi, to_mapi));
        println!(
            "{name:<10} / AWS: MAPI → CAPI {:.2}×, CAPI → MAPI {:.2}×",
            to_capi / aws_capi,
            to_mapi / aws_mapi
        );
    }
}
