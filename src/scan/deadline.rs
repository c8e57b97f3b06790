//! `Deadline`: when a scan's upstream reads are given up — at an instant, for a source that
//! answers over a network (the lane's), or never, for a memory-resident one (the demo), whose
//! reads are computations that end in the call.
//!
//! Owns: `Deadline` and `Deadline::bound`, the one place a scan's read meets a timer.
//! Invariant: `Deadline::Never` creates no timer, so reads under it run on any executor (a
//! listener's monoio runtime has no tokio timer); it is only for sources that never wait.
//! Deliberately absent: a per-call timeout (every read of a scan shares its one deadline).

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// When a read is given up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deadline {
    At(Instant),
    /// The source answers in the call (memory-resident): nothing to wait for, no timer.
    Never,
}

impl Deadline {
    /// `after` from now (on a tokio runtime's clock).
    pub fn after(after: Duration) -> Deadline {
        Deadline::At(Instant::now() + after)
    }

    /// `future`'s output, or `None` when the deadline passed first.
    pub async fn bound<T>(self, future: impl Future<Output = T>) -> Option<T> {
        match self {
            Deadline::At(at) => tokio::time::timeout_at(at, future).await.ok(),
            Deadline::Never => Some(future.await),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_runs_without_a_tokio_timer_and_at_gives_up() {
        // No runtime at all: `Never` must not touch tokio's timer (it would panic).
        let mut never = std::pin::pin!(Deadline::Never.bound(async { 7 }));
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        assert_eq!(never.as_mut().poll(&mut context), std::task::Poll::Ready(Some(7)), "ready in the first poll");
        let runtime = crate::ledger::runtime().expect("runtime");
        let late = runtime
            .block_on(async { Deadline::after(Duration::from_millis(10)).bound(std::future::pending::<()>()).await });
        assert_eq!(late, None);
    }
}
