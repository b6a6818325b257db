//! Writing an object by server-side apply, and not writing it when nothing would change.
//!
//! A mirror's own watch event reconciles its pair again; if every reconcile applied, each
//! apply's event would trigger the next one. So the desired object is compared with what
//! the field manager owns in the live one ([`super::owned`]), ignoring what the server
//! or time alone changes: server metadata, conditions' `lastTransitionTime`, and the
//! `cluster.x-k8s.io/conversion-data` annotation (written by CAPI's conversion webhooks).

use kube::api::{Api, Patch, PatchParams};
use kube::{Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::contest::{self, Contested};
use super::owned::owned_by;
pub use super::patch::Part;
use super::settle::settle;

/// Why a write failed: the API server's answer, or a contest with another writer that
/// the sync does not fight ([`super::contest`]).
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The request failed.
    #[error(transparent)]
    Api(#[from] kube::Error),
    /// Another manager keeps undoing this write.
    #[error(transparent)]
    Contested(#[from] Contested),
}

/// The contest anywhere in `error`'s source chain (as itself, or inside an
/// [`ApplyError`]).
pub fn find_contest<'e>(error: &'e (dyn std::error::Error + 'static)) -> Option<&'e Contested> {
    let mut next = Some(error);
    while let Some(error) = next {
        if let Some(contest) = error.downcast_ref::<Contested>() {
            return Some(contest);
        }
        if let Some(ApplyError::Contested(contest)) = error.downcast_ref::<ApplyError>() {
            return Some(contest);
        }
        next = error.source();
    }
    None
}

/// The annotation CAPI's conversion webhooks keep lossy fields in; never compared.
pub const CONVERSION_DATA_ANNOTATION: &str = "cluster.x-k8s.io/conversion-data";

/// What [`apply`] did.
#[derive(Debug)]
pub enum Applied<K> {
    /// The live object already held the desired state: nothing was sent.
    Unchanged,
    /// The server returned this object after the apply (created or changed).
    Written(Box<K>),
}

impl<K> Applied<K> {
    /// Whether a request changed (or created) the object.
    pub fn written(&self) -> bool {
        matches!(self, Self::Written(_))
    }
}

/// Applies `desired`'s `part` under `manager` (with force: the controller is the source of
/// truth for what it mirrors), unless `live` already holds it. `live: None` creates it.
pub async fn apply<K>(
    api: &Api<K>,
    manager: &str,
    live: Option<&K>,
    desired: &K,
    part: Part,
) -> Result<Applied<K>, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    apply_typed(api, &(), manager, live, desired, part).await
}

/// [`apply`] over exactly `live`: the body carries `live`'s resourceVersion, which the API
/// server takes as a precondition (409 Conflict when the object changed since), so the
/// reconcile runs again on fresh data. For a desired state that copies fields of `live`
/// another manager owns (a MAPI object's own `spec.authoritativeAPI`): applied with force
/// from a stale cache, it would undo a change it never saw.
pub async fn apply_over<K>(
    api: &Api<K>,
    manager: &str,
    live: &K,
    desired: &K,
    part: Part,
) -> Result<Applied<K>, ApplyError>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let precondition = live.resource_version();
    write(
        api,
        &(),
        manager,
        Some(live),
        desired,
        part,
        precondition.as_deref(),
    )
    .await
}

/// [`apply`] for kinds known at run time (`DynamicObject` with its `ApiResource`).
pub async fn apply_typed<K>(
    api: &Api<K>,
    types: &K::DynamicType,
    manager: &str,
    live: Option<&K>,
    desired: &K,
    part: Part,
) -> Result<Applied<K>, ApplyError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    write(api, types, manager, live, desired, part, None).await
}

async fn write<K>(
    api: &Api<K>,
    types: &K::DynamicType,
    manager: &str,
    live: Option<&K>,
    desired: &K,
    part: Part,
    precondition: Option<&str>,
) -> Result<Applied<K>, ApplyError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let mut body = body(desired, types, part).map_err(kube::Error::SerdeError)?;
    let subresource = (part == Part::Status).then_some("status");
    let mut change = Change::Created;
    if let Some(live) = live {
        let live_value = serde_json::to_value(live).map_err(kube::Error::SerdeError)?;
        let managed = live.meta().managed_fields.as_deref().unwrap_or_default();
        settle(&mut body, &live_value, managed, subresource);
        let owned = owned_by(&live_value, managed, manager, subresource);
        if !changes(&live_value, &owned, &body) {
            return Ok(Applied::Unchanged);
        }
        contest::before_write(live.meta(), manager, subresource, &body, || {
            describe::<K>(types, live, part)
        })?;
        let fields = differing(&live_value, &body);
        let (taken, fields) = fields.into_iter().partition(|path| {
            at(&live_value, path).is_some_and(|v| !v.is_null()) && at(&owned, path).is_none()
        });
        change = Change::Updated {
            fields,
            taken,
            other: contest::overwritten_by(managed, manager, subresource).map(str::to_owned),
        };
    }
    if let (Some(rv), Some(Value::Object(meta))) = (precondition, body.get_mut("metadata")) {
        meta.insert("resourceVersion".into(), rv.into());
    }
    let name = desired.name_any();
    let params = PatchParams::apply(manager).force();
    let written = super::patch::patch(api, part, &name, &params, &Patch::Apply(&body)).await?;
    change.log(&describe::<K>(types, &written, part), manager, part);
    Ok(Applied::Written(Box::new(written)))
}

