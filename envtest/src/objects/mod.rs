//! Object semantics on top of the store: create/update/delete as kube-apiserver does them
//! (uid, timestamps, generation, finalizers, preconditions, status subresource, namespaces
//! and CRD side effects). Every function runs under the store lock. [`builtin`] decodes and
//! defaults the built-in kinds as their registry strategies do.

pub mod builtin;
pub mod deletion;
pub mod deployments;
pub mod events;
pub mod subresources;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::admission;
use crate::admission::policy;
use crate::meta::errors::{ApiError, ApiResult, forbidden_field, invalid_value, required};
use crate::meta::object_meta;
use crate::meta::validation::{NameRule, validate_name_with};
use crate::resources::{Registry, ResourceInfo};
use crate::storage::store::{EventType, State};

/// Storage key of CRDs.
pub const CRD_KEY: &str = "customresourcedefinitions.apiextensions.k8s.io";
/// Storage key of namespaces.
pub const NAMESPACE_KEY: &str = "namespaces";

/// Which endpoint an update came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// The main resource endpoint (status changes ignored when the status subresource exists).
    Main,
    /// The `/status` subresource (only status changes).
    Status,
    /// The `/scale` subresource: a main-resource write of the replicas, which admission
    /// sees as a `Scale`.
    Scale,
}

/// Options of a delete.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `dryRun: [All]`.
    pub dry_run: bool,
    /// `propagationPolicy` / `orphanDependents`: what the garbage collector does with the
    /// dependents.
    pub cascade: deletion::Cascade,
}

/// The current time as a Kubernetes timestamp.
pub fn now() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A random RFC 4122 v4 UUID.
pub fn uuid() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        b = nanos.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut b = [0u8; 5];
    let _ = getrandom::fill(&mut b);
    b.iter()
        .map(|x| ALPHABET[*x as usize % ALPHABET.len()] as char)
        .collect()
}

fn meta(object: &Value) -> &Value {
    &object["metadata"]
}

fn meta_str<'a>(object: &'a Value, field: &str) -> Option<&'a str> {
    object
        .get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn meta_mut(object: &mut Value) -> ApiResult<&mut Map<String, Value>> {
    let map = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the body of the request is not a JSON object"))?;
    let meta = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

fn finalizers(object: &Value) -> Vec<String> {
    meta(object)["finalizers"]
        .as_array()
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Checks `apiVersion`/`kind` of a body against the URL, filling them in when absent.
pub fn check_type(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    let map = object
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the body of the request must be a JSON object"))?;
    let expected = info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v != expected => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            )));
        }
        Some(_) => {}
        // The unstructured decoder of custom resources keeps the body's (empty) version,
        // which the handler then refuses; built-in kinds take it from the URL.
        None if info.custom => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data () does not match the expected API version ({expected})"
            )));
        }
        None => {
            map.insert("apiVersion".into(), json!(expected));
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        Some(k) if k != info.kind => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )));
        }
        Some(_) => {}
        None => {
            map.insert("kind".into(), json!(info.kind));
        }
    }
    Ok(())
}

fn check_namespace_field(info: &ResourceInfo, namespace: &str, object: &mut Value) -> ApiResult<()> {
    let meta = meta_mut(object)?;
    if info.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            Some(ns) if !ns.is_empty() && ns != namespace => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => {
                meta.insert("namespace".into(), json!(namespace));
            }
        }
    } else {
        meta.remove("namespace");
    }
    Ok(())
}

fn check_namespace_exists(
    state: &State,
    info: &ResourceInfo,
    namespace: &str,
    creating: bool,
) -> ApiResult<()> {
    if !info.namespaced {
        return Ok(());
    }
    match state.get(NAMESPACE_KEY, "", namespace) {
        None => Err(ApiError::not_found("", "namespaces", namespace)),
        Some(ns) if creating && meta_str(ns, "deletionTimestamp").is_some() => Err(ApiError::forbidden(
            &info.group,
            &info.plural,
            "",
            format!(
                "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                crate::meta::errors::qualified(&info.group, &info.plural),
                meta_str(ns, "name").unwrap_or_default()
            ),
        )),
        Some(_) => Ok(()),
    }
}

/// Content compared for generation: everything but metadata (and status with the subresource).
fn spec_content(info: &ResourceInfo, object: &Value) -> Value {
    let mut copy = object.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("metadata");
        if info.status {
            map.remove("status");
        }
    }
    copy
}

