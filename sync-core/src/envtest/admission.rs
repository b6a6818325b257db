//! The admission steps of every write to a custom resource, in kube-apiserver's order.
//!
//! * [`decode`], when the request body becomes an object (create, update, patch, the
//!   `status` and `scale` subresources): unknown fields are pruned (and reported according
//!   to `fieldValidation`: `Strict` is a 400 listing every unknown path, `Warn` — the
//!   default — a `Warning` header per path, `Ignore` nothing), `null`s of non-nullable
//!   fields dropped, `default`s of the request version applied, and `apiVersion` moved to
//!   the storage version ([`super::versions`]).
//! * [`admit`], under the store lock before the write: the schema's keywords, list types and
//!   then CEL rules (skipped when the object already has type, enum, required, too-long or
//!   too-many errors, as kube-apiserver does), with the ratcheting of unchanged values on
//!   update. Errors are one 422 Invalid with a cause per field.
//! * [`on_read`], whenever a stored object is served (get, list, watch, responses): the
//!   storage version's defaults (for fields whose defaults were added after the write).
//!
//! Schemas are compiled once per CRD version ([`super::schema`]); built-in kinds have none
//! and pass through. `fieldValidation` and the warnings are carried by [`scoped`] around the
//! store write of a request.

use std::cell::RefCell;
use std::sync::Arc;

use serde_json::Value;

use super::errors::{ApiError, ApiResult};
use super::resources::ResourceInfo;
use super::schema::validate::{Findings, Path, Ratchet};
use super::schema::{default, prune, validate};
use super::{cel, versions};

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
        })
    });
    let out = f();
    let scope = SCOPE.with(|s| std::mem::replace(&mut *s.borrow_mut(), previous));
    (out, scope.map(|s| s.warnings).unwrap_or_default())
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

/// A `Warning` header value (`299 - "unknown field \"spec.foo\""`).
pub fn warning_header(message: &str) -> String {
    let escaped = message.replace('\\', "\\\\").replace('"', "\\\"");
    format!("299 - \"{escaped}\"")
}

/// Decodes a request body into an object of `info`'s version: prunes unknown fields
/// (`fieldValidation`), drops non-nullable nulls, applies defaults, moves `apiVersion` to
/// the storage version.
pub fn decode(info: &ResourceInfo, object: &mut Value) -> ApiResult<()> {
    let Some(version) = &info.schema else {
        return Ok(());
    };
    if let Some(root) = &version.schema.root {
        let unknown = prune::prune(object, root);
        if !unknown.is_empty() {
            let messages: Vec<String> = unknown.iter().map(|p| format!("unknown field {p:?}")).collect();
            match mode() {
                FieldValidation::Strict => {
                    return Err(ApiError::bad_request(format!(
                        "strict decoding error: {}",
                        messages.join(", ")
                    )));
                }
                FieldValidation::Warn => warn(messages),
                FieldValidation::Ignore => {}
            }
        }
        default::apply(object, root);
    }
    versions::to_storage(object, version);
    Ok(())
}

/// Validates an object about to be stored (`old` is `None` on create): schema keywords,
/// list types, CEL rules; a 422 Invalid with every violated field.
///
/// Called under the store lock after the server has set the system metadata and before
/// the write, for create, update, patch and the `status`/`scale` subresources.
pub fn admit(info: &ResourceInfo, object: &mut Value, old: Option<&Value>) -> ApiResult<()> {
    let Some(version) = &info.schema else {
        return Ok(());
    };
    let Some(root) = &version.schema.root else {
        return Ok(());
    };
    let mut findings = Findings::default();
    let mut path = Path::default();
    validate::validate(root, object, old, &mut path, &mut findings);
    if findings.blocking() && root.has_rules {
        findings.push(
            "<nil>".into(),
            "FieldValueInvalid",
            "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation".into(),
            Ratchet::Never,
        );
    } else {
        cel::validate(root, object, old, true, &mut path, &mut findings);
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

/// A stored object as served: the storage version's defaults applied (a copy only when a
/// default is missing).
pub fn on_read(info: &ResourceInfo, object: &Arc<Value>) -> Option<Value> {
    let root = info.schema.as_ref()?.storage.root.as_ref()?;
    if !default::needed(object, root) {
        return None;
    }
    let mut copy = object.as_ref().clone();
    default::apply(&mut copy, root);
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
