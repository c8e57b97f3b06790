//! The routing table of the contract (§4 and `/healthz` of §8) and query parameters.
//!
//! Owns: `route` (path and method → `Route`, or 404 / 405 with the allowed methods),
//! `query_param` and `parse_wait`. Called on listener threads first thing for every request
//! (contract §3 step 1); pure, no allocation on the success path.
//!
//! Policies (for the README's API notes at integration):
//! - Paths match exactly, byte for byte, with no percent-decoding and no normalisation: a
//!   trailing slash (`/v1/developer/status/`) or a doubled slash is an unknown path → 404.
//! - A path parameter is one non-empty segment; its format is not checked here (an unknown or
//!   malformed id is a 404 from the lookup, contract §4).
//! - `HEAD`, `OPTIONS` and every other method on a known path → 405 with `Allow`.
//! - Unknown query parameters are ignored; for a repeated parameter the first one counts.
//!
//! Invariant: every route of the contract is here and nowhere else; `Route::PATHS` lists them
//! for documentation and tests.

use super::ApiError;
use crate::auth::scope::Scope;
use crate::config::{
    BATCH_BODY_BYTES_MAX, BODY_BYTES_MAX, FEEDBACK_SCAN_BODY_BYTES_MAX, POLICY_BODY_BYTES_MAX, SCAN_BODY_BYTES_MAX,
    WAIT_S_MAX,
};
use crate::http::Method;

const V1: &str = "/v1/developer/";
const ANALYSIS_PREFIX: &str = "intelligence/analysis/";
const COMPARISON_PREFIX: &str = "intelligence/comparison/";

