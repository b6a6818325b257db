//! `meta.k8s.io` Tables (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), as
//! kube-apiserver builds them: for custom resources from the CRD version's
//! `additionalPrinterColumns` (a `Name` column first; `Age` alone when the CRD declares no
//! column), JSONPath cells converted by column type; for built-ins the columns of
//! kube-apiserver's printers for the kinds served here (`Name` and `Created At` for the
//! rest, as its default table convertor).
//!
//! Watches asking for a Table get one-row Tables, the column definitions in the first
//! event only (so `kubectl get -w` prints the real columns).
//!
//! Differences from kube-apiserver: only the built-in printers of the kinds served here
//! exist; JSONPath supports fields, quoted keys, indexes, `*`, `..` and
//! filters with one comparison (no unions, slices or ranges).

use serde_json::{Map, Value, json};

use crate::meta::errors::{ApiError, ApiResult};
use crate::objects::CRD_KEY;
use crate::resources::ResourceInfo;
use crate::resources::definitions;
use crate::storage::store::State;

/// Which object each row carries (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    /// `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
    /// `null`.
    None,
}

impl Include {
    /// Parses the `includeObject` query parameter.
    pub fn parse(value: Option<&str>) -> ApiResult<Self> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(Self::Metadata),
            "Object" => Ok(Self::Object),
            "None" => Ok(Self::None),
            other => Err(ApiError::bad_request(format!(
                "unrecognized includeObject value: {other:?}"
            ))),
        }
    }
}

/// How a cell is computed.
#[derive(Debug, Clone)]
enum Cell {
    /// `metadata.name`.
    Name,
    /// A CRD column: JSONPath evaluated and converted by the column type.
    Path(Vec<Step>),
    /// A built-in printer's cell.
    Builtin(fn(&Value) -> Value),
}

/// One column.
#[derive(Debug, Clone)]
struct Column {
    definition: Value,
    cell: Cell,
}