/// `AWSMachine openshift-cluster-api/worker-1 status`, for messages.
fn describe<K: Resource>(types: &K::DynamicType, object: &K, part: Part) -> String {
    let namespace = object.namespace().map(|ns| format!("{ns}/")).unwrap_or_default();
    let part = if part == Part::Status { " status" } else { "" };
    format!("{} {namespace}{}{part}", K::kind(types), object.name_any())
}

/// What a write did, for its log line: every write the sync makes is worth a line at the
/// default level.
enum Change {
    Created,
    /// `fields`: the body's fields the live object did not hold; `taken`: those another
    /// manager had written (the sync does not own them any more), which the write puts
    /// back; `other`: the newest such manager.
    Updated {
        fields: Vec<String>,
        taken: Vec<String>,
        other: Option<String>,
    },
}

impl Change {
    fn log(&self, object: &str, manager: &str, part: Part) {
        match self {
            Self::Created if part == Part::Status => tracing::info!(%object, manager, "status set"),
            Self::Created => tracing::info!(%object, manager, "created"),
            Self::Updated { fields, taken, other } if !taken.is_empty() => tracing::info!(
                %object, manager, reverted = %taken.join(","), fields = %fields.join(","),
                other_manager = other.as_deref().unwrap_or("unknown"),
                "reverted another field manager's change"
            ),
            Self::Updated { fields, .. } => {
                tracing::info!(%object, manager, fields = %fields.join(","), "updated");
            }
        }
    }
}

/// The value at a dotted `path` of `value`.
fn at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

/// The paths (two levels deep: `spec.providerID`, `metadata.labels`) of `body` whose
/// values `live` does not hold.
fn differing(live: &Value, body: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    let Value::Object(body) = body else { return paths };
    for (key, value) in body {
        let ignore = Ignore::Top.child(key);
        if Ignore::Top.skips(key) {
            continue;
        }
        let live = live.get(key).unwrap_or(&Value::Null);
        match value {
            Value::Object(fields) => paths.extend(
                fields
                    .iter()
                    .filter(|(k, v)| {
                        !ignore.skips(k)
                            && !holds(live.get(k.as_str()).unwrap_or(&Value::Null), v, ignore.child(k))
                    })
                    .map(|(k, _)| format!("{key}.{k}")),
            ),
            value if !holds(live, value, ignore) => paths.push(key.clone()),
            _ => {}
        }
    }
    paths
}

/// Whether applying `body` under `manager` would change `live`.
pub fn would_change<K>(live: &K, body: &Value, manager: &str, part: Part) -> Result<bool, serde_json::Error>
where
    K: Resource + Serialize,
{
    let subresource = (part == Part::Status).then_some("status");
    let live_value = serde_json::to_value(live)?;
    let managed = live.meta().managed_fields.as_deref().unwrap_or_default();
    let owned = owned_by(&live_value, managed, manager, subresource);
    Ok(changes(&live_value, &owned, body))
}

/// An apply changes the object unless the manager already owns exactly `body` (`owned`:
/// its projection of `live`), or the live object already holds every value of `body` and
/// `body` every value the manager owns (so nothing would be removed): equal values another
/// manager wrote are not worth a write that only takes their ownership and wakes every
/// watcher.
fn changes(live: &Value, owned: &Value, body: &Value) -> bool {
    let nothing_to_take = holds(live, body, Ignore::Top) && holds(body, owned, Ignore::Top);
    !(same(owned, body) || nothing_to_take)
}

