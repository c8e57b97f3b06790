//! `xray serve`: starting the API server, running it, and stopping it gracefully.
//!
//! Owns: the start-up order — (1) validate the config; (2) open RocksDB (before any thread is
//! pinned: its background threads must not inherit a pin); (3) load the key table and restore
//! each key's quota counters from the store's usage records; (4) on an empty key table, issue
//! the first key (every scope) and print it once; (5) start the pinned compute pool; (6)
//! re-queue the jobs a stopped process left live (the rest waits in the recovery backlog);
//! (7) start the public listeners, then the admin listener (its bearer token created on the
//! first start, its bound address written to the data directory for `xray keys`); (8) the
//! housekeeping thread (backlog refill, retention purge). And the stop order on SIGINT/SIGTERM: health checks fail and new work is
//! refused with 503 (draining), in-flight jobs finish, queued ones stay durable as `QUEUED`,
//! listeners close, the WAL is synced.
//! Runs on the main thread; the threads it starts are listed in ARCHITECTURE.md.
//!
//! Invariant: the process prints the first key exactly once, on the start that created it,
//! and never logs a key.
//! Invariant: stdout carries only the first-key notice and the `listening` lines (tests and
//! scripts read them); everything else is logged to stderr.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::admin::keys::KeyAdmin;
use crate::admin::{files as admin_files, AdminHandler, AdminState};
use crate::admission::index::StatusIndex;
use crate::admission::Admission;
use crate::app::sink::StoreSink;
use crate::app::{ApiHandler, App};
use crate::auth::key::AccountId;
use crate::auth::record::KeySpec;
use crate::auth::scope::Scopes;
use crate::auth::table::KeyTable;
use crate::compute::pool::{ComputePool, PoolConfig};
use crate::config::STORE_PAGE_LEN_MAX;
use crate::config::{self, ServeConfig};
use crate::labels::Labels;
use crate::ledger::source::{Source, SourceSpec};
use crate::ledger::view::ViewOptions;
use crate::limits::clock::{now_unix_ms, MonotonicClock};
use crate::limits::ip::IpFailureLimiter;
use crate::limits::quota::{period_start_ms, QuotaPeriod};
use crate::limits::rate::RateLimit;
use crate::metrics::Metrics;
use crate::server::handler::ThreadContext;
use crate::server::{IoDriver, ServerConfig, ServerHandle};
use crate::store::{Backlog, JobRecord, RocksStore, Store, StoreOptions};

/// Sub-directory of the data directory holding RocksDB.
pub const DB_DIR_NAME: &str = "db";

/// The running server, for `run` and for tests that start it in-process.
pub struct Running {
    pub api: ServerHandle,
    pub admin: ServerHandle,
    pub app: Arc<App>,
    pub store: Arc<dyn Store>,
    housekeeping: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    /// The key printed at first start, if this start created it.
    pub first_key: Option<String>,
}

/// Opens everything and starts serving; returns once every listener serves.
pub fn start(config: &ServeConfig) -> Result<Running, String> {
    config.validate()?;
    tracing::info!(config = %config.summary(), "starting");
    std::fs::create_dir_all(&config.data_dir).map_err(|e| format!("data dir {}: {e}", config.data_dir.display()))?;
    let store_options = StoreOptions { sync_writes: config.sync_writes, ..StoreOptions::default() };
    let store: Arc<dyn Store> = Arc::new(
        RocksStore::open(&config.data_dir.join(DB_DIR_NAME), &store_options).map_err(|e| format!("store: {e}"))?,
    );
    let admin_token = admin_files::load_or_create_token(&config.data_dir)?;
    let started_ms = now_unix_ms();
    let key_admin = KeyAdmin { keys: Arc::new(load_keys(&*store, started_ms)?), store: store.clone() };
    let keys = key_admin.keys.clone();
    let first_key = if keys.is_empty() { Some(issue_first_key(&key_admin, started_ms)?) } else { None };
    let labels = Labels::load(config.labels.as_deref())?;
    let metrics = Arc::new(Metrics::default());
    let index =
        Arc::new(StatusIndex::new(config.queue_capacity + config.compute_threads * config.jobs_in_flight_per_thread));
    let ledger_failing = Arc::new(AtomicBool::new(false));
    let sink = StoreSink::new(store.clone(), index.clone(), keys.clone(), metrics.clone(), ledger_failing.clone());
    let pool = Arc::new(start_pool(config, labels.clone(), Arc::new(sink))?);
    let freshness_window_ms = config.freshness_window_s.saturating_mul(1_000);
    let admission = Admission::new(store.clone(), index.clone(), pool.clone(), freshness_window_ms);
    let ip_limit = RateLimit::new(config.ip_failures_per_s, config.ip_failures_per_s).map_err(|e| e.to_string())?;
    let app = Arc::new(App {
        keys,
        store: store.clone(),
        index,
        pool,
        admission,
        labels,
        metrics,
        ip_failures: IpFailureLimiter::new(ip_limit),
        clock: MonotonicClock::new(),
        base_url: std::sync::OnceLock::new(),
        waiters: AtomicUsize::new(0),
        waiters_max: config.long_poll_waiters_max,
        ledger_failing,
    });
    let mut backlog = Recovery::new(u64::try_from(started_ms).unwrap_or(0));
    backlog.refill(&app);
    let api = start_api(config, &app)?;
    let _ = app.base_url.set(config.base_url(api.local_addr()));
    let admin_state = AdminState { app: app.clone(), keys: key_admin, token: admin_token, api_stop: api.stop_state() };
    let admin = start_admin(config, admin_state)?;
    let housekeeping = Some(spawn_housekeeping(app.clone(), backlog, config.retention_days)?);
    Ok(Running { api, admin, app, store, housekeeping, first_key })
}

