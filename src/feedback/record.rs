//! One feedback record as the store keeps it, its keys, the verdicts, the checks a submission
//! passes and the lookup of a signal's kind in an analysis' stored payload.
//!
//! Owns: `FeedbackRecord`, `FeedbackVerdict`, `FeedbackError` (the field a submission is refused on, and
//! why), the key layout of the `Feedback` and `FeedbackByTime` records, `feedback_id`. Pure;
//! any thread.
//!
//! Layout (`store::docs`, binary, big-endian): a record at lp(account) ‖ lp(analysis id) ‖
//! signal id (empty for `missed`); the account's tally (a u64 BE count of its records) at
//! lp(account) alone, in the same kind; and a copy of each record at lp(account) ‖
//! updated_at_ms BE ‖ lp(analysis id) ‖ signal id, so an account's records read oldest first
//! in one scan (eviction, pages, purge).
//! Invariant: the serde names are the stored format; renaming a field is a schema change.
//! Invariant: a record that passed `check` names a verdict and a signal consistently
//! (`false_positive` and `confirmed` name a signal, `missed` none), and a note of at most
//! `FEEDBACK_NOTE_CHARS_MAX` characters without control characters other than tab and newline.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::config::FEEDBACK_NOTE_CHARS_MAX;
use crate::store::docs::push_lp;

/// Prefix of a feedback id.
pub const FEEDBACK_ID_PREFIX: &str = "fb_";
/// The longest `signalId` looked up (a payload's ids are `sig_<n>`).
pub const SIGNAL_ID_BYTES_MAX: usize = 64;

/// What the caller says about an analysis or one of its signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeedbackVerdict {
    /// The signal is wrong about this wallet.
    FalsePositive,
    /// The signal is right.
    Confirmed,
    /// The analysis missed a risk (no signal named; the note says which).
    Missed,
}

impl FeedbackVerdict {
    pub const ALL: [FeedbackVerdict; 3] =
        [FeedbackVerdict::FalsePositive, FeedbackVerdict::Confirmed, FeedbackVerdict::Missed];

    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackVerdict::FalsePositive => "false_positive",
            FeedbackVerdict::Confirmed => "confirmed",
            FeedbackVerdict::Missed => "missed",
        }
    }

    pub fn parse(text: &str) -> Option<FeedbackVerdict> {
        FeedbackVerdict::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// Whether the verdict is about one signal (and so must name one).
    pub fn names_a_signal(self) -> bool {
        !matches!(self, FeedbackVerdict::Missed)
    }
}

/// Why a submission is refused: the field, and what it must be (400 `INVALID_REQUEST`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedbackError {
    pub field: &'static str,
    pub message: String,
}

fn refuse(field: &'static str, message: impl Into<String>) -> FeedbackError {
    FeedbackError { field, message: message.into() }
}

/// One feedback record, as stored (and copied into the time index).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackRecord {
    /// `fb_…`, derived from account, analysis and signal (`feedback_id`).
    pub id: String,
    pub account: String,
    /// The key that last wrote it.
    pub key_id: String,
    pub analysis_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_id: Option<String>,
    /// The signal's kind as the analysis' payload named it (kept when the analysis is purged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal_kind: Option<String>,
    /// `FeedbackVerdict::as_str`.
    pub verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    pub created_at_ms: u64,
    pub updated_at_ms: u64,
}

impl FeedbackRecord {
    pub fn verdict(&self) -> Option<FeedbackVerdict> {
        FeedbackVerdict::parse(&self.verdict)
    }

    /// Key of the record: lp(account) ‖ lp(analysis id) ‖ signal id.
    pub fn key(&self) -> Vec<u8> {
        record_key(&self.account, &self.analysis_id, self.signal_id.as_deref())
    }

    /// Key of its time index entry: lp(account) ‖ updated_at_ms BE ‖ lp(analysis id) ‖ signal id.
    pub fn time_key(&self) -> Vec<u8> {
        let mut key = account_prefix(&self.account);
        key.extend_from_slice(&self.updated_at_ms.to_be_bytes());
        push_lp(&mut key, &self.analysis_id);
        key.extend_from_slice(self.signal_id.as_deref().unwrap_or("").as_bytes());
        key
    }
}

