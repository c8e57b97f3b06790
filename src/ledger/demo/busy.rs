//! The busy trader's generated history: thousands of DEX swaps (v0 transactions through an
//! address lookup table, with inner token transfers), token transfers to two peers, bursts of
//! activity and failed swaps.
//!
//! Owns: `Busy`, a compact table (slot and the few balances the trades move, before each
//! trade) from which any of its transactions is regenerated on demand. Built once by
//! `DemoLedger::new` on the caller's thread after the world; read-only afterwards.
//!
//! Invariant: trade `j` is a pure function of (seed, j, balances before j); the table stores
//! those balances, so rendering trade `j` gives post-balances equal to trade `j + 1`'s
//! pre-balances, and the world's current state is written from the balances after the last.
//! Invariant: slots strictly increase with `j`, all after the trader's scripted setup and
//! before the as-of slot. Deliberately absent: per-trade JSON kept in memory (≈90 bytes per
//! trade are kept; the rest is regenerated).

use crate::ledger::demo::actors::Cast;
use crate::ledger::demo::clock;
use crate::ledger::demo::keys::{Rng, TxId, BUILTIN};
use crate::ledger::demo::state::State;
use crate::ledger::demo::tx::{Checked, Ix, Lookup, Op, TxFailure, TxSpec};
use crate::ledger::model::TokenProgram;
use crate::pubkey::Pubkey;

/// Generated transactions of the busy trader (on top of its scripted setup).
pub const BUSY_TX_LEN: u32 = 3_600;
/// Percent of trades that are swaps (the rest are token transfers to peers).
const SWAP_PERCENT: u64 = 82;
/// Percent of swaps that fail on slippage (a bot racing others fails often).
const FAILED_SWAP_PERCENT: u64 = 30;
/// The DEX's slippage error (`0x1771`).
pub const SLIPPAGE_ERROR_CODE: u32 = 6_001;
/// Percent of gaps that are inside a burst (1–3 slots): runs of ~14 trades on average.
const BURST_PERCENT: u64 = 93;
const BURST_GAP_SLOTS_MAX: u64 = 3;
const QUIET_GAP_SLOTS_MAX: u64 = 130_000;
/// The last trade is about this long before the as-of slot.
const LAST_TRADE_SLOTS_BEFORE_AS_OF: u64 = 200_000;
const SWAP_COMPUTE_UNITS: u32 = 300_000;
/// Largest payout to a peer, in whole DUSD.
const PAYOUT_WHOLE_MAX: u64 = 60;
/// Base units of one DUSD (6 decimals).
const DUSD_UNITS: u64 = 1_000_000;
const SWAP_DISCRIMINATOR: [u8; 8] = [0xf8, 0xc6, 0x9e, 0x91, 0xe1, 0x75, 0x87, 0xc8];

/// Balances the trades move: the trader's SOL, its DUSD/DEMO/DBONK accounts, the four
/// vaults and the two peers' DUSD accounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Balances {
    pub sol: u64,
    pub atas: [u64; 3],
    pub vaults: [u64; 4],
    pub peers: [u64; 2],
}

#[derive(Debug, Clone, Copy)]
struct Row {
    slot: u64,
    pre: Balances,
}

/// A swap on pool `pool`; `sell_base` sells DEMO/DBONK for DUSD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Swap {
    pub pool: usize,
    pub sell_base: bool,
    pub amount_in: u64,
    pub amount_out: u64,
    pub price_micro_lamports: u64,
    pub failed: bool,
}

/// What trade `j` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trade {
    Swap(Swap),
    Pay { peer: usize, amount: u64, memo: bool },
}

#[derive(Debug, Clone)]
pub struct Busy {
    seed: u64,
    trader: Pubkey,
    rows: Vec<Row>,
    /// Every address some trade names, sorted.
    touched: Vec<Pubkey>,
}

/// Index of the trader's token account for each pool's (base, quote) mint:
/// `atas` is `[DUSD, DEMO, DBONK]`, pool 0 is DEMO/DUSD, pool 1 is DBONK/DUSD.
const POOL_ATAS: [(usize, usize); 2] = [(1, 0), (2, 0)];
/// Quote base units per base unit, as (numerator, denominator): 1 DEMO = 2.5 DUSD,
/// 1 DBONK = 0.00002 DUSD.
const POOL_PRICES: [(u128, u128); 2] = [(1, 400), (1, 5_000)];

