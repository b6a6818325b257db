//! Collections as they were at an earlier resourceVersion, rebuilt from the retained event
//! log: what a paginated list (`continue`) and `resourceVersionMatch=Exact` read, as
//! kube-apiserver reads etcd at a revision. Once the log no longer reaches back to that
//! resourceVersion the caller answers 410 Expired, as kube-apiserver after compaction.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::{Bound, RangeBounds};
use std::sync::Arc;

use serde_json::Value;

use crate::storage::store::{EventType, State};

/// A collection key: (namespace, name).
pub type Key = (String, String);

/// One listed object and its key.
pub type Entry<'a> = (Cow<'a, Key>, &'a Arc<Value>);

/// Where a listing reads: from `start` on, within `namespace` when one is given.
#[derive(Debug, Clone)]
pub struct Span<'k> {
    /// The first key read (a continue token's, or the namespace's first).
    pub start: &'k Key,
    /// The only namespace read; `None` reads on through every namespace.
    pub namespace: Option<&'k str>,
}

impl Span<'_> {
    /// The span as map bounds; `None` when it is empty (a start past its namespace, as a
    /// continue token from another namespace's list gives).
    fn bounds(&self) -> Option<(Bound<Key>, Bound<Key>)> {
        let start = Bound::Included(self.start.clone());
        let Some(namespace) = self.namespace else {
            return Some((start, Bound::Unbounded));
        };
        // The least namespace after `namespace`: no key of `namespace` sorts past it.
        let end = (format!("{namespace}\0"), String::new());
        (*self.start < end).then_some((start, Bound::Excluded(end)))
    }
}

/// The current objects of storage key `key` within `span` (its map range).
fn current<'a>(
    state: &'a State,
    key: &str,
    span: &Span<'_>,
) -> impl Iterator<Item = (&'a Key, &'a Arc<Value>)> + use<'a> {
    let collection = state.collections.get(key);
    collection
        .zip(span.bounds())
        .into_iter()
        .flat_map(|(c, bounds)| c.range(bounds))
}

/// `rv` when it reads an earlier state than the current one (`None`: read the current).
fn earlier(state: &State, rv: Option<u64>) -> Option<u64> {
    rv.filter(|rv| *rv < state.rv)
}

/// Listed objects, read one by one: a page takes what it shows and counts the rest
/// without collecting them.
pub type Entries<'a> = Box<dyn Iterator<Item = Entry<'a>> + 'a>;

/// The objects of storage key `key` within `span`, in key order: as they are now (`rv`
/// `None` or not older than the last write), or as they were at `rv`; `Err` with the
/// oldest resourceVersion still covered when the history no longer reaches `rv`.
pub fn entries<'a>(
    state: &'a State,
    key: &str,
    rv: Option<u64>,
    span: &Span<'_>,
) -> Result<Entries<'a>, u64> {
    let now = current(state, key, span);
    let Some(rv) = earlier(state, rv) else {
        return Ok(Box::new(now.map(|(k, v)| (Cow::Borrowed(k), v))));
    };
    if rv < state.compacted {
        return Err(state.compacted + 1);
    }
    // The state at `rv` of every object changed since: the state before the oldest change
    // after `rv` (`None`: created after `rv`).
    let first = state.log.partition_point(|e| e.rv <= rv);
    let bounds = span.bounds();
    let mut before: BTreeMap<Key, Option<&'a Arc<Value>>> = BTreeMap::new();
    for event in state.log.range(first..).rev() {
        if *event.key != *key {
            continue;
        }
        let name = event.object["metadata"]["name"].as_str().unwrap_or_default();
        let changed = (event.namespace.to_string(), name.to_owned());
        if !bounds.as_ref().is_some_and(|b| b.contains(&changed)) {
            continue;
        }
        let previous = match event.kind {
            EventType::Added => None,
            EventType::Modified | EventType::Deleted => Some(event.old.as_ref().unwrap_or(&event.object)),
        };
        before.insert(changed, previous);
    }
    Ok(Box::new(merged(now, before)))
}

/// How many objects [`entries`] would read: for the current state, a count of the map's
/// range, which a page pays for its `remainingItemCount` without building any entry.
pub fn count(state: &State, key: &str, rv: Option<u64>, span: &Span<'_>) -> usize {
    match earlier(state, rv) {
        None => current(state, key, span).count(),
        Some(_) => entries(state, key, rv, span).map_or(0, Iterator::count),
    }
}

