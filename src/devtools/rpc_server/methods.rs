//! JSON-RPC over a `LedgerSource`: a request body in, a response body out, as a Solana node
//! would answer.
//!
//! Owns: request parsing (single and batch), method dispatch, params checking and the
//! mapping of `LedgerError` to JSON-RPC error objects. Called from the server's one thread.
//!
//! Invariant: every request gets an answer object with its `id` (or `null` when the request
//! had none readable); a batch gets an array in request order. Errors use the JSON-RPC codes
//! -32700 (not JSON), -32600 (not a request, empty or oversized batch), -32601 (unknown
//! method), -32602 (bad params). Bounded: `RPC_SERVER_BATCH_LEN_MAX` requests per batch,
//! `MULTIPLE_ACCOUNTS_LEN_MAX` addresses, `SIGNATURES_PAGE_LEN_MAX` signatures per page.
//! `simulateTransaction` runs the source's own simulation (the demo's executor; a snapshot
//! cannot, and says so as an unknown method would).
//! `getMultipleAccounts` also answers `encoding: base64` where the source holds bytes (the
//! demo: `LedgerSource::get_multiple_accounts_base64`), what an rpc source executes on.
//! Deliberately absent: other encodings (a snapshot holds account data parsed only),
//! `getTokenAccountsByOwner`'s `mint` filter, `minContextSlot`, and any
//! `getProgramAccounts` search but the nonce-account one the ledger layer makes.

use simd_json::prelude::*;

use crate::config;
use crate::config::RPC_SERVER_BATCH_LEN_MAX;
use crate::ledger::instruction::ids;
use crate::ledger::model::{TokenProgram, NONCE_ACCOUNT_DATA_LEN, NONCE_AUTHORITY_OFFSET};
use crate::ledger::read::{LedgerSource, Simulated};
use crate::ledger::wire::{self, RpcErrorObject, RpcRequest, RpcResponse, Value, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

use super::stats::ServerStats;

/// `before`, `until` and `limit` of a `getSignaturesForAddress` call.
type SignaturesConfig = (Option<Signature>, Option<Signature>, u32);

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// The response body for a request body.
/// Each call the source answers is counted in `stats` by method.
pub async fn answer<S: LedgerSource>(source: &S, mut body: Vec<u8>, stats: &ServerStats) -> Vec<u8> {
    let request = match simd_json::to_owned_value(&mut body) {
        Ok(value) => value,
        Err(e) => return error_body(Value::null(), error(PARSE_ERROR, format!("Parse error: {e}"))),
    };
    let Value::Array(items) = request else {
        return answer_one(source, request, stats).await;
    };
    if items.is_empty() || items.len() > RPC_SERVER_BATCH_LEN_MAX {
        let message = format!("Invalid request: a batch holds 1 to {RPC_SERVER_BATCH_LEN_MAX} requests");
        return error_body(Value::null(), error(INVALID_REQUEST, message));
    }
    let mut out = Vec::from(*b"[");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(answer_one(source, item, stats).await);
    }
    out.push(b']');
    out
}

/// Whether a request body is a JSON-RPC batch (an array), by its first non-blank byte.
pub fn is_batch(body: &[u8]) -> bool {
    body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
}

/// The one error object an endpoint without batching answers a batch with.
pub fn batch_refusal() -> Vec<u8> {
    error_body(Value::null(), error(INVALID_REQUEST, "batch requests are not supported on this endpoint".into()))
}

async fn answer_one<S: LedgerSource>(source: &S, item: Value, stats: &ServerStats) -> Vec<u8> {
    let id = item.get("id").cloned().unwrap_or_else(Value::null);
    let request: RpcRequest = match simd_json::serde::from_owned_value(item) {
        Ok(request) => request,
        Err(_) => return error_body(id, error(INVALID_REQUEST, "Invalid request".into())),
    };
    let answered = call(source, &request.method, Params(&request.params)).await;
    if !matches!(&answered, Err(e) if e.code == METHOD_NOT_FOUND) {
        stats.count_call(&request.method);
    }
    match answered {
        Ok(result) => wire::to_vec(&RpcResponse::ok(request.id.clone(), result))
            .unwrap_or_else(|e| error_body(request.id, e.to_rpc_error())),
        Err(e) => error_body(request.id, e),
    }
}

