//! The per-key token bucket, as GCRA (generic cell rate algorithm) in one `AtomicU64`.
//!
//! Owns: `RateLimit` (validated `ratePerSecond` + `burst`), `RateCell` (one key's bucket, shared
//! by all threads through the key table), and the GCRA arithmetic that `ip` reuses on its own
//! cells. Called from every listener thread on every authenticated request.
//!
//! How it works: a cell stores the theoretical arrival time `tat_ns` (nanoseconds on the
//! process's monotonic clock). Each token is an emission interval `interval_ns` = ⌈1 s / rate⌉;
//! the bucket holds `burst` tokens, i.e. a tolerance of `burst × interval_ns`. A request at `now`
//! is admitted iff `max(tat, now) + interval − now ≤ tolerance`, and then `tat` becomes
//! `max(tat, now) + interval`. The bucket is full when `tat ≤ now`.
//!
//! Invariant: over any span of `L` ns starting from a full bucket, a cell admits at most
//! `burst + ⌊L / interval_ns⌋` requests, whatever the number of threads (the compare-and-swap
//! loop only ever moves `tat` forward by one interval per admitted request).
//! Invariant: a refused request does not change `tat` (GCRA charges nothing for a refusal).
//! Invariant: `interval_ns` is rounded up, so a rate that does not divide 1 s is honoured from
//! below (e.g. 3/s admits one every 333 333 334 ns), never above.
//! Deliberately absent: locks, allocation, and clock reads (`now_ns` is an argument).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::{BURST_MAX, RATE_PER_SECOND_MAX};
use thiserror::Error;

/// Nanoseconds per second.
pub const NS_PER_S: u64 = 1_000_000_000;

/// Why a rate limit was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum RateLimitError {
    #[error("ratePerSecond must be 1..={RATE_PER_SECOND_MAX}")]
    RateOutOfRange,
    #[error("burst must be 1..={BURST_MAX}")]
    BurstOutOfRange,
}

/// A validated rate limit: `rate_per_second` refill, `burst` capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    rate_per_second: u32,
    burst: u32,
}

impl RateLimit {
    /// `const` so that defaults can be checked at compile time.
    pub const fn new(rate_per_second: u32, burst: u32) -> Result<Self, RateLimitError> {
        if rate_per_second == 0 || rate_per_second > RATE_PER_SECOND_MAX {
            return Err(RateLimitError::RateOutOfRange);
        }
        if burst == 0 || burst > BURST_MAX {
            return Err(RateLimitError::BurstOutOfRange);
        }
        Ok(Self { rate_per_second, burst })
    }

    pub fn rate_per_second(self) -> u32 {
        self.rate_per_second
    }

    pub fn burst(self) -> u32 {
        self.burst
    }

    /// Time one token takes to refill, rounded up.
    pub fn interval_ns(self) -> u64 {
        NS_PER_S.div_ceil(u64::from(self.rate_per_second))
    }

    /// The bucket's depth in time: at most 10^9 × 10^6 ns, far below u64::MAX.
    fn tolerance_ns(self) -> u64 {
        self.interval_ns() * u64::from(self.burst)
    }

    /// One node's share of a limit enforced by `nodes` nodes together (a cluster): rate and
    /// burst divided, rounded up, at least 1 — so the cluster as a whole admits at most
    /// `nodes − 1` more per second (and per burst) than the limit, never fewer.
    pub fn share(self, nodes: u32) -> RateLimit {
        let nodes = nodes.max(1);
        RateLimit { rate_per_second: self.rate_per_second.div_ceil(nodes), burst: self.burst.div_ceil(nodes) }
    }

    /// `w` of the `"rate"` policy: ⌈burst / ratePerSecond⌉ seconds.
    pub fn window_s(self) -> u32 {
        self.burst.div_ceil(self.rate_per_second)
    }
}

/// The bucket as seen at one instant, without consuming a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateState {
    /// Whole tokens available now.
    pub remaining_tokens: u32,
    /// Seconds until the bucket is full again (0 when full).
    pub reset_s: u32,
}

/// The outcome of one request against a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub allowed: bool,
    /// Whole tokens left after this request (0 when refused).
    pub remaining_tokens: u32,
    /// Seconds until the bucket is full again.
    pub reset_s: u32,
    /// When refused: whole seconds until one token is available, at least 1; 0 when allowed.
    pub retry_after_s: u32,
}

