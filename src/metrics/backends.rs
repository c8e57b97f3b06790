//! What the back ends behind a job cost: the ledger source's JSON-RPC calls (by method and
//! outcome, their duration with retries, the retries, the transactions read, the calls waiting
//! out a backoff now), the store's writes (duration by
//! operation, WAL fsyncs of the group commit), the ledger cache's hits, misses and bytes, and
//! webhook delivery attempts (by outcome).
//!
//! Owns: the process-wide registries `LEDGER` and `STORE`, their label enums and buckets, and
//! `write_backends`. Recorded by the rpc transport (compute threads), the RocksDB store (every
//! thread that writes) and the group commit's thread; rendered by the admin listener.
//!
//! Invariant: process-wide statics, because the rpc transport and the store are built below the
//! app (per compute thread, per `open`) and one process serves one API. In tests that start
//! several servers in one process the counts are their sum; tests compare before and after.
//! Invariant: as in the app registry, recording is a `Relaxed` `fetch_add` on a fixed slot; no
//! label value comes from outside (an unknown JSON-RPC method is `other`).
//! Deliberately absent: per-endpoint labels (an RPC URL may hold a secret) and read latencies
//! (reads are block-cache lookups; the request histograms already include them).

use std::fmt::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{family, histogram, Histogram, MS_PER_S_DIGITS, US_PER_S_DIGITS};

/// Upper bounds of a ledger call's duration (all its attempts and backoffs), in milliseconds.
pub const LEDGER_CALL_BUCKETS_MS: [u64; 14] =
    [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000, 120_000];
/// Upper bounds of one store write (a WriteBatch, fsync included when configured), in µs.
pub const STORE_WRITE_BUCKETS_US: [u64; 14] =
    [10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 1_000_000, 10_000_000];
const LEDGER_BUCKETS: usize = LEDGER_CALL_BUCKETS_MS.len() + 1;
const STORE_BUCKETS: usize = STORE_WRITE_BUCKETS_US.len() + 1;

label_enum! {
    /// The JSON-RPC method of a ledger call (`method` label).
    pub enum LedgerMethod {
        GetAccountInfo => "getAccountInfo",
        GetMultipleAccounts => "getMultipleAccounts",
        GetTokenAccountsByOwner => "getTokenAccountsByOwner",
        GetProgramAccounts => "getProgramAccounts",
        GetSignaturesForAddress => "getSignaturesForAddress",
        GetTransaction => "getTransaction",
        SimulateTransaction => "simulateTransaction",
        Other => "other",
    }
}

impl LedgerMethod {
    /// The label of a method name (anything unknown is `Other`).
    pub fn of(method: &str) -> LedgerMethod {
        LedgerMethod::from_label(method).unwrap_or(LedgerMethod::Other)
    }
}

label_enum! {
    /// How a ledger call ended (`outcome` label), after its retries.
    pub enum CallOutcome {
        Ok => "ok",
        Error => "error",
    }
}

label_enum! {
    /// The store operation a write belongs to (`operation` label).
    pub enum StoreWrite {
        Admit => "admit",
        Cancel => "cancel",
        Start => "start",
        Complete => "complete",
        Keys => "keys",
        Purge => "purge",
        Answer => "answer",
        Callback => "callback",
        /// Feature records: monitors and their cursors (`Store::write_docs`).
        Docs => "docs",
    }
}

/// The ledger source's calls.
pub struct LedgerMetrics {
    calls: [[AtomicU64; CallOutcome::COUNT]; LedgerMethod::COUNT],
    retries: [AtomicU64; LedgerMethod::COUNT],
    duration: [Histogram<LEDGER_BUCKETS>; LedgerMethod::COUNT],
    /// Transactions `getTransaction` answered (null answers not counted).
    transactions: AtomicU64,
    /// Calls sleeping out a retry's backoff now (a gauge: `RetryWait` holds one).
    waiting: AtomicU64,
}

/// The sums of the ledger series, for a one-shot command's progress line (in a process that
/// runs one command they are that command's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerTotals {
    /// Calls that ended, answered or failed after their retries.
    pub calls: u64,
    pub retries: u64,
    pub transactions: u64,
    pub waiting: u64,
}

/// One call waiting out a retry's backoff, counted in `LedgerMetrics::waiting` while it lives
/// (a job dropped mid-backoff drops it too).
pub struct RetryWait(());

