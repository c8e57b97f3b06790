//! One job's work: read the ledger, classify, run the engine, serialize the payload.
//!
//! Owns: `JobSpec` (what to compute), `Outcome` (what came of it: the payload bytes served
//! under `data.xray` / `data.comparison`, or the contract's failure code) and `execute`.
//! Runs on compute threads, inside their current-thread runtime; async only for the ledger
//! reads, the engine runs inline.
//!
//! Invariant: every failure maps to one of the contract's FAILED codes —
//! `ACCOUNT_NOT_ELIGIBLE` (ledger-side classification), `UPSTREAM_UNAVAILABLE` (the source
//! failed after its bounded retries), `ANALYSIS_FAILED` (anything else) — and its message
//! never carries an RPC URL or other internals.

use crate::eligibility;
use crate::engine::policy::Policy;
use crate::engine::report::Score;
use crate::engine::{self, compare};
use crate::error_code::ErrorCode;
use crate::labels::Labels;
use crate::ledger::read::LedgerSource;
use crate::ledger::view::{build_view_unless, read_hop, Detail, ViewOptions};
use crate::ledger::{LedgerError, WalletView};
use crate::pubkey::Pubkey;

/// What a job computes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobSpec {
    Analysis {
        wallet: Pubkey,
    },
    /// `reuse` names fresh READY analyses (ids) of wallet A and B, if the account has them:
    /// the comparison cites them and takes their scores instead of fresh ones.
    Comparison {
        wallet_a: Pubkey,
        wallet_b: Pubkey,
        reuse: [Option<String>; 2],
    },
}

/// Reads the score of a stored READY analysis made under `policy` (`None`: gone, unreadable
/// or made under another policy or engine: compute afresh).
pub trait ReusedScores {
    fn score_of(&self, analysis_id: &str, policy: &Policy) -> Option<Score>;
}

/// No reuse (the CLI, tests).
impl ReusedScores for () {
    fn score_of(&self, _: &str, _: &Policy) -> Option<Score> {
        None
    }
}

/// A FAILED job's contract code: the subset of `ErrorCode` a job can end with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailCode {
    AccountNotEligible,
    UpstreamUnavailable,
    AnalysisFailed,
}

impl FailCode {
    pub fn code(self) -> ErrorCode {
        match self {
            FailCode::AccountNotEligible => ErrorCode::AccountNotEligible,
            FailCode::UpstreamUnavailable => ErrorCode::UpstreamUnavailable,
            FailCode::AnalysisFailed => ErrorCode::AnalysisFailed,
        }
    }

    pub fn as_str(self) -> &'static str {
        self.code().as_str()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The exact JSON bytes of the payload.
    Ready {
        payload: Vec<u8>,
    },
    Failed {
        code: FailCode,
        message: String,
    },
}

impl Outcome {
    fn failed(code: FailCode, message: impl Into<String>) -> Outcome {
        Outcome::Failed { code, message: message.into() }
    }

    /// The outcome of a run that panicked (a bug): `ANALYSIS_FAILED`, saying nothing more.
    pub fn panicked() -> Outcome {
        Outcome::failed(FailCode::AnalysisFailed, "the analysis failed unexpectedly")
    }

    /// The outcome of a job whose every start took its process down: `ANALYSIS_FAILED`.
    /// The job's deadline passed (nearly always waiting on the ledger source).
    pub fn out_of_time(deadline: std::time::Duration) -> Outcome {
        let message = format!(
            "the analysis did not finish within its time budget of {} s: the ledger source answered too slowly",
            deadline.as_secs()
        );
        Outcome::failed(FailCode::UpstreamUnavailable, message)
    }

    /// The outcome of a ticket whose job is not live in the store (withdrawn after its
    /// admission could not be made durable, or finished already): never run, and its
    /// completion, refused by the store, settles nothing.
    pub fn not_live() -> Outcome {
        Outcome::failed(FailCode::AnalysisFailed, "the job is not live: not run")
    }

    pub fn never_finished(starts: u32) -> Outcome {
        let message = format!("the analysis was started {starts} times and its process stopped each time before it finished; it is not run again");
        Outcome::failed(FailCode::AnalysisFailed, message)
    }
}

fn ledger_failure(e: &LedgerError) -> Outcome {
    match e {
        LedgerError::OverBudget(message) => Outcome::failed(FailCode::AnalysisFailed, message.clone()),
        LedgerError::Unavailable(_) => {
            Outcome::failed(FailCode::UpstreamUnavailable, "the ledger source did not answer after bounded retries")
        }
        LedgerError::Malformed(_) => {
            Outcome::failed(FailCode::UpstreamUnavailable, "the ledger source sent malformed data")
        }
        _ => Outcome::failed(FailCode::AnalysisFailed, "the ledger source refused the request"),
    }
}

