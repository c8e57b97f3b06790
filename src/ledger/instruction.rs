//! Instructions in the domain model: which program, what it did, to whom, at which index.
//!
//! Owns: `Program` (the programs the service understands), `InstructionKind` (their decoded
//! instructions), `InstructionIndex` (`outer` / `outer.inner`) and the decoding of a wire
//! instruction into them. Called from compute threads and the CLI; pure.
//!
//! Invariant: decoding never fails. An instruction of an unknown program, of an unknown type,
//! or whose fields are missing or mistyped, becomes `InstructionKind::Other` / `Raw` with its
//! program id and accounts kept, so nothing the node sent is lost and nothing is invented.

use std::fmt;

use simd_json::prelude::*;

use crate::ledger::fields::{Fields, KnownKeys};
use crate::ledger::wire::{UiInstruction, Value};
use crate::pubkey::Pubkey;

/// Real mainnet program ids, as text.
pub mod ids {
    pub const SYSTEM: &str = "11111111111111111111111111111111";
    pub const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
    pub const TOKEN_2022: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
    pub const STAKE: &str = "Stake11111111111111111111111111111111111111";
    pub const ASSOCIATED_TOKEN: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";
    pub const MEMO: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
    pub const MEMO_V1: &str = "Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo";
    pub const VOTE: &str = "Vote111111111111111111111111111111111111111";
    pub const COMPUTE_BUDGET: &str = "ComputeBudget111111111111111111111111111111";
}

/// The programs whose instructions the service decodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Program {
    System,
    Token,
    Token2022,
    Stake,
    AssociatedToken,
    Memo,
    Vote,
    ComputeBudget,
    Other,
}

impl Program {
    pub fn from_id(id: &str) -> Program {
        match id {
            ids::SYSTEM => Program::System,
            ids::TOKEN => Program::Token,
            ids::TOKEN_2022 => Program::Token2022,
            ids::STAKE => Program::Stake,
            ids::ASSOCIATED_TOKEN => Program::AssociatedToken,
            ids::MEMO | ids::MEMO_V1 => Program::Memo,
            ids::VOTE => Program::Vote,
            ids::COMPUTE_BUDGET => Program::ComputeBudget,
            _ => Program::Other,
        }
    }

    /// The name the node uses in `program` (jsonParsed), or `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Program::System => "system",
            Program::Token => "spl-token",
            Program::Token2022 => "spl-token-2022",
            Program::Stake => "stake",
            Program::AssociatedToken => "spl-associated-token-account",
            Program::Memo => "spl-memo",
            Program::Vote => "vote",
            Program::ComputeBudget => "compute-budget",
            Program::Other => "unknown",
        }
    }

    pub fn is_token(self) -> bool {
        matches!(self, Program::Token | Program::Token2022)
    }
}

/// Position of an instruction: `outer` in the message, `inner` within that instruction's CPIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InstructionIndex {
    pub outer: u16,
    pub inner: Option<u16>,
}

impl fmt::Display for InstructionIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.inner {
            None => write!(f, "{}", self.outer),
            Some(inner) => write!(f, "{}.{}", self.outer, inner),
        }
    }
}

/// Which authority a token `setAuthority` changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenAuthorityType {
    AccountOwner,
    CloseAccount,
    MintTokens,
    FreezeAccount,
    Other(String),
}

impl TokenAuthorityType {
    fn from_wire(s: &str) -> Self {
        match s {
            "accountOwner" => TokenAuthorityType::AccountOwner,
            "closeAccount" => TokenAuthorityType::CloseAccount,
            "mintTokens" => TokenAuthorityType::MintTokens,
            "freezeAccount" => TokenAuthorityType::FreezeAccount,
            other => TokenAuthorityType::Other(other.to_owned()),
        }
    }
}

/// Which stake authority an `authorize` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StakeAuthorityType {
    Staker,
    Withdrawer,
}

/// A Token-2022 mint extension set up by an instruction (`initializePermanentDelegate`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MintExtensionInit {
    PermanentDelegate { delegate: Option<Pubkey> },
    TransferHook { authority: Option<Pubkey>, program_id: Option<Pubkey> },
    TransferFeeConfig { basis_points: u16, maximum_fee: u64 },
    DefaultAccountState { state: String },
    NonTransferable,
    MintCloseAuthority { authority: Option<Pubkey> },
}

