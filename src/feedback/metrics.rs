//! The feedback counters `/metrics` renders: verdicts on analyses by signal kind, verdicts on
//! scans by the scan's own verdict, and evictions.
//!
//! Owns: `FeedbackMetrics` — fixed arrays of atomics, one slot per (catalogue kind, `other`,
//! `none`) × analysis verdict and per (scan verdict, `other`) × scan verdict given, sized once
//! at start; recording takes no lock and does not allocate. Called from listener threads (a
//! written record) and the admin listener (`render`).
//!
//! What `xray_feedback_total{kind,verdict}` and `xray_scan_feedback_total{scan_verdict,verdict}`
//! count: verdicts as given — a new record counts once under its verdict; a repeat that changes
//! the verdict counts again under the new one (a counter cannot go down, so a transition is a
//! new count, never a decrement); a repeat with the same verdict counts nothing. So
//! `false_positive / (false_positive + confirmed)` of a kind is the share of its judged signals
//! called false, with changed minds counted for both; and `false_positive` of `malicious` scans
//! against `false_negative` of `benign` ones is how the scan errs.
//! Invariant: label values are the catalogue's kinds, `other` (a kind a payload of another
//! engine version named, a scan verdict of another build) and `none` (`missed`), and the scan's
//! three verdicts: never a client's text; cardinality is fixed.
//! Deliberately absent: the purge's deletions (retention, not a judgement) and per-account
//! labels.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use super::record::FeedbackVerdict;
use crate::engine::signals::CATALOGUE;
use crate::scan::findings::Verdict as ScanVerdict;

/// The `kind` label of a verdict that names no signal.
pub const KIND_NONE: &str = "none";
/// The `kind` label of a kind the catalogue does not list.
pub const KIND_OTHER: &str = "other";

/// Verdict counts by signal kind and by scan verdict, and evictions.
pub struct FeedbackMetrics {
    /// `[kind slot][analysis verdict]`: the catalogue's kinds in order, then `other`, then `none`.
    given: Box<[[AtomicU64; 3]]>,
    /// `[scan verdict slot][scan feedback verdict]`: `ScanVerdict::ALL`, then `other`.
    scans: [[AtomicU64; 2]; SCAN_SLOTS],
    evicted: AtomicU64,
}

const SCAN_SLOTS: usize = ScanVerdict::ALL.len() + 1;

impl Default for FeedbackMetrics {
    fn default() -> Self {
        let slots = CATALOGUE.len() + 2;
        FeedbackMetrics {
            given: (0..slots).map(|_| [const { AtomicU64::new(0) }; 3]).collect(),
            scans: [const { [const { AtomicU64::new(0) }; 2] }; SCAN_SLOTS],
            evicted: AtomicU64::new(0),
        }
    }
}

/// The slot of a verdict in its target's row (`None`: not a verdict of that target).
fn verdict_slot(verdict: FeedbackVerdict, of: &[FeedbackVerdict]) -> Option<usize> {
    of.iter().position(|v| *v == verdict)
}

fn scan_slot(scan_verdict: &str) -> usize {
    ScanVerdict::ALL.iter().position(|v| v.as_str() == scan_verdict).unwrap_or(ScanVerdict::ALL.len())
}

