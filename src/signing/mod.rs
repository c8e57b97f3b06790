//! Signed reports (issue #31 item 3): every finished analysis and comparison, and every scan,
//! carries a detached Ed25519 signature over its canonical bytes, made with the server's
//! signing key; the public keys, current and retired, are published as a JWK set.
//!
//! Owns: `ReportSigner` (the key ring in force, signing, rotation, the published key set),
//! `report_members` (what a job's signature covers), `verify_report` (the verifier the tests
//! and the docs describe), `jcs` (RFC 8785) and `ring` (key material, its stored form and where
//! it is kept: `<data-dir>/signing-keys.json`, 0600, or — on a cluster — one store record every
//! node reads). Threads: signing runs on compute threads (the job sink, once per READY job) and
//! listener threads (scans); the key set is read by listener threads; rotation runs on the
//! admin listener; a cluster node's reload on the housekeeping thread.
//!
//! Wire shape: `data.signature = {keyId, alg: "EdDSA", canon: "JCS", covers, value}` beside the
//! document in `data`. The signed bytes are the JCS form of the object made of exactly the
//! members of `data` that `covers` names (a verifier parses the report, picks those members,
//! canonicalizes, verifies), so a report stored or forwarded as JSON — keys reordered, spaces
//! changed — still verifies. A field and not a header: `Xray-Signature` is already the webhook
//! HMAC header, and a poll's envelope (`status`, `callback`) changes over a job's life.
//!
//! Invariant: a job is signed once, by the sink, with the key current then; the signature is
//! stored with the result and served as stored (polls and webhooks never sign), so a report
//! signed before a rotation keeps its `keyId` and verifies with the published retired key.
//! Invariant: private key material is never logged, never in a metric, never in a `Debug`
//! output, and wiped from memory when dropped (`zeroize`); a retired key's private half is
//! erased at the rotation that retires it.
//! Deliberately absent: signing FAILED jobs and live polls (nothing final to attest); key ids
//! chosen by the operator; a retired key kept past `SIGNING_KEYS_RETIRED_MAX` (reports it made
//! can no longer be verified from the endpoint).

pub mod jcs;
pub mod ring;

use std::sync::Arc;
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use bytes::Bytes;
use ed25519_dalek::{Signature, Signer as _, VerifyingKey};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock::rfc3339_ms;
use crate::config::SIGNING_KEYS_RELOAD_MS;
use crate::store::{JobKind, ReportSignature};
use ring::{KeyHome, Ring};

pub use ring::{ALG, KEY_FILE_NAME};

/// `canon` of every signature: the signed bytes are RFC 8785 JCS.
pub const CANON: &str = "JCS";
/// Public path of the key set (no API key needed).
pub const KEY_SET_PATH: &str = "/.well-known/xray-keys.json";
/// What an analysis' signature covers: its identity, when it completed, the document.
pub const ANALYSIS_COVERS: [&str; 4] = ["analysisId", "wallet", "completedAt", "xray"];
/// What a comparison's signature covers.
pub const COMPARISON_COVERS: [&str; 5] = ["pairId", "walletA", "walletB", "completedAt", "comparison"];
/// Attempts of a rotation that lost a compare-and-set to another node's, before it gives up.
const ROTATION_ATTEMPTS_MAX: usize = 4;

/// The server's report signer: the key ring in force, where it is kept, and its key set.
pub struct ReportSigner {
    home: KeyHome,
    ring: ArcSwap<Ring>,
    /// When a cluster node last read the shared ring (`reload_if_due`).
    reloaded: parking_lot::Mutex<Instant>,
    /// One rotation at a time in this process.
    rotating: parking_lot::Mutex<()>,
}

impl std::fmt::Debug for ReportSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReportSigner").field("key_id", &self.ring.load().kid()).finish_non_exhaustive()
    }
}

/// What a rotation did: the new current key and the one it retired.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyRotation {
    pub key_id: String,
    pub retired_key_id: String,
    pub created_at: String,
}

