//! The garbage collector, as kube-controller-manager's: a controller running beside the
//! server that follows the store's event log (its informers), keeps the ownership
//! [`graph`], and acts through the same object semantics a request goes through
//! ([`objects::delete`], [`objects::update`]), so every change it makes is validated,
//! versioned and watched like a client's.
//!
//! * Background: once every owner of a dependent is gone (or never existed: an owner uid
//!   that matches no object), the dependent is deleted, with the propagation its own
//!   finalizers ask for; a dependent with a live owner left only loses the dead references.
//! * Foreground: an owner with `foregroundDeletion` stays until no dependent with
//!   `blockOwnerDeletion: true` is left; its dependents are deleted meanwhile (in the
//!   foreground themselves when they own objects).
//! * Orphan: an owner with `orphan` has its reference removed from every dependent, then
//!   the finalizer.
//! * A namespaced dependent's owners are looked up in its namespace (or cluster scope); a
//!   reference to a namespaced owner from a cluster-scoped dependent, or to an object in
//!   another namespace, is not followed: it counts as absent and gets a Warning Event
//!   `OwnerRefInvalidNamespace` on the dependent, as kube's GraphBuilder records it.
//!
//! It is asynchronous like the real one: a DELETE answers first, the collector's writes
//! follow in their own watch events. Differences: no per-item retry with backoff (a write
//! the server refuses is logged and dropped until the next change of the object), and an
//! owner kind that is not served is looked at again only when a CRD changes.

pub mod decide;
pub mod graph;

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::meta::errors::ApiResult;
use crate::objects::deletion::{Cascade, FOREGROUND, ORPHAN, Propagation};
use crate::objects::{self, CRD_KEY, DeleteOptions, Endpoint};
use crate::patch::apply;
use crate::resources::ResourceInfo;
use crate::storage::store::{Event, EventType, State, Store};
use decide::{Owner, Verdict};
use graph::{Graph, Node, OwnerRef, Work, deleting, has_finalizer, owner_refs};

/// The field manager of the collector's writes (kube-controller-manager's).
pub const MANAGER: &str = "kube-controller-manager";

/// Runs the collector on `store` until the task is aborted (the harness does on drop).
pub fn spawn(store: Arc<Store>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut changes = store.subscribe();
        let mut collector = Collector::default();
        loop {
            changes.borrow_and_update();
            collector.step(&store);
            if changes.changed().await.is_err() {
                return;
            }
        }
    })
}

/// The collector's state between steps.
#[derive(Debug, Default)]
pub struct Collector {
    graph: Graph,
    /// The last resourceVersion taken in (0: the graph is still to be built).
    seen: u64,
    /// Dependents with an owner of a kind not served, looked at again when CRDs change.
    unresolved: HashSet<Node>,
    /// (dependent, owner) uids already reported as `OwnerRefInvalidNamespace`.
    reported: HashSet<(String, String)>,
}

impl Collector {
    /// Takes in every change since the last step, then does the work they cause under one
    /// store lock. Its own writes are taken in by the next step.
    pub fn step(&mut self, store: &Store) {
        let mut work = Vec::new();
        {
            let state = store.read();
            match state.events_after(self.seen) {
                Ok(events) if self.seen > 0 => {
                    for event in &events {
                        if &*event.key == CRD_KEY {
                            work.extend(self.unresolved.drain().map(Work::Dependent));
                        }
                        self.graph.observe(event, &mut work);
                    }
                }
                // First step, or the log moved past us: rebuild from the objects.
                _ => self.rebuild(&state, &mut work),
            }
            self.seen = state.rv;
        }
        if work.is_empty() {
            return;
        }
        let mut done = HashSet::new();
        store.write(|state| {
            for item in work {
                if done.insert(item.clone()) {
                    self.attempt(state, &item);
                }
            }
        });
    }

    fn rebuild(&mut self, state: &State, work: &mut Vec<Work>) {
        self.graph = Graph::default();
        for (key, collection) in &state.collections {
            let key: Arc<str> = key.as_str().into();
            for ((namespace, _), object) in collection {
                let event = Event {
                    rv: state.rv,
                    key: key.clone(),
                    namespace: namespace.as_str().into(),
                    kind: EventType::Added,
                    object: object.clone(),
                    old: None,
                    // A synthetic event, never retained in the history.
                    bytes: 0,
                };
                self.graph.observe(&event, work);
            }
        }
    }

