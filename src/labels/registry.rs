//! Program lists read into labels: `xray labels import --format program-map` turns a public
//! program-id → name map (the shape of Jupiter's `program-id-to-label` list and of other
//! aggregators' label maps: one JSON object, ids as keys, names as values) into a labels file of
//! `program` labels, each with the list it came from as its source.
//!
//! Owns: `read_program_map` and `labels_toml`. Pure; called by the CLI only.
//!
//! Invariant: bounded — at most `PROGRAM_MAP_LEN_MAX` entries are read (the file itself is
//! bounded by the CLI), a name longer than `PROGRAM_NAME_CHARS_MAX` is cut; an entry whose key
//! is no address or whose name is empty is skipped and counted, never guessed at.
//! Deliberately absent: agreement between lists. The shipped registry (`programs.toml`) keeps an
//! id only where two independent publishers agree (docs/program-registry.md,
//! `scripts/check_programs.py`); an import is one list the operator chose to trust, laid over
//! the builtin labels with `--labels-extra`.

use std::collections::BTreeMap;

use crate::pubkey::Pubkey;

/// The most entries one map may hold (the largest public maps hold a few hundred).
pub const PROGRAM_MAP_LEN_MAX: usize = 100_000;
/// The longest name kept, in characters.
pub const PROGRAM_NAME_CHARS_MAX: usize = 120;

/// A program as a list names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedProgram {
    pub address: Pubkey,
    pub name: String,
}

/// What an import found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramImport {
    /// By address (sorted: the same list gives the same file).
    pub programs: Vec<ListedProgram>,
    /// Entries that are no address or have no name.
    pub skipped: usize,
}

/// Reads a program map (`{"<program id>": "<name>", …}`).
pub fn read_program_map(text: &str) -> Result<ProgramImport, String> {
    let map: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| format!("not a program map (a JSON object of id → name): {e}"))?;
    if map.len() > PROGRAM_MAP_LEN_MAX {
        return Err(format!("more than {PROGRAM_MAP_LEN_MAX} programs"));
    }
    let mut programs = Vec::with_capacity(map.len());
    let mut skipped = 0;
    for (key, value) in map {
        let name = value.as_str().map(str::trim).unwrap_or_default();
        match Pubkey::parse(key.trim()) {
            Ok(address) if !name.is_empty() => {
                programs.push(ListedProgram { address, name: name.chars().take(PROGRAM_NAME_CHARS_MAX).collect() })
            }
            _ => skipped += 1,
        }
    }
    programs.sort_by_key(|p| p.address);
    programs.dedup_by_key(|p| p.address);
    Ok(ProgramImport { programs, skipped })
}

/// The labels file of an import: every program `category = "program"`, tagged `tag` (the
/// registry category the list stands for: `dex`, `amm`, …), with `list` as its source.
pub fn labels_toml(import: &ProgramImport, list: &str, tag: &str) -> String {
    let mut out = String::from("# Programs imported by `xray labels import --format program-map`.\nversion = 1\n");
    for p in &import.programs {
        out.push_str(&super::label_entry(&p.address, &p.name, "program", &[tag], list));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::{Category, Labels};

    #[test]
    fn a_program_map_imports_and_loads_back() {
        let text = r#"{
            "CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK": "Raydium CLMM",
            "whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc": "Whirlpool \"Orca\"",
            "not-an-address": "Broken",
            "675kPX9MHTjS2zt1qfr1NYHuzeLXfQM9H24wFSUt1Mp8": ""
        }"#;
        let import = read_program_map(text).unwrap();
        assert_eq!((import.programs.len(), import.skipped), (2, 2));
        let labels = Labels::from_toml(&labels_toml(&import, "jup-ag program-id-to-label 2026-11-28", "dex")).unwrap();
        let clmm = Pubkey::parse("CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK").unwrap();
        let label = labels.get(&clmm).unwrap();
        assert_eq!((label.category, label.name.as_str()), (Category::Program, "Raydium CLMM"));
        assert_eq!(label.tags, ["dex"]);
        assert_eq!(label.source.as_deref(), Some("jup-ag program-id-to-label 2026-11-28"));
        let orca = Pubkey::parse("whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc").unwrap();
        assert_eq!(labels.get(&orca).unwrap().name, "Whirlpool \"Orca\"");
    }

    #[test]
    fn what_is_not_a_map_is_refused() {
        assert!(read_program_map("[1, 2]").is_err());
        assert!(read_program_map("{").is_err());
    }
}
