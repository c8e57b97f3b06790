//! `xray serve`: starting the API server, running it, and stopping it gracefully.
//!
//! Owns: the start-up order — (1) validate the config; (2) open RocksDB (before any thread is
//! pinned: its background threads must not inherit a pin); (3) load the key table and restore
//! each key's quota counters from the store's usage records; (4) start the pinned compute pool,
//! each thread with its ledger source (a source that cannot open fails the start, before any
//! key exists); (5) on an empty key table, issue the first key (every scope) and print it once, before any
//! listener answers; (6)
//! re-queue the jobs a stopped process left live (the rest waits in the recovery backlog);
//! (7) start the store-work pool (over RocksDB: the API's blocking store sequences,
//! `xray-store-work-i`) and the public listeners, then the admin listener (its bearer token
//! created on the first start, its bound address written to the data directory for `xray keys`); (8) the
//! housekeeping thread (backlog refill, retention purge). And the stop order on SIGINT/SIGTERM: health checks fail and new work is
//! refused with 503 (draining), a running backup ends and removes what it wrote, in-flight jobs finish, queued ones stay durable as `QUEUED`,
//! listeners close, the store-work pool runs what they queued and ends, the WAL is synced.
//! Runs on the main thread; the threads it starts are listed in ARCHITECTURE.md.
//!
//! Invariant: the process prints the first key exactly once, on the start that created it,
//! and never logs a key.
//! Invariant: stdout carries only the first-key notice and the `listening` lines (tests and
//! scripts read them); everything else is logged to stderr.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::time::Duration;

use crate::admin::keys::KeyAdmin;
use crate::admin::{files as admin_files, AdminHandler, AdminState};
use crate::api::{ApiHandler, App};
use crate::auth::key::{AccountId, KeyId};
use crate::auth::record::{KeyRecord, KeySpec};
use crate::auth::scope::Scopes;
use crate::auth::table::KeyTable;
use crate::backup::{BackupLayout, Backups};
use crate::clock::{now_unix_ms, MonotonicClock};
use crate::config::{self, ServeConfig, SourceSpec, StoreSpec, STORE_PAGE_LEN_MAX};
use crate::http::{ProxyTrust, ServerConfig, ServerHandle, ThreadContext};
use crate::jobs::admission::Admission;
use crate::jobs::adoption::Adoption;
use crate::jobs::finished::FinishedJobs;
use crate::jobs::index::StatusIndex;
use crate::jobs::pool::{ComputePool, JobBudget, PoolConfig};
use crate::jobs::recovery::{restore_quota, spawn_housekeeping, Housekeeping, Recovery, Upkeep};
use crate::jobs::sink::{Failing, StoreSink};
use crate::labels::live::LiveLabels;
use crate::labels::Labels;
use crate::ledger::cache::{CacheOptions, Cached, LedgerCache};
use crate::ledger::source::Source;
use crate::ledger::view::ViewOptions;
use crate::limits::ip::IpFailureLimiter;
use crate::limits::quota::QuotaPeriod;
use crate::limits::rate::RateLimit;
use crate::metrics::Metrics;
use crate::monitors::{Registry, Scheduler, SchedulerDeps, SchedulerSettings};
use crate::policy::Policies;
use crate::signing::ReportSigner;
use crate::store::etcd::{EtcdStore, KeyChange};
use crate::store::group_commit::GroupCommit;
use crate::store::work::StoreWorkPool;
use crate::store::{RocksStore, Store, StoreOptions};
use crate::webhooks::{Deliveries, Render, TargetPolicy, WebhookSettings};

