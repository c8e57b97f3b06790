//! Key management as the operator sees it: create, list, revoke and rotate, each applied to the
//! in-memory key table (what every listener thread reads) and to the store (what survives a
//! restart), plus the admin API's JSON for a key and for a create request.
//!
//! Called on the admin listener thread, and on the main thread for the first key at start-up.
//!
//! Invariant: the store and the table agree after every successful call. Ordering is chosen so
//! a store failure errs on the side of refusing access: a new key is added to the table only
//! after its record is durable (a failed create leaves no usable key); a revocation is written
//! before the table sees it (a failed revoke leaves the key active everywhere, and the operator
//! sees the error); a rotation revokes in memory first, so if its batch fails the successor is
//! dropped and the old key stays revoked in memory until restart — never two live keys.
//! Invariant: a key's secret appears only in the create/rotate answer, never in a log line.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::api::ApiError;
use crate::auth::key::{AccountId, KeyId};
use crate::auth::record::{KeyRecord, KeySpec, KeyStatus};
use crate::auth::scope::{Scopes, SCOPES_EXPECTED};
use crate::auth::table::{KeyTable, TableError};
use crate::clock::{parse_rfc3339_ms, rfc3339_ms};
use crate::config;
use crate::limits::quota::QuotaPeriod;
use crate::store::{Store, UsageCarry};

/// Key operations over the table and the store together.
#[derive(Clone)]
pub struct KeyAdmin {
    pub keys: Arc<KeyTable>,
    pub store: Arc<dyn Store>,
}

/// A key as the admin API and `xray keys` show it. `key` (the secret) only when just issued.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub name: String,
    pub account: String,
    pub prefix: String,
    pub scopes: Scopes,
    pub status: &'static str,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub replaced_by: Option<String>,
    pub rate_limit: RateLimitView,
    pub quota: KeyQuota,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitView {
    pub rate_per_second: u32,
    pub burst: u32,
}

#[derive(Debug, Serialize)]
pub struct KeyQuota {
    pub limit: u64,
    pub period: &'static str,
}

impl KeyView {
    pub fn of(record: &KeyRecord, secret: Option<&str>, now_ms: u64) -> KeyView {
        KeyView {
            id: record.id.as_str().to_owned(),
            key: secret.map(str::to_owned),
            name: record.name.clone(),
            account: record.account.as_str().to_owned(),
            prefix: record.prefix.clone(),
            scopes: record.scopes,
            status: record.state_at(now_ms).as_str(),
            created_at: rfc3339_ms(record.created_at_ms),
            expires_at: record.expires_at_ms.map(rfc3339_ms),
            revoked_at: record.revoked_at_ms.map(rfc3339_ms),
            replaced_by: record.replaced_by.as_ref().map(|id| id.as_str().to_owned()),
            rate_limit: RateLimitView { rate_per_second: record.rate_per_second, burst: record.burst },
            quota: KeyQuota { limit: record.quota_limit, period: record.quota_period.as_str() },
        }
    }
}

/// Body of `POST /v1/admin/keys`. Only `name` and `scopes` are required; limits default to the
/// values in `config`, the account to a new one. Unknown fields are ignored.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateKeyRequest {
    pub name: String,
    pub account: Option<String>,
    pub scopes: Vec<String>,
    pub rate_per_second: Option<u32>,
    pub burst: Option<u32>,
    pub quota: Option<u64>,
    pub period: Option<String>,
    pub expires_at: Option<String>,
}

fn invalid(field: &'static str, message: &'static str) -> ApiError {
    ApiError::InvalidRequest { field, message }
}

