//! OpenAPI documents: `/openapi/v2` and `/openapi/v3` (index, `/openapi/v3/api/v1`,
//! `/openapi/v3/apis/{group}/{version}`), built from the built-in types (k8s-openapi's
//! schemars schemas, with the list and patch extensions kube-apiserver publishes) and from
//! the served CRD versions' schemas.
//!
//! Every kind's schema carries `x-kubernetes-group-version-kind`, and every resource has
//! the paths kubectl reads: the `PATCH` operation with its GVK, its `fieldValidation`
//! parameter (so `kubectl apply` validates server-side) and its patch content types (so
//! client-side `kubectl apply` sends strategic merge patches to built-ins and merge
//! patches to custom resources). The same patched built-in definitions give server-side
//! apply and strategic merge patch their list semantics.
//!
//! Differences from kube-apiserver: only JSON is produced (protobuf requests get 406, which
//! kubectl tolerates: it then uses merge patches for custom resources and the v3
//! documents for the rest); a stale `?hash=` is served (no-cache) instead of redirected;
//! the paths carry the operations and parameters kubectl reads, not every parameter;
//! built-in schemas come from k8s-openapi (descriptions and `required` as it generates
//! them) with the list/map/patch extensions of the served kinds added by hand.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use http::{Response, header};

use serde_json::{Map, Value, json};

use crate::api::response::{Body, json_response};
use crate::meta::errors::{ApiError, ApiResult};
use crate::objects::CRD_KEY;
use crate::resources::definitions::{
    builtin_definition, builtin_definitions, crd_version_schema, custom_definition,
};
use crate::resources::{Registry, ResourceInfo};
use crate::storage::store::Store;

/// Where v3 documents keep schemas.
pub const V3_REFS: &str = "#/components/schemas/";
/// Where the v2 document keeps schemas.
pub const V2_REFS: &str = "#/definitions/";

/// The schema of a custom kind as kube-apiserver publishes it: the CRD's schema with the
/// standard `apiVersion`/`kind`/`metadata` and the GVK extension.
fn custom_schema(info: &ResourceInfo, schema: Option<&Value>) -> Value {
    let mut out = schema
        .cloned()
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    if let Some(map) = out.as_object_mut() {
        map.insert("type".into(), json!("object"));
        let properties = map.entry("properties").or_insert_with(|| json!({}));
        if let Some(p) = properties.as_object_mut() {
            p.insert("apiVersion".into(), json!({"description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources", "type": "string"}));
            p.insert("kind".into(), json!({"description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds", "type": "string"}));
            p.insert("metadata".into(), json!({"description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", "allOf": [{"$ref": format!("{V3_REFS}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")}]}));
        }
        map.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": info.group, "version": info.version, "kind": info.kind}]),
        );
    }
    out
}

