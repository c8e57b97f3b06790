//! A guarded transaction: an unsigned transaction with its guard instructions appended, ready to
//! sign.
//!
//! Owns: `append` and `AppendError` (each a named code the answer gives). Pure.
//!
//! Invariant: nothing the transaction did changes. Its instructions, in order and byte for
//! byte, come first — but for a `SetComputeUnitLimit`, raised by `GUARD_UNITS_PER_INSTRUCTION`
//! a guard (at most to the runtime's 1.4 million) — then the guards. No signer and no writable
//! account is added: a guard's
//! target is already an account of the message (it names it by its index, loaded from a lookup
//! table or not), and the Lighthouse program, when the message does not name it, is added as
//! the last static key, read-only and unsigned — so the indices of the accounts loaded from
//! lookup tables, which follow the static keys, move up by one in every instruction.
//! Invariant: the result is a transaction of at most `PACKET_BYTES_MAX` bytes naming at most
//! `ACCOUNT_LOCKS_MAX` accounts, or a named error; a signed transaction is refused (appending
//! voids its signatures).
//! Invariant: the fee the guards may add is known before they are encoded (`Budget`): with a
//! unit price, the units they add cost `price × units` more — without a unit limit the
//! runtime gives each instruction of a program that is not a builtin 200,000 units, so each
//! guard adds that many — and the signer's SOL guard allows for it.
//! Deliberately absent: a guard's measured cost (no Lighthouse binary runs on this machine; the
//! reserve is the program's own published test bound, see `GUARD_UNITS_PER_INSTRUCTION`), and
//! a transaction that loads the Lighthouse program from a lookup table or names it as a
//! signer or writable (refused by name).

use bincode::Options;
use solana_message::compiled_instruction::CompiledInstruction;
use solana_message::VersionedMessage;
use solana_transaction::versioned::VersionedTransaction;

use super::lighthouse::{GuardInstruction, PROGRAM_ID};
use crate::config::TRANSACTION_BYTES_MAX;
use crate::ledger::transaction::message::{sdk_address, wire_options};
use crate::ledger::transaction::programs::{compute_budget_setting, ComputeBudgetSetting};
use crate::pubkey::Pubkey;

/// `SetComputeUnitLimit(units)`'s data, as the official builder writes it.
fn set_compute_unit_limit(units: u32) -> Vec<u8> {
    solana_compute_budget_interface::ComputeBudgetInstruction::set_compute_unit_limit(units).data
}

/// A transaction's size on the wire at most (Solana's packet data size).
pub const PACKET_BYTES_MAX: usize = TRANSACTION_BYTES_MAX;
/// Accounts one transaction may name (lock) at most: the runtime refuses more.
pub const ACCOUNT_LOCKS_MAX: usize = 64;
/// Compute units a guard instruction is given when the transaction sets its limit: the
/// program's own tests hold eight single-assertion instructions under 6,620 units
/// (github.com/Jac0xb/lighthouse, `tests/lighthouse/tests/suites/assert/token_account.rs`),
/// ~830 each; a guard reads one account and at most six fields.
pub const GUARD_UNITS_PER_INSTRUCTION: u32 = 2_000;
/// Units the runtime gives an instruction of a program that is not a builtin when the
/// transaction sets no limit (each guard adds that many), and its limit for a transaction.
const DEFAULT_UNITS_PER_INSTRUCTION: u64 = 200_000;
const UNITS_PER_TRANSACTION_MAX: u32 = 1_400_000;
const MICRO_LAMPORTS_PER_LAMPORT: u128 = 1_000_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendError {
    /// It carries a signature: appending would void it.
    Signed,
    /// The guarded transaction would be this many bytes.
    TooLarge { bytes: usize },
    /// The guarded transaction would name this many accounts.
    TooManyAccounts { accounts: usize },
    /// The transaction names the Lighthouse program otherwise than as a read-only program.
    LighthouseNamed,
    /// The bytes are not the transaction the scan read (never, for a scanned transaction).
    Malformed(String),
}

