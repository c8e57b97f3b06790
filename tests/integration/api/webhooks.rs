//! Webhooks over real loopback HTTP: a local receiver (a plain TCP listener speaking HTTP/1.1)
//! gets each finished job's document, signed with the account's secret (made through the admin
//! API), retried after a failed attempt and after a restart of the server; the poll answer
//! shows the delivery's state; callback URLs the policy refuses are `400`, and a delivery that
//! can never succeed (no secret) ends `FAILED` saying why. The server allows `127.0.0.1` as a
//! webhook host (`webhook_allow_hosts`), as an operator would for an internal receiver
//! (`localhost` under that allowance, and each refusal's rule: `localhost`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::support::*;
use xray::webhooks::signature::verify;

mod attach;
mod localhost;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Received {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// A webhook receiver on loopback: answers each request with the next of `statuses` (the last
/// one repeats) and keeps what it got.
pub(crate) struct Receiver {
    addr: SocketAddr,
    pub(crate) got: Arc<Mutex<Vec<Received>>>,
}

impl Receiver {
    pub(crate) fn start(statuses: &[u16]) -> Receiver {
        Receiver::start_on(TcpListener::bind("127.0.0.1:0").expect("bind"), statuses)
    }

    fn start_on(listener: TcpListener, statuses: &[u16]) -> Receiver {
        let addr = listener.local_addr().expect("addr");
        let got = Arc::new(Mutex::new(Vec::new()));
        let (log, statuses) = (Arc::clone(&got), statuses.to_vec());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let Some(received) = read_request(&stream) else { continue };
                let n = {
                    let mut log = log.lock().expect("log");
                    log.push(received);
                    log.len()
                };
                let status = statuses[(n - 1).min(statuses.len() - 1)];
                let mut stream = stream;
                let _ = write!(stream, "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            }
        });
        Receiver { addr, got }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/hooks/xray", self.addr)
    }

    /// Waits until at least `n` requests arrived (bounded); returns them.
    pub(crate) fn wait_for(&self, n: usize) -> Vec<Received> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let got = self.got.lock().expect("log").clone();
            if got.len() >= n {
                return got;
            }
            assert!(Instant::now() < deadline, "{} of {n} webhook requests within 20 s", got.len());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn read_request(stream: &std::net::TcpStream) -> Option<Received> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let trimmed = line.trim_end();
        if trimmed.is_empty() {
            break;
        }
        let (name, value) = trimmed.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    let len: usize = headers.iter().find(|(n, _)| n == "content-length")?.1.parse().ok()?;
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Received { headers, body })
}

fn allowing_loopback() -> TestServer {
    serve(|c| c.webhook_allow_hosts = vec!["127.0.0.1".into()])
}

/// A new webhook secret for the key's account, through the admin API.
fn webhook_secret(server: &TestServer, key: &TestKey) -> String {
    let reply = server.admin("POST", &format!("/v1/admin/accounts/{}/webhook-secret", key.account));
    assert_eq!(reply.status, 201, "{reply:?}");
    assert_eq!(reply.body["account"], key.account.as_str());
    assert!(is_timestamp(&reply.body["createdAt"]), "{reply:?}");
    let secret = reply.body["secret"].as_str().expect("secret").to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    secret
}

/// A key of a new account that has a webhook secret, and that secret.
fn key_with_secret(server: &TestServer) -> (TestKey, String) {
    let key = server.key(KeyOptions::default());
    let secret = webhook_secret(server, &key);
    (key, secret)
}

