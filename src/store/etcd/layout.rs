//! The etcd keyspace of one Wallet X-Ray cluster: which key holds what, built from the same
//! binary layouts as the RocksDB column families (`store::encoding`), one letter per family.
//!
//! Owns: the key names below and the payload's value form (format byte, then LZ4 with its
//! length prepended). Pure functions, called on whichever thread builds a request.
//!
//! | key | value | written by |
//! |---|---|---|
//! | `P k/<key id>` | `v1` ‖ JSON key record | key admin (any node) |
//! | `P j/<job id>` | `v1` ‖ JSON job record | admission, start, completion |
//! | `P l/<state ‖ created BE ‖ id>` | empty | live-state index (admission, start, completion) |
//! | `P d/<completed BE ‖ id>` | empty | completion index (retention purge reads it) |
//! | `P s/<lp(account) ‖ kind ‖ lp(subject) ‖ (MAX − created) BE ‖ id>` | state byte | subject index |
//! | `P t/<lp(account) ‖ kind ‖ lp(subject)>` | job id | the subject's live job (deduplication) |
//! | `P r/<job id>` | `v1` ‖ LZ4 payload | a READY job's result |
//! | `P u/<lp(key id) ‖ period start BE>` | 49-byte usage record (41 in schema 1) | quota (compare-and-swap) |
//! | `P a/<account>` | u64 BE | the account's live jobs (admission +1, completion and undo −1) |
//! | `P o/<job id>` | node id | the job's owner, attached to the owner's lease |
//! | `P n/<node id>` | JSON node facts | one per live node, attached to its lease |
//! | `P i/<lp(account) ‖ SHA-256 of an Idempotency-Key>` | `v1` ‖ JSON answer | admission, or the answer of a request that made no job |
//! | `P h/<created BE ‖ the i/ tail>` | empty | the answers' time index (their purge reads it) |
//! | `P x/<lp(account) ‖ created BE ‖ SHA-256 of the key>` | empty | an account's answers, oldest first (the one the cap evicts) |
//! | `P y/<account>` | u64 BE | the account's answer count: every write of the account's answers puts it, so its revision orders them |
//! | `P c/<next attempt BE ‖ job id>` | empty | the webhook outbox: finished jobs whose callback is pending (completion, attach, delivery attempts) |
//! | `P q/<lp(account) ‖ entered BE ‖ job id>` | empty | the outbox by account: its pending webhooks, oldest first by when they entered it (completion or attach, attempts that settle, `trim_outbox`) |
//! | `P w/<account>` | `v1` ‖ JSON webhook secret | the admin API / CLI |
//! | `P g/<kind byte ‖ key>` | the record's bytes (its revision is etcd's mod revision) | feature records (`store::docs`: monitors, cursors; the event index by completions) |
//! | `P m/schema_version` | u32 BE | the first node to start |
//! | `P m/first_key` | node id | the node that issued the cluster's first key |
//!
//! `P` is the cluster's prefix (`xray/` by default), so several clusters may share one etcd.
//! Invariant: no key of one family is a prefix of a key of another (each family has its own
//! letter and `/`).

use crate::store::encoding as enc;
use crate::store::{JobRecord, StoreError, StoreResult, Subject};

/// The default prefix of every key of a cluster.
pub const PREFIX_DEFAULT: &str = "xray/";

/// Key builder of one cluster's keyspace.
#[derive(Debug, Clone)]
pub struct Layout {
    prefix: Vec<u8>,
}

impl Layout {
    pub fn new(prefix: &str) -> Layout {
        Layout { prefix: prefix.as_bytes().to_vec() }
    }

    fn key(&self, family: u8, tail: &[u8]) -> Vec<u8> {
        let mut k = Vec::with_capacity(self.prefix.len() + 2 + tail.len());
        k.extend_from_slice(&self.prefix);
        k.push(family);
        k.push(b'/');
        k.extend_from_slice(tail);
        k
    }

    /// The first key of a family (its prefix).
    pub fn family(&self, family: u8) -> Vec<u8> {
        self.key(family, &[])
    }

    pub fn key_record(&self, id: &str) -> Vec<u8> {
        self.key(b'k', id.as_bytes())
    }

    pub fn job(&self, id: &str) -> Vec<u8> {
        self.key(b'j', id.as_bytes())
    }

    pub fn live(&self, job: &JobRecord) -> Vec<u8> {
        self.key(b'l', &enc::live_key(job.state, job.created_at_ms, &job.id))
    }

    pub fn live_raw(&self, tail: &[u8]) -> Vec<u8> {
        self.key(b'l', tail)
    }

    pub fn done(&self, completed_at_ms: u64, id: &str) -> Vec<u8> {
        self.key(b'd', &enc::done_key(completed_at_ms, id))
    }

    pub fn subject(&self, job: &JobRecord) -> Vec<u8> {
        self.key(b's', &enc::subject_key(job))
    }

    pub fn subject_group(&self, account: &str, subject: Subject<'_>) -> Vec<u8> {
        self.key(b's', &enc::subject_prefix(account, subject))
    }

    pub fn live_subject(&self, account: &str, subject: Subject<'_>) -> Vec<u8> {
        self.key(b't', &enc::subject_prefix(account, subject))
    }

    /// The count of an account's live jobs (the per-account cap, cluster-wide).
    pub fn live_count(&self, account: &str) -> Vec<u8> {
        self.key(b'a', account.as_bytes())
    }

    pub fn payload(&self, id: &str) -> Vec<u8> {
        self.key(b'r', id.as_bytes())
    }