/// Creates an object; returns it as stored.
pub fn create(
    state: &mut State,
    info: &ResourceInfo,
    namespace: &str,
    mut object: Value,
    dry_run: bool,
) -> ApiResult<Arc<Value>> {
    check_type(info, &mut object)?;
    check_namespace_field(info, namespace, &mut object)?;
    builtin::prepare(info, &mut object)?;
    admission::decode(info, &mut object)?;
    admission::check_write(state, info, namespace, &object)?;
    if events::is_events_api(info) {
        events::to_core(&mut object);
    }
    let key = info.storage_key();
    let kind = info.kind.clone();
    let mut name = meta_str(&object, "name").map(String::from);
    if name.is_none()
        && let Some(prefix) = meta_str(&object, "generateName").map(String::from)
    {
        let mut candidate = format!("{prefix}{}", random_suffix());
        for _ in 0..8 {
            if state.get(&key, namespace, &candidate).is_none() {
                break;
            }
            candidate = format!("{prefix}{}", random_suffix());
        }
        name = Some(candidate);
    }
    let Some(name) = name else {
        return Err(ApiError::invalid(
            &info.group,
            &kind,
            "",
            vec![required("metadata.name", "name or generateName is required")],
        ));
    };
    let mut causes = validate_name_with("metadata.name", &name, NameRule::of(&info.group, &info.plural));
    causes.extend(object_meta::validate(meta(&object)));
    if !causes.is_empty() {
        return Err(ApiError::invalid(&info.group, &kind, &name, causes));
    }
    admission::warn(object_meta::warnings(meta(&object), None));
    if meta_str(&object, "resourceVersion").is_some() {
        // kube's storage refuses it with a plain error, which the server answers as 500.
        const SET: &str = "resourceVersion should not be set on objects to be created";
        let mut error = ApiError::internal(SET);
        error.details.causes.push(crate::meta::errors::Cause {
            reason: String::new(),
            message: SET.into(),
            field: String::new(),
        });
        return Err(error);
    }
    check_namespace_exists(state, info, namespace, true)?;
    if state.get(&key, namespace, &name).is_some() {
        return Err(ApiError::already_exists(&info.group, &info.plural, &name));
    }
    {
        let meta = meta_mut(&mut object)?;
        meta.insert("name".into(), json!(name));
        meta.insert("uid".into(), json!(uuid()));
        meta.insert("creationTimestamp".into(), json!(now()));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("selfLink");
        if info.generation {
            meta.insert("generation".into(), json!(1));
        } else {
            meta.remove("generation");
        }
    }
    if info.status
        && info.custom
        && let Some(map) = object.as_object_mut()
    {
        map.remove("status");
    }
    if key == NAMESPACE_KEY {
        prepare_namespace(&mut object, &name)?;
    }
    if key == CRD_KEY {
        prepare_crd(state, &mut object, &name, None)?;
    }
    admission::admit(info, &mut object, None, false)?;
    let causes = subresources::validate_scale(info, &object, Endpoint::Main);
    if !causes.is_empty() {
        return Err(ApiError::invalid(&info.group, &kind, &name, causes));
    }
    let shared = Arc::new(object);
    let attrs = policy::Attributes {
        operation: policy::Operation::Create,
        info,
        subresource: "",
        namespace,
        name: &name,
        object: Some(&shared),
        old: None,
        dry_run,
    };
    policy::check(state, &attrs)?;
    let mut object = unshare(shared);
    admission::to_storage(info, &mut object);
    if dry_run {
        return Ok(Arc::new(object));
    }
    let stored = state.put(&key, namespace, &name, object, EventType::Added);
    if key == CRD_KEY {
        rebuild_registry(state);
    }
    Ok(stored)
}

