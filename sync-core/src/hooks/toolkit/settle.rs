//! An apply body's conditions, settled against the live object before it is compared
//! and sent, so that the sync writes only the conditions it owns and never fights the
//! object's other writers over them.
//!
//! * A condition whose status did not change keeps its live `lastTransitionTime` (as
//!   Cluster API's and kube's condition helpers do): a write for another reason does not
//!   reset every condition's time.
//! * A conditions list that is **atomic** in its CRD (no `x-kubernetes-list-type: map`,
//!   e.g. CAPA's v1beta1 `AWSMachine` conditions) is replaced whole by every writer. Server-
//!   side apply cannot merge it by type, so the body carries the live list with the sync's
//!   conditions set by type and every other writer's kept, as Cluster API's patch helper
//!   does. Without this, a provider adding its `Paused` condition and the sync putting its
//!   own list back would take the list from each other forever.
//!
//! Whether a list is keyed comes from `managedFields`: a keyed list's entries name its
//! items (`k:{"type":…}`), an atomic one's name only the list. A list no entry names is
//! taken as atomic: keeping conditions the sync did not write is the safe side.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use serde_json::Value;

/// Settles every `conditions` list of `body` (reached through maps) against `live`'s list
/// at the same path; `managed` and `subresource` tell keyed lists from atomic ones.
pub(super) fn settle(
    body: &mut Value,
    live: &Value,
    managed: &[ManagedFieldsEntry],
    subresource: Option<&str>,
) {
    let keyed = |path: &[&str]| keyed_list(managed, subresource, path);
    walk(body, live, &mut Vec::new(), &keyed);
}

fn walk<'a>(body: &'a mut Value, live: &Value, path: &mut Vec<&'a str>, keyed: &dyn Fn(&[&str]) -> bool) {
    let Value::Object(map) = body else { return };
    for (key, value) in map.iter_mut() {
        let live = live.get(key.as_str()).unwrap_or(&Value::Null);
        path.push(key.as_str());
        match (key.as_str(), value, live) {
            ("conditions", Value::Array(desired), Value::Array(current)) => {
                let atomic = !keyed(path);
                *desired = settle_list(std::mem::take(desired), current, atomic);
            }
            (_, value, live) => walk(value, live, path, keyed),
        }
        path.pop();
    }
}

/// The list to apply: `desired`'s conditions with their live transition times where the
/// status holds; for an atomic list, in the live order with the other writers' conditions
/// kept and new ones appended.
fn settle_list(mut desired: Vec<Value>, live: &[Value], atomic: bool) -> Vec<Value> {
    for condition in &mut desired {
        if let Some(current) = live.iter().find(|c| same_type(c, condition))
            && current.get("status") == condition.get("status")
            && let Some(time) = current.get("lastTransitionTime").filter(|t| !t.is_null())
            && let Some(condition) = condition.as_object_mut()
        {
            condition.insert("lastTransitionTime".into(), time.clone());
        }
    }
    if !atomic {
        return desired;
    }
    let mut list: Vec<Value> = live
        .iter()
        .map(
            |current| match desired.iter().position(|d| same_type(d, current)) {
                Some(index) => desired[index].clone(),
                None => current.clone(),
            },
        )
        .collect();
    list.extend(
        desired
            .into_iter()
            .filter(|d| !live.iter().any(|c| same_type(c, d))),
    );
    list
}

fn same_type(a: &Value, b: &Value) -> bool {
    a.get("type").is_some_and(|t| Some(t) == b.get("type"))
}

/// Whether some entry of `managed` (on `subresource`) names items of the list at `path`.
fn keyed_list(managed: &[ManagedFieldsEntry], subresource: Option<&str>, path: &[&str]) -> bool {
    managed
        .iter()
        .filter(|e| e.subresource.as_deref().filter(|s| !s.is_empty()) == subresource)
        .filter_map(|e| e.fields_v1.as_ref().map(|f| &f.0))
        .any(|fields| match fields {
            // As the caches keep it: the set's JSON text.
            Value::String(text) => serde_json::from_str::<Value>(text).is_ok_and(|f| names_items(&f, path)),
            fields => names_items(fields, path),
        })
}

