//! The stored form of an API key, and how new keys are issued.
//!
//! Owns: `KeyRecord` (what the store persists for a key: never the key itself, only its
//! digest), `KeyStatus` (stored: active or revoked), `KeyState` (shown: active, revoked or
//! expired, derived from the clock), `KeySpec` (an operator's request for a key) and its
//! validation. Called from the admin path (issue, list, revoke, rotate) and, through the key
//! table, from listener threads (state).
//!
//! Invariant: a `KeyRecord` that passed `validate` has limits within `RATE_PER_SECOND_MAX`,
//! `BURST_MAX`, `QUOTA_LIMIT_MAX`, a name within `KEY_NAME_LEN_MAX` characters without control
//! characters, and a display prefix that matches the key format.
//! Invariant: `expired` is never stored; it is derived from `expires_at_ms` and the clock, so a
//! key expires on time even if nothing writes to it.
//! Deliberately absent: the serialization format (the store chooses; records are serde).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::key::{AccountId, ApiKey, KeyDigest, KeyId, RandomUnavailable, KEY_DISPLAY_CHARS, KEY_PREFIX};
use super::scope::Scopes;
use crate::config::{KEY_NAME_LEN_MAX, QUOTA_LIMIT_MAX};
use crate::limits::quota::QuotaPeriod;
use crate::limits::rate::{RateLimit, RateLimitError};

/// The stored status of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyStatus {
    Active,
    Revoked,
}

/// The status a key shows at a given time (contract §2 `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyState {
    Active,
    Revoked,
    Expired,
}

impl KeyState {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyState::Active => "active",
            KeyState::Revoked => "revoked",
            KeyState::Expired => "expired",
        }
    }
}

/// Everything the server keeps about a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyRecord {
    pub id: KeyId,
    pub account: AccountId,
    pub name: String,
    /// SHA-256 of the whole key text; the key itself is never stored.
    pub digest: KeyDigest,
    /// `svc_live_` + the first 4 base58 characters, for display.
    pub prefix: String,
    pub scopes: Scopes,
    pub status: KeyStatus,
    pub created_at_ms: u64,
    pub expires_at_ms: Option<u64>,
    pub revoked_at_ms: Option<u64>,
    /// Set on a key revoked by rotation: the id of the key that replaced it.
    pub replaced_by: Option<KeyId>,
    pub rate_per_second: u32,
    pub burst: u32,
    pub quota_limit: u64,
    pub quota_period: QuotaPeriod,
}

/// Why a record or spec was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RecordError {
    #[error("key name must be 1..={KEY_NAME_LEN_MAX} characters without control characters")]
    BadName,
    #[error(transparent)]
    Rate(#[from] RateLimitError),
    #[error("quota limit must be at most {QUOTA_LIMIT_MAX}")]
    QuotaTooLarge,
    #[error("expiry must be after creation")]
    ExpiresBeforeCreation,
    #[error("display prefix does not have the key format")]
    BadPrefix,
    #[error(transparent)]
    Random(#[from] RandomUnavailable),
}

impl KeyRecord {
    /// The status shown at `now_ms`: revoked wins over expired; a key expires at `expires_at_ms`.
    pub fn state_at(&self, now_ms: u64) -> KeyState {
        match (self.status, self.expires_at_ms) {
            (KeyStatus::Revoked, _) => KeyState::Revoked,
            (KeyStatus::Active, Some(expires_at_ms)) if now_ms >= expires_at_ms => KeyState::Expired,
            (KeyStatus::Active, _) => KeyState::Active,
        }
    }

    pub fn rate_limit(&self) -> Result<RateLimit, RateLimitError> {
        RateLimit::new(self.rate_per_second, self.burst)
    }

    /// Checks every bound a record must keep; run on every record loaded or created.
    pub fn validate(&self) -> Result<(), RecordError> {
        validate_name(&self.name)?;
        self.rate_limit()?;
        if self.quota_limit > QUOTA_LIMIT_MAX {
            return Err(RecordError::QuotaTooLarge);
        }
        if self.expires_at_ms.is_some_and(|e| e <= self.created_at_ms) {
            return Err(RecordError::ExpiresBeforeCreation);
        }
        let shown = self.prefix.strip_prefix(KEY_PREFIX).ok_or(RecordError::BadPrefix)?;
        if shown.len() != KEY_DISPLAY_CHARS || !shown.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Err(RecordError::BadPrefix);
        }
        Ok(())
    }
}

fn validate_name(name: &str) -> Result<(), RecordError> {
    let chars = name.chars().count();
    if chars == 0 || chars > KEY_NAME_LEN_MAX || name.chars().any(char::is_control) {
        return Err(RecordError::BadName);
    }
    Ok(())
}

/// An operator's request for a new key (admin API / command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpec {
    pub account: AccountId,
    pub name: String,
    pub scopes: Scopes,
    pub expires_at_ms: Option<u64>,
    pub rate_per_second: u32,
    pub burst: u32,
    pub quota_limit: u64,
    pub quota_period: QuotaPeriod,
}

