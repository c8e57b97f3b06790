//! Shared by the API test files: a raw HTTP/1.1 client over one keep-alive TCP connection
//! (exact control of methods, headers and bodies; every read bounded), an in-process server
//! (`xray::serve::start` on port 0 with a temp-dir RocksDB) with keys of any scopes and
//! limits, polling helpers, and the demo archetype addresses.
#![allow(dead_code)] // each test file uses its own subset

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;
use xray::admin::keys::KeyAdmin;
use xray::auth::key::AccountId;
use xray::auth::record::KeySpec;
use xray::auth::scope::Scopes;
use xray::config::ServeConfig;
use xray::limits::clock::now_unix_ms;
use xray::limits::quota::QuotaPeriod;
use xray::serve::Running;

pub const IO_TIMEOUT: Duration = Duration::from_secs(40);
pub const API: &str = "/v1/developer";
pub const WALLET_PATH: &str = "/v1/developer/intelligence/wallet";
pub const COMPARE_PATH: &str = "/v1/developer/intelligence/compare";

/// Demo archetypes (README table).
pub const CLEAN: &str = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z";
pub const OPEN_DELEGATION: &str = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ";
pub const SYBIL_A: &str = "6SoUSfvAF7ZVfH4uc5to3DeDxsHeyW2xJAkyDbk6trKu";
pub const SYBIL_B: &str = "8bPtYYeYuDqCYpk7BrTvoRNtUVAQJGxptTGRe6Y3xnm9";
pub const TOKEN_MINT: &str = "EK5Xr9ERXTAGiaGoBwMUzHUBqWnENnZjnXZShRbZg92N";
/// Off the curve: refused at admission.
pub const TOKEN_ACCOUNT: &str = "29Gf6nBH56RQ5keooUpy4WAiZbY79mgUoVFjiC5LMBTj";
/// On the curve but executable: admitted, then FAILED by the ledger check.
pub const DRAINER_PROGRAM: &str = "3LB9kfq9ExCqFYbrNCaYfUNGr5fGmBCLPwrnoqB6fRvn";
/// Demo archetypes that analyze to READY.
pub const READY_WALLETS: [&str; 16] = [
    CLEAN,
    OPEN_DELEGATION,
    "5o6v3Td9ytgimfJwPRbuDs1ZtXt2xS6C2ddGQAM6F19w",
    "vaGm75gV244Ayqa2rvHDDXMqnYHNq6ShQFFGdXp3crg",
    "69ZJ3Facy9HXBZ17fDEmBL6aTF3DVzQzV2RdM762k7eY",
    "DHdEcT9YqynY7Zicaw5Vkd67tigaDoogF82pC9kW9XTq",
    "DFVgjwHHnhJgpurkcMhMQ5eBm5Sa8i2tLm8G6pYBE16w",
    "6oHJpEthxJ7d9zeu9SCgR1rPEXdhLpTsZmpQc6roQr8H",
    "6LxktvcB1Gxs3V6hhbcWtHJagBhQhSkwMeYjXUtaaEnS",
    "ABsijKqaLB5Rc129oem5f6Prev3S27gThAbC2cnDyrbG",
    SYBIL_A,
    SYBIL_B,
    "8LfB2JaaRSEND5pW6j1b1eR5KXkRjNSdAq3HJv59okD2",
    "5Xa4hF3f3optCeAwtR6wVwcRP89cAGDyoFWHf4Ap2ko9",
    "ChDN8EbHGmMAgjKPUPqY4Whh5cya9zZ7XtFjLRDvGW75",
    "D7ZCQDXf4aeJpve5ipjfbp8GxgxYkoBFouPpw82tk76V",
];

// ---- HTTP/1.1 over one keep-alive connection ----

pub struct Conn {
    pub stream: TcpStream,
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub raw_body: Vec<u8>,
    /// The body parsed as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    pub fn error(&self) -> &Value {
        &self.body["error"]
    }
}

impl Conn {
    pub fn open(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect_timeout(&addr, IO_TIMEOUT).expect("connect");
        stream.set_read_timeout(Some(IO_TIMEOUT)).expect("timeout");
        Conn { stream }
    }

    /// Sends one request with `headers` (name, value) and `body` as given, then reads the reply.
    pub fn request(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes()).and_then(|()| self.stream.write_all(body)).expect("send");
        self.read_reply()
    }

    /// GET or POST with a bearer key (and a JSON body for POST).
    pub fn send(&mut self, method: &str, path: &str, bearer: Option<&str>, body: Option<&str>) -> Reply {
        let auth = bearer.map(|key| format!("Bearer {key}"));
        let mut headers = Vec::new();
        if let Some(auth) = &auth {
            headers.push(("Authorization", auth.as_str()));
        }
        if method == "POST" {
            headers.push(("Content-Type", "application/json"));
        }
        self.request(method, path, &headers, body.unwrap_or("").as_bytes())
    }

    pub fn read_reply(&mut self) -> Reply {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            assert_eq!(self.stream.read(&mut byte).expect("read head"), 1, "connection closed mid-head");
            buf.push(byte[0]);
        }
        let head = String::from_utf8(buf).expect("ASCII head");
        let mut lines = head.split("\r\n");
        let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status");
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())).collect();
        let len: usize = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.parse().ok())
            .expect("content-length");
        let mut raw_body = vec![0u8; len];
        self.stream.read_exact(&mut raw_body).expect("body");
        let body = serde_json::from_slice(&raw_body).unwrap_or(Value::Null);
        Reply { status, headers, raw_body, body }
    }
}

