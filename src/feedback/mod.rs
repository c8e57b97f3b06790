//! Feedback on analyses (issue #31 item 2): an integrator says a signal was a false positive,
//! was confirmed, or that the analysis missed something. Stored per account (bounded, retained),
//! listed through the admin API and counted in `/metrics` by signal kind and verdict — the
//! false-positive rate per kind is what tunes the engine. Read this directory after `store/`
//! (its records are the store's feature records, `store::docs`) and before `api/` (whose
//! `endpoints/feedback.rs` checks the analysis and calls `Book::put`).
//!
//! Owns: `record` (the record as stored, its keys, the verdicts, the checks of a submission and
//! the lookup of a signal's kind in an analysis' payload), `book` (write with eviction at the
//! account's cap, admin pages, the retention purge — the only writer of `Feedback` and
//! `FeedbackByTime` records) and `metrics` (the counters `/metrics` renders).
//! Threads: listener threads (the endpoint, inline over RocksDB, on the etcd runtime's blocking
//! pool on a cluster), the admin listener (pages) and `xray-housekeeping` (the hourly purge).
//!
//! Invariant: one record per (account, analysis id, signal id or none): a repeat replaces its
//! verdict and note, its `feedbackId` (derived from the three) and `createdAt` stay.
//! Invariant: an account holds at most `FEEDBACK_PER_ACCOUNT_MAX` records, exactly (a tally
//! written with compare-and-set in the batch of every create, eviction and purge); past it the
//! least recently written is evicted in the create's batch.
//! Invariant: tenant isolation — records are keyed by account first; nothing reads another
//! account's records but the admin API, which names the account.
//! Invariant: metric label values come from the signal catalogue (and `none`, `other`), never
//! from a request.
//! Deliberately absent: deleting feedback with its analysis (the record carries the signal's
//! kind, which is what the counts need); a public read of feedback (the admin API lists it).

pub mod book;
pub mod metrics;
pub mod record;

pub use book::{Book, BookError, FeedbackPage, Filter, Written};
pub use metrics::FeedbackMetrics;
pub use record::{FeedbackError, FeedbackRecord, FeedbackVerdict};