    pub fn usage(&self, key_id: &str, period_start_ms: u64) -> Vec<u8> {
        self.key(b'u', &enc::usage_key(key_id, period_start_ms))
    }

    /// An idempotent answer of an account's key digest.
    pub fn answer(&self, account: &str, key_digest: &[u8; 32]) -> Vec<u8> {
        self.key(b'i', &enc::answer_key(account, key_digest))
    }

    /// The time index entry of an answer.
    pub fn answer_time(&self, created_at_ms: u64, account: &str, key_digest: &[u8; 32]) -> Vec<u8> {
        self.key(b'h', &enc::answer_time_key(created_at_ms, &enc::answer_key(account, key_digest)))
    }

    /// The answer a time index entry's tail (`created BE ‖ i/ tail`) names.
    pub fn answer_raw(&self, tail: &[u8]) -> Vec<u8> {
        self.key(b'i', tail)
    }

    /// An answer's entry in its account's time-ordered answers.
    pub fn account_answer(&self, account: &str, created_at_ms: u64, key_digest: &[u8; 32]) -> Vec<u8> {
        self.key(b'x', &enc::account_answer_key(account, created_at_ms, key_digest))
    }

    /// The first key of an account's time-ordered answers (its prefix).
    pub fn account_answers(&self, account: &str) -> Vec<u8> {
        self.key(b'x', &enc::account_answers_prefix(account))
    }

    /// The count of an account's answers (the per-account cap, cluster-wide).
    pub fn answer_count(&self, account: &str) -> Vec<u8> {
        self.key(b'y', account.as_bytes())
    }

    /// The outbox entry of a job whose callback is due at `next_attempt_ms`.
    pub fn callback_due(&self, next_attempt_ms: u64, id: &str) -> Vec<u8> {
        self.key(b'c', &enc::done_key(next_attempt_ms, id))
    }

    /// A finished job's entry in its account's outbox (at the time it entered it).
    pub fn callback_of_account(&self, job: &JobRecord) -> Vec<u8> {
        self.key(b'q', &enc::outbox_account_key(&job.account, job.outbox_entered_ms(), &job.id))
    }

    /// The account's outbox entries: this prefix, then the time ‖ id.
    pub fn callbacks_of_account(&self, account: &str) -> Vec<u8> {
        self.key(b'q', &enc::outbox_account_prefix(account))
    }

    pub fn webhook_secret(&self, account: &str) -> Vec<u8> {
        self.key(b'w', account.as_bytes())
    }

    /// A feature record (`store::docs`): its kind's byte, then its key.
    pub fn doc(&self, kind: crate::store::DocKind, key: &[u8]) -> Vec<u8> {
        let mut tail = Vec::with_capacity(1 + key.len());
        tail.push(kind.byte());
        tail.extend_from_slice(key);
        self.key(b'g', &tail)
    }

    pub fn owner(&self, id: &str) -> Vec<u8> {
        self.key(b'o', id.as_bytes())
    }

    pub fn node(&self, node_id: &str) -> Vec<u8> {
        self.key(b'n', node_id.as_bytes())
    }

    pub fn first_key(&self) -> Vec<u8> {
        self.key(b'm', b"first_key")
    }

    pub fn schema_version(&self) -> Vec<u8> {
        self.key(b'm', b"schema_version")
    }

    /// The part of a key after its family's prefix.
    pub fn tail<'k>(&self, family: u8, key: &'k [u8]) -> StoreResult<&'k [u8]> {
        let head = self.family(family);
        key.strip_prefix(head.as_slice())
            .ok_or_else(|| StoreError::Corruption(format!("key of {} bytes outside its family", key.len())))
    }
}

/// A READY payload as stored: the format byte, then LZ4 (block format, length prepended).
/// JSON documents shrink several times, which keeps results inside etcd's request limit.
pub fn pack_payload(json: &[u8]) -> Vec<u8> {
    let packed = lz4_flex::compress_prepend_size(json);
    enc::encode_raw(&packed)
}

/// The JSON of a stored payload; refuses anything that does not decompress whole.
pub fn unpack_payload(value: &[u8], bytes_max: usize) -> StoreResult<Vec<u8>> {
    let packed = enc::strip_format(value)?;
    let declared = packed.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize);
    if declared.is_none_or(|len| len > bytes_max) {
        return Err(StoreError::Corruption(format!("stored payload declares more than {bytes_max} bytes")));
    }
    lz4_flex::decompress_size_prepended(packed).map_err(|e| StoreError::Corruption(format!("stored payload: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_do_not_prefix_each_other_and_tails_come_back() {
        let layout = Layout::new(PREFIX_DEFAULT);
        let job = layout.job("an_1");
        assert_eq!(job, b"xray/j/an_1");
        assert!(!layout.job("").starts_with(&layout.family(b'l')));
        assert_eq!(layout.tail(b'j', &job).ok(), Some(&b"an_1"[..]));
        assert!(layout.tail(b'k', &job).is_err());
    }

    #[test]
    fn payloads_round_trip_compressed_and_a_lying_length_is_refused() {
        let json = br#"{"score":24,"signals":[{"id":"x"},{"id":"x"},{"id":"x"},{"id":"x"}]}"#.repeat(64);
        let packed = pack_payload(&json);
        assert!(packed.len() * 4 < json.len(), "{} of {}", packed.len(), json.len());
        assert_eq!(unpack_payload(&packed, json.len()).ok(), Some(json.clone()));
        assert!(unpack_payload(&packed, json.len() - 1).is_err());
        let mut broken = packed;
        broken.truncate(broken.len() / 2);
        assert!(unpack_payload(&broken, json.len()).is_err());
    }
}
