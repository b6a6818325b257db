//! The collector's view of ownership, kept from the store's event log as
//! kube-controller-manager's GraphBuilder keeps it from informers: every object by uid, the
//! dependents of every owner uid (live or not), and, per event, the work it causes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::objects::deletion::{FOREGROUND, ORPHAN};
use crate::storage::store::{Event, EventType};

/// Where an object lives, and which incarnation of it (the uid).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Node {
    /// The storage key of its resource (`configmaps`, `machines.cluster.x-k8s.io`).
    pub key: Arc<str>,
    /// Its namespace (`""` when cluster scoped).
    pub namespace: Arc<str>,
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

impl Node {
    /// The node of a stored object (`None` without a uid or name).
    pub fn of(key: &Arc<str>, namespace: &Arc<str>, object: &Value) -> Option<Self> {
        let meta = &object["metadata"];
        Some(Self {
            key: key.clone(),
            namespace: namespace.clone(),
            name: meta["name"].as_str()?.to_string(),
            uid: meta["uid"].as_str().filter(|u| !u.is_empty())?.to_string(),
        })
    }
}

/// One `metadata.ownerReferences[]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `name`.
    pub name: String,
    /// `uid`.
    pub uid: String,
    /// `blockOwnerDeletion`.
    pub block: bool,
}

/// The owner references of an object (entries without a uid are skipped).
pub fn owner_refs(object: &Value) -> Vec<OwnerRef> {
    let Some(refs) = object["metadata"]["ownerReferences"].as_array() else {
        return Vec::new();
    };
    refs.iter()
        .filter_map(|r| {
            let text = |field: &str| r[field].as_str().unwrap_or_default().to_string();
            let uid = text("uid");
            (!uid.is_empty()).then(|| OwnerRef {
                api_version: text("apiVersion"),
                kind: text("kind"),
                name: text("name"),
                uid,
                block: r["blockOwnerDeletion"].as_bool() == Some(true),
            })
        })
        .collect()
}

/// Whether an object is being deleted (has a `deletionTimestamp`).
pub fn deleting(object: &Value) -> bool {
    object["metadata"]["deletionTimestamp"]
        .as_str()
        .is_some_and(|t| !t.is_empty())
}

/// Whether an object carries a finalizer.
pub fn has_finalizer(object: &Value, finalizer: &str) -> bool {
    object["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f == finalizer))
}

/// What an event asks the collector to look at.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Work {
    /// A dependent whose owners may be gone (kube's attemptToDelete of an object).
    Dependent(Node),
    /// An owner whose deletion waits for the collector: `foregroundDeletion` (its blocking
    /// dependents) or `orphan` (its dependents' references).
    Owner(String),
}

/// Ownership as the collector knows it.
#[derive(Debug, Default)]
pub struct Graph {
    by_uid: HashMap<String, Node>,
    dependents: HashMap<String, HashSet<Node>>,
}

impl Graph {
    /// The live object with this uid.
    pub fn locate(&self, uid: &str) -> Option<&Node> {
        self.by_uid.get(uid)
    }

    /// The objects that name `uid` as an owner.
    pub fn dependents(&self, uid: &str) -> impl Iterator<Item = &Node> {
        self.dependents.get(uid).into_iter().flatten()
    }

    /// How many owner uids have dependents (for tests and debugging).
    pub fn owners(&self) -> usize {
        self.dependents.len()
    }

    fn link(&mut self, node: &Node, refs: &[OwnerRef]) {
        for owner in refs {
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(node.clone());
        }
    }

