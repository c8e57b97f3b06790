//! One feedback record as the store keeps it, its keys, the verdicts, the checks a submission
//! passes, the lookup of a signal's kind in an analysis' stored payload and the facts kept of
//! a scan's verified report.
//!
//! Owns: `FeedbackRecord`, `ScanFacts`, `FeedbackVerdict`, `FeedbackError` (the field a
//! submission is refused on, and why), the key layout of the `Feedback` and `FeedbackByTime`
//! records, `feedback_id` and `scan_feedback_id`. Pure; any thread.
//!
//! Layout (`store::docs`, binary, big-endian): a record on an analysis at lp(account) ‖
//! lp(analysis id) ‖ signal id (empty for `missed`); a record on a scan at lp(account) ‖ 0x00
//! ‖ lp(request id) ‖ message digest — an analysis id is never empty, so its length byte is
//! never 0 and the two never share a key, whatever request id a client chose; and the digest,
//! because a client chooses its request ids (`X-Request-Id`): two scans of other messages
//! under one id are two records, the same answer sent again is one; the account's tally (a u64 BE count
//! of its records) at lp(account) alone, in the same kind; and a copy of each record at
//! lp(account) ‖ updated_at_ms BE ‖ the record key's rest, so an account's records read in
//! the order they were last written in one scan, either way (eviction and purge oldest first,
//! the account's own pages newest first).
//! Invariant: the serde names are the stored format; renaming a field is a schema change
//! (`analysisId` became optional and `scan` was added: records written before read as they
//! were).
//! Invariant: a record names exactly one target, an analysis or a scan; one that passed
//! `check` names a verdict and a signal consistently (`false_positive` and `confirmed` name a
//! signal, `missed` none), one that passed `check_scan` a scan verdict (`false_positive`,
//! `false_negative`); both a note of at most `FEEDBACK_NOTE_CHARS_MAX` characters without
//! control characters other than tab and newline.
//! Deliberately absent: the scan's report itself (only `ScanFacts`), and the verification of
//! it (`signing`, which comes after this module: the endpoint verifies, this reads the covered
//! members it hands over).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::config::{FEEDBACK_NOTE_CHARS_MAX, FEEDBACK_SCAN_FINDING_KINDS_MAX};
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
    /// A scan's verdict was too lenient: the transaction was worse than it said (scans only).
    FalseNegative,
}

impl FeedbackVerdict {
    pub const ALL: [FeedbackVerdict; 4] = [
        FeedbackVerdict::FalsePositive,
        FeedbackVerdict::Confirmed,
        FeedbackVerdict::Missed,
        FeedbackVerdict::FalseNegative,
    ];
    /// The verdicts on an analysis or one of its signals.
    pub const ON_ANALYSIS: [FeedbackVerdict; 3] =
        [FeedbackVerdict::FalsePositive, FeedbackVerdict::Confirmed, FeedbackVerdict::Missed];
    /// The verdicts on a scan: it flagged what is harmless, or missed what is not.
    pub const ON_SCAN: [FeedbackVerdict; 2] = [FeedbackVerdict::FalsePositive, FeedbackVerdict::FalseNegative];

    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackVerdict::FalsePositive => "false_positive",
            FeedbackVerdict::Confirmed => "confirmed",
            FeedbackVerdict::Missed => "missed",
            FeedbackVerdict::FalseNegative => "false_negative",
        }
    }

    pub fn parse(text: &str) -> Option<FeedbackVerdict> {
        FeedbackVerdict::ALL.into_iter().find(|v| v.as_str() == text)
    }

    /// Whether the verdict, on an analysis, is about one signal (and so must name one).
    pub fn names_a_signal(self) -> bool {
        matches!(self, FeedbackVerdict::FalsePositive | FeedbackVerdict::Confirmed)
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
    /// `fb_…`, derived from account and target (`feedback_id`, `scan_feedback_id`).
    pub id: String,
    pub account: String,
    /// The key that last wrote it.
    pub key_id: String,
    /// The analysis judged (`None`: a scan, `scan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis_id: Option<String>,
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
    /// The scan judged, as its verified report said it (`None`: an analysis).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<ScanFacts>,
}

