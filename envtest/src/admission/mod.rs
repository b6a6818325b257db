//! The admission steps of every write to a custom resource, in kube-apiserver's order.
//!
//! * [`decode`], when the request body becomes an object (create, update, patch, the
//!   `status` and `scale` subresources): unknown fields are pruned (and reported according
//!   to `fieldValidation`: `Strict` is a 400 listing every unknown path, `Warn` — the
//!   default — a `Warning` header per path, `Ignore` nothing), `null`s of non-nullable
//!   fields dropped, `default`s of the request version applied.
//! * [`admit`], under the store lock before the write, in the request version: the passes of
//!   [`crate::schema::validate`] — OpenAPI keywords (of `status` alone on a `/status` write),
//!   embedded resources, list types — then the CEL rules (skipped when the object already
//!   has type, enum, required, too-long or too-many errors, as kube-apiserver does), with the
//!   ratcheting of unchanged values on update. Errors are one 422 Invalid with a cause per
//!   field, in the order kube-apiserver lists them.
//! * [`to_storage`], after admission: the object is converted to the storage version and
//!   pruned against its schema ([`crate::resources::versions`]), as the storage codec does.
//! * [`on_read`], whenever a stored object is served (get, list, watch, responses): the
//!   defaults of the version it was stored in, then conversion to the served version and
//!   pruning against its schema.
//!
//! Schemas are compiled once per CRD version ([`crate::schema`]); built-in kinds have none
//! and pass through. `fieldValidation` and the warnings are carried by [`scoped`] around the
//! store write of a request.

pub mod decoding;
pub mod policy;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use serde_json::Value;

use crate::meta::errors::{ApiError, ApiResult};
use crate::resources::ResourceInfo;
use crate::schema::validate::{Findings, Path, Ratchet, Seg};
use crate::schema::{default, prune, validate};
use crate::storage::store::State;
use crate::{resources::versions, schema::cel};

/// The `fieldValidation` query parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Unknown fields are dropped silently.
    Ignore,
    /// Unknown fields are dropped with a `Warning` header each (the default).
    #[default]
    Warn,
    /// Unknown fields fail the request (400).
    Strict,
}

impl FieldValidation {
    /// Parses the query parameter (absent or empty: `Warn`).
    pub fn parse(value: Option<&str>) -> ApiResult<Self> {
        match value.unwrap_or_default() {
            "" | "Warn" => Ok(Self::Warn),
            "Ignore" => Ok(Self::Ignore),
            "Strict" => Ok(Self::Strict),
            other => Err(ApiError::bad_request(format!(
                "fieldValidation: Unsupported value: {:?}: supported values: \"Ignore\", \"Strict\", \"Warn\"",
                other
            ))),
        }
    }
}

struct Scope {
    mode: FieldValidation,
    warnings: Vec<String>,
    /// Keys the request body repeats, until the decode step reports them.
    duplicates: Vec<String>,
    /// The body is a whole object (create, update), not a patch: strict errors carry the
    /// decoder's `cannot be handled as` prefix.
    whole_object: bool,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
}

/// Runs `f` (a request's store write) with a `fieldValidation` mode, returning the warnings
/// the admission steps produced, for the response's `Warning` headers. Writes outside a
/// scope (objects seeded by the harness) use `Warn` and drop the warnings.
pub fn scoped<T>(mode: FieldValidation, f: impl FnOnce() -> T) -> (T, Vec<String>) {
    let previous = SCOPE.with(|s| {
        s.borrow_mut().replace(Scope {
            mode,
            warnings: Vec::new(),
            duplicates: Vec::new(),
            whole_object: false,
        })
    });
    let out = f();
    let scope = SCOPE.with(|s| std::mem::replace(&mut *s.borrow_mut(), previous));
    (out, scope.map(|s| s.warnings).unwrap_or_default())
}

/// A check of an object about to be created or updated (`state`, resource, namespace,
/// object), installed for one request by the layer that knows who asks: RBAC escalation
/// prevention needs the user, which this layer does not know.
pub type WriteCheck = Rc<dyn Fn(&State, &ResourceInfo, &str, &Value) -> ApiResult<()>>;

thread_local! {
    static WRITE_CHECK: RefCell<Option<WriteCheck>> = const { RefCell::new(None) };
}

