//! The records the store keeps (keys, jobs) and the small types of its API, with their limits.
//!
//! Owns: `JobRecord` and their parts, `Completion`, `Subject`, `LiveState`,
//! `JobCursor`, `JobPage`, and the validation of every length before a write. Called from any
//! thread that calls the store.
//!
//! Invariant: a record that passed `validate` fits every key encoding (each id ≤ 255 bytes, in
//! fact ≤ `STORE_ID_BYTES_MAX`), so encoding a key can never fail or truncate.
//! Invariant: the serde names are the on-disk format of version 1; renaming a field is a
//! schema change.

use serde::{Deserialize, Serialize};

use crate::auth::record::KeyRecord;
use crate::limits::quota::{Operation, Reservation};

use super::{
    StoreError, StoreResult, ENGINE_VERSION_BYTES_MAX, ERROR_CODE_BYTES_MAX, ERROR_MESSAGE_BYTES_MAX, RESULT_BYTES_MAX,
    STORE_ID_BYTES_MAX,
};

/// What a job computes. The subject (wallet or pair id) is what deduplication is keyed on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum JobKind {
    Analysis { wallet: String },
    Comparison { wallet_a: String, wallet_b: String, pair_id: String },
}

impl JobKind {
    /// What a unit of quota spent on this job is counted as (`byOperation`).
    pub fn operation(&self) -> Operation {
        match self {
            JobKind::Analysis { .. } => Operation::WalletAnalysis,
            JobKind::Comparison { .. } => Operation::Comparison,
        }
    }

    /// The deduplication subject of this job.
    pub fn subject(&self) -> Subject<'_> {
        match self {
            JobKind::Analysis { wallet } => Subject::Wallet(wallet),
            JobKind::Comparison { pair_id, .. } => Subject::Pair(pair_id),
        }
    }
}

/// What a job is about, as the subject index sees it: one wallet, or one unordered pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject<'a> {
    Wallet(&'a str),
    Pair(&'a str),
}

impl<'a> Subject<'a> {
    pub(crate) fn kind_byte(self) -> u8 {
        match self {
            Subject::Wallet(_) => 1,
            Subject::Pair(_) => 2,
        }
    }

    pub(crate) fn text(self) -> &'a str {
        match self {
            Subject::Wallet(s) | Subject::Pair(s) => s,
        }
    }
}

/// Lifecycle state of a job (the wire's `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    Queued,
    Running,
    Ready,
    Failed,
}

impl JobState {
    pub(crate) fn byte(self) -> u8 {
        match self {
            JobState::Queued => 1,
            JobState::Running => 2,
            JobState::Ready => 3,
            JobState::Failed => 4,
        }
    }

    /// The wire name (`QUEUED`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "QUEUED",
            JobState::Running => "RUNNING",
            JobState::Ready => "READY",
            JobState::Failed => "FAILED",
        }
    }

    /// True for `READY` and `FAILED`.
    pub fn is_finished(self) -> bool {
        matches!(self, JobState::Ready | JobState::Failed)
    }
}

/// The states recovery scans: only these are in the live-state index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveState {
    Queued,
    Running,
}

impl LiveState {
    pub(crate) fn state(self) -> JobState {
        match self {
            LiveState::Queued => JobState::Queued,
            LiveState::Running => JobState::Running,
        }
    }
}

/// Why a job failed: a contract error code and a human message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobError {
    pub code: String,
    pub message: String,
}

