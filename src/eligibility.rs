//! Eligibility: can this address be a user wallet? (contract §3 steps 6–7)
//!
//! Owns: the local checks (base58 of 32 bytes; known program, sysvar, builtin or mint id from
//! the labels; off the ed25519 curve, i.e. a program-derived address) and the ledger checks
//! (executable, mint, token account, nonce or stake account, data owned by a program that is
//! not a known takeover). Local checks run on listener threads before any work is queued;
//! ledger checks run on compute threads once the wallet view is read. Pure functions.
//!
//! Invariant: every refusal carries the contract's `details.reason` string. Deliberately
//! absent: any network or store access — the caller supplies labels and the view.

use crate::labels::{Category, Labels};
use crate::ledger::instruction::InstructionKind;
use crate::ledger::model::{AccountKind, AccountState, WalletView};
use crate::pubkey::{AddressError, Pubkey};

/// Why an address cannot be a user wallet (`422 ACCOUNT_NOT_ELIGIBLE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ineligible {
    /// Off the ed25519 curve: a program-derived address, which no key can sign for.
    OffCurve,
    /// A known program id.
    Program,
    /// A sysvar id.
    Sysvar,
    /// A token mint (known locally, or found on the ledger).
    TokenMint,
    /// A token account.
    TokenAccount,
    /// An executable account (a program not in the labels).
    Executable,
    NonceAccount,
    StakeAccount,
    /// A data account owned by a program, with no sign of having been a wallet.
    ProgramOwned,
}

impl Ineligible {
    /// The contract's `details.reason`.
    pub fn reason(self) -> &'static str {
        match self {
            Ineligible::OffCurve => "off_curve",
            Ineligible::Program => "program",
            Ineligible::Sysvar => "sysvar",
            Ineligible::TokenMint => "token_mint",
            Ineligible::TokenAccount => "token_account",
            Ineligible::Executable => "executable",
            Ineligible::NonceAccount => "nonce_account",
            Ineligible::StakeAccount => "stake_account",
            Ineligible::ProgramOwned => "program_owned",
        }
    }

    /// A sentence for the error's `message`.
    pub fn message(self) -> &'static str {
        match self {
            Ineligible::OffCurve => "address is off the ed25519 curve (a program-derived address), not a wallet",
            Ineligible::Program => "address is a known program id, not a wallet",
            Ineligible::Sysvar => "address is a sysvar, not a wallet",
            Ineligible::TokenMint => "address is a token mint, not a wallet",
            Ineligible::TokenAccount => "address is a token account, not a wallet",
            Ineligible::Executable => "address is an executable account, not a wallet",
            Ineligible::NonceAccount => "address is a durable nonce account, not a wallet",
            Ineligible::StakeAccount => "address is a stake account, not a wallet",
            Ineligible::ProgramOwned => "address is a data account owned by a program, not a wallet",
        }
    }
}

/// Why a request's address was refused before any ledger read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalRefusal {
    /// `400 INVALID_ADDRESS`.
    Invalid(AddressError),
    /// `422 ACCOUNT_NOT_ELIGIBLE`.
    Ineligible(Ineligible),
}

/// Steps 6 and 7 of the contract's pipeline for one address text.
pub fn check_local(text: &str, labels: &Labels) -> Result<Pubkey, LocalRefusal> {
    let address = Pubkey::parse(text).map_err(LocalRefusal::Invalid)?;
    classify_local(&address, labels).map_err(LocalRefusal::Ineligible)?;
    Ok(address)
}

/// A comparison of an address with itself: `400 INVALID_REQUEST` on `walletB` (contract §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", SameWallet::MESSAGE)]
pub struct SameWallet;

impl SameWallet {
    pub const MESSAGE: &'static str = "walletA and walletB are the same address";
}

/// The one rule of a pair: two different addresses. Checked after both parse and before
/// either is classified, by the API (and its stand-in) and the CLI alike.
pub fn check_pair(a: &Pubkey, b: &Pubkey) -> Result<(), SameWallet> {
    if a == b {
        return Err(SameWallet);
    }
    Ok(())
}

/// The locally decidable reasons, most specific first (a known program id may happen to lie
/// on the curve; a sysvar may not).
pub fn classify_local(address: &Pubkey, labels: &Labels) -> Result<(), Ineligible> {
    match labels.category(address) {
        Some(Category::Builtin | Category::Program) => return Err(Ineligible::Program),
        Some(Category::Sysvar) => return Err(Ineligible::Sysvar),
        Some(Category::Mint) => return Err(Ineligible::TokenMint),
        _ => {}
    }
    if !address.is_on_curve() {
        return Err(Ineligible::OffCurve);
    }
    Ok(())
}

/// The reasons only the ledger can tell. An account that does not exist yet is a wallet that
/// was never funded, which is eligible.
pub fn classify_ledger(view: &WalletView) -> Result<(), Ineligible> {
    let Some(account) = &view.account else { return Ok(()) };
    if account.executable {
        return Err(Ineligible::Executable);
    }
    match &account.kind {
        AccountKind::Wallet => Ok(()),
        AccountKind::Program => Err(Ineligible::Executable),
        AccountKind::Mint => Err(Ineligible::TokenMint),
        AccountKind::TokenAccount => Err(Ineligible::TokenAccount),
        AccountKind::Nonce => Err(Ineligible::NonceAccount),
        AccountKind::Stake => Err(Ineligible::StakeAccount),
        AccountKind::Data { .. } if is_known_takeover(view) => Ok(()),
        AccountKind::Data { .. } => Err(Ineligible::ProgramOwned),
    }
}

