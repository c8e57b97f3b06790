//! The monitors of every account, over the store's feature records: create, read, list,
//! change (compare-and-set), delete; the watch cursors; a monitor's events, page by page; and
//! an event's redelivery.
//!
//! Owns: `Registry` — the only writer of `Monitor`, `MonitorOfAccount` and `Watch` records
//! (the watch cursors and each monitor's `MonitorBudget`).
//! Called from the API (off the listener thread: on the store-work pool over RocksDB, on the
//! etcd runtime's blocking pool on a cluster: `api::endpoints::monitors::registry_work`) and the `xray-monitors`
//! thread (cursors, listing). Every call is a few blocking store calls (RocksDB point reads;
//! etcd round trips on a cluster).
//!
//! Invariant: tenant isolation — every read or write by id checks the record's account; a
//! monitor of another account is `NotFound`, never told apart from one that does not exist.
//! Invariant: an account holds at most `MONITORS_PER_ACCOUNT_MAX` monitors (checked before a
//! create; creations racing on two threads may pass it by one each, bounded by the threads).
//! Invariant: a change is read, applied and written with the read revision (`Expect::Revision`);
//! a lost race reads again, at most `MONITOR_WRITE_ATTEMPTS_MAX` times, then `Busy`.
//! Invariant: a monitor's budget is counted in the same batch as the claim of the cursor whose
//! re-analysis it counts (`claim`, compare-and-set on both), so two checks of one monitor (two
//! wallets, two nodes) never count past its `reanalysesPerDay`.
//! Deliberately absent: deleting a monitor's events with it — they are its analyses' (kept for
//! `retention_days`, purged with them); a deleted monitor's id is never reused, so they are
//! never listed again.

use std::sync::Arc;

use crate::config::{
    MONITORS_PAGE_LEN_MAX, MONITORS_PER_ACCOUNT_MAX, MONITOR_EVENTS_PAGE_LEN_MAX, MONITOR_WALLETS_MAX,
    MONITOR_WRITE_ATTEMPTS_MAX,
};
use crate::pubkey::Pubkey;
use crate::store::docs::{event_job_id, event_key, events_prefix};
use crate::store::{
    Callback, CallbackStatus, DocKind, DocWrite, EventRecord, Expect, JobRecord, JobState, Store, StoreError,
};

use super::record::{
    account_key, account_prefix, budget_key, check_wallets, monitor_key, watch_key, watch_prefix, MonitorBudget,
    MonitorError, MonitorRecord, WatchCursor,
};

/// A monitor's watch records: a cursor per wallet and its budget.
const WATCH_RECORDS_MAX: usize = MONITOR_WALLETS_MAX + 1;

/// Why a registry call was refused.
#[derive(Debug)]
pub enum RegistryError {
    /// No such monitor (or event) of this account.
    NotFound,
    /// The monitor, or the change, is not valid.
    Invalid(MonitorError),
    /// The account holds `MONITORS_PER_ACCOUNT_MAX` monitors already.
    TooMany {
        limit: usize,
    },
    /// The event is being delivered now (its webhook is due or in flight): nothing to send again.
    StillPending,
    /// The event cannot be delivered: it was made while the monitor was poll-only (it has no
    /// webhook), or the monitor has no `callbackUrl` now.
    NotDeliverable,
    /// Lost every compare-and-set race: try again.
    Busy,
    Store(StoreError),
}

impl From<StoreError> for RegistryError {
    fn from(e: StoreError) -> Self {
        RegistryError::Store(e)
    }
}

/// A change to a monitor (`PATCH`): wallets to add and remove, thresholds, callback.
#[derive(Debug, Clone, Default)]
pub struct MonitorChange {
    pub add_wallets: Vec<String>,
    pub remove_wallets: Vec<String>,
    pub min_severity: Option<String>,
    /// `Some(None)` clears it.
    pub score_drop: Option<Option<u8>>,
    /// `Some(None)` clears it: the monitor becomes poll-only.
    pub callback_url: Option<Option<String>>,
    /// `Some(None)` goes back to the default.
    pub reanalyses_per_day: Option<Option<u32>>,
    /// `Some(None)` goes back to the default.
    pub dust_lamports: Option<Option<u64>>,
}

