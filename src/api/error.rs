//! The one error type of the API and its wire form (contract §7).
//!
//! Owns: `ApiError` (one variant per contract code, with exactly the facts its `details`
//! needs), the mapping of each variant to HTTP status, code string, message, `details` and the
//! headers that go with it — all in `ApiError::render`, the only place that mapping exists.
//! Called on listener threads when a request is refused; pure.
//!
//! Wire form: `{"error":{"code","message","requestId","details"}}`. `details` is omitted when
//! the contract lists none for the code (`NOT_FOUND`, `UNSUPPORTED_MEDIA_TYPE`, `INTERNAL`);
//! it is never `{}` or `null`. `METHOD_NOT_ALLOWED` gives `details.allow` as an array of
//! methods, the same list as the `Allow` header.
//!
//! Invariant: headers that belong to a code always go with it — `WWW-Authenticate: Bearer` on
//! 401, `Allow` on 405, `Retry-After` (whole seconds, at least 1) on 429 and 503.
//! `INTERNAL` never carries a cause to the client: `ApiError::internal` logs it and drops it.
//! The code strings and their statuses are `crate::error_code::ErrorCode`'s (shared with FAILED
//! jobs and metrics); this module decides which code, message, details and headers a refusal has.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;

use crate::auth::scope::Scope;
use crate::eligibility::Ineligible;
use crate::http::{ApiResponse, Method, RequestId};
use crate::jobs::admission::AdmitError;
use crate::limits::headers::retry_after_quota_s;
use crate::pubkey::AddressError;
use crate::store::StoreError;
use crate::webhooks::TargetRefusal;

/// Why a request is not authenticated (`details.reason` of 401): the auth module's own type.
pub use crate::auth::table::AuthFailure as Unauthenticated;
use crate::config::{IDEMPOTENCY_RETRY_AFTER_S, SERVICE_BUSY_RETRY_AFTER_S, TOO_MANY_JOBS_RETRY_AFTER_S};
pub use crate::error_code::ErrorCode;