fn definition(name: &str, type_: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

fn meta_description(field: &str) -> String {
    definitions::builtin_definitions()
        .get("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .and_then(|m| m["properties"][field]["description"].as_str())
        .unwrap_or_default()
        .to_string()
}

fn name_column() -> Column {
    Column {
        definition: definition("Name", "string", "name", &meta_description("name"), 0),
        cell: Cell::Name,
    }
}

fn builtin_column(
    name: &str,
    type_: &str,
    description: &str,
    priority: i64,
    cell: fn(&Value) -> Value,
) -> Column {
    Column {
        definition: definition(name, type_, "", description, priority),
        cell: Cell::Builtin(cell),
    }
}

/// kube's `layoutContainerCells`: one field of every container of the pod template, joined
/// with commas.
fn template_containers(object: &Value, field: &str) -> String {
    let containers = object["spec"]["template"]["spec"]["containers"].as_array();
    let values: Vec<&str> = containers
        .into_iter()
        .flatten()
        .map(|c| c[field].as_str().unwrap_or_default())
        .collect();
    values.join(",")
}

/// `metav1.LabelSelectorAsSelector(selector).String()`: requirements sorted by key,
/// `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined with commas.
fn selector_string(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (key, value) in labels {
            requirements.push((
                key.clone(),
                format!("{key}={}", value.as_str().unwrap_or_default()),
            ));
        }
    }
    for expression in selector["matchExpressions"].as_array().into_iter().flatten() {
        let key = expression["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match expression["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<invalid>".into(),
        };
        requirements.push((key.to_string(), text));
    }
    requirements.sort();
    requirements
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

fn age(object: &Value) -> Value {
    json!(human_age(object["metadata"]["creationTimestamp"].as_str()))
}

fn created_at(object: &Value) -> Value {
    object["metadata"]["creationTimestamp"].clone()
}

fn count(value: &Value) -> usize {
    match value {
        Value::Object(m) => m.len(),
        Value::Array(a) => a.len(),
        _ => 0,
    }
}

fn subjects(object: &Value, kind: &str) -> Value {
    let names: Vec<String> = object["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|s| s["kind"] == kind)
        .map(|s| match (kind, s["namespace"].as_str()) {
            ("ServiceAccount", Some(ns)) => format!("{ns}/{}", s["name"].as_str().unwrap_or_default()),
            _ => s["name"].as_str().unwrap_or_default().to_string(),
        })
        .collect();
    json!(names.join(", "))
}

fn event_object(object: &Value) -> Value {
    let o = if object.get("regarding").is_some() {
        &object["regarding"]
    } else {
        &object["involvedObject"]
    };
    json!(format!(
        "{}/{}",
        o["kind"].as_str().unwrap_or_default().to_lowercase(),
        o["name"].as_str().unwrap_or_default()
    ))
}

fn event_last_seen(object: &Value) -> Value {
    let time = object["series"]["lastObservedTime"]
        .as_str()
        .or(object["lastTimestamp"].as_str())
        .or(object["deprecatedLastTimestamp"].as_str())
        .or(object["eventTime"].as_str())
        .or(object["metadata"]["creationTimestamp"].as_str());
    json!(human_age(time))
}

/// The columns of a built-in kind (kube-apiserver's printers for the kinds served here).
fn builtin_columns(info: &ResourceInfo) -> Vec<Column> {
    let age_column = || builtin_column("Age", "string", &meta_description("creationTimestamp"), 0, age);
    let mut columns = vec![name_column()];
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") => {
            columns.push(builtin_column(
                "Status",
                "string",
                "The status of the namespace",
                0,
                |o| o["status"]["phase"].clone(),
            ));
            columns.push(age_column());
        }
        ("", "ConfigMap") => {
            columns.push(builtin_column(
                "Data",
                "string",
                "Data contains the configuration data.",
                0,
                |o| json!(count(&o["data"]) + count(&o["binaryData"])),
            ));
            columns.push(age_column());
        }
        ("", "Secret") => {
            columns.push(builtin_column(
                "Type",
                "string",
                "Used to facilitate programmatic handling of secret data.",
                0,
                |o| o.get("type").cloned().unwrap_or(json!("Opaque")),
            ));
            columns.push(builtin_column(
                "Data",
                "string",
                "Data contains the secret data.",
                0,
                |o| json!(count(&o["data"]) + count(&o["stringData"])),
            ));
            columns.push(age_column());
        }
        ("", "ServiceAccount") => {
            columns.push(builtin_column("Secrets", "string", "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.", 0, |o| {
                json!(count(&o["secrets"]))
            }));
            columns.push(age_column());
        }
        ("apps", "Deployment") => {
            columns.push(builtin_column(
                "Ready",
                "string",
                "Number of the pod with ready state",
                0,
                |o| {
                    let ready = o["status"]["readyReplicas"].as_i64().unwrap_or(0);
                    let desired = o["spec"]["replicas"].as_i64().unwrap_or(0);
                    json!(format!("{ready}/{desired}"))
                },
            ));
            columns.push(builtin_column(
                "Up-to-date",
                "string",
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
                0,
                |o| json!(o["status"]["updatedReplicas"].as_i64().unwrap_or(0)),
            ));
            columns.push(builtin_column(
                "Available",
                "string",
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
                0,
                |o| json!(o["status"]["availableReplicas"].as_i64().unwrap_or(0)),
            ));
            columns.push(age_column());
            columns.push(builtin_column(
                "Containers",
                "string",
                "Names of each container in the template.",
                1,
                |o| json!(template_containers(o, "name")),
            ));
            columns.push(builtin_column(
                "Images",
                "string",
                "Images referenced by each container in the template.",
                1,
                |o| json!(template_containers(o, "image")),
            ));
            columns.push(builtin_column(
                "Selector",
                "string",
                "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
                1,
                |o| json!(selector_string(&o["spec"]["selector"])),
            ));
        }
        ("coordination.k8s.io", "Lease") => {
            columns.push(builtin_column(
                "Holder",
                "string",
                "HolderIdentity contains the identity of the holder of a current lease.",
                0,
                |o| json!(o["spec"]["holderIdentity"].as_str().unwrap_or_default()),
            ));
            columns.push(age_column());
        }
        ("" | "events.k8s.io", "Event") => {
            columns = vec![
                builtin_column(
                    "Last Seen",
                    "string",
                    "Time when this Event was last seen",
                    0,
                    event_last_seen,
                ),
                builtin_column(
                    "Type",
                    "string",
                    "Type of this event (Normal, Warning), new types could be added in the future.",
                    0,
                    |o| o["type"].clone(),
                ),
                builtin_column(
                    "Reason",
                    "string",
                    "This should be a short, machine understandable string that gives the reason for this event being generated.",
                    0,
                    |o| o["reason"].clone(),
                ),
                builtin_column(
                    "Object",
                    "string",
                    "The object that this event is about.",
                    0,
                    event_object,
                ),
                builtin_column(
                    "Subobject",
                    "string",
                    "The subobject this event is about.",
                    1,
                    |o| {
                        json!(
                            o["involvedObject"]["fieldPath"]
                                .as_str()
                                .or(o["regarding"]["fieldPath"].as_str())
                                .unwrap_or_default()
                        )
                    },
                ),
                builtin_column(
                    "Source",
                    "string",
                    "The component reporting this event.",
                    1,
                    |o| {
                        json!(
                            o["source"]["component"]
                                .as_str()
                                .or(o["reportingController"].as_str())
                                .unwrap_or_default()
                        )
                    },
                ),
                builtin_column(
                    "Message",
                    "string",
                    "A human-readable description of the status of this operation.",
                    0,
                    |o| json!(o["message"].as_str().or(o["note"].as_str()).unwrap_or_default()),
                ),
                builtin_column(
                    "First Seen",
                    "string",
                    "The time at which the event was first recorded.",
                    1,
                    |o| {
                        json!(human_age(
                            o["firstTimestamp"]
                                .as_str()
                                .or(o["deprecatedFirstTimestamp"].as_str())
                                .or(o["eventTime"].as_str())
                        ))
                    },
                ),
                builtin_column(
                    "Count",
                    "string",
                    "The number of times this event has occurred.",
                    1,
                    |o| json!(o["count"].as_i64().or(o["deprecatedCount"].as_i64()).unwrap_or(1)),
                ),
                builtin_column("Name", "string", &meta_description("name"), 1, |o| {
                    o["metadata"]["name"].clone()
                }),
            ];
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => {
            columns.push(builtin_column("Role", "string", "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.", 0, |o| {
                json!(format!("{}/{}", o["roleRef"]["kind"].as_str().unwrap_or_default(), o["roleRef"]["name"].as_str().unwrap_or_default()))
            }));
            columns.push(age_column());
            columns.push(builtin_column(
                "Users",
                "string",
                "Users in the roleBinding",
                1,
                |o| subjects(o, "User"),
            ));
            columns.push(builtin_column(
                "Groups",
                "string",
                "Groups in the roleBinding",
                1,
                |o| subjects(o, "Group"),
            ));
            columns.push(builtin_column(
                "ServiceAccounts",
                "string",
                "ServiceAccounts in the roleBinding",
                1,
                |o| subjects(o, "ServiceAccount"),
            ));
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            columns.push(builtin_column(
                "Validations",
                "integer",
                "Validations indicates the number of validation rules defined in this configuration",
                0,
                |o| json!(o["spec"]["validations"].as_array().map_or(0, Vec::len)),
            ));
            columns.push(builtin_column(
                "ParamKind",
                "string",
                "ParamKind specifies the kind of resources used to parameterize this policy",
                0,
                |o| json!(param_kind(&o["spec"]["paramKind"])),
            ));
            columns.push(age_column());
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            columns.push(builtin_column(
                "PolicyName",
                "string",
                "PolicyName indicates the policy definition which the policy binding binded to",
                0,
                |o| o["spec"]["policyName"].clone(),
            ));
            columns.push(builtin_column(
                "ParamRef",
                "string",
                "ParamRef indicates the param resource which sets the configration param",
                0,
                |o| json!(param_ref(&o["spec"]["paramRef"])),
            ));
            columns.push(age_column());
        }
        _ => {
            columns.push(Column {
                definition: definition(
                    "Created At",
                    "date",
                    "",
                    &meta_description("creationTimestamp"),
                    0,
                ),
                cell: Cell::Builtin(created_at),
            });
        }
    }
    columns
}

/// A policy's `ParamKind` cell: `<apiVersion>/<kind>`, or `<unset>`.
fn param_kind(kind: &Value) -> String {
    if !kind.is_object() {
        return "<unset>".into();
    }
    let text = |k: &str| kind[k].as_str().unwrap_or_default().to_string();
    format!("{}/{}", text("apiVersion"), text("kind"))
}

/// A binding's `ParamRef` cell: `<namespace>/<name>` (`*` when no namespace is given), a
/// selector as Go prints a `*LabelSelector`, or `<unset>`.
fn param_ref(reference: &Value) -> String {
    let name = reference["name"].as_str().unwrap_or_default();
    let namespace = reference["namespace"].as_str().unwrap_or_default();
    match (&reference["selector"], name) {
        (_, name) if !name.is_empty() && !namespace.is_empty() => format!("{namespace}/{name}"),
        (_, name) if !name.is_empty() => format!("*/{name}"),
        (selector, _) if selector.is_object() => go_label_selector(selector),
        _ => "<unset>".into(),
    }
}

/// `(*metav1.LabelSelector).String()`, the generated protobuf text form.
fn go_label_selector(selector: &Value) -> String {
    let mut labels: Vec<(&String, &str)> = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k, v.as_str().unwrap_or_default()))
        .collect();
    labels.sort();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let expressions: String = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                e["key"].as_str().unwrap_or_default(),
                e["operator"].as_str().unwrap_or_default(),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// The columns of a custom resource version: `Name`, then the CRD's printer columns
/// (`Age` from `metadata.creationTimestamp` when there are none).
fn custom_columns(state: &State, info: &ResourceInfo) -> ApiResult<Vec<Column>> {
    let crd = state.get(CRD_KEY, "", &info.storage_key()).cloned();
    let declared: Vec<Value> = crd
        .as_ref()
        .and_then(|c| {
            c["spec"]["versions"]
                .as_array()?
                .iter()
                .find(|v| v["name"].as_str() == Some(info.version.as_str()))
                .and_then(|v| v["additionalPrinterColumns"].as_array().cloned())
        })
        .unwrap_or_default();
    let declared = if declared.is_empty() {
        vec![json!({
            "name": "Age",
            "type": "date",
            "jsonPath": ".metadata.creationTimestamp",
            "description": meta_description("creationTimestamp"),
        })]
    } else {
        declared
    };
    let mut columns = vec![name_column()];
    for column in declared {
        let path = column["jsonPath"].as_str().unwrap_or_default();
        let steps = parse_jsonpath(path)
            .map_err(|e| ApiError::internal(format!("unrecognized column definition {:?}: {e}", path)))?;
        let description = match column["description"].as_str() {
            Some(d) if !d.is_empty() => d.to_string(),
            _ => format!("Custom resource definition column (in JSONPath format): {path}"),
        };
        columns.push(Column {
            definition: definition(
                column["name"].as_str().unwrap_or_default(),
                column["type"].as_str().unwrap_or_default(),
                column["format"].as_str().unwrap_or_default(),
                &description,
                column["priority"].as_i64().unwrap_or(0),
            ),
            cell: Cell::Path(steps),
        });
    }
    Ok(columns)
}

/// The table of objects of `info` (one object for a get, the items of a list).
#[derive(Debug)]
pub struct Table {
    columns: Vec<Column>,
}

impl Table {
    /// The columns for `info`'s objects.
    pub fn for_resource(state: &State, info: &ResourceInfo) -> ApiResult<Self> {
        let columns = if info.custom {
            custom_columns(state, info)?
        } else {
            builtin_columns(info)
        };
        Ok(Self { columns })
    }

    fn row(&self, object: &Value, include: Include, version: &str) -> Value {
        let cells: Vec<Value> = self
            .columns
            .iter()
            .map(|column| match &column.cell {
                Cell::Name => object["metadata"]["name"].clone(),
                Cell::Builtin(f) => f(object),
                Cell::Path(steps) => {
                    let type_ = column.definition["type"].as_str().unwrap_or_default();
                    match evaluate(steps, object).first() {
                        Some(value) => cell_for(type_, value),
                        None => Value::Null,
                    }
                }
            })
            .collect();
        let row_object = match include {
            Include::Object => object.clone(),
            Include::Metadata => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": format!("meta.k8s.io/{version}"),
                "metadata": object["metadata"],
            }),
            Include::None => Value::Null,
        };
        json!({"cells": cells, "object": row_object})
    }

    /// Renders a `meta.k8s.io/{version}` Table of `objects`, with the list metadata given.
    pub fn render(
        &self,
        objects: &[Value],
        metadata: Map<String, Value>,
        include: Include,
        version: &str,
    ) -> Value {
        let definitions: Vec<Value> = self.columns.iter().map(|c| c.definition.clone()).collect();
        let rows: Vec<Value> = objects.iter().map(|o| self.row(o, include, version)).collect();
        json!({
            "kind": "Table",
            "apiVersion": format!("meta.k8s.io/{version}"),
            "metadata": metadata,
            "columnDefinitions": definitions,
            "rows": rows,
        })
    }
}

