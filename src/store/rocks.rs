//! `RocksStore`: the embedded RocksDB implementation of [`Store`].
//!
//! Owns: the RocksDB handle, its tuned options (shared LRU block cache, bloom filters on the
//! point-lookup column families, LZ4, a small number of background jobs, pipelined WAL
//! writes, a bounded WAL), the schema-version check at open, and the batches each operation
//! writes (see the `store` module docs for the table). Called from listener threads, compute
//! threads and the server's start-up and housekeeping code, all concurrently; `open` runs once,
//! on the main thread, before any thread is pinned.
//!
//! Invariant: every operation that changes a job or a quota counter is exactly one
//! `WriteBatch`, written with the WAL enabled.
//! Invariant: state transitions of one job happen under that job's stripe lock, read the
//! current record first and refuse transitions its state does not allow.
//! Invariant: a database whose version record is absent (and which holds data), unknown or newer
//! is refused before it is opened for writing; one written before the answer tallies existed
//! opens with their two column families added empty (its answers stay uncounted until they
//! expire).
//! Invariant: an account's answer count (`idempotency_accounts`) equals its entries in
//! `idempotency_by_account` and never passes `answers_max`: every batch that adds, replaces,
//! evicts or deletes one of its answers reads and writes the count under the account's stripe
//! (lock order: job stripe, answers gate, account stripe).
//! Invariant: no entry of a time index lies below its floor (`answers_floor_ms`,
//! `done_floor_ms`, `outbox_floor_ms`): writers lower the floor before they write, under the
//! shared gate; a scan raises it only past what it saw, under the exclusive gate.
//! Deliberately absent: persisting the floors (after a restart the first scan of each index
//! starts at its beginning once) and a TTL compaction filter (the purge is explicit).

use crate::auth::record::KeyRecord;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use parking_lot::RwLock;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, DBCompressionType, Options, ReadOptions,
    WriteBatch, WriteOptions, DB,
};

use super::docs::{self, Doc, DocKind, DocWrite};
use super::encoding::{self as enc, AnswerTally};
use super::record::{
    self, check_id, Attached, Callback, CallbackStatus, Completion, IdempotentAnswer, JobCursor, JobError, JobPage,
    JobRecord, JobState, LiveState, Subject, WebhookSecret,
};
use super::usage::{self, UsageDelta};
use super::{
    Charged, DueCursor, DuePage, Store, StoreError, StoreResult, UnitCharge, UsageCarry, BLOCK_CACHE_BYTES_DEFAULT,
    JOB_LOCK_STRIPES, ROCKSDB_BACKGROUND_JOBS_DEFAULT, SCHEMA_VERSION, SCHEMA_VERSIONS_UPGRADED, STORE_ID_BYTES_MAX,
    STORE_PAGE_LEN_MAX, SUBJECT_SCAN_LEN_MAX, WAL_BYTES_MAX_DEFAULT, WRITE_BUFFER_BYTES_DEFAULT,
};
use crate::config::{
    IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX, IDEMPOTENCY_EVICTIONS_PER_WRITE_MAX, KEY_SUCCESSION_HOPS_MAX,
    ROCKSDB_BLOOM_BITS_PER_KEY, ROCKSDB_BYTES_PER_SYNC, ROCKSDB_INFO_LOG_FILES_KEPT, ROCKSDB_INFO_LOG_FILE_BYTES_MAX,
    ROCKSDB_PAYLOAD_BLOCK_BYTES,
};
use crate::limits::quota::UsageRecord;
use crate::metrics::{StoreDisk, StoreWrite, STORE};

const CF_KEYS: &str = "keys";
const CF_JOBS: &str = "jobs";
const CF_LIVE: &str = "jobs_live";
const CF_DONE: &str = "jobs_done";
const CF_SUBJECT: &str = "by_subject";
const CF_ANALYSES: &str = "analyses";
const CF_COMPARISONS: &str = "comparisons";
const CF_USAGE: &str = "usage";
const CF_META: &str = "meta";
const CF_ANSWERS: &str = "idempotency";
const CF_ANSWERS_BY_TIME: &str = "idempotency_by_time";
/// Each account's answers, oldest first (which one the cap evicts). Added after schema 1's
/// first release: an older database gets it (empty) at open.
const CF_ANSWERS_BY_ACCOUNT: &str = "idempotency_by_account";
/// Each account's answer count and oldest answer time ([`AnswerTally`]). Added with the above.
const CF_ANSWER_TALLIES: &str = "idempotency_accounts";
/// The webhook outbox: next attempt BE ‖ job id, for finished jobs whose callback is pending.
const CF_CALLBACKS_DUE: &str = "callbacks_due";
const CF_WEBHOOK_SECRETS: &str = "webhook_secrets";
/// The outbox by account: lp(account) ‖ completion ms BE ‖ job id, an account's pending
/// webhooks oldest first (`trim_outbox`). Added after schema 1 was first released: an older
/// database gets it, empty, at open — its pending webhooks are then outside the per-account
/// bound until delivered or given up, which they are within the retry window.
const CF_CALLBACKS_BY_ACCOUNT: &str = "callbacks_by_account";
/// Feature records (`store::docs`): kind byte ‖ key → revision u64 BE ‖ value. Added with
/// schema 3 (monitors).
const CF_DOCS: &str = "docs";

/// Every column family of schema version 1 (RocksDB's `default` is unused). Families added
/// later come last and are created empty when an older database is opened.
pub const COLUMN_FAMILIES: &[&str] = &[
    CF_KEYS,
    CF_JOBS,
    CF_LIVE,
    CF_DONE,
    CF_SUBJECT,
    CF_ANALYSES,
    CF_COMPARISONS,
    CF_USAGE,
    CF_META,
    CF_ANSWERS,
    CF_ANSWERS_BY_TIME,
    CF_CALLBACKS_DUE,
    CF_WEBHOOK_SECRETS,
    CF_ANSWERS_BY_ACCOUNT,
    CF_ANSWER_TALLIES,
    CF_CALLBACKS_BY_ACCOUNT,
    CF_DOCS,
];
/// Key of the schema version in the `meta` column family (value: u32 big-endian).
pub const META_SCHEMA_VERSION_KEY: &[u8] = b"schema_version";

/// Column families read by point lookups: they get bloom filters.
const POINT_LOOKUP_CFS: &[&str] = &[
    CF_KEYS,
    CF_JOBS,
    CF_ANALYSES,
    CF_COMPARISONS,
    CF_USAGE,
    CF_META,
    CF_ANSWERS,
    CF_WEBHOOK_SECRETS,
    CF_ANSWERS_BY_ACCOUNT,
    CF_ANSWER_TALLIES,
];

/// Tuning and durability of a [`RocksStore`] (defaults from the module constants).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// `fsync` the WAL on every durable write (group-committed). Off: survives a killed process,
    /// not a power loss.
    pub sync_writes: bool,
    /// Shared LRU block cache of all column families.
    pub block_cache_bytes: usize,
    /// Total memtable budget of all column families.
    pub write_buffer_bytes: usize,
    /// WAL size past which RocksDB flushes the column families that hold old WAL files.
    pub wal_bytes_max: u64,
    /// RocksDB background threads for flushes and compactions.
    pub background_jobs: i32,
    /// Idempotent answers kept per account; past it the oldest is evicted
    /// (`IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX`; tests set a small one).
    pub answers_per_account_max: usize,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            sync_writes: false,
            block_cache_bytes: BLOCK_CACHE_BYTES_DEFAULT,
            write_buffer_bytes: WRITE_BUFFER_BYTES_DEFAULT,
            wal_bytes_max: WAL_BYTES_MAX_DEFAULT,
            background_jobs: ROCKSDB_BACKGROUND_JOBS_DEFAULT,
            answers_per_account_max: IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX,
        }
    }
}

