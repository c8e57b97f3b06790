//! The two clocks the request path reads, once per request, and hands to the pure limiters.
//!
//! Owns: `MonotonicClock` (nanoseconds since a process-wide origin, for token buckets) and
//! `now_unix_ms` (wall time, for quota periods, expiry and timestamps). Created once at server
//! start and shared by every thread (it is `Copy`).
//!
//! Invariant: `MonotonicClock::now_ns` never goes backwards for a given clock and starts near 0,
//! so a fresh GCRA cell (theoretical arrival time 0) is a full bucket.
//! Deliberately absent: any caching of "now"; the callers read it once per request.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Monotonic nanoseconds since the clock was created (the process start, in the server).
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    pub fn new() -> Self {
        Self { origin: Instant::now() }
    }

    /// Nanoseconds since the origin; saturates after ~584 years of uptime.
    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

/// Wall-clock milliseconds since the Unix epoch; 0 if the system clock is before 1970.
pub fn now_unix_ms() -> i64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_millis()).unwrap_or(i64::MAX),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monotonic_clock_starts_near_zero_and_advances() {
        let clock = MonotonicClock::new();
        let a = clock.now_ns();
        let b = clock.now_ns();
        assert!(a < 1_000_000_000, "origin is creation time");
        assert!(b >= a);
    }

    #[test]
    fn wall_clock_is_after_2024() {
        assert!(now_unix_ms() > 1_704_067_200_000);
    }
}
