//! Value at risk: whether one transaction sweeps a wallet — moves most of its SOL, or the whole
//! balance of its tokens, to others and gives nothing back. One judgement for both readers: the
//! pre-sign scan (balances before and after the simulation) and the X-Ray (a past transaction's
//! balances as the node reports them), so a drain is named the same way before and after it
//! is signed.
//!
//! Owns: `Balance` (one account's balance of one asset, before and after), `Sweep` (what was
//! swept, to whom), `SweepThresholds`, `judge` and `outflows` (what others received of what the
//! wallet lost, sweep or not). Pure; called on listener threads (scan) and
//! compute threads (X-Ray).
//!
//! Invariant: a sweep gives the wallet nothing back. A transaction in which the wallet gains
//! any asset beyond dust (`SweepThresholds::gain_*`) is an exchange (a swap, a deposit that mints a
//! receipt token, a sale) and is never a sweep, however much it moves.
//! Invariant: a sweep has a recipient the caller does not know (`known` is false for it): a
//! wallet moving everything to a counterparty it dealt with, a labelled entity or program, or
//! to accounts of its own, is not swept.
//! Invariant: deterministic — assets and recipients are sorted; the same balances give the same
//! `Sweep`.
//! Deliberately absent: prices. Shares are of the wallet's own balance of each asset, so a
//! sweep of a worthless token counts like one of USDC; the severity rests on shares and the
//! number of assets, which need no oracle.

use std::collections::BTreeMap;

use crate::pubkey::Pubkey;

/// What is moved: SOL, or tokens of one mint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Coin {
    Sol,
    Token(Pubkey),
}

/// One account's balance of one asset before and after the transaction (lamports, or token
/// base units), and the wallet it counts for (`holder`: the token account's owner, the
/// account itself for SOL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Balance {
    pub holder: Pubkey,
    pub account: Pubkey,
    pub asset: Coin,
    pub before: u64,
    pub after: u64,
}

/// Where a sweep is drawn. Shares are in percent of the wallet's balance before. `DEFAULT`
/// unless the account's policy sets others (`sweepThresholds`, checked by
/// `engine::policy::Policy::with_sweep_thresholds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepThresholds {
    /// SOL moved to others, net of the fee, at or above this share of the wallet's SOL.
    pub sol_share_percent: u64,
    /// A token's balance moved at or above this share (99: "the whole balance", leaving dust).
    pub token_share_percent: u64,
    /// SOL the wallet may gain without it counting as something given back (the rent of token
    /// accounts it closes to itself: 0.00203928 SOL each).
    pub gain_lamports_max: u64,
    /// Token base units the wallet may gain without it counting as something given back (a
    /// drainer's dust airdrop in the same transaction).
    pub gain_token_units_max: u64,
}

impl SweepThresholds {
    pub const DEFAULT: SweepThresholds = SweepThresholds {
        sol_share_percent: 90,
        token_share_percent: 99,
        gain_lamports_max: 10_000_000,
        gain_token_units_max: crate::engine::flows::DUST_TOKEN_UNITS_MAX,
    };
}

/// One asset swept: the wallet's balance before and what left it for others.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Swept {
    pub asset: Coin,
    pub before: u64,
    pub moved: u64,
}

impl Swept {
    /// The share moved, in whole percent (rounded down).
    pub fn share_percent(&self) -> u64 {
        (u128::from(self.moved) * 100 / u128::from(self.before.max(1))).min(100) as u64
    }
}

/// What one recipient received of the swept assets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Received {
    pub recipient: Pubkey,
    pub asset: Coin,
    pub amount: u64,
}

/// A transaction that sweeps the wallet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// By asset: SOL first, then mints in address order.
    pub swept: Vec<Swept>,
    /// Every recipient of a swept asset, known or not (sorted).
    pub received: Vec<Received>,
    /// The recipients the caller does not know (sorted, one each): never empty.
    pub unknown_recipients: Vec<Pubkey>,
}

/// The wallet's before and after of each asset, and what others gained of it.
#[derive(Default)]
struct Tally {
    wallet_before: u128,
    wallet_after: u128,
    others_gained: BTreeMap<Pubkey, u128>,
}

