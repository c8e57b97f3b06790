//! The domain model of the ledger: one normalized view of a wallet.
//!
//! Owns: `WalletView` and its parts (account, token accounts, mints, nonce and stake accounts,
//! transactions, coverage) and their construction from wire types. Called from compute
//! threads; pure.
//!
//! Invariant: built only from what the source said. Amounts are base units (`u64`), lamports
//! are `u64`, addresses are `Pubkey`. A wire item that cannot be read as the domain type is
//! left out of the view (and counted in `Coverage::items_skipped`), never guessed.
//! Deliberately absent: any judgement of risk (the engine's job) and any wire detail the
//! engine does not need (log messages, rewards, compute units).

use simd_json::prelude::*;

use crate::ledger::fields::{Fields, KnownKeys};
use crate::ledger::instruction::{self, ids, AccountKeys, Instruction, InstructionIndex, InstructionKind, Program};
use crate::ledger::wire::{self, UiAccount, UiMessage};
use crate::pubkey::{Pubkey, Signature};

/// Everything the engine may read about one wallet.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WalletView {
    pub address: Pubkey,
    /// `None`: the account does not exist (never funded, or closed).
    pub account: Option<AccountState>,
    pub token_accounts: Vec<TokenAccount>,
    /// Mints of the token accounts, sorted by address.
    pub mints: Vec<MintInfo>,
    /// Nonce accounts the wallet created or is named in, as they are now.
    pub nonce_accounts: Vec<NonceAccount>,
    /// Stake accounts the wallet created or is named in, as they are now.
    pub stake_accounts: Vec<StakeAccount>,
    /// Nonce accounts naming the wallet as authority that its history does not show it
    /// creating (found by the nonce search), by address, at most `config::OUTSIDER_NONCES_MAX`.
    pub outsider_nonces: Vec<OutsiderNonce>,
    /// Newest first, as `getSignaturesForAddress` orders them.
    pub transactions: Vec<Transaction>,
    pub coverage: Coverage,
    /// One hop out: the recent history of the wallet's first funder (a view holding only
    /// `address`, `transactions` and `coverage`), when it was read (`view::read_hop`; the
    /// job reads it when the labels list sanctioned addresses). Never nested further.
    pub funder_hop: Option<Box<WalletView>>,
}

impl WalletView {
    pub fn mint(&self, address: &Pubkey) -> Option<&MintInfo> {
        self.mints.binary_search_by(|m| m.address.cmp(address)).ok().map(|i| &self.mints[i])
    }
}

/// `Coverage::source` of views read from the embedded demo ledger.
pub const DEMO_SOURCE: &str = "demo";

/// How much of the ledger the view is built from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Coverage {
    /// `demo`, `snapshot` or `rpc`.
    pub source: String,
    /// The demo ledger or a recording of it (`LedgerSource::synthetic`): labels tagged `demo`
    /// count.
    pub synthetic: bool,
    /// Highest slot any response was read at.
    pub as_of_slot: u64,
    pub transactions_read: u32,
    /// Signatures listed but whose transaction the source no longer had.
    pub transactions_missing: u32,
    /// True when the history depth limit cut the signature list.
    pub history_truncated: bool,
    /// Items that were not the expected shape and were left out.
    pub items_skipped: u32,
    /// How the search for nonce accounts naming the wallet went.
    pub nonce_search: NonceSearch,
    /// Nonce accounts naming the wallet that it did not create, as many as the search found
    /// (`outsider_nonces` keeps the first `config::OUTSIDER_NONCES_MAX`).
    pub outsider_nonces_found: u32,
}

/// The outcome of the nonce-account search (`getProgramAccounts`) of a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NonceSearch {
    /// Every nonce account naming the wallet was listed.
    #[default]
    Complete,
    /// More than `config::NAMED_NONCE_ACCOUNTS_MAX` were listed; the lowest addresses were kept.
    Cut,
    /// The source refused or failed the search (many nodes do not serve `getProgramAccounts`
    /// on the System program); the view holds none.
    Failed,
}

