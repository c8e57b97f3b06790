//! Renders demo accounts and transactions in the exact shapes a Solana node sends with the
//! `jsonParsed` encoding.
//!
//! Owns: account data (`getAccountInfo`: token accounts, mints with Token-2022 extensions,
//! nonce, stake, upgradeable programs, lookup tables, raw bytes), transactions
//! (`getTransaction`: parsed account keys, parsed and partially decoded instructions, inner
//! instructions with stack heights, meta with balances, token balances, logs, loaded
//! addresses, version) and `getSignaturesForAddress` entries. Called from the demo ledger's
//! thread; pure.
//!
//! Invariant: every value is built from `wire` types, so what the demo emits is exactly what
//! `wire::parse` reads back; field names and string/number choices follow the node (token
//! amounts and stake amounts are strings, lamports are numbers, a zero `uiAmount` in a
//! transaction's token balances is `null`). `json!` interpolates only strings, numbers,
//! addresses and lists of them, whose serialization cannot fail (the macro's internal
//! `expect` is unreachable). Deliberately absent: `rewards` and `status`
//! (the wire types do not carry them).

use std::cell::RefCell;

use simd_json::json;

use crate::ledger::demo::clock;
use crate::ledger::demo::keys::{self, BUILTIN};
use crate::ledger::demo::state::{token_program_of, Acct, Data, MintAcct, MintExt, StakeAcct, TokenAcct, NONCE_LEN};
use crate::ledger::demo::tx::{Compiled, Executed, Op, TokenBalance, TxFailure, TxSpec};
use crate::ledger::model::TokenProgram;
use crate::ledger::wire::{
    AddressTableLookup, InnerInstructions, LoadedAddresses, ParsedAccountData, ParsedAccountKey, ParsedInstruction,
    ParsedMessage, PartiallyDecodedInstruction, SignatureInfo, TransactionResult, TransactionWithMeta, UiAccount,
    UiAccountData, UiInstruction, UiMessage, UiMeta, UiTokenAmount, UiTokenBalance, UiTransaction,
    UiTransactionVersion, Value,
};
use crate::pubkey::{Pubkey, Signature};

/// What nodes report as the rent epoch of rent-exempt accounts.
const RENT_EPOCH_EXEMPT: u64 = u64::MAX;
const STAKE_DEACTIVATION_EPOCH_NONE: &str = "18446744073709551615";
const STAKE_WARMUP_COOLDOWN_RATE: f64 = 0.25;

/// Base58 text of the keys one response names, each encoded once: base58 is quadratic in
/// the key length, and a transaction repeats the same keys in its account keys, instructions,
/// token balances and logs. Lives for one response only.
#[derive(Default)]
pub struct Names(RefCell<Vec<(Pubkey, String)>>);

impl Names {
    pub fn get(&self, key: &Pubkey) -> String {
        let mut known = self.0.borrow_mut();
        if let Some((_, text)) = known.iter().find(|(k, _)| k == key) {
            return text.clone();
        }
        let text = key.to_string();
        known.push((*key, text.clone()));
        text
    }
}

/// `123.45` for 12345 with 2 decimals; trailing zeros trimmed, as the node's
/// `uiAmountString`.
pub fn ui_amount_string(amount: u64, decimals: u8) -> String {
    let scale = 10u128.pow(u32::from(decimals));
    let (whole, frac) = (u128::from(amount) / scale, u128::from(amount) % scale);
    if frac == 0 {
        return whole.to_string();
    }
    let frac = format!("{frac:0width$}", width = usize::from(decimals));
    format!("{whole}.{}", frac.trim_end_matches('0'))
}

fn ui_token_amount(amount: u64, decimals: u8, zero_is_null: bool) -> UiTokenAmount {
    let ui = amount as f64 / 10f64.powi(i32::from(decimals));
    UiTokenAmount {
        amount: amount.to_string(),
        decimals,
        ui_amount: if zero_is_null && amount == 0 { None } else { Some(ui) },
        ui_amount_string: ui_amount_string(amount, decimals),
    }
}

