//! Monitor events over real loopback HTTP against a demo ledger that moves (a timeline script:
//! one wallet approves an unknown delegate, one receives dust from a look-alike, one stays
//! quiet): exactly the expected events, signed, with one id on every delivery; none for the
//! quiet wallet; a restart between two events loses and repeats nothing; a receiver that keeps
//! failing sees the retries and then the dead letter, and a redelivery sends the same event.
//! Issue #40 item 5: dust is moved past without a re-analysis (unless the monitor turned its
//! dust filter off, as the tests of dust events do), and re-analyses past a monitor's daily
//! budget are held, uncharged, until the budget allows them.
//! Issue #42 item 7: where events are decided — a re-analysis that changes nothing makes none
//! (with `scoreDrop` and without), a score falling past `scoreDrop` exactly one, and short of
//! it none.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::monitors::{checked_once, create};
use super::support::*;
use super::webhooks::Receiver;
use xray::devtools::rpc_server::FaultPlan;
use xray::webhooks::signature::verify;

/// The timeline's wallets, by the names a script uses.
pub(crate) fn timeline_wallet(name: &str) -> String {
    let demo = xray::ledger::demo::DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    demo.archetype(name).unwrap_or_else(|| panic!("archetype {name}")).to_base58()
}

/// The demo timeline whose events happen `at_s` seconds after `start_ms` (its script in `dir`).
pub(crate) fn timeline_spec(dir: &Path, start_ms: u64, events: &[(&str, u64)]) -> xray::config::SourceSpec {
    let mut script = format!("start_unix_ms = {start_ms}\n");
    for (wallet, at_s) in events {
        script.push_str(&format!("[[event]]\nwallet = \"{wallet}\"\nat_s = {at_s}\n"));
    }
    let path = dir.join("timeline.toml");
    std::fs::write(&path, script).expect("script written");
    format!("demo+script={}", path.display()).parse().expect("a timeline spec")
}

/// A server over a demo timeline whose events happen `at_s` seconds after `start_ms`.
fn timeline_server(
    dir: &Path,
    start_ms: u64,
    events: &[(&str, u64)],
    tweak: impl FnOnce(&mut xray::config::ServeConfig),
) -> TestServer {
    let ledger = timeline_spec(dir, start_ms, events);
    serve(|c| {
        c.ledger = ledger;
        c.monitor_interval_s = 1;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
        tweak(c)
    })
}

fn secret_for(server: &TestServer, key: &TestKey) -> String {
    let reply = server.admin("POST", &format!("/v1/admin/accounts/{}/webhook-secret", key.account));
    assert_eq!(reply.status, 201, "{reply:?}");
    reply.body["secret"].as_str().expect("secret").to_owned()
}

/// The monitor's events (every page), after waiting until there are at least `n` (bounded).
fn events_at_least(server: &TestServer, key: &str, id: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let events = all_events(server, key, id);
        if events.len() >= n {
            return events;
        }
        assert!(Instant::now() < deadline, "{} of {n} events within 30 s: {events:?}", events.len());
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn all_events(server: &TestServer, key: &str, id: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(a) => format!("/v1/developer/monitors/{id}/events?limit=1&after={a}"),
            None => format!("/v1/developer/monitors/{id}/events?limit=1"),
        };
        let reply = get(server.addr, &path, key);
        assert_eq!(reply.status, 200, "{reply:?}");
        out.extend(reply.data()["events"].as_array().expect("events").iter().cloned());
        match reply.data()["nextAfter"].as_str() {
            Some(next) => after = Some(next.to_owned()),
            None => return out,
        }
    }
}

fn wallets_of(events: &[Value]) -> BTreeSet<String> {
    events.iter().map(|e| e["wallet"].as_str().expect("wallet").to_owned()).collect()
}

