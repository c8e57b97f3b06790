//! `ServeConfig`: everything `xray serve` runs with, its layering and its validation.
//!
//! Owns: the struct, its defaults (from the constants of `config`), reading the TOML file, and
//! `validate`, which checks the whole at start and names the first setting that is wrong.
//! Built once on the main thread; never changed after start.
//!
//! Invariant: every field is typed — a ledger spec or I/O driver that does not parse is refused
//! where it is read (flag, variable or file), never re-parsed later.
//! Deliberately absent: the flags themselves (clap, in `cli`, layered on top by `ServeArgs`).

use super::*;

/// Everything `xray serve` is configured with: defaults here, then the TOML file, then
/// environment variables and flags (clap merges those two; flags win). Validated whole at
/// start; `summary` is what gets logged (no secrets: an RPC URL shows its origin only).
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    pub listen: std::net::SocketAddr,
    pub admin_listen: std::net::SocketAddr,
    /// Allow the admin listener on a non-loopback address (off: refused at start).
    pub admin_allow_remote: bool,
    pub data_dir: std::path::PathBuf,
    /// `rocksdb` (the embedded store in `data_dir`) or `etcd:<endpoint>[,…]` (a cluster).
    pub store: StoreSpec,
    /// The cluster's keyspace in etcd (several clusters may share one etcd).
    pub etcd_prefix: String,
    /// `demo`, `demo:<seed>`, `snapshot:<dir>` or `rpc:<url>`.
    pub ledger: SourceSpec,
    pub labels: Option<std::path::PathBuf>,
    /// Labels files added to `labels` (or to the builtin labels), in order: an address a later
    /// file lists is labelled as that file says.
    pub labels_extra: Vec<std::path::PathBuf>,
    pub listener_threads: usize,
    pub compute_threads: usize,
    pub queue_capacity: usize,
    /// Queued or running jobs one account may hold; past it admission answers 429
    /// `TOO_MANY_JOBS`.
    pub live_jobs_per_account_max: usize,
    pub jobs_in_flight_per_thread: usize,
    /// Base of absolute `pollUrl`s; `http://<listen>` when unset.
    pub public_base_url: Option<String>,
    /// `auto`, `uring` or `epoll`.
    pub io_driver: IoDriver,
    pub history_depth: u32,
    /// Seconds one job may run before it ends FAILED (`UPSTREAM_UNAVAILABLE`), refunded.
    pub job_deadline_s: u64,
    /// Ledger bytes one job may read before it ends FAILED (`ANALYSIS_FAILED`), refunded.
    pub job_ledger_bytes_max: u64,
    /// Bytes of upstream answers the scan lane may hold at once, every scan together.
    pub scan_buffered_bytes_max: u64,
    /// µs of a scan's work on the listener thread (a memory-resident source) per rate-limit
    /// token it is charged beyond its first (`SCAN_LISTENER_US_PER_TOKEN_DEFAULT`); 0: off.
    pub scan_listener_us_per_token: u64,
    pub freshness_window_s: u64,
    /// Bytes of the node's ledger cache (finalized transactions and address histories read
    /// from an `rpc:` source, `<data-dir>/ledger-cache`); 0 turns it off.
    pub ledger_cache_bytes: u64,
    /// Seconds between two checks of one watched wallet (monitors), at least
    /// `MONITOR_INTERVAL_S_MIN`.
    pub monitor_interval_s: u64,
    /// Monitor checks in flight at once on this node.
    pub monitor_checks_in_flight_max: usize,
    /// Watched wallets (monitor × wallet) this node checks at most.
    pub monitor_watches_per_node_max: usize,
    pub retention_days: u32,
    /// The pace of an online backup's copy, KiB a second (1..=`BACKUP_RATE_KIB_PER_S_MAX`).
    pub backup_rate_kib_per_s: u32,
    /// fsync the WAL on every durable write (power-loss durability; group-committed).
    pub sync_writes: bool,
    pub long_poll_waiters_max: usize,
    pub ip_failures_per_s: u32,
    /// Open connections per client address (IPv6: per /64), over all listener threads.
    pub connections_per_client_max: usize,
    /// Requests one connection carries before the server closes it.
    pub requests_per_connection_max: u64,
    /// Time a response write may make no progress before the connection is closed.
    pub write_stall_timeout_ms: u64,
    /// Networks of the load balancers in front of the API: their `X-Forwarded-For` (or PROXY
    /// protocol header) names the client. Empty: every peer is the client.
    pub trusted_proxies: Vec<ProxyNetwork>,
    /// Connections from `trusted_proxies` start with a PROXY protocol (v1/v2) header.
    pub proxy_protocol: bool,
    /// `text` or `json` log lines on stderr.
    pub log_format: LogFormat,
    /// One log line per public API request (request id, route, status, duration, key id).
    pub access_log: bool,
    /// Hosts a `callbackUrl` may name whatever their address (loopback, private), over `http`
    /// too: exact host names or addresses; `localhost` and the loopback addresses it stands
    /// for (`127.0.0.1`, `::1`) allow each other (`webhooks::target`). Empty: webhooks reach
    /// public `https` hosts only.
    pub webhook_allow_hosts: Vec<String>,
    /// A proxy every webhook delivery goes through (`http://host:port` or `https://…`); the
    /// environment's `HTTP_PROXY` / `HTTPS_PROXY` / `ALL_PROXY` are never used. Each target's
    /// name is still resolved and checked before the request is handed to the proxy, which
    /// resolves it again: the proxy must refuse private and metadata addresses itself.
    pub webhook_proxy: Option<String>,
    /// Delivery attempts of one webhook (a job's callback, a monitor's event) before it is
    /// given up (`FAILED`: the dead letter a monitor's events page shows), at most
    /// `WEBHOOK_ATTEMPTS_MAX`.
    pub webhook_attempts_max: u32,
}