/// A matched route, with its path parameter borrowed from the request path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// `GET /healthz` (no authentication).
    Healthz,
    /// `GET /.well-known/xray-keys.json`: the report-signing keys (no authentication).
    SigningKeys,
    /// `POST /v1/developer/intelligence/wallet`
    AnalyzeWallet,
    /// `POST /v1/developer/intelligence/wallets` (a batch: an extension of the contract)
    AnalyzeWallets,
    /// `POST /v1/developer/intelligence/compare`
    Compare,
    /// `GET /v1/developer/intelligence/analysis/:id`
    Analysis { id: &'a str },
    /// `GET /v1/developer/intelligence/comparison/:pairId`
    Comparison { pair_id: &'a str },
    /// `POST /v1/developer/intelligence/transaction` (the pre-sign scan: an extension)
    ScanTransaction,
    /// `POST /v1/developer/monitors` (monitors: an extension, as are the six below)
    CreateMonitor,
    /// `GET /v1/developer/monitors`
    ListMonitors,
    /// `GET /v1/developer/monitors/:id`
    GetMonitor { id: &'a str },
    /// `PATCH /v1/developer/monitors/:id`
    ChangeMonitor { id: &'a str },
    /// `DELETE /v1/developer/monitors/:id`
    DeleteMonitor { id: &'a str },
    /// `GET /v1/developer/monitors/:id/events`
    MonitorEvents { id: &'a str },
    /// `POST /v1/developer/monitors/:id/events/:eventId/redeliver`
    RedeliverEvent { id: &'a str, event_id: &'a str },
    /// `GET /v1/developer/policy` (the account's policy, issue #31: an extension)
    GetPolicy,
    /// `PUT /v1/developer/policy`
    PutPolicy,
    /// `POST /v1/developer/feedback` (feedback on an analysis or a scan: an extension)
    Feedback,
    /// `GET /v1/developer/feedback` (the account's own feedback, newest first)
    ListFeedback,
    /// `GET /v1/developer/status`
    Status,
    /// `GET /v1/developer/usage`
    Usage,
}

const GET: &[Method] = &[Method::Get];
const POST: &[Method] = &[Method::Post];
const MONITORS: &[Method] = &[Method::Get, Method::Post];
const MONITOR: &[Method] = &[Method::Get, Method::Patch, Method::Delete];
const POLICY: &[Method] = &[Method::Get, Method::Put];
const FEEDBACK: &[Method] = &[Method::Get, Method::Post];
const MONITORS_PATH: &str = "monitors";

impl Route<'_> {
    /// Every route as `METHOD path`, in contract order.
    pub const PATHS: [&'static str; 21] = [
        "POST /v1/developer/intelligence/wallet",
        "POST /v1/developer/intelligence/wallets",
        "GET /v1/developer/intelligence/analysis/:id",
        "POST /v1/developer/intelligence/compare",
        "GET /v1/developer/intelligence/comparison/:pairId",
        "POST /v1/developer/intelligence/transaction",
        "POST /v1/developer/monitors",
        "GET /v1/developer/monitors",
        "GET /v1/developer/monitors/:id",
        "PATCH /v1/developer/monitors/:id",
        "DELETE /v1/developer/monitors/:id",
        "GET /v1/developer/monitors/:id/events",
        "POST /v1/developer/monitors/:id/events/:eventId/redeliver",
        "GET /v1/developer/policy",
        "PUT /v1/developer/policy",
        "POST /v1/developer/feedback",
        "GET /v1/developer/feedback",
        "GET /v1/developer/status",
        "GET /v1/developer/usage",
        "GET /healthz",
        "GET /.well-known/xray-keys.json",
    ];

    /// The methods this route answers (the `Allow` list of a 405).
    pub fn methods(&self) -> &'static [Method] {
        match self {
            Route::AnalyzeWallet
            | Route::AnalyzeWallets
            | Route::Compare
            | Route::ScanTransaction
            | Route::RedeliverEvent { .. } => POST,
            Route::CreateMonitor | Route::ListMonitors => MONITORS,
            Route::Feedback | Route::ListFeedback => FEEDBACK,
            Route::GetMonitor { .. } | Route::ChangeMonitor { .. } | Route::DeleteMonitor { .. } => MONITOR,
            Route::GetPolicy | Route::PutPolicy => POLICY,
            _ => GET,
        }
    }

    /// The route of `method` on this route's path (paths that several methods share).
    fn with_method(self, method: Method) -> Self {
        match (self, method) {
            (Route::ListMonitors, Method::Post) => Route::CreateMonitor,
            (Route::GetMonitor { id }, Method::Patch) => Route::ChangeMonitor { id },
            (Route::GetMonitor { id }, Method::Delete) => Route::DeleteMonitor { id },
            (Route::GetPolicy, Method::Put) => Route::PutPolicy,
            (Route::ListFeedback, Method::Post) => Route::Feedback,
            (route, _) => route,
        }
    }

    /// The scope a key needs (contract §2); `None` for routes any active key (or no key) may
    /// call.
    pub fn required_scope(&self) -> Option<Scope> {
        match self {
            Route::AnalyzeWallet | Route::AnalyzeWallets => Some(Scope::WalletAnalyze),
            Route::Compare => Some(Scope::WalletCompare),
            Route::ScanTransaction => Some(Scope::TransactionScan),
            Route::CreateMonitor
            | Route::ChangeMonitor { .. }
            | Route::DeleteMonitor { .. }
            | Route::RedeliverEvent { .. } => Some(Scope::MonitorWrite),
            // Events also need `analysis:read` (the endpoint checks it): they carry changes.
            Route::ListMonitors | Route::GetMonitor { .. } | Route::MonitorEvents { .. } => Some(Scope::MonitorRead),
            // Feedback, written and read back: the scope that reads what it judges.
            Route::Analysis { .. } | Route::Comparison { .. } | Route::Feedback | Route::ListFeedback => {
                Some(Scope::AnalysisRead)
            }
            Route::Usage => Some(Scope::UsageRead),
            Route::GetPolicy => Some(Scope::PolicyRead),
            Route::PutPolicy => Some(Scope::PolicyWrite),
            Route::Status | Route::Healthz | Route::SigningKeys => None,
        }
    }

    /// Whether the route needs an API key (all but `/healthz` and the signing keys).
    pub fn needs_key(&self) -> bool {
        !matches!(self, Route::Healthz | Route::SigningKeys)
    }

    /// Whether the route reads a JSON body.
    pub fn has_body(&self) -> bool {
        matches!(
            self,
            Route::AnalyzeWallet
                | Route::AnalyzeWallets
                | Route::Compare
                | Route::ScanTransaction
                | Route::Feedback
                | Route::CreateMonitor
                | Route::ChangeMonitor { .. }
                | Route::PutPolicy
        )
    }
}

/// Matches a path to a route regardless of method.
fn match_path(path: &str) -> Option<Route<'_>> {
    if path == "/healthz" {
        return Some(Route::Healthz);
    }
    if path == crate::signing::KEY_SET_PATH {
        return Some(Route::SigningKeys);
    }
    let rest = path.strip_prefix(V1)?;
    match rest {
        "intelligence/wallet" => return Some(Route::AnalyzeWallet),
        "intelligence/wallets" => return Some(Route::AnalyzeWallets),
        "intelligence/compare" => return Some(Route::Compare),
        "intelligence/transaction" => return Some(Route::ScanTransaction),
        "feedback" => return Some(Route::ListFeedback),
        "status" => return Some(Route::Status),
        "usage" => return Some(Route::Usage),
        "policy" => return Some(Route::GetPolicy),
        _ => {}
    }
    if let Some(id) = rest.strip_prefix(ANALYSIS_PREFIX).filter(|s| is_segment(s)) {
        return Some(Route::Analysis { id });
    }
    if let Some(monitors) = rest.strip_prefix(MONITORS_PATH) {
        return match_monitors(monitors);
    }
    rest.strip_prefix(COMPARISON_PREFIX).filter(|s| is_segment(s)).map(|pair_id| Route::Comparison { pair_id })
}

/// The monitors' paths after `…/monitors`: ``, `/:id`, `/:id/events`,
/// `/:id/events/:eventId/redeliver`.
fn match_monitors(rest: &str) -> Option<Route<'_>> {
    if rest.is_empty() {
        return Some(Route::ListMonitors);
    }
    let mut parts = rest.strip_prefix('/')?.split('/');
    let id = parts.next().filter(|s| !s.is_empty())?;
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (None, ..) => Some(Route::GetMonitor { id }),
        (Some("events"), None, ..) => Some(Route::MonitorEvents { id }),
        (Some("events"), Some(event_id), Some("redeliver"), None) if !event_id.is_empty() => {
            Some(Route::RedeliverEvent { id, event_id })
        }
        _ => None,
    }
}

