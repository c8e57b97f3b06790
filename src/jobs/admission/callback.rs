//! A request's `callbackUrl` when its answer names a job that already existed — deduplicated
//! onto a live job, a fresh READY result reused, or a kept answer replayed (issue #32): the
//! URL is attached to that job (`Store::attach_callback`), never ignored, and the answer's
//! `callback` says what came of it.
//!
//! Owns: `CallbackAnswer`; the attach through the node's store (RocksDB, or etcd awaited);
//! what memory learns of it (the live job's webhook for its polls, the finished job kept in
//! memory); and the accounts whose outbox an attach grew, trimmed on the housekeeping thread
//! (`trim_grown_outboxes`) as a completion's is by the sink — queued again while a trim leaves
//! the outbox over its bound. Called on listener threads.
//!
//! Invariant: a job's webhook is never replaced: a job with another URL keeps it (an earlier
//! request of the same account was promised that delivery) and the answer says `attached:
//! false`. A job without one gets this request's, delivered when the job finishes — at once
//! when it already has — with the document a poll answers, signed as every delivery is.
//! Invariant: nothing is charged for an attach, and a request whose attach the store could not
//! make is refused (503, retry) rather than answered as if a delivery was promised.
//! Deliberately absent: undoing an attach the store wrote when the request is refused after
//! it (its `--sync-writes` wait failed, or etcd's answer to it was lost): the webhook stands and
//! may deliver; the retry with the same URL is answered `attached: true` (documented in the
//! README and OpenAPI). Re-arming a webhook of the same URL that already settled (`DELIVERED`
//! or `FAILED`: the answer shows that state; `refresh: true` makes new work with its own), and
//! telling other nodes of a cluster: a node that runs the live job, or kept the finished one in
//! memory, before another node attached to it shows no `callback` in its polls until the job
//! finishes there or leaves its memory — the delivery itself is the cluster's outbox's.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::{Admission, AdmitError, Decision};
use crate::config::OUTBOX_TRIMS_WAITING_MAX;
use crate::jobs::finished::StoredJob;
use crate::store::{Attached, Callback, JobRecord, JobState, StoreError};

/// What a request's `callbackUrl` came to on the job its answer names.
#[derive(Debug, Clone)]
pub struct CallbackAnswer {
    /// The job's webhook as it is now.
    pub callback: Callback,
    /// True when the job's webhook is this request's URL (attached now, or already).
    pub attached: bool,
    /// True when the store wrote the attach: the answer waits until it is durable.
    pub wrote: bool,
}

/// Accounts whose outbox an attach grew since the housekeeping thread last trimmed, or whose
/// trim left it over its bound; and how many were not queued for want of room since then.
#[derive(Default)]
pub(super) struct GrownOutboxes {
    accounts: parking_lot::Mutex<HashSet<String>>,
    not_queued: AtomicU64,
}

impl Admission {
    /// The webhook of the job `decision` names, with `url` — the request's `callbackUrl` —
    /// attached when the job existed before this request (a new job was admitted with it).
    /// `account` is the caller's: the store refuses the attach to another account's job (the
    /// job's own account would make that check compare the job with itself). `key_id` is the
    /// caller's key, recorded with the attach: delivery checks it may still read the document.
    pub async fn callback_of(
        &self,
        decision: &Decision,
        account: &str,
        key_id: &str,
        url: &str,
        now_ms: u64,
    ) -> Result<CallbackAnswer, AdmitError> {
        let record = match decision {
            // Admitted with this request's URL as its webhook: nothing to attach.
            Decision::Admitted(record) => return answer(record, url, false),
            Decision::Live(live, _) => &live.record,
            Decision::Fresh(job) => &job.record,
            Decision::Replayed(replay) => &replay.record,
        };
        let attached = match self.cluster() {
            Some(etcd) => {
                let (id, account, key_id) = (record.id.clone(), account.to_owned(), key_id.to_owned());
                etcd.attach_callback_async(id, account, key_id, url.to_owned(), now_ms).await
            }
            None => self.store.attach_callback(&record.id, account, key_id, url, now_ms),
        };
        let attached = attached.map_err(job_gone)?;
        self.remember(&attached).await;
        let job = attached.job();
        answer(job, url, matches!(attached, Attached::New(_)))
    }

