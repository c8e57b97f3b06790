//! A guarded transaction: an unsigned transaction with its guard instructions appended, ready to
//! sign.
//!
//! Owns: `append` and `AppendError` (each a named code the answer gives). Pure.
//!
//! Invariant: nothing the transaction did changes. Its instructions, in order and byte for
//! byte, come first; the guards follow. No signer and no writable account is added: a guard's
//! target is already an account of the message (it names it by its index, loaded from a lookup
//! table or not), and the Lighthouse program, when the message does not name it, is added as
//! the last static key, read-only and unsigned — so the indices of the accounts loaded from
//! lookup tables, which follow the static keys, move up by one in every instruction.
//! Invariant: the result is a transaction of at most `PACKET_BYTES_MAX` bytes naming at most
//! `ACCOUNT_LOCKS_MAX` accounts, or a named error; a signed transaction is refused (appending
//! voids its signatures).
//! Deliberately absent: raising a `SetComputeUnitLimit` for the guards' units (the program's
//! cost per assertion is not measured here: no Lighthouse binary runs on this machine).

use bincode::Options;
use solana_message::compiled_instruction::CompiledInstruction;
use solana_message::VersionedMessage;
use solana_transaction::versioned::VersionedTransaction;

use super::lighthouse::{GuardInstruction, PROGRAM_ID};
use crate::config::TRANSACTION_BYTES_MAX;
use crate::ledger::transaction::message::{sdk_address, wire_options};
use crate::pubkey::Pubkey;

/// A transaction's size on the wire at most (Solana's packet data size).
pub const PACKET_BYTES_MAX: usize = TRANSACTION_BYTES_MAX;
/// Accounts one transaction may name (lock) at most: the runtime refuses more.
pub const ACCOUNT_LOCKS_MAX: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendError {
    /// It carries a signature: appending would void it.
    Signed,
    /// The guarded transaction would be this many bytes.
    TooLarge { bytes: usize },
    /// The guarded transaction would name this many accounts.
    TooManyAccounts { accounts: usize },
    /// The bytes are not the transaction the scan read (never, for a scanned transaction).
    Malformed(String),
}

impl AppendError {
    pub fn code(&self) -> &'static str {
        match self {
            AppendError::Signed => "TRANSACTION_SIGNED",
            AppendError::TooLarge { .. } => "GUARDED_TRANSACTION_TOO_LARGE",
            AppendError::TooManyAccounts { .. } => "GUARDED_TRANSACTION_TOO_MANY_ACCOUNTS",
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
            AppendError::Malformed(detail) => format!("the transaction could not be rewritten: {detail}"),
        }
    }
}

/// `bytes` (an unsigned transaction whose full account list is `accounts`: static keys, then
/// loaded ones) with `guards` appended.
pub fn append(bytes: &[u8], accounts: &[Pubkey], guards: &[GuardInstruction]) -> Result<Vec<u8>, AppendError> {
    let malformed = |e: String| AppendError::Malformed(e);
    let mut tx: VersionedTransaction = wire_options().deserialize(bytes).map_err(|e| malformed(e.to_string()))?;
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
    if keys.len() + loaded != accounts.len() {
        return Err(malformed(format!("{} accounts for a message of {}", accounts.len(), keys.len() + loaded)));
    }
    let program = sdk_address(&PROGRAM_ID);
    let static_len = keys.len();
    let program_index = match keys.iter().position(|k| *k == program) {
        Some(i) => i,
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
