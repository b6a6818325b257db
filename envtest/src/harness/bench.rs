//! Measurements of the envtest server, shared by `benches/envtest.rs` and any wider
//! benchmark suite: start to ready, creating many objects, write-to-watch-event latency
//! and large lists. Each function returns [`Stats`] (median and percentiles of its
//! samples); [`run`] does them all with [`Sizes`] and gives a [`Report`].
//!
//! Timings are wall-clock on the calling runtime; run them on a multi-threaded tokio
//! runtime in a release build.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

use crate::harness::{ADMIN, EnvtestError, TestEnv};

/// Errors of a measurement.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Starting the server failed.
    #[error("bench: {0}")]
    Envtest(#[from] EnvtestError),
    /// A request failed.
    #[error("bench request: {0}")]
    Kube(#[from] kube::Error),
    /// Anything else (what went wrong, in words).
    #[error("bench: {0}")]
    Other(String),
}

/// How much work each measurement does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Sizes {
    /// Server starts measured.
    pub starts: usize,
    /// Objects created in the create measurement.
    pub creates: usize,
    /// Creates in flight at once.
    pub concurrency: usize,
    /// Writes whose watch event is timed.
    pub watch_events: usize,
    /// Objects in the listed collection.
    pub list_objects: usize,
    /// Lists timed.
    pub lists: usize,
}

impl Sizes {
    /// The sizes of the targets in issue 3 (10k objects).
    pub fn full() -> Self {
        Self {
            starts: 30,
            creates: 10_000,
            concurrency: 16,
            watch_events: 1_000,
            list_objects: 10_000,
            lists: 20,
        }
    }

    /// A quick smoke run (a tenth of the work).
    pub fn quick() -> Self {
        Self {
            starts: 5,
            creates: 1_000,
            concurrency: 16,
            watch_events: 100,
            list_objects: 1_000,
            lists: 5,
        }
    }
}

/// Summary of one measurement's samples, in milliseconds.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Stats {
    /// What was measured.
    pub name: String,
    /// Number of samples.
    pub samples: usize,
    /// Median.
    pub median_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Fastest sample.
    pub min_ms: f64,
    /// Slowest sample.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
    /// The target for the median, when there is one.
    pub target_ms: Option<f64>,
}

impl Stats {
    /// Summarizes samples (nearest-rank percentiles); `target_ms` applies to the median.
    pub fn of(name: impl Into<String>, samples: &[Duration], target_ms: Option<f64>) -> Self {
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |q: f64| -> f64 {
            if ms.is_empty() {
                return 0.0;
            }
            let index = ((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
            ms[index]
        };
        let mean = if ms.is_empty() {
            0.0
        } else {
            ms.iter().sum::<f64>() / ms.len() as f64
        };
        Self {
            name: name.into(),
            samples: ms.len(),
            median_ms: rank(0.5),
            p90_ms: rank(0.9),
            p99_ms: rank(0.99),
            min_ms: ms.first().copied().unwrap_or_default(),
            max_ms: ms.last().copied().unwrap_or_default(),
            mean_ms: mean,
            target_ms,
        }
    }

    /// Whether the median meets the target (`None` without a target).
    pub fn meets_target(&self) -> Option<bool> {
        self.target_ms.map(|t| self.median_ms <= t)
    }
}

/// Every measurement of a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Report {
    /// The sizes used.
    pub sizes: Sizes,
    /// One entry per measurement.
    pub results: Vec<Stats>,
}

impl Report {
    /// A plain-text table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<44} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10}  target",
            "measurement", "samples", "median ms", "p90 ms", "p99 ms", "min ms", "max ms"
        );
        for s in &self.results {
            let target = match (s.target_ms, s.meets_target()) {
                (Some(t), Some(true)) => format!("<= {t} ms: met"),
                (Some(t), _) => format!("<= {t} ms: MISSED"),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "{:<44} {:>7} {:>10.3} {:>10.3} {:>10.3} {:>10.3} {:>10.3}  {target}",
                s.name, s.samples, s.median_ms, s.p90_ms, s.p99_ms, s.min_ms, s.max_ms
            );
        }
        out
    }

    /// The JSON form (what `benches/envtest.rs` writes).
    pub fn to_json(&self) -> Value {
        let results: Vec<Value> = self
            .results
            .iter()
            .map(|s| {
                let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
                v["meets_target"] = json!(s.meets_target());
                v
            })
            .collect();
        json!({"sizes": self.sizes, "results": results})
    }
}

fn configmap(name: &str, i: usize) -> Result<ConfigMap, BenchError> {
    serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "labels": {"app": "bench", "shard": (i % 16).to_string()},
            "annotations": {"bench.example.com/index": i.to_string()},
        },
        "data": {"index": i.to_string(), "payload": "x".repeat(64)},
    }))
    .map_err(|e| BenchError::Other(e.to_string()))
}

/// Time from `TestEnv::builder().crd_dir(dir).start()` to the first answered request
/// (`GET /version` through the returned client), over `runs` starts.
pub async fn start_to_ready(crd_dir: &Path, runs: usize) -> Result<Stats, BenchError> {
    let crds = crate::harness::read_crd_dir(crd_dir)?.len();
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let env = TestEnv::builder().crd_dir(crd_dir).start().await?;
        env.client().apiserver_version().await?;
        samples.push(started.elapsed());
        env.stop().await;
    }
    Ok(Stats::of(
        format!("start to ready ({crds} CRDs)"),
        &samples,
        Some(50.0),
    ))
}

