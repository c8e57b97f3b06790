//! Signed reports (issue #31 item 3): every finished analysis and comparison, every scan and
//! every monitor event (issue #42 item 1) carries a detached Ed25519 signature over its
//! canonical bytes, made with the server's signing key; the public keys, current and retired,
//! are published as a JWK set.
//!
//! Owns: `ReportSigner` (the key ring in force, signing, rotation, the published key set),
//! `ReportType` (what a report is, and the fixed members its signature covers),
//! `report_members` (the members of a job's `data` its signature covers; a scan's are its whole
//! report, signed in canonical form: `canonical`),
//! `event` (the members of a monitor event its signature covers, `EventMembers`),
//! `verify_report` (the verifier the tests and the docs describe), `jcs` (RFC 8785) and `ring`
//! (key material, its stored form and where it is kept: `<data-dir>/signing-keys.json`, 0600,
//! or — on a cluster — one store record every node reads). Threads: signing runs on compute
//! threads (the job sink, once per READY job) and listener threads (scans); the key set is read
//! by listener threads; rotation runs on the admin listener; a cluster node's reload on the
//! housekeeping thread.
//!
//! Wire shape: `data.signature = {keyId, alg: "EdDSA", canon: "JCS", type, covers, value}`,
//! a scan's with `batch: {salt, path}` too (`batch`: `value` then signs the Merkle root of the
//! scans one listener tick answered; its leaf is this report's salted signed bytes)
//! beside the document in `data` (an event's: `signature` beside its members, in the event
//! object). `type` is the report's (`xray.analysis.v1`, `xray.comparison.v1`, `xray.scan.v2`,
//! `xray.monitor_event.v1`) and `covers` exactly that type's member list
//! (`ReportType::covers`). The signed bytes are the JCS form of the object made of exactly the
//! covered members of `data` plus a member `"type"` holding the type (a verifier parses the
//! report, checks `type` and `covers` against the type it expects, picks those members, adds
//! `type`, canonicalizes, verifies), so a report stored or forwarded as JSON — keys reordered,
//! spaces changed — still verifies, and a signature of one type never passes for another.
//! A field and not a header: `Xray-Signature` is already the webhook HMAC header, and a poll's
//! envelope (`status`, `callback`) changes over a job's life.
//!
//! Invariant: a verifier trusts nothing the signature says about itself — `verify_report`
//! takes the expected type, refuses any other `type` and any `covers` but that type's list, and
//! returns only the covered members, so a member added to a signed `data` is never read as
//! signed. No covered member is named `type` or `signature` (checked at compile time).
//! Invariant: a refusal names one reason of the closed list `VerifyReason` (`malformed`,
//! `unknown_key`, `wrong_type`, `covers_mismatch`, `bad_signature`, then a scan's bindings
//! `digest_mismatch`, `account_mismatch`, `origin_mismatch`), the first in that order that
//! applies — the same list, meanings and order as the Python and TypeScript verifiers, held to
//! one table of cases (`tests/signing/refusals.json`).
//! Invariant: a job is signed once, by the sink, with the key current then; the signature is
//! stored with the result and served as stored (polls and webhooks never sign), so a report
//! signed before a rotation keeps its `keyId` and verifies with the published retired key.
//! A monitor's event likewise: signed by the sink with the completion that makes it, stored in
//! its `EventRecord`, served as stored by the events page and the webhook.
//! Invariant: private key material is never logged, never in a metric, never in a `Debug`
//! output, and wiped from memory when dropped (`zeroize`); a retired key's private half is
//! erased at the rotation that retires it.
//! Deliberately absent: signing FAILED jobs and live polls (nothing final to attest); key ids
//! chosen by the operator; a retired key kept past `SIGNING_KEYS_RETIRED_MAX` (reports it made
//! can no longer be verified from the endpoint); serving signatures made before `type` existed
//! (no verifier accepts them: such reports are served unsigned).

pub mod batch;
pub mod canonical;
pub mod event;
pub mod jcs;
pub mod ring;

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use bytes::Bytes;
use ed25519_dalek::{Signature, Signer as _, VerifyingKey};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::clock::{rfc3339_ms, Every};
use crate::config::SIGNING_KEYS_RELOAD_MS;
use crate::store::{JobKind, ReportSignature, SignatureBatch};
use crate::tick_group;
use ring::{KeyHome, Ring};

pub use event::{EventMembers, MONITOR_EVENT_COVERS};
pub use ring::{ALG, KEY_FILE_NAME};

thread_local! {
    // The batch of reports this thread is signing in the current tick (`sign_canonical`).
    static OPEN_BATCH: tick_group::Open<batch::Hash, BatchSigned> = const { std::cell::RefCell::new(None) };
}

/// A batch's signature as one leaf gets it.
struct BatchSigned {
    key_id: String,
    value: String,
    path: Vec<batch::Step>,
}

/// `canon` of every signature: the signed bytes are RFC 8785 JCS.
pub const CANON: &str = "JCS";
/// Public path of the key set (no API key needed).
pub const KEY_SET_PATH: &str = "/.well-known/xray-keys.json";
/// What an analysis' signature covers: its identity, when it completed, the document.
pub const ANALYSIS_COVERS: [&str; 4] = ["analysisId", "wallet", "completedAt", "xray"];
/// What a comparison's signature covers.
pub const COMPARISON_COVERS: [&str; 5] = ["pairId", "walletA", "walletB", "completedAt", "comparison"];
/// What a scan's signature covers: every member of `ScanReport` (`scan::report`), among them
/// when it was scanned, the request's id, the asking account, the origin judged and (inside
/// `transaction`) the digest of the message judged.
pub const SCAN_COVERS: [&str; 14] = [
    "verdict",
    "signer",
    "transaction",
    "findings",
    "effects",
    "instructions",
    "simulation",
    "counterparties",
    "engineVersions",
    "policy",
    "origin",
    "account",
    "scannedAt",
    "requestId",
];
/// What the signature of a scan asked with `guards` covers: a scan's members, and `guards`
/// after `origin` (where `ScanReport` serializes it).
pub const GUARDED_SCAN_COVERS: [&str; 15] = with_guards(SCAN_COVERS);

/// What the signature of a sequence scan covers: every member of `SequenceReport`
/// (`scan::sequence`) — each transaction's verdict, effects and message digest among
/// `transactions`, the whole's findings, effects and what applies — and, as a scan's, the
/// counterparties, versions, policy, origin, account, time and request.
pub const SCAN_SEQUENCE_COVERS: [&str; 14] = [
    "verdict",
    "signer",
    "mode",
    "transactions",
    "findings",
    "effects",
    "applied",
    "counterparties",
    "engineVersions",
    "policy",
    "origin",
    "account",
    "scannedAt",
    "requestId",
];

/// `covers` with `guards` after `origin` (a compile error when there is no `origin`).
const fn with_guards(covers: [&'static str; 14]) -> [&'static str; 15] {
    let mut out = [""; 15];
    let (mut i, mut j) = (0, 0);
    while i < covers.len() {
        out[j] = covers[i];
        j += 1;
        if same_name(covers[i], "origin") {
            out[j] = "guards";
            j += 1;
        }
        i += 1;
    }
    assert!(j == out.len(), "a scan's covers name `origin` once");
    out
}
/// `type` of an analysis' signature.
pub const ANALYSIS_TYPE: &str = "xray.analysis.v1";
/// `type` of a comparison's signature.
pub const COMPARISON_TYPE: &str = "xray.comparison.v1";
/// `type` of a scan's signature.
pub const SCAN_TYPE: &str = "xray.scan.v2";
/// `type` of the signature of a scan asked with `guards` (`GUARDED_SCAN_COVERS`).
pub const GUARDED_SCAN_TYPE: &str = "xray.scan.v3";
/// `type` of a sequence scan's signature (`SCAN_SEQUENCE_COVERS`).
pub const SCAN_SEQUENCE_TYPE: &str = "xray.scan_sequence.v1";
/// `type` of a monitor event's signature (`event::MONITOR_EVENT_COVERS`).
pub const MONITOR_EVENT_TYPE: &str = "xray.monitor_event.v1";
/// The member of the signed object that holds the signature's `type` (never a covered member).
pub const TYPE_MEMBER: &str = "type";
/// The member of `data` that holds the signature (never a covered member).
pub const SIGNATURE_MEMBER: &str = "signature";
/// Attempts of a rotation that lost a compare-and-set to another node's, before it gives up.
const ROTATION_ATTEMPTS_MAX: usize = 4;

/// What a signed report is: its signature's `type`, which fixes the members it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReportType {
    Analysis,
    Comparison,
    Scan,
    /// A scan asked with `guards`: a scan's members and its guards.
    GuardedScan,
    /// A scan of several transactions run in order on one state.
    ScanSequence,
    /// A monitor's event (its page item and its webhook's `data.event`).
    MonitorEvent,
}

