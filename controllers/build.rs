//! Links the optimised `controllers` binary with the functions a real run executes placed
//! together at the start of its code (`link/hot-functions.txt`, refreshed by
//! `link/refresh-hot-functions.sh`).
//!
//! Why: the kernel maps 64 KiB of a binary around each page the process executes, so code
//! used at run time but scattered over the 16 MB image kept 12 MiB of it resident. The
//! listed functions take 5.5 MB; once adjacent, the pages around them hold other
//! hot functions rather than unused ones (tests/PERFORMANCE.md, "Hot functions first").
//!
//! The order is only a placement: a name the build no longer has is skipped, and a build
//! that cannot take it links as before. It is passed only where the linker is known to
//! be LLD: Rust's default on x86_64 Linux since 1.90, with no linker chosen by the user.
//!
//! The same link writes a build id (`--build-id`, which the usual Linux toolchains add
//! anyway), so the restart checkpoint names the build without reading the executable.

use std::path::Path;
use std::process::Command;

/// The list of executed functions, most instructions first.
const HOT_FUNCTIONS: &str = "link/hot-functions.txt";

fn main() {
    println!("cargo::rerun-if-changed={HOT_FUNCTIONS}");
    println!("cargo::rerun-if-changed=build.rs");
    if !links_with_default_lld() {
        return;
    }
    // The checkpoint's scope names the build by this id rather than reading the whole
    // executable (sync-core's `engine/checkpoint/build.rs`).
    println!("cargo::rustc-link-arg-bin=controllers=-Wl,--build-id");
    if std::env::var("OPT_LEVEL").as_deref() == Ok("0") {
        return;
    }
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let list = Path::new(&manifest).join(HOT_FUNCTIONS);
    if !list.is_file() {
        return;
    }
    println!(
        "cargo::rustc-link-arg-bin=controllers=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    // Names of an older build are expected; LLD would warn once per name.
    println!("cargo::rustc-link-arg-bin=controllers=-Wl,--no-warn-symbol-ordering");
}

/// Whether this build links with the LLD that rustc ships and uses by default: the
/// x86_64 Linux target, rustc 1.90 or later, and no linker or linker option set by the
/// user (`target.<triple>.linker`, `-C linker…`, `-C link-self-contained`), any of which
/// may select a linker that rejects `--symbol-ordering-file`.
fn links_with_default_lld() -> bool {
    let target_ok = std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu");
    let no_linker_set = std::env::var_os("RUSTC_LINKER").is_none();
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let no_linker_flags = !flags.contains("link-self-contained") && !flags.contains("linker");
    target_ok && no_linker_set && no_linker_flags && rustc_minor().is_some_and(|minor| minor >= 90)
}

/// The minor version of the rustc cargo builds with (`rustc 1.95.0 (…)` → 95).
fn rustc_minor() -> Option<u32> {
    let rustc = std::env::var_os("RUSTC")?;
    let output = Command::new(rustc).arg("--version").output().ok()?;
    let version = String::from_utf8(output.stdout).ok()?;
    let mut numbers = version.split_whitespace().nth(1)?.split('.');
    let major: u32 = numbers.next()?.parse().ok()?;
    let minor: u32 = numbers.next()?.parse().ok()?;
    (major == 1).then_some(minor)
}
