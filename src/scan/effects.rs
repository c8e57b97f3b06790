//! A signer's effects: what a transaction changes for the wallet that signs it, from the
//! account states before and after it (`state::States`).
//!
//! Owns: `Effect` (each kind serialized as the answer's `effects[]` item) and `effects` (the
//! diff). Pure; called on listener threads.
//!
//! Invariant: the diff is of states, not of instructions: whatever the runtime did (CPIs
//! included) is in it, and nothing the instructions only claim. An account is the signer's
//! when it is in either state (`AccountSnapshot::belongs_to`); its token holdings are what the
//! signer owns before against what it owns after, so a token account given away counts as
//! its whole balance lost.
//! Invariant: the order is fixed — by kind (the enum's order), then by address as text — so
//! the same states give byte-identical effects. Checked against LiteSVM (tests/litesvm).
//! Deliberately absent: lamports of accounts other than the signer's own address (a nonce or
//! stake account's balance is not spendable SOL; its creation or closing is listed).

use std::collections::BTreeMap;

use serde::Serialize;

use super::state::{AccountSnapshot, Held, States};
use crate::engine::sweep::{self, Balance, Coin};
use crate::pubkey::Pubkey;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Effect {
    /// The signer's own SOL balance, fee included.
    Sol {
        account: Pubkey,
        delta_lamports: i128,
    },
    /// Tokens of one mint the signer owns, summed over its token accounts (a string: the sum of
    /// u64 amounts does not fit a JSON number).
    Token {
        mint: Pubkey,
        program: &'static str,
        delta: String,
        decimals: u8,
    },
    /// SOL the signer lost that `to` received (one per recipient: a transfer's recipient, the
    /// account a closing's rent went to, the new holder of an account handed away).
    SolSent {
        to: Pubkey,
        lamports: u64,
    },
    /// Tokens of `mint` the signer lost that `to` received (a recipient, a swap's pool, the
    /// new owner of a token account handed away): base units, with the mint's decimals.
    TokenSent {
        to: Pubkey,
        mint: Pubkey,
        amount: String,
        decimals: u8,
    },
    AccountCreated {
        account: Pubkey,
        owner: Pubkey,
        lamports: u64,
    },
    AccountClosed {
        account: Pubkey,
        lamports: u64,
    },
    /// The program owning one of the signer's accounts changed (System `assign`).
    AccountOwnerChange {
        account: Pubkey,
        from: Pubkey,
        to: Pubkey,
    },
    TokenOwnerChange {
        account: Pubkey,
        mint: Pubkey,
        from: Pubkey,
        to: Pubkey,
    },
    /// `amount`: what the delegate may move after (base units; `decimals` the account's).
    TokenDelegateChange {
        account: Pubkey,
        mint: Pubkey,
        from: Option<Pubkey>,
        to: Option<Pubkey>,
        amount: String,
        decimals: u8,
    },
    TokenCloseAuthorityChange {
        account: Pubkey,
        mint: Pubkey,
        from: Option<Pubkey>,
        to: Option<Pubkey>,
    },
    NonceAuthorityChange {
        account: Pubkey,
        from: Pubkey,
        to: Pubkey,
    },
    StakeAuthorityChange {
        account: Pubkey,
        role: &'static str,
        from: Pubkey,
        to: Pubkey,
    },
}

impl Effect {
    /// Position of the kind in the answer's order.
    fn rank(&self) -> u8 {
        match self {
            Effect::Sol { .. } => 0,
            Effect::Token { .. } => 1,
            Effect::SolSent { .. } => 2,
            Effect::TokenSent { .. } => 3,
            Effect::AccountCreated { .. } => 4,
            Effect::AccountClosed { .. } => 5,
            Effect::AccountOwnerChange { .. } => 6,
            Effect::TokenOwnerChange { .. } => 7,
            Effect::TokenDelegateChange { .. } => 8,
            Effect::TokenCloseAuthorityChange { .. } => 9,
            Effect::NonceAuthorityChange { .. } => 10,
            Effect::StakeAuthorityChange { .. } => 11,
        }
    }

    /// The address it is sorted by within its kind (the mint for token holdings, the
    /// recipient for what was sent; then the mint, by `minor`).
    fn address(&self) -> &Pubkey {
        match self {
            Effect::Token { mint, .. } => mint,
            Effect::SolSent { to, .. } | Effect::TokenSent { to, .. } => to,
            Effect::Sol { account, .. }
            | Effect::AccountCreated { account, .. }
            | Effect::AccountClosed { account, .. }
            | Effect::AccountOwnerChange { account, .. }
            | Effect::TokenOwnerChange { account, .. }
            | Effect::TokenDelegateChange { account, .. }
            | Effect::TokenCloseAuthorityChange { account, .. }
            | Effect::NonceAuthorityChange { account, .. }
            | Effect::StakeAuthorityChange { account, .. } => account,
        }
    }

