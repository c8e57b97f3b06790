//! Monitors over real loopback HTTP (issue #30): create, list, read, change and delete; the
//! scopes each needs; tenant isolation; the bounds; the checks a node makes (a baseline
//! analysis per wallet, charged, then quiet checks that cost one `getSignaturesForAddress`).
//! The events of a ledger that moves are in `monitor_events.rs`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::support::*;

const MONITORS: &str = "/v1/developer/monitors";

pub(crate) fn monitor_server(tweak: impl FnOnce(&mut xray::config::ServeConfig)) -> TestServer {
    serve(|c| {
        c.monitor_interval_s = 1;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
        tweak(c)
    })
}

pub(crate) fn create(server: &TestServer, key: &str, body: &Value) -> Reply {
    post(server.addr, MONITORS, key, &body.to_string())
}

fn request(server: &TestServer, method: &str, path: &str, key: &str, body: Option<&Value>) -> Reply {
    let auth = format!("Bearer {key}");
    let text = body.map(Value::to_string).unwrap_or_default();
    let mut headers = vec![("authorization", auth.as_str())];
    if body.is_some() {
        headers.push(("content-type", "application/json"));
    }
    raw(server.addr, method, path, &headers, &text)
}

/// A poll-only monitor of `wallets` (no `callbackUrl`: its events are read from its page).
fn monitor_body(wallets: &[&str]) -> Value {
    json!({"wallets": wallets})
}

/// Makes `key`'s account a webhook secret (admin API), as a monitor with a `callbackUrl` needs.
pub(crate) fn make_webhook_secret(server: &TestServer, key: &TestKey) -> String {
    let reply = server.admin("POST", &format!("/v1/admin/accounts/{}/webhook-secret", key.account));
    assert_eq!(reply.status, 201, "{reply:?}");
    reply.body["secret"].as_str().expect("secret").to_owned()
}

