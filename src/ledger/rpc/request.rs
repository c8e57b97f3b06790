//! JSON-RPC request bodies, exactly as a Solana node expects them.
//!
//! Owns: the method names and `params` arrays of the calls the rpc source makes, and their
//! serialization as one request or as a batch. Called from the thread that owns the source;
//! pure functions.
//!
//! Invariant: every account read asks for `jsonParsed`, and `getTransaction` also sends
//! `maxSupportedTransactionVersion: 0` (without it a node refuses v0 transactions). The
//! `params` shapes here are the ones the local server (`rpc_server`) accepts. Deliberately
//! absent: `minContextSlot` and `dataSlice` (the fetch plan never needs them).
//! Invariant: `getSignaturesForAddress` and `getTransaction` ask for `finalized` commitment
//! (a node's default, said outright): what they answer never changes, which is what lets
//! `ledger::cache` keep it.

use simd_json::json;

use crate::ledger::instruction::ids;
use crate::ledger::model::{TokenProgram, NONCE_ACCOUNT_DATA_LEN, NONCE_AUTHORITY_OFFSET};
use crate::ledger::wire::{self, RpcRequest, Value};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

pub const GET_ACCOUNT_INFO: &str = "getAccountInfo";
pub const GET_MULTIPLE_ACCOUNTS: &str = "getMultipleAccounts";
pub const GET_TOKEN_ACCOUNTS_BY_OWNER: &str = "getTokenAccountsByOwner";
pub const GET_PROGRAM_ACCOUNTS: &str = "getProgramAccounts";
pub const GET_SIGNATURES_FOR_ADDRESS: &str = "getSignaturesForAddress";
pub const GET_TRANSACTION: &str = "getTransaction";
pub const SIMULATE_TRANSACTION: &str = "simulateTransaction";

pub fn account_info_params(address: &Pubkey) -> Value {
    json!([address.to_string(), {"encoding": "jsonParsed", "commitment": "confirmed"}])
}

pub fn multiple_accounts_params(addresses: &[Pubkey]) -> Value {
    let addresses: Vec<String> = addresses.iter().map(Pubkey::to_string).collect();
    json!([addresses, {"encoding": "jsonParsed"}])
}

/// `getMultipleAccounts` of the accounts' bytes (what the in-process runtime executes on), the
/// first `head` bytes of each only when given (`dataSlice`).
pub fn multiple_accounts_base64_params(addresses: &[Pubkey], head: Option<usize>) -> Value {
    let addresses: Vec<String> = addresses.iter().map(Pubkey::to_string).collect();
    match head {
        None => json!([addresses, {"encoding": "base64"}]),
        Some(length) => json!([addresses, {"encoding": "base64", "dataSlice": {"offset": 0, "length": length}}]),
    }
}

pub fn token_accounts_by_owner_params(owner: &Pubkey, program: TokenProgram) -> Value {
    json!([owner.to_string(), {"programId": program.id()}, {"encoding": "jsonParsed"}])
}

/// `getProgramAccounts` of the System program filtered to nonce accounts naming `authority`.
pub fn nonce_accounts_by_authority_params(authority: &Pubkey) -> Value {
    json!([ids::SYSTEM, {
        "encoding": "jsonParsed",
        "withContext": true,
        "filters": [
            {"dataSize": NONCE_ACCOUNT_DATA_LEN},
            {"memcmp": {"offset": NONCE_AUTHORITY_OFFSET, "bytes": authority.to_string()}}
        ]
    }])
}

/// `until`: only signatures newer than it (a cursor of what was already seen).
pub fn signatures_for_address_params(
    address: &Pubkey,
    before: Option<&Signature>,
    until: Option<&Signature>,
    limit: u32,
) -> Value {
    let config = match (before, until) {
        (None, None) => json!({"limit": limit, "commitment": "finalized"}),
        (Some(b), None) => json!({"limit": limit, "commitment": "finalized", "before": b.to_string()}),
        (None, Some(u)) => json!({"limit": limit, "commitment": "finalized", "until": u.to_string()}),
        (Some(b), Some(u)) => {
            json!({"limit": limit, "commitment": "finalized", "before": b.to_string(), "until": u.to_string()})
        }
    };
    json!([address.to_string(), config])
}

