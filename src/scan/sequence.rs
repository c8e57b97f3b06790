//! The answer to a scan of several transactions run in order on one state (`transactions:
//! [...]`, issue #44 item 2): each transaction judged on the state the ones before it leave, and
//! the whole judged on what it does in sum — a drain split over transactions that no single one
//! shows is a sweep of the sequence.
//!
//! Owns: `SequenceReport` (the `data` of the answer, signed `xray.scan_sequence.v1`: its members
//! are exactly `signing::SCAN_SEQUENCE_COVERS`) and `build`. Each transaction's part is
//! `report::build`'s, given the accounts as the applied transactions before it left them (the
//! accounts read before the first, overlaid with each applied one's post-state: every account a
//! transaction writes is among those it answers). The whole's `effects` are the signer's diff
//! from the state before the first to the state after the last; its `findings` are what that
//! diff shows (today a sweep, `executed::sweep`, on the sum of the balances moved). Pure, as
//! `report`.
//!
//! Invariant: a transaction applies when its simulation ran `ok`; one that failed or did not run
//! applies nothing (mode `sequence`: the next runs on the state without it), and in a bundle
//! nothing applies once one does not (`applied.transactions` is empty and says which).
//! Invariant: the verdict is the worst of every transaction's and of the whole's findings, and a
//! transaction's is the worse of its verdict in its place and alone (`alone`: on the ledger as
//! it is, every one after the first): neither the whole nor the transactions before it — which
//! need not land — make one transaction's verdict milder than a scan of it by itself.
//! Deliberately absent: guards (they bind one transaction's prediction: refused with
//! `transactions`), and the whole judged from decoded transfers when the transactions did not
//! run (each is still judged alone, from its own instructions).

use std::collections::BTreeMap;

use serde::Serialize;

use super::effects::{self, Effect};
use super::executed::{self, BalancesFrom};
use super::findings::{self, Context, Finding, Simulation, Verdict};
use super::lane::{CounterpartiesOutcome, Observed, ObservedSequence, SimulationOutcome};
use super::report::{self, CounterpartiesView, Inputs, InstructionView, SimulationView, TransactionInfo};
use super::signatures::SignatureCheck;
use super::state::{self, States};
use super::value;
use crate::engine::policy::{PolicyRef, SeverityRule};
use crate::engine::sweep::SweepThresholds;
use crate::labels::domains::Origin;
use crate::labels::Labels;
use crate::ledger::read::SequenceMode;
use crate::ledger::transaction::Decoded;
use crate::ledger::wire::{UiAccount, WithContext};
use crate::pubkey::Pubkey;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SequenceReport {
    /// The worst of every transaction's verdict and the whole's findings'.
    pub verdict: Verdict,
    pub signer: Pubkey,
    /// `sequence` or `bundle`, as asked.
    pub mode: &'static str,
    /// Each transaction judged on the state the applied ones before it leave, in order.
    pub transactions: Vec<SequenceItemView>,
    /// What the whole does that no single transaction need show (a sweep of the sum).
    pub findings: Vec<Finding>,
    /// The signer's effects from before the first transaction to after the last applied one.
    pub effects: Vec<Effect>,
    pub applied: AppliedView,
    pub counterparties: CounterpartiesView,
    pub engine_versions: BTreeMap<&'static str, String>,
    pub policy: PolicyRef,
    pub origin: Option<String>,
    pub account: String,
    pub scanned_at: String,
    pub request_id: String,
}

/// One transaction of the sequence: a scan's members of these names, judged in its place.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SequenceItemView {
    pub index: usize,
    /// The worse of its verdict in its place and alone.
    pub verdict: Verdict,
    pub transaction: TransactionInfo,
    pub findings: Vec<Finding>,
    pub effects: Vec<Effect>,
    pub instructions: Vec<InstructionView>,
    pub simulation: SimulationView,
    /// Every transaction after the first, judged by itself on the ledger as it is: what it does
    /// if it lands without the ones before it (nothing obliges them to land first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alone: Option<AloneView>,
}

/// A transaction of a sequence scanned by itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AloneView {
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub simulation: SimulationView,
}

/// Which transactions apply, and — when some do not — why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedView {
    pub transactions: Vec<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// One transaction as the endpoint read it.
