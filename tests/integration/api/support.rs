//! Shared by the API test files (`api_contract`, `api_scopes`, `api_limits`, `api_jobs`) and by
//! `serve_binary`: a raw HTTP/1.1 client over one keep-alive TCP connection (exact control of
//! methods, headers and bodies; every read bounded), an in-process server (`xray::serve::start`
//! on port 0, a RocksDB in its own temp dir, any I/O driver, optionally reading a slow local
//! JSON-RPC ledger) with keys of any scopes, limits and account, polling helpers, the checks
//! every file makes (error shape, §6 rate-limit headers, the 202/200 answer of work-creating
//! requests, usage figures), and the demo archetype addresses of the README.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;
use sha2::{Digest, Sha256};
use xray::auth::key::{AccountId, KeyId};
use xray::auth::record::KeySpec;
use xray::auth::scope::Scopes;
use xray::clock::now_unix_ms;
use xray::config::{IoDriver, ServeConfig, SourceSpec};
use xray::devtools::rpc_server::{spawn_spec_in_thread, FaultPlan, RunningServer};
use xray::limits::quota::QuotaPeriod;
use xray::pubkey::Pubkey;
use xray::serve::Running;

/// Bound of every socket read.
pub const IO_TIMEOUT: Duration = Duration::from_secs(40);
/// Bound of every wait for a job or a counter.
pub const POLL_DEADLINE: Duration = Duration::from_secs(30);

pub const API: &str = "/v1/developer";
pub const WALLET_PATH: &str = "/v1/developer/intelligence/wallet";
pub const COMPARE_PATH: &str = "/v1/developer/intelligence/compare";
pub const STATUS_PATH: &str = "/v1/developer/status";
pub const USAGE_PATH: &str = "/v1/developer/usage";
pub const SCAN_PATH: &str = "/v1/developer/intelligence/transaction";

/// Every scope, in the order the status endpoint lists them.
pub const ALL_SCOPES: [&str; 9] = [
    "wallet:analyze",
    "wallet:compare",
    "analysis:read",
    "usage:read",
    "transaction:scan",
    "monitor:write",
    "monitor:read",
    "policy:read",
    "policy:write",
];

// ---- demo archetypes (README table) ----

pub const CLEAN: &str = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z";
pub const OPEN_DELEGATION: &str = "958wcmLFyUbXiuZF6LjCYXExopYrw1g5SfbySVup8hHQ";
pub const OWNER_CHANGE_DRAINED: &str = "5o6v3Td9ytgimfJwPRbuDs1ZtXt2xS6C2ddGQAM6F19w";
pub const FOREIGN_STAKE_AUTHORITY: &str = "DHdEcT9YqynY7Zicaw5Vkd67tigaDoogF82pC9kW9XTq";
pub const SYBIL_A: &str = "6SoUSfvAF7ZVfH4uc5to3DeDxsHeyW2xJAkyDbk6trKu";
pub const SYBIL_B: &str = "8bPtYYeYuDqCYpk7BrTvoRNtUVAQJGxptTGRe6Y3xnm9";
pub const SYBIL_C: &str = "8LfB2JaaRSEND5pW6j1b1eR5KXkRjNSdAq3HJv59okD2";
pub const SYBIL_D: &str = "5Xa4hF3f3optCeAwtR6wVwcRP89cAGDyoFWHf4Ap2ko9";
/// A known token mint: refused at admission (`token_mint`).
pub const TOKEN_MINT: &str = "EK5Xr9ERXTAGiaGoBwMUzHUBqWnENnZjnXZShRbZg92N";
/// clean's token account, an associated token account: off the curve, refused at admission.
pub const TOKEN_ACCOUNT: &str = "29Gf6nBH56RQ5keooUpy4WAiZbY79mgUoVFjiC5LMBTj";
/// A DEX pool state account (program-owned, off the curve): refused at admission.
pub const PROGRAM_DATA_ACCOUNT: &str = "EoZiZ2Jgi8NLSuCSzCUVW8XU87bYLyGWwYQ3c2abo42n";
/// On the curve but executable: admitted, then FAILED with ACCOUNT_NOT_ELIGIBLE by the ledger.
pub const DRAINER_PROGRAM: &str = "3LB9kfq9ExCqFYbrNCaYfUNGr5fGmBCLPwrnoqB6fRvn";
/// A builtin program id: refused at admission (`program`).
pub const SYSTEM_PROGRAM: &str = "11111111111111111111111111111111";
/// Demo archetypes that analyze to READY.
pub const READY_WALLETS: [&str; 16] = [
    CLEAN,
    OPEN_DELEGATION,
    OWNER_CHANGE_DRAINED,
    "vaGm75gV244Ayqa2rvHDDXMqnYHNq6ShQFFGdXp3crg",
    "69ZJ3Facy9HXBZ17fDEmBL6aTF3DVzQzV2RdM762k7eY",
    FOREIGN_STAKE_AUTHORITY,
    "DFVgjwHHnhJgpurkcMhMQ5eBm5Sa8i2tLm8G6pYBE16w",
    "6oHJpEthxJ7d9zeu9SCgR1rPEXdhLpTsZmpQc6roQr8H",
    "6LxktvcB1Gxs3V6hhbcWtHJagBhQhSkwMeYjXUtaaEnS",
    "ABsijKqaLB5Rc129oem5f6Prev3S27gThAbC2cnDyrbG",
    SYBIL_A,
    SYBIL_B,
    SYBIL_C,
    SYBIL_D,
    "ChDN8EbHGmMAgjKPUPqY4Whh5cya9zZ7XtFjLRDvGW75",
    "D7ZCQDXf4aeJpve5ipjfbp8GxgxYkoBFouPpw82tk76V",
];

