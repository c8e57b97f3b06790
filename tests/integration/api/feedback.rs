//! Feedback over real loopback HTTP (issue #31 item 2, issue #42 item 4): a verdict on a READY
//! analysis' signal, replaced by a repeat; `missed` without a signal; every refusal with its
//! code and field; the tenant boundary; the counters in `/metrics`; the admin listing, its
//! pages and filters; the account's cap and the retention purge on the server's own RocksDB.
//! Feedback on a scan, given by sending its signed answer back: accepted for the account's own
//! scan (both verdicts, a repeat replaces), refused for a tampered answer, another account's
//! scan, a report that is no scan, an unsigned one, an oversize body — each with its reason —
//! and a key without `transaction:scan`; records keyed by account and scan, whatever request id
//! the clients chose; and the account's own listing, newest first, paged, isolated between
//! accounts, with the scans' records only for a key that may read scans.

use serde_json::{json, Value};

use super::support::*;

pub const FEEDBACK_PATH: &str = "/v1/developer/feedback";

pub fn send(server: &TestServer, key: &str, body: &Value) -> Reply {
    post(server.addr, FEEDBACK_PATH, key, &body.to_string())
}

/// A READY analysis of `wallet` and the id and kind of its first signal.
pub fn ready_analysis(server: &TestServer, key: &str, wallet: &str) -> (String, String, String) {
    let accepted = submit(server, key, WALLET_PATH, &wallet_body(wallet));
    let done = server.finish(&accepted.poll_path(), key);
    assert_eq!(done.job_status(), "READY", "{done:?}");
    let signal = &done.data()["xray"]["signals"][0];
    let id = |v: &Value| v.as_str().expect("string").to_owned();
    (done.data_str("analysisId"), id(&signal["id"]), id(&signal["kind"]))
}

fn admin_page(server: &TestServer, account: &str, query: &str) -> Value {
    let reply = server.admin("GET", &format!("/v1/admin/accounts/{account}/feedback{query}"));
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.data().clone()
}

fn metric(text: &str, kind: &str, verdict: &str) -> u64 {
    let series = format!("xray_feedback_total{{kind=\"{kind}\",verdict=\"{verdict}\"}} ");
    let line = text.lines().find(|l| l.starts_with(&series)).unwrap_or_else(|| panic!("no {series}"));
    line[series.len()..].parse().expect("a count")
}

