//! Asset risk: properties of what the wallet holds that let others move, freeze or lure it.
//!
//! Detectors: Token-2022 permanent delegates, transfer hooks, transfer fees, non-transferable
//! and default-frozen mints, mint close authorities, supply still mintable by an unknown
//! authority, freeze authorities, frozen accounts, unsolicited tokens, rent locked in empty
//! token accounts. Each mint risk cites the mint account at the view's slot.

use super::Ctx;
use crate::engine::fixes;
use crate::engine::report::{with_list_reason, Fact, IntoFact, Severity};
use crate::facts;
use crate::ledger::instruction::InstructionKind;
use crate::ledger::model::{MintExtension, MintInfo, TokenAccount, TokenAccountState};
use crate::pubkey::Pubkey;

/// A transfer fee from this many basis points (5 %) is medium severity, below it low.
const TRANSFER_FEE_BASIS_POINTS_MEDIUM: u16 = 500;

pub fn detect(ctx: &mut Ctx<'_>) {
    for ta in ctx.view.token_accounts.iter().filter(|t| t.amount > 0) {
        if let Some(mint) = ctx.view.mint(&ta.mint) {
            mint_risks(ctx, ta, mint);
            extension_risks(ctx, ta, mint);
            mintable_supply(ctx, ta, mint);
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
            with_list_reason(facts! { "mint" => mint.address, "permanentDelegate" => delegate, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals }, ctx.labels, &delegate),
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
                facts! { "mint" => mint.address, "hookProgram" => hook, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals },
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
            facts! { "mint" => mint.address, "freezeAuthority" => freezer, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals, "labelledStablecoin" => stable },
            evidence,
        );
    }
}

/// Transfer fees, non-transferable and default-frozen mints, mint close authorities.
fn extension_risks(ctx: &mut Ctx<'_>, ta: &TokenAccount, mint: &MintInfo) {
    for ext in &mint.extensions {
        match ext {
            MintExtension::TransferFeeConfig { basis_points, maximum_fee, authority } if *basis_points > 0 => {
                transfer_fee(ctx, ta, mint, (*basis_points, *maximum_fee), *authority)
            }
            MintExtension::NonTransferable => {
                let evidence = vec![cite_mint(ctx, mint, "mint is nonTransferable".to_owned())];
                ctx.emit(
                    "non_transferable_mint",
                    Severity::Low,
                    "Holding non-transferable tokens".to_owned(),
                    format!("The wallet's {} base units of mint {} can never be transferred or sold, only burned.", ta.amount, mint.address),
                    facts! { "mint" => mint.address, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals },
                    evidence,
                );
            }
            MintExtension::DefaultAccountState { state } if state == "frozen" => default_frozen(ctx, ta, mint),
            MintExtension::MintCloseAuthority { close_authority: Some(closer) } => {
                close_authority(ctx, ta, mint, *closer)
            }
            _ => {}
        }
    }
}

fn transfer_fee(ctx: &mut Ctx<'_>, ta: &TokenAccount, mint: &MintInfo, fee: (u16, u64), authority: Option<Pubkey>) {
    let (basis_points, maximum_fee) = fee;
    let severity = if basis_points >= TRANSFER_FEE_BASIS_POINTS_MEDIUM { Severity::Medium } else { Severity::Low };
    let evidence = vec![cite_mint(
        ctx,
        mint,
        format!("mint transfer fee is {basis_points} basis points, at most {maximum_fee} base units"),
    )];
    let who = match authority {
        Some(a) => format!(" {} can change the fee and withdraw what is withheld.", ctx.display(&a)),
        None => " No authority can change it.".to_owned(),
    };
    let mut facts = facts! {
        "mint" => mint.address, "feeBasisPoints" => u64::from(basis_points), "maximumFee" => Fact::token_amount(maximum_fee),
        "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals,
    };
    if let Some(a) = authority {
        facts.insert("feeAuthority", a.into_fact());
    }
    ctx.emit(
        "transfer_fee_mint",
        severity,
        format!("Holding a mint with a {}.{:02} % transfer fee", basis_points / 100, basis_points % 100),
        format!(
            "Every transfer of mint {} withholds {basis_points} basis points (at most {maximum_fee} base units).{who}",
            mint.address
        ),
        facts,
        evidence,
    );
}

