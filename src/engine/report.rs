//! The X-Ray and comparison payloads (contract §5): the engine's output, serialized as is
//! under `data.xray` / `data.comparison`.
//!
//! Owns: the payload structs, `Severity`, `RiskLevel`, `Relationship` and their wire names.
//! Built on compute threads by the engine, serialized by the HTTP edge and the CLI.
//!
//! Invariant: field names are the contract's (lowerCamelCase); token amounts are strings of
//! base units, lamports integers; every collection is in a deterministic order, so equal input
//! gives byte-identical JSON. Deliberately absent: timestamps of the analysis itself (the
//! engine has no clock; the job record carries createdAt/startedAt/completedAt).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::fixes::FixInstruction;

/// How bad a finding is. Ordered: `Info < Low < … < Critical`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Low,
    Medium,
    High,
    Critical,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// Every severity, least severe first.
    pub const ALL: [Severity; 5] =
        [Severity::Info, Severity::Low, Severity::Medium, Severity::High, Severity::Critical];

    /// The severity named `text` (`info` … `critical`), if any.
    pub fn parse(text: &str) -> Option<Severity> {
        Severity::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// One step more severe (`Critical` stays).
    pub fn raised(self) -> Severity {
        match self {
            Severity::Info => Severity::Low,
            Severity::Low => Severity::Medium,
            Severity::Medium => Severity::High,
            Severity::High | Severity::Critical => Severity::Critical,
        }
    }

    /// One step less severe (`Info` stays).
    pub fn lowered(self) -> Severity {
        match self {
            Severity::Info | Severity::Low => Severity::Info,
            Severity::Medium => Severity::Low,
            Severity::High => Severity::Medium,
            Severity::Critical => Severity::High,
        }
    }
}

/// Which account policy made a result (`policy` of an X-Ray, comparison or scan; issue #31):
/// `default` at version 0 for an account that never wrote one (`engine::policy`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct PolicyRef {
    pub id: String,
    pub version: u64,
}

/// The band a 0–100 safety score falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskLevel {
    Low,
    Medium,
    High,
    Critical,
}

/// Also read back from a stored X-Ray when a comparison reuses a fresh analysis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Score {
    /// 0–100, higher is safer.
    pub value: u8,
    pub risk_level: RiskLevel,
    /// 0–1, two decimals; falls when coverage is partial.
    pub confidence: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Dimension {
    pub id: &'static str,
    pub score: u8,
    pub weight: f64,
    pub risk_level: RiskLevel,
    pub signal_ids: Vec<String>,
}

/// Facts of a signal, ordered by key for determinism.
pub type Facts = BTreeMap<&'static str, Fact>;

/// One fact's value, in the contract's units (§1): lamports, counts, seconds and block times
/// are JSON integers, flags booleans; addresses, signatures, labels — and token amounts, which
/// are strings of base units so no client loses precision — are strings. The key names the
/// unit, never the value: `lamports` (or `…Lamports`) for SOL, and a token amount travels with
/// its `mint` and `decimals` (`put_token_amount`). Ordered (variant, then value) only so lists
/// of findings sort deterministically.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(untagged)]
pub enum Fact {
    Text(String),
    Unsigned(u64),
    Signed(i64),
    Flag(bool),
}

impl Fact {
    /// A token amount: a string of base units, never a JSON number.
    pub fn token_amount(base_units: u64) -> Fact {
        Fact::Text(base_units.to_string())
    }

    /// The value as text (numbers and flags in decimal / `true` / `false`).
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        use std::borrow::Cow;
        match self {
            Fact::Text(s) => Cow::Borrowed(s),
            Fact::Unsigned(n) => Cow::Owned(n.to_string()),
            Fact::Signed(n) => Cow::Owned(n.to_string()),
            Fact::Flag(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        }
    }
}

/// A token amount's facts: `key` (`amount`, `balance`, …) as a string of base units, and beside
/// it the `mint` and `decimals` that say which token and where its decimal point goes — each
/// when known (a plain `transfer` or `approve` names no mint; a scan whose token account did
/// not read learns no decimals), never guessed.
pub fn put_token_amount(
    facts: &mut Facts,
    key: &'static str,
    base_units: impl std::fmt::Display,
    mint: Option<&crate::pubkey::Pubkey>,
    decimals: Option<u8>,
) {
    facts.insert(key, Fact::Text(base_units.to_string()));
    if let Some(mint) = mint {
        facts.insert("mint", Fact::Text(mint.to_string()));
    }
    if let Some(decimals) = decimals {
        facts.insert("decimals", Fact::Unsigned(u64::from(decimals)));
    }
}

/// The `reason` fact's value on a finding or signal the account's own deny list causes (or
/// makes worse): the account listed the address, whatever the labels say of it.
pub const REASON_DENY_LIST: &str = "deny_list";

/// `facts` with `reason: "deny_list"` added when the account's deny list is why `address`
/// counts against the wallet (`Labels::denied_only`); unchanged otherwise: the labels' own
/// verdicts (flagged, sanctioned) carry no `reason`, also when the account listed the address.
pub fn with_list_reason(mut facts: Facts, labels: &crate::labels::Labels, address: &crate::pubkey::Pubkey) -> Facts {
    if labels.denied_only(address) {
        facts.insert("reason", Fact::Text(REASON_DENY_LIST.to_owned()));
    }
    facts
}

