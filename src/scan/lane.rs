//! The scan lane: the one thread that does a scan's upstream I/O — lookup tables, the
//! pre-state of the transaction's accounts and its simulation — so a listener thread never
//! waits on the ledger and a scan never waits behind a batch analysis (design.md, "two lanes").
//!
//! Owns: `Lane` (the handle listener threads share), its thread `xray-scan` (a current-thread
//! tokio runtime with its own `ledger::Source`), the bound on reads in flight and its caches
//! (lookup tables; the signers' counterparties, `counterparties`). Called from listener
//! threads: `tables`, `observe` and `observe_sequence` return futures any executor awaits (monoio does, without
//! blocking).
//!
//! A memory-resident source (the demo ledger: `SourceSpec::is_memory_resident`) has no upstream
//! to wait on — its reads and its simulation are computations, small and bounded — so they
//! run where the request is served (design.md: "an in-process simulation on the demo ledger
//! … may run where the request is served"), on the calling thread's own source and caches
//! (`Here`, one per listener thread), with no hand-off, no thread and no timer
//! (`Deadline::Never`). The table-miss budget is one for the process either way.
//!
//! Invariant: at most `SCAN_LANE_IN_FLIGHT_MAX` scans are on the lane's thread, at most
//! `SCAN_LANE_PER_ACCOUNT_MAX` of one account; past either `Busy` comes back at once (the
//! endpoint answers 503 `SERVICE_BUSY`), nothing queues unbounded. A scan counts until its
//! work on the lane ends.
//! Invariant: a scan whose client hung up (the endpoint's future dropped, and with it the
//! answer's receiver) has its lane work dropped at once — reads in flight abandoned, none
//! started after — so hang-ups cost the upstream no more than what had started before them
//! (`xray_scan_abandoned_total` counts them).
//! Invariant: the upstream answers the lane holds are bounded in bytes, every scan together:
//! each scan's reads draw on one `SharedBytes` of `LaneLimits::buffered_bytes_max` (charged
//! as chunks arrive, given back when the scan's work ends); a read past it fails and the scan
//! is refused `OverBytes` (503), never answered on part of its reads. A scan's own reads stop
//! at `SCAN_BYTES_PER_SCAN_MAX`, so one account (`SCAN_LANE_PER_ACCOUNT_MAX` scans) holds at
//! most half of the default pool.
//! Invariant: a table read that finds no table (the transaction's fault: 400, not charged) is
//! counted against its account (each uncached table counted before the read, those found
//! given back after it), at most `SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE` a minute;
//! past it the account's scans that need an uncached table are refused (429) before any read.
//! Invariant: every upstream read ends within `SCAN_UPSTREAM_TIMEOUT_MS` (a timed-out
//! simulation is reported as such, never waited out); the pre-state, the simulation and the
//! counterparties are asked concurrently, so a scan costs one round trip of wall time (on an
//! rpc source the simulation is the accounts' bytes and the runtime, on this thread; one more
//! the first time a token account's mint is met) — one more with lookup tables;
//! two more the first time a signer's history is read in a minute, a few more — still within
//! the deadline — when dust or failed transactions flood it.
//! Deliberately absent: judging anything (the listener does, with `scan::report`) and retries
//! beyond the source's own.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use simd_json::prelude::*;
use tokio::sync::{mpsc, oneshot};

use super::counterparties::{self, Counterparties};
use super::deadline::Deadline;
use super::ttl_cache::TtlCache;
use crate::config::SourceSpec;
use crate::config::{
    SCAN_BUFFERED_BYTES_MAX_DEFAULT, SCAN_BYTES_PER_SCAN_MAX, SCAN_LANE_IN_FLIGHT_MAX, SCAN_LANE_PER_ACCOUNT_MAX,
    SCAN_LISTENER_EXTRA_TOKENS_MAX, SCAN_LISTENER_US_PER_TOKEN_DEFAULT, SCAN_RPC_CONCURRENCY_MAX,
    SCAN_RPC_RESPONSE_BYTES_MAX, SCAN_TABLE_CACHE_LEN, SCAN_TABLE_CACHE_TTL_MS,
    SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE, SCAN_TABLE_MISS_ACCOUNTS_LEN, SCAN_UPSTREAM_TIMEOUT_MS,
};
use crate::ledger::budget::{self, ByteBudget, SharedBytes};
use crate::ledger::read::{LedgerSource, SequenceMode, Simulated};
use crate::ledger::rpc::RpcOptions;
use crate::ledger::wire::{SimulateValue, UiAccount, WithContext};
use crate::ledger::{LedgerError, Source};
use crate::pubkey::Pubkey;

/// Why the lane did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    #[error("the scan lane is full ({SCAN_LANE_IN_FLIGHT_MAX} scans, {SCAN_LANE_PER_ACCOUNT_MAX} of one account)")]
    Busy,
    #[error("the scan lane stopped")]
    Stopped,
    #[error("{0}")]
    Upstream(String),
    /// The ledger answered, and what it holds is not what the transaction says (a lookup
    /// table that is none, or does not exist): the transaction's fault, not the ledger's.
    #[error("{0}")]
    Invalid(String),
    /// The account used up its minute's budget of table reads that found no table.
    #[error("more than {SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE} lookup-table reads that found no table this minute")]
    TableMisses { retry_after_s: u64 },
    /// The lane holds its limit of upstream answer bytes (`LaneLimits::buffered_bytes_max`).
    #[error("the scan lane holds its limit of upstream answer bytes")]
    OverBytes,
}

