//! The store's operations as etcd transactions: each reads what it depends on, then writes in
//! one transaction guarded by the mod-revisions it read (compare-and-swap), and starts over
//! when another node moved one of them first.
//!
//! Owns: `Db` (a client clone, the keyspace, this node's lease) and the async body of every
//! [`Store`](crate::store::Store) call; `EtcdStore` runs them on the `xray-etcd` thread.
//!
//! Invariant: admission is one transaction — job record, live and subject indexes, the
//! subject's live-job pointer, the owner key, the account's live count + 1 and `reserved + 1`
//! — that commits only if the usage record, the job key, the pointer and the live count are
//! as read, and only if `used + reserved < limit` and `live < live_max` held on what was read.
//! Every transaction that ends a live job (completion, undo) takes 1 from the live count in the
//! same transaction, so the count is the number of the account's live jobs. A repeat with the same job id (after an ambiguous timeout) finds the
//! job and answers as the first did: it never admits or charges twice.
//! Invariant: completion is one transaction guarded by the job's mod-revision, the key records
//! of its rotation chain and the usage records it moves, so a job finished twice (two nodes
//! ran it) is settled once: the second finds it finished (`StoreError::State`).
//! Invariant: an account keeps at most `answers_max` idempotent answers
//! (`IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX`), exactly, cluster-wide: every transaction that
//! writes or deletes an account's answers (admission with an answer, `put_answer`, an undone
//! admission, the purge) compares and puts the account's count `y/`, so two of them never both
//! commit on one reading; the write that would pass the cap deletes the oldest entries of the
//! account's `x/` index with their answers in the same transaction. (Contention on one
//! account's answers is a retry, like its live count's.) Answers written by a build without
//! counts have no `x/` entry and are not counted; they expire and are purged as before.
//! Invariant: the answer purge runs until nothing older than its cutoff is left, 24 answers
//! per transaction (4 operations each, under etcd's default `--max-txn-ops` of 128).
//! Invariant: at most `ETCD_CAS_ATTEMPTS_MAX` attempts per call; then `Unavailable` (503).
//! Known limit: the retention purge commits without compares. An attach can never write a
//! purged job back (its transaction compares the job's mod-revision), but one that commits
//! between the purge's read and its commit loses its webhook with the job, and leaves the two
//! outbox entries it wrote, which name a job that is gone.
//! Deliberately absent: locks. Every conflict is a failed compare and a fresh read.

use etcd_client::{
    Client, Compare, CompareOp, GetOptions, GetResponse, KeyValue, PutOptions, SortOrder, SortTarget, Txn, TxnOp,
    TxnOpResponse, TxnResponse,
};

use super::io::retry_unsent;
use super::layout::{pack_payload, unpack_payload, Layout};
use crate::auth::record::KeyRecord;
use crate::config::{
    ETCD_CAS_ATTEMPTS_MAX, ETCD_PURGE_JOBS_PER_TXN, ETCD_VALUE_BYTES_MAX, IDEMPOTENCY_EVICTIONS_PER_WRITE_MAX,
    KEY_SUCCESSION_HOPS_MAX, RESULT_BYTES_MAX, STORE_PAGE_LEN_MAX, SUBJECT_SCAN_LEN_MAX,
};
use crate::limits::quota::UsageRecord;
use crate::store::docs::{self, Doc, DocKind, DocWrite, Expect};
use crate::store::encoding as enc;
use crate::store::record::{attachable, check_id, validate_key};
use crate::store::usage::{self, UsageDelta};
use crate::store::{
    Attached, Callback, CallbackStatus, Charged, Completion, DueCursor, DuePage, IdempotentAnswer, JobCursor, JobError,
    JobPage, JobRecord, JobState, LiveState, StoreError, StoreResult, Subject, UsageCarry, WebhookSecret,
};

/// What a checked admission came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admitted {
    /// The job is recorded and its unit reserved; the key's usage after the reservation.
    New { usage: UsageRecord },
    /// The subject already has a live job of the account (deduplication): that job.
    Live(Box<JobRecord>),
    /// `used + reserved` reached the limit: nothing was written; the usage that refused it.
    Exhausted { usage: UsageRecord },
    /// The account holds `live_max` live jobs across the cluster: nothing was written.
    TooManyJobs { live_max: u64 },
    /// The request's idempotency key already has an answer (another node's, or one that raced
    /// this admission): nothing was written; that answer.
    Answered(Box<IdempotentAnswer>),
}

/// What an admission is checked against (`None`: not checked).
#[derive(Debug, Clone, Copy, Default)]
pub struct AdmitChecks {
    /// The key's quota limit (`used + reserved < quota_limit`).
    pub quota_limit: Option<u64>,
    /// The account's live-job cap, cluster-wide (`live < live_max`).
    pub live_max: Option<u64>,
    /// Deduplicate onto the subject's live job.
    pub dedup: bool,
}

/// A live count as stored (absent: 0).
fn count_of(read: &Read) -> u64 {
    read.value().and_then(|v| <[u8; 8]>::try_from(v).ok()).map_or(0, u64::from_be_bytes)
}

/// The put of a live count, `delta` applied (never below 0).
fn count_put(read: &Read, delta: i64) -> TxnOp {
    let next = count_of(read).saturating_add_signed(delta);
    TxnOp::put(read.key.clone(), next.to_be_bytes().to_vec(), None)
}

/// The put of a count (its deletion at 0, so counts of accounts without answers go away).
fn count_write(key: &[u8], count: u64) -> TxnOp {
    if count == 0 {
        TxnOp::delete(key.to_vec(), None)
    } else {
        TxnOp::put(key.to_vec(), count.to_be_bytes().to_vec(), None)
    }
}

/// One node's handle on the keyspace (cheap to clone: the client shares its connection).
#[derive(Clone)]
pub struct Db {
    pub client: Client,
    pub layout: Layout,
    /// This node's lease (owner keys and its node key are attached to it).
    pub lease: std::sync::Arc<std::sync::atomic::AtomicI64>,
    pub node_id: std::sync::Arc<str>,
    /// Answers one account keeps (`IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX` unless a test sets one).
    pub answers_max: u64,
}

/// A key read with the revision a transaction compares against (0: absent).
struct Read {
    key: Vec<u8>,
    kv: Option<KeyValue>,
}

impl Read {
    fn revision(&self) -> i64 {
        self.kv.as_ref().map_or(0, KeyValue::mod_revision)
    }

    fn value(&self) -> Option<&[u8]> {
        self.kv.as_ref().map(KeyValue::value)
    }

    fn unchanged(&self) -> Compare {
        Compare::mod_revision(self.key.clone(), CompareOp::Equal, self.revision())
    }

    fn usage(&self) -> StoreResult<UsageRecord> {
        self.value().map_or(Ok(UsageRecord::default()), usage::decode)
    }