#[test]
fn a_moving_ledger_makes_exactly_the_expected_events_signed_once_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 4_000;
    let server = timeline_server(dir.path(), start_ms, &[("timeline_delegate", 1), ("timeline_dust", 2)], |_| {});
    let key = server.key(KeyOptions::default());
    let secret = secret_for(&server, &key);
    let receiver = Receiver::start(&[200]);
    let (delegate, dust, quiet) =
        (timeline_wallet("timeline_delegate"), timeline_wallet("timeline_dust"), timeline_wallet("timeline_quiet"));
    // The dust makes an event only with the monitor's dust filter off (`dustLamports: 0`).
    let body = json!({"wallets": [delegate, dust, quiet], "callbackUrl": receiver.url(), "minSeverity": "low", "dustLamports": 0});
    let created = create(&server, &key.secret, &body);
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.data()["id"].as_str().expect("id").to_owned();
    checked_once(&server, &key.secret, &id);
    assert!(xray::clock::now_unix_ms() < start_ms + 1_000, "the baselines took too long for the script");

    let events = events_at_least(&server, &key.secret, &id, 2);
    // A few intervals more: nothing else happens.
    std::thread::sleep(Duration::from_secs(3));
    let events_after = all_events(&server, &key.secret, &id);
    assert_eq!(events_after.len(), 2, "{events_after:?}");
    assert_eq!(wallets_of(&events), BTreeSet::from([delegate.clone(), dust.clone()]), "none for the quiet wallet");
    for event in &events_after {
        assert_eq!(event["type"], "risk_changed");
        assert_eq!(event["monitorId"], id.as_str());
        let analysis = event["analysisId"].as_str().expect("analysisId");
        assert!(event["changes"]["appeared"].as_array().is_some_and(|a| !a.is_empty()), "{event}");
        // The event's changes are its analysis' own.
        let polled = server.finish(&analysis_path(analysis), &key.secret);
        assert_eq!(polled.data()["xray"]["changes"], event["changes"], "{event}");
    }
    let got = receiver.wait_for(2);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(receiver.got.lock().expect("log").len(), 2, "one delivery per event");
    for request in &got {
        let signature = request.header("xray-signature").expect("Xray-Signature");
        let now_s = xray::clock::now_unix_ms() / 1_000;
        assert!(verify(&secret, signature, &request.body, now_s, 300).is_ok(), "{signature}");
        let sent: Value = serde_json::from_slice(&request.body).expect("JSON");
        let event_id = sent["data"]["event"]["id"].as_str().expect("event id");
        assert_eq!(request.header("xray-webhook-id"), Some(event_id));
        let listed = events_after.iter().find(|e| e["id"] == event_id).expect("a listed event");
        let mut without_delivery = listed.clone();
        without_delivery.as_object_mut().expect("event").remove("delivery");
        assert_eq!(sent["data"]["event"], without_delivery);
    }
    let events = all_events(&server, &key.secret, &id);
    assert!(events.iter().all(|e| e["delivery"]["status"] == "DELIVERED"), "{events:?}");
}

#[test]
fn a_restart_between_two_events_loses_and_repeats_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 3_000;
    let mut server = timeline_server(dir.path(), start_ms, &[("timeline_delegate", 1), ("timeline_dust", 6)], |_| {});
    let key = server.key(KeyOptions::default());
    let receiver = Receiver::start(&[200]);
    secret_for(&server, &key);
    let (delegate, dust) = (timeline_wallet("timeline_delegate"), timeline_wallet("timeline_dust"));
    let body =
        json!({"wallets": [delegate, dust], "callbackUrl": receiver.url(), "minSeverity": "low", "dustLamports": 0});
    let id = create(&server, &key.secret, &body).data()["id"].as_str().expect("id").to_owned();
    checked_once(&server, &key.secret, &id);
    let first = events_at_least(&server, &key.secret, &id, 1);
    server.restart();
    events_at_least(&server, &key.secret, &id, 2);
    std::thread::sleep(Duration::from_secs(3));
    let events = all_events(&server, &key.secret, &id);
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["id"], first[0]["id"], "the first event kept its id across the restart");
    assert_eq!(wallets_of(&events), BTreeSet::from([delegate, dust]));
    let got = receiver.wait_for(2);
    let ids: BTreeSet<&str> = got.iter().filter_map(|r| r.header("xray-webhook-id")).collect();
    assert_eq!(ids.len(), 2, "each event delivered, none twice: {ids:?}");
}

