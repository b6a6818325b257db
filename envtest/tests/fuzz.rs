//! A bounded property test of the envtest request handler: arbitrary methods, paths, query
//! strings, headers and bodies (random bytes, random JSON, object-shaped JSON, patches,
//! protobuf envelopes) go straight into `handler::handle`; it must never panic and must
//! always answer a well-formed HTTP response, with a `metav1.Status` body for every error.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use envtest::api::Shared;
use envtest::http::handler::handle;
use envtest::http::request::{query, route};
use envtest::{ADMIN, TestEnv};
use http::{Method, Request, header};
use http_body_util::{BodyExt, Full};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

/// One generated request.
#[derive(Debug, Clone)]
struct Case {
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    token: Option<String>,
    content_type: Option<String>,
    accept: Option<String>,
    body: Vec<u8>,
}

fn pick(options: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(options).prop_map(String::from)
}

/// Short strings with the characters that break parsers (`%`, `/`, `,`, `=`, quotes, …).
fn nasty() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9.-]{0,12}",
        "[%/,=!()&+ a-zA-Z0-9]{0,12}",
        "\\PC{0,10}",
        pick(&[
            "",
            ".",
            "..",
            "%",
            "%zz",
            "%2F",
            "a%20b",
            "-1",
            "0",
            "9999999999999999999999"
        ]),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => pick(&[
            "api", "apis", "v1", "v1beta1", "v1beta2", "namespaces", "default", "kube-system",
            "configmaps", "secrets", "events", "leases", "serviceaccounts", "roles",
            "clusterroles", "customresourcedefinitions", "status", "scale", "finalize",
            "machines", "machinesets", "machine.openshift.io", "cluster.x-k8s.io",
            "apiextensions.k8s.io", "coordination.k8s.io", "rbac.authorization.k8s.io",
            "events.k8s.io", "a", "b", "version", "healthz", "openapi", "v2", "v3",
        ]),
        1 => nasty(),
    ]
}

/// Served resources: (path prefix, plural, namespaced, apiVersion, kind).
const RESOURCES: &[(&str, &str, bool, &str, &str)] = &[
    ("/api/v1", "configmaps", true, "v1", "ConfigMap"),
    ("/api/v1", "secrets", true, "v1", "Secret"),
    ("/api/v1", "namespaces", false, "v1", "Namespace"),
    (
        "/apis/coordination.k8s.io/v1",
        "leases",
        true,
        "coordination.k8s.io/v1",
        "Lease",
    ),
    (
        "/apis/events.k8s.io/v1",
        "events",
        true,
        "events.k8s.io/v1",
        "Event",
    ),
    (
        "/apis/rbac.authorization.k8s.io/v1",
        "clusterroles",
        false,
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
    ),
    (
        "/apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        false,
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
    ),
    (
        "/apis/machine.openshift.io/v1beta1",
        "machinesets",
        true,
        "machine.openshift.io/v1beta1",
        "MachineSet",
    ),
    (
        "/apis/machine.openshift.io/v1beta1",
        "machines",
        true,
        "machine.openshift.io/v1beta1",
        "Machine",
    ),
    (
        "/apis/cluster.x-k8s.io/v1beta2",
        "machinesets",
        true,
        "cluster.x-k8s.io/v1beta2",
        "MachineSet",
    ),
];

