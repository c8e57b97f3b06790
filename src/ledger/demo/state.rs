//! Account state of the demo ledger: what an account holds now (or before a transaction).
//!
//! Owns: `Acct` and the kinds of data the demo's accounts carry (token accounts, mints with
//! Token-2022 extensions, nonce and stake accounts, programs, lookup tables, raw bytes),
//! their sizes and rent. Called from the demo ledger's thread; plain data.
//!
//! Invariant: sizes and rent follow the real programs' layouts (token account 165 bytes,
//! mint 82, nonce 80, stake 200, Token-2022 extensions after a 165-byte base and one account
//! type byte), so lamports and `space` look like a node's. Deliberately absent: the byte
//! layouts themselves (the demo emits jsonParsed data, never account bytes, except for
//! `Bytes` accounts of programs no node parses).

use std::collections::BTreeMap;

use crate::ledger::demo::keys::BUILTIN;
use crate::ledger::model::TokenProgram;
use crate::pubkey::Pubkey;

/// Accounts by address; ordered, so that every walk over it is deterministic.
pub type State = BTreeMap<Pubkey, Acct>;

pub const TOKEN_ACCOUNT_LEN: u64 = 165;
pub const MINT_LEN: u64 = 82;
pub const NONCE_LEN: u64 = 80;
pub const STAKE_LEN: u64 = 200;
pub const PROGRAM_LEN: u64 = 36;
const LOOKUP_TABLE_HEADER_LEN: u64 = 56;
/// Token-2022 extensions start after the 165-byte base account and one account-type byte,
/// each with a 2-byte type and a 2-byte length.
const TOKEN_2022_BASE_LEN: u64 = TOKEN_ACCOUNT_LEN + 1;
const EXTENSION_HEADER_LEN: u64 = 4;
/// Rent-exempt minimum per byte-year times two years, and the 128-byte account overhead.
const RENT_LAMPORTS_PER_BYTE: u64 = 6_960;
const ACCOUNT_OVERHEAD_LEN: u64 = 128;