/// The lane's limits an operator sets (`ServeConfig`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneLimits {
    /// Bytes of upstream answers every scan on the lane may hold together.
    pub buffered_bytes_max: u64,
    /// µs of a scan's reads on the calling thread (a memory-resident source) per rate-limit
    /// token beyond the first (`Lane::extra_tokens`); 0: none.
    pub listener_us_per_token: u64,
}

impl Default for LaneLimits {
    fn default() -> Self {
        LaneLimits {
            buffered_bytes_max: SCAN_BUFFERED_BYTES_MAX_DEFAULT,
            listener_us_per_token: SCAN_LISTENER_US_PER_TOKEN_DEFAULT,
        }
    }
}

/// What the simulation came to.
#[derive(Debug, Clone, PartialEq)]
pub enum SimulationOutcome {
    Ran(WithContext<SimulateValue>),
    Skipped(String),
    /// The source failed (unreachable, an error answer, a malformed one).
    Unavailable(String),
    TimedOut,
}

/// What the lane learned of the signer's counterparties.
#[derive(Debug, Clone, PartialEq)]
pub enum CounterpartiesOutcome {
    /// The transaction sends and approves nothing of the signer's.
    NotAsked,
    Known(Arc<Counterparties>),
    Unavailable(String),
}

/// The ledger's view of a transaction: its accounts before, the simulation and, when asked,
/// the signer's counterparties.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The accounts asked for, in order (`Err`: why they could not be read).
    pub pre: Result<WithContext<Vec<Option<UiAccount>>>, String>,
    pub simulation: SimulationOutcome,
    pub counterparties: CounterpartiesOutcome,
    /// The calling thread's CPU time the reads took, µs: a memory-resident source computes them
    /// there (its simulation runs the runtime); 0 over a network (the lane's thread waits). The
    /// wall time instead when that is below one token's worth (`Lane::extra_tokens` charges
    /// nothing for either) or the charge is off.
    pub here_us: u64,
}

/// The ledger's view of a sequence of transactions (`Lane::observe_sequence`): the accounts of
/// them all before the first, each transaction's simulation on the state the ones before it
/// leave, and, when asked, the signer's counterparties.
#[derive(Debug, Clone, PartialEq)]
pub struct ObservedSequence {
    /// Every transaction's accounts asked for, in order (`Err`: why they could not be read).
    pub pre: Result<WithContext<Vec<Option<UiAccount>>>, String>,
    /// One per transaction, in order.
    pub simulations: Vec<SimulationOutcome>,
    /// Each transaction after the first simulated by itself on the ledger as it is (the first
    /// alone is the first in place): what it does if it lands without the ones before it.
    pub alone: Vec<SimulationOutcome>,
    pub counterparties: CounterpartiesOutcome,
    /// As `Observed::here_us`.
    pub here_us: u64,
}

/// One transaction of a sequence: its bytes and the accounts whose post-state it answers.
pub type SequenceItem = (Vec<u8>, Vec<Pubkey>);

enum Work {
    Tables(Vec<Pubkey>),
    Observe { transaction: Vec<u8>, accounts: Vec<Pubkey>, history_of: Option<Pubkey> },
    ObserveSequence { items: Vec<SequenceItem>, mode: SequenceMode, accounts: Vec<Pubkey>, history_of: Option<Pubkey> },
}

enum Answer {
    Tables(Result<Vec<Vec<Pubkey>>, LaneError>),
    Observed(Observed),
    ObservedSequence(ObservedSequence),
    /// A read was refused for the lane's byte budget.
    OverBytes,
}

struct Job {
    /// The account whose scan it is (its budget of table misses).
    account: String,
    work: Work,
    reply: oneshot::Sender<Answer>,
    /// Held by the lane's task until its work ends (the waiter may be gone by then: a client
    /// that hung up does not free the lane of the work it started).
    _slot: Slot,
}

/// The listener threads' handle on the lane.
pub struct Lane {
    mode: Mode,
    /// Bytes of upstream answers every scan holds together (`LaneLimits::buffered_bytes_max`).
    pool: Arc<SharedBytes>,
    table_misses: Arc<parking_lot::Mutex<TableMisses>>,
    listener_us_per_token: u64,
}

enum Mode {
    /// A source over a network: its reads are the `xray-scan` thread's.
    Thread(LaneThread),
    /// A memory-resident source: read on the calling thread (`Here`).
    Here { spec: SourceSpec, id: u64 },
}

