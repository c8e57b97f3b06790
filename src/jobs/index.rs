//! The in-memory status index of live jobs: what polls of a live job and deduplication read
//! without touching the disk.
//!
//! Owns: `LiveJob` (a job admitted and not yet finished: its record as admitted, its state and
//! start time as atomics, a webhook a later request attached, and the notification long-poll
//! waiters sleep on) and `StatusIndex`
//! (two lock-free maps: by job id, and by `(account, subject)` for deduplication). Listener
//! threads read it and insert at admission; compute threads mark jobs running and remove them
//! once their result is durable.
//!
//! Invariant: an entry exists only for a job whose record is already in the store (inserted
//! after `Store::admit`, removed after `Store::complete`), so a poll that misses the index
//! finds the job in the store: the index is a cache, RocksDB is the record.
//! Invariant: at most `len_max` jobs are held; admission refuses (503) rather than grow it.
//! Invariant: an account holds at most `per_account_max` live jobs admitted by this process
//! (admission refuses with 429 `TOO_MANY_JOBS`), so one key with `refresh: true` cannot fill
//! the queue for everyone; jobs recovered after a restart are counted but never refused (they
//! were admitted already). The per-account counts sit behind one mutex touched at insert and
//! remove only — admissions and completions, never polls.
//! Invariant: readers take no lock and do not allocate (papaya's maps are lock-free; lookups
//! by id borrow the request's `&str`, lookups by subject build their key on the stack).
//! Deliberately absent: finished jobs (their polls read the store's block cache) and fresh
//! READY results (deduplication asks the store for those: a disk read on a POST, never on a poll).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

use crate::store::{Callback, JobRecord, JobState, Subject};

const STATE_QUEUED: u8 = 1;
const STATE_RUNNING: u8 = 2;
const STATE_FINISHED: u8 = 3;

/// A job between admission and its durable completion.
#[derive(Debug)]
pub struct LiveJob {
    /// The record as admitted (its `state` field is not kept up to date: see `state`).
    pub record: JobRecord,
    state: AtomicU8,
    /// 0 until the job starts.
    started_at_ms: AtomicU64,
    /// False from indexing until the job is in the work queue: an admission that still fails
    /// (queue full) must not have handed its id to a deduplicated request meanwhile.
    queued: AtomicBool,
    /// The webhook a later request attached after admission (the store has it too): set once,
    /// as a job's webhook is never replaced.
    attached: OnceLock<Callback>,
    finished: Notify,
}

impl LiveJob {
    /// A live job for an admitted record (`QUEUED`, or `RUNNING` when recovered).
    pub fn new(record: JobRecord) -> LiveJob {
        let state = if record.state == JobState::Running { STATE_RUNNING } else { STATE_QUEUED };
        let started_at_ms = record.started_at_ms.unwrap_or(0);
        LiveJob {
            record,
            state: AtomicU8::new(state),
            started_at_ms: AtomicU64::new(started_at_ms),
            queued: AtomicBool::new(true),
            attached: OnceLock::new(),
            finished: Notify::new(),
        }
    }

    /// A live job for a record being admitted: not offered to deduplication until `mark_queued`.
    pub fn pending(record: JobRecord) -> LiveJob {
        LiveJob { queued: AtomicBool::new(false), ..LiveJob::new(record) }
    }

    /// The job is in the work queue: equal requests may now be deduplicated onto it.
    pub fn mark_queued(&self) {
        self.queued.store(true, Ordering::Release);
    }

    /// `QUEUED` or `RUNNING`; `None` once finished (read the store for the outcome).
    pub fn state(&self) -> Option<JobState> {
        match self.state.load(Ordering::Acquire) {
            STATE_QUEUED => Some(JobState::Queued),
            STATE_RUNNING => Some(JobState::Running),
            _ => None,
        }
    }

    /// The job's webhook: the one it was admitted with, or one attached later on this node.
    pub fn callback(&self) -> Option<&Callback> {
        self.record.callback.as_ref().or_else(|| self.attached.get())
    }

    /// Records a webhook the store attached to this job after admission (polls show it).
    pub fn attach(&self, callback: Callback) {
        let _ = self.attached.set(callback);
    }

    pub fn started_at_ms(&self) -> Option<u64> {
        Some(self.started_at_ms.load(Ordering::Acquire)).filter(|ms| *ms != 0)
    }

