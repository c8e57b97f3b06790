//! `EtcdStore`: the [`Store`] of a cluster — many `xray` nodes sharing keys, quota, jobs and
//! results through one etcd cluster (`--store etcd:<endpoint>[,…]`, issue #14).
//!
//! Owns: the connection (`io`: the `xray-etcd` thread), the keyspace (`layout`), the
//! transactions of every operation (`ops`), this node's lease and the adoption of orphaned jobs
//! (`node`), and the watches (`watch`). The blocking [`Store`] calls park the calling thread
//! (compute, admin, housekeeping); listener threads use the `*_async` methods, which return a
//! future that waits on a channel while the request runs on `xray-etcd`.
//!
//! Why etcd: strictly serializable multi-key transactions with compare-and-swap on revisions
//! (admission and completion are one transaction each), leases (a node's jobs outlive it) and
//! watches (keys and long polls on every node), checked by Jepsen (etcd 3.4.3), and installed
//! from Debian (`etcd-server`). See ARCHITECTURE.md and docs/scaling.md.
//!
//! Invariant: what a call answers `Ok` is committed by a quorum of etcd members (etcd fsyncs its
//! WAL before it acknowledges), so `sync` has nothing left to do.
//! Invariant: payloads are LZ4-compressed and at most `ETCD_VALUE_BYTES_MAX` once compressed;
//! a larger result is refused as `Invalid` (its job ends FAILED, refunded), never sent.
//! Deliberately absent: a cache of etcd reads. Every node's memory (key table, status index,
//! finished jobs) is the cache, and what can change on another node is read from etcd.

mod io;
pub mod layout;
mod node;
mod ops;
mod watch;

use std::future::Future;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Duration;

pub use io::Reply;
pub use node::{NodeFacts, Owned};
pub use ops::{AdmitChecks, Admitted, OwnedSubject};
pub use watch::KeyChange;

use ops::Db;

use super::{
    Attached, Callback, Charged, Completion, Doc, DocKind, DocWrite, DueCursor, DuePage, IdempotentAnswer, JobCursor,
    JobPage, JobRecord, LiveState, Store, StoreError, StoreResult, Subject, UsageCarry, WebhookSecret, SCHEMA_VERSION,
};
use crate::auth::record::KeyRecord;
use crate::limits::quota::UsageRecord;
use crate::metrics::StoreDisk;

/// The etcd-backed store of one node.
pub struct EtcdStore {
    io: io::Io,
    db: Db,
}

impl EtcdStore {
    /// Connects, checks (or writes) the cluster's schema version, joins with a lease and starts
    /// renewing it. `prefix` names the cluster's keyspace (`layout::PREFIX_DEFAULT`).
    pub fn open(endpoints: &[String], prefix: &str, started_at_ms: u64) -> StoreResult<EtcdStore> {
        let io = io::Io::connect(endpoints)?;
        let node_id: Arc<str> = node_id()?.into();
        let lease = Arc::new(AtomicI64::new(0));
        let db = Db {
            client: io.client(),
            layout: layout::Layout::new(prefix),
            lease,
            node_id: Arc::clone(&node_id),
            answers_max: crate::config::IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX as u64,
        };
        let store = EtcdStore { io, db };
        store.run(|db| async move { db.check_schema(SCHEMA_VERSION).await })?;
        let facts = NodeFacts { node_id: node_id.to_string(), started_at_ms, pid: std::process::id() };
        store.run({
            let facts = facts.clone();
            |db| async move { db.join(facts).await }
        })?;
        store.io.spawn_background(store.db.clone().keep_alive(facts));
        Ok(store)
    }

    /// The same store with another cap of answers per account (tests use a small one; the
    /// server keeps `IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX`). Every node must use the same cap.
    pub fn with_answers_per_account_max(mut self, answers_max: usize) -> EtcdStore {
        self.db.answers_max = answers_max as u64;
        self
    }

    /// This node's id in the cluster (`node_…`, random per start).
    pub fn node_id(&self) -> &str {
        &self.db.node_id
    }

    fn run<T, F, W>(&self, work: W) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Future<Output = StoreResult<T>> + Send + 'static,
        W: FnOnce(Db) -> F,
    {
        self.io.block(work(self.db.clone()))
    }

    fn call<T, F, W>(&self, work: W) -> Reply<T>
    where
        T: Send + 'static,
        F: Future<Output = StoreResult<T>> + Send + 'static,
        W: FnOnce(Db) -> F,
    {
        self.io.call(work(self.db.clone()))
    }