/// What `facts!` accepts as a value: integers become numbers, `bool` a flag, and addresses,
/// signatures and text strings. Token amounts go through `Fact::token_amount`.
pub trait IntoFact {
    fn into_fact(self) -> Fact;
}

impl IntoFact for Fact {
    fn into_fact(self) -> Fact {
        self
    }
}

impl IntoFact for bool {
    fn into_fact(self) -> Fact {
        Fact::Flag(self)
    }
}

macro_rules! into_fact_via {
    ($variant:ident as $wide:ty: $($t:ty),+) => {$(
        impl IntoFact for $t {
            fn into_fact(self) -> Fact {
                Fact::$variant(<$wide>::from(self))
            }
        }
    )+};
}
into_fact_via!(Unsigned as u64: u8, u16, u32, u64);
into_fact_via!(Signed as i64: i32, i64);

impl IntoFact for usize {
    fn into_fact(self) -> Fact {
        // usize fits u64 on every target this builds for.
        Fact::Unsigned(self as u64)
    }
}

macro_rules! into_fact_as_text {
    ($($t:ty),+) => {$(
        impl IntoFact for $t {
            fn into_fact(self) -> Fact {
                Fact::Text(self.to_string())
            }
        }
    )+};
}
into_fact_as_text!(
    String,
    &str,
    &String,
    crate::pubkey::Pubkey,
    &crate::pubkey::Pubkey,
    crate::pubkey::Signature,
    &crate::pubkey::Signature
);

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Signal {
    pub id: String,
    pub kind: &'static str,
    pub severity: Severity,
    pub dimension: &'static str,
    pub title: String,
    pub detail: String,
    pub facts: Facts,
    pub evidence_ids: Vec<String>,
    /// The unsigned instructions that remove the finding, when the wallet (or the one named as
    /// their signer) can send them; absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix_instructions: Vec<FixInstruction>,
}

/// One piece of evidence: a transaction instruction, or an account's state at a slot.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Evidence {
    #[serde(rename = "transaction", rename_all = "camelCase")]
    Transaction {
        id: String,
        signature: String,
        slot: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        block_time: Option<i64>,
        program_id: String,
        instruction: String,
        instruction_index: String,
        summary: String,
    },
    #[serde(rename = "account", rename_all = "camelCase")]
    Account { id: String, account: String, slot: u64, summary: String },
}

impl Evidence {
    pub fn id(&self) -> &str {
        match self {
            Evidence::Transaction { id, .. } | Evidence::Account { id, .. } => id,
        }
    }

