//! `POST /v1/developer/feedback` and `GET /v1/developer/feedback` (issue #31 item 2, issue #42
//! item 4; an extension of the contract): a verdict on a READY analysis of the caller's
//! account or on one of its signals, or on a scan whose signed answer the caller sends back;
//! and the account's own records, newest first.
//!
//! Owns: the wire form of a feedback record (`data`, also the admin listing's items), the
//! order of each form's checks, the verification of a scan's answer against this server's
//! signing keys, the account's page and its cursor, and the mapping of `feedback::BookError` to
//! the contract's codes. Runs on listener threads; the analysis read, the write and the page
//! are a few store calls, made off the listener (`store_work`: the store-work pool over
//! RocksDB, the etcd runtime's blocking pool on a cluster; bounded per account as the monitors'
//! are). A scan's answer is verified on the listener: one Ed25519 verification over at most
//! `FEEDBACK_SCAN_BODY_BYTES_MAX` canonicalized bytes, as a scan verifies its signatures.
//!
//! Order, an analysis: body (415/413 past `BODY_BYTES_MAX`/400) → the verdict, signal and note
//! (400 naming the field) → the analysis: not an analysis id, unknown, or another account's →
//! 404, from one path; live or FAILED → 409 `CONFLICT` saying its status → the signal in its
//! payload (400 on `signalId`) → the write: 201 for a new record, 200 for a replace.
//! Order, a scan: body (415/413 past `FEEDBACK_SCAN_BODY_BYTES_MAX`/400) → `transaction:scan`
//! besides the route's `analysis:read` (403 on `scan`) → the verdict (one of the scan's two)
//! and note (400) → the answer verified as an `xray.scan.v2` report of this
//! server's keys, signed for the caller's account (422 `REPORT_NOT_VERIFIED` naming the
//! verifier's reason: `account_mismatch` for another account's scan, said without naming it)
//! → `false_positive` on a scan without findings (400 on `verdict`) → the write (201/200).
//! Invariant: no quota unit is charged (the rate limit applies, as to every request).
//! Invariant: only the members a scan's signature covers are read (`Verified::covered`), and
//! only `ScanFacts` of them are kept — no scan is stored.
//! Invariant: a page lists the caller's account's records only (the book reads under its
//! prefix); a cursor is a position in that account's index, so another account's cursor lists
//! this account's records from there, never theirs. Records of scans are listed only to a key
//! holding `transaction:scan` (the scope their answers were given to).
//! Invariant: a scan's record is keyed by its (signed) request id and message digest under the
//! account, so the same answer sent again replaces its record, and neither another account nor
//! another scan under a request id the client reused can land on it.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{json_bytes, page_limit, ApiError, Endpoints};
use crate::api::json::{parse_body, FeedbackRequest};
use crate::api::router::query_param;
use crate::auth::scope::Scope;
use crate::clock::rfc3339_ms;
use crate::config::{
    BODY_BYTES_MAX, DOC_KEY_BYTES_MAX, FEEDBACK_OWN_PAGE_LEN_DEFAULT, FEEDBACK_OWN_PAGE_LEN_MAX,
    FEEDBACK_SCAN_BODY_BYTES_MAX,
};
use crate::feedback::record::{check, check_scan, feedback_id, scan_facts, scan_feedback_id, signal_kind};
use crate::feedback::record::{FeedbackError, ScanFacts};
use crate::feedback::{BookError, FeedbackRecord, FeedbackVerdict, Written};
use crate::http::{ApiResponse, Body};
use crate::jobs::admission::{is_id_shaped, ANALYSIS_ID_PREFIX};
use crate::signing::{verify_scan, ScanBinding};
use crate::store::{JobKind, JobState};

#[derive(Serialize)]
struct DataBody<T: Serialize> {
    data: T,
}

