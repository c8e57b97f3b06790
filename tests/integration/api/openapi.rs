//! `docs/openapi.json` against the code: the document lists exactly the public routes and
//! error codes, and real payloads of every demo archetype (X-Rays, comparisons), of every demo
//! transaction scanned (`xray ledger demo-tx`) and of the running server (accepted, polls,
//! status, usage, monitors and their events' pages, refusals) validate against its schemas — so
//! the published description cannot drift from what the server sends.
//!
//! The validator is a small subset of JSON Schema, enough for this document: `$ref`, `oneOf`,
//! `type` (one or a list), `const`, `required`, `properties`, `additionalProperties`, `items`,
//! `minimum`/`maximum`, `pattern`, `minLength`/`maxLength`. An object with `properties` and no `additionalProperties` is closed:
//! a field the code sends and the document does not name fails.
//! `admin_openapi.rs` checks `docs/admin-openapi.json` with the same validator (`pub(crate)`
//! items).

use std::collections::BTreeSet;

use super::support::*;
use serde_json::Value;
use xray::engine::{self, compare};
use xray::jobs::execute::add_funder_hop;
use xray::labels::Labels;
use xray::ledger::demo::DemoLedger;
use xray::ledger::view::{build_view, ViewOptions};
use xray::pubkey::Pubkey;

fn document() -> Value {
    load_document("docs/openapi.json")
}

/// A JSON document of the repository (`path` relative to its root).
pub(crate) fn load_document(path: &str) -> Value {
    let full = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&full).expect(path)).expect("valid JSON")
}

pub(crate) fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["components"]["schemas"].get(name).unwrap_or_else(|| panic!("no schema {name}"))
}

/// Follows `$ref`s to the schema they name.
fn resolve<'a>(doc: &'a Value, mut s: &'a Value) -> &'a Value {
    while let Some(reference) = s.get("$ref").and_then(Value::as_str) {
        let name = reference.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("ref {reference}"));
        s = schema(doc, name);
    }
    s
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every way `value` breaks `schema`, with its path.
pub(crate) fn violations(doc: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let s = resolve(doc, schema);
    if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
        let passing = branches.iter().filter(|b| violations(doc, b, value, at).is_empty()).count();
        return if passing == 1 { Vec::new() } else { vec![format!("{at}: {passing} oneOf branches match {value}")] };
    }
    let mut out = Vec::new();
    for branch in s.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        out.extend(violations(doc, branch, value, at));
    }
    if let Some(t) = s.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let actual = type_name(value);
        if !allowed.iter().any(|a| *a == actual || (*a == "number" && actual == "integer")) {
            return vec![format!("{at}: {actual} where {allowed:?} is expected: {value}")];
        }
    }
    if let Some(c) = s.get("const") {
        if c != value {
            out.push(format!("{at}: {value} is not {c}"));
        }
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array) {
        if !allowed.contains(value) {
            out.push(format!("{at}: {value} is none of {allowed:?}"));
        }
    }
    if let (Some(n), Some(min)) = (value.as_f64(), s.get("minimum").and_then(Value::as_f64)) {
        if n < min {
            out.push(format!("{at}: {n} < {min}"));
        }
    }
    if let (Some(n), Some(max)) = (value.as_f64(), s.get("maximum").and_then(Value::as_f64)) {
        if n > max {
            out.push(format!("{at}: {n} > {max}"));
        }
    }
    if let Value::String(text) = value {
        out.extend(string_violations(s, text, at));
    }
    if let Value::Object(fields) = value {
        for name in s.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                out.push(format!("{at}: required {name} is missing"));
            }
        }
        let properties = s.get("properties").and_then(Value::as_object);
        let extra = s.get("additionalProperties");
        for (name, v) in fields {
            let path = format!("{at}.{name}");
            match (properties.and_then(|p| p.get(name)), extra) {
                (Some(p), _) => out.extend(violations(doc, p, v, &path)),
                (None, Some(Value::Bool(true))) => {}
                (None, Some(e @ Value::Object(_))) => out.extend(violations(doc, e, v, &path)),
                (None, _) if properties.is_some() => out.push(format!("{path}: not in the document")),
                (None, _) => {}
            }
        }
    }
    if let (Value::Array(items), Some(item)) = (value, s.get("items")) {
        for (i, v) in items.iter().enumerate() {
            out.extend(violations(doc, item, v, &format!("{at}[{i}]")));
        }
    }
    out
}

/// `pattern` (an ECMA-262 regular expression; the document's are also Rust `regex` syntax),
/// `minLength` and `maxLength` (in characters) of one string.
fn string_violations(s: &Value, text: &str, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str) {
        let re = regex_lite::Regex::new(pattern).unwrap_or_else(|e| panic!("{at}: pattern {pattern}: {e}"));
        if !re.is_match(text) {
            out.push(format!("{at}: {text:?} does not match {pattern}"));
        }
    }
    let chars = text.chars().count() as u64;
    if s.get("minLength").and_then(Value::as_u64).is_some_and(|min| chars < min) {
        out.push(format!("{at}: {text:?} is shorter than minLength"));
    }
    if s.get("maxLength").and_then(Value::as_u64).is_some_and(|max| chars > max) {
        out.push(format!("{at}: {text:?} is longer than maxLength"));
    }
    out
}

fn assert_valid(doc: &Value, schema_name: &str, value: &Value) {
    let found = violations(doc, schema(doc, schema_name), value, schema_name);
    assert!(found.is_empty(), "{} violation(s):\n{}", found.len(), found.join("\n"));
}

