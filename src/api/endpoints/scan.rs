//! `POST /v1/developer/intelligence/transaction`: the pre-sign scan, answered synchronously.
//!
//! Owns: the endpoint's steps — body (400 `INVALID_REQUEST`), the transaction's bytes (400
//! `INVALID_TRANSACTION`), the signer (400 naming it), a quota unit reserved in memory first
//! (429), lookup tables and the ledger's view through the scan lane (503 when the lane is full
//! or a table cannot be read), the report built here, then the unit charged durably (the
//! shared store may still refuse it at the shared limit: 429) — and the answer, signed
//! (`xray.scan.v2`, covering its time, request id, the asking account, the origin judged and —
//! in `transaction.messageSha256` — the digest of the message judged; `xray.scan.v3` with
//! guards). With `transactions` (`scan_sequence`): one rate token and one quota unit per
//! transaction, all or none, and the answer signed `xray.scan_sequence.v1` over every message's
//! digest in order.
//!
//! Invariant: a scan is charged exactly when it is answered 200 — however its ledger reads
//! went, which the answer says: every refusal gives its reserved unit back (`ReservedUnit`,
//! also when the client hangs up), and the unit is written before the answer leaves (with
//! `--sync-writes` the answer also waits for its fsync; a failed wait is logged and the answer
//! stands). A unit sent to the store — etcd, or the group write of the scans this thread
//! answers in one tick (one RocksDB write for all of them) — counts as used even if the client
//! left meanwhile.
//! Invariant: the listener thread never waits on the ledger (the lane does the I/O; a
//! memory-resident demo ledger is read here, where its reads are computations — `scan::lane`)
//! or on etcd (awaited, as every cluster read).
//! Deliberately absent: `Idempotency-Key` (a scan changes nothing but usage; a repeat is a new
//! scan) and `callbackUrl` (the answer is synchronous).

use std::sync::Arc;

use base64::Engine as _;

use super::{json_bytes, Endpoints};
use crate::api::json::{parse_body, ScanRequest, Scanned};
use crate::api::ApiError;
use crate::engine::policy::Policy;
use crate::guard::GuardOptions;
use crate::http::ApiResponse;
use crate::jobs::admission::AdmitError;
use crate::labels::domains::Origin;
use crate::labels::Labels;
use crate::ledger::read::SequenceMode;
use crate::ledger::transaction::message::Parsed;
use crate::ledger::transaction::Decoded;
use crate::limits::quota::{period_end_ms, Operation, QuotaExhausted, ReleaseCause, Reservation};
use crate::pubkey::Pubkey;
use crate::scan::lane::LaneError;
use crate::scan::report::{self, GuardRequest, Inputs, ScanReport};
use crate::scan::sequence::{self, SequenceInputs, SequenceReport};
use crate::scan::{self, ScanError};
use crate::signing::{ReportType, SIGNATURE_MEMBER};
use crate::store::{Charged, StoreResult, UnitCharge};
use crate::tick_group;

/// Scans' units written in one store write at most (the rest of a tick's start another).
const CHARGES_PER_WRITE_MAX: usize = 256;

thread_local! {
    // The units this listener thread is charging in the current tick (`charged_in_tick`).
    static OPEN_CHARGES: tick_group::Open<UnitCharge, StoreResult<Charged>> = const { std::cell::RefCell::new(None) };
}

fn scan_error(e: ScanError) -> ApiError {
    match e {
        ScanError::Transaction(e) => ApiError::InvalidTransaction { message: e.to_string() },
        ScanError::UnknownSigner(signer) => ApiError::UnknownSigner { signer: signer.to_string() },
    }
}

/// A refusal of the sequence's `index`-th transaction, naming it.
fn at(index: usize, e: ApiError) -> ApiError {
    match e {
        ApiError::InvalidTransaction { message } => ApiError::InvalidSequenceTransaction { index, message },
        other => other,
    }
}