/// `simulateTransaction` as a pre-sign scan asks it: no signature check (the user has not
/// signed yet), the blockhash replaced (an old one must not fail the simulation), and the
/// post-state of `accounts` in the same encoding and at the same (the node's default)
/// commitment as the account read it is compared with.
pub fn simulate_params(transaction: &[u8], accounts: &[Pubkey]) -> Value {
    use base64::Engine as _;
    let addresses: Vec<String> = accounts.iter().map(Pubkey::to_string).collect();
    json!([base64::engine::general_purpose::STANDARD.encode(transaction), {
        "encoding": "base64", "sigVerify": false, "replaceRecentBlockhash": true,
        "accounts": {"addresses": addresses, "encoding": "jsonParsed"}
    }])
}

pub fn transaction_params(signature: &Signature) -> Value {
    json!([signature.to_string(), {"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0, "commitment": "finalized"}])
}

fn request(id: u64, method: &str, params: Value) -> RpcRequest {
    RpcRequest { jsonrpc: "2.0".to_owned(), id: Value::from(id), method: method.to_owned(), params }
}

/// One request: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
pub fn body(id: u64, method: &str, params: Value) -> Result<Vec<u8>, LedgerError> {
    wire::to_vec(&request(id, method, params))
}

/// A batch: a JSON array of requests, answered by an array matched back by `id`.
pub fn batch_body<'a>(calls: impl Iterator<Item = (u64, &'a str, Value)>) -> Result<Vec<u8>, LedgerError> {
    let requests: Vec<RpcRequest> = calls.map(|(id, method, params)| request(id, method, params)).collect();
    wire::to_vec(&requests)
}

#[cfg(test)]
mod tests {
    use simd_json::prelude::*;

    use super::*;

    const WALLET: &str = "5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd";
    const SIG: &str = "2xRnwfAMxAvv5z2eiWC1YCR6bdcPj7ebPRTKFiFZuBHvWNc8QjM33W4Ev71T8C18g3yARJcHtMzC3VWTdASDybkU";

    fn parsed(mut bytes: Vec<u8>) -> Value {
        simd_json::to_owned_value(&mut bytes).unwrap()
    }

    fn wallet() -> Pubkey {
        Pubkey::parse(WALLET).unwrap()
    }

    #[test]
    fn builds_single_requests() {
        let got = parsed(body(7, GET_ACCOUNT_INFO, account_info_params(&wallet())).unwrap());
        let want = json!({"jsonrpc": "2.0", "id": 7, "method": "getAccountInfo",
            "params": [WALLET, {"encoding": "jsonParsed", "commitment": "confirmed"}]});
        assert_eq!(got, want);
    }

    #[test]
    fn builds_params_of_every_method() {
        let w = wallet();
        assert_eq!(multiple_accounts_params(&[w, w]), json!([[WALLET, WALLET], {"encoding": "jsonParsed"}]));
        assert_eq!(
            token_accounts_by_owner_params(&w, TokenProgram::Token2022),
            json!([WALLET, {"programId": "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"}, {"encoding": "jsonParsed"}])
        );
        assert_eq!(
            nonce_accounts_by_authority_params(&w),
            json!(["11111111111111111111111111111111", {"encoding": "jsonParsed", "withContext": true,
                "filters": [{"dataSize": 80}, {"memcmp": {"offset": 8, "bytes": WALLET}}]}])
        );
        let finalized = "finalized";
        assert_eq!(
            signatures_for_address_params(&w, None, None, 10),
            json!([WALLET, {"limit": 10, "commitment": finalized}])
        );
        let sig = Signature::parse(SIG).unwrap();
        assert_eq!(
            signatures_for_address_params(&w, Some(&sig), None, 3),
            json!([WALLET, {"limit": 3, "commitment": finalized, "before": SIG}])
        );
        assert_eq!(
            signatures_for_address_params(&w, Some(&sig), Some(&sig), 3),
            json!([WALLET, {"limit": 3, "commitment": finalized, "before": SIG, "until": SIG}])
        );
        assert_eq!(
            transaction_params(&sig),
            json!([SIG, {"encoding": "jsonParsed", "maxSupportedTransactionVersion": 0, "commitment": finalized}])
        );
    }

    #[test]
    fn builds_batches_in_order() {
        let sig = Signature::parse(SIG).unwrap();
        let calls = (10..13).map(|id| (id, GET_TRANSACTION, transaction_params(&sig)));
        let got = parsed(batch_body(calls).unwrap());
        let items = got.as_array().unwrap();
        assert_eq!(items.len(), 3);
        for (item, id) in items.iter().zip(10u64..) {
            assert_eq!(item.get("id").and_then(|v| v.as_u64()), Some(id));
            assert_eq!(item.get("method").and_then(|v| v.as_str()), Some("getTransaction"));
        }
    }
}
