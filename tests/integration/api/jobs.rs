//! The life of a job over real loopback HTTP to an in-process server (contract §3 steps 7–8,
//! §4): polls of unfinished work (`200`, `QUEUED`/`RUNNING`, `Retry-After: 1`), long polls
//! (`wait` answers as soon as the job is READY, within the wait; its bounds 0–30), dedup of
//! running work, reuse of fresh READY results, `refresh`, the freshness window, a comparison
//! citing the account's analyses, and an analysis that the ledger shows is no wallet: FAILED
//! with `ACCOUNT_NOT_ELIGIBLE`, refunded. Jobs that must stay running for a while read the
//! demo ledger through the local JSON-RPC server with added latency.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::support::*;
use serde_json::{json, Value};
use xray::config::IoDriver;
use xray::devtools::rpc_server::FaultPlan;
use xray::store::Subject;

/// Asserts a poll answer of unfinished work.
fn assert_unfinished(reply: &Reply) {
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(matches!(reply.job_status(), "QUEUED" | "RUNNING"), "{reply:?}");
    assert_eq!(reply.header("retry-after"), Some("1"), "{reply:?}");
    for absent in ["xray", "comparison", "completedAt", "error"] {
        assert!(reply.data().get(absent).is_none_or(|v| v.is_null()), "{absent} while unfinished: {reply:?}");
    }
    assert!(is_timestamp(&reply.data()["createdAt"]), "{reply:?}");
}

/// Polls `path` with `wait` once; returns the reply and how long it took.
fn long_poll(server: &TestServer, path: &str, key: &str, wait_s: u64) -> (Reply, Duration) {
    let started = Instant::now();
    let reply = get(server.addr, &format!("{path}?wait={wait_s}"), key);
    (reply, started.elapsed())
}