impl Drop for RetryWait {
    fn drop(&mut self) {
        LEDGER.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The store's writes.
pub struct StoreMetrics {
    writes: [Histogram<STORE_BUCKETS>; StoreWrite::COUNT],
    wal_syncs: AtomicU64,
}

/// The ledger calls of this process.
pub static LEDGER: LedgerMetrics = LedgerMetrics {
    calls: [const { [const { AtomicU64::new(0) }; CallOutcome::COUNT] }; LedgerMethod::COUNT],
    retries: [const { AtomicU64::new(0) }; LedgerMethod::COUNT],
    duration: [const { Histogram::new() }; LedgerMethod::COUNT],
    transactions: AtomicU64::new(0),
    waiting: AtomicU64::new(0),
};

label_enum! {
    /// How a webhook delivery attempt ended (`outcome` label).
    pub enum WebhookOutcome {
        Delivered => "delivered",
        /// Failed; due again after its backoff.
        Retried => "retried",
        /// Failed for the last time, or could never be made.
        Failed => "failed",
        /// Given up without another attempt: its account's outbox was full
        /// (`WEBHOOK_OUTBOX_PER_ACCOUNT_MAX`).
        OutboxFull => "outbox_full",
    }
}

/// The webhook delivery attempts of this process (the `xray-webhooks` thread records them).
pub struct WebhookMetrics {
    attempts: [AtomicU64; WebhookOutcome::COUNT],
}

/// The webhook deliveries of this process.
pub static WEBHOOKS: WebhookMetrics = WebhookMetrics { attempts: [const { AtomicU64::new(0) }; WebhookOutcome::COUNT] };

impl WebhookMetrics {
    pub fn attempted(&self, outcome: WebhookOutcome) {
        self.attempts[outcome.slot()].fetch_add(1, Ordering::Relaxed);
    }

    /// `count` pending webhooks given up because their account's outbox was full.
    pub fn given_up(&self, count: usize) {
        self.attempts[WebhookOutcome::OutboxFull.slot()].fetch_add(count as u64, Ordering::Relaxed);
    }

    pub fn attempts(&self, outcome: WebhookOutcome) -> u64 {
        self.attempts[outcome.slot()].load(Ordering::Relaxed)
    }
}

label_enum! {
    /// What the ledger cache was asked for (`kind` label).
    pub enum CacheKind {
        /// A finalized transaction, by signature.
        Transaction => "transaction",
        /// An address's finalized signature list (a hit still asks the node for what is newer).
        History => "history",
    }
}

/// The ledger cache of this process (`ledger::cache`): lookups by kind and outcome, and its
/// size on disk as last read after a write.
pub struct LedgerCacheMetrics {
    hits: [AtomicU64; CacheKind::COUNT],
    misses: [AtomicU64; CacheKind::COUNT],
    bytes: AtomicU64,
}

/// The ledger cache of this process.
pub static LEDGER_CACHE: LedgerCacheMetrics = LedgerCacheMetrics {
    hits: [const { AtomicU64::new(0) }; CacheKind::COUNT],
    misses: [const { AtomicU64::new(0) }; CacheKind::COUNT],
    bytes: AtomicU64::new(0),
};

impl LedgerCacheMetrics {
    pub fn hit(&self, kind: CacheKind, count: u64) {
        self.hits[kind.slot()].fetch_add(count, Ordering::Relaxed);
    }

    pub fn miss(&self, kind: CacheKind, count: u64) {
        self.misses[kind.slot()].fetch_add(count, Ordering::Relaxed);
    }

    pub fn set_bytes(&self, bytes: u64) {
        self.bytes.store(bytes, Ordering::Relaxed);
    }

    pub fn hits(&self, kind: CacheKind) -> u64 {
        self.hits[kind.slot()].load(Ordering::Relaxed)
    }

    pub fn misses(&self, kind: CacheKind) -> u64 {
        self.misses[kind.slot()].load(Ordering::Relaxed)
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// The scan lane of this process (`scan::lane`): work dropped because its client hung up,
/// and scans refused for the lane's byte budget; and the batched signatures of scans
/// (`signing::batch`): how many, over how many scans (their ratio is the mean batch).
pub struct ScanMetrics {
    abandoned: AtomicU64,
    over_bytes: AtomicU64,
    signature_batches: AtomicU64,
    signature_batch_leaves: AtomicU64,
}

/// The scan lane of this process.
pub static SCAN: ScanMetrics = ScanMetrics {
    abandoned: AtomicU64::new(0),
    over_bytes: AtomicU64::new(0),
    signature_batches: AtomicU64::new(0),
    signature_batch_leaves: AtomicU64::new(0),
};

impl ScanMetrics {
    pub fn abandoned(&self) {
        self.abandoned.fetch_add(1, Ordering::Relaxed);
    }

    pub fn over_bytes(&self) {
        self.over_bytes.fetch_add(1, Ordering::Relaxed);
    }

    /// One Ed25519 signature made over a batch of `leaves` scans.
    pub fn signature_batch(&self, leaves: usize) {
        self.signature_batches.fetch_add(1, Ordering::Relaxed);
        self.signature_batch_leaves.fetch_add(leaves as u64, Ordering::Relaxed);
    }

    pub fn abandoned_total(&self) -> u64 {
        self.abandoned.load(Ordering::Relaxed)
    }

    pub fn over_bytes_total(&self) -> u64 {
        self.over_bytes.load(Ordering::Relaxed)
    }
}

label_enum! {
    /// How a monitor's check of one wallet ended (`outcome` label).
    pub enum CheckOutcome {
        /// Nothing new since the last check: one `getSignaturesForAddress`.
        Quiet => "quiet",
        /// New activity: a re-analysis admitted (or the first check's baseline).
        Active => "active",
        /// New activity, but admission refused (quota, full queue): checked again next interval.
        Refused => "refused",
        /// The ledger read or the store failed: checked again next interval.
        Failed => "failed",
        /// Another check (on this or another node) holds the wallet's claim: left to it.
        Claimed => "claimed",
        /// New activity, all of it dust: the cursor moved past it, nothing re-analyzed or charged.
        Dust => "dust",
        /// New activity, but the monitor's re-analyses for the day are spent: held (nothing
        /// charged, the cursor stays before it) until the budget resets.
        BudgetExhausted => "budget_exhausted",
    }
}

/// The monitor scheduler of this process (`monitors::scheduler`).
pub struct MonitorMetrics {
    checks: [AtomicU64; CheckOutcome::COUNT],
    watches: AtomicU64,
    watches_left_out: AtomicU64,
    lag_ms: AtomicU64,
}

/// The monitor checks of this process.
pub static MONITORS: MonitorMetrics = MonitorMetrics {
    checks: [const { AtomicU64::new(0) }; CheckOutcome::COUNT],
    watches: AtomicU64::new(0),
    watches_left_out: AtomicU64::new(0),
    lag_ms: AtomicU64::new(0),
};

impl MonitorMetrics {
    pub fn checked(&self, outcome: CheckOutcome) {
        self.checks[outcome.slot()].fetch_add(1, Ordering::Relaxed);
    }

    pub fn checks(&self, outcome: CheckOutcome) -> u64 {
        self.checks[outcome.slot()].load(Ordering::Relaxed)
    }

    /// The wallets this node watches now, and those past its bound it left out.
    pub fn set_watches(&self, watched: u64, left_out: u64) {
        self.watches.store(watched, Ordering::Relaxed);
        self.watches_left_out.store(left_out, Ordering::Relaxed);
    }

    /// How late the most overdue check is now.
    pub fn set_lag_ms(&self, lag_ms: u64) {
        self.lag_ms.store(lag_ms, Ordering::Relaxed);
    }

    pub fn lag_ms(&self) -> u64 {
        self.lag_ms.load(Ordering::Relaxed)
    }
}

/// The store writes of this process.
pub static STORE: StoreMetrics =
    StoreMetrics { writes: [const { Histogram::new() }; StoreWrite::COUNT], wal_syncs: AtomicU64::new(0) };

impl LedgerMetrics {
    /// One call of `method` ended (after its retries) with `outcome`, `elapsed_ms` after it began.
    pub fn observe_call(&self, method: LedgerMethod, outcome: CallOutcome, elapsed_ms: u64) {
        self.calls[method.slot()][outcome.slot()].fetch_add(1, Ordering::Relaxed);
        self.duration[method.slot()].observe(&LEDGER_CALL_BUCKETS_MS, elapsed_ms);
    }

    /// One more attempt of a call of `method`.
    pub fn retry(&self, method: LedgerMethod) {
        self.retries[method.slot()].fetch_add(1, Ordering::Relaxed);
    }

    /// `count` transactions read from `getTransaction` answers.
    pub fn transactions_read(&self, count: u64) {
        self.transactions.fetch_add(count, Ordering::Relaxed);
    }

    /// A call starts waiting out a retry's backoff; it is counted until the guard drops.
    pub fn retry_wait(&self) -> RetryWait {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        RetryWait(())
    }

    /// Every method's calls and retries summed, with the transactions read and the waits now.
    pub fn totals(&self) -> LedgerTotals {
        let sum = |each: &dyn Fn(LedgerMethod) -> u64| LedgerMethod::ALL.iter().map(|m| each(*m)).sum::<u64>();
        LedgerTotals {
            calls: sum(&|m| CallOutcome::ALL.iter().map(|o| self.calls(m, *o)).sum()),
            retries: sum(&|m| self.retries(m)),
            transactions: self.transactions.load(Ordering::Relaxed),
            waiting: self.waiting.load(Ordering::Relaxed),
        }
    }

    pub fn calls(&self, method: LedgerMethod, outcome: CallOutcome) -> u64 {
        self.calls[method.slot()][outcome.slot()].load(Ordering::Relaxed)
    }

    pub fn retries(&self, method: LedgerMethod) -> u64 {
        self.retries[method.slot()].load(Ordering::Relaxed)
    }
}

impl StoreMetrics {
    /// One write of `operation` that took `elapsed_us`.
    pub fn observe_write(&self, operation: StoreWrite, elapsed_us: u64) {
        self.writes[operation.slot()].observe(&STORE_WRITE_BUCKETS_US, elapsed_us);
    }

    /// One WAL fsync of the group commit.
    pub fn wal_synced(&self) {
        self.wal_syncs.fetch_add(1, Ordering::Relaxed);
    }

    pub fn writes(&self, operation: StoreWrite) -> u64 {
        self.writes[operation.slot()].snapshot().count()
    }
}

/// The store's size, read at scrape time.
#[derive(Debug, Clone, Copy, Default)]
pub struct StoreDisk {
    /// SST files of every column family plus the WAL, in bytes.
    pub bytes: u64,
    /// RocksDB's estimate of the bytes compaction still has to rewrite.
    pub pending_compaction_bytes: u64,
}

/// Appends the ledger and store series to `out`.
pub(super) fn write_backends(out: &mut String, disk: Option<StoreDisk>) -> fmt::Result {
    let name = "xray_ledger_calls_total";
    family(out, name, "counter", "Ledger source (JSON-RPC) calls, by method and outcome after retries.")?;
    for method in LedgerMethod::ALL {
        for outcome in CallOutcome::ALL {
            let value = LEDGER.calls(*method, *outcome);
            writeln!(out, "{name}{{method=\"{}\",outcome=\"{}\"}} {value}", method.as_str(), outcome.as_str())?;
        }
    }
    let name = "xray_ledger_retries_total";
    family(out, name, "counter", "Ledger source attempts after the first, by method.")?;
    for method in LedgerMethod::ALL {
        writeln!(out, "{name}{{method=\"{}\"}} {}", method.as_str(), LEDGER.retries(*method))?;
    }
    let name = "xray_ledger_transactions_read_total";
    family(out, name, "counter", "Transactions read from getTransaction answers (null answers not counted).")?;
    writeln!(out, "{name} {}", LEDGER.transactions.load(Ordering::Relaxed))?;
    let name = "xray_ledger_cache_hits_total";
    family(out, name, "counter", "Ledger cache lookups answered from the cache, by kind.")?;
    for kind in CacheKind::ALL {
        writeln!(out, "{name}{{kind=\"{}\"}} {}", kind.as_str(), LEDGER_CACHE.hits(*kind))?;
    }
    let name = "xray_ledger_cache_misses_total";
    family(out, name, "counter", "Ledger cache lookups the node had to answer, by kind.")?;
    for kind in CacheKind::ALL {
        writeln!(out, "{name}{{kind=\"{}\"}} {}", kind.as_str(), LEDGER_CACHE.misses(*kind))?;
    }
    let name = "xray_ledger_cache_bytes";
    family(out, name, "gauge", "Bytes the ledger cache holds (SST files and memtables), as of its last write.")?;
    writeln!(out, "{name} {}", LEDGER_CACHE.bytes())?;
    let name = "xray_scan_abandoned_total";
    family(out, name, "counter", "Scans whose lane work was dropped because their client hung up.")?;
    writeln!(out, "{name} {}", SCAN.abandoned_total())?;
    let name = "xray_scan_over_bytes_total";
    family(out, name, "counter", "Scans refused 503: the scan lane held its limit of upstream answer bytes.")?;
    writeln!(out, "{name} {}", SCAN.over_bytes_total())?;
    let name = "xray_scan_signature_batches_total";
    family(out, name, "counter", "Ed25519 signatures made for scans; each signs one batch (a listener tick's scans).")?;
    writeln!(out, "{name} {}", SCAN.signature_batches.load(Ordering::Relaxed))?;
    let name = "xray_scan_signature_batch_leaves_total";
    family(out, name, "counter", "Scans signed in batches (divided by the batches: the mean batch).")?;
    writeln!(out, "{name} {}", SCAN.signature_batch_leaves.load(Ordering::Relaxed))?;
    let name = "xray_monitor_checks_total";
    family(out, name, "counter", "Monitor checks of one watched wallet, by outcome.")?;
    for outcome in CheckOutcome::ALL {
        writeln!(out, "{name}{{outcome=\"{}\"}} {}", outcome.as_str(), MONITORS.checks(*outcome))?;
    }
    let name = "xray_monitor_watches";
    family(out, name, "gauge", "Wallets (monitor × wallet) this node checks.")?;
    writeln!(out, "{name} {}", MONITORS.watches.load(Ordering::Relaxed))?;
    let name = "xray_monitor_watches_left_out";
    family(out, name, "gauge", "Watched wallets past this node's bound (monitor_watches_per_node_max), not checked.")?;
    writeln!(out, "{name} {}", MONITORS.watches_left_out.load(Ordering::Relaxed))?;
    let name = "xray_monitor_lag_seconds";
    family(out, name, "gauge", "How late this node's most overdue monitor check is (0: every check on time).")?;
    writeln!(out, "{name} {:.3}", MONITORS.lag_ms() as f64 / 1_000.0)?;
    let name = "xray_ledger_retry_waits";
    family(out, name, "gauge", "Ledger calls waiting out a retry's backoff now.")?;
    writeln!(out, "{name} {}", LEDGER.waiting.load(Ordering::Relaxed))?;
    let name = "xray_ledger_call_duration_seconds";
    family(out, name, "histogram", "Time of a ledger call with its retries and backoff, by method.")?;
    for method in LedgerMethod::ALL {
        let labels = format!("method=\"{}\"", method.as_str());
        let snapshot = LEDGER.duration[method.slot()].snapshot();
        histogram(out, name, &labels, &LEDGER_CALL_BUCKETS_MS, MS_PER_S_DIGITS, &snapshot)?;
    }
    let name = "xray_store_write_duration_seconds";
    family(out, name, "histogram", "Time of one store write (a RocksDB batch), by operation.")?;
    for operation in StoreWrite::ALL {
        let labels = format!("operation=\"{}\"", operation.as_str());
        let snapshot = STORE.writes[operation.slot()].snapshot();
        histogram(out, name, &labels, &STORE_WRITE_BUCKETS_US, US_PER_S_DIGITS, &snapshot)?;
    }
    let name = "xray_webhook_attempts_total";
    family(out, name, "counter", "Webhook delivery attempts, by outcome (retried: due again after a backoff).")?;
    for outcome in WebhookOutcome::ALL {
        writeln!(out, "{name}{{outcome=\"{}\"}} {}", outcome.as_str(), WEBHOOKS.attempts(*outcome))?;
    }
    let name = "xray_store_wal_syncs_total";
    family(out, name, "counter", "WAL fsyncs made by the group commit (--sync-writes).")?;
    writeln!(out, "{name} {}", STORE.wal_syncs.load(Ordering::Relaxed))?;
    if let Some(disk) = disk {
        let name = "xray_store_disk_bytes";
        family(out, name, "gauge", "Bytes the store holds on disk (SST files and WAL).")?;
        writeln!(out, "{name} {}", disk.bytes)?;
        let name = "xray_store_pending_compaction_bytes";
        family(out, name, "gauge", "Bytes RocksDB estimates compaction still has to rewrite.")?;
        writeln!(out, "{name} {}", disk.pending_compaction_bytes)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_labels_are_closed() {
        for method in LedgerMethod::ALL {
            assert_eq!(LedgerMethod::of(method.as_str()), *method);
        }
        assert_eq!(LedgerMethod::of("getBalance"), LedgerMethod::Other);
        assert_eq!(LedgerMethod::of("getTransaction\"}"), LedgerMethod::Other);
    }
}
