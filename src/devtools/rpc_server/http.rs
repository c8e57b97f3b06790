//! The HTTP side of the local JSON-RPC server: accept loop, connections, one request's
//! handling, and the faulty responses.
//!
//! Owns: the hyper HTTP/1.1 connections, the connection bound, the request-body bound, the
//! request counter and the rendering of each `FaultKind`. Runs on the server's one thread,
//! inside a `LocalSet` (sources are not `Send`).
//!
//! Invariant: at most `RPC_SERVER_CONNECTIONS_MAX` connections are served at once (the accept
//! loop waits for a permit before accepting, so extra clients wait in the kernel's backlog);
//! at most `RPC_SERVER_REQUEST_BYTES_MAX` bytes of a request body are read; headers must
//! arrive within `RPC_SERVER_HEADER_READ_TIMEOUT_MS`. Every request, faulted or not, is
//! counted and waits the plan's latency before its answer. Deliberately absent: TLS and
//! graceful draining on shutdown (a test tool: in-flight connections are dropped).

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use super::faults::{FaultKind, FaultPlan, FaultSchedule};
use super::hostile::Hostile;
use super::methods;
use super::stats::ServerStats;
use crate::config;
use crate::config::{RPC_SERVER_ACCEPT_RETRY_DELAY_MS, RPC_SERVER_HEADER_READ_TIMEOUT_MS};
use crate::ledger::read::LedgerSource;

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// What every connection of one server shares.
struct Shared<S> {
    source: Rc<S>,
    latency: Duration,
    retry_after_s: u64,
    refuse_batches: bool,
    hostile: Option<Hostile>,
    schedule: RefCell<FaultSchedule>,
    stats: Arc<ServerStats>,
}

/// The connection dropped without an answer (the `Drop` fault). hyper closes a connection
/// whose service fails, writing nothing.
#[derive(Debug)]
struct DroppedOnPurpose;

impl std::fmt::Display for DroppedOnPurpose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by fault injection")
    }
}

impl std::error::Error for DroppedOnPurpose {}

/// Serves JSON-RPC over `source` on `listener` until `shutdown` completes. Runs its own
/// `LocalSet`, so it can be awaited on any current-thread runtime.
pub async fn serve<S: LedgerSource + 'static>(
    listener: TcpListener,
    source: Rc<S>,
    faults: FaultPlan,
    stats: Arc<ServerStats>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    faults.validate()?;
    let shared = Rc::new(Shared {
        source,
        latency: Duration::from_millis(faults.latency_ms),
        retry_after_s: faults.retry_after_s,
        refuse_batches: faults.refuse_batches,
        hostile: faults.hostile,
        schedule: RefCell::new(FaultSchedule::new(&faults)),
        stats,
    });
    let local = tokio::task::LocalSet::new();
    local.run_until(accept_loop(listener, shared, shutdown)).await;
    Ok(())
}

async fn accept_loop<S: LedgerSource + 'static>(
    listener: TcpListener,
    shared: Rc<Shared<S>>,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(config::RPC_SERVER_CONNECTIONS_MAX));
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            _ = &mut shutdown => return,
            permit = permits.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                // Invariant: the semaphore is never closed.
                Err(_) => return,
            },
        };
        let stream = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::debug!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(RPC_SERVER_ACCEPT_RETRY_DELAY_MS)).await;
                    continue;
                }
            },
        };
        let shared = shared.clone();
        tokio::task::spawn_local(async move {
            serve_connection(stream, shared).await;
            drop(permit);
        });
    }
}

async fn serve_connection<S: LedgerSource + 'static>(stream: TcpStream, shared: Rc<Shared<S>>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |request| {
        let shared = shared.clone();
        async move { handle(&shared, request).await }
    });
    let result = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(RPC_SERVER_HEADER_READ_TIMEOUT_MS))
        .serve_connection(TokioIo::new(stream), service)
        .await;
    if let Err(e) = result {
        tracing::debug!(error = %e, "connection ended with an error");
    }
}

