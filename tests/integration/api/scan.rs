//! The pre-sign transaction scan over real loopback HTTP (`POST …/intelligence/transaction`):
//! every demo case (`xray ledger demo-tx`) judged and simulated by the demo ledger and — the
//! same transactions — through the local JSON-RPC server, whose `simulateTransaction` the
//! rpc source calls; byte-identical answers (but for the scan's time, request id and signature,
//! which covers both); every refusal with its code, charged nothing; one quota unit per
//! answered scan, counted apart in `byOperation`.

use serde_json::json;
use xray::config::{SourceSpec, TRANSACTION_BYTES_MAX};
use xray::pubkey::Pubkey;
use xray::signing::SCAN_COVERS;

use super::support::*;

fn scan(server: &TestServer, key: &str, body: &str) -> Reply {
    post(server.addr, SCAN_PATH, key, body)
}

/// `(kind, instruction)` of every finding.
fn findings(reply: &Reply) -> Vec<(String, Option<u64>)> {
    let list = reply.data()["findings"].as_array().unwrap_or_else(|| panic!("findings: {reply:?}"));
    list.iter().map(|f| (f["kind"].as_str().expect("kind").to_owned(), f["instruction"].as_u64())).collect()
}

fn effect_kinds(reply: &Reply) -> Vec<String> {
    let list = reply.data()["effects"].as_array().unwrap_or_else(|| panic!("effects: {reply:?}"));
    list.iter().map(|e| e["kind"].as_str().expect("kind").to_owned()).collect()
}

/// An answer's bytes before the members that differ from scan to scan: `scannedAt`, `requestId`
/// (serialized last) and the `signature` after them.
fn without_time_request_and_signature(body: &[u8]) -> Vec<u8> {
    let marker: &[u8] = b",\"scannedAt\":\"";
    let cut = body.windows(marker.len()).rposition(|w| w == marker).expect("an answer with its time");
    [&body[..cut], &b"}}"[..]].concat()
}

/// The answer's `scannedAt` and `requestId`: present, the signature covers them, and the
/// request id is the response's `X-Request-Id`.
fn assert_time_and_request_signed(reply: &Reply) {
    let data = reply.data();
    assert!(is_timestamp(&data["scannedAt"]), "{reply:?}");
    let request_id = data["requestId"].as_str().unwrap_or_else(|| panic!("requestId: {reply:?}"));
    assert!(is_request_id(request_id), "{request_id:?}");
    if let Some(header) = reply.header("x-request-id") {
        assert_eq!(request_id, header, "{reply:?}");
    }
    let covers = data["signature"]["covers"].as_array().expect("covers");
    assert!(["scannedAt", "requestId"].iter().all(|m| covers.iter().any(|c| c == m)), "{covers:?}");
    assert_eq!(covers.len(), SCAN_COVERS.len(), "{covers:?}");
    assert_eq!(data["signature"]["type"], "xray.scan.v1");
}

