//! One monoio runtime per listener thread, on io_uring or epoll.
//!
//! Owns: the driver choice (`IoDriver` → `DriverKind`), the probe that falls back from io_uring
//! to epoll, and `ThreadRuntime`, the runtime a listener thread blocks on. Called once on each
//! listener thread at start, before its socket is registered.
//!
//! The probe is the real thing: building the io_uring runtime calls `io_uring_setup`, which a
//! seccomp profile (Docker's default), a disabled sysctl or an old kernel refuses; the error is
//! logged and, under `IoDriver::Auto`, the epoll runtime is built instead.
//!
//! Invariant: every runtime has monoio's timer enabled (hyper's header timeout and the body
//! timeout sleep on it). Deliberately absent: monoio's `FusionDriver` — its probe is a global
//! one-time check that cannot be forced per config and does not report what it picked.

use std::future::Future;
use std::io;

use monoio::time::TimeDriver;
use monoio::{IoUringDriver, LegacyDriver, Runtime, RuntimeBuilder};

use crate::config::{IoDriver, URING_ENTRIES};

/// The driver a thread actually got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverKind {
    Uring,
    Epoll,
}

impl DriverKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DriverKind::Uring => "io_uring",
            DriverKind::Epoll => "epoll",
        }
    }
}

impl std::fmt::Display for DriverKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A listener thread's runtime.
pub enum ThreadRuntime {
    Uring(Runtime<TimeDriver<IoUringDriver>>),
    Epoll(Runtime<TimeDriver<LegacyDriver>>),
}

impl ThreadRuntime {
    /// Builds the runtime `choice` asks for on the calling thread.
    pub fn build(choice: IoDriver, thread_index: usize) -> io::Result<ThreadRuntime> {
        ThreadRuntime::build_with(choice, thread_index, URING_ENTRIES)
    }

    fn build_with(choice: IoDriver, thread_index: usize, uring_entries: u32) -> io::Result<ThreadRuntime> {
        let runtime = match choice {
            IoDriver::Uring => build_uring(uring_entries)?,
            IoDriver::Epoll => build_epoll()?,
            IoDriver::Auto => match build_uring(uring_entries) {
                Ok(runtime) => runtime,
                Err(error) => {
                    tracing::warn!(thread = thread_index, %error, "io_uring unavailable, falling back to epoll");
                    build_epoll()?
                }
            },
        };
        tracing::info!(thread = thread_index, driver = %runtime.kind(), "listener runtime built");
        Ok(runtime)
    }

    pub fn kind(&self) -> DriverKind {
        match self {
            ThreadRuntime::Uring(_) => DriverKind::Uring,
            ThreadRuntime::Epoll(_) => DriverKind::Epoll,
        }
    }

    /// Runs `future` to completion on this thread.
    pub fn block_on<F: Future>(&mut self, future: F) -> F::Output {
        match self {
            ThreadRuntime::Uring(runtime) => runtime.block_on(future),
            ThreadRuntime::Epoll(runtime) => runtime.block_on(future),
        }
    }
}

fn build_uring(entries: u32) -> io::Result<ThreadRuntime> {
    RuntimeBuilder::<IoUringDriver>::new().with_entries(entries).enable_timer().build().map(ThreadRuntime::Uring)
}

fn build_epoll() -> io::Result<ThreadRuntime> {
    RuntimeBuilder::<LegacyDriver>::new().enable_timer().build().map(ThreadRuntime::Epoll)
}

/// Whether this process may use io_uring (builds and drops a runtime).
pub fn uring_available() -> bool {
    build_uring(URING_ENTRIES).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoll_always_builds_and_runs() {
        let mut runtime = ThreadRuntime::build(IoDriver::Epoll, 0).unwrap();
        assert_eq!(runtime.kind(), DriverKind::Epoll);
        let out = runtime.block_on(async {
            monoio::time::sleep(std::time::Duration::from_millis(1)).await;
            7
        });
        assert_eq!(out, 7);
    }

    #[test]
    fn auto_falls_back_when_io_uring_setup_is_refused() {
        // io_uring_setup refuses more than 32768 entries (EINVAL), as a seccomp filter would
        // refuse the call (EPERM): either way the probe fails and Auto falls back.
        let refused = 1 << 30;
        assert!(ThreadRuntime::build_with(IoDriver::Uring, 0, refused).is_err());
        let mut runtime = ThreadRuntime::build_with(IoDriver::Auto, 0, refused).unwrap();
        assert_eq!(runtime.kind(), DriverKind::Epoll);
        assert_eq!(runtime.block_on(async { 2 }), 2);
    }

    #[test]
    fn auto_gets_a_runtime_either_way() {
        let expected = if uring_available() { DriverKind::Uring } else { DriverKind::Epoll };
        let mut runtime = ThreadRuntime::build(IoDriver::Auto, 0).unwrap();
        assert_eq!(runtime.kind(), expected);
        assert_eq!(runtime.block_on(async { 1 }), 1);
    }
}
