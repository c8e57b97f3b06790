//! The X-Ray engine (in progress; see ARCHITECTURE.md): pure functions from a `WalletView` and
//! labels to the X-Ray payload, and from two views to the comparison payload.
//!
//! Invariant: no I/O and no clock — the as-of slot and time come from the view — so equal input
//! gives byte-identical output on any thread.

pub mod evidence;
pub mod flows;
pub mod report;
pub mod scoring;
pub mod signals;