impl Default for ServeConfig {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        ServeConfig {
            listen: parse_addr_const(LISTEN_DEFAULT),
            admin_listen: parse_addr_const(ADMIN_LISTEN_DEFAULT),
            admin_allow_remote: false,
            data_dir: DATA_DIR_DEFAULT.into(),
            store: StoreSpec::Rocksdb,
            etcd_prefix: ETCD_PREFIX_DEFAULT.into(),
            ledger: SourceSpec::Demo { seed: DEMO_SEED_DEFAULT },
            labels: None,
            labels_extra: Vec::new(),
            listener_threads: cores,
            compute_threads: cores,
            queue_capacity: QUEUE_CAPACITY_DEFAULT,
            live_jobs_per_account_max: LIVE_JOBS_PER_ACCOUNT_MAX_DEFAULT,
            jobs_in_flight_per_thread: JOBS_IN_FLIGHT_PER_THREAD_DEFAULT,
            public_base_url: None,
            io_driver: IoDriver::Auto,
            history_depth: HISTORY_DEPTH_DEFAULT,
            job_deadline_s: JOB_DEADLINE_S_DEFAULT,
            job_ledger_bytes_max: JOB_LEDGER_BYTES_MAX_DEFAULT,
            scan_buffered_bytes_max: SCAN_BUFFERED_BYTES_MAX_DEFAULT,
            scan_listener_us_per_token: SCAN_LISTENER_US_PER_TOKEN_DEFAULT,
            freshness_window_s: FRESHNESS_WINDOW_S_DEFAULT,
            ledger_cache_bytes: LEDGER_CACHE_BYTES_DEFAULT,
            monitor_interval_s: MONITOR_INTERVAL_S_DEFAULT,
            monitor_checks_in_flight_max: MONITOR_CHECKS_IN_FLIGHT_MAX_DEFAULT,
            monitor_watches_per_node_max: MONITOR_WATCHES_PER_NODE_MAX_DEFAULT,
            retention_days: RETENTION_DAYS_DEFAULT,
            backup_rate_kib_per_s: BACKUP_RATE_KIB_PER_S_DEFAULT,
            sync_writes: false,
            long_poll_waiters_max: LONG_POLL_WAITERS_MAX_DEFAULT,
            ip_failures_per_s: IP_FAILURES_PER_S_DEFAULT,
            connections_per_client_max: CONNECTIONS_PER_CLIENT_MAX,
            requests_per_connection_max: REQUESTS_PER_CONNECTION_MAX,
            write_stall_timeout_ms: WRITE_STALL_TIMEOUT_MS,
            trusted_proxies: Vec::new(),
            proxy_protocol: false,
            log_format: LogFormat::Text,
            access_log: true,
            webhook_allow_hosts: Vec::new(),
            webhook_proxy: None,
            webhook_attempts_max: WEBHOOK_ATTEMPTS_MAX,
        }
    }
}

