//! The feedback counters `/metrics` renders: verdicts by signal kind, and evictions.
//!
//! Owns: `FeedbackMetrics` — a fixed array of atomics, one slot per (catalogue kind, `other`,
//! `none`) × verdict, sized once at start; recording takes no lock and does not allocate.
//! Called from listener threads (a written record) and the admin listener (`render`).
//!
//! What `xray_feedback_total{kind,verdict}` counts: verdicts as given — a new record counts
//! once under its verdict; a repeat that changes the verdict counts again under the new one (a
//! counter cannot go down, so a transition is a new count, never a decrement); a repeat with
//! the same verdict counts nothing. So `false_positive / (false_positive + confirmed)` of a
//! kind is the share of its judged signals called false, with changed minds counted for both.
//! Invariant: label values are the catalogue's kinds, `other` (a kind a payload of another
//! engine version named) and `none` (`missed`): never a client's text; cardinality is fixed.
//! Deliberately absent: the purge's deletions (retention, not a judgement) and per-account
//! labels.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use super::record::FeedbackVerdict;
use crate::engine::signals::CATALOGUE;

/// The `kind` label of a verdict that names no signal.
pub const KIND_NONE: &str = "none";
/// The `kind` label of a kind the catalogue does not list.
pub const KIND_OTHER: &str = "other";

/// FeedbackVerdict counts by kind, and evictions.
pub struct FeedbackMetrics {
    /// `[kind slot][verdict]`: the catalogue's kinds in order, then `other`, then `none`.
    given: Box<[[AtomicU64; 3]]>,
    evicted: AtomicU64,
}

impl Default for FeedbackMetrics {
    fn default() -> Self {
        let slots = CATALOGUE.len() + 2;
        FeedbackMetrics {
            given: (0..slots).map(|_| [const { AtomicU64::new(0) }; 3]).collect(),
            evicted: AtomicU64::new(0),
        }
    }
}

fn verdict_slot(verdict: FeedbackVerdict) -> usize {
    match verdict {
        FeedbackVerdict::FalsePositive => 0,
        FeedbackVerdict::Confirmed => 1,
        FeedbackVerdict::Missed => 2,
    }
}

impl FeedbackMetrics {
    fn kind_slot(&self, kind: Option<&str>) -> usize {
        match kind {
            None => CATALOGUE.len() + 1,
            Some(kind) => CATALOGUE.iter().position(|s| s.kind == kind).unwrap_or(CATALOGUE.len()),
        }
    }

    fn label(slot: usize) -> &'static str {
        match slot {
            s if s < CATALOGUE.len() => CATALOGUE[s].kind,
            s if s == CATALOGUE.len() => KIND_OTHER,
            _ => KIND_NONE,
        }
    }

    /// Counts a verdict given on a signal of `kind` (`None`: no signal).
    pub fn given(&self, kind: Option<&str>, verdict: FeedbackVerdict) {
        self.given[self.kind_slot(kind)][verdict_slot(verdict)].fetch_add(1, Ordering::Relaxed);
    }

    pub fn evicted(&self, n: u64) {
        self.evicted.fetch_add(n, Ordering::Relaxed);
    }

    /// The count of `verdict` on `kind` (`None`: no signal) — for tests.
    pub fn count(&self, kind: Option<&str>, verdict: FeedbackVerdict) -> u64 {
        self.given[self.kind_slot(kind)][verdict_slot(verdict)].load(Ordering::Relaxed)
    }

    /// Appends the series in the text exposition format: every (kind, verdict) that can occur
    /// (a signal's kind with `false_positive` and `confirmed`; `none` with `missed`), zeros too.
    pub fn render(&self, out: &mut String) {
        out.push_str(
            "# HELP xray_feedback_total Feedback verdicts given, by signal kind: a new record counts once, a \
             changed verdict counts again under its new value, a repeat of the same verdict not at all.\n\
             # TYPE xray_feedback_total counter\n",
        );
        for (slot, counts) in self.given.iter().enumerate() {
            let kind = Self::label(slot);
            for verdict in FeedbackVerdict::ALL {
                if verdict.names_a_signal() == (kind == KIND_NONE) {
                    continue;
                }
                let n = counts[verdict_slot(verdict)].load(Ordering::Relaxed);
                let _ = writeln!(out, "xray_feedback_total{{kind=\"{kind}\",verdict=\"{}\"}} {n}", verdict.as_str());
            }
        }
        out.push_str(
            "# HELP xray_feedback_evicted_total Feedback records evicted past an account's maximum.\n\
             # TYPE xray_feedback_evicted_total counter\n",
        );
        let _ = writeln!(out, "xray_feedback_evicted_total {}", self.evicted.load(Ordering::Relaxed));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_render_with_closed_labels() {
        let m = FeedbackMetrics::default();
        let kind = CATALOGUE[0].kind;
        m.given(Some(kind), FeedbackVerdict::FalsePositive);
        m.given(Some(kind), FeedbackVerdict::FalsePositive);
        m.given(Some("not_a_kind_anyone_knows"), FeedbackVerdict::Confirmed);
        m.given(None, FeedbackVerdict::Missed);
        m.evicted(3);
        let mut text = String::new();
        m.render(&mut text);
        assert!(text.contains(&format!("xray_feedback_total{{kind=\"{kind}\",verdict=\"false_positive\"}} 2\n")));
        assert!(text.contains("xray_feedback_total{kind=\"other\",verdict=\"confirmed\"} 1\n"), "{text}");
        assert!(text.contains("xray_feedback_total{kind=\"none\",verdict=\"missed\"} 1\n"));
        assert!(!text.contains("not_a_kind"), "no client text in a label");
        assert!(!text.contains("kind=\"none\",verdict=\"confirmed\""));
        assert!(!text.contains(&format!("kind=\"{kind}\",verdict=\"missed\"")));
        assert!(text.contains("xray_feedback_evicted_total 3\n"));
        let series = text.lines().filter(|l| l.starts_with("xray_feedback_total{")).count();
        assert_eq!(series, (CATALOGUE.len() + 1) * 2 + 1);
    }
}
