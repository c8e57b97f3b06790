//! Sequence scans over real loopback HTTP (issue #44 item 2): `transactions: [...]` run in order
//! on one state of the demo ledger, each judged in its place and the whole judged on what it
//! does in sum — a drain split over two transactions that neither alone shows is caught —;
//! `mode: "bundle"` all or nothing; one quota unit per transaction; signed
//! `xray.scan_sequence.v1` and bound to every transaction's message; every refusal charged
//! nothing.

use base64::Engine as _;
use serde_json::{json, Value};
use xray::signing::{verify_scan, verify_scan_sequence, ScanBinding, SequenceBinding, VerifyReason};

use super::support::*;

fn sequence(server: &TestServer, key: &str, transactions: &[String], mode: Option<&str>) -> Reply {
    let mut body = json!({ "transactions": transactions });
    if let Some(mode) = mode {
        body["mode"] = json!(mode);
    }
    post(server.addr, SCAN_PATH, key, &body.to_string())
}

fn b64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(text).expect("base64")
}

/// `(index, verdict, simulation status)` of each transaction.
fn items(data: &Value) -> Vec<(u64, String, String)> {
    data["transactions"]
        .as_array()
        .expect("transactions")
        .iter()
        .map(|t| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (t["index"].as_u64().unwrap_or(99), text(&t["verdict"]), text(&t["simulation"]["status"]))
        })
        .collect()
}

fn kinds(findings: &Value) -> Vec<String> {
    findings
        .as_array()
        .map_or_else(Vec::new, |f| f.iter().filter_map(|f| f["kind"].as_str().map(str::to_owned)).collect())
}

/// The signer's SOL delta in `effects`.
fn sol_delta(effects: &Value) -> i64 {
    effects
        .as_array()
        .expect("effects")
        .iter()
        .find(|e| e["kind"] == "sol")
        .and_then(|e| e["deltaLamports"].as_i64())
        .expect("a sol effect")
}

#[test]
fn a_drain_split_over_two_transactions_that_neither_alone_shows_is_caught_signed_and_charged_two_units() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let halves = [demo_tx("split-drain-1"), demo_tx("split-drain-2")];
    // Alone, each is a payment: 89 % and 8 % of the SOL, under the sweep's 90 %.
    for half in &halves {
        let alone = post(server.addr, SCAN_PATH, &key.secret, &scan_body(half, None));
        assert_eq!((alone.status, alone.data()["verdict"].as_str()), (200, Some("benign")), "{alone:?}");
    }
    let reply = sequence(&server, &key.secret, &halves, None);
    assert_eq!(reply.status, 200, "{reply:?}");
    let data = reply.data();
    assert_eq!(data["mode"], "sequence");
    assert_eq!(
        items(data),
        vec![(0, "benign".into(), "ok".into()), (1, "benign".into(), "ok".into())],
        "each judged in its place is still a payment (the second moves 73 % of what the first leaves): {reply:?}"
    );
    assert_eq!(kinds(&data["findings"]), ["asset_sweep"], "the whole is a sweep: {reply:?}");
    assert_eq!(data["findings"][0]["facts"]["solSharePercent"].as_u64().map(|p| p >= 90), Some(true), "{reply:?}");
    assert_ne!(data["verdict"], "benign", "{reply:?}");
    assert_eq!(data["applied"], json!({"transactions": [0, 1]}));
    // The whole's effects are the sum: both transfers and both fees.
    let (first, second) =
        (sol_delta(&data["transactions"][0]["effects"]), sol_delta(&data["transactions"][1]["effects"]));
    assert_eq!(sol_delta(&data["effects"]), first + second, "{reply:?}");
    // Signed as a sequence, bound to both messages in order, the account and the origin.
    assert_eq!(data["signature"]["type"], "xray.scan_sequence.v1");
    // Its members are exactly what the signature covers.
    let members: Vec<&str> =
        data.as_object().expect("object").keys().map(String::as_str).filter(|k| *k != "signature").collect();
    let mut covers = xray::signing::SCAN_SEQUENCE_COVERS.to_vec();
    covers.sort_unstable();
    assert_eq!(members, covers, "{reply:?}");
    let keys = raw(server.addr, "GET", xray::signing::KEY_SET_PATH, &[], "").body;
    let held: Vec<Vec<u8>> = halves.iter().map(|h| b64(h)).collect();
    let held: Vec<&[u8]> = held.iter().map(Vec::as_slice).collect();
    let bound = SequenceBinding {
        transactions: Some(&held),
        account: Some(&key.account),
        origin: Some(None),
        signer: data["signer"].as_str(),
        mode: Some("sequence"),
    };
    verify_scan_sequence(data, &keys, &bound).expect("verifies");
    let as_bundle = verify_scan_sequence(data, &keys, &SequenceBinding { mode: Some("bundle"), ..bound });
    assert_eq!(as_bundle.map_err(|e| e.reason()).err(), Some(VerifyReason::ModeMismatch), "judged as a sequence");
    let other = SequenceBinding { signer: Some("11111111111111111111111111111112"), ..bound };
    let refused = verify_scan_sequence(data, &keys, &other).map_err(|e| e.reason());
    assert_eq!(refused.err(), Some(VerifyReason::SignerMismatch));
    let swapped = [held[1], held[0]];
    let refused = verify_scan_sequence(data, &keys, &SequenceBinding { transactions: Some(&swapped), ..bound });
    assert_eq!(refused.map_err(|e| e.reason()).err(), Some(VerifyReason::DigestMismatch));
    let one = [held[0]];
    let refused = verify_scan_sequence(data, &keys, &SequenceBinding { transactions: Some(&one), ..bound });
    assert_eq!(refused.map_err(|e| e.reason()).err(), Some(VerifyReason::DigestMismatch), "a transaction left out");
    let as_scan = verify_scan(data, &keys, &ScanBinding::default()).map_err(|e| e.reason());
    assert_eq!(as_scan.err(), Some(VerifyReason::WrongType), "a sequence never passes for a scan");
    // Two single scans and one sequence of two: four units, all transaction scans.
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.transaction_scan), (4, 4), "{usage:?}");
}

