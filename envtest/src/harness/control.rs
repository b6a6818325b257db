//! The control endpoint of a standalone server (`envtest-server`): what
//! [`TestEnv::faults`] and [`TestEnv::restart_after`] do, over plain HTTP on a loopback
//! address, for tests that run the server as a separate process. Every request needs the
//! admin's bearer token (the one in the admin kubeconfig).
//!
//! | request | effect |
//! |---|---|
//! | `POST /faults/latency?duration=500ms` | latency before every request (`0s` to stop) |
//! | `POST /faults/fail?verb=list&resource=machines&code=503&times=3` | injected errors (`verb`, `resource`, `times` optional) |
//! | `POST /faults/drop-watches` | closes every watch |
//! | `POST /faults/expire-watches` | forgets the history, every watch gets 410 |
//! | `POST /faults/clear` | removes injected errors and latency |
//! | `POST /restart?downtime=1s` | closes every connection, refuses new ones for `downtime`, serves again |
//!
//! Each answers `200 ok`; a bad request gets 400 with the reason, a missing or wrong
//! token 401.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

use super::{ADMIN, TestEnv};

/// Serves the control endpoint for `env` on `listener` until the process ends.
pub fn serve(listener: TcpListener, env: Arc<Mutex<TestEnv>>, token: String) -> tokio::task::JoinHandle<()> {
    let token = Arc::new(token);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                // Out of descriptors: the API listener's own back-off covers the load.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            };
            let env = env.clone();
            let token = token.clone();
            let service = service_fn(move |request| {
                let env = env.clone();
                let token = token.clone();
                async move { Ok::<_, Infallible>(handle(&env, &token, &request).await) }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(10))
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
        }
    })
}

/// The admin token of `env` (what the control endpoint asks for).
pub fn admin_token(env: &TestEnv) -> String {
    env.token(ADMIN).unwrap_or_default().to_owned()
}

/// Binds the control endpoint.
pub async fn bind(address: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(address).await
}

async fn handle(env: &Mutex<TestEnv>, token: &str, request: &Request<Incoming>) -> Response<Full<Bytes>> {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "));
    if presented != Some(token) {
        return reply(StatusCode::UNAUTHORIZED, "Unauthorized\n".into());
    }
    if request.method() != Method::POST {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "use POST\n".into());
    }
    let params: HashMap<String, String> = request
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (p.to_owned(), String::new()),
        })
        .collect();
    match act(env, request.uri().path(), &params).await {
        Ok(()) => reply(StatusCode::OK, "ok\n".into()),
        Err((status, message)) => reply(status, format!("{message}\n")),
    }
}

async fn act(
    env: &Mutex<TestEnv>,
    path: &str,
    params: &HashMap<String, String>,
) -> Result<(), (StatusCode, String)> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    match path {
        "/faults/latency" => {
            let duration = parse_duration(params.get("duration").map(String::as_str).unwrap_or_default())
                .map_err(bad)?;
            env.lock().await.faults().set_latency(duration);
        }
        "/faults/fail" => {
            let code = params
                .get("code")
                .and_then(|c| c.parse::<u16>().ok())
                .filter(|c| (400..600).contains(c))
                .ok_or_else(|| bad("code: an HTTP error status (400-599) is required".into()))?;
            let times = match params.get("times") {
                Some(t) => Some(
                    t.parse::<usize>()
                        .map_err(|_| bad(format!("times: {t:?} is not a count")))?,
                ),
                None => None,
            };
            let verb = params.get("verb").map(String::as_str).filter(|v| !v.is_empty());
            let resource = params
                .get("resource")
                .map(String::as_str)
                .filter(|r| !r.is_empty());
            env.lock().await.faults().fail(verb, resource, code, times);
        }
        "/faults/drop-watches" => env.lock().await.faults().drop_watches(),
        "/faults/expire-watches" => env.lock().await.faults().expire_watches(),
        "/faults/clear" => env.lock().await.faults().clear(),
        "/restart" => {
            let downtime = match params.get("downtime") {
                Some(d) => parse_duration(d).map_err(bad)?,
                None => Duration::ZERO,
            };
            env.lock()
                .await
                .restart_after(downtime)
                .await
                .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
        }
        other => return Err((StatusCode::NOT_FOUND, format!("no control {other:?}"))),
    }
    Ok(())
}

/// `500ms`, `2s`, `1m`, `0` (a bare number is seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (500ms, 2s, 1m)"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => return Err(format!("{text:?}: unknown unit {unit:?} (ms, s, m)")),
    };
    Duration::try_from_secs_f64(seconds).map_err(|e| format!("{text:?}: {e}"))
}

fn reply(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_the_command_line_s() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("1h").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
