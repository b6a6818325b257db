//! The controllers' caches: a reflector store that keeps each object compressed.
//!
//! A decoded object is several times its JSON: every string, map and `Option` of the
//! Rust types is its own allocation, and a fleet's caches held ~16 KB per pair that way
//! (a Machine, its mirror and its infrastructure object). But the objects of one store
//! (one kind, one fleet) are nearly alike, so each is kept encoded and compressed as an
//! LZ4 block against the store's first object (a raw-content dictionary): a ~2.3 KB
//! Machine takes ~200 bytes. Reading an object decodes it, microseconds: a reconcile
//! reads its pair's few objects; [`Store::state`] decodes every object and is for rare
//! paths.
//!
//! The encoding is MessagePack ([`Encoding`]): the same fields and values as JSON, with
//! lengths before strings rather than quotes around them, so a Machine decodes in about
//! half the time it takes from JSON. The metadata is written apart, as arrays with
//! numeric timestamps (`meta`), and the pair kinds' own timestamps as numbers
//! (`api::times`): names and printed times were most of what remained.
//!
//! The API is kube's `reflector::Store` and `store::Writer`, as far as the engine uses
//! them: a [`Writer`] applies watcher events (a relist's objects are swapped in at its
//! end), any number of [`Store`] handles read. A watched change applied with
//! [`Writer::apply_decoded`] is also kept decoded until its first read (`fresh`).

mod fresh;
mod meta;
mod packed;
mod skip;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use kube::Resource;
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::runtime::hash::Map;
use fresh::Fresh;
pub use packed::Encoding;
pub(crate) use packed::Packed;

/// Namespace (`""` when cluster-scoped) → name → object: looked up without allocating.
type Objects = Map<Box<str>, Map<Box<str>, Packed>>;

struct Shared<K> {
    objects: RwLock<Objects>,
    /// The last objects applied by [`Writer::apply_decoded`], not read yet; written under
    /// `objects`' write lock, so each is the version `objects` holds.
    fresh: Mutex<Fresh<K>>,
    /// Advanced by every write ([`Store::generation`]).
    generation: AtomicU64,
    encoding: Encoding,
    /// The encoding of the first object packed; fixed from then on, since every block
    /// needs it.
    dictionary: OnceLock<Box<[u8]>>,
    ready: tokio::sync::watch::Sender<bool>,
}

/// Read access to a cache; cheap to clone, every clone sees the same objects.
pub struct Store<K> {
    shared: Arc<Shared<K>>,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

impl<K> Store<K> {
    /// A store that holds nothing and is never filled: for code that takes a cache where
    /// no controller runs (a test, a one-shot tool), so that every lookup goes live.
    pub fn empty() -> Self {
        Self::new(Encoding::default())
    }