/// What an instruction did, for the instructions the engine reasons about. Token variants
/// cover both token programs (the instruction's `program` says which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstructionKind {
    SystemTransfer {
        from: Pubkey,
        to: Pubkey,
        lamports: u64,
    },
    /// `createAccount` and `createAccountWithSeed`.
    SystemCreateAccount {
        funder: Pubkey,
        account: Pubkey,
        lamports: u64,
        space: u64,
        owner: Pubkey,
    },
    SystemAssign {
        account: Pubkey,
        owner: Pubkey,
    },
    NonceInitialize {
        nonce: Pubkey,
        authority: Pubkey,
    },
    NonceAdvance {
        nonce: Pubkey,
        authority: Pubkey,
    },
    NonceAuthorize {
        nonce: Pubkey,
        authority: Pubkey,
        new_authority: Pubkey,
    },
    NonceWithdraw {
        nonce: Pubkey,
        authority: Pubkey,
        to: Pubkey,
        lamports: u64,
    },
    /// `transfer` and `transferChecked` (mint known only for the latter).
    TokenTransfer {
        source: Pubkey,
        destination: Pubkey,
        authority: Pubkey,
        amount: u64,
        mint: Option<Pubkey>,
    },
    /// `approve` and `approveChecked`.
    TokenApprove {
        account: Pubkey,
        delegate: Pubkey,
        owner: Pubkey,
        amount: u64,
        mint: Option<Pubkey>,
    },
    TokenRevoke {
        account: Pubkey,
        owner: Pubkey,
    },
    TokenSetAuthority {
        target: Pubkey,
        authority_type: TokenAuthorityType,
        authority: Option<Pubkey>,
        new_authority: Option<Pubkey>,
    },
    TokenCloseAccount {
        account: Pubkey,
        destination: Pubkey,
        owner: Pubkey,
    },
    /// `initializeAccount`, `…2`, `…3`.
    TokenInitializeAccount {
        account: Pubkey,
        mint: Pubkey,
        owner: Pubkey,
    },
    /// `initializeMint`, `…2`.
    TokenInitializeMint {
        mint: Pubkey,
        decimals: u8,
        mint_authority: Option<Pubkey>,
        freeze_authority: Option<Pubkey>,
    },
    TokenMintTo {
        mint: Pubkey,
        account: Pubkey,
        amount: u64,
        authority: Option<Pubkey>,
    },
    TokenBurn {
        account: Pubkey,
        mint: Pubkey,
        amount: u64,
        authority: Option<Pubkey>,
    },
    TokenFreeze {
        account: Pubkey,
        mint: Pubkey,
        authority: Option<Pubkey>,
    },
    TokenThaw {
        account: Pubkey,
        mint: Pubkey,
        authority: Option<Pubkey>,
    },
    TokenMintExtension {
        mint: Pubkey,
        extension: MintExtensionInit,
    },
    StakeInitialize {
        stake: Pubkey,
        staker: Pubkey,
        withdrawer: Pubkey,
        custodian: Option<Pubkey>,
    },
    StakeAuthorize {
        stake: Pubkey,
        authority: Pubkey,
        new_authority: Pubkey,
        authority_type: StakeAuthorityType,
    },
    StakeDelegate {
        stake: Pubkey,
        vote: Pubkey,
        authority: Pubkey,
    },
    StakeDeactivate {
        stake: Pubkey,
        authority: Pubkey,
    },
    StakeWithdraw {
        stake: Pubkey,
        to: Pubkey,
        authority: Pubkey,
        lamports: u64,
    },
    /// `create` and `createIdempotent` of the associated-token-account program.
    AtaCreate {
        funder: Pubkey,
        account: Pubkey,
        wallet: Pubkey,
        mint: Pubkey,
    },
    Memo {
        text: String,
    },
    /// Parsed by the node but not modelled here (votes, compute budget, …): its type is kept.
    Other,
    /// Not parsed by the node: program id, accounts and data kept as sent.
    Raw {
        data: String,
    },
}

/// One instruction of a transaction, outer or inner, in domain form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    pub index: InstructionIndex,
    pub program_id: Pubkey,
    pub program: Program,
    /// The node's `parsed.type` (`transfer`, `approve`, …), `memo`, or `unknown` when raw.
    pub name: String,
    pub kind: InstructionKind,
    /// Accounts of a raw instruction; for parsed ones, the addresses named in `info`.
    pub accounts: Vec<Pubkey>,
}

/// A transaction's account keys: by index for `json`-encoded (compiled) instructions, by
/// text for jsonParsed ones (so that each is decoded once per transaction).
pub struct AccountKeys<'a> {
    pub keys: &'a [Pubkey],
    pub known: KnownKeys<'a>,
}

