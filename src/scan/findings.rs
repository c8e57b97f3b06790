//! Findings of a scan: which instructions of a transaction put the signer at risk, how badly,
//! and what the signer can sign later to undo it — judged from the decoded instructions, the
//! labels and what the caller knows of the signer (its counterparties), without simulation.
//!
//! Owns: `Finding`, `Verdict`, `Context`, `judge` (decoded transaction → findings, sorted) and
//! `verdict` (the worst finding's). Pure; called on listener threads.
//!
//! Invariant: every finding names the instruction it is about (`instruction`, the outer index)
//! except the transaction-wide ones (`durable_nonce`, the origin's, `invalid_signature`); findings are sorted by instruction, then
//! kind, then subject, so equal input gives byte-identical output.
//! Invariant: a finding is about the signer: an instruction that moves nothing of the signer's
//! and changes none of its authorities yields none, whatever else it does.
//! Simulation first: an unknown program given the wallet writable is a finding only when the
//! simulation did not run (`Context::simulation`); when it ran, what the program did is judged
//! from its effects (`executed`).
//! Invariant: facts are the engine's typed `Fact`s, their keys naming the unit — `lamports` a
//! JSON integer; a token amount (`amount`) a string of base units beside its `mint` and
//! `decimals` when known (`token_facts`); and `reason: "deny_list"` on a finding the account's
//! own deny list causes or makes worse (`engine::report::with_list_reason`).
//! Deliberately absent: CPIs and balances (what execution shows is `executed`'s).

use std::collections::BTreeSet;

use serde::Serialize;

use super::effects::Effect;
use super::signatures::{SignatureCheck, SignatureStatus};
use super::state::{Held, States};
use crate::engine::fixes::{self, FixInstruction, StakeAuthority};
use crate::engine::report::{put_token_amount, with_list_reason, Fact, Facts, IntoFact, Severity};
use crate::engine::sweep::SweepThresholds;
use crate::facts;
use crate::labels::domains::Origin;
use crate::labels::{Category, Labels};
use crate::ledger::instruction::{
    ids, Instruction, InstructionKind as K, Program, StakeAuthorityType, TokenAuthorityType,
};
use crate::ledger::model::TokenProgram;
use crate::ledger::transaction::Decoded;
use crate::pubkey::Pubkey;

/// What a scan concludes: the worst finding's severity, in the three words a wallet shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Benign,
    Warning,
    Malicious,
}

impl Verdict {
    /// Every verdict, mildest first.
    pub const ALL: [Verdict; 3] = [Verdict::Benign, Verdict::Warning, Verdict::Malicious];

    /// Its word on the wire (as serialized).
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Benign => "benign",
            Verdict::Warning => "warning",
            Verdict::Malicious => "malicious",
        }
    }

    fn of(severity: Severity) -> Verdict {
        match severity {
            Severity::Critical => Verdict::Malicious,
            Severity::High | Severity::Medium => Verdict::Warning,
            Severity::Low | Severity::Info => Verdict::Benign,
        }
    }
}

/// One thing the transaction would do that puts the signer at risk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    pub kind: &'static str,
    pub severity: Severity,
    pub title: String,
    pub detail: String,
    /// The outer instruction it is about (`None`: the whole transaction).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instruction: Option<u16>,
    /// Addresses and amounts the finding rests on, by name (sorted: deterministic output), in
    /// the X-Ray's types (`engine::report::Fact`): lamports and counts integers, token amounts
    /// strings of base units with their `mint` and `decimals`.
    pub facts: Facts,
    /// Unsigned instructions the signer can sign later to undo it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fix_instructions: Vec<FixInstruction>,
}

/// What the simulation showed, as the findings read it.
#[derive(Debug, Clone, Copy)]
pub enum Simulation<'a> {
    /// It ran and both states read: the signer's effects.
    Ran(&'a [Effect]),
    /// It ran and the transaction would fail: nothing but its fee would change (whatever its
    /// programs would have done is rolled back).
    Failed,
    /// It did not (skipped, failed, timed out, unavailable): the status and why.
    NotRun { status: &'static str, reason: Option<&'a str> },
}

