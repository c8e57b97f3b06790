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
//! found live); that re-analysis is confirmed READY by a later check (one read of the job) or,
//! FAILED, done again — activity is never passed over by a re-analysis that failed. Each
//! re-analysis is compared with the watch's last confirmed one, not the account's newest.
//! Charging: each re-analysis is one quota unit of the monitor's key (`walletAnalysis`, as a
//! `refresh` would be); a quiet check is free. The first check of a wallet makes its baseline:
//! an analysis unless the account has a fresh one.
//! Budget: the re-analyses a monitor's wallets trigger are at most its `reanalysesPerDay` per
//! UTC day (`MonitorBudget`, one record per monitor, counted in the claim's batch and given
//! back when the re-analysis was not admitted and charged). Counted: a re-analysis of new
//! activity and the redo of a failed one; not counted: a baseline (one per wallet added) and a
//! labels reload's re-screen (one per reload that exposes the wallet). A check that would
//! re-analyze past it records `budget_exhausted` (with the next period's start) on the cursor,
//! charges nothing and leaves the cursor before the activity: the first check after the reset
//! sees it again. A check killed between its claim and its admission may have counted a
//! re-analysis that never ran: the budget errs toward fewer re-analyses, never more.
//! Dust: new activity (no redo, no exposure) whose every transaction is dust (`dust`: the
//! wallet signed none, nothing left it, what arrived is below the monitor's `dustLamports` and
//! `MONITOR_DUST_TOKEN_FRACTION_DEFAULT`) moves the
//! cursor past it with no re-analysis and no charge. Deciding reads the new transactions (at
//! most `MONITOR_DUST_SIGNATURES_MAX`, the check's one signatures page, through the ledger
//! cache); what cannot be read is not dust. The budget is asked first: while it is spent no
//! transaction is read.
//! Cluster: on `--store etcd:` a node checks the monitors it owns — rendezvous hashing of the
//! monitor's id over the live nodes (their leases), read at every reload — so a node that dies
//! has its monitors adopted by the others once its lease expires. In a hand-over two nodes may
//! check one wallet at once: the claim (a compare-and-set on the cursor) lets one admit.
//! Invariant: a claim (`WatchCursor::pending`) is made before a re-analysis is admitted and
//! cleared once the cursor moved past it; a claim older than `MONITOR_CLAIM_TTL_MS` belongs to a
//! check that died, and the next check moves the cursor past its re-analysis if it was admitted
//! (the account's newest job of the wallet is the monitor's and no older than the claim), else
//! checks again — so a kill at any point neither loses activity nor admits it twice.

use std::cell::{Cell, RefCell};
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
use crate::config::{
    SourceSpec, MONITOR_ADMIT_TIMEOUT_MS, MONITOR_CHECK_TIMEOUT_MS, MONITOR_CLAIM_TTL_MS, MONITOR_DUST_SIGNATURES_MAX,
    MONITOR_REFILL_MS, MONITOR_RELOAD_MS, MONITOR_RELOAD_PAGE_LEN, MONITOR_TICK_MS, MONITOR_WRITE_ATTEMPTS_MAX,
};
use crate::jobs::admission::{Admission, AdmitRequest, Decision, Work};
use crate::labels::live::LiveLabels;
use crate::ledger::cache::{Cached, LedgerCache};
use crate::ledger::read::{cut_at, LedgerSource};
use crate::ledger::rpc::RpcOptions;
use crate::ledger::source::Source;
use crate::ledger::wire::SignatureInfo;
use crate::metrics::{CheckOutcome, MONITORS};
use crate::pubkey::{Pubkey, Signature};
use crate::store::etcd::EtcdStore;
use crate::store::{Expect, JobState, Subject};

use super::dust::{activity_class, Activity, DustRule};
use super::record::{
    ActivityOutcome, MonitorBudget, MonitorRecord, PendingCheck, WatchCursor, ACTIVITY_BUDGET_EXHAUSTED, ACTIVITY_DUST,
    ACTIVITY_REANALYZED,
};
use super::registry::Registry;
use super::screen::{self, Screen};

