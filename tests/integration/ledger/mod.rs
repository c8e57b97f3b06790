//! The ledger layer: real mainnet fixtures, the demo ledger and its timeline (a demo that
//! moves over time), snapshots, the rpc source against the local JSON-RPC server (with faults),
//! and the one-shot CLI over it.

mod cli;
mod demo;
mod fixtures;
mod rpc;
mod snapshot;
mod timeline;