/// Sub-directory of the data directory holding RocksDB.
pub const DB_DIR_NAME: &str = "db";
/// The ledger cache's directory under the data directory (`ledger::cache`).
pub const LEDGER_CACHE_DIR_NAME: &str = "ledger-cache";
/// The files beside the store that a backup holds and a restore requires: the admin token and
/// the report-signing keys (nothing else in the data directory is irreplaceable).
pub const BACKED_UP_FILES: [&str; 2] = [admin_files::TOKEN_FILE_NAME, crate::signing::ring::KEY_FILE_NAME];
/// Bytes in a KiB (the backup rate's unit).
const BYTES_PER_KIB: u64 = 1024;

/// The running server, for `run` and for tests that start it in-process.
pub struct Running {
    pub api: ServerHandle,
    pub admin: ServerHandle,
    pub app: Arc<App>,
    pub store: Arc<dyn Store>,
    /// This node's handle on the cluster (`--store etcd:…`).
    pub cluster: Option<Arc<EtcdStore>>,
    housekeeping: Option<Housekeeping>,
    webhooks: Option<Deliveries>,
    monitors: Option<Scheduler>,
    /// The online backups (the admin API starts them; the stop ends the running one).
    backups: Arc<Backups>,
    /// The key printed at first start, if this start created it.
    pub first_key: Option<FirstKey>,
}

/// The key an empty server issues at its first start, and its account (printed with it: the
/// account is what `xray accounts` and the admin API's account routes name).
#[derive(Clone)]
pub struct FirstKey {
    pub secret: String,
    pub account: String,
}

/// Never shows the secret: a `{:?}` in a log or a panic message must not leak a usable key.
impl std::fmt::Debug for FirstKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FirstKey").field("secret", &"<redacted>").field("account", &self.account).finish()
    }
}

/// Opens everything and starts serving; returns once every listener serves. The first key, if
/// this start issues it, is only returned (in `Running::first_key`): `run` shows it.
pub fn start(config: &ServeConfig) -> Result<Running, String> {
    start_showing(config, |_| Ok(()))
}

