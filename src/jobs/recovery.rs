//! Recovery after a restart, and the housekeeping thread that carries it out: each key's quota
//! counters restored from the store (`restore_quota`), the jobs a stopped process left
//! `RUNNING` or `QUEUED` handed out in bounded pages (`Backlog`) and re-queued as the work queue
//! has room (`Recovery`), the retention purge of finished jobs, and the retry of job
//! completions the store refused (`StoreSink::retry_unsettled`, each tick) and the trim of
//! webhook outboxes that requests' attaches grew (`Admission::trim_grown_outboxes`, each tick).
//!
//! Owns: a position in the backlog (state and cursor) and the few jobs of its last page that
//! did not fit yet, never the whole backlog. The hourly sweep removes everything past its
//! cutoff (finished jobs page by page, idempotent answers in the store's batches) with no cap
//! on pages, so it never falls behind whatever the write rate. Called by `serve` at start-up (main thread) and
//! then by the housekeeping thread (one at a time: `Recovery` is not shared).
//!
//! Invariant: memory is bounded by the page the caller asks for; the rest stays on disk.
//! Invariant: `RUNNING` jobs come first (they were already started, so they are the oldest
//! work), then `QUEUED` jobs, each oldest first; only jobs created before `created_before_ms`
//! (the process start) are returned, so jobs admitted by the new process never appear.
//! Invariant: each recovered job is returned once; their reservations stay as they are in the
//! usage records and are committed or refunded when the job completes.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::admission::Admission;
use super::finished::FinishedJobs;
use super::sink::StoreSink;
use crate::auth::table::KeyTable;
use crate::clock::now_unix_ms;
use crate::config::{self, STORE_PAGE_LEN_MAX};
use crate::limits::quota::period_start_ms;
use crate::store::{JobCursor, JobRecord, LiveState, Store, StoreResult};

/// Position in the recovery scan.
#[derive(Debug, Clone)]
pub struct Backlog {
    created_before_ms: u64,
    /// The state being scanned; `None` once both are exhausted.
    state: Option<LiveState>,
    cursor: Option<JobCursor>,
}

impl Backlog {
    /// A backlog of the jobs created before `created_before_ms` (pass the process start time).
    pub fn new(created_before_ms: u64) -> Backlog {
        Backlog { created_before_ms, state: Some(LiveState::Running), cursor: None }
    }

    /// True once every left-over job was handed out.
    pub fn is_done(&self) -> bool {
        self.state.is_none()
    }

    /// Up to `limit` more jobs (fewer only when the backlog ends); empty when done.
    pub fn next_page(&mut self, store: &dyn Store, limit: usize) -> StoreResult<Vec<JobRecord>> {
        let mut jobs = Vec::new();
        while let Some(state) = self.state.filter(|_| jobs.len() < limit) {
            let page = store.live_jobs(state, self.cursor.as_ref(), self.created_before_ms, limit - jobs.len())?;
            jobs.extend(page.jobs);
            self.cursor = page.next;
            if self.cursor.is_none() {
                self.state = match state {
                    LiveState::Running => Some(LiveState::Queued),
                    LiveState::Queued => None,
                };
            }
        }
        Ok(jobs)
    }
}

/// Restores each key's in-memory quota counters of the current and previous period from the
/// store's usage records (which count the reservations of jobs still live), so a restart
/// neither forgets a charge nor frees a reserved unit.
pub fn restore_quota(table: &KeyTable, store: &dyn Store, now_ms: u64) -> Result<(), String> {
    for record in table.list() {
        let Some(entry) = table.get(&record.id) else { continue };
        let current_ms = period_start_ms(now_ms, record.quota_period);
        for start_ms in [period_start_ms(current_ms.saturating_sub(1), record.quota_period), current_ms] {
            let usage = store.usage(record.id.as_str(), start_ms).map_err(|e| format!("loading usage: {e}"))?;
            entry.quota.restore(start_ms, &usage, now_ms);
        }
    }
    Ok(())
}

/// The recovery backlog and the jobs of its last page that did not fit yet.
pub struct Recovery {
    backlog: Backlog,
    waiting: std::collections::VecDeque<JobRecord>,
}

impl Recovery {
    pub fn new(started_ms: u64) -> Recovery {
        Recovery { backlog: Backlog::new(started_ms), waiting: Default::default() }
    }

    /// Moves left-over jobs into the work queue while it has room; once none is left, tells
    /// admission that deduplication needs the index only.
    pub fn refill(&mut self, admission: &Admission) {
        self.refill_queue(admission);
        if self.waiting.is_empty() && self.backlog.is_done() {
            admission.finish_recovery();
        }
    }

