//! Small records of the features built over jobs — monitors, their watch cursors and their
//! event index — kept by kind and key, with a revision for compare-and-set. The features own
//! their key and value layouts (`monitors::layout`); the store only keeps bytes, atomically.
//!
//! Owns: `DocKind`, `Doc`, `DocWrite`, `Expect`, the event index key (written by the store
//! itself in a completion's batch) and the checks every write passes. Called from listener
//! threads (the monitors API), the monitor scheduler and compute threads (completions).
//!
//! Invariant: a batch of writes is all or nothing, and each write's `Expect` is checked against
//! the record as it is when the batch commits (RocksDB: under one lock; etcd: one transaction
//! comparing mod revisions), so two writers of one record never both win.
//! Invariant: bounded — keys ≤ `DOC_KEY_BYTES_MAX`, values ≤ `DOC_VALUE_BYTES_MAX`, a batch ≤
//! `DOC_BATCH_LEN_MAX` writes, a scan ≤ `STORE_PAGE_LEN_MAX` records.
//! Deliberately absent: secondary indexes kept by the store (a feature writes its own index
//! records in the same batch) and any meaning of the bytes.

use super::{StoreError, StoreResult, STORE_PAGE_LEN_MAX};
use crate::config::{DOC_BATCH_LEN_MAX, DOC_KEY_BYTES_MAX, DOC_VALUE_BYTES_MAX};

/// What a record is; its byte leads the record's key in the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    /// A monitor, by id.
    Monitor,
    /// A monitor of an account: lp(account) ‖ monitor id, empty.
    MonitorOfAccount,
    /// Where a monitor's check of one wallet stands: lp(monitor id) ‖ wallet.
    Watch,
    /// An event of a monitor, written by the completion that caused it: `event_key`, empty.
    Event,
    /// An account's policy (issue #31), by account: `policy::PolicyRecord` as JSON.
    Policy,
    /// Feedback on an analysis (`feedback::record`): lp(account) ‖ lp(analysis id) ‖ signal
    /// id; and lp(account) alone: the account's tally of records.
    Feedback,
    /// Feedback of an account by the time it was last written (`feedback::record`):
    /// lp(account) ‖ updated_at_ms BE ‖ lp(analysis id) ‖ signal id, the record's copy.
    FeedbackByTime,
    /// The report-signing keys a cluster shares (`signing`): one record, key `signing-keys`.
    SigningKeys,
    /// Moved by every policy write, in its batch (`policy`): one record, key `generation`,
    /// whose revision tells a cluster node whether to read the policies again.
    PolicyGeneration,
}

impl DocKind {
    pub(crate) fn byte(self) -> u8 {
        match self {
            DocKind::Monitor => 1,
            DocKind::MonitorOfAccount => 2,
            DocKind::Watch => 3,
            DocKind::Event => 4,
            DocKind::Policy => 5,
            DocKind::Feedback => 7,
            DocKind::FeedbackByTime => 8,
            DocKind::SigningKeys => 6,
            DocKind::PolicyGeneration => 9,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            DocKind::Monitor => "monitor",
            DocKind::MonitorOfAccount => "monitor_of_account",
            DocKind::Watch => "watch",
            DocKind::Event => "event",
            DocKind::Policy => "policy",
            DocKind::Feedback => "feedback",
            DocKind::FeedbackByTime => "feedback_by_time",
            DocKind::SigningKeys => "signing_keys",
            DocKind::PolicyGeneration => "policy_generation",
        }
    }
}

/// One record as read: its key (without the kind), value and revision (changes on every
/// write; 0 is never a revision). `Debug` shows the value's length, never its bytes: some
/// records hold secrets (the signing keys).
#[derive(Clone, PartialEq, Eq)]
pub struct Doc {
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub revision: u64,
}

/// What a write expects of the record it replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Whatever is there (or nothing).
    Any,
    /// Nothing: the write creates the record.
    Absent,
    /// The record at this revision.
    Revision(u64),
}

/// One write of a batch: `value` `None` deletes. `Debug` shows the value's length only (`Doc`).
#[derive(Clone, PartialEq, Eq)]
pub struct DocWrite {
    pub kind: DocKind,
    pub key: Vec<u8>,
    pub value: Option<Vec<u8>>,
    pub expect: Expect,
}

/// A record's value in `Debug` output: its length.
struct Redacted(usize);

impl std::fmt::Debug for Redacted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.0)
    }
}

impl std::fmt::Debug for Doc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Doc")
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("value", &Redacted(self.value.len()))
            .field("revision", &self.revision)
            .finish()
    }
}

impl std::fmt::Debug for DocWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DocWrite")
            .field("kind", &self.kind)
            .field("key", &String::from_utf8_lossy(&self.key))
            .field("value", &self.value.as_ref().map(|v| Redacted(v.len())))
            .field("expect", &self.expect)
            .finish()
    }
}

impl DocWrite {
    pub fn put(kind: DocKind, key: Vec<u8>, value: Vec<u8>, expect: Expect) -> DocWrite {
        DocWrite { kind, key, value: Some(value), expect }
    }

