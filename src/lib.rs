//! Wallet X-Ray: programmatic wallet intelligence for Solana.
//!
//! The library behind the `xray` binary; tests and benches use it directly. See
//! ARCHITECTURE.md for the data flow, the code map and which threads call what.
#![warn(clippy::all)]

pub mod admin;
pub mod admission;
pub mod api;
pub mod app;
pub mod auth;
pub mod cli;
pub mod compute;
pub mod config;
pub mod eligibility;
pub mod engine;
pub mod labels;
pub mod ledger;
pub mod limits;
pub mod metrics;
pub mod pubkey;
pub mod serve;
pub mod server;
pub mod store;
