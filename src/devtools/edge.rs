//! Stand-in handlers of the HTTP edge: the contract skeleton the edge tests drive, and the
//! baseline used for load-test ratios.
//!
//! Owns: `DemoHandler` (the contract's routing, errors and request checks with nothing behind
//! them), `BaselineHandler` (a fixed small JSON body for any request) and `run_edge`, the
//! command-line entry that serves either. Handlers run on listener threads, one per thread.
//!
//! `DemoHandler`, in the contract's order: route (404/405) → `/healthz` (200, 503 while
//! draining) → `Authorization: Bearer <token>` present (else 401 `missing` / `malformed`; any
//! token passes: there is no key store yet) → body checks for POST (415/413/400) → address
//! validation (400 `INVALID_ADDRESS`, equal compare addresses 400) → `wait` (400) → an answer
//! that says nothing is behind the edge: 404 for polls, 503 `SERVICE_BUSY` otherwise.
//!
//! Invariant: nothing here is the real API (that is `api::ApiHandler`); the stand-in calls the
//! API's own parsing and checks rather than repeating them. `BaselineHandler` does
//! no work beyond the edge, so `real / baseline` measures the cost of the API logic.

use bytes::Bytes;

use crate::api::json::{parse_body, BatchRequest, CompareRequest, ScanRequest, WalletRequest};
use crate::api::router::{body_bytes_max, parse_wait, route};
use crate::api::{health, ApiError, Route};
use crate::auth::table::bearer_token;
use crate::config::IoDriver;
use crate::http::{start, ApiRequest, ApiResponse, Handler, RequestId, ServerConfig, StopState, ThreadContext};
use crate::pubkey::Pubkey;
use crate::serve::StopSignals;

/// The baseline's body: the same bytes as a healthy `/healthz`.
const BASELINE_BODY: &[u8] = br#"{"status":"ok"}"#;

/// The contract's skeleton with nothing behind it.
#[derive(Debug, Clone)]
pub struct DemoHandler {
    stop: StopState,
}

impl DemoHandler {
    pub fn new(context: &ThreadContext) -> DemoHandler {
        DemoHandler { stop: context.stop.clone() }
    }

    fn answer(&self, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
        let route = route(request.method, &request.path)?;
        if route == Route::Healthz {
            return Ok(health(&self.stop, false));
        }
        bearer_token(request.authorization.as_deref()).map_err(ApiError::Unauthenticated)?;
        match route {
            Route::AnalyzeWallet => {
                let body: WalletRequest = parse_body(request)?;
                parse_address("wallet", &body.wallet)?;
                Err(ApiError::ServiceBusy)
            }
            Route::AnalyzeWallets => {
                let _: BatchRequest = parse_body(request)?;
                Err(ApiError::ServiceBusy)
            }
            Route::Compare => {
                let body: CompareRequest = parse_body(request)?;
                body.addresses()?;
                Err(ApiError::ServiceBusy)
            }
            Route::ScanTransaction => {
                let _: ScanRequest = parse_body(request)?;
                Err(ApiError::ServiceBusy)
            }
            Route::Feedback => {
                let _: crate::api::json::FeedbackRequest = parse_body(request)?;
                Err(ApiError::NotFound)
            }
            Route::Analysis { .. } | Route::Comparison { .. } => {
                parse_wait(request.query.as_deref())?;
                Err(ApiError::NotFound)
            }
            Route::CreateMonitor
            | Route::ListMonitors
            | Route::GetMonitor { .. }
            | Route::ChangeMonitor { .. }
            | Route::DeleteMonitor { .. }
            | Route::MonitorEvents { .. }
            | Route::RedeliverEvent { .. }
            | Route::GetPolicy
            | Route::PutPolicy
            | Route::ListFeedback => Err(ApiError::ServiceBusy),
            Route::Status | Route::Usage | Route::Healthz | Route::SigningKeys => Err(ApiError::ServiceBusy),
        }
    }
}

impl Handler for DemoHandler {
    async fn handle(&self, request: ApiRequest) -> ApiResponse {
        self.answer(&request).unwrap_or_else(|error| error.to_response(&request.request_id))
    }

    fn internal_error(&self, request_id: &RequestId, cause: &str) -> ApiResponse {
        ApiError::internal(&cause).to_response(request_id)
    }

    fn body_bytes_max(&self, path: &str) -> usize {
        body_bytes_max(path)
    }
}

fn parse_address(field: &'static str, text: &str) -> Result<Pubkey, ApiError> {
    Pubkey::parse(text).map_err(|reason| ApiError::InvalidAddress { field, reason })
}

/// A fixed `{"status":"ok"}` for every request: the edge's cost alone.
#[derive(Debug, Clone, Copy, Default)]
pub struct BaselineHandler;

