//! The monitors' endpoints (issue #30, an extension of the contract): create, list, read,
//! change and delete monitors; page through a monitor's events; send one again. And the event
//! document, which both the events page and the event's webhook carry.
//!
//! Owns: the wire form of a monitor (with its watches' state and lag, and its re-analysis
//! budget of the day, on `GET` one), of an event, and of their pages; the mapping of
//! `monitors::RegistryError` to the contract's codes.
//! Runs on listener threads; each call's store reads (a page reads up to
//! `MONITOR_EVENTS_PAGE_READ_BYTES_MAX` of analyses and parses them) and at most one write run
//! off the listener (`store_work`, which the feedback and policy endpoints use too): on the
//! store-work pool over RocksDB (`store::work`, bounded by `STORE_WORK_QUEUE_LEN_MAX`), on the
//! etcd runtime's blocking pool on a cluster (bounded by `ETCD_BLOCKING_IN_FLIGHT_MAX`), each
//! awaited; and at most `REGISTRY_WORK_PER_ACCOUNT_MAX` of one account at once.
//!
//! Invariant: a monitor or event of another account is a `404`, from the same path as an
//! unknown one. Reading events needs `analysis:read` besides `monitor:read` (an event carries
//! an analysis' changes); creating a monitor needs it too (its events deliver or show them).
//! Invariant: a `callbackUrl` is accepted (create, `PATCH`) only while the account has a
//! webhook secret to sign its deliveries (`409 CONFLICT`, `no_webhook_secret`, naming the command
//! that makes one); without one a monitor is poll-only (issue #42 item 1).
//! Invariant: an event is served as it was signed — its members made by
//! `signing::EventMembers`, the function the sink signed them with, and its stored signature —
//! identically in the page, the redelivery answer and the webhook (which lacks `delivery`).
//! Invariant: pages are bounded (`MONITORS_PAGE_LEN_MAX`, `MONITOR_EVENTS_PAGE_LEN_MAX`, and the
//! analysis bytes an events page reads, `MONITOR_EVENTS_PAGE_READ_BYTES_MAX`).
//! Invariant: a listener thread never runs a store call here, nor waits on etcd
//! (`store_work`): its longest stall while a 32 MiB page is read stays well under 1 ms
//! (`an_events_page_of_large_analyses_does_not_stall_its_listener`).
//! Deliberately absent: an async registry — its calls are short sequences of the blocking
//! `Store` trait, shared with the `xray-monitors` thread; moving them off the listener is enough.

use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;

use super::{json_bytes, page_limit, ApiError, Endpoints};
use crate::api::json::{parse_body, MonitorPatchRequest, MonitorRequest};
use crate::api::router::query_param;
use crate::api::wire::CallbackBody;
use crate::auth::scope::Scope;
use crate::clock::rfc3339_ms;
use crate::config::{
    MONITORS_PAGE_LEN_MAX, MONITOR_EVENTS_PAGE_LEN_DEFAULT, MONITOR_EVENTS_PAGE_LEN_MAX,
    MONITOR_EVENTS_PAGE_READ_BYTES_MAX, REGISTRY_WORK_PER_ACCOUNT_MAX,
};
use crate::engine::report::with_last_member;
use crate::http::ApiResponse;
use crate::jobs::admission::{is_id_shaped, job_id};
use crate::monitors::record::MIN_SEVERITY_DEFAULT;
use crate::monitors::{
    check_change, ActivityOutcome, EventView, MonitorBudget, MonitorChange, MonitorRecord, Registry, RegistryError,
    WatchCursor,
};
use crate::signing::EventMembers;
use crate::store::{JobRecord, ReportSignature, Store};

/// Prefix of a monitor's id.
pub const MONITOR_ID_PREFIX: &str = "mon_";
/// Prefix of an event's id.
pub const EVENT_ID_PREFIX: &str = "evt_";