    fn new(encoding: Encoding) -> Self {
        Self {
            shared: Arc::new(Shared {
                objects: RwLock::default(),
                fresh: Mutex::default(),
                generation: AtomicU64::new(0),
                encoding,
                dictionary: OnceLock::new(),
                ready: tokio::sync::watch::Sender::new(false),
            }),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, Objects> {
        self.shared
            .objects
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, Objects> {
        let objects = self
            .shared
            .objects
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Under the lock: a reader that saw this generation waits for the write.
        self.shared.generation.fetch_add(1, Ordering::AcqRel);
        objects
    }

    /// A number that changes with every write to the store: two equal readings mean the
    /// same objects, so a scan's result (a metric's counts) can be kept until it moves.
    /// Read it before the scan: a write during the scan then shows as a change next time.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::Acquire)
    }

    /// How many objects the store holds.
    pub fn len(&self) -> usize {
        self.read().values().map(Map::len).sum()
    }

    /// Whether the store holds no object.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The names of every object held (in any namespace), without decoding any.
    pub fn names(&self) -> Vec<String> {
        self.read()
            .values()
            .flat_map(|by_name| by_name.keys().map(|name| name.to_string()))
            .collect()
    }

    /// The heap bytes the cached objects' blocks take (what this store exists to keep
    /// small; the keys and the dictionary are not counted).
    pub fn packed_bytes(&self) -> usize {
        self.read().values().flat_map(Map::values).map(Packed::len).sum()
    }

    /// Whether the first list has been applied.
    pub fn is_ready(&self) -> bool {
        *self.shared.ready.borrow()
    }

    /// Waits until the first list has been applied.
    pub async fn wait_until_ready(&self) {
        let mut ready = self.shared.ready.subscribe();
        // The sender lives in `self`: the wait ends only by becoming ready.
        let _ = ready.wait_for(|ready| *ready).await;
    }

    /// Whether the store holds the object `name` in `namespace` (`None`: cluster-scoped),
    /// without decoding it.
    pub fn contains(&self, namespace: Option<&str>, name: &str) -> bool {
        self.read()
            .get(namespace.unwrap_or_default())
            .is_some_and(|by_name| by_name.contains_key(name))
    }

    /// The resourceVersion of the object `name` in `namespace` (`None`: cluster-scoped),
    /// without decoding it.
    pub fn resource_version(&self, namespace: Option<&str>, name: &str) -> Option<String> {
        self.read()
            .get(namespace.unwrap_or_default())
            .and_then(|by_name| by_name.get(name))
            .and_then(|packed| packed.resource_version().map(str::to_owned))
    }

    fn fresh(&self) -> std::sync::MutexGuard<'_, Fresh<K>> {
        self.shared
            .fresh
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every object's entry, for a relist to compare with (no object is decoded).
    pub(crate) fn snapshot(&self) -> Map<(String, String), Packed> {
        self.read()
            .iter()
            .flat_map(|(namespace, by_name)| {
                by_name
                    .iter()
                    .map(move |(name, packed)| ((namespace.to_string(), name.to_string()), packed.clone()))
            })
            .collect()
    }
}

impl<K: Resource + DeserializeOwned> Store<K> {
    /// The object `key` names, decoded.
    pub fn get(&self, key: &ObjectRef<K>) -> Option<Arc<K>> {
        self.get_named(key.namespace.as_deref(), &key.name)
    }

    /// The object `name` in `namespace` (`None`: cluster-scoped), decoded.
    pub fn get_named(&self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        // Kept by `Writer::apply_decoded`, and not read since.
        if let Some(fresh) = self.fresh().take(namespace, name) {
            return Some(fresh);
        }
        let bytes = self.decompressed(namespace, name)?;
        self.decode(bytes).map(Arc::new)
    }

    /// The packed entry of `name` in `namespace`, decompressed under the read lock, so the
    /// entry is not copied out first; `None` when the store does not hold it.
    fn decompressed(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Option<Result<Vec<u8>, lz4_flex::block::DecompressError>> {
        let dictionary = self.shared.dictionary.get()?;
        Some(
            self.read()
                .get(namespace.unwrap_or_default())
                .and_then(|by_name| by_name.get(name))?
                .decompressed(dictionary),
        )
    }

    /// The fields `V` declares of the object `name` in `namespace`, the rest skipped
    /// unread: a question about a few fields (is this pair settled?) asked of every
    /// object at a restart then costs a fraction of decoding each. Read from the packed entry,
    /// which is always the latest (a version kept decoded stays for its first full read).
    /// `None` when the object is absent, or (logged) does not decode as `V`.
    pub fn glance<V: DeserializeOwned>(&self, namespace: Option<&str>, name: &str) -> Option<V> {
        self.decode_part(self.decompressed(namespace, name)?, "it is read whole instead")
    }

    /// Every object, decoded: a whole-store scan, for rare paths. It holds every object
    /// decoded at once (about ten times its packed size); a scan that reads each object
    /// once takes [`Store::each`].
    pub fn state(&self) -> Vec<Arc<K>> {
        self.each().map(Arc::new).collect()
    }

    /// Every object, each decoded as the iterator reaches it: a whole-store scan that holds
    /// the entries as packed (copied under the lock, which writers then have again) and one
    /// object decoded at a time, so a scrape that counts conditions over 10 000 Machines
    /// does not hold 10 000 decoded Machines.
    pub fn each(&self) -> impl Iterator<Item = K> + '_ {
        let entries: Vec<Packed> = self.read().values().flat_map(Map::values).cloned().collect();
        entries.into_iter().filter_map(|packed| self.unpack(&packed))
    }

    /// [`Store::glance`] at every object, each as the iterator reaches it (the entries
    /// copied as packed under the lock, as [`Store::each`] does): a scan that counts one
    /// field over the whole store skips the rest of each object unread. An object that
    /// does not decode as `V` is logged and left out.
    pub fn each_glance<V: DeserializeOwned>(&self) -> impl Iterator<Item = V> + '_ {
        let entries: Vec<Packed> = self.read().values().flat_map(Map::values).cloned().collect();
        let dictionary = self.shared.dictionary.get();
        entries.into_iter().filter_map(move |packed| {
            self.decode_part(packed.decompressed(dictionary?), "it is left out of the scan")
        })
    }

    /// The part `V` declares of an entry's decompressed bytes ([`Store::glance`]); a
    /// failure is logged with what the caller does `instead`.
    fn decode_part<V: DeserializeOwned>(
        &self,
        bytes: Result<Vec<u8>, lz4_flex::block::DecompressError>,
        instead: &'static str,
    ) -> Option<V> {
        let encoding = self.shared.encoding;
        bytes
            .map_err(|error| error.to_string())
            .and_then(|bytes| encoding.decode_part::<V>(&bytes))
            .inspect_err(|error| {
                tracing::error!(
                    kind = std::any::type_name::<K>(), part = std::any::type_name::<V>(), %error,
                    "a cached object's part does not decode; {instead}"
                );
            })
            .ok()
    }

    /// An entry of this store decoded. It was encoded from a valid object, so a failure
    /// is a bug (or a type whose serde code is tied to JSON, cached as MessagePack):
    /// logged, and the object reads as absent.
    pub(crate) fn unpack(&self, packed: &Packed) -> Option<K> {
        let dictionary = self.shared.dictionary.get()?;
        self.decode(packed.decompressed(dictionary))
    }

    /// An entry's decompressed bytes decoded (see [`Store::unpack`] on failures).
    fn decode(&self, bytes: Result<Vec<u8>, lz4_flex::block::DecompressError>) -> Option<K> {
        let encoding = self.shared.encoding;
        let decoded = bytes
            .map_err(|error| error.to_string())
            .and_then(|bytes| encoding.decode(&bytes));
        match decoded {
            Ok(object) => Some(object),
            Err(error) => {
                tracing::error!(
                    kind = std::any::type_name::<K>(), ?encoding, %error,
                    "a cached object does not decode; a field of serde_json's RawValue does not survive MessagePack: make it a sync_core::api::RawObject or a serde_json::Value"
                );
                None
            }
        }
    }
}

type Scan<K, T> = Box<dyn Fn(&Store<K>) -> T + Send + Sync>;

/// A whole-store scan's result, kept until the store changes ([`Store::generation`]): for
/// a figure read at every metrics scrape, so that an idle process decodes nothing.
pub struct KeptScan<K, T> {
    store: Store<K>,
    scan: Scan<K, T>,
    last: Mutex<Option<(u64, T)>>,
}

impl<K, T: Clone> KeptScan<K, T> {
    /// `scan` of `store`, run again only once the store has changed.
    pub fn new(store: Store<K>, scan: impl Fn(&Store<K>) -> T + Send + Sync + 'static) -> Self {
        Self {
            store,
            scan: Box::new(scan),
            last: Mutex::new(None),
        }
    }