struct LaneThread {
    jobs: mpsc::UnboundedSender<Job>,
    in_flight: Arc<AtomicUsize>,
    /// Scans waiting per account (entries removed at zero): at most `SCAN_LANE_PER_ACCOUNT_MAX`.
    by_account: Arc<parking_lot::Mutex<HashMap<String, usize>>>,
    stop: parking_lot::Mutex<Option<oneshot::Sender<()>>>,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A listener thread's own copy of a memory-resident source and its caches, for the lane `id`.
struct Here {
    id: u64,
    source: Source,
    caches: Caches,
}

thread_local! {
    /// The `Here` of the lane this thread last read for (a thread serves one server's lane;
    /// another lane's first read on it replaces it).
    static HERE: RefCell<Option<Rc<Here>>> = const { RefCell::new(None) };
}

/// Tells lanes apart for `HERE` (tests start several servers in one process).
static LANE_IDS: AtomicU64 = AtomicU64::new(0);

/// Counts a job, in all and for its account, from its submission until its work ends.
struct Slot {
    in_flight: Arc<AtomicUsize>,
    by_account: Arc<parking_lot::Mutex<HashMap<String, usize>>>,
    account: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        let mut counts = self.by_account.lock();
        if let Some(n) = counts.get_mut(&self.account) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                counts.remove(&self.account);
            }
        }
    }
}

impl Lane {
    /// Starts the `xray-scan` thread on its own source of `spec`; for a memory-resident source,
    /// no thread: each listener thread opens its own source at its first scan.
    pub fn start(spec: &SourceSpec, limits: LaneLimits) -> Result<Lane, String> {
        let pool = Arc::new(SharedBytes::new(limits.buffered_bytes_max));
        let table_misses = Arc::new(parking_lot::Mutex::new(TableMisses::new()));
        let mode = match spec.is_memory_resident() {
            true => Mode::Here { spec: spec.clone(), id: LANE_IDS.fetch_add(1, Ordering::Relaxed) },
            false => Mode::Thread(LaneThread::start(spec, Arc::clone(&pool), Arc::clone(&table_misses))?),
        };
        Ok(Lane { mode, pool, table_misses, listener_us_per_token: limits.listener_us_per_token })
    }

    /// Scans on the lane's thread now (not yet exported to `/metrics`: a gauge is a leftover
    /// of #29); always 0 for a memory-resident source.
    pub fn in_flight(&self) -> usize {
        match &self.mode {
            Mode::Thread(thread) => thread.in_flight.load(Ordering::Relaxed),
            Mode::Here { .. } => 0,
        }
    }

    /// The addresses held by each lookup table, in order (cached briefly), for `account`.
    pub async fn tables(&self, account: &str, tables: Vec<Pubkey>) -> Result<Vec<Vec<Pubkey>>, LaneError> {
        match self.answer(account, Work::Tables(tables)).await? {
            Answer::Tables(answer) => answer,
            Answer::OverBytes => Err(LaneError::OverBytes),
            Answer::Observed(_) | Answer::ObservedSequence(_) => Err(LaneError::Stopped),
        }
    }

    /// The pre-state of `accounts`, the simulation of `transaction` and — for `history_of` —
    /// the counterparties of that wallet (cached, or read from its recent history), asked
    /// together.
    pub async fn observe(
        &self,
        account: &str,
        transaction: Vec<u8>,
        accounts: Vec<Pubkey>,
        history_of: Option<Pubkey>,
    ) -> Result<Observed, LaneError> {
        match self.answer(account, Work::Observe { transaction, accounts, history_of }).await? {
            Answer::Observed(observed) => Ok(observed),
            Answer::OverBytes => Err(LaneError::OverBytes),
            Answer::Tables(_) | Answer::ObservedSequence(_) => Err(LaneError::Stopped),
        }
    }

    /// The pre-state of `accounts` (every transaction's, together), `items` simulated in order
    /// on one state (`LedgerSource::simulate_sequence`) and — for `history_of` — that wallet's
    /// counterparties, asked together: one lane slot, as one scan.
    pub async fn observe_sequence(
        &self,
        account: &str,
        items: Vec<SequenceItem>,
        mode: SequenceMode,
        accounts: Vec<Pubkey>,
        history_of: Option<Pubkey>,
    ) -> Result<ObservedSequence, LaneError> {
        match self.answer(account, Work::ObserveSequence { items, mode, accounts, history_of }).await? {
            Answer::ObservedSequence(observed) => Ok(observed),
            Answer::OverBytes => Err(LaneError::OverBytes),
            Answer::Tables(_) | Answer::Observed(_) => Err(LaneError::Stopped),
        }
    }

    /// Rate-limit tokens a scan whose reads took `here_us` (`Observed::here_us`) costs beyond
    /// the `paid` it took (one a transaction): one per `listener_us_per_token` µs, or part of
    /// it, they took on the listener thread past `paid` that many (a memory-resident source
    /// simulates there), at most `SCAN_LISTENER_EXTRA_TOKENS_MAX` a transaction — so a key's
    /// heavy scans cost its rate limit what they cost the thread.
    pub fn extra_tokens(&self, here_us: u64, paid: u32) -> u32 {
        match self.listener_us_per_token {
            0 => 0,
            per_token => {
                let paid = u64::from(paid.max(1));
                let extra = here_us.saturating_sub(per_token * paid).div_ceil(per_token);
                u32::try_from(extra.min(SCAN_LISTENER_EXTRA_TOKENS_MAX * paid)).unwrap_or(0)
            }
        }
    }