/// One analysis or comparison job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRecord {
    /// Unique job id (`an_…` for analyses; a server-chosen unique id for comparisons).
    pub id: String,
    pub kind: JobKind,
    /// The account that owns the job (reads by other accounts are `404`).
    pub account: String,
    /// The key that created the job; its usage record carries the reservation.
    pub key_id: String,
    pub state: JobState,
    pub created_at_ms: u64,
    pub started_at_ms: Option<u64>,
    pub completed_at_ms: Option<u64>,
    pub refresh: bool,
    /// Whether the job holds one quota unit (reserved while live, committed or refunded after).
    pub charged: bool,
    /// Start of the quota period the unit was reserved in.
    pub quota_period_start_ms: u64,
    pub error: Option<JobError>,
    /// Engine version the job was admitted under; replaced by the producing engine's version
    /// when it completes `Ready`.
    pub engine_version: String,
    /// Times a compute thread started the job (`Store::mark_running`). A job still live after
    /// `config::JOB_STARTS_MAX` starts took its process down each time (a kill, an abort) and
    /// is not started again. Absent in records of older versions: none counted.
    #[serde(default)]
    pub starts: u32,
    /// SHA-256 of the `Idempotency-Key` whose answer was written with this job, if any: undoing
    /// the admission (`Store::cancel_admission`) deletes that answer with the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_digest: Option<[u8; 32]>,
    /// The webhook of the job (`callbackUrl`) and how its delivery went. While it is `Pending`
    /// on a finished job, the store's callback index names the job at `next_attempt_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback: Option<Callback>,
    /// The monitor whose check admitted this re-analysis (`monitors`), with the thresholds and
    /// callback it had then, and — once the job completed — the event it caused, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<MonitorLink>,
    /// The signature of a READY job's report (`signing`), made once when it completed and
    /// served with every poll and webhook of it. Absent in FAILED jobs and in jobs completed
    /// before reports were signed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<ReportSignature>,
}

/// A report's detached signature, stored as the wire's `data.signature` member: the key that
/// made it (`keyId`), the algorithm (`EdDSA`, Ed25519), the canonical form of the signed bytes
/// (`JCS`, RFC 8785), the report's type (`type`, signed with it), the members of `data` it
/// covers, and the signature (base64url, unpadded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportSignature {
    pub key_id: String,
    pub alg: String,
    pub canon: String,
    /// `xray.analysis.v1`, … (`signing::ReportType`). `None` only in signatures stored before
    /// reports were typed, which no verifier accepts: they are served unsigned.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub report_type: Option<String>,
    pub covers: Vec<String>,
    pub value: String,
    /// A batched signature's leaf salt and path (`signing::batch`): `value` then signs the
    /// batch's root, not the report's message. Only scans are batched; `None` in every stored one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<Box<SignatureBatch>>,
}

/// Where a report's message is in a batch signature's tree (`signing::batch`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureBatch {
    /// 16 random bytes, base64url unpadded, hashed before the message into its leaf.
    pub salt: String,
    /// The siblings from the leaf up to the signed root.
    pub path: Vec<MerkleStep>,
}

/// One sibling of a batch path (64 lowercase hex digits) and its side: `{"left": …}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MerkleStep {
    Left(String),
    Right(String),
}

impl ReportSignature {
    /// Bounded like every stored string (a signature is ~90 bytes; `covers` names ≤ 16 members).
    pub(crate) fn validate(&self) -> StoreResult<()> {
        check_id("signature key id", &self.key_id)?;
        check_id("signature alg", &self.alg)?;
        check_id("signature canon", &self.canon)?;
        if let Some(report_type) = &self.report_type {
            check_id("signature type", report_type)?;
        }
        // 86 characters for Ed25519's 64 bytes; room for a longer algorithm.
        check_len("signature value", &self.value, 4 * STORE_ID_BYTES_MAX)?;
        if self.covers.len() > 16 {
            return Err(StoreError::Invalid("a signature covering more than 16 members".to_owned()));
        }
        if self.batch.as_ref().is_some_and(|b| b.path.len() > 16 || b.salt.len() > STORE_ID_BYTES_MAX) {
            return Err(StoreError::Invalid(
                "a batch signature's path past 16 steps, or salt past its bound".to_owned(),
            ));
        }
        self.covers.iter().try_for_each(|c| check_id("signature member", c))
    }
}

