//! The fetch plan: which calls build a `WalletView`, in what order, within which bounds.
//!
//! Owns: `build_view`, shared by every source so that the demo, a snapshot and a live node
//! give equal views of equal data. Called on compute threads and by the CLI.
//!
//! Invariant: bounded work per wallet — at most `history_depth` signatures, one transaction
//! per signature (converted as its batch arrives, never all held in wire form),
//! `config::RELATED_ACCOUNTS_MAX` related accounts, `TOKEN_ACCOUNTS_MAX` token accounts per
//! program, `NAMED_NONCE_ACCOUNTS_MAX` nonce accounts kept from the nonce search (its answer
//! is read whole, bounded only by the source's response cap and the job's byte budget: a node
//! cannot page it) and the histories of `OUTSIDER_NONCES_MAX` of them
//! (`OUTSIDER_NONCE_SIGNATURES_MAX` deep); a hop to the first funder (`read_hop`, asked for by
//! the caller) reads at most `FUNDER_HOP_SIGNATURES_MAX` more. Where a bound cuts, coverage
//! says so; a refused nonce search and a failed nonce history are reported, not fatal.

use std::collections::BTreeSet;

use crate::config;
use crate::ledger::instruction::InstructionKind;
use crate::ledger::model::{
    AccountState, Coverage, MintInfo, NonceAccount, NonceSearch, OutsiderNonce, StakeAccount, TokenAccount,
    TokenProgram, Transaction, WalletView,
};
use crate::ledger::read::LedgerSource;
use crate::ledger::wire::{KeyedAccount, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

/// How much of a wallet to read.
#[derive(Debug, Clone, Copy)]
pub struct ViewOptions {
    /// Signatures read at most; more means `history_truncated`.
    pub history_depth: u32,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions { history_depth: config::HISTORY_DEPTH_DEFAULT }
    }
}

/// Reads everything the engine needs about `wallet` from `source`.
pub async fn build_view<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    options: ViewOptions,
) -> Result<WalletView, LedgerError> {
    build_view_unless(source, wallet, options, |_| false).await
}

/// `build_view`, except that when the account alone settles that the rest is not wanted
/// (`enough(account)`: a program, a mint — no wallet to analyze), the reads of its history and
/// token accounts, started beside the account's, are dropped and the view holds the account
/// only. A node's history of such an address can be thousands of calls.
pub async fn build_view_unless<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    options: ViewOptions,
    enough: fn(&AccountState) -> bool,
) -> Result<WalletView, LedgerError> {
    let depth = options.history_depth.clamp(1, config::HISTORY_DEPTH_MAX);
    let mut account = std::pin::pin!(source.get_account_info(wallet));
    let mut rest = std::pin::pin!(async {
        tokio::join!(
            source.get_token_accounts_by_owner(wallet, TokenProgram::Token),
            source.get_token_accounts_by_owner(wallet, TokenProgram::Token2022),
            source.get_nonce_accounts_by_authority(wallet),
            read_history(source, wallet, depth),
        )
    });
    let mut rest_read = None;
    let account = loop {
        tokio::select! {
            // The account first: a source that answers at once (the demo) then never starts
            // the rest for an address the account settles.
            biased;
            account = &mut account => break account?,
            read = &mut rest, if rest_read.is_none() => rest_read = Some(read),
        }
    };
    let state = account.value.as_ref().and_then(AccountState::from_wire);
    let mut coverage =
        Coverage { source: source.name().to_owned(), synthetic: source.synthetic(), ..Coverage::default() };
    coverage.as_of_slot = account.context.slot;
    if state.as_ref().is_some_and(enough) {
        return Ok(WalletView { address: *wallet, account: state, coverage, ..WalletView::default() });
    }
    let (classic, t22, named, history) = match rest_read {
        Some(read) => read,
        None => rest.await,
    };
    let (classic, t22) = (classic?, t22?);
    let (signatures, history_truncated) = history?;
    coverage.history_truncated = history_truncated;
    coverage.as_of_slot = coverage.as_of_slot.max(classic.context.slot).max(t22.context.slot);

    let mut token_accounts = Vec::new();
    for keyed in
        classic.value.iter().take(config::TOKEN_ACCOUNTS_MAX).chain(t22.value.iter().take(config::TOKEN_ACCOUNTS_MAX))
    {
        match Pubkey::parse(&keyed.pubkey).ok().and_then(|k| TokenAccount::from_wire(k, &keyed.account)) {
            Some(t) => token_accounts.push(t),
            None => coverage.items_skipped += 1,
        }
    }
    token_accounts.sort_by_key(|t| t.address);

    let transactions = read_transactions(source, &signatures, &mut coverage).await?;
    let (mut nonce_accounts, stake_accounts) = read_related(source, wallet, &transactions, &mut coverage).await?;
    let mints = read_mints(source, &token_accounts, &mut coverage).await?;
    let named = named_nonces(named, &mut coverage);
    let created = created_by(wallet, &transactions);
    let outsider_nonces =
        read_outsider_nonces(source, wallet, named, &created, &mut nonce_accounts, &mut coverage).await;

    Ok(WalletView {
        address: *wallet,
        account: state,
        token_accounts,
        mints,
        nonce_accounts,
        stake_accounts,
        outsider_nonces,
        transactions,
        coverage,
        funder_hop: None,
    })
}