/// Polls until the job's callback is no longer PENDING (bounded); returns the poll's data.
fn settled(server: &TestServer, poll_path: &str, key: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let data = server.finish(poll_path, key).data().clone();
        if data["callback"]["status"] != "PENDING" {
            return data;
        }
        assert!(Instant::now() < deadline, "callback still pending after 20 s: {data}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn now_s() -> u64 {
    xray::clock::now_unix_ms() / 1_000
}

#[test]
fn a_finished_job_is_posted_signed_and_retried_until_delivered() {
    let server = allowing_loopback();
    let (key, secret) = key_with_secret(&server);
    let k = key.secret.as_str();
    // The first attempt gets a 500: the second (after a 1 s backoff) is delivered.
    let receiver = Receiver::start(&[500, 200]);
    let body = json!({ "wallet": OPEN_DELEGATION, "refresh": true, "callbackUrl": receiver.url() }).to_string();
    let accepted = submit(&server, k, WALLET_PATH, &body);
    let poll_path = accepted.poll_path();
    let live = get(server.addr, &poll_path, k);
    if live.job_status() != "READY" {
        assert_eq!(live.data()["callback"]["status"], "PENDING", "{live:?}");
    }
    let got = receiver.wait_for(2);
    let data = settled(&server, &poll_path, k);
    assert_eq!(
        data["callback"],
        json!({ "url": receiver.url(), "status": "DELIVERED", "attempts": 2, "lastError": null }),
        "{data}"
    );
    for (attempt, request) in got.iter().enumerate() {
        let signature = request.header("xray-signature").expect("Xray-Signature");
        assert!(verify(&secret, signature, &request.body, now_s(), 300).is_ok(), "{signature}");
        assert!(verify("whsec_other", signature, &request.body, now_s(), 300).is_err());
        assert_eq!(request.header("xray-webhook-id"), accepted.data()["analysisId"].as_str());
        assert_eq!(request.header("xray-delivery-attempt"), Some((attempt + 1).to_string().as_str()));
        assert_eq!(request.header("content-type"), Some("application/json"));
        // The document a poll answers, less the delivery's own state.
        let mut polled = data.clone();
        polled.as_object_mut().expect("data").remove("callback");
        let sent: Value = serde_json::from_slice(&request.body).expect("JSON body");
        assert_eq!(sent, json!({ "data": polled }));
    }
    assert_eq!(got.len(), 2, "nothing more once delivered");
    let metrics = server.metrics_text();
    for outcome in ["delivered", "retried"] {
        let line = format!("xray_webhook_attempts_total{{outcome=\"{outcome}\"}} ");
        let count = metrics.lines().find_map(|l| l.strip_prefix(&line)).and_then(|n| n.parse::<u64>().ok());
        assert!(count.is_some_and(|n| n >= 1), "{outcome} attempts counted in /metrics");
    }
    let usage = server.usage(k);
    assert_eq!(usage.used + usage.reserved, 1, "a webhook costs nothing: {usage:?}");
}

#[test]
fn callback_urls_are_checked_and_a_delivery_that_cannot_succeed_says_why() {
    let strict = serve(|_| {});
    let key = strict.key(KeyOptions::default());
    let k = key.secret.as_str();
    for url in [
        "http://127.0.0.1:9/hook",
        "https://127.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/x",
        "https://user:pw@hooks.example.com/",
        "ftp://hooks.example.com/",
        "not a url",
    ] {
        for (path, body) in [
            (WALLET_PATH, json!({ "wallet": OPEN_DELEGATION, "callbackUrl": url })),
            (COMPARE_PATH, json!({ "walletA": SYBIL_A, "walletB": SYBIL_B, "callbackUrl": url })),
            ("/v1/developer/intelligence/wallets", json!({ "wallets": [CLEAN], "callbackUrl": url })),
        ] {
            let reply = post(strict.addr, path, k, &body.to_string());
            assert_error_details(&reply, 400, "INVALID_REQUEST", &json!({ "field": "callbackUrl" }));
        }
    }
    let usage = strict.usage(k);
    assert_eq!(usage.used + usage.reserved, 0, "refused before anything was recorded");

    // Allowed host, but the account has no secret: nothing is sent unsigned.
    let server = allowing_loopback();
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let receiver = Receiver::start(&[200]);
    let body = json!({ "wallet": CLEAN, "callbackUrl": receiver.url() }).to_string();
    let data = settled(&server, &submit(&server, k, WALLET_PATH, &body).poll_path(), k);
    assert_eq!(data["callback"]["status"], "FAILED", "{data}");
    assert_eq!(data["callback"]["lastError"], "no_webhook_secret", "{data}");
    assert!(receiver.got.lock().expect("log").is_empty());

    // A receiver that is not there: attempts go on, each failure said.
    webhook_secret(&server, &key);
    let gone = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", gone.local_addr().expect("addr"));
    drop(gone);
    let body = json!({ "wallets": [SYBIL_C], "callbackUrl": url }).to_string();
    let batch = post(server.addr, "/v1/developer/intelligence/wallets", k, &body);
    let id = batch.data()["items"][0]["analysisId"].as_str().expect("analysisId").to_owned();
    let poll_path = analysis_path(&id);
    let polled = eventually(
        "a failed attempt",
        || server.finish(&poll_path, k).data()["callback"].clone(),
        |c| c["attempts"].as_u64() >= Some(1) && !c["lastError"].is_null(),
    );
    assert_eq!(polled["status"], "PENDING", "{polled}");
    assert_eq!(polled["lastError"], "refused", "a closed set of reasons, no socket's own words: {polled}");
}

/// A `callbackUrl` delivers the finished document a poll answers, so it needs the scope that
/// reads it: a key without `analysis:read` is refused (403 naming the scope and the field) on
/// each endpoint that takes one, before anything is admitted or charged, and nothing is sent.
#[test]
fn a_callback_needs_the_scope_that_reads_what_it_delivers() {
    let server = allowing_loopback();
    let key = server.key(KeyOptions::scopes("wallet:analyze,wallet:compare,usage:read"));
    let k = key.secret.as_str();
    webhook_secret(&server, &key);
    let receiver = Receiver::start(&[200]);
    let url = receiver.url();
    for (path, body) in [
        (WALLET_PATH, json!({ "wallet": OPEN_DELEGATION, "callbackUrl": url })),
        (COMPARE_PATH, json!({ "walletA": SYBIL_A, "walletB": SYBIL_B, "callbackUrl": url })),
        ("/v1/developer/intelligence/wallets", json!({ "wallets": [CLEAN, SYBIL_C], "callbackUrl": url })),
    ] {
        let reply = post(server.addr, path, k, &body.to_string());
        let details = json!({ "requiredScope": "analysis:read", "field": "callbackUrl" });
        assert_error_details(&reply, 403, "INSUFFICIENT_SCOPE", &details);
        assert!(reply.error()["message"].as_str().is_some_and(|m| m.contains("callbackUrl")), "{reply:?}");
    }
    let usage = server.usage(k);
    assert_eq!((usage.used, usage.reserved), (0, 0), "refused before anything was charged: {usage:?}");
    // The same key without a callback is admitted as before; nothing ever reaches the receiver.
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    assert_eq!(accepted.status, 202, "{accepted:?}");
    let reader = server.key(KeyOptions::default().in_account(&key.account));
    server.finish(&accepted.poll_path(), &reader.secret);
    std::thread::sleep(Duration::from_millis(300));
    assert!(receiver.got.lock().expect("log").is_empty(), "no document delivered to a key that cannot read it");
}

/// A webhook delivers what a poll would, to whom a poll would: the key that asked for it — the
/// one whose request attached it, not the job's — must still read the document at each attempt.
/// Revoking the job's key changes nothing; once the attaching key is revoked, the next attempt
/// ends `FAILED` (`key_cannot_read`) and nothing more is sent.
#[test]
fn a_webhook_stops_when_the_key_that_asked_for_it_is_revoked() {
    let server = allowing_loopback();
    let (maker, _) = key_with_secret(&server);
    let asker = server.key(KeyOptions::default().in_account(&maker.account));
    let reader = server.key(KeyOptions::default().in_account(&maker.account));
    let made = submit(&server, &maker.secret, WALLET_PATH, &wallet_body(CLEAN));
    server.finish(&made.poll_path(), &reader.secret);
    // Every attempt fails: the webhook stays due, retried after a backoff of a second or two.
    let receiver = Receiver::start(&[500]);
    let body = json!({ "wallet": CLEAN, "callbackUrl": receiver.url() }).to_string();
    let attached = post(server.addr, WALLET_PATH, &asker.secret, &body);
    assert_eq!(attached.data_str("analysisId"), made.data_str("analysisId"), "joined: {attached:?}");
    receiver.wait_for(1);

    server.revoke(&maker);
    receiver.wait_for(2);
    let data = server.finish(&made.poll_path(), &reader.secret).data().clone();
    assert_eq!(data["callback"]["status"], "PENDING", "the job's key is not the asker: {data}");

    server.revoke(&asker);
    let data = settled(&server, &made.poll_path(), &reader.secret);
    assert_eq!(data["callback"]["status"], "FAILED", "{data}");
    assert_eq!(data["callback"]["lastError"], "key_cannot_read", "{data}");
    let sent = receiver.got.lock().expect("log").len();
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(receiver.got.lock().expect("log").len(), sent, "nothing sent after the revocation was seen");
}

/// A receiver that accepts connections and never answers: each delivery to it holds its slot
/// until the attempt's timeout. Counts the connections it holds.
struct Tarpit {
    addr: SocketAddr,
    held: Arc<Mutex<Vec<std::net::TcpStream>>>,
}

impl Tarpit {
    fn start() -> Tarpit {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                keep.lock().expect("held").push(stream);
            }
        });
        Tarpit { addr, held }
    }

    fn holding(&self) -> usize {
        self.held.lock().expect("held").len()
    }
}

