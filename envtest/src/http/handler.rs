//! The request path: authenticate, route, find the resource, authorize, dispatch the verb.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body_util::{BodyExt, Limited};
use serde_json::{Value, json};

use crate::admission::decoding;
use crate::api::response::{Body, error_response, full, json_response, serialized};
use crate::api::shared::Shared;
use crate::api::table;
use crate::api::view::View;
use crate::api::watch;
use crate::auth::{Attributes, Authenticator, User, authorize, impersonation, reviews};
use crate::http::request::{ResourcePath, Route, query};
use crate::meta::errors::{ApiError, ApiResult};
use crate::meta::selectors::{FieldSelector, LabelSelector};
use crate::objects::{self, DeleteOptions, Endpoint};
use crate::patch;
use crate::patch::apply;
use crate::resources::ResourceInfo;
use crate::storage::encode;
use crate::storage::snapshot;

/// Request bodies over this size get 413 (kube-apiserver's 3 MiB limit).
pub const MAX_BODY: usize = 3 * 1024 * 1024;

/// Handles one request; never panics, every failure is a Status response.
pub async fn handle<B>(shared: Arc<Shared>, request: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    match serve(shared, request).await {
        Ok(response) => response,
        Err(error) => error_response(&error),
    }
}

async fn read_body<B>(body: B) -> ApiResult<Bytes>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    match Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(error) => {
            if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Err(ApiError::too_large(MAX_BODY))
            } else {
                Err(ApiError::bad_request(format!(
                    "error reading the request body: {error}"
                )))
            }
        }
    }
}

fn user_of<'a, B>(auth: &'a Authenticator, request: &Request<B>) -> Option<&'a User> {
    let header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok());
    auth.authenticate(header)
}

