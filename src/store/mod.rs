//! The storage layer: durable keys, jobs, results and quota usage behind the [`Store`] trait,
//! with the embedded RocksDB backend [`RocksStore`] as the default implementation.
//!
//! Owns: the records the API server must not lose (API keys, job records, finished payloads,
//! per-key usage counters, the schema version), their binary key layout and value encoding,
//! and the atomicity rules between them. Called from listener threads (admission, polls, key
//! lookups), the store-work pool (`work`: the API's longer sequences, off the listeners),
//! compute threads (state transitions, results) and the server's start-up and housekeeping
//! code (recovery paging, retention purge). Every call is blocking and short:
//! RocksDB answers point lookups from its block cache and writes by appending to its WAL; no
//! call waits on another call except through RocksDB's own write group (group commit).
//!
//! # Operations and what each writes (one RocksDB `WriteBatch` each, so all or nothing)
//!
//! | call | writes |
//! |---|---|
//! | [`Store::put_rotation`] | both key records, the successor's carried usage (merge) |
//! | [`Store::admit`] | job record, live-state index, subject index, usage `reserved +1` (if charged) |
//! | [`Store::cancel_admission`] | deletes the three job entries (and the job's idempotent answer), usage `reserved −1` |
//! | [`Store::mark_running`] | job record, live-state index move, subject index state |
//! | [`Store::complete`] `Ready` | payload, job record, completion index, subject index, live index delete, usage `reserved −1, used +1, byOperation +1` |
//! | [`Store::complete`] `Failed` | job record (with error), completion index, subject index, live index delete, usage `reserved −1, refunded +1` |
//! | [`Store::admit`] with an answer | the above, and the idempotent answer, its two index entries and its account's tally (evicting the account's oldest answer past the cap) |
//! | [`Store::put_answer`] | the same for an answer without a job (first writer only) |
//! | [`Store::purge_answers_before`] | deletes every answer older than the cutoff, its index entries (the time index by one range tombstone per batch) and its tally count, in batches |
//! | [`Store::purge_finished_before`] | deletes job, payload, completion and subject entries of up to `limit` old jobs |
//! | [`Store::attach_callback`] | job record with its new callback; when the job is finished, its two outbox entries (due now) |
//!
//! The usage delta is derived by the store from the job record (`charged`, `kind`, `key_id`,
//! `quota_period_start_ms`) rather than passed in by the caller, so a reservation, its commit
//! and its refund can never disagree with the job they belong to. A job reserved in one quota
//! period is committed or refunded in that same period, even if it finishes after the period
//! ended (the unit was counted against that period when it was admitted). When the job's key
//! was rotated after admission, `complete` splits the delta: `reserved −1` on the job's key,
//! `used +1, byOperation +1` (or `refunded +1`) on the key at the end of its `replaced_by`
//! chain, in the same batch — the successor's usage then counts the work the rotation left in
//! flight, exactly as memory does (`KeyTable::successor_of`).
//!
//! # Durability
//!
//! A write returns after RocksDB appended the batch to its write-ahead log. With
//! `sync_writes = false` the WAL record is in the operating system's page cache when the call
//! returns: a killed process (kill -9, abort, panic) loses nothing that was acknowledged, a
//! power loss may lose the last moments. With `sync_writes = true` the batches written on
//! compute threads and the admin path are also `fsync`ed inline (RocksDB's write groups commit
//! concurrent writers with one `fsync`), and those written on listener threads (`admit`,
//! `cancel_admission`) are not: their answers wait for `group_commit`, whose own thread
//! `fsync`s once for every write logged before it, so no listener thread blocks on the disk.
//! [`Store::sync`] forces the WAL to disk (group commit, and graceful shutdown).
//! `mark_running` is always written without `fsync`: losing it only makes a recovered job look
//! `QUEUED` instead of `RUNNING`, and both are re-queued the same way.
//!
//! # Recovery
//!
//! Jobs left `QUEUED` or `RUNNING` by a stopped process stay in the live-state index with
//! their reservations untouched in the usage record. On start the server pages through them
//! with [`Store::live_jobs`] (ordered by creation time, bounded pages, a cursor for the rest),
//! re-queues what fits in its work queue and keeps the cursor for the backlog. A recovered
//! `RUNNING` job is simply run again: `mark_running` accepts `RUNNING → RUNNING`.
//! The scan is bounded above by `created_before_ms` (the process start time), so jobs admitted
//! by the new process are not found twice; the server should also skip ids it already holds.
//! `jobs::recovery::Backlog` wraps the paging: `RUNNING` jobs first, then `QUEUED`, oldest first, holding
//! only a cursor, so a backlog larger than the queue never sits in memory all at once.
//!
//! # Column families and key layout
//!
//! Keys are binary and ordered; numbers are big-endian so that byte order is numeric order.
//! `lp(s)` is a one-byte length followed by the bytes of `s` (every such field is at most
//! [`STORE_ID_BYTES_MAX`] bytes, checked before any write).
//!
//! | column family | key | value |
//! |---|---|---|
//! | `keys` | key id | `v1` ‖ JSON [`KeyRecord`](crate::auth::record::KeyRecord) |
//! | `jobs` | job id | `v1` ‖ JSON [`JobRecord`] |
//! | `jobs_live` | state byte ‖ created_at_ms BE ‖ job id | empty |
//! | `jobs_done` | completed_at_ms BE ‖ job id | empty |
//! | `by_subject` | lp(account) ‖ kind byte ‖ lp(wallet or pair id) ‖ (u64::MAX − created_at_ms) BE ‖ job id | state byte |
//! | `analyses`, `comparisons` | job id | `v1` ‖ the payload JSON bytes, exactly as served |
//! | `idempotency` | lp(account) ‖ SHA-256 of the client's `Idempotency-Key` | `v1` ‖ JSON [`IdempotentAnswer`] |
//! | `idempotency_by_time` | created_at_ms BE ‖ the `idempotency` key | empty |
//! | `idempotency_by_account` | lp(account) ‖ created_at_ms BE ‖ the key's SHA-256: an account's answers, oldest first (the one the cap evicts) | empty |
//! | `idempotency_accounts` | account | the account's answer count u64 BE ‖ a lower bound of its oldest answer's created_at_ms u64 BE |
//! | `callbacks_due` | next attempt ms BE ‖ job id: the webhook outbox (finished jobs whose callback is pending) | empty |
//! | `callbacks_by_account` | lp(account) ‖ the time the webhook entered the outbox BE (`JobRecord::outbox_entered_ms`: the completion, or a later attach) ‖ job id: the outbox by account, its pending webhooks oldest first ([`Store::trim_outbox`]) | empty |
//! | `webhook_secrets` | account | `v1` ‖ JSON [`WebhookSecret`] |
//! | `usage` | lp(key id) ‖ period_start_ms BE | `v1` ‖ five i64 LE counters (merge operator) |
//! | `meta` | `schema_version` | u32 BE |
//!
//! Values carry a format version byte first (`v1` = 1) so a later build can read old values.
//! Records are JSON (serde_json): small, self-describing and easy to inspect with `ldb`;
//! usage counters are a fixed 49-byte binary record because RocksDB merges them in C++
//! callbacks and they are read on every status call.
//!
//! Comparisons: every job, analysis or comparison, has its own unique id (`an_…` for
//! analyses; the server picks an internal unique id for comparison jobs). The wire's
//! `(account, pairId)` is answered by [`Store::latest_for`] over the subject index (newest
//! job first), which is one iterator seek. Keeping ids unique means no record is ever
//! overwritten by a later job, so no read-modify-write is needed at admission.
//!
//! # Concurrency
//!
//! Usage counters are updated with an associative RocksDB merge operator (i64 deltas summed),
//! so admissions on many threads never read-modify-write a counter under a lock. State
//! transitions of one job (`cancel_admission`, `mark_running`, `complete`) read the record
//! and write a batch under one of [`JOB_LOCK_STRIPES`] striped mutexes (by job id), so a
//! duplicated `complete` can never charge twice: the second one finds the job finished and
//! gets [`StoreError::State`]. `admit` without an answer takes no lock and does not read: job
//! ids are 16 random bytes chosen by the server, so the caller guarantees the id is new.
//! Every write of an account's answers (`admit` with an answer, `put_answer`, a cancel that
//! undoes one) reads and writes the account's tally under one of the account stripe locks, so
//! concurrent listener threads never lose a count; the answer purge excludes them one batch at
//! a time (a shared/exclusive gate). Writers of a time index (`jobs_done`, `callbacks_due`,
//! `idempotency_by_time`) lower that index's in-memory floor before they write, and its scans
//! start at the floor and raise it, so a scan never walks the tombstones of what was purged or
//! delivered before (the floor starts at 0 after a restart: one walk).
//!
//! # Idempotent answers are bounded
//!
//! An account keeps at most `IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX` answers (a store option, so
//! tests can use a small cap): the write that would pass it evicts the account's oldest
//! answer with its index entries. The guarantee is "the newest N keys of an account, each for
//! `IDEMPOTENCY_TTL_MS`". The hourly purge removes everything past the window in bounded
//! batches until none is left. Figures for 1,000,000 keyed answers of one account are in
//! `docs/idempotency.md`. Answers written before the tally existed (an older database) are
//! not counted; they expire and are purged as before.
//!
//! # Start-up
//!
//! Open the store before any thread is pinned to a core: RocksDB starts its background
//! threads at open and they inherit the opening thread's affinity.
//!
//! Invariant: one batch per operation; no record of one job is written outside that job's batch.
//! Invariant: every length a client can influence (ids, names, messages, payloads, page sizes)
//! is checked against a named limit before it reaches RocksDB.
//! Invariant: the API-key secret never reaches the store; only its SHA-256 digest, inside the
//! key record. A webhook signing secret is stored as is (a signature needs it), per account,
//! and its `Debug` never shows it.
//! Invariant: a job's webhook is in the outbox (`callbacks_due` and `callbacks_by_account`)
//! exactly while the job is finished and its callback `Pending`: the completion's batch puts
//! it there (or the attach's, for a webhook attached to a finished job), each attempt's batch
//! moves or removes it, retention's purge deletes it with the job. An account holds at most
//! `WEBHOOK_OUTBOX_PER_ACCOUNT_MAX` of them (`trim_outbox`).
//! Invariant: a job's callback, once set, keeps its URL: `attach_callback` sets one only on a
//! job without, under the job's lock (RocksDB) or a compare on its revision (etcd).
//! Deliberately absent: an `accounts` column family (accounts are only a field of keys for now;
//! `idempotency_accounts` holds answer tallies only),
//! retention of usage records (they are small, one per key and period), TTL compaction
//! filters (retention is an explicit, bounded purge the server schedules), and any cache above
//! RocksDB's block cache (the server's in-memory indexes are that cache).