/// Every stored key, with each key's quota counters of the current and previous period
/// restored from the store's usage records.
fn load_keys(store: &dyn Store, now_ms: i64) -> Result<KeyTable, String> {
    let mut records = Vec::new();
    loop {
        let page =
            store.list_keys(records.last().map(|r: &crate::auth::record::KeyRecord| r.id.as_str()), STORE_PAGE_LEN_MAX);
        let page = page.map_err(|e| format!("loading keys: {e}"))?;
        let done = page.len() < STORE_PAGE_LEN_MAX;
        records.extend(page);
        if done {
            break;
        }
    }
    let table = KeyTable::from_records(records, now_ms).map_err(|e| format!("loading keys: {e}"))?;
    for record in table.list() {
        let Some(entry) = table.get(&record.id) else { continue };
        let current_ms = period_start_ms(now_ms, record.quota_period);
        for start_ms in [period_start_ms(current_ms - 1, record.quota_period), current_ms] {
            let stored_start = u64::try_from(start_ms).unwrap_or(0);
            let usage = store.usage(record.id.as_str(), stored_start).map_err(|e| format!("loading usage: {e}"))?;
            entry.quota.restore(start_ms, &usage, now_ms);
        }
    }
    Ok(table)
}

/// The first key of an empty server: every scope, default limits, a new account. Printed once.
fn issue_first_key(keys: &KeyAdmin, now_ms: i64) -> Result<String, String> {
    let spec = KeySpec {
        account: AccountId::generate().map_err(|e| e.to_string())?,
        name: "first".into(),
        scopes: Scopes::ALL,
        expires_at_ms: None,
        rate_per_second: config::KEY_RATE_PER_SECOND_DEFAULT,
        burst: config::KEY_BURST_DEFAULT,
        quota_limit: config::KEY_QUOTA_LIMIT_DEFAULT,
        quota_period: QuotaPeriod::Month,
    };
    let view = keys.create(&spec, now_ms).map_err(|e| format!("first key: {e}"))?;
    view.key.ok_or_else(|| "first key: issued without its secret".to_owned())
}

fn start_pool(config: &ServeConfig, labels: Arc<Labels>, sink: Arc<StoreSink>) -> Result<ComputePool, String> {
    let spec: SourceSpec = config.ledger.parse().map_err(|e: crate::ledger::LedgerError| e.to_string())?;
    let pool_config = PoolConfig {
        threads: config.compute_threads,
        queue_capacity: config.queue_capacity,
        jobs_in_flight_max: config.jobs_in_flight_per_thread,
        pin: true,
        view: ViewOptions { history_depth: config.history_depth },
    };
    let make_source = move |_| Source::open(&spec, Default::default()).map_err(|e| e.to_string());
    ComputePool::start(pool_config, labels, make_source, sink)
}

fn start_api(config: &ServeConfig, app: &Arc<App>) -> Result<ServerHandle, String> {
    let driver: IoDriver = config.io_driver.parse()?;
    let server_config =
        ServerConfig { listen: config.listen, threads: config.listener_threads, driver, ..ServerConfig::default() };
    let app = app.clone();
    let handle =
        crate::server::start(server_config, move |context: &ThreadContext| ApiHandler::new(app.clone(), context))
            .map_err(|e| format!("API listener: {e}"))?;
    let drivers: Vec<&str> = handle.drivers().iter().map(|d| d.as_str()).collect();
    tracing::info!(addr = %handle.local_addr(), drivers = %drivers.join(","), "API listening");
    Ok(handle)
}

/// The admin listener: one thread of its own, on the admin address.
fn start_admin(config: &ServeConfig, state: AdminState) -> Result<ServerHandle, String> {
    let driver: IoDriver = config.io_driver.parse()?;
    let server_config = ServerConfig { listen: config.admin_listen, threads: 1, driver, ..ServerConfig::default() };
    let state = Arc::new(state);
    let handle = crate::server::start(server_config, move |_: &ThreadContext| AdminHandler::new(state.clone()))
        .map_err(|e| format!("admin listener: {e}"))?;
    admin_files::write_addr(&config.data_dir, handle.local_addr())?;
    tracing::info!(addr = %handle.local_addr(), "admin listening");
    Ok(handle)
}

/// The recovery backlog and the jobs of its last page that did not fit yet.
struct Recovery {
    backlog: Backlog,
    waiting: std::collections::VecDeque<JobRecord>,
}

