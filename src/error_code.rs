//! The contract's error codes (§7): the one closed list of their strings and statuses.
//!
//! Owns: `ErrorCode`. Used by the API's refusals (`api::error::ApiError` picks the code), by
//! FAILED jobs (`jobs::execute::FailCode` names a subset), by the store's job records (the
//! string) and by metrics (rejections by code). Pure; any thread.
//!
//! Invariant: each code's string exists here and nowhere else in the product.
//! Deliberately absent: messages and `details` (the API's), and which code a failure gets
//! (decided where the failure is understood).

/// The contract's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidRequest,
    InvalidAddress,
    /// An extension of the contract (the transaction scan): the bytes are not a transaction.
    InvalidTransaction,
    Unauthenticated,
    InsufficientScope,
    NotFound,
    MethodNotAllowed,
    PayloadTooLarge,
    UnsupportedMediaType,
    AccountNotEligible,
    /// An extension of the contract (feedback on a scan): a signed report sent back did not
    /// verify as one of this server's, for this account (422, `details.reason`).
    ReportNotVerified,
    RateLimited,
    QuotaExhausted,
    /// An extension of the contract: the account holds its maximum of live jobs.
    TooManyJobs,
    /// An extension of the contract (`Idempotency-Key`): the key answered another request.
    IdempotencyKeyReused,
    /// An extension of the contract: the key's first request is still being admitted.
    IdempotencyKeyInProgress,
    /// An extension of the contract (monitors): the request conflicts with what the account
    /// holds — its maximum of monitors, or an event still being delivered.
    Conflict,
    ServiceBusy,
    Internal,
    /// Ends a job only (contract §7): the ledger source failed after bounded retries.
    UpstreamUnavailable,
    /// Ends a job only (contract §7): anything else went wrong while analyzing.
    AnalysisFailed,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidRequest => "INVALID_REQUEST",
            ErrorCode::InvalidAddress => "INVALID_ADDRESS",
            ErrorCode::InvalidTransaction => "INVALID_TRANSACTION",
            ErrorCode::Unauthenticated => "UNAUTHENTICATED",
            ErrorCode::InsufficientScope => "INSUFFICIENT_SCOPE",
            ErrorCode::NotFound => "NOT_FOUND",
            ErrorCode::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            ErrorCode::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            ErrorCode::UnsupportedMediaType => "UNSUPPORTED_MEDIA_TYPE",
            ErrorCode::AccountNotEligible => "ACCOUNT_NOT_ELIGIBLE",
            ErrorCode::ReportNotVerified => "REPORT_NOT_VERIFIED",
            ErrorCode::RateLimited => "RATE_LIMITED",
            ErrorCode::QuotaExhausted => "QUOTA_EXHAUSTED",
            ErrorCode::TooManyJobs => "TOO_MANY_JOBS",
            ErrorCode::IdempotencyKeyReused => "IDEMPOTENCY_KEY_REUSED",
            ErrorCode::IdempotencyKeyInProgress => "IDEMPOTENCY_KEY_IN_PROGRESS",
            ErrorCode::Conflict => "CONFLICT",
            ErrorCode::ServiceBusy => "SERVICE_BUSY",
            ErrorCode::Internal => "INTERNAL",
            ErrorCode::UpstreamUnavailable => "UPSTREAM_UNAVAILABLE",
            ErrorCode::AnalysisFailed => "ANALYSIS_FAILED",
        }
    }

    /// The HTTP status of a refusal with this code. The two codes that only end a job have
    /// none of their own (a poll answers them with 200 and a `FAILED` body); 500 stands for
    /// them should one ever be used to refuse a request.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::InvalidRequest | ErrorCode::InvalidAddress | ErrorCode::InvalidTransaction => 400,
            ErrorCode::Unauthenticated => 401,
            ErrorCode::InsufficientScope => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::AccountNotEligible | ErrorCode::ReportNotVerified => 422,
            ErrorCode::IdempotencyKeyReused | ErrorCode::IdempotencyKeyInProgress | ErrorCode::Conflict => 409,
            ErrorCode::RateLimited | ErrorCode::QuotaExhausted | ErrorCode::TooManyJobs => 429,
            ErrorCode::ServiceBusy => 503,
            ErrorCode::Internal | ErrorCode::UpstreamUnavailable | ErrorCode::AnalysisFailed => 500,
        }
    }
}