fn lane_error(e: LaneError) -> ApiError {
    match e {
        LaneError::Busy | LaneError::Stopped => ApiError::ServiceBusy,
        LaneError::Upstream(detail) => {
            // The node's own words stay in the log: they may name the provider's project.
            tracing::warn!(%detail, "a scan's lookup tables could not be read");
            ApiError::LedgerUnavailable { message: "its lookup tables could not be read".into() }
        }
        LaneError::Invalid(message) => ApiError::InvalidTransaction { message },
        LaneError::TableMisses { retry_after_s } => ApiError::TableMissesLimited { retry_after_s },
        LaneError::OverBytes => ApiError::LedgerUnavailable {
            message: "the scan lane holds its limit of upstream answers in flight: retry shortly".into(),
        },
    }
}

/// A scan's reserved quota units (one per transaction), given back when dropped unless they
/// were charged: every early return and a client that hangs up mid-scan (hyper drops the
/// handler's future) release them.
struct ReservedUnits<'k> {
    key: &'k crate::auth::table::KeyEntry,
    reservations: Vec<Reservation>,
    /// Set once the charge was sent to the store (etcd, or this tick's group write): from then
    /// on it may be counted, so a drop (the client hung up meanwhile) settles it as used, not free.
    sent: bool,
}

impl<'k> ReservedUnits<'k> {
    /// `units` reserved on `key`, all or none (429 when the key has fewer left).
    fn reserve(key: &'k crate::auth::table::KeyEntry, units: usize, now_ms: u64) -> Result<Self, ApiError> {
        // One step, all or none: a refusal reports the key's counts, none of them this request's.
        let reservations = key
            .quota
            .reserve_n(Operation::TransactionScan, units as u64, now_ms)
            .map_err(|refusal| ApiError::from(AdmitError::QuotaExhausted { refusal, now_ms }))?;
        Ok(ReservedUnits { key, reservations, sent: false })
    }

    /// The units, now charged durably: settled in memory as used.
    fn commit(mut self) {
        self.settle_used();
    }

    fn settle_used(&mut self) {
        for reservation in self.reservations.drain(..) {
            if let Err(e) = self.key.quota.commit(reservation) {
                tracing::warn!(error = %e, "a scan's quota unit could not be settled in memory");
            }
        }
    }
}

impl Drop for ReservedUnits<'_> {
    fn drop(&mut self) {
        if self.sent {
            return self.settle_used();
        }
        for reservation in self.reservations.drain(..) {
            if let Err(e) = self.key.quota.release(reservation, ReleaseCause::NotAdmitted) {
                tracing::warn!(error = %e, "a scan's quota unit could not be released");
            }
        }
    }
}

/// The body's `transaction`: standard base64 (padding optional), at most a packet once decoded.
fn transaction_bytes(text: &str) -> Result<Vec<u8>, ApiError> {
    let text = text.trim_end_matches('=');
    base64::engine::general_purpose::STANDARD_NO_PAD
        .decode(text)
        .map_err(|e| ApiError::InvalidTransaction { message: format!("not base64 ({e})") })
}