#[test]
fn a_failing_receiver_sees_retries_then_a_dead_letter_and_a_redelivery_sends_the_same_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 2_500;
    let server = timeline_server(dir.path(), start_ms, &[("timeline_delegate", 1)], |c| c.webhook_attempts_max = 3);
    let key = server.key(KeyOptions::default());
    secret_for(&server, &key);
    // Three failures (the attempts allowed), then a receiver that answers.
    let receiver = Receiver::start(&[500, 503, 500, 200]);
    let body =
        json!({"wallets": [timeline_wallet("timeline_delegate")], "callbackUrl": receiver.url(), "minSeverity": "low"});
    let id = create(&server, &key.secret, &body).data()["id"].as_str().expect("id").to_owned();
    let event = events_at_least(&server, &key.secret, &id, 1).remove(0);
    let event_id = event["id"].as_str().expect("id").to_owned();
    let got = receiver.wait_for(3);
    assert!(got.iter().all(|r| r.header("xray-webhook-id") == Some(event_id.as_str())), "one id on every retry");
    let deadline = Instant::now() + Duration::from_secs(20);
    let dead = loop {
        let event = all_events(&server, &key.secret, &id).remove(0);
        if event["delivery"]["status"] == "FAILED" {
            break event;
        }
        assert!(Instant::now() < deadline, "no dead letter within 20 s: {event}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(dead["delivery"]["attempts"], 3, "{dead}");
    assert!(dead["delivery"]["lastError"].is_string(), "{dead}");

    // The receiver moved: the monitor's callbackUrl is changed, and the redelivery goes there.
    let moved = Receiver::start(&[200]);
    let patch = json!({"callbackUrl": moved.url()}).to_string();
    let monitor_path = format!("/v1/developer/monitors/{id}");
    let auth = format!("Bearer {}", key.secret);
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let changed = raw(server.addr, "PATCH", &monitor_path, &headers, &patch);
    assert_eq!(changed.status, 200, "{changed:?}");
    let path = format!("/v1/developer/monitors/{id}/events/{event_id}/redeliver");
    let again = post(server.addr, &path, &key.secret, "");
    assert_eq!(again.status, 202, "{again:?}");
    assert_eq!(again.data()["event"]["id"], event_id.as_str());
    assert_eq!(again.data()["event"]["delivery"]["url"], moved.url().as_str(), "{again:?}");
    let got = moved.wait_for(1);
    assert_eq!(got[0].header("xray-webhook-id"), Some(event_id.as_str()));
    assert_eq!(receiver.got.lock().expect("log").len(), 3, "nothing more to the old receiver");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let event = all_events(&server, &key.secret, &id).remove(0);
        if event["delivery"]["status"] == "DELIVERED" {
            break;
        }
        assert!(Instant::now() < deadline, "not delivered again within 20 s: {event}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // Another account cannot send it, nor an unknown event be sent.
    let stranger = server.key(KeyOptions::default()).secret;
    assert_eq!(post(server.addr, &path, &stranger, "").status, 404);
    let unknown = format!("/v1/developer/monitors/{id}/events/evt_4vJ9JU1bJJE96FWSJKvHsm/redeliver");
    assert_eq!(post(server.addr, &unknown, &key.secret, "").status, 404);
}

/// The analysis id each of the monitor's wallets was last checked with (`GET` one).
fn last_analyses(server: &TestServer, key: &str, id: &str) -> Vec<Option<String>> {
    let reply = get(server.addr, &format!("/v1/developer/monitors/{id}"), key);
    assert_eq!(reply.status, 200, "{reply:?}");
    let watches = reply.data()["watches"].as_array().expect("watches").clone();
    watches.iter().map(|w| w["lastAnalysisId"].as_str().map(str::to_owned)).collect()
}

#[test]
fn the_accounts_own_refresh_between_two_checks_hides_no_change_from_the_monitor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 2_000;
    // Checks 6 s apart: the account's own refresh lands between the baseline and the next.
    let server = timeline_server(dir.path(), start_ms, &[("timeline_delegate", 1)], |c| c.monitor_interval_s = 6);
    let key = server.key(KeyOptions::default());
    let delegate = timeline_wallet("timeline_delegate");
    let body = json!({"wallets": [delegate], "callbackUrl": "http://127.0.0.1:9/hooks", "minSeverity": "low"});
    let id = create(&server, &key.secret, &body).data()["id"].as_str().expect("id").to_owned();
    let baseline =
        checked_once(&server, &key.secret, &id)["watches"][0]["lastAnalysisId"].as_str().expect("baseline").to_owned();
    server.finish(&analysis_path(&baseline), &key.secret);
    std::thread::sleep(Duration::from_millis((start_ms + 1_500).saturating_sub(xray::clock::now_unix_ms())));
    // The account refreshes the wallet itself: its analysis already shows the new delegate.
    let own = post(server.addr, WALLET_PATH, &key.secret, &refresh_body(&delegate));
    let own_id = own.data()["analysisId"].as_str().expect("analysisId").to_owned();
    let own = server.finish(&analysis_path(&own_id), &key.secret);
    assert!(own.data()["xray"]["changes"]["appeared"].as_array().is_some_and(|a| !a.is_empty()), "{own:?}");
    assert_eq!(last_analyses(&server, &key.secret, &id), vec![Some(baseline.clone())], "not checked again yet");

    let events = events_at_least(&server, &key.secret, &id, 1);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["changes"]["previousAnalysisId"], baseline.as_str(), "against the monitor's baseline");
    assert!(events[0]["changes"]["appeared"].as_array().is_some_and(|a| !a.is_empty()), "{events:?}");
}

