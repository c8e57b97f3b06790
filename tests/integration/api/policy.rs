//! The account's policy over real loopback HTTP (issue #31): read and replace it, the errors of
//! each mistake, the scopes, tenant isolation, the admin API, a restart; and what it does to an
//! analysis — an allow-listed flagged address stops counting, an ignored kind is gone, the
//! X-Ray names the policy, and a result of another policy (or version) is not reused — and to a
//! scan: its lists, and its sweep thresholds moving a verdict.

use serde_json::{json, Value};

use super::support::*;

const POLICY: &str = "/v1/developer/policy";
/// `drainer_contact`: a flagged program and transfers from a flagged address.
const DRAINER_CONTACT: &str = "6LxktvcB1Gxs3V6hhbcWtHJagBhQhSkwMeYjXUtaaEnS";

fn put(server: &TestServer, key: &str, body: &Value) -> Reply {
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    raw(server.addr, "PUT", POLICY, &headers, &body.to_string())
}

fn admin_policy(server: &TestServer, account: &str, method: &str, body: Option<&Value>) -> Reply {
    server.admin_json(method, &format!("/v1/admin/accounts/{account}/policy"), body)
}

/// Analyzes `wallet` to READY and returns (analysisId, xray).
fn analyze(server: &TestServer, key: &str, wallet: &str) -> (String, Value) {
    let admitted = post(server.addr, WALLET_PATH, key, &wallet_body(wallet));
    assert!(matches!(admitted.status, 200 | 202), "{admitted:?}");
    let done = server.finish(&admitted.poll_path(), key);
    assert_eq!(done.job_status(), "READY", "{done:?}");
    (done.data_str("analysisId"), done.data()["xray"].clone())
}

fn kinds(xray: &Value) -> Vec<String> {
    xray["signals"].as_array().unwrap().iter().map(|s| s["kind"].as_str().unwrap().to_owned()).collect()
}

/// Every flagged address the wallet dealt with (sorted: as the policy lists them).
fn flagged_counterparties(xray: &Value) -> Vec<String> {
    let signals = xray["signals"].as_array().unwrap().iter().filter(|s| s["kind"] == "flagged_counterparty_transfer");
    let mut parties: Vec<String> = signals.map(|s| s["facts"]["counterparty"].as_str().unwrap().to_owned()).collect();
    parties.sort_by_key(|a| xray::pubkey::Pubkey::parse(a).unwrap());
    assert!(!parties.is_empty(), "a flagged counterparty: {xray}");
    parties
}

