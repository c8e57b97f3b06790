//! The RocksDB store against a real database in a temporary directory: admission, cancel,
//! completion and its quota movements, reads, recovery paging, retention, schema versions,
//! keys, and concurrent usage merges.

use std::sync::Arc;

use super::contract::{self, failed, key, live, ready, usage};
use super::support::*;
use xray::auth::record::{KeyRecord, KeyStatus};
use xray::limits::quota::UsageRecord;
use xray::store::{
    Completion, JobState, LiveState, RocksStore, Store, StoreError, StoreOptions, Subject, COLUMN_FAMILIES,
    META_SCHEMA_VERSION_KEY, SCHEMA_VERSION,
};

/// One test per function of the store contract, each on RocksDB in a fresh temp directory.
macro_rules! contract_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let dir = tempfile::tempdir().unwrap();
                contract::$name(&open(dir.path()));
            }
        )*
    };
}

contract::every_test!(contract_tests);

#[test]
fn reopening_keeps_jobs_reservations_and_results() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = open(dir.path());
        store.admit(&analysis("an_1", "Wallet1", 100), None).unwrap();
        store.admit(&analysis("an_2", "Wallet2", 101), None).unwrap();
        store.mark_running("an_2", 150).unwrap();
        store.admit(&analysis("an_3", "Wallet3", 102), None).unwrap();
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

#[test]
fn limits_protect_every_write_and_over_long_reads_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let long = "x".repeat(1_000);
    assert!(matches!(store.admit(&analysis(&long, "W", 1), None), Err(StoreError::Invalid(_))));
    assert!(matches!(store.admit(&analysis("an_1", &long, 1), None), Err(StoreError::Invalid(_))));
    let running = xray::store::JobRecord { state: JobState::Running, ..analysis("an_1", "W", 1) };
    assert!(matches!(store.admit(&running, None), Err(StoreError::Invalid(_))));
    assert_eq!(store.get_job(&long).unwrap(), None);
    assert_eq!(store.get_key(&long).unwrap(), None);
    assert_eq!(store.latest_for(&long, Subject::Wallet("W")).unwrap(), None);
    assert_eq!(store.usage(&long, 0).unwrap(), UsageRecord::default());
    store.admit(&analysis("an_1", "W", 1), None).unwrap();
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
                    store.admit(&analysis(&id, &format!("W{t}_{i}"), i as u64), None).unwrap();
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
