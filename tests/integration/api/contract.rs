//! The public API's surface against ../shared/api-contract.md, over real loopback HTTP to a
//! server started in-process (port 0, RocksDB in a temp dir, the demo ledger):
//! - every endpoint's happy path (§4, §5 payloads) and every row of the §7 error table that a
//!   single request can provoke (400, 401 missing/malformed/unknown, 403, 404, 405, 413, 415,
//!   422) with status, code, body shape, `details` and headers — both on the `auto` driver
//!   (io_uring where the kernel allows it) and on the forced `epoll` driver;
//! - the order of checks of §3 when a request fails several of them;
//! - `X-Request-Id` echoed or replaced (§1);
//! - the §6 `RateLimit-Policy` / `RateLimit` headers, exact, on every authenticated response
//!   whatever its status, and on no unauthenticated one.
//!
//! Rows that need state live with their subject: 401 revoked/expired in `api_scopes`, 429 and
//! 503 in `api_limits`, the FAILED `ACCOUNT_NOT_ELIGIBLE` analysis and `wait` in `api_jobs`.

use std::time::Instant;

use super::support::*;
use serde_json::{json, Value};
use xray::config::IoDriver;
use xray::http::uring_available;

// ---- happy paths ----

#[test]
fn every_endpoint_happy_path_on_the_auto_driver() {
    happy_path(IoDriver::Auto);
}

#[test]
fn every_endpoint_happy_path_on_the_epoll_driver() {
    happy_path(IoDriver::Epoll);
}

fn happy_path(driver: IoDriver) {
    let server = serve_on(driver);
    let drivers: Vec<&str> = server.running().api.drivers().iter().map(|d| d.as_str()).collect();
    // Probed on a thread of its own: the probe's ring, torn down, leaves task work that
    // interrupts the next blocking socket read of the thread that made it.
    let uring = std::thread::spawn(uring_available).join().expect("probe");
    let expected = if driver == IoDriver::Epoll || !uring { "epoll" } else { "io_uring" };
    assert!(drivers.iter().all(|d| *d == expected), "{driver}: {drivers:?}");
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();

    // GET /healthz: no key, no rate headers.
    let health = raw(server.addr, "GET", "/healthz", &[], "");
    assert_eq!((health.status, &health.body), (200, &json!({"status": "ok"})), "{health:?}");
    assert!(health.header("x-request-id").is_some_and(is_request_id));
    assert_no_rate_headers(&health);

    // POST wallet: 202 with the job.
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    assert_eq!((accepted.status, accepted.job_status()), (202, "QUEUED"), "{accepted:?}");
    let id = accepted.data_str("analysisId");
    let id_bytes = bs58::decode(id.strip_prefix("an_").expect("an_ prefix")).into_vec().expect("base58");
    assert_eq!(id_bytes.len(), 16, "{id}");
    assert_eq!(
        accepted.data_str("pollUrl"),
        format!("http://{}/v1/developer/intelligence/analysis/{id}", server.running().api.local_addr())
    );
    assert_eq!(
        (accepted.data_str("wallet"), &accepted.data()["deduplicated"]),
        (OPEN_DELEGATION.to_owned(), &json!(false))
    );
    let h = assert_rate_headers(&accepted, &key);
    assert_eq!(h.quota_remaining, 999, "the reserved unit counts against the quota");

    // GET analysis until READY.
    let ready = server.finish(&analysis_path(&id), k);
    let data = ready.data();
    assert_eq!((data["status"].as_str(), data["analysisId"].as_str()), (Some("READY"), Some(id.as_str())));
    assert_eq!(data["wallet"], OPEN_DELEGATION);
    assert_eq!((ready.header("retry-after"), data.get("error")), (None, None), "{ready:?}");
    let times: Vec<u64> = ["createdAt", "startedAt", "completedAt"]
        .iter()
        .map(|f| {
            assert!(is_timestamp(&data[f]), "{f}: {data}");
            xray::clock::parse_rfc3339_ms(data[f].as_str().expect("text")).expect("time")
        })
        .collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "created ≤ started ≤ completed: {times:?}");
    assert_xray(&data["xray"], OPEN_DELEGATION);
    assert!(data["xray"]["signals"].as_array().expect("signals").iter().any(|s| s["kind"] == "open_token_delegation"));
    let again = get(server.addr, &analysis_path(&id), k);
    assert_eq!(again.raw_body, ready.raw_body, "a finished analysis reads byte-identical");
    assert_rate_headers(&again, &key);

    // POST compare: deterministic pairId, then GET comparison until READY.
    let pair = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_A, SYBIL_B));
    assert_eq!((pair.status, pair.job_status()), (202, "QUEUED"));
    let pair_id = pair.data_str("pairId");
    assert_eq!(pair_id, expected_pair_id(SYBIL_A, SYBIL_B));
    assert_eq!(pair_id, expected_pair_id(SYBIL_B, SYBIL_A), "unordered");
    assert_eq!((pair.data_str("walletA"), pair.data_str("walletB")), (SYBIL_A.to_owned(), SYBIL_B.to_owned()));
    assert_eq!(
        pair.data_str("pollUrl"),
        format!("http://{}/v1/developer/intelligence/comparison/{pair_id}", server.running().api.local_addr())
    );
    let compared = server.finish(&comparison_path(&pair_id), k);
    let data = compared.data();
    assert_eq!((data["status"].as_str(), data["pairId"].as_str()), (Some("READY"), Some(pair_id.as_str())));
    assert_eq!((data["walletA"].as_str(), data["walletB"].as_str()), (Some(SYBIL_A), Some(SYBIL_B)));
    assert!(is_timestamp(&data["completedAt"]), "{data}");
    assert_comparison(&data["comparison"], SYBIL_A, SYBIL_B);
    assert_eq!(data["comparison"]["relationship"], "likely_same_owner");

    // GET status.
    let s = server.status(k);
    assert_eq!(s["key"]["id"].as_str(), Some(key.id.as_str()));
    assert_eq!((s["key"]["name"].as_str(), s["key"]["status"].as_str()), (Some("test"), Some("active")));
    assert_eq!(s["key"]["prefix"].as_str(), Some(&key.secret[..13]), "svc_live_ + 4 characters");
    assert!(is_timestamp(&s["key"]["createdAt"]) && s["key"]["expiresAt"].is_null(), "{s}");
    assert_eq!(s["scopes"], scope_listing(&ALL_SCOPES));
    let rate = &s["rateLimit"];
    assert_eq!((rate["ratePerSecond"].as_u64(), rate["burst"].as_u64()), (Some(1_000), Some(1_000)), "{s}");
    assert!(rate["remaining"].as_u64().is_some_and(|r| r <= 1_000), "{s}");
    let quota = &s["quota"];
    assert_eq!(
        (quota["limit"].as_u64(), quota["used"].as_u64(), quota["remaining"].as_u64(), quota["period"].as_str()),
        (Some(1_000), Some(2), Some(998), Some("month")),
        "{s}"
    );
    assert!(is_timestamp(&quota["resetsAt"]), "{s}");
    assert_eq!(s["service"]["status"], "ok");
    assert_engine_versions(&s["service"]["engineVersions"]);

    // GET usage.
    let reply = get(server.addr, USAGE_PATH, k);
    assert_rate_headers(&reply, &key);
    let u = reply.data();
    assert_eq!(u["keyId"].as_str(), Some(key.id.as_str()));
    assert_eq!(u["period"]["kind"], "month");
    let (start, end) = (u["period"]["start"].as_str().expect("start"), u["period"]["end"].as_str().expect("end"));
    assert!(start.ends_with("-01T00:00:00.000Z") && end.ends_with("-01T00:00:00.000Z") && start < end, "{u}");
    assert_eq!(u["quota"]["resetsAt"].as_str(), Some(end));
    assert_eq!(quota["resetsAt"].as_str(), Some(end), "status and usage agree");
    assert_eq!(
        Usage::of(u),
        Usage {
            limit: 1_000,
            used: 2,
            reserved: 0,
            remaining: 998,
            wallet_analysis: 1,
            comparison: 1,
            transaction_scan: 0,
            refunded: 0,
            limited_requests: 0
        }
    );
    assert_eq!(
        (u["rateLimit"]["ratePerSecond"].as_u64(), u["rateLimit"]["burst"].as_u64()),
        (Some(1_000), Some(1_000))
    );
    assert!(u["rateLimit"]["remaining"].is_u64(), "{u}");
}

