//! Findings only execution shows: what the simulation's states say the transaction does to the
//! signer, whatever its instructions claim — tokens received of a mint that keeps control over
//! them, an authority taken by a program (a CPI, visible only in the post-state), and a sweep
//! of the wallet's assets to addresses it never dealt with (`engine::sweep`, the judgement the
//! X-Ray reads history with, at the asking account's thresholds: `Context::sweep`).
//!
//! Owns: `received`, `hidden_authority_changes` and `sweep`. Pure; called on listener threads
//! after the decoded instructions are judged (`findings::judge`).
//!
//! Invariant: an effect a decoded instruction's finding already names (same account) gives no
//! second finding; every other change of an authority over the signer's accounts is critical,
//! whichever program made it — being a known program never hides what the simulation shows.
//! Invariant: a sweep is `warning` or worse: `medium` for one asset, `high` for more, and
//! `critical` when a dApp asked for it (an `origin` was sent) or the transaction also hands
//! an authority away.
//! Deliberately absent: prices (see `engine::sweep`).

use super::effects::Effect;
use super::findings::{denied, is_bad, named, Context, Finding};
use super::state::{Held, States};
use crate::engine::report::{put_token_amount, with_list_reason, Fact, Facts, IntoFact, Severity};
use crate::engine::sweep::{self, Balance, Coin};
use crate::facts;
use crate::ledger::instruction::Program;
use crate::ledger::model::MintExtension;
use crate::ledger::transaction::Decoded;
use crate::pubkey::Pubkey;

/// Kinds of finding that hand an authority over the signer's assets away.
const AUTHORITY_KINDS: [&str; 6] = [
    "wallet_assign",
    "token_owner_change",
    "nonce_authority_change",
    "stake_authority_change",
    "hidden_authority_change",
    "token_close_authority_change",
];

/// What only the simulation tells: tokens the signer receives of a Token-2022 mint that keeps
/// control over them — a permanent delegate can take them back at any time; a transfer hook's
/// program runs on (and can refuse) every later transfer. Read from the mint as the accounts
/// before or after hold it (a mint the transaction does not name is not read).
pub fn received(tx: &Decoded, effects: &[Effect], pre: &States, post: &States, ctx: &Context<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for effect in effects {
        let Effect::Token { mint, delta, program: "spl-token-2022", decimals } = effect else { continue };
        if delta.starts_with('-') {
            continue;
        }
        let Some(Held::Mint(info)) = post.get(mint).or_else(|| pre.get(mint)).map(|s| &s.held) else { continue };
        let instruction = tx.instructions.iter().find(|ix| ix.accounts.contains(mint)).map(|ix| ix.index.outer);
        for extension in &info.extensions {
            match extension {
                MintExtension::PermanentDelegate { delegate: Some(delegate) } => out.push(Finding {
                    kind: "token2022_permanent_delegate",
                    severity: if is_bad(delegate, ctx.labels) { Severity::Critical } else { Severity::High },
                    title: format!("Receives tokens of {mint}, which {delegate} can take back at any time"),
                    detail: format!(
                        "Mint {mint} has a permanent delegate, {delegate}{}{}: it can transfer or burn these tokens \
                         from any account, this wallet's included, without its signature.",
                        named(delegate, ctx.labels),
                        denied(delegate, ctx.labels)
                    ),
                    instruction,
                    facts: with_list_reason(
                        received_facts(mint, *decimals, delta, "delegate", delegate),
                        ctx.labels,
                        delegate,
                    ),
                    fix_instructions: Vec::new(),
                }),
                MintExtension::TransferHook { program_id: Some(program), .. } => out.push(Finding {
                    kind: "token2022_transfer_hook",
                    severity: Severity::Medium,
                    title: format!("Receives tokens of {mint}, whose transfers run program {program}"),
                    detail: format!(
                        "Mint {mint} has a transfer hook: program {program}{} runs on every transfer of these tokens \
                         and can refuse it — tokens that can be received but not sold are a common trap.",
                        named(program, ctx.labels)
                    ),
                    instruction,
                    facts: received_facts(mint, *decimals, delta, "hookProgram", program),
                    fix_instructions: Vec::new(),
                }),
                _ => {}
            }
        }
    }
    out
}

