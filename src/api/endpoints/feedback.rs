//! `POST /v1/developer/feedback` (issue #31 item 2, an extension of the contract): a verdict on
//! a READY analysis of the caller's account, or on one of its signals.
//!
//! Owns: the wire form of a feedback record (`data`), the order of its checks and the mapping
//! of `feedback::BookError` to the contract's codes. Runs on listener threads; the analysis read
//! and the write are a few store calls, made off the listener (`registry_work`: the store-work
//! pool over RocksDB, the etcd runtime's blocking pool on a cluster; bounded per account as the
//! monitors' are).
//!
//! Order: body (415/413/400) → the verdict, signal and note (400 naming the field) → the
//! analysis: not an analysis id, unknown, or another account's → 404, from one path; live or
//! FAILED → 409 `CONFLICT` saying its status → the signal in its payload (400 on `signalId`)
//! → the write: 201 for a new record, 200 for a replace.
//! Invariant: no quota unit is charged (the rate limit applies, as to every request).
//! Deliberately absent: reading feedback back through the public API (the admin API lists it).

use bytes::Bytes;
use serde::Serialize;

use super::{json_bytes, ApiError, Endpoints};
use crate::api::json::{parse_body, FeedbackRequest};
use crate::clock::rfc3339_ms;
use crate::feedback::record::{check, feedback_id, signal_kind, FeedbackError};
use crate::feedback::{BookError, FeedbackRecord, Written};
use crate::http::ApiResponse;
use crate::jobs::admission::{is_id_shaped, ANALYSIS_ID_PREFIX};
use crate::store::{JobKind, JobState};

#[derive(Serialize)]
struct DataBody<T: Serialize> {
    data: T,
}

/// A feedback record on the wire (also the admin listing's items, with `account` and `keyId`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedbackBody<'a> {
    pub feedback_id: &'a str,
    pub analysis_id: &'a str,
    pub signal_id: Option<&'a str>,
    pub signal_kind: Option<&'a str>,
    pub verdict: &'a str,
    pub note: Option<&'a str>,
    pub created_at: String,
    pub updated_at: String,
}

impl<'a> FeedbackBody<'a> {
    pub fn of(record: &'a FeedbackRecord) -> FeedbackBody<'a> {
        FeedbackBody {
            feedback_id: &record.id,
            analysis_id: &record.analysis_id,
            signal_id: record.signal_id.as_deref(),
            signal_kind: record.signal_kind.as_deref(),
            verdict: &record.verdict,
            note: record.note.as_deref(),
            created_at: rfc3339_ms(record.created_at_ms),
            updated_at: rfc3339_ms(record.updated_at_ms),
        }
    }
}

fn invalid(e: FeedbackError) -> ApiError {
    ApiError::InvalidField { field: e.field, message: e.message }
}

fn not_ready(state: JobState) -> ApiError {
    let message = match state {
        JobState::Failed => "the analysis is FAILED: it has no signals to give feedback on".to_owned(),
        state => format!("the analysis is {}: send feedback once it is READY", state.as_str()),
    };
    ApiError::Conflict { message, limit: None }
}

impl Endpoints<'_> {
    /// `POST /v1/developer/feedback`
    pub async fn feedback(&self) -> Result<ApiResponse, ApiError> {
        let body: FeedbackRequest = parse_body(self.request)?;
        let verdict = check(&body.verdict, body.signal_id.as_deref(), body.note.as_deref()).map_err(invalid)?;
        let analysis_id = body.analysis_id;
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
        let now_ms = self.caller.now_ms;
        let mut record = FeedbackRecord {
            id: feedback_id(&account, &analysis_id, body.signal_id.as_deref()),
            account,
            key_id: self.caller.key.id().as_str().to_owned(),
            analysis_id,
            signal_id: body.signal_id,
            signal_kind: None,
            verdict: verdict.as_str().to_owned(),
            note: body.note,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        };
        let book = self.app.feedback.clone();
        let written = self
            .registry_work(move |_, store| {
                let job = store.get_job(&record.analysis_id).map_err(|e| ApiError::from_store(&e))?;
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
                book.put(&record).map_err(|e| match e {
                    BookError::Busy => ApiError::ServiceBusy,
                    BookError::Store(e) => ApiError::from_store(&e),
                })
            })
            .await?;
        let Written { record, created, .. } = written;
        let body = json_bytes(&DataBody { data: FeedbackBody::of(&record) })?;
        Ok(ApiResponse::json(if created { 201 } else { 200 }, Bytes::from(body)))
    }
}