    fn job(&self) -> StoreResult<Option<JobRecord>> {
        self.value().map(enc::decode_json).transpose()
    }

    fn answer(&self) -> StoreResult<Option<IdempotentAnswer>> {
        self.value().map(enc::decode_json).transpose()
    }
}

/// A usage record to write: where, the compare that guards it, and its new value.
struct UsageWrite {
    read: Read,
    next: UsageRecord,
}

impl UsageWrite {
    fn put(&self) -> TxnOp {
        TxnOp::put(self.read.key.clone(), usage::encode(&self.next).to_vec(), None)
    }
}

fn conflict(op: &str) -> StoreError {
    StoreError::Unavailable(format!("{op}: {ETCD_CAS_ATTEMPTS_MAX} conflicting attempts, try again"))
}

fn state_error(id: &str, op: &'static str, job: Option<&JobRecord>) -> StoreError {
    let state = job.map_or_else(|| "UNKNOWN".to_owned(), |j| j.state.as_str().to_owned());
    StoreError::State { id: id.to_owned(), op, state }
}

impl Db {
    /// One transaction (sent again only if it never reached a member).
    pub(super) async fn txn(&self, txn: Txn) -> StoreResult<TxnResponse> {
        retry_unsent(|| {
            let (mut kv, txn) = (self.client.kv_client(), txn.clone());
            async move { kv.txn(txn).await }
        })
        .await
    }

    /// One range read (sent again only if it never reached a member).
    pub(super) async fn get(&self, key: Vec<u8>, options: Option<GetOptions>) -> StoreResult<GetResponse> {
        retry_unsent(|| {
            let (mut kv, key, options) = (self.client.kv_client(), key.clone(), options.clone());
            async move { kv.get(key, options).await }
        })
        .await
    }

    /// One put (sent again only if it never reached a member).
    pub(super) async fn put(&self, key: Vec<u8>, value: Vec<u8>, options: Option<PutOptions>) -> StoreResult<()> {
        retry_unsent(|| {
            let (mut kv, key, value, options) = (self.client.kv_client(), key.clone(), value.clone(), options.clone());
            async move { kv.put(key, value, options).await }
        })
        .await
        .map(drop)
    }

    fn owner_put(&self) -> Option<PutOptions> {
        let lease = self.lease.load(std::sync::atomic::Ordering::Acquire);
        (lease != 0).then(|| PutOptions::new().with_lease(lease))
    }

    /// Reads `keys` at one revision (one round trip).
    async fn read(&self, keys: Vec<Vec<u8>>) -> StoreResult<Vec<Read>> {
        let gets: Vec<TxnOp> = keys.iter().map(|k| TxnOp::get(k.clone(), None)).collect();
        let response = self.txn(Txn::new().and_then(gets)).await?;
        let mut reads = Vec::with_capacity(keys.len());
        for (key, answer) in keys.into_iter().zip(response.op_responses()) {
            let kv = match answer {
                TxnOpResponse::Get(mut get) => get.take_kvs().into_iter().next(),
                _ => return Err(StoreError::Io("etcd answered a read with another operation".into())),
            };
            reads.push(Read { key, kv });
        }
        Ok(reads)
    }

    async fn read_one(&self, key: Vec<u8>) -> StoreResult<Read> {
        let mut response = self.get(key.clone(), None).await?;
        Ok(Read { key, kv: response.take_kvs().into_iter().next() })
    }

    /// Commits `ops` if every compare holds; `false` when one did not (someone moved first).
    async fn commit(&self, when: Vec<Compare>, ops: Vec<TxnOp>) -> StoreResult<bool> {
        let txn = Txn::new().when(when).and_then(ops);
        Ok(self.txn(txn).await?.succeeded())
    }

