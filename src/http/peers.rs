//! Who the client is, and how many connections it holds: trusted proxies, the client address
//! behind them (`X-Forwarded-For` or the PROXY protocol), and the per-client connection count
//! every listener thread shares.
//!
//! Owns: `ProxyTrust` (the configured proxy networks and whether they speak the PROXY
//! protocol), `ProxyTrust::client_of` (the `X-Forwarded-For` walk), `read_proxy_header` (PROXY
//! protocol v1/v2, parsed by the `ppp` crate) and `PeerTable` with its `PeerSlot` guard. Called
//! on the listener thread of the connection; `PeerTable` is one table behind a mutex for all
//! threads, touched twice per connection (open, close), never per request.
//!
//! Invariant: a forwarded address is believed only from a peer inside a configured proxy
//! network, and the walk through `X-Forwarded-For` goes right to left, stopping at the first
//! address that is not a proxy — entries a client wrote itself (to the left) are never reached
//! while a proxy appended the real one. At most `FORWARDED_HOPS_MAX` entries are read.
//! Invariant: at most `connections_per_client_max` connections per client are open at once
//! (IPv6 clients are counted per /64, what one host is usually given); proxies are not counted
//! as clients (their connections are bounded by the per-thread cap), the client behind a PROXY
//! protocol header is.
//! Deliberately absent: the RFC 7239 `Forwarded` header (no proxy in front of this service
//! sends only that); trusting any address by default (an empty list trusts nobody).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use ipnet::IpNet;
use parking_lot::Mutex;
use ppp::{v1, v2, HeaderResult, PartialResult};
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::config::{FORWARDED_HOPS_MAX, PROXY_HEADER_BYTES_MAX};

/// The proxies whose word about the client is believed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProxyTrust {
    /// Networks of the proxies (load balancers) in front of this service.
    pub networks: Vec<IpNet>,
    /// Connections from those networks start with a PROXY protocol (v1 or v2) header.
    pub proxy_protocol: bool,
}

impl ProxyTrust {
    pub fn trusts(&self, ip: IpAddr) -> bool {
        self.networks.iter().any(|net| net.contains(&ip))
    }

    /// Whether a connection from `peer` must start with a PROXY protocol header.
    pub fn expects_proxy_header(&self, peer: IpAddr) -> bool {
        self.proxy_protocol && self.trusts(peer)
    }

    /// The client of a request that came from `peer` carrying `forwarded` (the values of every
    /// `X-Forwarded-For` line, in order). Walks from the right while addresses are proxies; an
    /// entry that is not an address ends the walk at the last proxy seen.
    pub fn client_of<'a, I>(&self, peer: IpAddr, forwarded: I) -> IpAddr
    where
        I: DoubleEndedIterator<Item = &'a [u8]>,
    {
        if !self.trusts(peer) {
            return peer;
        }
        let mut client = peer;
        let entries = forwarded.rev().flat_map(|line| line.rsplit(|&byte| byte == b','));
        for entry in entries.take(FORWARDED_HOPS_MAX) {
            let Some(ip) = parse_forwarded(entry) else { return client };
            client = ip;
            if !self.trusts(ip) {
                return ip;
            }
        }
        client
    }
}

/// One `X-Forwarded-For` entry: an address, optionally with a port (`1.2.3.4:5`, `[::1]:5`).
fn parse_forwarded(entry: &[u8]) -> Option<IpAddr> {
    let text = std::str::from_utf8(entry).ok()?.trim();
    text.parse::<IpAddr>().ok().or_else(|| text.parse::<std::net::SocketAddr>().ok().map(|addr| addr.ip()))
}

/// Why a connection from a proxy was closed before HTTP.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProxyHeaderError {
    #[error("no PROXY protocol header within {0:?}")]
    Timeout(Duration),
    #[error("connection closed before the PROXY protocol header ended")]
    Closed,
    #[error("PROXY protocol header longer than {PROXY_HEADER_BYTES_MAX} bytes")]
    TooLong,
    #[error("malformed PROXY protocol header")]
    Malformed,
    #[error("reading the PROXY protocol header: {0}")]
    Io(String),
}

/// What a PROXY protocol header said: the client (none for a proxy's own health check,
/// `LOCAL`/`UNKNOWN`), and the bytes read past the header (the start of the HTTP request).
#[derive(Debug, PartialEq)]
pub struct ProxyHeader {
    pub client: Option<IpAddr>,
    pub rest: Bytes,
}

/// Reads one PROXY protocol header (v1 or v2) from the start of `stream`, within `timeout`.
pub async fn read_proxy_header<S: AsyncRead + Unpin>(
    stream: &mut S,
    timeout: Duration,
) -> Result<ProxyHeader, ProxyHeaderError> {
    match monoio::time::timeout(timeout, read_header_bytes(stream)).await {
        Ok(result) => result,
        Err(_) => Err(ProxyHeaderError::Timeout(timeout)),
    }
}

