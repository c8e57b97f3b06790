//! Request bodies: media type, size and JSON shape (contract §3 step 5), parsed with simd-json.
//!
//! Owns: `check_content_type` (415), `parse_body` (415 → 413 → 400, in the contract's order),
//! the typed requests `WalletRequest`, `CompareRequest`, `BatchRequest` and `ScanRequest` (each with its size
//! bound), and the per-thread parse scratch.
//! Called on listener threads after authentication, scope and rate limit have passed.
//!
//! Each thread keeps one `Scratch` (thread-local): a copy of the body (simd-json parses in
//! place), simd-json's `Buffers` and a reused tape, so a parse allocates only the strings it
//! returns. The scratch never grows past `REQUEST_BODY_BYTES_MAX` plus simd-json's padding
//! because bodies are size-checked (each route's own bound) before they reach it.
//!
//! Invariant: a body is accepted only if it is a JSON object whose required fields are strings
//! and whose optional fields have their type; the error's `details.field` names the first
//! offending field (`body` when the document itself is not JSON or not an object). Unknown
//! fields are ignored (a policy's excepted: `PolicyRequest`); `null` for an optional field means absent. `CompareRequest::addresses`
//! parses both addresses and applies the pair rule (`eligibility::check_pair`), so the API and
//! its stand-in refuse an equal pair the same way. Deliberately absent: classification (the
//! caller's, with `eligibility`).

use std::cell::RefCell;

use simd_json::prelude::*;
use simd_json::tape::{Object, Tape};

use super::ApiError;
use crate::config::{
    BATCH_BODY_BYTES_MAX, BATCH_WALLETS_MAX, BODY_BYTES_MAX, FEEDBACK_SCAN_BODY_BYTES_MAX, POLICY_BODY_BYTES_MAX,
    REQUEST_BODY_BYTES_MAX, SCAN_BODY_BYTES_MAX,
};
use crate::eligibility::{check_pair, SameWallet};
use crate::guard::GuardOptions;
use crate::http::{ApiRequest, Body};
use crate::ledger::read::SequenceMode;
use crate::policy::{PolicyDraft, SweepOverrides};
use crate::pubkey::Pubkey;

/// A typed request body read from a JSON object.
pub trait JsonRequest: Sized {
    /// The largest body of the route (413 past it).
    const BODY_BYTES_MAX: usize = BODY_BYTES_MAX;

    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError>;
}

/// `POST /v1/developer/intelligence/wallet`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalletRequest {
    pub wallet: String,
    pub refresh: bool,
    /// Where to POST the finished job's document (checked by `webhooks::target` later).
    pub callback_url: Option<String>,
}

/// `POST /v1/developer/intelligence/compare`
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareRequest {
    pub wallet_a: String,
    pub wallet_b: String,
    pub refresh: bool,
    pub callback_url: Option<String>,
}

impl CompareRequest {
    /// Both addresses parsed (400 `INVALID_ADDRESS` naming the field) and different (400
    /// `INVALID_REQUEST` on `walletB`): steps 6 of a comparison, before either is classified.
    pub fn addresses(&self) -> Result<(Pubkey, Pubkey), ApiError> {
        let parse =
            |field, text: &str| Pubkey::parse(text).map_err(|reason| ApiError::InvalidAddress { field, reason });
        let (a, b) = (parse("walletA", &self.wallet_a)?, parse("walletB", &self.wallet_b)?);
        check_pair(&a, &b).map_err(|_| ApiError::InvalidRequest { field: "walletB", message: SameWallet::MESSAGE })?;
        Ok((a, b))
    }
}

/// `POST /v1/developer/intelligence/wallets`: 1 to `BATCH_WALLETS_MAX` strings, each checked
/// as an address on its own later (an item that is no address is that item's error, not the
/// request's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchRequest {
    pub wallets: Vec<String>,
    pub refresh: bool,
    /// The webhook of every job the batch admits.
    pub callback_url: Option<String>,
}

const WALLETS_SHAPE: &str = "wallets is required and must be an array of 1 to 100 strings";
const _: () = assert!(BATCH_WALLETS_MAX == 100, "WALLETS_SHAPE names the limit");

impl JsonRequest for BatchRequest {
    const BODY_BYTES_MAX: usize = BATCH_BODY_BYTES_MAX;

    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        let shape = ApiError::InvalidRequest { field: "wallets", message: WALLETS_SHAPE };
        let array = object.get("wallets").and_then(|v| v.as_array()).ok_or(shape.clone())?;
        if !(1..=BATCH_WALLETS_MAX).contains(&array.len()) {
            return Err(shape);
        }
        let wallets = array.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>();
        Ok(BatchRequest {
            wallets: wallets.ok_or(shape)?,
            refresh: optional_bool(object, "refresh")?,
            callback_url: optional_str(object, "callbackUrl", "callbackUrl must be a string")?,
        })
    }
}

/// `POST /v1/developer/monitors`: wallets to watch, where events go, what makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorRequest {
    pub wallets: Vec<String>,
    /// Absent or `null`: a poll-only monitor.
    pub callback_url: Option<String>,
    pub min_severity: Option<String>,
    pub score_drop: Option<u8>,
    pub reanalyses_per_day: Option<u32>,
    pub dust_lamports: Option<u64>,
}

/// `PATCH /v1/developer/monitors/:id`: what to change (absent: unchanged; `scoreDrop: null`
/// clears the score threshold, `callbackUrl: null` makes the monitor poll-only,
/// `reanalysesPerDay: null` goes back to the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorPatchRequest {
    pub add_wallets: Vec<String>,
    pub remove_wallets: Vec<String>,
    pub callback_url: Option<Option<String>>,
    pub min_severity: Option<String>,
    pub score_drop: Option<Option<u8>>,
    pub reanalyses_per_day: Option<Option<u32>>,
    pub dust_lamports: Option<Option<u64>>,
}