/// `n` valid wallet addresses outside the demo (points on the ed25519 curve, derived from
/// `seed`): they read as accounts that do not exist yet, which still analyze to READY.
pub fn fresh_wallets(seed: &str, n: usize) -> Vec<String> {
    (0u32..)
        .map(|i| {
            let digest = Sha256::digest(format!("{seed}/{i}").as_bytes());
            Pubkey::new(digest.as_slice().try_into().expect("32 bytes"))
        })
        .filter(Pubkey::is_on_curve)
        .take(n)
        .map(|key| key.to_base58())
        .collect()
}

// ---- paths and bodies ----

pub fn analysis_path(id: &str) -> String {
    format!("{API}/intelligence/analysis/{id}")
}

pub fn comparison_path(pair_id: &str) -> String {
    format!("{API}/intelligence/comparison/{pair_id}")
}

/// The base64 transaction of a demo case (`xray ledger demo-tx <case>`).
pub fn demo_tx(case: &str) -> String {
    let rt = xray::ledger::runtime().expect("runtime");
    rt.block_on(xray::devtools::demo_tx::build(case, xray::config::DEMO_SEED_DEFAULT)).expect("case builds")
}

/// A scan's body, for the fee payer or the named signer.
pub fn scan_body(transaction: &str, signer: Option<&str>) -> String {
    match signer {
        Some(signer) => serde_json::json!({"transaction": transaction, "signer": signer}).to_string(),
        None => serde_json::json!({"transaction": transaction}).to_string(),
    }
}

