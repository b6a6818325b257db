//! `metadata.managedFields`: decoding, the update and apply operations of
//! structured-merge-diff's `Updater` (with kube-apiserver's field-manager layers: meta
//! fields stripped, reset fields ignored, timestamps), and conflict errors.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::fieldpath::{self, Element, Set};
use super::typed::{self, Ty};
use crate::meta::errors::{ApiError, Cause};

/// The identity of a manager entry: kube-apiserver keys entries by manager, operation,
/// subresource and (for `Update` only) apiVersion.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ManagerId {
    /// `Apply` or `Update`.
    pub operation: String,
    /// The manager name.
    pub manager: String,
    /// The apiVersion for `Update` entries, empty for `Apply`.
    pub api_version: String,
    /// `status`, `scale` or empty.
    pub subresource: String,
}

impl ManagerId {
    /// How kube-apiserver prints a manager in conflict messages.
    pub fn describe(&self, api_version: &str) -> String {
        let mut out = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            out = format!("{out} with subresource {:?}", self.subresource);
        }
        if self.operation == "Update" {
            out = format!("{out} using {api_version}");
        }
        out
    }
}

/// One manager's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The apiVersion the fields were recorded in.
    pub api_version: String,
    /// When the manager last changed the object.
    pub time: Option<String>,
    /// The owned fields.
    pub set: Set,
}

/// Every manager of an object.
pub type Managers = BTreeMap<ManagerId, Entry>;

/// Decodes `metadata.managedFields` (`Err` when it is not valid).
pub fn decode(object: &Value) -> Result<Managers, String> {
    let mut out = Managers::new();
    let Some(entries) = object["metadata"].get("managedFields") else {
        return Ok(out);
    };
    if entries.is_null() {
        return Ok(out);
    }
    let entries = entries
        .as_array()
        .ok_or_else(|| "metadata.managedFields must be a list".to_string())?;
    for entry in entries {
        let text = |field: &str| entry[field].as_str().unwrap_or_default().to_string();
        if let Some(kind) = entry["fieldsType"].as_str()
            && kind != "FieldsV1"
        {
            return Err(format!("invalid fieldsType {kind:?}"));
        }
        let set = match entry.get("fieldsV1") {
            None | Some(Value::Null) => Set::new(),
            Some(v) => Set::from_fields_v1(v)?,
        };
        let operation = text("operation");
        let id = ManagerId {
            api_version: if operation == "Apply" {
                String::new()
            } else {
                text("apiVersion")
            },
            operation,
            manager: text("manager"),
            subresource: text("subresource"),
        };
        let slot = out.entry(id).or_insert_with(|| Entry {
            api_version: text("apiVersion"),
            time: entry["time"].as_str().map(String::from),
            set: Set::new(),
        });
        slot.set = slot.set.union(&set);
    }
    Ok(out)
}

/// Encodes managers as `metadata.managedFields`, ordered as kube-apiserver orders them
/// (operation, time, manager, apiVersion, subresource).
pub fn encode(managers: &Managers) -> Value {
    let mut entries: Vec<(&ManagerId, &Entry)> = managers.iter().filter(|(_, e)| !e.set.is_empty()).collect();
    entries.sort_by(|(a, ea), (b, eb)| {
        (
            &a.operation,
            &ea.time,
            &a.manager,
            &ea.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                &eb.time,
                &b.manager,
                &eb.api_version,
                &b.subresource,
            ))
    });
    let list: Vec<Value> = entries
        .into_iter()
        .map(|(id, entry)| {
            let mut out = Map::new();
            out.insert("manager".into(), json!(id.manager));
            out.insert("operation".into(), json!(id.operation));
            out.insert("apiVersion".into(), json!(entry.api_version));
            if let Some(time) = &entry.time {
                out.insert("time".into(), json!(time));
            }
            out.insert("fieldsType".into(), json!("FieldsV1"));
            out.insert("fieldsV1".into(), entry.set.to_fields_v1());
            if !id.subresource.is_empty() {
                out.insert("subresource".into(), json!(id.subresource));
            }
            Value::Object(out)
        })
        .collect();
    Value::Array(list)
}