impl ReportType {
    /// Every type.
    pub const ALL: [ReportType; 6] = [
        ReportType::Analysis,
        ReportType::Comparison,
        ReportType::Scan,
        ReportType::GuardedScan,
        ReportType::ScanSequence,
        ReportType::MonitorEvent,
    ];

    /// The signature's `type`.
    pub const fn name(self) -> &'static str {
        match self {
            ReportType::Analysis => ANALYSIS_TYPE,
            ReportType::Comparison => COMPARISON_TYPE,
            ReportType::Scan => SCAN_TYPE,
            ReportType::GuardedScan => GUARDED_SCAN_TYPE,
            ReportType::ScanSequence => SCAN_SEQUENCE_TYPE,
            ReportType::MonitorEvent => MONITOR_EVENT_TYPE,
        }
    }

    /// The members of `data` a signature of this type covers, exactly.
    pub const fn covers(self) -> &'static [&'static str] {
        match self {
            ReportType::Analysis => &ANALYSIS_COVERS,
            ReportType::Comparison => &COMPARISON_COVERS,
            ReportType::Scan => &SCAN_COVERS,
            ReportType::GuardedScan => &GUARDED_SCAN_COVERS,
            ReportType::ScanSequence => &SCAN_SEQUENCE_COVERS,
            ReportType::MonitorEvent => &MONITOR_EVENT_COVERS,
        }
    }

    /// A scan of any kind: served as exactly its covered members and the signature, so a
    /// verifier refuses any other member of its `data`.
    pub const fn is_scan(self) -> bool {
        matches!(self, ReportType::Scan | ReportType::GuardedScan | ReportType::ScanSequence)
    }

    /// The type of a job's report.
    pub fn of_job(kind: &JobKind) -> ReportType {
        match kind {
            JobKind::Analysis { .. } => ReportType::Analysis,
            JobKind::Comparison { .. } => ReportType::Comparison,
        }
    }

    /// The type named `name` (`xray.scan.v2`, …).
    pub fn parse(name: &str) -> Option<ReportType> {
        ReportType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Whether `names` are exactly this type's covered members, each once.
    fn covered_by(self, names: &[&str]) -> bool {
        let expected = self.covers();
        // Equal lengths, and every expected name present: no duplicate, none missing or extra
        // (the expected names are distinct: `well_formed`, checked when compiling).
        names.len() == expected.len() && expected.iter().all(|e| names.contains(e))
    }
}

