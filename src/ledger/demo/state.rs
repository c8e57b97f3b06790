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
    /// The Token-2022 account extensions its mint's extensions require.
    pub exts: AccountExts,
    /// Transfer fees withheld in the account (`transferFeeAmount`; only with `exts.fee`).
    pub withheld: u64,
    /// Frozen by the mint's freeze authority (a default-frozen mint's accounts start so).
    pub frozen: bool,
}

/// The extensions a Token-2022 token account carries because of its mint's: a transfer hook's
/// `transferHookAccount`, a transfer fee's `transferFeeAmount`, a non-transferable mint's
/// `nonTransferableAccount` (every Token-2022 account here also has `immutableOwner`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AccountExts {
    pub hook: bool,
    pub fee: bool,
    pub non_transferable: bool,
}

impl AccountExts {
    /// What accounts of a mint with `extensions` carry.
    pub fn of(extensions: &[MintExt]) -> AccountExts {
        let has = |f: fn(&MintExt) -> bool| extensions.iter().any(f);
        AccountExts {
            hook: has(|e| matches!(e, MintExt::TransferHook { .. })),
            fee: has(|e| matches!(e, MintExt::TransferFee { .. })),
            non_transferable: has(|e| matches!(e, MintExt::NonTransferable)),
        }
    }

    /// Their names, as `getAccountDataSize` lists them.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        let all = [
            (self.hook, "transferHookAccount"),
            (self.fee, "transferFeeAmount"),
            (self.non_transferable, "nonTransferableAccount"),
        ];
        all.into_iter().filter(|(on, _)| *on).map(|(_, name)| name)
    }

    /// Bytes these extensions add, each with its 4-byte header.
    fn len(self) -> u64 {
        let one = |on: bool, payload: u64| if on { EXTENSION_HEADER_LEN + payload } else { 0 };
        one(self.hook, 1) + one(self.fee, 8) + one(self.non_transferable, 0)
    }
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
            exts: AccountExts::default(),
            withheld: 0,
            frozen: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MintExt {
    PermanentDelegate(Pubkey),
    TransferHook {
        authority: Pubkey,
        program: Pubkey,
    },
    /// One fee in force since `epoch` (older and newer alike); `authority` may change it and
    /// withdraw what is withheld.
    TransferFee {
        authority: Pubkey,
        basis_points: u16,
        maximum_fee: u64,
        epoch: u64,
    },
    NonTransferable,
    /// `defaultAccountState` frozen: new accounts start frozen until the freeze authority thaws.
    DefaultFrozen,
    CloseAuthority(Pubkey),
}

impl MintExt {
    fn len(&self) -> u64 {
        match self {
            MintExt::PermanentDelegate(_) | MintExt::CloseAuthority(_) => 32,
            MintExt::TransferHook { .. } => 64,
            // Two authorities, the withheld amount, two fees of (epoch, maximum, basis points).
            MintExt::TransferFee { .. } => 32 + 32 + 8 + 2 * (8 + 8 + 2),
            MintExt::NonTransferable => 0,
            MintExt::DefaultFrozen => 1,
        }
    }

    /// The fee a transfer of `amount` pays: basis points rounded up, at most the maximum.
    pub fn fee(&self, amount: u64) -> u64 {
        let MintExt::TransferFee { basis_points, maximum_fee, .. } = self else { return 0 };
        let fee = (u128::from(amount) * u128::from(*basis_points)).div_ceil(10_000);
        u64::try_from(fee).unwrap_or(u64::MAX).min(*maximum_fee)
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
            // immutableOwner (no payload), then what the mint's extensions require.
            Data::Token(t) if token_2022 => TOKEN_2022_BASE_LEN + EXTENSION_HEADER_LEN + t.exts.len(),
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

    /// Whether a node reports it executable: an upgradeable program, or an account of the
    /// native or the v2 BPF loader (the builtins and the programs deployed there).
    pub fn executable(&self) -> bool {
        matches!(self.data, Data::Program { .. })
            || self.owner == BUILTIN.native_loader
            || self.owner == BUILTIN.bpf_loader_2
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
        let hooked = TokenAcct { exts: AccountExts { hook: true, ..AccountExts::default() }, ..t.clone() };
        assert_eq!(Acct::token_account(TokenProgram::Token2022, hooked).space(), 175);
        // transferFeeAmount (8) and nonTransferableAccount (0), each with its header: 186.
        let exts = AccountExts::of(&[
            MintExt::NonTransferable,
            MintExt::TransferFee { authority: Pubkey::default(), basis_points: 100, maximum_fee: 1, epoch: 0 },
        ]);
        assert_eq!(Acct::token_account(TokenProgram::Token2022, TokenAcct { exts, ..t }).space(), 186);
    }

    #[test]
    fn a_transfer_fee_rounds_up_and_stops_at_its_maximum() {
        let fee = MintExt::TransferFee { authority: Pubkey::default(), basis_points: 1_000, maximum_fee: 50, epoch: 0 };
        assert_eq!((fee.fee(0), fee.fee(1), fee.fee(100), fee.fee(499), fee.fee(10_000)), (0, 1, 10, 50, 50));
        assert_eq!(fee.fee(u64::MAX), 50, "no overflow");
        assert_eq!(MintExt::NonTransferable.fee(1_000), 0);
    }
}
