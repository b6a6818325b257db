//! Conversion throughput, both directions.
//!
//! ```text
//! cargo bench -p conversion --bench convert            # 10 000 Machines each way, 5 rounds
//! cargo bench -p conversion --bench convert -- --quick # 1 000, 2 rounds
//! ```
//!
//! The input is 10 000 distinct MAPI Machines shaped like the installer's (see
//! `tests/fixtures/running-worker-machine.yaml`: tags, security groups and subnet by
//! filters, a root and a data volume, providerID), each with its own name, zone and
//! instance ID. MAPI → CAPI converts each into a CAPI Machine and an AWSMachine; CAPI →
//! MAPI converts those pairs back. MachineSets (1 per 100 Machines) are timed too. Each
//! round is timed whole (wall clock, one thread); the best and the median round are
//! reported, as objects per second.
//!
//! Wall clock on a shared machine is noisy; the instruction count is not:
//! `valgrind --tool=callgrind target/release/deps/convert-* --quick`, then
//! `callgrind_annotate --inclusive=yes` on its output, divided by the calls (the
//! MAPI → CAPI conversion also runs once, untimed, to build the CAPI input).

use std::time::{Duration, Instant};

use conversion::aws::capa::AwsMachine;
use conversion::aws::{to_capi, to_mapi};
use conversion::{AwsInfrastructure, IpFamily};
use serde_json::{Value, json};
use sync_core::api::{capi, mapi};

fn machine(index: usize) -> mapi::Machine {
    let zone = ["us-east-2a", "us-east-2b", "us-east-2c"][index % 3];
    let value = json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "Machine",
        "metadata": {
            "name": format!("demo-x7k2p-worker-{zone}-{index:05}"),
            "namespace": "openshift-machine-api",
            "labels": {
                "machine.openshift.io/cluster-api-cluster": "demo-x7k2p",
                "machine.openshift.io/cluster-api-machine-role": "worker",
                "machine.openshift.io/cluster-api-machine-type": "worker",
                "machine.openshift.io/cluster-api-machineset": format!("demo-x7k2p-worker-{zone}"),
                "machine.openshift.io/instance-type": "m6i.xlarge",
                "machine.openshift.io/region": "us-east-2",
                "machine.openshift.io/zone": zone
            },
            "annotations": {"machine.openshift.io/instance-state": "running"},
            "ownerReferences": [{"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                "name": format!("demo-x7k2p-worker-{zone}"), "uid": "6c1c9d0e", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "lifecycleHooks": {"preDrain": [{"name": "etcd-quorum", "owner": "ops"}]},
            "providerID": format!("aws:///{zone}/i-0{index:016x}"),
            "providerSpec": {"value": {
                "apiVersion": "machine.openshift.io/v1beta1",
                "kind": "AWSMachineProviderConfig",
                "ami": {"id": "ami-0a1b2c3d4e5f60718"},
                "blockDevices": [
                    {"ebs": {"encrypted": true, "iops": 0, "kmsKey": {"arn": ""}, "volumeSize": 120, "volumeType": "gp3"}},
                    {"deviceName": "/dev/sdf", "ebs": {"encrypted": true, "volumeSize": 500, "volumeType": "gp3", "throughputMib": 250}}
                ],
                "credentialsSecret": {"name": "aws-cloud-credentials"},
                "deviceIndex": 0,
                "iamInstanceProfile": {"id": "demo-x7k2p-worker-profile"},
                "instanceType": "m6i.xlarge",
                "metadata": {"creationTimestamp": null},
                "metadataServiceOptions": {"authentication": "Required"},
                "placement": {"availabilityZone": zone, "region": "us-east-2"},
                "securityGroups": [{"filters": [{"name": "tag:Name", "values": ["demo-x7k2p-worker-sg"]}]}],
                "subnet": {"filters": [{"name": "tag:Name", "values": [format!("demo-x7k2p-private-{zone}")]}]},
                "tags": [{"name": "kubernetes.io/cluster/demo-x7k2p", "value": "owned"}, {"name": "team", "value": format!("t{}", index % 7)}],
                "userDataSecret": {"name": "worker-user-data"}
            }}
        }
    });
    serde_json::from_value(value).unwrap_or_default()
}