/// The RocksDB-backed store. Share it as `Arc<RocksStore>` or `Arc<dyn Store>`.
pub struct RocksStore {
    db: DB,
    /// Writes that acknowledge something to a client or move quota (`sync` as configured).
    durable: WriteOptions,
    /// Never `fsync`ed: writes whose loss a restart repairs (`mark_running`, purge), and the
    /// listener threads' writes (`admit`, `cancel_admission`), whose answers wait for the
    /// group commit when `sync_writes` is on.
    relaxed: WriteOptions,
    /// Stripe locks of job state transitions; they guard no data, only the read-then-write.
    job_locks: Box<[Mutex<()>]>,
    /// Stripe locks of accounts' answers (by account): the read of an account's tally and the
    /// batch that moves it never interleave with another writer of that account. Taken after a
    /// job stripe and the answers gate, never before them.
    account_locks: Box<[Mutex<()>]>,
    /// Every writer of an answer holds it shared; the answer purge holds it exclusively for one
    /// batch (scan, deletes, floor), so nothing lands in the range it deletes meanwhile.
    answers_gate: RwLock<()>,
    /// No `idempotency_by_time` entry is older than this (ms): the purge's scan starts here,
    /// never walking the tombstones of earlier purges. Writers lower it, the purge raises it.
    answers_floor_ms: AtomicU64,
    /// Writers of `jobs_done` and `callbacks_due` hold it shared; their scans hold it
    /// exclusively while they read and raise the floors below.
    index_gate: RwLock<()>,
    /// No `jobs_done` entry is older than this (ms): where the retention purge's scan starts.
    done_floor_ms: AtomicU64,
    /// No `callbacks_due` entry is older than this (ms): where the outbox scan starts.
    outbox_floor_ms: AtomicU64,
    answers_max: usize,
    /// Held by `write_docs` from its reads to its write: expectations are checked against what
    /// the batch replaces.
    docs_lock: Mutex<()>,
    /// The last revision given to a feature record.
    doc_revision: AtomicU64,
}

/// Creates `dir` and its missing parents readable by the owner only (0700): the store holds key
/// digests, accounts and results, and the umask may leave new directories world-readable. An
/// existing directory keeps the mode its operator gave it.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