/// `data.scopes` of the status document for a key holding `granted`.
fn scope_listing(granted: &[&str]) -> Value {
    let endpoints = |scope: &str| match scope {
        "wallet:analyze" => json!(["POST /v1/developer/intelligence/wallet"]),
        "wallet:compare" => json!(["POST /v1/developer/intelligence/compare"]),
        "analysis:read" => {
            json!(["GET /v1/developer/intelligence/analysis/:id", "GET /v1/developer/intelligence/comparison/:pairId"])
        }
        "usage:read" => json!(["GET /v1/developer/usage"]),
        "monitor:write" => json!([
            "POST /v1/developer/monitors",
            "PATCH /v1/developer/monitors/:id",
            "DELETE /v1/developer/monitors/:id",
            "POST /v1/developer/monitors/:id/events/:eventId/redeliver"
        ]),
        "monitor:read" => json!([
            "GET /v1/developer/monitors",
            "GET /v1/developer/monitors/:id",
            "GET /v1/developer/monitors/:id/events"
        ]),
        "policy:read" => json!(["GET /v1/developer/policy"]),
        "policy:write" => json!(["PUT /v1/developer/policy"]),
        _ => json!(["POST /v1/developer/intelligence/transaction"]),
    };
    ALL_SCOPES
        .iter()
        .map(|s| json!({"scope": s, "granted": granted.contains(s), "endpoints": endpoints(s)}))
        .collect::<Vec<_>>()
        .into()
}

fn assert_engine_versions(versions: &Value) {
    let versions = versions.as_object().unwrap_or_else(|| panic!("engineVersions object: {versions}"));
    assert!(versions.contains_key("xray"), "{versions:?}");
    for (engine, version) in versions {
        let parts: Vec<&str> = version.as_str().unwrap_or("").split('.').collect();
        assert!(parts.len() == 3 && parts.iter().all(|p| p.parse::<u32>().is_ok()), "{engine}: {version}");
    }
}

fn one_of(value: &Value, allowed: &[&str]) -> bool {
    value.as_str().is_some_and(|v| allowed.contains(&v))
}