#[derive(Serialize)]
struct DataBody<T: Serialize> {
    data: T,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MonitorBody<'a> {
    id: &'a str,
    wallets: &'a [String],
    /// `null`: poll-only (its events are read from its events page, never delivered).
    callback_url: Option<&'a str>,
    min_severity: &'a str,
    score_drop: Option<u8>,
    reanalyses_per_day: u32,
    dust_lamports: u64,
    interval_seconds: u64,
    created_at: String,
    updated_at: String,
    /// `GET` one only: where each wallet's checks stand.
    #[serde(skip_serializing_if = "Option::is_none")]
    watches: Option<Vec<WatchBody<'a>>>,
    /// `GET` one only: whether a wallet's check is later than an interval past its due time
    /// (the node cannot keep the interval).
    #[serde(skip_serializing_if = "Option::is_none")]
    lagging: Option<bool>,
    /// `GET` one only: the re-analyses counted today against `reanalysesPerDay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    budget: Option<BudgetBody>,
}

/// A monitor's budget of the current UTC day.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BudgetBody {
    /// `utc_day`: counts start at 00:00 UTC.
    period: &'static str,
    limit: u32,
    used: u32,
    exhausted: bool,
    resets_at: String,
}

/// What the last check that saw new activity of a wallet did with it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ActivityBody {
    outcome: String,
    at: String,
    /// `budget_exhausted`: when the budget resets and the held activity is re-analyzed.
    #[serde(skip_serializing_if = "Option::is_none")]
    budget_resets_at: Option<String>,
}

impl ActivityBody {
    fn of(activity: &ActivityOutcome) -> ActivityBody {
        ActivityBody {
            outcome: activity.outcome.clone(),
            at: rfc3339_ms(activity.at_ms),
            budget_resets_at: activity.until_ms.map(rfc3339_ms),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WatchBody<'a> {
    wallet: &'a str,
    last_checked_at: Option<String>,
    last_signature: Option<String>,
    last_analysis_id: Option<String>,
    /// Seconds past the interval since the last check (0: on time).
    lag_seconds: u64,
    last_activity: Option<ActivityBody>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MonitorsPage<'a> {
    monitors: Vec<MonitorBody<'a>>,
    next_after: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeletedBody<'a> {
    id: &'a str,
    deleted: bool,
}

/// An event as its page and its webhook write it, without its `delivery`: the signed members
/// (`signing::EventMembers`), the legacy `type` (the unsigned twin of `kind`, kept for
/// receivers written before `kind`) and the signature made with the event, as stored.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventBody<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    legacy_type: &'static str,
    kind: &'static str,
    account: &'a str,
    monitor_id: &'a str,
    wallet: &'a str,
    analysis_id: &'a str,
    created_at: &'a str,
    changes: &'a serde_json::Value,
    /// Absent from events made before events were signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a ReportSignature>,
}

fn registry_error(e: RegistryError) -> ApiError {
    match e {
        RegistryError::NotFound => ApiError::NotFound,
        RegistryError::Invalid(why) => ApiError::InvalidField { field: why.field, message: why.message },
        RegistryError::TooMany { limit } => ApiError::Conflict {
            message: format!("this account holds its maximum of {limit} monitors: delete one first"),
            limit: Some(limit as u64),
            reason: None,
        },
        RegistryError::StillPending => ApiError::Conflict {
            message: "the event's delivery is still pending: it is sent again only once delivered or given up".into(),
            limit: None,
            reason: None,
        },
        RegistryError::NotDeliverable => ApiError::Conflict {
            message: "the event has no webhook to send: it was made while the monitor had no callbackUrl, or the \
                      monitor has none now (its events are polled: GET …/monitors/{id}/events)"
                .into(),
            limit: None,
            reason: None,
        },
        RegistryError::Busy => ApiError::ServiceBusy,
        RegistryError::Store(e) => ApiError::from_store(&e),
    }
}

fn monitor_body<'a>(monitor: &'a MonitorRecord, interval_ms: u64) -> MonitorBody<'a> {
    MonitorBody {
        id: &monitor.id,
        wallets: &monitor.wallets,
        callback_url: monitor.callback_url.as_deref(),
        min_severity: &monitor.min_severity,
        score_drop: monitor.score_drop,
        reanalyses_per_day: monitor.reanalyses_per_day(),
        dust_lamports: monitor.dust_lamports(),
        interval_seconds: interval_ms / 1_000,
        created_at: rfc3339_ms(monitor.created_at_ms),
        updated_at: rfc3339_ms(monitor.updated_at_ms),
        watches: None,
        lagging: None,
        budget: None,
    }
}

