//! The declarations that must compile, each with a test of what it generates. They are
//! an ordinary test target, not trybuild `pass` cases: trybuild builds its projects in a
//! target directory of its own, and with compile-fail cases only (`tests/ui.rs`) it runs
//! `cargo check` there instead of building the whole dependency tree a second time.

mod custom_hooks;
mod machine;
mod machine_set;
mod new_pair;
