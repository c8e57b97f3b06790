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
//!
//! Invariant: nothing recursive reads a document nested deeper than
//! `config::LEDGER_JSON_DEPTH_MAX` (checked on simd-json's flat tape first).
//! Invariant: no reading buffers a subtree. serde's `untagged` and `flatten` read a whole
//! object into an intermediate tree and then try each shape against it (measured: a quarter
//! of a getTransaction decode); so the enums here write untagged but read in one pass — by
//! JSON type where the type decides (`TextOr`, `UiAccountData`), by a superset of the
//! variants' fields where only the fields do (`UiMessage`, `UiInstruction`). The visitors
//! are statically dispatched: `serde_untagged`'s type erasure cost a tenth of the decode.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{DeserializeOwned, Error as _, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use simd_json::tape::Node;
pub use simd_json::OwnedValue as Value;

use crate::config::{self, TX_ACCOUNTS_MAX, TX_INSTRUCTIONS_MAX, TX_INSTRUCTION_ACCOUNTS_MAX, TX_LOG_MESSAGES_MAX};
use crate::ledger::bounded;
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

/// Account data: parsed by the node (`jsonParsed` and a known program) or encoded bytes;
/// read by JSON type (array, object, string).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UiAccountData {
    /// `["<data>", "base64"]`
    Binary(Vec<String>),
    Parsed(ParsedAccountData),
    /// Legacy bare base58 string.
    LegacyBinary(String),
}

impl<'de> Deserialize<'de> for UiAccountData {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(AccountDataVisitor)
    }
}

struct AccountDataVisitor;

