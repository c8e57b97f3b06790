//! Connection abuse and client identity at the edge: the per-client connection cap, the
//! write-stall timeout (pipelining without reading), the requests-per-connection cap, and the
//! client address behind a trusted proxy (`X-Forwarded-For`, PROXY protocol). In each abuse
//! test a second client (another loopback source address) is still served.

use super::*;
use xray::http::ProxyTrust;

fn trusting_loopback_one(proxy_protocol: bool) -> ProxyTrust {
    ProxyTrust { networks: vec!["127.0.0.1/32".parse().unwrap()], proxy_protocol }
}

fn client_of(raw: &mut Raw, extra_headers: &str) -> String {
    raw.send(format!("GET /test/client HTTP/1.1\r\nHost: t\r\n{extra_headers}\r\n").as_bytes());
    let response = raw.response().expect("a response");
    assert_eq!(response.status, 200);
    response.json()["client"].as_str().unwrap().to_owned()
}

/// Retries `connect` until the server answers on it (it notices closes asynchronously).
fn eventually_served(connect: impl Fn() -> Raw) -> Raw {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let mut next = connect();
        let _ = next.stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
        if next.response().is_some_and(|r| r.status == 200) {
            return next;
        }
        assert!(Instant::now() < deadline, "a slot never freed up");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn one_client_address_holds_at_most_its_connections_and_others_are_served() {
    // Two threads: the cap is for the client over all of them.
    let handle = serve(ServerConfig { connections_per_client_max: 2, ..config(IoDriver::Auto) });
    let addr = handle.local_addr();
    let mut first = Raw::connect(addr);
    let mut second = Raw::connect(addr);
    assert_eq!(first.get("/healthz").status, 200);
    assert_eq!(second.get("/healthz").status, 200);
    let mut third = Raw::connect(addr);
    let _ = third.stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(third.response().is_none(), "over the client's cap: closed without an answer");
    let mut other = Raw::connect_from(2, addr);
    assert_eq!(other.get("/healthz").status, 200, "another client is served");
    drop(first);
    let _again = eventually_served(|| Raw::connect(addr));
    assert_eq!(second.get("/healthz").status, 200);
}

#[test]
fn a_client_that_pipelines_and_never_reads_is_cut_off_and_others_are_served() {
    let stall = Duration::from_millis(300);
    let handle = serve(ServerConfig { write_stall_timeout: stall, ..config(IoDriver::Auto) });
    let addr = handle.local_addr();
    // A small receive window so the server's writes stall early.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut hog = Raw { stream: socket.into(), buf: Vec::new() };
    hog.stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // 2,000 pipelined requests for 64 KiB answers each: 128 MiB the client never reads.
    const REQUESTS: usize = 2_000;
    let request = b"GET /test/big HTTP/1.1\r\nHost: t\r\n\r\n";
    hog.send(&request.repeat(REQUESTS));
    std::thread::sleep(stall * 3);
    let mut other = Raw::connect_from(2, addr);
    assert_eq!(other.get("/healthz").status, 200, "another client is served meanwhile");
    let started = Instant::now();
    let mut bytes = 0usize;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        match hog.stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes += n,
            Err(e) if e.kind() == ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the stalled connection was not closed: {e} after {bytes} bytes"),
        }
    }
    assert!(bytes < REQUESTS * BIG_BODY_BYTES, "closed before answering everything: {bytes} bytes");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_connection_carries_a_bounded_number_of_requests() {
    let handle = serve(ServerConfig { requests_per_connection_max: 3, ..config(IoDriver::Auto) });
    let mut raw = Raw::connect(handle.local_addr());
    for _ in 0..2 {
        let response = raw.get("/healthz");
        assert_eq!((response.status, response.header("connection")), (200, None));
    }
    let last = raw.get("/healthz");
    assert_eq!((last.status, last.header("connection")), (200, Some("close")));
    assert!(raw.time_to_close() < Duration::from_secs(2), "closed after its last request");
    let mut next = Raw::connect(handle.local_addr());
    assert_eq!(next.get("/healthz").status, 200, "a new connection starts a new count");
}

#[test]
fn forwarded_for_names_the_client_only_from_a_trusted_proxy() {
    let handle = serve(ServerConfig { proxies: trusting_loopback_one(false), ..config(IoDriver::Auto) });
    let addr = handle.local_addr();
    let mut proxy = Raw::connect(addr);
    // The client wrote 1.1.1.1 itself; the proxy appended what it saw.
    assert_eq!(client_of(&mut proxy, "X-Forwarded-For: 1.1.1.1, 203.0.113.5\r\n"), "203.0.113.5");
    assert_eq!(client_of(&mut proxy, ""), "127.0.0.1", "no header: the proxy itself");
    let mut direct = Raw::connect_from(2, addr);
    assert_eq!(client_of(&mut direct, "X-Forwarded-For: 203.0.113.5\r\n"), "127.0.0.2", "not trusted");
}

#[test]
fn the_proxy_protocol_names_the_client_and_counts_it() {
    let handle = serve(ServerConfig {
        proxies: trusting_loopback_one(true),
        connections_per_client_max: 1,
        ..config(IoDriver::Auto)
    });
    let addr = handle.local_addr();
    let mut proxied = Raw::connect(addr);
    proxied.send(b"PROXY TCP4 198.51.100.7 127.0.0.1 5555 80\r\n");
    assert_eq!(client_of(&mut proxied, ""), "198.51.100.7");
    assert_eq!(client_of(&mut proxied, "X-Forwarded-For: 1.1.1.1\r\n"), "198.51.100.7", "a client is not a proxy");
    // The same client through a second proxy connection is over its cap of one; another is not.
    let mut again = Raw::connect(addr);
    again.send(b"PROXY TCP4 198.51.100.7 127.0.0.1 5556 80\r\nGET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(again.response().is_none(), "the named client holds its cap");
    let mut other = Raw::connect(addr);
    other.send(b"PROXY TCP4 198.51.100.8 127.0.0.1 5557 80\r\n");
    assert_eq!(client_of(&mut other, ""), "198.51.100.8");
    // A trusted peer without the header is refused; an untrusted one speaks plain HTTP.
    let mut headerless = Raw::connect(addr);
    let _ = headerless.stream.write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(headerless.response().is_none(), "a trusted peer must send the header");
    let mut direct = Raw::connect_from(2, addr);
    assert_eq!(client_of(&mut direct, ""), "127.0.0.2");
}