/// (what fails, sender, method, path, content type, body, the code that must answer)
type OrderCase = (&'static str, Sender, &'static str, &'static str, Option<&'static str>, String, &'static str);
/// One request of a sequence, sent when the step runs.
type SendFn<'a> = Box<dyn Fn() -> Reply + 'a>;

const SEVERITIES: [&str; 5] = ["info", "low", "medium", "high", "critical"];
const RISK_LEVELS: [&str; 4] = ["low", "medium", "high", "critical"];

fn assert_score(score: &Value) {
    let value = score["value"].as_u64().unwrap_or_else(|| panic!("score.value: {score}"));
    assert!(value <= 100, "{score}");
    let band = match value {
        75.. => "low",
        50.. => "medium",
        25.. => "high",
        _ => "critical",
    };
    assert_eq!(score["riskLevel"], band, "riskLevel follows the README's bands: {score}");
    assert!(score["confidence"].as_f64().is_some_and(|c| (0.0..=1.0).contains(&c)), "{score}");
}

/// Every evidence item has a unique id and its kind's fields; returns the ids.
fn evidence_ids(evidence: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    for item in evidence.as_array().expect("evidence array") {
        let id = item["id"].as_str().expect("evidence id").to_owned();
        assert!(!ids.contains(&id), "duplicate evidence id {id}");
        match item["kind"].as_str() {
            Some("transaction") => {
                assert!(item["signature"].is_string() && item["slot"].is_u64(), "{item}");
                assert!(item["programId"].is_string() && item["instruction"].is_string(), "{item}");
                let index = item["instructionIndex"].as_str().expect("instructionIndex is a string");
                let parts: Vec<&str> = index.split('.').collect();
                assert!(parts.len() <= 2 && parts.iter().all(|p| p.parse::<u32>().is_ok()), "{index}");
            }
            Some("account") => assert!(item["account"].is_string() && item["slot"].is_u64(), "{item}"),
            _ => panic!("unknown evidence kind: {item}"),
        }
        assert!(item["summary"].is_string(), "{item}");
        ids.push(id);
    }
    ids
}

/// `data.xray` has every part of §5 and keeps its reference promises.
fn assert_xray(xray: &Value, wallet: &str) {
    assert_eq!(xray["wallet"], wallet);
    assert_score(&xray["score"]);
    let evidence = evidence_ids(&xray["evidence"]);
    let signals = xray["signals"].as_array().expect("signals");
    let signal_ids: Vec<&str> = signals.iter().map(|s| s["id"].as_str().expect("signal id")).collect();
    for signal in signals {
        assert!(one_of(&signal["severity"], &SEVERITIES), "{signal}");
        for field in ["kind", "dimension", "title", "detail"] {
            assert!(signal[field].is_string(), "signal.{field}: {signal}");
        }
        assert!(signal["facts"].is_object(), "{signal}");
        let cited = signal["evidenceIds"].as_array().expect("evidenceIds");
        assert!(!cited.is_empty(), "every signal cites evidence: {signal}");
        for id in cited {
            assert!(evidence.iter().any(|e| id == e.as_str()), "dangling evidence id {id}");
        }
    }
    let dimensions = xray["dimensions"].as_array().expect("dimensions");
    assert!(!dimensions.is_empty());
    for dimension in dimensions {
        assert!(dimension["id"].is_string() && dimension["score"].as_u64().is_some_and(|v| v <= 100), "{dimension}");
        assert!(dimension["weight"].is_number() && one_of(&dimension["riskLevel"], &RISK_LEVELS), "{dimension}");
        for id in dimension["signalIds"].as_array().expect("signalIds") {
            assert!(signal_ids.iter().any(|s| id == s), "dangling signal id {id}");
        }
    }
    for path in xray["attackPaths"].as_array().expect("attackPaths") {
        assert!(path["id"].is_string() && path["title"].is_string() && path["remediation"].is_string(), "{path}");
        assert!(one_of(&path["severity"], &SEVERITIES), "{path}");
        let steps = path["steps"].as_array().expect("steps");
        assert!(!steps.is_empty() && steps.iter().enumerate().all(|(i, s)| s["order"] == i + 1), "{path}");
        for asset in path["assetsAtRisk"].as_array().expect("assetsAtRisk") {
            let lamports = asset["mint"] == "SOL";
            assert!(asset["mint"].is_string(), "{asset}");
            assert!(
                if lamports { asset["amount"].is_u64() } else { asset["amount"].is_string() },
                "lamports are integers, token amounts strings: {asset}"
            );
        }
        for id in path["signalIds"].as_array().expect("signalIds") {
            assert!(signal_ids.iter().any(|s| id == s), "dangling signal id {id}");
        }
    }
    assert_engine_versions(&xray["engineVersions"]);
    let coverage = &xray["coverage"];
    assert_eq!(coverage["ledgerSource"], "demo", "{coverage}");
    assert!(coverage["asOfSlot"].is_u64() && coverage["transactionsAnalyzed"].is_u64(), "{coverage}");
    assert!(coverage["historyComplete"].is_boolean(), "{coverage}");
}

/// `data.comparison` has every part of §5.
fn assert_comparison(comparison: &Value, a: &str, b: &str) {
    for (side, address) in [("walletA", a), ("walletB", b)] {
        assert_eq!(comparison[side]["address"], address, "{comparison}");
        assert_score(&comparison[side]["score"]);
    }
    assert!(comparison["similarity"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{comparison}");
    assert!(
        one_of(&comparison["relationship"], &["likely_same_owner", "linked", "weakly_linked", "unrelated"]),
        "{comparison}"
    );
    let evidence = evidence_ids(&comparison["evidence"]);
    let links = comparison["links"].as_array().expect("links");
    assert!(!links.is_empty(), "{comparison}");
    for link in links {
        assert!(link["kind"].is_string() && link["detail"].is_string(), "{link}");
        assert!(link["strength"].as_f64().is_some_and(|s| (0.0..=1.0).contains(&s)), "{link}");
        for id in link["evidenceIds"].as_array().expect("evidenceIds") {
            assert!(evidence.iter().any(|e| id == e.as_str()), "dangling evidence id {id}");
        }
    }
    assert_engine_versions(&comparison["engineVersions"]);
    assert!(comparison["engineVersions"].get("compare").is_some(), "{comparison}");
}

#[test]
fn every_demo_archetype_analyzes_to_a_well_formed_xray() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let accepted: Vec<Reply> = READY_WALLETS.iter().map(|w| submit(&server, k, WALLET_PATH, &wallet_body(w))).collect();
    for (wallet, reply) in READY_WALLETS.iter().zip(&accepted) {
        let ready = server.finish(&reply.poll_path(), k);
        assert_eq!(ready.job_status(), "READY", "{wallet}: {ready:?}");
        assert_xray(&ready.data()["xray"], wallet);
    }
}

#[test]
fn attack_path_assets_name_a_mint_and_an_amount_in_base_units() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let accepted = submit(&server, &key.secret, WALLET_PATH, &wallet_body(OWNER_CHANGE_DRAINED));
    let ready = server.finish(&accepted.poll_path(), &key.secret);
    let xray = &ready.data()["xray"];
    let token_accounts: Vec<&Value> =
        xray["signals"].as_array().expect("signals").iter().filter_map(|s| s["facts"].get("tokenAccount")).collect();
    let paths = xray["attackPaths"].as_array().expect("attackPaths");
    assert!(!paths.is_empty(), "{xray}");
    for path in paths {
        for asset in path["assetsAtRisk"].as_array().expect("assetsAtRisk") {
            if asset["mint"] == "SOL" {
                assert!(asset["amount"].is_u64(), "lamports: {asset}");
                continue;
            }
            let amount = asset["amount"].as_str().expect("amount");
            assert!(!amount.is_empty() && amount.bytes().all(|b| b.is_ascii_digit()), "base units: {asset}");
            assert!(!token_accounts.contains(&&asset["mint"]), "a token account is not a mint: {asset}");
        }
    }
}

#[test]
fn poll_urls_use_the_public_base_url_when_one_is_configured() {
    let server = serve(|c| c.public_base_url = Some("https://xray.example.com/api".into()));
    let key = server.key(KeyOptions::default());
    let accepted = post(server.addr, WALLET_PATH, &key.secret, &wallet_body(CLEAN));
    let id = accepted.data_str("analysisId");
    let url = format!("https://xray.example.com/api/v1/developer/intelligence/analysis/{id}");
    let pair = post(server.addr, COMPARE_PATH, &key.secret, &compare_body(SYBIL_A, SYBIL_B));
    let pair_url =
        format!("https://xray.example.com/api/v1/developer/intelligence/comparison/{}", pair.data_str("pairId"));
    for (reply, url) in [(accepted, url), (pair, pair_url)] {
        assert_eq!(reply.status, 202, "{reply:?}");
        assert_eq!((reply.data_str("pollUrl"), reply.body["pollUrl"].as_str()), (url.clone(), Some(url.as_str())));
        assert_eq!(reply.header("location"), Some(url.as_str()));
    }
}

// ---- the error table ----

/// Who sends a request of the table.
#[derive(Clone, Copy)]
pub(crate) enum Auth {
    /// Every scope.
    Full,
    /// `usage:read` only.
    Reader,
    /// No `Authorization` header.
    Without,
    /// This header value.
    Header(&'static str),
    /// A well-formed key the server never issued.
    Unknown,
}

/// One request and what its reply must carry.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) auth: Auth,
    pub(crate) method: &'static str,
    pub(crate) path: String,
    pub(crate) content_type: Option<&'static str>,
    pub(crate) body: String,
    pub(crate) status: u16,
    pub(crate) code: &'static str,
    pub(crate) details: Value,
    /// A header the reply must carry, with its value.
    pub(crate) header: Option<(&'static str, &'static str)>,
}

fn case(name: &'static str, method: &'static str, path: &str, body: &str, status: u16, code: &'static str) -> Case {
    Case {
        name,
        auth: Auth::Full,
        method,
        path: path.to_owned(),
        content_type: (method == "POST").then_some("application/json"),
        body: body.to_owned(),
        status,
        code,
        details: json!({}),
        header: None,
    }
}

impl Case {
    fn details(self, details: Value) -> Case {
        Case { details, ..self }
    }
    fn auth(self, auth: Auth) -> Case {
        Case { auth, ..self }
    }
    fn content_type(self, content_type: Option<&'static str>) -> Case {
        Case { content_type, ..self }
    }
    fn header(self, name: &'static str, value: &'static str) -> Case {
        Case { header: Some((name, value)), ..self }
    }
}

/// A JSON body of exactly `len` bytes whose wallet is `wallet`.
fn padded_body(wallet: &str, len: usize) -> String {
    let bare = format!(r#"{{"wallet":"{wallet}","pad":""}}"#);
    format!(r#"{{"wallet":"{wallet}","pad":"{}"}}"#, "x".repeat(len - bare.len()))
}

/// Every row of the contract's error table a single request can provoke (also asked of a
/// cluster's nodes in turn, `cluster::nodes`).
pub(crate) fn error_cases() -> Vec<Case> {
    let (w, c) = (WALLET_PATH, COMPARE_PATH);
    let an = analysis_path("an_4vJ9JU1bJJE96FWSJKvHsmmF");
    let pair = comparison_path("pair_4vJ9JU1bJJE96FWSJKvHsmmF");
    let bearer = "WWW-Authenticate";
    let thirty_three_bytes = bs58::encode([7u8; 33]).into_string();
    let thirty_one_bytes = bs58::encode([7u8; 31]).into_string();
    vec![
        // 400 INVALID_REQUEST
        case("malformed JSON", "POST", w, "{not json", 400, "INVALID_REQUEST").details(json!({"field": "body"})),
        case("empty body", "POST", w, "", 400, "INVALID_REQUEST").details(json!({"field": "body"})),
        case("array body", "POST", w, "[1]", 400, "INVALID_REQUEST").details(json!({"field": "body"})),
        case("string body", "POST", w, r#""x""#, 400, "INVALID_REQUEST").details(json!({"field": "body"})),
        case("missing wallet", "POST", w, r#"{"other":1}"#, 400, "INVALID_REQUEST").details(json!({"field": "wallet"})),
        case("numeric wallet", "POST", w, r#"{"wallet":5}"#, 400, "INVALID_REQUEST")
            .details(json!({"field": "wallet"})),
        case("null wallet", "POST", w, r#"{"wallet":null}"#, 400, "INVALID_REQUEST")
            .details(json!({"field": "wallet"})),
        case("string refresh", "POST", w, &format!(r#"{{"wallet":"{CLEAN}","refresh":"y"}}"#), 400, "INVALID_REQUEST")
            .details(json!({"field": "refresh"})),
        case("missing walletB", "POST", c, &format!(r#"{{"walletA":"{CLEAN}"}}"#), 400, "INVALID_REQUEST")
            .details(json!({"field": "walletB"})),
        case("numeric walletA", "POST", c, &format!(r#"{{"walletA":1,"walletB":"{CLEAN}"}}"#), 400, "INVALID_REQUEST")
            .details(json!({"field": "walletA"})),
        case("equal addresses", "POST", c, &compare_body(CLEAN, CLEAN), 400, "INVALID_REQUEST")
            .details(json!({"field": "walletB"})),
        // 400 INVALID_ADDRESS
        case("not base58", "POST", w, &wallet_body("0OIl0OIl0OIl"), 400, "INVALID_ADDRESS")
            .details(json!({"field": "wallet", "reason": "not_base58"})),
        case("too short", "POST", w, &wallet_body("abc"), 400, "INVALID_ADDRESS")
            .details(json!({"field": "wallet", "reason": "wrong_length"})),
        case("empty address", "POST", w, &wallet_body(""), 400, "INVALID_ADDRESS")
            .details(json!({"field": "wallet", "reason": "wrong_length"})),
        case("33 bytes", "POST", w, &wallet_body(&thirty_three_bytes), 400, "INVALID_ADDRESS")
            .details(json!({"field": "wallet", "reason": "wrong_length"})),
        case("31 bytes", "POST", w, &wallet_body(&thirty_one_bytes), 400, "INVALID_ADDRESS")
            .details(json!({"field": "wallet", "reason": "wrong_length"})),
        case("walletA not base58", "POST", c, &compare_body("0OIl", CLEAN), 400, "INVALID_ADDRESS")
            .details(json!({"field": "walletA", "reason": "not_base58"})),
        case("walletB too short", "POST", c, &compare_body(CLEAN, "abc"), 400, "INVALID_ADDRESS")
            .details(json!({"field": "walletB", "reason": "wrong_length"})),
        case("body of exactly 4096 bytes", "POST", w, &padded_body("abc", 4_096), 400, "INVALID_ADDRESS")
            .details(json!({"reason": "wrong_length"})),
        // 401
        case("no key", "GET", STATUS_PATH, "", 401, "UNAUTHENTICATED")
            .auth(Auth::Without)
            .details(json!({"reason": "missing"}))
            .header(bearer, "Bearer"),
        case("not a bearer", "GET", STATUS_PATH, "", 401, "UNAUTHENTICATED")
            .auth(Auth::Header("Basic dXNlcjpwYXNz"))
            .details(json!({"reason": "malformed"}))
            .header(bearer, "Bearer"),
        case("not a key", "GET", USAGE_PATH, "", 401, "UNAUTHENTICATED")
            .auth(Auth::Header("Bearer svc_live_notakey"))
            .details(json!({"reason": "malformed"}))
            .header(bearer, "Bearer"),
        case("unknown key", "POST", w, &wallet_body(CLEAN), 401, "UNAUTHENTICATED")
            .auth(Auth::Unknown)
            .details(json!({"reason": "unknown"}))
            .header(bearer, "Bearer"),
        // 403
        case("no wallet:analyze", "POST", w, &wallet_body(CLEAN), 403, "INSUFFICIENT_SCOPE")
            .auth(Auth::Reader)
            .details(json!({"requiredScope": "wallet:analyze"})),
        case("no analysis:read", "GET", &an, "", 403, "INSUFFICIENT_SCOPE")
            .auth(Auth::Reader)
            .details(json!({"requiredScope": "analysis:read"})),
        // 404
        case("unknown route", "GET", "/v1/developer/nope", "", 404, "NOT_FOUND"),
        case("unknown route without a key", "GET", "/v2/developer/status", "", 404, "NOT_FOUND").auth(Auth::Without),
        case("trailing slash", "GET", "/v1/developer/status/", "", 404, "NOT_FOUND"),
        case("unknown analysis", "GET", &an, "", 404, "NOT_FOUND"),
        case("malformed analysis id", "GET", &analysis_path("nope"), "", 404, "NOT_FOUND"),
        case("pair id as analysis id", "GET", &analysis_path("pair_4vJ9JU1bJJE96FWSJKvHsmmF"), "", 404, "NOT_FOUND"),
        case("unknown pair", "GET", &pair, "", 404, "NOT_FOUND"),
        case("malformed pair id", "GET", &comparison_path("an_4vJ9JU1bJJE96FWSJKvHsmmF"), "", 404, "NOT_FOUND"),
        // 405
        case("GET wallet", "GET", w, "", 405, "METHOD_NOT_ALLOWED")
            .details(json!({"allow": ["POST"]}))
            .header("Allow", "POST"),
        case("DELETE compare", "DELETE", c, "", 405, "METHOD_NOT_ALLOWED")
            .details(json!({"allow": ["POST"]}))
            .header("Allow", "POST"),
        case("POST status", "POST", STATUS_PATH, "{}", 405, "METHOD_NOT_ALLOWED")
            .details(json!({"allow": ["GET"]}))
            .header("Allow", "GET"),
        case("PUT analysis", "PUT", &an, "", 405, "METHOD_NOT_ALLOWED")
            .details(json!({"allow": ["GET"]}))
            .header("Allow", "GET"),
        case("OPTIONS usage", "OPTIONS", USAGE_PATH, "", 405, "METHOD_NOT_ALLOWED")
            .details(json!({"allow": ["GET"]}))
            .header("Allow", "GET"),
        case("POST healthz", "POST", "/healthz", "{}", 405, "METHOD_NOT_ALLOWED")
            .auth(Auth::Without)
            .details(json!({"allow": ["GET"]}))
            .header("Allow", "GET"),
        // 413
        case("4097 bytes", "POST", w, &padded_body(CLEAN, 4_097), 413, "PAYLOAD_TOO_LARGE")
            .details(json!({"maxBytes": 4096})),
        case("5000-byte compare", "POST", c, &padded_body(CLEAN, 5_000), 413, "PAYLOAD_TOO_LARGE")
            .details(json!({"maxBytes": 4096})),
        // 415
        case("text/plain", "POST", w, &wallet_body(CLEAN), 415, "UNSUPPORTED_MEDIA_TYPE")
            .content_type(Some("text/plain")),
        case("no content type", "POST", w, &wallet_body(CLEAN), 415, "UNSUPPORTED_MEDIA_TYPE").content_type(None),
        case("json look-alike", "POST", c, &compare_body(SYBIL_A, SYBIL_B), 415, "UNSUPPORTED_MEDIA_TYPE")
            .content_type(Some("application/problem+json")),
        // Parameters and case are allowed: these reach the address check.
        case("charset parameter", "POST", w, &wallet_body("abc"), 400, "INVALID_ADDRESS")
            .content_type(Some("application/json; charset=utf-8")),
        case("upper case media type", "POST", w, &wallet_body("abc"), 400, "INVALID_ADDRESS")
            .content_type(Some("Application/JSON")),
        // 422 at admission
        case("token mint", "POST", w, &wallet_body(TOKEN_MINT), 422, "ACCOUNT_NOT_ELIGIBLE")
            .details(json!({"field": "wallet", "reason": "token_mint"})),
        case("System Program", "POST", w, &wallet_body(SYSTEM_PROGRAM), 422, "ACCOUNT_NOT_ELIGIBLE")
            .details(json!({"field": "wallet", "reason": "program"})),
        case(
            "Token Program",
            "POST",
            w,
            &wallet_body("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA"),
            422,
            "ACCOUNT_NOT_ELIGIBLE",
        )
        .details(json!({"field": "wallet", "reason": "program"})),
        case(
            "Clock sysvar",
            "POST",
            w,
            &wallet_body("SysvarC1ock11111111111111111111111111111111"),
            422,
            "ACCOUNT_NOT_ELIGIBLE",
        )
        .details(json!({"field": "wallet", "reason": "sysvar"})),
        case("token account (off curve)", "POST", w, &wallet_body(TOKEN_ACCOUNT), 422, "ACCOUNT_NOT_ELIGIBLE")
            .details(json!({"field": "wallet", "reason": "off_curve"})),
        case("pool state (off curve)", "POST", w, &wallet_body(PROGRAM_DATA_ACCOUNT), 422, "ACCOUNT_NOT_ELIGIBLE")
            .details(json!({"field": "wallet", "reason": "off_curve"})),
        case("compare walletA program", "POST", c, &compare_body(SYSTEM_PROGRAM, CLEAN), 422, "ACCOUNT_NOT_ELIGIBLE")
            .details(json!({"field": "walletA", "reason": "program"})),
        case("compare walletB mint", "POST", c, &compare_body(CLEAN, TOKEN_MINT), 422, "ACCOUNT_NOT_ELIGIBLE")
            .details(json!({"field": "walletB", "reason": "token_mint"})),
    ]
}

#[test]
fn every_row_of_the_error_table_on_the_auto_driver() {
    error_table(IoDriver::Auto);
}

#[test]
fn every_row_of_the_error_table_on_the_epoll_driver() {
    error_table(IoDriver::Epoll);
}

fn error_table(driver: IoDriver) {
    let server = serve_on(driver);
    let full = server.key(KeyOptions::default());
    let reader = server.key(KeyOptions::scopes("usage:read"));
    let unknown = xray::auth::key::ApiKey::generate().expect("random");
    let unknown = format!("Bearer {}", unknown.expose_secret());
    let (full_auth, reader_auth) = (format!("Bearer {}", full.secret), format!("Bearer {}", reader.secret));
    for c in error_cases() {
        let (authorization, key) = match c.auth {
            Auth::Full => (Some(full_auth.as_str()), Some(&full)),
            Auth::Reader => (Some(reader_auth.as_str()), Some(&reader)),
            Auth::Without => (None, None),
            Auth::Header(value) => (Some(value), None),
            Auth::Unknown => (Some(unknown.as_str()), None),
        };
        let mut headers: Vec<(&str, &str)> = authorization.map(|a| ("Authorization", a)).into_iter().collect();
        headers.extend(c.content_type.map(|t| ("Content-Type", t)));
        let reply = raw(server.addr, c.method, &c.path, &headers, &c.body);
        let context = format!("{driver} / {}: {reply:?}", c.name);
        assert_eq!((reply.status, reply.error()["code"].as_str()), (c.status, Some(c.code)), "{context}");
        assert_error_details(&reply, c.status, c.code, &c.details);
        let details = &reply.error()["details"];
        match c.code {
            // No details for these codes, never `{}` or `null`.
            "NOT_FOUND" | "UNSUPPORTED_MEDIA_TYPE" => assert!(reply.error().get("details").is_none(), "{context}"),
            _ => assert!(details.as_object().is_some_and(|d| !d.is_empty()), "{context}"),
        }
        if let Some((name, value)) = c.header {
            assert_eq!(reply.header(name), Some(value), "{context}");
        }
        // Authenticated: the key's rate-limit headers. Unauthenticated: none. A route failure
        // answers before authentication (step 1), so it is not checked either way.
        let route_failure = c.code == "METHOD_NOT_ALLOWED"
            || (c.code == "NOT_FOUND" && !c.path.starts_with("/v1/developer/intelligence/"));
        match key {
            Some(key) if c.status != 401 && !route_failure => {
                assert_rate_headers(&reply, key);
            }
            None => assert_no_rate_headers(&reply),
            _ if c.status == 401 => assert_no_rate_headers(&reply),
            _ => {}
        }
    }
    // HEAD is no alias of GET: 405 with the allowed methods (no body to check).
    for (path, allow) in [(STATUS_PATH, "GET"), (WALLET_PATH, "POST"), ("/healthz", "GET")] {
        let reply = raw(server.addr, "HEAD", path, &[("Authorization", &full_auth)], "");
        assert_eq!((reply.status, reply.header("allow")), (405, Some(allow)), "HEAD {path}: {reply:?}");
        assert!(reply.header("x-request-id").is_some_and(is_request_id), "{reply:?}");
    }
    let unknown_pair = get(server.addr, &comparison_path("pair_4vJ9JU1bJJE96FWSJKvHsmmF"), &full.secret);
    assert_rate_headers(&unknown_pair, &full);
    let usage = server.usage(&full.secret);
    assert_eq!(usage.units(), (0, 0, 1_000, 0), "no refused request is charged: {usage:?}");
    assert_eq!((usage.wallet_analysis, usage.comparison), (0, 0));
}

// ---- order of checks ----

/// Which key sends a request of the order table.
#[derive(Clone, Copy, Debug)]
enum Sender {
    Nobody,
    Malformed,
    Unknown,
    Full,
    /// `usage:read` only.
    Reader,
    /// Every scope, burst 1: its one token is spent just before.
    Drained,
    /// `usage:read` only, burst 1, token spent just before.
    DrainedReader,
    /// Every scope, quota 0.
    Broke,
}

#[test]
fn checks_run_in_the_contract_order() {
    let server = serve(|_| {});
    let full = server.key(KeyOptions::default());
    let reader = server.key(KeyOptions::scopes("usage:read"));
    let single = KeyOptions { burst: 1, rate_per_second: 1, ..KeyOptions::default() };
    let drained = server.key(single.clone());
    let drained_reader = server.key(KeyOptions { scopes: "usage:read".into(), ..single });
    let broke = server.key(KeyOptions { quota: 0, ..KeyOptions::default() });
    let unknown = xray::auth::key::ApiKey::generate().expect("random").expose_secret().to_owned();
    let (w, c) = (WALLET_PATH, COMPARE_PATH);
    let json = Some("application/json");
    let big = padded_body(CLEAN, 5_000);
    // (what fails, sender, method, path, content type, body, the code that must answer)
    let cases: Vec<OrderCase> = vec![
        ("route ≺ auth: no key, wrong method", Sender::Nobody, "DELETE", w, None, String::new(), "METHOD_NOT_ALLOWED"),
        ("route ≺ auth: bad key, wrong method", Sender::Malformed, "GET", w, None, String::new(), "METHOD_NOT_ALLOWED"),
        (
            "route ≺ auth: unknown key, unknown path",
            Sender::Unknown,
            "GET",
            "/v1/nope",
            None,
            String::new(),
            "NOT_FOUND",
        ),
        ("auth ≺ body: no key, bad JSON", Sender::Nobody, "POST", w, json, "{oops".into(), "UNAUTHENTICATED"),
        (
            "auth ≺ media type: unknown key",
            Sender::Unknown,
            "POST",
            w,
            Some("text/plain"),
            "x".into(),
            "UNAUTHENTICATED",
        ),
        ("auth ≺ size: bad key, 5000 bytes", Sender::Malformed, "POST", w, json, big.clone(), "UNAUTHENTICATED"),
        ("scope ≺ body: bad JSON", Sender::Reader, "POST", w, json, "{oops".into(), "INSUFFICIENT_SCOPE"),
        ("scope ≺ size: 5000 bytes", Sender::Reader, "POST", c, json, big.clone(), "INSUFFICIENT_SCOPE"),
        ("scope ≺ rate limit", Sender::DrainedReader, "POST", w, json, wallet_body(CLEAN), "INSUFFICIENT_SCOPE"),
        ("rate limit ≺ body: bad JSON", Sender::Drained, "POST", w, json, "{oops".into(), "RATE_LIMITED"),
        ("rate limit ≺ media type", Sender::Drained, "POST", c, None, "{oops".into(), "RATE_LIMITED"),
        (
            "rate limit ≺ lookup: unknown id",
            Sender::Drained,
            "GET",
            "/v1/developer/intelligence/analysis/an_x",
            None,
            String::new(),
            "RATE_LIMITED",
        ),
        ("media type ≺ size", Sender::Full, "POST", w, Some("text/plain"), big.clone(), "UNSUPPORTED_MEDIA_TYPE"),
        ("size ≺ JSON", Sender::Full, "POST", w, json, format!("{{{}", "x".repeat(5_000)), "PAYLOAD_TOO_LARGE"),
        ("JSON ≺ address", Sender::Full, "POST", w, json, r#"{"wallet":"abc","refresh":1}"#.into(), "INVALID_REQUEST"),
        (
            "address ≺ eligibility (A)",
            Sender::Full,
            "POST",
            c,
            json,
            compare_body("abc", TOKEN_MINT),
            "INVALID_ADDRESS",
        ),
        (
            "address ≺ eligibility (B)",
            Sender::Full,
            "POST",
            c,
            json,
            compare_body(TOKEN_MINT, "abc"),
            "INVALID_ADDRESS",
        ),
        ("address ≺ quota", Sender::Broke, "POST", w, json, wallet_body("abc"), "INVALID_ADDRESS"),
        ("eligibility ≺ quota", Sender::Broke, "POST", w, json, wallet_body(TOKEN_MINT), "ACCOUNT_NOT_ELIGIBLE"),
        ("quota", Sender::Broke, "POST", w, json, wallet_body(CLEAN), "QUOTA_EXHAUSTED"),
        ("quota (compare)", Sender::Broke, "POST", c, json, compare_body(SYBIL_C, SYBIL_D), "QUOTA_EXHAUSTED"),
    ];
    for (what, sender, method, path, content_type, body, code) in cases {
        let secret = match sender {
            Sender::Nobody => None,
            Sender::Malformed => Some("svc_live_0"),
            Sender::Unknown => Some(unknown.as_str()),
            Sender::Full => Some(full.secret.as_str()),
            Sender::Reader => Some(reader.secret.as_str()),
            Sender::Drained => Some(drained.secret.as_str()),
            Sender::DrainedReader => Some(drained_reader.secret.as_str()),
            Sender::Broke => Some(broke.secret.as_str()),
        };
        if matches!(sender, Sender::Drained | Sender::DrainedReader) {
            // Spend the one token (a refused request spends nothing, so the bucket is empty
            // whatever this answers).
            get(server.addr, STATUS_PATH, secret.expect("key"));
        }
        let auth = secret.map(|s| format!("Bearer {s}"));
        let mut headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        headers.extend(content_type.map(|t| ("Content-Type", t)));
        let reply = raw(server.addr, method, path, &headers, &body);
        assert_eq!(reply.error()["code"].as_str(), Some(code), "{what} ({sender:?}): {reply:?}");
    }

    // Dedup ≺ quota: a key whose one unit is spent still gets its running (or fresh) job back.
    let one = server.key(KeyOptions { quota: 1, ..KeyOptions::default() });
    let first = submit(&server, &one.secret, WALLET_PATH, &wallet_body(CLEAN));
    let repeat = submit(&server, &one.secret, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!(
        (repeat.data_str("analysisId"), &repeat.data()["deduplicated"]),
        (first.data_str("analysisId"), &json!(true))
    );
    let other = post(server.addr, WALLET_PATH, &one.secret, &wallet_body(OPEN_DELEGATION));
    assert_error(&other, 429, "QUOTA_EXHAUSTED");
}

// ---- request ids ----

#[test]
fn request_ids_are_echoed_when_valid_and_replaced_otherwise() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let auth = format!("Bearer {}", key.secret);
    let long = "a".repeat(64);
    let too_long = "a".repeat(65);
    // (sent X-Request-Id, echoed?)
    let ids: [(Option<&str>, bool); 11] = [
        (Some("abc-123_X.y"), true),
        (Some("A"), true),
        (Some("..--__"), true),
        (Some(&long), true),
        (None, false),
        (Some(""), false),
        (Some(&too_long), false),
        (Some("bad id"), false),
        (Some("a/b"), false),
        (Some("x@y:z"), false),
        (Some("quote\"d"), false),
    ];
    // (method, path, authorization) of requests answered at each stage.
    let requests: [(&str, &str, Option<&str>); 5] = [
        ("GET", STATUS_PATH, Some(&auth)),
        ("GET", "/healthz", None),
        ("GET", STATUS_PATH, None),
        ("GET", "/v1/nope", Some(&auth)),
        ("POST", WALLET_PATH, Some(&auth)),
    ];
    let mut generated = Vec::new();
    for (method, path, authorization) in requests {
        for (sent, echoed) in ids {
            let mut headers: Vec<(&str, &str)> = authorization.map(|a| ("Authorization", a)).into_iter().collect();
            headers.extend(sent.map(|id| ("X-Request-Id", id)));
            headers.push(("Content-Type", "application/json"));
            let reply = raw(server.addr, method, path, &headers, if method == "POST" { "{" } else { "" });
            let id = reply.header("x-request-id").unwrap_or_else(|| panic!("no X-Request-Id: {reply:?}")).to_owned();
            let context = format!("{method} {path} with {sent:?} → {id:?}");
            assert!(is_request_id(&id), "{context}");
            assert_eq!(Some(id.as_str()) == sent, echoed, "{context}");
            if let Some(in_body) = reply.error().get("requestId") {
                assert_eq!(in_body.as_str(), Some(id.as_str()), "{context}");
            }
            if !echoed {
                generated.push(id);
            }
        }
    }
    let count = generated.len();
    generated.sort();
    generated.dedup();
    assert_eq!(generated.len(), count, "every generated id is fresh");
}

// ---- rate-limit headers ----

#[test]
fn rate_limit_headers_on_every_authenticated_response_and_no_other() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions { rate_per_second: 1, burst: 20, quota: 5, ..KeyOptions::default() });
    // ceil(10 / 3) = 4: the policy's window rounds up.
    let reader = server.key(KeyOptions { rate_per_second: 3, burst: 10, quota: 7, ..KeyOptions::scopes("usage:read") });
    let k = key.secret.as_str();
    let started = Instant::now();
    let bad_body = || post(server.addr, WALLET_PATH, k, "{");
    // (what, reply, quota units charged by then)
    let steps: Vec<(&str, SendFn<'_>, u64)> = vec![
        ("status 200", Box::new(|| get(server.addr, STATUS_PATH, k)), 0),
        ("wallet 202", Box::new(|| post(server.addr, WALLET_PATH, k, &wallet_body(CLEAN))), 1),
        ("wallet dedup", Box::new(|| post(server.addr, WALLET_PATH, k, &wallet_body(CLEAN))), 1),
        ("compare 202", Box::new(|| post(server.addr, COMPARE_PATH, k, &compare_body(SYBIL_C, SYBIL_D))), 2),
        ("unknown analysis 404", Box::new(|| get(server.addr, &analysis_path("an_4vJ9JU1bJJE96FWSJKvHsmmF"), k)), 2),
        ("unknown pair 404", Box::new(|| get(server.addr, &comparison_path("pair_x"), k)), 2),
        ("bad body 400", Box::new(bad_body), 2),
        ("bad address 400", Box::new(|| post(server.addr, WALLET_PATH, k, &wallet_body("abc"))), 2),
        ("ineligible 422", Box::new(|| post(server.addr, WALLET_PATH, k, &wallet_body(TOKEN_MINT))), 2),
        ("large 413", Box::new(|| post(server.addr, WALLET_PATH, k, &padded_body(CLEAN, 4_097))), 2),
        ("usage 200", Box::new(|| get(server.addr, USAGE_PATH, k)), 2),
    ];
    for (n, (what, request, charged)) in steps.iter().enumerate() {
        let reply = request();
        let h = assert_rate_headers(&reply, &key);
        let spent = n as u64 + 1;
        let refilled = started.elapsed().as_secs();
        assert!((20 - spent..=20 - spent + refilled).contains(&h.tokens), "{what}: {spent} spent, {h:?}");
        assert_eq!(h.quota_remaining, 5 - charged, "{what}: {h:?}");
    }
    // The quota reset agrees with the usage document's period end.
    let usage = get(server.addr, USAGE_PATH, k);
    let h = assert_rate_headers(&usage, &key);
    let end = usage.data()["period"]["end"].as_str().expect("end");
    let end_ms = xray::clock::parse_rfc3339_ms(end).expect("time");
    let expected = end_ms.saturating_sub(xray::clock::now_unix_ms()) as i64 / 1_000;
    assert!((h.reset_in_s as i64 - expected).abs() <= 2, "t={} vs {end}", h.reset_in_s);

    let refused = post(server.addr, WALLET_PATH, &reader.secret, &wallet_body(CLEAN));
    assert_error(&refused, 403, "INSUFFICIENT_SCOPE");
    let h = assert_rate_headers(&refused, &reader);
    assert_eq!((h.burst, h.window_s, h.quota_limit, h.quota_remaining), (10, 4, 7, 7));
    // Step 3 (scope) answers before step 4 (rate limit) is reached; whether the refused
    // request spends a token is not fixed by the contract.
    assert!((9..=10).contains(&h.tokens), "{h:?}");

    // Unauthenticated answers carry none.
    let unknown = format!("Bearer {}", xray::auth::key::ApiKey::generate().expect("random").expose_secret());
    for (what, reply) in [
        ("healthz", raw(server.addr, "GET", "/healthz", &[], "")),
        ("no key", raw(server.addr, "GET", STATUS_PATH, &[], "")),
        ("unknown key", raw(server.addr, "GET", USAGE_PATH, &[("Authorization", &unknown)], "")),
    ] {
        assert!(reply.status == 200 || reply.status == 401, "{what}: {reply:?}");
        assert_no_rate_headers(&reply);
    }
}