impl<'de> Visitor<'de> for AccountDataVisitor {
    type Value = UiAccountData;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("account data: an array, an object or a string")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<UiAccountData, E> {
        Ok(UiAccountData::LegacyBinary(text.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<UiAccountData, A::Error> {
        Deserialize::deserialize(SeqAccessDeserializer::new(seq)).map(UiAccountData::Binary)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<UiAccountData, A::Error> {
        Deserialize::deserialize(MapAccessDeserializer::new(map)).map(UiAccountData::Parsed)
    }
}

/// A JSON string, or any other shape, which `T` reads: one pass, statically dispatched.
enum TextOr<T> {
    Text(String),
    Other(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for TextOr<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TextOrVisitor(PhantomData))
    }
}

struct TextOrVisitor<T>(PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for TextOrVisitor<T> {
    type Value = TextOr<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string, a number, an array or an object")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<TextOr<T>, E> {
        Ok(TextOr::Text(text.to_owned()))
    }

    fn visit_string<E: serde::de::Error>(self, text: String) -> Result<TextOr<T>, E> {
        Ok(TextOr::Text(text))
    }

    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<TextOr<T>, E> {
        T::deserialize(n.into_deserializer()).map(TextOr::Other)
    }

    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<TextOr<T>, E> {
        T::deserialize(n.into_deserializer()).map(TextOr::Other)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TextOr<T>, A::Error> {
        T::deserialize(SeqAccessDeserializer::new(seq)).map(TextOr::Other)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TextOr<T>, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(TextOr::Other)
    }
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

impl<T> TextOr<T> {
    fn text(self) -> Option<String> {
        match self {
            TextOr::Text(text) => Some(text),
            TextOr::Other(_) => None,
        }
    }

    fn other(self) -> Option<T> {
        match self {
            TextOr::Other(other) => Some(other),
            TextOr::Text(_) => None,
        }
    }
}

/// `getTransaction`'s result: the block's slot and time beside a transaction object's fields.
/// Written with `flatten`; read through `TransactionResultWire` (one pass, see module doc).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "TransactionResultWire")]
pub struct TransactionResult {
    pub slot: u64,
    #[serde(default)]
    pub block_time: Option<i64>,
    #[serde(flatten)]
    pub tx: TransactionWithMeta,
}

/// `TransactionResult` as read: every field at one level.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TransactionResultWire {
    slot: u64,
    #[serde(default)]
    block_time: Option<i64>,
    transaction: UiTransaction,
    #[serde(default)]
    meta: Option<UiMeta>,
    #[serde(default)]
    version: Option<UiTransactionVersion>,
}

impl From<TransactionResultWire> for TransactionResult {
    fn from(w: TransactionResultWire) -> Self {
        let tx = TransactionWithMeta { transaction: w.transaction, meta: w.meta, version: w.version };
        TransactionResult { slot: w.slot, block_time: w.block_time, tx }
    }
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
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UiTransactionVersion {
    Number(u8),
    Legacy(String),
}

impl<'de> Deserialize<'de> for UiTransactionVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match TextOr::<u8>::deserialize(deserializer)? {
            TextOr::Other(n) => UiTransactionVersion::Number(n),
            TextOr::Text(text) => UiTransactionVersion::Legacy(text),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UiTransaction {
    #[serde(deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub signatures: Vec<String>,
    pub message: UiMessage,
}

/// The message, jsonParsed (account keys as objects) or raw (`json` encoding: strings and a
/// header). Read through `MessageWire`: keys all objects (or none) → parsed, as the untagged
/// order had it; all strings and a header → raw.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum UiMessage {
    Parsed(ParsedMessage),
    Raw(RawMessage),
}

/// Either message's fields, as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageWire {
    #[serde(default)]
    header: Option<MessageHeader>,
    #[serde(deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    account_keys: Vec<AccountKeyWire>,
    recent_blockhash: String,
    #[serde(deserialize_with = "bounded::vec_max::<_, _, TX_INSTRUCTIONS_MAX>")]
    instructions: Vec<UiInstruction>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    address_table_lookups: Option<Vec<AddressTableLookup>>,
}

/// One entry of `accountKeys`: an object (jsonParsed) or a string (`json`).
type AccountKeyWire = TextOr<ParsedAccountKey>;

impl MessageWire {
    fn into_message(self) -> Result<UiMessage, &'static str> {
        let MessageWire { header, account_keys, recent_blockhash, instructions, address_table_lookups } = self;
        if account_keys.iter().all(|k| matches!(k, TextOr::Other(_))) {
            let account_keys = account_keys.into_iter().filter_map(TextOr::other).collect();
            return Ok(UiMessage::Parsed(ParsedMessage {
                account_keys,
                recent_blockhash,
                instructions,
                address_table_lookups,
            }));
        }
        let header = header.ok_or("a message with string account keys needs a header")?;
        let account_keys = account_keys
            .into_iter()
            .map(TextOr::text)
            .collect::<Option<Vec<String>>>()
            .ok_or("a message mixes object and string account keys")?;
        Ok(UiMessage::Raw(RawMessage { header, account_keys, recent_blockhash, instructions, address_table_lookups }))
    }
}

impl<'de> Deserialize<'de> for UiMessage {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        MessageWire::deserialize(deserializer)?.into_message().map_err(D::Error::custom)
    }
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
    #[serde(deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub writable_indexes: Vec<u8>,
    #[serde(deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub readonly_indexes: Vec<u8>,
}

/// One instruction as the node renders it. Read through `InstructionWire`, in the untagged
/// order: `parsed` → parsed; else `programId`, string accounts and `data` → partially
/// decoded; else `programIdIndex`, index accounts and `data` → compiled.
#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// Every instruction shape's fields, as read.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InstructionWire {
    #[serde(default)]
    program: Option<String>,
    #[serde(default)]
    program_id: Option<String>,
    /// `Some(Null)` for an explicit `null`, as the parsed shape took it.
    #[serde(default, deserialize_with = "present")]
    parsed: Option<Value>,
    #[serde(default)]
    program_id_index: Option<u8>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_INSTRUCTION_ACCOUNTS_MAX>")]
    accounts: Option<Vec<AccountRefWire>>,
    #[serde(default)]
    data: Option<String>,
    #[serde(default)]
    stack_height: Option<u32>,
}

fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

/// One entry of an instruction's `accounts`: an address (jsonParsed) or an index (`json`).
type AccountRefWire = TextOr<u8>;

impl InstructionWire {
    fn into_instruction(self) -> Result<UiInstruction, &'static str> {
        let InstructionWire { program, program_id, parsed, program_id_index, accounts, data, stack_height } = self;
        let program_id = match (program, program_id, parsed) {
            (Some(program), Some(program_id), Some(parsed)) => {
                return Ok(UiInstruction::Parsed(ParsedInstruction { program, program_id, parsed, stack_height }));
            }
            (_, program_id, _) => program_id,
        };
        let (accounts, data) = accounts.zip(data).ok_or("an unparsed instruction needs `accounts` and `data`")?;
        let all_keys = accounts.iter().all(|a| matches!(a, TextOr::Text(_)));
        if let (Some(program_id), true) = (program_id, all_keys) {
            let accounts = accounts.into_iter().filter_map(TextOr::text).collect();
            return Ok(UiInstruction::PartiallyDecoded(PartiallyDecodedInstruction {
                program_id,
                accounts,
                data,
                stack_height,
            }));
        }
        let program_id_index =
            program_id_index.ok_or("an instruction needs `parsed`, `programId` or `programIdIndex`")?;
        let accounts = accounts
            .into_iter()
            .map(TextOr::other)
            .collect::<Option<Vec<u8>>>()
            .ok_or("a compiled instruction's accounts are indices")?;
        Ok(UiInstruction::Compiled(CompiledInstruction { program_id_index, accounts, data, stack_height }))
    }
}

