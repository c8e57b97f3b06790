//! The compute pool: pinned OS threads draining the fixed-size admission queue.
//!
//! Owns: the crossbeam `ArrayQueue` of tickets (the only hand-off between listener and
//! compute threads), the compute threads, their pinning, and each thread's current-thread
//! tokio runtime that drives up to `jobs_in_flight_max` jobs at once (ledger reads are I/O
//! bound; the engine runs inline). Listener threads call `submit` (never blocks: a full queue
//! hands the ticket back for a `503 SERVICE_BUSY`); compute threads call the `JobSink`.
//!
//! Invariants: the queue holds at most `queue_capacity` tickets and each thread at most
//! `jobs_in_flight_max` jobs, so work in memory is bounded; each job runs within its
//! `JobBudget` (a deadline, and a byte budget the ledger sources charge: `ledger::budget`) and
//! ends FAILED, refunded, past either; a ticket is executed exactly once
//! (popped by one thread) and always reported to the sink; after `shutdown` no ticket is popped
//! and in-flight jobs finish before the threads exit (queued tickets stay durable in the store
//! and are re-queued on restart). The caller opens RocksDB before starting the pool: its
//! background threads must not inherit a pin.
//! Invariant: the whole job path is panic-safe (`run_job`): a panic in the sink's `started`, in
//! the run or in the sink's `finished` ends the job FAILED (`ANALYSIS_FAILED`, refunded, out of
//! the live index) and gives its slot back. When `finished` itself panicked, the job is ended
//! through `JobSink::finished_plainly`, the sink's path with the fewest steps; should that panic
//! too, the job stays live in the store and the next start's recovery runs it again (its starts
//! are counted: past `JOB_STARTS_MAX` it is ended FAILED without running).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_queue::ArrayQueue;
use futures_util::FutureExt;
use tokio::sync::Notify;

use super::execute::{execute_with, JobSpec, Outcome, ReusedScores};
use crate::config::{COMPUTE_IDLE_POLL_MS, JOB_DEADLINE_S_DEFAULT, JOB_LEDGER_BYTES_MAX_DEFAULT};
use crate::engine::policy::Policy;
use crate::labels::live::LiveLabels;
use crate::ledger::budget::{self, ByteBudget};
use crate::ledger::read::LedgerSource;
use crate::ledger::view::ViewOptions;

/// One unit of admitted work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    pub id: String,
    pub spec: JobSpec,
    /// The account's policy when the job was admitted (or recovered): the job runs under it
    /// and its result carries its version tag.
    pub policy: Arc<Policy>,
}

impl Ticket {
    /// A ticket under the default policy.
    pub fn new(id: impl Into<String>, spec: JobSpec) -> Ticket {
        Ticket { id: id.into(), spec, policy: Policy::default_policy() }
    }

    pub fn under(self, policy: Arc<Policy>) -> Ticket {
        Ticket { policy, ..self }
    }
}

/// Where compute threads report progress (the store, the status index, long-poll waiters), and
/// where they read the scores of analyses a comparison reuses.
pub trait JobSink: ReusedScores + Send + Sync + 'static {
    /// The job is about to run; `Err` is the outcome it ends with instead of running.
    fn started(&self, ticket: &Ticket) -> Result<(), Outcome>;
    fn finished(&self, ticket: Ticket, outcome: Outcome);
    /// Ends the job with `outcome` by the fewest steps the sink has: called only after
    /// `finished` panicked, so it does nothing `finished` does beyond settling the job (no
    /// work on the outcome), which leaves the least that can panic again.
    fn finished_plainly(&self, id: &str, outcome: Outcome);
}

#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub threads: usize,
    pub queue_capacity: usize,
    pub jobs_in_flight_max: usize,
    /// Pin thread i to core i (mod the cores available).
    pub pin: bool,
    pub view: ViewOptions,
    pub budget: JobBudget,
}

/// What one job may spend: wall time (ledger reads and engine) and ledger bytes read.
#[derive(Debug, Clone, Copy)]
pub struct JobBudget {
    pub deadline: Duration,
    pub ledger_bytes_max: u64,
}

