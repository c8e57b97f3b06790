//! `xray ledger serve`: any ledger source as a local Solana JSON-RPC endpoint over real
//! HTTP/1.1, with deterministic fault injection, for testing the rpc source and its callers.
//!
//! Owns: `run` (the CLI entry; its flags are `cli`'s), `spawn_in_thread` /
//! `RunningServer` (the test entry: a server on its own thread and runtime), and the parts
//! `http` (connections, faults on the wire), `methods` (JSON-RPC dispatch), `faults` (which
//! request fails how) and `hostile` (answers a malicious node could send). The server runs on one thread: a current-thread tokio runtime with a
//! `LocalSet`, since sources are not `Send`; only `ServerStats` is read from other threads.
//!
//! Invariant: what the server answers is what the source says, in the wire shapes a node
//! uses, so `build_view` over `rpc:` to this server equals `build_view` over the source
//! itself (except `coverage.source`). Faults are chosen by a deterministic rule (see
//! `faults`), never at random. Bounded: connections, request bytes, batch length, latency.
//! Deliberately absent: TLS, authentication and every method the fetch plan does not use.

mod faults;
mod hostile;
mod http;
mod methods;
mod stats;

use std::future::Future;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::net::TcpListener;
use tokio::sync::oneshot;

pub use faults::{FaultKind, FaultPlan, FaultSchedule, FAULT_LATENCY_MS_MAX, FAULT_RETRY_AFTER_S_MAX};
pub use hostile::Hostile;
pub use http::serve;
pub use methods::{answer, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
pub use stats::ServerStats;

use crate::config::SourceSpec;
use crate::ledger::rpc::RpcOptions;
use crate::ledger::LedgerError;
use crate::ledger::{read::LedgerSource, source::Source};

/// `xray ledger serve`: serves until Ctrl-C. Prints `listening on http://…` to stderr once
/// the socket is bound.
pub fn run(spec: &SourceSpec, listen: SocketAddr, faults: FaultPlan) -> Result<(), String> {
    faults.validate()?;
    let runtime = crate::ledger::runtime()?;
    runtime.block_on(async {
        let source = Source::open(spec, RpcOptions::default()).map_err(|e| e.to_string())?;
        let listener = TcpListener::bind(listen).await.map_err(|e| format!("listen on {listen}: {e}"))?;
        let addr = listener.local_addr().map_err(|e| format!("listen: {e}"))?;
        eprintln!("serving {spec} with {faults}");
        eprintln!("listening on http://{addr}");
        serve(listener, Rc::new(source), faults, Arc::new(ServerStats::default()), ctrl_c()).await
    })
}

async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        // No signal handling here: serve until the process is killed.
        std::future::pending::<()>().await;
    }
}

/// A server running on its own thread (see `spawn_in_thread`). Dropping it stops it.
pub struct RunningServer {
    addr: SocketAddr,
    stats: Arc<ServerStats>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

impl RunningServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`, ready for `RpcSource::new` or `rpc:` specs.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// HTTP requests received so far (a batch counts once).
    pub fn requests(&self) -> u64 {
        self.stats.requests()
    }

    /// JSON-RPC calls answered so far, by method, a batch's items one by one.
    pub fn calls(&self) -> std::collections::BTreeMap<String, u64> {
        self.stats.calls()
    }

    /// JSON-RPC calls answered so far, every method together.
    pub fn calls_total(&self) -> u64 {
        self.stats.calls_total()
    }

    /// Answers every request naming `method` with 500 from now on (`None`: none).
    pub fn fail_method(&self, method: Option<&str>) {
        self.stats.fail_method(method);
    }

    /// Requests answered with a fault so far.
    pub fn faults(&self) -> u64 {
        self.stats.faults()
    }

    /// Stops the server and waits for its thread.
    pub fn stop(mut self) -> Result<(), String> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Result<(), String> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err("rpc server thread panicked".into()),
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.shut_down();
    }
}

/// Serves the source `make_source` builds on a new thread with its own current-thread
/// runtime, listening on an ephemeral loopback port. Returns once the source is open and the
/// socket accepts connections, so callers on any runtime (or none) can use it at once.
pub fn spawn_in_thread<S, F>(make_source: F, faults: FaultPlan) -> Result<RunningServer, String>
where
    S: LedgerSource + 'static,
    F: FnOnce() -> Result<S, LedgerError> + Send + 'static,
{
    faults.validate()?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| format!("bind: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| format!("bind: {e}"))?;
    let stats = Arc::new(ServerStats::default());
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let thread_stats = stats.clone();
    let thread = std::thread::Builder::new()
        .name("xray-rpc-server".into())
        .spawn(move || {
            let shutdown = async move {
                let _ = stop_rx.await;
            };
            server_thread(listener, make_source, faults, thread_stats, ready_tx, shutdown)
        })
        .map_err(|e| format!("spawn rpc server thread: {e}"))?;
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(RunningServer { addr, stats, stop: Some(stop_tx), thread: Some(thread) }),
        Ok(Err(message)) => Err(message),
        // The thread ended before saying it was ready: its result says why.
        Err(_) => {
            Err(thread.join().map_or_else(|_| "rpc server thread panicked".into(), |r| r.err().unwrap_or_default()))
        }
    }
}

/// `spawn_in_thread` for a `--ledger` spec.
pub fn spawn_spec_in_thread(spec: SourceSpec, faults: FaultPlan) -> Result<RunningServer, String> {
    spawn_in_thread(move || Source::open(&spec, RpcOptions::default()), faults)
}

fn server_thread<S, F>(
    listener: std::net::TcpListener,
    make_source: F,
    faults: FaultPlan,
    stats: Arc<ServerStats>,
    ready: std::sync::mpsc::Sender<Result<(), String>>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String>
where
    S: LedgerSource + 'static,
    F: FnOnce() -> Result<S, LedgerError>,
{
    let started = crate::ledger::runtime().and_then(|runtime| {
        // `from_std` needs the runtime's reactor, hence inside `enter`.
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(listener).map_err(|e| format!("listen: {e}"))?
        };
        let source = make_source().map_err(|e| e.to_string())?;
        Ok((runtime, listener, source))
    });
    let (runtime, listener, source) = match started {
        Ok(started) => started,
        Err(message) => {
            let _ = ready.send(Err(message.clone()));
            return Err(message);
        }
    };
    let _ = ready.send(Ok(()));
    runtime.block_on(serve(listener, Rc::new(source), faults, stats, shutdown))
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn spawned_server_reports_source_errors() {
        let result = spawn_in_thread(
            || -> Result<crate::ledger::demo::DemoLedger, LedgerError> { Err(LedgerError::Invalid("no".into())) },
            FaultPlan::default(),
        );
        assert!(matches!(result, Err(m) if m.contains("no")));
        assert!(spawn_spec_in_thread(SourceSpec::Demo { seed: 1 }, FaultPlan::only(FaultKind::Drop, 2.0)).is_err());
    }
}
