//! Compute: the threads that turn admitted tickets into X-Rays and comparisons.
//!
//! Owns: `job` (one job's work and its outcome) and `pool` (the bounded queue and the pinned
//! compute threads). Listener threads only `submit`; everything else runs on compute threads.
//! Invariant: bounded — queue capacity and jobs in flight per thread are fixed at start.

pub mod job;
pub mod pool;