/// A path of a served resource (collection, object or subresource) and the
/// `(apiVersion, kind)` it serves.
fn resource_path() -> impl Strategy<Value = (String, (&'static str, &'static str))> {
    (
        proptest::sample::select(RESOURCES),
        prop_oneof![4 => pick(&["default", "x"]), 1 => pick(&["missing", "UPPER", ""])],
        any::<bool>(),
        proptest::option::of(pick(&[
            "a",
            "b",
            "a",
            "b",
            "machinesets.machine.openshift.io",
            "UPPER",
            "x",
        ])),
        prop_oneof![6 => Just(None), 1 => pick(&["status", "scale", "finalize", "exec"]).prop_map(Some)],
    )
        .prop_map(
            |((prefix, plural, namespaced, api_version, kind), ns, all_namespaces, name, sub)| {
                let mut path = prefix.to_owned();
                if namespaced && !(all_namespaces && name.is_none()) {
                    path.push_str(&format!("/namespaces/{ns}"));
                }
                path.push_str(&format!("/{plural}"));
                if let Some(name) = name {
                    path.push_str(&format!("/{name}"));
                    if let Some(sub) = sub {
                        path.push_str(&format!("/{sub}"));
                    }
                }
                (path, (api_version, kind))
            },
        )
}

fn query_pairs() -> impl Strategy<Value = Vec<(String, String)>> {
    let key = prop_oneof![
        4 => pick(&[
            "watch", "labelSelector", "fieldSelector", "limit", "continue", "resourceVersion",
            "resourceVersionMatch", "timeoutSeconds", "dryRun", "fieldManager",
            "sendInitialEvents", "allowWatchBookmarks", "propagationPolicy", "fieldValidation",
            "force", "pretty",
        ]),
        1 => nasty(),
    ];
    let value = prop_oneof![
        2 => pick(&[
            "", "true", "false", "1", "0", "All", "Exact", "NotOlderThan", "x", "-1", "2",
            "a=b", "a!=b", "a in (b,c)", "!a", "a,b", "a in (b", "metadata.name=a",
            "metadata.namespace!=default", "spec.x=y", "eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==",
            "18446744073709551616", "Strict", "Ignore",
        ]),
        1 => nasty(),
    ];
    vec((key, value), 0..5)
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        nasty().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        let key = prop_oneof![
            pick(&[
                "apiVersion",
                "kind",
                "metadata",
                "name",
                "namespace",
                "labels",
                "annotations",
                "spec",
                "status",
                "data",
                "finalizers",
                "resourceVersion",
                "generateName",
                "uid",
                "deletionTimestamp",
                "replicas",
                "preconditions",
                "dryRun",
                "op",
                "path",
                "value",
                "from",
                "$patch",
                "versions",
                "group",
                "names",
                "plural",
                "scope",
                "served",
                "storage",
                "ownerReferences",
            ]),
            nasty(),
        ];
        prop_oneof![
            vec(inner.clone(), 0..5).prop_map(Value::Array),
            btree_map(key, inner, 0..6).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// JSON shaped like a Kubernetes object, with random parts.
fn object_json(typ: (&'static str, &'static str)) -> impl Strategy<Value = Value> {
    (
        prop_oneof![4 => Just(typ.0.to_owned()), 1 => pick(&["v1", "x/v1", "", "autoscaling/v1"])],
        prop_oneof![4 => Just(typ.1.to_owned()), 1 => pick(&["ConfigMap", "Scale", "Lease", ""])],
        pick(&["a", "b", "UPPER", "", "x.y", "machinesets.machine.openshift.io"]),
        json_value(),
        json_value(),
        proptest::option::of(pick(&["1", "2", "x", ""])),
        any::<bool>(),
    )
        .prop_map(|(api_version, kind, name, spec, labels, rv, finalizer)| {
            let mut object = json!({
                "apiVersion": api_version,
                "kind": kind,
                "metadata": {"name": name, "labels": labels},
                "spec": spec,
                "data": {"k": "v"},
            });
            if let Some(rv) = rv {
                object["metadata"]["resourceVersion"] = json!(rv);
            }
            if finalizer {
                object["metadata"]["finalizers"] = json!(["example.com/f"]);
            }
            object
        })
}

fn json_patch() -> impl Strategy<Value = Value> {
    vec(
        (
            pick(&["add", "remove", "replace", "move", "copy", "test", "bogus"]),
            pick(&[
                "/data/k",
                "/metadata/labels/a",
                "/spec",
                "/metadata/finalizers",
                "",
                "/",
                "/x/y/z",
                "~",
                "/data/~1",
            ]),
            json_value(),
        )
            .prop_map(|(op, path, value)| json!({"op": op, "path": path, "value": value, "from": "/data"})),
        0..4,
    )
    .prop_map(Value::Array)
}

fn body(typ: (&'static str, &'static str)) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => Just(Vec::new()),
        2 => vec(any::<u8>(), 0..64),
        3 => json_value().prop_map(|v| v.to_string().into_bytes()),
        6 => object_json(typ).prop_map(|v| v.to_string().into_bytes()),
        2 => json_patch().prop_map(|v| v.to_string().into_bytes()),
        // Protobuf: the magic followed by noise, or a real envelope with a noisy message.
        2 => vec(any::<u8>(), 0..48).prop_map(|rest| [&b"k8s\0"[..], &rest].concat()),
        2 => (
            pick(&["v1", "coordination.k8s.io/v1", "apiextensions.k8s.io/v1", ""]),
            pick(&["ConfigMap", "Secret", "Namespace", "Lease", "CustomResourceDefinition", "DeleteOptions", "Pod", ""]),
            vec(any::<u8>(), 0..48),
        )
            .prop_map(|(v, k, raw)| envtest::resources::protobuf::wrap(&v, &k, raw)),
    ]
}

