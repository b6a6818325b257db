//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) request bodies.
//!
//! client-go's typed clients, and so `kubectl create configmap|namespace|secret|…`, send
//! built-in objects as protobuf and do not fall back to JSON on 415. kube-apiserver accepts
//! protobuf for every built-in kind (not for custom resources), so this server decodes it
//! for the built-in kinds it serves and stores the JSON form.
//!
//! The wire format: the 4-byte magic `k8s\0`, then a `runtime.Unknown` message whose
//! `typeMeta` names the kind and whose `raw` holds the typed message (the generated
//! messages of the [`k8s_pb`] crate). [`mod@json`] and [`types`] convert those messages to and
//! from JSON, since `k8s-pb` has no serde support.
//!
//! Responses stay JSON: kube-apiserver picks the first media type of `Accept` it can
//! produce, and client-go sends `application/vnd.kubernetes.protobuf,application/json`, so
//! a JSON answer is one the client asked for (see [`crate::api::view::View::negotiate`]).

pub mod json;
pub mod types;
pub mod workloads;

use bytes::Bytes;
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::authorization::v1 as authz;
use k8s_pb::api::autoscaling::v1 as autoscaling;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;
use serde_json::{Value, json};

use self::json::Json;
use crate::meta::errors::{ApiError, ApiResult};
use crate::resources::ResourceInfo;

/// The protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The prefix of every Kubernetes protobuf body.
pub const MAGIC: [u8; 4] = *b"k8s\0";

/// Media types a request body may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyType {
    /// `application/json` (or no Content-Type).
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
    /// Anything else.
    Other,
}

impl BodyType {
    /// The type of a `Content-Type` header (parameters ignored).
    pub fn of(content_type: Option<&str>) -> Self {
        let media = content_type
            .and_then(|c| c.split(';').next())
            .map(str::trim)
            .unwrap_or_default();
        match media.to_ascii_lowercase().as_str() {
            "" | "application/json" | "*/*" => Self::Json,
            "application/yaml" => Self::Yaml,
            MEDIA_TYPE => Self::Protobuf,
            _ => Self::Other,
        }
    }
}

/// A message type's decoder and encoder.
#[derive(Debug, Clone, Copy)]
pub struct Codec {
    /// Typed message bytes to JSON.
    pub decode: fn(&[u8]) -> Result<Value, String>,
    /// JSON to typed message bytes.
    pub encode: fn(&Value) -> Result<Vec<u8>, String>,
    /// JSON as the Go type re-encodes it: unknown fields dropped, empty `omitempty`
    /// fields left out, times in their precision (what kube-apiserver stores).
    pub normalize: fn(&Value) -> Result<Value, String>,
    /// The paths of the fields of an object the type does not have (`apiVersion` and
    /// `kind` aside).
    pub unknown: fn(&Value) -> Vec<String>,
}

fn decode<M: Message + Default + Json>(raw: &[u8]) -> Result<Value, String> {
    M::decode(raw).map(|m| m.to_json()).map_err(|e| e.to_string())
}

fn encode<M: Message + Json>(value: &Value) -> Result<Vec<u8>, String> {
    M::from_json(value).map(|m| m.encode_to_vec())
}

fn normalize<M: Json>(value: &Value) -> Result<Value, String> {
    M::from_json(value).map(|m| m.to_json())
}

fn unknown<M: Json>(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    M::unknown_fields(value, "", &mut out);
    out.retain(|path| !matches!(path.as_str(), "apiVersion" | "kind"));
    out
}

fn codec<M: Message + Default + Json>() -> Codec {
    Codec {
        decode: decode::<M>,
        encode: encode::<M>,
        normalize: normalize::<M>,
        unknown: unknown::<M>,
    }
}

/// The codec of a built-in kind, by `apiVersion` and `kind`.
pub fn codec_for(api_version: &str, kind: &str) -> Option<Codec> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => codec::<core::Namespace>(),
        ("v1", "ConfigMap") => codec::<core::ConfigMap>(),
        ("v1", "Secret") => codec::<core::Secret>(),
        ("v1", "ServiceAccount") => codec::<core::ServiceAccount>(),
        ("v1", "Event") => codec::<core::Event>(),
        ("events.k8s.io/v1", "Event") => codec::<events::Event>(),
        ("coordination.k8s.io/v1", "Lease") => codec::<coordination::Lease>(),
        ("apps/v1", "Deployment") => codec::<apps::Deployment>(),
        ("rbac.authorization.k8s.io/v1", "Role") => codec::<rbac::Role>(),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => codec::<rbac::RoleBinding>(),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => codec::<rbac::ClusterRole>(),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => codec::<rbac::ClusterRoleBinding>(),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            codec::<apiext::CustomResourceDefinition>()
        }
        ("autoscaling/v1", "Scale") => codec::<autoscaling::Scale>(),
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => codec::<authz::SelfSubjectAccessReview>(),
        ("authorization.k8s.io/v1", "SubjectAccessReview") => codec::<authz::SubjectAccessReview>(),
        ("authorization.k8s.io/v1", "LocalSubjectAccessReview") => codec::<authz::LocalSubjectAccessReview>(),
        ("authentication.k8s.io/v1", "SelfSubjectReview") => codec::<authn::SelfSubjectReview>(),
        ("v1" | "meta.k8s.io/v1", "DeleteOptions") => codec::<meta::DeleteOptions>(),
        _ => return None,
    })
}

