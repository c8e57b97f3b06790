//! `POST /v1/developer/intelligence/transaction`: the pre-sign scan, answered synchronously.
//!
//! Owns: the endpoint's steps — body (400 `INVALID_REQUEST`), the transaction's bytes (400
//! `INVALID_TRANSACTION`), the signer (400 naming it), a quota unit reserved in memory first
//! (429), lookup tables and the ledger's view through the scan lane (503 when the lane is full
//! or a table cannot be read), the report built here, then the unit charged durably (the
//! shared store may still refuse it at the shared limit: 429) — and the answer.
//!
//! Invariant: a scan is charged exactly when it is answered 200: every refusal and failure
//! gives its reserved unit back, and the unit is written before the answer leaves (with
//! `--sync-writes` the answer also waits for its fsync; a failed wait is logged and the answer
//! stands — the user got the scan the unit pays for).
//! Invariant: the listener thread never waits on the ledger (the lane does the I/O) or on
//! etcd (awaited, as every cluster read).
//! Deliberately absent: `Idempotency-Key` (a scan changes nothing but usage; a repeat is a new
//! scan) and `callbackUrl` (the answer is synchronous).

use base64::Engine as _;

use super::{json_bytes, Endpoints};
use crate::api::json::{parse_body, ScanRequest};
use crate::api::wire::DataBody;
use crate::api::ApiError;
use crate::http::ApiResponse;
use crate::jobs::admission::AdmitError;
use crate::limits::quota::{Operation, ReleaseCause, Reservation};
use crate::pubkey::Pubkey;
use crate::scan::lane::LaneError;
use crate::scan::report::{self, Inputs, ScanReport};
use crate::scan::{self, ScanError};
use crate::store::Charged;

fn scan_error(e: ScanError) -> ApiError {
    match e {
        ScanError::Transaction(e) => ApiError::InvalidTransaction { message: e.to_string() },
        ScanError::UnknownSigner(signer) => ApiError::UnknownSigner { signer: signer.to_string() },
    }
}

fn lane_error(e: LaneError) -> ApiError {
    match e {
        LaneError::Busy => ApiError::ServiceBusy,
        LaneError::Stopped => ApiError::ServiceBusy,
        LaneError::Upstream(message) => ApiError::LedgerUnavailable { message },
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
        let bytes = transaction_bytes(&body.transaction)?;
        let asked = match &body.signer {
            Some(text) => Some(
                Pubkey::parse(text).map_err(|reason| ApiError::InvalidAddress { field: "signer", reason })?,
            ),
            None => None,
        };
        let parsed = scan::parse(&bytes).map_err(scan_error)?;
        self.check_accepting()?;
        let key = &self.caller.key;
        let reservation = key
            .quota
            .reserve(Operation::TransactionScan, self.caller.now_ms)
            .map_err(|refusal| ApiError::from(AdmitError::QuotaExhausted { refusal, now_ms: self.caller.now_ms }))?;
        match self.scan(&parsed, &bytes, asked).await {
            Ok(report) => self.charged(reservation, &report).await,
            Err(e) => {
                self.release(reservation);
                Err(e)
            }
        }
    }

    /// The scan itself: decoding, the lane's reads, the report.
    async fn scan(
        &self,
        parsed: &crate::ledger::transaction::message::Parsed,
        bytes: &[u8],
        asked: Option<Pubkey>,
    ) -> Result<ScanReport, ApiError> {
        let lane = &self.app.scan;
        let tables = scan::lookup_tables(parsed);
        let tables = match tables.is_empty() {
            true => Vec::new(),
            false => lane.tables(tables).await.map_err(lane_error)?,
        };
        let decoded = scan::decode(parsed, &tables).map_err(scan_error)?;
        let signer = scan::signer(&decoded, asked).map_err(scan_error)?;
        let accounts = scan::accounts_to_read(&decoded, &signer);
        let observed = lane.observe(bytes.to_vec(), accounts.clone()).await.map_err(lane_error)?;
        let labels = self.app.labels.clone();
        Ok(report::build(&Inputs { decoded: &decoded, signer, accounts: &accounts, observed: &observed, labels: &labels }))
    }

    fn release(&self, reservation: Reservation) {
        if let Err(e) = self.caller.key.quota.release(reservation, ReleaseCause::NotAdmitted) {
            tracing::warn!(error = %e, "a scan's quota unit could not be released");
        }
    }

    /// Charges the unit durably, then answers the report.
    async fn charged(&self, reservation: Reservation, report: &ScanReport) -> Result<ApiResponse, ApiError> {
        let body = json_bytes(&DataBody { data: report })?;
        let key = &self.caller.key;
        let (key_id, period_start_ms, limit) = (key.id().as_str(), reservation.period_start_ms, key.quota.limit());
        let charged = match self.app.admission.cluster() {
            Some(etcd) => etcd.charge_now_async(key_id.to_owned(), period_start_ms, limit).await,
            None => self.app.store.charge_now(key_id, period_start_ms, limit),
        };
        let charged = match charged {
            Ok(charged) => charged,
            Err(e) => {
                self.release(reservation);
                return Err(ApiError::from_store(&e));
            }
        };
        match charged {
            Charged::Done { usage } => {
                if let Err(e) = key.quota.commit(reservation) {
                    tracing::warn!(error = %e, "a scan's quota unit could not be settled in memory");
                }
                if let Some(usage) = usage {
                    key.quota.restore(period_start_ms, &usage, self.caller.now_ms);
                }
            }
            Charged::Exhausted { usage } => {
                self.release(reservation);
                key.quota.restore(period_start_ms, &usage, self.caller.now_ms);
                let refusal = key.quota.reserve(Operation::TransactionScan, self.caller.now_ms);
                return Err(match refusal {
                    Err(refusal) => ApiError::from(AdmitError::QuotaExhausted { refusal, now_ms: self.caller.now_ms }),
                    Ok(unit) => {
                        self.release(unit);
                        ApiError::ServiceBusy
                    }
                });
            }
        }
        if let Err(e) = self.covered(true).await {
            // The unit is written and charged; only its fsync is unconfirmed. The answer stands.
            tracing::warn!(error = %e, "a scan's charge is written but not yet fsynced");
        }
        Ok(ApiResponse::json(200, body))
    }
}
