//! One HTTP/1.1 connection: hyper over a monoio socket, from accept to close.
//!
//! Owns: the hyper connection settings, the translation between hyper's request/response and
//! the `api` values a `Handler` sees, the bounded body read, the request id on every response,
//! who the client is (the peer, or the client a trusted proxy names — `peers`), its share of
//! the connections, the requests-per-connection cap, and graceful close on stop. Runs as one monoio task per connection on the listener thread
//! that accepted it.
//!
//! Invariant: a request body is never buffered past its route's bound (`Handler::body_bytes_max`,
//! at most `REQUEST_BODY_BYTES_MAX`) — a declared length over
//! it is refused without reading a byte of the body, a streamed body is cut at the first chunk
//! that would cross it — and a body must arrive within `body_read_timeout` or the connection is
//! closed. Every response from here carries `Content-Type: application/json` and
//! `X-Request-Id`; a handler panic is answered with `500 INTERNAL`. A connection carries at
//! most `requests_per_connection_max` requests: the last one's answer says `Connection: close`.
//! Deliberately absent: the responses hyper writes itself for unparsable requests (400) and
//! oversized heads (431): they close the connection and carry no JSON body or request id.

use std::cell::Cell;
use std::future::Future;
use std::net::IpAddr;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_util::future::{select, Either};
use futures_util::FutureExt;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Incoming};
use hyper::header::{
    HeaderMap, HeaderName, HeaderValue, ALLOW, AUTHORIZATION, CONNECTION, CONTENT_TYPE, LOCATION, RETRY_AFTER,
};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use monoio::io::IntoPollIo;
use monoio_compat::hyper::MonoioIo;

use super::handler::{Handler, StopState};
use super::message::{ApiRequest, ApiResponse, Body, Method};
use super::peers::{read_proxy_header, PeerSlot, PeerTable, ProxyTrust};
use super::request_id::RequestId;
use super::timeouts::{HeadClock, HeadTimer, Tracked};
use crate::config::REQUEST_BODY_BYTES_MAX;

/// The connection settings of one listener thread (from `ServerConfig`).
#[derive(Debug, Clone)]
pub struct ConnSettings {
    pub header_bytes_max: usize,
    pub read_buffer_bytes_max: usize,
    pub header_read_timeout: Duration,
    pub keep_alive_idle: Duration,
    pub body_read_timeout: Duration,
    pub write_stall_timeout: Duration,
    pub requests_per_connection_max: u64,
    pub proxies: Arc<ProxyTrust>,
    /// Shared by every listener thread.
    pub peers: Arc<PeerTable>,
}

/// Why a connection was closed without an answer to its current request.
#[derive(Debug, thiserror::Error)]
enum EdgeError {
    #[error("request body not received within {0:?}")]
    BodyTimeout(Duration),
    #[error("request body: {0}")]
    Body(#[from] hyper::Error),
}

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const IDEMPOTENCY_KEY: HeaderName = HeaderName::from_static("idempotency-key");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const APPLICATION_JSON: HeaderValue = HeaderValue::from_static("application/json");

/// Serves one accepted connection until it closes, or until `stop` and its current request
/// ends.
pub async fn serve<H: Handler>(
    stream: monoio::net::TcpStream,
    peer: IpAddr,
    handler: Rc<H>,
    settings: Rc<ConnSettings>,
    stop: StopState,
) {
    // Small JSON answers must not wait for Nagle; failure only costs latency.
    let _ = stream.set_nodelay(true);
    let mut stream = match stream.into_poll_io() {
        Ok(stream) => stream,
        Err(error) => {
            tracing::warn!(%error, "cannot switch socket to poll I/O; closing");
            return;
        }
    };
    let Some(Client { ip: client_ip, prefix, slot: _slot }) = identify(&mut stream, peer, &settings).await else {
        return;
    };
    let clock = HeadClock::new(settings.header_read_timeout, settings.keep_alive_idle);
    let io = MonoioIo::new(Tracked::new(stream, clock.clone(), prefix, settings.write_stall_timeout));
    let mut builder = http1::Builder::new();
    builder
        .timer(HeadTimer::new(clock))
        .header_read_timeout(settings.header_read_timeout)
        .max_header_size(settings.header_bytes_max)
        .max_buf_size(settings.read_buffer_bytes_max)
        .keep_alive(true);
    let served = Rc::new(Cell::new(0u64));
    let service = service_fn(move |request| {
        served.set(served.get() + 1);
        let last = served.get() >= settings.requests_per_connection_max;
        respond(handler.clone(), request, client_ip, settings.clone(), last)
    });
    let mut connection = pin!(builder.serve_connection(io, service));
    let result = match select(connection.as_mut(), pin!(stop.stopped())).await {
        Either::Left((result, _)) => result,
        Either::Right(((), _)) => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        tracing::debug!(%error, %client_ip, "connection closed with an error");
    }
}

/// The connection's client, the bytes read before HTTP, and its connection slot.
struct Client {
    ip: IpAddr,
    prefix: Bytes,
    /// `None` for a trusted proxy (not a client; bounded by the per-thread cap).
    slot: Option<PeerSlot>,
}

/// Who is on the other end: the peer, or the client a trusted proxy's PROXY protocol header
/// names; `None` (close) when that header is bad or the client holds its connection cap.
async fn identify<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    peer: IpAddr,
    settings: &ConnSettings,
) -> Option<Client> {
    let (ip, prefix) = if settings.proxies.expects_proxy_header(peer) {
        match read_proxy_header(stream, settings.header_read_timeout).await {
            Ok(header) => (header.client.unwrap_or(peer), header.rest),
            Err(error) => {
                tracing::debug!(%error, %peer, "closing a proxy connection");
                return None;
            }
        }
    } else {
        (peer, Bytes::new())
    };
    if settings.proxies.trusts(ip) {
        return Some(Client { ip, prefix, slot: None });
    }
    match settings.peers.try_open(ip) {
        Some(slot) => Some(Client { ip, prefix, slot: Some(slot) }),
        None => {
            tracing::debug!(client = %ip, "per-client connection cap reached; closing");
            None
        }
    }
}