    /// Keys in `[from, to)`, in key order, at most `limit`.
    async fn range(&self, from: Vec<u8>, to: Vec<u8>, limit: usize, keys_only: bool) -> StoreResult<Vec<KeyValue>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut options = GetOptions::new().with_range(to).with_limit(limit as i64);
        if keys_only {
            options = options.with_keys_only();
        }
        let mut response = self.get(from, Some(options)).await?;
        Ok(response.take_kvs())
    }

    // --- keys ---

    pub async fn put_key(&self, key: KeyRecord) -> StoreResult<()> {
        validate_key(&key)?;
        let value = enc::encode_json(&key)?;
        self.put(self.layout.key_record(key.id.as_str()), value, None).await?;
        Ok(())
    }

    /// Both key records and the successor's carried usage, in one transaction. The carried
    /// usage is the old key's as etcd holds it (other nodes may have moved it since this
    /// node's memory saw it), with nothing reserved, as `KeyTable::rotate` carries it.
    pub async fn put_rotation(&self, old: KeyRecord, new: KeyRecord, carried: UsageCarry) -> StoreResult<()> {
        validate_key(&old)?;
        validate_key(&new)?;
        let period = carried.period_start_ms;
        let new_key = self.layout.key_record(new.id.as_str());
        let new_value = enc::encode_json(&new)?;
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let keys = vec![
                self.layout.usage(old.id.as_str(), period),
                self.layout.usage(new.id.as_str(), period),
                new_key.clone(),
            ];
            let [old_usage, new_usage, stored]: [Read; 3] =
                self.read(keys).await?.try_into().map_err(|_| short_read())?;
            if stored.value() == Some(new_value.as_slice()) {
                return Ok(()); // a repeat of a rotation that committed: carry nothing twice
            }
            let mut next = new_usage.usage()?;
            next.add(&UsageRecord { reserved: 0, ..old_usage.usage()? });
            let when = vec![old_usage.unchanged(), new_usage.unchanged(), stored.unchanged()];
            let ops = vec![
                TxnOp::put(self.layout.key_record(old.id.as_str()), enc::encode_json(&old)?, None),
                TxnOp::put(new_key.clone(), new_value.clone(), None),
                UsageWrite { read: new_usage, next }.put(),
            ];
            if self.commit(when, ops).await? {
                return Ok(());
            }
        }
        Err(conflict("rotation"))
    }

    pub async fn get_key(&self, id: String) -> StoreResult<Option<KeyRecord>> {
        if check_id("key id", &id).is_err() {
            return Ok(None);
        }
        let read = self.read_one(self.layout.key_record(&id)).await?;
        read.value().map(enc::decode_json).transpose()
    }

    pub async fn list_keys(&self, after: Option<String>, limit: usize) -> StoreResult<Vec<KeyRecord>> {
        let family = self.layout.family(b'k');
        let from = match after {
            Some(after) => enc::successor(&self.layout.key_record(&after)),
            None => family.clone(),
        };
        let to = enc::prefix_end(&family).unwrap_or_default();
        let kvs = self.range(from, to, limit.min(STORE_PAGE_LEN_MAX), false).await?;
        kvs.iter().map(|kv| enc::decode_json(kv.value())).collect()
    }

    /// Every key record and the revision they were read at (a watch starts after it).
    pub async fn all_keys(&self) -> StoreResult<(Vec<KeyRecord>, i64)> {
        let family = self.layout.family(b'k');
        let to = enc::prefix_end(&family).unwrap_or_default();
        let options = GetOptions::new().with_range(to);
        let response = self.get(family, Some(options)).await?;
        let revision = response.header().map_or(0, |h| h.revision());
        let keys = response.kvs().iter().map(|kv| enc::decode_json(kv.value())).collect::<StoreResult<_>>()?;
        Ok((keys, revision))
    }

    // --- admission ---

    /// Records a new `QUEUED` job and reserves its unit, refusing past `limit` (`None`: no
    /// check) and, with `dedup`, deduplicating onto the subject's live job. Idempotent by id.
    pub async fn admit(
        &self,
        job: JobRecord,
        checks: AdmitChecks,
        answer: Option<IdempotentAnswer>,
    ) -> StoreResult<Admitted> {
        job.validate()?;
        if let Some(answer) = &answer {
            answer.validate_with(&job)?;
        }
        if job.state != JobState::Queued || job.started_at_ms.is_some() || job.completed_at_ms.is_some() {
            return Err(StoreError::Invalid(format!("job {} must be admitted QUEUED and unstarted", job.id)));
        }
        let subject = job.kind.subject();
        let (job_key, pointer_key) = (self.layout.job(&job.id), self.layout.live_subject(&job.account, subject));
        let usage_key = self.layout.usage(&job.key_id, job.quota_period_start_ms);
        let count_key = self.layout.live_count(&job.account);
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let mut keys = vec![usage_key.clone(), job_key.clone(), pointer_key.clone(), count_key.clone()];
            if let Some(a) = &answer {
                keys.extend([self.layout.answer(&a.account, &a.key_digest), self.layout.answer_count(&a.account)]);
            }
            let mut reads = self.read(keys).await?;
            let (tally_read, answer_read) = if answer.is_some() { (reads.pop(), reads.pop()) } else { (None, None) };
            let [usage_read, job_read, pointer, count]: [Read; 4] = reads.try_into().map_err(|_| short_read())?;
            let usage = usage_read.usage()?;
            if job_read.job()?.is_some_and(|stored| stored.id == job.id) {
                return Ok(Admitted::New { usage }); // a repeat of an admission that committed
            }
            let first = answer_read.as_ref().map(Read::answer).transpose()?.flatten();
            if let Some(first) = first.filter(|a| a.is_live_at(job.created_at_ms)) {
                return Ok(Admitted::Answered(Box::new(first)));
            }
            if checks.dedup {
                if let Some(live) = self.live_pointed(&pointer).await? {
                    return Ok(Admitted::Live(Box::new(live)));
                }
            }
            if let Some(live_max) = checks.live_max.filter(|max| count_of(&count) >= *max) {
                return Ok(Admitted::TooManyJobs { live_max });
            }
            let charged = job.charged;
            let spent = (usage.used + usage.reserved).max(0) as u64;
            if charged && checks.quota_limit.is_some_and(|limit| spent >= limit) {
                return Ok(Admitted::Exhausted { usage });
            }
            let mut next = usage;
            if charged {
                next.add(&usage::reserve());
            }
            let mut ops = vec![
                TxnOp::put(job_key.clone(), enc::encode_json(&job)?, None),
                TxnOp::put(self.layout.live(&job), Vec::new(), None),
                TxnOp::put(self.layout.subject(&job), vec![job.state.byte()], None),
                TxnOp::put(pointer_key.clone(), job.id.as_bytes().to_vec(), None),
                TxnOp::put(self.layout.owner(&job.id), self.node_id.as_bytes().to_vec(), self.owner_put()),
                count_put(&count, 1),
            ];
            let mut when = vec![usage_read.unchanged(), job_read.unchanged(), pointer.unchanged(), count.unchanged()];
            if charged {
                ops.push(UsageWrite { read: usage_read, next }.put());
            }
            if let (Some(answer), Some(read), Some(tally)) = (&answer, &answer_read, &tally_read) {
                // An expired answer of the key is replaced (a live one was answered above).
                let (answer_when, answer_ops) = self.answer_writes(answer, read.answer()?.as_ref(), tally).await?;
                when.push(read.unchanged());
                when.extend(answer_when);
                ops.extend(answer_ops);
            }
            if self.commit(when, ops).await? {
                return Ok(Admitted::New { usage: next });
            }
        }
        Err(conflict("admission"))
    }

    /// The writes of a new answer (replacing `existing`, the key's expired answer, if any):
    /// the answer, its time-index and account entries, the account's count, and past the cap
    /// the eviction of the account's oldest stored answers (never the key being written). The
    /// count is compared and always put, so every write of an account's answers conflicts with
    /// every other: the count stays exact across nodes.
    async fn answer_writes(
        &self,
        answer: &IdempotentAnswer,
        existing: Option<&IdempotentAnswer>,
        count: &Read,
    ) -> StoreResult<(Vec<Compare>, Vec<TxnOp>)> {
        let (account, digest, at_ms) = (answer.account.as_str(), &answer.key_digest, answer.created_at_ms);
        let mut when = vec![count.unchanged()];
        let mut ops = vec![
            TxnOp::put(self.layout.answer(account, digest), enc::encode_json(answer)?, None),
            TxnOp::put(self.layout.answer_time(at_ms, account, digest), Vec::new(), None),
            TxnOp::put(self.layout.account_answer(account, at_ms, digest), Vec::new(), None),
        ];
        let mut kept = count_of(count);
        let mut replaced_counted = false;
        if let Some(old) = existing {
            // An expired answer is a full window older: none of its keys is one of the above.
            ops.push(TxnOp::delete(self.layout.answer_time(old.created_at_ms, account, digest), None));
            let entry = self.read_one(self.layout.account_answer(account, old.created_at_ms, digest)).await?;
            if entry.kv.is_some() {
                replaced_counted = true;
                when.push(entry.unchanged());
                ops.push(TxnOp::delete(entry.key.clone(), None));
            }
        }
        if !replaced_counted {
            kept += 1;
        }
        let evict = kept.saturating_sub(self.answers_max).min(IDEMPOTENCY_EVICTIONS_PER_WRITE_MAX as u64) as usize;
        if evict > 0 {
            let evicted = self.evict_oldest(account, digest, evict, &mut when, &mut ops).await?;
            kept = kept.saturating_sub(evicted as u64);
        }
        ops.push(count_write(&count.key, kept));
        Ok((when, ops))
    }

    /// Adds the deletion of up to `evict` of the account's oldest answers (skipping the key
    /// being written) to a transaction. Returns how many.
    async fn evict_oldest(
        &self,
        account: &str,
        writing: &[u8; 32],
        evict: usize,
        when: &mut Vec<Compare>,
        ops: &mut Vec<TxnOp>,
    ) -> StoreResult<usize> {
        let group = self.layout.account_answers(account);
        let to = enc::prefix_end(&group).unwrap_or_default();
        // One more than needed: the key being written may be among the oldest.
        let kvs = self.range(group.clone(), to, evict + 1, true).await?;
        let mut victims = Vec::with_capacity(evict);
        for kv in &kvs {
            let (at_ms, digest) = enc::parse_account_answer_tail(kv.key().get(group.len()..).unwrap_or_default())?;
            if digest != *writing && victims.len() < evict {
                victims.push((at_ms, digest));
            }
        }
        if victims.is_empty() {
            return Ok(0);
        }
        let answers = self.read(victims.iter().map(|(_, d)| self.layout.answer(account, d)).collect()).await?;
        for ((at_ms, digest), read) in victims.iter().zip(answers) {
            ops.push(TxnOp::delete(self.layout.account_answer(account, *at_ms, digest), None));
            ops.push(TxnOp::delete(self.layout.answer_time(*at_ms, account, digest), None));
            if read.answer()?.is_some_and(|a| a.created_at_ms == *at_ms) {
                when.push(read.unchanged());
                ops.push(TxnOp::delete(read.key.clone(), None));
            }
        }
        Ok(victims.len())
    }

    /// Records the answer of a request that made no job, unless the key has one (returned).
    pub async fn put_answer(&self, answer: IdempotentAnswer) -> StoreResult<Option<IdempotentAnswer>> {
        answer.validate()?;
        let keys =
            vec![self.layout.answer(&answer.account, &answer.key_digest), self.layout.answer_count(&answer.account)];
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let [read, count]: [Read; 2] = self.read(keys.clone()).await?.try_into().map_err(|_| short_read())?;
            let existing = read.answer()?;
            if let Some(first) = existing.as_ref().filter(|a| a.is_live_at(answer.created_at_ms)) {
                return Ok(Some(first.clone()));
            }
            let (mut when, ops) = self.answer_writes(&answer, existing.as_ref(), &count).await?;
            when.push(read.unchanged());
            if self.commit(when, ops).await? {
                return Ok(None);
            }
        }
        Err(conflict("answer"))
    }

    pub async fn get_answer(&self, account: String, key_digest: [u8; 32]) -> StoreResult<Option<IdempotentAnswer>> {
        if check_id("account", &account).is_err() {
            return Ok(None);
        }
        self.read_one(self.layout.answer(&account, &key_digest)).await?.answer()
    }

    pub async fn answer_count(&self, account: String) -> StoreResult<u64> {
        if check_id("account", &account).is_err() {
            return Ok(0);
        }
        Ok(count_of(&self.read_one(self.layout.answer_count(&account)).await?))
    }

    /// Deletes every answer created before `cutoff_ms` (a key reused after its answer expired
    /// keeps its newer answer), `batch_len` time-index entries per range read, until none is
    /// left.
    pub async fn purge_answers_before(&self, cutoff_ms: u64, batch_len: usize) -> StoreResult<usize> {
        let batch_len = batch_len.clamp(1, STORE_PAGE_LEN_MAX);
        let family = self.layout.family(b'h');
        let mut to = family.clone();
        to.extend_from_slice(&cutoff_ms.to_be_bytes());
        let mut purged = 0;
        loop {
            let kvs = self.range(family.clone(), to.clone(), batch_len, true).await?;
            for chunk in kvs.chunks(ETCD_PURGE_JOBS_PER_TXN) {
                self.purge_answer_chunk(chunk).await?;
            }
            purged += kvs.len();
            if kvs.len() < batch_len {
                return Ok(purged);
            }
        }
    }

    /// One transaction of the answer purge: the time-index entries, the answers they still
    /// name, their account entries and the accounts' counts (compared, so a concurrent write
    /// of the account makes it read again).
    async fn purge_answer_chunk(&self, chunk: &[KeyValue]) -> StoreResult<()> {
        let mut entries = Vec::with_capacity(chunk.len());
        for kv in chunk {
            let (at_ms, tail) = enc::parse_answer_time_key(self.layout.tail(b'h', kv.key())?)?;
            entries.push((kv.key().to_vec(), at_ms, self.layout.answer_raw(tail)));
        }
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let answers = self.read(entries.iter().map(|(_, _, key)| key.clone()).collect()).await?;
            let mut when = Vec::new();
            let mut ops: Vec<TxnOp> = entries.iter().map(|(key, _, _)| TxnOp::delete(key.clone(), None)).collect();
            let mut expired = Vec::new();
            for (read, (_, at_ms, _)) in answers.iter().zip(&entries) {
                if let Some(answer) = read.answer()?.filter(|a| a.created_at_ms == *at_ms) {
                    when.push(read.unchanged());
                    ops.push(TxnOp::delete(read.key.clone(), None));
                    expired.push(answer);
                }
            }
            self.uncount_answers(&expired, &mut when, &mut ops).await?;
            if self.commit(when, ops).await? {
                return Ok(());
            }
        }
        Err(conflict("answer purge"))
    }

    /// Adds the deletion of the account entries of `answers` (those that have one: answers
    /// written before counts existed have none) and their accounts' counts, compared.
    async fn uncount_answers(
        &self,
        answers: &[IdempotentAnswer],
        when: &mut Vec<Compare>,
        ops: &mut Vec<TxnOp>,
    ) -> StoreResult<()> {
        if answers.is_empty() {
            return Ok(());
        }
        let entries = answers.iter().map(|a| self.layout.account_answer(&a.account, a.created_at_ms, &a.key_digest));
        let reads = self.read(entries.collect()).await?;
        let mut uncounted: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
        for (read, answer) in reads.iter().zip(answers) {
            if read.kv.is_some() {
                ops.push(TxnOp::delete(read.key.clone(), None));
                *uncounted.entry(answer.account.as_str()).or_default() += 1;
            }
        }
        if uncounted.is_empty() {
            return Ok(());
        }
        let counts = self.read(uncounted.keys().map(|a| self.layout.answer_count(a)).collect()).await?;
        for (read, gone) in counts.iter().zip(uncounted.values()) {
            when.push(read.unchanged());
            ops.push(count_write(&read.key, count_of(read).saturating_sub(*gone)));
        }
        Ok(())
    }

    /// The live job a subject pointer names, if it is still live.
    async fn live_pointed(&self, pointer: &Read) -> StoreResult<Option<JobRecord>> {
        let Some(id) = pointer.value() else { return Ok(None) };
        let id = String::from_utf8_lossy(id).into_owned();
        let job = self.read_one(self.layout.job(&id)).await?.job()?;
        Ok(job.filter(|j| !j.state.is_finished()))
    }

    /// Undoes an admission whose job never reached a queue (a `QUEUED` job only).
    pub async fn cancel_admission(&self, id: String) -> StoreResult<()> {
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let (job_read, job) = self.live_job(&id, "cancel", &[JobState::Queued]).await?;
            let pointer_key = self.layout.live_subject(&job.account, job.kind.subject());
            let usage_key = self.layout.usage(&job.key_id, job.quota_period_start_ms);
            let mut keys = vec![usage_key, pointer_key, self.layout.live_count(&job.account)];
            keys.extend(job.idempotency_digest.map(|d| self.layout.answer(&job.account, &d)));
            let mut reads = self.read(keys).await?;
            let answer_read = if job.idempotency_digest.is_some() { reads.pop() } else { None };
            let [usage_read, pointer, count]: [Read; 3] = reads.try_into().map_err(|_| short_read())?;
            let mut ops = vec![
                TxnOp::delete(job_read.key.clone(), None),
                TxnOp::delete(self.layout.subject(&job), None),
                TxnOp::delete(self.layout.live(&job), None),
                TxnOp::delete(self.layout.owner(&job.id), None),
                count_put(&count, -1),
            ];
            if pointer.value() == Some(job.id.as_bytes()) {
                ops.push(TxnOp::delete(pointer.key.clone(), None));
            }
            let mut when = vec![job_read.unchanged(), pointer.unchanged(), count.unchanged()];
            // The answer the job was admitted with goes too, if the key still holds it.
            if let Some(read) = &answer_read {
                if let Some(answer) = read.answer()?.filter(|a| a.job_id == job.id) {
                    when.push(read.unchanged());
                    ops.push(TxnOp::delete(read.key.clone(), None));
                    let time = self.layout.answer_time(answer.created_at_ms, &answer.account, &answer.key_digest);
                    ops.push(TxnOp::delete(time, None));
                    self.uncount_answers(std::slice::from_ref(&answer), &mut when, &mut ops).await?;
                }
            }
            if job.charged {
                let mut next = usage_read.usage()?;
                next.add(&usage::release());
                when.push(usage_read.unchanged());
                ops.push(UsageWrite { read: usage_read, next }.put());
            }
            if self.commit(when, ops).await? {
                return Ok(());
            }
        }
        Err(conflict("cancel"))
    }

    /// The job if it is in one of `allowed` states, with the read that guards a write.
    async fn live_job(&self, id: &str, op: &'static str, allowed: &[JobState]) -> StoreResult<(Read, JobRecord)> {
        check_id("job id", id)?;
        let read = self.read_one(self.layout.job(id)).await?;
        match read.job()? {
            Some(job) if allowed.contains(&job.state) => Ok((read, job)),
            other => Err(state_error(id, op, other.as_ref())),
        }
    }

    // --- a job's life on a compute thread ---

    pub async fn mark_running(&self, id: String, started_at_ms: u64) -> StoreResult<JobRecord> {
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let (read, job) = self.live_job(&id, "start", &[JobState::Queued, JobState::Running]).await?;
            let starts = job.starts.saturating_add(1);
            let running =
                JobRecord { state: JobState::Running, started_at_ms: Some(started_at_ms), starts, ..job.clone() };
            let (was_live, now_live) = (self.layout.live(&job), self.layout.live(&running));
            let mut ops = vec![
                TxnOp::put(read.key.clone(), enc::encode_json(&running)?, None),
                TxnOp::put(self.layout.subject(&running), vec![running.state.byte()], None),
            ];
            // A restart of a RUNNING job keeps its index key (etcd refuses a key twice in one txn).
            if was_live != now_live {
                ops.push(TxnOp::delete(was_live, None));
            }
            ops.push(TxnOp::put(now_live, Vec::new(), None));
            if self.commit(vec![read.unchanged()], ops).await? {
                return Ok(running);
            }
        }
        Err(conflict("start"))
    }

    pub async fn complete(&self, id: String, completed_at_ms: u64, outcome: Completion) -> StoreResult<JobRecord> {
        outcome.validate()?;
        let packed = match &outcome {
            Completion::Ready { payload_json, .. } => Some(pack_payload(payload_json)),
            Completion::Failed { .. } => None,
        };
        if packed.as_ref().is_some_and(|p| p.len() > ETCD_VALUE_BYTES_MAX) {
            return Err(StoreError::Invalid(format!("compressed payload larger than {ETCD_VALUE_BYTES_MAX} bytes")));
        }
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let (read, job) = self.live_job(&id, "complete", &[JobState::Queued, JobState::Running]).await?;
            let mut done = JobRecord { completed_at_ms: Some(completed_at_ms), ..job.clone() };
            let ready = match &outcome {
                Completion::Ready { engine_version, event, signature, .. } => {
                    done.state = JobState::Ready;
                    done.signature = signature.clone();
                    done.engine_version = engine_version.clone();
                    done = done.with_event(event.as_ref());
                    true
                }
                Completion::Failed { code, message } => {
                    done.state = JobState::Failed;
                    done.error = Some(JobError { code: code.clone(), message: message.clone() });
                    done = done.with_event(None);
                    false
                }
            };
            let keys =
                vec![self.layout.live_subject(&job.account, job.kind.subject()), self.layout.live_count(&job.account)];
            let [pointer, count]: [Read; 2] = self.read(keys).await?.try_into().map_err(|_| short_read())?;
            let mut when = vec![read.unchanged(), pointer.unchanged(), count.unchanged()];
            let mut ops = vec![
                count_put(&count, -1),
                TxnOp::delete(self.layout.live(&job), None),
                TxnOp::delete(self.layout.owner(&job.id), None),
                TxnOp::put(self.layout.done(completed_at_ms, &job.id), Vec::new(), None),
                TxnOp::put(self.layout.subject(&done), vec![done.state.byte()], None),
            ];
            if pointer.value() == Some(job.id.as_bytes()) {
                ops.push(TxnOp::delete(pointer.key.clone(), None));
            }
            if let Some(packed) = &packed {
                ops.push(TxnOp::put(self.layout.payload(&job.id), packed.clone(), None));
            }
            if let Some(key) = self.event_index(&done) {
                ops.push(TxnOp::put(key, Vec::new(), None));
            }
            // The webhook enters the outbox with the completion: due at once.
            if let Some(callback) = done.callback.as_mut().filter(|c| c.status == CallbackStatus::Pending) {
                callback.next_attempt_ms = completed_at_ms;
                ops.extend(self.outbox_puts(&done, completed_at_ms));
            }
            if done.charged {
                self.settle_usage(&done, ready, &mut when, &mut ops).await?;
            }
            // The record is written last, with the callback's due time set above.
            ops.push(TxnOp::put(read.key.clone(), enc::encode_json(&done)?, None));
            if self.commit(when, ops).await? {
                return Ok(done);
            }
        }
        Err(conflict("completion"))
    }

    /// Adds the settlement of a charged job's unit to a completion: commit or refund on its
    /// key, or — when the key was rotated — release there and count it on the successor (the
    /// key records of the chain are compared too, so a rotation in between starts over).
    async fn settle_usage(
        &self,
        job: &JobRecord,
        ready: bool,
        when: &mut Vec<Compare>,
        ops: &mut Vec<TxnOp>,
    ) -> StoreResult<()> {
        let (successor, chain) = self.successor_of(&job.key_id).await?;
        when.extend(chain.iter().map(Read::unchanged));
        let period = job.quota_period_start_ms;
        let mut deltas: Vec<(String, UsageDelta)> = Vec::with_capacity(2);
        if successor == job.key_id {
            deltas.push((successor, if ready { usage::commit(job) } else { usage::refund() }));
        } else {
            deltas.push((job.key_id.clone(), usage::release()));
            deltas.push((successor, if ready { usage::charge(job) } else { usage::refunded() }));
        }
        let keys = deltas.iter().map(|(key_id, _)| self.layout.usage(key_id, period)).collect();
        for (read, (_, delta)) in self.read(keys).await?.into_iter().zip(&deltas) {
            let mut next = read.usage()?;
            next.add(delta);
            when.push(read.unchanged());
            ops.push(UsageWrite { read, next }.put());
        }
        Ok(())
    }

    /// The id at the end of `key_id`'s `replaced_by` chain and the key records read on the way.
    async fn successor_of(&self, key_id: &str) -> StoreResult<(String, Vec<Read>)> {
        let mut chain = Vec::new();
        let mut current = key_id.to_owned();
        for _ in 0..=KEY_SUCCESSION_HOPS_MAX {
            let read = self.read_one(self.layout.key_record(&current)).await?;
            let record: Option<KeyRecord> = read.value().map(enc::decode_json).transpose()?;
            chain.push(read);
            match record.and_then(|r| r.replaced_by) {
                Some(next) if chain.len() <= KEY_SUCCESSION_HOPS_MAX => current = next.as_str().to_owned(),
                _ => break,
            }
        }
        // A link to a key no longer stored ends the chain before it (as in RocksDB).
        if chain.last().is_some_and(|r| r.kv.is_none()) && chain.len() > 1 {
            chain.pop();
            let previous: KeyRecord = enc::decode_json(chain.last().and_then(Read::value).unwrap_or_default())?;
            current = previous.id.as_str().to_owned();
        }
        Ok((current, chain))
    }

    // --- reads of polls and admission ---

    pub async fn get_job(&self, id: String) -> StoreResult<Option<JobRecord>> {
        if check_id("job id", &id).is_err() {
            return Ok(None);
        }
        self.read_one(self.layout.job(&id)).await?.job()
    }

    /// The job and the revision it was read at (a watch for its change starts after it).
    pub async fn get_job_at(&self, id: String) -> StoreResult<Option<(JobRecord, i64)>> {
        if check_id("job id", &id).is_err() {
            return Ok(None);
        }
        let read = self.read_one(self.layout.job(&id)).await?;
        let revision = read.revision();
        Ok(read.job()?.map(|job| (job, revision)))
    }

    pub async fn get_result(&self, job: JobRecord) -> StoreResult<Option<Vec<u8>>> {
        if job.state != JobState::Ready || check_id("job id", &job.id).is_err() {
            return Ok(None);
        }
        let read = self.read_one(self.layout.payload(&job.id)).await?;
        read.value().map(|v| unpack_payload(v, RESULT_BYTES_MAX)).transpose()
    }

    /// The newest job of the subject whose state byte passes `want` (newest first, at most
    /// `SUBJECT_SCAN_LEN_MAX` looked at).
    /// The account's live job of a subject (what its live-job pointer names), if any.
    pub async fn live_of_subject(&self, account: String, subject: OwnedSubject) -> StoreResult<Option<JobRecord>> {
        if check_id("account", &account).is_err() {
            return Ok(None);
        }
        let pointer = self.read_one(self.layout.live_subject(&account, subject.borrow())).await?;
        self.live_pointed(&pointer).await
    }

    pub async fn newest_in_subject(
        &self,
        account: String,
        subject: OwnedSubject,
        ready_only: bool,
    ) -> StoreResult<Option<JobRecord>> {
        let subject = subject.borrow();
        if check_id("account", &account).is_err() || check_id("subject", subject.text()).is_err() {
            return Ok(None);
        }
        let group = self.layout.subject_group(&account, subject);
        let to = enc::prefix_end(&group).unwrap_or_default();
        let kvs = self.range(group.clone(), to, SUBJECT_SCAN_LEN_MAX, false).await?;
        let want = |state: u8| !ready_only || state == JobState::Ready.byte();
        let Some(kv) = kvs.iter().find(|kv| kv.value().first().is_some_and(|s| want(*s))) else { return Ok(None) };
        let id = enc::subject_key_id(kv.key(), group.len())?.to_owned();
        self.get_job(id).await
    }

    /// One unit of a synchronous operation (see `Store::charge_now`): compare-and-swapped on
    /// the usage record, refused when `used + reserved` already reached `limit`.
    /// `units` charged together, all or none, within `limit`.
    pub async fn charge_now(
        &self,
        key_id: String,
        period_start_ms: u64,
        limit: u64,
        units: u32,
    ) -> StoreResult<Charged> {
        check_id("key id", &key_id)?;
        let key = self.layout.usage(&key_id, period_start_ms);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let read = self.read_one(key.clone()).await?;
            let usage = read.usage()?;
            if usage.used.saturating_add(usage.reserved).saturating_add(i64::from(units)) > limit {
                return Ok(Charged::Exhausted { usage });
            }
            let mut next = usage;
            next.add(&usage::charge_now_units(units));
            let write = UsageWrite { read, next };
            let txn = Txn::new().when(vec![write.read.unchanged()]).and_then(vec![write.put()]);
            if self.txn(txn).await?.succeeded() {
                return Ok(Charged::Done { usage: Some(write.next) });
            }
        }
        Err(conflict("charge"))
    }

    pub async fn usage(&self, key_id: String, period_start_ms: u64) -> StoreResult<UsageRecord> {
        if check_id("key id", &key_id).is_err() {
            return Ok(UsageRecord::default());
        }
        self.read_one(self.layout.usage(&key_id, period_start_ms)).await?.usage()
    }

    // --- recovery, adoption and retention ---

    pub async fn live_jobs(
        &self,
        state: LiveState,
        after: Option<JobCursor>,
        created_before_ms: u64,
        limit: usize,
    ) -> StoreResult<JobPage> {
        let (state, limit) = (state.state(), limit.min(STORE_PAGE_LEN_MAX));
        let from = match &after {
            Some(c) => enc::successor(&self.layout.live_raw(&enc::live_key(state, c.created_at_ms, &c.id))),
            None => self.layout.live_raw(&[state.byte()]),
        };
        let to = self.layout.live_raw(&enc::live_key(state, created_before_ms, ""));
        let kvs = self.range(from, to, limit, true).await?;
        let mut cursors = Vec::with_capacity(kvs.len());
        for kv in &kvs {
            let (created_at_ms, id) = enc::parse_live_key(self.layout.tail(b'l', kv.key())?)?;
            cursors.push(JobCursor { created_at_ms, id: id.to_owned() });
        }
        let next = if cursors.len() == limit { cursors.last().cloned() } else { None };
        let jobs = self.jobs(cursors.iter().map(|c| c.id.as_str())).await?;
        Ok(JobPage { jobs, next })
    }

    /// The records of `ids` that exist, read in chunks of one transaction each.
    async fn jobs<'i>(&self, ids: impl Iterator<Item = &'i str>) -> StoreResult<Vec<JobRecord>> {
        let keys: Vec<Vec<u8>> = ids.map(|id| self.layout.job(id)).collect();
        let mut jobs = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(ETCD_PURGE_JOBS_PER_TXN * 4) {
            for read in self.read(chunk.to_vec()).await? {
                jobs.extend(read.job()?);
            }
        }
        Ok(jobs)
    }

    pub async fn purge_finished_before(&self, cutoff_ms: u64, limit: usize) -> StoreResult<usize> {
        let family = self.layout.family(b'd');
        let to = self.layout.done(cutoff_ms, "");
        let kvs = self.range(family, to, limit.min(STORE_PAGE_LEN_MAX), true).await?;
        for chunk in kvs.chunks(ETCD_PURGE_JOBS_PER_TXN) {
            let mut ids = Vec::with_capacity(chunk.len());
            for kv in chunk {
                ids.push(enc::parse_done_key(self.layout.tail(b'd', kv.key())?)?.1.to_owned());
            }
            let jobs = self.jobs(ids.iter().map(String::as_str)).await?;
            let mut ops: Vec<TxnOp> = chunk.iter().map(|kv| TxnOp::delete(kv.key().to_vec(), None)).collect();
            for job in jobs.iter().filter(|j| j.state.is_finished()) {
                ops.push(TxnOp::delete(self.layout.job(&job.id), None));
                ops.push(TxnOp::delete(self.layout.subject(job), None));
                ops.push(TxnOp::delete(self.layout.payload(&job.id), None));
                if let Some(callback) = &job.callback {
                    ops.push(TxnOp::delete(self.layout.callback_due(callback.next_attempt_ms, &job.id), None));
                    ops.push(TxnOp::delete(self.layout.callback_of_account(job), None));
                }
                ops.extend(self.event_index(job).map(|key| TxnOp::delete(key, None)));
            }
            self.commit(Vec::new(), ops).await?;
        }
        Ok(kvs.len())
    }
}

