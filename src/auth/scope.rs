//! The scopes of an API key and the endpoints each grants (contract §2: its four, then the
//! extensions' own).
//!
//! Owns: `Scope`, `Scopes` (a bitset), parsing from a comma list, and the endpoint strings the
//! status endpoint lists. Called from listener threads (scope check, status endpoint) and the
//! admin path (parsing).
//!
//! Invariant: `Scope::ALL` is in the contract's order, and that order is used wherever scopes
//! are listed (status endpoint, serialization), so output is deterministic.
//! Invariant: an unknown scope name is an error, never silently dropped.
//! Deliberately absent: routing (the edge knows which scope a route needs; `Scope::endpoints`
//! is for display).

use std::fmt;

use crate::config::{SCOPE_ENTRIES_MAX, SCOPE_LIST_LEN_MAX};
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

/// One scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    WalletAnalyze,
    WalletCompare,
    AnalysisRead,
    UsageRead,
    /// The pre-sign transaction scan (issue #29): an extension of the contract.
    TransactionScan,
    /// Monitors (issue #30): create, change and delete them.
    MonitorWrite,
    /// Monitors: read them; their events also need `analysis:read` (an event carries an
    /// analysis' changes).
    MonitorRead,
    /// The account's policy (issue #31): read it.
    PolicyRead,
    /// The account's policy: replace it.
    PolicyWrite,
}

impl Scope {
    /// Every scope, in the contract's order.
    pub const ALL: [Scope; 9] = [
        Scope::WalletAnalyze,
        Scope::WalletCompare,
        Scope::AnalysisRead,
        Scope::UsageRead,
        Scope::TransactionScan,
        Scope::MonitorWrite,
        Scope::MonitorRead,
        Scope::PolicyRead,
        Scope::PolicyWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::WalletAnalyze => "wallet:analyze",
            Scope::WalletCompare => "wallet:compare",
            Scope::AnalysisRead => "analysis:read",
            Scope::UsageRead => "usage:read",
            Scope::TransactionScan => "transaction:scan",
            Scope::MonitorWrite => "monitor:write",
            Scope::MonitorRead => "monitor:read",
            Scope::PolicyRead => "policy:read",
            Scope::PolicyWrite => "policy:write",
        }
    }

    pub fn parse(text: &str) -> Result<Self, ScopeError> {
        Scope::ALL.into_iter().find(|s| s.as_str() == text).ok_or(ScopeError::Unknown)
    }

    /// The endpoints the scope grants, as the status endpoint lists them: the contract's list,
    /// unchanged (`wallet:analyze` also grants the batch, `POST …/intelligence/wallets`, an
    /// extension the routing table knows; listing it would change the contract's document).
    pub fn endpoints(self) -> &'static [&'static str] {
        match self {
            Scope::WalletAnalyze => &["POST /v1/developer/intelligence/wallet"],
            Scope::WalletCompare => &["POST /v1/developer/intelligence/compare"],
            Scope::AnalysisRead => {
                &["GET /v1/developer/intelligence/analysis/:id", "GET /v1/developer/intelligence/comparison/:pairId"]
            }
            Scope::UsageRead => &["GET /v1/developer/usage"],
            Scope::TransactionScan => &["POST /v1/developer/intelligence/transaction"],
            Scope::MonitorWrite => &[
                "POST /v1/developer/monitors",
                "PATCH /v1/developer/monitors/:id",
                "DELETE /v1/developer/monitors/:id",
                "POST /v1/developer/monitors/:id/events/:eventId/redeliver",
            ],
            Scope::MonitorRead => &[
                "GET /v1/developer/monitors",
                "GET /v1/developer/monitors/:id",
                "GET /v1/developer/monitors/:id/events",
            ],
            Scope::PolicyRead => &["GET /v1/developer/policy"],
            Scope::PolicyWrite => &["PUT /v1/developer/policy"],
        }
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a scope list was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ScopeError {
    #[error("unknown scope (the scopes are {SCOPE_LIST})")]
    Unknown,
    #[error("empty entry in the scope list")]
    EmptyEntry,
    #[error("scope list longer than {SCOPE_LIST_LEN_MAX} bytes")]
    TooLong,
}

/// A set of scopes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes(u16);

impl Scopes {
    pub const NONE: Scopes = Scopes(0);
    pub const ALL: Scopes = Scopes(0b1_1111_1111);

    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    pub fn with(self, scope: Scope) -> Self {
        Scopes(self.0 | scope.bit())
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The granted scopes, in the contract's order.
    pub fn iter(self) -> impl Iterator<Item = Scope> {
        Scope::ALL.into_iter().filter(move |s| self.contains(*s))
    }

    /// Every known scope with whether this set grants it (the status endpoint's `scopes`).
    pub fn grants(self) -> impl Iterator<Item = (Scope, bool)> {
        Scope::ALL.into_iter().map(move |s| (s, self.contains(s)))
    }

    /// Parses `wallet:analyze,analysis:read` (spaces around entries allowed, duplicates merged).
    /// An empty or all-blank text is the empty set: such a key may still call the status endpoint.
    pub fn parse_list(text: &str) -> Result<Self, ScopeError> {
        if text.len() > SCOPE_LIST_LEN_MAX {
            return Err(ScopeError::TooLong);
        }
        if text.trim().is_empty() {
            return Ok(Scopes::NONE);
        }
        text.split(',').try_fold(Scopes::NONE, |set, entry| match entry.trim() {
            "" => Err(ScopeError::EmptyEntry),
            name => Scope::parse(name).map(|s| set.with(s)),
        })
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Self {
        iter.into_iter().fold(Scopes::NONE, Scopes::with)
    }
}

impl fmt::Display for Scopes {
    /// The comma list `parse_list` reads.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, scope) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(scope.as_str())?;
        }
        Ok(())
    }
}

impl fmt::Debug for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scopes({self})")
    }
}

