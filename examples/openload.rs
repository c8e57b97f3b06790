//! The open-model load generator of the saturation harness (`loadtest/max.sh`): requests start
//! at a constant rate whatever the server's latency, and each one's latency is measured from
//! the instant it was *scheduled*, not from when a connection was free to send it — so a slow
//! answer shows up as latency of every request queued behind it (no coordinated omission), as
//! wrk2 and k6's `constant-arrival-rate` do. k6 on one core tops out near 6–8 k requests/s on
//! this machine, far below half of what the server serves, so the harness needs this one.
//!
//! One thread (a current-thread tokio runtime; pin it with `taskset`), `--connections` HTTP/1.1
//! keep-alive connections (hyper's client). A scheduler task puts each request's scheduled
//! instant into a queue as its time comes (it yields between checks, so it spins on its core
//! and adds no timer granularity to the measurement); a connection takes the oldest, sends it,
//! reads the whole answer and records `now − scheduled` in an HDR histogram. A request whose
//! time comes while `--backlog-max` requests already wait is dropped (and counted), like k6's
//! dropped iterations. No code of this project is on its path.
//!
//! Prints one JSON object: offered and served rates, percentiles in ms, dropped, errors (an
//! answer with another status than `--expect-status`, or an I/O error).
//!
//! Usage: `openload --url http://127.0.0.1:8080/v1/developer/status --rate 20000
//!   [--duration-s 10] [--connections 64] [--backlog-max 64] [--header 'Authorization: Bearer …']
//!   [--method GET] [--body '…'] [--expect-status 200] [--bearers <file>]`
//!
//! `--bearers` names a file of API keys, one per line (at most `BEARERS_MAX`): request k is
//! sent with `Authorization: Bearer <key k mod n>`, so one run spreads over many keys.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::sync::Notify;

/// Longest run accepted (a bound, like everything else in the harness).
const DURATION_S_MAX: u64 = 600;
/// Highest rate accepted, requests per second.
const RATE_PER_S_MAX: u64 = 1_000_000;
/// Most keys a `--bearers` file may hold.
const BEARERS_MAX: usize = 4096;
/// Most connections.
const CONNECTIONS_MAX: usize = 4096;
/// Latencies above this are recorded as this (the histogram's top), in microseconds.
const LATENCY_US_MAX: u64 = 60_000_000;

struct Args {
    url: hyper::Uri,
    rate_per_s: u64,
    duration_s: u64,
    connections: usize,
    backlog_max: usize,
    headers: Vec<(String, String)>,
    /// `Authorization` values to cycle through (`--bearers`); empty: none added.
    bearers: Vec<String>,
    method: Method,
    body: Bytes,
    expect_status: u16,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        url: hyper::Uri::from_static("http://127.0.0.1:8080/healthz"),
        rate_per_s: 1_000,
        duration_s: 10,
        connections: 64,
        backlog_max: 64,
        headers: Vec::new(),
        bearers: Vec::new(),
        method: Method::GET,
        body: Bytes::new(),
        expect_status: 200,
    };
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let value = words.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| v.parse::<u64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--url" => args.url = value.parse().map_err(|e| format!("--url {value}: {e}"))?,
            "--rate" => args.rate_per_s = number(&value)?,
            "--duration-s" => args.duration_s = number(&value)?,
            "--connections" => args.connections = usize::try_from(number(&value)?).map_err(|e| e.to_string())?,
            "--backlog-max" => args.backlog_max = usize::try_from(number(&value)?).map_err(|e| e.to_string())?,
            "--header" => {
                let (name, text) = value.split_once(':').ok_or_else(|| format!("--header {value}: no ':'"))?;
                args.headers.push((name.trim().to_owned(), text.trim().to_owned()));
            }
            "--bearers" => {
                let text = std::fs::read_to_string(&value).map_err(|e| format!("--bearers {value}: {e}"))?;
                args.bearers =
                    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(|k| format!("Bearer {k}")).collect();
                if args.bearers.len() > BEARERS_MAX {
                    return Err(format!("--bearers: more than {BEARERS_MAX} keys"));
                }
            }
            "--method" => args.method = value.parse().map_err(|e| format!("--method {value}: {e}"))?,
            "--body" => args.body = Bytes::from(value),
            "--expect-status" => args.expect_status = u16::try_from(number(&value)?).map_err(|e| e.to_string())?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if !(1..=RATE_PER_S_MAX).contains(&args.rate_per_s) {
        return Err(format!("--rate must be 1..={RATE_PER_S_MAX}"));
    }
    if !(1..=DURATION_S_MAX).contains(&args.duration_s) {
        return Err(format!("--duration-s must be 1..={DURATION_S_MAX}"));
    }
    if !(1..=CONNECTIONS_MAX).contains(&args.connections) {
        return Err(format!("--connections must be 1..={CONNECTIONS_MAX}"));
    }
    if args.url.host().is_none() {
        return Err("--url needs a host".into());
    }
    Ok(args)
}

/// What the scheduler and the connections share (one thread: `Rc<RefCell>`).
struct Shared {
    /// Scheduled instants of requests not yet sent, oldest first.
    waiting: VecDeque<Instant>,
    /// True once the scheduler has scheduled its last request.
    done: bool,
    latencies_us: hdrhistogram::Histogram<u64>,
    completed: u64,
    /// Requests handed to a connection so far.
    sent: u64,
    errors: u64,
    dropped: u64,
}

