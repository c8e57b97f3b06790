//! The HTTP edge over real loopback sockets: listeners on an ephemeral port (SO_REUSEPORT
//! group), a real HTTP client (reqwest on a current-thread tokio runtime) and raw TCP for
//! malformed and slow clients. Every wait is bounded; timeouts are configured short.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use simd_json::prelude::*;
use xray::api::ApiError;
use xray::config::IoDriver;
use xray::devtools::edge::DemoHandler;
use xray::http::{
    start, uring_available, ApiRequest, ApiResponse, DriverKind, Handler, RequestId, ServerConfig, ServerHandle,
    ThreadContext,
};

const HEADER_TIMEOUT: Duration = Duration::from_millis(300);
const IDLE_TIMEOUT: Duration = Duration::from_millis(1_200);
const BIG_BODY_BYTES: usize = 64 * 1024;
const BODY_TIMEOUT: Duration = Duration::from_millis(400);
const WALLET: &str = "/v1/developer/intelligence/wallet";
const SYSTEM_PROGRAM: &str = "11111111111111111111111111111111";

fn config(driver: IoDriver) -> ServerConfig {
    ServerConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: 2,
        driver,
        header_read_timeout: HEADER_TIMEOUT,
        keep_alive_idle: IDLE_TIMEOUT,
        body_read_timeout: BODY_TIMEOUT,
        drain_timeout: Duration::from_secs(3),
        ..ServerConfig::default()
    }
}

/// The demo handler, plus `/test/slow` (sleeps 300 ms), `/test/panic`, `/test/thread` and
/// `/test/client` (the client address the edge resolved) and `/test/big` (a 64 KiB answer).
struct TestHandler(DemoHandler, usize);