/// `(case, verdict, findings, effect kinds)` the demo ledger must give.
fn expected() -> Vec<(&'static str, &'static str, Vec<(&'static str, Option<u64>)>, Vec<&'static str>)> {
    vec![
        ("sol-transfer", "benign", vec![], vec!["sol"]),
        ("token-transfer", "benign", vec![], vec!["sol", "token"]),
        // Unlimited, to an address the wallet never dealt with (its history is read): critical.
        ("approve", "malicious", vec![("token_approval", Some(0))], vec!["sol", "token_delegate_change"]),
        ("revoke", "benign", vec![], vec!["sol", "token_delegate_change"]),
        ("set-owner", "malicious", vec![("token_owner_change", Some(0))], vec!["sol", "token", "token_owner_change"]),
        (
            "close-authority",
            "warning",
            vec![("token_close_authority_change", Some(0))],
            vec!["sol", "token_close_authority_change"],
        ),
        ("assign", "malicious", vec![("wallet_assign", Some(0))], vec!["sol", "account_owner_change"]),
        (
            "nonce-authorize",
            "malicious",
            vec![("nonce_authority_change", Some(0))],
            vec!["sol", "nonce_authority_change"],
        ),
        ("durable-nonce", "warning", vec![("durable_nonce", None)], vec!["sol"]),
        ("nonce-withdraw", "warning", vec![("nonce_withdraw", Some(0))], vec!["sol"]),
        (
            "drain",
            "malicious",
            vec![("token_approval", Some(0)), ("token_owner_change", Some(1)), ("flagged_recipient", Some(2))],
            vec!["sol", "token", "token_owner_change"],
        ),
        ("lookalike-send", "malicious", vec![("lookalike_recipient", Some(0))], vec!["sol"]),
    ]
}

/// Every case through `server`: the verdict, the findings naming their instructions, the
/// effects, a simulation that ran, its time and request signed; the same request answers the
/// same bytes but for those and the signature (returned cut there).
fn check_cases(server: &TestServer, key: &str) -> Vec<Vec<u8>> {
    let mut answers = Vec::new();
    for (case, verdict, kinds, effects) in expected() {
        let body = scan_body(&demo_tx(case), None);
        let reply = scan(server, key, &body);
        assert_eq!(reply.status, 200, "{case}: {reply:?}");
        let data = reply.data();
        assert_eq!(data["verdict"], verdict, "{case}: {reply:?}");
        let want: Vec<(String, Option<u64>)> = kinds.iter().map(|(k, i)| (k.to_string(), *i)).collect();
        assert_eq!(findings(&reply), want, "{case}");
        assert_eq!(effect_kinds(&reply), effects, "{case}: {reply:?}");
        assert_eq!(data["simulation"]["status"], "ok", "{case}: {reply:?}");
        if ["sol-transfer", "drain", "lookalike-send"].contains(&case) {
            // It sends the signer's SOL: the recipient was compared with its counterparties.
            assert_eq!(data["counterparties"]["checked"], true, "{case}: {reply:?}");
            assert!(data["counterparties"]["transactions"].as_u64() > Some(0), "{case}: {reply:?}");
        }
        assert_eq!(data["engineVersions"]["scan"], "1.0.0");
        // The fee (and every SOL movement) is the signer's: 5,000 lamports per signature.
        let sol = data["effects"][0]["deltaLamports"].as_i64().expect("sol delta");
        assert!(sol <= -5_000, "{case}: {sol}");
        assert_time_and_request_signed(&reply);
        let again = scan(server, key, &body);
        assert_ne!(again.data()["requestId"], data["requestId"], "{case}: each answer names its own request");
        let (first, second) =
            (without_time_request_and_signature(&reply.raw_body), without_time_request_and_signature(&again.raw_body));
        assert_eq!(second, first, "{case}: the same scan answers the same bytes");
        answers.push(first);
    }
    answers
}

#[test]
fn every_demo_case_is_judged_simulated_and_answered_byte_identically() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    check_cases(&server, &key.secret);
    let usage = server.usage(&key.secret);
    let scans = 2 * expected().len() as u64;
    assert_eq!((usage.used, usage.transaction_scan, usage.wallet_analysis), (scans, scans, 0), "{usage:?}");
}

#[test]
fn the_rpc_source_simulates_through_the_node_and_answers_as_the_demo_does() {
    // The same transactions through the local JSON-RPC server (its simulateTransaction is the
    // demo executor): pre-state and simulation over the wire give the demo's own answers.
    let direct = serve(|_| {});
    let direct_key = direct.key(KeyOptions::default());
    let over_rpc = serve_rpc(Default::default(), |_| {});
    let rpc_key = over_rpc.key(KeyOptions::default());
    // Each server signs with its own key: the answers are compared without their signature
    // (nor their time and request id, which `check_cases` cuts off).
    let one = check_cases(&direct, &direct_key.secret);
    let two = check_cases(&over_rpc, &rpc_key.secret);
    assert_eq!(one, two, "the rpc source answers byte for byte as the demo source");
}

#[test]
fn the_effects_of_a_drain_name_what_leaves_the_signer() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let reply = scan(&server, &key.secret, &scan_body(&demo_tx("drain"), None));
    let data = reply.data();
    assert_eq!(data["signer"], CLEAN);
    let effects = data["effects"].as_array().expect("effects");
    // 90 % of the wallet's SOL plus the fee; every DUSD token it held; the account's new owner.
    let sol = effects[0]["deltaLamports"].as_i64().expect("delta");
    assert!(sol < -1_000_000_000, "{sol}");
    assert_eq!(effects[1]["mint"], TOKEN_MINT);
    assert!(effects[1]["delta"].as_str().expect("delta").starts_with('-'), "{reply:?}");
    assert_eq!(effects[2]["account"], TOKEN_ACCOUNT);
    assert_eq!(effects[2]["from"], CLEAN);
    let drainer = &data["findings"][2];
    assert_eq!((drainer["severity"].as_str(), drainer["instruction"].as_u64()), (Some("critical"), Some(2)));
    // Each instruction decoded, in order.
    let types: Vec<&str> =
        data["instructions"].as_array().expect("list").iter().map(|i| i["type"].as_str().expect("type")).collect();
    assert_eq!(types, ["approve", "setAuthority", "transfer"]);
    assert_eq!(data["transaction"]["version"], "legacy");
    assert_eq!(data["transaction"]["signed"], false);
}

