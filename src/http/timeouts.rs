//! Per-connection clocks: header-read timeout, keep-alive idle timeout and write-stall timeout,
//! on monoio's timer.
//!
//! Owns: `HeadClock` (when the current request head started arriving), `Tracked` (the socket
//! wrapper that feeds it, fails a write that made no progress for `write_stall_timeout`, and
//! first serves bytes read before hyper took over, e.g. after a PROXY protocol header) and
//! `HeadTimer` (the `hyper::rt::Timer` hyper's header timeout sleeps on). Called on the listener thread that owns the connection; the `Send + Sync` bounds hyper
//! puts on timers are met with atomics, not because anything crosses threads.
//!
//! Why this exists: hyper arms its header-read timer as soon as a connection waits for the next
//! request, so on its own the header timeout is also the idle keep-alive timeout. Slow-loris
//! protection wants a short header timeout (10 s); keep-alive clients (pools that keep idle
//! connections for 60–90 s) want a long idle time. `HeadTimer`'s sleep therefore fires at
//! - idle since the last response, no byte yet: `idle_since + keep_alive_idle`;
//! - once a byte of the next head arrived: `head_started + header_read_timeout`;
//! - a fresh connection counts as a head started at accept (no idle grace before the first
//!   request).
//!
//! Invariant: the deadline is recomputed on every poll of the sleep, which hyper does each time
//! the head parse is pending (i.e. after every read), so a state change is never missed.
//! Known leniency: a head pipelined before the previous response was written, and left
//! incomplete, is timed by the idle deadline (the clock cannot see hyper's buffer); it is still
//! bounded by `keep_alive_idle` and by the connection cap.
//! Invariant: a write (or flush) that stays pending for `write_stall_timeout` fails with
//! `TimedOut`, which ends the connection: a client that pipelines requests and never reads
//! their answers holds its connection for that long at most. The stall timer is armed only
//! while a write is pending, so a connection that writes freely allocates no timer.
//! Deliberately absent: a body timeout (the edge wraps body reads in `monoio::time::timeout`).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use hyper::rt::{Sleep, Timer};
use monoio_compat::hyper::MonoioTimer;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// When the current request head started; shared by a connection's socket wrapper and timer.
#[derive(Debug)]
pub struct HeadClock {
    epoch: Instant,
    /// Microseconds after `epoch` of the first byte of the current head, plus one; 0 while the
    /// connection is idle (nothing read since the last response was written).
    head_started_us: AtomicU64,
    header_read_timeout: Duration,
    keep_alive_idle: Duration,
}

impl HeadClock {
    /// A clock for a connection accepted now: its first head is already on the clock.
    pub fn new(header_read_timeout: Duration, keep_alive_idle: Duration) -> Arc<HeadClock> {
        Arc::new(HeadClock {
            epoch: Instant::now(),
            head_started_us: AtomicU64::new(1),
            header_read_timeout,
            keep_alive_idle,
        })
    }

    /// Bytes arrived: if idle, a head starts now.
    fn on_read(&self) {
        if self.head_started_us.load(Ordering::Relaxed) == 0 {
            let us = u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX - 1);
            self.head_started_us.store(us.saturating_add(1), Ordering::Relaxed);
        }
    }

    /// A response was written: the connection is idle until the next byte.
    fn on_write(&self) {
        self.head_started_us.store(0, Ordering::Relaxed);
    }

    /// When the head that hyper started waiting for at `waiting_since` must be complete.
    fn deadline(&self, waiting_since: Instant) -> Instant {
        match self.head_started_us.load(Ordering::Relaxed) {
            0 => waiting_since + self.keep_alive_idle,
            started => self.epoch + Duration::from_micros(started - 1) + self.header_read_timeout,
        }
    }
}

/// A socket that tells its `HeadClock` when bytes come and go, and gives up on a write that
/// stalls.
pub struct Tracked<T> {
    inner: T,
    clock: Arc<HeadClock>,
    /// Bytes read from the socket before this wrapper existed; served before the socket's.
    prefix: Bytes,
    write_stall_timeout: Duration,
    /// Armed when a write first returns pending; cleared by any progress.
    write_stall: Option<Pin<Box<monoio::time::Sleep>>>,
}

impl<T> Tracked<T> {
    pub fn new(inner: T, clock: Arc<HeadClock>, prefix: Bytes, write_stall_timeout: Duration) -> Tracked<T> {
        Tracked { inner, clock, prefix, write_stall_timeout, write_stall: None }
    }