/// What others received of the assets `wallet` lost, one entry per recipient and asset
/// (sorted): the recipients of a transfer, a swap's pool, whoever a token account was handed to.
pub fn outflows(wallet: &Pubkey, balances: &[Balance]) -> Vec<Received> {
    let mut out = Vec::new();
    for (asset, t) in tally(wallet, balances) {
        if t.wallet_after < t.wallet_before {
            out.extend(t.others_gained.into_iter().map(|(to, amount)| Received {
                recipient: to,
                asset,
                amount: clamp(amount),
            }));
        }
    }
    out.sort();
    out
}

/// Whether the balances of one transaction sweep `wallet`; `fee_lamports` is what the
/// transaction paid in fees (never counted as moved), `known` tells a recipient the wallet
/// dealt with or a labelled one.
pub fn judge(
    wallet: &Pubkey,
    balances: &[Balance],
    fee_lamports: u64,
    known: impl Fn(&Pubkey) -> bool,
    thresholds: &SweepThresholds,
) -> Option<Sweep> {
    let tallies = tally(wallet, balances);
    if gives_back(&tallies, thresholds) {
        return None;
    }
    let mut swept = Vec::new();
    let mut received = Vec::new();
    for (asset, t) in &tallies {
        let lost = t.wallet_before.saturating_sub(t.wallet_after);
        let to_others: u128 = t.others_gained.values().sum();
        let fee = if *asset == Coin::Sol { u128::from(fee_lamports) } else { 0 };
        let moved = lost.saturating_sub(fee).min(to_others);
        let share = match asset {
            Coin::Sol => thresholds.sol_share_percent,
            Coin::Token(_) => thresholds.token_share_percent,
        };
        // A share is at most the whole balance (and the product stays far inside u128).
        if moved == 0 || moved * 100 < t.wallet_before * u128::from(share.min(100)) {
            continue;
        }
        swept.push(Swept { asset: *asset, before: clamp(t.wallet_before), moved: clamp(moved) });
        received.extend(t.others_gained.iter().map(|(to, amount)| Received {
            recipient: *to,
            asset: *asset,
            amount: clamp(*amount),
        }));
    }
    received.sort();
    let mut unknown_recipients: Vec<Pubkey> =
        received.iter().map(|r| r.recipient).filter(|r| r != wallet && !known(r)).collect();
    unknown_recipients.sort();
    unknown_recipients.dedup();
    (!swept.is_empty() && !unknown_recipients.is_empty()).then_some(Sweep { swept, received, unknown_recipients })
}

fn clamp(v: u128) -> u64 {
    u64::try_from(v).unwrap_or(u64::MAX)
}

/// Per asset: the wallet's balance before and after, and each other holder's gain.
fn tally(wallet: &Pubkey, balances: &[Balance]) -> BTreeMap<Coin, Tally> {
    let mut tallies: BTreeMap<Coin, Tally> = BTreeMap::new();
    for b in balances {
        let t = tallies.entry(b.asset).or_default();
        if b.holder == *wallet {
            t.wallet_before += u128::from(b.before);
            t.wallet_after += u128::from(b.after);
        } else if b.after > b.before {
            *t.others_gained.entry(b.holder).or_default() += u128::from(b.after - b.before);
        }
    }
    tallies
}