fn error_body(id: Value, error: RpcErrorObject) -> Vec<u8> {
    let response = RpcResponse::<Value> { jsonrpc: "2.0".into(), id, result: None, error: Some(error) };
    // Invariant: an envelope of a number, a string and an id read from JSON always
    // serializes; the fallback only keeps this function total.
    wire::to_vec(&response).unwrap_or_else(|_| {
        br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"Internal error"}}"#.to_vec()
    })
}

fn error(code: i64, message: String) -> RpcErrorObject {
    RpcErrorObject { code, message, data: None }
}

fn invalid_params(message: impl Into<String>) -> RpcErrorObject {
    error(INVALID_PARAMS, format!("Invalid params: {}", message.into()))
}

fn to_value<T: serde::Serialize>(result: Result<T, LedgerError>) -> Result<Value, RpcErrorObject> {
    let result = result.map_err(|e| e.to_rpc_error())?;
    simd_json::serde::to_owned_value(&result).map_err(|e| LedgerError::Malformed(e.to_string()).to_rpc_error())
}

async fn call<S: LedgerSource>(source: &S, method: &str, params: Params<'_>) -> Result<Value, RpcErrorObject> {
    match method {
        "getAccountInfo" => {
            params.len_max(2)?;
            params.json_parsed(1)?;
            to_value(source.get_account_info(&params.pubkey(0)?).await)
        }
        "getBalance" => {
            params.len_max(2)?;
            let account = source.get_account_info(&params.pubkey(0)?).await;
            to_value(account.map(|a| WithContext { context: a.context, value: a.value.map_or(0, |a| a.lamports) }))
        }
        "getMultipleAccounts" => {
            params.len_max(2)?;
            if params.encoding(1)? == Some("base64") {
                return to_value(source.get_multiple_accounts_base64(&params.pubkeys(0)?).await);
            }
            params.json_parsed(1)?;
            to_value(source.get_multiple_accounts(&params.pubkeys(0)?).await)
        }
        "getTokenAccountsByOwner" => {
            params.len_max(3)?;
            params.json_parsed(2)?;
            to_value(source.get_token_accounts_by_owner(&params.pubkey(0)?, params.token_program(1)?).await)
        }
        "getProgramAccounts" => {
            params.len_max(2)?;
            params.json_parsed(1)?;
            let (authority, with_context) = params.nonce_search(0, 1)?;
            let answer = source.get_nonce_accounts_by_authority(&authority).await;
            match with_context {
                true => to_value(answer),
                false => to_value(answer.map(|a| a.value)),
            }
        }
        "getSignaturesForAddress" => {
            params.len_max(2)?;
            let (before, until, limit) = params.signatures_config(1)?;
            let address = params.pubkey(0)?;
            to_value(match until {
                Some(until) => source.get_signatures_until(&address, &until, before.as_ref(), limit).await,
                None => source.get_signatures_for_address(&address, before.as_ref(), limit).await,
            })
        }
        "getTransaction" => {
            params.len_max(2)?;
            params.json_parsed(1)?;
            let results = source.get_transactions(&[params.signature(0)?]).await;
            to_value(results.map(|r| r.into_iter().next().flatten()))
        }
        "simulateTransaction" => {
            params.len_max(2)?;
            let (transaction, accounts) = params.simulation(0, 1)?;
            match source.simulate_transaction(&transaction, &accounts).await {
                Ok(Simulated::Ran(answer)) => to_value(Ok(answer)),
                // A node always simulates; a source that cannot says why, as an unknown method.
                Ok(Simulated::Skipped(reason)) => {
                    Err(error(METHOD_NOT_FOUND, format!("simulateTransaction: {reason}")))
                }
                Err(e) => Err(e.to_rpc_error()),
            }
        }
        _ => Err(error(METHOD_NOT_FOUND, "Method not found".into())),
    }
}

/// A list of at most `MULTIPLE_ACCOUNTS_LEN_MAX` addresses.
fn address_list(value: Option<&Value>) -> Result<Vec<Pubkey>, RpcErrorObject> {
    let items = value.and_then(|v| v.as_array()).ok_or_else(|| invalid_params("expected an address list"))?;
    if items.len() > config::MULTIPLE_ACCOUNTS_LEN_MAX {
        return Err(invalid_params(format!("at most {} addresses", config::MULTIPLE_ACCOUNTS_LEN_MAX)));
    }
    items
        .iter()
        .map(|v| v.as_str().and_then(|t| Pubkey::parse(t).ok()).ok_or_else(|| invalid_params("not an address")))
        .collect()
}

/// Positional params of one request.
#[derive(Clone, Copy)]
struct Params<'a>(&'a Value);

