//! The operator binary: `controllers --help`.

use std::process::ExitCode;

use clap::Parser;
use controllers::convert;
use controllers::operator::cli::Command;
use controllers::operator::{Cli, Exit, logging, run, upstream};

/// jemalloc rather than the system allocator: the controllers spend much of their CPU
/// allocating and freeing the many small maps and strings of decoded objects, where it
/// is ~40 % cheaper than glibc's malloc at 10 000 Machine pairs, and with its background
/// purge (.cargo/config.toml) it also holds less memory (tests/PERFORMANCE.md).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(Command::Convert(args)) = &cli.command {
        let status = convert::run(
            args,
            &mut std::io::stdin(),
            &mut std::io::stdout(),
            &mut std::io::stderr(),
        )
        .await;
        return ExitCode::from(status as u8);
    }
    if let Some(Command::Status(args)) = &cli.command {
        let status = controllers::status::run(args, &mut std::io::stdout(), &mut std::io::stderr()).await;
        return ExitCode::from(status);
    }
    if let Some(Command::Samples(args)) = &cli.command {
        let status =
            controllers::operator::samples::run(args, &mut std::io::stdout(), &mut std::io::stderr()).await;
        return ExitCode::from(status);
    }
    if let Err(error) = logging::init(cli.log_format, cli.log_filter()) {
        eprintln!("controllers: {error}");
        return ExitCode::from(2);
    }
    let code = match run::run(cli).await {
        Ok(Exit::Shutdown) => 0,
        Ok(Exit::LeadershipLost(_)) => 1,
        Ok(Exit::UpstreamRunning(_)) => i32::from(upstream::EXIT_UPSTREAM_RUNNING),
        Err(error) => {
            let error = anyhow::Error::from(error);
            // Each message already carries its cause once (`{error:#}` would repeat it).
            tracing::error!("{error}");
            1
        }
    };
    exit_now(code)
}

/// Ends the process once the operator has stopped, without tearing down what is left:
/// everything that must happen before exit (reconciles drained, Lease released,
/// checkpoints saved, HTTP drained, the embedded server stopped and its kubeconfig
/// removed) is done by now. Returning from `main` instead drops the runtime, its tasks and
/// every cache and, with `--embedded`, the API server's objects and history one
/// allocation at a time: 2.5 s after `stopped` with 470 MiB held. The logs go straight to
/// stderr (unbuffered); stdout is flushed here.
fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    std::process::exit(code)
}