impl RocksStore {
    /// One durable write charging a unit to each (key id, period start) — ids already checked;
    /// nothing is written when there is none.
    fn write_charges<'k>(&self, units: impl IntoIterator<Item = (&'k str, u64, u32)>) -> StoreResult<()> {
        let usage_cf = self.cf(CF_USAGE)?;
        let mut batch = WriteBatch::default();
        for (key_id, period_start_ms, units) in units.into_iter().filter(|u| u.2 > 0) {
            let delta = usage::encode(&usage::charge_now_units(units));
            batch.merge_cf(usage_cf, enc::usage_key(key_id, period_start_ms), delta);
        }
        if batch.is_empty() {
            return Ok(());
        }
        Ok(self.db.write_opt(batch, &self.durable)?)
    }

    /// Opens (or creates) the store in `dir`. Call before pinning any thread: RocksDB starts
    /// its background threads here and they inherit the caller's CPU affinity.
    pub fn open(dir: &Path, options: &StoreOptions) -> StoreResult<RocksStore> {
        create_private_dir(dir)?;
        let existed = dir.join("CURRENT").exists();
        let found = if existed { read_schema_version(dir)? } else { None };
        if let Some(version) = found.filter(|v| *v != SCHEMA_VERSION && !SCHEMA_VERSIONS_UPGRADED.contains(v)) {
            return Err(StoreError::SchemaVersion { found: version, supported: SCHEMA_VERSION });
        }
        let cache = Cache::new_lru_cache(options.block_cache_bytes);
        let descriptors =
            COLUMN_FAMILIES.iter().map(|name| ColumnFamilyDescriptor::new(*name, cf_options(name, &cache)));
        let db = DB::open_cf_descriptors(&db_options(options), dir, descriptors)?;
        let mut durable = WriteOptions::default();
        durable.set_sync(options.sync_writes);
        let store = RocksStore {
            db,
            durable,
            relaxed: WriteOptions::default(),
            job_locks: (0..JOB_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            account_locks: (0..JOB_LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            answers_gate: RwLock::new(()),
            // 0 after a restart: the first scan of each index starts at its beginning once.
            answers_floor_ms: AtomicU64::new(0),
            index_gate: RwLock::new(()),
            done_floor_ms: AtomicU64::new(0),
            outbox_floor_ms: AtomicU64::new(0),
            answers_max: options.answers_per_account_max,
            docs_lock: Mutex::new(()),
            // Microseconds of the wall clock at open: revisions keep rising across restarts.
            doc_revision: AtomicU64::new(crate::clock::now_unix_ms().saturating_mul(1_000)),
        };
        match found {
            None => store.init_schema()?,
            Some(version) if version != SCHEMA_VERSION => {
                tracing::info!(from = version, to = SCHEMA_VERSION, "store schema upgraded in place");
                store.write_schema_version()?
            }
            Some(_) => {}
        }
        Ok(store)
    }

    /// Writes the version record into a new (or never-initialised, still empty) database.
    fn init_schema(&self) -> StoreResult<()> {
        for name in COLUMN_FAMILIES {
            let mut non_empty = false;
            self.scan(self.cf(name)?, &[], None, |_, _| {
                non_empty = true;
                Ok(false)
            })?;
            if non_empty {
                return Err(StoreError::SchemaVersion { found: 0, supported: SCHEMA_VERSION });
            }
        }
        self.write_schema_version()
    }

    /// Records this build's schema version, synced.
    fn write_schema_version(&self) -> StoreResult<()> {
        let mut sync = WriteOptions::default();
        sync.set_sync(true);
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_META)?, META_SCHEMA_VERSION_KEY, SCHEMA_VERSION.to_be_bytes());
        Ok(self.db.write_opt(batch, &sync)?)
    }

    fn cf(&self, name: &str) -> StoreResult<&ColumnFamily> {
        // Every name in COLUMN_FAMILIES is opened by `open`; a miss means a bug, not bad data.
        self.db.cf_handle(name).ok_or_else(|| StoreError::Corruption(format!("column family {name} not open")))
    }

    fn payload_cf(&self, job: &JobRecord) -> StoreResult<&ColumnFamily> {
        match job.kind {
            super::JobKind::Analysis { .. } => self.cf(CF_ANALYSES),
            super::JobKind::Comparison { .. } => self.cf(CF_COMPARISONS),
        }
    }

    fn lock(&self, id: &str) -> MutexGuard<'_, ()> {
        self.lock_bytes(id.as_bytes())
    }

    fn lock_bytes(&self, key: &[u8]) -> MutexGuard<'_, ()> {
        stripe_lock(&self.job_locks, key)
    }

    /// The stripe of an account's answers (see `account_locks`).
    fn lock_account(&self, account: &str) -> MutexGuard<'_, ()> {
        stripe_lock(&self.account_locks, account.as_bytes())
    }

    fn read_job(&self, id: &str) -> StoreResult<Option<JobRecord>> {
        if check_id("job id", id).is_err() {
            return Ok(None);
        }
        match self.db.get_pinned_cf(self.cf(CF_JOBS)?, id.as_bytes())? {
            Some(value) => Ok(Some(enc::decode_json(&value)?)),
            None => Ok(None),
        }
    }

    /// The job, which must exist and be in one of `allowed` states.
    fn live_job(&self, id: &str, op: &'static str, allowed: &[JobState]) -> StoreResult<JobRecord> {
        let job = self.read_job(id)?;
        match job {
            Some(job) if allowed.contains(&job.state) => Ok(job),
            other => Err(StoreError::State {
                id: id.to_owned(),
                op,
                state: other.map_or("absent", |j| j.state.as_str()).to_owned(),
            }),
        }
    }

    /// Calls `visit(key, value)` over `cf` from `from` (inclusive) up to `upper` (exclusive)
    /// while it returns `Ok(true)`. `from` is also the iterator's lower bound, so RocksDB never
    /// looks at (deleted) keys before it.
    fn scan(
        &self,
        cf: &ColumnFamily,
        from: &[u8],
        upper: Option<Vec<u8>>,
        mut visit: impl FnMut(&[u8], &[u8]) -> StoreResult<bool>,
    ) -> StoreResult<()> {
        let mut read = ReadOptions::default();
        if !from.is_empty() {
            read.set_iterate_lower_bound(from.to_vec());
        }
        if let Some(upper) = upper {
            read.set_iterate_upper_bound(upper);
        }
        let mut it = self.db.raw_iterator_cf_opt(cf, read);
        it.seek(from);
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            if !visit(key, value)? {
                return Ok(());
            }
            it.next();
        }
        Ok(it.status()?)
    }

    /// Writes `batch`, timing it for `metrics::STORE` under `operation`.
    fn write(&self, batch: WriteBatch, options: &WriteOptions, operation: StoreWrite) -> StoreResult<()> {
        let started = Instant::now();
        let written = self.db.write_opt(batch, options);
        STORE.observe_write(operation, u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
        Ok(written?)
    }

    /// Adds `answer` and its two index entries to `batch`, replacing `existing` (the key's
    /// stored answer, expired) and evicting the account's oldest answers past the cap. The
    /// caller holds the answers gate (shared) and the account's stripe, and writes `batch`
    /// before it lets them go.
    fn put_answer_in(
        &self,
        batch: &mut WriteBatch,
        answer: &IdempotentAnswer,
        existing: Option<&IdempotentAnswer>,
    ) -> StoreResult<()> {
        answer.validate()?;
        let (account, digest, at_ms) = (answer.account.as_str(), &answer.key_digest, answer.created_at_ms);
        let key = enc::answer_key(account, digest);
        let mut tally = self.read_tally(account)?;
        // A replaced answer written by this build was counted: the new one takes its place.
        let replaced_counted = match existing {
            Some(old) => self.unindex_answer(batch, old)?,
            None => false,
        };
        if !replaced_counted {
            if tally.count == 0 {
                tally.oldest_ms = at_ms;
            }
            tally.count += 1;
        }
        tally.oldest_ms = tally.oldest_ms.min(at_ms);
        batch.put_cf(self.cf(CF_ANSWERS_BY_TIME)?, enc::answer_time_key(at_ms, &key), []);
        batch.put_cf(self.cf(CF_ANSWERS_BY_ACCOUNT)?, enc::account_answer_key(account, at_ms, digest), []);
        batch.put_cf(self.cf(CF_ANSWERS)?, key, enc::encode_json(answer)?);
        self.evict_oldest(batch, answer, &mut tally)?;
        batch.put_cf(self.cf(CF_ANSWER_TALLIES)?, account.as_bytes(), tally.encode());
        // Under the gate: the purge cannot raise the floor past this entry meanwhile.
        self.answers_floor_ms.fetch_min(at_ms, Ordering::AcqRel);
        Ok(())
    }

    /// Deletes the index entries of a stored answer (not the answer itself). Returns whether it
    /// was counted in its account's tally (answers written before the tally existed are not).
    fn unindex_answer(&self, batch: &mut WriteBatch, old: &IdempotentAnswer) -> StoreResult<bool> {
        let key = enc::answer_key(&old.account, &old.key_digest);
        batch.delete_cf(self.cf(CF_ANSWERS_BY_TIME)?, enc::answer_time_key(old.created_at_ms, &key));
        let entry = enc::account_answer_key(&old.account, old.created_at_ms, &old.key_digest);
        let counted = self.db.get_pinned_cf(self.cf(CF_ANSWERS_BY_ACCOUNT)?, &entry)?.is_some();
        if counted {
            batch.delete_cf(self.cf(CF_ANSWERS_BY_ACCOUNT)?, entry);
        }
        Ok(counted)
    }

    /// Past the cap, deletes the account's oldest stored answers (at most
    /// `IDEMPOTENCY_EVICTIONS_PER_WRITE_MAX`; never the key being written) with their index
    /// entries, and moves the tally's count and oldest time. The scan starts at the tally's
    /// oldest time, so it never walks the tombstones of earlier evictions.
    fn evict_oldest(
        &self,
        batch: &mut WriteBatch,
        answer: &IdempotentAnswer,
        tally: &mut AnswerTally,
    ) -> StoreResult<()> {
        let over = tally.count.saturating_sub(self.answers_max as u64);
        let evict = usize::try_from(over).unwrap_or(usize::MAX).min(IDEMPOTENCY_EVICTIONS_PER_WRITE_MAX);
        if evict == 0 {
            return Ok(());
        }
        let account = answer.account.as_str();
        let prefix = enc::account_answers_prefix(account);
        let from = enc::account_answer_key(account, tally.oldest_ms, &[0; 32]);
        let (mut victims, mut next_oldest_ms) = (Vec::with_capacity(evict), None);
        self.scan(self.cf(CF_ANSWERS_BY_ACCOUNT)?, &from, enc::prefix_end(&prefix), |key, _| {
            let (at_ms, digest) = enc::parse_account_answer_tail(key.get(prefix.len()..).unwrap_or_default())?;
            if digest == answer.key_digest {
                return Ok(true); // the key being written: its old entry goes in this batch
            }
            if victims.len() == evict {
                next_oldest_ms = Some(at_ms);
                return Ok(false);
            }
            victims.push((at_ms, digest));
            Ok(true)
        })?;
        for (at_ms, digest) in &victims {
            let key = enc::answer_key(account, digest);
            batch.delete_cf(self.cf(CF_ANSWERS_BY_ACCOUNT)?, enc::account_answer_key(account, *at_ms, digest));
            batch.delete_cf(self.cf(CF_ANSWERS_BY_TIME)?, enc::answer_time_key(*at_ms, &key));
            if self.read_answer(&key)?.is_some_and(|a| a.created_at_ms == *at_ms) {
                batch.delete_cf(self.cf(CF_ANSWERS)?, key);
            }
        }
        tally.count = tally.count.saturating_sub(victims.len() as u64);
        tally.oldest_ms = next_oldest_ms.unwrap_or(answer.created_at_ms).min(answer.created_at_ms);
        Ok(())
    }

    /// Deletes the answer `job` was admitted with, if the key still holds it, with its index
    /// entries and its count. The caller holds the gate and the account's stripe.
    fn delete_answer_of(&self, batch: &mut WriteBatch, job: &JobRecord, digest: &[u8; 32]) -> StoreResult<()> {
        let key = enc::answer_key(&job.account, digest);
        let Some(answer) = self.read_answer(&key)?.filter(|a| a.job_id == job.id) else { return Ok(()) };
        batch.delete_cf(self.cf(CF_ANSWERS)?, key);
        if self.unindex_answer(batch, &answer)? {
            let mut tally = self.read_tally(&job.account)?;
            tally.count = tally.count.saturating_sub(1);
            self.put_tally(batch, &job.account, &tally)?;
        }
        Ok(())
    }

    fn read_tally(&self, account: &str) -> StoreResult<AnswerTally> {
        match self.db.get_pinned_cf(self.cf(CF_ANSWER_TALLIES)?, account.as_bytes())? {
            Some(value) => AnswerTally::decode(&value),
            None => Ok(AnswerTally::default()),
        }
    }

    /// Writes a tally, or deletes it once the account keeps no answer (the family stays as
    /// small as the set of accounts with answers).
    fn put_tally(&self, batch: &mut WriteBatch, account: &str, tally: &AnswerTally) -> StoreResult<()> {
        let cf = self.cf(CF_ANSWER_TALLIES)?;
        if tally.count == 0 {
            batch.delete_cf(cf, account.as_bytes());
        } else {
            batch.put_cf(cf, account.as_bytes(), tally.encode());
        }
        Ok(())
    }

    /// One batch of the answer purge, under the gate: up to `batch_len` time-index entries from
    /// the floor to `cutoff_ms`, their answers (where the key still holds that answer), account
    /// entries and counts deleted in one `WriteBatch`, the time-index entries by one range
    /// tombstone; then the floor rises past them. Returns how many entries it took.
    fn purge_answer_batch(&self, cutoff_ms: u64, batch_len: usize) -> StoreResult<usize> {
        let _gate = self.answers_gate.write();
        let floor_ms = self.answers_floor_ms.load(Ordering::Acquire);
        let entries = self.time_keys(CF_ANSWERS_BY_TIME, floor_ms, cutoff_ms, batch_len)?;
        let (Some(first), Some(last)) = (entries.first(), entries.last()) else {
            self.answers_floor_ms.store(floor_ms.max(cutoff_ms), Ordering::Release);
            return Ok(0);
        };
        let mut batch = WriteBatch::default();
        let mut tallies: HashMap<String, AnswerTally> = HashMap::new();
        for key in &entries {
            let (at_ms, answer_key) = enc::parse_answer_time_key(key)?;
            // A key answered again after this answer expired holds a newer answer: it stays.
            let Some(answer) = self.read_answer(answer_key)?.filter(|a| a.created_at_ms == at_ms) else { continue };
            batch.delete_cf(self.cf(CF_ANSWERS)?, answer_key);
            let entry = enc::account_answer_key(&answer.account, at_ms, &answer.key_digest);
            if self.db.get_pinned_cf(self.cf(CF_ANSWERS_BY_ACCOUNT)?, &entry)?.is_none() {
                continue; // written before tallies existed: never counted
            }
            batch.delete_cf(self.cf(CF_ANSWERS_BY_ACCOUNT)?, entry);
            let tally = match tallies.entry(answer.account) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let tally = self.read_tally(v.key())?;
                    v.insert(tally)
                }
            };
            tally.count = tally.count.saturating_sub(1);
            tally.oldest_ms = tally.oldest_ms.max(at_ms);
        }
        for (account, tally) in &tallies {
            self.put_tally(&mut batch, account, tally)?;
        }
        batch.delete_range_cf(self.cf(CF_ANSWERS_BY_TIME)?, first.as_slice(), enc::successor(last).as_slice());
        self.write(batch, &self.relaxed, StoreWrite::Purge)?;
        let (last_ms, _) = enc::parse_answer_time_key(last)?;
        let reached_ms = if entries.len() < batch_len { cutoff_ms } else { last_ms };
        self.answers_floor_ms.store(floor_ms.max(reached_ms), Ordering::Release);
        Ok(entries.len())
    }

    /// Up to `limit` (clamped to a page) keys of a time index (keys that start with a BE
    /// millisecond time) in `[from_ms, to_ms)`, oldest first: the scan is bounded on both
    /// sides, so it never walks what was deleted before `from_ms`.
    fn time_keys(&self, cf: &str, from_ms: u64, to_ms: u64, limit: usize) -> StoreResult<Vec<Vec<u8>>> {
        self.time_keys_from(cf, &from_ms.to_be_bytes(), to_ms, limit)
    }

    /// Up to `limit` keys of a time-ordered column family from the key `from` (a lower bound
    /// too) to `to_ms` (exclusive).
    fn time_keys_from(&self, cf: &str, from: &[u8], to_ms: u64, limit: usize) -> StoreResult<Vec<Vec<u8>>> {
        let (limit, upper) = (clamp_page(limit), to_ms.to_be_bytes());
        let mut keys = Vec::new();
        if limit > 0 && from < &upper[..] {
            self.scan(self.cf(cf)?, from, Some(upper.to_vec()), |key, _| {
                keys.push(key.to_vec());
                Ok(keys.len() < limit)
            })?;
        }
        Ok(keys)
    }

    /// Deletes a finished job's entry in the outbox by account.
    fn delete_outbox_account_entry(&self, batch: &mut WriteBatch, job: &JobRecord) -> StoreResult<()> {
        let key = enc::outbox_account_key(&job.account, job.outbox_entered_ms(), &job.id);
        batch.delete_cf(self.cf(CF_CALLBACKS_BY_ACCOUNT)?, key);
        Ok(())
    }

    /// Puts a finished job's pending webhook in the outbox, due at `due_ms`: both entries. The
    /// caller lowers the outbox floor under the index gate before it writes the batch.
    /// A feature record's stored value: a new revision, then `value`.
    fn doc_value(&self, value: &[u8]) -> Vec<u8> {
        let revision = self.doc_revision.fetch_add(1, Ordering::AcqRel) + 1;
        let mut out = Vec::with_capacity(8 + value.len());
        out.extend_from_slice(&revision.to_be_bytes());
        out.extend_from_slice(value);
        out
    }

    /// The event index entry of a completed job that caused an event (in its completion's batch).
    fn put_event_index(&self, batch: &mut WriteBatch, job: &JobRecord) -> StoreResult<()> {
        if let (Some(link), Some(event)) = (&job.monitor, job.event()) {
            let key = docs::event_key(&link.monitor_id, event.created_at_ms, &job.id);
            batch.put_cf(self.cf(CF_DOCS)?, doc_key(DocKind::Event, &key), self.doc_value(&[]));
        }
        Ok(())
    }

    fn put_outbox_entries(&self, batch: &mut WriteBatch, job: &JobRecord, due_ms: u64) -> StoreResult<()> {
        batch.put_cf(self.cf(CF_CALLBACKS_DUE)?, enc::done_key(due_ms, &job.id), []);
        let by_account = enc::outbox_account_key(&job.account, job.outbox_entered_ms(), &job.id);
        batch.put_cf(self.cf(CF_CALLBACKS_BY_ACCOUNT)?, by_account, []);
        Ok(())
    }

    /// Under the index gate: up to `limit` outbox keys before `to_ms`, from the floor or past
    /// the cursor `after`. A scan from the floor raises it to the first key found (or to
    /// `to_ms` when there is none: nothing older is left, and a writer lowers the floor before
    /// it adds an older key); a page after a cursor leaves it (entries before the cursor stay).
    fn scan_outbox(&self, after: Option<&DueCursor>, to_ms: u64, limit: usize) -> StoreResult<Vec<Vec<u8>>> {
        let _gate = self.index_gate.write();
        let floor_ms = self.outbox_floor_ms.load(Ordering::Acquire);
        let Some(cursor) = after else {
            let keys = self.time_keys(CF_CALLBACKS_DUE, floor_ms, to_ms, limit)?;
            if clamp_page(limit) > 0 {
                let reached_ms = match keys.first() {
                    Some(key) => enc::parse_done_key(key)?.0,
                    None => to_ms,
                };
                self.outbox_floor_ms.store(floor_ms.max(reached_ms), Ordering::Release);
            }
            return Ok(keys);
        };
        let from = enc::successor(&enc::done_key(cursor.due_ms, &cursor.id)).max(floor_ms.to_be_bytes().to_vec());
        self.time_keys_from(CF_CALLBACKS_DUE, &from, to_ms, limit)
    }

    fn read_answer(&self, key: &[u8]) -> StoreResult<Option<IdempotentAnswer>> {
        match self.db.get_pinned_cf(self.cf(CF_ANSWERS)?, key)? {
            Some(value) => Ok(Some(enc::decode_json(&value)?)),
            None => Ok(None),
        }
    }

    /// Adds the usage delta of a charged job to `batch` (uncharged jobs move no quota).
    fn merge_usage(&self, batch: &mut WriteBatch, job: &JobRecord, delta: UsageDelta) -> StoreResult<()> {
        if job.charged {
            let key = enc::usage_key(&job.key_id, job.quota_period_start_ms);
            batch.merge_cf(self.cf(CF_USAGE)?, key, usage::encode(&delta));
        }
        Ok(())
    }

    /// Settles a finished job's unit in `batch`: committed (`ready`) or refunded on its key, or,
    /// when that key was rotated since admission, released there and counted on the key at the
    /// end of its rotation chain — as the sink does in memory (`KeyTable::successor_of`).
    fn settle_usage(&self, batch: &mut WriteBatch, job: &JobRecord, ready: bool) -> StoreResult<()> {
        if !job.charged {
            return Ok(());
        }
        let successor = self.successor_of(&job.key_id)?;
        if successor == job.key_id {
            let settled = if ready { usage::commit(job) } else { usage::refund() };
            return self.merge_usage(batch, job, settled);
        }
        self.merge_usage(batch, job, usage::release())?;
        let outcome = if ready { usage::charge(job) } else { usage::refunded() };
        let key = enc::usage_key(&successor, job.quota_period_start_ms);
        batch.merge_cf(self.cf(CF_USAGE)?, key, usage::encode(&outcome));
        Ok(())
    }

    /// The id at the end of `key_id`'s `replaced_by` chain (at most `KEY_SUCCESSION_HOPS_MAX`
    /// links; a link to a key no longer stored ends the chain before it).
    fn successor_of(&self, key_id: &str) -> StoreResult<String> {
        let Some(mut current) = self.get_key(key_id)? else { return Ok(key_id.to_owned()) };
        for _ in 0..KEY_SUCCESSION_HOPS_MAX {
            let Some(next_id) = current.replaced_by.as_ref() else { break };
            let Some(next) = self.get_key(next_id.as_str())? else { break };
            current = next;
        }
        Ok(current.id.as_str().to_owned())
    }

    /// Puts the record and its subject-index state into `batch`.
    fn put_job(&self, batch: &mut WriteBatch, job: &JobRecord) -> StoreResult<()> {
        batch.put_cf(self.cf(CF_JOBS)?, job.id.as_bytes(), enc::encode_json(job)?);
        batch.put_cf(self.cf(CF_SUBJECT)?, enc::subject_key(job), [job.state.byte()]);
        Ok(())
    }

    /// Deletes the live-state index entry of a live job.
    fn delete_live(&self, batch: &mut WriteBatch, job: &JobRecord) -> StoreResult<()> {
        batch.delete_cf(self.cf(CF_LIVE)?, enc::live_key(job.state, job.created_at_ms, &job.id));
        Ok(())
    }

    /// The newest job of a subject group whose index state passes `want`.
    fn newest_in_subject(
        &self,
        account: &str,
        subject: Subject<'_>,
        want: impl Fn(u8) -> bool,
    ) -> StoreResult<Option<JobRecord>> {
        if check_id("account", account).is_err() || check_id("subject", subject.text()).is_err() {
            return Ok(None);
        }
        let prefix = enc::subject_prefix(account, subject);
        let (mut seen, mut found) = (0usize, None);
        self.scan(self.cf(CF_SUBJECT)?, &prefix, enc::prefix_end(&prefix), |key, value| {
            seen += 1;
            if value.first().is_some_and(|s| want(*s)) {
                found = Some(enc::subject_key_id(key, prefix.len())?.to_owned());
                return Ok(false);
            }
            Ok(seen < SUBJECT_SCAN_LEN_MAX)
        })?;
        match found {
            Some(id) => self.read_job(&id),
            None => Ok(None),
        }
    }
}