impl AccountKeys<'_> {
    fn key(&self, index: u8) -> Pubkey {
        self.keys.get(usize::from(index)).copied().unwrap_or_default()
    }
}

/// Decodes one wire instruction. Never fails: see the module invariant.
pub fn decode(ix: &UiInstruction, index: InstructionIndex, keys: &AccountKeys<'_>) -> Instruction {
    match ix {
        UiInstruction::Parsed(p) => {
            let program_id = keys.known.parse(&p.program_id).unwrap_or_default();
            let program = Program::from_id(&p.program_id);
            let (name, kind) = decode_parsed(program, &p.parsed, &keys.known);
            let accounts = info_addresses(&p.parsed, &keys.known);
            Instruction { index, program_id, program, name, kind, accounts }
        }
        UiInstruction::PartiallyDecoded(p) => {
            let accounts = p.accounts.iter().filter_map(|a| keys.known.parse(a)).collect();
            let program_id = keys.known.parse(&p.program_id).unwrap_or_default();
            raw(index, program_id, Program::from_id(&p.program_id), accounts, &p.data)
        }
        UiInstruction::Compiled(c) => {
            let program_id = keys.key(c.program_id_index);
            let accounts = c.accounts.iter().map(|&i| keys.key(i)).collect();
            raw(index, program_id, Program::from_id(&program_id.to_string()), accounts, &c.data)
        }
    }
}

fn raw(
    index: InstructionIndex,
    program_id: Pubkey,
    program: Program,
    accounts: Vec<Pubkey>,
    data: &str,
) -> Instruction {
    let kind = InstructionKind::Raw { data: data.to_owned() };
    Instruction { index, program_id, program, name: "unknown".to_owned(), kind, accounts }
}

