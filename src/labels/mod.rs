//! Labels: what the service knows about particular addresses — programs, sysvars, mints,
//! known entities and flagged (malicious) addresses. Labels are data, not code.
//!
//! Owns: the labels file format (TOML, version 1, documented in docs/labels.md), the default
//! file compiled into the binary, loading another file, and address lookups. A loaded table is
//! immutable (`Arc`-shared, no locks); `live` holds the one in force and swaps it whole when an
//! operator reloads the files at run time.
//!
//! Invariant: a loaded `Labels` is valid — every address is base58 of 32 bytes, every
//! category known, no address listed twice, at most `LABELS_LEN_MAX` entries. A file that
//! breaks any of these is refused whole with a message naming the entry.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;

use crate::config::{LABELS_FILE_BYTES_MAX, LABELS_LEN_MAX};
use crate::pubkey::Pubkey;

pub mod domains;
pub mod live;
pub mod ofac;
pub mod registry;

/// The default labels file, shipped inside the binary.
pub const DEFAULT_LABELS_TOML: &str = include_str!("default.toml");
/// The program registry (docs/program-registry.md): mainnet programs named by at least two
/// independent public sources, each entry with its sources. Part of the builtin labels.
pub const PROGRAM_REGISTRY_TOML: &str = include_str!("programs.toml");
const FORMAT_VERSION: u32 = 1;

/// What kind of address a label describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Native programs, loaders and precompiles.
    Builtin,
    Sysvar,
    /// Well-known on-chain programs.
    Program,
    /// Token mints.
    Mint,
    /// Known-good entities (exchanges, market makers, bridges).
    Entity,
    /// Malicious or compromised addresses: drainer programs, attackers, scam funders.
    Flagged,
    /// On a sanctions list (`xray labels import`: the OFAC SDN list's Solana addresses).
    Sanctioned,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Label {
    pub address: Pubkey,
    pub name: String,
    pub category: Category,
    /// Free-form qualifiers: `stablecoin`, `exchange`, `drainer`, `attacker`, `demo`, …
    pub tags: Vec<String>,
    /// Where the label comes from (a sanctions list's name and date), when the file says.
    pub source: Option<String>,
}