#[test]
fn unfinished_work_polls_and_long_polls() {
    let server = serve_slow(400, |_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();

    for (path, body, payload) in [
        (WALLET_PATH, wallet_body(OPEN_DELEGATION), "xray"),
        (COMPARE_PATH, compare_body(SYBIL_A, SYBIL_B), "comparison"),
    ] {
        let accepted = submit(&server, k, path, &body);
        let poll = accepted.poll_path();
        // Every ledger call takes 400 ms: right after admission the job cannot be done.
        let pending = get(server.addr, &poll, k);
        assert_unfinished(&pending);
        assert_rate_headers(&pending, &key);
        let (pending, _) = long_poll(&server, &poll, k, 0);
        assert_unfinished(&pending);
        // One request, held until READY (a few ledger round trips), well within the wait.
        let (ready, took) = long_poll(&server, &poll, k, 10);
        assert_eq!((ready.status, ready.job_status()), (200, "READY"), "{ready:?}");
        assert!(took < Duration::from_secs(10), "answered at READY, not at the end of the wait: {took:?}");
        assert!(ready.data()[payload].is_object() && ready.header("retry-after").is_none(), "{ready:?}");
        // Finished work answers a long poll at once.
        let (again, took) = long_poll(&server, &poll, k, 30);
        assert_eq!((again.raw_body, took < Duration::from_secs(2)), (ready.raw_body, true), "{took:?}");
    }

    // A wait shorter than the job: held about that long, then the job as it is.
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    let (reply, took) = long_poll(&server, &accepted.poll_path(), k, 1);
    assert!(took < Duration::from_millis(1_900), "{took:?}");
    if reply.job_status() != "READY" {
        assert_unfinished(&reply);
        assert!(took >= Duration::from_millis(900), "held for the wait: {took:?}");
    }
    // `wait=5` on a job of ~1–2 s: READY in one request, in less than the wait.
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(FOREIGN_STAKE_AUTHORITY));
    let (ready, took) = long_poll(&server, &accepted.poll_path(), k, 5);
    assert_eq!(ready.job_status(), "READY", "{took:?}: {ready:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn long_polls_are_woken_on_the_epoll_driver_too() {
    // The wake-up crosses runtimes: a compute thread finishes the job, a listener thread on
    // monoio's epoll driver holds the poll.
    let server = serve_slow(300, |c| c.io_driver = IoDriver::Epoll);
    let key = server.key(KeyOptions::default());
    let accepted = submit(&server, &key.secret, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    assert_unfinished(&get(server.addr, &accepted.poll_path(), &key.secret));
    let (ready, took) = long_poll(&server, &accepted.poll_path(), &key.secret, 10);
    assert_eq!(ready.job_status(), "READY", "{ready:?}");
    assert!(took < Duration::from_secs(5), "woken at READY: {took:?}");
}

#[test]
fn a_client_that_hangs_up_mid_wait_gives_its_waiter_slot_back() {
    // Every ledger answer takes 2 s, so the job outlives the client's patience.
    let server = serve_slow(2_000, |c| c.long_poll_waiters_max = 1);
    let key = server.key(KeyOptions::default());
    let accepted = submit(&server, &key.secret, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    let waiters = || server.running().app.waiters.load(std::sync::atomic::Ordering::Acquire);
    let path = format!("{}?wait=25", accepted.poll_path());
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {}\r\n\r\n", key.secret);
    let mut conn = Conn::open(server.addr);
    std::io::Write::write_all(&mut conn.stream, request.as_bytes()).expect("send");
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters() != 1 {
        assert!(Instant::now() < deadline, "the poll never started waiting");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(conn); // the client gives up
    let deadline = Instant::now() + Duration::from_secs(5);
    while waiters() != 0 {
        assert!(Instant::now() < deadline, "the slot of a closed connection was never given back");
        std::thread::sleep(Duration::from_millis(20));
    }
    // With the only slot free again, a new long poll is held (not answered at once).
    let (reply, took) = long_poll(&server, &accepted.poll_path(), &key.secret, 1);
    assert!(took >= Duration::from_millis(900) || reply.job_status() == "READY", "{took:?}: {reply:?}");
}

/// A finished job's poll is answered from memory after the first read (`jobs::finished`); the
/// answer must be the same bytes the store gives a restarted server that has nothing in memory.
#[test]
fn finished_polls_from_memory_equal_those_from_the_store() {
    let mut server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let analysis = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    let pair = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_C, SYBIL_D));
    let paths: Vec<String> = [analysis, pair].iter().map(|r| r.poll_path()).collect();
    let from_memory: Vec<Vec<u8>> = paths
        .iter()
        .map(|path| {
            let first = server.finish(path, k);
            assert_eq!(first.job_status(), "READY", "{first:?}");
            let again = get(server.addr, path, k);
            assert_eq!(again.raw_body, first.raw_body, "the kept answer is the first one");
            first.raw_body
        })
        .collect();
    server.restart();
    for (path, remembered) in paths.iter().zip(&from_memory) {
        let from_store = get(server.addr, path, k);
        assert_eq!(from_store.status, 200, "{from_store:?}");
        assert_eq!(&from_store.raw_body, remembered, "{path}: memory and store answer alike, byte for byte");
    }
    let other = server.key(KeyOptions::default());
    for path in &paths {
        assert_eq!(get(server.addr, path, &other.secret).status, 404, "another account's job stays hidden");
    }
}

/// An address the account alone refuses (an executable program) costs its account read and
/// the few reads started beside it — not its history: the drainer program's history in the
/// demo ledger is many transactions, and reading it took a page of signatures and a batch of
/// getTransaction calls before the job was refunded.
#[test]
fn a_ledger_ineligible_address_costs_its_account_read_not_its_history() {
    let server = serve_rpc(FaultPlan::default(), |_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let before = server.ledger_calls();
    let failed = server.finish(&submit(&server, k, WALLET_PATH, &wallet_body(DRAINER_PROGRAM)).poll_path(), k);
    assert_eq!((failed.job_status(), &failed.data()["error"]["code"]), ("FAILED", &json!("ACCOUNT_NOT_ELIGIBLE")));
    let made = server.ledger_calls_since(&before);
    // The account read, and at most what was started beside it and sent before its answer came
    // (how much of that depends on the machine's load: the two token-account lists, the nonce
    // accounts, the signature pages) — never the history's transactions (before the fix: a
    // batch of getTransaction calls).
    const ACCOUNT: [&str; 2] = ["getAccountInfo", "getMultipleAccounts"];
    const BESIDE: [&str; 3] = ["getTokenAccountsByOwner", "getProgramAccounts", "getSignaturesForAddress"];
    assert!(made.keys().any(|m| ACCOUNT.contains(&m.as_str())), "{made:?}");
    let others: Vec<_> =
        made.keys().filter(|m| !ACCOUNT.contains(&m.as_str()) && !BESIDE.contains(&m.as_str())).collect();
    assert!(others.is_empty(), "reads beyond the account and what was started beside it: {made:?}");
    assert!(made.get("getTokenAccountsByOwner").copied().unwrap_or(0) <= 2, "{made:?}");
}

/// A ledger source that cannot open (a snapshot directory that is not there) fails the start
/// with its reason, instead of a server that admits and charges jobs it can never run; and the
/// failed start created no first key (the next, working start prints one).
#[test]
fn a_server_without_a_working_ledger_source_does_not_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-snapshot");
    let mut config = config_in(dir.path(), |c| c.ledger = xray::config::SourceSpec::Snapshot { dir: missing });
    let error = xray::serve::start(&config).err().expect("the start fails");
    assert!(error.contains("ledger source") && error.contains("no-such-snapshot"), "{error}");
    config.ledger = xray::config::SourceSpec::Demo { seed: xray::config::DEMO_SEED_DEFAULT };
    let running = xray::serve::start(&config).expect("starts with a ledger");
    assert!(running.first_key.is_some(), "the first key is issued by the first start that serves");
    running.shutdown().expect("clean shutdown");
}

/// A job whose process went down at every start (an abort, the OOM killer) is left RUNNING
/// with its starts counted; at `JOB_STARTS_MAX` the next start ends it FAILED and refunds its
/// unit instead of running it (and taking the process down) again. Simulated: the store is
/// given the record such a process leaves, then the server starts on it.
#[test]
fn a_job_that_never_finished_is_not_started_again() {
    use xray::store::{JobKind, JobRecord, Store};
    let mut server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let id = "an_CkBqBaVNZQivNt9KpjngFq";
    let now_ms = xray::clock::now_unix_ms();
    let period_ms = xray::limits::quota::period_start_ms(now_ms, xray::limits::quota::QuotaPeriod::Month);
    server.restart_with_store(|store| {
        let kind = JobKind::Analysis { wallet: CLEAN.to_owned() };
        let (account, key_id, version) = (key.account.clone(), key.id.clone(), "xray-1".to_owned());
        let record = JobRecord::queued(id.into(), kind, account, key_id, now_ms - 1, false, true, period_ms, version);
        store.admit(&record, None).expect("admitted");
        for start in 1..=xray::config::JOB_STARTS_MAX {
            assert_eq!(store.mark_running(id, now_ms).expect("started").starts, start);
        }
    });
    let failed = server.finish(&analysis_path(id), &key.secret);
    assert_eq!((failed.job_status(), &failed.data()["error"]["code"]), ("FAILED", &json!("ANALYSIS_FAILED")));
    let message = failed.data()["error"]["message"].as_str().unwrap_or_default();
    let starts = format!("started {} times", xray::config::JOB_STARTS_MAX);
    assert!(message.contains(&starts), "{failed:?}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved, usage.refunded), (0, 0, 1), "refunded: {usage:?}");
}

#[test]
fn wait_is_whole_seconds_from_0_to_30() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let analysis = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    let pair = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_C, SYBIL_D));
    let finished: Vec<String> = [analysis, pair].iter().map(|r| r.poll_path()).collect();
    for path in &finished {
        assert_eq!(server.finish(path, k).job_status(), "READY");
    }
    let unknown = analysis_path("an_4vJ9JU1bJJE96FWSJKvHsmmF");
    // (query, accepted?) — `wait` is checked before the id is looked up.
    let queries = [
        ("wait=0", true),
        ("wait=30", true),
        ("wait=007", true),
        ("other=1&wait=2", true),
        ("wait=3&wait=abc", true),
        ("waiting=99", true),
        ("wait=31", false),
        ("wait=-1", false),
        ("wait=abc", false),
        ("wait=", false),
        ("wait", false),
        ("wait=1.5", false),
        ("wait=+1", false),
        ("wait=99999999999", false),
        ("wait=%201", false),
    ];
    for (query, accepted) in queries {
        for path in finished.iter().chain([&unknown]) {
            let (reply, took) = {
                let started = Instant::now();
                (get(server.addr, &format!("{path}?{query}"), k), started.elapsed())
            };
            let context = format!("{path}?{query}: {reply:?}");
            assert!(took < Duration::from_secs(2), "{context}");
            match (accepted, path == &unknown) {
                (true, false) => assert_eq!((reply.status, reply.job_status()), (200, "READY"), "{context}"),
                (true, true) => assert_error(&reply, 404, "NOT_FOUND"),
                (false, _) => {
                    assert_error_details(&reply, 400, "INVALID_REQUEST", &json!({"field": "wait"}));
                    assert_rate_headers(&reply, &key);
                }
            }
        }
    }
}