impl Endpoints<'_> {
    pub async fn scan_transaction(&self) -> Result<ApiResponse, ApiError> {
        let body: ScanRequest = parse_body(self.request)?;
        // The transactions' bytes first (400 `INVALID_TRANSACTION`), then the signer and origin.
        let bytes = match &body.scanned {
            Scanned::One(text) => vec![transaction_bytes(text)?],
            Scanned::Sequence { transactions, .. } => transactions
                .iter()
                .enumerate()
                .map(|(i, text)| transaction_bytes(text).map_err(|e| at(i, e)))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let asked = match &body.signer {
            Some(text) => {
                Some(Pubkey::parse(text).map_err(|reason| ApiError::InvalidAddress { field: "signer", reason })?)
            }
            None => None,
        };
        // Bound to the answer as its host (a domain in ASCII punycode); judged when it names a
        // domain or a web origin's IP address (localhost or an extension's id is bound and not
        // judged). Text that is no URL with a host is refused: a verdict must say exactly which
        // origin it judged.
        let origin = match body.origin.as_deref() {
            Some(text) => Some(crate::labels::domains::origin_of(text).map_err(|_| ApiError::InvalidRequest {
                field: "origin",
                message: "origin must be a URL with a host (https://app.example.com) or a bare host name",
            })?),
            None => None,
        };
        match (&body.scanned, bytes.as_slice()) {
            (Scanned::One(_), [bytes]) => self.scan_one(bytes, asked, origin.as_ref(), body.guards).await,
            (Scanned::Sequence { mode, .. }, _) => self.scan_sequence(bytes, *mode, asked, origin.as_ref()).await,
            (Scanned::One(_), _) => Err(ApiError::internal(&"one transaction read as several")),
        }
    }

    /// One transaction (`transaction`): one unit, signed `xray.scan.v2` (`v3` with guards).
    async fn scan_one(
        &self,
        bytes: &[u8],
        asked: Option<Pubkey>,
        origin: Option<&Origin>,
        guards: Option<GuardOptions>,
    ) -> Result<ApiResponse, ApiError> {
        let parsed = scan::parse(bytes).map_err(scan_error)?;
        let signer = scan::signer(&parsed, asked).map_err(scan_error)?;
        self.check_accepting()?;
        let units = ReservedUnits::reserve(&self.caller.key, 1, self.caller.now_ms)?;
        let report = self.scan(&parsed, bytes, signer, origin, guards).await?;
        // A scan asked with guards signs them too (`xray.scan.v3`).
        let report_type = if report.guards.is_some() { ReportType::GuardedScan } else { ReportType::Scan };
        self.signed_and_charged(&report, report_type, units).await
    }

    /// Several transactions run in order on one state (`transactions`, `mode`): one unit each,
    /// signed `xray.scan_sequence.v1`. Each must be signed by the scan's signer (asked, or the
    /// first's fee payer); a refusal names the transaction (`transactions[i]: …`).
    async fn scan_sequence(
        &self,
        bytes: Vec<Vec<u8>>,
        mode: SequenceMode,
        asked: Option<Pubkey>,
        origin: Option<&Origin>,
    ) -> Result<ApiResponse, ApiError> {
        let parsed = bytes
            .iter()
            .enumerate()
            .map(|(i, b)| scan::parse(b).map_err(|e| at(i, scan_error(e))))
            .collect::<Result<Vec<_>, _>>()?;
        let first = parsed.first().ok_or(ApiError::InvalidRequest {
            field: "transactions",
            message: "transactions must hold at least one transaction",
        })?;
        let signer = scan::signer(first, asked).map_err(scan_error)?;
        for (index, p) in parsed.iter().enumerate() {
            scan::signer(p, Some(signer))
                .map_err(|_| ApiError::SequenceSigner { signer: signer.to_string(), index })?;
        }
        self.check_accepting()?;
        // A transaction is a token: the request's own pays the first, the rest are taken here,
        // all or none (429 with the wait for all of them when the key's bucket holds fewer).
        let more = u32::try_from(parsed.len().saturating_sub(1)).unwrap_or(u32::MAX);
        let grant = self.caller.key.rate.take_all(more, self.caller.now_ns);
        if grant.granted < more {
            return Err(ApiError::RateLimited { retry_after_s: u64::from(grant.retry_after_s) });
        }
        let units = ReservedUnits::reserve(&self.caller.key, parsed.len(), self.caller.now_ms)?;
        let report = self.sequence(&parsed, &bytes, signer, mode, origin).await?;
        self.signed_and_charged(&report, ReportType::ScanSequence, units).await
    }

    /// The answer: `report` signed as answered, over every member of its `data` (its type's
    /// covers: its time and request id among them) — one canonical serialization is both the
    /// signed message and the body (its members in the report's order) — once its units are
    /// charged.
    async fn signed_and_charged<R: serde::Serialize>(
        &self,
        report: &R,
        report_type: ReportType,
        units: ReservedUnits<'_>,
    ) -> Result<ApiResponse, ApiError> {
        let canonical = crate::signing::canonical::to_canonical(report).map_err(|e| ApiError::internal(&e))?;
        // Batched with the scans this thread answers in the same tick (`signing::batch`).
        let signature = self.app.signer.sign_canonical(report_type, &canonical).await;
        let signature = signature.map_err(|e| ApiError::internal(&e))?;
        let body = canonical.wrapped("data", SIGNATURE_MEMBER, &json_bytes(&signature)?);
        // Every answered scan is charged, whatever the ledger's reads came to (the answer says
        // how they went): a waiver would be a free scan a client could cause at will, naming
        // accounts too large to read in time.
        self.charged(units).await?;
        Ok(ApiResponse::json(200, body))
    }

    /// The scan itself: decoding, the lane's reads, the report.
    async fn scan(
        &self,
        parsed: &Parsed,
        bytes: &[u8],
        signer: Pubkey,
        origin: Option<&Origin>,
        guards: Option<GuardOptions>,
    ) -> Result<ScanReport, ApiError> {
        let lane = &self.app.scan;
        let account = self.account();
        let decoded = self.decoded(parsed).await?;
        let accounts = scan::accounts_to_read(&decoded, &signer);
        let history_of = scan::counterparties::wanted(&decoded, &signer).then_some(signer);
        let observed = lane.observe(account, bytes.to_vec(), accounts.clone(), history_of).await.map_err(lane_error)?;
        // A heavy scan on a memory-resident source took the listener thread longer than one
        // token's worth: the key's rate limit pays for it (its quota unit stays one).
        self.caller.key.rate.charge(lane.extra_tokens(observed.here_us, 1), self.caller.now_ns);
        let (labels, policy) = self.judged_by();
        let labels = policy.labels(&labels);
        let signatures = scan::signatures::check(parsed, bytes);
        let message_sha256 = scan::signatures::message_sha256(parsed, bytes);
        let inputs = Inputs {
            decoded: &decoded,
            signer,
            accounts: &accounts,
            observed: &observed,
            labels: &labels,
            policy: policy.reference(),
            overrides: policy.severities(),
            sweep: policy.sweep_thresholds(),
            origin,
            signatures: &signatures,
            message_sha256: &message_sha256,
            account,
            scanned_at_ms: self.caller.now_ms,
            request_id: self.request.request_id.as_str(),
            guard: guards.map(|options| GuardRequest { options, transaction: bytes }),
        };
        Ok(report::build(&inputs))
    }

    /// The message with its lookup tables read through the lane (cached briefly) and decoded.
    async fn decoded(&self, parsed: &Parsed) -> Result<Decoded, ApiError> {
        let tables = scan::lookup_tables(parsed);
        let tables = match tables.is_empty() {
            true => Vec::new(),
            false => self.app.scan.tables(self.account(), tables).await.map_err(lane_error)?,
        };
        scan::decode(parsed, &tables).map_err(scan_error)
    }

    /// The labels in force and the account's policy that judge its scans: its allow- and
    /// deny-list (`Policy::labels` lays them over the labels), overrides and sweep thresholds
    /// apply to the findings as to its analyses (one read: the report names that policy's
    /// version).
    fn judged_by(&self) -> (Arc<Labels>, Arc<Policy>) {
        (self.app.labels.current(), self.app.admission.policies().policy(self.account()))
    }

    /// The reads and report of a sequence: each transaction decoded, the accounts of them all
    /// (the signer first, at most `MULTIPLE_ACCOUNTS_LEN_MAX`) read before the first and the
    /// transactions run in order on one state through the lane, then `sequence::build`.
    async fn sequence(
        &self,
        parsed: &[Parsed],
        bytes: &[Vec<u8>],
        signer: Pubkey,
        mode: SequenceMode,
        origin: Option<&Origin>,
    ) -> Result<SequenceReport, ApiError> {
        let mut decoded = Vec::with_capacity(parsed.len());
        for (i, p) in parsed.iter().enumerate() {
            decoded.push(self.decoded(p).await.map_err(|e| at(i, e))?);
        }
        let own: Vec<Vec<Pubkey>> = decoded.iter().map(|d| scan::accounts_to_read(d, &signer)).collect();
        let accounts = scan::sequence_accounts(&signer, &decoded, &own)
            .map_err(|message| ApiError::InvalidRequest { field: "transactions", message })?;
        // Each transaction answers the post-state of its accounts among those read.
        let own: Vec<Vec<Pubkey>> =
            own.into_iter().map(|a| a.into_iter().filter(|x| accounts.contains(x)).collect()).collect();
        let history_of = decoded.iter().any(|d| scan::counterparties::wanted(d, &signer)).then_some(signer);
        let items = bytes.iter().cloned().zip(own.iter().cloned()).collect();
        let lane = &self.app.scan;
        let observed = lane
            .observe_sequence(self.account(), items, mode, accounts.clone(), history_of)
            .await
            .map_err(lane_error)?;
        let paid = u32::try_from(parsed.len()).unwrap_or(u32::MAX);
        self.caller.key.rate.charge(lane.extra_tokens(observed.here_us, paid), self.caller.now_ns);
        let (labels, policy) = self.judged_by();
        let labels = policy.labels(&labels);
        let checks: Vec<_> = parsed.iter().zip(bytes).map(|(p, b)| scan::signatures::check(p, b)).collect();
        let digests: Vec<_> = parsed.iter().zip(bytes).map(|(p, b)| scan::signatures::message_sha256(p, b)).collect();
        let items: Vec<sequence::Item<'_>> = (0..parsed.len())
            .map(|i| sequence::Item {
                decoded: &decoded[i],
                accounts: &own[i],
                signatures: &checks[i],
                message_sha256: &digests[i],
            })
            .collect();
        Ok(sequence::build(&SequenceInputs {
            items: &items,
            mode,
            signer,
            accounts: &accounts,
            observed: &observed,
            labels: &labels,
            policy: policy.reference(),
            overrides: policy.severities(),
            sweep: policy.sweep_thresholds(),
            origin,
            account: self.account(),
            scanned_at_ms: self.caller.now_ms,
            request_id: self.request.request_id.as_str(),
        }))
    }

    /// The embedded store's charge, written with the other scans this thread answers in the
    /// same tick: one durable write for all of them (`tick_group`), each still charged before
    /// its answer leaves.
    async fn charged_in_tick(&self, unit: UnitCharge) -> StoreResult<Charged> {
        let store = &self.app.store;
        let owner = Arc::as_ptr(store).cast::<()>() as usize;
        tick_group::join(&OPEN_CHARGES, owner, CHARGES_PER_WRITE_MAX, unit, |units| store.charge_now_each(&units)).await
    }

    /// Charges the units durably, together (the store; on a cluster, etcd at the shared limit).
    async fn charged(&self, mut unit: ReservedUnits<'_>) -> Result<(), ApiError> {
        let key = &self.caller.key;
        let period_start_ms = unit.reservations.first().map_or(0, |r| r.period_start_ms);
        let units = u32::try_from(unit.reservations.len()).unwrap_or(u32::MAX);
        let (key_id, limit) = (key.id().as_str(), key.quota.limit());
        // Sent: from here a hang-up settles the unit as used (etcd, or this tick's group
        // write, may count it whether or not this future is still there to see it).
        unit.sent = true;
        let charged = match self.app.admission.cluster() {
            Some(etcd) => etcd.charge_now_async(key_id.to_owned(), period_start_ms, limit, units).await,
            None => {
                let charge = UnitCharge { key_id: key_id.to_owned(), period_start_ms, limit, units };
                self.charged_in_tick(charge).await
            }
        };
        if charged.is_err() {
            // Not charged as far as this node can tell (etcd's count is read back with the
            // next status or usage read).
            unit.sent = false;
        }
        match charged.map_err(|e| ApiError::from_store(&e))? {
            Charged::Done { .. } => unit.commit(),
            Charged::Exhausted { usage } => {
                unit.sent = false;
                // The shared limit refused it (other nodes charged the key meanwhile): the
                // unit is given back (dropped) and the refusal says what etcd holds.
                let now_ms = self.caller.now_ms;
                let refusal = QuotaExhausted {
                    limit,
                    used: u64::try_from(usage.used).unwrap_or(0),
                    reserved: u64::try_from(usage.reserved).unwrap_or(0),
                    resets_at_ms: period_end_ms(now_ms, key.quota.period()),
                    needed: u64::from(units),
                };
                return Err(ApiError::from(AdmitError::QuotaExhausted { refusal, now_ms }));
            }
        }
        if let Err(e) = self.covered(true).await {
            // The unit is written and charged; only its fsync is unconfirmed. The answer stands.
            tracing::warn!(error = %e, "a scan's charge is written but not yet fsynced");
        }
        Ok(())
    }
}