impl Recovery {
    fn new(started_ms: u64) -> Recovery {
        Recovery { backlog: Backlog::new(started_ms), waiting: Default::default() }
    }

    /// Moves left-over jobs into the work queue while it has room; once none is left, tells
    /// admission that deduplication needs the index only.
    fn refill(&mut self, app: &App) {
        self.refill_queue(app);
        if self.waiting.is_empty() && self.backlog.is_done() {
            app.admission.finish_recovery();
        }
    }

    fn refill_queue(&mut self, app: &App) {
        loop {
            if self.waiting.is_empty() {
                let room = app.pool.capacity().saturating_sub(app.pool.depth()).min(STORE_PAGE_LEN_MAX);
                if room == 0 || self.backlog.is_done() {
                    return;
                }
                match self.backlog.next_page(&*app.store, room) {
                    Ok(page) if page.is_empty() => return,
                    Ok(page) => self.waiting.extend(page),
                    Err(e) => return tracing::error!(error = %e, "reading the recovery backlog"),
                }
            }
            while let Some(record) = self.waiting.pop_front() {
                let id = record.id.clone();
                if let Err(record) = app.admission.requeue(record) {
                    self.waiting.push_front(record);
                    return;
                }
                tracing::info!(job = %id, "re-queued a job left by the previous process");
            }
        }
    }
}

fn spawn_housekeeping(
    app: Arc<App>,
    mut recovery: Recovery,
    retention_days: u32,
) -> Result<(Arc<AtomicBool>, JoinHandle<()>), String> {
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let handle = std::thread::Builder::new()
        .name("xray-housekeeping".into())
        .spawn(move || {
            let mut last_sweep: Option<Instant> = None;
            while !stopped.load(Ordering::Acquire) {
                recovery.refill(&app);
                let due =
                    last_sweep.is_none_or(|t| t.elapsed() >= Duration::from_secs(config::RETENTION_SWEEP_INTERVAL_S));
                if due {
                    purge_expired(&*app.store, retention_days);
                    last_sweep = Some(Instant::now());
                }
                std::thread::sleep(Duration::from_millis(config::HOUSEKEEPING_TICK_MS));
            }
        })
        .map_err(|e| format!("housekeeping thread: {e}"))?;
    Ok((stop, handle))
}

/// Deletes finished jobs older than the retention, a bounded number of pages per sweep.
fn purge_expired(store: &dyn Store, retention_days: u32) {
    let now_ms = u64::try_from(now_unix_ms()).unwrap_or(0);
    let cutoff_ms = now_ms.saturating_sub(u64::from(retention_days) * 86_400_000);
    let mut purged = 0;
    for _ in 0..config::RETENTION_PURGE_PAGES_PER_SWEEP_MAX {
        match store.purge_finished_before(cutoff_ms, config::RETENTION_PURGE_PAGE_LEN) {
            Ok(n) => {
                purged += n;
                if n < config::RETENTION_PURGE_PAGE_LEN {
                    break;
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "retention purge");
                break;
            }
        }
    }
    if purged > 0 {
        tracing::info!(purged, "purged finished jobs past their retention");
    }
}

impl Running {
    /// The graceful stop: refuse new work, finish in-flight jobs, close listeners, sync.
    pub fn shutdown(mut self) -> Result<(), String> {
        self.api.start_draining();
        if let Some((stop, handle)) = self.housekeeping.take() {
            stop.store(true, Ordering::Release);
            let _ = handle.join();
        }
        let left = self.app.pool.shutdown();
        tracing::info!(queued = left.len(), "compute stopped; queued jobs stay durable and run after the next start");
        let result = self.api.shutdown().map_err(|e| e.to_string());
        let admin = self.admin.shutdown().map_err(|e| format!("admin listener: {e}"));
        self.store.sync().map_err(|e| format!("store sync: {e}"))?;
        result.and(admin)
    }
}

/// Prints the first key notice and the listening lines on stdout.
fn announce(running: &Running) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| format!("stdout: {e}");
    if let Some(key) = &running.first_key {
        writeln!(out, "Created the first API key (every scope). It is shown this once and will not be shown again:")
            .map_err(io)?;
        writeln!(out, "{key}").map_err(io)?;
    }
    writeln!(out, "xray: API listening on http://{}", running.api.local_addr()).map_err(io)?;
    writeln!(out, "xray: admin listening on http://{}", running.admin.local_addr()).map_err(io)?;
    out.flush().map_err(io)
}

/// `xray serve`: start, serve until SIGINT or SIGTERM, stop gracefully.
pub fn run(config: &ServeConfig) -> Result<(), String> {
    let running = start(config)?;
    announce(&running)?;
    wait_for_signal()?;
    tracing::info!("signal received: draining");
    running.shutdown()
}

/// Blocks until SIGINT or SIGTERM (on a small tokio runtime: listener threads never block).
pub fn wait_for_signal() -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| format!("SIGTERM handler: {e}"))?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
        Ok(())
    })
}
