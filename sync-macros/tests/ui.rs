//! Compile-time tests of `#[sync_controller]`: the declarations that must compile (and run)
//! and every misuse, with the exact error message and where it points.
//!
//! Regenerate the `.stderr` files after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p sync-macros --test ui`, then read each one.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
