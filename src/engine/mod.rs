//! The X-Ray engine: pure functions from a `WalletView` and labels to the X-Ray payload, and
//! from two views to the comparison payload.
//!
//! Owns: signal detection (`signals`), value flows (`flows`), evidence (`evidence`), scoring
//! (`scoring`), attack paths (`attack_paths`), the instructions that fix them (`fixes`),
//! comparison (`compare`) and the payload types (`report`). Called on compute threads and by the CLI.
//!
//! Invariant: no I/O and no clock — the as-of slot and time come from the view — so equal input
//! gives byte-identical output on any thread. Versions below change whenever output for the
//! same input changes; cached results of another version are not reused.

pub mod attack_paths;
pub mod changes;
pub mod compare;
pub mod evidence;
pub mod fixes;
pub mod flows;
pub mod policy;
pub mod report;
pub mod scoring;
pub mod signals;
pub mod sweep;

use std::collections::BTreeMap;

use crate::labels::Labels;
use crate::ledger::model::{NonceSearch, WalletView};
use policy::Policy;
use report::{CoverageReport, HopCoverage, XRay};

/// Semantic versions of each engine.
pub const XRAY_VERSION: &str = "1.1.0";
pub const SIGNALS_VERSION: &str = "1.9.0";
pub const SCORING_VERSION: &str = "1.2.0";
pub const ATTACK_PATHS_VERSION: &str = "1.4.0";
pub const COMPARE_VERSION: &str = "1.2.0";

/// Every engine version above as one tag, stored with each result: a cached result whose tag
/// differs from this build's is not reused (a test keeps it in step with the constants).
/// Order: xray/signals/scoring/attackPaths/compare.
pub const ENGINE_VERSION_TAG: &str = "1.1.0/1.9.0/1.2.0/1.4.0/1.2.0";

/// `engineVersions` of an X-Ray.
pub fn xray_versions() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("xray", XRAY_VERSION),
        ("signals", SIGNALS_VERSION),
        ("scoring", SCORING_VERSION),
        ("attackPaths", ATTACK_PATHS_VERSION),
    ])
}

/// Every engine and its version (`service.engineVersions` of the status endpoint).
pub fn all_versions() -> BTreeMap<&'static str, &'static str> {
    let mut versions = xray_versions();
    versions.insert("compare", COMPARE_VERSION);
    versions
}

/// Analyzes one wallet under the default policy.
pub fn analyze(view: &WalletView, labels: &Labels) -> XRay {
    analyze_with(view, labels, &Policy::default_policy())
}

/// Analyzes one wallet under `policy` (`labels` are the account's: `Policy::labels`; its
/// sweep thresholds are where `wallet_swept` is drawn; its overrides and weights apply after
/// detection).
pub fn analyze_with(view: &WalletView, labels: &Labels, policy: &Policy) -> XRay {
    let (signals, book) = signals::detect(view, labels, policy.sweep_thresholds());
    let (signals, book) = policy.apply(signals, book);
    let attack_paths = attack_paths::compose(&signals, view);
    let (score, dimensions) = scoring::score(&signals, &view.coverage, policy.weights_hundredths());
    let xray = XRay {
        wallet: view.address.to_string(),
        score,
        dimensions,
        signals,
        evidence: book.into_items(),
        attack_paths,
        engine_versions: xray_versions(),
        policy: policy.reference().clone(),
        coverage: CoverageReport {
            ledger_source: view.coverage.source.clone(),
            // The hop's transactions are cited as evidence too, so the slot covers them.
            as_of_slot: view
                .funder_hop
                .as_deref()
                .map_or(0, |hop| hop.coverage.as_of_slot)
                .max(view.coverage.as_of_slot),
            transactions_analyzed: view.coverage.transactions_read,
            history_complete: history_complete(view),
            nonce_search: match view.coverage.nonce_search {
                NonceSearch::Complete => "complete",
                NonceSearch::Cut => "cut",
                NonceSearch::Failed => "failed",
            },
            funder_hop: view.funder_hop.as_deref().map(|hop| HopCoverage {
                address: hop.address.to_string(),
                transactions_analyzed: hop.coverage.transactions_read,
                history_complete: history_complete(hop),
            }),
        },
    };
    debug_assert_eq!(xray.check(), Ok(()));
    xray
}

/// No signature cut by the depth limit and none missing.
fn history_complete(view: &WalletView) -> bool {
    !view.coverage.history_truncated && view.coverage.transactions_missing == 0
}

#[cfg(test)]
mod version_tests {
    use super::*;

    #[test]
    fn the_tag_names_every_current_version() {
        let versions = all_versions();
        let order = ["xray", "signals", "scoring", "attackPaths", "compare"];
        let tag: Vec<&str> = order.iter().map(|name| versions[name]).collect();
        assert_eq!(ENGINE_VERSION_TAG, tag.join("/"));
        assert!(ENGINE_VERSION_TAG.len() <= crate::config::ENGINE_VERSION_BYTES_MAX);
    }
}
