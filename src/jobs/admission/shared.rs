//! Admission on a node of a cluster (`--store etcd:…`): the same steps as the embedded store's,
//! with deduplication, the quota check and the durable record made by one etcd transaction
//! (`EtcdStore::admit_async`), awaited on the listener thread (the request runs on
//! `xray-etcd`), so the cluster as a whole admits as one node would.
//!
//! Order, for a request without `refresh`: (1) a live job of the account and subject on this
//! node (status index), then on any node (the subject's live-job pointer in etcd) →
//! deduplicated; (2) the subject's newest READY job in etcd, made by this build's engines and
//! younger than the freshness window → reused (read after (1), so a job finishing in between
//! is found here); (3) queue room; (4) the
//! admission transaction — it deduplicates onto a live job another node admitted, refuses when
//! the account holds `live_jobs_per_account_max` live jobs across the cluster (429
//! `TOO_MANY_JOBS`) or `used + reserved` reached the key's limit, else records the job, its
//! indexes, its owner (this node's lease), the account's live count and the reservation;
//! (5)–(6) index and queue, undone in etcd (`cancel_admission_async`) on a refusal.
//!
//! Invariant: a 202 is sent only after etcd committed the job (a quorum fsynced it).
//! Invariant: a transaction whose answer was lost (a timeout) is repeated with the same job
//! id, once: it is idempotent, so a repeat never admits or charges twice. When the repeat
//! fails too, the admission is undone if it can be (refused, nothing charged); if it cannot
//! and etcd holds the job, the admission stood and is answered as admitted (202, charged
//! once) — a refusal is never sent for a job that runs and is charged, except when etcd can
//! answer neither the undo nor the read: then the outcome is unknown and the 503 says so.
//! Invariant: on one node, admissions of one account send their transactions one at a time
//! (an async lane per account stripe, `ADMISSION_LANES`): they compare the same live count and
//! their keys' usage records, so a hot account's compare-and-swap conflicts only with other
//! nodes' — at most one contender per node, far below `ETCD_CAS_ATTEMPTS_MAX`.
//! Deliberately absent: the subject locks of the embedded path (the transaction's compares on
//! the subject's live-job pointer serialise equal requests across nodes), and reuse of fresh
//! analyses in a comparison's spec (that lookup would be a blocking etcd read here).

use std::sync::Arc;

use super::{Admission, AdmitError, AdmitRequest, Decision, Work};
use crate::auth::table::KeyEntry;
use crate::engine::policy::Policy;
use crate::jobs::execute::JobSpec;
use crate::jobs::finished::StoredJob;
use crate::jobs::index::LiveJob;
use crate::jobs::pool::Ticket;
use crate::limits::quota::{period_end_ms, period_start_ms, QuotaExhausted, UsageRecord};
use crate::store::etcd::{AdmitChecks, Admitted, EtcdStore, OwnedSubject, Reply};
use crate::store::{IdempotentAnswer, JobKind, JobRecord, JobState, StoreError};

/// Sends of one admission transaction (the first and one repeat after a lost answer).
const ADMIT_ATTEMPTS_MAX: usize = 2;
/// Async lanes admissions of one account wait in (striped by account id).
const ADMISSION_LANES: usize = 64;

/// A cluster node's admission state: the store and the per-key lanes.
pub(super) struct Cluster {
    pub(super) etcd: Arc<EtcdStore>,
    lanes: Box<[tokio::sync::Mutex<()>]>,
    hash_key: std::collections::hash_map::RandomState,
}

impl Cluster {
    pub(super) fn new(etcd: Arc<EtcdStore>) -> Cluster {
        let lanes = (0..ADMISSION_LANES).map(|_| tokio::sync::Mutex::new(())).collect();
        Cluster { etcd, lanes, hash_key: Default::default() }
    }

    /// The lane of `account` (awaited, never blocking the listener thread).
    async fn lane(&self, account: &str) -> tokio::sync::MutexGuard<'_, ()> {
        use std::hash::BuildHasher;
        let slot = self.hash_key.hash_one(account) as usize % self.lanes.len();
        self.lanes[slot].lock().await
    }
}