/// The apply body of `desired`'s `part`: apiVersion, kind, name, namespace, and the part.
fn body<K: Resource + Serialize>(
    desired: &K,
    types: &K::DynamicType,
    part: Part,
) -> Result<Value, serde_json::Error> {
    let Value::Object(mut full) = serde_json::to_value(desired)? else {
        return Ok(Value::Null);
    };
    let mut out = Map::new();
    out.insert("apiVersion".into(), K::api_version(types).into());
    out.insert("kind".into(), K::kind(types).into());
    let mut metadata = Map::new();
    let mut live_meta = match full.remove("metadata") {
        Some(Value::Object(meta)) => meta,
        _ => Map::new(),
    };
    let keep: &[&str] = match part {
        Part::Object => &[
            "name",
            "namespace",
            "labels",
            "annotations",
            "ownerReferences",
            "finalizers",
        ],
        Part::Status => &["name", "namespace"],
    };
    for key in keep {
        if let Some(value) = live_meta.remove(*key) {
            metadata.insert((*key).into(), value);
        }
    }
    out.insert("metadata".into(), Value::Object(metadata));
    for (key, value) in full {
        let is_status = key == "status";
        if key != "apiVersion" && key != "kind" && is_status == (part == Part::Status) {
            out.insert(key, value);
        }
    }
    Ok(Value::Object(out))
}

/// Whether two apply bodies (or owned projections) hold the same fields, ignoring what is
/// never compared: `apiVersion`, `kind`, the name and namespace, the conversion-data
/// annotation, nulls and empty maps and lists, and conditions' `lastTransitionTime`.
/// Compares in place: no pruned copy of either side is built.
fn same(a: &Value, b: &Value) -> bool {
    equal(a, b, Ignore::Top)
}

/// Which keys of a map are not compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ignore {
    /// The object: `apiVersion`, `kind`.
    Top,
    /// Its `metadata`: `name`, `namespace`.
    Metadata,
    /// `metadata.annotations`: the conversion data.
    Annotations,
    /// A `conditions` list: nothing, but its items are conditions.
    Conditions,
    /// A condition: `lastTransitionTime`.
    Condition,
    Nothing,
}

impl Ignore {
    fn skips(self, key: &str) -> bool {
        match self {
            Self::Top => matches!(key, "apiVersion" | "kind"),
            Self::Metadata => matches!(key, "name" | "namespace"),
            Self::Annotations => key == CONVERSION_DATA_ANNOTATION,
            Self::Condition => key == "lastTransitionTime",
            Self::Conditions | Self::Nothing => false,
        }
    }

    /// What the value of key `key` ignores.
    fn child(self, key: &str) -> Self {
        match (self, key) {
            (Self::Top, "metadata") => Self::Metadata,
            (Self::Metadata, "annotations") => Self::Annotations,
            (_, "conditions") => Self::Conditions,
            _ => Self::Nothing,
        }
    }

    /// What the items of a list ignore.
    fn item(self) -> Self {
        if self == Self::Conditions {
            Self::Condition
        } else {
            Self::Nothing
        }
    }
}

/// `a` and `b` are equal once nulls, empty maps and lists and ignored keys are dropped.
fn equal(a: &Value, b: &Value, ignore: Ignore) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.iter()
                .filter(|(k, _)| !ignore.skips(k))
                .all(|(k, v)| match b.get(k) {
                    Some(w) => equal(v, w, ignore.child(k)),
                    None => empty(v, ignore.child(k)),
                })
                && b.iter()
                    .all(|(k, w)| ignore.skips(k) || a.contains_key(k) || empty(w, ignore.child(k)))
        }
        (Value::Array(a), Value::Array(b)) => {
            let item = ignore.item();
            let mut a = a.iter().filter(|v| !empty(v, item));
            let mut b = b.iter().filter(|v| !empty(v, item));
            loop {
                match (a.next(), b.next()) {
                    (None, None) => return true,
                    (Some(v), Some(w)) if equal(v, w, item) => {}
                    _ => return false,
                }
            }
        }
        (a, b) if empty(a, ignore) && empty(b, ignore) => true,
        (a, b) => a == b,
    }
}

/// Whether `live` holds every value of `body` (lists whole), ignoring what [`same`]
/// ignores.
fn holds(live: &Value, body: &Value, ignore: Ignore) -> bool {
    match (live, body) {
        (Value::Object(live), Value::Object(body)) => body.iter().all(|(k, v)| {
            ignore.skips(k)
                || match live.get(k) {
                    Some(w) => holds(w, v, ignore.child(k)),
                    None => empty(v, ignore.child(k)),
                }
        }),
        (live, body) => equal(live, body, ignore),
    }
}