fn prepare_namespace(object: &mut Value, name: &str) -> ApiResult<()> {
    let meta = meta_mut(object)?;
    let labels = meta.entry("labels").or_insert_with(|| Value::Object(Map::new()));
    if let Some(labels) = labels.as_object_mut() {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
    if let Some(map) = object.as_object_mut() {
        map.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
        map.insert("status".into(), json!({"phase": "Active"}));
    }
    Ok(())
}

fn prepare_crd(state: &State, object: &mut Value, name: &str, old: Option<&Value>) -> ApiResult<()> {
    let spec = &object["spec"];
    let group = spec["group"].as_str().unwrap_or_default().to_string();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default().to_string();
    let kind = "CustomResourceDefinition";
    let mut causes = Vec::new();
    if group.is_empty() {
        causes.push(required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(required("spec.names.plural", ""));
    }
    if spec["names"]["kind"].as_str().unwrap_or_default().is_empty() {
        causes.push(required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(invalid_value(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    }
    let storage: Vec<&str> = versions
        .iter()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .filter_map(|v| v["name"].as_str())
        .collect();
    if !versions.is_empty() && storage.len() != 1 {
        causes.push(invalid_value(
            "spec.versions",
            "",
            "must have exactly one version marked as storage version",
        ));
    }
    // Another CRD may not claim the same kind in the same group.
    if let Some(crds) = state.collections.get(CRD_KEY) {
        let names_kind = spec["names"]["kind"].as_str().unwrap_or_default();
        for other in crds.values() {
            if meta_str(other, "name") != Some(name)
                && other["spec"]["group"].as_str() == Some(group.as_str())
                && other["spec"]["names"]["kind"].as_str() == Some(names_kind)
            {
                causes.push(invalid_value(
                    "spec.names.kind",
                    names_kind,
                    "kind is already in use",
                ));
            }
        }
    }
    causes.extend(crate::schema::definition::rule_causes(spec));
    if !causes.is_empty() {
        return Err(ApiError::invalid("apiextensions.k8s.io", kind, name, causes));
    }
    let mut stored_versions: Vec<Value> = old
        .and_then(|o| o["status"]["storedVersions"].as_array().cloned())
        .unwrap_or_default();
    if let Some(storage) = storage.first()
        && !stored_versions.iter().any(|v| v.as_str() == Some(storage))
    {
        stored_versions.push(json!(storage));
    }
    let time = now();
    let condition = |type_: &str, reason: &str, message: &str| json!({"type": type_, "status": "True", "lastTransitionTime": time, "reason": reason, "message": message});
    let status = json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": object["spec"]["names"].clone(),
        "storedVersions": stored_versions,
    });
    if let Some(map) = object.as_object_mut() {
        map.insert("status".into(), status);
    }
    Ok(())
}

/// Rebuilds the served resources from the stored CRDs (after a CRD write, or when a
/// state directory was restored).
pub fn rebuild_registry(state: &mut State) {
    let registry = match state.collections.get(CRD_KEY) {
        Some(crds) => Registry::build_reusing(
            Some(&state.registry),
            crds.values()
                .filter(|c| meta_str(c, "deletionTimestamp").is_none())
                .map(|c| c.as_ref()),
        ),
        None => Registry::build([]),
    };
    state.registry = Arc::new(registry);
}

fn parse_rv(rv: &str) -> ApiResult<u64> {
    rv.parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))
}

/// Replaces an object (PUT), through the main endpoint or `/status`.
pub fn update(
    state: &mut State,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    mut object: Value,
    endpoint: Endpoint,
    dry_run: bool,
) -> ApiResult<Arc<Value>> {
    check_type(info, &mut object)?;
    check_namespace_field(info, namespace, &mut object)?;
    builtin::prepare(info, &mut object)?;
    admission::decode(info, &mut object)?;
    admission::check_write(state, info, namespace, &object)?;
    if events::is_events_api(info) {
        events::to_core(&mut object);
    }
    let body_name = meta_str(&object, "name").unwrap_or_default().to_string();
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let key = info.storage_key();
    let kind = info.kind.clone();
    check_namespace_exists(state, info, namespace, false)?;
    let Some(old) = state.get(&key, namespace, name).cloned() else {
        return Err(ApiError::not_found(&info.group, &info.plural, name));
    };
    // The update works on the stored object as read through the request's version (its
    // defaults applied, converted and pruned), as kube-apiserver's does; `old` stays the
    // stored object, to tell a no-op write.
    let current = present(info, &old);
    let old_rv = meta_str(&old, "resourceVersion").unwrap_or_default().to_string();
    match meta_str(&object, "resourceVersion") {
        None if !info.unconditional_update => {
            return Err(ApiError::invalid(
                &info.group,
                &kind,
                name,
                vec![
                    invalid_value(
                        "metadata.resourceVersion",
                        "0x0",
                        "must be specified for an update",
                    )
                    .with_message("Invalid value: 0x0: must be specified for an update"),
                ],
            ));
        }
        None => {}
        Some(rv) => {
            parse_rv(rv)?;
            if rv != old_rv {
                return Err(ApiError::stale(&info.group, &info.plural, name));
            }
        }
    }
    let mut new = match endpoint {
        Endpoint::Main | Endpoint::Scale => {
            if info.status
                && let Some(map) = object.as_object_mut()
            {
                match current.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
            object
        }
        Endpoint::Status => {
            let mut new = current.as_ref().clone();
            if let Some(map) = new.as_object_mut() {
                match object.get("status") {
                    Some(status) => map.insert("status".into(), status.clone()),
                    None => map.remove("status"),
                };
            }
            // managedFields are kept: the field manager tracked the status write in them.
            if let Some(fields) = object["metadata"].get("managedFields")
                && let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut)
            {
                meta.insert("managedFields".into(), fields.clone());
            }
            new
        }
    };
    // System metadata cannot be changed by clients.
    {
        let old_meta = meta(&old);
        let meta = meta_mut(&mut new)?;
        for field in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ] {
            match old_meta.get(field) {
                Some(value) => meta.insert(field.into(), value.clone()),
                None => meta.remove(field),
            };
        }
        meta.insert("resourceVersion".into(), json!(old_rv));
        meta.remove("selfLink");
    }
    if key == NAMESPACE_KEY
        && let Some(map) = new.as_object_mut()
    {
        // spec.finalizers is only changed through /finalize; status through /status.
        if let Some(spec) = old.get("spec") {
            map.insert("spec".into(), spec.clone());
        }
        if endpoint != Endpoint::Status
            && let Some(status) = old.get("status")
        {
            map.insert("status".into(), status.clone());
        }
    }
    let deleting = meta_str(&old, "deletionTimestamp").is_some();
    if deleting {
        let before = finalizers(&old);
        let added: Vec<String> = finalizers(&new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
            return Err(ApiError::invalid(
                &info.group,
                &kind,
                name,
                vec![forbidden_field(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        list.join(", ")
                    ),
                )],
            ));
        }
    }
    let causes = object_meta::validate(meta(&new));
    if !causes.is_empty() {
        return Err(ApiError::invalid(&info.group, &kind, name, causes));
    }
    admission::warn(object_meta::warnings(meta(&new), Some(meta(&old))));
    if info.generation && spec_content(info, &new) != spec_content(info, &current) {
        let generation = meta(&old)["generation"].as_i64().unwrap_or(0) + 1;
        meta_mut(&mut new)?.insert("generation".into(), json!(generation));
    }
    if key == CRD_KEY && endpoint != Endpoint::Status {
        prepare_crd(state, &mut new, name, Some(&old))?;
    }
    admission::admit(
        info,
        &mut new,
        Some(current.as_ref()),
        endpoint == Endpoint::Status,
    )?;
    let causes = subresources::validate_scale(info, &new, endpoint);
    if !causes.is_empty() {
        return Err(ApiError::invalid(&info.group, &kind, name, causes));
    }
    let scale = info.scale.as_ref().filter(|_| endpoint == Endpoint::Scale);
    let scales = scale.map(|paths| {
        (
            Arc::new(subresources::scale_of(paths, &new)),
            Arc::new(subresources::scale_of(paths, &current)),
        )
    });
    let new = Arc::new(new);
    let (object, old_object) = match &scales {
        Some((object, old)) => (object, old),
        None => (&new, &current),
    };
    let attrs = policy::Attributes {
        operation: policy::Operation::Update,
        info,
        subresource: match endpoint {
            Endpoint::Main => "",
            Endpoint::Status => "status",
            Endpoint::Scale => "scale",
        },
        namespace,
        name,
        object: Some(object),
        old: Some(old_object),
        dry_run,
    };
    policy::check(state, &attrs)?;
    let mut new = unshare(new);
    admission::to_storage(info, &mut new);
    if new == *old {
        // A no-op update does not bump the resourceVersion, as in kube-apiserver.
        return Ok(old);
    }
    if dry_run {
        return Ok(Arc::new(new));
    }
    // A namespace also waits for its content (the namespace controller's `kubernetes`
    // finalizer) before it goes.
    let gone =
        deleting && finalizers(&new).is_empty() && (key != NAMESPACE_KEY || namespace_empty(state, name));
    let stored = if gone {
        let stored = state.put(&key, namespace, name, new, EventType::Deleted);
        after_removal(state, info, namespace);
        stored
    } else {
        state.put(&key, namespace, name, new, EventType::Modified)
    };
    if key == CRD_KEY {
        rebuild_registry(state);
    }
    Ok(stored)
}

