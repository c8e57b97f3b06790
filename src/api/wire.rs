//! Wire types of the public API's success bodies (contract §4): what the handler serializes.
//!
//! Owns: the response structs (lowerCamelCase via serde), and `splice`, which places a stored
//! payload (an X-Ray or comparison, kept as the exact JSON bytes the engine produced) into a
//! poll body without parsing it again. Called on listener threads; pure.
//!
//! Invariant: domain types never reach the wire directly except the engine payloads, which are
//! the contract's §5 shapes by construction. Timestamps are `rfc3339_ms` strings (`Rfc3339Ms`,
//! written without allocating). The parts of the status document that never change for a given
//! set of scopes (`scopes`, `engineVersions`) are serialized once and reused as raw JSON.

use std::sync::OnceLock;

use serde::ser::Error as _;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use super::error::ErrorObject;
use crate::auth::scope::{Scope, Scopes};
use crate::clock::{rfc3339_ms_bytes, RFC3339_MS_LEN};

/// A timestamp as the contract writes it (`clock::rfc3339_ms`), kept in a fixed array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rfc3339Ms([u8; RFC3339_MS_LEN]);

impl Rfc3339Ms {
    pub fn at(unix_ms: u64) -> Rfc3339Ms {
        Rfc3339Ms(rfc3339_ms_bytes(unix_ms))
    }
}

impl Serialize for Rfc3339Ms {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // `rfc3339_ms_bytes` writes ASCII only, so this never fails.
        serializer.serialize_str(std::str::from_utf8(&self.0).map_err(S::Error::custom)?)
    }
}

/// `POST …/wallet` and `POST …/compare` (202 or 200). `status` and `pollUrl` are repeated
/// beside `data` on purpose (contract §4).
#[derive(Debug, Serialize)]
pub struct AcceptedBody<'a, D: Serialize> {
    pub data: D,
    pub status: &'a str,
    #[serde(rename = "pollUrl")]
    pub poll_url: &'a str,
}

/// `data` of an accepted (or reused) analysis or comparison.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedData<'a> {
    #[serde(flatten)]
    pub subject: WireSubject<'a>,
    pub status: &'a str,
    pub poll_url: &'a str,
    pub created_at: Rfc3339Ms,
    pub deduplicated: bool,
    /// Present exactly when the request named a `callbackUrl`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callback: Option<AcceptedCallback<'a>>,
}

/// `reason` of an answer's `callback` whose URL was not attached: the job already has another
/// webhook, which an earlier request of the account named.
pub const CALLBACK_TAKEN_REASON: &str = "job_has_other_callback";

/// `data.callback` of a POST's answer (and of a batch item) when the request named a
/// `callbackUrl`: the webhook of the job the answer names, as a poll shows it, and whether it
/// is this request's URL — attached to an existing job (`deduplicated`) unless that job already
/// had another, then `attached: false` and `reason`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AcceptedCallback<'a> {
    #[serde(flatten)]
    pub state: CallbackBody<'a>,
    pub attached: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// `data` of `POST …/intelligence/wallets` (200): one item per address sent, in order, and
/// how many were admitted as new work, answered by existing work, or refused.
#[derive(Serialize)]
pub struct BatchData<'a> {
    pub items: Vec<BatchItem<'a>>,
    pub admitted: usize,
    pub deduplicated: usize,
    pub refused: usize,
}

/// One address of a batch: its job (as the single endpoint names it) or its error object.
#[derive(Serialize)]
#[serde(untagged)]
pub enum BatchItem<'a> {
    #[serde(rename_all = "camelCase")]
    Accepted {
        wallet: &'a str,
        analysis_id: &'a str,
        status: &'static str,
        poll_url: String,
        created_at: Rfc3339Ms,
        deduplicated: bool,
        /// The item's answer was kept from an earlier request with the same `Idempotency-Key`.
        replayed: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        callback: Option<AcceptedCallback<'a>>,
    },
    Refused {
        wallet: &'a str,
        error: ErrorObject<'a>,
    },
}

