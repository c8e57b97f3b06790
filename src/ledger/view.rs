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
use crate::ledger::read::{History, LedgerSource};
use crate::ledger::wire::{KeyedAccount, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

/// How much of a wallet to read.
#[derive(Debug, Clone, Copy)]
pub struct ViewOptions {
    /// Signatures read at most; more means `history_truncated`.
    pub history_depth: u32,
    pub detail: Detail,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions { history_depth: config::HISTORY_DEPTH_DEFAULT, detail: Detail::Full }
    }
}

impl ViewOptions {
    /// The whole view, `history_depth` signatures deep.
    pub const fn deep(history_depth: u32) -> ViewOptions {
        ViewOptions { history_depth, detail: Detail::Full }
    }
}

/// Which parts of a wallet a view holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// Everything the X-Ray reads.
    Full,
    /// What linking two wallets reads (`engine::compare`): the account, token accounts and
    /// history — no nonce search, related accounts, mints or outsider nonces. For a side of a
    /// comparison whose score comes from an analysis already made.
    Links,
}

/// Accounts read in the wallet's own `getMultipleAccounts` call (the source's hints), by
/// address, with the slot they were read at.
#[derive(Default)]
struct Prefetched {
    slot: u64,
    accounts: Vec<(Pubkey, Option<UiAccount>)>,
}