const CALLBACK_URL_SHAPE: &str = "callbackUrl must be a string, or null";
const MONITOR_WALLETS_SHAPE: &str = "wallets is required and must be an array of 1 to 100 strings";
const MONITOR_WALLET_LIST_SHAPE: &str = "must be an array of at most 100 strings";
const SCORE_DROP_SHAPE: &str = "scoreDrop must be a whole number of points from 1 to 100, or null";
const REANALYSES_PER_DAY_SHAPE: &str = "reanalysesPerDay must be a whole number from 1 to 100000, or null";
const _: () = assert!(crate::config::MONITOR_REANALYSES_PER_DAY_MAX == 100_000, "the shape names the limit");
const DUST_LAMPORTS_SHAPE: &str = "dustLamports must be a whole number of lamports from 0 to 1000000000, or null";
const _: () = assert!(crate::config::MONITOR_DUST_LAMPORTS_MAX == 1_000_000_000, "the shape names the limit");
const _: () = assert!(crate::config::MONITOR_WALLETS_MAX == 100, "the shapes name the limit");

/// An optional array of at most `MONITOR_WALLETS_MAX` strings (absent or `null`: empty).
fn optional_strings(
    object: &Object<'_, '_>,
    field: &'static str,
    message: &'static str,
) -> Result<Vec<String>, ApiError> {
    let Some(value) = object.get(field).filter(|v| !v.is_null()) else { return Ok(Vec::new()) };
    let shape = || ApiError::InvalidRequest { field, message };
    let array = value.as_array().ok_or_else(shape)?;
    if array.len() > crate::config::MONITOR_WALLETS_MAX {
        return Err(shape());
    }
    array.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>().ok_or_else(shape)
}

/// `scoreDrop`: absent → `None`; `null` → `Some(None)`; 1–100 → `Some(Some(n))`.
fn score_drop(object: &Object<'_, '_>) -> Result<Option<Option<u8>>, ApiError> {
    let points = optional_whole(object, "scoreDrop", (1, 100), SCORE_DROP_SHAPE)?;
    Ok(points.map(|p| p.map(|p| u8::try_from(p).unwrap_or(u8::MAX))))
}

/// A JSON number that is a whole number from 0 to `max` (`34.0` is the whole number 34, as
/// JSON Schema's `integer` says: JSON has one number type).
fn whole_number(value: &simd_json::tape::Value<'_, '_>, max: u64) -> Option<u64> {
    // Compared as integers: `max as f64` rounds `u64::MAX` up to 2^64, which would let 2^64
    // through (saturated to `u64::MAX` by the cast).
    let whole =
        value.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && (*f as u128) <= u128::from(max)).map(|f| f as u64);
    value.as_u64().or(whole).filter(|n| *n <= max)
}

/// A whole-number member from `min` to `max`: absent → `None`; `null` → `Some(None)`; in range
/// → `Some(Some(n))`; anything else → 400 naming it with `message`.
fn optional_whole(
    object: &Object<'_, '_>,
    field: &'static str,
    (min, max): (u64, u64),
    message: &'static str,
) -> Result<Option<Option<u64>>, ApiError> {
    let Some(value) = object.get(field) else { return Ok(None) };
    if value.is_null() {
        return Ok(Some(None));
    }
    match whole_number(&value, max) {
        Some(n) if n >= min => Ok(Some(Some(n))),
        _ => Err(ApiError::InvalidRequest { field, message }),
    }
}

/// `reanalysesPerDay`: 1 to `MONITOR_REANALYSES_PER_DAY_MAX` (see `optional_whole`).
fn reanalyses_per_day(object: &Object<'_, '_>) -> Result<Option<Option<u32>>, ApiError> {
    let range = (1, u64::from(crate::config::MONITOR_REANALYSES_PER_DAY_MAX));
    let n = optional_whole(object, "reanalysesPerDay", range, REANALYSES_PER_DAY_SHAPE)?;
    Ok(n.map(|n| n.map(|n| u32::try_from(n).unwrap_or(u32::MAX))))
}

/// `dustLamports`: 0 to `MONITOR_DUST_LAMPORTS_MAX` (see `optional_whole`).
fn dust_lamports(object: &Object<'_, '_>) -> Result<Option<Option<u64>>, ApiError> {
    optional_whole(object, "dustLamports", (0, crate::config::MONITOR_DUST_LAMPORTS_MAX), DUST_LAMPORTS_SHAPE)
}

impl JsonRequest for MonitorRequest {
    const BODY_BYTES_MAX: usize = BATCH_BODY_BYTES_MAX;

    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        let wallets = optional_strings(object, "wallets", MONITOR_WALLETS_SHAPE)?;
        if wallets.is_empty() {
            return Err(ApiError::InvalidRequest { field: "wallets", message: MONITOR_WALLETS_SHAPE });
        }
        Ok(MonitorRequest {
            wallets,
            callback_url: optional_str(object, "callbackUrl", CALLBACK_URL_SHAPE)?,
            min_severity: optional_str(object, "minSeverity", "minSeverity must be a string")?,
            score_drop: score_drop(object)?.flatten(),
            reanalyses_per_day: reanalyses_per_day(object)?.flatten(),
            dust_lamports: dust_lamports(object)?.flatten(),
        })
    }
}