/// Checks of one account in flight at once, at most (fairness across accounts).
pub const CHECKS_PER_ACCOUNT_MAX: usize = 8;

/// How the scheduler runs (from `ServeConfig`).
#[derive(Debug, Clone)]
pub struct SchedulerSettings {
    pub interval: Duration,
    pub checks_in_flight_max: usize,
    pub watches_max: usize,
    /// How deep a re-screen looks into a wallet's held history (the analyses' depth).
    pub history_depth: u32,
}

/// What the scheduler works with.
pub struct SchedulerDeps {
    pub registry: Arc<Registry>,
    pub admission: Arc<Admission>,
    pub keys: Arc<KeyTable>,
    pub ledger: SourceSpec,
    pub cache: Option<Arc<LedgerCache>>,
    /// On a cluster node, the cluster: this node checks the monitors it owns (rendezvous
    /// hashing over the live nodes), and adopts a dead node's at the next reload.
    pub cluster: Option<Arc<EtcdStore>>,
    /// The labels in force: after a reload each watch is re-screened at its next check.
    pub labels: Arc<LiveLabels>,
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
    /// The labels generation this watch was last screened against (a new watch: the one in
    /// force, which its baseline uses).
    screened: u64,
}

type Watches = HashMap<(String, Pubkey), Watch>;

async fn run(context: Rc<Context>) {
    let watches: Rc<RefCell<Watches>> = Rc::new(RefCell::new(HashMap::new()));
    let in_flight: Rc<RefCell<HashMap<String, usize>>> = Rc::new(RefCell::new(HashMap::new()));
    // A finished check wakes the loop, so its slot is filled at once rather than at the next
    // tick (measured: waiting for the tick capped a node at half of in-flight ÷ latency).
    let finished = Rc::new(tokio::sync::Notify::new());
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
            let (context, watches, in_flight, finished) =
                (context.clone(), watches.clone(), in_flight.clone(), finished.clone());
            tokio::task::spawn_local(async move {
                let found = watches.borrow().get(&key).map(|w| (w.monitor.clone(), w.screened));
                let generation = context.deps.labels.generation();
                let mut screened = None;
                if let Some((monitor, last_screened)) = found {
                    let screen = (last_screened < generation)
                        .then(|| context.deps.labels.listed_since(last_screened).map_or(Screen::All, Screen::Since));
                    let done = Cell::new(screen.is_none());
                    let outcome = check(&context, &monitor, &key.1, screen.as_ref(), &done).await;
                    screened = done.get().then_some(generation);
                    MONITORS.checked(outcome);
                }
                if let Some(watch) = watches.borrow_mut().get_mut(&key) {
                    watch.busy = false;
                    watch.screened = screened.unwrap_or(watch.screened);
                }
                let mut counts = in_flight.borrow_mut();
                if let Some(count) = counts.get_mut(&account) {
                    *count -= 1;
                    if *count == 0 {
                        counts.remove(&account);
                    }
                }
                finished.notify_one();
            });
        }
        // At most one fill per `MONITOR_REFILL_MS` (a fill sorts the due watches: not once
        // per finished check).
        let filled = tokio::time::Instant::now();
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(MONITOR_TICK_MS)) => {}
            _ = finished.notified() => {}
        }
        tokio::time::sleep_until(filled + Duration::from_millis(MONITOR_REFILL_MS)).await;
    }
}