/// One event as a page lists it: the event, and the re-analysis that caused it.
#[derive(Debug, Clone)]
pub struct EventView {
    pub event: EventRecord,
    pub job: JobRecord,
}

/// The monitors over one store.
pub struct Registry {
    store: Arc<dyn Store>,
}

impl Registry {
    pub fn new(store: Arc<dyn Store>) -> Registry {
        Registry { store }
    }

    pub fn store(&self) -> &dyn Store {
        &*self.store
    }

    /// Records a new monitor (its id chosen by the caller, new).
    pub fn create(&self, monitor: &MonitorRecord) -> Result<(), RegistryError> {
        monitor.validate().map_err(RegistryError::Invalid)?;
        let held = self.store.scan_docs(
            DocKind::MonitorOfAccount,
            &account_prefix(&monitor.account),
            None,
            MONITORS_PER_ACCOUNT_MAX,
        )?;
        if held.len() >= MONITORS_PER_ACCOUNT_MAX {
            return Err(RegistryError::TooMany { limit: MONITORS_PER_ACCOUNT_MAX });
        }
        let value = serde_json::to_vec(monitor).map_err(|e| StoreError::Encoding(e.to_string()))?;
        self.store.write_docs(&[
            DocWrite::put(DocKind::Monitor, monitor_key(&monitor.id), value, Expect::Absent),
            DocWrite::put(
                DocKind::MonitorOfAccount,
                account_key(&monitor.account, &monitor.id),
                vec![],
                Expect::Absent,
            ),
        ])?;
        Ok(())
    }

    /// The monitor `id` with its revision, if it exists (any account's: for the scheduler).
    fn read(&self, id: &str) -> Result<Option<(MonitorRecord, u64)>, RegistryError> {
        let Some(doc) = self.store.get_doc(DocKind::Monitor, &monitor_key(id))? else { return Ok(None) };
        let monitor = serde_json::from_slice(&doc.value).map_err(|e| StoreError::Encoding(e.to_string()))?;
        Ok(Some((monitor, doc.revision)))
    }

    /// The monitor `id` of `account`.
    pub fn get(&self, account: &str, id: &str) -> Result<MonitorRecord, RegistryError> {
        match self.read(id)? {
            Some((monitor, _)) if monitor.account == account => Ok(monitor),
            _ => Err(RegistryError::NotFound),
        }
    }

    /// The account's monitors in id order, after `after`, at most `limit`.
    pub fn list(&self, account: &str, after: Option<&str>, limit: usize) -> Result<Vec<MonitorRecord>, RegistryError> {
        let after_key = after.map(|id| account_key(account, id));
        let prefix = account_prefix(account);
        let page = self.store.scan_docs(
            DocKind::MonitorOfAccount,
            &prefix,
            after_key.as_deref(),
            limit.min(MONITORS_PAGE_LEN_MAX),
        )?;
        let mut out = Vec::with_capacity(page.len());
        for doc in page {
            let id = String::from_utf8_lossy(&doc.key[prefix.len()..]).into_owned();
            match self.read(&id)? {
                Some((monitor, _)) if monitor.account == account => out.push(monitor),
                // Index and record are written together; a gap is a deletion in between.
                _ => {}
            }
        }
        Ok(out)
    }

    /// Every monitor of every account, in id order, after `after`, at most `limit` (the
    /// scheduler's reload).
    pub fn all(&self, after: Option<&str>, limit: usize) -> Result<Vec<MonitorRecord>, RegistryError> {
        let after_key = after.map(monitor_key);
        let page = self.store.scan_docs(DocKind::Monitor, &[], after_key.as_deref(), limit)?;
        let mut out = Vec::with_capacity(page.len());
        for doc in page {
            match serde_json::from_slice::<MonitorRecord>(&doc.value) {
                Ok(monitor) => out.push(monitor),
                Err(e) => tracing::error!(error = %e, "a monitor record does not read; skipped"),
            }
        }
        Ok(out)
    }