impl JsonRequest for MonitorPatchRequest {
    const BODY_BYTES_MAX: usize = BATCH_BODY_BYTES_MAX;

    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        Ok(MonitorPatchRequest {
            add_wallets: optional_strings(object, "addWallets", MONITOR_WALLET_LIST_SHAPE)?,
            remove_wallets: optional_strings(object, "removeWallets", MONITOR_WALLET_LIST_SHAPE)?,
            callback_url: nullable_str(object, "callbackUrl", CALLBACK_URL_SHAPE)?,
            min_severity: optional_str(object, "minSeverity", "minSeverity must be a string")?,
            score_drop: score_drop(object)?,
            reanalyses_per_day: reanalyses_per_day(object)?,
            dust_lamports: dust_lamports(object)?,
        })
    }
}

/// `PUT /v1/developer/policy`: the account's whole policy (`policy::PolicyDraft`). Unlike the
/// other bodies, an unknown member is refused: a misspelt `denyList` would otherwise leave a
/// policy that silently does less than its author meant.
pub struct PolicyRequest(pub PolicyDraft);

const POLICY_MEMBERS: [&str; 6] =
    ["version", "severityOverrides", "weights", "sweepThresholds", "allowList", "denyList"];
const POLICY_LIST_SHAPE: &str = "must be an array of at most 500 address strings";
const _: () = assert!(crate::config::POLICY_LIST_LEN_MAX == 500, "the shape names the limit");

impl JsonRequest for PolicyRequest {
    const BODY_BYTES_MAX: usize = POLICY_BODY_BYTES_MAX;

    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        if let Some(unknown) = object.keys().find(|k| !POLICY_MEMBERS.contains(k)) {
            let message = format!("unknown member {unknown:?} (a policy has {})", POLICY_MEMBERS.join(", "));
            return Err(ApiError::InvalidField { field: "body", message });
        }
        let version = match object.get("version").filter(|v| !v.is_null()) {
            None => None,
            Some(v) => Some(v.as_u64().ok_or(ApiError::InvalidRequest {
                field: "version",
                message: "version must be the whole number of the version read (0: none yet)",
            })?),
        };
        let overrides = string_map(
            object,
            "severityOverrides",
            |v| v.as_str().map(str::to_owned),
            "values must be ignore, info, low, medium, high or critical",
        )?;
        let weights = match object.get("weights").filter(|v| !v.is_null()) {
            None => None,
            Some(_) => Some(string_map(object, "weights", number, "values must be numbers from 0 to 1")?),
        };
        Ok(PolicyRequest(PolicyDraft {
            expected_version: version,
            severity_overrides: overrides,
            weights,
            allow_list: address_list(object, "allowList")?,
            deny_list: address_list(object, "denyList")?,
            sweep_thresholds: sweep_thresholds(object)?,
        }))
    }
}

/// `sweepThresholds`' members: (name, the field an error names, the shape a value must have).
/// Each is a whole number; its range is the policy's check (`Policy::with_sweep_thresholds`).
const SWEEP_MEMBERS: [(&str, &str, &str); 4] = [
    (
        "solSharePercent",
        "sweepThresholds.solSharePercent",
        "sweepThresholds.solSharePercent must be a whole percent from 50 to 100, or null",
    ),
    (
        "tokenSharePercent",
        "sweepThresholds.tokenSharePercent",
        "sweepThresholds.tokenSharePercent must be a whole percent from 50 to 100, or null",
    ),
    (
        "dustLamports",
        "sweepThresholds.dustLamports",
        "sweepThresholds.dustLamports must be a whole number of lamports from 0 to 1000000000, or null",
    ),
    (
        "dustTokenUnits",
        "sweepThresholds.dustTokenUnits",
        "sweepThresholds.dustTokenUnits must be a whole number of token base units from 0 to 1000000, or null",
    ),
];
const _: () = assert!(
    crate::config::POLICY_SWEEP_SHARE_PERCENT_MIN == 50
        && crate::config::POLICY_SWEEP_SHARE_PERCENT_MAX == 100
        && crate::config::POLICY_SWEEP_DUST_LAMPORTS_MAX == 1_000_000_000
        && crate::config::POLICY_SWEEP_DUST_TOKEN_UNITS_MAX == 1_000_000,
    "the shapes name the limits"
);

/// `sweepThresholds` (absent or `null`: every member the default): an object of at most the
/// four members, each a whole number or `null` (the default); an unknown member is refused,
/// as on the policy itself.
fn sweep_thresholds(object: &Object<'_, '_>) -> Result<SweepOverrides, ApiError> {
    let Some(member) = object.get("sweepThresholds").filter(|v| !v.is_null()) else {
        return Ok(SweepOverrides::default());
    };
    let names = || SWEEP_MEMBERS.map(|(name, ..)| name).join(", ");
    let map = member.as_object().ok_or_else(|| ApiError::InvalidField {
        field: "sweepThresholds",
        message: format!("must be an object of {}", names()),
    })?;
    if let Some(unknown) = map.keys().find(|k| !SWEEP_MEMBERS.iter().any(|(name, ..)| name == k)) {
        let message = format!("unknown member {unknown:?} (sweepThresholds has {})", names());
        return Err(ApiError::InvalidField { field: "sweepThresholds", message });
    }
    let [sol, token, lamports, units] =
        SWEEP_MEMBERS.map(|(name, field, message)| match map.get(name).filter(|v| !v.is_null()) {
            None => Ok(None),
            Some(value) => whole_number(&value, u64::MAX).map(Some).ok_or(ApiError::InvalidRequest { field, message }),
        });
    Ok(SweepOverrides {
        sol_share_percent: sol?,
        token_share_percent: token?,
        dust_lamports: lamports?,
        dust_token_units: units?,
    })
}

/// A JSON number as `f64` (JSON has one number type: `1` is `1.0`).
fn number(value: simd_json::tape::Value<'_, '_>) -> Option<f64> {
    value.as_f64().or_else(|| value.as_u64().map(|n| n as f64)).or_else(|| value.as_i64().map(|n| n as f64))
}