/// Which fields the endpoint resets (they are never owned through it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reset {
    /// Nothing is reset.
    None,
    /// The main endpoint of a resource with a status subresource: `status` is reset.
    Status,
    /// The status subresource: everything but `status` is reset.
    AllButStatus,
}

impl Reset {
    fn filter(self, set: &Set) -> Set {
        let status = [fieldpath::field("status")];
        match self {
            Reset::None => set.clone(),
            Reset::Status => {
                let mut out = set.clone();
                out.remove_prefix(&status);
                out
            }
            Reset::AllButStatus => set.keep_prefix(&status),
        }
    }

    fn filter_comparison(self, cmp: &mut typed::Comparison) {
        cmp.added = self.filter(&cmp.added);
        cmp.modified = self.filter(&cmp.modified);
        cmp.removed = self.filter(&cmp.removed);
    }
}

/// The fields kube-apiserver never records as owned.
fn strip_set() -> Set {
    let mut set = Set::new();
    for path in [
        &["apiVersion"][..],
        &["kind"],
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "namespace"],
        &["metadata", "creationTimestamp"],
        &["metadata", "selfLink"],
        &["metadata", "uid"],
        &["metadata", "clusterName"],
        &["metadata", "generation"],
        &["metadata", "managedFields"],
        &["metadata", "resourceVersion"],
    ] {
        let elements: Vec<Element> = path.iter().map(|p| fieldpath::field(p)).collect();
        set.insert(&elements);
    }
    set
}

/// What an operation works with.
#[derive(Debug, Clone, Copy)]
pub struct Scope<'a> {
    /// The object's type.
    pub ty: Ty<'a>,
    /// The apiVersion of the request.
    pub api_version: &'a str,
    /// The subresource of the request (empty for the main endpoint).
    pub subresource: &'a str,
    /// Fields reset by the endpoint.
    pub reset: Reset,
    /// The time to record.
    pub now: &'a str,
}

fn without_managed_fields(object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    copy
}

/// A create, update or non-apply patch by `manager`: records in `new` the fields it
/// changed as an `Update` entry, taking them from every other manager.
///
/// As kube-apiserver, managedFields sent in the request replace the live ones (a list
/// with one empty entry clears them); otherwise the live ones are kept.
pub fn update(scope: &Scope<'_>, live: &Value, new: &mut Value, manager: &str) -> Result<(), String> {
    let sent = new["metadata"].get("managedFields").cloned();
    let mut managers = match sent {
        Some(Value::Array(list)) if !list.is_empty() && scope.subresource.is_empty() => {
            if list.len() == 1 && list[0].as_object().is_some_and(Map::is_empty) {
                Managers::new()
            } else {
                decode(new).or_else(|_| decode(live)).unwrap_or_default()
            }
        }
        _ => decode(live).unwrap_or_default(),
    };
    let live_plain = without_managed_fields(live);
    let new_plain = without_managed_fields(new);
    let mut cmp = typed::compare(&live_plain, &new_plain, scope.ty)?;
    scope.reset.filter_comparison(&mut cmp);
    let changed = cmp.modified.union(&cmp.added);
    for entry in managers.values_mut() {
        entry.set = entry.set.difference(&changed).difference(&cmp.removed);
    }
    let own = changed.difference(&cmp.removed).difference(&strip_set());
    let id = ManagerId {
        operation: "Update".into(),
        manager: manager.to_string(),
        api_version: scope.api_version.to_string(),
        subresource: scope.subresource.to_string(),
    };
    if !own.is_empty() {
        let entry = managers.entry(id).or_insert_with(|| Entry {
            api_version: scope.api_version.to_string(),
            time: None,
            set: Set::new(),
        });
        entry.set = entry.set.union(&own);
        entry.api_version = scope.api_version.to_string();
        entry.time = Some(scope.now.to_string());
    }
    managers.retain(|_, e| !e.set.is_empty());
    set_managed_fields(new, &managers);
    Ok(())
}