impl ReportSigner {
    /// The signer of a single node: its ring in `<data_dir>/signing-keys.json`, created (0600)
    /// on the first start.
    pub fn open_file(data_dir: &std::path::Path, now_ms: u64) -> Result<ReportSigner, String> {
        ReportSigner::open(KeyHome::File(data_dir.join(KEY_FILE_NAME)), now_ms)
    }

    /// The signer of a cluster node: the ring every node shares, one store record, created by
    /// whichever node starts first (create-if-absent: one key wins).
    pub fn open_shared(store: Arc<dyn crate::store::Store>, now_ms: u64) -> Result<ReportSigner, String> {
        ReportSigner::open(KeyHome::Shared(store), now_ms)
    }

    fn open(home: KeyHome, now_ms: u64) -> Result<ReportSigner, String> {
        let ring = home.load_or_create(now_ms)?;
        tracing::info!(key_id = %ring.kid(), retired = ring.retired_len(), "report signing key loaded");
        Ok(ReportSigner {
            home,
            ring: ArcSwap::from_pointee(ring),
            reloaded: parking_lot::Mutex::new(Instant::now()),
            rotating: parking_lot::Mutex::new(()),
        })
    }

    /// The id of the key that signs now.
    pub fn key_id(&self) -> String {
        self.ring.load().kid().to_owned()
    }

    /// The published key set (`GET /.well-known/xray-keys.json`), made once per ring.
    pub fn key_set(&self) -> Bytes {
        self.ring.load().key_set()
    }

    /// The signature of the object made of `members` (name, value), with the current key;
    /// `covers` lists their names (sorted: the order JCS signs them in).
    pub fn sign<N: Into<String>>(&self, members: Vec<(N, Value)>) -> ReportSignature {
        let object: Map<String, Value> = members.into_iter().map(|(name, value)| (name.into(), value)).collect();
        let covers: Vec<String> = object.keys().cloned().collect();
        let message = jcs::canonicalize(&Value::Object(object));
        let ring = self.ring.load();
        let signature = ring.signing_key().sign(&message);
        ReportSignature {
            key_id: ring.kid().to_owned(),
            alg: ALG.to_owned(),
            canon: CANON.to_owned(),
            covers,
            value: URL_SAFE_NO_PAD.encode(signature.to_bytes()),
        }
    }

    /// A new current key; the old one's public half joins the retired keys (the oldest past
    /// `SIGNING_KEYS_RETIRED_MAX` dropped), its private half erased. On a cluster, written by
    /// compare-and-set on the shared record, so two concurrent rotations both take effect in
    /// turn and no node's key is lost.
    pub fn rotate(&self, now_ms: u64) -> Result<KeyRotation, String> {
        let _one = self.rotating.lock();
        for _ in 0..ROTATION_ATTEMPTS_MAX {
            let (stored, revision) = self.home.load()?.ok_or("the signing keys are gone from their store")?;
            let retired_key_id = stored.current_kid().to_owned();
            let next = stored.rotated(now_ms)?;
            if self.home.replace(&next, revision)? {
                let ring = self.home.load_or_create(now_ms)?;
                let rotation =
                    KeyRotation { key_id: ring.kid().to_owned(), retired_key_id, created_at: rfc3339_ms(now_ms) };
                self.ring.store(Arc::new(ring));
                tracing::info!(key_id = %rotation.key_id, retired = %rotation.retired_key_id, "report signing key rotated");
                return Ok(rotation);
            }
        }
        Err("the signing keys were rotated concurrently too many times; try again".to_owned())
    }