/// What a monitor's re-analysis carries from the check that admitted it. Thresholds and the
/// callback are copied at admission, so a later `PATCH` never races a completion.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MonitorLink {
    pub monitor_id: String,
    /// Where the event is delivered; `None`: the monitor is poll-only — its events are read
    /// from its events page and never delivered (no webhook is held or sent for them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// The lowest severity of a new signal that makes an event (`info` … `critical`).
    pub min_severity: String,
    /// A score drop of at least this many points makes an event; `None`: score drops alone
    /// make none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score_drop: Option<u8>,
    /// The monitor's last READY analysis of the wallet, what this re-analysis' `changes` are
    /// against (not the account's newest, which a request of the account's own may have made
    /// in between and so hidden the change from the monitor). `None` for a baseline: the first
    /// analysis of a watch makes no event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_analysis_id: Option<String>,
    /// The event the completed re-analysis caused: written in the completion's batch (with its
    /// index entry and its webhook in the outbox), never afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<EventRecord>,
}

/// A monitor's event: the re-analysis `job` of a watched wallet whose `changes` crossed the
/// monitor's thresholds. Its id is derived from the job's, so one job makes at most one event
/// and every delivery of it carries the same id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRecord {
    pub id: String,
    pub created_at_ms: u64,
    /// The event's signature (`signing`, type `xray.monitor_event.v1`), made once with the
    /// event and served as stored by every page and webhook of it. Absent in events made
    /// before events were signed (served unsigned). Boxed: most of a completion's size
    /// otherwise, and absent from every FAILED one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Box<ReportSignature>>,
}

impl EventRecord {
    /// The event of the analysis job `job_id` (`an_…` → `evt_…`), not signed yet.
    pub fn of_job(job_id: &str, created_at_ms: u64) -> EventRecord {
        let id = format!("evt_{}", job_id.strip_prefix("an_").unwrap_or(job_id));
        EventRecord { id, created_at_ms, signature: None }
    }

    /// The job id an event id names (`evt_…` → `an_…`); `None` for text that is no event id.
    pub fn job_id_of(event_id: &str) -> Option<String> {
        let rest = event_id.strip_prefix("evt_")?;
        (!rest.is_empty() && rest.bytes().all(|b| b.is_ascii_alphanumeric())).then(|| format!("an_{rest}"))
    }
}

/// Where a finished job's document is delivered (its webhook) and how that went so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Callback {
    pub url: String,
    pub status: CallbackStatus,
    /// Delivery attempts made (a connection refused counts).
    pub attempts: u32,
    /// Why the last attempt failed, for the poll answer: never a secret or a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the next attempt is due (unix ms), while `Pending`.
    pub next_attempt_ms: u64,
    /// When a later request attached this webhook to the existing job (`Store::attach_callback`):
    /// absent for the webhook of the request that made the job. A webhook attached to a job
    /// already finished enters the outbox then, not at the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_at_ms: Option<u64>,
    /// The key of the request that attached it (`attached_at_ms`); absent for the request that
    /// made the job: its key is the job's. Delivery checks that this key (or its successor)
    /// may still read the document (`webhooks::delivery`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attached_by: Option<String>,
}

/// A webhook's delivery state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CallbackStatus {
    /// Not delivered yet: the job is live, or an attempt is due at `next_attempt_ms`.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Given up: the attempts or the time allowed ran out, or the receiver can never be reached
    /// (a refused address).
    Failed,
}

impl CallbackStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CallbackStatus::Pending => "PENDING",
            CallbackStatus::Delivered => "DELIVERED",
            CallbackStatus::Failed => "FAILED",
        }
    }
}

impl Callback {
    /// A callback not attempted yet.
    pub fn pending(url: String) -> Callback {
        Callback {
            url,
            status: CallbackStatus::Pending,
            attempts: 0,
            last_error: None,
            next_attempt_ms: 0,
            attached_at_ms: None,
            attached_by: None,
        }
    }

    fn validate(&self) -> StoreResult<()> {
        check_len("callback url", &self.url, crate::config::CALLBACK_URL_BYTES_MAX)?;
        if self.last_error.as_ref().is_some_and(|e| e.len() > ERROR_MESSAGE_BYTES_MAX) {
            return Err(StoreError::Invalid(format!("callback error longer than {ERROR_MESSAGE_BYTES_MAX} bytes")));
        }
        if let Some(key_id) = &self.attached_by {
            check_id("callback key id", key_id)?;
        }
        Ok(())
    }
}

