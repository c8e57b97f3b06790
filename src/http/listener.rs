//! Thread-per-core listeners: N threads, each with its own monoio runtime and its own
//! SO_REUSEPORT socket on the same address, accepting and serving connections.
//!
//! Owns: binding (an exclusive probe, then one reuse-port socket per thread), the listener
//! threads, the accept loop with the per-thread connection cap, the drain on stop, and
//! `ServerHandle`. `start` runs on the caller's thread and returns once every listener thread
//! has built its runtime and handler (or fails as a whole); the accept loops then run on their
//! own threads until `stop`.
//!
//! Binding: the address is first bound alone (SO_REUSEADDR only), which fails with
//! `EADDRINUSE` if any other socket listens there — so a second server on the same port is an
//! error, not a silent split of traffic — and resolves port 0; the probe is closed and the N
//! reuse-port sockets are bound to the resolved address. The kernel spreads new connections
//! over the N sockets; a thread never steals another's connections.
//!
//! Invariant: at most `connections_per_thread_max` connections are open per thread; a
//! connection past the cap is closed at accept (the client sees a reset or EOF, nothing is
//! read). The per-client cap (`peers::PeerTable`, one for all threads, made here) is checked
//! by the connection itself, once it knows its client. After `stop` no connection is accepted; open ones finish their current request and
//! close; whatever is still open after `drain_timeout` is dropped.
//! Deliberately absent: signal handling (the caller wires SIGTERM to `ServerHandle::stop`).
//! Known cost of stopping: the accept in flight is cancelled; on io_uring a connection the
//! kernel completed in that instant is not closed until the process exits (one per thread).

use std::cell::Cell;
use std::net::SocketAddr;
use std::pin::pin;
use std::rc::Rc;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures_util::future::{select, Either};
use socket2::{Domain, Protocol, Socket, Type};

use super::config::ServerConfig;
use super::conn::{serve, ConnSettings};
use super::handler::{Handler, HandlerFactory, StopState, ThreadContext};
use super::peers::{PeerTable, ProxyTrust};
use super::runtime::{DriverKind, ThreadRuntime};
use crate::config::{ACCEPT_ERROR_PAUSE_MS, DRAIN_POLL_MS};

/// Why the server could not start or did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("invalid server config: {0}")]
    Config(String),
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("listener thread {index}: {message}")]
    Thread { index: usize, message: String },
}

/// A running server: its address, the drivers its threads got, and the way to stop it.
/// Dropping the handle stops the server and waits for its threads.
#[derive(Debug)]
pub struct ServerHandle {
    local_addr: SocketAddr,
    drivers: Vec<DriverKind>,
    stop: StopState,
    threads: Vec<JoinHandle<()>>,
}

impl ServerHandle {
    /// The bound address (with the real port when the config asked for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The I/O driver of each listener thread, by index.
    pub fn drivers(&self) -> &[DriverKind] {
        &self.drivers
    }

    /// The shared stop state (e.g. for a signal handler thread).
    pub fn stop_state(&self) -> StopState {
        self.stop.clone()
    }

    /// `/healthz` starts answering 503; requests are still served.
    pub fn start_draining(&self) {
        self.stop.start_draining();
    }

    /// Stops accepting; connections finish their current request and close.
    pub fn stop(&self) {
        self.stop.stop();
    }

    /// Waits until every listener thread has drained and exited.
    pub fn join(mut self) -> Result<(), ServerError> {
        join_all(std::mem::take(&mut self.threads))
    }

    /// `stop`, then `join`.
    pub fn shutdown(self) -> Result<(), ServerError> {
        self.stop();
        self.join()
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if !self.threads.is_empty() {
            self.stop.stop();
            if let Err(error) = join_all(std::mem::take(&mut self.threads)) {
                tracing::error!(%error, "listener thread failed");
            }
        }
    }
}

fn join_all(threads: Vec<JoinHandle<()>>) -> Result<(), ServerError> {
    let mut outcome = Ok(());
    for (index, thread) in threads.into_iter().enumerate() {
        if thread.join().is_err() {
            outcome = Err(ServerError::Thread { index, message: "panicked".into() });
        }
    }
    outcome
}