/// Polls `GET …/monitors/:id` until every wallet was checked once (bounded).
pub(crate) fn checked_once(server: &TestServer, key: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let reply = get(server.addr, &format!("{MONITORS}/{id}"), key);
        assert_eq!(reply.status, 200, "{reply:?}");
        let data = reply.data().clone();
        let watches = data["watches"].as_array().expect("watches").clone();
        if watches.iter().all(|w| w["lastAnalysisId"].is_string()) {
            return data;
        }
        assert!(Instant::now() < deadline, "not every wallet checked within 20 s: {data}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `checked_once`, then every watch's analysis `READY`: a baseline still reading the ledger
/// would otherwise fall into a window that counts the quiet checks' calls (under load it did).
fn checked_and_settled(server: &TestServer, key: &str, id: &str) {
    let data = checked_once(server, key, id);
    for watch in data["watches"].as_array().expect("watches") {
        let analysis = watch["lastAnalysisId"].as_str().expect("an analysis");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let reply = get(server.addr, &format!("/v1/developer/intelligence/analysis/{analysis}?wait=5"), key);
            if reply.data()["status"] == "READY" {
                break;
            }
            assert!(Instant::now() < deadline, "{analysis} not READY within 20 s: {reply:?}");
        }
    }
}

#[test]
fn a_monitor_is_created_read_listed_changed_and_deleted() {
    let server = monitor_server(|_| {});
    let test_key = server.key(KeyOptions::default());
    make_webhook_secret(&server, &test_key);
    let key = test_key.secret;
    let created = create(
        &server,
        &key,
        &json!({"wallets": [CLEAN, OPEN_DELEGATION], "callbackUrl": "http://127.0.0.1:9/hooks", "scoreDrop": 10}),
    );
    assert_eq!(created.status, 201, "{created:?}");
    let data = created.data();
    assert_eq!(data["callbackUrl"], "http://127.0.0.1:9/hooks");
    let id = data["id"].as_str().expect("id").to_owned();
    assert!(id.starts_with("mon_"), "{id}");
    assert_eq!(data["wallets"], json!([CLEAN, OPEN_DELEGATION]));
    assert_eq!((data["minSeverity"].as_str(), data["scoreDrop"].as_u64()), (Some("high"), Some(10)));
    assert_eq!(data["intervalSeconds"], 1);
    assert!(data.get("watches").is_none(), "watches only on GET one: {data}");

    let read = checked_once(&server, &key, &id);
    assert_eq!(read["lagging"], false, "{read}");
    for watch in read["watches"].as_array().expect("watches") {
        let analysis = watch["lastAnalysisId"].as_str().expect("lastAnalysisId");
        assert!(analysis.starts_with("an_"), "{watch}");
        assert!(watch["lastSignature"].is_string() && watch["lastCheckedAt"].is_string(), "{watch}");
        // Admitted is not finished: a unit is counted once its job settles.
        server.finish(&analysis_path(analysis), &key);
    }
    // The baselines are analyses of the account, charged one unit each.
    let usage = server.usage(&key);
    assert_eq!(usage.wallet_analysis, 2, "{usage:?}");

    let listed = get(server.addr, MONITORS, &key);
    assert_eq!(listed.status, 200, "{listed:?}");
    assert_eq!(listed.data()["monitors"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed.data()["nextAfter"], Value::Null);

    let path = format!("{MONITORS}/{id}");
    let patch = json!({"addWallets": [SYBIL_A], "removeWallets": [CLEAN], "minSeverity": "medium", "scoreDrop": null,
        "callbackUrl": null});
    let changed = request(&server, "PATCH", &path, &key, Some(&patch));
    assert_eq!(changed.status, 200, "{changed:?}");
    assert_eq!(changed.data()["callbackUrl"], Value::Null, "null makes it poll-only: {changed:?}");
    assert_eq!(changed.data()["wallets"], json!([OPEN_DELEGATION, SYBIL_A]));
    // The removed wallet's cursor went with it (a wallet added again starts over).
    let registry = xray::monitors::Registry::new(server.running().store.clone());
    let clean = xray::pubkey::Pubkey::parse(CLEAN).expect("address");
    assert_eq!(registry.cursor(&id, &clean).expect("store"), None, "the removed wallet's cursor");
    let kept = xray::pubkey::Pubkey::parse(OPEN_DELEGATION).expect("address");
    assert!(registry.cursor(&id, &kept).expect("store").is_some(), "a kept wallet's cursor");
    assert_eq!((changed.data()["minSeverity"].as_str(), &changed.data()["scoreDrop"]), (Some("medium"), &Value::Null));

    let deleted = request(&server, "DELETE", &path, &key, None);
    assert_eq!((deleted.status, &deleted.data()["deleted"]), (200, &json!(true)), "{deleted:?}");
    assert_eq!(get(server.addr, &path, &key).status, 404);
    assert_eq!(request(&server, "DELETE", &path, &key, None).status, 404);
}

#[test]
fn bad_monitors_are_refused_naming_the_field() {
    let server = monitor_server(|_| {});
    let key = server.key(KeyOptions::default()).secret;
    // The request's own refusals (400) come before the account's missing webhook secret (409).
    let cases = [
        (json!({"callbackUrl": "http://127.0.0.1:9/h"}), "wallets"),
        (json!({"wallets": [], "callbackUrl": "http://127.0.0.1:9/h"}), "wallets"),
        (json!({"wallets": ["not-an-address"], "callbackUrl": "http://127.0.0.1:9/h"}), "wallets"),
        (json!({"wallets": [CLEAN, CLEAN], "callbackUrl": "http://127.0.0.1:9/h"}), "wallets"),
        (json!({"wallets": [CLEAN], "callbackUrl": 9}), "callbackUrl"),
        (json!({"wallets": [CLEAN], "callbackUrl": "ftp://example.com/h"}), "callbackUrl"),
        (json!({"wallets": [CLEAN], "callbackUrl": "http://127.0.0.1:9/h", "minSeverity": "severe"}), "minSeverity"),
        (json!({"wallets": [CLEAN], "callbackUrl": "http://127.0.0.1:9/h", "scoreDrop": 0}), "scoreDrop"),
        (json!({"wallets": [CLEAN], "callbackUrl": "http://127.0.0.1:9/h", "scoreDrop": 101}), "scoreDrop"),
        (json!({"wallets": [CLEAN], "callbackUrl": "http://127.0.0.1:9/h", "scoreDrop": "5"}), "scoreDrop"),
    ];
    for (body, field) in cases {
        let reply = create(&server, &key, &body);
        assert_eq!(reply.status, 400, "{body}: {reply:?}");
        assert_eq!(reply.error()["details"]["field"], field, "{body}: {reply:?}");
    }
    let many: Vec<String> = fresh_wallets("monitor-many", 101);
    let reply = create(&server, &key, &json!({"wallets": many, "callbackUrl": "http://127.0.0.1:9/h"}));
    assert_eq!((reply.status, reply.error()["details"]["field"].as_str()), (400, Some("wallets")), "{reply:?}");
    // Nothing was made.
    assert_eq!(get(server.addr, MONITORS, &key).data()["monitors"], json!([]));
}

#[test]
fn monitors_need_their_scopes_and_stay_in_their_account() {
    let server = monitor_server(|_| {});
    let owner_key = server.key(KeyOptions::default());
    let owner = owner_key.secret.clone();
    let created = create(&server, &owner, &monitor_body(&[CLEAN]));
    let id = created.data()["id"].as_str().expect("id").to_owned();
    let path = format!("{MONITORS}/{id}");

    let stranger = server.key(KeyOptions::default()).secret;
    for (method, p) in [("GET", path.clone()), ("DELETE", path.clone()), ("GET", format!("{path}/events"))] {
        let reply = request(&server, method, &p, &stranger, None);
        assert_eq!(reply.status, 404, "{method} {p}: {reply:?}");
    }
    let patched = request(&server, "PATCH", &path, &stranger, Some(&json!({"minSeverity": "low"})));
    assert_eq!(patched.status, 404, "{patched:?}");
    assert_eq!(get(server.addr, MONITORS, &stranger).data()["monitors"], json!([]));

    let reader = server.key(KeyOptions::scopes("monitor:read").in_account(&owner_key.account)).secret;
    assert_eq!(get(server.addr, &path, &reader).status, 200);
    let refused = request(&server, "DELETE", &path, &reader, None);
    assert_eq!((refused.status, refused.error()["details"]["requiredScope"].as_str()), (403, Some("monitor:write")));
    // Events carry an analysis' changes: analysis:read too.
    let events = get(server.addr, &format!("{path}/events"), &reader);
    assert_eq!((events.status, events.error()["details"]["requiredScope"].as_str()), (403, Some("analysis:read")));
    // Watching analyzes (charged): wallet:analyze. A monitor's webhook delivers changes: its
    // creator needs analysis:read.
    let watcher = server.key(KeyOptions::scopes("monitor:write,analysis:read")).secret;
    let refused = create(&server, &watcher, &monitor_body(&[CLEAN]));
    assert_eq!((refused.status, refused.error()["details"]["requiredScope"].as_str()), (403, Some("wallet:analyze")));
    let writer = server.key(KeyOptions::scopes("monitor:write,wallet:analyze")).secret;
    let hooked = json!({"wallets": [CLEAN], "callbackUrl": "http://127.0.0.1:9/hooks"});
    let refused = create(&server, &writer, &hooked);
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(refused.error()["details"]["field"], "callbackUrl");
    // A poll-only monitor's events are read with analysis:read: its creator needs it too.
    let refused = create(&server, &writer, &monitor_body(&[CLEAN]));
    assert_eq!((refused.status, refused.error()["details"]["requiredScope"].as_str()), (403, Some("analysis:read")));
    // A mint is no wallet to watch: refused as POST …/wallet refuses it.
    let key = owner.as_str();
    let mint = create(&server, key, &monitor_body(&[TOKEN_MINT]));
    assert_eq!((mint.status, mint.error()["details"]["field"].as_str()), (422, Some("wallets")), "{mint:?}");
    let none = server.key(KeyOptions::scopes("wallet:analyze")).secret;
    assert_eq!(get(server.addr, MONITORS, &none).status, 403);
}

#[test]
fn an_account_holds_a_bounded_number_of_monitors() {
    let server = monitor_server(|c| c.monitor_interval_s = 3_600);
    let key = server.key(KeyOptions::default()).secret;
    for i in 0..xray::config::MONITORS_PER_ACCOUNT_MAX {
        let reply = create(&server, &key, &monitor_body(&[&fresh_wallets(&format!("bound-{i}"), 1)[0]]));
        assert_eq!(reply.status, 201, "monitor {i}: {reply:?}");
    }
    let over = create(&server, &key, &monitor_body(&[CLEAN]));
    assert_eq!(over.status, 409, "{over:?}");
    assert_eq!(over.error()["code"], "CONFLICT");
    assert_eq!(over.error()["details"]["limit"], xray::config::MONITORS_PER_ACCOUNT_MAX);
    // Listed in pages.
    let first = get(server.addr, &format!("{MONITORS}?limit=60"), &key);
    let after = first.data()["nextAfter"].as_str().expect("a next page").to_owned();
    let second = get(server.addr, &format!("{MONITORS}?limit=60&after={after}"), &key);
    let count = |r: &Reply| r.data()["monitors"].as_array().map_or(0, Vec::len);
    assert_eq!((count(&first), count(&second)), (60, 40));
    assert_eq!(get(server.addr, &format!("{MONITORS}?limit=0"), &key).status, 400);
}

#[test]
fn quiet_checks_read_one_signature_page_and_charge_nothing() {
    let server = serve_rpc(xray::devtools::rpc_server::FaultPlan::default(), |c| {
        c.monitor_interval_s = 1;
        c.webhook_allow_hosts = vec!["127.0.0.1".into()];
    });
    let key = server.key(KeyOptions::default()).secret;
    let created = create(&server, &key, &monitor_body(&[CLEAN, OPEN_DELEGATION]));
    let id = created.data()["id"].as_str().expect("id").to_owned();
    checked_and_settled(&server, &key, &id);
    let used = server.usage(&key).wallet_analysis;
    let before = server.ledger_calls();
    std::thread::sleep(Duration::from_millis(3_500));
    let made = server.ledger_calls_since(&before);
    let calls: u64 = made.values().sum();
    let pages = made.get("getSignaturesForAddress").copied().unwrap_or(0);
    // Two wallets, a check a second each: every call a signatures page, nothing else.
    assert!((4..=10).contains(&pages), "{pages} pages in 3.5 s: {made:?}");
    assert_eq!(calls, pages, "{made:?}");
    assert_eq!(server.usage(&key).wallet_analysis, used, "quiet checks are free");
}

#[test]
fn a_callback_url_needs_the_accounts_webhook_secret_and_a_monitor_without_one_is_poll_only() {
    let server = monitor_server(|c| c.monitor_interval_s = 3_600);
    let test_key = server.key(KeyOptions::default());
    let key = test_key.secret.as_str();
    let hooked = json!({"wallets": [CLEAN], "callbackUrl": "http://127.0.0.1:9/hooks"});
    // No secret yet: refused, naming the command (and admin route) that makes one.
    let refused = create(&server, key, &hooked);
    assert_eq!(refused.status, 409, "{refused:?}");
    assert_eq!(refused.error()["code"], "CONFLICT");
    let details = &refused.error()["details"];
    assert_eq!(
        (details["field"].as_str(), details["reason"].as_str()),
        (Some("callbackUrl"), Some("no_webhook_secret"))
    );
    let message = refused.error()["message"].as_str().expect("message");
    let command = format!("xray accounts webhook-secret --data-dir <dir> --account {}", test_key.account);
    assert!(message.contains(&command), "{message}");
    assert!(message.contains(&format!("/v1/admin/accounts/{}/webhook-secret", test_key.account)), "{message}");
    assert_eq!(get(server.addr, MONITORS, key).data()["monitors"], json!([]), "nothing made");

    // Without a callbackUrl: poll-only, accepted.
    let polled = create(&server, key, &monitor_body(&[CLEAN]));
    assert_eq!((polled.status, &polled.data()["callbackUrl"]), (201, &Value::Null), "{polled:?}");
    let path = format!("{MONITORS}/{}", polled.data()["id"].as_str().expect("id"));
    // Adding a callbackUrl is refused the same way; clearing one, or changing anything else, is not.
    let patched = request(&server, "PATCH", &path, key, Some(&json!({"callbackUrl": "http://127.0.0.1:9/hooks"})));
    assert_eq!((patched.status, patched.error()["details"]["reason"].as_str()), (409, Some("no_webhook_secret")));
    assert_eq!(get(server.addr, &path, key).data()["callbackUrl"], Value::Null, "unchanged");
    let patched = request(&server, "PATCH", &path, key, Some(&json!({"callbackUrl": null, "minSeverity": "low"})));
    assert_eq!(patched.status, 200, "{patched:?}");

    // Once the account has a secret, both succeed.
    make_webhook_secret(&server, &test_key);
    let created = create(&server, key, &hooked);
    assert_eq!((created.status, created.data()["callbackUrl"].as_str()), (201, Some("http://127.0.0.1:9/hooks")));
    let patched = request(&server, "PATCH", &path, key, Some(&json!({"callbackUrl": "http://127.0.0.1:9/hooks"})));
    assert_eq!((patched.status, patched.data()["callbackUrl"].as_str()), (200, Some("http://127.0.0.1:9/hooks")));
    // Another account's secret is not this one's.
    let other = server.key(KeyOptions::default()).secret;
    assert_eq!(create(&server, &other, &hooked).status, 409);
}
