//! Every account's feedback over the store's feature records: write (create or replace, with
//! eviction at the account's cap), admin pages oldest first, the account's own pages newest
//! first, and the retention purge.
//!
//! Owns: `Book` — the only writer of `Feedback` and `FeedbackByTime` records — and its counters
//! (`FeedbackMetrics`). Called from listener threads (`put`: inline over RocksDB; on a cluster
//! on the etcd runtime's blocking pool; `newest` likewise), the admin listener (`page`) and
//! `xray-housekeeping` (`purge_before`). Every call is a few blocking store calls.
//!
//! Invariant: each write is one `Store::write_docs` batch guarded by compare-and-set: a create
//! expects the record absent and the tally at the revision it read (so creates of one account
//! serialize, and the tally is exact); a replace expects the record's revision; an eviction or
//! purge expects each deleted record's revision and the tally's. A lost race reads again, at
//! most `FEEDBACK_WRITE_ATTEMPTS_MAX` times, then `Busy` (503).
//! Invariant: the time index and the records change together; "oldest" is least recently
//! written (a replace moves the record to the newest end).
//! Deliberately absent: filters on the account's own pages (it holds at most
//! `FEEDBACK_PER_ACCOUNT_MAX` records and pages through them; the admin pages filter).

use std::sync::Arc;

use crate::config::{
    FEEDBACK_PAGE_SCAN_MAX, FEEDBACK_PER_ACCOUNT_MAX, FEEDBACK_PURGE_BATCH_LEN, FEEDBACK_WRITE_ATTEMPTS_MAX,
    STORE_PAGE_LEN_MAX,
};
use crate::store::{Doc, DocKind, DocWrite, Expect, Store, StoreError, StoreResult};

use super::metrics::{FeedbackMetrics, KIND_NONE};
use super::record::{
    account_prefix, prefix_of, record_key_of_time_key, tally_of, tally_value, time_of, FeedbackRecord, FeedbackVerdict,
};

/// Why a write was refused.
#[derive(Debug)]
pub enum BookError {
    /// Lost every compare-and-set race: try again.
    Busy,
    Store(StoreError),
}

impl From<StoreError> for BookError {
    fn from(e: StoreError) -> Self {
        BookError::Store(e)
    }
}

/// What a write did.
#[derive(Debug, Clone)]
pub struct Written {
    /// The record as stored (a replace keeps the first `createdAt`).
    pub record: FeedbackRecord,
    /// A new record (else a replace).
    pub created: bool,
    /// The verdict a replace replaced.
    pub previous_verdict: Option<String>,
    /// Records of the account evicted to make room.
    pub evicted: usize,
}

/// Which records a page lists.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub verdict: Option<FeedbackVerdict>,
    /// A signal kind, or `none` for records that name no signal.
    pub kind: Option<String>,
}

impl Filter {
    fn admits(&self, record: &FeedbackRecord) -> bool {
        let verdict = self.verdict.is_none_or(|v| v.as_str() == record.verdict);
        let kind = self.kind.as_deref().is_none_or(|k| record.signal_kind.as_deref().unwrap_or(KIND_NONE) == k);
        verdict && kind
    }
}

/// One admin page: records oldest (least recently written) first, and where the next starts.
#[derive(Debug, Clone)]
pub struct FeedbackPage {
    pub records: Vec<FeedbackRecord>,
    /// The time index key (after the account prefix) to pass as the next page's `after`;
    /// `None` when the account has no more.
    pub next_after: Option<Vec<u8>>,
}

/// The feedback of every account over one store.
pub struct Book {
    store: Arc<dyn Store>,
    per_account_max: usize,
    pub metrics: FeedbackMetrics,
}

fn encode(record: &FeedbackRecord) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(record).map_err(|e| StoreError::Encoding(e.to_string()))
}

fn decode(value: &[u8]) -> Result<FeedbackRecord, StoreError> {
    serde_json::from_slice(value).map_err(|e| StoreError::Encoding(e.to_string()))
}