    /// The scan's result for the store as it is now.
    pub fn get(&self) -> T {
        let generation = self.store.generation();
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match &*last {
            Some((scanned, result)) if *scanned == generation => result.clone(),
            _ => {
                let result = (self.scan)(&self.store);
                *last = Some((generation, result.clone()));
                result
            }
        }
    }
}

/// The largest scratch buffer a writer keeps: an object far larger than its kind's
/// usual few KiB does not leave its buffers behind.
const KEPT_BUFFER: usize = 64 * 1024;

/// Writes a [`Store`] from a watcher's events; one per store, owned by the engine.
pub struct Writer<K> {
    store: Store<K>,
    /// A relist's objects, swapped in when it completes.
    relist: Option<Objects>,
    /// An object's encoding, then its compressed block: buffers kept from one write to the
    /// next, so that packing allocates only the entry itself.
    encoded: Vec<u8>,
    block: Vec<u8>,
}

impl<K> Default for Writer<K> {
    /// A writer of a store that encodes as JSON ([`Encoding::Json`]).
    fn default() -> Self {
        Self::new(Encoding::default())
    }
}

impl<K> Writer<K> {
    /// A writer of a new store that encodes its objects as `encoding` says.
    pub fn new(encoding: Encoding) -> Self {
        Self {
            store: Store::new(encoding),
            relist: None,
            encoded: Vec::new(),
            block: Vec::new(),
        }
    }

    /// A handle that reads what this writer writes.
    pub fn as_reader(&self) -> Store<K> {
        self.store.clone()
    }
}

impl<K: Resource> Writer<K> {
    /// Removes an object (one that became malformed, say) from the live store.
    pub(crate) fn remove(&mut self, namespace: Option<&str>, name: &str) {
        let mut objects = self.store.write();
        let decoded = self.store.fresh().take(namespace, name);
        if let Some(by_name) = objects.get_mut(namespace.unwrap_or_default()) {
            by_name.remove(name);
            if by_name.is_empty() {
                objects.remove(namespace.unwrap_or_default());
            }
        }
        drop(objects);
        drop(decoded);
    }
}

impl<K: Resource + Serialize> Writer<K> {
    /// Applies a watched change (a watcher's `Apply`) whose object the caller goes on
    /// using, and keeps it decoded until the store's first read of it: the reconcile the
    /// change triggers then finds it without decoding it again.
    pub fn apply_decoded(&mut self, object: Arc<K>) {
        self.apply_live(&object, Some(Arc::clone(&object)));
    }

    /// Packs `object` into the live store. The version kept decoded before is dropped
    /// (it is older now), and `keep` (this version, decoded) kept in its place.
    fn apply_live(&mut self, object: &K, keep: Option<Arc<K>>) {
        let Some(packed) = self.pack(object) else { return };
        let meta = object.meta();
        let displaced = {
            let mut objects = self.store.write();
            insert(&mut objects, meta, packed);
            let mut fresh = self.store.fresh();
            match keep {
                Some(decoded) => fresh.put(decoded),
                None => {
                    let name = meta.name.as_deref().unwrap_or_default();
                    [fresh.take(meta.namespace.as_deref(), name), None]
                }
            }
        };
        drop(displaced);
    }