/// The `status` answer of `method path`, following a `$ref` to a shared response
/// (`#/components/responses/…`).
pub(crate) fn response<'a>(doc: &'a Value, method: &str, path: &str, status: u16) -> &'a Value {
    let operation = &doc["paths"][path][method];
    let mut response = &operation["responses"][status.to_string()];
    if let Some(reference) = response.get("$ref").and_then(Value::as_str) {
        let name = reference.strip_prefix("#/components/responses/").unwrap_or_else(|| panic!("ref {reference}"));
        response = &doc["components"]["responses"][name];
    }
    response
}

/// The JSON schema of the `status` answer of `method path`.
fn response_schema<'a>(doc: &'a Value, method: &str, path: &str, status: u16) -> &'a Value {
    let schema = &response(doc, method, path, status)["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "{method} {path} documents no JSON answer for {status}");
    schema
}

/// `reply` validates against the schema its own status has for `method path`.
fn assert_answer(doc: &Value, method: &str, path: &str, reply: &Reply) {
    let at = format!("{method} {path} {}", reply.status);
    let found = violations(doc, response_schema(doc, method, path, reply.status), &reply.body, &at);
    assert!(found.is_empty(), "{} violation(s):\n{}\n{reply:?}", found.len(), found.join("\n"));
}

/// Every operation of the document, as `METHOD path`.
pub(crate) fn operations(doc: &Value) -> BTreeSet<String> {
    doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, item)| {
            let item = item.as_object().expect("path item");
            item.keys().filter(|k| *k != "parameters").map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .collect()
}

#[test]
fn the_document_names_every_route_and_error_code() {
    let doc = document();
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", doc["openapi"]);
    // Every `METHOD path` of the router, path parameters in OpenAPI's spelling, and nothing else.
    let operations = operations(&doc);
    let routes: BTreeSet<String> = xray::api::Route::PATHS
        .iter()
        .map(|r| r.replace(":id", "{id}").replace(":pairId", "{pairId}").replace(":eventId", "{eventId}"))
        .collect();
    assert_eq!(operations, routes);
    let codes: BTreeSet<&str> = schema(&doc, "ErrorObject")["properties"]["code"]["x-extensible-enum"]
        .as_array()
        .expect("codes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let contract = BTreeSet::from([
        "INVALID_REQUEST",
        "INVALID_ADDRESS",
        "UNAUTHENTICATED",
        "INSUFFICIENT_SCOPE",
        "NOT_FOUND",
        "METHOD_NOT_ALLOWED",
        "PAYLOAD_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "ACCOUNT_NOT_ELIGIBLE",
        "RATE_LIMITED",
        "QUOTA_EXHAUSTED",
        "SERVICE_BUSY",
        "INTERNAL",
        // Extensions of the contract's codes (issues #13, #15).
        "TOO_MANY_JOBS",
        "IDEMPOTENCY_KEY_REUSED",
        "IDEMPOTENCY_KEY_IN_PROGRESS",
        // The transaction scan's (issue #29).
        "INVALID_TRANSACTION",
        // The monitors' (issue #30).
        "CONFLICT",
        // Feedback on a scan (issue #42).
        "REPORT_NOT_VERIFIED",
    ]);
    assert_eq!(codes, contract);
}

#[test]
fn every_demo_xray_and_comparison_matches_the_document() {
    let doc = document();
    let demo = DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let labels = Labels::builtin();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    // As a job reads it: with the first funder's hop (the builtin labels list a sanctioned
    // address), so `coverage.funderHop` is validated too.
    let view = |address: &Pubkey| {
        runtime.block_on(async {
            let mut v = build_view(&demo, address, ViewOptions::default()).await.expect("view");
            add_funder_hop(&demo, &mut v, &labels).await;
            v
        })
    };
    let mut checked = 0;
    for arch in demo.archetype_list() {
        let address = Pubkey::parse(&arch.address).expect("address");
        let v = view(&address);
        if xray::eligibility::classify_local(&address, &labels).is_err()
            || xray::eligibility::classify_ledger(&v).is_err()
        {
            continue;
        }
        assert_valid(&doc, "XRay", &serde_json::to_value(engine::analyze(&v, &labels)).expect("json"));
        checked += 1;
    }
    assert!(checked >= 10, "{checked}");
    let pair = |a: &str, b: &str| {
        let (va, vb) = (view(&demo.archetype(a).expect(a)), view(&demo.archetype(b).expect(b)));
        let (xa, xb) = (engine::analyze(&va, &labels), engine::analyze(&vb, &labels));
        let side_a = compare::Side { view: &va, score: &xa.score, analysis_id: Some("an_1111".into()) };
        let side_b = compare::Side { view: &vb, score: &xb.score, analysis_id: None };
        serde_json::to_value(compare::compare(side_a, side_b, &labels)).expect("json")
    };
    for (a, b) in [("sybil_a", "sybil_b"), ("sybil_c", "sybil_d"), ("clean", "busy_trader")] {
        assert_valid(&doc, "Comparison", &pair(a, b));
    }
}

