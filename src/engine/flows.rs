//! Value flows: the wallet's SOL and token transfers, read out of its transactions' decoded
//! instructions, with the counterparty resolved to an owner where the node said who owns a
//! token account.
//!
//! Owns: `Transfer` and `transfers()`, and which funder one hop out is worth reading
//! (`hop_funder`). Used by the signal detectors and the comparison engine
//! on compute threads; pure. Invariant: one `Transfer` per instruction that moved value to or
//! from the wallet, in the view's order (newest first); instructions of failed transactions
//! moved nothing and are skipped.

use crate::engine::report::{put_token_amount, Fact, Facts};
use crate::labels::Labels;
use crate::ledger::instruction::{Instruction, InstructionKind};
use crate::ledger::model::{Transaction, WalletView};
use crate::pubkey::Pubkey;

/// Largest inbound SOL transfer treated as dust (poisoning, spam).
pub const DUST_LAMPORTS_MAX: u64 = 100_000;
/// Largest token transfer treated as dust, in base units.
pub const DUST_TOKEN_UNITS_MAX: u64 = 1_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    In,
    Out,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Asset {
    Sol,
    Token(Option<Pubkey>),
}

impl Asset {
    /// `SOL`, the mint address, or `unknown` for a plain `transfer` of an unlisted mint.
    pub fn label(&self) -> String {
        match self {
            Asset::Sol => "SOL".to_owned(),
            Asset::Token(Some(m)) => m.to_string(),
            Asset::Token(None) => "unknown".to_owned(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Transfer<'a> {
    pub tx: &'a Transaction,
    pub ix: &'a Instruction,
    pub direction: Direction,
    /// The other side: a wallet for SOL; for tokens the owner of the other token account when
    /// known, else the token account itself.
    pub counterparty: Pubkey,
    pub asset: Asset,
    pub amount: u64,
}

impl Transfer<'_> {
    /// The amount with its unit, for human text: `1000 lamports`, `5 base units of mint <m>`.
    pub fn amount_text(&self) -> String {
        match self.asset {
            Asset::Sol => format!("{} lamports", self.amount),
            Asset::Token(Some(mint)) => format!("{} base units of mint {mint}", self.amount),
            Asset::Token(None) => format!("{} base units of an unknown mint", self.amount),
        }
    }

    /// `facts` with the amount added, its key naming its unit (contract §1): `lamports` a JSON
    /// integer for SOL; for tokens `amount`, a string of base units, with its `mint` and
    /// `decimals` (read from the transaction's token balances) when known.
    pub fn amount_facts(&self, mut facts: Facts) -> Facts {
        match self.asset {
            Asset::Sol => {
                facts.insert("lamports", Fact::Unsigned(self.amount));
            }
            Asset::Token(mint) => {
                let decimals =
                    mint.and_then(|m| self.tx.token_changes.iter().find(|c| c.mint == m)).map(|c| c.decimals);
                put_token_amount(&mut facts, "amount", self.amount, mint.as_ref(), decimals);
            }
        }
        facts
    }

    pub fn is_dust(&self) -> bool {
        match self.asset {
            Asset::Sol => self.amount <= DUST_LAMPORTS_MAX,
            Asset::Token(_) => self.amount <= DUST_TOKEN_UNITS_MAX,
        }
    }
}

/// Every transfer to or from the wallet.
pub fn transfers(view: &WalletView) -> Vec<Transfer<'_>> {
    let wallet = view.address;
    let own_accounts: Vec<Pubkey> = view.token_accounts.iter().map(|t| t.address).collect();
    let mut out = Vec::new();
    for tx in view.transactions.iter().filter(|t| !t.failed()) {
        for ix in &tx.instructions {
            if let Some(t) = transfer_of(tx, ix, &wallet, &own_accounts) {
                out.push(t);
            }
        }
    }
    out
}

fn transfer_of<'a>(tx: &'a Transaction, ix: &'a Instruction, wallet: &Pubkey, own: &[Pubkey]) -> Option<Transfer<'a>> {
    let make = |direction, counterparty, asset, amount| Transfer { tx, ix, direction, counterparty, asset, amount };
    match &ix.kind {
        InstructionKind::SystemTransfer { from, to, lamports } if from == wallet && to != wallet => {
            Some(make(Direction::Out, *to, Asset::Sol, *lamports))
        }
        InstructionKind::SystemTransfer { from, to, lamports } if to == wallet && from != wallet => {
            Some(make(Direction::In, *from, Asset::Sol, *lamports))
        }
        InstructionKind::SystemCreateAccount { funder, account, lamports, .. }
            if account == wallet && funder != wallet =>
        {
            Some(make(Direction::In, *funder, Asset::Sol, *lamports))
        }
        InstructionKind::TokenTransfer { source, destination, authority, amount, mint } => {
            let owner_of = |account: &Pubkey| owner_in_tx(tx, account);
            let mint = mint.or_else(|| tx.token_changes.iter().find(|c| c.account == *source).map(|c| c.mint));
            let src_mine = authority == wallet || own.contains(source) || owner_of(source) == Some(*wallet);
            let dst_mine = own.contains(destination) || owner_of(destination) == Some(*wallet);
            match (src_mine, dst_mine) {
                (true, false) => {
                    let cp = owner_of(destination).unwrap_or(*destination);
                    Some(make(Direction::Out, cp, Asset::Token(mint), *amount))
                }
                (false, true) => {
                    let cp = owner_of(source).unwrap_or(*authority);
                    Some(make(Direction::In, cp, Asset::Token(mint), *amount))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// The owner of a token account as the transaction's token balances report it.
pub fn owner_in_tx(tx: &Transaction, account: &Pubkey) -> Option<Pubkey> {
    tx.token_changes.iter().find(|c| c.account == *account).and_then(|c| c.owner)
}

/// The wallet's first funder: the sender of the oldest inbound SOL transfer, when the history
/// is complete (otherwise the true first funder may lie beyond the depth limit).
pub fn first_funder<'a>(view: &'a WalletView, flows: &[Transfer<'a>]) -> Option<Transfer<'a>> {
    if view.coverage.history_truncated {
        return None;
    }
    flows.iter().rev().find(|t| t.direction == Direction::In && t.asset == Asset::Sol && !t.is_dust()).copied()
}

/// The address of the wallet's first funder (`first_funder`).
pub fn first_funder_address(view: &WalletView) -> Option<Pubkey> {
    first_funder(view, &transfers(view)).map(|t| t.counterparty)
}

/// The first funder whose recent history is worth reading one hop out (`ledger::view::read_hop`)
/// under `labels`: only when they list sanctioned addresses (the synthetic `demo` ones count on
/// the demo ledger only, so the builtin labels cost a live node nothing), and only a funder
/// they know nothing of — a sanctioned funder is already a direct counterparty, and a labelled
/// one (an exchange, a program) is a hub whose recent history says nothing about this wallet.
pub fn hop_funder(view: &WalletView, labels: &Labels) -> Option<Pubkey> {
    if !labels.has_sanctioned(view.coverage.synthetic) {
        return None;
    }
    // The labels' own entry, not an account's allow-list: trusting a funder must not stop the
    // search for sanctions exposure one hop out (a compliance finding no policy turns off).
    first_funder_address(view).filter(|f| labels.get_ignoring_lists(f).is_none() && *f != view.address)
}

/// True when two different addresses share their first and last `n` base58 characters: what
/// an address-poisoning attacker grinds for.
pub fn looks_alike(a: &Pubkey, b: &Pubkey, n: usize) -> bool {
    if a == b {
        return false;
    }
    let (a, b) = (a.to_string(), b.to_string());
    a.len() > 2 * n && b.len() > 2 * n && a[..n] == b[..n] && a[a.len() - n..] == b[b.len() - n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alike_needs_both_ends() {
        let a = Pubkey::parse("5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd").unwrap();
        assert!(!looks_alike(&a, &a, 4));
        let b = Pubkey::parse("EsEtxoyhFTgfvudcy2VwwQJ1qA6BScLUW39PKpYczuxF").unwrap();
        assert!(!looks_alike(&a, &b, 4));
        // Same ends, different middle: a look-alike.
        let text = a.to_string();
        let middle = if &text[20..21] == "z" { "y" } else { "z" };
        let twin = Pubkey::parse(&format!("{}{middle}{}", &text[..20], &text[21..])).unwrap();
        assert!(looks_alike(&a, &twin, 4));
        assert!(!looks_alike(&a, &twin, 22));
    }
}
