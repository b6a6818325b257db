//! The workspace's structural rules, read from its source with `syn`:
//!
//! * no import circle: at every level of every crate's module tree, the child modules of
//!   one parent import each other in one direction only (a module and its submodules
//!   count as one; a path through a re-export counts where the item is defined);
//! * no function outside tests in `sync-core` and `controllers` longer than 100 lines.
//!
//! Each failure names the files and lines to look at.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The crates whose module trees are checked for circles, by their source roots.
const CRATES: &[&str] = &[
    "sync-core/src/lib.rs",
    "sync-macros/src/lib.rs",
    "sync-macros/guide/src/lib.rs",
    "envtest/src/lib.rs",
    "conversion/src/lib.rs",
    "controllers/src/lib.rs",
    "tests/src/lib.rs",
];

/// The crates whose non-test functions must fit the limit.
const SHORT_FUNCTION_CRATES: &[&str] = &["sync-core/src/lib.rs", "controllers/src/lib.rs"];

/// The longest a non-test function may be, in lines from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut circles = Vec::new();
    for root in CRATES {
        let tree = ModuleTree::load(&workspace().join(root));
        circles.extend(tree.circles());
    }
    assert!(
        circles.is_empty(),
        "import circles (make one side depend on the other, or move the shared item down a \
         layer):\n{}",
        circles.join("\n")
    );
}

