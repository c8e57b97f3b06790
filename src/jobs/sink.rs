//! Where compute threads report: `StoreSink` makes a job's progress durable, settles its quota
//! unit in memory, updates the status index and wakes long-poll waiters.
//!
//! Owns: the order of a completion — (1) `Store::complete` writes the payload or error, the job
//! state and the quota commit or refund in one batch; (2) the key's in-memory quota counter is
//! settled the same way; (3) the finished job is kept in memory (`jobs::finished`); (4) the job
//! leaves the status index, which wakes its waiters. Polls that miss the index after (4) find
//! the finished job in memory (3), or in the store (1) once memory let it go.
//! Also reads the scores of analyses a comparison reuses. Runs on compute threads only.
//!
//! Invariant: the in-memory quota moves only after the store's copy moved, so memory never
//! shows a charge or refund the disk does not have.
//! Deliberately absent: retries of a failed store write. The job then stays live in the store
//! (re-run after a restart, charged once) and the error is logged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::auth::key::KeyId;
use crate::auth::table::KeyTable;
use crate::clock::now_unix_ms;
use crate::config;
use crate::engine::report::Score;
use crate::engine::ENGINE_VERSION_TAG;
use crate::jobs::execute::{FailCode, Outcome, ReusedScores};
use crate::jobs::finished::{FinishedJobs, StoredJob};
use crate::jobs::index::StatusIndex;
use crate::jobs::pool::{JobSink, Ticket};
use crate::limits::quota::{Operation, ReleaseCause, Reservation};
use crate::metrics::{JobLabel, JobOutcomeLabel, Metrics};
use crate::store::{self, JobKind, JobRecord, Store};

/// The sink of the running server.
pub struct StoreSink {
    pub store: Arc<dyn Store>,
    pub index: Arc<StatusIndex>,
    pub finished: Arc<FinishedJobs>,
    pub keys: Arc<KeyTable>,
    pub metrics: Arc<Metrics>,
    /// Shared with `App::ledger_failing`.
    pub ledger_failing: Arc<AtomicBool>,
    /// When each running job started, for the duration metric (compute threads only).
    started: papaya::HashMap<String, Instant>,
}

impl StoreSink {
    pub fn new(
        store: Arc<dyn Store>,
        index: Arc<StatusIndex>,
        finished: Arc<FinishedJobs>,
        keys: Arc<KeyTable>,
        metrics: Arc<Metrics>,
        ledger_failing: Arc<AtomicBool>,
    ) -> StoreSink {
        StoreSink { store, index, finished, keys, metrics, ledger_failing, started: papaya::HashMap::new() }
    }

    /// Settles the job's unit in its key's in-memory counter, as the store just did.
    fn settle_quota(&self, record: &JobRecord) {
        if !record.charged {
            return;
        }
        let Some(entry) = KeyId::parse(&record.key_id).ok().and_then(|id| self.keys.get(&id)) else { return };
        let operation = match record.kind {
            JobKind::Analysis { .. } => Operation::WalletAnalysis,
            JobKind::Comparison { .. } => Operation::Comparison,
        };
        let period_start_ms = record.quota_period_start_ms;
        let reservation = Reservation::recovered(period_start_ms, operation);
        let settled = match record.state {
            store::JobState::Ready => entry.quota.commit(reservation),
            _ => entry.quota.release(reservation, ReleaseCause::Failed),
        };
        if let Err(e) = settled {
            // The period rolled out of memory; the store's record is right and is what a
            // restart loads.
            tracing::debug!(job = %record.id, error = %e, "in-memory quota not settled");
        }
    }

    fn observe(&self, record: &JobRecord, id: &str) {
        let kind = match record.kind {
            JobKind::Analysis { .. } => JobLabel::Analysis,
            JobKind::Comparison { .. } => JobLabel::Comparison,
        };
        let outcome = match record.state {
            store::JobState::Ready => JobOutcomeLabel::Ready,
            _ => JobOutcomeLabel::Failed,
        };
        let elapsed_ms = self.started.pin().remove(id).map_or(0, |t| t.elapsed().as_millis());
        // Saturates after 584 million years of one job.
        self.metrics.observe_job(kind, outcome, u64::try_from(elapsed_ms).unwrap_or(u64::MAX));
    }
}

fn store_outcome(outcome: Outcome) -> store::Completion {
    match outcome {
        Outcome::Ready { payload } => {
            store::Completion::Ready { payload_json: payload, engine_version: ENGINE_VERSION_TAG.to_owned() }
        }
        Outcome::Failed { code, message } => store::Completion::Failed { code: code.as_str().to_owned(), message },
    }
}

impl JobSink for StoreSink {
    fn started(&self, ticket: &Ticket) -> Result<(), Outcome> {
        let now_ms = now_unix_ms();
        self.started.pin().insert(ticket.id.clone(), Instant::now());
        match self.store.mark_running(&ticket.id, now_ms) {
            Ok(record) if record.starts > config::JOB_STARTS_MAX => {
                tracing::error!(job = %ticket.id, starts = record.starts, "a job that never finished is not started again");
                return Err(Outcome::never_finished(config::JOB_STARTS_MAX));
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(job = %ticket.id, error = %e, "marking a job running failed"),
        }
        if let Some(live) = self.index.get(&ticket.id) {
            live.mark_running(now_ms);
        }
        Ok(())
    }

    fn finished(&self, ticket: Ticket, outcome: Outcome) {
        let upstream_failed = matches!(outcome, Outcome::Failed { code: FailCode::UpstreamUnavailable, .. });
        self.ledger_failing.store(upstream_failed, Ordering::Relaxed);
        let payload = match &outcome {
            Outcome::Ready { payload } => Some(Bytes::copy_from_slice(payload)),
            Outcome::Failed { .. } => None,
        };
        match self.store.complete(&ticket.id, now_unix_ms(), store_outcome(outcome)) {
            Ok(record) => {
                self.settle_quota(&record);
                self.observe(&record, &ticket.id);
                // Before the index lets go of the job, so a poll finds it in one or the other.
                self.finished.keep_finished(StoredJob::new(record, payload));
            }
            Err(e) => {
                self.started.pin().remove(&ticket.id);
                tracing::error!(job = %ticket.id, error = %e, "persisting a job's result failed");
            }
        }
        self.index.remove(&ticket.id);
    }
}

/// The `score` member of a stored X-Ray.
#[derive(serde::Deserialize)]
struct StoredScore {
    score: Score,
}

impl ReusedScores for StoreSink {
    fn score_of(&self, analysis_id: &str) -> Option<Score> {
        let job = self.finished.job(&*self.store, analysis_id).ok().flatten()?;
        serde_json::from_slice::<StoredScore>(job.payload.as_ref()?).ok().map(|s| s.score)
    }
}
