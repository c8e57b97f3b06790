//! Solana JSON-RPC wire types: exactly what an RPC node sends, for the methods the ledger
//! layer uses, parsed with simd-json.
//!
//! Owns: the serde structs of `getAccountInfo`, `getMultipleAccounts`, `getBalance`,
//! `getTokenAccountsByOwner`, `getSignaturesForAddress`, `getTransaction` and `getBlock`
//! responses (jsonParsed, and the plain `json` encoding the fixtures also use), the JSON-RPC
//! envelope and its error object. Called from compute threads (sources) and the CLI.
//!
//! Invariant: every struct both reads and writes the real wire shape, so the demo ledger and
//! the snapshot writer emit what a node emits. Fields a node may omit or send as `null` are
//! `Option` or defaulted; parsing a well-formed response never fails on an unknown program,
//! instruction type or extension (those stay raw `Value`s). Deliberately absent: meaning.
//! Turning these into the domain model is `ledger::model` / `ledger::instruction`'s job.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
pub use simd_json::OwnedValue as Value;

use crate::ledger::LedgerError;

/// The JSON-RPC 2.0 envelope of one response.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcResponse<T> {
    #[serde(default = "jsonrpc_version")]
    pub jsonrpc: String,
    #[serde(default)]
    pub id: Value,
    #[serde(default = "Option::default", skip_serializing_if = "Option::is_none")]
    pub result: Option<T>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcErrorObject>,
}

fn jsonrpc_version() -> String {
    "2.0".to_owned()
}

impl<T> RpcResponse<T> {
    pub fn ok(id: Value, result: T) -> Self {
        RpcResponse { jsonrpc: jsonrpc_version(), id, result: Some(result), error: None }
    }

    /// The result, or the typed error the node answered with. A response with neither a
    /// result nor an error is malformed; a `null` result is `Ok(None)`.
    pub fn into_result(self) -> Result<Option<T>, LedgerError> {
        match (self.result, self.error) {
            (_, Some(e)) => Err(LedgerError::from_rpc_error(e)),
            (r, None) => Ok(r),
        }
    }
}

/// A JSON-RPC error object (`{"code": -32602, "message": "…"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// One request of a JSON-RPC call or batch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcRequest {
    #[serde(default = "jsonrpc_version")]
    pub jsonrpc: String,
    #[serde(default)]
    pub id: Value,
    pub method: String,
    #[serde(default)]
    pub params: Value,
}

/// `{"context": {"slot": …}, "value": …}` wrapper of most account methods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WithContext<T> {
    pub context: RpcContext,
    pub value: T,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RpcContext {
    pub slot: u64,
}

/// An account as `getAccountInfo` / `getMultipleAccounts` / `getTokenAccountsByOwner`
/// return it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiAccount {
    pub lamports: u64,
    pub owner: String,
    pub data: UiAccountData,
    pub executable: bool,
    #[serde(default)]
    pub rent_epoch: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub space: Option<u64>,
}

/// Account data: parsed by the node (`jsonParsed` and a known program) or encoded bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// Order matters: serde reads a struct from an array too, so `Binary` (an array of two
// strings) is tried before `Parsed` (an object).
#[serde(untagged)]
pub enum UiAccountData {
    /// `["<data>", "base64"]`
    Binary(Vec<String>),
    Parsed(ParsedAccountData),
    /// Legacy bare base58 string.
    LegacyBinary(String),
}

impl UiAccountData {
    /// Size of the data in bytes when the node says it (parsed) or it can be decoded.
    pub fn parsed(&self) -> Option<&ParsedAccountData> {
        match self {
            UiAccountData::Parsed(p) => Some(p),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedAccountData {
    pub program: String,
    pub parsed: Value,
    #[serde(default)]
    pub space: u64,
}

/// One entry of `getTokenAccountsByOwner`'s value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeyedAccount {
    pub pubkey: String,
    pub account: UiAccount,
}

/// One entry of `getSignaturesForAddress`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignatureInfo {
    pub signature: String,
    pub slot: u64,
    #[serde(default)]
    pub err: Option<Value>,
    #[serde(default)]
    pub memo: Option<String>,
    #[serde(default)]
    pub block_time: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmation_status: Option<String>,
}

/// `getTransaction`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionResult {
    pub slot: u64,
    #[serde(default)]
    pub block_time: Option<i64>,
    #[serde(flatten)]
    pub tx: TransactionWithMeta,
}

/// The per-transaction object shared by `getTransaction` and `getBlock`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TransactionWithMeta {
    pub transaction: UiTransaction,
    #[serde(default)]
    pub meta: Option<UiMeta>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<UiTransactionVersion>,
}

