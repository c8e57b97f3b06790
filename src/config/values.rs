//! The typed values of settings that are more than a number: where ledger data comes from,
//! which I/O driver the listeners use and which networks hold trusted proxies. Each is parsed once, where the setting is read (flag,
//! variable or config file), and travels typed from there.
//!
//! Owns: `SourceSpec`, `StoreSpec`, `IoDriver`, `ProxyNetwork`, `LogFormat`, `InvalidValue` (why a text is not a value: it never echoes
//! the text, which may hold an RPC URL's API key) and `redact_url`; and the demo timelines
//! (`demo[:<seed>]+timeline`, `demo[:<seed>]+script=<file>`): the grammar, the script file
//! (TOML, read and checked whole at parse, bounded by `SourceSpec::DEMO_SCRIPT_*`) and the
//! process-wide table of the timelines parsed so far (`SourceSpec::demo_timeline`). Read on the
//! main thread at start; the values are `Clone` and copied to the threads that need them.
//!
//! A demo timeline travels as `SourceSpec::Demo { seed }` with a seed from the reserved range
//! `DEMO_TIMELINE_SEED_BASE..+DEMO_TIMELINES_MAX` (which `demo:<seed>` refuses): the index of
//! its entry in the table, so every compute thread that opens the spec opens the same timeline,
//! and `Source::open` needs no arm of its own. The table only grows (equal timelines share an
//! entry), at most `DEMO_TIMELINES_MAX` entries.
//!
//! Invariant: `Display` of a value never shows a secret (an RPC URL shows its origin only).
//! Invariant: a demo spec without `+` parses exactly as it always did; a bad script is refused
//! at parse, with the file and the event named.
//! Deliberately absent: opening what a value names (the ledger opens a source, the HTTP edge
//! builds a runtime); this module imports nothing from the rest of the crate (the names a
//! script may use are the demo's archetypes, repeated here and checked by the demo's tests).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// A setting's text that is not one of its values, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidValue(pub String);

/// Where ledger data comes from, as given on the command line. `Demo`'s `seed` is a demo seed,
/// or one of the reserved range that stands for the demo timeline registered under it
/// (`SourceSpec::demo_timeline`, which holds that timeline's own seed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    Demo { seed: u64 },
    Snapshot { dir: PathBuf },
    Rpc { url: String },
}

/// First seed of the reserved range `DEMO_TIMELINE_SEED_BASE..+DEMO_TIMELINES_MAX`: seed
/// `DEMO_TIMELINE_SEED_BASE + i` stands for entry `i` of the timeline table.
const DEMO_TIMELINE_SEED_BASE: u64 = 0xFFFF_FFFF_FFFF_0000;

/// The demo timelines this process parsed, in order; an entry's index is its seed's offset
/// from `DEMO_TIMELINE_SEED_BASE`. Append-only.
static DEMO_TIMELINES: Mutex<Vec<DemoTimeline>> = Mutex::new(Vec::new());

/// A demo ledger that moves over time: `demo[:<seed>]+timeline` (the built-in timeline) or
/// `demo[:<seed>]+script=<file>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoTimeline {
    /// The demo seed of the world the timeline moves.
    pub seed: u64,
    /// `None`: the built-in timeline.
    pub script: Option<DemoScript>,
}

/// A timeline script as read from its file, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoScript {
    /// As given (relative paths are read from the working directory).
    pub path: PathBuf,
    /// The timeline's start, Unix milliseconds; `None`: the process-wide start (the first
    /// timeline ledger the process opens).
    pub start_unix_ms: Option<u64>,
    /// `(wallet, at_s)`, in file order: the archetype that acts (one of
    /// `SourceSpec::DEMO_SCRIPT_WALLETS`) and when, in seconds after the start.
    pub events: Vec<(&'static str, u64)>,
}

impl SourceSpec {
    /// Whether every read of this source is a computation over memory, never a wait (the demo
    /// ledger; a snapshot reads files, a node the network): such reads may run where a request
    /// is served (`scan::lane`).
    pub fn is_memory_resident(&self) -> bool {
        matches!(self, SourceSpec::Demo { .. })
    }