impl Admission {
    /// Steps 8–10 for one request, through the cluster's etcd.
    pub async fn admit_in_cluster(&self, etcd: &EtcdStore, request: &AdmitRequest<'_>) -> Result<Decision, AdmitError> {
        let AdmitRequest { key, work, refresh, now_ms, idempotency, .. } = *request;
        let kind = work.kind();
        let account = key.account().as_str();
        // One read of the policy decides and runs this request (as on one node).
        let policy = self.policies.policy(account);
        // A live job under another version of the policy is not joined: its result would not
        // be this policy's. Once one is seen, etcd's own deduplication is off for this request
        // (it would join that job): for the moments both versions' jobs are live, two nodes
        // may each admit one under the new version, each charged to its own request.
        let mut dedup = !refresh;
        if !refresh {
            if let Some(live) =
                self.index.live_for(account, kind.subject()).filter(|j| policy.has_tag(&j.record.engine_version))
            {
                return Ok(Decision::live(live));
            }
            // The subject's live job on any node before its fresh result: a job that finishes
            // between the two reads is found by the second (read the other way round, it could
            // be missed by both, and the transaction, finding no live job, would admit anew).
            let subject = OwnedSubject::of(kind.subject());
            match etcd.live_of_subject_async(account.to_owned(), subject).await? {
                Some(job) if policy.has_tag(&job.engine_version) => {
                    return Ok(Decision::live(Arc::new(LiveJob::new(job))))
                }
                Some(_) => dedup = false,
                None => {}
            }
            if let Some(fresh) = self.fresh_in_cluster(etcd, account, &kind, &policy, now_ms).await? {
                return Ok(Decision::Fresh(fresh));
            }
        }
        if self.queue_room() == 0 {
            return Err(AdmitError::Busy);
        }
        let mut record = JobRecord::queued(
            super::job_id(work.id_prefix())?,
            kind,
            account.to_owned(),
            key.id().as_str().to_owned(),
            now_ms,
            refresh,
            true,
            period_start_ms(now_ms, key.quota.period()),
            policy.version_tag(),
        );
        record.idempotency_digest = idempotency.map(|k| k.key_digest);
        let record = record.linked(request.callback_url, request.monitor);
        let answer = idempotency.map(|k| k.answer(&record, JobState::Queued, false, now_ms));
        let admitted = {
            let _one_per_account = match &self.cluster {
                Some(cluster) => Some(cluster.lane(account).await),
                None => None,
            };
            let live_max = Some(self.index.per_account_max() as u64);
            let checks = AdmitChecks { quota_limit: Some(key.quota.limit()), live_max, dedup };
            admit_once(etcd, &record, checks, answer).await?
        };
        let admitted = match admitted {
            Sent::Answered(admitted) => admitted,
            // It stood, but etcd's usage of the key was not read: memory's view is refreshed
            // by the next status or usage read (the cluster's quota is etcd's, not this view).
            Sent::Stood => {
                return self.queue_in_cluster(etcd, record, work, policy).await.map(|r| Decision::Admitted(Box::new(r)))
            }
        };
        match admitted {
            Admitted::New { usage } => {
                key.quota.restore(record.quota_period_start_ms, &usage, now_ms);
                self.queue_in_cluster(etcd, record, work, policy).await.map(|r| Decision::Admitted(Box::new(r)))
            }
            Admitted::Live(job) => Ok(Decision::live(Arc::new(LiveJob::new(*job)))),
            Admitted::Exhausted { usage } => {
                key.quota.restore(record.quota_period_start_ms, &usage, now_ms);
                Err(AdmitError::QuotaExhausted { refusal: exhausted(key, &usage, now_ms), now_ms })
            }
            Admitted::TooManyJobs { live_max } => {
                Err(AdmitError::TooManyJobs { limit: usize::try_from(live_max).unwrap_or(usize::MAX) })
            }
            // Another node kept an answer of this key first: that answer (its job is never
            // gone while the answer lives; if it were, the client's retry admits anew).
            Admitted::Answered(first) => {
                let key = idempotency.ok_or_else(|| StoreError::Invalid("an answer met without a key".into()))?;
                match self.replay_answer(etcd, *first, &record.account, key).await? {
                    Some(replay) => Ok(Decision::Replayed(replay)),
                    None => Err(AdmitError::Store(StoreError::Unavailable("the answered job is gone".into()))),
                }
            }
        }
    }

    /// The subject's newest READY job in etcd if this build made it and it is fresh — from
    /// memory when this node already holds it, else read with its payload and kept (the
    /// client's next poll, on this node, is then answered from memory).
    async fn fresh_in_cluster(
        &self,
        etcd: &EtcdStore,
        account: &str,
        kind: &JobKind,
        policy: &Policy,
        now_ms: u64,
    ) -> Result<Option<Arc<StoredJob>>, AdmitError> {
        let subject = OwnedSubject::of(kind.subject());
        let newest_ready = etcd.newest_async(account.to_owned(), subject, true).await?;
        let Some(record) = newest_ready.filter(|job| self.is_fresh(job, policy, now_ms)) else { return Ok(None) };
        if let Some(kept) = self.finished.cached(&record.id) {
            return Ok(Some(kept));
        }
        let Some(payload) = etcd.get_result_async(record.clone()).await? else { return Ok(None) };
        Ok(Some(self.finished.keep_finished(StoredJob::new(record, Some(payload.into())))))
    }

