//! The bare reference of the saturation harness (`loadtest/max.sh`): hyper 1 HTTP/1.1 on one
//! monoio runtime (io_uring, epoll where io_uring is refused), answering every request with
//! `200`, `Content-Type: application/json` and a fixed JSON body of `--body-bytes` bytes.
//!
//! No code of this project is on its path (only the HTTP stack the server is built on), so
//! `endpoint req/s ÷ bare req/s` at the same body size is what the project costs on top of its
//! own stack. One thread, like the server under test in the harness; runs until killed.
//!
//! Usage: `bare [--listen 127.0.0.1:18090] [--body-bytes 15]`

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Response;
use monoio::io::IntoPollIo;
use monoio::{IoUringDriver, LegacyDriver, RuntimeBuilder};
use monoio_compat::hyper::MonoioIo;

/// Smallest body: `{"d":""}`.
const BODY_BYTES_MIN: usize = 8;
/// Largest body the reference answers (the largest X-Ray poll is far below it).
const BODY_BYTES_MAX: usize = 16 * 1024 * 1024;

struct Args {
    listen: SocketAddr,
    body_bytes: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { listen: SocketAddr::from(([127, 0, 0, 1], 18090)), body_bytes: 15 };
    let mut words = std::env::args().skip(1);
    while let Some(flag) = words.next() {
        let value = words.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--listen" => args.listen = value.parse().map_err(|e| format!("--listen {value}: {e}"))?,
            "--body-bytes" => args.body_bytes = value.parse().map_err(|e| format!("--body-bytes {value}: {e}"))?,
            other => return Err(format!("unknown flag {other} (--listen, --body-bytes)")),
        }
    }
    if !(BODY_BYTES_MIN..=BODY_BYTES_MAX).contains(&args.body_bytes) {
        return Err(format!("--body-bytes must be {BODY_BYTES_MIN}..={BODY_BYTES_MAX}"));
    }
    Ok(args)
}

/// `{"d":"xxx…"}` of exactly `len` bytes.
fn body_of(len: usize) -> Bytes {
    let mut body = Vec::with_capacity(len);
    body.extend_from_slice(br#"{"d":""#);
    body.resize(len - 2, b'x');
    body.extend_from_slice(br#""}"#);
    Bytes::from(body)
}

async fn serve(listen: SocketAddr, body: Bytes) -> Result<(), String> {
    let listener = monoio::net::TcpListener::bind(listen).map_err(|e| format!("listen on {listen}: {e}"))?;
    eprintln!("bare reference listening on http://{listen} ({} byte body)", body.len());
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                eprintln!("accept: {e}");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let body = body.clone();
        monoio::spawn(async move {
            let Ok(stream) = stream.into_poll_io() else { return };
            let service = service_fn(move |_request| {
                let mut response = Response::new(Full::new(body.clone()));
                response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                std::future::ready(Ok::<_, Infallible>(response))
            });
            let _ = http1::Builder::new().keep_alive(true).serve_connection(MonoioIo::new(stream), service).await;
        });
    }
}

fn main() -> std::process::ExitCode {
    let result = parse_args().and_then(|args| {
        let body = body_of(args.body_bytes);
        match RuntimeBuilder::<IoUringDriver>::new().enable_timer().build() {
            Ok(mut runtime) => runtime.block_on(serve(args.listen, body)),
            Err(_) => {
                let mut runtime = RuntimeBuilder::<LegacyDriver>::new()
                    .enable_timer()
                    .build()
                    .map_err(|e| format!("runtime: {e}"))?;
                runtime.block_on(serve(args.listen, body))
            }
        }
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            std::process::ExitCode::FAILURE
        }
    }
}
