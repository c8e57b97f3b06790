//! A monitor and its watch cursors as the store keeps them (`store::docs` records), their keys,
//! and the checks every monitor passes before it is written.
//!
//! Owns: `MonitorRecord`, `WatchCursor` (with `ActivityOutcome`, what its last activity came
//! to), `MonitorBudget` (the re-analyses counted in the current UTC day), `Thresholds`, the key
//! layout of the `Monitor`, `MonitorOfAccount` and `Watch` records (a monitor's budget is the
//! `Watch` record keyed by the watch prefix alone, so it goes with the monitor's cursors),
//! `MonitorError` (why a monitor is refused). Pure.
//!
//! Invariant: a record that passed `MonitorRecord::validate` names 1..=`MONITOR_WALLETS_MAX`
//! distinct wallets that parse, a severity the engine knows, a score drop of 1..=100 and a
//! budget of 1..=`MONITOR_REANALYSES_PER_DAY_MAX` re-analyses a day, a dust threshold of
//! 0..=`MONITOR_DUST_LAMPORTS_MAX` lamports, and encodes within
//! `DOC_VALUE_BYTES_MAX`.
//! Invariant: the serde names are the stored format; renaming a field is a schema change.
//! Records written before a field existed read with its default (`callbackUrl` absent: a
//! poll-only monitor — older records always have one; `reanalysesPerDay` absent:
//! `MONITOR_REANALYSES_PER_DAY_DEFAULT`; `dustLamports`: `MONITOR_DUST_LAMPORTS_DEFAULT`; a
//! cursor without `lastActivity`: none yet).

use serde::{Deserialize, Serialize};

use crate::config::{
    MONITOR_BUDGET_PERIOD_MS, MONITOR_DUST_LAMPORTS_DEFAULT, MONITOR_DUST_LAMPORTS_MAX,
    MONITOR_REANALYSES_PER_DAY_DEFAULT, MONITOR_REANALYSES_PER_DAY_MAX, MONITOR_WALLETS_MAX,
};
use crate::engine::report::Severity;
use crate::pubkey::Pubkey;
use crate::store::docs::push_lp;
use crate::store::MonitorLink;

/// The severity a new signal needs to make an event when a monitor names none.
pub const MIN_SEVERITY_DEFAULT: Severity = Severity::High;

/// What makes an event: a new signal at or above `min_severity`, or a score drop of at least
/// `score_drop` points (when set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    pub min_severity: Severity,
    pub score_drop: Option<u8>,
}

/// One monitor, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MonitorRecord {
    /// `mon_…`.
    pub id: String,
    pub account: String,
    /// The key that made it: its re-analyses are charged to it (or to its successor after a
    /// rotation), and it must still hold the scopes an event needs when one is sent.
    pub key_id: String,
    /// Base58 addresses, distinct, in the order they were added.
    pub wallets: Vec<String>,
    /// Where its events are POSTed; `None`: poll-only — its events are read from its events
    /// page and never delivered (a record written before the field was optional has one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    pub min_severity: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_drop: Option<u8>,
    /// Re-analyses its wallets' activity may trigger per UTC day (`None`: the default,
    /// `MONITOR_REANALYSES_PER_DAY_DEFAULT`; also what a record older than the field reads as).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reanalyses_per_day: Option<u32>,
    /// SOL below which new activity is dust (`monitors::dust`; `None`: the default,
    /// `MONITOR_DUST_LAMPORTS_DEFAULT`; 0: nothing is dust).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dust_lamports: Option<u64>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}

/// Why a monitor (or a change to one) is refused: the field, and what it must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorError {
    pub field: &'static str,
    pub message: String,
}

fn refuse(field: &'static str, message: impl Into<String>) -> MonitorError {
    MonitorError { field, message: message.into() }
}

impl MonitorRecord {
    pub fn thresholds(&self) -> Thresholds {
        Thresholds {
            min_severity: Severity::parse(&self.min_severity).unwrap_or(MIN_SEVERITY_DEFAULT),
            score_drop: self.score_drop,
        }
    }

    /// Its budget: re-analyses per UTC day (the default when it names none).
    pub fn reanalyses_per_day(&self) -> u32 {
        self.reanalyses_per_day.unwrap_or(MONITOR_REANALYSES_PER_DAY_DEFAULT)
    }

    /// Its dust threshold in lamports (the default when it names none; 0: nothing is dust).
    pub fn dust_lamports(&self) -> u64 {
        self.dust_lamports.unwrap_or(MONITOR_DUST_LAMPORTS_DEFAULT)
    }