impl<'a> Params<'a> {
    fn len_max(&self, len_max: usize) -> Result<(), RpcErrorObject> {
        match self.0.as_array() {
            Some(items) if !items.is_empty() && items.len() <= len_max => Ok(()),
            _ => Err(invalid_params(format!("expected an array of 1 to {len_max} params"))),
        }
    }

    /// `simulateTransaction`'s params: the base64 transaction (at most a packet) and the
    /// addresses of `accounts` (jsonParsed only, at most `MULTIPLE_ACCOUNTS_LEN_MAX`).
    fn simulation(&self, tx_index: usize, config_index: usize) -> Result<(Vec<u8>, Vec<Pubkey>), RpcErrorObject> {
        use base64::Engine as _;
        let text = self.str(tx_index)?;
        if text.len() > config::TRANSACTION_BYTES_MAX.div_ceil(3) * 4 {
            return Err(invalid_params(format!("the transaction is over {} bytes", config::TRANSACTION_BYTES_MAX)));
        }
        let transaction = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| invalid_params(format!("the transaction is not base64: {e}")))?;
        let config = self.get(config_index);
        if config.and_then(|c| c.get("encoding")).and_then(|e| e.as_str()).is_some_and(|e| e != "base64") {
            return Err(invalid_params("only base64 transactions are read"));
        }
        let Some(wanted) = config.and_then(|c| c.get("accounts")) else { return Ok((transaction, Vec::new())) };
        if wanted.get("encoding").and_then(|e| e.as_str()) != Some("jsonParsed") {
            return Err(invalid_params("accounts are served jsonParsed only"));
        }
        let addresses = address_list(wanted.get("addresses"))?;
        Ok((transaction, addresses))
    }

    fn get(&self, index: usize) -> Option<&'a Value> {
        self.0.as_array()?.get(index).filter(|v| !v.is_null())
    }

    fn str(&self, index: usize) -> Result<&'a str, RpcErrorObject> {
        self.get(index)
            .and_then(|v| v.as_str())
            .ok_or_else(|| invalid_params(format!("param {index} must be a string")))
    }

    fn pubkey(&self, index: usize) -> Result<Pubkey, RpcErrorObject> {
        let text = self.str(index)?;
        Pubkey::parse(text).map_err(|e| invalid_params(format!("{text:?} is not an address: {e}")))
    }

    fn signature(&self, index: usize) -> Result<Signature, RpcErrorObject> {
        let text = self.str(index)?;
        Signature::parse(text).map_err(|e| invalid_params(format!("{text:?} is not a signature: {e}")))
    }

    fn pubkeys(&self, index: usize) -> Result<Vec<Pubkey>, RpcErrorObject> {
        address_list(self.get(index))
    }

    /// The config object at `index`, when given (absent and `null` are the same).
    fn config(&self, index: usize) -> Result<Option<&'a Value>, RpcErrorObject> {
        match self.get(index) {
            None => Ok(None),
            Some(v) if v.is_object() => Ok(Some(v)),
            Some(_) => Err(invalid_params(format!("param {index} must be a config object"))),
        }
    }

    /// The config's `encoding`, when it names one.
    fn encoding(&self, index: usize) -> Result<Option<&'a str>, RpcErrorObject> {
        Ok(self.config(index)?.and_then(|c| c.get("encoding")).and_then(|e| e.as_str()))
    }

    /// Accounts and transactions are served jsonParsed only; another explicit encoding is
    /// refused rather than answered in the wrong shape.
    fn json_parsed(&self, index: usize) -> Result<(), RpcErrorObject> {
        match self.config(index)?.and_then(|c| c.get("encoding")) {
            None => Ok(()),
            Some(e) if e.as_str() == Some("jsonParsed") => Ok(()),
            Some(_) => Err(invalid_params("this server serves the jsonParsed encoding only")),
        }
    }

    fn token_program(&self, index: usize) -> Result<TokenProgram, RpcErrorObject> {
        let filter = self.config(index)?.ok_or_else(|| invalid_params("expected a {\"programId\": …} filter"))?;
        let id = filter.get("programId").and_then(|v| v.as_str());
        [TokenProgram::Token, TokenProgram::Token2022]
            .into_iter()
            .find(|p| Some(p.id()) == id)
            .ok_or_else(|| invalid_params("unrecognized token program id (the mint filter is not served)"))
    }

    /// `getProgramAccounts` is served for one search only: System-owned nonce accounts naming
    /// an authority (`dataSize` 80 and a base58 `memcmp` at offset 8, in either order). Returns
    /// the authority and whether the answer carries its context.
    fn nonce_search(&self, program: usize, index: usize) -> Result<(Pubkey, bool), RpcErrorObject> {
        let refused = || {
            invalid_params("only the nonce-account search is served: the System program with filters dataSize 80 and memcmp of the authority at offset 8")
        };
        if self.str(program)? != ids::SYSTEM {
            return Err(refused());
        }
        let config = self.config(index)?.ok_or_else(refused)?;
        let filters = config.get("filters").and_then(|f| f.as_array()).filter(|f| f.len() == 2).ok_or_else(refused)?;
        let size = filters.iter().find_map(|f| f.get("dataSize")?.as_u64());
        let memcmp = filters.iter().find_map(|f| f.get("memcmp"));
        let offset = memcmp.and_then(|m| m.get("offset")?.as_u64());
        let base58 = memcmp.and_then(|m| m.get("encoding")).is_none_or(|e| e.as_str() == Some("base58"));
        if size != Some(NONCE_ACCOUNT_DATA_LEN) || offset != Some(NONCE_AUTHORITY_OFFSET) || !base58 {
            return Err(refused());
        }
        let text = memcmp.and_then(|m| m.get("bytes")?.as_str()).ok_or_else(refused)?;
        let authority = Pubkey::parse(text).map_err(|e| invalid_params(format!("memcmp bytes {text:?}: {e}")))?;
        let with_context = config.get("withContext").and_then(|v| v.as_bool()).unwrap_or(false);
        Ok((authority, with_context))
    }

    /// `before`, `until` and `limit` of a `getSignaturesForAddress` config.
    fn signatures_config(&self, index: usize) -> Result<SignaturesConfig, RpcErrorObject> {
        let Some(config) = self.config(index)? else {
            return Ok((None, None, config::SIGNATURES_PAGE_LEN_MAX));
        };
        if config.get("minContextSlot").is_some_and(|v| !v.is_null()) {
            return Err(invalid_params("minContextSlot is not served"));
        }
        let limit = match config.get("limit").filter(|v| !v.is_null()) {
            None => config::SIGNATURES_PAGE_LEN_MAX,
            Some(v) => v
                .as_u64()
                .filter(|l| (1..=u64::from(config::SIGNATURES_PAGE_LEN_MAX)).contains(l))
                .map(|l| l as u32)
                .ok_or_else(|| invalid_params(format!("limit must be 1 to {}", config::SIGNATURES_PAGE_LEN_MAX)))?,
        };
        let signature = |name: &str| match config.get(name).filter(|v| !v.is_null()) {
            None => Ok(None),
            Some(v) => {
                let text = v.as_str().ok_or_else(|| invalid_params(format!("{name} must be a signature")))?;
                Signature::parse(text).map(Some).map_err(|e| invalid_params(format!("{name}: {e}")))
            }
        };
        Ok((signature("before")?, signature("until")?, limit))
    }
}

