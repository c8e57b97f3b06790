//! An account's policy as the engine applies it (issue #31): severity overrides per signal kind
//! (`ignore` drops the kind), dimension weights, the allow- and deny-list laid over the
//! labels (`labels::Lists`), and where a sweep is drawn (`SweepThresholds`, issue #41: the
//! X-Ray's `wallet_swept` and the scan's `asset_sweep` read them).
//!
//! Owns: `Policy`, `PolicyRef` (the `policy` member of every X-Ray and comparison), the engine
//! version tag a result made under a policy carries, and `apply` (overrides on detected
//! signals, then the evidence nothing cites any more dropped and every id renumbered). Pure;
//! built by `policy::` (the stored form and its validation) and read by compute threads.
//!
//! Invariants: a policy is valid once built — every kind it names is in the catalogue, its
//! weights are in hundredths and sum to 100, no address is on both lists (`Policy::new` is the
//! only constructor), its sweep thresholds are within `POLICY_SWEEP_*` (`with_sweep_thresholds`
//! checks them, and is the only way to set them); the default policy changes nothing, so the
//! default X-Ray is the engine's own; ids (`sig_N`, `ev_N`) stay dense and in detection order
//! after overrides.
//! Deliberately absent: storage, wire parsing and any notion of accounts (see `crate::policy`).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, OnceLock};

use crate::config::{
    POLICY_SWEEP_DUST_LAMPORTS_MAX, POLICY_SWEEP_DUST_TOKEN_UNITS_MAX, POLICY_SWEEP_SHARE_PERCENT_MAX,
    POLICY_SWEEP_SHARE_PERCENT_MIN,
};
use crate::engine::evidence::EvidenceBook;
pub use crate::engine::report::PolicyRef;
use crate::engine::report::{Severity, Signal};
use crate::engine::scoring::DIMENSIONS;
use crate::engine::sweep::SweepThresholds;
use crate::engine::ENGINE_VERSION_TAG;
use crate::labels::{Labels, Lists};
use crate::pubkey::Pubkey;

/// Weights are whole hundredths: exact, so equal policies score byte-identically everywhere.
pub const WEIGHT_HUNDREDTHS_TOTAL: u16 = 100;

/// Kinds a policy may raise but never lower or ignore: sanctions exposure is a compliance
/// finding, not a preference (an allow-list cannot hide it either: `labels::Lists`).
pub const UNLOWERABLE_KINDS: [&str; 2] = ["sanctioned_counterparty", "sanctioned_funder_exposure"];

/// The id of the policy of an account that never set one.
pub const DEFAULT_POLICY_ID: &str = "default";

/// A kind a policy may name besides the engine's signals (a scan finding's kind): its severity
/// as found (the highest its rule gives), and whether it may only be raised (sanctions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OtherKind {
    pub kind: &'static str,
    pub severity: Severity,
    pub raise_only: bool,
}

/// What an override does to a signal kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeverityRule {
    /// The kind is not reported (nor scored, nor in attack paths).
    Ignore,
    /// The kind is reported at this severity, whatever the rule decided.
    Set(Severity),
}

/// An account's policy, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    reference: PolicyRef,
    severities: BTreeMap<&'static str, SeverityRule>,
    weights_hundredths: [u16; DIMENSIONS.len()],
    lists: Arc<Lists>,
    sweep: SweepThresholds,
}

/// Why a policy was refused: the field and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    pub field: &'static str,
    pub message: String,
}

impl Invalid {
    fn new(field: &'static str, message: impl Into<String>) -> Invalid {
        Invalid { field, message: message.into() }
    }
}

/// The default weights in hundredths (`scoring::DIMENSIONS`).
pub fn default_weights_hundredths() -> [u16; DIMENSIONS.len()] {
    std::array::from_fn(|i| (DIMENSIONS[i].1 * f64::from(WEIGHT_HUNDREDTHS_TOTAL)).round() as u16)
}

impl Policy {
    /// The policy of an account that never set one: changes nothing.
    pub fn default_policy() -> Arc<Policy> {
        static DEFAULT: OnceLock<Arc<Policy>> = OnceLock::new();
        DEFAULT
            .get_or_init(|| {
                Arc::new(Policy {
                    reference: PolicyRef { id: DEFAULT_POLICY_ID.to_owned(), version: 0 },
                    severities: BTreeMap::new(),
                    weights_hundredths: default_weights_hundredths(),
                    lists: Arc::default(),
                    sweep: SweepThresholds::DEFAULT,
                })
            })
            .clone()
    }