/// Serialized as a list of scope names: `["wallet:analyze", "usage:read"]`.
impl Serialize for Scopes {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter().map(Scope::as_str))
    }
}

impl<'de> Deserialize<'de> for Scopes {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(ScopesVisitor)
    }
}

struct ScopesVisitor;

impl<'de> Visitor<'de> for ScopesVisitor {
    type Value = Scopes;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a list of at most {SCOPE_ENTRIES_MAX} scope names")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scopes, A::Error> {
        let mut set = Scopes::NONE;
        let mut entries = 0usize;
        while let Some(name) = seq.next_element::<std::borrow::Cow<'de, str>>()? {
            entries += 1;
            if entries > SCOPE_ENTRIES_MAX {
                return Err(de::Error::invalid_length(entries, &self));
            }
            let scope = Scope::parse(&name).map_err(|_| de::Error::unknown_variant(&name, &SCOPE_NAMES))?;
            set = set.with(scope);
        }
        Ok(set)
    }
}

const SCOPE_NAMES: [&str; 9] = [
    "wallet:analyze",
    "wallet:compare",
    "analysis:read",
    "usage:read",
    "transaction:scan",
    "monitor:write",
    "monitor:read",
    "policy:read",
    "policy:write",
];

/// Every scope name, as the refusals of a scope list say them: a literal, so that messages built
/// with it stay `&'static str` (a test keeps it equal to `Scope::ALL`).
macro_rules! scope_list {
    () => {
        "wallet:analyze, wallet:compare, analysis:read, usage:read, transaction:scan, monitor:write, monitor:read, policy:read, policy:write"
    };
}

pub const SCOPE_LIST: &str = scope_list!();

/// The admin API's refusal of a key's `scopes` (an unknown name, or none).
pub const SCOPES_EXPECTED: &str = concat!("scopes must name one or more of ", scope_list!());

#[cfg(test)]
mod tests {
    use super::*;
    use Scope::*;

    #[test]
    fn refusals_list_every_scope() {
        let names: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(SCOPE_LIST, names.join(", "));
        assert!(SCOPES_EXPECTED.ends_with(SCOPE_LIST), "{SCOPES_EXPECTED}");
        assert!(ScopeError::Unknown.to_string().contains(SCOPE_LIST));
    }

    #[test]
    fn names_round_trip() {
        for (scope, name) in Scope::ALL.into_iter().zip(SCOPE_NAMES) {
            assert_eq!(scope.as_str(), name);
            assert_eq!(Scope::parse(name), Ok(scope));
        }
        assert_eq!(Scope::parse("wallet:Analyze"), Err(ScopeError::Unknown));
    }

