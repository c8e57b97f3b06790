//! The admin API's client, used by `xray keys create|list|revoke|rotate`, `xray accounts`,
//! `xray feedback list`, `xray signing-keys` and `xray backup`: finds the admin
//! address and token in the data directory (or takes `--admin-url`), sends one request and
//! returns the answer's `data`, or the server's error code and message.
//!
//! Runs on the main thread of the `xray keys` process, on a current-thread tokio runtime.
//! Invariant: the token is sent only as a bearer header and never printed.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{files, ACCOUNTS_PATH, KEYS_PATH};
use crate::config::{ADMIN_REQUEST_TIMEOUT_MS, ADMIN_RESPONSE_BYTES_MAX};

pub struct AdminClient {
    base_url: String,
    token: String,
    http: reqwest::Client,
}

impl AdminClient {
    /// A client for the server whose data directory is `data_dir`; `admin_url` overrides the
    /// address recorded there (`http://host:port`).
    pub fn locate(data_dir: &Path, admin_url: Option<&str>) -> Result<AdminClient, String> {
        let token = files::read_token(data_dir).map_err(|e| {
            format!("admin token: {e} (has `xray serve --data-dir {}` started once?)", data_dir.display())
        })?;
        let base_url = match admin_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", files::read_addr(data_dir)?),
        };
        let http = reqwest::Client::builder()
            .timeout(Duration::from_millis(ADMIN_REQUEST_TIMEOUT_MS))
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(AdminClient { base_url, token, http })
    }

    pub async fn create(&self, body: &Value) -> Result<Value, String> {
        self.call(reqwest::Method::POST, KEYS_PATH.to_owned(), Some(body)).await
    }

    pub async fn list(&self) -> Result<Value, String> {
        self.call(reqwest::Method::GET, KEYS_PATH.to_owned(), None).await
    }

    /// `action` is `revoke` or `rotate`.
    pub async fn act(&self, id: &str, action: &str) -> Result<Value, String> {
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!("{id:?} is not a key id (key_…)"));
        }
        self.call(reqwest::Method::POST, format!("{KEYS_PATH}/{id}/{action}"), None).await
    }

    /// Creates or rotates an account's webhook secret (shown this once).
    pub async fn webhook_secret(&self, account: &str) -> Result<Value, String> {
        if account.is_empty() || !account.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!("{account:?} is not an account id (acct_…)"));
        }
        self.call(reqwest::Method::POST, format!("{ACCOUNTS_PATH}/{account}/webhook-secret"), None).await
    }

    /// One page of an account's feedback; `query` is the page's query string (without `?`).
    pub async fn feedback(&self, account: &str, query: &str) -> Result<Value, String> {
        if account.is_empty() || !account.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!("{account:?} is not an account id (acct_…)"));
        }
        if !query.bytes().all(|b| b.is_ascii_alphanumeric() || b"_=&".contains(&b)) {
            return Err("--after, --verdict and --kind take letters, digits and _ only".into());
        }
        let sep = if query.is_empty() { "" } else { "?" };
        self.call(reqwest::Method::GET, format!("{ACCOUNTS_PATH}/{account}/feedback{sep}{query}"), None).await
    }

    /// The report-signing keys, current and retired (`xray signing-keys list`).
    pub async fn signing_keys(&self) -> Result<Value, String> {
        self.call(reqwest::Method::GET, super::SIGNING_KEYS_PATH.to_owned(), None).await
    }

    /// Rotates the report-signing key (`xray signing-keys rotate`).
    pub async fn rotate_signing_key(&self) -> Result<Value, String> {
        self.call(reqwest::Method::POST, super::SIGNING_KEYS_ROTATE_PATH.to_owned(), None).await
    }

    /// Starts an online backup into `to`, an absolute path on the server's machine.
    /// `base` (an absolute path) or `incremental` shares the unchanged files of an earlier one.
    pub async fn start_backup(&self, to: &str, base: Option<&str>, incremental: bool) -> Result<Value, String> {
        let mut body = serde_json::json!({ "to": to });
        if let Some(base) = base {
            body["base"] = base.into();
        }
        if incremental {
            body["incremental"] = true.into();
        }
        self.call(reqwest::Method::POST, super::BACKUP_PATH.to_owned(), Some(&body)).await
    }

    /// The running or last backup's status.
    pub async fn backup_status(&self) -> Result<Value, String> {
        self.call(reqwest::Method::GET, super::BACKUP_PATH.to_owned(), None).await
    }

    async fn call(&self, method: reqwest::Method, path: String, body: Option<&Value>) -> Result<Value, String> {
        let url = format!("{}{path}", self.base_url);
        let mut request = self.http.request(method, &url).bearer_auth(&self.token);
        if let Some(body) = body {
            let bytes = serde_json::to_vec(body).map_err(|e| format!("request body: {e}"))?;
            request = request.header(reqwest::header::CONTENT_TYPE, "application/json").body(bytes);
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status();
        let too_large = || format!("admin answer larger than {ADMIN_RESPONSE_BYTES_MAX} bytes");
        if response.content_length().is_some_and(|n| n > ADMIN_RESPONSE_BYTES_MAX as u64) {
            return Err(too_large());
        }
        let bytes = response.bytes().await.map_err(|e| format!("admin answer: {}", causes(&e)))?;
        if bytes.len() > ADMIN_RESPONSE_BYTES_MAX {
            return Err(too_large());
        }
        let value: Value = serde_json::from_slice(&bytes).map_err(|e| format!("admin answer ({status}): {e}"))?;
        if status.is_success() {
            // Key answers wrap their document in `data`; the webhook secret's is the document.
            return Ok(value.get("data").cloned().unwrap_or(value));
        }
        let error = &value["error"];
        let details = error.get("details").map(|d| format!(" {d}")).unwrap_or_default();
        Err(format!("{} {}: {}{details}", status.as_u16(), error["code"].as_str().unwrap_or("?"), error["message"]))
    }

    /// Why the admin listener could not be reached, with a hint when nothing listens there.
    fn unreachable(&self, e: &reqwest::Error) -> String {
        let hint = if e.is_connect() {
            " (is `xray serve` running with this data directory? its admin address is in admin.addr)"
        } else {
            ""
        };
        format!("admin listener at {}: {}{hint}", self.base_url, causes(e))
    }
}

/// The error and its causes on one line (reqwest's own text is only the outermost).
fn causes(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
