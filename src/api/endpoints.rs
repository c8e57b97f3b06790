//! The answer of each endpoint once a request is authenticated, in scope and within its rate
//! limit (contract §3 steps 5–10 and §4).
//!
//! Owns: body parsing and address checks of the two work-creating endpoints, the 202/200
//! answers with `Location` and — when the request named a `callbackUrl` — their `callback`
//! (the URL attached to the job an answer names, even an existing one: `callback_of`), polls (live jobs from the status index, finished ones from the
//! store) with bounded long-poll waits, and the status and usage documents. Runs on listener
//! threads. What differs on a cluster node is in `cluster.rs` (reads of etcd, awaited).
//!
//! Invariant: a job of another account is answered exactly like an unknown one (404), from the
//! same code path, so ids cannot be probed across tenants.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::idempotency::{idempotency_key, Asked};
use super::json::{parse_body, CompareRequest, WalletRequest};
use super::router::{analysis_path, comparison_path, parse_wait, query_param};
use super::wire::*;
use super::ApiError;
use super::{App, Caller};
use crate::auth::scope::Scope;
use crate::config::POLL_RETRY_AFTER_S;
use crate::eligibility::{check_local, classify_local, LocalRefusal};
use crate::http::{ApiRequest, ApiResponse, StopState};
use crate::jobs::admission::{
    is_id_shaped, AdmitError, AdmitRequest, CallbackAnswer, Decision, IdempotencyKey, Replay, Work, ANALYSIS_ID_PREFIX,
    PAIR_ID_PREFIX,
};
use crate::jobs::finished::StoredJob;
use crate::jobs::index::LiveJob;
use crate::metrics::JobLabel;
use crate::pubkey::Pubkey;
use crate::store::{self, Callback, CallbackStatus, JobKind, JobRecord, JobState};

mod batch;
mod cluster;
pub mod feedback;
pub mod monitors;
pub mod policy;
mod scan;

pub(crate) struct Endpoints<'r> {
    pub app: &'r App,
    pub stop: &'r StopState,
    pub caller: &'r Caller,
    pub request: &'r ApiRequest,
}

/// Room reserved for a success body before serializing (the status document is ~1 KB), so the
/// buffer is not grown step by step.
const BODY_BYTES_TYPICAL: usize = 1024;

fn json_bytes<T: serde::Serialize>(value: &T) -> Result<Vec<u8>, ApiError> {
    let mut body = Vec::with_capacity(BODY_BYTES_TYPICAL);
    serde_json::to_writer(&mut body, value).map_err(|e| ApiError::internal(&e))?;
    Ok(body)
}

/// The largest page of the public API, whichever it is.
const PAGE_LEN_MAX: usize = 100;
const _: () = assert!(
    crate::config::MONITORS_PAGE_LEN_MAX <= PAGE_LEN_MAX
        && crate::config::MONITOR_EVENTS_PAGE_LEN_MAX <= PAGE_LEN_MAX
        && crate::config::FEEDBACK_OWN_PAGE_LEN_MAX <= PAGE_LEN_MAX
);

/// `limit=` of a page (monitors, events, feedback): absent → `default`; 1..=`max` → it;
/// anything else → 400. Every page's largest is 100, as the message says.
fn page_limit(query: Option<&str>, default: usize, max: usize) -> Result<usize, ApiError> {
    debug_assert!(max <= PAGE_LEN_MAX, "the message names {PAGE_LEN_MAX}");
    let Some(text) = query_param(query, "limit") else { return Ok(default) };
    match text.parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) && text.len() <= 4 && text.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
        _ => Err(ApiError::InvalidRequest { field: "limit", message: "limit must be a whole number from 1 to 100" }),
    }
}

/// Step 7 for an address already validated (step 6).
fn classified(field: &'static str, address: &Pubkey, app: &App) -> Result<(), ApiError> {
    classify_local(address, &app.labels.current()).map_err(|reason| ApiError::AccountNotEligible { field, reason })
}