pub fn wallet_body(wallet: &str) -> String {
    format!(r#"{{"wallet":"{wallet}"}}"#)
}

pub fn refresh_body(wallet: &str) -> String {
    format!(r#"{{"wallet":"{wallet}","refresh":true}}"#)
}

pub fn compare_body(a: &str, b: &str) -> String {
    format!(r#"{{"walletA":"{a}","walletB":"{b}"}}"#)
}

/// The contract's pairId, computed here independently of the server: `pair_` + base58 of the
/// first 16 bytes of SHA-256("xray-pair-v1" ‖ min(A,B) ‖ max(A,B)) over the 32-byte keys.
pub fn expected_pair_id(a: &str, b: &str) -> String {
    let decode = |text: &str| bs58::decode(text).into_vec().expect("base58 address");
    let (a, b) = (decode(a), decode(b));
    assert_eq!((a.len(), b.len()), (32, 32), "32-byte public keys");
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let digest = Sha256::new().chain_update(b"xray-pair-v1").chain_update(&lo).chain_update(&hi).finalize();
    format!("pair_{}", bs58::encode(&digest[..16]).into_string())
}

// ---- HTTP/1.1 over one keep-alive connection ----

pub struct Conn {
    pub stream: TcpStream,
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub raw_body: Vec<u8>,
    /// The body parsed as JSON (`Null` when empty or not JSON).
    pub body: Value,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reply")
            .field("status", &self.status)
            .field("headers", &self.headers)
            .field("body", &String::from_utf8_lossy(&self.raw_body))
            .finish()
    }
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

    /// `data.status` (`QUEUED`, `RUNNING`, `READY`, `FAILED`).
    pub fn job_status(&self) -> &str {
        self.data()["status"].as_str().unwrap_or_else(|| panic!("no data.status: {self:?}"))
    }

    /// The path part of `data.pollUrl`.
    pub fn poll_path(&self) -> String {
        path_of(self.data()["pollUrl"].as_str().unwrap_or_else(|| panic!("no data.pollUrl: {self:?}")))
    }

    /// The exact bytes of a finished poll's payload (`data.xray` or `data.comparison`), which
    /// the server splices in after the job's members and before its `signature`:
    /// `{"data":{…,"<field>":<payload>[,"signature":{"keyId":…}]}}`.
    pub fn payload_bytes(&self, field: &str) -> &[u8] {
        let marker = format!(",\"{field}\":");
        let body = &self.raw_body;
        // The first occurrence: the members before the payload are ids, addresses and times
        // (the payload itself may hold `"xray":` in its engine versions).
        let at = body.windows(marker.len()).position(|w| w == marker.as_bytes());
        let at = at.unwrap_or_else(|| panic!("no {field} in {self:?}"));
        assert!(body.ends_with(b"}}"), "{self:?}");
        // The signature, when there is one, is the last member (no payload holds this text).
        let signature: &[u8] = b",\"signature\":{\"keyId\":";
        let end = body.windows(signature.len()).rposition(|w| w == signature).filter(|e| *e > at);
        &body[at + marker.len()..end.unwrap_or(body.len() - 2)]
    }

    /// A string field of `data`.
    pub fn data_str(&self, field: &str) -> String {
        self.data()[field].as_str().unwrap_or_else(|| panic!("no data.{field}: {self:?}")).to_owned()
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
        self.write_request(method, path, headers, body);
        if method == "HEAD" {
            // The answer to HEAD has the headers of a GET and no body.
            let mut reply = self.read_reply_head();
            reply.body = Value::Null;
            return reply;
        }
        self.read_reply()
    }

    /// Sends one request (Host and Content-Length added) and reads nothing.
    pub fn write_request(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) {
        let mut head = format!("{method} {path} HTTP/1.1\r\nHost: test\r\n");
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        self.stream.write_all(head.as_bytes()).and_then(|()| self.stream.write_all(body)).expect("send");
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
        let mut reply = self.read_reply_head();
        let len: usize = reply.header("content-length").and_then(|v| v.parse().ok()).expect("content-length");
        reply.raw_body = vec![0u8; len];
        self.stream.read_exact(&mut reply.raw_body).expect("body");
        reply.body = serde_json::from_slice(&reply.raw_body).unwrap_or(Value::Null);
        reply
    }

    /// Reads a reply's status line and headers only.
    fn read_reply_head(&mut self) -> Reply {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            match self.stream.read(&mut byte) {
                Ok(1) => buf.push(byte[0]),
                Ok(_) => panic!("connection closed mid-head"),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => panic!("read head: {e}"),
            }
        }
        let head = String::from_utf8(buf).expect("ASCII head");
        let mut lines = head.split("\r\n");
        let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).expect("status");
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(':')).map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned())).collect();
        Reply { status, headers, raw_body: Vec::new(), body: Value::Null }
    }
}

/// One request on a fresh connection: `headers` as given, nothing added but Host and
/// Content-Length.
pub fn raw(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    Conn::open(addr).request(method, path, headers, body.as_bytes())
}

pub fn get(addr: SocketAddr, path: &str, key: &str) -> Reply {
    Conn::open(addr).send("GET", path, Some(key), None)
}

pub fn post(addr: SocketAddr, path: &str, key: &str, body: &str) -> Reply {
    Conn::open(addr).send("POST", path, Some(key), Some(body))
}

/// The path part of an absolute URL.
pub fn path_of(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| panic!("absolute http URL: {url}"));
    rest[rest.find('/').expect("path")..].to_owned()
}

// ---- an in-process server ----

pub struct TestServer {
    running: Option<Running>,
    pub addr: SocketAddr,
    /// What it was started with (a restart reuses it, data dir included).
    config: ServeConfig,
    /// The local JSON-RPC server the ledger is read from, when the test asked for one.
    ledger: Option<RunningServer>,
    _dir: tempfile::TempDir,
}