/// Seconds a wallet's check is overdue at `now_ms`: past `checked_at + interval` (or, never
/// checked, past the monitor's last change + interval).
fn lag_s(cursor: Option<&WatchCursor>, since_ms: u64, interval_ms: u64, now_ms: u64) -> u64 {
    let last_ms = cursor.map_or(since_ms, |c| c.checked_at_ms.max(since_ms));
    now_ms.saturating_sub(last_ms.saturating_add(interval_ms)) / 1_000
}

/// The event document (`data.event`): what the events page lists (with `delivery`) and what
/// the event's webhook carries (without) — its signed members made by the function that made
/// them for the signature (`signing::EventMembers`), and the signature as stored.
pub fn event_document(job: &JobRecord, payload: Option<&[u8]>) -> Result<Vec<u8>, ApiError> {
    let Some(event) = job.event() else {
        return Err(ApiError::internal(&"an event document of a job with no event"));
    };
    let members = EventMembers::of(job, event, payload).map_err(|e| ApiError::internal(&e))?;
    json_bytes(&EventBody {
        id: &members.id,
        legacy_type: members.kind,
        kind: members.kind,
        account: &members.account,
        monitor_id: &members.monitor_id,
        wallet: &members.wallet,
        analysis_id: &members.analysis_id,
        created_at: &members.created_at,
        changes: &members.changes,
        signature: event.signature.as_deref(),
    })
}

/// The webhook body of an event: `{"data":{"event":{…}}}`.
pub fn event_webhook(job: &JobRecord, payload: Option<&[u8]>) -> Result<Vec<u8>, ApiError> {
    Ok(data_object(&[("event", &event_document(job, payload)?)]))
}

/// `{"data":{"<name>":<value>,…}}` around JSON members already serialized, in order.
fn data_object(members: &[(&str, &[u8])]) -> Vec<u8> {
    let len = members.iter().map(|(name, value)| name.len() + value.len() + 4).sum::<usize>();
    let mut out = Vec::with_capacity(len + 12);
    out.extend_from_slice(b"{\"data\":{");
    for (i, (name, value)) in members.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
        out.extend_from_slice(value);
    }
    out.extend_from_slice(b"}}");
    out
}

/// One event with its delivery, as the events page lists it, and the bytes of analysis read.
fn event_with_delivery(store: &dyn Store, view: &EventView) -> Result<(Vec<u8>, usize), ApiError> {
    let payload = store.get_result(&view.job).map_err(|e| ApiError::from_store(&e))?;
    let read = payload.as_ref().map_or(0, Vec::len);
    let event = event_document(&view.job, payload.as_deref())?;
    // The event's own webhook only (`null` for a poll-only monitor's event): a callback another
    // request attached to the job delivers the analysis, not the event.
    let delivery = match view.job.event_delivery() {
        Some(c) => json_bytes(&CallbackBody {
            url: &c.url,
            status: c.status.as_str(),
            attempts: c.attempts,
            last_error: c.last_error.as_deref(),
        })?,
        None => b"null".to_vec(),
    };
    Ok((with_last_member(event, 1, "delivery", &delivery), read))
}

/// The store work of each account running or waiting now (entries removed at zero).
pub type AccountWork = Arc<parking_lot::Mutex<std::collections::HashMap<String, usize>>>;

/// One of an account's `REGISTRY_WORK_PER_ACCOUNT_MAX` slots, given back when dropped — by the
/// sequence it was taken for, when that ends (a client that hangs up does not free its slot
/// while its work still runs).
struct AccountSlot {
    counts: AccountWork,
    account: String,
}

