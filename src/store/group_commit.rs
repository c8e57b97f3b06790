//! Group commit for `--sync-writes`: an acknowledgement waits for one `fsync` of the WAL made on
//! a dedicated thread for every write logged before it, so no listener thread blocks on the disk.
//!
//! Owns: `GroupCommit` (the highest WAL sequence known to be on stable storage, the sync
//! thread's wake-up, the notification waiting answers sleep on) and the `xray-wal-sync` thread.
//! Listener threads write without `fsync` (`Store::admit`, `Store::cancel_admission`), then
//! await `covered` before answering; the sync thread calls `Store::sync` (WAL flush + fsync).
//!
//! Invariant: `synced` only grows and names a sequence `s` only after an `fsync` that began
//! once every write numbered ≤ `s` was logged, so an answer sent after `synced ≥ n` names only
//! writes that survive a power loss.
//! Invariant: one `fsync` at a time; every write logged while one runs shares the next, so the
//! sync rate is at most 1 / fsync latency however many answers wait (`syncs` counts them).
//! Invariant: a wait lasts at most `config::WAL_SYNC_WAIT_MS_MAX`; past it, or when the
//! `fsync` fails, the answer is an error and the write stays logged (a retry of the same
//! request deduplicates onto its job instead of admitting a second one).
//! Deliberately absent: writes made on compute threads and the admin path. They block only
//! their own thread, so they stay synchronous (`fsync` inline, grouped by RocksDB's writer
//! queue).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use tokio::sync::Notify;

use super::{Store, StoreError, StoreResult};
use crate::config::WAL_SYNC_WAIT_MS_MAX;

/// The group commit of one store; clones share it.
#[derive(Clone)]
pub struct GroupCommit {
    shared: Arc<Shared>,
}

struct Shared {
    store: Arc<dyn Store>,
    /// Highest WAL sequence on stable storage.
    synced: AtomicU64,
    /// Highest WAL sequence an `fsync` begun so far will cover (a waiter at or below it needs
    /// no new one).
    begun: AtomicU64,
    /// `fsync`s made so far.
    syncs: AtomicU64,
    /// The sequence the last failed `fsync` was meant to cover, and why it failed; cleared by
    /// the next success.
    failure: Mutex<Option<(u64, String)>>,
    /// Set by a waiter, taken by the sync thread.
    requested: Mutex<bool>,
    stopping: AtomicBool,
    thread: Mutex<Option<JoinHandle<()>>>,
    wake: Condvar,
    /// Woken after every `fsync`, successful or not.
    done: Notify,
}

impl GroupCommit {
    /// Starts the sync thread (ended by `stop`).
    pub fn start(store: Arc<dyn Store>) -> std::io::Result<GroupCommit> {
        let shared = Arc::new(Shared {
            synced: AtomicU64::new(store.logged_sequence()),
            begun: AtomicU64::new(0),
            store,
            syncs: AtomicU64::new(0),
            failure: Mutex::new(None),
            requested: Mutex::new(false),
            stopping: AtomicBool::new(false),
            thread: Mutex::new(None),
            wake: Condvar::new(),
            done: Notify::new(),
        });
        let looping = Arc::clone(&shared);
        let thread = std::thread::Builder::new().name("xray-wal-sync".into()).spawn(move || looping.sync_loop())?;
        *shared.thread.lock() = Some(thread);
        Ok(GroupCommit { shared })
    }

    /// Ends the sync thread after one more `fsync` (or the one in progress), which then lets go
    /// of the store; a wait still pending, or begun later, fails at once. Called after the
    /// listeners stopped, so no answer is normally left waiting.
    pub fn stop(&self) {
        self.shared.stopping.store(true, Ordering::Release);
        self.shared.request(u64::MAX);
        if let Some(thread) = self.shared.thread.lock().take() {
            let _ = thread.join();
        }
        self.shared.done.notify_waiters();
    }

    /// `fsync`s made so far (each covering every write logged before it began).
    pub fn syncs(&self) -> u64 {
        self.shared.syncs.load(Ordering::Relaxed)
    }