    /// Applies `change` to the monitor `id` of `account` at `now_ms`; returns it as written.
    pub fn change(
        &self,
        account: &str,
        id: &str,
        change: &MonitorChange,
        now_ms: u64,
    ) -> Result<MonitorRecord, RegistryError> {
        for _ in 0..MONITOR_WRITE_ATTEMPTS_MAX {
            let Some((monitor, revision)) = self.read(id)?.filter(|(m, _)| m.account == account) else {
                return Err(RegistryError::NotFound);
            };
            let removed: Vec<Pubkey> = monitor
                .wallets
                .iter()
                .filter(|w| change.remove_wallets.contains(w))
                .filter_map(|w| Pubkey::parse(w).ok())
                .collect();
            let changed = apply(monitor, change, now_ms)?;
            let value = serde_json::to_vec(&changed).map_err(|e| StoreError::Encoding(e.to_string()))?;
            // The removed wallets' cursors go with the change (a wallet added again starts over).
            let mut writes = vec![DocWrite::put(DocKind::Monitor, monitor_key(id), value, Expect::Revision(revision))];
            writes.extend(removed.iter().map(|w| DocWrite::delete(DocKind::Watch, watch_key(id, w), Expect::Any)));
            match self.store.write_docs(&writes) {
                Ok(()) => return Ok(changed),
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(RegistryError::Busy)
    }

    /// Deletes the monitor `id` of `account` and its cursors.
    pub fn delete(&self, account: &str, id: &str) -> Result<(), RegistryError> {
        let Some((_, revision)) = self.read(id)?.filter(|(m, _)| m.account == account) else {
            return Err(RegistryError::NotFound);
        };
        let mut writes = vec![
            DocWrite::delete(DocKind::Monitor, monitor_key(id), Expect::Revision(revision)),
            DocWrite::delete(DocKind::MonitorOfAccount, account_key(account, id), Expect::Any),
        ];
        let watches = self.store.scan_docs(DocKind::Watch, &watch_prefix(id), None, WATCH_RECORDS_MAX)?;
        writes.extend(watches.into_iter().map(|w| DocWrite::delete(DocKind::Watch, w.key, Expect::Any)));
        match self.store.write_docs(&writes) {
            Ok(()) => Ok(()),
            // Changed meanwhile: the caller may delete again (it still exists).
            Err(StoreError::Conflict(_)) => Err(RegistryError::Busy),
            Err(e) => Err(e.into()),
        }
    }

    /// Where the monitor's checks of `wallet` stand.
    pub fn cursor(&self, id: &str, wallet: &Pubkey) -> Result<Option<WatchCursor>, RegistryError> {
        Ok(self.cursor_at(id, wallet)?.0)
    }

    /// The monitor's budget (counted nothing yet: the default) and what a write replacing it
    /// must expect.
    pub fn budget_at(&self, id: &str) -> Result<(MonitorBudget, Expect), RegistryError> {
        let Some(doc) = self.store.get_doc(DocKind::Watch, &budget_key(id))? else {
            return Ok((MonitorBudget::default(), Expect::Absent));
        };
        // A budget that does not read counts from nothing (it is rewritten whole at the next count).
        Ok((serde_json::from_slice(&doc.value).unwrap_or_default(), Expect::Revision(doc.revision)))
    }

    /// Claims `wallet`'s cursor (writes `cursor` if it is as `expect` says) and, when `budget` is
    /// given, writes the monitor's budget in the same batch (if it is as its `Expect` says);
    /// false when another writer changed either first.
    pub fn claim(
        &self,
        id: &str,
        wallet: &Pubkey,
        cursor: &WatchCursor,
        expect: Expect,
        budget: Option<(&MonitorBudget, Expect)>,
    ) -> Result<bool, RegistryError> {
        let value = serde_json::to_vec(cursor).map_err(|e| StoreError::Encoding(e.to_string()))?;
        let mut writes = vec![DocWrite::put(DocKind::Watch, watch_key(id, wallet), value, expect)];
        if let Some((budget, expect)) = budget {
            let value = serde_json::to_vec(budget).map_err(|e| StoreError::Encoding(e.to_string()))?;
            writes.push(DocWrite::put(DocKind::Watch, budget_key(id), value, expect));
        }
        match self.store.write_docs(&writes) {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Gives back the re-analysis a claim at `taken_ms` counted (it was not admitted); nothing
    /// once that period is over or the monitor is gone.
    pub fn give_back(&self, id: &str, taken_ms: u64) -> Result<(), RegistryError> {
        for _ in 0..MONITOR_WRITE_ATTEMPTS_MAX {
            let (budget, expect) = self.budget_at(id)?;
            let Some(back) = budget.give_back(taken_ms).filter(|_| expect != Expect::Absent) else { return Ok(()) };
            let value = serde_json::to_vec(&back).map_err(|e| StoreError::Encoding(e.to_string()))?;
            match self.store.write_docs(&[DocWrite::put(DocKind::Watch, budget_key(id), value, expect)]) {
                Ok(()) => return Ok(()),
                Err(StoreError::Conflict(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(RegistryError::Busy)
    }

    /// Every cursor of the monitor (one scan), by wallet.
    pub fn cursors(&self, id: &str) -> Result<Vec<(Pubkey, WatchCursor)>, RegistryError> {
        let prefix = watch_prefix(id);
        let docs = self.store.scan_docs(DocKind::Watch, &prefix, None, WATCH_RECORDS_MAX)?;
        Ok(docs
            .into_iter()
            .filter_map(|doc| {
                let wallet = <[u8; 32]>::try_from(doc.key.get(prefix.len()..)?).ok().map(Pubkey::new)?;
                Some((wallet, serde_json::from_slice(&doc.value).ok()?))
            })
            .collect())
    }

    /// The cursor and what a write replacing it must expect (its revision, or its absence).
    pub fn cursor_at(&self, id: &str, wallet: &Pubkey) -> Result<(Option<WatchCursor>, Expect), RegistryError> {
        let Some(doc) = self.store.get_doc(DocKind::Watch, &watch_key(id, wallet))? else {
            return Ok((None, Expect::Absent));
        };
        Ok((serde_json::from_slice(&doc.value).ok(), Expect::Revision(doc.revision)))
    }

    /// Writes where the monitor's checks of `wallet` stand, if the cursor is as `expect` says;
    /// false when another check moved it first. (A check that ends just after its monitor was
    /// deleted may leave one cursor behind: at most one per wallet, never read.)
    pub fn write_cursor(
        &self,
        id: &str,
        wallet: &Pubkey,
        cursor: &WatchCursor,
        expect: Expect,
    ) -> Result<bool, RegistryError> {
        let value = serde_json::to_vec(cursor).map_err(|e| StoreError::Encoding(e.to_string()))?;
        match self.store.write_docs(&[DocWrite::put(DocKind::Watch, watch_key(id, wallet), value, expect)]) {
            Ok(()) => Ok(true),
            Err(StoreError::Conflict(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The monitor's events, oldest first, after the event `after`, at most `limit`.
    pub fn events(
        &self,
        account: &str,
        id: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<EventView>, RegistryError> {
        self.get(account, id)?;
        // A cursor naming an event no longer kept (purged with its analysis, oldest first:
        // every event still kept is newer) pages from the oldest kept — not a 404 that would
        // strand a client that paged slower than retention.
        let after_key = match after.map(|event_id| self.event(account, id, event_id)) {
            None | Some(Err(RegistryError::NotFound)) => None,
            Some(Err(e)) => return Err(e),
            Some(Ok(view)) => Some(event_key(id, view.event.created_at_ms, &view.job.id)),
        };
        let prefix = events_prefix(id);
        let page = self.store.scan_docs(
            DocKind::Event,
            &prefix,
            after_key.as_deref(),
            limit.min(MONITOR_EVENTS_PAGE_LEN_MAX),
        )?;
        let mut out = Vec::with_capacity(page.len());
        for doc in page {
            let Some(job_id) = event_job_id(&doc.key, prefix.len()) else { continue };
            if let Some(view) = self.store.get_job(job_id)?.and_then(|job| event_view(job, account, id)) {
                out.push(view);
            }
        }
        Ok(out)
    }

    /// The event `event_id` of the monitor `id` of `account`.
    pub fn event(&self, account: &str, id: &str, event_id: &str) -> Result<EventView, RegistryError> {
        let job_id = EventRecord::job_id_of(event_id).ok_or(RegistryError::NotFound)?;
        let job = self.store.get_job(&job_id)?.ok_or(RegistryError::NotFound)?;
        event_view(job, account, id).filter(|v| v.event.id == event_id).ok_or(RegistryError::NotFound)
    }

    /// Sends the event again: its webhook, settled (delivered or given up), becomes due now
    /// with a fresh retry window — the same event id, a new signature.
    pub fn redeliver(&self, account: &str, id: &str, event_id: &str, now_ms: u64) -> Result<EventView, RegistryError> {
        // To the monitor's callback as it is now: a dead letter is often a receiver that moved,
        // and the fix is a PATCH of `callbackUrl`, then a redelivery.
        let monitor = self.get(account, id)?;
        for _ in 0..MONITOR_WRITE_ATTEMPTS_MAX {
            let view = self.event(account, id, event_id)?;
            // A poll-only event's job may hold another request's webhook (of the analysis):
            // never the event's to send.
            let Some(was) = view.job.event_delivery().cloned() else { return Err(RegistryError::NotDeliverable) };
            let Some(url) = monitor.callback_url.clone() else { return Err(RegistryError::NotDeliverable) };
            if was.status == CallbackStatus::Pending {
                return Err(RegistryError::StillPending);
            }
            let again = Callback {
                status: CallbackStatus::Pending,
                attempts: 0,
                last_error: None,
                next_attempt_ms: now_ms,
                attached_at_ms: Some(now_ms),
                // Still the monitor's key (the job's) that must read it, whoever asks again.
                attached_by: None,
                url,
            };
            match self.store.record_callback(&view.job.id, &was, &again) {
                Ok(job) => {
                    // Back in the outbox: the account's bound applies to it as to any webhook.
                    crate::jobs::sink::trim_outbox(&*self.store, account);
                    return Ok(EventView { event: view.event, job });
                }
                Err(StoreError::State { .. }) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(RegistryError::Busy)
    }
}

/// The event view of `job` when it is an event of monitor `id` of `account`.
fn event_view(job: JobRecord, account: &str, id: &str) -> Option<EventView> {
    let link = job.monitor.as_ref()?;
    if job.account != account || link.monitor_id != id || job.state != JobState::Ready {
        return None;
    }
    let event = link.event.clone()?;
    Some(EventView { event, job })
}

/// `monitor` with `change` applied at `now_ms`, checked whole.
/// Whether `change` makes a valid monitor of `monitor` (what `Registry::change` refuses first),
/// without writing: an endpoint answers a change's own 400 before the account's state (409).
pub fn check_change(monitor: MonitorRecord, change: &MonitorChange, now_ms: u64) -> Result<(), RegistryError> {
    apply(monitor, change, now_ms).map(drop)
}

fn apply(mut monitor: MonitorRecord, change: &MonitorChange, now_ms: u64) -> Result<MonitorRecord, RegistryError> {
    monitor.wallets.retain(|w| !change.remove_wallets.contains(w));
    for wallet in &change.add_wallets {
        if !monitor.wallets.contains(wallet) {
            monitor.wallets.push(wallet.clone());
        }
    }
    if let Some(severity) = &change.min_severity {
        monitor.min_severity = severity.clone();
    }
    if let Some(drop) = change.score_drop {
        monitor.score_drop = drop;
    }
    if let Some(url) = &change.callback_url {
        monitor.callback_url = url.clone();
    }
    if let Some(per_day) = change.reanalyses_per_day {
        monitor.reanalyses_per_day = per_day;
    }
    if let Some(dust) = change.dust_lamports {
        monitor.dust_lamports = dust;
    }
    check_wallets(&monitor.wallets).map_err(RegistryError::Invalid)?;
    monitor.validate().map_err(RegistryError::Invalid)?;
    monitor.updated_at_ms = now_ms;
    Ok(monitor)
}