impl Db {
    // --- feature records ---

    /// The event index key of a job that caused an event.
    fn event_index(&self, job: &JobRecord) -> Option<Vec<u8>> {
        let (link, event) = (job.monitor.as_ref()?, job.event()?);
        Some(self.layout.doc(DocKind::Event, &docs::event_key(&link.monitor_id, event.created_at_ms, &job.id)))
    }

    /// One transaction: every write's expectation a compare on its key's mod revision.
    pub async fn write_docs(&self, writes: Vec<DocWrite>) -> StoreResult<()> {
        docs::validate(&writes)?;
        let mut when = Vec::new();
        let mut ops = Vec::with_capacity(writes.len());
        for write in &writes {
            let key = self.layout.doc(write.kind, &write.key);
            match write.expect {
                Expect::Any => {}
                Expect::Absent => when.push(Compare::mod_revision(key.clone(), CompareOp::Equal, 0)),
                Expect::Revision(r) => {
                    let r = i64::try_from(r).map_err(|_| docs::conflict(write))?;
                    when.push(Compare::mod_revision(key.clone(), CompareOp::Equal, r))
                }
            }
            ops.push(match &write.value {
                Some(value) => TxnOp::put(key, value.clone(), None),
                None => TxnOp::delete(key, None),
            });
        }
        match self.commit(when, ops).await? {
            true => Ok(()),
            false => Err(StoreError::Conflict("a record changed meanwhile".into())),
        }
    }

