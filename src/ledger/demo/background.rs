//! The background population: `config::DEMO_POPULATION_LEN` ordinary wallets, none of them
//! materialized until asked for.
//!
//! Owns: `Background` — the derivation of wallet `i`'s address and token accounts, the
//! events (transactions) it takes part in, and its balances at any point of its history.
//! Called from the demo ledger's thread; every method is a pure function of the seed.
//!
//! The shape: wallets `0..HUBS` are hubs (think exchange withdrawal wallets) with large
//! genesis balances; every other wallet `i` is funded once by hub `i % HUBS` (SOL and two demo
//! tokens). In each of `ROUNDS` rounds, wallet `i` is paired with `i ^ mask[round]` and the
//! pair transacts (SOL or a token transfer, sometimes with a memo) when a hash of
//! (seed, round, lower index) says so. Both sides derive the same event, so a transfer from A
//! to B appears in both histories with the same signature and transaction.
//!
//! Invariant: addresses encode their index recoverably (bytes 24..28 are `i`), so looking an
//! address up costs a few hashes and no table; nothing per wallet is kept in memory.
//! Invariant: a wallet's balances before an event are its genesis balances plus the effects
//! of its earlier events (ordered by slot, then signature, as histories are), so balances
//! chain across its transactions and the current state is where its history leads.
//! Deliberately absent: background transactions never touch archetype accounts or mints as
//! account keys (token transfers are unchecked), so archetype histories stay exact.

use crate::config::DEMO_POPULATION_LEN;
use crate::ledger::demo::actors::{Cast, Mint};
use crate::ledger::demo::clock;
use crate::ledger::demo::keys::{self, Rng, TxId};
use crate::ledger::demo::state::{Acct, State, TokenAcct};
use crate::ledger::demo::tx::{memo_entry, Ix, Op, TxSpec, LAMPORTS_PER_SIGNATURE};
use crate::ledger::demo::world::LAMPORTS_PER_SOL;
use crate::ledger::model::TokenProgram;
use crate::pubkey::{Pubkey, Signature};

/// Wallets `0..HUBS` fund the others (each hub funds `DEMO_POPULATION_LEN / HUBS - 1`).
pub const HUBS: u32 = 1_024;
/// Pairing rounds; each wallet meets one partner per round.
pub const ROUNDS: u8 = 24;
/// Chance that a pair transacts in a round.
const PAIR_PERCENT: u64 = 45;
const FUND_WINDOW_START_DAYS_AGO: u64 = 420;
const FUND_WINDOW_DAYS: u64 = 40;
const ROUND_0_START_DAYS_AGO: u64 = 370;
const ROUND_SPACING_DAYS: u64 = 15;
const ROUND_WINDOW_DAYS: u64 = 12;
const HUB_GENESIS_SOL: u64 = 1_000_000;
const HUB_GENESIS_TOKENS_WHOLE: u64 = 1_000_000_000;

/// Which background account an address is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BgAccount {
    Wallet(u32),
    /// Token account of wallet `.0` for demo mint `.1` (0 = DUSD, 1 = DEMO).
    Token(u32, usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sol { from: u32, to: u32, lamports: u64 },
    Token { from: u32, to: u32, mint: usize, amount: u64, memo: bool },
    Fund { hub: u32, child: u32, lamports: u64, tokens: [u64; 2] },
}

impl Kind {
    /// `(payer, receiver)` wallet indices.
    fn parties(&self) -> (u32, u32) {
        match *self {
            Kind::Sol { from, to, .. } | Kind::Token { from, to, .. } => (from, to),
            Kind::Fund { hub, child, .. } => (hub, child),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub id: TxId,
    pub slot: u64,
    pub kind: Kind,
}

/// A wallet's SOL and its two token balances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Bal {
    pub sol: u64,
    pub tokens: [u64; 2],
}

#[derive(Debug, Clone)]
pub struct Background {
    seed: u64,
    masks: [u32; ROUNDS as usize],
    mints: [Mint; 2],
}

fn index_of(key: &Pubkey) -> u32 {
    let b = key.as_bytes();
    u32::from_le_bytes([b[24], b[25], b[26], b[27]])
}

impl Background {
    pub fn new(seed: u64, cast: &Cast) -> Background {
        let mut masks = [0u32; ROUNDS as usize];
        for (r, m) in masks.iter_mut().enumerate() {
            // Nonzero and below the population size (a power of two), so i ^ m is another wallet.
            let h = Rng::seeded(seed, "bg-mask", &[r as u8]).next_u64();
            *m = 1 + (h % u64::from(DEMO_POPULATION_LEN - 1)) as u32;
        }
        Background { seed, masks, mints: [cast.dusd, cast.demo] }
    }