    fn refill_queue(&mut self, admission: &Admission) {
        loop {
            if self.waiting.is_empty() {
                let room = admission.queue_room().min(STORE_PAGE_LEN_MAX);
                if room == 0 || self.backlog.is_done() {
                    return;
                }
                match self.backlog.next_page(admission.store(), room) {
                    Ok(page) if page.is_empty() => return,
                    Ok(page) => self.waiting.extend(page),
                    Err(e) => return tracing::error!(error = %e, "reading the recovery backlog"),
                }
            }
            while let Some(record) = self.waiting.pop_front() {
                let id = record.id.clone();
                if let Err(record) = admission.requeue(record) {
                    self.waiting.push_front(record);
                    return;
                }
                tracing::info!(job = %id, "re-queued a job left by the previous process");
            }
        }
    }
}

/// The housekeeping thread: every `HOUSEKEEPING_TICK_MS` the recovery backlog refills the
/// queue (and the webhook outboxes that attaches grew are trimmed); every `RETENTION_SWEEP_INTERVAL_S` finished jobs past the retention are purged.
pub struct Housekeeping {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Housekeeping {
    /// Stops the thread after its current tick and waits for it.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.handle.join();
    }
}

/// What the housekeeping thread does besides the purge and the retries: re-queue what a
/// stopped process left live (the embedded store), or the cluster's upkeep (etcd).
pub enum Upkeep {
    Recover(Recovery),
    Adopt(super::adoption::Adoption),
}

impl Upkeep {
    fn run(&mut self, admission: &Admission) {
        match self {
            Upkeep::Recover(recovery) => recovery.refill(admission),
            Upkeep::Adopt(adoption) => adoption.run(admission),
        }
    }
}

pub fn spawn_housekeeping(
    admission: Arc<Admission>,
    sink: Arc<StoreSink>,
    mut upkeep: Upkeep,
    retention_days: u32,
) -> Result<Housekeeping, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let handle = std::thread::Builder::new()
        .name("xray-housekeeping".into())
        .spawn(move || {
            let mut last_sweep: Option<Instant> = None;
            while !stopped.load(Ordering::Acquire) {
                upkeep.run(&admission);
                // A cluster's other nodes write policies too.
                if admission.cluster().is_some() {
                    admission.policies().reload_if_due(admission.store());
                }
                sink.retry_unsettled();
                sink.reload_signing_keys();
                admission.submit_stranded();
                admission.trim_grown_outboxes();
                let due =
                    last_sweep.is_none_or(|t| t.elapsed() >= Duration::from_secs(config::RETENTION_SWEEP_INTERVAL_S));
                if due {
                    purge_expired(admission.store(), admission.finished(), retention_days);
                    last_sweep = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(config::HOUSEKEEPING_TICK_MS));
            }
        })
        .map_err(|e| format!("housekeeping thread: {e}"))?;
    Ok(Housekeeping { stop, handle })
}

/// Deletes finished jobs older than the retention, feedback not written for
/// `FEEDBACK_RETENTION_DAYS`, and idempotent answers older than their window: everything past its cutoff, in bounded pages or batches, however much accumulated
/// (a sweep that stopped at a page cap could fall behind for good).
fn purge_expired(store: &dyn Store, finished: &FinishedJobs, retention_days: u32) {
    let now_ms = now_unix_ms();
    let cutoff_ms = now_ms.saturating_sub(u64::from(retention_days) * 86_400_000);
    // Memory stops serving them first, so no poll answers a job the store no longer has.
    finished.purge_before(cutoff_ms);
    let purged = purge_pages("finished jobs", |limit| store.purge_finished_before(cutoff_ms, limit));
    if purged > 0 {
        tracing::info!(purged, "purged finished jobs past their retention");
    }
    // Feedback outlives its analysis (it carries the signal's kind): its own retention.
    let feedback_cutoff_ms = now_ms.saturating_sub(u64::from(config::FEEDBACK_RETENTION_DAYS) * 86_400_000);
    match crate::feedback::book::purge_before(store, feedback_cutoff_ms) {
        Ok(0) => {}
        Ok(purged) => tracing::info!(purged, "purged feedback past its retention"),
        Err(e) => tracing::error!(error = %e, what = "feedback", "retention purge"),
    }
    let answers_cutoff_ms = now_ms.saturating_sub(config::IDEMPOTENCY_TTL_MS);
    match store.purge_answers_before(answers_cutoff_ms, config::IDEMPOTENCY_PURGE_BATCH_LEN) {
        Ok(0) => {}
        Ok(purged) => tracing::info!(purged, "purged idempotent answers past their window"),
        Err(e) => tracing::error!(error = %e, what = "idempotent answers", "retention purge"),
    }
}

/// Calls `purge` with `RETENTION_PURGE_PAGE_LEN` until a page comes back short (each page is
/// one bounded call; there is no cap on their number). Returns how many were deleted.
fn purge_pages(what: &str, purge: impl Fn(usize) -> StoreResult<usize>) -> usize {
    let mut purged = 0;
    loop {
        match purge(config::RETENTION_PURGE_PAGE_LEN) {
            Ok(n) => {
                purged += n;
                if n < config::RETENTION_PURGE_PAGE_LEN {
                    return purged;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, what, "retention purge");
                return purged;
            }
        }
    }
}