/// An optional object of `name → T` (absent or `null`: empty), at most
/// `POLICY_OVERRIDES_LEN_MAX` members.
fn string_map<T>(
    object: &Object<'_, '_>,
    field: &'static str,
    value: impl Fn(simd_json::tape::Value<'_, '_>) -> Option<T>,
    message: &'static str,
) -> Result<Vec<(String, T)>, ApiError> {
    let Some(member) = object.get(field).filter(|v| !v.is_null()) else { return Ok(Vec::new()) };
    let shape = || ApiError::InvalidField { field, message: format!("{field} must be an object: {message}") };
    let map = member.as_object().ok_or_else(shape)?;
    if map.len() > crate::config::POLICY_OVERRIDES_LEN_MAX {
        return Err(ApiError::InvalidField {
            field,
            message: format!("more than {} members", crate::config::POLICY_OVERRIDES_LEN_MAX),
        });
    }
    map.iter().map(|(name, v)| value(v).map(|v| (name.to_owned(), v)).ok_or_else(shape)).collect()
}

/// An optional list of strings (absent or `null`: empty), at most `POLICY_LIST_LEN_MAX`.
fn address_list(object: &Object<'_, '_>, field: &'static str) -> Result<Vec<String>, ApiError> {
    let Some(value) = object.get(field).filter(|v| !v.is_null()) else { return Ok(Vec::new()) };
    let shape = || ApiError::InvalidRequest { field, message: POLICY_LIST_SHAPE };
    let array = value.as_array().ok_or_else(shape)?;
    if array.len() > crate::config::POLICY_LIST_LEN_MAX {
        return Err(shape());
    }
    array.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>().ok_or_else(shape)
}

impl JsonRequest for WalletRequest {
    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        Ok(WalletRequest {
            wallet: required_str(object, "wallet", "wallet is required and must be a string")?,
            refresh: optional_bool(object, "refresh")?,
            callback_url: optional_str(object, "callbackUrl", "callbackUrl must be a string")?,
        })
    }
}

/// `POST /v1/developer/intelligence/transaction` (the pre-sign scan).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanRequest {
    /// What to scan: one transaction, or several run in order on one state.
    pub scanned: Scanned,
    pub signer: Option<String>,
    /// The dApp that asked for the signature.
    pub origin: Option<String>,
    /// `guards`: `true` (exactly the prediction) or an object of tolerances; `None`: not asked
    /// (always `None` with `transactions`: refused there).
    pub guards: Option<GuardOptions>,
}

/// A scan request's transactions, each the base64 of a serialized transaction (checked by the
/// endpoint: 400 `INVALID_TRANSACTION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scanned {
    /// `transaction`.
    One(String),
    /// `transactions` (1 to `SEQUENCE_TRANSACTIONS_MAX`) and `mode`.
    Sequence { transactions: Vec<String>, mode: SequenceMode },
}

const TRANSACTIONS_SHAPE: &str =
    "transactions must be an array of 1 to 5 strings, each the base64 of a serialized transaction";
const _: () = assert!(crate::config::SEQUENCE_TRANSACTIONS_MAX == 5, "the shape names the limit");

/// `transaction` or `transactions` (with its `mode`), never both.
fn scanned(object: &Object<'_, '_>) -> Result<Scanned, ApiError> {
    let present = |field: &str| object.get(field).is_some_and(|v| !v.is_null());
    let mode_shape = ApiError::InvalidRequest {
        field: "mode",
        message: "mode must be \"sequence\" or \"bundle\", and is sent with transactions",
    };
    if !present("transactions") {
        if present("mode") {
            return Err(mode_shape);
        }
        let message = "transaction (or transactions) is required: the base64 of a serialized transaction";
        return Ok(Scanned::One(required_str(object, "transaction", message)?));
    }
    if present("transaction") {
        let message = "send transaction (one) or transactions (a sequence), not both";
        return Err(ApiError::InvalidRequest { field: "transactions", message });
    }
    let shape = ApiError::InvalidRequest { field: "transactions", message: TRANSACTIONS_SHAPE };
    let array = object.get("transactions").and_then(|v| v.as_array()).ok_or(shape.clone())?;
    if !(1..=crate::config::SEQUENCE_TRANSACTIONS_MAX).contains(&array.len()) {
        return Err(shape);
    }
    let transactions = array.iter().map(|v| v.as_str().map(str::to_owned)).collect::<Option<Vec<_>>>();
    let mode = match optional_str(object, "mode", "mode must be \"sequence\" or \"bundle\"")?.as_deref() {
        None | Some("sequence") => SequenceMode::Sequence,
        Some("bundle") => SequenceMode::Bundle,
        Some(_) => return Err(mode_shape),
    };
    Ok(Scanned::Sequence { transactions: transactions.ok_or(shape)?, mode })
}

const GUARDS_SHAPE: &str =
    "guards must be a boolean or an object of slippageBps (0 to 10000) and solToleranceLamports (a whole number)";
const _: () = assert!(crate::guard::GUARD_SLIPPAGE_BPS_MAX == 10_000, "the shape names the limit");