pub mod docs;
mod encoding;
pub mod etcd;
pub mod group_commit;
mod record;
mod rocks;
mod usage;
pub mod work;

pub use docs::{Doc, DocKind, DocWrite, Expect};
pub use record::{
    Attached, Callback, CallbackStatus, Completion, EventRecord, IdempotentAnswer, JobCursor, JobError, JobKind,
    JobPage, JobRecord, JobState, LiveState, MerkleStep, MonitorLink, ReportSignature, SignatureBatch, Subject,
    WebhookSecret,
};
pub use rocks::{create_private_dir, RocksStore, StoreOptions, COLUMN_FAMILIES, META_SCHEMA_VERSION_KEY};

use crate::auth::record::KeyRecord;
use crate::config::{
    BLOCK_CACHE_BYTES_DEFAULT, ENGINE_VERSION_BYTES_MAX, ERROR_CODE_BYTES_MAX, ERROR_MESSAGE_BYTES_MAX,
    JOB_LOCK_STRIPES, OUTBOX_TRIM_BATCH_MAX, RESULT_BYTES_MAX, ROCKSDB_BACKGROUND_JOBS_DEFAULT, STORE_ID_BYTES_MAX,
    STORE_PAGE_LEN_MAX, SUBJECT_SCAN_LEN_MAX, WAL_BYTES_MAX_DEFAULT, WRITE_BUFFER_BYTES_DEFAULT,
};
use crate::limits::quota::UsageRecord;