/// Runs `f` (a request's store writes) with `check` applied to every object it creates
/// or updates.
pub fn checked<T>(check: WriteCheck, f: impl FnOnce() -> T) -> T {
    let previous = WRITE_CHECK.with(|c| c.borrow_mut().replace(check));
    let out = f();
    WRITE_CHECK.with(|c| *c.borrow_mut() = previous);
    out
}

/// Applies the request's [`WriteCheck`], if any (none outside a request: the harness
/// seeding its objects).
pub(crate) fn check_write(
    state: &State,
    info: &ResourceInfo,
    namespace: &str,
    object: &Value,
) -> ApiResult<()> {
    let check = WRITE_CHECK.with(|c| c.borrow().clone());
    check.map_or(Ok(()), |check| check(state, info, namespace, object))
}

/// The `fieldValidation` mode of the request being written (`Warn` outside a scope).
pub(crate) fn mode() -> FieldValidation {
    SCOPE.with(|s| s.borrow().as_ref().map(|s| s.mode).unwrap_or_default())
}

/// Adds `Warning` headers to the response of the request being written.
pub(crate) fn warn(messages: impl IntoIterator<Item = String>) {
    SCOPE.with(|s| {
        if let Some(scope) = s.borrow_mut().as_mut() {
            for message in messages {
                if !scope.warnings.contains(&message) {
                    scope.warnings.push(message);
                }
            }
        }
    });
}

/// Marks the request body as a whole object (create, update) and records the keys it
/// repeats (see [`decoding::duplicate_fields`]), reported with the unknown fields by
/// the decode step.
pub(crate) fn whole_object_body(duplicates: Vec<String>) {
    SCOPE.with(|s| {
        if let Some(scope) = s.borrow_mut().as_mut() {
            scope.duplicates = duplicates;
            scope.whole_object = true;
        }
    });
}

