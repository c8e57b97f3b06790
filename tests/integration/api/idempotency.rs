//! `Idempotency-Key` over real loopback HTTP to an in-process server with a real RocksDB: a
//! repeat gets the first answer (same status, same body, `Idempotent-Replayed: true`) and no
//! new charge — for a new job, a deduplicated one and after a restart; the same key with
//! another request is `409 IDEMPOTENCY_KEY_REUSED`; keys are per account; a malformed key is
//! `400`; an account keeps its newest `IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX` keys, and an evicted
//! key used again is a new request. Jobs read the demo ledger through the local JSON-RPC server with added latency, so
//! they stay live while the test repeats requests.

use super::support::*;

const KEY_HEADER: &str = "Idempotency-Key";

/// POST `body` to `path` with `key` as the Idempotency-Key.
fn post_with(server: &TestServer, secret: &str, path: &str, body: &str, key: &str) -> Reply {
    let bearer = format!("Bearer {secret}");
    let headers = [("Authorization", bearer.as_str()), ("Content-Type", "application/json"), (KEY_HEADER, key)];
    raw(server.addr, "POST", path, &headers, body)
}

/// Asserts `again` is `first` sent again, marked as a replay.
fn assert_replay(first: &Reply, again: &Reply) {
    assert_eq!(again.status, first.status, "{again:?}");
    assert_eq!(again.raw_body, first.raw_body, "the same body byte for byte");
    assert_eq!(again.header("location"), first.header("location"));
    assert_eq!(again.header("idempotent-replayed"), Some("true"), "{again:?}");
    assert_eq!(first.header("idempotent-replayed"), None, "{first:?}");
}

#[test]
fn a_repeat_gets_the_first_answer_and_no_new_charge() {
    let mut server = serve_slow(300, |_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();

    let first = post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), "order-1");
    assert_eq!(first.status, 202, "{first:?}");
    assert_eq!(server.usage(k).reserved, 1);
    // The same request, spelled differently (whitespace, an unknown field): the same answer.
    let respelled = format!("{{ \"note\": 1, \"wallet\" : \"{OPEN_DELEGATION}\" }}");
    assert_replay(&first, &post_with(&server, k, WALLET_PATH, &respelled, "order-1"));
    assert_eq!(server.usage(k).reserved, 1, "no second charge");

    // The same key asking something else: refused, nothing recorded.
    for (path, body) in [
        (WALLET_PATH, wallet_body(OWNER_CHANGE_DRAINED)),
        (WALLET_PATH, refresh_body(OPEN_DELEGATION)),
        (COMPARE_PATH, compare_body(SYBIL_A, SYBIL_B)),
    ] {
        let reused = post_with(&server, k, path, &body, "order-1");
        assert_error_details(
            &reused,
            409,
            "IDEMPOTENCY_KEY_REUSED",
            &serde_json::json!({ "field": "Idempotency-Key" }),
        );
    }
    assert_eq!((server.usage(k).used + server.usage(k).reserved), 1);

    // Keys are per account: another account's same key is its own first request.
    let other = server.key(KeyOptions::default());
    let theirs = post_with(&server, &other.secret, WALLET_PATH, &wallet_body(OPEN_DELEGATION), "order-1");
    assert_eq!((theirs.status, theirs.header("idempotent-replayed")), (202, None), "{theirs:?}");
    assert_ne!(theirs.data()["analysisId"], first.data()["analysisId"]);

    // Once the job is READY the repeat still gets the first answer (202 QUEUED), unchanged.
    server.finish(&first.poll_path(), k);
    assert_replay(&first, &post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), "order-1"));
    // ... and after a restart: the answer was written with the job. (The restarted test
    // server listens on another port: URLs name the server's base URL of now.)
    let old_base = server.url("");
    server.restart();
    let again = post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), "order-1");
    let rebased = String::from_utf8_lossy(&again.raw_body).replace(&server.url(""), &old_base);
    assert_eq!((again.status, again.header("idempotent-replayed")), (202, Some("true")), "{again:?}");
    assert_eq!(rebased.as_bytes(), first.raw_body.as_slice(), "the first answer after a restart");
    let usage = server.usage(k);
    assert_eq!((usage.used, usage.reserved, usage.wallet_analysis), (1, 0, 1), "charged once: {usage:?}");
}

