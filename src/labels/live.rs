//! Labels that change while the server runs: the labels in force, swapped whole by a reload
//! (`POST /v1/admin/labels/reload`: the same files read again — a new sanctions import, new
//! flagged addresses), and what each reload newly listed, for the monitors' re-screen.
//!
//! Owns: `LiveLabels` — the current `Labels` (an `ArcSwap`: a job reads one consistent table
//! for its whole run, lock-free), the files they come from, the reload's generation and time,
//! and the addresses the last `RELOADS_KEPT` reloads newly listed as flagged or sanctioned.
//! Threads: read from every thread; reloaded from the admin thread.
//!
//! Invariant: a reload that fails (a file missing, invalid, too large) changes nothing — the
//! labels in force stay, and the error names the file and entry.
//! Invariant: the generation grows by one per successful reload; `listed_since(g)` is every
//! address listed (flagged or sanctioned) by the reloads after `g` — or `None` when reloads
//! past `RELOADS_KEPT` are gone, which the caller treats as "every listed address".
//! Deliberately absent: watching the files (an operator decides when a list is complete) and
//! reloading the other nodes of a cluster (each node's files are its own: reload each node).

use std::collections::{HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::{Category, Labels};
use crate::pubkey::Pubkey;

/// Reloads whose newly listed addresses are kept for re-screens.
pub const RELOADS_KEPT: usize = 16;

/// What a reload did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReloadReport {
    pub generation: u64,
    /// Labels in force now.
    pub labels: usize,
    /// Addresses flagged or sanctioned now that were not before (each watched wallet that dealt
    /// with one is re-screened at its next check).
    pub newly_listed: usize,
}

/// The labels in force, reloadable.
pub struct LiveLabels {
    current: ArcSwap<Labels>,
    base: Option<PathBuf>,
    extra: Vec<PathBuf>,
    generation: AtomicU64,
    /// When the labels in force were loaded by a reload (0: at start).
    loaded_at_ms: AtomicU64,
    /// (generation, what that reload newly listed), oldest first, at most `RELOADS_KEPT`.
    listed: parking_lot::Mutex<VecDeque<(u64, Arc<HashSet<Pubkey>>)>>,
    /// `listed_digest` of the labels in force.
    digest: ArcSwap<String>,
}

impl LiveLabels {
    /// The labels loaded at start from `base` (builtin when `None`) and `extra`.
    pub fn new(labels: Arc<Labels>, base: Option<PathBuf>, extra: Vec<PathBuf>) -> Arc<LiveLabels> {
        // The digest a scan signs (`Labels::digest`) is made here, off the request path: a
        // large labels file would otherwise cost the first scan after each load.
        labels.digest();
        Arc::new(LiveLabels {
            digest: ArcSwap::from_pointee(listed_digest(&labels)),
            current: ArcSwap::new(labels),
            base,
            extra,
            generation: AtomicU64::new(0),
            loaded_at_ms: AtomicU64::new(0),
            listed: parking_lot::Mutex::new(VecDeque::new()),
        })
    }

    /// Labels that a reload reads from the builtin file (tests, tools).
    pub fn fixed(labels: Arc<Labels>) -> Arc<LiveLabels> {
        LiveLabels::new(labels, None, Vec::new())
    }

    /// The labels in force now (one table: hold it for a whole job).
    pub fn current(&self) -> Arc<Labels> {
        self.current.load_full()
    }

    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// A digest of the flagged and sanctioned addresses in force (hex, 32 characters): what a
    /// watch's cursor remembers, so a re-screen survives a restart or a hand-over.
    pub fn listed_digest(&self) -> Arc<String> {
        self.digest.load_full()
    }

    /// When the labels in force were loaded by a reload; 0 when they are the start's. A result
    /// finished before it was made with other labels.
    pub fn loaded_at_ms(&self) -> u64 {
        self.loaded_at_ms.load(Ordering::Acquire)
    }

    /// Reads the files again and puts them in force; the labels in force stay on any error.
    pub fn reload(&self, now_ms: u64) -> Result<ReloadReport, String> {
        let fresh = Labels::load_with(self.base.as_deref(), &self.extra)?;
        Ok(self.put(fresh, now_ms))
    }

    /// Puts `fresh` in force (a reload's last step).
    pub fn put(&self, fresh: Arc<Labels>, now_ms: u64) -> ReloadReport {
        let mut listed = self.listed.lock();
        let before = self.current.load_full();
        let newly: HashSet<Pubkey> = fresh.listed().filter(|a| !before.is_listed(a)).collect();
        let (labels, newly_listed) = (fresh.len(), newly.len());
        let generation = self.generation() + 1;
        listed.push_back((generation, Arc::new(newly)));
        while listed.len() > RELOADS_KEPT {
            listed.pop_front();
        }
        self.digest.store(Arc::new(listed_digest(&fresh)));
        fresh.digest();
        self.current.store(fresh);
        self.loaded_at_ms.store(now_ms, Ordering::Release);
        self.generation.store(generation, Ordering::Release);
        ReloadReport { generation, labels, newly_listed }
    }

