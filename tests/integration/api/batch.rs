//! `POST /v1/developer/intelligence/wallets` over real loopback HTTP to an in-process server
//! with a real RocksDB: each address is answered on its own, in request order (a job, or the
//! error the single endpoint would give); a repeated address is one job; the rate limit counts
//! items; a full queue refuses the rest; quota is charged per admitted item; an
//! `Idempotency-Key` replays answered items and admits refused ones on a retry. Jobs read the
//! demo ledger through the local JSON-RPC server with added latency, so they stay live while
//! the test looks at them.

use serde_json::{json, Value};

use super::support::*;

const BATCH_PATH: &str = "/v1/developer/intelligence/wallets";

fn batch_body(wallets: &[&str], refresh: bool) -> String {
    json!({ "wallets": wallets, "refresh": refresh }).to_string()
}

fn post_batch(server: &TestServer, secret: &str, body: &str, idempotency_key: Option<&str>) -> Reply {
    let bearer = format!("Bearer {secret}");
    let mut headers = vec![("Authorization", bearer.as_str()), ("Content-Type", "application/json")];
    if let Some(key) = idempotency_key {
        headers.push(("Idempotency-Key", key));
    }
    raw(server.addr, "POST", BATCH_PATH, &headers, body)
}

/// The batch's items, after checking the answer's shape: 200, one item per address sent
/// (each echoing its address), and tallies that add up.
fn items_of(reply: &Reply, sent: &[&str]) -> Vec<Value> {
    assert_eq!(reply.status, 200, "{reply:?}");
    let data = reply.data();
    let items = data["items"].as_array().expect("items").clone();
    assert_eq!(items.len(), sent.len(), "{reply:?}");
    for (item, wallet) in items.iter().zip(sent) {
        assert_eq!(item["wallet"], *wallet, "{item}");
    }
    let refused = items.iter().filter(|i| i.get("error").is_some()).count() as u64;
    let deduplicated = items.iter().filter(|i| i["deduplicated"] == true).count() as u64;
    assert_eq!(data["refused"].as_u64(), Some(refused), "{reply:?}");
    assert_eq!(data["deduplicated"].as_u64(), Some(deduplicated), "{reply:?}");
    assert_eq!(data["admitted"].as_u64(), Some(items.len() as u64 - refused - deduplicated), "{reply:?}");
    items
}

/// An item answered with a job: its fields as the single endpoint names them.
fn assert_job(server: &TestServer, item: &Value, status: &str, deduplicated: bool) -> String {
    let id = item["analysisId"].as_str().unwrap_or_else(|| panic!("analysisId in {item}"));
    assert_eq!(item["status"], status, "{item}");
    assert_eq!(item["deduplicated"], deduplicated, "{item}");
    assert_eq!(item["pollUrl"], server.url(&analysis_path(id)), "{item}");
    assert!(is_timestamp(&item["createdAt"]), "{item}");
    id.to_owned()
}

/// An item refused with `code`: the contract's error object, with the batch's request id.
fn assert_refused(reply: &Reply, item: &Value, code: &str) {
    let error = &item["error"];
    assert_eq!(error["code"], code, "{item}");
    assert!(error["message"].as_str().is_some_and(|m| !m.is_empty()), "{item}");
    assert_eq!(error["requestId"].as_str(), reply.header("x-request-id"), "{item}");
    assert!(item.get("analysisId").is_none(), "{item}");
}

