//! The public API as served: the contract's pipeline for each request, in order. Read this
//! directory after `http/` (which hands a request over) and before `jobs/` (where admitted work
//! goes): `router` (404/405, `wait`) → `mod.rs` (authentication, its failures limited per
//! client IP → scope → rate limit) → `json` (body: 415/413/400) → `endpoints` (validation, classification, admission,
//! polls, status, usage) → `wire` (success bodies) and `error` (every refusal's code, status,
//! details and headers, in one place).
//!
//! Owns: `App` (the state every listener thread shares), `ApiHandler` (one per listener thread),
//! the rate-limit headers on every authenticated response and tenant isolation (another
//! account's job is a 404). Handlers run on listener threads, sharing one `Arc<App>`.
//!
//! Invariant: the hot read paths — status, usage, polling a live job — take no lock, read no
//! disk and allocate only the response: the key table, token bucket and quota counters are
//! atomics behind `ArcSwap`, live jobs are in the lock-free status index. Polling a finished
//! job reads no disk once it is in `jobs::finished` (one shard lock, the answer made once) —
//! unless its webhook is still PENDING: then its callback state is read again from the store
//! (one point read) until it settles, since the delivery thread (maybe another node's) moves it.
//! On a cluster node (`--store etcd:`), status, usage and polls of jobs this node does not
//! hold also await one etcd read (`endpoints/cluster.rs`); the thread serves others meanwhile.
//! Invariant: every authenticated response carries `RateLimit-Policy` and `RateLimit`, whatever
//! its status; an unauthenticated one never does (there is no key to describe).
//! Invariant: long-poll waiters are bounded (`waiters_max`, all threads together); past the
//! bound a poll answers at once instead of waiting. A slot is held by a guard, so a poll whose
//! client hangs up (hyper drops the future) gives its slot back.
//! Deliberately absent: any knowledge of hyper or sockets (see `http`), what happens to a job
//! after admission (see `jobs`), and how the process starts and stops (see `serve`).

mod endpoints;
pub mod error;
mod idempotency;
pub mod json;
pub mod router;
pub mod wire;

pub use endpoints::feedback::{cursor_text as feedback_cursor_text, parse_cursor as feedback_cursor, FeedbackBody};
pub use endpoints::policy::{policy_answer, policy_error};
pub use endpoints::{finished_document, webhook_document};
pub use error::ApiError;
pub use router::Route;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;

use crate::auth::table::{KeyEntry, KeyTable};
use crate::clock::{now_unix_ms, MonotonicClock};
use crate::config::DEGRADED_QUEUE_PERCENT;
use crate::http::{ApiRequest, ApiResponse, Handler, RequestId, StopState, ThreadContext};
use crate::jobs::admission::Admission;
use crate::jobs::index::StatusIndex;
use crate::jobs::pool::ComputePool;
use crate::labels::live::LiveLabels;
use crate::limits::headers::{policy_value, ratelimit_value, retry_after_rate_s};
use crate::limits::ip::IpFailureLimiter;
use crate::metrics::{Metrics, RejectReason, RouteLabel};
use crate::store::group_commit::GroupCommit;
use crate::store::Store;
use router::route;

