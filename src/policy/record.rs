//! A policy as stored (one record per account, `DocKind::Policy`, JSON) and as a client writes
//! it: the draft a `PUT` carries, validated into a record with named errors.
//!
//! Owns: `PolicyRecord`, `PolicyDraft`, `SweepOverrides` (the sweep thresholds an account set,
//! each member absent for the engine's default) and the policy's limits' checks. Pure; called
//! on listener threads (the API), the admin thread and at start.
//!
//! Invariant: a stored record always builds a valid `engine::policy::Policy` — the draft is
//! validated by the same constructor before anything is written; a record that fails to build
//! later (a signal kind a newer build removed) is refused where it is read, and its account
//! falls back to the default policy with a warning rather than failing its jobs.
//! Invariant: lists are sorted and free of duplicates, weights are whole hundredths.
//! Invariant: a sweep threshold the account did not set is not stored: it is the engine's
//! default of the build that reads the record (`SweepOverrides::thresholds`), so a record
//! without any is byte-identical to one written before they existed.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{POLICY_LIST_LEN_MAX, POLICY_OVERRIDES_LEN_MAX};
use crate::engine::policy::{default_weights_hundredths, Invalid, Policy, PolicyRef, SeverityRule};
use crate::engine::report::Severity;
use crate::engine::scoring::DIMENSIONS;
use crate::engine::sweep::SweepThresholds;
use crate::pubkey::Pubkey;

/// The rule name that drops a signal kind.
pub const IGNORE: &str = "ignore";

/// What a client writes (`PUT /v1/developer/policy`, the admin API): every member optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PolicyDraft {
    /// The version the client read (compare-and-set); `None`: replace whatever is there.
    pub expected_version: Option<u64>,
    /// Signal kind → `ignore` or a severity.
    pub severity_overrides: Vec<(String, String)>,
    /// Dimension → weight (0–1 in hundredths); `None`: the defaults.
    pub weights: Option<Vec<(String, f64)>>,
    pub allow_list: Vec<String>,
    pub deny_list: Vec<String>,
    pub sweep_thresholds: SweepOverrides,
}

/// Where the account draws a sweep (`sweepThresholds`): each member it set, `None` for the
/// engine's default (`SweepThresholds::DEFAULT`). Checked when the policy is built
/// (`Policy::with_sweep_thresholds`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepOverrides {
    /// `SweepThresholds::sol_share_percent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sol_share_percent: Option<u64>,
    /// `SweepThresholds::token_share_percent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_share_percent: Option<u64>,
    /// `SweepThresholds::gain_lamports_max`: SOL coming back that is still nothing given back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dust_lamports: Option<u64>,
    /// `SweepThresholds::gain_token_units_max`: tokens of one mint coming back that are still
    /// nothing given back, in base units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dust_token_units: Option<u64>,
}

impl SweepOverrides {
    pub fn is_empty(&self) -> bool {
        *self == SweepOverrides::default()
    }

    /// The thresholds in force: the engine's defaults with each member set here in its place.
    pub fn thresholds(&self) -> SweepThresholds {
        let d = SweepThresholds::DEFAULT;
        SweepThresholds {
            sol_share_percent: self.sol_share_percent.unwrap_or(d.sol_share_percent),
            token_share_percent: self.token_share_percent.unwrap_or(d.token_share_percent),
            gain_lamports_max: self.dust_lamports.unwrap_or(d.gain_lamports_max),
            gain_token_units_max: self.dust_token_units.unwrap_or(d.gain_token_units_max),
        }
    }
}

/// An account's policy as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRecord {
    pub id: String,
    pub version: u64,
    pub severity_overrides: BTreeMap<String, String>,
    /// Dimension → hundredths, every dimension named.
    pub weights_hundredths: BTreeMap<String, u16>,
    pub allow_list: Vec<String>,
    pub deny_list: Vec<String>,
    /// Absent in records without any (every record written before they existed).
    #[serde(default, skip_serializing_if = "SweepOverrides::is_empty")]
    pub sweep_thresholds: SweepOverrides,
    pub updated_at_ms: u64,
    /// The key id that wrote it, or `admin`.
    pub updated_by: String,
}

fn invalid(field: &'static str, message: impl Into<String>) -> Invalid {
    Invalid { field, message: message.into() }
}

impl PolicyDraft {
    /// The record this draft makes as version `version` of policy `id`; `Err` names the field.
    pub fn into_record(self, id: String, version: u64, now_ms: u64, by: &str) -> Result<PolicyRecord, Invalid> {
        if self.severity_overrides.len() > POLICY_OVERRIDES_LEN_MAX {
            return Err(invalid("severityOverrides", format!("more than {POLICY_OVERRIDES_LEN_MAX} overrides")));
        }
        let mut overrides = BTreeMap::new();
        for (kind, rule) in self.severity_overrides {
            if rule != IGNORE && Severity::parse(&rule).is_none() {
                return Err(invalid(
                    "severityOverrides",
                    format!("{kind}: {rule:?} is not ignore, info, low, medium, high or critical"),
                ));
            }
            overrides.insert(kind, rule);
        }
        let record = PolicyRecord {
            id,
            version,
            severity_overrides: overrides,
            weights_hundredths: weights(self.weights)?,
            allow_list: addresses("allowList", self.allow_list)?,
            deny_list: addresses("denyList", self.deny_list)?,
            sweep_thresholds: self.sweep_thresholds,
            updated_at_ms: now_ms,
            updated_by: by.to_owned(),
        };
        record.policy()?;
        Ok(record)
    }
}

