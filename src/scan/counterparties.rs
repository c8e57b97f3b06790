//! The signer's earlier counterparties, for the look-alike and never-seen checks of a scan:
//! the addresses its recent transfers went to or came from, read from its newest
//! `SCAN_HISTORY_SIGNATURES_MAX` transactions and kept briefly per wallet.
//!
//! Owns: `Counterparties` (the set and how many transactions it rests on), `wanted` (whether a
//! transaction needs them: it sends or approves something of the signer's), `read` (the bounded
//! history read, on the lane) and its `Cache`. Called on the scan lane's thread.
//!
//! Invariant: bounded — at most `SCAN_HISTORY_SIGNATURES_MAX` transactions read per wallet, at
//! most `SCAN_COUNTERPARTIES_MAX` addresses kept, at most `SCAN_COUNTERPARTIES_CACHE_LEN`
//! wallets cached (`ttl_cache`), each for `SCAN_COUNTERPARTIES_TTL_MS`.
//! Invariant: only real counterparties count — transfers above dust either way (a poisoner's
//! dust would otherwise make its own look-alike "known"), as the X-Ray engine's poisoning
//! signals read them (`engine::flows`).
//! Deliberately absent: the latest X-Ray's view (its document lists evidence, not a set of
//! counterparties; a fresh read is as cheap as parsing it and cannot be stale by a day).

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::config::{
    SCAN_COUNTERPARTIES_CACHE_LEN, SCAN_COUNTERPARTIES_MAX, SCAN_COUNTERPARTIES_TTL_MS, SCAN_HISTORY_SIGNATURES_MAX,
};
use crate::engine::flows;
use crate::ledger::instruction::InstructionKind as K;
use crate::ledger::read::LedgerSource;
use crate::ledger::transaction::Decoded;
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;

/// Who the signer dealt with lately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counterparties {
    pub addresses: BTreeSet<Pubkey>,
    /// Transactions of the signer's the set was read from.
    pub transactions: usize,
}

/// True when the transaction sends, approves or withdraws something of `signer`'s: only then
/// does a recipient or delegate need comparing with the signer's counterparties.
pub fn wanted(decoded: &Decoded, signer: &Pubkey) -> bool {
    decoded.instructions.iter().any(|ix| match &ix.kind {
        K::SystemTransfer { from, .. } => from == signer,
        K::TokenTransfer { authority, .. } => authority == signer,
        K::TokenApprove { owner, .. } => owner == signer,
        K::NonceWithdraw { authority, .. } => authority == signer,
        _ => false,
    })
}

/// The counterparties of `wallet` in its newest `SCAN_HISTORY_SIGNATURES_MAX` transactions.
pub async fn read<S: LedgerSource>(source: &S, wallet: &Pubkey) -> Result<Counterparties, LedgerError> {
    let view = crate::ledger::view::read_recent(source, wallet, SCAN_HISTORY_SIGNATURES_MAX).await?;
    let addresses = flows::transfers(&view)
        .iter()
        .filter(|t| !t.is_dust())
        .map(|t| t.counterparty)
        .take(SCAN_COUNTERPARTIES_MAX)
        .collect();
    Ok(Counterparties { addresses, transactions: view.transactions.len() })
}

/// Counterparties read recently, per wallet.
pub type Cache = super::ttl_cache::TtlCache<Arc<Counterparties>>;

pub fn cache() -> Cache {
    Cache::new(SCAN_COUNTERPARTIES_CACHE_LEN, SCAN_COUNTERPARTIES_TTL_MS)
}
