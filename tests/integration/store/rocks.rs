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
    assert_eq!(
        usage(&store),
        UsageRecord { used: 1, reserved: 1, refunded: 1, wallet_analysis: 1, comparison: 0, transaction_scan: 0 }
    );
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
    let expected = UsageRecord {
        used: quarter,
        reserved: quarter,
        refunded: quarter,
        wallet_analysis: quarter,
        comparison: 0,
        transaction_scan: 0,
    };
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

/// The answer of key number `n` (its digest starts with `n`) of `account`, created at `at_ms`.
fn numbered_answer(account: &str, n: u64, at_ms: u64) -> xray::store::IdempotentAnswer {
    let mut key_digest = [0u8; 32];
    key_digest[..8].copy_from_slice(&n.to_be_bytes());
    xray::store::IdempotentAnswer { key_digest, ..contract::answer(account, 0, "an_x", at_ms) }
}

/// Internal keys (deleted or overwritten) RocksDB's iterators stepped over during `f`, on this
/// thread: what a scan that starts before old tombstones pays on every call.
fn keys_skipped(f: impl FnOnce()) -> u64 {
    use rocksdb::perf::{set_perf_stats, PerfContext, PerfMetric, PerfStatsLevel};
    set_perf_stats(PerfStatsLevel::EnableCount);
    let mut context = PerfContext::default();
    context.reset();
    f();
    let skipped =
        context.metric(PerfMetric::InternalDeleteSkippedCount) + context.metric(PerfMetric::InternalKeySkippedCount);
    set_perf_stats(PerfStatsLevel::Disable);
    skipped
}

#[test]
fn scans_start_past_what_was_purged_delivered_or_evicted() {
    const N: u64 = 2_000;
    const WALKED_MAX: u64 = 10;
    let dir = tempfile::tempdir().unwrap();
    let options = StoreOptions { block_cache_bytes: 8 << 20, ..StoreOptions::default() };
    let store = open_with(dir.path(), options);
    // The answer purge: N answers gone in one call, then a purge finds nothing without
    // stepping over their tombstones again.
    for i in 0..N {
        store.put_answer(&numbered_answer(ACCOUNT, i, i + 1)).unwrap();
    }
    assert_eq!(store.purge_answers_before(N + 1, 100).unwrap(), N as usize);
    store.put_answer(&numbered_answer(ACCOUNT, N, N + 10)).unwrap();
    let walked = keys_skipped(|| assert_eq!(store.purge_answers_before(N + 5, 100).unwrap(), 0));
    assert!(walked <= WALKED_MAX, "the answer purge stepped over {walked} deleted keys");

    // The webhook outbox: N delivered callbacks leave N tombstones; after one scan has passed
    // them, the 100 ms poll no longer walks them.
    for i in 0..N {
        let id = format!("an_{i}");
        let callback = Some(xray::store::Callback::pending(format!("https://hooks.example/{id}")));
        store.admit(&xray::store::JobRecord { callback, ..analysis(&id, &format!("W{i}"), i + 1) }, None).unwrap();
        let pending = store.complete(&id, i + 1, &ready(&id)).unwrap().callback.unwrap();
        let delivered =
            xray::store::Callback { status: xray::store::CallbackStatus::Delivered, attempts: 1, ..pending.clone() };
        store.record_callback(&id, &pending, &delivered).unwrap();
    }
    assert!(store.due_callbacks(N + 10, None, 16).unwrap().jobs.is_empty());
    let walked = keys_skipped(|| assert!(store.due_callbacks(N + 20, None, 16).unwrap().jobs.is_empty()));
    assert!(walked <= WALKED_MAX, "the outbox scan stepped over {walked} deleted keys");

    // The retention purge: the same, over the completion index.
    assert_eq!(store.purge_finished_before(N + 1, 10_000).unwrap(), N as usize);
    let walked = keys_skipped(|| assert_eq!(store.purge_finished_before(N + 5, 100).unwrap(), 0));
    assert!(walked <= WALKED_MAX, "the retention purge stepped over {walked} deleted keys");

    // Eviction past the cap: each write finds the account's oldest answer directly, not after
    // the tombstones of every earlier eviction.
    let capped_dir = tempfile::tempdir().unwrap();
    let capped = open(capped_dir.path());
    for i in 0..N {
        capped.put_answer(&numbered_answer(ACCOUNT, i, i + 1)).unwrap();
    }
    let walked = keys_skipped(|| assert_eq!(capped.put_answer(&numbered_answer(ACCOUNT, N, N + 1)).unwrap(), None));
    assert!(walked <= WALKED_MAX, "an eviction stepped over {walked} deleted keys");
    assert_eq!(capped.answer_count(ACCOUNT).unwrap(), ANSWER_CAP as u64);
}