    /// `object` encoded and compressed against the store's dictionary (the first object
    /// packed becomes it); `None`, logged, when it does not encode.
    fn pack(&mut self, object: &K) -> Option<Packed> {
        let shared = &self.store.shared;
        self.encoded.clear();
        if let Err(error) = shared.encoding.encode(object, &mut self.encoded) {
            tracing::error!(kind = std::any::type_name::<K>(), %error, "an object does not encode; not cached");
            return None;
        }
        let dictionary = shared
            .dictionary
            .get_or_init(|| self.encoded.clone().into_boxed_slice());
        let version = object.meta().resource_version.as_deref();
        let packed = Packed::new(version, &self.encoded, dictionary, &mut self.block);
        for buffer in [&mut self.encoded, &mut self.block] {
            if buffer.capacity() > KEPT_BUFFER {
                *buffer = Vec::new();
            }
        }
        if packed.is_none() {
            tracing::error!(
                kind = std::any::type_name::<K>(),
                "an object does not compress; not cached"
            );
        }
        packed
    }

    /// Applies one watcher event, as kube's `Writer` does: a relist (`Init` ..
    /// `InitDone`) replaces the store's objects at once when it completes, and the store
    /// is ready from the first completed list on.
    pub fn apply_watcher_event(&mut self, event: &watcher::Event<K>) {
        match event {
            watcher::Event::Init => self.relist = Some(Objects::default()),
            watcher::Event::InitApply(object) => {
                if let Some(packed) = self.pack(object) {
                    let relist = self.relist.get_or_insert_with(Objects::default);
                    insert(relist, object.meta(), packed);
                }
            }
            watcher::Event::InitDone => {
                let relisted = self.relist.take().unwrap_or_default();
                let displaced = {
                    let mut objects = self.store.write();
                    *objects = relisted;
                    self.store.fresh().clear()
                };
                drop(displaced);
                self.store
                    .shared
                    .ready
                    .send_if_modified(|ready| !std::mem::replace(ready, true));
            }
            watcher::Event::Apply(object) => self.apply_live(object, None),
            watcher::Event::Delete(object) => {
                let meta = object.meta();
                self.remove(
                    meta.namespace.as_deref(),
                    meta.name.as_deref().unwrap_or_default(),
                );
            }
        }
    }
}

fn insert(
    objects: &mut Objects,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    packed: Packed,
) {
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let name: Box<str> = meta.name.as_deref().unwrap_or_default().into();
    match objects.get_mut(namespace) {
        Some(by_name) => {
            by_name.insert(name, packed);
        }
        None => {
            objects.insert(namespace.into(), [(name, packed)].into_iter().collect());
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn configmap(name: &str, version: &str, value: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(version.into()),
                labels: Some([("app".to_owned(), "fleet".to_owned())].into()),
                ..ObjectMeta::default()
            },
            data: Some([("key".to_owned(), value.to_owned())].into()),
            ..ConfigMap::default()
        }
    }

    fn key(name: &str) -> ObjectRef<ConfigMap> {
        ObjectRef::new(name).within("ns")
    }

    /// What a glance at a ConfigMap declares: one data key.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Key {
        data: KeyData,
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct KeyData {
        key: String,
    }

    #[test]
    fn a_glance_decodes_only_its_fields_in_either_encoding_and_reads_the_latest() {
        for encoding in [Encoding::Json, Encoding::MessagePack] {
            let mut writer = Writer::<ConfigMap>::new(encoding);
            let store = writer.as_reader();
            writer.apply_watcher_event(&watcher::Event::Apply(configmap("a", "1", "first")));
            let glance = store.glance::<Key>(Some("ns"), "a");
            assert_eq!(
                glance.map(|k| k.data.key).as_deref(),
                Some("first"),
                "{encoding:?}"
            );
            // A version kept decoded for its first read is also the packed one.
            writer.apply_decoded(Arc::new(configmap("a", "2", "second")));
            let glance = store.glance::<Key>(Some("ns"), "a");
            assert_eq!(
                glance.map(|k| k.data.key).as_deref(),
                Some("second"),
                "{encoding:?}"
            );
            assert_eq!(
                store
                    .get(&key("a"))
                    .and_then(|a| a.metadata.resource_version.clone())
                    .as_deref(),
                Some("2"),
                "the glance left the kept version to the full read"
            );
            assert_eq!(store.glance::<Key>(Some("ns"), "b"), None, "absent");
            assert_eq!(store.glance::<Key>(Some("other"), "a"), None, "another namespace");
            // A part the object does not have (a ConfigMap has no `data.key` here).
            writer.apply_watcher_event(&watcher::Event::Apply(ConfigMap {
                data: None,
                ..configmap("c", "3", "")
            }));
            assert_eq!(store.glance::<Key>(Some("ns"), "c"), None, "{encoding:?}");
            assert!(store.get(&key("c")).is_some(), "the whole object still decodes");
        }
    }

    #[test]
    fn a_glance_at_every_object_reads_each_latest_part_once() {
        for encoding in [Encoding::Json, Encoding::MessagePack] {
            let mut writer = Writer::<ConfigMap>::new(encoding);
            let store = writer.as_reader();
            writer.apply_watcher_event(&watcher::Event::Apply(configmap("a", "1", "first")));
            writer.apply_watcher_event(&watcher::Event::Apply(configmap("b", "1", "other")));
            writer.apply_decoded(Arc::new(configmap("a", "2", "second")));
            let mut keys: Vec<String> = store.each_glance::<Key>().map(|k| k.data.key).collect();
            keys.sort();
            assert_eq!(keys, ["other", "second"], "{encoding:?}");
        }
    }

    #[test]
    fn an_object_reads_back_as_it_was_written_and_a_delete_removes_it() {
        let mut writer = Writer::<ConfigMap>::default();
        let store = writer.as_reader();
        let a = configmap("a", "1", "first");
        writer.apply_watcher_event(&watcher::Event::Apply(a.clone()));
        writer.apply_watcher_event(&watcher::Event::Apply(configmap("b", "2", "second")));
        assert_eq!(store.get(&key("a")).as_deref(), Some(&a));
        assert_eq!(store.get(&ObjectRef::new("a").within("other")), None);
        assert!(store.contains(Some("ns"), "a"));
        assert!(!store.contains(Some("other"), "a"));
        assert!(!store.contains(Some("ns"), "c"));
        assert_eq!(store.len(), 2);
        let changed = configmap("a", "3", "changed");
        writer.apply_watcher_event(&watcher::Event::Apply(changed.clone()));
        assert_eq!(store.get(&key("a")).as_deref(), Some(&changed));
        writer.apply_watcher_event(&watcher::Event::Delete(changed));
        assert_eq!(store.get(&key("a")), None);
        let mut names = store.names();
        names.sort();
        assert_eq!(names, ["b"]);
        assert_eq!(store.state().len(), 1);
    }

    #[test]
    fn a_scan_decodes_each_object_as_it_goes_and_leaves_the_store_to_writers() {
        let mut writer = Writer::<ConfigMap>::new(Encoding::MessagePack);
        let store = writer.as_reader();
        for (name, version) in [("a", "1"), ("b", "2"), ("c", "3")] {
            writer.apply_watcher_event(&watcher::Event::Apply(configmap(name, version, name)));
        }
        let mut scan = store.each();
        let first = scan.next();
        // Mid-scan, a write goes through (the scan holds no lock) and does not change what
        // the scan reads: the entries as they were when it started.
        writer.apply_watcher_event(&watcher::Event::Apply(configmap("d", "4", "d")));
        writer.apply_watcher_event(&watcher::Event::Apply(configmap("a", "5", "changed")));
        let mut read: Vec<(String, String)> = first
            .into_iter()
            .chain(scan)
            .map(|c| {
                (
                    c.metadata.name.unwrap_or_default(),
                    c.metadata.resource_version.unwrap_or_default(),
                )
            })
            .collect();
        read.sort();
        assert_eq!(
            read,
            [("a", "1"), ("b", "2"), ("c", "3")].map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
        assert_eq!(store.len(), 4);
    }

    #[test]
    fn a_watched_change_is_read_once_as_applied_then_decoded_from_the_cache() {
        let mut writer = Writer::<ConfigMap>::new(Encoding::MessagePack);
        let store = writer.as_reader();
        let applied = Arc::new(configmap("a", "1", "first"));
        writer.apply_decoded(applied.clone());

        let Some(first) = store.get(&key("a")) else {
            panic!("the applied object is cached");
        };
        assert!(
            Arc::ptr_eq(&first, &applied),
            "the first read takes the kept object"
        );
        let Some(second) = store.get(&key("a")) else {
            panic!("the object stays cached");
        };
        assert!(!Arc::ptr_eq(&second, &applied), "a later read decodes");
        assert_eq!(second, applied);
        assert_eq!(store.resource_version(Some("ns"), "a").as_deref(), Some("1"));
    }

    #[test]
    fn a_kept_object_never_outlives_its_version() {
        let mut writer = Writer::<ConfigMap>::new(Encoding::MessagePack);
        let store = writer.as_reader();
        let version = |store: &Store<ConfigMap>| {
            store
                .get(&key("a"))
                .and_then(|object| object.metadata.resource_version.clone())
        };

        // A newer version applied as a plain event.
        writer.apply_decoded(Arc::new(configmap("a", "1", "x")));
        writer.apply_watcher_event(&watcher::Event::Apply(configmap("a", "2", "y")));
        assert_eq!(version(&store).as_deref(), Some("2"));

        // A deletion, and a removal.
        writer.apply_decoded(Arc::new(configmap("a", "3", "x")));
        writer.apply_watcher_event(&watcher::Event::Delete(configmap("a", "3", "x")));
        assert_eq!(version(&store), None);
        writer.apply_decoded(Arc::new(configmap("a", "4", "x")));
        writer.remove(Some("ns"), "a");
        assert_eq!(version(&store), None);

        // A relist that found another version.
        writer.apply_decoded(Arc::new(configmap("a", "5", "x")));
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(configmap("a", "6", "y")));
        assert_eq!(store.resource_version(Some("ns"), "a").as_deref(), Some("5"));
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert_eq!(version(&store).as_deref(), Some("6"));
        assert_eq!(store.fresh().len(), 0);
    }

    #[test]
    fn a_burst_of_changes_keeps_few_objects_decoded() {
        let mut writer = Writer::<ConfigMap>::new(Encoding::MessagePack);
        let store = writer.as_reader();
        let total = 3 * fresh::CAPACITY;
        for index in 0..total {
            writer.apply_decoded(Arc::new(configmap(&format!("m-{index}"), "1", "x")));
        }
        assert_eq!(store.fresh().len(), fresh::CAPACITY);
        assert_eq!(store.len(), total);
        for index in 0..total {
            let name = format!("m-{index}");
            let object = store.get(&key(&name));
            assert_eq!(object.and_then(|o| o.metadata.name.clone()), Some(name));
        }
        assert_eq!(store.fresh().len(), 0, "every kept object was read");
    }

    #[test]
    fn the_generation_moves_with_every_write_and_only_then() {
        let mut writer = Writer::<ConfigMap>::new(Encoding::MessagePack);
        let store = writer.as_reader();
        let mut seen = store.generation();
        let mut moved = |store: &Store<ConfigMap>| {
            let now = store.generation();
            std::mem::replace(&mut seen, now) != now
        };
        writer.apply_watcher_event(&watcher::Event::Apply(configmap("a", "1", "x")));
        assert!(moved(&store), "an apply");
        let _ = (store.get(&key("a")), store.len(), store.state(), store.names());
        assert!(!moved(&store), "reads leave it");
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(configmap("b", "2", "y")));
        assert!(!moved(&store), "a relist in progress is not visible");
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert!(moved(&store), "a completed relist");
        writer.apply_watcher_event(&watcher::Event::Delete(configmap("b", "2", "y")));
        assert!(moved(&store), "a delete");
        writer.remove(Some("ns"), "gone");
        assert!(moved(&store), "a removal, even of nothing: a reader cannot tell");
    }