/// What a record keeps of a scan's verified report: enough to find the scan in the
/// integrator's own logs and to count by what it said — not the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanFacts {
    /// The scan's `requestId` (its answer's `X-Request-Id`).
    pub request_id: String,
    /// `transaction.messageSha256`: the message judged.
    pub message_sha256: String,
    /// The scan's own verdict (`benign`, `warning`, `malicious`).
    pub verdict: String,
    /// The kinds of its findings, each once, in the report's order (at most
    /// `FEEDBACK_SCAN_FINDING_KINDS_MAX`).
    pub finding_kinds: Vec<String>,
    /// Its `scannedAt`, as signed.
    pub scanned_at: String,
}

/// What a record is about, as its key names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target<'a> {
    Analysis { id: &'a str, signal: Option<&'a str> },
    Scan { request_id: &'a str, message_sha256: &'a str },
}

impl Target<'_> {
    /// The key's part after lp(account) (and, in the time index, the time).
    fn push(self, key: &mut Vec<u8>) {
        match self {
            Target::Analysis { id, signal } => {
                push_lp(key, id);
                key.extend_from_slice(signal.unwrap_or("").as_bytes());
            }
            Target::Scan { request_id, message_sha256 } => {
                key.push(SCAN_TARGET_BYTE);
                push_lp(key, request_id);
                key.extend_from_slice(message_sha256.as_bytes());
            }
        }
    }
}

/// Marks a scan's record key where an analysis' has its id's (never 0) length byte.
const SCAN_TARGET_BYTE: u8 = 0;

impl FeedbackRecord {
    pub fn verdict(&self) -> Option<FeedbackVerdict> {
        FeedbackVerdict::parse(&self.verdict)
    }

    /// What it is about: its scan, else its analysis and signal.
    pub fn target(&self) -> Target<'_> {
        match &self.scan {
            Some(scan) => Target::Scan { request_id: &scan.request_id, message_sha256: &scan.message_sha256 },
            None => {
                Target::Analysis { id: self.analysis_id.as_deref().unwrap_or(""), signal: self.signal_id.as_deref() }
            }
        }
    }

    /// Key of the record: lp(account) ‖ the target's part.
    pub fn key(&self) -> Vec<u8> {
        target_key(&self.account, self.target())
    }

    /// Key of its time index entry: lp(account) ‖ updated_at_ms BE ‖ the target's part.
    pub fn time_key(&self) -> Vec<u8> {
        let mut key = account_prefix(&self.account);
        key.extend_from_slice(&self.updated_at_ms.to_be_bytes());
        self.target().push(&mut key);
        key
    }
}