impl Prefetched {
    fn get(&self, address: &Pubkey) -> Option<&Option<UiAccount>> {
        self.accounts.iter().find(|(a, _)| a == address).map(|(_, account)| account)
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
    let full = options.detail == Detail::Full;
    let hints = if full { source.remembered_accounts(wallet) } else { Vec::new() };
    let mut account = std::pin::pin!(read_wallet_account(source, wallet, &hints));
    let mut rest = std::pin::pin!(async {
        tokio::join!(
            source.get_token_accounts_by_owner(wallet, TokenProgram::Token),
            source.get_token_accounts_by_owner(wallet, TokenProgram::Token2022),
            async {
                match full {
                    true => Some(source.get_nonce_accounts_by_authority(wallet).await),
                    false => None,
                }
            },
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
    let (account, prefetched) = account;
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
    let history = history?;
    coverage.history_truncated = history.truncated;
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

    let transactions = read_transactions(source, &history.entries, &mut coverage).await?;
    let Some(named) = named else {
        return Ok(WalletView {
            address: *wallet,
            account: state,
            token_accounts,
            transactions,
            coverage,
            ..WalletView::default()
        });
    };
    let mut read_beside = Vec::new();
    let (mut nonce_accounts, stake_accounts) =
        read_related(source, wallet, &transactions, &prefetched, &mut read_beside, &mut coverage).await?;
    let mints = read_mints(source, &token_accounts, &prefetched, &mut read_beside, &mut coverage).await?;
    if read_beside != hints {
        source.remember_accounts(wallet, &read_beside);
    }
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

/// The wallet's account — alone (`getAccountInfo`), or, when the source remembers what the
/// last read of this wallet read beside it (`hints`), in one `getMultipleAccounts` with those
/// accounts, which the rest of the plan then takes from `Prefetched` instead of asking again.
async fn read_wallet_account<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    hints: &[Pubkey],
) -> Result<(WithContext<Option<UiAccount>>, Prefetched), LedgerError> {
    if hints.is_empty() {
        return Ok((source.get_account_info(wallet).await?, Prefetched::default()));
    }
    let hints = &hints[..hints.len().min(config::MULTIPLE_ACCOUNTS_LEN_MAX - 1)];
    let addresses: Vec<Pubkey> = std::iter::once(*wallet).chain(hints.iter().copied()).collect();
    let page = source.get_multiple_accounts(&addresses).await?;
    if page.value.len() != addresses.len() {
        return Err(LedgerError::Malformed(format!(
            "getMultipleAccounts returned {} accounts for {} addresses",
            page.value.len(),
            addresses.len()
        )));
    }
    let mut accounts = addresses.into_iter().zip(page.value);
    let own = accounts.next().and_then(|(_, account)| account);
    let prefetched = Prefetched { slot: page.context.slot, accounts: accounts.collect() };
    Ok((WithContext { context: page.context, value: own }, prefetched))
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
    let signatures = read_history(source, address, config::OUTSIDER_NONCE_SIGNATURES_MAX).await?;
    let mut ignored = Coverage::default();
    let history = read_transactions(source, &signatures.entries, &mut ignored).await?;
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
/// funder hop. (The scan's counterparties read its own window, past dust and failed ones:
/// `scan::counterparties`.)
pub async fn read_recent<S: LedgerSource>(source: &S, address: &Pubkey, depth: u32) -> Result<WalletView, LedgerError> {
    let mut coverage =
        Coverage { source: source.name().to_owned(), synthetic: source.synthetic(), ..Coverage::default() };
    let history = read_history(source, address, depth).await?;
    coverage.history_truncated = history.truncated;
    let transactions = read_transactions(source, &history.entries, &mut coverage).await?;
    Ok(WalletView { address: *address, transactions, coverage, ..WalletView::default() })
}

/// `address`'s newest `depth` signatures and whether the depth cut them. When the source
/// remembers an earlier read that covers `depth` (`ledger::cache`), only what is newer than its
/// newest signature is asked for (`until`) and put before it — the same list a full read
/// gives, since finalized history only grows at its head; otherwise the pages are read whole.
/// Either way the result is remembered for next time.
async fn read_history<S: LedgerSource>(source: &S, wallet: &Pubkey, depth: u32) -> Result<History, LedgerError> {
    let known = source.remembered_history(wallet).filter(|h| h.covers(depth) && !h.entries.is_empty());
    let cursor = match known {
        Some(known) => read_newer(source, wallet, known, depth).await?,
        None => None,
    };
    let history = match cursor {
        Some(history) => history,
        None => {
            let (entries, truncated) = read_pages(source, wallet, depth, None).await?;
            History { depth, truncated, entries }
        }
    };
    source.remember_history(wallet, &history);
    Ok(history)
}

/// `known` with what is newer put before it, cut to `depth`; `None` when the node's answer
/// does not continue `known` (its newest signature was not where `until` stopped: another
/// node, or a list that changed) — then the caller reads the whole list.
async fn read_newer<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    known: History,
    depth: u32,
) -> Result<Option<History>, LedgerError> {
    let Some(Ok(until)) = known.entries.first().map(|e| Signature::parse(&e.signature)) else { return Ok(None) };
    let (mut entries, more) = read_pages(source, wallet, depth, Some(&until)).await?;
    if more {
        return Ok(Some(History { depth, truncated: true, entries }));
    }
    let seen: std::collections::HashSet<&str> = known.entries.iter().map(|e| e.signature.as_str()).collect();
    if entries.iter().any(|e| seen.contains(e.signature.as_str())) {
        return Ok(None);
    }
    let total = entries.len() + known.entries.len();
    // `covers` holds: a cut `known` is at least `depth` long, so past `depth` means cut.
    let truncated = total > depth as usize || (total == depth as usize && known.truncated);
    entries.extend(known.entries);
    entries.truncate(depth as usize);
    Ok(Some(History { depth, truncated, entries }))
}

/// Pages through `getSignaturesForAddress` up to `depth` (newer than `until` when given).
/// Returns the signatures and whether the depth limit cut the list.
async fn read_pages<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    depth: u32,
    until: Option<&Signature>,
) -> Result<(Vec<SignatureInfo>, bool), LedgerError> {
    let mut out: Vec<SignatureInfo> = Vec::new();
    let mut before: Option<Signature> = None;
    loop {
        let remaining = depth - out.len() as u32;
        // Ask for one more than needed on the last page, to learn whether more exist.
        let limit = (remaining + 1).min(config::SIGNATURES_PAGE_LEN_MAX);
        let page = match until {
            Some(until) => source.get_signatures_until(wallet, until, before.as_ref(), limit).await?,
            None => source.get_signatures_for_address(wallet, before.as_ref(), limit).await?,
        };
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
    prefetched: &Prefetched,
    read_beside: &mut Vec<Pubkey>,
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
    let accounts = read_accounts(source, &candidates, prefetched, coverage).await?;
    read_beside.extend(&candidates);
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
    prefetched: &Prefetched,
    read_beside: &mut Vec<Pubkey>,
    coverage: &mut Coverage,
) -> Result<Vec<MintInfo>, LedgerError> {
    let addresses: Vec<Pubkey> = token_accounts
        .iter()
        .map(|t| t.mint)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .take(config::RELATED_ACCOUNTS_MAX)
        .collect();
    let accounts = read_accounts(source, &addresses, prefetched, coverage).await?;
    read_beside.extend(&addresses);
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

/// The accounts at `addresses`, in order: those `prefetched` holds from it, the others by
/// `getMultipleAccounts` in chunks of the node's limit.
async fn read_accounts<S: LedgerSource>(
    source: &S,
    addresses: &[Pubkey],
    prefetched: &Prefetched,
    coverage: &mut Coverage,
) -> Result<Vec<Option<UiAccount>>, LedgerError> {
    let missing: Vec<Pubkey> = addresses.iter().filter(|a| prefetched.get(a).is_none()).copied().collect();
    if missing.len() < addresses.len() {
        coverage.as_of_slot = coverage.as_of_slot.max(prefetched.slot);
    }
    let mut fetched = read_missing(source, &missing, coverage).await?.into_iter();
    let mut out = Vec::with_capacity(addresses.len());
    for address in addresses {
        out.push(match prefetched.get(address) {
            Some(account) => account.clone(),
            None => fetched.next().flatten(),
        });
    }
    Ok(out)
}

/// `getMultipleAccounts` in chunks of the node's limit, in order.
async fn read_missing<S: LedgerSource>(
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
