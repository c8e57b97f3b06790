//! Every integration test, in one binary (one link of RocksDB), by area. Each area runs the
//! real thing: loopback HTTP, RocksDB in temp directories, the release binary where it matters.
//!
//! Slow groups and their bounds: `api::serve_binary` and `store::crash` start the real binary
//! (kill -9 cycles, bounded in count); `ledger::rpc` drives the local JSON-RPC server with
//! injected faults (bounded retries, short timeouts).

mod api;
mod auth_limits;
mod cluster;
mod edge;
mod engine;
mod fuzz_smoke;
mod ledger;
mod module_graph;
mod store;
