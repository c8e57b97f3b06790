//! The crate's module graph has one direction: `src/lib.rs` lists the top-level modules
//! bottom-up, and a module may import only modules listed before it. That rules out cycles
//! between top-level modules and keeps `config` a leaf, the engine pure, and the CLI, `serve`
//! and the dev tools out of the product. Inside a top-level module, the files form no cycle
//! either: every `crate::…` and `super::…` path is resolved to the deepest module file it names
//! (`crate::api::error::ErrorObject` → `api/error.rs`, `super::App` → the parent's file), and
//! the graph of those file-to-file imports must be acyclic (a `mod` declaration and a bare
//! child path such as `router::route` are a parent's own business and not counted). Read from
//! the source text (outside `#[cfg(test)]` code), so no tool beyond the test itself is needed.
//! Also: no two public types share a name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const SRC: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src");

/// Top-level modules in the order `lib.rs` declares them.
fn declared_order() -> Vec<String> {
    let lib = std::fs::read_to_string(Path::new(SRC).join("lib.rs")).expect("lib.rs");
    lib.lines()
        .filter_map(|line| line.trim().strip_prefix("pub mod ").and_then(|rest| rest.strip_suffix(';')))
        .map(str::to_owned)
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The product part of a file: test modules (from the first `#[cfg(test)]` at column 0) and
/// comments cut away.
fn product_text(text: &str) -> String {
    let product = text.split("\n#[cfg(test)]").next().unwrap_or(text);
    product.lines().map(|line| line.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The first segment of every `crate::` path in `text`, including each item of a
/// `crate::{a::x, b}` group (nested groups included).
fn referenced_modules(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("crate::") {
        let start = from + at + "crate::".len();
        from = start;
        if bytes.get(start) == Some(&b'{') {
            let mut depth = 0usize;
            let mut item_start = true;
            for (i, &b) in bytes[start..].iter().enumerate() {
                match b {
                    b'{' => {
                        depth += 1;
                        item_start = depth == 1;
                    }
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            from = start + i;
                            break;
                        }
                    }
                    b',' if depth == 1 => item_start = true,
                    c if item_start && depth == 1 && (c.is_ascii_alphanumeric() || c == b'_') => {
                        out.insert(identifier(&text[start + i..]));
                        item_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(identifier(&text[start..]));
        }
    }
    out.retain(|m| !m.is_empty() && m != "self");
    out
}

fn identifier(text: &str) -> String {
    text.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// Top-level module → the top-level modules its product code names.
fn edges() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(SRC).expect("under src");
        let top = relative.components().next().expect("a component").as_os_str().to_string_lossy();
        let top = top.trim_end_matches(".rs").to_owned();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        let targets = referenced_modules(&product_text(&text));
        edges.entry(top.clone()).or_default().extend(targets.into_iter().filter(|t| *t != top));
    }
    edges
}

#[test]
fn every_import_points_down_the_declared_order() {
    let order = declared_order();
    assert!(order.len() >= 10, "lib.rs lists its modules as `pub mod name;`: {order:?}");
    let rank: BTreeMap<&str, usize> = order.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let mut upward = Vec::new();
    for (module, targets) in edges() {
        let Some(&own) = rank.get(module.as_str()) else {
            upward.push(format!("{module} is not declared in lib.rs"));
            continue;
        };
        for target in targets {
            match rank.get(target.as_str()) {
                Some(&t) if t < own => {}
                Some(_) => upward.push(format!("{module} -> {target}")),
                // A macro exported at the crate root (`crate::facts!`) or a root item.
                None => {}
            }
        }
    }
    assert!(upward.is_empty(), "imports that point up (or across) lib.rs's order: {upward:#?}");
}

/// A module path (`["api", "endpoints"]`; the crate root is `[]`), as Rust names it.
type ModulePath = Vec<String>;

/// Every module file under `src/` (the crate roots `lib.rs` and `main.rs` left out) by its
/// module path: `a/b.rs` and `a/b/mod.rs` are both `a::b`.
fn module_files() -> BTreeMap<ModulePath, String> {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut modules = BTreeMap::new();
    for file in files {
        let relative = file.strip_prefix(SRC).expect("under src").to_string_lossy().into_owned();
        let mut path: ModulePath = relative.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
        if path.last().is_some_and(|last| last == "mod") {
            path.pop();
        }
        if path != ["lib"] && path != ["main"] {
            modules.insert(path, relative);
        }
    }
    modules
}

/// Every path that starts with `crate::` or `super::` (repeated `super::` included) in `text`,
/// made absolute from `module` (the module the text is in); each item of a `{…}` group (nested
/// groups included) is a path of its own.
fn absolute_paths(text: &str, module: &[String]) -> Vec<ModulePath> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(at) = text[from..].find("::") {
        let colons = from + at;
        from = colons + 2;
        let head_start = text[..colons].rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
        let base = match &text[head_start..colons] {
            "crate" => Vec::new(),
            "super" => {
                // Only the first `super` of a `super::super::…` chain starts a path.
                if text[..head_start].ends_with("::") {
                    continue;
                }
                let mut base = module.to_vec();
                let mut rest = colons;
                base.pop();
                while text[rest + 2..].starts_with("super::") {
                    base.pop();
                    rest += "::super".len();
                }
                from = rest + 2;
                base
            }
            _ => continue,
        };
        let (paths, end) = path_tree(bytes, from);
        out.extend(paths.into_iter().map(|tail| [base.clone(), tail].concat()));
        from = end.max(from);
    }
    out
}

/// The paths of a `use` tree starting at `at` (`a::b`, `a::{b, c::{d}}`), as segment lists
/// relative to where the tree starts, and where the tree ends.
fn path_tree(bytes: &[u8], mut at: usize) -> (Vec<ModulePath>, usize) {
    let mut prefix = Vec::new();
    loop {
        while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
            at += 1;
        }
        if bytes.get(at) == Some(&b'{') {
            let mut paths = Vec::new();
            at += 1;
            loop {
                let (items, end) = path_tree(bytes, at);
                paths.extend(items.into_iter().map(|item| [prefix.clone(), item].concat()));
                // Past what ends the item (` as Alias`, a glob's `*`) to the next one or the end.
                at = end;
                while bytes.get(at).is_some_and(|b| *b != b',' && *b != b'}') {
                    at += 1;
                }
                if bytes.get(at).is_none_or(|b| *b == b'}') {
                    return (paths, at + 1);
                }
                at += 1;
            }
        }
        let length =
            bytes[at.min(bytes.len())..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        if length == 0 {
            return (vec![prefix], at);
        }
        prefix.push(String::from_utf8_lossy(&bytes[at..at + length]).into_owned());
        at += length;
        if bytes[at..].starts_with(b"::") {
            at += 2;
        } else {
            return (vec![prefix], at);
        }
    }
}

/// The deepest module of `modules` that `path` names, if any (the crate root is none).
fn deepest_module<'m>(modules: &'m BTreeMap<ModulePath, String>, path: &[String]) -> Option<&'m ModulePath> {
    (1..=path.len()).rev().find_map(|len| modules.get_key_value(&path[..len]).map(|(key, _)| key))
}