    /// On a cluster node: the shared ring read again when `SIGNING_KEYS_RELOAD_MS` passed since
    /// the last read, and put in force when another node changed it (housekeeping thread).
    /// A failed read keeps the ring in force (logged).
    pub fn reload_if_due(&self) {
        if !self.home.is_shared() {
            return;
        }
        {
            let mut last = self.reloaded.lock();
            if last.elapsed() < Duration::from_millis(SIGNING_KEYS_RELOAD_MS) {
                return;
            }
            *last = Instant::now();
        }
        match self.home.load() {
            Ok(Some((stored, revision))) if revision != self.ring.load().revision() => match Ring::of(stored, revision)
            {
                Ok(ring) => {
                    tracing::info!(key_id = %ring.kid(), "report signing keys changed on the cluster");
                    self.ring.store(Arc::new(ring));
                }
                Err(e) => tracing::warn!(error = %e, "the shared signing keys do not read"),
            },
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "reading the shared signing keys failed"),
        }
    }
}

/// The members of a scan's `data` (the whole report) its signature covers: all of them.
pub fn scan_members(report: Value) -> Result<Vec<(String, Value)>, String> {
    match report {
        Value::Object(members) => Ok(members.into_iter().collect()),
        _ => Err("a scan report is not an object".to_owned()),
    }
}

/// The members of a READY job's poll `data` its signature covers, with their values as a poll
/// writes them: the job's identity, `completedAt` and the document (`payload`, parsed).
pub fn report_members(
    id: &str,
    kind: &JobKind,
    completed_at_ms: u64,
    payload: &[u8],
) -> Result<Vec<(&'static str, Value)>, String> {
    let document: Value = serde_json::from_slice(payload).map_err(|e| format!("the report does not parse: {e}"))?;
    let completed_at = Value::String(rfc3339_ms(completed_at_ms));
    let text = |s: &str| Value::String(s.to_owned());
    Ok(match kind {
        JobKind::Analysis { wallet } => {
            let [id_name, wallet_name, at_name, doc_name] = ANALYSIS_COVERS;
            vec![(id_name, text(id)), (wallet_name, text(wallet)), (at_name, completed_at), (doc_name, document)]
        }
        JobKind::Comparison { wallet_a, wallet_b, pair_id } => {
            let [pair_name, a_name, b_name, at_name, doc_name] = COMPARISON_COVERS;
            vec![
                (pair_name, text(pair_id)),
                (a_name, text(wallet_a)),
                (b_name, text(wallet_b)),
                (at_name, completed_at),
                (doc_name, document),
            ]
        }
    })
}

/// Why a report did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("the report has no signature")]
    Unsigned,
    #[error("the report's signature is malformed: {0}")]
    Malformed(&'static str),
    #[error("no published key {0}")]
    UnknownKey(String),
    #[error("the signature does not match the report")]
    Mismatch,
}

/// Verifies a report's `data` object (a poll's `data`, a webhook body's `data`, a scan's
/// `data`) against a published key set (`{"keys":[JWK…]}`): the members its signature covers,
/// canonicalized (JCS), checked with the key its `keyId` names (current or retired). Returns
/// the key id.
pub fn verify_report(data: &Value, key_set: &Value) -> Result<String, VerifyError> {
    let signature = data.get("signature").ok_or(VerifyError::Unsigned)?;
    let field = |name: &'static str| signature.get(name).and_then(Value::as_str).ok_or(VerifyError::Malformed(name));
    if field("alg")? != ALG {
        return Err(VerifyError::Malformed("alg"));
    }
    if field("canon")? != CANON {
        return Err(VerifyError::Malformed("canon"));
    }
    let key_id = field("keyId")?;
    let covers = signature.get("covers").and_then(Value::as_array).ok_or(VerifyError::Malformed("covers"))?;
    let mut object = Map::new();
    for name in covers {
        let name = name.as_str().filter(|n| *n != "signature").ok_or(VerifyError::Malformed("covers"))?;
        let member = data.get(name).ok_or(VerifyError::Malformed("a covered member is missing"))?;
        object.insert(name.to_owned(), member.clone());
    }
    let value = URL_SAFE_NO_PAD.decode(field("value")?).map_err(|_| VerifyError::Malformed("value"))?;
    let signature = Signature::from_slice(&value).map_err(|_| VerifyError::Malformed("value"))?;
    let key = published_key(key_set, key_id)?;
    key.verify_strict(&jcs::canonicalize(&Value::Object(object)), &signature).map_err(|_| VerifyError::Mismatch)?;
    Ok(key_id.to_owned())
}

