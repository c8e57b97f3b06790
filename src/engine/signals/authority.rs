//! Authority exposure: who else can move the wallet's assets or sign for it.
//!
//! Detectors: open token delegations, foreign close authorities, token accounts handed away,
//! the wallet itself assigned to a program, foreign nonce and stake authorities.

use super::Ctx;
use crate::engine::fixes::{self, StakeAuthority};
use crate::engine::report::{with_list_reason, Fact, IntoFact, Severity};
use crate::facts;
use crate::ledger::instruction::{ids, InstructionKind, TokenAuthorityType};
use crate::ledger::model::TokenAccountState;
use crate::pubkey::Pubkey;

pub fn detect(ctx: &mut Ctx<'_>) {
    open_delegations(ctx);
    foreign_close_authorities(ctx);
    token_accounts_handed_away(ctx);
    wallet_assigned(ctx);
    foreign_nonce_authorities(ctx);
    outsider_nonces(ctx);
    foreign_stake_authorities(ctx);
}

/// Finds the newest instruction matching `pred` and cites it.
fn cite_latest(ctx: &mut Ctx<'_>, pred: impl Fn(&InstructionKind) -> bool, summary: &str) -> Option<String> {
    let view = ctx.view;
    let (tx, ix) =
        view.transactions.iter().find_map(|t| t.instructions.iter().find(|i| pred(&i.kind)).map(|i| (t, i)))?;
    Some(ctx.book.instruction(tx, ix, || summary.to_owned()))
}

fn cite_account(ctx: &mut Ctx<'_>, account: &Pubkey, summary: String) -> String {
    let slot = ctx.view.coverage.as_of_slot;
    ctx.book.account(account, slot, || summary)
}

fn open_delegations(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    for ta in view.token_accounts.iter().filter(|t| t.delegated_amount > 0) {
        let Some(delegate) = ta.delegate else { continue };
        let unlimited = ta.delegated_amount == u64::MAX;
        let full = ta.delegated_amount >= ta.amount;
        let flagged = ctx.labels.is_flagged(&delegate);
        let severity = match (flagged, unlimited || full) {
            (true, _) => Severity::Critical,
            (false, true) => Severity::High,
            (false, false) => Severity::Medium,
        };
        let mut evidence = vec![cite_account(
            ctx,
            &ta.address,
            format!("token account delegates {} base units to {delegate}", ta.delegated_amount),
        )];
        let account = ta.address;
        evidence.extend(cite_latest(
            ctx,
            |k| matches!(k, InstructionKind::TokenApprove { account: a, delegate: d, .. } if *a == account && *d == delegate),
            "approve granting the delegation",
        ));
        let scope = if unlimited {
            "an unlimited"
        } else if full {
            "a full-balance"
        } else {
            "a partial"
        };
        if ctx.emit(
            "open_token_delegation",
            severity,
            format!("Open token delegation to {}", ctx.display(&delegate)),
            format!(
                "Token account {account} has {scope} approval: {delegate} may transfer up to {} base units of mint {} without the owner's signature.",
                ta.delegated_amount, ta.mint
            ),
            with_list_reason(
                facts! {
                    "tokenAccount" => account,
                    "delegate" => delegate,
                    "mint" => ta.mint,
                    "decimals" => ta.decimals,
                    "delegatedAmount" => Fact::token_amount(ta.delegated_amount),
                    "balance" => Fact::token_amount(ta.amount),
                    "unlimited" => unlimited,
                    "delegateFlagged" => flagged,
                },
                ctx.labels,
                &delegate,
            ),
            evidence,
        ) && ta.owner == view.address
            && ta.state != TokenAccountState::Frozen
        {
            // A frozen account refuses `revoke` until thawed: no instruction the wallet can send.
            let why = format!("Revoke {delegate}'s approval over token account {account}; the wallet, its owner, signs.");
            ctx.fix_last(vec![fixes::token_revoke(ta.program, &account, &ta.owner, why)]);
        }
    }
}

fn foreign_close_authorities(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    for ta in &view.token_accounts {
        let Some(closer) = ta.close_authority.filter(|c| *c != view.address) else { continue };
        let evidence = vec![cite_account(ctx, &ta.address, format!("token account close authority is {closer}"))];
        let severity = if ctx.labels.is_flagged(&closer) { Severity::High } else { Severity::Medium };
        ctx.emit(
            "foreign_close_authority",
            severity,
            format!("Token account closable by {}", ctx.display(&closer)),
            format!(
                "{closer} can close token account {} once it is empty and collect its {} lamports of rent.",
                ta.address, ta.lamports
            ),
            with_list_reason(
                facts! { "tokenAccount" => ta.address, "closeAuthority" => closer, "mint" => ta.mint },
                ctx.labels,
                &closer,
            ),
            evidence,
        );
    }
}