    pub fn mint(&self, m: usize) -> &Mint {
        &self.mints[m.min(1)]
    }

    /// `prefix(24) ‖ i ‖ counter` for the first counter on (`on_curve`) or off the curve.
    fn derive(&self, domain: &str, data: &[u8], i: u32, on_curve: bool) -> Pubkey {
        let prefix = keys::seeded(self.seed, domain, data);
        let mut bytes = [0u8; 32];
        bytes[..24].copy_from_slice(&prefix[..24]);
        bytes[24..28].copy_from_slice(&i.to_le_bytes());
        // About half of all counters fit; see keys::named_off_curve for why this ends.
        let mut counter = 0u32;
        loop {
            bytes[28..].copy_from_slice(&counter.to_le_bytes());
            let key = Pubkey(bytes);
            if key.is_on_curve() == on_curve {
                return key;
            }
            counter = counter.wrapping_add(1);
        }
    }

    /// Address of background wallet `i` (on the curve).
    pub fn wallet(&self, i: u32) -> Pubkey {
        self.derive("bg-wallet", &i.to_le_bytes(), i, true)
    }

    /// Token account of wallet `i` for mint `m` (off the curve).
    pub fn token_account(&self, i: u32, m: usize) -> Pubkey {
        let data = [&i.to_le_bytes()[..], &[m as u8]].concat();
        self.derive("bg-token", &data, i, false)
    }

    pub fn identify(&self, key: &Pubkey) -> Option<BgAccount> {
        let i = index_of(key);
        if i >= DEMO_POPULATION_LEN {
            return None;
        }
        if key.is_on_curve() {
            return (self.wallet(i) == *key).then_some(BgAccount::Wallet(i));
        }
        (0..2).find(|&m| self.token_account(i, m) == *key).map(|m| BgAccount::Token(i, m))
    }

    pub fn is_hub(i: u32) -> bool {
        i < HUBS
    }

    fn pair_event(&self, round: u8, low: u32) -> Option<Event> {
        let mask = *self.masks.get(usize::from(round))?;
        let high = low ^ mask;
        if low >= DEMO_POPULATION_LEN || high <= low {
            return None;
        }
        let mut rng = Rng::seeded(self.seed, "bg-pair", &[&[round][..], &low.to_le_bytes()].concat());
        if !rng.chance(PAIR_PERCENT) {
            return None;
        }
        let (from, to) = if rng.below(2) == 0 { (low, high) } else { (high, low) };
        let start = clock::days_ago(ROUND_0_START_DAYS_AGO - ROUND_SPACING_DAYS * u64::from(round));
        let slot = start + rng.below(ROUND_WINDOW_DAYS * clock::SLOTS_PER_DAY);
        let kind = if rng.chance(60) {
            Kind::Sol { from, to, lamports: rng.range(10, 1_000) * 1_000_000 }
        } else {
            let mint = rng.below(2) as usize;
            let whole = if mint == 0 { rng.range(1, 50) } else { rng.range(1, 20) };
            Kind::Token { from, to, mint, amount: self.mints[mint].units(whole), memo: rng.chance(15) }
        };
        Some(Event { id: TxId::BgPair { round, low }, slot, kind })
    }

    fn fund_event(&self, child: u32) -> Option<Event> {
        if Self::is_hub(child) || child >= DEMO_POPULATION_LEN {
            return None;
        }
        let mut rng = Rng::seeded(self.seed, "bg-fund", &child.to_le_bytes());
        let slot = clock::days_ago(FUND_WINDOW_START_DAYS_AGO) + rng.below(FUND_WINDOW_DAYS * clock::SLOTS_PER_DAY);
        let kind = Kind::Fund {
            hub: child % HUBS,
            child,
            lamports: rng.range(30, 80) * LAMPORTS_PER_SOL,
            tokens: [self.mints[0].units(rng.range(1_500, 6_000)), self.mints[1].units(rng.range(500, 2_000))],
        };
        Some(Event { id: TxId::BgFund { child }, slot, kind })
    }

    /// The event a background transaction id stands for, if it exists under this seed.
    pub fn event(&self, id: TxId) -> Option<Event> {
        match id {
            TxId::BgPair { round, low } => self.pair_event(round, low),
            TxId::BgFund { child } => self.fund_event(child),
            TxId::World(_) | TxId::Busy(_) | TxId::Timeline { .. } => None,
        }
    }

