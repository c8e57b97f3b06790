//! The RocksDB store against a real database in a temporary directory: admission, cancel,
//! completion and its quota movements, reads, recovery paging, retention, schema versions,
//! keys, and concurrent usage merges.

use std::sync::Arc;

use super::support::*;
use xray::auth::key::AccountId;
use xray::auth::record::{KeyRecord, KeySpec, KeyStatus};
use xray::auth::scope::Scopes;
use xray::limits::quota::QuotaPeriod;
use xray::limits::quota::UsageRecord;
use xray::store::{
    Completion, JobCursor, JobState, LiveState, RocksStore, Store, StoreError, StoreOptions, Subject, COLUMN_FAMILIES,
    META_SCHEMA_VERSION_KEY, SCHEMA_VERSION,
};

fn ready(id: &str) -> Completion {
    Completion::Ready { payload_json: payload(id), engine_version: "1.1.0".into() }
}

fn failed() -> Completion {
    Completion::Failed { code: "UPSTREAM_UNAVAILABLE".into(), message: "rpc timed out".into() }
}

fn usage(store: &dyn Store) -> UsageRecord {
    store.usage(KEY_ID, PERIOD_MS).unwrap()
}

fn live(store: &dyn Store, state: LiveState) -> Vec<String> {
    let page = store.live_jobs(state, None, u64::MAX, 1000).unwrap();
    page.jobs.into_iter().map(|j| j.id).collect()
}

#[test]
fn admitted_job_is_readable_indexed_and_reserved() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let job = analysis("an_1", "Wallet1", 100);
    store.admit(&job).unwrap();

    assert_eq!(store.get_job("an_1").unwrap(), Some(job.clone()));
    assert_eq!(usage(&store), UsageRecord { reserved: 1, ..UsageRecord::default() });
    assert_eq!(store.latest_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(job.clone()));
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), None);
    assert_eq!(store.latest_for("acc_2", Subject::Wallet("Wallet1")).unwrap(), None);
    assert_eq!(store.latest_for(ACCOUNT, Subject::Pair("Wallet1")).unwrap(), None);
    assert_eq!(live(&store, LiveState::Queued), ["an_1"]);
    assert_eq!(store.get_result(&job).unwrap(), None);
}

#[test]
fn cancel_undoes_everything() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.admit(&analysis("an_1", "Wallet1", 100)).unwrap();
    store.cancel_admission("an_1").unwrap();

    assert_eq!(store.get_job("an_1").unwrap(), None);
    assert_eq!(usage(&store), UsageRecord::default());
    assert_eq!(store.latest_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), None);
    assert!(live(&store, LiveState::Queued).is_empty());
    assert!(matches!(store.cancel_admission("an_1"), Err(StoreError::State { .. })));
}

#[test]
fn ready_commits_the_reservation_and_stores_the_exact_payload() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.admit(&analysis("an_1", "Wallet1", 100)).unwrap();
    let running = store.mark_running("an_1", 150).unwrap();
    assert_eq!((running.state, running.started_at_ms), (JobState::Running, Some(150)));
    assert_eq!(live(&store, LiveState::Running), ["an_1"]);
    assert!(live(&store, LiveState::Queued).is_empty());
    assert!(matches!(store.cancel_admission("an_1"), Err(StoreError::State { .. })));

    let done = store.complete("an_1", 200, &ready("an_1")).unwrap();
    assert_eq!((done.state, done.completed_at_ms, done.engine_version.as_str()), (JobState::Ready, Some(200), "1.1.0"));
    assert_eq!(store.get_job("an_1").unwrap(), Some(done.clone()));
    assert_eq!(store.get_result(&done).unwrap(), Some(payload("an_1")));
    assert_eq!(usage(&store), UsageRecord { used: 1, wallet_analysis: 1, ..UsageRecord::default() });
    assert!(live(&store, LiveState::Running).is_empty());
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(done));

    // A second completion can never charge twice.
    assert!(matches!(store.complete("an_1", 300, &failed()), Err(StoreError::State { .. })));
    assert!(matches!(store.mark_running("an_1", 300), Err(StoreError::State { .. })));
    assert_eq!(usage(&store).used, 1);
}

