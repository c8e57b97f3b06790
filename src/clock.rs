//! Time: the two clocks the request path reads (once per request, handed to the pure limiters)
//! and the contract's timestamp format.
//!
//! Owns: `MonotonicClock` (nanoseconds since a process-wide origin, for token buckets),
//! `now_unix_ms` (wall time, for quota periods, expiry and timestamps), and RFC 3339 with
//! milliseconds (`rfc3339_ms`, `parse_rfc3339_ms`) with the range they accept. Created once at server
//! start and shared by every thread (it is `Copy`). Also `Every`: a period on the monotonic
//! clock that background threads ask "is it time again?" (the cluster's periodic reloads).
//!
//! Invariant: `MonotonicClock::now_ns` never goes backwards for a given clock and starts near 0,
//! so a fresh GCRA cell (theoretical arrival time 0) is a full bucket.
//! Deliberately absent: any caching of "now"; the callers read it once per request.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;

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

/// A period on the monotonic clock, started when made: `due` answers true once each time it
/// has passed, and starts it again. Shared by threads (a lock held for one comparison).
#[derive(Debug)]
pub struct Every {
    period: Duration,
    started: parking_lot::Mutex<Instant>,
}

impl Every {
    pub fn new(period: Duration) -> Every {
        Every { period, started: parking_lot::Mutex::new(Instant::now()) }
    }

    /// True when the period has passed since it last started; it then starts again.
    pub fn due(&self) -> bool {
        let mut started = self.started.lock();
        if started.elapsed() < self.period {
            return false;
        }
        *started = Instant::now();
        true
    }

    /// Whether the period has passed, without starting it again (`restart` does).
    pub fn has_passed(&self) -> bool {
        self.started.lock().elapsed() >= self.period
    }

    pub fn restart(&self) {
        *self.started.lock() = Instant::now();
    }
}

/// Wall-clock milliseconds since the Unix epoch; 0 if the system clock is before 1970.
/// Every wall time of the crate is this: `u64` Unix milliseconds, named `…_ms`.
pub fn now_unix_ms() -> u64 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        // Saturates after 584 million years.
        Ok(since) => u64::try_from(since.as_millis()).unwrap_or(u64::MAX),
        Err(_) => 0,
    }
}

/// Latest wall time the calendar math accepts: 9998-12-31T23:59:59.999Z, so that the end of
/// any period is still a four-digit year; later instants are clamped to it.
pub const UNIX_MS_MAX: u64 = 253_370_764_799_999;

pub fn clamp_ms(unix_ms: u64) -> u64 {
    unix_ms.min(UNIX_MS_MAX)
}

