//! What the local JSON-RPC server counts: requests, faults, and calls by method (a batch's
//! items one by one, as a provider bills them).
//!
//! Owns: `ServerStats`. Written by the server's one thread, read from any.
//! Invariant: bounded — only methods the server answers are counted by name.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters a test (or an operator) can read from any thread.
#[derive(Debug, Default)]
pub struct ServerStats {
    pub(super) requests: AtomicU64,
    pub(super) faults: AtomicU64,
    /// JSON-RPC calls answered, by method, a batch's items one by one (what a provider bills).
    calls: parking_lot::Mutex<std::collections::BTreeMap<String, u64>>,
    /// While set, every request naming this method is answered 500 (an outage of one method,
    /// switched on and off by a test).
    failing_method: parking_lot::Mutex<Option<String>>,
}

impl ServerStats {
    /// JSON-RPC calls answered so far, by method (a batch of 50 counts 50).
    pub fn calls(&self) -> std::collections::BTreeMap<String, u64> {
        self.calls.lock().clone()
    }

    /// JSON-RPC calls answered so far, every method together.
    pub fn calls_total(&self) -> u64 {
        self.calls.lock().values().sum()
    }

    pub(super) fn count_call(&self, method: &str) {
        let mut calls = self.calls.lock();
        match calls.get_mut(method) {
            Some(count) => *count += 1,
            // Bounded: only methods the server answers reach here (see `methods::call`).
            None => {
                calls.insert(method.to_owned(), 1);
            }
        }
    }

    /// Answers every request naming `method` with 500 from now on (`None`: none).
    pub fn fail_method(&self, method: Option<&str>) {
        *self.failing_method.lock() = method.map(|m| format!("\"{m}\""));
    }

    /// Whether `body` names the method that fails now.
    pub(super) fn fails(&self, body: &[u8]) -> bool {
        let failing = self.failing_method.lock();
        let Some(quoted) = failing.as_deref() else { return false };
        body.windows(quoted.len()).any(|w| w == quoted.as_bytes())
    }

    /// HTTP requests received (a batch is one).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests that were answered with a fault.
    pub fn faults(&self) -> u64 {
        self.faults.load(Ordering::Relaxed)
    }
}