async fn scheduler(args: Rc<Args>, shared: Rc<RefCell<Shared>>, ready: Rc<Notify>, start: Instant) {
    let total = args.rate_per_s * args.duration_s;
    let interval_ns = 1_000_000_000 / args.rate_per_s;
    let mut next: u64 = 0;
    while next < total {
        let due = ((start.elapsed().as_nanos() / u128::from(interval_ns)) as u64 + 1).min(total);
        if due > next {
            let mut state = shared.borrow_mut();
            let mut queued = 0;
            for k in next..due {
                if state.waiting.len() >= args.backlog_max {
                    state.dropped += 1;
                } else {
                    state.waiting.push_back(start + Duration::from_nanos(k * interval_ns));
                    queued += 1;
                }
            }
            next = due;
            drop(state);
            // One wake-up per request (an idle connection, or a permit the next one to look
            // takes); busy connections look at the queue again when their answer is in.
            for _ in 0..queued.min(args.connections) {
                ready.notify_one();
            }
        }
        tokio::task::yield_now().await;
    }
    shared.borrow_mut().done = true;
    ready.notify_waiters();
}

/// Request number `k` (its place in the run picks its bearer).
fn request(args: &Args, k: u64) -> Result<Request<Full<Bytes>>, String> {
    let authority = args.url.authority().map(|a| a.as_str().to_owned()).unwrap_or_default();
    let path = args.url.path_and_query().map_or("/", |p| p.as_str());
    let mut builder = Request::builder().method(args.method.clone()).uri(path).header("host", authority);
    for (name, value) in &args.headers {
        builder = builder.header(name.as_str(), value.as_str());
    }
    if !args.bearers.is_empty() {
        builder = builder.header("authorization", args.bearers[(k % args.bearers.len() as u64) as usize].as_str());
    }
    if !args.body.is_empty() {
        builder = builder.header("content-type", "application/json");
    }
    builder.body(Full::new(args.body.clone())).map_err(|e| e.to_string())
}

async fn connection(args: Rc<Args>, shared: Rc<RefCell<Shared>>, ready: Rc<Notify>) -> Result<(), String> {
    let host = args.url.host().unwrap_or("127.0.0.1").to_owned();
    let port = args.url.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host.as_str(), port)).await.map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.map_err(|e| e.to_string())?;
    tokio::task::spawn_local(conn);
    loop {
        let scheduled = loop {
            let notified = ready.notified();
            {
                let mut state = shared.borrow_mut();
                if let Some(at) = state.waiting.pop_front() {
                    break Some(at);
                }
                if state.done {
                    break None;
                }
            }
            notified.await;
        };
        let Some(scheduled) = scheduled else { return Ok(()) };
        let k = {
            let mut state = shared.borrow_mut();
            state.sent += 1;
            state.sent
        };
        let outcome = match sender.send_request(request(&args, k)?).await {
            Ok(response) => {
                let status = response.status().as_u16();
                response.into_body().collect().await.map(|_| status).map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        let latency_us = u64::try_from(scheduled.elapsed().as_micros()).unwrap_or(u64::MAX).min(LATENCY_US_MAX);
        let mut state = shared.borrow_mut();
        match outcome {
            Ok(status) if status == args.expect_status => {
                state.completed += 1;
                let _ = state.latencies_us.record(latency_us.max(1));
            }
            Ok(_) => state.errors += 1,
            Err(e) => {
                state.errors += 1;
                drop(state);
                return Err(e);
            }
        }
    }
}

async fn run(args: Args) -> Result<String, String> {
    let args = Rc::new(args);
    let histogram = hdrhistogram::Histogram::new_with_bounds(1, LATENCY_US_MAX, 3).map_err(|e| e.to_string())?;
    let shared = Rc::new(RefCell::new(Shared {
        waiting: VecDeque::with_capacity(args.backlog_max),
        done: false,
        latencies_us: histogram,
        completed: 0,
        sent: 0,
        errors: 0,
        dropped: 0,
    }));
    let ready = Rc::new(Notify::new());
    let connections: Vec<_> = (0..args.connections)
        .map(|_| tokio::task::spawn_local(connection(args.clone(), shared.clone(), ready.clone())))
        .collect();
    // Let the connections open before the clock starts.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let start = Instant::now();
    scheduler(args.clone(), shared.clone(), ready.clone(), start).await;
    let mut connection_errors = 0;
    for handle in connections {
        if !matches!(handle.await, Ok(Ok(()))) {
            connection_errors += 1;
        }
    }
    let elapsed_s = start.elapsed().as_secs_f64();
    let state = shared.borrow();
    let h = &state.latencies_us;
    let ms = |q: f64| h.value_at_quantile(q) as f64 / 1_000.0;
    Ok(format!(
        "{{\"offered_per_s\":{},\"duration_s\":{:.3},\"completed\":{},\"served_per_s\":{:.1},\"p50_ms\":{:.3},\
         \"p99_ms\":{:.3},\"p999_ms\":{:.3},\"max_ms\":{:.3},\"dropped\":{},\"errors\":{},\"connection_errors\":{}}}",
        args.rate_per_s,
        elapsed_s,
        state.completed,
        state.completed as f64 / elapsed_s,
        ms(0.5),
        ms(0.99),
        ms(0.999),
        h.max() as f64 / 1_000.0,
        state.dropped,
        state.errors,
        connection_errors,
    ))
}

fn main() -> std::process::ExitCode {
    let outcome = parse_args().and_then(|args| {
        let runtime =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| format!("runtime: {e}"))?;
        tokio::task::LocalSet::new().block_on(&runtime, run(args))
    });
    match outcome {
        Ok(line) => {
            println!("{line}");
            std::process::ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}