/// The UTC date-time of a clamped instant. Infallible: the clamped range is within `time`'s
/// (and within `i64` seconds), so the epoch fallback is never taken.
pub fn datetime(unix_ms: u64) -> OffsetDateTime {
    let seconds = i64::try_from(clamp_ms(unix_ms) / 1_000).unwrap_or(0);
    OffsetDateTime::from_unix_timestamp(seconds).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

/// Bytes of every `rfc3339_ms` text: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub const RFC3339_MS_LEN: usize = 24;

/// The contract's timestamp: RFC 3339 UTC with milliseconds, e.g. `2026-11-22T10:15:30.123Z`.
/// Instants after 9998 are clamped to its end.
pub fn rfc3339_ms(unix_ms: u64) -> String {
    let bytes = rfc3339_ms_bytes(unix_ms);
    // Every byte written by `rfc3339_ms_bytes` is an ASCII digit or one of `-T:.Z`.
    std::str::from_utf8(&bytes).unwrap_or_default().to_owned()
}

/// `rfc3339_ms` into a fixed array, without the formatting machinery: the status, usage and
/// poll bodies write several timestamps per request.
pub fn rfc3339_ms_bytes(unix_ms: u64) -> [u8; RFC3339_MS_LEN] {
    let unix_ms = clamp_ms(unix_ms);
    let t = datetime(unix_ms);
    let mut out = *b"0000-00-00T00:00:00.000Z";
    // Clamping keeps the year within 1970..=9998, so it has four digits.
    let year = u32::try_from(t.year()).unwrap_or(0);
    put_digits(&mut out[0..4], year);
    put_digits(&mut out[5..7], u32::from(u8::from(t.month())));
    put_digits(&mut out[8..10], u32::from(t.day()));
    put_digits(&mut out[11..13], u32::from(t.hour()));
    put_digits(&mut out[14..16], u32::from(t.minute()));
    put_digits(&mut out[17..19], u32::from(t.second()));
    put_digits(&mut out[20..23], u32::try_from(unix_ms % 1_000).unwrap_or(0));
    out
}

/// Writes `value`'s last `slot.len()` decimal digits into `slot`, zero-padded.
fn put_digits(slot: &mut [u8], mut value: u32) {
    for digit in slot.iter_mut().rev() {
        // `value % 10` is below 10, so the cast cannot truncate.
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

/// Parses an RFC 3339 timestamp (any offset, optional fraction) into Unix milliseconds;
/// `None` for text that is not one and for instants before 1970.
pub fn parse_rfc3339_ms(text: &str) -> Option<u64> {
    let t = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339).ok()?;
    u64::try_from(t.unix_timestamp_nanos() / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOV_22: u64 = 1_795_342_530_123;

    #[test]
    fn every_is_due_once_per_period_and_restarts() {
        let hourly = Every::new(Duration::from_secs(3_600));
        assert!(!hourly.due() && !hourly.has_passed(), "not before its period");
        let always = Every::new(Duration::ZERO);
        assert!(always.has_passed() && always.due() && always.due());
        let short = Every::new(Duration::from_millis(20));
        std::thread::sleep(Duration::from_millis(30));
        assert!(short.has_passed() && short.has_passed(), "asking does not restart it");
        short.restart();
        assert!(!short.has_passed() && !short.due());
        std::thread::sleep(Duration::from_millis(30));
        assert!(short.due() && !short.due(), "due once, then started again");
    }

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

    #[test]
    fn rfc3339_parsing_reads_what_formatting_writes_and_offsets() {
        for ms in [0, 1_763_806_530_123, 1_798_761_599_999] {
            assert_eq!(parse_rfc3339_ms(&rfc3339_ms(ms)), Some(ms));
        }
        assert_eq!(parse_rfc3339_ms("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(parse_rfc3339_ms("2027-01-01"), None);
        assert_eq!(parse_rfc3339_ms("tomorrow"), None);
        assert_eq!(parse_rfc3339_ms("1969-12-31T23:59:59Z"), None, "before the epoch");
    }

    #[test]
    fn rfc3339_formatting() {
        let cases = [
            (NOV_22, "2026-11-22T10:15:30.123Z"),
            (0, "1970-01-01T00:00:00.000Z"),
            (1_709_164_800_007, "2024-02-29T00:00:00.007Z"),
            (UNIX_MS_MAX, "9998-12-31T23:59:59.999Z"),
            (u64::MAX, "9998-12-31T23:59:59.999Z"),
        ];
        for (unix_ms, text) in cases {
            assert_eq!(rfc3339_ms(unix_ms), text, "{unix_ms}");
        }
    }

    proptest::proptest! {
        /// The digit writer's text, read back by the `time` crate's RFC 3339 parser, is the
        /// instant it was given, over the whole range.
        #[test]
        fn rfc3339_digits_read_back_as_the_same_instant(unix_ms in 0..=UNIX_MS_MAX) {
            let ours = rfc3339_ms(unix_ms);
            proptest::prop_assert_eq!(ours.len(), RFC3339_MS_LEN);
            proptest::prop_assert_eq!(parse_rfc3339_ms(&ours), Some(unix_ms));
        }
    }
}