/// Checks what a submission on an analysis says, before the analysis is read: the verdict,
/// whether it names a signal as it must, the note. Returns the verdict.
pub fn check(verdict: &str, signal_id: Option<&str>, note: Option<&str>) -> Result<FeedbackVerdict, FeedbackError> {
    let verdict = FeedbackVerdict::parse(verdict)
        .filter(|v| FeedbackVerdict::ON_ANALYSIS.contains(v))
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

/// Checks what a submission on a scan says, before its report is verified: the verdict and
/// the note. Returns the verdict.
pub fn check_scan(verdict: &str, note: Option<&str>) -> Result<FeedbackVerdict, FeedbackError> {
    let verdict = FeedbackVerdict::parse(verdict)
        .filter(|v| FeedbackVerdict::ON_SCAN.contains(v))
        .ok_or_else(|| refuse("verdict", "must be false_positive or false_negative on a scan"))?;
    if let Some(note) = note {
        check_note(note)?;
    }
    Ok(verdict)
}

/// The facts a record keeps of a scan, read from the members its signature covers (never from
/// the rest of its `data`), once the endpoint verified them; and whether `verdict` fits it: a
/// scan without findings flagged nothing, so it cannot be a false positive.
pub fn scan_facts(covered: &Map<String, Value>, verdict: FeedbackVerdict) -> Result<ScanFacts, FeedbackError> {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    let not_a_scan = || refuse("scan", "is not a scan report of this server (a member is missing)");
    let request_id = text(covered.get("requestId")).filter(|id| !id.is_empty()).ok_or_else(not_a_scan)?;
    let message_sha256 =
        text(covered.get("transaction").and_then(|t| t.get("messageSha256"))).ok_or_else(not_a_scan)?;
    let findings = covered.get("findings").and_then(Value::as_array).ok_or_else(not_a_scan)?;
    let mut finding_kinds: Vec<String> = Vec::new();
    for kind in findings.iter().filter_map(|f| f.get("kind").and_then(Value::as_str)) {
        if finding_kinds.len() < FEEDBACK_SCAN_FINDING_KINDS_MAX && !finding_kinds.iter().any(|k| k == kind) {
            finding_kinds.push(kind.to_owned());
        }
    }
    if verdict == FeedbackVerdict::FalsePositive && findings.is_empty() {
        return Err(refuse(
            "verdict",
            "false_positive needs a scan with findings: this one flagged nothing (false_negative says it missed a risk)",
        ));
    }
    Ok(ScanFacts {
        request_id,
        message_sha256,
        verdict: text(covered.get("verdict")).ok_or_else(not_a_scan)?,
        finding_kinds,
        scanned_at: text(covered.get("scannedAt")).ok_or_else(not_a_scan)?,
    })
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
    id_of_key(&record_key(account, analysis_id, signal_id))
}

/// The id of the record of (account, scan request id, message digest): made as
/// `feedback_id`, from its key.
pub fn scan_feedback_id(account: &str, request_id: &str, message_sha256: &str) -> String {
    id_of_key(&target_key(account, Target::Scan { request_id, message_sha256 }))
}

fn id_of_key(key: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"xray-feedback-v1");
    hasher.update(key);
    let digest = hasher.finalize();
    format!("{FEEDBACK_ID_PREFIX}{}", bs58::encode(&digest[..16]).into_string())
}

/// lp(account): the prefix of every record of the account, and the key of its tally.
pub fn account_prefix(account: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + account.len());
    push_lp(&mut key, account);
    key
}

/// Key of a record on an analysis: lp(account) ‖ lp(analysis id) ‖ signal id (empty: none).
pub fn record_key(account: &str, analysis_id: &str, signal_id: Option<&str>) -> Vec<u8> {
    target_key(account, Target::Analysis { id: analysis_id, signal: signal_id })
}

