//! Raw HTTP helpers shared by the schema and CEL suites: the exact status, body and
//! `Warning` headers of a request.
#![allow(dead_code)]

use envtest::TestEnv;
use http_body_util::BodyExt;
use serde_json::Value;

/// Result type of the suites.
pub type TestResult = Result<(), Box<dyn std::error::Error>>;

/// A response: status code, JSON body, `Warning` header values.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub code: u16,
    /// The body.
    pub body: Value,
    /// `Warning` headers.
    pub warnings: Vec<String>,
}

impl Reply {
    /// `(field, reason, message)` of each `details.causes[]` entry.
    pub fn causes(&self) -> Vec<(String, String, String)> {
        self.body["details"]["causes"]
            .as_array()
            .map(|c| {
                c.iter()
                    .map(|c| {
                        let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                        (s("field"), s("reason"), s("message"))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Sends a request with a JSON body (`Value::Null`: none).
pub async fn call(
    env: &TestEnv,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> Result<Reply, Box<dyn std::error::Error>> {
    call_as(&env.client(), method, path, content_type, body).await
}

/// Sends a request with a body of raw bytes.
pub async fn call_raw(
    env: &TestEnv,
    method: &str,
    path: &str,
    content_type: &str,
    bytes: Vec<u8>,
) -> Result<Reply, Box<dyn std::error::Error>> {
    send(&env.client(), build(method, path, content_type, bytes)?).await
}

/// Sends a request with a JSON body (`Value::Null`: none) as the user of `client`.
pub async fn call_as(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: &str,
    body: &Value,
) -> Result<Reply, Box<dyn std::error::Error>> {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(body)?
    };
    send(client, build(method, path, content_type, bytes)?).await
}

fn build(
    method: &str,
    path: &str,
    content_type: &str,
    bytes: Vec<u8>,
) -> Result<http::Request<kube::client::Body>, http::Error> {
    http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(kube::client::Body::from(bytes))
}

async fn send(
    client: &kube::Client,
    request: http::Request<kube::client::Body>,
) -> Result<Reply, Box<dyn std::error::Error>> {
    let response = client.send(request).await?;
    let code = response.status().as_u16();
    let warnings = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|h| h.to_str().ok().map(String::from))
        .collect();
    let bytes = response.into_body().collect().await?.to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Ok(Reply { code, body, warnings })
}

/// POST.
pub async fn create(env: &TestEnv, path: &str, body: &Value) -> Result<Reply, Box<dyn std::error::Error>> {
    call(env, "POST", path, "application/json", body).await
}

/// GET.
pub async fn get(env: &TestEnv, path: &str) -> Result<Reply, Box<dyn std::error::Error>> {
    call(env, "GET", path, "application/json", &Value::Null).await
}

/// PUT.
pub async fn put(env: &TestEnv, path: &str, body: &Value) -> Result<Reply, Box<dyn std::error::Error>> {
    call(env, "PUT", path, "application/json", body).await
}

/// A JSON merge patch.
pub async fn merge(env: &TestEnv, path: &str, body: &Value) -> Result<Reply, Box<dyn std::error::Error>> {
    call(env, "PATCH", path, "application/merge-patch+json", body).await
}

/// Fails with the reply when its code is not `code`.
pub fn expect(reply: &Reply, code: u16) -> Result<(), String> {
    if reply.code == code {
        Ok(())
    } else {
        Err(format!("expected {code}, got {reply:#?}"))
    }
}