/// The Ed25519 public key `key_id` of a JWK set.
fn published_key(key_set: &Value, key_id: &str) -> Result<VerifyingKey, VerifyError> {
    let keys = key_set.get("keys").and_then(Value::as_array).ok_or(VerifyError::Malformed("key set"))?;
    let jwk = keys
        .iter()
        .find(|k| k.get("kid").and_then(Value::as_str) == Some(key_id))
        .ok_or_else(|| VerifyError::UnknownKey(key_id.to_owned()))?;
    let okp = jwk.get("kty").and_then(Value::as_str) == Some("OKP")
        && jwk.get("crv").and_then(Value::as_str) == Some("Ed25519");
    let x = jwk.get("x").and_then(Value::as_str).filter(|_| okp).ok_or(VerifyError::Malformed("jwk"))?;
    let bytes: [u8; 32] =
        URL_SAFE_NO_PAD.decode(x).ok().and_then(|b| b.try_into().ok()).ok_or(VerifyError::Malformed("jwk x"))?;
    VerifyingKey::from_bytes(&bytes).map_err(|_| VerifyError::Malformed("jwk x"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signer() -> (tempfile::TempDir, ReportSigner) {
        let dir = tempfile::tempdir().expect("tempdir");
        let signer = ReportSigner::open_file(dir.path(), 1_700_000_000_000).expect("signer");
        (dir, signer)
    }

    fn report(signer: &ReportSigner) -> Value {
        let payload = br#"{"wallet":"W","score":{"value":82,"riskLevel":"low","confidence":0.9},"signals":[]}"#;
        let kind = JobKind::Analysis { wallet: "W".into() };
        let members = report_members("an_1", &kind, 1_700_000_000_123, payload).expect("members");
        let mut data: Map<String, Value> = members.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
        data.insert("status".into(), Value::String("READY".into()));
        let signature = signer.sign(members);
        data.insert("signature".into(), serde_json::to_value(signature).expect("json"));
        Value::Object(data)
    }

    fn key_set(signer: &ReportSigner) -> Value {
        serde_json::from_slice(&signer.key_set()).expect("key set")
    }

    #[test]
    fn a_signed_report_verifies_and_names_its_key() {
        let (_dir, signer) = signer();
        let data = report(&signer);
        assert_eq!(verify_report(&data, &key_set(&signer)), Ok(signer.key_id()));
        let stored: ReportSignature = serde_json::from_value(data["signature"].clone()).expect("signature");
        assert!(stored.validate().is_ok(), "the store takes it: {stored:?}");
        let mut covers = ANALYSIS_COVERS.to_vec();
        covers.sort_unstable();
        assert_eq!(data["signature"]["covers"], serde_json::json!(covers));
        assert_eq!(signer.key_id().len(), 16);
    }

    #[test]
    fn any_changed_byte_of_the_message_or_the_signature_fails() {
        let (_dir, signer) = signer();
        let data = report(&signer);
        let keys = key_set(&signer);
        // Every byte of the canonical message, flipped in turn (through the raw check).
        let members: Map<String, Value> = ANALYSIS_COVERS.iter().map(|n| ((*n).to_owned(), data[*n].clone())).collect();
        let message = jcs::canonicalize(&Value::Object(members));
        let key = published_key(&keys, &signer.key_id()).expect("key");
        let value = URL_SAFE_NO_PAD.decode(data["signature"]["value"].as_str().expect("value")).expect("b64");
        let signature = Signature::from_slice(&value).expect("signature");
        assert!(key.verify_strict(&message, &signature).is_ok());
        for i in 0..message.len() {
            let mut changed = message.clone();
            changed[i] ^= 0x01;
            assert!(key.verify_strict(&changed, &signature).is_err(), "message byte {i}");
        }
        for i in 0..value.len() {
            let mut changed = value.clone();
            changed[i] ^= 0x01;
            let bad = Signature::from_slice(&changed).expect("64 bytes");
            assert!(key.verify_strict(&message, &bad).is_err(), "signature byte {i}");
        }
        // And through the report: a changed score, wallet or time fails; an uncovered member
        // (status) may change.
        for (pointer, new) in [("/xray/score/value", 83), ("/xray/score/confidence", 1)] {
            let mut changed = data.clone();
            *changed.pointer_mut(pointer).expect("member") = Value::from(new);
            assert_eq!(verify_report(&changed, &keys), Err(VerifyError::Mismatch), "{pointer}");
        }
        let mut changed = data.clone();
        changed["completedAt"] = Value::String("2023-11-14T22:13:20.124Z".into());
        assert_eq!(verify_report(&changed, &keys), Err(VerifyError::Mismatch));
        let mut changed = data.clone();
        changed["status"] = Value::String("FAILED".into());
        assert!(verify_report(&changed, &keys).is_ok());
        let mut unsigned = data;
        unsigned.as_object_mut().expect("object").remove("signature");
        assert_eq!(verify_report(&unsigned, &keys), Err(VerifyError::Unsigned));
    }

    #[test]
    fn a_rotation_keeps_old_reports_verifiable_and_signs_with_the_new_key() {
        let (dir, signer) = signer();
        let before = report(&signer);
        let old = signer.key_id();
        let rotation = signer.rotate(1_700_000_100_000).expect("rotated");
        assert_eq!(rotation.retired_key_id, old);
        assert_ne!(signer.key_id(), old);
        let keys = key_set(&signer);
        assert_eq!(verify_report(&before, &keys), Ok(old.clone()));
        let after = report(&signer);
        assert_eq!(verify_report(&after, &keys), Ok(rotation.key_id.clone()));
        let statuses: Vec<(&str, &str)> = keys["keys"]
            .as_array()
            .expect("keys")
            .iter()
            .map(|k| (k["kid"].as_str().expect("kid"), k["status"].as_str().expect("status")))
            .collect();
        assert_eq!(statuses, vec![(rotation.key_id.as_str(), "current"), (old.as_str(), "retired")]);
        // A restart reads the same ring.
        let again = ReportSigner::open_file(dir.path(), 1_700_000_200_000).expect("reopened");
        assert_eq!(again.key_id(), rotation.key_id);
        assert_eq!(verify_report(&before, &key_set(&again)), Ok(old));
    }

    #[test]
    fn retired_keys_are_bounded_oldest_dropped() {
        let (_dir, signer) = signer();
        let first = signer.key_id();
        for i in 0..crate::config::SIGNING_KEYS_RETIRED_MAX as u64 + 2 {
            signer.rotate(1_700_000_000_000 + i).expect("rotated");
        }
        let keys = key_set(&signer);
        let keys = keys["keys"].as_array().expect("keys");
        assert_eq!(keys.len(), crate::config::SIGNING_KEYS_RETIRED_MAX + 1);
        assert!(keys.iter().all(|k| k["kid"] != first.as_str()));
    }

    #[test]
    fn debug_output_shows_no_private_key() {
        let (dir, signer) = signer();
        let text = std::fs::read_to_string(dir.path().join(KEY_FILE_NAME)).expect("file");
        let stored: Value = serde_json::from_str(&text).expect("json");
        let secret = stored["current"]["privateKey"].as_str().expect("private key").to_owned();
        let debug = format!("{signer:?} {:?}", signer.ring.load());
        assert!(!debug.contains(&secret), "{debug}");
        assert!(debug.contains(&signer.key_id()));
    }
}