/// Creates `n` ConfigMaps through the kube client, `concurrency` at a time. Returns the
/// per-request latencies and the total time (one sample).
pub async fn create_objects(
    env: &TestEnv,
    namespace: &str,
    n: usize,
    concurrency: usize,
) -> Result<(Stats, Stats), BenchError> {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), namespace);
    let objects: Vec<ConfigMap> = (0..n)
        .map(|i| configmap(&format!("cm-{i:06}"), i))
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    let latencies: Vec<Duration> = futures::stream::iter(objects)
        .map(|object| {
            let api = api.clone();
            async move {
                let t = Instant::now();
                api.create(&PostParams::default(), &object).await?;
                Ok::<_, BenchError>(t.elapsed())
            }
        })
        .buffer_unordered(concurrency.max(1))
        .try_collect()
        .await?;
    let total = started.elapsed();
    Ok((
        Stats::of(
            format!("create {n} objects (total, {concurrency} in flight)"),
            &[total],
            Some(2000.0),
        ),
        Stats::of("create one object (latency under that load)", &latencies, None),
    ))
}

/// Time from issuing a write (a create through the kube client) to its ADDED event arriving
/// on a watch that is already open, `n` times, one write at a time.
pub async fn write_to_watch(env: &TestEnv, namespace: &str, n: usize) -> Result<Stats, BenchError> {
    let api: Api<ConfigMap> = Api::namespaced(env.client(), namespace);
    let rv = env.resource_version().to_string();
    let mut stream = api.watch(&WatchParams::default(), &rv).await?.boxed();
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("watched-{i:06}");
        let object = configmap(&name, i)?;
        let writer = api.clone();
        let started = Instant::now();
        let write = tokio::spawn(async move { writer.create(&PostParams::default(), &object).await });
        loop {
            let event = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
                .await
                .map_err(|_| BenchError::Other(format!("no watch event for {name}")))??
                .ok_or_else(|| BenchError::Other("the watch ended".into()))?;
            if let WatchEvent::Added(cm) = event
                && cm.metadata.name.as_deref() == Some(name.as_str())
            {
                samples.push(started.elapsed());
                break;
            }
        }
        write.await.map_err(|e| BenchError::Other(e.to_string()))??;
    }
    Ok(Stats::of("write to watch event", &samples, Some(1.0)))
}

/// Lists a collection of `objects` ConfigMaps `runs` times three ways: through the kube
/// client into typed objects, as raw bytes over HTTPS, and in-process through
/// [`crate::http::handler::handle`] (the server's own share).
pub async fn list_objects(
    env: &TestEnv,
    namespace: &str,
    objects: usize,
    runs: usize,
) -> Result<Vec<Stats>, BenchError> {
    let client = env.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let mut typed = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let list = api.list(&ListParams::default()).await?;
        typed.push(started.elapsed());
        if list.items.len() < objects {
            return Err(BenchError::Other(format!(
                "listed {} objects, expected {objects}",
                list.items.len()
            )));
        }
    }
    let path = format!("/api/v1/namespaces/{namespace}/configmaps");
    let mut raw = Vec::with_capacity(runs);
    for _ in 0..runs {
        let request = http::Request::get(&path)
            .body(Vec::new())
            .map_err(|e| BenchError::Other(e.to_string()))?;
        let started = Instant::now();
        let text = client.request_text(request).await?;
        raw.push(started.elapsed());
        if text.len() < objects {
            return Err(BenchError::Other("short list".into()));
        }
    }
    let shared = env.shared();
    let token = env
        .token(ADMIN)
        .ok_or_else(|| BenchError::Other("no admin token".into()))?
        .to_owned();
    let mut server = Vec::with_capacity(runs);
    for _ in 0..runs {
        let request = http::Request::get(&path)
            .header(http::header::AUTHORIZATION, format!("Bearer {token}"))
            .body(Full::new(Bytes::new()))
            .map_err(|e| BenchError::Other(e.to_string()))?;
        let started = Instant::now();
        let response = crate::http::handler::handle(shared.clone(), request).await;
        let body = response
            .into_body()
            .collect()
            .await
            .map_err(|e| BenchError::Other(format!("{e:?}")))?
            .to_bytes();
        server.push(started.elapsed());
        if body.len() < objects {
            return Err(BenchError::Other("short list".into()));
        }
    }
    Ok(vec![
        Stats::of(
            format!("list {objects} objects (kube client, typed)"),
            &typed,
            Some(100.0),
        ),
        Stats::of(format!("list {objects} objects (HTTPS, raw bytes)"), &raw, None),
        Stats::of(
            format!("list {objects} objects (server, in-process)"),
            &server,
            None,
        ),
    ])
}

/// Runs every measurement with `sizes`; `crd_dir` is the CRD directory started with.
pub async fn run(sizes: Sizes, crd_dir: &Path) -> Result<Report, BenchError> {
    let mut results = vec![start_to_ready(crd_dir, sizes.starts).await?];
    let env = TestEnv::builder()
        .crd_dir(crd_dir)
        .namespace("bench-create")
        .namespace("bench-watch")
        .namespace("bench-list")
        .start()
        .await?;
    let (total, each) = create_objects(&env, "bench-create", sizes.creates, sizes.concurrency).await?;
    results.push(total);
    results.push(each);
    results.push(write_to_watch(&env, "bench-watch", sizes.watch_events).await?);
    if sizes.list_objects != sizes.creates {
        create_objects(&env, "bench-list", sizes.list_objects, sizes.concurrency).await?;
        results.extend(list_objects(&env, "bench-list", sizes.list_objects, sizes.lists).await?);
    } else {
        results.extend(list_objects(&env, "bench-create", sizes.list_objects, sizes.lists).await?);
    }
    env.stop().await;
    Ok(Report { sizes, results })
}

/// The workspace root of this repository.
pub fn workspace_dir() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `deploy/crds` of this repository.
pub fn default_crd_dir() -> PathBuf {
    workspace_dir().join("deploy/crds")
}
