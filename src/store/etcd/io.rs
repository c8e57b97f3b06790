//! The etcd client's own thread: a current-thread tokio runtime named `xray-etcd` that runs
//! every etcd request of the process, and the three ways other threads hand it work.
//!
//! Owns: the runtime, the connected `etcd_client::Client`, the bound on calls in flight and the
//! deadline of each call, and the mapping of etcd's errors to [`StoreError`]. Called from every
//! thread: [`Io::call`] returns a future any executor can await (listener threads, on monoio,
//! await it without blocking); [`Io::block`] parks the calling thread until the answer comes
//! (compute, admin and housekeeping threads, behind the blocking [`Store`](super::super::Store)
//! trait); [`Io::blocking`] runs a sequence of such blocking calls on the runtime's blocking
//! pool and returns a future (a listener thread's monitors registry call).
//!
//! Invariant: a listener thread never waits on the network: the request runs on `xray-etcd`,
//! the listener awaits a oneshot channel.
//! Invariant: every call ends within `ETCD_REQUEST_TIMEOUT_MS` (or fails `Unavailable`), and at
//! most `ETCD_CALLS_IN_FLIGHT_MAX` calls wait at once; past it a call fails at once.
//! Deliberately absent: retries of a request etcd may have received. An operation that may be
//! repeated safely (admission, completion) retries in `ops`, where it knows what it is
//! repeating; here only a request that never left (`retry_unsent`: the client's balancer
//! picked a member that refuses connections, e.g. one just killed) is sent again.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

use crate::config::{
    ETCD_BLOCKING_IN_FLIGHT_MAX, ETCD_CALLS_IN_FLIGHT_MAX, ETCD_CONNECT_TIMEOUT_MS, ETCD_REQUEST_TIMEOUT_MS,
    ETCD_UNSENT_ATTEMPTS_MAX, ETCD_UNSENT_PAUSE_MS,
};
use crate::store::{StoreError, StoreResult};

/// The answer of a call, awaited on any executor.
pub type Reply<T> = std::pin::Pin<Box<dyn Future<Output = StoreResult<T>> + Send>>;