fn token_amount_value(amount: u64, decimals: u8) -> Value {
    let a = ui_token_amount(amount, decimals, false);
    json!({"amount": a.amount, "decimals": a.decimals, "uiAmount": a.ui_amount, "uiAmountString": a.ui_amount_string})
}

fn parsed_data(program: &str, kind: &str, info: Value, space: u64) -> UiAccountData {
    UiAccountData::Parsed(ParsedAccountData {
        program: program.to_owned(),
        parsed: json!({"info": info, "type": kind}),
        space,
    })
}

fn binary(bytes: &[u8]) -> UiAccountData {
    UiAccountData::Binary(vec![keys::base64(bytes), "base64".to_owned()])
}

fn token_program_name(program: TokenProgram) -> &'static str {
    match program {
        TokenProgram::Token => "spl-token",
        TokenProgram::Token2022 => "spl-token-2022",
    }
}

/// The most zero bytes an uninitialized account is emitted with: the demo's own are small,
/// and a simulated `createAccount` of megabytes must not make the lane build them.
const UNINITIALIZED_BYTES_MAX: usize = 64 * 1024;

/// An account in its on-chain layout as `getAccountInfo` with `encoding: base64` returns it.
pub fn binary_account(a: &crate::runtime::PreAccount) -> UiAccount {
    UiAccount {
        lamports: a.lamports,
        owner: a.owner.to_string(),
        data: binary(&a.data),
        executable: a.executable,
        rent_epoch: RENT_EPOCH_EXEMPT,
        space: Some(a.data.len() as u64),
    }
}

/// An account as `getAccountInfo` (jsonParsed) returns it.
pub fn account(a: &Acct) -> UiAccount {
    let space = a.space();
    let executable = a.executable();
    let token_program = token_program_of(&a.owner);
    let data = match (&a.data, token_program) {
        (Data::Empty, _) => binary(&[]),
        // Bounded: the data of an uninitialized account is zeros; past 64 KiB they are cut.
        (Data::Uninitialized { space }, _) => {
            binary(&vec![0; usize::try_from(*space).unwrap_or(0).min(UNINITIALIZED_BYTES_MAX)])
        }
        (Data::Token(t), Some(p)) => parsed_data(token_program_name(p), "account", token_account_info(t, p), space),
        (Data::Mint(m), Some(p)) => parsed_data(token_program_name(p), "mint", mint_info(m, p), space),
        (Data::Nonce { authority, blockhash }, _) => {
            let info = json!({
                "authority": authority, "blockhash": blockhash,
                "feeCalculator": {"lamportsPerSignature": "5000"},
            });
            parsed_data("nonce", "initialized", info, NONCE_LEN)
        }
        (Data::Stake(s), _) => stake_data(s, space),
        (Data::Program { program_data }, _) => {
            parsed_data("bpf-upgradeable-loader", "program", json!({"programData": program_data}), space)
        }
        (Data::LookupTable { authority, addresses }, _) => {
            let info = json!({
                "deactivationSlot": "18446744073709551615", "lastExtendedSlot": "0",
                "lastExtendedSlotStartIndex": 0, "authority": authority, "addresses": addresses,
            });
            parsed_data("address-lookup-table", "lookupTable", info, space)
        }
        (Data::Bytes(bytes), _) => binary(bytes),
        // Token data under a non-token owner cannot be built by the demo; emit it raw.
        (Data::Token(_) | Data::Mint(_), None) => binary(&[]),
    };
    UiAccount {
        lamports: a.lamports,
        owner: a.owner.to_string(),
        data,
        executable,
        rent_epoch: RENT_EPOCH_EXEMPT,
        space: Some(space),
    }
}

fn mint_info(m: &MintAcct, program: TokenProgram) -> Value {
    let mut info = json!({
        "mintAuthority": m.mint_authority, "supply": m.supply.to_string(), "decimals": m.decimals,
        "isInitialized": true, "freezeAuthority": m.freeze_authority,
    });
    if program == TokenProgram::Token2022 {
        let exts: Vec<Value> = m.extensions.iter().map(mint_extension).collect();
        insert(&mut info, "extensions", Value::from(exts));
    }
    info
}

