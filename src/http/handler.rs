//! The plug between the HTTP edge and the API: `Handler`, its per-thread factory, and the stop
//! state handlers may read.
//!
//! Owns: the `Handler` trait, `ThreadContext` (what a factory gets on each listener thread) and
//! `StopState` (draining / stopping flags shared by all threads and the `ServerHandle`).
//! Factories run once on each listener thread; handlers run on that thread only, so they need
//! not be `Send` and may keep per-thread caches and buffers without locks.
//!
//! Invariant: handlers see `message` types only, never hyper's, so the API logic is testable
//! without sockets. Deliberately absent: any knowledge of routes (the handler routes).

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::watch;

use super::message::{ApiRequest, ApiResponse};
use super::request_id::RequestId;
use crate::http::runtime::DriverKind;

/// Answers requests on one listener thread.
pub trait Handler: 'static {
    /// Answers one request. A panic here becomes a `500 INTERNAL` for that request only.
    fn handle(&self, request: ApiRequest) -> impl Future<Output = ApiResponse>;

    /// The answer when `handle` panicked or produced a response the edge cannot send (an
    /// invalid header): the handler's own 500, so the edge needs no error format of its own.
    /// `cause` is for the handler's log, never for the client.
    fn internal_error(&self, request_id: &RequestId, cause: &str) -> ApiResponse;

    /// The largest body the edge reads for a request to `path` (at most
    /// `config::REQUEST_BODY_BYTES_MAX`); a larger one is `Body::TooLarge`, its excess unread.
    fn body_bytes_max(&self, _path: &str) -> usize {
        crate::config::BODY_BYTES_MAX
    }
}

/// What a handler factory gets on the thread it runs on.
#[derive(Debug, Clone)]
pub struct ThreadContext {
    /// 0-based index of the listener thread.
    pub index: usize,
    pub driver: DriverKind,
    pub stop: StopState,
}

/// Builds one handler per listener thread, on that thread.
pub trait HandlerFactory<H: Handler>: Fn(&ThreadContext) -> H + Send + Sync + 'static {}
impl<H: Handler, F: Fn(&ThreadContext) -> H + Send + Sync + 'static> HandlerFactory<H> for F {}

/// The server's stop state: `draining` (health checks fail, requests still served) and
/// `stopping` (no more accepts; connections finish their request and close).
#[derive(Debug, Clone)]
pub struct StopState {
    shared: Arc<StopShared>,
    stopping: watch::Receiver<bool>,
}

#[derive(Debug)]
struct StopShared {
    draining: AtomicBool,
    stopping: watch::Sender<bool>,
}

impl Default for StopState {
    fn default() -> Self {
        let (sender, receiver) = watch::channel(false);
        StopState {
            shared: Arc::new(StopShared { draining: AtomicBool::new(false), stopping: sender }),
            stopping: receiver,
        }
    }
}

impl StopState {
    /// True once `start_draining` or `stop` was called: `/healthz` answers 503.
    pub fn is_draining(&self) -> bool {
        self.shared.draining.load(Ordering::Acquire)
    }

    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Health checks start failing; everything else is still served.
    pub fn start_draining(&self) {
        self.shared.draining.store(true, Ordering::Release);
    }

    /// Stops accepting, and asks every connection to close after its current request.
    pub fn stop(&self) {
        self.start_draining();
        self.shared.stopping.send_replace(true);
    }

    /// Completes once `stop` has been called (from any thread).
    pub async fn stopped(&self) {
        let mut receiver = self.stopping.clone();
        // An error means the sender is gone, which only happens when every StopState is.
        let _ = receiver.wait_for(|stopping| *stopping).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_implies_draining_and_wakes_waiters_on_other_threads() {
        let state = StopState::default();
        assert!(!state.is_draining() && !state.is_stopping());
        let waiter = state.clone();
        let thread = std::thread::spawn(move || {
            let mut runtime = crate::http::runtime::ThreadRuntime::build(crate::config::IoDriver::Epoll, 0).unwrap();
            runtime.block_on(waiter.stopped());
            waiter.is_draining()
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        state.stop();
        assert!(thread.join().unwrap());
        assert!(state.is_stopping());
    }

    #[test]
    fn draining_alone_does_not_stop() {
        let state = StopState::default();
        state.start_draining();
        assert!(state.is_draining() && !state.is_stopping());
    }
}