/// The configuration every test starts from: port 0 for both listeners, a fresh data dir, two
/// listener threads and one compute thread; `tweak` adjusts it.
pub fn config_in(dir: &std::path::Path, tweak: impl FnOnce(&mut ServeConfig)) -> ServeConfig {
    let mut config = ServeConfig {
        listen: "127.0.0.1:0".parse().expect("addr"),
        admin_listen: "127.0.0.1:0".parse().expect("addr"),
        data_dir: dir.to_owned(),
        listener_threads: 2,
        compute_threads: 1,
        ..ServeConfig::default()
    };
    tweak(&mut config);
    config
}

/// A server on port 0 with a fresh data dir and the embedded demo ledger.
pub fn serve(tweak: impl FnOnce(&mut ServeConfig)) -> TestServer {
    start_server(None, tweak)
}

/// A server over a snapshot of the demo ledger (which does not simulate), exported into a
/// temporary directory that lives as long as the returned guard.
pub fn serve_demo_snapshot() -> (tempfile::TempDir, TestServer) {
    let (dir, snapshot) = export_demo_snapshot();
    let server = serve(|c| c.ledger = xray::config::SourceSpec::Snapshot { dir: snapshot });
    (dir, server)
}

/// The demo's archetypes exported as a snapshot in a temporary directory.
fn export_demo_snapshot() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = xray::ledger::runtime().expect("runtime");
    let snapshot = dir.path().join("demo");
    rt.block_on(xray::devtools::recorder::export_demo(xray::config::DEMO_SEED_DEFAULT, 0, &snapshot))
        .expect("exported");
    (dir, snapshot)
}

/// `serve_demo_snapshot` of a snapshot as one recorded before accounts' bytes were kept: no
/// `account-bytes/`, no `accountBytes` in its manifest (such a snapshot does not simulate).
pub fn serve_demo_snapshot_without_bytes() -> (tempfile::TempDir, TestServer) {
    let (dir, snapshot) = export_demo_snapshot();
    std::fs::remove_dir_all(snapshot.join("account-bytes")).expect("removed");
    let manifest = snapshot.join("manifest.json");
    let mut held: Value = serde_json::from_slice(&std::fs::read(&manifest).expect("manifest")).expect("json");
    held.as_object_mut().expect("object").remove("accountBytes").expect("accountBytes was recorded");
    std::fs::write(&manifest, serde_json::to_vec(&held).expect("json")).expect("written");
    let server = serve(|c| c.ledger = xray::config::SourceSpec::Snapshot { dir: snapshot });
    (dir, server)
}

/// A server on the I/O driver `driver` (`auto`, `uring` or `epoll`).
pub fn serve_on(driver: IoDriver) -> TestServer {
    let server = serve(|c| c.io_driver = driver);
    let drivers = server.running().api.drivers();
    if driver == IoDriver::Epoll {
        assert!(drivers.iter().all(|d| d.as_str() == "epoll"), "{drivers:?}");
    }
    server
}

/// A server whose ledger is the demo ledger behind the local JSON-RPC server, every answer
/// delayed by `latency_ms`: jobs take a few round trips of that.
pub fn serve_slow(latency_ms: u64, tweak: impl FnOnce(&mut ServeConfig)) -> TestServer {
    serve_rpc(FaultPlan { latency_ms, ..FaultPlan::default() }, tweak)
}

/// A server that runs one job at a time with a queue of one, its ledger answering every call
/// after 800 ms: once a job runs, a second waits in the queue and a third finds no room.
pub fn serve_one_at_a_time() -> TestServer {
    serve_slow(800, |c| {
        c.compute_threads = 1;
        c.jobs_in_flight_per_thread = 1;
        c.queue_capacity = 1;
    })
}

/// A server whose ledger is the demo ledger behind the local JSON-RPC server, with the faults
/// (and latency) of `plan`.
pub fn serve_rpc(plan: FaultPlan, tweak: impl FnOnce(&mut ServeConfig)) -> TestServer {
    serve_rpc_spec("demo".parse().expect("spec"), plan, tweak)
}

/// A server whose ledger is the local JSON-RPC server serving `spec` with `plan`'s faults.
pub fn serve_rpc_spec(spec: SourceSpec, plan: FaultPlan, tweak: impl FnOnce(&mut ServeConfig)) -> TestServer {
    serve_rpc_server(spawn_spec_in_thread(spec, plan).expect("JSON-RPC server starts"), tweak)
}

