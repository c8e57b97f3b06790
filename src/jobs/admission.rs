//! Admission: steps 8–10 of the contract's pipeline for work-creating requests — deduplication,
//! quota reservation, the durable job record and the hand-off to the bounded work queue — and
//! the undo of each step when a later one refuses.
//!
//! Owns: `Admission` (the store, the status index, the compute pool and the freshness window),
//! `Work` (what a validated, classified request asks for) and `Decision` (what came of it),
//! plus the id formats of jobs (`an_…`, `cmp_…`) and the deterministic `pairId`. Called on
//! listener threads, one request at a time per task; never waits on the queue.
//!
//! Order, for a request without `refresh`: (1) a live job of the same account and subject in
//! the status index → that job, `deduplicated`, no charge — and, until the recovery backlog is
//! drained after a restart, the subject's newest job in the store if it is still live; (2) the
//! newest READY result of the account and subject (`finished`: memory, else the store), made by
//! this build's engines and younger than the freshness window → that result, no charge;
//! (3) refuse when the account already holds `per_account_max` live jobs (429 `TOO_MANY_JOBS`;
//! the index enforces it again, atomically, at (5)); reserve one quota unit (429 when none is
//! left);
//! (4) `Store::admit` writes the job and the reservation in one durable batch; (5) index the
//! live job; (6) `ComputePool::submit`. `refresh` skips (1) and (2). A queue already full at
//! (4) refuses before the write (nothing to undo); (6) still refuses and undoes when it filled
//! in between. A `callbackUrl` of a request answered at (1) or (2) — or by a kept answer — is
//! then attached to the job the answer names (`callback`).
//!
//! Invariant: a 202 is only returned after (4) returned, i.e. once the job is in the WAL.
//! Invariant: a refusal at (5) or (6) undoes everything before it — the index entry, the job
//! record and its reservation (`Store::cancel_admission`), the in-memory reservation — so a
//! refused request is never charged and leaves nothing recorded. When that undo itself fails,
//! the store keeps the job: then the admission stands instead (202: recorded, it will run,
//! charged once) — indexed when the index had room, its ticket `stranded` until the
//! housekeeping thread finds the queue room (`submit_stranded`) — never a 503 that says
//! nothing was recorded.
//! Invariant: (1)–(6) run under a striped lock of the account and subject (`SubjectLocks`), so
//! of equal requests racing through admission exactly one is admitted and the others are
//! deduplicated onto it. The lock is taken by POSTs only, never by polls, status or usage.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::finished::{FinishedJobs, StoredJob};
use super::index::{IndexFull, LiveJob, StatusIndex};
use crate::auth::table::KeyEntry;
use crate::config::{ADMISSION_LOCK_STRIPES, STRANDED_TICKETS_MAX};
use crate::engine::policy::Policy;
use crate::jobs::execute::JobSpec;
use crate::jobs::pool::{ComputePool, Ticket};
use crate::labels::live::LiveLabels;
use crate::limits::quota::{Operation, QuotaExhausted, ReleaseCause, Reservation};
use crate::policy::Policies;
use crate::pubkey::{is_base58_byte, Pubkey};
use crate::store::etcd::EtcdStore;
use crate::store::{JobKind, JobRecord, JobState, MonitorLink, Store, StoreError, Subject};

mod callback;
mod idempotency;
mod shared;

pub use callback::CallbackAnswer;
pub use idempotency::{IdempotencyKey, InFlightGuard, Replay};
pub use shared::{admit_once, AdmissionLink, Sent};

/// Random bytes in a job id (contract §4: 16).
pub const JOB_ID_RANDOM_BYTES: usize = 16;
/// Prefix of analysis ids (contract §4).
pub const ANALYSIS_ID_PREFIX: &str = "an_";
/// Prefix of comparison job ids (internal: the wire names a comparison by its `pairId`).
pub const COMPARISON_ID_PREFIX: &str = "cmp_";
/// Prefix of pair ids (contract §4).
pub const PAIR_ID_PREFIX: &str = "pair_";
/// Domain separator of the pair-id hash (contract §4).
const PAIR_ID_DOMAIN: &[u8] = b"xray-pair-v1";