    fn attempt(&mut self, state: &mut State, work: &Work) {
        match work {
            Work::Dependent(node) => self.attempt_dependent(state, node),
            Work::Owner(uid) => {
                if let Some(node) = self.graph.locate(uid).cloned() {
                    self.attempt_owner(state, &node);
                }
            }
        }
    }

    /// kube's attemptToDeleteItem.
    fn attempt_dependent(&mut self, state: &mut State, node: &Node) {
        let Some(object) = live(state, node) else { return };
        if deleting(&object) {
            if has_finalizer(&object, FOREGROUND) {
                self.attempt_owner(state, node);
            }
            return;
        }
        let refs = owner_refs(&object);
        let owners: Vec<(String, Owner)> = refs
            .iter()
            .map(|r| (r.uid.clone(), self.classify(state, node, &object, r)))
            .collect();
        let has_dependents = self.graph.dependents(&node.uid).next().is_some();
        let verdict = decide::verdict(
            &owners,
            has_dependents,
            has_finalizer(&object, ORPHAN),
            has_finalizer(&object, FOREGROUND),
        );
        let result = match verdict {
            Verdict::Keep => Ok(()),
            Verdict::Retry => {
                self.unresolved.insert(node.clone());
                Ok(())
            }
            Verdict::DropReferences(uids) => rewrite(state, node, |meta| {
                if let Some(refs) = meta.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                    refs.retain(|r| !uids.iter().any(|u| r["uid"] == u.as_str()));
                }
            }),
            Verdict::Delete(propagation) => delete(state, node, propagation),
        };
        if let Err(error) = result {
            tracing::warn!(%error, name = %node.name, namespace = %node.namespace, "envtest gc: dependent not collected");
        }
    }

    /// What a reference of `dependent` points at, reporting a reference across namespaces.
    fn classify(&mut self, state: &mut State, node: &Node, dependent: &Value, owner: &OwnerRef) -> Owner {
        let Some(info) = state
            .registry
            .by_kind(&owner.api_version, &owner.kind)
            .or_else(|| {
                // Another served version of the same group and kind.
                let group = owner
                    .api_version
                    .rsplit_once('/')
                    .map(|(g, _)| g)
                    .unwrap_or_default();
                state
                    .registry
                    .all()
                    .find(|i| i.group == group && i.kind == owner.kind)
                    .cloned()
            })
        else {
            return Owner::Unresolved;
        };
        let namespace = if info.namespaced { &*node.namespace } else { "" };
        if info.namespaced && node.namespace.is_empty() {
            self.report_invalid_namespace(state, node, dependent, owner);
            return Owner::Dangling;
        }
        match state.get(&info.storage_key(), namespace, &owner.name) {
            Some(found) if found["metadata"]["uid"] == owner.uid.as_str() => {
                if deleting(found) && has_finalizer(found, FOREGROUND) {
                    Owner::Waiting
                } else {
                    Owner::Solid
                }
            }
            _ => {
                if self
                    .graph
                    .locate(&owner.uid)
                    .is_some_and(|o| *o.namespace != *namespace)
                {
                    self.report_invalid_namespace(state, node, dependent, owner);
                }
                Owner::Dangling
            }
        }
    }

    /// kube's processDeletingDependentsItem and attemptToOrphan, for an owner being deleted.
    fn attempt_owner(&mut self, state: &mut State, node: &Node) {
        let Some(object) = live(state, node) else { return };
        if !deleting(&object) {
            return;
        }
        let dependents: Vec<Node> = self.graph.dependents(&node.uid).cloned().collect();
        let result = if has_finalizer(&object, ORPHAN) {
            let mut result = Ok(());
            for dependent in &dependents {
                if live(state, dependent).is_some() {
                    result = result.and(rewrite(state, dependent, |meta| {
                        if let Some(refs) = meta.get_mut("ownerReferences").and_then(Value::as_array_mut) {
                            refs.retain(|r| r["uid"] != node.uid.as_str());
                        }
                    }));
                }
            }
            result.and_then(|()| remove_finalizer(state, node, ORPHAN))
        } else if has_finalizer(&object, FOREGROUND) {
            let blocking: Vec<&Node> = dependents
                .iter()
                .filter(|d| {
                    live(state, d)
                        .is_some_and(|o| owner_refs(&o).iter().any(|r| r.uid == node.uid && r.block))
                })
                .collect();
            if blocking.is_empty() {
                remove_finalizer(state, node, FOREGROUND)
            } else {
                Ok(())
            }
        } else {
            Ok(())
        };
        if let Err(error) = result {
            tracing::warn!(%error, name = %node.name, namespace = %node.namespace, "envtest gc: owner not finalized");
        }
    }

    /// A Warning Event on the dependent, once per (dependent, owner), as kube's
    /// GraphBuilder's `reportInvalidNamespaceOwnerRef`.
    fn report_invalid_namespace(
        &mut self,
        state: &mut State,
        node: &Node,
        dependent: &Value,
        owner: &OwnerRef,
    ) {
        if !self.reported.insert((node.uid.clone(), owner.uid.clone())) {
            return;
        }
        let message = format!(
            "ownerRef [{}/{}, namespace: {}, name: {}, uid: {}] does not exist in namespace {:?}",
            owner.api_version, owner.kind, node.namespace, owner.name, owner.uid, &*node.namespace
        );
        let namespace = if node.namespace.is_empty() {
            "default"
        } else {
            &node.namespace
        };
        let now = objects::now();
        let event = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": format!("{}.{}", node.name, &objects::uuid()[..16].replace('-', "")), "namespace": namespace},
            "involvedObject": {
                "apiVersion": dependent["apiVersion"],
                "kind": dependent["kind"],
                "name": node.name,
                "namespace": &*node.namespace,
                "uid": node.uid,
            },
            "reason": "OwnerRefInvalidNamespace",
            "message": message,
            "type": "Warning",
            "source": {"component": "garbage-collector-controller"},
            "reportingComponent": "garbage-collector-controller",
            "reportingInstance": "",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        });
        let Some(info) = state.registry.get("", "v1", "events") else {
            return;
        };
        if let Err(error) = objects::create(state, &info, namespace, event, false) {
            tracing::warn!(%error, "envtest gc: event not recorded");
        }
    }
}