/// Checks what a submission says, before the analysis is read: the verdict, whether it names a
/// signal as it must, the note. Returns the verdict.
pub fn check(verdict: &str, signal_id: Option<&str>, note: Option<&str>) -> Result<FeedbackVerdict, FeedbackError> {
    let verdict = FeedbackVerdict::parse(verdict)
        .ok_or_else(|| refuse("verdict", "must be one of false_positive, confirmed, missed"))?;
    match (verdict.names_a_signal(), signal_id) {
        (true, None) => {
            return Err(refuse(
                "signalId",
                format!("is required with the verdict {}: the id of a signal of the analysis", verdict.as_str()),
            ))
        }
        (false, Some(_)) => {
            return Err(refuse(
                "signalId",
                "must be absent with the verdict missed: it reports a risk the analysis has no signal for",
            ))
        }
        (true, Some(id)) if id.is_empty() || id.len() > SIGNAL_ID_BYTES_MAX => {
            return Err(refuse("signalId", "is not a signal of this analysis"))
        }
        _ => {}
    }
    if let Some(note) = note {
        check_note(note)?;
    }
    Ok(verdict)
}

fn check_note(note: &str) -> Result<(), FeedbackError> {
    if note.chars().count() > FEEDBACK_NOTE_CHARS_MAX {
        return Err(refuse("note", format!("must be at most {FEEDBACK_NOTE_CHARS_MAX} characters")));
    }
    if note.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
        return Err(refuse("note", "must not contain control characters (tab and newline are allowed)"));
    }
    Ok(())
}

/// The kind of the signal `signal_id` in an analysis' stored payload (`data.xray`), if it has
/// one by that id.
pub fn signal_kind(payload: &[u8], signal_id: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Payload {
        #[serde(default)]
        signals: Vec<Signal>,
    }
    #[derive(Deserialize)]
    struct Signal {
        id: String,
        kind: String,
    }
    let payload: Payload = serde_json::from_slice(payload).ok()?;
    payload.signals.into_iter().find(|s| s.id == signal_id).map(|s| s.kind)
}

/// The id of the record of (account, analysis, signal): `fb_` + base58 of the first 16 bytes
/// of SHA-256("xray-feedback-v1" ‖ lp(account) ‖ lp(analysis) ‖ signal) — the same on every
/// repeat and every node.
pub fn feedback_id(account: &str, analysis_id: &str, signal_id: Option<&str>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"xray-feedback-v1");
    hasher.update(record_key(account, analysis_id, signal_id));
    let digest = hasher.finalize();
    format!("{FEEDBACK_ID_PREFIX}{}", bs58::encode(&digest[..16]).into_string())
}

/// lp(account): the prefix of every record of the account, and the key of its tally.
pub fn account_prefix(account: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + account.len());
    push_lp(&mut key, account);
    key
}

/// Key of a record: lp(account) ‖ lp(analysis id) ‖ signal id (empty: none).
pub fn record_key(account: &str, analysis_id: &str, signal_id: Option<&str>) -> Vec<u8> {
    let mut key = account_prefix(account);
    push_lp(&mut key, analysis_id);
    key.extend_from_slice(signal_id.unwrap_or("").as_bytes());
    key
}

/// The account prefix at the start of a key (lp(account)), if the key holds one whole.
pub fn prefix_of(key: &[u8]) -> Option<&[u8]> {
    let len = usize::from(*key.first()?);
    key.get(..1 + len)
}

