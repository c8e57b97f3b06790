//! The ledger layer: real mainnet fixtures, the demo ledger, snapshots, and the rpc source
//! against the local JSON-RPC server (with faults).

mod demo;
mod fixtures;
mod rpc;
mod snapshot;
