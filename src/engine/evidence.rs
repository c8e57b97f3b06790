//! The evidence book: every fact a signal rests on, each stored once with a stable id.
//!
//! Owns: `EvidenceBook`, which hands out `ev_N` ids in first-cited order and deduplicates (the
//! same instruction or account state cited by two signals is one item). Used by the engine on
//! compute threads; pure.
//!
//! Invariant: an id handed out always names an item in the book, so signals never cite a
//! dangling id; ids depend only on the order of citation, which the engine keeps deterministic.

use std::collections::HashMap;

use crate::engine::report::Evidence;
use crate::ledger::instruction::Instruction;
use crate::ledger::model::Transaction;
use crate::pubkey::Pubkey;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Instruction { signature: [u8; 64], index: (u16, Option<u16>) },
    Account { account: Pubkey, slot: u64 },
}

#[derive(Debug, Default)]
pub struct EvidenceBook {
    items: Vec<Evidence>,
    index: HashMap<Key, usize>,
}

impl EvidenceBook {
    /// Cites one instruction of a transaction.
    pub fn instruction(&mut self, tx: &Transaction, ix: &Instruction, summary: impl FnOnce() -> String) -> String {
        let key = Key::Instruction { signature: tx.signature.0, index: (ix.index.outer, ix.index.inner) };
        self.cite(key, |id| Evidence::Transaction {
            id,
            signature: tx.signature.to_string(),
            slot: tx.slot,
            block_time: tx.block_time,
            program_id: ix.program_id.to_string(),
            instruction: ix.name.clone(),
            instruction_index: ix.index.to_string(),
            summary: summary(),
        })
    }

    /// Cites a transaction as a whole, through its first instruction (or a bare record).
    pub fn transaction(&mut self, tx: &Transaction, summary: impl FnOnce() -> String) -> String {
        match tx.instructions.first() {
            Some(ix) => self.instruction(tx, ix, summary),
            None => {
                let key = Key::Instruction { signature: tx.signature.0, index: (u16::MAX, None) };
                self.cite(key, |id| Evidence::Transaction {
                    id,
                    signature: tx.signature.to_string(),
                    slot: tx.slot,
                    block_time: tx.block_time,
                    program_id: String::new(),
                    instruction: "none".into(),
                    instruction_index: "0".into(),
                    summary: summary(),
                })
            }
        }
    }

    /// Cites an account's state as read at `slot`.
    pub fn account(&mut self, account: &Pubkey, slot: u64, summary: impl FnOnce() -> String) -> String {
        let key = Key::Account { account: *account, slot };
        self.cite(key, |id| Evidence::Account { id, account: account.to_string(), slot, summary: summary() })
    }

    fn cite(&mut self, key: Key, make: impl FnOnce(String) -> Evidence) -> String {
        if let Some(&i) = self.index.get(&key) {
            return self.items[i].id().to_owned();
        }
        let id = format!("ev_{}", self.items.len() + 1);
        self.index.insert(key, self.items.len());
        self.items.push(make(id.clone()));
        id
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn into_items(self) -> Vec<Evidence> {
        self.items
    }
}