#[test]
fn the_servers_answers_match_the_document() {
    let doc = document();
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    assert_valid(&doc, "AcceptedAnalysis", &accepted.body);
    assert_valid(&doc, "AnalysisPoll", &get(server.addr, &accepted.poll_path(), k).body);
    assert_valid(&doc, "AnalysisPoll", &server.finish(&accepted.poll_path(), k).body);
    let pair = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_A, SYBIL_B));
    assert_valid(&doc, "AcceptedComparison", &pair.body);
    assert_valid(&doc, "ComparisonPoll", &server.finish(&pair.poll_path(), k).body);
    let hooked =
        serde_json::json!({ "wallet": OPEN_DELEGATION, "refresh": true, "callbackUrl": "https://hooks.example.com/x" });
    let hooked = submit(&server, k, WALLET_PATH, &hooked.to_string());
    assert_eq!(hooked.data()["callback"]["attached"], true, "{hooked:?}");
    assert_valid(&doc, "AcceptedAnalysis", &hooked.body);
    let hooked = server.finish(&hooked.poll_path(), k);
    assert_eq!(hooked.data()["callback"]["url"], "https://hooks.example.com/x", "{hooked:?}");
    // The same wallet with another callbackUrl reuses that result, whose webhook stays.
    let other = serde_json::json!({ "wallet": OPEN_DELEGATION, "callbackUrl": "https://hooks.example.com/y" });
    let other = submit(&server, k, WALLET_PATH, &other.to_string());
    assert_eq!(other.data()["callback"]["reason"], "job_has_other_callback", "{other:?}");
    assert_valid(&doc, "AcceptedAnalysis", &other.body);
    let pair_hooked =
        serde_json::json!({ "walletA": SYBIL_A, "walletB": SYBIL_B, "callbackUrl": "https://hooks.example.com/p" });
    let pair_hooked = submit(&server, k, COMPARE_PATH, &pair_hooked.to_string());
    assert_eq!(pair_hooked.data()["callback"]["attached"], true, "attached to the reused comparison: {pair_hooked:?}");
    assert_valid(&doc, "AcceptedComparison", &pair_hooked.body);
    assert!(hooked.data()["xray"]["changes"].is_object(), "a second analysis says what changed: {hooked:?}");
    assert_valid(&doc, "AnalysisPoll", &hooked.body);
    let failed = submit(&server, k, WALLET_PATH, &wallet_body(DRAINER_PROGRAM));
    assert_valid(&doc, "AnalysisPoll", &server.finish(&failed.poll_path(), k).body);
    let batch = [OPEN_DELEGATION, "nope", TOKEN_MINT, OPEN_DELEGATION];
    let batch = post(
        server.addr,
        "/v1/developer/intelligence/wallets",
        k,
        &serde_json::json!({ "wallets": batch, "callbackUrl": "https://hooks.example.com/b" }).to_string(),
    );
    assert_eq!(batch.data()["refused"], 2, "{batch:?}");
    assert_eq!(batch.data()["items"][0]["callback"]["attached"], false, "{batch:?}");
    assert_valid(&doc, "BatchAccepted", &batch.body);
    assert_valid(&doc, "Status", &get(server.addr, STATUS_PATH, k).body);
    assert_valid(&doc, "Usage", &get(server.addr, USAGE_PATH, k).body);
    // The account's policy: the default one, then one written, and a stale write's refusal.
    assert_documented(&doc, "get", "/v1/developer/policy", &call(&server, "GET", "/v1/developer/policy", k, None), 200);
    let policy = serde_json::json!({"version": 0, "severityOverrides": {"new_wallet": "ignore"}, "denyList": [CLEAN]});
    let written = call(&server, "PUT", "/v1/developer/policy", k, Some(&policy));
    assert_documented(&doc, "put", "/v1/developer/policy", &written, 200);
    assert_documented(&doc, "get", "/v1/developer/policy", &call(&server, "GET", "/v1/developer/policy", k, None), 200);
    assert_documented(
        &doc,
        "put",
        "/v1/developer/policy",
        &call(&server, "PUT", "/v1/developer/policy", k, Some(&policy)),
        409,
    );
    let under_policy = submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    let under_policy = server.finish(&under_policy.poll_path(), k);
    assert_eq!(under_policy.data()["xray"]["policy"]["version"], 1, "{under_policy:?}");
    assert_valid(&doc, "AnalysisPoll", &under_policy.body);
    let keys = raw(server.addr, "GET", xray::signing::KEY_SET_PATH, &[], "");
    assert_valid(&doc, "SigningKeySet", &keys.body);
    assert!(hooked.data()["signature"].is_object(), "a READY report is signed: {hooked:?}");
    for error in [
        get(server.addr, STATUS_PATH, "svc_live_nope").body,
        post(server.addr, WALLET_PATH, k, r#"{"wallet":"abc"}"#).body,
        get(server.addr, "/v1/nope", k).body,
    ] {
        assert_valid(&doc, "Error", &error);
    }
}

/// The transactions the demo cannot build but a wallet sends: `case` as a v0 message (its
/// message prefixed by the version byte, no lookup table), and one that would fail (a transfer
/// of more SOL than the wallet holds: sol-transfer's lamports raised).
fn variant(case: &str, v0: bool) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut bytes = b64.decode(demo_tx(case)).expect("base64");
    if v0 {
        let message = 1 + 64 * usize::from(bytes[0]);
        bytes.insert(message, 0x80);
        bytes.push(0);
    } else {
        let at = bytes.len() - 8;
        bytes[at..].copy_from_slice(&u64::MAX.to_le_bytes());
    }
    b64.encode(bytes)
}