/// The object the policies were shown, back as the request's own: no copy once their
/// views of it are gone.
fn unshare(object: Arc<Value>) -> Value {
    Arc::try_unwrap(object).unwrap_or_else(|shared| shared.as_ref().clone())
}

trait WithMessage {
    fn with_message(self, message: &str) -> Self;
}

impl WithMessage for crate::meta::errors::Cause {
    fn with_message(mut self, message: &str) -> Self {
        self.message = message.to_string();
        self
    }
}

/// Deletes an object. Returns the object and whether it is gone (false: finalizers pending).
pub fn delete(
    state: &mut State,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    options: &DeleteOptions,
) -> ApiResult<(Arc<Value>, bool)> {
    let key = info.storage_key();
    let Some(old) = state.get(&key, namespace, name).cloned() else {
        return Err(ApiError::not_found(&info.group, &info.plural, name));
    };
    if let Some(uid) = &options.uid {
        let actual = meta_str(&old, "uid").unwrap_or_default();
        if uid != actual {
            return Err(ApiError::conflict(
                &info.group,
                &info.plural,
                name,
                &format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"),
            ));
        }
    }
    if let Some(rv) = &options.resource_version {
        let actual = meta_str(&old, "resourceVersion").unwrap_or_default();
        if rv != actual {
            return Err(ApiError::conflict(
                &info.group,
                &info.plural,
                name,
                &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                ),
            ));
        }
    }
    let served = present(info, &old);
    let attrs = policy::Attributes {
        operation: policy::Operation::Delete,
        info,
        subresource: "",
        namespace,
        name,
        object: None,
        old: Some(&served),
        dry_run: options.dry_run,
    };
    policy::check(state, &attrs)?;
    if key == NAMESPACE_KEY {
        if options.dry_run {
            return Ok((old.clone(), finalizers(&old).is_empty()));
        }
        return delete_namespace(state, name, old);
    }
    // The collector's finalizers as the options ask (only while it runs, as kube-apiserver
    // with `EnableGarbageCollection` off), then: pending finalizers keep the object.
    let current = finalizers(&old);
    let wanted = if state.garbage_collection {
        options.cascade.finalizers(&current)
    } else {
        None
    };
    let pending = wanted.as_ref().unwrap_or(&current);
    if !pending.is_empty() {
        let mut new = old.as_ref().clone();
        let meta = meta_mut(&mut new)?;
        if let Some(wanted) = &wanted {
            meta.insert("finalizers".into(), json!(wanted));
        }
        if meta.get("deletionTimestamp").is_none_or(Value::is_null) {
            // As kube-apiserver's markAsDeleting: the first DELETE bumps the generation.
            if let Some(generation) = meta.get("generation").and_then(Value::as_i64)
                && generation > 0
            {
                meta.insert("generation".into(), json!(generation + 1));
            }
            meta.insert("deletionTimestamp".into(), json!(now()));
        }
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        if new == *old {
            return Ok((old, false));
        }
        if options.dry_run {
            return Ok((Arc::new(new), false));
        }
        let stored = state.put(&key, namespace, name, new, EventType::Modified);
        if key == CRD_KEY {
            rebuild_registry(state);
        }
        return Ok((stored, false));
    }
    if options.dry_run {
        return Ok((old, true));
    }
    let stored = state.put(&key, namespace, name, old.as_ref().clone(), EventType::Deleted);
    if key == CRD_KEY {
        remove_custom_objects(state, &old);
        rebuild_registry(state);
    }
    after_removal(state, info, namespace);
    Ok((stored, true))
}

