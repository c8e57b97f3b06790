//! The pre-sign transaction scan: what a transaction the user is about to sign would do, and
//! how dangerous that is — answered synchronously, before anything is signed.
//!
//! Owns: `ScanError` (what is wrong with a scanned transaction, each mapped to one contract
//! code at the HTTP edge) and the steps the endpoint takes in order: `parse` (bytes → message),
//! `decode` (with its lookup tables, read through the `lane`), `signer` (the one the scan is
//! for), `accounts_to_read` (whose state before and after makes the effects), then the lane's
//! `observe` and `report::build`. Submodules: `lane` (upstream I/O on its own thread),
//! `state` (account states from the wire), `effects` (the signer's diff), `findings` (the
//! judgement of the decoded instructions), `origin` (the judgement of the dApp that asked),
//! `signatures` (each signer's slot verified, and the message's digest that binds a signed
//! answer to its bytes), `report` (the answer document), `sequence` (the answer to several
//! transactions run in order on one state; `sequence_accounts` here picks what they read) and
//! `catalogue` (the findings as `docs/signals.md` lists them).
//! Decoding the bytes themselves is the ledger's (`ledger::transaction`): the demo source
//! executes transactions with it too.
//!
//! Invariant: everything but `lane` is pure — no I/O and no clock; what the ledger says is
//! handed in, so equal input gives byte-identical output.
//! Deliberately absent: signing, and any wait on the ledger on a listener thread.

pub mod catalogue;
pub mod counterparties;
pub mod deadline;
pub mod effects;
pub mod executed;
pub mod findings;
pub mod lane;
pub mod origin;
pub mod report;
pub mod sequence;
pub mod signatures;
pub mod state;
pub mod ttl_cache;
pub mod value;

use thiserror::Error;

use crate::config::MULTIPLE_ACCOUNTS_LEN_MAX;
use crate::ledger::instruction::Program;
use crate::ledger::transaction::message::{self, Parsed};
use crate::ledger::transaction::{self, Decoded, TransactionError};
use crate::pubkey::Pubkey;

/// What is wrong with a transaction sent for a scan.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScanError {
    #[error(transparent)]
    Transaction(#[from] TransactionError),
    #[error("signer {0} is not a signer of this transaction")]
    UnknownSigner(Pubkey),
}

/// The transaction's message (legacy or v0).
pub fn parse(bytes: &[u8]) -> Result<Parsed, ScanError> {
    Ok(message::parse(bytes)?)
}

/// The lookup tables the message loads accounts from, in order (empty for legacy).
pub fn lookup_tables(parsed: &Parsed) -> Vec<Pubkey> {
    parsed.lookups.iter().map(|l| l.table).collect()
}

/// The message's accounts resolved (`tables[i]`: the addresses of its `i`-th table) and its
/// instructions decoded.
pub fn decode(parsed: &Parsed, tables: &[Vec<Pubkey>]) -> Result<Decoded, ScanError> {
    Ok(transaction::decode(parsed, tables)?)
}

/// The wallet the scan is for: `asked` when it signs the transaction, else the fee payer.
/// Signers are always static keys (a lookup table never loads one), so this needs no read.
pub fn signer(parsed: &Parsed, asked: Option<Pubkey>) -> Result<Pubkey, ScanError> {
    let signers = &parsed.static_keys[..usize::from(parsed.required_signatures).min(parsed.static_keys.len())];
    let fee_payer = signers
        .first()
        .copied()
        .ok_or_else(|| ScanError::Transaction(TransactionError::malformed("the message names no fee payer".into())))?;
    match asked {
        Some(signer) if signers.contains(&signer) => Ok(signer),
        Some(signer) => Err(ScanError::UnknownSigner(signer)),
        None => Ok(fee_payer),
    }
}

/// The sysvars a transaction may name (never anyone's: not read).
const SYSVARS: &[&str] = &[
    "SysvarC1ock11111111111111111111111111111111",
    "SysvarRent111111111111111111111111111111111",
    "SysvarRecentB1ockHashes11111111111111111111",
    "SysvarEpochSchedu1e111111111111111111111111",
    "SysvarFees111111111111111111111111111111111",
    "SysvarRewards111111111111111111111111111111",
    "SysvarS1otHashes111111111111111111111111111",
    "SysvarS1otHistory11111111111111111111111111",
    "SysvarStakeHistory1111111111111111111111111",
    "Sysvar1nstructions1111111111111111111111111",
    "SysvarEpochRewards1111111111111111111111111",
    "SysvarLastRestartS1ot1111111111111111111111",
    "StakeConfig11111111111111111111111111111111",
];

/// The accounts whose state before and after the scan compares: every account of the message
/// but the programs it invokes and the sysvars — the signer first, then writable accounts,
/// then read-only ones, at most `MULTIPLE_ACCOUNTS_LEN_MAX` (one `getMultipleAccounts`).
pub fn accounts_to_read(decoded: &Decoded, signer: &Pubkey) -> Vec<Pubkey> {
    let invoked: Vec<Pubkey> = decoded.instructions.iter().map(|ix| ix.program_id).collect();
    let readable = |address: &Pubkey| {
        let text = address.to_string();
        !invoked.contains(address) && !SYSVARS.contains(&text.as_str()) && Program::from_id(&text) == Program::Other
    };
    let mut out = vec![*signer];
    for writable in [true, false] {
        for account in decoded.resolved.accounts.iter().filter(|a| a.writable == writable) {
            if account.address != *signer && readable(&account.address) && !out.contains(&account.address) {
                out.push(account.address);
            }
        }
    }
    out.truncate(MULTIPLE_ACCOUNTS_LEN_MAX);
    out
}

/// Why a sequence cannot be read whole: the accounts its transactions may write (the signer's
/// included) exceed one `getMultipleAccounts`.
pub const SEQUENCE_WRITES_TOO_MANY: &str =
    "the transactions may write more than 100 accounts together: their effects could not all be read; send fewer";

/// The accounts a sequence's reads cover, at most `MULTIPLE_ACCOUNTS_LEN_MAX` (one
/// `getMultipleAccounts`): the signer, then every transaction's writable accounts, then their
/// read-only ones (each transaction's `accounts_to_read`, in order, each once). `Err` when the
/// writable ones do not all fit: a write left unread could hide what a later transaction does
/// (read-only accounts past the bound are left out: nothing changes them).
pub fn sequence_accounts(
    signer: &Pubkey,
    decoded: &[Decoded],
    each: &[Vec<Pubkey>],
) -> Result<Vec<Pubkey>, &'static str> {
    let writable = |d: &Decoded, a: &Pubkey| d.resolved.accounts.iter().any(|r| r.address == *a && r.writable);
    let mut out: Vec<Pubkey> = vec![*signer];
    for wanted_writable in [true, false] {
        for (d, accounts) in decoded.iter().zip(each) {
            for account in accounts.iter().filter(|a| writable(d, a) == wanted_writable) {
                if out.contains(account) {
                    continue;
                }
                if out.len() == MULTIPLE_ACCOUNTS_LEN_MAX {
                    return match wanted_writable {
                        true => Err(SEQUENCE_WRITES_TOO_MANY),
                        false => Ok(out),
                    };
                }
                out.push(*account);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