fn token_accounts_handed_away(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let wallet = view.address;
    for tx in &view.transactions {
        for ix in &tx.instructions {
            let InstructionKind::TokenSetAuthority {
                target,
                authority_type: TokenAuthorityType::AccountOwner,
                authority,
                new_authority: Some(new_owner),
            } = &ix.kind
            else {
                continue;
            };
            if *new_owner == wallet || (*authority != Some(wallet) && !tx.is_signer(&wallet)) {
                continue;
            }
            let evidence =
                vec![ctx.book.instruction(tx, ix, || format!("ownership of {target} handed to {new_owner}"))];
            let mut facts = facts! {
                "tokenAccount" => target,
                "newOwner" => new_owner,
                "signature" => tx.signature,
                "newOwnerFlagged" => ctx.labels.is_flagged(new_owner),
            };
            // The transaction's token balances name the account's mint and what it held when
            // the wallet signed it away (its balance before this transaction). A ledger that
            // omits token balances leaves both out rather than guessing.
            let held = tx.token_changes.iter().find(|c| c.account == *target);
            let what = match held {
                Some(c) => {
                    facts.insert("mint", Fact::Text(c.mint.to_string()));
                    facts.insert("balanceAtHandover", Fact::token_amount(c.pre));
                    facts.insert("decimals", c.decimals.into_fact());
                    format!("every token in it ({} base units of mint {} at the handover)", c.pre, c.mint)
                }
                None => "every token in it".to_owned(),
            };
            ctx.emit(
                "token_account_owner_changed",
                Severity::Critical,
                format!("Token account ownership handed to {}", ctx.display(new_owner)),
                format!("The wallet signed setAuthority(accountOwner) giving token account {target} to {new_owner}; the new owner controls {what}."),
                with_list_reason(facts, ctx.labels, new_owner),
                evidence,
            );
        }
    }
}

fn wallet_assigned(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let Some(account) = &view.account else { return };
    if account.owner.to_string() == ids::SYSTEM {
        return;
    }
    let wallet = view.address;
    let owner = account.owner;
    let mut evidence = vec![cite_account(ctx, &wallet, format!("wallet account is owned by {owner}"))];
    evidence.extend(cite_latest(
        ctx,
        |k| matches!(k, InstructionKind::SystemAssign { account: a, .. } if *a == wallet),
        "system assign of the wallet account",
    ));
    ctx.emit(
        "wallet_assigned",
        Severity::Critical,
        format!("Wallet account assigned to {}", ctx.display(&owner)),
        format!("The wallet's account is owned by program {owner}, not the System Program: that program decides what happens to its {} lamports.", account.lamports),
        with_list_reason(facts! { "owner" => owner, "ownerFlagged" => ctx.labels.is_flagged(&owner), "lamports" => account.lamports }, ctx.labels, &owner),
        evidence,
    );
}

fn foreign_nonce_authorities(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let wallet = view.address;
    for nonce in view.nonce_accounts.iter().filter(|n| n.authority != wallet) {
        let (address, authority) = (nonce.address, nonce.authority);
        let mut evidence = vec![cite_account(ctx, &address, format!("nonce authority is {authority}"))];
        evidence.extend(cite_latest(
            ctx,
            |k| matches!(k, InstructionKind::NonceInitialize { nonce: n, .. } | InstructionKind::NonceAuthorize { nonce: n, .. } if *n == address),
            "nonce account set up",
        ));
        let advanced = cite_latest(
            ctx,
            |k| matches!(k, InstructionKind::NonceAdvance { nonce: n, authority: a } if *n == address && *a == authority),
            "nonce advanced by the foreign authority",
        );
        let severity =
            if advanced.is_some() || ctx.labels.is_flagged(&authority) { Severity::Critical } else { Severity::High };
        let advanced_by_authority = advanced.is_some();
        evidence.extend(advanced);
        ctx.emit(
            "foreign_nonce_authority",
            severity,
            format!("Durable nonce controlled by {}", ctx.display(&authority)),
            format!("Nonce account {address} tied to the wallet has authority {authority}: transactions presigned against it stay valid until that authority advances it."),
            with_list_reason(facts! { "nonceAccount" => address, "authority" => authority, "advancedByAuthority" => advanced_by_authority, "lamports" => nonce.lamports }, ctx.labels, &authority),
            evidence,
        );
    }
}

