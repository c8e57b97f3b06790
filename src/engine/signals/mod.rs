//! Signal detection: every finding the X-Ray reports, with its facts and evidence.
//!
//! Owns: the signal catalogue (`CATALOGUE`: kind, dimension, default severity, rule,
//! remediation — the source of docs/signals.md, checked by a test), the detection context
//! `Ctx`, and the detectors, one file per dimension. Called by the engine on compute threads;
//! pure.
//!
//! Invariants: detectors run in a fixed order over ordered data, so ids (`sig_N`, `ev_N`) are
//! deterministic; every signal cites at least one evidence item (`Ctx::emit` refuses one that
//! does not); at most `SIGNALS_MAX` signals and `SIGNAL_EVIDENCE_MAX` evidence items per signal,
//! so a wallet with a huge history cannot blow up the payload.

mod assets;
mod authority;
mod behaviour;
mod catalogue;
mod counterparty;
mod quality;

pub use catalogue::{catalogue_json, catalogue_markdown, spec, SignalSpec, CATALOGUE, FIXES};

use crate::engine::evidence::EvidenceBook;
use crate::engine::fixes::FixInstruction;
use crate::engine::report::{Facts, Severity, Signal};
use crate::engine::sweep::SweepThresholds;
use crate::labels::Labels;
use crate::ledger::model::{Transaction, WalletView};

/// Signals kept per analysis.
pub const SIGNALS_MAX: usize = 200;
/// Evidence items one signal cites at most (the rest are counted in its facts).
pub const SIGNAL_EVIDENCE_MAX: usize = 8;
/// Fix instructions one signal carries at most: about what one transaction holds of the
/// largest kind (closeAccount, three accounts each).
pub const FIX_INSTRUCTIONS_MAX: usize = 20;

/// The state shared by detectors while one wallet is analyzed.
pub struct Ctx<'a> {
    pub view: &'a WalletView,
    pub labels: &'a Labels,
    pub book: EvidenceBook,
    pub signals: Vec<Signal>,
    /// Estimated unix time at the as-of slot, from the newest transaction (no clock is read).
    pub now_unix_s: Option<i64>,
    /// Where a sweep is drawn (`wallet_swept`): the account's policy's.
    pub sweep: SweepThresholds,
}

/// Mean slot time used to extrapolate from the newest block time to the as-of slot.
pub const SLOT_DURATION_MS: i64 = 400;

impl<'a> Ctx<'a> {
    pub fn new(view: &'a WalletView, labels: &'a Labels, sweep: SweepThresholds) -> Self {
        let newest = view.transactions.iter().filter_map(|t| Some((t.slot, t.block_time?))).max();
        let now_unix_s = newest.map(|(slot, time)| {
            // Slots and times come from the ledger: saturate rather than overflow.
            let ahead_slots = i64::try_from(view.coverage.as_of_slot.saturating_sub(slot)).unwrap_or(i64::MAX);
            time.saturating_add(ahead_slots.saturating_mul(SLOT_DURATION_MS) / 1000)
        });
        Ctx { view, labels, book: EvidenceBook::default(), signals: Vec::new(), now_unix_s, sweep }
    }

    /// Records a signal of `kind` (dimension from the catalogue). Signals without evidence are
    /// dropped: the contract promises every signal cites at least one item. Returns whether it
    /// was recorded (`fix_last` then applies to it).
    pub fn emit(
        &mut self,
        kind: &'static str,
        severity: Severity,
        title: String,
        detail: String,
        facts: Facts,
        mut evidence_ids: Vec<String>,
    ) -> bool {
        let spec = spec(kind);
        debug_assert!(spec.is_some(), "signal kind {kind} missing from the catalogue");
        let Some(spec) = spec else { return false };
        evidence_ids.dedup();
        evidence_ids.truncate(SIGNAL_EVIDENCE_MAX);
        if evidence_ids.is_empty() || self.signals.len() >= SIGNALS_MAX {
            return false;
        }
        let id = format!("sig_{}", self.signals.len() + 1);
        let dimension = spec.dimension;
        let fix_instructions = Vec::new();
        self.signals.push(Signal {
            id,
            kind,
            severity,
            dimension,
            title,
            detail,
            facts,
            evidence_ids,
            fix_instructions,
        });
        true
    }

    /// Attaches the instructions that fix the signal `emit` just recorded (call it only when
    /// `emit` returned true), at most `FIX_INSTRUCTIONS_MAX`.
    pub fn fix_last(&mut self, mut fixes: Vec<FixInstruction>) {
        debug_assert!(!self.signals.is_empty());
        fixes.truncate(FIX_INSTRUCTIONS_MAX);
        if let Some(signal) = self.signals.last_mut() {
            signal.fix_instructions = fixes;
        }
    }

    /// Transactions oldest first (the view holds them newest first).
    pub fn oldest_first(&self) -> impl Iterator<Item = &'a Transaction> {
        self.view.transactions.iter().rev()
    }

    pub fn wallet_signed(&self, tx: &Transaction) -> bool {
        tx.is_signer(&self.view.address)
    }

    /// A label's name for display, or the address itself.
    pub fn display(&self, address: &crate::pubkey::Pubkey) -> String {
        match self.labels.get(address) {
            Some(l) => format!("{} ({address})", l.name),
            None => address.to_string(),
        }
    }
}

/// Runs every detector in catalogue order and returns the signals with their evidence book;
/// `sweep` is where the account's policy draws a sweep.
pub fn detect(view: &WalletView, labels: &Labels, sweep: &SweepThresholds) -> (Vec<Signal>, EvidenceBook) {
    let mut ctx = Ctx::new(view, labels, *sweep);
    authority::detect(&mut ctx);
    assets::detect(&mut ctx);
    counterparty::detect(&mut ctx);
    behaviour::detect(&mut ctx);
    quality::detect(&mut ctx);
    (ctx.signals, ctx.book)
}

/// `facts!{"key" => value, …}` builds ordered facts (see `report::IntoFact` for the types).
#[macro_export]
macro_rules! facts {
    ($($k:literal => $v:expr),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut f = $crate::engine::report::Facts::new();
        $(f.insert($k, $crate::engine::report::IntoFact::into_fact($v));)*
        f
    }};
}