fn scan_label(slot: usize) -> &'static str {
    ScanVerdict::ALL.get(slot).map_or(KIND_OTHER, |v| v.as_str())
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
        if let Some(slot) = verdict_slot(verdict, &FeedbackVerdict::ON_ANALYSIS) {
            self.given[self.kind_slot(kind)][slot].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a verdict given on a scan whose own verdict was `scan_verdict`.
    pub fn scan_given(&self, scan_verdict: &str, verdict: FeedbackVerdict) {
        if let Some(slot) = verdict_slot(verdict, &FeedbackVerdict::ON_SCAN) {
            self.scans[scan_slot(scan_verdict)][slot].fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The count of `verdict` on scans that said `scan_verdict` — for tests.
    pub fn scan_count(&self, scan_verdict: &str, verdict: FeedbackVerdict) -> u64 {
        verdict_slot(verdict, &FeedbackVerdict::ON_SCAN)
            .map_or(0, |slot| self.scans[scan_slot(scan_verdict)][slot].load(Ordering::Relaxed))
    }

    pub fn evicted(&self, n: u64) {
        self.evicted.fetch_add(n, Ordering::Relaxed);
    }

    /// The count of `verdict` on `kind` (`None`: no signal) — for tests.
    pub fn count(&self, kind: Option<&str>, verdict: FeedbackVerdict) -> u64 {
        verdict_slot(verdict, &FeedbackVerdict::ON_ANALYSIS)
            .map_or(0, |slot| self.given[self.kind_slot(kind)][slot].load(Ordering::Relaxed))
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
            for (slot, verdict) in FeedbackVerdict::ON_ANALYSIS.into_iter().enumerate() {
                if verdict.names_a_signal() == (kind == KIND_NONE) {
                    continue;
                }
                let n = counts[slot].load(Ordering::Relaxed);
                let _ = writeln!(out, "xray_feedback_total{{kind=\"{kind}\",verdict=\"{}\"}} {n}", verdict.as_str());
            }
        }
        out.push_str(
            "# HELP xray_scan_feedback_total Feedback verdicts given on scans, by the scan's own verdict: counted \
             as xray_feedback_total is.\n\
             # TYPE xray_scan_feedback_total counter\n",
        );
        for (slot, counts) in self.scans.iter().enumerate() {
            let scan_verdict = scan_label(slot);
            for (i, verdict) in FeedbackVerdict::ON_SCAN.into_iter().enumerate() {
                let n = counts[i].load(Ordering::Relaxed);
                let _ = writeln!(
                    out,
                    "xray_scan_feedback_total{{scan_verdict=\"{scan_verdict}\",verdict=\"{}\"}} {n}",
                    verdict.as_str()
                );
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
        let analyses = text.lines().filter(|l| l.starts_with("xray_feedback_total{"));
        assert!(analyses.clone().all(|l| !l.contains("false_negative")), "no scan verdict among the analyses'");
        m.given(Some(kind), FeedbackVerdict::FalseNegative);
        assert_eq!(m.count(Some(kind), FeedbackVerdict::FalseNegative), 0, "not an analysis verdict");
    }

    #[test]
    fn scan_verdicts_count_by_what_the_scan_said() {
        let m = FeedbackMetrics::default();
        m.scan_given("malicious", FeedbackVerdict::FalsePositive);
        m.scan_given("benign", FeedbackVerdict::FalseNegative);
        m.scan_given("benign", FeedbackVerdict::FalseNegative);
        m.scan_given("a verdict of another build", FeedbackVerdict::FalseNegative);
        m.scan_given("warning", FeedbackVerdict::Confirmed);
        assert_eq!(m.scan_count("benign", FeedbackVerdict::FalseNegative), 2);
        assert_eq!(m.scan_count("warning", FeedbackVerdict::Confirmed), 0, "not a scan verdict");
        let mut text = String::new();
        m.render(&mut text);
        assert!(text.contains("xray_scan_feedback_total{scan_verdict=\"malicious\",verdict=\"false_positive\"} 1\n"));
        assert!(text.contains("xray_scan_feedback_total{scan_verdict=\"benign\",verdict=\"false_negative\"} 2\n"));
        assert!(text.contains("xray_scan_feedback_total{scan_verdict=\"other\",verdict=\"false_negative\"} 1\n"));
        assert!(!text.contains("another build"), "no client text in a label");
        let series = text.lines().filter(|l| l.starts_with("xray_scan_feedback_total{")).count();
        assert_eq!(series, (ScanVerdict::ALL.len() + 1) * 2);
        // The labels are the words the scan's answer uses.
        for verdict in ScanVerdict::ALL {
            assert_eq!(serde_json::to_value(verdict).unwrap(), verdict.as_str());
        }
    }
}
