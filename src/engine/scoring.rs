//! Scoring: dimension scores from their signals, the overall 0–100 safety score (higher is
//! safer), its risk level and the confidence that coverage allows.
//!
//! Owns: the penalty per severity, dimension weights, risk-level thresholds, severity caps and
//! the confidence formula. Pure; called by the engine on compute threads.
//!
//! Invariants (property-tested): adding a signal never raises any score; the most severe
//! signal caps the overall score inside its own risk band (one critical signal means a
//! critical wallet, whatever else is clean); confidence is in [CONFIDENCE_MIN, 1].

use crate::engine::report::{Dimension, RiskLevel, Score, Severity, Signal};
use crate::ledger::model::Coverage;

/// The dimensions, their weights (summing to 1) and their order in the payload.
pub const DIMENSIONS: &[(&str, f64)] = &[
    ("authority_exposure", 0.30),
    ("asset_risk", 0.20),
    ("counterparty_risk", 0.30),
    ("behaviour", 0.15),
    ("data_quality", 0.05),
];

/// Points a signal of each severity takes off its dimension's 100.
pub fn penalty_points(severity: Severity) -> u32 {
    match severity {
        Severity::Info => 0,
        Severity::Low => 8,
        Severity::Medium => 20,
        Severity::High => 45,
        Severity::Critical => 80,
    }
}

/// Lowest score of each band: `low` ≥ 75, `medium` ≥ 50, `high` ≥ 25, else `critical`.
pub const RISK_LOW_SCORE_MIN: u8 = 75;
pub const RISK_MEDIUM_SCORE_MIN: u8 = 50;
pub const RISK_HIGH_SCORE_MIN: u8 = 25;

pub fn risk_level(score: u8) -> RiskLevel {
    match score {
        s if s >= RISK_LOW_SCORE_MIN => RiskLevel::Low,
        s if s >= RISK_MEDIUM_SCORE_MIN => RiskLevel::Medium,
        s if s >= RISK_HIGH_SCORE_MIN => RiskLevel::High,
        _ => RiskLevel::Critical,
    }
}

/// Highest overall score allowed when the worst signal has this severity: the top of the
/// band of the same name (`info` and `low` do not cap).
pub fn severity_cap(severity: Severity) -> u8 {
    match severity {
        Severity::Info | Severity::Low => 100,
        Severity::Medium => RISK_LOW_SCORE_MIN - 1,
        Severity::High => RISK_MEDIUM_SCORE_MIN - 1,
        Severity::Critical => RISK_HIGH_SCORE_MIN - 1,
    }
}

/// Lowest confidence reported, however poor the coverage.
pub const CONFIDENCE_MIN: f64 = 0.2;

/// Dimension scores and the overall score for a set of signals, with the dimensions weighted
/// in hundredths (`DIMENSIONS`' order, summing to 100: a policy's or the defaults).
pub fn score(
    signals: &[Signal],
    coverage: &Coverage,
    weights_hundredths: &[u16; DIMENSIONS.len()],
) -> (Score, Vec<Dimension>) {
    debug_assert_eq!(weights_hundredths.iter().sum::<u16>(), 100);
    let dimensions: Vec<Dimension> = DIMENSIONS
        .iter()
        .zip(weights_hundredths)
        .map(|(&(id, _), &hundredths)| {
            let mine: Vec<&Signal> = signals.iter().filter(|s| s.dimension == id).collect();
            let penalty: u32 = mine.iter().map(|s| penalty_points(s.severity)).sum();
            let score = 100u32.saturating_sub(penalty) as u8;
            Dimension {
                id,
                score,
                // Correctly rounded: 30 hundredths is exactly the literal 0.3.
                weight: f64::from(hundredths) / 100.0,
                risk_level: risk_level(score),
                signal_ids: mine.iter().map(|s| s.id.clone()).collect(),
            }
        })
        .collect();
    // Whole numbers: exact on every machine. Rounded down so a weighted 74.6 stays in the band
    // its dimensions earned.
    let weighted: u32 =
        dimensions.iter().zip(weights_hundredths).map(|(d, &h)| u32::from(d.score) * u32::from(h)).sum();
    let cap = signals.iter().map(|s| severity_cap(s.severity)).min().unwrap_or(100);
    let value = u8::try_from(weighted / 100).unwrap_or(100).min(cap);
    let score = Score { value, risk_level: risk_level(value), confidence: confidence(coverage) };
    (score, dimensions)
}