/// Weights by dimension in hundredths: every dimension named once, each a multiple of 0.01
/// from 0 to 1 (the sum is the policy's check).
fn weights(weights: Option<Vec<(String, f64)>>) -> Result<BTreeMap<String, u16>, Invalid> {
    let names = DIMENSIONS.iter().map(|(name, _)| name.to_string());
    let Some(weights) = weights else { return Ok(names.zip(default_weights_hundredths()).collect()) };
    let mut out = BTreeMap::new();
    for (dimension, weight) in weights {
        if !DIMENSIONS.iter().any(|(name, _)| *name == dimension) {
            return Err(invalid("weights", format!("unknown dimension {dimension:?}")));
        }
        let hundredths = (weight * 100.0).round();
        if !(0.0..=100.0).contains(&hundredths) || (weight * 100.0 - hundredths).abs() > 1e-6 {
            return Err(invalid("weights", format!("{dimension}: {weight} is not a multiple of 0.01 from 0 to 1")));
        }
        out.insert(dimension, hundredths as u16);
    }
    if let Some((missing, _)) = DIMENSIONS.iter().find(|(name, _)| !out.contains_key(*name)) {
        return Err(invalid("weights", format!("no weight for {missing}: name every dimension")));
    }
    Ok(out)
}

/// A list of addresses, checked, sorted and without duplicates.
fn addresses(field: &'static str, list: Vec<String>) -> Result<Vec<String>, Invalid> {
    if list.len() > POLICY_LIST_LEN_MAX {
        return Err(invalid(field, format!("more than {POLICY_LIST_LEN_MAX} addresses")));
    }
    let mut keys = Vec::with_capacity(list.len());
    for (i, text) in list.iter().enumerate() {
        let key =
            Pubkey::parse(text).map_err(|e| invalid(field, format!("entry {i} is not an address ({})", e.reason())))?;
        keys.push(key);
    }
    keys.sort_unstable();
    keys.dedup();
    Ok(keys.iter().map(Pubkey::to_string).collect())
}

impl PolicyRecord {
    pub fn reference(&self) -> PolicyRef {
        PolicyRef { id: self.id.clone(), version: self.version }
    }