/// What the scan knows besides the transaction.
pub struct Context<'a> {
    pub signer: Pubkey,
    pub labels: &'a Labels,
    /// Addresses the signer dealt with before (its latest X-Ray or a read of its recent
    /// history); `None` when the scan could not learn them (look-alike and never-seen checks
    /// are then skipped, and the answer says so).
    pub counterparties: Option<&'a BTreeSet<Pubkey>>,
    /// The dApp that asked for the signature (`origin`), when given (`super::origin` judges it).
    pub origin: Option<&'a Origin>,
    /// What the simulation showed (an unknown program is judged by it).
    pub simulation: Simulation<'a>,
    /// Where a sweep is drawn (`executed::sweep`): the asking account's policy's.
    pub sweep: &'a SweepThresholds,
    /// The accounts as they are before the transaction, when they read: a token amount's mint
    /// and decimals (`token_facts`).
    pub before: Option<&'a States>,
}

/// The verdict of a list of findings: the worst one's, `benign` for none.
pub fn verdict(findings: &[Finding]) -> Verdict {
    findings.iter().map(|f| Verdict::of(f.severity)).max().unwrap_or(Verdict::Benign)
}

/// Every finding of the transaction, sorted (see the module invariant).
pub fn judge(tx: &Decoded, ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(first) = tx.instructions.first() {
        if matches!(first.kind, K::NonceAdvance { .. }) {
            out.push(durable_nonce(first));
        }
    }
    for ix in &tx.instructions {
        judge_one(ix, tx, ctx, &mut out);
    }
    sort(&mut out);
    out
}

/// A signature slot that holds bytes which are not its signer's signature of this message: the
/// message was changed after it was signed (or the slot was filled by someone else). One
/// finding per such signer.
pub fn invalid_signatures(checks: &[SignatureCheck]) -> impl Iterator<Item = Finding> + '_ {
    checks.iter().filter(|c| c.status == SignatureStatus::Invalid).map(|c| Finding {
        kind: "invalid_signature",
        severity: Severity::Critical,
        title: format!("The signature of {} does not match this transaction", c.signer),
        detail: format!(
            "The transaction carries a signature for {} that is not a valid signature of this message: it was \
             changed after it was signed, or the signature was never the signer's. Do not sign or send it; ask \
             for the transaction again.",
            c.signer
        ),
        instruction: None,
        facts: facts! { "signer" => c.signer },
        fix_instructions: Vec::new(),
    })
}

/// The findings' order: by instruction, then kind, then facts.
pub fn sort(findings: &mut [Finding]) {
    findings.sort_by(|a, b| (a.instruction, a.kind, &a.facts).cmp(&(b.instruction, b.kind, &b.facts)));
}

fn judge_one(ix: &Instruction, tx: &Decoded, ctx: &Context<'_>, out: &mut Vec<Finding>) {
    let me = ctx.signer;
    match &ix.kind {
        K::SystemAssign { account, owner } if *account == me && owner.to_string() != ids::SYSTEM => {
            out.push(wallet_assigned(ix, owner, ctx))
        }
        K::TokenSetAuthority { target, authority_type, authority: Some(a), new_authority }
            if *a == me && *new_authority != Some(me) =>
        {
            out.extend(token_authority_moved(ix, target, authority_type, new_authority.as_ref(), ctx))
        }
        K::TokenApprove { account, delegate, owner, amount, mint } if *owner == me => {
            out.push(approval(ix, account, delegate, (*amount, *mint), tx, ctx))
        }
        K::NonceAuthorize { nonce, authority, new_authority } if *authority == me && *new_authority != me => {
            out.push(nonce_authorized_away(ix, nonce, new_authority, ctx))
        }
        K::NonceWithdraw { nonce, authority, to, lamports } if *authority == me && *to != me => {
            out.push(nonce_withdrawn(ix, nonce, to, *lamports, ctx))
        }
        K::StakeAuthorize { stake, authority, new_authority, authority_type }
            if *authority == me && *new_authority != me =>
        {
            out.push(stake_authorized_away(ix, stake, new_authority, *authority_type, tx, ctx))
        }
        K::SystemTransfer { from, to, lamports } if *from == me => {
            out.extend(transfer_to(ix, to, &Sent::Lamports(*lamports), ctx))
        }
        K::TokenTransfer { source, destination, authority, amount, mint } if *authority == me => {
            let sent = Sent::Tokens { amount: *amount, account: *source, mint: *mint };
            out.extend(transfer_to(ix, destination, &sent, ctx))
        }
        _ => {}
    }
    out.extend(program_finding(ix, tx, ctx));
}

