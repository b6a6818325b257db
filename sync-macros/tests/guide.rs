//! `ADDING_A_PAIR.md` shows, byte for byte, the trybuild pass case that proves it compiles.

#[test]
fn guide_code_is_the_pass_case() {
    let guide = include_str!("../ADDING_A_PAIR.md");
    let pass_case = include_str!("ui/pass/adding_a_pair.rs");
    let code = guide
        .split_once("```rust\n")
        .and_then(|(_, rest)| rest.split_once("```\n"))
        .map(|(code, _)| code);
    assert_eq!(
        code,
        Some(pass_case),
        "the guide's code block and tests/ui/pass/adding_a_pair.rs differ: copy the pass case into the guide"
    );
}