    /// The link a re-analysis of one of its wallets carries; `previous_analysis_id`: the
    /// watch's last READY analysis (`None`: a baseline).
    pub fn link(&self, previous_analysis_id: Option<String>) -> MonitorLink {
        MonitorLink {
            monitor_id: self.id.clone(),
            callback_url: self.callback_url.clone(),
            min_severity: self.min_severity.clone(),
            score_drop: self.score_drop,
            previous_analysis_id,
            event: None,
        }
    }

    /// The wallets, parsed (a stored record passed `validate`; one that does not parse is left out).
    pub fn pubkeys(&self) -> Vec<Pubkey> {
        self.wallets.iter().filter_map(|w| Pubkey::parse(w).ok()).collect()
    }

    pub fn validate(&self) -> Result<(), MonitorError> {
        check_wallets(&self.wallets)?;
        if Severity::parse(&self.min_severity).is_none() {
            return Err(refuse("minSeverity", "must be one of info, low, medium, high, critical"));
        }
        if self.score_drop.is_some_and(|d| d == 0 || d > 100) {
            return Err(refuse("scoreDrop", "must be a number of points from 1 to 100"));
        }
        if self.reanalyses_per_day.is_some_and(|n| n == 0 || n > MONITOR_REANALYSES_PER_DAY_MAX) {
            return Err(refuse(
                "reanalysesPerDay",
                format!("must be a whole number of re-analyses from 1 to {MONITOR_REANALYSES_PER_DAY_MAX}"),
            ));
        }
        if self.dust_lamports.is_some_and(|n| n > MONITOR_DUST_LAMPORTS_MAX) {
            return Err(refuse(
                "dustLamports",
                format!("must be a whole number of lamports from 0 to {MONITOR_DUST_LAMPORTS_MAX}"),
            ));
        }
        Ok(())
    }
}

/// Checks a wallet list: 1..=`MONITOR_WALLETS_MAX` distinct addresses that parse.
pub fn check_wallets(wallets: &[String]) -> Result<(), MonitorError> {
    if wallets.is_empty() || wallets.len() > MONITOR_WALLETS_MAX {
        return Err(refuse("wallets", format!("must list 1 to {MONITOR_WALLETS_MAX} wallets")));
    }
    let mut seen = std::collections::HashSet::with_capacity(wallets.len());
    for (i, wallet) in wallets.iter().enumerate() {
        if let Err(e) = Pubkey::parse(wallet) {
            return Err(refuse("wallets", format!("wallets[{i}] is not a Solana address ({})", e.reason())));
        }
        if !seen.insert(wallet.as_str()) {
            return Err(refuse("wallets", format!("wallets[{i}] is listed twice")));
        }
    }
    Ok(())
}

/// Where a monitor's checks of one wallet stand.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchCursor {
    /// The newest signature the last check saw (and handed to a re-analysis); `None` before
    /// the first check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_signature: Option<String>,
    /// The re-analysis the last new activity admitted (or joined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_analysis_id: Option<String>,
    /// The last of those seen READY: what the next re-analysis is compared with. While
    /// `last_analysis_id` differs, each check reads that job once: READY confirms it, FAILED
    /// (or gone) has it redone — its activity was never analyzed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_analysis_id: Option<String>,
    /// The flagged and sanctioned addresses (`LiveLabels::listed_digest`) its last re-analysis
    /// or screen reflects: a check that finds another re-screens the wallet against all of them
    /// (a node that restarted or adopted the watch does not know the reloads in between).
    /// `None` (a cursor older than this field): taken as the labels in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<String>,
    pub checked_at_ms: u64,
    /// A check that saw new activity and is admitting its re-analysis now (possibly on
    /// another node): the signature it will move to, and when it claimed it. A claim older
    /// than `MONITOR_CLAIM_TTL_MS` is the mark of a check that died: the next one finishes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingCheck>,
    /// What the last check that saw new activity did with it (kept by the quiet checks after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_activity: Option<ActivityOutcome>,
}

/// What a check did with new activity (`WatchCursor::last_activity`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityOutcome {
    /// `reanalyzed`, `dust` (every new transaction was dust: the cursor moved past it, nothing
    /// charged) or `budget_exhausted` (held: the cursor stays before it until the budget resets).
    pub outcome: String,
    pub at_ms: u64,
    /// `budget_exhausted`: when the budget resets (the next period's start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<u64>,
}