/// `guards`: absent, `null` or `false` → not asked; `true` → no tolerance; an object of at
/// most `slippageBps` and `solToleranceLamports` (each a whole number in range, or `null`: 0).
fn guards(object: &Object<'_, '_>) -> Result<Option<GuardOptions>, ApiError> {
    let invalid = ApiError::InvalidRequest { field: "guards", message: GUARDS_SHAPE };
    let Some(value) = object.get("guards").filter(|v| !v.is_null()) else { return Ok(None) };
    if let Some(asked) = value.as_bool() {
        return Ok(asked.then(GuardOptions::default));
    }
    let map = value.as_object().ok_or(invalid.clone())?;
    if map.keys().any(|k| k != "slippageBps" && k != "solToleranceLamports") {
        return Err(invalid);
    }
    let whole = |name: &str, max: u64| match map.get(name).filter(|v| !v.is_null()) {
        None => Ok(0),
        Some(v) => whole_number(&v, max).ok_or(invalid.clone()),
    };
    let slippage_bps = whole("slippageBps", u64::from(crate::guard::GUARD_SLIPPAGE_BPS_MAX))?;
    Ok(Some(GuardOptions {
        slippage_bps: u16::try_from(slippage_bps).unwrap_or(crate::guard::GUARD_SLIPPAGE_BPS_MAX),
        sol_tolerance_lamports: whole("solToleranceLamports", u64::MAX)?,
    }))
}

impl JsonRequest for ScanRequest {
    const BODY_BYTES_MAX: usize = SCAN_BODY_BYTES_MAX;

    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        let scanned = scanned(object)?;
        let guards = guards(object)?;
        if guards.is_some() && matches!(scanned, Scanned::Sequence { .. }) {
            let message = "guards apply to one transaction: send it as transaction, not in transactions";
            return Err(ApiError::InvalidRequest { field: "guards", message });
        }
        Ok(ScanRequest {
            scanned,
            signer: optional_str(object, "signer", "signer must be a string (a base58 address)")?,
            origin: optional_str(object, "origin", "origin must be a string (the dApp's URL)")?,
            guards,
        })
    }
}

impl JsonRequest for CompareRequest {
    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        Ok(CompareRequest {
            wallet_a: required_str(object, "walletA", "walletA is required and must be a string")?,
            wallet_b: required_str(object, "walletB", "walletB is required and must be a string")?,
            refresh: optional_bool(object, "refresh")?,
            callback_url: optional_str(object, "callbackUrl", "callbackUrl must be a string")?,
        })
    }
}

/// `POST /v1/developer/feedback`: a verdict on an analysis or one of its signals, or on a scan
/// whose signed answer the body carries back (`scan`). The scan's answer is not kept here: the
/// endpoint reads it again with `serde_json`, the parser the report verifier is built on (so
/// its numbers canonicalize exactly as they were signed), once this shape passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedbackRequest {
    Analysis { analysis_id: String, signal_id: Option<String>, verdict: String, note: Option<String> },
    Scan { verdict: String, note: Option<String> },
}

impl FeedbackRequest {
    /// The member of the body that holds a scan's answer.
    pub const SCAN_MEMBER: &'static str = "scan";
}

impl JsonRequest for FeedbackRequest {
    /// A scan's answer sent back; the endpoint holds feedback on an analysis to `BODY_BYTES_MAX`.
    const BODY_BYTES_MAX: usize = FEEDBACK_SCAN_BODY_BYTES_MAX;

    fn from_object(object: &Object<'_, '_>) -> Result<Self, ApiError> {
        let note = optional_str(object, "note", "note must be a string")?;
        let scan = object.get(Self::SCAN_MEMBER).filter(|v| !v.is_null());
        match scan {
            None => Ok(FeedbackRequest::Analysis {
                analysis_id: required_str(
                    object,
                    "analysisId",
                    "analysisId is required: the id of a READY analysis (or send scan: a scan's signed answer)",
                )?,
                signal_id: optional_str(object, "signalId", "signalId must be a string (a signal id of the analysis)")?,
                verdict: required_str(object, "verdict", "verdict is required: false_positive, confirmed or missed")?,
                note,
            }),
            Some(scan) => {
                if scan.as_object().is_none() {
                    return Err(ApiError::InvalidRequest {
                        field: "scan",
                        message: "scan must be a scan's answer as it was returned: {\"data\": {…, \"signature\": {…}}}",
                    });
                }
                if ["analysisId", "signalId"].iter().any(|m| object.get(*m).is_some_and(|v| !v.is_null())) {
                    return Err(ApiError::InvalidRequest {
                        field: "scan",
                        message: "send either analysisId (with signalId) or scan, not both",
                    });
                }
                let verdict = required_str(object, "verdict", "verdict is required: false_positive or false_negative")?;
                Ok(FeedbackRequest::Scan { verdict, note })
            }
        }
    }
}

fn required_str(object: &Object<'_, '_>, field: &'static str, message: &'static str) -> Result<String, ApiError> {
    match object.get(field).and_then(|v| v.as_str().map(str::to_owned)) {
        Some(text) => Ok(text),
        None => Err(ApiError::InvalidRequest { field, message }),
    }
}

/// An optional string field (`callbackUrl`, `signer`); `null` means absent.
fn optional_str(
    object: &Object<'_, '_>,
    field: &'static str,
    message: &'static str,
) -> Result<Option<String>, ApiError> {
    let Some(value) = object.get(field).filter(|v| !v.is_null()) else { return Ok(None) };
    match value.as_str() {
        Some(text) => Ok(Some(text.to_owned())),
        None => Err(ApiError::InvalidRequest { field, message }),
    }
}

/// A string member that `null` clears: absent → `None`; `null` → `Some(None)`; a string →
/// `Some(Some(text))`; anything else → 400 naming it with `message`.
fn nullable_str(
    object: &Object<'_, '_>,
    field: &'static str,
    message: &'static str,
) -> Result<Option<Option<String>>, ApiError> {
    match object.get(field) {
        None => Ok(None),
        Some(value) if value.is_null() => Ok(Some(None)),
        Some(_) => optional_str(object, field, message).map(Some),
    }
}

