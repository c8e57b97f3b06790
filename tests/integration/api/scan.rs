//! The pre-sign transaction scan over real loopback HTTP (`POST …/intelligence/transaction`):
//! every demo case (`xray ledger demo-tx`) judged and simulated by the demo ledger and — the
//! same transactions — through the local JSON-RPC server, whose `simulateTransaction` the
//! rpc source calls; byte-identical answers (but for the scan's time, request id and signature,
//! which covers both); every refusal with its code, charged nothing; one quota unit per
//! answered scan, counted apart in `byOperation`.

use serde_json::{json, Value};
use xray::config::TRANSACTION_BYTES_MAX;
use xray::ledger::model::TokenProgram;
use xray::ledger::wire::UiAccount;
use xray::ledger::LedgerError;
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

/// An answer's bytes before the members that differ from scan to scan: `account` (two servers'
/// keys are two accounts), `scannedAt`, `requestId` (serialized last) and the `signature` after
/// them.
fn without_time_request_and_signature(body: &[u8]) -> Vec<u8> {
    let marker: &[u8] = b",\"account\":\"";
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
    assert_eq!(data["signature"]["type"], "xray.scan.v2");
}

/// `(case, verdict, findings, effect kinds)`.
type Case = (&'static str, &'static str, Vec<(&'static str, Option<u64>)>, Vec<&'static str>);

/// Every case the demo ledger must give.
fn expected() -> Vec<Case> {
    vec![
        // Every recipient is an effect of its own (`sol_sent`, `token_sent`).
        ("sol-transfer", "benign", vec![], vec!["sol", "sol_sent"]),
        ("token-transfer", "benign", vec![], vec!["sol", "token", "sol_sent", "token_sent"]),
        // Unlimited, to an address the wallet never dealt with (its history is read): critical.
        ("approve", "malicious", vec![("token_approval", Some(0))], vec!["sol", "token_delegate_change"]),
        ("revoke", "benign", vec![], vec!["sol", "token_delegate_change"]),
        // The account handed away is its whole balance swept, and an authority goes with it.
        (
            "set-owner",
            "malicious",
            vec![("asset_sweep", None), ("token_owner_change", Some(0))],
            vec!["sol", "token", "sol_sent", "token_sent", "token_owner_change"],
        ),
        (
            "close-authority",
            "malicious",
            vec![("token_close_authority_change", Some(0))],
            vec!["sol", "token_close_authority_change"],
        ),
        ("assign", "malicious", vec![("wallet_assign", Some(0))], vec!["sol", "account_owner_change"]),
        (
            "nonce-authorize",
            "malicious",
            vec![("nonce_authority_change", Some(0))],
            vec!["sol", "sol_sent", "nonce_authority_change"],
        ),
        ("durable-nonce", "benign", vec![("durable_nonce", None)], vec!["sol", "sol_sent"]),
        ("nonce-withdraw", "warning", vec![("nonce_withdraw", Some(0))], vec!["sol", "sol_sent", "account_closed"]),
        (
            "drain",
            "malicious",
            vec![
                ("asset_sweep", None),
                ("token_approval", Some(0)),
                ("token_owner_change", Some(1)),
                ("flagged_recipient", Some(2)),
            ],
            vec!["sol", "token", "sol_sent", "token_sent", "token_owner_change"],
        ),
        ("lookalike-send", "malicious", vec![("lookalike_recipient", Some(0))], vec!["sol", "sol_sent"]),
        // Each half of a split drain alone is a payment (`api::sequences` judges them together).
        ("split-drain-1", "benign", vec![], vec!["sol", "sol_sent"]),
        ("split-drain-2", "benign", vec![], vec!["sol", "sol_sent"]),
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
        assert_eq!(data["engineVersions"]["scan"], xray::scan::report::SCAN_VERSION);
        // The labels that judged it, by digest (signed with the rest).
        let labels = data["engineVersions"]["labels"].as_str().unwrap_or_default();
        assert!(labels.len() == 32 && labels.bytes().all(|b| b.is_ascii_hexdigit()), "{case}: {labels:?}");
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
fn the_rpc_source_executes_in_process_and_answers_as_the_demo_does() {
    // The same transactions through the local JSON-RPC server: the rpc source reads the
    // accounts' bytes (`getMultipleAccounts`, base64) and runs each in the real runtime itself
    // (`simulation.answeredBy: runtime`) — the demo's own answers, byte for byte.
    let direct = serve(|_| {});
    let direct_key = direct.key(KeyOptions::default());
    let over_rpc = serve_rpc(Default::default(), |_| {});
    let rpc_key = over_rpc.key(KeyOptions::default());
    // Each server signs with its own key: the answers are compared without their signature
    // (nor their time and request id, which `check_cases` cuts off).
    let one = check_cases(&direct, &direct_key.secret);
    let two = check_cases(&over_rpc, &rpc_key.secret);
    assert_eq!(one.len(), two.len());
    for (i, (one, two)) in one.iter().zip(&two).enumerate() {
        let (one, two) = (String::from_utf8_lossy(one), String::from_utf8_lossy(two));
        assert_eq!(one, two, "case {i}: the rpc source answers byte for byte as the demo source");
    }
}

/// The demo ledger as a node that answers accounts jsonParsed only (it refuses
/// `encoding: base64`, as the trait's default does): every other call is the demo's.
struct ParsedOnly(xray::ledger::demo::DemoLedger);

impl xray::ledger::LedgerSource for ParsedOnly {
    fn name(&self) -> &'static str {
        "parsed-only"
    }
    async fn get_account_info(&self, at: &Pubkey) -> Result<Ui<Option<UiAccount>>, LedgerError> {
        self.0.get_account_info(at).await
    }
    async fn get_multiple_accounts(&self, at: &[Pubkey]) -> Result<Ui<Vec<Option<UiAccount>>>, LedgerError> {
        self.0.get_multiple_accounts(at).await
    }
    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        p: TokenProgram,
    ) -> Result<Ui<Vec<Keyed>>, LedgerError> {
        self.0.get_token_accounts_by_owner(owner, p).await
    }
    async fn get_nonce_accounts_by_authority(&self, authority: &Pubkey) -> Result<Ui<Vec<Keyed>>, LedgerError> {
        self.0.get_nonce_accounts_by_authority(authority).await
    }
    async fn get_signatures_for_address(
        &self,
        at: &Pubkey,
        before: Option<&xray::pubkey::Signature>,
        limit: u32,
    ) -> Result<Vec<xray::ledger::wire::SignatureInfo>, LedgerError> {
        self.0.get_signatures_for_address(at, before, limit).await
    }
    async fn get_transactions(
        &self,
        signatures: &[xray::pubkey::Signature],
    ) -> Result<Vec<Option<xray::ledger::wire::TransactionResult>>, LedgerError> {
        self.0.get_transactions(signatures).await
    }
    async fn simulate_transaction(
        &self,
        tx: &[u8],
        at: &[Pubkey],
    ) -> Result<xray::ledger::read::Simulated, LedgerError> {
        self.0.simulate_transaction(tx, at).await
    }
}

type Ui<T> = xray::ledger::wire::WithContext<T>;
type Keyed = xray::ledger::wire::KeyedAccount;

#[test]
fn a_node_that_gives_no_bytes_still_simulates_and_the_answer_says_who_ran_it() {
    let make = || Ok(ParsedOnly(xray::ledger::demo::DemoLedger::new(xray::config::DEMO_SEED_DEFAULT)));
    let rpc = xray::devtools::rpc_server::spawn_in_thread(make, Default::default()).expect("JSON-RPC server starts");
    let server = serve_rpc_server(rpc, |_| {});
    let key = server.key(KeyOptions::default());
    let reply = scan(&server, &key.secret, &scan_body(&demo_tx("drain"), None));
    let simulation = &reply.data()["simulation"];
    assert_eq!((simulation["status"].as_str(), simulation["answeredBy"].as_str()), (Some("ok"), Some("node")));
    let why = simulation["runtimeSkipped"].as_str().unwrap_or_default();
    assert!(why.starts_with("the node did not answer the accounts' bytes"), "{why}");
    assert_eq!(reply.data()["verdict"], "malicious", "judged on the node's simulation: {reply:?}");
    // The demo source, in process: the runtime, and nothing skipped.
    let direct = serve(|_| {});
    let direct_key = direct.key(KeyOptions::default());
    let reply = scan(&direct, &direct_key.secret, &scan_body(&demo_tx("drain"), None));
    assert_eq!(reply.data()["simulation"]["answeredBy"], "runtime");
    assert!(reply.data()["simulation"].get("runtimeSkipped").is_none(), "{reply:?}");
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
    let kinds: Vec<&str> = effects.iter().map(|e| e["kind"].as_str().expect("kind")).collect();
    // The drainer is also the account's new owner: one recipient of SOL and tokens.
    assert_eq!(kinds, ["sol", "token", "sol_sent", "token_sent", "token_owner_change"], "{reply:?}");
    let owner_change = &effects[4];
    assert_eq!(owner_change["account"], TOKEN_ACCOUNT);
    assert_eq!(owner_change["from"], CLEAN);
    // Every recipient, each with its amount: the drainer's SOL, the new owner's tokens and rent.
    let to_new_owner = effects.iter().find(|e| e["kind"] == "token_sent").expect("token_sent");
    assert_eq!(to_new_owner["to"], owner_change["to"]);
    assert_eq!(
        to_new_owner["amount"].as_str().map(|a| format!("-{a}")),
        effects[1]["delta"].as_str().map(str::to_owned)
    );
    assert_eq!(to_new_owner["decimals"], effects[1]["decimals"], "a token amount beside its decimals: {reply:?}");
    let drainer = &data["findings"][3];
    assert_eq!((drainer["severity"].as_str(), drainer["instruction"].as_u64()), (Some("critical"), Some(2)));
    // Amounts typed (README, "Amounts"): lamports an integer under `lamports`, no unit in a
    // string; the approval's amount a string of base units beside its mint and decimals.
    assert_eq!(drainer["kind"], "flagged_recipient", "{reply:?}");
    let lamports = drainer["facts"]["lamports"].as_u64().unwrap_or_else(|| panic!("an integer: {drainer}"));
    assert_eq!(drainer["facts"].get("amount"), None, "{drainer}");
    // The drainer received the transfer and, as the account's new owner, its rent too.
    assert_eq!((&effects[2]["kind"], &effects[2]["to"]), (&json!("sol_sent"), &drainer["facts"]["to"]));
    assert!(effects[2]["lamports"].as_u64().is_some_and(|all| all > lamports), "{reply:?}");
    assert_eq!(drainer["facts"].get("reason"), None, "the labels flag it, not the account's list: {drainer}");
    let approval = data["findings"].as_array().expect("list").iter().find(|f| f["kind"] == "token_approval");
    let facts = &approval.unwrap_or_else(|| panic!("an approval: {reply:?}"))["facts"];
    assert_eq!(facts["amount"], json!(u64::MAX.to_string()), "{facts}");
    assert_eq!((&facts["mint"], &facts["decimals"]), (&json!(TOKEN_MINT), &effects[1]["decimals"]), "{facts}");
    assert!(facts["decimals"].is_u64(), "{facts}");
    // Each instruction decoded, in order.
    let types: Vec<&str> =
        data["instructions"].as_array().expect("list").iter().map(|i| i["type"].as_str().expect("type")).collect();
    assert_eq!(types, ["approve", "setAuthority", "transfer"]);
    assert_eq!(data["transaction"]["version"], "legacy");
    assert_eq!(data["transaction"]["signed"], false);
}

#[test]
fn a_snapshot_source_executes_in_process_and_answers_as_the_demo_does() {
    // The demo exported as a snapshot (with its accounts' bytes, `account-bytes/`): each case
    // runs in the real runtime on the recorded bytes — the demo's own answers, byte for byte.
    let direct = serve(|_| {});
    let direct_key = direct.key(KeyOptions::default());
    let (_dir, snap) = serve_demo_snapshot();
    let snap_key = snap.key(KeyOptions::default());
    let one = check_cases(&direct, &direct_key.secret);
    let two = check_cases(&snap, &snap_key.secret);
    assert_eq!(one.len(), two.len());
    for (i, (one, two)) in one.iter().zip(&two).enumerate() {
        let (one, two) = (String::from_utf8_lossy(one), String::from_utf8_lossy(two));
        assert_eq!(one, two, "case {i}: the snapshot source answers byte for byte as the demo source");
    }
}

#[test]
fn a_snapshot_recorded_without_bytes_skips_the_simulation_and_keeps_the_findings() {
    let (_dir, server) = serve_demo_snapshot_without_bytes();
    let key = server.key(KeyOptions::default());
    let reply = scan(&server, &key.secret, &scan_body(&demo_tx("set-owner"), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.data()["simulation"]["status"], "skipped", "{reply:?}");
    let reason = reply.data()["simulation"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("without its accounts' bytes"), "{reply:?}");
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
fn an_account_of_absurd_size_fails_in_the_runtime_and_the_server_stays_up() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let me = Pubkey::parse(CLEAN).expect("address");
    let new = Pubkey([77; 32]);
    let sdk = xray::ledger::transaction::message::sdk_address;
    // 2^46 bytes: the runtime refuses more than 10 MiB of account data (SystemError 3,
    // `InvalidAccountDataLength`) before anything is allocated.
    let create = solana_system_interface::instruction::create_account(&sdk(&me), &sdk(&new), 1, 1 << 46, &sdk(&me));
    let parts = xray::instruction_parts!(create);
    let mut parts = parts;
    parts.metas.iter_mut().for_each(|m| m.1 |= m.0 == new);
    let bytes = xray::ledger::transaction::message::compile(me, &[parts], [3; 32], false).expect("compiles");
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&bytes), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.data()["simulation"]["status"], "failed", "{reply:?}");
    assert_eq!(reply.data()["simulation"]["error"], json!({"InstructionError": [0, {"Custom": 3}]}));
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
    // Handing a token account away is the account's whole balance swept, and a site asked for
    // it: `asset_sweep` is critical too (transaction-wide, so first).
    assert_eq!(kinds(&phishing), ["asset_sweep", "phishing_origin", "token_owner_change"], "{phishing:?}");
    assert_eq!(phishing.data()["findings"][0]["severity"], "critical");
    let origin_finding = &phishing.data()["findings"][1];
    assert_eq!((origin_finding["severity"].as_str(), origin_finding.get("instruction")), (Some("critical"), None));
    let lookalike = scan(&server, &key.secret, &with_origin("phantorn.app"));
    assert_eq!(kinds(&lookalike), ["asset_sweep", "lookalike_origin", "token_owner_change"], "{lookalike:?}");
    assert_eq!(lookalike.data()["findings"][1]["facts"]["imitates"], "phantom.app");
    let trusted = scan(&server, &key.secret, &with_origin("https://www.phantom.app"));
    assert_eq!(kinds(&trusted), ["asset_sweep", "token_owner_change"], "{trusted:?}");
    let local = scan(&server, &key.secret, &with_origin("http://localhost:3000"));
    assert_eq!(kinds(&local), ["asset_sweep", "token_owner_change"], "no domain, nothing to judge: {local:?}");
    assert_eq!(local.data()["origin"], "localhost", "bound all the same: {local:?}");
    assert_eq!(trusted.data()["origin"], "phantom.app");
    // Text that names no host: refused, so that no verdict is bound to an origin nobody judged.
    let text = scan(&server, &key.secret, &with_origin("not a site"));
    assert_error_details(&text, 400, "INVALID_REQUEST", &json!({"field": "origin"}));
    let typed = scan(&server, &key.secret, &json!({"transaction": tx, "origin": 7}).to_string());
    assert_error_details(&typed, 400, "INVALID_REQUEST", &json!({"field": "origin"}));
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.transaction_scan), (4, 4), "refusals are not charged: {usage:?}");
}

