//! The admin listener: operations that are not part of the public API (contract §8) —
//! Prometheus metrics and API key management — on their own address (loopback by default),
//! behind a bearer token the server generates on its first start.
//!
//! Routes (all need `Authorization: Bearer <admin token>`):
//! - `GET  /metrics` — Prometheus text exposition (`metrics::Metrics::render`);
//! - `GET  /v1/admin/keys` — every key, without secrets;
//! - `POST /v1/admin/keys` — create (`keys::CreateKeyRequest`); the answer holds the secret, once;
//! - `POST /v1/admin/keys/:id/revoke` — revoke, effective at every thread's next request;
//! - `POST /v1/admin/keys/:id/rotate` — a successor key (secret shown once); the old one revoked;
//! - `POST /v1/admin/accounts/:account/webhook-secret` — a new webhook signing secret for the
//!   account (shown once), replacing the one it had: deliveries are signed with it from then on.
//!   Answers `{"secret","account","createdAt"}` (the key routes wrap theirs in `data`).
//! - `POST /v1/admin/labels/reload` — read the labels files again (`--labels`, `--labels-extra`)
//!   and put them in force (`labels::live`); a file that fails changes nothing (400 naming it).
//!   Watched wallets that dealt with a newly listed address are re-screened at their next check.
//! - `POST /v1/admin/signing-keys/rotate` — a new report-signing key (`signing`); the old one's
//!   public key stays published as retired. Answers `{"data":{"keyId","retiredKeyId","createdAt"}}`.
//!
//! Runs on one listener thread of its own (`http::start` with one thread), separate from the
//! public listeners, so a scrape or a key operation never queues behind public traffic. Errors
//! use the public `ApiError` codes and body shape.
//!
//! Invariant: the token is compared in constant time, and neither it nor any API key secret is
//! logged. Deliberately absent: rate limiting of the admin API (it is loopback-only unless the
//! operator opts in with `admin_allow_remote`).

pub mod client;
pub mod files;
pub mod keys;

use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use subtle::ConstantTimeEq;

use crate::api::json::check_content_type;
use crate::api::{ApiError, App};
use crate::auth::key::AccountId;
use crate::auth::table::{bearer_token, AuthFailure};
use crate::clock::now_unix_ms;
use crate::config::BODY_BYTES_MAX;
use crate::http::{ApiRequest, ApiResponse, Body, Handler, Method, RequestId, StopState};
use crate::metrics::Gauges;
use crate::store::WebhookSecret;
use crate::webhooks::signature::new_secret;
use keys::{CreateKeyRequest, KeyAdmin};

/// Path prefix of the key-management routes.
pub const KEYS_PATH: &str = "/v1/admin/keys";
/// Path prefix of the account routes (`:account/webhook-secret`).
pub const ACCOUNTS_PATH: &str = "/v1/admin/accounts";
/// Path of the Prometheus scrape.
pub const METRICS_PATH: &str = "/metrics";
/// Reads the labels files again and puts them in force (`POST`).
pub const LABELS_RELOAD_PATH: &str = "/v1/admin/labels/reload";
/// Rotates the report-signing key (`POST`).
pub const SIGNING_KEYS_ROTATE_PATH: &str = "/v1/admin/signing-keys/rotate";
/// Content type of the Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const GET: &[Method] = &[Method::Get];
const POST: &[Method] = &[Method::Post];
const GET_POST: &[Method] = &[Method::Get, Method::Post];

/// What the admin listener needs: the app (keys, store, metrics, queue) and the public
/// listeners' stop state (for the draining gauge).
pub struct AdminState {
    pub app: Arc<App>,
    pub keys: KeyAdmin,
    pub token: String,
    pub api_stop: StopState,
}

/// The admin API on its listener thread.
pub struct AdminHandler {
    state: Arc<AdminState>,
}

impl AdminHandler {
    pub fn new(state: Arc<AdminState>) -> AdminHandler {
        AdminHandler { state }
    }
}