/// The facts of tokens received of `mint` under the control of `who` (named `role`): the
/// amount (the signer's gain, base units) with its mint and decimals.
fn received_facts(mint: &Pubkey, decimals: u8, gained: &str, role: &'static str, who: &Pubkey) -> Facts {
    let mut facts = Facts::from([(role, who.into_fact())]);
    put_token_amount(&mut facts, "amount", gained, Some(mint), Some(decimals));
    facts
}

/// Fact names that carry the account a finding is about.
const ACCOUNT_FACTS: [&str; 3] = ["account", "nonceAccount", "stakeAccount"];

/// A text fact's value (an address), if it is one.
fn text(fact: Option<&Fact>) -> Option<&str> {
    match fact {
        Some(Fact::Text(text)) => Some(text),
        _ => None,
    }
}

/// Authorities over the signer's accounts that changed hands in the simulation without a
/// decoded instruction's finding naming them: made by a program through a CPI.
pub fn hidden_authority_changes(
    tx: &Decoded,
    effects: &[Effect],
    judged: &[Finding],
    ctx: &Context<'_>,
) -> Vec<Finding> {
    let named_accounts: Vec<&str> =
        judged.iter().flat_map(|f| ACCOUNT_FACTS.iter().filter_map(|k| text(f.facts.get(k)))).collect();
    let programs = undecoded_programs(tx, ctx);
    let mut out = Vec::new();
    for effect in effects {
        let Some((account, what, to)) = handed_away(effect, &ctx.signer) else { continue };
        if named_accounts.contains(&account.to_string().as_str()) {
            continue;
        }
        out.push(Finding {
            kind: "hidden_authority_change",
            severity: Severity::Critical,
            title: format!("Hands {what} of {account} to {to}, inside a program"),
            detail: format!(
                "No instruction of the transaction says so, but the simulation shows {what} of {account} going to \
                 {to}{}: a program ({programs}) made the change through a cross-program invocation. The new \
                 authority can then take what the account holds, and only it can hand it back.",
                named(&to, ctx.labels)
            ),
            instruction: None,
            facts: facts! { "account" => account, "authority" => what, "newAuthority" => to, "programs" => &programs },
            fix_instructions: Vec::new(),
        });
    }
    out
}

/// The account, which authority and to whom, when `effect` hands one of the signer's away.
fn handed_away(effect: &Effect, signer: &Pubkey) -> Option<(Pubkey, &'static str, Pubkey)> {
    let away = |to: &Pubkey| to != signer;
    match effect {
        Effect::AccountOwnerChange { account, to, .. } => Some((*account, "the owning program", *to)),
        Effect::TokenOwnerChange { account, to, .. } if away(to) => Some((*account, "ownership", *to)),
        // A delegate spending what it was approved keeps its delegation: nothing new handed over.
        Effect::TokenDelegateChange { account, from, to: Some(to), .. } if away(to) && *from != Some(*to) => {
            Some((*account, "a delegation", *to))
        }
        Effect::TokenCloseAuthorityChange { account, to: Some(to), .. } if away(to) => {
            Some((*account, "the close authority", *to))
        }
        Effect::NonceAuthorityChange { account, to, .. } if away(to) => Some((*account, "the nonce authority", *to)),
        Effect::StakeAuthorityChange { account, role, to, .. } if away(to) => {
            Some((*account, if *role == "staker" { "the staker authority" } else { "the withdrawer authority" }, *to))
        }
        _ => None,
    }
}

/// The programs of the transaction the service does not decode, by name or id (`none` when
/// every program is decoded: a decoded program's CPI).
fn undecoded_programs(tx: &Decoded, ctx: &Context<'_>) -> String {
    let mut names: Vec<String> = tx
        .instructions
        .iter()
        .filter(|ix| ix.program == Program::Other)
        .map(|ix| ctx.labels.get(&ix.program_id).map_or_else(|| ix.program_id.to_string(), |l| l.name.clone()))
        .collect();
    names.dedup();
    if names.is_empty() {
        "none of those it decodes".to_owned()
    } else {
        names.join(", ")
    }
}

/// How the balances a sweep is judged from were learned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalancesFrom {
    Simulation,
    /// The decoded transfers applied to the accounts before (no simulation).
    Decoded,
}

