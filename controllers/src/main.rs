//! The operator binary: `controllers --help`.

use std::process::ExitCode;

use clap::Parser;
use controllers::convert;
use controllers::operator::cli::Command;
use controllers::operator::{Cli, Exit, logging, run};

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
    match run::run(cli).await.map_err(anyhow::Error::from) {
        Ok(Exit::Shutdown) => ExitCode::SUCCESS,
        Ok(Exit::LeadershipLost(_)) => ExitCode::FAILURE,
        Err(error) => {
            // Each message already carries its cause once (`{error:#}` would repeat it).
            tracing::error!("{error}");
            ExitCode::FAILURE
        }
    }
}
