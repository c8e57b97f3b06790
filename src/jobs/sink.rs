//! Where compute threads report: `StoreSink` makes a job's progress durable, settles its quota
//! unit in memory, updates the status index and wakes long-poll waiters.
//!
//! Owns: the order of a completion — (1) `Store::complete` writes the payload or error, the job
//! state and the quota commit or refund in one batch; (2) the key's in-memory quota counter is
//! settled the same way (on the key's successor if it was rotated; (1) and (2) hold the key
//! table's settlement gate, so a rotation cannot fall between them); (3) the finished job is
//! kept in memory (`jobs::finished`); (4) the job leaves the status index, which wakes its
//! waiters. Polls that miss the index after (4) find the finished job in memory (3), or in the
//! store (1) once memory let it go.
//! And what happens when (1) fails: a result the store refuses for good (over a record limit)
//! ends the job `FAILED` (`ANALYSIS_FAILED`, refunded); any other failure (I/O, a full disk, a
//! busy engine) keeps the completion (`Unsettled`) and the job live — in the index, so polls
//! say `RUNNING` and an equal POST deduplicates onto it instead of admitting a second charged
//! job — and the housekeeping thread retries it (`retry_unsettled`) until the store takes it;
//! meanwhile `store_failing` makes the service `degraded`.
//! Signs a READY report (`signing`) just before (1), over the members its poll will show with
//! the `completedAt` (1) stores, and stores the signature with it (a store that refused is
//! retried with a fresh signature: the time is the attempt's).
//! Also reads the scores of analyses a comparison reuses, and — before (1) — adds to a READY
//! analysis its `changes` against the account's previous READY analysis of the wallet
//! (`engine::changes`; `null` when there is none or it cannot be read: never a failed job).
//! Runs on compute threads (and the housekeeping thread for retries).
//!
//! Invariant: the in-memory quota, the finished cache and the index move only after the store's
//! copy moved, so memory never shows a charge, refund or result the disk does not have.
//! Invariant: unsettled completions are at most one per live job (bounded by the index), and
//! their payloads at most `config::UNSETTLED_PAYLOAD_BYTES_MAX` together: past it a result
//! waits as a `FAILED` completion (refunded) instead.
//! After a panic in `finished` (the pool catches it), `finished_plainly` ends the job FAILED
//! by the settlement alone — (1) to (4), no `changes`. A first attempt that got past (1) left
//! the store's copy finished: the second finds it so and only takes the job out of the index
//! (a panic between (1) and (2) leaves the key's in-memory counter reserved until the next
//! start, which loads the store's right figures).
//! Deliberately absent: keeping unsettled completions across a stop. The store still has those
//! jobs live, so the next start runs them again, charged once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::auth::key::KeyId;
use crate::auth::table::KeyTable;
use crate::clock::now_unix_ms;
use crate::config;
use crate::engine::changes::{changes, Changes, Previous};
use crate::engine::policy::Policy;
use crate::engine::report::{with_last_member, Score, Severity};
use crate::engine::ENGINE_VERSION_TAG;
use crate::jobs::execute::{FailCode, JobSpec, Outcome, ReusedScores};
use crate::jobs::finished::{FinishedJobs, StoredJob};
use crate::jobs::index::StatusIndex;
use crate::jobs::pool::{JobSink, Ticket};
use crate::limits::quota::ReleaseCause;
use crate::metrics::{FailedCode, JobLabel, JobOutcomeLabel, Metrics, WEBHOOKS};
use crate::pubkey::Pubkey;
use crate::signing::ReportSigner;
use crate::store::{
    self, CallbackStatus, Completion, EventRecord, JobKind, JobRecord, MonitorLink, Store, StoreError, Subject,
};

/// The sink of the running server.
pub struct StoreSink {
    pub store: Arc<dyn Store>,
    pub index: Arc<StatusIndex>,
    pub finished: Arc<FinishedJobs>,
    pub keys: Arc<KeyTable>,
    pub metrics: Arc<Metrics>,
    /// Shared with `App::ledger_failing`.
    pub ledger_failing: Arc<AtomicBool>,
    /// Set while completions wait for the store (`service.status: degraded`).
    pub store_failing: Arc<AtomicBool>,
    /// When each running job started, for the duration metric (compute threads only).
    started: papaya::HashMap<String, Instant>,
    /// Completions the store did not take yet, and their payload bytes.
    unsettled: parking_lot::Mutex<(Vec<Unsettled>, usize)>,
    /// Signs each READY report once, as it is stored (`with_signer`); `None`: unsigned.
    signer: Option<Arc<ReportSigner>>,
}