/// A token amount of token account `account` into `facts`: `amount` (base units, a string),
/// the `mint` the instruction names or else the account's before the transaction, and the
/// `decimals` of the account (or of its mint) as read before it — each only when known.
fn token_facts(facts: &mut Facts, amount: u64, account: &Pubkey, mint: Option<Pubkey>, ctx: &Context<'_>) {
    let (mint, decimals) = token_of(account, mint, ctx.before);
    put_token_amount(facts, "amount", amount, mint.as_ref(), decimals);
}

/// The mint and decimals of token account `account` (`named`: the mint an instruction names),
/// from the states before the transaction.
fn token_of(account: &Pubkey, named: Option<Pubkey>, before: Option<&States>) -> (Option<Pubkey>, Option<u8>) {
    let held = |address: &Pubkey| before.and_then(|states| states.get(address)).map(|s| &s.held);
    let (mint, decimals) = match held(account) {
        Some(Held::Token(t)) => {
            (named.or(Some(t.mint)), Some(t.decimals).filter(|_| named.is_none_or(|m| m == t.mint)))
        }
        _ => (named, None),
    };
    let of_mint = || match mint.as_ref().and_then(held) {
        Some(Held::Mint(m)) => Some(m.decimals),
        _ => None,
    };
    (mint, decimals.or_else(of_mint))
}

/// `" — on this account's deny list"` when the account's policy denies `address` and the
/// labels do not flag it: said in the text of a finding it raised, beside `reason: "deny_list"`.
pub(super) fn denied(address: &Pubkey, labels: &Labels) -> &'static str {
    if labels.denied_only(address) {
        " — on this account's deny list"
    } else {
        ""
    }
}

/// `" (label name)"` when the labels know the address.
pub(super) fn named(address: &Pubkey, labels: &Labels) -> String {
    labels.get(address).map(|l| format!(" ({})", l.name)).unwrap_or_default()
}

/// Flagged or sanctioned: the labels' verdict on a counterparty.
pub(super) fn is_bad(address: &Pubkey, labels: &Labels) -> bool {
    // `is_flagged` counts the account's deny-list (a category does not).
    labels.is_flagged(address) || labels.is_sanctioned(address)
}

fn durable_nonce(first: &Instruction) -> Finding {
    let nonce = match &first.kind {
        K::NonceAdvance { nonce, .. } => nonce.to_string(),
        _ => String::new(),
    };
    Finding {
        kind: "durable_nonce",
        // Low: custody and offline signers use durable nonces for every payment; what the
        // transaction does is judged by the other findings (a policy can raise it).
        severity: Severity::Low,
        title: "This signature never expires".into(),
        detail: format!(
            "The transaction starts by advancing durable nonce {nonce}: it carries no recent blockhash, so whoever \
             holds the signed transaction can submit it at any time, not only in the next two minutes."
        ),
        instruction: None,
        facts: facts! { "nonceAccount" => nonce },
        fix_instructions: Vec::new(),
    }
}

fn wallet_assigned(ix: &Instruction, owner: &Pubkey, ctx: &Context<'_>) -> Finding {
    Finding {
        kind: "wallet_assign",
        severity: Severity::Critical,
        title: "Hands the wallet itself to a program".into(),
        detail: format!(
            "System `assign` makes program {owner}{} the owner of the wallet account: that program then controls \
             every lamport of it, and the wallet can never take it back.",
            named(owner, ctx.labels)
        ),
        instruction: Some(ix.index.outer),
        facts: facts! { "account" => ctx.signer, "newOwner" => owner },
        fix_instructions: Vec::new(),
    }
}