pub struct Item<'a> {
    pub decoded: &'a Decoded,
    /// Its accounts whose state before and after is compared (all among the sequence's).
    pub accounts: &'a [Pubkey],
    pub signatures: &'a [SignatureCheck],
    pub message_sha256: &'a str,
}

/// What the report is built from (as `report::Inputs`, for several transactions).
pub struct SequenceInputs<'a> {
    pub items: &'a [Item<'a>],
    pub mode: SequenceMode,
    pub signer: Pubkey,
    /// Every transaction's accounts, in the order the lane read them before the first.
    pub accounts: &'a [Pubkey],
    pub observed: &'a ObservedSequence,
    pub labels: &'a Labels,
    pub policy: &'a PolicyRef,
    pub overrides: &'a BTreeMap<&'static str, SeverityRule>,
    pub sweep: &'a SweepThresholds,
    pub origin: Option<&'a Origin>,
    pub account: &'a str,
    pub scanned_at_ms: u64,
    pub request_id: &'a str,
}

/// Accounts as the applied transactions so far left them (`None`: closed or never existed).
type Now = BTreeMap<Pubkey, Option<UiAccount>>;

pub fn build(inputs: &SequenceInputs<'_>) -> SequenceReport {
    let observed = inputs.observed;
    let mut now: Option<Now> =
        observed.pre.as_ref().ok().map(|pre| inputs.accounts.iter().copied().zip(pre.value.iter().cloned()).collect());
    let first = now.clone();
    let mut transactions = Vec::with_capacity(inputs.items.len());
    let mut applied = Vec::new();
    for (index, item) in inputs.items.iter().enumerate() {
        let simulation = observed.simulations.get(index).cloned().unwrap_or_else(|| {
            SimulationOutcome::Unavailable(format!("no simulation was answered for transaction {index}"))
        });
        let one = Observed {
            pre: pre_of(observed, now.as_ref(), item.accounts),
            simulation,
            counterparties: observed.counterparties.clone(),
            here_us: 0,
        };
        let report = report::build(&item_inputs(inputs, item, &one));
        if let (SimulationOutcome::Ran(answer), Some(now)) = (&one.simulation, &mut now) {
            match report.simulation.status {
                "ok" => {
                    let post = answer.value.accounts.as_deref().unwrap_or_default();
                    now.extend(item.accounts.iter().copied().zip(post.iter().cloned()));
                }
                // A failed transaction that lands still pays its fee (a bundle's never lands).
                "failed" if inputs.mode == SequenceMode::Sequence => {
                    pay_fee(now, &item.decoded.fee_payer(), answer.value.fee);
                }
                _ => {}
            }
        }
        if report.simulation.status == "ok" {
            applied.push(index);
        }
        // Earlier transactions need not land: a later one is also judged on the ledger as it is
        // (what credits it or makes it fail in place cannot soften its verdict).
        let alone = (index > 0).then(|| alone(inputs, item, index, first.as_ref()));
        transactions.push(SequenceItemView {
            index,
            verdict: alone.as_ref().map_or(report.verdict, |a| a.verdict.max(report.verdict)),
            transaction: report.transaction,
            findings: report.findings,
            effects: report.effects,
            instructions: report.instructions,
            simulation: report.simulation,
            alone,
        });
    }
    let applied = applied_view(inputs.mode, applied, inputs.items.len());
    let (effects, findings) = match (&observed.pre, &now) {
        (Ok(read), Some(now)) if !applied.transactions.is_empty() => {
            whole(inputs, &read.value, now, &transactions, &applied.transactions)
        }
        _ => (Vec::new(), Vec::new()),
    };
    let verdict = transactions.iter().map(|t| t.verdict).chain([findings::verdict(&findings)]).max();
    SequenceReport {
        verdict: verdict.unwrap_or(Verdict::Benign),
        signer: inputs.signer,
        mode: match inputs.mode {
            SequenceMode::Sequence => "sequence",
            SequenceMode::Bundle => "bundle",
        },
        transactions,
        findings,
        effects,
        applied,
        counterparties: report::counterparties_view(&observed.counterparties),
        engine_versions: report::engine_versions(inputs.labels),
        policy: inputs.policy.clone(),
        origin: inputs.origin.map(|o| o.host.clone()),
        account: inputs.account.to_owned(),
        scanned_at: crate::clock::rfc3339_ms(inputs.scanned_at_ms),
        request_id: inputs.request_id.to_owned(),
    }
}