    #[test]
    fn a_kept_scan_runs_again_only_after_a_write() {
        let mut writer = Writer::<ConfigMap>::new(Encoding::MessagePack);
        let scans = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = scans.clone();
        let kept = KeptScan::new(writer.as_reader(), move |store: &Store<ConfigMap>| {
            counted.fetch_add(1, Ordering::Relaxed);
            let mut names = store.each().filter_map(|c| c.metadata.name).collect::<Vec<_>>();
            names.sort();
            names
        });
        writer.apply_watcher_event(&watcher::Event::Apply(configmap("a", "1", "x")));
        assert_eq!(kept.get(), ["a"]);
        assert_eq!(kept.get(), ["a"]);
        assert_eq!(scans.load(Ordering::Relaxed), 1, "unchanged: kept");
        writer.apply_watcher_event(&watcher::Event::Apply(configmap("b", "2", "y")));
        assert_eq!(kept.get(), ["a", "b"]);
        assert_eq!(scans.load(Ordering::Relaxed), 2, "changed: scanned again");
    }

    #[test]
    fn a_relist_replaces_the_objects_when_it_completes_and_makes_the_store_ready() {
        let mut writer = Writer::<ConfigMap>::default();
        let store = writer.as_reader();
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(configmap("a", "1", "x")));
        assert!(!store.is_ready());
        assert!(store.wait_until_ready().now_or_never().is_none());
        assert_eq!(store.get(&key("a")), None, "a list in progress is not visible");
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert!(store.wait_until_ready().now_or_never().is_some());
        assert!(store.get(&key("a")).is_some());
        // A relist without "a" but with "b": "a" stays visible until the relist is done.
        writer.apply_watcher_event(&watcher::Event::Init);
        writer.apply_watcher_event(&watcher::Event::InitApply(configmap("b", "2", "y")));
        assert!(store.get(&key("a")).is_some());
        writer.apply_watcher_event(&watcher::Event::InitDone);
        assert_eq!(store.get(&key("a")), None);
        assert_eq!(
            store.snapshot().into_keys().collect::<Vec<_>>(),
            [("ns".to_owned(), "b".to_owned())]
        );
        assert!(store.is_ready());
    }