#[test]
fn every_scan_answer_matches_the_document() {
    let doc = document();
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let scan = |body: &str| post(server.addr, SCAN_PATH, k, body);
    let cases = xray::devtools::demo_tx::CASES;
    let mut answered: u64 = 0;
    for (case, ..) in cases {
        let transaction = demo_tx(case);
        let reply = scan(&scan_body(&transaction, None));
        assert_eq!(reply.status, 200, "{case}: {reply:?}");
        assert_answer(&doc, "post", SCAN_PATH, &reply);
        answered += 1;
        // The signer named, with the dApp's origin: the same document.
        let signer = reply.data()["signer"].as_str().expect("signer").to_owned();
        let named =
            serde_json::json!({"transaction": transaction, "signer": signer, "origin": "https://app.example.com"});
        let reply = scan(&named.to_string());
        assert_eq!(reply.status, 200, "{case}: {reply:?}");
        assert_answer(&doc, "post", SCAN_PATH, &reply);
        answered += 1;
    }
    // A v0 message, and a transaction that would fail (`simulation.error`, no effects).
    let v0 = scan(&scan_body(&variant("approve", true), None));
    assert_eq!((v0.status, v0.data()["transaction"]["version"].as_str()), (200, Some("v0")), "{v0:?}");
    assert_answer(&doc, "post", SCAN_PATH, &v0);
    let failing = scan(&scan_body(&variant("sol-transfer", false), None));
    assert_eq!((failing.status, failing.data()["simulation"]["status"].as_str()), (200, Some("failed")), "{failing:?}");
    assert!(failing.data()["simulation"].get("error").is_some(), "{failing:?}");
    assert_answer(&doc, "post", SCAN_PATH, &failing);
    answered += 2;
    // Refusals, each against the schema of its own status.
    let good = demo_tx("sol-transfer");
    let refusals = [
        (scan_body("not base64!", None), "INVALID_TRANSACTION"),
        (scan_body("AAAA", None), "INVALID_TRANSACTION"),
        (scan_body(&good, Some(SYBIL_A)), "INVALID_REQUEST"),
        (scan_body(&good, Some("nope")), "INVALID_ADDRESS"),
        (serde_json::json!({"transaction": good, "origin": 5}).to_string(), "INVALID_REQUEST"),
    ];
    for (body, code) in refusals {
        let reply = scan(&body);
        assert_eq!((reply.status, reply.error()["code"].as_str()), (400, Some(code)), "{body}: {reply:?}");
        assert_answer(&doc, "post", SCAN_PATH, &reply);
    }
    let reader = server.key(KeyOptions::scopes("analysis:read"));
    let refused = post(server.addr, SCAN_PATH, &reader.secret, &scan_body(&good, None));
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_answer(&doc, "post", SCAN_PATH, &refused);
    // Usage counts the scans apart, in the documented shape.
    let usage = get(server.addr, USAGE_PATH, k);
    assert_eq!(usage.data()["byOperation"]["transactionScan"], answered, "{usage:?}");
    assert_answer(&doc, "get", USAGE_PATH, &usage);
}

const MONITORS_PATH: &str = "/v1/developer/monitors";
/// The document's templates of the monitors' paths.
const MONITOR_T: &str = "/v1/developer/monitors/{id}";
const EVENTS_T: &str = "/v1/developer/monitors/{id}/events";
const REDELIVER_T: &str = "/v1/developer/monitors/{id}/events/{eventId}/redeliver";

/// One request with a bearer key and, when given, a JSON body (any method: `PATCH`, `DELETE`).
fn call(server: &TestServer, method: &str, path: &str, key: &str, body: Option<&Value>) -> Reply {
    let auth = format!("Bearer {key}");
    let mut headers = vec![("authorization", auth.as_str())];
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    raw(server.addr, method, path, &headers, &body.map(Value::to_string).unwrap_or_default())
}

/// `reply` has `status` and validates against the document's schema of that status.
pub(crate) fn assert_documented(doc: &Value, method: &str, template: &str, reply: &Reply, status: u16) {
    assert_eq!(reply.status, status, "{method} {template}: {reply:?}");
    assert_answer(doc, method, template, reply);
}