/// `start`, calling `show` with the first key as soon as it exists: before any listener
/// answers (a script that waits for `/healthz` then reads the key finds it), and so that a start
/// that fails after issuing it still shows the key it left in the store.
fn start_showing(config: &ServeConfig, show: impl FnOnce(&FirstKey) -> Result<(), String>) -> Result<Running, String> {
    config.validate()?;
    tracing::info!(config = %config.summary(), "starting");
    crate::store::create_private_dir(&config.data_dir)
        .map_err(|e| format!("data dir {}: {e}", config.data_dir.display()))?;
    let started_ms = now_unix_ms();
    let (store, cluster) = open_store(config, started_ms)?;
    let admin_token = admin_files::load_or_create_token(&config.data_dir)?;
    // Signed reports: the key ring, created on the first start (a cluster's shared by its nodes).
    let signer = Arc::new(match &cluster {
        Some(_) => ReportSigner::open_shared(store.clone(), started_ms)?,
        None => ReportSigner::open_file(&config.data_dir, started_ms)?,
    });
    let keys = match &cluster {
        Some(etcd) => follow_keys(etcd, started_ms)?,
        None => Arc::new(load_keys(&*store, started_ms)?),
    };
    let key_admin = KeyAdmin { keys, store: store.clone() };
    let keys = key_admin.keys.clone();
    let labels = Labels::load_with(config.labels.as_deref(), &config.labels_extra)?;
    let labels = LiveLabels::new(labels, config.labels.clone(), config.labels_extra.clone());
    let policies = Policies::load(&*store).map_err(|e| format!("reading the policies: {e}"))?;
    let metrics = Arc::new(Metrics::default());
    let index = Arc::new(StatusIndex::new(
        config.queue_capacity + config.compute_threads * config.jobs_in_flight_per_thread,
        config.live_jobs_per_account_max,
    ));
    let (ledger_failing, store_failing) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let finished = Arc::new(FinishedJobs::new(config::FINISHED_CACHE_BYTES, config::FINISHED_CACHE_ENTRIES_MAX));
    let failing = Failing { ledger: ledger_failing.clone(), store: store_failing.clone() };
    let sink = Arc::new(
        StoreSink::new(store.clone(), index.clone(), finished.clone(), keys.clone(), metrics.clone(), failing)
            .with_signer(signer.clone()),
    );
    let ledger_cache = open_ledger_cache(config)?;
    let pool = Arc::new(start_pool(config, labels.clone(), sink.clone(), ledger_cache.clone())?);
    // After the pool: a start that fails on its ledger source must not have created (and so
    // never shown) the first key.
    let first_key =
        match keys.is_empty() && claims_first_key(cluster.as_deref()).inspect_err(|_| drop(pool.shutdown()))? {
            true => Some(issue_first_key(&key_admin, started_ms).inspect_err(|_| drop(pool.shutdown()))?),
            false => None,
        };
    if let Some(key) = &first_key {
        show(key).inspect_err(|_| drop(pool.shutdown()))?;
    }
    let freshness_window_ms = config.freshness_window_s.saturating_mul(1_000);
    let admission = Admission::new(store.clone(), index.clone(), pool.clone(), finished, freshness_window_ms)
        .with_labels(labels.clone())
        .with_policies(policies);
    let admission = Arc::new(match &cluster {
        Some(etcd) => admission.in_cluster(etcd.clone()),
        None => admission,
    });
    let ip_limit = RateLimit::new(config.ip_failures_per_s, config.ip_failures_per_s).map_err(|e| e.to_string())?;
    let group_commit = match config.sync_writes {
        true => Some(GroupCommit::start(store.clone()).map_err(|e| format!("WAL sync thread: {e}"))?),
        false => None,
    };
    let app = Arc::new(App {
        keys,
        store: store.clone(),
        index,
        pool,
        admission: admission.clone(),
        labels,
        metrics,
        ip_failures: IpFailureLimiter::new(ip_limit),
        clock: MonotonicClock::new(),
        base_url: std::sync::OnceLock::new(),
        waiters: AtomicUsize::new(0),
        waiters_max: config.long_poll_waiters_max,
        ledger_failing,
        store_failing,
        group_commit,
        access_log: config.access_log,
        webhook_policy: crate::webhooks::TargetPolicy::new(&config.webhook_allow_hosts),
        scan: Arc::new(crate::scan::lane::Lane::start(
            &config.ledger,
            crate::scan::lane::LaneLimits {
                buffered_bytes_max: config.scan_buffered_bytes_max,
                listener_us_per_token: config.scan_listener_us_per_token,
            },
        )?),
        monitors: Arc::new(Registry::new(store.clone())),
        monitor_interval_ms: config.monitor_interval_s.saturating_mul(1_000),
        registry_work: Default::default(),
        store_work: match &cluster {
            Some(_) => None,
            None => {
                Some(StoreWorkPool::start(store.clone(), config::STORE_WORK_THREADS, config::STORE_WORK_QUEUE_LEN_MAX)?)
            }
        },
        feedback: Arc::new(crate::feedback::Book::new(store.clone())),
        signer,
    });
    let upkeep = match &cluster {
        Some(etcd) => Upkeep::Adopt(Adoption::new(etcd.clone(), app.keys.clone())),
        None => {
            let mut backlog = Recovery::new(started_ms);
            backlog.refill(&admission);
            Upkeep::Recover(backlog)
        }
    };
    // A start that fails from here on must not leave the sync thread holding the store open.
    let stop_group_commit = |_: &String| app.group_commit.iter().for_each(GroupCommit::stop);
    let api = start_api(config, &app).inspect_err(stop_group_commit)?;
    let _ = app.base_url.set(config.base_url(api.local_addr()));
    let backups = Arc::new(backups(config, &store, cluster.is_some()));
    let admin_state = AdminState {
        app: app.clone(),
        keys: key_admin,
        token: admin_token,
        api_stop: api.stop_state(),
        backups: backups.clone(),
    };
    let admin = start_admin(config, admin_state).inspect_err(stop_group_commit)?;
    let housekeeping = Some(spawn_housekeeping(admission, sink, upkeep, config.retention_days)?);
    let webhooks = Some(start_webhooks(config, &store, &app.keys)?);
    let monitors = Some(start_monitors(config, &app, ledger_cache)?);
    Ok(Running { api, admin, app, store, cluster, housekeeping, webhooks, monitors, backups, first_key })
}