/// An admin route, matched on the path alone.
enum AdminRoute<'p> {
    Metrics,
    Keys,
    Revoke(&'p str),
    Rotate(&'p str),
    WebhookSecret(&'p str),
    LabelsReload,
    SigningKeysRotate,
}

impl AdminRoute<'_> {
    fn parse(path: &str) -> Option<AdminRoute<'_>> {
        if path == METRICS_PATH {
            return Some(AdminRoute::Metrics);
        }
        if path == LABELS_RELOAD_PATH {
            return Some(AdminRoute::LabelsReload);
        }
        if path == SIGNING_KEYS_ROTATE_PATH {
            return Some(AdminRoute::SigningKeysRotate);
        }
        if let Some(rest) = path.strip_prefix(ACCOUNTS_PATH) {
            let account = rest.strip_prefix('/')?.strip_suffix("/webhook-secret")?;
            return (!account.is_empty() && !account.contains('/')).then_some(AdminRoute::WebhookSecret(account));
        }
        let rest = path.strip_prefix(KEYS_PATH)?;
        if rest.is_empty() {
            return Some(AdminRoute::Keys);
        }
        let (id, action) = rest.strip_prefix('/')?.split_once('/')?;
        match action {
            "revoke" => Some(AdminRoute::Revoke(id)),
            "rotate" => Some(AdminRoute::Rotate(id)),
            _ => None,
        }
    }

    fn methods(&self) -> &'static [Method] {
        match self {
            AdminRoute::Metrics => GET,
            AdminRoute::Keys => GET_POST,
            AdminRoute::Revoke(_)
            | AdminRoute::Rotate(_)
            | AdminRoute::WebhookSecret(_)
            | AdminRoute::LabelsReload
            | AdminRoute::SigningKeysRotate => POST,
        }
    }
}

/// The answer of a webhook secret's creation: the secret, shown this once.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WebhookSecretBody {
    account: String,
    secret: String,
    created_at: String,
}

#[derive(Serialize)]
struct DataBody<T: Serialize> {
    data: T,
}

fn json_response<T: Serialize>(status: u16, data: T) -> Result<ApiResponse, ApiError> {
    let body = serde_json::to_vec(&DataBody { data }).map_err(|e| ApiError::internal(&e))?;
    Ok(ApiResponse::json(status, body))
}

impl Handler for AdminHandler {
    async fn handle(&self, request: ApiRequest) -> ApiResponse {
        self.respond(&request).unwrap_or_else(|e| e.to_response(&request.request_id))
    }

    fn internal_error(&self, request_id: &RequestId, cause: &str) -> ApiResponse {
        ApiError::internal(&cause).to_response(request_id)
    }
}

impl AdminHandler {
    fn respond(&self, request: &ApiRequest) -> Result<ApiResponse, ApiError> {
        let route = AdminRoute::parse(&request.path).ok_or(ApiError::NotFound)?;
        if !route.methods().contains(&request.method) {
            return Err(ApiError::MethodNotAllowed { allow: route.methods() });
        }
        self.authenticate(request)?;
        let now_ms = now_unix_ms();
        let keys = &self.state.keys;
        match (route, request.method) {
            (AdminRoute::Metrics, _) => Ok(self.metrics()),
            (AdminRoute::Keys, Method::Get) => json_response(200, keys.list(now_ms)),
            (AdminRoute::Keys, _) => {
                let spec = parse_create(request)?.to_spec(now_ms)?;
                json_response(201, keys.create(&spec, now_ms)?)
            }
            (AdminRoute::Revoke(id), _) => json_response(200, keys.revoke(id, now_ms)?),
            // A file that fails leaves the labels in force as they were.
            (AdminRoute::LabelsReload, _) => match self.state.app.labels.reload(now_ms) {
                Ok(report) => {
                    tracing::info!(
                        generation = report.generation,
                        labels = report.labels,
                        newly_listed = report.newly_listed,
                        "labels reloaded"
                    );
                    json_response(200, report)
                }
                Err(message) => Err(ApiError::InvalidField { field: "labels", message }),
            },
            (AdminRoute::Rotate(id), _) => json_response(201, keys.rotate(id, now_ms)?),
            (AdminRoute::SigningKeysRotate, _) => {
                json_response(201, self.state.app.signer.rotate(now_ms).map_err(|e| ApiError::internal(&e))?)
            }
            (AdminRoute::WebhookSecret(account), _) => {
                // `{"secret", "account", "createdAt"}` itself, as issue #15 specifies it (and the
                // CLI prints it), not wrapped in `data`.
                let body =
                    serde_json::to_vec(&self.webhook_secret(account, now_ms)?).map_err(|e| ApiError::internal(&e))?;
                Ok(ApiResponse::json(201, body))
            }
        }
    }