#[test]
fn a_snapshot_source_skips_the_simulation_and_keeps_the_findings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rt = xray::ledger::runtime().expect("runtime");
    let snapshot = dir.path().join("demo");
    rt.block_on(xray::devtools::recorder::export_demo(xray::config::DEMO_SEED_DEFAULT, 0, &snapshot))
        .expect("exported");
    let server = serve(|c| c.ledger = SourceSpec::Snapshot { dir: snapshot });
    let key = server.key(KeyOptions::default());
    let reply = scan(&server, &key.secret, &scan_body(&demo_tx("set-owner"), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.data()["simulation"]["status"], "skipped", "{reply:?}");
    assert!(reply.data()["simulation"]["reason"].as_str().is_some_and(|r| r.contains("snapshot")), "{reply:?}");
    assert_eq!(reply.data()["effects"], json!([]));
    assert_eq!(findings(&reply), [("token_owner_change".to_owned(), Some(0))]);
    assert_eq!(reply.data()["verdict"], "malicious");
}

#[test]
fn bad_transactions_are_refused_with_their_own_code_and_charged_nothing() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let good = demo_tx("sol-transfer");
    let bytes = base64_decode(&good);
    let mut trailing = bytes.clone();
    trailing.push(0);
    let cases: Vec<(String, u16, &str, &str, &str)> = vec![
        (scan_body("not base64!", None), 400, "INVALID_TRANSACTION", "transaction", "base64"),
        (
            scan_body(&base64_encode(&vec![1u8; TRANSACTION_BYTES_MAX + 1]), None),
            400,
            "INVALID_TRANSACTION",
            "transaction",
            "1232",
        ),
        (
            scan_body(&base64_encode(&bytes[..bytes.len() - 3]), None),
            400,
            "INVALID_TRANSACTION",
            "transaction",
            "serialized",
        ),
        (scan_body(&base64_encode(&trailing), None), 400, "INVALID_TRANSACTION", "transaction", "serialized"),
        (scan_body("", None), 400, "INVALID_TRANSACTION", "transaction", "serialized"),
        (json!({"transaction": 5}).to_string(), 400, "INVALID_REQUEST", "transaction", "base64"),
        (json!({}).to_string(), 400, "INVALID_REQUEST", "transaction", "transaction"),
        (scan_body(&good, Some("nope")), 400, "INVALID_ADDRESS", "signer", "signer"),
        (scan_body(&good, Some(SYBIL_A)), 400, "INVALID_REQUEST", "signer", SYBIL_A),
    ];
    for (body, status, code, field, says) in cases {
        let reply = scan(&server, &key.secret, &body);
        assert_error_details(&reply, status, code, &json!({"field": field}));
        let message = reply.error()["message"].as_str().expect("message");
        assert!(message.contains(says), "{body}: {message:?} should say {says:?}");
    }
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved, usage.transaction_scan), (0, 0, 0), "{usage:?}");
    // The signer named explicitly, when it signs, is the one the scan is for.
    let reply = scan(&server, &key.secret, &scan_body(&good, Some(CLEAN)));
    assert_eq!((reply.status, reply.data()["signer"].as_str()), (200, Some(CLEAN)), "{reply:?}");
}