fn list_schema(info: &ResourceInfo, item: &str) -> Value {
    json!({
        "description": format!("{} is a list of {}", info.list_kind, info.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": format!("{V3_REFS}{item}")}},
            "metadata": {"allOf": [{"$ref": format!("{V3_REFS}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")}]},
        },
        "x-kubernetes-group-version-kind": [{"group": info.group, "version": info.version, "kind": info.list_kind}],
    })
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params(apply: bool) -> Vec<Value> {
    let mut params = vec![
        query_param(
            "dryRun",
            "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed",
        ),
        query_param(
            "fieldManager",
            "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.",
        ),
        query_param(
            "fieldValidation",
            "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore - Warn - Strict",
        ),
    ];
    if apply {
        params.push(json!({"name": "force", "in": "query", "description": "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.", "schema": {"type": "boolean", "uniqueItems": true}}));
    }
    params
}

fn operation(
    info: &ResourceInfo,
    action: &str,
    description: String,
    response: &str,
    parameters: Vec<Value>,
    body: Option<Value>,
) -> Value {
    let mut op = json!({
        "description": description,
        "operationId": format!("{action}{}", info.kind),
        "parameters": parameters,
        "responses": {
            "200": {"description": "OK", "content": {
                "application/json": {"schema": {"$ref": format!("{V3_REFS}{response}")}},
                "application/yaml": {"schema": {"$ref": format!("{V3_REFS}{response}")}},
            }},
            "401": {"description": "Unauthorized"},
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": info.group, "version": info.version, "kind": info.kind},
    });
    if let (Some(body), Some(map)) = (body, op.as_object_mut()) {
        map.insert("requestBody".into(), body);
    }
    op
}

fn body_of(content_types: &[&str], schema: &str) -> Value {
    let content: Map<String, Value> = content_types
        .iter()
        .map(|t| {
            (
                t.to_string(),
                json!({"schema": {"$ref": format!("{V3_REFS}{schema}")}}),
            )
        })
        .collect();
    json!({"content": content, "required": true})
}

/// The paths of one resource (collection, item, status).
fn paths(info: &ResourceInfo, definition: &str, list: &str) -> Vec<(String, Value)> {
    let prefix = if info.group.is_empty() {
        format!("/api/{}", info.version)
    } else {
        format!("/apis/{}/{}", info.group, info.version)
    };
    let scope = if info.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", info.plural)
    } else {
        format!("{prefix}/{}", info.plural)
    };
    let mut patch_types = vec![
        "application/apply-patch+yaml",
        "application/json-patch+json",
        "application/merge-patch+json",
    ];
    if !info.custom {
        patch_types.push("application/strategic-merge-patch+json");
    }
    let kind = &info.kind;
    let path_params = |named: bool| {
        let mut params = Vec::new();
        if named {
            params.push(json!({"name": "name", "in": "path", "required": true, "description": format!("name of the {kind}"), "schema": {"type": "string", "uniqueItems": true}}));
        }
        if info.namespaced {
            params.push(json!({"name": "namespace", "in": "path", "required": true, "description": "object name and auth scope, such as for teams and projects", "schema": {"type": "string", "uniqueItems": true}}));
        }
        params.push(query_param(
            "pretty",
            "If 'true', then the output is pretty printed.",
        ));
        Value::Array(params)
    };
    let item_ops = |suffix: &str, what: &str| {
        json!({
            "get": operation(info, "get", format!("read {what}the specified {kind}"), definition, vec![], None),
            "put": operation(info, "put", format!("replace {what}the specified {kind}"), definition, write_params(false), Some(body_of(&["*/*"], definition))),
            "patch": operation(info, "patch", format!("partially update {what}the specified {kind}"), definition, write_params(true), Some(body_of(&patch_types, "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"))),
            "parameters": path_params(true),
        })
        .as_object()
        .map(|m| {
            let mut m = m.clone();
            if suffix.is_empty() {
                m.insert("delete".into(), operation(info, "delete", format!("delete a {kind}"), definition, vec![query_param("dryRun", "dry run"), query_param("gracePeriodSeconds", "grace period"), query_param("propagationPolicy", "propagation policy")], None));
            }
            Value::Object(m)
        })
        .unwrap_or_default()
    };
    let mut out = vec![
        (
            scope.clone(),
            json!({
                "get": operation(info, "list", format!("list or watch objects of kind {kind}"), list, vec![
                    query_param("continue", "continue"), query_param("fieldSelector", "field selector"),
                    query_param("labelSelector", "label selector"), query_param("limit", "limit"),
                    query_param("resourceVersion", "resource version"), query_param("watch", "watch"),
                ], None),
                "post": operation(info, "post", format!("create a {kind}"), definition, write_params(false), Some(body_of(&["*/*"], definition))),
                "delete": operation(info, "deletecollection", format!("delete collection of {kind}"), "io.k8s.apimachinery.pkg.apis.meta.v1.Status", vec![], None),
                "parameters": path_params(false),
            }),
        ),
        (format!("{scope}/{{name}}"), item_ops("", "")),
    ];
    if info.status {
        out.push((
            format!("{scope}/{{name}}/status"),
            item_ops("status", "status of "),
        ));
    }
    out
}

fn collect_refs(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == "$ref"
                    && let Some(r) = v.as_str()
                    && let Some(name) = r.strip_prefix(V3_REFS)
                {
                    out.insert(name.to_string());
                }
                collect_refs(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// Adds the transitive closure of referenced built-in definitions.
fn close_over_refs(schemas: &mut Map<String, Value>, paths: &Map<String, Value>) {
    let defs = builtin_definitions();
    let mut pending = BTreeSet::new();
    collect_refs(&Value::Object(schemas.clone()), &mut pending);
    collect_refs(&Value::Object(paths.clone()), &mut pending);
    while let Some(name) = pending.pop_first() {
        if schemas.contains_key(&name) {
            continue;
        }
        let schema = match name.as_str() {
            "io.k8s.apimachinery.pkg.apis.meta.v1.Patch" => {
                json!({"description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body.", "type": "object"})
            }
            "io.k8s.apimachinery.pkg.apis.meta.v1.Status" => {
                json!({"description": "Status is a return value for calls that don't return other objects.", "type": "object", "x-kubernetes-group-version-kind": [{"group": "", "kind": "Status", "version": "v1"}]})
            }
            _ => match defs.get(&name) {
                Some(schema) => schema.clone(),
                None => continue,
            },
        };
        collect_refs(&schema, &mut pending);
        schemas.insert(name, schema);
    }
}

/// The OpenAPI v3 documents of every served group/version, keyed `api/v1` or
/// `apis/{group}/{version}`.
pub fn v3_documents(registry: &Registry, crds: &[&Value]) -> BTreeMap<String, Value> {
    /// Schemas and paths of one group/version.
    type Parts = (Map<String, Value>, Map<String, Value>);
    let mut grouped: BTreeMap<String, Parts> = BTreeMap::new();
    let defs = builtin_definitions();
    for info in registry.all() {
        let key = if info.group.is_empty() {
            format!("api/{}", info.version)
        } else {
            format!("apis/{}/{}", info.group, info.version)
        };
        let (schemas, paths_map) = grouped.entry(key).or_default();
        let (definition, schema) = if info.custom {
            let crd = crds.iter().find(|c| {
                c["spec"]["group"].as_str() == Some(info.group.as_str())
                    && c["spec"]["names"]["plural"].as_str() == Some(info.plural.as_str())
            });
            let schema = crd.and_then(|c| crd_version_schema(c, &info.version));
            (
                custom_definition(&info.group, &info.version, &info.kind),
                custom_schema(info, schema),
            )
        } else {
            let Some(name) = builtin_definition(info) else {
                continue;
            };
            let Some(schema) = defs.get(name) else { continue };
            (name.to_string(), schema.clone())
        };
        let list = format!("{definition}List");
        schemas.insert(list.clone(), list_schema(info, &definition));
        schemas.insert(definition.clone(), schema);
        for (path, item) in paths(info, &definition, &list) {
            paths_map.insert(path, item);
        }
    }
    grouped
        .into_iter()
        .map(|(key, (mut schemas, paths))| {
            close_over_refs(&mut schemas, &paths);
            let doc = json!({
                "openapi": "3.0.0",
                "info": {"title": "Kubernetes", "version": "v1.35.0"},
                "paths": paths,
                "components": {
                    "schemas": schemas,
                    "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
                },
                "security": [{"BearerToken": []}],
            });
            (key, doc)
        })
        .collect()
}

/// The hash kube-apiserver puts in `serverRelativeURL` (here a 128-bit FNV-1a, hex).
pub fn hash(document: &Value) -> String {
    let bytes = serde_json::to_vec(document).unwrap_or_default();
    let fnv = |seed: u64| {
        bytes.iter().fold(seed, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "{:016X}{:016X}",
        fnv(0xcbf2_9ce4_8422_2325),
        fnv(0x6c62_272e_07bb_0142)
    )
}

/// The `/openapi/v3` index.
pub fn v3_index(documents: &BTreeMap<String, Value>) -> Value {
    let paths: Map<String, Value> = documents
        .iter()
        .map(|(key, doc)| {
            (
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={}", hash(doc))}),
            )
        })
        .collect();
    json!({ "paths": paths })
}

fn to_v2_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if k == "$ref"
                    && let Value::String(r) = v
                    && let Some(name) = r.strip_prefix(V3_REFS)
                {
                    *r = format!("{V2_REFS}{name}");
                } else {
                    to_v2_refs(v);
                }
            }
            // Swagger 2.0 has no `nullable`.
            map.remove("nullable");
        }
        Value::Array(items) => items.iter_mut().for_each(to_v2_refs),
        _ => {}
    }
}

