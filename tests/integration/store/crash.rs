//! Crash durability: "acknowledged means durable" with `sync_writes = false`. The test binary
//! re-executes itself as a child that writes through the store and then dies without any
//! shutdown (`abort`, or `SIGKILL` from the parent mid-stream); the parent reopens the database
//! and finds every acknowledged job and every quota movement (WAL replay).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use super::support::*;
use xray::limits::quota::UsageRecord;
use xray::store::{Completion, LiveState, Store, StoreOptions};

/// Set in the child: the database directory and what to do.
const CHILD_DIR_ENV: &str = "XRAY_STORE_CRASH_DIR";
const CHILD_MODE_ENV: &str = "XRAY_STORE_CRASH_MODE";
const ABORT_JOBS: u64 = 200;
/// Jobs the parent waits to see acknowledged before it kills the child.
const KILL_AFTER_ACKS: usize = 300;
/// Upper bound of the killed child's writes, in case the parent never kills it.
const KILL_CHILD_JOBS_MAX: u64 = 200_000;

fn relaxed() -> StoreOptions {
    StoreOptions { sync_writes: false, block_cache_bytes: 8 << 20, ..StoreOptions::default() }
}

fn child(dir: &Path, mode: &str) -> Command {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(["store::crash::crash_child", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, dir)
        .env(CHILD_MODE_ENV, mode)
        .stderr(Stdio::null());
    cmd
}

/// Runs only as a re-executed child (the env var is unset in a normal test run).
#[test]
fn crash_child() {
    let (Some(dir), Ok(mode)) = (std::env::var_os(CHILD_DIR_ENV), std::env::var(CHILD_MODE_ENV)) else {
        return;
    };
    let store = open_with(Path::new(&dir), relaxed());
    if mode == "abort" {
        for i in 0..ABORT_JOBS {
            store.admit(&analysis(&format!("an_{i}"), &format!("W{i}"), i), None).unwrap();
        }
        for i in 0..ABORT_JOBS / 2 {
            let outcome = if i % 2 == 0 {
                Completion::Ready {
                    payload_json: payload("x"),
                    engine_version: ENGINE.into(),
                    event: None,
                    signature: None,
                }
            } else {
                Completion::Failed { code: "ANALYSIS_FAILED".into(), message: "boom".into() }
            };
            store.complete(&format!("an_{i}"), 1_000 + i, &outcome).unwrap();
        }
        std::process::abort();
    }
    for i in 0..KILL_CHILD_JOBS_MAX {
        store.admit(&analysis(&format!("an_{i}"), &format!("W{i}"), i), None).unwrap();
        println!("acked an_{i}");
    }
}

#[test]
fn aborted_process_loses_no_acknowledged_job_or_quota_movement() {
    let dir = tempfile::tempdir().unwrap();
    let status = child(dir.path(), "abort").stdout(Stdio::null()).status().unwrap();
    assert!(!status.success(), "the child must die by abort, not finish");

    let store = open_with(dir.path(), relaxed());
    let half = (ABORT_JOBS / 2) as i64;
    let expected = UsageRecord {
        used: half / 2,
        reserved: half,
        refunded: half / 2,
        wallet_analysis: half / 2,
        comparison: 0,
        transaction_scan: 0,
    };
    assert_eq!(store.usage(KEY_ID, PERIOD_MS).unwrap(), expected);
    for i in 0..ABORT_JOBS {
        let job = store.get_job(&format!("an_{i}")).unwrap();
        assert!(job.is_some(), "an_{i} was acknowledged and must survive");
    }
    let queued = store.live_jobs(LiveState::Queued, None, u64::MAX, 1_000).unwrap();
    assert_eq!(queued.jobs.len() as i64, half);
    let ready = store.get_job("an_0").unwrap().unwrap();
    assert_eq!(store.get_result(&ready).unwrap(), Some(payload("x")));
}

#[test]
fn killed_process_keeps_every_job_it_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut proc = child(dir.path(), "kill").stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(proc.stdout.take().unwrap()).lines();
    let mut acked = Vec::new();
    while acked.len() < KILL_AFTER_ACKS {
        match lines.next() {
            Some(line) => acked.extend(line.unwrap().strip_prefix("acked ").map(str::to_owned)),
            None => panic!("child ended before {KILL_AFTER_ACKS} acknowledgements"),
        }
    }
    proc.kill().unwrap(); // SIGKILL
                          // Lines already in the pipe were acknowledged before the kill as well.
    acked.extend(lines.map_while(Result::ok).filter_map(|l| l.strip_prefix("acked ").map(str::to_owned)));
    assert!(!proc.wait().unwrap().success());

    let store = open_with(dir.path(), relaxed());
    for id in &acked {
        assert!(store.get_job(id).unwrap().is_some(), "{id} was acknowledged and must survive");
    }
    // Each batch is atomic: the reservations are exactly the jobs that exist.
    let queued = count_queued(&store);
    assert!(queued >= acked.len());
    assert_eq!(store.usage(KEY_ID, PERIOD_MS).unwrap().reserved, queued as i64);
}

fn count_queued(store: &dyn Store) -> usize {
    let (mut count, mut cursor) = (0, None);
    loop {
        let page = store.live_jobs(LiveState::Queued, cursor.as_ref(), u64::MAX, 1_000).unwrap();
        count += page.jobs.len();
        match page.next {
            Some(next) => cursor = Some(next),
            None => return count,
        }
    }
}