fn insert(object: &mut Value, key: &str, value: Value) {
    if let Value::Object(map) = object {
        map.insert(key.to_owned(), value);
    }
}

fn token_account_info(t: &TokenAcct, program: TokenProgram) -> Value {
    let mut info = json!({
        "isNative": false, "mint": t.mint, "owner": t.owner,
        "state": if t.frozen { "frozen" } else { "initialized" },
        "tokenAmount": token_amount_value(t.amount, t.decimals),
    });
    if let Some(delegate) = t.delegate {
        insert(&mut info, "delegate", json!(delegate));
        insert(&mut info, "delegatedAmount", token_amount_value(t.delegated_amount, t.decimals));
    }
    if let Some(close) = t.close_authority {
        insert(&mut info, "closeAuthority", json!(close));
    }
    if program == TokenProgram::Token2022 {
        let mut exts = vec![json!({"extension": "immutableOwner"})];
        if t.exts.hook {
            exts.push(json!({"extension": "transferHookAccount", "state": {"transferring": false}}));
        }
        if t.exts.fee {
            exts.push(json!({"extension": "transferFeeAmount", "state": {"withheldAmount": t.withheld}}));
        }
        if t.exts.non_transferable {
            exts.push(json!({"extension": "nonTransferableAccount"}));
        }
        insert(&mut info, "extensions", Value::from(exts));
    }
    info
}

fn mint_extension(e: &MintExt) -> Value {
    match e {
        MintExt::PermanentDelegate(delegate) => {
            json!({"extension": "permanentDelegate", "state": {"delegate": delegate}})
        }
        MintExt::TransferHook { authority, program } => {
            json!({"extension": "transferHook", "state": {"authority": authority, "programId": program}})
        }
        MintExt::TransferFee { authority, basis_points, maximum_fee, epoch } => {
            let fee = json!({"epoch": epoch, "maximumFee": maximum_fee, "transferFeeBasisPoints": basis_points});
            json!({"extension": "transferFeeConfig", "state": {
                "newerTransferFee": fee, "olderTransferFee": fee, "transferFeeConfigAuthority": authority,
                "withdrawWithheldAuthority": authority, "withheldAmount": 0,
            }})
        }
        MintExt::NonTransferable => json!({"extension": "nonTransferable"}),
        MintExt::DefaultFrozen => json!({"extension": "defaultAccountState", "state": {"accountState": "frozen"}}),
        MintExt::CloseAuthority(authority) => {
            json!({"extension": "mintCloseAuthority", "state": {"closeAuthority": authority}})
        }
    }
}

fn stake_data(s: &StakeAcct, space: u64) -> UiAccountData {
    let meta = json!({
        "rentExemptReserve": crate::ledger::demo::state::rent(space).to_string(),
        "authorized": {"staker": s.staker, "withdrawer": s.withdrawer},
        "lockup": {"unixTimestamp": 0, "epoch": 0, "custodian": BUILTIN.system},
    });
    match &s.delegation {
        None => parsed_data("stake", "initialized", json!({"meta": meta}), space),
        Some(d) => {
            let stake = json!({
                "delegation": {
                    "voter": d.voter, "stake": d.stake.to_string(),
                    "activationEpoch": d.activation_epoch.to_string(),
                    "deactivationEpoch": STAKE_DEACTIVATION_EPOCH_NONE,
                    "warmupCooldownRate": STAKE_WARMUP_COOLDOWN_RATE,
                },
                "creditsObserved": s.credits_observed,
            });
            parsed_data("stake", "delegated", json!({"meta": meta, "stake": stake}), space)
        }
    }
}

fn parsed_ix(program: &str, op: &Op, parsed: Value, height: Option<u32>, names: &Names) -> UiInstruction {
    UiInstruction::Parsed(ParsedInstruction {
        program: program.to_owned(),
        program_id: names.get(&op.program()),
        parsed,
        stack_height: height,
    })
}

fn typed(kind: &str, info: Value) -> Value {
    json!({"info": info, "type": kind})
}