/// A completion the store has not taken yet, and why (its last refusal).
struct Unsettled {
    id: String,
    completion: Completion,
    refusal: StoreError,
}

fn payload_len(completion: &Completion) -> usize {
    match completion {
        Completion::Ready { payload_json, .. } => payload_json.len(),
        Completion::Failed { .. } => 0,
    }
}

/// What a job whose result the store cannot hold ends with.
fn unstorable() -> Completion {
    Completion::Failed {
        code: FailCode::AnalysisFailed.as_str().to_owned(),
        message: "the analysis result could not be stored".to_owned(),
    }
}

impl StoreSink {
    pub fn new(
        store: Arc<dyn Store>,
        index: Arc<StatusIndex>,
        finished: Arc<FinishedJobs>,
        keys: Arc<KeyTable>,
        metrics: Arc<Metrics>,
        failing: Failing,
    ) -> StoreSink {
        let Failing { ledger: ledger_failing, store: store_failing } = failing;
        let (started, unsettled) = (papaya::HashMap::new(), parking_lot::Mutex::new((Vec::new(), 0)));
        let signer = None;
        StoreSink { store, index, finished, keys, metrics, ledger_failing, store_failing, started, unsettled, signer }
    }

    /// The sink that signs every READY report with `signer` as it stores it.
    pub fn with_signer(mut self, signer: Arc<ReportSigner>) -> StoreSink {
        self.signer = Some(signer);
        self
    }

    /// The report signer's periodic upkeep (a cluster node reads the shared keys again).
    pub fn reload_signing_keys(&self) {
        if let Some(signer) = &self.signer {
            signer.reload_if_due();
        }
    }

    /// `completion` with its report's signature over the members a poll will show, completed at
    /// `completed_at_ms` (signed at every attempt to store it: the time is the attempt's). A
    /// report that cannot be signed is stored unsigned, logged — never a failed job.
    fn signed(&self, id: &str, completion: Completion, completed_at_ms: u64) -> Completion {
        let Completion::Ready { payload_json, engine_version, event, .. } = completion else { return completion };
        let kind = match self.index.get(id) {
            Some(live) => Some(live.record.kind.clone()),
            None => self.store.get_job(id).ok().flatten().map(|record| record.kind),
        };
        let signature = match (&self.signer, kind) {
            (Some(signer), Some(kind)) => {
                let report_type = crate::signing::ReportType::of_job(&kind);
                let signed = crate::signing::report_members(id, &kind, completed_at_ms, &payload_json)
                    .and_then(|members| signer.sign(report_type, members))
                    .and_then(|signature| signature.validate().map(|()| signature).map_err(|e| e.to_string()));
                match signed {
                    Ok(signature) => Some(signature),
                    Err(e) => {
                        tracing::error!(job = %id, error = %e, "the report is stored unsigned");
                        None
                    }
                }
            }
            _ => None,
        };
        Completion::Ready { payload_json, engine_version, event, signature }
    }

    /// Writes a job's completion and, once the store took it, settles memory: quota, finished
    /// cache, index (in that order). Returns the completion when the store could not take it.
    fn settle(&self, id: String, completion: Completion) -> Option<Unsettled> {
        let completed_at_ms = now_unix_ms();
        let completion = self.signed(&id, completion, completed_at_ms);
        let written = {
            // The store and memory settle on the same key even if it is being rotated.
            let _gate = self.keys.settlement_gate();
            let written = self.store.complete(&id, completed_at_ms, &completion);
            if let Ok(record) = &written {
                self.settle_quota(record);
            }
            written
        };
        match written {
            Ok(record) => {
                self.observe(&record, &id);
                let payload = match completion {
                    Completion::Ready { payload_json, .. } => Some(Bytes::from(payload_json)),
                    Completion::Failed { .. } => None,
                };
                // Before the index lets go of the job, so a poll finds it in one or the other.
                let kept = self.finished.keep_finished(StoredJob::new(record, payload));
                self.index.remove(&id);
                // After the job reached polls and long polls: the trim is the account's upkeep.
                self.trim_outbox(&kept.record);
                None
            }
            Err(StoreError::Invalid(reason)) if payload_len(&completion) > 0 => {
                tracing::error!(job = %id, %reason, "the result cannot be stored: the job ends FAILED");
                self.settle(id, unstorable())
            }
            Err(e @ StoreError::State { .. }) => {
                // Not live in the store (finished already): nothing is left to settle.
                tracing::warn!(job = %id, error = %e, "a completion found its job finished");
                self.started.pin().remove(&id);
                self.index.remove(&id);
                None
            }
            // Logged once, when kept (`keep_unsettled`): retries run every housekeeping tick.
            Err(refusal) => Some(Unsettled { id, completion, refusal }),
        }
    }