/// Version of the on-disk layout this build reads and writes (the `meta` record).
/// 2: usage values carry a sixth counter, `transaction_scan` (49 bytes, `usage::USAGE_FORMAT_V2`).
/// 3: the `docs` column family (feature records: monitors, their cursors and event index) and
/// a job's `monitor` link.
pub const SCHEMA_VERSION: u32 = 3;

/// Older versions a store is upgraded from in place when opened: only the version record is
/// rewritten, because this build reads their data as it is (schema 1's 41-byte usage values).
/// After the upgrade a build of the older schema refuses the store (it could not read the new
/// usage values), so every node of a cluster is upgraded together.
pub const SCHEMA_VERSIONS_UPGRADED: &[u32] = &[1, 2];

/// Units of one key to charge now, together (`Store::charge_now_each`): a scan's one, a
/// sequence scan's one per transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitCharge {
    pub key_id: String,
    pub period_start_ms: u64,
    pub limit: u64,
    /// At least 1 (0 charges nothing).
    pub units: u32,
}

/// What came of `Store::charge_now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charged {
    /// Charged; the period's usage after it when the store read it (the shared store does).
    Done { usage: Option<UsageRecord> },
    /// Not charged: the key's limit was reached (its usage as the store holds it).
    Exhausted { usage: UsageRecord },
}