/// The current entries with the changed ones as they were before (both in key order).
fn merged<'a>(
    current: impl Iterator<Item = (&'a Key, &'a Arc<Value>)>,
    before: BTreeMap<Key, Option<&'a Arc<Value>>>,
) -> impl Iterator<Item = Entry<'a>> {
    let mut now = current.peekable();
    let mut then = before.into_iter().peekable();
    std::iter::from_fn(move || {
        loop {
            let take_now = match (now.peek(), then.peek()) {
                (None, None) => return None,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (Some((a, _)), Some((b, _))) => *a < b,
            };
            if take_now {
                return now.next().map(|(k, v)| (Cow::Borrowed(k), v));
            }
            let (k, v) = then.next()?;
            if now.peek().is_some_and(|(a, _)| **a == k) {
                now.next();
            }
            if let Some(v) = v {
                return Some((Cow::Owned(k), v));
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::storage::store::Store;

    fn cm(namespace: &str, name: &str, data: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": namespace}, "data": {"k": data}})
    }

    fn key(namespace: &str, name: &str) -> Key {
        (namespace.to_owned(), name.to_owned())
    }

    /// What a listing of config maps reads, as `name=data` (`namespace/name=data` across
    /// namespaces); `None` when the history no longer reaches `rv`.
    fn listed(state: &State, rv: Option<u64>, start: &Key, namespace: Option<&str>) -> Option<Vec<String>> {
        let span = Span { start, namespace };
        let read = entries(state, "configmaps", rv, &span).ok()?;
        Some(
            read.map(|(k, v)| {
                let data = v["data"]["k"].as_str().unwrap_or_default();
                match namespace {
                    Some(_) => format!("{}={data}", k.1),
                    None => format!("{}/{}={data}", k.0, k.1),
                }
            })
            .collect(),
        )
    }

    #[test]
    fn earlier_states_are_rebuilt_from_the_log() {
        let store = Store::new(100);
        let rv = store.write(|s| {
            s.put("configmaps", "ns", "a", cm("ns", "a", "1"), EventType::Added);
            s.put("configmaps", "ns", "b", cm("ns", "b", "1"), EventType::Added);
            s.put("configmaps", "ns", "c", cm("ns", "c", "1"), EventType::Added);
            s.rv
        });
        store.write(|s| {
            s.put("configmaps", "ns", "a", cm("ns", "a", "2"), EventType::Modified);
            s.put("configmaps", "ns", "b", cm("ns", "b", "1"), EventType::Deleted);
            s.put("configmaps", "ns", "d", cm("ns", "d", "1"), EventType::Added);
            s.put("secrets", "ns", "a", cm("ns", "a", "9"), EventType::Added);
            s.put("configmaps", "ns", "a", cm("ns", "a", "3"), EventType::Modified);
        });
        let state = store.read();
        let start = key("ns", "");
        let ns = Some("ns");
        assert_eq!(
            listed(&state, None, &start, ns).unwrap_or_default(),
            ["a=3", "c=1", "d=1"]
        );
        let then = listed(&state, Some(rv), &start, ns).unwrap_or_default();
        assert_eq!(then, ["a=1", "b=1", "c=1"]);
        let from_b = listed(&state, Some(rv), &key("ns", "b"), ns).unwrap_or_default();
        assert_eq!(from_b, ["b=1", "c=1"]);
        // The same resourceVersion as now reads the current state.
        let same = listed(&state, Some(state.rv), &start, ns).unwrap_or_default();
        assert_eq!(same, ["a=3", "c=1", "d=1"]);
    }

    #[test]
    fn a_namespace_span_reads_that_namespace_only_now_and_earlier() {
        let store = Store::new(100);
        let rv = store.write(|s| {
            for (namespace, name) in [("a", "x"), ("ns", "a"), ("ns", "b"), ("ns-2", "a"), ("nt", "a")] {
                s.put(
                    "configmaps",
                    namespace,
                    name,
                    cm(namespace, name, "1"),
                    EventType::Added,
                );
            }
            s.rv
        });
        store.write(|s| {
            s.put(
                "configmaps",
                "ns-2",
                "a",
                cm("ns-2", "a", "2"),
                EventType::Modified,
            );
            s.put("configmaps", "ns", "b", cm("ns", "b", "2"), EventType::Modified);
            s.put("configmaps", "ns", "c", cm("ns", "c", "1"), EventType::Added);
        });
        let state = store.read();
        let start = key("ns", "");
        assert_eq!(
            listed(&state, None, &start, Some("ns")).unwrap_or_default(),
            ["a=1", "b=2", "c=1"]
        );
        assert_eq!(
            listed(&state, Some(rv), &start, Some("ns")).unwrap_or_default(),
            ["a=1", "b=1"]
        );
        let everywhere = listed(&state, Some(rv), &key("ns", "b"), None).unwrap_or_default();
        assert_eq!(everywhere, ["ns/b=1", "ns-2/a=1", "nt/a=1"]);
        for (rv, start, namespace) in [(None, &start, Some("ns")), (Some(rv), &key("ns", "b"), None)] {
            let span = Span { start, namespace };
            let read = listed(&state, rv, start, namespace).unwrap_or_default();
            assert_eq!(
                count(&state, "configmaps", rv, &span),
                read.len(),
                "{rv:?} {start:?} {namespace:?}"
            );
        }
        // A start past the namespace (another namespace's continue token) reads nothing.
        let past = key("nt", "");
        assert_eq!(listed(&state, None, &past, Some("ns")), Some(vec![]));
        assert_eq!(listed(&state, Some(rv), &past, Some("ns")), Some(vec![]));
    }

    #[test]
    fn compacted_history_is_an_error() {
        let store = Store::new(2);
        let rv = store.write(|s| {
            s.put("configmaps", "ns", "a", cm("ns", "a", "1"), EventType::Added);
            s.rv
        });
        store.write(|s| {
            for i in 2..6 {
                s.put(
                    "configmaps",
                    "ns",
                    "a",
                    cm("ns", "a", &i.to_string()),
                    EventType::Modified,
                );
            }
        });
        let state = store.read();
        assert_eq!(listed(&state, Some(rv), &key("", ""), None), None);
        let span = Span {
            start: &key("", ""),
            namespace: None,
        };
        assert_eq!(
            entries(&state, "configmaps", Some(rv), &span).err(),
            Some(state.compacted + 1)
        );
    }
}
