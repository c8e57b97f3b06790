//! Signed reports over real loopback HTTP (issue #31 item 3): a READY analysis, a comparison,
//! a scan and a webhook body carry `data.signature`, typed (`xray.analysis.v1`, …) and over
//! exactly its type's members, which verifies with the key set published at
//! `/.well-known/xray-keys.json` (fetched over HTTP, no key) as the type expected and as no
//! other; a changed byte fails; a member added to a signed scan is not returned as verified; a
//! scan's signature covers its time and request id; a rotation through the admin API keeps old
//! reports verifiable with the retired key and signs new ones with the new key; the key file
//! is 0600 and a restart keeps the key. Also the independent verifier
//! (`tests/signing/verify_report.py`: Python's `cryptography` + `rfc8785`) and
//! `examples/client.py verify`.

use std::os::unix::fs::PermissionsExt;

use serde_json::{json, Value};
use xray::signing::{
    verify_report, ReportType, Verified, VerifyError, ANALYSIS_COVERS, COMPARISON_COVERS, KEY_FILE_NAME, KEY_SET_PATH,
    SCAN_COVERS,
};

use super::support::*;
use super::webhooks::Receiver;

/// The published key set, fetched as any client would: no API key.
pub(crate) fn key_set(server: &TestServer) -> Value {
    let reply = raw(server.addr, "GET", KEY_SET_PATH, &[], "");
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("cache-control"), Some("public, max-age=60"));
    assert!(reply.header("ratelimit").is_none(), "no key, no rate-limit headers");
    reply.body
}

fn current_kid(keys: &Value) -> String {
    let current: Vec<&Value> =
        keys["keys"].as_array().expect("keys").iter().filter(|k| k["status"] == "current").collect();
    assert_eq!(current.len(), 1, "{keys}");
    current[0]["kid"].as_str().expect("kid").to_owned()
}

/// The key id that signed `data` as a report of type `expected`.
fn verified_by(data: &Value, keys: &Value, expected: ReportType) -> Result<String, VerifyError> {
    verify_report(data, keys, expected).map(|Verified { key_id, .. }| key_id)
}

fn sorted(names: &[&str]) -> Value {
    let mut names = names.to_vec();
    names.sort_unstable();
    json!(names)
}

/// A copy of `data` with one character of the string at `pointer` changed.
fn with_changed_char(data: &Value, pointer: &str) -> Value {
    let mut changed = data.clone();
    let text = changed.pointer(pointer).and_then(Value::as_str).expect("a string member").to_owned();
    let mut bytes = text.into_bytes();
    bytes[1] = if bytes[1] == b'A' { b'B' } else { b'A' };
    *changed.pointer_mut(pointer).expect("member") = Value::String(String::from_utf8(bytes).expect("ascii"));
    changed
}

fn analyze(server: &TestServer, key: &str, wallet: &str) -> Value {
    let accepted = submit(server, key, WALLET_PATH, &refresh_body(wallet));
    let reply = server.finish(&accepted.poll_path(), key);
    assert_eq!(reply.job_status(), "READY", "{reply:?}");
    reply.data().clone()
}

fn rotate(server: &TestServer) -> Value {
    let reply = server.admin("POST", "/v1/admin/signing-keys/rotate");
    assert_eq!(reply.status, 201, "{reply:?}");
    reply.body["data"].clone()
}