/// File → the files its product code imports (never itself).
fn file_edges() -> BTreeMap<String, BTreeSet<String>> {
    let modules = module_files();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &modules {
        let text = std::fs::read_to_string(Path::new(SRC).join(file)).expect("read source");
        let targets = absolute_paths(&product_text(&text), module)
            .into_iter()
            .filter_map(|path| deepest_module(&modules, &path))
            .filter(|target| *target != module)
            .map(|target| modules[target].clone());
        edges.entry(file.clone()).or_default().extend(targets);
    }
    edges
}

/// One cycle of `edges` through each strongly connected component of more than one file
/// (Tarjan's algorithm, then a walk inside the component), as `a.rs -> b.rs -> a.rs`.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    struct Tarjan<'e> {
        edges: &'e BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'e str, (usize, usize)>,
        stack: Vec<&'e str>,
        components: Vec<Vec<&'e str>>,
    }
    impl<'e> Tarjan<'e> {
        fn visit(&mut self, node: &'e str) {
            let order = self.index.len();
            self.index.insert(node, (order, order));
            self.stack.push(node);
            for next in self.edges.get(node).into_iter().flatten() {
                let low = match self.index.get(next.as_str()) {
                    None => {
                        self.visit(next);
                        self.index[next.as_str()].1
                    }
                    Some(&(seen, _)) if self.stack.contains(&next.as_str()) => seen,
                    Some(_) => continue,
                };
                let entry = self.index.get_mut(node).expect("visited");
                entry.1 = entry.1.min(low);
            }
            let (order, low) = self.index[node];
            if order == low {
                let at = self.stack.iter().rposition(|n| *n == node).expect("on the stack");
                self.components.push(self.stack.split_off(at));
            }
        }
    }
    let mut tarjan = Tarjan { edges, index: BTreeMap::new(), stack: Vec::new(), components: Vec::new() };
    for node in edges.keys() {
        if !tarjan.index.contains_key(node.as_str()) {
            tarjan.visit(node);
        }
    }
    let mut found = Vec::new();
    for component in tarjan.components.into_iter().filter(|c| c.len() > 1) {
        // From the component's first file, always to a file of the component not yet walked,
        // until the next step can close the circle.
        let start = component[0];
        let mut walk = vec![start];
        loop {
            let here = walk[walk.len() - 1];
            let next = &edges[here];
            if walk.len() > 1 && next.contains(start) {
                break;
            }
            match next.iter().find(|n| component.contains(&n.as_str()) && !walk.contains(&n.as_str())) {
                Some(n) => walk.push(n),
                None => break,
            }
        }
        walk.push(start);
        found.push(format!("{} (files of the circle: {component:?})", walk.join(" -> ")));
    }
    found
}