/// Byte equality of two names, usable in a constant.
const fn same_name(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A covers list names each member once and never `type` or `signature`.
const fn well_formed(covers: &[&str]) -> bool {
    let mut i = 0;
    while i < covers.len() {
        if same_name(covers[i], TYPE_MEMBER) || same_name(covers[i], SIGNATURE_MEMBER) {
            return false;
        }
        let mut j = i + 1;
        while j < covers.len() {
            if same_name(covers[i], covers[j]) {
                return false;
            }
            j += 1;
        }
        i += 1;
    }
    true
}

// Checked when compiling: every type's covers list is well formed.
const _: () = assert!(
    well_formed(&ANALYSIS_COVERS)
        && well_formed(&COMPARISON_COVERS)
        && well_formed(&SCAN_COVERS)
        && well_formed(&GUARDED_SCAN_COVERS)
        && well_formed(&SCAN_SEQUENCE_COVERS)
        && well_formed(&MONITOR_EVENT_COVERS)
);

/// The server's report signer: the key ring in force, where it is kept, and its key set.
pub struct ReportSigner {
    home: KeyHome,
    ring: ArcSwap<Ring>,
    /// When a cluster node reads the shared ring again (`reload_if_due`).
    reload: Every,
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
            reload: Every::new(Duration::from_millis(SIGNING_KEYS_RELOAD_MS)),
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

    /// The signature of a `report_type` report whose covered members are `members` (name,
    /// value): over the JCS form of those members plus `"type"`, with the current key; `covers`
    /// lists their names, sorted. Refused when the names are not exactly the type's list.
    pub fn sign<N: Into<String>>(
        &self,
        report_type: ReportType,
        members: Vec<(N, Value)>,
    ) -> Result<ReportSignature, String> {
        let count = members.len();
        let mut object: Map<String, Value> = members.into_iter().map(|(name, value)| (name.into(), value)).collect();
        let covers = checked_covers(report_type, object.keys().map(String::as_str), Some(count))?;
        let message = signed_bytes(report_type, &mut object);
        Ok(self.signature(report_type, covers, &message))
    }

    /// `sign` of a report already in canonical form (`canonical::to_canonical` of the whole
    /// `data`, whose members are the covered ones): its bytes are the message, `"type"` added
    /// in its place — one serialization for the answer and the signature (the scan's path).
    /// A report holding an integer past 2^53 is signed through the `Value` path instead, which
    /// writes the double JCS prescribes for it.
    /// Batched (`batch`): the message's salted leaf joins the reports signed in this tick on
    /// this thread (`tick_group`), one Ed25519 signature over their root signs them all, and
    /// the signature carries this leaf's salt and path.
    pub async fn sign_canonical(
        &self,
        report_type: ReportType,
        report: &canonical::Canonical,
    ) -> Result<ReportSignature, String> {
        let covers = checked_covers(report_type, report.names(), None)?;
        let message = match report.exact() {
            true => report.with_string_member(TYPE_MEMBER, report_type.name()),
            false => None,
        };
        let message = match message {
            Some(message) => message,
            None => {
                let mut object: Map<String, Value> =
                    serde_json::from_slice(report.bytes()).map_err(|e| format!("the report does not parse: {e}"))?;
                signed_bytes(report_type, &mut object)
            }
        };
        let salt = batch::salt();
        let leaf = batch::leaf(&salt, &message);
        drop(message);
        let owner = std::ptr::from_ref(self) as usize;
        let signed =
            tick_group::join(&OPEN_BATCH, owner, batch::BATCH_LEAVES_MAX, leaf, |leaves| self.sign_batch(&leaves));
        let BatchSigned { key_id, value, path } = signed.await;
        Ok(ReportSignature {
            key_id,
            alg: ALG.to_owned(),
            canon: CANON.to_owned(),
            report_type: Some(report_type.name().to_owned()),
            covers,
            value,
            batch: Some(Box::new(SignatureBatch {
                salt: batch::salt_text(&salt),
                path: path.into_iter().map(batch::Step::to_wire).collect(),
            })),
        })
    }

    /// One signature over the root of `leaves`, and each leaf's path to it.
    fn sign_batch(&self, leaves: &[batch::Hash]) -> Vec<BatchSigned> {
        crate::metrics::SCAN.signature_batch(leaves.len());
        let ring = self.ring.load();
        let (root, paths) = batch::tree(leaves);
        let value = URL_SAFE_NO_PAD.encode(ring.signing_key().sign(&batch::envelope(&root)).to_bytes());
        let key_id = ring.kid();
        paths.into_iter().map(|path| BatchSigned { key_id: key_id.to_owned(), value: value.clone(), path }).collect()
    }

    /// The signature of `message` with the current key, as served.
    fn signature(&self, report_type: ReportType, covers: Vec<String>, message: &[u8]) -> ReportSignature {
        let ring = self.ring.load();
        let signature = ring.signing_key().sign(message);
        ReportSignature {
            key_id: ring.kid().to_owned(),
            alg: ALG.to_owned(),
            canon: CANON.to_owned(),
            report_type: Some(report_type.name().to_owned()),
            covers,
            value: URL_SAFE_NO_PAD.encode(signature.to_bytes()),
            batch: None,
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
        if !self.home.is_shared() || !self.reload.due() {
            return;
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

/// Why a verifier refused a report: the closed list every verifier of this repository gives
/// (README, "Signed reports": why a verifier refuses), with the same meaning in each. They are
/// checked in this order and the first that applies is the reason, so a report wrong in two
/// ways is refused for the earlier one; the three bindings come last because they compare what
/// the signature attests, which means nothing before it verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VerifyReason {
    /// The report, the key set or the binding is not the shape it has: no `data` object, no
    /// signature, `alg` not `EdDSA` or `canon` not `JCS`, `type` or `keyId` not text, `covers`
    /// not a list of names, `value` not 64 bytes of unpadded base64url; a key set without a
    /// `keys` list, or whose key of that id is no Ed25519 public key; a transaction held that
    /// is no serialized transaction.
    Malformed,
    /// No key of the set has the signature's `keyId`: another server's report, or one signed
    /// by a key retired past the kept ones.
    UnknownKey,
    /// The signature's `type` is not the type expected.
    WrongType,
    /// `covers` is not exactly the expected type's list (as a set, no duplicates), or `data`
    /// lacks a member it lists.
    CoversMismatch,
    /// The signature does not verify over the covered members plus `type`: something it
    /// covers, or the signature itself, was changed.
    BadSignature,
    /// A scan: its signed `transaction.messageSha256` is not the digest of the message of the
    /// transaction held (another transaction). The only digest a verifier can check: an
    /// analysis or a comparison binds none.
    DigestMismatch,
    /// A scan: its signed `account` is not the account held.
    AccountMismatch,
    /// A scan: its signed `origin` is not the origin held (`null`: none was sent).
    OriginMismatch,
    /// A scan: its signed `signer` (the wallet whose value at risk it judged) is not the one
    /// held.
    SignerMismatch,
    /// A sequence scan: its signed `mode` (`sequence` or `bundle`) is not the one held — a
    /// bundle's verdict assumes nothing of it lands after a failure, a sequence's the opposite.
    ModeMismatch,
}

impl VerifyReason {
    /// Every reason, in the order they are checked.
    pub const ALL: [VerifyReason; 10] = [
        VerifyReason::Malformed,
        VerifyReason::UnknownKey,
        VerifyReason::WrongType,
        VerifyReason::CoversMismatch,
        VerifyReason::BadSignature,
        VerifyReason::DigestMismatch,
        VerifyReason::AccountMismatch,
        VerifyReason::OriginMismatch,
        VerifyReason::SignerMismatch,
        VerifyReason::ModeMismatch,
    ];

    /// The reason's name, as every verifier writes it.
    pub const fn as_str(self) -> &'static str {
        match self {
            VerifyReason::Malformed => "malformed",
            VerifyReason::UnknownKey => "unknown_key",
            VerifyReason::WrongType => "wrong_type",
            VerifyReason::CoversMismatch => "covers_mismatch",
            VerifyReason::BadSignature => "bad_signature",
            VerifyReason::DigestMismatch => "digest_mismatch",
            VerifyReason::AccountMismatch => "account_mismatch",
            VerifyReason::OriginMismatch => "origin_mismatch",
            VerifyReason::SignerMismatch => "signer_mismatch",
            VerifyReason::ModeMismatch => "mode_mismatch",
        }
    }
}

/// Why a report did not verify: its `reason`, with what a person needs to see why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// What is not the shape it has (`VerifyReason::Malformed`); an unsigned report is one.
    #[error("malformed: {0}")]
    Malformed(&'static str),
    #[error("unknown_key: no published key {0}")]
    UnknownKey(String),
    #[error("wrong_type: the signature is of a {found:?} report, not of the expected {expected}")]
    WrongType { expected: &'static str, found: String },
    #[error("covers_mismatch: the signature's covers are not exactly the members of a {0} in the report")]
    CoversMismatch(&'static str),
    #[error("bad_signature: the signature does not match the report")]
    BadSignature,
    /// The scan was of another message than the transaction the verifier holds (`signed`:
    /// `None` when the scan signed no digest).
    #[error("digest_mismatch: the scan judged another message (messageSha256 {signed:?}, the transaction's {held})")]
    DigestMismatch { signed: Option<String>, held: String },
    #[error("account_mismatch: the scan was made for another account")]
    AccountMismatch,
    #[error("origin_mismatch: the scan judged another origin")]
    OriginMismatch,
    #[error("signer_mismatch: the scan judged another signer's transaction")]
    SignerMismatch,
    #[error("mode_mismatch: the sequence was judged in another mode")]
    ModeMismatch,
}

impl VerifyError {
    /// The reason of the closed list this refusal is.
    pub const fn reason(&self) -> VerifyReason {
        match self {
            VerifyError::Malformed(_) => VerifyReason::Malformed,
            VerifyError::UnknownKey(_) => VerifyReason::UnknownKey,
            VerifyError::WrongType { .. } => VerifyReason::WrongType,
            VerifyError::CoversMismatch(_) => VerifyReason::CoversMismatch,
            VerifyError::BadSignature => VerifyReason::BadSignature,
            VerifyError::DigestMismatch { .. } => VerifyReason::DigestMismatch,
            VerifyError::AccountMismatch => VerifyReason::AccountMismatch,
            VerifyError::OriginMismatch => VerifyReason::OriginMismatch,
            VerifyError::SignerMismatch => VerifyReason::SignerMismatch,
            VerifyError::ModeMismatch => VerifyReason::ModeMismatch,
        }
    }
}

/// What a verifier holds of the scan it asked for, checked against a verified scan's covered
/// members (`verify_scan`). `None`: not checked.
#[derive(Debug, Clone, Copy, Default)]
pub struct ScanBinding<'a> {
    /// The serialized transaction it sent (signed since, or not: the digest is the message's).
    pub transaction: Option<&'a [u8]>,
    /// The account it asked as.
    pub account: Option<&'a str>,
    /// The origin host it sent (`Some(None)`: it sent none).
    pub origin: Option<Option<&'a str>>,
    /// The signer whose transaction it asked about (base58).
    pub signer: Option<&'a str>,
}

/// `verify_report` of a scan, then its binding: the message digest of `binding.transaction`
/// (SHA-256 of the bytes after its signature section), the account, the origin and the signer
/// must be those signed. The transaction held is read first — one that is no transaction is
/// `Malformed` whatever the report — and compared only once the signature verified.
pub fn verify_scan(data: &Value, key_set: &Value, binding: &ScanBinding<'_>) -> Result<Verified, VerifyError> {
    let held = match binding.transaction {
        Some(transaction) => Some(message_sha256(transaction).ok_or(VerifyError::Malformed("the transaction held"))?),
        None => None,
    };
    // Either type of a scan: each fixes its own members (a scan asked with guards signs them too).
    let guarded =
        data.get(SIGNATURE_MEMBER).and_then(|s| s.get(TYPE_MEMBER)).and_then(Value::as_str) == Some(GUARDED_SCAN_TYPE);
    let expected = if guarded { ReportType::GuardedScan } else { ReportType::Scan };
    let verified = verify_report(data, key_set, expected)?;
    let covered = &verified.covered;
    if let Some(held) = held {
        let signed = covered.get("transaction").and_then(|t| t.get("messageSha256")).and_then(Value::as_str);
        if signed != Some(held.as_str()) {
            return Err(VerifyError::DigestMismatch { signed: signed.map(str::to_owned), held });
        }
    }
    bound_to_asker(verified, &Asker { account: binding.account, origin: binding.origin, signer: binding.signer })
}

/// What a verifier holds of the sequence scan it asked for (`verify_scan_sequence`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SequenceBinding<'a> {
    /// The serialized transactions it sent, in order.
    pub transactions: Option<&'a [&'a [u8]]>,
    /// The account it asked as.
    pub account: Option<&'a str>,
    /// The origin host it sent (`Some(None)`: it sent none).
    pub origin: Option<Option<&'a str>>,
    /// The signer it asked about (base58).
    pub signer: Option<&'a str>,
    /// The mode it asked for: `sequence` or `bundle`.
    pub mode: Option<&'a str>,
}

/// `verify_report` of a sequence scan (`xray.scan_sequence.v1`), then its binding: as many
/// transactions as held, each judged message the held one's (`transactions[i].transaction
/// .messageSha256`), the account, origin and signer as `verify_scan`, then the mode.
pub fn verify_scan_sequence(
    data: &Value,
    key_set: &Value,
    binding: &SequenceBinding<'_>,
) -> Result<Verified, VerifyError> {
    let held = match binding.transactions {
        Some(transactions) => Some(
            transactions
                .iter()
                .map(|t| message_sha256(t).ok_or(VerifyError::Malformed("the transaction held")))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        None => None,
    };
    let verified = verify_report(data, key_set, ReportType::ScanSequence)?;
    if let Some(held) = held {
        let items = verified.covered.get("transactions").and_then(Value::as_array);
        let signed: Vec<Option<&str>> = items.map_or_else(Vec::new, |items| {
            items
                .iter()
                .map(|i| i.get("transaction").and_then(|t| t.get("messageSha256")).and_then(Value::as_str))
                .collect()
        });
        if let Some(i) = (0..held.len().max(signed.len()))
            .find(|&i| signed.get(i).copied().flatten() != held.get(i).map(String::as_str))
        {
            return Err(VerifyError::DigestMismatch {
                signed: signed.get(i).copied().flatten().map(str::to_owned),
                held: held.get(i).cloned().unwrap_or_else(|| format!("no transaction {i}")),
            });
        }
    }
    let verified =
        bound_to_asker(verified, &Asker { account: binding.account, origin: binding.origin, signer: binding.signer })?;
    if binding.mode.is_some_and(|mode| verified.covered.get("mode").and_then(Value::as_str) != Some(mode)) {
        return Err(VerifyError::ModeMismatch);
    }
    Ok(verified)
}

/// What either kind of scan is bound to besides its transactions.
struct Asker<'a> {
    account: Option<&'a str>,
    origin: Option<Option<&'a str>>,
    signer: Option<&'a str>,
}

/// A verified scan's `account`, `origin` and `signer` against those the verifier holds, in
/// that order.
fn bound_to_asker(verified: Verified, asker: &Asker<'_>) -> Result<Verified, VerifyError> {
    let covered = &verified.covered;
    let Asker { account, origin, signer } = *asker;
    if let Some(account) = account {
        if covered.get("account").and_then(Value::as_str) != Some(account) {
            return Err(VerifyError::AccountMismatch);
        }
    }
    if let Some(origin) = origin {
        // Covered, so present: `null` is "sent none", and matches only a binding of none.
        let signed = covered.get("origin").unwrap_or(&Value::Null);
        if signed.as_str() != origin || (origin.is_none() && !signed.is_null()) {
            return Err(VerifyError::OriginMismatch);
        }
    }
    if signer.is_some_and(|signer| covered.get("signer").and_then(Value::as_str) != Some(signer)) {
        return Err(VerifyError::SignerMismatch);
    }
    Ok(verified)
}

/// SHA-256 (lowercase hex) of a serialized transaction's message — the bytes after its
/// signature section — read by the scan's own parser; `None` when the bytes are no transaction.
pub fn message_sha256(transaction: &[u8]) -> Option<String> {
    let parsed = crate::ledger::transaction::message::parse(transaction).ok()?;
    Some(crate::scan::signatures::message_sha256(&parsed, transaction))
}

/// A verified report: the key that signed it and its covered members — the only part of its
/// `data` the signature attests.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    pub key_id: String,
    pub covered: Map<String, Value>,
}

/// The members of a signature as read before anything is checked against them.
struct SignatureParts<'a> {
    report_type: &'a str,
    key_id: &'a str,
    covers: Vec<&'a str>,
    value: Signature,
    /// A batched signature's leaf salt and path (`batch`).
    batch: Option<([u8; batch::SALT_BYTES], Vec<batch::Step>)>,
}