/// Binds, starts `config.threads` listener threads with one handler each from `factory`, and
/// returns once all of them serve.
pub fn start<H: Handler, F: HandlerFactory<H>>(config: ServerConfig, factory: F) -> Result<ServerHandle, ServerError> {
    config.validate().map_err(ServerError::Config)?;
    let sockets = bind_all(&config)?;
    let local_addr = config.listen;
    let local_addr = sockets[0].local_addr().map_err(|source| ServerError::Bind { addr: local_addr, source })?;
    let factory = Arc::new(factory);
    let stop = StopState::default();
    let proxies = Arc::new(config.proxies.clone());
    let peers = PeerTable::new(config.connections_per_client_max);
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut threads = Vec::with_capacity(sockets.len());
    for (index, socket) in sockets.into_iter().enumerate() {
        let spawn = ListenerThread {
            index,
            socket,
            config: config.clone(),
            factory: factory.clone(),
            stop: stop.clone(),
            ready: ready_tx.clone(),
            proxies: proxies.clone(),
            peers: peers.clone(),
        };
        let thread = std::thread::Builder::new().name(format!("xray-listen-{index}")).spawn(move || spawn.run());
        match thread {
            Ok(thread) => threads.push(thread),
            Err(error) => return abort(stop, threads, ServerError::Thread { index, message: error.to_string() }),
        }
    }
    drop(ready_tx);
    let mut drivers = vec![DriverKind::Epoll; threads.len()];
    for _ in 0..threads.len() {
        match ready_rx.recv() {
            Ok((index, Ok(driver))) => drivers[index] = driver,
            Ok((index, Err(message))) => return abort(stop, threads, ServerError::Thread { index, message }),
            Err(_) => {
                let error = ServerError::Thread { index: 0, message: "exited during start".into() };
                return abort(stop, threads, error);
            }
        }
    }
    tracing::info!(addr = %local_addr, threads = threads.len(), "listening");
    Ok(ServerHandle { local_addr, drivers, stop, threads })
}

fn abort(stop: StopState, threads: Vec<JoinHandle<()>>, error: ServerError) -> Result<ServerHandle, ServerError> {
    stop.stop();
    let _ = join_all(threads);
    Err(error)
}

/// The exclusive probe, then one SO_REUSEPORT socket per thread on the resolved address.
fn bind_all(config: &ServerConfig) -> Result<Vec<std::net::TcpListener>, ServerError> {
    let bind_error = |source| ServerError::Bind { addr: config.listen, source };
    let probe = new_socket(config.listen, false).map_err(bind_error)?;
    probe.bind(&config.listen.into()).map_err(bind_error)?;
    let resolved = probe.local_addr().map_err(bind_error)?.as_socket().unwrap_or(config.listen);
    drop(probe);
    let mut sockets = Vec::with_capacity(config.threads);
    for _ in 0..config.threads {
        let socket = new_socket(resolved, true).map_err(bind_error)?;
        socket.bind(&resolved.into()).map_err(bind_error)?;
        socket.listen(config.accept_backlog_len).map_err(bind_error)?;
        sockets.push(socket.into());
    }
    Ok(sockets)
}

fn new_socket(addr: SocketAddr, reuse_port: bool) -> std::io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Restarting right after a stop must not wait for TIME_WAIT connections to expire.
    socket.set_reuse_address(true)?;
    socket.set_reuse_port(reuse_port)?;
    Ok(socket)
}

/// Everything one listener thread needs, moved onto it.
struct ListenerThread<F> {
    index: usize,
    socket: std::net::TcpListener,
    config: ServerConfig,
    factory: Arc<F>,
    stop: StopState,
    ready: mpsc::Sender<(usize, Result<DriverKind, String>)>,
    proxies: Arc<ProxyTrust>,
    peers: Arc<PeerTable>,
}