fn remove_custom_objects(state: &mut State, crd: &Value) {
    let spec = &crd["spec"];
    let key = crate::meta::errors::qualified(
        spec["group"].as_str().unwrap_or_default(),
        spec["names"]["plural"].as_str().unwrap_or_default(),
    );
    let keys: Vec<(String, String)> = state
        .collections
        .get(&key)
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default();
    for (ns, name) in keys {
        if let Some(object) = state.get(&key, &ns, &name).cloned() {
            state.put(&key, &ns, &name, object.as_ref().clone(), EventType::Deleted);
        }
    }
    state.collections.remove(&key);
}

fn delete_namespace(state: &mut State, name: &str, old: Arc<Value>) -> ApiResult<(Arc<Value>, bool)> {
    let mut current = old.clone();
    if meta_str(&old, "deletionTimestamp").is_none() {
        let mut new = old.as_ref().clone();
        meta_mut(&mut new)?.insert("deletionTimestamp".into(), json!(now()));
        if let Some(map) = new.as_object_mut() {
            map.insert("status".into(), json!({"phase": "Terminating"}));
        }
        current = state.put(NAMESPACE_KEY, "", name, new, EventType::Modified);
    }
    // The namespace controller's work, done synchronously: delete every object inside.
    let registry = state.registry.clone();
    let mut keys: Vec<String> = state
        .collections
        .keys()
        .filter(|k| k.as_str() != NAMESPACE_KEY)
        .cloned()
        .collect();
    keys.sort();
    for key in keys {
        let names: Vec<String> = state
            .collections
            .get(&key)
            .map(|c| {
                c.keys()
                    .filter(|(ns, _)| ns == name)
                    .map(|(_, n)| n.clone())
                    .collect()
            })
            .unwrap_or_default();
        for object_name in names {
            let Some(object) = state.get(&key, name, &object_name).cloned() else {
                continue;
            };
            if finalizers(&object).is_empty() {
                state.put(
                    &key,
                    name,
                    &object_name,
                    object.as_ref().clone(),
                    EventType::Deleted,
                );
            } else if meta_str(&object, "deletionTimestamp").is_none() {
                let mut new = object.as_ref().clone();
                if let Ok(meta) = meta_mut(&mut new) {
                    meta.insert("deletionTimestamp".into(), json!(now()));
                    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
                }
                state.put(&key, name, &object_name, new, EventType::Modified);
            }
        }
    }
    drop(registry);
    if namespace_empty(state, name) {
        // Answered as kube-apiserver does: the terminating namespace, its controller's
        // work (done here at once) shows in the watch events that follow.
        let (_, gone) = finish_namespace(state, name, &current);
        return Ok((current, gone));
    }
    Ok((current, false))
}