#[test]
fn failed_refunds_the_reservation() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.admit(&comparison("cmp_1", "pair_1", 100)).unwrap();
    let done = store.complete("cmp_1", 200, &failed()).unwrap();

    assert_eq!(done.state, JobState::Failed);
    assert_eq!(done.error.as_ref().map(|e| e.code.as_str()), Some("UPSTREAM_UNAVAILABLE"));
    assert_eq!(store.get_result(&done).unwrap(), None);
    assert_eq!(usage(&store), UsageRecord { refunded: 1, ..UsageRecord::default() });
    assert_eq!(store.latest_for(ACCOUNT, Subject::Pair("pair_1")).unwrap(), Some(done));
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Pair("pair_1")).unwrap(), None);
}

#[test]
fn comparisons_count_under_their_operation_and_uncharged_jobs_move_no_quota() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.admit(&comparison("cmp_1", "pair_1", 100)).unwrap();
    let done = store.complete("cmp_1", 200, &ready("cmp_1")).unwrap();
    assert_eq!(store.get_result(&done).unwrap(), Some(payload("cmp_1")));
    let free = xray::store::JobRecord { charged: false, ..analysis("an_free", "Wallet9", 300) };
    store.admit(&free).unwrap();
    store.complete("an_free", 400, &ready("an_free")).unwrap();
    assert_eq!(usage(&store), UsageRecord { used: 1, comparison: 1, ..UsageRecord::default() });
}

#[test]
fn latest_ready_skips_newer_unfinished_or_failed_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store.admit(&analysis("an_old", "Wallet1", 100)).unwrap();
    let old = store.complete("an_old", 110, &ready("an_old")).unwrap();
    store.admit(&analysis("an_failed", "Wallet1", 200)).unwrap();
    store.complete("an_failed", 210, &failed()).unwrap();
    let newest = analysis("an_new", "Wallet1", 300);
    store.admit(&newest).unwrap();

    assert_eq!(store.latest_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(newest));
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(old));
}

#[test]
fn recovery_pages_live_jobs_in_creation_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    // Ids sort against their creation times, so order must come from the time, not the id.
    for i in 0..25u64 {
        store.admit(&analysis(&format!("an_{:02}", 99 - i), &format!("W{i}"), 1_000 + i)).unwrap();
    }
    store.mark_running("an_99", 5_000).unwrap();
    store.admit(&analysis("an_late", "Wlate", 9_000)).unwrap();

    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<JobCursor>, 0);
    loop {
        let page = store.live_jobs(LiveState::Queued, cursor.as_ref(), 9_000, 10).unwrap();
        pages += 1;
        seen.extend(page.jobs.iter().map(|j| j.created_at_ms));
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, (1_001..1_025).collect::<Vec<_>>(), "oldest first, no duplicates, no late job");
    assert_eq!(live(&store, LiveState::Running), ["an_99"]);
    assert_eq!(store.live_jobs(LiveState::Queued, None, u64::MAX, 0).unwrap().jobs.len(), 0);
}

#[test]
fn reopening_keeps_jobs_reservations_and_results() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.admit(&analysis("an_1", "Wallet1", 100)).unwrap();
        store.admit(&analysis("an_2", "Wallet2", 101)).unwrap();
        store.mark_running("an_2", 150).unwrap();
        store.admit(&analysis("an_3", "Wallet3", 102)).unwrap();
        store.complete("an_3", 200, &ready("an_3")).unwrap();
    }
    let store = open(dir.path());
    assert_eq!(live(&store, LiveState::Queued), ["an_1"]);
    assert_eq!(live(&store, LiveState::Running), ["an_2"]);
    assert_eq!(usage(&store), UsageRecord { used: 1, reserved: 2, wallet_analysis: 1, ..UsageRecord::default() });
    // A recovered RUNNING job runs again and finishes normally.
    store.mark_running("an_2", 300).unwrap();
    store.complete("an_2", 400, &failed()).unwrap();
    let job = store.get_job("an_3").unwrap().unwrap();
    assert_eq!(store.get_result(&job).unwrap(), Some(payload("an_3")));
    assert_eq!(usage(&store), UsageRecord { used: 1, reserved: 1, refunded: 1, wallet_analysis: 1, comparison: 0 });
}

#[test]
fn purge_is_bounded_and_removes_only_old_finished_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 1..=7u64 {
        let id = format!("an_{i}");
        store.admit(&analysis(&id, "Wallet1", i)).unwrap();
        store.complete(&id, i * 10, &if i % 2 == 0 { failed() } else { ready(&id) }).unwrap();
    }
    store.admit(&analysis("an_live", "Wallet1", 1)).unwrap();

    // Completed at 10..=50 are older than 60: five jobs, two per call.
    let counts: Vec<usize> = (0..4).map(|_| store.purge_finished_before(60, 2).unwrap()).collect();
    assert_eq!(counts, [2, 2, 1, 0]);
    for i in 1..=5 {
        assert_eq!(store.get_job(&format!("an_{i}")).unwrap(), None);
    }
    let kept = store.get_job("an_7").unwrap().unwrap();
    assert_eq!(store.get_result(&kept).unwrap(), Some(payload("an_7")));
    assert!(store.get_job("an_6").unwrap().is_some());
    assert!(store.get_job("an_live").unwrap().is_some());
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap().map(|j| j.id), Some("an_7".into()));
    // Usage history is not retention's business.
    assert_eq!(usage(&store).used, 4);
}