impl<F> ListenerThread<F> {
    fn run<H: Handler>(self)
    where
        F: HandlerFactory<H>,
    {
        let mut runtime = match ThreadRuntime::build(self.config.driver, self.index) {
            Ok(runtime) => runtime,
            Err(error) => {
                let _ = self.ready.send((self.index, Err(format!("{:?} runtime: {error}", self.config.driver))));
                return;
            }
        };
        let driver = runtime.kind();
        runtime.block_on(self.serve(driver));
    }

    async fn serve<H: Handler>(self, driver: DriverKind)
    where
        F: HandlerFactory<H>,
    {
        let index = self.index;
        let listener = match register(self.socket, driver) {
            Ok(listener) => listener,
            Err(error) => {
                let _ = self.ready.send((index, Err(format!("register socket: {error}"))));
                return;
            }
        };
        let context = ThreadContext { index, driver, stop: self.stop.clone() };
        let handler = Rc::new((self.factory)(&context));
        let settings = Rc::new(ConnSettings {
            header_bytes_max: self.config.header_bytes_max,
            read_buffer_bytes_max: self.config.read_buffer_bytes_max(),
            header_read_timeout: self.config.header_read_timeout,
            keep_alive_idle: self.config.keep_alive_idle,
            body_read_timeout: self.config.body_read_timeout,
            write_stall_timeout: self.config.write_stall_timeout,
            requests_per_connection_max: self.config.requests_per_connection_max,
            proxies: self.proxies.clone(),
            peers: self.peers.clone(),
        });
        let _ = self.ready.send((index, Ok(driver)));
        let open = Rc::new(Cell::new(0usize));
        let accept = AcceptLoop { listener, handler, settings, stop: self.stop, open: open.clone() };
        accept.run(self.config.connections_per_thread_max).await;
        drain(index, &open, self.config.drain_timeout).await;
    }
}

/// Hands the socket to this thread's runtime (epoll needs it non-blocking; io_uring does not).
fn register(socket: std::net::TcpListener, driver: DriverKind) -> std::io::Result<monoio::net::TcpListener> {
    socket.set_nonblocking(driver == DriverKind::Epoll)?;
    monoio::net::TcpListener::from_std(socket)
}

struct AcceptLoop<H> {
    listener: monoio::net::TcpListener,
    handler: Rc<H>,
    settings: Rc<super::conn::ConnSettings>,
    stop: StopState,
    open: Rc<Cell<usize>>,
}

impl<H: Handler> AcceptLoop<H> {
    /// Accepts until stop; the listener socket closes when this returns.
    async fn run(self, connections_max: usize) {
        let mut stopped = pin!(self.stop.stopped());
        loop {
            let accepted = match select(pin!(self.listener.accept()), stopped.as_mut()).await {
                Either::Left((accepted, _)) => accepted,
                Either::Right(_) => return,
            };
            let (stream, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    monoio::time::sleep(Duration::from_millis(ACCEPT_ERROR_PAUSE_MS)).await;
                    continue;
                }
            };
            if self.open.get() >= connections_max {
                tracing::debug!(%peer, connections_max, "connection cap reached; closing");
                drop(stream);
                continue;
            }
            let guard = OpenGuard::new(self.open.clone());
            let (handler, settings, stop) = (self.handler.clone(), self.settings.clone(), self.stop.clone());
            monoio::spawn(async move {
                serve(stream, peer.ip(), handler, settings, stop).await;
                drop(guard);
            });
        }
    }
}

/// Counts an open connection for as long as it lives.
struct OpenGuard(Rc<Cell<usize>>);

impl OpenGuard {
    fn new(open: Rc<Cell<usize>>) -> OpenGuard {
        open.set(open.get() + 1);
        OpenGuard(open)
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.set(self.0.get().saturating_sub(1));
    }
}

/// Waits for this thread's connections to close, at most `drain_timeout`.
async fn drain(index: usize, open: &Cell<usize>, drain_timeout: Duration) {
    let deadline = Instant::now() + drain_timeout;
    while open.get() > 0 && Instant::now() < deadline {
        monoio::time::sleep(Duration::from_millis(DRAIN_POLL_MS)).await;
    }
    match open.get() {
        0 => tracing::info!(thread = index, "listener drained"),
        left => tracing::warn!(thread = index, left, "drain timeout: closing open connections"),
    }
}
