//! Account states a scan compares: what an account holds before the transaction (the ledger's
//! `getMultipleAccounts`) and after it (the simulation's post-state), read from the one wire
//! format every source answers in (jsonParsed `UiAccount`) with the ledger model's readers.
//!
//! Owns: `AccountSnapshot`, `Held` and `States` (accounts by address). Pure; called on listener
//! threads.
//!
//! Invariant: an account with 0 lamports does not exist (a closed account is reported by a
//! node as 0 lamports, by the runtime as gone): `read` gives `None` for both.
//! Deliberately absent: decoding account bytes (every source answers jsonParsed).

use std::collections::BTreeMap;

use crate::ledger::model::{MintInfo, NonceAccount, StakeAccount, TokenAccount};
use crate::ledger::wire::UiAccount;
use crate::pubkey::Pubkey;

/// What an account is, as far as a signer's effects go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Held {
    Token(TokenAccount),
    Mint(MintInfo),
    Nonce(NonceAccount),
    Stake(StakeAccount),
    /// A wallet, or data the scan does not read.
    Plain,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountSnapshot {
    pub lamports: u64,
    /// The program that owns it.
    pub owner: Pubkey,
    pub held: Held,
}

/// Existing accounts by address; an address absent here does not exist.
pub type States = BTreeMap<Pubkey, AccountSnapshot>;

/// `account` at `address`, or `None` when it does not exist; `Err` when its owner is not an
/// address (the source is not speaking Solana).
pub fn read(address: Pubkey, account: Option<&UiAccount>) -> Result<Option<AccountSnapshot>, String> {
    let Some(account) = account.filter(|a| a.lamports > 0) else { return Ok(None) };
    let owner =
        Pubkey::parse(&account.owner).map_err(|_| format!("account {address} has owner {:?}", account.owner))?;
    let held = if let Some(t) = TokenAccount::from_wire(address, account) {
        Held::Token(t)
    } else if let Some(m) = MintInfo::from_wire(address, account) {
        Held::Mint(m)
    } else if let Some(n) = NonceAccount::from_wire(address, account) {
        Held::Nonce(n)
    } else if let Some(s) = StakeAccount::from_wire(address, account) {
        Held::Stake(s)
    } else {
        Held::Plain
    };
    Ok(Some(AccountSnapshot { lamports: account.lamports, owner, held }))
}

/// The states of `addresses` from a source's answer (`accounts[i]` for `addresses[i]`).
pub fn read_all(addresses: &[Pubkey], accounts: &[Option<UiAccount>]) -> Result<States, String> {
    if accounts.len() != addresses.len() {
        return Err(format!("{} accounts answered for {} addresses", accounts.len(), addresses.len()));
    }
    let mut states = States::new();
    for (address, account) in addresses.iter().zip(accounts) {
        if let Some(state) = read(*address, account.as_ref())? {
            states.insert(*address, state);
        }
    }
    Ok(states)
}

impl AccountSnapshot {
    /// True when this account is `signer`'s: its own address, or a token account it owns, a
    /// nonce account it is the authority of, a stake account it stakes or withdraws.
    pub fn belongs_to(&self, address: &Pubkey, signer: &Pubkey) -> bool {
        address == signer
            || match &self.held {
                Held::Token(t) => t.owner == *signer,
                Held::Nonce(n) => n.authority == *signer,
                Held::Stake(s) => s.staker == *signer || s.withdrawer == *signer,
                Held::Mint(_) | Held::Plain => false,
            }
    }
}

/// Account states for the scan's tests: a wallet and a token account of mint `key(90)`.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::ledger::model::{TokenAccountState, TokenProgram};

    /// Rent of a 165-byte token account.
    pub const TOKEN_RENT_LAMPORTS: u64 = 2_039_280;

    pub fn key(n: u8) -> Pubkey {
        Pubkey([n; 32])
    }

    pub fn wallet(lamports: u64) -> AccountSnapshot {
        AccountSnapshot { lamports, owner: Pubkey::default(), held: Held::Plain }
    }

    /// A token account of mint `key(90)` (6 decimals), with an unlimited delegate if any.
    pub fn token(address: u8, owner: u8, amount: u64, delegate: Option<u8>) -> AccountSnapshot {
        let t = TokenAccount {
            address: key(address),
            mint: key(90),
            owner: key(owner),
            program: TokenProgram::Token,
            amount,
            decimals: 6,
            delegate: delegate.map(key),
            delegated_amount: if delegate.is_some() { u64::MAX } else { 0 },
            close_authority: None,
            state: TokenAccountState::Initialized,
            is_native: false,
            lamports: TOKEN_RENT_LAMPORTS,
            extensions: Vec::new(),
        };
        AccountSnapshot { lamports: TOKEN_RENT_LAMPORTS, owner: key(80), held: Held::Token(t) }
    }
}