impl Handler for TestHandler {
    async fn handle(&self, request: ApiRequest) -> ApiResponse {
        match request.path.as_str() {
            "/test/slow" => {
                monoio::time::sleep(Duration::from_millis(300)).await;
                ApiResponse::json(200, r#"{"slow":true}"#)
            }
            "/test/panic" => panic!("test handler panic"),
            "/test/thread" => ApiResponse::json(200, format!(r#"{{"thread":{}}}"#, self.1)),
            "/test/big" => ApiResponse::json(200, format!(r#"{{"big":"{}"}}"#, "a".repeat(BIG_BODY_BYTES))),
            "/test/client" => ApiResponse::json(200, format!(r#"{{"client":"{}"}}"#, request.client_ip)),
            _ => self.0.handle(request).await,
        }
    }

    fn internal_error(&self, request_id: &RequestId, cause: &str) -> ApiResponse {
        ApiError::internal(&cause).to_response(request_id)
    }
}

fn serve(config: ServerConfig) -> ServerHandle {
    start(config, |context: &ThreadContext| TestHandler(DemoHandler::new(context), context.index))
        .expect("server starts")
}

// ---- raw HTTP/1.1 over TcpStream ----

struct Raw {
    stream: TcpStream,
    buf: Vec<u8>,
}

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> simd_json::OwnedValue {
        simd_json::to_owned_value(&mut self.body.clone()).expect("JSON body")
    }
}

impl Raw {
    fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).expect("connect");
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Raw { stream, buf: Vec::new() }
    }

    /// A connection from another loopback address (`127.0.0.<last>`): another client.
    fn connect_from(last: u8, addr: SocketAddr) -> Raw {
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
        socket.bind(&SocketAddr::from(([127, 0, 0, last], 0)).into()).expect("bind a loopback source");
        socket.connect(&addr.into()).expect("connect");
        let stream: TcpStream = socket.into();
        stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        Raw { stream, buf: Vec::new() }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send");
    }

    fn get(&mut self, path: &str) -> Resp {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        self.response().expect("a response")
    }

    /// Reads one response (Content-Length framed); `None` if the server closed first.
    fn response(&mut self) -> Option<Resp> {
        let head_end = loop {
            if let Some(i) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if !self.fill() {
                return None;
            }
        };
        let head = String::from_utf8(self.buf[..head_end].to_vec()).unwrap();
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
        let headers: Vec<(String, String)> = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
            .collect();
        let len: usize = headers.iter().find(|(n, _)| n == "content-length").map_or(0, |(_, v)| v.parse().unwrap());
        while self.buf.len() < head_end + len {
            assert!(self.fill(), "closed inside a body");
        }
        let body = self.buf[head_end..head_end + len].to_vec();
        self.buf.drain(..head_end + len);
        Some(Resp { status, headers, body })
    }

    /// Reads more bytes; false on EOF or reset.
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        match self.stream.read(&mut chunk) {
            Ok(0) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => false,
            Err(e) => panic!("read: {e}"),
        }
    }

    /// Time until the server closes the connection (reading and discarding), at most 5 s.
    fn time_to_close(&mut self) -> Duration {
        let start = Instant::now();
        while self.fill() {}
        start.elapsed()
    }
}

// ---- reqwest ----

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(5)).build().unwrap()
}

fn url(handle: &ServerHandle, path: &str) -> String {
    format!("http://{}{path}", handle.local_addr())
}

async fn json_of(response: reqwest::Response) -> (u16, reqwest::header::HeaderMap, simd_json::OwnedValue) {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = response.bytes().await.unwrap().to_vec();
    (status, headers, simd_json::to_owned_value(&mut body).expect("JSON body"))
}

fn assert_error(value: &simd_json::OwnedValue, code: &str) {
    let error = value.get("error").unwrap_or_else(|| panic!("no error object: {value}"));
    assert_eq!(error.get_str("code"), Some(code), "{value}");
    assert!(error.get_str("message").is_some_and(|m| !m.is_empty()));
    assert!(error.get_str("requestId").is_some());
    assert_eq!(value.as_object().unwrap().len(), 1);
}

/// The same checks against any driver.
async fn smoke(handle: &ServerHandle) {
    let client = client();
    let response = client.get(url(handle, "/healthz")).send().await.unwrap();
    let request_id = response.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(request_id.starts_with("req_"), "{request_id}");
    assert_eq!(response.headers()["content-type"], "application/json");
    let (status, _, body) = json_of(response).await;
    assert_eq!(status, 200);
    assert_eq!(body.get_str("status"), Some("ok"));

    let (status, headers, body) = json_of(client.get(url(handle, "/v1/developer/nope")).send().await.unwrap()).await;
    assert_eq!(status, 404);
    assert_error(&body, "NOT_FOUND");
    assert!(body.get("error").unwrap().get("details").is_none(), "NOT_FOUND has no details");
    assert_eq!(body.get("error").unwrap().get_str("requestId"), headers["x-request-id"].to_str().ok());

    let (status, headers, body) = json_of(client.get(url(handle, WALLET)).send().await.unwrap()).await;
    assert_eq!(status, 405);
    assert_eq!(headers["allow"], "POST");
    assert_error(&body, "METHOD_NOT_ALLOWED");
    assert_eq!(body.get("error").unwrap().get("details").unwrap().get("allow").unwrap().as_array().unwrap().len(), 1);

    let (status, headers, body) = json_of(client.get(url(handle, "/v1/developer/status")).send().await.unwrap()).await;
    assert_eq!(status, 401);
    assert_eq!(headers["www-authenticate"], "Bearer");
    assert_error(&body, "UNAUTHENTICATED");
    assert_eq!(body.get("error").unwrap().get("details").unwrap().get_str("reason"), Some("missing"));

    let (status, _, body) = json_of(post(&client, handle, "application/json", r#"{"wallet":"0OIl"}"#).await).await;
    assert_eq!(status, 400);
    assert_error(&body, "INVALID_ADDRESS");
}

async fn post(client: &reqwest::Client, handle: &ServerHandle, content_type: &str, body: &str) -> reqwest::Response {
    client
        .post(url(handle, WALLET))
        .header("authorization", "Bearer svc_live_test")
        .header("content-type", content_type)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn epoll_driver_serves_the_smoke_test() {
    let handle = serve(config(IoDriver::Epoll));
    assert_eq!(handle.drivers(), &[DriverKind::Epoll, DriverKind::Epoll]);
    smoke(&handle).await;
}

#[tokio::test]
async fn uring_driver_serves_the_smoke_test() {
    if !uring_available() {
        eprintln!("io_uring is not available here (seccomp or kernel): uring smoke test skipped, epoll covered");
        let handle = serve(config(IoDriver::Auto));
        assert_eq!(handle.drivers(), &[DriverKind::Epoll, DriverKind::Epoll], "auto falls back to epoll");
        smoke(&handle).await;
        return;
    }
    let handle = serve(config(IoDriver::Uring));
    assert_eq!(handle.drivers(), &[DriverKind::Uring, DriverKind::Uring]);
    smoke(&handle).await;
    let auto = serve(config(IoDriver::Auto));
    assert_eq!(auto.drivers()[0], DriverKind::Uring);
}

#[tokio::test]
async fn request_ids_are_echoed_or_replaced() {
    let handle = serve(config(IoDriver::Auto));
    let client = client();
    let get = |id: String| client.get(url(&handle, "/nope")).header("x-request-id", id).send();
    let valid = format!("abc.DEF_-{}", "9".repeat(55));
    assert_eq!(valid.len(), 64);
    let (_, headers, body) = json_of(get(valid.clone()).await.unwrap()).await;
    assert_eq!(headers["x-request-id"], valid.as_str());
    assert_eq!(body.get("error").unwrap().get_str("requestId"), Some(valid.as_str()));
    for bad in ["x".repeat(65), "bad id".into(), "semi;colon".into(), "slash/".into()] {
        let (_, headers, body) = json_of(get(bad.clone()).await.unwrap()).await;
        let echoed = headers["x-request-id"].to_str().unwrap();
        assert!(echoed.starts_with("req_") && echoed != bad, "{bad:?} → {echoed}");
        assert_eq!(body.get("error").unwrap().get_str("requestId"), Some(echoed));
    }
}

#[tokio::test]
async fn body_checks_415_413_400() {
    let handle = serve(config(IoDriver::Auto));
    let client = client();
    let (status, _, body) = json_of(post(&client, &handle, "text/plain", "{}").await).await;
    assert_eq!(status, 415);
    assert_error(&body, "UNSUPPORTED_MEDIA_TYPE");

    let (status, _, body) =
        json_of(post(&client, &handle, "application/json; charset=utf-8", "{\"wallet\":").await).await;
    assert_eq!(status, 400);
    assert_error(&body, "INVALID_REQUEST");
    assert_eq!(body.get("error").unwrap().get("details").unwrap().get_str("field"), Some("body"));

    let (status, _, body) =
        json_of(post(&client, &handle, "application/json", r#"{"wallet":"x","refresh":1}"#).await).await;
    assert_eq!(status, 400);
    assert_eq!(body.get("error").unwrap().get("details").unwrap().get_str("field"), Some("refresh"));

    // Exactly 4096 bytes passes the size check (and reaches the stand-in's 503).
    let doc = format!(r#"{{"wallet":"{SYSTEM_PROGRAM}"}}"#);
    let at_limit = format!("{doc}{}", " ".repeat(4096 - doc.len()));
    let (status, headers, body) = json_of(post(&client, &handle, "application/json", &at_limit).await).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(headers["retry-after"], "1");

    let over = format!("{at_limit} ");
    let (status, headers, body) = json_of(post(&client, &handle, "application/json", &over).await).await;
    assert_eq!(status, 413);
    assert_error(&body, "PAYLOAD_TOO_LARGE");
    assert_eq!(body.get("error").unwrap().get("details").unwrap().get_u64("maxBytes"), Some(4096));
    assert_eq!(headers["connection"], "close");
}

#[test]
fn huge_content_length_is_refused_without_reading_the_body() {
    let handle = serve(config(IoDriver::Auto));
    let mut raw = Raw::connect(handle.local_addr());
    raw.send(
        format!(
            "POST {WALLET} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n\
             Content-Length: 1000000000\r\n\r\n{{\"wallet\":"
        )
        .as_bytes(),
    );
    let start = Instant::now();
    let response = raw.response().expect("413 before the body arrives");
    assert_eq!(response.status, 413);
    assert!(start.elapsed() < BODY_TIMEOUT, "answered without waiting for the body");
    assert_eq!(response.json().get("error").unwrap().get_str("code"), Some("PAYLOAD_TOO_LARGE"));
    assert!(raw.time_to_close() < Duration::from_secs(2), "connection closed after the refusal");
}

#[test]
fn chunked_body_over_the_cap_is_cut() {
    let handle = serve(config(IoDriver::Auto));
    let mut raw = Raw::connect(handle.local_addr());
    let head = format!(
        "POST {WALLET} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    raw.send(head.as_bytes());
    for _ in 0..3 {
        raw.send(format!("800\r\n{}\r\n", " ".repeat(0x800)).as_bytes());
    }
    let response = raw.response().expect("a response");
    assert_eq!(response.status, 413);
}

#[test]
fn slow_headers_are_disconnected() {
    for driver in [IoDriver::Auto, IoDriver::Epoll] {
        slow_headers_on(driver);
    }
}

fn slow_headers_on(driver: IoDriver) {
    let handle = serve(config(driver));
    let mut raw = Raw::connect(handle.local_addr());
    raw.send(b"GET /healthz HTTP/1.1\r\nHost: t\r\n");
    let waited = raw.time_to_close();
    assert!(waited >= HEADER_TIMEOUT - Duration::from_millis(50) && waited < Duration::from_secs(2), "{waited:?}");

    // A connection that never sends a byte gets the header timeout, not the idle one.
    let mut silent = Raw::connect(handle.local_addr());
    let waited = silent.time_to_close();
    assert!(waited < IDLE_TIMEOUT, "{waited:?}");
}

#[test]
fn slow_body_is_disconnected() {
    let handle = serve(config(IoDriver::Auto));
    let mut raw = Raw::connect(handle.local_addr());
    raw.send(
        format!(
            "POST {WALLET} HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\n\
             Content-Length: 20\r\n\r\n{{\""
        )
        .as_bytes(),
    );
    let waited = raw.time_to_close();
    assert!(waited >= BODY_TIMEOUT - Duration::from_millis(50) && waited < Duration::from_secs(2), "{waited:?}");
}

#[test]
fn keep_alive_reuses_and_idles_out() {
    let epoll = std::thread::spawn(|| keep_alive_on(IoDriver::Epoll));
    keep_alive_on(IoDriver::Auto);
    epoll.join().unwrap();
}

fn keep_alive_on(driver: IoDriver) {
    let handle = serve(config(driver));
    let mut raw = Raw::connect(handle.local_addr());
    assert_eq!(raw.get("/healthz").status, 200);
    assert_eq!(raw.get("/nope").status, 404);
    // Idle longer than the header timeout but shorter than the idle timeout: still open.
    std::thread::sleep(HEADER_TIMEOUT * 2);
    assert_eq!(raw.get("/healthz").status, 200);
    // Then idle past the idle timeout: closed by the server.
    let waited = raw.time_to_close();
    assert!(waited >= IDLE_TIMEOUT - Duration::from_millis(100) && waited < Duration::from_secs(4), "{waited:?}");
}

#[test]
fn connection_cap_closes_extra_connections() {
    let handle = serve(ServerConfig { threads: 1, connections_per_thread_max: 2, ..config(IoDriver::Auto) });
    let mut first = Raw::connect(handle.local_addr());
    let mut second = Raw::connect(handle.local_addr());
    assert_eq!(first.get("/healthz").status, 200);
    assert_eq!(second.get("/healthz").status, 200);
    let mut third = Raw::connect(handle.local_addr());
    let _ = third.stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(third.response().is_none(), "over the cap: closed without an answer");
    drop(first);
    // The server notices the close asynchronously; retry for a bounded time.
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut next = Raw::connect(handle.local_addr());
        let _ = next.stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
        if next.response().is_some_and(|r| r.status == 200) {
            break;
        }
        assert!(Instant::now() < deadline, "a slot never freed up");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(second.get("/healthz").status, 200);
}

#[test]
fn stop_drains_in_flight_requests() {
    let handle = serve(config(IoDriver::Auto));
    let addr = handle.local_addr();
    let mut idle = Raw::connect(addr);
    assert_eq!(idle.get("/healthz").status, 200);
    let mut busy = Raw::connect(addr);
    busy.send(b"GET /test/slow HTTP/1.1\r\nHost: t\r\n\r\n");
    std::thread::sleep(Duration::from_millis(50));

    handle.start_draining();
    assert_eq!(idle.get("/healthz").status, 503, "draining: health fails, still serving");
    let started = Instant::now();
    let stopper = std::thread::spawn(move || handle.shutdown());

    let response = busy.response().expect("in-flight request completes");
    assert_eq!(response.status, 200);
    assert_eq!(response.header("connection"), Some("close"));
    assert!(idle.time_to_close() < Duration::from_secs(1), "idle keep-alive closed on stop");
    stopper.join().unwrap().expect("clean stop");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(TcpStream::connect(addr).is_err(), "no longer accepting");
}

#[test]
fn handler_panic_is_a_500_and_the_thread_survives() {
    let handle = serve(ServerConfig { threads: 1, ..config(IoDriver::Auto) });
    let mut raw = Raw::connect(handle.local_addr());
    let response = raw.get("/test/panic");
    assert_eq!(response.status, 500);
    assert_eq!(response.json().get("error").unwrap().get_str("code"), Some("INTERNAL"));
    assert_eq!(raw.get("/healthz").status, 200);
}

#[test]
fn a_second_server_on_the_same_port_is_refused() {
    let handle = serve(config(IoDriver::Auto));
    let error = start(ServerConfig { listen: handle.local_addr(), ..config(IoDriver::Auto) }, DemoHandler::new)
        .expect_err("port in use");
    assert!(error.to_string().contains("cannot listen"), "{error}");
}

#[test]
fn every_thread_serves() {
    // The kernel spreads connections over the reuse-port sockets by their 4-tuple; 64 fresh
    // connections all landing on one of two threads has probability 2^-63.
    let handle = serve(ServerConfig { threads: 2, ..config(IoDriver::Auto) });
    let mut seen = [false; 2];
    for _ in 0..64 {
        let mut raw = Raw::connect(handle.local_addr());
        let thread = raw.get("/test/thread").json().get_u64("thread").unwrap();
        seen[thread as usize] = true;
    }
    assert_eq!(seen, [true, true]);
}

#[test]
fn oversized_head_is_refused() {
    let handle = serve(config(IoDriver::Auto));
    let mut raw = Raw::connect(handle.local_addr());
    let filler = "a".repeat(20 * 1024);
    raw.send(format!("GET /healthz HTTP/1.1\r\nHost: t\r\nX-Filler: {filler}\r\n\r\n").as_bytes());
    let response = raw.response().expect("hyper answers before closing");
    assert_eq!(response.status, 431);
    assert!(raw.time_to_close() < Duration::from_secs(2));
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let handle = serve(config(IoDriver::Auto));
    let mut raw = Raw::connect(handle.local_addr());
    raw.send(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\nX-Request-Id: second\r\n\r\n");
    assert_eq!(raw.response().unwrap().status, 200);
    let second = raw.response().unwrap();
    assert_eq!((second.status, second.header("x-request-id")), (404, Some("second")));
}

mod peers;