/// Reports a body's strict-decoding findings as kube-apiserver does: the repeated keys
/// (`duplicate field "x"`) then the unknown fields (`unknown field "x"`), one 400 under
/// `fieldValidation=Strict` (`strict decoding error: …`, after `<Kind> in version "<v>"
/// cannot be handled as a <Kind>: ` for a whole-object body, as the create and update
/// handlers word it; the patch handler does not), a `Warning` each under `Warn`, nothing
/// under `Ignore`. The repeated keys are reported once per request.
pub(crate) fn report_strict(info: &ResourceInfo, unknown: &[String]) -> ApiResult<()> {
    let (duplicates, whole_object) = SCOPE.with(|s| {
        s.borrow_mut()
            .as_mut()
            .map(|scope| (std::mem::take(&mut scope.duplicates), scope.whole_object))
            .unwrap_or_default()
    });
    let messages: Vec<String> = duplicates
        .iter()
        .map(|p| format!("duplicate field {p:?}"))
        .chain(unknown.iter().map(|p| format!("unknown field {p:?}")))
        .collect();
    if messages.is_empty() {
        return Ok(());
    }
    match mode() {
        FieldValidation::Strict => {
            let detail = format!("strict decoding error: {}", messages.join(", "));
            Err(if whole_object {
                decoding::cannot_handle(info, &detail)
            } else {
                ApiError::bad_request(detail)
            })
        }
        FieldValidation::Warn => {
            warn(messages);
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}

/// A `Warning` header value (`299 - "unknown field \"spec.foo\""`).
pub fn warning_header(message: &str) -> String {
    let escaped = message.replace('\\', "\\\\").replace('"', "\\\"");
    format!("299 - \"{escaped}\"")
}

/// Decodes a request body into an object of `info`'s version: prunes unknown fields
/// (`fieldValidation`), drops non-nullable nulls, applies defaults.
pub fn decode(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    let Some(root) = info.schema.as_ref().and_then(|v| v.schema.root.as_ref()) else {
        return report_strict(info, &[]);
    };
    let unknown = prune::prune(object, root);
    report_strict(info, &unknown)?;
    default::apply(object, root);
    Ok(())
}

/// Converts an admitted object of `info`'s version to the storage version, pruned against
/// the storage version's schema (see [`crate::resources::versions`]); what is stored.
pub fn to_storage(info: &ResourceInfo, object: &mut Value) {
    if let Some(version) = &info.schema {
        versions::convert(object, version, &version.storage_api_version, &version.storage);
    }
}

/// Validates an object about to be stored (`old` is `None` on create, else the stored
/// object as served in `info`'s version): a 422 Invalid with every violated field.
/// `status_write`: a write through the `/status` subresource, which validates the OpenAPI
/// keywords of `status` only (against the status schema as a root of its own, so messages
/// name `selector` for `status.selector`) and not the embedded resources, as
/// apiextensions-apiserver's status strategy.
///
/// Called under the store lock after the server has set the system metadata and before
/// the write, for create, update, patch and the `status`/`scale` subresources.
pub fn admit(
    info: &ResourceInfo,
    object: &mut Value,
    old: Option<&Value>,
    status_write: bool,
) -> ApiResult<()> {
    let Some(version) = &info.schema else {
        return Ok(());
    };
    let Some(root) = &version.schema.root else {
        return Ok(());
    };
    let mut findings = Findings::default();
    // 1. The OpenAPI keywords, each message once.
    if status_write {
        if let (Some(status), Some(schema)) = (object.get("status"), root.properties.get("status")) {
            let mut path = Path::within(vec![Seg::Prop("status".into())]);
            let old_status = old.and_then(|o| o.get("status"));
            validate::validate(schema, status, old_status, &mut path, &mut findings);
        }
    } else {
        validate::validate(root, object, old, &mut Path::default(), &mut findings);
    }
    findings.dedup_from(0);
    // 2. Embedded resources' apiVersion and kind.
    if !status_write {
        validate::embedded(root, object, &mut Path::default(), &mut findings);
    }
    // 3. List types, unless the old object broke them already.
    if root.has_list_types {
        let start = findings.issues.len();
        validate::list_types(root, object, &mut Path::default(), &mut findings);
        if findings.issues.len() > start
            && let Some(old) = old
        {
            let mut broken = Findings::default();
            validate::list_types(root, old, &mut Path::default(), &mut broken);
            if !broken.issues.is_empty() {
                findings.issues.truncate(start);
            }
        }
    }
    // 4. CEL rules, unless a blocking error keeps them from running.
    if findings.blocking() && root.has_rules {
        findings.push(
            "<nil>".into(),
            "FieldValueInvalid",
            "Invalid value: \"null\": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
            Ratchet::Never,
        );
    } else {
        cel::validate(root, object, old, true, &mut Path::default(), &mut findings);
    }
    warn(std::mem::take(&mut findings.warnings));
    if findings.issues.is_empty() {
        return Ok(());
    }
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let causes = findings.issues.into_iter().map(|i| i.cause).collect();
    Err(ApiError::invalid(&info.group, &info.kind, &name, causes))
}

/// A stored object as served through `info`'s version, when that differs from the stored
/// object (`None`: serve it as it is): the defaults of the version it was stored in, then,
/// through another version, converted to it and pruned against its schema. A copy is made
/// only when something changes.
pub fn on_read(info: &ResourceInfo, object: &Arc<Value>) -> Option<Value> {
    let version = info.schema.as_ref()?;
    let stored_in = object["apiVersion"].as_str().unwrap_or_default();
    let from = version.schema_of(stored_in);
    let needs_defaults = from
        .root
        .as_ref()
        .is_some_and(|root| default::needed(object, root));
    let converted = stored_in != version.api_version;
    if !needs_defaults && !converted {
        return None;
    }
    let mut copy = object.as_ref().clone();
    if needs_defaults && let Some(root) = &from.root {
        default::apply(&mut copy, root);
    }
    versions::convert(&mut copy, version, &version.api_version, &version.schema);
    Some(copy)
}

/// Every CEL rule of `info`'s schema that is not evaluated (see [`cel`]).
pub fn skipped_rules(info: &ResourceInfo) -> Vec<cel::SkippedRule> {
    info.schema
        .as_ref()
        .and_then(|v| v.schema.root.as_ref())
        .map(cel::skipped)
        .unwrap_or_default()
}

/// Adds a `Warning` header per warning to a response (errors are returned as they are).
pub fn with_warnings<B>(
    response: ApiResult<http::Response<B>>,
    warnings: &[String],
) -> ApiResult<http::Response<B>> {
    let mut response = response?;
    for warning in warnings {
        if let Ok(value) = http::HeaderValue::from_str(&warning_header(warning)) {
            response.headers_mut().append(http::header::WARNING, value);
        }
    }
    Ok(response)
}
