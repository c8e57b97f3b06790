//! The scan's answer document (`data` of `POST /v1/developer/intelligence/transaction`): the
//! verdict, findings, effects, decoded instructions, the simulation's outcome and the
//! versions that produced it.
//!
//! Owns: `ScanReport` and its parts, serialized as they are (camelCase), and `build` (decoded
//! transaction + what the lane observed + labels + when and for which request → the report).
//! Pure; called on listener threads.
//!
//! Invariant: deterministic — findings and effects are sorted by their modules, instructions
//! are in message order, maps are ordered; the same transaction, origin and ledger state give
//! byte-identical bytes but for `account`, `scannedAt` and `requestId` (who asked, the
//! answer's time and request), serialized last in that order.
//! Invariant: `ScanReport`'s members are exactly `signing::SCAN_COVERS`, what a scan's
//! signature covers (the signer refuses any other set; a test in `signing` checks it).
//! Invariant: a simulation that did not run (skipped, failed, timed out, unreadable) empties
//! `effects` and says why in `simulation`. Findings come from the decoded instructions
//! (`findings`) and, when it ran, from what it showed (`executed`: tokens received under a
//! mint's control, authorities taken inside a program, sweeps); an unknown program given the
//! wallet is a finding only when it did not run (simulation first: one that ran and failed
//! shows that nothing but the fee changes). Without it, a sweep is
//! still judged from the decoded transfers applied to the accounts before.

use std::collections::BTreeMap;

use serde::Serialize;

use super::counterparties::Reach;
use super::effects::{self, Effect};
use super::executed::{self, BalancesFrom};
use super::findings::{self, Context, Finding, Simulation, Verdict};
use super::lane::{CounterpartiesOutcome, Observed, SimulationOutcome};
use super::signatures::{self, SignatureCheck};
use super::state::{self, Held, States};
use super::value;
use crate::config::SCAN_UPSTREAM_TEXT_BYTES_MAX;
use crate::engine::policy::{PolicyRef, SeverityRule};
use crate::engine::sweep::SweepThresholds;
use crate::guard::{GuardOptions, GuardsView, PredictedToken, Prediction, Scanned};
use crate::labels::domains::Origin;
use crate::labels::Labels;
use crate::ledger::instruction::{Instruction, Program};
use crate::ledger::transaction::Decoded;
use crate::ledger::wire::{Executor, Value};
use crate::pubkey::Pubkey;