/// The stored object of `node`, if it is still that incarnation.
fn live(state: &State, node: &Node) -> Option<Arc<Value>> {
    state
        .get(&node.key, &node.namespace, &node.name)
        .filter(|o| o["metadata"]["uid"] == node.uid.as_str())
        .cloned()
}

/// The resource serving a stored object as it is stored.
fn info_of(state: &State, object: &Value) -> Option<Arc<ResourceInfo>> {
    state.registry.by_kind(
        object["apiVersion"].as_str().unwrap_or_default(),
        object["kind"].as_str().unwrap_or_default(),
    )
}

/// Deletes a dependent with a uid precondition, as kube's GC does.
fn delete(state: &mut State, node: &Node, propagation: Propagation) -> ApiResult<()> {
    let Some(object) = live(state, node) else {
        return Ok(());
    };
    let Some(info) = info_of(state, &object) else {
        return Ok(());
    };
    let options = DeleteOptions {
        uid: Some(node.uid.clone()),
        cascade: Cascade::policy(propagation),
        ..DeleteOptions::default()
    };
    objects::delete(state, &info, &node.namespace, &node.name, &options).map(|_| ())
}

/// Changes an object's metadata through the update path (validation, managedFields,
/// resourceVersion, watch event).
fn rewrite(state: &mut State, node: &Node, change: impl FnOnce(&mut Map<String, Value>)) -> ApiResult<()> {
    let Some(object) = live(state, node) else {
        return Ok(());
    };
    let Some(info) = info_of(state, &object) else {
        return Ok(());
    };
    let current = objects::present(&info, &object);
    let mut new = current.as_ref().clone();
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        change(meta);
    }
    if new == *current {
        return Ok(());
    }
    apply::track_update(state, &info, Endpoint::Main, Some(&current), &mut new, MANAGER);
    objects::update(
        state,
        &info,
        &node.namespace,
        &node.name,
        new,
        Endpoint::Main,
        false,
    )
    .map(|_| ())
}

fn remove_finalizer(state: &mut State, node: &Node, finalizer: &str) -> ApiResult<()> {
    rewrite(state, node, |meta| {
        if let Some(list) = meta.get_mut("finalizers").and_then(Value::as_array_mut) {
            list.retain(|f| f != finalizer);
        }
    })
}
