//! Compile-time tests of `#[sync_controller]`: every misuse, with the exact error message
//! and where it points. (The declarations that must compile are `tests/declarations`.)
//!
//! Regenerate the `.stderr` files after a deliberate change with
//! `TRYBUILD=overwrite cargo test -p sync-macros --test ui`, then read each one.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
}