impl Busy {
    /// Generates the trades after `setup_slot` (the trader's last scripted transaction),
    /// starting from the balances in `state`, and writes the final balances back into it.
    pub fn build(seed: u64, cast: &Cast, state: &mut State, setup_slot: u64) -> Busy {
        let slots = slots(seed, setup_slot);
        let mut balances = read_balances(cast, state);
        let mut rows = Vec::with_capacity(slots.len());
        for (j, slot) in slots.into_iter().enumerate() {
            rows.push(Row { slot, pre: balances });
            let trade = trade(seed, j as u32, &balances);
            balances = apply(&balances, &trade);
        }
        write_balances(cast, state, &balances);
        let mut touched = vec![cast.busy_trader, cast.pool_authority, cast.dex.id, cast.dusd.key];
        touched.extend(cast.trader_atas);
        touched.extend(cast.pools);
        touched.extend(cast.vaults);
        touched.extend(cast.peer_atas);
        touched.sort();
        Busy { seed, trader: cast.busy_trader, rows, touched }
    }

    pub fn len(&self) -> u32 {
        self.rows.len() as u32
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn slot(&self, j: u32) -> Option<u64> {
        self.rows.get(j as usize).map(|r| r.slot)
    }

    pub fn trader(&self) -> Pubkey {
        self.trader
    }

    /// True when some trade names `key` (`names` tells which trades).
    pub fn touches(&self, key: &Pubkey) -> bool {
        self.touched.binary_search(key).is_ok()
    }

    /// Balances before trade `j`.
    pub fn balances_before(&self, j: u32) -> Option<Balances> {
        let row = self.rows.get(j as usize)?;
        Some(row.pre)
    }

    pub fn trade(&self, j: u32) -> Option<Trade> {
        let row = self.rows.get(j as usize)?;
        Some(trade(self.seed, j, &row.pre))
    }

    /// The transaction of trade `j`.
    pub fn spec(&self, cast: &Cast, j: u32) -> Option<TxSpec> {
        let slot = self.slot(j)?;
        Some(spec(cast, slot, &self.trade(j)?))
    }

    /// Whether trade `j` names `key` among its account keys.
    pub fn names(&self, cast: &Cast, j: u32, key: &Pubkey) -> bool {
        let Some(t) = self.trade(j) else { return false };
        match t {
            Trade::Swap(Swap { pool, .. }) => {
                let (base, quote) = POOL_ATAS[pool];
                let atas = [ata_of(cast, base), ata_of(cast, quote)];
                *key == cast.busy_trader
                    || *key == cast.dex.id
                    || *key == cast.pools[pool]
                    || *key == cast.pool_authority
                    || atas.contains(key)
                    || cast.vaults[2 * pool..2 * pool + 2].contains(key)
            }
            Trade::Pay { peer, .. } => {
                *key == cast.busy_trader
                    || *key == cast.dusd.key
                    || *key == ata_of(cast, 0)
                    || *key == cast.peer_atas[peer]
            }
        }
    }

    /// Sets the accounts trade `j` moves to their balances before it, in a copy of the
    /// world's state.
    pub fn prepare_state(&self, cast: &Cast, j: u32, state: &mut State) {
        if let Some(b) = self.balances_before(j) {
            write_balances(cast, state, &b);
        }
    }

    /// Ids of all trades, oldest first (for histories).
    pub fn ids(&self) -> impl Iterator<Item = TxId> + '_ {
        (0..self.len()).map(TxId::Busy)
    }
}

fn ata_of(cast: &Cast, index: usize) -> Pubkey {
    cast.trader_atas[index]
}

/// Slots of the trades: counted back from shortly before the as-of slot with bursty gaps,
/// then, should that reach back past the setup, squeezed in after it.
fn slots(seed: u64, setup_slot: u64) -> Vec<u64> {
    let n = BUSY_TX_LEN as usize;
    let mut slots = vec![0u64; n];
    let mut slot = clock::AS_OF_SLOT - LAST_TRADE_SLOTS_BEFORE_AS_OF;
    for j in (0..n).rev() {
        slots[j] = slot;
        let mut rng = Rng::seeded(seed, "busy-gap", &(j as u32).to_le_bytes());
        let gap = if rng.chance(BURST_PERCENT) {
            rng.range(1, BURST_GAP_SLOTS_MAX)
        } else {
            rng.range(1, QUIET_GAP_SLOTS_MAX)
        };
        slot = slot.saturating_sub(gap);
    }
    let (first, last) = (slots[0], slots[n - 1]);
    if first <= setup_slot {
        let span = u128::from(last - first).max(1);
        let room = u128::from(last.saturating_sub(setup_slot + 1));
        for s in slots.iter_mut() {
            *s = setup_slot + 1 + u64::try_from(u128::from(*s - first) * room / span).unwrap_or(0);
        }
        for j in 1..n {
            slots[j] = slots[j].max(slots[j - 1] + 1);
        }
    }
    slots
}