    /// A completion that put a webhook in the outbox keeps the account's outbox within its
    /// bound (`WEBHOOK_OUTBOX_PER_ACCOUNT_MAX`): the oldest pending are given up, recorded.
    /// Never fails the job: a trim the store refuses, or that stops at its round limit, goes
    /// on at the account's next completion (one completion adds one webhook; a trim round
    /// gives up a batch).
    fn trim_outbox(&self, record: &JobRecord) {
        if record.callback.as_ref().is_none_or(|c| c.status != CallbackStatus::Pending) {
            return;
        }
        let _within_bound = trim_outbox(&*self.store, &record.account);
    }

    /// Keeps a completion for `retry_unsettled`, within the payload budget.
    fn keep_unsettled(&self, mut unsettled: Unsettled) {
        let (job, error) = (&unsettled.id, &unsettled.refusal);
        tracing::error!(job = %job, %error, "persisting a job's result failed: kept in memory, retried");
        let mut guard = self.unsettled.lock();
        let (waiting, bytes) = &mut *guard;
        if bytes.saturating_add(payload_len(&unsettled.completion)) > config::UNSETTLED_PAYLOAD_BYTES_MAX {
            unsettled.completion = unstorable();
        }
        *bytes += payload_len(&unsettled.completion);
        waiting.push(unsettled);
        self.store_failing.store(true, Ordering::Relaxed);
    }

    /// Writes the completions the store refused before (housekeeping thread); the service is
    /// `degraded` until none is left.
    pub fn retry_unsettled(&self) {
        let waiting = std::mem::take(&mut *self.unsettled.lock()).0;
        if waiting.is_empty() {
            return;
        }
        let before = waiting.len();
        let left: Vec<Unsettled> = waiting.into_iter().filter_map(|u| self.settle(u.id, u.completion)).collect();
        if left.len() < before {
            tracing::info!(written = before - left.len(), left = left.len(), "kept job results written");
        }
        let mut guard = self.unsettled.lock();
        let (waiting, bytes) = &mut *guard;
        waiting.extend(left);
        *bytes = waiting.iter().map(|u| payload_len(&u.completion)).sum();
        self.store_failing.store(!waiting.is_empty(), Ordering::Relaxed);
    }

    /// Completions waiting for the store.
    pub fn unsettled_len(&self) -> usize {
        self.unsettled.lock().0.len()
    }