/// Steps 6 and 7 for one address field.
fn checked_address(field: &'static str, text: &str, app: &App) -> Result<Pubkey, ApiError> {
    check_local(text, &app.labels.current()).map_err(|refusal| match refusal {
        LocalRefusal::Invalid(reason) => ApiError::InvalidAddress { field, reason },
        LocalRefusal::Ineligible(reason) => ApiError::AccountNotEligible { field, reason },
    })
}

/// A decision as its answer names it: the job, whether an existing one answered (no charge),
/// whether the answer is a kept one sent again.
struct Answer<'d> {
    job: Snapshot<'d>,
    deduplicated: bool,
    replayed: bool,
}

impl<'d> Answer<'d> {
    fn of(decision: &'d Decision) -> Answer<'d> {
        let (job, deduplicated, replayed) = match decision {
            Decision::Admitted(record) => (Snapshot::of_record(record), false, false),
            Decision::Live(live, state) => (Snapshot::of_live_as(live, *state), true, false),
            Decision::Fresh(job) => (Snapshot::of_record(&job.record), true, false),
            Decision::Replayed(replay) => (Snapshot::of_replay(replay), replay.deduplicated, true),
        };
        Answer { job, deduplicated, replayed }
    }
}

/// The wire's name of a job: analysis id and wallet, or pair id and wallets.
fn wire_subject(record: &JobRecord) -> WireSubject<'_> {
    match &record.kind {
        JobKind::Analysis { wallet } => WireSubject::Analysis { analysis_id: &record.id, wallet },
        JobKind::Comparison { wallet_a, wallet_b, pair_id } => WireSubject::Comparison { pair_id, wallet_a, wallet_b },
    }
}

/// A job's state now: the live index's if it is live, else the record's.
struct Snapshot<'j> {
    record: &'j JobRecord,
    state: JobState,
    started_at_ms: Option<u64>,
    /// Its webhook: the record's, or one a later request attached to the live job.
    callback: Option<&'j Callback>,
}

