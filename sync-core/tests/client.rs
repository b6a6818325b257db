//! `sync_core::client::client`: kube's client stack over connections whose read buffers
//! stop at `READ_BUFFER_MAX`. Through envtest's TLS and token authentication it lists
//! pages and objects larger than the bound, writes and watches; against a bare HTTP
//! server, a response head four times the bound is refused where kube's own client reads
//! it.

use std::time::Duration;

use envtest::TestEnv;
use futures::TryStreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;
use sync_core::client::{READ_BUFFER_MAX, client, from_kubeconfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const WAIT: Duration = Duration::from_secs(20);

/// A ConfigMap whose one value is `size` bytes of its name's first letter.
fn config_map(name: &str, size: usize) -> Result<ConfigMap, serde_json::Error> {
    let value = name[..1].repeat(size);
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"value": value}}))
}

#[tokio::test]
async fn lists_writes_and_watches_objects_larger_than_the_buffer() -> TestResult {
    let env = TestEnv::start().await?;
    let api: Api<ConfigMap> = Api::namespaced(from_kubeconfig(&env.kubeconfig()).await?, "default");
    let size = READ_BUFFER_MAX + 7_000;
    for i in 0..12 {
        api.create(&PostParams::default(), &config_map(&format!("m{i:02}"), size)?)
            .await?;
    }

    let (mut names, mut page) = (Vec::new(), ListParams::default().limit(5));
    loop {
        let list = api.list(&page).await?;
        for map in &list.items {
            let value = map.data.as_ref().and_then(|data| data.get("value"));
            assert_eq!(value.map(String::len), Some(size), "{:?}", map.metadata.name);
            names.extend(map.metadata.name.clone());
        }
        match list.metadata.continue_.filter(|token| !token.is_empty()) {
            Some(token) => page = page.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(names, (0..12).map(|i| format!("m{i:02}")).collect::<Vec<_>>());

    let version = api
        .list_metadata(&ListParams::default())
        .await?
        .metadata
        .resource_version;
    let events = api
        .watch(&WatchParams::default(), &version.unwrap_or_default())
        .await?;
    let mut events = std::pin::pin!(events);
    api.create(&PostParams::default(), &config_map("w", 3 * size)?)
        .await?;
    let event = tokio::time::timeout(WAIT, events.try_next()).await??;
    let map = match event {
        Some(WatchEvent::Added(map)) => map,
        other => return Err(format!("expected the new ConfigMap added, got {other:?}").into()),
    };
    let value = map.data.as_ref().and_then(|data| data.get("value"));
    assert_eq!(value.map(String::len), Some(3 * size));
    assert_eq!(map.metadata.name.as_deref(), Some("w"));
    Ok(())
}

/// Answers every request on its own connection with 200, an empty ConfigMap list and a
/// header of `header_bytes` bytes; returns the server's URL.
async fn serve_with_header(header_bytes: usize) -> Result<String, std::io::Error> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut request = vec![0; 4096];
            if socket.read(&mut request).await.is_err() {
                continue;
            }
            let body = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}"#;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\nx-padding: {}\r\n\r\n",
                body.len(),
                "p".repeat(header_bytes)
            );
            let _ = socket.write_all(format!("{head}{body}").as_bytes()).await;
        }
    });
    Ok(url)
}

#[tokio::test]
async fn a_response_head_far_over_the_bound_is_refused_and_one_under_it_is_read() -> TestResult {
    let under = serve_with_header(READ_BUFFER_MAX - 4096).await?;
    let config = kube::Config::new(under.parse()?);
    let listed = Api::<ConfigMap>::namespaced(client(config)?, "default")
        .list(&ListParams::default())
        .await?;
    assert!(listed.items.is_empty());

    // hyper checks the bound between reads, so a head only just over it may complete in
    // the read that crosses it; one four times the bound cannot.
    let over = serve_with_header(4 * READ_BUFFER_MAX).await?;
    let config = kube::Config::new(over.parse()?);
    let refused = Api::<ConfigMap>::namespaced(client(config.clone())?, "default")
        .list(&ListParams::default())
        .await;
    let error = refused.err().map(|e| format!("{e:?}")).unwrap_or_default();
    assert!(
        error.contains("TooLarge") || error.contains("too large"),
        "{error}"
    );

    let unbounded = kube::Client::try_from(config)?;
    let listed = Api::<ConfigMap>::namespaced(unbounded, "default")
        .list(&ListParams::default())
        .await?;
    assert!(listed.items.is_empty(), "kube's own client reads the same head");
    Ok(())
}