/// The time of a time index key under `prefix`.
pub fn time_of(key: &[u8], prefix_len: usize) -> Option<u64> {
    let bytes = key.get(prefix_len..prefix_len + 8)?;
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

/// The record key a time index key points at: the key without its 8 time bytes.
pub fn record_key_of_time_key(key: &[u8], prefix_len: usize) -> Option<Vec<u8>> {
    let mut out = key.get(..prefix_len)?.to_vec();
    out.extend_from_slice(key.get(prefix_len + 8..)?);
    Some(out)
}

/// A tally's value: the count of the account's records, u64 BE.
pub fn tally_value(count: u64) -> Vec<u8> {
    count.to_be_bytes().to_vec()
}

pub fn tally_of(value: &[u8]) -> u64 {
    value.try_into().map(u64::from_be_bytes).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(signal: Option<&str>, updated_at_ms: u64) -> FeedbackRecord {
        FeedbackRecord {
            id: feedback_id("acct_1", "an_1", signal),
            account: "acct_1".into(),
            key_id: "key_1".into(),
            analysis_id: "an_1".into(),
            signal_id: signal.map(str::to_owned),
            signal_kind: signal.map(|_| "open_token_delegation".into()),
            verdict: "false_positive".into(),
            note: None,
            created_at_ms: 1,
            updated_at_ms,
        }
    }

    #[test]
    fn verdicts_and_signals_go_together() {
        assert_eq!(check("false_positive", Some("sig_1"), None), Ok(FeedbackVerdict::FalsePositive));
        assert_eq!(check("confirmed", Some("sig_2"), Some("yes\nreally")), Ok(FeedbackVerdict::Confirmed));
        assert_eq!(check("missed", None, Some("a drainer approval")), Ok(FeedbackVerdict::Missed));
        let field = |v, s, n| check(v, s, n).unwrap_err().field;
        assert_eq!(field("wrong", Some("sig_1"), None), "verdict");
        assert_eq!(field("FALSE_POSITIVE", Some("sig_1"), None), "verdict");
        assert_eq!(field("false_positive", None, None), "signalId");
        assert_eq!(field("confirmed", None, None), "signalId");
        assert_eq!(field("missed", Some("sig_1"), None), "signalId");
        assert_eq!(field("confirmed", Some(""), None), "signalId");
        assert_eq!(field("confirmed", Some(&"s".repeat(SIGNAL_ID_BYTES_MAX + 1)), None), "signalId");
    }

    #[test]
    fn notes_are_bounded_and_printable() {
        let long = "é".repeat(FEEDBACK_NOTE_CHARS_MAX);
        assert!(check("missed", None, Some(&long)).is_ok(), "characters, not bytes");
        let longer = "a".repeat(FEEDBACK_NOTE_CHARS_MAX + 1);
        assert_eq!(check("missed", None, Some(&longer)).unwrap_err().field, "note");
        for bad in ["bell\u{7}", "nul\0", "esc\u{1b}[31m", "cr\r", "del\u{7f}", "c1\u{85}"] {
            assert_eq!(check("missed", None, Some(bad)).unwrap_err().field, "note", "{bad:?}");
        }
        assert!(check("missed", None, Some("tab\tand\nnewline")).is_ok());
    }

    #[test]
    fn signal_kinds_come_from_the_payload() {
        let payload = br#"{"wallet":"w","signals":[{"id":"sig_1","kind":"open_token_delegation","facts":{}},
            {"id":"sig_2","kind":"stake_authority_foreign"}],"evidence":[]}"#;
        assert_eq!(signal_kind(payload, "sig_2").as_deref(), Some("stake_authority_foreign"));
        assert_eq!(signal_kind(payload, "sig_3"), None);
        assert_eq!(signal_kind(b"{}", "sig_1"), None);
        assert_eq!(signal_kind(b"not json", "sig_1"), None);
    }

    #[test]
    fn ids_are_stable_and_distinct() {
        let a = feedback_id("acct_1", "an_1", Some("sig_1"));
        assert_eq!(a, feedback_id("acct_1", "an_1", Some("sig_1")));
        assert!(a.starts_with(FEEDBACK_ID_PREFIX));
        assert_ne!(a, feedback_id("acct_1", "an_1", None));
        assert_ne!(a, feedback_id("acct_2", "an_1", Some("sig_1")));
        // Length prefixes keep ("ab","c") and ("a","bc") apart.
        assert_ne!(record_key("ab", "c", None), record_key("a", "bc", None));
    }

    #[test]
    fn layout_groups_by_account_and_orders_by_time() {
        let older = record(Some("sig_9"), 5);
        let newer = record(Some("sig_1"), 6);
        assert!(older.time_key() < newer.time_key());
        let prefix = account_prefix("acct_1");
        assert!(older.key().starts_with(&prefix) && older.time_key().starts_with(&prefix));
        assert!(!record_key("acct_12", "an_1", None).starts_with(&prefix));
        assert_eq!(prefix_of(&older.time_key()), Some(&prefix[..]));
        assert_eq!(time_of(&older.time_key(), prefix.len()), Some(5));
        assert_eq!(record_key_of_time_key(&older.time_key(), prefix.len()), Some(older.key()));
        // The tally's key is the bare prefix: no record's key equals it.
        assert_ne!(record(None, 1).key(), prefix);
        assert_eq!(tally_of(&tally_value(42)), 42);
        assert_eq!(tally_of(b"bad"), 0);
        let json = serde_json::to_string(&older).unwrap();
        assert_eq!(serde_json::from_str::<FeedbackRecord>(&json).unwrap(), older);
        assert!(!json.contains("note"), "absent fields are not stored: {json}");
    }
}