/// One kind of work, as the dedup scenario needs it.
struct Work {
    path: &'static str,
    body: String,
    /// The same work asked differently (explicit `refresh: false`, the pair reversed).
    same: String,
    refresh: String,
    id_field: &'static str,
    /// The operation's counter in `byOperation`.
    counter: fn(&Usage) -> u64,
}

#[test]
fn analysis_dedup_freshness_and_refresh() {
    dedup_scenario(Work {
        path: WALLET_PATH,
        body: wallet_body(OPEN_DELEGATION),
        same: format!(r#"{{"wallet":"{OPEN_DELEGATION}","refresh":false,"unknownField":[1]}}"#),
        refresh: refresh_body(OPEN_DELEGATION),
        id_field: "analysisId",
        counter: |u| u.wallet_analysis,
    });
}

#[test]
fn comparison_dedup_freshness_and_refresh() {
    dedup_scenario(Work {
        path: COMPARE_PATH,
        body: compare_body(SYBIL_A, SYBIL_B),
        same: format!(r#"{{"walletA":"{SYBIL_B}","walletB":"{SYBIL_A}","refresh":null}}"#),
        refresh: format!(r#"{{"walletA":"{SYBIL_A}","walletB":"{SYBIL_B}","refresh":true}}"#),
        id_field: "pairId",
        counter: |u| u.comparison,
    });
}

fn dedup_scenario(work: Work) {
    let server = serve_slow(400, |_| {});
    let key = server.key(KeyOptions { quota: 10, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let charged = |n: u64| {
        let usage = server.usage(k);
        assert_eq!((usage.used + usage.reserved, usage.remaining, usage.refunded), (n, 10 - n, 0), "{usage:?}");
        usage
    };

    // New work: 202, charged.
    let first = submit(&server, k, work.path, &work.body);
    assert_eq!((first.status, &first.data()["deduplicated"]), (202, &json!(false)));
    let id = first.data_str(work.id_field);
    charged(1);
    // Asked again while it runs: the same job, deduplicated, not charged.
    let running = submit(&server, k, work.path, &work.same);
    assert_eq!((running.status, running.data_str(work.id_field)), (202, id.clone()), "{running:?}");
    assert!(matches!(running.job_status(), "QUEUED" | "RUNNING") && running.data()["deduplicated"] == true);
    assert_eq!(running.data()["createdAt"], first.data()["createdAt"]);
    charged(1);

    // READY and fresh: 200 with the same job, not charged.
    let ready = server.finish(&first.poll_path(), k);
    assert_eq!(ready.job_status(), "READY");
    for body in [&work.body, &work.same] {
        let fresh = submit(&server, k, work.path, body);
        assert_eq!((fresh.status, fresh.data_str(work.id_field), fresh.job_status()), (200, id.clone(), "READY"));
        assert_eq!(fresh.data()["deduplicated"], true);
    }
    let usage = charged(1);
    assert_eq!((usage.used, usage.reserved, (work.counter)(&usage)), (1, 0, 1));

    // `refresh: true`: new work, charged — and what later requests of the same work join.
    let refreshed = submit(&server, k, work.path, &work.refresh);
    assert_eq!((refreshed.status, &refreshed.data()["deduplicated"]), (202, &json!(false)), "{refreshed:?}");
    let refreshed_id = refreshed.data_str(work.id_field);
    if work.id_field == "analysisId" {
        assert_ne!(refreshed_id, id, "a new analysis");
    } else {
        assert_eq!(refreshed_id, id, "pairId is the pair's, whatever the job");
    }
    assert_ne!(refreshed.data()["createdAt"], first.data()["createdAt"]);
    charged(2);
    let joined = submit(&server, k, work.path, &work.body);
    assert_eq!((joined.status, joined.data_str(work.id_field)), (202, refreshed_id.clone()));
    assert_eq!(joined.data()["createdAt"], refreshed.data()["createdAt"], "joins the refresh job");
    charged(2);
    // `refresh` starts new work even while equal work runs.
    let again = submit(&server, k, work.path, &work.refresh);
    assert_eq!((again.status, &again.data()["deduplicated"]), (202, &json!(false)), "{again:?}");
    assert_ne!(again.data()["createdAt"], refreshed.data()["createdAt"]);
    charged(3);
    server.finish(&refreshed.poll_path(), k);
    let newest = server.finish(&again.poll_path(), k);
    assert_eq!(newest.data()["createdAt"], again.data()["createdAt"], "the poll URL reads the newest job");
    // A pair's poll URL reads only its newest job, so the older refresh job (running on another
    // compute thread) may still hold its reservation here: wait for it to settle.
    eventually("every job settled", || server.usage(k), |u| u.reserved == 0);
    let newest_again = get(server.addr, &again.poll_path(), k);
    assert_eq!(
        newest_again.data()["createdAt"],
        again.data()["createdAt"],
        "an older job finishing later does not take over"
    );
    let usage = charged(3);
    assert_eq!((usage.used, usage.reserved, (work.counter)(&usage)), (3, 0, 3));
    // The first job stays readable, and the same ledger data gave the same payloads — but for
    // an analysis's `changes`, which name the analysis before it (its own history).
    let first_again = get(server.addr, &first.poll_path(), k);
    assert_eq!(first_again.status, 200);
    let field = if work.id_field == "analysisId" { "xray" } else { "comparison" };
    let without_changes = |reply: &Reply| {
        let mut payload: serde_json::Value = serde_json::from_slice(reply.payload_bytes(field)).expect("payload");
        payload.as_object_mut().expect("object").remove("changes");
        payload
    };
    assert_eq!(without_changes(&newest), without_changes(&ready), "deterministic payload");
}

#[test]
fn equal_requests_racing_in_make_one_charged_job() {
    // A slow ledger keeps the job live while every racer arrives; two listener threads take them.
    let server = serve_slow(300, |_| {});
    let key = server.key(KeyOptions::default());
    for (path, body) in [(WALLET_PATH, wallet_body(CLEAN)), (COMPARE_PATH, compare_body(SYBIL_A, SYBIL_B))] {
        let racers = 12;
        let start = std::sync::Barrier::new(racers);
        let replies: Vec<Reply> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..racers)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        post(server.addr, path, &key.secret, &body)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("racer")).collect()
        });
        let admitted: Vec<&Reply> = replies.iter().filter(|r| r.data()["deduplicated"] == false).collect();
        assert_eq!(admitted.len(), 1, "exactly one racer is admitted: {replies:?}");
        let poll_urls: BTreeSet<&str> =
            replies.iter().map(|r| r.data()["pollUrl"].as_str().expect("pollUrl")).collect();
        assert_eq!(poll_urls.len(), 1, "every racer gets the one job: {poll_urls:?}");
        assert!(replies.iter().all(|r| r.status == 202), "{replies:?}");
    }
    let usage = server.usage(&key.secret);
    assert_eq!(usage.used + usage.reserved, 2, "one unit per job, none for the deduplicated: {usage:?}");
}

#[test]
fn a_failing_ledger_fails_the_job_with_upstream_unavailable_and_refunds() {
    // Every JSON-RPC call answers 500: the source gives up after its bounded retries.
    let server = serve_rpc(FaultPlan { share_500: 1.0, ..FaultPlan::default() }, |_| {});
    let key = server.key(KeyOptions { quota: 5, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    let failed = server.finish(&accepted.poll_path(), k);
    let data = failed.data();
    assert_eq!(
        (data["status"].as_str(), data["error"]["code"].as_str()),
        (Some("FAILED"), Some("UPSTREAM_UNAVAILABLE"))
    );
    let message = data["error"]["message"].as_str().expect("message");
    assert!(!message.is_empty() && !message.contains("127.0.0.1"), "no upstream address leaks: {message}");
    assert!(data.get("xray").is_none(), "{data}");
    assert_eq!(server.usage(k).units(), (0, 0, 5, 1), "refunded");
    assert_eq!(server.status(k)["service"]["status"], "degraded", "the ledger source is failing");
}

#[test]
fn results_older_than_the_freshness_window_are_recomputed() {
    let server = serve(|c| c.freshness_window_s = 1);
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let first = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!(server.finish(&first.poll_path(), k).job_status(), "READY");
    std::thread::sleep(Duration::from_millis(1_200));
    let second = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!((second.status, &second.data()["deduplicated"]), (202, &json!(false)), "{second:?}");
    assert_ne!(second.data_str("analysisId"), first.data_str("analysisId"));
    assert_eq!(server.finish(&second.poll_path(), k).job_status(), "READY");
    assert_eq!(server.usage(k).units(), (2, 0, 998, 0));
}

#[test]
fn a_comparison_cites_the_accounts_fresh_analyses() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let analysis = submit(&server, k, WALLET_PATH, &wallet_body(SYBIL_A));
    let analysis = server.finish(&analysis.poll_path(), k);
    let pair = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_B, SYBIL_A));
    let comparison = server.finish(&pair.poll_path(), k);
    // Sides in the request's order; side B is SYBIL_A, whose analysis is fresh.
    let side = &comparison.data()["comparison"]["walletB"];
    assert_eq!(side["address"], SYBIL_A);
    assert_eq!(side["analysisId"], analysis.data()["analysisId"], "{side}");
    assert_eq!(side["score"], analysis.data()["xray"]["score"], "the cited analysis's score");
    // Side A (SYBIL_B) had no analysis: the field is there, null.
    let other = comparison.data()["comparison"]["walletA"].as_object().expect("walletA").clone();
    assert_eq!(other.get("analysisId"), Some(&serde_json::Value::Null), "{other:?}");
}

