//! Finished jobs kept in memory: what a poll of a READY or FAILED job, and the reuse of a fresh
//! result, read instead of RocksDB.
//!
//! Owns: `FinishedJobs`, a bounded cache of finished jobs by id (record and payload) and of the
//! newest finished and newest READY job of each `(account, subject)` (ids only), and
//! `StoredJob`, a job as the store has it with its payload when READY. Filled by the sink when a
//! job finishes — before the job leaves the status index, so a poll never misses both — and by
//! readers on a miss (read-through from the store). Shared by listener threads (polls,
//! admission) and compute threads (the sink); every call holds one shard's mutex for a few
//! hash-map steps, never across a store read.
//!
//! Invariant: a finished job never changes (READY and FAILED are final) but for its webhook —
//! a later request may attach one, and its delivery moves on — so an entry by id is never
//! stale but in its `callback`, which polls read again while it is pending and which an entry
//! never loses (a record without one does not replace a record with one). It can only be
//! purged: entries completed before the retention purge's cutoff are not served
//! (`purge_before` raises the cutoff before the store deletes anything), so a purged job is
//! never answered from memory.
//! Invariant: the newest-per-subject entries only move forward (insert-if-newer by creation
//! time, then id), so a reader that read the store before a completion cannot replace the
//! completion's entry with an older job.
//! Invariant: bounded: payload and record bytes by `bytes_max` and entries by `entries_max`,
//! per map, least recently used evicted first. An entry larger than a shard's byte budget is not
//! kept.
//! Deliberately absent: live jobs (the status index has them), negative entries (a miss always
//! asks the store), and the jobs another process finished: with several nodes over one store
//! (issue #14) each node's cache is filled only by its own completions and by read-through.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use lru::LruCache;
use parking_lot::Mutex;

use crate::config::FINISHED_CACHE_SHARDS;
use crate::store::{JobRecord, JobState, Store, StoreResult, Subject};

/// A job as the store has it, with its payload when it is READY.
#[derive(Debug, Clone)]
pub struct StoredJob {
    pub record: JobRecord,
    /// The exact JSON the engine produced; `Some` exactly when `record.state` is READY.
    pub payload: Option<Bytes>,
    /// The API's whole poll answer for this job, made by the first poll that needs it and then
    /// reused: a finished job's answer never changes. Opaque here (the API owns its format).
    pub poll_body: OnceLock<Bytes>,
}

impl PartialEq for StoredJob {
    /// The same job with the same payload (the memoized answer is derived from them).
    fn eq(&self, other: &Self) -> bool {
        self.record == other.record && self.payload == other.payload
    }
}

impl Eq for StoredJob {}

impl StoredJob {
    pub fn new(record: JobRecord, payload: Option<Bytes>) -> StoredJob {
        StoredJob { record, payload, poll_body: OnceLock::new() }
    }

    /// Bytes this entry may hold, for the cache's budget: the payload twice (it is also inside
    /// the memoized answer), the record's strings and a fixed allowance for the rest.
    fn weight_bytes(&self) -> usize {
        const RECORD_FIXED_BYTES: usize = 512;
        let r = &self.record;
        let error = r.error.as_ref().map_or(0, |e| e.code.len() + e.message.len());
        let strings = r.id.len() + r.account.len() + r.key_id.len() + r.engine_version.len() + error;
        2 * self.payload.as_ref().map_or(0, Bytes::len) + 2 * strings + RECORD_FIXED_BYTES
    }
}

/// The newest job of one `(account, subject)` in one slot (finished, or READY).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Newest {
    created_at_ms: u64,
    completed_at_ms: u64,
    id: Box<str>,
}

impl Newest {
    fn of(record: &JobRecord) -> Newest {
        Newest {
            created_at_ms: record.created_at_ms,
            completed_at_ms: record.completed_at_ms.unwrap_or(0),
            id: record.id.as_str().into(),
        }
    }

    fn is_newer_than(&self, other: &Newest) -> bool {
        (self.created_at_ms, &self.id) > (other.created_at_ms, &other.id)
    }
}

#[derive(Debug, Default, Clone)]
struct SubjectEntry {
    finished: Option<Newest>,
    ready: Option<Newest>,
}

/// Which of a subject's newest jobs a caller wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Finished,
    Ready,
}

/// `(account, subject kind, wallet or pair id)`.
type SubjectKey = (Box<str>, u8, Box<str>);

