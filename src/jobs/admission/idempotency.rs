//! Idempotent retries (`Idempotency-Key`): the first answer of a work-creating request is kept
//! with its job (in the admission's own write) or, when it made no job (deduplicated, a fresh
//! result reused), on its own; a repeat with the same key and the same request within
//! `config::IDEMPOTENCY_TTL_MS` gets that answer again and no new charge.
//!
//! Owns: `IdempotencyKey` (the digests admission works with), the per-node in-flight set
//! (`InFlight`: a repeat while the first is still being admitted is refused, never run twice),
//! and the lookups of a kept answer on both stores. Called on listener threads by the API.
//!
//! Invariant: the key's text never reaches the store or a log: only its SHA-256.
//! Invariant: an answer is replayed only for the same account, the same key and the same
//! request (fingerprint); the same key with another request is `IdempotencyKeyReused`.
//! Invariant: an answer whose job is gone (never: jobs outlive the 24 h window) is as good as
//! absent — the request is admitted anew.
//! Deliberately absent: waiting for an in-flight first request (it answers within the
//! admission's bounded time; the client retries after `Retry-After`), and cross-node in-flight
//! tracking (the etcd transaction's compare on the answer key makes one node's admission win).

use std::collections::HashSet;

use super::{Admission, AdmitError, Decision};
use crate::store::etcd::EtcdStore;
use crate::store::{IdempotentAnswer, JobRecord, JobState};

/// What admission knows of a request's `Idempotency-Key`: digests only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdempotencyKey {
    /// SHA-256 of the key's text.
    pub key_digest: [u8; 32],
    /// SHA-256 of what the request asks (route, addresses, flags), made by the API.
    pub fingerprint: [u8; 32],
}

/// A kept answer to send again: the job it named, in the state it named.
#[derive(Debug, Clone)]
pub struct Replay {
    pub record: Box<JobRecord>,
    pub state: JobState,
    pub deduplicated: bool,
}

/// Keys of this node's requests still being admitted, per account. Bounded by the requests in
/// flight (each entry lives as long as one request's admission).
#[derive(Default)]
pub(super) struct InFlight {
    keys: parking_lot::Mutex<HashSet<(String, [u8; 32])>>,
}

/// Holds a key in flight; dropping it (the request answered, or dropped) lets a repeat in.
pub struct InFlightGuard<'a> {
    set: &'a InFlight,
    entry: Option<(String, [u8; 32])>,
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            self.set.keys.lock().remove(&entry);
        }
    }
}

impl IdempotencyKey {
    /// The answer to keep for `record` in `state`, made at `now_ms`.
    pub(super) fn answer(
        &self,
        record: &JobRecord,
        state: JobState,
        deduplicated: bool,
        now_ms: u64,
    ) -> IdempotentAnswer {
        IdempotentAnswer {
            account: record.account.clone(),
            key_digest: self.key_digest,
            fingerprint: self.fingerprint,
            job_id: record.id.clone(),
            state,
            deduplicated,
            created_at_ms: now_ms,
        }
    }
}

