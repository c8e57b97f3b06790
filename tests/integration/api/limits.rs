//! Limits over real loopback HTTP to an in-process server (contract §3 steps 4, 9, 10 and §6):
//! the per-key token bucket (burst, `429 RATE_LIMITED` with `Retry-After`, the `RateLimit`
//! header at zero, `limitedRequests`), quota exhaustion (`429 QUOTA_EXHAUSTED` with
//! `Retry-After` = seconds to the period's end, `details.limit/used/resetsAt`), exact usage
//! figures with nothing charged for rejected or deduplicated requests, and the full admission
//! queue (`503 SERVICE_BUSY`, `Retry-After: 1`, nothing recorded or charged, the admitted
//! jobs all finish). The FAILED-job refund is in `api_jobs`.

use std::time::{Duration, Instant};

use super::support::*;
use serde_json::json;
use xray::clock::now_unix_ms;
use xray::clock::parse_rfc3339_ms;
use xray::store::Subject;

/// A poll of queued work: 200, `QUEUED`, `Retry-After: 1`.
fn assert_unfinished_poll(reply: &Reply) {
    assert_eq!(
        (reply.status, reply.job_status(), reply.header("retry-after")),
        (200, "QUEUED", Some("1")),
        "{reply:?}"
    );
}

fn retry_after(reply: &Reply) -> u64 {
    reply.header("retry-after").unwrap_or_else(|| panic!("no Retry-After: {reply:?}")).parse().expect("seconds")
}

/// Attempts of the burst scenario before a slow machine fails the test.
const BURST_ATTEMPTS_MAX: usize = 5;