/// Version of the scan's rules (findings and effects); in `engineVersions.scan`.
pub const SCAN_VERSION: &str = "1.4.0";

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScanReport {
    pub verdict: Verdict,
    pub signer: Pubkey,
    pub transaction: TransactionInfo,
    pub findings: Vec<Finding>,
    pub effects: Vec<Effect>,
    pub instructions: Vec<InstructionView>,
    pub simulation: SimulationView,
    pub counterparties: CounterpartiesView,
    /// `scan` and `signals` (the rules' versions) and `labels` (`Labels::digest` of the labels
    /// that judged it: signed, like the policy's version, since labels decide verdicts).
    pub engine_versions: BTreeMap<&'static str, String>,
    /// The account's policy whose allow- and deny-list the findings read (issue #31).
    pub policy: PolicyRef,
    /// The host of the request's `origin` as judged (`None`: no origin was sent). Signed, so a
    /// verdict made without the phishing origin cannot pass for one made with it.
    pub origin: Option<String>,
    /// The guards asked for (`guards` in the request; absent when not asked). Signed with the
    /// rest (`xray.scan.v3`): the guarded transaction is what the verdict was made for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guards: Option<GuardsView>,
    /// The account whose key asked (signed: a verdict names who it was made for).
    pub account: String,
    /// When it was scanned (`clock::rfc3339_ms`): signed, so a signed verdict says its time.
    pub scanned_at: String,
    /// The request's id (its `X-Request-Id`): signed, so a signed verdict names its request.
    pub request_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionInfo {
    /// `legacy` or `v0`.
    pub version: &'static str,
    /// Whether every required signature is there and verifies over this message (a scan reads
    /// unsigned and partly signed messages too: those are `false`).
    pub signed: bool,
    /// Each required signer's slot: `valid`, `missing` (zeros) or `invalid`.
    pub signatures: Vec<SignatureCheck>,
    /// SHA-256 of the message judged (the transaction after its signature section), lowercase
    /// hex: binds the signed verdict to these bytes and no others.
    pub message_sha256: String,
    pub fee_payer: Pubkey,
    pub accounts: usize,
    pub lookup_tables: Vec<Pubkey>,
    /// Accounts whose state before and after was asked for (`effects` cover these).
    pub accounts_read: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InstructionView {
    pub index: u16,
    pub program_id: Pubkey,
    /// The program's name when the service decodes it (`system`, `spl-token`, …), else the
    /// label's name, else `unknown`.
    pub program: String,
    /// The node's `parsed.type` (`transfer`, `approve`, …), or `unknown`.
    #[serde(rename = "type")]
    pub kind: String,
    pub accounts: Vec<Pubkey>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SimulationView {
    /// `ok`, `failed` (the transaction would fail), `skipped` (the source does not simulate),
    /// `timed_out` or `unavailable` (the source did not answer usably).
    pub status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The runtime's error when `failed`, as the node reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub units_consumed: Option<u64>,
    /// Who executed it, when it ran: `runtime` (the real runtime in process, on the source's
    /// accounts) or `node` (the node's `simulateTransaction`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<&'static str>,
    /// Why the runtime in process did not answer, when the node did in its place.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_skipped: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterpartiesView {
    /// Whether recipients and delegates were compared with the signer's earlier counterparties.
    pub checked: bool,
    /// Meaningful transactions of the signer's they were read from (its newest neither failed
    /// nor dust), when checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transactions: Option<usize>,
    /// How far back the read looked, when checked (`counterparties::Reach`'s members).
    #[serde(flatten)]
    pub reach: Option<Reach>,
    /// Why not checked; or, checked, why the read stopped short (`reach.exhausted`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What the report is built from.
pub struct Inputs<'a> {
    pub decoded: &'a Decoded,
    pub signer: Pubkey,
    /// The accounts the lane was asked about, in order.
    pub accounts: &'a [Pubkey],
    pub observed: &'a Observed,
    /// The labels in force with the account's lists laid over (`Policy::labels`).
    pub labels: &'a Labels,
    pub policy: &'a PolicyRef,
    /// The account's policy's severity overrides (`severityOverrides`: scan kinds among them).
    pub overrides: &'a BTreeMap<&'static str, SeverityRule>,
    /// Where the account's policy draws a sweep (`sweepThresholds`: `asset_sweep`).
    pub sweep: &'a SweepThresholds,
    /// The request's `origin`, when given.
    pub origin: Option<&'a Origin>,
    /// Each required signer's slot (`signatures::check`) and the message's digest.
    pub signatures: &'a [SignatureCheck],
    pub message_sha256: &'a str,
    /// The account whose key asked.
    pub account: &'a str,
    /// When the request came (Unix ms) and its id.
    pub scanned_at_ms: u64,
    pub request_id: &'a str,
    /// The request's `guards`, and the transaction's bytes to append them to.
    pub guard: Option<GuardRequest<'a>>,
}

/// A scan asked with guards.
#[derive(Debug, Clone, Copy)]
pub struct GuardRequest<'a> {
    pub options: GuardOptions,
    /// The transaction as sent.
    pub transaction: &'a [u8],
}

pub fn build(inputs: &Inputs<'_>) -> ScanReport {
    let known = match &inputs.observed.counterparties {
        CounterpartiesOutcome::Known(known) => Some(&known.addresses),
        _ => None,
    };
    let (diff, simulation) = simulated(inputs);
    // The accounts before: the simulation's diff holds them; without it, read them apart (for
    // a sweep judged from the decoded transfers, and a token amount's mint and decimals).
    let read_apart = match &diff {
        Some(_) => None,
        None => accounts_before(inputs),
    };
    let (signer, decoded) = (&inputs.signer, inputs.decoded);
    let (effects, balances) = match &diff {
        Some((pre, post)) => {
            let balances = value::from_states(signer, pre, post);
            (effects::effects(signer, pre, post, &balances), Some((balances, BalancesFrom::Simulation)))
        }
        // A transaction that would fail moves nothing: no balances to judge.
        None if simulation.status == "failed" => (Vec::new(), None),
        None => {
            let balances = read_apart.as_ref().and_then(|pre| value::from_decoded(decoded, signer, pre));
            (Vec::new(), balances.map(|b| (b, BalancesFrom::Decoded)))
        }
    };
    let ran = match &diff {
        Some(_) => Simulation::Ran(&effects),
        None if simulation.status == "failed" => Simulation::Failed,
        None => Simulation::NotRun { status: simulation.status, reason: simulation.reason.as_deref() },
    };
    let ctx = Context {
        signer: *signer,
        labels: inputs.labels,
        counterparties: known,
        origin: inputs.origin,
        simulation: ran,
        sweep: inputs.sweep,
        before: diff.as_ref().map(|(pre, _)| pre).or(read_apart.as_ref()),
    };
    let mut findings = findings::judge(decoded, &ctx);
    findings.extend(ctx.origin.and_then(|origin| super::origin::finding(origin, ctx.labels)));
    findings.extend(findings::invalid_signatures(inputs.signatures));
    if let Some((pre, post)) = &diff {
        findings.extend(executed::received(decoded, &effects, pre, post, &ctx));
        let hidden = executed::hidden_authority_changes(decoded, &effects, &findings, &ctx);
        findings.extend(hidden);
    }
    // The account's overrides first: a sweep weighs the authorities it hands away as the
    // account's policy rates them (one it ignores or lowers is not cited), then once more for
    // the sweep itself (idempotent for the rest).
    overridden(&mut findings, inputs.overrides);
    if let Some((balances, from)) = &balances {
        let fee_lamports = LAMPORTS_PER_SIGNATURE * inputs.signatures.len() as u64;
        findings.extend(executed::sweep(balances, *from, fee_lamports, &findings, &ctx));
        overridden(&mut findings, inputs.overrides);
    }
    findings::sort(&mut findings);
    let verdict = findings::verdict(&findings);
    let guards = inputs.guard.map(|request| guards(inputs, &request, verdict, diff.as_ref(), &simulation));
    let decoded = inputs.decoded;
    ScanReport {
        verdict,
        signer: inputs.signer,
        transaction: TransactionInfo {
            version: decoded.version.as_str(),
            signed: signatures::all_valid(inputs.signatures),
            signatures: inputs.signatures.to_vec(),
            message_sha256: inputs.message_sha256.to_owned(),
            fee_payer: decoded.fee_payer(),
            accounts: decoded.resolved.accounts.len(),
            lookup_tables: decoded.lookup_tables.clone(),
            accounts_read: inputs.accounts.len(),
        },
        findings,
        effects,
        instructions: decoded.instructions.iter().map(|ix| instruction_view(ix, inputs.labels)).collect(),
        simulation,
        counterparties: counterparties_view(&inputs.observed.counterparties),
        engine_versions: engine_versions(inputs.labels),
        policy: inputs.policy.clone(),
        origin: inputs.origin.map(|o| o.host.clone()),
        guards,
        account: inputs.account.to_owned(),
        scanned_at: crate::clock::rfc3339_ms(inputs.scanned_at_ms),
        request_id: inputs.request_id.to_owned(),
    }
}

/// The answer's `guards`: none for a transaction judged malicious or without a prediction;
/// else the signer's SOL and its token accounts (the signer's before or after) as predicted.
fn guards(
    inputs: &Inputs<'_>,
    request: &GuardRequest<'_>,
    verdict: Verdict,
    diff: Option<&Diff>,
    simulation: &SimulationView,
) -> GuardsView {
    let options = &request.options;
    if verdict == Verdict::Malicious {
        let reason = "the transaction is judged malicious: no guard makes it safe to sign";
        return GuardsView::withheld(options, reason.into());
    }
    let Some((pre, post)) = diff else {
        let reason = format!("the simulation is {}: there is no prediction to guard", simulation.status);
        return GuardsView::withheld(options, reason);
    };
    let signer = &inputs.signer;
    let before = |address: &Pubkey| match pre.get(address).map(|a| &a.held) {
        Some(Held::Token(t)) => Some(t),
        _ => None,
    };
    let token_accounts = post
        .iter()
        .filter_map(|(address, after)| match &after.held {
            Held::Token(t) if t.owner == *signer || before(address).is_some_and(|b| b.owner == *signer) => {
                Some(PredictedToken { after: t, amount_before: before(address).map_or(0, |b| b.amount) })
            }
            _ => None,
        })
        .collect();
    let prediction =
        Prediction { signer: *signer, signer_after: post.get(signer).map(|a| (a.lamports, a.owner)), token_accounts };
    let accounts: Vec<Pubkey> = inputs.decoded.resolved.accounts.iter().map(|a| a.address).collect();
    GuardsView::of(&prediction, options, Scanned { bytes: request.transaction, accounts: &accounts })
}

/// `engineVersions`: the rules' versions and the digest of the labels that judged.
pub(crate) fn engine_versions(labels: &Labels) -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        ("scan", SCAN_VERSION.to_owned()),
        ("signals", crate::engine::SIGNALS_VERSION.to_owned()),
        ("labels", labels.digest().to_owned()),
    ])
}