impl<'j> Snapshot<'j> {
    fn of_live(live: &'j LiveJob) -> Snapshot<'j> {
        // A live job that just finished reads as RUNNING until the poll is repeated.
        let state = live.state().unwrap_or(JobState::Running);
        Snapshot { record: &live.record, state, started_at_ms: live.started_at_ms(), callback: live.callback() }
    }

    /// A live job in the state admission read once (`Decision::Live`).
    fn of_live_as(live: &'j LiveJob, state: JobState) -> Snapshot<'j> {
        let started_at_ms = if state == JobState::Queued { None } else { live.started_at_ms() };
        Snapshot { record: &live.record, state, started_at_ms, callback: live.callback() }
    }

    fn of_record(record: &'j JobRecord) -> Snapshot<'j> {
        Snapshot {
            record,
            state: record.state,
            started_at_ms: record.started_at_ms,
            callback: record.callback.as_ref(),
        }
    }

    /// A kept answer: its job in the state the answer named.
    fn of_replay(replay: &'j Replay) -> Snapshot<'j> {
        let callback = replay.record.callback.as_ref();
        Snapshot { record: &replay.record, state: replay.state, started_at_ms: None, callback }
    }
}

impl Endpoints<'_> {
    fn account(&self) -> &str {
        self.caller.key.account().as_str()
    }

    fn poll_url(&self, record: &JobRecord) -> String {
        let path = match &record.kind {
            JobKind::Analysis { .. } => analysis_path(&record.id),
            JobKind::Comparison { pair_id, .. } => comparison_path(pair_id),
        };
        format!("{}{path}", self.app.base_url())
    }

    /// Work is refused while the server drains (graceful shutdown).
    fn check_accepting(&self) -> Result<(), ApiError> {
        if self.stop.is_draining() {
            return Err(ApiError::ServiceBusy);
        }
        Ok(())
    }

    pub async fn analyze_wallet(&self) -> Result<ApiResponse, ApiError> {
        let body: WalletRequest = parse_body(self.request)?;
        let wallet = checked_address("wallet", &body.wallet, self.app)?;
        let asked = Asked { refresh: body.refresh, callback_url: self.checked_callback(body.callback_url.as_deref())? };
        self.check_accepting()?;
        self.admit(Work::Analysis { wallet }, asked).await
    }

    pub async fn compare(&self) -> Result<ApiResponse, ApiError> {
        let body: CompareRequest = parse_body(self.request)?;
        let (wallet_a, wallet_b) = body.addresses()?;
        classified("walletA", &wallet_a, self.app)?;
        classified("walletB", &wallet_b, self.app)?;
        let asked = Asked { refresh: body.refresh, callback_url: self.checked_callback(body.callback_url.as_deref())? };
        self.check_accepting()?;
        self.admit(Work::Comparison { wallet_a, wallet_b }, asked).await
    }

    /// A `callbackUrl` the webhook policy accepts (400 naming the field, else), named by a key
    /// that may read what it delivers: the webhook's body is the finished document a poll
    /// answers, so it needs `analysis:read` (403 naming the scope and the field, else) —
    /// checked before anything is admitted or charged.
    fn checked_callback<'u>(&self, url: Option<&'u str>) -> Result<Option<&'u str>, ApiError> {
        let Some(url) = url else { return Ok(None) };
        if !self.caller.key.scopes().contains(Scope::AnalysisRead) {
            return Err(ApiError::InsufficientScope {
                required_scope: Scope::AnalysisRead,
                field: Some("callbackUrl"),
            });
        }
        match self.app.webhook_policy.check_url(url) {
            Ok(_) => Ok(Some(url)),
            Err(refusal) => Err(ApiError::InvalidCallback(refusal)),
        }
    }

    async fn admit(&self, work: Work, asked: Asked<'_>) -> Result<ApiResponse, ApiError> {
        let admission = &self.app.admission;
        let idempotency = idempotency_key(self.request, &work, asked)?;
        // Held until the answer is durable: a repeat arriving meanwhile is told so (409).
        let _in_flight = idempotency.as_ref().map(|k| admission.enter(self.account(), k)).transpose()?;
        if let Some(k) = &idempotency {
            if let Some(replay) = admission.kept(self.account(), k, self.caller.now_ms).await? {
                return self.decided(Decision::Replayed(replay), asked.callback_url).await;
            }
        }
        let request = self.admit_request(&work, asked, idempotency.as_ref());
        let decided = admission.decide(&request).await;
        let decision = self.durable(decided).await?;
        self.count(&work, &decision);
        self.decided(decision, asked.callback_url).await
    }

    fn admit_request<'a>(
        &'a self,
        work: &'a Work,
        asked: Asked<'a>,
        idempotency: Option<&'a IdempotencyKey>,
    ) -> AdmitRequest<'a> {
        AdmitRequest {
            key: &self.caller.key,
            work,
            refresh: asked.refresh,
            callback_url: asked.callback_url,
            now_ms: self.caller.now_ms,
            idempotency,
            monitor: None,
        }
    }

    /// With `--sync-writes`, an answer that names a job (or says a full queue undid one) —
    /// `wrote` — waits until the writes made so far (the job, its kept answer) are on disk: one
    /// wait however many there were, on the group commit's thread, not this one. `Err` when
    /// they could not be made durable (an `fsync` failed, or the wait passed its bound).
    async fn covered(&self, wrote: bool) -> Result<(), store::StoreError> {
        match &self.app.group_commit {
            Some(group) if wrote => group.covered().await,
            _ => Ok(()),
        }
    }

    /// A decision once its writes are durable. When they could not be made so, a new job is
    /// withdrawn and the request refused (503 or 500, nothing recorded, nothing charged) —
    /// unless a compute thread started it already: then the admission stands (202), recorded
    /// and charged once (`Admission::after_failed_sync`); an answer that named an existing job
    /// charged nothing and stands.
    async fn durable(&self, decided: Result<Decision, AdmitError>) -> Result<Decision, ApiError> {
        let Err(failure) = self.covered(matches!(decided, Ok(_) | Err(AdmitError::Busy))).await else {
            return Ok(decided?);
        };
        let Ok(decision) = decided else { return Err(ApiError::from_store(&failure)) };
        match self.app.admission.after_failed_sync(decision, &self.caller.key) {
            Ok(Some(stands)) => Ok(stands),
            Ok(None) => {
                self.undo_durable().await;
                Err(ApiError::from_store(&failure))
            }
            Err(e) => Err(ApiError::from_store(&e)),
        }
    }

    /// Waits (bounded, like any answer) for the undo of a withdrawn job to reach the disk, so a
    /// crash right after the refusal cannot bring the job back; when that wait fails too, the
    /// refusal is sent anyway — the job is gone from memory and the log holds its undo.
    async fn undo_durable(&self) {
        if let Err(e) = self.covered(true).await {
            tracing::warn!(error = %e, "the undo of a withdrawn admission is logged but not yet fsynced");
        }
    }

    /// Counts a request answered by an existing job.
    fn count(&self, work: &Work, decision: &Decision) {
        if matches!(decision, Decision::Live(..) | Decision::Fresh(_)) {
            let label = match work {
                Work::Analysis { .. } => JobLabel::Analysis,
                Work::Comparison { .. } => JobLabel::Comparison,
            };
            self.app.metrics.deduplicated(label);
        }
    }

    /// The answer of a decision: 202/200 naming the job, with the request's `callbackUrl`
    /// attached to it (`callback_of`). A kept answer sent again (`Replayed`) has the same
    /// status and body, marked `Idempotent-Replayed` — and attaches its URL too: an attach is
    /// idempotent, and the first request's may have been refused after its answer was kept.
    async fn decided(&self, decision: Decision, callback_url: Option<&str>) -> Result<ApiResponse, ApiError> {
        let callback = self.callback_of(&decision, callback_url).await?;
        let answer = Answer::of(&decision);
        let response = self.accepted(answer.job, answer.deduplicated, callback.as_ref())?;
        Ok(if answer.replayed { response.with_header("idempotent-replayed", "true") } else { response })
    }

    /// What the request's `callbackUrl` (if any) came to on the job `decision` names, once
    /// durable like the decision itself (`--sync-writes`). An attach the store could not make,
    /// or make durable, refuses the request (503 or 500): no delivery is promised that may not
    /// happen. Nothing is charged either way. An attach written but not made durable is not
    /// undone: it may still deliver, and the retry with the same URL is `attached: true`.
    async fn callback_of(&self, decision: &Decision, url: Option<&str>) -> Result<Option<CallbackAnswer>, ApiError> {
        let Some(url) = url else { return Ok(None) };
        let (account, key_id) = (self.caller.key.account().as_str(), self.caller.key.id().as_str());
        let answer = self.app.admission.callback_of(decision, account, key_id, url, self.caller.now_ms).await?;
        self.covered(answer.wrote).await.map_err(|e| ApiError::from_store(&e))?;
        Ok(Some(answer))
    }

    /// 202 for queued or running work, 200 for a reused READY result; `Location` either way.
    fn accepted(
        &self,
        job: Snapshot<'_>,
        deduplicated: bool,
        callback: Option<&CallbackAnswer>,
    ) -> Result<ApiResponse, ApiError> {
        let poll_url = self.poll_url(job.record);
        let status = job.state.as_str();
        let data = AcceptedData {
            subject: wire_subject(job.record),
            status,
            poll_url: &poll_url,
            created_at: Rfc3339Ms::at(job.record.created_at_ms),
            deduplicated,
            callback: callback.map(accepted_callback),
        };
        let body = json_bytes(&AcceptedBody { data, status, poll_url: &poll_url })?;
        let finished = job.state.is_finished();
        let response = ApiResponse::json(if finished { 200 } else { 202 }, body).with_header("location", poll_url);
        Ok(if finished { response } else { response.with_header("retry-after", POLL_RETRY_AFTER_S) })
    }

    pub async fn poll_analysis(&self, id: &str) -> Result<ApiResponse, ApiError> {
        if !id.starts_with(ANALYSIS_ID_PREFIX) || id.len() > crate::config::STORE_ID_BYTES_MAX {
            return Err(ApiError::NotFound);
        }
        // `wait` is checked before the id is looked up (an unknown id with a bad `wait` is 400).
        let wait_s = parse_wait(self.request.query.as_deref())?;
        if !is_id_shaped(id, ANALYSIS_ID_PREFIX) {
            return Err(ApiError::NotFound);
        }
        let live = self.app.index.get(id).filter(|live| live.record.account == self.account());
        if let Some(live) = live {
            if !self.wait(&live, wait_s).await {
                return self.poll_body(Snapshot::of_live(&live));
            }
        }
        if let Some(etcd) = self.app.admission.cluster() {
            return self.poll_analysis_in_cluster(etcd, id, wait_s).await;
        }
        let job = self.app.admission.finished().job(&*self.app.store, id).map_err(|e| ApiError::from_store(&e))?;
        let job =
            job.filter(|j| j.record.account == self.account() && matches!(j.record.kind, JobKind::Analysis { .. }));
        self.stored_poll_body(&*job.ok_or(ApiError::NotFound)?).await
    }

    pub async fn poll_comparison(&self, pair_id: &str) -> Result<ApiResponse, ApiError> {
        if !pair_id.starts_with(PAIR_ID_PREFIX) || pair_id.len() > crate::config::STORE_ID_BYTES_MAX {
            return Err(ApiError::NotFound);
        }
        // `wait` is checked before the id is looked up (an unknown id with a bad `wait` is 400).
        let wait_s = parse_wait(self.request.query.as_deref())?;
        if !is_id_shaped(pair_id, PAIR_ID_PREFIX) {
            return Err(ApiError::NotFound);
        }
        let subject = store::Subject::Pair(pair_id);
        if let Some(live) = self.app.index.live_for(self.account(), subject) {
            if !self.wait(&live, wait_s).await {
                return self.poll_body(Snapshot::of_live(&live));
            }
        }
        if let Some(etcd) = self.app.admission.cluster() {
            return self.poll_comparison_in_cluster(etcd, subject, wait_s).await;
        }
        let recovering = self.app.admission.is_recovering();
        let job = self.app.admission.finished().latest(&*self.app.store, self.account(), subject, recovering);
        self.stored_poll_body(&*job.map_err(|e| ApiError::from_store(&e))?.ok_or(ApiError::NotFound)?).await
    }

    /// Holds a poll of a live job until it finishes or `wait` seconds pass. Returns true when
    /// the job finished (read the store), false to answer from the live state.
    async fn wait(&self, live: &Arc<LiveJob>, wait_s: Option<u32>) -> bool {
        let Some(wait_s) = wait_s.filter(|s| *s > 0) else { return live.state().is_none() };
        let Some(_slot) = WaiterSlot::take(&self.app.waiters, self.app.waiters_max) else {
            return live.state().is_none();
        };
        // `_slot` is given back when this future ends or is dropped (a client that hangs up
        // mid-wait drops it), so a disconnect never leaks a waiter slot.
        live.wait_finished(Duration::from_secs(u64::from(wait_s))).await;
        live.state().is_none()
    }

    /// The poll answer of a job read from memory or the store: its document, made once and
    /// kept with the job (a finished job's document never changes), and its webhook's state as
    /// it is now.
    async fn stored_poll_body(&self, job: &StoredJob) -> Result<ApiResponse, ApiError> {
        if !job.record.state.is_finished() {
            return self.poll_body(Snapshot::of_record(&job.record));
        }
        let body = match job.poll_body.get() {
            Some(body) => body.clone(),
            None => {
                let made = finished_document(&job.record, job.payload.as_deref())?;
                job.poll_body.get_or_init(|| Bytes::from(made)).clone()
            }
        };
        Ok(match self.callback_now(job).await? {
            Some(callback) => ApiResponse::json(200, with_callback(body.to_vec(), &callback)?),
            None => ApiResponse::json(200, body),
        })
    }

    /// A finished job's webhook state as it is now: the kept record's, unless it still says
    /// PENDING there — the delivery thread (this node's or another's) moves it in the store, so
    /// it is read again; once it has settled, the kept record is replaced by the store's.
    async fn callback_now(&self, job: &StoredJob) -> Result<Option<Callback>, ApiError> {
        let Some(kept) = &job.record.callback else { return Ok(None) };
        if kept.status != CallbackStatus::Pending {
            return Ok(Some(kept.clone()));
        }
        let id = job.record.id.clone();
        let fresh = match self.app.admission.cluster() {
            Some(etcd) => etcd.get_job_async(id).await,
            None => self.app.store.get_job(&id),
        };
        let fresh = fresh.map_err(|e| ApiError::from_store(&e))?;
        let callback = fresh.as_ref().and_then(|r| r.callback.clone()).unwrap_or_else(|| kept.clone());
        if let Some(fresh) = fresh.filter(|_| callback.status != CallbackStatus::Pending) {
            self.app.admission.finished().keep_finished(StoredJob::new(fresh, job.payload.clone()));
        }
        Ok(Some(callback))
    }

    /// The poll answer of a live job (`Retry-After` says when to ask again).
    fn poll_body(&self, job: Snapshot<'_>) -> Result<ApiResponse, ApiError> {
        debug_assert!(job.state != JobState::Ready, "a READY answer needs its payload (stored_poll_body)");
        let finished = job.state.is_finished();
        let callback = job.callback;
        let mut body = poll_document(job)?;
        if let Some(callback) = callback {
            body = with_callback(body, callback)?;
        }
        let response = ApiResponse::json(200, body);
        Ok(if finished { response } else { response.with_header("retry-after", POLL_RETRY_AFTER_S) })
    }

    fn rate_info(&self, limited_requests: Option<u64>) -> RateLimitInfo {
        let key = &self.caller.key;
        let limit = key.rate.limit();
        RateLimitInfo {
            rate_per_second: limit.rate_per_second(),
            burst: limit.burst(),
            remaining: key.rate.peek(self.caller.now_ns).remaining_tokens,
            limited_requests,
        }
    }

    pub async fn status(&self) -> Result<ApiResponse, ApiError> {
        self.refresh_quota_from_cluster().await?;
        let key = &self.caller.key;
        let record = key.record();
        let quota = key.quota.view(self.caller.now_ms);
        let data = StatusData {
            key: KeyInfo {
                id: record.id.as_str(),
                name: &record.name,
                account: record.account.as_str(),
                prefix: &record.prefix,
                status: key.state_at(self.caller.now_ms).as_str(),
                created_at: Rfc3339Ms::at(record.created_at_ms),
                expires_at: record.expires_at_ms.map(Rfc3339Ms::at),
            },
            scopes: scope_grants(key.scopes()),
            rate_limit: self.rate_info(None),
            quota: StatusQuota {
                limit: quota.limit,
                used: quota.used,
                remaining: quota.remaining,
                period: quota.period.as_str(),
                resets_at: Rfc3339Ms::at(quota.period_end_ms),
            },
            service: ServiceInfo { status: self.app.service_status(), engine_versions: engine_versions() },
        };
        Ok(ApiResponse::json(200, json_bytes(&DataBody { data })?))
    }

    pub async fn usage(&self) -> Result<ApiResponse, ApiError> {
        self.refresh_quota_from_cluster().await?;
        let key = &self.caller.key;
        let quota = key.quota.view(self.caller.now_ms);
        let data = UsageData {
            key_id: key.id().as_str(),
            period: UsagePeriod {
                kind: quota.period.as_str(),
                start: Rfc3339Ms::at(quota.period_start_ms),
                end: Rfc3339Ms::at(quota.period_end_ms),
            },
            quota: UsageQuota {
                limit: quota.limit,
                used: quota.used,
                reserved: quota.reserved,
                remaining: quota.remaining,
                resets_at: Rfc3339Ms::at(quota.period_end_ms),
            },
            by_operation: ByOperationBody {
                wallet_analysis: quota.by_operation.wallet_analysis,
                comparison: quota.by_operation.comparison,
                transaction_scan: quota.by_operation.transaction_scan,
            },
            refunded: quota.refunded,
            rate_limit: self.rate_info(Some(key.rate.limited_requests())),
        };
        Ok(ApiResponse::json(200, json_bytes(&DataBody { data })?))
    }
}