fn case(token: String) -> impl Strategy<Value = Case> {
    let path = prop_oneof![
        5 => resource_path(),
        // Anything made of path segments.
        1 => vec(segment(), 0..8).prop_map(|s| (format!("/{}", s.join("/")), ("v1", "ConfigMap"))),
    ];
    path.prop_flat_map(move |(path, typ)| {
        (
            pick(&[
                "GET", "GET", "GET", "GET", "GET", "GET", "POST", "POST", "POST", "PUT", "PUT", "PUT",
                "PATCH", "PATCH", "PATCH", "DELETE", "DELETE", "DELETE", "HEAD", "OPTIONS", "BREW",
            ]),
            Just(path),
            query_pairs(),
            prop_oneof![12 => Just(Some(token.clone())), 1 => Just(None), 1 => nasty().prop_map(Some)],
            proptest::option::of(pick(&[
                "application/json",
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
                "application/merge-patch+json",
                "application/json-patch+json",
                "application/strategic-merge-patch+json",
                "application/apply-patch+yaml",
                "text/plain",
                "application/json; charset=utf-8",
                ";;",
                "",
            ])),
            prop_oneof![
                3 => Just(None),
                1 => pick(&[
                    "application/json", "*/*", "application/vnd.kubernetes.protobuf",
                    "application/vnd.kubernetes.protobuf,application/json",
                    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
                    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "text/html", ",,", "",
                ]).prop_map(Some),
            ],
            body(typ),
        )
    })
    .prop_map(|(method, path, query, token, content_type, accept, body)| Case {
        method: Method::from_bytes(method.as_bytes()).unwrap_or(Method::GET),
        path,
        query,
        token,
        content_type,
        accept,
        body,
    })
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn request(case: &Case) -> Option<Request<Full<Bytes>>> {
    // Path segments are sent as they are when they form a valid URI, else percent-encoded.
    let raw_path = if case.path.starts_with('/') {
        case.path.clone()
    } else {
        format!("/{}", case.path)
    };
    let path = if raw_path.parse::<http::Uri>().is_ok() {
        raw_path
    } else {
        raw_path.split('/').map(encode).collect::<Vec<_>>().join("/")
    };
    let query: Vec<String> = case
        .query
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect();
    let uri = if query.is_empty() {
        path
    } else {
        format!("{path}?{}", query.join("&"))
    };
    let mut builder = Request::builder().method(case.method.clone()).uri(uri);
    if let Some(token) = &case.token {
        builder = builder.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    if let Some(content_type) = &case.content_type {
        builder = builder.header(header::CONTENT_TYPE, content_type);
    }
    if let Some(accept) = &case.accept {
        builder = builder.header(header::ACCEPT, accept);
    }
    builder.body(Full::new(Bytes::from(case.body.clone()))).ok()
}

fn is_watch(case: &Case) -> bool {
    case.method == Method::GET
        && case
            .query
            .iter()
            .rev()
            .find(|(k, _)| k == "watch")
            .is_some_and(|(_, v)| v == "true" || v == "1")
}

/// Sends one request and checks the response.
async fn check(
    shared: Arc<Shared>,
    case: Case,
    seen: &Mutex<BTreeMap<u16, usize>>,
) -> Result<(), TestCaseError> {
    let Some(request) = request(&case) else {
        return Ok(());
    };
    let response = handle(shared, request).await;
    let status = response.status().as_u16();
    *seen
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(status)
        .or_default() += 1;
    prop_assert!((200..600).contains(&status), "status {status}");
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    prop_assert!(content_type.is_some(), "no Content-Type");
    if status < 300 && is_watch(&case) {
        // A stream: dropping it ends the watch.
        return Ok(());
    }
    let body = tokio::time::timeout(std::time::Duration::from_secs(10), response.into_body().collect())
        .await
        .map_err(|_| TestCaseError::fail("the body did not end"))?
        .map_err(|e| TestCaseError::fail(format!("body error: {e:?}")))?
        .to_bytes();
    if status >= 400 {
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| TestCaseError::fail(format!("error body is not JSON ({e}): {body:?}")))?;
        prop_assert_eq!(content_type.as_deref(), Some("application/json"));
        prop_assert_eq!(&value["kind"], "Status");
        prop_assert_eq!(&value["apiVersion"], "v1");
        prop_assert_eq!(&value["status"], "Failure");
        prop_assert_eq!(value["code"].as_u64(), Some(u64::from(status)));
        prop_assert!(
            value["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "no reason: {value}"
        );
        prop_assert!(value["message"].is_string(), "no message: {value}");
    } else if content_type.as_deref() == Some("application/json") && case.method != Method::HEAD {
        let parsed: Result<Value, _> = serde_json::from_slice(&body);
        prop_assert!(parsed.is_ok(), "2xx body is not JSON: {body:?}");
    }
    Ok(())
}

#[test]
fn handler_answers_every_request_with_a_well_formed_response() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let crds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds");
    let mut builder = TestEnv::builder().crd_dir(crds).namespace("x").namespace("a");
    for ns in ["default", "x"] {
        for (name, finalizers) in [("a", json!([])), ("b", json!(["example.com/f"]))] {
            let metadata =
                json!({"name": name, "namespace": ns, "labels": {"app": name}, "finalizers": finalizers});
            builder = builder
                .object(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"k": "v"}}))
                .object(json!({"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "data": {"k": "dg=="}}))
                .object(json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": {}}))
                .object(json!({"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "metadata": metadata, "spec": {"replicas": 1}}));
        }
    }
    let env = runtime.block_on(builder.start())?;
    let token = env.token(ADMIN).ok_or("no admin token")?.to_owned();
    let shared = env.shared();
    let seen = Mutex::new(BTreeMap::new());
    let mut runner = TestRunner::new(Config {
        cases: 1500,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case(token), |case| {
            runtime.block_on(check(shared.clone(), case, &seen))
        })
        .map_err(|e| e.to_string())?;
    // What the cases reached, by status code (shown with --nocapture).
    eprintln!(
        "responses by status: {:?}",
        seen.lock().unwrap_or_else(|e| e.into_inner())
    );
    drop(env);
    Ok(())
}

proptest! {
    #![proptest_config(Config { cases: 2048, failure_persistence: None, ..Config::default() })]

    /// Routing and query parsing are total.
    #[test]
    fn routing_and_query_parsing_never_panic(path in "\\PC{0,40}", raw in "\\PC{0,40}") {
        let _ = route(&path);
        let _ = query(Some(&raw));
    }
}
