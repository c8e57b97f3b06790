//! The typed values of settings that are more than a number: where ledger data comes from,
//! which I/O driver the listeners use and which networks hold trusted proxies. Each is parsed once, where the setting is read (flag,
//! variable or config file), and travels typed from there.
//!
//! Owns: `SourceSpec`, `StoreSpec`, `IoDriver`, `ProxyNetwork`, `LogFormat`, `InvalidValue` (why a text is not a value: it never echoes
//! the text, which may hold an RPC URL's API key) and `redact_url`. Read on the main thread at
//! start; the values are `Clone` and copied to the threads that need them.
//!
//! Invariant: `Display` of a value never shows a secret (an RPC URL shows its origin only).
//! Deliberately absent: opening what a value names (the ledger opens a source, the HTTP edge
//! builds a runtime); this module imports nothing from the rest of the crate.

use std::path::PathBuf;

/// A setting's text that is not one of its values, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidValue(pub String);

/// Where ledger data comes from, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    Demo { seed: u64 },
    Snapshot { dir: PathBuf },
    Rpc { url: String },
}

impl std::str::FromStr for SourceSpec {
    type Err = InvalidValue;

    /// `demo`, `demo:<seed>`, `snapshot:<dir>`, `rpc:<http(s) url>`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        match (kind, rest) {
            ("demo", "") => Ok(SourceSpec::Demo { seed: super::DEMO_SEED_DEFAULT }),
            ("demo", seed) => seed
                .parse()
                .map(|seed| SourceSpec::Demo { seed })
                .map_err(|_| InvalidValue(format!("demo seed must be an unsigned integer, got {seed:?}"))),
            ("snapshot", dir) if !dir.is_empty() => Ok(SourceSpec::Snapshot { dir: PathBuf::from(dir) }),
            ("rpc", url) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(SourceSpec::Rpc { url: url.to_owned() })
            }
            // The text is not echoed: a mistyped `rpc:` URL may hold an API key.
            _ => Err(InvalidValue("ledger must be demo, demo:<seed>, snapshot:<dir> or rpc:<http(s)://url>".into())),
        }
    }
}

impl std::fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceSpec::Demo { seed } => write!(f, "demo:{seed}"),
            SourceSpec::Snapshot { dir } => write!(f, "snapshot:{}", dir.display()),
            // The URL may carry an API key in its path or query: show the origin only.
            SourceSpec::Rpc { url } => write!(f, "rpc:{}", redact_url(url)),
        }
    }
}

/// Where jobs, keys and quota live: the embedded RocksDB in the data directory (the default),
/// or an etcd cluster shared by every node (`etcd:<endpoint>[,<endpoint>…]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum StoreSpec {
    #[default]
    Rocksdb,
    /// Endpoints as `http://host:port` (a bare `host:port` gets `http://`).
    Etcd { endpoints: Vec<String> },
}

impl std::str::FromStr for StoreSpec {
    type Err = InvalidValue;

    /// `rocksdb` or `etcd:<endpoint>[,<endpoint>…]`, at most `ETCD_ENDPOINTS_MAX` endpoints of
    /// at most `ETCD_ENDPOINT_BYTES_MAX` bytes, each `[http(s)://]host:port`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let usage = "store must be rocksdb or etcd:<host:port>[,<host:port>…]";
        if s == "rocksdb" {
            return Ok(StoreSpec::Rocksdb);
        }
        let Some(list) = s.strip_prefix("etcd:") else { return Err(InvalidValue(usage.into())) };
        let endpoints: Vec<String> = list.split(',').map(str::trim).map(etcd_endpoint).collect::<Result<_, _>>()?;
        if endpoints.len() > super::ETCD_ENDPOINTS_MAX {
            return Err(InvalidValue(format!("store: at most {} etcd endpoints", super::ETCD_ENDPOINTS_MAX)));
        }
        Ok(StoreSpec::Etcd { endpoints })
    }
}