    async fn answer(&self, account: &str, work: Work) -> Result<Answer, LaneError> {
        match &self.mode {
            Mode::Thread(thread) => thread.submit(account, work)?.await.map_err(|_| LaneError::Stopped),
            Mode::Here { spec, id } => {
                let here = Here::current(spec, *id, &self.table_misses)?;
                let pool = Arc::clone(&self.pool);
                // The thread's CPU time, not the wall clock: a busy machine's waits are not the
                // scan's to pay for (the work never yields: `Deadline::Never`, no I/O). Its end is
                // read only when the wall clock (no system call) came within the clocks' slack of
                // one token's worth: the CPU time of the same stretch is at most the wall time
                // plus that slack, so below it the charge is none either way (issue #41 item 9:
                // the thread clock is a system call, ~1.7 µs on this VM).
                let (started_us, started) = (thread_cpu_us(), Instant::now());
                let mut answer = serve(&here.source, &here.caches, pool, account, work, Deadline::Never).await;
                let wall_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                let free_us = self.listener_us_per_token;
                let here_us = match free_us == 0 || wall_us.saturating_add(THREAD_CLOCK_SLACK_US) <= free_us {
                    true => wall_us,
                    false => thread_cpu_us().saturating_sub(started_us),
                };
                match &mut answer {
                    Answer::Observed(observed) => observed.here_us = here_us,
                    Answer::ObservedSequence(observed) => observed.here_us = here_us,
                    Answer::Tables(_) | Answer::OverBytes => {}
                }
                Ok(answer)
            }
        }
    }

    /// On a memory-resident source, opens this thread's source and its runtime now (a listener
    /// thread at its start) instead of at the thread's first scan, which would otherwise wait
    /// for both (tens of ms). A failure is left for that first scan to report.
    pub fn open_on_this_thread(&self) {
        if let Mode::Here { spec, id } = &self.mode {
            if Here::current(spec, *id, &self.table_misses).is_ok() && matches!(spec, SourceSpec::Demo { .. }) {
                crate::runtime::warm();
            }
        }
    }

    /// Stops the lane's thread (scans waiting get `Stopped`) and joins it.
    pub fn stop(&self) {
        if let Mode::Thread(thread) = &self.mode {
            thread.stop();
        }
    }
}

impl Here {
    /// This thread's `Here` for lane `id`, opened at its first scan.
    fn current(
        spec: &SourceSpec,
        id: u64,
        table_misses: &Arc<parking_lot::Mutex<TableMisses>>,
    ) -> Result<Rc<Here>, LaneError> {
        if let Some(here) = HERE.with_borrow(|h| h.as_ref().filter(|h| h.id == id).cloned()) {
            return Ok(here);
        }
        let source =
            Source::open(spec, RpcOptions::default()).map_err(|e| LaneError::Upstream(format!("scan source: {e}")))?;
        let here = Rc::new(Here { id, source, caches: Caches::new(Arc::clone(table_misses)) });
        HERE.with_borrow_mut(|h| *h = Some(Rc::clone(&here)));
        Ok(here)
    }
}

impl LaneThread {
    fn start(
        spec: &SourceSpec,
        pool: Arc<SharedBytes>,
        table_misses: Arc<parking_lot::Mutex<TableMisses>>,
    ) -> Result<LaneThread, String> {
        let (jobs, receiver) = mpsc::unbounded_channel();
        let (opened_tx, opened_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel();
        let spec = spec.clone();
        let thread = std::thread::Builder::new()
            .name("xray-scan".into())
            .spawn(move || {
                // The rpc source executes in process too: its SVM is built before the first scan.
                if matches!(spec, SourceSpec::Rpc { .. }) {
                    crate::runtime::warm();
                }
                run(&spec, pool, table_misses, receiver, stopped, &opened_tx)
            })
            .map_err(|e| format!("scan lane thread: {e}"))?;
        opened_rx.recv().map_err(|_| "the scan lane ended at start".to_owned())??;
        Ok(LaneThread {
            jobs,
            in_flight: Arc::new(AtomicUsize::new(0)),
            by_account: Arc::new(parking_lot::Mutex::new(HashMap::new())),
            stop: parking_lot::Mutex::new(Some(stop)),
            thread: parking_lot::Mutex::new(Some(thread)),
        })
    }

    fn submit(&self, account: &str, work: Work) -> Result<oneshot::Receiver<Answer>, LaneError> {
        {
            let mut counts = self.by_account.lock();
            let mine = counts.get(account).copied().unwrap_or(0);
            if mine >= SCAN_LANE_PER_ACCOUNT_MAX {
                return Err(LaneError::Busy);
            }
            if self.in_flight.fetch_add(1, Ordering::AcqRel) >= SCAN_LANE_IN_FLIGHT_MAX {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                return Err(LaneError::Busy);
            }
            counts.insert(account.to_owned(), mine + 1);
        }
        let _slot = Slot {
            in_flight: Arc::clone(&self.in_flight),
            by_account: Arc::clone(&self.by_account),
            account: account.to_owned(),
        };
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { account: account.to_owned(), work, reply, _slot }).map_err(|_| LaneError::Stopped)?;
        Ok(answer)
    }