impl Handler for BaselineHandler {
    async fn handle(&self, _request: ApiRequest) -> ApiResponse {
        ApiResponse::json(200, Bytes::from_static(BASELINE_BODY))
    }

    fn internal_error(&self, request_id: &RequestId, cause: &str) -> ApiResponse {
        ApiError::internal(&cause).to_response(request_id)
    }
}

/// Which stand-in `run_edge` serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EdgeMode {
    Demo,
    Baseline,
}

/// Serves `mode` until SIGINT or SIGTERM, then drains. For the load-test harness and as a
/// hidden CLI subcommand.
pub fn run_edge(mode: EdgeMode, listen: std::net::SocketAddr, threads: usize, driver: IoDriver) -> Result<(), String> {
    // Before the listeners serve (see `serve::run`).
    let signals = StopSignals::install()?;
    let config = ServerConfig { listen, threads, driver, ..ServerConfig::default() };
    let handle = match mode {
        EdgeMode::Demo => start(config, DemoHandler::new),
        EdgeMode::Baseline => start(config, |_: &ThreadContext| BaselineHandler),
    }
    .map_err(|e| e.to_string())?;
    let drivers: Vec<&str> = handle.drivers().iter().map(|d| d.as_str()).collect();
    eprintln!(
        "{mode:?} edge listening on http://{} ({} threads: {})",
        handle.local_addr(),
        drivers.len(),
        drivers.join(", ")
    );
    signals.wait();
    handle.start_draining();
    handle.shutdown().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_code::ErrorCode;
    use crate::http::runtime::DriverKind;
    use crate::http::{Body, Method};

    fn handler() -> DemoHandler {
        DemoHandler::new(&ThreadContext { index: 0, driver: DriverKind::Epoll, stop: StopState::default() })
    }

    fn code(request: ApiRequest) -> Option<ErrorCode> {
        handler().answer(&request).err().map(|e| e.code())
    }

    fn authed(method: Method, target: &str, body: &str) -> ApiRequest {
        let mut request = ApiRequest::new(method, target);
        request.authorization = Some("Bearer svc_live_x".into());
        request.content_type = Some("application/json".into());
        request.body = Body::Complete(Bytes::copy_from_slice(body.as_bytes()));
        request
    }

    #[test]
    fn pipeline_order() {
        assert_eq!(code(ApiRequest::new(Method::Get, "/nope")), Some(ErrorCode::NotFound));
        assert_eq!(
            code(ApiRequest::new(Method::Get, "/v1/developer/intelligence/wallet")),
            Some(ErrorCode::MethodNotAllowed)
        );
        assert_eq!(
            code(ApiRequest::new(Method::Post, "/v1/developer/intelligence/wallet")),
            Some(ErrorCode::Unauthenticated)
        );
        let mut wrong_type = authed(Method::Post, "/v1/developer/intelligence/wallet", "{}");
        wrong_type.content_type = None;
        assert_eq!(code(wrong_type), Some(ErrorCode::UnsupportedMediaType));
        let wallet = "/v1/developer/intelligence/wallet";
        assert_eq!(code(authed(Method::Post, wallet, "{}")), Some(ErrorCode::InvalidRequest));
        assert_eq!(code(authed(Method::Post, wallet, r#"{"wallet":"0OIl"}"#)), Some(ErrorCode::InvalidAddress));
        let good = r#"{"wallet":"11111111111111111111111111111111"}"#;
        assert_eq!(code(authed(Method::Post, wallet, good)), Some(ErrorCode::ServiceBusy));
        let same = r#"{"walletA":"11111111111111111111111111111111","walletB":"11111111111111111111111111111111"}"#;
        assert_eq!(
            code(authed(Method::Post, "/v1/developer/intelligence/compare", same)),
            Some(ErrorCode::InvalidRequest)
        );
        let poll = "/v1/developer/intelligence/analysis/an_1?wait=31";
        assert_eq!(code(authed(Method::Get, poll, "")), Some(ErrorCode::InvalidRequest));
        assert_eq!(
            code(authed(Method::Get, "/v1/developer/intelligence/analysis/an_1", "")),
            Some(ErrorCode::NotFound)
        );
    }

    #[test]
    fn health_follows_draining_and_a_failing_store() {
        let stop = StopState::default();
        assert_eq!(health(&stop, false).status, 200);
        let degraded = health(&stop, true);
        assert_eq!((degraded.status, &degraded.body[..]), (200, &br#"{"status":"degraded"}"#[..]));
        stop.start_draining();
        assert_eq!(health(&stop, false).status, 503);
        assert_eq!(health(&stop, true).status, 503);
    }
}
