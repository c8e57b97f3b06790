//! The values of the rate-limit headers of the wire contract (§6), as exact strings.
//!
//! Owns: `RateLimit-Policy`, `RateLimit` (draft-ietf-httpapi-ratelimit-headers, structured
//! fields) and the `Retry-After` seconds of `RATE_LIMITED` and `QUOTA_EXHAUSTED`. Called from
//! listener threads when they write an authenticated response.
//!
//! Invariant: values contain only ASCII digits, letters, `"`, `;`, `=`, `,` and spaces, so they
//! are always valid header values.
//! Deliberately absent: header names as HTTP types and any clock read (callers pass `now`).

use super::quota::{seconds_until, QuotaExhausted, QuotaView};
use super::rate::{RateDecision, RateLimit, RateState};

pub const RATELIMIT_POLICY_HEADER: &str = "RateLimit-Policy";
pub const RATELIMIT_HEADER: &str = "RateLimit";
pub const RETRY_AFTER_HEADER: &str = "Retry-After";

/// `"rate";q=<burst>;w=<ceil(burst / ratePerSecond)>, "quota";q=<limit>;w=<period seconds>`.
pub fn policy_value(rate: RateLimit, quota: &QuotaView) -> String {
    let period_s = seconds_until(quota.period_start_ms, quota.period_end_ms);
    rate_and_quota(("q", "w"), [u64::from(rate.burst()), u64::from(rate.window_s())], [quota.limit, period_s])
}

/// `"rate";r=<whole tokens left>;t=<seconds until full>, "quota";r=<remaining>;t=<seconds until
/// reset>`.
pub fn ratelimit_value(rate: RateState, quota: &QuotaView, now_ms: u64) -> String {
    let reset_s = seconds_until(now_ms, quota.period_end_ms);
    let rate = [u64::from(rate.remaining_tokens), u64::from(rate.reset_s)];
    rate_and_quota(("r", "t"), rate, [quota.remaining, reset_s])
}

/// `"rate";<a>=<rate[0]>;<b>=<rate[1]>, "quota";<a>=<quota[0]>;<b>=<quota[1]>`, written with
/// `itoa` (both values go on every authenticated response; `format!` showed in profiles).
fn rate_and_quota((a, b): (&str, &str), rate: [u64; 2], quota: [u64; 2]) -> String {
    let mut value = String::with_capacity(RATE_HEADER_BYTES_TYPICAL);
    let mut digits = itoa::Buffer::new();
    for (item, [first, second]) in [("\"rate\"", rate), ("\"quota\"", quota)] {
        if !value.is_empty() {
            value.push_str(", ");
        }
        value.push_str(item);
        for (param, number) in [(a, first), (b, second)] {
            value.push(';');
            value.push_str(param);
            value.push('=');
            value.push_str(digits.format(number));
        }
    }
    value
}

/// Capacity reserved for one header value: the text plus four numbers of a typical width.
const RATE_HEADER_BYTES_TYPICAL: usize = 72;

/// `Retry-After` of `429 RATE_LIMITED`: whole seconds until one token is available, at least 1.
pub fn retry_after_rate_s(decision: &RateDecision) -> u32 {
    decision.retry_after_s.max(1)
}

/// `Retry-After` of `429 QUOTA_EXHAUSTED`: seconds until the period resets, at least 1.
pub fn retry_after_quota_s(refusal: &QuotaExhausted, now_ms: u64) -> u64 {
    seconds_until(now_ms, refusal.resets_at_ms).max(1)
}

/// Both header values for one response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitHeaders {
    pub policy: String,
    pub current: String,
}

impl RateLimitHeaders {
    pub fn new(rate: RateLimit, state: RateState, quota: &QuotaView, now_ms: u64) -> Self {
        Self { policy: policy_value(rate, quota), current: ratelimit_value(state, quota, now_ms) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::quota::{period_end_ms, period_start_ms, ByOperation, QuotaPeriod};

    /// 2026-11-22T10:15:30.123Z
    const NOV_22: u64 = 1_795_342_530_123;
    /// 2026-02-10T00:00:00.000Z
    const FEB_10: u64 = 1_770_681_600_000;

    fn quota(limit: u64, used: u64, reserved: u64, period: QuotaPeriod, now_ms: u64) -> QuotaView {
        QuotaView {
            limit,
            used,
            reserved,
            remaining: limit.saturating_sub(used + reserved),
            refunded: 0,
            by_operation: ByOperation::default(),
            period,
            period_start_ms: period_start_ms(now_ms, period),
            period_end_ms: period_end_ms(now_ms, period),
        }
    }

    fn rate(per_s: u32, burst: u32) -> RateLimit {
        RateLimit::new(per_s, burst).expect("valid test limit")
    }

    #[test]
    fn policy_values() {
        use QuotaPeriod::{Day, Month};
        let cases = [
            (rate(50, 100), quota(10_000, 0, 0, Month, NOV_22), "\"rate\";q=100;w=2, \"quota\";q=10000;w=2592000"),
            (rate(50, 1), quota(10, 0, 0, Day, NOV_22), "\"rate\";q=1;w=1, \"quota\";q=10;w=86400"),
            (rate(3, 10), quota(5, 0, 0, Month, FEB_10), "\"rate\";q=10;w=4, \"quota\";q=5;w=2419200"),
            (rate(1, 1), quota(0, 0, 0, Month, 0), "\"rate\";q=1;w=1, \"quota\";q=0;w=2678400"),
        ];
        for (r, q, want) in cases {
            assert_eq!(policy_value(r, &q), want);
        }
    }

    #[test]
    fn ratelimit_values() {
        use QuotaPeriod::{Day, Month};
        let state = |remaining_tokens, reset_s| RateState { remaining_tokens, reset_s };
        // Nov 22 10:15:30.123 → Dec 1 00:00: 8 days 13 h 44 min 29.877 s → 740670 s rounded up.
        let cases = [
            (state(99, 1), quota(10_000, 12, 0, Month, NOV_22), NOV_22, "\"rate\";r=99;t=1, \"quota\";r=9988;t=740670"),
            (state(0, 2), quota(10, 9, 1, Day, NOV_22), NOV_22, "\"rate\";r=0;t=2, \"quota\";r=0;t=49470"),
            (state(5, 0), quota(10, 12, 0, Day, NOV_22), NOV_22, "\"rate\";r=5;t=0, \"quota\";r=0;t=49470"),
        ];
        for (s, q, now, want) in cases {
            assert_eq!(ratelimit_value(s, &q, now), want);
        }
        let headers = RateLimitHeaders::new(rate(50, 100), state(99, 1), &quota(10_000, 12, 0, Month, NOV_22), NOV_22);
        assert_eq!(headers.current, "\"rate\";r=99;t=1, \"quota\";r=9988;t=740670");
        assert_eq!(headers.policy, "\"rate\";q=100;w=2, \"quota\";q=10000;w=2592000");
    }

    #[test]
    fn retry_after_values() {
        let limited = RateDecision { allowed: false, remaining_tokens: 0, reset_s: 3, retry_after_s: 1 };
        assert_eq!(retry_after_rate_s(&limited), 1);
        let odd = RateDecision { retry_after_s: 0, ..limited };
        assert_eq!(retry_after_rate_s(&odd), 1, "never 0");
        let exhausted = QuotaExhausted { limit: 10, used: 10, reserved: 0, resets_at_ms: 10_500, needed: 1 };
        let cases = [(0, 11), (10_499, 1), (10_500, 1), (20_000, 1)];
        for (now, want) in cases {
            assert_eq!(retry_after_quota_s(&exhausted, now), want, "at {now}");
        }
    }
}
