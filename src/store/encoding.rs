//! Binary keys of every column family and the versioned value envelope.
//!
//! Owns: the byte layout documented in the `store` module docs. Called by `rocks` on whichever
//! thread calls the store; pure functions.
//!
//! Invariant: numbers in keys are big-endian, so byte order is numeric order and range scans
//! come out sorted by time. Variable-length fields inside a key are length-prefixed (`lp`),
//! except a trailing job id, so no key is a prefix of another key's grouping prefix.
//! Invariant: every value starts with `FORMAT_V1`; decoding refuses any other byte.

use serde::{de::DeserializeOwned, Serialize};

use super::record::{JobRecord, JobState, Subject};
use super::{StoreError, StoreResult};

/// Format byte of every value written by this build.
pub(crate) const FORMAT_V1: u8 = 1;

/// Appends a one-byte length and the bytes. Callers validated `s.len() <= STORE_ID_BYTES_MAX`.
fn push_lp(out: &mut Vec<u8>, s: &str) {
    // Lengths are validated to ≤ STORE_ID_BYTES_MAX (64) before any key is built; the clamp only
    // keeps the encoding well-formed should a caller skip validation.
    let bytes = &s.as_bytes()[..s.len().min(u8::MAX as usize)];
    out.push(bytes.len() as u8);
    out.extend_from_slice(bytes);
}

/// `jobs_live`: state byte ‖ created_at_ms BE ‖ id.
pub(crate) fn live_key(state: JobState, created_at_ms: u64, id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + id.len());
    k.push(state.byte());
    k.extend_from_slice(&created_at_ms.to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// Splits a `jobs_live` key into (created_at_ms, id).
pub(crate) fn parse_live_key(key: &[u8]) -> StoreResult<(u64, &str)> {
    let (time, id) = split_time(key.get(1..).unwrap_or_default())?;
    Ok((time, id))
}

/// `callbacks_by_account` prefix: lp(account).
pub(crate) fn outbox_account_prefix(account: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + account.len());
    push_lp(&mut k, account);
    k
}

/// `callbacks_by_account`: lp(account) ‖ the time the webhook entered the outbox (the job's
/// completion) BE ‖ id: an account's pending webhooks, oldest first.
pub(crate) fn outbox_account_key(account: &str, entered_ms: u64, id: &str) -> Vec<u8> {
    let mut k = outbox_account_prefix(account);
    k.extend_from_slice(&entered_ms.to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// The job id of a `callbacks_by_account` key whose account prefix is `prefix_len` bytes.
pub(crate) fn parse_outbox_account_key(key: &[u8], prefix_len: usize) -> StoreResult<&str> {
    Ok(split_time(key.get(prefix_len..).unwrap_or_default())?.1)
}

/// `jobs_done`: completed_at_ms BE ‖ id.
pub(crate) fn done_key(completed_at_ms: u64, id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + id.len());
    k.extend_from_slice(&completed_at_ms.to_be_bytes());
    k.extend_from_slice(id.as_bytes());
    k
}

/// Splits a `jobs_done` key into (completed_at_ms, id).
pub(crate) fn parse_done_key(key: &[u8]) -> StoreResult<(u64, &str)> {
    split_time(key)
}

fn split_time(bytes: &[u8]) -> StoreResult<(u64, &str)> {
    let (time, id) = bytes.split_first_chunk::<8>().ok_or_else(|| corrupt_key(bytes))?;
    let id = std::str::from_utf8(id).map_err(|_| corrupt_key(bytes))?;
    Ok((u64::from_be_bytes(*time), id))
}

fn corrupt_key(key: &[u8]) -> StoreError {
    StoreError::Corruption(format!("malformed index key of {} bytes", key.len()))
}

/// `by_subject` grouping prefix: lp(account) ‖ kind byte ‖ lp(subject).
pub(crate) fn subject_prefix(account: &str, subject: Subject<'_>) -> Vec<u8> {
    let mut k = Vec::with_capacity(3 + account.len() + subject.text().len() + 8);
    push_lp(&mut k, account);
    k.push(subject.kind_byte());
    push_lp(&mut k, subject.text());
    k
}

/// `by_subject` key: prefix ‖ (u64::MAX − created_at_ms) BE ‖ id, so newest sorts first.
pub(crate) fn subject_key(job: &JobRecord) -> Vec<u8> {
    let mut k = subject_prefix(&job.account, job.kind.subject());
    k.extend_from_slice(&(u64::MAX - job.created_at_ms).to_be_bytes());
    k.extend_from_slice(job.id.as_bytes());
    k
}

/// The job id at the end of a `by_subject` key with a known prefix length.
pub(crate) fn subject_key_id(key: &[u8], prefix_len: usize) -> StoreResult<&str> {
    let (_, id) = split_time(key.get(prefix_len..).unwrap_or_default())?;
    Ok(id)
}

/// `usage`: lp(key id) ‖ period_start_ms BE.
pub(crate) fn usage_key(key_id: &str, period_start_ms: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(9 + key_id.len());
    push_lp(&mut k, key_id);
    k.extend_from_slice(&period_start_ms.to_be_bytes());
    k
}

/// `idempotency`: lp(account) ‖ SHA-256 of the client's key.
pub(crate) fn answer_key(account: &str, key_digest: &[u8; 32]) -> Vec<u8> {
    let mut k = Vec::with_capacity(33 + account.len());
    push_lp(&mut k, account);
    k.extend_from_slice(key_digest);
    k
}

/// `idempotency_by_time`: created_at_ms BE ‖ the answer's `idempotency` key.
pub(crate) fn answer_time_key(created_at_ms: u64, answer_key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + answer_key.len());
    k.extend_from_slice(&created_at_ms.to_be_bytes());
    k.extend_from_slice(answer_key);
    k
}