impl RateDecision {
    /// The remaining/reset part, for the `RateLimit` header.
    pub fn state(self) -> RateState {
        RateState { remaining_tokens: self.remaining_tokens, reset_s: self.reset_s }
    }
}

/// Whole seconds covering `ns`, rounded up, saturating at u32::MAX.
fn ceil_s(ns: u64) -> u32 {
    u32::try_from(ns.div_ceil(NS_PER_S)).unwrap_or(u32::MAX)
}

/// The bucket described by `tat_ns` at `now_ns`.
pub(crate) fn state_at(limit: RateLimit, tat_ns: u64, now_ns: u64) -> RateState {
    let backlog_ns = tat_ns.saturating_sub(now_ns);
    let free_ns = limit.tolerance_ns().saturating_sub(backlog_ns);
    // free_ns / interval ≤ burst ≤ BURST_MAX, so the conversion cannot fail.
    let remaining_tokens = u32::try_from(free_ns / limit.interval_ns()).unwrap_or(u32::MAX);
    RateState { remaining_tokens, reset_s: ceil_s(backlog_ns) }
}

/// One GCRA step on `tat`: admit and move `tat` forward, or refuse and leave it.
///
/// Lock-free: a failed compare-and-swap means another thread admitted a request, so the loop
/// makes global progress; each retry re-reads `tat` and re-decides.
pub(crate) fn admit(limit: RateLimit, tat: &AtomicU64, now_ns: u64) -> RateDecision {
    let interval_ns = limit.interval_ns();
    let tolerance_ns = limit.tolerance_ns();
    // Relaxed is enough: the cell publishes no other data, and the CAS orders its own updates.
    let mut current = tat.load(Ordering::Relaxed);
    loop {
        let next = current.max(now_ns).saturating_add(interval_ns);
        let backlog_ns = next - now_ns; // next > now_ns: interval_ns ≥ 1
        if backlog_ns > tolerance_ns {
            return refused(limit, current, now_ns);
        }
        match tat.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => {
                let state = state_at(limit, next, now_ns);
                return RateDecision {
                    allowed: true,
                    remaining_tokens: state.remaining_tokens,
                    reset_s: state.reset_s,
                    retry_after_s: 0,
                };
            }
            Err(seen) => current = seen,
        }
    }
}

/// What a request of several items (a batch) got from a bucket: the first `granted` items
/// have their token, the rest are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub granted: u32,
    /// When some were refused: whole seconds until the bucket holds tokens for all of them
    /// (at most a full bucket), at least 1; 0 when every item was granted.
    pub retry_after_s: u32,
}

/// GCRA for `wanted` tokens at once: as many as the bucket holds now, in one step on `tat`.
/// Lock-free like `admit` (a failed compare-and-swap re-reads and re-decides).
pub(crate) fn admit_up_to(limit: RateLimit, tat: &AtomicU64, wanted: u32, now_ns: u64) -> Grant {
    let interval_ns = limit.interval_ns();
    let mut current = tat.load(Ordering::Relaxed);
    loop {
        let granted = state_at(limit, current, now_ns).remaining_tokens.min(wanted);
        let next = current.max(now_ns).saturating_add(u64::from(granted) * interval_ns);
        if granted == 0 || tat.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            let refused = (wanted - granted).min(limit.burst());
            let retry_after_s = if refused == 0 {
                0
            } else {
                // `refused` more tokens are there once max(tat, now) + refused × interval − now
                // ≤ tolerance.
                let at_ns = next.max(now_ns) + u64::from(refused) * interval_ns;
                ceil_s(at_ns.saturating_sub(limit.tolerance_ns()).saturating_sub(now_ns)).max(1)
            };
            return Grant { granted, retry_after_s };
        }
        current = tat.load(Ordering::Relaxed);
    }
}

/// GCRA for exactly `wanted` tokens at once: all of them when the bucket holds them, else none
/// (and the wait until it holds them, at most a full bucket's).
pub(crate) fn admit_all(limit: RateLimit, tat: &AtomicU64, wanted: u32, now_ns: u64) -> Grant {
    let interval_ns = limit.interval_ns();
    let mut current = tat.load(Ordering::Relaxed);
    loop {
        if state_at(limit, current, now_ns).remaining_tokens < wanted {
            let at_ns = current.max(now_ns) + u64::from(wanted.min(limit.burst())) * interval_ns;
            let retry_after_s = ceil_s(at_ns.saturating_sub(limit.tolerance_ns()).saturating_sub(now_ns)).max(1);
            return Grant { granted: 0, retry_after_s };
        }
        let next = current.max(now_ns).saturating_add(u64::from(wanted) * interval_ns);
        if tat.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            return Grant { granted: wanted, retry_after_s: 0 };
        }
        current = tat.load(Ordering::Relaxed);
    }
}