fn token_authority_moved(
    ix: &Instruction,
    target: &Pubkey,
    which: &TokenAuthorityType,
    new_authority: Option<&Pubkey>,
    ctx: &Context<'_>,
) -> Option<Finding> {
    // Removing the close authority gives closing back to the owner: nothing is handed away.
    if *which == TokenAuthorityType::CloseAccount && new_authority.is_none() {
        return None;
    }
    let (kind, severity, what) = match which {
        TokenAuthorityType::AccountOwner => ("token_owner_change", Severity::Critical, "ownership of token account"),
        // Critical too: a drainer's authority transfer (SolPhishHunter's second class) — the new
        // authority closes the account once it is emptied and keeps its rent, and no signature
        // of the wallet's can take it back.
        TokenAuthorityType::CloseAccount => {
            ("token_close_authority_change", Severity::Critical, "the close authority of")
        }
        _ => return None,
    };
    let to = new_authority.map_or_else(|| "nobody".to_owned(), |a| format!("{a}{}", named(a, ctx.labels)));
    Some(Finding {
        kind,
        severity,
        title: format!("Gives away {what} {target}"),
        detail: format!(
            "Token `setAuthority` hands {what} {target} to {to}. It moves no tokens now, so balance-based \
             simulators call it harmless; the new authority can then take the account's tokens (owner) or close \
             it and keep its rent (close authority), and only it can hand the authority back."
        ),
        instruction: Some(ix.index.outer),
        facts: facts! {
            "account" => target,
            "newAuthority" => new_authority.map(Pubkey::to_string).unwrap_or_default(),
        },
        fix_instructions: Vec::new(),
    })
}

/// True when an instruction of `tx` gives token account `account` another owner or closes
/// it: after that, no signature of the wallet's can revoke anything on it.
fn token_account_given_away(tx: &Decoded, account: &Pubkey) -> bool {
    tx.instructions.iter().any(|ix| match &ix.kind {
        K::TokenSetAuthority { target, authority_type: TokenAuthorityType::AccountOwner, .. } => target == account,
        K::TokenCloseAccount { account: closed, .. } => closed == account,
        _ => false,
    })
}

/// True when an instruction of `tx` hands the withdrawer of `stake` to another key.
fn stake_withdrawer_given_away(tx: &Decoded, stake: &Pubkey, signer: &Pubkey) -> bool {
    tx.instructions.iter().any(|ix| {
        matches!(&ix.kind, K::StakeAuthorize { stake: s, new_authority, authority_type: StakeAuthorityType::Withdrawer, .. }
            if s == stake && new_authority != signer)
    })
}

fn approval(
    ix: &Instruction,
    account: &Pubkey,
    delegate: &Pubkey,
    (amount, mint): (u64, Option<Pubkey>),
    tx: &Decoded,
    ctx: &Context<'_>,
) -> Finding {
    let unlimited = amount == u64::MAX;
    let never_seen = ctx.counterparties.is_some_and(|seen| !seen.contains(delegate));
    let severity = if is_bad(delegate, ctx.labels) || (unlimited && never_seen) {
        Severity::Critical
    } else if unlimited || never_seen {
        Severity::High
    } else {
        Severity::Medium
    };
    let how_much = if unlimited { "an unlimited amount".to_owned() } else { format!("{amount} base units") };
    let mut facts = facts! { "account" => account, "delegate" => delegate };
    token_facts(&mut facts, amount, account, mint, ctx);
    let seen = if never_seen { ", an address this wallet has never dealt with," } else { "" };
    // Only a revoke the wallet can still sign: none once the transaction gives the account away.
    let program = TokenProgram::of(ix.program).filter(|_| !token_account_given_away(tx, account));
    let revoke = program.map(|p| {
        fixes::token_revoke(p, account, &ctx.signer, format!("Revoke the delegation of token account {account}."))
    });
    Finding {
        kind: "token_approval",
        severity,
        title: format!("Lets {delegate} spend {how_much} from token account {account}"),
        detail: format!(
            "Token `approve` makes {delegate}{}{}{seen} a delegate of token account {account} for {how_much}: it \
             can move those tokens at any time without another signature.",
            named(delegate, ctx.labels),
            denied(delegate, ctx.labels)
        ),
        instruction: Some(ix.index.outer),
        facts: with_list_reason(facts, ctx.labels, delegate),
        fix_instructions: revoke.into_iter().collect(),
    }
}

fn nonce_authorized_away(ix: &Instruction, nonce: &Pubkey, new_authority: &Pubkey, ctx: &Context<'_>) -> Finding {
    Finding {
        kind: "nonce_authority_change",
        severity: Severity::Critical,
        title: format!("Gives durable nonce {nonce} to another authority"),
        detail: format!(
            "System `authorizeNonceAccount` hands nonce account {nonce} to {new_authority}{}: it can then advance \
             the nonce, and submit at any time transactions presigned with it.",
            named(new_authority, ctx.labels)
        ),
        instruction: Some(ix.index.outer),
        facts: facts! { "nonceAccount" => nonce, "newAuthority" => new_authority },
        fix_instructions: Vec::new(),
    }
}

