//! The scan lane: the one thread that does a scan's upstream I/O — lookup tables, the
//! pre-state of the transaction's accounts and its simulation — so a listener thread never
//! waits on the ledger and a scan never waits behind a batch analysis (design.md, "two lanes").
//!
//! Owns: `Lane` (the handle listener threads share), its thread `xray-scan` (a current-thread
//! tokio runtime with its own `ledger::Source`), the bound on reads in flight and the lookup
//! table cache. Called from listener threads: `tables` and `observe` return futures any
//! executor awaits (monoio does, without blocking).
//!
//! Invariant: at most `SCAN_LANE_IN_FLIGHT_MAX` scans wait on the lane; past it `Busy` comes
//! back at once (the endpoint answers 503 `SERVICE_BUSY`), nothing queues unbounded.
//! Invariant: every upstream read ends within `SCAN_UPSTREAM_TIMEOUT_MS` (a timed-out
//! simulation is reported as such, never waited out); the pre-state and the simulation are
//! asked concurrently, so a scan costs one round trip of wall time (two with lookup tables).
//! Deliberately absent: judging anything (the listener does, with `scan::report`) and retries
//! beyond the source's own.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use simd_json::prelude::*;
use tokio::sync::{mpsc, oneshot};

use crate::config::{SCAN_LANE_IN_FLIGHT_MAX, SCAN_TABLE_CACHE_LEN, SCAN_TABLE_CACHE_TTL_MS, SCAN_UPSTREAM_TIMEOUT_MS};
use crate::config::SourceSpec;
use crate::ledger::read::{LedgerSource, Simulated};
use crate::ledger::wire::{SimulateValue, UiAccount, WithContext};
use crate::ledger::{LedgerError, Source};
use crate::pubkey::Pubkey;

/// Why the lane did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaneError {
    #[error("more than {SCAN_LANE_IN_FLIGHT_MAX} scans are waiting for the ledger")]
    Busy,
    #[error("the scan lane stopped")]
    Stopped,
    #[error("{0}")]
    Upstream(String),
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

/// The ledger's view of a transaction: its accounts before, and the simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The accounts asked for, in order (`Err`: why they could not be read).
    pub pre: Result<WithContext<Vec<Option<UiAccount>>>, String>,
    pub simulation: SimulationOutcome,
}

enum Work {
    Tables(Vec<Pubkey>),
    Observe { transaction: Vec<u8>, accounts: Vec<Pubkey> },
}

enum Answer {
    Tables(Result<Vec<Vec<Pubkey>>, String>),
    Observed(Observed),
}

struct Job {
    work: Work,
    reply: oneshot::Sender<Answer>,
}