/// A cell as kube-apiserver converts a JSONPath result for a column type.
fn cell_for(type_: &str, value: &Value) -> Value {
    match (type_, value) {
        (_, Value::Null) => Value::Null,
        ("string", v) => json!(print_value(v)),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(|i| json!(i))
            .unwrap_or(Value::Null),
        ("number", Value::Number(n)) => n.as_f64().map(|f| json!(f)).unwrap_or(Value::Null),
        ("boolean", Value::Bool(b)) => json!(b),
        ("date", Value::String(s)) => match s.parse::<jiff::Timestamp>() {
            Ok(_) => json!(human_age(Some(s))),
            Err(_) => json!("<invalid>"),
        },
        _ => Value::Null,
    }
}

/// Prints a value as client-go's `JSONPath.PrintResults` does: maps and lists as compact
/// JSON (`["a","b"]`), scalars as text.
fn print_value(value: &Value) -> String {
    match value {
        Value::Array(_) | Value::Object(_) => go_json(value),
        scalar => print_scalar(scalar),
    }
}

/// Go's `json.Marshal` of a decoded value: keys sorted, `<`, `>` and `&` escaped.
fn go_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&map[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(value))
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// A scalar as Go's `fmt.Fprint` prints the decoded value.
fn print_scalar(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string(),
            (None, Some(f)) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        Value::Array(_) | Value::Object(_) => go_json(value),
    }
}