    /// A new webhook secret for `account` (one some key belongs to: else 404), stored
    /// (replacing its last one) and shown this once.
    fn webhook_secret(&self, account: &str, now_ms: u64) -> Result<WebhookSecretBody, ApiError> {
        let account = AccountId::parse(account)
            .map_err(|_| ApiError::InvalidRequest { field: "account", message: "not an account id (acct_…)" })?;
        if !self.state.app.keys.list().iter().any(|key| key.account == account) {
            return Err(ApiError::NotFound);
        }
        let secret = new_secret().map_err(|e| ApiError::internal(&e))?;
        let record = WebhookSecret { account: account.as_str().to_owned(), secret, created_at_ms: now_ms };
        self.state.app.store.put_webhook_secret(&record).map_err(|e| ApiError::from_store(&e))?;
        tracing::info!(account = %record.account, "webhook secret created");
        Ok(WebhookSecretBody {
            account: record.account,
            secret: record.secret,
            created_at: crate::clock::rfc3339_ms(now_ms),
        })
    }

    fn authenticate(&self, request: &ApiRequest) -> Result<(), ApiError> {
        let token = bearer_token(request.authorization.as_deref()).map_err(ApiError::AdminUnauthenticated)?;
        if bool::from(token.as_bytes().ct_eq(self.state.token.as_bytes())) {
            Ok(())
        } else {
            Err(ApiError::AdminUnauthenticated(AuthFailure::Unknown))
        }
    }

    fn metrics(&self) -> ApiResponse {
        let app = &self.state.app;
        let gauges = Gauges {
            queue_depth: app.pool.depth(),
            queue_capacity: app.pool.capacity(),
            live_jobs: app.index.len(),
            long_poll_waiters: app.waiters.load(std::sync::atomic::Ordering::Relaxed),
            keys: app.keys.len(),
            draining: self.state.api_stop.is_draining(),
            store_disk: app.store.disk_usage().inspect_err(|e| tracing::warn!(error = %e, "store size unread")).ok(),
        };
        ApiResponse::json(200, Bytes::from(app.metrics.render(&gauges)))
            .with_header("content-type", METRICS_CONTENT_TYPE)
    }
}

/// The create body: JSON, at most `BODY_BYTES_MAX` bytes, with `name` and `scopes`.
fn parse_create(request: &ApiRequest) -> Result<CreateKeyRequest, ApiError> {
    check_content_type(request.content_type.as_deref())?;
    let bytes = match &request.body {
        Body::Complete(bytes) if bytes.len() <= BODY_BYTES_MAX => bytes,
        _ => return Err(ApiError::PayloadTooLarge { max_bytes: BODY_BYTES_MAX }),
    };
    serde_json::from_slice(bytes).map_err(|_| ApiError::InvalidRequest {
        field: "body",
        message: "expected a JSON object with name (string) and scopes (array of strings)",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_exactly() {
        assert!(matches!(AdminRoute::parse("/metrics"), Some(AdminRoute::Metrics)));
        assert!(matches!(AdminRoute::parse("/v1/admin/keys"), Some(AdminRoute::Keys)));
        assert!(matches!(AdminRoute::parse("/v1/admin/keys/key_1/revoke"), Some(AdminRoute::Revoke("key_1"))));
        assert!(matches!(AdminRoute::parse("/v1/admin/keys/key_1/rotate"), Some(AdminRoute::Rotate("key_1"))));
        for path in ["/", "/metrics/", "/v1/admin/keys/", "/v1/admin/keys/key_1", "/v1/admin/keys/key_1/delete"] {
            assert!(AdminRoute::parse(path).is_none(), "{path}");
        }
    }
}