fn refused(limit: RateLimit, tat_ns: u64, now_ns: u64) -> RateDecision {
    RateDecision {
        allowed: false,
        remaining_tokens: 0,
        reset_s: ceil_s(tat_ns.saturating_sub(now_ns)),
        retry_after_s: retry_after_s(limit, tat_ns, now_ns),
    }
}

/// Whole seconds until one token is back, at least 1 (a `Retry-After` of 0 invites a spin).
pub(crate) fn retry_after_s(limit: RateLimit, tat_ns: u64, now_ns: u64) -> u32 {
    // One token is back when max(tat, now) + interval − now ≤ tolerance, i.e. at
    // tat + interval − tolerance.
    let token_at_ns = tat_ns.saturating_add(limit.interval_ns()).saturating_sub(limit.tolerance_ns());
    ceil_s(token_at_ns.saturating_sub(now_ns)).max(1)
}

/// One key's token bucket, shared by every thread that serves the key.
///
/// Aligned to a cache line so that two hot keys never share one.
#[derive(Debug)]
#[repr(align(64))]
pub struct RateCell {
    limit: RateLimit,
    tat_ns: AtomicU64,
    limited_total: AtomicU64,
}

impl RateCell {
    /// A full bucket (for any `now_ns` ≥ 0 of the process clock).
    pub fn new(limit: RateLimit) -> Self {
        Self { limit, tat_ns: AtomicU64::new(0), limited_total: AtomicU64::new(0) }
    }

    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Spends one token if there is one; counts the request as limited if not.
    pub fn check(&self, now_ns: u64) -> RateDecision {
        let decision = admit(self.limit, &self.tat_ns, now_ns);
        if !decision.allowed {
            self.limited_total.fetch_add(1, Ordering::Relaxed);
        }
        decision
    }

    /// Spends exactly `wanted` tokens (a sequence scan's transactions past its first), or none
    /// when the bucket holds fewer (counted as one limited request).
    pub fn take_all(&self, wanted: u32, now_ns: u64) -> Grant {
        let grant = admit_all(self.limit, &self.tat_ns, wanted, now_ns);
        if grant.granted < wanted {
            self.limited_total.fetch_add(1, Ordering::Relaxed);
        }
        grant
    }

    /// Spends up to `wanted` tokens (a batch's items past its first, whose token `check` took):
    /// as many as there are. Each refused item counts as a limited request.
    pub fn take_up_to(&self, wanted: u32, now_ns: u64) -> Grant {
        let grant = admit_up_to(self.limit, &self.tat_ns, wanted, now_ns);
        self.limited_total.fetch_add(u64::from(wanted - grant.granted), Ordering::Relaxed);
        grant
    }