impl Admission {
    /// Marks `key` of `account` in flight on this node, or refuses a repeat that arrives while
    /// the first is still being admitted (409 `IDEMPOTENCY_KEY_IN_PROGRESS`).
    pub fn enter(&self, account: &str, key: &IdempotencyKey) -> Result<InFlightGuard<'_>, AdmitError> {
        let entry = (account.to_owned(), key.key_digest);
        if !self.in_flight.keys.lock().insert(entry.clone()) {
            return Err(AdmitError::IdempotencyKeyInProgress);
        }
        Ok(InFlightGuard { set: &self.in_flight, entry: Some(entry) })
    }

    /// The kept answer of `key`, if one is live at `now_ms`, on this node's store.
    pub async fn kept(&self, account: &str, key: &IdempotencyKey, now_ms: u64) -> Result<Option<Replay>, AdmitError> {
        match self.cluster() {
            Some(etcd) => self.replay_in_cluster(etcd, account, key, now_ms).await,
            None => self.replay(account, key, now_ms),
        }
    }

    /// The kept answer of `key`, if one is live at `now_ms` (embedded store).
    fn replay(&self, account: &str, key: &IdempotencyKey, now_ms: u64) -> Result<Option<Replay>, AdmitError> {
        let kept = self.store.get_answer(account, &key.key_digest)?.filter(|a| a.is_live_at(now_ms));
        let Some(answer) = kept else { return Ok(None) };
        check_same_request(&answer, key)?;
        let record = match self.index.get(&answer.job_id) {
            Some(live) => Some(live.record.clone()),
            None => self.store.get_job(&answer.job_id)?,
        };
        Ok(owned_replay(&answer, account, record))
    }

    /// The kept answer of `key`, if one is live at `now_ms` (a cluster node).
    async fn replay_in_cluster(
        &self,
        etcd: &EtcdStore,
        account: &str,
        key: &IdempotencyKey,
        now_ms: u64,
    ) -> Result<Option<Replay>, AdmitError> {
        let kept = etcd.get_answer_async(account.to_owned(), key.key_digest).await?;
        let Some(answer) = kept.filter(|a| a.is_live_at(now_ms)) else { return Ok(None) };
        self.replay_answer(etcd, answer, account, key).await
    }

    /// Keeps the answer of a request that made no job (`Live` or `Fresh`), naming `record` in
    /// `state`. Another answer of the key kept first (a racing node) is replayed instead.
    pub(super) async fn keep_answer(
        &self,
        key: &IdempotencyKey,
        record: &JobRecord,
        state: JobState,
        now_ms: u64,
    ) -> Result<Option<Decision>, AdmitError> {
        let answer = key.answer(record, state, true, now_ms);
        let first = match self.cluster() {
            Some(etcd) => etcd.put_answer_async(answer).await?,
            None => self.store.put_answer(&answer)?,
        };
        let Some(first) = first else { return Ok(None) };
        let replay = match self.cluster() {
            Some(etcd) => self.replay_answer(etcd, first, &record.account, key).await?,
            None => self.replay(&record.account, key, first.created_at_ms)?,
        };
        Ok(replay.map(Decision::Replayed))
    }

    /// The replay of an answer another admission kept (read from etcd with its job), for a
    /// request of `account`.
    pub(super) async fn replay_answer(
        &self,
        etcd: &EtcdStore,
        answer: IdempotentAnswer,
        account: &str,
        key: &IdempotencyKey,
    ) -> Result<Option<Replay>, AdmitError> {
        check_same_request(&answer, key)?;
        let record = match self.index.get(&answer.job_id) {
            Some(live) => Some(live.record.clone()),
            None => etcd.get_job_async(answer.job_id.clone()).await?,
        };
        Ok(owned_replay(&answer, account, record))
    }
}

fn check_same_request(answer: &IdempotentAnswer, key: &IdempotencyKey) -> Result<(), AdmitError> {
    if answer.fingerprint != key.fingerprint {
        return Err(AdmitError::IdempotencyKeyReused);
    }
    Ok(())
}

/// The replay of `answer` for a request of `account`: none when its job is gone or is not
/// `account`'s — a replay names the job to the caller and lets it attach a webhook, so a kept
/// answer never reaches another account's job, whatever the answer names.
fn owned_replay(answer: &IdempotentAnswer, account: &str, record: Option<JobRecord>) -> Option<Replay> {
    record.filter(|r| r.account == account).map(|record| replay_of(answer, record))
}

fn replay_of(answer: &IdempotentAnswer, record: JobRecord) -> Replay {
    Replay { record: Box::new(record), state: answer.state, deduplicated: answer.deduplicated }
}

/// A replay as the decision the API answers.
impl From<Replay> for Decision {
    fn from(replay: Replay) -> Decision {
        Decision::Replayed(replay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_in_flight_once_per_account_until_its_guard_drops() {
        let set = InFlight::default();
        let guard = |account: &str, digest: u8| {
            let entry = (account.to_owned(), [digest; 32]);
            let inserted = set.keys.lock().insert(entry.clone());
            inserted.then(|| InFlightGuard { set: &set, entry: Some(entry) })
        };
        let first = guard("acct_a", 1);
        assert!(first.is_some());
        assert!(guard("acct_a", 1).is_none(), "a repeat while the first is in flight");
        assert!(guard("acct_b", 1).is_some(), "another account's same key is its own");
        drop(first);
        assert!(guard("acct_a", 1).is_some(), "free again once the first answered");
        assert!(set.keys.lock().is_empty(), "guards leave nothing behind");
    }

    #[test]
    fn the_answer_names_the_job_in_the_state_it_was_answered() {
        let record = JobRecord::queued(
            "an_1".into(),
            crate::store::JobKind::Analysis { wallet: "W".into() },
            "acct_a".into(),
            "key_1".into(),
            5,
            false,
            true,
            0,
            "1".into(),
        );
        let key = IdempotencyKey { key_digest: [1; 32], fingerprint: [2; 32] };
        let answer = key.answer(&record, JobState::Running, true, 9);
        assert_eq!((answer.job_id.as_str(), answer.account.as_str()), ("an_1", "acct_a"));
        assert_eq!((answer.state, answer.deduplicated, answer.created_at_ms), (JobState::Running, true, 9));
        let replay = replay_of(&answer, record.clone());
        assert_eq!((replay.state, replay.deduplicated, *replay.record), (JobState::Running, true, record));
        assert!(matches!(
            check_same_request(&answer, &IdempotencyKey { fingerprint: [3; 32], ..key }),
            Err(AdmitError::IdempotencyKeyReused)
        ));
    }
}