async fn read_header_bytes<S: AsyncRead + Unpin>(stream: &mut S) -> Result<ProxyHeader, ProxyHeaderError> {
    let mut buffer = Vec::with_capacity(PROXY_HEADER_BYTES_MAX);
    loop {
        if let Some(parsed) = parse_proxy_header(&buffer)? {
            return Ok(parsed);
        }
        if buffer.len() >= PROXY_HEADER_BYTES_MAX {
            return Err(ProxyHeaderError::TooLong);
        }
        let mut chunk = [0u8; PROXY_HEADER_BYTES_MAX];
        let room = PROXY_HEADER_BYTES_MAX - buffer.len();
        let read = stream.read(&mut chunk[..room]).await.map_err(|e| ProxyHeaderError::Io(e.to_string()))?;
        if read == 0 {
            return Err(ProxyHeaderError::Closed);
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

/// `Ok(None)` while the header may still be incomplete.
pub fn parse_proxy_header(buffer: &[u8]) -> Result<Option<ProxyHeader>, ProxyHeaderError> {
    if buffer.is_empty() {
        return Ok(None);
    }
    let parsed = HeaderResult::parse(buffer);
    if parsed.is_incomplete() {
        return Ok(None);
    }
    let (client, len) = match parsed {
        HeaderResult::V1(Ok(header)) => (v1_client(&header.addresses), header.header.len()),
        HeaderResult::V2(Ok(header)) => (v2_client(&header), header.len()),
        HeaderResult::V1(Err(_)) | HeaderResult::V2(Err(_)) => return Err(ProxyHeaderError::Malformed),
    };
    let rest = Bytes::copy_from_slice(buffer.get(len..).unwrap_or_default());
    Ok(Some(ProxyHeader { client, rest }))
}

fn v1_client(addresses: &v1::Addresses) -> Option<IpAddr> {
    match addresses {
        v1::Addresses::Tcp4(ip) => Some(ip.source_address.into()),
        v1::Addresses::Tcp6(ip) => Some(ip.source_address.into()),
        v1::Addresses::Unknown => None,
    }
}

fn v2_client(header: &v2::Header<'_>) -> Option<IpAddr> {
    if header.command == v2::Command::Local {
        return None;
    }
    match &header.addresses {
        v2::Addresses::IPv4(ip) => Some(ip.source_address.into()),
        v2::Addresses::IPv6(ip) => Some(ip.source_address.into()),
        v2::Addresses::Unspecified | v2::Addresses::Unix(_) => None,
    }
}

/// Open connections per client, for every listener thread.
#[derive(Debug)]
pub struct PeerTable {
    open: Mutex<HashMap<IpAddr, usize>>,
    per_client_max: usize,
}

impl PeerTable {
    pub fn new(per_client_max: usize) -> Arc<PeerTable> {
        Arc::new(PeerTable { open: Mutex::new(HashMap::new()), per_client_max })
    }

    /// A slot for one more connection of `client`, or `None` when it holds its cap already.
    pub fn try_open(self: &Arc<PeerTable>, client: IpAddr) -> Option<PeerSlot> {
        let key = client_key(client);
        let mut open = self.open.lock();
        let count = open.entry(key).or_insert(0);
        if *count >= self.per_client_max {
            return None;
        }
        *count += 1;
        Some(PeerSlot { table: self.clone(), key })
    }

    /// Connections `client` holds now.
    #[cfg(test)]
    fn open_of(&self, client: IpAddr) -> usize {
        self.open.lock().get(&client_key(client)).copied().unwrap_or(0)
    }

    fn close(&self, key: IpAddr) {
        let mut open = self.open.lock();
        if let Some(count) = open.get_mut(&key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&key);
            }
        }
    }
}

/// An IPv4 address as is; an IPv6 address by its /64 (an IPv4-mapped one as IPv4).
fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(Ipv6Addr::from(prefix))
            }
        },
    }
}