    /// Settles the job's unit in memory as the store just did: on its key's counter, or — when
    /// the key was rotated meanwhile — released there and counted on the successor.
    fn settle_quota(&self, record: &JobRecord) {
        if !record.charged {
            return;
        }
        let Some(entry) = KeyId::parse(&record.key_id).ok().and_then(|id| self.keys.get(&id)) else { return };
        let unit = || record.unit();
        let ready = record.state == store::JobState::Ready;
        let successor = self.keys.successor_of(&entry);
        let settled = if !Arc::ptr_eq(&successor, &entry) {
            let released = entry.quota.release(unit(), ReleaseCause::Inherited);
            released.and(successor.quota.inherit(unit(), ready))
        } else if ready {
            entry.quota.commit(unit())
        } else {
            entry.quota.release(unit(), ReleaseCause::Failed)
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
        if let Some(error) = &record.error {
            self.metrics.job_failed(kind, FailedCode::of(&error.code));
        }
        let elapsed_ms = self.started.pin().remove(id).map_or(0, |t| t.elapsed().as_millis());
        // Saturates after 584 million years of one job.
        self.metrics.observe_job(kind, outcome, u64::try_from(elapsed_ms).unwrap_or(u64::MAX));
    }
}

/// The flags a sink raises for `service.status`, shared with `App`.
pub struct Failing {
    pub ledger: Arc<AtomicBool>,
    pub store: Arc<AtomicBool>,
}

/// The store's completion of `outcome`, with the monitor `event` a READY re-analysis caused;
/// a result carries the version tag of the policy it was made under (`engine_version`).
fn store_outcome(outcome: Outcome, event: Option<EventRecord>, engine_version: String) -> Completion {
    match outcome {
        Outcome::Ready { payload } => {
            Completion::Ready { payload_json: payload, engine_version, event, signature: None }
        }
        Outcome::Failed { code, message } => Completion::Failed { code: code.as_str().to_owned(), message },
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
            Err(e @ StoreError::State { .. }) => {
                tracing::info!(job = %ticket.id, error = %e, "a ticket whose job is not live is not run");
                return Err(Outcome::not_live());
            }
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
        let (outcome, event) = match outcome {
            Outcome::Ready { payload } => {
                let (payload, event) = self.with_changes(&ticket, payload);
                (Outcome::Ready { payload }, event)
            }
            failed => (failed, None),
        };
        let engine_version = ticket.policy.version_tag();
        self.complete(ticket.id, outcome, event, engine_version);
    }

    fn finished_plainly(&self, id: &str, outcome: Outcome) {
        // Only FAILED outcomes come here (a panic's): they carry no result, so no version tag.
        self.complete(id.to_owned(), outcome, None, ENGINE_VERSION_TAG.to_owned());
    }
}

impl StoreSink {
    /// Settles the job with `outcome`, or keeps the completion for a retry when the store
    /// refuses it.
    fn complete(&self, id: String, outcome: Outcome, event: Option<EventRecord>, engine_version: String) {
        if let Some(unsettled) = self.settle(id, store_outcome(outcome, event, engine_version)) {
            self.keep_unsettled(unsettled);
        }
    }
}

impl StoreSink {
    /// An analysis' payload with its `changes` against the account's previous READY analysis of
    /// the wallet (`null` when there is none, or it was made by other engine versions), and —
    /// for a monitor's re-analysis whose changes cross the monitor's thresholds — its event.
    /// Never fails the job: a previous analysis that cannot be read or compared gives `null`
    /// (and no event), logged.
    fn with_changes(&self, ticket: &Ticket, payload: Vec<u8>) -> (Vec<u8>, Option<EventRecord>) {
        let JobSpec::Analysis { wallet } = &ticket.spec else { return (payload, None) };
        // The engine always makes an object; anything else is left for the store to judge.
        if !(payload.starts_with(b"{") && payload.ends_with(b"}") && payload.len() > 2) {
            return (payload, None);
        }
        let found = self.changes(&ticket.id, wallet, &payload).unwrap_or_else(|e| {
            tracing::warn!(job = %ticket.id, error = %e, "changes since the previous analysis not computed");
            (None, None)
        });
        let (changes, monitor) = found;
        let event = match (&changes, monitor) {
            (Some(changes), Some(link)) => event_of(&ticket.id, changes, &link),
            _ => None,
        };
        let member = match changes.map(|c| serde_json::to_vec(&c)) {
            Some(Ok(json)) => json,
            _ => b"null".to_vec(),
        };
        (with_last_member(payload, 1, "changes", &member), event)
    }