#[test]
fn a_re_analysis_that_fails_is_done_again_and_its_change_still_makes_one_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 2_000;
    let spec = timeline_spec(dir.path(), start_ms, &[("timeline_delegate", 1)]);
    let server = serve_rpc_spec(spec, FaultPlan::default(), |c| {
        c.monitor_interval_s = 1;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
    });
    let key = server.key(KeyOptions::default());
    let delegate = timeline_wallet("timeline_delegate");
    let body = json!({"wallets": [delegate], "callbackUrl": "http://127.0.0.1:9/hooks", "minSeverity": "low"});
    let created = create(&server, &key.secret, &body);
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.data()["id"].as_str().expect("id").to_owned();
    let baseline =
        checked_once(&server, &key.secret, &id)["watches"][0]["lastAnalysisId"].as_str().expect("baseline").to_owned();
    server.finish(&analysis_path(&baseline), &key.secret);
    // The node loses getTransaction: the re-analysis of the new activity fails.
    server.ledger_server().fail_method(Some("getTransaction"));
    let deadline = Instant::now() + Duration::from_secs(30);
    let failed = loop {
        let last = last_analyses(&server, &key.secret, &id).remove(0).expect("an analysis");
        if last != baseline {
            break last;
        }
        assert!(Instant::now() < deadline, "no re-analysis within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let polled = server.finish(&analysis_path(&failed), &key.secret);
    assert_eq!(polled.data()["status"], "FAILED", "{polled:?}");
    assert!(all_events(&server, &key.secret, &id).is_empty(), "a failed re-analysis makes no event");
    server.ledger_server().fail_method(None);

    let events = events_at_least(&server, &key.secret, &id, 1);
    std::thread::sleep(Duration::from_secs(2));
    let events_after = all_events(&server, &key.secret, &id);
    assert_eq!(events_after.len(), 1, "one event for the one change: {events_after:?}");
    assert_ne!(events[0]["analysisId"], failed.as_str(), "{events:?}");
    assert_eq!(events[0]["changes"]["previousAnalysisId"], baseline.as_str());
    assert!(events[0]["changes"]["appeared"].as_array().is_some_and(|a| !a.is_empty()), "{events:?}");
}

/// The analysis the monitor's wallet `index` was last checked with, once it is none of `seen`
/// (bounded), finished READY.
fn re_analysis_past(server: &TestServer, key: &str, id: &str, index: usize, seen: &[&str]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    let next = loop {
        let last = last_analyses(server, key, id).remove(index);
        if let Some(last) = last.filter(|a| !seen.contains(&a.as_str())) {
            break last;
        }
        assert!(Instant::now() < deadline, "no re-analysis past {seen:?} within 30 s");
        std::thread::sleep(Duration::from_millis(100));
    };
    let polled = server.finish(&analysis_path(&next), key);
    assert_eq!(polled.data()["status"], "READY", "{polled:?}");
    polled.data().clone()
}

/// A monitor of `body` for a key of a new account; the key, the monitor's id and its
/// baseline's analysis id (the first check done).
fn watched(server: &TestServer, body: &Value) -> (TestKey, String, String) {
    let key = server.key(KeyOptions::default());
    let created = create(server, &key.secret, body);
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.data()["id"].as_str().expect("id").to_owned();
    let checked = checked_once(server, &key.secret, &id);
    let baseline = checked["watches"][0]["lastAnalysisId"].as_str().expect("baseline").to_owned();
    (key, id, baseline)
}

/// Issue #42 item 7: a watched wallet re-analysed after activity that changes nothing — its
/// unlimited approval to the same delegate signed again — makes no event, however sensitive the
/// monitor (`minSeverity: info`, with `scoreDrop: 1` and without). Emitting on every
/// re-analysis fails here.
#[test]
fn a_re_analysis_after_activity_that_changes_nothing_makes_no_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The first approval happened before the monitors exist; the same one again at 12 s.
    let start_ms = xray::clock::now_unix_ms().saturating_sub(2_000);
    let events = [("timeline_delegate", 1), ("timeline_delegate", 12)];
    let server = timeline_server(dir.path(), start_ms, &events, |_| {});
    let delegate = timeline_wallet("timeline_delegate");
    let hook = "http://127.0.0.1:9/hooks";
    let sensitive = [
        json!({"wallets": [delegate], "callbackUrl": hook, "minSeverity": "info", "scoreDrop": 1}),
        json!({"wallets": [delegate], "callbackUrl": hook, "minSeverity": "info"}),
    ];
    let monitors: Vec<(TestKey, String, String)> = sensitive.iter().map(|body| watched(&server, body)).collect();
    assert!(xray::clock::now_unix_ms() < start_ms + 11_000, "the baselines took too long for the script");
    for (key, id, baseline) in &monitors {
        let polled = server.finish(&analysis_path(baseline), &key.secret);
        let kinds = polled.data()["xray"]["signals"].as_array().expect("signals").clone();
        assert!(
            kinds.iter().any(|s| s["kind"] == "open_token_delegation"),
            "the baseline has the approval: {polled:?}"
        );
        let again = re_analysis_past(&server, &key.secret, id, 0, &[baseline]);
        let changes = &again["xray"]["changes"];
        assert_eq!(changes["previousAnalysisId"], baseline.as_str(), "{again}");
        assert_eq!(changes["score"]["delta"], 0, "{again}");
        assert_eq!(changes["appeared"], json!([]), "{again}");
    }
    // The event, had there been one, was written with the re-analysis; a few checks more.
    std::thread::sleep(Duration::from_secs(2));
    for (key, id, _) in &monitors {
        assert_eq!(all_events(&server, &key.secret, id), Vec::<Value>::new(), "no event for no change");
    }
}

/// Issue #42 item 7: a score that falls past a monitor's `scoreDrop` makes exactly one event;
/// the same fall short of another monitor's `scoreDrop` makes none. The look-alike's dust (the
/// monitors' dust filter off) costs the wallet a `medium` signal and its score some points;
/// `minSeverity: critical`, so the score alone decides. Flipping the comparison's sign, or
/// emitting on every re-analysis, fails here.
#[test]
fn a_score_falling_past_score_drop_makes_exactly_one_event_and_short_of_it_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 7_000;
    let server = timeline_server(dir.path(), start_ms, &[("timeline_dust", 1)], |_| {});
    let dust = timeline_wallet("timeline_dust");
    let body = |score_drop: u8| {
        json!({"wallets": [dust], "callbackUrl": "http://127.0.0.1:9/hooks", "minSeverity": "critical",
               "scoreDrop": score_drop, "dustLamports": 0})
    };
    let (past, past_id, _) = watched(&server, &body(20));
    let (short, short_id, short_baseline) = watched(&server, &body(60));
    assert!(xray::clock::now_unix_ms() < start_ms + 1_000, "the baselines took too long for the script");

    let events = events_at_least(&server, &past.secret, &past_id, 1);
    let fell = -events[0]["changes"]["score"]["delta"].as_i64().expect("delta");
    assert!((20..60).contains(&fell), "the dust costs between the two scoreDrops: {fell} points");
    let appeared = events[0]["changes"]["appeared"].as_array().expect("appeared").clone();
    assert!(appeared.iter().all(|s| s["severity"] != "critical"), "the score alone made it: {appeared:?}");

    let again = re_analysis_past(&server, &short.secret, &short_id, 0, &[&short_baseline]);
    assert_eq!(-again["xray"]["changes"]["score"]["delta"].as_i64().expect("delta"), fell, "{again}");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(all_events(&server, &past.secret, &past_id).len(), 1, "exactly one event for one fall");
    assert_eq!(all_events(&server, &short.secret, &short_id), Vec::<Value>::new(), "a fall short of scoreDrop");
}