#[test]
fn no_function_outside_tests_is_longer_than_the_limit() {
    let mut long = Vec::new();
    for root in SHORT_FUNCTION_CRATES {
        let tree = ModuleTree::load(&workspace().join(root));
        for module in &tree.modules {
            let mut lengths = FunctionLengths::default();
            for item in &module.items {
                lengths.visit_item(item);
            }
            for (name, line, lines) in lengths.found {
                if lines > MAX_FUNCTION_LINES {
                    long.push(format!(
                        "{}:{line} `{name}`: {lines} lines",
                        module.file.display()
                    ));
                }
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them into named steps):\n{}",
        long.join("\n")
    );
}

/// The checker checks itself: a circle between two sibling files is found, one through a
/// re-export too, a parent and its child are not a circle, and test modules are left out.
#[test]
fn the_circle_check_finds_a_circle_between_siblings() {
    let dir = std::env::temp_dir().join(format!("architecture-{}", std::process::id()));
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        let folder = path.parent().unwrap_or(&dir);
        std::fs::create_dir_all(folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()));
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    };
    write("lib.rs", "mod a; mod b; mod c; pub use a::Thing;");
    write("a.rs", "pub struct Thing; fn f() { crate::b::g() }");
    write("b.rs", "pub fn g() {} fn h(_: crate::Thing) {}");
    write("c/mod.rs", "mod d; pub struct Up; fn f() { d::down() }");
    write(
        "c/d.rs",
        "pub fn down() {} fn up(_: super::Up) {} #[cfg(test)] mod tests { use crate::a::Thing; }",
    );
    let circles = ModuleTree::load(&dir.join("lib.rs")).circles();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(circles.len(), 1, "{circles:?}");
    assert!(
        circles[0].contains("`a` ↔ `b`") || circles[0].contains("`b` ↔ `a`"),
        "{circles:?}"
    );
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One module: its path from the crate root, the file it is in, and its items (test
/// modules and `#[cfg(test)]` items left out).
struct Module {
    path: Vec<String>,
    file: PathBuf,
    items: Vec<syn::Item>,
}

/// A crate's modules, by path.
struct ModuleTree {
    modules: Vec<Module>,
    index: HashMap<Vec<String>, usize>,
}

impl ModuleTree {
    fn load(root: &Path) -> Self {
        let mut tree = Self {
            modules: Vec::new(),
            index: HashMap::new(),
        };
        let dir = root.parent().unwrap_or(Path::new(".")).to_path_buf();
        tree.add(Vec::new(), root.to_path_buf(), parse(root).items, dir);
        tree
    }

    /// Adds a module and, recursively, the submodules it declares; `dir` is where the
    /// files of its `mod x;` declarations are.
    fn add(&mut self, path: Vec<String>, file: PathBuf, items: Vec<syn::Item>, dir: PathBuf) {
        let items: Vec<syn::Item> = items.into_iter().filter(|item| !is_test_only(item)).collect();
        for item in &items {
            let syn::Item::Mod(module) = item else { continue };
            let name = module.ident.to_string();
            let mut child = path.clone();
            child.push(name.clone());
            match &module.content {
                Some((_, inner)) => self.add(child, file.clone(), inner.clone(), dir.join(&name)),
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    let file = if flat.exists() {
                        flat
                    } else {
                        dir.join(&name).join("mod.rs")
                    };
                    let items = parse(&file).items;
                    self.add(child, file, items, dir.join(&name));
                }
            }
        }
        self.index.insert(path.clone(), self.modules.len());
        self.modules.push(Module { path, file, items });
    }

    fn module(&self, path: &[String]) -> Option<&Module> {
        self.index.get(path).map(|&at| &self.modules[at])
    }

    /// Every circle among the children of one module, as a line naming the two sides and
    /// a reference each way.
    fn circles(&self) -> Vec<String> {
        // (from child, to child) → one example reference, per parent.
        let mut edges: BTreeMap<(Vec<String>, String, String), String> = BTreeMap::new();
        for module in &self.modules {
            for (target, line) in self.references(module) {
                let shared = common_prefix(&module.path, &target);
                if shared == module.path.len() || shared == target.len() {
                    continue; // a module and its own ancestors or descendants
                }
                let parent = module.path[..shared].to_vec();
                let key = (parent, module.path[shared].clone(), target[shared].clone());
                edges
                    .entry(key)
                    .or_insert_with(|| format!("{}:{line}", module.file.display()));
            }
        }
        let mut found = Vec::new();
        for ((parent, from, to), at) in &edges {
            if from < to
                && let Some(back) = edges.get(&(parent.clone(), to.clone(), from.clone()))
            {
                found.push(format!(
                    "in `crate::{}`: `{from}` ↔ `{to}` ({at} → {back})",
                    parent.join("::")
                ));
            }
        }
        found.extend(self.longer_circles(&edges));
        found
    }

    /// Circles of three or more children (a → b → c → a), found by a depth-first walk.
    fn longer_circles(&self, edges: &BTreeMap<(Vec<String>, String, String), String>) -> Vec<String> {
        let mut graphs: BTreeMap<&Vec<String>, BTreeMap<&String, BTreeSet<&String>>> = BTreeMap::new();
        for (parent, from, to) in edges.keys() {
            graphs
                .entry(parent)
                .or_default()
                .entry(from)
                .or_default()
                .insert(to);
        }
        let mut found = Vec::new();
        for (parent, graph) in graphs {
            for start in graph.keys() {
                if let Some(cycle) = cycle_from(&graph, start)
                    && cycle.len() > 2
                    && cycle.iter().min() == Some(start)
                {
                    let names: Vec<String> = cycle.iter().map(|n| format!("`{n}`")).collect();
                    found.push(format!(
                        "in `crate::{}`: {} → `{start}`",
                        parent.join("::"),
                        names.join(" → ")
                    ));
                }
            }
        }
        found
    }

    /// The modules `module` refers to (by `use` or by a path in its code), each with the
    /// line of one reference.
    fn references(&self, module: &Module) -> Vec<(Vec<String>, usize)> {
        let mut paths = Paths::default();
        for item in &module.items {
            if let syn::Item::Mod(_) = item {
                continue; // a submodule's own references are its own
            }
            paths.visit_item(item);
        }
        paths
            .found
            .into_iter()
            .filter_map(|(path, line)| {
                let absolute = self.absolute(&module.path, &path)?;
                Some((self.resolve(absolute, 0)?, line))
            })
            .collect()
    }

    /// `path` as written in `from`, made relative to the crate root; `None` for a path
    /// into another crate or a local name.
    fn absolute(&self, from: &[String], path: &[String]) -> Option<Vec<String>> {
        let (first, rest) = path.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => from.to_vec(),
            "super" => from[..from.len().checked_sub(1)?].to_vec(),
            _ => {
                let mut child = from.to_vec();
                child.push(first.clone());
                self.module(&child)?; // a path that starts at a submodule
                return Some([child, rest.to_vec()].concat());
            }
        };
        let mut rest = rest;
        while rest.first().map(String::as_str) == Some("super") {
            base.pop()?;
            rest = &rest[1..];
        }
        Some([base, rest.to_vec()].concat())
    }

    /// The module that defines what `path` names: the deepest module on the path, or, for a
    /// name that module re-exports, where the re-export leads.
    fn resolve(&self, path: Vec<String>, depth: usize) -> Option<Vec<String>> {
        let mut at = path.len();
        while self.module(&path[..at]).is_none() {
            at = at.checked_sub(1)?;
        }
        let module = self.module(&path[..at])?;
        let Some(name) = path.get(at) else {
            return Some(module.path.clone());
        };
        if depth < 8
            && let Some(target) = self.reexport(module, name)
        {
            return self.resolve([target, path[at + 1..].to_vec()].concat(), depth + 1);
        }
        Some(module.path.clone())
    }

    /// Where `module`'s `use` of `name` leads, relative to the crate root.
    fn reexport(&self, module: &Module, name: &str) -> Option<Vec<String>> {
        let mut uses = Vec::new();
        for item in &module.items {
            if let syn::Item::Use(item) = item {
                flatten(&item.tree, Vec::new(), &mut uses);
            }
        }
        uses.into_iter()
            .find(|(_, alias)| alias == name)
            .and_then(|(path, _)| self.absolute(&module.path, &path))
    }
}