/// What attaching a request's `callbackUrl` to an existing job came to
/// ([`Store::attach_callback`](super::Store::attach_callback)), with the job as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attached {
    /// The job had no webhook: the URL is now its callback, `PENDING` — in the outbox, due at
    /// once, when the job is finished; else it enters the outbox with the completion.
    New(JobRecord),
    /// The job's webhook already is this URL (this request's or an earlier one's): unchanged.
    Same(JobRecord),
    /// The job's webhook is another URL, named by an earlier request of the same account: kept,
    /// never replaced (that request was promised its delivery).
    Other(JobRecord),
}

impl Attached {
    /// The job as it is after the attach.
    pub fn job(&self) -> &JobRecord {
        match self {
            Attached::New(job) | Attached::Same(job) | Attached::Other(job) => job,
        }
    }
}

/// The job a callback is attached to: the one read, if it is `account`'s; else the refusal
/// (gone — purged, or its admission undone — or another account's, answered alike).
pub(crate) fn attachable(id: &str, account: &str, job: Option<JobRecord>) -> StoreResult<JobRecord> {
    match job {
        Some(job) if job.account == account => Ok(job),
        _ => Err(StoreError::State { id: id.to_owned(), op: "attach a callback", state: "absent".into() }),
    }
}

/// The refusal of a callback record whose callback is not the one the caller read.
pub(crate) fn callback_moved(id: &str, now: Option<&Callback>) -> StoreError {
    let state = match now {
        None => "without a callback".to_owned(),
        Some(c) => format!("callback {} after {} attempts (moved since read)", c.status.as_str(), c.attempts),
    };
    StoreError::State { id: id.to_owned(), op: "record a callback", state }
}

/// An account's webhook signing secret. Stored as is — a signature needs it — and shown only
/// once, when it is made; never logged.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookSecret {
    pub account: String,
    pub secret: String,
    pub created_at_ms: u64,
}

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSecret")
            .field("account", &self.account)
            .field("created_at_ms", &self.created_at_ms)
            .finish()
    }
}

impl WebhookSecret {
    pub(crate) fn validate(&self) -> StoreResult<()> {
        check_id("account", &self.account)?;
        check_len("webhook secret", &self.secret, crate::config::WEBHOOK_SECRET_CHARS_MAX)
    }
}

impl JobRecord {
    /// When the job's webhook entered (or enters) the outbox: its completion, or its attach
    /// when it was attached to the finished job later. The outbox by account is ordered by it
    /// (`callbacks_by_account`), and the delivery's retry window starts then.
    pub fn outbox_entered_ms(&self) -> u64 {
        let attached_ms = self.callback.as_ref().and_then(|c| c.attached_at_ms).unwrap_or(0);
        self.completed_at_ms.unwrap_or(0).max(attached_ms)
    }

    /// This job with `url` attached as its webhook at `now_ms` by key `key_id`, if it has none;
    /// a finished job's is due at once. Pure: the store writes what `Attached::New` holds.
    pub(crate) fn attach_callback(self, key_id: &str, url: &str, now_ms: u64) -> Attached {
        match &self.callback {
            Some(callback) if callback.url == url => Attached::Same(self),
            Some(_) => Attached::Other(self),
            None => {
                let due_ms = if self.state.is_finished() { now_ms } else { 0 };
                let callback = Callback {
                    attached_at_ms: Some(now_ms),
                    attached_by: Some(key_id.to_owned()),
                    next_attempt_ms: due_ms,
                    ..Callback::pending(url.into())
                };
                Attached::New(JobRecord { callback: Some(callback), ..self })
            }
        }
    }

    /// A new job's webhook and monitor link: the request's `callbackUrl`; for a monitor's
    /// re-analysis, the monitor's callback, held for the event its completion may make — so a
    /// request that joins the live job cannot take the slot (its URL is `Attached::Other`:
    /// never replaced, nor replacing) — and let go at completion when there is none.
    pub(crate) fn linked(mut self, callback_url: Option<&str>, monitor: Option<&MonitorLink>) -> JobRecord {
        let held = monitor.and_then(|link| link.callback_url.as_deref());
        self.callback = callback_url.or(held).map(|url| Callback::pending(url.to_owned()));
        self.monitor = monitor.cloned();
        self
    }