#[test]
fn a_failure_applies_nothing_in_a_sequence_and_ends_a_bundle() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    // 89 % twice cannot both run: the second fails on the state the first leaves.
    let txs = [demo_tx("split-drain-1"), demo_tx("split-drain-1"), demo_tx("split-drain-2")];
    let reply = sequence(&server, &key.secret, &txs, Some("sequence"));
    assert_eq!(reply.status, 200, "{reply:?}");
    let data = reply.data();
    let statuses: Vec<String> = items(data).into_iter().map(|(_, _, s)| s).collect();
    assert_eq!(statuses, ["ok", "failed", "ok"], "{reply:?}");
    assert_eq!(data["applied"]["transactions"], json!([0, 2]), "{reply:?}");
    assert!(data["applied"]["reason"].as_str().is_some_and(|r| r.starts_with("transaction 1 does not")), "{reply:?}");
    assert_eq!(kinds(&data["findings"]), ["asset_sweep"], "what applies is still a drain: {reply:?}");
    let bundle = sequence(&server, &key.secret, &txs, Some("bundle"));
    assert_eq!(bundle.status, 200, "{bundle:?}");
    let data = bundle.data();
    assert_eq!(data["mode"], "bundle");
    let statuses: Vec<String> = items(data).into_iter().map(|(_, _, s)| s).collect();
    assert_eq!(statuses, ["ok", "failed", "skipped"], "{bundle:?}");
    assert_eq!(data["applied"]["transactions"], json!([]), "{bundle:?}");
    assert!(data["applied"]["reason"].as_str().is_some_and(|r| r.contains("nothing of it applies")), "{bundle:?}");
    // Five transactions of a full packet's base64 fit the route's bound (16 KiB, not the
    // contract's 4 KiB for single-work routes): padded with whitespace to 12 KiB, still served.
    let padded = format!("{{\"transactions\": {}{}}}", json!(txs), " ".repeat(12 * 1024));
    assert_eq!(post(server.addr, SCAN_PATH, &key.secret, &padded).status, 200);
    assert_eq!(
        (data["effects"].clone(), data["findings"].clone()),
        (json!([]), json!([])),
        "nothing applies: {bundle:?}"
    );
    // One unit per transaction, whatever ran.
    assert_eq!(server.usage(&key.secret).transaction_scan, 9);
}