/// Base58 of a key, through the response's `Names`.
type Name<'a> = &'a dyn Fn(&Pubkey) -> String;

/// One instruction in jsonParsed form; `height` is `None` for outer instructions.
pub fn instruction(op: &Op, height: Option<u32>, names: &Names) -> UiInstruction {
    let k = |p: &Pubkey| names.get(p);
    let parsed =
        system_ix(op, &k).or_else(|| stake_ix(op, &k)).or_else(|| token_ix(op, &k)).or_else(|| other_ix(op, &k));
    match parsed {
        Some((program, value)) => parsed_ix(program, op, value, height, names),
        None => {
            let (data, accounts) = match op {
                Op::ComputeLimit(units) => ([&[2], &units.to_le_bytes()[..]].concat(), Vec::new()),
                Op::ComputePrice(price) => ([&[3], &price.to_le_bytes()[..]].concat(), Vec::new()),
                Op::Raw { accounts, data, .. } => (data.clone(), accounts.iter().map(|(k, _)| *k).collect()),
                _ => (Vec::new(), Vec::new()),
            };
            raw_ix(op, &data, &accounts, height, names)
        }
    }
}

fn system_ix(op: &Op, k: Name<'_>) -> Option<(&'static str, Value)> {
    let b = &*BUILTIN;
    let parsed = match op {
        Op::Transfer { from, to, lamports } => {
            typed("transfer", json!({"destination": k(to), "lamports": lamports, "source": k(from)}))
        }
        Op::CreateAccount { funder, account, lamports, space, owner } => typed(
            "createAccount",
            json!({"lamports": lamports, "newAccount": k(account), "owner": k(owner), "source": k(funder),
                   "space": space}),
        ),
        Op::Assign { account, owner } => typed("assign", json!({"account": k(account), "owner": k(owner)})),
        Op::NonceInit { nonce, authority } => typed(
            "initializeNonce",
            json!({"nonceAccount": k(nonce), "nonceAuthority": k(authority),
                   "recentBlockhashesSysvar": k(&b.sysvar_recent_blockhashes), "rentSysvar": k(&b.sysvar_rent)}),
        ),
        Op::NonceAdvance { nonce, authority } => typed(
            "advanceNonce",
            json!({"nonceAccount": k(nonce), "nonceAuthority": k(authority),
                   "recentBlockhashesSysvar": k(&b.sysvar_recent_blockhashes)}),
        ),
        Op::NonceAuthorize { nonce, authority, new_authority } => typed(
            "authorizeNonce",
            json!({"newAuthorized": k(new_authority), "nonceAccount": k(nonce), "nonceAuthority": k(authority)}),
        ),
        Op::NonceWithdraw { nonce, authority, to, lamports } => typed(
            "withdrawFromNonce",
            json!({"destination": k(to), "lamports": lamports, "nonceAccount": k(nonce), "nonceAuthority": k(authority),
                   "recentBlockhashesSysvar": k(&b.sysvar_recent_blockhashes), "rentSysvar": k(&b.sysvar_rent)}),
        ),
        _ => return None,
    };
    Some(("system", parsed))
}

fn stake_ix(op: &Op, k: Name<'_>) -> Option<(&'static str, Value)> {
    let b = &*BUILTIN;
    let parsed = match op {
        Op::StakeInit { stake, staker, withdrawer } => typed(
            "initialize",
            json!({"authorized": {"staker": k(staker), "withdrawer": k(withdrawer)},
                   "lockup": {"custodian": k(&b.system), "epoch": 0, "unixTimestamp": 0},
                   "rentSysvar": k(&b.sysvar_rent), "stakeAccount": k(stake)}),
        ),
        Op::StakeDelegate { stake, vote, authority } => typed(
            "delegate",
            json!({"clockSysvar": k(&b.sysvar_clock), "stakeAccount": k(stake), "stakeAuthority": k(authority),
                   "stakeConfigAccount": k(&b.stake_config), "stakeHistorySysvar": k(&b.sysvar_stake_history),
                   "voteAccount": k(vote)}),
        ),
        Op::StakeAuthorize { stake, authority, new_authority, withdrawer } => typed(
            "authorize",
            json!({"authority": k(authority), "authorityType": if *withdrawer { "Withdrawer" } else { "Staker" },
                   "clockSysvar": k(&b.sysvar_clock), "newAuthority": k(new_authority), "stakeAccount": k(stake)}),
        ),
        _ => return None,
    };
    Some(("stake", parsed))
}