/// Every way the API refuses a request. Closed: one variant per contract code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Malformed JSON, not an object, missing or mistyped field, bad query value, equal compare
    /// addresses. `field` names the offender (`body` for the document as a whole).
    InvalidRequest {
        field: &'static str,
        message: &'static str,
    },
    InvalidAddress {
        field: &'static str,
        reason: AddressError,
    },
    /// A `callbackUrl` the webhook policy refuses: 400 `INVALID_REQUEST` naming the field, the
    /// rule it breaks in words and as `details.reason`.
    InvalidCallback(TargetRefusal),
    /// A field whose refusal needs words made for it (a monitor's wallets, thresholds): 400
    /// `INVALID_REQUEST` naming the field.
    InvalidField {
        field: &'static str,
        message: String,
    },
    /// 409 `CONFLICT` (monitors: the account's maximum of monitors, `limit`; an event whose
    /// delivery is still pending).
    Conflict {
        message: String,
        limit: Option<u64>,
        /// `details.reason`, where a client can act on which conflict it is.
        reason: Option<&'static str>,
    },
    /// 409 `CONFLICT` naming `callbackUrl`, `details.reason: "no_webhook_secret"`: a monitor
    /// would deliver its events to a `callbackUrl` while `account` has no webhook secret to sign
    /// them with (its deliveries could only fail). The message names the commands that make one.
    NoWebhookSecret {
        account: String,
    },
    /// The scan's `transaction` is not a Solana transaction (too large, not base64, not a
    /// legacy or v0 message, inconsistent); the message says what is wrong.
    InvalidTransaction {
        message: String,
    },
    /// A transaction of a sequence is not one (400 `INVALID_TRANSACTION`, naming it).
    InvalidSequenceTransaction {
        index: usize,
        message: String,
    },
    /// The scan's `signer` does not sign the transaction (400 `INVALID_REQUEST`, naming it).
    UnknownSigner {
        signer: String,
    },
    /// A transaction of a sequence that the scan's signer does not sign.
    SequenceSigner {
        signer: String,
        index: usize,
    },
    Unauthenticated(Unauthenticated),
    /// The admin listener's bearer token was missing or wrong: the same code as a bad API key,
    /// worded for the admin token so an operator is not sent looking for a key.
    AdminUnauthenticated(Unauthenticated),
    /// `field` names the request member that needs the scope, when the route's own scope was
    /// granted (a `callbackUrl` delivers the document `analysis:read` reads).
    InsufficientScope {
        required_scope: Scope,
        field: Option<&'static str>,
    },
    NotFound,
    MethodNotAllowed {
        allow: &'static [Method],
    },
    PayloadTooLarge {
        max_bytes: usize,
    },
    UnsupportedMediaType,
    AccountNotEligible {
        field: &'static str,
        reason: Ineligible,
    },
    /// A signed report sent back (`field`) did not verify as this server's for the caller:
    /// 422 `REPORT_NOT_VERIFIED`, `details.reason` one of the verifiers' closed list
    /// (`signing::VerifyReason`), `message` the verifier's words (never the report's account).
    ReportNotVerified {
        field: &'static str,
        reason: &'static str,
        message: String,
    },
    RateLimited {
        retry_after_s: u64,
    },
    /// The account's minute of lookup-table reads that found no table is spent (a scan's): 429
    /// `RATE_LIMITED` until it ends.
    TableMissesLimited {
        retry_after_s: u64,
    },
    /// The per-client-IP limit of failed authentications (contract §3): a failure past it. No
    /// key authenticated, so no key's `RateLimit` headers go with it.
    FailedAuthLimited {
        retry_after_s: u64,
    },
    /// `resets_at` is the RFC 3339 time the period ends; `retry_after_s` the seconds until then.
    /// `reserved` (units of running work) is told in the message: the contract's `details`
    /// are `limit`, `used` and `resetsAt`.
    QuotaExhausted {
        limit: u64,
        used: u64,
        reserved: u64,
        /// The units the request needed at once (more than one: a sequence scan).
        needed: u64,
        resets_at: String,
        retry_after_s: u64,
    },
    /// The account's live jobs are at their cap (an extension of the contract's codes).
    TooManyJobs {
        limit: usize,
    },
    /// The `Idempotency-Key` answered another request of the account (409).
    IdempotencyKeyReused,
    /// The `Idempotency-Key`'s first request is still being admitted (409, retry shortly).
    IdempotencyKeyInProgress,
    ServiceBusy,
    /// A synchronous answer needed the ledger and it did not answer (503 `SERVICE_BUSY`,
    /// retry later); the message says what was asked.
    LedgerUnavailable {
        message: String,
    },
    /// The store is out of space (etcd's NOSPACE alarm): 503 `SERVICE_BUSY`, saying so.
    StoreFull,
    Internal,
}

/// Admission's refusals, each with its contract code.
impl From<AdmitError> for ApiError {
    fn from(e: AdmitError) -> ApiError {
        match e {
            AdmitError::QuotaExhausted { refusal, now_ms } => ApiError::QuotaExhausted {
                limit: refusal.limit,
                used: refusal.used,
                reserved: refusal.reserved,
                needed: refusal.needed,
                resets_at: crate::clock::rfc3339_ms(refusal.resets_at_ms),
                retry_after_s: retry_after_quota_s(&refusal, now_ms),
            },
            AdmitError::Busy => ApiError::ServiceBusy,
            AdmitError::TooManyJobs { limit } => ApiError::TooManyJobs { limit },
            AdmitError::Store(e) => ApiError::from_store(&e),
            AdmitError::Random(cause) => ApiError::internal(&cause),
            AdmitError::IdempotencyKeyReused => ApiError::IdempotencyKeyReused,
            AdmitError::IdempotencyKeyInProgress => ApiError::IdempotencyKeyInProgress,
        }
    }
}

/// `details.reason` of a monitor's `callbackUrl` refused for want of the account's webhook secret.
pub const NO_WEBHOOK_SECRET_REASON: &str = "no_webhook_secret";