#[test]
fn each_address_is_answered_on_its_own_in_request_order() {
    let server = serve_slow(300, |_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let sent = [OPEN_DELEGATION, "not-an-address!", TOKEN_MINT, OPEN_DELEGATION, SYBIL_A, ""];
    let reply = post_batch(&server, k, &batch_body(&sent, false), None);
    let items = items_of(&reply, &sent);
    let first = assert_job(&server, &items[0], "QUEUED", false);
    assert_refused(&reply, &items[1], "INVALID_ADDRESS");
    assert_eq!(items[1]["error"]["details"], json!({ "field": "wallets", "reason": "not_base58" }));
    assert_refused(&reply, &items[2], "ACCOUNT_NOT_ELIGIBLE");
    assert_eq!(items[2]["error"]["details"]["field"], "wallets");
    assert_eq!(assert_job(&server, &items[3], "QUEUED", true), first, "a repeated address is one job");
    let sybil = assert_job(&server, &items[4], "QUEUED", false);
    assert_refused(&reply, &items[5], "INVALID_ADDRESS");
    let usage = server.usage(k);
    assert_eq!(usage.used + usage.reserved, 2, "one unit per new job: {usage:?}");

    // The jobs are the single endpoint's: polled, deduplicated onto, finished.
    let again = submit(&server, k, WALLET_PATH, &wallet_body(SYBIL_A));
    assert_eq!((again.data_str("analysisId"), &again.data()["deduplicated"]), (sybil.clone(), &json!(true)));
    let done = server.finish(&analysis_path(&first), k);
    assert_eq!(done.data()["wallet"], OPEN_DELEGATION);
    server.finish(&analysis_path(&sybil), k);
    // Now a batch reuses the READY results (200 READY, deduplicated) at no charge...
    let reused = post_batch(&server, k, &batch_body(&[SYBIL_A, OPEN_DELEGATION], false), None);
    let reused_items = items_of(&reused, &[SYBIL_A, OPEN_DELEGATION]);
    assert_eq!(assert_job(&server, &reused_items[0], "READY", true), sybil);
    assert_eq!(assert_job(&server, &reused_items[1], "READY", true), first);
    assert_eq!(server.usage(k).used + server.usage(k).reserved, 2, "reuse is free");
    // ... and `refresh` makes new work, once per address however often it is repeated.
    let refreshed = post_batch(&server, k, &batch_body(&[SYBIL_A, SYBIL_A, SYBIL_A], true), None);
    let refreshed_items = items_of(&refreshed, &[SYBIL_A; 3]);
    let new = assert_job(&server, &refreshed_items[0], "QUEUED", false);
    assert_ne!(new, sybil);
    for item in &refreshed_items[1..] {
        assert_eq!(assert_job(&server, item, "QUEUED", true), new);
    }
    assert_eq!(server.usage(k).used + server.usage(k).reserved, 3, "one more unit");
}

#[test]
fn the_rate_limit_counts_items_and_quota_is_charged_per_admitted_item() {
    let server = serve_slow(300, |_| {});
    // 1 token per second, 4 at most: the batch's own token and three more.
    let key = server.key(KeyOptions { rate_per_second: 1, burst: 4, quota: 2, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let wallets = fresh_wallets("batch-rate", 6);
    let sent: Vec<&str> = wallets.iter().map(String::as_str).collect();
    let reply = post_batch(&server, k, &batch_body(&sent, false), None);
    let items = items_of(&reply, &sent);
    assert_job(&server, &items[0], "QUEUED", false);
    assert_job(&server, &items[1], "QUEUED", false);
    // The quota (2 units) is spent: the third paid item is refused for it.
    assert_refused(&reply, &items[2], "QUOTA_EXHAUSTED");
    assert_eq!(items[2]["error"]["details"]["limit"], 2);
    assert_refused(&reply, &items[3], "QUOTA_EXHAUSTED");
    // Items past the bucket's four tokens are rate limited, with when to come back.
    for item in &items[4..] {
        assert_refused(&reply, item, "RATE_LIMITED");
        let retry_after = item["error"]["details"]["retryAfterSeconds"].as_u64().expect("retryAfterSeconds");
        assert!((1..=4).contains(&retry_after), "{item}");
    }
    // The bucket is empty: the next request is refused at the edge.
    assert_error(&post_batch(&server, k, &batch_body(&sent[..1], false), None), 429, "RATE_LIMITED");
    rest(1_100);
    let usage = server.usage(k);
    assert_eq!(usage.used + usage.reserved, 2, "{usage:?}");
    assert_eq!(usage.limited_requests, 3, "each refused item counts, and the refused request: {usage:?}");
}

/// Lets a key's bucket refill.
fn rest(ms: u64) {
    std::thread::sleep(std::time::Duration::from_millis(ms));
}

#[test]
fn a_full_queue_refuses_the_remaining_items() {
    // One job running, a queue of one (`serve_one_at_a_time`): of the four new wallets one is
    // admitted and the rest find no room.
    let server = serve_one_at_a_time();
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let wallets = fresh_wallets("batch-busy", 5);
    let running = submit_running(&server, k, &wallets[0]);
    // The running wallet first (deduplicated), then four new ones.
    let sent: Vec<&str> = wallets.iter().map(String::as_str).collect();
    let reply = post_batch(&server, k, &batch_body(&sent, false), None);
    let items = items_of(&reply, &sent);
    assert_eq!(assert_job(&server, &items[0], "RUNNING", true), running.data_str("analysisId"));
    assert_job(&server, &items[1], "QUEUED", false);
    for item in &items[2..] {
        assert_refused(&reply, item, "SERVICE_BUSY");
        assert_eq!(item["error"]["details"]["retryAfterSeconds"], 1, "{item}");
    }
    let usage = server.usage(k);
    assert_eq!(usage.used + usage.reserved, 2, "refused items cost nothing: {usage:?}");
    let store = &server.running().store;
    for wallet in &wallets[2..] {
        assert!(store.latest_for(&key.account, xray::store::Subject::Wallet(wallet)).expect("store").is_none());
    }
}

#[test]
fn an_idempotent_retry_replays_answered_items_and_admits_refused_ones() {
    let server = serve_slow(300, |_| {});
    // 5 tokens per second (one per 200 ms), 4 at most.
    let key = server.key(KeyOptions { rate_per_second: 5, burst: 4, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let charged = || {
        rest(250);
        let usage = server.usage(k);
        usage.used + usage.reserved
    };
    let wallets = fresh_wallets("batch-retry", 4);
    let sent: Vec<&str> = wallets.iter().map(String::as_str).collect();
    let body = batch_body(&sent, false);
    // One token spent first: the batch gets three of its four.
    assert_eq!(server.usage(k).used, 0);
    let first = post_batch(&server, k, &body, Some("payout-7"));
    let first_items = items_of(&first, &sent);
    assert_eq!(first.header("idempotent-replayed"), None);
    let ids: Vec<String> = first_items[..3].iter().map(|item| assert_job(&server, item, "QUEUED", false)).collect();
    assert_refused(&first, &first_items[3], "RATE_LIMITED");
    assert_eq!(charged(), 3);

    rest(850);
    let retry = post_batch(&server, k, &body, Some("payout-7"));
    let retry_items = items_of(&retry, &sent);
    assert_eq!(retry.header("idempotent-replayed"), Some("true"), "{retry:?}");
    for (item, id) in retry_items.iter().zip(&ids) {
        assert_eq!(assert_job(&server, item, "QUEUED", false), *id, "the same job");
        assert_eq!(item["replayed"], true, "{item}");
    }
    let admitted_now = assert_job(&server, &retry_items[3], "QUEUED", false);
    assert_eq!(retry_items[3]["replayed"], false);
    assert!(!ids.contains(&admitted_now));
    assert_eq!(charged(), 4, "each wallet charged once");

    // The same key with another batch: refused whole, nothing admitted.
    rest(250);
    let other = post_batch(&server, k, &batch_body(&sent[..3], false), Some("payout-7"));
    assert_error_details(&other, 409, "IDEMPOTENCY_KEY_REUSED", &json!({ "field": "Idempotency-Key" }));
    // The key is the batch's own: the single endpoint's same key is another request.
    rest(250);
    let bearer = format!("Bearer {k}");
    let headers =
        [("Authorization", bearer.as_str()), ("Content-Type", "application/json"), ("Idempotency-Key", "payout-7")];
    let single = raw(server.addr, "POST", WALLET_PATH, &headers, &wallet_body(&wallets[0]));
    assert!(matches!(single.status, 200 | 202) && single.data()["deduplicated"] == true, "{single:?}");
    assert_eq!(single.data_str("analysisId"), ids[0]);
    assert_eq!(charged(), 4, "deduplicated, not charged");
}

#[test]
fn the_batch_has_its_own_size_and_count_bounds() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let wallets = fresh_wallets("batch-bounds", 101);
    let sent: Vec<&str> = wallets.iter().map(String::as_str).collect();
    let full = post_batch(&server, k, &batch_body(&sent[..100], false), None);
    assert!(full.status == 200 && items_of(&full, &sent[..100]).len() == 100, "{full:?}");
    assert!(batch_body(&sent[..100], false).len() > 4096, "larger than a single request may be");
    for body in [batch_body(&sent, false), json!({ "wallets": [] }).to_string(), json!({ "wallets": [1] }).to_string()]
    {
        let refused = post_batch(&server, k, &body, None);
        assert_error_details(&refused, 400, "INVALID_REQUEST", &json!({ "field": "wallets" }));
    }
    let padded = format!("{{\"wallets\":[\"{CLEAN}\"],\"pad\":\"{}\"}}", "x".repeat(16 * 1024));
    let too_large = post_batch(&server, k, &padded, None);
    assert_error_details(&too_large, 413, "PAYLOAD_TOO_LARGE", &json!({ "maxBytes": 16384 }));
    // The single endpoint keeps the contract's 4 KiB.
    let single = format!("{{\"wallet\":\"{CLEAN}\",\"pad\":\"{}\"}}", "x".repeat(4096));
    assert_error_details(
        &post(server.addr, WALLET_PATH, k, &single),
        413,
        "PAYLOAD_TOO_LARGE",
        &json!({ "maxBytes": 4096 }),
    );
    // The wallet:analyze scope covers it; a compare-only key is refused.
    let compare_only = server.key(KeyOptions::scopes("wallet:compare"));
    let forbidden = post_batch(&server, &compare_only.secret, &batch_body(&[CLEAN], false), None);
    assert_error_details(&forbidden, 403, "INSUFFICIENT_SCOPE", &json!({ "requiredScope": "wallet:analyze" }));
}
