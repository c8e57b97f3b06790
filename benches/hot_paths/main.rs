//! The criterion benches of the hot paths, in one binary: the engine's (`engine.rs`) and the
//! ledger's (`ledger.rs`) and the scan's simulation (`runtime.rs`).
//!
//! Why one binary: each bench binary links the whole crate with thin LTO, and `make test` builds
//! every bench in test mode (then runs each function once): two binaries cost ~65 s of the 2-core
//! machine's compile time each (2026-11-29), for 200 lines of bench code.
//!
//! The allocator is the product's (mimalloc), so that allocation costs what it costs in
//! `xray serve`.
//!
//! Run: `cargo bench --bench hot_paths` (all), or a regex of group names after `--`, as
//! `cargo bench --bench hot_paths -- job_end_to_end`. Results: docs/benchmarks.md.

use criterion::criterion_main;
use mimalloc::MiMalloc;

mod engine;
mod ledger;
mod runtime;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

criterion_main!(engine::benches, ledger::benches, runtime::benches);