impl<'a> SignatureParts<'a> {
    /// `data.signature`'s members, each of its shape (`Malformed` otherwise).
    fn read(data: &'a Value) -> Result<SignatureParts<'a>, VerifyError> {
        let signature = data.get(SIGNATURE_MEMBER).ok_or(VerifyError::Malformed("no data.signature"))?;
        let field =
            |name: &'static str| signature.get(name).and_then(Value::as_str).ok_or(VerifyError::Malformed(name));
        if field("alg")? != ALG {
            return Err(VerifyError::Malformed("alg"));
        }
        if field("canon")? != CANON {
            return Err(VerifyError::Malformed("canon"));
        }
        let covers = signature.get("covers").and_then(Value::as_array).ok_or(VerifyError::Malformed("covers"))?;
        let covers: Option<Vec<&str>> = covers.iter().map(Value::as_str).collect();
        let value = URL_SAFE_NO_PAD.decode(field("value")?).map_err(|_| VerifyError::Malformed("value"))?;
        Ok(SignatureParts {
            report_type: field(TYPE_MEMBER)?,
            key_id: field("keyId")?,
            covers: covers.ok_or(VerifyError::Malformed("covers"))?,
            value: Signature::from_slice(&value).map_err(|_| VerifyError::Malformed("value"))?,
            batch: signature.get("batch").map(batch_parts).transpose()?,
        })
    }

    /// The message `value` signs: the report's own, or — batched — its batch's envelope.
    fn signed_message(&self, report_message: Vec<u8>) -> Vec<u8> {
        match &self.batch {
            Some((salt, path)) => batch::envelope(&batch::fold(batch::leaf(salt, &report_message), path)),
            None => report_message,
        }
    }
}

/// A batched signature's `batch`: `{"salt": 16 bytes base64url, "path": [{"left"|"right":
/// 64 lowercase hex digits}…]}`, at most `PATH_STEPS_MAX` steps, nothing else.
fn batch_parts(value: &Value) -> Result<([u8; batch::SALT_BYTES], Vec<batch::Step>), VerifyError> {
    const WHAT: VerifyError = VerifyError::Malformed("batch");
    let object = value.as_object().filter(|o| o.len() == 2).ok_or(WHAT)?;
    let salt = object.get("salt").and_then(Value::as_str).and_then(batch::salt_of).ok_or(WHAT)?;
    let path = object.get("path").and_then(Value::as_array).filter(|p| p.len() <= batch::PATH_STEPS_MAX).ok_or(WHAT)?;
    let path = path
        .iter()
        .map(|step| {
            let step: crate::store::MerkleStep = serde_json::from_value(step.clone()).map_err(|_| WHAT)?;
            batch::Step::from_wire(&step).ok_or(WHAT)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((salt, path))
}

/// Verifies a report's `data` object (a poll's `data`, a webhook body's `data`, a scan's
/// `data`) as a report of type `expected`, against a published key set (`{"keys":[JWK…]}`):
/// the signature's `type` must be `expected`'s and its `covers` exactly that type's list; the
/// covered members plus `"type"`, canonicalized (JCS), are checked with the key its `keyId`
/// names (current or retired). Returns the key id and the covered members alone: read those,
/// never `data`, which may carry members nobody signed. Refusals are checked in
/// `VerifyReason`'s order. Parsing the report's text is the caller's: a value that is no
/// report object is `Malformed`.
pub fn verify_report(data: &Value, key_set: &Value, expected: ReportType) -> Result<Verified, VerifyError> {
    let signature = SignatureParts::read(data)?;
    let key = published_key(key_set, signature.key_id)?;
    if signature.report_type != expected.name() {
        return Err(VerifyError::WrongType { expected: expected.name(), found: signature.report_type.to_owned() });
    }
    let mut covered = covered_members(data, &signature.covers, expected)?;
    let message = signature.signed_message(signed_bytes(expected, &mut covered));
    key.verify_strict(&message, &signature.value).map_err(|_| VerifyError::BadSignature)?;
    Ok(Verified { key_id: signature.key_id.to_owned(), covered })
}

/// The members of `data` that `covers` names, once it is exactly `expected`'s list.
fn covered_members(data: &Value, covers: &[&str], expected: ReportType) -> Result<Map<String, Value>, VerifyError> {
    if !expected.covered_by(covers) {
        return Err(VerifyError::CoversMismatch(expected.name()));
    }
    // A scan's `data` carrying a member nobody signed (a plain scan's grafted `guards`, a
    // `verdictOverride`) is refused, not ignored: a client may read it where it reads the rest,
    // and sign the transaction it names. A scan is served as exactly its members and the
    // signature; an analysis' or a comparison's `data` may carry more (only the covered ones are
    // returned).
    if expected.is_scan() && !only_covered_members(data, covers) {
        return Err(VerifyError::CoversMismatch(expected.name()));
    }
    covers
        .iter()
        .map(|name| match data.get(name) {
            Some(member) => Ok(((*name).to_owned(), member.clone())),
            None => Err(VerifyError::CoversMismatch(expected.name())),
        })
        .collect()
}

/// Whether every member of `data` is a covered one or the signature.
fn only_covered_members(data: &Value, covers: &[&str]) -> bool {
    data.as_object()
        .is_some_and(|members| members.keys().all(|name| name == SIGNATURE_MEMBER || covers.contains(&name.as_str())))
}

/// The sorted names of a report's members, once they are exactly `report_type`'s covered
/// members (`given`: how many members were given, where two of one name would have collapsed
/// into one; `None`: the names are distinct by construction).
fn checked_covers<'a>(
    report_type: ReportType,
    names: impl Iterator<Item = &'a str>,
    given: Option<usize>,
) -> Result<Vec<String>, String> {
    let mut covers: Vec<String> = names.map(str::to_owned).collect();
    covers.sort_unstable();
    let names: Vec<&str> = covers.iter().map(String::as_str).collect();
    if given.is_some_and(|given| given != covers.len()) || !report_type.covered_by(&names) {
        return Err(format!("{} covers {:?}, not {names:?}", report_type.name(), report_type.covers()));
    }
    Ok(covers)
}

/// The signed bytes of a `report_type` report whose covered members are `covered`: the JCS
/// form of those members plus `"type"` (added for the call, so a large covered document is
/// never copied; `covered` is as it was on return).
fn signed_bytes(report_type: ReportType, covered: &mut Map<String, Value>) -> Vec<u8> {
    covered.insert(TYPE_MEMBER.to_owned(), Value::String(report_type.name().to_owned()));
    let message = jcs::canonicalize_members(covered);
    covered.remove(TYPE_MEMBER);
    message
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
    use serde_json::json;

    /// Lamports past 2^53 (about 18.4 billion SOL): canonicalized as the double it rounds to.
    const LAMPORTS_PAST_2_53: u64 = u64::MAX;

    fn signer() -> (tempfile::TempDir, ReportSigner) {
        let dir = tempfile::tempdir().expect("tempdir");
        let signer = ReportSigner::open_file(dir.path(), 1_700_000_000_000).expect("signer");
        (dir, signer)
    }

    /// A READY analysis' poll `data` with `payload` as its document, signed by `signer`.
    fn report_of(signer: &ReportSigner, payload: &[u8]) -> Value {
        let kind = JobKind::Analysis { wallet: "W".into() };
        let members = report_members("an_1", &kind, 1_700_000_000_123, payload).expect("members");
        let mut data: Map<String, Value> = members.iter().map(|(n, v)| ((*n).to_owned(), v.clone())).collect();
        data.insert("status".into(), Value::String("READY".into()));
        let signature = signer.sign(ReportType::of_job(&kind), members).expect("signed");
        data.insert(SIGNATURE_MEMBER.into(), serde_json::to_value(signature).expect("json"));
        Value::Object(data)
    }

    /// A future run to its end on this thread (the signer's batches are per thread).
    fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
        crate::tick_group::block_on_local(future)
    }

    /// Analyses signed in one tick (one batch): each one's `data`.
    fn batched_reports(signer: &Arc<ReportSigner>, count: usize) -> Vec<Value> {
        block_on(async {
            let tasks: Vec<_> = (0..count)
                .map(|i| {
                    let signer = signer.clone();
                    monoio::spawn(async move {
                        let report = json!({"analysisId": format!("an_{i}"), "wallet": "W",
                            "completedAt": "t", "xray": {"score": i}});
                        let canonical = canonical::to_canonical(&report).expect("canonical");
                        let signature = signer.sign_canonical(ReportType::Analysis, &canonical).await.expect("signed");
                        let body =
                            canonical.wrapped("data", SIGNATURE_MEMBER, &serde_json::to_vec(&signature).expect("json"));
                        serde_json::from_slice::<Value>(&body).expect("body")["data"].clone()
                    })
                })
                .collect();
            let mut reports = Vec::new();
            for task in tasks {
                reports.push(task.await);
            }
            reports
        })
    }

    #[test]
    fn reports_signed_in_one_tick_share_one_signature_and_each_verifies_alone() {
        let (_dir, signer) = signer();
        let signer = Arc::new(signer);
        let reports = batched_reports(&signer, 5);
        let keys = key_set(&signer);
        let value = &reports[0]["signature"]["value"];
        for report in &reports {
            assert_eq!(&report["signature"]["value"], value, "one Ed25519 signature for the tick");
            assert!(!report["signature"]["batch"]["path"].as_array().expect("path").is_empty());
            verify_report(report, &keys, ReportType::Analysis).expect("verified");
        }
        // Another report's path, a changed sibling, another salt: each is another root.
        let mut swapped = reports[0].clone();
        swapped["signature"]["batch"]["path"] = reports[1]["signature"]["batch"]["path"].clone();
        let mut sibling = reports[0].clone();
        let first = sibling["signature"]["batch"]["path"][0].as_object_mut().expect("step");
        let (side, digits) = first.iter_mut().next().expect("one member");
        let flipped = if digits.as_str().expect("hex").starts_with('0') { "1" } else { "0" };
        *digits = json!(format!("{flipped}{}", &digits.as_str().expect("hex")[1..]));
        assert!(side == "left" || side == "right");
        let mut salted = reports[0].clone();
        salted["signature"]["batch"]["salt"] = reports[1]["signature"]["batch"]["salt"].clone();
        let mut changed = reports[0].clone();
        changed["xray"]["score"] = json!(99);
        for tampered in [swapped, sibling, salted, changed] {
            let refused = verify_report(&tampered, &keys, ReportType::Analysis);
            assert_eq!(refused.map_err(|e| e.reason()), Err(VerifyReason::BadSignature));
        }
    }

    #[test]
    fn a_batch_that_is_not_its_shape_is_malformed() {
        let (_dir, signer) = signer();
        let signer = Arc::new(signer);
        let report = batched_reports(&signer, 1).remove(0);
        let keys = key_set(&signer);
        assert_eq!(report["signature"]["batch"]["path"], json!([]), "alone: the leaf is the root");
        verify_report(&report, &keys, ReportType::Analysis).expect("verified");
        let step = json!({"left": "ab".repeat(32)});
        for batch in [
            json!(null),
            json!({"salt": "AAAA", "path": []}),
            json!({"salt": report["signature"]["batch"]["salt"], "path": [{"up": "ab".repeat(32)}]}),
            json!({"salt": report["signature"]["batch"]["salt"], "path": [{"left": "AB".repeat(32)}]}),
            json!({"salt": report["signature"]["batch"]["salt"], "path": [{"left": "ab", "right": "ab"}]}),
            json!({"salt": report["signature"]["batch"]["salt"], "path": vec![step; batch::PATH_STEPS_MAX + 1]}),
            json!({"salt": report["signature"]["batch"]["salt"], "path": [], "index": 0}),
        ] {
            let mut bad = report.clone();
            bad["signature"]["batch"] = batch.clone();
            let refused = verify_report(&bad, &keys, ReportType::Analysis);
            assert_eq!(refused.map_err(|e| e.reason()), Err(VerifyReason::Malformed), "{batch}");
        }
        // Without its batch, the signature is read as a direct one: over another message.
        let mut direct = report.clone();
        direct["signature"].as_object_mut().expect("signature").remove("batch");
        let refused = verify_report(&direct, &keys, ReportType::Analysis);
        assert_eq!(refused.map_err(|e| e.reason()), Err(VerifyReason::BadSignature));
    }

    fn report(signer: &ReportSigner) -> Value {
        report_of(signer, br#"{"wallet":"W","score":{"value":82,"riskLevel":"low","confidence":0.9},"signals":[]}"#)
    }

    /// A scan's `data` (every member of `SCAN_COVERS`, values made up), signed by `signer`.
    fn scan(signer: &ReportSigner) -> Value {
        let members: Vec<(String, Value)> =
            SCAN_COVERS.iter().enumerate().map(|(i, name)| ((*name).to_owned(), json!({ "n": i }))).collect();
        let mut data: Map<String, Value> = members.iter().cloned().collect();
        let signature = signer.sign(ReportType::Scan, members).expect("signed");
        data.insert(SIGNATURE_MEMBER.into(), serde_json::to_value(signature).expect("json"));
        Value::Object(data)
    }

    fn key_set(signer: &ReportSigner) -> Value {
        serde_json::from_slice(&signer.key_set()).expect("key set")
    }

    fn key_id(verified: Result<Verified, VerifyError>) -> Result<String, VerifyError> {
        verified.map(|v| v.key_id)
    }

    /// A copy of `data`, signed again by `signer` with `covers` and `type` as given (the members
    /// named taken from `data`): what a forger holding the key could not make, here to check
    /// that a verifier refuses a signature whatever its own claims are.
    fn resigned(signer: &ReportSigner, data: &Value, covers: &[&str], type_name: &str) -> Value {
        let mut object: Map<String, Value> = covers.iter().map(|n| ((*n).to_owned(), data[*n].clone())).collect();
        object.insert(TYPE_MEMBER.into(), Value::String(type_name.into()));
        let ring = signer.ring.load();
        let value = ring.signing_key().sign(&jcs::canonicalize(&Value::Object(object)));
        let mut changed = data.clone();
        changed[SIGNATURE_MEMBER]["covers"] = json!(covers);
        changed[SIGNATURE_MEMBER][TYPE_MEMBER] = json!(type_name);
        changed[SIGNATURE_MEMBER]["value"] = json!(URL_SAFE_NO_PAD.encode(value.to_bytes()));
        changed
    }

    #[test]
    fn a_signed_report_verifies_names_its_key_and_returns_the_covered_members() {
        let (_dir, signer) = signer();
        let data = report(&signer);
        let verified = verify_report(&data, &key_set(&signer), ReportType::Analysis).expect("verified");
        assert_eq!(verified.key_id, signer.key_id());
        let covered: Map<String, Value> = ANALYSIS_COVERS.iter().map(|n| ((*n).to_owned(), data[*n].clone())).collect();
        assert_eq!(verified.covered, covered, "the covered members, and only they (no status)");
        let stored: ReportSignature = serde_json::from_value(data[SIGNATURE_MEMBER].clone()).expect("signature");
        assert!(stored.validate().is_ok(), "the store takes it: {stored:?}");
        let mut covers = ANALYSIS_COVERS.to_vec();
        covers.sort_unstable();
        assert_eq!(data[SIGNATURE_MEMBER]["covers"], json!(covers));
        assert_eq!(data[SIGNATURE_MEMBER][TYPE_MEMBER], ANALYSIS_TYPE);
        assert_eq!(signer.key_id().len(), 16);
    }

    #[test]
    fn the_signed_bytes_are_the_covered_members_plus_the_type() {
        let (_dir, signer) = signer();
        let data = report(&signer);
        let key = published_key(&key_set(&signer), &signer.key_id()).expect("key");
        let value = URL_SAFE_NO_PAD.decode(data[SIGNATURE_MEMBER]["value"].as_str().expect("value")).expect("b64");
        let signature = Signature::from_slice(&value).expect("signature");
        let mut object: Map<String, Value> =
            ANALYSIS_COVERS.iter().map(|n| ((*n).to_owned(), data[*n].clone())).collect();
        assert!(key.verify_strict(&jcs::canonicalize(&Value::Object(object.clone())), &signature).is_err());
        object.insert("type".into(), json!("xray.analysis.v1"));
        assert!(key.verify_strict(&jcs::canonicalize(&Value::Object(object)), &signature).is_ok());
    }

    #[test]
    fn any_changed_byte_of_the_message_or_the_signature_fails() {
        let (_dir, signer) = signer();
        let data = report(&signer);
        let keys = key_set(&signer);
        // Every byte of the canonical message, flipped in turn (through the raw check).
        let mut members: Map<String, Value> =
            ANALYSIS_COVERS.iter().map(|n| ((*n).to_owned(), data[*n].clone())).collect();
        let message = signed_bytes(ReportType::Analysis, &mut members);
        let key = published_key(&keys, &signer.key_id()).expect("key");
        let value = URL_SAFE_NO_PAD.decode(data[SIGNATURE_MEMBER]["value"].as_str().expect("value")).expect("b64");
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
        let verify = |data: &Value| key_id(verify_report(data, &keys, ReportType::Analysis));
        for (pointer, new) in [("/xray/score/value", 83), ("/xray/score/confidence", 1)] {
            let mut changed = data.clone();
            *changed.pointer_mut(pointer).expect("member") = Value::from(new);
            assert_eq!(verify(&changed), Err(VerifyError::BadSignature), "{pointer}");
        }
        let mut changed = data.clone();
        changed["completedAt"] = Value::String("2023-11-14T22:13:20.124Z".into());
        assert_eq!(verify(&changed), Err(VerifyError::BadSignature));
        let mut changed = data.clone();
        changed["status"] = Value::String("FAILED".into());
        assert!(verify(&changed).is_ok());
        let mut unsigned = data;
        unsigned.as_object_mut().expect("object").remove(SIGNATURE_MEMBER);
        assert_eq!(verify(&unsigned), Err(VerifyError::Malformed("no data.signature")));
    }

    /// The refusal table every verifier of the repository is tested with
    /// (`tests/signing/refusals.json`, made by `tests/signing/refusals.py`): each case this
    /// typed API can be given gets the reason the table names, so the Rust verifier's reasons
    /// and their order are the Python and TypeScript ones.
    #[test]
    fn the_shared_refusal_cases_get_the_reasons_every_verifier_gives() {
        use base64::engine::general_purpose::STANDARD;
        let table: Value = serde_json::from_str(include_str!("../../tests/signing/refusals.json")).expect("json");
        let names: Vec<&str> = VerifyReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(table["reasons"], json!(names), "the closed list, in the order checked");
        let mut seen = std::collections::BTreeSet::new();
        for case in table["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            if case["loose"] == json!(true) {
                continue;
            }
            let keys = &table["keySets"][case["keys"].as_str().expect("keys")];
            let expected = ReportType::parse(case["type"].as_str().expect("type")).expect("a type");
            let held = &case["binding"];
            let transaction = held["transaction"].as_str().map(|t| STANDARD.decode(t).expect("base64"));
            let binding = ScanBinding {
                transaction: transaction.as_deref(),
                account: held["account"].as_str(),
                origin: held.get("origin").map(Value::as_str),
                signer: held["signer"].as_str(),
            };
            let sequence: Option<Vec<Vec<u8>>> = held["transactions"]
                .as_array()
                .map(|list| list.iter().map(|t| STANDARD.decode(t.as_str().expect("text")).expect("base64")).collect());
            let sequence: Option<Vec<&[u8]>> = sequence.as_ref().map(|l| l.iter().map(Vec::as_slice).collect());
            let result = match expected {
                ReportType::Scan => verify_scan(&case["data"], keys, &binding),
                ReportType::ScanSequence => {
                    let binding = SequenceBinding {
                        transactions: sequence.as_deref(),
                        account: binding.account,
                        origin: binding.origin,
                        signer: binding.signer,
                        mode: held["mode"].as_str(),
                    };
                    verify_scan_sequence(&case["data"], keys, &binding)
                }
                _ => verify_report(&case["data"], keys, expected),
            };
            let reason = result.as_ref().err().map(|e| e.reason().as_str());
            assert_eq!(reason, case["reason"].as_str(), "{name}: {result:?}");
            seen.insert(reason);
        }
        let refused: Vec<&str> = seen.into_iter().flatten().collect();
        let mut every = names.clone();
        every.sort_unstable();
        assert_eq!(refused, every, "every reason has a case");
    }

    #[test]
    fn an_unsigned_member_added_to_a_scan_is_refused_and_to_an_analysis_not_returned() {
        let (_dir, signer) = signer();
        let keys = key_set(&signer);
        let mut data = scan(&signer);
        assert!(verify_report(&data, &keys, ReportType::Scan).is_ok());
        data["verdictOverride"] = json!("benign");
        assert_eq!(
            verify_report(&data, &keys, ReportType::Scan),
            Err(VerifyError::CoversMismatch(SCAN_TYPE)),
            "a scan is served as its covered members and the signature, nothing else"
        );
        let mut data = report(&signer);
        data["xray"]["score"] = json!({ "value": 100 });
        data["verdictOverride"] = json!("benign");
        let verified = verify_report(&data, &keys, ReportType::Analysis);
        assert!(matches!(verified, Err(VerifyError::BadSignature)), "the document is covered: {verified:?}");
        let mut data = report(&signer);
        data["status"] = json!("completed");
        data["verdictOverride"] = json!("benign");
        let verified = verify_report(&data, &keys, ReportType::Analysis).expect("the signed members still verify");
        let names: Vec<&str> = verified.covered.keys().map(String::as_str).collect();
        let mut expected = ANALYSIS_COVERS.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected, "only the covered members");
    }

