//! Guards (issue #44, item 3): a simulation is a prediction, not a promise — state can change
//! between the scan and the transaction's execution, and a program can behave differently once
//! it runs for real. A scan asked with `guards` answers, for a transaction it does not judge
//! malicious, Lighthouse assertions (`lighthouse`) that make the transaction fail on chain if
//! the signer's accounts end up other than predicted, and — for an unsigned transaction — the
//! transaction with them appended (`append`).
//!
//! Owns: `GuardOptions` (the caller's tolerances), `Prediction` (the signer's accounts after the
//! transaction, as the scan predicts them), `plan` (prediction → assertions) and `GuardsView`
//! (the answer's `guards` member). Pure; called by `scan::report` on listener threads. Below
//! the scan: it reads the ledger's token-account model, never the scan's own types.
//!
//! What a guard asserts, per the prediction: the signer's SOL does not fall below the predicted
//! balance minus `solToleranceLamports`; each token account of the signer's (before or after)
//! that still exists keeps the predicted owner, delegate and close authority, and holds at least
//! the predicted amount minus `slippageBps` of it.
//! Invariant: every guard holds on the predicted post-state (the tests run the transaction in
//! the real runtime and check each guard on what it left, then on a tampered run: an owner
//! handed away, a larger debit — where each fails).
//! Invariant: bounded — at most `GUARD_TOKEN_ACCOUNTS_MAX` token accounts are guarded (past it
//! the guards are withheld, said so), and the guarded transaction stays a transaction
//! (`append`'s limits).
//! Deliberately absent: guards for a transaction judged malicious (no assertion makes a drainer
//! safe to sign) or one whose simulation did not run or failed (nothing predicted to hold).

pub mod append;
pub mod lighthouse;

#[cfg(test)]
mod tests;

use base64::Engine as _;
use serde::Serialize;

use crate::ledger::model::TokenAccount;
use crate::pubkey::Pubkey;
use lighthouse::{Assertion, GuardInstruction};

/// Token accounts one scan guards at most (each guard is ~120 bytes of a 1,232-byte transaction).
pub const GUARD_TOKEN_ACCOUNTS_MAX: usize = 16;
/// `slippageBps` at most: all of the amount.
pub const GUARD_SLIPPAGE_BPS_MAX: u16 = 10_000;
const BPS_PER_WHOLE: u128 = 10_000;

/// The caller's tolerances (`guards: true` is both zero: exactly the prediction).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GuardOptions {
    /// How far below the predicted amount a token account may end, in basis points of it.
    pub slippage_bps: u16,
    /// How far below the predicted balance the signer's SOL may end, in lamports.
    pub sol_tolerance_lamports: u64,
}

/// The signer's accounts after the transaction, as the scan predicts them.
#[derive(Debug, Clone)]
pub struct Prediction<'a> {
    pub signer: Pubkey,
    /// The signer's own account after it: its lamports and owner (`None`: closed).
    pub signer_after: Option<(u64, Pubkey)>,
    /// Token accounts that are the signer's before or after it, as they are after it (one it
    /// closes is absent: there is nothing left to assert on).
    pub token_accounts: Vec<PredictedToken<'a>>,
}

/// A token account after the transaction, and the amount it held before (0: created by it).
#[derive(Debug, Clone, Copy)]
pub struct PredictedToken<'a> {
    pub after: &'a TokenAccount,
    pub amount_before: u64,
}

/// The assertions that hold on `prediction` within `options`, one instruction an account, in
/// a fixed order: the signer's own account, then token accounts by address. `fee_more_lamports`
/// is what the guards may add to the fee the signer pays (`append::Budget`): its SOL may end
/// that much lower.
pub fn plan(prediction: &Prediction<'_>, options: &GuardOptions, fee_more_lamports: u64) -> Vec<GuardInstruction> {
    let mut out = Vec::with_capacity(1 + prediction.token_accounts.len());
    if let Some((lamports, owner)) = prediction.signer_after {
        // Its owner too: a program handed the wallet as a writable signer could assign it
        // away with every lamport still in it.
        let floor = lamports.saturating_sub(options.sol_tolerance_lamports).saturating_sub(fee_more_lamports);
        let lamports = (floor > 0).then_some(Assertion::LamportsAtLeast(floor));
        let assertions = lamports.into_iter().chain([Assertion::AccountOwner(owner)]).collect();
        out.push(GuardInstruction { target: prediction.signer, assertions });
    }
    let mut tokens = prediction.token_accounts.clone();
    tokens.sort_by_key(|t| t.after.address);
    for PredictedToken { after: t, amount_before } in tokens {
        // The slippage is a share of what the transaction moves, not of the whole balance: a
        // swap of 10 out of 1,000,000 may end 0.5 % of 10 short, never 5,000.
        let moved = u128::from(t.amount.abs_diff(amount_before));
        let allowed_drop = moved * u128::from(options.slippage_bps) / BPS_PER_WHOLE;
        let floor = t.amount.saturating_sub(u64::try_from(allowed_drop).unwrap_or(u64::MAX));
        let mut assertions = vec![Assertion::TokenOwner(t.owner), Assertion::TokenDelegate(t.delegate)];
        if t.delegate.is_some() {
            // The delegate as predicted, and no more than it was predicted to be allowed.
            assertions.push(Assertion::TokenDelegatedAmountAtMost(t.delegated_amount));
        }
        assertions.extend([Assertion::TokenCloseAuthority(t.close_authority), Assertion::TokenAmountAtLeast(floor)]);
        out.push(GuardInstruction { target: t.address, assertions });
    }
    out
}