async fn serve<B>(shared: Arc<Shared>, request: Request<B>) -> ApiResult<Response<Body>>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let route = crate::http::request::route(request.uri().path());
    let user = user_of(&shared.auth, &request).cloned();
    let public = matches!(route, Route::Version | Route::Health);
    let Some(user) = user else {
        if public {
            return discovery(&shared, &route, request.method());
        }
        return Err(ApiError::unauthorized());
    };
    let user = impersonation::effective_user(&shared.store.read(), user.clone(), request.headers())
        .inspect_err(|error| shared.denials.record(&user, error))?;
    if let Route::OpenApi(path) = &route {
        if request.method() != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        let accept = request
            .headers()
            .get(header::ACCEPT)
            .and_then(|h| h.to_str().ok());
        return crate::api::openapi::serve(&shared.store, path, &query(request.uri().query()), accept);
    }
    let Route::Resource(path) = route else {
        let verb = request.method().as_str().to_ascii_lowercase();
        crate::auth::rbac::authorize_path(&shared.store.read(), &user, &verb, request.uri().path())
            .inspect_err(|error| shared.denials.record(&user, error))?;
        return discovery(&shared, &route, request.method());
    };
    let params = query(request.uri().query());
    let method = request.method().clone();
    let user_agent = request
        .headers()
        .get(header::USER_AGENT)
        .and_then(|h| h.to_str().ok())
        .map(String::from);
    let content_type = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|h| h.to_str().ok())
        .map(String::from);
    let view = View::negotiate(
        request
            .headers()
            .get(header::ACCEPT)
            .and_then(|h| h.to_str().ok()),
    )?;
    let registry = shared.store.read().registry.clone();
    let Some(info) = registry.get(&path.group, &path.version, &path.resource) else {
        // kube-apiserver authorizes before it routes: a resource that is not served is
        // Forbidden to a user without the right, NotFound only to one with it.
        let verb = verb_of(&method, &path, &params)?;
        authorize(
            &shared.store.read(),
            &Attributes {
                user: &user,
                verb,
                group: &path.group,
                resource: &path.resource,
                subresource: path.subresource.as_deref().unwrap_or_default(),
                namespace: path.namespace.as_deref().unwrap_or_default(),
                name: path.name.as_deref().unwrap_or_default(),
            },
        )
        .inspect_err(|error| shared.denials.record(&user, error))?;
        return Err(ApiError::no_resource());
    };
    if info.namespaced != path.namespace.is_some() && !(info.namespaced && path.name.is_none()) {
        return Err(ApiError::no_resource());
    }
    let verb = verb_of(&method, &path, &params)?;
    if let Some(error) = shared.faults.check(verb, &info.plural) {
        return Err(error);
    }
    authorize(
        &shared.store.read(),
        &Attributes {
            user: &user,
            verb,
            group: &info.group,
            resource: &info.plural,
            subresource: path.subresource.as_deref().unwrap_or_default(),
            namespace: path.namespace.as_deref().unwrap_or_default(),
            name: authorized_name(&path, verb, &params),
        },
    )
    .inspect_err(|error| shared.denials.record(&user, error))?;
    // A server-side apply that would create the object needs `create` too, as in
    // kube-apiserver's patch handler.
    let apply = content_type
        .as_deref()
        .is_some_and(|c| c.starts_with("application/apply-patch"));
    if verb == "patch" && apply && path.subresource.is_none() {
        let name = path.name.as_deref().unwrap_or_default();
        let namespace = path.namespace.as_deref().unwrap_or_default();
        let exists = shared
            .store
            .read()
            .get(&info.storage_key(), namespace, name)
            .is_some();
        if !exists {
            authorize(
                &shared.store.read(),
                &Attributes {
                    user: &user,
                    verb: "create",
                    group: &info.group,
                    resource: &info.plural,
                    subresource: "",
                    namespace,
                    name,
                },
            )
            .inspect_err(|error| shared.denials.record(&user, error))?;
        }
    }
    crate::objects::subresources::check_served(
        &info,
        path.subresource.as_deref(),
        path.name.as_deref().unwrap_or_default(),
    )?;
    let body = read_body(request.into_body()).await?;
    // YAML is converted off the async workers; everything below sees JSON.
    let (body, content_type) = super::yaml::to_json(content_type.as_deref(), body).await?;
    if reviews::is_review(&info) {
        if verb != "create" {
            return Err(ApiError::method_not_allowed());
        }
        let body = crate::resources::protobuf::json_body(&info, verb, None, content_type.as_deref(), body)?;
        let object = parse_json(&body)?;
        let namespace = path.namespace.as_deref().unwrap_or_default();
        let review = reviews::create(&shared.store.read(), &info, &user, namespace, &object)?;
        return Ok(json_response(201, &review));
    }
    let dry_run = match params.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Invalid dryRun value: {other}; supported values: [All]"
            )));
        }
    };
    if let Some(manager) = params.get("fieldManager")
        && manager.len() > 128
    {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            vec![crate::meta::errors::invalid_value(
                "fieldManager",
                manager,
                "must be no more than 128 characters",
            )],
        ));
    }
    // Object bodies may be JSON, YAML or (built-in kinds) protobuf; handlers see JSON.
    let body = if matches!(verb, "create" | "update" | "delete" | "deletecollection") {
        crate::resources::protobuf::json_body(
            &info,
            verb,
            path.subresource.as_deref(),
            content_type.as_deref(),
            body,
        )?
    } else {
        body
    };
    let ctx = Ctx {
        user_agent,
        shared: &shared,
        info: &info,
        namespace: path.namespace.clone().unwrap_or_default(),
        name: path.name.clone().unwrap_or_default(),
        params: &params,
        dry_run,
        view,
    };
    if verb == "list" {
        return crate::admission::with_warnings(ctx.list().await, info.deprecation.as_slice());
    }
    if verb == "get" {
        ctx.wait_for_get().await?;
    }
    let field_validation =
        crate::admission::FieldValidation::parse(params.get("fieldValidation").map(String::as_str))?;
    // RBAC objects are checked against the writer's own permissions (escalation).
    let writer = user.clone();
    let escalation: crate::admission::WriteCheck = std::rc::Rc::new(move |state, info, namespace, object| {
        crate::auth::escalation::check(state, &writer, info, namespace, object)
    });
    let (response, warnings) = crate::admission::checked(escalation, || {
        let requester = policy_user(&user);
        crate::admission::scoped(field_validation, || {
            crate::admission::policy::as_user(requester, || match (verb, path.subresource.as_deref()) {
                ("watch", _) => ctx.watch(),
                ("create", _) => ctx.create(&body),
                ("deletecollection", _) => ctx.delete_collection(&body),
                ("get", None | Some("status")) => ctx.get(),
                ("update", None) => ctx.update(&body, Endpoint::Main),
                ("update", Some("status")) => ctx.update(&body, Endpoint::Status),
                ("patch", None) => ctx.patch(&body, content_type.as_deref(), Endpoint::Main),
                ("patch", Some("status")) => ctx.patch(&body, content_type.as_deref(), Endpoint::Status),
                ("delete", None) => ctx.delete(&body),
                (_, Some("scale")) => ctx.scale(verb, &body, content_type.as_deref()),
                _ => Err(ApiError::method_not_allowed()),
            })
        })
    });
    let warnings: Vec<String> = info.deprecation.iter().cloned().chain(warnings).collect();
    crate::admission::with_warnings(response, &warnings)
}