#[test]
fn a_deduplicated_answer_is_kept_as_answered() {
    let server = serve_slow(300, |_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let live = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_A, SYBIL_B));
    let first = post_with(&server, k, COMPARE_PATH, &compare_body(SYBIL_A, SYBIL_B), "dedup-1");
    assert_eq!((first.status, first.data()["deduplicated"].as_bool()), (202, Some(true)), "{first:?}");
    assert_eq!(first.data()["pairId"], live.data()["pairId"]);
    server.finish(&first.poll_path(), k);
    // Now a new request would reuse the READY result (200); the repeat is the first answer.
    assert_replay(&first, &post_with(&server, k, COMPARE_PATH, &compare_body(SYBIL_A, SYBIL_B), "dedup-1"));
    // The pair named the other way round is another request.
    let swapped = post_with(&server, k, COMPARE_PATH, &compare_body(SYBIL_B, SYBIL_A), "dedup-1");
    assert_eq!(swapped.status, 409, "{swapped:?}");
    assert_eq!(server.usage(k).comparison, 1, "one comparison charged");
}

#[test]
fn an_account_keeps_its_newest_keys_and_an_evicted_key_is_a_new_request() {
    use xray::config::IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX as CAP;
    let server = serve_slow(300, |_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let store = &server.running().store;
    let first = post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), "order-1");
    assert_eq!(first.status, 202, "{first:?}");
    assert_eq!(store.answer_count(&key.account).unwrap(), 1);
    // The account then sends CAP newer keys (their answers written as a deduplicated POST's
    // would be): the store keeps the newest CAP, so "order-1", the oldest, is evicted.
    let later_ms = xray::clock::now_unix_ms() + 1;
    for i in 0..CAP as u64 {
        let mut key_digest = [0xAB; 32];
        key_digest[..8].copy_from_slice(&i.to_be_bytes());
        let answer = xray::store::IdempotentAnswer {
            account: key.account.clone(),
            key_digest,
            fingerprint: [0; 32],
            job_id: "an_seeded".into(),
            state: xray::store::JobState::Queued,
            deduplicated: true,
            created_at_ms: later_ms,
        };
        assert_eq!(store.put_answer(&answer).unwrap(), None);
    }
    assert_eq!(store.answer_count(&key.account).unwrap(), CAP as u64, "the cap holds");
    // Used again, the evicted key is a new request (deduplicated onto its job, or its fresh
    // result reused), not a replay; its new answer is kept and replayed from then on.
    let again = post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), "order-1");
    assert!(matches!(again.status, 200 | 202), "{again:?}");
    assert_eq!(again.header("idempotent-replayed"), None, "{again:?}");
    assert_eq!(again.data()["analysisId"], first.data()["analysisId"]);
    assert_replay(&again, &post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), "order-1"));
    assert_eq!(store.answer_count(&key.account).unwrap(), CAP as u64);
    let usage = server.usage(k);
    assert_eq!(usage.used + usage.reserved, 1, "charged once: {usage:?}");
}

#[test]
fn malformed_keys_are_refused_before_anything_is_recorded() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    for bad in ["k".repeat(256), "tab\there".to_owned()] {
        let reply = post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), &bad);
        assert_error_details(&reply, 400, "INVALID_REQUEST", &serde_json::json!({ "field": "Idempotency-Key" }));
    }
    let ok = post_with(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION), &"k".repeat(255));
    assert_eq!(ok.status, 202, "{ok:?}");
    let usage = server.usage(k);
    assert_eq!(usage.used + usage.reserved, 1, "{usage:?}");
}
