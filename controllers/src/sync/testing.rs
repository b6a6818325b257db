//! A client for the hooks' unit tests: it records every request and answers without an
//! API server, so that a row whose outcome is a write can be tested as a pure step.

use std::sync::{Arc, Mutex};

use http::{Request, Response};
use kube::Client;
use kube::client::Body;
use sync_core::{Caches, Namespaces, SyncConfig, SyncContext, SyncController, SyncPair};

/// One request: method, path and query, and body.
#[derive(Clone, Debug)]
pub struct Sent {
    pub method: String,
    pub uri: String,
    pub body: serde_json::Value,
}

/// What the client sent so far.
pub type Requests = Arc<Mutex<Vec<Sent>>>;

/// A client that records every request and answers 200: a status write with `object`
/// (what the server holds), anything else with the request's own body (an Event as
/// created).
pub fn recording_client(object: serde_json::Value) -> (Client, Requests) {
    let requests = Requests::default();
    let seen = requests.clone();
    let service = tower::service_fn(move |request: Request<Body>| {
        let (seen, object) = (seen.clone(), object.clone());
        async move {
            let method = request.method().to_string();
            let uri = request.uri().to_string();
            let body = request.into_body().collect_bytes().await.unwrap_or_default();
            let answer = if request_is_status(&uri) {
                serde_json::to_vec(&object).unwrap_or_default()
            } else {
                body.to_vec()
            };
            if let Ok(mut seen) = seen.lock() {
                let body = serde_json::from_slice(&body).unwrap_or_default();
                seen.push(Sent { method, uri, body });
            }
            Response::builder().status(200).body(Body::from(answer))
        }
    });
    (Client::new(service, "default"), requests)
}

fn request_is_status(uri: &str) -> bool {
    uri.split('?')
        .next()
        .is_some_and(|path| path.ends_with("/status"))
}

/// A hook's context on `client`, with empty caches.
pub fn context<P: SyncPair>(client: Client, namespaces: Namespaces) -> SyncContext<P> {
    let config = SyncConfig {
        namespaces: namespaces.clone(),
        ..SyncConfig::default()
    };
    let caches: Caches<P> = SyncController::<P>::new(client.clone(), config).caches();
    let reporter = kube::runtime::events::Reporter {
        controller: P::NAME.into(),
        instance: None,
    };
    SyncContext {
        controller: P::NAME,
        recorder: sync_core::events::Recorder::new(client.clone(), reporter),
        client,
        namespaces,
        caches,
        infra: None,
        infra_refs: None,
    }
}
