//! The signer's earlier counterparties, for the look-alike and never-seen checks of a scan:
//! the addresses its recent transfers went to or came from, read from its newest meaningful
//! transactions and kept briefly per wallet.
//!
//! Owns: `Counterparties` (the set, how many meaningful transactions it rests on, how far back
//! the read looked — `Reach`, rendered in the answer's `counterparties` — and why it stopped
//! short, if it did), `wanted` (whether a transaction needs them: it sends or approves
//! something of the signer's), `read` (the bounded history read, on the lane; `Walk` decides
//! each of its steps) and its `Cache`. Called on the scan lane's thread.
//!
//! Meaningful: a transaction that did not fail and that the signer signed or that moved value
//! above dust to or from it (`engine::flows`). The rest — failed transactions, and dust or
//! nothing from someone else — is what any stranger can put in a wallet's history for a fee,
//! so it takes no place in the window: signatures pages are read, failed entries skipped
//! without a fetch (the list says `err`), the others fetched and judged, until
//! `SCAN_HISTORY_MEANINGFUL_WANTED` meaningful transactions are found or the history ends.
//! Pages and fetches start at the window's size and at most double each round, so an ordinary
//! wallet costs one page and one batch, as before, and a flooded one a few rounds.
//!
//! Invariant: bounded — at most `SCAN_HISTORY_SIGNATURES_LISTED_MAX` signatures listed,
//! `SCAN_HISTORY_TRANSACTIONS_READ_MAX` transactions fetched and `SCAN_HISTORY_BYTES_MAX` bytes
//! read (`budget::within_part`, inside the scan's own budget) per wallet, every call within the
//! lane's deadline; at most `SCAN_COUNTERPARTIES_MAX` addresses kept, at most
//! `SCAN_COUNTERPARTIES_CACHE_LEN` wallets cached (`ttl_cache`), each for
//! `SCAN_COUNTERPARTIES_TTL_MS`. A read stopped by a bound (or by a failed or late call after
//! its first round) keeps what it judged and says so (`Reach::exhausted` and the reason); one
//! that judged nothing is an error, as before.
//! Invariant: only real counterparties count — transfers above dust either way (a poisoner's
//! dust would otherwise make its own look-alike "known"), as the X-Ray engine's poisoning
//! signals read them (`engine::flows`).
//! Deliberately absent: the latest X-Ray's view (its document lists evidence, not a set of
//! counterparties; a fresh read is as cheap as parsing it and cannot be stale by a day); the
//! ledger cache's remembered lists (the lane's source has none); a per-wallet window size.

use std::collections::{BTreeSet, VecDeque};
use std::future::Future;
use std::sync::Arc;

use serde::Serialize;

use super::deadline::Deadline;
use crate::config::{
    SCAN_COUNTERPARTIES_CACHE_LEN, SCAN_COUNTERPARTIES_MAX, SCAN_COUNTERPARTIES_TTL_MS, SCAN_HISTORY_BYTES_MAX,
    SCAN_HISTORY_MEANINGFUL_WANTED, SCAN_HISTORY_SIGNATURES_LISTED_MAX, SCAN_HISTORY_TRANSACTIONS_READ_MAX,
    SCAN_UPSTREAM_TIMEOUT_MS, SIGNATURES_PAGE_LEN_MAX,
};
use crate::engine::flows;
use crate::ledger::budget;
use crate::ledger::instruction::InstructionKind as K;
use crate::ledger::model::{Transaction, WalletView};
use crate::ledger::read::LedgerSource;
use crate::ledger::transaction::Decoded;
use crate::ledger::wire::{SignatureInfo, TransactionResult};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

/// Who the signer dealt with lately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counterparties {
    pub addresses: BTreeSet<Pubkey>,
    /// Meaningful transactions of the signer's the set was read from.
    pub transactions: usize,
    pub reach: Reach,
    /// Why the read stopped before `SCAN_HISTORY_MEANINGFUL_WANTED` meaningful transactions
    /// while the history went on (`reach.exhausted`), for the answer's `reason`.
    pub shortfall: Option<String>,
}