/// One account's receiver is a tarpit (it accepts and never answers, so each of its attempts
/// holds a delivery slot for the whole 5 s timeout); another account's receiver answers at
/// once. Deliveries are independent and fair: the tarpit holds only its own account's slots
/// (`WEBHOOK_IN_FLIGHT_PER_ACCOUNT_MAX`), and the second account's deliveries all arrive within
/// 2 s while it holds them.
#[test]
fn a_tarpit_receiver_holds_only_its_own_accounts_slots() {
    let server = allowing_loopback();
    let slow = server.key(KeyOptions::default());
    let quick = server.key(KeyOptions::default());
    assert_ne!(slow.account, quick.account);
    webhook_secret(&server, &slow);
    webhook_secret(&server, &quick);
    let tarpit = Tarpit::start();
    let tarpit_url = format!("http://{}/hook", tarpit.addr);
    let slow_wallets = fresh_wallets("tarpit", 12);
    let body = json!({ "wallets": slow_wallets, "callbackUrl": tarpit_url }).to_string();
    let batch = post(server.addr, "/v1/developer/intelligence/wallets", &slow.secret, &body);
    assert_eq!(batch.status, 200, "{batch:?}");
    for item in batch.data()["items"].as_array().expect("items") {
        server.finish(&analysis_path(item["analysisId"].as_str().expect("analysisId")), &slow.secret);
    }
    let cap = xray::config::WEBHOOK_IN_FLIGHT_PER_ACCOUNT_MAX;
    eventually("the tarpit holds its account's slots", || tarpit.holding(), |n| *n >= cap);
    let held_since = Instant::now();

    let receiver = Receiver::start(&[200]);
    let quick_wallets = fresh_wallets("prompt", 8);
    let body = json!({ "wallets": quick_wallets, "callbackUrl": receiver.url() }).to_string();
    let batch = post(server.addr, "/v1/developer/intelligence/wallets", &quick.secret, &body);
    assert_eq!(batch.status, 200, "{batch:?}");
    for item in batch.data()["items"].as_array().expect("items") {
        server.finish(&analysis_path(item["analysisId"].as_str().expect("analysisId")), &quick.secret);
    }
    let finished = Instant::now();
    let deadline = finished + Duration::from_secs(2);
    while receiver.got.lock().expect("log").len() < quick_wallets.len() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let arrived = receiver.got.lock().expect("log").len();
    assert_eq!(arrived, quick_wallets.len(), "{arrived} of 8 deliveries within 2 s of the jobs finishing");
    // Until the first attempts time out (5 s), the tarpit has exactly its account's slots.
    let held = tarpit.holding();
    if held_since.elapsed() < Duration::from_millis(xray::config::WEBHOOK_TIMEOUT_MS - 500) {
        assert_eq!(held, cap, "only its own account's {cap} slots");
    }
}