fn raw_db(dir: &std::path::Path, cfs: &[&str]) -> rocksdb::DB {
    let mut opts = rocksdb::Options::default();
    opts.create_if_missing(true);
    opts.create_missing_column_families(true);
    rocksdb::DB::open_cf(&opts, dir, cfs).unwrap()
}

#[test]
fn unknown_schema_versions_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(open(dir.path()));
    {
        let db = raw_db(dir.path(), COLUMN_FAMILIES);
        let meta = db.cf_handle("meta").unwrap();
        db.put_cf(meta, META_SCHEMA_VERSION_KEY, 99u32.to_be_bytes()).unwrap();
    }
    let err = RocksStore::open(dir.path(), &StoreOptions::default()).err();
    assert!(matches!(err, Some(StoreError::SchemaVersion { found: 99, supported: SCHEMA_VERSION })), "{err:?}");
    assert!(err.map(|e| e.to_string()).unwrap_or_default().contains("schema version 99"));

    // A database with data but no version record, and a foreign database, are refused too.
    let unversioned = tempfile::tempdir().unwrap();
    {
        let db = raw_db(unversioned.path(), COLUMN_FAMILIES);
        db.put_cf(db.cf_handle("jobs").unwrap(), b"an_1", b"x").unwrap();
    }
    let err = RocksStore::open(unversioned.path(), &StoreOptions::default()).err();
    assert!(matches!(err, Some(StoreError::SchemaVersion { found: 0, .. })), "{err:?}");
    let foreign = tempfile::tempdir().unwrap();
    drop(raw_db(foreign.path(), &["something_else"]));
    let err = RocksStore::open(foreign.path(), &StoreOptions::default()).err();
    assert!(matches!(err, Some(StoreError::SchemaVersion { found: 0, .. })), "{err:?}");
}

#[test]
fn an_empty_unversioned_database_is_initialised() {
    // A first open that died before writing the version leaves empty column families.
    let dir = tempfile::tempdir().unwrap();
    drop(raw_db(dir.path(), COLUMN_FAMILIES));
    drop(open(dir.path()));
    drop(open(dir.path()));
}

/// A freshly issued key record (random id), as the auth module makes them.
fn key() -> KeyRecord {
    let spec = KeySpec {
        account: AccountId::parse(ACCOUNT).unwrap(),
        name: "ci".into(),
        scopes: Scopes::parse_list("wallet:analyze,analysis:read").unwrap(),
        expires_at_ms: None,
        rate_per_second: 50,
        burst: 100,
        quota_limit: 10_000,
        quota_period: QuotaPeriod::Month,
    };
    spec.issue(1).unwrap().1
}

#[test]
fn keys_round_trip_and_list_in_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut keys: Vec<KeyRecord> = (0..5).map(|_| key()).collect();
    for k in &keys {
        store.put_key(k).unwrap();
    }
    keys.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
    let revoked = KeyRecord { status: KeyStatus::Revoked, revoked_at_ms: Some(2), ..keys[2].clone() };
    store.put_key(&revoked).unwrap();
    keys[2] = revoked.clone();
    assert_eq!(store.get_key(revoked.id.as_str()).unwrap(), Some(revoked));
    assert_eq!(store.get_key("key_missing").unwrap(), None);

    let first = store.list_keys(None, 3).unwrap();
    let rest = store.list_keys(first.last().map(|k| k.id.as_str()), 3).unwrap();
    let listed: Vec<KeyRecord> = first.into_iter().chain(rest).collect();
    assert_eq!(listed, keys, "all five, in id order, the digest only");
}

