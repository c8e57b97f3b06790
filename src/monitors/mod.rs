//! Monitors (issue #30): wallets an account watches, re-checked as they change, and signed
//! events when a re-analysis shows a risk change past the monitor's thresholds. Read this
//! directory after `jobs/` (a monitor's re-analysis is a job like any other) and `webhooks/`
//! (an event is delivered as that job's webhook).
//!
//! Owns: `record` (a monitor and its watch cursors as stored, their keys and checks),
//! `registry` (create, read, list, change, delete; events page by page; redelivery — over the
//! store's feature records), `scheduler` (the `xray-monitors` thread that checks watched
//! wallets and admits re-analyses, within each monitor's daily budget) and `dust` (new
//! activity too small to re-analyze).
//! The event itself is decided by `jobs::sink` (the changes against the previous analysis,
//! the thresholds the job carries: `engine::changes::Changes::crosses`) and written by the
//! store in the completion's batch: the event, its index entry and its webhook in the outbox.
//!
//! Invariant: one event per re-analysis at most, its id derived from the job's (`evt_…` of
//! `an_…`), the same on every delivery attempt and redelivery.
//! Invariant: every monitor, cursor and event is its account's; reads by another account are
//! `404`.
//! Invariant: a monitor's wallets cannot spend its key's quota past its `reanalysesPerDay` in a
//! UTC day, and dust sent to them spends none (`scheduler`, `dust`).
//! Deliberately absent: a monitor's own clock — intervals run on the node's wall clock.

pub mod record;
pub mod registry;
pub mod scheduler;

mod dust;
mod screen;
pub use record::{ActivityOutcome, MonitorBudget, MonitorRecord, Thresholds, WatchCursor};
pub use registry::{check_change, EventView, MonitorChange, Registry, RegistryError};
pub use scheduler::{Scheduler, SchedulerDeps, SchedulerSettings};