    #[test]
    fn a_signature_of_another_type_or_other_covers_is_refused() {
        let (_dir, signer) = signer();
        let keys = key_set(&signer);
        let scan = scan(&signer);
        let analysis = report(&signer);
        let wrong_type = |found: &str, expected: ReportType| -> Result<String, VerifyError> {
            Err(VerifyError::WrongType { expected: expected.name(), found: found.to_owned() })
        };
        // A scan presented as an analysis (or a comparison), and the other way round.
        assert_eq!(
            key_id(verify_report(&scan, &keys, ReportType::Analysis)),
            wrong_type(SCAN_TYPE, ReportType::Analysis)
        );
        assert_eq!(
            key_id(verify_report(&scan, &keys, ReportType::Comparison)),
            wrong_type(SCAN_TYPE, ReportType::Comparison)
        );
        assert_eq!(
            key_id(verify_report(&analysis, &keys, ReportType::Scan)),
            wrong_type(ANALYSIS_TYPE, ReportType::Scan)
        );
        // A type changed in the signature object alone: refused for the expected type, and as
        // the type it now names it does not match the signed bytes.
        let mut relabeled = analysis.clone();
        relabeled[SIGNATURE_MEMBER][TYPE_MEMBER] = json!(COMPARISON_TYPE);
        assert!(matches!(verify_report(&relabeled, &keys, ReportType::Analysis), Err(VerifyError::WrongType { .. })));
        let mut untyped = analysis.clone();
        untyped[SIGNATURE_MEMBER].as_object_mut().expect("object").remove(TYPE_MEMBER);
        assert_eq!(key_id(verify_report(&untyped, &keys, ReportType::Analysis)), Err(VerifyError::Malformed("type")));
        // Covers a subset, a superset, with a duplicate: refused even when the key signed them.
        let subset = resigned(&signer, &scan, &SCAN_COVERS[..SCAN_COVERS.len() - 1], SCAN_TYPE);
        let mut with_extra = scan.clone();
        with_extra["extra"] = json!(1);
        let mut superset = SCAN_COVERS.to_vec();
        superset.push("extra");
        let superset = resigned(&signer, &with_extra, &superset, SCAN_TYPE);
        let mut doubled = SCAN_COVERS[..SCAN_COVERS.len() - 1].to_vec();
        doubled.push(SCAN_COVERS[0]);
        let doubled = resigned(&signer, &scan, &doubled, SCAN_TYPE);
        for forged in [subset, superset, doubled] {
            assert_eq!(
                key_id(verify_report(&forged, &keys, ReportType::Scan)),
                Err(VerifyError::CoversMismatch(SCAN_TYPE)),
                "{}",
                forged[SIGNATURE_MEMBER]
            );
        }
        // The same covers, re-signed under another type's name: refused as that type's covers.
        let as_analysis = resigned(&signer, &scan, &SCAN_COVERS, ANALYSIS_TYPE);
        assert_eq!(
            key_id(verify_report(&as_analysis, &keys, ReportType::Analysis)),
            Err(VerifyError::CoversMismatch(ANALYSIS_TYPE))
        );
        // Sanity: re-signing with the right covers and type verifies.
        let same = resigned(&signer, &scan, &SCAN_COVERS, SCAN_TYPE);
        assert_eq!(key_id(verify_report(&same, &keys, ReportType::Scan)), Ok(signer.key_id()));
    }

