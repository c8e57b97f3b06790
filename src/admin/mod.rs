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
//! - `GET  /v1/admin/accounts/:account/feedback?after=&limit=&verdict=&kind=` — the account's
//!   feedback (`feedback::Book::page`), least recently written first, paged (`nextAfter`).
//! - `POST /v1/admin/labels/reload` — read the labels files again (`--labels`, `--labels-extra`)
//!   and put them in force (`labels::live`); a file that fails changes nothing (400 naming it).
//!   Watched wallets that dealt with a newly listed address are re-screened at their next check.
//! - `GET|PUT /v1/admin/accounts/:account/policy` — an account's policy (issue #31), the same
//!   document and rules as the API's `/v1/developer/policy` (a `PUT` is recorded as by `admin`).
//! - `GET  /v1/admin/signing-keys` — the report-signing keys, current and retired: the key set
//!   `/.well-known/xray-keys.json` publishes, in `data` (`xray signing-keys list`).
//! - `POST /v1/admin/signing-keys/rotate` — a new report-signing key (`signing`); the old one's
//!   public key stays published as retired. Answers `{"data":{"keyId","retiredKeyId","createdAt"}}`.
//! - `POST /v1/admin/backup` `{"to": "/abs/dir"}` — starts an online backup into that new
//!   directory (`backup`): `202` with its status at once, `409` while one runs;
//!   `GET /v1/admin/backup` — the running or last backup's status (`404` before the first).
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

use crate::api::json::{check_content_type, parse_body, PolicyRequest};
use crate::api::{policy_answer, policy_error};
use crate::api::{ApiError, App};
use crate::auth::key::AccountId;
use crate::auth::table::{bearer_token, AuthFailure};
use crate::backup::{Backups, BaseChoice, Refusal};
use crate::clock::now_unix_ms;
use crate::config::{BODY_BYTES_MAX, POLICY_BODY_BYTES_MAX};
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
/// The report-signing keys (`GET`).
pub const SIGNING_KEYS_PATH: &str = "/v1/admin/signing-keys";
/// Rotates the report-signing key (`POST`).
pub const SIGNING_KEYS_ROTATE_PATH: &str = "/v1/admin/signing-keys/rotate";
/// Starts a backup (`POST`) or reads its status (`GET`).
pub const BACKUP_PATH: &str = "/v1/admin/backup";
/// Content type of the Prometheus text exposition format.
const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const GET: &[Method] = &[Method::Get];
const POST: &[Method] = &[Method::Post];
const GET_POST: &[Method] = &[Method::Get, Method::Post];
const GET_PUT: &[Method] = &[Method::Get, Method::Put];

