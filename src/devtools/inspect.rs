//! `xray ledger inspect`: a JSON summary of a saved `getTransaction` or `getBlock` response.
//!
//! Owns: reading one file (with or without the JSON-RPC envelope), decoding every transaction
//! through the same path the sources use (`model::Transaction::from_wire`) and counting what
//! is in it. Runs on the CLI's main thread and in tests.
//!
//! Invariant: the file is bounded by `config::LEDGER_FILE_BYTES_MAX`; a transaction that cannot
//! be decoded is counted in `undecodable`, never silently dropped. Counts use ordered maps so
//! the output is deterministic.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use serde::Serialize;
use simd_json::prelude::*;

use crate::config;
use crate::ledger::instruction::{InstructionKind, Program};
use crate::ledger::model::{Transaction, TransactionVersion};
use crate::ledger::wire::{self, TransactionResult, TransactionWithMeta, UiBlock, Value};
use crate::ledger::LedgerError;

/// What a saved response holds.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InspectSummary {
    /// `getTransaction` or `getBlock`.
    pub method: &'static str,
    /// The transaction's slot (`getTransaction`) or the block's parent slot (`getBlock`).
    pub slot: Option<u64>,
    pub parent_slot: Option<u64>,
    pub block_time: Option<i64>,
    pub transaction_count: u32,
    pub undecodable: u32,
    pub versions: BTreeMap<&'static str, u32>,
    pub outer_instruction_count: u32,
    pub inner_instruction_count: u32,
    /// Instruction counts by `program:type` (`spl-token:transfer`, `<programId>:unknown`).
    pub instructions_outer: BTreeMap<String, u32>,
    pub instructions_inner: BTreeMap<String, u32>,
    /// Instruction counts by program id, outer and inner together.
    pub by_program_id: BTreeMap<String, u32>,
    pub failed: Vec<FailedTransaction>,
    pub signatures: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailedTransaction {
    pub signature: String,
    pub error: String,
}

/// Reads and summarizes `path`.
pub fn inspect_file(path: &Path) -> Result<InspectSummary, LedgerError> {
    let file = std::fs::File::open(path).map_err(|e| LedgerError::Invalid(format!("{}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(config::LEDGER_FILE_BYTES_MAX + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| LedgerError::Invalid(format!("{}: {e}", path.display())))?;
    if bytes.len() as u64 > config::LEDGER_FILE_BYTES_MAX {
        return Err(LedgerError::Invalid(format!(
            "{}: larger than {} bytes",
            path.display(),
            config::LEDGER_FILE_BYTES_MAX
        )));
    }
    inspect_bytes(&mut bytes).map_err(|e| match e {
        LedgerError::Malformed(m) => LedgerError::Malformed(format!("{}: {m}", path.display())),
        other => other,
    })
}

/// Summarizes a response body held in memory (simd-json parses it in place).
pub fn inspect_bytes(bytes: &mut [u8]) -> Result<InspectSummary, LedgerError> {
    let doc: Value = wire::parse(bytes)?;
    if let Some(error) = doc.get("error").filter(|e| !e.is_null()) {
        let error: wire::RpcErrorObject = reparse(error)?;
        return Err(LedgerError::from_rpc_error(error));
    }
    let result = doc.get("result").unwrap_or(&doc);
    if result.get("transactions").is_some() {
        let block: UiBlock = reparse(result)?;
        let mut summary = InspectSummary {
            method: "getBlock",
            // A block's own slot is not in its body; its parent's is.
            slot: None,
            parent_slot: Some(block.parent_slot),
            block_time: block.block_time,
            ..InspectSummary::default()
        };
        for tx in &block.transactions {
            summary.add(tx, 0, block.block_time);
        }
        Ok(summary)
    } else if result.get("transaction").is_some() {
        let tx: TransactionResult = reparse(result)?;
        let mut summary = InspectSummary {
            method: "getTransaction",
            slot: Some(tx.slot),
            block_time: tx.block_time,
            ..InspectSummary::default()
        };
        summary.add(&tx.tx, tx.slot, tx.block_time);
        Ok(summary)
    } else {
        Err(LedgerError::Malformed("neither a getTransaction nor a getBlock result".into()))
    }
}

/// Typed view of a part of an already parsed document.
fn reparse<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, LedgerError> {
    let mut bytes = value.encode().into_bytes();
    wire::parse(&mut bytes)
}

impl InspectSummary {
    fn add(&mut self, wire_tx: &TransactionWithMeta, slot: u64, block_time: Option<i64>) {
        self.transaction_count += 1;
        let Some(tx) = Transaction::from_wire(wire_tx, slot, block_time) else {
            self.undecodable += 1;
            return;
        };
        let version = match tx.version {
            TransactionVersion::Legacy => "legacy",
            TransactionVersion::V0 => "0",
        };
        *self.versions.entry(version).or_default() += 1;
        for ix in &tx.instructions {
            let program = match ix.program {
                Program::Other => ix.program_id.to_string(),
                known => known.name().to_owned(),
            };
            let key = match ix.kind {
                InstructionKind::Raw { .. } => format!("{program}:unknown"),
                _ => format!("{program}:{}", ix.name),
            };
            let (map, count) = match ix.index.inner {
                None => (&mut self.instructions_outer, &mut self.outer_instruction_count),
                Some(_) => (&mut self.instructions_inner, &mut self.inner_instruction_count),
            };
            *map.entry(key).or_default() += 1;
            *count += 1;
            *self.by_program_id.entry(ix.program_id.to_string()).or_default() += 1;
        }
        if let Some(error) = &tx.error {
            self.failed.push(FailedTransaction { signature: tx.signature.to_string(), error: error.clone() });
        }
        self.signatures.push(tx.signature.to_string());
    }
}