impl CreateKeyRequest {
    /// The spec of the key to issue, every field checked (400 naming the field otherwise).
    pub fn to_spec(&self, now_ms: u64) -> Result<KeySpec, ApiError> {
        let account = match &self.account {
            Some(text) => AccountId::parse(text)
                .map_err(|_| invalid("account", "account must be 1-64 characters of A-Z a-z 0-9 . _ -"))?,
            None => AccountId::generate().map_err(|e| ApiError::internal(&e))?,
        };
        let scopes = Scopes::parse_list(&self.scopes.join(",")).map_err(|_| invalid("scopes", SCOPES_EXPECTED))?;
        if scopes.is_empty() {
            return Err(invalid("scopes", SCOPES_EXPECTED));
        }
        let quota_period = match self.period.as_deref() {
            None => QuotaPeriod::Month,
            Some(text) => QuotaPeriod::parse(text).ok_or(invalid("period", "period must be day or month"))?,
        };
        let expires_at_ms = match self.expires_at.as_deref() {
            None => None,
            Some(text) => {
                let ms = parse_rfc3339_ms(text).ok_or(invalid("expiresAt", "expiresAt must be an RFC 3339 time"))?;
                if ms <= now_ms {
                    return Err(invalid("expiresAt", "expiresAt must be in the future"));
                }
                Some(ms)
            }
        };
        Ok(KeySpec {
            account,
            name: self.name.clone(),
            scopes,
            expires_at_ms,
            rate_per_second: self.rate_per_second.unwrap_or(config::KEY_RATE_PER_SECOND_DEFAULT),
            burst: self.burst.unwrap_or(config::KEY_BURST_DEFAULT),
            quota_limit: self.quota.unwrap_or(config::KEY_QUOTA_LIMIT_DEFAULT),
            quota_period,
        })
    }
}

fn table_error(error: TableError) -> ApiError {
    match error {
        TableError::UnknownId => ApiError::NotFound,
        TableError::NotActive => invalid("id", "only an active key can be rotated"),
        TableError::Record(_) => invalid("body", "the key's name, rate limit, quota or expiry is out of range"),
        // A limit the operator reached, not a fault of the server: a conflict, named.
        TableError::Full => ApiError::Conflict {
            message: format!(
                "the key table holds its maximum of {} keys, revoked ones included: no key can be added",
                config::KEY_TABLE_LEN_MAX
            ),
            limit: Some(config::KEY_TABLE_LEN_MAX as u64),
            reason: Some("key_table_full"),
        },
        other => ApiError::internal(&other),
    }
}

fn parse_id(id: &str) -> Result<KeyId, ApiError> {
    KeyId::parse(id).map_err(|_| ApiError::NotFound)
}

impl KeyAdmin {
    /// Issues a key: durable first, then usable. Returns the view with the secret, shown once.
    pub fn create(&self, spec: &KeySpec, now_ms: u64) -> Result<KeyView, ApiError> {
        let (key, record) = spec.issue(now_ms).map_err(|e| table_error(TableError::Record(e)))?;
        // The table first: a key it cannot hold (full) is refused before it is written, so
        // the store never holds more keys than the next start can load.
        self.keys.insert(record.clone(), now_ms).map_err(table_error)?;
        if let Err(e) = self.store.put_key(&record) {
            let _ = self.keys.remove(&record.id);
            return Err(ApiError::from_store(&e));
        }
        tracing::info!(key_id = %record.id.as_str(), account = %record.account.as_str(), "issued an API key");
        Ok(KeyView::of(&record, Some(key.expose_secret()), now_ms))
    }

    /// Every key, in id order.
    pub fn list(&self, now_ms: u64) -> Vec<KeyView> {
        let mut records = self.keys.list();
        records.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        records.iter().map(|r| KeyView::of(r, None, now_ms)).collect()
    }

    /// Revokes a key: written first, then refused on every thread at its next request.
    pub fn revoke(&self, id: &str, now_ms: u64) -> Result<KeyView, ApiError> {
        let id = parse_id(id)?;
        let entry = self.keys.get(&id).ok_or(ApiError::NotFound)?;
        let mut revoked = entry.current_record();
        if revoked.status == KeyStatus::Active {
            revoked.status = KeyStatus::Revoked;
            revoked.revoked_at_ms = Some(now_ms);
            self.store.put_key(&revoked).map_err(|e| ApiError::from_store(&e))?;
        }
        let record = self.keys.revoke(&id, now_ms).map_err(table_error)?;
        tracing::info!(key_id = %record.id.as_str(), "revoked an API key");
        Ok(KeyView::of(&record, None, now_ms))
    }