fn token_ix(op: &Op, k: Name<'_>) -> Option<(&'static str, Value)> {
    let (program, parsed) = match op {
        Op::TokenDataSize { mint, program, exts } => {
            let types: Vec<&str> = std::iter::once("immutableOwner").chain(exts.names()).collect();
            (program, typed("getAccountDataSize", json!({"extensionTypes": types, "mint": k(mint)})))
        }
        Op::TokenImmutableOwner { account, program } => {
            (program, typed("initializeImmutableOwner", json!({"account": k(account)})))
        }
        Op::TokenInitAccount { account, mint, owner, program, .. } => {
            (program, typed("initializeAccount3", json!({"account": k(account), "mint": k(mint), "owner": k(owner)})))
        }
        Op::TokenMintTo { mint, account, authority, amount, decimals, program } => (
            program,
            typed(
                "mintToChecked",
                json!({"account": k(account), "mint": k(mint), "mintAuthority": k(authority),
                       "tokenAmount": token_amount_value(*amount, *decimals)}),
            ),
        ),
        Op::TokenClose { account, destination, owner, program } => (
            program,
            typed("closeAccount", json!({"account": k(account), "destination": k(destination), "owner": k(owner)})),
        ),
        Op::TokenThaw { account, mint, authority, program } => (
            program,
            typed("thawAccount", json!({"account": k(account), "freezeAuthority": k(authority), "mint": k(mint)})),
        ),
        Op::TokenTransfer { source, destination, authority, amount, program, checked } => {
            let info = match checked {
                None => json!({"amount": amount.to_string(), "authority": k(authority),
                               "destination": k(destination), "source": k(source)}),
                Some(c) => json!({"authority": k(authority), "destination": k(destination), "mint": k(&c.mint),
                                  "source": k(source), "tokenAmount": token_amount_value(*amount, c.decimals)}),
            };
            (program, typed(if checked.is_some() { "transferChecked" } else { "transfer" }, info))
        }
        Op::TokenApprove { account, delegate, owner, amount, program, checked } => {
            let info = match checked {
                None => json!({"amount": amount.to_string(), "delegate": k(delegate), "owner": k(owner),
                               "source": k(account)}),
                Some(c) => json!({"delegate": k(delegate), "mint": k(&c.mint), "owner": k(owner),
                                  "source": k(account), "tokenAmount": token_amount_value(*amount, c.decimals)}),
            };
            (program, typed(if checked.is_some() { "approveChecked" } else { "approve" }, info))
        }
        Op::TokenSetOwner { account, authority, new_owner, program } => (
            program,
            typed(
                "setAuthority",
                json!({"account": k(account), "authority": k(authority), "authorityType": "accountOwner",
                       "newAuthority": k(new_owner)}),
            ),
        ),
        Op::TokenSetCloseAuthority { account, authority, new_authority, program } => (
            program,
            typed(
                "setAuthority",
                json!({"account": k(account), "authority": k(authority), "authorityType": "closeAccount",
                       "newAuthority": new_authority.as_ref().map(k)}),
            ),
        ),
        Op::TokenRevoke { account, owner, program } => {
            (program, typed("revoke", json!({"owner": k(owner), "source": k(account)})))
        }
        _ => return None,
    };
    Some((token_program_name(*program), parsed))
}