    pub fn set_id(&mut self, new: String) {
        match self {
            Evidence::Transaction { id, .. } | Evidence::Account { id, .. } => *id = new,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttackStep {
    pub order: u8,
    pub actor: String,
    pub action: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AssetAtRisk {
    /// Mint address, or `SOL` for lamports.
    pub mint: String,
    /// Token base units as a decimal string; lamports (`mint` = `SOL`) as a JSON integer.
    pub amount: Fact,
    /// Where a token amount's decimal point goes (absent for SOL, and for tokens whose
    /// decimals the ledger did not give).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decimals: Option<u8>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttackPath {
    pub id: String,
    pub kind: &'static str,
    pub title: String,
    pub severity: Severity,
    pub steps: Vec<AttackStep>,
    pub assets_at_risk: Vec<AssetAtRisk>,
    pub signal_ids: Vec<String>,
    pub remediation: String,
    /// The unsigned instructions that close the path; `[]` when none can, and then `fix_note`
    /// says why and what to do instead.
    pub fix_instructions: Vec<FixInstruction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix_note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CoverageReport {
    pub ledger_source: String,
    pub as_of_slot: u64,
    pub transactions_analyzed: u32,
    pub history_complete: bool,
    /// How the search for nonce accounts naming the wallet went: `complete`, `cut` (more than
    /// the search keeps) or `failed` (the source does not serve it).
    pub nonce_search: &'static str,
    /// The first funder's recent history read one hop out, when it was (`view.funder_hop`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub funder_hop: Option<HopCoverage>,
}

/// `coverage.funderHop`: what of the first funder's history the X-Ray read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HopCoverage {
    pub address: String,
    pub transactions_analyzed: u32,
    /// False when the funder has more history than the hop reads, or the read failed.
    pub history_complete: bool,
}

/// `data.xray`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct XRay {
    pub wallet: String,
    pub score: Score,
    pub dimensions: Vec<Dimension>,
    pub signals: Vec<Signal>,
    pub evidence: Vec<Evidence>,
    pub attack_paths: Vec<AttackPath>,
    pub engine_versions: BTreeMap<&'static str, &'static str>,
    /// The account's policy that made it (issue #31).
    pub policy: PolicyRef,
    pub coverage: CoverageReport,
}

impl XRay {
    /// Checks the payload's promises (contract §5): every signal cites evidence, every cited
    /// evidence and signal id exists, scores are in range. The engine asserts this in debug
    /// builds and tests assert it on everything they analyze.
    pub fn check(&self) -> Result<(), String> {
        let evidence: std::collections::HashSet<&str> = self.evidence.iter().map(Evidence::id).collect();
        let signals: std::collections::HashSet<&str> = self.signals.iter().map(|s| s.id.as_str()).collect();
        if self.score.value > 100 || !(0.0..=1.0).contains(&self.score.confidence) {
            return Err(format!("score out of range: {:?}", self.score));
        }
        for s in &self.signals {
            if s.evidence_ids.is_empty() {
                return Err(format!("{} cites no evidence", s.id));
            }
            if let Some(missing) = s.evidence_ids.iter().find(|e| !evidence.contains(e.as_str())) {
                return Err(format!("{} cites missing {missing}", s.id));
            }
        }
        for d in &self.dimensions {
            if let Some(missing) = d.signal_ids.iter().find(|s| !signals.contains(s.as_str())) {
                return Err(format!("dimension {} names missing {missing}", d.id));
            }
        }
        for p in &self.attack_paths {
            if p.signal_ids.is_empty() {
                return Err(format!("{} rests on no signal", p.id));
            }
            if let Some(missing) = p.signal_ids.iter().find(|s| !signals.contains(s.as_str())) {
                return Err(format!("{} names missing {missing}", p.id));
            }
        }
        Ok(())
    }
}

/// JSON bytes ending in `depth` closing braces (`{…}`: 1; `{"data":{…}}`: 2) with
/// `"name": value` added as the last member of the innermost object — how a stored payload
/// (or a member computed later) joins a document without parsing it again.
pub fn with_last_member(mut json: Vec<u8>, depth: usize, name: &str, value: &[u8]) -> Vec<u8> {
    debug_assert!(json.len() > 2 * depth && json.iter().rev().take(depth).all(|b| *b == b'}'), "an object");
    json.truncate(json.len().saturating_sub(depth));
    json.reserve(name.len() + value.len() + 4 + depth);
    json.extend_from_slice(b",\"");
    json.extend_from_slice(name.as_bytes());
    json.extend_from_slice(b"\":");
    json.extend_from_slice(value);
    json.extend(std::iter::repeat_n(b'}', depth));
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::{Labels, Lists};
    use crate::pubkey::Pubkey;

    #[test]
    fn a_token_amount_is_a_string_beside_its_mint_and_decimals_and_lamports_an_integer() {
        let mint = Pubkey([90; 32]);
        let mut facts = Facts::from([("lamports", 21_780_842_148u64.into_fact())]);
        put_token_amount(&mut facts, "amount", u64::MAX, Some(&mint), Some(6));
        let json = serde_json::to_value(&facts).expect("serializes");
        assert_eq!(json["lamports"], serde_json::json!(21_780_842_148u64));
        assert_eq!(json["amount"], serde_json::json!(u64::MAX.to_string()), "exact, whatever the client's numbers");
        assert_eq!((json["mint"].as_str(), json["decimals"].as_u64()), (Some(&*mint.to_string()), Some(6)));
        let mut unknown = Facts::new();
        put_token_amount(&mut unknown, "amount", 5u64, None, None);
        assert_eq!(unknown.keys().copied().collect::<Vec<_>>(), ["amount"], "nothing guessed");
    }

    #[test]
    fn only_the_accounts_own_deny_list_gives_a_reason() {
        let (listed, other) = (Pubkey([9; 32]), Pubkey([8; 32]));
        let lists = Lists::new([other], [listed].into_iter().collect()).expect("lists");
        let labels = Labels::builtin().with_lists(std::sync::Arc::new(lists));
        let with = with_list_reason(Facts::new(), &labels, &listed);
        assert_eq!(with.get("reason"), Some(&Fact::Text(REASON_DENY_LIST.into())));
        assert!(with_list_reason(Facts::new(), &labels, &other).is_empty(), "an allow-listed address: none");
        assert!(with_list_reason(Facts::new(), &Labels::builtin(), &listed).is_empty(), "no lists: none");
    }

    #[test]
    fn an_address_the_labels_already_flag_or_sanction_keeps_their_verdict_as_its_reason() {
        use crate::labels::Category;
        let builtin = Labels::builtin();
        let of =
            |category: Category| builtin.iter_sorted().into_iter().find(|l| l.category == category).map(|l| l.address);
        let (Some(sanctioned), Some(flagged)) = (of(Category::Sanctioned), of(Category::Flagged)) else {
            panic!("the builtin labels hold a sanctioned and a flagged address")
        };
        let lists = Lists::new([], [sanctioned, flagged].into_iter().collect()).expect("lists");
        let labels = builtin.with_lists(std::sync::Arc::new(lists));
        assert!(labels.is_denied(&sanctioned) && labels.is_denied(&flagged));
        assert!(with_list_reason(Facts::new(), &labels, &sanctioned).is_empty(), "a sanctions hit stays one");
        assert!(with_list_reason(Facts::new(), &labels, &flagged).is_empty(), "a labelled drainer stays one");
    }
}
