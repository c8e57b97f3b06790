//! The re-screen of a watched wallet after a labels reload, from what the node already holds:
//! did the wallet deal with an address the reload newly listed (flagged or sanctioned)?
//!
//! Owns: `Screen` (what to screen against) and `exposed` (the test). Runs on the
//! `xray-monitors` thread, inside a check; an exposed wallet is re-analyzed by that check
//! (with the labels now in force), and its `changes` decide the event as for any activity.
//!
//! Invariant: no ledger reads — on `rpc:` the wallet's remembered history and its cached
//! transactions (`ledger::cache`), on the demo and snapshots the in-process ledger. A remote
//! source without a cache (`--ledger-cache-bytes 0`) holds nothing: nothing is re-screened.
//! Invariant: bounded — at most the history depth's transactions of the wallet, looked up
//! `LEDGER_CACHE_LOOKUP_LEN` at a time.
//! Invariant: survives restarts and hand-overs — a cursor keeps the digest of the listed set its
//! analyses reflect (`WatchCursor::labels`); a check that finds another screens against every
//! listed address when the node does not know the reloads in between.
//! Deliberately absent: the funder one hop out and token accounts' delegates older than the
//! history (their state is not kept): those surface at the wallet's next re-analysis.

use std::collections::HashSet;
use std::sync::Arc;

use crate::config::{LEDGER_CACHE_LOOKUP_LEN, SIGNATURES_PAGE_LEN_MAX};
use crate::ledger::cache::Cached;
use crate::ledger::model::Transaction;
use crate::ledger::read::LedgerSource;
use crate::ledger::source::Source;
use crate::ledger::wire::TransactionResult;
use crate::pubkey::{Pubkey, Signature};

/// What a check re-screens its wallet against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screen {
    /// The addresses the reloads since the watch's last screen newly listed (one set each).
    Since(Vec<Arc<HashSet<Pubkey>>>),
    /// Every listed address of the labels in force (the reloads since are no longer kept).
    All,
}

/// Whether `wallet`'s held transactions name an address `screen` lists; `None` when the node
/// holds none of them (nothing to screen).
pub async fn exposed(
    source: &Cached<Source>,
    labels: &crate::labels::Labels,
    wallet: &Pubkey,
    screen: &Screen,
    depth: u32,
) -> Option<bool> {
    let listed = |address: &Pubkey| match screen {
        Screen::Since(sets) => sets.iter().any(|set| set.contains(address)),
        Screen::All => labels.is_listed(address),
    };
    if let Screen::Since(sets) = screen {
        if sets.iter().all(|set| set.is_empty()) {
            return Some(false);
        }
    }
    let transactions = held_transactions(source, wallet, depth).await?;
    Some(transactions.iter().any(|t| names(t).any(|address| listed(&address))))
}

/// Every address a transaction names: its account keys and its token balances' owners.
fn names(tx: &Transaction) -> impl Iterator<Item = Pubkey> + '_ {
    tx.account_keys.iter().copied().chain(tx.token_changes.iter().filter_map(|c| c.owner))
}

/// The wallet's transactions this node holds, newest first, at most `depth`.
async fn held_transactions(source: &Cached<Source>, wallet: &Pubkey, depth: u32) -> Option<Vec<Transaction>> {
    let results: Vec<TransactionResult> = match source.cache() {
        Some(cache) => {
            let history = cache.history(wallet)?;
            let signatures: Vec<Signature> = history
                .entries
                .iter()
                .take(depth as usize)
                .filter_map(|e| Signature::parse(&e.signature).ok())
                .collect();
            let mut out = Vec::with_capacity(signatures.len());
            for chunk in signatures.chunks(LEDGER_CACHE_LOOKUP_LEN) {
                out.extend(cache.transactions(chunk).into_iter().flatten().map(|(tx, _)| tx));
            }
            out
        }
        None if !source.inner().is_remote() => {
            let inner = source.inner();
            let page = inner.get_signatures_for_address(wallet, None, depth.min(SIGNATURES_PAGE_LEN_MAX)).await.ok()?;
            let signatures: Vec<Signature> = page.iter().filter_map(|e| Signature::parse(&e.signature).ok()).collect();
            inner.get_transactions(&signatures).await.ok()?.into_iter().flatten().collect()
        }
        None => return None,
    };
    Some(results.iter().filter_map(|r| Transaction::from_wire(&r.tx, r.slot, r.block_time)).collect())
}