/// The request's user as admission policies see it (`request.userInfo`): every
/// authenticated user is in `system:authenticated`.
fn policy_user(user: &crate::auth::User) -> crate::admission::policy::UserInfo {
    let mut groups = user.groups.clone();
    if !groups.iter().any(|g| g == "system:authenticated") {
        groups.push("system:authenticated".into());
    }
    crate::admission::policy::UserInfo {
        username: user.name.clone(),
        uid: String::new(),
        groups,
    }
}

/// The name a request is authorized for: its path's, or for a list or watch the name a
/// `metadata.name` field selector requires (as kube-apiserver's request-info resolver does,
/// so that `resourceNames` can grant watching one object).
fn authorized_name<'a>(path: &'a ResourcePath, verb: &str, params: &'a HashMap<String, String>) -> &'a str {
    if let Some(name) = &path.name {
        return name;
    }
    if !matches!(verb, "list" | "watch") {
        return "";
    }
    let selector = params
        .get("fieldSelector")
        .map(String::as_str)
        .unwrap_or_default();
    selector
        .split(',')
        .find_map(|term| {
            let value = term.trim().strip_prefix("metadata.name")?;
            value.strip_prefix("==").or_else(|| value.strip_prefix('='))
        })
        .filter(|name| !name.is_empty() && !name.contains('/'))
        .unwrap_or_default()
}

fn verb_of(
    method: &Method,
    path: &ResourcePath,
    params: &HashMap<String, String>,
) -> ApiResult<&'static str> {
    let collection = path.name.is_none();
    if let Some(sub) = &path.subresource {
        let known = matches!(sub.as_str(), "status" | "scale");
        if !known {
            return Err(ApiError::no_resource());
        }
    }
    let watch = params.get("watch").is_some_and(|w| w == "true" || w == "1");
    Ok(match (method.as_str(), collection) {
        ("GET", true) if watch => "watch",
        ("GET", true) => "list",
        ("POST", true) => "create",
        ("DELETE", true) => "deletecollection",
        ("GET", false) => "get",
        ("PUT", false) => "update",
        ("PATCH", false) => "patch",
        ("DELETE", false) => "delete",
        _ => return Err(ApiError::method_not_allowed()),
    })
}

fn discovery(shared: &Shared, route: &Route, method: &Method) -> ApiResult<Response<Body>> {
    if method != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    let registry = shared.store.read().registry.clone();
    let value = match route {
        Route::Health => {
            let mut response = Response::new(full("ok"));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/plain"),
            );
            return Ok(response);
        }
        Route::Version => json!({
            "major": "1",
            "minor": "35",
            "gitVersion": "v1.35.0-envtest",
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z",
            "goVersion": "go1.24.0",
            "compiler": "gc",
            "platform": "linux/amd64",
        }),
        Route::CoreVersions => json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.address}],
        }),
        Route::Groups => registry.group_list(),
        Route::Group(group) => registry.group(group).ok_or_else(ApiError::no_resource)?,
        Route::Resources(group, version) => registry
            .resource_list(group, version)
            .ok_or_else(ApiError::no_resource)?,
        Route::Resource(_) | Route::OpenApi(_) | Route::Unknown => {
            return Err(ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            ));
        }
    };
    Ok(json_response(200, &value))
}

