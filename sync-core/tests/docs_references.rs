//! The repository's documents point inside the repository: no citation of a design
//! document that is not here, and every `docs/design.md §N` names a section that exists.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The repository's Rust and Markdown files (not build output or VCS data).
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if name == "target" || name.to_string_lossy().starts_with('.') {
            continue;
        }
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|ext| ext == "rs" || ext == "md") {
            found.push(path);
        }
    }
}

#[test]
fn design_references_point_to_docs_design_md() {
    let root = root();
    let design = std::fs::read_to_string(root.join("docs/design.md")).unwrap_or_default();
    let sections: Vec<String> = design
        .lines()
        .filter_map(|line| line.strip_prefix("## "))
        .filter_map(|title| title.split_once('.').map(|(number, _)| number.to_owned()))
        .collect();
    assert!(
        sections.len() >= 8,
        "docs/design.md has sections 1–8: {sections:?}"
    );

    let mut files = Vec::new();
    sources(&root, &mut files);
    // Spelled in pieces so that this file does not match itself.
    let outside = ["DESIGN", ".md"].concat();
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if text.contains(&outside) {
            problems.push(format!(
                "{}: cites {outside}, which is not in the repository",
                file.display()
            ));
        }
        for (_, rest) in text.match_indices("design.md").map(|(at, _)| text.split_at(at)) {
            let after = rest
                .trim_start_matches("design.md")
                .trim_start_matches('`')
                .trim_start();
            let Some(cited) = after.strip_prefix('§') else {
                continue;
            };
            let number: String = cited.chars().take_while(char::is_ascii_digit).collect();
            // `§N` in prose is a placeholder, not a citation.
            if !number.is_empty() && !sections.contains(&number) {
                problems.push(format!(
                    "{}: cites docs/design.md §{number}, which does not exist",
                    file.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
