//! Metering of authenticated work: the per-key token bucket, the per-IP limiter for failed
//! authentication, the per-key calendar quota, and the rate-limit header values of the wire
//! contract (§6).
//!
//! Owns: `rate` (GCRA cell in one `AtomicU64`), `ip` (fixed table of GCRA cells keyed by a
//! hashed client address), `quota` (calendar periods and the in-memory quota counter),
//! `headers` (`RateLimit-Policy`, `RateLimit`, `Retry-After` strings), `clock` (the two clocks
//! the server reads and passes in). Called from every listener thread on the request path and
//! from compute threads when a job ends (quota commit/release).
//!
//! Invariant: nothing here reads a clock except `clock`; every other function takes "now" as an
//! argument (`now_ns` monotonic, `now_unix_ms` wall), so all of it is testable without sleeping.
//! Invariant: no mutex and no allocation on the request path of `rate` and `ip`; `quota` allocates
//! only when a calendar period rolls over.
//! Deliberately absent: persistence (the store derives `store::UsageRecord`s from job records) and HTTP types (the
//! edge turns the strings of `headers` into header values).

pub mod clock;
pub mod headers;
pub mod ip;
pub mod quota;
pub mod rate;

pub use clock::MonotonicClock;
pub use ip::IpFailureLimiter;
pub use quota::{Operation, QuotaCounter, QuotaExhausted, QuotaPeriod, QuotaView, Reservation};
pub use rate::{RateCell, RateDecision, RateLimit, RateLimitError, RateState};