/// `{"data":{…}}` of a poll, without the payload or the webhook's state.
fn poll_document(job: Snapshot<'_>) -> Result<Vec<u8>, ApiError> {
    let record = job.record;
    let error = record.error.as_ref().filter(|_| job.state == JobState::Failed);
    let data = PollData {
        subject: wire_subject(record),
        status: job.state.as_str(),
        created_at: Rfc3339Ms::at(record.created_at_ms),
        started_at: job.started_at_ms.map(Rfc3339Ms::at),
        completed_at: record.completed_at_ms.filter(|_| job.state.is_finished()).map(Rfc3339Ms::at),
        error: error.map(|e| JobErrorBody { code: &e.code, message: &e.message }),
    };
    json_bytes(&DataBody { data })
}

/// The poll document of a finished job with its payload (READY), without `callback`: what a
/// poll answers before the webhook's state, and the body of the webhook itself.
pub fn finished_document(record: &JobRecord, payload: Option<&[u8]>) -> Result<Vec<u8>, ApiError> {
    let body = poll_document(Snapshot::of_record(record))?;
    if record.state != JobState::Ready {
        return Ok(body);
    }
    // A READY job always carries its payload (`StoredJob`'s invariant).
    let payload = payload.ok_or_else(|| ApiError::internal(&"READY job without payload"))?;
    let body = splice(body, payload_field(record), payload);
    // Its signature, as stored when it completed (none for jobs completed before signing; one
    // stored before signatures were typed is left out: no verifier accepts it).
    Ok(match &record.signature {
        Some(signature) if signature.report_type.is_some() => splice(body, "signature", &json_bytes(signature)?),
        _ => body,
    })
}