#[test]
fn an_account_the_ledger_shows_is_no_wallet_fails_and_is_refunded() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions { quota: 1, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let store = &server.running().store;

    // A token account is an associated token account: off the curve, so refused at admission
    // (422, not a job) — it never gets as far as a FAILED analysis.
    let refused = post(server.addr, WALLET_PATH, k, &wallet_body(TOKEN_ACCOUNT));
    assert_error_details(&refused, 422, "ACCOUNT_NOT_ELIGIBLE", &json!({"field": "wallet", "reason": "off_curve"}));
    assert!(store.latest_for(&key.account, Subject::Wallet(TOKEN_ACCOUNT)).expect("store").is_none());

    // An executable program is on the curve: admitted, charged, then FAILED by the ledger
    // check, and refunded. Never READY, and a FAILED result is not reused.
    let mut ids = Vec::new();
    for attempt in 1..=2u64 {
        let accepted = submit(&server, k, WALLET_PATH, &wallet_body(DRAINER_PROGRAM));
        assert_eq!((accepted.status, &accepted.data()["deduplicated"]), (202, &json!(false)), "{accepted:?}");
        ids.push(accepted.data_str("analysisId"));
        let failed = server.finish(&accepted.poll_path(), k);
        let data = failed.data();
        assert_eq!((failed.status, data["status"].as_str()), (200, Some("FAILED")), "{failed:?}");
        assert_eq!(data["error"]["code"], "ACCOUNT_NOT_ELIGIBLE", "{data}");
        assert!(data["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{data}");
        assert!(data.get("xray").is_none() && is_timestamp(&data["completedAt"]), "{data}");
        assert_eq!(failed.header("retry-after"), None);
        let usage = server.usage(k);
        assert_eq!((usage.units(), usage.wallet_analysis), ((0, 0, 1, attempt), 0), "{usage:?}");
    }
    assert_ne!(ids[0], ids[1]);

    // The same for a comparison with such a side.
    let pair = submit(&server, k, COMPARE_PATH, &compare_body(CLEAN, DRAINER_PROGRAM));
    let failed = server.finish(&pair.poll_path(), k);
    assert_eq!((failed.job_status(), &failed.data()["error"]["code"]), ("FAILED", &json!("ACCOUNT_NOT_ELIGIBLE")));
    assert!(failed.data().get("comparison").is_none(), "{failed:?}");
    assert_eq!(server.usage(k).units(), (0, 0, 1, 3));

    // The unit given back buys real work.
    let clean = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    assert_eq!(server.finish(&clean.poll_path(), k).job_status(), "READY");
    assert_eq!(server.usage(k).units(), (1, 0, 0, 3));
}

/// `--sync-writes`: answers of admitted and deduplicated work wait for the group commit's
/// fsync (counted), the jobs run, and what was answered is there after a restart.
#[test]
fn with_sync_writes_answers_wait_for_the_group_commit() {
    let mut server = serve(|c| c.sync_writes = true);
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let group = server.running().app.group_commit.clone().expect("group commit with --sync-writes");
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    assert!(group.syncs() >= 1, "the 202 waited for an fsync");
    let again = submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION));
    assert_eq!(again.data_str("analysisId"), accepted.data_str("analysisId"));
    assert_eq!(server.finish(&accepted.poll_path(), k).job_status(), "READY");
    drop(group); // holds the store open
    server.restart();
    assert_eq!(get(server.addr, &accepted.poll_path(), k).job_status(), "READY");
    assert_eq!(server.usage(k).units().0, 1);
}