/// Issue #41 item 5: homographs, hyphen variants and bare public addresses warn; the real site
/// and a developer's own machine do not. A benign transfer, so the verdict is the origin's.
#[test]
fn homograph_hyphenated_and_ip_origins_warn_and_the_real_dapp_is_benign() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let tx = demo_tx("token-transfer");
    let ask = |origin: &str| {
        let reply = scan(&server, &key.secret, &json!({"transaction": tx, "origin": origin}).to_string());
        assert_eq!(reply.status, 200, "{origin}: {reply:?}");
        reply
    };
    let answer = |reply: &Reply| (reply.data()["verdict"].clone(), findings(reply));
    let origin_warns = |kind: &str| (json!("warning"), vec![(kind.to_owned(), None)]);
    // `phаntom.app` with a Cyrillic `а`: bound in punycode, judged in Unicode.
    let homograph = ask("https://ph\u{430}ntom.app/connect");
    assert_eq!(answer(&homograph), origin_warns("lookalike_origin"), "{homograph:?}");
    let facts = &homograph.data()["findings"][0]["facts"];
    let bound = homograph.data()["origin"].as_str().expect("origin").to_owned();
    assert!(bound.starts_with("xn--") && bound.ends_with(".app"), "{bound}");
    assert_eq!(facts["origin"], bound.as_str());
    assert_eq!(facts["unicode"], "ph\u{430}ntom.app");
    assert_eq!((facts["imitates"].as_str(), facts["resemblance"].as_str()), (Some("phantom.app"), Some("confusable")));
    assert_eq!(facts["scripts"], "mixed");
    let punycode = ask(&format!("https://{bound}"));
    assert_eq!(punycode.data()["origin"], bound.as_str(), "one host, however it was written");
    let hyphenated = ask("https://phantom-app.com");
    assert_eq!(answer(&hyphenated), origin_warns("lookalike_origin"), "{hyphenated:?}");
    assert_eq!(hyphenated.data()["findings"][0]["facts"]["resemblance"], "name");
    let public = ask("https://203.0.113.7/mint");
    assert_eq!(answer(&public), origin_warns("ip_origin"), "{public:?}");
    assert_eq!(public.data()["origin"], "203.0.113.7");
    let public_v6 = ask("http://[2001:db8::1]");
    assert_eq!(answer(&public_v6), origin_warns("ip_origin"), "{public_v6:?}");
    for benign in ["https://phantom.app", "http://127.0.0.1:3000", "http://[::1]:8080", "http://192.168.1.20"] {
        let reply = ask(benign);
        assert_eq!(answer(&reply), (json!("benign"), vec![]), "{benign}: {reply:?}");
    }
}