    /// Steps (5)–(6) of a job etcd recorded; a refusal is undone in etcd.
    async fn queue_in_cluster(
        &self,
        etcd: &EtcdStore,
        record: JobRecord,
        work: &Work,
        policy: Arc<Policy>,
    ) -> Result<JobRecord, AdmitError> {
        let ticket = Ticket::new(record.id.clone(), spec_without_reuse(work)).under(policy);
        let Err(refused) = self.enqueue(&record, ticket) else { return Ok(record) };
        let undone = etcd.cancel_admission_async(record.id.clone()).await;
        self.settle_refusal(record, refused, undone)
    }
}

/// The four etcd operations an admission's transaction sends: the seam where a test puts a
/// link that loses answers after etcd committed (a fault etcd itself cannot be made to show).
pub trait AdmissionLink {
    fn send_admit(&self, job: JobRecord, checks: AdmitChecks, answer: Option<IdempotentAnswer>) -> Reply<Admitted>;
    fn send_cancel(&self, id: String) -> Reply<()>;
    fn read_job(&self, id: String) -> Reply<Option<JobRecord>>;
    fn read_usage(&self, key_id: String, period_start_ms: u64) -> Reply<UsageRecord>;
}

impl AdmissionLink for EtcdStore {
    fn send_admit(&self, job: JobRecord, checks: AdmitChecks, answer: Option<IdempotentAnswer>) -> Reply<Admitted> {
        self.admit_async(job, checks, answer)
    }
    fn send_cancel(&self, id: String) -> Reply<()> {
        self.cancel_admission_async(id)
    }
    fn read_job(&self, id: String) -> Reply<Option<JobRecord>> {
        self.get_job_async(id)
    }
    fn read_usage(&self, key_id: String, period_start_ms: u64) -> Reply<UsageRecord> {
        self.usage_async(key_id, period_start_ms)
    }
}

/// The admission transaction, repeated once with the same job id when its answer was lost;
/// when both fail, it may have committed: it is undone if etcd takes the undo (then refused,
/// nothing charged); else, when etcd holds the job, the admission stood and is answered as
/// one (202: it runs and is charged once); only when etcd can tell neither is the request
/// refused with its outcome unknown (a retry of it is deduplicated onto the job if one stood).
pub async fn admit_once(
    etcd: &dyn AdmissionLink,
    record: &JobRecord,
    checks: AdmitChecks,
    answer: Option<IdempotentAnswer>,
) -> Result<Sent, StoreError> {
    let mut last = None;
    for _ in 0..ADMIT_ATTEMPTS_MAX {
        match etcd.send_admit(record.clone(), checks, answer.clone()).await {
            Ok(admitted) => return Ok(Sent::Answered(admitted)),
            Err(e @ StoreError::Unavailable(_)) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    let lost = last.unwrap_or_else(|| StoreError::Unavailable("etcd did not answer the admission".into()));
    let Err(undo) = etcd.send_cancel(record.id.clone()).await else { return Err(lost) };
    match etcd.read_job(record.id.clone()).await {
        Ok(None) => Err(lost),
        Ok(Some(_)) => {
            tracing::warn!(job = %record.id, error = %undo, "an admission whose answer was lost stood: answered as admitted");
            let usage = etcd.read_usage(record.key_id.clone(), record.quota_period_start_ms).await;
            Ok(usage.map_or(Sent::Stood, |usage| Sent::Answered(Admitted::New { usage })))
        }
        Err(e) => {
            tracing::warn!(job = %record.id, error = %e, "an admission etcd did not confirm may stand (adoption runs it)");
            Err(StoreError::Unavailable(
                "etcd did not confirm the admission; retry the request (it is deduplicated onto the job if one stood)"
                    .into(),
            ))
        }
    }
}

/// What came of sending the admission transaction: etcd's answer, or — its answers lost and
/// the undo refused — a job found standing whose key's usage could not be read.
#[derive(Debug)]
pub enum Sent {
    Answered(Admitted),
    Stood,
}

/// The 429's details from the usage etcd refused with.
fn exhausted(key: &KeyEntry, usage: &UsageRecord, now_ms: u64) -> QuotaExhausted {
    QuotaExhausted {
        limit: key.quota.limit(),
        used: usage.used.max(0) as u64,
        reserved: usage.reserved.max(0) as u64,
        resets_at_ms: period_end_ms(now_ms, key.quota.period()),
        needed: 1,
    }
}

/// The compute spec of new work (a comparison computes both wallets afresh).
fn spec_without_reuse(work: &Work) -> JobSpec {
    match work {
        Work::Analysis { wallet } => JobSpec::Analysis { wallet: *wallet },
        Work::Comparison { wallet_a, wallet_b } => {
            JobSpec::Comparison { wallet_a: *wallet_a, wallet_b: *wallet_b, reuse: [None, None] }
        }
    }
}
