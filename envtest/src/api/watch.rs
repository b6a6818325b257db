//! Watch streams: initial events, resume from a resourceVersion, selector transitions,
//! bookmarks, timeouts and 410 Expired.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api::Shared;
use crate::api::faults::WatchFault;
use crate::api::response::Body;
use crate::api::view::View;
use crate::meta::errors::{ApiError, ApiResult};
use crate::meta::selectors::{FieldSelector, LabelSelector};
use crate::objects;
use crate::resources::ResourceInfo;
use crate::storage::encode;
use crate::storage::store::{Event, EventType};

/// Everything a watch needs.
pub struct WatchRequest<'a> {
    /// Server state.
    pub shared: Arc<Shared>,
    /// The watched resource.
    pub info: Arc<ResourceInfo>,
    /// Namespace filter.
    pub namespace: Option<String>,
    /// Label selector.
    pub labels: LabelSelector,
    /// Field selector.
    pub fields: FieldSelector,
    /// Query parameters.
    pub params: &'a HashMap<String, String>,
    /// How objects are shown.
    pub view: View,
}

struct Filter {
    key: Arc<str>,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, object: &Value) -> bool {
        if let Some(ns) = &self.namespace
            && object["metadata"]["namespace"].as_str() != Some(ns.as_str())
        {
            return false;
        }
        self.labels.matches(object) && self.fields.matches(object)
    }

    fn classify(&self, event: &Event) -> Option<&'static str> {
        if *event.key != *self.key {
            return None;
        }
        if let Some(ns) = &self.namespace
            && *event.namespace != **ns
        {
            return None;
        }
        let now = self.labels.matches(&event.object) && self.fields.matches(&event.object);
        match event.kind {
            EventType::Added => now.then_some("ADDED"),
            EventType::Deleted => now.then_some("DELETED"),
            EventType::Modified => {
                let before = event
                    .old
                    .as_ref()
                    .is_some_and(|o| self.labels.matches(o) && self.fields.matches(o));
                match (before, now) {
                    (true, true) => Some("MODIFIED"),
                    (false, true) => Some("ADDED"),
                    (true, false) => Some("DELETED"),
                    (false, false) => None,
                }
            }
        }
    }
}