/// What a transaction sets of its compute budget (read with the decoder the scan uses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Budget {
    /// Its `SetComputeUnitLimit`: the instruction's index and the units.
    pub limit: Option<(usize, u32)>,
    /// Its `SetComputeUnitPrice`, micro-lamports a unit (0: none).
    pub price_micro_lamports: u64,
}

/// The scanned transaction's bytes, read once for its budget and its rewrite.
pub fn read(bytes: &[u8]) -> Result<VersionedTransaction, AppendError> {
    wire_options().deserialize(bytes).map_err(|e| AppendError::Malformed(e.to_string()))
}

impl Budget {
    /// The budget `tx` sets.
    pub fn of(tx: &VersionedTransaction) -> Budget {
        let (keys, instructions) = (tx.message.static_account_keys(), tx.message.instructions());
        let compute_budget = solana_compute_budget_interface::id();
        let mut budget = Budget::default();
        for (i, ix) in instructions.iter().enumerate() {
            if keys.get(usize::from(ix.program_id_index)) != Some(&compute_budget) {
                continue;
            }
            match compute_budget_setting(&ix.data) {
                Some(ComputeBudgetSetting::UnitLimit(units)) => budget.limit = Some((i, units)),
                Some(ComputeBudgetSetting::UnitPrice(price)) => budget.price_micro_lamports = price,
                _ => {}
            }
        }
        budget
    }

    /// Units `guards` instructions add to the transaction's limit.
    fn units_added(&self, guards: usize) -> u64 {
        let per_guard = match self.limit {
            Some(_) => u64::from(GUARD_UNITS_PER_INSTRUCTION),
            None => DEFAULT_UNITS_PER_INSTRUCTION,
        };
        per_guard * guards as u64
    }

    /// Lamports `guards` instructions may add to the fee at most: the price of the units they
    /// add (rounded up; a limit already at the runtime's maximum adds fewer).
    pub fn fee_more_lamports_max(&self, guards: usize) -> u64 {
        let micro = u128::from(self.price_micro_lamports) * u128::from(self.units_added(guards));
        u64::try_from(micro.div_ceil(MICRO_LAMPORTS_PER_LAMPORT)).unwrap_or(u64::MAX)
    }
}

impl AppendError {
    pub fn code(&self) -> &'static str {
        match self {
            AppendError::Signed => "TRANSACTION_SIGNED",
            AppendError::TooLarge { .. } => "GUARDED_TRANSACTION_TOO_LARGE",
            AppendError::TooManyAccounts { .. } => "GUARDED_TRANSACTION_TOO_MANY_ACCOUNTS",
            AppendError::LighthouseNamed => "GUARDED_TRANSACTION_UNSUPPORTED",
            AppendError::Malformed(_) => "INVALID_TRANSACTION",
        }
    }

    pub fn message(&self) -> String {
        match self {
            AppendError::Signed => {
                "the transaction carries a signature, which appending instructions would void: scan it unsigned \
                 to have it guarded, or append `guardInstructions` before signing"
                    .into()
            }
            AppendError::TooLarge { bytes } => format!(
                "with its guards the transaction would be {bytes} bytes, past the {PACKET_BYTES_MAX} a transaction \
                 may be: `guardInstructions` may still go into another transaction of the same signer"
            ),
            AppendError::TooManyAccounts { accounts } => format!(
                "with the Lighthouse program the transaction would name {accounts} accounts, past the \
                 {ACCOUNT_LOCKS_MAX} the runtime locks"
            ),
            AppendError::LighthouseNamed => "the transaction already names the Lighthouse program otherwise than as a \
                 read-only program of its own keys (from a lookup table, or as a signer or writable): append \
                 `guardInstructions` yourself"
                .into(),
            AppendError::Malformed(detail) => format!("the transaction could not be rewritten: {detail}"),
        }
    }
}