/// True when the wallet gains any asset beyond what `thresholds` ignore: an exchange.
fn gives_back(tallies: &BTreeMap<Coin, Tally>, thresholds: &SweepThresholds) -> bool {
    tallies.iter().any(|(asset, t)| {
        let gained = t.wallet_after.saturating_sub(t.wallet_before);
        let ignored = match asset {
            Coin::Sol => thresholds.gain_lamports_max,
            Coin::Token(_) => thresholds.gain_token_units_max,
        };
        gained > u128::from(ignored)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(n: u8) -> Pubkey {
        Pubkey([n; 32])
    }

    const ME: u8 = 1;
    const MINT: u8 = 90;

    fn sol(holder: u8, before: u64, after: u64) -> Balance {
        Balance { holder: key(holder), account: key(holder), asset: Coin::Sol, before, after }
    }

    fn token(holder: u8, account: u8, before: u64, after: u64) -> Balance {
        Balance { holder: key(holder), account: key(account), asset: Coin::Token(key(MINT)), before, after }
    }

    fn judged(balances: &[Balance], known: &[u8]) -> Option<Sweep> {
        judged_at(balances, known, &SweepThresholds::DEFAULT)
    }

    fn judged_at(balances: &[Balance], known: &[u8], thresholds: &SweepThresholds) -> Option<Sweep> {
        judge(&key(ME), balances, 5_000, |k| known.iter().any(|n| key(*n) == *k), thresholds)
    }

    #[test]
    fn most_sol_and_a_whole_token_balance_to_a_stranger_is_a_sweep() {
        let sweep = judged(
            &[
                sol(ME, 10_000_000_000, 300_000_000),
                sol(7, 0, 9_699_995_000),
                token(ME, 2, 500, 0),
                token(7, 3, 0, 500),
            ],
            &[],
        )
        .unwrap();
        assert_eq!(sweep.swept.len(), 2);
        assert_eq!(sweep.swept[0].share_percent(), 96);
        assert_eq!(sweep.unknown_recipients, [key(7)]);
        assert_eq!(sweep.received.len(), 2);
    }

    #[test]
    fn sol_split_over_two_strangers_counts_whole() {
        let sweep = judged(&[sol(ME, 1_000_000, 10_000), sol(7, 0, 500_000), sol(8, 0, 485_000)], &[]).unwrap();
        assert_eq!(sweep.unknown_recipients, [key(7), key(8)]);
        assert_eq!(sweep.swept[0].moved, 985_000);
    }

    #[test]
    fn an_exchange_a_known_recipient_or_a_small_share_is_no_sweep() {
        // A swap: the whole token balance leaves, SOL comes back.
        assert_eq!(
            judged(&[token(ME, 2, 500, 0), token(7, 3, 0, 500), sol(ME, 1_000_000_000, 1_500_000_000)], &[]),
            None
        );
        // A drainer's dust airdrop in the same transaction does not make it an exchange.
        let dust = Balance { asset: Coin::Token(key(91)), ..token(ME, 4, 0, 1) };
        assert!(judged(&[token(ME, 2, 500, 0), token(7, 3, 0, 500), dust], &[]).is_some());
        // To a counterparty the wallet knows.
        assert_eq!(judged(&[token(ME, 2, 500, 0), token(7, 3, 0, 500)], &[7]), None);
        // Half of the SOL.
        assert_eq!(judged(&[sol(ME, 1_000_000, 495_000), sol(7, 0, 500_000)], &[]), None);
        // Fees alone.
        assert_eq!(judged(&[sol(ME, 10_000, 5_000)], &[]), None);
    }

    #[test]
    fn the_rent_of_closed_accounts_coming_back_is_not_a_gain() {
        let rent = 2_039_280;
        assert!(judged(&[token(ME, 2, 500, 0), token(7, 3, 0, 500), sol(ME, 1_000, 1_000 + rent)], &[]).is_some());
    }

    #[test]
    fn other_thresholds_move_where_a_sweep_is_drawn() {
        // 80 % of the SOL to a stranger: no sweep at the default 90 %, one at 75 %.
        let eighty = [sol(ME, 10_000_000_000, 1_999_995_000), sol(7, 0, 8_000_000_000)];
        assert_eq!(judged(&eighty, &[]), None);
        let lower = SweepThresholds { sol_share_percent: 75, ..SweepThresholds::DEFAULT };
        let sweep = judged_at(&eighty, &[], &lower).expect("a sweep at 75 %");
        assert_eq!((sweep.swept[0].share_percent(), sweep.unknown_recipients.as_slice()), (80, &[key(7)][..]));
        // 95 % of a token: a sweep once the token share is 95 %.
        let most = [token(ME, 2, 1_000, 50), token(7, 3, 0, 950)];
        assert_eq!(judged(&most, &[]), None);
        assert!(judged_at(&most, &[], &SweepThresholds { token_share_percent: 95, ..lower }).is_some());
        // 0.05 SOL coming back makes it an exchange at the default dust, not at 0.1 SOL.
        let back = [token(ME, 2, 500, 0), token(7, 3, 0, 500), sol(ME, 1_000_000_000, 1_050_000_000)];
        assert_eq!(judged(&back, &[]), None);
        let dusty = SweepThresholds { gain_lamports_max: 100_000_000, ..SweepThresholds::DEFAULT };
        assert!(judged_at(&back, &[], &dusty).is_some());
        // 2,000 units of another token coming back: an exchange, unless 2,000 units are dust.
        let airdrop = Balance { asset: Coin::Token(key(91)), ..token(ME, 4, 0, 2_000) };
        let with_airdrop = [token(ME, 2, 500, 0), token(7, 3, 0, 500), airdrop];
        assert!(judged(&with_airdrop, &[]).is_none());
        assert!(judged_at(&with_airdrop, &[], &SweepThresholds { gain_token_units_max: 2_000, ..dusty }).is_some());
    }
}