/// The value of the sample `series` (name and labels exactly as rendered) in `text`.
fn sample(text: &str, series: &str) -> f64 {
    let line = text.lines().find(|l| l.strip_prefix(series).is_some_and(|rest| rest.starts_with(' ')));
    line.unwrap_or_else(|| panic!("no {series} in:\n{text}"))
        .rsplit(' ')
        .next()
        .expect("value")
        .parse()
        .expect("number")
}

/// Issue #13, operators: `/metrics` counts FAILED jobs by code, the ledger source's calls and the
/// store's writes, the store's size, and the process.
#[test]
fn metrics_name_failures_ledger_calls_store_writes_and_the_process() {
    let server = serve_rpc(FaultPlan::default(), |_| {});
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let before = server.metrics_text();
    let calls = "xray_ledger_calls_total{method=\"getAccountInfo\",outcome=\"ok\"}";
    let completes = "xray_store_write_duration_seconds_count{operation=\"complete\"}";
    let (calls_before, completes_before) = (sample(&before, calls), sample(&before, completes));
    let ready = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    let failed = submit(&server, k, WALLET_PATH, &wallet_body(DRAINER_PROGRAM));
    assert_eq!(server.finish(&ready.poll_path(), k).job_status(), "READY");
    assert_eq!(server.finish(&failed.poll_path(), k).job_status(), "FAILED");
    let text = server.metrics_text();
    let failures = "xray_jobs_failed_total{kind=\"analysis\",code=\"ACCOUNT_NOT_ELIGIBLE\"}";
    assert_eq!(sample(&text, failures), 1.0);
    assert_eq!(sample(&text, "xray_jobs_failed_total{kind=\"analysis\",code=\"ANALYSIS_FAILED\"}"), 0.0);
    assert!(sample(&text, calls) >= calls_before + 2.0, "each job read its account over JSON-RPC");
    assert!(sample(&text, completes) >= completes_before + 2.0, "both completions were written");
    assert!(sample(&text, "xray_store_disk_bytes") > 0.0, "the WAL holds the writes");
    assert!(sample(&text, "process_open_fds") > 0.0 && sample(&text, "process_resident_memory_bytes") > 0.0);
}