    pub async fn get_doc(&self, kind: DocKind, key: Vec<u8>) -> StoreResult<Option<Doc>> {
        if docs::check_key(&key).is_err() {
            return Ok(None);
        }
        let read = self.read_one(self.layout.doc(kind, &key)).await?;
        Ok(read.kv.map(|kv| Doc { key, value: kv.value().to_vec(), revision: kv.mod_revision() as u64 }))
    }

    pub async fn scan_docs(
        &self,
        kind: DocKind,
        prefix: Vec<u8>,
        after: Option<Vec<u8>>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let start = self.layout.doc(kind, &prefix);
        let from = match &after {
            Some(after) => enc::successor(&self.layout.doc(kind, after)),
            None => start.clone(),
        };
        let Some(to) = enc::prefix_end(&start) else { return Ok(Vec::new()) };
        let kvs = self.range(from, to, docs::page_len(limit), false).await?;
        Ok(self.docs_of(kind, kvs))
    }

    /// `scan_docs` downwards: etcd sorts the range by key, descending, then cuts it to
    /// `limit` — it reads every key from the prefix's start to `before` to do so, which the
    /// callers bound (an account's feedback: at most `FEEDBACK_PER_ACCOUNT_MAX` records).
    pub async fn scan_docs_rev(
        &self,
        kind: DocKind,
        prefix: Vec<u8>,
        before: Option<Vec<u8>>,
        limit: usize,
    ) -> StoreResult<Vec<Doc>> {
        let start = self.layout.doc(kind, &prefix);
        let to = match &before {
            Some(before) => self.layout.doc(kind, before),
            None => match enc::prefix_end(&start) {
                Some(end) => end,
                None => return Ok(Vec::new()),
            },
        };
        let limit = docs::page_len(limit);
        if limit == 0 || to <= start {
            return Ok(Vec::new());
        }
        let options =
            GetOptions::new().with_range(to).with_limit(limit as i64).with_sort(SortTarget::Key, SortOrder::Descend);
        let kvs = self.get(start, Some(options)).await?.take_kvs();
        Ok(self.docs_of(kind, kvs))
    }