    #[test]
    fn the_signer_refuses_members_other_than_its_types() {
        let (_dir, signer) = signer();
        let member = |name: &str| (name.to_owned(), json!(1));
        let analysis: Vec<(String, Value)> = ANALYSIS_COVERS.iter().map(|n| member(n)).collect();
        assert!(signer.sign(ReportType::Analysis, analysis.clone()).is_ok());
        assert!(signer.sign(ReportType::Scan, analysis.clone()).is_err(), "another type's members");
        assert!(signer.sign(ReportType::Analysis, analysis[1..].to_vec()).is_err(), "one missing");
        let mut extra = analysis.clone();
        extra.push(member("status"));
        assert!(signer.sign(ReportType::Analysis, extra).is_err(), "one more");
        for reserved in [TYPE_MEMBER, SIGNATURE_MEMBER] {
            let mut named = analysis[1..].to_vec();
            named.push(member(reserved));
            assert!(signer.sign(ReportType::Analysis, named).is_err(), "{reserved}");
        }
        let mut doubled = analysis.clone();
        doubled.push(analysis[0].clone());
        assert!(signer.sign(ReportType::Analysis, doubled).is_err(), "a duplicate");
        for report_type in ReportType::ALL {
            assert!(well_formed(report_type.covers()), "{report_type:?}");
            assert_eq!(ReportType::parse(report_type.name()), Some(report_type));
        }
        assert!(!well_formed(&["a", "type"]) && !well_formed(&["signature"]) && !well_formed(&["a", "b", "a"]));
    }