/// A labels file listing `address` as sanctioned, as an import would.
fn write_sanctions(path: &Path, address: &str) {
    let text = format!(
        "version = 1\n[[label]]\naddress = \"{address}\"\nname = \"SDN test entry\"\ncategory = \"sanctioned\"\nsource = \"test list\"\n"
    );
    std::fs::write(path, text).expect("labels written");
}

/// A server over a timeline whose dust arrived a minute ago, with an (empty) extra labels file
/// the test rewrites, and a monitor of the dust and quiet wallets whose baselines are READY.
fn labels_monitor(dir: &Path) -> (TestServer, TestKey, String, std::path::PathBuf) {
    let spec = timeline_spec(dir, xray::clock::now_unix_ms() - 60_000, &[("timeline_dust", 1)]);
    let extra = dir.join("sanctions.toml");
    std::fs::write(&extra, "version = 1\n").expect("labels written");
    let extra_path = extra.clone();
    let server = serve_rpc_spec(spec, FaultPlan::default(), |c| {
        c.monitor_interval_s = 1;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
        c.labels_extra = vec![extra_path];
    });
    let key = server.key(KeyOptions::default());
    let (dust, quiet) = (timeline_wallet("timeline_dust"), timeline_wallet("timeline_quiet"));
    let body = json!({"wallets": [dust, quiet], "callbackUrl": "http://127.0.0.1:9/hooks"});
    let created = create(&server, &key.secret, &body);
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.data()["id"].as_str().expect("id").to_owned();
    for watch in checked_once(&server, &key.secret, &id)["watches"].as_array().expect("watches") {
        server.finish(&analysis_path(watch["lastAnalysisId"].as_str().expect("id")), &key.secret);
    }
    (server, key, id, extra)
}

#[test]
fn a_labels_reload_re_screens_watched_wallets_and_makes_events_only_for_the_exposed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, key, id, extra) = labels_monitor(dir.path());
    let dust = timeline_wallet("timeline_dust");
    // A few checks: the baselines confirmed, nothing new.
    std::thread::sleep(Duration::from_secs(3));
    let before = last_analyses(&server, &key.secret, &id);
    let used_before = server.usage(&key.secret).used;
    let sanctions = |address: &str| {
        write_sanctions(&extra, address);
        let reloaded = server.admin("POST", "/v1/admin/labels/reload");
        assert_eq!(reloaded.status, 200, "{reloaded:?}");
        assert_eq!(reloaded.body["data"]["newlyListed"], 1, "{reloaded:?}");
    };
    // Everything but the checks' signature pages.
    let reads = || {
        let mut calls = server.ledger_calls();
        calls.remove("getSignaturesForAddress");
        calls
    };

    // A listed address neither wallet dealt with: the re-screen reads nothing from the
    // ledger, re-analyzes nothing, charges nothing.
    let reads_before = reads();
    sanctions("ci1KGByUWzTiEVeKdJcu3JEftjfJgPhfK5zP6MSiHpp");
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(reads(), reads_before, "the screen reads only what the node holds");
    assert!(all_events(&server, &key.secret, &id).is_empty());
    assert_eq!(last_analyses(&server, &key.secret, &id), before);
    assert_eq!(server.usage(&key.secret).used, used_before);

    // A sanctions import lists the dust's sender: only the wallet that dealt with it is
    // re-analyzed (with the labels now in force), and its event says why.
    let demo = xray::ledger::demo::DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    sanctions(&demo.timeline_lookalike().to_base58());
    events_at_least(&server, &key.secret, &id, 1);
    std::thread::sleep(Duration::from_secs(3));
    let events = all_events(&server, &key.secret, &id);
    assert_eq!(wallets_of(&events), BTreeSet::from([dust.clone()]), "only the exposed wallet: {events:?}");
    assert_eq!(events.len(), 1, "{events:?}");
    let appeared = events[0]["changes"]["appeared"].as_array().expect("appeared");
    assert!(appeared.iter().any(|s| s["kind"] == "sanctioned_counterparty"), "{events:?}");
    assert_eq!(events[0]["changes"]["previousAnalysisId"], before[0].as_deref().expect("baseline"));
    let after = last_analyses(&server, &key.secret, &id);
    assert_eq!(after[1], before[1], "the quiet, unexposed wallet was not re-analyzed");
    assert_eq!(server.usage(&key.secret).used, used_before + 1, "one unit: the exposed wallet's re-analysis");

    // A file that breaks changes nothing.
    std::fs::write(&extra, "version = 7\n").expect("labels written");
    let refused = server.admin("POST", "/v1/admin/labels/reload");
    assert_eq!(refused.status, 400, "{refused:?}");
    assert_eq!(refused.body["error"]["details"]["field"], "labels", "{refused:?}");
}