/// `data.callback` of a job whose request named a `callbackUrl`: where its document goes and
/// how the delivery went so far.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallbackBody<'a> {
    pub url: &'a str,
    /// `PENDING`, `DELIVERED` or `FAILED`.
    pub status: &'static str,
    pub attempts: u32,
    pub last_error: Option<&'a str>,
}

/// `data.error` of a FAILED job.
#[derive(Debug, Serialize)]
pub struct JobErrorBody<'a> {
    pub code: &'a str,
    pub message: &'a str,
}

/// What a job is about, as the wire names it: an analysis or a comparison.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum WireSubject<'a> {
    #[serde(rename_all = "camelCase")]
    Analysis { analysis_id: &'a str, wallet: &'a str },
    #[serde(rename_all = "camelCase")]
    Comparison { pair_id: &'a str, wallet_a: &'a str, wallet_b: &'a str },
}

/// `GET …/analysis/:id` and `GET …/comparison/:pairId`, without the payload (see `splice`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PollData<'a> {
    #[serde(flatten)]
    pub subject: WireSubject<'a>,
    pub status: &'a str,
    pub created_at: Rfc3339Ms,
    pub started_at: Option<Rfc3339Ms>,
    pub completed_at: Option<Rfc3339Ms>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<JobErrorBody<'a>>,
}

#[derive(Debug, Serialize)]
pub struct DataBody<D: Serialize> {
    pub data: D,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyInfo<'a> {
    pub id: &'a str,
    pub name: &'a str,
    /// The account the key belongs to (`acct_…`): what the admin API's account routes and
    /// `xray accounts` name. An addition to the contract's document.
    pub account: &'a str,
    pub prefix: &'a str,
    pub status: &'a str,
    pub created_at: Rfc3339Ms,
    pub expires_at: Option<Rfc3339Ms>,
}

/// One entry of the status document's `scopes` (see `scope_grants`).
#[derive(Debug, Serialize)]
pub struct ScopeGrant {
    pub scope: &'static str,
    pub granted: bool,
    pub endpoints: &'static [&'static str],
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitInfo {
    pub rate_per_second: u32,
    pub burst: u32,
    pub remaining: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limited_requests: Option<u64>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusQuota {
    pub limit: u64,
    pub used: u64,
    pub remaining: u64,
    pub period: &'static str,
    pub resets_at: Rfc3339Ms,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceInfo {
    pub status: &'static str,
    pub engine_versions: &'static RawValue,
}

/// `GET /v1/developer/status`
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusData<'a> {
    pub key: KeyInfo<'a>,
    pub scopes: &'static RawValue,
    pub rate_limit: RateLimitInfo,
    pub quota: StatusQuota,
    pub service: ServiceInfo,
}

#[derive(Debug, Serialize)]
pub struct UsagePeriod {
    pub kind: &'static str,
    pub start: Rfc3339Ms,
    pub end: Rfc3339Ms,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageQuota {
    pub limit: u64,
    pub used: u64,
    pub reserved: u64,
    pub remaining: u64,
    pub resets_at: Rfc3339Ms,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ByOperationBody {
    pub wallet_analysis: u64,
    pub comparison: u64,
    /// Pre-sign scans (an extension of the contract's `byOperation`).
    pub transaction_scan: u64,
}

/// `GET /v1/developer/usage`
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageData<'a> {
    pub key_id: &'a str,
    pub period: UsagePeriod,
    pub quota: UsageQuota,
    pub by_operation: ByOperationBody,
    pub refunded: u64,
    pub rate_limit: RateLimitInfo,
}

/// The status document's `scopes` for a key holding `scopes`: every known scope, whether it is
/// granted and the endpoints it opens. One document per possible set, serialized once.
pub fn scope_grants(scopes: Scopes) -> &'static RawValue {
    static DOCUMENTS: OnceLock<Vec<(Scopes, Box<RawValue>)>> = OnceLock::new();
    let documents = DOCUMENTS.get_or_init(|| {
        let sets = Scope::ALL
            .iter()
            .fold(vec![Scopes::NONE], |sets, scope| sets.iter().flat_map(|set| [*set, set.with(*scope)]).collect());
        sets.into_iter()
            .map(|set| {
                let grants: Vec<ScopeGrant> = set
                    .grants()
                    .map(|(scope, granted)| ScopeGrant { scope: scope.as_str(), granted, endpoints: scope.endpoints() })
                    .collect();
                (set, raw_json(&grants))
            })
            .collect()
    });
    documents.iter().find(|(set, _)| *set == scopes).map_or(RawValue::NULL, |(_, raw)| raw)
}

/// Every engine's version (`service.engineVersions`), serialized once.
pub fn engine_versions() -> &'static RawValue {
    static DOCUMENT: OnceLock<Box<RawValue>> = OnceLock::new();
    DOCUMENT.get_or_init(|| raw_json(&crate::engine::all_versions()))
}

