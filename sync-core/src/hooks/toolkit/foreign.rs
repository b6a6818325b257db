//! Fields another writer added to a mirror's `spec`.
//!
//! A mirror's spec is the conversion of the authoritative object. Server-side apply puts
//! back a field the sync owns when another writer changes it, but never removes a field
//! the sync does not own: a field a user adds to a mirror (`spec.minReadySeconds`) would
//! stay, and the mirror would silently drift from its source. [`drift`] finds
//! such fields from `metadata.managedFields`; [`remove`] takes them out with a merge patch
//! conditional on the resourceVersion (a concurrent write makes it fail with 409 and the
//! reconcile runs again on fresh data).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::patch::Part;

/// What other writers did to a mirror's spec, as paths below `spec`
/// (`["minReadySeconds"]`, `["template", "spec", "version"]`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drift {
    /// Fields they set that the conversion does not hold: only a removal takes them out.
    pub added: Vec<Vec<String>>,
    /// Fields of the conversion they set to another value: the sync's apply puts them back.
    pub changed: Vec<Vec<String>>,
}

impl Drift {
    /// Nothing drifted.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty()
    }
}

/// The `spec` fields of `live` that managers `ours` does not accept own on the main
/// resource, and that `desired` (the apply body) lacks or holds another value of. Paths
/// `keep` lists (e.g. `["authoritativeAPI"]`) are never reported; list items are not
/// looked into.
pub fn drift(
    live: &Value,
    managed: &[ManagedFieldsEntry],
    ours: impl Fn(&str) -> bool,
    desired: &Value,
    keep: &[&[&str]],
) -> Drift {
    let mut drift = Drift::default();
    let others = managed.iter().filter(|e| {
        !ours(e.manager.as_deref().unwrap_or_default()) && e.subresource.as_deref().is_none_or(str::is_empty)
    });
    for entry in others {
        let Some(set) = entry.fields_v1.as_ref().and_then(|f| spec_set(&f.0)) else {
            continue;
        };
        walk(
            &set,
            &live["spec"],
            Some(&desired["spec"]),
            &mut Vec::new(),
            &mut drift,
        );
    }
    for paths in [&mut drift.added, &mut drift.changed] {
        paths.retain(|path| {
            !keep
                .iter()
                .any(|k| path.iter().map(String::as_str).eq(k.iter().copied()))
        });
        paths.sort();
        paths.dedup();
    }
    drift
}

/// The `f:spec` part of a field set (as the caches keep it: JSON text, or a tree).
fn spec_set(fields: &Value) -> Option<Value> {
    let parsed;
    let fields = match fields {
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).ok()?;
            &parsed
        }
        tree => tree,
    };
    fields.get("f:spec").cloned()
}

fn walk(set: &Value, live: &Value, desired: Option<&Value>, path: &mut Vec<String>, drift: &mut Drift) {
    let Some(set) = set.as_object() else { return };
    for (key, child_set) in set {
        let Some(name) = key.strip_prefix("f:") else {
            continue;
        };
        let Some(live_child) = live.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        path.push(name.to_owned());
        match desired.and_then(|d| d.get(name)).filter(|v| !v.is_null()) {
            None => drift.added.push(path.clone()),
            Some(desired_child) if live_child.is_object() && desired_child.is_object() => {
                walk(child_set, live_child, Some(desired_child), path, drift);
            }
            Some(desired_child) if desired_child != live_child => drift.changed.push(path.clone()),
            Some(_) => {}
        }
        path.pop();
    }
}

/// Dotted forms of `paths` below `spec`, for messages (`spec.minReadySeconds`).
pub fn describe(paths: &[Vec<String>]) -> Vec<String> {
    paths.iter().map(|p| format!("spec.{}", p.join("."))).collect()
}

