//! The layering of `src/`: every folder is one layer, listed top first in the crate doc's
//! "Layers" table (`src/lib.rs`), and a file may refer to its own layer and to layers below
//! it, never to one above. Every `crate::`, `self::` and `super::` path counts (`use` trees
//! and paths in code, inside inline `mod` blocks too); comments and literals do not.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The layers of the crate doc's table (rows "| [`name`] | …"), top first.
fn documented_layers(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|line| line.strip_prefix("//! | [`"))
        .filter_map(|rest| rest.split_once("`]").map(|(name, _)| name.to_string()))
        .collect()
}

/// Every `.rs` file under `dir`, relative to `root`.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            rust_files(root, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
    Ok(())
}

/// The module path of a file: `storage/store.rs` → `[storage, store]`, `auth/mod.rs` → `[auth]`.
fn module_of(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if let Some(last) = parts.pop() {
        let stem = last.trim_end_matches(".rs");
        if stem != "mod" && stem != "lib" {
            parts.push(stem.to_string());
        }
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Semi,
    Bang,
    Other,
}

/// The tokens of a source file with their line, comments and string/char literals removed.
fn tokens(source: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = source.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(chars[i] == '\n');
                        i += 1;
                    }
                }
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    line += usize::from(chars[i] == '\n');
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
            }
            '\'' => {
                // A char literal ('x', '\n', '\u{..}'), or a lifetime ('a).
                if at(i + 1) == '\\' {
                    i += 2;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if at(i + 2) == '\'' {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            ':' if at(i + 1) == ':' => {
                out.push((Tok::PathSep, line));
                i += 2;
            }
            '{' | '}' | ',' | ';' | '!' => {
                let tok = match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    ',' => Tok::Comma,
                    ';' => Tok::Semi,
                    _ => Tok::Bang,
                };
                out.push((tok, line));
                i += 1;
            }
            c if c.is_alphanumeric() || c == '_' || c == '$' => {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '$') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let hashes = (0..).take_while(|&k| at(i + k) == '#').count();
                let raw_string = matches!(word.as_str(), "r" | "br") && at(i + hashes) == '"';
                if word == "r" && hashes == 1 && !raw_string {
                    // A raw identifier (`r#type`): the `#` goes, the identifier follows.
                    i += 1;
                } else if raw_string {
                    i += hashes + 1;
                    loop {
                        if i >= chars.len() {
                            break;
                        }
                        if chars[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                            i += 1 + hashes;
                            break;
                        }
                        line += usize::from(chars[i] == '\n');
                        i += 1;
                    }
                } else if word.starts_with(|c: char| c.is_ascii_digit()) {
                    out.push((Tok::Other, line));
                } else {
                    out.push((Tok::Ident(word.trim_start_matches('$').to_string()), line));
                }
            }
            _ => {
                out.push((Tok::Other, line));
                i += 1;
            }
        }
    }
    out
}

/// A path into the crate: the line and the top-level module(s) it reaches.
#[derive(Debug, PartialEq)]
struct Reference {
    line: usize,
    text: String,
    targets: Vec<String>,
}

