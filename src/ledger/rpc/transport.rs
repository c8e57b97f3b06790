//! HTTP exchange with one JSON-RPC endpoint: post a body, read a bounded answer, retry.
//!
//! Owns: the `reqwest::Client` of one rpc source (one connection pool), the bound on requests
//! in flight, the body-size cap, the charge of every chunk read to the job's byte budget
//! (`ledger::budget`: final when spent), the retry loop, and the `metrics::LEDGER` record of
//! every call (method, outcome, duration, retries, backoffs being waited out). Called from the thread that owns the
//! source, on its current-thread runtime; futures are not `Send`.
//!
//! Invariant: at most `attempts_max` attempts per exchange, at most `concurrency_max` HTTP
//! requests in flight per source, at most `response_bytes_max` bytes read per answer, and
//! nothing logged or returned contains the endpoint's path or query (they may carry an API
//! key): logs name the endpoint by `redact_url`, and reqwest errors lose their URL.

use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use tokio::sync::Semaphore;

use super::retry::{self, AttemptFailure};
use super::RpcOptions;
use crate::config::redact_url;
use crate::config::RPC_POOL_IDLE_TIMEOUT_MS;
use crate::ledger::{budget, LedgerError};
use crate::metrics::{CallOutcome, LedgerMethod, LEDGER};

pub struct Transport {
    client: reqwest::Client,
    url: reqwest::Url,
    /// The URL without path and query: what logs and errors may show.
    endpoint: String,
    options: RpcOptions,
    in_flight: Semaphore,
}