#[test]
fn a_policy_is_read_replaced_and_changes_the_next_analysis_not_the_last() {
    let mut server = serve(|_| {});
    let key = server.key(KeyOptions::default());

    // Never set: the default policy, which changes nothing.
    let first = get(server.addr, POLICY, &key.secret);
    assert_eq!(first.status, 200, "{first:?}");
    let policy = &first.data()["policy"];
    assert_eq!((policy["id"].as_str(), policy["version"].as_u64()), (Some("default"), Some(0)));
    assert_eq!(policy["weights"]["authority_exposure"], json!(0.3));
    assert_eq!(policy["sweepThresholds"], default_sweep_thresholds(), "the defaults are shown");
    assert!(policy["updatedAt"].is_null() && policy["allowList"] == json!([]));

    let (before_id, before) = analyze(&server, &key.secret, DRAINER_CONTACT);
    assert_eq!(before["policy"], json!({"id": "default", "version": 0}));
    assert!(kinds(&before).contains(&"flagged_program_interaction".to_owned()), "{before}");
    let partners = flagged_counterparties(&before);

    // The account trusts the flagged sender, ignores program interactions and weighs its own way.
    let body = json!({
        "version": 0,
        "severityOverrides": {"flagged_program_interaction": "ignore", "new_wallet": "info"},
        "weights": {"authority_exposure": 0.2, "asset_risk": 0.2, "counterparty_risk": 0.4, "behaviour": 0.15, "data_quality": 0.05},
        "allowList": partners,
        "denyList": [],
    });
    let written = put(&server, &key.secret, &body);
    assert_eq!(written.status, 200, "{written:?}");
    let policy = written.data()["policy"].clone();
    let id = policy["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("pol_"), "{policy}");
    assert_eq!(policy["version"], json!(1));
    assert_eq!(policy["weights"]["counterparty_risk"], json!(0.4));
    assert_eq!(policy["allowList"], json!(partners));
    assert_eq!(get(server.addr, POLICY, &key.secret).data()["policy"], policy, "GET reads what PUT wrote");

    // The fresh result was made under another policy: not reused; the new one follows the policy.
    let (after_id, after) = analyze(&server, &key.secret, DRAINER_CONTACT);
    assert_ne!(after_id, before_id, "a result of another policy is not reused as fresh");
    assert_eq!(after["policy"], json!({"id": id, "version": 1}));
    let after_kinds = kinds(&after);
    assert!(!after_kinds.contains(&"flagged_program_interaction".to_owned()), "ignored: {after}");
    assert!(!after_kinds.contains(&"flagged_counterparty_transfer".to_owned()), "allow-listed counterparties: {after}");
    assert!(after["score"]["value"].as_u64() > before["score"]["value"].as_u64(), "{before} → {after}");
    assert_eq!(after["dimensions"][2]["weight"], json!(0.4));
    assert!(after["changes"].is_null(), "no changes across policies: {}", after["changes"]);
    // The earlier report still says what made it.
    let old = get(server.addr, &analysis_path(&before_id), &key.secret);
    assert_eq!(old.data()["xray"]["policy"], json!({"id": "default", "version": 0}));

    // Same policy, same version: the fresh result is reused (deduplicated onto it).
    let again = post(server.addr, WALLET_PATH, &key.secret, &wallet_body(DRAINER_CONTACT));
    assert_eq!(again.data_str("analysisId"), after_id, "{again:?}");

    // A write naming a stale version is refused; naming the current one lands.
    let stale = put(&server, &key.secret, &body);
    assert_error(&stale, 409, "CONFLICT");
    assert!(stale.error()["message"].as_str().unwrap().contains("version 1"), "{stale:?}");
    let mut next = body.clone();
    next["version"] = json!(1);
    next["denyList"] = json!([CLEAN]);
    let second = put(&server, &key.secret, &next);
    assert_eq!((second.status, &second.data()["policy"]["version"]), (200, &json!(2)), "{second:?}");
    assert_eq!(second.data()["policy"]["id"], json!(id), "the id is kept across versions");

    // It survives a restart (read from the store) and the admin API sees the same document.
    server.restart();
    let reread = get(server.addr, POLICY, &key.secret);
    assert_eq!(reread.data()["policy"], second.data()["policy"]);
    let by_admin = admin_policy(&server, &key.account, "GET", None);
    assert_eq!((by_admin.status, &by_admin.data()["policy"]), (200, &second.data()["policy"]), "{by_admin:?}");
    let (_, restarted) = analyze(&server, &key.secret, DRAINER_CONTACT);
    assert_eq!(restarted["policy"], json!({"id": id, "version": 2}));
}

#[test]
fn a_live_job_of_an_earlier_policy_version_is_not_joined() {
    // Every ledger call takes 400 ms: the first job is still live when the policy changes.
    let server = serve_slow(400, |_| {});
    let key = server.key(KeyOptions::default());
    let first = post(server.addr, WALLET_PATH, &key.secret, &wallet_body(OPEN_DELEGATION));
    assert_eq!(first.status, 202, "{first:?}");
    let joined = post(server.addr, WALLET_PATH, &key.secret, &wallet_body(OPEN_DELEGATION));
    assert_eq!(joined.data_str("analysisId"), first.data_str("analysisId"), "same policy: joined");

    let body = json!({"severityOverrides": {"new_wallet": "ignore"}});
    let written = put(&server, &key.secret, &body);
    assert_eq!(written.status, 200, "{written:?}");
    let policy = json!({"id": written.data()["policy"]["id"], "version": 1});

    // The live job runs under version 0: a request now is a job of its own, under version 1,
    // and a repeat joins that one.
    let second = post(server.addr, WALLET_PATH, &key.secret, &wallet_body(OPEN_DELEGATION));
    assert_eq!(second.status, 202, "{second:?}");
    assert_ne!(second.data_str("analysisId"), first.data_str("analysisId"), "not joined across policies");
    let repeat = post(server.addr, WALLET_PATH, &key.secret, &wallet_body(OPEN_DELEGATION));
    assert_eq!(repeat.data_str("analysisId"), second.data_str("analysisId"), "{repeat:?}");

    let old = server.finish(&first.poll_path(), &key.secret);
    assert_eq!(old.data()["xray"]["policy"], json!({"id": "default", "version": 0}), "{old:?}");
    let new = server.finish(&second.poll_path(), &key.secret);
    assert_eq!(new.data()["xray"]["policy"], policy, "{new:?}");
}

#[test]
fn each_mistake_is_a_400_naming_its_field_and_changes_nothing() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let long: Vec<String> = fresh_wallets("policy-long", 501);
    let cases = [
        (json!({"severityOverrides": {"no_such_kind": "ignore"}}), "severityOverrides"),
        (json!({"severityOverrides": {"new_wallet": "loud"}}), "severityOverrides"),
        (json!({"severityOverrides": ["new_wallet"]}), "severityOverrides"),
        (json!({"severityOverrides": {"sanctioned_counterparty": "ignore"}}), "severityOverrides"),
        (json!({"severityOverrides": {"sanctioned_funder_exposure": "low"}}), "severityOverrides"),
        (json!({"weights": {"authority_exposure": 1.0}}), "weights"),
        (
            json!({"weights": {"authority_exposure": 0.3, "asset_risk": 0.3, "counterparty_risk": 0.3, "behaviour": 0.15, "data_quality": 0.05}}),
            "weights",
        ),
        (json!({"weights": {"mood": 1}}), "weights"),
        (json!({"allowList": ["not-an-address"]}), "allowList"),
        (json!({"allowList": [CLEAN], "denyList": [CLEAN]}), "allowList"),
        (json!({"denyList": long}), "denyList"),
        (json!({"denyList": "x"}), "denyList"),
        (json!({"version": "1"}), "version"),
        (json!({"denylist": []}), "body"),
        (json!({"sweepThresholds": {"solSharePercent": 49}}), "sweepThresholds.solSharePercent"),
        (json!({"sweepThresholds": {"solSharePercent": "75"}}), "sweepThresholds.solSharePercent"),
        (json!({"sweepThresholds": {"tokenSharePercent": 101}}), "sweepThresholds.tokenSharePercent"),
        (json!({"sweepThresholds": {"dustLamports": 1_000_000_001u64}}), "sweepThresholds.dustLamports"),
        (json!({"sweepThresholds": {"dustTokenUnits": -1}}), "sweepThresholds.dustTokenUnits"),
        (json!({"sweepThresholds": {"solShare": 75}}), "sweepThresholds"),
        (json!({"sweepThresholds": 75}), "sweepThresholds"),
    ];
    for (body, field) in cases {
        let reply = put(&server, &key.secret, &body);
        assert_eq!((reply.status, reply.error()["code"].as_str()), (400, Some("INVALID_REQUEST")), "{body}: {reply:?}");
        assert_eq!(reply.error()["details"]["field"], json!(field), "{body}: {reply:?}");
    }
    let huge = json!({"denyList": vec!["1".repeat(200); 400]});
    assert_error(&put(&server, &key.secret, &huge), 413, "PAYLOAD_TOO_LARGE");
    let unchanged = get(server.addr, POLICY, &key.secret);
    assert_eq!(unchanged.data()["policy"]["version"], json!(0), "nothing was written: {unchanged:?}");
    // The lists' bound is accepted in full.
    let full = put(&server, &key.secret, &json!({"denyList": long[..500]}));
    assert_eq!(full.status, 200, "{full:?}");
    assert_eq!(full.data()["policy"]["denyList"].as_array().unwrap().len(), 500);
}