/// Reads every monitor again: new watches are due at once, kept ones keep their schedule,
/// removed ones go (a check in flight ends on its own).
fn reload(context: &Context, watches: &mut Watches, now_ms: u64) {
    let owners = match &context.deps.cluster {
        None => None,
        Some(etcd) => match etcd.live_node_ids() {
            Ok(nodes) => Some((nodes, etcd.node_id().to_owned())),
            Err(e) => {
                tracing::warn!(error = %e, "reading the live nodes failed; the watches stay as they were");
                return;
            }
        },
    };
    let owned = |monitor: &MonitorRecord| match &owners {
        None => true,
        Some((nodes, me)) => owner_of(&monitor.id, nodes).is_none_or(|owner| owner == me),
    };
    // Every owned watch, grouped by account; then taken round-robin across accounts up to
    // `watches_max`, so one account's monitors cannot crowd out the others'.
    let mut by_account: std::collections::BTreeMap<String, Vec<(Arc<MonitorRecord>, Pubkey)>> = Default::default();
    let mut after = None::<String>;
    loop {
        let page = match context.deps.registry.all(after.as_deref(), MONITOR_RELOAD_PAGE_LEN) {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(error = ?e, "reading the monitors failed; the watches stay as they were");
                return;
            }
        };
        let full = page.len() == MONITOR_RELOAD_PAGE_LEN;
        after = page.last().map(|m| m.id.clone());
        for monitor in page.into_iter().filter(|m| owned(m)) {
            let monitor = Arc::new(monitor);
            let list = by_account.entry(monitor.account.clone()).or_default();
            list.extend(monitor.pubkeys().into_iter().map(|wallet| (monitor.clone(), wallet)));
        }
        if !full {
            break;
        }
    }
    let total: usize = by_account.values().map(Vec::len).sum();
    let generation = context.deps.labels.generation();
    let mut fresh: Watches = HashMap::with_capacity(total.min(context.settings.watches_max));
    let mut lists: Vec<std::vec::IntoIter<(Arc<MonitorRecord>, Pubkey)>> =
        by_account.into_values().map(Vec::into_iter).collect();
    while fresh.len() < context.settings.watches_max && !lists.is_empty() {
        lists.retain_mut(|list| match list.next() {
            Some((monitor, wallet)) if fresh.len() < context.settings.watches_max => {
                let key = (monitor.id.clone(), wallet);
                let (due_ms, busy, screened) =
                    watches.get(&key).map_or((now_ms, false, generation), |w| (w.due_ms, w.busy, w.screened));
                fresh.insert(key, Watch { monitor, due_ms, busy, screened });
                true
            }
            _ => false,
        });
    }
    let left_out = total.saturating_sub(fresh.len()) as u64;
    MONITORS.set_watches(fresh.len() as u64, left_out);
    *watches = fresh;
}

/// The node that checks `monitor_id` among `nodes`: the one with the highest hash of (node,
/// monitor) — rendezvous hashing, so a node that leaves moves only its own monitors.
/// `None` when no node is listed (this node then checks everything it sees).
fn owner_of<'n>(monitor_id: &str, nodes: &'n [String]) -> Option<&'n String> {
    use sha2::{Digest, Sha256};
    nodes.iter().max_by_key(|node| {
        let digest = Sha256::new()
            .chain_update(node.as_bytes())
            .chain_update([0])
            .chain_update(monitor_id.as_bytes())
            .finalize();
        u64::from_be_bytes(digest[..8].try_into().unwrap_or([0; 8]))
    })
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