/// Transaction `index` judged by itself on the accounts before the first (`first`).
fn alone(inputs: &SequenceInputs<'_>, item: &Item<'_>, index: usize, first: Option<&Now>) -> AloneView {
    let observed = inputs.observed;
    let simulation = observed
        .alone
        .get(index.wrapping_sub(1))
        .cloned()
        .unwrap_or_else(|| SimulationOutcome::Unavailable(format!("transaction {index} was not simulated alone")));
    let one = Observed {
        pre: pre_of(observed, first, item.accounts),
        simulation,
        counterparties: observed.counterparties.clone(),
        here_us: 0,
    };
    let report = report::build(&item_inputs(inputs, item, &one));
    AloneView { verdict: report.verdict, findings: report.findings, simulation: report.simulation }
}

/// One transaction's `report::Inputs`, as a scan of it alone would have them.
fn item_inputs<'a>(inputs: &'a SequenceInputs<'a>, item: &'a Item<'a>, observed: &'a Observed) -> Inputs<'a> {
    Inputs {
        decoded: item.decoded,
        signer: inputs.signer,
        accounts: item.accounts,
        observed,
        labels: inputs.labels,
        policy: inputs.policy,
        overrides: inputs.overrides,
        sweep: inputs.sweep,
        origin: inputs.origin,
        signatures: item.signatures,
        message_sha256: item.message_sha256,
        account: inputs.account,
        scanned_at_ms: inputs.scanned_at_ms,
        request_id: inputs.request_id,
        guard: None,
    }
}

/// `accounts` as `state` holds them, in the answer's shape (`Err`: the accounts before were not
/// read).
fn pre_of(
    observed: &ObservedSequence,
    state: Option<&Now>,
    accounts: &[Pubkey],
) -> Result<WithContext<Vec<Option<UiAccount>>>, String> {
    match (&observed.pre, state) {
        (Ok(read), Some(state)) => Ok(WithContext { context: read.context, value: states_of(state, accounts) }),
        (Err(e), _) => Err(e.clone()),
        (Ok(_), None) => Err("the accounts before could not be read".to_owned()),
    }
}

/// `fee` lamports taken from `payer` (known when the source answered it, and the payer read).
fn pay_fee(now: &mut Now, payer: &Pubkey, fee: Option<u64>) {
    if let (Some(fee), Some(Some(account))) = (fee, now.get_mut(payer)) {
        account.lamports = account.lamports.saturating_sub(fee);
    }
}

/// `accounts` as `now` holds them (an account it does not hold does not exist).
fn states_of(now: &Now, accounts: &[Pubkey]) -> Vec<Option<UiAccount>> {
    accounts.iter().map(|a| now.get(a).cloned().flatten()).collect()
}

/// Which transactions apply, by the mode's rule.
fn applied_view(mode: SequenceMode, applied: Vec<usize>, len: usize) -> AppliedView {
    let left_out: Vec<String> = (0..len).filter(|i| !applied.contains(i)).map(|i| i.to_string()).collect();
    if left_out.is_empty() {
        return AppliedView { transactions: applied, reason: None };
    }
    let which = match left_out.len() {
        1 => format!("transaction {} does", left_out.join("")),
        _ => format!("transactions {} do", left_out.join(", ")),
    };
    match mode {
        SequenceMode::Bundle => AppliedView {
            transactions: Vec::new(),
            reason: Some(format!(
                "{which} not apply (a failure, or not run): a bundle is all or nothing, and nothing of it applies"
            )),
        },
        SequenceMode::Sequence => AppliedView {
            transactions: applied,
            reason: Some(format!(
                "{which} not apply (a failure, or not run): a failed one applies nothing but its fee, one that did \
                 not run nothing, and each after it ran on the state without it"
            )),
        },
    }
}

