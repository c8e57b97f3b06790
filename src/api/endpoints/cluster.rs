//! Polls, long polls and quota reads on a node of a cluster (`--store etcd:…`): what this
//! node's status index and memory do not hold — a job another node admitted or finished, the
//! key's usage every node charges — is read from etcd and awaited (the read runs on the
//! `xray-etcd` thread; the listener thread serves other requests meanwhile).
//!
//! Invariant: a job is answered the same on every node: live jobs from etcd's record (or this
//! node's index when it runs them), finished ones from memory once read (a finished job never
//! changes), the newest job of a pair always from etcd (another node may have made a newer one).
//! Invariant: a long poll of a job another node runs holds a waiter slot (`waiters_max`) and
//! one etcd watch of that job's key, ended by its completion or the wait.
//! Deliberately absent: a cache of live jobs or of usage (both change on other nodes).

use std::time::Duration;

use bytes::Bytes;

use super::{Endpoints, Snapshot, WaiterSlot};
use crate::api::ApiError;
use crate::http::ApiResponse;
use crate::jobs::finished::StoredJob;
use crate::limits::quota::period_start_ms;
use crate::store::etcd::{EtcdStore, OwnedSubject};
use crate::store::{JobKind, JobRecord, JobState, StoreError, Subject};

fn store_error(e: StoreError) -> ApiError {
    ApiError::from_store(&e)
}

impl Endpoints<'_> {
    /// A poll of an analysis this node's index does not hold.
    pub(super) async fn poll_analysis_in_cluster(
        &self,
        etcd: &EtcdStore,
        id: &str,
        wait_s: Option<u32>,
    ) -> Result<ApiResponse, ApiError> {
        let mine =
            |record: &JobRecord| record.account == self.account() && matches!(record.kind, JobKind::Analysis { .. });
        if let Some(job) = self.app.admission.finished().cached(id) {
            return match mine(&job.record) {
                true => self.stored_poll_body(&job).await,
                false => Err(ApiError::NotFound),
            };
        }
        let record = etcd.get_job_async(id.to_owned()).await.map_err(store_error)?;
        let record = record.filter(|r| mine(r)).ok_or(ApiError::NotFound)?;
        self.answer_from_cluster(etcd, record, wait_s).await
    }

    /// A poll of a pair whose newest job this node's index does not hold.
    pub(super) async fn poll_comparison_in_cluster(
        &self,
        etcd: &EtcdStore,
        subject: Subject<'_>,
        wait_s: Option<u32>,
    ) -> Result<ApiResponse, ApiError> {
        let newest = etcd.newest_async(self.account().to_owned(), OwnedSubject::of(subject), false).await;
        let record = newest.map_err(store_error)?.ok_or(ApiError::NotFound)?;
        if let Some(job) = self.app.admission.finished().cached(&record.id) {
            return self.stored_poll_body(&job).await;
        }
        self.answer_from_cluster(etcd, record, wait_s).await
    }

    /// The answer of a job read from etcd: waits for a live one (`wait`), then answers its
    /// state; a finished one is kept in memory with its payload.
    async fn answer_from_cluster(
        &self,
        etcd: &EtcdStore,
        mut record: JobRecord,
        wait_s: Option<u32>,
    ) -> Result<ApiResponse, ApiError> {
        let wait = wait_s.filter(|s| *s > 0).map(|s| Duration::from_secs(u64::from(s)));
        if let (false, Some(wait)) = (record.state.is_finished(), wait) {
            if let Some(_slot) = WaiterSlot::take(&self.app.waiters, self.app.waiters_max) {
                let waited = etcd.wait_finished_async(record.id.clone(), wait).await.map_err(store_error)?;
                record = waited.ok_or(ApiError::NotFound)?;
            }
        }
        if !record.state.is_finished() {
            return self.poll_body(Snapshot::of_record(&record));
        }
        let payload = match record.state {
            JobState::Ready => {
                let payload = etcd.get_result_async(record.clone()).await.map_err(store_error)?;
                Some(Bytes::from(payload.ok_or(ApiError::NotFound)?))
            }
            _ => None,
        };
        let job = self.app.admission.finished().keep_finished(StoredJob::new(record, payload));
        self.stored_poll_body(&job).await
    }

    /// In a cluster every node charges a key, so its usage is what etcd holds: read into the
    /// key's counters before the status or usage document shows them (a no-op on one node).
    pub(super) async fn refresh_quota_from_cluster(&self) -> Result<(), ApiError> {
        let Some(etcd) = self.app.admission.cluster() else { return Ok(()) };
        let (key, now_ms) = (&self.caller.key, self.caller.now_ms);
        let start_ms = period_start_ms(now_ms, key.quota.period());
        let usage = etcd.usage_async(key.id().as_str().to_owned(), start_ms).await.map_err(store_error)?;
        key.quota.restore(start_ms, &usage, now_ms);
        Ok(())
    }
}