#[test]
fn no_import_circle_between_files() {
    let edges = file_edges();
    assert!(edges["api/endpoints.rs"].contains("api/mod.rs"), "`super::` paths are read: {edges:#?}");
    assert!(edges["jobs/pool.rs"].contains("ledger/read.rs"), "`crate::` paths are read: {edges:#?}");
    let found = cycles(&edges);
    assert!(found.is_empty(), "files that import each other, directly or around a circle: {found:#?}");
}

#[test]
fn the_file_reader_resolves_paths_and_finds_circles() {
    let modules: BTreeMap<ModulePath, String> = [["a"].as_slice(), &["a", "b"], &["a", "b", "c"], &["d"]]
        .into_iter()
        .map(|path| (path.iter().map(|s| s.to_string()).collect(), format!("{}.rs", path.join("/"))))
        .collect();
    let module: ModulePath = vec!["a".into(), "b".into(), "c".into()];
    let text = "use crate::{a::b::{X as W, c::*}, d};\nuse super::super::Z;\nlet v = super::f(crate::d::g);\nfoo::bar;";
    let named: Vec<Option<String>> = absolute_paths(text, &module)
        .iter()
        .map(|path| deepest_module(&modules, path).map(|m| modules[m].clone()))
        .collect();
    let want = ["a/b.rs", "a/b/c.rs", "d.rs", "a.rs", "a/b.rs", "d.rs"].map(|f| Some(f.to_owned()));
    assert_eq!(named, want);
    let edge = |from: &str, to: &[&str]| (from.to_owned(), to.iter().map(|t| t.to_string()).collect());
    let circle: BTreeMap<String, BTreeSet<String>> =
        [edge("a.rs", &["b.rs"]), edge("b.rs", &["c.rs", "d.rs"]), edge("c.rs", &["a.rs"]), edge("d.rs", &[])]
            .into_iter()
            .collect();
    let found = cycles(&circle);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("a.rs -> b.rs -> c.rs -> a.rs"), "{found:?}");
    let acyclic: BTreeMap<String, BTreeSet<String>> =
        [edge("a.rs", &["b.rs"]), edge("b.rs", &[])].into_iter().collect();
    assert!(cycles(&acyclic).is_empty());
}

#[test]
fn config_is_a_leaf_and_the_product_imports_no_tool() {
    let edges = edges();
    assert_eq!(edges.get("config").map(BTreeSet::len).unwrap_or(0), 0, "config imports {:?}", edges.get("config"));
    let product_users = |tool: &str| -> Vec<&String> {
        edges
            .iter()
            .filter(|(m, t)| t.contains(tool) && !["cli", "devtools"].contains(&m.as_str()))
            .map(|(m, _)| m)
            .collect()
    };
    for tool in ["cli", "devtools", "serve"] {
        assert!(product_users(tool).is_empty(), "{tool} is imported by {:?}", product_users(tool));
    }
}

#[test]
fn the_reader_finds_grouped_and_nested_imports() {
    let text = "use crate::{a::b, c::{d, e}, self};\nlet x = crate::f::g();\n// crate::comment\n";
    let found = referenced_modules(&product_text(text));
    assert_eq!(found.into_iter().collect::<Vec<_>>(), ["a", "c", "f"]);
}

/// `pub struct|enum|trait|type Name` declarations in `src/` (test modules excluded).
fn public_type_names() -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    rust_files(Path::new(SRC), &mut files);
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        let relative = file.strip_prefix(SRC).expect("under src").display().to_string();
        for line in product_text(&text).lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let ["pub", "struct" | "enum" | "trait" | "type", name, ..] = words.as_slice() {
                names.entry(identifier(name)).or_default().push(relative.clone());
            }
        }
    }
    names
}

#[test]
fn no_two_public_types_share_a_name() {
    let names = public_type_names();
    assert!(names.contains_key("ApiError") && names.contains_key("JobRecord"), "the scan finds types");
    let shared: Vec<_> = names.iter().filter(|(_, places)| places.len() > 1).collect();
    assert!(shared.is_empty(), "public types declared twice (a reader cannot tell them apart): {shared:#?}");
}