/// `ActivityOutcome::outcome` of new activity a re-analysis was admitted for.
pub const ACTIVITY_REANALYZED: &str = "reanalyzed";
/// `ActivityOutcome::outcome` of new activity that was all dust.
pub const ACTIVITY_DUST: &str = "dust";
/// `ActivityOutcome::outcome` of new activity held because the monitor's budget was spent.
pub const ACTIVITY_BUDGET_EXHAUSTED: &str = "budget_exhausted";

impl ActivityOutcome {
    pub fn new(outcome: &'static str, at_ms: u64, until_ms: Option<u64>) -> ActivityOutcome {
        ActivityOutcome { outcome: outcome.to_owned(), at_ms, until_ms }
    }
}

/// The re-analyses a monitor's wallets triggered in one UTC day (`MONITOR_BUDGET_PERIOD_MS`),
/// as stored (one record per monitor, `budget_key`). Counted when a check claims its wallet,
/// in the claim's batch (compare-and-set on both), and given back when the re-analysis was
/// not admitted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MonitorBudget {
    /// Days since the Unix epoch (UTC) the count is of.
    pub day: u64,
    pub used: u32,
}

impl MonitorBudget {
    /// The UTC day `now_ms` falls in.
    pub fn day_of(now_ms: u64) -> u64 {
        now_ms / MONITOR_BUDGET_PERIOD_MS
    }

    /// When the period of `now_ms` ends (the budget resets), Unix ms.
    pub fn resets_at_ms(now_ms: u64) -> u64 {
        (Self::day_of(now_ms) + 1).saturating_mul(MONITOR_BUDGET_PERIOD_MS)
    }

    /// Re-analyses counted in the period of `now_ms` (a count of an earlier day is spent: 0).
    pub fn used_at(&self, now_ms: u64) -> u32 {
        if self.day == Self::day_of(now_ms) {
            self.used
        } else {
            0
        }
    }

    /// The budget with one more re-analysis counted at `now_ms`; `None` when `limit` are
    /// counted already.
    pub fn take(&self, now_ms: u64, limit: u32) -> Option<MonitorBudget> {
        let used = self.used_at(now_ms);
        (used < limit).then_some(MonitorBudget { day: Self::day_of(now_ms), used: used + 1 })
    }

    /// The budget with the re-analysis `take` counted at `taken_ms` given back (nothing to give
    /// back once that period is over).
    pub fn give_back(&self, taken_ms: u64) -> Option<MonitorBudget> {
        (self.day == Self::day_of(taken_ms) && self.used > 0).then_some(MonitorBudget { used: self.used - 1, ..*self })
    }
}

/// The claim of a check admitting a re-analysis (`WatchCursor::pending`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCheck {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    pub claimed_at_ms: u64,
}

/// Key of a `Monitor` record: its id.
pub fn monitor_key(id: &str) -> Vec<u8> {
    id.as_bytes().to_vec()
}

/// Prefix of an account's `MonitorOfAccount` records: lp(account).
pub fn account_prefix(account: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + account.len());
    push_lp(&mut key, account);
    key
}

/// Key of a `MonitorOfAccount` record: lp(account) ‖ monitor id.
pub fn account_key(account: &str, id: &str) -> Vec<u8> {
    let mut key = account_prefix(account);
    key.extend_from_slice(id.as_bytes());
    key
}

/// Prefix of a monitor's `Watch` records: lp(monitor id).
pub fn watch_prefix(id: &str) -> Vec<u8> {
    account_prefix(id)
}

/// Key of a monitor's budget (`MonitorBudget`, a `Watch` record): lp(monitor id) alone — the
/// first of its watch records, deleted with them; no cursor's key (32 more bytes).
pub fn budget_key(id: &str) -> Vec<u8> {
    watch_prefix(id)
}