    /// The pair kinds (in both encodings), and an infrastructure object, read back equal
    /// to what was cached, field sets (kept as text) included.
    #[test]
    fn the_pair_kinds_read_back_as_cached() -> Result<(), serde_json::Error> {
        use crate::api::{capi, mapi};
        use crate::runtime::infra::InfraObject;
        let managed = serde_json::json!([{
            "manager": "machine-sync", "operation": "Apply", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "time": "2026-12-01T00:00:00Z",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {".": {}}}
        }]);
        let metadata = serde_json::json!({
            "name": "worker-a", "namespace": "ns", "resourceVersion": "7", "uid": "u-1",
            "labels": {"a": "b"}, "annotations": {"x": "y"}, "finalizers": ["f"],
            "creationTimestamp": "2026-12-01T00:00:00Z", "managedFields": managed,
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u-2", "controller": true}]
        });
        let mapi = serde_json::json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine", "metadata": metadata,
            "spec": {"authoritativeAPI": "MachineAPI", "providerSpec": {"value": {
                "apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
                "instanceType": "m6i.xlarge", "blockDevices": [{"ebs": {"volumeSize": 120}}],
                "tags": [{"name": "k", "value": "v"}]
            }}},
            "status": {"phase": "Running", "conditions": [{"type": "Synchronized", "status": "True",
                "lastTransitionTime": "2026-12-01T00:00:00Z"}]}
        });
        let capi = serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": metadata,
            "spec": {"clusterName": "c", "bootstrap": {"dataSecretName": "s"},
                "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachine", "name": "worker-a"}}
        });
        let aws = serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine", "metadata": metadata,
            "spec": {"instanceType": "m6i.xlarge"}, "status": {"ready": true}
        });
        round_trip::<mapi::Machine>(&mapi)?;
        round_trip::<capi::Machine>(&capi)?;
        // An infrastructure object: metadata decoded, the rest kept as text.
        let cached: InfraObject = serde_json::from_value(aws.clone())?;
        let mut writer = Writer::<InfraObject>::default();
        writer.apply_watcher_event(&watcher::Event::Apply(cached.clone()));
        let resource = kube::core::ApiResource::erase::<mapi::Machine>(&());
        let key = ObjectRef::<InfraObject>::new_with("worker-a", resource).within("ns");
        let read = writer.as_reader().get(&key);
        assert_eq!(
            read.as_deref().map(InfraObject::to_dynamic),
            Some(cached.to_dynamic())
        );
        assert_eq!(read.map(|o| o.metadata.clone()), Some(cached.metadata));
        Ok(())
    }

    /// `json` decoded as the caches decode it, cached in either encoding, and read back.
    fn round_trip<K>(json: &serde_json::Value) -> Result<(), serde_json::Error>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + PartialEq + fmt::Debug,
    {
        let meta = &json["metadata"];
        let (namespace, name) = (
            meta["namespace"].as_str(),
            meta["name"].as_str().unwrap_or_default(),
        );
        for encoding in [Encoding::Json, Encoding::MessagePack] {
            let cached: K = crate::runtime::field_sets::object(&json.to_string())?;
            let mut writer = Writer::<K>::new(encoding);
            writer.apply_watcher_event(&watcher::Event::Apply(cached));
            let cached: K = crate::runtime::field_sets::object(&json.to_string())?;
            let read = writer.as_reader().get_named(namespace, name);
            assert_eq!(read.as_deref(), Some(&cached), "{encoding:?}");
        }
        Ok(())
    }

    /// Objects as envtest served them after the real sync (the decode bench's: status,
    /// conditions, a provider spec, managed fields), and both MachineSet kinds, read back
    /// as cached in either encoding.
    #[test]
    fn served_objects_read_back_as_cached() -> Result<(), serde_json::Error> {
        use crate::api::{capi, mapi};
        let served = |text: &str| serde_json::from_str::<serde_json::Value>(text);
        round_trip::<mapi::Machine>(&served(include_str!(
            "../../../benches/fixtures/mapi-machine.json"
        ))?)?;
        round_trip::<capi::Machine>(&served(include_str!(
            "../../../benches/fixtures/capi-machine.json"
        ))?)?;
        let mapi_set = serde_json::json!({
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
            "metadata": {"name": "workers", "namespace": "ns", "resourceVersion": "3"},
            "spec": {"replicas": 3, "authoritativeAPI": "ClusterAPI",
                "selector": {"matchLabels": {"k": "v"}},
                "template": {"metadata": {"labels": {"k": "v"}},
                    "spec": {"providerSpec": {"value": {"kind": "AWSMachineProviderConfig", "ratio": 0.5}}}}},
            "status": {"replicas": 3, "authoritativeAPI": "ClusterAPI", "synchronizedGeneration": 2}
        });
        round_trip::<mapi::MachineSet>(&mapi_set)?;
        let capi_set = serde_json::json!({
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
            "metadata": {"name": "workers", "namespace": "ns", "resourceVersion": "4"},
            "spec": {"clusterName": "c", "replicas": 3, "selector": {"matchLabels": {"k": "v"}},
                "template": {"metadata": {"labels": {"k": "v"}}, "spec": {"clusterName": "c",
                    "bootstrap": {"dataSecretName": "s"},
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "AWSMachineTemplate", "name": "t"}}}}
        });
        round_trip::<capi::MachineSet>(&capi_set)
    }

    /// An infrastructure object (metadata decoded, the body kept as JSON text) reads back
    /// as cached in either encoding, body and field sets included; one cached with its
    /// metadata only reads back without a body from MessagePack (JSON has no way to say
    /// so: it reads back with an empty one).
    #[test]
    fn an_infrastructure_object_reads_back_in_either_encoding() -> Result<(), serde_json::Error> {
        use crate::runtime::infra::InfraObject;
        let aws = serde_json::json!({
            "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
            "metadata": {"name": "worker-a", "namespace": "ns", "resourceVersion": "7",
                "managedFields": [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:spec": {"f:instanceType": {}}}}]},
            "spec": {"instanceType": "m6i.xlarge", "ratio": 0.5}, "status": {"ready": true}
        });
        let whole: InfraObject = crate::runtime::field_sets::object(&aws.to_string())?;
        let metadata_only = InfraObject::metadata_only(whole.types.clone(), whole.metadata.clone());
        let resource = kube::core::ApiResource::erase::<crate::api::capi::Machine>(&());
        let key = ObjectRef::<InfraObject>::new_with("worker-a", resource).within("ns");
        for (encoding, object) in [
            (Encoding::Json, &whole),
            (Encoding::MessagePack, &whole),
            (Encoding::MessagePack, &metadata_only),
        ] {
            let mut writer = Writer::<InfraObject>::new(encoding);
            writer.apply_watcher_event(&watcher::Event::Apply(object.clone()));
            assert_eq!(
                writer.as_reader().get(&key).as_deref(),
                Some(object),
                "{encoding:?}"
            );
        }
        assert_eq!(
            whole.to_dynamic().data,
            serde_json::json!({"spec": aws["spec"], "status": aws["status"]})
        );
        Ok(())
    }

    /// A type whose serde code is tied to JSON (serde_json's raw values) reads back from a
    /// JSON store, and from a MessagePack one as absent (an error logged), never as another.
    #[test]
    fn a_type_tied_to_json_reads_back_from_json_only() -> Result<(), serde_json::Error> {
        #[derive(Clone, Debug, serde::Deserialize, Serialize)]
        struct Raw {
            metadata: kube::api::ObjectMeta,
            spec: Box<serde_json::value::RawValue>,
        }
        impl Resource for Raw {
            type DynamicType = ();
            type Scope = k8s_openapi::NamespaceResourceScope;
            fn kind(_: &()) -> std::borrow::Cow<'_, str> {
                "Raw".into()
            }
            fn group(_: &()) -> std::borrow::Cow<'_, str> {
                "".into()
            }
            fn version(_: &()) -> std::borrow::Cow<'_, str> {
                "v1".into()
            }
            fn plural(_: &()) -> std::borrow::Cow<'_, str> {
                "raws".into()
            }
            fn meta(&self) -> &kube::api::ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut kube::api::ObjectMeta {
                &mut self.metadata
            }
        }
        let raw: Raw = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "worker-a", "namespace": "ns"}, "spec": {"a": 1}
        }))?;
        let mut json = Writer::<Raw>::new(Encoding::Json);
        json.apply_watcher_event(&watcher::Event::Apply(raw.clone()));
        let read = json.as_reader().get_named(Some("ns"), "worker-a");
        assert_eq!(
            read.map(|r| r.spec.get().to_owned()),
            Some(r#"{"a":1}"#.to_owned())
        );
        let mut message_pack = Writer::<Raw>::new(Encoding::MessagePack);
        message_pack.apply_watcher_event(&watcher::Event::Apply(raw));
        assert!(
            message_pack
                .as_reader()
                .get_named(Some("ns"), "worker-a")
                .is_none()
        );
        Ok(())
    }

    /// Objects alike (a fleet) take a fraction of their JSON: each is compressed against
    /// the first one the store held.
    #[test]
    fn a_fleet_of_similar_objects_takes_a_fraction_of_its_json() -> Result<(), serde_json::Error> {
        for encoding in [Encoding::Json, Encoding::MessagePack] {
            let mut writer = Writer::<ConfigMap>::new(encoding);
            let store = writer.as_reader();
            let mut json = 0;
            for i in 0..100 {
                let mut object = configmap(&format!("worker-{i:03}"), &format!("{}", 1000 + i), "x");
                object.metadata.annotations = Some(
                    (0..20)
                        .map(|n| {
                            (
                                format!("example.com/annotation-{n}"),
                                format!("a longer value {n}"),
                            )
                        })
                        .collect(),
                );
                json += serde_json::to_vec(&object)?.len();
                writer.apply_watcher_event(&watcher::Event::Apply(object));
            }
            assert_eq!(store.len(), 100);
            let packed = store.packed_bytes();
            assert!(
                packed * 10 < json,
                "{encoding:?}: {packed} bytes packed for {json} bytes of JSON"
            );
            let last = store
                .get(&key("worker-099"))
                .map(|o| o.metadata.resource_version.clone());
            assert_eq!(last, Some(Some("1099".to_owned())));
        }
        Ok(())
    }
}