/// The nonce accounts the search listed, by address, at most `NAMED_NONCE_ACCOUNTS_MAX`. A
/// failed search is not the job's failure — many nodes refuse `getProgramAccounts` on the
/// System program — but coverage says it failed.
fn named_nonces(
    answer: Result<WithContext<Vec<KeyedAccount>>, LedgerError>,
    coverage: &mut Coverage,
) -> Vec<NonceAccount> {
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) => {
            tracing::warn!(error = %e, "the nonce-account search failed; the view holds none");
            coverage.nonce_search = NonceSearch::Failed;
            return Vec::new();
        }
    };
    coverage.as_of_slot = coverage.as_of_slot.max(answer.context.slot);
    let mut named: Vec<NonceAccount> = Vec::with_capacity(answer.value.len().min(config::NAMED_NONCE_ACCOUNTS_MAX));
    for keyed in &answer.value {
        match Pubkey::parse(&keyed.pubkey).ok().and_then(|k| NonceAccount::from_wire(k, &keyed.account)) {
            Some(n) => named.push(n),
            None => coverage.items_skipped += 1,
        }
    }
    named.sort_by_key(|n| n.address);
    named.dedup_by_key(|n| n.address);
    if named.len() > config::NAMED_NONCE_ACCOUNTS_MAX {
        named.truncate(config::NAMED_NONCE_ACCOUNTS_MAX);
        coverage.nonce_search = NonceSearch::Cut;
    }
    named
}

/// Accounts whose `createAccount` in `transactions` the wallet paid for: the nonce accounts
/// its history shows it creating. Being named in the history is not enough — whoever creates
/// a nonce for the wallet can add the wallet to that transaction's accounts.
fn created_by(wallet: &Pubkey, transactions: &[Transaction]) -> BTreeSet<Pubkey> {
    let creations = transactions.iter().filter(|t| !t.failed()).flat_map(|t| &t.instructions);
    creations
        .filter_map(|ix| match &ix.kind {
            InstructionKind::SystemCreateAccount { funder, account, .. } if funder == wallet => Some(*account),
            _ => None,
        })
        .collect()
}

/// Of the nonce accounts naming `wallet` (`named`), those its history does not show it
/// creating (`created`) — each with its own recent history read for its creation, the first
/// `OUTSIDER_NONCES_MAX` of them. One the wallet turns out to have created (its creation lay
/// beyond the history depth) joins `nonce_accounts` instead. These reads only add detail: a
/// failed one leaves the nonce's creation unknown, never fails the view.
async fn read_outsider_nonces<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    named: Vec<NonceAccount>,
    created: &BTreeSet<Pubkey>,
    nonce_accounts: &mut Vec<NonceAccount>,
    coverage: &mut Coverage,
) -> Vec<OutsiderNonce> {
    let mut out = Vec::new();
    for account in named.into_iter().filter(|n| n.authority == *wallet && !created.contains(&n.address)) {
        if out.len() == config::OUTSIDER_NONCES_MAX {
            // Counted, not checked: past the bound its creation is not read.
            coverage.outsider_nonces_found += 1;
            continue;
        }
        let creation = read_creation(source, &account.address).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "a nonce account's history could not be read; its creation is left unknown");
            None
        });
        let nonce = OutsiderNonce { account, creation };
        match nonce.creation() {
            Some((_, _, funder)) if funder == *wallet => {
                if !nonce_accounts.iter().any(|n| n.address == nonce.account.address) {
                    nonce_accounts.push(nonce.account);
                }
            }
            _ => {
                coverage.outsider_nonces_found += 1;
                out.push(nonce);
            }
        }
    }
    nonce_accounts.sort_by_key(|n| n.address);
    out
}