impl Transport {
    pub fn new(url: &str, options: RpcOptions) -> Result<Transport, LedgerError> {
        let endpoint = redact_url(url);
        // Text that does not parse is not echoed: `redact_url` can only hide what it can find.
        let parsed =
            reqwest::Url::parse(url).map_err(|e| LedgerError::Invalid(format!("rpc url is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
            return Err(LedgerError::Invalid(format!("rpc url {endpoint}: must be http(s)://host…")));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_millis(options.connect_timeout_ms))
            .timeout(Duration::from_millis(options.request_timeout_ms))
            .pool_max_idle_per_host(options.concurrency_max.max(1))
            .pool_idle_timeout(Duration::from_millis(RPC_POOL_IDLE_TIMEOUT_MS))
            .tcp_nodelay(true)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("xray/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LedgerError::Invalid(format!("rpc client for {endpoint}: {}", describe(e))))?;
        let in_flight = Semaphore::new(options.concurrency_max.max(1));
        Ok(Transport { client, url: parsed, endpoint, options, in_flight })
    }

    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    pub fn options(&self) -> &RpcOptions {
        &self.options
    }

    /// Posts `body` until `parse` accepts an answer or the attempts run out. `parse` gets the
    /// body mutably (simd-json parses in place) and its retryable errors cause a retry.
    pub async fn exchange<R>(
        &self,
        method: &str,
        body: Vec<u8>,
        parse: impl Fn(&mut [u8]) -> Result<R, LedgerError>,
    ) -> Result<R, LedgerError> {
        let (label, started) = (LedgerMethod::of(method), Instant::now());
        let result = self.attempts(method, label, Bytes::from(body), parse).await;
        let outcome = if result.is_ok() { CallOutcome::Ok } else { CallOutcome::Error };
        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        LEDGER.observe_call(label, outcome, elapsed_ms);
        result
    }

    /// `exchange`'s attempts, each retry counted.
    async fn attempts<R>(
        &self,
        method: &str,
        label: LedgerMethod,
        body: Bytes,
        parse: impl Fn(&mut [u8]) -> Result<R, LedgerError>,
    ) -> Result<R, LedgerError> {
        let attempts_max = self.options.attempts_max.max(1);
        let mut attempt = 1;
        loop {
            let failure = match self.post_once(body.clone()).await {
                Ok(mut answer) => match parse(&mut answer) {
                    Ok(result) => return Ok(result),
                    Err(e) => AttemptFailure::from_error(e),
                },
                Err(failure) => failure,
            };
            let (error, retry_after_s) = match failure {
                AttemptFailure::Final(error) => return Err(error),
                AttemptFailure::Retry { error, retry_after_s } => (error, retry_after_s),
            };
            if attempt >= attempts_max {
                return Err(error);
            }
            LEDGER.retry(label);
            let o = &self.options;
            let delay_ms = retry::delay_ms(o.backoff_base_ms, o.backoff_max_ms, attempt - 1, retry_after_s);
            tracing::debug!(endpoint = %self.endpoint, method, attempt, delay_ms, %error, "retrying JSON-RPC call");
            let _waiting = LEDGER.retry_wait();
            tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            attempt += 1;
        }
    }

    /// One HTTP attempt. The in-flight permit is held for the request and its body only, not
    /// for the backoff that may follow.
    async fn post_once(&self, body: Bytes) -> Result<Vec<u8>, AttemptFailure> {
        // Invariant: the semaphore is never closed, so acquiring only waits.
        let _permit = self.in_flight.acquire().await.map_err(|_| unavailable("rpc source is shut down"))?;
        let response = self
            .client
            .post(self.url.clone())
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
            .body(body)
            .send()
            .await
            .map_err(transport_failure)?;
        let status = response.status();
        if !status.is_success() {
            let retry_after_s =
                response.headers().get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(retry::parse_retry_after_s);
            return Err(retry::status_failure(status.as_u16(), status.canonical_reason().unwrap_or(""), retry_after_s));
        }
        read_capped(response, self.options.response_bytes_max).await
    }
}

/// Reads the body chunk by chunk, refusing it as soon as it passes `bytes_max` (an answer that
/// large is not one this source can use, so it is final, not retried).
async fn read_capped(mut response: reqwest::Response, bytes_max: usize) -> Result<Vec<u8>, AttemptFailure> {
    let too_large = |n: u64| {
        AttemptFailure::Final(LedgerError::Malformed(format!(
            "answer of {n}+ bytes is over the {bytes_max}-byte limit"
        )))
    };
    let declared = response.content_length().unwrap_or(0);
    if declared > bytes_max as u64 {
        return Err(too_large(declared));
    }
    // `declared` is at most `bytes_max` here, so the reservation is bounded.
    let mut body = Vec::with_capacity(declared as usize);
    while let Some(chunk) = response.chunk().await.map_err(transport_failure)? {
        if body.len() + chunk.len() > bytes_max {
            return Err(too_large((body.len() + chunk.len()) as u64));
        }
        budget::charge(chunk.len() as u64).map_err(AttemptFailure::Final)?;
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn unavailable(message: &str) -> AttemptFailure {
    AttemptFailure::Retry { error: LedgerError::Unavailable(message.to_owned()), retry_after_s: None }
}

/// Network errors, timeouts and cut bodies are all worth another attempt; only a request
/// reqwest could not even build is final.
fn transport_failure(e: reqwest::Error) -> AttemptFailure {
    if e.is_builder() {
        return AttemptFailure::Final(LedgerError::Invalid(describe(e)));
    }
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "connect failed"
    } else if e.is_body() || e.is_decode() {
        "answer cut short"
    } else {
        "request failed"
    };
    unavailable(&format!("{kind}: {}", describe(e)))
}

/// The error and its causes on one line, without the URL (it may hold an API key).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_bad_urls_without_echoing_secrets() {
        for bad in ["ftp://host/KEY", "file:///KEY", "http://", "not a url KEY"] {
            match Transport::new(bad, RpcOptions::default()) {
                Err(LedgerError::Invalid(message)) => assert!(!message.contains("KEY"), "{message}"),
                Err(other) => panic!("{bad}: {other:?}"),
                Ok(_) => panic!("{bad} accepted"),
            }
        }
        let t = Transport::new("https://rpc.example.com/v2/KEY?api-key=KEY", RpcOptions::default()).unwrap();
        assert_eq!(t.endpoint(), "https://rpc.example.com/…");
    }

    #[tokio::test]
    async fn connection_errors_are_unavailable_and_hide_the_path() {
        // A port nothing listens on (bound, then released).
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let options = RpcOptions { attempts_max: 2, backoff_base_ms: 1, backoff_max_ms: 2, ..RpcOptions::default() };
        let t = Transport::new(&format!("http://127.0.0.1:{port}/SECRET"), options).unwrap();
        let result = t.exchange("getHealth", b"{}".to_vec(), |_| Ok(())).await;
        match result {
            Err(LedgerError::Unavailable(message)) => assert!(!message.contains("SECRET"), "{message}"),
            other => panic!("{other:?}"),
        }
    }
}