fn optional_bool(object: &Object<'_, '_>, field: &'static str) -> Result<bool, ApiError> {
    let Some(value) = object.get(field) else { return Ok(false) };
    if value.is_null() {
        return Ok(false);
    }
    value.as_bool().ok_or(ApiError::InvalidRequest { field, message: "refresh must be a boolean" })
}

/// Contract §3 step 5, first check: `application/json`, parameters allowed, any case.
pub fn check_content_type(content_type: Option<&str>) -> Result<(), ApiError> {
    let essence = content_type.map(|ct| ct.split(';').next().unwrap_or("").trim());
    match essence {
        Some(essence) if essence.eq_ignore_ascii_case("application/json") => Ok(()),
        _ => Err(ApiError::UnsupportedMediaType),
    }
}

/// Contract §3 step 5 in order: media type (415), size (413), shape (400).
pub fn parse_body<T: JsonRequest>(request: &ApiRequest) -> Result<T, ApiError> {
    check_content_type(request.content_type.as_deref())?;
    match &request.body {
        Body::TooLarge => Err(ApiError::PayloadTooLarge { max_bytes: T::BODY_BYTES_MAX }),
        Body::Complete(bytes) if bytes.len() > T::BODY_BYTES_MAX => {
            Err(ApiError::PayloadTooLarge { max_bytes: T::BODY_BYTES_MAX })
        }
        Body::Complete(bytes) => parse_json(bytes),
    }
}

/// Parses a document that must be a JSON object into `T`, with this thread's scratch.
pub fn parse_json<T: JsonRequest>(bytes: &[u8]) -> Result<T, ApiError> {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut scratch) => scratch.parse(bytes),
        // Only a re-entrant call could find it borrowed; parse with fresh buffers instead.
        Err(_) => Scratch::new().parse(bytes),
    })
}

const NOT_JSON: ApiError = ApiError::InvalidRequest { field: "body", message: "body is not valid JSON" };
const NOT_OBJECT: ApiError = ApiError::InvalidRequest { field: "body", message: "body must be a JSON object" };

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::new());
}

