//! Counterparty risk: who the wallet deals with.
//!
//! Detectors: flagged programs invoked (outer or CPI), sanctioned addresses in any role, a
//! first funder that dealt with a sanctioned address (one hop out: `view.funder_hop`),
//! transfers with flagged addresses, a flagged first funder, address poisoning received, funds
//! sent to a look-alike, and a sweep: a transaction that moved most of the wallet's assets to
//! addresses it never dealt with before (`engine::sweep`, the scan's judgement, at the
//! account's policy's thresholds: `Ctx::sweep`).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::{Ctx, SIGNAL_EVIDENCE_MAX};
use crate::engine::flows::{self, Direction, Transfer};
use crate::engine::report::{with_list_reason, Severity};
use crate::engine::sweep::{self, Balance, Coin};
use crate::facts;
use crate::pubkey::Pubkey;

/// Characters at each end a look-alike shares with the real address.
pub const LOOKALIKE_AFFIX_LEN: usize = 4;

pub fn detect(ctx: &mut Ctx<'_>) {
    let flows = flows::transfers(ctx.view);
    flagged_programs(ctx);
    sanctioned(ctx, &flows);
    sanctioned_funder(ctx, &flows);
    flagged_transfers(ctx, &flows);
    flagged_funder(ctx, &flows);
    poisoning(ctx, &flows);
    sweeps(ctx, &flows);
}

/// The wallet's own accounts: its address and its token, nonce and stake accounts (a sweep
/// moves what they hold).
fn own_accounts(view: &crate::ledger::model::WalletView) -> HashSet<Pubkey> {
    let tokens = view.token_accounts.iter().map(|t| t.address);
    let nonces = view.nonce_accounts.iter().map(|n| n.address);
    let stakes = view.stake_accounts.iter().map(|s| s.address);
    std::iter::once(view.address).chain(tokens).chain(nonces).chain(stakes).collect()
}

/// The balances of one past transaction, by holder: the wallet for its own accounts
/// (`own`); a token account's owner as the node reports it; else the account itself.
fn balances(wallet: Pubkey, own: &HashSet<Pubkey>, tx: &crate::ledger::model::Transaction) -> Vec<Balance> {
    let token_owner = |account: &Pubkey| tx.token_changes.iter().find(|c| c.account == *account).and_then(|c| c.owner);
    let holder =
        |account: &Pubkey| if own.contains(account) { wallet } else { token_owner(account).unwrap_or(*account) };
    let sol = tx.sol_changes.iter().map(|c| Balance {
        holder: holder(&c.account),
        account: c.account,
        asset: Coin::Sol,
        before: c.pre,
        after: c.post,
    });
    let tokens = tx.token_changes.iter().map(|c| Balance {
        holder: c.owner.unwrap_or(c.account),
        account: c.account,
        asset: Coin::Token(c.mint),
        before: c.pre,
        after: c.post,
    });
    sol.chain(tokens).collect()
}

