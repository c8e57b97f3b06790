//! Settings of the HTTP edge and their defaults, each named with its unit.
//!
//! Owns: `ServerConfig` (its `IoDriver` is a `crate::config` value); the defaults and bounds they start from are constants
//! in `crate::config`. Read by `listener` on the thread that starts the server and copied into
//! every listener thread; never changed after start.
//!
//! Invariant: every resource a client controls at the edge has a bound here — connections per
//! thread and per client address, requests per connection, header bytes, time to send a request
//! head, idle time between requests, time to send a body, time a response may stall unread —
//! and the stop path has one too (drain time). Which peers may name another client address
//! (`proxies`) is here too; nobody by default. The body size bounds are
//! the contract's (`config::REQUEST_BODY_BYTES_MAX` here, each route's own in `api::json`), not
//! settings.

use super::peers::ProxyTrust;
use crate::config::IoDriver;
use crate::config::{
    ACCEPT_BACKLOG_LEN, BODY_READ_TIMEOUT_MS, CONNECTIONS_PER_CLIENT_MAX, CONNECTIONS_PER_THREAD_MAX, DRAIN_TIMEOUT_MS,
    HEADER_BYTES_MAX, HEADER_READ_TIMEOUT_MS, KEEP_ALIVE_IDLE_MS, REQUESTS_PER_CONNECTION_MAX, THREADS_FALLBACK,
    THREADS_MAX, WRITE_STALL_TIMEOUT_MS,
};
use std::net::SocketAddr;
use std::time::Duration;

/// The edge's settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    /// Listener threads, each with its own runtime and SO_REUSEPORT socket.
    pub threads: usize,
    pub driver: IoDriver,
    pub connections_per_thread_max: usize,
    /// Over all threads, per client address (IPv6: per /64).
    pub connections_per_client_max: usize,
    pub requests_per_connection_max: u64,
    pub header_bytes_max: usize,
    pub header_read_timeout: Duration,
    pub keep_alive_idle: Duration,
    pub body_read_timeout: Duration,
    pub write_stall_timeout: Duration,
    pub drain_timeout: Duration,
    pub accept_backlog_len: i32,
    /// Peers whose `X-Forwarded-For` / PROXY protocol header names the client.
    pub proxies: ProxyTrust,
}

impl Default for ServerConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(THREADS_FALLBACK);
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            threads,
            driver: IoDriver::Auto,
            connections_per_thread_max: CONNECTIONS_PER_THREAD_MAX,
            connections_per_client_max: CONNECTIONS_PER_CLIENT_MAX,
            requests_per_connection_max: REQUESTS_PER_CONNECTION_MAX,
            header_bytes_max: HEADER_BYTES_MAX,
            header_read_timeout: Duration::from_millis(HEADER_READ_TIMEOUT_MS),
            keep_alive_idle: Duration::from_millis(KEEP_ALIVE_IDLE_MS),
            body_read_timeout: Duration::from_millis(BODY_READ_TIMEOUT_MS),
            write_stall_timeout: Duration::from_millis(WRITE_STALL_TIMEOUT_MS),
            drain_timeout: Duration::from_millis(DRAIN_TIMEOUT_MS),
            accept_backlog_len: ACCEPT_BACKLOG_LEN,
            proxies: ProxyTrust::default(),
        }
    }
}

impl ServerConfig {
    /// Refuses settings the edge cannot honour.
    pub fn validate(&self) -> Result<(), String> {
        if self.threads == 0 || self.threads > THREADS_MAX {
            return Err(format!("threads must be 1..={THREADS_MAX}, got {}", self.threads));
        }
        if self.connections_per_thread_max == 0 || self.connections_per_client_max == 0 {
            return Err("connections_per_thread_max and connections_per_client_max must be at least 1".into());
        }
        if self.requests_per_connection_max == 0 {
            return Err("requests_per_connection_max must be at least 1".into());
        }
        if self.header_bytes_max < 1024 {
            return Err("header_bytes_max must be at least 1024".into());
        }
        let timeouts =
            [self.header_read_timeout, self.keep_alive_idle, self.body_read_timeout, self.write_stall_timeout];
        if timeouts.iter().any(Duration::is_zero) {
            return Err("timeouts must be positive".into());
        }
        Ok(())
    }

    /// hyper's read buffer: room for a whole head, never below hyper's 8 KiB minimum.
    pub fn read_buffer_bytes_max(&self) -> usize {
        (2 * self.header_bytes_max).max(8 * 1024)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LISTEN_DEFAULT, READ_BUFFER_BYTES_MAX};

    #[test]
    fn defaults_are_valid() {
        let config = ServerConfig::default();
        assert_eq!(config.validate(), Ok(()));
        assert_eq!(config.listen.to_string(), LISTEN_DEFAULT);
        assert_eq!(config.read_buffer_bytes_max(), READ_BUFFER_BYTES_MAX);
    }

    #[test]
    fn bad_settings_are_refused() {
        assert!(ServerConfig { threads: 0, ..Default::default() }.validate().is_err());
        assert!(ServerConfig { connections_per_thread_max: 0, ..Default::default() }.validate().is_err());
        assert!(ServerConfig { header_read_timeout: Duration::ZERO, ..Default::default() }.validate().is_err());
        assert!(ServerConfig { write_stall_timeout: Duration::ZERO, ..Default::default() }.validate().is_err());
        assert!(ServerConfig { connections_per_client_max: 0, ..Default::default() }.validate().is_err());
        assert!(ServerConfig { requests_per_connection_max: 0, ..Default::default() }.validate().is_err());
        assert_eq!("epoll".parse::<IoDriver>(), Ok(IoDriver::Epoll));
        assert!("kqueue".parse::<IoDriver>().is_err());
    }
}
