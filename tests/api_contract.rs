//! The public API against ../shared/api-contract.md, over real loopback HTTP with a real
//! RocksDB in a temp dir (server in-process on port 0): every endpoint's happy path, every row
//! of the error table with its status, code, body and headers, the order of checks, the scope
//! matrix, tenant isolation, dedup / freshness / refresh / wait, rate limit and quota with
//! exact usage figures, 503 on a full queue with nothing recorded, revoked and expired keys,
//! request ids, and the same smoke on the epoll driver.

mod api_support;

use std::time::{Duration, Instant};

use api_support::*;
use serde_json::{json as j, Value};
use sha2::{Digest, Sha256};
use xray::ledger::rpc_server::{spawn_spec_in_thread, FaultPlan};
use xray::limits::clock::now_unix_ms;

const SYSTEM_PROGRAM: &str = "11111111111111111111111111111111";

fn analysis_path(id: &str) -> String {
    format!("{API}/intelligence/analysis/{id}")
}

fn comparison_path(pair_id: &str) -> String {
    format!("{API}/intelligence/comparison/{pair_id}")
}

/// `pair_` + base58 of the first 16 bytes of SHA-256("xray-pair-v1" ‖ min ‖ max).
fn expected_pair_id(a: &str, b: &str) -> String {
    let (a, b) = (bs58::decode(a).into_vec().expect("a"), bs58::decode(b).into_vec().expect("b"));
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let digest = Sha256::new().chain_update(b"xray-pair-v1").chain_update(&lo).chain_update(&hi).finalize();
    format!("pair_{}", bs58::encode(&digest[..16]).into_string())
}

fn is_timestamp(value: &Value) -> bool {
    value.as_str().is_some_and(|t| t.len() == 24 && t.ends_with('Z') && t.as_bytes()[19] == b'.')
}

/// The §6 headers of an authenticated reply, checked against the key's limits.
fn assert_rate_headers(reply: &Reply, burst: u32, rate_per_second: u32, quota: u64) {
    let window_s = burst.div_ceil(rate_per_second);
    let policy = reply.header("ratelimit-policy").unwrap_or_else(|| panic!("no RateLimit-Policy: {reply:?}"));
    let expected = format!("\"rate\";q={burst};w={window_s}, \"quota\";q={quota};w=");
    assert!(policy.starts_with(&expected), "{policy} !~ {expected}");
    let value = reply.header("ratelimit").unwrap_or_else(|| panic!("no RateLimit: {reply:?}"));
    let parts: Vec<&str> = value.split(", ").collect();
    assert!(parts.len() == 2 && parts[0].starts_with("\"rate\";r=") && parts[1].starts_with("\"quota\";r="), "{value}");
}

fn assert_no_rate_headers(reply: &Reply) {
    assert!(reply.header("ratelimit").is_none() && reply.header("ratelimit-policy").is_none(), "{reply:?}");
}

/// Posts a wallet analysis and checks the 202/200 answer's shape; returns it.
fn submit(server: &TestServer, key: &str, body: &str, path: &str) -> Reply {
    let reply = post(server.addr, path, key, body);
    assert!(reply.status == 202 || reply.status == 200, "{reply:?}");
    let data = reply.data();
    let poll_url = data["pollUrl"].as_str().expect("pollUrl");
    assert_eq!(reply.body["pollUrl"].as_str(), Some(poll_url), "pollUrl beside data too");
    assert_eq!(reply.body["status"], data["status"], "status beside data too");
    assert_eq!(reply.header("location"), Some(poll_url));
    assert!(poll_url.starts_with(&format!("http://{}/v1/developer/intelligence/", server.addr)), "{poll_url}");
    assert_eq!(reply.header("retry-after"), (reply.status == 202).then_some("1"));
    assert!(is_timestamp(&data["createdAt"]), "{data}");
    reply
}

fn usage(server: &TestServer, key: &str) -> Value {
    let reply = get(server.addr, &format!("{API}/usage"), key);
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.data().clone()
}