    /// The second key within a kind: the mint of tokens sent.
    fn minor(&self) -> Option<&Pubkey> {
        match self {
            Effect::TokenSent { mint, .. } => Some(mint),
            _ => None,
        }
    }
}

/// One effect per recipient and asset of what the signer lost (`sweep::outflows`). A token
/// the signer lost was in one of its token accounts, so the states name its decimals; were
/// they ever not to, the effect is left out rather than given decimals it does not have.
fn sent(signer: &Pubkey, balances: &[Balance], states: [&States; 2], out: &mut Vec<Effect>) {
    for received in sweep::outflows(signer, balances) {
        let effect = match received.asset {
            Coin::Sol => Some(Effect::SolSent { to: received.recipient, lamports: received.amount }),
            Coin::Token(mint) => decimals_of(&mint, states).map(|decimals| Effect::TokenSent {
                to: received.recipient,
                mint,
                amount: received.amount.to_string(),
                decimals,
            }),
        };
        out.extend(effect);
    }
}

/// The decimals of `mint` as the states hold it: a token account of it, or the mint itself.
fn decimals_of(mint: &Pubkey, states: [&States; 2]) -> Option<u8> {
    states.into_iter().flat_map(|s| s.values()).find_map(|state| match &state.held {
        Held::Token(t) if t.mint == *mint => Some(t.decimals),
        Held::Mint(m) if m.address == *mint => Some(m.decimals),
        _ => None,
    })
}

/// `signer`'s effects of going from `pre` to `post`; `balances` are the same states' balances
/// (`value::from_states`), for what others received.
pub fn effects(signer: &Pubkey, pre: &States, post: &States, balances: &[Balance]) -> Vec<Effect> {
    let mut out = Vec::new();
    let lamports = |states: &States| states.get(signer).map_or(0, |a| a.lamports);
    let delta = i128::from(lamports(post)) - i128::from(lamports(pre));
    if delta != 0 {
        out.push(Effect::Sol { account: *signer, delta_lamports: delta });
    }
    token_holdings(signer, pre, post, &mut out);
    sent(signer, balances, [pre, post], &mut out);
    let mut touched: Vec<&Pubkey> = pre.keys().chain(post.keys()).collect();
    touched.sort_unstable();
    touched.dedup();
    for address in touched {
        let (before, after) = (pre.get(address), post.get(address));
        let mine = |state: Option<&AccountSnapshot>| state.is_some_and(|s| s.belongs_to(address, signer));
        if !mine(before) && !mine(after) {
            continue;
        }
        match (before, after) {
            (None, Some(a)) => {
                out.push(Effect::AccountCreated { account: *address, owner: a.owner, lamports: a.lamports })
            }
            (Some(b), None) => out.push(Effect::AccountClosed { account: *address, lamports: b.lamports }),
            (Some(b), Some(a)) => changes(*address, b, a, &mut out),
            (None, None) => {}
        }
    }
    // Stable: two stake authority changes of one account keep staker before withdrawer.
    out.sort_by_cached_key(|e| (e.rank(), e.address().to_string(), e.minor().map(Pubkey::to_string)));
    out
}

