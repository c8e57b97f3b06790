//! Value at risk in a scan: the balances the sweep judgement (`engine::sweep`) reads, from the
//! simulation's states when it ran, else from the decoded instructions applied to the accounts
//! as they are before.
//!
//! Owns: `from_states` (the diff of the accounts before and after) and `from_decoded` (the
//! decoded transfers and closings applied to the accounts before: only for a transaction whose
//! every instruction the service decodes). Pure; called on listener threads.
//!
//! Invariant: a balance's holder is the wallet it counts for — the signer for every account of
//! its own (`AccountSnapshot::belongs_to`), a token account's owner, a nonce account's
//! authority, a stake account's withdrawer, else the account itself;
//! an account handed to another holder is its old holder's loss and its new holder's gain.
//! Deliberately absent: guesses. A transaction with an instruction the service does not decode
//! and no simulation gives no balances (what it moves only execution tells).

use std::collections::BTreeMap;

use super::state::{AccountSnapshot, Held, States};
use crate::engine::sweep::{Balance, Coin};
use crate::ledger::instruction::{InstructionKind as K, Program};
use crate::ledger::transaction::Decoded;
use crate::pubkey::Pubkey;

/// The wallet an account's lamports count for.
fn sol_holder(address: &Pubkey, state: &AccountSnapshot, signer: &Pubkey) -> Pubkey {
    match &state.held {
        _ if state.belongs_to(address, signer) => *signer,
        Held::Token(t) => t.owner,
        Held::Nonce(n) => n.authority,
        Held::Stake(s) => s.withdrawer,
        Held::Mint(_) | Held::Plain => *address,
    }
}

/// Every account's SOL and token balance before and after, by holder.
pub fn from_states(signer: &Pubkey, pre: &States, post: &States) -> Vec<Balance> {
    let mut out = Vec::new();
    let mut addresses: Vec<&Pubkey> = pre.keys().chain(post.keys()).collect();
    addresses.sort_unstable();
    addresses.dedup();
    for address in addresses {
        let (before, after) = (pre.get(address), post.get(address));
        let sol = |s: Option<&AccountSnapshot>| s.map(|s| (sol_holder(address, s, signer), s.lamports));
        push(&mut out, *address, Coin::Sol, sol(before), sol(after));
        let token = |s: Option<&AccountSnapshot>| match s.map(|s| &s.held) {
            Some(Held::Token(t)) => Some((t.owner, Coin::Token(t.mint), t.amount)),
            _ => None,
        };
        let (tb, ta) = (token(before), token(after));
        if let Some(asset) = tb.or(ta).map(|(_, asset, _)| asset) {
            let side =
                |t: Option<(Pubkey, Coin, u64)>| t.filter(|t| t.1 == asset).map(|(owner, _, amount)| (owner, amount));
            push(&mut out, *address, asset, side(tb), side(ta));
        }
    }
    out
}

/// One account's balance of `asset`: one entry when its holder stays, else the old holder's
/// loss and the new one's gain.
fn push(
    out: &mut Vec<Balance>,
    account: Pubkey,
    asset: Coin,
    before: Option<(Pubkey, u64)>,
    after: Option<(Pubkey, u64)>,
) {
    match (before, after) {
        (Some((hb, b)), Some((ha, a))) if hb == ha => {
            out.push(Balance { holder: hb, account, asset, before: b, after: a })
        }
        (before, after) => {
            if let Some((holder, b)) = before {
                out.push(Balance { holder, account, asset, before: b, after: 0 });
            }
            if let Some((holder, a)) = after {
                out.push(Balance { holder, account, asset, before: 0, after: a });
            }
        }
    }
}

/// The balances a transaction of decoded instructions only would leave, from the accounts
/// before: SOL transfers, token transfers and closings applied in order. `None` when an
/// instruction is one the service does not decode (its effect is unknown without execution).
pub fn from_decoded(tx: &Decoded, signer: &Pubkey, pre: &States) -> Option<Vec<Balance>> {
    if tx.instructions.iter().any(|ix| ix.program == Program::Other) {
        return None;
    }
    // (account, asset) → (holder, before, after)
    let mut book: BTreeMap<(Pubkey, Coin), (Pubkey, u64, u64)> = BTreeMap::new();
    for balance in from_states(signer, pre, pre) {
        book.insert((balance.account, balance.asset), (balance.holder, balance.before, balance.before));
    }
    let mut moved = |from: &Pubkey, to: &Pubkey, asset: Coin, amount: u64, to_holder: Pubkey| {
        if let Some(entry) = book.get_mut(&(*from, asset)) {
            entry.2 = entry.2.saturating_sub(amount);
        }
        let entry = book.entry((*to, asset)).or_insert((to_holder, 0, 0));
        entry.2 = entry.2.saturating_add(amount);
    };
    for ix in &tx.instructions {
        match &ix.kind {
            K::SystemTransfer { from, to, lamports } => moved(from, to, Coin::Sol, *lamports, *to),
            K::TokenTransfer { source, destination, amount, .. } => {
                let Some(Held::Token(t)) = pre.get(source).map(|s| &s.held) else { continue };
                let holder = match pre.get(destination).map(|s| &s.held) {
                    Some(Held::Token(d)) => d.owner,
                    _ => *destination,
                };
                moved(source, destination, Coin::Token(t.mint), *amount, holder);
            }
            K::TokenCloseAccount { account, destination, .. } => {
                let lamports = pre.get(account).map_or(0, |s| s.lamports);
                moved(account, destination, Coin::Sol, lamports, *destination);
            }
            _ => {}
        }
    }
    Some(
        book.into_iter()
            .map(|((account, asset), (holder, before, after))| Balance { holder, account, asset, before, after })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::state::fixtures::{key, token, wallet, TOKEN_RENT_LAMPORTS};

    #[test]
    fn a_token_account_handed_away_is_a_loss_and_a_gain_of_its_tokens_and_its_rent() {
        let pre: States = [(key(1), wallet(1_000)), (key(2), token(2, 1, 500, None))].into();
        let post: States = [(key(1), wallet(1_000)), (key(2), token(2, 9, 500, None))].into();
        let balances = from_states(&key(1), &pre, &post);
        let of = |holder: u8, asset: Coin| {
            balances
                .iter()
                .filter(|b| b.holder == key(holder) && b.asset == asset)
                .map(|b| (b.before, b.after))
                .collect::<Vec<_>>()
        };
        assert_eq!(of(1, Coin::Token(key(90))), [(500, 0)]);
        assert_eq!(of(9, Coin::Token(key(90))), [(0, 500)]);
        assert_eq!(of(9, Coin::Sol), [(0, TOKEN_RENT_LAMPORTS)]);
        assert_eq!(of(1, Coin::Sol), [(1_000, 1_000), (TOKEN_RENT_LAMPORTS, 0)]);
    }
}