/// Transactions the wallet signed that swept it: most of its SOL or whole token balances to
/// addresses it had never dealt with, nothing back (whoever the recipient is: a drain). One
/// signal for the wallet — the newest sweep described, up to `SIGNAL_EVIDENCE_MAX` of them
/// cited, all counted — so a wallet that forwards everything it gets (a burner) cannot fill
/// the report's signals. One pass, oldest first: who the wallet dealt with before a
/// transaction grows as the walk goes (O(transactions + flows), not their product).
fn sweeps(ctx: &mut Ctx<'_>, flows: &[Transfer<'_>]) {
    let (view, labels, thresholds) = (ctx.view, ctx.labels, ctx.sweep);
    let own = own_accounts(view);
    let mut dealt: Vec<(u64, Pubkey)> =
        flows.iter().filter(|t| !t.is_dust()).map(|t| (t.tx.slot, t.counterparty)).collect();
    dealt.sort_unstable_by_key(|(slot, _)| *slot);
    let mut signed: Vec<&crate::ledger::model::Transaction> =
        view.transactions.iter().filter(|t| !t.failed() && t.is_signer(&view.address)).collect();
    signed.sort_by_key(|t| t.slot);
    let (mut before, mut next) = (HashSet::new(), 0);
    let mut found = Vec::new();
    for tx in signed {
        while let Some((_, counterparty)) = dealt.get(next).filter(|(slot, _)| *slot < tx.slot) {
            before.insert(*counterparty);
            next += 1;
        }
        let known = |address: &Pubkey| before.contains(address) || labels.vouches_for(address);
        if let Some(sweep) = sweep::judge(&view.address, &balances(view.address, &own, tx), tx.fee, known, &thresholds)
        {
            found.push((tx, sweep));
        }
    }
    let count = found.len();
    let Some((newest, sweep)) = found.pop() else { return };
    let to: Vec<String> = sweep.unknown_recipients.iter().map(Pubkey::to_string).collect();
    let sol = sweep.swept.iter().find(|s| s.asset == Coin::Sol).map_or(0, |s| s.share_percent());
    let tokens = sweep.swept.iter().filter(|s| s.asset != Coin::Sol).count();
    let summary = |swept: &sweep::Sweep| {
        let to: Vec<String> = swept.unknown_recipients.iter().map(Pubkey::to_string).collect();
        format!("swept {} asset(s) to {}", swept.swept.len(), to.join(", "))
    };
    let mut evidence = vec![ctx.book.transaction(newest, || summary(&sweep))];
    for (tx, older) in found.iter().rev().take(SIGNAL_EVIDENCE_MAX.saturating_sub(1)) {
        evidence.push(ctx.book.transaction(tx, || summary(older)));
    }
    let others = match count {
        1 => String::new(),
        n => format!(" It is the newest of {n} such transactions."),
    };
    ctx.emit(
        "wallet_swept",
        Severity::High,
        "The wallet was swept".to_owned(),
        format!(
            "Transaction {} moved {}{}{} of the wallet's assets to {}, addresses it had never dealt with, and \
             nothing came back: how a drainer empties a wallet.{others}",
            newest.signature,
            if sol > 0 { format!("{sol} % of its SOL") } else { String::new() },
            if sol > 0 && tokens > 0 { " and " } else { "" },
            if tokens > 0 { format!("the whole balance of {tokens} token(s)") } else { String::new() },
            to.join(", ")
        ),
        facts! { "signature" => newest.signature, "to" => to.join(","), "assetsSwept" => sweep.swept.len(),
        "solSharePercent" => sol, "sweeps" => count },
        evidence,
    );
}

fn flagged_programs(ctx: &mut Ctx<'_>) {
    let view = ctx.view;
    // program → evidence ids, in first-seen (newest-first) order; BTreeMap for a stable order.
    let mut by_program: BTreeMap<Pubkey, (Vec<String>, u32)> = BTreeMap::new();
    let labels = ctx.labels;
    for tx in view.transactions.iter().filter(|t| t.is_signer(&view.address)) {
        for ix in tx.instructions.iter().filter(|i| labels.is_flagged(&i.program_id)) {
            let entry = by_program.entry(ix.program_id).or_default();
            entry.1 += 1;
            if entry.0.len() < SIGNAL_EVIDENCE_MAX {
                let via = if ix.index.inner.is_some() { "through a CPI" } else { "directly" };
                entry
                    .0
                    .push(ctx.book.instruction(tx, ix, || {
                        format!("wallet-signed transaction invoked the flagged program {via}")
                    }));
            }
        }
    }
    for (program, (evidence, count)) in by_program {
        ctx.emit(
            "flagged_program_interaction",
            Severity::Critical,
            format!("Interaction with flagged program {}", ctx.display(&program)),
            format!("Transactions signed by the wallet invoked {program} {count} time(s)."),
            with_list_reason(facts! { "programId" => program, "invocations" => count }, ctx.labels, &program),
            evidence,
        );
    }
}