/// True when the account alone refuses the address, whatever its history holds (everything
/// `classify_ledger` refuses but a program-owned data account, which may be a wallet taken
/// over): the view's history need not be read.
pub fn refused_by_account(account: &AccountState) -> bool {
    account.executable || !matches!(account.kind, AccountKind::Wallet | AccountKind::Data { .. })
}

/// True when the history shows this very account being `assign`ed to its current owner: a
/// wallet taken over, which is exactly what the X-Ray must report, not refuse.
pub fn is_known_takeover(view: &WalletView) -> bool {
    let Some(account) = &view.account else { return false };
    view.transactions.iter().flat_map(|t| &t.instructions).any(|ix| {
        matches!(ix.kind, InstructionKind::SystemAssign { account: a, owner } if a == view.address && owner == account.owner)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::instruction::{Instruction, InstructionIndex, Program};
    use crate::ledger::model::{AccountState, Coverage, Transaction, TransactionVersion};
    use crate::pubkey::Signature;

    const WALLET: &str = "5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd";

    #[test]
    fn what_the_account_alone_refuses_the_ledger_check_refuses() {
        let kinds = [
            AccountKind::Wallet,
            AccountKind::Program,
            AccountKind::Mint,
            AccountKind::TokenAccount,
            AccountKind::Nonce,
            AccountKind::Stake,
            AccountKind::Data { program: None },
        ];
        for kind in kinds {
            for executable in [false, true] {
                let account = state(executable, kind.clone());
                let view = WalletView { account: Some(account.clone()), ..WalletView::default() };
                if refused_by_account(&account) {
                    assert!(classify_ledger(&view).is_err(), "{account:?}");
                }
            }
        }
        assert!(!refused_by_account(&state(false, AccountKind::Wallet)));
    }

    fn state(executable: bool, kind: AccountKind) -> AccountState {
        AccountState { lamports: 1, owner: Pubkey::default(), executable, data_len: 0, kind }
    }

    #[test]
    fn local_checks_give_the_contract_reasons() {
        let labels = Labels::builtin();
        let off_curve = (0u8..=255).map(|b| Pubkey([b; 32])).find(|k| !k.is_on_curve()).unwrap().to_string();
        let cases: &[(&str, Result<(), &str>)] = &[
            (WALLET, Ok(())),
            ("TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", Err("program")),
            ("11111111111111111111111111111111", Err("program")),
            ("SysvarC1ock11111111111111111111111111111111", Err("sysvar")),
            ("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", Err("token_mint")),
            (&off_curve, Err("off_curve")),
            ("not-base58!", Err("not_base58")),
            ("abc", Err("wrong_length")),
        ];
        for (text, expected) in cases {
            let got = check_local(text, &labels).map(|_| ()).map_err(|e| match e {
                LocalRefusal::Invalid(a) => a.reason(),
                LocalRefusal::Ineligible(i) => i.reason(),
            });
            assert_eq!(got, *expected, "{text}");
        }
    }

    fn view(kind: AccountKind, owner: Pubkey, executable: bool, assigned: bool) -> WalletView {
        let address = Pubkey::parse(WALLET).unwrap();
        let assign = Instruction {
            index: InstructionIndex { outer: 0, inner: None },
            program_id: Pubkey::default(),
            program: Program::System,
            name: "assign".into(),
            kind: InstructionKind::SystemAssign { account: address, owner },
            accounts: vec![address],
        };
        let tx = Transaction {
            signature: Signature::default(),
            slot: 1,
            block_time: None,
            error: None,
            fee: 5000,
            fee_payer: address,
            signers: vec![address],
            account_keys: vec![address],
            version: TransactionVersion::Legacy,
            instructions: vec![assign],
            sol_changes: vec![],
            token_changes: vec![],
        };
        WalletView {
            address,
            account: Some(AccountState { lamports: 1, owner, executable, data_len: 0, kind }),
            token_accounts: vec![],
            mints: vec![],
            nonce_accounts: vec![],
            stake_accounts: vec![],
            outsider_nonces: vec![],
            transactions: if assigned { vec![tx] } else { vec![] },
            coverage: Coverage::default(),
            funder_hop: None,
        }
    }

    #[test]
    fn ledger_checks_give_the_contract_reasons() {
        let program = Pubkey([9; 32]);
        let data = || AccountKind::Data { program: None };
        let cases = [
            (view(AccountKind::Wallet, Pubkey::default(), false, false), Ok(())),
            (view(AccountKind::Program, program, true, false), Err(Ineligible::Executable)),
            (view(AccountKind::Mint, program, false, false), Err(Ineligible::TokenMint)),
            (view(AccountKind::TokenAccount, program, false, false), Err(Ineligible::TokenAccount)),
            (view(AccountKind::Nonce, Pubkey::default(), false, false), Err(Ineligible::NonceAccount)),
            (view(AccountKind::Stake, program, false, false), Err(Ineligible::StakeAccount)),
            (view(data(), program, false, false), Err(Ineligible::ProgramOwned)),
            // Assigned to its current owner in its own history: a takeover, still analyzed.
            (view(data(), program, false, true), Ok(())),
        ];
        for (v, expected) in cases {
            assert_eq!(classify_ledger(&v), expected, "{:?}", v.account);
        }
        let mut missing = view(AccountKind::Wallet, Pubkey::default(), false, false);
        missing.account = None;
        assert_eq!(classify_ledger(&missing), Ok(()));
    }
}