#[test]
fn a_sequence_of_one_judges_as_a_scan_of_it_and_a_drainer_inside_stays_malicious() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let drain = demo_tx("drain");
    let alone = post(server.addr, SCAN_PATH, &key.secret, &scan_body(&drain, None)).data().clone();
    let reply = sequence(&server, &key.secret, &[demo_tx("sol-transfer"), drain], None);
    assert_eq!(reply.status, 200, "{reply:?}");
    let data = reply.data();
    assert_eq!(data["verdict"], "malicious", "{reply:?}");
    assert_eq!(items(data)[1].1, "malicious");
    let one = sequence(&server, &key.secret, &[demo_tx("approve")], None).data().clone();
    let single = post(server.addr, SCAN_PATH, &key.secret, &scan_body(&demo_tx("approve"), None)).data().clone();
    for member in ["findings", "effects", "instructions", "simulation"] {
        assert_eq!(one["transactions"][0][member], single[member], "{member}");
    }
    assert_eq!(one["transactions"][0]["transaction"]["messageSha256"], single["transaction"]["messageSha256"]);
    assert_eq!(one["verdict"], single["verdict"]);
    assert_eq!(alone["verdict"], "malicious");
}

#[test]
fn every_malformed_sequence_is_a_400_naming_its_field_and_charged_nothing() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let tx = demo_tx("sol-transfer");
    let post_body = |body: Value| post(server.addr, SCAN_PATH, &key.secret, &body.to_string());
    let field = |reply: &Reply| reply.error()["details"]["field"].as_str().map(str::to_owned);
    let cases = [
        (json!({"transaction": tx, "transactions": [tx]}), "transactions"),
        (json!({"transactions": []}), "transactions"),
        (json!({"transactions": vec![tx.clone(); 6]}), "transactions"),
        (json!({"transactions": [tx, 7]}), "transactions"),
        (json!({"transactions": tx}), "transactions"),
        (json!({"transactions": [tx], "mode": "parallel"}), "mode"),
        (json!({"transaction": tx, "mode": "bundle"}), "mode"),
        (json!({"transactions": [tx], "guards": true}), "guards"),
    ];
    for (body, named) in cases {
        let reply = post_body(body.clone());
        assert_error(&reply, 400, "INVALID_REQUEST");
        assert_eq!(field(&reply).as_deref(), Some(named), "{body}: {reply:?}");
    }
    let bad = post_body(json!({"transactions": [tx, "not base64!"]}));
    assert_error(&bad, 400, "INVALID_TRANSACTION");
    let message = bad.error()["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.starts_with("transactions[1]: "), "names the transaction: {message}");
    assert_eq!(field(&bad).as_deref(), Some("transactions"));
    // Another wallet's transaction in the sequence: the scan's signer does not sign it.
    let other = post_body(json!({"transactions": [tx, demo_tx("revoke")]}));
    assert_error(&other, 400, "INVALID_REQUEST");
    assert_eq!(field(&other).as_deref(), Some("transactions"), "{other:?}");
    let message = other.error()["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.starts_with("transactions[1] is not signed by"), "{message}");
    // Past the route's bound: 413 with the bound.
    let huge = post_body(json!({"transactions": [format!("{tx}{}", "A".repeat(20_000))]}));
    assert_error_details(&huge, 413, "PAYLOAD_TOO_LARGE", &json!({"maxBytes": xray::config::SCAN_BODY_BYTES_MAX}));
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved), (0, 0), "nothing charged or held: {usage:?}");
}

#[test]
fn a_key_with_fewer_units_than_transactions_is_refused_whole() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions { quota: 2, ..KeyOptions::default() });
    let three = vec![demo_tx("sol-transfer"); 3];
    let refused = sequence(&server, &key.secret, &three, None);
    assert_error_details(&refused, 429, "QUOTA_EXHAUSTED", &json!({"limit": 2, "used": 0}));
    // Reserved in one step: the refusal counts none of its own units, and says what it needed.
    let message = refused.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("needs 3 units") && message.contains("0 reserved"), "{message}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved, usage.remaining), (0, 0, 2), "nothing held after: {usage:?}");
    let two = sequence(&server, &key.secret, &three[..2], None);
    assert_eq!(two.status, 200, "{two:?}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.transaction_scan, usage.remaining), (2, 2, 0), "{usage:?}");
}

