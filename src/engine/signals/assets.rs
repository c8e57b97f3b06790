//! Asset risk: properties of what the wallet holds that let others move, freeze or lure it.
//!
//! Detectors: Token-2022 permanent delegates and transfer hooks, freeze authorities, frozen
//! accounts, unsolicited tokens, rent locked in empty token accounts.

use super::Ctx;
use crate::engine::report::{Fact, Severity};
use crate::facts;
use crate::ledger::instruction::InstructionKind;
use crate::ledger::model::{MintExtension, MintInfo, TokenAccount, TokenAccountState};

pub fn detect(ctx: &mut Ctx<'_>) {
    for ta in ctx.view.token_accounts.iter().filter(|t| t.amount > 0) {
        if let Some(mint) = ctx.view.mint(&ta.mint) {
            mint_risks(ctx, ta, mint);
        }
    }
    frozen_accounts(ctx);
    unsolicited_tokens(ctx);
    rent_locked(ctx);
}

fn cite_mint(ctx: &mut Ctx<'_>, mint: &MintInfo, summary: String) -> String {
    let slot = ctx.view.coverage.as_of_slot;
    ctx.book.account(&mint.address, slot, || summary)
}

fn mint_risks(ctx: &mut Ctx<'_>, ta: &TokenAccount, mint: &MintInfo) {
    let wallet = ctx.view.address;
    if let Some(delegate) = mint.permanent_delegate().filter(|d| *d != wallet) {
        let evidence = vec![cite_mint(ctx, mint, format!("mint has permanentDelegate {delegate}"))];
        let severity = if ctx.labels.is_flagged(&delegate) { Severity::Critical } else { Severity::High };
        ctx.emit(
            "permanent_delegate_mint",
            severity,
            format!("Holding a mint with a permanent delegate ({})", ctx.display(&delegate)),
            format!("Mint {} lets {delegate} transfer or burn the wallet's {} base units at any time, without its signature.", mint.address, ta.amount),
            facts! { "mint" => mint.address, "permanentDelegate" => delegate, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount) },
            evidence,
        );
    }
    for ext in &mint.extensions {
        if let MintExtension::TransferHook { program_id: Some(hook), .. } = ext {
            let evidence = vec![cite_mint(ctx, mint, format!("mint has transferHook program {hook}"))];
            ctx.emit(
                "transfer_hook_mint",
                Severity::Medium,
                "Holding a mint with a transfer hook".to_owned(),
                format!("Every transfer of mint {} runs program {hook}, chosen by the mint's authority.", mint.address),
                facts! { "mint" => mint.address, "hookProgram" => hook, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount) },
                evidence,
            );
        }
    }
    if let Some(freezer) = mint.freeze_authority {
        let stable = ctx.labels.is_stablecoin(&mint.address);
        let severity = if stable { Severity::Info } else { Severity::Low };
        let evidence = vec![cite_mint(ctx, mint, format!("mint freeze authority is {freezer}"))];
        ctx.emit(
            "freeze_authority_mint",
            severity,
            format!("Holding a freezable mint{}", if stable { " (labelled stablecoin)" } else { "" }),
            format!("{freezer} can freeze the wallet's account of mint {}.", mint.address),
            facts! { "mint" => mint.address, "freezeAuthority" => freezer, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "labelledStablecoin" => stable },
            evidence,
        );
    }
}

fn frozen_accounts(ctx: &mut Ctx<'_>) {
    let slot = ctx.view.coverage.as_of_slot;
    for ta in ctx.view.token_accounts.iter().filter(|t| t.state == TokenAccountState::Frozen) {
        let evidence = vec![ctx.book.account(&ta.address, slot, || "token account state is frozen".to_owned())];
        ctx.emit(
            "frozen_token_account",
            Severity::Medium,
            "Frozen token account".to_owned(),
            format!("Token account {} ({} base units of mint {}) is frozen.", ta.address, ta.amount, ta.mint),
            facts! { "tokenAccount" => ta.address, "mint" => ta.mint, "amount" => Fact::token_amount(ta.amount) },
            evidence,
        );
    }
}

fn unsolicited_tokens(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let wallet = view.address;
    for tx in &view.transactions {
        for ix in &tx.instructions {
            let InstructionKind::AtaCreate { funder, account, wallet: owner, mint } = &ix.kind else { continue };
            if *owner != wallet || *funder == wallet || tx.is_signer(&wallet) || ctx.labels.get(mint).is_some() {
                continue;
            }
            let evidence = vec![ctx
                .book
                .instruction(tx, ix, || format!("{funder} created a token account of mint {mint} for the wallet"))];
            ctx.emit(
                "unsolicited_token",
                Severity::Low,
                "Unsolicited token account".to_owned(),
                format!("{funder} created token account {account} of unknown mint {mint} for the wallet without its signature."),
                facts! { "mint" => mint, "tokenAccount" => account, "createdBy" => funder },
                evidence,
            );
        }
    }
}

fn rent_locked(ctx: &mut Ctx<'_>) {
    let slot = ctx.view.coverage.as_of_slot;
    let empty: Vec<&TokenAccount> = ctx.view.token_accounts.iter().filter(|t| t.amount == 0 && !t.is_native).collect();
    if empty.is_empty() {
        return;
    }
    // Lamports come from the ledger: a hostile source could make a plain sum overflow.
    let lamports = empty.iter().fold(0u64, |sum, t| sum.saturating_add(t.lamports));
    let evidence = empty
        .iter()
        .take(super::SIGNAL_EVIDENCE_MAX)
        .map(|t| ctx.book.account(&t.address, slot, || format!("empty token account holding {} lamports", t.lamports)))
        .collect();
    ctx.emit(
        "rent_locked_empty_accounts",
        Severity::Info,
        format!("{} empty token accounts hold reclaimable rent", empty.len()),
        format!("Closing them returns {lamports} lamports to the wallet."),
        facts! { "emptyAccounts" => empty.len(), "reclaimableLamports" => lamports },
        evidence,
    );
}
