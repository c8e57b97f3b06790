//! The `xray-monitors` thread: every watched wallet checked on an interval, by one
//! `getSignaturesForAddress` until the newest signature the last check saw; new activity
//! admits a re-analysis through the normal job path, carrying the monitor's thresholds, and
//! the completion decides on the event (`jobs::sink`).
//!
//! Owns: `Scheduler` (start, stop), the in-memory table of watches (monitor × wallet, reloaded
//! from the store every `MONITOR_RELOAD_MS`, so monitors created, changed or deleted on any node
//! are seen), and one check's steps. Its thread runs a current-thread tokio runtime with its own
//! ledger source (wrapped in the node's ledger cache) and `LocalSet`.
//!
//! Invariant: bounded — at most `watches_max` watches on a node (the rest counted in
//! `/metrics` as left out), `checks_in_flight_max` checks at once and `CHECKS_PER_ACCOUNT_MAX`
//! of them per account (fair: the most overdue check of an account under its share goes
//! first), each upstream read within `MONITOR_CHECK_TIMEOUT_MS`.
//! Invariant: a cursor moves only after the re-analysis of what it passed was admitted (or
//! found live): a crash in between makes the next check see the same activity again, and its
//! re-analysis finds no new change against the first one's, so no event is made twice.
//! Charging: each re-analysis is one quota unit of the monitor's key (`walletAnalysis`, as a
//! `refresh` would be); a quiet check is free. The first check of a wallet makes its baseline:
//! an analysis unless the account has a fresh one.
//! Deliberately absent (next): cluster ownership by lease — on `--store etcd:` every node
//! checks every monitor today, which is correct (admission of a refresh on each node makes
//! equal jobs, and only changes make events) but not yet economical.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::auth::key::KeyId;
use crate::auth::record::KeyState;
use crate::auth::table::{KeyEntry, KeyTable};
use crate::clock::now_unix_ms;
use crate::config::{self, SourceSpec, MONITOR_CHECK_TIMEOUT_MS, MONITOR_RELOAD_MS, MONITOR_TICK_MS};
use crate::jobs::admission::{Admission, AdmitRequest, Decision, Work};
use crate::ledger::cache::{Cached, LedgerCache};
use crate::ledger::read::LedgerSource;
use crate::ledger::rpc::RpcOptions;
use crate::ledger::source::Source;
use crate::metrics::{CheckOutcome, MONITORS};
use crate::pubkey::{Pubkey, Signature};

use super::record::{MonitorRecord, WatchCursor};
use super::registry::Registry;

/// Checks of one account in flight at once, at most (fairness across accounts).
pub const CHECKS_PER_ACCOUNT_MAX: usize = 8;

/// How the scheduler runs (from `ServeConfig`).
#[derive(Debug, Clone)]
pub struct SchedulerSettings {
    pub interval: Duration,
    pub checks_in_flight_max: usize,
    pub watches_max: usize,
}

/// What the scheduler works with.
pub struct SchedulerDeps {
    pub registry: Arc<Registry>,
    pub admission: Arc<Admission>,
    pub keys: Arc<KeyTable>,
    pub ledger: SourceSpec,
    pub cache: Option<Arc<LedgerCache>>,
}