/// Lamports an account of `space` bytes needs to be rent-exempt.
pub fn rent(space: u64) -> u64 {
    (ACCOUNT_OVERHEAD_LEN + space) * RENT_LAMPORTS_PER_BYTE
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acct {
    pub lamports: u64,
    pub owner: Pubkey,
    pub data: Data,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Data {
    /// No data: a wallet (System-owned) or an assigned wallet (owned by a program).
    Empty,
    /// Created by `createAccount` and not yet initialized by its owner program.
    Uninitialized {
        space: u64,
    },
    Token(TokenAcct),
    Mint(MintAcct),
    Nonce {
        authority: Pubkey,
        blockhash: Pubkey,
    },
    Stake(StakeAcct),
    /// An upgradeable-loader program account pointing at its program data.
    Program {
        program_data: Pubkey,
    },
    LookupTable {
        authority: Pubkey,
        addresses: Vec<Pubkey>,
    },
    /// Data of a program no node parses, emitted as base64.
    Bytes(Vec<u8>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenAcct {
    pub mint: Pubkey,
    pub owner: Pubkey,
    pub amount: u64,
    pub decimals: u8,
    pub delegate: Option<Pubkey>,
    pub delegated_amount: u64,
    pub close_authority: Option<Pubkey>,
    /// Token-2022 account of a mint with a transfer hook (`transferHookAccount` extension).
    pub hook_account: bool,
}

impl TokenAcct {
    pub fn new(mint: Pubkey, owner: Pubkey, decimals: u8) -> TokenAcct {
        TokenAcct {
            mint,
            owner,
            amount: 0,
            decimals,
            delegate: None,
            delegated_amount: 0,
            close_authority: None,
            hook_account: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MintExt {
    PermanentDelegate(Pubkey),
    TransferHook { authority: Pubkey, program: Pubkey },
}

impl MintExt {
    fn len(&self) -> u64 {
        match self {
            MintExt::PermanentDelegate(_) => 32,
            MintExt::TransferHook { .. } => 64,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MintAcct {
    pub decimals: u8,
    pub supply: u64,
    pub mint_authority: Option<Pubkey>,
    pub freeze_authority: Option<Pubkey>,
    pub extensions: Vec<MintExt>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delegation {
    pub voter: Pubkey,
    pub stake: u64,
    pub activation_epoch: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StakeAcct {
    pub staker: Pubkey,
    pub withdrawer: Pubkey,
    pub delegation: Option<Delegation>,
    pub credits_observed: u64,
}

/// The token program that owns an account, if `owner` is one.
pub fn token_program_of(owner: &Pubkey) -> Option<TokenProgram> {
    if *owner == BUILTIN.token {
        Some(TokenProgram::Token)
    } else if *owner == BUILTIN.token_2022 {
        Some(TokenProgram::Token2022)
    } else {
        None
    }
}

impl Acct {
    pub fn space(&self) -> u64 {
        let token_2022 = token_program_of(&self.owner) == Some(TokenProgram::Token2022);
        match &self.data {
            Data::Empty => 0,
            Data::Uninitialized { space } => *space,
            Data::Token(t) if token_2022 => {
                // immutableOwner (no payload), then transferHookAccount (one flag byte).
                let hook = if t.hook_account { EXTENSION_HEADER_LEN + 1 } else { 0 };
                TOKEN_2022_BASE_LEN + EXTENSION_HEADER_LEN + hook
            }
            Data::Token(_) => TOKEN_ACCOUNT_LEN,
            Data::Mint(m) if token_2022 => {
                TOKEN_2022_BASE_LEN + m.extensions.iter().map(|e| EXTENSION_HEADER_LEN + e.len()).sum::<u64>()
            }
            Data::Mint(_) => MINT_LEN,
            Data::Nonce { .. } => NONCE_LEN,
            Data::Stake(_) => STAKE_LEN,
            Data::Program { .. } => PROGRAM_LEN,
            Data::LookupTable { addresses, .. } => LOOKUP_TABLE_HEADER_LEN + 32 * addresses.len() as u64,
            Data::Bytes(b) => b.len() as u64,
        }
    }

    pub fn token(&self) -> Option<&TokenAcct> {
        match &self.data {
            Data::Token(t) => Some(t),
            _ => None,
        }
    }

    pub fn token_mut(&mut self) -> Option<&mut TokenAcct> {
        match &mut self.data {
            Data::Token(t) => Some(t),
            _ => None,
        }
    }

    /// A System-owned wallet with no data.
    pub fn wallet(lamports: u64) -> Acct {
        Acct { lamports, owner: Pubkey::default(), data: Data::Empty }
    }

    /// A rent-exempt token account under `program`.
    pub fn token_account(program: TokenProgram, t: TokenAcct) -> Acct {
        let owner = BUILTIN.token_program(program);
        let mut a = Acct { lamports: 0, owner, data: Data::Token(t) };
        a.lamports = rent(a.space());
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rent_matches_mainnet_minimums() {
        assert_eq!(rent(TOKEN_ACCOUNT_LEN), 2_039_280);
        assert_eq!(rent(MINT_LEN), 1_461_600);
        assert_eq!(rent(NONCE_LEN), 1_447_680);
        assert_eq!(rent(STAKE_LEN), 2_282_880);
        assert_eq!(rent(0), 890_880);
    }

    #[test]
    fn token_2022_sizes_count_extensions() {
        let t = TokenAcct::new(Pubkey::default(), Pubkey::default(), 6);
        assert_eq!(Acct::token_account(TokenProgram::Token, t.clone()).space(), 165);
        assert_eq!(Acct::token_account(TokenProgram::Token2022, t.clone()).space(), 170);
        let hooked = TokenAcct { hook_account: true, ..t };
        assert_eq!(Acct::token_account(TokenProgram::Token2022, hooked).space(), 175);
    }
}