    pub fn delete(kind: DocKind, key: Vec<u8>, expect: Expect) -> DocWrite {
        DocWrite { kind, key, value: None, expect }
    }
}

/// Checks a batch before any of it is written.
pub(crate) fn validate(writes: &[DocWrite]) -> StoreResult<()> {
    if writes.len() > DOC_BATCH_LEN_MAX {
        return Err(StoreError::Invalid(format!("more than {DOC_BATCH_LEN_MAX} writes in one batch")));
    }
    for write in writes {
        check_key(&write.key)?;
        if write.value.as_ref().is_some_and(|v| v.len() > DOC_VALUE_BYTES_MAX) {
            return Err(StoreError::Invalid(format!(
                "a {} record over {DOC_VALUE_BYTES_MAX} bytes",
                write.kind.name()
            )));
        }
    }
    Ok(())
}

pub(crate) fn check_key(key: &[u8]) -> StoreResult<()> {
    if key.is_empty() || key.len() > DOC_KEY_BYTES_MAX {
        return Err(StoreError::Invalid(format!("a record key of {} bytes (1..={DOC_KEY_BYTES_MAX})", key.len())));
    }
    Ok(())
}

/// A scan's page length, at most `STORE_PAGE_LEN_MAX`.
pub(crate) fn page_len(limit: usize) -> usize {
    limit.min(STORE_PAGE_LEN_MAX)
}

/// Whether a record at `revision` (`None`: absent) meets `expect`.
pub(crate) fn meets(expect: Expect, revision: Option<u64>) -> bool {
    match expect {
        Expect::Any => true,
        Expect::Absent => revision.is_none(),
        Expect::Revision(r) => revision == Some(r),
    }
}

/// The conflict a batch whose expectation failed ends with.
pub(crate) fn conflict(write: &DocWrite) -> StoreError {
    StoreError::Conflict(format!("the {} record changed meanwhile", write.kind.name()))
}

/// A length-prefixed text, as the keys of the features' records use it (≤ 255 bytes).
pub fn push_lp(out: &mut Vec<u8>, text: &str) {
    let len = text.len().min(u8::MAX as usize);
    out.push(len as u8);
    out.extend_from_slice(&text.as_bytes()[..len]);
}

/// The prefix of a monitor's event index: lp(monitor id).
pub fn events_prefix(monitor_id: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + monitor_id.len());
    push_lp(&mut key, monitor_id);
    key
}

/// The event index key of an event: lp(monitor id) ‖ created_at_ms BE ‖ job id — a monitor's
/// events oldest first.
pub fn event_key(monitor_id: &str, created_at_ms: u64, job_id: &str) -> Vec<u8> {
    let mut key = events_prefix(monitor_id);
    key.extend_from_slice(&created_at_ms.to_be_bytes());
    key.extend_from_slice(job_id.as_bytes());
    key
}

/// The job id at the end of an event index key under `prefix`.
pub fn event_job_id(key: &[u8], prefix_len: usize) -> Option<&str> {
    std::str::from_utf8(key.get(prefix_len + 8..)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_keys_order_by_time_within_a_monitor() {
        let a = event_key("mon_1", 5, "an_b");
        let b = event_key("mon_1", 6, "an_a");
        assert!(a < b);
        assert!(a.starts_with(&events_prefix("mon_1")) && !a.starts_with(&events_prefix("mon_12")));
        assert_eq!(event_job_id(&b, events_prefix("mon_1").len()), Some("an_a"));
    }

    #[test]
    fn debug_output_shows_a_records_length_not_its_bytes() {
        let secret = b"{\"privateKey\":\"s3cr3t\"}".to_vec();
        let write = DocWrite::put(DocKind::SigningKeys, b"signing-keys".to_vec(), secret.clone(), Expect::Absent);
        let doc = Doc { key: b"signing-keys".to_vec(), value: secret.clone(), revision: 7 };
        for text in [format!("{write:?}"), format!("{doc:?}"), format!("{:?}", std::slice::from_ref(&write))] {
            assert!(!text.contains("s3cr3t") && text.contains(&format!("<{} bytes>", secret.len())), "{text}");
            assert!(text.contains("signing-keys"), "{text}");
        }
    }

    #[test]
    fn expectations() {
        assert!(meets(Expect::Any, None) && meets(Expect::Any, Some(3)));
        assert!(meets(Expect::Absent, None) && !meets(Expect::Absent, Some(1)));
        assert!(meets(Expect::Revision(2), Some(2)) && !meets(Expect::Revision(2), Some(3)));
        assert!(!meets(Expect::Revision(2), None));
    }

    #[test]
    fn refuses_oversized_batches_keys_and_values() {
        let ok = DocWrite::put(DocKind::Monitor, b"k".to_vec(), vec![0; 10], Expect::Any);
        assert!(validate(std::slice::from_ref(&ok)).is_ok());
        assert!(validate(&vec![ok.clone(); DOC_BATCH_LEN_MAX + 1]).is_err());
        assert!(validate(&[DocWrite { key: vec![], ..ok.clone() }]).is_err());
        assert!(validate(&[DocWrite { value: Some(vec![0; DOC_VALUE_BYTES_MAX + 1]), ..ok }]).is_err());
    }
}