fn names_items(fields: &Value, path: &[&str]) -> bool {
    let list = path
        .iter()
        .try_fold(fields, |set, key| set.get(format!("f:{key}").as_str()));
    list.and_then(Value::as_object)
        .is_some_and(|set| set.keys().any(|k| k.starts_with("k:")))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::FieldsV1;
    use serde_json::json;

    use super::*;

    const OLD: &str = "2026-01-01T00:00:00Z";
    const NEW: &str = "2026-06-01T00:00:00Z";

    fn entry(fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some("provider".into()),
            operation: Some("Update".into()),
            subresource: Some("status".into()),
            fields_v1: Some(FieldsV1(fields)),
            ..Default::default()
        }
    }

    fn settled(body: Value, live: Value, managed: &[ManagedFieldsEntry]) -> Value {
        let mut body = body;
        settle(&mut body, &live, managed, Some("status"));
        body
    }

    #[test]
    fn an_unchanged_status_keeps_its_transition_time_and_a_changed_one_takes_the_new() {
        let live = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": OLD},
            {"type": "InstanceReady", "status": "Unknown", "lastTransitionTime": OLD}]}});
        let body = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": NEW},
            {"type": "InstanceReady", "status": "True", "lastTransitionTime": NEW}]}});
        let settled = settled(body, live, &[]);
        assert_eq!(settled["status"]["conditions"][0]["lastTransitionTime"], OLD);
        assert_eq!(settled["status"]["conditions"][1]["lastTransitionTime"], NEW);
    }

    #[test]
    fn an_atomic_list_keeps_the_other_writers_conditions_in_their_place() {
        let live = json!({"status": {"conditions": [
            {"type": "Paused", "status": "True", "lastTransitionTime": OLD},
            {"type": "Ready", "status": "False", "lastTransitionTime": OLD}]}});
        let managed = [entry(json!({"f:status": {"f:conditions": {}}}))];
        let body = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": NEW},
            {"type": "InstanceReady", "status": "True", "lastTransitionTime": NEW}]}});
        let settled = settled(body, live, &managed);
        let types: Vec<_> = settled["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["type"].clone())
            .collect();
        assert_eq!(types, [json!("Paused"), json!("Ready"), json!("InstanceReady")]);
        assert_eq!(settled["status"]["conditions"][0]["lastTransitionTime"], OLD);
        assert_eq!(settled["status"]["conditions"][1]["status"], "True");
    }

    #[test]
    fn a_keyed_list_carries_only_the_sync_s_own_conditions() {
        let live = json!({"status": {"conditions": [
            {"type": "Paused", "status": "True", "lastTransitionTime": OLD}]}});
        let managed = [entry(json!({"f:status": {"f:conditions": {
            "k:{\"type\":\"Paused\"}": {".": {}, "f:status": {}}}}}))];
        let body = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let settled = settled(body.clone(), live, &managed);
        assert_eq!(settled, body);
    }

    #[test]
    fn nested_lists_are_settled_and_text_field_sets_are_read() {
        let live = json!({"status": {"deprecated": {"v1beta1": {"conditions": [
            {"type": "Paused", "status": "True"}]}}}});
        let text = json!({"f:status": {"f:deprecated": {"f:v1beta1": {"f:conditions": {
            "k:{\"type\":\"Paused\"}": {}}}}}})
        .to_string();
        let body = json!({"status": {"deprecated": {"v1beta1": {"conditions": [{"type": "Ready", "status": "True"}]}}}});
        assert_eq!(
            settled(body.clone(), live.clone(), &[entry(Value::String(text))]),
            body
        );
        let atomic = settled(body, live, &[]);
        assert_eq!(
            atomic["status"]["deprecated"]["v1beta1"]["conditions"]
                .as_array()
                .map(Vec::len),
            Some(2)
        );
    }
}