#[test]
fn reports_are_signed_verify_with_the_published_keys_and_survive_a_rotation() {
    let mut server = serve(|c| c.webhook_allow_hosts = vec!["127.0.0.1".into()]);
    let key = server.key(KeyOptions::default());
    let k = key.secret.as_str();
    let secret = server.admin("POST", &format!("/v1/admin/accounts/{}/webhook-secret", key.account));
    assert_eq!(secret.status, 201, "{secret:?}");
    let keys = key_set(&server);
    let first_kid = current_kid(&keys);
    assert_eq!(first_kid.len(), 16);
    let jwk = &keys["keys"][0];
    assert_eq!(
        (&jwk["kty"], &jwk["crv"], &jwk["alg"], &jwk["use"]),
        (&json!("OKP"), &json!("Ed25519"), &json!("EdDSA"), &json!("sig"))
    );
    assert!(is_timestamp(&jwk["createdAt"]) && jwk["retiredAt"].is_null(), "{jwk}");

    // The key file: 0600 in the data directory.
    let file = server.running().app.signer.key_id();
    assert_eq!(file, first_kid);
    let data_dir = key_file_dir(&server);
    let mode = std::fs::metadata(data_dir.join(KEY_FILE_NAME)).expect("key file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    // An analysis, with a webhook: the poll and the callback carry the same signature.
    let receiver = Receiver::start(&[200]);
    let body = json!({ "wallet": OPEN_DELEGATION, "refresh": true, "callbackUrl": receiver.url() }).to_string();
    let accepted = submit(&server, k, WALLET_PATH, &body);
    let analysis = server.finish(&accepted.poll_path(), k).data().clone();
    let signature = &analysis["signature"];
    assert_eq!(signature["keyId"], first_kid.as_str());
    assert_eq!((&signature["alg"], &signature["canon"]), (&json!("EdDSA"), &json!("JCS")));
    assert_eq!(signature["type"], "xray.analysis.v1");
    assert_eq!(signature["covers"], sorted(&ANALYSIS_COVERS));
    assert_eq!(verified_by(&analysis, &keys, ReportType::Analysis), Ok(first_kid.clone()));
    let delivered: Value = serde_json::from_slice(&receiver.wait_for(1)[0].body).expect("webhook JSON");
    assert_eq!(delivered["data"]["signature"], *signature, "the webhook carries the poll's signature");
    assert_eq!(verified_by(&delivered["data"], &keys, ReportType::Analysis), Ok(first_kid.clone()));
    // As another type it is refused.
    assert!(matches!(verify_report(&analysis, &keys, ReportType::Scan), Err(VerifyError::WrongType { .. })));

    // Any changed byte of what it covers fails: the document, the wallet, the time.
    let mut changed = analysis.clone();
    let score = changed["xray"]["score"]["value"].as_u64().expect("score");
    changed["xray"]["score"]["value"] = json!(score ^ 1);
    assert_eq!(verified_by(&changed, &keys, ReportType::Analysis), Err(VerifyError::BadSignature));
    for pointer in ["/wallet", "/analysisId", "/completedAt", "/xray/signals/0/kind"] {
        assert_eq!(
            verified_by(&with_changed_char(&analysis, pointer), &keys, ReportType::Analysis),
            Err(VerifyError::BadSignature),
            "{pointer}"
        );
    }
    let mut bad_signature = analysis.clone();
    let text = signature["value"].as_str().expect("value");
    let flipped = match text.strip_prefix('A') {
        Some(rest) => format!("B{rest}"),
        None => format!("A{}", &text[1..]),
    };
    bad_signature["signature"]["value"] = json!(flipped);
    assert_eq!(verified_by(&bad_signature, &keys, ReportType::Analysis), Err(VerifyError::BadSignature));

    // A comparison.
    let accepted = submit(&server, k, COMPARE_PATH, &compare_body(SYBIL_A, SYBIL_B));
    let comparison = server.finish(&accepted.poll_path(), k).data().clone();
    assert_eq!(comparison["signature"]["type"], "xray.comparison.v1");
    assert_eq!(comparison["signature"]["covers"], sorted(&COMPARISON_COVERS));
    assert_eq!(verified_by(&comparison, &keys, ReportType::Comparison), Ok(first_kid.clone()));
    assert_eq!(
        verified_by(&with_changed_char(&comparison, "/walletB"), &keys, ReportType::Comparison),
        Err(VerifyError::BadSignature)
    );
    assert!(matches!(verify_report(&comparison, &keys, ReportType::Analysis), Err(VerifyError::WrongType { .. })));

    // A scan, signed as answered, over every member of its `data`, its time and request among them.
    let scan = scan_is_signed_with_its_time_and_request(&server, k, &keys, &first_kid);

    // The independent verifier (Python) and the example client accept the real reports.
    python_verifier_accepts(&server, &analysis, &keys, "xray.analysis.v1", None);
    let binding = ScanHeld { transaction: demo_tx("drain"), account: key.account.clone() };
    python_verifier_accepts(&server, &scan, &keys, "xray.scan.v2", Some(&binding));

    // Rotation through the admin API: the old key stays published, retired.
    let rotation = rotate(&server);
    assert_eq!(rotation["retiredKeyId"], first_kid.as_str());
    let second_kid = rotation["keyId"].as_str().expect("keyId").to_owned();
    assert_ne!(second_kid, first_kid);
    let keys = key_set(&server);
    assert_eq!(current_kid(&keys), second_kid);
    let retired = keys["keys"].as_array().expect("keys").iter().find(|k| k["kid"] == first_kid.as_str()).expect("kept");
    assert_eq!(retired["status"], "retired");
    assert!(is_timestamp(&retired["retiredAt"]), "{retired}");
    // The operator lists the same set through the admin listener (`xray signing-keys list`).
    let listed = server.admin("GET", "/v1/admin/signing-keys");
    assert_eq!((listed.status, &listed.body["data"]), (200, &keys), "{listed:?}");
    // The report signed before keeps its signature, and verifies with the retired key.
    let again = get(server.addr, &analysis_path(analysis["analysisId"].as_str().expect("id")), k).data().clone();
    assert_eq!(again["signature"], analysis["signature"]);
    assert_eq!(verified_by(&again, &keys, ReportType::Analysis), Ok(first_kid.clone()));
    // A new report is signed with the new key.
    let fresh = analyze(&server, k, CLEAN);
    assert_eq!(verified_by(&fresh, &keys, ReportType::Analysis), Ok(second_kid.clone()));

    // A restart keeps the ring: same current key, same retired key, same reports.
    server.restart();
    let keys_after = key_set(&server);
    assert_eq!(keys_after, keys);
    let again = get(server.addr, &analysis_path(analysis["analysisId"].as_str().expect("id")), k).data().clone();
    assert_eq!(verified_by(&again, &keys_after, ReportType::Analysis), Ok(first_kid));
}

/// A scan's answer: signed `xray.scan.v2` over exactly `SCAN_COVERS`, `scannedAt` and
/// `requestId` (the response's `X-Request-Id`) among them; a changed verdict fails; a member
/// added to the signed `data` is not in what verifies; presented as an analysis it is refused.
fn scan_is_signed_with_its_time_and_request(server: &TestServer, key: &str, keys: &Value, kid: &str) -> Value {
    let reply = post(server.addr, SCAN_PATH, key, &scan_body(&demo_tx("drain"), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    let scan = reply.data().clone();
    assert_eq!(scan["signature"]["type"], "xray.scan.v2");
    assert_eq!(scan["signature"]["covers"], sorted(&SCAN_COVERS));
    assert!(is_timestamp(&scan["scannedAt"]), "{scan}");
    let request_id = scan["requestId"].as_str().expect("requestId");
    assert!(is_request_id(request_id), "{request_id}");
    if let Some(header) = reply.header("x-request-id") {
        assert_eq!(request_id, header, "the signed request id is the answer's");
    }
    let verified = verify_report(&scan, keys, ReportType::Scan).expect("verified");
    assert_eq!(verified.key_id, kid);
    assert_eq!(
        (&verified.covered["scannedAt"], &verified.covered["requestId"]),
        (&scan["scannedAt"], &scan["requestId"])
    );
    for member in ["verdict", "scannedAt", "requestId"] {
        let mut changed = scan.clone();
        changed[member] = json!("2000-01-01T00:00:00.000Z");
        assert_eq!(verified_by(&changed, keys, ReportType::Scan), Err(VerifyError::BadSignature), "{member}");
    }
    // An unsigned member added (an X-Ray, as if the scan carried one): refused — a scan is
    // served as exactly its covered members and the signature, and a client may read the rest.
    let members = scan.as_object().expect("object").keys().filter(|k| *k != "signature").count();
    assert_eq!(members, SCAN_COVERS.len(), "served as its covered members");
    let mut grafted = scan.clone();
    grafted["xray"] = json!({ "score": { "value": 100, "riskLevel": "low" } });
    let refused = verify_report(&grafted, keys, ReportType::Scan);
    assert_eq!(refused.map(|v| v.key_id), Err(VerifyError::CoversMismatch("xray.scan.v2")));
    // A scan's signature is no analysis' nor comparison's.
    for expected in [ReportType::Analysis, ReportType::Comparison] {
        let refused = verify_report(&grafted, keys, expected);
        assert_eq!(
            refused,
            Err(VerifyError::WrongType { expected: expected.name(), found: "xray.scan.v2".to_owned() })
        );
    }
    // Its covers claiming one member more or less: refused before the signature is checked.
    let mut superset = grafted.clone();
    superset["signature"]["covers"].as_array_mut().expect("covers").push(json!("xray"));
    let mut subset = scan.clone();
    subset["signature"]["covers"].as_array_mut().expect("covers").pop();
    for forged in [superset, subset] {
        assert_eq!(verified_by(&forged, keys, ReportType::Scan), Err(VerifyError::CoversMismatch("xray.scan.v2")));
    }
    scan
}

/// Scans that reach one listener thread together share one Ed25519 signature (issue #41 item
/// 9): each carries its own salt and Merkle path and verifies alone — in Rust and in both
/// Python verifiers, bound to its transaction and account —, another scan's path or salt does
/// not verify it, and `/metrics` counts fewer signatures than scans signed. Their quota units,
/// written together too (one store write a tick), are each charged once, durably: a restart
/// reads as many as were answered.
#[test]
fn scans_answered_together_share_one_signature_and_each_verifies_alone() {
    const SCANS: usize = 16;
    const ATTEMPTS: usize = 5;
    let mut server = serve(|c| c.listener_threads = 1);
    let key = server.key(KeyOptions::scopes("transaction:scan,usage:read"));
    let keys = key_set(&server);
    let (body, auth) = (scan_body(&demo_tx("drain"), None), format!("Bearer {}", key.secret));
    let headers = [("Authorization", auth.as_str()), ("Content-Type", "application/json")];
    for attempt in 1..=ATTEMPTS {
        // Every request written before any answer is read: the listener finds them ready together.
        let mut conns: Vec<Conn> = (0..SCANS).map(|_| Conn::open(server.addr)).collect();
        conns.iter_mut().for_each(|c| c.write_request("POST", SCAN_PATH, &headers, body.as_bytes()));
        let scans: Vec<Value> = conns
            .iter_mut()
            .map(|c| {
                let reply = c.read_reply();
                assert_eq!(reply.status, 200, "{reply:?}");
                reply.data().clone()
            })
            .collect();
        for scan in &scans {
            verify_report(scan, &keys, ReportType::Scan).expect("each scan verifies alone");
        }
        let value = |scan: &Value| scan["signature"]["value"].clone();
        let Some((a, b)) = scans
            .iter()
            .enumerate()
            .find_map(|(i, a)| scans[i + 1..].iter().find(|b| value(b) == value(a)).map(|b| (a, b)))
        else {
            continue;
        };
        assert_ne!(a["signature"]["batch"]["salt"], b["signature"]["batch"]["salt"]);
        assert_ne!(a["requestId"], b["requestId"]);
        let path_len = |s: &Value| s["signature"]["batch"]["path"].as_array().map_or(0, Vec::len);
        assert!(path_len(a) >= 1 && path_len(b) >= 1, "{a}");
        for member in ["path", "salt"] {
            let mut borrowed = a.clone();
            borrowed["signature"]["batch"][member] = b["signature"]["batch"][member].clone();
            assert_eq!(verified_by(&borrowed, &keys, ReportType::Scan), Err(VerifyError::BadSignature), "{member}");
        }
        let binding = ScanHeld { transaction: demo_tx("drain"), account: key.account.clone() };
        python_verifier_accepts(&server, a, &keys, "xray.scan.v2", Some(&binding));
        let metrics = server.metrics_text();
        let counter = |name: &str| -> u64 {
            let line = metrics.lines().find(|l| l.starts_with(&format!("{name} "))).expect(name);
            line.rsplit(' ').next().and_then(|v| v.parse().ok()).expect("a count")
        };
        let (batches, leaves) =
            (counter("xray_scan_signature_batches_total"), counter("xray_scan_signature_batch_leaves_total"));
        assert!(batches >= 1 && batches < leaves, "{batches} signatures for {leaves} scans");
        let answered = (SCANS * attempt) as u64;
        server.restart();
        let usage = server.usage(&key.secret);
        assert_eq!((usage.used, usage.transaction_scan), (answered, answered), "{usage:?}");
        return;
    }
    panic!("no two of {SCANS} scans written together were signed in one batch, {ATTEMPTS} times");
}

/// The data directory of the running server (where the key file is).
fn key_file_dir(server: &TestServer) -> std::path::PathBuf {
    server.data_dir().to_owned()
}

/// `tests/signing/verify_report.py` (Python's `cryptography` + `rfc8785`, written from the docs
/// alone) verifies the real report of type `report_type` against the server's key set, refuses
/// a one-byte change, refuses it as another type and leaves an added member out of what it
/// verified; `examples/client.py verify` agrees and refuses it as another type.
/// What the client of a scan holds: the transaction it sent (base64) and its account (it sent
/// no origin).
pub(crate) struct ScanHeld {
    transaction: String,
    account: String,
}

impl ScanHeld {
    fn args(&self) -> Vec<&str> {
        vec!["--transaction", &self.transaction, "--account", &self.account, "--origin", "none"]
    }
}

pub(crate) fn python_verifier_accepts(
    server: &TestServer,
    data: &Value,
    keys: &Value,
    report_type: &str,
    held: Option<&ScanHeld>,
) {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report.json");
    let key_file = dir.path().join("keys.json");
    std::fs::write(&report, serde_json::to_vec_pretty(&json!({ "data": data })).expect("json")).expect("written");
    std::fs::write(&key_file, keys.to_string()).expect("written");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/signing/verify_report.py");
    let out = std::process::Command::new("python3")
        .args(["-B", script, "--keys-url", &server.url(KEY_SET_PATH), "--type", report_type])
        .args(held.map(ScanHeld::args).unwrap_or_default())
        .arg(&report)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "verify_report.py: {stdout} {}", String::from_utf8_lossy(&out.stderr));
    for says in ["verified", "tampered copy refused", "as another type refused", "added member not verified"] {
        assert!(stdout.contains(says), "{says:?} not in {stdout}");
    }
    if held.is_some() {
        for says in ["bound to", "changed message refused", "re-signed transaction still bound"] {
            assert!(stdout.contains(says), "{says:?} not in {stdout}");
        }
    }
    let client = |as_type: &str| {
        let client = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/client.py");
        let out = std::process::Command::new("python3")
            .args(["-B", client, "verify", "--type", as_type, "--keys"])
            .arg(&key_file)
            .args(held.filter(|_| as_type == "xray.scan.v2").map(ScanHeld::args).unwrap_or_default())
            .arg(&report)
            .output()
            .expect("python3 runs");
        let verdict: Value = serde_json::from_slice(&out.stdout).expect("JSON verdict");
        (out.status.success(), verdict)
    };
    let (ok, verdict) = client(report_type);
    assert!(ok, "client.py verify: {verdict}");
    assert_eq!((&verdict["verified"], &verdict["type"]), (&json!(true), &json!(report_type)), "{verdict}");
    assert_eq!(verdict["keyId"], data["signature"]["keyId"]);
    let covered = verdict["data"].as_object().expect("the verified members");
    let names: Vec<&Value> = data["signature"]["covers"].as_array().expect("covers").iter().collect();
    assert_eq!(covered.len(), names.len(), "{verdict}");
    assert!(names.iter().all(|n| covered.contains_key(n.as_str().expect("name"))), "{verdict}");
    let other = if report_type == "xray.scan.v2" { "analysis" } else { "scan" };
    let (ok, verdict) = client(other);
    assert!(!ok && verdict["verified"] == json!(false), "as {other}: {verdict}");
    assert_eq!((&verdict["reason"], &verdict["keyId"]), (&json!("wrong_type"), &Value::Null), "as {other}: {verdict}");
}