/// How far back the read looked and what it passed over, as the answer's `counterparties`
/// shows it (camelCase members beside `checked` and `transactions`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reach {
    /// Transactions fetched and judged: meaningful, dust, and any the ledger did not have.
    pub transactions_read: u32,
    /// Signatures of the signer's history listed (some may lie past the window, unjudged).
    pub signatures_listed: u32,
    /// Fetched transactions that were not meaningful: dust or nothing to or from the signer,
    /// from someone else.
    pub dust_skipped: u32,
    /// Failed transactions passed over (the list said so; none of them fetched).
    pub failed_skipped: u32,
    /// Slot and block time of the oldest transaction judged: how far back the window reaches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_slot: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub oldest_block_time: Option<i64>,
    /// True when a bound stopped the read before it found its meaningful transactions, with
    /// more history left: a counterparty older than `oldest_slot` is not known.
    pub exhausted: bool,
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

/// The bounds of one read (`LIMITS` in service; tests use smaller ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Meaningful transactions the read stops at.
    pub wanted: u32,
    pub signatures_listed_max: u32,
    pub transactions_read_max: u32,
    pub bytes_max: u64,
}

pub const LIMITS: Limits = Limits {
    wanted: SCAN_HISTORY_MEANINGFUL_WANTED,
    signatures_listed_max: SCAN_HISTORY_SIGNATURES_LISTED_MAX,
    transactions_read_max: SCAN_HISTORY_TRANSACTIONS_READ_MAX,
    bytes_max: SCAN_HISTORY_BYTES_MAX,
};

/// The counterparties of `wallet` in its newest meaningful transactions, every call ending by
/// `deadline`.
pub async fn read<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    deadline: Deadline,
) -> Result<Counterparties, LedgerError> {
    read_within(source, wallet, LIMITS, deadline).await
}

async fn read_within<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    limits: Limits,
    deadline: Deadline,
) -> Result<Counterparties, LedgerError> {
    let mut walk = Walk::new(*wallet, limits);
    let ended = budget::within_part(limits.bytes_max, walk.run(source, deadline)).await;
    if let Err(stop) = ended {
        // Nothing judged: no window to answer with, the read failed as a whole.
        if walk.reach.transactions_read == 0 && walk.reach.failed_skipped == 0 {
            return Err(stop.into_error());
        }
        tracing::debug!(wallet = %wallet, stop = ?stop, "the signer's history read stopped short");
        walk.stop_short(stop.cause(&limits));
    }
    Ok(walk.finish())
}

/// Why a read stopped before it was done.
#[derive(Debug)]
enum Stop {
    /// The ledger refused or failed a call (the byte bounds among them).
    Ledger(LedgerError),
    /// A call was still unanswered at the deadline.
    Late,
}

impl Stop {
    fn into_error(self) -> LedgerError {
        match self {
            Stop::Ledger(e) => e,
            Stop::Late => LedgerError::Unavailable(format!("no answer within {SCAN_UPSTREAM_TIMEOUT_MS} ms")),
        }
    }

    /// The answer's words for it (upstream text is never repeated: it is logged).
    fn cause(&self, limits: &Limits) -> String {
        match self {
            Stop::Ledger(LedgerError::OverBudget(_)) => {
                format!("it read its limit of {} KiB of ledger answers", limits.bytes_max / 1024)
            }
            Stop::Ledger(_) => "a later read of the ledger failed".to_owned(),
            Stop::Late => format!("the ledger did not answer all of it within {SCAN_UPSTREAM_TIMEOUT_MS} ms"),
        }
    }
}

/// What to do next.
#[derive(Debug)]
enum Step {
    /// List up to this many more signatures.
    List(u32),
    /// Judge these entries in order, fetching those that did not fail.
    Judge(Vec<SignatureInfo>),
    Done,
}

/// One read's state: what was listed and not yet judged, what was judged, and the set.
struct Walk {
    wallet: Pubkey,
    limits: Limits,
    /// Listed, not yet judged, newest first.
    queue: VecDeque<SignatureInfo>,
    /// The oldest signature listed: the next page starts before it.
    before: Option<Signature>,
    /// The history's end was listed.
    ended: bool,
    meaningful: u32,
    addresses: BTreeSet<Pubkey>,
    reach: Reach,
    shortfall: Option<String>,
}

