//! The benchmark's measurement functions run end to end on tiny sizes (no timing is
//! asserted: figures come from `cargo bench -p envtest --bench envtest`).

use envtest::harness::bench::{self, Sizes};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_measurement_runs() -> Result<(), Box<dyn std::error::Error>> {
    let sizes = Sizes {
        starts: 1,
        creates: 20,
        concurrency: 4,
        watch_events: 5,
        list_objects: 30,
        lists: 2,
    };
    let report = bench::run(sizes, &bench::default_crd_dir()).await?;
    let names: Vec<&str> = report.results.iter().map(|s| s.name.as_str()).collect();
    let crds = envtest::harness::read_crd_dir(&bench::default_crd_dir())?.len();
    let start = format!("start to ready ({crds} CRDs)");
    assert_eq!(
        names,
        [
            start.as_str(),
            "create 20 objects (total, 4 in flight)",
            "create one object (latency under that load)",
            "write to watch event",
            "list 30 objects (kube client, typed)",
            "list 30 objects (HTTPS, raw bytes)",
            "list 30 objects (server, in-process)",
        ]
    );
    let samples: Vec<usize> = report.results.iter().map(|s| s.samples).collect();
    assert_eq!(samples, [1, 1, 20, 5, 2, 2, 2]);
    assert!(
        report
            .results
            .iter()
            .all(|s| s.min_ms <= s.median_ms && s.median_ms <= s.max_ms)
    );
    let json = report.to_json();
    assert_eq!(json["results"].as_array().map(Vec::len), Some(7));
    assert!(report.table().lines().count() == 8);
    Ok(())
}