    /// Spends `tokens` for work already done (a scan that cost its listener thread more than
    /// one token's worth: `Lane::extra_tokens`). Never refuses: the bucket may go empty and
    /// into debt, at most one full bucket deep, so the key's next requests wait for it.
    pub fn charge(&self, tokens: u32, now_ns: u64) {
        if tokens == 0 {
            return;
        }
        let (interval_ns, tolerance_ns) = (self.limit.interval_ns(), self.limit.tolerance_ns());
        let deepest = now_ns.saturating_add(2 * tolerance_ns);
        let mut current = self.tat_ns.load(Ordering::Relaxed);
        loop {
            // Forward only, and never past one bucket of debt.
            let wanted = current.max(now_ns).saturating_add(u64::from(tokens) * interval_ns);
            let next = wanted.min(deepest).max(current);
            if next == current {
                return;
            }
            match self.tat_ns.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    /// The bucket now, without spending a token.
    pub fn peek(&self, now_ns: u64) -> RateState {
        state_at(self.limit, self.tat_ns.load(Ordering::Relaxed), now_ns)
    }

    /// Requests refused by this bucket since the process started (the usage endpoint's
    /// `limitedRequests`; not persisted).
    pub fn limited_requests(&self) -> u64 {
        self.limited_total.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn work_charged_after_the_fact_empties_the_bucket_at_most_one_bucket_into_debt() {
        let cell = RateCell::new(RateLimit::new(10, 5).unwrap());
        let interval = cell.limit().interval_ns();
        assert!(cell.check(0).allowed);
        cell.charge(2, 0);
        assert_eq!(cell.peek(0).remaining_tokens, 2, "5 - 1 - 2");
        // Far more than the bucket holds: five tokens' debt at most, so the key waits for the
        // five it owes and then one to spend.
        cell.charge(1_000, 0);
        assert_eq!(cell.peek(0).remaining_tokens, 0);
        assert!(!cell.check(5 * interval).allowed, "still in debt");
        assert!(cell.check(6 * interval).allowed, "one bucket of debt, then one token");
        cell.charge(0, 6 * interval);
        assert_eq!(cell.peek(6 * interval).remaining_tokens, 0, "nothing charged, nothing changed");
    }

    #[test]
    fn a_share_divides_rounding_up_and_never_reaches_zero() {
        let limit = RateLimit::new(10, 20).unwrap();
        assert_eq!(limit.share(1), limit);
        assert_eq!(limit.share(0), limit);
        let third = limit.share(3);
        assert_eq!((third.rate_per_second(), third.burst()), (4, 7));
        let tiny = RateLimit::new(1, 1).unwrap().share(3);
        assert_eq!((tiny.rate_per_second(), tiny.burst()), (1, 1));
    }

    const MS: u64 = 1_000_000;

    fn limit(rate: u32, burst: u32) -> RateLimit {
        RateLimit::new(rate, burst).expect("valid test limit")
    }

    #[test]
    fn limits_are_validated() {
        let cases = [
            (0, 1, Err(RateLimitError::RateOutOfRange)),
            (RATE_PER_SECOND_MAX + 1, 1, Err(RateLimitError::RateOutOfRange)),
            (1, 0, Err(RateLimitError::BurstOutOfRange)),
            (1, BURST_MAX + 1, Err(RateLimitError::BurstOutOfRange)),
            (RATE_PER_SECOND_MAX, BURST_MAX, Ok(())),
            (1, 1, Ok(())),
        ];
        for (rate, burst, want) in cases {
            assert_eq!(RateLimit::new(rate, burst).map(|_| ()), want, "rate {rate} burst {burst}");
        }
    }

    #[test]
    fn interval_and_window_round_up() {
        let cases =
            [(1, 1, 1_000_000_000, 1), (50, 100, 20_000_000, 2), (3, 1, 333_333_334, 1), (50, 1, 20_000_000, 1)];
        for (rate, burst, interval_ns, window_s) in cases {
            let l = limit(rate, burst);
            assert_eq!(l.interval_ns(), interval_ns, "rate {rate}");
            assert_eq!(l.window_s(), window_s, "rate {rate} burst {burst}");
        }
    }

    #[test]
    fn burst_then_refill_timing_is_exact() {
        // 10/s (100 ms per token), burst 5.
        let cell = RateCell::new(limit(10, 5));
        assert_eq!(cell.peek(0), RateState { remaining_tokens: 5, reset_s: 0 });
        for left in (0..5).rev() {
            let d = cell.check(0);
            assert!(d.allowed);
            assert_eq!(d.remaining_tokens, left);
            assert_eq!(d.retry_after_s, 0);
        }
        let refused = cell.check(0);
        assert_eq!(refused, RateDecision { allowed: false, remaining_tokens: 0, reset_s: 1, retry_after_s: 1 });
        assert_eq!(cell.limited_requests(), 1);
        // One ns short of a token: still refused.
        assert!(!cell.check(100 * MS - 1).allowed);
        // Exactly one token later.
        let d = cell.check(100 * MS);
        assert!(d.allowed);
        assert_eq!(d.remaining_tokens, 0);
        assert!(!cell.check(100 * MS).allowed);
        // tat is now 600 ms: at 600 ms the bucket is full again.
        assert_eq!(cell.peek(599 * MS), RateState { remaining_tokens: 4, reset_s: 1 });
        assert_eq!(cell.peek(600 * MS), RateState { remaining_tokens: 5, reset_s: 0 });
        assert_eq!(cell.check(600 * MS).remaining_tokens, 4);
        assert_eq!(cell.limited_requests(), 3);
    }

    #[test]
    fn contract_example_first_request_leaves_99() {
        let cell = RateCell::new(limit(50, 100));
        let d = cell.check(5 * NS_PER_S);
        assert_eq!((d.allowed, d.remaining_tokens, d.reset_s), (true, 99, 1));
    }

    #[test]
    fn retry_after_counts_whole_seconds_until_one_token() {
        // Rate 1, burst 3, emptied at t=0: the next token is back at 1 s, full at 3 s.
        let cell = RateCell::new(limit(1, 3));
        for _ in 0..3 {
            assert!(cell.check(0).allowed);
        }
        let cases = [(0, 1, 3), (NS_PER_S / 2, 1, 3), (NS_PER_S - 1, 1, 3)];
        for (now, retry, reset) in cases {
            let d = cell.check(now);
            assert_eq!((d.allowed, d.retry_after_s, d.reset_s), (false, retry, reset), "at {now} ns");
        }
        // A refused request waits at most one interval, and rate ≥ 1/s makes that ≤ 1 s: with
        // whole seconds, Retry-After of a key's bucket is always 1.
        let fast = RateCell::new(limit(RATE_PER_SECOND_MAX, 1));
        assert!(fast.check(0).allowed);
        assert_eq!(fast.check(0).retry_after_s, 1);
    }

    #[test]
    fn a_batch_takes_what_the_bucket_holds_and_says_when_the_rest_is_there() {
        // 10/s (100 ms per token), burst 5.
        let cell = RateCell::new(limit(10, 5));
        assert!(cell.check(0).allowed, "the batch's own token");
        assert_eq!(cell.take_up_to(2, 0), Grant { granted: 2, retry_after_s: 0 });
        assert_eq!(cell.peek(0).remaining_tokens, 2);
        // Two left of the seven wanted: five refused, there in 500 ms → 1 s.
        assert_eq!(cell.take_up_to(7, 0), Grant { granted: 2, retry_after_s: 1 });
        assert_eq!(cell.limited_requests(), 5);
        assert_eq!(cell.take_up_to(3, 0), Grant { granted: 0, retry_after_s: 1 });
        assert!(!cell.check(0).allowed, "the bucket is empty");
        // 250 ms later two tokens are back; 99 wanted: the rest needs a full bucket (500 ms).
        assert_eq!(cell.take_up_to(99, 250 * MS), Grant { granted: 2, retry_after_s: 1 });
        assert_eq!(cell.take_up_to(0, 250 * MS), Grant { granted: 0, retry_after_s: 0 });
        let slow = RateCell::new(limit(1, 3));
        assert_eq!(slow.take_up_to(10, 0), Grant { granted: 3, retry_after_s: 3 });
    }

    #[test]
    fn a_sequence_takes_all_its_tokens_or_none() {
        // 1/s, burst 5: the request's own token, then four more.
        let cell = RateCell::new(limit(1, 5));
        assert!(cell.check(0).allowed);
        assert_eq!(cell.take_all(4, 0), Grant { granted: 4, retry_after_s: 0 });
        assert!(!cell.check(0).allowed, "the bucket is empty");
        // Two seconds on, two tokens: three wanted are refused whole, nothing spent, and the
        // wait is for all three.
        assert_eq!(cell.take_all(3, 2_000 * MS), Grant { granted: 0, retry_after_s: 1 });
        assert_eq!(cell.peek(2_000 * MS).remaining_tokens, 2, "nothing spent");
        assert_eq!(cell.take_all(2, 2_000 * MS), Grant { granted: 2, retry_after_s: 0 });
        assert_eq!(cell.take_all(0, 2_000 * MS), Grant { granted: 0, retry_after_s: 0 });
    }

    #[test]
    fn refusal_does_not_move_the_bucket() {
        let cell = RateCell::new(limit(1, 1));
        assert!(cell.check(0).allowed);
        for _ in 0..1_000 {
            assert!(!cell.check(NS_PER_S / 2).allowed);
        }
        assert!(cell.check(NS_PER_S).allowed);
    }

    #[test]
    fn clock_reads_out_of_order_between_threads_stay_within_the_bound() {
        let cell = RateCell::new(limit(10, 3));
        // A thread that read an older "now" after another wrote: max(tat, now) protects it.
        assert!(cell.check(1_000 * MS).allowed);
        assert!(cell.check(900 * MS).allowed);
        assert!(!cell.check(900 * MS).allowed);
    }

    /// Admitted requests from many threads sharing a synthetic time series, against the bound
    /// n ≤ burst + ⌊t_max / interval⌋.
    #[test]
    fn concurrent_threads_never_exceed_burst_plus_refill() {
        let l = limit(1_000, 50);
        let cell = RateCell::new(l);
        let steps: u64 = 20_000;
        let step_ns = 10_000; // 10 µs: 100 steps per token
        let admitted: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..steps).filter(|i| cell.check(i * step_ns).allowed).count() as u64))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(u64::MAX)).sum()
        });
        let t_max = (steps - 1) * step_ns;
        let bound = u64::from(l.burst()) + t_max / l.interval_ns();
        assert!(admitted <= bound, "admitted {admitted} > bound {bound}");
        assert!(admitted >= bound - 1, "admitted {admitted}: tokens were lost (bound {bound})");
        assert_eq!(cell.limited_requests() + admitted, 4 * steps);
    }

    #[test]
    fn concurrent_threads_on_the_real_clock_stay_within_the_bound() {
        let l = limit(10_000, 20);
        let cell = RateCell::new(l);
        let clock = crate::clock::MonotonicClock::new();
        let admitted: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(|| (0..20_000).filter(|_| cell.check(clock.now_ns()).allowed).count() as u64))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(u64::MAX)).sum()
        });
        let elapsed_ns = clock.now_ns();
        let bound = u64::from(l.burst()) + elapsed_ns / l.interval_ns();
        assert!(admitted <= bound, "admitted {admitted} > bound {bound}");
    }

    proptest! {
        /// For any nondecreasing arrival times, every window [t_i, t_j] holds at most
        /// burst + ⌊(t_j − t_i) / interval⌋ admitted requests.
        #[test]
        fn any_window_admits_at_most_burst_plus_refill(
            rate in 1u32..200,
            burst in 1u32..20,
            gaps in proptest::collection::vec(0u64..50_000_000, 1..200),
        ) {
            let l = limit(rate, burst);
            let cell = RateCell::new(l);
            let mut now = 0u64;
            let mut admitted_at = Vec::new();
            for gap in gaps {
                now += gap;
                if cell.check(now).allowed {
                    admitted_at.push(now);
                }
            }
            for i in 0..admitted_at.len() {
                for j in i..admitted_at.len() {
                    let n = (j - i + 1) as u64;
                    let bound = u64::from(burst) + (admitted_at[j] - admitted_at[i]) / l.interval_ns();
                    prop_assert!(n <= bound, "{n} admitted in window {i}..={j}, bound {bound}");
                }
            }
        }

        /// Batches (`take_up_to`) mixed with single requests keep the same bound per token.
        #[test]
        fn batches_admit_at_most_burst_plus_refill(
            rate in 1u32..200,
            burst in 1u32..20,
            steps in proptest::collection::vec((0u64..50_000_000, 0u32..8), 1..200),
        ) {
            let l = limit(rate, burst);
            let cell = RateCell::new(l);
            let mut now = 0u64;
            let mut admitted_at = Vec::new();
            for (gap, items) in steps {
                now += gap;
                let granted = if items == 0 { u32::from(cell.check(now).allowed) } else { cell.take_up_to(items, now).granted };
                admitted_at.extend(std::iter::repeat_n(now, granted as usize));
            }
            for i in 0..admitted_at.len() {
                let j = admitted_at.len() - 1;
                let n = (j - i + 1) as u64;
                let bound = u64::from(burst) + (admitted_at[j] - admitted_at[i]) / l.interval_ns();
                prop_assert!(n <= bound, "{n} tokens in window {i}..={j}, bound {bound}");
            }
        }

        /// peek never disagrees with check about whether a token is there.
        #[test]
        fn peek_predicts_check(rate in 1u32..100, burst in 1u32..10, times in proptest::collection::vec(0u64..3_000_000_000, 1..50)) {
            let cell = RateCell::new(limit(rate, burst));
            let mut sorted = times;
            sorted.sort_unstable();
            for now in sorted {
                let before = cell.peek(now);
                let d = cell.check(now);
                prop_assert_eq!(d.allowed, before.remaining_tokens > 0);
                if d.allowed {
                    prop_assert_eq!(d.remaining_tokens, before.remaining_tokens - 1);
                }
            }
        }
    }
}