/// Nonce accounts someone else created naming the wallet as authority: a phishing site can have
/// the wallet sign a transaction against one, and that signature never expires. Critical when
/// the creator is flagged or sanctioned.
fn outsider_nonces(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    for nonce in &view.outsider_nonces {
        let address = nonce.account.address;
        let mut evidence = vec![cite_account(ctx, &address, "nonce account naming the wallet as its authority".into())];
        let creator = nonce.creation().map(|(tx, ix, funder)| {
            evidence.push(ctx.book.instruction(tx, ix, || format!("{funder} created and funded the nonce account")));
            funder
        });
        let labels = ctx.labels;
        let bad_creator = creator.is_some_and(|c| labels.is_flagged(&c) || labels.is_sanctioned(&c));
        // A creation the reads did not reach may still be the wallet's own, from beyond its
        // history depth: said, at a lower severity.
        let severity = match (bad_creator, creator) {
            (true, _) => Severity::Critical,
            (false, Some(_)) => Severity::High,
            (false, None) => Severity::Medium,
        };
        let by = match creator {
            Some(c) => format!("{} created it", ctx.display(&c)),
            None => "the wallet's history does not show it creating it (who did lies beyond the reads)".into(),
        };
        let mut facts = facts! { "nonceAccount" => address, "lamports" => nonce.account.lamports };
        if let Some(c) = creator {
            facts.insert("creator", c.into_fact());
        }
        facts.insert("outsiderNonces", view.coverage.outsider_nonces_found.into_fact());
        if let Some(c) = creator {
            facts = with_list_reason(facts, labels, &c);
        }
        if ctx.emit(
            "outsider_nonce_authority",
            severity,
            format!("Durable nonce naming the wallet, created by someone else: {address}"),
            format!("Nonce account {address} names the wallet as its authority and {by}: a transaction the wallet signs with this nonce never expires, so whoever holds it can submit it at any later time."),
            facts,
            evidence,
        ) {
            let (wallet, lamports) = (view.address, nonce.account.lamports);
            let why = format!("Withdraw all {lamports} lamports of nonce account {address} (its balance at the analysed slot: if it has changed, withdraw the current balance — a partial withdraw leaves the nonce open) to the wallet, which closes it and voids every transaction signed with its nonce; the wallet, its authority, signs.");
            ctx.fix_last(vec![fixes::nonce_withdraw(&address, &wallet, &wallet, lamports, why)]);
        }
    }
}

fn foreign_stake_authorities(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    let wallet = view.address;
    for stake in view.stake_accounts.iter().filter(|s| s.staker != wallet || s.withdrawer != wallet) {
        let address = stake.address;
        let withdrawer_foreign = stake.withdrawer != wallet;
        let mut evidence = vec![cite_account(
            ctx,
            &address,
            format!("stake authorities: staker {}, withdrawer {}", stake.staker, stake.withdrawer),
        )];
        evidence.extend(cite_latest(
            ctx,
            |k| matches!(k, InstructionKind::StakeAuthorize { stake: s, .. } | InstructionKind::StakeInitialize { stake: s, .. } if *s == address),
            "stake authorities set",
        ));
        let severity = if withdrawer_foreign { Severity::Critical } else { Severity::High };
        let holder = if withdrawer_foreign { stake.withdrawer } else { stake.staker };
        let emitted = ctx.emit(
            "foreign_stake_authority",
            severity,
            format!("Stake account controlled by {}", ctx.display(&holder)),
            format!(
                "Stake account {address} ({} lamports) has staker {} and withdrawer {}; {}.",
                stake.lamports,
                stake.staker,
                stake.withdrawer,
                if withdrawer_foreign { "the withdrawer can take the stake" } else { "the staker can redelegate or deactivate it" }
            ),
            facts! { "stakeAccount" => address, "staker" => stake.staker, "withdrawer" => stake.withdrawer, "lamports" => stake.lamports },
            evidence,
        );
        // The withdrawer may set either authority: while the wallet holds it, it takes the
        // staker back. A foreign withdrawer leaves the wallet nothing to sign (the path says so).
        if emitted && !withdrawer_foreign {
            let why = format!(
                "Make the wallet the staker of stake account {address} again; the wallet, its withdrawer, signs."
            );
            let authorize = fixes::stake_authorize(&address, &wallet, &wallet, StakeAuthority::Staker, None, why);
            ctx.fix_last(vec![authorize]);
        }
    }
}