fn subject_key(account: &str, subject: Subject<'_>) -> SubjectKey {
    let (kind, text) = match subject {
        Subject::Wallet(text) => (b'w', text),
        Subject::Pair(text) => (b'p', text),
    };
    (account.into(), kind, text.into())
}

/// One shard of one map: an LRU with a byte budget.
struct Shard<K: Hash + Eq, V> {
    entries: LruCache<K, (V, usize)>,
    bytes: usize,
}

/// A map split into `FINISHED_CACHE_SHARDS` LRU shards, each behind its own mutex.
struct Sharded<K: Hash + Eq, V> {
    shards: Box<[Mutex<Shard<K, V>>]>,
    hash_key: RandomState,
    shard_bytes_max: usize,
    shard_entries_max: usize,
}

impl<K: Hash + Eq, V: Clone> Sharded<K, V> {
    fn new(bytes_max: usize, entries_max: usize) -> Self {
        let shards = (0..FINISHED_CACHE_SHARDS)
            .map(|_| Mutex::new(Shard { entries: LruCache::unbounded(), bytes: 0 }))
            .collect();
        Sharded {
            shards,
            hash_key: RandomState::new(),
            shard_bytes_max: bytes_max / FINISHED_CACHE_SHARDS,
            shard_entries_max: (entries_max / FINISHED_CACHE_SHARDS).max(1),
        }
    }

    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> &Mutex<Shard<K, V>> {
        // The remainder is below the shard count, so the cast cannot truncate.
        &self.shards[(self.hash_key.hash_one(key) % self.shards.len() as u64) as usize]
    }

    fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard(key).lock().entries.get(key).map(|(value, _)| value.clone())
    }

    fn remove<Q>(&self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut shard = self.shard(key).lock();
        if let Some((_, weight)) = shard.entries.pop(key) {
            shard.bytes -= weight;
        }
    }

    /// Replaces the value of `key` with `update(current)`, unless it returns `None`; then
    /// evicts the least recently used entries while the shard is over its budgets.
    fn upsert(&self, key: K, weight: usize, update: impl FnOnce(Option<&V>) -> Option<V>) {
        if weight > self.shard_bytes_max {
            return;
        }
        let mut shard = self.shard(&key).lock();
        let Some(value) = update(shard.entries.peek(&key).map(|(value, _)| value)) else { return };
        if let Some((_, (_, old_weight))) = shard.entries.push(key, (value, weight)) {
            // `push` returns the replaced value of the same key (or an evicted one; the map is
            // unbounded, so only the former).
            shard.bytes -= old_weight;
        }
        shard.bytes += weight;
        while shard.bytes > self.shard_bytes_max || shard.entries.len() > self.shard_entries_max {
            let Some((_, (_, evicted))) = shard.entries.pop_lru() else { break };
            shard.bytes -= evicted;
        }
    }
}

/// Finished jobs by id, and the newest ones per `(account, subject)`.
pub struct FinishedJobs {
    by_id: Sharded<Box<str>, Arc<StoredJob>>,
    newest: Sharded<SubjectKey, SubjectEntry>,
    /// Jobs completed before this were purged (or are about to be): never served.
    purged_before_ms: AtomicU64,
}

/// Bytes charged for one newest-per-subject entry (its key and two ids).
const SUBJECT_ENTRY_BYTES: usize = 256;

impl FinishedJobs {
    /// A cache of at most `bytes_max` bytes and `entries_max` jobs (and as many subjects).
    pub fn new(bytes_max: usize, entries_max: usize) -> FinishedJobs {
        FinishedJobs {
            by_id: Sharded::new(bytes_max, entries_max),
            newest: Sharded::new(entries_max.saturating_mul(SUBJECT_ENTRY_BYTES), entries_max),
            purged_before_ms: AtomicU64::new(0),
        }
    }

    /// Records a job that just finished (the sink, after the store wrote it).
    pub fn keep_finished(&self, job: StoredJob) -> Arc<StoredJob> {
        debug_assert!(job.record.state.is_finished(), "only finished jobs are cached");
        debug_assert_eq!(job.payload.is_some(), job.record.state == JobState::Ready);
        let job = Arc::new(job);
        self.keep(Arc::clone(&job));
        job
    }

    /// No job completed before `cutoff_ms` is served from now on; call before the store purges.
    pub fn purge_before(&self, cutoff_ms: u64) {
        self.purged_before_ms.fetch_max(cutoff_ms, Ordering::AcqRel);
    }