/// One etcd endpoint, `http://` added when it names no scheme.
fn etcd_endpoint(text: &str) -> Result<String, InvalidValue> {
    let bad = |why: &str| InvalidValue(format!("store: etcd endpoint {why} (expected [http(s)://]host:port)"));
    if text.is_empty() || text.len() > super::ETCD_ENDPOINT_BYTES_MAX {
        return Err(bad(&format!("empty or longer than {} bytes", super::ETCD_ENDPOINT_BYTES_MAX)));
    }
    let rest = text.strip_prefix("http://").or_else(|| text.strip_prefix("https://"));
    let authority = rest.unwrap_or(text);
    let Some((host, port)) = authority.rsplit_once(':') else { return Err(bad("without a port")) };
    let host_ok = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b".-[]:".contains(&b));
    if !host_ok || port.parse::<u16>().map_or(true, |p| p == 0) {
        return Err(bad("that is not host:port"));
    }
    Ok(if rest.is_some() { text.to_owned() } else { format!("http://{text}") })
}

impl std::fmt::Display for StoreSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSpec::Rocksdb => f.write_str("rocksdb"),
            StoreSpec::Etcd { endpoints } => write!(f, "etcd:{}", endpoints.join(",")),
        }
    }
}

/// `scheme://host[:port]/…` for logs: path, query, fragment and `user:password@` hidden (any
/// of them may carry an API key).
pub fn redact_url(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let (scheme, rest) = url.split_at(after_scheme);
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_len);
    let (user, host) = match authority.rsplit_once('@') {
        Some((_, host)) => ("…@", host),
        None => ("", authority),
    };
    let tail = if tail.len() > 1 { "/…" } else { tail };
    format!("{scheme}{user}{host}{tail}")
}

/// Which monoio driver the listener threads use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoDriver {
    /// io_uring when the kernel allows it, else epoll (seccomp, old kernel, disabled sysctl).
    #[default]
    Auto,
    /// io_uring or fail to start.
    Uring,
    /// epoll (monoio's legacy driver) always.
    Epoll,
}

impl std::str::FromStr for IoDriver {
    type Err = InvalidValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" => Ok(IoDriver::Auto),
            "uring" | "io_uring" | "io-uring" => Ok(IoDriver::Uring),
            "epoll" | "legacy" => Ok(IoDriver::Epoll),
            other => Err(InvalidValue(format!("unknown I/O driver {other:?} (auto, uring or epoll)"))),
        }
    }
}

impl IoDriver {
    /// The setting's canonical text.
    pub fn as_str(self) -> &'static str {
        match self {
            IoDriver::Auto => "auto",
            IoDriver::Uring => "uring",
            IoDriver::Epoll => "epoll",
        }
    }
}