/// Every address named anywhere in a parsed instruction's `info` (one level of nesting
/// included, for stake's `authorized`). Sorted and deduplicated.
fn info_addresses(parsed: &Value, known: &KnownKeys<'_>) -> Vec<Pubkey> {
    let mut out = Vec::new();
    if let Some(info) = parsed.get("info").and_then(|v| v.as_object()) {
        for v in info.values() {
            collect_addresses(v, known, &mut out, 1);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn collect_addresses(v: &Value, known: &KnownKeys<'_>, out: &mut Vec<Pubkey>, depth_left: u8) {
    if let Some(s) = v.as_str() {
        if (32..=44).contains(&s.len()) {
            out.extend(known.parse(s));
        }
    } else if let (Some(obj), true) = (v.as_object(), depth_left > 0) {
        for inner in obj.values() {
            collect_addresses(inner, known, out, depth_left - 1);
        }
    }
}

fn decode_parsed(program: Program, parsed: &Value, known: &KnownKeys<'_>) -> (String, InstructionKind) {
    if let Some(text) = parsed.as_str() {
        // Memo: the node renders the memo text as the bare `parsed` string.
        return ("memo".to_owned(), InstructionKind::Memo { text: text.to_owned() });
    }
    let name = parsed.get("type").and_then(|t| t.as_str()).unwrap_or("unknown").to_owned();
    let info = match parsed.get("info") {
        Some(info) if info.is_object() => Fields::with_known(info, known),
        _ => return (name, InstructionKind::Other),
    };
    let kind = match program {
        Program::System => decode_system(&name, info),
        Program::Token | Program::Token2022 => decode_token(&name, info),
        Program::Stake => decode_stake(&name, info),
        Program::AssociatedToken => decode_ata(&name, info),
        _ => None,
    };
    (name, kind.unwrap_or(InstructionKind::Other))
}

fn decode_system(name: &str, f: Fields<'_>) -> Option<InstructionKind> {
    Some(match name {
        "transfer" | "transferWithSeed" => InstructionKind::SystemTransfer {
            from: f.pubkey("source")?,
            to: f.pubkey("destination")?,
            lamports: f.u64("lamports")?,
        },
        "createAccount" | "createAccountWithSeed" => InstructionKind::SystemCreateAccount {
            funder: f.pubkey("source")?,
            account: f.pubkey("newAccount")?,
            lamports: f.u64("lamports")?,
            space: f.u64("space").unwrap_or(0),
            owner: f.pubkey("owner")?,
        },
        "assign" | "assignWithSeed" => {
            InstructionKind::SystemAssign { account: f.pubkey("account")?, owner: f.pubkey("owner")? }
        }
        "initializeNonce" => InstructionKind::NonceInitialize {
            nonce: f.pubkey("nonceAccount")?,
            authority: f.pubkey("nonceAuthority")?,
        },
        "advanceNonce" => {
            InstructionKind::NonceAdvance { nonce: f.pubkey("nonceAccount")?, authority: f.pubkey("nonceAuthority")? }
        }
        "authorizeNonce" => InstructionKind::NonceAuthorize {
            nonce: f.pubkey("nonceAccount")?,
            authority: f.pubkey("nonceAuthority")?,
            new_authority: f.pubkey("newAuthorized")?,
        },
        "withdrawFromNonce" => InstructionKind::NonceWithdraw {
            nonce: f.pubkey("nonceAccount")?,
            authority: f.pubkey("nonceAuthority")?,
            to: f.pubkey("destination")?,
            lamports: f.u64("lamports")?,
        },
        _ => return None,
    })
}

const TOKEN_OWNER_KEYS: &[&str] = &["owner", "multisigOwner"];
const TOKEN_AUTHORITY_KEYS: &[&str] = &["authority", "multisigAuthority", "owner", "multisigOwner"];

fn decode_token(name: &str, f: Fields<'_>) -> Option<InstructionKind> {
    Some(match name {
        "transfer" => InstructionKind::TokenTransfer {
            source: f.pubkey("source")?,
            destination: f.pubkey("destination")?,
            authority: f.pubkey_any(TOKEN_AUTHORITY_KEYS)?,
            amount: f.u64("amount")?,
            mint: None,
        },
        "transferChecked" => InstructionKind::TokenTransfer {
            source: f.pubkey("source")?,
            destination: f.pubkey("destination")?,
            authority: f.pubkey_any(TOKEN_AUTHORITY_KEYS)?,
            amount: f.token_amount("tokenAmount")?.0,
            mint: f.pubkey("mint"),
        },
        "approve" | "approveChecked" => InstructionKind::TokenApprove {
            account: f.pubkey("source")?,
            delegate: f.pubkey("delegate")?,
            owner: f.pubkey_any(TOKEN_OWNER_KEYS)?,
            amount: f.u64("amount").or_else(|| Some(f.token_amount("tokenAmount")?.0))?,
            mint: f.pubkey("mint"),
        },
        "revoke" => {
            InstructionKind::TokenRevoke { account: f.pubkey("source")?, owner: f.pubkey_any(TOKEN_OWNER_KEYS)? }
        }
        "setAuthority" => InstructionKind::TokenSetAuthority {
            target: f.pubkey("account").or_else(|| f.pubkey("mint"))?,
            authority_type: TokenAuthorityType::from_wire(f.str("authorityType")?),
            authority: f.pubkey_any(TOKEN_AUTHORITY_KEYS),
            new_authority: f.pubkey("newAuthority"),
        },
        "closeAccount" => InstructionKind::TokenCloseAccount {
            account: f.pubkey("account")?,
            destination: f.pubkey("destination")?,
            owner: f.pubkey_any(TOKEN_OWNER_KEYS)?,
        },
        "initializeAccount" | "initializeAccount2" | "initializeAccount3" => InstructionKind::TokenInitializeAccount {
            account: f.pubkey("account")?,
            mint: f.pubkey("mint")?,
            owner: f.pubkey("owner")?,
        },
        "initializeMint" | "initializeMint2" => InstructionKind::TokenInitializeMint {
            mint: f.pubkey("mint")?,
            decimals: u8::try_from(f.u64("decimals")?).ok()?,
            mint_authority: f.pubkey("mintAuthority"),
            freeze_authority: f.pubkey("freezeAuthority"),
        },
        "mintTo" | "mintToChecked" => InstructionKind::TokenMintTo {
            mint: f.pubkey("mint")?,
            account: f.pubkey("account")?,
            amount: f.u64("amount").or_else(|| Some(f.token_amount("tokenAmount")?.0))?,
            authority: f.pubkey_any(&["mintAuthority", "multisigMintAuthority"]),
        },
        "burn" | "burnChecked" => InstructionKind::TokenBurn {
            account: f.pubkey("account")?,
            mint: f.pubkey("mint")?,
            amount: f.u64("amount").or_else(|| Some(f.token_amount("tokenAmount")?.0))?,
            authority: f.pubkey_any(TOKEN_AUTHORITY_KEYS),
        },
        "freezeAccount" => InstructionKind::TokenFreeze {
            account: f.pubkey("account")?,
            mint: f.pubkey("mint")?,
            authority: f.pubkey_any(&["freezeAuthority", "multisigFreezeAuthority"]),
        },
        "thawAccount" => InstructionKind::TokenThaw {
            account: f.pubkey("account")?,
            mint: f.pubkey("mint")?,
            authority: f.pubkey_any(&["freezeAuthority", "multisigFreezeAuthority"]),
        },
        _ => return decode_mint_extension(name, f),
    })
}

fn decode_mint_extension(name: &str, f: Fields<'_>) -> Option<InstructionKind> {
    let extension = match name {
        "initializePermanentDelegate" => MintExtensionInit::PermanentDelegate { delegate: f.pubkey("delegate") },
        "initializeTransferHook" => {
            MintExtensionInit::TransferHook { authority: f.pubkey("authority"), program_id: f.pubkey("programId") }
        }
        "initializeTransferFeeConfig" => MintExtensionInit::TransferFeeConfig {
            basis_points: u16::try_from(f.u64("transferFeeBasisPoints")?).ok()?,
            maximum_fee: f.u64("maximumFee")?,
        },
        "initializeDefaultAccountState" => {
            MintExtensionInit::DefaultAccountState { state: f.str("accountState")?.to_owned() }
        }
        "initializeNonTransferableMint" => MintExtensionInit::NonTransferable,
        "initializeMintCloseAuthority" => MintExtensionInit::MintCloseAuthority { authority: f.pubkey("newAuthority") },
        _ => return None,
    };
    Some(InstructionKind::TokenMintExtension { mint: f.pubkey("mint")?, extension })
}

fn decode_stake(name: &str, f: Fields<'_>) -> Option<InstructionKind> {
    Some(match name {
        "initialize" | "initializeChecked" => {
            let authorized = f.obj("authorized");
            InstructionKind::StakeInitialize {
                stake: f.pubkey("stakeAccount")?,
                staker: authorized.and_then(|a| a.pubkey("staker")).or_else(|| f.pubkey("staker"))?,
                withdrawer: authorized.and_then(|a| a.pubkey("withdrawer")).or_else(|| f.pubkey("withdrawer"))?,
                // The node names the System id (all zeros) for "no custodian".
                custodian: f.obj("lockup").and_then(|l| l.pubkey("custodian")).filter(|c| *c != Pubkey::default()),
            }
        }
        "authorize" | "authorizeChecked" => InstructionKind::StakeAuthorize {
            stake: f.pubkey("stakeAccount")?,
            authority: f.pubkey("authority")?,
            new_authority: f.pubkey("newAuthority")?,
            authority_type: match f.str("authorityType")? {
                "Staker" | "staker" => StakeAuthorityType::Staker,
                "Withdrawer" | "withdrawer" => StakeAuthorityType::Withdrawer,
                _ => return None,
            },
        },
        "delegate" => InstructionKind::StakeDelegate {
            stake: f.pubkey("stakeAccount")?,
            vote: f.pubkey("voteAccount")?,
            authority: f.pubkey("stakeAuthority")?,
        },
        "deactivate" => InstructionKind::StakeDeactivate {
            stake: f.pubkey("stakeAccount")?,
            authority: f.pubkey("stakeAuthority")?,
        },
        "withdraw" => InstructionKind::StakeWithdraw {
            stake: f.pubkey("stakeAccount")?,
            to: f.pubkey("destination")?,
            authority: f.pubkey("withdrawAuthority")?,
            lamports: f.u64("lamports")?,
        },
        _ => return None,
    })
}

fn decode_ata(name: &str, f: Fields<'_>) -> Option<InstructionKind> {
    match name {
        "create" | "createIdempotent" => Some(InstructionKind::AtaCreate {
            funder: f.pubkey("source")?,
            account: f.pubkey("account")?,
            wallet: f.pubkey("wallet")?,
            mint: f.pubkey("mint")?,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::wire;

    fn parse_ix(json: &str) -> Instruction {
        let mut bytes = json.as_bytes().to_vec();
        let ix: UiInstruction = wire::parse(&mut bytes).unwrap();
        decode(
            &ix,
            InstructionIndex { outer: 1, inner: Some(2) },
            &AccountKeys { keys: &[], known: KnownKeys::default() },
        )
    }

    const A: &str = "5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd";
    const B: &str = "EsEtxoyhFTgfvudcy2VwwQJ1qA6BScLUW39PKpYczuxF";
    const C: &str = "DxCsN4jatqeTW2pj6fR55TrNqoCcoo8UNAy8xosheeVf";

    #[test]
    fn decodes_cases() {
        // (instruction json, expected name, a predicate on the kind)
        type Check = fn(&InstructionKind) -> bool;
        let cases: Vec<(String, &str, Check)> = vec![
            (
                format!(
                    r#"{{"program":"system","programId":"{}","parsed":{{"type":"transfer","info":{{"source":"{A}","destination":"{B}","lamports":5000}}}}}}"#,
                    ids::SYSTEM
                ),
                "transfer",
                |k| matches!(k, InstructionKind::SystemTransfer { lamports: 5000, .. }),
            ),
            (
                format!(
                    r#"{{"program":"spl-token","programId":"{}","parsed":{{"type":"approve","info":{{"source":"{A}","delegate":"{B}","owner":"{C}","amount":"18446744073709551615"}}}}}}"#,
                    ids::TOKEN
                ),
                "approve",
                |k| matches!(k, InstructionKind::TokenApprove { amount: u64::MAX, .. }),
            ),
            (
                format!(
                    r#"{{"program":"spl-token","programId":"{}","parsed":{{"type":"setAuthority","info":{{"account":"{A}","authorityType":"accountOwner","newAuthority":"{B}","authority":"{C}"}}}}}}"#,
                    ids::TOKEN
                ),
                "setAuthority",
                |k| {
                    matches!(
                        k,
                        InstructionKind::TokenSetAuthority {
                            authority_type: TokenAuthorityType::AccountOwner,
                            new_authority: Some(_),
                            ..
                        }
                    )
                },
            ),
            (
                format!(
                    r#"{{"program":"spl-token-2022","programId":"{}","parsed":{{"type":"initializePermanentDelegate","info":{{"mint":"{A}","delegate":"{B}"}}}}}}"#,
                    ids::TOKEN_2022
                ),
                "initializePermanentDelegate",
                |k| {
                    matches!(
                        k,
                        InstructionKind::TokenMintExtension {
                            extension: MintExtensionInit::PermanentDelegate { delegate: Some(_) },
                            ..
                        }
                    )
                },
            ),
            (
                format!(
                    r#"{{"program":"stake","programId":"{}","parsed":{{"type":"initialize","info":{{"stakeAccount":"{A}","rentSysvar":"SysvarRent111111111111111111111111111111111","authorized":{{"staker":"{B}","withdrawer":"{C}"}},"lockup":{{"custodian":"{A}","epoch":0,"unixTimestamp":0}}}}}}}}"#,
                    ids::STAKE
                ),
                "initialize",
                |k| matches!(k, InstructionKind::StakeInitialize { custodian: Some(_), .. }),
            ),
            (
                format!(r#"{{"program":"spl-memo","programId":"{}","parsed":"hello"}}"#, ids::MEMO),
                "memo",
                |k| matches!(k, InstructionKind::Memo { text } if text == "hello"),
            ),
            (
                // Known program, missing field: kept as Other, not an error.
                format!(
                    r#"{{"program":"system","programId":"{}","parsed":{{"type":"transfer","info":{{"source":"{A}"}}}}}}"#,
                    ids::SYSTEM
                ),
                "transfer",
                |k| matches!(k, InstructionKind::Other),
            ),
            (
                format!(r#"{{"programId":"{A}","accounts":["{B}"],"data":"3Bxs"}}"#),
                "unknown",
                |k| matches!(k, InstructionKind::Raw { data } if data == "3Bxs"),
            ),
        ];
        for (json, name, check) in cases {
            let ix = parse_ix(&json);
            assert_eq!(ix.name, name, "{json}");
            assert!(check(&ix.kind), "{json} → {:?}", ix.kind);
            assert_eq!(ix.index.to_string(), "1.2");
        }
    }

    #[test]
    fn compiled_instruction_resolves_keys() {
        let keys = [Pubkey::parse(A).unwrap(), Pubkey::parse(ids::SYSTEM).unwrap()];
        let mut bytes = br#"{"programIdIndex":1,"accounts":[0,0,9],"data":"3Bxs"}"#.to_vec();
        let ix: UiInstruction = wire::parse(&mut bytes).unwrap();
        let ix = decode(
            &ix,
            InstructionIndex { outer: 0, inner: None },
            &AccountKeys { keys: &keys, known: KnownKeys::default() },
        );
        assert_eq!(ix.program, Program::System);
        assert_eq!(ix.accounts.len(), 3);
        assert_eq!(ix.index.to_string(), "0");
    }
}