#[test]
fn a_labels_change_across_a_restart_still_re_screens_the_watched_wallets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut server, key, id, extra) = labels_monitor(dir.path());
    let dust = timeline_wallet("timeline_dust");
    std::thread::sleep(Duration::from_secs(3));
    // The operator adds the sanctions import and restarts instead of reloading: the new
    // process knows no reload, but each cursor remembers which listed set it reflects.
    let sender = xray::ledger::demo::DemoLedger::new(xray::config::DEMO_SEED_DEFAULT).timeline_lookalike();
    write_sanctions(&extra, &sender.to_base58());
    server.restart();
    events_at_least(&server, &key.secret, &id, 1);
    std::thread::sleep(Duration::from_secs(3));
    let events = all_events(&server, &key.secret, &id);
    assert_eq!(wallets_of(&events), BTreeSet::from([dust]), "only the exposed wallet: {events:?}");
    assert_eq!(events.len(), 1, "{events:?}");
    let appeared = events[0]["changes"]["appeared"].as_array().expect("appeared");
    assert!(appeared.iter().any(|s| s["kind"] == "sanctioned_counterparty"), "{events:?}");
}

/// The monitor's `GET` answer (`data`).
fn monitor_data(server: &TestServer, key: &str, id: &str) -> Value {
    let reply = get(server.addr, &format!("/v1/developer/monitors/{id}"), key);
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.data().clone()
}