    /// Bytes of a timeline script file at most.
    pub const DEMO_SCRIPT_BYTES_MAX: u64 = 16 * 1024;
    /// Events of one timeline script at most.
    pub const DEMO_SCRIPT_EVENTS_MAX: usize = 32;
    /// Latest event of a script, in seconds after the timeline's start (a day).
    pub const DEMO_SCRIPT_AT_S_MAX: u64 = 86_400;
    /// Distinct demo timelines one process parses at most.
    pub const DEMO_TIMELINES_MAX: usize = 64;
    /// The wallets a script's events may name, each with its one action (the demo's timeline
    /// archetypes: an unlimited approve to an unknown delegate; dust from a look-alike).
    pub const DEMO_SCRIPT_WALLETS: &'static [&'static str] = &["timeline_delegate", "timeline_dust"];
    /// The timeline archetype no event may name: it stays quiet.
    pub const DEMO_SCRIPT_QUIET_WALLET: &'static str = "timeline_quiet";

    /// The demo timeline a `Demo` spec's seed stands for; `None` for an ordinary seed.
    pub fn demo_timeline(seed: u64) -> Option<DemoTimeline> {
        let index = usize::try_from(seed.checked_sub(DEMO_TIMELINE_SEED_BASE)?).ok()?;
        DEMO_TIMELINES.lock().unwrap_or_else(PoisonError::into_inner).get(index).cloned()
    }

    /// Whether `seed` lies in the range reserved for timelines.
    fn is_timeline_seed(seed: u64) -> bool {
        seed.checked_sub(DEMO_TIMELINE_SEED_BASE).is_some_and(|i| i < Self::DEMO_TIMELINES_MAX as u64)
    }
}

/// The spec of `timeline`: its table entry's seed, the entry added when no equal one exists.
fn register(timeline: DemoTimeline) -> Result<SourceSpec, InvalidValue> {
    let mut table = DEMO_TIMELINES.lock().unwrap_or_else(PoisonError::into_inner);
    let index = match table.iter().position(|t| *t == timeline) {
        Some(index) => index,
        None if table.len() < SourceSpec::DEMO_TIMELINES_MAX => {
            table.push(timeline);
            table.len() - 1
        }
        None => {
            return Err(InvalidValue(format!(
                "at most {} different demo timelines per process",
                SourceSpec::DEMO_TIMELINES_MAX
            )))
        }
    };
    Ok(SourceSpec::Demo { seed: DEMO_TIMELINE_SEED_BASE + index as u64 })
}

/// `rest` of a spec after `demo`: empty, `:<seed>`, and either of them followed by
/// `+timeline` or `+script=<file>`.
fn parse_demo(rest: &str) -> Result<SourceSpec, InvalidValue> {
    let (seed_text, option) = match rest.strip_prefix(':') {
        Some(after) => match after.split_once('+') {
            Some((seed, option)) => (seed, Some(option)),
            None => (after, None),
        },
        None => ("", rest.strip_prefix('+')),
    };
    let seed = match seed_text {
        "" => super::DEMO_SEED_DEFAULT,
        text => {
            text.parse().map_err(|_| InvalidValue(format!("demo seed must be an unsigned integer, got {text:?}")))?
        }
    };
    match option {
        None if SourceSpec::is_timeline_seed(seed) => Err(InvalidValue(format!(
            "demo seeds {DEMO_TIMELINE_SEED_BASE}..{} stand for demo timelines; use another seed",
            DEMO_TIMELINE_SEED_BASE + SourceSpec::DEMO_TIMELINES_MAX as u64
        ))),
        None => Ok(SourceSpec::Demo { seed }),
        Some("timeline") => register(DemoTimeline { seed, script: None }),
        Some(option) => match option.strip_prefix("script=") {
            Some(path) if !path.is_empty() => {
                register(DemoTimeline { seed, script: Some(read_script(Path::new(path))?) })
            }
            _ => Err(InvalidValue(format!(
                "unknown demo option {option:?}: demo[:<seed>]+timeline or demo[:<seed>]+script=<file>"
            ))),
        },
    }
}

