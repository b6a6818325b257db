//! Runs the in-process envtest API server as a standalone command.
//!
//! `cargo run -p envtest --bin envtest-server -- --crds DIR
//! [--crds DIR ...] --kubeconfig FILE [--port N]` serves until SIGINT/SIGTERM, writes the
//! admin kubeconfig to FILE and prints one line containing `ready` once it accepts
//! requests.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use envtest::TestEnv;

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
    /// Port to listen on (default: random).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Extra namespaces to create.
    #[arg(long = "namespace")]
    namespaces: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut builder = TestEnv::builder().port(args.port);
    for dir in &args.crds {
        builder = builder.crd_dir(dir);
    }
    for namespace in &args.namespaces {
        builder = builder.namespace(namespace);
    }
    let env = match builder.start().await {
        Ok(env) => env,
        Err(error) => {
            eprintln!("envtest-server: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(error) = env.write_kubeconfig(&args.kubeconfig) {
        eprintln!("envtest-server: writing {}: {error}", args.kubeconfig.display());
        return ExitCode::FAILURE;
    }
    println!(
        "envtest-server ready on {} (kubeconfig {})",
        env.url(),
        args.kubeconfig.display()
    );
    wait_for_signal().await;
    env.stop().await;
    ExitCode::SUCCESS
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