/// `pair_` + base58 of the first 16 bytes of SHA-256("xray-pair-v1" ‖ min(A,B) ‖ max(A,B)).
pub fn pair_id(a: &Pubkey, b: &Pubkey) -> String {
    let (low, high) = if a.as_bytes() <= b.as_bytes() { (a, b) } else { (b, a) };
    let mut hasher = Sha256::new();
    hasher.update(PAIR_ID_DOMAIN);
    hasher.update(low.as_bytes());
    hasher.update(high.as_bytes());
    let digest = hasher.finalize();
    format!("{PAIR_ID_PREFIX}{}", bs58::encode(&digest[..16]).into_string())
}

/// Why admission refused a request. Nothing was recorded or charged for any of them; the API
/// maps each to its contract code (`api::error`).
#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    /// No quota unit left in the key's period (429 `QUOTA_EXHAUSTED`); `now_ms` is when asked.
    #[error("quota exhausted")]
    QuotaExhausted { refusal: QuotaExhausted, now_ms: u64 },
    /// The work queue or the status index is full (503 `SERVICE_BUSY`).
    #[error("the work queue is full")]
    Busy,
    /// The account holds `limit` live jobs already (429 `TOO_MANY_JOBS`).
    #[error("the account holds its maximum of {limit} live jobs")]
    TooManyJobs { limit: usize },
    /// The store refused or failed (503 when transient, else 500).
    #[error("store: {0}")]
    Store(#[from] StoreError),
    /// No randomness for a job id (500).
    #[error("random job id: {0}")]
    Random(String),
    /// The request's `Idempotency-Key` answered another request of the account (409).
    #[error("the idempotency key was used with another request")]
    IdempotencyKeyReused,
    /// The first request with this `Idempotency-Key` is still being admitted (409).
    #[error("a request with this idempotency key is still being admitted")]
    IdempotencyKeyInProgress,
}

/// Longest base58 text of `JOB_ID_RANDOM_BYTES` bytes (⌈16 × log 256 / log 58⌉ = 22); pair
/// ids are 16 bytes of a hash, the same length.
pub const ID_BASE58_LEN_MAX: usize = 22;

/// True when `text` could be an id this server made: `prefix` + 1–22 base58 characters. A
/// poll of anything else is answered `404` without a store read.
pub fn is_id_shaped(text: &str, prefix: &str) -> bool {
    text.strip_prefix(prefix)
        .is_some_and(|digits| (1..=ID_BASE58_LEN_MAX).contains(&digits.len()) && digits.bytes().all(is_base58_byte))
}

/// A fresh id (a job's, a monitor's): `prefix` + base58 of 16 random bytes.
pub fn job_id(prefix: &str) -> Result<String, AdmitError> {
    let mut bytes = [0u8; JOB_ID_RANDOM_BYTES];
    getrandom::fill(&mut bytes).map_err(|e| AdmitError::Random(e.to_string()))?;
    Ok(format!("{prefix}{}", bs58::encode(bytes).into_string()))
}

/// What a validated, classified work-creating request asks for.
#[derive(Debug, Clone)]
pub enum Work {
    Analysis { wallet: Pubkey },
    Comparison { wallet_a: Pubkey, wallet_b: Pubkey },
}

impl Work {
    fn operation(&self) -> Operation {
        match self {
            Work::Analysis { .. } => Operation::WalletAnalysis,
            Work::Comparison { .. } => Operation::Comparison,
        }
    }

    fn kind(&self) -> JobKind {
        match self {
            Work::Analysis { wallet } => JobKind::Analysis { wallet: wallet.to_base58() },
            Work::Comparison { wallet_a, wallet_b } => JobKind::Comparison {
                wallet_a: wallet_a.to_base58(),
                wallet_b: wallet_b.to_base58(),
                pair_id: pair_id(wallet_a, wallet_b),
            },
        }
    }

    fn id_prefix(&self) -> &'static str {
        match self {
            Work::Analysis { .. } => ANALYSIS_ID_PREFIX,
            Work::Comparison { .. } => COMPARISON_ID_PREFIX,
        }
    }
}

/// One work-creating request as admission takes it: whose, what, and how.
#[derive(Clone, Copy)]
pub struct AdmitRequest<'a> {
    pub key: &'a KeyEntry,
    pub work: &'a Work,
    /// `"refresh": true`: skip deduplication and reuse, always new (charged) work.
    pub refresh: bool,
    /// The webhook of a new job (`callbackUrl`, already checked by the webhook policy). A
    /// request answered by an existing job attaches it to that job afterwards
    /// (`Admission::callback_of`).
    pub callback_url: Option<&'a str>,
    /// When the request arrived (wall clock).
    pub now_ms: u64,
    /// The request's `Idempotency-Key`, held in flight by the caller (`Admission::enter`).
    pub idempotency: Option<&'a IdempotencyKey>,
    /// A monitor's re-analysis: the monitor, its thresholds and callback (`monitors`), kept
    /// in the job's record for its completion to decide on an event.
    pub monitor: Option<&'a MonitorLink>,
}