#[test]
fn feedback_is_recorded_replaced_refused_isolated_counted_and_listed() {
    let server = serve(|_| {});
    let owner = server.key(KeyOptions::default());
    let k = owner.secret.as_str();
    let (analysis, signal, kind) = ready_analysis(&server, k, OPEN_DELEGATION);
    let before = server.usage(k);

    // A false positive on one signal: 201, the record.
    let first = send(&server, k, &json!({"analysisId": analysis, "signalId": signal, "verdict": "false_positive"}));
    assert_eq!(first.status, 201, "{first:?}");
    let data = first.data().clone();
    assert!(data["feedbackId"].as_str().is_some_and(|id| id.starts_with("fb_")), "{data}");
    assert_eq!((data["analysisId"].as_str(), data["signalId"].as_str()), (Some(&*analysis), Some(&*signal)));
    assert_eq!((data["signalKind"].as_str(), data["verdict"].as_str()), (Some(&*kind), Some("false_positive")));
    assert!(data["note"].is_null(), "{data}");
    assert!(is_timestamp(&data["createdAt"]) && data["createdAt"] == data["updatedAt"], "{data}");
    assert!(first.header("ratelimit").is_some(), "{first:?}");

    // A repeat replaces it: 200, the same id and createdAt, the new verdict and note.
    std::thread::sleep(std::time::Duration::from_millis(5));
    let again =
        json!({"analysisId": analysis, "signalId": signal, "verdict": "confirmed", "note": "on reflection\nit is"});
    let again = send(&server, k, &again);
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!((&again.data()["feedbackId"], &again.data()["createdAt"]), (&data["feedbackId"], &data["createdAt"]));
    assert_eq!(
        (again.data()["verdict"].as_str(), again.data()["note"].as_str()),
        (Some("confirmed"), Some("on reflection\nit is"))
    );
    assert_ne!(again.data()["updatedAt"], data["createdAt"], "{again:?}");
    let same = send(&server, k, &json!({"analysisId": analysis, "signalId": signal, "verdict": "confirmed"}));
    assert_eq!(same.status, 200, "{same:?}");

    // `missed` names no signal.
    let missed = send(&server, k, &json!({"analysisId": analysis, "verdict": "missed", "note": "a drainer"}));
    assert_eq!(missed.status, 201, "{missed:?}");
    assert!(missed.data()["signalId"].is_null() && missed.data()["signalKind"].is_null(), "{missed:?}");
    assert_ne!(missed.data()["feedbackId"], data["feedbackId"]);

    // No quota unit was charged.
    assert_eq!(server.usage(k).units(), before.units());

    // Refusals: each with its code and field.
    let field = |body: Value, field: &str| {
        let reply = send(&server, k, &body);
        assert_error_details(&reply, 400, "INVALID_REQUEST", &json!({ "field": field }));
    };
    field(json!({"analysisId": analysis, "signalId": "sig_999", "verdict": "false_positive"}), "signalId");
    field(json!({"analysisId": analysis, "verdict": "confirmed"}), "signalId");
    field(json!({"analysisId": analysis, "signalId": signal, "verdict": "missed"}), "signalId");
    field(json!({"analysisId": analysis, "signalId": signal, "verdict": "wrong"}), "verdict");
    field(json!({"analysisId": analysis, "signalId": signal}), "verdict");
    field(json!({"signalId": signal, "verdict": "confirmed"}), "analysisId");
    field(json!({"analysisId": 7, "verdict": "missed"}), "analysisId");
    field(json!({"analysisId": analysis, "verdict": "missed", "note": "x".repeat(1_001)}), "note");
    field(json!({"analysisId": analysis, "verdict": "missed", "note": "bell\u{7}"}), "note");
    field(json!({"analysisId": analysis, "verdict": "missed", "note": 5}), "note");
    let unknown = send(&server, k, &json!({"analysisId": "an_1111111111111111111111", "verdict": "missed"}));
    assert_error(&unknown, 404, "NOT_FOUND");
    assert_error(&send(&server, k, &json!({"analysisId": "nope", "verdict": "missed"})), 404, "NOT_FOUND");
    let auth = format!("Bearer {k}");
    let text =
        raw(server.addr, "POST", FEEDBACK_PATH, &[("authorization", &auth), ("content-type", "text/plain")], "{}");
    assert_error(&text, 415, "UNSUPPORTED_MEDIA_TYPE");
    let big = json!({"analysisId": analysis, "verdict": "missed", "note": "x".repeat(5_000)});
    assert_error(&send(&server, k, &big), 413, "PAYLOAD_TOO_LARGE");
    let put =
        raw(server.addr, "PUT", FEEDBACK_PATH, &[("authorization", &auth), ("content-type", "application/json")], "{}");
    assert_error(&put, 405, "METHOD_NOT_ALLOWED");

    // Scope: analysis:read.
    let no_read = server.key(KeyOptions::scopes("wallet:analyze").in_account(&owner.account)).secret;
    let refused = send(&server, &no_read, &json!({"analysisId": analysis, "verdict": "missed"}));
    assert_error_details(&refused, 403, "INSUFFICIENT_SCOPE", &json!({"requiredScope": "analysis:read"}));

    // Another account: our analysis is unknown to it (404, as its poll is).
    let other = server.key(KeyOptions::default()).secret;
    let theirs =
        send(&server, &other, &json!({"analysisId": analysis, "signalId": signal, "verdict": "false_positive"}));
    assert_error(&theirs, 404, "NOT_FOUND");
    assert_error(&get(server.addr, &analysis_path(&analysis), &other), 404, "NOT_FOUND");
    // A second key of the owner's account may: the analysis is the account's.
    let colleague = server.key(KeyOptions::scopes("analysis:read").in_account(&owner.account)).secret;
    let joined = send(&server, &colleague, &json!({"analysisId": analysis, "verdict": "missed", "note": "a drainer"}));
    assert_eq!(joined.status, 200, "{joined:?}");

    // The counters: the false positive, its change to confirmed (a transition counts once), the miss.
    let metrics = server.metrics_text();
    assert_eq!(metric(&metrics, &kind, "false_positive"), 1, "{metrics}");
    assert_eq!(metric(&metrics, &kind, "confirmed"), 1, "{metrics}");
    assert_eq!(metric(&metrics, "none", "missed"), 1, "{metrics}");
    assert!(metrics.contains("xray_http_requests_total{route=\"feedback\""), "{metrics}");

    // The admin listing: the account's two records, least recently written first.
    let page = admin_page(&server, &owner.account, "");
    let listed = page["feedback"].as_array().expect("feedback").clone();
    assert_eq!(listed.len(), 2, "{page}");
    assert_eq!(listed[0]["verdict"], "confirmed", "{page}");
    assert_eq!(listed[1]["verdict"], "missed", "{page}");
    assert!(page["nextAfter"].is_null(), "{page}");
    let first_page = admin_page(&server, &owner.account, "?limit=1");
    assert_eq!(first_page["feedback"].as_array().map(Vec::len), Some(1));
    let after = first_page["nextAfter"].as_str().expect("nextAfter").to_owned();
    let second = admin_page(&server, &owner.account, &format!("?limit=1&after={after}"));
    assert_eq!(second["feedback"][0]["verdict"], "missed", "{second}");
    let filtered = admin_page(&server, &owner.account, &format!("?verdict=confirmed&kind={kind}"));
    assert_eq!(filtered["feedback"].as_array().map(Vec::len), Some(1), "{filtered}");
    let none = admin_page(&server, &owner.account, "?kind=none");
    assert_eq!(none["feedback"][0]["verdict"], "missed", "{none}");
    let nobody = server.admin("GET", "/v1/admin/accounts/acct_nobody/feedback");
    assert_eq!(nobody.status, 404, "an account no key belongs to: {nobody:?}");
    let bad = server.admin("GET", &format!("/v1/admin/accounts/{}/feedback?limit=0", owner.account));
    assert_error_details(&bad, 400, "INVALID_REQUEST", &json!({"field": "limit"}));
}