/// The associated-token-account program and memos; compute-budget and unknown programs are
/// not parsed by a node (`None`).
fn other_ix(op: &Op, k: Name<'_>) -> Option<(&'static str, Value)> {
    let b = &*BUILTIN;
    match op {
        Op::AtaCreate { funder, account, wallet, mint, program } => Some((
            "spl-associated-token-account",
            typed(
                "create",
                json!({"account": k(account), "mint": k(mint), "source": k(funder), "systemProgram": k(&b.system),
                       "tokenProgram": k(&b.token_program(*program)), "wallet": k(wallet)}),
            ),
        )),
        Op::Memo(text) => Some(("spl-memo", json!(text))),
        _ => None,
    }
}

fn raw_ix(op: &Op, data: &[u8], accounts: &[Pubkey], height: Option<u32>, names: &Names) -> UiInstruction {
    UiInstruction::PartiallyDecoded(PartiallyDecodedInstruction {
        program_id: names.get(&op.program()),
        accounts: accounts.iter().map(|a| names.get(a)).collect(),
        data: bs58::encode(data).into_string(),
        stack_height: height,
    })
}

/// `(log line naming the instruction, compute units it uses)`.
fn log_and_units(op: &Op) -> (Option<String>, u64) {
    let token = |name: &str, units| (Some(format!("Program log: Instruction: {name}")), units);
    match op {
        Op::Transfer { .. } | Op::CreateAccount { .. } | Op::Assign { .. } => (None, 150),
        Op::NonceInit { .. } | Op::NonceAdvance { .. } | Op::NonceAuthorize { .. } | Op::NonceWithdraw { .. } => {
            (None, 450)
        }
        Op::StakeInit { .. } | Op::StakeDelegate { .. } | Op::StakeAuthorize { .. } => (None, 750),
        Op::AtaCreate { .. } => (Some("Program log: Create".to_owned()), 14_000),
        Op::TokenDataSize { .. } => token("GetAccountDataSize", 1_569),
        Op::TokenImmutableOwner { .. } => token("InitializeImmutableOwner", 1_405),
        Op::TokenInitAccount { .. } => token("InitializeAccount3", 3_158),
        Op::TokenMintTo { .. } => token("MintToChecked", 4_500),
        Op::TokenThaw { .. } => token("ThawAccount", 3_100),
        Op::TokenClose { .. } => token("CloseAccount", 2_916),
        Op::TokenTransfer { checked: None, .. } => token("Transfer", 4_644),
        Op::TokenTransfer { .. } => token("TransferChecked", 6_200),
        Op::TokenApprove { checked: None, .. } => token("Approve", 2_904),
        Op::TokenApprove { .. } => token("ApproveChecked", 4_456),
        Op::TokenSetOwner { .. } | Op::TokenSetCloseAuthority { .. } => token("SetAuthority", 3_000),
        Op::TokenRevoke { .. } => token("Revoke", 2_677),
        Op::Memo(text) => (Some(format!("Program log: Memo (len {}): {text:?}", text.len())), 2_862),
        Op::ComputeLimit(_) | Op::ComputePrice(_) => (None, 150),
        Op::Raw { name, .. } => token(name, 38_000),
    }
}

/// Program logs of the instructions up to (and including) a failing one, nested by stack
/// height. Returns the logs and the compute units consumed.
fn logs(spec: &TxSpec, names: &Names) -> (Vec<String>, u64) {
    let mut out = Vec::new();
    let mut consumed = 0u64;
    let (limit, _) = spec.compute_budget();
    for (i, ix) in spec.ixs.iter().enumerate() {
        let failed = spec.failure.filter(|f| usize::from(f.index) == i);
        let program = names.get(&ix.op.program());
        out.push(format!("Program {program} invoke [1]"));
        let (line, own) = log_and_units(&ix.op);
        out.extend(line);
        let mut units = own;
        if failed.is_none() {
            units += inner_logs(&ix.inner, &mut out, names);
        }
        consumed += units;
        let budget = limit.saturating_sub(consumed - units);
        // Native programs (system, compute budget) log no consumption.
        if ![BUILTIN.system, BUILTIN.compute_budget].contains(&ix.op.program()) {
            out.push(format!("Program {program} consumed {units} of {budget} compute units"));
        }
        if let Some(f) = failed {
            out.push(format!("Program {program} failed: custom program error: {:#x}", f.code));
            break;
        }
        out.push(format!("Program {program} success"));
    }
    (out, consumed)
}