#[test]
fn a_pending_webhook_survives_a_restart() {
    let mut server = allowing_loopback();
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let secret = webhook_secret(&server, &key);
    // Nothing listens yet: the first attempt fails, the webhook stays in the outbox.
    let reserved = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = reserved.local_addr().expect("addr");
    drop(reserved);
    let url = format!("http://{addr}/hook");
    let body = json!({ "walletA": SYBIL_A, "walletB": SYBIL_B, "callbackUrl": url }).to_string();
    let accepted = submit(&server, k, COMPARE_PATH, &body);
    let poll_path = accepted.poll_path();
    eventually(
        "a failed attempt",
        || server.finish(&poll_path, k).data()["callback"]["attempts"].as_u64(),
        |n| *n >= Some(1),
    );
    server.restart();
    let receiver = Receiver::start_on(TcpListener::bind(addr).expect("the receiver's port again"), &[204]);
    let got = receiver.wait_for(1);
    let data = settled(&server, &poll_path, k);
    assert_eq!(data["callback"]["status"], "DELIVERED", "{data}");
    let request = &got[got.len() - 1];
    assert!(verify(&secret, request.header("xray-signature").expect("signature"), &request.body, now_s(), 300).is_ok());
    let sent: Value = serde_json::from_slice(&request.body).expect("JSON");
    assert_eq!(sent["data"]["pairId"], accepted.data()["pairId"]);
    assert_eq!(sent["data"]["status"], "READY");
    assert!(sent["data"]["comparison"].is_object(), "{sent}");
}

