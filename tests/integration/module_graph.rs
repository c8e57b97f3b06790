//! The crate's module graph has one direction: `src/lib.rs` lists the top-level modules
//! bottom-up, and a module may import only modules listed before it. That rules out cycles
//! and keeps `config` a leaf, the engine pure, and the CLI, `serve` and the dev tools out of
//! the product. Read from the source text (every `crate::…` path outside `#[cfg(test)]` code),
//! so no tool beyond the test itself is needed. Also: no two public types share a name.

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