#[test]
fn the_rpc_source_runs_a_sequence_in_process_and_answers_as_the_demo_does() {
    // `simulateTransaction` has no state overrides; the rpc source runs the sequence itself, in
    // the real runtime on the node's accounts read as bytes, each on what the ones before it
    // left — so the split drain is caught over JSON-RPC as on the demo source.
    let (direct, over_rpc) = (serve(|_| {}), serve_rpc(Default::default(), |_| {}));
    let (direct_key, rpc_key) = (direct.key(KeyOptions::default()), over_rpc.key(KeyOptions::default()));
    for mode in [None, Some("bundle")] {
        let halves = [demo_tx("split-drain-1"), demo_tx("split-drain-2")];
        let one = sequence(&direct, &direct_key.secret, &halves, mode);
        let two = sequence(&over_rpc, &rpc_key.secret, &halves, mode);
        assert_eq!((one.status, two.status), (200, 200), "{two:?}");
        let statuses: Vec<String> = items(two.data()).into_iter().map(|(_, _, s)| s).collect();
        assert_eq!(statuses, ["ok", "ok"], "{two:?}");
        for item in two.data()["transactions"].as_array().expect("items") {
            assert_eq!(item["simulation"]["answeredBy"], "runtime", "{two:?}");
        }
        // Each half alone is benign; the whole, run in order on one state, is a sweep.
        assert_eq!(two.data()["findings"][0]["kind"], "asset_sweep", "{two:?}");
        assert_eq!(judged(one.data()), judged(two.data()), "{mode:?}: the rpc source answers as the demo source");
    }
    assert_eq!(over_rpc.usage(&rpc_key.secret).transaction_scan, 4);
}

/// A sequence's answer without what differs between two servers for the same scan: who asked,
/// when, and the signature (each server signs with its own key).
fn judged(data: &Value) -> Value {
    let mut data = data.clone();
    let object = data.as_object_mut().expect("an object");
    for member in ["account", "scannedAt", "requestId", "signature"] {
        object.remove(member);
    }
    data
}

/// The SOL of `wallet` on the demo ledger.
fn lamports_of(wallet: &str) -> u64 {
    use xray::ledger::LedgerSource as _;
    let ledger = xray::ledger::demo::DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let address = xray::pubkey::Pubkey::parse(wallet).expect("address");
    let rt = xray::ledger::runtime().expect("runtime");
    rt.block_on(ledger.get_account_info(&address)).expect("read").value.map_or(0, |a| a.lamports)
}

/// An unsigned transaction, paid by `payer`, of system transfers `(from, to, lamports)`.
fn transfers(payer: &str, moves: &[(&str, &str, u64)]) -> String {
    use xray::ledger::transaction::message::{compile, sdk_address};
    let key = |text: &str| xray::pubkey::Pubkey::parse(text).expect("address");
    let parts: Vec<_> = moves
        .iter()
        .map(|(from, to, lamports)| {
            let ix = solana_system_interface::instruction::transfer(
                &sdk_address(&key(from)),
                &sdk_address(&key(to)),
                *lamports,
            );
            xray::instruction_parts!(ix)
        })
        .collect();
    base64::engine::general_purpose::STANDARD.encode(compile(key(payer), &parts, [3; 32], false).expect("compiles"))
}

#[test]
fn a_transaction_before_that_need_not_land_cannot_soften_the_verdict_of_one_after_it() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    // The richest other demo wallet "pays" the signer first (without its own signature: that
    // transaction can never land), then the signer sends 95 % of what it really holds away.
    let rich = READY_WALLETS.iter().copied().filter(|w| *w != CLEAN).max_by_key(|w| lamports_of(w)).expect("a wallet");
    let (mine, theirs) = (lamports_of(CLEAN), lamports_of(rich));
    assert!(theirs > mine / 10, "the credit dilutes the drain below the sweep's share: {theirs} vs {mine}");
    let stranger = "FGpewmC38ZY4S8DnsfCfyJAzgfeu93Ms62qGQ1Nw88y7";
    let credit = transfers(CLEAN, &[(rich, CLEAN, theirs / 10 * 9)]);
    let drain = transfers(CLEAN, &[(CLEAN, stranger, mine / 100 * 95)]);
    let reply = sequence(&server, &key.secret, &[credit, drain], None);
    assert_eq!(reply.status, 200, "{reply:?}");
    let data = reply.data();
    let second = &data["transactions"][1];
    assert_eq!(second["simulation"]["status"], "ok", "{reply:?}");
    assert_eq!(kinds(&second["findings"]), Vec::<String>::new(), "in its place the credit hides it: {reply:?}");
    assert_eq!(kinds(&second["alone"]["findings"]), ["asset_sweep"], "alone it is a sweep: {reply:?}");
    assert_eq!((second["verdict"].as_str(), data["verdict"].as_str()), (Some("warning"), Some("warning")), "{reply:?}");
    assert!(data["transactions"][0].get("alone").is_none(), "the first alone is the first in place");
}