impl Walk {
    fn new(wallet: Pubkey, limits: Limits) -> Walk {
        Walk {
            wallet,
            limits,
            queue: VecDeque::new(),
            before: None,
            ended: false,
            meaningful: 0,
            addresses: BTreeSet::new(),
            reach: Reach::default(),
            shortfall: None,
        }
    }

    async fn run<S: LedgerSource>(&mut self, source: &S, deadline: Deadline) -> Result<(), Stop> {
        loop {
            match self.next_step() {
                Step::Done => return Ok(()),
                Step::List(limit) => {
                    let page =
                        on_time(deadline, source.get_signatures_for_address(&self.wallet, self.before.as_ref(), limit))
                            .await?;
                    self.listed(page, limit).map_err(Stop::Ledger)?;
                }
                Step::Judge(entries) => {
                    let fetched = on_time(deadline, fetch(source, &entries)).await?;
                    self.judge(&entries, fetched);
                }
            }
        }
    }

    /// The next step, or `Done` (found, the history ended, or a bound reached: then
    /// `shortfall` says which).
    fn next_step(&mut self) -> Step {
        if self.meaningful >= self.limits.wanted {
            return Step::Done;
        }
        let fetches_left = self.limits.transactions_read_max.saturating_sub(self.reach.transactions_read);
        if fetches_left == 0 {
            if self.ended && self.queue.is_empty() {
                return Step::Done;
            }
            let cause = format!("it fetched its limit of {} transactions", self.limits.transactions_read_max);
            return self.done_short(cause);
        }
        // What is still missing, or as much as was read so far when more: a flood costs a few
        // rounds of doubling size, not one round per window.
        let want = (self.limits.wanted - self.meaningful).max(self.reach.transactions_read).min(fetches_left);
        let waiting = self.queue.iter().filter(|e| e.err.is_none()).count() as u32;
        let listed_left = self.limits.signatures_listed_max.saturating_sub(self.reach.signatures_listed);
        if waiting < want && !self.ended && listed_left > 0 {
            let page = self.limits.wanted.max(self.reach.signatures_listed);
            return Step::List(page.min(listed_left).min(SIGNATURES_PAGE_LEN_MAX));
        }
        if !self.queue.is_empty() {
            return Step::Judge(self.take(want));
        }
        if self.ended {
            return Step::Done;
        }
        self.done_short(format!("it listed its limit of {} signatures", self.limits.signatures_listed_max))
    }

    fn done_short(&mut self, cause: String) -> Step {
        self.stop_short(cause);
        Step::Done
    }

    fn stop_short(&mut self, cause: String) {
        self.reach.exhausted = true;
        self.shortfall = Some(format!(
            "the signer's history read stopped before {} transactions that were neither failed nor dust were \
             found: {cause}; a counterparty older than the oldest transaction read is not known",
            self.limits.wanted
        ));
    }

    /// The queue's front up to its `fetches`-th entry that did not fail (failed ones between
    /// come along: they are judged in their place, without a fetch).
    fn take(&mut self, fetches: u32) -> Vec<SignatureInfo> {
        let mut out = Vec::new();
        let mut to_fetch = 0;
        while let Some(entry) = self.queue.front() {
            if entry.err.is_none() {
                if to_fetch == fetches {
                    break;
                }
                to_fetch += 1;
            }
            out.extend(self.queue.pop_front());
        }
        out
    }

    fn listed(&mut self, mut page: Vec<SignatureInfo>, asked: u32) -> Result<(), LedgerError> {
        // A page longer than asked is the upstream's excess: kept to what was asked.
        page.truncate(asked as usize);
        self.ended = (page.len() as u64) < u64::from(asked);
        self.reach.signatures_listed = self.reach.signatures_listed.saturating_add(page.len() as u32);
        if let Some(last) = page.last() {
            let parsed = Signature::parse(&last.signature);
            self.before =
                Some(parsed.map_err(|_| LedgerError::Malformed("signature in history is not base58".into()))?);
        }
        self.queue.extend(page);
        Ok(())
    }