impl<'de> Deserialize<'de> for UiInstruction {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        InstructionWire::deserialize(deserializer)?.into_instruction().map_err(D::Error::custom)
    }
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
    #[serde(default, deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub pre_balances: Vec<u64>,
    #[serde(default, deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub post_balances: Vec<u64>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_INSTRUCTIONS_MAX>")]
    pub inner_instructions: Option<Vec<InnerInstructions>>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub pre_token_balances: Option<Vec<UiTokenBalance>>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub post_token_balances: Option<Vec<UiTokenBalance>>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_LOG_MESSAGES_MAX>")]
    pub log_messages: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_addresses: Option<LoadedAddresses>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_units_consumed: Option<u64>,
}

/// The `value` of `simulateTransaction`: the outcome and the post-state of the accounts asked
/// for (`accounts.addresses`, in order; `null` where the account does not exist after it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulateValue {
    #[serde(default)]
    pub err: Option<Value>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_LOG_MESSAGES_MAX>")]
    pub logs: Option<Vec<String>>,
    #[serde(default, deserialize_with = "bounded::opt_vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub accounts: Option<Vec<Option<UiAccount>>>,
    #[serde(default)]
    pub units_consumed: Option<u64>,
    /// The fee it pays, lamports — paid also when it fails (a node of Agave 2.2 or later
    /// answers it; the demo always does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee: Option<u64>,
    /// Who executed it. Not on the wire (a node never sends it): set by the source that
    /// answered, read into the scan's `simulation.answeredBy`.
    #[serde(skip)]
    pub executor: Option<Executor>,
}

