//! The ledger cache (`ledger::cache`) over real HTTP against the local JSON-RPC server: what a
//! refresh and a comparison of wallets just analyzed cost in JSON-RPC calls (every method
//! counted, a batch's items one by one), that the answers are the same bytes with and
//! without it, and its series in `/metrics`.

use std::collections::BTreeMap;

use xray::devtools::rpc_server::FaultPlan;

use super::support::*;

const BUSY_TRADER: &str = "4Wu1mrzaAQ5Z54ANdUAEG8j4apxQM8kNED6i5mvbumiW";
/// A refresh of a wallet with nothing new on the ledger (issue #30's target).
const REFRESH_CALLS_MAX: u64 = 5;
/// A comparison of two wallets both just analyzed (issue #30's target).
const COMPARISON_CALLS_MAX: u64 = 8;

fn cached_server() -> TestServer {
    serve_rpc(FaultPlan::default(), |c| c.ledger_cache_bytes = xray::config::LEDGER_CACHE_BYTES_MIN)
}

fn uncached_server() -> TestServer {
    serve_rpc(FaultPlan::default(), |c| c.ledger_cache_bytes = 0)
}

fn total(calls: &BTreeMap<String, u64>) -> u64 {
    calls.values().sum()
}

/// Analyzes `wallet` (`refresh`: a new, charged analysis) and returns the `data.xray` bytes.
fn analyze(server: &TestServer, key: &str, wallet: &str, refresh: bool) -> Vec<u8> {
    let body = if refresh { refresh_body(wallet) } else { wallet_body(wallet) };
    let accepted = post(server.addr, WALLET_PATH, key, &body);
    assert!(matches!(accepted.status, 200 | 202), "{accepted:?}");
    let done = server.finish(&accepted.poll_path(), key);
    assert_eq!(done.job_status(), "READY", "{done:?}");
    done.payload_bytes("xray").to_vec()
}

fn compare(server: &TestServer, key: &str, a: &str, b: &str) -> Vec<u8> {
    let accepted = post(server.addr, COMPARE_PATH, key, &compare_body(a, b));
    assert!(matches!(accepted.status, 200 | 202), "{accepted:?}");
    let done = server.finish(&accepted.poll_path(), key);
    assert_eq!(done.job_status(), "READY", "{done:?}");
    done.payload_bytes("comparison").to_vec()
}

/// A document with what names one server's own analyses blanked — analysis ids (`an_…`,
/// which differ between two servers) and `changes.previousCompletedAt` — every other byte kept.
fn comparable(document: &[u8]) -> String {
    let text = String::from_utf8(document.to_vec()).expect("UTF-8");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("\"an_") {
        out.push_str(&rest[..at + 4]);
        rest = &rest[at + 4..];
        rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    }
    out.push_str(rest);
    const COMPLETED_AT: &str = "\"previousCompletedAt\":\"";
    if let Some(at) = out.find(COMPLETED_AT) {
        let start = at + COMPLETED_AT.len();
        let end = start + out[start..].find('"').expect("closing quote");
        out.replace_range(start..end, "");
    }
    out
}

#[test]
fn a_refresh_with_nothing_new_costs_at_most_five_calls() {
    let server = cached_server();
    let key = server.key(KeyOptions::default()).secret;
    let before = server.ledger_calls();
    let first = analyze(&server, &key, BUSY_TRADER, false);
    let first_calls = server.ledger_calls_since(&before);
    // The first analysis reads everything: its ~1,000 transactions one by one.
    assert!(first_calls.get("getTransaction").is_some_and(|n| *n >= 900), "{first_calls:?}");
    let before = server.ledger_calls();
    let refreshed = analyze(&server, &key, BUSY_TRADER, true);
    let refresh_calls = server.ledger_calls_since(&before);
    eprintln!("busy_trader: first analysis {first_calls:?}, refresh {refresh_calls:?}");
    assert!(total(&refresh_calls) <= REFRESH_CALLS_MAX, "{refresh_calls:?}");
    assert!(!refresh_calls.contains_key("getTransaction"), "{refresh_calls:?}");
    // What it answers is the same bytes as without the cache: see the test below.
    assert!(first.len() > 1_000 && refreshed.len() > 1_000);
}

#[test]
fn a_comparison_of_two_wallets_just_analyzed_costs_at_most_eight_calls() {
    let server = cached_server();
    let key = server.key(KeyOptions::default()).secret;
    for wallet in [SYBIL_A, SYBIL_B] {
        analyze(&server, &key, wallet, false);
    }
    let before = server.ledger_calls();
    compare(&server, &key, SYBIL_A, SYBIL_B);
    let calls = server.ledger_calls_since(&before);
    eprintln!("comparison of two wallets just analyzed: {calls:?}");
    assert!(total(&calls) <= COMPARISON_CALLS_MAX, "{calls:?}");
}

#[test]
fn answers_are_the_same_bytes_with_and_without_the_cache() {
    let (cached, uncached) = (cached_server(), uncached_server());
    let (key_c, key_u) = (cached.key(KeyOptions::default()).secret, uncached.key(KeyOptions::default()).secret);
    let wallets = [BUSY_TRADER, CLEAN, OPEN_DELEGATION, OWNER_CHANGE_DRAINED, FOREIGN_STAKE_AUTHORITY, SYBIL_A];
    for wallet in wallets {
        let plain = analyze(&uncached, &key_u, wallet, false);
        assert!(analyze(&cached, &key_c, wallet, false) == plain, "{wallet}: first read");
        // The second read over the cache: transactions and the history's cursor from it.
        let plain = comparable(&analyze(&uncached, &key_u, wallet, true));
        assert_eq!(comparable(&analyze(&cached, &key_c, wallet, true)), plain, "{wallet}: read over the cache");
    }
    // Comparisons too, with sides reused from those analyses and without (a fresh pair).
    for (a, b) in [(SYBIL_A, BUSY_TRADER), (SYBIL_B, SYBIL_C)] {
        let (with, without) = (compare(&cached, &key_c, a, b), compare(&uncached, &key_u, a, b));
        assert_eq!(comparable(&with), comparable(&without), "{a} ~ {b}");
    }
}

#[test]
fn metrics_count_hits_misses_and_bytes() {
    let server = cached_server();
    let key = server.key(KeyOptions::default()).secret;
    analyze(&server, &key, CLEAN, false);
    analyze(&server, &key, CLEAN, true);
    let text = server.metrics_text();
    let value = |series: &str| -> u64 {
        let line = text.lines().find(|l| l.starts_with(series)).unwrap_or_else(|| panic!("{series} in {text}"));
        line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a number")
    };
    assert!(value("xray_ledger_cache_hits_total{kind=\"transaction\"}") > 0, "{text}");
    assert!(value("xray_ledger_cache_misses_total{kind=\"transaction\"}") > 0, "{text}");
    assert!(value("xray_ledger_cache_hits_total{kind=\"history\"}") > 0, "{text}");
    assert!(value("xray_ledger_cache_bytes") > 0, "{text}");
}