/// The roles sanctioned addresses play for the wallet, with their evidence.
type Roles = BTreeMap<Pubkey, (BTreeSet<&'static str>, Vec<String>)>;

fn add_role(roles: &mut Roles, party: Pubkey, role: &'static str, evidence: impl FnOnce() -> String) {
    let (named, cited) = roles.entry(party).or_default();
    named.insert(role);
    if cited.len() < SIGNAL_EVIDENCE_MAX {
        cited.push(evidence());
    }
}

/// Every role a sanctioned address plays for the wallet — a transfer either way, its first
/// funder, a delegate of one of its token accounts, the authority of a nonce or stake account
/// tied to it: one critical signal per address, naming the roles and the list.
fn sanctioned(ctx: &mut Ctx<'_>, flows: &[Transfer<'_>]) {
    let (view, labels) = (ctx.view, ctx.labels);
    let mut roles = Roles::new();
    for t in flows.iter().filter(|t| labels.is_sanctioned(&t.counterparty)) {
        let verb = if t.direction == Direction::Out { "sent" } else { "received" };
        let summary = || format!("{verb} {} with the sanctioned address", t.amount_text());
        add_role(&mut roles, t.counterparty, "transfer", || ctx.book.instruction(t.tx, t.ix, summary));
    }
    if let Some(first) = flows::first_funder(view, flows).filter(|f| labels.is_sanctioned(&f.counterparty)) {
        let summary = || format!("first funding: {} lamports", first.amount);
        add_role(&mut roles, first.counterparty, "funder", || ctx.book.instruction(first.tx, first.ix, summary));
    }
    let slot = view.coverage.as_of_slot;
    let held =
        view.token_accounts.iter().filter(|t| t.delegated_amount > 0).filter_map(|t| Some((t.address, t.delegate?)));
    for (account, delegate) in held.filter(|(_, d)| labels.is_sanctioned(d)) {
        let summary = || format!("token account delegates to {delegate}");
        add_role(&mut roles, delegate, "delegate", || ctx.book.account(&account, slot, summary));
    }
    let nonces = view.nonce_accounts.iter().map(|n| (n.address, n.authority));
    let stakes = view.stake_accounts.iter().flat_map(|s| [(s.address, s.staker), (s.address, s.withdrawer)]);
    for (account, authority) in nonces.chain(stakes).filter(|(_, a)| labels.is_sanctioned(a)) {
        let summary = || format!("account authority is {authority}");
        add_role(&mut roles, authority, "authority", || ctx.book.account(&account, slot, summary));
    }
    for (party, (named, evidence)) in roles {
        let list = labels.get(&party).and_then(|l| l.source.clone()).unwrap_or_else(|| "a sanctions list".to_owned());
        let named: Vec<&str> = named.into_iter().collect();
        ctx.emit(
            "sanctioned_counterparty",
            Severity::Critical,
            format!("Sanctioned address {}", ctx.display(&party)),
            format!("{party} is on {list}; it is the wallet's {}.", named.join(", ")),
            facts! { "counterparty" => party, "roles" => named.join(","), "list" => list },
            evidence,
        );
    }
}

/// The first funder's recent history (one hop out) holds transfers with sanctioned addresses:
/// one high signal per sanctioned address, citing the wallet's first funding and the funder's
/// transfers with it.
fn sanctioned_funder(ctx: &mut Ctx<'_>, flows: &[Transfer<'_>]) {
    let (view, labels) = (ctx.view, ctx.labels);
    let (Some(hop), Some(first)) = (view.funder_hop.as_deref(), flows::first_funder(view, flows)) else { return };
    if hop.address != first.counterparty {
        return;
    }
    let mut by_party: BTreeMap<Pubkey, Vec<Transfer<'_>>> = BTreeMap::new();
    for t in flows::transfers(hop).into_iter().filter(|t| labels.is_sanctioned(&t.counterparty)) {
        by_party.entry(t.counterparty).or_default().push(t);
    }
    let funder = hop.address;
    for (party, seen) in by_party {
        let funding = format!("first funding: {} lamports from {funder}", first.amount);
        let mut evidence = vec![ctx.book.instruction(first.tx, first.ix, || funding)];
        for t in seen.iter().take(SIGNAL_EVIDENCE_MAX - 1) {
            let verb = if t.direction == Direction::Out { "sent" } else { "received" };
            let summary = || format!("the funder {verb} {} with the sanctioned address", t.amount_text());
            evidence.push(ctx.book.instruction(t.tx, t.ix, summary));
        }
        let list = labels.get(&party).and_then(|l| l.source.clone()).unwrap_or_else(|| "a sanctions list".to_owned());
        let sent = seen.iter().filter(|t| t.direction == Direction::Out).count() as u32;
        let received = seen.len() as u32 - sent;
        ctx.emit(
            "sanctioned_funder_exposure",
            Severity::High,
            format!("First funder dealt with sanctioned address {}", ctx.display(&party)),
            format!(
                "The wallet's first funder {funder} made {} transfer(s) with {party} ({list}) among its {} most recent transactions: {sent} sent, {received} received.",
                seen.len(),
                hop.coverage.transactions_read
            ),
            facts! {
                "funder" => funder,
                "counterparty" => party,
                "list" => list,
                "transfersSent" => sent,
                "transfersReceived" => received,
                "funderTransactionsRead" => hop.coverage.transactions_read,
            },
            evidence,
        );
    }
}