/// The running scheduler; `stop` ends its thread.
pub struct Scheduler {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Starts the `xray-monitors` thread; returns once its ledger source is open.
    pub fn start(deps: SchedulerDeps, settings: SchedulerSettings) -> Result<Scheduler, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let (opened, opened_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let thread_stop = stop.clone();
        let thread = std::thread::Builder::new()
            .name("xray-monitors".into())
            .spawn(move || {
                let runtime = match crate::ledger::runtime() {
                    Ok(runtime) => runtime,
                    Err(e) => return drop(opened.send(Err(e))),
                };
                let options = RpcOptions { concurrency_max: settings.checks_in_flight_max, ..RpcOptions::default() };
                let source = match Source::open(&deps.ledger, options) {
                    Ok(source) => Cached::new(source, deps.cache.clone()),
                    Err(e) => return drop(opened.send(Err(format!("monitor scheduler ledger source: {e}")))),
                };
                let _ = opened.send(Ok(()));
                let local = tokio::task::LocalSet::new();
                let context = Rc::new(Context { deps, settings, source, stop: thread_stop });
                local.block_on(&runtime, run(context));
            })
            .map_err(|e| format!("spawn the monitor scheduler: {e}"))?;
        match opened_rx.recv() {
            Ok(Ok(())) => Ok(Scheduler { stop, thread: Some(thread) }),
            Ok(Err(e)) => Err(e),
            Err(_) => Err("the monitor scheduler thread ended before it started".into()),
        }
    }

    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

struct Context {
    deps: SchedulerDeps,
    settings: SchedulerSettings,
    source: Cached<Source>,
    stop: Arc<AtomicBool>,
}

/// One watched wallet of one monitor.
struct Watch {
    monitor: Arc<MonitorRecord>,
    due_ms: u64,
    busy: bool,
}

type Watches = HashMap<(String, Pubkey), Watch>;

async fn run(context: Rc<Context>) {
    let watches: Rc<RefCell<Watches>> = Rc::new(RefCell::new(HashMap::new()));
    let in_flight: Rc<RefCell<HashMap<String, usize>>> = Rc::new(RefCell::new(HashMap::new()));
    let mut next_reload_ms = 0;
    while !context.stop.load(Ordering::Acquire) {
        let now_ms = now_unix_ms();
        if now_ms >= next_reload_ms {
            reload(&context, &mut watches.borrow_mut(), now_ms);
            next_reload_ms = now_ms + MONITOR_RELOAD_MS;
        }
        let started = due(&context, &mut watches.borrow_mut(), &in_flight.borrow(), now_ms);
        for (key, account) in started {
            *in_flight.borrow_mut().entry(account.clone()).or_default() += 1;
            let (context, watches, in_flight) = (context.clone(), watches.clone(), in_flight.clone());
            tokio::task::spawn_local(async move {
                let monitor = watches.borrow().get(&key).map(|w| w.monitor.clone());
                if let Some(monitor) = monitor {
                    MONITORS.checked(check(&context, &monitor, &key.1).await);
                }
                if let Some(watch) = watches.borrow_mut().get_mut(&key) {
                    watch.busy = false;
                }
                let mut counts = in_flight.borrow_mut();
                if let Some(count) = counts.get_mut(&account) {
                    *count -= 1;
                    if *count == 0 {
                        counts.remove(&account);
                    }
                }
            });
        }
        tokio::time::sleep(Duration::from_millis(MONITOR_TICK_MS)).await;
    }
}

/// Reads every monitor again: new watches are due at once, kept ones keep their schedule,
/// removed ones go (a check in flight ends on its own).
fn reload(context: &Context, watches: &mut Watches, now_ms: u64) {
    let mut fresh: Watches = HashMap::with_capacity(watches.len());
    let (mut after, mut left_out) = (None::<String>, 0u64);
    loop {
        let page = match context.deps.registry.all(after.as_deref(), config::STORE_PAGE_LEN_MAX) {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = ?e, "reading the monitors failed; the watches stay as they were");
                return;
            }
        };
        let full = page.len() == config::STORE_PAGE_LEN_MAX;
        after = page.last().map(|m| m.id.clone());
        for monitor in page {
            let monitor = Arc::new(monitor);
            for wallet in monitor.pubkeys() {
                if fresh.len() >= context.settings.watches_max {
                    left_out += 1;
                    continue;
                }
                let key = (monitor.id.clone(), wallet);
                let (due_ms, busy) = watches.get(&key).map_or((now_ms, false), |w| (w.due_ms, w.busy));
                fresh.insert(key, Watch { monitor: monitor.clone(), due_ms, busy });
            }
        }
        if !full {
            break;
        }
    }
    MONITORS.set_watches(fresh.len() as u64, left_out);
    *watches = fresh;
}

/// The watches to check now: due, not in flight, their account under its share — the most
/// overdue first, within the free slots. Marks them busy and due again an interval later.
fn due(
    context: &Context,
    watches: &mut Watches,
    in_flight: &HashMap<String, usize>,
    now_ms: u64,
) -> Vec<((String, Pubkey), String)> {
    let mut ready: Vec<(&(String, Pubkey), u64)> =
        watches.iter().filter(|(_, w)| !w.busy && w.due_ms <= now_ms).map(|(k, w)| (k, w.due_ms)).collect();
    ready.sort_by_key(|(_, due_ms)| *due_ms);
    MONITORS.set_lag_ms(ready.first().map_or(0, |(_, due_ms)| now_ms - due_ms).saturating_sub(MONITOR_TICK_MS));
    let busy: usize = in_flight.values().sum();
    let mut free = context.settings.checks_in_flight_max.saturating_sub(busy);
    let mut started: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for (key, _) in ready {
        if free == 0 {
            break;
        }
        let account = watches[key].monitor.account.as_str();
        let held = in_flight.get(account).copied().unwrap_or(0) + started.get(account).copied().unwrap_or(0);
        if held >= CHECKS_PER_ACCOUNT_MAX {
            continue;
        }
        *started.entry(account).or_default() += 1;
        free -= 1;
        out.push((key.clone(), account.to_owned()));
    }
    let interval_ms = context.settings.interval.as_millis() as u64;
    for (key, _) in &out {
        if let Some(watch) = watches.get_mut(key) {
            watch.busy = true;
            watch.due_ms = now_ms + interval_ms;
        }
    }
    out
}