/// Everything the listener threads share.
pub struct App {
    pub keys: Arc<KeyTable>,
    pub store: Arc<dyn Store>,
    pub index: Arc<StatusIndex>,
    pub pool: Arc<ComputePool>,
    pub admission: Arc<Admission>,
    /// The labels in force (reloadable: `POST /v1/admin/labels/reload`).
    pub labels: Arc<LiveLabels>,
    pub metrics: Arc<Metrics>,
    pub ip_failures: IpFailureLimiter,
    pub clock: MonotonicClock,
    /// Base of `pollUrl`s, without a trailing slash; set once the API listener is bound (its
    /// port is known only then when the config asks for port 0), before `serve::start` returns.
    pub base_url: std::sync::OnceLock<String>,
    pub waiters: AtomicUsize,
    pub waiters_max: usize,
    /// Set by the sink while the ledger source fails (`service.status: degraded`).
    pub ledger_failing: Arc<AtomicBool>,
    /// Set by the sink while job completions wait for the store (`degraded`, and in
    /// `/healthz`).
    pub store_failing: Arc<AtomicBool>,
    /// With `--sync-writes`: what a POST's answer waits for (its write `fsync`ed).
    pub group_commit: Option<GroupCommit>,
    /// One log line per request (`--access-log`).
    pub access_log: bool,
    /// Which `callbackUrl`s a request may name (`--webhook-allow-hosts`).
    pub webhook_policy: crate::webhooks::TargetPolicy,
    /// The scan lane: the pre-sign scan's upstream reads, on their own thread.
    pub scan: Arc<crate::scan::lane::Lane>,
    /// The monitors (`monitors::Registry`) and the interval their wallets are checked at.
    pub monitors: Arc<crate::monitors::Registry>,
    pub monitor_interval_ms: u64,
    /// Store work (monitors, events pages, feedback, policy writes) of each account running or
    /// waiting off the listener threads now, at most `REGISTRY_WORK_PER_ACCOUNT_MAX` each: one
    /// account's pages cannot take every slot of the store-work pool or the etcd runtime's.
    pub registry_work: endpoints::monitors::AccountWork,
    /// The threads that run that work over RocksDB (`None` on a cluster node: the etcd
    /// runtime's blocking pool runs it); stopped by `serve` after the listeners.
    pub store_work: Option<crate::store::work::StoreWorkPool>,
    /// Feedback on analyses (`POST …/feedback`, the admin listing, its counters).
    pub feedback: Arc<crate::feedback::Book>,
    /// Signs scans as they are answered, and publishes the key set (`signing`).
    pub signer: Arc<crate::signing::ReportSigner>,
}

impl App {
    /// Base of `pollUrl`s (empty only before `serve::start` has bound the listener, when no
    /// client can know the address yet).
    pub fn base_url(&self) -> &str {
        self.base_url.get().map_or("", String::as_str)
    }

    /// `ok`, or `degraded` when the queue is more than 90 % full, the ledger source fails or
    /// the store refuses job completions.
    pub fn service_status(&self) -> &'static str {
        let full = self.pool.depth() * 100 > self.pool.capacity() * DEGRADED_QUEUE_PERCENT;
        if full || self.ledger_failing.load(Ordering::Relaxed) || self.store_failing.load(Ordering::Relaxed) {
            "degraded"
        } else {
            "ok"
        }
    }
}

/// The public API on one listener thread.
pub struct ApiHandler {
    app: Arc<App>,
    stop: StopState,
}

impl ApiHandler {
    /// Called on each listener thread at its start.
    pub fn new(app: Arc<App>, context: &ThreadContext) -> ApiHandler {
        app.scan.open_on_this_thread();
        ApiHandler { app, stop: context.stop.clone() }
    }
}

/// An authenticated request's context: the key and the clock readings of its arrival.
pub(crate) struct Caller {
    pub key: Arc<KeyEntry>,
    pub now_ns: u64,
    pub now_ms: u64,
}

/// What `respond` made of a request: its route, the key it authenticated (if it got that far)
/// and the answer — what the metrics and the access log record.
struct Answered {
    route: RouteLabel,
    key: Option<Arc<KeyEntry>>,
    response: ApiResponse,
}

impl Answered {
    fn anonymous(route: RouteLabel, response: ApiResponse) -> Answered {
        Answered { route, key: None, response }
    }
}

impl Handler for ApiHandler {
    async fn handle(&self, request: ApiRequest) -> ApiResponse {
        let started = Instant::now();
        let answered = self.respond(&request).await;
        let elapsed_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.app.metrics.observe_request(answered.route, answered.response.status, elapsed_us);
        if self.app.access_log {
            access_log(&request, &answered, elapsed_us);
        }
        answered.response
    }

    fn internal_error(&self, request_id: &RequestId, cause: &str) -> ApiResponse {
        ApiError::internal(&cause).to_response(request_id)
    }

    fn body_bytes_max(&self, path: &str) -> usize {
        router::body_bytes_max(path)
    }
}

const HEALTH_OK: &[u8] = br#"{"status":"ok"}"#;
const HEALTH_DRAINING: &[u8] = br#"{"status":"draining"}"#;
const HEALTH_DEGRADED: &[u8] = br#"{"status":"degraded"}"#;