/// What admission decided.
#[derive(Debug)]
pub enum Decision {
    /// A new job was recorded and queued (202).
    Admitted(Box<JobRecord>),
    /// An equal job of the account is still live (202, `deduplicated: true`, no charge), in
    /// the state it was read in once: the answer and the answer kept for an idempotency key
    /// must say the same, though the job moves on (QUEUED → RUNNING) between the two.
    Live(Arc<LiveJob>, JobState),
    /// A fresh READY result was reused (200, `deduplicated: true`, no charge).
    Fresh(Arc<StoredJob>),
    /// The request repeats one whose answer was kept (`Idempotency-Key`): that answer again.
    Replayed(Replay),
}

impl Decision {
    /// A deduplicated answer naming `job` in its state now (a live job that just finished
    /// reads as RUNNING until the poll is repeated).
    pub fn live(job: Arc<LiveJob>) -> Decision {
        let state = job.state().unwrap_or(JobState::Running);
        Decision::Live(job, state)
    }
}

/// The admission stage, shared by every listener thread.
pub struct Admission {
    store: Arc<dyn Store>,
    index: Arc<StatusIndex>,
    pool: Arc<ComputePool>,
    /// Where fresh READY results are looked up (memory first, then the store).
    finished: Arc<FinishedJobs>,
    freshness_window_ms: u64,
    /// The labels in force: a result made before their reload is not reused as fresh.
    labels: Option<Arc<LiveLabels>>,
    /// Every account's policy: a job runs under its account's, and a result made under
    /// another policy (or version of it) is not reused as fresh.
    policies: Arc<Policies>,
    subject_locks: SubjectLocks,
    /// True until the recovery backlog is drained: jobs a stopped process left live may then
    /// be in the store only (not yet indexed), and deduplication must find them there.
    recovering: AtomicBool,
    /// Tickets of admissions that stood because their undo failed, waiting for queue room;
    /// at most `config::STRANDED_TICKETS_MAX` (past it, a job runs after the next restart).
    stranded: parking_lot::Mutex<std::collections::VecDeque<Ticket>>,
    /// The cluster's store when jobs live in etcd (`shared` admits through it, asynchronously).
    cluster: Option<shared::Cluster>,
    /// Idempotency keys whose first request is being admitted on this node.
    in_flight: idempotency::InFlight,
    /// Accounts whose outbox a webhook attached to a finished job grew: trimmed by housekeeping.
    grown_outboxes: callback::GrownOutboxes,
}

/// A recorded job the index or the queue refused: its ticket, why, and its pending index entry.
struct Refused {
    ticket: Ticket,
    refusal: AdmitError,
    live: Arc<LiveJob>,
}

/// Striped locks that serialise steps 8–10 for one `(account, subject)`: of equal requests
/// racing through admission, one is admitted and the others find its job (deduplicated, not
/// charged). Held for one admission only — a lookup, a reservation and one RocksDB write —
/// and only by POSTs; polls, status and usage never take them.
struct SubjectLocks {
    stripes: Box<[parking_lot::Mutex<()>]>,
    hash_key: std::collections::hash_map::RandomState,
}

impl SubjectLocks {
    fn new() -> SubjectLocks {
        let stripes = (0..ADMISSION_LOCK_STRIPES).map(|_| parking_lot::Mutex::new(())).collect();
        SubjectLocks { stripes, hash_key: Default::default() }
    }

    fn lock(&self, account: &str, subject: Subject<'_>) -> parking_lot::MutexGuard<'_, ()> {
        use std::hash::BuildHasher;
        let text = match subject {
            Subject::Wallet(text) | Subject::Pair(text) => text,
        };
        let slot = self.hash_key.hash_one((account, text)) as usize % self.stripes.len();
        self.stripes[slot].lock()
    }
}

impl Admission {
    pub fn new(
        store: Arc<dyn Store>,
        index: Arc<StatusIndex>,
        pool: Arc<ComputePool>,
        finished: Arc<FinishedJobs>,
        freshness_window_ms: u64,
    ) -> Admission {
        Admission {
            store,
            index,
            pool,
            finished,
            freshness_window_ms,
            labels: None,
            policies: Arc::default(),
            subject_locks: SubjectLocks::new(),
            recovering: AtomicBool::new(true),
            stranded: parking_lot::Mutex::new(std::collections::VecDeque::new()),
            cluster: None,
            in_flight: Default::default(),
            grown_outboxes: Default::default(),
        }
    }