/// One check of `wallet` for `monitor`.
async fn check(context: &Context, monitor: &MonitorRecord, wallet: &Pubkey) -> CheckOutcome {
    let registry = &context.deps.registry;
    let cursor = match registry.cursor(&monitor.id, wallet) {
        Ok(cursor) => cursor,
        Err(e) => {
            tracing::warn!(monitor = %monitor.id, error = ?e, "reading a watch cursor failed");
            return CheckOutcome::Failed;
        }
    };
    let baseline = cursor.as_ref().is_none_or(|c| c.last_analysis_id.is_none());
    let since = cursor.as_ref().and_then(|c| c.last_signature.as_deref()).and_then(|s| Signature::parse(s).ok());
    let read = async {
        match &since {
            Some(since) => context.source.get_signatures_until(wallet, since, None, 1).await,
            None => context.source.get_signatures_for_address(wallet, None, 1).await,
        }
    };
    let newest = match tokio::time::timeout(Duration::from_millis(MONITOR_CHECK_TIMEOUT_MS), read).await {
        Ok(Ok(page)) => page.into_iter().next().map(|info| info.signature),
        Ok(Err(e)) => {
            tracing::warn!(monitor = %monitor.id, error = %e, "a monitor check's ledger read failed");
            return CheckOutcome::Failed;
        }
        Err(_) => return CheckOutcome::Failed,
    };
    let now_ms = now_unix_ms();
    let previous =
        cursor.clone().unwrap_or(WatchCursor { last_signature: None, last_analysis_id: None, checked_at_ms: 0 });
    if !baseline && newest.is_none() {
        let quiet = WatchCursor { checked_at_ms: now_ms, ..previous };
        return match registry.keep_cursor(&monitor.id, wallet, &quiet) {
            Ok(()) => CheckOutcome::Quiet,
            Err(_) => CheckOutcome::Failed,
        };
    }
    let Some(analysis_id) = reanalyze(context, monitor, wallet, !baseline, now_ms).await else {
        return CheckOutcome::Refused;
    };
    let moved = WatchCursor {
        last_signature: newest.or(previous.last_signature),
        last_analysis_id: Some(analysis_id),
        checked_at_ms: now_ms,
    };
    match registry.keep_cursor(&monitor.id, wallet, &moved) {
        Ok(()) => CheckOutcome::Active,
        Err(e) => {
            tracing::warn!(monitor = %monitor.id, error = ?e, "keeping a watch cursor failed; the next check sees the activity again");
            CheckOutcome::Failed
        }
    }
}

/// Admits the re-analysis of `wallet` for `monitor` (`refresh`: always new work; the baseline
/// takes a fresh analysis of the account when there is one); the id of the job that answers.
async fn reanalyze(
    context: &Context,
    monitor: &MonitorRecord,
    wallet: &Pubkey,
    refresh: bool,
    now_ms: u64,
) -> Option<String> {
    let key = key_of(&context.deps.keys, monitor, now_ms)?;
    let (work, link) = (Work::Analysis { wallet: *wallet }, monitor.link());
    let request = AdmitRequest {
        key: &key,
        work: &work,
        refresh,
        callback_url: None,
        now_ms,
        idempotency: None,
        monitor: Some(&link),
    };
    match context.deps.admission.decide(&request).await {
        Ok(Decision::Admitted(record)) => Some(record.id),
        Ok(Decision::Live(job, _)) => Some(job.record.id.clone()),
        Ok(Decision::Fresh(job)) => Some(job.record.id.clone()),
        Ok(Decision::Replayed(_)) => None,
        Err(e) => {
            tracing::info!(monitor = %monitor.id, error = %e, "a monitor's re-analysis was not admitted; checked again next interval");
            None
        }
    }
}

/// The key a monitor's re-analyses are charged to: the one that made it, or its successor
/// after a rotation; `None` when that key is revoked or expired (the monitor waits).
fn key_of(keys: &KeyTable, monitor: &MonitorRecord, now_ms: u64) -> Option<Arc<KeyEntry>> {
    let id = KeyId::parse(&monitor.key_id).ok()?;
    let key = keys.successor_of(&keys.get(&id)?);
    (key.state_at(now_ms) == KeyState::Active).then_some(key)
}
