//! Server-side apply and field managers (`metadata.managedFields`), as kube-apiserver's
//! field manager on structured-merge-diff does them.
//!
//! * [`fieldpath`]: field sets and their `FieldsV1` encoding;
//! * [`typed`]: values walked under their schema (set, merge, compare, remove), with the
//!   list semantics of `x-kubernetes-list-type`/`x-kubernetes-list-map-keys` (CRDs) or
//!   the strategic-merge keys of built-ins;
//! * [`managed`]: the `Update` and `Apply` operations and conflict errors.
//!
//! The schema of a custom resource is read from its CRD's `openAPIV3Schema`; built-ins use
//! the definitions of [`crate::resources::definitions`].
//!
//! Differences from kube-apiserver: no conversion of managers' field sets between
//! versions (each entry keeps the apiVersion it was recorded in); list-map key defaults are
//! not applied (an item missing a key field is an error); the last-applied *manager*
//! (taking client-side apply fields over without conflicts when their values match) is
//! not implemented, only the last-applied *updater*; update managers are not capped at
//! ten; the `scale` subresource takes no apply patches; fields the schema later prunes
//! or defaults are owned as sent.

pub mod fieldpath;
pub mod managed;
pub mod typed;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::meta::errors::{ApiError, ApiResult, required};
use crate::objects::{self, CRD_KEY, Endpoint};
use crate::resources::ResourceInfo;
use crate::resources::definitions;
use crate::storage::store::State;
use managed::{ApplyError, Reset, Scope};
use typed::Ty;

/// The schema of one served resource version, owned so that it outlives the store lock.
#[derive(Debug, Clone)]
pub struct ObjectType {
    crd: Option<Arc<Value>>,
    version: String,
    definition: Option<&'static str>,
}

impl ObjectType {
    /// The type of `info`'s objects: its CRD version's schema, or the built-in definition.
    pub fn of(state: &State, info: &ResourceInfo) -> Self {
        let crd = info
            .custom
            .then(|| state.get(CRD_KEY, "", &info.storage_key()).cloned())
            .flatten();
        Self {
            crd,
            version: info.version.clone(),
            definition: (!info.custom)
                .then(|| definitions::builtin_definition(info))
                .flatten(),
        }
    }

    /// The walkable type.
    pub fn ty(&self) -> Ty<'_> {
        let defs = definitions::builtin_definitions();
        match (&self.crd, self.definition) {
            (Some(crd), _) => Ty::object(definitions::crd_version_schema(crd, &self.version), defs),
            (None, Some(name)) => Ty::object(defs.get(name), defs),
            (None, None) => Ty::object(None, defs),
        }
    }
}

/// The manager of a request: `fieldManager`, else the User-Agent up to its first `/`.
pub fn manager_name(params: &HashMap<String, String>, user_agent: Option<&str>) -> String {
    match params.get("fieldManager").filter(|m| !m.is_empty()) {
        Some(manager) => manager.clone(),
        None => user_agent
            .unwrap_or_default()
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string(),
    }
}

/// The object a create starts from (what kube-apiserver's empty typed object serializes to).
pub fn creation_base(info: &ResourceInfo, namespace: &str, name: &str) -> Value {
    let mut base = json!({"apiVersion": info.api_version(), "kind": info.kind, "metadata": {}});
    if !name.is_empty() {
        base["metadata"]["name"] = json!(name);
    }
    if info.namespaced && !namespace.is_empty() {
        base["metadata"]["namespace"] = json!(namespace);
    }
    if !info.custom {
        match info.kind.as_str() {
            "Lease" => base["spec"] = json!({}),
            "Namespace" | "CustomResourceDefinition" => {
                base["spec"] = json!({});
                base["status"] = json!({});
            }
            _ => {}
        }
    }
    base
}

fn subresource(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Main | Endpoint::Scale => "",
        Endpoint::Status => "status",
    }
}

fn reset(info: &ResourceInfo, endpoint: Endpoint) -> Reset {
    match endpoint {
        Endpoint::Status => Reset::AllButStatus,
        Endpoint::Main | Endpoint::Scale if info.status => Reset::Status,
        Endpoint::Main | Endpoint::Scale => Reset::None,
    }
}

