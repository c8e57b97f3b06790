//! The retry policy of the rpc source: which failures get another attempt, and how long to
//! wait before it.
//!
//! Owns: `AttemptFailure` (one attempt's outcome when it did not succeed), the HTTP status
//! classification, `Retry-After` parsing and the full-jitter exponential backoff. Called from
//! the thread that owns the source; pure except for the jitter draw.
//!
//! Invariant: every wait is at most `backoff_max_ms`, an honoured `Retry-After` included, so a
//! hostile or confused endpoint cannot park a compute thread's job for long. Retried: 429,
//! 5xx, network errors, timeouts, truncated bodies, malformed JSON and JSON-RPC errors that
//! mean "node unavailable". Deliberately not retried: other 4xx (the request or its
//! configuration is wrong), redirects (never followed: a POST must not be replayed elsewhere),
//! and JSON-RPC errors that are answers (not found, invalid params).

use crate::config::RPC_RETRY_AFTER_S_MAX;
use crate::ledger::LedgerError;

/// Why one attempt did not produce an answer.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptFailure {
    /// Worth another attempt; `retry_after_s` is the server's hint, when it sent one.
    Retry { error: LedgerError, retry_after_s: Option<u64> },
    /// Another attempt cannot help.
    Final(LedgerError),
}

impl AttemptFailure {
    /// Classifies an error from parsing or from the JSON-RPC error object of an answer.
    pub fn from_error(error: LedgerError) -> AttemptFailure {
        if error.is_retryable() {
            AttemptFailure::Retry { error, retry_after_s: None }
        } else {
            AttemptFailure::Final(error)
        }
    }
}

/// The failure of a non-2xx HTTP status. `retry_after_s` is honoured on 429 and 503 only,
/// where HTTP gives it that meaning.
pub fn status_failure(status: u16, reason: &str, retry_after_s: Option<u64>) -> AttemptFailure {
    let error = LedgerError::Unavailable(format!("HTTP {status} {reason}"));
    match status {
        429 | 503 => AttemptFailure::Retry { error, retry_after_s },
        500..=599 => AttemptFailure::Retry { error, retry_after_s: None },
        _ => AttemptFailure::Final(LedgerError::Invalid(format!("endpoint answered HTTP {status} {reason}"))),
    }
}

/// `Retry-After` in its delay-seconds form. The HTTP-date form is not read (no clock-based
/// hints: the backoff applies instead).
pub fn parse_retry_after_s(value: &str) -> Option<u64> {
    let value = value.trim();
    if value.is_empty() || value.len() > 10 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    value.parse().ok().filter(|&s| s <= RPC_RETRY_AFTER_S_MAX)
}

/// Largest wait before retry number `retry` (0 for the wait after the first attempt):
/// `min(max, base · 2^retry)`.
pub fn backoff_ceiling_ms(base_ms: u64, max_ms: u64, retry: u32) -> u64 {
    let factor = 1u64.checked_shl(retry).unwrap_or(u64::MAX);
    base_ms.saturating_mul(factor).min(max_ms)
}

/// The wait before retry number `retry`: the server's `Retry-After` when it gave one, else a
/// full-jitter draw in `[0, ceiling]`; never more than `max_ms`.
pub fn delay_ms(base_ms: u64, max_ms: u64, retry: u32, retry_after_s: Option<u64>) -> u64 {
    match retry_after_s {
        Some(s) => s.saturating_mul(1_000).min(max_ms),
        None => fastrand::u64(0..=backoff_ceiling_ms(base_ms, max_ms, retry)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        assert_eq!(backoff_ceiling_ms(100, 5_000, 0), 100);
        assert_eq!(backoff_ceiling_ms(100, 5_000, 1), 200);
        assert_eq!(backoff_ceiling_ms(100, 5_000, 5), 3_200);
        assert_eq!(backoff_ceiling_ms(100, 5_000, 6), 5_000);
        assert_eq!(backoff_ceiling_ms(100, 5_000, 63), 5_000);
        assert_eq!(backoff_ceiling_ms(100, 5_000, 64), 5_000);
        assert_eq!(backoff_ceiling_ms(u64::MAX, 5_000, 3), 5_000);
        assert_eq!(backoff_ceiling_ms(0, 5_000, 3), 0);
    }

    #[test]
    fn jittered_delays_stay_in_bounds_and_spread() {
        let draws: Vec<u64> = (0..2_000).map(|_| delay_ms(100, 5_000, 2, None)).collect();
        assert!(draws.iter().all(|&d| d <= 400));
        // Full jitter: draws cover the range rather than clustering at the ceiling.
        assert!(draws.iter().any(|&d| d < 100) && draws.iter().any(|&d| d > 300));
        assert!((0..100).all(|r| delay_ms(100, 5_000, r, None) <= 5_000));
    }

    #[test]
    fn retry_after_wins_but_is_capped() {
        assert_eq!(delay_ms(100, 5_000, 0, Some(2)), 2_000);
        assert_eq!(delay_ms(100, 5_000, 9, Some(0)), 0);
        assert_eq!(delay_ms(100, 5_000, 0, Some(60)), 5_000);
        assert_eq!(delay_ms(100, 5_000, 0, Some(u64::MAX)), 5_000);
    }

    #[test]
    fn parses_retry_after_seconds_only() {
        assert_eq!(parse_retry_after_s("3"), Some(3));
        assert_eq!(parse_retry_after_s(" 120 "), Some(120));
        assert_eq!(parse_retry_after_s("0"), Some(0));
        for bad in ["", "-1", "1.5", "abc", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999", "86401"] {
            assert_eq!(parse_retry_after_s(bad), None, "{bad}");
        }
    }

    #[test]
    fn classifies_statuses() {
        assert!(matches!(status_failure(429, "", Some(2)), AttemptFailure::Retry { retry_after_s: Some(2), .. }));
        assert!(matches!(status_failure(503, "", Some(2)), AttemptFailure::Retry { retry_after_s: Some(2), .. }));
        assert!(matches!(status_failure(500, "", Some(2)), AttemptFailure::Retry { retry_after_s: None, .. }));
        assert!(matches!(
            status_failure(502, "", None),
            AttemptFailure::Retry { error: LedgerError::Unavailable(_), .. }
        ));
        for status in [301, 400, 401, 403, 404, 413] {
            assert!(
                matches!(status_failure(status, "", None), AttemptFailure::Final(LedgerError::Invalid(_))),
                "{status}"
            );
        }
    }

    #[test]
    fn classifies_json_rpc_errors() {
        assert!(matches!(
            AttemptFailure::from_error(LedgerError::Unavailable("x".into())),
            AttemptFailure::Retry { .. }
        ));
        assert!(matches!(AttemptFailure::from_error(LedgerError::Malformed("x".into())), AttemptFailure::Retry { .. }));
        assert!(matches!(AttemptFailure::from_error(LedgerError::NotFound("x".into())), AttemptFailure::Final(_)));
        let rpc = LedgerError::Rpc { code: -32602, message: "bad".into() };
        assert_eq!(AttemptFailure::from_error(rpc.clone()), AttemptFailure::Final(rpc));
    }
}