/// A server whose ledger is `rpc`, a local JSON-RPC server already running.
pub fn serve_rpc_server(rpc: RunningServer, tweak: impl FnOnce(&mut ServeConfig)) -> TestServer {
    let ledger = SourceSpec::Rpc { url: rpc.url() };
    start_server(Some(rpc), |c| {
        c.ledger = ledger;
        tweak(c)
    })
}

fn start_server(ledger: Option<RunningServer>, tweak: impl FnOnce(&mut ServeConfig)) -> TestServer {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = config_in(dir.path(), tweak);
    let running = xray::serve::start(&config).expect("server starts");
    let addr = running.api.local_addr();
    TestServer { running: Some(running), addr, config, ledger, _dir: dir }
}

/// What a test key may hold; `Default` is every scope with generous limits in a new account.
#[derive(Clone)]
pub struct KeyOptions {
    /// Comma-separated scopes.
    pub scopes: String,
    /// `None`: a new account.
    pub account: Option<String>,
    pub rate_per_second: u32,
    pub burst: u32,
    pub quota: u64,
    pub expires_at_ms: Option<u64>,
    /// When the key is issued (`None`: now); a past time allows an already expired key.
    pub issued_at_ms: Option<u64>,
}

impl Default for KeyOptions {
    fn default() -> Self {
        KeyOptions {
            scopes: ALL_SCOPES.join(","),
            account: None,
            rate_per_second: 1_000,
            burst: 1_000,
            quota: 1_000,
            expires_at_ms: None,
            issued_at_ms: None,
        }
    }
}

impl KeyOptions {
    pub fn scopes(scopes: &str) -> KeyOptions {
        KeyOptions { scopes: scopes.to_owned(), ..KeyOptions::default() }
    }

    pub fn in_account(self, account: &str) -> KeyOptions {
        KeyOptions { account: Some(account.to_owned()), ..self }
    }
}

/// A key's secret, id, account and the limits it was issued with.
#[derive(Clone)]
pub struct TestKey {
    pub secret: String,
    pub id: String,
    pub account: String,
    pub options: KeyOptions,
}

impl TestServer {
    pub fn running(&self) -> &Running {
        self.running.as_ref().expect("running")
    }

    /// Issues a key into the running key table and persists its record.
    pub fn key(&self, options: KeyOptions) -> TestKey {
        let account = match &options.account {
            Some(text) => AccountId::parse(text).expect("account"),
            None => AccountId::generate().expect("random"),
        };
        let spec = KeySpec {
            account,
            name: "test".into(),
            scopes: Scopes::parse_list(&options.scopes).expect("scopes"),
            expires_at_ms: options.expires_at_ms,
            rate_per_second: options.rate_per_second,
            burst: options.burst,
            quota_limit: options.quota,
            quota_period: QuotaPeriod::Month,
        };
        let issued_at_ms = options.issued_at_ms.unwrap_or_else(now_unix_ms);
        let running = self.running();
        let (key, record) = running.app.keys.issue(&spec, issued_at_ms).expect("key issued");
        running.store.put_key(&record).expect("key stored");
        TestKey {
            secret: key.expose_secret().to_owned(),
            id: record.id.as_str().to_owned(),
            account: record.account.as_str().to_owned(),
            options,
        }
    }

    /// Revokes a key in the running table (every thread sees it at its next request) and
    /// persists the revoked record.
    pub fn revoke(&self, key: &TestKey) {
        let id = KeyId::parse(&key.id).expect("key id");
        let record = self.running().app.keys.revoke(&id, now_unix_ms()).expect("revoked");
        self.running().store.put_key(&record).expect("revocation stored");
    }

    /// Shuts the server down gracefully and starts it again on the same data dir (a new port):
    /// everything it knows afterwards comes from the store. Keys issued by `key` persist.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// `restart` with a changed configuration (a ledger of another seed, say).
    pub fn restart_with(&mut self, tweak: impl FnOnce(&mut ServeConfig)) {
        self.stop();
        tweak(&mut self.config);
        self.start_again();
    }

    /// Shuts the server down gracefully, lets `edit` change its store as an earlier process
    /// could have left it (RocksDB opened directly on the data dir), and starts it again.
    pub fn restart_with_store(&mut self, edit: impl FnOnce(&xray::store::RocksStore)) {
        self.stop();
        let db = self.config.data_dir.join(xray::serve::DB_DIR_NAME);
        let store = xray::store::RocksStore::open(&db, &xray::store::StoreOptions::default()).expect("store opens");
        edit(&store);
        drop(store);
        self.start_again();
    }

    fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown().expect("clean shutdown");
        }
    }

    fn start_again(&mut self) {
        let running = xray::serve::start(&self.config).expect("server restarts");
        self.addr = running.api.local_addr();
        self.running = Some(running);
    }

    /// A request to the admin listener with the data dir's admin token.
    pub fn admin(&self, method: &str, path: &str) -> Reply {
        self.admin_json(method, path, None)
    }

    /// `admin` with a JSON body.
    pub fn admin_json(&self, method: &str, path: &str, body: Option<&Value>) -> Reply {
        let token = std::fs::read_to_string(self.config.data_dir.join(xray::admin::files::TOKEN_FILE_NAME));
        let bearer = format!("Bearer {}", token.expect("admin token").trim());
        let mut headers = vec![("authorization", bearer.as_str())];
        if body.is_some() {
            headers.push(("content-type", "application/json"));
        }
        let text = body.map(Value::to_string).unwrap_or_default();
        raw(self.running().admin.local_addr(), method, path, &headers, &text)
    }

    /// The admin listener's `/metrics` text.
    pub fn metrics_text(&self) -> String {
        let reply = self.admin("GET", "/metrics");
        assert_eq!(reply.status, 200, "{reply:?}");
        String::from_utf8(reply.raw_body).expect("UTF-8 exposition")
    }

    /// The local JSON-RPC server (the ledger), when the test serves one.
    pub fn ledger_server(&self) -> &RunningServer {
        self.ledger.as_ref().expect("a server over the local JSON-RPC server")
    }

    /// JSON-RPC calls the local ledger server has answered so far, by method (a batch's items
    /// one by one, as a provider bills them).
    pub fn ledger_calls(&self) -> std::collections::BTreeMap<String, u64> {
        self.ledger.as_ref().map(RunningServer::calls).unwrap_or_default()
    }

    /// The calls made since `before` (a `ledger_calls` reading), by method (methods with none
    /// left out).
    pub fn ledger_calls_since(
        &self,
        before: &std::collections::BTreeMap<String, u64>,
    ) -> std::collections::BTreeMap<String, u64> {
        self.ledger_calls()
            .into_iter()
            .map(|(method, n)| {
                let earlier = before.get(&method).copied().unwrap_or(0);
                (method, n - earlier)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// The data directory it serves from.
    pub fn data_dir(&self) -> &std::path::Path {
        &self.config.data_dir
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Polls `poll_path` with `wait` until READY or FAILED (bounded); returns the last reply.
    pub fn finish(&self, poll_path: &str, key: &str) -> Reply {
        let deadline = Instant::now() + POLL_DEADLINE;
        loop {
            let reply = get(self.addr, &format!("{poll_path}?wait=5"), key);
            assert_eq!(reply.status, 200, "{reply:?}");
            assert_eq!(reply.header("content-type"), Some("application/json"), "{reply:?}");
            if matches!(reply.job_status(), "READY" | "FAILED") {
                return reply;
            }
            assert!(Instant::now() < deadline, "{poll_path} did not finish within {POLL_DEADLINE:?}: {reply:?}");
        }
    }

    /// The key's usage document.
    pub fn usage(&self, key: &str) -> Usage {
        let reply = get(self.addr, USAGE_PATH, key);
        assert_eq!(reply.status, 200, "{reply:?}");
        Usage::of(reply.data())
    }

    /// The key's status document (`data`).
    pub fn status(&self, key: &str) -> Value {
        let reply = get(self.addr, STATUS_PATH, key);
        assert_eq!(reply.status, 200, "{reply:?}");
        reply.data().clone()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        // The API first (its in-flight jobs may still read the ledger), then the ledger.
        if let Some(running) = self.running.take() {
            let _ = running.shutdown();
        }
        if let Some(ledger) = self.ledger.take() {
            let _ = ledger.stop();
        }
    }
}

// ---- usage figures ----

/// The figures of `GET /v1/developer/usage` a test compares exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    pub limit: u64,
    pub used: u64,
    pub reserved: u64,
    pub remaining: u64,
    pub wallet_analysis: u64,
    pub comparison: u64,
    pub transaction_scan: u64,
    pub refunded: u64,
    pub limited_requests: u64,
}

impl Usage {
    pub fn of(data: &Value) -> Usage {
        let n = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("integer expected in {data}"));
        Usage {
            limit: n(&data["quota"]["limit"]),
            used: n(&data["quota"]["used"]),
            reserved: n(&data["quota"]["reserved"]),
            remaining: n(&data["quota"]["remaining"]),
            wallet_analysis: n(&data["byOperation"]["walletAnalysis"]),
            comparison: n(&data["byOperation"]["comparison"]),
            transaction_scan: n(&data["byOperation"]["transactionScan"]),
            refunded: n(&data["refunded"]),
            limited_requests: n(&data["rateLimit"]["limitedRequests"]),
        }
    }

    /// `(used, reserved, remaining, refunded)`.
    pub fn units(&self) -> (u64, u64, u64, u64) {
        (self.used, self.reserved, self.remaining, self.refunded)
    }
}

// ---- checks ----

/// RFC 3339 UTC with milliseconds: `2026-11-22T10:15:30.123Z`.
pub fn is_timestamp(value: &Value) -> bool {
    value.as_str().is_some_and(|t| {
        let b = t.as_bytes();
        t.len() == 24
            && t.ends_with('Z')
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[19] == b'.'
            && xray::clock::parse_rfc3339_ms(t).is_some()
    })
}

/// `X-Request-Id` as the contract allows it: 1–64 of `[A-Za-z0-9._-]`.
pub fn is_request_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// The contract's error shape: status, code, a message, `requestId` equal to `X-Request-Id`,
/// JSON content type, and nothing but `error` at the top.
pub fn assert_error(reply: &Reply, status: u16, code: &str) {
    assert_eq!((reply.status, reply.error()["code"].as_str()), (status, Some(code)), "{reply:?}");
    assert!(reply.error()["message"].as_str().is_some_and(|m| !m.is_empty()), "{reply:?}");
    let request_id = reply.header("x-request-id").unwrap_or_else(|| panic!("no X-Request-Id: {reply:?}"));
    assert!(is_request_id(request_id), "{request_id:?}");
    assert_eq!(reply.error()["requestId"].as_str(), Some(request_id), "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"), "{reply:?}");
    assert_eq!(reply.body.as_object().map(|o| o.len()), Some(1), "only `error` at the top: {reply:?}");
}