    /// `entries` in order: failed ones skipped, the others judged from `fetched` (one each, in
    /// order; `None` where the ledger did not have it or it did not parse).
    fn judge(&mut self, entries: &[SignatureInfo], fetched: Vec<Option<Transaction>>) {
        let mut fetched = fetched.into_iter();
        for entry in entries {
            self.reach.oldest_slot = Some(entry.slot);
            self.reach.oldest_block_time = entry.block_time;
            if entry.err.is_some() {
                self.reach.failed_skipped += 1;
                continue;
            }
            self.reach.transactions_read += 1;
            match fetched.next().flatten() {
                Some(tx) if tx.failed() => self.reach.failed_skipped += 1,
                Some(tx) => self.judge_one(tx),
                None => {}
            }
        }
    }

    fn judge_one(&mut self, tx: Transaction) {
        let signed = tx.is_signer(&self.wallet);
        let view = WalletView { address: self.wallet, transactions: vec![tx], ..WalletView::default() };
        let transfers = flows::transfers(&view);
        let mut real = transfers.iter().filter(|t| !t.is_dust()).map(|t| t.counterparty).peekable();
        if !signed && real.peek().is_none() {
            self.reach.dust_skipped += 1;
            return;
        }
        self.meaningful += 1;
        for address in real {
            if self.addresses.len() >= SCAN_COUNTERPARTIES_MAX {
                break;
            }
            self.addresses.insert(address);
        }
    }

    fn finish(self) -> Counterparties {
        Counterparties {
            addresses: self.addresses,
            transactions: self.meaningful as usize,
            reach: self.reach,
            shortfall: self.shortfall,
        }
    }
}

/// The transactions of the entries that did not fail, in order, each converted as its batch
/// arrives (the wire form of a batch is dropped before the next).
async fn fetch<S: LedgerSource>(
    source: &S,
    entries: &[SignatureInfo],
) -> Result<Vec<Option<Transaction>>, LedgerError> {
    let signatures = entries
        .iter()
        .filter(|e| e.err.is_none())
        .map(|e| Signature::parse(&e.signature))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| LedgerError::Malformed("signature in history is not base58".into()))?;
    let mut out = Vec::with_capacity(signatures.len());
    if signatures.is_empty() {
        return Ok(out);
    }
    let mut convert =
        |r: Option<TransactionResult>| out.push(r.and_then(|r| Transaction::from_wire(&r.tx, r.slot, r.block_time)));
    source.for_each_transaction(&signatures, &mut convert).await?;
    Ok(out)
}

/// One call of the read, ended at `deadline`.
async fn on_time<T>(deadline: Deadline, call: impl Future<Output = Result<T, LedgerError>>) -> Result<T, Stop> {
    match deadline.bound(call).await {
        Some(answer) => answer.map_err(Stop::Ledger),
        None => Err(Stop::Late),
    }
}

/// Counterparties read recently, per wallet.
pub type Cache = super::ttl_cache::TtlCache<Arc<Counterparties>>;

