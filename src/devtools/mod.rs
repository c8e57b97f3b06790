//! Tools for developers and tests, beside the product: none of the data path imports them.
//!
//! Owns: `edge` (stand-in handlers of the HTTP edge for load-test ratios and edge tests:
//! `xray edge`), `rpc_server` (any ledger source as a local Solana JSON-RPC endpoint with fault
//! injection: `xray ledger serve`), `recorder` (writing snapshot directories: `xray ledger
//! record` / `export-demo`), `inspect` (`xray ledger inspect`) and `demo_tx` (transactions
//! against the demo's wallets for the scan: `xray ledger demo-tx`). They run on the main thread
//! or threads of their own, started by the CLI or a test.
//!
//! Invariant: the dependency points one way — these modules use the product's, never the
//! reverse (the module-graph test in `tests/` checks it).
//! Deliberately absent: clap definitions (all in `cli`).

pub mod demo_tx;
pub mod edge;
pub mod inspect;
pub mod recorder;
pub mod rpc_server;