/// Splits a protobuf body into its type and typed message bytes.
pub fn unwrap(body: &[u8]) -> ApiResult<(TypeMeta, Vec<u8>)> {
    let Some(rest) = body.strip_prefix(&MAGIC) else {
        return Err(ApiError::bad_request(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]",
        ));
    };
    let unknown = Unknown::decode(rest)
        .map_err(|e| ApiError::bad_request(format!("unable to decode the protobuf envelope: {e}")))?;
    if unknown.content_encoding.as_deref().is_some_and(|e| !e.is_empty()) {
        return Err(ApiError::unsupported_media_type(
            "application/json, application/yaml, application/vnd.kubernetes.protobuf",
        ));
    }
    Ok((
        unknown.type_meta.unwrap_or_default(),
        unknown.raw.unwrap_or_default(),
    ))
}

/// Wraps typed message bytes into a protobuf body.
pub fn wrap(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// Encodes a JSON object of a built-in kind as a protobuf body.
pub fn encode_object(value: &Value) -> Result<Vec<u8>, String> {
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    let kind = value["kind"].as_str().unwrap_or_default();
    let codec = codec_for(api_version, kind)
        .ok_or_else(|| format!("no protobuf message for {kind} in {api_version}"))?;
    Ok(wrap(api_version, kind, (codec.encode)(value)?))
}

/// Decodes a protobuf body into the JSON object it stands for (with `apiVersion` and
/// `kind` from the envelope; when the envelope has none, `expected` is assumed).
pub fn decode_object(body: &[u8], expected: (&str, &str)) -> ApiResult<Value> {
    let (type_meta, raw) = unwrap(body)?;
    let api_version = type_meta
        .api_version
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| expected.0.to_owned());
    let kind = type_meta
        .kind
        .filter(|k| !k.is_empty())
        .unwrap_or_else(|| expected.1.to_owned());
    let codec = codec_for(&api_version, &kind).ok_or_else(|| {
        ApiError::bad_request(format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\" in scheme \"envtest\""
        ))
    })?;
    let mut value = (codec.decode)(&raw)
        .map_err(|e| ApiError::bad_request(format!("unable to decode {kind} from protobuf: {e}")))?;
    if let Some(map) = value.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    Ok(value)
}

/// The JSON bytes of a create/update/delete request body of `info`, whatever its media
/// type: JSON as is, YAML and protobuf (built-in kinds only, as kube-apiserver) converted;
/// anything else is 415.
pub fn json_body(
    info: &ResourceInfo,
    verb: &str,
    subresource: Option<&str>,
    content_type: Option<&str>,
    body: Bytes,
) -> ApiResult<Bytes> {
    let accepted = if info.custom {
        "application/json, application/yaml"
    } else {
        "application/json, application/yaml, application/vnd.kubernetes.protobuf"
    };
    let value = match BodyType::of(content_type) {
        BodyType::Json => return Ok(body),
        _ if body.is_empty() => return Ok(body),
        BodyType::Other => return Err(ApiError::unsupported_media_type(accepted)),
        BodyType::Protobuf if info.custom && !matches!(verb, "delete" | "deletecollection") => {
            return Err(ApiError::unsupported_media_type(accepted));
        }
        BodyType::Yaml => serde_saphyr::from_str::<Value>(&String::from_utf8_lossy(&body))
            .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?,
        BodyType::Protobuf => {
            let expected = match (verb, subresource) {
                ("delete" | "deletecollection", _) => ("meta.k8s.io/v1".to_owned(), "DeleteOptions"),
                (_, Some("scale")) => ("autoscaling/v1".to_owned(), "Scale"),
                _ => (info.api_version(), info.kind.as_str()),
            };
            decode_object(&body, (&expected.0, expected.1))?
        }
    };
    serde_json::to_vec(&value)
        .map(Bytes::from)
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

#[cfg(test)]
mod tests;