/// Whether `value` is dropped whole: null, or a map or list of only dropped values.
fn empty(value: &Value, ignore: Ignore) -> bool {
    match value {
        Value::Null => true,
        Value::Object(map) => map
            .iter()
            .all(|(k, v)| ignore.skips(k) || empty(v, ignore.child(k))),
        Value::Array(items) => items.iter().all(|v| empty(v, ignore.item())),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn comparison_ignores_server_metadata_transition_times_and_conversion_data() {
        let a = json!({"apiVersion": "v", "kind": "K",
            "metadata": {"name": "n", "namespace": "ns", "annotations": {CONVERSION_DATA_ANNOTATION: "x"}},
            "spec": {"empty": {}, "gone": null, "v": 1},
            "status": {"conditions": [{"type": "T", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}});
        let b = json!({"spec": {"v": 1}, "status": {"conditions": [{"type": "T", "status": "True"}]}});
        assert!(same(&a, &b));
        assert!(same(&b, &a));
        assert!(!same(
            &json!({"metadata": {"labels": {"a": "1"}}}),
            &json!({"metadata": {"labels": {"a": "2"}}})
        ));
    }

    /// The comparison as it was written first: prune both sides, then compare the trees.
    /// `same` must agree with it everywhere.
    fn reference(a: &Value, b: &Value) -> bool {
        fn comparable(value: Value) -> Value {
            let mut value = prune(value).unwrap_or(Value::Object(Map::new()));
            if let Some(map) = value.as_object_mut() {
                map.remove("apiVersion");
                map.remove("kind");
                if let Some(Value::Object(meta)) = map.get_mut("metadata") {
                    meta.retain(|k, _| !matches!(k.as_str(), "name" | "namespace"));
                    if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
                        annotations.remove(CONVERSION_DATA_ANNOTATION);
                        if annotations.is_empty() {
                            meta.remove("annotations");
                        }
                    }
                    if meta.is_empty() {
                        map.remove("metadata");
                    }
                }
            }
            value
        }
        fn prune(value: Value) -> Option<Value> {
            match value {
                Value::Null => None,
                Value::Object(map) => {
                    let map: Map<String, Value> = map
                        .into_iter()
                        .filter_map(|(k, mut v)| {
                            if k == "conditions" {
                                for c in v.as_array_mut().into_iter().flatten() {
                                    if let Some(c) = c.as_object_mut() {
                                        c.remove("lastTransitionTime");
                                    }
                                }
                            }
                            prune(v).map(|v| (k, v))
                        })
                        .collect();
                    (!map.is_empty()).then_some(Value::Object(map))
                }
                Value::Array(items) => {
                    let items: Vec<Value> = items.into_iter().filter_map(prune).collect();
                    (!items.is_empty()).then_some(Value::Array(items))
                }
                scalar => Some(scalar),
            }
        }
        comparable(a.clone()) == comparable(b.clone())
    }

    #[test]
    fn the_in_place_comparison_agrees_with_pruning_both_sides() {
        let values = [
            json!({}),
            json!(null),
            json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "n"}}),
            json!({"metadata": {"annotations": {CONVERSION_DATA_ANNOTATION: "x"}}}),
            json!({"metadata": {"annotations": {CONVERSION_DATA_ANNOTATION: "x", "a": "1"}}}),
            json!({"metadata": {"annotations": {"a": "1"}, "labels": {}}}),
            json!({"metadata": {"finalizers": ["f"], "namespace": "x"}}),
            json!({"metadata": {"finalizers": ["f", null]}}),
            json!({"metadata": {"finalizers": []}}),
            json!({"spec": {"a": [], "b": {}, "c": null}}),
            json!({"spec": {"a": [1, {}, 2]}}),
            json!({"spec": {"a": [1, 2]}}),
            json!({"spec": {"a": [2, 1]}}),
            json!({"spec": {"a": 1}}),
            json!({"spec": {"a": "1"}}),
            json!({"spec": {"a": {"b": {"c": null}}}}),
            json!({"spec": {"name": "n", "kind": "k", "lastTransitionTime": "t"}}),
            json!({"spec": {"name": "m"}}),
            json!({"status": {"conditions": [{"type": "T", "lastTransitionTime": "t1"}]}}),
            json!({"status": {"conditions": [{"type": "T", "lastTransitionTime": "t2"}]}}),
            json!({"status": {"conditions": [{"type": "T"}]}}),
            json!({"status": {"conditions": [{"lastTransitionTime": "t"}]}}),
            json!({"status": {"conditions": [{"type": "T", "nested": {"lastTransitionTime": "t"}}]}}),
            json!({"status": {"conditions": []}}),
            json!({"status": {"conditions": {"lastTransitionTime": "t"}}}),
            json!({"status": {"conditions": [[{"lastTransitionTime": "t"}]]}}),
            json!({"status": {"conditions": [{"type": "T", "conditions": [{"lastTransitionTime": "t"}]}]}}),
            json!({"apiVersion": "other", "status": {"x": [[], [null]]}}),
            json!({"metadata": {"name": "other"}, "spec": {"a": [1, 2]}}),
        ];
        for a in &values {
            for b in &values {
                assert_eq!(same(a, b), reference(a, b), "{a} vs {b}");
            }
        }
    }
}
