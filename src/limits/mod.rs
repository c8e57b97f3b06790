//! Metering of authenticated work: the per-key token bucket, the per-IP limiter for failed
//! authentication, the per-key calendar quota, and the rate-limit header values of the wire
//! contract (§6).
//!
//! Owns: `rate` (GCRA cell in one `AtomicU64`), `ip` (fixed table of GCRA cells keyed by a
//! hashed client address), `quota` (calendar periods and the in-memory quota counter),
//! `headers` (`RateLimit-Policy`, `RateLimit`, `Retry-After` strings). Called from every listener thread on the request path and
//! from compute threads when a job ends (quota commit/release).
//!
//! Invariant: nothing here reads a clock (`crate::clock` does); every function takes "now" as an
//! argument (`now_ns` monotonic, `now_unix_ms` wall), so all of it is testable without sleeping.
//! Invariant: no mutex and no allocation on the request path of `rate` and `ip`; `quota` allocates
//! only when a calendar period rolls over.
//! Deliberately absent: persistence (the store keeps `quota::UsageRecord`s, derived from job
//! records in the same batch) and HTTP types (the API turns `headers`' strings into headers).
//! Below `auth` and `store`: this module imports neither.

pub mod headers;
pub mod ip;
pub mod quota;
pub mod rate;

pub use ip::IpFailureLimiter;
pub use quota::{Operation, QuotaCounter, QuotaExhausted, QuotaPeriod, QuotaView, Reservation, UsageRecord};
pub use rate::{RateCell, RateDecision, RateLimit, RateLimitError, RateState};