/// An empty terminating namespace: the namespace controller's `kubernetes` finalizer is
/// done (`spec.finalizers` emptied); the namespace goes unless `metadata.finalizers` holds
/// it. Returns the namespace and whether it is gone.
fn finish_namespace(state: &mut State, name: &str, ns: &Arc<Value>) -> (Arc<Value>, bool) {
    let mut finished = ns.as_ref().clone();
    if let Some(spec) = finished.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("finalizers".into(), json!([]));
    }
    if finalizers(&finished).is_empty() {
        return (
            state.put(NAMESPACE_KEY, "", name, finished, EventType::Deleted),
            true,
        );
    }
    if finished == **ns {
        return (ns.clone(), false);
    }
    (
        state.put(NAMESPACE_KEY, "", name, finished, EventType::Modified),
        false,
    )
}

fn namespace_empty(state: &State, namespace: &str) -> bool {
    state.collections.iter().all(|(key, c)| {
        key == NAMESPACE_KEY
            || c.range((namespace.to_string(), String::new())..)
                .next()
                .is_none_or(|((ns, _), _)| ns != namespace)
    })
}

/// After an object left the store: finish a terminating namespace once it is empty.
fn after_removal(state: &mut State, info: &ResourceInfo, namespace: &str) {
    if !info.namespaced || namespace.is_empty() {
        return;
    }
    let terminating = state
        .get(NAMESPACE_KEY, "", namespace)
        .filter(|ns| meta_str(ns, "deletionTimestamp").is_some())
        .cloned();
    if let Some(ns) = terminating
        && namespace_empty(state, namespace)
    {
        finish_namespace(state, namespace, &ns);
    }
}

/// A stored object as served at `info`'s version: for a custom resource, the defaults of
/// the version it was stored in, converted and pruned to `info`'s version
/// ([`admission::on_read`]); for a built-in kind, `apiVersion` rewritten. The stored `Arc`
/// itself when nothing changes.
pub fn present(info: &ResourceInfo, object: &Arc<Value>) -> Arc<Value> {
    if let Some(shown) = admission::on_read(info, object) {
        return Arc::new(shown);
    }
    if events::is_events_api(info) {
        return Arc::new(events::from_core(object));
    }
    if info.schema.is_some() {
        return object.clone();
    }
    let expected = info.api_version();
    if object["apiVersion"].as_str() == Some(expected.as_str()) {
        return object.clone();
    }
    let mut copy = object.as_ref().clone();
    if let Some(map) = copy.as_object_mut() {
        map.insert("apiVersion".into(), json!(expected));
    }
    Arc::new(copy)
}