/// The largest body a request to `path` may carry: the batch's and a monitor's 16 KiB (up to
/// 100 wallets), a transaction scan's 16 KiB (up to five transactions), a policy's 64 KiB (two lists of 500 addresses), feedback's 128 KiB (a scan's
/// signed answer sent back; feedback on an analysis keeps 4 KiB, `endpoints::feedback`), else
/// the contract's 4 KiB (the edge stops reading past it; `api::json` answers the 413).
pub fn body_bytes_max(path: &str) -> usize {
    match match_path(path) {
        Some(Route::AnalyzeWallets | Route::ListMonitors | Route::GetMonitor { .. }) => BATCH_BODY_BYTES_MAX,
        Some(Route::ScanTransaction) => SCAN_BODY_BYTES_MAX,
        Some(Route::GetPolicy) => POLICY_BODY_BYTES_MAX,
        Some(Route::ListFeedback) => FEEDBACK_SCAN_BODY_BYTES_MAX,
        _ => BODY_BYTES_MAX,
    }
}

/// The poll path of an analysis: the `Route::Analysis` path with its id (for `pollUrl` and
/// `Location`, after the public base URL).
pub fn analysis_path(id: &str) -> String {
    format!("{V1}{ANALYSIS_PREFIX}{id}")
}

/// The poll path of a comparison: the `Route::Comparison` path with its pair id.
pub fn comparison_path(pair_id: &str) -> String {
    format!("{V1}{COMPARISON_PREFIX}{pair_id}")
}

fn is_segment(s: &str) -> bool {
    !s.is_empty() && !s.contains('/')
}