/// Records `manager`'s `Update` entry on an object about to be created (`live: None`) or
/// written. Objects whose fields cannot be tracked keep their managedFields unchanged, as
/// kube-apiserver logs and goes on.
pub fn track_update(
    state: &State,
    info: &ResourceInfo,
    endpoint: Endpoint,
    live: Option<&Value>,
    new: &mut Value,
    manager: &str,
) {
    let object_type = ObjectType::of(state, info);
    let now = objects::now();
    let scope = Scope {
        ty: object_type.ty(),
        api_version: &info.api_version(),
        subresource: subresource(endpoint),
        reset: reset(info, endpoint),
        now: &now,
    };
    let base;
    let live = match live {
        Some(live) => live,
        None => {
            base = creation_base(info, "", "");
            &base
        }
    };
    if let Err(error) = managed::update(&scope, live, new, manager) {
        tracing::warn!(%error, kind = %info.kind, "envtest: managed fields not tracked");
    }
}

/// The options of an apply request.
#[derive(Debug, Clone)]
pub struct ApplyOptions<'a> {
    /// The manager (`fieldManager`, required).
    pub manager: &'a str,
    /// `force=true`.
    pub force: bool,
    /// `dryRun=All`.
    pub dry_run: bool,
}

/// Parses an apply body: YAML or JSON, one object.
pub fn parse_config(body: &[u8]) -> ApiResult<Value> {
    let text =
        std::str::from_utf8(body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let value: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    } else {
        serde_saphyr::from_str(text)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the applied configuration must be an object",
        ));
    }
    Ok(value)
}

/// `PATCH` with `application/apply-patch+yaml`: server-side apply, creating the object
/// when it does not exist. Returns the stored object and whether it was created.
pub fn server_side_apply(
    state: &mut State,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    endpoint: Endpoint,
    body: &[u8],
    options: &ApplyOptions<'_>,
) -> ApiResult<(Arc<Value>, bool)> {
    if options.manager.is_empty() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![required("fieldManager", "is required for apply patch")],
        ));
    }
    let config = parse_config(body)?;
    if config["metadata"]
        .get("managedFields")
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    let expected = info.api_version();
    let specified = config["apiVersion"].as_str().unwrap_or_default();
    if specified != expected {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {specified}, expected: {expected}"
        )));
    }
    match config["kind"].as_str() {
        Some(kind) if kind == info.kind => {}
        other => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({}) does not match the expected kind ({})",
                other.unwrap_or_default(),
                info.kind
            )));
        }
    }
    if let Some(body_name) = config["metadata"]["name"].as_str()
        && body_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let key = info.storage_key();
    let current = state.get(&key, namespace, name).cloned();
    if current.is_none() && endpoint == Endpoint::Status {
        return Err(ApiError::not_found(&info.group, &info.plural, name));
    }
    let live = match &current {
        Some(current) => objects::present(info, current).as_ref().clone(),
        None => creation_base(info, namespace, name),
    };
    let object_type = ObjectType::of(state, info);
    let now = objects::now();
    let scope = Scope {
        ty: object_type.ty(),
        api_version: &expected,
        subresource: subresource(endpoint),
        reset: reset(info, endpoint),
        now: &now,
    };
    let mut new = match managed::apply(&scope, &live, &config, options.manager, options.force) {
        Ok(new) => new,
        Err(ApplyError::Conflict(error)) => return Err(error),
        Err(ApplyError::Invalid(why)) => {
            return Err(ApiError::new(
                500,
                "InternalError",
                format!(
                    "failed to create typed patch object ({}, Kind={}): {why}",
                    expected, info.kind
                ),
            ));
        }
    };
    sync_last_applied(&live, &config, &mut new, options.manager);
    match current {
        None => {
            let stored = objects::create(state, info, namespace, new, options.dry_run)?;
            Ok((stored, true))
        }
        Some(_) => {
            let stored = objects::update(state, info, namespace, name, new, endpoint, options.dry_run)?;
            Ok((stored, false))
        }
    }
}

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// kube-apiserver's last-applied updater: a `kubectl` server-side apply keeps the
/// client-side apply annotation, when present, in step with what it applied.
fn sync_last_applied(live: &Value, config: &Value, new: &mut Value, manager: &str) {
    if manager != "kubectl" || live["metadata"]["annotations"].get(LAST_APPLIED).is_none() {
        return;
    }
    let mut applied = config.clone();
    if let Some(annotations) = applied["metadata"]
        .get_mut("annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.remove(LAST_APPLIED);
        if annotations.is_empty()
            && let Some(meta) = applied["metadata"].as_object_mut()
        {
            meta.remove("annotations");
        }
    }
    let text = serde_json::to_string(&applied).unwrap_or_default();
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        if let Some(map) = annotations.as_object_mut() {
            map.insert(LAST_APPLIED.into(), json!(text));
        }
    }
}