    fn stop(&self) {
        if let Some(stop) = self.stop.lock().take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Lane {
    fn drop(&mut self) {
        self.stop();
    }
}

type Opened = std::sync::mpsc::Sender<Result<(), String>>;

fn run(
    spec: &SourceSpec,
    pool: Arc<SharedBytes>,
    table_misses: Arc<parking_lot::Mutex<TableMisses>>,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    mut stopped: oneshot::Receiver<()>,
    opened: &Opened,
) {
    let runtime = match crate::ledger::runtime() {
        Ok(runtime) => runtime,
        Err(e) => return drop(opened.send(Err(e))),
    };
    let options = RpcOptions {
        concurrency_max: SCAN_RPC_CONCURRENCY_MAX,
        response_bytes_max: SCAN_RPC_RESPONSE_BYTES_MAX,
        ..RpcOptions::default()
    };
    let source = match Source::open(spec, options) {
        Ok(source) => Rc::new(source),
        Err(e) => return drop(opened.send(Err(format!("scan lane source: {e}")))),
    };
    let _ = opened.send(Ok(()));
    let caches = Rc::new(Caches::new(table_misses));
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        loop {
            let job = tokio::select! {
                job = jobs.recv() => match job {
                    Some(job) => job,
                    None => break,
                },
                _ = &mut stopped => break,
            };
            let (source, caches, pool) = (Rc::clone(&source), Rc::clone(&caches), Arc::clone(&pool));
            tokio::task::spawn_local(async move {
                let Job { account, work, mut reply, _slot } = job;
                let work = serve(&source, &caches, pool, &account, work, Deadline::after(deadline()));
                // The waiter gone (its client hung up), the work is dropped where it stands:
                // reads in flight are abandoned and no further read starts — a hang-up is
                // never a free scan's worth of upstream work. `biased`: a waiter gone before
                // the work began starts none.
                let answer = tokio::select! {
                    biased;
                    () = reply.closed() => None,
                    answer = work => Some(answer),
                };
                match answer {
                    Some(answer) => drop(reply.send(answer)),
                    None => crate::metrics::SCAN.abandoned(),
                }
                drop(_slot);
            });
        }
    });
}

/// One piece of a scan's reads, within the scan's byte budget and `deadline`.
async fn serve(
    source: &Source,
    caches: &Caches,
    pool: Arc<SharedBytes>,
    account: &str,
    work: Work,
    deadline: Deadline,
) -> Answer {
    let refused = Rc::new(Cell::new(false));
    // Each scan also has its own cap, so one account's scans (at most
    // `SCAN_LANE_PER_ACCOUNT_MAX`) hold at most half the default pool: a read past a scan's
    // own cap fails that read alone (the scan is answered, and says so).
    let budget = ByteBudget::pooled(SCAN_BYTES_PER_SCAN_MAX, pool, Rc::clone(&refused));
    budget::within(budget, async {
        let answer = match work {
            Work::Tables(addresses) => Answer::Tables(read_tables(source, caches, account, &addresses, deadline).await),
            Work::Observe { transaction, accounts, history_of } => {
                Answer::Observed(observe(source, caches, &transaction, &accounts, history_of, deadline).await)
            }
            Work::ObserveSequence { items, mode, accounts, history_of } => {
                let reads = Reads { source, caches, deadline };
                Answer::ObservedSequence(reads.sequence(&items, mode, &accounts, history_of).await)
            }
        };
        // A read the pool refused makes the whole answer a refusal (503), never a scan
        // answered on part of its reads for want of room.
        if refused.get() {
            crate::metrics::SCAN.over_bytes();
            return Answer::OverBytes;
        }
        answer
    })
    .await
}

/// How far a stretch's thread CPU time, read around its wall-clock reads and truncated to µs,
/// may exceed its wall time, µs: the CPU clock's reads enclose the wall clock's, each rounding
/// loses under 1 µs, and one clock read takes ~1.7 µs here.
const THREAD_CLOCK_SLACK_US: u64 = 5;

/// CPU time this thread has used, µs (`CLOCK_THREAD_CPUTIME_ID`); 0 if the clock cannot be
/// read (then nothing is charged: never more than the work).
fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec, and the clock id is one the kernel defines.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    let (s, ns) = (u64::try_from(ts.tv_sec).unwrap_or(0), u64::try_from(ts.tv_nsec).unwrap_or(0));
    s.saturating_mul(1_000_000).saturating_add(ns / 1_000)
}

fn deadline() -> Duration {
    Duration::from_millis(SCAN_UPSTREAM_TIMEOUT_MS)
}

/// What a thread reading for the lane keeps between scans (the lane's thread, or a listener's
/// `Here`); the table-miss budget is the lane's, shared.
struct Caches {
    tables: RefCell<TtlCache<Vec<Pubkey>>>,
    counterparties: RefCell<counterparties::Cache>,
    table_misses: Arc<parking_lot::Mutex<TableMisses>>,
}

