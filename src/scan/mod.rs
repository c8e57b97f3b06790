//! The pre-sign transaction scan: what a transaction the user is about to sign would do, and
//! how dangerous that is — answered synchronously, before anything is signed.
//!
//! Owns: `ScanError` (what is wrong with a scanned transaction, each mapped to one contract
//! code at the HTTP edge) and `decode` (bytes and loaded lookup tables → `Decoded`, the message's
//! accounts and its instructions in the ledger's domain form). Submodules: `message` (the wire
//! message, lookup tables), `programs` (instruction data of the programs the service knows),
//! `findings` (the pure judgement). Called on listener threads: every step here is bounded CPU
//! work on at most `config::TRANSACTION_BYTES_MAX` bytes of input.
//!
//! Invariant: pure — no I/O and no clock; what the ledger says (lookup tables, account
//! states) is handed in by the caller, so equal input gives byte-identical output.
//! Deliberately absent: upstream reads (the endpoint's lane does them) and signing.

pub mod findings;
pub mod message;
pub mod programs;

use thiserror::Error;

use crate::ledger::instruction::Instruction;
use crate::pubkey::Pubkey;
use message::{MessageVersion, Parsed, Resolved};

/// What is wrong with a transaction sent for a scan.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ScanError {
    #[error("the transaction is {bytes} bytes; a Solana transaction is at most {max} bytes", max = crate::config::TRANSACTION_BYTES_MAX)]
    TooLarge { bytes: usize },
    #[error("{0}")]
    Malformed(String),
    #[error("signer {0} is not a signer of this transaction")]
    UnknownSigner(Pubkey),
}

impl ScanError {
    pub fn malformed(why: String) -> ScanError {
        ScanError::Malformed(why)
    }
}

/// A transaction's message, its accounts resolved and its instructions decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub version: MessageVersion,
    pub signed: bool,
    pub resolved: Resolved,
    pub recent_blockhash: [u8; 32],
    pub instructions: Vec<Instruction>,
}

impl Decoded {
    pub fn fee_payer(&self) -> Pubkey {
        self.resolved.fee_payer()
    }
}

/// Resolves the message's accounts (`tables[i]`: the addresses of `parsed.lookups[i]`'s table)
/// and decodes every instruction.
pub fn decode(parsed: &Parsed, tables: &[Vec<Pubkey>]) -> Result<Decoded, ScanError> {
    let resolved = parsed.resolve(tables)?;
    let mut instructions = Vec::with_capacity(parsed.instructions.len());
    for (index, compiled) in parsed.instructions.iter().enumerate() {
        let program_id = resolved.key(compiled.program)?.address;
        let accounts = compiled.accounts.iter().map(|&i| Ok(resolved.key(i)?.address)).collect::<Result<_, _>>()?;
        // A sanitized message holds at most 256 accounts, and its instructions fit 1,232 bytes.
        let index = u16::try_from(index).map_err(|_| ScanError::malformed("too many instructions".into()))?;
        instructions.push(programs::decode(programs::Call { index, program_id, accounts, data: &compiled.data }));
    }
    Ok(Decoded {
        version: parsed.version,
        signed: parsed.signed,
        resolved,
        recent_blockhash: parsed.recent_blockhash,
        instructions,
    })
}

#[cfg(test)]
mod tests;