/// Contract §3 step 1: unknown path → 404; known path, wrong method → 405 with `Allow`.
pub fn route(method: Method, path: &str) -> Result<Route<'_>, ApiError> {
    let route = match_path(path).ok_or(ApiError::NotFound)?.with_method(method);
    let allow = route.methods();
    if allow.contains(&method) {
        Ok(route)
    } else {
        Err(ApiError::MethodNotAllowed { allow })
    }
}

/// The raw value of the first query parameter named `name` (no percent-decoding).
pub fn query_param<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then_some(value)
    })
}

/// `wait=<seconds>` of a poll: absent → `None`; an integer 0–30 → `Some`; anything else → 400
/// `INVALID_REQUEST` with `details.field = "wait"`.
pub fn parse_wait(query: Option<&str>) -> Result<Option<u32>, ApiError> {
    let Some(text) = query_param(query, "wait") else { return Ok(None) };
    let invalid = ApiError::InvalidRequest { field: "wait", message: "wait must be an integer from 0 to 30 (seconds)" };
    // Digits only: no sign, no spaces; the length bound keeps the parse from overflowing.
    if text.is_empty() || text.len() > 4 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid);
    }
    match text.parse::<u32>() {
        Ok(seconds) if seconds <= WAIT_S_MAX => Ok(Some(seconds)),
        _ => Err(invalid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error_code::ErrorCode;

    #[test]
    fn every_contract_route_matches() {
        for line in Route::PATHS {
            let (method, path) = line.split_once(' ').unwrap();
            let path = path.replace(":id", "an_1").replace(":pairId", "pair_1").replace(":eventId", "evt_1");
            let route = route(Method::from_token(method), &path).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!(route.methods().iter().any(|m| m.as_str() == method), "{line}");
        }
        assert_eq!(
            route(Method::Get, "/v1/developer/intelligence/analysis/an_X").unwrap(),
            Route::Analysis { id: "an_X" }
        );
        assert_eq!(
            route(Method::Get, "/v1/developer/intelligence/comparison/pair_Y").unwrap(),
            Route::Comparison { pair_id: "pair_Y" }
        );
    }

    #[test]
    fn monitor_paths_pick_their_route_by_method() {
        let p = "/v1/developer/monitors/mon_1";
        assert_eq!(route(Method::Get, p).unwrap(), Route::GetMonitor { id: "mon_1" });
        assert_eq!(route(Method::Patch, p).unwrap(), Route::ChangeMonitor { id: "mon_1" });
        assert_eq!(route(Method::Delete, p).unwrap(), Route::DeleteMonitor { id: "mon_1" });
        assert_eq!(route(Method::Post, p).unwrap_err(), ApiError::MethodNotAllowed { allow: MONITOR });
        assert_eq!(route(Method::Post, "/v1/developer/monitors").unwrap(), Route::CreateMonitor);
        assert_eq!(
            route(Method::Post, "/v1/developer/monitors/mon_1/events/evt_2/redeliver").unwrap(),
            Route::RedeliverEvent { id: "mon_1", event_id: "evt_2" }
        );
        for bad in [
            "/v1/developer/monitors/",
            "/v1/developer/monitors//events",
            "/v1/developer/monitors/mon_1/",
            "/v1/developer/monitors/mon_1/events/",
            "/v1/developer/monitors/mon_1/events/evt_2",
            "/v1/developer/monitors/mon_1/events//redeliver",
            "/v1/developer/monitors/mon_1/events/evt_2/redeliver/x",
            "/v1/developer/monitorsx",
        ] {
            assert_eq!(route(Method::Get, bad), Err(ApiError::NotFound), "{bad}");
        }
        assert_eq!(body_bytes_max("/v1/developer/monitors"), BATCH_BODY_BYTES_MAX);
    }

    #[test]
    fn unknown_paths_are_404() {
        for path in [
            "/",
            "",
            "/v1",
            "/v1/developer/",
            "/v1/developer/status/",
            "/healthz/",
            "/.well-known/xray-keys.json/",
            "/.well-known/",
            "/v1/developer/intelligence/analysis/",
            "/v1/developer/intelligence/analysis",
            "/v1/developer/intelligence/analysis/a/b",
            "/v1/developer/intelligence/comparison//",
            "//v1/developer/status",
            "/V1/developer/status",
            "/v2/developer/status",
        ] {
            assert_eq!(route(Method::Get, path), Err(ApiError::NotFound), "{path:?}");
            assert_eq!(route(Method::Post, path), Err(ApiError::NotFound), "{path:?}");
        }
    }

    #[test]
    fn wrong_method_is_405_with_allow() {
        let err = route(Method::Get, "/v1/developer/intelligence/wallet").unwrap_err();
        assert_eq!(err, ApiError::MethodNotAllowed { allow: &[Method::Post] });
        let err = route(Method::Post, "/v1/developer/status").unwrap_err();
        assert_eq!(err.code(), ErrorCode::MethodNotAllowed);
        assert_eq!(route(Method::Other, "/healthz").unwrap_err(), ApiError::MethodNotAllowed { allow: &[Method::Get] });
    }

    #[test]
    fn scopes_follow_the_contract() {
        assert_eq!(Route::AnalyzeWallet.required_scope(), Some(Scope::WalletAnalyze));
        assert_eq!(Route::AnalyzeWallets.required_scope(), Some(Scope::WalletAnalyze));
        assert_eq!(Route::Comparison { pair_id: "p" }.required_scope(), Some(Scope::AnalysisRead));
        assert_eq!(Route::Status.required_scope(), None);
        assert!(!Route::Healthz.needs_key());
        assert!(Route::Status.needs_key());
        assert!(Route::Compare.has_body());
        assert_eq!(Route::Feedback.required_scope(), Some(Scope::AnalysisRead));
        assert!(Route::Feedback.has_body());
        assert_eq!(route(Method::Post, "/v1/developer/feedback"), Ok(Route::Feedback));
        assert_eq!(route(Method::Get, "/v1/developer/feedback"), Ok(Route::ListFeedback));
        assert_eq!(Route::ListFeedback.required_scope(), Some(Scope::AnalysisRead));
        assert!(!Route::ListFeedback.has_body());
        assert_eq!(route(Method::Put, "/v1/developer/feedback"), Err(ApiError::MethodNotAllowed { allow: FEEDBACK }));
    }

    #[test]
    fn only_the_batch_and_the_scan_read_more_than_the_contracts_4_kib() {
        assert_eq!(body_bytes_max("/v1/developer/intelligence/wallets"), 16 * 1024);
        assert_eq!(body_bytes_max("/v1/developer/intelligence/transaction"), SCAN_BODY_BYTES_MAX, "a sequence");
        for path in ["/v1/developer/intelligence/wallet", "/v1/developer/intelligence/compare", "/nope", "/healthz"] {
            assert_eq!(body_bytes_max(path), 4096, "{path}");
        }
        assert_eq!(body_bytes_max("/v1/developer/feedback"), FEEDBACK_SCAN_BODY_BYTES_MAX, "a scan's answer");
    }

    #[test]
    fn query_params() {
        assert_eq!(query_param(Some("a=1&wait=5&wait=7"), "wait"), Some("5"));
        assert_eq!(query_param(Some("wait"), "wait"), Some(""));
        assert_eq!(query_param(Some("waiting=1"), "wait"), None);
        assert_eq!(query_param(None, "wait"), None);
    }

    #[test]
    fn wait_bounds() {
        assert_eq!(parse_wait(None), Ok(None));
        assert_eq!(parse_wait(Some("other=1")), Ok(None));
        assert_eq!(parse_wait(Some("wait=0")), Ok(Some(0)));
        assert_eq!(parse_wait(Some("wait=30&x")), Ok(Some(30)));
        assert_eq!(parse_wait(Some("wait=007")), Ok(Some(7)));
        for bad in ["wait=31", "wait=", "wait=-1", "wait=+1", "wait=1.5", "wait=abc", "wait=99999999999", "wait= 1"] {
            let err = parse_wait(Some(bad)).unwrap_err();
            assert_eq!(
                err,
                ApiError::InvalidRequest { field: "wait", message: "wait must be an integer from 0 to 30 (seconds)" }
            );
        }
    }
}
