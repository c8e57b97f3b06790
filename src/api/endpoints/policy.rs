//! The account's policy (issue #31, an extension of the contract): `GET` and `PUT
//! /v1/developer/policy`, and the policy document both answer (the admin API answers it too).
//!
//! Owns: the wire form of a policy (`data.policy`: weights as decimals, the sweep thresholds in
//! force — each member the engine's default where the account set none —, the default
//! policy's `updatedAt` null) and the mapping of `policy::PolicyError` to the contract's codes.
//! Runs on listener threads: `GET` reads memory only; `PUT` is one read and one compare-and-set
//! write of the store, made off the listener (`store_work`: the store-work pool over RocksDB,
//! the etcd runtime's blocking pool on a cluster), then one entry of the in-memory table
//! replaced — O(1) in the number of accounts.
//!
//! Invariant: a key reads and writes its own account's policy only (the account comes from the
//! key, never from the request).
//! Invariant: `PUT` with `version` lands only over that version (else `409 CONFLICT` naming the
//! current one); without it, it replaces whatever is there.
//! Deliberately absent: partial updates (`PATCH`): the policy is small and is written whole, so
//! what a client sent is exactly what is in force.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Serialize;

use super::{json_bytes, ApiError, Endpoints};
use crate::api::json::{parse_body, PolicyRequest};
use crate::clock::{now_unix_ms, rfc3339_ms};
use crate::engine::policy::{default_weights_hundredths, DEFAULT_POLICY_ID};
use crate::engine::scoring::DIMENSIONS;
use crate::engine::sweep::SweepThresholds;
use crate::http::ApiResponse;
use crate::policy::{PolicyError, PolicyRecord};

/// `data.policy`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyBody {
    id: String,
    version: u64,
    severity_overrides: BTreeMap<String, String>,
    weights: BTreeMap<String, f64>,
    sweep_thresholds: SweepThresholdsBody,
    allow_list: Vec<String>,
    deny_list: Vec<String>,
    updated_at: Option<String>,
}

/// `data.policy.sweepThresholds`: where sweeps are drawn for this account, every member.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SweepThresholdsBody {
    sol_share_percent: u64,
    token_share_percent: u64,
    dust_lamports: u64,
    dust_token_units: u64,
}

impl From<SweepThresholds> for SweepThresholdsBody {
    fn from(t: SweepThresholds) -> Self {
        SweepThresholdsBody {
            sol_share_percent: t.sol_share_percent,
            token_share_percent: t.token_share_percent,
            dust_lamports: t.gain_lamports_max,
            dust_token_units: t.gain_token_units_max,
        }
    }
}

#[derive(Serialize)]
struct PolicyData {
    policy: PolicyBody,
}

#[derive(Serialize)]
struct DataBody {
    data: PolicyData,
}

/// The wire form of an account's policy record (`None`: the default policy).
pub fn policy_body(record: Option<PolicyRecord>) -> PolicyBody {
    let Some(r) = record else {
        let weights =
            DIMENSIONS.iter().zip(default_weights_hundredths()).map(|((d, _), h)| (d.to_string(), decimal(h)));
        return PolicyBody {
            id: DEFAULT_POLICY_ID.to_owned(),
            version: 0,
            severity_overrides: BTreeMap::new(),
            weights: weights.collect(),
            sweep_thresholds: SweepThresholds::DEFAULT.into(),
            allow_list: Vec::new(),
            deny_list: Vec::new(),
            updated_at: None,
        };
    };
    PolicyBody {
        weights: r.weights_hundredths.iter().map(|(d, h)| (d.clone(), decimal(*h))).collect(),
        updated_at: Some(rfc3339_ms(r.updated_at_ms)),
        sweep_thresholds: r.sweep_thresholds.thresholds().into(),
        id: r.id,
        version: r.version,
        severity_overrides: r.severity_overrides,
        allow_list: r.allow_list,
        deny_list: r.deny_list,
    }
}

/// Hundredths as the decimal a client wrote (30 → 0.3, exactly the literal).
fn decimal(hundredths: u16) -> f64 {
    f64::from(hundredths) / 100.0
}

/// `{"data":{"policy":…}}` with `status`.
pub fn policy_answer(status: u16, record: Option<PolicyRecord>) -> Result<ApiResponse, ApiError> {
    let body = json_bytes(&DataBody { data: PolicyData { policy: policy_body(record) } })?;
    Ok(ApiResponse::json(status, Bytes::from(body)))
}

pub fn policy_error(e: PolicyError) -> ApiError {
    match e {
        PolicyError::Invalid(why) => ApiError::InvalidField { field: why.field, message: why.message },
        PolicyError::VersionMismatch { current } => ApiError::Conflict {
            message: format!("the policy is at version {current}: read it again and write it with that version"),
            limit: None,
            reason: None,
        },
        PolicyError::Store(e) => ApiError::from_store(&e),
        PolicyError::Random(e) => ApiError::internal(&e),
    }
}

impl Endpoints<'_> {
    /// `GET /v1/developer/policy`
    pub async fn get_policy(&self) -> Result<ApiResponse, ApiError> {
        policy_answer(200, self.app.admission.policies().record(self.caller.key.account().as_str()))
    }

    /// `PUT /v1/developer/policy`
    pub async fn put_policy(&self) -> Result<ApiResponse, ApiError> {
        let PolicyRequest(draft) = parse_body(self.request)?;
        let policies = self.app.admission.policies().clone();
        let account = self.caller.key.account().as_str().to_owned();
        let by = self.caller.key.id().as_str().to_owned();
        let record = self
            .store_work(move |store| policies.put(store, &account, draft, &by, now_unix_ms()).map_err(policy_error))
            .await?;
        policy_answer(200, Some(record))
    }
}