    /// Admission through a cluster's etcd store (see `shared`); nothing is left to recover.
    /// Reuses no result made before the labels in force were reloaded.
    pub fn with_labels(mut self, labels: Arc<LiveLabels>) -> Admission {
        self.labels = Some(labels);
        self
    }

    /// Runs each account's jobs under its policy (without: the default policy for all).
    pub fn with_policies(mut self, policies: Arc<Policies>) -> Admission {
        self.policies = policies;
        self
    }

    pub fn policies(&self) -> &Arc<Policies> {
        &self.policies
    }

    pub fn in_cluster(mut self, cluster: Arc<EtcdStore>) -> Admission {
        self.cluster = Some(shared::Cluster::new(cluster));
        self.recovering = AtomicBool::new(false);
        self
    }

    /// The cluster's store, when this node is one of a cluster.
    pub fn cluster(&self) -> Option<&Arc<EtcdStore>> {
        self.cluster.as_ref().map(|c| &c.etcd)
    }

    /// Steps 8–10 for one request whose key (if any) the caller holds in flight and found no
    /// kept answer for (`kept`), on this node's store: a new job's answer is written with the
    /// job; a deduplicated one is kept on its own — or, when another request of the key kept
    /// one first, that one is the decision (`Replayed`).
    pub async fn decide(&self, request: &AdmitRequest<'_>) -> Result<Decision, AdmitError> {
        let decision = match self.cluster() {
            Some(etcd) => self.admit_in_cluster(etcd, request).await?,
            None => self.admit(request)?,
        };
        let Some(key) = request.idempotency else { return Ok(decision) };
        let (record, state) = match &decision {
            Decision::Live(live, state) => (&live.record, *state),
            Decision::Fresh(job) => (&job.record, job.record.state),
            Decision::Admitted(_) | Decision::Replayed(_) => return Ok(decision),
        };
        match self.keep_answer(key, record, state, request.now_ms).await? {
            Some(first) => Ok(first),
            None => Ok(decision),
        }
    }

    /// Steps 8–10 for one request (embedded store). With an idempotency key (the caller holds
    /// it in flight and found no kept answer), a new job's answer is written with it.
    pub fn admit(&self, request: &AdmitRequest<'_>) -> Result<Decision, AdmitError> {
        let AdmitRequest { key, work, refresh, now_ms, .. } = *request;
        let kind = work.kind();
        let account = key.account().as_str();
        let _one_at_a_time = self.subject_locks.lock(account, kind.subject());
        // The one policy this request is decided and run under: read once, so a PUT landing
        // meanwhile cannot make its job and its deduplication disagree.
        let policy = self.policies.policy(account);
        if !refresh {
            if let Some(live) =
                self.index.live_for(account, kind.subject()).filter(|j| policy.has_tag(&j.record.engine_version))
            {
                return Ok(Decision::live(live));
            }
            if let Some(waiting) = self.recovered_live(account, kind.subject(), &policy)? {
                return Ok(Decision::live(waiting));
            }
            if let Some(fresh) = self.fresh_ready(account, kind.subject(), &policy, now_ms)? {
                return Ok(Decision::Fresh(fresh));
            }
        }
        let limit = self.index.per_account_max();
        if self.index.live_of_account(account) >= limit {
            return Err(AdmitError::TooManyJobs { limit });
        }
        let reservation = key
            .quota
            .reserve(work.operation(), now_ms)
            .map_err(|refusal| AdmitError::QuotaExhausted { refusal, now_ms })?;
        // A queue that is already full refuses before the durable write, which would only be
        // undone (the push below still refuses, and undoes it, if the queue fills in between).
        let admitted = if self.queue_room() == 0 {
            Err(AdmitError::Busy)
        } else {
            self.record_and_queue(request, kind, policy, &reservation)
        };
        match admitted {
            Ok(record) => Ok(Decision::Admitted(Box::new(record))),
            Err(refusal) => {
                // Never admitted: the unit goes back uncounted (the store undid its copy).
                let _ = key.quota.release(reservation, ReleaseCause::NotAdmitted);
                Err(refusal)
            }
        }
    }