impl Default for JobBudget {
    fn default() -> Self {
        JobBudget {
            deadline: Duration::from_secs(JOB_DEADLINE_S_DEFAULT),
            ledger_bytes_max: JOB_LEDGER_BYTES_MAX_DEFAULT,
        }
    }
}

pub struct ComputePool {
    queue: Arc<ArrayQueue<Ticket>>,
    wake: Arc<Notify>,
    stop: Arc<AtomicBool>,
    /// Taken by the first `shutdown`.
    handles: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

struct Shared {
    queue: Arc<ArrayQueue<Ticket>>,
    wake: Arc<Notify>,
    stop: Arc<AtomicBool>,
    labels: Arc<LiveLabels>,
    sink: Arc<dyn JobSink>,
    config: PoolConfig,
}

impl ComputePool {
    /// Starts `config.threads` compute threads; `make_source(i)` builds thread i's ledger
    /// source on that thread (sources are single-threaded). Returns once every thread has its
    /// source, or the first thread's error (and no thread left running) when one has none: a
    /// server whose jobs could never run must not start and admit them.
    pub fn start<S, F>(
        config: PoolConfig,
        labels: Arc<LiveLabels>,
        make_source: F,
        sink: Arc<dyn JobSink>,
    ) -> Result<ComputePool, String>
    where
        S: LedgerSource + 'static,
        F: Fn(usize) -> Result<S, String> + Send + Sync + 'static,
    {
        if config.threads == 0 || config.queue_capacity == 0 || config.jobs_in_flight_max == 0 {
            return Err("compute threads, queue capacity and jobs in flight must all be at least 1".into());
        }
        let queue = Arc::new(ArrayQueue::new(config.queue_capacity));
        let wake = Arc::new(Notify::new());
        let stop = Arc::new(AtomicBool::new(false));
        let make_source = Arc::new(make_source);
        let cores = if config.pin { core_affinity::get_core_ids().unwrap_or_default() } else { Vec::new() };
        let mut handles = Vec::with_capacity(config.threads);
        let (opened, opened_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        for index in 0..config.threads {
            let shared = Shared {
                queue: queue.clone(),
                wake: wake.clone(),
                stop: stop.clone(),
                labels: labels.clone(),
                sink: sink.clone(),
                config: config.clone(),
            };
            let make_source = make_source.clone();
            let opened = opened.clone();
            let core = (!cores.is_empty()).then(|| cores[index % cores.len()]);
            let handle = std::thread::Builder::new()
                .name(format!("xray-compute-{index}"))
                .spawn(move || {
                    let pinned = core.is_some_and(core_affinity::set_for_current);
                    tracing::info!(thread = index, pinned, "compute thread started");
                    // Each thread's sender is dropped once it has reported (or unwound), so a
                    // thread that panics while opening ends the wait below instead of hanging it.
                    match make_source(index).and_then(|source| Ok((source, crate::ledger::runtime()?))) {
                        Ok((source, runtime)) => {
                            let _ = opened.send(Ok(()));
                            drop(opened);
                            run_thread(shared, source, runtime)
                        }
                        Err(e) => {
                            let _ = opened.send(Err(format!("compute thread {index}: ledger source: {e}")));
                        }
                    }
                })
                .map_err(|e| format!("spawning compute thread {index}: {e}"))?;
            handles.push(handle);
        }
        drop(opened);
        let pool = ComputePool { queue, wake, stop, handles: std::sync::Mutex::new(handles) };
        for _ in 0..config.threads {
            let failure = match opened_rx.recv() {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e,
                Err(_) => "a compute thread ended before opening its ledger source".to_owned(),
            };
            pool.shutdown();
            return Err(failure);
        }
        Ok(pool)
    }

    /// Hands a ticket to the compute threads, or back when the queue is full (or stopping).
    // The error hands the value back to its owner (a move, not an error object to propagate).
    #[allow(clippy::result_large_err)]
    pub fn submit(&self, ticket: Ticket) -> Result<(), Ticket> {
        if self.stop.load(Ordering::Acquire) {
            return Err(ticket);
        }
        self.queue.push(ticket)?;
        self.wake.notify_one();
        Ok(())
    }

    pub fn depth(&self) -> usize {
        self.queue.len()
    }

    pub fn capacity(&self) -> usize {
        self.queue.capacity()
    }

    /// Stops popping, lets in-flight jobs finish, joins the threads. Tickets still queued are
    /// returned (they stay `QUEUED` in the store and are re-queued on the next start).
    pub fn shutdown(&self) -> Vec<Ticket> {
        self.stop.store(true, Ordering::Release);
        self.wake.notify_waiters();
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(|p| p.into_inner()));
        for h in handles {
            let _ = h.join();
        }
        std::iter::from_fn(|| self.queue.pop()).collect()
    }
}

fn run_thread<S: LedgerSource + 'static>(shared: Shared, source: S, runtime: tokio::runtime::Runtime) {
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, dispatch(Rc::new(shared), Rc::new(source)));
}