/// The answer's `guards`: what was asked, and the guards or why there are none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GuardsView {
    pub slippage_bps: u16,
    pub sol_tolerance_lamports: u64,
    /// `added` or `withheld`.
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub guard_instructions: Vec<InstructionView>,
    /// Base64 of the transaction with the guards appended, to sign instead of the one scanned.
    pub guarded_transaction: Option<String>,
    /// Why `guardedTransaction` is `null` when guards were added.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guarded_transaction_error: Option<NamedError>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NamedError {
    pub code: &'static str,
    pub message: String,
}

/// One guard instruction, as an SDK's `Instruction` holds it, with its assertions spelled out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstructionView {
    pub program_id: &'static str,
    pub accounts: Vec<AccountMetaView>,
    /// Base64 of the instruction's data.
    pub data: String,
    pub asserts: Vec<AssertView>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountMetaView {
    pub address: Pubkey,
    pub is_signer: bool,
    pub is_writable: bool,
}

/// An assertion as the answer names it (amounts of tokens as strings of base units).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum AssertView {
    LamportsAtLeast { lamports: u64 },
    AccountOwner { owner: Pubkey },
    TokenOwner { owner: Pubkey },
    TokenDelegate { delegate: Option<Pubkey> },
    TokenDelegatedAmountAtMost { amount: String },
    TokenCloseAuthority { close_authority: Option<Pubkey> },
    TokenAmountAtLeast { amount: String },
}

impl From<&Assertion> for AssertView {
    fn from(a: &Assertion) -> AssertView {
        match *a {
            Assertion::LamportsAtLeast(lamports) => AssertView::LamportsAtLeast { lamports },
            Assertion::AccountOwner(owner) => AssertView::AccountOwner { owner },
            Assertion::TokenOwner(owner) => AssertView::TokenOwner { owner },
            Assertion::TokenDelegate(delegate) => AssertView::TokenDelegate { delegate },
            Assertion::TokenDelegatedAmountAtMost(amount) => {
                AssertView::TokenDelegatedAmountAtMost { amount: amount.to_string() }
            }
            Assertion::TokenCloseAuthority(close_authority) => AssertView::TokenCloseAuthority { close_authority },
            Assertion::TokenAmountAtLeast(amount) => AssertView::TokenAmountAtLeast { amount: amount.to_string() },
        }
    }
}

fn instruction_view(guard: &GuardInstruction) -> InstructionView {
    InstructionView {
        program_id: lighthouse::PROGRAM_ID_TEXT,
        accounts: vec![AccountMetaView { address: guard.target, is_signer: false, is_writable: false }],
        data: base64::engine::general_purpose::STANDARD.encode(guard.encode()),
        asserts: guard.assertions.iter().map(AssertView::from).collect(),
    }
}

/// The scanned transaction, for the guarded one: its bytes and its full account list (the fee
/// payer first).
#[derive(Debug, Clone, Copy)]
pub struct Scanned<'a> {
    pub bytes: &'a [u8],
    pub accounts: &'a [Pubkey],
}

impl GuardsView {
    /// No guards, and why.
    pub fn withheld(options: &GuardOptions, reason: String) -> GuardsView {
        GuardsView {
            slippage_bps: options.slippage_bps,
            sol_tolerance_lamports: options.sol_tolerance_lamports,
            status: "withheld",
            reason: Some(reason),
            guard_instructions: Vec::new(),
            guarded_transaction: None,
            guarded_transaction_error: None,
        }
    }

    /// The guards of `prediction`, and `scanned` with them appended when that can be done.
    pub fn of(prediction: &Prediction<'_>, options: &GuardOptions, scanned: Scanned<'_>) -> GuardsView {
        if prediction.token_accounts.len() > GUARD_TOKEN_ACCOUNTS_MAX {
            let reason = format!(
                "the transaction leaves {} token accounts of the signer's; a scan guards {GUARD_TOKEN_ACCOUNTS_MAX} at most",
                prediction.token_accounts.len()
            );
            return GuardsView::withheld(options, reason);
        }
        // Read once: what the guards' compute units may add to the fee (when the signer pays
        // it), then the transaction they are appended to.
        let tx = append::read(scanned.bytes);
        let budget = tx.as_ref().map(append::Budget::of).unwrap_or_default();
        let pays = scanned.accounts.first() == Some(&prediction.signer);
        let instructions = usize::from(prediction.signer_after.is_some()) + prediction.token_accounts.len();
        let fee_more_lamports = if pays { budget.fee_more_lamports_max(instructions) } else { 0 };
        let guards = plan(prediction, options, fee_more_lamports);
        if guards.is_empty() {
            return GuardsView::withheld(options, "the transaction leaves the signer nothing to guard".into());
        }
        let guarded = tx.and_then(|tx| append::append(tx, scanned.accounts, &guards, &budget));
        let (guarded_transaction, guarded_transaction_error) = match guarded {
            Ok(bytes) => (Some(base64::engine::general_purpose::STANDARD.encode(bytes)), None),
            Err(e) => (None, Some(NamedError { code: e.code(), message: e.message() })),
        };
        GuardsView {
            slippage_bps: options.slippage_bps,
            sol_tolerance_lamports: options.sol_tolerance_lamports,
            status: "added",
            reason: None,
            guard_instructions: guards.iter().map(instruction_view).collect(),
            guarded_transaction,
            guarded_transaction_error,
        }
    }
}