fn parse_addr_const(text: &str) -> std::net::SocketAddr {
    // The defaults above are literal socket addresses; a test parses each of them.
    text.parse().unwrap_or_else(|_| std::net::SocketAddr::from(([127, 0, 0, 1], 0)))
}

impl ServeConfig {
    /// Defaults, then the TOML file at `path` (if any).
    pub fn from_file(path: Option<&std::path::Path>) -> Result<ServeConfig, String> {
        let Some(path) = path else { return Ok(ServeConfig::default()) };
        let len = std::fs::metadata(path).map_err(|e| format!("config {}: {e}", path.display()))?.len();
        if len > CONFIG_FILE_BYTES_MAX {
            return Err(format!("config {}: larger than {CONFIG_FILE_BYTES_MAX} bytes", path.display()));
        }
        let text = std::fs::read_to_string(path).map_err(|e| format!("config {}: {e}", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("config {}: {e}", path.display()))
    }

    /// Checks every value; the first problem is the error, naming the setting.
    pub fn validate(&self) -> Result<(), String> {
        let in_range = |name: &str, value: usize, max: usize| {
            if (1..=max).contains(&value) {
                Ok(())
            } else {
                Err(format!("{name} must be 1..={max}, got {value}"))
            }
        };
        in_range("listener_threads", self.listener_threads, THREADS_MAX)?;
        let prefix_ok = |p: &str| p.ends_with('/') && p.bytes().all(|b| b.is_ascii_graphic());
        if self.etcd_prefix.len() > ETCD_PREFIX_BYTES_MAX || !prefix_ok(&self.etcd_prefix) {
            return Err(format!(
                "etcd_prefix must be at most {ETCD_PREFIX_BYTES_MAX} printable ASCII bytes ending in '/', got {:?}",
                self.etcd_prefix
            ));
        }
        if self.sync_writes && self.store != StoreSpec::Rocksdb {
            return Err(
                "sync_writes is for the rocksdb store (etcd acknowledges a write once a quorum fsynced it)".into()
            );
        }
        in_range("compute_threads", self.compute_threads, THREADS_MAX)?;
        in_range("queue_capacity", self.queue_capacity, QUEUE_CAPACITY_MAX)?;
        in_range("live_jobs_per_account_max", self.live_jobs_per_account_max, 2 * QUEUE_CAPACITY_MAX)?;
        in_range("jobs_in_flight_per_thread", self.jobs_in_flight_per_thread, JOBS_IN_FLIGHT_PER_THREAD_MAX)?;
        in_range("history_depth", self.history_depth as usize, HISTORY_DEPTH_MAX as usize)?;
        in_range("job_deadline_s", self.job_deadline_s as usize, JOB_DEADLINE_S_MAX as usize)?;
        if !(JOB_LEDGER_BYTES_MIN..=JOB_LEDGER_BYTES_MAX_MAX).contains(&self.job_ledger_bytes_max) {
            return Err(format!(
                "job_ledger_bytes_max must be {JOB_LEDGER_BYTES_MIN}..={JOB_LEDGER_BYTES_MAX_MAX} bytes, got {}",
                self.job_ledger_bytes_max
            ));
        }
        if !(SCAN_BUFFERED_BYTES_MIN..=SCAN_BUFFERED_BYTES_MAX_MAX).contains(&self.scan_buffered_bytes_max) {
            return Err(format!(
                "scan_buffered_bytes_max must be {SCAN_BUFFERED_BYTES_MIN}..={SCAN_BUFFERED_BYTES_MAX_MAX} bytes, got {}",
                self.scan_buffered_bytes_max
            ));
        }
        in_range("retention_days", self.retention_days as usize, RETENTION_DAYS_MAX as usize)?;
        in_range("backup_rate_kib_per_s", self.backup_rate_kib_per_s as usize, BACKUP_RATE_KIB_PER_S_MAX as usize)?;
        if !(MONITOR_INTERVAL_S_MIN..=MONITOR_INTERVAL_S_MAX).contains(&self.monitor_interval_s) {
            return Err(format!(
                "monitor_interval_s must be {MONITOR_INTERVAL_S_MIN}..={MONITOR_INTERVAL_S_MAX} seconds, got {}",
                self.monitor_interval_s
            ));
        }
        in_range("monitor_checks_in_flight_max", self.monitor_checks_in_flight_max, MONITOR_CHECKS_IN_FLIGHT_MAX_MAX)?;
        in_range("monitor_watches_per_node_max", self.monitor_watches_per_node_max, MONITOR_WATCHES_PER_NODE_MAX_MAX)?;
        in_range("webhook_attempts_max", self.webhook_attempts_max as usize, WEBHOOK_ATTEMPTS_MAX as usize)?;
        if self.ledger_cache_bytes != 0
            && !(LEDGER_CACHE_BYTES_MIN..=LEDGER_CACHE_BYTES_MAX).contains(&self.ledger_cache_bytes)
        {
            return Err(format!(
                "ledger_cache_bytes must be 0 (off) or {LEDGER_CACHE_BYTES_MIN}..={LEDGER_CACHE_BYTES_MAX} bytes, got {}",
                self.ledger_cache_bytes
            ));
        }
        in_range("long_poll_waiters_max", self.long_poll_waiters_max, 1_000_000)?;
        in_range("ip_failures_per_s", self.ip_failures_per_s as usize, 1_000_000)?;
        in_range(
            "connections_per_client_max",
            self.connections_per_client_max,
            CONNECTIONS_PER_THREAD_MAX * THREADS_MAX,
        )?;
        if self.requests_per_connection_max == 0 {
            return Err("requests_per_connection_max must be at least 1".into());
        }
        in_range(
            "write_stall_timeout_ms",
            usize::try_from(self.write_stall_timeout_ms).unwrap_or(usize::MAX),
            WRITE_STALL_TIMEOUT_MS_MAX as usize,
        )?;
        if self.trusted_proxies.len() > TRUSTED_PROXY_NETWORKS_MAX {
            return Err(format!("trusted_proxies lists more than {TRUSTED_PROXY_NETWORKS_MAX} networks"));
        }
        if self.labels_extra.len() > LABELS_EXTRA_FILES_MAX {
            return Err(format!("labels_extra lists more than {LABELS_EXTRA_FILES_MAX} files"));
        }
        if self.webhook_allow_hosts.len() > WEBHOOK_ALLOW_HOSTS_MAX {
            return Err(format!("webhook_allow_hosts lists more than {WEBHOOK_ALLOW_HOSTS_MAX} hosts"));
        }
        if let Some(bad) =
            self.webhook_allow_hosts.iter().find(|h| h.trim().is_empty() || h.len() > HOST_NAME_BYTES_MAX)
        {
            return Err(format!("webhook_allow_hosts: {bad:?} is not a host name or address"));
        }
        if self.proxy_protocol && self.trusted_proxies.is_empty() {
            return Err("proxy_protocol needs trusted_proxies: the networks whose connections carry the header".into());
        }
        if !self.admin_listen.ip().is_loopback() && !self.admin_allow_remote {
            return Err(format!(
                "admin_listen {} is not loopback: set admin_allow_remote = true to expose key management",
                self.admin_listen
            ));
        }
        if self.admin_listen == self.listen && self.listen.port() != 0 {
            return Err("admin_listen and listen must differ".into());
        }
        if let Some(proxy) = &self.webhook_proxy {
            let parsed = url::Url::parse(proxy).ok().filter(|u| matches!(u.scheme(), "http" | "https"));
            if proxy.len() > PROXY_URL_BYTES_MAX || parsed.is_none_or(|u| u.host_str().is_none()) {
                return Err(format!(
                    "webhook_proxy must be http(s)://[user:password@]host[:port], at most {PROXY_URL_BYTES_MAX} bytes"
                ));
            }
        }
        if let Some(url) = &self.public_base_url {
            let ok = (url.starts_with("http://") || url.starts_with("https://")) && !url.ends_with('/');
            if !ok {
                return Err(format!(
                    "public_base_url must be http(s)://host[:port][/prefix] without a trailing slash, got {url:?}"
                ));
            }
        }
        Ok(())
    }

    /// The base of `pollUrl`s: the configured public URL, else `http://` and the address the
    /// API listener is bound to (`bound`, which differs from `listen` when it asks for port 0).
    pub fn base_url(&self, bound: std::net::SocketAddr) -> String {
        self.public_base_url.clone().unwrap_or_else(|| format!("http://{bound}"))
    }

    /// One line for the log: every setting, the ledger URL redacted.
    pub fn summary(&self) -> String {
        format!(
            "listen={} admin_listen={} data_dir={} store={} etcd_prefix={} ledger={} labels={} listener_threads={} compute_threads={} \
             queue_capacity={} live_jobs_per_account_max={} jobs_in_flight_per_thread={} public_base_url={} io_driver={} history_depth={} \
             job_deadline_s={} job_ledger_bytes_max={} scan_buffered_bytes_max={} scan_listener_us_per_token={} \
             freshness_window_s={} ledger_cache_bytes={} monitor_interval_s={} monitor_checks_in_flight_max={} \
             monitor_watches_per_node_max={} webhook_attempts_max={} retention_days={} backup_rate_kib_per_s={} sync_writes={} long_poll_waiters_max={} ip_failures_per_s={} \
             connections_per_client_max={} requests_per_connection_max={} write_stall_timeout_ms={} \
             trusted_proxies=[{}] proxy_protocol={} log_format={} access_log={} webhook_allow_hosts=[{}] webhook_proxy={}",
            self.listen,
            self.admin_listen,
            self.data_dir.display(),
            self.store,
            self.etcd_prefix,
            self.ledger,
            std::iter::once(self.labels.as_ref().map_or_else(|| "builtin".into(), |p| p.display().to_string()))
                .chain(self.labels_extra.iter().map(|p| p.display().to_string()))
                .collect::<Vec<_>>()
                .join("+"),
            self.listener_threads,
            self.compute_threads,
            self.queue_capacity,
            self.live_jobs_per_account_max,
            self.jobs_in_flight_per_thread,
            self.public_base_url.as_deref().unwrap_or("http://<listen>"),
            self.io_driver,
            self.history_depth,
            self.job_deadline_s,
            self.job_ledger_bytes_max,
            self.scan_buffered_bytes_max,
            self.scan_listener_us_per_token,
            self.freshness_window_s,
            self.ledger_cache_bytes,
            self.monitor_interval_s,
            self.monitor_checks_in_flight_max,
            self.monitor_watches_per_node_max,
            self.webhook_attempts_max,
            self.retention_days,
            self.backup_rate_kib_per_s,
            self.sync_writes,
            self.long_poll_waiters_max,
            self.ip_failures_per_s,
            self.connections_per_client_max,
            self.requests_per_connection_max,
            self.write_stall_timeout_ms,
            self.trusted_proxies.iter().map(ToString::to_string).collect::<Vec<_>>().join(","),
            self.proxy_protocol,
            self.log_format.as_str(),
            self.access_log,
            self.webhook_allow_hosts.join(","),
            // The proxy's URL may carry a password: only whether one is set is logged.
            if self.webhook_proxy.is_some() { "set" } else { "none" },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        assert_eq!(LISTEN_DEFAULT.parse::<std::net::SocketAddr>().ok(), Some(ServeConfig::default().listen));
        assert_eq!(
            ADMIN_LISTEN_DEFAULT.parse::<std::net::SocketAddr>().ok(),
            Some(ServeConfig::default().admin_listen)
        );
        assert_eq!(ServeConfig::default().validate(), Ok(()));
        let bound: std::net::SocketAddr = "127.0.0.1:41234".parse().unwrap();
        assert_eq!(ServeConfig::default().base_url(bound), "http://127.0.0.1:41234", "the bound port, not 0");
        let public = ServeConfig { public_base_url: Some("https://api.example".into()), ..ServeConfig::default() };
        assert_eq!(public.base_url(bound), "https://api.example");
    }

    #[test]
    fn two_port_zero_addresses_may_coexist_but_equal_fixed_ones_may_not() {
        let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
        assert_eq!(ServeConfig { listen: any, admin_listen: any, ..ServeConfig::default() }.validate(), Ok(()));
        let fixed = ServeConfig::default().listen;
        let clash = ServeConfig { admin_listen: fixed, ..ServeConfig::default() };
        assert!(clash.validate().is_err());
    }

    #[test]
    fn file_overrides_defaults_and_unknown_keys_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("xray.toml");
        std::fs::write(
            &path,
            "listen = \"0.0.0.0:9000\"\nqueue_capacity = 8\nledger = \"rpc:https://rpc.example/KEY\"\n",
        )
        .unwrap();
        let c = ServeConfig::from_file(Some(&path)).unwrap();
        assert_eq!((c.listen.port(), c.queue_capacity), (9000, 8));
        assert_eq!(c.validate(), Ok(()));
        assert!(!c.summary().contains("KEY"), "the RPC URL's path is not logged");
        std::fs::write(&path, "ledger = \"mainnet\"\n").unwrap();
        let err = ServeConfig::from_file(Some(&path)).unwrap_err();
        assert!(err.contains("ledger") && err.contains("demo, demo:<seed>"), "{err}");
        std::fs::write(&path, "io_driver = \"kqueue\"\n").unwrap();
        assert!(ServeConfig::from_file(Some(&path)).unwrap_err().contains("io_driver"));
        std::fs::write(&path, "queue_capacit = 8\n").unwrap();
        assert!(ServeConfig::from_file(Some(&path)).unwrap_err().contains("unknown field"));
    }

    #[test]
    fn validation_names_the_setting() {
        type Break = fn(&mut ServeConfig);
        let cases: Vec<(Break, &str)> = vec![
            (|c| c.queue_capacity = 0, "queue_capacity"),
            (|c| c.compute_threads = THREADS_MAX + 1, "compute_threads"),
            (|c| c.admin_listen = "0.0.0.0:9901".parse().unwrap(), "admin_allow_remote"),
            (|c| c.public_base_url = Some("ftp://x".into()), "public_base_url"),
            (|c| c.public_base_url = Some("https://x/".into()), "trailing slash"),
            (|c| c.history_depth = HISTORY_DEPTH_MAX + 1, "history_depth"),
        ];
        for (breaks, needle) in cases {
            let mut c = ServeConfig::default();
            breaks(&mut c);
            let err = c.validate().unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
