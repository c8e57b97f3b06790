//! A job's life, in one directory: read its files in this order to follow one request's work —
//! and its quota unit — from admission to the answer and through a restart.
//!
//! 1. `admission` (listener threads): deduplication, reuse of a fresh result, the quota unit
//!    reserved, the durable job record (job + indexes + reservation in one store batch), the
//!    status-index entry and the queue push — and the undo of all of it when the queue is full.
//! 2. `index` (any thread): the in-memory status index of live jobs, which polls and
//!    deduplication read without a lock and long polls wait on.
//! 3. `pool` (compute threads): the fixed-size crossbeam queue and the pinned threads that
//!    drain it, each driving several jobs on its own current-thread runtime.
//! 4. `execute` (compute threads; also the CLI's `analyze` / `compare`): read the ledger,
//!    classify, run the engine, serialize the payload — or the contract's FAILED code.
//! 5. `sink` (compute threads): settle a finished job — store first (payload, state, quota
//!    commit or refund in one batch), then the finished-jobs cache, the in-memory quota, then
//!    the index (waking polls).
//! 6. `finished` (any thread): finished jobs kept in memory, bounded, so polls of READY or
//!    FAILED jobs and the reuse of fresh results read no disk (read-through on a miss).
//! 7. `recovery` (main and housekeeping threads): after a restart, each key's quota counters
//!    restored from the store's usage records and the jobs a stopped process left live
//!    re-queued in bounded pages; the retention purge runs on the same thread.
//! 8. `adoption` (housekeeping thread, cluster nodes only): jobs of dead nodes adopted and
//!    queued, each key's rate divided among the live nodes.
//!
//! Invariant: bounded — queue capacity, jobs in flight per thread, index size and recovery
//! pages are fixed at start. A quota unit is reserved once (1), settled once (5) or kept
//! reserved in the store across a restart and settled after (6).
//! Deliberately absent: HTTP (the API maps `admission::AdmitError` to its codes) and any
//! decision about what a wallet is worth (the engine's).

pub mod admission;
pub mod adoption;
pub mod execute;
pub mod finished;
pub mod index;
pub mod pool;
pub mod recovery;
pub mod sink;