#[test]
fn feedback_on_an_analysis_not_ready_is_a_conflict() {
    let server = serve_slow(800, |_| {});
    let key = server.key(KeyOptions::default()).secret;
    let running = submit_running(&server, &key, CLEAN);
    let id = running.data_str("analysisId");
    let reply = send(&server, &key, &json!({"analysisId": id, "verdict": "missed"}));
    assert_error(&reply, 409, "CONFLICT");
    assert!(reply.error()["message"].as_str().is_some_and(|m| m.contains("RUNNING")), "{reply:?}");
    // Another account sees a 404 for it, not its state.
    let other = server.key(KeyOptions::default()).secret;
    assert_error(&send(&server, &other, &json!({"analysisId": id, "verdict": "missed"})), 404, "NOT_FOUND");
}

#[test]
fn the_cap_evicts_the_oldest_and_the_purge_removes_what_is_past_retention() {
    use xray::feedback::{book::purge_before, Book, FeedbackRecord};
    let server = serve(|_| {});
    // An account some key belongs to (the admin's page of any other is 404).
    let capped = server.key(KeyOptions::default()).account;
    let store = server.running().store.clone();
    let small = Book::with_cap(store.clone(), 3);
    let record = |analysis: &str, at_ms: u64| FeedbackRecord {
        id: xray::feedback::record::feedback_id(&capped, analysis, None),
        account: capped.clone(),
        key_id: "key_1".into(),
        analysis_id: Some(analysis.into()),
        signal_id: None,
        signal_kind: None,
        verdict: "missed".into(),
        note: None,
        created_at_ms: at_ms,
        updated_at_ms: at_ms,
        scan: None,
    };
    let now = xray::clock::now_unix_ms();
    for (i, analysis) in ["an_a", "an_b", "an_c", "an_d"].iter().enumerate() {
        let written = small.put(&record(analysis, now - 1_000 + i as u64)).expect("written");
        assert_eq!(written.evicted, usize::from(i == 3), "{analysis}");
    }
    let listed = |server: &TestServer| -> Vec<String> {
        let page = admin_page(server, &capped, "");
        let items = page["feedback"].as_array().expect("feedback").clone();
        items.iter().map(|f| f["analysisId"].as_str().expect("id").to_owned()).collect()
    };
    assert_eq!(listed(&server), ["an_b", "an_c", "an_d"]);
    assert_eq!(small.held(&capped).expect("tally"), 3);

    // An old record (written 400 days ago) is purged; the rest stay.
    small.put(&record("an_old", now - 400 * 86_400_000)).expect("written");
    let retention_ms = u64::from(xray::config::FEEDBACK_RETENTION_DAYS) * 86_400_000;
    assert_eq!(listed(&server), ["an_old", "an_c", "an_d"], "an_b evicted for it");
    assert_eq!(purge_before(&*store, now - retention_ms).expect("purge"), 1, "an_old");
    assert_eq!(listed(&server), ["an_c", "an_d"]);
    assert_eq!(purge_before(&*store, now + 1).expect("purge"), 2);
    assert!(listed(&server).is_empty());
    assert_eq!(small.held(&capped).expect("tally"), 0);
}