/// The value of an unlabelled series in the server's `/metrics`.
fn metric(server: &TestServer, name: &str) -> u64 {
    let text = server.metrics_text();
    let line = text.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("{name} in {text}"));
    line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{line}"))
}

/// What a verifier holds: the transaction it sent, the account it asked as, the origin it sent.
fn bound<'a>(transaction: &'a [u8], account: &'a str, origin: Option<&'a str>) -> xray::signing::ScanBinding<'a> {
    xray::signing::ScanBinding {
        transaction: Some(transaction),
        account: Some(account),
        origin: Some(origin),
        signer: None,
    }
}

fn sdk(key: &Pubkey) -> solana_address::Address {
    xray::ledger::transaction::message::sdk_address(key)
}

/// `instruction` compiled into an unsigned legacy transaction paid by `payer`.
fn compile_one(payer: Pubkey, instruction: &solana_instruction::Instruction) -> Vec<u8> {
    let parts = xray::instruction_parts!(instruction.clone());
    xray::ledger::transaction::message::compile(payer, &[parts], [3; 32], false).expect("compiles")
}

/// A signed scan names the message it judged, who asked and the origin judged, so a verdict
/// about one transaction cannot pass for another's (issue #40 item 1): the demo's `set-owner`
/// with its AuthorityType byte changed (2 → 0: a harmless mint-authority change) is answered
/// benign, the original malicious — and neither report verifies for the other's bytes, nor
/// for another account, nor for another origin.
#[test]
fn a_signed_scan_is_bound_to_its_message_account_and_origin() {
    use xray::signing::{verify_scan, ScanBinding, VerifyError};
    let server = serve(|_| {});
    let (alice, mallory) = (server.key(KeyOptions::default()), server.key(KeyOptions::default()));
    let keys = raw(server.addr, "GET", xray::signing::KEY_SET_PATH, &[], "").body;
    let original = base64_decode(&demo_tx("set-owner"));
    // The instruction's data is the message's last bytes: [6 (SetAuthority), type, 1, new owner].
    let at = original.len() - 34;
    assert_eq!(original[at], 2, "AuthorityType::AccountOwner");
    let mut harmless = original.clone();
    harmless[at] = 0;
    let body = |tx: &[u8], origin: Option<&str>| match origin {
        Some(origin) => json!({"transaction": base64_encode(tx), "origin": origin}).to_string(),
        None => scan_body(&base64_encode(tx), None),
    };
    let dangerous = scan(&server, &alice.secret, &body(&original, Some("https://www.phantom.app/swap")));
    let benign = scan(&server, &mallory.secret, &body(&harmless, None));
    assert_eq!(
        (dangerous.data()["verdict"].as_str(), benign.data()["verdict"].as_str()),
        (Some("malicious"), Some("benign"))
    );
    let (dangerous, benign) = (dangerous.data().clone(), benign.data().clone());
    assert_eq!(benign["origin"], Value::Null);
    assert_eq!(
        (dangerous["account"].as_str(), benign["account"].as_str()),
        (Some(&*alice.account), Some(&*mallory.account))
    );
    let digest = |data: &Value| data["transaction"]["messageSha256"].as_str().expect("digest").to_owned();
    assert_ne!(digest(&dangerous), digest(&benign), "one byte apart, two digests");
    assert_eq!(digest(&dangerous).len(), 64);
    let (alice_account, mallory_account) = (alice.account.as_str(), mallory.account.as_str());
    // Each verifies for exactly what it judged.
    assert!(verify_scan(&dangerous, &keys, &bound(&original, alice_account, Some("phantom.app"))).is_ok());
    assert!(verify_scan(&benign, &keys, &bound(&harmless, mallory_account, None)).is_ok());
    // The benign report presented for the dangerous transaction: another message.
    let refused = verify_scan(&benign, &keys, &bound(&original, mallory_account, None));
    assert!(matches!(refused, Err(VerifyError::DigestMismatch { .. })), "{refused:?}");
    // … by another account than the one holding it, or without the origin it was asked from.
    let as_alice = ScanBinding { account: Some(alice_account), ..bound(&harmless, mallory_account, None) };
    assert_eq!(verify_scan(&benign, &keys, &as_alice).err(), Some(VerifyError::AccountMismatch));
    let with_origin = bound(&harmless, mallory_account, Some("phantom.app"));
    assert_eq!(verify_scan(&benign, &keys, &with_origin).err(), Some(VerifyError::OriginMismatch));
    let without_origin = bound(&original, alice_account, None);
    assert_eq!(verify_scan(&dangerous, &keys, &without_origin).err(), Some(VerifyError::OriginMismatch));
    // The digest is the message's: the same transaction signed since still matches.
    let mut signed_since = original.to_vec();
    signed_since[1..65].fill(7);
    assert!(verify_scan(&dangerous, &keys, &bound(&signed_since, alice_account, Some("phantom.app"))).is_ok());
    // Bound to the signer whose value at risk it judged, and no other.
    let signer = dangerous["signer"].as_str().expect("a signer");
    let as_signer = ScanBinding { signer: Some(signer), ..bound(&original, alice_account, Some("phantom.app")) };
    assert!(verify_scan(&dangerous, &keys, &as_signer).is_ok());
    let other = ScanBinding { signer: Some(MALLORY_OTHER), ..as_signer };
    assert_eq!(verify_scan(&dangerous, &keys, &other).err(), Some(VerifyError::SignerMismatch));
    // A member nobody signed, added to a signed scan, is refused (a client may read it).
    let mut grafted = dangerous.clone();
    grafted["verdictOverride"] = serde_json::json!("benign");
    let refused = verify_scan(&grafted, &keys, &as_signer).map_err(|e| e.reason());
    assert_eq!(refused.err(), Some(xray::signing::VerifyReason::CoversMismatch));
}