fn v2_operation(op: &Value) -> Value {
    let mut out = op.clone();
    let Some(map) = out.as_object_mut() else {
        return out;
    };
    let mut parameters: Vec<Value> = map
        .remove("parameters")
        .and_then(|p| p.as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .map(|mut p| {
            if let Some(pm) = p.as_object_mut()
                && let Some(Value::Object(schema)) = pm.remove("schema")
            {
                pm.extend(schema);
            }
            p
        })
        .collect();
    if let Some(body) = map.remove("requestBody") {
        let content = body["content"].as_object().cloned().unwrap_or_default();
        let schema = content
            .values()
            .next()
            .map(|c| c["schema"].clone())
            .unwrap_or(json!({"type": "object"}));
        map.insert("consumes".into(), json!(content.keys().collect::<Vec<_>>()));
        parameters.insert(
            0,
            json!({"name": "body", "in": "body", "required": true, "schema": schema}),
        );
    }
    map.insert("parameters".into(), Value::Array(parameters));
    map.insert("produces".into(), json!(["application/json", "application/yaml"]));
    if let Some(responses) = map.get_mut("responses").and_then(Value::as_object_mut) {
        for response in responses.values_mut() {
            if let Some(r) = response.as_object_mut()
                && let Some(content) = r.remove("content")
                && let Some(schema) = content
                    .as_object()
                    .and_then(|c| c.values().next())
                    .map(|c| c["schema"].clone())
            {
                r.insert("schema".into(), schema);
            }
        }
    }
    out
}

/// The `/openapi/v2` (Swagger 2.0) document: every group/version merged.
pub fn v2_document(documents: &BTreeMap<String, Value>) -> Value {
    let mut definitions = Map::new();
    let mut paths = Map::new();
    for doc in documents.values() {
        if let Some(schemas) = doc["components"]["schemas"].as_object() {
            for (name, schema) in schemas {
                definitions.insert(name.clone(), schema.clone());
            }
        }
        if let Some(items) = doc["paths"].as_object() {
            for (path, item) in items {
                let mut out = Map::new();
                if let Some(ops) = item.as_object() {
                    for (method, op) in ops {
                        let converted = if method == "parameters" {
                            let mut params = op.clone();
                            if let Some(list) = params.as_array_mut() {
                                for p in list.iter_mut() {
                                    if let Some(pm) = p.as_object_mut()
                                        && let Some(Value::Object(schema)) = pm.remove("schema")
                                    {
                                        pm.extend(schema);
                                    }
                                }
                            }
                            params
                        } else {
                            v2_operation(op)
                        };
                        out.insert(method.clone(), converted);
                    }
                }
                paths.insert(path.clone(), Value::Object(out));
            }
        }
    }
    let mut doc = json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    });
    to_v2_refs(&mut doc);
    doc
}

