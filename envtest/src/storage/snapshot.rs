//! Collections as they were at an earlier resourceVersion, rebuilt from the retained event
//! log: what a paginated list (`continue`) and `resourceVersionMatch=Exact` read, as
//! kube-apiserver reads etcd at a revision. Once the log no longer reaches back to that
//! resourceVersion the caller answers 410 Expired, as kube-apiserver after compaction.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::storage::store::{EventType, State};

/// A collection key: (namespace, name).
pub type Key = (String, String);

/// One listed object and its key.
pub type Entry<'a> = (Cow<'a, Key>, &'a Arc<Value>);

/// The objects of storage key `key` from `start` on, in key order: as they are now
/// (`rv` `None` or not older than the last write), or as they were at `rv`; `Err` with the
/// oldest resourceVersion still covered when the history no longer reaches `rv`.
pub fn entries<'a>(state: &'a State, key: &str, rv: Option<u64>, start: &Key) -> Result<Vec<Entry<'a>>, u64> {
    let current = state
        .collections
        .get(key)
        .into_iter()
        .flat_map(|c| c.range(start.clone()..));
    let Some(rv) = rv.filter(|rv| *rv < state.rv) else {
        return Ok(current.map(|(k, v)| (Cow::Borrowed(k), v)).collect());
    };
    if rv < state.compacted {
        return Err(state.compacted + 1);
    }
    // The state at `rv` of every object changed since: the state before the oldest change
    // after `rv` (`None`: created after `rv`).
    let first = state.log.partition_point(|e| e.rv <= rv);
    let mut before: BTreeMap<Key, Option<&'a Arc<Value>>> = BTreeMap::new();
    for event in state.log.range(first..).rev() {
        if *event.key != *key {
            continue;
        }
        let name = event.object["metadata"]["name"].as_str().unwrap_or_default();
        let previous = match event.kind {
            EventType::Added => None,
            EventType::Modified | EventType::Deleted => Some(event.old.as_ref().unwrap_or(&event.object)),
        };
        before.insert((event.namespace.to_string(), name.to_owned()), previous);
    }
    let mut now = current.peekable();
    let mut then = before.range(start.clone()..).peekable();
    let mut out = Vec::new();
    loop {
        let take_now = match (now.peek(), then.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((a, _)), Some((b, _))) => a < b,
        };
        if take_now {
            if let Some((k, v)) = now.next() {
                out.push((Cow::Borrowed(k), v));
            }
            continue;
        }
        if let Some((k, v)) = then.next() {
            if now.peek().is_some_and(|(a, _)| *a == k) {
                now.next();
            }
            if let Some(v) = v {
                out.push((Cow::Owned(k.clone()), *v));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::storage::store::Store;

    fn cm(name: &str, data: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns"}, "data": {"k": data}})
    }

    fn names(entries: &[Entry<'_>]) -> Vec<String> {
        entries
            .iter()
            .map(|(k, v)| format!("{}={}", k.1, v["data"]["k"].as_str().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn earlier_states_are_rebuilt_from_the_log() {
        let store = Store::new(100);
        let rv = store.write(|s| {
            s.put("configmaps", "ns", "a", cm("a", "1"), EventType::Added);
            s.put("configmaps", "ns", "b", cm("b", "1"), EventType::Added);
            s.put("configmaps", "ns", "c", cm("c", "1"), EventType::Added);
            s.rv
        });
        store.write(|s| {
            s.put("configmaps", "ns", "a", cm("a", "2"), EventType::Modified);
            s.put("configmaps", "ns", "b", cm("b", "1"), EventType::Deleted);
            s.put("configmaps", "ns", "d", cm("d", "1"), EventType::Added);
            s.put("secrets", "ns", "a", cm("a", "9"), EventType::Added);
            s.put("configmaps", "ns", "a", cm("a", "3"), EventType::Modified);
        });
        let state = store.read();
        let start = ("ns".to_owned(), String::new());
        let now = entries(&state, "configmaps", None, &start).unwrap_or_default();
        assert_eq!(names(&now), ["a=3", "c=1", "d=1"]);
        let then = entries(&state, "configmaps", Some(rv), &start).unwrap_or_default();
        assert_eq!(names(&then), ["a=1", "b=1", "c=1"]);
        let from_b = entries(&state, "configmaps", Some(rv), &("ns".to_owned(), "b".to_owned()));
        assert_eq!(names(&from_b.unwrap_or_default()), ["b=1", "c=1"]);
        // The same resourceVersion as now reads the current state.
        let same = entries(&state, "configmaps", Some(state.rv), &start).unwrap_or_default();
        assert_eq!(names(&same), ["a=3", "c=1", "d=1"]);
    }

    #[test]
    fn compacted_history_is_an_error() {
        let store = Store::new(2);
        let rv = store.write(|s| {
            s.put("configmaps", "ns", "a", cm("a", "1"), EventType::Added);
            s.rv
        });
        store.write(|s| {
            for i in 2..6 {
                s.put(
                    "configmaps",
                    "ns",
                    "a",
                    cm("a", &i.to_string()),
                    EventType::Modified,
                );
            }
        });
        let state = store.read();
        let start = (String::new(), String::new());
        assert_eq!(
            entries(&state, "configmaps", Some(rv), &start).err(),
            Some(state.compacted + 1)
        );
    }
}