#[test]
fn a_policy_is_its_accounts_and_needs_its_scopes() {
    let server = serve(|_| {});
    let owner = server.key(KeyOptions::default());
    let reader = server.key(KeyOptions::scopes("policy:read").in_account(&owner.account));
    let stranger = server.key(KeyOptions::default());
    let written = put(&server, &owner.secret, &json!({"severityOverrides": {"new_wallet": "ignore"}}));
    assert_eq!(written.status, 200, "{written:?}");

    assert_eq!(
        get(server.addr, POLICY, &reader.secret).data()["policy"],
        written.data()["policy"],
        "shared by the account"
    );
    assert_error_details(
        &put(&server, &reader.secret, &json!({})),
        403,
        "INSUFFICIENT_SCOPE",
        &json!({"requiredScope": "policy:write"}),
    );
    let analyst = server.key(KeyOptions::scopes("wallet:analyze,analysis:read").in_account(&owner.account));
    assert_error_details(
        &get(server.addr, POLICY, &analyst.secret),
        403,
        "INSUFFICIENT_SCOPE",
        &json!({"requiredScope": "policy:read"}),
    );
    let theirs = get(server.addr, POLICY, &stranger.secret);
    assert_eq!(theirs.data()["policy"]["id"], json!("default"), "another account's policy is its own: {theirs:?}");

    // The operator reads and writes any account's; an unknown account is a 404.
    let by_admin = admin_policy(&server, &stranger.account, "PUT", Some(&json!({"denyList": [CLEAN]})));
    assert_eq!((by_admin.status, &by_admin.data()["policy"]["version"]), (200, &json!(1)), "{by_admin:?}");
    assert_eq!(get(server.addr, POLICY, &stranger.secret).data()["policy"]["denyList"], json!([CLEAN]));
    assert_eq!(get(server.addr, POLICY, &owner.secret).data()["policy"], written.data()["policy"], "untouched");
    assert_error(&admin_policy(&server, "acct_4vJ9JU1bJJE96FWSJKvHsmmF", "GET", None), 404, "NOT_FOUND");
    let wrong_method =
        raw(server.addr, "DELETE", POLICY, &[("authorization", &format!("Bearer {}", owner.secret))], "");
    assert_eq!(wrong_method.status, 405, "{wrong_method:?}");
    assert_eq!(wrong_method.header("allow"), Some("GET, PUT"));
}