/// `assert_error`, then each field of `details` (a JSON object) equal to the reply's.
pub fn assert_error_details(reply: &Reply, status: u16, code: &str, details: &Value) {
    assert_error(reply, status, code);
    let expected = details.as_object().expect("details object");
    for (name, value) in expected {
        assert_eq!(&reply.error()["details"][name], value, "details.{name} in {reply:?}");
    }
}

/// The numbers of the §6 headers of one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateHeaders {
    /// `RateLimit-Policy`: `"rate";q=<burst>;w=<window>, "quota";q=<limit>;w=<period seconds>`.
    pub burst: u64,
    pub window_s: u64,
    pub quota_limit: u64,
    pub period_s: u64,
    /// `RateLimit`: `"rate";r=<tokens>;t=<full in>, "quota";r=<remaining>;t=<reset in>`.
    pub tokens: u64,
    pub full_in_s: u64,
    pub quota_remaining: u64,
    pub reset_in_s: u64,
}

/// Reads `"rate";<a>=N;<b>=N, "quota";<a>=N;<b>=N` and insists on exactly that text.
fn structured_pair(name: &str, value: &str, a: &str, b: &str) -> [u64; 4] {
    let mut numbers = [0u64; 4];
    let parts: Vec<&str> = value.split(", ").collect();
    assert_eq!(parts.len(), 2, "{name}: {value}");
    for (i, (part, item)) in parts.iter().zip(["rate", "quota"]).enumerate() {
        let rest = part.strip_prefix(&format!("\"{item}\";{a}=")).unwrap_or_else(|| panic!("{name}: {value}"));
        let (x, y) = rest.split_once(&format!(";{b}=")).unwrap_or_else(|| panic!("{name}: {value}"));
        numbers[2 * i] = x.parse().unwrap_or_else(|_| panic!("{name}: {value}"));
        numbers[2 * i + 1] = y.parse().unwrap_or_else(|_| panic!("{name}: {value}"));
    }
    let [p, q, r, s] = numbers;
    assert_eq!(value, format!("\"rate\";{a}={p};{b}={q}, \"quota\";{a}={r};{b}={s}"), "{name} not canonical");
    numbers
}