/// Reads and classifies one wallet, then its first funder one hop out when `labels` want it;
/// `Err` is the job's failure.
async fn eligible_view<S: LedgerSource>(
    source: &S,
    wallet: &Pubkey,
    options: ViewOptions,
    labels: &Labels,
) -> Result<WalletView, Outcome> {
    let mut view = build_view_unless(source, wallet, options, eligibility::refused_by_account).await.map_err(|e| {
        tracing::warn!(error = %e, "ledger read failed");
        ledger_failure(&e)
    })?;
    eligibility::classify_ledger(&view).map_err(|i| {
        Outcome::failed(FailCode::AccountNotEligible, format!("{wallet}: {} ({})", i.message(), i.reason()))
    })?;
    if options.detail == Detail::Full {
        add_funder_hop(source, &mut view, labels).await;
    }
    Ok(view)
}

/// Reads the recent history of the wallet's first funder into `view.funder_hop` when the labels
/// want it (`flows::hop_funder`). The hop only adds to the X-Ray, so a failed read does not fail
/// the job: the hop is kept empty and marked incomplete, which its coverage reports.
pub async fn add_funder_hop<S: LedgerSource>(source: &S, view: &mut WalletView, labels: &Labels) {
    let Some(funder) = engine::flows::hop_funder(view, labels) else { return };
    let hop = read_hop(source, &funder).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "the first funder's history could not be read; the hop is left incomplete");
        let mut empty = WalletView { address: funder, ..WalletView::default() };
        empty.coverage.source = source.name().to_owned();
        empty.coverage.history_truncated = true;
        empty
    });
    view.funder_hop = Some(Box::new(hop));
}

fn payload<T: serde::Serialize>(value: &T) -> Outcome {
    match serde_json::to_vec(value) {
        Ok(payload) => Outcome::Ready { payload },
        Err(e) => {
            tracing::error!(error = %e, "payload serialization failed");
            Outcome::failed(FailCode::AnalysisFailed, "the analysis could not be serialized")
        }
    }
}

/// A comparison side's score and the id of the analysis it comes from: a reused analysis's
/// when the store still has it (`reused`), else a fresh X-Ray's of `view`.
fn side_score(
    view: &WalletView,
    labels: &Labels,
    policy: &Policy,
    reused: Option<(String, Score)>,
) -> (Score, Option<String>) {
    match reused {
        Some((id, score)) => (score, Some(id)),
        None => (engine::analyze_with(view, labels, policy).score, None),
    }
}

/// The fetch plan of a comparison side: a side whose score comes from a stored analysis reads
/// only what linking needs (`Detail::Links`: no nonce search, mints or funder hop).
fn side_options(options: ViewOptions, reused: &Option<(String, Score)>) -> ViewOptions {
    ViewOptions { detail: if reused.is_some() { Detail::Links } else { options.detail }, ..options }
}

/// Runs one job to its outcome under the default policy (the CLI, tests).
pub async fn execute<S: LedgerSource>(
    source: &S,
    labels: &Labels,
    spec: &JobSpec,
    options: ViewOptions,
    scores: &dyn ReusedScores,
) -> Outcome {
    execute_with(source, labels, &Policy::default_policy(), spec, options, scores).await
}

/// Runs one job to its outcome under its account's `policy` (`labels`: the labels in force,
/// which the policy's lists are laid over).
pub async fn execute_with<S: LedgerSource>(
    source: &S,
    labels: &Labels,
    policy: &Policy,
    spec: &JobSpec,
    options: ViewOptions,
    scores: &dyn ReusedScores,
) -> Outcome {
    let labels = &*policy.labels(labels);
    match spec {
        JobSpec::Analysis { wallet } => match eligible_view(source, wallet, options, labels).await {
            Ok(view) => payload(&engine::analyze_with(&view, labels, policy)),
            Err(failed) => failed,
        },
        JobSpec::Comparison { wallet_a, wallet_b, reuse } => {
            // The reused scores are read before the ledger: they decide how much of it to read.
            let [reused_a, reused_b] =
                reuse.clone().map(|id| id.and_then(|id| scores.score_of(&id, policy).map(|score| (id, score))));
            let (a, b) = tokio::join!(
                eligible_view(source, wallet_a, side_options(options, &reused_a), labels),
                eligible_view(source, wallet_b, side_options(options, &reused_b), labels)
            );
            let (a, b) = match (a, b) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(failed), _) | (_, Err(failed)) => return failed,
            };
            let (score_a, id_a) = side_score(&a, labels, policy, reused_a);
            let (score_b, id_b) = side_score(&b, labels, policy, reused_b);
            let side_a = compare::Side { view: &a, score: &score_a, analysis_id: id_a };
            let side_b = compare::Side { view: &b, score: &score_b, analysis_id: id_b };
            payload(&compare::compare_with(side_a, side_b, labels, policy.reference()))
        }
    }
}