/// An address that signed none of these scans.
const MALLORY_OTHER: &str = "11111111111111111111111111111112";

/// `(transaction.signed, the first signature slot's status)` of a scan's answer.
fn first_slot(reply: &Reply) -> (Option<bool>, Option<&str>) {
    let tx = &reply.data()["transaction"];
    (tx["signed"].as_bool(), tx["signatures"][0]["status"].as_str())
}

/// `transaction.signed` is a checked claim (issue #40 item 3): zeros are `missing`, bytes that
/// are no signature of this message are `invalid` — a critical finding — and a real signature
/// of the fee payer's key is `valid`.
#[test]
fn signatures_are_verified_and_an_invalid_one_is_a_finding() {
    use ed25519_dalek::{Signer as _, SigningKey};
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let unsigned = base64_decode(&demo_tx("sol-transfer"));
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&unsigned), None));
    assert_eq!(first_slot(&reply), (Some(false), Some("missing")), "{reply:?}");
    assert_eq!(reply.data()["transaction"]["signatures"][0]["signer"], CLEAN);
    // 0x41 bytes: "signed" by the old rule, and no signature.
    let mut forged = unsigned.clone();
    forged[1..65].fill(0x41);
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&forged), None));
    let data = reply.data();
    assert_eq!(
        (data["transaction"]["signed"].as_bool(), data["verdict"].as_str()),
        (Some(false), Some("malicious")),
        "{reply:?}"
    );
    assert_eq!(data["transaction"]["signatures"][0]["status"], "invalid");
    assert_eq!(findings(&reply), [("invalid_signature".to_owned(), None)]);
    assert_eq!(data["findings"][0]["facts"]["signer"], CLEAN);
    // A real signature: a message built for a key the test holds (the demo's wallets' keys are
    // nobody's), transferring to the clean wallet.
    let payer = SigningKey::from_bytes(&[42; 32]);
    let from = Pubkey(payer.verifying_key().to_bytes());
    let transfer =
        solana_system_interface::instruction::transfer(&sdk(&from), &sdk(&Pubkey::parse(CLEAN).expect("key")), 1);
    let mut bytes = compile_one(from, &transfer);
    let signature = payer.sign(&bytes[65..]).to_bytes();
    bytes[1..65].copy_from_slice(&signature);
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&bytes), None));
    assert_eq!(first_slot(&reply), (Some(true), Some("valid")), "{reply:?}");
    assert!(!findings(&reply).iter().any(|(k, _)| k == "invalid_signature"), "{reply:?}");
}