/// The transaction that created `address`, when its newest `OUTSIDER_NONCE_SIGNATURES_MAX`
/// transactions reach back to it.
async fn read_creation<S: LedgerSource>(source: &S, address: &Pubkey) -> Result<Option<Transaction>, LedgerError> {
    let (signatures, _) = read_history(source, address, config::OUTSIDER_NONCE_SIGNATURES_MAX).await?;
    let mut ignored = Coverage::default();
    let history = read_transactions(source, &signatures, &mut ignored).await?;
    // Newest first: the creation, when read, is the oldest transaction that creates it.
    let creates = |tx: &Transaction| {
        tx.instructions
            .iter()
            .any(|ix| matches!(&ix.kind, InstructionKind::SystemCreateAccount { account: a, .. } if a == address))
    };
    Ok(history.into_iter().rev().find(|tx| !tx.failed() && creates(tx)))
}

/// One hop out: the newest `config::FUNDER_HOP_SIGNATURES_MAX` transactions of `address` (the
/// wallet's first funder), as a view holding only its address, transactions and coverage. Its
/// account, token accounts and related accounts are deliberately not read: the hop is there to
/// see whom the funder dealt with, at a bounded cost of one signatures page and that many
/// transactions.
pub async fn read_hop<S: LedgerSource>(source: &S, address: &Pubkey) -> Result<WalletView, LedgerError> {
    read_recent(source, address, config::FUNDER_HOP_SIGNATURES_MAX).await
}

/// `address`'s newest `depth` transactions, as a view holding only them (and `coverage`): the
/// funder hop, and the scan's read of a signer's counterparties.
pub async fn read_recent<S: LedgerSource>(source: &S, address: &Pubkey, depth: u32) -> Result<WalletView, LedgerError> {
    let mut coverage =
        Coverage { source: source.name().to_owned(), synthetic: source.synthetic(), ..Coverage::default() };
    let (signatures, history_truncated) = read_history(source, address, depth).await?;
    coverage.history_truncated = history_truncated;
    let transactions = read_transactions(source, &signatures, &mut coverage).await?;
    Ok(WalletView { address: *address, transactions, coverage, ..WalletView::default() })
}

/// Pages through `getSignaturesForAddress` up to `depth`. Returns the signatures and whether
/// the depth limit cut the list.
async fn read_history<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    depth: u32,
) -> Result<(Vec<SignatureInfo>, bool), LedgerError> {
    let mut out: Vec<SignatureInfo> = Vec::new();
    let mut before: Option<Signature> = None;
    loop {
        let remaining = depth - out.len() as u32;
        // Ask for one more than needed on the last page, to learn whether more exist.
        let limit = (remaining + 1).min(config::SIGNATURES_PAGE_LEN_MAX);
        let page = source.get_signatures_for_address(wallet, before.as_ref(), limit).await?;
        let page_len = page.len() as u32;
        for info in page {
            if out.len() as u32 == depth {
                return Ok((out, true));
            }
            out.push(info);
        }
        if page_len < limit {
            return Ok((out, false));
        }
        let last = out.last().map(|i| Signature::parse(&i.signature));
        before = match last {
            Some(Ok(sig)) => Some(sig),
            Some(Err(_)) => return Err(LedgerError::Malformed("signature in history is not base58".into())),
            None => return Ok((out, false)),
        };
    }
}