pub fn get(addr: SocketAddr, path: &str, key: &str) -> Reply {
    Conn::open(addr).send("GET", path, Some(key), None)
}

pub fn post(addr: SocketAddr, path: &str, key: &str, body: &str) -> Reply {
    Conn::open(addr).send("POST", path, Some(key), Some(body))
}

pub fn wallet_body(wallet: &str) -> String {
    format!(r#"{{"wallet":"{wallet}"}}"#)
}

pub fn compare_body(a: &str, b: &str) -> String {
    format!(r#"{{"walletA":"{a}","walletB":"{b}"}}"#)
}

// ---- an in-process server ----

pub struct TestServer {
    pub running: Option<Running>,
    pub addr: SocketAddr,
    pub _dir: tempfile::TempDir,
}

/// A server on port 0 with a fresh data dir; `tweak` adjusts the config first.
pub fn serve(tweak: impl FnOnce(&mut ServeConfig)) -> TestServer {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = ServeConfig {
        listen: "127.0.0.1:0".parse().expect("addr"),
        admin_listen: "127.0.0.1:0".parse().expect("addr"),
        data_dir: dir.path().to_owned(),
        listener_threads: 2,
        compute_threads: 1,
        ..ServeConfig::default()
    };
    tweak(&mut config);
    let running = xray::serve::start(&config).expect("server starts");
    let addr = running.api.local_addr();
    TestServer { running: Some(running), addr, _dir: dir }
}

/// What a test key may hold; `Default` is every scope with generous limits.
#[derive(Clone)]
pub struct KeyOptions {
    pub scopes: &'static str,
    pub account: Option<String>,
    pub rate_per_second: u32,
    pub burst: u32,
    pub quota: u64,
    pub expires_at_ms: Option<i64>,
}

impl Default for KeyOptions {
    fn default() -> Self {
        KeyOptions {
            scopes: "wallet:analyze,wallet:compare,analysis:read,usage:read",
            account: None,
            rate_per_second: 1_000,
            burst: 1_000,
            quota: 1_000,
            expires_at_ms: None,
        }
    }
}

/// A key's secret, id and account.
pub struct TestKey {
    pub secret: String,
    pub id: String,
    pub account: String,
}

impl TestServer {
    pub fn running(&self) -> &Running {
        self.running.as_ref().expect("running")
    }

    pub fn key_admin(&self) -> KeyAdmin {
        KeyAdmin { keys: self.running().app.keys.clone(), store: self.running().store.clone() }
    }

    /// Issues a key through the same path as the admin API (store, then table).
    pub fn key(&self, options: KeyOptions) -> TestKey {
        let account = match options.account {
            Some(text) => AccountId::parse(&text).expect("account"),
            None => AccountId::generate().expect("random"),
        };
        let spec = KeySpec {
            account,
            name: "test".into(),
            scopes: Scopes::parse_list(options.scopes).expect("scopes"),
            expires_at_ms: options.expires_at_ms,
            rate_per_second: options.rate_per_second,
            burst: options.burst,
            quota_limit: options.quota,
            quota_period: QuotaPeriod::Month,
        };
        let view = self.key_admin().create(&spec, now_unix_ms()).expect("key issued");
        TestKey { secret: view.key.expect("secret"), id: view.id, account: view.account }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Polls `poll_path` with `wait` until READY or FAILED (bounded); returns the last reply.
    pub fn finish(&self, poll_path: &str, key: &str) -> Reply {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let reply = get(self.addr, &format!("{poll_path}?wait=10"), key);
            assert_eq!(reply.status, 200, "{reply:?}");
            if matches!(reply.data()["status"].as_str(), Some("READY" | "FAILED")) {
                return reply;
            }
            assert!(Instant::now() < deadline, "{poll_path} did not finish within 60 s: {reply:?}");
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.shutdown();
        }
    }
}

/// The path part of an absolute `pollUrl`.
pub fn path_of(poll_url: &str) -> String {
    let rest = poll_url.strip_prefix("http://").expect("absolute http URL");
    rest[rest.find('/').expect("path")..].to_owned()
}

/// Asserts the contract's error shape: status, code, requestId equal to X-Request-Id.
pub fn assert_error(reply: &Reply, status: u16, code: &str) {
    assert_eq!((reply.status, reply.error()["code"].as_str()), (status, Some(code)), "{reply:?}");
    assert!(reply.error()["message"].as_str().is_some_and(|m| !m.is_empty()), "{reply:?}");
    assert_eq!(reply.error()["requestId"].as_str(), reply.header("x-request-id"), "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"), "{reply:?}");
}