/// A feedback record on the wire (also the admin listing's items, with `account` and `keyId`):
/// what it judged under `target`, then the verdict given.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackBody<'a> {
    pub feedback_id: &'a str,
    #[serde(flatten)]
    pub target: TargetBody<'a>,
    pub verdict: &'a str,
    pub note: Option<&'a str>,
    pub created_at: String,
    pub updated_at: String,
}

/// What a record judged: `"target": "analysis"` with its analysis and signal, or `"target":
/// "scan"` with the facts kept of the scan.
#[derive(Serialize)]
#[serde(tag = "target", rename_all = "lowercase", rename_all_fields = "camelCase")]
pub enum TargetBody<'a> {
    Analysis {
        analysis_id: &'a str,
        signal_id: Option<&'a str>,
        signal_kind: Option<&'a str>,
    },
    Scan {
        request_id: &'a str,
        message_sha256: &'a str,
        scan_verdict: &'a str,
        finding_kinds: &'a [String],
        scanned_at: &'a str,
    },
}

impl<'a> FeedbackBody<'a> {
    pub fn of(record: &'a FeedbackRecord) -> FeedbackBody<'a> {
        let target = match &record.scan {
            Some(ScanFacts { request_id, message_sha256, verdict, finding_kinds, scanned_at }) => {
                TargetBody::Scan { request_id, message_sha256, scan_verdict: verdict, finding_kinds, scanned_at }
            }
            None => TargetBody::Analysis {
                analysis_id: record.analysis_id.as_deref().unwrap_or(""),
                signal_id: record.signal_id.as_deref(),
                signal_kind: record.signal_kind.as_deref(),
            },
        };
        FeedbackBody {
            feedback_id: &record.id,
            target,
            verdict: &record.verdict,
            note: record.note.as_deref(),
            created_at: rfc3339_ms(record.created_at_ms),
            updated_at: rfc3339_ms(record.updated_at_ms),
        }
    }
}

/// The account's page: newest first, `nextAfter` the next page's `after` (`null`: no more).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FeedbackPageBody<'a> {
    feedback: Vec<FeedbackBody<'a>>,
    next_after: Option<String>,
}

/// Longest `after=` read: base58 of n characters decodes to at most n bytes (a leading `1` is a
/// zero byte), so every text this long is within `DOC_KEY_BYTES_MAX` — and a page's cursor is
/// far shorter (8 bytes of time and a record key's target part, ~140 bytes at most: under 200
/// characters).
const CURSOR_TEXT_LEN_MAX: usize = DOC_KEY_BYTES_MAX;

/// A page's `nextAfter`: its last record's place in the account's time index, base58.
pub fn cursor_text(key: &[u8]) -> String {
    bs58::encode(key).into_string()
}

/// `after=` of a feedback page (the account's own, or the admin listing): what a page's
/// `nextAfter` said, else 400 on `after` — an empty one too, as the monitors' pages refuse it
/// (no page says an empty `nextAfter`). Its length is checked before it is decoded (base58
/// decoding is quadratic in it, and a request head may be far longer than any key).
pub fn parse_cursor(query: Option<&str>) -> Result<Option<Vec<u8>>, ApiError> {
    match query_param(query, "after") {
        None => Ok(None),
        Some(text) => Some(text)
            .filter(|text| (1..=CURSOR_TEXT_LEN_MAX).contains(&text.len()))
            .and_then(|text| bs58::decode(text).into_vec().ok())
            .filter(|key| key.len() <= DOC_KEY_BYTES_MAX)
            .map(Some)
            .ok_or(ApiError::InvalidRequest { field: "after", message: "after must be a page's nextAfter" }),
    }
}

fn invalid(e: FeedbackError) -> ApiError {
    ApiError::InvalidField { field: e.field, message: e.message }
}

fn book_error(e: BookError) -> ApiError {
    match e {
        BookError::Busy => ApiError::ServiceBusy,
        BookError::Store(e) => ApiError::from_store(&e),
    }
}