/// `GET /healthz`: 200 while serving (`degraded` in the body while the store refuses job
/// completions, an extension of contract §8), 503 once draining.
pub fn health(stop: &StopState, store_failing: bool) -> ApiResponse {
    match (stop.is_draining(), store_failing) {
        (true, _) => ApiResponse::json(503, Bytes::from_static(HEALTH_DRAINING)),
        // Still serving (polls, status, refusals): 200, so a load balancer keeps the node,
        // and the body says that results are not being stored.
        (false, true) => ApiResponse::json(200, Bytes::from_static(HEALTH_DEGRADED)),
        (false, false) => ApiResponse::json(200, Bytes::from_static(HEALTH_OK)),
    }
}

/// `GET /.well-known/xray-keys.json`: the report-signing keys, current and retired, as a JWK
/// set (`signing`), cacheable for `SIGNING_KEYS_MAX_AGE_S`.
pub fn signing_keys(signer: &crate::signing::ReportSigner) -> ApiResponse {
    let max_age = format!("public, max-age={}", crate::config::SIGNING_KEYS_MAX_AGE_S);
    ApiResponse::json(200, signer.key_set()).with_header("cache-control", max_age)
}

impl ApiHandler {
    async fn respond(&self, request: &ApiRequest) -> Answered {
        let app = &*self.app;
        let route = match route(request.method, &request.path) {
            Ok(route) => route,
            Err(e) => return Answered::anonymous(RouteLabel::Unmatched, self.refuse(&e, request)),
        };
        let label = route_label(&route);
        if route == Route::Healthz {
            return Answered::anonymous(label, health(&self.stop, app.store_failing.load(Ordering::Relaxed)));
        }
        if route == Route::SigningKeys {
            return Answered::anonymous(label, signing_keys(&app.signer));
        }
        let now_ns = app.clock.now_ns();
        let now_ms = now_unix_ms();
        let key = match self.authenticate(request, now_ns, now_ms) {
            Ok(key) => key,
            Err(e) => return Answered::anonymous(label, self.refuse(&e, request)),
        };
        let caller = Caller { key, now_ns, now_ms };
        let mut response = match self.authorized(&route, &caller, request).await {
            Ok(response) => response,
            Err(e) => self.refuse(&e, request),
        };
        // As of the request's arrival, when its token was taken: one clock reading per request.
        add_rate_headers(&mut response, &caller.key, caller.now_ns, caller.now_ms);
        Answered { route: label, key: Some(caller.key), response }
    }

    fn refuse(&self, error: &ApiError, request: &ApiRequest) -> ApiResponse {
        if let Some(reason) = RejectReason::from_code(error.code()) {
            self.app.metrics.reject(reason);
        }
        error.to_response(&request.request_id)
    }

    /// Contract §3 step 2, with the per-IP limit of failed authentications: a key that works
    /// passes whatever the limit (it limits failures; the table's cells are shared, so anyone
    /// able to fill them must not lock valid keys out), and a failure past the limit is a 429.
    fn authenticate(&self, request: &ApiRequest, now_ns: u64, now_ms: u64) -> Result<Arc<KeyEntry>, ApiError> {
        let (ip, header) = (request.client_ip, request.authorization.as_deref());
        let ip_limited = || {
            let retry_after_s = self.app.ip_failures.blocked_retry_after_s(ip, now_ns).unwrap_or(1);
            self.app.metrics.reject(RejectReason::RateLimitedIp);
            ApiError::FailedAuthLimited { retry_after_s: u64::from(retry_after_s) }
        };
        if self.app.ip_failures.is_blocked(ip, now_ns) {
            // Every failure from here gets the same 429, so only the cheap check of a key that
            // works is made (`active_key`: no decode to name a refusal).
            if let Some(key) = self.app.keys.active_key(header, now_ms) {
                return Ok(key);
            }
            self.app.ip_failures.check_failure(ip, now_ns);
            return Err(ip_limited());
        }
        match self.app.keys.authenticate(header, now_ms) {
            Ok(key) => Ok(key),
            Err(why) if self.app.ip_failures.check_failure(ip, now_ns) => Err(ApiError::Unauthenticated(why)),
            Err(_) => Err(ip_limited()),
        }
    }