/// What the admin listener needs: the app (keys, store, metrics, queue) and the public
/// listeners' stop state (for the draining gauge).
pub struct AdminState {
    pub app: Arc<App>,
    pub keys: KeyAdmin,
    pub token: String,
    pub api_stop: StopState,
    pub backups: Arc<Backups>,
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
    /// `:account/policy`: an account's policy (issue #31), read or replaced by the operator.
    Policy(&'p str),
    Feedback(&'p str),
    LabelsReload,
    SigningKeys,
    SigningKeysRotate,
    Backup,
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
        if path == SIGNING_KEYS_PATH {
            return Some(AdminRoute::SigningKeys);
        }
        if path == BACKUP_PATH {
            return Some(AdminRoute::Backup);
        }
        if let Some(rest) = path.strip_prefix(ACCOUNTS_PATH) {
            let (account, what) = rest.strip_prefix('/')?.split_once('/')?;
            if account.is_empty() {
                return None;
            }
            return match what {
                "webhook-secret" => Some(AdminRoute::WebhookSecret(account)),
                "policy" => Some(AdminRoute::Policy(account)),
                "feedback" => Some(AdminRoute::Feedback(account)),
                _ => None,
            };
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
            AdminRoute::Metrics | AdminRoute::Feedback(_) | AdminRoute::SigningKeys => GET,
            AdminRoute::Keys | AdminRoute::Backup => GET_POST,
            AdminRoute::Policy(_) => GET_PUT,
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

    /// A policy's body may carry two lists of addresses; every other admin body is small.
    fn body_bytes_max(&self, path: &str) -> usize {
        match AdminRoute::parse(path) {
            Some(AdminRoute::Policy(_)) => POLICY_BODY_BYTES_MAX,
            _ => BODY_BYTES_MAX,
        }
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
            (AdminRoute::Backup, Method::Get) => {
                json_response(200, self.state.backups.status().ok_or(ApiError::NotFound)?)
            }
            (AdminRoute::Backup, _) => {
                let order: BackupRequest = parse_admin_json(
                    request,
                    "expected a JSON object with to (an absolute path), and base (an absolute path) or incremental (true)",
                )?;
                let base = order.base_choice()?;
                json_response(202, self.state.backups.start(&order.to, &base, now_ms).map_err(backup_refusal)?)
            }
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
            (AdminRoute::Policy(account), method) => self.policy(request, account, method, now_ms),
            (AdminRoute::Feedback(account), _) => {
                // As its policy and webhook secret: an account no key belongs to is 404.
                feedback_page(&self.state.app, self.known_account(account)?, request.query.as_deref())
            }
            (AdminRoute::SigningKeys, _) => {
                let key_set: serde_json::Value =
                    serde_json::from_slice(&self.state.app.signer.key_set()).map_err(|e| ApiError::internal(&e))?;
                json_response(200, key_set)
            }
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
        let account = self.known_account(account)?;
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

    /// An account's policy (one some key belongs to: else 404): read, or replaced as the API's
    /// `PUT` does (by `admin`). The admin thread may wait on the store.
    fn policy(
        &self,
        request: &ApiRequest,
        account: &str,
        method: Method,
        now_ms: u64,
    ) -> Result<ApiResponse, ApiError> {
        let account = self.known_account(account)?;
        let policies = self.state.app.admission.policies();
        if method == Method::Get {
            return policy_answer(200, policies.record(account.as_str()));
        }
        let PolicyRequest(draft) = parse_body(request)?;
        let record =
            policies.put(&*self.state.app.store, account.as_str(), draft, "admin", now_ms).map_err(policy_error)?;
        tracing::info!(account = %account, version = record.version, "policy replaced by the operator");
        policy_answer(200, Some(record))
    }

    /// `account` parsed, and held by some key (else 404).
    fn known_account(&self, account: &str) -> Result<AccountId, ApiError> {
        let account = AccountId::parse(account)
            .map_err(|_| ApiError::InvalidRequest { field: "account", message: "not an account id (acct_…)" })?;
        if !self.state.app.keys.list().iter().any(|key| key.account == account) {
            return Err(ApiError::NotFound);
        }
        Ok(account)
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
        let mut text = app.metrics.render(&gauges);
        app.feedback.metrics.render(&mut text);
        self.state.backups.render_metrics(&mut text);
        ApiResponse::json(200, Bytes::from(text)).with_header("content-type", METRICS_CONTENT_TYPE)
    }
}

/// One page of an account's feedback: `{"data":{"account","feedback":[…],"nextAfter"}}`, least
/// recently written first; `after` is an opaque cursor (a page's `nextAfter`), `limit` 1 to
/// `FEEDBACK_PAGE_LEN_MAX` (default `FEEDBACK_PAGE_LEN_DEFAULT`), `verdict` and `kind` filter
/// (`kind=none`: records that name no signal).
fn feedback_page(app: &App, account: AccountId, query: Option<&str>) -> Result<ApiResponse, ApiError> {
    use crate::api::router::query_param;
    use crate::config::{FEEDBACK_PAGE_LEN_DEFAULT, FEEDBACK_PAGE_LEN_MAX};
    use crate::feedback::{FeedbackVerdict, Filter};
    let limit = match query_param(query, "limit") {
        None => FEEDBACK_PAGE_LEN_DEFAULT,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=FEEDBACK_PAGE_LEN_MAX).contains(&n) && text.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => {
                return Err(ApiError::InvalidRequest {
                    field: "limit",
                    message: "limit must be a whole number from 1 to 1000",
                })
            }
        },
    };
    let after = crate::api::feedback_cursor(query)?;
    let verdict = match query_param(query, "verdict") {
        None => None,
        Some(text) => Some(FeedbackVerdict::parse(text).ok_or(ApiError::InvalidRequest {
            field: "verdict",
            message: "verdict must be false_positive, confirmed, missed or false_negative",
        })?),
    };
    let kind = query_param(query, "kind").map(str::to_owned);
    if kind
        .as_deref()
        .is_some_and(|k| k.is_empty() || k.len() > 64 || !k.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
    {
        return Err(ApiError::InvalidRequest { field: "kind", message: "kind must be a signal kind, or none" });
    }
    let page = app
        .feedback
        .page(account.as_str(), after.as_deref(), limit, &Filter { verdict, kind })
        .map_err(|e| ApiError::from_store(&e))?;
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Page<'a> {
        account: &'a str,
        feedback: Vec<crate::api::FeedbackBody<'a>>,
        next_after: Option<String>,
    }
    json_response(
        200,
        Page {
            account: account.as_str(),
            feedback: page.records.iter().map(crate::api::FeedbackBody::of).collect(),
            next_after: page.next_after.as_deref().map(crate::api::feedback_cursor_text),
        },
    )
}

/// The create body: JSON, at most `BODY_BYTES_MAX` bytes, with `name` and `scopes`.
fn parse_create(request: &ApiRequest) -> Result<CreateKeyRequest, ApiError> {
    parse_admin_json(request, "expected a JSON object with name (string) and scopes (array of strings)")
}

/// An admin body of at most `BODY_BYTES_MAX` bytes, as `T`; `message` says what was expected.
fn parse_admin_json<T: serde::de::DeserializeOwned>(
    request: &ApiRequest,
    message: &'static str,
) -> Result<T, ApiError> {
    check_content_type(request.content_type.as_deref())?;
    let bytes = match &request.body {
        Body::Complete(bytes) if bytes.len() <= BODY_BYTES_MAX => bytes,
        _ => return Err(ApiError::PayloadTooLarge { max_bytes: BODY_BYTES_MAX }),
    };
    serde_json::from_slice(bytes).map_err(|_| ApiError::InvalidRequest { field: "body", message })
}

/// `POST /v1/admin/backup`'s body.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct BackupRequest {
    to: String,
    /// An earlier backup to share unchanged files with.
    #[serde(default)]
    base: Option<String>,
    /// Share unchanged files with the newest backup beside `to`.
    #[serde(default)]
    incremental: bool,
}

impl BackupRequest {
    fn base_choice(&self) -> Result<BaseChoice, ApiError> {
        match (&self.base, self.incremental) {
            (Some(_), true) => Err(ApiError::InvalidField {
                field: "base",
                message: "base names the backup to share files with; incremental: true finds the newest one: send one of them".into(),
            }),
            (Some(dir), false) => Ok(BaseChoice::Dir(dir.clone())),
            (None, true) => Ok(BaseChoice::Newest),
            (None, false) => Ok(BaseChoice::Full),
        }
    }
}

/// A backup that is not started, as the admin API answers it.
fn backup_refusal(refusal: Refusal) -> ApiError {
    match refusal {
        Refusal::Running(status) => ApiError::Conflict {
            message: format!(
                "backup {} into {} is running since {}: one at a time (GET {BACKUP_PATH} follows it)",
                status.id, status.to, status.started_at
            ),
            limit: Some(1),
            reason: Some("backup_running"),
        },
        Refusal::NotEmbedded => ApiError::Conflict {
            message:
                "this node's store is etcd: back the cluster up with etcdctl snapshot save (README, Backup and restore)"
                    .into(),
            limit: None,
            reason: Some("store_is_etcd"),
        },
        Refusal::Stopping => ApiError::ServiceBusy,
        Refusal::Target(message) => ApiError::InvalidField { field: "to", message },
        Refusal::Base(message) => ApiError::InvalidField { field: "base", message },
        Refusal::Internal(cause) => ApiError::internal(&cause),
    }
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
        assert!(matches!(
            AdminRoute::parse("/v1/admin/accounts/acct_1/feedback"),
            Some(AdminRoute::Feedback("acct_1"))
        ));
        assert!(matches!(
            AdminRoute::parse("/v1/admin/accounts/acct_1/webhook-secret"),
            Some(AdminRoute::WebhookSecret("acct_1"))
        ));
        for path in [
            "/",
            "/metrics/",
            "/v1/admin/keys/",
            "/v1/admin/keys/key_1",
            "/v1/admin/keys/key_1/delete",
            "/v1/admin/accounts//feedback",
            "/v1/admin/accounts/a/b/feedback",
        ] {
            assert!(AdminRoute::parse(path).is_none(), "{path}");
        }
    }
}