/// Reads the schema version of an existing database without opening it for writing.
/// `Ok(None)`: no version record and no foreign column family (an unfinished first open).
fn read_schema_version(dir: &Path) -> StoreResult<Option<u32>> {
    let names = DB::list_cf(&Options::default(), dir)?;
    let version = if names.iter().any(|n| n == CF_META) {
        let db = DB::open_cf_for_read_only(&Options::default(), dir, [CF_META], false)?;
        let meta = db.cf_handle(CF_META).ok_or_else(|| StoreError::Corruption("meta not open".into()))?;
        db.get_cf(meta, META_SCHEMA_VERSION_KEY)?.map(|v| decode_version(&v)).transpose()?
    } else {
        None
    };
    let foreign = names.iter().any(|n| n != "default" && !COLUMN_FAMILIES.contains(&n.as_str()));
    match version {
        None if foreign => Err(StoreError::SchemaVersion { found: 0, supported: SCHEMA_VERSION }),
        version => Ok(version),
    }
}

fn decode_version(value: &[u8]) -> StoreResult<u32> {
    let bytes: [u8; 4] =
        value.try_into().map_err(|_| StoreError::Corruption(format!("schema version of {} bytes", value.len())))?;
    Ok(u32::from_be_bytes(bytes))
}

fn db_options(o: &StoreOptions) -> Options {
    let mut opts = Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    opts.set_max_background_jobs(o.background_jobs);
    opts.set_db_write_buffer_size(o.write_buffer_bytes);
    opts.set_max_total_wal_size(o.wal_bytes_max);
    // Concurrent writers: the WAL append of one group overlaps the memtable insert of the last.
    opts.set_enable_pipelined_write(true);
    opts.set_bytes_per_sync(ROCKSDB_BYTES_PER_SYNC);
    opts.set_wal_bytes_per_sync(ROCKSDB_BYTES_PER_SYNC);
    opts.set_keep_log_file_num(ROCKSDB_INFO_LOG_FILES_KEPT);
    opts.set_max_log_file_size(ROCKSDB_INFO_LOG_FILE_BYTES_MAX);
    opts
}