    #[test]
    fn endpoints_match_the_contract_status_example() {
        let want: [(Scope, &[&str]); 5] = [
            (WalletAnalyze, &["POST /v1/developer/intelligence/wallet"]),
            (WalletCompare, &["POST /v1/developer/intelligence/compare"]),
            (
                AnalysisRead,
                &["GET /v1/developer/intelligence/analysis/:id", "GET /v1/developer/intelligence/comparison/:pairId"],
            ),
            (UsageRead, &["GET /v1/developer/usage"]),
            (TransactionScan, &["POST /v1/developer/intelligence/transaction"]),
        ];
        for (scope, endpoints) in want {
            assert_eq!(scope.endpoints(), endpoints, "{scope}");
        }
    }

    #[test]
    fn parse_list_cases() {
        let cases: [(&str, Result<&[Scope], ScopeError>); 10] = [
            ("wallet:analyze", Ok(&[WalletAnalyze])),
            ("usage:read,wallet:analyze", Ok(&[WalletAnalyze, UsageRead])),
            (" wallet:compare , analysis:read ", Ok(&[WalletCompare, AnalysisRead])),
            ("usage:read,usage:read", Ok(&[UsageRead])),
            (
                "wallet:analyze,wallet:compare,analysis:read,usage:read",
                Ok(&[WalletAnalyze, WalletCompare, AnalysisRead, UsageRead]),
            ),
            ("", Ok(&[])),
            ("  ", Ok(&[])),
            ("wallet:analyze,,usage:read", Err(ScopeError::EmptyEntry)),
            ("wallet:analyze,", Err(ScopeError::EmptyEntry)),
            ("wallet:analyze,admin", Err(ScopeError::Unknown)),
        ];
        for (text, want) in cases {
            let got = Scopes::parse_list(text).map(|s| s.iter().collect::<Vec<_>>());
            assert_eq!(got, want.map(<[Scope]>::to_vec), "{text:?}");
        }
        assert_eq!(Scopes::parse_list(&"usage:read,".repeat(30)), Err(ScopeError::TooLong));
    }

    #[test]
    fn bitset_operations() {
        let set: Scopes = [WalletAnalyze, UsageRead].into_iter().collect();
        assert!(set.contains(WalletAnalyze) && set.contains(UsageRead));
        assert!(!set.contains(WalletCompare) && !set.contains(AnalysisRead));
        assert_eq!(set.to_string(), "wallet:analyze,usage:read");
        assert_eq!(Scopes::parse_list(&set.to_string()), Ok(set));
        let grants: Vec<_> = set.grants().collect();
        let want = [
            (WalletAnalyze, true),
            (WalletCompare, false),
            (AnalysisRead, false),
            (UsageRead, true),
            (TransactionScan, false),
            (MonitorWrite, false),
            (MonitorRead, false),
            (PolicyRead, false),
            (PolicyWrite, false),
        ];
        assert_eq!(grants, want);
        assert_eq!(Scope::ALL.into_iter().collect::<Scopes>(), Scopes::ALL);
        assert!(Scopes::NONE.is_empty());
        assert_eq!(
            format!("{:?}", Scopes::ALL),
            "Scopes(wallet:analyze,wallet:compare,analysis:read,usage:read,transaction:scan,monitor:write,monitor:read,policy:read,policy:write)"
        );
    }

    #[test]
    fn serde_as_a_list_of_names() {
        let set: Scopes = [AnalysisRead, WalletAnalyze].into_iter().collect();
        let json = serde_json::to_string(&set).expect("serializes");
        assert_eq!(json, r#"["wallet:analyze","analysis:read"]"#);
        assert_eq!(serde_json::from_str::<Scopes>(&json).expect("parses"), set);
        assert_eq!(serde_json::from_str::<Scopes>("[]").expect("parses"), Scopes::NONE);
        assert!(serde_json::from_str::<Scopes>(r#"["admin"]"#).is_err());
        let many = format!("[{}]", vec!["\"usage:read\""; SCOPE_ENTRIES_MAX + 1].join(","));
        assert!(serde_json::from_str::<Scopes>(&many).is_err());
    }
}