/// One check of `wallet` for `monitor`: read the cursor; finish a claim a dead check left;
/// settle the last re-analysis (READY confirms it, FAILED has it redone); read what is newer
/// than the cursor's signature; on new activity (or a redo) claim the cursor (compare-and-set:
/// of two checks — two nodes in a hand-over — one wins), admit the re-analysis, then move the
/// cursor past it.
///
/// `screen`: after a labels reload, what to re-screen the wallet against; `screened` is set
/// once that is done — not exposed, or exposed and its re-analysis admitted.
async fn check(
    context: &Context,
    monitor: &MonitorRecord,
    wallet: &Pubkey,
    screen: Option<&Screen>,
    screened: &Cell<bool>,
) -> CheckOutcome {
    let registry = &context.deps.registry;
    let (cursor, expect) = match registry.cursor_at(&monitor.id, wallet) {
        Ok(found) => found,
        Err(e) => {
            tracing::warn!(monitor = %monitor.id, error = ?e, "reading a watch cursor failed");
            return CheckOutcome::Failed;
        }
    };
    let now_ms = now_unix_ms();
    let cursor = cursor.unwrap_or_default();
    if let Some(pending) = &cursor.pending {
        if now_ms.saturating_sub(pending.claimed_at_ms) < MONITOR_CLAIM_TTL_MS {
            return CheckOutcome::Claimed;
        }
        if let Some(outcome) = finish_dead_claim(context, monitor, wallet, &cursor, pending, expect) {
            return outcome;
        }
    }
    // A monitor whose key can no longer be charged costs nothing: no read, no write.
    if key_of(&context.deps.keys, monitor, now_ms).is_none() {
        return CheckOutcome::Refused;
    }
    let Some((mut cursor, settled)) = settled_analysis(context, cursor) else { return CheckOutcome::Failed };
    // The last re-analysis still runs: nothing new is admitted until it settled (a second one
    // would be compared with the same previous analysis and report its change again).
    let mut redo = match settled {
        Settled::Live => {
            let quiet = WatchCursor { checked_at_ms: now_ms, pending: None, ..cursor };
            return match registry.write_cursor(&monitor.id, wallet, &quiet, expect) {
                Ok(true) => CheckOutcome::Quiet,
                Ok(false) => CheckOutcome::Claimed,
                Err(_) => CheckOutcome::Failed,
            };
        }
        Settled::Redo => true,
        Settled::Done => false,
    };
    // After a labels reload: a wallet that dealt with a newly listed address is re-analyzed
    // with the labels now in force, from what the node holds (no ledger read for the screen).
    // The cursor says which listed set its analyses and screens reflect: one the node does not
    // know the reloads since (a restart, a hand-over) is screened against every listed address.
    let listed_digest = String::clone(&context.deps.labels.listed_digest());
    let unseen = cursor.labels.as_deref().is_some_and(|seen| seen != listed_digest.as_str());
    // A cursor older than the field takes the labels in force as seen.
    cursor.labels.get_or_insert_with(|| listed_digest.clone());
    let screen = screen.cloned().or_else(|| unseen.then_some(Screen::All));
    let mut exposed = false;
    if let (Some(screen), Some(_)) = (&screen, &cursor.confirmed_analysis_id) {
        let labels = context.deps.labels.current();
        let depth = context.settings.history_depth;
        match screen::exposed(&context.source, &labels, wallet, screen, depth).await {
            Some(true) => {
                tracing::info!(monitor = %monitor.id, wallet = %wallet.to_base58(), "a labels reload exposes a watched wallet: re-analyzed");
                redo = true;
                exposed = true;
            }
            // Not exposed, or nothing held to screen.
            Some(false) | None => {
                screened.set(true);
                cursor.labels = Some(listed_digest.clone());
            }
        }
    }
    let baseline = cursor.confirmed_analysis_id.is_none() && (redo || cursor.last_analysis_id.is_none());
    let activity = match new_activity(context, wallet, cursor.last_signature.as_deref(), baseline).await {
        Ok(activity) => activity,
        Err(outcome) => return outcome,
    };
    let newest = activity.page.first().map(|info| info.signature.clone());
    let written = |c: &WatchCursor, expect| registry.write_cursor(&monitor.id, wallet, c, expect);
    let ended = |written: Result<bool, super::RegistryError>, outcome| match written {
        Ok(true) => outcome,
        Ok(false) => CheckOutcome::Claimed,
        Err(_) => CheckOutcome::Failed,
    };
    if !baseline && !redo && newest.is_none() {
        let quiet = WatchCursor { checked_at_ms: now_ms, pending: None, ..cursor };
        return ended(written(&quiet, expect), CheckOutcome::Quiet);
    }
    // The new activity classified first: dust is moved past for free, and activity that may
    // have taken something of the wallet's is never held by the budget — inflows a stranger
    // sends can spend the budget, and must not hide a drain until tomorrow.
    let dust_rule = DustRule::with_lamports(monitor.dust_lamports());
    let class = match baseline || redo {
        true => Activity::Inbound,
        false => activity_class(&context.source, wallet, &activity.page, activity.complete, &dust_rule).await,
    };
    if class == Activity::Dust {
        let last_activity = Some(ActivityOutcome::new(ACTIVITY_DUST, now_ms, None));
        let moved = WatchCursor {
            last_signature: newest.or(cursor.last_signature.clone()),
            checked_at_ms: now_ms,
            pending: None,
            last_activity,
            ..cursor
        };
        return ended(written(&moved, expect), CheckOutcome::Dust);
    }
    // Past the budget: held, the cursor before the activity.
    let counted = !baseline && !exposed && class == Activity::Inbound;
    let held = |cursor: WatchCursor, expect| {
        let until = MonitorBudget::resets_at_ms(now_ms);
        let last_activity = Some(ActivityOutcome::new(ACTIVITY_BUDGET_EXHAUSTED, now_ms, Some(until)));
        let held = WatchCursor { checked_at_ms: now_ms, pending: None, last_activity, ..cursor };
        ended(written(&held, expect), CheckOutcome::BudgetExhausted)
    };
    if counted {
        match registry.budget_at(&monitor.id) {
            Ok((budget, _)) if budget.take(now_ms, monitor.reanalyses_per_day()).is_none() => {
                return held(cursor, expect)
            }
            Ok(_) => {}
            Err(_) => return CheckOutcome::Failed,
        }
    }
    let claim = WatchCursor {
        pending: Some(PendingCheck { signature: newest.clone(), claimed_at_ms: now_ms }),
        ..cursor.clone()
    };
    match claim_counted(context, monitor, wallet, &claim, expect, counted, now_ms) {
        Ok(true) => {}
        Ok(false) => return held(cursor, expect),
        Err(outcome) => return outcome,
    }
    // Bounded well under the claim's life, so no other check takes this claim for dead.
    let previous = cursor.confirmed_analysis_id.clone();
    let admission = reanalyze(context, monitor, wallet, !baseline, previous, now_ms);
    let admitted = match tokio::time::timeout(Duration::from_millis(MONITOR_ADMIT_TIMEOUT_MS), admission).await {
        Ok(admitted) => admitted,
        // The admission may have committed before it was cut short: the claim stays, and the
        // check that finds it dead (after `MONITOR_CLAIM_TTL_MS`) moves past what it admitted.
        Err(_) => return CheckOutcome::Failed,
    };
    // Counted but not charged (joined a live job, or not admitted): given back.
    if counted && !admitted.as_ref().is_some_and(|(_, charged)| *charged) {
        if let Err(e) = registry.give_back(&monitor.id, now_ms) {
            tracing::warn!(monitor = %monitor.id, error = ?e, "giving back a monitor's budget failed; counted once too many today");
        }
    }
    let settled = match &admitted {
        Some((id, _)) => WatchCursor {
            last_signature: newest.or(cursor.last_signature),
            last_analysis_id: Some(id.clone()),
            confirmed_analysis_id: cursor.confirmed_analysis_id,
            checked_at_ms: now_ms,
            pending: None,
            // Admitted now: it is analyzed with the labels in force.
            labels: Some(listed_digest),
            last_activity: match baseline {
                true => cursor.last_activity,
                false => Some(ActivityOutcome::new(ACTIVITY_REANALYZED, now_ms, None)),
            },
        },
        // Not admitted (quota, a full queue): the claim goes, the activity is seen again.
        None => WatchCursor { pending: None, ..cursor },
    };
    // Settled over the claim only while it is still this check's (read again: a DELETE or a
    // wallet removed meanwhile deleted the cursor, which must not come back).
    let ours = |c: &WatchCursor| c.pending == claim.pending;
    let moved = match registry.cursor_at(&monitor.id, wallet) {
        Ok((Some(current), revision)) if ours(&current) => written(&settled, revision),
        Ok(_) => Ok(false),
        Err(e) => Err(e),
    };
    if let Err(e) = moved {
        tracing::warn!(monitor = %monitor.id, error = ?e, "moving a watch cursor failed; its claim is finished by a later check");
        return CheckOutcome::Failed;
    }
    match admitted {
        Some(_) => {
            screened.set(true);
            CheckOutcome::Active
        }
        None => CheckOutcome::Refused,
    }
}