/// `tx` (an unsigned transaction whose full account list is `accounts`: static keys, then
/// loaded ones; its compute budget `budget`) with `guards` appended, serialized.
pub fn append(
    mut tx: VersionedTransaction,
    accounts: &[Pubkey],
    guards: &[GuardInstruction],
    budget: &Budget,
) -> Result<Vec<u8>, AppendError> {
    let malformed = |e: String| AppendError::Malformed(e);
    if tx.signatures.iter().any(|s| <[u8; 64]>::from(*s) != [0u8; 64]) {
        return Err(AppendError::Signed);
    }
    let (header, keys, instructions, loaded) = match &mut tx.message {
        VersionedMessage::Legacy(m) => (&mut m.header, &mut m.account_keys, &mut m.instructions, 0),
        VersionedMessage::V0(m) => {
            let loaded: usize =
                m.address_table_lookups.iter().map(|l| l.writable_indexes.len() + l.readonly_indexes.len()).sum();
            (&mut m.header, &mut m.account_keys, &mut m.instructions, loaded)
        }
    };
    let static_len = keys.len();
    let same_keys = keys.iter().zip(accounts).all(|(k, a)| k.to_bytes() == a.0);
    if static_len + loaded != accounts.len() || !same_keys {
        return Err(malformed(format!("{} accounts for a message of {}", accounts.len(), static_len + loaded)));
    }
    if accounts[static_len..].contains(&PROGRAM_ID) {
        return Err(AppendError::LighthouseNamed);
    }
    let program = sdk_address(&PROGRAM_ID);
    let readonly_unsigned_from = static_len - usize::from(header.num_readonly_unsigned_accounts);
    let program_index = match keys.iter().position(|k| *k == program) {
        Some(i) if i >= readonly_unsigned_from => i,
        Some(_) => return Err(AppendError::LighthouseNamed),
        None => {
            let total = accounts.len() + 1;
            if total > ACCOUNT_LOCKS_MAX {
                return Err(AppendError::TooManyAccounts { accounts: total });
            }
            keys.push(program);
            header.num_readonly_unsigned_accounts = header
                .num_readonly_unsigned_accounts
                .checked_add(1)
                .ok_or_else(|| malformed("255 read-only accounts already".into()))?;
            // The loaded accounts now start one further.
            for ix in instructions.iter_mut() {
                for index in ix.accounts.iter_mut().filter(|i| usize::from(**i) >= static_len) {
                    *index += 1;
                }
            }
            static_len
        }
    };
    let moved = usize::from(keys.len() > static_len);
    let index_of = |target: &Pubkey| -> Result<u8, AppendError> {
        let at =
            accounts.iter().position(|a| a == target).ok_or_else(|| malformed(format!("{target} is not named")))?;
        let at = if at >= static_len { at + moved } else { at };
        u8::try_from(at).map_err(|_| malformed(format!("{target} is account {at}")))
    };
    let program_id_index = u8::try_from(program_index).map_err(|_| malformed("the program is past 255".into()))?;
    if let Some((at, units)) = budget.limit {
        let raised = u64::from(units) + budget.units_added(guards.len());
        let raised = u32::try_from(raised).unwrap_or(u32::MAX).min(UNITS_PER_TRANSACTION_MAX.max(units));
        let ix = instructions.get_mut(at).ok_or_else(|| malformed(format!("no instruction {at}")))?;
        ix.data = set_compute_unit_limit(raised);
    }
    for guard in guards {
        let accounts = vec![index_of(&guard.target)?];
        instructions.push(CompiledInstruction { program_id_index, accounts, data: guard.encode() });
    }
    let out = bincode::serialize(&tx).map_err(|e| malformed(e.to_string()))?;
    if out.len() > PACKET_BYTES_MAX {
        return Err(AppendError::TooLarge { bytes: out.len() });
    }
    Ok(out)
}
