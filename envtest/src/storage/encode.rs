//! Serialized JSON of stored objects, kept so that a list is mostly a concatenation and a
//! watch event is serialized once for every watcher.
//!
//! Stored objects are immutable `Arc<Value>`s (a write stores a new one), so the JSON of an
//! object is cached by the identity of its `Arc`, with a `Weak` to tell a live entry from
//! a reused address. Only objects shown exactly as stored use the cache (whole-object view,
//! no `apiVersion` rewrite, no defaulting on read); anything else is serialized as before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

/// JSON bytes of stored objects by object identity.
#[derive(Debug, Default)]
pub struct JsonCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<usize, (Weak<Value>, Bytes)>,
    /// Dead entries are swept when the map grows past this.
    sweep_at: usize,
    /// Bytes held by the entries, live or dead.
    bytes: usize,
    /// Dead entries are also swept when the bytes grow past this, so the JSON of large
    /// deleted objects is not kept until a thousand more entries come.
    sweep_bytes_at: usize,
}

const MIN_SWEEP: usize = 1024;
const MIN_SWEEP_BYTES: usize = 16 * 1024 * 1024;

fn serialize(value: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec()))
}

impl Inner {
    fn get(&mut self, object: &Arc<Value>) -> Bytes {
        let key = Arc::as_ptr(object) as usize;
        if let Some((weak, bytes)) = self.entries.get(&key)
            && weak.upgrade().is_some_and(|live| Arc::ptr_eq(&live, object))
        {
            return bytes.clone();
        }
        let bytes = serialize(object);
        if self.entries.len() >= self.sweep_at || self.bytes >= self.sweep_bytes_at {
            self.entries.retain(|_, (weak, _)| weak.strong_count() > 0);
            self.entries.shrink_to(self.entries.len() * 2);
            self.bytes = self.entries.values().map(|(_, b)| b.len()).sum();
            self.sweep_at = (self.entries.len() * 2).max(MIN_SWEEP);
            self.sweep_bytes_at = (self.bytes * 2).max(MIN_SWEEP_BYTES);
        }
        self.bytes += bytes.len();
        if let Some((_, replaced)) = self.entries.insert(key, (Arc::downgrade(object), bytes.clone())) {
            self.bytes -= replaced.len();
        }
        bytes
    }
}

impl JsonCache {
    /// The JSON of a stored object.
    pub fn get(&self, object: &Arc<Value>) -> Bytes {
        self.lock().get(object)
    }

    /// The JSON of many stored objects (one lock for all).
    pub fn get_all<'a>(&self, objects: impl IntoIterator<Item = &'a Arc<Value>>) -> Vec<Bytes> {
        let mut inner = self.lock();
        objects.into_iter().map(|o| inner.get(o)).collect()
    }

    /// Number of cached objects (live or not yet swept).
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One item of a list or watch: cached bytes of a stored object, or a value to serialize.
#[derive(Debug, Clone)]
pub enum Item {
    /// Already serialized.
    Json(Bytes),
    /// Serialized when written.
    Value(Value),
}

impl Item {
    fn write(&self, out: &mut BytesMut) {
        match self {
            Self::Json(bytes) => out.put_slice(bytes),
            Self::Value(value) => out.put_slice(&serialize(value)),
        }
    }

    fn len_hint(&self) -> usize {
        match self {
            Self::Json(bytes) => bytes.len(),
            Self::Value(_) => 512,
        }
    }
}

/// A list document: `{"apiVersion":…,"items":[…],"kind":…,"metadata":…}`, written into
/// one buffer sized up front (a page of objects is megabytes: growing it copies them).
pub fn list(kind: &str, api_version: &str, metadata: &Value, items: &[Item]) -> Bytes {
    let (api_version, kind, metadata) = (
        serialize(&Value::from(api_version)),
        serialize(&Value::from(kind)),
        serialize(metadata),
    );
    let framing = r#"{"apiVersion":,"items":[],"kind":,"metadata":}"#.len();
    let size: usize = items.iter().map(|i| i.len_hint() + 1).sum();
    let mut out = BytesMut::with_capacity(size + framing + api_version.len() + kind.len() + metadata.len());
    out.put_slice(b"{\"apiVersion\":");
    out.put_slice(&api_version);
    out.put_slice(b",\"items\":[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        item.write(&mut out);
    }
    out.put_slice(b"],\"kind\":");
    out.put_slice(&kind);
    out.put_slice(b",\"metadata\":");
    out.put_slice(&metadata);
    out.put_u8(b'}');
    out.freeze()
}

/// A watch event line: `{"type":…,"object":…}\n`.
pub fn watch_line(kind: &str, object: &Item) -> Bytes {
    let mut out = BytesMut::with_capacity(object.len_hint() + 32);
    out.put_slice(b"{\"type\":\"");
    out.put_slice(kind.as_bytes());
    out.put_slice(b"\",\"object\":");
    object.write(&mut out);
    out.put_slice(b"}\n");
    out.freeze()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cached_by_identity() {
        let cache = JsonCache::default();
        let a = Arc::new(json!({"a": 1}));
        let first = cache.get(&a);
        assert_eq!(&first[..], br#"{"a":1}"#);
        assert_eq!(cache.get(&a).as_ptr(), first.as_ptr());
        // A new object at whatever address is serialized anew.
        drop(a);
        let b = Arc::new(json!({"b": 2}));
        assert_eq!(&cache.get(&b)[..], br#"{"b":2}"#);
    }

    #[test]
    fn dead_entries_are_swept() {
        let cache = JsonCache::default();
        for i in 0..5000 {
            let object = Arc::new(json!({"i": i}));
            cache.get(&object);
        }
        assert!(cache.len() <= 2 * MIN_SWEEP, "{}", cache.len());
    }

    #[test]
    fn documents_are_valid_json() {
        let items = [
            Item::Json(Bytes::from_static(br#"{"x":1}"#)),
            Item::Value(json!({"y": "2"})),
        ];
        let doc: Value =
            serde_json::from_slice(&list("FooList", "x/v1", &json!({"resourceVersion": "3"}), &items))
                .unwrap_or_default();
        assert_eq!(
            doc,
            json!({"apiVersion": "x/v1", "kind": "FooList", "metadata": {"resourceVersion": "3"}, "items": [{"x": 1}, {"y": "2"}]})
        );
        let empty: Value = serde_json::from_slice(&list("L", "v1", &json!({}), &[])).unwrap_or_default();
        assert_eq!(empty["items"], json!([]));
        let line = watch_line("ADDED", &items[0]);
        assert_eq!(&line[..], b"{\"type\":\"ADDED\",\"object\":{\"x\":1}}\n");
    }
}