impl Book {
    /// A book whose accounts hold at most `FEEDBACK_PER_ACCOUNT_MAX` records.
    pub fn new(store: Arc<dyn Store>) -> Book {
        Book::with_cap(store, FEEDBACK_PER_ACCOUNT_MAX)
    }

    /// A book whose accounts hold at most `per_account_max` records (≥ 1).
    pub fn with_cap(store: Arc<dyn Store>, per_account_max: usize) -> Book {
        Book { store, per_account_max: per_account_max.max(1), metrics: FeedbackMetrics::default() }
    }

    /// Writes `fresh` (its id, account, analysis and signal decide which record): a new record,
    /// evicting the account's least recently written ones past the cap, or a replace of the
    /// verdict, note and key of the one there. Counts the verdict when it is new to the record.
    pub fn put(&self, fresh: &FeedbackRecord) -> Result<Written, BookError> {
        for _ in 0..FEEDBACK_WRITE_ATTEMPTS_MAX {
            let attempt = match self.store.get_doc(DocKind::Feedback, &fresh.key())? {
                Some(doc) => self.replace(fresh, &doc),
                None => self.create(fresh),
            };
            match attempt {
                Ok(written) => {
                    self.count(&written, fresh);
                    return Ok(written);
                }
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(BookError::Busy)
    }

    fn count(&self, written: &Written, fresh: &FeedbackRecord) {
        if written.evicted > 0 {
            self.metrics.evicted(written.evicted as u64);
        }
        let changed = written.previous_verdict.as_deref().is_none_or(|was| was != fresh.verdict);
        match (fresh.verdict(), changed, &fresh.scan) {
            (Some(verdict), true, Some(scan)) => self.metrics.scan_given(&scan.verdict, verdict),
            (Some(verdict), true, None) => self.metrics.given(fresh.signal_kind.as_deref(), verdict),
            _ => {}
        }
    }

    /// A replace: `fresh` with the first `createdAt`.
    fn replace(&self, fresh: &FeedbackRecord, doc: &Doc) -> StoreResult<Written> {
        let old = decode(&doc.value)?;
        let record = FeedbackRecord { created_at_ms: old.created_at_ms, ..fresh.clone() };
        let value = encode(&record)?;
        let mut writes =
            vec![DocWrite::put(DocKind::Feedback, record.key(), value.clone(), Expect::Revision(doc.revision))];
        // One write per key in a batch (etcd refuses a key twice in a transaction).
        if old.time_key() != record.time_key() {
            writes.push(DocWrite::delete(DocKind::FeedbackByTime, old.time_key(), Expect::Any));
        }
        writes.push(DocWrite::put(DocKind::FeedbackByTime, record.time_key(), value, Expect::Any));
        self.store.write_docs(&writes)?;
        Ok(Written { record, created: false, previous_verdict: Some(old.verdict), evicted: 0 })
    }

    fn create(&self, record: &FeedbackRecord) -> StoreResult<Written> {
        let prefix = account_prefix(&record.account);
        let tally = self.store.get_doc(DocKind::Feedback, &prefix)?;
        let count = tally.as_ref().map_or(0, |doc| tally_of(&doc.value));
        let excess = (count + 1).saturating_sub(self.per_account_max as u64) as usize;
        let value = encode(record)?;
        let mut writes = vec![
            DocWrite::put(DocKind::Feedback, record.key(), value.clone(), Expect::Absent),
            DocWrite::put(DocKind::FeedbackByTime, record.time_key(), value, Expect::Any),
        ];
        let evicted = self.oldest_out(&prefix, excess.min(FEEDBACK_PURGE_BATCH_LEN), u64::MAX, &mut writes)?;
        let expect = tally.as_ref().map_or(Expect::Absent, |doc| Expect::Revision(doc.revision));
        let left = (count + 1).saturating_sub(evicted as u64);
        writes.push(DocWrite::put(DocKind::Feedback, prefix, tally_value(left), expect));
        self.store.write_docs(&writes)?;
        Ok(Written { record: record.clone(), created: true, previous_verdict: None, evicted })
    }

    /// Adds to `writes` the deletion of the account's `n` least recently written records
    /// written before `before_ms` (each expected at the revision read), and of their index
    /// entries; returns how many records it deletes.
    fn oldest_out(&self, prefix: &[u8], n: usize, before_ms: u64, writes: &mut Vec<DocWrite>) -> StoreResult<usize> {
        oldest_out(&*self.store, prefix, n, before_ms, writes)
    }

    /// A page of `account`'s records matching `filter`, least recently written first, after
    /// the time index key `after` (as a page's `next_after` gave it), at most `limit`; a page
    /// reads at most `FEEDBACK_PAGE_SCAN_MAX` records, so a filter that matches few ends early
    /// with `next_after` set.
    pub fn page(
        &self,
        account: &str,
        after: Option<&[u8]>,
        limit: usize,
        filter: &Filter,
    ) -> StoreResult<FeedbackPage> {
        let prefix = account_prefix(account);
        let mut cursor: Option<Vec<u8>> = after.map(|suffix| [&prefix[..], suffix].concat());
        let (mut records, mut scanned) = (Vec::new(), 0);
        let limit = limit.max(1);
        loop {
            let want = (FEEDBACK_PAGE_SCAN_MAX - scanned).min(STORE_PAGE_LEN_MAX).min(limit.max(64));
            let docs = self.store.scan_docs(DocKind::FeedbackByTime, &prefix, cursor.as_deref(), want)?;
            let ended = docs.len() < want;
            for doc in docs {
                scanned += 1;
                match decode(&doc.value) {
                    Ok(record) if filter.admits(&record) => records.push(record),
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "a feedback record does not read; skipped"),
                }
                cursor = Some(doc.key);
                if records.len() == limit || scanned >= FEEDBACK_PAGE_SCAN_MAX {
                    let next_after = cursor.map(|key| key[prefix.len()..].to_vec());
                    return Ok(FeedbackPage { records, next_after });
                }
            }
            if ended {
                return Ok(FeedbackPage { records, next_after: None });
            }
        }
    }

    /// A page of `account`'s records, most recently written first, before the time index key
    /// `before` (as a page's `next_after` gave it), at most `limit` (≤ `STORE_PAGE_LEN_MAX`):
    /// the account's own listing. `next_after` is set only when more records follow.
    pub fn newest(&self, account: &str, before: Option<&[u8]>, limit: usize) -> StoreResult<FeedbackPage> {
        let prefix = account_prefix(account);
        let before = before.map(|suffix| [&prefix[..], suffix].concat());
        let limit = limit.clamp(1, STORE_PAGE_LEN_MAX - 1);
        // One more than the page, to know whether another follows.
        let mut docs = self.store.scan_docs_rev(DocKind::FeedbackByTime, &prefix, before.as_deref(), limit + 1)?;
        let more = docs.len() > limit;
        docs.truncate(limit);
        let next_after = docs.last().filter(|_| more).map(|doc| doc.key[prefix.len()..].to_vec());
        let records = docs
            .iter()
            .filter_map(|doc| match decode(&doc.value) {
                Ok(record) => Some(record),
                Err(e) => {
                    tracing::error!(error = %e, "a feedback record does not read; skipped");
                    None
                }
            })
            .collect();
        Ok(FeedbackPage { records, next_after })
    }

    /// How many records `account` holds (its tally).
    pub fn held(&self, account: &str) -> StoreResult<u64> {
        let tally = self.store.get_doc(DocKind::Feedback, &account_prefix(account))?;
        Ok(tally.map_or(0, |doc| tally_of(&doc.value)))
    }
}

fn oldest_out(
    store: &dyn Store,
    prefix: &[u8],
    n: usize,
    before_ms: u64,
    writes: &mut Vec<DocWrite>,
) -> StoreResult<usize> {
    if n == 0 {
        return Ok(0);
    }
    let mut deleted = 0;
    for entry in store.scan_docs(DocKind::FeedbackByTime, prefix, None, n)? {
        if time_of(&entry.key, prefix.len()).is_none_or(|t| t >= before_ms) {
            break;
        }
        let Some(key) = record_key_of_time_key(&entry.key, prefix.len()) else { continue };
        if let Some(doc) = store.get_doc(DocKind::Feedback, &key)? {
            // The record this entry indexes, unless a replace moved it meanwhile (then the
            // revision check fails the batch, and the caller reads again).
            writes.push(DocWrite::delete(DocKind::Feedback, key, Expect::Revision(doc.revision)));
            deleted += 1;
        }
        writes.push(DocWrite::delete(DocKind::FeedbackByTime, entry.key, Expect::Any));
    }
    Ok(deleted)
}

/// Deletes every record last written before `cutoff_ms`, account by account (a skip scan of
/// the time index: one read finds the next account), in batches of `FEEDBACK_PURGE_BATCH_LEN`
/// with the account's tally. Returns how many it deleted. Called hourly by housekeeping.
pub fn purge_before(store: &dyn Store, cutoff_ms: u64) -> StoreResult<usize> {
    let mut purged = 0;
    let mut after: Option<Vec<u8>> = None;
    while let Some(first) = store.scan_docs(DocKind::FeedbackByTime, &[], after.as_deref(), 1)?.pop() {
        let Some(prefix) = prefix_of(&first.key).map(<[u8]>::to_vec) else { break };
        purged += purge_account(store, &prefix, cutoff_ms)?;
        // Past every key of this account: its time keys start with a time below 2^56 ms.
        after = Some([&prefix[..], &[0xFF; 9]].concat());
    }
    Ok(purged)
}

fn purge_account(store: &dyn Store, prefix: &[u8], cutoff_ms: u64) -> StoreResult<usize> {
    let (mut purged, mut conflicts) = (0, 0);
    loop {
        let tally = store.get_doc(DocKind::Feedback, prefix)?;
        let mut writes = Vec::new();
        let deleted = oldest_out(store, prefix, FEEDBACK_PURGE_BATCH_LEN, cutoff_ms, &mut writes)?;
        if writes.is_empty() {
            return Ok(purged);
        }
        if let Some(tally) = &tally {
            let left = tally_of(&tally.value).saturating_sub(deleted as u64);
            writes.push(DocWrite::put(
                DocKind::Feedback,
                prefix.to_vec(),
                tally_value(left),
                Expect::Revision(tally.revision),
            ));
        }
        match store.write_docs(&writes) {
            Ok(()) => purged += deleted,
            Err(StoreError::Conflict(_)) if conflicts < FEEDBACK_WRITE_ATTEMPTS_MAX => conflicts += 1,
            // Busy with writes: the next sweep takes it.
            Err(StoreError::Conflict(_)) => return Ok(purged),
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feedback::record::feedback_id;

    fn record(account: &str, analysis: &str, signal: Option<&str>, verdict: &str, at_ms: u64) -> FeedbackRecord {
        FeedbackRecord {
            id: feedback_id(account, analysis, signal),
            account: account.into(),
            key_id: "key_1".into(),
            analysis_id: Some(analysis.into()),
            signal_id: signal.map(str::to_owned),
            signal_kind: signal.map(|_| "open_token_delegation".into()),
            verdict: verdict.into(),
            note: None,
            created_at_ms: at_ms,
            updated_at_ms: at_ms,
            scan: None,
        }
    }

    fn scan_record(account: &str, request_id: &str, scan_verdict: &str, verdict: &str, at_ms: u64) -> FeedbackRecord {
        FeedbackRecord {
            id: crate::feedback::record::scan_feedback_id(account, request_id, &"00".repeat(32)),
            analysis_id: None,
            signal_id: None,
            signal_kind: None,
            scan: Some(crate::feedback::record::ScanFacts {
                request_id: request_id.into(),
                message_sha256: "00".repeat(32),
                verdict: scan_verdict.into(),
                finding_kinds: vec![],
                scanned_at: "2026-11-23T10:20:00.125Z".into(),
            }),
            ..record(account, "unused", None, verdict, at_ms)
        }
    }

    fn analyses(page: &FeedbackPage) -> Vec<&str> {
        page.records.iter().map(|r| r.analysis_id.as_deref().unwrap_or("scan")).collect()
    }

    #[test]
    fn the_accounts_own_pages_are_newest_first_and_its_own() {
        let (_dir, store) = rocks();
        let book = Book::new(store);
        for i in 0..5u64 {
            book.put(&record("acct_1", &format!("an_{i}"), None, "missed", 10 + i)).unwrap();
            book.put(&record("acct_2", &format!("an_{i}"), None, "missed", 10 + i)).unwrap();
        }
        book.put(&scan_record("acct_1", "req_1", "benign", "false_negative", 20)).unwrap();
        // A replace moves its record to the newest end.
        book.put(&record("acct_1", "an_1", None, "missed", 30)).unwrap();
        let first = book.newest("acct_1", None, 3).unwrap();
        assert_eq!(analyses(&first), ["an_1", "scan", "an_4"]);
        let after = first.next_after.clone().expect("more");
        let second = book.newest("acct_1", Some(&after), 3).unwrap();
        assert_eq!(analyses(&second), ["an_3", "an_2", "an_0"]);
        assert_eq!(second.next_after, None, "exactly the rest: no empty page after it");
        assert!(book.newest("acct_3", None, 3).unwrap().records.is_empty());
        assert_eq!(book.newest("acct_2", None, 100).unwrap().records.len(), 5);
        // A scan's verdicts count apart, once per change.
        assert_eq!(book.metrics.scan_count("benign", FeedbackVerdict::FalseNegative), 1);
        book.put(&scan_record("acct_1", "req_1", "benign", "false_negative", 40)).unwrap();
        assert_eq!(book.metrics.scan_count("benign", FeedbackVerdict::FalseNegative), 1, "a same repeat");
        assert_eq!(book.held("acct_1").unwrap(), 6);
    }

    fn rocks() -> (tempfile::TempDir, Arc<dyn Store>) {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::RocksStore::open(dir.path(), &crate::store::StoreOptions::default()).unwrap();
        (dir, Arc::new(store))
    }

    #[test]
    fn a_repeat_replaces_and_counts_a_changed_verdict_once() {
        let (_dir, store) = rocks();
        let book = Book::new(store);
        let first = book.put(&record("acct_1", "an_1", Some("sig_1"), "false_positive", 10)).unwrap();
        assert!(first.created);
        let again = book.put(&record("acct_1", "an_1", Some("sig_1"), "false_positive", 11)).unwrap();
        assert!(!again.created);
        let changed = book.put(&record("acct_1", "an_1", Some("sig_1"), "confirmed", 12)).unwrap();
        assert_eq!(changed.previous_verdict.as_deref(), Some("false_positive"));
        assert_eq!((changed.record.verdict.as_str(), changed.record.created_at_ms), ("confirmed", 10));
        let kind = Some("open_token_delegation");
        assert_eq!(book.metrics.count(kind, FeedbackVerdict::FalsePositive), 1);
        assert_eq!(book.metrics.count(kind, FeedbackVerdict::Confirmed), 1);
        assert_eq!(book.held("acct_1").unwrap(), 1);
        let page = book.page("acct_1", None, 10, &Filter::default()).unwrap();
        assert_eq!(page.records.len(), 1, "the index moved with the record");
        assert_eq!((page.records[0].verdict.as_str(), page.records[0].created_at_ms), ("confirmed", 10));
        assert_eq!(page.records[0].updated_at_ms, 12);
    }

    #[test]
    fn the_cap_evicts_the_least_recently_written_and_the_tally_stays_exact() {
        let (_dir, store) = rocks();
        let book = Book::with_cap(store, 3);
        for i in 0..3 {
            book.put(&record("acct_1", &format!("an_{i}"), None, "missed", 100 + i)).unwrap();
        }
        book.put(&record("acct_2", "an_x", None, "missed", 1)).unwrap();
        // Touching an_0 makes an_1 the least recently written.
        book.put(&record("acct_1", "an_0", None, "missed", 200)).unwrap();
        let written = book.put(&record("acct_1", "an_3", None, "missed", 201)).unwrap();
        assert_eq!(written.evicted, 1);
        let page = book.page("acct_1", None, 10, &Filter::default()).unwrap();
        let ids = analyses(&page);
        assert_eq!(ids, ["an_2", "an_0", "an_3"]);
        assert_eq!(book.held("acct_1").unwrap(), 3);
        assert_eq!(book.held("acct_2").unwrap(), 1, "another account is untouched");
        assert_eq!(book.page("acct_2", None, 10, &Filter::default()).unwrap().records.len(), 1);
    }

    #[test]
    fn pages_follow_their_cursor_and_filters() {
        let (_dir, store) = rocks();
        let book = Book::new(store);
        for i in 0..5u64 {
            let verdict = if i % 2 == 0 { "false_positive" } else { "confirmed" };
            book.put(&record("acct_1", &format!("an_{i}"), Some("sig_1"), verdict, 10 + i)).unwrap();
        }
        book.put(&record("acct_1", "an_9", None, "missed", 50)).unwrap();
        let first = book.page("acct_1", None, 4, &Filter::default()).unwrap();
        assert_eq!(first.records.len(), 4);
        let after = first.next_after.clone().expect("more");
        let second = book.page("acct_1", Some(&after), 4, &Filter::default()).unwrap();
        assert_eq!(second.records.len(), 2);
        assert_eq!(second.next_after, None);
        let fp = Filter { verdict: Some(FeedbackVerdict::FalsePositive), kind: None };
        assert_eq!(book.page("acct_1", None, 100, &fp).unwrap().records.len(), 3);
        let none = Filter { verdict: None, kind: Some("none".into()) };
        assert_eq!(book.page("acct_1", None, 100, &none).unwrap().records[0].analysis_id.as_deref(), Some("an_9"));
        assert!(book.page("acct_2", None, 100, &Filter::default()).unwrap().records.is_empty());
    }

    #[test]
    fn the_purge_removes_what_was_not_written_within_the_retention() {
        let (_dir, store) = rocks();
        let book = Book::new(store.clone());
        for i in 0..(FEEDBACK_PURGE_BATCH_LEN as u64 + 5) {
            book.put(&record("acct_1", &format!("an_{i}"), None, "missed", 1_000 + i)).unwrap();
        }
        book.put(&record("acct_1", "an_new", None, "missed", 9_000)).unwrap();
        book.put(&record("acct_2", "an_old", None, "missed", 1_500)).unwrap();
        book.put(&record("acct_3", "an_new", None, "missed", 9_500)).unwrap();
        let purged = purge_before(&*store, 5_000).unwrap();
        assert_eq!(purged, FEEDBACK_PURGE_BATCH_LEN + 5 + 1);
        assert_eq!(book.held("acct_1").unwrap(), 1);
        assert_eq!(book.held("acct_2").unwrap(), 0);
        assert_eq!(book.held("acct_3").unwrap(), 1);
        let left = book.page("acct_1", None, 100, &Filter::default()).unwrap().records;
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].analysis_id.as_deref(), Some("an_new"));
        assert_eq!(purge_before(&*store, 5_000).unwrap(), 0);
    }
}