/// Where a watch's last re-analysis stands (`settled_analysis`).
enum Settled {
    /// None, or READY (confirmed): checks go on.
    Done,
    /// FAILED or gone: its activity was never analyzed — done again.
    Redo,
    /// Still QUEUED or RUNNING.
    Live,
}

/// The cursor with its last re-analysis settled: one point read of the job while it is not yet
/// confirmed — READY confirms it (the next re-analysis is compared with it), FAILED or gone
/// (purged) redoes it (a failed job was refunded), live waits. `None` when the store fails.
fn settled_analysis(context: &Context, mut cursor: WatchCursor) -> Option<(WatchCursor, Settled)> {
    let Some(last) = cursor.last_analysis_id.clone() else { return Some((cursor, Settled::Done)) };
    if cursor.confirmed_analysis_id.as_deref() == Some(last.as_str()) {
        return Some((cursor, Settled::Done));
    }
    let job = match context.deps.registry.store().get_job(&last) {
        Ok(job) => job,
        Err(e) => {
            tracing::warn!(job = %last, error = %e, "reading a monitor's last re-analysis failed");
            return None;
        }
    };
    let settled = match job.map(|j| j.state) {
        Some(JobState::Ready) => {
            cursor.confirmed_analysis_id = Some(last);
            Settled::Done
        }
        Some(JobState::Queued | JobState::Running) => Settled::Live,
        Some(JobState::Failed) | None => Settled::Redo,
    };
    Some((cursor, settled))
}