fn quota_figures(usage: &Value) -> (u64, u64, u64, u64) {
    let q = &usage["quota"];
    let n = |v: &Value| v.as_u64().expect("integer");
    (n(&q["used"]), n(&q["reserved"]), n(&q["remaining"]), n(&usage["refunded"]))
}

#[test]
fn every_endpoint_happy_path_with_dedup_freshness_and_refresh() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();

    let health = Conn::open(server.addr).send("GET", "/healthz", None, None);
    assert_eq!((health.status, &health.body), (200, &serde_json::json!({"status": "ok"})));
    assert_no_rate_headers(&health);

    let first = submit(&server, k, &wallet_body(CLEAN), WALLET_PATH);
    assert_eq!(first.status, 202);
    let id = first.data()["analysisId"].as_str().expect("analysisId").to_owned();
    let id_bytes = bs58::decode(id.strip_prefix("an_").expect("an_ prefix")).into_vec().expect("base58");
    assert_eq!(id_bytes.len(), 16);
    assert_eq!(first.data()["wallet"], CLEAN);
    assert_eq!(first.data()["deduplicated"], false);
    assert_eq!(first.data()["pollUrl"], server.url(&analysis_path(&id)));
    assert_rate_headers(&first, 1_000, 1_000, 1_000);

    let ready = server.finish(&analysis_path(&id), k);
    let data = ready.data();
    assert_eq!((data["status"].as_str(), data["analysisId"].as_str()), (Some("READY"), Some(id.as_str())));
    assert!(is_timestamp(&data["startedAt"]) && is_timestamp(&data["completedAt"]), "{data}");
    assert_eq!(ready.header("retry-after"), None);
    let xray = &data["xray"];
    assert_eq!(xray["wallet"], CLEAN);
    assert!(xray["score"]["value"].as_u64().is_some_and(|v| v <= 100), "{xray}");
    for field in ["dimensions", "signals", "evidence", "attackPaths"] {
        assert!(xray[field].is_array(), "xray.{field}");
    }
    assert!(xray["engineVersions"]["xray"].is_string() && xray["coverage"]["ledgerSource"] == "demo", "{xray}");

    let fresh = submit(&server, k, &wallet_body(CLEAN), WALLET_PATH);
    assert_eq!((fresh.status, fresh.data()["analysisId"].as_str()), (200, Some(id.as_str())), "fresh result reused");
    assert_eq!(fresh.data()["deduplicated"], true);
    let refreshed = submit(&server, k, &format!(r#"{{"wallet":"{CLEAN}","refresh":true}}"#), WALLET_PATH);
    let refreshed_id = refreshed.data()["analysisId"].as_str().expect("id").to_owned();
    assert_ne!(refreshed_id, id, "refresh starts new work");
    assert_eq!(refreshed.data()["deduplicated"], false);
    let again = submit(&server, k, &wallet_body(CLEAN), WALLET_PATH);
    assert_eq!(again.data()["analysisId"].as_str(), Some(refreshed_id.as_str()), "the newest job answers");
    assert_eq!(again.data()["deduplicated"], true);
    server.finish(&analysis_path(&refreshed_id), k);

    let pair = submit(&server, k, &compare_body(SYBIL_A, SYBIL_B), COMPARE_PATH);
    let pair_id = pair.data()["pairId"].as_str().expect("pairId").to_owned();
    assert_eq!(pair_id, expected_pair_id(SYBIL_A, SYBIL_B));
    assert_eq!((pair.data()["walletA"].as_str(), pair.data()["walletB"].as_str()), (Some(SYBIL_A), Some(SYBIL_B)));
    assert_eq!(pair.data()["pollUrl"], server.url(&comparison_path(&pair_id)));
    let reversed = submit(&server, k, &compare_body(SYBIL_B, SYBIL_A), COMPARE_PATH);
    assert_eq!(
        (reversed.data()["pairId"].as_str(), &reversed.data()["deduplicated"]),
        (Some(pair_id.as_str()), &Value::Bool(true))
    );
    let compared = server.finish(&comparison_path(&pair_id), k);
    let comparison = &compared.data()["comparison"];
    assert_eq!(compared.data()["status"], "READY");
    assert_eq!(comparison["relationship"], "likely_same_owner", "{comparison}");
    assert_eq!(comparison["walletA"]["address"], SYBIL_A);

    let failed = submit(&server, k, &wallet_body(DRAINER_PROGRAM), WALLET_PATH);
    let failed = server.finish(&path_of(failed.data()["pollUrl"].as_str().expect("url")), k);
    assert_eq!(failed.data()["status"], "FAILED");
    assert_eq!(failed.data()["error"]["code"], "ACCOUNT_NOT_ELIGIBLE");
    assert!(failed.data().get("xray").is_none());

    let status = get(server.addr, &format!("{API}/status"), k);
    let s = status.data();
    assert_eq!((s["key"]["id"].as_str(), s["key"]["status"].as_str()), (Some(key.id.as_str()), Some("active")));
    assert_eq!(s["key"]["prefix"].as_str(), Some(&key.secret[..13]));
    assert_eq!(s["key"]["expiresAt"], Value::Null);
    let scopes: Vec<(&str, bool)> = s["scopes"]
        .as_array()
        .expect("scopes")
        .iter()
        .map(|g| (g["scope"].as_str().expect("scope"), g["granted"].as_bool().expect("granted")))
        .collect();
    assert_eq!(
        scopes,
        [("wallet:analyze", true), ("wallet:compare", true), ("analysis:read", true), ("usage:read", true)]
    );
    assert_eq!(s["scopes"][2]["endpoints"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        (s["rateLimit"]["ratePerSecond"].as_u64(), s["rateLimit"]["burst"].as_u64()),
        (Some(1_000), Some(1_000))
    );
    assert_eq!((s["quota"]["limit"].as_u64(), s["quota"]["used"].as_u64()), (Some(1_000), Some(3)));
    assert_eq!((s["quota"]["period"].as_str(), s["service"]["status"].as_str()), (Some("month"), Some("ok")));
    assert!(s["service"]["engineVersions"]["xray"].is_string() && is_timestamp(&s["quota"]["resetsAt"]), "{s}");

    // Charged: the first analysis, the refresh and the comparison; the FAILED one refunded.
    let u = usage(&server, k);
    assert_eq!(quota_figures(&u), (3, 0, 997, 1), "{u}");
    assert_eq!(
        (u["byOperation"]["walletAnalysis"].as_u64(), u["byOperation"]["comparison"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!((u["keyId"].as_str(), u["period"]["kind"].as_str()), (Some(key.id.as_str()), Some("month")));
    assert!(is_timestamp(&u["period"]["start"]) && is_timestamp(&u["period"]["end"]), "{u}");
    assert_eq!(u["rateLimit"]["limitedRequests"].as_u64(), Some(0));
}

/// One row of the error table: the request, then what the reply must carry.
struct Row {
    name: &'static str,
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    body: String,
    status: u16,
    code: &'static str,
    details: Value,
}

fn row(
    name: &'static str,
    method: &'static str,
    path: &str,
    body: &str,
    status: u16,
    code: &'static str,
    details: Value,
) -> Row {
    let content_type = (method == "POST").then_some("application/json");
    Row { name, method, path: path.to_owned(), content_type, body: body.to_owned(), status, code, details }
}

#[test]
fn every_row_of_the_error_table() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let reader = server.key(KeyOptions { scopes: "usage:read", ..KeyOptions::default() });

    let w = WALLET_PATH;
    let mut rows = vec![
        row("malformed JSON", "POST", w, "{not json", 400, "INVALID_REQUEST", j!({"field": "body"})),
        row("not an object", "POST", w, "[1]", 400, "INVALID_REQUEST", j!({"field": "body"})),
        row("missing field", "POST", w, "{}", 400, "INVALID_REQUEST", j!({"field": "wallet"})),
        row("mistyped field", "POST", w, r#"{"wallet":5}"#, 400, "INVALID_REQUEST", j!({"field": "wallet"})),
        row(
            "mistyped refresh",
            "POST",
            w,
            &format!(r#"{{"wallet":"{CLEAN}","refresh":"y"}}"#),
            400,
            "INVALID_REQUEST",
            j!({"field": "refresh"}),
        ),
        row(
            "equal compare",
            "POST",
            COMPARE_PATH,
            &compare_body(CLEAN, CLEAN),
            400,
            "INVALID_REQUEST",
            j!({"field": "walletB"}),
        ),
        row(
            "missing walletB",
            "POST",
            COMPARE_PATH,
            &format!(r#"{{"walletA":"{CLEAN}"}}"#),
            400,
            "INVALID_REQUEST",
            j!({"field": "walletB"}),
        ),
        row(
            "wait out of range",
            "GET",
            &format!("{}?wait=31", analysis_path("an_1")),
            "",
            400,
            "INVALID_REQUEST",
            j!({"field": "wait"}),
        ),
        row(
            "wait not a number",
            "GET",
            &format!("{}?wait=-1", analysis_path("an_1")),
            "",
            400,
            "INVALID_REQUEST",
            j!({"field": "wait"}),
        ),
        row(
            "not base58",
            "POST",
            w,
            r#"{"wallet":"0OIl0OIl"}"#,
            400,
            "INVALID_ADDRESS",
            j!({"field": "wallet", "reason": "not_base58"}),
        ),
        row(
            "wrong length",
            "POST",
            w,
            r#"{"wallet":"abc"}"#,
            400,
            "INVALID_ADDRESS",
            j!({"field": "wallet", "reason": "wrong_length"}),
        ),
        row(
            "compare walletB",
            "POST",
            COMPARE_PATH,
            &compare_body(CLEAN, "abc"),
            400,
            "INVALID_ADDRESS",
            j!({"field": "walletB", "reason": "wrong_length"}),
        ),
        row(
            "unknown analysis",
            "GET",
            &analysis_path("an_4vJ9JU1bJJE96FWSJKvHsmmF"),
            "",
            404,
            "NOT_FOUND",
            Value::Null,
        ),
        row("malformed analysis id", "GET", &analysis_path("nope"), "", 404, "NOT_FOUND", Value::Null),
        row(
            "unknown pair",
            "GET",
            &comparison_path("pair_4vJ9JU1bJJE96FWSJKvHsmmF"),
            "",
            404,
            "NOT_FOUND",
            Value::Null,
        ),
        row("unknown route", "GET", "/v1/developer/nope", "", 404, "NOT_FOUND", Value::Null),
        row("wrong method", "DELETE", w, "", 405, "METHOD_NOT_ALLOWED", j!({"allow": ["POST"]})),
        row(
            "too large",
            "POST",
            w,
            &format!(r#"{{"wallet":"{}"}}"#, "1".repeat(5_000)),
            413,
            "PAYLOAD_TOO_LARGE",
            j!({"maxBytes": 4096}),
        ),
        row(
            "token mint",
            "POST",
            w,
            &wallet_body(TOKEN_MINT),
            422,
            "ACCOUNT_NOT_ELIGIBLE",
            j!({"field": "wallet", "reason": "token_mint"}),
        ),
        row(
            "program id",
            "POST",
            w,
            &wallet_body(SYSTEM_PROGRAM),
            422,
            "ACCOUNT_NOT_ELIGIBLE",
            j!({"field": "wallet", "reason": "program"}),
        ),
        row(
            "off curve",
            "POST",
            w,
            &wallet_body(TOKEN_ACCOUNT),
            422,
            "ACCOUNT_NOT_ELIGIBLE",
            j!({"field": "wallet", "reason": "off_curve"}),
        ),
        row(
            "compare ineligible",
            "POST",
            COMPARE_PATH,
            &compare_body(CLEAN, TOKEN_MINT),
            422,
            "ACCOUNT_NOT_ELIGIBLE",
            j!({"field": "walletB", "reason": "token_mint"}),
        ),
    ];
    let mut wrong_type =
        row("not JSON media type", "POST", w, &wallet_body(CLEAN), 415, "UNSUPPORTED_MEDIA_TYPE", Value::Null);
    wrong_type.content_type = Some("text/plain");
    rows.push(wrong_type);
    let mut json_with_charset = row(
        "JSON with parameters",
        "POST",
        w,
        r#"{"wallet":"abc"}"#,
        400,
        "INVALID_ADDRESS",
        j!({"reason": "wrong_length"}),
    );
    json_with_charset.content_type = Some("application/json; charset=utf-8");
    rows.push(json_with_charset);

    for r in &rows {
        let auth = format!("Bearer {}", key.secret);
        let mut headers = vec![("Authorization", auth.as_str())];
        headers.extend(r.content_type.map(|t| ("Content-Type", t)));
        let reply = Conn::open(server.addr).request(r.method, &r.path, &headers, r.body.as_bytes());
        assert_error(&reply, r.status, r.code);
        if let Value::Object(details) = &r.details {
            for (name, value) in details {
                assert_eq!(&reply.error()["details"][name], value, "{}: details.{name} in {reply:?}", r.name);
            }
        }
        // Only a route failure answers before authentication (and so without rate headers).
        if !matches!(r.name, "unknown route" | "wrong method") {
            assert_rate_headers(&reply, 1_000, 1_000, 1_000);
        }
        if r.status == 405 {
            assert_eq!(reply.header("allow"), Some("POST"), "{}", r.name);
        }
    }

    let scope = post(server.addr, WALLET_PATH, &reader.secret, &wallet_body(CLEAN));
    assert_error(&scope, 403, "INSUFFICIENT_SCOPE");
    assert_eq!(scope.error()["details"]["requiredScope"], "wallet:analyze");
    assert_rate_headers(&scope, 1_000, 1_000, 1_000);

    let unknown_key = xray::auth::key::ApiKey::generate().expect("random");
    for (auth, reason) in [
        (None, "missing"),
        (Some("Bearer nope".to_owned()), "malformed"),
        (Some("Basic abc".to_owned()), "malformed"),
        (Some(format!("Bearer {}", unknown_key.expose_secret())), "unknown"),
    ] {
        let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
        let reply = Conn::open(server.addr).request("GET", &format!("{API}/status"), &headers, b"");
        assert_error(&reply, 401, "UNAUTHENTICATED");
        assert_eq!(reply.error()["details"]["reason"], reason, "{reply:?}");
        assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
        assert_no_rate_headers(&reply);
    }
    assert_eq!(quota_figures(&usage(&server, &key.secret)), (0, 0, 1_000, 0), "no rejected request is charged");
}

#[test]
fn checks_run_in_the_contract_order() {
    let server = serve(|_| {});
    let all = server.key(KeyOptions::default());
    let reader = server.key(KeyOptions { scopes: "usage:read", ..KeyOptions::default() });
    let single = server.key(KeyOptions { burst: 1, rate_per_second: 1, ..KeyOptions::default() });
    let bad_body = Some("{oops");
    // Route before authentication; authentication before the body; scope before the body.
    assert_error(&Conn::open(server.addr).send("DELETE", WALLET_PATH, None, None), 405, "METHOD_NOT_ALLOWED");
    assert_error(&Conn::open(server.addr).send("POST", WALLET_PATH, None, bad_body), 401, "UNAUTHENTICATED");
    assert_error(
        &Conn::open(server.addr).send("POST", WALLET_PATH, Some(&reader.secret), bad_body),
        403,
        "INSUFFICIENT_SCOPE",
    );
    // The rate limit before the body.
    assert_eq!(get(server.addr, &format!("{API}/status"), &single.secret).status, 200);
    assert_error(
        &Conn::open(server.addr).send("POST", WALLET_PATH, Some(&single.secret), bad_body),
        429,
        "RATE_LIMITED",
    );
    // The media type before the document; the document before the address; the address
    // before eligibility.
    let headers = [("Authorization", format!("Bearer {}", all.secret)), ("Content-Type", "text/plain".to_owned())];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert_error(
        &Conn::open(server.addr).request("POST", WALLET_PATH, &headers, b"{oops"),
        415,
        "UNSUPPORTED_MEDIA_TYPE",
    );
    let both = compare_body("abc", TOKEN_MINT);
    let reply = post(server.addr, COMPARE_PATH, &all.secret, &both);
    assert_error(&reply, 400, "INVALID_ADDRESS");
    assert_eq!(reply.error()["details"]["field"], "walletA");
}

#[test]
fn scope_matrix() {
    let server = serve(|_| {});
    // (method, path, body, the scope it needs); None: any active key.
    let endpoints: [(&str, String, Option<String>, Option<&str>); 6] = [
        ("POST", WALLET_PATH.to_owned(), Some(wallet_body(CLEAN)), Some("wallet:analyze")),
        ("POST", COMPARE_PATH.to_owned(), Some(compare_body(SYBIL_A, SYBIL_B)), Some("wallet:compare")),
        ("GET", analysis_path("an_4vJ9JU1bJJE96FWSJKvHsmmF"), None, Some("analysis:read")),
        ("GET", comparison_path("pair_4vJ9JU1bJJE96FWSJKvHsmmF"), None, Some("analysis:read")),
        ("GET", format!("{API}/usage"), None, Some("usage:read")),
        ("GET", format!("{API}/status"), None, None),
    ];
    let scope_sets = [
        "wallet:analyze",
        "wallet:compare",
        "analysis:read",
        "usage:read",
        "wallet:analyze,analysis:read",
        "wallet:analyze,wallet:compare,analysis:read,usage:read",
    ];
    for scopes in scope_sets {
        let key = server.key(KeyOptions { scopes, ..KeyOptions::default() });
        for (method, path, body, needs) in &endpoints {
            let reply = Conn::open(server.addr).send(method, path, Some(&key.secret), body.as_deref());
            let granted = needs.is_none_or(|scope| scopes.split(',').any(|s| s == scope));
            if granted {
                assert_ne!(reply.status, 403, "{scopes} → {method} {path}: {reply:?}");
                assert!(matches!(reply.status, 200 | 202 | 404), "{scopes} → {method} {path}: {reply:?}");
            } else {
                assert_error(&reply, 403, "INSUFFICIENT_SCOPE");
                assert_eq!(reply.error()["details"]["requiredScope"].as_str(), *needs, "{scopes} → {path}");
            }
        }
    }
}

#[test]
fn another_accounts_jobs_are_not_found() {
    let server = serve(|_| {});
    let owner = server.key(KeyOptions::default());
    let colleague = server.key(KeyOptions {
        scopes: "analysis:read",
        account: Some(owner.account.clone()),
        ..KeyOptions::default()
    });
    let stranger = server.key(KeyOptions::default());
    let analysis = submit(&server, &owner.secret, &wallet_body(OPEN_DELEGATION), WALLET_PATH);
    let pair = submit(&server, &owner.secret, &compare_body(SYBIL_A, SYBIL_B), COMPARE_PATH);
    for reply in [analysis, pair] {
        let path = path_of(reply.data()["pollUrl"].as_str().expect("url"));
        server.finish(&path, &owner.secret);
        assert_eq!(get(server.addr, &path, &colleague.secret).data()["status"], "READY", "same account reads it");
        let theirs = get(server.addr, &path, &stranger.secret);
        let unknown = get(server.addr, &format!("{path}x"), &stranger.secret);
        assert_error(&theirs, 404, "NOT_FOUND");
        assert_eq!(theirs.error()["message"], unknown.error()["message"], "indistinguishable from unknown");
    }
    let own = submit(&server, &stranger.secret, &wallet_body(OPEN_DELEGATION), WALLET_PATH);
    assert_eq!((own.status, &own.data()["deduplicated"]), (202, &Value::Bool(false)), "no dedup across accounts");
}

#[test]
fn rate_limit_and_quota_exhaustion_with_exact_usage() {
    let server = serve(|_| {});
    let slow = server.key(KeyOptions { burst: 3, rate_per_second: 1, ..KeyOptions::default() });
    let status = format!("{API}/status");
    let remaining: Vec<String> = (0..3)
        .map(|_| get(server.addr, &status, &slow.secret).header("ratelimit").expect("header").to_owned())
        .collect();
    assert!(remaining[2].starts_with("\"rate\";r=0;"), "{remaining:?}");
    let limited = get(server.addr, &status, &slow.secret);
    assert_error(&limited, 429, "RATE_LIMITED");
    let retry_after: u64 = limited.header("retry-after").expect("Retry-After").parse().expect("seconds");
    assert!(retry_after >= 1);
    assert_eq!(limited.error()["details"]["retryAfterSeconds"].as_u64(), Some(retry_after));
    assert_rate_headers(&limited, 3, 1, 1_000);
    std::thread::sleep(Duration::from_millis(1_100));
    let u = get(server.addr, &format!("{API}/usage"), &slow.secret);
    assert_eq!(u.data()["rateLimit"]["limitedRequests"].as_u64(), Some(1), "{u:?}");

    let metered = server.key(KeyOptions { quota: 2, ..KeyOptions::default() });
    let m = metered.secret.as_str();
    let first = submit(&server, m, &wallet_body(CLEAN), WALLET_PATH);
    submit(&server, m, &wallet_body(OPEN_DELEGATION), WALLET_PATH);
    assert_eq!(submit(&server, m, &wallet_body(CLEAN), WALLET_PATH).data()["deduplicated"], true, "dedup is free");
    assert_error(&post(server.addr, WALLET_PATH, m, &wallet_body(TOKEN_MINT)), 422, "ACCOUNT_NOT_ELIGIBLE");
    let exhausted = post(server.addr, WALLET_PATH, m, &wallet_body(SYBIL_A));
    assert_error(&exhausted, 429, "QUOTA_EXHAUSTED");
    let details = &exhausted.error()["details"];
    let (used, reserved, remaining, _) = quota_figures(&usage(&server, m));
    assert_eq!((used + reserved, remaining), (2, 0), "two admitted, nothing else charged");
    assert_eq!((details["limit"].as_u64(), details["used"].as_u64()), (Some(2), Some(used)), "{details}");
    assert!(is_timestamp(&details["resetsAt"]));
    let retry_after: i64 = exhausted.header("retry-after").expect("Retry-After").parse().expect("seconds");
    let resets_at_ms =
        xray::limits::quota::parse_rfc3339_ms(details["resetsAt"].as_str().expect("text")).expect("time");
    assert!((retry_after - (resets_at_ms - now_unix_ms()) / 1_000).abs() <= 2, "Retry-After {retry_after} vs resetsAt");
    server.finish(&path_of(first.data()["pollUrl"].as_str().expect("url")), m);
    let deadline = Instant::now() + Duration::from_secs(60);
    while quota_figures(&usage(&server, m)).1 > 0 {
        assert!(Instant::now() < deadline, "reservations never settled");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(quota_figures(&usage(&server, m)), (2, 0, 0, 0));

    // A FAILED job gives its unit back: the next request fits in a quota of one.
    let one = server.key(KeyOptions { quota: 1, ..KeyOptions::default() });
    let failed = submit(&server, &one.secret, &wallet_body(DRAINER_PROGRAM), WALLET_PATH);
    server.finish(&path_of(failed.data()["pollUrl"].as_str().expect("url")), &one.secret);
    assert_eq!(quota_figures(&usage(&server, &one.secret)), (0, 0, 1, 1));
    assert_eq!(submit(&server, &one.secret, &wallet_body(CLEAN), WALLET_PATH).status, 202);
}

#[test]
fn slow_ledger_full_queue_is_busy_and_long_polls_wait() {
    let rpc =
        spawn_spec_in_thread("demo".parse().expect("spec"), FaultPlan { latency_ms: 700, ..FaultPlan::default() })
            .expect("JSON-RPC server");
    let ledger = format!("rpc:{}", rpc.url());
    let server = serve(|c| {
        c.ledger = ledger;
        c.queue_capacity = 1;
        c.jobs_in_flight_per_thread = 1;
    });
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let mut admitted = Vec::new();
    let busy = READY_WALLETS
        .iter()
        .find_map(|wallet| {
            let reply = post(server.addr, WALLET_PATH, k, &wallet_body(wallet));
            if reply.status == 503 {
                return Some((*wallet, reply));
            }
            assert_eq!(reply.status, 202, "{reply:?}");
            admitted.push(path_of(reply.data()["pollUrl"].as_str().expect("url")));
            None
        })
        .expect("a queue of one fills up");
    let (busy_wallet, reply) = busy;
    assert_error(&reply, 503, "SERVICE_BUSY");
    assert_eq!(
        (reply.header("retry-after"), reply.error()["details"]["retryAfterSeconds"].as_u64()),
        (Some("1"), Some(1))
    );
    let (used, reserved, _, _) = quota_figures(&usage(&server, k));
    assert_eq!(used + reserved, admitted.len() as u64, "the 503 was not charged");

    // Unfinished work polls as 200 with Retry-After; `wait` holds until it is READY.
    let pending = get(server.addr, admitted.last().expect("admitted"), k);
    assert!(matches!(pending.data()["status"].as_str(), Some("QUEUED" | "RUNNING")), "{pending:?}");
    assert_eq!((pending.status, pending.header("retry-after")), (200, Some("1")));
    for path in &admitted {
        let started = Instant::now();
        let reply = get(server.addr, &format!("{path}?wait=30"), k);
        assert_eq!(reply.data()["status"], "READY", "{reply:?}");
        assert!(started.elapsed() < Duration::from_secs(30));
    }
    let retried = submit(&server, k, &wallet_body(busy_wallet), WALLET_PATH);
    assert_eq!(retried.data()["deduplicated"], false, "the refused request left no job behind");
    drop(server);
    rpc.stop().expect("JSON-RPC server stops");
}

#[test]
fn revoked_and_expired_keys_are_refused_at_once() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let expiring = server.key(KeyOptions { expires_at_ms: Some(now_unix_ms() + 1_000), ..KeyOptions::default() });
    let status = format!("{API}/status");
    let mut conns: Vec<Conn> = (0..6).map(|_| Conn::open(server.addr)).collect();
    for conn in &mut conns {
        assert_eq!(conn.send("GET", &status, Some(&key.secret), None).status, 200);
    }
    server.key_admin().revoke(&key.id, now_unix_ms()).expect("revoked");
    for conn in &mut conns {
        let reply = conn.send("GET", &status, Some(&key.secret), None);
        assert_error(&reply, 401, "UNAUTHENTICATED");
        assert_eq!(reply.error()["details"]["reason"], "revoked");
    }
    assert_eq!(get(server.addr, &status, &expiring.secret).status, 200);
    std::thread::sleep(Duration::from_millis(1_100));
    let expired = get(server.addr, &status, &expiring.secret);
    assert_error(&expired, 401, "UNAUTHENTICATED");
    assert_eq!(expired.error()["details"]["reason"], "expired");
}

#[test]
fn request_ids_are_echoed_when_valid_and_replaced_otherwise() {
    let server = serve(|_| {});
    for (sent, echoed) in
        [("abc-123_X.y", true), (&*"a".repeat(64), true), (&*"a".repeat(65), false), ("bad id", false)]
    {
        let reply = Conn::open(server.addr).request("GET", "/v1/developer/status", &[("X-Request-Id", sent)], b"");
        let id = reply.header("x-request-id").expect("X-Request-Id");
        assert_eq!(id == sent, echoed, "{sent:?} → {id:?}");
        assert!(!id.is_empty() && id.len() <= 64);
        assert_eq!(reply.error()["requestId"].as_str(), Some(id));
    }
}

#[test]
fn epoll_driver_serves_the_api() {
    let server = serve(|c| c.io_driver = "epoll".into());
    assert!(
        server.running().api.drivers().iter().all(|d| d.as_str() == "epoll"),
        "{:?}",
        server.running().api.drivers()
    );
    let key = server.key(KeyOptions::default());
    let accepted = submit(&server, &key.secret, &wallet_body(OPEN_DELEGATION), WALLET_PATH);
    let ready = server.finish(&path_of(accepted.data()["pollUrl"].as_str().expect("url")), &key.secret);
    assert_eq!(ready.data()["status"], "READY");
    assert_error(&post(server.addr, WALLET_PATH, &key.secret, "{"), 400, "INVALID_REQUEST");
    assert_eq!(get(server.addr, &format!("{API}/status"), &key.secret).status, 200);
}