fn line(kind: &str, object: &Value) -> Bytes {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    if serde_json::to_writer(&mut out, object).is_err() {
        out.extend_from_slice(b"null");
    }
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

fn expired_line(wanted: u64, oldest: u64) -> Bytes {
    let error = ApiError::expired(format!("too old resource version: {wanted} ({oldest})"));
    line("ERROR", &error.to_status())
}

fn bookmark(info: &ResourceInfo, view: View, rv: u64, initial_end: bool) -> Bytes {
    let mut metadata = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let (kind, api_version) = view.object_type(&info.kind, info.api_version());
    line(
        "BOOKMARK",
        &json!({"kind": kind, "apiVersion": api_version, "metadata": metadata}),
    )
}

/// A Table watch's columns and `includeObject`.
type TableView = (crate::api::table::Table, crate::api::table::Include);

/// Shows one watched object: as the view does, or (Table watches) as a one-row Table whose
/// column definitions only the first event carries, as kube-apiserver's watch encoder.
fn show(view: View, table: Option<&TableView>, headers: &mut bool, object: Value) -> Value {
    match (view, table) {
        (View::Table(version), Some((table, include))) => {
            let mut metadata = serde_json::Map::new();
            metadata.insert(
                "resourceVersion".into(),
                object["metadata"]["resourceVersion"].clone(),
            );
            let mut rendered = table.render(&[object], metadata, *include, version);
            let first = std::mem::replace(headers, false);
            if !first && let Some(map) = rendered.as_object_mut() {
                map.insert("columnDefinitions".into(), Value::Null);
            }
            rendered
        }
        _ => view.object(object),
    }
}

/// One watched object, from the JSON cache when it is shown exactly as stored (every
/// watcher of an event then shares one serialization).
fn item(
    shared: &Shared,
    info: &ResourceInfo,
    view: View,
    table: Option<&TableView>,
    headers: &mut bool,
    object: &Arc<Value>,
) -> encode::Item {
    let presented = objects::present(info, object);
    if view == View::Object && Arc::ptr_eq(&presented, object) {
        return encode::Item::Json(shared.store.json().get(object));
    }
    encode::Item::Value(show(view, table, headers, presented.as_ref().clone()))
}

fn flag(params: &HashMap<String, String>, name: &str) -> bool {
    params.get(name).is_some_and(|v| v == "true" || v == "1")
}

/// Validates the request, takes the initial snapshot and starts streaming.
pub fn start(request: WatchRequest<'_>) -> ApiResult<Response<Body>> {
    let params = request.params;
    let info = request.info;
    let view = request.view;
    let table: Option<TableView> = match view {
        View::Table(_) => Some((
            crate::api::table::Table::for_resource(&request.shared.store.read(), &info)?,
            crate::api::table::Include::parse(params.get("includeObject").map(String::as_str))?,
        )),
        _ => None,
    };
    let send_initial = flag(params, "sendInitialEvents");
    let bookmarks = flag(params, "allowWatchBookmarks");
    let rv_param = params.get("resourceVersion").cloned().unwrap_or_default();
    let rv_match = params.get("resourceVersionMatch").cloned().unwrap_or_default();
    if send_initial && rv_match != "NotOlderThan" {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![crate::meta::errors::forbidden_field(
                "resourceVersionMatch",
                "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            )],
        ));
    }
    if !send_initial && !rv_match.is_empty() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![crate::meta::errors::forbidden_field(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )],
        ));
    }
    let timeout = match params.get("timeoutSeconds").map(String::as_str) {
        None | Some("") => Duration::from_secs(1800),
        Some(t) => Duration::from_secs(
            t.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t}")))?
                .clamp(0, 864_000) as u64,
        ),
    };
    let resume: Option<u64> = match rv_param.as_str() {
        "" | "0" => None,
        rv => Some(
            rv.parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
        ),
    };
    let filter = Filter {
        key: info.storage_key().into(),
        namespace: request.namespace,
        labels: request.labels,
        fields: request.fields,
    };
    let shared = request.shared;
    // Subscribe before the snapshot so that no write is missed.
    let mut changes = shared.store.subscribe();
    let mut faults = shared.faults.watch_signal.subscribe();
    faults.borrow_and_update();
    let mut shutdown = shared.shutdown.subscribe();
    shutdown.borrow_and_update();
    let (initial, start_rv, expired) = {
        let state = shared.store.read();
        match resume {
            Some(rv) if !send_initial => {
                let expired = (rv < state.compacted).then_some(state.compacted + 1);
                (Vec::new(), rv, expired)
            }
            _ => {
                let objects: Vec<Arc<Value>> = state
                    .collections
                    .get(&*filter.key)
                    .map(|c| c.values().filter(|o| filter.matches(o)).cloned().collect())
                    .unwrap_or_default();
                (objects, state.rv, None)
            }
        }
    };
    let (tx, rx) = mpsc::channel::<Bytes>(512);
    let bookmark_interval = shared.bookmark_interval;
    tokio::spawn(async move {
        if let Some(oldest) = expired {
            let _ = tx.send(expired_line(start_rv, oldest)).await;
            return;
        }
        let mut headers = true;
        for object in &initial {
            let item = item(&shared, &info, view, table.as_ref(), &mut headers, object);
            if tx.send(encode::watch_line("ADDED", &item)).await.is_err() {
                return;
            }
        }
        drop(initial);
        if send_initial && tx.send(bookmark(&info, view, start_rv, true)).await.is_err() {
            return;
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut ticker = tokio::time::interval(bookmark_interval.max(Duration::from_millis(10)));
        ticker.tick().await;
        let mut position = start_rv;
        loop {
            changes.borrow_and_update();
            let events = shared.store.read().events_after(position);
            match events {
                Err(oldest) => {
                    let _ = tx.send(expired_line(position, oldest)).await;
                    return;
                }
                Ok(events) => {
                    for event in events {
                        position = event.rv;
                        if let Some(kind) = filter.classify(&event) {
                            let item =
                                item(&shared, &info, view, table.as_ref(), &mut headers, &event.object);
                            if tx.send(encode::watch_line(kind, &item)).await.is_err() {
                                return;
                            }
                        }
                    }
                }
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                changed = faults.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let (_, fault) = *faults.borrow_and_update();
                    match fault {
                        WatchFault::Drop => return,
                        WatchFault::Expire => {
                            let oldest = shared.store.read().compacted + 1;
                            let _ = tx.send(expired_line(position, oldest)).await;
                            return;
                        }
                        WatchFault::None => {}
                    }
                }
                _ = shutdown.changed() => return,
                _ = &mut deadline => return,
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(bookmark(&info, view, position, false)).await.is_err() {
                        return;
                    }
                }
                _ = tx.closed() => return,
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, std::convert::Infallible>(Frame::data(bytes)), rx))
    });
    let mut response = Response::new(StreamBody::new(stream).boxed_unsync());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}