/// The account's overrides applied: an ignored kind is dropped, a set one takes its severity.
pub(crate) fn overridden(findings: &mut Vec<Finding>, overrides: &BTreeMap<&'static str, SeverityRule>) {
    if overrides.is_empty() {
        return;
    }
    findings.retain(|f| overrides.get(f.kind) != Some(&SeverityRule::Ignore));
    for finding in findings.iter_mut() {
        if let Some(SeverityRule::Set(severity)) = overrides.get(finding.kind) {
            finding.severity = *severity;
        }
    }
}

/// The fee of one signature, in lamports (the base fee; a sweep's share is net of it).
pub(crate) const LAMPORTS_PER_SIGNATURE: u64 = 5_000;

/// The accounts as they are before the transaction, when they read (without a simulation, a
/// sweep is judged from the decoded transfers applied to them: `value::from_decoded`).
fn accounts_before(inputs: &Inputs<'_>) -> Option<States> {
    let pre = inputs.observed.pre.as_ref().ok()?;
    state::read_all(inputs.accounts, &pre.value).ok()
}

pub(crate) fn counterparties_view(outcome: &CounterpartiesOutcome) -> CounterpartiesView {
    let unchecked =
        |reason: String| CounterpartiesView { checked: false, transactions: None, reach: None, reason: Some(reason) };
    match outcome {
        CounterpartiesOutcome::Known(known) => CounterpartiesView {
            checked: true,
            transactions: Some(known.transactions),
            reach: Some(known.reach.clone()),
            reason: known.shortfall.clone(),
        },
        CounterpartiesOutcome::NotAsked => {
            unchecked("the transaction sends and approves nothing of the signer's: no recipient to compare".into())
        }
        CounterpartiesOutcome::Unavailable(detail) => unchecked(unavailable(
            "the signer's history could not be read: look-alike recipients and never-seen delegates are not judged",
            detail,
        )),
    }
}