/// Splits an `idempotency_by_time` key into (created_at_ms, the answer's key).
pub(crate) fn parse_answer_time_key(key: &[u8]) -> StoreResult<(u64, &[u8])> {
    let (time, answer) = key.split_first_chunk::<8>().ok_or_else(|| corrupt_key(key))?;
    Ok((u64::from_be_bytes(*time), answer))
}

/// `idempotency_by_account` grouping prefix: lp(account).
pub(crate) fn account_answers_prefix(account: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(1 + account.len() + 40);
    push_lp(&mut k, account);
    k
}

/// `idempotency_by_account`: lp(account) ‖ created_at_ms BE ‖ SHA-256 of the client's key, so
/// an account's answers sort oldest first.
pub(crate) fn account_answer_key(account: &str, created_at_ms: u64, key_digest: &[u8; 32]) -> Vec<u8> {
    let mut k = account_answers_prefix(account);
    k.extend_from_slice(&created_at_ms.to_be_bytes());
    k.extend_from_slice(key_digest);
    k
}

/// Splits the tail of an `idempotency_by_account` key (after its prefix) into (created_at_ms,
/// key digest).
pub(crate) fn parse_account_answer_tail(tail: &[u8]) -> StoreResult<(u64, [u8; 32])> {
    let (time, digest) = tail.split_first_chunk::<8>().ok_or_else(|| corrupt_key(tail))?;
    let digest: [u8; 32] = digest.try_into().map_err(|_| corrupt_key(tail))?;
    Ok((u64::from_be_bytes(*time), digest))
}

/// `idempotency_accounts` value: the account's answer count and a lower bound of the time of
/// its oldest answer (where an eviction's scan starts), both u64 BE.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct AnswerTally {
    pub count: u64,
    pub oldest_ms: u64,
}

impl AnswerTally {
    pub(crate) fn encode(&self) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..8].copy_from_slice(&self.count.to_be_bytes());
        v[8..].copy_from_slice(&self.oldest_ms.to_be_bytes());
        v
    }

    pub(crate) fn decode(value: &[u8]) -> StoreResult<AnswerTally> {
        let bytes: [u8; 16] =
            value.try_into().map_err(|_| StoreError::Corruption(format!("answer tally of {} bytes", value.len())))?;
        let (count, oldest) = bytes.split_at(8);
        let word = |b: &[u8]| u64::from_be_bytes(b.try_into().unwrap_or_default());
        Ok(AnswerTally { count: word(count), oldest_ms: word(oldest) })
    }
}

/// The smallest key greater than every key starting with `prefix`, or `None` if there is
/// none (the prefix is all 0xFF). Used as an exclusive iterator upper bound.
pub(crate) fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The smallest key strictly greater than `key` (for resuming after a cursor).
pub(crate) fn successor(key: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(key.len() + 1);
    k.extend_from_slice(key);
    k.push(0);
    k
}