/// Per mint: what the signer owns after, less what it owned before.
fn token_holdings(signer: &Pubkey, pre: &States, post: &States, out: &mut Vec<Effect>) {
    // mint → (program, decimals, before, after)
    let mut by_mint: BTreeMap<Pubkey, (&'static str, u8, u128, u128)> = BTreeMap::new();
    for (states, after) in [(pre, false), (post, true)] {
        for state in states.values() {
            let Held::Token(t) = &state.held else { continue };
            if t.owner != *signer {
                continue;
            }
            let entry = by_mint.entry(t.mint).or_insert((t.program.name(), t.decimals, 0, 0));
            let side = if after { &mut entry.3 } else { &mut entry.2 };
            *side += u128::from(t.amount);
        }
    }
    for (mint, (program, decimals, before, after)) in by_mint {
        if before != after {
            let delta = i128::try_from(after).unwrap_or(i128::MAX) - i128::try_from(before).unwrap_or(i128::MAX);
            out.push(Effect::Token { mint, program, delta: delta.to_string(), decimals });
        }
    }
}

/// What changed in one of the signer's accounts that exists before and after.
fn changes(account: Pubkey, before: &AccountSnapshot, after: &AccountSnapshot, out: &mut Vec<Effect>) {
    if before.owner != after.owner {
        out.push(Effect::AccountOwnerChange { account, from: before.owner, to: after.owner });
    }
    match (&before.held, &after.held) {
        (Held::Token(b), Held::Token(a)) => {
            if b.owner != a.owner {
                out.push(Effect::TokenOwnerChange { account, mint: a.mint, from: b.owner, to: a.owner });
            }
            if b.delegate != a.delegate || b.delegated_amount != a.delegated_amount {
                out.push(Effect::TokenDelegateChange {
                    account,
                    mint: a.mint,
                    from: b.delegate,
                    to: a.delegate,
                    amount: a.delegated_amount.to_string(),
                    decimals: a.decimals,
                });
            }
            if b.close_authority != a.close_authority {
                out.push(Effect::TokenCloseAuthorityChange {
                    account,
                    mint: a.mint,
                    from: b.close_authority,
                    to: a.close_authority,
                });
            }
        }
        (Held::Nonce(b), Held::Nonce(a)) if b.authority != a.authority => {
            out.push(Effect::NonceAuthorityChange { account, from: b.authority, to: a.authority });
        }
        (Held::Stake(b), Held::Stake(a)) => {
            if b.staker != a.staker {
                out.push(Effect::StakeAuthorityChange { account, role: "staker", from: b.staker, to: a.staker });
            }
            if b.withdrawer != a.withdrawer {
                out.push(Effect::StakeAuthorityChange {
                    account,
                    role: "withdrawer",
                    from: b.withdrawer,
                    to: a.withdrawer,
                });
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::model::{NonceAccount, StakeAccount};
    use crate::scan::state::fixtures::{key, token, wallet};

    const ME: u8 = 1;

    fn states(list: Vec<(u8, AccountSnapshot)>) -> States {
        list.into_iter().map(|(k, s)| (key(k), s)).collect()
    }

    #[test]
    fn a_token_account_given_away_is_its_whole_balance_lost() {
        let pre = states(vec![(ME, wallet(10_000)), (2, token(2, ME, 500, None))]);
        let post = states(vec![(ME, wallet(5_000)), (2, token(2, 9, 500, None))]);
        let got = effects(&key(ME), &pre, &post, &crate::scan::value::from_states(&key(ME), &pre, &post));
        assert_eq!(
            got,
            [
                Effect::Sol { account: key(ME), delta_lamports: -5_000 },
                Effect::Token { mint: key(90), program: "spl-token", delta: "-500".into(), decimals: 6 },
                Effect::SolSent { to: key(9), lamports: 2_039_280 },
                Effect::TokenSent { to: key(9), mint: key(90), amount: "500".into(), decimals: 6 },
                Effect::TokenOwnerChange { account: key(2), mint: key(90), from: key(ME), to: key(9) },
            ]
        );
    }

    #[test]
    fn approvals_closings_creations_and_authorities_are_listed_in_a_fixed_order() {
        let nonce = |authority: u8| AccountSnapshot {
            lamports: 1_447_680,
            owner: Pubkey::default(),
            held: Held::Nonce(NonceAccount { address: key(4), authority: key(authority), lamports: 1_447_680 }),
        };
        let stake = |staker: u8, withdrawer: u8| AccountSnapshot {
            lamports: 5_000_000_000,
            owner: key(81),
            held: Held::Stake(StakeAccount {
                address: key(5),
                staker: key(staker),
                withdrawer: key(withdrawer),
                custodian: None,
                lamports: 5_000_000_000,
                voter: None,
            }),
        };
        let pre = states(vec![
            (ME, wallet(10_000)),
            (2, token(2, ME, 0, None)),
            (3, token(3, ME, 7, None)),
            (4, nonce(ME)),
            (5, stake(ME, ME)),
        ]);
        let post = states(vec![
            (ME, wallet(10_000)),
            (3, token(3, ME, 7, Some(8))),
            (4, nonce(9)),
            (5, stake(9, 9)),
            (6, token(6, ME, 0, None)),
        ]);
        let kinds: Vec<&str> = effects(&key(ME), &pre, &post, &crate::scan::value::from_states(&key(ME), &pre, &post))
            .iter()
            .map(|e| match e {
                Effect::AccountCreated { .. } => "created",
                Effect::AccountClosed { .. } => "closed",
                Effect::TokenDelegateChange { .. } => "delegate",
                Effect::NonceAuthorityChange { .. } => "nonce",
                Effect::StakeAuthorityChange { role, .. } => role,
                Effect::SolSent { .. } => "sol_sent",
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        // The nonce and the stake handed to key 9 are SOL sent to it (their rent and stake).
        assert_eq!(kinds, ["sol_sent", "created", "closed", "delegate", "nonce", "staker", "withdrawer"]);
    }

    #[test]
    fn accounts_of_others_and_unchanged_ones_give_nothing() {
        let pre = states(vec![(ME, wallet(1)), (2, token(2, 9, 50, None))]);
        let post = states(vec![(ME, wallet(1)), (2, token(2, 9, 10, Some(ME)))]);
        assert_eq!(effects(&key(ME), &pre, &post, &crate::scan::value::from_states(&key(ME), &pre, &post)), []);
    }
}