fn inner_logs(inner: &[(u32, Op)], out: &mut Vec<String>, names: &Names) -> u64 {
    let mut open: Vec<(u32, String)> = Vec::new();
    let mut units = 0;
    for (height, op) in inner {
        while open.last().is_some_and(|(h, _)| h >= height) {
            if let Some((_, p)) = open.pop() {
                out.push(format!("Program {p} success"));
            }
        }
        let program = names.get(&op.program());
        out.push(format!("Program {program} invoke [{height}]"));
        let (line, u) = log_and_units(op);
        out.extend(line);
        units += u;
        open.push((*height, program));
    }
    while let Some((_, p)) = open.pop() {
        out.push(format!("Program {p} success"));
    }
    units
}

/// `{"InstructionError": [index, {"Custom": code}]}`.
pub fn error_value(f: TxFailure) -> Value {
    json!({"InstructionError": [f.index, {"Custom": f.code}]})
}

fn token_balance(b: &TokenBalance, names: &Names) -> UiTokenBalance {
    UiTokenBalance {
        account_index: b.index,
        mint: names.get(&b.mint),
        owner: Some(names.get(&b.owner)),
        program_id: Some(names.get(&BUILTIN.token_program(b.program))),
        ui_token_amount: ui_token_amount(b.amount, b.decimals, true),
    }
}

/// The recent blockhash a transaction at `slot` names.
pub fn blockhash(seed: u64, slot: u64) -> String {
    bs58::encode(keys::seeded(seed, "blockhash", &slot.to_le_bytes())).into_string()
}

/// A whole `getTransaction` result. `id` is the transaction's first signature.
pub fn transaction(
    spec: &TxSpec,
    compiled: &Compiled,
    exec: &Executed,
    id: &Signature,
    seed: u64,
) -> TransactionResult {
    let names = Names::default();
    let signatures = (0..spec.signers.len())
        .map(|i| match u8::try_from(i) {
            Ok(0) | Err(_) => id.to_string(),
            Ok(p) => keys::cosigner_signature(seed, id, p).to_string(),
        })
        .collect();
    let version = match spec.lookup {
        Some(_) => UiTransactionVersion::Number(0),
        None => UiTransactionVersion::Legacy("legacy".to_owned()),
    };
    TransactionResult {
        slot: spec.slot,
        block_time: Some(clock::block_time(spec.slot)),
        tx: TransactionWithMeta {
            transaction: UiTransaction {
                signatures,
                message: UiMessage::Parsed(message(spec, compiled, seed, &names)),
            },
            meta: Some(meta(spec, compiled, exec, &names)),
            version: Some(version),
        },
    }
}

fn message(spec: &TxSpec, compiled: &Compiled, seed: u64, names: &Names) -> ParsedMessage {
    let account_keys = compiled
        .keys
        .iter()
        .map(|k| ParsedAccountKey {
            pubkey: names.get(&k.pubkey),
            signer: k.signer,
            writable: k.writable,
            source: Some(if k.loaded { "lookupTable" } else { "transaction" }.to_owned()),
        })
        .collect();
    let address_table_lookups = spec.lookup.as_ref().map(|l| {
        if compiled.writable_indexes.is_empty() && compiled.readonly_indexes.is_empty() {
            Vec::new()
        } else {
            vec![AddressTableLookup {
                account_key: names.get(&l.table),
                writable_indexes: compiled.writable_indexes.clone(),
                readonly_indexes: compiled.readonly_indexes.clone(),
            }]
        }
    });
    ParsedMessage {
        account_keys,
        recent_blockhash: blockhash(seed, spec.slot),
        instructions: spec.ixs.iter().map(|ix| instruction(&ix.op, None, names)).collect(),
        address_table_lookups,
    }
}