    fn docs_of(&self, kind: DocKind, kvs: Vec<KeyValue>) -> Vec<Doc> {
        let family_len = self.layout.doc(kind, &[]).len();
        kvs.into_iter()
            .map(|kv| Doc {
                key: kv.key()[family_len..].to_vec(),
                value: kv.value().to_vec(),
                revision: kv.mod_revision() as u64,
            })
            .collect()
    }

    // --- webhooks ---

    pub async fn due_callbacks(&self, now_ms: u64, after: Option<DueCursor>, limit: usize) -> StoreResult<DuePage> {
        let from = match after {
            Some(c) => enc::successor(&self.layout.callback_due(c.due_ms, &c.id)),
            None => self.layout.family(b'c'),
        };
        let to = self.layout.callback_due(now_ms.saturating_add(1), "");
        let limit = limit.min(STORE_PAGE_LEN_MAX);
        let kvs = self.range(from, to, limit, true).await?;
        let mut entries = Vec::with_capacity(kvs.len());
        for kv in &kvs {
            let (due_ms, id) = enc::parse_done_key(self.layout.tail(b'c', kv.key())?)?;
            entries.push(DueCursor { due_ms, id: id.to_owned() });
        }
        let next = entries.last().filter(|_| entries.len() >= limit && limit > 0).cloned();
        let jobs = self.jobs(entries.iter().map(|c| c.id.as_str())).await?;
        Ok(DuePage { jobs, next })
    }