#[test]
fn the_monitors_answers_match_the_document() {
    use serde_json::json;
    let doc = document();
    let server = serve(|c| {
        c.monitor_interval_s = 1;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
    });
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let hook = "http://127.0.0.1:9/hooks";
    let monitor_path = |id: &str| format!("{MONITORS_PATH}/{id}");

    // Create: one with thresholds and a callbackUrl (refused until the account has a webhook
    // secret), one poll-only with the defaults.
    let body = json!({"wallets": [CLEAN, OPEN_DELEGATION], "callbackUrl": hook, "scoreDrop": 10});
    let no_secret = call(&server, "POST", MONITORS_PATH, k, Some(&body));
    assert_documented(&doc, "post", MONITORS_PATH, &no_secret, 409);
    assert_eq!(no_secret.error()["details"]["reason"], "no_webhook_secret", "{no_secret:?}");
    let made = server.admin("POST", &format!("/v1/admin/accounts/{}/webhook-secret", key.account));
    assert_eq!(made.status, 201, "{made:?}");
    let created = call(&server, "POST", MONITORS_PATH, k, Some(&body));
    assert_documented(&doc, "post", MONITORS_PATH, &created, 201);
    assert_eq!(created.data()["minSeverity"], "high", "the default: {created:?}");
    assert!(created.data().get("watches").is_none(), "watches on GET one only: {created:?}");
    let id = created.data_str("id");
    let plain = call(&server, "POST", MONITORS_PATH, k, Some(&json!({"wallets": [SYBIL_A]})));
    assert_documented(&doc, "post", MONITORS_PATH, &plain, 201);
    assert_eq!((&plain.data()["scoreDrop"], &plain.data()["callbackUrl"]), (&Value::Null, &Value::Null), "{plain:?}");
    let plain_id = plain.data_str("id");

    // List: all on one page, then one per page.
    let listed = get(server.addr, MONITORS_PATH, k);
    assert_documented(&doc, "get", MONITORS_PATH, &listed, 200);
    let mut ids: Vec<&str> =
        listed.data()["monitors"].as_array().expect("monitors").iter().filter_map(|m| m["id"].as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec![id.as_str(), plain_id.as_str()];
    expected.sort_unstable();
    assert_eq!((ids, &listed.data()["nextAfter"]), (expected.clone(), &Value::Null), "{listed:?}");
    let first = get(server.addr, &format!("{MONITORS_PATH}?limit=1"), k);
    assert_documented(&doc, "get", MONITORS_PATH, &first, 200);
    assert_eq!(first.data()["nextAfter"], expected[0], "a full page names the next one's start: {first:?}");
    let second = get(server.addr, &format!("{MONITORS_PATH}?limit=1&after={}", expected[0]), k);
    assert_documented(&doc, "get", MONITORS_PATH, &second, 200);
    assert_eq!(second.data()["monitors"][0]["id"], expected[1], "{second:?}");

    // Read one once each wallet was checked (an interval of 1 s: the first check is at once).
    let checked = eventually(
        "every wallet checked once",
        || get(server.addr, &monitor_path(&id), k),
        |r| {
            r.status != 200
                || r.data()["watches"].as_array().is_some_and(|w| {
                    w.len() == 2 && w.iter().all(|w| w["lastCheckedAt"].is_string() && w["lastAnalysisId"].is_string())
                })
        },
    );
    assert_documented(&doc, "get", MONITOR_T, &checked, 200);
    assert!(checked.data()["lagging"].is_boolean(), "{checked:?}");
    // The baselines are analyses of the account, in the documented shape.
    let baseline = checked.data()["watches"][0]["lastAnalysisId"].as_str().expect("analysis id").to_owned();
    let poll = server.finish(&analysis_path(&baseline), k);
    assert_documented(&doc, "get", "/v1/developer/intelligence/analysis/{id}", &poll, 200);
    // Each baseline is one charged walletAnalysis; the quiet checks after them are free.
    let baselines = |u: &Usage| u.wallet_analysis == 3 && u.reserved == 0;
    eventually("the three baselines are charged", || server.usage(k), baselines);
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    let usage = get(server.addr, USAGE_PATH, k);
    assert_documented(&doc, "get", USAGE_PATH, &usage, 200);
    assert!(baselines(&Usage::of(usage.data())), "quiet checks are free: {usage:?}");

    // Change: thresholds, wallets, scoreDrop cleared.
    let change = json!({"minSeverity": "medium", "scoreDrop": null, "addWallets": [SYBIL_B], "removeWallets": [CLEAN]});
    let changed = call(&server, "PATCH", &monitor_path(&id), k, Some(&change));
    assert_documented(&doc, "patch", MONITOR_T, &changed, 200);
    assert_eq!(changed.data()["wallets"], json!([OPEN_DELEGATION, SYBIL_B]), "{changed:?}");
    assert_eq!((&changed.data()["minSeverity"], &changed.data()["scoreDrop"]), (&json!("medium"), &Value::Null));
    let nothing = call(&server, "PATCH", &monitor_path(&id), k, Some(&json!({})));
    assert_documented(&doc, "patch", MONITOR_T, &nothing, 200);

    // Events: none on a ledger that does not move — an empty page, in the documented shape.
    let events = get(server.addr, &format!("{}/events", monitor_path(&id)), k);
    assert_documented(&doc, "get", EVENTS_T, &events, 200);
    assert_eq!(events.data(), &json!({"events": [], "nextAfter": null}), "{events:?}");
    let paged = get(server.addr, &format!("{}/events?limit=100", monitor_path(&id)), k);
    assert_documented(&doc, "get", EVENTS_T, &paged, 200);

    // Refusals, each against the schema of its own status.
    let create = |body: Value| call(&server, "POST", MONITORS_PATH, k, Some(&body));
    let change = |body: Value| call(&server, "PATCH", &monitor_path(&id), k, Some(&body));
    let events_at = |query: &str| get(server.addr, &format!("{}/events{query}", monitor_path(&id)), k);
    let redeliver =
        |event: &str| call(&server, "POST", &format!("{}/events/{event}/redeliver", monitor_path(&id)), k, None);
    let refusals = [
        ("post", MONITORS_PATH, create(json!({"wallets": [], "callbackUrl": hook})), 400),
        ("post", MONITORS_PATH, create(json!({"wallets": [CLEAN, CLEAN], "callbackUrl": hook})), 400),
        ("post", MONITORS_PATH, create(json!({"wallets": ["nope"], "callbackUrl": hook})), 400),
        ("post", MONITORS_PATH, create(json!({"wallets": [CLEAN], "callbackUrl": hook, "minSeverity": "severe"})), 400),
        ("post", MONITORS_PATH, create(json!({"wallets": [CLEAN], "callbackUrl": hook, "scoreDrop": 0})), 400),
        ("post", MONITORS_PATH, create(json!({"wallets": [CLEAN], "callbackUrl": 5})), 400),
        ("post", MONITORS_PATH, create(json!({"wallets": [CLEAN], "callbackUrl": "http://10.0.0.1/x"})), 400),
        ("get", MONITORS_PATH, get(server.addr, &format!("{MONITORS_PATH}?limit=0"), k), 400),
        ("patch", MONITOR_T, change(json!({"removeWallets": [OPEN_DELEGATION, SYBIL_B]})), 400),
        ("patch", MONITOR_T, change(json!({"addWallets": "nope"})), 400),
        ("get", EVENTS_T, events_at("?after=nope"), 400),
        ("get", EVENTS_T, events_at("?limit=101"), 400),
        ("get", EVENTS_T, get(server.addr, &format!("{}/events", monitor_path("mon_1111")), k), 404),
        ("get", MONITORS_PATH, get(server.addr, &format!("{MONITORS_PATH}?after=nope"), k), 400),
        ("get", MONITOR_T, get(server.addr, &monitor_path("mon_1111"), k), 404),
        ("get", MONITOR_T, get(server.addr, &monitor_path("an_1111"), k), 404),
        ("post", REDELIVER_T, redeliver("evt_1111"), 404),
        ("post", REDELIVER_T, redeliver("nope"), 404),
    ];
    for (method, template, reply, status) in refusals {
        assert_documented(&doc, method, template, &reply, status);
    }
    let empty = create(json!({"wallets": [], "callbackUrl": hook}));
    assert_eq!(empty.error()["details"]["field"], "wallets", "{empty:?}");
    // Another account's monitor is unknown to it, on every route; its list is empty.
    let stranger = server.key(KeyOptions::default());
    let s = stranger.secret.as_str();
    for (method, template, reply) in [
        ("get", MONITOR_T, get(server.addr, &monitor_path(&id), s)),
        ("patch", MONITOR_T, call(&server, "PATCH", &monitor_path(&id), s, Some(&json!({"minSeverity": "low"})))),
        ("delete", MONITOR_T, call(&server, "DELETE", &monitor_path(&id), s, None)),
        ("get", EVENTS_T, get(server.addr, &format!("{}/events", monitor_path(&id)), s)),
    ] {
        assert_documented(&doc, method, template, &reply, 404);
    }
    let theirs = get(server.addr, MONITORS_PATH, s);
    assert_documented(&doc, "get", MONITORS_PATH, &theirs, 200);
    assert_eq!(theirs.data()["monitors"], json!([]), "{theirs:?}");
    // Scopes: `monitor:read` alone reads monitors but not events; creating needs `analysis:read`.
    let reader = server.key(KeyOptions::scopes("monitor:read").in_account(&key.account));
    let r = reader.secret.as_str();
    assert_documented(&doc, "get", MONITOR_T, &get(server.addr, &monitor_path(&id), r), 200);
    let no_events = get(server.addr, &format!("{}/events", monitor_path(&id)), r);
    assert_documented(&doc, "get", EVENTS_T, &no_events, 403);
    assert_eq!(no_events.error()["details"]["requiredScope"], "analysis:read", "{no_events:?}");
    let writer = server.key(KeyOptions::scopes("monitor:write,wallet:analyze").in_account(&key.account));
    let no_read =
        call(&server, "POST", MONITORS_PATH, &writer.secret, Some(&json!({"wallets": [CLEAN], "callbackUrl": hook})));
    assert_documented(&doc, "post", MONITORS_PATH, &no_read, 403);
    assert_eq!(no_read.error()["details"]["field"], "callbackUrl", "{no_read:?}");
    assert_documented(&doc, "delete", MONITOR_T, &call(&server, "DELETE", &monitor_path(&id), r, None), 403);
    // A method the path does not have: 405 with the documented `Allow`.
    let wrong = call(&server, "POST", &monitor_path(&id), k, Some(&json!({})));
    assert_eq!((wrong.status, wrong.header("allow")), (405, Some("GET, PATCH, DELETE")), "{wrong:?}");
    assert_answer(&doc, "get", MONITOR_T, &wrong);
    let wrong = call(&server, "PUT", MONITORS_PATH, k, None);
    assert_eq!((wrong.status, wrong.header("allow")), (405, Some("GET, POST")), "{wrong:?}");
    assert_answer(&doc, "get", MONITORS_PATH, &wrong);

    // Delete: the answer, then the monitor is gone.
    let deleted = call(&server, "DELETE", &monitor_path(&id), k, None);
    assert_documented(&doc, "delete", MONITOR_T, &deleted, 200);
    assert_eq!(deleted.data(), &json!({"id": id, "deleted": true}), "{deleted:?}");
    assert_documented(&doc, "get", MONITOR_T, &get(server.addr, &monitor_path(&id), k), 404);
    assert_documented(&doc, "delete", MONITOR_T, &call(&server, "DELETE", &monitor_path(&id), k, None), 404);
    let left = get(server.addr, MONITORS_PATH, k);
    assert_documented(&doc, "get", MONITORS_PATH, &left, 200);
    assert_eq!(left.data()["monitors"].as_array().map(Vec::len), Some(1), "{left:?}");
}

/// A timeline wallet of the demo (README): it approves an unknown delegate at its event.
const TIMELINE_DELEGATE: &str = "6hD3Hvruapb9hfnN31Nj7JmsTE6XnPuV1pnzhX19XF4k";

#[test]
fn a_monitors_event_its_page_redelivery_and_webhook_match_the_document() {
    use serde_json::json;
    use xray::webhooks::signature::verify;
    let doc = document();
    // A demo ledger on which the delegate wallet approves 4 s from now: after its baseline.
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("timeline.toml");
    let start_ms = xray::clock::now_unix_ms();
    let text = format!("start_unix_ms = {start_ms}\n[[event]]\nwallet = \"timeline_delegate\"\nat_s = 4\n");
    std::fs::write(&script, text).expect("script written");
    let ledger = format!("demo+script={}", script.display()).parse().expect("ledger spec");
    let server = serve(|c| {
        c.monitor_interval_s = 1;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
        c.ledger = ledger;
    });
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let made = server.admin("POST", &format!("/v1/admin/accounts/{}/webhook-secret", key.account));
    assert_eq!(made.status, 201, "{made:?}");
    let secret = made.body["secret"].as_str().expect("secret").to_owned();
    // Two failed attempts, then delivered: the delivery stays PENDING about 3 s.
    let receiver = super::webhooks::Receiver::start(&[500, 500, 200]);
    let body = json!({"wallets": [TIMELINE_DELEGATE], "callbackUrl": receiver.url(), "minSeverity": "low"});
    let created = call(&server, "POST", MONITORS_PATH, k, Some(&body));
    assert_documented(&doc, "post", MONITORS_PATH, &created, 201);
    let events_path = format!("{MONITORS_PATH}/{}/events", created.data_str("id"));
    let events = || get(server.addr, &events_path, k);
    let first = eventually("an event", events, |r| r.status != 200 || r.data()["events"][0].is_object());
    assert_documented(&doc, "get", EVENTS_T, &first, 200);
    let event = first.data()["events"][0].clone();
    let event_id = event["id"].as_str().expect("event id").to_owned();
    assert!(event["changes"]["appeared"].as_array().is_some_and(|a| !a.is_empty()), "{first:?}");
    // The event's changes are its re-analysis' own.
    let analysis = server.finish(&analysis_path(event["analysisId"].as_str().expect("analysisId")), k);
    assert_eq!(analysis.data()["xray"]["changes"], event["changes"], "{analysis:?}");
    let redeliver_path = format!("{events_path}/{event_id}/redeliver");
    // Being delivered: nothing to send again yet.
    let pending = call(&server, "POST", &redeliver_path, k, None);
    assert_documented(&doc, "post", REDELIVER_T, &pending, 409);
    let delivered = eventually("delivered", events, |r| r.data()["events"][0]["delivery"]["status"] == "DELIVERED");
    assert_documented(&doc, "get", EVENTS_T, &delivered, 200);
    assert_eq!(delivered.data()["events"][0]["delivery"]["attempts"], 3, "{delivered:?}");
    // Paging: a full page names the next one's start; the page after the last is empty.
    let one = get(server.addr, &format!("{events_path}?limit=1"), k);
    assert_documented(&doc, "get", EVENTS_T, &one, 200);
    assert_eq!(one.data()["nextAfter"], event_id.as_str(), "{one:?}");
    let after = get(server.addr, &format!("{events_path}?after={event_id}"), k);
    assert_documented(&doc, "get", EVENTS_T, &after, 200);
    assert_eq!(after.data(), &json!({"events": [], "nextAfter": null}), "{after:?}");
    // Settled: sent again, at once, from attempt 1.
    let again = call(&server, "POST", &redeliver_path, k, None);
    assert_documented(&doc, "post", REDELIVER_T, &again, 202);
    let delivery = &again.data()["event"]["delivery"];
    assert_eq!((&delivery["status"], &delivery["attempts"]), (&json!("PENDING"), &json!(0)), "{again:?}");
    // Every attempt and the redelivery: the documented body, signed, with the same event id.
    let received = receiver.wait_for(4);
    let mut expected = event.clone();
    expected.as_object_mut().expect("event").remove("delivery");
    for got in &received {
        let body: Value = serde_json::from_slice(&got.body).expect("JSON body");
        assert_valid(&doc, "MonitorEventWebhook", &body);
        assert_eq!(body["data"]["event"], expected, "the same event on every delivery");
        assert_eq!(got.header("content-type"), Some("application/json"), "{got:?}");
        assert_eq!(got.header("xray-webhook-id"), Some(event_id.as_str()), "{got:?}");
        let signature = got.header("xray-signature").expect("Xray-Signature");
        let now_s = xray::clock::now_unix_ms() / 1_000;
        verify(&secret, signature, &got.body, now_s, 300).unwrap_or_else(|e| panic!("{e}: {got:?}"));
    }
    let attempts: Vec<_> = received.iter().map(|r| r.header("xray-delivery-attempt").unwrap_or("")).collect();
    assert_eq!(attempts, ["1", "2", "3", "1"], "a redelivery starts from attempt 1 again");
}

#[test]
fn the_validator_catches_drift() {
    let doc = document();
    let score = serde_json::json!({"value": 82, "riskLevel": "low", "confidence": 0.9});
    assert!(violations(&doc, schema(&doc, "Score"), &score, "s").is_empty());
    let broken = [
        serde_json::json!({"value": 82, "riskLevel": "low"}),
        serde_json::json!({"value": "82", "riskLevel": "low", "confidence": 0.9}),
        serde_json::json!({"value": 82, "riskLevel": "low", "confidence": 1.5}),
        serde_json::json!({"value": 82, "riskLevel": "low", "confidence": 0.9, "extra": 1}),
    ];
    for value in broken {
        assert!(!violations(&doc, schema(&doc, "Score"), &value, "s").is_empty(), "{value}");
    }
    // `enum` is held (`x-extensible-enum`, as `riskLevel`'s, is not: clients tolerate new values).
    let slot = |status: &str| serde_json::json!({"signer": CLEAN, "status": status});
    assert!(violations(&doc, schema(&doc, "ScanSignatureCheck"), &slot("missing"), "c").is_empty());
    assert!(!violations(&doc, schema(&doc, "ScanSignatureCheck"), &slot("forged"), "c").is_empty());
    let lamports = serde_json::json!({"mint": "SOL", "amount": 5});
    assert!(violations(&doc, schema(&doc, "AssetAtRisk"), &lamports, "a").is_empty());
    let summary = serde_json::json!({"address": SYBIL_A, "score": score});
    assert!(!violations(&doc, schema(&doc, "WalletSummary"), &summary, "w").is_empty(), "analysisId is required");
    // An effect is one of its kinds, whole: no field of another kind, none missing, none unknown.
    let sol = serde_json::json!({"kind": "sol", "account": CLEAN, "deltaLamports": -5000});
    assert!(violations(&doc, schema(&doc, "ScanEffect"), &sol, "e").is_empty());
    let broken = [
        serde_json::json!({"kind": "sol", "account": CLEAN, "deltaLamports": -5000, "mint": TOKEN_MINT}),
        serde_json::json!({"kind": "token", "account": CLEAN, "deltaLamports": -5000}),
        serde_json::json!({"kind": "sol", "account": "nope", "deltaLamports": -5000}),
        serde_json::json!({"kind": "stake", "account": CLEAN}),
    ];
    for value in broken {
        assert!(!violations(&doc, schema(&doc, "ScanEffect"), &value, "e").is_empty(), "{value}");
    }
}

/// A `$ref` to `#/components/responses/…` or `#/components/requestBodies/…`, followed.
fn resolve_component<'a>(doc: &'a Value, mut v: &'a Value) -> &'a Value {
    while let Some(reference) = v.get("$ref").and_then(Value::as_str) {
        let pointer = reference.strip_prefix('#').unwrap_or_else(|| panic!("ref {reference}"));
        v = doc.pointer(pointer).unwrap_or_else(|| panic!("{reference} is not in the document"));
    }
    v
}

/// Every example a document gives — of a request body, of a response, of a schema — against
/// the schema it illustrates; the violations, each named by where the example is.
pub(crate) fn example_violations(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut check = |schema: &Value, value: &Value, at: String| out.extend(violations(doc, schema, value, &at));
    let content_examples = |holder: &Value, at: &str, check: &mut dyn FnMut(&Value, &Value, String)| {
        for (media, content) in resolve_component(doc, holder)["content"].as_object().into_iter().flatten() {
            let examples = content["examples"].as_object().into_iter().flatten();
            for (name, example) in examples {
                let example = resolve_component(doc, example);
                check(&content["schema"], &example["value"], format!("{at} {media} example {name}"));
            }
        }
    };
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in
            item.as_object().expect("path item").iter().filter(|(_, o)| o.get("responses").is_some())
        {
            let at = format!("{method} {path}");
            if let Some(body) = operation.get("requestBody") {
                content_examples(body, &format!("{at} request"), &mut check);
            }
            for (status, reply) in operation["responses"].as_object().expect("responses") {
                content_examples(reply, &format!("{at} {status}"), &mut check);
            }
        }
    }
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        for (i, example) in schema.get("examples").and_then(Value::as_array).into_iter().flatten().enumerate() {
            check(schema, example, format!("schema {name} example {i}"));
        }
    }
    out
}

