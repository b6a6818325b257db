//! The standalone `envtest-server` as a separate process, as a cluster stand-in under
//! faults: users and ServiceAccounts with their own kubeconfigs, the control endpoint,
//! a restart after `kill -9` that keeps objects, resourceVersions, CA and tokens, and an
//! accept loop that survives the file-descriptor limit.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Error};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

type TestResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const TIMEOUT: Duration = Duration::from_secs(30);

/// A running `envtest-server` and what it printed before `ready`.
struct Server {
    child: Child,
    lines: Vec<String>,
}

impl Server {
    /// Starts the server with `args`, under `ulimit -n` when `fd_limit` is set.
    async fn start(args: &[String], fd_limit: Option<u32>) -> Result<Self, String> {
        let binary = env!("CARGO_BIN_EXE_envtest-server");
        let mut command = match fd_limit {
            Some(limit) => {
                let mut command = Command::new("sh");
                command.args(["-c", &format!("ulimit -n {limit} && exec \"$0\" \"$@\""), binary]);
                command
            }
            None => Command::new(binary),
        };
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| format!("starting envtest-server: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut reader = BufReader::new(stdout).lines();
        let mut lines = Vec::new();
        let ready = tokio::time::timeout(TIMEOUT, async {
            // `ready` first, then the kubeconfigs, the control endpoint last.
            while let Ok(Some(line)) = reader.next_line().await {
                let done = line.starts_with("control ");
                lines.push(line);
                if done {
                    return true;
                }
            }
            false
        })
        .await;
        if ready != Ok(true) {
            return Err(format!("envtest-server did not get ready: {lines:?}"));
        }
        // Keep draining stdout so the server never blocks on it.
        tokio::spawn(async move { while let Ok(Some(_)) = reader.next_line().await {} });
        Ok(Self { child, lines })
    }

    /// The value after `prefix` on a line of the output.
    fn printed(&self, prefix: &str) -> Option<String> {
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix(prefix).map(str::to_owned))
    }

    fn kill9(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }

    async fn killed(mut self) {
        self.kill9();
        let _ = tokio::time::timeout(TIMEOUT, self.child.wait()).await;
    }
}

async fn client(kubeconfig_yaml: &str) -> Result<Client, Box<dyn std::error::Error + Send + Sync>> {
    let kubeconfig = Kubeconfig::from_yaml(kubeconfig_yaml)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    Ok(Client::try_from(config)?)
}

/// `POST path` to the control endpoint: (status, body).
async fn control(
    url: &str,
    token: &str,
    path: &str,
) -> Result<(u16, String), Box<dyn std::error::Error + Send + Sync>> {
    let address = url.trim_start_matches("http://");
    let mut tcp = TcpStream::connect(address).await?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    tcp.write_all(request.as_bytes()).await?;
    let mut response = String::new();
    tcp.read_to_string(&mut response).await?;
    let status = response
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}