    /// The job with this id (any state, as `Store::get_job`): a finished one from memory, or
    /// read from the store and kept; a live one (which the status index did not have: a job
    /// waiting in the recovery backlog) is returned without payload and not kept. `None` when
    /// the store has no such job, or its payload was purged meanwhile.
    pub fn job(&self, store: &dyn Store, id: &str) -> StoreResult<Option<Arc<StoredJob>>> {
        if let Some(job) = self.by_id.get(id) {
            if self.servable(&job.record) {
                return Ok(Some(job));
            }
            self.by_id.remove(id);
        }
        match store.get_job(id)? {
            Some(record) => self.loaded(store, record),
            None => Ok(None),
        }
    }

    /// A finished job from memory only, if still servable (a cluster node reads etcd itself,
    /// without blocking, and keeps what it read with `keep_finished`).
    pub fn cached(&self, id: &str) -> Option<Arc<StoredJob>> {
        self.by_id.get(id).filter(|job| self.servable(&job.record))
    }

    /// The newest job of the account for this wallet or pair (any state, as
    /// `Store::latest_for`): a finished one from memory when known, else from the store. While
    /// `recovering`, the store is asked first: a job a stopped process left live is newer than
    /// anything memory knows of that subject.
    pub fn latest(
        &self,
        store: &dyn Store,
        account: &str,
        subject: Subject<'_>,
        recovering: bool,
    ) -> StoreResult<Option<Arc<StoredJob>>> {
        if !recovering {
            if let Some(job) = self.cached_newest(store, account, subject, Slot::Finished)? {
                return Ok(Some(job));
            }
        }
        match store.latest_for(account, subject)? {
            Some(record) => self.kept_or_loaded(store, record),
            None => Ok(None),
        }
    }

    /// The newest READY job of the account for this wallet or pair (as
    /// `Store::latest_ready_for`), from memory when known.
    pub fn latest_ready(
        &self,
        store: &dyn Store,
        account: &str,
        subject: Subject<'_>,
    ) -> StoreResult<Option<Arc<StoredJob>>> {
        if let Some(job) = self.cached_newest(store, account, subject, Slot::Ready)? {
            return Ok(Some(job));
        }
        match store.latest_ready_for(account, subject)? {
            Some(record) => self.kept_or_loaded(store, record),
            None => Ok(None),
        }
    }

    /// The job the subject's `slot` names, if the cache names one that is still servable.
    fn cached_newest(
        &self,
        store: &dyn Store,
        account: &str,
        subject: Subject<'_>,
        slot: Slot,
    ) -> StoreResult<Option<Arc<StoredJob>>> {
        let Some(entry) = self.newest.get(&subject_key(account, subject)) else { return Ok(None) };
        let newest = match slot {
            Slot::Finished => entry.finished,
            Slot::Ready => entry.ready,
        };
        let Some(newest) = newest.filter(|n| n.completed_at_ms >= self.purged_before_ms.load(Ordering::Acquire)) else {
            return Ok(None);
        };
        self.job(store, &newest.id)
    }

    /// The job of a record the store just gave: the kept entry if memory has it (no payload
    /// read), else loaded.
    fn kept_or_loaded(&self, store: &dyn Store, record: JobRecord) -> StoreResult<Option<Arc<StoredJob>>> {
        match self.by_id.get(record.id.as_str()).filter(|job| self.servable(&job.record)) {
            Some(kept) => Ok(Some(kept)),
            None => self.loaded(store, record),
        }
    }

    /// A record read from the store, with its payload when READY; kept when finished.
    fn loaded(&self, store: &dyn Store, record: JobRecord) -> StoreResult<Option<Arc<StoredJob>>> {
        if !record.state.is_finished() {
            return Ok(Some(Arc::new(StoredJob::new(record, None))));
        }
        let payload = match record.state {
            JobState::Ready => match store.get_result(&record)? {
                Some(payload) => Some(Bytes::from(payload)),
                // Purged between the two reads: gone.
                None => return Ok(None),
            },
            _ => None,
        };
        let job = Arc::new(StoredJob::new(record, payload));
        self.keep(Arc::clone(&job));
        Ok(Some(job))
    }

    fn servable(&self, record: &JobRecord) -> bool {
        record.completed_at_ms.unwrap_or(0) >= self.purged_before_ms.load(Ordering::Acquire)
    }