    pub fn mark_running(&self, started_at_ms: u64) {
        self.started_at_ms.store(started_at_ms.max(1), Ordering::Release);
        let _ = self.state.compare_exchange(STATE_QUEUED, STATE_RUNNING, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Marks the job finished (its outcome is durable) and wakes every waiter.
    fn finish(&self) {
        self.state.store(STATE_FINISHED, Ordering::Release);
        self.finished.notify_waiters();
    }

    /// Waits until the job is finished or `timeout` passes. Runs on a monoio runtime (its timer);
    /// the wake-up comes from a compute thread.
    pub async fn wait_finished(&self, timeout: Duration) {
        let notified = self.finished.notified();
        let mut notified = std::pin::pin!(notified);
        // Registered before the state is read, so a finish in between is not missed.
        notified.as_mut().enable();
        if self.state().is_none() {
            return;
        }
        let _ = monoio::time::timeout(timeout, notified).await;
    }
}

/// Why a job could not be indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IndexFull {
    #[error("the status index holds its maximum of {0} live jobs")]
    Full(usize),
    #[error("the account holds its maximum of {0} live jobs")]
    Account(usize),
}

/// Live jobs by id and by `(account, subject)`, and how many each account holds.
#[derive(Debug)]
pub struct StatusIndex {
    by_id: papaya::HashMap<String, Arc<LiveJob>>,
    by_subject: papaya::HashMap<String, Arc<LiveJob>>,
    by_account: parking_lot::Mutex<std::collections::HashMap<String, usize>>,
    len: AtomicUsize,
    len_max: usize,
    per_account_max: usize,
}

/// The deduplication key: account, subject kind and subject, unambiguous because accounts and
/// subjects are base58 or `[A-Za-z0-9_]` text without the separator.
fn subject_key(account: &str, subject: Subject<'_>) -> String {
    let mut key = String::new();
    for part in subject_key_parts(account, subject) {
        key.push_str(part);
    }
    key
}

/// The parts of a subject key: account, a separator no id contains, the kind, the subject.
fn subject_key_parts<'a>(account: &'a str, subject: Subject<'a>) -> [&'a str; 3] {
    match subject {
        Subject::Wallet(w) => [account, "\u{1f}w", w],
        Subject::Pair(p) => [account, "\u{1f}p", p],
    }
}

/// Longest subject key built on the stack by a lookup (account and subject ids are far
/// shorter: both are bounded by `STORE_ID_BYTES_MAX`).
const SUBJECT_KEY_STACK_BYTES: usize = 256;

/// Runs `read` with the subject key, built in a stack buffer: the poll of a live comparison
/// and deduplication look up without allocating.
fn with_subject_key<R>(account: &str, subject: Subject<'_>, read: impl FnOnce(&str) -> R) -> R {
    let parts = subject_key_parts(account, subject);
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len > SUBJECT_KEY_STACK_BYTES {
        return read(&subject_key(account, subject));
    }
    let mut buf = [0u8; SUBJECT_KEY_STACK_BYTES];
    let mut at = 0;
    for part in parts {
        buf[at..at + part.len()].copy_from_slice(part.as_bytes());
        at += part.len();
    }
    // Invariant: a concatenation of `&str`s is UTF-8; the fallback only keeps this total.
    match std::str::from_utf8(&buf[..at]) {
        Ok(key) => read(key),
        Err(_) => read(&subject_key(account, subject)),
    }
}

impl StatusIndex {
    pub fn new(len_max: usize, per_account_max: usize) -> StatusIndex {
        StatusIndex {
            by_id: papaya::HashMap::with_capacity(len_max.min(1 << 16)),
            by_subject: papaya::HashMap::with_capacity(len_max.min(1 << 16)),
            by_account: parking_lot::Mutex::new(std::collections::HashMap::new()),
            len: AtomicUsize::new(0),
            len_max,
            per_account_max,
        }
    }

    /// Live jobs `account` holds now.
    pub fn live_of_account(&self, account: &str) -> usize {
        self.by_account.lock().get(account).copied().unwrap_or(0)
    }

    pub fn per_account_max(&self) -> usize {
        self.per_account_max
    }