/// Pops tickets while a slot is free, runs each as a local task, sleeps when there is nothing
/// to do; returns once stopped and idle.
async fn dispatch<S: LedgerSource + 'static>(shared: Rc<Shared>, source: Rc<S>) {
    let in_flight = Rc::new(Cell::new(0usize));
    let slot_freed = Rc::new(Notify::new());
    loop {
        let stopping = shared.stop.load(Ordering::Acquire);
        if stopping && in_flight.get() == 0 {
            return;
        }
        if !stopping && in_flight.get() < shared.config.jobs_in_flight_max {
            if let Some(ticket) = shared.queue.pop() {
                in_flight.set(in_flight.get() + 1);
                let (shared, source, in_flight, slot_freed) =
                    (shared.clone(), source.clone(), in_flight.clone(), slot_freed.clone());
                tokio::task::spawn_local(async move {
                    let _slot = InFlightSlot { in_flight, slot_freed };
                    run_job(&shared, &*source, ticket).await;
                });
                continue;
            }
        }
        tokio::select! {
            _ = shared.wake.notified() => {}
            _ = slot_freed.notified() => {}
            _ = tokio::time::sleep(Duration::from_millis(COMPUTE_IDLE_POLL_MS)) => {}
        }
    }
}

/// One ticket's whole path: started, run, finished. A panic anywhere on it is a bug, but must
/// not strand the job RUNNING with its unit reserved (and panic again after every restart): it
/// ends FAILED, refunded.
async fn run_job<S: LedgerSource>(shared: &Shared, source: &S, ticket: Ticket) {
    let outcome = match catch_unwind(AssertUnwindSafe(|| shared.sink.started(&ticket))) {
        Ok(Ok(())) => run_within_budget(shared, source, &ticket).await,
        Ok(Err(outcome)) => outcome,
        Err(_) => {
            tracing::error!(job = %ticket.id, "starting the job panicked: it ends FAILED");
            Outcome::panicked()
        }
    };
    finish(&*shared.sink, ticket, outcome);
}

/// Reports the outcome; when that panics, ends the job FAILED through the sink's plain path,
/// and when that panics too, leaves it to the next start's recovery (see the module doc).
fn finish(sink: &dyn JobSink, ticket: Ticket, outcome: Outcome) {
    let id = ticket.id.clone();
    if catch_unwind(AssertUnwindSafe(|| sink.finished(ticket, outcome))).is_ok() {
        return;
    }
    tracing::error!(job = %id, "finishing the job panicked: it ends FAILED by the plain path");
    if catch_unwind(AssertUnwindSafe(|| sink.finished_plainly(&id, Outcome::panicked()))).is_err() {
        tracing::error!(job = %id, "ending the job FAILED panicked too: it is left to recovery at the next start");
    }
}

/// Runs one job within its budget of time and ledger bytes.
async fn run_within_budget<S: LedgerSource>(shared: &Shared, source: &S, ticket: &Ticket) -> Outcome {
    let limits = shared.config.budget;
    let scores: &dyn ReusedScores = &*shared.sink;
    // One table for the whole job, even when a reload swaps the labels meanwhile.
    let labels = shared.labels.current();
    let run = execute_with(source, &labels, &ticket.policy, &ticket.spec, shared.config.view, scores);
    let run = budget::within(ByteBudget::new(limits.ledger_bytes_max), tokio::time::timeout(limits.deadline, run));
    // The run's own panics, caught here so the sink still gets the job (see `run_job`).
    match AssertUnwindSafe(run).catch_unwind().await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(_elapsed)) => {
            tracing::warn!(job = %ticket.id, deadline_s = limits.deadline.as_secs(), "the job ran out of time");
            Outcome::out_of_time(limits.deadline)
        }
        Err(_) => {
            tracing::error!(job = %ticket.id, "the job's run panicked: it ends FAILED");
            Outcome::panicked()
        }
    }
}