    /// Every event of wallet `i`, oldest first: by slot, then (rarely needed, so computed only
    /// for ties) by signature, the order histories list them in.
    pub fn events_of(&self, i: u32) -> Vec<Event> {
        if i >= DEMO_POPULATION_LEN {
            return Vec::new();
        }
        let mut events: Vec<Event> = Vec::new();
        for (round, mask) in self.masks.iter().enumerate() {
            let low = i.min(i ^ mask);
            events.extend(self.pair_event(round as u8, low));
        }
        if Self::is_hub(i) {
            let children = (1..DEMO_POPULATION_LEN / HUBS).map(|k| i + k * HUBS);
            events.extend(children.filter_map(|c| self.fund_event(c)));
        } else {
            events.extend(self.fund_event(i));
        }
        events.sort_by(|a, b| {
            a.slot.cmp(&b.slot).then_with(|| a.id.signature(self.seed).cmp(&b.id.signature(self.seed)))
        });
        events
    }

    fn genesis(i: u32, mints: &[Mint; 2]) -> Bal {
        if Self::is_hub(i) {
            Bal { sol: HUB_GENESIS_SOL * LAMPORTS_PER_SOL, tokens: mints.map(|m| m.units(HUB_GENESIS_TOKENS_WHOLE)) }
        } else {
            Bal::default()
        }
    }

    /// Wallet `i`'s balances just before event `until`, or now when `until` is `None`.
    pub fn balances(&self, i: u32, until: Option<TxId>) -> Bal {
        let mut bal = Self::genesis(i, &self.mints);
        for e in self.events_of(i) {
            if Some(e.id) == until {
                break;
            }
            apply(&mut bal, i, &e.kind);
        }
        bal
    }

    /// The account at `key` as it is now, if it is a background account.
    pub fn account(&self, key: &Pubkey) -> Option<Acct> {
        match self.identify(key)? {
            BgAccount::Wallet(i) => {
                let bal = self.balances(i, None);
                (bal.sol > 0).then(|| Acct::wallet(bal.sol))
            }
            BgAccount::Token(i, m) => Some(self.token_acct(i, m, self.balances(i, None).tokens[m])),
        }
    }

    fn token_acct(&self, i: u32, m: usize, amount: u64) -> Acct {
        let mint = self.mints[m];
        let t = TokenAcct { amount, ..TokenAcct::new(mint.key, self.wallet(i), mint.decimals) };
        Acct::token_account(mint.program, t)
    }

    /// The token accounts wallet `i` owns now.
    pub fn token_accounts(&self, i: u32) -> Vec<(Pubkey, Acct)> {
        let bal = self.balances(i, None);
        (0..2).map(|m| (self.token_account(i, m), self.token_acct(i, m, bal.tokens[m]))).collect()
    }

    /// History of a background account: the events naming it. A wallet is named by all of
    /// its events except token transfers it receives (those name only its token account, as
    /// on chain); a token account by the events moving its balance.
    pub fn history(&self, account: BgAccount) -> Vec<(Event, Signature)> {
        let (i, names) = match account {
            BgAccount::Wallet(i) => (i, None),
            BgAccount::Token(i, m) => (i, Some(m)),
        };
        let named = |e: &Event| match (e.kind, names) {
            (Kind::Token { to, .. }, None) => to != i,
            (_, None) => true,
            (Kind::Token { mint, .. }, Some(m)) => mint == m,
            (Kind::Fund { .. }, Some(_)) => true,
            (Kind::Sol { .. }, Some(_)) => false,
        };
        self.events_of(i).into_iter().filter(named).map(|e| (e, e.id.signature(self.seed))).collect()
    }

    /// The history entry memo of an event (what `spec(e).memo()` gives, without deriving
    /// any address).
    pub fn memo(&self, e: &Event) -> Option<String> {
        matches!(e.kind, Kind::Token { memo: true, .. }).then(|| memo_entry(&memo_text(e.slot)))
    }