/// The monitor scheduler (`xray-monitors`): checks watched wallets, admits their re-analyses.
fn start_monitors(config: &ServeConfig, app: &Arc<App>, cache: Option<Arc<LedgerCache>>) -> Result<Scheduler, String> {
    let deps = SchedulerDeps {
        registry: app.monitors.clone(),
        admission: app.admission.clone(),
        keys: app.keys.clone(),
        ledger: config.ledger.clone(),
        cache,
        cluster: app.admission.cluster().cloned(),
        labels: app.labels.clone(),
    };
    let settings = SchedulerSettings {
        interval: Duration::from_secs(config.monitor_interval_s),
        checks_in_flight_max: config.monitor_checks_in_flight_max,
        watches_max: config.monitor_watches_per_node_max,
        history_depth: config.history_depth,
    };
    Scheduler::start(deps, settings)
}

/// The webhook delivery thread, rendering each document as a poll would answer it.
fn start_webhooks(config: &ServeConfig, store: &Arc<dyn Store>, keys: &Arc<KeyTable>) -> Result<Deliveries, String> {
    let settings = WebhookSettings {
        policy: TargetPolicy::new(&config.webhook_allow_hosts),
        in_flight_max: config::WEBHOOK_IN_FLIGHT_MAX,
        in_flight_per_account_max: config::WEBHOOK_IN_FLIGHT_PER_ACCOUNT_MAX,
        proxy: config.webhook_proxy.clone(),
        timeout: Duration::from_millis(config::WEBHOOK_TIMEOUT_MS),
        attempts_max: config.webhook_attempts_max,
        retry_window: Duration::from_millis(config::WEBHOOK_RETRY_WINDOW_MS),
    };
    let render: Render =
        Arc::new(|record, payload| crate::api::webhook_document(record, payload).map_err(|e| e.to_string()));
    Deliveries::start(store.clone(), keys.clone(), settings, render)
}

/// The online backups of this node's data directory (none on a cluster node: its store is etcd).
fn backups(config: &ServeConfig, store: &Arc<dyn Store>, clustered: bool) -> Backups {
    let layout =
        BackupLayout { data_dir: config.data_dir.clone(), db_dir_name: DB_DIR_NAME, files: BACKED_UP_FILES.to_vec() };
    if let Err(e) = crate::backup::take::remove_stale_staging(&config.data_dir) {
        tracing::warn!(error = %e, "could not remove a stopped backup's staging directory");
    }
    let store = (!clustered).then(|| store.clone());
    Backups::new(store, layout, u64::from(config.backup_rate_kib_per_s) * BYTES_PER_KIB)
}

/// The store every component uses, and the cluster's etcd when it is that store.
type Stores = (Arc<dyn Store>, Option<Arc<EtcdStore>>);

/// The embedded RocksDB in the data directory, or this node's handle on the cluster's etcd.
fn open_store(config: &ServeConfig, started_ms: u64) -> Result<Stores, String> {
    match &config.store {
        StoreSpec::Rocksdb => {
            let options = StoreOptions { sync_writes: config.sync_writes, ..StoreOptions::default() };
            let rocks =
                RocksStore::open(&config.data_dir.join(DB_DIR_NAME), &options).map_err(|e| format!("store: {e}"))?;
            Ok((Arc::new(rocks), None))
        }
        StoreSpec::Etcd { endpoints } => {
            let etcd = open_etcd(endpoints, &config.etcd_prefix, started_ms)?;
            tracing::info!(node = etcd.node_id(), "joined the cluster");
            let etcd = Arc::new(etcd);
            Ok((etcd.clone(), Some(etcd)))
        }
    }
}