impl Caches {
    fn new(table_misses: Arc<parking_lot::Mutex<TableMisses>>) -> Caches {
        Caches {
            tables: RefCell::new(TtlCache::new(SCAN_TABLE_CACHE_LEN, SCAN_TABLE_CACHE_TTL_MS)),
            counterparties: RefCell::new(counterparties::cache()),
            table_misses,
        }
    }
}

/// Each account's table reads that found no table, in the current minute of its own (the
/// minute starts at its first miss). Bounded: `SCAN_TABLE_MISS_ACCOUNTS_LEN` accounts, least
/// recently seen out first (an account pushed out starts a new minute: its count is lost, the
/// bound per account within a minute holds while it is remembered).
struct TableMisses {
    by_account: lru::LruCache<String, (Instant, u32)>,
}

const MINUTE: Duration = Duration::from_secs(60);

impl TableMisses {
    fn new() -> TableMisses {
        let len = std::num::NonZeroUsize::new(SCAN_TABLE_MISS_ACCOUNTS_LEN).unwrap_or(std::num::NonZeroUsize::MIN);
        TableMisses { by_account: lru::LruCache::new(len) }
    }

    /// `Err` (seconds until its minute ends) when `account` used up its budget.
    fn check(&mut self, account: &str, now: Instant) -> Result<(), LaneError> {
        match self.by_account.get(account) {
            Some(&(since, count))
                if count >= SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE && now.duration_since(since) < MINUTE =>
            {
                let left = MINUTE.saturating_sub(now.duration_since(since));
                Err(LaneError::TableMisses { retry_after_s: left.as_secs().max(1) })
            }
            _ => Ok(()),
        }
    }

    /// Tables a read found after all (`spend` counted every one asked for).
    fn give_back(&mut self, account: &str, found: u32) {
        if let Some(entry) = self.by_account.peek_mut(account) {
            entry.1 = entry.1.saturating_sub(found);
        }
    }

    fn spend(&mut self, account: &str, misses: u32, now: Instant) {
        if misses == 0 {
            return;
        }
        let entry = self.by_account.get_or_insert_mut(account.to_owned(), || (now, 0));
        if now.duration_since(entry.0) >= MINUTE {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(misses);
    }
}

async fn observe(
    source: &Source,
    caches: &Caches,
    transaction: &[u8],
    accounts: &[Pubkey],
    history_of: Option<Pubkey>,
    deadline: Deadline,
) -> Observed {
    let reads = Reads { source, caches, deadline };
    let (pre, simulation, counterparties) =
        tokio::join!(reads.pre(accounts), reads.simulation(transaction, accounts), reads.history(history_of));
    Observed { pre, simulation, counterparties, here_us: 0 }
}

fn outcome(simulated: Simulated) -> SimulationOutcome {
    match simulated {
        Simulated::Ran(answer) => SimulationOutcome::Ran(answer),
        Simulated::Skipped(reason) => SimulationOutcome::Skipped(reason),
    }
}

/// The reads one scan makes, on one source within one deadline.
struct Reads<'a> {
    source: &'a Source,
    caches: &'a Caches,
    deadline: Deadline,
}

impl Reads<'_> {
    /// The accounts before.
    async fn pre(&self, accounts: &[Pubkey]) -> Result<WithContext<Vec<Option<UiAccount>>>, String> {
        match self.deadline.bound(self.source.get_multiple_accounts(accounts)).await {
            Some(answer) => answer.map_err(|e| e.to_string()),
            None => Err(format!("the ledger did not answer within {SCAN_UPSTREAM_TIMEOUT_MS} ms")),
        }
    }

    /// `history_of`'s counterparties: cached, or read from its recent history.
    /// One transaction simulated by itself on the ledger as it is.
    async fn simulation(&self, transaction: &[u8], accounts: &[Pubkey]) -> SimulationOutcome {
        match self.deadline.bound(self.source.simulate_transaction(transaction, accounts)).await {
            Some(Ok(simulated)) => outcome(simulated),
            Some(Err(e)) => SimulationOutcome::Unavailable(e.to_string()),
            None => SimulationOutcome::TimedOut,
        }
    }

    async fn history(&self, history_of: Option<Pubkey>) -> CounterpartiesOutcome {
        let Some(wallet) = history_of else { return CounterpartiesOutcome::NotAsked };
        let caches = self.caches;
        if let Some(known) = caches.counterparties.borrow_mut().get(&wallet) {
            return CounterpartiesOutcome::Known(known);
        }
        // The read ends each of its calls at the deadline itself: rounds already judged are
        // kept (and the answer says it stopped short), not lost to one late call.
        match counterparties::read(self.source, &wallet, self.deadline).await {
            Ok(read) => {
                let known = Arc::new(read);
                // A read cut short (a late call, the scan's or the lane's byte budget — what
                // another scan of the moment can cause) answers this scan only: cached, it
                // would give every account the shorter window for the cache's life.
                if known.shortfall.is_none() {
                    caches.counterparties.borrow_mut().put(wallet, Arc::clone(&known));
                }
                CounterpartiesOutcome::Known(known)
            }
            Err(e) => CounterpartiesOutcome::Unavailable(e.to_string()),
        }
    }

    /// A sequence's reads: every transaction's accounts before the first, the transactions run
    /// in order on one state (one call, one deadline), each after the first also alone (at most
    /// `SEQUENCE_TRANSACTIONS_MAX` - 1 calls, together), the counterparties.
    async fn sequence(
        &self,
        items: &[SequenceItem],
        mode: SequenceMode,
        accounts: &[Pubkey],
        history_of: Option<Pubkey>,
    ) -> ObservedSequence {
        let simulations = async {
            let borrowed: Vec<(&[u8], &[Pubkey])> = items.iter().map(|(b, a)| (b.as_slice(), a.as_slice())).collect();
            match self.deadline.bound(self.source.simulate_sequence(&borrowed, mode)).await {
                Some(Ok(answers)) if answers.len() == items.len() => answers.into_iter().map(outcome).collect(),
                Some(Ok(answers)) => {
                    let e = format!("{} answers for {} transactions", answers.len(), items.len());
                    vec![SimulationOutcome::Unavailable(e); items.len()]
                }
                Some(Err(e)) => vec![SimulationOutcome::Unavailable(e.to_string()); items.len()],
                None => vec![SimulationOutcome::TimedOut; items.len()],
            }
        };
        let alone = futures_util::future::join_all(items.iter().skip(1).map(|(b, a)| self.simulation(b, a)));
        let (pre, simulations, alone, counterparties) =
            tokio::join!(self.pre(accounts), simulations, alone, self.history(history_of));
        ObservedSequence { pre, simulations, alone, counterparties, here_us: 0 }
    }
}