fn parse(file: &Path) -> syn::File {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// An item that exists only in tests: `#[cfg(test)]`, `#[test]`, `#[tokio::test]`.
fn is_test_only(item: &syn::Item) -> bool {
    let attrs = match item {
        syn::Item::Mod(item) => &item.attrs,
        syn::Item::Fn(item) => &item.attrs,
        syn::Item::Use(item) => &item.attrs,
        syn::Item::Impl(item) => &item.attrs,
        syn::Item::Struct(item) => &item.attrs,
        syn::Item::Enum(item) => &item.attrs,
        syn::Item::Const(item) => &item.attrs,
        syn::Item::Static(item) => &item.attrs,
        _ => return false,
    };
    attrs.iter().any(is_test_attribute)
}

fn is_test_attribute(attr: &syn::Attribute) -> bool {
    let path = attr.path();
    if path.is_ident("test") || path.segments.last().is_some_and(|s| s.ident == "test") {
        return true;
    }
    path.is_ident("cfg")
        && attr
            .parse_args::<syn::Meta>()
            .is_ok_and(|meta| meta.path().is_ident("test"))
}

/// The paths of a `use` tree with the name each binds (`None` for a glob).
fn flatten(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let with = |ident: &syn::Ident| [prefix.clone(), vec![ident.to_string()]].concat();
    match tree {
        syn::UseTree::Path(path) => flatten(&path.tree, with(&path.ident), out),
        syn::UseTree::Name(name) if name.ident == "self" => {
            if let Some(last) = prefix.last() {
                out.push((prefix.clone(), last.clone()));
            }
        }
        syn::UseTree::Name(name) => out.push((with(&name.ident), name.ident.to_string())),
        syn::UseTree::Rename(rename) => out.push((with(&rename.ident), rename.rename.to_string())),
        syn::UseTree::Glob(_) => out.push((prefix, "*".into())),
        syn::UseTree::Group(group) => {
            for tree in &group.items {
                flatten(tree, prefix.clone(), out);
            }
        }
    }
}

/// The number of leading segments two paths share.
fn common_prefix(a: &[String], b: &[String]) -> usize {
    a.iter().zip(b).take_while(|(a, b)| a == b).count()
}

/// A path from `start` back to itself, if there is one.
fn cycle_from<'a>(
    graph: &BTreeMap<&'a String, BTreeSet<&'a String>>,
    start: &'a String,
) -> Option<Vec<&'a String>> {
    fn walk<'a>(
        graph: &BTreeMap<&'a String, BTreeSet<&'a String>>,
        at: &'a String,
        start: &'a String,
        trail: &mut Vec<&'a String>,
        seen: &mut BTreeSet<&'a String>,
    ) -> bool {
        trail.push(at);
        for next in graph.get(at).into_iter().flatten() {
            if *next == start || (seen.insert(next) && walk(graph, next, start, trail, seen)) {
                return true;
            }
        }
        trail.pop();
        false
    }
    let mut trail = Vec::new();
    walk(graph, start, start, &mut trail, &mut BTreeSet::new()).then_some(trail)
}

/// Every path written in the visited items (`use` trees and paths in code), with its line.
#[derive(Default)]
struct Paths {
    found: Vec<(Vec<String>, usize)>,
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let line = item.use_token.span.start().line;
        let mut uses = Vec::new();
        flatten(&item.tree, Vec::new(), &mut uses);
        self.found.extend(uses.into_iter().map(|(path, _)| (path, line)));
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            let line = path.segments[0].ident.span().start().line;
            self.found.push((segments, line));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        if !item.attrs.iter().any(is_test_attribute) {
            syn::visit::visit_item_fn(self, item);
        }
    }
}

/// Every non-test function in the visited items: name, first line, length in lines.
#[derive(Default)]
struct FunctionLengths {
    found: Vec<(String, usize, usize)>,
}

impl FunctionLengths {
    fn record(&mut self, attrs: &[syn::Attribute], sig: &syn::Signature, block: &syn::Block) {
        if attrs.iter().any(is_test_attribute) {
            return;
        }
        let start = sig.fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        self.found.push((sig.ident.to_string(), start, end + 1 - start));
    }
}

impl<'ast> Visit<'ast> for FunctionLengths {
    fn visit_item_fn(&mut self, item: &'ast syn::ItemFn) {
        self.record(&item.attrs, &item.sig, &item.block);
        syn::visit::visit_item_fn(self, item);
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        self.record(&item.attrs, &item.sig, &item.block);
        syn::visit::visit_impl_item_fn(self, item);
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if let Some(block) = &item.default {
            self.record(&item.attrs, &item.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, item);
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {} // each module is visited on its own
}