/// What to run to make the webhook secret `account` lacks (the operator's command and admin
/// route), and the way around it: a monitor without `callbackUrl`, whose events are polled.
fn no_webhook_secret_message(account: &str) -> String {
    format!(
        "callbackUrl: account {account} has no webhook secret to sign its monitor's events with; an operator \
         makes one with `xray accounts webhook-secret --data-dir <dir> --account {account}` (admin API: \
         POST /v1/admin/accounts/{account}/webhook-secret), shown once — or leave callbackUrl out and poll \
         GET /v1/developer/monitors/{{id}}/events"
    )
}

/// `details`: every field any code uses; each code fills its own subset.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Details<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required_scope: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow: Option<Vec<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_seconds: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<&'a str>,
}

impl Details<'_> {
    fn is_empty(&self) -> bool {
        *self == Details::default()
    }
}

/// An error taken apart into what goes on the wire.
#[derive(Debug)]
pub struct Rendered<'a> {
    pub code: ErrorCode,
    pub message: Cow<'static, str>,
    pub details: Details<'a>,
    pub headers: Vec<(&'static str, String)>,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorObject<'a>,
}

/// The `error` object of the wire form — of a refused request, or of one refused item of a
/// batch (with the batch's request id).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ErrorObject<'a> {
    code: &'static str,
    message: &'a str,
    request_id: &'a str,
    #[serde(skip_serializing_if = "Details::is_empty")]
    details: &'a Details<'a>,
}

impl<'a> ErrorObject<'a> {
    pub fn of(rendered: &'a Rendered<'a>, request_id: &'a RequestId) -> ErrorObject<'a> {
        ErrorObject {
            code: rendered.code.as_str(),
            message: &rendered.message,
            request_id: request_id.as_str(),
            details: &rendered.details,
        }
    }
}

impl ApiError {
    /// An `INTERNAL` error: the cause is logged here and never sent.
    pub fn internal(context: &dyn fmt::Display) -> ApiError {
        tracing::error!(cause = %context, "internal error");
        ApiError::Internal
    }

    /// A store failure as the client sees it: retry later (503) or a bug (500).
    pub fn from_store(e: &StoreError) -> ApiError {
        if let StoreError::Full(_) = e {
            tracing::error!(error = %e, "the store is full");
            return ApiError::StoreFull;
        }
        if e.is_transient() {
            tracing::warn!(error = %e, "store unavailable");
            ApiError::ServiceBusy
        } else {
            ApiError::internal(e)
        }
    }

    pub fn code(&self) -> ErrorCode {
        self.render().code
    }