    /// This finished job with the `event` its completion caused (READY only): kept in its
    /// monitor link, its webhook — the monitor's callback, held since admission — pending from
    /// `completed_at_ms`. A monitor's re-analysis without an event lets the held callback go
    /// (the monitor's receiver gets events only); a job that is no monitor's is unchanged. A
    /// poll-only monitor's event (no callback in its link) holds no webhook: a callback another
    /// request attached to the job stays that request's (it delivers the analysis, not the event).
    /// Pure: both stores write what it returns, with the event's index entry, in the completion.
    pub(crate) fn with_event(mut self, event: Option<&EventRecord>) -> JobRecord {
        let Some(link) = self.monitor.as_mut() else { return self };
        let Some(url) = link.callback_url.clone() else {
            link.event = event.cloned();
            return self;
        };
        let held = |c: &Callback| c.url == url && c.attached_at_ms.is_none();
        match event {
            Some(event) => {
                link.event = Some(event.clone());
                self.callback = Some(Callback::pending(url));
            }
            None if self.callback.as_ref().is_some_and(held) => self.callback = None,
            None => {}
        }
        self
    }

    /// The event this job caused, if any.
    pub fn event(&self) -> Option<&EventRecord> {
        self.monitor.as_ref().and_then(|m| m.event.as_ref())
    }

    /// The webhook of the event this job caused: `None` when it caused none, or when its
    /// monitor was poll-only then (a callback of the job is then another request's, for the
    /// analysis).
    pub fn event_delivery(&self) -> Option<&Callback> {
        let link = self.monitor.as_ref()?;
        link.event.as_ref()?;
        link.callback_url.as_ref()?;
        self.callback.as_ref()
    }

    /// The event this job's webhook carries: its event when the monitor's webhook delivers it
    /// (`event_delivery`), else `None` (no event, or a poll-only monitor's, whose job's webhook
    /// is another request's, carrying the analysis).
    pub fn delivered_event(&self) -> Option<&EventRecord> {
        self.event_delivery().and(self.event())
    }

    /// The unit of quota this job holds, as memory counts it (for a charged job).
    pub fn unit(&self) -> Reservation {
        Reservation::recovered(self.quota_period_start_ms, self.kind.operation())
    }

    /// A new `QUEUED` job with nothing started or finished.
    #[allow(clippy::too_many_arguments)]
    pub fn queued(
        id: String,
        kind: JobKind,
        account: String,
        key_id: String,
        created_at_ms: u64,
        refresh: bool,
        charged: bool,
        quota_period_start_ms: u64,
        engine_version: String,
    ) -> JobRecord {
        JobRecord {
            id,
            kind,
            account,
            key_id,
            state: JobState::Queued,
            created_at_ms,
            started_at_ms: None,
            completed_at_ms: None,
            refresh,
            charged,
            quota_period_start_ms,
            error: None,
            engine_version,
            starts: 0,
            idempotency_digest: None,
            callback: None,
            monitor: None,
            signature: None,
        }
    }
}

/// What a work-creating request that carried an `Idempotency-Key` was answered, kept so that a
/// repeat within `config::IDEMPOTENCY_TTL_MS` gets the same answer and no new charge. The API
/// renders the answer again from the job it names, in the state it named — the job outlives the
/// answer (retention is at least a day, the window is 24 h).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IdempotentAnswer {
    pub account: String,
    /// SHA-256 of the client's key text: the text itself is never stored.
    pub key_digest: [u8; 32],
    /// SHA-256 of what the request asked (route and fields): a repeat must ask the same.
    pub fingerprint: [u8; 32],
    pub job_id: String,
    /// The job's state the answer named (`QUEUED`, `RUNNING` or `READY`).
    pub state: JobState,
    pub deduplicated: bool,
    pub created_at_ms: u64,
}