    /// Memory learns of a webhook just attached: a live job's polls show it; a finished job's
    /// record is kept with it (the trim of its account's outbox is queued).
    async fn remember(&self, attached: &Attached) {
        let Attached::New(job) = attached else { return };
        let Some(callback) = job.callback.clone() else { return };
        if !job.state.is_finished() {
            if let Some(live) = self.index.get(&job.id) {
                live.attach(callback);
            }
            return;
        }
        self.outbox_grew(&job.account);
        match self.payload_of(job).await {
            Ok(payload) => {
                self.finished.keep_finished(StoredJob::new(job.clone(), payload));
            }
            // The store has the webhook; a poll reading this job from memory does not show it
            // until the entry is read again.
            Err(e) => tracing::warn!(job = %job.id, error = %e, "the attached webhook is not in memory yet"),
        }
    }

    /// A finished job's payload for memory: the kept one, else read from the store.
    async fn payload_of(&self, job: &JobRecord) -> Result<Option<Bytes>, StoreError> {
        if let Some(kept) = self.finished.cached(&job.id) {
            return Ok(kept.payload.clone());
        }
        if job.state != JobState::Ready {
            return Ok(None);
        }
        let payload = match self.cluster() {
            Some(etcd) => etcd.get_result_async(job.clone()).await?,
            None => self.store.get_result(job)?,
        };
        payload.map(|p| Some(Bytes::from(p))).ok_or_else(|| StoreError::State {
            id: job.id.clone(),
            op: "read the result of",
            state: "purged".into(),
        })
    }

    /// Queues `account`'s outbox for the housekeeping thread's trim. With no room
    /// (`OUTBOX_TRIMS_WAITING_MAX`) it is counted, for the next tick to report: the account's
    /// next completion trims it, as does its next attach that finds room.
    fn outbox_grew(&self, account: &str) {
        let mut accounts = self.grown_outboxes.accounts.lock();
        if accounts.len() < OUTBOX_TRIMS_WAITING_MAX || accounts.contains(account) {
            accounts.insert(account.to_owned());
        } else {
            self.grown_outboxes.not_queued.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Trims the outbox of every account queued (the housekeeping thread): each within
    /// `WEBHOOK_OUTBOX_PER_ACCOUNT_MAX`, as the sink keeps it after a completion. An account
    /// whose trim stopped short (its round limit, or a store refusal) is queued again.
    pub fn trim_grown_outboxes(&self) {
        let not_queued = self.grown_outboxes.not_queued.swap(0, Ordering::Relaxed);
        if not_queued > 0 {
            tracing::warn!(not_queued, "outbox trims not queued: too many accounts waiting");
        }
        let accounts = std::mem::take(&mut *self.grown_outboxes.accounts.lock());
        for account in &accounts {
            if !crate::jobs::sink::trim_outbox(&*self.store, account) {
                self.outbox_grew(account);
            }
        }
    }
}

/// The answer's `callback`: the job's webhook, and whether it is `url`.
fn answer(job: &JobRecord, url: &str, wrote: bool) -> Result<CallbackAnswer, AdmitError> {
    let callback = job.callback.clone().ok_or_else(|| StoreError::Invalid(format!("job {} has no webhook", job.id)))?;
    Ok(CallbackAnswer { attached: callback.url == url, callback, wrote })
}

/// The store's refusal of an attach as admission answers it: a job gone since the decision
/// named it (purged, or its admission undone) is a retry — the retry is answered anew.
fn job_gone(e: StoreError) -> AdmitError {
    match e {
        StoreError::State { id, .. } => AdmitError::Store(StoreError::Unavailable(format!(
            "job {id} is gone since it answered this request; retry the request"
        ))),
        other => AdmitError::Store(other),
    }
}