/// Reused parse buffers of one thread.
struct Scratch {
    input: Vec<u8>,
    buffers: simd_json::Buffers,
    /// Empty between parses, so it borrows nothing; `Tape::reset` re-lifetimes it.
    tape: Option<Tape<'static>>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            input: Vec::with_capacity(REQUEST_BODY_BYTES_MAX),
            buffers: simd_json::Buffers::new(REQUEST_BODY_BYTES_MAX),
            tape: Some(Tape::null().reset()),
        }
    }

    fn parse<T: JsonRequest>(&mut self, bytes: &[u8]) -> Result<T, ApiError> {
        self.input.clear();
        self.input.extend_from_slice(bytes);
        let mut tape = self.tape.take().unwrap_or_else(|| Tape::null().reset()).reset();
        let result = match simd_json::fill_tape(&mut self.input, &mut self.buffers, &mut tape) {
            Err(_) => Err(NOT_JSON),
            Ok(()) => match tape.as_value().as_object() {
                Some(object) => T::from_object(&object),
                None => Err(NOT_OBJECT),
            },
        };
        self.tape = Some(tape.reset());
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn request(content_type: Option<&str>, body: &str) -> ApiRequest {
        let mut req = ApiRequest::new(crate::http::Method::Post, "/v1/developer/intelligence/wallet");
        req.content_type = content_type.map(str::to_owned);
        req.body = Body::Complete(Bytes::copy_from_slice(body.as_bytes()));
        req
    }

    fn invalid(field: &'static str) -> impl Fn(ApiError) -> bool {
        move |e| matches!(e, ApiError::InvalidRequest { field: f, .. } if f == field)
    }

    #[test]
    fn content_type_rules() {
        for ok in ["application/json", "Application/JSON", "application/json; charset=utf-8", " application/json ;x=y"]
        {
            assert_eq!(check_content_type(Some(ok)), Ok(()), "{ok}");
        }
        for bad in [None, Some(""), Some("text/plain"), Some("application/jsonx"), Some("application/ld+json")] {
            assert_eq!(check_content_type(bad), Err(ApiError::UnsupportedMediaType), "{bad:?}");
        }
    }

    #[test]
    fn wallet_request() {
        let parsed: WalletRequest =
            parse_body(&request(Some("application/json"), r#"{"wallet":"abc","x":[1]}"#)).unwrap();
        assert_eq!(parsed, WalletRequest { wallet: "abc".into(), refresh: false, callback_url: None });
        let parsed: WalletRequest =
            parse_body(&request(Some("application/json"), r#"{"refresh":true,"wallet":"a\u0062"}"#)).unwrap();
        assert_eq!(parsed, WalletRequest { wallet: "ab".into(), refresh: true, callback_url: None });
        let parsed: WalletRequest =
            parse_body(&request(Some("application/json"), r#"{"wallet":"a","refresh":null,"callbackUrl":null}"#))
                .unwrap();
        assert!(!parsed.refresh && parsed.callback_url.is_none());
        let parsed: WalletRequest = parse_json(br#"{"wallet":"a","callbackUrl":"https://h.example/x"}"#).unwrap();
        assert_eq!(parsed.callback_url.as_deref(), Some("https://h.example/x"));
    }

    #[test]
    fn unknown_fields_may_hold_any_json_number() {
        // JSON puts no bound on a number; unknown fields are ignored, whatever they hold
        // (schemathesis sends integers past 64 bits).
        let body = r#"{"x":[-181551067731396014596454663759855616, 61090027360217358336, 1.5e300],"wallet":"w"}"#;
        let parsed: WalletRequest = parse_body(&request(Some("application/json"), body)).unwrap();
        assert_eq!(parsed.wallet, "w");
    }

    #[test]
    fn a_policys_sweep_thresholds_are_whole_numbers_of_known_members() {
        let draft = |body: &str| parse_json::<PolicyRequest>(body.as_bytes()).map(|PolicyRequest(d)| d);
        let set = draft(r#"{"sweepThresholds":{"solSharePercent":75,"tokenSharePercent":null,"dustLamports":5e6}}"#);
        let expected =
            SweepOverrides { sol_share_percent: Some(75), dust_lamports: Some(5_000_000), ..SweepOverrides::default() };
        assert_eq!(set.map(|d| d.sweep_thresholds), Ok(expected));
        for absent in [r#"{}"#, r#"{"sweepThresholds":null}"#, r#"{"sweepThresholds":{}}"#] {
            assert_eq!(draft(absent).map(|d| d.sweep_thresholds), Ok(SweepOverrides::default()), "{absent}");
        }
        // The range is the policy's check; here only the shape.
        let wide = draft(r#"{"sweepThresholds":{"solSharePercent":40}}"#).map(|d| d.sweep_thresholds.sol_share_percent);
        assert_eq!(wide, Ok(Some(40)));
        for (body, field) in [
            (r#"{"sweepThresholds":{"solSharePercent":"75"}}"#, "sweepThresholds.solSharePercent"),
            (r#"{"sweepThresholds":{"tokenSharePercent":99.5}}"#, "sweepThresholds.tokenSharePercent"),
            (r#"{"sweepThresholds":{"dustLamports":-1}}"#, "sweepThresholds.dustLamports"),
            (r#"{"sweepThresholds":{"dustTokenUnits":1e30}}"#, "sweepThresholds.dustTokenUnits"),
        ] {
            let err = draft(body).unwrap_err();
            assert!(invalid(field)(err.clone()), "{body}: {err:?}");
        }
        for body in [r#"{"sweepThresholds":{"solShare":75}}"#, r#"{"sweepThresholds":[75]}"#] {
            let err = draft(body).unwrap_err();
            assert!(matches!(&err, ApiError::InvalidField { field: "sweepThresholds", .. }), "{body}: {err:?}");
        }
        let unknown = draft(r#"{"sweepThresholds":{"solShare":75}}"#).unwrap_err();
        assert!(format!("{unknown:?}").contains("solSharePercent, tokenSharePercent"), "{unknown:?}");
    }

    #[test]
    fn compare_request() {
        let body = r#"{"walletA":"a","walletB":"b","refresh":false}"#;
        let parsed: CompareRequest = parse_body(&request(Some("application/json"), body)).unwrap();
        assert_eq!(
            parsed,
            CompareRequest { wallet_a: "a".into(), wallet_b: "b".into(), refresh: false, callback_url: None }
        );
        let err = parse_body::<CompareRequest>(&request(Some("application/json"), r#"{"walletA":"a"}"#)).unwrap_err();
        assert!(invalid("walletB")(err));
    }

    #[test]
    fn batch_request_holds_1_to_100_strings_under_its_own_size_bound() {
        let wallets = |n: usize| (0..n).map(|i| format!("\"{}{i:04}\"", "w".repeat(40))).collect::<Vec<_>>().join(",");
        let body = format!(r#"{{"wallets":[{}],"refresh":true}}"#, wallets(100));
        assert!(body.len() > BODY_BYTES_MAX, "a full batch is larger than a single request may be");
        let parsed: BatchRequest = parse_body(&request(Some("application/json"), &body)).unwrap();
        assert_eq!((parsed.wallets.len(), parsed.refresh), (100, true));
        assert_eq!(parsed.wallets[7], format!("{}0007", "w".repeat(40)));
        let not_an_address: BatchRequest = parse_json(br#"{"wallets":["", "x", "x"]}"#).unwrap();
        assert_eq!(not_an_address.wallets, ["", "x", "x"], "each item is checked later, on its own");
        for bad in [
            "{}".to_owned(),
            r#"{"wallets":[]}"#.to_owned(),
            r#"{"wallets":"w"}"#.to_owned(),
            r#"{"wallets":["w",1]}"#.to_owned(),
            r#"{"wallets":["w",null]}"#.to_owned(),
            r#"{"wallets":[["w"]]}"#.to_owned(),
            format!(r#"{{"wallets":[{}]}}"#, wallets(101)),
        ] {
            let err = parse_json::<BatchRequest>(bad.as_bytes()).unwrap_err();
            assert!(invalid("wallets")(err.clone()), "{bad:?}: {err:?}");
        }
        let too_large = request(Some("application/json"), &" ".repeat(BATCH_BODY_BYTES_MAX + 1));
        let refused = ApiError::PayloadTooLarge { max_bytes: BATCH_BODY_BYTES_MAX };
        assert_eq!(parse_body::<BatchRequest>(&too_large).unwrap_err(), refused);
    }

    #[test]
    fn a_score_drop_is_a_whole_number_whatever_its_spelling() {
        let drop_of = |text: &str| {
            let body = format!(r#"{{"scoreDrop":{text}}}"#);
            parse_body::<MonitorPatchRequest>(&request(Some("application/json"), &body)).map(|r| r.score_drop)
        };
        assert_eq!(drop_of("34"), Ok(Some(Some(34))));
        assert_eq!(drop_of("34.0"), Ok(Some(Some(34))));
        assert_eq!(drop_of("null"), Ok(Some(None)));
        for bad in ["34.5", "0", "0.0", "101", "100.5", "-1", "\"5\"", "1e300"] {
            assert!(drop_of(bad).is_err_and(invalid("scoreDrop")), "{bad}");
        }
    }

    #[test]
    fn a_monitors_callback_url_is_optional_and_null_clears_it() {
        let create = |body: &str| parse_body::<MonitorRequest>(&request(Some("application/json"), body));
        let url = |body: &str| create(body).map(|r| r.callback_url);
        assert_eq!(url(r#"{"wallets":["a"]}"#), Ok(None), "poll-only");
        assert_eq!(url(r#"{"wallets":["a"],"callbackUrl":null}"#), Ok(None));
        assert_eq!(url(r#"{"wallets":["a"],"callbackUrl":"https://x"}"#), Ok(Some("https://x".into())));
        assert!(url(r#"{"wallets":["a"],"callbackUrl":7}"#).is_err_and(invalid("callbackUrl")));
        let patch = |body: &str| {
            parse_body::<MonitorPatchRequest>(&request(Some("application/json"), body)).map(|r| r.callback_url)
        };
        assert_eq!(patch("{}"), Ok(None), "absent: unchanged");
        assert_eq!(patch(r#"{"callbackUrl":null}"#), Ok(Some(None)), "null: cleared");
        assert_eq!(patch(r#"{"callbackUrl":"https://x"}"#), Ok(Some(Some("https://x".into()))));
        assert!(patch(r#"{"callbackUrl":["https://x"]}"#).is_err_and(invalid("callbackUrl")));
    }

    #[test]
    fn a_budget_and_a_dust_threshold_are_bounded_whole_numbers() {
        let patch = |text: &str| {
            let body = format!(r#"{{"reanalysesPerDay":{text},"dustLamports":{text}}}"#);
            parse_body::<MonitorPatchRequest>(&request(Some("application/json"), &body))
                .map(|r| (r.reanalyses_per_day, r.dust_lamports))
        };
        assert_eq!(patch("24"), Ok((Some(Some(24)), Some(Some(24)))));
        assert_eq!(patch("24.0"), Ok((Some(Some(24)), Some(Some(24)))));
        assert_eq!(patch("null"), Ok((Some(None), Some(None))));
        assert_eq!(patch("100000"), Ok((Some(Some(100_000)), Some(Some(100_000)))));
        let per_day = |text: &str| {
            let body = format!(r#"{{"wallets":["a"],"callbackUrl":"https://x","reanalysesPerDay":{text}}}"#);
            parse_body::<MonitorRequest>(&request(Some("application/json"), &body)).map(|r| r.reanalyses_per_day)
        };
        assert_eq!(per_day("1"), Ok(Some(1)));
        for bad in ["0", "100001", "2.5", "-1", "\"5\"", "1e300"] {
            assert!(per_day(bad).is_err_and(invalid("reanalysesPerDay")), "{bad}");
        }
        let dust = |text: &str| {
            let body = format!(r#"{{"dustLamports":{text}}}"#);
            parse_body::<MonitorPatchRequest>(&request(Some("application/json"), &body)).map(|r| r.dust_lamports)
        };
        assert_eq!(dust("0"), Ok(Some(Some(0))), "0 turns the dust filter off");
        assert_eq!(dust("1000000000"), Ok(Some(Some(1_000_000_000))));
        for bad in ["1000000001", "0.5", "-1", "true"] {
            assert!(dust(bad).is_err_and(invalid("dustLamports")), "{bad}");
        }
    }

    #[test]
    fn shape_errors_name_the_field() {
        let cases = [
            ("", "body"),
            ("{", "body"),
            ("nul", "body"),
            ("[]", "body"),
            ("\"wallet\"", "body"),
            ("{}", "wallet"),
            (r#"{"wallet":1}"#, "wallet"),
            (r#"{"wallet":null}"#, "wallet"),
            (r#"{"wallet":"a","refresh":"yes"}"#, "refresh"),
            (r#"{"wallet":"a","refresh":0}"#, "refresh"),
            (r#"{"wallet":"a","callbackUrl":1}"#, "callbackUrl"),
            (r#"{"wallet":"a","callbackUrl":["https://x"]}"#, "callbackUrl"),
        ];
        for (body, field) in cases {
            let err = parse_body::<WalletRequest>(&request(Some("application/json"), body)).unwrap_err();
            assert!(invalid(field)(err.clone()), "{body:?}: {err:?}");
        }
        let bad_utf8 = ApiRequest {
            body: Body::Complete(Bytes::from_static(b"{\"wallet\":\"\xff\"}")),
            ..request(Some("application/json"), "")
        };
        assert!(invalid("body")(parse_body::<WalletRequest>(&bad_utf8).unwrap_err()));
    }

    #[test]
    fn order_is_media_type_then_size_then_shape() {
        let mut req = request(Some("text/plain"), "not json");
        req.body = Body::TooLarge;
        assert_eq!(parse_body::<WalletRequest>(&req).unwrap_err(), ApiError::UnsupportedMediaType);
        req.content_type = Some("application/json".into());
        assert_eq!(parse_body::<WalletRequest>(&req).unwrap_err(), ApiError::PayloadTooLarge { max_bytes: 4096 });
        let oversize = request(Some("application/json"), &" ".repeat(BODY_BYTES_MAX + 1));
        assert_eq!(parse_body::<WalletRequest>(&oversize).unwrap_err(), ApiError::PayloadTooLarge { max_bytes: 4096 });
    }

    #[test]
    fn scratch_is_reused_across_parses() {
        for i in 0..100 {
            let body = format!(r#"{{"wallet":"w{i}","pad":"{}"}}"#, "x".repeat(i * 30));
            let parsed: WalletRequest = parse_json(body.as_bytes()).unwrap();
            assert_eq!(parsed.wallet, format!("w{i}"));
            assert!(parse_json::<WalletRequest>(b"{oops").is_err());
        }
    }
}