impl IdempotentAnswer {
    /// True while the answer is replayed (younger than `IDEMPOTENCY_TTL_MS` at `now_ms`); an
    /// older one is as good as absent, and a new answer of the same key replaces it.
    pub fn is_live_at(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.created_at_ms) < crate::config::IDEMPOTENCY_TTL_MS
    }

    pub(crate) fn validate(&self) -> StoreResult<()> {
        check_id("account", &self.account)?;
        check_id("job id", &self.job_id)
    }

    /// Checks an answer written with `job`'s admission: it names the job, and the job names it.
    pub(crate) fn validate_with(&self, job: &JobRecord) -> StoreResult<()> {
        self.validate()?;
        if self.job_id != job.id || self.account != job.account || job.idempotency_digest != Some(self.key_digest) {
            return Err(StoreError::Invalid(format!("the answer admitted with job {} does not name it", job.id)));
        }
        Ok(())
    }
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The payload JSON exactly as the API serves it, and the engine version that made it;
    /// for a monitor's re-analysis whose changes crossed its thresholds, the event (the store
    /// writes it into the job's `MonitorLink`, indexes it and puts its webhook in the outbox,
    /// all in the completion's batch).
    /// `signature`: the report's (`signing`), stored into the record's `signature`.
    Ready {
        payload_json: Vec<u8>,
        engine_version: String,
        event: Option<EventRecord>,
        signature: Option<ReportSignature>,
    },
    /// A contract error code (`ACCOUNT_NOT_ELIGIBLE`, `UPSTREAM_UNAVAILABLE`, …) and message.
    Failed { code: String, message: String },
}

/// Position in a live-state scan: the last job returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobCursor {
    pub created_at_ms: u64,
    pub id: String,
}

/// One page of a live-state scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobPage {
    pub jobs: Vec<JobRecord>,
    /// Where to continue; `None` when the scan reached its end.
    pub next: Option<JobCursor>,
}

fn check_len(what: &str, value: &str, max: usize) -> StoreResult<()> {
    if value.is_empty() || value.len() > max {
        return Err(StoreError::Invalid(format!("{what} must be 1..={max} bytes, got {}", value.len())));
    }
    Ok(())
}

/// Checks an id-like field (ids, accounts, wallets, pair ids).
pub(crate) fn check_id(what: &str, value: &str) -> StoreResult<()> {
    check_len(what, value, STORE_ID_BYTES_MAX)
}

/// A key record is the auth module's `KeyRecord`, stored as is (only its digest, never the
/// key). It validated itself when issued; the store checks only what its key layout needs.
pub(crate) fn validate_key(key: &KeyRecord) -> StoreResult<()> {
    check_id("key id", key.id.as_str())?;
    check_id("account", key.account.as_str())
}

impl JobRecord {
    pub(crate) fn validate(&self) -> StoreResult<()> {
        check_id("job id", &self.id)?;
        check_id("account", &self.account)?;
        check_id("key id", &self.key_id)?;
        check_len("engine version", &self.engine_version, ENGINE_VERSION_BYTES_MAX)?;
        match &self.kind {
            JobKind::Analysis { wallet } => check_id("wallet", wallet)?,
            JobKind::Comparison { wallet_a, wallet_b, pair_id } => {
                check_id("wallet_a", wallet_a)?;
                check_id("wallet_b", wallet_b)?;
                check_id("pair id", pair_id)?;
            }
        }
        if let Some(e) = &self.error {
            JobError::validate(&e.code, &e.message)?;
        }
        if let Some(callback) = &self.callback {
            callback.validate()?;
        }
        Ok(())
    }
}

impl JobError {
    fn validate(code: &str, message: &str) -> StoreResult<()> {
        check_len("error code", code, ERROR_CODE_BYTES_MAX)?;
        if message.len() > ERROR_MESSAGE_BYTES_MAX {
            return Err(StoreError::Invalid(format!("error message longer than {ERROR_MESSAGE_BYTES_MAX} bytes")));
        }
        Ok(())
    }
}