fn parse_json(body: &[u8]) -> ApiResult<Value> {
    if body.is_empty() {
        return Err(ApiError::bad_request("the body of the request was empty"));
    }
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "couldn't get version/kind; json parse error: the body must be a JSON object",
        ));
    }
    Ok(value)
}

struct Ctx<'a> {
    user_agent: Option<String>,
    shared: &'a Arc<Shared>,
    info: &'a Arc<ResourceInfo>,
    namespace: String,
    name: String,
    params: &'a HashMap<String, String>,
    dry_run: bool,
    view: View,
}

/// The continue token of a paginated list.
#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: u64,
    start: (String, String),
}

impl Ctx<'_> {
    fn key(&self) -> String {
        self.info.storage_key()
    }

    fn object(&self, value: &Arc<Value>) -> Value {
        self.view
            .object(objects::present(self.info, value).as_ref().clone())
    }

    /// One object of a list: its cached JSON when shown as stored.
    fn item(&self, value: &Arc<Value>) -> encode::Item {
        let presented = objects::present(self.info, value);
        if self.view == View::Object && Arc::ptr_eq(&presented, value) {
            return encode::Item::Json(self.shared.store.json().get(value));
        }
        encode::Item::Value(self.view.object(presented.as_ref().clone()))
    }

    fn respond(&self, code: u16, value: &Arc<Value>) -> ApiResult<Response<Body>> {
        Ok(json_response(code, &self.object(value)))
    }

    fn get(&self) -> ApiResult<Response<Body>> {
        let state = self.shared.store.read();
        let object = state
            .get(&self.key(), &self.namespace, &self.name)
            .cloned()
            .ok_or_else(|| ApiError::not_found(&self.info.group, &self.info.plural, &self.name))?;
        drop(state);
        if let View::Table(version) = self.view {
            let metadata = json!({"resourceVersion": object["metadata"]["resourceVersion"]});
            return self.table(std::slice::from_ref(&object), metadata, version);
        }
        self.respond(200, &object)
    }

    /// A `meta.k8s.io` Table of `objects` (see [`crate::api::table`]).
    fn table(&self, objects: &[Arc<Value>], metadata: Value, version: &str) -> ApiResult<Response<Body>> {
        let include = table::Include::parse(self.params.get("includeObject").map(String::as_str))?;
        let table = table::Table::for_resource(&self.shared.store.read(), self.info)?;
        let objects: Vec<Value> = objects
            .iter()
            .map(|o| objects::present(self.info, o).as_ref().clone())
            .collect();
        let metadata = metadata.as_object().cloned().unwrap_or_default();
        Ok(json_response(
            200,
            &table.render(&objects, metadata, include, version),
        ))
    }

    fn selectors(&self) -> ApiResult<(LabelSelector, FieldSelector)> {
        let labels = LabelSelector::parse(
            self.params
                .get("labelSelector")
                .map(String::as_str)
                .unwrap_or_default(),
        )?;
        let fields = FieldSelector::parse(
            self.params
                .get("fieldSelector")
                .map(String::as_str)
                .unwrap_or_default(),
            &self.info.field_selectors,
        )?;
        // Selectors match stored objects: `events.k8s.io` names become the core ones.
        let fields = if objects::events::is_events_api(self.info) {
            FieldSelector(
                fields
                    .0
                    .into_iter()
                    .map(|mut term| {
                        term.field = objects::events::stored_field(&term.field);
                        term
                    })
                    .collect(),
            )
        } else {
            fields
        };
        Ok((labels, fields))
    }

    async fn list(&self) -> ApiResult<Response<Body>> {
        let (labels, fields) = self.selectors()?;
        let limit: usize = match self.params.get("limit").map(String::as_str) {
            None | Some("") => 0,
            Some(l) => l
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit: {l}")))?
                .max(0) as usize,
        };
        let rv_param = self.params.get("resourceVersion").cloned().unwrap_or_default();
        let rv_match = self
            .params
            .get("resourceVersionMatch")
            .cloned()
            .unwrap_or_default();
        if !rv_match.is_empty() && rv_param.is_empty() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![crate::meta::errors::forbidden_field(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )],
            ));
        }
        if !matches!(rv_match.as_str(), "" | "NotOlderThan" | "Exact") {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                vec![crate::meta::errors::Cause {
                    reason: "FieldValueNotSupported".into(),
                    message: format!(
                        "Unsupported value: \"{rv_match}\": supported values: \"Exact\", \"NotOlderThan\""
                    ),
                    field: "resourceVersionMatch".into(),
                }],
            ));
        }
        let token = match self.params.get("continue").map(String::as_str) {
            None | Some("") => None,
            Some(raw) => Some(decode_continue(raw)?),
        };
        if token.is_some() && !matches!(rv_param.as_str(), "" | "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        // The resourceVersion read exactly: a continued list's, or `Exact` (also implied by
        // a resourceVersion with a limit and no match, kube-apiserver's legacy rule).
        let mut exact = token.as_ref().map(|t| t.rv).filter(|rv| *rv > 0);
        if !rv_param.is_empty() && rv_param != "0" {
            let wanted: u64 = rv_param
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv_param}")))?;
            let current = self.shared.store.read().rv;
            if wanted > current {
                self.wait_for(wanted).await?;
            }
            if rv_match == "Exact" || (rv_match.is_empty() && limit > 0) {
                exact = Some(wanted);
            }
        }
        let state = self.shared.store.read();
        let list_rv = exact.unwrap_or(state.rv);
        let namespace = (!self.namespace.is_empty())
            .then_some(self.namespace.as_str())
            .or_else(|| fields.equals("metadata.namespace"));
        let start = match (&token, namespace) {
            (Some(t), _) => t.start.clone(),
            (None, Some(ns)) => (ns.to_string(), String::new()),
            (None, None) => (String::new(), String::new()),
        };
        let filtered = labels.is_empty() && fields.is_empty();
        let mut items: Vec<Arc<Value>> = Vec::new();
        let mut next = None;
        let span = snapshot::Span {
            start: &start,
            namespace,
        };
        let entries = match snapshot::entries(&state, &self.key(), exact, &span) {
            Ok(entries) => entries,
            Err(_) if token.is_some() => {
                // As kube-apiserver after compaction: 410, with a token to go on from the
                // latest state (resourceVersion 0 in the token).
                let token = ContinueToken {
                    v: "meta.k8s.io/v1".into(),
                    rv: 0,
                    start,
                };
                let mut error = ApiError::expired(INCONSISTENT_CONTINUE);
                error.details.list_continue = Some(encode_continue(&token));
                return Err(error);
            }
            Err(_) => {
                return Err(ApiError::expired(
                    "The resourceVersion for the provided list is too old.",
                ));
            }
        };
        for (entry_key, object) in entries {
            let (ns, name) = entry_key.as_ref();
            if !(filtered || labels.matches(object) && fields.matches(object)) {
                continue;
            }
            if limit > 0 && items.len() == limit {
                next = Some((ns.clone(), name.clone()));
                break;
            }
            items.push(object.clone());
        }
        let remaining = next.as_ref().filter(|_| filtered).map(|next| {
            let rest = snapshot::Span {
                start: next,
                namespace,
            };
            snapshot::count(&state, &self.key(), exact, &rest)
        });
        drop(state);
        let mut metadata = json!({"resourceVersion": list_rv.to_string()});
        if let Some(start) = next {
            let token = ContinueToken {
                v: "meta.k8s.io/v1".into(),
                rv: list_rv,
                start,
            };
            metadata["continue"] = json!(encode_continue(&token));
            if let Some(remaining) = remaining {
                metadata["remainingItemCount"] = json!(remaining);
            }
        }
        if let View::Table(version) = self.view {
            return self.table(&items, metadata, version);
        }
        // Objects shown as stored are concatenated from their cached JSON.
        let items: Vec<encode::Item> = items.iter().map(|o| self.item(o)).collect();
        let (kind, api_version) = self.view.list_type(&self.info.list_kind, self.info.api_version());
        Ok(serialized(
            200,
            encode::list(&kind, &api_version, &metadata, &items),
        ))
    }

    /// A GET at a resourceVersion the store has not reached waits for it, as kube's watch
    /// cache does (then 504 "Too large resource version").
    async fn wait_for_get(&self) -> ApiResult<()> {
        let wanted = match self.params.get("resourceVersion").map(String::as_str) {
            None | Some("" | "0") => return Ok(()),
            Some(rv) => rv
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
        };
        if wanted > self.shared.store.read().rv {
            self.wait_for(wanted).await?;
        }
        Ok(())
    }

    async fn wait_for(&self, wanted: u64) -> ApiResult<()> {
        let mut rx = self.shared.store.subscribe();
        let wait = rx.wait_for(|rv| *rv >= wanted);
        match tokio::time::timeout(Duration::from_secs(3), wait).await {
            Ok(Ok(_)) => Ok(()),
            _ => {
                let mut error = ApiError::timeout(format!(
                    "Too large resource version: {wanted}, current: {}",
                    self.shared.store.read().rv
                ));
                error.details.causes.push(crate::meta::errors::Cause {
                    reason: "ResourceVersionTooLarge".into(),
                    message: "Too large resource version".into(),
                    field: String::new(),
                });
                error.details.retry_after = Some(1);
                Err(error)
            }
        }
    }

    fn watch(&self) -> ApiResult<Response<Body>> {
        let (labels, fields) = self.selectors()?;
        watch::start(watch::WatchRequest {
            shared: self.shared.clone(),
            info: self.info.clone(),
            namespace: (!self.namespace.is_empty()).then(|| self.namespace.clone()),
            labels,
            fields,
            params: self.params,
            view: self.view,
        })
    }

    fn manager(&self) -> String {
        apply::manager_name(self.params, self.user_agent.as_deref())
    }

    fn create(&self, body: &[u8]) -> ApiResult<Response<Body>> {
        let mut object = self.decode_body(body)?;
        let manager = self.manager();
        let stored = self.shared.store.write(|state| {
            apply::track_update(state, self.info, Endpoint::Main, None, &mut object, &manager);
            objects::create(state, self.info, &self.namespace, object, self.dry_run)
        })?;
        self.respond(201, &stored)
    }

    /// A create or update body as kube-apiserver's decoder takes it (see [`decoding`]).
    fn decode_body(&self, body: &[u8]) -> ApiResult<Value> {
        let object = parse_json(body)?;
        decoding::require_kind(self.info, body, &object)?;
        crate::admission::whole_object_body(decoding::duplicate_fields(body));
        Ok(object)
    }

    fn update(&self, body: &[u8], endpoint: Endpoint) -> ApiResult<Response<Body>> {
        let mut object = self.decode_body(body)?;
        let manager = self.manager();
        let key = self.key();
        let stored = self.shared.store.write(|state| {
            if let Some(live) = state.get(&key, &self.namespace, &self.name).cloned() {
                // A uid in the body is a precondition (kube's defaultUpdatedObjectInfo).
                let actual = live["metadata"]["uid"].as_str().unwrap_or_default();
                if let Some(uid) = object["metadata"]["uid"].as_str().filter(|u| !u.is_empty())
                    && uid != actual
                {
                    return Err(ApiError::conflict(
                        &self.info.group,
                        &self.info.plural,
                        &self.name,
                        &format!(
                            "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                        ),
                    ));
                }
                let live = objects::present(self.info, &live);
                apply::track_update(state, self.info, endpoint, Some(&live), &mut object, &manager);
            }
            objects::update(
                state,
                self.info,
                &self.namespace,
                &self.name,
                object,
                endpoint,
                self.dry_run,
            )
        })?;
        self.respond(200, &stored)
    }

    fn patch(
        &self,
        body: &[u8],
        content_type: Option<&str>,
        endpoint: Endpoint,
    ) -> ApiResult<Response<Body>> {
        let kind = patch::patch_type(self.info, content_type)?;
        let force = self.params.get("force").map(String::as_str);
        if kind == patch::PatchType::Apply {
            let options = apply::ApplyOptions {
                manager: self
                    .params
                    .get("fieldManager")
                    .map(String::as_str)
                    .unwrap_or_default(),
                force: force == Some("true"),
                dry_run: self.dry_run,
            };
            let (stored, created) = self.shared.store.write(|state| {
                apply::server_side_apply(
                    state,
                    self.info,
                    &self.namespace,
                    &self.name,
                    endpoint,
                    body,
                    &options,
                )
            })?;
            return self.respond(if created { 201 } else { 200 }, &stored);
        }
        if force.is_some() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![crate::meta::errors::forbidden_field(
                    "force",
                    "may not be specified for non-apply patch",
                )],
            ));
        }
        let manager = self.manager();
        let key = self.key();
        let stored = self.shared.store.write(|state| {
            let current = state
                .get(&key, &self.namespace, &self.name)
                .cloned()
                .ok_or_else(|| ApiError::not_found(&self.info.group, &self.info.plural, &self.name))?;
            let current = objects::present(self.info, &current);
            let mut patched = patch::apply(kind, &current, body)?;
            apply::track_update(state, self.info, endpoint, Some(&current), &mut patched, &manager);
            objects::update(
                state,
                self.info,
                &self.namespace,
                &self.name,
                patched,
                endpoint,
                self.dry_run,
            )
        })?;
        self.respond(200, &stored)
    }

    fn delete_options(&self, body: &[u8]) -> ApiResult<DeleteOptions> {
        let mut options = DeleteOptions {
            dry_run: self.dry_run,
            ..DeleteOptions::default()
        };
        let mut decoded = None;
        if !body.is_empty() {
            let value: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?;
            let pre = &value["preconditions"];
            options.uid = pre["uid"].as_str().map(String::from);
            options.resource_version = pre["resourceVersion"].as_str().map(String::from);
            if let Some(dry) = value["dryRun"].as_array() {
                options.dry_run |= dry.iter().any(|d| d == "All");
            }
            decoded = Some(value);
        }
        options.cascade = crate::objects::deletion::Cascade::parse(decoded.as_ref(), self.params)?;
        Ok(options)
    }

    fn delete(&self, body: &[u8]) -> ApiResult<Response<Body>> {
        let options = self.delete_options(body)?;
        let (object, gone) = self
            .shared
            .store
            .write(|state| objects::delete(state, self.info, &self.namespace, &self.name, &options))?;
        if !gone {
            // kube-apiserver answers 202 only when orphanDependents=false was asked for.
            let accepted = options.cascade.orphan_dependents == Some(false);
            return self.respond(if accepted { 202 } else { 200 }, &object);
        }
        // Custom resources answer the deleted object, namespaces their last state.
        if self.info.custom || self.key() == objects::NAMESPACE_KEY {
            return self.respond(200, &object);
        }
        let mut details = json!({
            "name": self.name,
            "kind": self.info.plural,
            "uid": object["metadata"]["uid"],
        });
        if !self.info.group.is_empty() {
            details["group"] = json!(self.info.group);
        }
        Ok(json_response(
            200,
            &json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Success",
                "details": details,
            }),
        ))
    }

    fn delete_collection(&self, body: &[u8]) -> ApiResult<Response<Body>> {
        let (labels, fields) = self.selectors()?;
        let options = self.delete_options(body)?;
        let key = self.key();
        let (deleted, rv) = self.shared.store.write(|state| {
            let names: Vec<(String, String)> = state
                .collections
                .get(&key)
                .map(|c| {
                    c.iter()
                        .filter(|((ns, _), o)| {
                            (self.namespace.is_empty() || *ns == self.namespace)
                                && labels.matches(o)
                                && fields.matches(o)
                        })
                        .map(|(k, _)| k.clone())
                        .collect()
                })
                .unwrap_or_default();
            let mut deleted = Vec::new();
            for (ns, name) in names {
                if let Ok((object, _)) = objects::delete(state, self.info, &ns, &name, &options) {
                    deleted.push(object);
                }
            }
            (deleted, state.rv)
        });
        let items: Vec<Value> = deleted.iter().map(|o| self.object(o)).collect();
        Ok(json_response(
            200,
            &json!({
                "kind": self.info.list_kind,
                "apiVersion": self.info.api_version(),
                "metadata": {"resourceVersion": rv.to_string()},
                "items": items,
            }),
        ))
    }

    fn scale(&self, verb: &str, body: &[u8], content_type: Option<&str>) -> ApiResult<Response<Body>> {
        let Some(paths) = self.info.scale.clone() else {
            return Err(ApiError::no_resource());
        };
        let key = self.key();
        let not_found = || ApiError::not_found(&self.info.group, &self.info.plural, &self.name);
        let to_scale = |object: &Value| objects::subresources::scale_of(&paths, object);
        if verb == "get" {
            let object = self
                .shared
                .store
                .read()
                .get(&key, &self.namespace, &self.name)
                .cloned()
                .ok_or_else(not_found)?;
            return Ok(json_response(200, &to_scale(&object)));
        }
        let kind = match verb {
            "patch" => Some(patch::patch_type(self.info, content_type)?),
            "update" => None,
            _ => return Err(ApiError::method_not_allowed()),
        };
        let stored = self.shared.store.write(|state| {
            let current = state
                .get(&key, &self.namespace, &self.name)
                .cloned()
                .ok_or_else(not_found)?;
            let scale = match kind {
                Some(kind) => patch::apply(kind, &to_scale(&current), body)?,
                None => parse_json(body)?,
            };
            if scale["kind"].as_str().is_some_and(|k| k != "Scale") {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({}) does not match the expected kind (Scale)",
                    scale["kind"].as_str().unwrap_or_default()
                )));
            }
            let replicas = scale["spec"]["replicas"].clone();
            if !replicas.is_i64() && !replicas.is_u64() && !replicas.is_null() {
                return Err(ApiError::bad_request("spec.replicas must be an integer"));
            }
            let mut new = current.as_ref().clone();
            set_path(
                &mut new,
                &paths.spec_replicas,
                if replicas.is_null() { json!(0) } else { replicas },
            );
            if let Some(rv) = scale["metadata"]["resourceVersion"]
                .as_str()
                .filter(|s| !s.is_empty())
            {
                new["metadata"]["resourceVersion"] = json!(rv);
            }
            let new = objects::present(self.info, &Arc::new(new)).as_ref().clone();
            objects::update(
                state,
                self.info,
                &self.namespace,
                &self.name,
                new,
                Endpoint::Scale,
                self.dry_run,
            )
        })?;
        Ok(json_response(200, &to_scale(&stored)))
    }
}

fn set_path(object: &mut Value, path: &str, value: Value) {
    let segments: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut current = object;
    for (i, segment) in segments.iter().enumerate() {
        let Some(map) = current.as_object_mut() else {
            return;
        };
        if i + 1 == segments.len() {
            map.insert(segment.to_string(), value);
            return;
        }
        current = map.entry(segment.to_string()).or_insert_with(|| json!({}));
    }
}

/// kube-apiserver's message for a continue token older than the retained history.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn encode_continue(token: &ContinueToken) -> String {
    let raw = serde_json::to_vec(token).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(raw)
}

fn decode_continue(raw: &str) -> ApiResult<ContinueToken> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(raw)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(raw))
        .map_err(|_| bad())?;
    serde_json::from_slice(&bytes).map_err(|_| bad())
}
