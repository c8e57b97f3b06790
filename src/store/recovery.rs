//! The recovery backlog: jobs a stopped process left `RUNNING` or `QUEUED`, handed out in
//! bounded pages so the server re-queues what fits in its work queue and fetches the rest later.
//!
//! Owns: only a position (state and cursor), never the jobs themselves. Called by the server's
//! start-up code and, while the backlog is not empty, by whichever thread refills the work
//! queue (one at a time: `Backlog` is not shared).
//!
//! Invariant: memory is bounded by the page the caller asks for; the rest stays on disk.
//! Invariant: `RUNNING` jobs come first (they were already started, so they are the oldest
//! work), then `QUEUED` jobs, each oldest first; only jobs created before `created_before_ms`
//! (the process start) are returned, so jobs admitted by the new process never appear.
//! Invariant: each recovered job is returned once; their reservations stay as they are in the
//! usage records and are committed or refunded when the job completes.

use super::{JobCursor, JobRecord, LiveState, Store, StoreResult};

/// Position in the recovery scan.
#[derive(Debug, Clone)]
pub struct Backlog {
    created_before_ms: u64,
    /// The state being scanned; `None` once both are exhausted.
    state: Option<LiveState>,
    cursor: Option<JobCursor>,
}

impl Backlog {
    /// A backlog of the jobs created before `created_before_ms` (pass the process start time).
    pub fn new(created_before_ms: u64) -> Backlog {
        Backlog { created_before_ms, state: Some(LiveState::Running), cursor: None }
    }

    /// True once every left-over job was handed out.
    pub fn is_done(&self) -> bool {
        self.state.is_none()
    }

    /// Up to `limit` more jobs (fewer only when the backlog ends); empty when done.
    pub fn next_page(&mut self, store: &dyn Store, limit: usize) -> StoreResult<Vec<JobRecord>> {
        let mut jobs = Vec::new();
        while let Some(state) = self.state.filter(|_| jobs.len() < limit) {
            let page = store.live_jobs(state, self.cursor.as_ref(), self.created_before_ms, limit - jobs.len())?;
            jobs.extend(page.jobs);
            self.cursor = page.next;
            if self.cursor.is_none() {
                self.state = match state {
                    LiveState::Running => Some(LiveState::Queued),
                    LiveState::Queued => None,
                };
            }
        }
        Ok(jobs)
    }
}