impl AccountSlot {
    fn take(counts: &AccountWork, account: &str) -> Result<AccountSlot, ApiError> {
        let mut held = counts.lock();
        let count = held.entry(account.to_owned()).or_default();
        if *count >= REGISTRY_WORK_PER_ACCOUNT_MAX {
            return Err(ApiError::ServiceBusy);
        }
        *count += 1;
        Ok(AccountSlot { counts: counts.clone(), account: account.to_owned() })
    }
}

impl Drop for AccountSlot {
    fn drop(&mut self) {
        let mut held = self.counts.lock();
        if let Some(count) = held.get_mut(&self.account) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.account);
            }
        }
    }
}

/// A monitor may deliver to `url` only while `account` has a webhook secret to sign its
/// events with (`409 CONFLICT`, `no_webhook_secret`, naming the command that makes one);
/// without `url` (poll-only) there is nothing to sign. The secret is read and dropped.
fn can_sign_webhooks(store: &dyn Store, account: &str, url: Option<&str>) -> Result<(), ApiError> {
    if url.is_none() {
        return Ok(());
    }
    match store.get_webhook_secret(account) {
        Ok(Some(_)) => Ok(()),
        Ok(None) => Err(ApiError::NoWebhookSecret { account: account.to_owned() }),
        Err(e) => Err(ApiError::from_store(&e)),
    }
}

/// The account's monitor `id` (404 when the id is not a monitor's, or not this account's).
fn own_monitor(registry: &Registry, account: &str, id: &str) -> Result<MonitorRecord, ApiError> {
    if !is_id_shaped(id, MONITOR_ID_PREFIX) {
        return Err(ApiError::NotFound);
    }
    registry.get(account, id).map_err(registry_error)
}