/// A sweep of the signer's assets to addresses it never dealt with (`engine::sweep`).
pub fn sweep(
    balances: &[Balance],
    from: BalancesFrom,
    fee_lamports: u64,
    judged: &[Finding],
    ctx: &Context<'_>,
) -> Option<Finding> {
    let known = |address: &Pubkey| {
        ctx.counterparties.is_some_and(|seen| seen.contains(address)) || ctx.labels.vouches_for(address)
    };
    let found = sweep::judge(&ctx.signer, balances, fee_lamports, known, ctx.sweep)?;
    let authority = judged.iter().find(|f| AUTHORITY_KINDS.contains(&f.kind) && f.severity == Severity::Critical);
    let (severity, why) = match (ctx.origin, authority) {
        (Some(origin), _) => (
            Severity::Critical,
            format!(
                " {} asked for it: a site that asks to move everything to a fresh address is a drainer.",
                origin.host
            ),
        ),
        (None, Some(f)) => (Severity::Critical, format!(" It also hands an authority away ({}).", f.kind)),
        (None, None) if found.swept.len() > 1 => (Severity::High, String::new()),
        (None, None) => (Severity::Medium, String::new()),
    };
    let what = swept_text(&found.swept);
    let to: Vec<String> = found.unknown_recipients.iter().map(Pubkey::to_string).collect();
    let seen = match ctx.counterparties {
        Some(_) => "this wallet never dealt with",
        None => "this wallet is not known to have dealt with (its history was not read)",
    };
    let how = match from {
        BalancesFrom::Simulation => "The simulation shows",
        BalancesFrom::Decoded => "Its instructions, applied to the accounts as they are, show",
    };
    let mut facts = facts! {
        "to" => to.join(","),
        "assetsSwept" => found.swept.len(),
        "balancesFrom" => if from == BalancesFrom::Simulation { "simulation" } else { "instructions" },
    };
    if let Some(sol) = found.swept.iter().find(|s| s.asset == Coin::Sol) {
        facts.insert("solSharePercent", sol.share_percent().into_fact());
    }
    Some(Finding {
        kind: "asset_sweep",
        severity,
        title: format!("Sends {what} to {} address{} {seen}", to.len(), if to.len() == 1 { "" } else { "es" }),
        detail: format!(
            "{how} {what} leaving the wallet for {} with nothing coming back — how drainers empty a wallet (a \
             sweep to a fresh address). If you are moving to a new wallet of your own, check its address in full.{why}",
            to.join(", ")
        ),
        instruction: None,
        facts,
        fix_instructions: Vec::new(),
    })
}