#[cfg(test)]
mod tests {
    use simd_json::json;

    use super::*;
    use crate::ledger::demo::DemoLedger;

    fn ask(body: &str) -> Value {
        let source = DemoLedger::new(1);
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut out = runtime.block_on(answer(&source, body.as_bytes().to_vec(), &ServerStats::default()));
        simd_json::to_owned_value(&mut out).unwrap()
    }

    fn code(v: &Value) -> Option<i64> {
        v.get("error")?.get("code")?.as_i64()
    }

    const W: &str = "5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd";

    #[test]
    fn answers_json_rpc_errors() {
        assert_eq!(code(&ask("{not json")), Some(PARSE_ERROR));
        assert_eq!(code(&ask("[]")), Some(INVALID_REQUEST));
        assert_eq!(code(&ask(r#"{"id":1}"#)), Some(INVALID_REQUEST));
        let unknown = ask(r#"{"jsonrpc":"2.0","id":"a","method":"getSlotLeader","params":[]}"#);
        assert_eq!(code(&unknown), Some(METHOD_NOT_FOUND));
        assert_eq!(unknown.get("id"), Some(&Value::from("a")));
        for params in [
            json!([]),
            json!(["xyz"]),
            json!([W, {"encoding": "base64"}]),
            json!([W, "config"]),
            json!([W, {}, {}, {}]),
        ] {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "getAccountInfo", "params": params.clone()});
            assert_eq!(code(&ask(&body.encode())), Some(INVALID_PARAMS), "{params}");
        }
        for config in [json!({"limit": 0}), json!({"limit": 1001}), json!({"before": "x"}), json!({"until": "x"})] {
            let body =
                json!({"jsonrpc": "2.0", "id": 1, "method": "getSignaturesForAddress", "params": [W, config.clone()]});
            assert_eq!(code(&ask(&body.encode())), Some(INVALID_PARAMS), "{config}");
        }
        let mint_filter = json!({"jsonrpc": "2.0", "id": 1, "method": "getTokenAccountsByOwner",
            "params": [W, {"mint": W}]});
        assert_eq!(code(&ask(&mint_filter.encode())), Some(INVALID_PARAMS));
    }

    #[test]
    fn answers_batches_in_order() {
        let body = json!([
            {"jsonrpc": "2.0", "id": 3, "method": "getBalance", "params": [W]},
            {"jsonrpc": "2.0", "id": 1, "method": "nope", "params": []},
            {"jsonrpc": "2.0", "id": 2, "method": "getSignaturesForAddress", "params": [W, {"limit": 5}]},
        ]);
        let got = ask(&body.encode());
        let items = got.as_array().unwrap();
        let ids: Vec<u64> = items.iter().map(|i| i.get("id").and_then(|v| v.as_u64()).unwrap()).collect();
        assert_eq!(ids, vec![3, 1, 2]);
        assert!(items[0].get("result").and_then(|r| r.get("value")).is_some());
        assert_eq!(code(&items[1]), Some(METHOD_NOT_FOUND));
        assert!(items[2].get("result").and_then(|r| r.as_array()).is_some());
    }

    #[test]
    fn null_results_are_sent_as_null() {
        let sig = bs58::encode([9u8; 64]).into_string();
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "getTransaction",
            "params": [sig, {"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0}]});
        let got = ask(&body.encode());
        assert_eq!(got.get("result"), Some(&Value::null()));
        assert!(got.get("error").is_none());
    }

    #[test]
    fn maps_ledger_errors_back_to_their_family() {
        for e in [
            LedgerError::Unavailable("x".into()),
            LedgerError::NotFound("x".into()),
            LedgerError::Rpc { code: -32010, message: "x".into() },
        ] {
            let back = LedgerError::from_rpc_error(e.to_rpc_error());
            assert_eq!(std::mem::discriminant(&back), std::mem::discriminant(&e), "{e:?}");
        }
        assert_eq!(LedgerError::Invalid("x".into()).to_rpc_error().code, INVALID_PARAMS);
    }

    #[test]
    fn serves_the_nonce_search_and_refuses_other_program_account_searches() {
        // The demo's `outsider_nonce` archetype: one nonce account someone else created for it.
        const NAMED: &str = "35ze1eichArCaQ3iD7t1KaQKvw7cYksCc8G5PBdVUiVX";
        let search = |program: &str, filters: Value, with_context: bool| {
            let config = json!({"encoding": "jsonParsed", "withContext": with_context, "filters": filters});
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "getProgramAccounts", "params": [program, config]});
            ask(&simd_json::to_string(&body).unwrap())
        };
        let nonce_filters = |offset: u64, authority: &str| json!([{"memcmp": {"offset": offset, "bytes": authority}}, {"dataSize": 80}]);
        let plain = search(ids::SYSTEM, nonce_filters(8, NAMED), false);
        let list = plain.get("result").and_then(|r| r.as_array()).unwrap();
        assert_eq!(list.len(), 1);
        let info = list[0].get("account").and_then(|a| a.get("data")).and_then(|d| d.get("parsed")).unwrap();
        assert_eq!(info.get("info").and_then(|i| i.get("authority")).and_then(|a| a.as_str()), Some(NAMED));
        let with_context = search(ids::SYSTEM, nonce_filters(8, NAMED), true);
        let result = with_context.get("result").unwrap();
        assert!(result.get("context").is_some());
        assert_eq!(result.get("value").and_then(|v| v.as_array()).map(Vec::len), Some(1));
        assert_eq!(
            search(ids::SYSTEM, nonce_filters(8, W), false).get("result").and_then(|r| r.as_array()).map(Vec::len),
            Some(0)
        );
        for refused in [
            search(ids::TOKEN, nonce_filters(8, NAMED), false),
            search(ids::SYSTEM, nonce_filters(40, NAMED), false),
            search(ids::SYSTEM, json!([{"dataSize": 80}]), false),
            search(ids::SYSTEM, nonce_filters(8, "not-an-address"), false),
        ] {
            assert_eq!(code(&refused), Some(INVALID_PARAMS), "{refused:?}");
        }
    }
}