fn cf_options(name: &str, cache: &Cache) -> Options {
    let mut table = BlockBasedOptions::default();
    table.set_block_cache(cache);
    table.set_cache_index_and_filter_blocks(true);
    table.set_pin_l0_filter_and_index_blocks_in_cache(true);
    if POINT_LOOKUP_CFS.contains(&name) {
        table.set_bloom_filter(ROCKSDB_BLOOM_BITS_PER_KEY, false);
    }
    if name == CF_ANALYSES || name == CF_COMPARISONS {
        table.set_block_size(ROCKSDB_PAYLOAD_BLOCK_BYTES);
    }
    let mut opts = Options::default();
    opts.set_block_based_table_factory(&table);
    opts.set_compression_type(DBCompressionType::Lz4);
    if name == CF_USAGE {
        opts.set_merge_operator_associative(usage::MERGE_OPERATOR_NAME, usage::merge);
    }
    opts
}

/// A feature record's key in `docs`: its kind's byte, then its own key.
fn doc_key(kind: DocKind, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + key.len());
    out.push(kind.byte());
    out.extend_from_slice(key);
    out
}

fn doc_revision_of(value: &[u8]) -> StoreResult<u64> {
    let bytes: [u8; 8] = value
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| StoreError::Corruption(format!("a record value of {} bytes", value.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

fn read_doc(key: Vec<u8>, value: &[u8]) -> StoreResult<Doc> {
    Ok(Doc { key, revision: doc_revision_of(value)?, value: value[8..].to_vec() })
}

/// The stripe of `key` in `locks`. The mutexes guard no data, so a poisoned one (a panic
/// elsewhere) is still usable.
fn stripe_lock<'l>(locks: &'l [Mutex<()>], key: &[u8]) -> MutexGuard<'l, ()> {
    let stripe = (fnv1a(key) % locks.len() as u64) as usize;
    locks[stripe].lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// FNV-1a, to spread job ids over the lock stripes (not a security boundary).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

fn clamp_page(limit: usize) -> usize {
    limit.min(STORE_PAGE_LEN_MAX)
}

impl Store for RocksStore {
    fn put_key(&self, key: &KeyRecord) -> StoreResult<()> {
        record::validate_key(key)?;
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_KEYS)?, key.id.as_str().as_bytes(), enc::encode_json(key)?);
        self.write(batch, &self.durable, StoreWrite::Keys)
    }

    fn put_rotation(&self, old: &KeyRecord, new: &KeyRecord, carried: &UsageCarry) -> StoreResult<()> {
        record::validate_key(old)?;
        record::validate_key(new)?;
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_KEYS)?, old.id.as_str().as_bytes(), enc::encode_json(old)?);
        batch.put_cf(self.cf(CF_KEYS)?, new.id.as_str().as_bytes(), enc::encode_json(new)?);
        let key = enc::usage_key(new.id.as_str(), carried.period_start_ms);
        batch.merge_cf(self.cf(CF_USAGE)?, key, usage::encode(&carried.usage));
        self.write(batch, &self.durable, StoreWrite::Keys)
    }

    fn get_key(&self, id: &str) -> StoreResult<Option<KeyRecord>> {
        if check_id("key id", id).is_err() {
            return Ok(None);
        }
        match self.db.get_pinned_cf(self.cf(CF_KEYS)?, id.as_bytes())? {
            Some(value) => Ok(Some(enc::decode_json(&value)?)),
            None => Ok(None),
        }
    }

    fn list_keys(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<KeyRecord>> {
        let limit = clamp_page(limit);
        let from = after.map(|a| enc::successor(a.as_bytes())).unwrap_or_default();
        let mut keys = Vec::new();
        if limit == 0 {
            return Ok(keys);
        }
        self.scan(self.cf(CF_KEYS)?, &from, None, |_, value| {
            keys.push(enc::decode_json(value)?);
            Ok(keys.len() < limit)
        })?;
        Ok(keys)
    }

    fn admit(&self, job: &JobRecord, answer: Option<&IdempotentAnswer>) -> StoreResult<()> {
        job.validate()?;
        if job.state != JobState::Queued || job.started_at_ms.is_some() || job.completed_at_ms.is_some() {
            return Err(StoreError::Invalid(format!("job {} must be admitted QUEUED and unstarted", job.id)));
        }
        if let Some(answer) = answer {
            answer.validate_with(job)?;
        }
        // With an answer, the account's answers move too: gate and stripe until it is written.
        let _answer_guards = answer.map(|a| (self.answers_gate.read(), self.lock_account(&a.account)));
        let mut batch = WriteBatch::default();
        self.put_job(&mut batch, job)?;
        batch.put_cf(self.cf(CF_LIVE)?, enc::live_key(job.state, job.created_at_ms, &job.id), []);
        self.merge_usage(&mut batch, job, usage::reserve())?;
        if let Some(answer) = answer {
            // An expired answer of the key is replaced (admission replays a live one first).
            let existing = self.read_answer(&enc::answer_key(&answer.account, &answer.key_digest))?;
            self.put_answer_in(&mut batch, answer, existing.as_ref())?;
        }
        self.write(batch, &self.relaxed, StoreWrite::Admit)
    }

    fn put_answer(&self, answer: &IdempotentAnswer) -> StoreResult<Option<IdempotentAnswer>> {
        answer.validate()?;
        let key = enc::answer_key(&answer.account, &answer.key_digest);
        // Two first answers of one key (or two writers of one account's tally) never interleave.
        let _gate = self.answers_gate.read();
        let _guard = self.lock_account(&answer.account);
        let existing = self.read_answer(&key)?;
        if let Some(first) = existing.as_ref().filter(|a| a.is_live_at(answer.created_at_ms)) {
            return Ok(Some(first.clone()));
        }
        let mut batch = WriteBatch::default();
        self.put_answer_in(&mut batch, answer, existing.as_ref())?;
        self.write(batch, &self.relaxed, StoreWrite::Answer)?;
        Ok(None)
    }

    fn get_answer(&self, account: &str, key_digest: &[u8; 32]) -> StoreResult<Option<IdempotentAnswer>> {
        if account.is_empty() || account.len() > STORE_ID_BYTES_MAX {
            return Ok(None);
        }
        self.read_answer(&enc::answer_key(account, key_digest))
    }

    fn purge_answers_before(&self, cutoff_ms: u64, batch_len: usize) -> StoreResult<usize> {
        let batch_len = clamp_page(batch_len).max(1);
        let mut purged = 0;
        loop {
            let taken = self.purge_answer_batch(cutoff_ms, batch_len)?;
            purged += taken;
            if taken < batch_len {
                return Ok(purged);
            }
        }
    }

    fn answer_count(&self, account: &str) -> StoreResult<u64> {
        if check_id("account", account).is_err() {
            return Ok(0);
        }
        Ok(self.read_tally(account)?.count)
    }

    fn cancel_admission(&self, id: &str) -> StoreResult<()> {
        let _guard = self.lock(id);
        let job = self.live_job(id, "cancel", &[JobState::Queued])?;
        let mut batch = WriteBatch::default();
        batch.delete_cf(self.cf(CF_JOBS)?, job.id.as_bytes());
        batch.delete_cf(self.cf(CF_SUBJECT)?, enc::subject_key(&job));
        self.delete_live(&mut batch, &job)?;
        self.merge_usage(&mut batch, &job, usage::release())?;
        let _answer_guards =
            job.idempotency_digest.map(|_| (self.answers_gate.read(), self.lock_account(&job.account)));
        if let Some(digest) = &job.idempotency_digest {
            self.delete_answer_of(&mut batch, &job, digest)?;
        }
        self.write(batch, &self.relaxed, StoreWrite::Cancel)
    }

    fn mark_running(&self, id: &str, started_at_ms: u64) -> StoreResult<JobRecord> {
        let _guard = self.lock(id);
        let job = self.live_job(id, "start", &[JobState::Queued, JobState::Running])?;
        let mut batch = WriteBatch::default();
        self.delete_live(&mut batch, &job)?;
        let starts = job.starts.saturating_add(1);
        let running = JobRecord { state: JobState::Running, started_at_ms: Some(started_at_ms), starts, ..job };
        batch.put_cf(self.cf(CF_LIVE)?, enc::live_key(running.state, running.created_at_ms, &running.id), []);
        self.put_job(&mut batch, &running)?;
        self.write(batch, &self.relaxed, StoreWrite::Start)?;
        Ok(running)
    }

    fn complete(&self, id: &str, completed_at_ms: u64, outcome: &Completion) -> StoreResult<JobRecord> {
        outcome.validate()?;
        let _guard = self.lock(id);
        let job = self.live_job(id, "complete", &[JobState::Queued, JobState::Running])?;
        let mut batch = WriteBatch::default();
        self.delete_live(&mut batch, &job)?;
        batch.put_cf(self.cf(CF_DONE)?, enc::done_key(completed_at_ms, &job.id), []);
        let mut done = JobRecord { completed_at_ms: Some(completed_at_ms), ..job };
        match outcome {
            Completion::Ready { payload_json, engine_version, event, signature } => {
                batch.put_cf(self.payload_cf(&done)?, done.id.as_bytes(), enc::encode_raw(payload_json));
                done.state = JobState::Ready;
                done.signature = signature.clone();
                done.engine_version = engine_version.clone();
                self.settle_usage(&mut batch, &done, true)?;
                done = done.with_event(event.as_ref());
                self.put_event_index(&mut batch, &done)?;
            }
            Completion::Failed { code, message } => {
                done.state = JobState::Failed;
                done.error = Some(JobError { code: code.clone(), message: message.clone() });
                self.settle_usage(&mut batch, &done, false)?;
                done = done.with_event(None);
            }
        }
        // The webhook enters the outbox with the completion: due at once.
        if let Some(callback) = done.callback.as_mut().filter(|c| c.status == CallbackStatus::Pending) {
            callback.next_attempt_ms = completed_at_ms;
            self.put_outbox_entries(&mut batch, &done, completed_at_ms)?;
        }
        self.put_job(&mut batch, &done)?;
        // Shared gate: no index scan raises a floor past these entries before they are written.
        let _gate = self.index_gate.read();
        self.done_floor_ms.fetch_min(completed_at_ms, Ordering::AcqRel);
        if done.callback.as_ref().is_some_and(|c| c.status == CallbackStatus::Pending) {
            self.outbox_floor_ms.fetch_min(completed_at_ms, Ordering::AcqRel);
        }
        self.write(batch, &self.durable, StoreWrite::Complete)?;
        Ok(done)
    }

    fn get_job(&self, id: &str) -> StoreResult<Option<JobRecord>> {
        self.read_job(id)
    }

    fn get_result(&self, job: &JobRecord) -> StoreResult<Option<Vec<u8>>> {
        if job.state != JobState::Ready || check_id("job id", &job.id).is_err() {
            return Ok(None);
        }
        match self.db.get_pinned_cf(self.payload_cf(job)?, job.id.as_bytes())? {
            Some(value) => Ok(Some(enc::strip_format(&value)?.to_vec())),
            None => Ok(None),
        }
    }

    fn latest_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>> {
        self.newest_in_subject(account, subject, |_| true)
    }

    fn latest_ready_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>> {
        self.newest_in_subject(account, subject, |state| state == JobState::Ready.byte())
    }

    fn usage(&self, key_id: &str, period_start_ms: u64) -> StoreResult<UsageRecord> {
        if key_id.is_empty() || key_id.len() > STORE_ID_BYTES_MAX {
            return Ok(UsageRecord::default());
        }
        match self.db.get_pinned_cf(self.cf(CF_USAGE)?, enc::usage_key(key_id, period_start_ms))? {
            Some(value) => usage::decode(&value),
            None => Ok(UsageRecord::default()),
        }
    }

    fn charge_now_units(&self, key_id: &str, period_start_ms: u64, _limit: u64, units: u32) -> StoreResult<Charged> {
        check_id("key id", key_id)?;
        self.write_charges([(key_id, period_start_ms, units)])?;
        Ok(Charged::Done { usage: None })
    }

    fn charge_now_each(&self, units: &[UnitCharge]) -> Vec<StoreResult<Charged>> {
        // A unit whose key id breaks the store's rules is refused alone; the rest are one write.
        let checked: Vec<StoreResult<()>> = units.iter().map(|u| check_id("key id", &u.key_id)).collect();
        let valid = units.iter().zip(&checked).filter(|(_, ok)| ok.is_ok());
        let written = self.write_charges(valid.map(|(u, _)| (u.key_id.as_str(), u.period_start_ms, u.units)));
        checked
            .into_iter()
            .map(|ok| ok.and_then(|()| written.clone()).map(|()| Charged::Done { usage: None }))
            .collect()
    }

    fn live_jobs(
        &self,
        state: LiveState,
        after: Option<&JobCursor>,
        created_before_ms: u64,
        limit: usize,
    ) -> StoreResult<JobPage> {
        let (state, limit) = (state.state(), clamp_page(limit));
        let from = match after {
            Some(c) => enc::successor(&enc::live_key(state, c.created_at_ms, &c.id)),
            None => vec![state.byte()],
        };
        let upper = enc::live_key(state, created_before_ms, "");
        let mut ids = Vec::new();
        if limit > 0 {
            self.scan(self.cf(CF_LIVE)?, &from, Some(upper), |key, _| {
                let (created_at_ms, id) = enc::parse_live_key(key)?;
                ids.push(JobCursor { created_at_ms, id: id.to_owned() });
                Ok(ids.len() < limit)
            })?;
        }
        let next = if ids.len() == limit { ids.last().cloned() } else { None };
        let mut jobs = Vec::with_capacity(ids.len());
        for cursor in &ids {
            match self.read_job(&cursor.id)? {
                Some(job) => jobs.push(job),
                // Index and record are written in one batch; a gap means outside damage.
                None => tracing::error!(id = %cursor.id, "live index entry without a job record; skipped"),
            }
        }
        Ok(JobPage { jobs, next })
    }

    fn purge_finished_before(&self, cutoff_ms: u64, limit: usize) -> StoreResult<usize> {
        // Exclusive for the page (≤ `limit` jobs): no completion lands in the range it deletes,
        // so the floor may rise past it afterwards.
        let _gate = self.index_gate.write();
        let (floor_ms, limit) = (self.done_floor_ms.load(Ordering::Acquire), clamp_page(limit));
        let entries = self.time_keys(CF_DONE, floor_ms, cutoff_ms, limit)?;
        let mut batch = WriteBatch::default();
        for key in &entries {
            let (_, id) = enc::parse_done_key(key)?;
            batch.delete_cf(self.cf(CF_DONE)?, key);
            if let Some(job) = self.read_job(id)?.filter(|j| j.state.is_finished()) {
                batch.delete_cf(self.cf(CF_JOBS)?, job.id.as_bytes());
                batch.delete_cf(self.cf(CF_SUBJECT)?, enc::subject_key(&job));
                batch.delete_cf(self.payload_cf(&job)?, job.id.as_bytes());
                if let Some(callback) = &job.callback {
                    batch.delete_cf(self.cf(CF_CALLBACKS_DUE)?, enc::done_key(callback.next_attempt_ms, &job.id));
                    self.delete_outbox_account_entry(&mut batch, &job)?;
                }
                if let (Some(link), Some(event)) = (&job.monitor, job.event()) {
                    let key = docs::event_key(&link.monitor_id, event.created_at_ms, &job.id);
                    batch.delete_cf(self.cf(CF_DOCS)?, doc_key(DocKind::Event, &key));
                }
            }
        }
        self.write(batch, &self.relaxed, StoreWrite::Purge)?;
        let reached_ms = match entries.last() {
            Some(last) if entries.len() == limit => enc::parse_done_key(last)?.0,
            _ if limit > 0 => cutoff_ms,
            _ => floor_ms,
        };
        self.done_floor_ms.store(floor_ms.max(reached_ms), Ordering::Release);
        Ok(entries.len())
    }

    fn due_callbacks(&self, now_ms: u64, after: Option<&DueCursor>, limit: usize) -> StoreResult<DuePage> {
        let entries = self.scan_outbox(after, now_ms.saturating_add(1), limit)?;
        let full = entries.len() >= clamp_page(limit) && !entries.is_empty();
        let next = entries.last().filter(|_| full).map(|key| DueCursor::of_key(key)).transpose()?;
        let mut jobs = Vec::with_capacity(entries.len());
        for key in &entries {
            let (_, id) = enc::parse_done_key(key)?;
            match self.read_job(id)? {
                Some(job) => jobs.push(job),
                None => tracing::error!(%id, "outbox entry without a job record; skipped"),
            }
        }
        Ok(DuePage { jobs, next })
    }

    fn record_callback(&self, id: &str, expected: &Callback, callback: &Callback) -> StoreResult<JobRecord> {
        let _guard = self.lock(id);
        // Shared gate, taken before the read (as `attach_callback` does): the retention purge
        // cannot delete the job between the read and the write, which would write it back; nor
        // can the outbox scan raise its floor past the new entry meanwhile.
        let _gate = self.index_gate.read();
        let job = self.live_job(id, "record a callback", &[JobState::Ready, JobState::Failed])?;
        let Some(was) = job.callback.as_ref().filter(|was| *was == expected) else {
            return Err(record::callback_moved(id, job.callback.as_ref()));
        };
        let mut batch = WriteBatch::default();
        batch.delete_cf(self.cf(CF_CALLBACKS_DUE)?, enc::done_key(was.next_attempt_ms, id));
        if callback.status == CallbackStatus::Pending {
            batch.put_cf(self.cf(CF_CALLBACKS_DUE)?, enc::done_key(callback.next_attempt_ms, id), []);
        } else {
            self.delete_outbox_account_entry(&mut batch, &job)?;
        }
        let updated = JobRecord { callback: Some(callback.clone()), ..job };
        // A settled webhook sent again (a monitor event's redelivery) re-enters the outbox.
        if was.status != CallbackStatus::Pending && callback.status == CallbackStatus::Pending {
            self.put_outbox_entries(&mut batch, &updated, callback.next_attempt_ms)?;
        }
        self.put_job(&mut batch, &updated)?;
        if callback.status == CallbackStatus::Pending {
            self.outbox_floor_ms.fetch_min(callback.next_attempt_ms, Ordering::AcqRel);
        }
        self.write(batch, &self.durable, StoreWrite::Callback)?;
        Ok(updated)
    }

    fn attach_callback(&self, id: &str, account: &str, key_id: &str, url: &str, now_ms: u64) -> StoreResult<Attached> {
        let _guard = self.lock(id);
        // Shared gate, taken before the read: the retention purge (which holds it exclusively,
        // without the job's lock) cannot delete the job between the read and the write, which
        // would write it back; nor can the outbox scan raise its floor past the new entry.
        let _gate = self.index_gate.read();
        let attached = record::attachable(id, account, self.read_job(id)?)?.attach_callback(key_id, url, now_ms);
        let Attached::New(job) = &attached else { return Ok(attached) };
        job.validate()?;
        let mut batch = WriteBatch::default();
        if job.state.is_finished() {
            self.put_outbox_entries(&mut batch, job, now_ms)?;
        }
        batch.put_cf(self.cf(CF_JOBS)?, job.id.as_bytes(), enc::encode_json(job)?);
        self.outbox_floor_ms.fetch_min(now_ms, Ordering::AcqRel);
        self.write(batch, &self.relaxed, StoreWrite::Callback)?;
        Ok(attached)
    }

    fn pending_callbacks(&self, account: &str, limit: usize) -> StoreResult<Vec<String>> {
        let limit = clamp_page(limit);
        if limit == 0 || check_id("account", account).is_err() {
            return Ok(Vec::new());
        }
        let prefix = enc::outbox_account_prefix(account);
        let mut ids = Vec::new();
        self.scan(self.cf(CF_CALLBACKS_BY_ACCOUNT)?, &prefix, enc::prefix_end(&prefix), |key, _| {
            ids.push(enc::parse_outbox_account_key(key, prefix.len())?.to_owned());
            Ok(ids.len() < limit)
        })?;
        Ok(ids)
    }

    fn put_webhook_secret(&self, secret: &WebhookSecret) -> StoreResult<()> {
        secret.validate()?;
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_WEBHOOK_SECRETS)?, secret.account.as_bytes(), enc::encode_json(secret)?);
        self.write(batch, &self.durable, StoreWrite::Keys)
    }

    fn get_webhook_secret(&self, account: &str) -> StoreResult<Option<WebhookSecret>> {
        if check_id("account", account).is_err() {
            return Ok(None);
        }
        match self.db.get_pinned_cf(self.cf(CF_WEBHOOK_SECRETS)?, account.as_bytes())? {
            Some(value) => Ok(Some(enc::decode_json(&value)?)),
            None => Ok(None),
        }
    }

    fn write_docs(&self, writes: &[DocWrite]) -> StoreResult<()> {
        docs::validate(writes)?;
        let _guard = self.docs_lock.lock();
        let cf = self.cf(CF_DOCS)?;
        let mut batch = WriteBatch::default();
        for write in writes {
            let key = doc_key(write.kind, &write.key);
            let current = self.db.get_pinned_cf(cf, &key)?.map(|v| doc_revision_of(&v)).transpose()?;
            if !docs::meets(write.expect, current) {
                return Err(docs::conflict(write));
            }
            match &write.value {
                Some(value) => batch.put_cf(cf, &key, self.doc_value(value)),
                None => batch.delete_cf(cf, &key),
            }
        }
        self.write(batch, &self.durable, StoreWrite::Docs)
    }

    fn get_doc(&self, kind: DocKind, key: &[u8]) -> StoreResult<Option<Doc>> {
        if docs::check_key(key).is_err() {
            return Ok(None);
        }
        match self.db.get_pinned_cf(self.cf(CF_DOCS)?, doc_key(kind, key))? {
            Some(value) => Ok(Some(read_doc(key.to_vec(), &value)?)),
            None => Ok(None),
        }
    }

    fn scan_docs(&self, kind: DocKind, prefix: &[u8], after: Option<&[u8]>, limit: usize) -> StoreResult<Vec<Doc>> {
        let limit = docs::page_len(limit);
        let start = doc_key(kind, prefix);
        let from = match after {
            Some(after) => enc::successor(&doc_key(kind, after)),
            None => start.clone(),
        };
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        self.scan(self.cf(CF_DOCS)?, &from, enc::prefix_end(&start), |key, value| {
            out.push(read_doc(key[1..].to_vec(), value)?);
            Ok(out.len() < limit)
        })?;
        Ok(out)
    }

    fn scan_docs_rev(
        &self,
        kind: DocKind,
        prefix: &[u8],
        before: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let limit = docs::page_len(limit);
        let start = doc_key(kind, prefix);
        // Strictly below `before`, else below everything under the prefix (the kind's byte is
        // never 0xFF, so the prefix always has an end).
        let upper = match before {
            Some(before) => Some(doc_key(kind, before)),
            None => enc::prefix_end(&start),
        };
        let mut out = Vec::new();
        if limit == 0 {
            return Ok(out);
        }
        let mut read = ReadOptions::default();
        read.set_iterate_lower_bound(start.clone());
        if let Some(upper) = upper {
            read.set_iterate_upper_bound(upper);
        }
        let mut it = self.db.raw_iterator_cf_opt(self.cf(CF_DOCS)?, read);
        it.seek_to_last();
        while let (Some(key), Some(value)) = (it.key(), it.value()) {
            out.push(read_doc(key[1..].to_vec(), value)?);
            if out.len() == limit {
                return Ok(out);
            }
            it.prev();
        }
        it.status()?;
        Ok(out)
    }

    fn sync(&self) -> StoreResult<()> {
        Ok(self.db.flush_wal(true)?)
    }

    fn logged_sequence(&self) -> u64 {
        self.db.latest_sequence_number()
    }

    /// RocksDB's checkpoint: the memtables flushed, then every live file hard-linked (copied
    /// across file systems) into `dir`, with a manifest of exactly those files.
    fn checkpoint(&self, dir: &Path) -> StoreResult<()> {
        Ok(rocksdb::checkpoint::Checkpoint::new(&self.db)?.create_checkpoint(dir)?)
    }

    fn disk_usage(&self) -> StoreResult<StoreDisk> {
        let mut disk = StoreDisk::default();
        for name in COLUMN_FAMILIES {
            let cf = self.cf(name)?;
            let property = |key: &str| self.db.property_int_value_cf(cf, key).map(Option::unwrap_or_default);
            disk.bytes = disk.bytes.saturating_add(property("rocksdb.total-sst-files-size")?);
            let pending = property("rocksdb.estimate-pending-compaction-bytes")?;
            disk.pending_compaction_bytes = disk.pending_compaction_bytes.saturating_add(pending);
        }
        // The WAL files (`*.log`), a few at most (`WAL_BYTES_MAX_DEFAULT` bounds them).
        for entry in std::fs::read_dir(self.db.path())?.flatten() {
            if entry.path().extension().is_some_and(|e| e == "log") {
                disk.bytes = disk.bytes.saturating_add(entry.metadata().map_or(0, |m| m.len()));
            }
        }
        Ok(disk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A schema-1 store (version record 1, a 41-byte usage value) opens: the version is
    /// rewritten to this build's, the old value is read as it is and new deltas merge into it.
    #[test]
    fn a_schema_1_store_is_upgraded_in_place_and_its_usage_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (key_id, period_ms) = ("key_1", 1_800_000_000_000);
        {
            let store = RocksStore::open(dir.path(), &StoreOptions::default()).expect("store");
            let mut v1 = vec![enc::FORMAT_V1];
            for counter in [3i64, 1, 0, 2, 1] {
                v1.extend(counter.to_le_bytes());
            }
            let usage_cf = store.cf(CF_USAGE).expect("usage");
            store.db.put_cf(usage_cf, enc::usage_key(key_id, period_ms), v1).expect("v1 value");
            let meta = store.cf(CF_META).expect("meta");
            store.db.put_cf(meta, META_SCHEMA_VERSION_KEY, 1u32.to_be_bytes()).expect("version 1");
        }
        let store = RocksStore::open(dir.path(), &StoreOptions::default()).expect("a schema-1 store opens");
        let version = store.db.get_cf(store.cf(CF_META).expect("meta"), META_SCHEMA_VERSION_KEY).expect("read");
        assert_eq!(version.as_deref(), Some(&SCHEMA_VERSION.to_be_bytes()[..]));
        let old = UsageRecord { used: 3, reserved: 1, wallet_analysis: 2, comparison: 1, ..UsageRecord::default() };
        assert_eq!(store.usage(key_id, period_ms).expect("usage"), old);
        let usage_cf = store.cf(CF_USAGE).expect("usage");
        let delta = usage::charge_now_units(1);
        store.db.merge_cf(usage_cf, enc::usage_key(key_id, period_ms), usage::encode(&delta)).expect("merge");
        let mut now = old;
        now.add(&delta);
        assert_eq!(store.usage(key_id, period_ms).expect("usage"), now);
        assert_eq!(now.transaction_scan, 1);
    }

    #[test]
    fn stripes_spread_ids() {
        let stripes: std::collections::HashSet<u64> =
            (0..256).map(|i| fnv1a(format!("an_{i}").as_bytes()) % JOB_LOCK_STRIPES as u64).collect();
        assert!(stripes.len() > JOB_LOCK_STRIPES / 2);
    }

    #[test]
    fn the_store_and_its_missing_parents_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("data").join("db");
        let _store = RocksStore::open(&db, &StoreOptions::default()).expect("store");
        for path in [dir.path().join("data"), db] {
            let mode = std::fs::metadata(&path).expect("metadata").permissions().mode();
            assert_eq!(mode & 0o077, 0, "{} is {mode:o}: group and others must have no access", path.display());
        }
    }

    #[test]
    fn version_record_is_four_bytes() {
        assert_eq!(decode_version(&7u32.to_be_bytes()).ok(), Some(7));
        assert!(decode_version(&[1, 2]).is_err());
    }
}
