//! Response views negotiated through `Accept`: the whole object, metadata only
//! (`application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`, which kube's
//! metadata API and client-go's metadata informers ask for), or a Table
//! (`application/json;as=Table;v=v1;g=meta.k8s.io`, which `kubectl get` asks for; see
//! [`crate::api::table`]).

use serde_json::{Value, json};

use crate::meta::errors::{ApiError, ApiResult};

/// How objects are shown in a response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The objects themselves.
    Object,
    /// `meta.k8s.io/v1` `PartialObjectMetadata` (lists: `PartialObjectMetadataList`).
    Metadata,
    /// A `meta.k8s.io` Table of this version (`v1` or `v1beta1`), rendered by the handler;
    /// [`View::object`] leaves objects whole (watches send objects).
    Table(&'static str),
}

impl View {
    /// The first view of `accept` the server can produce, as kube-apiserver negotiates:
    /// media ranges are tried in order; none acceptable is 406 NotAcceptable.
    pub fn negotiate(accept: Option<&str>) -> ApiResult<Self> {
        let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
            return Ok(Self::Object);
        };
        for range in accept.split(',') {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            if !matches!(
                media,
                "application/json" | "application/*" | "*/*" | "application/yaml"
            ) {
                continue;
            }
            let (mut as_, mut group, mut version) = (None, None, None);
            for param in parts {
                match param.split_once('=') {
                    Some(("as", v)) => as_ = Some(v),
                    Some(("g", v)) => group = Some(v),
                    Some(("v", v)) => version = Some(v),
                    _ => {}
                }
            }
            match as_ {
                None => return Ok(Self::Object),
                Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                    if group == Some("meta.k8s.io") && matches!(version, Some("v1" | "v1beta1")) =>
                {
                    return Ok(Self::Metadata);
                }
                Some("Table") if group == Some("meta.k8s.io") => match version {
                    Some("v1") => return Ok(Self::Table("v1")),
                    Some("v1beta1") => return Ok(Self::Table("v1beta1")),
                    _ => continue,
                },
                // Other conversions are not served: try the next range.
                Some(_) => continue,
            }
        }
        Err(ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: application/json, application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json;as=Table;g=meta.k8s.io;v=v1; got {accept:?}"
            ),
        ))
    }

    /// Shows one (already presented) object.
    pub fn object(self, object: Value) -> Value {
        match self {
            Self::Object | Self::Table(_) => object,
            Self::Metadata => {
                let metadata = match object {
                    Value::Object(mut map) => map.remove("metadata").unwrap_or(Value::Null),
                    _ => Value::Null,
                };
                json!({ "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata })
            }
        }
    }

    /// The `(kind, apiVersion)` of a list, given the resource's own.
    pub fn list_type(self, list_kind: &str, api_version: String) -> (String, String) {
        match self {
            Self::Object | Self::Table(_) => (list_kind.to_owned(), api_version),
            Self::Metadata => ("PartialObjectMetadataList".into(), "meta.k8s.io/v1".into()),
        }
    }

    /// The `(kind, apiVersion)` of a bookmark object, given the resource's own.
    pub fn object_type(self, kind: &str, api_version: String) -> (String, String) {
        match self {
            Self::Object | Self::Table(_) => (kind.to_owned(), api_version),
            Self::Metadata => ("PartialObjectMetadata".into(), "meta.k8s.io/v1".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_the_accept_header() {
        assert_eq!(View::negotiate(None).ok(), Some(View::Object));
        assert_eq!(View::negotiate(Some("application/json")).ok(), Some(View::Object));
        let meta = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        assert_eq!(View::negotiate(Some(meta)).ok(), Some(View::Metadata));
        let list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(View::negotiate(Some(list)).ok(), Some(View::Metadata));
        // kubectl asks for a Table first and falls back to JSON.
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(View::negotiate(Some(table)).ok(), Some(View::Table("v1")));
        let beta = "application/json;as=Table;v=v1beta1;g=meta.k8s.io";
        assert_eq!(View::negotiate(Some(beta)).ok(), Some(View::Table("v1beta1")));
        let none = View::negotiate(Some("application/json;as=Table;v=v2;g=meta.k8s.io"));
        assert_eq!(none.err().map(|e| e.code), Some(406));
    }

    #[test]
    fn metadata_view_keeps_only_metadata() {
        let object =
            json!({"kind": "Foo", "apiVersion": "x/v1", "metadata": {"name": "a"}, "spec": {"b": 1}});
        assert_eq!(
            View::Metadata.object(object),
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": {"name": "a"}})
        );
    }

    #[test]
    fn protobuf_accept_falls_back_to_json() {
        // What client-go's typed clients (and so kubectl) send: JSON is acceptable, so JSON it is.
        let accept = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(View::negotiate(Some(accept)).ok(), Some(View::Object));
        let accept = "application/vnd.kubernetes.protobuf, */*";
        assert_eq!(View::negotiate(Some(accept)).ok(), Some(View::Object));
        // Protobuf only: not served (kube-apiserver would answer protobuf for built-ins).
        let only = View::negotiate(Some("application/vnd.kubernetes.protobuf"));
        assert_eq!(
            only.err().map(|e| (e.code, e.reason)),
            Some((406, "NotAcceptable".to_owned()))
        );
    }
}
