//! Runs the in-process envtest API server as a standalone command.
//!
//! `cargo run -p envtest --bin envtest-server -- --crds DIR [--crds DIR ...]
//! --kubeconfig FILE [--port N] [--user NAME[:GROUP,...]] [--service-account NS/NAME]
//! [--state-dir DIR]` serves until SIGINT/SIGTERM, writes the admin kubeconfig to FILE
//! and one kubeconfig per added user, and prints one line containing `ready` once it
//! accepts requests, then where the users' kubeconfigs are and, last, where the control
//! endpoint listens (fault injection and restarts, see `envtest::harness::control`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use envtest::harness::control;
use envtest::{TestEnv, service_account_user};

/// Command line options.
#[derive(Debug, Parser)]
#[command(
    name = "envtest-server",
    about = "An in-process Kubernetes API server for tests"
)]
struct Args {
    /// A directory of CRD YAML files to install (repeatable).
    #[arg(long = "crds")]
    crds: Vec<PathBuf>,
    /// Where to write the admin kubeconfig.
    #[arg(long)]
    kubeconfig: PathBuf,
    /// Port to listen on (default: random, or the last run's with --state-dir).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Extra namespaces to create.
    #[arg(long = "namespace")]
    namespaces: Vec<String>,
    /// A user to add, with its groups (`alice` or `alice:dev,ops`; repeatable): it gets a
    /// token and a kubeconfig `user-<name>.kubeconfig` in --kubeconfig-dir.
    #[arg(long = "user", value_name = "NAME[:GROUP,...]")]
    users: Vec<String>,
    /// A ServiceAccount whose tokens the server accepts (`ns/name`; repeatable): its
    /// kubeconfig is `sa-<ns>-<name>.kubeconfig` in --kubeconfig-dir.
    #[arg(long = "service-account", value_name = "NAMESPACE/NAME")]
    service_accounts: Vec<String>,
    /// Where the users' kubeconfigs go [default: the admin kubeconfig's directory].
    #[arg(long)]
    kubeconfig_dir: Option<PathBuf>,
    /// Keep objects, resourceVersions, port, CA and tokens here, so a restarted server
    /// (even after kill -9) carries on where the last one stopped.
    #[arg(long)]
    state_dir: Option<PathBuf>,
    /// Where the control endpoint listens (loopback only).
    #[arg(long, default_value = "127.0.0.1:0")]
    control_address: SocketAddr,
    /// TLS handshake and request-head timeout (kube-apiserver's 32 s).
    #[arg(long, default_value = "32s", value_parser = control::parse_duration)]
    header_timeout: Duration,
    /// Connections served at once.
    #[arg(long, default_value_t = 1024)]
    max_connections: usize,
    /// Bytes of objects the event history keeps at most.
    #[arg(long, default_value_t = 64 * 1024 * 1024)]
    history_bytes: usize,
}

/// A user of the command line: its user name, groups and kubeconfig file name.
fn parse_users(args: &Args) -> Result<Vec<(String, Vec<String>, String)>, String> {
    let mut users = Vec::new();
    for user in &args.users {
        let (name, groups) = user.split_once(':').unwrap_or((user.as_str(), ""));
        if name.is_empty() || name.contains('/') {
            return Err(format!("--user {user:?}: expected NAME[:GROUP,...]"));
        }
        let groups = groups
            .split(',')
            .filter(|g| !g.is_empty())
            .map(String::from)
            .collect();
        users.push((name.to_owned(), groups, format!("user-{name}.kubeconfig")));
    }
    for account in &args.service_accounts {
        let Some((namespace, name)) = account
            .split_once('/')
            .filter(|(n, a)| !n.is_empty() && !a.is_empty())
        else {
            return Err(format!("--service-account {account:?}: expected NAMESPACE/NAME"));
        };
        let groups = vec![
            "system:serviceaccounts".to_owned(),
            format!("system:serviceaccounts:{namespace}"),
        ];
        users.push((
            service_account_user(namespace, name),
            groups,
            format!("sa-{namespace}-{name}.kubeconfig"),
        ));
    }
    Ok(users)
}

#[tokio::main]
async fn main() -> ExitCode {
    match serve(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("envtest-server: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: Args) -> Result<(), String> {
    if !args.control_address.ip().is_loopback() {
        return Err(format!(
            "--control-address {}: must be a loopback address",
            args.control_address
        ));
    }
    let users = parse_users(&args)?;
    let mut builder = TestEnv::builder()
        .port(args.port)
        .header_timeout(args.header_timeout)
        .max_connections(args.max_connections)
        .history_bytes(args.history_bytes);
    for dir in &args.crds {
        builder = builder.crd_dir(dir);
    }
    for namespace in &args.namespaces {
        builder = builder.namespace(namespace);
    }
    for (name, groups, _) in &users {
        let groups: Vec<&str> = groups.iter().map(String::as_str).collect();
        builder = builder.user(name, &groups);
    }
    if let Some(dir) = &args.state_dir {
        builder = builder.state_dir(dir);
    }
    let env = builder.start().await.map_err(|e| e.to_string())?;
    let write = |path: &Path, yaml: String| {
        write_private(path, &yaml).map_err(|e| format!("writing {}: {e}", path.display()))
    };
    write(&args.kubeconfig, env.kubeconfig())?;
    let kubeconfig_dir = args
        .kubeconfig_dir
        .clone()
        .or_else(|| args.kubeconfig.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let mut written = Vec::new();
    for (name, _, file) in &users {
        let path = kubeconfig_dir.join(file);
        write(&path, env.kubeconfig_for(name).unwrap_or_default())?;
        written.push((name, path));
    }
    let control_listener = control::bind(args.control_address)
        .await
        .map_err(|e| format!("control endpoint {}: {e}", args.control_address))?;
    let control_address = control_listener.local_addr().map_err(|e| e.to_string())?;
    let token = control::admin_token(&env);
    let url = env.url().to_owned();
    let env = Arc::new(tokio::sync::Mutex::new(env));
    let _control = control::serve(control_listener, env.clone(), token);
    // The `ready` line comes first (scripts read one line); then where everything is,
    // the control endpoint last.
    say(&format!(
        "envtest-server ready on {url} (kubeconfig {})",
        args.kubeconfig.display()
    ));
    for (name, path) in written {
        say(&format!("user {name} kubeconfig {}", path.display()));
    }
    say(&format!("control http://{control_address}"));
    wait_for_signal().await;
    // Waits for a restart the control endpoint may be doing; the process then exits,
    // closing the listener and every connection.
    let _env = env.lock().await;
    Ok(())
}

/// Prints a line on stdout; a reader that went away (it read the `ready` line and closed
/// the pipe) is no reason to stop serving.
fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// Writes a file only its owner can read (kubeconfigs hold tokens).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    std::io::Write::write_all(&mut file, text.as_bytes())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