/// The body of a finished job's webhook: a monitor's event for a re-analysis that caused one
/// (its webhook is the monitor's), else the document a poll answers (`finished_document`) —
/// also for a poll-only monitor's event, whose job's webhook, if any, another request attached.
pub fn webhook_document(record: &JobRecord, payload: Option<&[u8]>) -> Result<Vec<u8>, ApiError> {
    if record.event_delivery().is_some() {
        return monitors::event_webhook(record, payload);
    }
    finished_document(record, payload)
}

/// A poll document with the job's webhook state as its last `data` member.
fn with_callback(body: Vec<u8>, callback: &Callback) -> Result<Vec<u8>, ApiError> {
    Ok(splice(body, "callback", &json_bytes(&callback_body(callback))?))
}

/// A job's webhook as polls and answers show it.
fn callback_body(callback: &Callback) -> CallbackBody<'_> {
    CallbackBody {
        url: &callback.url,
        status: callback.status.as_str(),
        attempts: callback.attempts,
        last_error: callback.last_error.as_deref(),
    }
}

/// The `callback` of a POST's answer (or a batch item): the job's webhook and whether it is
/// the request's URL.
fn accepted_callback(answer: &CallbackAnswer) -> AcceptedCallback<'_> {
    AcceptedCallback {
        state: callback_body(&answer.callback),
        attached: answer.attached,
        reason: (!answer.attached).then_some(CALLBACK_TAKEN_REASON),
    }
}

/// The member of `data` that holds a READY job's payload.
fn payload_field(record: &JobRecord) -> &'static str {
    match record.kind {
        JobKind::Analysis { .. } => "xray",
        JobKind::Comparison { .. } => "comparison",
    }
}

/// One of the `waiters_max` long-poll slots, held while a poll waits; given back on drop.
struct WaiterSlot<'a>(&'a AtomicUsize);

impl<'a> WaiterSlot<'a> {
    /// A slot, or `None` when all `max` are taken (the poll then answers at once).
    fn take(waiters: &'a AtomicUsize, max: usize) -> Option<WaiterSlot<'a>> {
        if waiters.fetch_add(1, Ordering::AcqRel) >= max {
            waiters.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(WaiterSlot(waiters))
    }
}

impl Drop for WaiterSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