impl KeySpec {
    /// A new key and its record. The key is returned once and never stored.
    pub fn issue(&self, now_ms: u64) -> Result<(ApiKey, KeyRecord), RecordError> {
        let key = ApiKey::generate()?;
        let record = KeyRecord {
            id: KeyId::generate()?,
            account: self.account.clone(),
            name: self.name.clone(),
            digest: key.digest(),
            prefix: key.display_prefix(),
            scopes: self.scopes,
            status: KeyStatus::Active,
            created_at_ms: now_ms,
            expires_at_ms: self.expires_at_ms,
            revoked_at_ms: None,
            replaced_by: None,
            rate_per_second: self.rate_per_second,
            burst: self.burst,
            quota_limit: self.quota_limit,
            quota_period: self.quota_period,
        };
        record.validate()?;
        Ok((key, record))
    }

    /// The spec of a key's successor at rotation: same account, name, scopes, limits and
    /// expiry.
    pub fn successor_of(record: &KeyRecord) -> Self {
        Self {
            account: record.account.clone(),
            name: record.name.clone(),
            scopes: record.scopes,
            expires_at_ms: record.expires_at_ms,
            rate_per_second: record.rate_per_second,
            burst: record.burst,
            quota_limit: record.quota_limit,
            quota_period: record.quota_period,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::auth::key;

    pub(crate) fn spec() -> KeySpec {
        KeySpec {
            account: AccountId::parse("acct_test").expect("valid"),
            name: "ci".into(),
            scopes: Scopes::parse_list("wallet:analyze,analysis:read,usage:read").expect("valid"),
            expires_at_ms: None,
            rate_per_second: 50,
            burst: 100,
            quota_limit: 10_000,
            quota_period: QuotaPeriod::Month,
        }
    }

    #[test]
    fn issue_stores_only_the_digest() {
        let (key, record) = spec().issue(1_000).expect("issued");
        assert_eq!(record.digest, key::digest(key.expose_secret()));
        assert_eq!(record.prefix, key.display_prefix());
        assert_eq!(record.status, KeyStatus::Active);
        let json = serde_json::to_string(&record).expect("serializes");
        assert!(!json.contains(&key.expose_secret()[KEY_PREFIX.len()..]), "{json}");
        let back: KeyRecord = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, record);
    }

    #[test]
    fn state_is_derived_from_the_clock() {
        let (_, mut record) = KeySpec { expires_at_ms: Some(5_000), ..spec() }.issue(1_000).expect("issued");
        let cases = [(4_999, KeyState::Active), (5_000, KeyState::Expired), (9_000, KeyState::Expired)];
        for (now, want) in cases {
            assert_eq!(record.state_at(now), want, "at {now}");
        }
        record.status = KeyStatus::Revoked;
        assert_eq!(record.state_at(9_000), KeyState::Revoked);
        assert_eq!(record.state_at(0).as_str(), "revoked");
    }

    #[test]
    fn spec_validation() {
        let cases: [(KeySpec, Option<RecordError>); 9] = [
            (spec(), None),
            (KeySpec { name: String::new(), ..spec() }, Some(RecordError::BadName)),
            (KeySpec { name: "a".repeat(KEY_NAME_LEN_MAX + 1), ..spec() }, Some(RecordError::BadName)),
            (KeySpec { name: "é".repeat(KEY_NAME_LEN_MAX), ..spec() }, None),
            (KeySpec { name: "a\nb".into(), ..spec() }, Some(RecordError::BadName)),
            (KeySpec { rate_per_second: 0, ..spec() }, Some(RecordError::Rate(RateLimitError::RateOutOfRange))),
            (KeySpec { burst: 0, ..spec() }, Some(RecordError::Rate(RateLimitError::BurstOutOfRange))),
            (KeySpec { quota_limit: QUOTA_LIMIT_MAX + 1, ..spec() }, Some(RecordError::QuotaTooLarge)),
            (KeySpec { expires_at_ms: Some(1_000), ..spec() }, Some(RecordError::ExpiresBeforeCreation)),
        ];
        for (spec, want) in cases {
            assert_eq!(spec.issue(1_000).err(), want, "{spec:?}");
        }
    }

    #[test]
    fn stored_prefix_is_checked() {
        let (_, record) = spec().issue(0).expect("issued");
        for prefix in ["svc_live_", "svc_live_abcde", "svc_test_abcd", "svc_live_ab-d"] {
            let bad = KeyRecord { prefix: prefix.into(), ..record.clone() };
            assert_eq!(bad.validate(), Err(RecordError::BadPrefix), "{prefix}");
        }
    }

    #[test]
    fn successor_keeps_everything_but_the_secret() {
        let (_, record) = spec().issue(0).expect("issued");
        assert_eq!(KeySpec::successor_of(&record), spec());
    }
}