fn token_of(kubeconfig_yaml: &str) -> String {
    kubeconfig_yaml
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .unwrap_or_default()
        .to_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("envtest-server-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::create_dir_all(&dir);
    dir
}

fn args(dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "--kubeconfig".to_owned(),
        dir.join("admin.kubeconfig").display().to_string(),
        "--state-dir".to_owned(),
        dir.join("state").display().to_string(),
        "--namespace".to_owned(),
        "team".to_owned(),
        "--user".to_owned(),
        "alice:dev,ops".to_owned(),
        "--service-account".to_owned(),
        "team/robot".to_owned(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args
}

fn status_code<T: std::fmt::Debug>(result: &Result<T, Error>) -> Option<u16> {
    match result {
        Err(Error::Api(status)) => Some(status.code),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn users_faults_and_a_kill_9_restart_that_keeps_everything() -> TestResult {
    let dir = temp_dir("restart");
    let server = Server::start(&args(&dir, &[]), None).await?;
    let admin_yaml = std::fs::read_to_string(dir.join("admin.kubeconfig"))?;
    let alice_path = server
        .printed("user alice kubeconfig ")
        .ok_or("no alice kubeconfig line")?;
    let robot_path = server
        .printed("user system:serviceaccount:team:robot kubeconfig ")
        .ok_or("no ServiceAccount kubeconfig line")?;
    let alice_yaml = std::fs::read_to_string(&alice_path)?;
    let robot_yaml = std::fs::read_to_string(&robot_path)?;
    let control_url = server.printed("control ").ok_or("no control line")?;
    let token = token_of(&admin_yaml);

    // Each user authenticates with its own token; RBAC gives it nothing yet (403, not 401).
    let alice = client(&alice_yaml).await?;
    let robot = client(&robot_yaml).await?;
    let denied = Api::<ConfigMap>::namespaced(alice.clone(), "team")
        .list(&Default::default())
        .await;
    assert_eq!(status_code(&denied), Some(403), "{denied:?}");
    let denied = Api::<ConfigMap>::namespaced(robot, "team")
        .list(&Default::default())
        .await;
    assert_eq!(status_code(&denied), Some(403), "{denied:?}");
    if let Err(Error::Api(status)) = denied {
        assert!(
            status.message.contains("system:serviceaccount:team:robot"),
            "{}",
            status.message
        );
    }

    // Faults through the control endpoint.
    let admin = client(&admin_yaml).await?;
    let configmaps: Api<ConfigMap> = Api::namespaced(admin.clone(), "team");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("kept".into()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..ConfigMap::default()
    };
    let created = configmaps.create(&PostParams::default(), &cm).await?;
    assert_eq!(control(&control_url, "wrong", "/faults/clear").await?.0, 401);
    assert_eq!(
        control(
            &control_url,
            &token,
            "/faults/fail?verb=get&resource=configmaps&code=500&times=1"
        )
        .await?
        .0,
        200
    );
    assert_eq!(status_code(&configmaps.get("kept").await), Some(500));
    assert!(
        configmaps.get("kept").await.is_ok(),
        "the fault was for one request"
    );
    assert_eq!(
        control(&control_url, &token, "/faults/fail?code=abc").await?.0,
        400
    );
    for path in [
        "/faults/latency?duration=10ms",
        "/faults/drop-watches",
        "/faults/expire-watches",
        "/faults/clear",
    ] {
        assert_eq!(control(&control_url, &token, path).await?.0, 200, "{path}");
    }
    assert_eq!(
        control(&control_url, &token, "/restart?downtime=50ms").await?.0,
        200
    );
    assert!(
        configmaps.get("kept").await.is_ok(),
        "served again after the restart"
    );

    // kill -9, then the same command: same port, CA, tokens, objects, resourceVersions.
    server.killed().await;
    let server = Server::start(&args(&dir, &[]), None).await?;
    // The client's pooled connections died with the server: retry past them.
    let kept = tokio::time::timeout(TIMEOUT, async {
        loop {
            match configmaps.get("kept").await {
                Err(Error::Api(status)) => return Err(status),
                Ok(kept) => return Ok(kept),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await??;
    assert_eq!(kept.metadata.resource_version, created.metadata.resource_version);
    assert_eq!(kept.metadata.uid, created.metadata.uid);
    let next = configmaps
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("after".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await?;
    let rv = |cm: &ConfigMap| {
        cm.metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
    };
    assert!(
        rv(&next) > rv(&created),
        "resourceVersions go on: {:?} after {:?}",
        rv(&next),
        rv(&created)
    );
    let denied = Api::<ConfigMap>::namespaced(alice, "team")
        .list(&Default::default())
        .await;
    assert_eq!(
        status_code(&denied),
        Some(403),
        "alice's old token still authenticates"
    );
    assert!(Api::<Namespace>::all(admin).get("team").await.is_ok());
    server.killed().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// With the descriptor limit reached by connections that never start TLS, the accept
/// loop backs off, the header timeout frees the descriptors, and real requests are
/// served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_recovers_from_fd_exhaustion() -> TestResult {
    let dir = temp_dir("fds");
    let server = Server::start(&args(&dir, &["--header-timeout", "1s"]), Some(64)).await?;
    let admin_yaml = std::fs::read_to_string(dir.join("admin.kubeconfig"))?;
    let address = server
        .printed("envtest-server ready on https://")
        .and_then(|rest| rest.split_whitespace().next().map(str::to_owned))
        .ok_or("no address")?;
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(TcpStream::connect(&address).await?);
    }
    let admin = client(&admin_yaml).await?;
    let namespaces: Api<Namespace> = Api::all(admin);
    let served = tokio::time::timeout(TIMEOUT, async {
        loop {
            if namespaces.get("team").await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(served.is_ok(), "no request was served within {TIMEOUT:?}");
    drop(idle);
    server.killed().await;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