fn set_managed_fields(object: &mut Value, managers: &Managers) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if managers.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert("managedFields".into(), encode(managers));
        }
    }
}

/// Removes null map entries (an applied `null` owns the field and clears it).
fn drop_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), drop_nulls(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(drop_nulls).collect()),
        other => other.clone(),
    }
}

/// Why an apply failed.
#[derive(Debug)]
pub enum ApplyError {
    /// The configuration is not valid for the schema.
    Invalid(String),
    /// Fields are owned by other managers (without `force`).
    Conflict(ApiError),
}

/// A server-side apply of `config` by `manager`: merges it into `live`, removes the fields
/// the manager applied last time and no longer applies (unless another applier owns
/// them), fails on conflicts with other managers unless `force`, and records the
/// manager's `Apply` entry. Returns the new object with its managedFields.
pub fn apply(
    scope: &Scope<'_>,
    live: &Value,
    config: &Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    let invalid = ApplyError::Invalid;
    let mut managers = decode(live).unwrap_or_default();
    let live_plain = without_managed_fields(live);
    let applied_set = typed::to_set(config, scope.ty).map_err(invalid)?;
    let applied_set = scope.reset.filter(&applied_set).difference(&strip_set());
    let config_values = drop_nulls(config);
    let merged = typed::merge(Some(&live_plain), Some(&config_values), scope.ty)
        .map_err(invalid)?
        .unwrap_or_else(|| json!({}));
    let id = ManagerId {
        operation: "Apply".into(),
        manager: manager.to_string(),
        api_version: String::new(),
        subresource: scope.subresource.to_string(),
    };
    let last = managers.get(&id).map(|e| e.set.clone()).unwrap_or_default();
    let previous_time = managers.get(&id).and_then(|e| e.time.clone());
    managers.insert(
        id.clone(),
        Entry {
            api_version: scope.api_version.to_string(),
            time: previous_time.clone(),
            set: applied_set.clone(),
        },
    );
    let new = prune(scope.ty, &merged, &managers, &last).map_err(invalid)?;
    let mut cmp = typed::compare(&live_plain, &new, scope.ty).map_err(invalid)?;
    scope.reset.filter_comparison(&mut cmp);
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts: Vec<(ManagerId, String, Vec<Element>)> = Vec::new();
    for (other, entry) in &managers {
        if *other == id {
            continue;
        }
        let clash = entry.set.intersection(&changed);
        for path in clash.paths() {
            conflicts.push((other.clone(), entry.api_version.clone(), path));
        }
    }
    if !force && !conflicts.is_empty() {
        return Err(ApplyError::Conflict(conflict_error(&conflicts)));
    }
    for (other, entry) in managers.iter_mut() {
        if *other == id {
            continue;
        }
        entry.set = entry.set.difference(&changed).difference(&cmp.removed);
    }
    if (new != live_plain || previous_time.is_none())
        && let Some(entry) = managers.get_mut(&id)
    {
        entry.time = Some(scope.now.to_string());
    }
    managers.retain(|_, e| !e.set.is_empty());
    let mut out = new;
    set_managed_fields(&mut out, &managers);
    Ok(out)
}

/// Structured-merge-diff's prune: drops what `last` had and nobody applies any more.
fn prune(ty: Ty<'_>, merged: &Value, managers: &Managers, last: &Set) -> Result<Value, String> {
    if last.is_empty() {
        return Ok(merged.clone());
    }
    let orphan = |v: Option<Value>| v.unwrap_or_else(|| json!({}));
    let pruned = orphan(typed::remove_items(merged, ty, last)?);
    // Add back what any applier (this one's new configuration included) still owns.
    let applied = managers
        .iter()
        .filter(|(id, _)| id.operation == "Apply")
        .fold(Set::new(), |acc, (_, e)| acc.union(&e.set));
    let merged_set = typed::to_set(merged, ty)?;
    let pruned_set = typed::to_set(&pruned, ty)?;
    let pruned = orphan(typed::remove_items(
        merged,
        ty,
        &merged_set.difference(&pruned_set.union(&applied)),
    )?);
    // Only items the manager owned last time are ever removed.
    let pruned_set = typed::to_set(&pruned, ty)?;
    let removable = merged_set.difference(&pruned_set).intersection(last);
    Ok(orphan(typed::remove_items(merged, ty, &removable)?))
}