async fn read_transactions<S: LedgerSource>(
    source: &S,
    signatures: &[SignatureInfo],
    coverage: &mut Coverage,
) -> Result<Vec<Transaction>, LedgerError> {
    let parsed: Vec<Signature> = signatures.iter().filter_map(|s| Signature::parse(&s.signature).ok()).collect();
    coverage.items_skipped += (signatures.len() - parsed.len()) as u32;
    let mut out = Vec::with_capacity(parsed.len());
    // Converted as each batch arrives: the wire form of a batch is dropped before the next.
    let mut convert = |result: Option<TransactionResult>| match result {
        None => coverage.transactions_missing += 1,
        Some(r) => match Transaction::from_wire(&r.tx, r.slot, r.block_time) {
            Some(tx) => {
                coverage.as_of_slot = coverage.as_of_slot.max(tx.slot);
                out.push(tx)
            }
            None => coverage.items_skipped += 1,
        },
    };
    source.for_each_transaction(&parsed, &mut convert).await?;
    coverage.transactions_read = out.len() as u32;
    Ok(out)
}

/// Nonce and stake accounts named in the wallet's history, read as they are now. Kept when
/// the wallet funded them or holds (or held) one of their authorities.
async fn read_related<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    transactions: &[Transaction],
    coverage: &mut Coverage,
) -> Result<(Vec<NonceAccount>, Vec<StakeAccount>), LedgerError> {
    let mut candidates = BTreeSet::new();
    for ix in transactions.iter().flat_map(|t| &t.instructions) {
        match &ix.kind {
            InstructionKind::NonceInitialize { nonce, .. }
            | InstructionKind::NonceAdvance { nonce, .. }
            | InstructionKind::NonceAuthorize { nonce, .. }
            | InstructionKind::NonceWithdraw { nonce, .. } => candidates.insert(*nonce),
            InstructionKind::StakeInitialize { stake, .. }
            | InstructionKind::StakeAuthorize { stake, .. }
            | InstructionKind::StakeDelegate { stake, .. }
            | InstructionKind::StakeDeactivate { stake, .. }
            | InstructionKind::StakeWithdraw { stake, .. } => candidates.insert(*stake),
            _ => false,
        };
    }
    candidates.remove(wallet);
    let candidates: Vec<Pubkey> = candidates.into_iter().take(config::RELATED_ACCOUNTS_MAX).collect();
    let accounts = read_accounts(source, &candidates, coverage).await?;
    let mut nonces = Vec::new();
    let mut stakes = Vec::new();
    for (address, account) in candidates.iter().zip(&accounts) {
        let Some(account) = account else { continue };
        if let Some(n) = NonceAccount::from_wire(*address, account) {
            nonces.push(n);
        } else if let Some(s) = StakeAccount::from_wire(*address, account) {
            stakes.push(s);
        }
    }
    Ok((nonces, stakes))
}

async fn read_mints<S: LedgerSource>(
    source: &S,
    token_accounts: &[TokenAccount],
    coverage: &mut Coverage,
) -> Result<Vec<MintInfo>, LedgerError> {
    let addresses: Vec<Pubkey> = token_accounts
        .iter()
        .map(|t| t.mint)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .take(config::RELATED_ACCOUNTS_MAX)
        .collect();
    let accounts = read_accounts(source, &addresses, coverage).await?;
    let mut mints: Vec<MintInfo> = Vec::new();
    for (address, account) in addresses.iter().zip(&accounts) {
        match account.as_ref().and_then(|a| MintInfo::from_wire(*address, a)) {
            Some(m) => mints.push(m),
            None => coverage.items_skipped += 1,
        }
    }
    // `addresses` came out of a BTreeSet, so `mints` is sorted as `WalletView::mint` needs.
    debug_assert!(mints.windows(2).all(|w| w[0].address < w[1].address));
    Ok(mints)
}

/// `getMultipleAccounts` in chunks of the node's limit, in order.
async fn read_accounts<S: LedgerSource>(
    source: &S,
    addresses: &[Pubkey],
    coverage: &mut Coverage,
) -> Result<Vec<Option<UiAccount>>, LedgerError> {
    let mut out = Vec::with_capacity(addresses.len());
    for chunk in addresses.chunks(config::MULTIPLE_ACCOUNTS_LEN_MAX) {
        let page = source.get_multiple_accounts(chunk).await?;
        if page.value.len() != chunk.len() {
            return Err(LedgerError::Malformed(format!(
                "getMultipleAccounts returned {} accounts for {} addresses",
                page.value.len(),
                chunk.len()
            )));
        }
        coverage.as_of_slot = coverage.as_of_slot.max(page.context.slot);
        out.extend(page.value);
    }
    Ok(out)
}