/// Usage a rotated key's successor starts with, in the period starting at `period_start_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UsageCarry {
    pub period_start_ms: u64,
    pub usage: UsageRecord,
}

/// `lastError` of a webhook given up because its account's outbox was full
/// ([`Store::trim_outbox`]).
pub const OUTBOX_FULL_REASON: &str = "outbox_full";

/// A position in the webhook outbox: an entry's due time and job id (`Store::due_callbacks`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueCursor {
    pub due_ms: u64,
    pub id: String,
}

impl DueCursor {
    /// The cursor of an outbox key (due ms BE ‖ job id).
    fn of_key(key: &[u8]) -> StoreResult<DueCursor> {
        let (due_ms, id) = encoding::parse_done_key(key)?;
        Ok(DueCursor { due_ms, id: id.to_owned() })
    }
}

/// A page of the webhook outbox: the due jobs whose records were read, and where the next page
/// starts — the last entry scanned, whatever its record said by the time it was read (`None`
/// when the scan reached the end of the due set).
#[derive(Debug, Clone, Default)]
pub struct DuePage {
    pub jobs: Vec<JobRecord>,
    pub next: Option<DueCursor>,
}

/// Result of every store call.
pub type StoreResult<T> = Result<T, StoreError>;

/// What can go wrong in the store. The server maps [`StoreError::is_transient`] errors to
/// `503 SERVICE_BUSY` and everything else to `500 INTERNAL`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The disk or the engine failed to read or write (includes RocksDB `IOError`).
    #[error("storage I/O error: {0}")]
    Io(String),
    /// RocksDB reported corrupt data, or a record failed its checks.
    #[error("storage corruption: {0}")]
    Corruption(String),
    /// The engine is busy or shutting down; retrying later may succeed.
    #[error("storage temporarily unavailable: {0}")]
    Unavailable(String),
    /// The store is out of space (etcd's NOSPACE alarm): nothing new can be written until an
    /// operator frees space; retrying later may succeed.
    #[error("storage full: {0}")]
    Full(String),
    /// The database was written by a build with another layout. `found` is 0 when the
    /// database has data but no version record.
    #[error("database schema version {found} is not supported (this build reads version {supported})")]
    SchemaVersion { found: u32, supported: u32 },
    /// A value could not be encoded or decoded (unknown format byte, bad JSON).
    #[error("record encoding: {0}")]
    Encoding(String),
    /// The caller passed a record that breaks a limit or a rule (a bug in the caller).
    #[error("invalid record: {0}")]
    Invalid(String),
    /// A state transition that the job's current state does not allow (or an unknown job).
    #[error("job {id}: cannot {op} in state {state}")]
    State { id: String, op: &'static str, state: String },
    /// A record write expected a revision (or absence) the record no longer has: another
    /// writer won (`Store::write_docs`). Read it again and decide again.
    #[error("write conflict: {0}")]
    Conflict(String),
}

impl StoreError {
    /// True when the same call may succeed if retried later (the server answers 503).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable(_) | StoreError::Full(_))
    }
}

impl From<rocksdb::Error> for StoreError {
    fn from(e: rocksdb::Error) -> Self {
        use rocksdb::ErrorKind as K;
        let kind = e.kind();
        let text = e.into_string();
        match kind {
            K::Corruption => StoreError::Corruption(text),
            K::Busy | K::TimedOut | K::TryAgain | K::ShutdownInProgress | K::Incomplete | K::Aborted => {
                StoreError::Unavailable(text)
            }
            _ => StoreError::Io(text),
        }
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::Io(e.to_string())
    }
}