fn nonce_withdrawn(ix: &Instruction, nonce: &Pubkey, to: &Pubkey, lamports: u64, ctx: &Context<'_>) -> Finding {
    let severity = if is_bad(to, ctx.labels) { Severity::Critical } else { Severity::Medium };
    Finding {
        kind: "nonce_withdraw",
        severity,
        title: format!("Withdraws {lamports} lamports from nonce {nonce} to another address"),
        detail: format!(
            "System `withdrawNonceAccount` sends {lamports} lamports of nonce account {nonce} to {to}{}{}.",
            named(to, ctx.labels),
            denied(to, ctx.labels)
        ),
        instruction: Some(ix.index.outer),
        facts: with_list_reason(facts! { "nonceAccount" => nonce, "to" => to, "lamports" => lamports }, ctx.labels, to),
        fix_instructions: Vec::new(),
    }
}

fn stake_authorized_away(
    ix: &Instruction,
    stake: &Pubkey,
    new_authority: &Pubkey,
    which: StakeAuthorityType,
    tx: &Decoded,
    ctx: &Context<'_>,
) -> Finding {
    let (role, severity) = match which {
        StakeAuthorityType::Withdrawer => ("withdrawer", Severity::Critical),
        StakeAuthorityType::Staker => ("staker", Severity::High),
    };
    // A staker handed away can be taken back by the withdrawer — while the wallet still is it.
    let fixable = which == StakeAuthorityType::Staker && !stake_withdrawer_given_away(tx, stake, &ctx.signer);
    let fix = fixable.then(|| {
        let why = format!("Make the wallet the staker of stake account {stake} again (it is still the withdrawer).");
        fixes::stake_authorize(stake, &ctx.signer, &ctx.signer, StakeAuthority::Staker, None, why)
    });
    Finding {
        kind: "stake_authority_change",
        severity,
        title: format!("Makes {new_authority} the {role} of stake account {stake}"),
        detail: format!(
            "Stake `authorize` hands the {role} authority of {stake} to {new_authority}{}. A foreign withdrawer can \
             withdraw the whole stake; a foreign staker can redelegate or deactivate it.",
            named(new_authority, ctx.labels)
        ),
        instruction: Some(ix.index.outer),
        facts: facts! { "stakeAccount" => stake, "newAuthority" => new_authority, "role" => role },
        fix_instructions: fix.into_iter().collect(),
    }
}

/// What a transfer of the signer's sends, as its findings state it.
enum Sent {
    Lamports(u64),
    /// Base units out of the signer's token account `account` (`mint`: the one the instruction
    /// names, if any).
    Tokens {
        amount: u64,
        account: Pubkey,
        mint: Option<Pubkey>,
    },
}

impl Sent {
    /// The amount with its unit, for the finding's text.
    fn text(&self, ctx: &Context<'_>) -> String {
        match self {
            Sent::Lamports(lamports) => format!("{lamports} lamports"),
            Sent::Tokens { amount, account, mint } => match token_of(account, *mint, ctx.before).0 {
                Some(mint) => format!("{amount} base units of mint {mint}"),
                None => format!("{amount} base units"),
            },
        }
    }

    /// The amount as facts: `lamports`, or `amount` with its `mint` and `decimals`.
    fn put(&self, facts: &mut Facts, ctx: &Context<'_>) {
        match self {
            Sent::Lamports(lamports) => {
                facts.insert("lamports", Fact::Unsigned(*lamports));
            }
            Sent::Tokens { amount, account, mint } => token_facts(facts, *amount, account, *mint, ctx),
        }
    }
}