/// Key of a `Watch` record: lp(monitor id) ‖ the wallet's 32 bytes.
pub fn watch_key(id: &str, wallet: &Pubkey) -> Vec<u8> {
    let mut key = watch_prefix(id);
    key.extend_from_slice(wallet.as_bytes());
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    const W1: &str = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z";
    const W2: &str = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ";

    fn monitor() -> MonitorRecord {
        MonitorRecord {
            id: "mon_1".into(),
            account: "acct_1".into(),
            key_id: "key_1".into(),
            wallets: vec![W1.into(), W2.into()],
            callback_url: Some("https://example.com/hook".into()),
            min_severity: "high".into(),
            score_drop: Some(10),
            reanalyses_per_day: None,
            dust_lamports: None,
            created_at_ms: 1,
            updated_at_ms: 1,
        }
    }

    #[test]
    fn validates_wallets_severity_and_drop() {
        assert!(monitor().validate().is_ok());
        let field = |m: MonitorRecord| m.validate().unwrap_err().field;
        assert_eq!(field(MonitorRecord { wallets: vec![], ..monitor() }), "wallets");
        assert_eq!(field(MonitorRecord { wallets: vec![W1.into(), W1.into()], ..monitor() }), "wallets");
        assert_eq!(field(MonitorRecord { wallets: vec!["nope".into()], ..monitor() }), "wallets");
        let many = (0..=MONITOR_WALLETS_MAX).map(|i| Pubkey::new([i as u8; 32]).to_base58()).collect();
        assert_eq!(field(MonitorRecord { wallets: many, ..monitor() }), "wallets");
        assert_eq!(field(MonitorRecord { min_severity: "severe".into(), ..monitor() }), "minSeverity");
        assert_eq!(field(MonitorRecord { score_drop: Some(0), ..monitor() }), "scoreDrop");
        assert_eq!(field(MonitorRecord { score_drop: Some(101), ..monitor() }), "scoreDrop");
        assert_eq!(field(MonitorRecord { reanalyses_per_day: Some(0), ..monitor() }), "reanalysesPerDay");
        let over = Some(MONITOR_REANALYSES_PER_DAY_MAX + 1);
        assert_eq!(field(MonitorRecord { reanalyses_per_day: over, ..monitor() }), "reanalysesPerDay");
        let dust = Some(MONITOR_DUST_LAMPORTS_MAX + 1);
        assert_eq!(field(MonitorRecord { dust_lamports: dust, ..monitor() }), "dustLamports");
        assert!(MonitorRecord { dust_lamports: Some(0), ..monitor() }.validate().is_ok());
        assert!(MonitorRecord { reanalyses_per_day: Some(MONITOR_REANALYSES_PER_DAY_MAX), ..monitor() }
            .validate()
            .is_ok());
    }

    #[test]
    fn records_stored_before_the_budget_read_with_its_default() {
        let old = r#"{"id":"mon_1","account":"acct_1","keyId":"key_1","wallets":["DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z"],
            "callbackUrl":"https://example.com/hook","minSeverity":"high","createdAtMs":1,"updatedAtMs":1}"#;
        let monitor: MonitorRecord = serde_json::from_str(old).expect("an old record reads");
        assert_eq!(monitor.reanalyses_per_day(), MONITOR_REANALYSES_PER_DAY_DEFAULT);
        assert_eq!(monitor.dust_lamports(), MONITOR_DUST_LAMPORTS_DEFAULT);
        let cursor: WatchCursor = serde_json::from_str(r#"{"checkedAtMs":5}"#).expect("an old cursor reads");
        assert_eq!(cursor.last_activity, None);
    }

    #[test]
    fn a_budget_counts_within_one_utc_day_and_resets_at_the_next() {
        let day = MONITOR_BUDGET_PERIOD_MS;
        let noon = 20_000 * day + day / 2;
        let mut budget = MonitorBudget::default();
        for _ in 0..3 {
            budget = budget.take(noon, 3).expect("under the limit");
        }
        assert_eq!((budget.used_at(noon), budget.take(noon, 3)), (3, None));
        assert_eq!(MonitorBudget::resets_at_ms(noon), 20_001 * day);
        // The next day starts from nothing.
        assert_eq!(budget.used_at(20_001 * day), 0);
        assert_eq!(budget.take(20_001 * day, 3), Some(MonitorBudget { day: 20_001, used: 1 }));
        // Given back within its day only.
        assert_eq!(budget.give_back(noon), Some(MonitorBudget { day: 20_000, used: 2 }));
        assert_eq!(budget.give_back(20_001 * day), None);
    }

    #[test]
    fn keys_group_by_account_and_monitor() {
        assert!(account_key("acct_1", "mon_9").starts_with(&account_prefix("acct_1")));
        assert!(!account_key("acct_12", "mon_9").starts_with(&account_prefix("acct_1")));
        let w = Pubkey::new([7; 32]);
        assert_eq!(watch_key("mon_1", &w).len(), 1 + 5 + 32);
        assert!(watch_key("mon_1", &w).starts_with(&budget_key("mon_1")));
        assert_ne!(budget_key("mon_1").len(), watch_key("mon_1", &w).len());
    }
}
