//! `docs/openapi.json` against the code: the document lists exactly the public routes and
//! error codes, and real payloads of every demo archetype (X-Rays, comparisons), of every demo
//! transaction scanned (`xray ledger demo-tx`) and of the running server (accepted, polls,
//! status, usage, refusals) validate against its schemas — so the published description cannot
//! drift from what the server sends.
//!
//! The validator is a small subset of JSON Schema, enough for this document: `$ref`, `oneOf`,
//! `type` (one or a list), `const`, `required`, `properties`, `additionalProperties`, `items`,
//! `minimum`/`maximum`, `pattern`, `minLength`/`maxLength`. An object with `properties` and no `additionalProperties` is closed:
//! a field the code sends and the document does not name fails.

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
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/openapi.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("docs/openapi.json")).expect("valid JSON")
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
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
fn violations(doc: &Value, schema: &Value, value: &Value, at: &str) -> Vec<String> {
    let s = resolve(doc, schema);
    if let Some(branches) = s.get("oneOf").and_then(Value::as_array) {
        let passing = branches.iter().filter(|b| violations(doc, b, value, at).is_empty()).count();
        return if passing == 1 { Vec::new() } else { vec![format!("{at}: {passing} oneOf branches match {value}")] };
    }
    let mut out = Vec::new();
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
        let re = regex::Regex::new(pattern).unwrap_or_else(|e| panic!("{at}: pattern {pattern}: {e}"));
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

/// The JSON schema of the `status` answer of `method path`, following a `$ref` to a shared
/// response (`#/components/responses/…`).
fn response_schema<'a>(doc: &'a Value, method: &str, path: &str, status: u16) -> &'a Value {
    let operation = &doc["paths"][path][method];
    let mut response = &operation["responses"][status.to_string()];
    if let Some(reference) = response.get("$ref").and_then(Value::as_str) {
        let name = reference.strip_prefix("#/components/responses/").unwrap_or_else(|| panic!("ref {reference}"));
        response = &doc["components"]["responses"][name];
    }
    let schema = &response["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "{method} {path} documents no JSON answer for {status}");
    schema
}

/// `reply` validates against the schema its own status has for `method path`.
fn assert_answer(doc: &Value, method: &str, path: &str, reply: &Reply) {
    let at = format!("{method} {path} {}", reply.status);
    let found = violations(doc, response_schema(doc, method, path, reply.status), &reply.body, &at);
    assert!(found.is_empty(), "{} violation(s):\n{}\n{reply:?}", found.len(), found.join("\n"));
}

#[test]
fn the_document_names_every_route_and_error_code() {
    let doc = document();
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", doc["openapi"]);
    // Every `METHOD path` of the router, path parameters in OpenAPI's spelling, and nothing else.
    let operations: BTreeSet<String> = doc["paths"]
        .as_object()
        .expect("paths")
        .iter()
        .flat_map(|(path, item)| {
            let item = item.as_object().expect("path item");
            item.keys().filter(|k| *k != "parameters").map(move |m| format!("{} {path}", m.to_uppercase()))
        })
        .collect();
    let routes: BTreeSet<String> =
        xray::api::Route::PATHS.iter().map(|r| r.replace(":id", "{id}").replace(":pairId", "{pairId}")).collect();
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
