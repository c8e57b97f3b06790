//! A cluster node's share of the cluster's upkeep (`--store etcd:…`), run by the housekeeping
//! thread: adopting the jobs of nodes that died, re-queuing its own jobs that never reached its
//! queue, and dividing each key's rate among the live nodes.
//!
//! Owns: the node count last applied to the key table and the pace of these rounds
//! (`ADOPTION_INTERVAL_MS`). A job's owner key is attached to its node's lease; when the node
//! dies, the lease expires (`ETCD_LEASE_TTL_S`) and the key goes with it, so a live job without
//! an owner is an orphan: one node wins the compare-and-swap that adopts it and queues it.
//!
//! Invariant: a job is queued on at most one live node at a time, except a job whose old node
//! is still finishing it after losing its lease (it may run twice; its completion transaction
//! settles it once, so it is charged once).
//! Invariant: a job this node owns but does not hold is re-queued only once it is older than
//! `ADOPTION_OWN_AGE_MIN_MS` (an admission in progress is not mistaken for a lost one).
//! Deliberately absent: paging past `ADOPTION_PAGE_LEN` live jobs per round; orphans beyond the
//! oldest page are adopted as older jobs finish (docs/scaling.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::admission::Admission;
use crate::auth::table::KeyTable;
use crate::clock::now_unix_ms;
use crate::config::{ADOPTION_INTERVAL_MS, ADOPTION_OWN_AGE_MIN_MS, ADOPTION_PAGE_LEN};
use crate::store::etcd::{EtcdStore, Owned};
use crate::store::Store;

/// The cluster upkeep of one node.
pub struct Adoption {
    etcd: Arc<EtcdStore>,
    keys: Arc<KeyTable>,
    last_round: Option<Instant>,
}

impl Adoption {
    pub fn new(etcd: Arc<EtcdStore>, keys: Arc<KeyTable>) -> Adoption {
        Adoption { etcd, keys, last_round: None }
    }

    /// One round, at most every `ADOPTION_INTERVAL_MS` (called every housekeeping tick).
    pub fn run(&mut self, admission: &Admission) {
        if self.last_round.is_some_and(|t| t.elapsed() < Duration::from_millis(ADOPTION_INTERVAL_MS)) {
            return;
        }
        self.last_round = Some(Instant::now());
        self.reshare();
        let owned = match self.etcd.owners(ADOPTION_PAGE_LEN) {
            Ok(owned) => owned,
            Err(e) => return tracing::warn!(error = %e, "listing the cluster's live jobs failed"),
        };
        for Owned { id, owner } in owned {
            match owner.as_deref() {
                None => self.adopt(admission, &id),
                Some(node) if node == self.etcd.node_id() => self.requeue_own(admission, &id),
                Some(_) => {}
            }
        }
    }

    /// Each key's rate divided among the live nodes (`RateLimit::share`).
    fn reshare(&self) {
        match self.etcd.live_nodes() {
            Ok(nodes) => {
                let nodes = u32::try_from(nodes).unwrap_or(u32::MAX);
                if let Err(e) = self.keys.reshare(nodes, now_unix_ms()) {
                    tracing::warn!(error = %e, "dividing the key rates among the live nodes failed");
                }
            }
            Err(e) => tracing::warn!(error = %e, "counting the live nodes failed"),
        }
    }

    fn adopt(&self, admission: &Admission, id: &str) {
        match self.etcd.adopt(id) {
            Ok(true) => {
                tracing::info!(job = %id, "adopted a job whose node's lease expired");
                self.requeue(admission, id, 0);
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(job = %id, error = %e, "adopting a job failed"),
        }
    }

    /// A job this node owns: queued here unless it is (or was just admitted).
    fn requeue_own(&self, admission: &Admission, id: &str) {
        if admission.holds(id) {
            return;
        }
        self.requeue(admission, id, ADOPTION_OWN_AGE_MIN_MS);
    }

    fn requeue(&self, admission: &Admission, id: &str, age_min_ms: u64) {
        let record = match self.etcd.get_job(id) {
            Ok(Some(record)) if !record.state.is_finished() => record,
            Ok(_) => return,
            Err(e) => return tracing::warn!(job = %id, error = %e, "reading an adopted job failed"),
        };
        if now_unix_ms().saturating_sub(record.created_at_ms) < age_min_ms {
            return;
        }
        if admission.requeue(record).is_err() {
            tracing::debug!(job = %id, "the queue is full: the adopted job is queued at a later round");
        }
    }
}