    // --- for listener threads: futures that wait on the etcd thread without blocking ---

    /// Admission as one transaction (see `ops::Db::admit`).
    pub fn admit_async(
        &self,
        job: JobRecord,
        checks: AdmitChecks,
        answer: Option<IdempotentAnswer>,
    ) -> Reply<Admitted> {
        self.call(|db| async move { db.admit(job, checks, answer).await })
    }

    pub fn put_answer_async(&self, answer: IdempotentAnswer) -> Reply<Option<IdempotentAnswer>> {
        self.call(|db| async move { db.put_answer(answer).await })
    }

    pub fn get_answer_async(&self, account: String, key_digest: [u8; 32]) -> Reply<Option<IdempotentAnswer>> {
        self.call(|db| async move { db.get_answer(account, key_digest).await })
    }

    pub fn cancel_admission_async(&self, id: String) -> Reply<()> {
        self.call(|db| async move { db.cancel_admission(id).await })
    }

    /// `Store::attach_callback` for a listener thread.
    pub fn attach_callback_async(
        &self,
        id: String,
        account: String,
        key_id: String,
        url: String,
        now_ms: u64,
    ) -> Reply<Attached> {
        self.call(|db| async move { db.attach_callback(id, account, key_id, url, now_ms).await })
    }

    pub fn get_job_async(&self, id: String) -> Reply<Option<JobRecord>> {
        self.call(|db| async move { db.get_job(id).await })
    }

    pub fn get_result_async(&self, job: JobRecord) -> Reply<Option<Vec<u8>>> {
        self.call(|db| async move { db.get_result(job).await })
    }

    /// The account's live job of a subject, on any node.
    pub fn live_of_subject_async(&self, account: String, subject: OwnedSubject) -> Reply<Option<JobRecord>> {
        self.call(|db| async move { db.live_of_subject(account, subject).await })
    }

    /// The newest job (`ready_only`: the newest READY job) of an account's subject.
    pub fn newest_async(&self, account: String, subject: OwnedSubject, ready_only: bool) -> Reply<Option<JobRecord>> {
        self.call(|db| async move { db.newest_in_subject(account, subject, ready_only).await })
    }

    /// `Store::charge_now`, awaited on any executor (a listener thread's scan).
    /// `units` of one key charged together, all or none, within `limit`.
    pub fn charge_now_async(&self, key_id: String, period_start_ms: u64, limit: u64, units: u32) -> Reply<Charged> {
        self.call(|db| async move { db.charge_now(key_id, period_start_ms, limit, units).await })
    }

    pub fn usage_async(&self, key_id: String, period_start_ms: u64) -> Reply<UsageRecord> {
        self.call(|db| async move { db.usage(key_id, period_start_ms).await })
    }

    /// Waits up to `wait` for a job to finish (a long poll of a job another node runs).
    pub fn wait_finished_async(&self, id: String, wait: Duration) -> Reply<Option<JobRecord>> {
        let deadline = wait + Duration::from_millis(crate::config::ETCD_REQUEST_TIMEOUT_MS);
        self.io.call_for(deadline, {
            let db = self.db.clone();
            async move { db.wait_finished(id, wait).await }
        })
    }

    // --- the cluster ---

    /// Every key record and the revision they were read at.
    pub fn all_keys(&self) -> StoreResult<(Vec<KeyRecord>, i64)> {
        self.run(|db| async move { db.all_keys().await })
    }

    /// Calls `on_change` with every change of the key records after `after_revision`, on the
    /// etcd thread, until the store stops.
    pub fn watch_keys(&self, after_revision: i64, on_change: impl Fn(KeyChange) + Send + Sync + 'static) {
        self.io.spawn_background(self.db.clone().watch_keys(after_revision, on_change));
    }

    /// Nodes whose lease is alive.
    pub fn live_nodes(&self) -> StoreResult<usize> {
        self.run(|db| async move { db.live_nodes().await })
    }

    /// The ids of the nodes whose lease is alive (this one's included).
    /// Runs a sequence of blocking store calls off the calling thread (`io::Io::blocking`).
    pub fn blocking<T, W>(&self, work: W) -> Reply<T>
    where
        T: Send + 'static,
        W: FnOnce() -> StoreResult<T> + Send + 'static,
    {
        self.io.blocking(work)
    }

    pub fn live_node_ids(&self) -> StoreResult<Vec<String>> {
        self.run(|db| async move { db.live_node_ids().await })
    }