    /// The changes of job `id` against the account's previous READY analysis of `wallet` (a
    /// monitor's re-analysis: against the watch's last READY one), and the job's monitor link
    /// when it may make an event (a re-analysis that is no baseline).
    fn changes(
        &self,
        id: &str,
        wallet: &Pubkey,
        payload: &[u8],
    ) -> Result<(Option<Changes>, Option<MonitorLink>), String> {
        let (account, monitor) = match self.index.get(id) {
            Some(live) => (live.record.account.clone(), live.record.monitor.clone()),
            None => {
                let record = self.store.get_job(id).map_err(|e| e.to_string())?.ok_or("the job is gone")?;
                (record.account, record.monitor)
            }
        };
        let wallet = wallet.to_base58();
        // A monitor's re-analysis: against the watch's last READY analysis (a baseline has
        // none, and makes no event); any other, or one whose previous was purged meanwhile:
        // against the account's newest READY analysis of the wallet.
        let of_link = match monitor.as_ref().and_then(|link| link.previous_analysis_id.as_deref()) {
            Some(previous) => self.finished.job(&*self.store, previous).map_err(|e| e.to_string())?.filter(|job| {
                job.record.account == account
                    && matches!(&job.record.kind, JobKind::Analysis { wallet: w } if *w == wallet)
            }),
            None => None,
        };
        let previous = match of_link {
            Some(job) => Some(job),
            None => {
                let newest =
                    self.store.latest_ready_for(&account, Subject::Wallet(&wallet)).map_err(|e| e.to_string())?;
                match newest.filter(|job| job.id != id) {
                    Some(job) => self.finished.job(&*self.store, &job.id).map_err(|e| e.to_string())?,
                    None => None,
                }
            }
        };
        let monitor = monitor.filter(|link| link.previous_analysis_id.is_some());
        let Some((previous, Some(previous_payload))) = previous.map(|job| (job.record.clone(), job.payload.clone()))
        else {
            return Ok((None, monitor));
        };
        let completed_at = crate::clock::rfc3339_ms(previous.completed_at_ms.unwrap_or(previous.created_at_ms));
        let previous = Previous { analysis_id: &previous.id, completed_at: &completed_at, payload: &previous_payload };
        Ok((changes(previous, payload)?, monitor))
    }
}

/// The event of a monitor's re-analysis `job_id` whose `changes` cross the thresholds its link
/// carries; `None` when they do not.
fn event_of(job_id: &str, changes: &Changes, link: &MonitorLink) -> Option<EventRecord> {
    let min_severity = Severity::parse(&link.min_severity).unwrap_or(Severity::High);
    changes.crosses(min_severity, link.score_drop).then(|| EventRecord::of_job(job_id, now_unix_ms()))
}

/// The `score` member of a stored X-Ray.
#[derive(serde::Deserialize)]
struct StoredScore {
    score: Score,
}

impl ReusedScores for StoreSink {
    fn score_of(&self, analysis_id: &str, policy: &Policy) -> Option<Score> {
        let job = self.finished.job(&*self.store, analysis_id).ok().flatten()?;
        if !policy.has_tag(&job.record.engine_version) {
            return None;
        }
        serde_json::from_slice::<StoredScore>(job.payload.as_ref()?).ok().map(|s| s.score)
    }
}

/// Keeps `account`'s webhook outbox within `WEBHOOK_OUTBOX_PER_ACCOUNT_MAX` after a webhook
/// entered it (a completion, or an attach to a finished job): the oldest pending are given up,
/// recorded and counted — a batch (`OUTBOX_TRIM_BATCH_MAX`) per trim, trimmed again while a
/// trim gave up a whole batch, at most `OUTBOX_TRIM_ROUNDS_MAX` times. Never fails its caller:
/// returns false when the outbox may still be over its bound (the last trim gave up a whole
/// batch, or the store refused one), for the caller to try again.
pub fn trim_outbox(store: &dyn Store, account: &str) -> bool {
    let mut given_up = 0;
    let mut within = false;
    for _ in 0..config::OUTBOX_TRIM_ROUNDS_MAX {
        match store.trim_outbox(account, config::WEBHOOK_OUTBOX_PER_ACCOUNT_MAX) {
            Ok(round) => {
                given_up += round;
                within = round < config::OUTBOX_TRIM_BATCH_MAX;
            }
            Err(e) => {
                tracing::warn!(%account, error = %e, "trimming the webhook outbox failed");
                break;
            }
        }
        if within {
            break;
        }
    }
    if given_up > 0 {
        WEBHOOKS.given_up(given_up);
        tracing::warn!(%account, given_up, "webhook outbox full: the oldest given up");
    }
    within
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::changes::fixtures::moved;

    fn link(min_severity: &str, score_drop: Option<u8>) -> MonitorLink {
        MonitorLink {
            monitor_id: "mon_1".into(),
            callback_url: "https://hooks.example.com/x".into(),
            min_severity: min_severity.into(),
            score_drop,
            previous_analysis_id: Some("an_prev".into()),
            event: None,
        }
    }

    #[test]
    fn a_re_analysis_makes_its_event_only_when_its_changes_cross_the_links_thresholds() {
        let event = event_of("an_abc", &moved(-10, &[]), &link("high", Some(10))).expect("a drop of scoreDrop");
        assert_eq!(event.id, "evt_abc");
        assert!(event_of("an_abc", &moved(-11, &[]), &link("high", Some(10))).is_some(), "past scoreDrop");
        assert!(event_of("an_abc", &moved(-9, &[]), &link("high", Some(10))).is_none(), "short of scoreDrop");
        assert!(event_of("an_abc", &moved(10, &[]), &link("high", Some(10))).is_none(), "a rise");
        assert!(event_of("an_abc", &moved(0, &[]), &link("info", Some(1))).is_none(), "no change, scoreDrop set");
        assert!(event_of("an_abc", &moved(0, &[]), &link("info", None)).is_none(), "no change");
        assert!(event_of("an_abc", &moved(0, &[Severity::Medium]), &link("high", None)).is_none(), "below");
        assert!(event_of("an_abc", &moved(0, &[Severity::High]), &link("high", None)).is_some(), "at minSeverity");
        // A link whose minSeverity cannot be read holds to the default, high.
        assert!(event_of("an_abc", &moved(0, &[Severity::Medium]), &link("severe", None)).is_none());
        assert!(event_of("an_abc", &moved(0, &[Severity::High]), &link("severe", None)).is_some());
    }
}