/// The §6 headers of an authenticated reply, in exactly the contract's format.
pub fn rate_headers(reply: &Reply) -> RateHeaders {
    let policy = reply.header("ratelimit-policy").unwrap_or_else(|| panic!("no RateLimit-Policy: {reply:?}"));
    let current = reply.header("ratelimit").unwrap_or_else(|| panic!("no RateLimit: {reply:?}"));
    let [burst, window_s, quota_limit, period_s] = structured_pair("RateLimit-Policy", policy, "q", "w");
    let [tokens, full_in_s, quota_remaining, reset_in_s] = structured_pair("RateLimit", current, "r", "t");
    RateHeaders { burst, window_s, quota_limit, period_s, tokens, full_in_s, quota_remaining, reset_in_s }
}

/// The §6 headers agree with the key's limits and with each other; returns them for exact
/// checks of the moving figures.
pub fn assert_rate_headers(reply: &Reply, key: &TestKey) -> RateHeaders {
    let h = rate_headers(reply);
    let (rate, burst) = (u64::from(key.options.rate_per_second), u64::from(key.options.burst));
    assert_eq!((h.burst, h.window_s, h.quota_limit), (burst, burst.div_ceil(rate), key.options.quota), "{h:?}");
    // A calendar month in seconds.
    assert!(h.period_s.is_multiple_of(86_400) && (28..=31).contains(&(h.period_s / 86_400)), "{h:?}");
    assert!(h.tokens <= burst && h.full_in_s <= h.window_s, "{h:?}");
    assert_eq!(h.tokens == burst, h.full_in_s == 0, "seconds until full is 0 exactly when full: {h:?}");
    assert!(h.quota_remaining <= h.quota_limit && (1..=h.period_s).contains(&h.reset_in_s), "{h:?}");
    h
}

pub fn assert_no_rate_headers(reply: &Reply) {
    assert!(reply.header("ratelimit").is_none() && reply.header("ratelimit-policy").is_none(), "{reply:?}");
}

/// Submits an analysis of `wallet` and waits until its job runs.
pub fn submit_running(server: &TestServer, key: &str, wallet: &str) -> Reply {
    let reply = submit(server, key, WALLET_PATH, &wallet_body(wallet));
    let poll = reply.poll_path();
    eventually("the job runs", || get(server.addr, &poll, key).job_status().to_owned(), |s| s == "RUNNING");
    reply
}

/// Posts work (`WALLET_PATH` or `COMPARE_PATH`) and checks the 202/200 answer of contract §4:
/// `status` and `pollUrl` inside and beside `data`, `Location` = `pollUrl` = the bound address
/// and the job's path, `Retry-After: 1` only on 202, `createdAt`, `deduplicated`.
pub fn submit(server: &TestServer, key: &str, path: &str, body: &str) -> Reply {
    let reply = post(server.addr, path, key, body);
    assert!(reply.status == 202 || reply.status == 200, "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"), "{reply:?}");
    let data = reply.data();
    let status = reply.job_status();
    assert_eq!(reply.status == 200, status == "READY", "200 exactly for a reused READY result: {reply:?}");
    let poll_url = data["pollUrl"].as_str().expect("pollUrl");
    let expected_url = match path {
        WALLET_PATH => server.url(&analysis_path(data["analysisId"].as_str().expect("analysisId"))),
        _ => server.url(&comparison_path(data["pairId"].as_str().expect("pairId"))),
    };
    assert_eq!(poll_url, expected_url, "pollUrl is http://<bound address>/…");
    assert_eq!(reply.body["pollUrl"].as_str(), Some(poll_url), "pollUrl beside data too");
    assert_eq!(reply.body["status"].as_str(), Some(status), "status beside data too");
    assert_eq!(reply.header("location"), Some(poll_url));
    assert_eq!(reply.header("retry-after"), (reply.status == 202).then_some("1"), "{reply:?}");
    assert!(is_timestamp(&data["createdAt"]), "{data}");
    assert!(data["deduplicated"].is_boolean(), "{data}");
    reply
}

/// Waits (bounded) until `ready` holds, re-reading with `probe`; returns the last reading.
pub fn eventually<T: std::fmt::Debug>(what: &str, mut probe: impl FnMut() -> T, ready: impl Fn(&T) -> bool) -> T {
    let deadline = Instant::now() + POLL_DEADLINE;
    loop {
        let value = probe();
        if ready(&value) {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: still {value:?} after {POLL_DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