/// "96 % of its SOL and the whole balance of 2 tokens".
fn swept_text(swept: &[sweep::Swept]) -> String {
    let sol = swept.iter().find(|s| s.asset == Coin::Sol).map(|s| format!("{} % of its SOL", s.share_percent()));
    let tokens = swept.iter().filter(|s| s.asset != Coin::Sol).count();
    let tokens = match tokens {
        0 => None,
        1 => Some("the whole balance of a token".to_owned()),
        n => Some(format!("the whole balance of {n} tokens")),
    };
    match (sol, tokens) {
        (Some(sol), Some(tokens)) => format!("{sol} and {tokens}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => "nothing".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::engine::sweep::SweepThresholds;
    use crate::labels::Labels;
    use crate::ledger::transaction::message;
    use crate::scan::findings::Simulation;

    fn key(n: u8) -> Pubkey {
        Pubkey([n; 32])
    }

    const ME: u8 = 1;

    fn sol(holder: u8, before: u64, after: u64) -> Balance {
        Balance { holder: key(holder), account: key(holder), asset: Coin::Sol, before, after }
    }

    fn token(holder: u8, account: u8, before: u64, after: u64) -> Balance {
        Balance { holder: key(holder), account: key(account), asset: Coin::Token(key(90)), before, after }
    }

    fn swept(balances: &[Balance], origin: Option<&str>, judged: &[Finding]) -> Option<Finding> {
        swept_at(balances, origin, judged, &SweepThresholds::DEFAULT)
    }

    fn swept_at(
        balances: &[Balance],
        origin: Option<&str>,
        judged: &[Finding],
        thresholds: &SweepThresholds,
    ) -> Option<Finding> {
        let labels = Labels::builtin();
        let origin = origin.map(|o| crate::labels::domains::origin_of(o).expect("an origin"));
        let seen = BTreeSet::from([key(50)]);
        let ctx = Context {
            signer: key(ME),
            labels: &labels,
            counterparties: Some(&seen),
            origin: origin.as_ref(),
            simulation: Simulation::Ran(&[]),
            sweep: thresholds,
            before: None,
        };
        sweep(balances, BalancesFrom::Simulation, 5_000, judged, &ctx)
    }

    #[test]
    fn the_asking_accounts_thresholds_draw_the_sweep() {
        // 80 % of the SOL (net of the fee) to a stranger.
        let eighty = [sol(ME, 10_000_000_000, 1_999_995_000), sol(7, 0, 8_000_000_000)];
        assert_eq!(swept(&eighty, None, &[]), None, "below the default 90 %");
        let lower = SweepThresholds { sol_share_percent: 75, ..SweepThresholds::DEFAULT };
        let found = swept_at(&eighty, None, &[], &lower).expect("a sweep at 75 %");
        assert_eq!((found.kind, found.severity), ("asset_sweep", Severity::Medium));
        assert_eq!(found.facts["solSharePercent"], Fact::Unsigned(80));
        assert!(found.title.starts_with("Sends 80 % of its SOL"), "{}", found.title);
    }

    #[test]
    fn a_sweep_rises_with_the_assets_moved_and_is_critical_when_a_site_asked() {
        let sol_only = [sol(ME, 10_000_000_000, 100_000_000), sol(7, 0, 9_899_995_000)];
        let one = swept(&sol_only, None, &[]).expect("a sweep");
        assert_eq!((one.kind, one.severity), ("asset_sweep", Severity::Medium));
        assert_eq!(one.facts["solSharePercent"], Fact::Unsigned(98));
        assert_eq!(one.facts["to"], key(7).into_fact());
        let everything = [&sol_only[..], &[token(ME, 2, 500, 0), token(7, 3, 0, 500)]].concat();
        assert_eq!(swept(&everything, None, &[]).map(|f| f.severity), Some(Severity::High));
        let asked = swept(&sol_only, Some("claim-sol-airdrop.xyz"), &[]).expect("a sweep");
        assert_eq!(asked.severity, Severity::Critical);
        assert!(asked.detail.contains("claim-sol-airdrop.xyz"), "{}", asked.detail);
        // To a counterparty: no sweep.
        assert_eq!(swept(&[sol(ME, 10_000_000_000, 100_000_000), sol(50, 0, 9_899_995_000)], None, &[]), None);
    }

    #[test]
    fn an_authority_taken_inside_a_program_is_critical_unless_an_instruction_named_it() {
        let labels = Labels::builtin();
        let tx = crate::ledger::transaction::decode(
            &message::parse(&message::compile(key(ME), &[], [7; 32], false).expect("compiles")).expect("parses"),
            &[],
        )
        .expect("decodes");
        let effects = [
            Effect::TokenOwnerChange { account: key(2), mint: key(90), from: key(ME), to: key(9) },
            Effect::TokenDelegateChange {
                account: key(3),
                mint: key(90),
                from: None,
                to: None,
                amount: "0".into(),
                decimals: 6,
            },
        ];
        let ctx = Context {
            signer: key(ME),
            labels: &labels,
            counterparties: None,
            origin: None,
            simulation: Simulation::Ran(&effects),
            sweep: &SweepThresholds::DEFAULT,
            before: None,
        };
        let found = hidden_authority_changes(&tx, &effects, &[], &ctx);
        assert_eq!(found.len(), 1, "a revoked delegation hands nothing away: {found:?}");
        assert_eq!((found[0].kind, found[0].severity), ("hidden_authority_change", Severity::Critical));
        assert_eq!(found[0].facts["newAuthority"], key(9).into_fact());
        let named = Finding { facts: facts! { "account" => key(2) }, ..found[0].clone() };
        assert!(hidden_authority_changes(&tx, &effects, &[named], &ctx).is_empty());
    }
}