impl std::fmt::Display for IoDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How `xray serve` writes its log lines (stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`), for log shippers.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = InvalidValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(InvalidValue(format!("unknown log format {other:?} (text or json)"))),
        }
    }
}

impl LogFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// A network of trusted proxies: `10.0.0.0/8`, `fd00::/8`, or one address (`192.0.2.7`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyNetwork(pub ipnet::IpNet);

impl std::str::FromStr for ProxyNetwork {
    type Err = InvalidValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        let net = match text.parse::<ipnet::IpNet>() {
            Ok(net) => net.trunc(),
            Err(_) => text.parse::<std::net::IpAddr>().map(ipnet::IpNet::from).map_err(|_| {
                InvalidValue(format!("{text:?} is not an IP address or network (e.g. 10.0.0.0/8, 192.0.2.7)"))
            })?,
        };
        Ok(ProxyNetwork(net))
    }
}

impl std::fmt::Display for ProxyNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// These values are read from the config file as their text.
macro_rules! deserialize_from_str {
    ($($t:ty),*) => {$(
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}
deserialize_from_str!(SourceSpec, StoreSpec, IoDriver, ProxyNetwork, LogFormat);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert!(matches!("demo".parse(), Ok(SourceSpec::Demo { .. })));
        assert_eq!("demo:7".parse::<SourceSpec>().unwrap(), SourceSpec::Demo { seed: 7 });
        assert!(matches!("snapshot:/tmp/x".parse(), Ok(SourceSpec::Snapshot { .. })));
        assert!(matches!("rpc:https://api.mainnet-beta.solana.com".parse(), Ok(SourceSpec::Rpc { .. })));
        for bad in ["", "demo:x", "snapshot:", "rpc:ftp://x", "mainnet"] {
            assert!(bad.parse::<SourceSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn parses_store_specs() {
        assert_eq!("rocksdb".parse::<StoreSpec>().unwrap(), StoreSpec::Rocksdb);
        let spec: StoreSpec = "etcd:127.0.0.1:2379,https://etcd-2.internal:2379".parse().unwrap();
        let endpoints = vec!["http://127.0.0.1:2379".to_owned(), "https://etcd-2.internal:2379".to_owned()];
        assert_eq!(spec, StoreSpec::Etcd { endpoints });
        assert_eq!(spec.to_string(), "etcd:http://127.0.0.1:2379,https://etcd-2.internal:2379");
        let too_many = format!("etcd:{}", vec!["h:1"; crate::config::ETCD_ENDPOINTS_MAX + 1].join(","));
        for bad in ["", "etcd", "etcd:", "etcd:host", "etcd:host:0", "etcd:host:x", "etcd:a b:1", "rocks", &too_many] {
            assert!(bad.parse::<StoreSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn redacts_rpc_paths() {
        assert_eq!(redact_url("https://rpc.example.com/v2/SECRETKEY"), "https://rpc.example.com/…");
        assert_eq!(redact_url("http://127.0.0.1:8899"), "http://127.0.0.1:8899");
        assert_eq!(redact_url("http://127.0.0.1:8899/"), "http://127.0.0.1:8899/");
        assert!(!SourceSpec::Rpc { url: "https://h/?api-key=S".into() }.to_string().contains('S'));
        assert_eq!(redact_url("https://user:SECRET@rpc.example.com:8443/x"), "https://…@rpc.example.com:8443/…");
        assert_eq!(redact_url("https://SECRET@h"), "https://…@h");
        assert_eq!(redact_url("https://h?api-key=SECRET"), "https://h/…");
        assert_eq!(redact_url("https://h#SECRET"), "https://h/…");
    }

    #[test]
    fn a_spec_that_does_not_parse_is_not_echoed() {
        for bad in ["rpc:htps://h/v2/SECRET", "rcp:https://h/?api-key=SECRET", "SECRET"] {
            let message = bad.parse::<SourceSpec>().unwrap_err().to_string();
            assert!(!message.contains("SECRET"), "{message}");
        }
    }

    #[test]
    fn proxy_networks_parse_with_or_without_a_prefix() {
        let net: ProxyNetwork = "10.1.2.3/8".parse().unwrap();
        assert_eq!(net.to_string(), "10.0.0.0/8", "host bits cleared");
        assert_eq!("192.0.2.7".parse::<ProxyNetwork>().unwrap().to_string(), "192.0.2.7/32");
        assert_eq!(" fd00::/8".parse::<ProxyNetwork>().unwrap().to_string(), "fd00::/8");
        assert!("10.0.0.0/33".parse::<ProxyNetwork>().is_err());
        assert!("proxy.local".parse::<ProxyNetwork>().is_err());
    }

    #[test]
    fn io_drivers_parse_and_print() {
        assert_eq!("epoll".parse::<IoDriver>(), Ok(IoDriver::Epoll));
        assert!("kqueue".parse::<IoDriver>().is_err());
        for f in [LogFormat::Text, LogFormat::Json] {
            assert_eq!(f.as_str().parse::<LogFormat>(), Ok(f));
        }
        assert!("yaml".parse::<LogFormat>().is_err());
        for d in [IoDriver::Auto, IoDriver::Uring, IoDriver::Epoll] {
            assert_eq!(d.to_string().parse::<IoDriver>(), Ok(d));
        }
    }
}