    /// Resolves once every write logged before the call is on stable storage. An `fsync` that
    /// fails, or a wait past `WAL_SYNC_WAIT_MS_MAX`, is an error (`Unavailable` for the wait,
    /// so the client is told to retry).
    pub async fn covered(&self) -> StoreResult<()> {
        let shared = &*self.shared;
        let target = shared.store.logged_sequence();
        let wait = monoio::time::timeout(Duration::from_millis(WAL_SYNC_WAIT_MS_MAX), async {
            loop {
                let notified = shared.done.notified();
                let mut notified = std::pin::pin!(notified);
                // Registered before the check, so an fsync finishing in between is not missed.
                notified.as_mut().enable();
                if shared.synced.load(Ordering::Acquire) >= target {
                    return Ok(());
                }
                if shared.stopping.load(Ordering::Acquire) && shared.thread.lock().is_none() {
                    return Err(StoreError::Unavailable("the server is stopping".into()));
                }
                if let Some((attempted, reason)) = &*shared.failure.lock() {
                    if *attempted >= target {
                        return Err(StoreError::Io(format!("WAL fsync failed: {reason}")));
                    }
                }
                shared.request(target);
                notified.await;
            }
        });
        wait.await.unwrap_or_else(|_| {
            let waited = format!("the WAL was not on disk within {WAL_SYNC_WAIT_MS_MAX} ms");
            Err(StoreError::Unavailable(waited))
        })
    }
}

impl Shared {
    /// Asks for an `fsync` covering `target`, unless one begun already covers it. Under the
    /// lock the sync thread takes requests with, so no request is left over for a write the
    /// `fsync` being started covers.
    fn request(&self, target: u64) {
        let mut requested = self.requested.lock();
        if !*requested && self.begun.load(Ordering::Acquire) < target {
            *requested = true;
            self.wake.notify_one();
        }
    }

    /// Waits for a request; returns the sequence the `fsync` about to begin covers.
    fn take_request(&self) -> u64 {
        let mut requested = self.requested.lock();
        while !*requested {
            self.wake.wait(&mut requested);
        }
        *requested = false;
        let target = self.store.logged_sequence();
        self.begun.fetch_max(target, Ordering::AcqRel);
        target
    }

    /// One group: every write logged before the `fsync` began (up to `target`) is covered.
    fn sync_once(&self, target: u64) {
        let synced = self.store.sync();
        self.syncs.fetch_add(1, Ordering::Relaxed);
        crate::metrics::STORE.wal_synced();
        match synced {
            Ok(()) => {
                self.synced.fetch_max(target, Ordering::AcqRel);
                *self.failure.lock() = None;
            }
            Err(e) => {
                tracing::error!(error = %e, "WAL fsync failed: the answers waiting for it fail");
                *self.failure.lock() = Some((target, e.to_string()));
            }
        }
        self.done.notify_waiters();
    }

    /// The sync thread: waits for a request, syncs, repeats until `stop`.
    fn sync_loop(&self) {
        loop {
            let target = self.take_request();
            self.sync_once(target);
            if self.stopping.load(Ordering::Acquire) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{RocksStore, StoreOptions};

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new().enable_timer().build().expect("rt");
        runtime.block_on(future)
    }

    #[test]
    fn a_wait_with_nothing_new_logged_needs_no_fsync_and_stop_lets_go_of_the_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store: Arc<dyn Store> =
            Arc::new(RocksStore::open(&dir.path().join("db"), &StoreOptions::default()).expect("db"));
        let group = GroupCommit::start(Arc::clone(&store)).expect("thread");
        block_on(group.covered()).expect("covered");
        assert_eq!(group.syncs(), 0, "nothing was logged since start");
        group.stop();
        assert_eq!(group.syncs(), 1, "stop makes a last fsync");
        drop(group);
        assert_eq!(Arc::strong_count(&store), 1, "the sync thread let go of the store");
    }
}
