//! This node in the cluster: its lease (kept alive on the etcd thread), its node key, the count
//! of live nodes, and the adoption of jobs whose owner's lease expired.
//!
//! Owns: lease renewal (every third of `ETCD_LEASE_TTL_S`; a lease etcd no longer knows is
//! replaced by a new one and the node key written again), `live_nodes` (node keys are attached
//! to their node's lease, so a dead node leaves the count when its lease expires) and the two
//! steps of adoption: `orphans` (live jobs without an owner key, or owned by this node) and
//! `adopt` (one transaction: the owner key must still be absent).
//!
//! Invariant: a job has at most one owner key, attached to a live lease; adopting is a
//! compare-and-swap on its absence, so of nodes racing for an orphan exactly one adopts it.
//! Deliberately absent: fencing a node that lost its lease while still running a job. It may
//! finish the job a second time; the completion transaction settles it once.

use std::sync::atomic::Ordering;
use std::time::Duration;

use etcd_client::{Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp};
use serde::{Deserialize, Serialize};

use super::io::{error, retry_unsent};
use super::ops::Db;
use crate::config::{ETCD_LEASE_TTL_S, STORE_PAGE_LEN_MAX};
use crate::store::encoding as enc;
use crate::store::{JobState, StoreResult};

/// What a node key says about its node (for operators reading etcd).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeFacts {
    pub node_id: String,
    pub started_at_ms: u64,
    pub pid: u32,
}

/// A live job and who owns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    pub id: String,
    /// `None`: no owner (its lease expired): adoptable.
    pub owner: Option<String>,
}

impl Db {
    /// Grants this node's lease and writes its node key.
    pub async fn join(&self, facts: NodeFacts) -> StoreResult<()> {
        let grant = retry_unsent(|| {
            let mut leases = self.client.lease_client();
            async move { leases.grant(ETCD_LEASE_TTL_S, None).await }
        });
        let lease = grant.await?.id();
        self.lease.store(lease, Ordering::Release);
        let value = serde_json::to_vec(&facts).map_err(|e| crate::store::StoreError::Encoding(e.to_string()))?;
        let options = PutOptions::new().with_lease(lease);
        self.put(self.layout.node(&self.node_id), value, Some(options)).await?;
        Ok(())
    }

    /// Keeps the lease alive until the runtime stops; a lost lease is replaced (and the node
    /// key written again) so the node counts as live and owns what it admits next.
    pub async fn keep_alive(self, facts: NodeFacts) {
        let period = Duration::from_millis((ETCD_LEASE_TTL_S as u64 * 1000) / 3);
        loop {
            tokio::time::sleep(period).await;
            let lease = self.lease.load(Ordering::Acquire);
            let opened = retry_unsent(|| {
                let mut leases = self.client.lease_client();
                async move { leases.keep_alive(lease).await }
            });
            let alive = match opened.await {
                Ok((mut keeper, mut stream)) => match keeper.keep_alive().await {
                    Ok(()) => matches!(stream.message().await, Ok(Some(answer)) if answer.ttl() > 0),
                    Err(e) => {
                        tracing::warn!(error = %e, "etcd lease renewal failed");
                        continue;
                    }
                },
                Err(e) => {
                    tracing::warn!(error = %e, "etcd lease renewal failed");
                    continue;
                }
            };
            if !alive {
                tracing::error!(lease, "this node's etcd lease expired: its jobs may be adopted; joining again");
                if let Err(e) = self.join(facts.clone()).await {
                    tracing::warn!(error = %e, "joining the etcd cluster again failed");
                }
            }
        }
    }

    /// Nodes whose lease is alive (this one included).
    pub async fn live_nodes(&self) -> StoreResult<usize> {
        let family = self.layout.family(b'n');
        let to = enc::prefix_end(&family).unwrap_or_default();
        let options = GetOptions::new().with_range(to).with_count_only();
        let response = self.get(family, Some(options)).await?;
        Ok(usize::try_from(response.count()).unwrap_or(0).max(1))
    }

    /// The ids of the nodes whose lease is alive (this one included), at most
    /// `STORE_PAGE_LEN_MAX`, in key order.
    pub async fn live_node_ids(&self) -> StoreResult<Vec<String>> {
        let family = self.layout.family(b'n');
        let to = enc::prefix_end(&family).unwrap_or_default();
        let options = GetOptions::new().with_range(to).with_keys_only().with_limit(STORE_PAGE_LEN_MAX as i64);
        let response = self.get(family, Some(options)).await?;
        let mut ids = Vec::with_capacity(response.kvs().len());
        for kv in response.kvs() {
            ids.push(String::from_utf8_lossy(self.layout.tail(b'n', kv.key())?).into_owned());
        }
        Ok(ids)
    }