async fn read_tables(
    source: &Source,
    caches: &Caches,
    account: &str,
    tables: &[Pubkey],
    deadline: Deadline,
) -> Result<Vec<Vec<Pubkey>>, LaneError> {
    let cache = &caches.tables;
    let missing: Vec<Pubkey> = tables.iter().filter(|t| cache.borrow_mut().get(t).is_none()).copied().collect();
    if !missing.is_empty() {
        // Every uncached table counts as a miss before the read, and those found are given
        // back after it: a client that hangs up mid-read cannot make misses never counted.
        let asked = u32::try_from(missing.len()).unwrap_or(u32::MAX);
        {
            let mut misses = caches.table_misses.lock();
            misses.check(account, Instant::now())?;
            misses.spend(account, asked, Instant::now());
        }
        let read = deadline
            .bound(source.get_multiple_accounts(&missing))
            .await
            .ok_or_else(|| LaneError::Upstream(format!("no answer within {SCAN_UPSTREAM_TIMEOUT_MS} ms")))?
            .map_err(|e: LedgerError| LaneError::Upstream(e.to_string()))?;
        let found: Vec<_> = missing
            .iter()
            .zip(read.value)
            .map(|(address, held)| (address, table_addresses(address, held.as_ref())))
            .collect();
        let tables = found.iter().filter(|(_, read)| read.is_ok()).count();
        caches.table_misses.lock().give_back(account, u32::try_from(tables).unwrap_or(u32::MAX));
        for (address, read) in found {
            cache.borrow_mut().put(*address, read.map_err(LaneError::Invalid)?);
        }
    }
    let mut cache = cache.borrow_mut();
    tables
        .iter()
        .map(|t| cache.get(t).ok_or_else(|| LaneError::Upstream(format!("lookup table {t} was not read"))))
        .collect()
}

