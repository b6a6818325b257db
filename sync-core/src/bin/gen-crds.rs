//! Writes `deploy/crds/*.yaml` from the Rust API types.
//!
//! `cargo run -p sync-core --bin gen-crds [-- OUT_DIR]` (default `deploy/crds` at the
//! workspace root). A test fails when the committed files drift from the types.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let out = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds"));
    for (file, crd) in sync_core::api::crds::all() {
        let path = out.join(file);
        let written = sync_core::api::crds::to_yaml(&crd)
            .map_err(|e| e.to_string())
            .and_then(|yaml| std::fs::write(&path, yaml).map_err(|e| e.to_string()));
        if let Err(error) = written {
            eprintln!("gen-crds: {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