    /// The one mapping from error to wire facts.
    pub fn render(&self) -> Rendered<'_> {
        let d = Details::default;
        let (code, message, details): (ErrorCode, Cow<'static, str>, Details<'_>) = match self {
            ApiError::InvalidRequest { field, message } => {
                (ErrorCode::InvalidRequest, (*message).into(), Details { field: Some(field), ..d() })
            }
            ApiError::InvalidAddress { field, reason } => (
                ErrorCode::InvalidAddress,
                format!("{field} is not a base58 string of 32 bytes").into(),
                Details { field: Some(field), reason: Some(reason.reason()), ..d() },
            ),
            ApiError::InvalidCallback(refusal) => (
                ErrorCode::InvalidRequest,
                refusal.message().into(),
                Details { field: Some("callbackUrl"), reason: Some(refusal.reason()), ..d() },
            ),
            ApiError::InvalidField { field, message } => {
                (ErrorCode::InvalidRequest, format!("{field}: {message}").into(), Details { field: Some(field), ..d() })
            }
            ApiError::Conflict { message, limit, reason } => {
                (ErrorCode::Conflict, message.clone().into(), Details { limit: *limit, reason: *reason, ..d() })
            }
            ApiError::NoWebhookSecret { account } => (
                ErrorCode::Conflict,
                no_webhook_secret_message(account).into(),
                Details { field: Some("callbackUrl"), reason: Some(NO_WEBHOOK_SECRET_REASON), ..d() },
            ),
            ApiError::InvalidTransaction { message } => (
                ErrorCode::InvalidTransaction,
                format!("transaction: {message}").into(),
                Details { field: Some("transaction"), ..d() },
            ),
            ApiError::InvalidSequenceTransaction { index, message } => (
                ErrorCode::InvalidTransaction,
                format!("transactions[{index}]: {message}").into(),
                Details { field: Some("transactions"), ..d() },
            ),
            ApiError::UnknownSigner { signer } => (
                ErrorCode::InvalidRequest,
                format!("signer {signer} does not sign this transaction: name one of its signers, or omit signer for the fee payer").into(),
                Details { field: Some("signer"), ..d() },
            ),
            ApiError::SequenceSigner { signer, index } => (
                ErrorCode::InvalidRequest,
                format!(
                    "transactions[{index}] is not signed by {signer}: every transaction of a sequence is signed by the \
                     scan's signer (signer, or else the first transaction's fee payer)"
                )
                .into(),
                Details { field: Some("transactions"), ..d() },
            ),
            ApiError::LedgerUnavailable { message } => (
                ErrorCode::ServiceBusy,
                format!("the ledger did not answer ({message}): retry later").into(),
                Details { retry_after_seconds: Some(SERVICE_BUSY_RETRY_AFTER_S), ..d() },
            ),
            ApiError::Unauthenticated(why) => {
                (ErrorCode::Unauthenticated, why.message().into(), Details { reason: Some(why.reason()), ..d() })
            }
            ApiError::AdminUnauthenticated(why) => (
                ErrorCode::Unauthenticated,
                admin_auth_message(*why).into(),
                Details { reason: Some(why.reason()), ..d() },
            ),
            ApiError::InsufficientScope { required_scope, field: None } => (
                ErrorCode::InsufficientScope,
                format!("the API key lacks the scope {}", required_scope.as_str()).into(),
                Details { required_scope: Some(required_scope.as_str()), ..d() },
            ),
            ApiError::InsufficientScope { required_scope, field: Some(field) } => (
                ErrorCode::InsufficientScope,
                format!(
                    "{field} delivers the finished document, which needs the scope {}; the API key lacks it",
                    required_scope.as_str()
                )
                .into(),
                Details { required_scope: Some(required_scope.as_str()), field: Some(field), ..d() },
            ),
            ApiError::NotFound => (ErrorCode::NotFound, "not found".into(), d()),
            ApiError::MethodNotAllowed { allow } => (
                ErrorCode::MethodNotAllowed,
                "method not allowed on this path".into(),
                Details { allow: Some(allow.iter().map(|m| m.as_str()).collect()), ..d() },
            ),
            ApiError::PayloadTooLarge { max_bytes } => (
                ErrorCode::PayloadTooLarge,
                format!("request body is larger than {max_bytes} bytes").into(),
                Details { max_bytes: Some(*max_bytes), ..d() },
            ),
            ApiError::UnsupportedMediaType => {
                (ErrorCode::UnsupportedMediaType, "Content-Type must be application/json".into(), d())
            }
            ApiError::AccountNotEligible { field, reason } => (
                ErrorCode::AccountNotEligible,
                format!("{field}: {}", reason.message()).into(),
                Details { field: Some(field), reason: Some(reason.reason()), ..d() },
            ),
            ApiError::ReportNotVerified { field, reason, message } => (
                ErrorCode::ReportNotVerified,
                format!("{field} is not a report this server signed for this account: {message}").into(),
                Details { field: Some(field), reason: Some(reason), ..d() },
            ),
            ApiError::RateLimited { retry_after_s } => (
                ErrorCode::RateLimited,
                "rate limit exceeded".into(),
                Details { retry_after_seconds: Some((*retry_after_s).max(1)), ..d() },
            ),
            ApiError::TableMissesLimited { retry_after_s } => (
                ErrorCode::RateLimited,
                format!(
                    "this account's scans named more than {} lookup tables that do not exist this minute",
                    crate::config::SCAN_TABLE_MISSES_PER_ACCOUNT_PER_MINUTE
                )
                .into(),
                Details { retry_after_seconds: Some((*retry_after_s).max(1)), ..d() },
            ),
            ApiError::FailedAuthLimited { retry_after_s } => (
                ErrorCode::RateLimited,
                "too many failed authentications from this client address".into(),
                Details { retry_after_seconds: Some((*retry_after_s).max(1)), ..d() },
            ),
            ApiError::QuotaExhausted { limit, used, reserved, needed, resets_at, .. } => (
                ErrorCode::QuotaExhausted,
                match needed {
                    0 | 1 => format!(
                        "quota exhausted for this period: {used} of {limit} units used, {reserved} reserved by work still running"
                    ),
                    _ => format!(
                        "quota exhausted for this period: this request needs {needed} units at once (one per transaction), \
                         and {used} of {limit} are used, {reserved} reserved by work still running"
                    ),
                }
                .into(),
                Details { limit: Some(*limit), used: Some(*used), resets_at: Some(resets_at), ..d() },
            ),
            ApiError::TooManyJobs { limit } => (
                ErrorCode::TooManyJobs,
                format!(
                    "this account has {limit} analyses or comparisons queued or running, its maximum: \
                     retry when one finishes"
                )
                .into(),
                Details {
                    limit: Some(*limit as u64),
                    retry_after_seconds: Some(TOO_MANY_JOBS_RETRY_AFTER_S),
                    ..d()
                },
            ),
            ApiError::IdempotencyKeyReused => (
                ErrorCode::IdempotencyKeyReused,
                "this Idempotency-Key was used with another request within 24 hours: use a new key for new work"
                    .into(),
                Details { field: Some("Idempotency-Key"), ..d() },
            ),
            ApiError::IdempotencyKeyInProgress => (
                ErrorCode::IdempotencyKeyInProgress,
                "a request with this Idempotency-Key is still being admitted: retry it shortly".into(),
                Details { field: Some("Idempotency-Key"), retry_after_seconds: Some(IDEMPOTENCY_RETRY_AFTER_S), ..d() },
            ),
            ApiError::StoreFull => (
                ErrorCode::ServiceBusy,
                "the service cannot record new work: its store is full until an operator frees space; retry later"
                    .into(),
                Details { retry_after_seconds: Some(SERVICE_BUSY_RETRY_AFTER_S), ..d() },
            ),
            ApiError::ServiceBusy => (
                ErrorCode::ServiceBusy,
                "the service is busy: retry later".into(),
                Details { retry_after_seconds: Some(SERVICE_BUSY_RETRY_AFTER_S), ..d() },
            ),
            ApiError::Internal => (ErrorCode::Internal, "internal error".into(), d()),
        };
        Rendered { code, message, details, headers: self.headers() }
    }

