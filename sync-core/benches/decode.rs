//! What decoding a watched object costs: a MAPI Machine and its CAPI mirror, as envtest
//! serves them once the real sync has synchronized them (managed fields included), each
//! wrapped in a watch event line.
//!
//! ```text
//! cargo bench -p sync-core --bench decode
//! ```
//!
//! Rows: the caches' lenient decoding (`Lenient`: each object captured on its own, its
//! field sets kept as text), and, for reference, the plain typed decoding a hand-written
//! kube-runtime controller does (its field sets built as `serde_json::Value` trees); then
//! what a cache read decodes after decompressing, the pair as the store encodes it, as
//! JSON and as MessagePack (the store's own `sync_core::store::Encoding`); then the
//! store's own write (encoded, compressed against a dictionary of another object of the
//! fleet) and read (looked up, decompressed, decoded) of the pair. Each figure is the
//! median of 7 rounds of 20 000 pairs, in µs per pair. Nothing is asserted.

use std::time::{Duration, Instant};

use kube::Resource;
use kube::core::WatchEvent;
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;
use sync_core::api::{capi, mapi};
use sync_core::lenient::Lenient;
use sync_core::store::{Encoding, Store, Writer};

const ROUNDS: usize = 7;
const PAIRS: u32 = 20_000;

type BenchResult<T> = Result<T, Box<dyn std::error::Error>>;

fn main() -> BenchResult<()> {
    let mapi = event_line(include_str!("fixtures/mapi-machine.json"))?;
    let capi = event_line(include_str!("fixtures/capi-machine.json"))?;
    println!(
        "decode bench: a MAPI Machine ({} bytes) and its CAPI Machine ({} bytes) per pair",
        mapi.len(),
        capi.len()
    );
    let lenient = median(|| {
        decode::<Lenient<mapi::Machine>>(&mapi)?;
        decode::<Lenient<capi::Machine>>(&capi)
    })?;
    let typed = median(|| {
        decode::<mapi::Machine>(&mapi)?;
        decode::<capi::Machine>(&capi)
    })?;
    let (mapi_object, capi_object) = (valid::<mapi::Machine>(&mapi)?, valid::<capi::Machine>(&capi)?);
    let per_pair = |d: Duration| d.as_secs_f64() * 1e6 / f64::from(PAIRS);
    let row = |label: String, d: Duration| println!("{label:<66}{:>7.2}", per_pair(d));
    row(
        "lenient decoding, as the caches' watches do (µs per pair)".into(),
        lenient,
    );
    row(
        "plain typed decoding, as a hand-written controller does (µs)".into(),
        typed,
    );
    for encoding in [Encoding::Json, Encoding::MessagePack] {
        let (mut mapi_bytes, mut capi_bytes) = (Vec::new(), Vec::new());
        encoding.encode(&mapi_object, &mut mapi_bytes)?;
        encoding.encode(&capi_object, &mut capi_bytes)?;
        let read = median(|| {
            std::hint::black_box(encoding.decode::<mapi::Machine>(&mapi_bytes)?);
            std::hint::black_box(encoding.decode::<capi::Machine>(&capi_bytes)?);
            Ok(())
        })?;
        let (mapi_size, capi_size) = (mapi_bytes.len(), capi_bytes.len());
        row(
            format!("a cache read's decoding, {encoding:?} ({mapi_size} + {capi_size} bytes; µs)"),
            read,
        );
    }
    let (mut mapi_cache, mut capi_cache) = (cache(&mapi_object), cache(&capi_object));
    let write = median(|| {
        mapi_cache.write();
        capi_cache.write();
        Ok(())
    })?;
    row("a cache write: encoded, compressed, stored (µs)".into(), write);
    let read = median(|| {
        std::hint::black_box(mapi_cache.read()?);
        std::hint::black_box(capi_cache.read()?);
        Ok(())
    })?;
    row("a cache read: looked up, decompressed, decoded (µs)".into(), read);
    Ok(())
}

/// A store of `K` as the caches keep them, its dictionary another object of the fleet,
/// and the watch event that writes the measured object.
struct Cache<K> {
    writer: Writer<K>,
    store: Store<K>,
    event: watcher::Event<K>,
    namespace: Option<String>,
    name: String,
}

fn cache<K: Resource + Clone + Serialize>(object: &K) -> Cache<K> {
    let mut writer = Writer::new(Encoding::MessagePack);
    let mut first = object.clone();
    first.meta_mut().name = Some("first-of-the-fleet".into());
    writer.apply_watcher_event(&watcher::Event::Apply(first));
    let event = watcher::Event::Apply(object.clone());
    writer.apply_watcher_event(&event);
    Cache {
        store: writer.as_reader(),
        writer,
        event,
        namespace: object.meta().namespace.clone(),
        name: object.meta().name.clone().unwrap_or_default(),
    }
}

impl<K: Resource + Serialize + DeserializeOwned> Cache<K> {
    fn write(&mut self) {
        self.writer.apply_watcher_event(&self.event);
    }

    fn read(&self) -> BenchResult<std::sync::Arc<K>> {
        self.store
            .get_named(self.namespace.as_deref(), &self.name)
            .ok_or_else(|| "the object is cached".into())
    }
}

/// The object of a watch line, as the caches decode it.
fn valid<K: DeserializeOwned + kube::Resource>(line: &[u8]) -> BenchResult<K> {
    match serde_json::from_slice::<WatchEvent<Lenient<K>>>(line)? {
        WatchEvent::Modified(Lenient::Valid(object)) => Ok(object),
        _ => Err("the fixture does not decode as its kind".into()),
    }
}

/// An object's JSON as one line of a watch stream, `type` first as the API server sends
/// it (with `object` first, the event would be buffered before it is decoded).
fn event_line(object: &str) -> BenchResult<Vec<u8>> {
    let object = serde_json::to_string(&serde_json::from_str::<serde_json::Value>(object)?)?;
    Ok(format!(r#"{{"type":"MODIFIED","object":{object}}}"#).into_bytes())
}

fn decode<K: DeserializeOwned>(line: &[u8]) -> BenchResult<()> {
    std::hint::black_box(serde_json::from_slice::<WatchEvent<K>>(line)?);
    Ok(())
}

/// The median time of [`ROUNDS`] rounds of [`PAIRS`] calls of `pair`.
fn median(mut pair: impl FnMut() -> BenchResult<()>) -> BenchResult<Duration> {
    let mut rounds = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let started = Instant::now();
        for _ in 0..PAIRS {
            pair()?;
        }
        rounds.push(started.elapsed());
    }
    rounds.sort();
    Ok(rounds[ROUNDS / 2])
}