/// `FORMAT_V1` ‖ JSON of the record.
pub(crate) fn encode_json<T: Serialize>(record: &T) -> StoreResult<Vec<u8>> {
    let mut out = vec![FORMAT_V1];
    serde_json::to_writer(&mut out, record).map_err(|e| StoreError::Encoding(e.to_string()))?;
    Ok(out)
}

/// Inverse of `encode_json`.
pub(crate) fn decode_json<T: DeserializeOwned>(value: &[u8]) -> StoreResult<T> {
    let body = strip_format(value)?;
    serde_json::from_slice(body).map_err(|e| StoreError::Encoding(e.to_string()))
}

/// `FORMAT_V1` ‖ raw bytes (payloads are stored exactly as served).
pub(crate) fn encode_raw(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 1);
    out.push(FORMAT_V1);
    out.extend_from_slice(bytes);
    out
}

/// The bytes after the format byte, refusing unknown formats.
pub(crate) fn strip_format(value: &[u8]) -> StoreResult<&[u8]> {
    match value.split_first() {
        Some((&FORMAT_V1, body)) => Ok(body),
        Some((other, _)) => Err(StoreError::Encoding(format!("unknown value format {other}"))),
        None => Err(StoreError::Encoding("empty value".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_keys_sort_by_state_then_time_then_id() {
        let a = live_key(JobState::Queued, 2, "b");
        let b = live_key(JobState::Queued, 10, "a");
        let c = live_key(JobState::Running, 1, "a");
        assert!(a < b && b < c);
        assert_eq!(parse_live_key(&b).ok(), Some((10, "a")));
        assert!(parse_live_key(&[1, 2]).is_err());
    }

    #[test]
    fn subject_keys_put_newest_first_and_share_the_prefix() {
        let mut job = crate::store::JobRecord::queued(
            "an_x".into(),
            crate::store::JobKind::Analysis { wallet: "W".into() },
            "acc".into(),
            "k".into(),
            100,
            false,
            true,
            0,
            "1".into(),
        );
        let old = subject_key(&job);
        job.created_at_ms = 200;
        let new = subject_key(&job);
        let prefix = subject_prefix("acc", Subject::Wallet("W"));
        assert!(new < old);
        assert!(old.starts_with(&prefix) && new.starts_with(&prefix));
        assert_eq!(subject_key_id(&new, prefix.len()).ok(), Some("an_x"));
        // A pair subject with the same text is a different group.
        assert!(!old.starts_with(&subject_prefix("acc", Subject::Pair("W"))));
        // An account that is a prefix of another does not share groups with it.
        assert!(!old.starts_with(&subject_prefix("ac", Subject::Wallet("W"))));
    }

    #[test]
    fn account_answers_sort_oldest_first_within_their_account() {
        let (old, new) = (account_answer_key("acc", 5, &[9; 32]), account_answer_key("acc", 6, &[1; 32]));
        let prefix = account_answers_prefix("acc");
        assert!(old < new && old.starts_with(&prefix) && new.starts_with(&prefix));
        assert!(!old.starts_with(&account_answers_prefix("ac")), "an account prefix of another is its own group");
        assert_eq!(parse_account_answer_tail(&new[prefix.len()..]).ok(), Some((6, [1; 32])));
        assert!(parse_account_answer_tail(&new[prefix.len() + 1..]).is_err());
        let tally = AnswerTally { count: 3, oldest_ms: 7 };
        assert_eq!(AnswerTally::decode(&tally.encode()).ok(), Some(tally));
        assert!(AnswerTally::decode(&[0; 8]).is_err());
    }

    #[test]
    fn prefix_end_and_successor() {
        assert_eq!(prefix_end(&[1, 2]), Some(vec![1, 3]));
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
        assert!(successor(b"ab").as_slice() > b"ab".as_slice());
        assert!(successor(b"ab").as_slice() < b"ab\x00\x00".as_slice());
    }

    #[test]
    fn values_carry_the_format_byte() {
        let v = encode_json(&vec![1u32, 2]).unwrap_or_default();
        assert_eq!(v[0], FORMAT_V1);
        assert_eq!(decode_json::<Vec<u32>>(&v).ok(), Some(vec![1, 2]));
        assert!(matches!(decode_json::<Vec<u32>>(&[9, b'[', b']']), Err(StoreError::Encoding(_))));
        assert!(strip_format(&[]).is_err());
        assert_eq!(strip_format(&encode_raw(b"{}")).ok(), Some(&b"{}"[..]));
    }
}