#[test]
fn a_scan_is_one_unit_and_the_quota_refuses_past_it() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions { quota: 2, ..KeyOptions::default() });
    let body = scan_body(&demo_tx("approve"), None);
    for _ in 0..2 {
        assert_eq!(scan(&server, &key.secret, &body).status, 200);
    }
    let refused = scan(&server, &key.secret, &body);
    assert_error_details(&refused, 429, "QUOTA_EXHAUSTED", &json!({"limit": 2, "used": 2}));
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.remaining, usage.transaction_scan), (2, 0, 2), "{usage:?}");
    // A key without the scope is refused before anything else.
    let reader = server.key(KeyOptions::scopes("analysis:read"));
    assert_error_details(
        &scan(&server, &reader.secret, &body),
        403,
        "INSUFFICIENT_SCOPE",
        &json!({"requiredScope": "transaction:scan"}),
    );
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).expect("base64")
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[test]
fn an_account_of_absurd_size_is_refused_by_the_demo_simulation_and_the_server_stays_up() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let me = Pubkey::parse(CLEAN).expect("address");
    let new = Pubkey([77; 32]);
    let sdk = xray::ledger::transaction::message::sdk_address;
    // 2^46 bytes: the demo would try to hold it were the size not refused first.
    let create = solana_system_interface::instruction::create_account(&sdk(&me), &sdk(&new), 1, 1 << 46, &sdk(&me));
    let parts = xray::instruction_parts!(create);
    let mut parts = parts;
    parts.metas.iter_mut().for_each(|m| m.1 |= m.0 == new);
    let bytes = xray::ledger::transaction::message::compile(me, &[parts], [3; 32], false).expect("compiles");
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&bytes), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.data()["simulation"]["status"], "skipped", "{reply:?}");
    let reason = reply.data()["simulation"]["reason"].as_str().expect("reason");
    assert!(reason.contains("10485760"), "{reason}");
    assert_eq!(scan(&server, &key.secret, &scan_body(&demo_tx("sol-transfer"), None)).status, 200);
}

#[test]
fn a_client_that_hangs_up_mid_scan_is_not_charged() {
    // Every ledger answer takes 800 ms: the client leaves while the lane waits.
    let server = serve_slow(800, |_| {});
    let key = server.key(KeyOptions::default());
    // A set-owner scan sends nothing: no history is read, so its one round trip of 800 ms
    // fits the upstream deadline and the scan is charged once answered.
    let body = scan_body(&demo_tx("set-owner"), None);
    let mut conn = Conn::open(server.addr);
    let request = format!(
        "POST {SCAN_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        key.secret,
        body.len()
    );
    std::io::Write::write_all(&mut conn.stream, request.as_bytes()).expect("sent");
    std::thread::sleep(std::time::Duration::from_millis(200));
    drop(conn);
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved, usage.transaction_scan), (0, 0, 0), "{usage:?}");
    // And a scan that waits for its answer is charged once.
    let reply = scan(&server, &key.secret, &body);
    assert_eq!(reply.status, 200, "{reply:?}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved, usage.transaction_scan), (1, 0, 1), "{usage:?}");
    // An approval needs the signer's history: two round trips of 800 ms pass the 1,500 ms
    // deadline, so the scan is answered on its findings and says why (and is charged: it was
    // answered).
    let reply = scan(&server, &key.secret, &scan_body(&demo_tx("approve"), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.data()["counterparties"]["checked"], false, "{reply:?}");
    assert_eq!(reply.data()["findings"][0]["kind"], "token_approval", "{reply:?}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved, usage.transaction_scan), (2, 0, 2), "{usage:?}");
}

#[test]
fn the_origin_is_judged_against_the_domain_labels() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let tx = demo_tx("set-owner");
    let with_origin = |origin: &str| json!({"transaction": tx, "origin": origin}).to_string();
    let kinds = |reply: &Reply| findings(reply).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    // The builtin labels list a demo phishing site (and its subdomains) and trusted dApps.
    let phishing = scan(&server, &key.secret, &with_origin("https://app.claim-sol-airdrop.example/claim"));
    assert_eq!(kinds(&phishing), ["phishing_origin", "token_owner_change"], "{phishing:?}");
    let origin_finding = &phishing.data()["findings"][0];
    assert_eq!((origin_finding["severity"].as_str(), origin_finding.get("instruction")), (Some("critical"), None));
    let lookalike = scan(&server, &key.secret, &with_origin("phantorn.app"));
    assert_eq!(kinds(&lookalike), ["lookalike_origin", "token_owner_change"], "{lookalike:?}");
    assert_eq!(lookalike.data()["findings"][0]["facts"]["imitates"], "phantom.app");
    let trusted = scan(&server, &key.secret, &with_origin("https://www.phantom.app"));
    assert_eq!(kinds(&trusted), ["token_owner_change"], "{trusted:?}");
    let local = scan(&server, &key.secret, &with_origin("http://localhost:3000"));
    assert_eq!(kinds(&local), ["token_owner_change"], "no domain, nothing to judge: {local:?}");
    let text = scan(&server, &key.secret, &with_origin("not a site"));
    assert_eq!(kinds(&text), ["token_owner_change"], "not a URL: not judged, nothing refused: {text:?}");
    let typed = scan(&server, &key.secret, &json!({"transaction": tx, "origin": 7}).to_string());
    assert_error_details(&typed, 400, "INVALID_REQUEST", &json!({"field": "origin"}));
}
