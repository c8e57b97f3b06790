//! Serialized Solana transactions (the bytes a wallet signs): their message, its accounts
//! and its instructions decoded into the ledger's domain `Instruction`.
//!
//! Owns: `TransactionError` (what is wrong with the bytes), `Decoded` and `decode` (a parsed
//! message and its loaded lookup tables → accounts with their flags and decoded
//! instructions). Submodules: `message` (the wire message, lookup tables) and `programs`
//! (instruction data of the programs the service knows). Called on listener threads (the
//! pre-sign scan) and by the demo source (its simulation); every step is bounded CPU work on
//! at most `config::TRANSACTION_BYTES_MAX` bytes of input.
//!
//! Invariant: pure — no I/O and no clock; lookup tables are handed in by the caller, so equal
//! input gives equal output.
//! Deliberately absent: judging anything (the scan's `findings` do) and signing. Tested with
//! the findings, in `scan/tests.rs`, on messages the official builders compile.

pub mod message;
pub mod programs;

use thiserror::Error;

use crate::ledger::instruction::Instruction;
use crate::pubkey::Pubkey;
use message::{MessageVersion, Parsed, Resolved};

/// What is wrong with the bytes of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TransactionError {
    #[error("the transaction is {bytes} bytes; a Solana transaction is at most {max} bytes", max = crate::config::TRANSACTION_BYTES_MAX)]
    TooLarge { bytes: usize },
    #[error("{0}")]
    Malformed(String),
}

impl TransactionError {
    pub fn malformed(why: String) -> TransactionError {
        TransactionError::Malformed(why)
    }
}

/// A transaction's message, its accounts resolved and its instructions decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub version: MessageVersion,
    pub resolved: Resolved,
    pub recent_blockhash: [u8; 32],
    /// The address lookup tables it loads accounts from, in message order.
    pub lookup_tables: Vec<Pubkey>,
    pub instructions: Vec<Instruction>,
}

impl Decoded {
    pub fn fee_payer(&self) -> Pubkey {
        self.resolved.fee_payer()
    }
}

/// Resolves the message's accounts (`tables[i]`: the addresses of `parsed.lookups[i]`'s table)
/// and decodes every instruction.
pub fn decode(parsed: &Parsed, tables: &[Vec<Pubkey>]) -> Result<Decoded, TransactionError> {
    let resolved = parsed.resolve(tables)?;
    let mut instructions = Vec::with_capacity(parsed.instructions.len());
    for (index, compiled) in parsed.instructions.iter().enumerate() {
        let program_id = resolved.key(compiled.program)?.address;
        let accounts = compiled.accounts.iter().map(|&i| Ok(resolved.key(i)?.address)).collect::<Result<_, _>>()?;
        // A sanitized message holds at most 256 accounts, and its instructions fit 1,232 bytes.
        let index = u16::try_from(index).map_err(|_| TransactionError::malformed("too many instructions".into()))?;
        instructions.push(programs::decode(programs::Call { index, program_id, accounts, data: &compiled.data }));
    }
    Ok(Decoded {
        version: parsed.version,
        resolved,
        recent_blockhash: parsed.recent_blockhash,
        lookup_tables: parsed.lookups.iter().map(|l| l.table).collect(),
        instructions,
    })
}