    /// Up to `limit` live jobs and their owners.
    pub fn owners(&self, limit: usize) -> StoreResult<Vec<Owned>> {
        self.run(|db| async move { db.owners(limit).await })
    }

    /// True on the one node of the cluster that may issue its first key.
    pub fn claim_first_key(&self) -> StoreResult<bool> {
        self.run(|db| async move { db.claim_first_key().await })
    }

    /// Takes an ownerless live job for this node.
    pub fn adopt(&self, id: &str) -> StoreResult<bool> {
        let id = id.to_owned();
        self.run(|db| async move { db.adopt(id).await })
    }

    /// Leaves the cluster: revokes the lease (this node's key and owner keys go with it, so
    /// anything it still owned is adopted at once) and stops the etcd thread.
    pub fn leave(&self) {
        let revoked = self.run(|db| async move { db.leave().await });
        if let Err(e) = revoked {
            tracing::warn!(error = %e, "revoking this node's etcd lease failed; it expires on its own");
        }
        self.io.stop();
    }
}

/// A random node id: `node_` + 8 random bytes in hex.
fn node_id() -> StoreResult<String> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Io(format!("random node id: {e}")))?;
    Ok(format!("node_{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
}

impl Store for EtcdStore {
    fn put_key(&self, key: &KeyRecord) -> StoreResult<()> {
        let key = key.clone();
        self.run(|db| async move { db.put_key(key).await })
    }

    fn put_rotation(&self, old: &KeyRecord, new: &KeyRecord, carried: &UsageCarry) -> StoreResult<()> {
        let (old, new, carried) = (old.clone(), new.clone(), *carried);
        self.run(|db| async move { db.put_rotation(old, new, carried).await })
    }

    fn get_key(&self, id: &str) -> StoreResult<Option<KeyRecord>> {
        let id = id.to_owned();
        self.run(|db| async move { db.get_key(id).await })
    }

    fn list_keys(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<KeyRecord>> {
        let after = after.map(str::to_owned);
        self.run(|db| async move { db.list_keys(after, limit).await })
    }

    fn admit(&self, job: &JobRecord, answer: Option<&IdempotentAnswer>) -> StoreResult<()> {
        let (job, answer) = (job.clone(), answer.cloned());
        match self.run(|db| async move { db.admit(job, AdmitChecks::default(), answer).await })? {
            Admitted::Answered(first) => {
                Err(StoreError::Invalid(format!("idempotency key already answered (job {})", first.job_id)))
            }
            _ => Ok(()),
        }
    }

    fn put_answer(&self, answer: &IdempotentAnswer) -> StoreResult<Option<IdempotentAnswer>> {
        let answer = answer.clone();
        self.run(|db| async move { db.put_answer(answer).await })
    }

    fn get_answer(&self, account: &str, key_digest: &[u8; 32]) -> StoreResult<Option<IdempotentAnswer>> {
        let (account, key_digest) = (account.to_owned(), *key_digest);
        self.run(|db| async move { db.get_answer(account, key_digest).await })
    }

    fn purge_answers_before(&self, cutoff_ms: u64, batch_len: usize) -> StoreResult<usize> {
        self.run(|db| async move { db.purge_answers_before(cutoff_ms, batch_len).await })
    }

    fn answer_count(&self, account: &str) -> StoreResult<u64> {
        let account = account.to_owned();
        self.run(|db| async move { db.answer_count(account).await })
    }

    fn cancel_admission(&self, id: &str) -> StoreResult<()> {
        let id = id.to_owned();
        self.run(|db| async move { db.cancel_admission(id).await })
    }

    fn mark_running(&self, id: &str, started_at_ms: u64) -> StoreResult<JobRecord> {
        let id = id.to_owned();
        self.run(|db| async move { db.mark_running(id, started_at_ms).await })
    }

    fn complete(&self, id: &str, completed_at_ms: u64, outcome: &Completion) -> StoreResult<JobRecord> {
        let (id, outcome) = (id.to_owned(), outcome.clone());
        self.run(|db| async move { db.complete(id, completed_at_ms, outcome).await })
    }

    fn get_job(&self, id: &str) -> StoreResult<Option<JobRecord>> {
        let id = id.to_owned();
        self.run(|db| async move { db.get_job(id).await })
    }

    fn get_result(&self, job: &JobRecord) -> StoreResult<Option<Vec<u8>>> {
        let job = job.clone();
        self.run(|db| async move { db.get_result(job).await })
    }

    fn latest_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>> {
        let (account, subject) = (account.to_owned(), OwnedSubject::of(subject));
        self.run(|db| async move { db.newest_in_subject(account, subject, false).await })
    }

    fn latest_ready_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>> {
        let (account, subject) = (account.to_owned(), OwnedSubject::of(subject));
        self.run(|db| async move { db.newest_in_subject(account, subject, true).await })
    }

    fn usage(&self, key_id: &str, period_start_ms: u64) -> StoreResult<UsageRecord> {
        let key_id = key_id.to_owned();
        self.run(|db| async move { db.usage(key_id, period_start_ms).await })
    }

    fn charge_now_units(&self, key_id: &str, period_start_ms: u64, limit: u64, units: u32) -> StoreResult<Charged> {
        let key_id = key_id.to_owned();
        self.run(|db| async move { db.charge_now(key_id, period_start_ms, limit, units).await })
    }

    fn live_jobs(
        &self,
        state: LiveState,
        after: Option<&JobCursor>,
        created_before_ms: u64,
        limit: usize,
    ) -> StoreResult<JobPage> {
        let after = after.cloned();
        self.run(|db| async move { db.live_jobs(state, after, created_before_ms, limit).await })
    }

    fn purge_finished_before(&self, cutoff_ms: u64, limit: usize) -> StoreResult<usize> {
        self.run(|db| async move { db.purge_finished_before(cutoff_ms, limit).await })
    }

    fn due_callbacks(&self, now_ms: u64, after: Option<&DueCursor>, limit: usize) -> StoreResult<DuePage> {
        let after = after.cloned();
        self.run(|db| async move { db.due_callbacks(now_ms, after, limit).await })
    }

    fn pending_callbacks(&self, account: &str, limit: usize) -> StoreResult<Vec<String>> {
        let account = account.to_owned();
        self.run(|db| async move { db.pending_callbacks(account, limit).await })
    }

    fn record_callback(&self, id: &str, expected: &Callback, callback: &Callback) -> StoreResult<JobRecord> {
        let (id, expected, callback) = (id.to_owned(), expected.clone(), callback.clone());
        self.run(|db| async move { db.record_callback(id, expected, callback).await })
    }

    fn attach_callback(&self, id: &str, account: &str, key_id: &str, url: &str, now_ms: u64) -> StoreResult<Attached> {
        let (id, account, key_id, url) = (id.to_owned(), account.to_owned(), key_id.to_owned(), url.to_owned());
        self.run(|db| async move { db.attach_callback(id, account, key_id, url, now_ms).await })
    }

    fn put_webhook_secret(&self, secret: &WebhookSecret) -> StoreResult<()> {
        let secret = secret.clone();
        self.run(|db| async move { db.put_webhook_secret(secret).await })
    }

    fn write_docs(&self, writes: &[DocWrite]) -> StoreResult<()> {
        let writes = writes.to_vec();
        self.run(|db| async move { db.write_docs(writes).await })
    }

    fn get_doc(&self, kind: DocKind, key: &[u8]) -> StoreResult<Option<Doc>> {
        let key = key.to_vec();
        self.run(|db| async move { db.get_doc(kind, key).await })
    }

    fn scan_docs(&self, kind: DocKind, prefix: &[u8], after: Option<&[u8]>, limit: usize) -> StoreResult<Vec<Doc>> {
        let (prefix, after) = (prefix.to_vec(), after.map(<[u8]>::to_vec));
        self.run(|db| async move { db.scan_docs(kind, prefix, after, limit).await })
    }

    fn scan_docs_rev(
        &self,
        kind: DocKind,
        prefix: &[u8],
        before: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let (prefix, before) = (prefix.to_vec(), before.map(<[u8]>::to_vec));
        self.run(|db| async move { db.scan_docs_rev(kind, prefix, before, limit).await })
    }

    fn get_webhook_secret(&self, account: &str) -> StoreResult<Option<WebhookSecret>> {
        let account = account.to_owned();
        self.run(|db| async move { db.get_webhook_secret(account).await })
    }

    /// Nothing to do: etcd acknowledged every write after its quorum made it durable.
    fn sync(&self) -> StoreResult<()> {
        Ok(())
    }

    /// No local log: group commit is for the embedded store only.
    fn logged_sequence(&self) -> u64 {
        0
    }

    fn disk_usage(&self) -> StoreResult<StoreDisk> {
        self.run(|db| async move { db.disk_usage().await })
    }
}