fn not_ready(state: JobState) -> ApiError {
    let message = match state {
        JobState::Failed => "the analysis is FAILED: it has no signals to give feedback on".to_owned(),
        state => format!("the analysis is {}: send feedback once it is READY", state.as_str()),
    };
    ApiError::Conflict { message, limit: None, reason: None }
}

/// The scan's answer as sent back, read by `serde_json` (see `FeedbackRequest`).
#[derive(Deserialize)]
struct ScanAnswer {
    scan: Value,
}

impl Endpoints<'_> {
    /// `POST /v1/developer/feedback`
    pub async fn feedback(&self) -> Result<ApiResponse, ApiError> {
        match parse_body(self.request)? {
            FeedbackRequest::Analysis { analysis_id, signal_id, verdict, note } => {
                // The route reads a scan's answer; feedback on an analysis keeps the contract's
                // bound.
                if matches!(&self.request.body, Body::Complete(bytes) if bytes.len() > BODY_BYTES_MAX) {
                    return Err(ApiError::PayloadTooLarge { max_bytes: BODY_BYTES_MAX });
                }
                self.analysis_feedback(analysis_id, signal_id, &verdict, note).await
            }
            FeedbackRequest::Scan { verdict, note } => {
                self.may_read_scans(Some(FeedbackRequest::SCAN_MEMBER))?;
                self.scan_feedback(&verdict, note).await
            }
        }
    }

    /// A scan's answer is given to a key holding `transaction:scan`, and a scan's record holds
    /// what that answer said: sending one back, or reading the records of scans, takes that
    /// scope too (as a monitor's events take `analysis:read`), not just the route's
    /// `analysis:read`.
    fn may_read_scans(&self, field: Option<&'static str>) -> Result<(), ApiError> {
        match self.caller.key.scopes().contains(Scope::TransactionScan) {
            true => Ok(()),
            false => Err(ApiError::InsufficientScope { required_scope: Scope::TransactionScan, field }),
        }
    }

    async fn analysis_feedback(
        &self,
        analysis_id: String,
        signal_id: Option<String>,
        verdict: &str,
        note: Option<String>,
    ) -> Result<ApiResponse, ApiError> {
        let verdict = check(verdict, signal_id.as_deref(), note.as_deref()).map_err(invalid)?;
        if !is_id_shaped(&analysis_id, ANALYSIS_ID_PREFIX) {
            return Err(ApiError::NotFound);
        }
        let account = self.caller.key.account().as_str().to_owned();
        // A job this node runs: its state without a read (the store says QUEUED/RUNNING too).
        if let Some(live) = self.app.index.get(&analysis_id).filter(|live| live.record.account == account) {
            if let Some(state) = live.state() {
                return Err(not_ready(state));
            }
        }
        let mut record = self.record(verdict, note);
        record.id = feedback_id(&account, &analysis_id, signal_id.as_deref());
        record.analysis_id = Some(analysis_id);
        record.signal_id = signal_id;
        let book = self.app.feedback.clone();
        let written = self
            .store_work(move |store| {
                let analysis_id = record.analysis_id.as_deref().unwrap_or("");
                let job = store.get_job(analysis_id).map_err(|e| ApiError::from_store(&e))?;
                let job = job.filter(|j| j.account == record.account && matches!(j.kind, JobKind::Analysis { .. }));
                let job = job.ok_or(ApiError::NotFound)?;
                if job.state != JobState::Ready {
                    return Err(not_ready(job.state));
                }
                if let Some(signal_id) = &record.signal_id {
                    // A READY job's payload is kept until the retention purge takes both.
                    let payload = store.get_result(&job).map_err(|e| ApiError::from_store(&e))?;
                    let kind = payload.as_deref().and_then(|p| signal_kind(p, signal_id));
                    let unknown =
                        || FeedbackError { field: "signalId", message: "is not a signal of this analysis".into() };
                    record.signal_kind = Some(kind.ok_or_else(|| invalid(unknown()))?);
                }
                book.put(&record).map_err(book_error)
            })
            .await?;
        self.written(written)
    }

    /// Feedback on a scan: its answer verified with this server's keys, for this account.
    async fn scan_feedback(&self, verdict: &str, note: Option<String>) -> Result<ApiResponse, ApiError> {
        let verdict = check_scan(verdict, note.as_deref()).map_err(invalid)?;
        let facts = self.verified_scan(verdict)?;
        let mut record = self.record(verdict, note);
        record.id = scan_feedback_id(&record.account, &facts.request_id, &facts.message_sha256);
        record.scan = Some(facts);
        let book = self.app.feedback.clone();
        let written = self.store_work(move |_| book.put(&record).map_err(book_error)).await?;
        self.written(written)
    }

    /// The facts of the scan whose answer the body carries, once it verified as this server's
    /// for the caller's account. Synchronous, so the parsed answer and key set (a few times the
    /// body's bytes) are dropped before the write is awaited.
    fn verified_scan(&self, verdict: FeedbackVerdict) -> Result<ScanFacts, ApiError> {
        let Body::Complete(bytes) = &self.request.body else {
            return Err(ApiError::PayloadTooLarge { max_bytes: FEEDBACK_SCAN_BODY_BYTES_MAX });
        };
        let answer: ScanAnswer = serde_json::from_slice(bytes)
            .map_err(|_| ApiError::InvalidRequest { field: "body", message: "body is not valid JSON" })?;
        let key_set: Value = serde_json::from_slice(&self.app.signer.key_set()).map_err(|e| ApiError::internal(&e))?;
        let data = answer.scan.get("data").unwrap_or(&Value::Null);
        let binding = ScanBinding { account: Some(self.caller.key.account().as_str()), ..ScanBinding::default() };
        let verified = verify_scan(data, &key_set, &binding).map_err(|e| ApiError::ReportNotVerified {
            field: FeedbackRequest::SCAN_MEMBER,
            reason: e.reason().as_str(),
            message: e.to_string(),
        })?;
        scan_facts(&verified.covered, verdict).map_err(invalid)
    }

    /// A record of the caller with `verdict` and `note`, written now, about nothing yet.
    fn record(&self, verdict: FeedbackVerdict, note: Option<String>) -> FeedbackRecord {
        let now_ms = self.caller.now_ms;
        FeedbackRecord {
            id: String::new(),
            account: self.caller.key.account().as_str().to_owned(),
            key_id: self.caller.key.id().as_str().to_owned(),
            analysis_id: None,
            signal_id: None,
            signal_kind: None,
            verdict: verdict.as_str().to_owned(),
            note,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            scan: None,
        }
    }

    /// 201 with a new record, 200 with a replaced one.
    fn written(&self, written: Written) -> Result<ApiResponse, ApiError> {
        let Written { record, created, .. } = written;
        let body = json_bytes(&DataBody { data: FeedbackBody::of(&record) })?;
        Ok(ApiResponse::json(if created { 201 } else { 200 }, Bytes::from(body)))
    }

    /// `GET /v1/developer/feedback?after=&limit=`: the caller's account's records, most
    /// recently written first.
    pub async fn list_feedback(&self) -> Result<ApiResponse, ApiError> {
        let query = self.request.query.as_deref();
        let limit = page_limit(query, FEEDBACK_OWN_PAGE_LEN_DEFAULT, FEEDBACK_OWN_PAGE_LEN_MAX)?;
        let after = parse_cursor(query)?;
        let account = self.caller.key.account().as_str().to_owned();
        let book = self.app.feedback.clone();
        let page = self
            .store_work(move |_| book.newest(&account, after.as_deref(), limit).map_err(|e| ApiError::from_store(&e)))
            .await?;
        // The records of scans only to a key that may read scans; the cursor still follows
        // every record read, so a page may be short (even empty) with a `nextAfter`.
        let scans = self.may_read_scans(None).is_ok();
        let body = FeedbackPageBody {
            feedback: page.records.iter().filter(|r| scans || r.scan.is_none()).map(FeedbackBody::of).collect(),
            next_after: page.next_after.as_deref().map(cursor_text),
        };
        Ok(ApiResponse::json(200, Bytes::from(json_bytes(&DataBody { data: body })?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(scan: Option<ScanFacts>) -> FeedbackRecord {
        FeedbackRecord {
            id: "fb_1".into(),
            account: "acct_1".into(),
            key_id: "key_1".into(),
            analysis_id: scan.is_none().then(|| "an_1".into()),
            signal_id: None,
            signal_kind: None,
            verdict: "missed".into(),
            note: Some("n".into()),
            created_at_ms: 0,
            updated_at_ms: 1,
            scan,
        }
    }

    #[test]
    fn each_target_has_its_own_members_on_the_wire() {
        let analysis = serde_json::to_value(FeedbackBody::of(&record(None))).unwrap();
        assert_eq!(analysis["target"], "analysis");
        assert_eq!(analysis["analysisId"], "an_1");
        assert!(analysis["signalId"].is_null() && analysis.get("signalId").is_some(), "{analysis}");
        assert!(analysis.get("requestId").is_none() && analysis.get("account").is_none(), "{analysis}");
        let facts = ScanFacts {
            request_id: "req_1".into(),
            message_sha256: "ff".into(),
            verdict: "benign".into(),
            finding_kinds: vec![],
            scanned_at: "2026-11-23T10:20:00.125Z".into(),
        };
        let text = serde_json::to_string(&FeedbackBody::of(&record(Some(facts)))).unwrap();
        let scan: Value = serde_json::from_str(&text).unwrap();
        let mut keys: Vec<(usize, &str)> =
            scan.as_object().unwrap().keys().map(|k| (text.find(&format!("\"{k}\":")).unwrap(), k.as_str())).collect();
        keys.sort_unstable();
        assert_eq!(
            keys.into_iter().map(|(_, k)| k).collect::<Vec<_>>(),
            [
                "feedbackId",
                "target",
                "requestId",
                "messageSha256",
                "scanVerdict",
                "findingKinds",
                "scannedAt",
                "verdict",
                "note",
                "createdAt",
                "updatedAt"
            ]
        );
        assert_eq!((scan["target"].as_str(), scan["findingKinds"].as_array().map(Vec::len)), (Some("scan"), Some(0)));
    }

    #[test]
    fn cursors_read_back_what_pages_wrote() {
        let key = [1u8, 0, 0xFF, 7];
        let text = cursor_text(&key);
        assert_eq!(parse_cursor(Some(&format!("after={text}"))).unwrap(), Some(key.to_vec()));
        assert_eq!(parse_cursor(None).unwrap(), None);
        // The longest text read is always a key's length at most; the longest cursor is shorter.
        let ones = "1".repeat(CURSOR_TEXT_LEN_MAX);
        assert_eq!(parse_cursor(Some(&format!("after={ones}"))).unwrap(), Some(vec![0; DOC_KEY_BYTES_MAX]));
        assert!(cursor_text(&[0xFF; 8 + 2 + 64 + 64 + 16]).len() < CURSOR_TEXT_LEN_MAX / 2);
        for bad in [
            "after=".to_owned(),
            "after=0OIl".to_owned(),
            format!("after={}", "1".repeat(CURSOR_TEXT_LEN_MAX + 1)),
            format!("after={}", "z".repeat(2 * DOC_KEY_BYTES_MAX)),
            format!("after={}", "z".repeat(400_000)),
        ] {
            let refused = parse_cursor(Some(&bad)).unwrap_err();
            assert!(matches!(refused, ApiError::InvalidRequest { field: "after", .. }), "{bad}");
        }
    }
}