#[test]
fn a_scan_reads_the_accounts_lists_and_names_its_policy() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let scan = |key: &str| post(server.addr, SCAN_PATH, key, &scan_body(&demo_tx("sol-transfer"), None));
    let kinds = |reply: &Reply| -> Vec<String> {
        reply.data()["findings"].as_array().unwrap().iter().map(|f| f["kind"].as_str().unwrap().to_owned()).collect()
    };
    let before = scan(&key.secret);
    assert_eq!(before.status, 200, "{before:?}");
    assert_eq!(before.data()["policy"], json!({"id": "default", "version": 0}));
    assert!(!kinds(&before).contains(&"flagged_recipient".to_owned()), "{before:?}");
    // The system transfer's recipient (its second account), deny-listed by this account only.
    let recipient = before.data()["instructions"][0]["accounts"][1].as_str().unwrap().to_owned();
    let written = put(&server, &key.secret, &json!({"denyList": [recipient]}));
    assert_eq!(written.status, 200, "{written:?}");
    let after = scan(&key.secret);
    assert!(kinds(&after).contains(&"flagged_recipient".to_owned()), "a deny-listed recipient is flagged: {after:?}");
    // It says the account's own list is why, not the labels.
    let flagged =
        after.data()["findings"].as_array().unwrap().iter().find(|f| f["kind"] == "flagged_recipient").unwrap();
    assert_eq!((&flagged["facts"]["reason"], &flagged["facts"]["to"]), (&json!("deny_list"), &json!(recipient)));
    assert!(flagged["facts"]["lamports"].is_u64(), "lamports an integer: {flagged}");
    let text = format!("{} {}", flagged["title"], flagged["detail"]);
    assert!(text.contains("deny list") && !text.contains("malicious"), "{text}");
    assert_eq!(after.data()["policy"]["version"], json!(1));
    let stranger = server.key(KeyOptions::default());
    assert!(
        !kinds(&scan(&stranger.secret)).contains(&"flagged_recipient".to_owned()),
        "another account's lists are its own"
    );
}

/// `sweepThresholds` of a policy that sets none (`engine::sweep::SweepThresholds::DEFAULT`).
fn default_sweep_thresholds() -> Value {
    json!({"solSharePercent": 90, "tokenSharePercent": 99, "dustLamports": 10_000_000, "dustTokenUnits": 1_000})
}