/// 409 Conflict worded as kube-apiserver words apply conflicts.
fn conflict_error(conflicts: &[(ManagerId, String, Vec<Element>)]) -> ApiError {
    let mut sorted: Vec<&(ManagerId, String, Vec<Element>)> = conflicts.iter().collect();
    sorted.sort_by(|a, b| (&a.0.manager, &a.0, &a.2).cmp(&(&b.0.manager, &b.0, &b.2)));
    let causes: Vec<Cause> = sorted
        .iter()
        .map(|(id, version, path)| Cause {
            reason: "FieldManagerConflict".into(),
            message: format!("conflict with {}", id.describe(version)),
            field: fieldpath::display_path(path),
        })
        .collect();
    let message = if let [(id, version, path)] = sorted.as_slice() {
        format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            id.describe(version),
            fieldpath::display_path(path)
        )
    } else {
        let mut lines = Vec::new();
        let mut current: Option<String> = None;
        for (id, version, path) in &sorted {
            let who = id.describe(version);
            if current.as_deref() != Some(who.as_str()) {
                lines.push(format!("conflicts with {who}:"));
                current = Some(who);
            }
            lines.push(format!("- {}", fieldpath::display_path(path)));
        }
        format!(
            "Apply failed with {} conflicts: {}",
            sorted.len(),
            lines.join("\n")
        )
    };
    let mut error = ApiError::new(409, "Conflict", message);
    error.details.causes = causes;
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope<'a>(ty: Ty<'a>) -> Scope<'a> {
        Scope {
            ty,
            api_version: "v1",
            subresource: "",
            reset: Reset::None,
            now: "2025-01-01T00:00:00Z",
        }
    }

    #[test]
    fn two_appliers_conflict_and_force_transfers() {
        let defs = Map::new();
        let schema = json!({"type": "object", "properties": {"data": {"type": "object", "additionalProperties": {"type": "string"}}}});
        let ty = Ty::object(Some(&schema), &defs);
        let s = scope(ty);
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}});
        let first = apply(&s, &live, &config, "one", false).unwrap_or_default_value();
        assert_eq!(first["data"], json!({"x": "1", "y": "2"}));
        let fields = &first["metadata"]["managedFields"][0];
        assert_eq!(fields["manager"], "one");
        assert_eq!(fields["operation"], "Apply");
        assert_eq!(fields["fieldsV1"], json!({"f:data": {"f:x": {}, "f:y": {}}}));
        let other =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "9"}});
        match apply(&s, &first, &other, "two", false) {
            Err(ApplyError::Conflict(e)) => {
                assert_eq!(e.code, 409);
                assert_eq!(
                    e.message,
                    "Apply failed with 1 conflict: conflict with \"one\": .data.x"
                );
            }
            other => panic!("expected a conflict, got {other:?}"),
        }
        let forced = apply(&s, &first, &other, "two", true).unwrap_or_default_value();
        assert_eq!(forced["data"], json!({"x": "9", "y": "2"}));
        // "one" stops applying y: it is removed; x now belongs to "two" and stays.
        let less = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {}});
        let after = apply(&s, &forced, &less, "one", false).unwrap_or_default_value();
        assert_eq!(after["data"], json!({"x": "9"}));
    }

    trait OrDefault {
        fn unwrap_or_default_value(self) -> Value;
    }

    impl OrDefault for Result<Value, ApplyError> {
        fn unwrap_or_default_value(self) -> Value {
            match self {
                Ok(v) => v,
                Err(e) => panic!("apply failed: {e:?}"),
            }
        }
    }
}