/// Spends a fresh 1/s key's burst of three with requests of any kind (each on a fresh
/// connection, so on either listener thread: the bucket is the key's, shared by all threads),
/// then asks a fourth time with a valid work request. `None` when the four took so long that a
/// token may have come back (a loaded machine): the caller tries again with a new key.
fn burst_then_limited(server: &TestServer) -> Option<(TestKey, Reply)> {
    let key = server.key(KeyOptions { rate_per_second: 1, burst: 3, quota: 10, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let started = Instant::now();
    let spent = [
        get(server.addr, STATUS_PATH, k),
        post(server.addr, WALLET_PATH, k, "{oops"),
        get(server.addr, &analysis_path("an_4vJ9JU1bJJE96FWSJKvHsmmF"), k),
    ];
    let limited = post(server.addr, WALLET_PATH, k, &wallet_body(CLEAN));
    if started.elapsed() >= Duration::from_millis(900) {
        return None;
    }
    let tokens: Vec<u64> = spent.iter().map(|r| assert_rate_headers(r, &key).tokens).collect();
    assert_eq!(tokens, [2, 1, 0], "{spent:?}");
    Some((key, limited))
}

#[test]
fn rate_limit_burst_then_429_with_retry_after() {
    let server = serve(|_| {});
    let (key, limited) = (0..BURST_ATTEMPTS_MAX)
        .find_map(|_| burst_then_limited(&server))
        .expect("four requests within 900 ms in at least one attempt");
    let k = key.secret.as_str();
    // The fourth, a valid work request: refused before its body is looked at, not charged.
    assert_error(&limited, 429, "RATE_LIMITED");
    let seconds = retry_after(&limited);
    assert_eq!(seconds, 1, "one token comes back within a second at 1/s");
    assert_eq!(limited.error()["details"]["retryAfterSeconds"].as_u64(), Some(seconds));
    let h = assert_rate_headers(&limited, &key);
    assert_eq!((h.burst, h.window_s, h.tokens), (3, 3, 0), "{h:?}");
    assert!((1..=3).contains(&h.full_in_s), "{h:?}");
    assert_eq!(h.quota_remaining, 10, "the refused request reserved nothing");
    let again = get(server.addr, STATUS_PATH, k);
    assert_error(&again, 429, "RATE_LIMITED");

    // After Retry-After, one request passes.
    std::thread::sleep(Duration::from_secs(seconds) + Duration::from_millis(50));
    let usage = get(server.addr, USAGE_PATH, k);
    assert_eq!(usage.status, 200, "{usage:?}");
    let figures = Usage::of(usage.data());
    assert_eq!(figures.limited_requests, 2, "{figures:?}");
    assert_eq!(figures.units(), (0, 0, 10, 0), "rate-limited requests are never charged");
    assert_eq!((figures.wallet_analysis, figures.comparison), (0, 0));
    assert_eq!(usage.data()["rateLimit"]["burst"].as_u64(), Some(3));
    assert!(server.running().store.latest_for(&key.account, Subject::Wallet(CLEAN)).expect("store").is_none());
}

#[test]
fn quota_exhaustion_with_exact_usage() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions { quota: 2, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let units = || server.usage(k).units();

    // Rejected requests cost nothing.
    let rejected = [
        (post(server.addr, WALLET_PATH, k, "{oops"), 400),
        (post(server.addr, WALLET_PATH, k, &wallet_body("abc")), 400),
        (post(server.addr, COMPARE_PATH, k, &compare_body(CLEAN, CLEAN)), 400),
        (post(server.addr, WALLET_PATH, k, &wallet_body(TOKEN_MINT)), 422),
        (post(server.addr, WALLET_PATH, k, &wallet_body(TOKEN_ACCOUNT)), 422),
        (post(server.addr, COMPARE_PATH, k, &compare_body(CLEAN, SYSTEM_PROGRAM)), 422),
        (raw(server.addr, "POST", WALLET_PATH, &[("Authorization", &format!("Bearer {k}"))], &wallet_body(CLEAN)), 415),
    ];
    for (reply, status) in &rejected {
        assert_eq!(reply.status, *status, "{reply:?}");
    }
    assert_eq!(units(), (0, 0, 2, 0));

    // Two units: a wallet analysis and a comparison; their repeats are free.
    let analysis = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!(assert_rate_headers(&analysis, &key).quota_remaining, 1);
    let (used, reserved, remaining, _) = units();
    assert_eq!((used + reserved, remaining), (1, 1));
    let repeat = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!(repeat.data()["deduplicated"], true);
    let pair = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_A, SYBIL_B));
    let (used, reserved, remaining, _) = units();
    assert_eq!((used + reserved, remaining), (2, 0));
    for reply in [&analysis, &pair] {
        assert_eq!(server.finish(&reply.poll_path(), k).job_status(), "READY");
    }
    let usage = server.usage(k);
    assert_eq!(
        usage,
        Usage {
            limit: 2,
            used: 2,
            reserved: 0,
            remaining: 0,
            wallet_analysis: 1,
            comparison: 1,
            transaction_scan: 0,
            refunded: 0,
            limited_requests: 0
        }
    );

    // The third unit is refused, whichever operation asks for it.
    let usage_doc = get(server.addr, USAGE_PATH, k);
    let resets_at = usage_doc.data()["quota"]["resetsAt"].as_str().expect("resetsAt").to_owned();
    assert_eq!(usage_doc.data()["period"]["end"].as_str(), Some(resets_at.as_str()));
    for (path, body) in [
        (WALLET_PATH, wallet_body(OPEN_DELEGATION)),
        (COMPARE_PATH, compare_body(SYBIL_C, SYBIL_D)),
        (WALLET_PATH, refresh_body(CLEAN)),
    ] {
        let exhausted = post(server.addr, path, k, &body);
        assert_error_details(
            &exhausted,
            429,
            "QUOTA_EXHAUSTED",
            &json!({"limit": 2, "used": 2, "resetsAt": resets_at}),
        );
        let message = exhausted.error()["message"].as_str().unwrap_or_default();
        assert!(message.contains("2 of 2 units used, 0 reserved"), "{message}");
        let seconds = retry_after(&exhausted) as i64;
        let until_reset =
            (parse_rfc3339_ms(&resets_at).expect("time").saturating_sub(now_unix_ms()) + 999) as i64 / 1_000;
        assert!((seconds - until_reset).abs() <= 2, "Retry-After {seconds} s, period ends in {until_reset} s");
        let h = assert_rate_headers(&exhausted, &key);
        assert_eq!(h.quota_remaining, 0);
        assert!((h.reset_in_s as i64 - until_reset).abs() <= 2, "{h:?}");
    }
    // A fresh result is still served: dedup comes before the quota.
    let fresh = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!((fresh.status, &fresh.data()["deduplicated"]), (200, &json!(true)));
    let fresh = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_B, SYBIL_A));
    assert_eq!((fresh.status, &fresh.data()["deduplicated"]), (200, &json!(true)));
    assert_eq!(server.usage(k), usage, "refusals and reuse changed nothing");
    let status = server.status(k);
    assert_eq!((status["quota"]["used"].as_u64(), status["quota"]["remaining"].as_u64()), (Some(2), Some(0)));
}

