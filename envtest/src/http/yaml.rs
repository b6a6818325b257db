//! YAML request bodies, converted to JSON before the request goes on.
//!
//! Converting YAML can be expensive even when it ends in a refusal (an alias bomb of a
//! few KB costs seconds of CPU before the parser's budget stops it), so it runs on
//! tokio's blocking pool, at most [`MAX_CONCURRENT`] conversions at once: the async
//! workers keep serving every other request (`/healthz`, watches). As kube-apiserver,
//! a body that is not valid UTF-8 is refused, not repaired.

use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::meta::errors::{ApiError, ApiResult};
use crate::resources::protobuf::BodyType;

/// YAML conversions running at once in this process; more requests wait their turn.
pub const MAX_CONCURRENT: usize = 2;

static SLOTS: Semaphore = Semaphore::const_new(MAX_CONCURRENT);

/// Conversions waiting for a slot or running.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);

/// How many YAML bodies this process is converting or waiting to convert now.
pub fn in_flight() -> usize {
    IN_FLIGHT.load(Ordering::Relaxed)
}

/// Counts one conversion in [`IN_FLIGHT`] while alive (also when its request is dropped).
struct Counted;

impl Counted {
    fn new() -> Self {
        IN_FLIGHT.fetch_add(1, Ordering::Relaxed);
        Self
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `application/apply-patch+yaml`: server-side apply's body, YAML or JSON.
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// A request body as JSON where it was YAML: `application/yaml` bodies become
/// `application/json` ones (the returned content type); apply patches in YAML become
/// JSON and keep their content type. Other bodies are returned untouched.
pub async fn to_json(content_type: Option<&str>, body: Bytes) -> ApiResult<(Bytes, Option<String>)> {
    let media = content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .unwrap_or_default();
    let keep = |body| Ok((body, content_type.map(String::from)));
    let context = match (media.as_str(), BodyType::of(content_type)) {
        (_, BodyType::Yaml) if !body.is_empty() => "error converting YAML to JSON",
        (APPLY_PATCH, _) if !looks_like_json(&body) => "error decoding YAML",
        _ => return keep(body),
    };
    let json = convert(body, context).await?;
    let content_type = if media == APPLY_PATCH {
        content_type.map(String::from)
    } else {
        Some("application/json".to_owned())
    };
    Ok((json, content_type))
}

fn looks_like_json(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

/// Converts on the blocking pool, waiting for a free slot first.
async fn convert(body: Bytes, context: &'static str) -> ApiResult<Bytes> {
    let _counted = Counted::new();
    let _slot = SLOTS
        .acquire()
        .await
        .map_err(|closed| ApiError::internal(closed.to_string()))?;
    let converted = tokio::task::spawn_blocking(move || yaml_to_json(&body, context)).await;
    converted.map_err(|failed| ApiError::internal(format!("{context}: {failed}")))?
}

/// The conversion itself (synchronous; see [`to_json`] for where it runs).
pub fn yaml_to_json(body: &[u8], context: &str) -> ApiResult<Bytes> {
    let text = std::str::from_utf8(body).map_err(|error| {
        // go-yaml's wording, which kube-apiserver passes on.
        let what = if error.error_len().is_some() {
            "invalid leading UTF-8 octet"
        } else {
            "incomplete UTF-8 octet sequence"
        };
        ApiError::bad_request(format!("{context}: yaml: {what}"))
    })?;
    let value: Value =
        serde_saphyr::from_str(text).map_err(|e| ApiError::bad_request(format!("{context}: {e}")))?;
    serde_json::to_vec(&value)
        .map(Bytes::from)
        .map_err(|e| ApiError::bad_request(format!("{context}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_is_refused_not_replaced() {
        let error = yaml_to_json(b"data:\n  key: caf\xe9\n", "error converting YAML to JSON").err();
        assert_eq!(
            error.map(|e| (e.code, e.message)),
            Some((
                400,
                "error converting YAML to JSON: yaml: invalid leading UTF-8 octet".to_owned()
            ))
        );
        let truncated = yaml_to_json(b"a: \xe2\x82", "ctx").err().map(|e| e.message);
        assert_eq!(
            truncated.as_deref(),
            Some("ctx: yaml: incomplete UTF-8 octet sequence")
        );
    }

    #[tokio::test]
    async fn yaml_bodies_become_json_and_others_pass_through() -> Result<(), ApiError> {
        let (json, media) = to_json(Some("application/yaml"), Bytes::from_static(b"a: 1\n")).await?;
        assert_eq!(
            (json.as_ref(), media.as_deref()),
            (&b"{\"a\":1}"[..], Some("application/json"))
        );
        let (json, media) = to_json(Some(APPLY_PATCH), Bytes::from_static(b"a: [x]\n")).await?;
        assert_eq!(
            (json.as_ref(), media.as_deref()),
            (&b"{\"a\":[\"x\"]}"[..], Some(APPLY_PATCH))
        );
        let untouched = Bytes::from_static(b"{\"a\": 1}");
        let (json, media) = to_json(Some(APPLY_PATCH), untouched.clone()).await?;
        assert_eq!((json, media.as_deref()), (untouched.clone(), Some(APPLY_PATCH)));
        let (json, media) = to_json(None, untouched.clone()).await?;
        assert_eq!((json, media), (untouched, None));
        Ok(())
    }
}