/// hyper's service: one request in, one response out (the connection's `last`: say close).
async fn respond<H: Handler>(
    handler: Rc<H>,
    request: Request<Incoming>,
    connection_client: IpAddr,
    settings: Rc<ConnSettings>,
    last: bool,
) -> Result<Response<Full<Bytes>>, EdgeError> {
    let request_id = RequestId::resolve(request.headers().get(X_REQUEST_ID).map(HeaderValue::as_bytes));
    let (parts, body) = request.into_parts();
    // The header is looked up only for a trusted peer: every other request pays nothing.
    let client_ip = if settings.proxies.trusts(connection_client) {
        let forwarded = parts.headers.get_all(X_FORWARDED_FOR).into_iter().map(HeaderValue::as_bytes);
        settings.proxies.client_of(connection_client, forwarded)
    } else {
        connection_client
    };
    // A request without a body (every GET) arms no timer: there is nothing to wait for.
    let body = if body.is_end_stream() {
        Body::Complete(Bytes::new())
    } else {
        let max_bytes = handler.body_bytes_max(parts.uri.path()).min(REQUEST_BODY_BYTES_MAX);
        match monoio::time::timeout(settings.body_read_timeout, read_body(body, max_bytes)).await {
            Ok(body) => body?,
            Err(_) => return Err(EdgeError::BodyTimeout(settings.body_read_timeout)),
        }
    };
    let api_request = ApiRequest {
        method: Method::from_token(parts.method.as_str()),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(str::to_owned),
        authorization: header_text(&parts.headers, &AUTHORIZATION),
        content_type: header_text(&parts.headers, &CONTENT_TYPE),
        idempotency_key: header_text(&parts.headers, &IDEMPOTENCY_KEY),
        request_id: request_id.clone(),
        client_ip,
        body,
    };
    let mut response = call_handler(&*handler, api_request, &request_id).await;
    response.close |= last;
    tracing::debug!(method = %parts.method, path = parts.uri.path(), status = response.status, %request_id, "request");
    Ok(to_hyper(&*handler, response, &request_id))
}

/// Runs the handler; a panic answers 500 for this request and leaves the thread serving.
fn call_handler<'a, H: Handler>(
    handler: &'a H,
    request: ApiRequest,
    request_id: &'a RequestId,
) -> impl Future<Output = ApiResponse> + 'a {
    AssertUnwindSafe(handler.handle(request)).catch_unwind().map(move |outcome| match outcome {
        Ok(response) => response,
        Err(_) => handler.internal_error(request_id, "request handler panicked"),
    })
}

/// Reads a body of at most `max_bytes` (the route's bound); anything larger becomes
/// `Body::TooLarge` with the rest left unread.
async fn read_body(mut body: Incoming, max_bytes: usize) -> Result<Body, hyper::Error> {
    if body.is_end_stream() {
        return Ok(Body::Complete(Bytes::new()));
    }
    let declared = body.size_hint().exact();
    if declared.is_some_and(|len| len > max_bytes as u64) {
        return Ok(Body::TooLarge);
    }
    let capacity = declared.map_or(0, |len| len as usize);
    let mut collected = BytesMut::with_capacity(capacity);
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame?.into_data() else { continue };
        if collected.len() + data.len() > max_bytes {
            return Ok(Body::TooLarge);
        }
        collected.extend_from_slice(&data);
    }
    Ok(Body::Complete(collected.freeze()))
}