/// What kind of account an address is, as far as the node's parse tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountKind {
    /// System-owned, no data: an ordinary wallet.
    Wallet,
    Mint,
    TokenAccount,
    Nonce,
    Stake,
    /// Executable (a program or loader account).
    Program,
    /// Any other data account; `program` is the node's parser name when it had one.
    Data {
        program: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountState {
    pub lamports: u64,
    pub owner: Pubkey,
    pub executable: bool,
    pub data_len: u64,
    pub kind: AccountKind,
}

impl AccountState {
    pub fn from_wire(a: &UiAccount) -> Option<AccountState> {
        let owner = Pubkey::parse(&a.owner).ok()?;
        let parsed = a.data.parsed();
        let data_len = a.space.or(parsed.map(|p| p.space)).unwrap_or_else(|| binary_len(&a.data));
        let parsed_type = parsed.and_then(|p| p.parsed.get("type")).and_then(|t| t.as_str());
        let kind = if a.executable {
            AccountKind::Program
        } else {
            match (parsed.map(|p| p.program.as_str()), parsed_type) {
                (Some("spl-token" | "spl-token-2022"), Some("mint")) => AccountKind::Mint,
                (Some("spl-token" | "spl-token-2022"), Some("account")) => AccountKind::TokenAccount,
                (Some("nonce"), _) => AccountKind::Nonce,
                (Some("stake"), _) => AccountKind::Stake,
                _ if a.owner == ids::SYSTEM && data_len == 0 => AccountKind::Wallet,
                (program, _) => AccountKind::Data { program: program.map(str::to_owned) },
            }
        };
        Some(AccountState { lamports: a.lamports, owner, executable: a.executable, data_len, kind })
    }
}

fn binary_len(data: &wire::UiAccountData) -> u64 {
    // base64 length → bytes, without decoding: 4 chars carry 3 bytes, minus padding.
    let encoded = match data {
        wire::UiAccountData::Binary(parts) => parts.first().map(String::as_str).unwrap_or(""),
        wire::UiAccountData::LegacyBinary(s) => return bs58::decode(s).into_vec().map_or(0, |v| v.len() as u64),
        wire::UiAccountData::Parsed(p) => return p.space,
    };
    let padding = encoded.bytes().rev().take_while(|&b| b == b'=').count();
    ((encoded.len() / 4 * 3).saturating_sub(padding)) as u64
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TokenProgram {
    Token,
    Token2022,
}

impl TokenProgram {
    pub fn from_name(program: &str) -> Option<TokenProgram> {
        match program {
            "spl-token" => Some(TokenProgram::Token),
            "spl-token-2022" => Some(TokenProgram::Token2022),
            _ => None,
        }
    }

    /// The token program `program` is, if it is one.
    pub fn of(program: Program) -> Option<TokenProgram> {
        match program {
            Program::Token => Some(TokenProgram::Token),
            Program::Token2022 => Some(TokenProgram::Token2022),
            _ => None,
        }
    }

    /// The node's name of the program (`data.program` of a jsonParsed account).
    pub fn name(self) -> &'static str {
        match self {
            TokenProgram::Token => "spl-token",
            TokenProgram::Token2022 => "spl-token-2022",
        }
    }

    pub fn id(self) -> &'static str {
        match self {
            TokenProgram::Token => ids::TOKEN,
            TokenProgram::Token2022 => ids::TOKEN_2022,
        }
    }

    pub fn program(self) -> Program {
        match self {
            TokenProgram::Token => Program::Token,
            TokenProgram::Token2022 => Program::Token2022,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAccountState {
    Initialized,
    Frozen,
    Uninitialized,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAccount {
    pub address: Pubkey,
    pub mint: Pubkey,
    pub owner: Pubkey,
    pub program: TokenProgram,
    pub amount: u64,
    pub decimals: u8,
    pub delegate: Option<Pubkey>,
    pub delegated_amount: u64,
    pub close_authority: Option<Pubkey>,
    pub state: TokenAccountState,
    pub is_native: bool,
    /// Rent held by the account (reclaimable by closing it when empty).
    pub lamports: u64,
    /// Names of account extensions (`immutableOwner`, `transferHookAccount`, …).
    pub extensions: Vec<String>,
}

/// The `info` object and program of a jsonParsed token-program account of `type`.
fn token_info<'a>(a: &'a UiAccount, wanted_type: &str) -> Option<(TokenProgram, Fields<'a>)> {
    let parsed = a.data.parsed()?;
    let program = TokenProgram::from_name(&parsed.program)?;
    if parsed.parsed.get("type")?.as_str()? != wanted_type {
        return None;
    }
    Some((program, Fields::new(parsed.parsed.get("info")?)))
}

impl TokenAccount {
    pub fn from_wire(address: Pubkey, a: &UiAccount) -> Option<TokenAccount> {
        let (program, info) = token_info(a, "account")?;
        let (amount, decimals) = info.token_amount("tokenAmount")?;
        let state = match info.str("state")? {
            "initialized" => TokenAccountState::Initialized,
            "frozen" => TokenAccountState::Frozen,
            _ => TokenAccountState::Uninitialized,
        };
        Some(TokenAccount {
            address,
            mint: info.pubkey("mint")?,
            owner: info.pubkey("owner")?,
            program,
            amount,
            decimals,
            delegate: info.pubkey("delegate"),
            delegated_amount: info.token_amount("delegatedAmount").map_or(0, |(a, _)| a),
            close_authority: info.pubkey("closeAuthority"),
            state,
            is_native: info.bool("isNative").unwrap_or(false),
            lamports: a.lamports,
            extensions: extension_names(info),
        })
    }
}

fn extension_names(info: Fields<'_>) -> Vec<String> {
    info.get("extensions")
        .and_then(|e| e.as_array())
        .map(|list| list.iter().filter_map(|e| e.get("extension")?.as_str().map(str::to_owned)).collect())
        .unwrap_or_default()
}

/// A Token-2022 mint extension as the mint account holds it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MintExtension {
    PermanentDelegate {
        delegate: Option<Pubkey>,
    },
    TransferHook {
        authority: Option<Pubkey>,
        program_id: Option<Pubkey>,
    },
    TransferFeeConfig {
        basis_points: u16,
        maximum_fee: u64,
        authority: Option<Pubkey>,
    },
    DefaultAccountState {
        state: String,
    },
    NonTransferable,
    MintCloseAuthority {
        close_authority: Option<Pubkey>,
    },
    /// Any other extension, by name.
    Other(String),
}

impl MintExtension {
    fn from_wire(e: &wire::Value) -> Option<MintExtension> {
        let name = e.get("extension")?.as_str()?;
        let state = e.get("state").filter(|s| s.is_object()).map(Fields::new);
        let key = |k: &str| state.and_then(|s| s.pubkey(k));
        Some(match name {
            "permanentDelegate" => MintExtension::PermanentDelegate { delegate: key("delegate") },
            "transferHook" => MintExtension::TransferHook { authority: key("authority"), program_id: key("programId") },
            "transferFeeConfig" => {
                let newer = state.and_then(|s| s.obj("newerTransferFee"));
                MintExtension::TransferFeeConfig {
                    basis_points: newer
                        .and_then(|n| n.u64("transferFeeBasisPoints"))
                        .and_then(|b| u16::try_from(b).ok())
                        .unwrap_or(0),
                    maximum_fee: newer.and_then(|n| n.u64("maximumFee")).unwrap_or(0),
                    authority: key("transferFeeConfigAuthority"),
                }
            }
            "defaultAccountState" => MintExtension::DefaultAccountState {
                state: state.and_then(|s| s.str("accountState")).unwrap_or("").to_owned(),
            },
            "nonTransferable" => MintExtension::NonTransferable,
            "mintCloseAuthority" => MintExtension::MintCloseAuthority { close_authority: key("closeAuthority") },
            other => MintExtension::Other(other.to_owned()),
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintInfo {
    pub address: Pubkey,
    pub program: TokenProgram,
    pub decimals: u8,
    pub supply: u64,
    pub mint_authority: Option<Pubkey>,
    pub freeze_authority: Option<Pubkey>,
    pub extensions: Vec<MintExtension>,
}

impl MintInfo {
    pub fn from_wire(address: Pubkey, a: &UiAccount) -> Option<MintInfo> {
        let (program, info) = token_info(a, "mint")?;
        let extensions = info
            .get("extensions")
            .and_then(|e| e.as_array())
            .map(|list| list.iter().filter_map(MintExtension::from_wire).collect())
            .unwrap_or_default();
        Some(MintInfo {
            address,
            program,
            decimals: u8::try_from(info.u64("decimals")?).ok()?,
            supply: info.u64("supply").unwrap_or(0),
            mint_authority: info.pubkey("mintAuthority"),
            freeze_authority: info.pubkey("freezeAuthority"),
            extensions,
        })
    }

    pub fn permanent_delegate(&self) -> Option<Pubkey> {
        self.extensions.iter().find_map(|e| match e {
            MintExtension::PermanentDelegate { delegate } => *delegate,
            _ => None,
        })
    }
}

/// Size of a System nonce account's data: version u32, state u32, authority (32 bytes), durable
/// nonce (32 bytes), lamports per signature u64 — the `dataSize` filter of a nonce search.
pub const NONCE_ACCOUNT_DATA_LEN: u64 = 80;
/// Offset of the authority in a nonce account's data — the `memcmp` filter of a nonce search.
pub const NONCE_AUTHORITY_OFFSET: u64 = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceAccount {
    pub address: Pubkey,
    pub authority: Pubkey,
    pub lamports: u64,
}

impl NonceAccount {
    pub fn from_wire(address: Pubkey, a: &UiAccount) -> Option<NonceAccount> {
        let parsed = a.data.parsed().filter(|p| p.program == "nonce")?;
        let info = Fields::new(parsed.parsed.get("info")?);
        Some(NonceAccount { address, authority: info.pubkey("authority")?, lamports: a.lamports })
    }
}

/// A nonce account naming the wallet as its authority that the wallet's history does not show
/// it creating, with what the account's own recent history says of its creation.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsiderNonce {
    pub account: NonceAccount,
    /// The transaction whose `createAccount` made it, when the account's recent history
    /// (`config::OUTSIDER_NONCE_SIGNATURES_MAX`) reaches back that far.
    pub creation: Option<Transaction>,
}

impl OutsiderNonce {
    /// The `createAccount` of the account in its creation transaction, and who paid for it.
    pub fn creation(&self) -> Option<(&Transaction, &Instruction, Pubkey)> {
        let tx = self.creation.as_ref()?;
        tx.instructions.iter().find_map(|ix| match &ix.kind {
            InstructionKind::SystemCreateAccount { funder, account, .. } if *account == self.account.address => {
                Some((tx, ix, *funder))
            }
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StakeAccount {
    pub address: Pubkey,
    pub staker: Pubkey,
    pub withdrawer: Pubkey,
    pub custodian: Option<Pubkey>,
    pub lamports: u64,
    /// Vote account the stake is delegated to, when delegated.
    pub voter: Option<Pubkey>,
}

impl StakeAccount {
    pub fn from_wire(address: Pubkey, a: &UiAccount) -> Option<StakeAccount> {
        let parsed = a.data.parsed().filter(|p| p.program == "stake")?;
        let info = Fields::new(parsed.parsed.get("info")?);
        let meta = info.obj("meta")?;
        let authorized = meta.obj("authorized")?;
        let custodian = meta.obj("lockup").and_then(|l| l.pubkey("custodian")).filter(|c| *c != Pubkey::default());
        let voter = info.obj("stake").and_then(|s| s.obj("delegation")).and_then(|d| d.pubkey("voter"));
        Some(StakeAccount {
            address,
            staker: authorized.pubkey("staker")?,
            withdrawer: authorized.pubkey("withdrawer")?,
            custodian,
            lamports: a.lamports,
            voter,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionVersion {
    Legacy,
    V0,
}

/// One account's lamport balance before and after a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SolChange {
    pub account: Pubkey,
    pub pre: u64,
    pub post: u64,
}

impl SolChange {
    pub fn delta(&self) -> i128 {
        i128::from(self.post) - i128::from(self.pre)
    }
}

/// One token account's balance before and after a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenChange {
    pub account: Pubkey,
    pub mint: Pubkey,
    pub owner: Option<Pubkey>,
    pub decimals: u8,
    pub pre: u64,
    pub post: u64,
}

impl TokenChange {
    pub fn delta(&self) -> i128 {
        i128::from(self.post) - i128::from(self.pre)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    pub signature: Signature,
    pub slot: u64,
    pub block_time: Option<i64>,
    /// `meta.err` as compact JSON (`{"InstructionError":[0,{"Custom":1}]}`), when it failed.
    pub error: Option<String>,
    pub fee: u64,
    pub fee_payer: Pubkey,
    pub signers: Vec<Pubkey>,
    /// Static keys, then loaded writable, then loaded readonly (v0).
    pub account_keys: Vec<Pubkey>,
    pub version: TransactionVersion,
    /// Outer instructions in order, each followed by its inner instructions.
    pub instructions: Vec<Instruction>,
    /// Accounts whose lamports changed.
    pub sol_changes: Vec<SolChange>,
    /// Every token balance the node reported, before and after (unchanged ones too: they
    /// name the owner of a token account that a zero-amount transfer touched).
    pub token_changes: Vec<TokenChange>,
}

impl Transaction {
    /// Reads a getTransaction / getBlock transaction object. `None` when it has no signature
    /// (not a transaction at all) or names an address that is not one — an account key, a
    /// program id, an instruction's account or an index past the keys (malformed: the caller
    /// counts it skipped rather than read it with a stand-in address).
    pub fn from_wire(tx: &wire::TransactionWithMeta, slot: u64, block_time: Option<i64>) -> Option<Transaction> {
        let signature = Signature::parse(tx.transaction.signatures.first()?).ok()?;
        let known = known_keys(tx);
        let account_keys: Vec<Pubkey> = known.all_keys()?;
        if !addresses_resolve(tx, &known, account_keys.len()) {
            return None;
        }
        let signers = signers(&tx.transaction.message, &account_keys);
        let meta = tx.meta.as_ref();
        let table = AccountKeys { keys: &account_keys, known };
        let instructions = flatten_instructions(tx, &table);
        let version = match tx.version {
            Some(wire::UiTransactionVersion::Number(_)) => TransactionVersion::V0,
            _ => TransactionVersion::Legacy,
        };
        Some(Transaction {
            signature,
            slot,
            block_time,
            error: meta.and_then(|m| m.err.as_ref()).and_then(error_text),
            fee: meta.map_or(0, |m| m.fee),
            fee_payer: account_keys.first().copied().unwrap_or_default(),
            signers,
            sol_changes: meta.map(|m| sol_changes(m, &account_keys)).unwrap_or_default(),
            token_changes: meta.map(|m| token_changes(m, &table)).unwrap_or_default(),
            account_keys,
            version,
            instructions,
        })
    }

    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    pub fn is_signer(&self, key: &Pubkey) -> bool {
        self.signers.contains(key)
    }
}

/// `meta.err` as text: a bare string error as itself (`InvalidRentPayingAccount`), an object
/// as compact JSON (`{"InstructionError":[0,{"Custom":1}]}`); `null` is success.
fn error_text(err: &wire::Value) -> Option<String> {
    if err.is_null() {
        None
    } else {
        Some(err.as_str().map_or_else(|| err.encode(), str::to_owned))
    }
}

/// Every account key's text, parsed once, in index order. A parsed message lists the keys
/// loaded from lookup tables itself (source: lookupTable); a raw one does not, and its
/// compiled indices run past the static keys into them, so they follow.
fn known_keys(tx: &wire::TransactionWithMeta) -> KnownKeys<'_> {
    match &tx.transaction.message {
        UiMessage::Parsed(m) => KnownKeys::parse_all(m.account_keys.iter().map(|k| k.pubkey.as_str())),
        UiMessage::Raw(m) => {
            let loaded = tx.meta.as_ref().and_then(|meta| meta.loaded_addresses.as_ref());
            let loaded = loaded.into_iter().flat_map(|l| l.writable.iter().chain(&l.readonly));
            KnownKeys::parse_all(m.account_keys.iter().chain(loaded).map(String::as_str))
        }
    }
}

/// The signers of either message encoding: flagged (parsed) or the header's first keys (raw).
fn signers(message: &UiMessage, keys: &[Pubkey]) -> Vec<Pubkey> {
    match message {
        UiMessage::Parsed(m) => m.account_keys.iter().zip(keys).filter(|(k, _)| k.signer).map(|(_, p)| *p).collect(),
        UiMessage::Raw(m) => {
            let count = usize::from(m.header.num_required_signatures).min(m.account_keys.len()).min(keys.len());
            keys[..count].to_vec()
        }
    }
}

/// True when every instruction (outer and inner) names its program and accounts by addresses
/// that parse, or by indexes within the account keys.
fn addresses_resolve(tx: &wire::TransactionWithMeta, known: &KnownKeys<'_>, keys_len: usize) -> bool {
    let outer = match &tx.transaction.message {
        UiMessage::Parsed(m) => &m.instructions,
        UiMessage::Raw(m) => &m.instructions,
    };
    let inner = tx.meta.as_ref().and_then(|m| m.inner_instructions.as_deref()).unwrap_or(&[]);
    let in_range = |index: &u8| usize::from(*index) < keys_len;
    outer.iter().chain(inner.iter().flat_map(|set| &set.instructions)).all(|ix| match ix {
        wire::UiInstruction::Parsed(p) => known.parse(&p.program_id).is_some(),
        wire::UiInstruction::PartiallyDecoded(p) => {
            known.parse(&p.program_id).is_some() && p.accounts.iter().all(|a| known.parse(a).is_some())
        }
        wire::UiInstruction::Compiled(c) => in_range(&c.program_id_index) && c.accounts.iter().all(in_range),
    })
}

fn flatten_instructions(tx: &wire::TransactionWithMeta, table: &AccountKeys<'_>) -> Vec<Instruction> {
    let outer = match &tx.transaction.message {
        UiMessage::Parsed(m) => &m.instructions,
        UiMessage::Raw(m) => &m.instructions,
    };
    let inner_sets = tx.meta.as_ref().and_then(|m| m.inner_instructions.as_deref()).unwrap_or(&[]);
    let mut out = Vec::with_capacity(outer.len());
    for (i, ix) in outer.iter().enumerate() {
        let outer_index = u16::try_from(i).unwrap_or(u16::MAX);
        out.push(instruction::decode(ix, InstructionIndex { outer: outer_index, inner: None }, table));
        for set in inner_sets.iter().filter(|s| usize::from(s.index) == i) {
            for (j, inner) in set.instructions.iter().enumerate() {
                let index = InstructionIndex { outer: outer_index, inner: Some(u16::try_from(j).unwrap_or(u16::MAX)) };
                out.push(instruction::decode(inner, index, table));
            }
        }
    }
    out
}

fn sol_changes(meta: &wire::UiMeta, keys: &[Pubkey]) -> Vec<SolChange> {
    meta.pre_balances
        .iter()
        .zip(&meta.post_balances)
        .zip(keys)
        .filter(|((pre, post), _)| pre != post)
        .map(|((&pre, &post), &account)| SolChange { account, pre, post })
        .collect()
}

fn token_changes(meta: &wire::UiMeta, keys: &AccountKeys<'_>) -> Vec<TokenChange> {
    let pre = meta.pre_token_balances.as_deref().unwrap_or(&[]);
    let post = meta.post_token_balances.as_deref().unwrap_or(&[]);
    let amount = |b: &wire::UiTokenBalance| b.ui_token_amount.amount.parse::<u64>().unwrap_or(0);
    let mut out: Vec<TokenChange> = Vec::new();
    for b in post {
        let before = pre.iter().find(|p| p.account_index == b.account_index).map_or(0, amount);
        push_token_change(&mut out, b, keys, before, amount(b));
    }
    for b in pre.iter().filter(|p| !post.iter().any(|q| q.account_index == p.account_index)) {
        push_token_change(&mut out, b, keys, amount(b), 0);
    }
    out
}

fn push_token_change(
    out: &mut Vec<TokenChange>,
    b: &wire::UiTokenBalance,
    keys: &AccountKeys<'_>,
    pre: u64,
    post: u64,
) {
    let (Some(&account), Some(mint)) = (keys.keys.get(usize::from(b.account_index)), keys.known.parse(&b.mint)) else {
        return;
    };
    out.push(TokenChange {
        account,
        mint,
        owner: b.owner.as_deref().and_then(|o| keys.known.parse(o)),
        decimals: b.ui_token_amount.decimals,
        pre,
        post,
    });
}