    fn keep(&self, job: Arc<StoredJob>) {
        if !self.servable(&job.record) {
            return;
        }
        let record = &job.record;
        let newest = Newest::of(record);
        let is_ready = record.state == JobState::Ready;
        let subject = subject_key(&record.account, record.kind.subject());
        self.newest.upsert(subject, SUBJECT_ENTRY_BYTES, |current| {
            let mut entry = current.cloned().unwrap_or_default();
            let mut changed = false;
            for (slot, applies) in [(&mut entry.finished, true), (&mut entry.ready, is_ready)] {
                if applies && slot.as_ref().is_none_or(|old| newest.is_newer_than(old)) {
                    *slot = Some(newest.clone());
                    changed = true;
                }
            }
            changed.then_some(entry)
        });
        let weight = job.weight_bytes();
        let id: Box<str> = record.id.as_str().into();
        self.by_id.upsert(id, weight, |kept| match kept {
            // A webhook, once on a job, stays (`Store::attach_callback`): a record read before
            // an attach (a completion racing it) never replaces one read after it.
            Some(kept) if kept.record.callback.is_some() && job.record.callback.is_none() => None,
            _ => Some(Arc::clone(&job)),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Completion, JobKind, RocksStore, StoreOptions};

    const T0: u64 = 1_795_342_530_000;

    fn store() -> (tempfile::TempDir, RocksStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::open(dir.path(), &StoreOptions::default()).unwrap();
        (dir, store)
    }

    fn analysis(id: &str, created_at_ms: u64) -> JobRecord {
        JobRecord::queued(
            id.into(),
            JobKind::Analysis { wallet: "W".into() },
            "acct_a".into(),
            "key_a".into(),
            created_at_ms,
            false,
            false,
            T0,
            "v".into(),
        )
    }

    /// Admits and finishes a job in the store, as the server would; returns the final record.
    fn finish(store: &RocksStore, id: &str, created_at_ms: u64, ready: bool) -> StoredJob {
        store.admit(&analysis(id, created_at_ms), None).unwrap();
        let payload = format!(r#"{{"job":"{id}"}}"#).into_bytes();
        let outcome = if ready {
            Completion::Ready {
                payload_json: payload.clone(),
                engine_version: "v".into(),
                event: None,
                signature: None,
            }
        } else {
            Completion::Failed { code: "ANALYSIS_FAILED".into(), message: "m".into() }
        };
        let record = store.complete(id, created_at_ms + 10, &outcome).unwrap();
        StoredJob::new(record, ready.then(|| Bytes::from(payload)))
    }

    #[test]
    fn a_finished_job_is_served_from_memory_after_the_first_read() {
        let (_dir, store) = store();
        let done = finish(&store, "an_1", T0, true);
        let cache = FinishedJobs::new(1 << 20, 64);
        assert_eq!(cache.job(&store, "an_1").unwrap().as_deref(), Some(&done));
        // Gone from the store, still answered: the cache holds it.
        assert_eq!(store.purge_finished_before(T0 + 100, 10).unwrap(), 1);
        assert_eq!(cache.job(&store, "an_1").unwrap().as_deref(), Some(&done));
        // Once the purge's cutoff is announced, it is not served any more.
        cache.purge_before(T0 + 100);
        assert_eq!(cache.job(&store, "an_1").unwrap(), None);
        assert_eq!(cache.job(&store, "an_missing").unwrap(), None);
        assert!(cache.by_id.get("an_1").is_none(), "a purged entry is dropped when met");
    }

    #[test]
    fn a_kept_webhook_is_never_lost_to_an_older_read() {
        let (_dir, store) = store();
        let done = finish(&store, "an_1", T0, true);
        let cache = FinishedJobs::new(1 << 20, 64);
        let Ok(crate::store::Attached::New(hooked)) =
            store.attach_callback("an_1", "acct_a", "key_1", "https://h.example/x", T0)
        else {
            panic!("a job without a webhook takes one")
        };
        cache.keep_finished(StoredJob::new(hooked.clone(), done.payload.clone()));
        // The completion's record, read before the attach, arrives late: the webhook stays.
        cache.keep_finished(done.clone());
        assert_eq!(cache.cached("an_1").map(|j| j.record.clone()), Some(hooked.clone()));
        // A newer state of the webhook replaces the kept one.
        let delivered = crate::store::Callback {
            status: crate::store::CallbackStatus::Delivered,
            ..hooked.callback.clone().unwrap()
        };
        let settled = JobRecord { callback: Some(delivered), ..hooked };
        cache.keep_finished(StoredJob::new(settled.clone(), done.payload.clone()));
        assert_eq!(cache.cached("an_1").map(|j| j.record.clone()), Some(settled));
    }

    #[test]
    fn live_jobs_are_not_cached() {
        let (_dir, store) = store();
        store.admit(&analysis("an_live", T0), None).unwrap();
        let cache = FinishedJobs::new(1 << 20, 64);
        let live = cache.job(&store, "an_live").unwrap().unwrap();
        assert_eq!((live.record.state, live.payload.clone()), (JobState::Queued, None));
        assert!(cache.by_id.get("an_live").is_none(), "live: not kept");
        let wallet = Subject::Wallet("W");
        let latest = cache.latest(&store, "acct_a", wallet, false).unwrap().unwrap();
        assert_eq!((latest.record.state, latest.payload.clone()), (JobState::Queued, None));
        let done = finish(&store, "an_2", T0 + 1, true);
        cache.keep_finished(done.clone());
        assert_eq!(cache.latest(&store, "acct_a", wallet, false).unwrap().as_deref(), Some(&done));
        // While recovering the store is asked first: a newer job it holds live wins.
        store.admit(&analysis("an_backlog", T0 + 2), None).unwrap();
        assert_eq!(cache.latest(&store, "acct_a", wallet, false).unwrap().as_deref(), Some(&done));
        let newest = cache.latest(&store, "acct_a", wallet, true).unwrap().unwrap();
        assert_eq!(newest.record.id, "an_backlog");
    }

    #[test]
    fn newest_per_subject_only_moves_forward() {
        let (_dir, store) = store();
        let old = finish(&store, "an_old", T0, true);
        let failed = finish(&store, "an_failed", T0 + 5, false);
        let cache = FinishedJobs::new(1 << 20, 64);
        cache.keep_finished(failed.clone());
        // A reader that read the older job before the completion landed cannot move it back.
        cache.keep(Arc::new(old.clone()));
        let wallet = Subject::Wallet("W");
        assert_eq!(cache.latest(&store, "acct_a", wallet, false).unwrap().as_deref(), Some(&failed));
        assert_eq!(cache.latest_ready(&store, "acct_a", wallet).unwrap().as_deref(), Some(&old));
        assert_eq!(cache.latest(&store, "acct_other", wallet, false).unwrap(), None, "tenants apart");
    }

    #[test]
    fn read_through_fills_the_subject_entries() {
        let (_dir, store) = store();
        let ready = finish(&store, "an_r", T0, true);
        let cache = FinishedJobs::new(1 << 20, 64);
        let wallet = Subject::Wallet("W");
        assert_eq!(cache.latest_ready(&store, "acct_a", wallet).unwrap().as_deref(), Some(&ready));
        store.purge_finished_before(T0 + 100, 10).unwrap();
        assert_eq!(cache.latest_ready(&store, "acct_a", wallet).unwrap().as_deref(), Some(&ready), "from memory");
        assert_eq!(cache.latest(&store, "acct_a", wallet, false).unwrap().as_deref(), Some(&ready), "from memory");
    }

    #[test]
    fn bounded_by_bytes_and_entries() {
        let (_dir, store) = store();
        let jobs: Vec<StoredJob> = (0..40).map(|i| finish(&store, &format!("an_{i:02}"), T0 + i, true)).collect();
        let weight = jobs[0].weight_bytes();
        let cache = FinishedJobs::new(weight * FINISHED_CACHE_SHARDS * 2, 1 << 20);
        for job in &jobs {
            cache.keep_finished(job.clone());
        }
        let kept: usize = cache.by_id.shards.iter().map(|s| s.lock().entries.len()).sum();
        let bytes: usize = cache.by_id.shards.iter().map(|s| s.lock().bytes).sum();
        assert!(kept <= FINISHED_CACHE_SHARDS * 2 && bytes <= weight * FINISHED_CACHE_SHARDS * 2, "{kept} {bytes}");
        // Whatever was evicted is still found, in the store.
        for job in &jobs {
            assert_eq!(cache.job(&store, &job.record.id).unwrap().as_deref(), Some(job));
        }
        let by_count = FinishedJobs::new(1 << 30, FINISHED_CACHE_SHARDS);
        for job in &jobs {
            by_count.keep_finished(job.clone());
        }
        assert!(by_count.by_id.shards.iter().all(|s| s.lock().entries.len() <= 1));
        let tiny = FinishedJobs::new(FINISHED_CACHE_SHARDS, 64);
        tiny.keep_finished(jobs[0].clone());
        assert!(tiny.by_id.shards.iter().all(|s| s.lock().entries.is_empty()), "larger than a shard: not kept");
    }
}