/// One open connection of a client; dropping it frees the slot.
#[derive(Debug)]
pub struct PeerSlot {
    table: Arc<PeerTable>,
    key: IpAddr,
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        self.table.close(self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn trust(nets: &[&str]) -> ProxyTrust {
        ProxyTrust { networks: nets.iter().map(|n| n.parse().unwrap()).collect(), proxy_protocol: false }
    }

    #[test]
    fn forwarded_addresses_are_believed_only_from_proxies() {
        let trust = trust(&["10.0.0.0/8"]);
        let lines: [&[u8]; 1] = [b"203.0.113.9"];
        assert_eq!(trust.client_of(ip("192.0.2.1"), lines.into_iter()), ip("192.0.2.1"));
        assert_eq!(trust.client_of(ip("10.1.2.3"), lines.into_iter()), ip("203.0.113.9"));
        assert_eq!(trust.client_of(ip("10.1.2.3"), std::iter::empty()), ip("10.1.2.3"));
    }

    #[test]
    fn the_walk_stops_at_the_first_address_that_is_not_a_proxy() {
        let trust = trust(&["10.0.0.0/8", "fd00::/8"]);
        // The client wrote "1.1.1.1" itself; the edge proxy appended the real peer 198.51.100.7,
        // an inner proxy appended the edge proxy 10.9.9.9.
        let lines: [&[u8]; 2] = [b"1.1.1.1, 198.51.100.7", b" 10.9.9.9 "];
        assert_eq!(trust.client_of(ip("10.0.0.1"), lines.into_iter()), ip("198.51.100.7"));
        let ports: [&[u8]; 1] = [b"[2001:db8::1]:443,fd00::5"];
        assert_eq!(trust.client_of(ip("fd00::1"), ports.into_iter()), ip("2001:db8::1"));
    }

    #[test]
    fn garbage_or_only_proxies_leave_the_last_proxy_as_the_client() {
        let trust = trust(&["10.0.0.0/8"]);
        let garbage: [&[u8]; 1] = [b"1.1.1.1, not-an-ip, 10.0.0.2"];
        assert_eq!(trust.client_of(ip("10.0.0.1"), garbage.into_iter()), ip("10.0.0.2"));
        let proxies: [&[u8]; 1] = [b"10.0.0.3,10.0.0.2"];
        assert_eq!(trust.client_of(ip("10.0.0.1"), proxies.into_iter()), ip("10.0.0.3"));
    }

    #[test]
    fn the_walk_is_bounded() {
        let trust = trust(&["10.0.0.0/8"]);
        let mut line = String::from("203.0.113.1");
        for _ in 0..FORWARDED_HOPS_MAX {
            line.push_str(",10.0.0.9");
        }
        let lines = [line.as_bytes()];
        assert_eq!(trust.client_of(ip("10.0.0.1"), lines.into_iter()), ip("10.0.0.9"));
    }

    #[test]
    fn proxy_protocol_v1_and_v2_give_the_client_and_the_rest() {
        let v1 = b"PROXY TCP4 198.51.100.7 10.0.0.1 5555 80\r\nGET / HTTP/1.1\r\n";
        let parsed = parse_proxy_header(v1).unwrap().unwrap();
        assert_eq!(parsed.client, Some(ip("198.51.100.7")));
        assert_eq!(&parsed.rest[..], b"GET / HTTP/1.1\r\n");
        assert_eq!(parse_proxy_header(b"PROXY TCP4 198.51").unwrap(), None, "incomplete");
        assert_eq!(parse_proxy_header(b"PROXY UNKNOWN\r\n").unwrap().unwrap().client, None);
        assert_eq!(parse_proxy_header(b"GET / HTTP/1.1\r\n\r\n"), Err(ProxyHeaderError::Malformed));

        let v2 = v2::Builder::with_addresses(
            v2::Version::Two | v2::Command::Proxy,
            v2::Protocol::Stream,
            ("[2001:db8::7]:5555".parse::<std::net::SocketAddr>().unwrap(), "[fd00::1]:80".parse().unwrap()),
        )
        .build()
        .unwrap();
        let mut bytes = v2.clone();
        bytes.extend_from_slice(b"GET");
        let parsed = parse_proxy_header(&bytes).unwrap().unwrap();
        assert_eq!(parsed.client, Some(ip("2001:db8::7")));
        assert_eq!(&parsed.rest[..], b"GET");
        assert_eq!(parse_proxy_header(&v2[..10]).unwrap(), None, "incomplete");
    }

    #[test]
    fn the_peer_table_caps_each_client_and_frees_on_drop() {
        let table = PeerTable::new(2);
        let a = table.try_open(ip("192.0.2.1")).unwrap();
        let _b = table.try_open(ip("192.0.2.1")).unwrap();
        assert!(table.try_open(ip("192.0.2.1")).is_none());
        assert!(table.try_open(ip("192.0.2.2")).is_some(), "another client is not affected");
        drop(a);
        assert_eq!(table.open_of(ip("192.0.2.1")), 1);
        assert!(table.try_open(ip("192.0.2.1")).is_some());
    }

    #[test]
    fn ipv6_clients_are_counted_per_64() {
        let table = PeerTable::new(1);
        let _slot = table.try_open(ip("2001:db8:1:2::1")).unwrap();
        assert!(table.try_open(ip("2001:db8:1:2::ffff")).is_none(), "same /64");
        assert!(table.try_open(ip("2001:db8:1:3::1")).is_some(), "another /64");
        let _v4 = table.try_open(ip("::ffff:192.0.2.9")).unwrap();
        assert!(table.try_open(ip("192.0.2.9")).is_none(), "mapped IPv4 is the same client");
    }
}
