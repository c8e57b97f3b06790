//! `ledger::cache`: what a node has read from the ledger that never changes — finalized
//! transactions by signature, and each address's finalized signature list (a cursor, so a
//! re-read asks the node only for what is newer) — kept across jobs in an embedded RocksDB of
//! the node's own (`<data-dir>/ledger-cache`), bounded in bytes.
//!
//! Owns: `LedgerCache` (`store`: the database and its bounds), `Cached<S>` (the `LedgerSource`
//! wrapper that answers transactions from the cache and fetches only the misses, and offers
//! the remembered histories (`read::History`) and account hints `ledger::view` uses).
//! Threads: every compute thread wraps its own source in a `Cached` over one shared
//! `Arc<LedgerCache>` (RocksDB is thread-safe; a lookup is a `multi_get` on the job's thread).
//!
//! Invariant: holds only what a `finalized` read answered (`rpc::request` asks every
//! `getTransaction` and `getSignaturesForAddress` at `finalized`; a history entry that says
//! otherwise is not kept), and no "not found" — so an answer with the cache is the answer
//! without it, byte for byte (tested: `tests/integration/ledger/cache.rs`).
//! Invariant: a cache, not state — on a cluster node too it is the node's own; deleting the
//! directory loses nothing but speed; a failed cache read or write is a miss, never a failed job.
//! Invariant: a cached transaction charges the job's byte budget as the node's answer would.
//! Deliberately absent: account state (it changes every slot: the wallet's account, token
//! accounts and nonce search are read every time) and not-found answers (a node that lacks
//! a transaction now may have it later).

mod store;

use std::sync::Arc;

use crate::config;
use crate::ledger::budget;
use crate::ledger::model::TokenProgram;
use crate::ledger::read::{History, LedgerSource, Simulated};
use crate::ledger::wire::{KeyedAccount, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::metrics::{CacheKind, LEDGER_CACHE};
use crate::pubkey::{Pubkey, Signature};

pub use store::{CacheOptions, LedgerCache};

/// A source whose finalized reads go through the node's ledger cache (or straight through
/// when there is none).
pub struct Cached<S> {
    inner: S,
    cache: Option<Arc<LedgerCache>>,
}

impl<S: LedgerSource> Cached<S> {
    pub fn new(inner: S, cache: Option<Arc<LedgerCache>>) -> Cached<S> {
        Cached { inner, cache }
    }

    /// The wrapped source.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The node's ledger cache, when it has one.
    pub fn cache(&self) -> Option<&LedgerCache> {
        self.cache.as_deref()
    }

    /// Reads one chunk of signatures (at most `LEDGER_CACHE_LOOKUP_LEN`): the cached ones from
    /// the cache, the rest from the node (kept for next time), handed to `each` in order.
    async fn chunk(
        &self,
        cache: &LedgerCache,
        signatures: &[Signature],
        each: &mut dyn FnMut(Option<TransactionResult>),
    ) -> Result<(), LedgerError> {
        let mut found = cache.transactions(signatures);
        let missing: Vec<Signature> =
            signatures.iter().zip(&found).filter(|(_, hit)| hit.is_none()).map(|(s, _)| *s).collect();
        LEDGER_CACHE.hit(CacheKind::Transaction, (signatures.len() - missing.len()) as u64);
        LEDGER_CACHE.miss(CacheKind::Transaction, missing.len() as u64);
        for (_, bytes) in found.iter().flatten() {
            budget::charge(*bytes as u64)?;
        }
        let mut fetched = Vec::with_capacity(missing.len());
        if !missing.is_empty() {
            self.inner.for_each_transaction(&missing, &mut |result| fetched.push(result)).await?;
        }
        cache.keep_transactions(missing.iter().zip(&fetched));
        let mut fetched = fetched.into_iter();
        for slot in found.iter_mut() {
            match slot.take() {
                Some((hit, _)) => each(Some(hit)),
                None => each(fetched.next().flatten()),
            }
        }
        Ok(())
    }
}

impl<S: LedgerSource> LedgerSource for Cached<S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn synthetic(&self) -> bool {
        self.inner.synthetic()
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        self.inner.get_account_info(address).await
    }

    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        self.inner.get_multiple_accounts(addresses).await
    }

    async fn get_multiple_accounts_base64(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        self.inner.get_multiple_accounts_base64(addresses).await
    }

    fn slices_data(&self) -> bool {
        self.inner.slices_data()
    }

    async fn get_multiple_accounts_base64_head(
        &self,
        addresses: &[Pubkey],
        length: usize,
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        self.inner.get_multiple_accounts_base64_head(addresses, length).await
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        self.inner.get_token_accounts_by_owner(owner, program).await
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        self.inner.get_nonce_accounts_by_authority(authority).await
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        self.inner.get_signatures_for_address(address, before, limit).await
    }

    async fn get_signatures_until(
        &self,
        address: &Pubkey,
        until: &Signature,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        self.inner.get_signatures_until(address, until, before, limit).await
    }

    async fn simulate_transaction(&self, transaction: &[u8], accounts: &[Pubkey]) -> Result<Simulated, LedgerError> {
        self.inner.simulate_transaction(transaction, accounts).await
    }

    async fn simulate_sequence(
        &self,
        transactions: &[(&[u8], &[Pubkey])],
        mode: crate::ledger::read::SequenceMode,
    ) -> Result<Vec<Simulated>, LedgerError> {
        self.inner.simulate_sequence(transactions, mode).await
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        let mut out = Vec::with_capacity(signatures.len());
        self.for_each_transaction(signatures, &mut |result| out.push(result)).await?;
        Ok(out)
    }

    async fn for_each_transaction(
        &self,
        signatures: &[Signature],
        each: &mut dyn FnMut(Option<TransactionResult>),
    ) -> Result<(), LedgerError> {
        let Some(cache) = &self.cache else { return self.inner.for_each_transaction(signatures, each).await };
        for chunk in signatures.chunks(config::LEDGER_CACHE_LOOKUP_LEN) {
            self.chunk(cache, chunk, each).await?;
        }
        Ok(())
    }

    fn remembered_history(&self, address: &Pubkey) -> Option<History> {
        let found = self.cache.as_ref()?.history(address);
        match found {
            Some(_) => LEDGER_CACHE.hit(CacheKind::History, 1),
            None => LEDGER_CACHE.miss(CacheKind::History, 1),
        }
        found
    }

    fn remember_history(&self, address: &Pubkey, history: &History) {
        if let Some(cache) = &self.cache {
            if history.is_final() {
                cache.keep_history(address, history);
            }
        }
    }

    fn remembered_accounts(&self, address: &Pubkey) -> Vec<Pubkey> {
        self.cache.as_ref().map(|cache| cache.account_hints(address)).unwrap_or_default()
    }

    fn remember_accounts(&self, address: &Pubkey, accounts: &[Pubkey]) {
        if let Some(cache) = &self.cache {
            cache.keep_account_hints(address, accounts);
        }
    }
}