    /// Up to `limit` live jobs (running first, then queued, oldest first) with their owners.
    pub async fn owners(&self, limit: usize) -> StoreResult<Vec<Owned>> {
        let limit = limit.min(STORE_PAGE_LEN_MAX);
        let mut ids = Vec::new();
        for state in [JobState::Running, JobState::Queued] {
            let from = self.layout.live_raw(&[state.byte()]);
            let to = self.layout.live_raw(&[state.byte() + 1]);
            if ids.len() >= limit {
                break;
            }
            let options = GetOptions::new().with_range(to).with_keys_only().with_limit((limit - ids.len()) as i64);
            let response = self.get(from, Some(options)).await?;
            for kv in response.kvs() {
                ids.push(enc::parse_live_key(self.layout.tail(b'l', kv.key())?)?.1.to_owned());
            }
        }
        let mut owned = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(64) {
            let gets: Vec<TxnOp> = chunk.iter().map(|id| TxnOp::get(self.layout.owner(id), None)).collect();
            let response = self.txn(Txn::new().and_then(gets)).await?;
            for (id, answer) in chunk.iter().zip(response.op_responses()) {
                let owner = match answer {
                    etcd_client::TxnOpResponse::Get(get) => {
                        get.kvs().first().map(|kv| String::from_utf8_lossy(kv.value()).into_owned())
                    }
                    _ => None,
                };
                owned.push(Owned { id: id.clone(), owner });
            }
        }
        Ok(owned)
    }

    /// Takes an ownerless live job: true when this node is now its owner.
    pub async fn adopt(&self, id: String) -> StoreResult<bool> {
        let owner = self.layout.owner(&id);
        let lease = self.lease.load(Ordering::Acquire);
        let when = vec![
            Compare::version(owner.clone(), CompareOp::Equal, 0),
            Compare::version(self.layout.job(&id), CompareOp::Greater, 0),
        ];
        let put = TxnOp::put(owner, self.node_id.as_bytes().to_vec(), Some(PutOptions::new().with_lease(lease)));
        let txn = Txn::new().when(when).and_then(vec![put]);
        Ok(self.txn(txn).await?.succeeded())
    }
}

impl Db {
    /// Writes the schema version if the cluster has none, else refuses another version.
    pub async fn check_schema(&self, supported: u32) -> StoreResult<()> {
        let key = self.layout.schema_version();
        let put = TxnOp::put(key.clone(), supported.to_be_bytes().to_vec(), None);
        let get = TxnOp::get(key.clone(), None);
        let txn =
            Txn::new().when(vec![Compare::version(key, CompareOp::Equal, 0)]).and_then(vec![put]).or_else(vec![get]);
        let response = self.txn(txn).await?;
        if response.succeeded() {
            return Ok(());
        }
        let stored = response.op_responses().into_iter().find_map(|answer| match answer {
            etcd_client::TxnOpResponse::Get(get) => get.kvs().first().map(|kv| kv.value().to_vec()),
            _ => None,
        });
        let found = stored.and_then(|v| <[u8; 4]>::try_from(v.as_slice()).ok()).map_or(0, u32::from_be_bytes);
        if found == supported {
            return Ok(());
        }
        if !crate::store::SCHEMA_VERSIONS_UPGRADED.contains(&found) {
            return Err(crate::store::StoreError::SchemaVersion { found, supported });
        }
        // Upgraded in place: only the version record changes (see `SCHEMA_VERSIONS_UPGRADED`);
        // a node racing this one finds the new version either way.
        let key = self.layout.schema_version();
        let was = Compare::value(key.clone(), CompareOp::Equal, found.to_be_bytes().to_vec());
        let put = TxnOp::put(key, supported.to_be_bytes().to_vec(), None);
        self.txn(Txn::new().when(vec![was]).and_then(vec![put])).await?;
        tracing::info!(from = found, to = supported, "etcd store schema upgraded in place");
        Ok(())
    }

    /// True for the one node that claims the cluster's first key (a compare-and-swap on the
    /// claim's absence), false for every other.
    pub async fn claim_first_key(&self) -> StoreResult<bool> {
        let key = self.layout.first_key();
        let put = TxnOp::put(key.clone(), self.node_id.as_bytes().to_vec(), None);
        let txn = Txn::new().when(vec![Compare::version(key, CompareOp::Equal, 0)]).and_then(vec![put]);
        Ok(self.txn(txn).await?.succeeded())
    }

    /// Revokes this node's lease (its node key and owner keys are deleted with it).
    pub async fn leave(&self) -> StoreResult<()> {
        let lease = self.lease.swap(0, Ordering::AcqRel);
        if lease != 0 {
            self.client.lease_client().revoke(lease).await.map_err(error)?;
        }
        Ok(())
    }

    /// The etcd member's database size and what compaction and defragmentation could free.
    pub async fn disk_usage(&self) -> StoreResult<crate::metrics::StoreDisk> {
        let status = self.client.maintenance_client().status().await.map_err(error)?;
        let bytes = u64::try_from(status.db_size()).unwrap_or(0);
        let in_use = u64::try_from(status.raft_used_db_size()).unwrap_or(0);
        Ok(crate::metrics::StoreDisk { bytes, pending_compaction_bytes: bytes.saturating_sub(in_use) })
    }
}