fn meta(spec: &TxSpec, compiled: &Compiled, exec: &Executed, names: &Names) -> UiMeta {
    let loaded = |writable: bool| {
        compiled.keys.iter().filter(|k| k.loaded && k.writable == writable).map(|k| names.get(&k.pubkey)).collect()
    };
    let (log_messages, units) = logs(spec, names);
    UiMeta {
        err: spec.failure.map(error_value),
        fee: exec.fee,
        pre_balances: exec.pre.clone(),
        post_balances: exec.post.clone(),
        inner_instructions: Some(inner_instructions(spec, names)),
        pre_token_balances: Some(exec.pre_tokens.iter().map(|b| token_balance(b, names)).collect()),
        post_token_balances: Some(exec.post_tokens.iter().map(|b| token_balance(b, names)).collect()),
        log_messages: Some(log_messages),
        loaded_addresses: Some(LoadedAddresses { writable: loaded(true), readonly: loaded(false) }),
        compute_units_consumed: Some(units),
    }
}

/// Inner instructions of the outer instructions that ran (a failing one's CPIs are rolled
/// back and, for the demo's failures, never started).
fn inner_instructions(spec: &TxSpec, names: &Names) -> Vec<InnerInstructions> {
    let ran = spec.failure.map_or(spec.ixs.len(), |f| usize::from(f.index));
    spec.ixs
        .iter()
        .enumerate()
        .take(ran)
        .filter(|(_, ix)| !ix.inner.is_empty())
        .filter_map(|(i, ix)| {
            Some(InnerInstructions {
                index: u8::try_from(i).ok()?,
                instructions: ix.inner.iter().map(|(h, op)| instruction(op, Some(*h), names)).collect(),
            })
        })
        .collect()
}

/// One `getSignaturesForAddress` entry.
pub fn signature_info(
    signature: &Signature,
    slot: u64,
    failure: Option<TxFailure>,
    memo: Option<String>,
) -> SignatureInfo {
    SignatureInfo {
        signature: signature.to_string(),
        slot,
        err: failure.map(error_value),
        memo,
        block_time: Some(clock::block_time(slot)),
        confirmation_status: Some("finalized".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::demo::keys::named_wallet;
    use crate::ledger::demo::state::TokenAcct;
    use crate::ledger::model::{AccountKind, AccountState, TokenAccount};

    #[test]
    fn ui_amounts_match_node_text() {
        assert_eq!(ui_amount_string(0, 6), "0");
        assert_eq!(ui_amount_string(1_500_000, 6), "1.5");
        assert_eq!(ui_amount_string(1, 6), "0.000001");
        assert_eq!(ui_amount_string(u64::MAX, 0), "18446744073709551615");
        assert_eq!(ui_amount_string(42, 0), "42");
        assert!(ui_token_amount(0, 6, true).ui_amount.is_none());
    }

    #[test]
    fn token_account_decodes_with_delegate() {
        let (mint, owner, delegate) = (named_wallet("m"), named_wallet("o"), named_wallet("d"));
        let t = TokenAcct { delegate: Some(delegate), delegated_amount: u64::MAX, ..TokenAcct::new(mint, owner, 6) };
        let ui = account(&Acct::token_account(TokenProgram::Token, t));
        let decoded = TokenAccount::from_wire(named_wallet("ta"), &ui).unwrap();
        assert_eq!(decoded.delegate, Some(delegate));
        assert_eq!(decoded.delegated_amount, u64::MAX);
        assert_eq!(AccountState::from_wire(&ui).unwrap().kind, AccountKind::TokenAccount);
    }

    #[test]
    fn nested_logs_close_in_order() {
        let p = named_wallet("router");
        let raw = |name| Op::Raw { program: p, accounts: vec![], data: vec![], name, moves: vec![] };
        let mut out = Vec::new();
        inner_logs(&[(2, raw("A")), (3, Op::Memo("x".into())), (2, raw("B"))], &mut out, &Names::default());
        let invokes: Vec<&String> = out.iter().filter(|l| l.contains("invoke") || l.ends_with("success")).collect();
        assert_eq!(invokes.len(), 6);
        assert!(out[2].contains("invoke [3]"));
        assert!(out[4].ends_with("success") && out[5].ends_with("success"));
        assert!(out[6].contains("invoke [2]"));
    }
}
