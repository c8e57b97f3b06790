//! The store-work pool: a few named threads (`xray-store-work-i`) that run the public API's
//! sequences of blocking store calls over the embedded RocksDB — the monitors' registry, an
//! events page reading up to `MONITOR_EVENTS_PAGE_READ_BYTES_MAX` of stored analyses, a
//! feedback's analysis read, a policy write — so a listener thread never stalls on a disk read,
//! a large payload's parse or an `fsync` (`--sync-writes`) while its other connections wait.
//!
//! Owns: `StoreWorkPool` (the bounded queue, its threads, their start and stop). Called from
//! listener threads (`api::endpoints::monitors::store_work`): `run` hands a sequence over and
//! returns a `tokio::sync::oneshot::Receiver`, which any executor awaits (monoio does, without
//! blocking). On a cluster node the API's store work runs on the etcd runtime's blocking pool
//! instead (`EtcdStore::blocking`) and this pool is not started.
//!
//! Invariant: bounded — `STORE_WORK_THREADS` sequences run at once and at most
//! `STORE_WORK_QUEUE_LEN_MAX` wait; past it `run` refuses at once (`Busy`: the API answers
//! `503 SERVICE_BUSY`), never blocks the caller, never queues without bound. The per-account
//! bound (`REGISTRY_WORK_PER_ACCOUNT_MAX`) is the caller's, held until the sequence ends.
//! Invariant: a sequence runs to its end even when its caller went away (a client hung up);
//! a panic in one is logged and ends only that sequence (its caller's receiver reports it).
//! Invariant: `stop` runs what is queued, then joins the threads; `run` refuses after it.
//! The threads run at niceness `STORE_WORK_NICE`: a listener that wakes up takes the core.
//! Measured (`api::monitor_events::an_events_page_of_large_analyses_does_not_stall_its_listener`,
//! one listener thread, 2 shared overloaded cores): while pages of 4 × 8 MiB analyses take
//! 345–686 ms, `/healthz` on the same listener answers in 0.13 ms (median), p99 0.21–0.26 ms as
//! when idle, max 10–41 ms (idle max 3–5.5 ms: preemption); read inline, the pings waited
//! 462–496 ms. The figures and the machine are in ARCHITECTURE.md, "Threads".
//! Deliberately absent: priorities and fairness between accounts beyond the per-account bound
//! (each sequence is short), and async store calls (the `Store` trait is blocking, shared with
//! the compute and background threads).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use super::Store;
use crate::config::STORE_WORK_NICE;

/// Why a sequence was not taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WorkRefused {
    #[error("the store-work queue is full")]
    Busy,
    #[error("the store-work pool stopped")]
    Stopped,
}

type Job = Box<dyn FnOnce(&dyn Store) + Send>;

/// The listener threads' handle on the pool.
pub struct StoreWorkPool {
    jobs: parking_lot::Mutex<Option<SyncSender<Job>>>,
    threads: parking_lot::Mutex<Vec<JoinHandle<()>>>,
}

impl StoreWorkPool {
    /// Starts `threads` threads over `store`, with room for `queue_len` waiting sequences.
    pub fn start(store: Arc<dyn Store>, threads: usize, queue_len: usize) -> Result<StoreWorkPool, String> {
        let (jobs, receiver) = sync_channel::<Job>(queue_len);
        let receiver = Arc::new(parking_lot::Mutex::new(receiver));
        let pool = StoreWorkPool { jobs: parking_lot::Mutex::new(Some(jobs)), threads: parking_lot::Mutex::default() };
        for i in 0..threads.max(1) {
            let (store, receiver) = (store.clone(), receiver.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("xray-store-work-{i}"))
                .spawn(move || work(&*store, &receiver));
            match spawned {
                Ok(thread) => pool.threads.lock().push(thread),
                Err(e) => {
                    pool.stop();
                    return Err(format!("store-work thread: {e}"));
                }
            }
        }
        Ok(pool)
    }

    /// Queues `work`; its answer comes through the receiver (closed without one if it panicked
    /// or the pool stopped before it ran).
    pub fn run<T, W>(&self, work: W) -> Result<oneshot::Receiver<T>, WorkRefused>
    where
        T: Send + 'static,
        W: FnOnce(&dyn Store) -> T + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        // The caller may have hung up by the time the work ends: the answer is then dropped.
        // A panic unwinds `reply` unsent (`work` catches it).
        let job: Job = Box::new(move |store| drop(reply.send(work(store))));
        let jobs = self.jobs.lock();
        let Some(jobs) = jobs.as_ref() else { return Err(WorkRefused::Stopped) };
        match jobs.try_send(job) {
            Ok(()) => Ok(answer),
            Err(TrySendError::Full(_)) => Err(WorkRefused::Busy),
            Err(TrySendError::Disconnected(_)) => Err(WorkRefused::Stopped),
        }
    }

    /// Refuses new work, runs what is queued, joins the threads.
    pub fn stop(&self) {
        drop(self.jobs.lock().take());
        for thread in std::mem::take(&mut *self.threads.lock()) {
            let _ = thread.join();
        }
    }
}

impl Drop for StoreWorkPool {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One thread's loop: the next sequence, until the sender is gone and the queue empty.
fn work(store: &dyn Store, jobs: &parking_lot::Mutex<Receiver<Job>>) {
    // On Linux a niceness is the calling thread's own (`who` 0); a refusal leaves it at 0.
    // SAFETY: setpriority reads no memory of ours.
    if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, STORE_WORK_NICE) } != 0 {
        tracing::warn!("store-work thread: niceness {STORE_WORK_NICE} refused; it runs at the process's");
    }
    loop {
        let job = jobs.lock().recv();
        match job {
            Ok(job) => {
                let panicked = catch_unwind(AssertUnwindSafe(|| job(store))).is_err();
                if panicked {
                    tracing::error!("a store-work sequence panicked: its request answers 500");
                }
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{RocksStore, StoreOptions};
    use std::sync::Barrier;

    fn store() -> (tempfile::TempDir, Arc<dyn Store>) {
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::open(dir.path(), &StoreOptions::default()).unwrap();
        (dir, Arc::new(store))
    }

    #[test]
    fn a_full_queue_refuses_at_once_and_stop_runs_what_was_queued() {
        let (_dir, store) = store();
        let pool = StoreWorkPool::start(store, 1, 2).unwrap();
        let (held, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let (h, r) = (held.clone(), release.clone());
        let running = pool
            .run(move |_| {
                h.wait();
                r.wait();
                1
            })
            .unwrap();
        held.wait(); // the one thread is busy
        let queued: Vec<_> = (2..4).map(|n| pool.run(move |_| n).unwrap()).collect();
        assert_eq!(pool.run(|_| 9).err(), Some(WorkRefused::Busy));
        release.wait();
        pool.stop();
        assert_eq!(running.blocking_recv().ok(), Some(1));
        let answers: Vec<i32> = queued.into_iter().filter_map(|a| a.blocking_recv().ok()).collect();
        assert_eq!(answers, vec![2, 3]);
        assert_eq!(pool.run(|_| 9).err(), Some(WorkRefused::Stopped));
    }

    #[test]
    fn a_panic_ends_only_its_sequence() {
        let (_dir, store) = store();
        let pool = StoreWorkPool::start(store, 1, 4).unwrap();
        let failed = pool.run(|_| -> i32 { panic!("a bug in one sequence") }).unwrap();
        assert!(failed.blocking_recv().is_err());
        assert_eq!(pool.run(|_| 7).unwrap().blocking_recv().ok(), Some(7));
    }
}