/// Claims the cursor (`claim`, if it is as `expect` says) and, when `counted`, counts the
/// re-analysis in the monitor's budget in the same batch. `Ok(false)`: the budget is spent.
/// A lost race on the budget alone (another wallet of the monitor counted first) is tried
/// again, at most `MONITOR_WRITE_ATTEMPTS_MAX` times; on the cursor it is `Claimed`.
fn claim_counted(
    context: &Context,
    monitor: &MonitorRecord,
    wallet: &Pubkey,
    claim: &WatchCursor,
    expect: Expect,
    counted: bool,
    now_ms: u64,
) -> Result<bool, CheckOutcome> {
    let registry = &context.deps.registry;
    for _ in 0..MONITOR_WRITE_ATTEMPTS_MAX {
        let budget = match counted {
            false => None,
            true => {
                let (budget, budget_expect) = registry.budget_at(&monitor.id).map_err(|_| CheckOutcome::Failed)?;
                match budget.take(now_ms, monitor.reanalyses_per_day()) {
                    Some(taken) => Some((taken, budget_expect)),
                    None => return Ok(false),
                }
            }
        };
        match registry.claim(&monitor.id, wallet, claim, expect, budget.as_ref().map(|(b, e)| (b, *e))) {
            Ok(true) => return Ok(true),
            Ok(false) if budget.is_some() => match registry.cursor_at(&monitor.id, wallet) {
                Ok((_, now)) if now == expect => continue,
                Ok(_) => return Err(CheckOutcome::Claimed),
                Err(_) => return Err(CheckOutcome::Failed),
            },
            Ok(false) => return Err(CheckOutcome::Claimed),
            Err(_) => return Err(CheckOutcome::Failed),
        }
    }
    Err(CheckOutcome::Claimed)
}

/// What a check found newer than the cursor's signature: the signatures (newest first) and
/// whether the page holds all of them (it may not when it is full).
struct NewActivity {
    page: Vec<SignatureInfo>,
    complete: bool,
}

/// The signatures newer than `since` (all of history when `None`: a wallet that had none) the
/// node has now: one page of at most `MONITOR_DUST_SIGNATURES_MAX`, or of the newest only when
/// a `baseline` follows whatever it finds.
async fn new_activity(
    context: &Context,
    wallet: &Pubkey,
    since: Option<&str>,
    baseline: bool,
) -> Result<NewActivity, CheckOutcome> {
    let since = since.and_then(|s| Signature::parse(s).ok());
    let limit = if baseline { 1 } else { MONITOR_DUST_SIGNATURES_MAX };
    let read = async {
        match &since {
            Some(since) => context.source.get_signatures_until(wallet, since, None, limit).await,
            None => context.source.get_signatures_for_address(wallet, None, limit).await,
        }
    };
    match tokio::time::timeout(Duration::from_millis(MONITOR_CHECK_TIMEOUT_MS), read).await {
        Ok(Ok(page)) => {
            let read_len = page.len();
            // What the cursor already holds is nothing new (a node that ignored `until`).
            let page = match &since {
                Some(since) => cut_at(page, since),
                None => page,
            };
            let complete = !baseline && (read_len < limit as usize || page.len() < read_len);
            Ok(NewActivity { page, complete })
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "a monitor check's ledger read failed");
            Err(CheckOutcome::Failed)
        }
        Err(_) => Err(CheckOutcome::Failed),
    }
}

