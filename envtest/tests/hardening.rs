//! The envtest server's security edges, as kube-apiserver handles them: plain HTTP on
//! the HTTPS port, connections that never finish TLS or never send a request, RBAC
//! escalation through Roles and bindings, expensive or invalid YAML bodies, and a history
//! bounded by bytes.

use std::sync::Arc;
use std::time::Duration;

use envtest::TestEnv;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{Api, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::{Client, Error};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

/// How long any wait of these tests may take.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Reads until the server closes the connection (EOF or reset); `Err` on timeout.
async fn closed_by_server<S: AsyncReadExt + Unpin>(stream: &mut S) -> Result<Vec<u8>, String> {
    let mut received = Vec::new();
    let read = tokio::time::timeout(TIMEOUT, async {
        let mut buffer = [0u8; 1024];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    match read {
        Ok(()) => Ok(received),
        Err(_) => Err(format!("the server kept the connection open for {TIMEOUT:?}")),
    }
}

#[tokio::test]
async fn plain_http_to_the_https_port_gets_the_go_server_s_400() -> TestResult {
    let env = TestEnv::start().await?;
    let mut tcp = TcpStream::connect(env.addr()).await?;
    tcp.write_all(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n").await?;
    let reply = closed_by_server(&mut tcp).await?;
    assert_eq!(
        String::from_utf8_lossy(&reply),
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    );
    Ok(())
}

#[tokio::test]
async fn a_tls_handshake_that_never_finishes_is_closed_after_the_header_timeout() -> TestResult {
    let env = TestEnv::builder()
        .header_timeout(Duration::from_millis(300))
        .start()
        .await?;
    let mut tcp = TcpStream::connect(env.addr()).await?;
    // The first bytes of a TLS record header, then nothing (slowloris).
    tcp.write_all(&[0x16, 0x03]).await?;
    closed_by_server(&mut tcp).await?;
    Ok(())
}

#[tokio::test]
async fn a_tls_connection_that_sends_no_request_is_closed_after_the_header_timeout() -> TestResult {
    let env = TestEnv::builder()
        .header_timeout(Duration::from_millis(300))
        .start()
        .await?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(env.ca_pem().as_bytes())?)?;
    let config =
        rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(env.addr()).await?;
    let mut tls = connector.connect(ServerName::try_from("localhost")?, tcp).await?;
    // Half a request head, then nothing.
    tls.write_all(b"GET /api HTTP/1.1\r\nHost: localhost\r\n").await?;
    closed_by_server(&mut tls).await?;
    // A client that does send its request is served meanwhile.
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env.client());
    assert!(namespaces.get("default").await.is_ok());
    Ok(())
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    let strings = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}

fn role(name: &str, rules: Vec<PolicyRule>) -> Role {
    Role {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        rules: Some(rules),
    }
}

fn binding(name: &str, role: &str, user: &str) -> RoleBinding {
    RoleBinding {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "Role".into(),
            name: role.into(),
        },
        subjects: Some(vec![Subject {
            kind: "User".into(),
            name: user.into(),
            api_group: Some("rbac.authorization.k8s.io".into()),
            namespace: None,
        }]),
    }
}

fn forbidden<T: std::fmt::Debug>(result: Result<T, Error>) -> String {
    match result {
        Err(Error::Api(status)) if status.code == 403 => status.message,
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
}

/// Gives `user` a Role `name` with `rules` in `ns` (as the admin).
async fn grant(admin: &Client, ns: &str, name: &str, user: &str, rules: Vec<PolicyRule>) -> TestResult {
    let pp = PostParams::default();
    Api::<Role>::namespaced(admin.clone(), ns)
        .create(&pp, &role(name, rules))
        .await?;
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(&pp, &binding(name, name, user))
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_user_cannot_grant_itself_permissions_it_does_not_hold() -> TestResult {
    const NS: &str = "team";
    let env = TestEnv::builder()
        .namespace(NS)
        .user("mallory", &[])
        .user("carol", &[])
        .start()
        .await?;
    let admin = env.client();
    let rbac_writer = rule(
        &["rbac.authorization.k8s.io"],
        &["roles", "rolebindings"],
        &["create", "update", "get"],
    );
    grant(&admin, NS, "rbac-writer", "mallory", vec![rbac_writer.clone()]).await?;
    let mallory = env.client_as("mallory").await?;
    let pp = PostParams::default();
    let roles: Api<Role> = Api::namespaced(mallory.clone(), NS);
    let bindings: Api<RoleBinding> = Api::namespaced(mallory.clone(), NS);

    // A Role granting what mallory does not hold: refused, with kube's message.
    let message = forbidden(
        roles
            .create(&pp, &role("steal", vec![rule(&[""], &["secrets"], &["*"])]))
            .await,
    );
    assert_eq!(
        message,
        "roles.rbac.authorization.k8s.io \"steal\" is forbidden: user \"mallory\" (groups=[\"system:authenticated\"]) \
         is attempting to grant RBAC permissions not currently held:\n\
         {APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"*\"]}"
    );
    // Binding herself to an existing Role she does not hold: refused.
    Api::<Role>::namespaced(admin.clone(), NS)
        .create(
            &pp,
            &role("secret-reader", vec![rule(&[""], &["secrets"], &["get", "list"])]),
        )
        .await?;
    let message = forbidden(
        bindings
            .create(&pp, &binding("steal", "secret-reader", "mallory"))
            .await,
    );
    assert!(
        message
            .starts_with("rolebindings.rbac.authorization.k8s.io \"steal\" is forbidden: user \"mallory\""),
        "{message}"
    );
    assert!(
        message.ends_with("{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\"]}"),
        "{message}"
    );
    // Neither write happened, and Secrets stay out of reach.
    assert!(
        Api::<Role>::namespaced(admin.clone(), NS)
            .get_opt("steal")
            .await?
            .is_none()
    );
    let secrets: Api<Secret> = Api::namespaced(mallory.clone(), NS);
    forbidden(secrets.list(&Default::default()).await);

    // What she holds she may pass on: a Role with a subset of her own rules.
    roles
        .create(
            &pp,
            &role(
                "writer-copy",
                vec![rule(&["rbac.authorization.k8s.io"], &["roles"], &["get"])],
            ),
        )
        .await?;
    // Updating a Role to grant more is refused as well.
    let mut copy = roles.get("writer-copy").await?;
    copy.rules = Some(vec![rule(&[""], &["configmaps"], &["get"])]);
    forbidden(roles.replace("writer-copy", &pp, &copy).await);

    // `escalate` and `bind` lift the checks, as in kube-apiserver.
    grant(
        &admin,
        NS,
        "carol-rbac",
        "carol",
        vec![
            rbac_writer,
            rule(&["rbac.authorization.k8s.io"], &["roles"], &["escalate", "bind"]),
        ],
    )
    .await?;
    let carol = env.client_as("carol").await?;
    Api::<Role>::namespaced(carol.clone(), NS)
        .create(
            &pp,
            &role("carol-secrets", vec![rule(&[""], &["secrets"], &["*"])]),
        )
        .await?;
    Api::<RoleBinding>::namespaced(carol.clone(), NS)
        .create(&pp, &binding("carol-secrets", "carol-secrets", "carol"))
        .await?;
    assert!(
        Api::<Secret>::namespaced(carol, NS)
            .list(&Default::default())
            .await
            .is_ok()
    );
    Ok(())
}

/// A raw request as the admin: (status, body).
async fn raw(
    env: &TestEnv,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
) -> Result<(u16, String), Box<dyn std::error::Error + Send + Sync>> {
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type)
        .body(kube::client::Body::from(body))?;
    let response = env.client().send(request).await?;
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

#[tokio::test]
async fn yaml_that_is_not_utf8_is_refused() -> TestResult {
    let env = TestEnv::start().await?;
    let body = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: latin1\ndata:\n  k: caf\xe9\n".to_vec();
    let (status, reply) = raw(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/yaml",
        body,
    )
    .await?;
    assert_eq!(status, 400, "{reply}");
    assert!(
        reply.contains("error converting YAML to JSON: yaml: invalid leading UTF-8 octet"),
        "{reply}"
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    assert!(
        configmaps.get_opt("latin1").await?.is_none(),
        "nothing was stored"
    );
    let fine =
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: utf8\ndata:\n  k: caf\xc3\xa9\n".to_vec();
    let (status, reply) = raw(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/yaml",
        fine,
    )
    .await?;
    assert_eq!(status, 201, "{reply}");
    let stored = configmaps.get("utf8").await?;
    assert_eq!(
        stored.data.and_then(|d| d.get("k").cloned()).as_deref(),
        Some("café")
    );
    Ok(())
}

/// An alias bomb: each level repeats the previous one nine times.
fn alias_bomb(levels: usize) -> Vec<u8> {
    let mut yaml = String::from(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nl0: &l0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for level in 1..=levels {
        let previous = format!("*l{}", level - 1);
        let items = [previous.as_str(); 9].join(",");
        yaml.push_str(&format!("l{level}: &l{level} [{items}]\n"));
    }
    yaml.into_bytes()
}

/// Expensive YAML runs off the async workers: with a bomb per worker in flight, a health
/// check is answered before any of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expensive_yaml_does_not_stall_other_requests() -> TestResult {
    let env = Arc::new(TestEnv::start().await?);
    let mut bombs = tokio::task::JoinSet::new();
    for _ in 0..2 {
        let env = env.clone();
        bombs.spawn(async move {
            raw(
                &env,
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/yaml",
                alias_bomb(7),
            )
            .await
            .map(|(status, _)| status)
            .unwrap_or(0)
        });
    }
    // Wait until the bombs are being decoded.
    tokio::time::timeout(TIMEOUT, async {
        while envtest::http::yaml::in_flight() == 0 {
            tokio::task::yield_now().await;
        }
    })
    .await?;
    let (status, _) = raw(&env, "GET", "/healthz", "application/json", Vec::new()).await?;
    assert_eq!(status, 200);
    assert!(
        bombs.try_join_next().is_none(),
        "the health check was answered only after a YAML conversion finished"
    );
    while let Some(status) = bombs.join_next().await {
        assert_eq!(status?, 400, "the bomb is refused");
    }
    Ok(())
}

#[tokio::test]
async fn the_history_is_bounded_by_bytes() -> TestResult {
    const PAYLOAD: usize = 64 * 1024;
    let env = TestEnv::builder().history_bytes(1024 * 1024).start().await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let start = env.resource_version().to_string();
    let mut cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("big".into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    for i in 0..40 {
        cm.data = Some([("blob".to_owned(), format!("{i}{}", "x".repeat(PAYLOAD)))].into());
        cm.metadata.resource_version = None;
        if i == 0 {
            configmaps.create(&PostParams::default(), &cm).await?;
        } else {
            configmaps.replace("big", &PostParams::default(), &cm).await?;
        }
    }
    let retained = env.shared().store.read().log_bytes;
    assert!(retained <= 1024 * 1024, "{retained} bytes retained");
    // A watch from before the retained history must relist, as after etcd's compaction.
    let mut events = configmaps.watch(&WatchParams::default(), &start).await?.boxed();
    use futures::StreamExt;
    match tokio::time::timeout(TIMEOUT, events.next()).await? {
        Some(Ok(WatchEvent::Error(status))) => assert_eq!(status.code, 410),
        other => panic!("expected 410 Expired, got {other:?}"),
    }
    Ok(())
}

/// Events are one resource seen through two APIs: what a controller records through
/// `events.k8s.io/v1` is listed (and watched) through `core/v1`, with kube's field mapping,
/// and the other way round.
#[tokio::test]
async fn events_of_both_apis_are_one_resource() -> TestResult {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event as NewEvent;
    let env = TestEnv::start().await?;
    let core: Api<CoreEvent> = Api::namespaced(env.client(), "default");
    let new: Api<NewEvent> = Api::namespaced(env.client(), "default");
    let start = env.resource_version().to_string();
    let recorded: NewEvent = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "synced.1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "regarding": {"kind": "Machine", "name": "m1", "namespace": "default"},
        "note": "mirrored", "reason": "Synced", "type": "Normal", "action": "Sync",
        "reportingController": "machine-sync", "reportingInstance": "pod-1"
    }))?;
    new.create(&PostParams::default(), &recorded).await?;

    let listed = core.list(&Default::default()).await?;
    assert_eq!(listed.items.len(), 1, "kubectl get events shows it");
    let seen = &listed.items[0];
    assert_eq!(seen.involved_object.name.as_deref(), Some("m1"));
    assert_eq!(seen.message.as_deref(), Some("mirrored"));
    assert_eq!(seen.reporting_component.as_deref(), Some("machine-sync"));
    let by_field = core
        .list(&kube::api::ListParams::default().fields("involvedObject.name=m1"))
        .await?;
    assert_eq!(by_field.items.len(), 1);
    let by_new_field = new
        .list(&kube::api::ListParams::default().fields("regarding.name=m1"))
        .await?;
    assert_eq!(by_new_field.items.len(), 1);
    assert_eq!(by_new_field.items[0].note.as_deref(), Some("mirrored"));

    // A core/v1 Event (client-go's old recorder) is an events.k8s.io one too.
    let old_style: CoreEvent = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "old.1"},
        "involvedObject": {"kind": "Machine", "name": "m2", "namespace": "default"},
        "message": "legacy", "reason": "Old", "type": "Warning", "count": 4,
        "source": {"component": "legacy-controller"}
    }))?;
    core.create(&PostParams::default(), &old_style).await?;
    let converted = new.get("old.1").await?;
    assert_eq!(converted.regarding.and_then(|r| r.name).as_deref(), Some("m2"));
    assert_eq!(converted.note.as_deref(), Some("legacy"));
    assert_eq!(converted.deprecated_count, Some(4));
    assert_eq!(
        converted.deprecated_source.and_then(|s| s.component).as_deref(),
        Some("legacy-controller")
    );

    // Watches of either API see both writes.
    use futures::StreamExt;
    let mut watched = core.watch(&WatchParams::default(), &start).await?.boxed();
    let mut names = Vec::new();
    while names.len() < 2 {
        match tokio::time::timeout(TIMEOUT, watched.next()).await? {
            Some(Ok(WatchEvent::Added(event))) => names.push(event.metadata.name.unwrap_or_default()),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(names, ["synced.1", "old.1"]);
    Ok(())
}