/// The v3 documents of the current registry and CRDs.
pub fn current_documents(store: &Store) -> BTreeMap<String, Value> {
    let state = store.read();
    let registry = state.registry.clone();
    let crds: Vec<Arc<Value>> = state
        .collections
        .get(CRD_KEY)
        .map(|c| c.values().cloned().collect())
        .unwrap_or_default();
    drop(state);
    let refs: Vec<&Value> = crds.iter().map(|c| c.as_ref()).collect();
    v3_documents(&registry, &refs)
}

fn accepts(accept: Option<&str>, media: &[&str]) -> bool {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return true;
    };
    accept.split(',').any(|range| {
        let m = range.split(';').next().unwrap_or_default().trim();
        m == "*/*" || m == "application/*" || media.contains(&m)
    })
}

fn document_response(value: &Value, cache: &str) -> Response<Body> {
    let mut response = json_response(200, value);
    if let Ok(v) = header::HeaderValue::from_str(cache) {
        response.headers_mut().insert(header::CACHE_CONTROL, v);
    }
    response
}

/// Serves `/openapi/v2`, `/openapi/v3` and `/openapi/v3/{api/v1,apis/g/v}` (`path` is
/// what follows `/openapi/`). Only JSON is produced: a request accepting only protobuf
/// gets 406, as kube-apiserver answers media types it cannot produce.
pub fn serve(
    store: &Store,
    path: &str,
    query: &HashMap<String, String>,
    accept: Option<&str>,
) -> ApiResult<Response<Body>> {
    let not_acceptable = || {
        ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: application/json; got {:?}",
                accept.unwrap_or_default()
            ),
        )
    };
    let documents = current_documents(store);
    match path.trim_end_matches('/') {
        "v2" => {
            if !accepts(accept, &["application/json"]) {
                return Err(not_acceptable());
            }
            Ok(document_response(&v2_document(&documents), "no-cache, private"))
        }
        "v3" => {
            if !accepts(accept, &["application/json"]) {
                return Err(not_acceptable());
            }
            Ok(document_response(&v3_index(&documents), "no-cache, private"))
        }
        other => {
            let key = other.strip_prefix("v3/").unwrap_or_default();
            let Some(doc) = documents.get(key) else {
                return Err(ApiError::new(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ));
            };
            if !accepts(accept, &["application/json"]) {
                return Err(not_acceptable());
            }
            let fresh = query.get("hash").is_some_and(|h| *h == hash(doc));
            let cache = if fresh {
                "public, immutable"
            } else {
                "no-cache, private"
            };
            Ok(document_response(doc, cache))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_carry_extensions() {
        let defs = builtin_definitions();
        let meta = &defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"];
        assert_eq!(
            meta["properties"]["ownerReferences"]["x-kubernetes-patch-merge-key"],
            json!("uid")
        );
        assert_eq!(
            defs["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "ConfigMap"}])
        );
        assert_eq!(
            defs["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"]["x-kubernetes-patch-merge-key"],
            json!("port")
        );
        assert_eq!(
            defs["io.k8s.api.networking.v1.NetworkPolicy"]["x-kubernetes-group-version-kind"],
            json!([{"group": "networking.k8s.io", "version": "v1", "kind": "NetworkPolicy"}])
        );
        assert_eq!(
            custom_definition("machine.openshift.io", "v1beta1", "Machine"),
            "io.openshift.machine.v1beta1.Machine"
        );
    }
}