fn flagged_transfers(ctx: &mut Ctx<'_>, flows: &[Transfer<'_>]) {
    let mut by_party: BTreeMap<Pubkey, Vec<&Transfer<'_>>> = BTreeMap::new();
    for t in flows.iter().filter(|t| ctx.labels.is_flagged(&t.counterparty)) {
        by_party.entry(t.counterparty).or_default().push(t);
    }
    for (party, list) in by_party {
        let sent: u32 = list.iter().filter(|t| t.direction == Direction::Out).count() as u32;
        let evidence = list
            .iter()
            .take(SIGNAL_EVIDENCE_MAX)
            .map(|t| {
                let verb = if t.direction == Direction::Out { "sent" } else { "received" };
                ctx.book.instruction(t.tx, t.ix, || format!("{verb} {} with the flagged address", t.amount_text()))
            })
            .collect();
        ctx.emit(
            "flagged_counterparty_transfer",
            Severity::High,
            format!("Transfers with flagged address {}", ctx.display(&party)),
            format!("{} transfer(s) with {party}: {sent} sent, {} received.", list.len(), list.len() as u32 - sent),
            with_list_reason(
                facts! { "counterparty" => party, "transfers" => list.len(), "sent" => sent },
                ctx.labels,
                &party,
            ),
            evidence,
        );
    }
}

fn flagged_funder(ctx: &mut Ctx<'_>, flows: &[Transfer<'_>]) {
    let Some(first) = flows::first_funder(ctx.view, flows) else { return };
    if !ctx.labels.is_flagged(&first.counterparty) {
        return;
    }
    let evidence =
        vec![ctx.book.instruction(first.tx, first.ix, || format!("first funding: {} lamports", first.amount))];
    ctx.emit(
        "flagged_funder",
        Severity::High,
        format!("Funded by flagged address {}", ctx.display(&first.counterparty)),
        format!("The wallet's first funding, {} lamports, came from {}.", first.amount, first.counterparty),
        with_list_reason(
            facts! { "funder" => first.counterparty, "lamports" => first.amount },
            ctx.labels,
            &first.counterparty,
        ),
        evidence,
    );
}

fn poisoning(ctx: &mut Ctx<'_>, flows: &[Transfer<'_>]) {
    // Real counterparties: non-dust transfers either way, from senders that are not look-alikes.
    let real: BTreeSet<Pubkey> = flows.iter().filter(|t| !t.is_dust()).map(|t| t.counterparty).collect();
    let mut poisoners: BTreeMap<Pubkey, Pubkey> = BTreeMap::new(); // look-alike → imitated
    for t in flows.iter().filter(|t| t.direction == Direction::In && t.is_dust()) {
        let Some(imitated) = real.iter().find(|r| flows::looks_alike(r, &t.counterparty, LOOKALIKE_AFFIX_LEN)) else {
            continue;
        };
        if poisoners.insert(t.counterparty, *imitated).is_some() {
            continue; // one signal per poisoner
        }
        let evidence =
            vec![ctx.book.instruction(t.tx, t.ix, || format!("dust of {} from a look-alike", t.amount_text()))];
        ctx.emit(
            "address_poisoning_received",
            Severity::Medium,
            "Address poisoning attempt".to_owned(),
            format!("{} sent dust imitating counterparty {imitated} (same first and last {LOOKALIKE_AFFIX_LEN} characters).", t.counterparty),
            t.amount_facts(facts! { "lookalike" => t.counterparty, "imitated" => imitated, "asset" => t.asset.label() }),
            evidence,
        );
    }
    for t in flows.iter().filter(|t| t.direction == Direction::Out && !t.is_dust()) {
        let Some(imitated) = poisoners.get(&t.counterparty) else { continue };
        let evidence = vec![ctx.book.instruction(t.tx, t.ix, || format!("sent {} to the look-alike", t.amount_text()))];
        ctx.emit(
            "sent_to_lookalike",
            Severity::Critical,
            "Funds sent to a look-alike address".to_owned(),
            format!("The wallet sent {} to {}, a look-alike of {imitated} that had sent it dust.", t.amount_text(), t.counterparty),
            t.amount_facts(facts! { "lookalike" => t.counterparty, "imitated" => imitated, "asset" => t.asset.label(), "signature" => t.tx.signature }),
            evidence,
        );
    }
}