/// `"legacy"` or a number (0).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UiTransactionVersion {
    Number(u8),
    Legacy(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiTransaction {
    pub signatures: Vec<String>,
    pub message: UiMessage,
}

/// The message, jsonParsed (account keys as objects) or raw (`json` encoding: strings and a
/// header). The parsed variant is tried first: its keys are objects, which a raw message
/// never has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UiMessage {
    Parsed(ParsedMessage),
    Raw(RawMessage),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedMessage {
    pub account_keys: Vec<ParsedAccountKey>,
    pub recent_blockhash: String,
    pub instructions: Vec<UiInstruction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_table_lookups: Option<Vec<AddressTableLookup>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ParsedAccountKey {
    pub pubkey: String,
    pub signer: bool,
    pub writable: bool,
    /// `"transaction"` or `"lookupTable"`; absent on older nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawMessage {
    pub header: MessageHeader,
    pub account_keys: Vec<String>,
    pub recent_blockhash: String,
    pub instructions: Vec<UiInstruction>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address_table_lookups: Option<Vec<AddressTableLookup>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageHeader {
    pub num_required_signatures: u8,
    pub num_readonly_signed_accounts: u8,
    pub num_readonly_unsigned_accounts: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AddressTableLookup {
    pub account_key: String,
    pub writable_indexes: Vec<u8>,
    pub readonly_indexes: Vec<u8>,
}

/// One instruction as the node renders it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UiInstruction {
    /// A known program's instruction, decoded by the node (`parsed` is an object with
    /// `type` and `info`, or a bare string for memos).
    Parsed(ParsedInstruction),
    /// jsonParsed encoding of a program the node does not decode.
    PartiallyDecoded(PartiallyDecodedInstruction),
    /// `json` encoding: indices into the account keys.
    Compiled(CompiledInstruction),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParsedInstruction {
    pub program: String,
    pub program_id: String,
    pub parsed: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_height: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartiallyDecodedInstruction {
    pub program_id: String,
    pub accounts: Vec<String>,
    pub data: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_height: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompiledInstruction {
    pub program_id_index: u8,
    pub accounts: Vec<u8>,
    pub data: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack_height: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiMeta {
    #[serde(default)]
    pub err: Option<Value>,
    #[serde(default)]
    pub fee: u64,
    #[serde(default)]
    pub pre_balances: Vec<u64>,
    #[serde(default)]
    pub post_balances: Vec<u64>,
    #[serde(default)]
    pub inner_instructions: Option<Vec<InnerInstructions>>,
    #[serde(default)]
    pub pre_token_balances: Option<Vec<UiTokenBalance>>,
    #[serde(default)]
    pub post_token_balances: Option<Vec<UiTokenBalance>>,
    #[serde(default)]
    pub log_messages: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_addresses: Option<LoadedAddresses>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_units_consumed: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InnerInstructions {
    pub index: u8,
    pub instructions: Vec<UiInstruction>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadedAddresses {
    #[serde(default)]
    pub writable: Vec<String>,
    #[serde(default)]
    pub readonly: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiTokenBalance {
    pub account_index: u8,
    pub mint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_id: Option<String>,
    pub ui_token_amount: UiTokenAmount,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiTokenAmount {
    pub amount: String,
    pub decimals: u8,
    #[serde(default)]
    pub ui_amount: Option<f64>,
    #[serde(default)]
    pub ui_amount_string: String,
}

/// `getBlock`'s result (fixtures and `xray ledger inspect`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UiBlock {
    #[serde(default)]
    pub block_height: Option<u64>,
    #[serde(default)]
    pub block_time: Option<i64>,
    pub blockhash: String,
    pub parent_slot: u64,
    pub previous_blockhash: String,
    #[serde(default)]
    pub transactions: Vec<TransactionWithMeta>,
}

/// Parses a JSON-RPC response body. simd-json works in place, so it takes the bytes mutably.
pub fn parse_response<T: DeserializeOwned>(body: &mut [u8]) -> Result<RpcResponse<T>, LedgerError> {
    simd_json::serde::from_slice(body).map_err(|e| LedgerError::Malformed(e.to_string()))
}

/// Parses any JSON document into `T` (bare results, snapshot files).
pub fn parse<T: DeserializeOwned>(body: &mut [u8]) -> Result<T, LedgerError> {
    simd_json::serde::from_slice(body).map_err(|e| LedgerError::Malformed(e.to_string()))
}

/// Serializes a wire value to JSON bytes.
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, LedgerError> {
    simd_json::serde::to_vec(value).map_err(|e| LedgerError::Malformed(e.to_string()))
}

/// Serializes a wire value to indented JSON (files people read).
pub fn to_vec_pretty<T: Serialize>(value: &T) -> Result<Vec<u8>, LedgerError> {
    simd_json::serde::to_vec_pretty(value).map_err(|e| LedgerError::Malformed(e.to_string()))
}