/// `value` as raw JSON. The values given here (strings, bools, maps of strings) always
/// serialize; `null` stands in should that ever change, and the tests would show it.
fn raw_json<T: Serialize>(value: &T) -> Box<RawValue> {
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

/// `{"data":{…}}` with `"<field>": <payload>` added as the last member of `data`. `body` must
/// be a serialized `DataBody` of a struct (it ends with `}}`); the payload is inserted verbatim.
pub fn splice(body: Vec<u8>, field: &str, payload: &[u8]) -> Vec<u8> {
    crate::engine::report::with_last_member(body, 2, field, payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_adds_the_payload_as_the_last_data_member() {
        let poll = PollData {
            subject: WireSubject::Analysis { analysis_id: "an_1", wallet: "W" },
            status: "READY",
            created_at: Rfc3339Ms::at(0),
            started_at: Some(Rfc3339Ms::at(1_000)),
            completed_at: None,
            error: None,
        };
        let body = serde_json::to_vec(&DataBody { data: poll }).unwrap();
        let spliced = splice(body, "xray", br#"{"score":{"value":1}}"#);
        let value: serde_json::Value = serde_json::from_slice(&spliced).unwrap();
        assert_eq!(value["data"]["analysisId"], "an_1");
        assert_eq!(value["data"]["completedAt"], serde_json::Value::Null);
        assert_eq!(value["data"]["xray"]["score"]["value"], 1);
        assert!(value["data"].get("error").is_none());
        assert_eq!(value["data"]["createdAt"], "1970-01-01T00:00:00.000Z");
        assert_eq!(value["data"]["startedAt"], "1970-01-01T00:00:01.000Z");
    }

    #[test]
    fn cached_scope_grants_are_every_scope_with_its_grant() {
        let sets = [Scopes::NONE, Scopes::ALL, Scopes::NONE.with(Scope::UsageRead).with(Scope::WalletCompare)];
        for set in sets {
            let value: serde_json::Value = serde_json::from_str(scope_grants(set).get()).unwrap();
            let grants = value.as_array().unwrap();
            assert_eq!(grants.len(), Scope::ALL.len());
            for (grant, scope) in grants.iter().zip(Scope::ALL) {
                assert_eq!(grant["scope"], scope.as_str());
                assert_eq!(grant["granted"], set.contains(scope));
                assert_eq!(grant["endpoints"].as_array().unwrap().len(), scope.endpoints().len());
            }
        }
    }

    #[test]
    fn cached_engine_versions_are_the_engines() {
        let value: serde_json::Value = serde_json::from_str(engine_versions().get()).unwrap();
        let expected = serde_json::to_value(crate::engine::all_versions()).unwrap();
        assert_eq!(value, expected);
    }
}