    /// The headers that go with the code.
    fn headers(&self) -> Vec<(&'static str, String)> {
        match self {
            ApiError::Unauthenticated(_) | ApiError::AdminUnauthenticated(_) => {
                vec![("www-authenticate", "Bearer".to_owned())]
            }
            ApiError::MethodNotAllowed { allow } => {
                let list: Vec<&str> = allow.iter().map(|m| m.as_str()).collect();
                vec![("allow", list.join(", "))]
            }
            ApiError::RateLimited { retry_after_s }
            | ApiError::FailedAuthLimited { retry_after_s }
            | ApiError::TableMissesLimited { retry_after_s }
            | ApiError::QuotaExhausted { retry_after_s, .. } => {
                vec![("retry-after", (*retry_after_s).max(1).to_string())]
            }
            ApiError::ServiceBusy | ApiError::StoreFull | ApiError::LedgerUnavailable { .. } => {
                vec![("retry-after", SERVICE_BUSY_RETRY_AFTER_S.to_string())]
            }
            ApiError::TooManyJobs { .. } => vec![("retry-after", TOO_MANY_JOBS_RETRY_AFTER_S.to_string())],
            ApiError::IdempotencyKeyInProgress => vec![("retry-after", IDEMPOTENCY_RETRY_AFTER_S.to_string())],
            _ => Vec::new(),
        }
    }

    /// The full response for this error.
    pub fn to_response(&self, request_id: &RequestId) -> ApiResponse {
        let rendered = self.render();
        let body = ErrorBody { error: ErrorObject::of(&rendered, request_id) };
        let bytes = match simd_json::to_vec(&body) {
            Ok(bytes) => bytes,
            // Serializing strings and integers into a Vec cannot fail; keep a valid answer anyway.
            Err(_) => br#"{"error":{"code":"INTERNAL","message":"internal error"}}"#.to_vec(),
        };
        let close = matches!(self, ApiError::PayloadTooLarge { .. });
        ApiResponse { status: rendered.code.status(), headers: rendered.headers, body: bytes.into(), close }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let rendered = self.render();
        write!(f, "{}: {}", rendered.code.as_str(), rendered.message)
    }
}