/// A claim whose check died (killed between its claim and its cursor's move): when the
/// re-analysis it claimed for was admitted — the account's newest job of the wallet is this
/// monitor's and no older than the claim — the cursor moves past it now (no second
/// re-analysis, so no second event). `None` when it was not: the check goes on as if there
/// were no claim (its own claim replaces the dead one).
fn finish_dead_claim(
    context: &Context,
    monitor: &MonitorRecord,
    wallet: &Pubkey,
    cursor: &WatchCursor,
    pending: &PendingCheck,
    expect: Expect,
) -> Option<CheckOutcome> {
    let text = wallet.to_base58();
    let newest = match context.deps.registry.store().latest_for(&monitor.account, Subject::Wallet(&text)) {
        Ok(newest) => newest,
        Err(e) => {
            tracing::warn!(monitor = %monitor.id, error = %e, "reading a wallet's newest job failed");
            return Some(CheckOutcome::Failed);
        }
    };
    let admitted = newest.filter(|job| {
        job.created_at_ms >= pending.claimed_at_ms && job.monitor.as_ref().is_some_and(|m| m.monitor_id == monitor.id)
    })?;
    let moved = WatchCursor {
        last_signature: pending.signature.clone().or(cursor.last_signature.clone()),
        last_analysis_id: Some(admitted.id),
        confirmed_analysis_id: cursor.confirmed_analysis_id.clone(),
        checked_at_ms: now_unix_ms(),
        pending: None,
        labels: cursor.labels.clone(),
        last_activity: cursor.last_activity.clone(),
    };
    Some(match context.deps.registry.write_cursor(&monitor.id, wallet, &moved, expect) {
        Ok(true) => CheckOutcome::Active,
        Ok(false) => CheckOutcome::Claimed,
        Err(_) => CheckOutcome::Failed,
    })
}

/// Admits the re-analysis of `wallet` for `monitor` (`refresh`: always new work; the baseline
/// takes a fresh analysis of the account when there is one), compared with `previous` (the
/// watch's last READY analysis); the id of the job that answers, and whether it was admitted
/// now (charged) rather than joined or reused.
async fn reanalyze(
    context: &Context,
    monitor: &MonitorRecord,
    wallet: &Pubkey,
    refresh: bool,
    previous: Option<String>,
    now_ms: u64,
) -> Option<(String, bool)> {
    let key = key_of(&context.deps.keys, monitor, now_ms)?;
    let (work, link) = (Work::Analysis { wallet: *wallet }, monitor.link(previous));
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
        Ok(Decision::Admitted(record)) => Some((record.id, true)),
        Ok(Decision::Live(job, _)) => Some((job.record.id.clone(), false)),
        Ok(Decision::Fresh(job)) => Some((job.record.id.clone(), false)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_spread_and_move_only_what_a_leaving_node_held() {
        let nodes: Vec<String> = (0..3).map(|i| format!("node-{i}")).collect();
        let monitors: Vec<String> = (0..300).map(|i| format!("mon_{i}")).collect();
        let before: Vec<&String> = monitors.iter().map(|m| owner_of(m, &nodes).expect("an owner")).collect();
        for node in &nodes {
            let held = before.iter().filter(|o| **o == node).count();
            assert!((60..=140).contains(&held), "{node} holds {held} of 300");
        }
        let left: Vec<String> = nodes[..2].to_vec();
        for (monitor, was) in monitors.iter().zip(&before) {
            let now = owner_of(monitor, &left).expect("an owner");
            if *was != &nodes[2] {
                assert_eq!(now, *was, "{monitor} moved though its node stayed");
            }
        }
        assert_eq!(owner_of("mon_1", &[]), None);
    }
}