    /// The engine's policy of this record; `Err` when it no longer builds.
    pub fn policy(&self) -> Result<Policy, Invalid> {
        let severities: BTreeMap<String, SeverityRule> = self
            .severity_overrides
            .iter()
            .map(|(kind, rule)| {
                let rule = match Severity::parse(rule) {
                    Some(severity) => SeverityRule::Set(severity),
                    None => SeverityRule::Ignore,
                };
                (kind.clone(), rule)
            })
            .collect();
        let mut weights = [0u16; DIMENSIONS.len()];
        for (slot, (name, _)) in weights.iter_mut().zip(DIMENSIONS) {
            *slot = *self
                .weights_hundredths
                .get(*name)
                .ok_or_else(|| invalid("weights", format!("no weight for {name}")))?;
        }
        let parse = |field, list: &[String]| -> Result<Vec<Pubkey>, Invalid> {
            list.iter()
                .map(|a| Pubkey::parse(a).map_err(|_| invalid(field, format!("{a} is not an address"))))
                .collect()
        };
        let (allow, deny) = (parse("allowList", &self.allow_list)?, parse("denyList", &self.deny_list)?);
        Policy::with_kinds(self.reference(), &severities, weights, &allow, &deny, crate::scan::catalogue::POLICY_KINDS)?
            .with_sweep_thresholds(self.sweep_thresholds.thresholds())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(byte: u8) -> String {
        Pubkey::new([byte; 32]).to_string()
    }

    fn sweep(sweep_thresholds: SweepOverrides) -> PolicyDraft {
        PolicyDraft { sweep_thresholds, ..draft() }
    }

    fn draft() -> PolicyDraft {
        PolicyDraft {
            severity_overrides: vec![
                ("new_wallet".into(), "ignore".into()),
                ("freeze_authority_mint".into(), "high".into()),
            ],
            weights: Some(DIMENSIONS.iter().map(|(d, w)| (d.to_string(), *w)).collect()),
            allow_list: vec![address(2), address(1), address(2)],
            deny_list: vec![address(3)],
            ..PolicyDraft::default()
        }
    }

    #[test]
    fn a_valid_draft_makes_a_sorted_record_that_builds() {
        let record = draft().into_record("pol_x".into(), 1, 5, "key_1").unwrap();
        assert_eq!(record.allow_list, vec![address(1), address(2)], "sorted, no duplicate");
        assert_eq!(record.weights_hundredths["authority_exposure"], 30);
        let policy = record.policy().unwrap();
        assert_eq!(policy.reference(), &PolicyRef { id: "pol_x".into(), version: 1 });
        assert_eq!(policy.severities().get("new_wallet"), Some(&SeverityRule::Ignore));
        assert_eq!(policy.severities().get("freeze_authority_mint"), Some(&SeverityRule::Set(Severity::High)));
        let json = serde_json::to_vec(&record).unwrap();
        assert_eq!(serde_json::from_slice::<PolicyRecord>(&json).unwrap(), record);
    }

    #[test]
    fn sweep_thresholds_left_unset_are_the_defaults_and_not_stored() {
        let record = draft().into_record("pol_x".into(), 1, 5, "key_1").unwrap();
        assert_eq!(record.policy().unwrap().sweep_thresholds(), &SweepThresholds::DEFAULT);
        let json = serde_json::to_string(&record).unwrap();
        assert!(!json.contains("sweepThresholds"), "nothing set, nothing stored: {json}");
        // A record written before the thresholds existed reads as the defaults.
        assert_eq!(serde_json::from_str::<PolicyRecord>(&json).unwrap().sweep_thresholds, SweepOverrides::default());

        let lower =
            SweepOverrides { sol_share_percent: Some(75), dust_token_units: Some(0), ..SweepOverrides::default() };
        let record = PolicyDraft { sweep_thresholds: lower, ..draft() }.into_record("pol_x".into(), 2, 5, "k").unwrap();
        let expected = SweepThresholds { sol_share_percent: 75, gain_token_units_max: 0, ..SweepThresholds::DEFAULT };
        assert_eq!(record.policy().unwrap().sweep_thresholds(), &expected);
        let json = serde_json::to_string(&record).unwrap();
        assert!(json.contains(r#""sweepThresholds":{"solSharePercent":75,"dustTokenUnits":0}"#), "{json}");
        assert_eq!(serde_json::from_str::<PolicyRecord>(&json).unwrap(), record);
    }

    #[test]
    fn each_mistake_names_its_field() {
        let cases: Vec<(PolicyDraft, &str, &str)> = vec![
            (
                PolicyDraft { severity_overrides: vec![("nope".into(), "ignore".into())], ..draft() },
                "severityOverrides",
                "nope",
            ),
            (
                PolicyDraft { severity_overrides: vec![("new_wallet".into(), "loud".into())], ..draft() },
                "severityOverrides",
                "loud",
            ),
            (
                PolicyDraft { weights: Some(vec![("authority_exposure".into(), 1.0)]), ..draft() },
                "weights",
                "no weight",
            ),
            (PolicyDraft { weights: Some(vec![("mood".into(), 1.0)]), ..draft() }, "weights", "unknown dimension"),
            (
                PolicyDraft {
                    weights: Some(DIMENSIONS.iter().map(|(d, _)| (d.to_string(), 0.25)).collect()),
                    ..draft()
                },
                "weights",
                "sum to 1.25",
            ),
            (
                PolicyDraft {
                    weights: Some(DIMENSIONS.iter().map(|(d, w)| (d.to_string(), w + 0.001)).collect()),
                    ..draft()
                },
                "weights",
                "multiple of 0.01",
            ),
            (PolicyDraft { allow_list: vec!["0OIl".into()], ..draft() }, "allowList", "entry 0"),
            (PolicyDraft { deny_list: vec![address(1)], ..draft() }, "allowList", "both"),
            (PolicyDraft { deny_list: vec![address(9); POLICY_LIST_LEN_MAX + 1], ..draft() }, "denyList", "more than"),
            (
                sweep(SweepOverrides { sol_share_percent: Some(40), ..SweepOverrides::default() }),
                "sweepThresholds.solSharePercent",
                "40 is not from 50 to 100 percent",
            ),
            (
                sweep(SweepOverrides { token_share_percent: Some(101), ..SweepOverrides::default() }),
                "sweepThresholds.tokenSharePercent",
                "101",
            ),
            (
                sweep(SweepOverrides { dust_lamports: Some(2_000_000_000), ..SweepOverrides::default() }),
                "sweepThresholds.dustLamports",
                "to 1000000000 lamports",
            ),
            (
                sweep(SweepOverrides { dust_token_units: Some(1_000_001), ..SweepOverrides::default() }),
                "sweepThresholds.dustTokenUnits",
                "to 1000000 token base units",
            ),
        ];
        for (draft, field, needle) in cases {
            let err = draft.clone().into_record("pol_x".into(), 1, 0, "k").unwrap_err();
            assert_eq!(err.field, field, "{draft:?}: {err:?}");
            assert!(err.message.contains(needle), "{err:?} lacks {needle:?}");
        }
    }
}