/// How far the analysis can be trusted, from what the ledger read covered.
pub fn confidence(coverage: &Coverage) -> f64 {
    let mut c = 1.0;
    if coverage.history_truncated {
        c *= 0.8;
    }
    let listed = coverage.transactions_read + coverage.transactions_missing;
    if listed > 0 {
        c *= 1.0 - 0.5 * f64::from(coverage.transactions_missing) / f64::from(listed);
    }
    if coverage.items_skipped > 0 {
        c *= 0.9;
    }
    if listed == 0 && !coverage.history_truncated {
        // Nothing was read: a clean score here means "nothing known", not "known to be safe".
        c *= 0.5;
    }
    ((c * 100.0).round() / 100.0).clamp(CONFIDENCE_MIN, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const DEFAULT: [u16; 5] = [30, 20, 30, 15, 5];

    fn score(signals: &[Signal], coverage: &Coverage) -> (Score, Vec<Dimension>) {
        super::score(signals, coverage, &DEFAULT)
    }

    fn signal(i: usize, severity: Severity, dimension: &'static str) -> Signal {
        Signal {
            id: format!("sig_{i}"),
            kind: "test",
            severity,
            dimension,
            title: String::new(),
            detail: String::new(),
            facts: Default::default(),
            evidence_ids: vec!["ev_1".into()],
            fix_instructions: Vec::new(),
        }
    }

    fn severity() -> impl Strategy<Value = Severity> {
        prop_oneof![
            Just(Severity::Info),
            Just(Severity::Low),
            Just(Severity::Medium),
            Just(Severity::High),
            Just(Severity::Critical)
        ]
    }

    fn signals() -> impl Strategy<Value = Vec<Signal>> {
        prop::collection::vec((severity(), 0..DIMENSIONS.len()), 0..12)
            .prop_map(|v| v.into_iter().enumerate().map(|(i, (s, d))| signal(i, s, DIMENSIONS[d].0)).collect())
    }

    #[test]
    fn weights_sum_to_one() {
        let sum: f64 = DIMENSIONS.iter().map(|d| d.1).sum();
        assert!((sum - 1.0).abs() < 1e-9);
        assert_eq!(crate::engine::policy::default_weights_hundredths(), DEFAULT);
    }

    #[test]
    fn no_signals_is_a_perfect_score() {
        let (s, dims) = score(&[], &Coverage { transactions_read: 10, ..Coverage::default() });
        assert_eq!(s.value, 100);
        assert_eq!(s.risk_level, RiskLevel::Low);
        assert_eq!(s.confidence, 1.0);
        assert!(dims.iter().all(|d| d.score == 100));
    }

    #[test]
    fn nothing_read_halves_confidence() {
        assert_eq!(confidence(&Coverage::default()), 0.5, "no transaction listed: nothing to judge by");
        assert_eq!(confidence(&Coverage { transactions_read: 1, ..Coverage::default() }), 1.0);
    }

    proptest! {
        #[test]
        fn adding_a_signal_never_raises_a_score(base in signals(), extra in (severity(), 0..DIMENSIONS.len())) {
            let coverage = Coverage::default();
            let (before, dims_before) = score(&base, &coverage);
            let mut more = base.clone();
            more.push(signal(99, extra.0, DIMENSIONS[extra.1].0));
            let (after, dims_after) = score(&more, &coverage);
            prop_assert!(after.value <= before.value);
            for (a, b) in dims_after.iter().zip(&dims_before) {
                prop_assert!(a.score <= b.score);
            }
        }

        #[test]
        fn worst_signal_caps_the_score_in_its_band(base in signals()) {
            let (s, _) = score(&base, &Coverage::default());
            if let Some(worst) = base.iter().map(|s| s.severity).max() {
                prop_assert!(s.value <= severity_cap(worst));
                if worst == Severity::Critical {
                    prop_assert_eq!(s.risk_level, RiskLevel::Critical);
                }
            }
        }

        #[test]
        fn confidence_stays_in_range(read in 0u32..5000, missing in 0u32..5000, truncated: bool, skipped in 0u32..3) {
            let c = confidence(&Coverage {
                transactions_read: read,
                transactions_missing: missing,
                history_truncated: truncated,
                items_skipped: skipped,
                ..Coverage::default()
            });
            prop_assert!((CONFIDENCE_MIN..=1.0).contains(&c));
        }
    }

    #[test]
    fn partial_history_lowers_confidence() {
        let full = confidence(&Coverage { transactions_read: 100, ..Coverage::default() });
        let cut = confidence(&Coverage { transactions_read: 100, history_truncated: true, ..Coverage::default() });
        assert!(cut < full);
    }
}