impl std::error::Error for ApiError {}

/// The admin listener's wording of an authentication failure.
fn admin_auth_message(why: Unauthenticated) -> &'static str {
    match why {
        Unauthenticated::Missing => {
            "an admin token is required: send Authorization: Bearer <the data directory's admin.token>"
        }
        _ => "the admin token is not valid for this server",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use simd_json::prelude::*;

    fn body_of(error: &ApiError) -> (ApiResponse, simd_json::OwnedValue) {
        let response = error.to_response(&RequestId::resolve(Some(b"rid-1")));
        let mut bytes = response.body.to_vec();
        let value = simd_json::to_owned_value(&mut bytes).unwrap();
        (response, value)
    }

    fn all_errors() -> Vec<ApiError> {
        vec![
            ApiError::InvalidRequest { field: "wallet", message: "wallet is required and must be a string" },
            ApiError::InvalidAddress { field: "walletB", reason: AddressError::WrongLength },
            ApiError::Unauthenticated(Unauthenticated::Revoked),
            ApiError::AdminUnauthenticated(Unauthenticated::Missing),
            ApiError::InsufficientScope { required_scope: Scope::WalletAnalyze, field: None },
            ApiError::NotFound,
            ApiError::MethodNotAllowed { allow: &[Method::Get] },
            ApiError::PayloadTooLarge { max_bytes: 4096 },
            ApiError::UnsupportedMediaType,
            ApiError::AccountNotEligible { field: "wallet", reason: Ineligible::OffCurve },
            ApiError::RateLimited { retry_after_s: 0 },
            ApiError::FailedAuthLimited { retry_after_s: 2 },
            ApiError::QuotaExhausted {
                limit: 10,
                used: 10,
                reserved: 0,
                needed: 1,
                resets_at: "2026-12-01T00:00:00.000Z".into(),
                retry_after_s: 3600,
            },
            ApiError::ServiceBusy,
            ApiError::StoreFull,
            ApiError::Internal,
        ]
    }

    #[test]
    fn every_code_has_its_status_and_shape() {
        let expected = [
            ("INVALID_REQUEST", 400),
            ("INVALID_ADDRESS", 400),
            ("UNAUTHENTICATED", 401),
            ("UNAUTHENTICATED", 401),
            ("INSUFFICIENT_SCOPE", 403),
            ("NOT_FOUND", 404),
            ("METHOD_NOT_ALLOWED", 405),
            ("PAYLOAD_TOO_LARGE", 413),
            ("UNSUPPORTED_MEDIA_TYPE", 415),
            ("ACCOUNT_NOT_ELIGIBLE", 422),
            ("RATE_LIMITED", 429),
            ("RATE_LIMITED", 429),
            ("QUOTA_EXHAUSTED", 429),
            ("SERVICE_BUSY", 503),
            ("SERVICE_BUSY", 503),
            ("INTERNAL", 500),
        ];
        for (error, (code, status)) in all_errors().iter().zip(expected) {
            let (response, value) = body_of(error);
            assert_eq!(response.status, status, "{code}");
            let obj = value.get("error").unwrap();
            assert_eq!(obj.get_str("code"), Some(code));
            assert_eq!(obj.get_str("requestId"), Some("rid-1"));
            assert!(!obj.get_str("message").unwrap().is_empty());
            let keys = value.as_object().unwrap().len();
            assert_eq!(keys, 1, "only `error` at the top");
            let no_details = matches!(code, "NOT_FOUND" | "UNSUPPORTED_MEDIA_TYPE" | "INTERNAL");
            assert_eq!(obj.get("details").is_none(), no_details, "{code}");
        }
    }

    #[test]
    fn details_match_the_contract() {
        let (_, v) = body_of(&ApiError::InvalidAddress { field: "walletB", reason: AddressError::NotBase58 });
        let details = v.get("error").unwrap().get("details").unwrap();
        assert_eq!(details.get_str("field"), Some("walletB"));
        assert_eq!(details.get_str("reason"), Some("not_base58"));
        assert!(v.get("error").unwrap().get_str("message").unwrap().starts_with("walletB "));

        let (r, v) = body_of(&ApiError::InvalidCallback(TargetRefusal::Loopback));
        assert_eq!(r.status, 400);
        let error = v.get("error").unwrap();
        assert_eq!(error.get_str("code"), Some("INVALID_REQUEST"));
        assert_eq!(error.get_str("message"), Some(TargetRefusal::Loopback.message()));
        assert_eq!(error.get("details").unwrap().get_str("field"), Some("callbackUrl"));
        assert_eq!(error.get("details").unwrap().get_str("reason"), Some("loopback"));

        let (r, v) = body_of(&ApiError::NoWebhookSecret { account: "acct_X".into() });
        assert_eq!(r.status, 409);
        let error = v.get("error").unwrap();
        assert_eq!(error.get_str("code"), Some("CONFLICT"));
        let message = error.get_str("message").unwrap();
        assert!(message.contains("xray accounts webhook-secret") && message.contains("--account acct_X"), "{message}");
        assert!(message.contains("/v1/admin/accounts/acct_X/webhook-secret"), "{message}");
        assert_eq!(error.get("details").unwrap().get_str("field"), Some("callbackUrl"));
        assert_eq!(error.get("details").unwrap().get_str("reason"), Some("no_webhook_secret"));

        let (r, v) = body_of(&ApiError::PayloadTooLarge { max_bytes: 4096 });
        assert_eq!(v.get("error").unwrap().get("details").unwrap().get_u64("maxBytes"), Some(4096));
        assert!(r.close);

        let (_, v) = body_of(&ApiError::AccountNotEligible { field: "walletA", reason: Ineligible::Program });
        assert_eq!(v.get("error").unwrap().get("details").unwrap().get_str("reason"), Some("program"));

        let (_, v) = body_of(&ApiError::InsufficientScope { required_scope: Scope::UsageRead, field: None });
        assert_eq!(v.get("error").unwrap().get("details").unwrap().get_str("requiredScope"), Some("usage:read"));

        let (_, v) = body_of(&all_errors()[12]);
        let details = v.get("error").unwrap().get("details").unwrap();
        assert_eq!(details.get_u64("limit"), Some(10));
        assert_eq!(details.get_str("resetsAt"), Some("2026-12-01T00:00:00.000Z"));
    }

    #[test]
    fn headers_go_with_their_codes() {
        let header = |e: ApiError, name| e.to_response(&RequestId::generate()).header(name).map(str::to_owned);
        assert_eq!(header(ApiError::Unauthenticated(Unauthenticated::Missing), "www-authenticate").unwrap(), "Bearer");
        let allow = ApiError::MethodNotAllowed { allow: &[Method::Get, Method::Post] };
        assert_eq!(header(allow.clone(), "allow").unwrap(), "GET, POST");
        let (_, v) = body_of(&allow);
        let list = v.get("error").unwrap().get("details").unwrap().get("allow").unwrap().as_array().unwrap().len();
        assert_eq!(list, 2);
        assert_eq!(header(ApiError::RateLimited { retry_after_s: 0 }, "retry-after").unwrap(), "1");
        assert_eq!(header(ApiError::TableMissesLimited { retry_after_s: 40 }, "retry-after").unwrap(), "40");
        let (response, v) = body_of(&ApiError::TableMissesLimited { retry_after_s: 40 });
        assert_eq!(response.status, 429);
        assert_eq!(v.get("error").unwrap().get_str("code"), Some("RATE_LIMITED"));
        assert_eq!(header(all_errors()[12].clone(), "retry-after").unwrap(), "3600");
        assert_eq!(header(ApiError::ServiceBusy, "retry-after").unwrap(), "1");
        assert_eq!(header(ApiError::NotFound, "retry-after"), None);
    }

    #[test]
    fn internal_leaks_nothing() {
        let error = ApiError::internal(&"rocksdb: IO error at /secret/path");
        let (_, v) = body_of(&error);
        let text = simd_json::to_string(&v).unwrap();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(v.get("error").unwrap().get_str("message"), Some("internal error"));
    }
}