#[test]
fn full_queue_answers_503_and_records_nothing() {
    let server = serve_one_at_a_time();
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let wallets = fresh_wallets("busy", 8);
    let mut admitted = vec![submit_running(&server, k, &wallets[0]).poll_path()];
    let mut busy = None;
    for wallet in &wallets[1..] {
        let reply = post(server.addr, WALLET_PATH, k, &wallet_body(wallet));
        if reply.status == 503 {
            busy = Some((wallet.clone(), reply));
            break;
        }
        assert_eq!((reply.status, &reply.data()["deduplicated"]), (202, &json!(false)), "{reply:?}");
        admitted.push(reply.poll_path());
    }
    let (busy_wallet, reply) = busy.expect("a queue of one fills up");
    assert_eq!(admitted.len(), 2, "one running, one queued: {admitted:?}");
    assert_error_details(&reply, 503, "SERVICE_BUSY", &json!({"retryAfterSeconds": 1}));
    assert_eq!(retry_after(&reply), 1);
    assert_rate_headers(&reply, &key);
    // The queue is full and the service says so.
    assert_eq!(server.status(k)["service"]["status"], "degraded");
    assert_unfinished_poll(&get(server.addr, &admitted[1], k));

    // Nothing recorded or charged for the refused request.
    let usage = server.usage(k);
    assert_eq!(usage.used + usage.reserved, admitted.len() as u64, "{usage:?}");
    assert_eq!((usage.wallet_analysis, usage.remaining), (usage.used, 1_000 - admitted.len() as u64));
    let store = &server.running().store;
    assert!(store.latest_for(&key.account, Subject::Wallet(&busy_wallet)).expect("store").is_none());

    // Every admitted job finishes; then the refused wallet is accepted as new work.
    for path in &admitted {
        assert_eq!(server.finish(path, k).job_status(), "READY");
    }
    let usage = server.usage(k);
    assert_eq!((usage.used, usage.reserved, usage.wallet_analysis), (admitted.len() as u64, 0, admitted.len() as u64));
    assert_eq!(server.status(k)["service"]["status"], "ok");
    let retried = submit(&server, k, WALLET_PATH, &wallet_body(&busy_wallet));
    assert_eq!((retried.status, &retried.data()["deduplicated"]), (202, &json!(false)));
    assert_eq!(server.finish(&retried.poll_path(), k).job_status(), "READY");
}

#[test]
fn draining_refuses_new_work_with_503_and_serves_the_rest() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let done = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!(server.finish(&done.poll_path(), k).job_status(), "READY");

    // The first step of a graceful stop: health checks fail, new work is refused.
    server.running().api.start_draining();
    let health = raw(server.addr, "GET", "/healthz", &[], "");
    assert_eq!(health.status, 503, "{health:?}");
    assert_no_rate_headers(&health);
    for (path, body) in [(WALLET_PATH, wallet_body(OPEN_DELEGATION)), (COMPARE_PATH, compare_body(SYBIL_A, SYBIL_B))] {
        let refused = post(server.addr, path, k, &body);
        assert_error_details(&refused, 503, "SERVICE_BUSY", &json!({"retryAfterSeconds": 1}));
        assert_eq!(retry_after(&refused), 1);
        assert_rate_headers(&refused, &key);
    }
    // Reads are still served, and nothing was charged for the refusals.
    assert_eq!(get(server.addr, &done.poll_path(), k).job_status(), "READY");
    assert_eq!(server.usage(k).units(), (1, 0, 999, 0));
}