/// A compute thread's slot for one running job; given back (and the dispatcher woken) when the
/// job's task ends, however it ends.
struct InFlightSlot {
    in_flight: Rc<Cell<usize>>,
    slot_freed: Rc<Notify>,
}

impl Drop for InFlightSlot {
    fn drop(&mut self) {
        self.in_flight.set(self.in_flight.get() - 1);
        self.slot_freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::labels::Labels;
    use crate::ledger::demo::DemoLedger;
    use crate::ledger::model::TokenProgram;
    use crate::ledger::wire::{KeyedAccount, SignatureInfo, TransactionResult, UiAccount, WithContext};
    use crate::ledger::LedgerError;
    use crate::pubkey::{Pubkey, Signature};
    use std::sync::mpsc;

    struct Collect(std::sync::Mutex<mpsc::Sender<(Ticket, Outcome)>>);

    impl ReusedScores for Collect {
        fn score_of(&self, _: &str, _: &crate::engine::policy::Policy) -> Option<crate::engine::report::Score> {
            None
        }
    }

    impl JobSink for Collect {
        fn started(&self, _: &Ticket) -> Result<(), Outcome> {
            Ok(())
        }
        fn finished(&self, ticket: Ticket, outcome: Outcome) {
            if let Ok(tx) = self.0.lock() {
                let _ = tx.send((ticket, outcome));
            }
        }
        fn finished_plainly(&self, id: &str, outcome: Outcome) {
            let ticket = Ticket::new(id, JobSpec::Analysis { wallet: Pubkey::default() });
            self.finished(ticket, outcome);
        }
    }

    fn config(threads: usize, queue_capacity: usize) -> PoolConfig {
        PoolConfig {
            threads,
            queue_capacity,
            jobs_in_flight_max: 4,
            pin: true,
            view: ViewOptions::default(),
            budget: JobBudget::default(),
        }
    }

    #[test]
    fn a_thread_without_a_ledger_source_fails_the_start() {
        let seed = crate::config::DEMO_SEED_DEFAULT;
        let (tx, _rx) = mpsc::channel();
        let sink = Arc::new(Collect(std::sync::Mutex::new(tx)));
        let refuse_second = move |i: usize| match i {
            1 => Err("snapshot /missing: no such directory".to_owned()),
            _ => Ok(DemoLedger::new(seed)),
        };
        let started =
            ComputePool::start(config(3, 8), LiveLabels::fixed(Labels::builtin()), refuse_second, sink.clone());
        let error = started.err().expect("the start fails");
        assert!(error.contains("compute thread 1") && error.contains("/missing"), "{error}");
        let panics = |_: usize| -> Result<DemoLedger, String> { panic!("opening the source panicked") };
        let error = ComputePool::start(config(1, 8), LiveLabels::fixed(Labels::builtin()), panics, sink)
            .err()
            .expect("the start fails");
        assert!(error.contains("before opening"), "{error}");
    }

    #[test]
    fn runs_every_ticket_once_and_reports_it() {
        let (tx, rx) = mpsc::channel();
        let seed = crate::config::DEMO_SEED_DEFAULT;
        let pool = ComputePool::start(
            config(2, 64),
            LiveLabels::fixed(Labels::builtin()),
            move |_| Ok(DemoLedger::new(seed)),
            Arc::new(Collect(std::sync::Mutex::new(tx))),
        )
        .unwrap();
        let demo = DemoLedger::new(seed);
        let names = ["clean", "open_delegation", "poisoning_victim", "token_mint", "busy_trader"];
        for (i, name) in names.iter().enumerate() {
            let wallet = demo.archetype(name).unwrap();
            pool.submit(Ticket::new(format!("an_{i}"), JobSpec::Analysis { wallet })).unwrap();
        }
        let a = demo.archetype("sybil_a").unwrap();
        let b = demo.archetype("sybil_b").unwrap();
        pool.submit(Ticket::new("cmp", JobSpec::Comparison { wallet_a: a, wallet_b: b, reuse: [None, None] })).unwrap();
        let mut done: Vec<(Ticket, Outcome)> =
            (0..6).map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap()).collect();
        done.sort_by(|x, y| x.0.id.cmp(&y.0.id));
        assert!(pool.shutdown().is_empty());
        assert!(rx.try_recv().is_err(), "nothing ran twice");
        for (ticket, outcome) in &done {
            match (ticket.id.as_str(), outcome) {
                ("an_3", Outcome::Failed { code, .. }) => assert_eq!(code.as_str(), "ACCOUNT_NOT_ELIGIBLE"),
                (_, Outcome::Ready { payload }) => {
                    let json: serde_json::Value = serde_json::from_slice(payload).unwrap();
                    assert!(json.get("score").is_some() || json.get("relationship").is_some(), "{}", ticket.id);
                }
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    /// The demo ledger, with a hook run before each account read (to panic, or to block).
    struct Hooked<F>(DemoLedger, F);

    impl<F: Fn(&Pubkey)> LedgerSource for Hooked<F> {
        fn name(&self) -> &'static str {
            "demo"
        }
        fn synthetic(&self) -> bool {
            true
        }
        async fn get_account_info(&self, a: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
            (self.1)(a);
            self.0.get_account_info(a).await
        }
        async fn get_multiple_accounts(
            &self,
            a: &[Pubkey],
        ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
            self.0.get_multiple_accounts(a).await
        }
        async fn get_token_accounts_by_owner(
            &self,
            owner: &Pubkey,
            program: TokenProgram,
        ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
            self.0.get_token_accounts_by_owner(owner, program).await
        }
        async fn get_nonce_accounts_by_authority(
            &self,
            authority: &Pubkey,
        ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
            self.0.get_nonce_accounts_by_authority(authority).await
        }
        async fn get_signatures_for_address(
            &self,
            a: &Pubkey,
            before: Option<&Signature>,
            limit: u32,
        ) -> Result<Vec<SignatureInfo>, LedgerError> {
            self.0.get_signatures_for_address(a, before, limit).await
        }
        async fn get_transactions(&self, s: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
            self.0.get_transactions(s).await
        }
    }

    #[test]
    fn a_panicking_run_ends_failed_and_frees_its_slot() {
        let (tx, rx) = mpsc::channel();
        let seed = crate::config::DEMO_SEED_DEFAULT;
        let demo = DemoLedger::new(seed);
        let bomb = demo.archetype("clean").unwrap();
        // One job in flight at a time: a slot lost to the panic would stall the second job.
        let config = PoolConfig { jobs_in_flight_max: 1, ..config(1, 8) };
        let pool = ComputePool::start(
            config,
            LiveLabels::fixed(Labels::builtin()),
            move |_| {
                Ok(Hooked(DemoLedger::new(seed), move |a: &Pubkey| {
                    assert!(*a != bomb, "a bug in reading this account")
                }))
            },
            Arc::new(Collect(std::sync::Mutex::new(tx))),
        )
        .unwrap();
        let other = demo.archetype("open_delegation").unwrap();
        for (id, wallet) in [("an_bomb", bomb), ("an_next", other)] {
            pool.submit(Ticket::new(id, JobSpec::Analysis { wallet })).unwrap();
        }
        let first = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        let second = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        assert!(pool.shutdown().is_empty());
        match first {
            (t, Outcome::Failed { code, .. }) if t.id == "an_bomb" => assert_eq!(code.as_str(), "ANALYSIS_FAILED"),
            other => panic!("the panicking job ends FAILED: {other:?}"),
        }
        assert!(matches!(second, (t, Outcome::Ready { .. }) if t.id == "an_next"));
    }

    /// `Collect`, panicking in `started` for ticket `an_start` and in `finished` for
    /// `an_finish`.
    struct Panicky(Collect);

    impl ReusedScores for Panicky {
        fn score_of(&self, _: &str, _: &crate::engine::policy::Policy) -> Option<crate::engine::report::Score> {
            None
        }
    }

    impl JobSink for Panicky {
        fn started(&self, ticket: &Ticket) -> Result<(), Outcome> {
            assert!(ticket.id != "an_start", "a bug in starting this job");
            self.0.started(ticket)
        }
        fn finished(&self, ticket: Ticket, outcome: Outcome) {
            assert!(ticket.id != "an_finish", "a bug in finishing this job");
            self.0.finished(ticket, outcome)
        }
        fn finished_plainly(&self, id: &str, outcome: Outcome) {
            self.0.finished_plainly(id, outcome)
        }
    }

    #[test]
    fn a_panicking_sink_ends_the_job_failed_and_frees_its_slot() {
        let (tx, rx) = mpsc::channel();
        let seed = crate::config::DEMO_SEED_DEFAULT;
        let demo = DemoLedger::new(seed);
        // One job in flight at a time: a slot lost to a panic would stall the jobs after it.
        let config = PoolConfig { jobs_in_flight_max: 1, ..config(1, 8) };
        let sink = Arc::new(Panicky(Collect(std::sync::Mutex::new(tx))));
        let pool =
            ComputePool::start(config, LiveLabels::fixed(Labels::builtin()), move |_| Ok(DemoLedger::new(seed)), sink)
                .unwrap();
        let wallet = demo.archetype("clean").unwrap();
        for id in ["an_start", "an_finish", "an_next"] {
            pool.submit(Ticket::new(id, JobSpec::Analysis { wallet })).unwrap();
        }
        let done: Vec<(Ticket, Outcome)> = (0..3).map(|_| rx.recv_timeout(Duration::from_secs(30)).unwrap()).collect();
        assert!(pool.shutdown().is_empty());
        assert!(rx.try_recv().is_err(), "each job is reported once");
        for (ticket, outcome) in &done[..2] {
            match outcome {
                Outcome::Failed { code, .. } => assert_eq!(code.as_str(), "ANALYSIS_FAILED", "{}", ticket.id),
                other => panic!("{} ends FAILED: {other:?}", ticket.id),
            }
        }
        let ids: Vec<&str> = done.iter().map(|(t, _)| t.id.as_str()).collect();
        assert_eq!(ids, ["an_start", "an_finish", "an_next"]);
        assert!(matches!(done[2].1, Outcome::Ready { .. }), "the next job runs");
    }

    #[test]
    fn a_full_queue_hands_the_ticket_back() {
        let (tx, _rx) = mpsc::channel();
        // The only thread's only slot blocks in its first read until the gate's sender is
        // dropped, so after it popped the first ticket the queue only fills.
        let (open_gate, gate) = mpsc::channel::<()>();
        let gate = Arc::new(std::sync::Mutex::new(gate));
        let seed = crate::config::DEMO_SEED_DEFAULT;
        let blocks = move |_| {
            let gate = gate.clone();
            Ok(Hooked(DemoLedger::new(seed), move |_: &Pubkey| drop(gate.lock().map(|g| g.recv()))))
        };
        let config = PoolConfig { jobs_in_flight_max: 1, ..config(1, 2) };
        let pool = ComputePool::start(
            config,
            LiveLabels::fixed(Labels::builtin()),
            blocks,
            Arc::new(Collect(std::sync::Mutex::new(tx))),
        )
        .unwrap();
        let t = |id: &str| Ticket::new(id, JobSpec::Analysis { wallet: crate::pubkey::Pubkey::default() });
        assert!(pool.submit(t("running")).is_ok());
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while pool.depth() > 0 {
            assert!(std::time::Instant::now() < deadline, "the first ticket is popped");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(pool.submit(t("1")).is_ok());
        assert!(pool.submit(t("2")).is_ok());
        assert_eq!(pool.submit(t("3")), Err(t("3")));
        assert_eq!(pool.depth(), 2);
        // The gate opens once `shutdown` has stopped popping: the running job finishes, the
        // two queued tickets are handed back.
        let opener = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(open_gate);
        });
        assert_eq!(pool.shutdown().len(), 2, "queued tickets are handed back at shutdown");
        opener.join().unwrap();
    }
}
