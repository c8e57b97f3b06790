//! `docs/openapi.json` against the code: the document lists exactly the public routes and
//! error codes, and real payloads of every demo archetype (X-Rays, comparisons) and of the
//! running server (accepted, polls, status, usage, errors) validate against its schemas — so
//! the published description cannot drift from what the server sends.
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

#[test]
fn the_document_names_every_route_and_error_code() {
    let doc = document();
    assert!(doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")), "{}", doc["openapi"]);
    let paths: BTreeSet<&str> = doc["paths"].as_object().expect("paths").keys().map(String::as_str).collect();
    let expected = BTreeSet::from([
        "/v1/developer/intelligence/wallet",
        "/v1/developer/intelligence/wallets",
        "/v1/developer/intelligence/analysis/{id}",
        "/v1/developer/intelligence/compare",
        "/v1/developer/intelligence/comparison/{pairId}",
        "/v1/developer/status",
        "/v1/developer/usage",
        "/healthz",
    ]);
    assert_eq!(paths, expected);
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
        let side_a = compare::Side { view: &va, xray: &xa, analysis_id: Some("an_1111".into()) };
        let side_b = compare::Side { view: &vb, xray: &xb, analysis_id: None };
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
}