fn machine_set(index: usize) -> mapi::MachineSet {
    let template = serde_json::to_value(machine(index)).unwrap_or(Value::Null);
    let name = format!("demo-x7k2p-worker-{index:05}");
    let value = json!({
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": name, "namespace": "openshift-machine-api"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machineset": name}},
            "template": {
                "metadata": {"labels": {"machine.openshift.io/cluster-api-machineset": name}},
                "spec": {"providerSpec": template["spec"]["providerSpec"]}
            }
        }
    });
    serde_json::from_value(value).unwrap_or_default()
}

struct Figure {
    what: &'static str,
    objects: usize,
    rounds: Vec<Duration>,
}

impl Figure {
    fn print(&mut self) {
        self.rounds.sort();
        let best = self.rounds[0];
        let median = self.rounds[self.rounds.len() / 2];
        let rate = |d: Duration| self.objects as f64 / d.as_secs_f64();
        println!(
            "{:<28} {:>6} objects  best {:>8.1} ms ({:>9.0}/s)  median {:>8.1} ms ({:>9.0}/s)",
            self.what,
            self.objects,
            best.as_secs_f64() * 1e3,
            rate(best),
            median.as_secs_f64() * 1e3,
            rate(median)
        );
    }
}

fn time(rounds: usize, mut body: impl FnMut() -> usize) -> (Vec<Duration>, usize) {
    let mut times = Vec::with_capacity(rounds);
    let mut failed = 0;
    for _ in 0..rounds {
        let start = Instant::now();
        failed = body();
        times.push(start.elapsed());
    }
    (times, failed)
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let (count, rounds) = if quick { (1_000, 2) } else { (10_000, 5) };
    let infra = AwsInfrastructure {
        infrastructure_name: "demo-x7k2p".into(),
        region: "us-east-2".into(),
        ip_family: IpFamily::IPv4,
        aws_cluster: Some(conversion::aws::cluster::AwsCluster::installer_default(
            "openshift-cluster-api",
            "demo-x7k2p",
        )),
    };
    let machines: Vec<mapi::Machine> = (0..count).map(machine).collect();
    let sets: Vec<mapi::MachineSet> = (0..count / 100).map(machine_set).collect();
    let pairs: Vec<(capi::Machine, AwsMachine)> = machines
        .iter()
        .filter_map(|m| to_capi::convert_machine(m, &infra).ok())
        .map(|c| (c.value.machine, c.value.aws_machine))
        .collect();
    assert_eq!(pairs.len(), count, "every benchmark Machine converts");
    let capi_sets: Vec<_> = sets
        .iter()
        .filter_map(|s| to_capi::convert_machine_set(s, &infra).ok())
        .map(|c| (c.value.machine_set, c.value.template))
        .collect();
    println!(
        "conversion benchmark ({}): {count} Machines, {} MachineSets, {rounds} rounds, release: {}",
        if quick { "quick" } else { "full" },
        sets.len(),
        !cfg!(debug_assertions)
    );

    let (rounds_to_capi, failed) = time(rounds, || {
        machines
            .iter()
            .filter(|m| to_capi::convert_machine(m, &infra).is_err())
            .count()
    });
    assert_eq!(failed, 0);
    let (rounds_to_mapi, failed) = time(rounds, || {
        pairs
            .iter()
            .filter(|(m, a)| to_mapi::convert_machine(m, a, &infra).is_err())
            .count()
    });
    assert_eq!(failed, 0);
    let (sets_to_capi, failed) = time(rounds, || {
        sets.iter()
            .filter(|s| to_capi::convert_machine_set(s, &infra).is_err())
            .count()
    });
    assert_eq!(failed, 0);
    let (sets_to_mapi, failed) = time(rounds, || {
        capi_sets
            .iter()
            .filter(|(s, t)| to_mapi::convert_machine_set(s, t, &infra).is_err())
            .count()
    });
    assert_eq!(failed, 0);
    for mut figure in [
        Figure {
            what: "Machine MAPI → CAPI",
            objects: count,
            rounds: rounds_to_capi,
        },
        Figure {
            what: "Machine CAPI → MAPI",
            objects: count,
            rounds: rounds_to_mapi,
        },
        Figure {
            what: "MachineSet MAPI → CAPI",
            objects: sets.len(),
            rounds: sets_to_capi,
        },
        Figure {
            what: "MachineSet CAPI → MAPI",
            objects: capi_sets.len(),
            rounds: sets_to_mapi,
        },
    ] {
        figure.print();
    }
}