    /// The transaction of an event.
    pub fn spec(&self, e: &Event) -> TxSpec {
        let token_move = |from: u32, to: u32, m: usize, amount: u64| {
            Ix::new(Op::TokenTransfer {
                source: self.token_account(from, m),
                destination: self.token_account(to, m),
                authority: self.wallet(from),
                amount,
                program: TokenProgram::Token,
                checked: None,
            })
        };
        let (payer, _) = e.kind.parties();
        let ixs = match e.kind {
            Kind::Sol { from, to, lamports } => {
                vec![Ix::new(Op::Transfer { from: self.wallet(from), to: self.wallet(to), lamports })]
            }
            Kind::Token { from, to, mint, amount, memo } => {
                let mut ixs = vec![token_move(from, to, mint, amount)];
                if memo {
                    ixs.push(Ix::new(Op::Memo(memo_text(e.slot))));
                }
                ixs
            }
            Kind::Fund { hub, child, lamports, tokens } => vec![
                Ix::new(Op::Transfer { from: self.wallet(hub), to: self.wallet(child), lamports }),
                token_move(hub, child, 0, tokens[0]),
                token_move(hub, child, 1, tokens[1]),
            ],
        };
        TxSpec::new(e.slot, vec![self.wallet(payer)], ixs)
    }

    /// Puts both parties' accounts, as they were just before `e`, into `state`.
    pub fn prepare_state(&self, e: &Event, state: &mut State) {
        let (a, b) = e.kind.parties();
        for i in [a, b] {
            let bal = self.balances(i, Some(e.id));
            if bal.sol > 0 {
                state.insert(self.wallet(i), Acct::wallet(bal.sol));
            }
            for m in 0..2 {
                state.insert(self.token_account(i, m), self.token_acct(i, m, bal.tokens[m]));
            }
        }
    }
}

fn memo_text(slot: u64) -> String {
    format!("invoice {}", slot % 100_000)
}

/// The effect of an event on wallet `i`'s balances (the fee is the payer's single signature).
fn apply(bal: &mut Bal, i: u32, kind: &Kind) {
    let (payer, receiver) = kind.parties();
    let (lamports, tokens) = match *kind {
        Kind::Sol { lamports, .. } => (lamports, [0, 0]),
        Kind::Token { mint, amount, .. } => {
            let mut t = [0, 0];
            t[mint] = amount;
            (0, t)
        }
        Kind::Fund { lamports, tokens, .. } => (lamports, tokens),
    };
    if i == payer {
        bal.sol = bal.sol.saturating_sub(lamports + LAMPORTS_PER_SIGNATURE);
        for (held, moved) in bal.tokens.iter_mut().zip(tokens) {
            *held = held.saturating_sub(moved);
        }
    }
    if i == receiver {
        bal.sol = bal.sol.saturating_add(lamports);
        for (held, moved) in bal.tokens.iter_mut().zip(tokens) {
            *held = held.saturating_add(moved);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bg() -> Background {
        Background::new(11, &Cast::new())
    }

    #[test]
    fn addresses_are_recoverable() {
        let bg = bg();
        for i in [0, 1, HUBS, 77_777, DEMO_POPULATION_LEN - 1] {
            let w = bg.wallet(i);
            assert!(w.is_on_curve());
            assert_eq!(bg.identify(&w), Some(BgAccount::Wallet(i)));
            for m in 0..2 {
                let t = bg.token_account(i, m);
                assert!(!t.is_on_curve());
                assert_eq!(bg.identify(&t), Some(BgAccount::Token(i, m)));
            }
        }
        assert_eq!(bg.identify(&Cast::new().clean), None);
        assert_eq!(Background::new(12, &Cast::new()).identify(&bg.wallet(5)), None);
    }

    #[test]
    fn pair_events_are_shared_by_both_sides() {
        let bg = bg();
        let i = 5_000;
        let events = bg.events_of(i);
        assert!(events.iter().any(|e| matches!(e.kind, Kind::Fund { child, .. } if child == i)));
        for e in events.iter().filter(|e| matches!(e.id, TxId::BgPair { .. })) {
            let (a, b) = e.kind.parties();
            let other = if a == i { b } else { a };
            assert!(bg.events_of(other).contains(e));
        }
    }

    #[test]
    fn balances_never_overdraw() {
        let bg = bg();
        for i in [3, HUBS + 3, 50_001, DEMO_POPULATION_LEN - 2] {
            let mut bal = Background::genesis(i, &bg.mints);
            for e in bg.events_of(i) {
                let (payer, _) = e.kind.parties();
                if payer == i {
                    let needed = match e.kind {
                        Kind::Sol { lamports, .. } | Kind::Fund { lamports, .. } => lamports,
                        Kind::Token { .. } => 0,
                    };
                    assert!(bal.sol >= needed + LAMPORTS_PER_SIGNATURE, "wallet {i}");
                }
                apply(&mut bal, i, &e.kind);
            }
        }
    }
}