#[test]
fn an_account_at_its_live_job_cap_gets_429_too_many_jobs_and_other_accounts_are_served() {
    // A ledger that answers every call after 800 ms keeps the first jobs live.
    let server = serve_slow(800, |c| {
        c.live_jobs_per_account_max = 2;
        c.queue_capacity = 16;
    });
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let wallets = fresh_wallets("share", 3);
    let live: Vec<String> =
        wallets[..2].iter().map(|w| submit(&server, k, WALLET_PATH, &wallet_body(w)).poll_path()).collect();
    let refused = post(server.addr, WALLET_PATH, k, &wallet_body(&wallets[2]));
    assert_error_details(&refused, 429, "TOO_MANY_JOBS", &json!({"limit": 2, "retryAfterSeconds": 2}));
    assert_eq!(retry_after(&refused), 2);
    assert_rate_headers(&refused, &key);
    // Nothing charged for it; a request deduplicated onto a live job is still answered.
    let usage = server.usage(k);
    assert_eq!((usage.used, usage.reserved), (0, 2), "{usage:?}");
    let again = post(server.addr, WALLET_PATH, k, &wallet_body(&wallets[0]));
    assert_eq!((again.status, &again.data()["deduplicated"]), (202, &json!(true)), "{again:?}");
    // A comparison is a job of the account too.
    let compare = post(server.addr, COMPARE_PATH, k, &compare_body(&wallets[0], &wallets[2]));
    assert_error_details(&compare, 429, "TOO_MANY_JOBS", &json!({"limit": 2, "retryAfterSeconds": 2}));
    // Another account is not affected.
    let other = server.key(KeyOptions::default().in_account("acct_other"));
    assert_eq!(post(server.addr, WALLET_PATH, &other.secret, &wallet_body(&wallets[2])).status, 202);
    // Once one finishes, the account may queue another.
    assert_eq!(server.finish(&live[0], k).job_status(), "READY");
    assert_eq!(submit(&server, k, WALLET_PATH, &wallet_body(&wallets[2])).status, 202);
    assert_eq!(server.usage(k).used + server.usage(k).reserved, 3);
}

/// Issue #13 (9): work admitted under a key that is rotated while it runs is counted on the
/// successor when it ends — used for READY, refunded for FAILED — in memory and in the store.
#[test]
fn work_in_flight_across_a_rotation_is_counted_on_the_successor() {
    let mut server = serve_slow(300, |_| {});
    let old = server.key(KeyOptions { quota: 10, ..KeyOptions::default() });
    let ready = submit(&server, &old.secret, WALLET_PATH, &wallet_body(CLEAN));
    let failed = submit(&server, &old.secret, WALLET_PATH, &wallet_body(DRAINER_PROGRAM));
    assert_eq!(server.usage(&old.secret).units(), (0, 2, 8, 0), "both units in flight at the rotation");

    let rotated = server.admin("POST", &format!("/v1/admin/keys/{}/rotate", old.id));
    assert_eq!(rotated.status, 201, "{rotated:?}");
    let new = rotated.data_str("key");
    assert_eq!(server.usage(&new).units(), (0, 0, 10, 0), "the successor starts with the old key's used units");

    assert_eq!(server.finish(&ready.poll_path(), &new).job_status(), "READY");
    assert_eq!(server.finish(&failed.poll_path(), &new).job_status(), "FAILED");
    let want = (1, 0, 9, 1);
    let usage = eventually("the successor's usage", || server.usage(&new), |u| u.units() == want);
    assert_eq!(usage.wallet_analysis, 1);
    server.restart();
    assert_eq!(server.usage(&new).units(), want, "the store counted them on the successor too");
}
