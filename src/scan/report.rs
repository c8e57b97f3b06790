//! The scan's answer document (`data` of `POST /v1/developer/intelligence/transaction`): the
//! verdict, findings, effects, decoded instructions, the simulation's outcome and the
//! versions that produced it.
//!
//! Owns: `ScanReport` and its parts, serialized as they are (camelCase), and `build` (decoded
//! transaction + what the lane observed + labels → the report). Pure; called on listener
//! threads.
//!
//! Invariant: deterministic — findings and effects are sorted by their modules, instructions
//! are in message order, maps are ordered; the same transaction and ledger state give
//! byte-identical bytes.
//! Invariant: a simulation that did not run (skipped, failed, timed out, unreadable) empties
//! `effects` and says why in `simulation`; it never removes a finding (findings come from the
//! decoded instructions alone).

use std::collections::BTreeMap;

use serde::Serialize;

use super::effects::{self, Effect};
use super::findings::{self, Context, Finding, Verdict};
use super::lane::{Observed, SimulationOutcome};
use super::state;
use crate::labels::Labels;
use crate::ledger::instruction::{Instruction, Program};
use crate::ledger::transaction::Decoded;
use crate::ledger::wire::Value;
use crate::pubkey::Pubkey;

/// Version of the scan's rules (findings and effects); in `engineVersions.scan`.
pub const SCAN_VERSION: &str = "1.0.0";

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
    pub engine_versions: BTreeMap<&'static str, &'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransactionInfo {
    /// `legacy` or `0`.
    pub version: &'static str,
    /// Whether every required signature is present (a scan reads unsigned messages too).
    pub signed: bool,
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
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterpartiesView {
    /// Whether recipients were compared with the signer's earlier counterparties.
    pub checked: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

/// What the report is built from.
pub struct Inputs<'a> {
    pub decoded: &'a Decoded,
    pub signer: Pubkey,
    /// The accounts the lane was asked about, in order.
    pub accounts: &'a [Pubkey],
    pub observed: &'a Observed,
    pub labels: &'a Labels,
}

pub fn build(inputs: &Inputs<'_>) -> ScanReport {
    let ctx = Context { signer: inputs.signer, labels: inputs.labels, counterparties: None };
    let findings = findings::judge(inputs.decoded, &ctx);
    let (effects, simulation) = simulated(inputs);
    let decoded = inputs.decoded;
    ScanReport {
        verdict: findings::verdict(&findings),
        signer: inputs.signer,
        transaction: TransactionInfo {
            version: decoded.version.as_str(),
            signed: decoded.signed,
            fee_payer: decoded.fee_payer(),
            accounts: decoded.resolved.accounts.len(),
            lookup_tables: decoded.lookup_tables.clone(),
            accounts_read: inputs.accounts.len(),
        },
        findings,
        effects,
        instructions: decoded.instructions.iter().map(|ix| instruction_view(ix, inputs.labels)).collect(),
        simulation,
        counterparties: CounterpartiesView {
            checked: false,
            reason: Some("the signer's earlier counterparties are not read by this version: look-alike recipients are not checked"),
        },
        engine_versions: BTreeMap::from([("scan", SCAN_VERSION), ("signals", crate::engine::SIGNALS_VERSION)]),
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
    SimulationView { status, reason, error: None, slot: None, units_consumed: None }
}

/// The effects and the simulation's account, from what the lane observed.
fn simulated(inputs: &Inputs<'_>) -> (Vec<Effect>, SimulationView) {
    let answer = match &inputs.observed.simulation {
        SimulationOutcome::Ran(answer) => answer,
        SimulationOutcome::Skipped(reason) => return (Vec::new(), status("skipped", Some(reason.clone()))),
        SimulationOutcome::Unavailable(reason) => return (Vec::new(), status("unavailable", Some(reason.clone()))),
        SimulationOutcome::TimedOut => {
            let reason = format!("no answer within {} ms", crate::config::SCAN_UPSTREAM_TIMEOUT_MS);
            return (Vec::new(), status("timed_out", Some(reason)));
        }
    };
    let (slot, value) = (answer.context.slot, &answer.value);
    let mut view = SimulationView {
        status: "ok",
        reason: None,
        error: None,
        slot: Some(slot),
        units_consumed: value.units_consumed,
    };
    if let Some(error) = &value.err {
        view.status = "failed";
        view.error = Some(error.clone());
        view.reason = Some("the transaction would fail: nothing but the fee would change".to_owned());
        return (Vec::new(), view);
    }
    let pre = match &inputs.observed.pre {
        Ok(pre) => state::read_all(inputs.accounts, &pre.value),
        Err(e) => Err(format!("the accounts before it could not be read: {e}")),
    };
    let post = state::read_all(inputs.accounts, value.accounts.as_deref().unwrap_or_default());
    match (pre, post) {
        (Ok(pre), Ok(post)) => (effects::effects(&inputs.signer, &pre, &post), view),
        (Err(e), _) | (_, Err(e)) => {
            view.status = "unavailable";
            view.reason = Some(e);
            (Vec::new(), view)
        }
    }
}