/// A client that hangs up costs the upstream nothing more (issue #40 item 2): scans that need
/// the signer's history (a round trip, then its transactions) hung up during the first round
/// trip start none of the second — before, each hang-up went on to read 25 transactions.
#[test]
fn hang_ups_start_no_upstream_work_after_the_client_left() {
    let server = serve_slow(600, |_| {});
    let key = server.key(KeyOptions::default());
    let body = scan_body(&demo_tx("approve"), None);
    let request = format!(
        "POST {SCAN_PATH} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        key.secret,
        body.len()
    );
    const HANG_UPS: u64 = 6;
    for _ in 0..HANG_UPS {
        let mut conn = Conn::open(server.addr);
        std::io::Write::write_all(&mut conn.stream, request.as_bytes()).expect("sent");
        std::thread::sleep(std::time::Duration::from_millis(150));
        drop(conn);
    }
    // Long enough for a lane that kept going to finish both round trips.
    std::thread::sleep(std::time::Duration::from_millis(2_500));
    let calls = server.ledger_calls();
    let total: u64 = calls.values().sum();
    assert_eq!(calls.get("getTransaction").copied().unwrap_or(0), 0, "no read started after a hang-up: {calls:?}");
    // What had started before each hang-up: the pre-state, the simulation, the signatures page.
    assert!(total <= 3 * HANG_UPS, "{calls:?}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved), (0, 0), "{usage:?}");
    // The counter is the process's (tests share it): at least these hang-ups.
    assert!(metric(&server, "xray_scan_abandoned_total") >= HANG_UPS);
}

/// The lane's upstream answers are bounded in bytes, every scan together (issue #40 item 4):
/// with a budget of 16 KiB a scan that reads the signer's history is refused 503, not charged,
/// and one that reads less is answered.
#[test]
fn the_lanes_buffered_answers_are_bounded_and_past_the_bound_a_scan_is_503() {
    let server = serve_rpc(Default::default(), |c| c.scan_buffered_bytes_max = 16 * 1024);
    let key = server.key(KeyOptions::default());
    let reply = scan(&server, &key.secret, &scan_body(&demo_tx("approve"), None));
    assert_error_details(&reply, 503, "SERVICE_BUSY", &json!({}));
    assert!(reply.error()["message"].as_str().expect("message").contains("upstream answers"), "{reply:?}");
    assert!(reply.header("retry-after").is_some());
    let reply = scan(&server, &key.secret, &scan_body(&demo_tx("set-owner"), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved), (1, 0), "{usage:?}");
    assert!(metric(&server, "xray_scan_over_bytes_total") >= 1);
}

/// A v0 transaction of `payer` loading account 0 of lookup table `table` as writable.
fn v0_with_table(payer: Pubkey, table: Pubkey) -> Vec<u8> {
    use solana_message::compiled_instruction::CompiledInstruction;
    use solana_message::v0::{Message, MessageAddressTableLookup};
    use solana_message::{MessageHeader, VersionedMessage};
    let message = Message {
        header: MessageHeader {
            num_required_signatures: 1,
            num_readonly_signed_accounts: 0,
            num_readonly_unsigned_accounts: 1,
        },
        account_keys: vec![sdk(&payer), sdk(&Pubkey::default())],
        recent_blockhash: solana_message::Hash::new_from_array([1; 32]),
        instructions: vec![CompiledInstruction {
            program_id_index: 1,
            accounts: vec![0, 2],
            data: vec![2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        }],
        address_table_lookups: vec![MessageAddressTableLookup {
            account_key: sdk(&table),
            writable_indexes: vec![0],
            readonly_indexes: vec![],
        }],
    };
    let tx = solana_transaction::versioned::VersionedTransaction {
        signatures: vec![solana_transaction::Signature::default()],
        message: VersionedMessage::V0(message),
    };
    bincode::serialize(&tx).expect("serialized")
}

/// A table that does not exist and an account that is no table are two messages naming the
/// address; such reads (400, not charged) are budgeted per account and minute, then 429.
#[test]
fn missing_lookup_tables_are_named_and_budgeted() {
    let server = serve(|_| {});
    let key = server.key(KeyOptions::default());
    let payer = Pubkey::parse(CLEAN).expect("key");
    let absent = Pubkey([201; 32]);
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&v0_with_table(payer, absent)), None));
    assert_error_details(&reply, 400, "INVALID_TRANSACTION", &json!({"field": "transaction"}));
    let message = reply.error()["message"].as_str().expect("message").to_owned();
    assert!(message.contains(&format!("lookup table {absent} does not exist")), "{message}");
    // The clean wallet is a System account, not a table.
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&v0_with_table(payer, payer)), None));
    let message = reply.error()["message"].as_str().expect("message").to_owned();
    assert!(
        message.contains(&format!(
            "{payer} is an account of 11111111111111111111111111111111, not an address lookup table"
        )),
        "{message}"
    );
    let budget = u64::from(xray::config::SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE);
    for _ in 2..budget {
        let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&v0_with_table(payer, absent)), None));
        assert_eq!(reply.status, 400, "{reply:?}");
    }
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&v0_with_table(payer, absent)), None));
    assert_error_details(&reply, 429, "RATE_LIMITED", &json!({}));
    assert!(reply.header("retry-after").is_some(), "{reply:?}");
    // Another account has its own budget; nothing was charged.
    let other = server.key(KeyOptions::default());
    let reply = scan(&server, &other.secret, &scan_body(&base64_encode(&v0_with_table(payer, absent)), None));
    assert_eq!(reply.status, 400, "{reply:?}");
    let usage = server.usage(&key.secret);
    assert_eq!((usage.used, usage.reserved), (0, 0), "{usage:?}");
}

