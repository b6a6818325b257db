//! `ADDING_A_PAIR.md` shows, byte for byte, the crate `guide/` that the workspace builds
//! and tests: its dependencies, its `src/lib.rs`, its `tests/decision_table.rs` and
//! `tests/hooks.rs`, and the workspace's profile sections an outside crate copies.

/// The code blocks of the guide fenced with ` ```lang `, in order.
fn blocks<'a>(guide: &'a str, lang: &str) -> Vec<&'a str> {
    let fence = format!("```{lang}\n");
    guide
        .split(fence.as_str())
        .skip(1)
        .filter_map(|rest| rest.split_once("```\n").map(|(code, _)| code))
        .collect()
}

const GUIDE: &str = include_str!("../ADDING_A_PAIR.md");

#[test]
fn the_guide_shows_the_crate_it_tests() {
    let rust = blocks(GUIDE, "rust");
    assert_eq!(
        rust.first().copied(),
        Some(include_str!("../guide/src/lib.rs")),
        "the guide's first Rust block and guide/src/lib.rs differ: copy the file into the guide"
    );
    assert_eq!(
        rust.get(1).copied(),
        Some(include_str!("../guide/tests/decision_table.rs")),
        "the guide's second Rust block and guide/tests/decision_table.rs differ: copy the file into the guide"
    );
    assert_eq!(
        rust.get(2).copied(),
        Some(include_str!("../guide/tests/hooks.rs")),
        "the guide's third Rust block and guide/tests/hooks.rs differ: copy the file into the guide"
    );
}

#[test]
fn the_guide_gives_the_workspace_profile_sections() {
    let workspace = include_str!("../../Cargo.toml");
    let profiles = workspace.find("[profile.dev]").map(|at| &workspace[at..]);
    assert_eq!(
        blocks(GUIDE, "toml").get(1).copied(),
        profiles,
        "the guide's profile sections and the workspace's Cargo.toml differ: copy them into the guide"
    );
}

#[test]
fn the_guide_lists_the_crates_dependencies() {
    let manifest = include_str!("../guide/Cargo.toml");
    let dependencies = manifest
        .split_once("[dependencies]")
        .map(|(_, rest)| format!("[dependencies]{rest}"));
    assert_eq!(
        blocks(GUIDE, "toml").first().map(|block| block.to_string()),
        dependencies,
        "the guide's dependencies and guide/Cargo.toml differ"
    );
}