/// `duration.HumanDuration` of the time since `timestamp` (`<unknown>` without one).
pub fn human_age(timestamp: Option<&str>) -> String {
    let Some(ts) = timestamp.and_then(|t| t.parse::<jiff::Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let seconds = jiff::Timestamp::now().as_second() - ts.as_second();
    human_duration(seconds)
}

/// Go's `duration.HumanDuration` for a number of seconds.
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// One JSONPath step.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// `.name` or `['name']`.
    Field(String),
    /// `[n]` (negative from the end).
    Index(i64),
    /// `[*]` or `.*`.
    Wildcard,
    /// `..name`: every descendant field.
    Recursive(String),
    /// `[?(@.path op literal)]` (`op` `==`/`!=`/`<`/`>`/`<=`/`>=`; no op: exists).
    Filter(Vec<Step>, Option<(String, Value)>),
}

/// Parses the JSONPath of a printer column (`.status.conditions[?(@.type=="Ready")].status`).
fn parse_jsonpath(path: &str) -> Result<Vec<Step>, String> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let path = path.strip_prefix('$').unwrap_or(path);
    let chars: Vec<char> = path.chars().collect();
    let mut steps = Vec::new();
    let mut i = 0;
    // client-go's `advance`: a name runs to the next unescaped terminator; its
    // backslashes are then dropped (`machine\.openshift\.io/region` is one name).
    let ident = |i: &mut usize| {
        let mut name = String::new();
        while *i < chars.len() && !matches!(chars[*i], '.' | '[' | ']') {
            if chars[*i] == '\\' && *i + 1 < chars.len() {
                *i += 1;
            }
            if chars[*i] != '\\' {
                name.push(chars[*i]);
            }
            *i += 1;
        }
        name
    };
    while i < chars.len() {
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                i += 2;
                steps.push(Step::Recursive(ident(&mut i)));
            }
            '.' => {
                i += 1;
                let name = ident(&mut i);
                if name == "*" {
                    steps.push(Step::Wildcard);
                } else if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
            }
            '[' => {
                let mut depth = 0;
                let start = i + 1;
                let mut end = None;
                let mut quote: Option<char> = None;
                for (j, c) in chars.iter().enumerate().skip(i) {
                    match (quote, c) {
                        (Some(q), c) if *c == q => quote = None,
                        (Some(_), _) => {}
                        (None, '\'' | '"') => quote = Some(*c),
                        (None, '[') => depth += 1,
                        (None, ']') => {
                            depth -= 1;
                            if depth == 0 {
                                end = Some(j);
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                let end = end.ok_or_else(|| format!("unterminated [ in {path:?}"))?;
                let inner: String = chars[start..end].iter().collect();
                match single_quoted(inner.trim()) {
                    // client-go parses `['key']` as the field path `.key`: dots in it
                    // separate fields unless escaped (`['a\.b/c']`).
                    Some(key) => steps.extend(parse_jsonpath(&format!(".{key}"))?),
                    None => steps.push(parse_bracket(inner.trim())?),
                }
                i = end + 1;
            }
            c => {
                // A path may start without a dot (`metadata.name`).
                if steps.is_empty() && i == 0 && c != ' ' {
                    steps.push(Step::Field(ident(&mut i)));
                } else {
                    return Err(format!("unexpected {c:?} in {path:?}"));
                }
            }
        }
    }
    Ok(steps)
}

/// The key of a `['key']` bracket (client-go's `^'([^']*)'$`).
fn single_quoted(s: &str) -> Option<&str> {
    s.strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .filter(|key| !key.contains('\''))
}

fn unquote(s: &str) -> Option<&str> {
    s.strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .or_else(|| s.strip_prefix('"').and_then(|r| r.strip_suffix('"')))
}

fn parse_bracket(inner: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::Wildcard);
    }
    if let Some(name) = unquote(inner) {
        return Ok(Step::Field(name.to_string()));
    }
    if let Ok(index) = inner.parse::<i64>() {
        return Ok(Step::Index(index));
    }
    if let Some(filter) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        for op in ["==", "!=", "<=", ">=", "<", ">"] {
            if let Some((left, right)) = filter.split_once(op) {
                let left = left.trim().strip_prefix('@').ok_or("filter must start with @")?;
                let right = right.trim();
                let literal = match unquote(right) {
                    Some(s) => json!(s),
                    None => serde_json::from_str(right).map_err(|e| format!("bad literal {right:?}: {e}"))?,
                };
                return Ok(Step::Filter(
                    parse_jsonpath(left)?,
                    Some((op.to_string(), literal)),
                ));
            }
        }
        let left = filter
            .trim()
            .strip_prefix('@')
            .ok_or("filter must start with @")?;
        return Ok(Step::Filter(parse_jsonpath(left)?, None));
    }
    Err(format!("unsupported JSONPath bracket [{inner}]"))
}

