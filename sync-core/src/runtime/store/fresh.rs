//! The objects a watch applied last, kept decoded until their first read.
//!
//! A watched change queues its name, and the reconcile that follows reads the changed
//! object first of all: decoding it again from the compressed cache would redo what the
//! watch just did. So a store keeps the last few applied objects as they were decoded,
//! and a read takes its object from here (once; a later read decodes). Bounded, and
//! emptied by reads, so an idle store holds at most a handful of decoded objects.

use std::collections::VecDeque;
use std::sync::Arc;

use kube::Resource;

/// At most this many objects per store: more than a fleet's controllers have reconciles
/// in flight. A burst's older objects are dropped, and a read of one decodes it.
pub(super) const CAPACITY: usize = 16;

/// The decoded objects, oldest first, each the latest version its store holds.
pub(super) struct Fresh<K> {
    objects: VecDeque<Arc<K>>,
}

impl<K> Default for Fresh<K> {
    fn default() -> Self {
        Self {
            objects: VecDeque::new(),
        }
    }
}

impl<K: Resource> Fresh<K> {
    /// Keeps `object`, the version just applied, in place of an older one of that name.
    /// Returns what no longer fits, to be dropped once the store's locks are released.
    pub(super) fn put(&mut self, object: Arc<K>) -> [Option<Arc<K>>; 2] {
        let meta = object.meta();
        let older = self.take(
            meta.namespace.as_deref(),
            meta.name.as_deref().unwrap_or_default(),
        );
        let evicted = (self.objects.len() >= CAPACITY)
            .then(|| self.objects.pop_front())
            .flatten();
        self.objects.push_back(object);
        [older, evicted]
    }

    /// The object `name` in `namespace`, if it is kept: no longer kept after this.
    pub(super) fn take(&mut self, namespace: Option<&str>, name: &str) -> Option<Arc<K>> {
        let namespace = namespace.unwrap_or_default();
        let at = self.objects.iter().position(|object| {
            let meta = object.meta();
            meta.name.as_deref() == Some(name) && meta.namespace.as_deref().unwrap_or_default() == namespace
        })?;
        self.objects.remove(at)
    }

    /// Drops every kept object (a relist replaced the store's objects).
    pub(super) fn clear(&mut self) -> VecDeque<Arc<K>> {
        std::mem::take(&mut self.objects)
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.objects.len()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn configmap(namespace: Option<&str>, name: &str, version: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: namespace.map(Into::into),
                resource_version: Some(version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    fn version(object: Option<Arc<ConfigMap>>) -> Option<String> {
        object.and_then(|object| object.metadata.resource_version.clone())
    }

    #[test]
    fn a_kept_object_is_read_once_and_a_newer_version_replaces_it() {
        let mut fresh = Fresh::default();
        let [older, evicted] = fresh.put(configmap(Some("ns"), "a", "1"));
        assert!(older.is_none() && evicted.is_none());
        let [older, _] = fresh.put(configmap(Some("ns"), "a", "2"));
        assert_eq!(version(older), Some("1".into()));
        assert_eq!(fresh.len(), 1);

        assert_eq!(fresh.take(Some("other"), "a"), None);
        assert_eq!(fresh.take(Some("ns"), "b"), None);
        assert_eq!(version(fresh.take(Some("ns"), "a")), Some("2".into()));
        assert_eq!(fresh.take(Some("ns"), "a"), None, "taken once");
    }

    #[test]
    fn a_cluster_scoped_object_is_found_without_a_namespace() {
        let mut fresh = Fresh::default();
        fresh.put(configmap(None, "a", "1"));
        assert_eq!(version(fresh.take(Some(""), "a")), Some("1".into()));
        fresh.put(configmap(None, "b", "1"));
        assert_eq!(version(fresh.take(None, "b")), Some("1".into()));
    }

    #[test]
    fn a_burst_keeps_only_its_latest_objects() {
        let mut fresh = Fresh::default();
        let mut evicted = Vec::new();
        for index in 0..CAPACITY + 3 {
            let [_, dropped] = fresh.put(configmap(Some("ns"), &format!("m-{index}"), "1"));
            evicted.extend(dropped.map(|object| object.metadata.name.clone()));
        }
        assert_eq!(fresh.len(), CAPACITY);
        let names = ["m-0", "m-1", "m-2"].map(|name| Some(name.to_owned()));
        assert_eq!(evicted, names, "the oldest go first");
        assert_eq!(fresh.take(Some("ns"), "m-2"), None);
        assert!(fresh.take(Some("ns"), &format!("m-{}", CAPACITY + 2)).is_some());
        assert_eq!(fresh.clear().len(), CAPACITY - 1);
        assert_eq!(fresh.len(), 0);
    }
}