impl Label {
    pub fn has_tag(&self, tag: &str) -> bool {
        self.tags.iter().any(|t| t == tag)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileFormat {
    version: u32,
    #[serde(default)]
    label: Vec<FileLabel>,
    #[serde(default)]
    domain: Vec<FileDomain>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDomain {
    domain: String,
    category: domains::DomainCategory,
    #[serde(default)]
    source: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLabel {
    address: String,
    name: String,
    category: Category,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    source: Option<String>,
}

/// One `[[label]]` entry of a labels file, as the importers write it. A JSON string is a TOML
/// basic string (JSON's escapes are a subset of TOML's) once DEL is escaped too (JSON leaves
/// U+007F bare; TOML refuses it), so any text quotes safely.
pub(crate) fn label_entry(address: &Pubkey, name: &str, category: &str, tags: &[&str], source: &str) -> String {
    let quote = |text: &str| {
        serde_json::to_string(text).map_or_else(|_| "\"\"".to_owned(), |quoted| quoted.replace('\u{7f}', "\\u007F"))
    };
    let tags: Vec<String> = tags.iter().map(|t| quote(t)).collect();
    format!(
        "\n[[label]]\naddress = {}\nname = {}\ncategory = {}\ntags = [{}]\nsource = {}\n",
        quote(&address.to_base58()),
        quote(name),
        quote(category),
        tags.join(", "),
        quote(source),
    )
}

/// The tag of labels that describe the demo ledger's synthetic actors (not the chain).
pub const DEMO_TAG: &str = "demo";

/// The tag of the labels an account's allow-list gives (`Lists`).
pub const POLICY_TAG: &str = "policy";

/// An account's own lists over the labels (its policy's allow- and deny-list), laid over a
/// table by `Labels::with_lists` for that account's jobs only — never merged into the table.
///
/// Invariant: no address is on both lists (the policy's validation refuses it).
/// - An allow-listed address reads as a known-good entity (`Category::Entity`, tag `policy`)
///   unless the labels name it sanctioned, a program, builtin, sysvar or mint: those always win.
/// - A deny-listed address is flagged (`is_flagged`) and keeps its label otherwise, so rules
///   that fire on *unlabelled* addresses still fire: denying never hides a finding.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lists {
    allow: HashMap<Pubkey, Label>,
    deny: HashSet<Pubkey>,
}

impl Lists {
    /// The lists; `Err` names an address on both.
    pub fn new(allow: impl IntoIterator<Item = Pubkey>, deny: HashSet<Pubkey>) -> Result<Lists, Pubkey> {
        let mut allowed = HashMap::new();
        for address in allow {
            if deny.contains(&address) {
                return Err(address);
            }
            let label = Label {
                address,
                name: "allow-listed by the account's policy".to_owned(),
                category: Category::Entity,
                tags: vec![POLICY_TAG.to_owned()],
                source: Some("policy".to_owned()),
            };
            allowed.insert(address, label);
        }
        Ok(Lists { allow: allowed, deny })
    }

    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    pub fn allowed(&self) -> impl Iterator<Item = &Pubkey> {
        self.allow.keys()
    }

    pub fn denied(&self) -> impl Iterator<Item = &Pubkey> {
        self.deny.iter()
    }
}

/// Categories an account's allow-list cannot turn into an entity.
fn outranks_allow(category: Category) -> bool {
    matches!(category, Category::Sanctioned | Category::Builtin | Category::Sysvar | Category::Program | Category::Mint)
}

/// An immutable address → label table.
#[derive(Debug, Clone, Default)]
pub struct Labels {
    /// Shared, so laying an account's lists over the table copies no label.
    by_address: Arc<HashMap<Pubkey, Label>>,
    /// Labels of category `sanctioned`, those tagged `demo` apart (counted once at load: the job
    /// asks per wallet).
    sanctioned_len: usize,
    sanctioned_demo_len: usize,
    domains: Arc<domains::Domains>,
    /// The lists of the account whose job reads these labels (`with_lists`).
    lists: Option<Arc<Lists>>,
    /// `digest`, made once on first use and shared by every view with lists laid over.
    digest: Arc<OnceLock<String>>,
}

impl Labels {
    /// The labels compiled into the binary: the default file with the program registry added.
    pub fn builtin() -> Arc<Labels> {
        static DEFAULT: OnceLock<Arc<Labels>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                // A test parses the same texts, so a broken builtin file fails the build's tests.
                let base = Labels::from_toml(DEFAULT_LABELS_TOML).unwrap_or_default();
                let registry = Labels::from_toml(PROGRAM_REGISTRY_TOML).unwrap_or_default();
                Arc::new(base.merged(&registry).unwrap_or(base))
            })
            .clone()
    }

    /// Loads a labels file, or the builtin labels when `path` is `None`, then adds each of
    /// `extra` (a sanctions import, the operator's own): an address an extra file lists is
    /// labelled as that file says, whatever the base said.
    pub fn load_with(path: Option<&Path>, extra: &[std::path::PathBuf]) -> Result<Arc<Labels>, String> {
        let mut labels = Labels::load(path)?;
        for file in extra {
            let added = Labels::load(Some(file))?;
            labels = Arc::new(labels.merged(&added)?);
        }
        Ok(labels)
    }

    /// These labels with `other`'s added (`other` wins for an address both list), bounded by
    /// `LABELS_LEN_MAX` like one file.
    pub fn merged(&self, other: &Labels) -> Result<Labels, String> {
        let mut by_address = (*self.by_address).clone();
        by_address.extend(other.by_address.iter().map(|(address, label)| (*address, label.clone())));
        if by_address.len() > LABELS_LEN_MAX {
            return Err(format!("more than {LABELS_LEN_MAX} labels once merged"));
        }
        Ok(Labels { domains: Arc::new(self.domains.merged(&other.domains)?), ..Labels::of(by_address) })
    }

    /// Loads a labels file, or the builtin labels when `path` is `None`.
    pub fn load(path: Option<&Path>) -> Result<Arc<Labels>, String> {
        let Some(path) = path else { return Ok(Labels::builtin()) };
        let meta = std::fs::metadata(path).map_err(|e| format!("labels {}: {e}", path.display()))?;
        if meta.len() > LABELS_FILE_BYTES_MAX {
            return Err(format!("labels {}: larger than {LABELS_FILE_BYTES_MAX} bytes", path.display()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("labels {}: {e}", path.display()))?;
        Labels::from_toml(&text).map(Arc::new).map_err(|e| format!("labels {}: {e}", path.display()))
    }

    pub fn from_toml(text: &str) -> Result<Labels, String> {
        let file: FileFormat = toml::from_str(text).map_err(|e| e.to_string())?;
        if file.version != FORMAT_VERSION {
            return Err(format!("unsupported labels format version {} (expected {FORMAT_VERSION})", file.version));
        }
        if file.label.len() > LABELS_LEN_MAX {
            return Err(format!("more than {LABELS_LEN_MAX} labels"));
        }
        let mut by_address = HashMap::with_capacity(file.label.len());
        for (i, entry) in file.label.into_iter().enumerate() {
            let address = Pubkey::parse(&entry.address)
                .map_err(|e| format!("label #{} ({:?}): address {}", i + 1, entry.address, e.reason()))?;
            let label =
                Label { address, name: entry.name, category: entry.category, tags: entry.tags, source: entry.source };
            if by_address.insert(address, label).is_some() {
                return Err(format!("label #{} ({}): address listed twice", i + 1, entry.address));
            }
        }
        let mut domains = domains::Domains::default();
        for (i, entry) in file.domain.into_iter().enumerate() {
            let label = domains::DomainLabel { domain: entry.domain, category: entry.category, source: entry.source };
            domains.insert(label).map_err(|e| format!("domain #{}: {e}", i + 1))?;
        }
        Ok(Labels { domains: Arc::new(domains), ..Labels::of(by_address) })
    }

    /// The table of these labels, with its sanctioned entries counted once.
    fn of(by_address: HashMap<Pubkey, Label>) -> Labels {
        let sanctioned = by_address.values().filter(|l| l.category == Category::Sanctioned);
        let (demo, listed): (Vec<&Label>, Vec<&Label>) = sanctioned.partition(|l| l.has_tag(DEMO_TAG));
        let (sanctioned_len, sanctioned_demo_len) = (listed.len(), demo.len());
        Labels {
            by_address: Arc::new(by_address),
            sanctioned_len,
            sanctioned_demo_len,
            domains: Arc::default(),
            lists: None,
            digest: Arc::default(),
        }
    }

    /// A digest of these labels — every address label (address, category, name, tags) and every
    /// domain label, the account's lists apart (a policy's version names those): SHA-256, first
    /// 16 bytes in hex. A signed scan carries it (`engineVersions.labels`): labels decide
    /// verdicts (a labelled program is known, a labelled recipient no stranger), so two scans of
    /// one message under one policy that differ say why.
    pub fn digest(&self) -> &str {
        self.digest.get_or_init(|| {
            use sha2::{Digest, Sha256};
            let mut labels: Vec<&Label> = self.by_address.values().collect();
            labels.sort_unstable_by(|a, b| a.address.as_bytes().cmp(b.address.as_bytes()));
            let mut hasher = Sha256::new();
            for label in labels {
                hasher.update(label.address.as_bytes());
                let text = format!("{:?}\u{0}{}\u{0}{}\u{0}", label.category, label.name, label.tags.join("\u{1}"));
                hasher.update(text.as_bytes());
            }
            self.domains.digest_into(&mut hasher);
            hasher.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
        })
    }

    /// These labels as one account's jobs read them: with its allow- and deny-list laid over
    /// (see `Lists`). Copies no label.
    pub fn with_lists(&self, lists: Arc<Lists>) -> Labels {
        Labels { lists: (!lists.is_empty()).then_some(lists), ..self.clone() }
    }

    /// The dApp domains (phishing and trusted sites) the labels list.
    pub fn domains(&self) -> &domains::Domains {
        &self.domains
    }

    pub fn get(&self, address: &Pubkey) -> Option<&Label> {
        let label = self.by_address.get(address);
        let Some(lists) = &self.lists else { return label };
        match lists.allow.get(address) {
            Some(allowed) if !label.is_some_and(|l| outranks_allow(l.category)) => Some(allowed),
            _ => label,
        }
    }

    /// The labels' own entry for `address`, whatever the account's lists say (`Lists`).
    pub fn get_ignoring_lists(&self, address: &Pubkey) -> Option<&Label> {
        self.by_address.get(address)
    }

    pub fn len(&self) -> usize {
        self.by_address.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_address.is_empty()
    }

    pub fn category(&self, address: &Pubkey) -> Option<Category> {
        self.get(address).map(|l| l.category)
    }

    /// On a sanctions list (category `sanctioned`).
    pub fn is_sanctioned(&self, address: &Pubkey) -> bool {
        self.category(address) == Some(Category::Sanctioned)
    }

    /// True when any address is on a sanctions list — counting the synthetic entries tagged
    /// `demo` only when `demo` (they describe the demo ledger's actors, not the chain): only
    /// then is a funder's history one hop out worth reading.
    pub fn has_sanctioned(&self, demo: bool) -> bool {
        self.sanctioned_len > 0 || (demo && self.sanctioned_demo_len > 0)
    }

    /// Flagged by the labels (unless the account's allow-list says otherwise), or on the
    /// account's deny-list.
    pub fn is_flagged(&self, address: &Pubkey) -> bool {
        self.category(address) == Some(Category::Flagged) || self.is_denied(address)
    }

    /// On the account's own deny list (its policy's `denyList`), whatever the labels say: what a
    /// finding or signal names as its `reason` (`engine::report::with_list_reason`).
    pub fn is_denied(&self, address: &Pubkey) -> bool {
        self.lists.as_ref().is_some_and(|l| l.deny.contains(address))
    }

    /// On the deny list and nothing worse by the labels' own verdict (neither flagged nor
    /// sanctioned there): the account's list is then the reason a finding or signal is raised or
    /// made worse (`reason: "deny_list"`, and its text says so). A sanctions hit or a labelled
    /// drainer the account also listed keeps the labels' verdict as its reason.
    pub fn denied_only(&self, address: &Pubkey) -> bool {
        self.is_denied(address)
            && !self
                .get_ignoring_lists(address)
                .is_some_and(|l| matches!(l.category, Category::Flagged | Category::Sanctioned))
    }

    /// A label that vouches for a recipient: any, unless it (or the account's deny-list) says
    /// flagged or sanctioned. A sweep to such an address is no sweep to a stranger (the scan's
    /// `asset_sweep` and the X-Ray's `wallet_swept` alike).
    pub fn vouches_for(&self, address: &Pubkey) -> bool {
        self.get(address).is_some() && !self.is_flagged(address) && !self.is_sanctioned(address)
    }

    /// Programs, loaders and precompiles: never a counterparty in the personal sense.
    pub fn is_program(&self, address: &Pubkey) -> bool {
        matches!(self.category(address), Some(Category::Builtin | Category::Program))
    }

    /// Addresses too common to link two wallets: known programs, sysvars, mints, entities.
    pub fn is_hub(&self, address: &Pubkey) -> bool {
        matches!(self.category(address), Some(c) if !matches!(c, Category::Flagged | Category::Sanctioned))
    }

    pub fn is_stablecoin(&self, mint: &Pubkey) -> bool {
        self.get(mint).is_some_and(|l| l.category == Category::Mint && l.has_tag("stablecoin"))
    }

    /// Every label, sorted by address (for listing and tests).
    pub fn iter_sorted(&self) -> Vec<&Label> {
        let mut all: Vec<&Label> = self.by_address.values().collect();
        all.sort_by_key(|l| l.address);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_names_the_labels_and_their_domains_not_the_accounts_lists() {
        let base = "version = 1\n[[label]]\naddress = \"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA\"\n\
                    name = \"Token\"\ncategory = \"program\"\n";
        let digest = |text: &str| Labels::from_toml(text).expect("labels").digest().to_owned();
        let one = digest(base);
        assert_eq!(one.len(), 32);
        assert_eq!(one, digest(base), "the same labels, the same digest");
        assert_ne!(one, digest(&base.replace("\"Token\"", "\"Tokens\"")), "a name");
        assert_ne!(one, digest(&base.replace("\"program\"", "\"flagged\"")), "a category");
        let with_domain = format!("{base}[[domain]]\ndomain = \"phantom.app\"\ncategory = \"trusted\"\n");
        assert_ne!(one, digest(&with_domain), "a domain");
        let labels = Labels::from_toml(base).expect("labels");
        let deny = Lists::new([], [Pubkey([7; 32])].into_iter().collect()).expect("lists");
        assert_eq!(labels.with_lists(Arc::new(deny)).digest(), labels.digest(), "lists are the policy's");
    }

    #[test]
    fn an_imported_entry_loads_whatever_its_name_holds() {
        let token = Pubkey::parse("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA").unwrap();
        let name = "a \"quoted\" \\ name\nwith DEL \u{7f}, a tab\t and é€😀";
        let entry = label_entry(&token, name, "program", &["t\u{7f}ag"], "source \u{1}");
        let labels = Labels::from_toml(&format!("version = 1\n{entry}")).expect("the entry loads");
        let label = labels.get(&token).expect("labelled");
        assert_eq!(label.name, name);
        assert_eq!(label.source.as_deref(), Some("source \u{1}"));
    }

    #[test]
    fn default_file_is_valid() {
        let labels = Labels::from_toml(DEFAULT_LABELS_TOML).unwrap();
        assert!(labels.len() > 40);
        let token = Pubkey::parse("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA").unwrap();
        assert!(labels.is_program(&token));
        let usdc = Pubkey::parse("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").unwrap();
        assert!(labels.is_stablecoin(&usdc));
        let clock = Pubkey::parse("SysvarC1ock11111111111111111111111111111111").unwrap();
        assert_eq!(labels.category(&clock), Some(Category::Sysvar));
        let registry = Labels::from_toml(PROGRAM_REGISTRY_TOML).unwrap();
        assert_eq!(Labels::builtin().len(), labels.len() + registry.len(), "the registry repeats no default label");
    }

    #[test]
    fn the_program_registry_names_programs_with_their_sources() {
        let registry = Labels::from_toml(PROGRAM_REGISTRY_TOML).unwrap();
        assert!(registry.len() >= 150, "{} programs", registry.len());
        for label in registry.iter_sorted() {
            assert_eq!(label.category, Category::Program, "{}", label.address);
            assert_eq!(label.tags.len(), 1, "{}: one registry category", label.address);
            let sources = label.source.as_deref().unwrap_or_default();
            assert!(sources.split("; ").count() >= 2, "{}: two sources at least", label.address);
        }
        let raydium_clmm = Pubkey::parse("CAMMCzo5YL8w4VFF8KVHrK22GGUsp5VTaW7grrKgrWqK").unwrap();
        assert_eq!(Labels::builtin().get(&raydium_clmm).map(|l| l.category), Some(Category::Program));
    }

    #[test]
    fn default_file_flags_every_demo_flagged_address() {
        let labels = Labels::builtin();
        for (address, name, _) in crate::ledger::demo::DemoLedger::flagged_addresses() {
            let label = labels.get(&address).unwrap_or_else(|| panic!("{name} ({address}) missing from default.toml"));
            assert_eq!(label.category, Category::Flagged, "{name}");
            assert!(label.has_tag("demo"), "{name}");
        }
    }

    #[test]
    fn demo_tagged_sanctions_count_on_the_demo_ledger_only() {
        let builtin = Labels::builtin();
        assert!(builtin.has_sanctioned(true) && !builtin.has_sanctioned(false));
        let listed = Labels::from_toml(&format!(
            "version = 1\n[[label]]\naddress = \"{}\"\nname = \"x\"\ncategory = \"sanctioned\"\n",
            Pubkey::new([7; 32])
        ))
        .unwrap();
        assert!(listed.has_sanctioned(false) && listed.has_sanctioned(true));
        assert!(!Labels::from_toml("version = 1\n").unwrap().has_sanctioned(true));
    }

    #[test]
    fn default_file_lists_every_demo_sanctioned_address_with_its_list() {
        let labels = Labels::builtin();
        for (address, name, list) in crate::ledger::demo::DemoLedger::sanctioned_addresses() {
            let label = labels.get(&address).unwrap_or_else(|| panic!("{name} ({address}) missing from default.toml"));
            assert_eq!((label.category, label.source.as_deref()), (Category::Sanctioned, Some(list)), "{name}");
            assert!(label.has_tag("demo"), "{name}");
        }
    }

    #[test]
    fn refuses_bad_files_with_the_entry_named() {
        let cases = [
            ("version = 2", "version"),
            ("version = 1\n[[label]]\naddress = \"xyz0\"\nname = \"a\"\ncategory = \"program\"", "label #1"),
            ("version = 1\n[[label]]\naddress = \"11111111111111111111111111111111\"\nname = \"a\"\ncategory = \"martian\"", "unknown variant"),
            ("version = 1\n[[label]]\naddress = \"11111111111111111111111111111111\"\nname = \"a\"\ncategory = \"program\"\ncolour = 1", "unknown field"),
            (
                "version = 1\n[[label]]\naddress = \"11111111111111111111111111111111\"\nname = \"a\"\ncategory = \"program\"\n[[label]]\naddress = \"11111111111111111111111111111111\"\nname = \"b\"\ncategory = \"program\"",
                "listed twice",
            ),
        ];
        for (text, needle) in cases {
            let err = Labels::from_toml(text).unwrap_err();
            assert!(err.contains(needle), "{text:?} → {err}");
        }
    }

    #[test]
    fn loads_another_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.toml");
        let flagged = "5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd";
        std::fs::write(
            &path,
            format!("version = 1\n[[label]]\naddress = \"{flagged}\"\nname = \"x\"\ncategory = \"flagged\"\ntags = [\"attacker\"]\n"),
        )
        .unwrap();
        let labels = Labels::load(Some(&path)).unwrap();
        assert_eq!(labels.len(), 1);
        assert!(labels.is_flagged(&Pubkey::parse(flagged).unwrap()));
        assert!(Labels::load(Some(&dir.path().join("missing.toml"))).is_err());
        // An extra file adds to the builtin labels; its entry wins for an address both list.
        let system = "11111111111111111111111111111111";
        let extra = dir.path().join("extra.toml");
        let text = format!(
            "version = 1\n[[label]]\naddress = \"{system}\"\nname = \"relabelled\"\ncategory = \"flagged\"\n\
             [[label]]\naddress = \"DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z\"\nname = \"listed\"\ncategory = \"sanctioned\"\n"
        );
        std::fs::write(&extra, text).unwrap();
        let merged = Labels::load_with(None, std::slice::from_ref(&extra)).unwrap();
        assert_eq!(merged.len(), Labels::builtin().len() + 1);
        let system = Pubkey::parse(system).unwrap();
        assert_eq!((merged.get(&system).unwrap().name.as_str(), merged.is_flagged(&system)), ("relabelled", true));
        assert!(merged.has_sanctioned(false), "the extra file's sanctioned entry counts");
        assert!(Labels::load_with(None, &[dir.path().join("missing.toml")]).is_err());
    }
}