/// Reads and checks a timeline script file (at most `DEMO_SCRIPT_BYTES_MAX` bytes).
fn read_script(path: &Path) -> Result<DemoScript, InvalidValue> {
    let bad = |why: String| InvalidValue(format!("demo script {}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|e| bad(e.to_string()))?;
    let mut text = String::new();
    file.take(SourceSpec::DEMO_SCRIPT_BYTES_MAX + 1).read_to_string(&mut text).map_err(|e| bad(e.to_string()))?;
    if text.len() as u64 > SourceSpec::DEMO_SCRIPT_BYTES_MAX {
        return Err(bad(format!("larger than {} bytes", SourceSpec::DEMO_SCRIPT_BYTES_MAX)));
    }
    parse_script(&text)
        .map(|(start_unix_ms, events)| DemoScript { path: path.to_owned(), start_unix_ms, events })
        .map_err(bad)
}

/// A script file as written.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    start_unix_ms: Option<u64>,
    #[serde(default)]
    event: Vec<ScriptEvent>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptEvent {
    wallet: String,
    at_s: u64,
}

/// A script's `start_unix_ms` and `(wallet, at_s)` events.
type ScriptParts = (Option<u64>, Vec<(&'static str, u64)>);

/// The start and the `(wallet, at_s)` events of a script's text, or why it is refused.
fn parse_script(text: &str) -> Result<ScriptParts, String> {
    let file: ScriptFile = toml::from_str(text).map_err(|e| e.to_string().trim_end().to_owned())?;
    if file.event.len() > SourceSpec::DEMO_SCRIPT_EVENTS_MAX {
        return Err(format!("{} events; at most {}", file.event.len(), SourceSpec::DEMO_SCRIPT_EVENTS_MAX));
    }
    let mut events = Vec::with_capacity(file.event.len());
    for (i, e) in file.event.iter().enumerate() {
        let n = i + 1;
        let Some(wallet) = SourceSpec::DEMO_SCRIPT_WALLETS.iter().copied().find(|w| *w == e.wallet) else {
            return Err(if e.wallet == SourceSpec::DEMO_SCRIPT_QUIET_WALLET {
                format!("event {n}: {} stays quiet; no event may name it", e.wallet)
            } else {
                let known = SourceSpec::DEMO_SCRIPT_WALLETS.join(" or ");
                format!("event {n}: unknown wallet {:?} ({known})", e.wallet)
            });
        };
        if e.at_s > SourceSpec::DEMO_SCRIPT_AT_S_MAX {
            return Err(format!("event {n}: at_s {} is past {} s", e.at_s, SourceSpec::DEMO_SCRIPT_AT_S_MAX));
        }
        events.push((wallet, e.at_s));
    }
    Ok((file.start_unix_ms, events))
}

impl std::fmt::Display for DemoTimeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.script {
            None => write!(f, "demo:{}+timeline", self.seed),
            Some(script) => write!(f, "demo:{}+script={}", self.seed, script.path.display()),
        }
    }
}

impl std::str::FromStr for SourceSpec {
    type Err = InvalidValue;

    /// `demo`, `demo:<seed>`, either followed by `+timeline` or `+script=<file>`,
    /// `snapshot:<dir>`, `rpc:<http(s) url>`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(rest) = s.strip_prefix("demo") {
            if rest.is_empty() || rest.starts_with([':', '+']) {
                return parse_demo(rest);
            }
        }
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        match (kind, rest) {
            ("snapshot", dir) if !dir.is_empty() => Ok(SourceSpec::Snapshot { dir: PathBuf::from(dir) }),
            ("rpc", url) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(SourceSpec::Rpc { url: url.to_owned() })
            }
            // The text is not echoed: a mistyped `rpc:` URL may hold an API key.
            _ => Err(InvalidValue(
                "ledger must be demo, demo:<seed>, demo[:<seed>]+timeline, demo[:<seed>]+script=<file>, \
                 snapshot:<dir> or rpc:<http(s)://url>"
                    .into(),
            )),
        }
    }
}