/// A transfer of the signer's to a flagged or sanctioned address — the labels' verdict, or the
/// account's own deny list (then said, and `reason: "deny_list"`) — or to a look-alike of one
/// of its counterparties (address poisoning: first and last four characters equal, not the
/// address).
fn transfer_to(ix: &Instruction, to: &Pubkey, sent: &Sent, ctx: &Context<'_>) -> Option<Finding> {
    let labels = ctx.labels;
    let amount = sent.text(ctx);
    let mut facts = facts! { "to" => to };
    sent.put(&mut facts, ctx);
    let flagged = labels.is_flagged(to).then_some(Category::Flagged);
    let (kind, title, why) = match labels.category(to).filter(|c| *c == Category::Sanctioned).or(flagged) {
        Some(Category::Sanctioned) => {
            ("sanctioned_recipient", "Sends to a sanctioned address", "is on a sanctions list")
        }
        // The account's own list, not the labels: said so, whatever else the labels say.
        Some(Category::Flagged) if labels.denied_only(to) => (
            "flagged_recipient",
            "Sends to an address on this account's deny list",
            "is on this account's deny list (its policy's `denyList`)",
        ),
        Some(Category::Flagged) => ("flagged_recipient", "Sends to a flagged address", "is flagged as malicious"),
        _ => {
            let real = lookalike_of(to, ctx.counterparties?)?;
            let detail = format!(
                "Sends {amount} to {to}, which is not {real} — an address this wallet dealt with — but matches its \
                 first and last four characters: the mark of address poisoning. Check the whole address."
            );
            facts.insert("lookalikeOf", real.into_fact());
            return Some(Finding {
                kind: "lookalike_recipient",
                severity: Severity::Critical,
                title: format!("Sends to a look-alike of {real}"),
                detail,
                instruction: Some(ix.index.outer),
                facts,
                fix_instructions: Vec::new(),
            });
        }
    };
    Some(Finding {
        kind,
        severity: Severity::Critical,
        title: title.into(),
        detail: format!("Sends {amount} to {to}{}, which {why}.", named(to, labels)),
        instruction: Some(ix.index.outer),
        facts: with_list_reason(facts, labels, to),
        fix_instructions: Vec::new(),
    })
}

/// The counterparty `address` imitates, if any (never itself).
fn lookalike_of(address: &Pubkey, seen: &BTreeSet<Pubkey>) -> Option<Pubkey> {
    let text = address.to_string();
    let ends = |s: &str| (s.get(..4).map(str::to_owned), s.get(s.len().saturating_sub(4)..).map(str::to_owned));
    let mine = ends(&text);
    seen.iter().find(|real| **real != *address && ends(&real.to_string()) == mine).copied()
}

/// A flagged program, or an unknown one given the signer's writable accounts.
fn program_finding(ix: &Instruction, tx: &Decoded, ctx: &Context<'_>) -> Option<Finding> {
    let program = &ix.program_id;
    if is_bad(program, ctx.labels) {
        let why = if ctx.labels.denied_only(program) { "on this account's deny list" } else { "flagged as malicious" };
        return Some(Finding {
            kind: "flagged_program",
            severity: Severity::Critical,
            title: format!("Calls flagged program {program}"),
            detail: format!("Instruction {} invokes {program}{}, {why}.", ix.index, named(program, ctx.labels)),
            instruction: Some(ix.index.outer),
            facts: with_list_reason(facts! { "programId" => program }, ctx.labels, program),
            fix_instructions: Vec::new(),
        });
    }
    let known = ix.program != Program::Other || ctx.labels.get(program).is_some();
    let writable_of_signer = ix.accounts.iter().any(|a| *a == ctx.signer && is_writable(tx, a));
    // Simulation first: when it ran, what the program did is in the effects — an authority it
    // took is a `hidden_authority_change`, assets it moved are effects (and a sweep when they
    // are everything) — so the program being unknown adds nothing to judge; when it ran and
    // failed, the program changes nothing (the answer says the transaction would fail).
    let Simulation::NotRun { status, reason } = ctx.simulation else { return None };
    (!known && writable_of_signer).then(|| Finding {
        kind: "unknown_program_writable",
        severity: Severity::Medium,
        title: format!("Gives unknown program {program} the wallet as a writable account"),
        detail: format!(
            "Instruction {} calls {program}, a program the labels do not know, with the wallet writable, and the \
             simulation did not show what it does ({status}{}): it could move the wallet's SOL or take an \
             authority.",
            ix.index,
            reason.map(|r| format!(": {r}")).unwrap_or_default()
        ),
        instruction: Some(ix.index.outer),
        facts: facts! { "programId" => program, "simulation" => status },
        fix_instructions: Vec::new(),
    })
}

fn is_writable(tx: &Decoded, address: &Pubkey) -> bool {
    tx.resolved.accounts.iter().any(|a| a.address == *address && a.writable)
}