    /// Turns a pending write into `TimedOut` once it has been pending for the stall timeout.
    fn gate_write<R>(&mut self, cx: &mut Context<'_>, result: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if result.is_ready() {
            self.write_stall = None;
            return result;
        }
        let timeout = self.write_stall_timeout;
        let stall = self.write_stall.get_or_insert_with(|| Box::pin(monoio::time::sleep(timeout)));
        match stall.as_mut().poll(cx) {
            Poll::Ready(()) => {
                Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, format!("no write progress for {timeout:?}"))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T> std::fmt::Debug for Tracked<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracked").field("prefix_len", &self.prefix.len()).finish_non_exhaustive()
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Tracked<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.prefix.is_empty() {
            let len = this.prefix.len().min(buf.remaining());
            buf.put_slice(&this.prefix[..len]);
            this.prefix.advance(len);
            this.clock.on_read();
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let result = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.clock.on_read();
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tracked<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            this.clock.on_write();
        }
        this.gate_write(cx, result)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        if matches!(result, Poll::Ready(Ok(n)) if n > 0) {
            this.clock.on_write();
        }
        this.gate_write(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        this.gate_write(cx, result)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// hyper's timer for one connection: header deadline or idle deadline, per `HeadClock`.
#[derive(Debug, Clone)]
pub struct HeadTimer {
    clock: Arc<HeadClock>,
}

impl HeadTimer {
    pub fn new(clock: Arc<HeadClock>) -> HeadTimer {
        HeadTimer { clock }
    }

    fn waiting_since(&self, hyper_deadline: Instant) -> Instant {
        // hyper asks for `now + header_read_timeout`; recover `now`.
        hyper_deadline.checked_sub(self.clock.header_read_timeout).unwrap_or(hyper_deadline)
    }
}

impl Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        self.sleep_until(Instant::now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        let waiting_since = self.waiting_since(deadline);
        let target = self.clock.deadline(waiting_since);
        Box::pin(HeadSleep { inner: MonoioTimer.sleep_until(target), clock: self.clock.clone(), waiting_since, target })
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<HeadSleep>() {
            Some(head_sleep) => head_sleep.get_mut().waiting_since = self.waiting_since(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// The sleep behind `HeadTimer`: re-aims monoio's sleep whenever the clock's deadline moves.
struct HeadSleep {
    inner: Pin<Box<dyn Sleep>>,
    clock: Arc<HeadClock>,
    waiting_since: Instant,
    target: Instant,
}

impl Future for HeadSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let target = this.clock.deadline(this.waiting_since);
        if target != this.target {
            this.target = target;
            MonoioTimer.reset(&mut this.inner, target);
        }
        this.inner.as_mut().poll(cx)
    }
}

impl Sleep for HeadSleep {}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Duration = Duration::from_millis(100);
    const IDLE: Duration = Duration::from_millis(1_000);

    #[test]
    fn fresh_connection_gets_the_header_timeout() {
        let clock = HeadClock::new(HEADER, IDLE);
        let now = Instant::now();
        let deadline = clock.deadline(now);
        assert!(deadline <= now + HEADER, "{:?}", deadline - now);
    }

    #[test]
    fn idle_then_bytes_moves_the_deadline() {
        let clock = HeadClock::new(HEADER, IDLE);
        clock.on_write();
        let since = Instant::now();
        assert_eq!(clock.deadline(since), since + IDLE);
        clock.on_read();
        let deadline = clock.deadline(since);
        // `since` was read before the byte arrived (microsecond clock, so allow for truncation).
        assert!(
            deadline < since + IDLE && deadline + Duration::from_millis(1) >= since + HEADER,
            "{:?}",
            deadline - since
        );
        // Further bytes of the same head do not extend it.
        std::thread::sleep(Duration::from_millis(2));
        clock.on_read();
        assert_eq!(clock.deadline(since), deadline);
    }

    #[test]
    fn sleep_fires_at_the_header_deadline_once_bytes_arrive() {
        let mut runtime = crate::http::runtime::ThreadRuntime::build(crate::config::IoDriver::Epoll, 0).unwrap();
        runtime.block_on(async {
            let clock = HeadClock::new(HEADER, IDLE);
            clock.on_write();
            let timer = HeadTimer::new(clock.clone());
            let start = Instant::now();
            let sleep = timer.sleep_until(start + HEADER);
            clock.on_read();
            sleep.await;
            let waited = start.elapsed();
            assert!(waited >= HEADER && waited < IDLE, "{waited:?}");
        });
    }

    #[test]
    fn reset_keeps_the_gate() {
        let mut runtime = crate::http::runtime::ThreadRuntime::build(crate::config::IoDriver::Epoll, 0).unwrap();
        runtime.block_on(async {
            let clock = HeadClock::new(HEADER, Duration::from_millis(200));
            let timer = HeadTimer::new(clock.clone());
            let mut sleep = timer.sleep_until(Instant::now() + HEADER);
            clock.on_write();
            let start = Instant::now();
            timer.reset(&mut sleep, start + HEADER);
            sleep.await;
            let waited = start.elapsed();
            assert!(waited >= Duration::from_millis(200), "idle deadline, not header: {waited:?}");
        });
    }
}