fn read_balances(cast: &Cast, state: &State) -> Balances {
    let tokens = |k: &Pubkey| state.get(k).and_then(|a| a.token()).map_or(0, |t| t.amount);
    Balances {
        sol: state.get(&cast.busy_trader).map_or(0, |a| a.lamports),
        atas: [0, 1, 2].map(|i| tokens(&ata_of(cast, i))),
        vaults: cast.vaults.map(|v| tokens(&v)),
        peers: cast.peer_atas.map(|p| tokens(&p)),
    }
}

fn write_balances(cast: &Cast, state: &mut State, b: &Balances) {
    if let Some(a) = state.get_mut(&cast.busy_trader) {
        a.lamports = b.sol;
    }
    let mut set = |k: Pubkey, amount: u64| {
        if let Some(t) = state.get_mut(&k).and_then(|a| a.token_mut()) {
            t.amount = amount;
        }
    };
    for i in 0..3 {
        set(ata_of(cast, i), b.atas[i]);
    }
    for (v, amount) in cast.vaults.iter().zip(b.vaults) {
        set(*v, amount);
    }
    for (p, amount) in cast.peer_atas.iter().zip(b.peers) {
        set(*p, amount);
    }
}

/// Trade `j`, drawn from the seed and sized from the balances before it.
fn trade(seed: u64, j: u32, b: &Balances) -> Trade {
    let mut rng = Rng::seeded(seed, "busy-trade", &j.to_le_bytes());
    if rng.chance(SWAP_PERCENT) {
        let pool = rng.below(2) as usize;
        let sell_base = rng.below(2) == 0;
        let (base, quote) = POOL_ATAS[pool];
        let from = if sell_base { base } else { quote };
        let amount_in = (b.atas[from] / 100 * rng.range(2, 15)).max(1);
        let (num, den) = POOL_PRICES[pool];
        let noise = u128::from(rng.range(97, 103));
        let out = if sell_base {
            u128::from(amount_in) * num * noise / (den * 100)
        } else {
            u128::from(amount_in) * den * noise / (num * 100)
        };
        Trade::Swap(Swap {
            pool,
            sell_base,
            amount_in,
            amount_out: u64::try_from(out).unwrap_or(u64::MAX).max(1),
            price_micro_lamports: rng.range(1_000, 50_000),
            failed: rng.chance(FAILED_SWAP_PERCENT),
        })
    } else {
        // Fixed-size payouts (at most a tenth of the balance), so the trader's DUSD does not
        // decay geometrically over thousands of trades.
        let peer = rng.below(2) as usize;
        let amount = (rng.range(1, PAYOUT_WHOLE_MAX) * DUSD_UNITS).min(b.atas[0] / 10).max(1);
        Trade::Pay { peer, amount, memo: rng.chance(30) }
    }
}

fn apply(b: &Balances, t: &Trade) -> Balances {
    let mut next = *b;
    match *t {
        Trade::Swap(Swap { pool, sell_base, amount_in, amount_out, price_micro_lamports, failed }) => {
            let fee = swap_fee(price_micro_lamports);
            next.sol = next.sol.saturating_sub(fee);
            if !failed {
                let (base, quote) = POOL_ATAS[pool];
                let (from, to) = if sell_base { (base, quote) } else { (quote, base) };
                let (vault_in, vault_out) = if sell_base { (2 * pool, 2 * pool + 1) } else { (2 * pool + 1, 2 * pool) };
                next.atas[from] = next.atas[from].saturating_sub(amount_in);
                next.vaults[vault_in] = next.vaults[vault_in].saturating_add(amount_in);
                next.vaults[vault_out] = next.vaults[vault_out].saturating_sub(amount_out);
                next.atas[to] = next.atas[to].saturating_add(amount_out);
            }
        }
        Trade::Pay { peer, amount, .. } => {
            next.sol = next.sol.saturating_sub(crate::ledger::demo::tx::LAMPORTS_PER_SIGNATURE);
            next.atas[0] = next.atas[0].saturating_sub(amount);
            next.peers[peer] = next.peers[peer].saturating_add(amount);
        }
    }
    next
}