    /// Live jobs held now.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn len_max(&self) -> usize {
        self.len_max
    }

    /// The live job with this id, if any.
    pub fn get(&self, id: &str) -> Option<Arc<LiveJob>> {
        self.by_id.pin().get(id).cloned()
    }

    /// The newest live job of this account for this subject, if any.
    pub fn live_for(&self, account: &str, subject: Subject<'_>) -> Option<Arc<LiveJob>> {
        let job = with_subject_key(account, subject, |key| self.by_subject.pin().get(key).cloned())?;
        if !job.queued.load(Ordering::Acquire) {
            return None;
        }
        job.state().map(|_| job)
    }

    /// Adds a job being admitted; it becomes the subject's newest live job. Refused when the
    /// index or the job's account holds its maximum.
    pub fn insert(&self, job: Arc<LiveJob>) -> Result<(), IndexFull> {
        self.insert_within(job, self.per_account_max)
    }

    /// Adds a job a stopped process admitted (recovery): counted for its account, never
    /// refused for it.
    pub fn insert_recovered(&self, job: Arc<LiveJob>) -> Result<(), IndexFull> {
        self.insert_within(job, usize::MAX)
    }

    fn insert_within(&self, job: Arc<LiveJob>, per_account_max: usize) -> Result<(), IndexFull> {
        if self.by_id.pin().contains_key(job.record.id.as_str()) {
            // Ids are 16 random bytes; a repeat means the same job was indexed twice.
            return Ok(());
        }
        let reserved =
            self.len.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < self.len_max).then_some(n + 1));
        if reserved.is_err() {
            return Err(IndexFull::Full(self.len_max));
        }
        if let Err(full) = self.count_in(&job.record.account, per_account_max) {
            self.len.fetch_sub(1, Ordering::AcqRel);
            return Err(full);
        }
        let key = subject_key(&job.record.account, job.record.kind.subject());
        self.by_subject.pin().insert(key, Arc::clone(&job));
        self.by_id.pin().insert(job.record.id.clone(), job);
        Ok(())
    }

    fn count_in(&self, account: &str, per_account_max: usize) -> Result<(), IndexFull> {
        let mut counts = self.by_account.lock();
        // The account's text is copied only for its first live job.
        match counts.get_mut(account) {
            Some(count) if *count >= per_account_max => Err(IndexFull::Account(self.per_account_max)),
            Some(count) => {
                *count += 1;
                Ok(())
            }
            None if per_account_max == 0 => Err(IndexFull::Account(self.per_account_max)),
            None => {
                counts.insert(account.to_owned(), 1);
                Ok(())
            }
        }
    }

    fn count_out(&self, account: &str) {
        let mut counts = self.by_account.lock();
        if let Some(count) = counts.get_mut(account) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(account);
            }
        }
    }

    /// Removes a job (finished, or whose admission was undone) and wakes its waiters.
    pub fn remove(&self, id: &str) -> Option<Arc<LiveJob>> {
        let job = self.by_id.pin().remove(id).cloned()?;
        self.len.fetch_sub(1, Ordering::AcqRel);
        self.count_out(&job.record.account);
        let key = subject_key(&job.record.account, job.record.kind.subject());
        // Only if it is still the subject's newest: a later `refresh` job may have replaced it.
        let _ = self.by_subject.pin().remove_if(&key, |_, current| Arc::ptr_eq(current, &job));
        job.finish();
        Some(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::JobKind;

    fn record(id: &str, account: &str, wallet: &str) -> JobRecord {
        JobRecord::queued(
            id.into(),
            JobKind::Analysis { wallet: wallet.into() },
            account.into(),
            "key_1".into(),
            1,
            false,
            true,
            0,
            "v".into(),
        )
    }

    #[test]
    fn live_jobs_are_found_by_id_and_subject_until_removed() {
        let index = StatusIndex::new(8, 8);
        index.insert(Arc::new(LiveJob::new(record("an_1", "acct_a", "W1")))).unwrap();
        assert_eq!(index.get("an_1").and_then(|j| j.state()), Some(JobState::Queued));
        assert!(index.live_for("acct_a", Subject::Wallet("W1")).is_some());
        assert!(index.live_for("acct_b", Subject::Wallet("W1")).is_none(), "per account");
        assert!(index.live_for("acct_a", Subject::Pair("W1")).is_none(), "per subject kind");
        index.get("an_1").unwrap().mark_running(5);
        assert_eq!(index.get("an_1").unwrap().started_at_ms(), Some(5));
        let removed = index.remove("an_1").unwrap();
        assert_eq!(removed.state(), None);
        assert!(index.get("an_1").is_none() && index.live_for("acct_a", Subject::Wallet("W1")).is_none());
        assert!(index.is_empty());
    }

    #[test]
    fn stack_built_subject_keys_equal_the_stored_ones() {
        let long = "a".repeat(SUBJECT_KEY_STACK_BYTES);
        for (account, subject) in [
            ("acct_x", Subject::Wallet("W1")),
            ("acct_x", Subject::Pair("pair_1")),
            (long.as_str(), Subject::Pair("pair_1")),
        ] {
            let stored = subject_key(account, subject);
            assert_eq!(with_subject_key(account, subject, str::to_owned), stored);
        }
        assert_ne!(subject_key("a", Subject::Wallet("x")), subject_key("a", Subject::Pair("x")));
    }

    #[test]
    fn a_job_being_admitted_is_not_offered_to_deduplication_until_queued() {
        let index = StatusIndex::new(8, 8);
        let job = Arc::new(LiveJob::pending(record("an_1", "a", "W")));
        index.insert(Arc::clone(&job)).unwrap();
        assert!(index.live_for("a", Subject::Wallet("W")).is_none(), "its admission may still fail");
        assert!(index.get("an_1").is_some(), "compute threads find it by id at once");
        job.mark_queued();
        assert_eq!(index.live_for("a", Subject::Wallet("W")).map(|j| j.record.id.clone()), Some("an_1".into()));
    }

    #[test]
    fn a_newer_job_keeps_the_subject_when_the_older_finishes() {
        let index = StatusIndex::new(8, 8);
        index.insert(Arc::new(LiveJob::new(record("an_1", "a", "W")))).unwrap();
        index.insert(Arc::new(LiveJob::new(record("an_2", "a", "W")))).unwrap();
        index.remove("an_1");
        assert_eq!(index.live_for("a", Subject::Wallet("W")).map(|j| j.record.id.clone()), Some("an_2".into()));
    }

    #[test]
    fn the_index_is_bounded() {
        let index = StatusIndex::new(2, 8);
        for id in ["an_1", "an_2"] {
            index.insert(Arc::new(LiveJob::new(record(id, "a", id)))).unwrap();
        }
        assert_eq!(index.insert(Arc::new(LiveJob::new(record("an_3", "b", "x")))), Err(IndexFull::Full(2)));
        index.remove("an_1");
        assert!(index.insert(Arc::new(LiveJob::new(record("an_3", "b", "x")))).is_ok());
    }

    #[test]
    fn an_account_holds_at_most_its_share_and_recovered_jobs_are_counted_not_refused() {
        let index = StatusIndex::new(8, 2);
        for id in ["an_1", "an_2"] {
            index.insert(Arc::new(LiveJob::new(record(id, "acct_a", id)))).unwrap();
        }
        let third = || Arc::new(LiveJob::new(record("an_3", "acct_a", "W3")));
        assert_eq!(index.insert(third()), Err(IndexFull::Account(2)));
        assert_eq!(index.len(), 2, "a refusal holds no place");
        assert!(index.insert(Arc::new(LiveJob::new(record("an_4", "acct_b", "W4")))).is_ok(), "per account");
        index.insert_recovered(third()).unwrap();
        assert_eq!(index.live_of_account("acct_a"), 3);
        index.remove("an_1");
        index.remove("an_3");
        assert_eq!(index.live_of_account("acct_a"), 1);
        index.remove("an_2");
        assert_eq!(index.live_of_account("acct_a"), 0);
        assert!(index.by_account.lock().get("acct_a").is_none(), "an account without live jobs holds no entry");
    }
    #[test]
    fn waiters_wake_when_a_compute_thread_finishes_the_job() {
        let index = Arc::new(StatusIndex::new(4, 4));
        let job = Arc::new(LiveJob::new(record("an_1", "a", "W")));
        index.insert(Arc::clone(&job)).unwrap();
        let finisher = Arc::clone(&index);
        let thread = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            finisher.remove("an_1");
        });
        let mut runtime = crate::http::runtime::ThreadRuntime::build(crate::config::IoDriver::Epoll, 0).unwrap();
        let started = std::time::Instant::now();
        runtime.block_on(job.wait_finished(Duration::from_secs(10)));
        assert!(started.elapsed() < Duration::from_secs(5), "woken, not timed out");
        assert_eq!(job.state(), None);
        thread.join().unwrap();
        // A finished job does not wait at all; an unfinished one times out.
        runtime.block_on(job.wait_finished(Duration::from_secs(10)));
        let other = LiveJob::new(record("an_2", "a", "W"));
        let started = std::time::Instant::now();
        runtime.block_on(other.wait_finished(Duration::from_millis(30)));
        assert!(started.elapsed() >= Duration::from_millis(25));
    }
}