    /// Steps 3 and 4, then the endpoint.
    async fn authorized(
        &self,
        route: &Route<'_>,
        caller: &Caller,
        request: &ApiRequest,
    ) -> Result<ApiResponse, ApiError> {
        if let Some(required) = route.required_scope() {
            if !caller.key.scopes().contains(required) {
                return Err(ApiError::InsufficientScope { required_scope: required, field: None });
            }
        }
        let decision = caller.key.rate.check(caller.now_ns);
        if !decision.allowed {
            return Err(ApiError::RateLimited { retry_after_s: u64::from(retry_after_rate_s(&decision)) });
        }
        let endpoints = endpoints::Endpoints { app: &self.app, stop: &self.stop, caller, request };
        match *route {
            Route::AnalyzeWallet => endpoints.analyze_wallet().await,
            Route::AnalyzeWallets => endpoints.analyze_wallets().await,
            Route::Compare => endpoints.compare().await,
            Route::Analysis { id } => endpoints.poll_analysis(id).await,
            Route::Comparison { pair_id } => endpoints.poll_comparison(pair_id).await,
            Route::ScanTransaction => endpoints.scan_transaction().await,
            Route::CreateMonitor => endpoints.create_monitor().await,
            Route::ListMonitors => endpoints.list_monitors().await,
            Route::GetMonitor { id } => endpoints.get_monitor(id).await,
            Route::ChangeMonitor { id } => endpoints.change_monitor(id).await,
            Route::DeleteMonitor { id } => endpoints.delete_monitor(id).await,
            Route::MonitorEvents { id } => endpoints.monitor_events(id).await,
            Route::RedeliverEvent { id, event_id } => endpoints.redeliver_event(id, event_id).await,
            Route::Feedback => endpoints.feedback().await,
            Route::ListFeedback => endpoints.list_feedback().await,
            Route::Status => endpoints.status().await,
            Route::Usage => endpoints.usage().await,
            Route::GetPolicy => endpoints.get_policy().await,
            Route::PutPolicy => endpoints.put_policy().await,
            Route::Healthz => Ok(health(&self.stop, self.app.store_failing.load(Ordering::Relaxed))),
            Route::SigningKeys => Ok(signing_keys(&self.app.signer)),
        }
    }
}

/// The access log line of one request (target `xray::access`): never the key, the path's ids
/// or the body — the route's name and the key's id say what was asked and by whom.
fn access_log(request: &ApiRequest, answered: &Answered, elapsed_us: u64) {
    tracing::info!(
        target: "xray::access",
        request_id = request.request_id.as_str(),
        method = request.method.as_str(),
        route = answered.route.as_str(),
        status = answered.response.status,
        duration_us = elapsed_us,
        key_id = answered.key.as_ref().map_or("-", |key| key.id().as_str()),
        client = %request.client_ip,
    );
}

/// `RateLimit-Policy` and `RateLimit` of contract §6, as the key's bucket and quota are now.
fn add_rate_headers(response: &mut ApiResponse, key: &KeyEntry, now_ns: u64, now_ms: u64) {
    let quota = key.quota.view(now_ms);
    let rate = key.rate.peek(now_ns);
    response.headers.push(("ratelimit-policy", policy_value(key.rate.limit(), &quota)));
    response.headers.push(("ratelimit", ratelimit_value(rate, &quota, now_ms)));
}

fn route_label(route: &Route<'_>) -> RouteLabel {
    match route {
        Route::AnalyzeWallet => RouteLabel::Wallet,
        Route::AnalyzeWallets => RouteLabel::Wallets,
        Route::Analysis { .. } => RouteLabel::Analysis,
        Route::Compare => RouteLabel::Compare,
        Route::Comparison { .. } => RouteLabel::Comparison,
        Route::ScanTransaction => RouteLabel::Transaction,
        Route::CreateMonitor
        | Route::ListMonitors
        | Route::GetMonitor { .. }
        | Route::ChangeMonitor { .. }
        | Route::DeleteMonitor { .. } => RouteLabel::Monitors,
        Route::MonitorEvents { .. } | Route::RedeliverEvent { .. } => RouteLabel::MonitorEvents,
        Route::Feedback | Route::ListFeedback => RouteLabel::Feedback,
        Route::Status => RouteLabel::Status,
        Route::Usage => RouteLabel::Usage,
        Route::GetPolicy | Route::PutPolicy => RouteLabel::Policy,
        Route::Healthz => RouteLabel::Healthz,
        Route::SigningKeys => RouteLabel::SigningKeys,
    }
}