    /// The addresses the reloads after `generation` newly listed, one set per reload (shared,
    /// not copied); `None` when some of those reloads are no longer kept.
    pub fn listed_since(&self, generation: u64) -> Option<Vec<Arc<HashSet<Pubkey>>>> {
        let listed = self.listed.lock();
        let oldest_kept = listed.front().map_or(self.generation() + 1, |(g, _)| *g);
        if generation + 1 < oldest_kept {
            return None;
        }
        Some(listed.iter().filter(|(g, _)| *g > generation).map(|(_, set)| set.clone()).collect())
    }
}

/// SHA-256 of the sorted flagged and sanctioned addresses, first 16 bytes in hex.
fn listed_digest(labels: &Labels) -> String {
    use sha2::{Digest, Sha256};
    let mut listed: Vec<Pubkey> = labels.listed().collect();
    listed.sort_unstable_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let mut hasher = Sha256::new();
    listed.iter().for_each(|a| hasher.update(a.as_bytes()));
    hasher.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

impl Labels {
    /// Whether the address is flagged or sanctioned: what exposes a wallet that dealt with it.
    pub fn is_listed(&self, address: &Pubkey) -> bool {
        matches!(self.category(address), Some(Category::Flagged | Category::Sanctioned))
    }

    /// Every flagged or sanctioned address.
    pub fn listed(&self) -> impl Iterator<Item = Pubkey> + '_ {
        self.by_address
            .iter()
            .filter(|(_, l)| matches!(l.category, Category::Flagged | Category::Sanctioned))
            .map(|(a, _)| *a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_sanctioned(addresses: &[&str]) -> Arc<Labels> {
        let mut text = String::from("version = 1\n");
        for (i, a) in addresses.iter().enumerate() {
            text.push_str(&format!("[[label]]\naddress = \"{a}\"\nname = \"s{i}\"\ncategory = \"sanctioned\"\n"));
        }
        Arc::new(Labels::builtin().merged(&Labels::from_toml(&text).expect("labels")).expect("merged"))
    }

    const A: &str = "ci1KGByUWzTiEVeKdJcu3JEftjfJgPhfK5zP6MSiHpp";
    const B: &str = "Ho1Fv7u6WMxZFY5je7wPkJHAwidvR5EKzfwrqZS7nqVj";

    #[test]
    fn a_reload_swaps_whole_and_says_what_it_newly_listed() {
        let live = LiveLabels::fixed(Labels::builtin());
        assert_eq!((live.generation(), live.loaded_at_ms()), (0, 0));
        let digest_before = live.listed_digest();
        let first = live.put(with_sanctioned(&[A]), 10);
        assert_ne!(live.listed_digest(), digest_before, "the listed set changed");
        assert_eq!((first.generation, first.newly_listed), (1, 1));
        let a = Pubkey::parse(A).expect("A");
        assert!(live.current().is_sanctioned(&a));
        assert_eq!(live.loaded_at_ms(), 10);
        let second = live.put(with_sanctioned(&[A, B]), 20);
        assert_eq!((second.generation, second.newly_listed), (2, 1), "A was listed already");
        let b = Pubkey::parse(B).expect("B");
        let union = |since| -> Option<HashSet<Pubkey>> {
            live.listed_since(since).map(|sets| sets.iter().flat_map(|s| s.iter().copied()).collect())
        };
        assert_eq!(union(0), Some(HashSet::from([a, b])));
        assert_eq!(union(1), Some(HashSet::from([b])));
        assert_eq!(union(2), Some(HashSet::new()));
    }

    #[test]
    fn reloads_past_those_kept_say_so() {
        let live = LiveLabels::fixed(Labels::builtin());
        for i in 0..(RELOADS_KEPT as u64 + 2) {
            live.put(Labels::builtin(), i);
        }
        assert_eq!(live.listed_since(0), None, "the first reloads are gone");
        assert!(live.listed_since(live.generation() - 1).is_some_and(|sets| sets.iter().all(|s| s.is_empty())));
    }

    #[test]
    fn a_failed_reload_changes_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("labels.toml");
        std::fs::write(&path, "version = 1\n").expect("written");
        let live = LiveLabels::new(Labels::builtin(), None, vec![path.clone()]);
        assert_eq!(live.reload(5).expect("reload").generation, 1);
        std::fs::write(&path, "version = 9\n").expect("written");
        assert!(live.reload(6).is_err());
        assert_eq!((live.generation(), live.loaded_at_ms()), (1, 5));
    }
}