    /// The store admission writes to (recovery pages through it too).
    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// The finished jobs kept in memory (the retention purge announces its cutoff to them).
    pub fn finished(&self) -> &FinishedJobs {
        &self.finished
    }

    /// True until every job a stopped process left live is queued and indexed: until then the
    /// newest job of a subject may be one the store has and memory does not.
    pub fn is_recovering(&self) -> bool {
        self.recovering.load(Ordering::Acquire)
    }

    /// True when this node's status index holds the job (it is queued or running here).
    pub fn holds(&self, id: &str) -> bool {
        self.index.get(id).is_some()
    }

    /// Free places in the work queue now (a hint: listener threads push concurrently).
    pub fn queue_room(&self) -> usize {
        self.pool.capacity().saturating_sub(self.pool.depth())
    }

    /// Every job a stopped process left live has been re-queued (and indexed): deduplication
    /// no longer needs to look in the store for them.
    pub fn finish_recovery(&self) {
        if self.recovering.swap(false, Ordering::AcqRel) {
            tracing::info!("recovery done: every job left live by the previous process is queued");
        }
    }

    /// While recovering: the subject's newest job in the store when it is still live (and runs
    /// under `policy`) — a job waiting in the recovery backlog, which an equal request must be
    /// deduplicated onto.
    fn recovered_live(
        &self,
        account: &str,
        subject: Subject<'_>,
        policy: &Policy,
    ) -> Result<Option<Arc<LiveJob>>, AdmitError> {
        if !self.is_recovering() {
            return Ok(None);
        }
        let newest = self.store.latest_for(account, subject)?;
        let live = newest.filter(|job| {
            matches!(job.state, JobState::Queued | JobState::Running) && policy.has_tag(&job.engine_version)
        });
        Ok(live.map(|job| Arc::new(LiveJob::new(job))))
    }

    /// The newest READY job of the account and subject if this build made it under `policy`
    /// and it is fresh.
    fn fresh_ready(
        &self,
        account: &str,
        subject: Subject<'_>,
        policy: &Policy,
        now_ms: u64,
    ) -> Result<Option<Arc<StoredJob>>, AdmitError> {
        let ready = self.finished.latest_ready(&*self.store, account, subject)?;
        Ok(ready.filter(|job| self.is_fresh(&job.record, policy, now_ms)))
    }

    fn is_fresh(&self, job: &JobRecord, policy: &Policy, now_ms: u64) -> bool {
        // A result finished before the labels in force were reloaded was made with others.
        let labels_since_ms = self.labels.as_ref().map_or(0, |l| l.loaded_at_ms());
        job.state == JobState::Ready
            && policy.has_tag(&job.engine_version)
            && job.completed_at_ms.is_some_and(|done| done >= labels_since_ms)
            && job.completed_at_ms.is_some_and(|done| now_ms.saturating_sub(done) < self.freshness_window_ms)
    }

    /// Steps (4)–(6); on a refusal, undoes what it did (the caller releases the reservation).
    fn record_and_queue(
        &self,
        request: &AdmitRequest<'_>,
        kind: JobKind,
        policy: Arc<Policy>,
        reservation: &Reservation,
    ) -> Result<JobRecord, AdmitError> {
        let AdmitRequest { key, work, refresh, now_ms, idempotency, .. } = *request;
        let mut record = JobRecord::queued(
            job_id(work.id_prefix())?,
            kind,
            key.account().as_str().to_owned(),
            key.id().as_str().to_owned(),
            now_ms,
            refresh,
            true,
            reservation.period_start_ms,
            policy.version_tag(),
        );
        record.idempotency_digest = idempotency.map(|k| k.key_digest);
        let record = record.linked(request.callback_url, request.monitor);
        let answer = idempotency.map(|k| k.answer(&record, JobState::Queued, false, now_ms));
        self.store.admit(&record, answer.as_ref())?;
        let spec = self.spec(work, key.account().as_str(), &policy, now_ms);
        let ticket = Ticket::new(record.id.clone(), spec).under(policy);
        let Err(refused) = self.enqueue(&record, ticket) else { return Ok(record) };
        let undone = self.store.cancel_admission(&record.id);
        self.settle_refusal(record, refused, undone)
    }

