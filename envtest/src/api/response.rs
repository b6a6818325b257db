//! Responses: the server's body type, JSON bodies, and `Status` bodies for errors (with
//! `Retry-After` when the error asks for it). Every layer that answers HTTP uses these, so
//! they live here, below the handler that calls the layers.

use std::convert::Infallible;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use serde_json::Value;

use crate::meta::errors::ApiError;

/// Response body type of the server.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// A whole body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|e| match e {}).boxed_unsync()
}

/// A JSON response.
pub fn json_response(code: u16, value: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let mut response = Response::new(full(bytes));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// An error response with a Status body.
pub fn error_response(error: &ApiError) -> Response<Body> {
    let mut response = json_response(error.code, &error.to_status());
    if let Some(retry) = error.details.retry_after
        && let Ok(value) = header::HeaderValue::from_str(&retry.to_string())
    {
        response.headers_mut().insert(header::RETRY_AFTER, value);
    }
    response
}

/// A JSON response whose body is already serialized (lists concatenated from the JSON cache).
pub fn serialized(code: u16, body: Bytes) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}
