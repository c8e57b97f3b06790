//! Wallet X-Ray: programmatic wallet intelligence for Solana.
//!
//! The library behind the `xray` binary; tests and benches use it directly. See
//! ARCHITECTURE.md for the data flow, the code map and which threads call what.
//!
//! Modules are listed bottom-up: each may use the ones above it, never one below it (a test,
//! `module_graph` in `tests/`, fails when an import points the other way or forms a cycle).
#![warn(clippy::all)]

// Shared values: no module of this crate below them. (rustfmt.toml keeps this order:
// `reorder_modules = false`.)
pub mod config;
pub mod error_code;
pub mod pubkey;
pub mod clock;
pub mod tick_group;
// Counters every layer records into (ledger calls, store writes, requests).
pub mod metrics;

// What the service knows and how it judges: the runtime that executes a transaction on
// accounts read (the ledger sources run it), the ledger, labels, eligibility, the pure engine,
// the guards a scan appends (Lighthouse assertions on what it predicted), the scan.
pub mod runtime;
pub mod ledger;
pub mod labels;
pub mod eligibility;
pub mod engine;
pub mod guard;
pub mod scan;

// Who may ask for how much, and what is kept.
pub mod limits;
pub mod auth;
pub mod store;
pub mod policy;
// Feedback on analyses: records over the store, purged by housekeeping (`jobs`), written by `api`.
pub mod feedback;
// Signed reports: the server's Ed25519 key ring (kept in a file or the store) and JCS.
pub mod signing;
// Backup and restore of a node's data directory: a checkpoint of the store, copied and digested.
pub mod backup;

// One request, in data-flow order: the HTTP edge, a job's life, its webhook, the contract's
// pipeline.
pub mod http;
pub mod jobs;
pub mod webhooks;
pub mod monitors;
pub mod api;

// Operations and the process: the admin listener, start-up and shutdown, dev tools, the CLI.
pub mod admin;
pub mod serve;
pub mod devtools;
pub mod cli;