impl Completion {
    pub(crate) fn validate(&self) -> StoreResult<()> {
        match self {
            Completion::Ready { payload_json, engine_version, event, signature } => {
                check_len("engine version", engine_version, ENGINE_VERSION_BYTES_MAX)?;
                if let Some(signature) = signature {
                    signature.validate()?;
                }
                if let Some(event) = event {
                    check_id("event id", &event.id)?;
                    event.signature.as_deref().map_or(Ok(()), ReportSignature::validate)?;
                }
                if payload_json.len() > RESULT_BYTES_MAX {
                    return Err(StoreError::Invalid(format!("payload larger than {RESULT_BYTES_MAX} bytes")));
                }
                Ok(())
            }
            Completion::Failed { code, message } => JobError::validate(code, message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> JobRecord {
        JobRecord::queued(
            "an_1".into(),
            JobKind::Analysis { wallet: "W".into() },
            "acc".into(),
            "key_1".into(),
            5,
            false,
            true,
            0,
            "1.0.0".into(),
        )
    }

    #[test]
    fn limits_are_checked() {
        assert!(job().validate().is_ok());
        let mut j = job();
        j.id = "x".repeat(STORE_ID_BYTES_MAX + 1);
        assert!(matches!(j.validate(), Err(StoreError::Invalid(_))));
        let mut j = job();
        j.account.clear();
        assert!(j.validate().is_err());
        let big = Completion::Ready {
            payload_json: vec![b' '; RESULT_BYTES_MAX + 1],
            engine_version: "1".into(),
            event: None,
            signature: None,
        };
        assert!(big.validate().is_err());
        let long = Completion::Failed { code: "X".into(), message: "m".repeat(ERROR_MESSAGE_BYTES_MAX + 1) };
        assert!(long.validate().is_err());
    }

    fn monitored(callback_url: Option<&str>) -> JobRecord {
        let link = MonitorLink {
            monitor_id: "mon_1".into(),
            callback_url: callback_url.map(str::to_owned),
            min_severity: "high".into(),
            score_drop: None,
            previous_analysis_id: Some("an_0".into()),
            event: None,
        };
        job().linked(None, Some(&link))
    }

    #[test]
    fn a_monitors_event_holds_its_webhook_a_poll_only_ones_none() {
        let event = EventRecord::of_job("an_1", 9);
        let delivered = monitored(Some("https://h.example/x")).with_event(Some(&event));
        assert_eq!(delivered.event_delivery().map(|c| c.url.as_str()), Some("https://h.example/x"));
        let quiet = monitored(Some("https://h.example/x")).with_event(None);
        assert!(quiet.callback.is_none() && quiet.event_delivery().is_none(), "no event: the held webhook goes");
        let polled = monitored(None);
        assert!(polled.callback.is_none(), "a poll-only monitor's re-analysis holds no webhook");
        let polled = polled.with_event(Some(&event));
        assert_eq!(polled.event().map(|e| e.id.as_str()), Some("evt_1"));
        assert!(polled.callback.is_none() && polled.event_delivery().is_none(), "never delivered");
        // Another request's webhook attached to the poll-only re-analysis stays its own (the
        // analysis' document), never the event's.
        let Attached::New(joined) = monitored(None).attach_callback("key_2", "https://other.example/y", 3) else {
            panic!("attached")
        };
        let joined = joined.with_event(Some(&event));
        assert_eq!(joined.callback.as_ref().map(|c| c.url.as_str()), Some("https://other.example/y"));
        assert!(joined.event_delivery().is_none());
        assert!(joined.delivered_event().is_none(), "its webhook is named by the job, not the event");
        assert_eq!(delivered.delivered_event().map(|e| e.id.as_str()), Some("evt_1"));
        // A record written before callbackUrl was optional reads as it was.
        let old = r#"{"monitorId":"mon_1","callbackUrl":"https://h.example/x","minSeverity":"high"}"#;
        let link: MonitorLink = serde_json::from_str(old).expect("an older link");
        assert_eq!(link.callback_url.as_deref(), Some("https://h.example/x"));
    }

    #[test]
    fn wire_names_of_states_and_kinds() {
        let text = serde_json::to_string(&job()).unwrap_or_default();
        assert!(text.contains(r#""state":"QUEUED""#), "{text}");
        assert!(text.contains(r#""kind":{"type":"analysis","wallet":"W"}"#), "{text}");
        assert_eq!(JobState::Failed.as_str(), "FAILED");
    }
}