/// The etcd runtime thread and its client.
pub struct Io {
    handle: tokio::runtime::Handle,
    client: Client,
    in_flight: Arc<AtomicUsize>,
    /// Blocking sequences running on the runtime's blocking pool (`Io::blocking`).
    blocking_in_flight: Arc<AtomicUsize>,
    stop: parking_lot::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    thread: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Io {
    /// Starts the `xray-etcd` thread and connects to `endpoints` (fails when none answers
    /// within `ETCD_CONNECT_TIMEOUT_MS`).
    pub fn connect(endpoints: &[String]) -> StoreResult<Io> {
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("xray-etcd".into()).spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
            match runtime {
                Ok(runtime) => {
                    let _ = handle_tx.send(Ok(runtime.handle().clone()));
                    runtime.block_on(async {
                        let _ = stop_rx.await;
                    });
                }
                Err(e) => {
                    let _ = handle_tx.send(Err(e.to_string()));
                }
            }
        })?;
        let handle = handle_rx
            .recv()
            .map_err(|_| StoreError::Io("the etcd client thread ended at start".into()))?
            .map_err(|e| StoreError::Io(format!("etcd client runtime: {e}")))?;
        let options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_millis(ETCD_CONNECT_TIMEOUT_MS))
            .with_timeout(Duration::from_millis(ETCD_REQUEST_TIMEOUT_MS))
            .with_keep_alive(Duration::from_secs(2), Duration::from_secs(2))
            .with_keep_alive_while_idle(true);
        let endpoints = endpoints.to_vec();
        let connect = async move {
            let mut client = Client::connect(&endpoints, Some(options)).await.map_err(error)?;
            // `connect` is lazy: one read proves an endpoint answers.
            client.status().await.map_err(error)?;
            Ok(client)
        };
        let in_flight = Arc::new(AtomicUsize::new(0));
        let connect_deadline = Duration::from_millis(ETCD_CONNECT_TIMEOUT_MS + ETCD_REQUEST_TIMEOUT_MS);
        let client = pollster::block_on(spawn(&handle, &in_flight, connect_deadline, connect))?;
        let (stop, thread) = (parking_lot::Mutex::new(Some(stop_tx)), parking_lot::Mutex::new(Some(thread)));
        let blocking_in_flight = Arc::new(AtomicUsize::new(0));
        Ok(Io { handle, client, in_flight, blocking_in_flight, stop, thread })
    }

    /// A clone of the client (cheap: it shares the connection).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// Runs `work` on the etcd thread; the returned future resolves to its answer.
    pub fn call<T, F>(&self, work: F) -> Reply<T>
    where
        T: Send + 'static,
        F: Future<Output = StoreResult<T>> + Send + 'static,
    {
        spawn(&self.handle, &self.in_flight, Duration::from_millis(ETCD_REQUEST_TIMEOUT_MS), work)
    }

    /// As [`Io::call`], for work that may take up to `deadline` (a long poll's watch).
    pub fn call_for<T, F>(&self, deadline: Duration, work: F) -> Reply<T>
    where
        T: Send + 'static,
        F: Future<Output = StoreResult<T>> + Send + 'static,
    {
        spawn(&self.handle, &self.in_flight, deadline, work)
    }

    /// Runs `work` on the etcd thread and parks this thread until it answered.
    pub fn block<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: Future<Output = StoreResult<T>> + Send + 'static,
    {
        pollster::block_on(self.call(work))
    }

    /// Runs `work` — a short sequence of blocking store calls (the monitors' registry) — on
    /// the runtime's blocking pool; the returned future resolves to its answer, so a listener
    /// thread awaits it without blocking. At most `ETCD_BLOCKING_IN_FLIGHT_MAX` run at once;
    /// past it a call fails `Unavailable` at once. Each store call inside is bounded as usual.
    pub fn blocking<T, W>(&self, work: W) -> Reply<T>
    where
        T: Send + 'static,
        W: FnOnce() -> StoreResult<T> + Send + 'static,
    {
        let counter = Arc::clone(&self.blocking_in_flight);
        if counter.fetch_add(1, Ordering::AcqRel) >= ETCD_BLOCKING_IN_FLIGHT_MAX {
            counter.fetch_sub(1, Ordering::AcqRel);
            let busy = format!("more than {ETCD_BLOCKING_IN_FLIGHT_MAX} blocking store sequences waiting");
            return Box::pin(std::future::ready(Err(StoreError::Unavailable(busy))));
        }
        let task = self.handle.spawn_blocking(move || {
            // Given back however `work` ends (a panic too).
            let _slot = SlotGuard(counter);
            work()
        });
        Box::pin(async move {
            task.await.unwrap_or_else(|e| Err(StoreError::Io(format!("a blocking store sequence ended: {e}"))))
        })
    }

    /// Spawns a task that lives as long as the runtime (watches, lease renewal).
    pub fn spawn_background<F: Future<Output = ()> + Send + 'static>(&self, task: F) {
        self.handle.spawn(task);
    }

    /// Stops the runtime (every background task ends) and joins its thread.
    pub fn stop(&self) {
        if let Some(stop) = self.stop.lock().take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Io {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Gives a slot of `Io::blocking` back when dropped.
struct SlotGuard(Arc<AtomicUsize>);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One call: bounded in number and in time.
fn spawn<T, F>(handle: &tokio::runtime::Handle, in_flight: &Arc<AtomicUsize>, deadline: Duration, work: F) -> Reply<T>
where
    T: Send + 'static,
    F: Future<Output = StoreResult<T>> + Send + 'static,
{
    if in_flight.fetch_add(1, Ordering::AcqRel) >= ETCD_CALLS_IN_FLIGHT_MAX {
        in_flight.fetch_sub(1, Ordering::AcqRel);
        let busy = StoreError::Unavailable(format!("more than {ETCD_CALLS_IN_FLIGHT_MAX} etcd calls waiting"));
        return Box::pin(std::future::ready(Err(busy)));
    }
    let (tx, rx) = tokio::sync::oneshot::channel();
    let counter = Arc::clone(in_flight);
    handle.spawn(async move {
        let answer = match tokio::time::timeout(deadline, work).await {
            Ok(answer) => answer,
            Err(_) => Err(StoreError::Unavailable(format!("etcd did not answer within {} ms", deadline.as_millis()))),
        };
        counter.fetch_sub(1, Ordering::AcqRel);
        let _ = tx.send(answer);
    });
    Box::pin(async move {
        rx.await.unwrap_or_else(|_| Err(StoreError::Unavailable("the etcd client thread stopped".into())))
    })
}

/// Sends a request again, up to `ETCD_UNSENT_ATTEMPTS_MAX` times, while it failed before it
/// reached any member (a refused connection): the client balances over every endpoint, and
/// after a member dies it still picks that member's connection now and then.
pub async fn retry_unsent<T, F, Fut>(mut call: F) -> StoreResult<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    let mut attempt = 1;
    loop {
        match call().await {
            Ok(answer) => return Ok(answer),
            Err(e) if attempt < ETCD_UNSENT_ATTEMPTS_MAX && never_sent(&e) => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(ETCD_UNSENT_PAUSE_MS)).await;
            }
            Err(e) => return Err(error(e)),
        }
    }
}

/// True when the request cannot have reached etcd: the connection itself was refused.
fn never_sent(e: &etcd_client::Error) -> bool {
    let text = e.to_string();
    text.contains("connect error") || text.contains("Connection refused")
}

/// etcd's errors as the store's: what may pass with time (no leader, a timeout, a lost
/// connection, a full database) is `Unavailable` (503); the rest is `Io` (500).
pub fn error(e: etcd_client::Error) -> StoreError {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(status) => status_error(&status),
        E::TransportError(e) => StoreError::Unavailable(format!("etcd unreachable: {e}")),
        E::IoError(e) => StoreError::Unavailable(format!("etcd connection: {e}")),
        other => StoreError::Io(format!("etcd: {other}")),
    }
}

fn status_error(status: &tonic::Status) -> StoreError {
    use tonic::Code;
    let message = status.message();
    if message.contains("database space exceeded") {
        return StoreError::Full(
            "etcd is out of space (NOSPACE alarm): nothing can be recorded until an operator compacts, \
             defragments and disarms it"
                .into(),
        );
    }
    match status.code() {
        // tonic reports a broken connection to one member as `Unknown` ("transport error").
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::ResourceExhausted
        | Code::Aborted
        | Code::Cancelled
        | Code::Unknown => StoreError::Unavailable(format!("etcd: {message}")),
        Code::DataLoss => StoreError::Corruption(format!("etcd: {message}")),
        _ => StoreError::Io(format!("etcd: {message}")),
    }
}
