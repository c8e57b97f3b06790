//! `simulateTransaction` on the demo ledger: a serialized transaction decoded, translated into
//! the demo's own instruction set (`tx::Op`) and executed by the same executor that built the
//! demo's history, on a copy of the accounts it touches.
//!
//! Owns: `simulate`. Called on the thread that owns the `DemoLedger` (the scan lane, the local
//! JSON-RPC server); pure over the ledger's state, which it never changes.
//!
//! Invariant: an instruction the demo does not execute (an unknown program, a type it does not
//! model) skips the whole simulation with a reason naming it — never a partial result.
//! Invariant: the fee is the runtime's: 5,000 lamports per required signature plus the
//! priority fee its compute-budget instructions ask for, charged to the fee payer.
//! Deliberately absent: signature checks (a scan simulates before signing), the blockhash
//! check (replaced, as `replaceRecentBlockhash` asks) and program rules the executor does not
//! hold (it reports overdrafts and missing accounts as a failed transaction).

use super::clock::AS_OF_SLOT;
use super::emit;
use super::state::{Acct, Data, State, TokenAcct};
use super::tx::{self, Ix, Op, TxSpec};
use super::DemoLedger;
use crate::ledger::instruction::{Instruction, InstructionKind as K, StakeAuthorityType, TokenAuthorityType};
use crate::ledger::model::TokenProgram;
use crate::ledger::read::Simulated;
use crate::ledger::transaction::message::{self, Parsed};
use crate::ledger::transaction::programs::{compute_budget_setting, ComputeBudgetSetting};
use crate::ledger::transaction::{decode, Decoded};
use crate::ledger::wire::{RpcContext, SimulateValue, Value, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;

/// The most data an account may hold (the runtime's `MAX_PERMITTED_DATA_LENGTH`, 10 MiB).
const ACCOUNT_DATA_BYTES_MAX: u64 = 10 * 1024 * 1024;

/// The slot a simulation runs in: the one after the demo's last.
const SIMULATION_SLOT: u64 = AS_OF_SLOT + 1;

pub fn simulate(ledger: &DemoLedger, bytes: &[u8], wanted: &[Pubkey]) -> Result<Simulated, LedgerError> {
    let parsed = message::parse(bytes).map_err(|e| LedgerError::Invalid(format!("transaction: {e}")))?;
    let tables = tables(ledger, &parsed)?;
    let decoded = decode(&parsed, &tables).map_err(|e| LedgerError::Invalid(format!("transaction: {e}")))?;
    let mut state = touched_state(ledger, &decoded);
    let ixs = match ops(&parsed, &decoded, &state) {
        Ok(ixs) => ixs,
        Err(reason) => return Ok(Simulated::Skipped(reason)),
    };
    let signers: Vec<Pubkey> = decoded.resolved.accounts.iter().filter(|a| a.signer).map(|a| a.address).collect();
    let spec = TxSpec::new(SIMULATION_SLOT, signers, ixs);
    let compiled = tx::compile(&spec);
    let (_, errors) = tx::execute(&spec, &compiled, &mut state, ledger.seed());
    let context = RpcContext { slot: SIMULATION_SLOT };
    if let Some(first) = errors.first() {
        let value =
            SimulateValue { err: Some(Value::from(first.0.clone())), logs: None, accounts: None, units_consumed: None };
        return Ok(Simulated::Ran(WithContext { context, value }));
    }
    let accounts = wanted.iter().map(|k| state.get(k).filter(|a| a.lamports > 0).map(emit::account)).collect();
    let value = SimulateValue { err: None, logs: None, accounts: Some(accounts), units_consumed: None };
    Ok(Simulated::Ran(WithContext { context, value }))
}

/// The addresses of each lookup table the message loads from, as the demo holds them.
fn tables(ledger: &DemoLedger, parsed: &Parsed) -> Result<Vec<Vec<Pubkey>>, LedgerError> {
    parsed
        .lookups
        .iter()
        .map(|lookup| match ledger.account(&lookup.table).map(|a| a.data) {
            Some(Data::LookupTable { addresses, .. }) => Ok(addresses),
            _ => Err(LedgerError::Invalid(format!("{} is not an address lookup table", lookup.table))),
        })
        .collect()
}

/// The accounts the transaction names, and the mints of its token accounts (their decimals
/// and Token-2022 extensions decide what a transfer does).
fn touched_state(ledger: &DemoLedger, decoded: &Decoded) -> State {
    let mut state = State::new();
    for account in &decoded.resolved.accounts {
        if let Some(a) = ledger.account(&account.address) {
            state.insert(account.address, a);
        }
    }
    let mints: Vec<Pubkey> = state.values().filter_map(Acct::token).map(|t| t.mint).collect();
    for mint in mints {
        if let Some(a) = ledger.account(&mint) {
            state.entry(mint).or_insert(a);
        }
    }
    state
}

fn unsupported(ix: &Instruction) -> String {
    format!(
        "the demo ledger does not execute {} `{}` (instruction {}); its findings stand, its effects are not predicted",
        ix.program.name(),
        ix.name,
        ix.index.outer
    )
}

/// Every instruction as the demo's own, or why one cannot be.
fn ops(parsed: &Parsed, decoded: &Decoded, state: &State) -> Result<Vec<Ix>, String> {
    let mut out = Vec::with_capacity(decoded.instructions.len());
    for (ix, compiled) in decoded.instructions.iter().zip(&parsed.instructions) {
        let program = || TokenProgram::of(ix.program).ok_or_else(|| unsupported(ix));
        let op = match &ix.kind {
            K::SystemTransfer { from, to, lamports } => Op::Transfer { from: *from, to: *to, lamports: *lamports },
            // The runtime refuses more than 10 MiB of account data; the demo must not hold it.
            K::SystemCreateAccount { space, .. } if *space > ACCOUNT_DATA_BYTES_MAX => {
                return Err(format!(
                    "instruction {} creates an account of {space} bytes; the runtime allows at most \
                     {ACCOUNT_DATA_BYTES_MAX}: it would fail",
                    ix.index.outer
                ))
            }
            K::SystemCreateAccount { funder, account, lamports, space, owner } => Op::CreateAccount {
                funder: *funder,
                account: *account,
                lamports: *lamports,
                space: *space,
                owner: *owner,
            },
            K::SystemAssign { account, owner } => Op::Assign { account: *account, owner: *owner },
            K::NonceInitialize { nonce, authority } => Op::NonceInit { nonce: *nonce, authority: *authority },
            K::NonceAdvance { nonce, authority } => Op::NonceAdvance { nonce: *nonce, authority: *authority },
            K::NonceAuthorize { nonce, authority, new_authority } => {
                Op::NonceAuthorize { nonce: *nonce, authority: *authority, new_authority: *new_authority }
            }
            K::NonceWithdraw { nonce, authority, to, lamports } => {
                Op::NonceWithdraw { nonce: *nonce, authority: *authority, to: *to, lamports: *lamports }
            }
            K::StakeInitialize { stake, staker, withdrawer, .. } => {
                Op::StakeInit { stake: *stake, staker: *staker, withdrawer: *withdrawer }
            }
            K::StakeDelegate { stake, vote, authority } => {
                Op::StakeDelegate { stake: *stake, vote: *vote, authority: *authority }
            }
            K::StakeAuthorize { stake, authority, new_authority, authority_type } => Op::StakeAuthorize {
                stake: *stake,
                authority: *authority,
                new_authority: *new_authority,
                withdrawer: *authority_type == StakeAuthorityType::Withdrawer,
            },
            K::TokenTransfer { source, destination, authority, amount, .. } => Op::TokenTransfer {
                source: *source,
                destination: *destination,
                authority: *authority,
                amount: *amount,
                program: program()?,
                checked: None,
            },
            K::TokenApprove { account, delegate, owner, amount, .. } => Op::TokenApprove {
                account: *account,
                delegate: *delegate,
                owner: *owner,
                amount: *amount,
                program: program()?,
                checked: None,
            },
            K::TokenRevoke { account, owner } => {
                Op::TokenRevoke { account: *account, owner: *owner, program: program()? }
            }
            K::TokenSetAuthority { target, authority_type, authority, new_authority } => {
                let authority = authority.ok_or_else(|| unsupported(ix))?;
                match authority_type {
                    TokenAuthorityType::AccountOwner => Op::TokenSetOwner {
                        account: *target,
                        authority,
                        new_owner: new_authority.ok_or_else(|| unsupported(ix))?,
                        program: program()?,
                    },
                    TokenAuthorityType::CloseAccount => Op::TokenSetCloseAuthority {
                        account: *target,
                        authority,
                        new_authority: *new_authority,
                        program: program()?,
                    },
                    _ => return Err(unsupported(ix)),
                }
            }
            K::TokenCloseAccount { account, destination, owner } => {
                Op::TokenClose { account: *account, destination: *destination, owner: *owner, program: program()? }
            }
            K::AtaCreate { funder, account, wallet, mint } => {
                out.push(ata_create(*funder, *account, *wallet, *mint, state).ok_or_else(|| unsupported(ix))?);
                continue;
            }
            K::Memo { text } => Op::Memo(text.clone()),
            K::Other if ix.program == crate::ledger::instruction::Program::ComputeBudget => {
                match compute_budget_setting(&compiled.data) {
                    Some(ComputeBudgetSetting::UnitLimit(units)) => Op::ComputeLimit(units),
                    Some(ComputeBudgetSetting::UnitPrice(price)) => Op::ComputePrice(price),
                    // A heap frame or a data-size limit changes nothing the demo models.
                    _ => continue,
                }
            }
            _ => return Err(unsupported(ix)),
        };
        out.push(Ix::new(op));
    }
    Ok(out)
}

/// The associated-token-account program's `create` with the CPIs it makes; nothing when the
/// account exists (`createIdempotent`), `None` when the mint is not one.
fn ata_create(funder: Pubkey, account: Pubkey, wallet: Pubkey, mint: Pubkey, state: &State) -> Option<Ix> {
    let mint_acct = state.get(&mint)?;
    let Data::Mint(m) = &mint_acct.data else { return None };
    let program = super::state::token_program_of(&mint_acct.owner)?;
    let op = Op::AtaCreate { funder, account, wallet, mint, program };
    if state.contains_key(&account) {
        return Some(Ix::new(op));
    }
    let exts = super::state::AccountExts::of(&m.extensions);
    let token = TokenAcct { exts, ..TokenAcct::new(mint, wallet, m.decimals) };
    let space = Acct::token_account(program, token).space();
    let token_program = super::keys::BUILTIN.token_program(program);
    Some(Ix {
        op,
        inner: vec![
            (
                2,
                Op::CreateAccount { funder, account, lamports: super::state::rent(space), space, owner: token_program },
            ),
            (2, Op::TokenInitAccount { account, mint, owner: wallet, program, decimals: m.decimals, exts }),
        ],
    })
}