impl std::fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceSpec::Demo { seed } => match SourceSpec::demo_timeline(*seed) {
                Some(timeline) => timeline.fmt(f),
                None => write!(f, "demo:{seed}"),
            },
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
    fn plain_demo_specs_parse_as_they_always_did() {
        let default = SourceSpec::Demo { seed: crate::config::DEMO_SEED_DEFAULT };
        assert_eq!("demo".parse::<SourceSpec>().unwrap(), default);
        assert_eq!("demo:".parse::<SourceSpec>().unwrap(), default);
        assert_eq!("demo:18446744073709551615".parse::<SourceSpec>().unwrap(), SourceSpec::Demo { seed: u64::MAX });
        assert_eq!(SourceSpec::Demo { seed: 7 }.to_string(), "demo:7");
        for bad in ["demo:x", "demo:7:8", "demox", "demo+", "demo:7+", "demo+timelines", "demo+script=", "demo+seed=1"]
        {
            assert!(bad.parse::<SourceSpec>().is_err(), "{bad}");
        }
        let reserved = format!("demo:{}", DEMO_TIMELINE_SEED_BASE + 3);
        let message = reserved.parse::<SourceSpec>().unwrap_err().to_string();
        assert!(message.contains("stand for demo timelines"), "{message}");
    }

    /// A script file in a fresh directory, kept while the returned guard lives.
    fn script(text: &str) -> (tempfile::TempDir, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timeline.toml");
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap().to_owned();
        (dir, path)
    }

    #[test]
    fn timeline_specs_name_a_registered_timeline() {
        let builtin: SourceSpec = "demo+timeline".parse().unwrap();
        let SourceSpec::Demo { seed } = builtin else { panic!("{builtin:?}") };
        let timeline = SourceSpec::demo_timeline(seed).unwrap();
        assert_eq!(timeline, DemoTimeline { seed: crate::config::DEMO_SEED_DEFAULT, script: None });
        assert_eq!("demo+timeline".parse::<SourceSpec>().unwrap(), builtin, "equal timelines share an entry");
        assert_eq!(builtin.to_string(), format!("demo:{}+timeline", crate::config::DEMO_SEED_DEFAULT));
        assert_eq!(builtin.to_string().parse::<SourceSpec>().unwrap(), builtin, "Display parses back");
        let seeded: SourceSpec = "demo:7+timeline".parse().unwrap();
        assert_ne!(seeded, builtin);
        assert_eq!(seeded.to_string(), "demo:7+timeline");
        assert!(SourceSpec::demo_timeline(7).is_none(), "an ordinary seed is no timeline");

        let (_dir, path) =
            script("start_unix_ms = 1800000000000\n[[event]]\nwallet = \"timeline_dust\"\nat_s = 2\n\n[[event]]\nwallet = \"timeline_delegate\"\nat_s = 1\n");
        let spec: SourceSpec = format!("demo:9+script={path}").parse().unwrap();
        let SourceSpec::Demo { seed } = spec else { panic!("{spec:?}") };
        let timeline = SourceSpec::demo_timeline(seed).unwrap();
        let script = timeline.script.unwrap();
        assert_eq!((timeline.seed, script.start_unix_ms), (9, Some(1_800_000_000_000)));
        assert_eq!(script.events, vec![("timeline_dust", 2), ("timeline_delegate", 1)], "file order");
        assert_eq!(spec.to_string(), format!("demo:9+script={path}"));
    }

    #[test]
    fn bad_scripts_are_refused_naming_the_file_and_the_event() {
        let event = |wallet: &str, at_s: u64| format!("[[event]]\nwallet = \"{wallet}\"\nat_s = {at_s}\n");
        let too_many = event("timeline_dust", 1).repeat(SourceSpec::DEMO_SCRIPT_EVENTS_MAX + 1);
        let too_late = event("timeline_dust", SourceSpec::DEMO_SCRIPT_AT_S_MAX + 1);
        let too_big = format!("# {}\n", "x".repeat(SourceSpec::DEMO_SCRIPT_BYTES_MAX as usize));
        let cases: [(&str, &str); 9] = [
            (&event("timeline_quiet", 1), "event 1: timeline_quiet stays quiet"),
            (&event("clean", 1), "event 1: unknown wallet \"clean\""),
            (&too_late, "event 1: at_s 86401"),
            (&too_many, "33 events; at most 32"),
            ("[[event]]\nwallet = \"timeline_dust\"\nat_s = -1\n", "at_s"),
            ("[[event]]\nwallet = \"timeline_dust\"\nat_s = 1.5\n", "at_s"),
            ("[[event]]\nwallet = \"timeline_dust\"\n", "at_s"),
            ("start = 1\n", "unknown field"),
            (&too_big, "larger than 16384 bytes"),
        ];
        for (text, why) in cases {
            let (_dir, path) = script(text);
            let message = format!("demo+script={path}").parse::<SourceSpec>().unwrap_err().to_string();
            assert!(message.starts_with(&format!("demo script {path}: ")), "{message}");
            assert!(message.contains(why), "{why:?} not in {message:?}");
        }
        let message = "demo+script=/nonexistent/x.toml".parse::<SourceSpec>().unwrap_err().to_string();
        assert!(message.starts_with("demo script /nonexistent/x.toml: "), "{message}");
        // A script with no events is a timeline where nothing happens.
        let (_dir, path) = script("");
        let spec: SourceSpec = format!("demo+script={path}").parse().unwrap();
        let SourceSpec::Demo { seed } = spec else { panic!("{spec:?}") };
        assert_eq!(SourceSpec::demo_timeline(seed).unwrap().script.unwrap().events, vec![]);
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