/// The base64 of an unsigned transaction in which the demo's `clean` wallet sends `percent` % of
/// its SOL to an address it never dealt with.
fn clean_sends_share_of_its_sol(percent: u64) -> String {
    use base64::Engine as _;
    use xray::ledger::read::LedgerSource as _;
    use xray::ledger::transaction::message::{compile, sdk_address};
    use xray::pubkey::Pubkey;
    let ledger = xray::ledger::demo::DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let me = Pubkey::parse(CLEAN).unwrap();
    let rt = xray::ledger::runtime().expect("runtime");
    let lamports = rt.block_on(ledger.get_account_info(&me)).expect("read").value.expect("the wallet").lamports;
    let send = solana_system_interface::instruction::transfer(
        &sdk_address(&me),
        &sdk_address(&Pubkey([77; 32])),
        lamports / 100 * percent,
    );
    let bytes = compile(me, &[xray::instruction_parts!(send)], [3; 32], false).expect("compiles");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn a_scan_draws_sweeps_at_the_accounts_thresholds() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let body = scan_body(&clean_sends_share_of_its_sol(80), None);
    let scan = |key: &str| post(server.addr, SCAN_PATH, key, &body);

    // 80 % of the wallet account's SOL to a stranger: under the default 90 %, no sweep.
    let before = scan(&key.secret);
    assert_eq!(before.status, 200, "{before:?}");
    assert_eq!(before.data()["simulation"]["status"], "ok", "{before:?}");
    assert_eq!((&before.data()["verdict"], &before.data()["findings"]), (&json!("benign"), &json!([])), "{before:?}");
    assert_eq!(before.data()["policy"], json!({"id": "default", "version": 0}));

    // The account draws a sweep at 75 % of its SOL; the other members stay the defaults.
    let written = put(&server, &key.secret, &json!({"sweepThresholds": {"solSharePercent": 75}}));
    assert_eq!(written.status, 200, "{written:?}");
    let mut in_force = default_sweep_thresholds();
    in_force["solSharePercent"] = json!(75);
    assert_eq!(written.data()["policy"]["sweepThresholds"], in_force, "{written:?}");
    assert_eq!(get(server.addr, POLICY, &key.secret).data()["policy"], written.data()["policy"]);
    let id = written.data()["policy"]["id"].clone();

    let after = scan(&key.secret);
    assert_eq!(after.status, 200, "{after:?}");
    assert_eq!(after.data()["verdict"], "warning", "{after:?}");
    let sweep = &after.data()["findings"][0];
    assert_eq!((&sweep["kind"], &sweep["severity"]), (&json!("asset_sweep"), &json!("medium")), "{after:?}");
    // Its share of all the wallet's SOL: its token accounts' rent counts too (79 % on the demo).
    let share: u64 = sweep["facts"]["solSharePercent"].as_u64().expect("a share, an integer");
    assert!((75..90).contains(&share), "{after:?}");
    assert_eq!(after.data()["findings"].as_array().map(Vec::len), Some(1), "{after:?}");
    assert_eq!(after.data()["policy"], json!({"id": id, "version": 1}), "the report names the policy that judged it");

    // Another account keeps the defaults; back to them (null), this account's verdict is benign.
    let stranger = server.key(KeyOptions::default());
    assert_eq!(scan(&stranger.secret).data()["verdict"], "benign");
    let reset = put(&server, &key.secret, &json!({"sweepThresholds": {"solSharePercent": null}}));
    assert_eq!(reset.data()["policy"]["sweepThresholds"], default_sweep_thresholds(), "{reset:?}");
    let again = scan(&key.secret);
    assert_eq!((&again.data()["verdict"], &again.data()["policy"]["version"]), (&json!("benign"), &json!(2)));
}

#[test]
fn a_sweep_cites_an_authority_handed_away_only_as_the_accounts_policy_rates_it() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let body = scan_body(&demo_tx("drain"), None);
    let sweep_of = |answer: &Reply| {
        let findings = answer.data()["findings"].as_array().cloned().unwrap_or_default();
        findings.into_iter().find(|f| f["kind"] == "asset_sweep").expect("a sweep")
    };
    // By default the drain's owner change is critical, and the sweep beside it is critical too.
    let before = post(server.addr, SCAN_PATH, &key.secret, &body);
    let sweep = sweep_of(&before);
    assert_eq!(sweep["severity"], "critical", "{before:?}");
    assert!(sweep["detail"].as_str().unwrap_or("").contains("token_owner_change"), "{sweep}");

    // The account rates owner changes `high`: the sweep no longer cites one (two assets: high).
    let written = put(&server, &key.secret, &json!({"severityOverrides": {"token_owner_change": "high"}}));
    assert_eq!(written.status, 200, "{written:?}");
    let after = post(server.addr, SCAN_PATH, &key.secret, &body);
    let sweep = sweep_of(&after);
    assert_eq!(sweep["severity"], "high", "{after:?}");
    assert!(!sweep["detail"].as_str().unwrap_or("").contains("token_owner_change"), "{sweep}");
    let owner =
        after.data()["findings"].as_array().and_then(|f| f.iter().find(|f| f["kind"] == "token_owner_change").cloned());
    assert_eq!(owner.map(|f| f["severity"].clone()), Some(json!("high")), "{after:?}");
}