/// This node's handle on the cluster's etcd, waited for at start: a node started with (or just
/// before) its etcd — a machine's boot, a script that starts both — retries a store that does
/// not answer yet every `ETCD_START_RETRY_MS`, saying so once, for at most
/// `ETCD_START_WAIT_S_MAX`; any other refusal (a schema version, a bad prefix) ends the start
/// at once.
fn open_etcd(endpoints: &[String], prefix: &str, started_ms: u64) -> Result<EtcdStore, String> {
    let at = endpoints.join(",");
    let deadline = std::time::Instant::now() + Duration::from_secs(config::ETCD_START_WAIT_S_MAX);
    let mut said = false;
    loop {
        match EtcdStore::open(endpoints, prefix, started_ms) {
            Ok(etcd) => return Ok(etcd),
            Err(e) if e.is_transient() && std::time::Instant::now() < deadline => {
                if !said {
                    let wait_s = config::ETCD_START_WAIT_S_MAX;
                    tracing::warn!(error = %e, "waiting for etcd at {at} (at most {wait_s} s)");
                    said = true;
                }
                std::thread::sleep(Duration::from_millis(config::ETCD_START_RETRY_MS));
            }
            Err(e) => return Err(format!("store: etcd at {at}: {e}")),
        }
    }
}

/// A cluster node's key table: every key etcd holds, with its usage, then every change after
/// (the key watch, on the etcd thread: created, revoked and rotated keys reach this node).
fn follow_keys(etcd: &Arc<EtcdStore>, now_ms: u64) -> Result<Arc<KeyTable>, String> {
    let (records, revision) = etcd.all_keys().map_err(|e| format!("loading keys: {e}"))?;
    let table = Arc::new(KeyTable::from_records(records, now_ms).map_err(|e| format!("loading keys: {e}"))?);
    restore_quota(&table, &**etcd, now_ms)?;
    let keys = table.clone();
    etcd.watch_keys(revision, move |change| {
        let now_ms = now_unix_ms();
        let applied = match change {
            KeyChange::Put(record) => keys.upsert(*record, now_ms),
            KeyChange::Deleted(id) => KeyId::parse(&id).map_or(Ok(()), |id| keys.remove(&id).map(drop)),
            KeyChange::Reload(records) => keys.reload(records, now_ms),
        };
        if let Err(e) = applied {
            tracing::error!(error = %e, "a key change from etcd could not be applied");
        }
    });
    Ok(table)
}

/// On one node, whether the table is empty decides; in a cluster, also a claim in etcd, so
/// nodes starting together on an empty cluster print one first key between them.
fn claims_first_key(cluster: Option<&EtcdStore>) -> Result<bool, String> {
    cluster.map_or(Ok(true), |etcd| etcd.claim_first_key().map_err(|e| format!("first key: {e}")))
}

/// Every stored key, with each key's quota counters of the current and previous period
/// restored from the store's usage records.
fn load_keys(store: &dyn Store, now_ms: u64) -> Result<KeyTable, String> {
    let mut records = Vec::new();
    loop {
        let page = store.list_keys(records.last().map(|r: &KeyRecord| r.id.as_str()), STORE_PAGE_LEN_MAX);
        let page = page.map_err(|e| format!("loading keys: {e}"))?;
        let done = page.len() < STORE_PAGE_LEN_MAX;
        records.extend(page);
        if done {
            break;
        }
    }
    let table = KeyTable::from_records(records, now_ms).map_err(|e| format!("loading keys: {e}"))?;
    restore_quota(&table, store, now_ms)?;
    Ok(table)
}