    #[test]
    fn a_scan_report_has_exactly_the_covered_members_with_its_time_and_request() {
        use crate::engine::report::PolicyRef;
        use crate::ledger::transaction::{decode, message};
        use crate::pubkey::Pubkey;
        use crate::scan::lane::{CounterpartiesOutcome, Observed, SimulationOutcome};
        use crate::scan::report::{build, GuardRequest, Inputs};

        let me = Pubkey([1; 32]);
        let call = message::InstructionParts { program: Pubkey([9; 32]), metas: vec![(me, true, true)], data: vec![] };
        let bytes = message::compile(me, &[call], [7; 32], false).expect("compiles");
        let tx = decode(&message::parse(&bytes).expect("parses"), &[]).expect("decodes");
        let observed = Observed {
            pre: Err("not read".to_owned()),
            simulation: SimulationOutcome::Skipped("a test".to_owned()),
            counterparties: CounterpartiesOutcome::NotAsked,
            here_us: 0,
        };
        let (labels, policy) = (crate::labels::Labels::builtin(), PolicyRef { id: "default".to_owned(), version: 0 });
        let inputs = Inputs {
            decoded: &tx,
            signer: me,
            accounts: &[me],
            observed: &observed,
            labels: &labels,
            policy: &policy,
            overrides: &std::collections::BTreeMap::new(),
            sweep: &crate::engine::sweep::SweepThresholds::DEFAULT,
            origin: None,
            signatures: &[],
            message_sha256: &"0".repeat(64),
            account: "acct_test",
            scanned_at_ms: 1_700_000_000_123,
            request_id: "req-1",
            guard: None,
        };
        let report = serde_json::to_value(build(&inputs)).expect("json");
        let mut names: Vec<&str> = report.as_object().expect("object").keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut expected = SCAN_COVERS.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected, "ScanReport's members are SCAN_COVERS");
        assert_eq!(report["scannedAt"], "2023-11-14T22:13:20.123Z");
        assert_eq!(report["requestId"], "req-1");
        // So the signer takes it in canonical form, and the body made of the same bytes
        // verifies as a scan, as a client parses it.
        let (_dir, signer) = signer();
        let canonical = canonical::to_canonical(&build(&inputs)).expect("canonical");
        assert_eq!(canonical.bytes(), &jcs::canonicalize(&report)[..], "the Value path's bytes");
        let signature = block_on(signer.sign_canonical(ReportType::Scan, &canonical)).expect("signed");
        let body = canonical.wrapped("data", SIGNATURE_MEMBER, &serde_json::to_vec(&signature).expect("json"));
        let body: Value = serde_json::from_slice(&body).expect("body");
        assert_eq!(body["data"].as_object().expect("data").keys().next().map(String::as_str), Some("account"));
        let verified = verify_report(&body["data"], &key_set(&signer), ReportType::Scan).expect("verified");
        assert_eq!(verified.covered["requestId"], "req-1");
        assert_eq!(Value::Object(verified.covered), report);
        // Asked with guards (withheld here: nothing was simulated), it has `guards` too and is
        // signed as `xray.scan.v3`, which `verify_scan` takes as a scan.
        let guarded =
            Inputs { guard: Some(GuardRequest { options: Default::default(), transaction: &bytes }), ..inputs };
        let report = serde_json::to_value(build(&guarded)).expect("json");
        let mut names: Vec<&str> = report.as_object().expect("object").keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut expected = GUARDED_SCAN_COVERS.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected, "a guarded ScanReport's members are GUARDED_SCAN_COVERS");
        assert_eq!(report["guards"]["status"], "withheld");
        let canonical = canonical::to_canonical(&build(&guarded)).expect("canonical");
        let refused = block_on(signer.sign_canonical(ReportType::Scan, &canonical));
        assert!(refused.is_err(), "a guarded scan is not signed as v2");
        let signature = block_on(signer.sign_canonical(ReportType::GuardedScan, &canonical)).expect("signed");
        let body = canonical.wrapped("data", SIGNATURE_MEMBER, &serde_json::to_vec(&signature).expect("json"));
        let body: Value = serde_json::from_slice(&body).expect("body");
        let binding = ScanBinding { account: Some("acct_test"), origin: Some(None), ..ScanBinding::default() };
        let verified = verify_scan(&body["data"], &key_set(&signer), &binding).expect("verified as a scan");
        assert_eq!(verified.covered["guards"], report["guards"]);
    }

    #[test]
    fn a_canonical_report_past_2_53_is_signed_at_double_precision() {
        let (_dir, signer) = signer();
        let report = json!({"analysisId": "an_1", "wallet": "W", "completedAt": "t",
            "xray": {"lamports": LAMPORTS_PAST_2_53}});
        let canonical = canonical::to_canonical(&report).expect("canonical");
        assert!(!canonical.exact());
        let signature = block_on(signer.sign_canonical(ReportType::Analysis, &canonical)).expect("signed");
        let body = canonical.wrapped("data", SIGNATURE_MEMBER, &serde_json::to_vec(&signature).expect("json"));
        // The body keeps the integer exactly; the signature is over its double, as JCS says.
        assert!(String::from_utf8_lossy(&body).contains("18446744073709551615"));
        let body: Value = serde_json::from_slice(&body).expect("body");
        verify_report(&body["data"], &key_set(&signer), ReportType::Analysis).expect("verified");
        let wrong = json!({"analysisId": "an_1", "wallet": "W"});
        let refused =
            block_on(signer.sign_canonical(ReportType::Analysis, &canonical::to_canonical(&wrong).expect("c")));
        assert!(refused.is_err());
    }

    #[test]
    fn integers_past_2_53_sign_and_verify_at_double_precision() {
        let (_dir, signer) = signer();
        let payload = format!(
            r#"{{"wallet":"W","balances":{{"lamports":{LAMPORTS_PAST_2_53},"delta":-9007199254740993}},"signals":[]}}"#
        );
        let data = report_of(&signer, payload.as_bytes());
        // As a client reads it: the served text, parsed again.
        let served: Value = serde_json::from_str(&data.to_string()).expect("json");
        assert_eq!(served["xray"]["balances"]["lamports"], json!(LAMPORTS_PAST_2_53), "served exact");
        let verified = verify_report(&served, &key_set(&signer), ReportType::Analysis).expect("verified");
        assert_eq!(verified.key_id, signer.key_id());
        assert_eq!(verified.covered["xray"]["balances"]["lamports"], json!(LAMPORTS_PAST_2_53));
        // Attested at double precision: the nearest double is the same signed number.
        let mut rounded = served.clone();
        rounded["xray"]["balances"]["lamports"] = json!(LAMPORTS_PAST_2_53 as f64);
        assert!(verify_report(&rounded, &key_set(&signer), ReportType::Analysis).is_ok());
        let mut changed = served;
        changed["xray"]["balances"]["lamports"] = json!(LAMPORTS_PAST_2_53 / 2);
        assert_eq!(
            key_id(verify_report(&changed, &key_set(&signer), ReportType::Analysis)),
            Err(VerifyError::BadSignature)
        );
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
        assert_eq!(key_id(verify_report(&before, &keys, ReportType::Analysis)), Ok(old.clone()));
        let after = report(&signer);
        assert_eq!(key_id(verify_report(&after, &keys, ReportType::Analysis)), Ok(rotation.key_id.clone()));
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
        assert_eq!(key_id(verify_report(&before, &key_set(&again), ReportType::Analysis)), Ok(old));
    }

    /// A monitor event as its page lists it (`type` and `delivery` unsigned), signed by `signer`.
    fn event(signer: &ReportSigner) -> Value {
        let members = EventMembers {
            id: "evt_1".into(),
            kind: event::EVENT_KIND_RISK_CHANGED,
            account: "acct_a".into(),
            monitor_id: "mon_1".into(),
            wallet: "W".into(),
            analysis_id: "an_1".into(),
            created_at: "2026-11-28T10:01:00.000Z".into(),
            changes: json!({"previousAnalysisId": "an_0", "score": {"previous": 90, "current": 20, "delta": -70}}),
        };
        let signature = signer.sign(ReportType::MonitorEvent, members.members().expect("members")).expect("signed");
        let mut data = serde_json::to_value(&members).expect("json");
        data["type"] = json!("risk_changed");
        data["delivery"] = Value::Null;
        data[SIGNATURE_MEMBER] = serde_json::to_value(signature).expect("json");
        data
    }

    #[test]
    fn a_monitor_event_verifies_as_one_and_binds_its_account_and_changes() {
        let (_dir, signer) = signer();
        let data = event(&signer);
        let keys = key_set(&signer);
        let verified = verify_report(&data, &keys, ReportType::MonitorEvent).expect("verified");
        let mut names: Vec<&str> = verified.covered.keys().map(String::as_str).collect();
        names.sort_unstable();
        let mut expected = MONITOR_EVENT_COVERS.to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected, "the covered members alone: not its legacy type nor its delivery");
        let mut delivered = data.clone();
        delivered["delivery"] = json!({"status": "DELIVERED"});
        assert!(verify_report(&delivered, &keys, ReportType::MonitorEvent).is_ok(), "delivery is not signed");
        for (member, forged) in [("account", json!("acct_b")), ("analysisId", json!("an_2")), ("kind", json!("x"))] {
            let mut changed = data.clone();
            changed[member] = forged;
            assert_eq!(
                key_id(verify_report(&changed, &keys, ReportType::MonitorEvent)),
                Err(VerifyError::BadSignature)
            );
        }
        let mut dropped = data.clone();
        dropped["changes"]["score"]["delta"] = json!(-1);
        assert_eq!(key_id(verify_report(&dropped, &keys, ReportType::MonitorEvent)), Err(VerifyError::BadSignature));
        assert!(matches!(verify_report(&data, &keys, ReportType::Analysis), Err(VerifyError::WrongType { .. })));
        assert!(matches!(
            verify_report(&report(&signer), &keys, ReportType::MonitorEvent),
            Err(VerifyError::WrongType { .. })
        ));
        // Signed before a rotation: verifies with the retired key.
        let old = signer.key_id();
        signer.rotate(1_700_000_100_000).expect("rotated");
        assert_eq!(key_id(verify_report(&data, &key_set(&signer), ReportType::MonitorEvent)), Ok(old));
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