fn compare_literal(value: &Value, op: &str, literal: &Value) -> bool {
    let numbers = value.as_f64().zip(literal.as_f64());
    match op {
        "==" => value == literal || numbers.is_some_and(|(a, b)| a == b),
        "!=" => !(value == literal || numbers.is_some_and(|(a, b)| a == b)),
        _ => {
            let ordering = match (numbers, value.as_str().zip(literal.as_str())) {
                (Some((a, b)), _) => a.partial_cmp(&b),
                (None, Some((a, b))) => Some(a.cmp(b)),
                _ => None,
            };
            match (op, ordering) {
                ("<", Some(o)) => o.is_lt(),
                (">", Some(o)) => o.is_gt(),
                ("<=", Some(o)) => o.is_le(),
                (">=", Some(o)) => o.is_ge(),
                _ => false,
            }
        }
    }
}

fn descendants<'v>(value: &'v Value, name: &str, out: &mut Vec<&'v Value>) {
    match value {
        Value::Object(map) => {
            if let Some(v) = map.get(name) {
                out.push(v);
            }
            map.values().for_each(|v| descendants(v, name, out));
        }
        Value::Array(items) => items.iter().for_each(|v| descendants(v, name, out)),
        _ => {}
    }
}

/// Evaluates a parsed JSONPath (missing keys give no result).
fn evaluate<'v>(steps: &[Step], root: &'v Value) -> Vec<&'v Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            match step {
                Step::Field(name) => {
                    if let Some(v) = value.get(name) {
                        next.push(v);
                    }
                }
                Step::Index(i) => {
                    if let Some(items) = value.as_array() {
                        let len = items.len() as i64;
                        let at = if *i < 0 { len + i } else { *i };
                        if (0..len).contains(&at) {
                            next.push(&items[at as usize]);
                        }
                    }
                }
                Step::Wildcard => match value {
                    Value::Array(items) => next.extend(items.iter()),
                    Value::Object(map) => next.extend(map.values()),
                    _ => {}
                },
                Step::Recursive(name) => descendants(value, name, &mut next),
                Step::Filter(path, test) => {
                    for item in value.as_array().into_iter().flatten() {
                        let found = evaluate(path, item);
                        let keep = match test {
                            None => !found.is_empty(),
                            Some((op, literal)) => found.iter().any(|v| compare_literal(v, op, literal)),
                        };
                        if keep {
                            next.push(item);
                        }
                    }
                }
            }
        }
        current = next;
    }
    current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpath_subset() {
        let object = json!({
            "metadata": {"labels": {"a.b/c": "x"}},
            "spec": {"replicas": 3, "list": [1, 2, 3]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Other", "status": "False"}]},
        });
        let eval = |p: &str| -> Vec<Value> {
            parse_jsonpath(p)
                .map(|s| evaluate(&s, &object).into_iter().cloned().collect())
                .unwrap_or_default()
        };
        assert_eq!(eval(".spec.replicas"), vec![json!(3)]);
        assert_eq!(
            eval(".status.conditions[?(@.type==\"Ready\")].status"),
            vec![json!("True")]
        );
        // As client-go: dots in a bracketed key separate fields unless escaped.
        assert_eq!(eval(".metadata.labels['a\\.b/c']"), vec![json!("x")]);
        assert_eq!(eval(".metadata.labels.a\\.b/c"), vec![json!("x")]);
        assert_eq!(eval(".metadata.labels['a.b/c']"), Vec::<Value>::new());
        assert_eq!(eval(".spec.list[-1]"), vec![json!(3)]);
        assert_eq!(eval(".spec.list[*]").len(), 3);
        assert_eq!(eval(".spec.missing"), Vec::<Value>::new());
        assert_eq!(eval("..status").len(), 3);
    }

    #[test]
    fn cells_and_durations() {
        assert_eq!(cell_for("integer", &json!(3.0)), json!(3));
        assert_eq!(cell_for("integer", &json!("3")), Value::Null);
        assert_eq!(cell_for("string", &json!(3)), json!("3"));
        assert_eq!(
            cell_for("string", &json!({"b": 1, "a": "x"})),
            json!(r#"{"a":"x","b":1}"#)
        );
        assert_eq!(cell_for("string", &json!(["a", "b"])), json!(r#"["a","b"]"#));
        assert_eq!(
            cell_for("string", &json!({"z": [1, {"y": "<&>", "x": null}]})),
            json!(r#"{"z":[1,{"x":null,"y":"\u003c\u0026\u003e"}]}"#)
        );
        assert_eq!(cell_for("boolean", &json!(true)), json!(true));
        assert_eq!(cell_for("date", &json!("nope")), json!("<invalid>"));
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(3 * 86400), "3d");
    }
}