    /// Replaces an active key by a new one carrying its quota usage; the old key is revoked.
    pub fn rotate(&self, id: &str, now_ms: u64) -> Result<KeyView, ApiError> {
        let id = parse_id(id)?;
        // No completion may settle between the table's snapshot of the old key and the store's
        // rotation, or the store and memory would count it on different keys.
        let _gate = self.keys.rotation_gate();
        let rotation = self.keys.rotate(&id, now_ms).map_err(table_error)?;
        let carried = UsageCarry { period_start_ms: rotation.new_usage_period_start_ms, usage: rotation.new_usage };
        if let Err(e) = self.store.put_rotation(&rotation.old_record, &rotation.new_record, &carried) {
            let _ = self.keys.remove(&rotation.new_record.id);
            return Err(ApiError::from_store(&e));
        }
        tracing::info!(old = %id.as_str(), new = %rotation.new_record.id.as_str(), "rotated an API key");
        Ok(KeyView::of(&rotation.new_record, Some(rotation.key.expose_secret()), now_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: &str) -> CreateKeyRequest {
        serde_json::from_str(json).expect("request JSON")
    }

    #[test]
    fn a_key_the_table_cannot_hold_is_refused_before_it_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = crate::store::RocksStore::open(&dir.path().join("db"), &Default::default()).expect("store");
        let admin = KeyAdmin { keys: Arc::new(KeyTable::with_len_max(1)), store: Arc::new(store) };
        let spec = request(r#"{"name":"ci","scopes":["usage:read"]}"#).to_spec(0).expect("valid");
        assert!(admin.create(&spec, 1).is_ok());
        let full = admin.create(&spec, 2).expect_err("the table is full");
        let rendered = full.render();
        assert_eq!((rendered.code.status(), rendered.details.reason), (409, Some("key_table_full")));
        assert_eq!(rendered.details.limit, Some(config::KEY_TABLE_LEN_MAX as u64));
        assert_eq!(admin.store.list_keys(None, 10).expect("keys").len(), 1, "the refused key was not written");
        assert_eq!(admin.keys.len(), 1);
    }

    #[test]
    fn defaults_fill_what_the_request_leaves_out() {
        let spec = request(r#"{"name":"ci","scopes":["usage:read"],"extra":1}"#).to_spec(0).expect("valid");
        assert_eq!(spec.rate_per_second, config::KEY_RATE_PER_SECOND_DEFAULT);
        assert_eq!(spec.burst, config::KEY_BURST_DEFAULT);
        assert_eq!(spec.quota_limit, config::KEY_QUOTA_LIMIT_DEFAULT);
        assert_eq!(spec.quota_period, QuotaPeriod::Month);
        assert!(spec.account.as_str().starts_with("acct_"));
        assert_eq!(spec.expires_at_ms, None);
    }

    #[test]
    fn each_bad_field_is_named() {
        let cases = [
            (r#"{"name":"ci","scopes":["wallet:fly"]}"#, "scopes"),
            (r#"{"name":"ci","scopes":[]}"#, "scopes"),
            (r#"{"name":"ci","scopes":["usage:read"],"period":"week"}"#, "period"),
            (r#"{"name":"ci","scopes":["usage:read"],"expiresAt":"soon"}"#, "expiresAt"),
            (r#"{"name":"ci","scopes":["usage:read"],"expiresAt":"2001-01-01T00:00:00Z"}"#, "expiresAt"),
            (r#"{"name":"ci","scopes":["usage:read"],"account":"not an id!"}"#, "account"),
        ];
        for (json, field) in cases {
            match request(json).to_spec(1_800_000_000_000) {
                Err(ApiError::InvalidRequest { field: f, .. }) => assert_eq!(f, field, "{json}"),
                other => panic!("{json}: {other:?}"),
            }
        }
        // A refused scope list says which scopes there are.
        match request(r#"{"name":"ci","scopes":["wallet:fly"]}"#).to_spec(0) {
            Err(ApiError::InvalidRequest { message, .. }) => assert_eq!(message, SCOPES_EXPECTED),
            other => panic!("{other:?}"),
        }
    }
}