/// The first key of an empty server: every scope, default limits, a new account. Printed once.
fn issue_first_key(keys: &KeyAdmin, now_ms: u64) -> Result<FirstKey, String> {
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
    let secret = view.key.ok_or_else(|| "first key: issued without its secret".to_owned())?;
    Ok(FirstKey { secret, account: view.account })
}

fn start_pool(
    config: &ServeConfig,
    labels: Arc<LiveLabels>,
    sink: Arc<StoreSink>,
    cache: Option<Arc<LedgerCache>>,
) -> Result<ComputePool, String> {
    let spec = config.ledger.clone();
    let pool_config = PoolConfig {
        threads: config.compute_threads,
        queue_capacity: config.queue_capacity,
        jobs_in_flight_max: config.jobs_in_flight_per_thread,
        pin: true,
        view: ViewOptions::deep(config.history_depth),
        budget: JobBudget {
            deadline: Duration::from_secs(config.job_deadline_s),
            ledger_bytes_max: config.job_ledger_bytes_max,
        },
    };
    let make_source = move |_| {
        Source::open(&spec, Default::default()).map(|s| Cached::new(s, cache.clone())).map_err(|e| e.to_string())
    };
    ComputePool::start(pool_config, labels, make_source, sink)
}

/// The node's ledger cache, for an `rpc:` source with a non-zero `ledger_cache_bytes` (the
/// demo and snapshots are read locally: nothing to save). Its own directory in the data
/// directory, on a cluster node too: a cache, never shared.
fn open_ledger_cache(config: &ServeConfig) -> Result<Option<Arc<LedgerCache>>, String> {
    let SourceSpec::Rpc { url } = &config.ledger else { return Ok(None) };
    if config.ledger_cache_bytes == 0 {
        return Ok(None);
    }
    let dir = config.data_dir.join(LEDGER_CACHE_DIR_NAME);
    let options = CacheOptions { bytes_max: config.ledger_cache_bytes };
    // The whole URL names the source (only its digest is kept): histories of one endpoint
    // are never read as another's.
    let cache = LedgerCache::open(&dir, url, options)?;
    tracing::info!(dir = %dir.display(), bytes_max = config.ledger_cache_bytes, "ledger cache open");
    Ok(Some(Arc::new(cache)))
}

fn start_api(config: &ServeConfig, app: &Arc<App>) -> Result<ServerHandle, String> {
    let server_config = ServerConfig {
        listen: config.listen,
        threads: config.listener_threads,
        driver: config.io_driver,
        connections_per_client_max: config.connections_per_client_max,
        requests_per_connection_max: config.requests_per_connection_max,
        write_stall_timeout: Duration::from_millis(config.write_stall_timeout_ms),
        proxies: ProxyTrust {
            networks: config.trusted_proxies.iter().map(|network| network.0).collect(),
            proxy_protocol: config.proxy_protocol,
        },
        ..ServerConfig::default()
    };
    let app = app.clone();
    let handle =
        crate::http::start(server_config, move |context: &ThreadContext| ApiHandler::new(app.clone(), context))
            .map_err(|e| format!("API listener: {e}"))?;
    let drivers: Vec<&str> = handle.drivers().iter().map(|d| d.as_str()).collect();
    tracing::info!(addr = %handle.local_addr(), drivers = %drivers.join(","), "API listening");
    Ok(handle)
}

/// The admin listener: one thread of its own, on the admin address.
fn start_admin(config: &ServeConfig, state: AdminState) -> Result<ServerHandle, String> {
    let server_config =
        ServerConfig { listen: config.admin_listen, threads: 1, driver: config.io_driver, ..ServerConfig::default() };
    let state = Arc::new(state);
    let handle = crate::http::start(server_config, move |_: &ThreadContext| AdminHandler::new(state.clone()))
        .map_err(|e| format!("admin listener: {e}"))?;
    admin_files::write_addr(&config.data_dir, handle.local_addr())?;
    tracing::info!(addr = %handle.local_addr(), "admin listening");
    Ok(handle)
}