/// Polls the monitor until `ready` holds of its `GET` answer (bounded).
fn monitor_until(server: &TestServer, key: &str, id: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let data = monitor_data(server, key, id);
        if ready(&data) {
            return data;
        }
        assert!(Instant::now() < deadline, "{what}: not within 30 s: {data}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `xray_monitor_checks_total{outcome="<outcome>"}` of this process.
fn checks_ended(server: &TestServer, outcome: &str) -> u64 {
    let series = format!("xray_monitor_checks_total{{outcome=\"{outcome}\"}} ");
    let text = server.metrics_text();
    let line = text.lines().find_map(|l| l.strip_prefix(series.as_str())).unwrap_or_else(|| panic!("no {series}"));
    line.trim().parse().expect("a count")
}

#[test]
fn dust_sent_to_a_watched_wallet_is_moved_past_without_a_re_analysis_or_a_charge() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 3_000;
    // At 1 s: 1_000 lamports and one DUSD base unit from a look-alike of the wallet's friend.
    let server = timeline_server(dir.path(), start_ms, &[("timeline_dust", 1)], |_| {});
    let key = server.key(KeyOptions::default());
    let dust = timeline_wallet("timeline_dust");
    let body = json!({"wallets": [dust], "callbackUrl": "http://127.0.0.1:9/hooks", "minSeverity": "low"});
    let created = create(&server, &key.secret, &body);
    assert_eq!(created.status, 201, "{created:?}");
    assert_eq!(created.data()["dustLamports"], xray::config::MONITOR_DUST_LAMPORTS_DEFAULT, "{created:?}");
    let id = created.data()["id"].as_str().expect("id").to_owned();
    let checked = checked_once(&server, &key.secret, &id);
    let baseline = checked["watches"][0]["lastAnalysisId"].as_str().expect("baseline").to_owned();
    let before = checked["watches"][0]["lastSignature"].clone();
    assert_eq!(checked["watches"][0]["lastActivity"], Value::Null, "a baseline is no activity: {checked}");
    server.finish(&analysis_path(&baseline), &key.secret);
    let used = server.usage(&key.secret).used;
    let dust_checks = checks_ended(&server, "dust");

    let data = monitor_until(&server, &key.secret, &id, "the dust recorded", |d| {
        d["watches"][0]["lastActivity"]["outcome"] == "dust"
    });
    let watch = &data["watches"][0];
    assert_ne!(watch["lastSignature"], before, "the cursor moved past the dust: {data}");
    assert_eq!(watch["lastAnalysisId"], baseline.as_str(), "no re-analysis: {data}");
    assert!(is_timestamp(&watch["lastActivity"]["at"]), "{data}");
    assert!(checks_ended(&server, "dust") > dust_checks, "counted in /metrics");
    // Checks go on: the dust is behind the cursor, nothing is re-analyzed, charged or counted.
    std::thread::sleep(Duration::from_secs(3));
    let data = monitor_data(&server, &key.secret, &id);
    assert_eq!(data["watches"][0]["lastAnalysisId"], baseline.as_str(), "{data}");
    assert_eq!(data["budget"]["used"], 0, "dust spends no budget: {data}");
    assert_eq!(server.usage(&key.secret).used, used, "dust costs nothing");
    assert!(all_events(&server, &key.secret, &id).is_empty());
}

#[test]
fn re_analyses_past_a_monitors_daily_budget_are_held_uncharged_and_made_once_it_allows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let start_ms = xray::clock::now_unix_ms() + 3_000;
    // A stranger sends the watched wallet something every 3 s (the look-alike's transfers, with
    // the monitor's dust filter off): inbound activity, which the budget counts. Beside it, a
    // wallet that signs a new approval every 3 s: outbound, which the budget never holds.
    let events = [
        ("timeline_dust", 1),
        ("timeline_dust", 4),
        ("timeline_dust", 7),
        ("timeline_dust", 10),
        ("timeline_delegate", 1),
        ("timeline_delegate", 4),
        ("timeline_delegate", 7),
        ("timeline_delegate", 10),
    ];
    let server = timeline_server(dir.path(), start_ms, &events, |_| {});
    let key = server.key(KeyOptions::default());
    let (other, delegate) = (server.key(KeyOptions::default()), timeline_wallet("timeline_delegate"));
    let outbound = json!({"wallets": [delegate], "callbackUrl": "http://127.0.0.1:9/hooks", "reanalysesPerDay": 1});
    let outbound = create(&server, &other.secret, &outbound);
    assert_eq!(outbound.status, 201, "{outbound:?}");
    let outbound_id = outbound.data()["id"].as_str().expect("id").to_owned();
    let receiver = timeline_wallet("timeline_dust");
    let body = json!({
        "wallets": [receiver],
        "callbackUrl": "http://127.0.0.1:9/hooks",
        "reanalysesPerDay": 2,
        "dustLamports": 0,
    });
    let created = create(&server, &key.secret, &body);
    assert_eq!((created.status, &created.data()["reanalysesPerDay"]), (201, &json!(2)), "{created:?}");
    let id = created.data()["id"].as_str().expect("id").to_owned();
    checked_once(&server, &key.secret, &id);
    let exhausted_checks = checks_ended(&server, "budget_exhausted");

    let held = monitor_until(&server, &key.secret, &id, "the budget exhausted", |d| {
        d["watches"][0]["lastActivity"]["outcome"] == "budget_exhausted"
    });
    let budget = &held["budget"];
    assert_eq!((budget["period"].as_str(), &budget["limit"], &budget["used"]), (Some("utc_day"), &json!(2), &json!(2)));
    assert_eq!(budget["exhausted"], true, "{held}");
    let resets = budget["resetsAt"].as_str().expect("resetsAt");
    assert!(is_timestamp(&budget["resetsAt"]) && resets.ends_with("T00:00:00.000Z"), "{held}");
    assert_eq!(held["watches"][0]["lastActivity"]["budgetResetsAt"], budget["resetsAt"], "{held}");
    let watch = held["watches"][0].clone();
    let last = watch["lastAnalysisId"].as_str().expect("an analysis").to_owned();
    server.finish(&analysis_path(&last), &key.secret);
    let usage = server.usage(&key.secret);
    assert_eq!(usage.wallet_analysis, 3, "the baseline and the two re-analyses the budget allows: {usage:?}");
    assert!(checks_ended(&server, "budget_exhausted") > exhausted_checks, "counted in /metrics");

    // More activity and more checks: nothing more is admitted or charged, the cursor stays
    // before the held activity.
    std::thread::sleep(Duration::from_secs(4));
    let still = monitor_data(&server, &key.secret, &id);
    assert_eq!(still["watches"][0]["lastAnalysisId"], watch["lastAnalysisId"], "{still}");
    assert_eq!(still["watches"][0]["lastSignature"], watch["lastSignature"], "{still}");
    assert_eq!(still["watches"][0]["lastActivity"]["outcome"], "budget_exhausted", "{still}");
    assert_eq!(still["budget"]["used"], 2, "{still}");
    assert_eq!(server.usage(&key.secret).units(), usage.units(), "usage does not grow past the budget");

    // A larger budget (as the next UTC day would): the next check re-analyzes what was held.
    let auth = format!("Bearer {}", key.secret);
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    let path = format!("/v1/developer/monitors/{id}");
    let changed = raw(server.addr, "PATCH", &path, &headers, &json!({"reanalysesPerDay": 3}).to_string());
    assert_eq!((changed.status, &changed.data()["reanalysesPerDay"]), (200, &json!(3)), "{changed:?}");
    let moved = monitor_until(&server, &key.secret, &id, "the held activity re-analyzed", |d| {
        d["watches"][0]["lastAnalysisId"] != watch["lastAnalysisId"]
    });
    assert_eq!(moved["watches"][0]["lastActivity"]["outcome"], "reanalyzed", "{moved}");
    assert_ne!(moved["watches"][0]["lastSignature"], watch["lastSignature"], "{moved}");
    assert_eq!(moved["budget"]["used"], 3, "{moved}");

    // The wallet that signs its approvals: re-analyzed past a budget of one, never held, the
    // budget untouched — a drain cannot be hidden behind a spent budget.
    let signer = monitor_data(&server, &other.secret, &outbound_id);
    assert_eq!(signer["budget"]["used"], 0, "{signer}");
    assert_ne!(signer["watches"][0]["lastActivity"]["outcome"], "budget_exhausted", "{signer}");
    assert!(server.usage(&other.secret).wallet_analysis >= 3, "the baseline and at least two re-analyses");
}