/// A scan of the demo `case` by `key`: the answer's bytes, exactly as returned.
fn scanned(server: &TestServer, key: &str, case: &str) -> Reply {
    let reply = post(server.addr, SCAN_PATH, key, &scan_body(&demo_tx(case), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
}

/// A feedback body carrying `answer` (a scan's, or any report's, bytes as returned) back.
fn scan_feedback(answer: &[u8], verdict: &str, note: Option<&str>) -> String {
    let answer = std::str::from_utf8(answer).expect("utf-8");
    match note {
        Some(note) => format!(r#"{{"verdict":"{verdict}","note":{},"scan":{answer}}}"#, json!(note)),
        None => format!(r#"{{"verdict":"{verdict}","scan":{answer}}}"#),
    }
}

fn send_raw(server: &TestServer, key: &str, body: &str) -> Reply {
    post(server.addr, FEEDBACK_PATH, key, body)
}

fn scan_metric(text: &str, scan_verdict: &str, verdict: &str) -> u64 {
    let series = format!("xray_scan_feedback_total{{scan_verdict=\"{scan_verdict}\",verdict=\"{verdict}\"}} ");
    let line = text.lines().find(|l| l.starts_with(&series)).unwrap_or_else(|| panic!("no {series}"));
    line[series.len()..].parse().expect("a count")
}

fn refused_as(reply: &Reply, reason: &str) {
    assert_error_details(reply, 422, "REPORT_NOT_VERIFIED", &json!({"field": "scan", "reason": reason}));
}

#[test]
fn feedback_on_a_scan_is_its_signed_answer_sent_back_and_verified() {
    let server = serve(|_| {});
    let owner = server.key(KeyOptions::default());
    let k = owner.secret.as_str();
    let drain = scanned(&server, k, "drain");
    assert_eq!(drain.data()["verdict"], "malicious", "{drain:?}");
    let benign = scanned(&server, k, "sol-transfer");
    assert_eq!(
        (benign.data()["verdict"].as_str(), benign.data()["findings"].as_array().map(Vec::len)),
        (Some("benign"), Some(0))
    );
    let before = server.usage(k);

    // A false positive on a flagged scan: 201, the facts kept of it — not the report.
    let first = send_raw(&server, k, &scan_feedback(&drain.raw_body, "false_positive", Some("our own sweep")));
    assert_eq!(first.status, 201, "{first:?}");
    let data = first.data().clone();
    assert_eq!((data["target"].as_str(), data["verdict"].as_str()), (Some("scan"), Some("false_positive")));
    assert_eq!(data["requestId"], drain.data()["requestId"], "{data}");
    assert_eq!(data["messageSha256"], drain.data()["transaction"]["messageSha256"], "{data}");
    assert_eq!(
        (data["scanVerdict"].as_str(), data["scannedAt"].clone()),
        (Some("malicious"), drain.data()["scannedAt"].clone())
    );
    let kinds: Vec<&str> =
        drain.data()["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap()).collect();
    let kept: Vec<&str> =
        data["findingKinds"].as_array().expect("findingKinds").iter().map(|k| k.as_str().unwrap()).collect();
    assert!(!kept.is_empty() && kept.iter().all(|k| kinds.contains(k)), "{kept:?} of {kinds:?}");
    assert!(data.get("analysisId").is_none() && data.get("findings").is_none(), "{data}");
    assert!(data["feedbackId"].as_str().is_some_and(|id| id.starts_with("fb_")) && data["note"] == "our own sweep");

    // A repeat for the same scan replaces it (200, the same id and createdAt), as on an analysis.
    let again = send_raw(&server, k, &scan_feedback(&drain.raw_body, "false_negative", None));
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!((&again.data()["feedbackId"], &again.data()["createdAt"]), (&data["feedbackId"], &data["createdAt"]));
    assert_eq!((again.data()["verdict"].as_str(), again.data()["note"].is_null()), (Some("false_negative"), true));

    // A false negative on a scan that said benign; a false positive there flagged nothing.
    let missed = send_raw(&server, k, &scan_feedback(&benign.raw_body, "false_negative", Some("it drained us")));
    assert_eq!(missed.status, 201, "{missed:?}");
    assert_eq!(
        (missed.data()["scanVerdict"].as_str(), missed.data()["findingKinds"].clone()),
        (Some("benign"), json!([]))
    );
    let nothing = send_raw(&server, k, &scan_feedback(&benign.raw_body, "false_positive", None));
    assert_error_details(&nothing, 400, "INVALID_REQUEST", &json!({"field": "verdict"}));

    // No quota unit was charged; the counters say what was given, by the scan's own verdict.
    assert_eq!(server.usage(k).units(), before.units());
    let metrics = server.metrics_text();
    assert_eq!(scan_metric(&metrics, "malicious", "false_positive"), 1, "{metrics}");
    assert_eq!(scan_metric(&metrics, "malicious", "false_negative"), 1, "a changed verdict counts again");
    assert_eq!(scan_metric(&metrics, "benign", "false_negative"), 1, "{metrics}");

    // Tampered: one covered member changed — bad_signature, nothing recorded.
    let mut tampered: Value = serde_json::from_slice(&drain.raw_body).unwrap();
    tampered["data"]["verdict"] = json!("benign");
    refused_as(
        &send_raw(&server, k, &scan_feedback(tampered.to_string().as_bytes(), "false_negative", None)),
        "bad_signature",
    );
    // Unsigned, or not a report at all: malformed.
    let mut unsigned: Value = serde_json::from_slice(&drain.raw_body).unwrap();
    unsigned["data"].as_object_mut().unwrap().remove("signature");
    refused_as(
        &send_raw(&server, k, &scan_feedback(unsigned.to_string().as_bytes(), "false_positive", None)),
        "malformed",
    );
    refused_as(&send_raw(&server, k, &scan_feedback(br#"{"nope":1}"#, "false_positive", None)), "malformed");
    // Another server's key: unknown_key.
    let mut foreign: Value = serde_json::from_slice(&drain.raw_body).unwrap();
    foreign["data"]["signature"]["keyId"] = json!("0000000000000000");
    refused_as(
        &send_raw(&server, k, &scan_feedback(foreign.to_string().as_bytes(), "false_positive", None)),
        "unknown_key",
    );
    // A report that is no scan: an analysis' signed poll answer.
    let (analysis, _, _) = ready_analysis(&server, k, OPEN_DELEGATION);
    let poll = get(server.addr, &analysis_path(&analysis), k);
    refused_as(&send_raw(&server, k, &scan_feedback(&poll.raw_body, "false_positive", None)), "wrong_type");

    // Another account's scan, its answer intact: refused, saying so without naming the account.
    let stranger = server.key(KeyOptions::default());
    let theirs = scanned(&server, &stranger.secret, "drain");
    let refused = send_raw(&server, k, &scan_feedback(&theirs.raw_body, "false_positive", None));
    refused_as(&refused, "account_mismatch");
    let text = String::from_utf8_lossy(&refused.raw_body);
    assert!(!text.contains(&stranger.account), "{text}");
    // Yet a colleague of the owner's account may (the scan is the account's), holding the scope
    // the answer was given to besides the route's; `analysis:read` alone may not, and is told
    // so before the answer is read (nothing is verified for it: a tampered one is a 403 too).
    let reader = server.key(KeyOptions::scopes("analysis:read").in_account(&owner.account)).secret;
    let needs_scan = json!({"requiredScope": "transaction:scan", "field": "scan"});
    for answer in [drain.raw_body.clone(), tampered.to_string().into_bytes()] {
        let refused = send_raw(&server, &reader, &scan_feedback(&answer, "false_positive", None));
        assert_error_details(&refused, 403, "INSUFFICIENT_SCOPE", &needs_scan);
    }
    let colleague = server.key(KeyOptions::scopes("analysis:read,transaction:scan").in_account(&owner.account)).secret;
    assert_eq!(send_raw(&server, &colleague, &scan_feedback(&drain.raw_body, "false_positive", None)).status, 200);

    // The body's shape: verdicts of a scan, a scan that is an object, not both targets.
    let field = |body: String, field: &str| {
        assert_error_details(&send_raw(&server, k, &body), 400, "INVALID_REQUEST", &json!({ "field": field }));
    };
    field(scan_feedback(&drain.raw_body, "confirmed", None), "verdict");
    field(scan_feedback(&drain.raw_body, "missed", None), "verdict");
    field(scan_feedback(&drain.raw_body, "false_positive", Some(&"x".repeat(1_001))), "note");
    field(r#"{"verdict":"false_positive","scan":"a report"}"#.to_owned(), "scan");
    let both = format!(
        r#"{{"analysisId":"{analysis}","verdict":"false_positive","scan":{}}}"#,
        String::from_utf8_lossy(&drain.raw_body)
    );
    field(both, "scan");
    field(json!({"analysisId": analysis, "verdict": "false_negative"}).to_string(), "verdict");

    // Sizes: a scan's answer may take 128 KiB; feedback on an analysis keeps 4 KiB.
    let padded = format!(
        r#"{{"verdict":"false_positive","pad":"{}","scan":{}}}"#,
        " ".repeat(100_000),
        String::from_utf8_lossy(&drain.raw_body)
    );
    assert_eq!(send_raw(&server, k, &padded).status, 200, "a large answer fits");
    let oversize = format!(
        r#"{{"verdict":"false_positive","pad":"{}","scan":{}}}"#,
        " ".repeat(128 * 1024),
        String::from_utf8_lossy(&drain.raw_body)
    );
    assert_error_details(&send_raw(&server, k, &oversize), 413, "PAYLOAD_TOO_LARGE", &json!({"maxBytes": 131072}));
    let big = json!({"analysisId": analysis, "verdict": "missed", "note": "x".repeat(5_000)}).to_string();
    assert_error_details(&send_raw(&server, k, &big), 413, "PAYLOAD_TOO_LARGE", &json!({"maxBytes": 4096}));
}

fn own_page(server: &TestServer, key: &str, query: &str) -> Value {
    let reply = get(server.addr, &format!("{FEEDBACK_PATH}{query}"), key);
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.data().clone()
}

#[test]
fn the_accounts_own_feedback_is_listed_newest_first_in_pages_and_isolated() {
    let server = serve(|_| {});
    let owner = server.key(KeyOptions::default());
    let other = server.key(KeyOptions::default());
    let (k, o) = (owner.secret.as_str(), other.secret.as_str());
    assert_eq!(own_page(&server, k, ""), json!({"feedback": [], "nextAfter": null}));

    let (analysis, signal, _) = ready_analysis(&server, k, OPEN_DELEGATION);
    let drain = scanned(&server, k, "drain");
    // Each in a millisecond of its own: records written in one are ordered by key, not time.
    let apart = |reply: Reply| {
        std::thread::sleep(std::time::Duration::from_millis(3));
        reply
    };
    let written = [
        apart(send(&server, k, &json!({"analysisId": analysis, "verdict": "missed", "note": "one"}))),
        apart(send(&server, k, &json!({"analysisId": analysis, "signalId": signal, "verdict": "confirmed"}))),
        apart(send_raw(&server, k, &scan_feedback(&drain.raw_body, "false_positive", Some("three")))),
    ];
    let ids: Vec<Value> = written.iter().map(|r| r.data()["feedbackId"].clone()).collect();
    let (other_analysis, _, _) = ready_analysis(&server, o, OPEN_DELEGATION);
    assert_eq!(send(&server, o, &json!({"analysisId": other_analysis, "verdict": "missed"})).status, 201);

    // Newest first; each record as it was accepted.
    let all = own_page(&server, k, "");
    let listed = all["feedback"].as_array().expect("feedback").clone();
    assert_eq!(
        listed.iter().map(|r| r["feedbackId"].clone()).collect::<Vec<_>>(),
        [ids[2].clone(), ids[1].clone(), ids[0].clone()]
    );
    assert_eq!(listed[0], written[2].data().clone());
    assert_eq!(listed[2], written[0].data().clone());
    assert_eq!(listed[1]["target"], "analysis");
    assert!(all["nextAfter"].is_null(), "{all}");

    // Paged: limit, then nextAfter as after, until null.
    let first = own_page(&server, k, "?limit=2");
    assert_eq!(first["feedback"].as_array().map(Vec::len), Some(2));
    let after = first["nextAfter"].as_str().expect("nextAfter").to_owned();
    let second = own_page(&server, k, &format!("?limit=2&after={after}"));
    assert_eq!(
        second["feedback"].as_array().map(|l| l.iter().map(|r| r["feedbackId"].clone()).collect::<Vec<_>>()),
        Some(vec![ids[0].clone()])
    );
    assert!(second["nextAfter"].is_null(), "{second}");

    // A key that may not read scans is listed the analyses' records only; the cursor still
    // walks every record, so its first page of one is empty and says where to go on.
    let reader = server.key(KeyOptions::scopes("analysis:read").in_account(&owner.account)).secret;
    let read = own_page(&server, &reader, "");
    let read_ids: Vec<Value> = read["feedback"].as_array().unwrap().iter().map(|r| r["feedbackId"].clone()).collect();
    assert_eq!(read_ids, [ids[1].clone(), ids[0].clone()], "{read}");
    let first_of_one = own_page(&server, &reader, "?limit=1");
    assert_eq!(first_of_one["feedback"], json!([]), "{first_of_one}");
    let on = first_of_one["nextAfter"].as_str().expect("nextAfter");
    assert_eq!(own_page(&server, &reader, &format!("?limit=1&after={on}"))["feedback"][0]["feedbackId"], ids[1]);

    // A replace moves its record to the front.
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(send(&server, k, &json!({"analysisId": analysis, "verdict": "missed", "note": "again"})).status, 200);
    assert_eq!(own_page(&server, k, "?limit=1")["feedback"][0]["note"], "again");

    // Isolated: the other account sees its own record only, even with this account's cursor.
    let theirs = own_page(&server, o, "");
    assert_eq!(theirs["feedback"].as_array().map(Vec::len), Some(1), "{theirs}");
    assert_eq!(theirs["feedback"][0]["analysisId"].as_str(), Some(&*other_analysis));
    let with_ours = own_page(&server, o, &format!("?after={after}"));
    assert!(
        with_ours["feedback"].as_array().unwrap().iter().all(|r| r["analysisId"] == json!(other_analysis)),
        "{with_ours}"
    );

    // Refusals: the page's bounds, the cursor, the scope.
    for query in ["?limit=0", "?limit=101", "?limit=x"] {
        assert_error_details(
            &get(server.addr, &format!("{FEEDBACK_PATH}{query}"), k),
            400,
            "INVALID_REQUEST",
            &json!({"field": "limit"}),
        );
    }
    let too_long = "z".repeat(513);
    for after in ["0OIl", "", &too_long] {
        assert_error_details(
            &get(server.addr, &format!("{FEEDBACK_PATH}?after={after}"), k),
            400,
            "INVALID_REQUEST",
            &json!({"field": "after"}),
        );
    }
    let no_read = server.key(KeyOptions::scopes("wallet:analyze").in_account(&owner.account)).secret;
    let refused = get(server.addr, FEEDBACK_PATH, &no_read);
    assert_error_details(&refused, 403, "INSUFFICIENT_SCOPE", &json!({"requiredScope": "analysis:read"}));
    assert!(server.metrics_text().contains("xray_http_requests_total{route=\"feedback\",status=\"200\"}"));
}

/// A scan of the demo `case` by `key`, under the request id the client chose.
fn scanned_as(server: &TestServer, key: &str, case: &str, request_id: &str) -> Reply {
    let auth = format!("Bearer {key}");
    let headers =
        [("authorization", auth.as_str()), ("content-type", "application/json"), ("x-request-id", request_id)];
    let reply = raw(server.addr, "POST", SCAN_PATH, &headers, &scan_body(&demo_tx(case), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.data()["requestId"], request_id, "{reply:?}");
    reply
}

#[test]
fn a_scans_record_is_its_accounts_and_its_scans_whatever_request_id_the_client_chose() {
    let server = serve(|_| {});
    let (a, b) = (server.key(KeyOptions::default()), server.key(KeyOptions::default()));
    // Two accounts scan the same message under the same request id: only the account differs.
    let scan_a = scanned_as(&server, &a.secret, "drain", "req-shared");
    let scan_b = scanned_as(&server, &b.secret, "drain", "req-shared");
    assert_eq!(scan_a.data()["transaction"]["messageSha256"], scan_b.data()["transaction"]["messageSha256"]);
    let given_a = send_raw(&server, &a.secret, &scan_feedback(&scan_a.raw_body, "false_positive", Some("a's")));
    let given_b = send_raw(&server, &b.secret, &scan_feedback(&scan_b.raw_body, "false_negative", Some("b's")));
    assert_eq!((given_a.status, given_b.status), (201, 201), "{given_a:?} {given_b:?}");
    assert_ne!(given_a.data()["feedbackId"], given_b.data()["feedbackId"]);
    // B sending A's answer back is refused and changes nothing of A's; each lists its own.
    refused_as(
        &send_raw(&server, &b.secret, &scan_feedback(&scan_a.raw_body, "false_negative", None)),
        "account_mismatch",
    );
    assert_eq!(own_page(&server, &a.secret, "")["feedback"], json!([given_a.data().clone()]));
    assert_eq!(own_page(&server, &b.secret, "")["feedback"], json!([given_b.data().clone()]));

    // Within an account: another message under the reused request id is another record; the
    // same answer sent again is the same record (200, its id), not a new one.
    let other = scanned_as(&server, &a.secret, "sol-transfer", "req-shared");
    let second = send_raw(&server, &a.secret, &scan_feedback(&other.raw_body, "false_negative", None));
    assert_eq!(second.status, 201, "{second:?}");
    assert_ne!(second.data()["feedbackId"], given_a.data()["feedbackId"]);
    let replay = send_raw(&server, &a.secret, &scan_feedback(&scan_a.raw_body, "false_positive", Some("a's")));
    assert_eq!((replay.status, &replay.data()["feedbackId"]), (200, &given_a.data()["feedbackId"]), "{replay:?}");
    assert_eq!(own_page(&server, &a.secret, "")["feedback"].as_array().map(Vec::len), Some(2));
}