    /// A policy of the engine's signal kinds only (see `with_kinds`).
    pub fn new(
        reference: PolicyRef,
        severities: &BTreeMap<String, SeverityRule>,
        weights_hundredths: [u16; DIMENSIONS.len()],
        allow: &[Pubkey],
        deny: &[Pubkey],
    ) -> Result<Policy, Invalid> {
        Policy::with_kinds(reference, severities, weights_hundredths, allow, deny, &[])
    }

    /// A policy; `Err` names the first field that breaks an invariant.
    /// `severities` maps signal kinds — the engine's, or one of `other` (the scan's findings) —
    /// to rules, `weights_hundredths` follows `DIMENSIONS`' order.
    pub fn with_kinds(
        reference: PolicyRef,
        severities: &BTreeMap<String, SeverityRule>,
        weights_hundredths: [u16; DIMENSIONS.len()],
        allow: &[Pubkey],
        deny: &[Pubkey],
        other: &[OtherKind],
    ) -> Result<Policy, Invalid> {
        let mut known = BTreeMap::new();
        for (kind, rule) in severities {
            let spec = crate::engine::signals::spec(kind)
                .map(|s| OtherKind {
                    kind: s.kind,
                    severity: s.severity,
                    raise_only: UNLOWERABLE_KINDS.contains(&s.kind),
                })
                .or_else(|| other.iter().find(|o| o.kind == kind.as_str()).copied());
            let Some(spec) = spec else {
                return Err(Invalid::new("severityOverrides", format!("unknown signal kind {kind:?}")));
            };
            let lowers = match rule {
                SeverityRule::Ignore => true,
                SeverityRule::Set(severity) => *severity < spec.severity,
            };
            if lowers && spec.raise_only {
                let message = format!("{kind} may be raised but not lowered or ignored (a sanctions finding)");
                return Err(Invalid::new("severityOverrides", message));
            }
            known.insert(spec.kind, *rule);
        }
        let total: u16 = weights_hundredths.iter().sum();
        if total != WEIGHT_HUNDREDTHS_TOTAL {
            return Err(Invalid::new("weights", format!("the weights sum to {:.2}, not 1", f64::from(total) / 100.0)));
        }
        let deny: HashSet<Pubkey> = deny.iter().copied().collect();
        let lists = Lists::new(allow.iter().copied(), deny)
            .map_err(|both| Invalid::new("allowList", format!("{both} is on both the allow-list and the deny-list")))?;
        Ok(Policy {
            reference,
            severities: known,
            weights_hundredths,
            lists: Arc::new(lists),
            sweep: SweepThresholds::DEFAULT,
        })
    }

    /// This policy drawing sweeps at `thresholds`; `Err` names the first member out of its
    /// range (`sweepThresholds.<member>`): each share from `POLICY_SWEEP_SHARE_PERCENT_MIN` to
    /// `POLICY_SWEEP_SHARE_PERCENT_MAX`, each dust at most `POLICY_SWEEP_DUST_LAMPORTS_MAX` /
    /// `POLICY_SWEEP_DUST_TOKEN_UNITS_MAX`.
    pub fn with_sweep_thresholds(self, thresholds: SweepThresholds) -> Result<Policy, Invalid> {
        let shares = POLICY_SWEEP_SHARE_PERCENT_MIN..=POLICY_SWEEP_SHARE_PERCENT_MAX;
        let checks = [
            ("sweepThresholds.solSharePercent", thresholds.sol_share_percent, shares.clone(), "percent"),
            ("sweepThresholds.tokenSharePercent", thresholds.token_share_percent, shares, "percent"),
            (
                "sweepThresholds.dustLamports",
                thresholds.gain_lamports_max,
                0..=POLICY_SWEEP_DUST_LAMPORTS_MAX,
                "lamports",
            ),
            (
                "sweepThresholds.dustTokenUnits",
                thresholds.gain_token_units_max,
                0..=POLICY_SWEEP_DUST_TOKEN_UNITS_MAX,
                "token base units",
            ),
        ];
        for (field, value, range, unit) in checks {
            if !range.contains(&value) {
                let message = format!("{value} is not from {} to {} {unit}", range.start(), range.end());
                return Err(Invalid::new(field, message));
            }
        }
        Ok(Policy { sweep: thresholds, ..self })
    }

    pub fn reference(&self) -> &PolicyRef {
        &self.reference
    }

    pub fn is_default(&self) -> bool {
        self.reference.id == DEFAULT_POLICY_ID
    }