fn instruction_view(ix: &Instruction, labels: &Labels) -> InstructionView {
    let program = match ix.program {
        Program::Other => labels.get(&ix.program_id).map_or_else(|| "unknown".to_owned(), |l| l.name.clone()),
        known => known.name().to_owned(),
    };
    InstructionView {
        index: ix.index.outer,
        program_id: ix.program_id,
        program,
        kind: ix.name.clone(),
        accounts: ix.accounts.clone(),
    }
}

fn status(status: &'static str, reason: Option<String>) -> SimulationView {
    SimulationView {
        status,
        reason,
        error: None,
        slot: None,
        units_consumed: None,
        answered_by: None,
        runtime_skipped: None,
    }
}

/// An upstream's own words, logged whole and never repeated: they may name the provider's
/// project or key.
fn unavailable(what: &'static str, detail: &str) -> String {
    tracing::warn!(detail = cut(detail, LOGGED_DETAIL_BYTES_MAX), "scan: {what}");
    what.to_owned()
}

/// The first `bytes_max` bytes of `text`, cut back to a character boundary.
fn cut(text: &str, bytes_max: usize) -> &str {
    let mut end = text.len().min(bytes_max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The most of an upstream's message a log line keeps.
const LOGGED_DETAIL_BYTES_MAX: usize = 1_024;

/// The runtime's error value as the node sent it, or — past `SCAN_UPSTREAM_TEXT_BYTES_MAX`
/// bytes of JSON — its first bytes as text.
fn bounded_error(error: &Value) -> Value {
    let text = error.to_string();
    if text.len() <= SCAN_UPSTREAM_TEXT_BYTES_MAX {
        return error.clone();
    }
    Value::from(format!("{}… (cut)", cut(&text, SCAN_UPSTREAM_TEXT_BYTES_MAX)))
}

/// The accounts before and after the transaction, when the simulation ran and both read.
type Diff = (States, States);

/// The simulation's account and, when it ran and every account read, the states it compares.
fn simulated(inputs: &Inputs<'_>) -> (Option<Diff>, SimulationView) {
    let answer = match &inputs.observed.simulation {
        SimulationOutcome::Ran(answer) => answer,
        SimulationOutcome::Skipped(reason) => return (None, status("skipped", Some(reason.clone()))),
        SimulationOutcome::Unavailable(detail) => {
            let reason = unavailable("the ledger source did not simulate it", detail);
            return (None, status("unavailable", Some(reason)));
        }
        SimulationOutcome::TimedOut => {
            let reason = format!("no answer within {} ms", crate::config::SCAN_UPSTREAM_TIMEOUT_MS);
            return (None, status("timed_out", Some(reason)));
        }
    };
    let (slot, value) = (answer.context.slot, &answer.value);
    let mut view = SimulationView {
        status: "ok",
        reason: None,
        error: None,
        slot: Some(slot),
        units_consumed: value.units_consumed,
        answered_by: None,
        runtime_skipped: None,
    };
    match &value.executor {
        Some(Executor::Runtime) => view.answered_by = Some("runtime"),
        Some(Executor::Node { runtime_skipped }) => {
            view.answered_by = Some("node");
            view.runtime_skipped = runtime_skipped.as_deref().map(|r| cut(r, SCAN_UPSTREAM_TEXT_BYTES_MAX).to_owned());
        }
        None => {}
    }
    if let Some(error) = &value.err {
        view.status = "failed";
        view.error = Some(bounded_error(error));
        view.reason =
            Some("the transaction would fail: it would still pay its fee, and nothing else would change".to_owned());
        return (None, view);
    }
    let pre = match &inputs.observed.pre {
        Ok(pre) => state::read_all(inputs.accounts, &pre.value),
        Err(e) => Err(e.clone()),
    };
    let post = state::read_all(inputs.accounts, value.accounts.as_deref().unwrap_or_default());
    match (pre, post) {
        (Ok(pre), Ok(post)) => (Some((pre, post)), view),
        (Err(e), _) | (_, Err(e)) => {
            view.status = "unavailable";
            view.reason = Some(unavailable("the accounts before or after it could not be read", &e));
            (None, view)
        }
    }
}
