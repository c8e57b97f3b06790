//! Per-key, per-period usage counters and the RocksDB merge operator that updates them.
//!
//! Owns: the delta a job transition applies to it, the fixed 49-byte encoding
//! (`USAGE_FORMAT_V2` ‖ used, reserved, refunded, wallet_analysis, comparison, transaction_scan
//! as i64 LE) shared by stored values and merge operands — the 41-byte `FORMAT_V1` encoding of
//! schema 1 (the same counters without transaction_scan) is still read — and the associative
//! merge (counter-wise sum). Called by
//! `rocks` on caller threads (building operands, decoding reads) and by RocksDB's own threads
//! (merging during reads, flushes and compactions).
//!
//! Invariant: a delta and a stored record have the same encoding, so the merge is associative
//! (RocksDB may pre-merge operands in any grouping) and the order of concurrent deltas does not
//! change the totals.
//! Invariant: the merge never fails. An operand or base value of the wrong size or format byte
//! is skipped and logged: a failing merge inside a compaction would stop all writes, and such a
//! value can only come from a build with another schema, which `open` refuses.

use super::encoding::FORMAT_V1;
use super::record::{JobKind, JobRecord};
use super::{StoreError, StoreResult};
use crate::limits::quota::UsageRecord;

const COUNTERS: usize = 6;
const ENCODED_BYTES: usize = 1 + COUNTERS * 8;
/// Counters of schema 1's usage values (no `transaction_scan`).
const COUNTERS_V1: usize = 5;
/// The format byte of a six-counter usage value (schema 2).
pub(crate) const USAGE_FORMAT_V2: u8 = 2;

/// Name RocksDB records for the merge operator (part of the on-disk format).
pub(crate) const MERGE_OPERATOR_NAME: &str = "xray.usage.add.v1";

/// Counter deltas of one job transition (the same shape as the record).
pub(crate) type UsageDelta = UsageRecord;

/// The fixed encoding of a record or a delta.
pub(crate) fn encode(record: &UsageRecord) -> [u8; ENCODED_BYTES] {
    let mut out = [0u8; ENCODED_BYTES];
    out[0] = USAGE_FORMAT_V2;
    for (chunk, value) in out[1..].chunks_exact_mut(8).zip(counters(record)) {
        chunk.copy_from_slice(&value.to_le_bytes());
    }
    out
}

/// Reads what `encode` wrote, or schema 1's five counters; any other size or format byte is an
/// error.
pub(crate) fn decode(value: &[u8]) -> StoreResult<UsageRecord> {
    let body = match value.split_first() {
        Some((&USAGE_FORMAT_V2, body)) if body.len() == COUNTERS * 8 => body,
        Some((&FORMAT_V1, body)) if body.len() == COUNTERS_V1 * 8 => body,
        _ => return Err(StoreError::Encoding(format!("usage value of {} bytes", value.len()))),
    };
    let mut c = [0i64; COUNTERS];
    for (slot, chunk) in c.iter_mut().zip(body.chunks_exact(8)) {
        let mut b = [0u8; 8];
        b.copy_from_slice(chunk);
        *slot = i64::from_le_bytes(b);
    }
    Ok(from_counters(c))
}

fn counters(r: &UsageRecord) -> [i64; COUNTERS] {
    [r.used, r.reserved, r.refunded, r.wallet_analysis, r.comparison, r.transaction_scan]
}

/// A schema-1 body leaves the last counter at zero.
fn from_counters(c: [i64; COUNTERS]) -> UsageRecord {
    let [used, reserved, refunded, wallet_analysis, comparison, transaction_scan] = c;
    UsageRecord { used, reserved, refunded, wallet_analysis, comparison, transaction_scan }
}

/// Admission of a charged job: one unit reserved.
pub(crate) fn reserve() -> UsageDelta {
    UsageDelta { reserved: 1, ..UsageDelta::default() }
}

/// Cancelled admission: the reservation released, nothing else.
pub(crate) fn release() -> UsageDelta {
    UsageDelta { reserved: -1, ..UsageDelta::default() }
}

/// `READY`: the reservation becomes a charge, counted under its operation.
pub(crate) fn commit(job: &JobRecord) -> UsageDelta {
    let mut delta = release();
    delta.add(&charge(job));
    delta
}

/// A charge without a reservation of this key's: the outcome of a unit reserved on the key this
/// one replaced (`commit` is `release` + `charge`).
pub(crate) fn charge(job: &JobRecord) -> UsageDelta {
    let (wallet_analysis, comparison) = match job.kind {
        JobKind::Analysis { .. } => (1, 0),
        JobKind::Comparison { .. } => (0, 1),
    };
    UsageDelta { used: 1, wallet_analysis, comparison, ..UsageDelta::default() }
}

/// `units` of a synchronous operation (a transaction scan; a sequence scan's one per
/// transaction), charged at once, never reserved.
pub(crate) fn charge_now_units(units: u32) -> UsageDelta {
    let units = i64::from(units);
    UsageDelta { used: units, transaction_scan: units, ..UsageDelta::default() }
}

/// A refund without a reservation of this key's (`refund` is `release` + `refunded`).
pub(crate) fn refunded() -> UsageDelta {
    UsageDelta { refunded: 1, ..UsageDelta::default() }
}

/// `FAILED`: the reservation becomes a refund.
pub(crate) fn refund() -> UsageDelta {
    let mut delta = release();
    delta.add(&refunded());
    delta
}

/// The associative merge: base (if any) plus every operand, counter by counter.
pub(crate) fn merge(key: &[u8], existing: Option<&[u8]>, operands: &rocksdb::MergeOperands) -> Option<Vec<u8>> {
    let mut total = UsageRecord::default();
    for value in existing.into_iter().chain(operands.iter()) {
        match decode(value) {
            Ok(delta) => total.add(&delta),
            Err(e) => tracing::error!(key_len = key.len(), error = %e, "usage merge skipped a malformed value"),
        }
    }
    Some(encode(&total).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_negative_counters() {
        let r = UsageRecord {
            used: 3,
            reserved: -1,
            refunded: i64::MAX,
            wallet_analysis: i64::MIN,
            comparison: 0,
            transaction_scan: 7,
        };
        let bytes = encode(&r);
        assert_eq!(bytes.len(), 49);
        assert_eq!(decode(&bytes).ok(), Some(r));
        assert!(decode(&bytes[..48]).is_err());
        let mut wrong = bytes;
        wrong[0] = FORMAT_V1;
        assert!(decode(&wrong).is_err(), "a v1 format byte on a v2 body");
    }

    #[test]
    fn schema_1_values_are_read_without_the_scan_counter() {
        let mut v1 = vec![FORMAT_V1];
        for counter in [4i64, 1, 2, 3, 1] {
            v1.extend(counter.to_le_bytes());
        }
        let read = decode(&v1).expect("a 41-byte v1 value");
        assert_eq!(
            read,
            UsageRecord { used: 4, reserved: 1, refunded: 2, wallet_analysis: 3, comparison: 1, transaction_scan: 0 }
        );
    }

    #[test]
    fn deltas_of_a_job_life_balance() {
        let mut r = UsageRecord::default();
        r.add(&reserve());
        r.add(&reserve());
        r.add(&refund());
        r.add(&release());
        assert_eq!(r, UsageRecord { refunded: 1, ..UsageRecord::default() });
    }
}