    fn unlink(&mut self, node: &Node, refs: &[OwnerRef]) {
        for owner in refs {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(node);
                if set.is_empty() {
                    self.dependents.remove(&owner.uid);
                }
            }
        }
    }

    /// Takes in one change of the store and adds the work it causes to `work`.
    pub fn observe(&mut self, event: &Event, work: &mut Vec<Work>) {
        let Some(node) = Node::of(&event.key, &event.namespace, &event.object) else {
            return;
        };
        let refs = owner_refs(&event.object);
        if event.kind == EventType::Deleted {
            self.by_uid.remove(&node.uid);
            self.unlink(&node, &refs);
            // Its dependents may have lost their last owner; a foreground owner may be free.
            work.extend(self.dependents(&node.uid).cloned().map(Work::Dependent));
            work.extend(refs.into_iter().map(|r| Work::Owner(r.uid)));
            return;
        }
        self.by_uid.insert(node.uid.clone(), node.clone());
        let old_refs = event.old.as_deref().map(owner_refs).unwrap_or_default();
        if refs != old_refs {
            self.unlink(&node, &old_refs);
            self.link(&node, &refs);
            // Owners this object stopped blocking may be free to go.
            work.extend(
                old_refs
                    .into_iter()
                    .filter(|r| !refs.contains(r))
                    .map(|r| Work::Owner(r.uid)),
            );
            if !refs.is_empty() {
                work.push(Work::Dependent(node.clone()));
            }
        }
        if deleting(&event.object) {
            let foreground = has_finalizer(&event.object, FOREGROUND);
            if foreground || has_finalizer(&event.object, ORPHAN) {
                work.push(Work::Owner(node.uid.clone()));
            }
            if foreground {
                work.extend(self.dependents(&node.uid).cloned().map(Work::Dependent));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event(kind: EventType, object: Value, old: Option<Value>) -> Event {
        Event {
            rv: 1,
            key: "configmaps".into(),
            namespace: "ns".into(),
            kind,
            object: Arc::new(object),
            old: old.map(Arc::new),
            bytes: 0,
        }
    }

    fn object(name: &str, uid: &str, owners: &[&str]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o, "uid": o}))
            .collect();
        json!({"metadata": {"name": name, "uid": uid, "ownerReferences": refs}})
    }

    #[test]
    fn a_new_dependent_is_checked_and_indexed_under_each_owner() {
        let mut graph = Graph::default();
        let mut work = Vec::new();
        graph.observe(
            &event(EventType::Added, object("d", "d1", &["a", "b"]), None),
            &mut work,
        );
        assert!(matches!(&work[..], [Work::Dependent(n)] if n.uid == "d1"));
        assert_eq!(graph.dependents("a").count(), 1);
        assert_eq!(graph.dependents("b").count(), 1);
        assert_eq!(graph.locate("d1").map(|n| n.name.as_str()), Some("d"));
    }

    #[test]
    fn an_owner_going_away_queues_its_dependents() {
        let mut graph = Graph::default();
        let mut work = Vec::new();
        graph.observe(&event(EventType::Added, object("o", "a", &[]), None), &mut work);
        graph.observe(
            &event(EventType::Added, object("d", "d1", &["a"]), None),
            &mut work,
        );
        work.clear();
        graph.observe(&event(EventType::Deleted, object("o", "a", &[]), None), &mut work);
        assert!(matches!(&work[..], [Work::Dependent(n)] if n.uid == "d1"));
        assert!(graph.locate("a").is_none());
    }

    #[test]
    fn a_dropped_reference_unindexes_and_frees_the_owner() {
        let mut graph = Graph::default();
        let mut work = Vec::new();
        let before = object("d", "d1", &["a", "b"]);
        graph.observe(&event(EventType::Added, before.clone(), None), &mut work);
        work.clear();
        graph.observe(
            &event(EventType::Modified, object("d", "d1", &["b"]), Some(before)),
            &mut work,
        );
        assert_eq!(graph.dependents("a").count(), 0);
        assert_eq!(graph.owners(), 1);
        assert!(work.contains(&Work::Owner("a".into())));
    }

    #[test]
    fn an_unchanged_update_causes_no_work() {
        let mut graph = Graph::default();
        let mut work = Vec::new();
        let d = object("d", "d1", &["a"]);
        graph.observe(&event(EventType::Added, d.clone(), None), &mut work);
        work.clear();
        graph.observe(&event(EventType::Modified, d.clone(), Some(d)), &mut work);
        assert!(work.is_empty());
    }

    #[test]
    fn a_foreground_deletion_queues_the_owner_and_its_dependents() {
        let mut graph = Graph::default();
        let mut work = Vec::new();
        graph.observe(
            &event(EventType::Added, object("d", "d1", &["a"]), None),
            &mut work,
        );
        work.clear();
        let mut owner = object("o", "a", &[]);
        owner["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        owner["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
        graph.observe(&event(EventType::Modified, owner.clone(), Some(owner)), &mut work);
        assert!(work.contains(&Work::Owner("a".into())));
        assert!(
            work.iter()
                .any(|w| matches!(w, Work::Dependent(n) if n.uid == "d1"))
        );
    }
}