    pub fn severities(&self) -> &BTreeMap<&'static str, SeverityRule> {
        &self.severities
    }

    pub fn weights_hundredths(&self) -> &[u16; DIMENSIONS.len()] {
        &self.weights_hundredths
    }

    pub fn lists(&self) -> &Lists {
        &self.lists
    }

    /// Where this policy draws a sweep (`SweepThresholds::DEFAULT` unless it sets others).
    pub fn sweep_thresholds(&self) -> &SweepThresholds {
        &self.sweep
    }

    /// The engine version tag a result made under this policy carries: the engine's own for
    /// the default policy, else the engine's with `+<id>@<version>` — so a result of another
    /// policy (or version of it) is not reused as fresh, as for another engine version.
    pub fn version_tag(&self) -> String {
        version_tag(&self.reference)
    }

    /// Whether `tag` is this policy's `version_tag` (compared in place: admission asks this of
    /// every job it might reuse, and builds no string to do it).
    pub fn has_tag(&self, tag: &str) -> bool {
        let Some(rest) = tag.strip_prefix(ENGINE_VERSION_TAG) else { return false };
        if self.is_default() {
            return rest.is_empty();
        }
        let Some(rest) = rest.strip_prefix('+').and_then(|r| r.strip_prefix(self.reference.id.as_str())) else {
            return false;
        };
        rest.strip_prefix('@') == Some(itoa::Buffer::new().format(self.reference.version))
    }

    /// The labels this policy's account reads: `base` with the allow- and deny-list laid over
    /// (no label is copied).
    pub fn labels<'a>(&self, base: &'a Labels) -> Cow<'a, Labels> {
        if self.lists.is_empty() {
            return Cow::Borrowed(base);
        }
        Cow::Owned(base.with_lists(Arc::clone(&self.lists)))
    }

    /// Applies the severity overrides to detected signals: ignored kinds are dropped, others
    /// take their set severity; then the evidence no kept signal cites is dropped and the
    /// `sig_N` and `ev_N` ids are renumbered densely, in their original order.
    pub fn apply(&self, signals: Vec<Signal>, book: EvidenceBook) -> (Vec<Signal>, EvidenceBook) {
        if self.severities.is_empty() {
            return (signals, book);
        }
        let mut kept: Vec<Signal> = Vec::with_capacity(signals.len());
        for mut signal in signals {
            match self.severities.get(signal.kind) {
                Some(SeverityRule::Ignore) => continue,
                Some(SeverityRule::Set(severity)) => signal.severity = *severity,
                None => {}
            }
            signal.id = format!("sig_{}", kept.len() + 1);
            kept.push(signal);
        }
        let book = book.retain_cited(&mut kept);
        (kept, book)
    }
}