    /// Steps (5)–(6): indexes the recorded job and hands its ticket to the pool; a refusal
    /// hands the ticket back (the job is indexed, pending, until `settle_refusal`).
    fn enqueue(&self, record: &JobRecord, ticket: Ticket) -> Result<(), Box<Refused>> {
        let live = Arc::new(LiveJob::pending(record.clone()));
        let (refused, refusal) = match self.index.insert(Arc::clone(&live)) {
            Ok(()) => (self.pool.submit(ticket).err(), AdmitError::Busy),
            Err(IndexFull::Full(_)) => (Some(ticket), AdmitError::Busy),
            Err(IndexFull::Account(limit)) => (Some(ticket), AdmitError::TooManyJobs { limit }),
        };
        match refused {
            None => {
                live.mark_queued();
                Ok(())
            }
            Some(ticket) => Err(Box::new(Refused { ticket, refusal, live })),
        }
    }

    /// After the store's undo of a refused admission: the refusal, or — when the undo failed
    /// and the job stays recorded — the admission stands and its ticket waits for room.
    fn settle_refusal(
        &self,
        record: JobRecord,
        refused: Box<Refused>,
        undone: Result<(), StoreError>,
    ) -> Result<JobRecord, AdmitError> {
        match undone {
            Ok(()) => {
                self.index.remove(&record.id);
                Err(refused.refusal)
            }
            Err(e) => {
                tracing::error!(job = %record.id, error = %e, "undoing a refused admission failed: it stands");
                refused.live.mark_queued();
                self.strand(refused.ticket);
                Ok(record)
            }
        }
    }

    /// Keeps the ticket of an admission that stood until the queue has room.
    fn strand(&self, ticket: Ticket) {
        let mut stranded = self.stranded.lock();
        if stranded.len() < STRANDED_TICKETS_MAX {
            stranded.push_back(ticket);
        } else {
            tracing::error!(job = %ticket.id, "too many stranded admissions: this job runs after the next restart");
        }
    }

    /// What stands of a decision whose writes could not be made durable (`--sync-writes`: the
    /// group commit's wait failed after the job was logged, indexed and queued). A new job is
    /// withdrawn while it is still `QUEUED` — the store deletes the job, its indexes, its
    /// reservation and its idempotency answer in one batch (`cancel_admission`, a
    /// compare-and-set against the compute thread's `mark_running`), the index lets go of it,
    /// memory's unit is released — and `None` says the request is refused, nothing charged (its
    /// ticket, still queued, finds no job: its completion is refused and settles nothing). A
    /// job a compute thread already started stands: recorded, run and charged once, so the
    /// answer must be the 202. An answer that named an existing job (deduplicated, reused,
    /// replayed) charged nothing: it stands. `Err` when the store refuses the undo itself (a
    /// failing disk: the refusal is that error, and a job its log kept runs after a restart).
    pub fn after_failed_sync(&self, decision: Decision, key: &KeyEntry) -> Result<Option<Decision>, StoreError> {
        let Decision::Admitted(record) = decision else { return Ok(Some(decision)) };
        match self.store.cancel_admission(&record.id) {
            Ok(()) => {}
            Err(StoreError::State { .. }) => {
                tracing::warn!(job = %record.id, "a job whose write was not made durable stands: it started");
                return Ok(Some(Decision::Admitted(record)));
            }
            Err(e) => {
                tracing::error!(job = %record.id, error = %e, "withdrawing a job whose write was not made durable failed");
                return Err(e);
            }
        }
        self.index.remove(&record.id);
        if let Err(e) = key.quota.release(record.unit(), ReleaseCause::NotAdmitted) {
            tracing::debug!(job = %record.id, error = %e, "in-memory quota not released");
        }
        Ok(None)
    }

    /// Hands stranded tickets to the compute pool while the queue takes them (housekeeping).
    pub fn submit_stranded(&self) {
        let mut stranded = self.stranded.lock();
        while let Some(ticket) = stranded.pop_front() {
            if let Err(ticket) = self.pool.submit(ticket) {
                stranded.push_front(ticket);
                return;
            }
        }
    }

