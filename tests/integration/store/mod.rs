//! The RocksDB store in temp directories: every operation, crash cycles of a child process, and
//! backup and restore with the real binary.

mod backup;
pub mod contract;
mod crash;
mod faults;
mod rocks;
pub mod support;