/// A header's value as text; bytes that are not UTF-8 become U+FFFD, which no later check
/// accepts.
fn header_text(headers: &HeaderMap, name: &HeaderName) -> Option<String> {
    let value = headers.get(name)?;
    // Visible ASCII (every well-formed value the API reads) is copied as is.
    Some(match value.to_str() {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(value.as_bytes()).into_owned(),
    })
}

/// Turns an `ApiResponse` into hyper's, adding the headers every response carries.
fn to_hyper<H: Handler>(handler: &H, response: ApiResponse, request_id: &RequestId) -> Response<Full<Bytes>> {
    match build_hyper(&response, request_id) {
        Some(built) => built,
        None => {
            let error = format!("handler produced an invalid header: {:?}", response.headers);
            let fallback = handler.internal_error(request_id, &error);
            // The fallback's headers are the handler's constants, which are valid.
            build_hyper(&fallback, request_id).unwrap_or_else(|| Response::new(Full::new(fallback.body)))
        }
    }
}

fn build_hyper(response: &ApiResponse, request_id: &RequestId) -> Option<Response<Full<Bytes>>> {
    let mut built = Response::new(Full::new(response.body.clone()));
    *built.status_mut() = StatusCode::from_u16(response.status).ok()?;
    let headers = built.headers_mut();
    // Sized once: content type, request id, the handler's headers and a possible `connection`.
    headers.reserve(3 + response.headers.len());
    headers.insert(CONTENT_TYPE, APPLICATION_JSON);
    headers.insert(X_REQUEST_ID, HeaderValue::from_str(request_id.as_str()).ok()?);
    for (name, value) in &response.headers {
        let name = header_name(name)?;
        let value = HeaderValue::from_str(value).ok()?;
        // A handler may replace the default JSON content type (e.g. Prometheus text).
        if name == CONTENT_TYPE {
            headers.insert(name, value);
        } else {
            headers.append(name, value);
        }
    }
    if response.close {
        headers.insert(CONNECTION, HeaderValue::from_static("close"));
    }
    Some(built)
}

/// The names the API sends as prebuilt constants (parsing and hashing a name showed in
/// profiles: two rate-limit headers go on every authenticated response); any other lowercase
/// name is parsed.
fn header_name(name: &str) -> Option<HeaderName> {
    const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
    const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
    Some(match name {
        "ratelimit" => RATELIMIT,
        "ratelimit-policy" => RATELIMIT_POLICY,
        "retry-after" => RETRY_AFTER,
        "location" => LOCATION,
        "allow" => ALLOW,
        "content-type" => CONTENT_TYPE,
        other => HeaderName::from_bytes(other.as_bytes()).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A handler whose only part these tests use is its internal-error answer.
    struct Plain;

    impl Handler for Plain {
        async fn handle(&self, _: ApiRequest) -> ApiResponse {
            ApiResponse::json(200, "{}")
        }

        fn internal_error(&self, _: &RequestId, _: &str) -> ApiResponse {
            ApiResponse::json(500, r#"{"error":{}}"#)
        }
    }

    #[test]
    fn hyper_response_carries_the_edge_headers() {
        let id = RequestId::resolve(Some(b"abc"));
        let response = ApiResponse::json(405, "{}").with_header("allow", "GET");
        let built = to_hyper(&Plain, response, &id);
        assert_eq!(built.status(), 405);
        assert_eq!(built.headers()["x-request-id"], "abc");
        assert_eq!(built.headers()["content-type"], "application/json");
        assert_eq!(built.headers()["allow"], "GET");
    }

    #[test]
    fn invalid_handler_headers_become_the_handlers_internal_error() {
        let id = RequestId::generate();
        let bad = ApiResponse::json(200, "{}").with_header("x-bad", "line\nbreak");
        let built = to_hyper(&Plain, bad, &id);
        assert_eq!(built.status(), 500);
        assert_eq!(built.headers()["x-request-id"], id.as_str());
        let bad_status = ApiResponse::json(1000, "{}");
        assert_eq!(to_hyper(&Plain, bad_status, &id).status(), 500);
    }

    #[test]
    fn prebuilt_header_names_are_the_parsed_ones() {
        for name in ["ratelimit", "ratelimit-policy", "retry-after", "location", "allow", "content-type", "x-other"] {
            assert_eq!(header_name(name), HeaderName::from_bytes(name.as_bytes()).ok(), "{name}");
        }
        assert_eq!(header_name("bad name"), None);
    }

    #[test]
    fn close_adds_connection_close() {
        let id = RequestId::generate();
        let response = ApiResponse { close: true, ..ApiResponse::json(413, "{}") };
        let built = to_hyper(&Plain, response, &id);
        assert_eq!(built.status(), 413);
        assert_eq!(built.headers()["connection"], "close");
    }
}