impl Running {
    /// The graceful stop: refuse new work, finish in-flight jobs, close listeners, sync.
    pub fn shutdown(mut self) -> Result<(), String> {
        self.api.start_draining();
        // A running backup ends (within a tenth of a second of its copy) and removes what it
        // wrote: a stopped server must not leave a half backup, nor hard links in its data dir.
        self.backups.stop();
        // No new re-analyses: a check in flight is dropped, its cursor unmoved (checked again
        // after the next start).
        if let Some(monitors) = self.monitors.take() {
            monitors.stop();
        }
        if let Some(housekeeping) = self.housekeeping.take() {
            housekeeping.stop();
        }
        // Deliveries in flight end within their timeout; what is left stays in the outbox.
        if let Some(webhooks) = self.webhooks.take() {
            webhooks.stop();
        }
        let left = self.app.pool.shutdown();
        tracing::info!(queued = left.len(), "compute stopped; queued jobs stay durable and run after the next start");
        let result = self.api.shutdown().map_err(|e| e.to_string());
        // After the listeners: what they queued runs, then the threads end.
        if let Some(store_work) = &self.app.store_work {
            store_work.stop();
        }
        let admin = self.admin.shutdown().map_err(|e| format!("admin listener: {e}"));
        if let Some(group) = &self.app.group_commit {
            group.stop();
        }
        if let Some(etcd) = &self.cluster {
            // Its lease goes: what it still owned (queued jobs) is adopted by the others at once.
            etcd.leave();
        }
        self.store.sync().map_err(|e| format!("store sync: {e}"))?;
        result.and(admin)
    }
}

/// Prints the first key notice on stdout, flushed.
fn show_first_key(FirstKey { secret, account }: &FirstKey) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| format!("stdout: {e}");
    // The key alone on the line after the notice: scripts take that line (or `^svc_live_`).
    writeln!(
        out,
        "Created the first API key (every scope, account {account}). It is shown this once and will not be shown again:"
    )
    .map_err(io)?;
    writeln!(out, "{secret}").map_err(io)?;
    out.flush().map_err(io)
}

/// Prints the listening lines on stdout.
fn announce(running: &Running) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    let io = |e: std::io::Error| format!("stdout: {e}");
    writeln!(out, "xray: API listening on http://{}", running.api.local_addr()).map_err(io)?;
    writeln!(out, "xray: admin listening on http://{}", running.admin.local_addr()).map_err(io)?;
    out.flush().map_err(io)
}

/// `xray serve`: start, serve until SIGINT or SIGTERM, stop gracefully.
pub fn run(config: &ServeConfig) -> Result<(), String> {
    // First: whoever reads the key notice, the announcement or a `/healthz` answer may send
    // SIGTERM at once, and a signal with no handler yet would end the process without the
    // drain. One during the start is kept and drains as soon as the start is done.
    let signals = StopSignals::install()?;
    let running = start_showing(config, show_first_key)?;
    announce(&running)?;
    signals.wait();
    tracing::info!("signal received: draining");
    running.shutdown()
}

/// SIGINT and SIGTERM, caught from `install` on (on a small tokio runtime: listener threads
/// never block).
pub struct StopSignals {
    runtime: tokio::runtime::Runtime,
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Replaces the default dispositions (which end the process) from this call on.
    pub fn install() -> Result<Self, String> {
        use tokio::signal::unix::{signal, SignalKind};
        let runtime = crate::ledger::runtime()?;
        let entered = runtime.enter();
        let interrupt = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
        let terminate = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
        drop(entered);
        Ok(StopSignals { runtime, interrupt, terminate })
    }

    /// Blocks until SIGINT or SIGTERM arrives (or arrived since `install`).
    pub fn wait(self) {
        let StopSignals { runtime, mut interrupt, mut terminate } = self;
        runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        });
    }
}
