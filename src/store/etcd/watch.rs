//! Watches: the key records every node keeps in memory, and one job's key while a long poll
//! waits for it on a node that does not run it.
//!
//! Owns: `watch_keys` (a task on the etcd thread for the life of the process: events in
//! revision order to a callback; a watch etcd cancels — its start revision was compacted, or
//! the connection broke — is followed by a full reload at a fresh revision and a new watch
//! after it, so no change is ever skipped) and `wait_finished` (one watch on one job key, ended
//! by a finished state or the deadline).
//!
//! Invariant: the callback sees every change of a key record after the revision it was loaded
//! at, or a `Reload` with all of them; never a gap.
//! Deliberately absent: a watch per poll without a bound — long polls take a waiter slot first
//! (`App::waiters_max`), and each slot is at most one watch.

use std::time::Duration;

use etcd_client::{EventType, WatchOptions};

use super::io::{error, retry_unsent};
use super::ops::Db;
use crate::auth::record::KeyRecord;
use crate::store::encoding as enc;
use crate::store::{JobRecord, StoreResult};

/// Pause before watching again after a watch failed (etcd unreachable).
const REWATCH_PAUSE_MS: u64 = 500;

/// One change of the key records, in revision order.
#[derive(Debug, Clone)]
pub enum KeyChange {
    /// A record was written (created, revoked, rotated).
    Put(Box<KeyRecord>),
    /// A record was deleted (its id).
    Deleted(String),
    /// The watch lost its place: here is every record, as of now.
    Reload(Vec<KeyRecord>),
}

impl Db {
    /// Follows the key records from `after_revision` until the runtime stops.
    pub async fn watch_keys(self, mut after_revision: i64, on_change: impl Fn(KeyChange) + Send + Sync + 'static) {
        loop {
            match self.follow_keys(after_revision, &on_change).await {
                Ok(next) => after_revision = next,
                Err(e) => tracing::warn!(error = %e, "the key watch broke; reloading every key"),
            }
            tokio::time::sleep(Duration::from_millis(REWATCH_PAUSE_MS)).await;
            match self.all_keys().await {
                Ok((keys, revision)) => {
                    on_change(KeyChange::Reload(keys));
                    after_revision = revision;
                }
                Err(e) => tracing::warn!(error = %e, "reloading the keys failed; retrying"),
            }
        }
    }

    /// One watch: returns when etcd cancels it (the caller reloads), with the last revision seen.
    async fn follow_keys(&self, after_revision: i64, on_change: &impl Fn(KeyChange)) -> StoreResult<i64> {
        let family = self.layout.family(b'k');
        let options = WatchOptions::new().with_prefix().with_start_revision(after_revision + 1);
        let mut stream = self.client.watch_client().watch(family, Some(options)).await.map_err(error)?;
        let mut seen = after_revision;
        while let Some(response) = stream.message().await.map_err(error)? {
            if response.canceled() {
                tracing::warn!(
                    compacted = response.compact_revision(),
                    reason = response.cancel_reason(),
                    "key watch cancelled"
                );
                return Ok(seen);
            }
            for event in response.events() {
                let Some(kv) = event.kv() else { continue };
                seen = seen.max(kv.mod_revision());
                let change = match event.event_type() {
                    EventType::Put => match enc::decode_json::<KeyRecord>(kv.value()) {
                        Ok(record) => KeyChange::Put(Box::new(record)),
                        Err(e) => {
                            tracing::error!(error = %e, "a key record in etcd does not decode; ignored");
                            continue;
                        }
                    },
                    EventType::Delete => {
                        let id = self.layout.tail(b'k', kv.key())?;
                        KeyChange::Deleted(String::from_utf8_lossy(id).into_owned())
                    }
                };
                on_change(change);
            }
        }
        Ok(seen)
    }

    /// Waits until the job is finished (returns its record) or `wait` passes (returns the
    /// record as last seen). `None` when the job does not exist.
    pub async fn wait_finished(&self, id: String, wait: Duration) -> StoreResult<Option<JobRecord>> {
        let Some((mut job, revision)) = self.get_job_at(id.clone()).await? else { return Ok(None) };
        if job.state.is_finished() {
            return Ok(Some(job));
        }
        let options = WatchOptions::new().with_start_revision(revision + 1);
        let deadline = tokio::time::Instant::now() + wait;
        let watch = retry_unsent(|| {
            let (mut watches, key, options) = (self.client.watch_client(), self.layout.job(&id), options.clone());
            async move { watches.watch(key, Some(options)).await }
        });
        let mut stream = watch.await?;
        loop {
            let message = match tokio::time::timeout_at(deadline, stream.message()).await {
                Ok(message) => message.map_err(error)?,
                Err(_) => return Ok(Some(job)),
            };
            let Some(response) = message else { return Ok(Some(job)) };
            if response.canceled() {
                return self.get_job(id).await;
            }
            for event in response.events() {
                match (event.event_type(), event.kv()) {
                    (EventType::Put, Some(kv)) => job = enc::decode_json(kv.value())?,
                    _ => return Ok(None), // deleted (an undone admission, or purged)
                }
            }
            if job.state.is_finished() {
                return Ok(Some(job));
            }
        }
    }
}
