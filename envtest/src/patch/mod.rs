//! Patch types: JSON merge patch, JSON patch, strategic merge patch for built-ins
//! ([`crate::patch::smp`]) and server-side apply ([`mod@crate::patch::apply`]).

pub mod apply;
pub mod smp;

use serde_json::Value;

use crate::meta::errors::{ApiError, ApiResult};
use crate::resources::ResourceInfo;

/// A supported patch content type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/merge-patch+json`.
    Merge,
    /// `application/json-patch+json`.
    Json,
    /// `application/strategic-merge-patch+json` (built-ins only).
    Strategic,
    /// `application/apply-patch+yaml`: server-side apply (see [`mod@crate::patch::apply`]).
    Apply,
}

/// Picks the patch type from a Content-Type header.
pub fn patch_type(info: &ResourceInfo, content_type: Option<&str>) -> ApiResult<PatchType> {
    let media = content_type
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    let accepted = if info.custom {
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    } else {
        "application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"
    };
    match media {
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/strategic-merge-patch+json" if !info.custom => Ok(PatchType::Strategic),
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        _ => Err(ApiError::unsupported_media_type(accepted)),
    }
}

/// Applies a patch body to a document.
pub fn apply(kind: PatchType, target: &Value, body: &[u8]) -> ApiResult<Value> {
    let mut doc = target.clone();
    match kind {
        PatchType::Merge | PatchType::Strategic => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding patch: patch must be a JSON object",
                ));
            }
            if kind == PatchType::Strategic {
                doc = crate::patch::smp::apply(&doc, &patch)?;
            } else {
                json_patch::merge(&mut doc, &patch);
            }
        }
        PatchType::Apply => {
            return Err(ApiError::unsupported_media_type(
                "application/json-patch+json, application/merge-patch+json",
            ));
        }
        PatchType::Json => {
            let patch: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            json_patch::patch(&mut doc, &patch).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
        }
    }
    Ok(doc)
}