/// Who executed a simulation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Executor {
    /// The real runtime in process, on the source's accounts (`crate::runtime`).
    Runtime,
    /// The node's `simulateTransaction`; `runtime_skipped` says why the runtime in process did
    /// not answer, when it was tried.
    Node { runtime_skipped: Option<String> },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InnerInstructions {
    pub index: u8,
    #[serde(deserialize_with = "bounded::vec_max::<_, _, TX_INSTRUCTIONS_MAX>")]
    pub instructions: Vec<UiInstruction>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LoadedAddresses {
    #[serde(default, deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
    pub writable: Vec<String>,
    #[serde(default, deserialize_with = "bounded::vec_max::<_, _, TX_ACCOUNTS_MAX>")]
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
    parse(body)
}

/// Parses any JSON document into `T` (bare results, snapshot files): simd-json's tape first (a
/// flat list, built without recursion), its nesting checked against
/// `config::LEDGER_JSON_DEPTH_MAX`, then the recursive typed read.
pub fn parse<T: DeserializeOwned>(body: &mut [u8]) -> Result<T, LedgerError> {
    let malformed = |e: simd_json::Error| LedgerError::Malformed(e.to_string());
    let tape = simd_json::to_tape(body).map_err(malformed)?;
    check_depth(&tape.0, config::LEDGER_JSON_DEPTH_MAX)?;
    tape.deserialize().map_err(malformed)
}

/// Refuses a tape whose arrays and objects nest deeper than `depth_max`. One pass over the
/// nodes; memory bounded by `depth_max` (the end of each open container).
fn check_depth(nodes: &[Node<'_>], depth_max: usize) -> Result<(), LedgerError> {
    let mut open_ends: Vec<usize> = Vec::with_capacity(depth_max.min(NESTING_PREALLOCATED));
    for (i, node) in nodes.iter().enumerate() {
        while open_ends.last().is_some_and(|&end| i >= end) {
            open_ends.pop();
        }
        if let Node::Object { count, .. } | Node::Array { count, .. } = node {
            if open_ends.len() == depth_max {
                return Err(LedgerError::Malformed(format!("JSON nested deeper than {depth_max} levels")));
            }
            // A container's `count` nodes (members, keys of objects included) follow it.
            open_ends.push(i.saturating_add(1).saturating_add(*count));
        }
    }
    Ok(())
}

/// Nesting levels `check_depth` makes room for up front (real answers stay well inside).
const NESTING_PREALLOCATED: usize = 16;

/// Serializes a wire value to JSON bytes.
pub fn to_vec<T: Serialize>(value: &T) -> Result<Vec<u8>, LedgerError> {
    simd_json::serde::to_vec(value).map_err(|e| LedgerError::Malformed(e.to_string()))
}

/// Serializes a wire value to indented JSON (files people read).
pub fn to_vec_pretty<T: Serialize>(value: &T) -> Result<Vec<u8>, LedgerError> {
    simd_json::serde::to_vec_pretty(value).map_err(|e| LedgerError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use simd_json::prelude::*;

    use super::*;

    fn read<T: DeserializeOwned>(json: &str) -> Result<T, LedgerError> {
        parse(&mut json.as_bytes().to_vec())
    }

    const KEY: &str = "11111111111111111111111111111111";

    #[test]
    fn instructions_read_in_the_untagged_order() {
        let parsed =
            format!(r#"{{"program":"system","programId":"{KEY}","parsed":{{"type":"transfer"}},"stackHeight":1}}"#);
        assert!(matches!(read::<UiInstruction>(&parsed), Ok(UiInstruction::Parsed(p)) if p.stack_height == Some(1)));
        // An explicit null `parsed` is still the parsed shape, as the derived untagged enum read it.
        let null = format!(r#"{{"program":"spl-memo","programId":"{KEY}","parsed":null}}"#);
        assert!(matches!(read::<UiInstruction>(&null), Ok(UiInstruction::Parsed(p)) if p.parsed.is_null()));
        let partial = format!(r#"{{"programId":"{KEY}","accounts":["{KEY}"],"data":"3Bxs"}}"#);
        assert!(
            matches!(read::<UiInstruction>(&partial), Ok(UiInstruction::PartiallyDecoded(p)) if p.accounts == [KEY])
        );
        let compiled = r#"{"programIdIndex":2,"accounts":[0,1],"data":"3Bxs","stackHeight":null}"#;
        assert!(matches!(read::<UiInstruction>(compiled), Ok(UiInstruction::Compiled(c)) if c.accounts == [0, 1]));
        let empty = format!(r#"{{"programId":"{KEY}","accounts":[],"data":""}}"#);
        assert!(matches!(read::<UiInstruction>(&empty), Ok(UiInstruction::PartiallyDecoded(_))));
    }

    #[test]
    fn instructions_of_no_shape_are_refused() {
        for bad in [
            r#"{"programIdIndex":2,"accounts":["x"],"data":""}"#.to_owned(),
            r#"{"programIdIndex":2,"accounts":[0,"x"],"data":""}"#.to_owned(),
            r#"{"programIdIndex":300,"accounts":[0],"data":""}"#.to_owned(),
            format!(r#"{{"programId":"{KEY}","accounts":[0]}}"#),
            r#"{"data":""}"#.to_owned(),
            "[]".to_owned(),
        ] {
            assert!(read::<UiInstruction>(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn messages_read_by_their_keys() {
        let body = r#""recentBlockhash":"h","instructions":[]"#;
        let parsed = format!(r#"{{"accountKeys":[{{"pubkey":"{KEY}","signer":true,"writable":true}}],{body}}}"#);
        assert!(matches!(read::<UiMessage>(&parsed), Ok(UiMessage::Parsed(m)) if m.account_keys[0].signer));
        let header =
            r#""header":{"numRequiredSignatures":1,"numReadonlySignedAccounts":0,"numReadonlyUnsignedAccounts":0}"#;
        let raw = format!(r#"{{{header},"accountKeys":["{KEY}"],{body}}}"#);
        assert!(matches!(read::<UiMessage>(&raw), Ok(UiMessage::Raw(m)) if m.account_keys == [KEY]));
        let empty = format!(r#"{{{header},"accountKeys":[],{body}}}"#);
        assert!(matches!(read::<UiMessage>(&empty), Ok(UiMessage::Parsed(_))));
        let headless = format!(r#"{{"accountKeys":["{KEY}"],{body}}}"#);
        assert!(read::<UiMessage>(&headless).is_err());
        let mixed = format!(
            r#"{{{header},"accountKeys":["{KEY}",{{"pubkey":"{KEY}","signer":true,"writable":true}}],{body}}}"#
        );
        assert!(read::<UiMessage>(&mixed).is_err());
    }

    #[test]
    fn account_data_and_versions_read_by_json_type() {
        assert!(matches!(read::<UiAccountData>(r#"["AAE=","base64"]"#), Ok(UiAccountData::Binary(v)) if v.len() == 2));
        let parsed = r#"{"program":"spl-token","parsed":{"type":"account"},"space":165}"#;
        assert!(matches!(read::<UiAccountData>(parsed), Ok(UiAccountData::Parsed(p)) if p.space == 165));
        assert!(matches!(read::<UiAccountData>(r#""3Bxs""#), Ok(UiAccountData::LegacyBinary(s)) if s == "3Bxs"));
        assert!(read::<UiAccountData>("7").is_err());
        assert_eq!(read::<UiTransactionVersion>("0").ok(), Some(UiTransactionVersion::Number(0)));
        assert_eq!(
            read::<UiTransactionVersion>(r#""legacy""#).ok(),
            Some(UiTransactionVersion::Legacy("legacy".into()))
        );
        assert!(read::<UiTransactionVersion>("256").is_err());
    }

    #[test]
    fn transaction_results_round_trip_one_level() {
        let header =
            r#""header":{"numRequiredSignatures":1,"numReadonlySignedAccounts":0,"numReadonlyUnsignedAccounts":0}"#;
        let json = format!(
            r#"{{"slot":7,"blockTime":null,"version":0,"meta":null,"transaction":{{"signatures":["s"],"message":{{{header},"accountKeys":["{KEY}"],"recentBlockhash":"h","instructions":[{{"programIdIndex":0,"accounts":[],"data":""}}]}}}}}}"#
        );
        let result: TransactionResult = read(&json).expect("reads");
        assert_eq!(
            (result.slot, result.block_time, result.tx.version.clone()),
            (7, None, Some(UiTransactionVersion::Number(0)))
        );
        let again: TransactionResult = parse(&mut to_vec(&result).expect("writes")).expect("reads back");
        assert_eq!(again, result);
    }
}

#[cfg(test)]
mod depth_tests {
    use proptest::prelude::*;

    use super::*;

    /// Nesting of arrays and objects by recursion over the bytes' structure (the reference).
    fn nesting(json: &str) -> usize {
        let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
        for c in json.chars() {
            match (in_string, escaped, c) {
                (true, true, _) => escaped = false,
                (true, false, '\\') => escaped = true,
                (true, false, '"') | (false, _, '"') => in_string = !in_string,
                (false, _, '[' | '{') => {
                    depth += 1;
                    deepest = deepest.max(depth);
                }
                (false, _, ']' | '}') => depth -= 1,
                _ => {}
            }
        }
        deepest
    }

    fn depth_ok(json: &str, depth_max: usize) -> bool {
        let mut bytes = json.as_bytes().to_vec();
        let tape = simd_json::to_tape(&mut bytes).expect("valid JSON");
        check_depth(&tape.0, depth_max).is_ok()
    }

    fn json_tree() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![Just("1".to_owned()), Just("\"[{\\\"\"".to_owned()), Just("null".to_owned())];
        leaf.prop_recursive(8, 64, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
                prop::collection::vec(inner, 0..4).prop_map(|v| {
                    let members: Vec<String> = v.iter().enumerate().map(|(i, m)| format!("\"k{i}\":{m}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    proptest! {
        #[test]
        fn the_tape_check_counts_nesting_as_the_bytes_do(json in json_tree()) {
            let depth = nesting(&json);
            prop_assert!(depth_ok(&json, depth), "{json} is {depth} deep");
            if depth > 0 {
                prop_assert!(!depth_ok(&json, depth - 1), "{json} is {depth} deep");
            }
        }
    }

    #[test]
    fn a_hostile_nesting_is_refused_before_any_recursive_read() {
        let deep = 200_000;
        let mut body =
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{}{}}}"#, "[".repeat(deep), "]".repeat(deep)).into_bytes();
        let refused = parse_response::<Value>(&mut body).expect_err("refused");
        assert!(matches!(&refused, LedgerError::Malformed(m) if m.contains("nested deeper than 64")), "{refused}");
        let fine =
            format!("{}{}", "[".repeat(config::LEDGER_JSON_DEPTH_MAX), "]".repeat(config::LEDGER_JSON_DEPTH_MAX));
        assert!(parse::<Value>(&mut fine.into_bytes()).is_ok());
        let over = format!(
            "{}{}",
            "[".repeat(config::LEDGER_JSON_DEPTH_MAX + 1),
            "]".repeat(config::LEDGER_JSON_DEPTH_MAX + 1)
        );
        assert!(parse::<Value>(&mut over.into_bytes()).is_err());
    }
}