/// Removes `paths` (below `spec`) from `live` with one merge patch under `manager`,
/// conditional on `live`'s resourceVersion.
pub async fn remove<K>(api: &Api<K>, manager: &str, live: &K, paths: &[Vec<String>]) -> Result<K, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let mut spec = Map::new();
    for path in paths {
        null_at(&mut spec, path);
    }
    let patch = json!({
        "metadata": {"resourceVersion": live.resource_version()},
        "spec": spec,
    });
    let params = PatchParams {
        field_manager: Some(manager.to_owned()),
        ..PatchParams::default()
    };
    super::patch::patch(
        api,
        Part::Object,
        &live.name_any(),
        &params,
        &Patch::Merge(&patch),
    )
    .await
}

fn null_at(map: &mut Map<String, Value>, path: &[String]) {
    match path {
        [] => {}
        [last] => {
            map.insert(last.clone(), Value::Null);
        }
        [first, rest @ ..] => {
            let child = map
                .entry(first.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(child) = child {
                null_at(child, rest);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;

    use super::*;

    fn entry(manager: &str, subresource: Option<&str>, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.into()),
            operation: Some("Update".into()),
            subresource: subresource.map(String::from),
            fields_v1: Some(FieldsV1(Value::String(fields.to_string()))),
            ..ManagedFieldsEntry::default()
        }
    }

    fn ours(manager: &str) -> bool {
        manager == "sync"
    }

    #[test]
    fn a_field_another_manager_added_and_the_conversion_lacks_is_found() {
        let live = json!({"spec": {"replicas": 2, "minReadySeconds": 42, "template": {"spec": {"version": "1.30", "bootstrap": {}}}}});
        let desired = json!({"spec": {"replicas": 2, "template": {"spec": {"bootstrap": {}}}}});
        let managed = [
            entry(
                "sync",
                None,
                json!({"f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:bootstrap": {}}}}}),
            ),
            entry(
                "kubectl-edit",
                None,
                json!({"f:spec": {"f:minReadySeconds": {}, "f:replicas": {}, "f:template": {"f:spec": {"f:version": {}}}}}),
            ),
        ];
        let found = drift(&live, &managed, ours, &desired, &[]);
        assert_eq!(
            describe(&found.added),
            ["spec.minReadySeconds", "spec.template.spec.version"]
        );
        assert!(found.changed.is_empty());
    }

    #[test]
    fn the_sync_s_own_fields_status_writes_and_kept_paths_are_not_reported() {
        let live = json!({"spec": {"authoritativeAPI": "ClusterAPI", "extra": 1}});
        let desired = json!({"spec": {}});
        let managed = [
            entry("sync", None, json!({"f:spec": {"f:extra": {}}})),
            entry("user", Some("status"), json!({"f:spec": {"f:extra": {}}})),
            entry("user", None, json!({"f:spec": {"f:authoritativeAPI": {}}})),
        ];
        assert!(drift(&live, &managed, ours, &desired, &[&["authoritativeAPI"]]).is_empty());
    }

    #[test]
    fn a_field_already_gone_from_the_live_object_is_not_reported() {
        let managed = [entry("user", None, json!({"f:spec": {"f:gone": {}}}))];
        assert!(drift(&json!({"spec": {}}), &managed, ours, &json!({"spec": {}}), &[]).is_empty());
    }

    #[test]
    fn a_field_of_the_conversion_another_manager_changed_is_found() {
        let live = json!({"spec": {"replicas": 7, "clusterName": "c1"}});
        let desired = json!({"spec": {"replicas": 1, "clusterName": "c1"}});
        let managed = [entry(
            "kubectl-patch",
            None,
            json!({"f:spec": {"f:replicas": {}, "f:clusterName": {}}}),
        )];
        let found = drift(&live, &managed, ours, &desired, &[]);
        assert_eq!(describe(&found.changed), ["spec.replicas"]);
        assert!(found.added.is_empty());
    }

    #[test]
    fn removal_nulls_each_path() {
        let mut spec = Map::new();
        null_at(&mut spec, &["a".into(), "b".into()]);
        null_at(&mut spec, &["c".into()]);
        assert_eq!(Value::Object(spec), json!({"a": {"b": null}, "c": null}));
    }
}