impl Endpoints<'_> {
    fn account_str(&self) -> &str {
        self.caller.key.account().as_str()
    }

    /// Runs a sequence of blocking store calls off the listener thread: on the store-work pool
    /// over RocksDB (`store::work`), on the etcd runtime's blocking pool on a cluster. The
    /// listener thread awaits the answer and serves other requests meanwhile; at most
    /// `REGISTRY_WORK_PER_ACCOUNT_MAX` sequences of one account run or wait at once, and a full
    /// pool answers `503 SERVICE_BUSY` at once.
    pub(super) async fn store_work<T, W>(&self, work: W) -> Result<T, ApiError>
    where
        T: Send + 'static,
        W: FnOnce(&dyn Store) -> Result<T, ApiError> + Send + 'static,
    {
        let slot = AccountSlot::take(&self.app.registry_work, self.account_str())?;
        let work = move |store: &dyn Store| {
            let _slot = slot;
            work(store)
        };
        match (self.app.admission.cluster(), &self.app.store_work) {
            (Some(etcd), _) => {
                let store = self.app.store.clone();
                let answer = etcd.blocking(move || Ok(work(&*store))).await;
                answer.map_err(|e| ApiError::from_store(&e))?
            }
            (None, Some(pool)) => {
                let answer = pool.run(work).map_err(|_| ApiError::ServiceBusy)?;
                answer.await.map_err(|_| ApiError::internal(&"a store-work sequence ended without an answer"))?
            }
            (None, None) => Err(ApiError::internal(&"no store-work pool on an embedded store")),
        }
    }

    /// Registry work (blocking store calls), run by `store_work`.
    pub(super) async fn registry_work<T, W>(&self, work: W) -> Result<T, ApiError>
    where
        T: Send + 'static,
        W: FnOnce(&Registry, &dyn Store) -> Result<T, ApiError> + Send + 'static,
    {
        let registry = self.app.monitors.clone();
        self.store_work(move |store| work(&registry, store)).await
    }

    fn monitor_answer(&self, status: u16, monitor: &MonitorRecord) -> Result<ApiResponse, ApiError> {
        let body = json_bytes(&DataBody { data: monitor_body(monitor, self.app.monitor_interval_ms) })?;
        Ok(ApiResponse::json(status, Bytes::from(body)))
    }

    /// Watching wallets analyzes them (charged to this key): `wallet:analyze` too.
    fn may_analyze(&self) -> Result<(), ApiError> {
        match self.caller.key.scopes().contains(Scope::WalletAnalyze) {
            true => Ok(()),
            false => Err(ApiError::InsufficientScope { required_scope: Scope::WalletAnalyze, field: None }),
        }
    }

    /// Steps 6 and 7 of every wallet a monitor is to watch, as `POST …/wallet` checks one:
    /// `400 INVALID_ADDRESS` or `422 ACCOUNT_NOT_ELIGIBLE` (a mint, a program) naming `wallets`.
    fn checked_wallets(&self, wallets: &[String]) -> Result<(), ApiError> {
        wallets.iter().try_for_each(|w| super::checked_address("wallets", w, self.app).map(drop))
    }

    /// A monitor's `callbackUrl`, as a job's is checked (`analysis:read`, the webhook policy);
    /// a poll-only monitor still needs `analysis:read`, the scope its events are read with.
    fn checked_monitor_callback(&self, url: Option<&str>) -> Result<(), ApiError> {
        match url {
            Some(url) => self.checked_callback(Some(url)).map(drop),
            None => self.may_read_events(),
        }
    }

    /// `POST /v1/developer/monitors`
    pub async fn create_monitor(&self) -> Result<ApiResponse, ApiError> {
        self.may_analyze()?;
        let body: MonitorRequest = parse_body(self.request)?;
        self.checked_wallets(&body.wallets)?;
        self.checked_monitor_callback(body.callback_url.as_deref())?;
        let now_ms = self.caller.now_ms;
        let monitor = MonitorRecord {
            id: job_id(MONITOR_ID_PREFIX).map_err(|e| ApiError::internal(&e))?,
            account: self.account_str().to_owned(),
            key_id: self.caller.key.id().as_str().to_owned(),
            wallets: body.wallets,
            callback_url: body.callback_url,
            min_severity: body.min_severity.unwrap_or_else(|| MIN_SEVERITY_DEFAULT.as_str().to_owned()),
            score_drop: body.score_drop,
            reanalyses_per_day: body.reanalyses_per_day,
            dust_lamports: body.dust_lamports,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
        };
        let monitor = self
            .registry_work(move |registry, store| {
                // Its own refusals (400) before the account's state (409).
                monitor.validate().map_err(|e| registry_error(RegistryError::Invalid(e)))?;
                can_sign_webhooks(store, &monitor.account, monitor.callback_url.as_deref())?;
                registry.create(&monitor).map(|()| monitor).map_err(registry_error)
            })
            .await?;
        self.monitor_answer(201, &monitor)
    }

    /// `GET /v1/developer/monitors?after=&limit=`
    pub async fn list_monitors(&self) -> Result<ApiResponse, ApiError> {
        let query = self.request.query.as_deref();
        let limit = page_limit(query, MONITORS_PAGE_LEN_MAX, MONITORS_PAGE_LEN_MAX)?;
        let after = match query_param(query, "after") {
            Some(after) if is_id_shaped(after, MONITOR_ID_PREFIX) => Some(after.to_owned()),
            Some(_) => {
                return Err(ApiError::InvalidRequest {
                    field: "after", message: "after must be a monitor id (mon_…)"
                })
            }
            None => None,
        };
        let account = self.account_str().to_owned();
        let monitors = self
            .registry_work(move |registry, _| registry.list(&account, after.as_deref(), limit).map_err(registry_error))
            .await?;
        let next_after = monitors.last().filter(|_| monitors.len() == limit).map(|m| m.id.as_str());
        let interval_ms = self.app.monitor_interval_ms;
        let page =
            MonitorsPage { monitors: monitors.iter().map(|m| monitor_body(m, interval_ms)).collect(), next_after };
        Ok(ApiResponse::json(200, Bytes::from(json_bytes(&DataBody { data: page })?)))
    }

    /// `GET /v1/developer/monitors/:id`: the monitor, each wallet's checks and the lag, and
    /// its budget of the day.
    pub async fn get_monitor(&self, id: &str) -> Result<ApiResponse, ApiError> {
        let (account, id) = (self.account_str().to_owned(), id.to_owned());
        let (monitor, cursors, budget) = self
            .registry_work(move |registry, _| {
                let monitor = own_monitor(registry, &account, &id)?;
                let cursors = registry.cursors(&monitor.id).map_err(registry_error)?;
                let (budget, _) = registry.budget_at(&monitor.id).map_err(registry_error)?;
                Ok((monitor, cursors, budget))
            })
            .await?;
        let (interval_ms, now_ms) = (self.app.monitor_interval_ms, self.caller.now_ms);
        let mut watches = Vec::with_capacity(monitor.wallets.len());
        for (wallet, key) in monitor.wallets.iter().zip(monitor.pubkeys()) {
            let cursor = cursors.iter().find(|(w, _)| *w == key).map(|(_, c)| c.clone());
            watches.push(WatchBody {
                wallet,
                last_checked_at: cursor.as_ref().filter(|c| c.checked_at_ms > 0).map(|c| rfc3339_ms(c.checked_at_ms)),
                last_signature: cursor.as_ref().and_then(|c| c.last_signature.clone()),
                last_analysis_id: cursor.as_ref().and_then(|c| c.last_analysis_id.clone()),
                lag_seconds: lag_s(cursor.as_ref(), monitor.updated_at_ms, interval_ms, now_ms),
                last_activity: cursor.as_ref().and_then(|c| c.last_activity.as_ref()).map(ActivityBody::of),
            });
        }
        let lagging = watches.iter().any(|w| w.lag_seconds * 1_000 > interval_ms);
        let (limit, used) = (monitor.reanalyses_per_day(), budget.used_at(now_ms));
        let budget = BudgetBody {
            period: "utc_day",
            limit,
            used,
            exhausted: used >= limit,
            resets_at: rfc3339_ms(MonitorBudget::resets_at_ms(now_ms)),
        };
        let body = MonitorBody {
            watches: Some(watches),
            lagging: Some(lagging),
            budget: Some(budget),
            ..monitor_body(&monitor, interval_ms)
        };
        Ok(ApiResponse::json(200, Bytes::from(json_bytes(&DataBody { data: body })?)))
    }

    /// `PATCH /v1/developer/monitors/:id`
    pub async fn change_monitor(&self, id: &str) -> Result<ApiResponse, ApiError> {
        let body: MonitorPatchRequest = parse_body(self.request)?;
        if !body.add_wallets.is_empty() {
            self.may_analyze()?;
            self.checked_wallets(&body.add_wallets)?;
        }
        let (account, id) = (self.account_str().to_owned(), id.to_owned());
        let account_of_read = account.clone();
        let id_of_read = id.clone();
        let current =
            self.registry_work(move |registry, _| own_monitor(registry, &account_of_read, &id_of_read)).await?;
        // `null` makes it poll-only: nothing to check.
        let new_url = body.callback_url.clone().flatten();
        if new_url.is_some() {
            self.checked_callback(new_url.as_deref())?;
        }
        let change = MonitorChange {
            add_wallets: body.add_wallets,
            remove_wallets: body.remove_wallets,
            min_severity: body.min_severity,
            score_drop: body.score_drop,
            callback_url: body.callback_url,
            reanalyses_per_day: body.reanalyses_per_day,
            dust_lamports: body.dust_lamports,
        };
        let now_ms = self.caller.now_ms;
        // Its own refusals (400) before the account's state (409), as on create.
        check_change(current, &change, now_ms).map_err(registry_error)?;
        let changed = self
            .registry_work(move |registry, store| {
                can_sign_webhooks(store, &account, new_url.as_deref())?;
                registry.change(&account, &id, &change, now_ms).map_err(registry_error)
            })
            .await?;
        self.monitor_answer(200, &changed)
    }

    /// `DELETE /v1/developer/monitors/:id`
    pub async fn delete_monitor(&self, id: &str) -> Result<ApiResponse, ApiError> {
        let (account, owned_id) = (self.account_str().to_owned(), id.to_owned());
        self.registry_work(move |registry, _| {
            own_monitor(registry, &account, &owned_id)?;
            registry.delete(&account, &owned_id).map_err(registry_error)
        })
        .await?;
        let body = json_bytes(&DataBody { data: DeletedBody { id, deleted: true } })?;
        Ok(ApiResponse::json(200, Bytes::from(body)))
    }

    /// Events carry an analysis' changes: `analysis:read` too.
    fn may_read_events(&self) -> Result<(), ApiError> {
        match self.caller.key.scopes().contains(Scope::AnalysisRead) {
            true => Ok(()),
            false => Err(ApiError::InsufficientScope { required_scope: Scope::AnalysisRead, field: None }),
        }
    }

    /// `GET /v1/developer/monitors/:id/events?after=<eventId>&limit=`: oldest first.
    pub async fn monitor_events(&self, id: &str) -> Result<ApiResponse, ApiError> {
        self.may_read_events()?;
        let query = self.request.query.as_deref();
        let limit = page_limit(query, MONITOR_EVENTS_PAGE_LEN_DEFAULT, MONITOR_EVENTS_PAGE_LEN_MAX)?;
        let after = match query_param(query, "after") {
            Some(after) if is_id_shaped(after, EVENT_ID_PREFIX) => Some(after.to_owned()),
            Some(_) => {
                return Err(ApiError::InvalidRequest { field: "after", message: "after must be an event id (evt_…)" })
            }
            None => None,
        };
        let (account, id) = (self.account_str().to_owned(), id.to_owned());
        let (events, next_after) = self
            .registry_work(move |registry, store| {
                own_monitor(registry, &account, &id)?;
                let views = registry.events(&account, &id, after.as_deref(), limit).map_err(registry_error)?;
                let (mut events, mut read, mut listed) = (Vec::from(*b"["), 0, 0);
                // Bounded in bytes too: a page of large analyses ends early (`nextAfter` set).
                while listed < views.len() && read < MONITOR_EVENTS_PAGE_READ_BYTES_MAX {
                    if listed > 0 {
                        events.push(b',');
                    }
                    let (event, bytes) = event_with_delivery(store, &views[listed])?;
                    events.extend(event);
                    read += bytes;
                    listed += 1;
                }
                events.push(b']');
                let more = listed < views.len() || views.len() == limit;
                let next_after = views[..listed].last().filter(|_| more).map(|v| v.event.id.clone());
                Ok((events, next_after))
            })
            .await?;
        let next_after = serde_json::to_vec(&next_after).map_err(|e| ApiError::internal(&e))?;
        let body = data_object(&[("events", &events), ("nextAfter", &next_after)]);
        Ok(ApiResponse::json(200, Bytes::from(body)))
    }

    /// `POST /v1/developer/monitors/:id/events/:eventId/redeliver`: 202, due now.
    pub async fn redeliver_event(&self, id: &str, event_id: &str) -> Result<ApiResponse, ApiError> {
        self.may_read_events()?;
        if !is_id_shaped(id, MONITOR_ID_PREFIX) || !is_id_shaped(event_id, EVENT_ID_PREFIX) {
            return Err(ApiError::NotFound);
        }
        let (account, id, event_id, now_ms) =
            (self.account_str().to_owned(), id.to_owned(), event_id.to_owned(), self.caller.now_ms);
        let event = self
            .registry_work(move |registry, store| {
                let view = registry.redeliver(&account, &id, &event_id, now_ms).map_err(registry_error)?;
                event_with_delivery(store, &view).map(|(event, _)| event)
            })
            .await?;
        Ok(ApiResponse::json(202, Bytes::from(data_object(&[("event", &event)]))))
    }
}