/// Issue #15: a READY analysis carries `changes` against the account's previous READY analysis
/// of the wallet — `null` for the first; after the ledger moved (the server restarted on another
/// demo seed, where the archetype's balances differ) the refreshed analysis names the previous
/// one and the signal whose facts moved, with the score's movement.
#[test]
fn a_new_analysis_says_what_changed_since_the_last_one() {
    let mut server = serve(|c| c.ledger = "demo:1".parse().expect("spec"));
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let first = server.finish(&submit(&server, k, WALLET_PATH, &wallet_body(OPEN_DELEGATION)).poll_path(), k);
    assert_eq!(first.data()["xray"]["changes"], Value::Null, "no previous analysis: {first:?}");
    let first_id = first.data_str("analysisId");
    // Nothing moved: the same facts, the same score.
    let same = server.finish(&submit(&server, k, WALLET_PATH, &refresh_body(OPEN_DELEGATION)).poll_path(), k);
    let changes = &same.data()["xray"]["changes"];
    assert_eq!(changes["previousAnalysisId"], first_id.as_str(), "{changes}");
    assert_eq!(changes["score"]["delta"], 0);
    for list in ["appeared", "disappeared", "changed"] {
        assert_eq!(changes[list], json!([]), "{list}: {changes}");
    }
    let same_id = same.data_str("analysisId");

    server.restart_with(|c| c.ledger = "demo:2".parse().expect("spec"));
    let moved = server.finish(&submit(&server, k, WALLET_PATH, &refresh_body(OPEN_DELEGATION)).poll_path(), k);
    let changes = &moved.data()["xray"]["changes"];
    assert_eq!(changes["previousAnalysisId"], same_id.as_str(), "the newest previous one: {changes}");
    assert!(is_timestamp(&changes["previousCompletedAt"]), "{changes}");
    assert_eq!((changes["appeared"].clone(), changes["disappeared"].clone()), (json!([]), json!([])));
    assert_eq!(
        changes["changed"],
        json!([{ "signalId": "sig_2", "previousSignalId": "sig_2", "kind": "open_token_delegation", "facts": ["balance"] }]),
        "on seed 2 the unlimited delegation's token account holds another balance: {changes}"
    );
    assert_eq!(
        changes["score"],
        json!({ "previous": 24, "current": 24, "delta": 0, "previousRiskLevel": "critical", "currentRiskLevel": "critical" })
    );
    // Another account's analyses are not its previous ones.
    let other = server.key(KeyOptions::default());
    let theirs = server
        .finish(&submit(&server, &other.secret, WALLET_PATH, &wallet_body(OPEN_DELEGATION)).poll_path(), &other.secret);
    assert_eq!(theirs.data()["xray"]["changes"], Value::Null);
}
