//! Guards over real loopback HTTP (issue #44 item 3): a scan asked with `guards` answers the
//! Lighthouse assertions of what it predicted and the transaction with them appended, signed
//! as `xray.scan.v3`; withheld for a drainer and without a prediction; a malformed `guards` is a
//! 400 charged nothing. (A signed transaction's `TRANSACTION_SIGNED` is checked with real
//! signatures in `tests/litesvm/guards.test.mjs`, and in `guard::tests`.)

use base64::Engine as _;
use serde_json::{json, Value};
use xray::guard::lighthouse::{GuardInstruction, PROGRAM_ID};
use xray::ledger::transaction::message;
use xray::pubkey::Pubkey;
use xray::signing::{verify_scan, ScanBinding, GUARDED_SCAN_COVERS};

use super::support::*;

fn b64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(text).expect("base64")
}

fn guarded_scan(server: &TestServer, key: &str, transaction: &str, guards: Value) -> Reply {
    let reply = post(server.addr, SCAN_PATH, key, &json!({"transaction": transaction, "guards": guards}).to_string());
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
}

/// The instructions of `bytes` (no lookup tables) as (program, accounts, data).
fn instructions(bytes: &[u8]) -> Vec<(Pubkey, Vec<Pubkey>, Vec<u8>)> {
    let parsed = message::parse(bytes).expect("parses");
    let keys = &parsed.static_keys;
    let key = |i: u8| keys[usize::from(i)];
    parsed
        .instructions
        .iter()
        .map(|ix| (key(ix.program), ix.accounts.iter().map(|&i| key(i)).collect(), ix.data.clone()))
        .collect()
}

#[test]
fn a_benign_scan_gets_guards_that_decode_to_what_it_predicted_and_a_signed_v3_answer() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let keys = raw(server.addr, "GET", xray::signing::KEY_SET_PATH, &[], "").body;
    let transaction = demo_tx("token-transfer");
    let reply = guarded_scan(&server, &key.secret, &transaction, json!({"slippageBps": 50}));
    let data = reply.data();
    assert_eq!(data["verdict"], "benign", "{reply:?}");
    let guards = &data["guards"];
    assert_eq!((guards["status"].as_str(), guards["slippageBps"].as_u64()), (Some("added"), Some(50)), "{guards}");
    let list = guards["guardInstructions"].as_array().expect("instructions");
    assert_eq!(list.len(), 2, "the signer's SOL and its token account: {guards}");
    // Each instruction's bytes say what its `asserts` say, about the account it names.
    for ix in list {
        assert_eq!(ix["programId"], "L2TExMFKdjpN9kozasaurPirfHy9P8sbXoAN1qA3S95");
        let target = Pubkey::parse(ix["accounts"][0]["address"].as_str().expect("address")).expect("address");
        assert_eq!(
            (ix["accounts"][0]["isSigner"].as_bool(), ix["accounts"][0]["isWritable"].as_bool()),
            (Some(false), Some(false))
        );
        let decoded = GuardInstruction::decode(target, &b64(ix["data"].as_str().expect("data"))).expect("decodes");
        let named: Vec<Value> = decoded
            .assertions
            .iter()
            .map(|a| serde_json::to_value(xray::guard::AssertView::from(a)).expect("json"))
            .collect();
        assert_eq!(&Value::Array(named), &ix["asserts"]);
    }
    // The SOL guard is the balance the simulation predicts: the effect's delta off the balance before.
    let sol_effect =
        data["effects"].as_array().expect("effects").iter().find(|e| e["kind"] == "sol").expect("sol effect");
    assert!(sol_effect["deltaLamports"].as_i64().expect("delta") < 0);
    assert_eq!(list[0]["asserts"][0]["kind"], "lamports_at_least");
    // The guarded transaction: the scanned one's instructions, then the guards; nothing else.
    let original = b64(&transaction);
    let guarded = b64(guards["guardedTransaction"].as_str().expect("guarded"));
    assert!(guarded.len() <= 1_232);
    let (before, after) = (instructions(&original), instructions(&guarded));
    assert_eq!(after[..before.len()], before[..]);
    assert_eq!(after.len(), before.len() + list.len());
    assert!(after[before.len()..].iter().all(|(program, accounts, _)| *program == PROGRAM_ID && accounts.len() == 1));
    let (p0, p1) = (message::parse(&original).expect("parses"), message::parse(&guarded).expect("parses"));
    assert_eq!(p1.required_signatures, p0.required_signatures, "no new signer");
    // Signed as `xray.scan.v3`, covering the guards, and verified as a scan bound to its message.
    let signature = &data["signature"];
    assert_eq!(signature["type"], "xray.scan.v3");
    assert_eq!(signature["covers"].as_array().expect("covers").len(), GUARDED_SCAN_COVERS.len());
    let binding = ScanBinding {
        transaction: Some(&original),
        account: Some(&key.account),
        origin: Some(None),
        signer: data["signer"].as_str(),
    };
    let verified = verify_scan(data, &keys, &binding).expect("verifies");
    assert_eq!(&verified.covered["guards"], guards);
    // Without `guards` (or `false`), the answer has none and stays `xray.scan.v2`.
    let plain =
        post(server.addr, SCAN_PATH, &key.secret, &json!({"transaction": transaction, "guards": false}).to_string());
    assert_eq!((plain.data().get("guards"), plain.data()["signature"]["type"].as_str()), (None, Some("xray.scan.v2")));
}

#[test]
fn guards_are_withheld_for_a_drainer_and_without_a_prediction() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let reply = guarded_scan(&server, &key.secret, &demo_tx("drain"), json!(true));
    let guards = &reply.data()["guards"];
    assert_eq!((reply.data()["verdict"].as_str(), guards["status"].as_str()), (Some("malicious"), Some("withheld")));
    assert!(guards["reason"].as_str().is_some_and(|r| r.contains("malicious")), "{guards}");
    assert_eq!((guards["guardInstructions"].clone(), guards["guardedTransaction"].clone()), (json!([]), Value::Null));
    // A source that does not simulate: nothing predicted, nothing to guard.
    let (_dir, snap) = serve_demo_snapshot_without_bytes();
    let snap_key = snap.key(KeyOptions::default());
    let reply = guarded_scan(&snap, &snap_key.secret, &demo_tx("sol-transfer"), json!(true));
    let guards = &reply.data()["guards"];
    assert_eq!(guards["status"], "withheld", "{guards}");
    assert!(guards["reason"].as_str().is_some_and(|r| r.contains("skipped")), "{guards}");
}

#[test]
fn a_malformed_guards_member_is_a_400_charged_nothing() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let transaction = demo_tx("sol-transfer");
    for guards in [
        json!("yes"),
        json!(1),
        json!({"slippageBps": 10_001}),
        json!({"slippageBps": -1}),
        json!({"slippageBps": 1.5}),
        serde_json::from_str::<Value>(r#"{"solToleranceLamports": 18446744073709551616}"#).expect("json"),
        json!({"tolerance": 1}),
        json!([]),
    ] {
        let body = json!({"transaction": transaction, "guards": guards}).to_string();
        let reply = post(server.addr, SCAN_PATH, &key.secret, &body);
        assert_error_details(&reply, 400, "INVALID_REQUEST", &json!({"field": "guards"}));
    }
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved, usage.transaction_scan), (0, 0, 0), "{usage:?}");
}