/// Address poisoning cannot switch the look-alike check off (issue #41 item 4): the demo
/// timeline's `timeline_dust` wallet, which pays a friend, gets 30 dust transfers from the
/// friend's look-alike (a timeline script, served by the local JSON-RPC server) — more than
/// the 25 transactions the window holds — then sends 1 SOL to the look-alike. The dust takes no
/// place in the window: the friend is still a counterparty, `lookalike_recipient` is found, and
/// `counterparties` says how far back the read looked and what it passed over.
#[test]
fn dust_from_a_lookalike_does_not_push_the_real_counterparty_out() {
    const DUST: u64 = 30;
    let dir = tempfile::tempdir().expect("tempdir");
    let events: Vec<(&str, u64)> = (0..DUST).map(|at_s| ("timeline_dust", at_s)).collect();
    // Started at the epoch's first millisecond: every event has happened.
    let spec = super::monitor_events::timeline_spec(dir.path(), 1, &events);
    let server = serve_rpc_spec(spec, Default::default(), |_| {});
    let key = server.key(KeyOptions::default());
    let demo = xray::ledger::demo::DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let wallet = demo.archetype("timeline_dust").expect("timeline_dust");
    let send =
        solana_system_interface::instruction::transfer(&sdk(&wallet), &sdk(&demo.timeline_lookalike()), 1_000_000_000);
    let reply = scan(&server, &key.secret, &scan_body(&base64_encode(&compile_one(wallet, &send)), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    let data = reply.data();
    assert_eq!(findings(&reply), [("lookalike_recipient".to_owned(), Some(0))], "{reply:?}");
    assert_eq!(data["verdict"], "malicious");
    let seen = &data["counterparties"];
    assert_eq!((seen["checked"].as_bool(), seen["exhausted"].as_bool()), (Some(true), Some(false)), "{seen}");
    // Its four own transactions (funded in SOL, paid the friend SOL and tokens, paid back once;
    // the tokens it was funded with went between token accounts, which its list does not name),
    // every one of the look-alike's: read and passed over, none failed.
    assert_eq!(seen["transactions"], 4, "{seen}");
    assert_eq!((seen["dustSkipped"].as_u64(), seen["failedSkipped"].as_u64()), (Some(DUST), Some(0)), "{seen}");
    assert_eq!(seen["transactionsRead"].as_u64(), Some(DUST + 4), "{seen}");
    assert_eq!(seen["signaturesListed"].as_u64(), Some(DUST + 4), "{seen}");
    assert!(seen["oldestSlot"].is_u64() && seen["oldestBlockTime"].is_i64(), "{seen}");
    assert!(seen.get("reason").is_none(), "{seen}");
}

/// A scan on a memory-resident source runs on the listener thread: past one token's worth of
/// that work (`scan_listener_us_per_token`), its key's rate limit pays for the rest — here 10 µs
/// a token, so the drain (≥ 40 µs of runtime and reads) costs more than one, and the key's next
/// answer says so. Its quota unit stays one; with the charge off, a scan is one token.
#[test]
fn a_scan_that_keeps_the_listener_busy_costs_its_key_more_rate_limit() {
    let options = || KeyOptions { rate_per_second: 1, burst: 1_000, ..KeyOptions::default() };
    let tokens_after_one_scan = |us_per_token: u64| {
        let server = serve(|c| c.scan_listener_us_per_token = us_per_token);
        let key = server.key(options());
        let reply = scan(&server, &key.secret, &scan_body(&demo_tx("drain"), None));
        assert_eq!(reply.status, 200, "{reply:?}");
        let next = get(server.addr, "/v1/developer/status", &key.secret);
        let usage = server.usage(&key.secret);
        assert_eq!((usage.used, usage.transaction_scan), (1, 1), "one quota unit: {usage:?}");
        assert_rate_headers(&next, &key).tokens
    };
    // 1,000 tokens: the scan's first and the status read's are two.
    assert_eq!(tokens_after_one_scan(0), 998, "off: one token a scan");
    let left = tokens_after_one_scan(10);
    assert!(left <= 994, "a scan of ≥ 40 µs on the listener costs ≥ 4 more tokens: {left} left");
}