    /// The job's callback replaced, its outbox entry moved (or removed), in one transaction
    /// guarded by the job's mod-revision.
    pub async fn record_callback(&self, id: String, expected: Callback, callback: Callback) -> StoreResult<JobRecord> {
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let (read, job) = self.live_job(&id, "record a callback", &[JobState::Ready, JobState::Failed]).await?;
            let Some(was) = job.callback.as_ref().filter(|was| **was == expected) else {
                return Err(crate::store::record::callback_moved(&id, job.callback.as_ref()));
            };
            let (was_due, now_due) = (
                self.layout.callback_due(was.next_attempt_ms, &id),
                self.layout.callback_due(callback.next_attempt_ms, &id),
            );
            let moved = was_due != now_due;
            let mut ops = Vec::with_capacity(3);
            // etcd refuses a key twice in one transaction: a due time that did not move stays.
            if callback.status != CallbackStatus::Pending || moved {
                ops.push(TxnOp::delete(was_due, None));
            }
            // A settled webhook sent again (a monitor event's redelivery) re-enters the outbox.
            let revived = was.status != CallbackStatus::Pending && callback.status == CallbackStatus::Pending;
            if callback.status == CallbackStatus::Pending && (moved || revived) {
                ops.push(TxnOp::put(now_due, Vec::new(), None));
            }
            if callback.status != CallbackStatus::Pending {
                ops.push(TxnOp::delete(self.layout.callback_of_account(&job), None));
            }
            let updated = JobRecord { callback: Some(callback.clone()), ..job };
            if revived {
                ops.push(TxnOp::put(self.layout.callback_of_account(&updated), Vec::new(), None));
            }
            ops.push(TxnOp::put(read.key.clone(), enc::encode_json(&updated)?, None));
            if self.commit(vec![read.unchanged()], ops).await? {
                return Ok(updated);
            }
        }
        Err(conflict("callback"))
    }

    /// The two outbox entries of a finished job's pending webhook, due at `due_ms`.
    fn outbox_puts(&self, job: &JobRecord, due_ms: u64) -> [TxnOp; 2] {
        [
            TxnOp::put(self.layout.callback_due(due_ms, &job.id), Vec::new(), None),
            TxnOp::put(self.layout.callback_of_account(job), Vec::new(), None),
        ]
    }

    /// `Store::attach_callback`: the job's new callback (and, when it is finished, its outbox
    /// entries) in one transaction guarded by the job's mod-revision, so it never races a
    /// completion or another attach into two webhooks.
    pub async fn attach_callback(
        &self,
        id: String,
        account: String,
        key_id: String,
        url: String,
        now_ms: u64,
    ) -> StoreResult<Attached> {
        check_id("job id", &id)?;
        for _ in 0..ETCD_CAS_ATTEMPTS_MAX {
            let read = self.read_one(self.layout.job(&id)).await?;
            let attached = attachable(&id, &account, read.job()?)?.attach_callback(&key_id, &url, now_ms);
            let Attached::New(job) = &attached else { return Ok(attached) };
            job.validate()?;
            let mut ops = vec![TxnOp::put(read.key.clone(), enc::encode_json(job)?, None)];
            if job.state.is_finished() {
                ops.extend(self.outbox_puts(job, now_ms));
            }
            if self.commit(vec![read.unchanged()], ops).await? {
                return Ok(attached);
            }
        }
        Err(conflict("attach a callback"))
    }

    /// The account's pending webhooks (job ids), oldest first, at most `limit`.
    pub async fn pending_callbacks(&self, account: String, limit: usize) -> StoreResult<Vec<String>> {
        if check_id("account", &account).is_err() {
            return Ok(Vec::new());
        }
        let prefix = self.layout.callbacks_of_account(&account);
        let to = enc::prefix_end(&prefix).unwrap_or_default();
        let kvs = self.range(prefix.clone(), to, limit.min(STORE_PAGE_LEN_MAX), true).await?;
        let mut ids = Vec::with_capacity(kvs.len());
        for kv in &kvs {
            let tail = kv.key().get(prefix.len()..).unwrap_or_default();
            ids.push(enc::parse_done_key(tail)?.1.to_owned());
        }
        Ok(ids)
    }

    pub async fn put_webhook_secret(&self, secret: WebhookSecret) -> StoreResult<()> {
        secret.validate()?;
        self.put(self.layout.webhook_secret(&secret.account), enc::encode_json(&secret)?, None).await?;
        Ok(())
    }

    pub async fn get_webhook_secret(&self, account: String) -> StoreResult<Option<WebhookSecret>> {
        if check_id("account", &account).is_err() {
            return Ok(None);
        }
        let read = self.read_one(self.layout.webhook_secret(&account)).await?;
        read.value().map(enc::decode_json).transpose()
    }
}

/// A subject that can cross to the etcd thread.
#[derive(Debug, Clone)]
pub enum OwnedSubject {
    Wallet(String),
    Pair(String),
}

impl OwnedSubject {
    pub fn of(subject: Subject<'_>) -> OwnedSubject {
        match subject {
            Subject::Wallet(s) => OwnedSubject::Wallet(s.to_owned()),
            Subject::Pair(s) => OwnedSubject::Pair(s.to_owned()),
        }
    }

    pub fn borrow(&self) -> Subject<'_> {
        match self {
            OwnedSubject::Wallet(s) => Subject::Wallet(s),
            OwnedSubject::Pair(s) => Subject::Pair(s),
        }
    }
}

fn short_read() -> StoreError {
    StoreError::Io("etcd answered fewer reads than asked".into())
}