/// The whole's effects (before the first, after the last applied) and what they show.
fn whole(
    inputs: &SequenceInputs<'_>,
    first: &[Option<UiAccount>],
    now: &Now,
    transactions: &[SequenceItemView],
    applied: &[usize],
) -> (Vec<Effect>, Vec<Finding>) {
    let last = states_of(now, inputs.accounts);
    let (Ok(before), Ok(after)) = (state::read_all(inputs.accounts, first), state::read_all(inputs.accounts, &last))
    else {
        return (Vec::new(), Vec::new());
    };
    let signer = &inputs.signer;
    let balances = value::from_states(signer, &before, &after);
    let effects = effects::effects(signer, &before, &after, &balances);
    let findings = sweep_of_the_whole(inputs, &before, &effects, &balances, transactions, applied);
    (effects, findings)
}

/// A sweep judged on the sum of what the applied transactions move.
fn sweep_of_the_whole(
    inputs: &SequenceInputs<'_>,
    before: &States,
    effects: &[Effect],
    balances: &[crate::engine::sweep::Balance],
    transactions: &[SequenceItemView],
    applied: &[usize],
) -> Vec<Finding> {
    let known = match &inputs.observed.counterparties {
        CounterpartiesOutcome::Known(known) => Some(&known.addresses),
        _ => None,
    };
    let ctx = Context {
        signer: inputs.signer,
        labels: inputs.labels,
        counterparties: known,
        origin: inputs.origin,
        simulation: Simulation::Ran(effects),
        sweep: inputs.sweep,
        before: Some(before),
    };
    // Judged with the applied transactions' findings: an authority one of them hands away makes
    // the whole's sweep critical, as it would a single transaction's (one that did not apply
    // hands nothing away).
    let judged: Vec<Finding> =
        applied.iter().filter_map(|&i| transactions.get(i)).flat_map(|t| t.findings.iter().cloned()).collect();
    let signatures: usize = applied.iter().filter_map(|&i| inputs.items.get(i)).map(|i| i.signatures.len()).sum();
    let fee_lamports = report::LAMPORTS_PER_SIGNATURE * signatures as u64;
    let mut findings: Vec<Finding> =
        executed::sweep(balances, BalancesFrom::Simulation, fee_lamports, &judged, &ctx).into_iter().collect();
    for finding in &mut findings {
        finding.detail =
            format!("Run in order, the {} applied transactions together: {}", applied.len(), finding.detail);
    }
    report::overridden(&mut findings, inputs.overrides);
    findings::sort(&mut findings);
    findings
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_applies_follows_the_mode() {
        let all = applied_view(SequenceMode::Sequence, vec![0, 1, 2], 3);
        assert_eq!(all, AppliedView { transactions: vec![0, 1, 2], reason: None });
        let some = applied_view(SequenceMode::Sequence, vec![0, 2], 3);
        assert_eq!(some.transactions, [0, 2]);
        assert!(some.reason.is_some_and(|r| r.starts_with("transaction 1 does not apply")));
        let bundle = applied_view(SequenceMode::Bundle, vec![0], 3);
        assert_eq!(bundle.transactions, Vec::<usize>::new(), "a bundle is all or nothing");
        assert!(bundle.reason.is_some_and(|r| r.starts_with("transactions 1, 2 do not apply")));
        let whole = applied_view(SequenceMode::Bundle, vec![0, 1], 2);
        assert_eq!(whole, AppliedView { transactions: vec![0, 1], reason: None });
    }

    #[test]
    fn an_account_a_transaction_left_is_what_the_next_one_reads() {
        let (a, b) = (Pubkey([1; 32]), Pubkey([2; 32]));
        let account = |lamports: u64| -> UiAccount {
            let text = format!(
                r#"{{"lamports":{lamports},"owner":"11111111111111111111111111111111","data":["","base64"],"executable":false}}"#
            );
            serde_json::from_str(&text).expect("an account")
        };
        let mut now = Now::from([(a, Some(account(10))), (b, None)]);
        now.extend([(a, Some(account(7)))]);
        let read = states_of(&now, &[b, a, Pubkey([3; 32])]);
        assert_eq!(read.iter().map(|x| x.as_ref().map(|x| x.lamports)).collect::<Vec<_>>(), [None, Some(7), None]);
    }
}
