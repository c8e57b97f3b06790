//! Wire types of the public API's success bodies (contract §4): what the handler serializes.
//!
//! Owns: the response structs (lowerCamelCase via serde), and `splice`, which places a stored
//! payload (an X-Ray or comparison, kept as the exact JSON bytes the engine produced) into a
//! poll body without parsing it again. Called on listener threads; pure.
//!
//! Invariant: domain types never reach the wire directly except the engine payloads, which are
//! the contract's §5 shapes by construction. Timestamps are `rfc3339_ms` strings.

use serde::Serialize;

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
    pub created_at: String,
    pub deduplicated: bool,
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
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
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
    pub prefix: &'a str,
    pub status: &'a str,
    pub created_at: String,
    pub expires_at: Option<String>,
}

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
    pub resets_at: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceInfo {
    pub status: &'static str,
    pub engine_versions: &'static std::collections::BTreeMap<&'static str, &'static str>,
}

/// `GET /v1/developer/status`
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusData<'a> {
    pub key: KeyInfo<'a>,
    pub scopes: Vec<ScopeGrant>,
    pub rate_limit: RateLimitInfo,
    pub quota: StatusQuota,
    pub service: ServiceInfo,
}

#[derive(Debug, Serialize)]
pub struct UsagePeriod {
    pub kind: &'static str,
    pub start: String,
    pub end: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageQuota {
    pub limit: u64,
    pub used: u64,
    pub reserved: u64,
    pub remaining: u64,
    pub resets_at: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ByOperationBody {
    pub wallet_analysis: u64,
    pub comparison: u64,
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

/// `{"data":{…}}` with `"<field>": <payload>` added as the last member of `data`. `body` must
/// be a serialized `DataBody` of a struct (it ends with `}}`); the payload is inserted verbatim.
pub fn splice(mut body: Vec<u8>, field: &str, payload: &[u8]) -> Vec<u8> {
    debug_assert!(body.ends_with(b"}}"));
    body.truncate(body.len().saturating_sub(2));
    body.reserve(field.len() + payload.len() + 6);
    body.extend_from_slice(b",\"");
    body.extend_from_slice(field.as_bytes());
    body.extend_from_slice(b"\":");
    body.extend_from_slice(payload);
    body.extend_from_slice(b"}}");
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splice_adds_the_payload_as_the_last_data_member() {
        let poll = PollData {
            subject: WireSubject::Analysis { analysis_id: "an_1", wallet: "W" },
            status: "READY",
            created_at: "t0".into(),
            started_at: Some("t1".into()),
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
    }
}