/// The addresses of a lookup table as the node parses it (jsonParsed `lookupTable`).
fn table_addresses(address: &Pubkey, account: Option<&UiAccount>) -> Result<Vec<Pubkey>, String> {
    let account = account.ok_or_else(|| format!("lookup table {address} does not exist on the ledger"))?;
    let parsed = account
        .data
        .parsed()
        .filter(|p| p.program == "address-lookup-table")
        .ok_or_else(|| format!("{address} is an account of {}, not an address lookup table", account.owner))?;
    let list = parsed
        .parsed
        .get("info")
        .and_then(|i| i.get("addresses"))
        .and_then(|a| a.as_array())
        .ok_or_else(|| format!("lookup table {address} lists no addresses"))?;
    if list.len() > crate::config::TX_ACCOUNTS_MAX {
        return Err(format!("lookup table {address} holds {} addresses (256 at most)", list.len()));
    }
    list.iter()
        .map(|a| {
            a.as_str()
                .and_then(|t| Pubkey::parse(t).ok())
                .ok_or_else(|| format!("lookup table {address} holds a non-address"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node that accepts connections and never answers: every read waits for its deadline.
    fn black_hole() -> String {
        let hole = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", hole.local_addr().expect("addr"));
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for conn in hole.incoming() {
                held.push(conn);
            }
        });
        url
    }

    fn observe() -> Work {
        Work::Observe { transaction: Vec::new(), accounts: vec![Pubkey::default()], history_of: None }
    }

    /// `future`'s output at its first poll (a memory-resident source never waits).
    fn at_once<T>(future: impl std::future::Future<Output = T>) -> T {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => panic!("a memory-resident read waited"),
        }
    }

    #[test]
    fn a_memory_resident_source_is_read_on_the_calling_thread_without_a_timer() {
        let lane = Lane::start(&SourceSpec::Demo { seed: 7 }, LaneLimits::default()).expect("lane");
        assert!(matches!(lane.mode, Mode::Here { .. }), "no lane thread for the demo");
        let wallet = Pubkey::default();
        // No tokio runtime on this thread: a timer would panic; every read answers in the call.
        let observed = at_once(lane.observe("acct_a", Vec::new(), vec![wallet], Some(wallet))).expect("observed");
        assert!(observed.pre.is_ok(), "{:?}", observed.pre);
        assert!(matches!(observed.counterparties, CounterpartiesOutcome::Known(_)));
        assert_eq!(lane.in_flight(), 0);
        // A second lane on the same thread gets its own source and caches.
        let other = Lane::start(&SourceSpec::Demo { seed: 8 }, LaneLimits::default()).expect("lane");
        assert!(at_once(other.observe("acct_a", Vec::new(), vec![wallet], None)).is_ok());
        let ids: Vec<u64> = [&lane, &other]
            .iter()
            .map(|l| match l.mode {
                Mode::Here { id, .. } => id,
                Mode::Thread(_) => u64::MAX,
            })
            .collect();
        assert_ne!(ids[0], ids[1]);
    }

    #[test]
    fn a_scan_is_charged_by_its_work_past_one_tokens_worth_and_at_most_the_cap() {
        let limits = LaneLimits { listener_us_per_token: 200, ..LaneLimits::default() };
        let lane = Lane::start(&SourceSpec::Demo { seed: 7 }, limits).expect("lane");
        let wallet = Pubkey::default();
        let mut observed = at_once(lane.observe("acct_a", Vec::new(), vec![wallet], None)).expect("observed");
        assert!(observed.here_us < 1_000_000, "the thread's CPU time, µs: {}", observed.here_us);
        let extra = |lane: &Lane, observed: &mut Observed, us: u64| {
            observed.here_us = us;
            lane.extra_tokens(observed.here_us, 1)
        };
        let tokens: Vec<u32> =
            [0, 200, 201, 400, 401, 1_000_000].iter().map(|&us| extra(&lane, &mut observed, us)).collect();
        assert_eq!(tokens, [0, 0, 1, 1, 2, SCAN_LISTENER_EXTRA_TOKENS_MAX as u32]);
        let off = Lane::start(&SourceSpec::Demo { seed: 7 }, LaneLimits { listener_us_per_token: 0, ..limits })
            .expect("lane");
        assert_eq!(extra(&off, &mut observed, 1_000_000), 0);
    }

    #[test]
    fn one_account_cannot_take_the_whole_lane_and_a_hang_up_does_not_free_its_work() {
        let lane = Lane::start(&SourceSpec::Rpc { url: black_hole() }, LaneLimits::default()).expect("lane");
        let Mode::Thread(lane) = &lane.mode else { panic!("an rpc source has a lane thread") };
        let mut waiting: Vec<_> =
            (0..SCAN_LANE_PER_ACCOUNT_MAX).map(|_| lane.submit("acct_a", observe()).expect("room")).collect();
        assert_eq!(lane.submit("acct_a", observe()).err(), Some(LaneError::Busy));
        waiting.push(lane.submit("acct_b", observe()).expect("another account still gets in"));
        assert_eq!(lane.in_flight.load(Ordering::Relaxed), SCAN_LANE_PER_ACCOUNT_MAX + 1);
        // The waiters leave; their reads still run until the deadline, and still count.
        drop(waiting);
        assert_eq!(lane.submit("acct_a", observe()).err(), Some(LaneError::Busy));
        let deadline = Instant::now() + Duration::from_millis(SCAN_UPSTREAM_TIMEOUT_MS + 5_000);
        while lane.in_flight.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(lane.in_flight.load(Ordering::Relaxed), 0, "every read ended at its deadline");
        assert!(lane.by_account.lock().is_empty(), "no account left counted");
        assert!(lane.submit("acct_a", observe()).is_ok());
    }

    #[test]
    fn table_misses_are_budgeted_per_account_and_minute() {
        let mut misses = TableMisses::new();
        let start = Instant::now();
        misses.spend("acct_a", SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE - 1, start);
        assert_eq!(misses.check("acct_a", start), Ok(()));
        misses.spend("acct_a", 1, start + Duration::from_secs(20));
        assert_eq!(
            misses.check("acct_a", start + Duration::from_secs(20)),
            Err(LaneError::TableMisses { retry_after_s: 40 }),
            "the budget is spent: refused until the minute that began at the first miss ends"
        );
        assert_eq!(misses.check("acct_b", start), Ok(()), "another account has its own");
        assert_eq!(misses.check("acct_a", start + MINUTE), Ok(()), "a new minute");
        misses.spend("acct_a", 1, start + MINUTE);
        assert_eq!(misses.check("acct_a", start + MINUTE), Ok(()), "counted from zero again");
    }
}
