//! The RocksDB store in temp directories: every operation, and crash cycles of a child process.

pub mod contract;
mod crash;
mod faults;
mod rocks;
pub mod support;
