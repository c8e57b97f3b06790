//! The evidence book: every fact a signal rests on, each stored once with a stable id.
//!
//! Owns: `EvidenceBook`, which hands out `ev_N` ids in first-cited order and deduplicates (the
//! same instruction or account state cited by two signals is one item). Used by the engine on
//! compute threads; pure.
//!
//! Invariant: an id handed out always names an item in the book, so signals never cite a
//! dangling id; ids depend only on the order of citation, which the engine keeps deterministic.

use std::collections::{HashMap, HashSet};

use crate::engine::report::{Evidence, Signal};
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

    /// Keeps only the items `signals` cite, renumbered `ev_1…` in their order here, and
    /// rewrites the signals' citations to match (a policy dropped signals: the contract's
    /// evidence is what signals rest on, nothing more).
    pub fn retain_cited(self, signals: &mut [Signal]) -> EvidenceBook {
        let cited: HashSet<&str> = signals.iter().flat_map(|s| s.evidence_ids.iter().map(String::as_str)).collect();
        let mut renamed: HashMap<String, String> = HashMap::with_capacity(cited.len());
        let mut book = EvidenceBook::default();
        let mut items: Vec<Option<Evidence>> = self.items.into_iter().map(Some).collect();
        for (key, i) in ordered(self.index) {
            let Some(mut item) = items.get_mut(i).and_then(Option::take) else { continue };
            let old = item.id().to_owned();
            if !cited.contains(old.as_str()) {
                continue;
            }
            let new = format!("ev_{}", book.items.len() + 1);
            item.set_id(new.clone());
            book.index.insert(key, book.items.len());
            book.items.push(item);
            renamed.insert(old, new);
        }
        for signal in signals.iter_mut() {
            for id in &mut signal.evidence_ids {
                if let Some(new) = renamed.get(id) {
                    id.clone_from(new);
                }
            }
        }
        book
    }
}

/// The book's keys in the order their items were cited.
fn ordered(index: HashMap<Key, usize>) -> Vec<(Key, usize)> {
    let mut keys: Vec<(Key, usize)> = index.into_iter().collect();
    keys.sort_unstable_by_key(|&(_, i)| i);
    keys
}