fn swap_fee(price_micro_lamports: u64) -> u64 {
    let limit = u64::from(SWAP_COMPUTE_UNITS);
    crate::ledger::demo::tx::LAMPORTS_PER_SIGNATURE + (limit * price_micro_lamports).div_ceil(1_000_000)
}

fn spec(cast: &Cast, slot: u64, t: &Trade) -> TxSpec {
    match *t {
        Trade::Swap(ref swap) => swap_spec(cast, slot, swap),
        Trade::Pay { peer, amount, memo } => {
            let pay = Op::TokenTransfer {
                source: ata_of(cast, 0),
                destination: cast.peer_atas[peer],
                authority: cast.busy_trader,
                amount,
                program: TokenProgram::Token,
                checked: Some(Checked { mint: cast.dusd.key, decimals: cast.dusd.decimals }),
            };
            let mut ixs = vec![Ix::new(pay)];
            if memo {
                ixs.push(Ix::new(Op::Memo(format!("payout {}", slot % 10_000))));
            }
            TxSpec::new(slot, vec![cast.busy_trader], ixs)
        }
    }
}

/// A v0 swap: compute budget, then the DEX's instruction with the two token legs as CPIs;
/// pools and vaults come from the lookup table.
fn swap_spec(cast: &Cast, slot: u64, swap: &Swap) -> TxSpec {
    let Swap { pool, sell_base, amount_in, amount_out, price_micro_lamports, failed } = *swap;
    let trader = cast.busy_trader;
    let (base, quote) = POOL_ATAS[pool];
    let (from, to) = if sell_base { (base, quote) } else { (quote, base) };
    let (base_vault, quote_vault) = (cast.vaults[2 * pool], cast.vaults[2 * pool + 1]);
    let (vault_in, vault_out) = if sell_base { (base_vault, quote_vault) } else { (quote_vault, base_vault) };
    let (ata_in, ata_out) = (ata_of(cast, from), ata_of(cast, to));
    let mut data = SWAP_DISCRIMINATOR.to_vec();
    data.extend_from_slice(&amount_in.to_le_bytes());
    data.extend_from_slice(&(amount_out / 100 * 99).to_le_bytes());
    let accounts = vec![
        (cast.pools[pool], true),
        (cast.pool_authority, false),
        (trader, true),
        (ata_in, true),
        (ata_out, true),
        (vault_in, true),
        (vault_out, true),
        (BUILTIN.token, false),
    ];
    let leg = |source, destination, authority, amount| Op::TokenTransfer {
        source,
        destination,
        authority,
        amount,
        program: TokenProgram::Token,
        checked: None,
    };
    let swap = Ix {
        op: Op::Raw { program: cast.dex.id, accounts, data, name: "Swap", moves: Vec::new() },
        inner: vec![
            (2, leg(ata_in, vault_in, trader, amount_in)),
            (2, leg(vault_out, ata_out, cast.pool_authority, amount_out)),
        ],
    };
    let ixs =
        vec![Ix::new(Op::ComputeLimit(SWAP_COMPUTE_UNITS)), Ix::new(Op::ComputePrice(price_micro_lamports)), swap];
    let mut s = TxSpec::new(slot, vec![trader], ixs);
    s.failure = failed.then_some(TxFailure { index: 2, code: SLIPPAGE_ERROR_CODE });
    let mut addresses = cast.pools.to_vec();
    addresses.push(cast.pool_authority);
    addresses.extend(cast.vaults);
    s.lookup = Some(Lookup { table: cast.lookup_table, addresses });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_increase_and_fit() {
        for seed in [0, 9, 77] {
            let setup = clock::days_ago(362);
            let s = slots(seed, setup);
            assert_eq!(s.len(), BUSY_TX_LEN as usize);
            assert!(s[0] > setup && s[s.len() - 1] < clock::AS_OF_SLOT);
            assert!(s.windows(2).all(|w| w[0] < w[1]));
        }
        // A setup later than the natural start squeezes the trades in after it.
        let late = clock::days_ago(30);
        let s = slots(1, late);
        assert!(s[0] > late && s.windows(2).all(|w| w[0] < w[1]));
    }
}