/// The storage operations the API server needs. Object safe (`Arc<dyn Store>`), blocking, and
/// callable from any thread. A distributed backend implements the same contract: each call is
/// atomic, and a call that returned `Ok` is durable.
pub trait Store: Send + Sync {
    /// Writes (inserts or replaces) one API key record.
    fn put_key(&self, key: &KeyRecord) -> StoreResult<()>;
    /// Writes a rotation in one batch: the revoked old key, its successor, and the usage the
    /// successor carries over for the current period (so a restart keeps the quota where it was).
    fn put_rotation(&self, old: &KeyRecord, new: &KeyRecord, carried: &UsageCarry) -> StoreResult<()>;
    /// The key record with this id, if any.
    fn get_key(&self, id: &str) -> StoreResult<Option<KeyRecord>>;
    /// Key records in id order, starting after `after`, at most `limit` (≤ [`STORE_PAGE_LEN_MAX`]).
    fn list_keys(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<KeyRecord>>;

    /// Records a new `QUEUED` job and, if it is charged, reserves one quota unit, in one
    /// batch. Returns once the batch is in the WAL, never `fsync`ed (it runs on listener
    /// threads): a caller promising power-loss durability waits for
    /// [`group_commit::GroupCommit::covered`] (or calls [`Store::sync`]) before it answers.
    /// The id must be new. `answer`, when the request carried an `Idempotency-Key`, is written
    /// in the same batch: the answer is durable exactly when the job is.
    fn admit(&self, job: &JobRecord, answer: Option<&IdempotentAnswer>) -> StoreResult<()>;
    /// Undoes an admission whose job never reached the queue: deletes the job and releases its
    /// reservation in one batch, logged like `admit`. Only a `QUEUED` job can be cancelled.
    fn cancel_admission(&self, id: &str) -> StoreResult<()>;
    /// `QUEUED` (or recovered `RUNNING`) → `RUNNING`. Returns the updated record.
    fn mark_running(&self, id: &str, started_at_ms: u64) -> StoreResult<JobRecord>;
    /// Finishes a live job: stores the payload (`Ready`) or the error (`Failed`), commits or
    /// refunds the reservation, in one durable batch. Returns the updated record.
    fn complete(&self, id: &str, completed_at_ms: u64, outcome: &Completion) -> StoreResult<JobRecord>;

    /// The job record with this id, if any (an over-long id is simply not found).
    fn get_job(&self, id: &str) -> StoreResult<Option<JobRecord>>;
    /// The stored payload of a `READY` job: the exact JSON served under `data.xray` or
    /// `data.comparison`. Takes the record the poll already read (to check the account and
    /// the state), which also says which column family holds the payload: one point lookup.
    /// `None` for a job that is not `READY` (or was purged meanwhile).
    fn get_result(&self, job: &JobRecord) -> StoreResult<Option<Vec<u8>>>;
    /// The newest job (any state) of this account for this wallet or pair.
    fn latest_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>>;
    /// The newest `READY` job of this account for this wallet or pair, looking at most at the
    /// [`SUBJECT_SCAN_LEN_MAX`] newest jobs. Freshness and engine version are the caller's call.
    fn latest_ready_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>>;
    /// Usage counters of one key in the quota period starting at `period_start_ms` (zeros if
    /// nothing was recorded).
    fn usage(&self, key_id: &str, period_start_ms: u64) -> StoreResult<UsageRecord>;
    /// Charges one unit of a synchronous operation (a transaction scan: answered in the
    /// request, so never reserved) to `key_id` in the period starting at `period_start_ms`:
    /// `used` and `transaction_scan` +1, durable when it returns. The shared store refuses
    /// when `used + reserved` already reached `limit` (`Charged::Exhausted`, nothing moved);
    /// the embedded one charges, the caller's in-memory reservation having checked the limit,
    /// as at admission.
    fn charge_now(&self, key_id: &str, period_start_ms: u64, limit: u64) -> StoreResult<Charged> {
        self.charge_now_units(key_id, period_start_ms, limit, 1)
    }
    /// `charge_now` of each unit (key id, period start, limit), in order, one answer each: the
    /// scans one listener tick answers (`tick_group`). The embedded store writes them in one
    /// durable write (all charged, or — the write failed — none); by default one at a time.
    fn charge_now_each(&self, units: &[UnitCharge]) -> Vec<StoreResult<Charged>> {
        units.iter().map(|u| self.charge_now_units(&u.key_id, u.period_start_ms, u.limit, u.units)).collect()
    }
    /// `charge_now` of `units` together, in one step: all, or none (`Charged::Exhausted` when
    /// `used + reserved + units` would pass `limit`, for a store that checks it). No default:
    /// charging unit by unit could stop half way, past the limit.
    fn charge_now_units(&self, key_id: &str, period_start_ms: u64, limit: u64, units: u32) -> StoreResult<Charged>;

    /// Live jobs in `state`, oldest first, created before `created_before_ms`, after the
    /// cursor, at most `limit` (≤ [`STORE_PAGE_LEN_MAX`]). `next` is set when more may follow.
    fn live_jobs(
        &self,
        state: LiveState,
        after: Option<&JobCursor>,
        created_before_ms: u64,
        limit: usize,
    ) -> StoreResult<JobPage>;
    /// Deletes up to `limit` finished jobs (and their payloads) completed before `cutoff_ms`,
    /// oldest first. Returns how many were deleted; call again while it returns `limit`.
    fn purge_finished_before(&self, cutoff_ms: u64, limit: usize) -> StoreResult<usize>;

    /// Records the answer of a request that created no job (deduplicated, or a fresh result
    /// reused) unless this account and key already have a live one
    /// ([`IdempotentAnswer::is_live_at`] the new answer's time): then that one is returned and
    /// nothing is written (the first answer stands). Logged like `admit`. Like an answer
    /// written by `admit`, it counts against the account's cap
    /// (`IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX`): past it the account's oldest stored answer is
    /// evicted in the same write (never the key being written), so an account keeps its newest
    /// answers only. An evicted key used again is a new request.
    fn put_answer(&self, answer: &IdempotentAnswer) -> StoreResult<Option<IdempotentAnswer>>;
    /// The answer kept for this account and key digest, if any (expired or not: the caller
    /// compares `created_at_ms` with the window).
    fn get_answer(&self, account: &str, key_digest: &[u8; 32]) -> StoreResult<Option<IdempotentAnswer>>;
    /// Deletes every answer created before `cutoff_ms`, oldest first, in batches of
    /// `batch_len` (≤ [`STORE_PAGE_LEN_MAX`]; each one write), until none is left: one call
    /// always keeps up, however many accumulated. Returns how many time-index entries it took.
    fn purge_answers_before(&self, cutoff_ms: u64, batch_len: usize) -> StoreResult<usize>;
    /// How many answers the account keeps (at most its cap; answers written by a build before
    /// the cap existed are not counted, and expire within `IDEMPOTENCY_TTL_MS`).
    fn answer_count(&self, account: &str) -> StoreResult<u64>;

    /// Finished jobs whose webhook is due at `now_ms` (`Pending`, next attempt at or before
    /// it), soonest due first, after `after` (an entry a previous page ended on), at most
    /// `limit` (≤ [`STORE_PAGE_LEN_MAX`]). A job's callback is in this outbox from the
    /// completion that finished it (the same durable batch) until an attempt records it
    /// `Delivered` or `Failed`. The cursor lets a reader walk the whole due set page by page,
    /// so entries it cannot take now (an account at its in-flight cap) never hide the rest.
    fn due_callbacks(&self, now_ms: u64, after: Option<&DueCursor>, limit: usize) -> StoreResult<DuePage>;
    /// Records a delivery attempt: the finished job's callback, if it is still `expected`,
    /// becomes `callback` (a `Pending` one is due again at its `next_attempt_ms`; a settled one
    /// made `Pending` again — a monitor event redelivered — re-enters the outbox), durably — a
    /// compare-and-set, so of two attempts that read the same callback one records. Else
    /// `StoreError::State`, also when the job is not finished, has no callback or is gone.
    /// Returns the updated record.
    fn record_callback(&self, id: &str, expected: &Callback, callback: &Callback) -> StoreResult<JobRecord>;
    /// The account's pending webhooks (job ids), oldest first — in the order they entered the
    /// outbox — at most `limit` (≤ [`STORE_PAGE_LEN_MAX`]).
    fn pending_callbacks(&self, account: &str, limit: usize) -> StoreResult<Vec<String>>;
    /// Gives up the oldest pending webhooks of `account` past its newest `max`: each is
    /// recorded `Failed` with the reason [`OUTBOX_FULL_REASON`] (a compare-and-set like any
    /// attempt's record, so one settled meanwhile is left as it is) and leaves the outbox.
    /// Returns how many were given up. Called after a completion put a webhook in the outbox,
    /// so an account's outbox holds at most `max` (plus the completions racing this one).
    fn trim_outbox(&self, account: &str, max: usize) -> StoreResult<usize> {
        let pending = self.pending_callbacks(account, max.saturating_add(OUTBOX_TRIM_BATCH_MAX))?;
        let excess = pending.len().saturating_sub(max);
        let mut given_up = 0;
        for id in &pending[..excess] {
            let Some(was) = self.get_job(id)?.and_then(|job| job.callback) else { continue };
            if was.status != CallbackStatus::Pending {
                continue;
            }
            let failed =
                Callback { status: CallbackStatus::Failed, last_error: Some(OUTBOX_FULL_REASON.into()), ..was.clone() };
            match self.record_callback(id, &was, &failed) {
                Ok(_) => given_up += 1,
                Err(StoreError::State { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(given_up)
    }
    /// Attaches `url` as the webhook of the existing job `id` of `account` (a later request
    /// answered by that job, `deduplicated`), in one atomic write, logged like `admit` (never
    /// `fsync`ed: it runs on listener threads; a caller promising power-loss durability waits
    /// for the group commit). A job without a webhook gets `Callback::pending(url)` — due at
    /// `now_ms` and in the outbox at once when the job is finished, else at its completion
    /// ([`Attached::New`]); a job whose webhook is already `url` ([`Attached::Same`]) or another
    /// URL ([`Attached::Other`]) is left as it is. `StoreError::State` when the job is gone
    /// (purged, or its admission undone) or is another account's. The caller trims the
    /// account's outbox afterwards (`trim_outbox`), as after a completion.
    fn attach_callback(&self, id: &str, account: &str, key_id: &str, url: &str, now_ms: u64) -> StoreResult<Attached>;
    /// Writes (creates or replaces) an account's webhook secret, durably.
    fn put_webhook_secret(&self, secret: &WebhookSecret) -> StoreResult<()>;
    /// The account's webhook secret, if one was made.
    fn get_webhook_secret(&self, account: &str) -> StoreResult<Option<WebhookSecret>>;

    /// Writes a batch of feature records (`docs`): all or nothing, durably, each write's
    /// expectation checked as the batch commits — `StoreError::Conflict` when one fails.
    fn write_docs(&self, writes: &[DocWrite]) -> StoreResult<()>;
    /// The record of `kind` at `key`, if any.
    fn get_doc(&self, kind: DocKind, key: &[u8]) -> StoreResult<Option<Doc>>;
    /// Records of `kind` whose keys start with `prefix`, in key order, after `after` (a key a
    /// previous page ended on), at most `limit` (≤ [`STORE_PAGE_LEN_MAX`]).
    fn scan_docs(&self, kind: DocKind, prefix: &[u8], after: Option<&[u8]>, limit: usize) -> StoreResult<Vec<Doc>>;
    /// Records of `kind` whose keys start with `prefix`, in descending key order, before
    /// `before` (a key a previous page ended on: strictly below it), at most `limit` (≤
    /// [`STORE_PAGE_LEN_MAX`]) — newest first over a time-ordered index.
    fn scan_docs_rev(&self, kind: DocKind, prefix: &[u8], before: Option<&[u8]>, limit: usize)
        -> StoreResult<Vec<Doc>>;

    /// Forces everything written so far to stable storage (fsync of the WAL).
    fn sync(&self) -> StoreResult<()>;
    /// The sequence number of the newest logged write: a `sync` begun after reading it covers
    /// every write up to it (what group commit waits on).
    fn logged_sequence(&self) -> u64;
    /// What the store holds on disk and what compaction still has to rewrite (for `/metrics`).
    fn disk_usage(&self) -> StoreResult<crate::metrics::StoreDisk>;
    /// A consistent point-in-time copy of the store in the new directory `dir` (on the store's
    /// file system: hard links), for a backup (`backup::take`). Only the embedded store makes
    /// one: a cluster's is backed up with etcd's own snapshot.
    fn checkpoint(&self, dir: &std::path::Path) -> StoreResult<()> {
        Err(StoreError::Invalid(format!(
            "{}: this store makes no checkpoint (back up etcd with etcdctl snapshot save)",
            dir.display()
        )))
    }
}