#[test]
fn limits_protect_every_write_and_over_long_reads_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let long = "x".repeat(1_000);
    assert!(matches!(store.admit(&analysis(&long, "W", 1)), Err(StoreError::Invalid(_))));
    assert!(matches!(store.admit(&analysis("an_1", &long, 1)), Err(StoreError::Invalid(_))));
    let running = xray::store::JobRecord { state: JobState::Running, ..analysis("an_1", "W", 1) };
    assert!(matches!(store.admit(&running), Err(StoreError::Invalid(_))));
    assert_eq!(store.get_job(&long).unwrap(), None);
    assert_eq!(store.get_key(&long).unwrap(), None);
    assert_eq!(store.latest_for(&long, Subject::Wallet("W")).unwrap(), None);
    assert_eq!(store.usage(&long, 0).unwrap(), UsageRecord::default());
    store.admit(&analysis("an_1", "W", 1)).unwrap();
    let huge = Completion::Failed { code: "ANALYSIS_FAILED".into(), message: long.repeat(2) };
    assert!(matches!(store.complete("an_1", 2, &huge), Err(StoreError::Invalid(_))));
    assert_eq!(usage(&store).reserved, 1, "a refused completion moves nothing");
}

#[test]
fn concurrent_admissions_and_completions_keep_usage_exact() {
    const THREADS: usize = 4;
    const JOBS_PER_THREAD: usize = 300;
    let dir = tempfile::tempdir().unwrap();
    // A tiny memtable budget forces flushes, so merges also run in flushes and compactions.
    let options = StoreOptions { write_buffer_bytes: 64 * 1024, block_cache_bytes: 8 << 20, ..StoreOptions::default() };
    let store: Arc<dyn Store> = Arc::new(open_with(dir.path(), options.clone()));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..JOBS_PER_THREAD {
                    let id = format!("an_{t}_{i}");
                    store.admit(&analysis(&id, &format!("W{t}_{i}"), i as u64)).unwrap();
                    match i % 4 {
                        0 => store.cancel_admission(&id).unwrap(),
                        1 => drop(store.complete(&id, 10, &failed()).unwrap()),
                        2 => drop(store.complete(&id, 10, &ready(&id)).unwrap()),
                        _ => {} // left queued
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let quarter = (THREADS * JOBS_PER_THREAD / 4) as i64;
    let expected =
        UsageRecord { used: quarter, reserved: quarter, refunded: quarter, wallet_analysis: quarter, comparison: 0 };
    assert_eq!(usage(store.as_ref()), expected);
    drop(store);
    let store = open_with(dir.path(), options);
    assert_eq!(usage(&store), expected, "after WAL replay and reopen");
    assert_eq!(live(&store, LiveState::Queued).len() as i64, quarter);
}

#[test]
fn backlog_hands_out_running_then_queued_in_bounded_pages() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    for i in 0..12u64 {
        store.admit(&analysis(&format!("an_{i:02}"), &format!("W{i}"), 100 + i)).unwrap();
    }
    for i in [3u64, 7, 9] {
        store.mark_running(&format!("an_{i:02}"), 500).unwrap();
    }
    store.admit(&analysis("an_new", "Wnew", 1_000)).unwrap();

    let mut backlog = xray::jobs::recovery::Backlog::new(1_000);
    let mut pages = Vec::new();
    while !backlog.is_done() {
        let page = backlog.next_page(&store, 4).unwrap();
        assert!(page.len() <= 4);
        // The server runs each job it takes; recovered RUNNING jobs are started again.
        for job in &page {
            store.mark_running(&job.id, 2_000).unwrap();
        }
        pages.push(page.into_iter().map(|j| j.id).collect::<Vec<_>>());
    }
    let order: Vec<String> = pages.concat();
    let expected: Vec<String> = [3, 7, 9, 0, 1, 2, 4, 5, 6, 8, 10, 11].iter().map(|i| format!("an_{i:02}")).collect();
    assert_eq!(order, expected);
    assert!(pages.len() <= 4, "{pages:?}");
    assert!(backlog.next_page(&store, 4).unwrap().is_empty());
}

#[test]
fn a_rotation_writes_both_keys_and_the_carried_usage_together() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let old = KeyRecord { status: KeyStatus::Revoked, revoked_at_ms: Some(5), ..key() };
    let new = key();
    let carried = UsageRecord { used: 7, refunded: 1, wallet_analysis: 6, comparison: 1, ..UsageRecord::default() };
    let carry = xray::store::UsageCarry { period_start_ms: PERIOD_MS, usage: carried };
    store.put_rotation(&old, &new, &carry).unwrap();
    assert_eq!(store.get_key(old.id.as_str()).unwrap(), Some(old));
    assert_eq!(store.get_key(new.id.as_str()).unwrap(), Some(new.clone()));
    assert_eq!(store.usage(new.id.as_str(), PERIOD_MS).unwrap(), carried);
}