#[test]
fn a_database_without_the_answer_families_opens_and_counts_new_answers() {
    let dir = tempfile::tempdir().unwrap();
    let old_families: Vec<&str> = COLUMN_FAMILIES
        .iter()
        .copied()
        .filter(|cf| !["idempotency_by_account", "idempotency_accounts"].contains(cf))
        .collect();
    assert_eq!(old_families.len() + 2, COLUMN_FAMILIES.len());
    {
        let db = raw_db(dir.path(), &old_families);
        db.put_cf(db.cf_handle("meta").unwrap(), META_SCHEMA_VERSION_KEY, SCHEMA_VERSION.to_be_bytes()).unwrap();
    }
    let store = open(dir.path());
    for i in 0..ANSWER_CAP as u64 + 2 {
        store.put_answer(&numbered_answer(ACCOUNT, i, 10 + i)).unwrap();
    }
    assert_eq!(store.answer_count(ACCOUNT).unwrap(), ANSWER_CAP as u64);
    assert_eq!(store.purge_answers_before(u64::MAX, 3).unwrap(), ANSWER_CAP);
    assert_eq!(store.answer_count(ACCOUNT).unwrap(), 0);
}

/// Keys in one column family of a closed store.
fn keys_in(dir: &std::path::Path, cf: &str) -> u64 {
    let db = rocksdb::DB::open_cf_for_read_only(&rocksdb::Options::default(), dir, COLUMN_FAMILIES, false).unwrap();
    let mut it = db.raw_iterator_cf(db.cf_handle(cf).unwrap());
    let mut n = 0;
    it.seek_to_first();
    while it.valid() {
        n += 1;
        it.next();
    }
    n
}

/// The measurement of issue #28 item 3 (docs/idempotency.md): 1,000,000 keyed answers of one
/// account through `put_answer` (the write of a deduplicated or fresh-reuse answer), a fresh
/// key each (a client sending a UUID per POST), with the server's cap. Prints what is left and
/// how big the store is; asserts only the bound. Run it with
/// `cargo test --release --test integration -- --ignored --nocapture a_million_keyed_answers`.
/// `XRAY_MEASURE_ANSWERS` sets another count; `XRAY_MEASURE_UNCAPPED=1` runs without a cap
/// (what the store did before the cap).
#[test]
#[ignore = "a measurement: about a minute"]
fn a_million_keyed_answers_of_one_account_stay_bounded() {
    let answers: u64 = std::env::var("XRAY_MEASURE_ANSWERS").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    let uncapped = std::env::var("XRAY_MEASURE_UNCAPPED").is_ok_and(|v| v == "1");
    let cap = if uncapped { usize::MAX } else { xray::config::IDEMPOTENCY_ANSWERS_PER_ACCOUNT_MAX };
    let dir = tempfile::tempdir_in(std::env::var("XRAY_MEASURE_DIR").unwrap_or_else(|_| "/var/tmp".into())).unwrap();
    let store = open_with(dir.path(), StoreOptions { answers_per_account_max: cap, ..StoreOptions::default() });
    let started = std::time::Instant::now();
    let base_ms = 1_800_000_000_000;
    for i in 0..answers {
        // 50 answers a second (the default key rate): 1,000,000 span 5.6 hours.
        let answer = xray::store::IdempotentAnswer {
            job_id: "an_0123456789abcdef0123456789abcdef".into(),
            ..numbered_answer("acc_measure_0001", i, base_ms + i * 20)
        };
        store.put_answer(&answer).unwrap();
    }
    let elapsed = started.elapsed();
    let counted = store.answer_count("acc_measure_0001").unwrap();
    let disk = store.disk_usage().unwrap();
    drop(store);
    let records = keys_in(dir.path(), "idempotency");
    let by_time = keys_in(dir.path(), "idempotency_by_time");
    let by_account = keys_in(dir.path(), "idempotency_by_account");
    // The same store once compaction has dropped what was deleted (what it settles to).
    let compacted = {
        let mut opts = rocksdb::Options::default();
        opts.create_missing_column_families(true);
        let db = rocksdb::DB::open_cf(&opts, dir.path(), COLUMN_FAMILIES).unwrap();
        for cf in COLUMN_FAMILIES {
            db.compact_range_cf(db.cf_handle(cf).unwrap(), None::<&[u8]>, None::<&[u8]>);
        }
        drop(db);
        let store = open_with(dir.path(), StoreOptions::default());
        store.disk_usage().unwrap()
    };
    println!(
        "measure: answers written {answers}, cap {}, {:.1} s ({:.1} µs each)",
        if uncapped { "none".to_owned() } else { cap.to_string() },
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / answers as f64
    );
    println!("measure: counted {counted}; records: idempotency {records}, idempotency_by_time {by_time}, idempotency_by_account {by_account}");
    println!(
        "measure: store on disk right after: {} bytes (SST + WAL), pending compaction {} bytes",
        disk.bytes, disk.pending_compaction_bytes
    );
    println!("measure: store on disk after a full compaction: {} bytes", compacted.bytes);
    if !uncapped {
        assert_eq!(records, cap.min(answers as usize) as u64);
        assert_eq!(counted, records);
    }
}