/// The version tag of results made under `policy` (see `Policy::version_tag`).
pub fn version_tag(policy: &PolicyRef) -> String {
    if policy.id == DEFAULT_POLICY_ID {
        return ENGINE_VERSION_TAG.to_owned();
    }
    format!("{ENGINE_VERSION_TAG}+{}@{}", policy.id, policy.version)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference() -> PolicyRef {
        PolicyRef { id: "pol_test".into(), version: 1 }
    }

    #[test]
    fn the_default_policy_changes_nothing_and_keeps_the_engine_tag() {
        let policy = Policy::default_policy();
        assert!(policy.is_default());
        assert_eq!(policy.version_tag(), ENGINE_VERSION_TAG);
        assert_eq!(policy.weights_hundredths().iter().sum::<u16>(), 100);
        let labels = Labels::builtin();
        assert!(matches!(policy.labels(&labels), Cow::Borrowed(_)), "no lists: the same table");
    }

    #[test]
    fn refuses_unknown_kinds_bad_weights_and_addresses_on_both_lists() {
        let weights = default_weights_hundredths();
        let unknown = BTreeMap::from([("no_such_kind".to_owned(), SeverityRule::Ignore)]);
        let err = Policy::new(reference(), &unknown, weights, &[], &[]).unwrap_err();
        assert_eq!(err.field, "severityOverrides");
        assert!(err.message.contains("no_such_kind"), "{err:?}");
        let mut heavy = weights;
        heavy[0] += 1;
        let err = Policy::new(reference(), &BTreeMap::new(), heavy, &[], &[]).unwrap_err();
        assert_eq!((err.field, err.message.as_str()), ("weights", "the weights sum to 1.01, not 1"));
        for rule in [SeverityRule::Ignore, SeverityRule::Set(Severity::High)] {
            let sanctions = BTreeMap::from([("sanctioned_counterparty".to_owned(), rule)]);
            let err = Policy::new(reference(), &sanctions, weights, &[], &[]).unwrap_err();
            assert!(err.message.contains("may be raised but not lowered"), "{err:?}");
        }
        let raised = BTreeMap::from([("sanctioned_funder_exposure".to_owned(), SeverityRule::Set(Severity::Critical))]);
        assert!(Policy::new(reference(), &raised, weights, &[], &[]).is_ok(), "raising is the account's call");
        let both = Pubkey::new([9; 32]);
        let err = Policy::new(reference(), &BTreeMap::new(), weights, &[both], &[both]).unwrap_err();
        assert_eq!(err.field, "allowList");
    }

    #[test]
    fn sweep_thresholds_are_the_defaults_unless_set_and_each_is_checked_by_name() {
        let plain = Policy::new(reference(), &BTreeMap::new(), default_weights_hundredths(), &[], &[]).unwrap();
        assert_eq!(plain.sweep_thresholds(), &SweepThresholds::DEFAULT);
        assert_eq!(Policy::default_policy().sweep_thresholds(), &SweepThresholds::DEFAULT);
        let set = SweepThresholds { sol_share_percent: 75, ..SweepThresholds::DEFAULT };
        assert_eq!(plain.clone().with_sweep_thresholds(set).unwrap().sweep_thresholds(), &set);
        let edges = SweepThresholds {
            sol_share_percent: POLICY_SWEEP_SHARE_PERCENT_MIN,
            token_share_percent: POLICY_SWEEP_SHARE_PERCENT_MAX,
            gain_lamports_max: POLICY_SWEEP_DUST_LAMPORTS_MAX,
            gain_token_units_max: 0,
        };
        assert!(plain.clone().with_sweep_thresholds(edges).is_ok(), "the bounds are inside");
        let d = SweepThresholds::DEFAULT;
        let cases = [
            (
                SweepThresholds { sol_share_percent: 49, ..d },
                "sweepThresholds.solSharePercent",
                "49 is not from 50 to 100 percent",
            ),
            (
                SweepThresholds { token_share_percent: 101, ..d },
                "sweepThresholds.tokenSharePercent",
                "101 is not from 50 to 100 percent",
            ),
            (
                SweepThresholds { gain_lamports_max: POLICY_SWEEP_DUST_LAMPORTS_MAX + 1, ..d },
                "sweepThresholds.dustLamports",
                "1000000001 is not from 0 to 1000000000 lamports",
            ),
            (
                SweepThresholds { gain_token_units_max: u64::MAX, ..d },
                "sweepThresholds.dustTokenUnits",
                "18446744073709551615 is not from 0 to 1000000 token base units",
            ),
        ];
        for (thresholds, field, message) in cases {
            let err = plain.clone().with_sweep_thresholds(thresholds).unwrap_err();
            assert_eq!((err.field, err.message.as_str()), (field, message));
        }
    }

    #[test]
    fn a_custom_policy_has_its_own_tag() {
        let policy = Policy::new(reference(), &BTreeMap::new(), default_weights_hundredths(), &[], &[]).unwrap();
        assert_eq!(policy.version_tag(), format!("{ENGINE_VERSION_TAG}+pol_test@1"));
        assert!(policy.version_tag().len() <= crate::config::ENGINE_VERSION_BYTES_MAX);
    }

    #[test]
    fn has_tag_is_version_tag_compared_in_place() {
        let weights = default_weights_hundredths();
        let at = |id: &str, version| {
            Policy::new(PolicyRef { id: id.into(), version }, &BTreeMap::new(), weights, &[], &[]).unwrap()
        };
        let policies =
            [Policy::clone(&Policy::default_policy()), at("pol_test", 1), at("pol_test", 10), at("pol_tes", 1)];
        for policy in &policies {
            for other in &policies {
                let same = policy.version_tag() == other.version_tag();
                assert_eq!(
                    policy.has_tag(&other.version_tag()),
                    same,
                    "{} vs {}",
                    policy.version_tag(),
                    other.version_tag()
                );
            }
            let tag = policy.version_tag();
            for bad in [format!("{tag}0"), format!("x{tag}"), tag[..tag.len() - 1].to_owned(), String::new()] {
                assert!(!policy.has_tag(&bad), "{bad}");
            }
        }
        assert!(!at("pol_test", 1).has_tag(&format!("{ENGINE_VERSION_TAG}+pol_test@01")));
    }
}