/// Key of a record: lp(account) ‖ the target's part.
fn target_key(account: &str, target: Target<'_>) -> Vec<u8> {
    let mut key = account_prefix(account);
    target.push(&mut key);
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
            analysis_id: Some("an_1".into()),
            signal_id: signal.map(str::to_owned),
            signal_kind: signal.map(|_| "open_token_delegation".into()),
            verdict: "false_positive".into(),
            note: None,
            created_at_ms: 1,
            updated_at_ms,
            scan: None,
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

    fn scan_record(request_id: &str, updated_at_ms: u64) -> FeedbackRecord {
        let facts = ScanFacts {
            request_id: request_id.into(),
            message_sha256: "ab".repeat(32),
            verdict: "malicious".into(),
            finding_kinds: vec!["token_approval".into()],
            scanned_at: "2026-11-23T10:20:00.125Z".into(),
        };
        FeedbackRecord {
            id: scan_feedback_id("acct_1", request_id, &"ab".repeat(32)),
            analysis_id: None,
            signal_id: None,
            signal_kind: None,
            scan: Some(facts),
            ..record(None, updated_at_ms)
        }
    }

    #[test]
    fn scan_records_never_share_a_key_with_an_analysis_and_sort_by_time_with_them() {
        // A client may send any X-Request-Id, an analysis' id included.
        let scan = scan_record("an_1", 7);
        let digest = "ab".repeat(32);
        assert_eq!(scan.target(), Target::Scan { request_id: "an_1", message_sha256: &digest });
        assert_ne!(scan.key(), record(None, 7).key());
        assert_ne!(scan.id, feedback_id("acct_1", "an_1", None));
        assert_eq!(scan.id, scan_feedback_id("acct_1", "an_1", &digest));
        assert_ne!(scan.id, scan_feedback_id("acct_2", "an_1", &digest), "another account's");
        // The client chose the request id: another message under it is another record.
        assert_ne!(scan.id, scan_feedback_id("acct_1", "an_1", &"cd".repeat(32)));
        let prefix = account_prefix("acct_1");
        assert!(record(Some("sig_1"), 6).time_key() < scan.time_key());
        assert_eq!(record_key_of_time_key(&scan.time_key(), prefix.len()), Some(scan.key()));
        let json = serde_json::to_string(&scan).unwrap();
        assert!(!json.contains("analysisId"), "{json}");
        assert_eq!(serde_json::from_str::<FeedbackRecord>(&json).unwrap(), scan);
        // A record stored before scans existed reads as it was.
        let old = r#"{"id":"fb_1","account":"acct_1","keyId":"key_1","analysisId":"an_1","verdict":"missed",
            "createdAtMs":1,"updatedAtMs":2}"#;
        let old: FeedbackRecord = serde_json::from_str(old).unwrap();
        assert_eq!((old.analysis_id.as_deref(), old.scan.as_ref()), (Some("an_1"), None));
        assert_eq!(old.key(), record_key("acct_1", "an_1", None));
    }

    #[test]
    fn scan_verdicts_are_their_own() {
        assert_eq!(check_scan("false_positive", None), Ok(FeedbackVerdict::FalsePositive));
        assert_eq!(check_scan("false_negative", Some("drained")), Ok(FeedbackVerdict::FalseNegative));
        for wrong in ["confirmed", "missed", "FALSE_NEGATIVE", ""] {
            assert_eq!(check_scan(wrong, None).unwrap_err().field, "verdict", "{wrong:?}");
        }
        assert_eq!(check_scan("false_negative", Some("bell\u{7}")).unwrap_err().field, "note");
        // And an analysis takes none of the scan's own.
        assert_eq!(check("false_negative", None, None).unwrap_err().field, "verdict");
    }

    #[test]
    fn scan_facts_come_from_the_covered_members() {
        let covered = |findings: Value| -> Map<String, Value> {
            let value = serde_json::json!({
                "verdict": "malicious", "requestId": "req_1", "scannedAt": "2026-11-23T10:20:00.125Z",
                "transaction": {"messageSha256": "00ff"}, "findings": findings,
            });
            value.as_object().cloned().unwrap()
        };
        let many: Vec<Value> = (0..FEEDBACK_SCAN_FINDING_KINDS_MAX + 5)
            .flat_map(|i| [serde_json::json!({"kind": format!("k{i}")}), serde_json::json!({"kind": format!("k{i}")})])
            .collect();
        let facts = scan_facts(&covered(Value::Array(many)), FeedbackVerdict::FalsePositive).unwrap();
        assert_eq!(facts.finding_kinds.len(), FEEDBACK_SCAN_FINDING_KINDS_MAX, "each kind once, bounded");
        assert_eq!((facts.finding_kinds[0].as_str(), facts.finding_kinds[1].as_str()), ("k0", "k1"));
        assert_eq!((facts.request_id.as_str(), facts.message_sha256.as_str()), ("req_1", "00ff"));
        assert_eq!((facts.verdict.as_str(), facts.scanned_at.as_str()), ("malicious", "2026-11-23T10:20:00.125Z"));
        // Nothing flagged: nothing to be false about.
        let none = covered(serde_json::json!([]));
        assert_eq!(scan_facts(&none, FeedbackVerdict::FalsePositive).unwrap_err().field, "verdict");
        assert!(scan_facts(&none, FeedbackVerdict::FalseNegative).unwrap().finding_kinds.is_empty());
        let mut no_id = none.clone();
        no_id.remove("requestId");
        assert_eq!(scan_facts(&no_id, FeedbackVerdict::FalseNegative).unwrap_err().field, "scan");
    }
}
