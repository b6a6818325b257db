//! The envtest benchmark: start to ready with `deploy/crds`, creating 10k objects,
//! write-to-watch-event latency and a 10k-object list, with medians and percentiles.
//!
//! ```text
//! cargo bench -p envtest --bench envtest -- [--quick] [RESULT.json]
//! ```
//!
//! Prints a table and writes the JSON result (default `target/bench/envtest.json`). The
//! measurements themselves live in `envtest::bench` for other suites to reuse.

use std::path::PathBuf;
use std::process::ExitCode;

use envtest::harness::bench::{self, Sizes};

fn main() -> ExitCode {
    let mut quick = false;
    let mut output = None;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--quick" => quick = true,
            "-h" | "--help" => {
                println!("usage: envtest bench [--quick] [RESULT.json]");
                return ExitCode::SUCCESS;
            }
            // `cargo bench` passes `--bench`; other harness flags are ignored too.
            flag if flag.starts_with('-') => {}
            path => output = Some(PathBuf::from(path)),
        }
    }
    let output = output.unwrap_or_else(|| bench::workspace_dir().join("target/bench/envtest.json"));
    let sizes = if quick { Sizes::quick() } else { Sizes::full() };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("envtest bench: {error}");
            return ExitCode::FAILURE;
        }
    };
    let report = match runtime.block_on(bench::run(sizes, &bench::default_crd_dir())) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("envtest bench: {error}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", report.table());
    let mut json = report.to_json();
    json["mode"] = serde_json::json!(if quick { "quick" } else { "full" });
    json["cpus"] = serde_json::json!(std::thread::available_parallelism().map_or(0, |n| n.get()));
    let written = output
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&output, format!("{json:#}\n")));
    match written {
        Ok(()) => {
            println!("results written to {}", output.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("envtest bench: writing {}: {error}", output.display());
            ExitCode::FAILURE
        }
    }
}