fn default_frozen(ctx: &mut Ctx<'_>, ta: &TokenAccount, mint: &MintInfo) {
    let stable = ctx.labels.is_stablecoin(&mint.address);
    let severity = if stable { Severity::Info } else { Severity::Low };
    let evidence = vec![cite_mint(ctx, mint, "mint defaultAccountState is frozen".to_owned())];
    let mut facts = facts! { "mint" => mint.address, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals, "labelledStablecoin" => stable };
    if let Some(freezer) = mint.freeze_authority {
        facts.insert("freezeAuthority", freezer.into_fact());
    }
    ctx.emit(
        "default_frozen_mint",
        severity,
        "Holding a mint whose accounts start frozen".to_owned(),
        format!("Every new token account of mint {} starts frozen until its freeze authority thaws it.", mint.address),
        facts,
        evidence,
    );
}

fn close_authority(ctx: &mut Ctx<'_>, ta: &TokenAccount, mint: &MintInfo, closer: Pubkey) {
    let flagged = ctx.labels.is_flagged(&closer);
    let severity = if flagged { Severity::High } else { Severity::Low };
    let evidence = vec![cite_mint(ctx, mint, format!("mint close authority is {closer}"))];
    ctx.emit(
        "close_authority_mint",
        severity,
        format!("Holding a mint that {} can close", ctx.display(&closer)),
        format!("{closer} can close mint {} once its supply is zero; the address could then be re-created as a different mint.", mint.address),
        with_list_reason(facts! { "mint" => mint.address, "closeAuthority" => closer, "closeAuthorityFlagged" => flagged, "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals }, ctx.labels, &closer),
        evidence,
    );
}

/// Supply still mintable by an authority the labels do not know (a labelled mint or a
/// labelled, unflagged authority is an issuer by policy).
fn mintable_supply(ctx: &mut Ctx<'_>, ta: &TokenAccount, mint: &MintInfo) {
    let Some(minter) = mint.mint_authority else { return };
    let flagged = ctx.labels.is_flagged(&minter);
    if !flagged && (ctx.labels.get(&mint.address).is_some() || ctx.labels.get(&minter).is_some()) {
        return;
    }
    let severity = if flagged { Severity::High } else { Severity::Low };
    let evidence = vec![cite_mint(ctx, mint, format!("mint authority is {minter}, supply {}", mint.supply))];
    ctx.emit(
        "mintable_supply_mint",
        severity,
        format!("Holding a mint {} can still mint", ctx.display(&minter)),
        format!("{minter} can mint any amount of mint {} (supply now {} base units), diluting the wallet's {} base units.", mint.address, mint.supply, ta.amount),
        with_list_reason(facts! { "mint" => mint.address, "mintAuthority" => minter, "mintAuthorityFlagged" => flagged, "supply" => Fact::token_amount(mint.supply), "tokenAccount" => ta.address, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals }, ctx.labels, &minter),
        evidence,
    );
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
            facts! { "tokenAccount" => ta.address, "mint" => ta.mint, "amount" => Fact::token_amount(ta.amount), "decimals" => ta.decimals },
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
    if ctx.emit(
        "rent_locked_empty_accounts",
        Severity::Info,
        format!("{} empty token accounts hold reclaimable rent", empty.len()),
        format!("Closing them returns {lamports} lamports to the wallet."),
        facts! { "emptyAccounts" => empty.len(), "reclaimableLamports" => lamports },
        evidence,
    ) {
        let wallet = ctx.view.address;
        let closes = empty.iter().filter(|t| closable_by(t, &wallet)).map(|t| {
            let why = format!(
                "Close empty token account {} and return its {} lamports to the wallet, its owner, which signs.",
                t.address, t.lamports
            );
            fixes::token_close_account(t.program, &t.address, &wallet, &wallet, why)
        });
        ctx.fix_last(closes.collect());
    }
}

/// Account extensions that make `closeAccount` fail while they hold amounts (withheld transfer
/// fees, confidential balances) — which the view does not show, so such accounts are left out.
const CLOSE_BLOCKING_EXTENSIONS: [&str; 3] =
    ["transferFeeAmount", "confidentialTransferAccount", "confidentialTransferFeeAmount"];

/// Whether the owner alone can close an empty token account: not frozen (the program refuses),
/// no other close authority (it alone may close), no extension that may block the close.
fn closable_by(account: &TokenAccount, owner: &Pubkey) -> bool {
    account.owner == *owner
        && account.state != TokenAccountState::Frozen
        && account.close_authority.is_none_or(|c| c == *owner)
        && !account.extensions.iter().any(|e| CLOSE_BLOCKING_EXTENSIONS.contains(&e.as_str()))
}