/// The listener threads' handle on the lane.
pub struct Lane {
    jobs: mpsc::UnboundedSender<Job>,
    in_flight: Arc<AtomicUsize>,
    stop: parking_lot::Mutex<Option<oneshot::Sender<()>>>,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// Counts a job from its submission until its answer is taken (or dropped).
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Lane {
    /// Starts the `xray-scan` thread on its own source of `spec`.
    pub fn start(spec: &SourceSpec) -> Result<Lane, String> {
        let (jobs, receiver) = mpsc::unbounded_channel();
        let (opened_tx, opened_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel();
        let spec = spec.clone();
        let thread = std::thread::Builder::new()
            .name("xray-scan".into())
            .spawn(move || run(&spec, receiver, stopped, &opened_tx))
            .map_err(|e| format!("scan lane thread: {e}"))?;
        opened_rx.recv().map_err(|_| "the scan lane ended at start".to_owned())??;
        Ok(Lane {
            jobs,
            in_flight: Arc::new(AtomicUsize::new(0)),
            stop: parking_lot::Mutex::new(Some(stop)),
            thread: parking_lot::Mutex::new(Some(thread)),
        })
    }

    /// Scans waiting on the lane now (for `/metrics`).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// The addresses held by each lookup table, in order (cached briefly).
    pub async fn tables(&self, tables: Vec<Pubkey>) -> Result<Vec<Vec<Pubkey>>, LaneError> {
        match self.submit(Work::Tables(tables))?.await {
            Ok(Answer::Tables(answer)) => answer.map_err(LaneError::Upstream),
            _ => Err(LaneError::Stopped),
        }
    }

    /// The pre-state of `accounts` and the simulation of `transaction`, asked together.
    pub async fn observe(&self, transaction: Vec<u8>, accounts: Vec<Pubkey>) -> Result<Observed, LaneError> {
        match self.submit(Work::Observe { transaction, accounts })?.await {
            Ok(Answer::Observed(observed)) => Ok(observed),
            _ => Err(LaneError::Stopped),
        }
    }

    fn submit(&self, work: Work) -> Result<impl std::future::Future<Output = Result<Answer, ()>>, LaneError> {
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= SCAN_LANE_IN_FLIGHT_MAX {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            return Err(LaneError::Busy);
        }
        let slot = Slot(Arc::clone(&self.in_flight));
        let (reply, answer) = oneshot::channel();
        self.jobs.send(Job { work, reply }).map_err(|_| LaneError::Stopped)?;
        Ok(async move {
            let answer = answer.await.map_err(|_| ());
            drop(slot);
            answer
        })
    }

    /// Stops the lane (scans waiting get `Stopped`) and joins its thread.
    pub fn stop(&self) {
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

fn run(spec: &SourceSpec, mut jobs: mpsc::UnboundedReceiver<Job>, mut stopped: oneshot::Receiver<()>, opened: &Opened) {
    let runtime = match crate::ledger::runtime() {
        Ok(runtime) => runtime,
        Err(e) => return drop(opened.send(Err(e))),
    };
    let source = match Source::open(spec, Default::default()) {
        Ok(source) => Rc::new(source),
        Err(e) => return drop(opened.send(Err(format!("scan lane source: {e}")))),
    };
    let _ = opened.send(Ok(()));
    let tables = Rc::new(RefCell::new(TableCache::new()));
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
            let (source, tables) = (Rc::clone(&source), Rc::clone(&tables));
            tokio::task::spawn_local(async move {
                let answer = match job.work {
                    Work::Tables(addresses) => Answer::Tables(read_tables(&source, &tables, &addresses).await),
                    Work::Observe { transaction, accounts } => {
                        Answer::Observed(observe(&source, &transaction, &accounts).await)
                    }
                };
                let _ = job.reply.send(answer);
            });
        }
    });
}

fn deadline() -> Duration {
    Duration::from_millis(SCAN_UPSTREAM_TIMEOUT_MS)
}

async fn observe(source: &Source, transaction: &[u8], accounts: &[Pubkey]) -> Observed {
    let pre = async {
        match tokio::time::timeout(deadline(), source.get_multiple_accounts(accounts)).await {
            Ok(answer) => answer.map_err(|e| e.to_string()),
            Err(_) => Err(format!("the ledger did not answer within {SCAN_UPSTREAM_TIMEOUT_MS} ms")),
        }
    };
    let simulation = async {
        match tokio::time::timeout(deadline(), source.simulate_transaction(transaction, accounts)).await {
            Ok(Ok(Simulated::Ran(answer))) => SimulationOutcome::Ran(answer),
            Ok(Ok(Simulated::Skipped(reason))) => SimulationOutcome::Skipped(reason),
            Ok(Err(e)) => SimulationOutcome::Unavailable(e.to_string()),
            Err(_) => SimulationOutcome::TimedOut,
        }
    };
    let (pre, simulation) = tokio::join!(pre, simulation);
    Observed { pre, simulation }
}

async fn read_tables(source: &Source, cache: &RefCell<TableCache>, tables: &[Pubkey]) -> Result<Vec<Vec<Pubkey>>, String> {
    let missing: Vec<Pubkey> = tables.iter().filter(|t| cache.borrow_mut().get(t).is_none()).copied().collect();
    if !missing.is_empty() {
        let read = tokio::time::timeout(deadline(), source.get_multiple_accounts(&missing))
            .await
            .map_err(|_| format!("the ledger did not answer within {SCAN_UPSTREAM_TIMEOUT_MS} ms"))?
            .map_err(|e: LedgerError| e.to_string())?;
        for (address, account) in missing.iter().zip(read.value) {
            let addresses = table_addresses(address, account.as_ref())?;
            cache.borrow_mut().put(*address, addresses);
        }
    }
    let mut cache = cache.borrow_mut();
    tables
        .iter()
        .map(|t| cache.get(t).ok_or_else(|| format!("lookup table {t} was not read")))
        .collect()
}

/// The addresses of a lookup table as the node parses it (jsonParsed `lookupTable`).
fn table_addresses(address: &Pubkey, account: Option<&UiAccount>) -> Result<Vec<Pubkey>, String> {
    let parsed = account
        .and_then(|a| a.data.parsed())
        .filter(|p| p.program == "address-lookup-table")
        .ok_or_else(|| format!("{address} is not an address lookup table"))?;
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
        .map(|a| a.as_str().and_then(|t| Pubkey::parse(t).ok()).ok_or_else(|| format!("lookup table {address} holds a non-address")))
        .collect()
}

/// Lookup tables read recently, at most `SCAN_TABLE_CACHE_LEN`, each for
/// `SCAN_TABLE_CACHE_TTL_MS`.
struct TableCache {
    entries: lru::LruCache<Pubkey, (Instant, Vec<Pubkey>)>,
}

impl TableCache {
    fn new() -> TableCache {
        let len = std::num::NonZeroUsize::new(SCAN_TABLE_CACHE_LEN).unwrap_or(std::num::NonZeroUsize::MIN);
        TableCache { entries: lru::LruCache::new(len) }
    }

    fn get(&mut self, table: &Pubkey) -> Option<Vec<Pubkey>> {
        let ttl = Duration::from_millis(SCAN_TABLE_CACHE_TTL_MS);
        match self.entries.get(table) {
            Some((read_at, addresses)) if read_at.elapsed() < ttl => Some(addresses.clone()),
            _ => None,
        }
    }

    fn put(&mut self, table: Pubkey, addresses: Vec<Pubkey>) {
        self.entries.put(table, (Instant::now(), addresses));
    }
}