/// `examples/client.py`, run as an integrator would: it submits with an Idempotency-Key (and
/// resends it, getting the first answer), long-polls, receives its webhook and verifies the
/// signature; its summary says so. A tampered delivery fails its check.
#[test]
fn the_client_example_runs_end_to_end() {
    let server = allowing_loopback();
    let key = server.key(KeyOptions::default());
    let secret = webhook_secret(&server, &key);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/client.py");
    let base = server.url("");
    let args = ["--api", &base, "--key", &key.secret, "--wallet", OPEN_DELEGATION, "--webhook-secret", &secret];
    let output = std::process::Command::new("python3").arg("-B").arg(script).args(args).output().expect("python3 runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "examples/client.py failed: {stderr}");
    let summary: Value = serde_json::from_slice(&output.stdout).expect("a JSON summary");
    assert_eq!((summary["status"].as_str(), summary["idempotentReplay"].as_bool()), (Some("READY"), Some(true)));
    assert!(summary["score"].is_u64(), "{summary}");
    assert_eq!(summary["webhook"]["verified"], true, "{summary}");
    assert_eq!(summary["webhook"]["sameDocument"], true, "{summary}");
    assert_eq!(summary["webhook"]["id"], summary["analysisId"]);
    let usage = server.usage(&key.secret);
    assert_eq!(usage.used + usage.reserved, 1, "the resent submit was not charged: {usage:?}");
    // The example's check refuses what the server did not sign.
    let check = format!(
        "import sys; sys.path.insert(0, {dir:?}); import client; \
         h = client.verify_signature; s = {secret:?}; t = 1000; \
         import hmac, hashlib; v = hmac.new(s.encode(), b'1000.{{}}', hashlib.sha256).hexdigest(); \
         print(h(s, f't={{t}},v1={{v}}', b'{{}}', now_s=1000), h(s, f't={{t}},v1={{v}}', b'{{ }}', now_s=1000), \
               h('whsec_other', f't={{t}},v1={{v}}', b'{{}}', now_s=1000), h(s, f't={{t}},v1={{v}}', b'{{}}', now_s=2000))",
        dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples"),
    );
    let checked = std::process::Command::new("python3").args(["-B", "-c", &check]).output().expect("python3 runs");
    assert_eq!(String::from_utf8_lossy(&checked.stdout).trim(), "True False False False", "{checked:?}");
}