async fn handle<S: LedgerSource>(
    shared: &Shared<S>,
    request: Request<Incoming>,
) -> Result<Response<Body>, DroppedOnPurpose> {
    shared.stats.requests.fetch_add(1, Ordering::Relaxed);
    // Numbered and scheduled in one synchronous step, so the rule sees arrival order.
    let fault = shared.schedule.borrow_mut().next_fault();
    if fault.is_some() {
        shared.stats.faults.fetch_add(1, Ordering::Relaxed);
    }
    let body = read_body(request).await;
    if !shared.latency.is_zero() {
        tokio::time::sleep(shared.latency).await;
    }
    let body = match body {
        Ok(body) => body,
        Err(refusal) => return Ok(refusal),
    };
    if shared.stats.fails(&body) {
        shared.stats.faults.fetch_add(1, Ordering::Relaxed);
        return Ok(status_response(StatusCode::INTERNAL_SERVER_ERROR, "internal error"));
    }
    match fault {
        None if shared.refuse_batches && methods::is_batch(&body) => Ok(json_response(methods::batch_refusal())),
        None => {
            let answer = methods::answer(&*shared.source, body, &shared.stats).await;
            Ok(match shared.hostile {
                None => json_response(answer),
                Some(hostile) => hostile.rewrite(answer).map_or_else(endless_response, json_response),
            })
        }
        Some(FaultKind::Drop) => Err(DroppedOnPurpose),
        Some(FaultKind::TooManyRequests) => Ok(too_many_requests(shared.retry_after_s)),
        Some(FaultKind::ServerError) => Ok(status_response(StatusCode::INTERNAL_SERVER_ERROR, "internal error")),
        Some(FaultKind::Malformed) => Ok(json_response(br#"{"jsonrpc":"2.0","result":{"context":{"slot":"#.to_vec())),
        Some(FaultKind::Truncated) => {
            Ok(truncated_response(methods::answer(&*shared.source, body, &shared.stats).await))
        }
    }
}

/// The request body, or the response that refuses it (wrong method, too large, cut short).
async fn read_body(request: Request<Incoming>) -> Result<Vec<u8>, Response<Body>> {
    if request.method() != Method::POST {
        return Err(status_response(StatusCode::METHOD_NOT_ALLOWED, "JSON-RPC takes POST"));
    }
    let limited = Limited::new(request.into_body(), config::RPC_SERVER_REQUEST_BYTES_MAX);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes().to_vec()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            let message = format!("request body over {} bytes", config::RPC_SERVER_REQUEST_BYTES_MAX);
            Err(status_response(StatusCode::PAYLOAD_TOO_LARGE, &message))
        }
        Err(_) => Err(status_response(StatusCode::BAD_REQUEST, "request body cut short")),
    }
}

fn full(bytes: Vec<u8>) -> Body {
    Full::new(Bytes::from(bytes)).map_err(|never| match never {}).boxed_unsync()
}

fn json_response(body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(full(body));
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn status_response(status: StatusCode, message: &str) -> Response<Body> {
    let mut response = Response::new(full(message.as_bytes().to_vec()));
    *response.status_mut() = status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn too_many_requests(retry_after_s: u64) -> Response<Body> {
    let mut response = status_response(StatusCode::TOO_MANY_REQUESTS, "too many requests");
    response.headers_mut().insert(RETRY_AFTER, HeaderValue::from(retry_after_s));
    response
}

/// The start of an answer, then a body that never ends (the client's timeouts end it).
fn endless_response() -> Response<Body> {
    let head: [Result<Frame<Bytes>, std::io::Error>; 1] =
        [Ok(Frame::data(Bytes::from_static(b"{\"jsonrpc\":\"2.0\",")))];
    let body = futures_util::StreamExt::chain(futures_util::stream::iter(head), futures_util::stream::pending());
    let mut response = Response::new(StreamBody::new(body).boxed_unsync());
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// `Content-Length` of the whole answer, then its first half and an error, on which hyper
/// closes the connection: the client sees a body that ends early.
fn truncated_response(answer: Vec<u8>) -> Response<Body> {
    let full_len = answer.len();
    let mut half = Bytes::from(answer);
    half.truncate(full_len / 2);
    let frames: [Result<Frame<Bytes>, std::io::Error>; 2] =
        [Ok(Frame::data(half)), Err(std::io::Error::other("truncated by fault injection"))];
    let body = StreamBody::new(futures_util::stream::iter(frames)).boxed_unsync();
    let mut response = Response::new(body);
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(full_len));
    response
}