/// An analysis payload of about `bytes` whose `changes` a page parses out of the whole: many
/// small strings (a parse that costs what a real analysis of that size costs, or more).
fn large_payload(bytes: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes + 256);
    out.extend_from_slice(br#"{"changes":{"previousAnalysisId":null,"appeared":[],"resolved":[]},"filler":["#);
    while out.len() < bytes {
        out.extend_from_slice(br#""abcdefgh","#);
    }
    out.extend_from_slice(br#""end"]}"#);
    out
}

/// Stores `n` READY re-analyses of `monitor`'s wallet, each with an event and a payload of
/// about `bytes` (as the sink's completion would: admit, run, complete with the event).
fn store_large_events(server: &TestServer, key: &TestKey, monitor: &str, wallet: &str, n: usize, bytes: usize) {
    use xray::store::{Completion, EventRecord, JobKind, JobRecord, MonitorLink};
    let store = &server.running().store;
    let payload = large_payload(bytes);
    for _ in 0..n {
        let id = xray::jobs::admission::job_id("an_").expect("id");
        let now_ms = xray::clock::now_unix_ms();
        let kind = JobKind::Analysis { wallet: wallet.to_owned() };
        let mut job = JobRecord::queued(
            id.clone(),
            kind,
            key.account.clone(),
            key.id.clone(),
            now_ms,
            false,
            false,
            0,
            "v".into(),
        );
        job.monitor = Some(MonitorLink {
            monitor_id: monitor.to_owned(),
            callback_url: "http://127.0.0.1:9/hooks".into(),
            min_severity: "low".into(),
            score_drop: None,
            previous_analysis_id: None,
            event: None,
        });
        store.admit(&job, None).expect("admitted");
        store.mark_running(&id, now_ms).expect("running");
        let ready = Completion::Ready {
            payload_json: payload.clone(),
            engine_version: "v".into(),
            event: Some(EventRecord::of_job(&id, now_ms)),
            signature: None,
        };
        store.complete(&id, now_ms, &ready).expect("completed");
    }
}

/// Issue #40 item 4: an events page reads (and parses) up to 32 MiB of stored analyses; that
/// work runs on the store-work pool, so the one listener thread keeps answering its other
/// connections meanwhile. A cheap request on the same thread is timed throughout the page's
/// reads: its longest wait stays far below the page's own time (inline, it waited the page out).
#[test]
fn an_events_page_of_large_analyses_does_not_stall_its_listener() {
    let server = serve(|c| {
        c.listener_threads = 1;
        c.monitor_interval_s = 3_600;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
    });
    let key = server.key(KeyOptions::default());
    let body = json!({"wallets": [CLEAN], "callbackUrl": "http://127.0.0.1:9/hooks"});
    let created = create(&server, &key.secret, &body);
    assert_eq!(created.status, 201, "{created:?}");
    let id = created.data()["id"].as_str().expect("id").to_owned();
    store_large_events(&server, &key, &id, CLEAN, 4, 8 * 1024 * 1024);

    // The same pings with nothing else on the listener: what the machine itself costs.
    let mut ping = Conn::open(server.addr);
    let mut idle = (0..1_000)
        .map(|_| {
            let start = Instant::now();
            assert_eq!(ping.send("GET", "/healthz", None, None).status, 200);
            let took = start.elapsed();
            std::thread::sleep(Duration::from_micros(200));
            took
        })
        .collect::<Vec<_>>();
    idle.sort();
    let path = format!("/v1/developer/monitors/{id}/events?limit=100");
    let (pages, addr, secret) = (3, server.addr, key.secret.clone());
    let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let still = reading.clone();
    let reader = std::thread::spawn(move || {
        let mut conn = Conn::open(addr);
        let mut took = Vec::new();
        for _ in 0..pages {
            let start = Instant::now();
            let reply = conn.send("GET", &path, Some(&secret), None);
            took.push(start.elapsed());
            assert_eq!(
                reply.status,
                200,
                "{}",
                String::from_utf8_lossy(reply.raw_body.get(..300).unwrap_or(&reply.raw_body))
            );
            assert_eq!(reply.data()["events"].as_array().map(Vec::len), Some(4));
        }
        still.store(false, std::sync::atomic::Ordering::Release);
        took
    });
    let mut waits = Vec::new();
    while reading.load(std::sync::atomic::Ordering::Acquire) {
        let start = Instant::now();
        let reply = ping.send("GET", "/healthz", None, None);
        waits.push(start.elapsed());
        assert_eq!(reply.status, 200, "{reply:?}");
        std::thread::sleep(Duration::from_micros(200));
    }
    let took = reader.join().expect("the page reader");
    waits.sort();
    let page_min = *took.iter().min().expect("pages");
    let (median, p99, max) = (waits[waits.len() / 2], waits[waits.len() * 99 / 100], waits[waits.len() - 1]);
    eprintln!(
        "events page of 4 x 8 MiB analyses: {took:?}; /healthz on the same listener during it: {} requests, median {median:?}, p99 {p99:?}, max {max:?}; idle: median {:?}, p99 {:?}, max {:?}",
        waits.len(),
        idle[idle.len() / 2],
        idle[idle.len() * 99 / 100],
        idle[idle.len() - 1]
    );
    assert!(page_min > Duration::from_millis(20), "the page must take long enough to measure: {took:?}");
    assert!(waits.len() >= 20, "pinged throughout the pages: {}", waits.len());
    // Inline, a ping arriving during a page waits for the rest of it (max ≈ the page). The
    // bound leaves room for a scheduler's preemption on a shared 2-core machine.
    assert!(max < page_min / 4, "a cheap request waited {max:?} while a page took {page_min:?}");
}