/// Every `crate::`/`self::`/`super::` path of a file whose module path is `module`, resolved
/// to the crate's top-level module it names (a `use` group at the crate root names several).
fn references(module: &[String], source: &str) -> Vec<Reference> {
    let toks = tokens(source);
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(name), _)) => Some(name.as_str()),
        _ => None,
    };
    let is = |i: usize, tok: Tok| toks.get(i).is_some_and(|(t, _)| *t == tok);
    let mut out = Vec::new();
    // Inline `mod name { … }` blocks: (name, brace depth inside it).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Open => {
                depth += 1;
                if let Some(name) = pending_mod.take() {
                    inline.push((name, depth));
                }
            }
            Tok::Close => {
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                depth = depth.saturating_sub(1);
            }
            Tok::Semi => pending_mod = None,
            Tok::Ident(word) if word == "mod" => pending_mod = ident(i + 1).map(String::from),
            Tok::Ident(word)
                if matches!(word.as_str(), "crate" | "self" | "super")
                    && is(i + 1, Tok::PathSep)
                    && !(i > 0 && is(i - 1, Tok::PathSep)) =>
            {
                let line = toks[i].1;
                let mut here: Vec<String> = module
                    .iter()
                    .cloned()
                    .chain(inline.iter().map(|(n, _)| n.clone()))
                    .collect();
                let mut absolute: Vec<String> = Vec::new();
                let mut text = word.clone();
                let mut j = i;
                match word.as_str() {
                    "crate" => {}
                    "self" => absolute = here.clone(),
                    _ => {
                        here.pop();
                        absolute = here.clone();
                        while is(j + 1, Tok::PathSep) && ident(j + 2) == Some("super") {
                            here.pop();
                            absolute = here.clone();
                            text.push_str("::super");
                            j += 2;
                        }
                    }
                }
                while is(j + 1, Tok::PathSep)
                    && let Some(next) = ident(j + 2)
                {
                    absolute.push(next.to_string());
                    text.push_str("::");
                    text.push_str(next);
                    j += 2;
                }
                let targets = if let Some(first) = absolute.first() {
                    vec![first.clone()]
                } else if is(j + 1, Tok::PathSep) && is(j + 2, Tok::Open) {
                    // `use crate::{a, b::c, d::{e}}`: the first name of each item.
                    text.push_str("::{…}");
                    let mut names = Vec::new();
                    let mut level = 0;
                    let mut k = j + 2;
                    while k < toks.len() {
                        match &toks[k].0 {
                            Tok::Open => level += 1,
                            Tok::Close => {
                                level -= 1;
                                if level == 0 {
                                    break;
                                }
                            }
                            Tok::Ident(name)
                                if level == 1
                                    && name != "self"
                                    && (is(k - 1, Tok::Open) || is(k - 1, Tok::Comma)) =>
                            {
                                names.push(name.clone());
                            }
                            _ => {}
                        }
                        k += 1;
                    }
                    j = k;
                    names
                } else {
                    Vec::new()
                };
                if !targets.is_empty() {
                    out.push(Reference { line, text, targets });
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// `#[macro_export]` macros live at the crate root: the layer each one is defined in.
fn exported_macros(files: &[(PathBuf, String)]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for (file, source) in files {
        let toks = tokens(source);
        for w in toks.windows(3) {
            if let [(Tok::Ident(m), _), (Tok::Bang, _), (Tok::Ident(name), _)] = w
                && m == "macro_rules"
                && let Some(layer) = module_of(file).first()
            {
                out.insert(name.clone(), layer.clone());
            }
        }
    }
    out
}

/// Every reference from a file to a layer above its own, or to the crate root's re-exports.
fn violations(layers: &[String], files: &[(PathBuf, String)]) -> Vec<String> {
    let rank: BTreeMap<&str, usize> = layers.iter().enumerate().map(|(i, l)| (l.as_str(), i)).collect();
    let macros = exported_macros(files);
    let mut out = Vec::new();
    for (file, source) in files {
        let module = module_of(file);
        let Some(own) = module.first() else { continue };
        let Some(&own_rank) = rank.get(own.as_str()) else {
            continue;
        };
        for reference in references(&module, source) {
            for target in &reference.targets {
                let layer = macros.get(target).unwrap_or(target);
                let place = format!("src/{}:{}: `{}`", file.display(), reference.line, reference.text);
                match rank.get(layer.as_str()) {
                    Some(&r) if r < own_rank => {
                        out.push(format!("{place}: layer `{own}` uses `{layer}`, which is above it"));
                    }
                    Some(_) => {}
                    None => out.push(format!(
                        "{place}: `{target}` is not a layer (use it from its layer, not through the crate root)"
                    )),
                }
            }
        }
    }
    out
}

fn crate_sources() -> std::io::Result<Vec<(PathBuf, String)>> {
    let root = src_dir();
    let mut files = Vec::new();
    rust_files(&root, &root, &mut files)?;
    files.sort();
    files
        .into_iter()
        .filter(|f| !f.starts_with("bin"))
        .map(|f| std::fs::read_to_string(root.join(&f)).map(|s| (f, s)))
        .collect()
}

#[test]
fn the_crate_doc_lists_every_layer_once() -> std::io::Result<()> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs"))?;
    let layers = documented_layers(&lib);
    let listed: BTreeSet<&String> = layers.iter().collect();
    assert_eq!(listed.len(), layers.len(), "a layer is listed twice: {layers:?}");
    let mut folders = BTreeSet::new();
    let mut loose = Vec::new();
    for entry in std::fs::read_dir(src_dir())? {
        let path = entry?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if path.is_dir() {
            if name != "bin" {
                folders.insert(name);
            }
        } else if name != "lib.rs" {
            loose.push(name);
        }
    }
    assert_eq!(loose, Vec::<String>::new(), "files outside every layer");
    assert_eq!(
        listed,
        folders.iter().collect(),
        "the Layers table of src/lib.rs against the folders of src/"
    );
    Ok(())
}

#[test]
fn no_layer_uses_a_layer_above_it() -> std::io::Result<()> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs"))?;
    let layers = documented_layers(&lib);
    assert!(layers.len() > 1, "no Layers table in src/lib.rs");
    let files = crate_sources()?;
    let found = violations(&layers, &files);
    assert!(
        found.is_empty(),
        "imports against the layering (top first: {}):\n{}",
        layers.join(" → "),
        found.join("\n")
    );
    Ok(())
}

/// The scanner itself, on sources written to break the rule in each way it must catch.
#[test]
fn the_scan_catches_every_kind_of_path() {
    let layers: Vec<String> = ["top", "mid", "low"].map(String::from).into();
    let file = |path: &str, source: &str| (PathBuf::from(path), source.to_string());
    let files = vec![
        file(
            "mid/a.rs",
            r###"
            use super::b::x;              // another file of this layer: fine
            use crate::low::x;            // below: fine
            use crate::{low::y, top::z};  // a group at the root: `top` is above
            // use crate::top::commented;  (a comment: ignored)
            const S: &str = "crate::top::in_a_string";
            const R: &str = r##"crate::top::raw "# still raw"##; fn r#type() {}
            fn f() -> char { let _ = crate::top::call(); '"' }
            mod tests {
                use super::super::top::w; // from `mid::a::tests`: `crate::mid::top`, fine
                use super::super::super::top::v; // `crate::top`: above
            }
            "###,
        ),
        file(
            "mid/mod.rs",
            "use super::top; pub(crate) fn g() { self::a::f(); crate::mac!(); crate::TestEnv; }",
        ),
        file(
            "low/m.rs",
            "#[macro_export] macro_rules! mac { () => { $crate::low::m::h() }; }",
        ),
    ];
    let found = violations(&layers, &files);
    let lines: Vec<&str> = found
        .iter()
        .map(|v| v.split(": layer").next().unwrap_or(v))
        .collect();
    assert_eq!(
        lines,
        [
            "src/mid/a.rs:4: `crate::{…}`",
            "src/mid/a.rs:8: `crate::top::call`",
            "src/mid/a.rs:11: `super::super::super::top::v`",
            "src/mid/mod.rs:1: `super::top`",
            "src/mid/mod.rs:1: `crate::TestEnv`: `TestEnv` is not a layer (use it from its layer, not through the crate root)",
        ],
        "{found:#?}"
    );
}