    /// The compute spec; a comparison names fresh analyses of its wallets, made under `policy`
    /// (the one its ticket carries), to reuse.
    fn spec(&self, work: &Work, account: &str, policy: &Policy, now_ms: u64) -> JobSpec {
        match work {
            Work::Analysis { wallet } => JobSpec::Analysis { wallet: *wallet },
            Work::Comparison { wallet_a, wallet_b } => {
                let reuse = |w: &Pubkey| {
                    let text = w.to_base58();
                    self.fresh_ready(account, Subject::Wallet(&text), policy, now_ms)
                        .ok()
                        .flatten()
                        .map(|job| job.record.id.clone())
                };
                JobSpec::Comparison {
                    wallet_a: *wallet_a,
                    wallet_b: *wallet_b,
                    reuse: [reuse(wallet_a), reuse(wallet_b)],
                }
            }
        }
    }

    /// Re-queues a job a stopped process left live (its reservation is already in the usage
    /// record). `Err` hands the record back when the queue or index is full.
    // The error hands the value back to its owner (a move, not an error object to propagate).
    #[allow(clippy::result_large_err)]
    pub fn requeue(&self, record: JobRecord) -> Result<(), JobRecord> {
        let Some(spec) = recovered_spec(&record) else {
            tracing::error!(job = %record.id, "recovered job has unreadable addresses; left for inspection");
            return Ok(());
        };
        if self.index.get(&record.id).is_some() {
            return Ok(());
        }
        let id = record.id.clone();
        if self.index.insert_recovered(Arc::new(LiveJob::new(record.clone()))).is_err() {
            return Err(record);
        }
        let policy = self.policies.policy(&record.account);
        if self.pool.submit(Ticket::new(id.clone(), spec).under(policy)).is_err() {
            self.index.remove(&id);
            return Err(record);
        }
        Ok(())
    }
}

/// The compute spec of a stored job (recovery). Comparisons are recomputed without reuse.
fn recovered_spec(record: &JobRecord) -> Option<JobSpec> {
    let parse = |text: &str| Pubkey::parse(text).ok();
    Some(match &record.kind {
        JobKind::Analysis { wallet } => JobSpec::Analysis { wallet: parse(wallet)? },
        JobKind::Comparison { wallet_a, wallet_b, .. } => {
            JobSpec::Comparison { wallet_a: parse(wallet_a)?, wallet_b: parse(wallet_b)?, reuse: [None, None] }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_ids_are_deterministic_and_unordered() {
        let a = Pubkey::parse("11111111111111111111111111111111").unwrap();
        let b = Pubkey::parse("SysvarRent111111111111111111111111111111111").unwrap();
        assert_eq!(pair_id(&a, &b), pair_id(&b, &a));
        // SHA-256("xray-pair-v1" ‖ 32 zero bytes ‖ Rent sysvar), first 16 bytes, base58.
        let mut hasher = Sha256::new();
        hasher.update(b"xray-pair-v1");
        hasher.update([0u8; 32]);
        hasher.update(b.as_bytes());
        let expected = format!("pair_{}", bs58::encode(&hasher.finalize()[..16]).into_string());
        assert_eq!(pair_id(&a, &b), expected);
        assert!(pair_id(&a, &b).len() <= crate::config::STORE_ID_BYTES_MAX);
    }

    #[test]
    fn every_id_made_here_is_id_shaped_and_nothing_else_is() {
        for _ in 0..64 {
            assert!(is_id_shaped(&job_id(ANALYSIS_ID_PREFIX).unwrap(), ANALYSIS_ID_PREFIX));
        }
        let a = Pubkey::parse("11111111111111111111111111111111").unwrap();
        for b in 0u8..32 {
            let id = pair_id(&a, &Pubkey([b; 32]));
            assert!(is_id_shaped(&id, PAIR_ID_PREFIX), "{id}");
        }
        assert!(is_id_shaped(&format!("an_{}", bs58::encode([0xff; 16]).into_string()), ANALYSIS_ID_PREFIX));
        for bad in ["an_", "an_0abc", "an_l", "pair_abc", "an_unknown-id", &format!("an_{}", "z".repeat(23))] {
            assert!(!is_id_shaped(bad, ANALYSIS_ID_PREFIX), "{bad}");
        }
    }

    #[test]
    fn job_ids_have_the_contract_shape() {
        let id = job_id(ANALYSIS_ID_PREFIX).unwrap();
        let raw = bs58::decode(id.strip_prefix("an_").unwrap()).into_vec().unwrap();
        assert_eq!(raw.len(), JOB_ID_RANDOM_BYTES);
        assert_ne!(id, job_id(ANALYSIS_ID_PREFIX).unwrap());
    }
}