pub fn cache() -> Cache {
    Cache::new(SCAN_COUNTERPARTIES_CACHE_LEN, SCAN_COUNTERPARTIES_TTL_MS)
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::ledger::demo::{keys, DemoLedger};
    use crate::ledger::model::TokenProgram;
    use crate::ledger::wire::{KeyedAccount, UiAccount, Value, WithContext};

    /// The demo ledger with a flood put before one wallet's own history (newest first): the
    /// look-alike's real dust transaction again under new signatures, and failed entries. Counts
    /// the transactions fetched and charges `bytes_per_tx` for each, as a node's answer would.
    struct Flooded {
        demo: DemoLedger,
        wallet: Pubkey,
        extra: Vec<(SignatureInfo, Option<TransactionResult>)>,
        fetched: Cell<u32>,
        bytes_per_tx: u64,
    }

    struct Victim {
        demo: DemoLedger,
        wallet: Pubkey,
        friend: Pubkey,
        fake: Pubkey,
        dust: TransactionResult,
        newest: SignatureInfo,
    }

    /// The demo's poisoning victim, the friend it pays, the friend's look-alike and the
    /// look-alike's dust transaction to it.
    async fn victim() -> Victim {
        let demo = DemoLedger::new(crate::config::DEMO_SEED_DEFAULT);
        let wallet = demo.archetype("poisoning_victim").expect("victim");
        let friend = demo.auxiliary_accounts().into_iter().find(|(_, n, _)| n.starts_with("friend")).expect("friend").0;
        let fake = keys::lookalike(&friend, "lookalike:friend").expect("look-alike");
        let history = demo.get_signatures_for_address(&wallet, None, 1_000).await.expect("history");
        let signatures: Vec<Signature> = history.iter().map(|e| Signature::parse(&e.signature).expect("sig")).collect();
        let dust = demo
            .get_transactions(&signatures)
            .await
            .expect("transactions")
            .into_iter()
            .flatten()
            .find(|r| Transaction::from_wire(&r.tx, r.slot, r.block_time).is_some_and(|t| t.is_signer(&fake)))
            .expect("the look-alike's dust");
        Victim { demo, wallet, friend, fake, dust, newest: history[0].clone() }
    }

    /// `len` entries newer than `v`'s history; every `failed_every`-th failed (0: none).
    fn flood(v: Victim, len: u32, failed_every: u32, bytes_per_tx: u64) -> Flooded {
        let extra = (0..len)
            .map(|i| {
                let mut bytes = [0xF1u8; 64];
                bytes[..4].copy_from_slice(&i.to_le_bytes());
                let failed = failed_every > 0 && i % failed_every == failed_every - 1;
                let info = SignatureInfo {
                    signature: Signature(bytes).to_string(),
                    slot: v.newest.slot + u64::from(len - i),
                    err: failed.then(|| Value::from("InsufficientFundsForFee")),
                    memo: None,
                    block_time: v.newest.block_time.map(|t| t + i64::from(len - i)),
                    confirmation_status: None,
                };
                (info, (!failed).then(|| v.dust.clone()))
            })
            .collect();
        Flooded { demo: v.demo, wallet: v.wallet, extra, fetched: Cell::new(0), bytes_per_tx }
    }

    impl LedgerSource for Flooded {
        fn name(&self) -> &'static str {
            "demo"
        }
        async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
            self.demo.get_account_info(address).await
        }
        async fn get_multiple_accounts(
            &self,
            addresses: &[Pubkey],
        ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
            self.demo.get_multiple_accounts(addresses).await
        }
        async fn get_token_accounts_by_owner(
            &self,
            owner: &Pubkey,
            program: TokenProgram,
        ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
            self.demo.get_token_accounts_by_owner(owner, program).await
        }
        async fn get_nonce_accounts_by_authority(
            &self,
            authority: &Pubkey,
        ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
            self.demo.get_nonce_accounts_by_authority(authority).await
        }
        async fn get_signatures_for_address(
            &self,
            address: &Pubkey,
            before: Option<&Signature>,
            limit: u32,
        ) -> Result<Vec<SignatureInfo>, LedgerError> {
            if *address != self.wallet {
                return self.demo.get_signatures_for_address(address, before, limit).await;
            }
            let mut all: Vec<SignatureInfo> = self.extra.iter().map(|(info, _)| info.clone()).collect();
            all.extend(self.demo.get_signatures_for_address(address, None, 1_000).await?);
            let from = before
                .map_or(0, |b| all.iter().position(|e| e.signature == b.to_string()).map_or(all.len(), |i| i + 1));
            Ok(all.into_iter().skip(from).take(limit as usize).collect())
        }
        async fn get_transactions(
            &self,
            signatures: &[Signature],
        ) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
            self.fetched.set(self.fetched.get() + signatures.len() as u32);
            budget::charge(self.bytes_per_tx * signatures.len() as u64)?;
            let mut out = Vec::with_capacity(signatures.len());
            for signature in signatures {
                let text = signature.to_string();
                match self.extra.iter().find(|(info, _)| info.signature == text) {
                    Some((_, tx)) => out.push(tx.clone()),
                    None => out.extend(self.demo.get_transactions(&[*signature]).await?),
                }
            }
            Ok(out)
        }
    }

    fn later() -> Deadline {
        Deadline::after(std::time::Duration::from_secs(60))
    }

    fn run<T>(future: impl Future<Output = T>) -> T {
        crate::ledger::runtime().expect("runtime").block_on(future)
    }

    #[test]
    fn dust_and_failed_transactions_take_no_place_in_the_window() {
        run(async {
            let v = victim().await;
            let (wallet, friend, fake) = (v.wallet, v.friend, v.fake);
            let plain = read(&v.demo, &wallet, later()).await.expect("read");
            assert!(plain.addresses.contains(&friend) && plain.addresses.contains(&fake), "{plain:?}");
            assert!(!plain.reach.exhausted && plain.shortfall.is_none(), "{plain:?}");
            assert_eq!(plain.reach.dust_skipped, 1, "the look-alike's own dust: {plain:?}");

            // 40 more of the look-alike's dust and 10 failed transactions, newest.
            let flooded = flood(v, 50, 5, 0);
            let before = crate::ledger::view::read_recent(&flooded, &wallet, LIMITS.wanted).await.expect("window");
            assert!(
                !flows::transfers(&before).iter().any(|t| t.counterparty == friend),
                "the newest 25 alone hold no trace of the friend: what the flood did before"
            );
            flooded.fetched.set(0);
            let read = read(&flooded, &wallet, later()).await.expect("read");
            assert_eq!((&read.addresses, read.transactions), (&plain.addresses, plain.transactions), "{read:?}");
            assert_eq!(read.reach.dust_skipped, plain.reach.dust_skipped + 40);
            assert_eq!(read.reach.failed_skipped, plain.reach.failed_skipped + 10);
            assert_eq!(read.reach.transactions_read, plain.reach.transactions_read + 40, "failed ones never fetched");
            assert_eq!(flooded.fetched.get(), read.reach.transactions_read);
            assert_eq!(
                (read.reach.oldest_slot, read.reach.oldest_block_time),
                (plain.reach.oldest_slot, plain.reach.oldest_block_time)
            );
            assert!(!read.reach.exhausted && read.shortfall.is_none(), "the history ended first: {read:?}");
        });
    }

    #[test]
    fn a_flood_past_the_limits_stops_there_and_says_so() {
        run(async {
            let v = victim().await;
            let (wallet, friend) = (v.wallet, v.friend);
            let flooded = flood(v, 1_000, 0, 0);
            let read = read(&flooded, &wallet, later()).await.expect("read");
            assert_eq!(flooded.fetched.get(), SCAN_HISTORY_TRANSACTIONS_READ_MAX, "not 1,000 fetches");
            assert_eq!((read.transactions, read.reach.dust_skipped), (0, SCAN_HISTORY_TRANSACTIONS_READ_MAX));
            assert!(!read.addresses.contains(&friend));
            let reason = read.shortfall.as_deref().expect("a reason");
            assert!(reason.contains("its limit of 150 transactions"), "{reason}");
            let shown = serde_json::to_value(&read.reach).expect("json");
            assert_eq!(shown["exhausted"], true);
            assert_eq!(shown["transactionsRead"], 150);
            assert_eq!(shown["dustSkipped"], 150);
            assert!(shown["oldestSlot"].is_u64() && shown["oldestBlockTime"].is_i64(), "{shown}");
        });
    }

    #[test]
    fn failed_floods_are_listed_not_fetched_and_bytes_bound_the_read() {
        run(async {
            let v = victim().await;
            let wallet = v.wallet;
            let failed = flood(v, 1_200, 1, 0);
            let got = read(&failed, &wallet, later()).await.expect("read");
            assert_eq!(failed.fetched.get(), 0, "a failed entry is never fetched");
            assert_eq!((got.reach.signatures_listed, got.reach.failed_skipped), (1_000, 1_000));
            assert!(got.reach.exhausted, "{got:?}");
            assert!(got.shortfall.as_deref().is_some_and(|r| r.contains("1000 signatures")), "{got:?}");

            // Each transaction answered in 64 KiB: the second round passes the 2 MiB bound.
            let bloated = flood(victim().await, 100, 0, 64 * 1024);
            let got = read(&bloated, &wallet, later()).await.expect("read");
            assert_eq!(got.reach.transactions_read, LIMITS.wanted, "the first round's transactions kept");
            assert!(got.shortfall.as_deref().is_some_and(|r| r.contains("2048 KiB")), "{got:?}");

            // Nothing judged before the bound: the read fails as a whole, as before.
            let tight = Limits { bytes_max: 1024, ..LIMITS };
            let refused = read_within(&bloated, &wallet, tight, later()).await;
            assert!(matches!(refused, Err(LedgerError::OverBudget(_))), "{refused:?}");
        });
    }
}