#[test]
fn every_example_in_the_documents_matches_its_schema() {
    for path in ["docs/openapi.json", "docs/admin-openapi.json"] {
        let found = example_violations(&load_document(path));
        assert!(found.is_empty(), "{path}: {} examples break their schema:\n{}", found.len(), found.join("\n"));
    }
}

#[test]
fn the_feedback_answers_match_the_document() {
    use serde_json::json;
    let doc = document();
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default()).secret;
    let (analysis, signal, _) = super::feedback::ready_analysis(&server, &key, OPEN_DELEGATION);
    let path = "/v1/developer/feedback";
    let post_it = |body: Value| call(&server, "POST", path, &key, Some(&body));
    let on_signal = json!({"analysisId": analysis, "signalId": signal, "verdict": "false_positive", "note": "ours"});
    assert_documented(&doc, "post", path, &post_it(on_signal.clone()), 201);
    assert_documented(&doc, "post", path, &post_it(on_signal), 200);
    assert_documented(&doc, "post", path, &post_it(json!({"analysisId": analysis, "verdict": "missed"})), 201);
    let unknown = json!({"analysisId": analysis, "signalId": "sig_404", "verdict": "confirmed"});
    assert_documented(&doc, "post", path, &post_it(unknown), 400);
    let gone = json!({"analysisId": "an_1111111111111111111111", "verdict": "missed"});
    assert_documented(&doc, "post", path, &post_it(gone), 404);
    let reader = server.key(KeyOptions::scopes("usage:read")).secret;
    let refused = call(&server, "POST", path, &reader, Some(&json!({"analysisId": analysis, "verdict": "missed"})));
    assert_documented(&doc, "post", path, &refused, 403);

    // On a scan: its answer sent back (the request as the document describes it), then refused.
    let scan = post(server.addr, SCAN_PATH, &key, &scan_body(&demo_tx("drain"), None));
    let on_scan = json!({"verdict": "false_positive", "note": "ours", "scan": scan.body});
    assert_valid_request(&doc, path, &on_scan);
    assert_documented(&doc, "post", path, &post_it(on_scan.clone()), 201);
    let mut tampered = on_scan;
    tampered["scan"]["data"]["verdict"] = json!("benign");
    assert_documented(&doc, "post", path, &post_it(tampered), 422);

    // The account's own pages: both kinds of record.
    let page = call(&server, "GET", &format!("{path}?limit=2"), &key, None);
    assert_documented(&doc, "get", path, &page, 200);
    assert_eq!(page.data()["feedback"][0]["target"], "scan", "{page:?}");
    let bad = call(&server, "GET", &format!("{path}?limit=0"), &key, None);
    assert_documented(&doc, "get", path, &bad, 400);
}

/// A request body valid against the operation's request schema.
fn assert_valid_request(doc: &Value, path: &str, body: &Value) {
    let schema = &doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let found = violations(doc, schema, body, "request");
    assert!(found.is_empty(), "{found:?}");
}
