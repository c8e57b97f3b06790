//! The RocksDB store in temp directories: every operation, and crash cycles of a child process.

mod crash;
mod faults;
mod rocks;
pub mod support;
