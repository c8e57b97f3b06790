//! The store contract: what every [`Store`] does, whatever keeps the data. Each function takes
//! a freshly opened, empty store; `store::rocks` runs them on RocksDB in a temp directory,
//! `cluster::store` on a real 3-member etcd cluster.

use super::support::*;
use xray::auth::key::AccountId;
use xray::auth::record::{KeyRecord, KeySpec, KeyStatus};
use xray::auth::scope::Scopes;
use xray::limits::quota::QuotaPeriod;
use xray::limits::quota::UsageRecord;
use xray::store::{
    Attached, Callback, CallbackStatus, Completion, DueCursor, IdempotentAnswer, JobCursor, JobState, LiveState, Store,
    StoreError, Subject, WebhookSecret,
};

/// Calls `$tests!` with the name of every function of the contract: each store's test module
/// makes its tests from this one list (`contract::every_test!(contract_tests);`).
macro_rules! every_test {
    ($tests:ident) => {
        $tests!(
            admitted_job_is_readable_indexed_and_reserved,
            cancel_undoes_everything,
            ready_commits_the_reservation_and_stores_the_exact_payload,
            failed_refunds_the_reservation,
            comparisons_count_under_their_operation_and_uncharged_jobs_move_no_quota,
            latest_ready_skips_newer_unfinished_or_failed_jobs,
            recovery_pages_live_jobs_in_creation_order,
            purge_is_bounded_and_removes_only_old_finished_jobs,
            keys_round_trip_and_list_in_pages,
            backlog_hands_out_running_then_queued_in_bounded_pages,
            a_rotation_carries_the_old_keys_usage,
            an_admission_keeps_its_answer_in_the_same_write,
            one_purge_removes_every_expired_answer_in_batches,
            answers_past_the_cap_evict_the_oldest_of_that_account_only,
            writers_of_one_account_on_many_threads_keep_its_count_exact,
            the_webhook_outbox_holds_finished_jobs_until_delivered_or_given_up,
            webhook_secrets_are_per_account_and_replaced_on_rotation,
            an_accounts_outbox_keeps_its_newest_webhooks,
            a_webhook_attached_later_is_set_once_and_enters_the_outbox_when_finished,
            a_synchronous_unit_is_charged_at_once_beside_reservations,
            feature_records_scan_both_ways_within_their_prefix,
        );
    };
}
pub(crate) use every_test;

pub fn ready(id: &str) -> Completion {
    Completion::Ready { payload_json: payload(id), engine_version: "1.1.0".into(), event: None, signature: None }
}

pub fn failed() -> Completion {
    Completion::Failed { code: "UPSTREAM_UNAVAILABLE".into(), message: "rpc timed out".into() }
}

pub fn usage(store: &dyn Store) -> UsageRecord {
    store.usage(KEY_ID, PERIOD_MS).unwrap()
}

pub fn live(store: &dyn Store, state: LiveState) -> Vec<String> {
    let page = store.live_jobs(state, None, u64::MAX, 1000).unwrap();
    page.jobs.into_iter().map(|j| j.id).collect()
}

pub fn key() -> KeyRecord {
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

pub fn admitted_job_is_readable_indexed_and_reserved(store: &dyn Store) {
    let job = analysis("an_1", "Wallet1", 100);
    store.admit(&job, None).unwrap();

    assert_eq!(store.get_job("an_1").unwrap(), Some(job.clone()));
    assert_eq!(usage(store), UsageRecord { reserved: 1, ..UsageRecord::default() });
    assert_eq!(store.latest_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(job.clone()));
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), None);
    assert_eq!(store.latest_for("acc_2", Subject::Wallet("Wallet1")).unwrap(), None);
    assert_eq!(store.latest_for(ACCOUNT, Subject::Pair("Wallet1")).unwrap(), None);
    assert_eq!(live(store, LiveState::Queued), ["an_1"]);
    assert_eq!(store.get_result(&job).unwrap(), None);
}

pub fn cancel_undoes_everything(store: &dyn Store) {
    store.admit(&analysis("an_1", "Wallet1", 100), None).unwrap();
    store.cancel_admission("an_1").unwrap();

    assert_eq!(store.get_job("an_1").unwrap(), None);
    assert_eq!(usage(store), UsageRecord::default());
    assert_eq!(store.latest_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), None);
    assert!(live(store, LiveState::Queued).is_empty());
    assert!(matches!(store.cancel_admission("an_1"), Err(StoreError::State { .. })));
}

pub fn ready_commits_the_reservation_and_stores_the_exact_payload(store: &dyn Store) {
    store.admit(&analysis("an_1", "Wallet1", 100), None).unwrap();
    let running = store.mark_running("an_1", 150).unwrap();
    assert_eq!((running.state, running.started_at_ms), (JobState::Running, Some(150)));
    assert_eq!(live(store, LiveState::Running), ["an_1"]);
    assert!(live(store, LiveState::Queued).is_empty());
    assert!(matches!(store.cancel_admission("an_1"), Err(StoreError::State { .. })));

    let done = store.complete("an_1", 200, &ready("an_1")).unwrap();
    assert_eq!((done.state, done.completed_at_ms, done.engine_version.as_str()), (JobState::Ready, Some(200), "1.1.0"));
    assert_eq!(store.get_job("an_1").unwrap(), Some(done.clone()));
    assert_eq!(store.get_result(&done).unwrap(), Some(payload("an_1")));
    assert_eq!(usage(store), UsageRecord { used: 1, wallet_analysis: 1, ..UsageRecord::default() });
    assert!(live(store, LiveState::Running).is_empty());
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(done));

    // A second completion can never charge twice.
    assert!(matches!(store.complete("an_1", 300, &failed()), Err(StoreError::State { .. })));
    assert!(matches!(store.mark_running("an_1", 300), Err(StoreError::State { .. })));
    assert_eq!(usage(store).used, 1);
}

pub fn failed_refunds_the_reservation(store: &dyn Store) {
    store.admit(&comparison("cmp_1", "pair_1", 100), None).unwrap();
    let done = store.complete("cmp_1", 200, &failed()).unwrap();

    assert_eq!(done.state, JobState::Failed);
    assert_eq!(done.error.as_ref().map(|e| e.code.as_str()), Some("UPSTREAM_UNAVAILABLE"));
    assert_eq!(store.get_result(&done).unwrap(), None);
    assert_eq!(usage(store), UsageRecord { refunded: 1, ..UsageRecord::default() });
    assert_eq!(store.latest_for(ACCOUNT, Subject::Pair("pair_1")).unwrap(), Some(done));
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Pair("pair_1")).unwrap(), None);
}

pub fn comparisons_count_under_their_operation_and_uncharged_jobs_move_no_quota(store: &dyn Store) {
    store.admit(&comparison("cmp_1", "pair_1", 100), None).unwrap();
    let done = store.complete("cmp_1", 200, &ready("cmp_1")).unwrap();
    assert_eq!(store.get_result(&done).unwrap(), Some(payload("cmp_1")));
    let free = xray::store::JobRecord { charged: false, ..analysis("an_free", "Wallet9", 300) };
    store.admit(&free, None).unwrap();
    store.complete("an_free", 400, &ready("an_free")).unwrap();
    assert_eq!(usage(store), UsageRecord { used: 1, comparison: 1, ..UsageRecord::default() });
}

pub fn latest_ready_skips_newer_unfinished_or_failed_jobs(store: &dyn Store) {
    store.admit(&analysis("an_old", "Wallet1", 100), None).unwrap();
    let old = store.complete("an_old", 110, &ready("an_old")).unwrap();
    store.admit(&analysis("an_failed", "Wallet1", 200), None).unwrap();
    store.complete("an_failed", 210, &failed()).unwrap();
    let newest = analysis("an_new", "Wallet1", 300);
    store.admit(&newest, None).unwrap();

    assert_eq!(store.latest_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(newest));
    assert_eq!(store.latest_ready_for(ACCOUNT, Subject::Wallet("Wallet1")).unwrap(), Some(old));
}

pub fn recovery_pages_live_jobs_in_creation_order(store: &dyn Store) {
    // Ids sort against their creation times, so order must come from the time, not the id.
    for i in 0..25u64 {
        store.admit(&analysis(&format!("an_{:02}", 99 - i), &format!("W{i}"), 1_000 + i), None).unwrap();
    }
    store.mark_running("an_99", 5_000).unwrap();
    store.admit(&analysis("an_late", "Wlate", 9_000), None).unwrap();

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
    assert_eq!(live(store, LiveState::Running), ["an_99"]);
    assert_eq!(store.live_jobs(LiveState::Queued, None, u64::MAX, 0).unwrap().jobs.len(), 0);
}

pub fn purge_is_bounded_and_removes_only_old_finished_jobs(store: &dyn Store) {
    for i in 1..=7u64 {
        let id = format!("an_{i}");
        store.admit(&analysis(&id, "Wallet1", i), None).unwrap();
        store.complete(&id, i * 10, &if i % 2 == 0 { failed() } else { ready(&id) }).unwrap();
    }
    store.admit(&analysis("an_live", "Wallet1", 1), None).unwrap();

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
    assert_eq!(usage(store).used, 4);
}

/// The answer of `job_id` for key digest `[digest; 32]` of `account`, created at `at_ms`.
pub fn answer(account: &str, digest: u8, job_id: &str, at_ms: u64) -> IdempotentAnswer {
    IdempotentAnswer {
        account: account.into(),
        key_digest: [digest; 32],
        fingerprint: [7; 32],
        job_id: job_id.into(),
        state: JobState::Queued,
        deduplicated: false,
        created_at_ms: at_ms,
    }
}

pub fn an_admission_keeps_its_answer_in_the_same_write(store: &dyn Store) {
    let first = answer(ACCOUNT, 1, "an_1", 100);
    let job = xray::store::JobRecord { idempotency_digest: Some([1; 32]), ..analysis("an_1", "Wallet1", 100) };
    // An answer must name its job, and the job its answer.
    let stranger = answer(ACCOUNT, 1, "an_other", 100);
    assert!(matches!(store.admit(&job, Some(&stranger)), Err(StoreError::Invalid(_))));
    assert!(matches!(store.admit(&analysis("an_1", "Wallet1", 100), Some(&first)), Err(StoreError::Invalid(_))));
    store.admit(&job, Some(&first)).unwrap();
    assert_eq!(store.get_answer(ACCOUNT, &[1; 32]).unwrap(), Some(first.clone()));
    // Per account and key: another account's same key, or another key, has nothing.
    assert_eq!(store.get_answer("acc_2", &[1; 32]).unwrap(), None);
    assert_eq!(store.get_answer(ACCOUNT, &[2; 32]).unwrap(), None);
    assert_eq!(store.get_answer(&"a".repeat(300), &[1; 32]).unwrap(), None, "an over-long account is not found");
    // A later answer of the same key never replaces the first: it is handed back.
    let later = IdempotentAnswer { deduplicated: true, ..answer(ACCOUNT, 1, "an_other", 200) };
    assert_eq!(store.put_answer(&later).unwrap(), Some(first.clone()));
    assert_eq!(store.get_answer(ACCOUNT, &[1; 32]).unwrap(), Some(first));
    // A request that made no job keeps its answer the same way.
    let dedup = IdempotentAnswer { deduplicated: true, state: JobState::Running, ..answer(ACCOUNT, 3, "an_1", 300) };
    assert_eq!(store.put_answer(&dedup).unwrap(), None);
    assert_eq!(store.get_answer(ACCOUNT, &[3; 32]).unwrap(), Some(dedup));
    assert_eq!(usage(store).reserved, 1, "answers move no quota");
    // Undoing an admission undoes its answer.
    let job = xray::store::JobRecord { idempotency_digest: Some([4; 32]), ..analysis("an_4", "Wallet4", 400) };
    store.admit(&job, Some(&answer(ACCOUNT, 4, "an_4", 400))).unwrap();
    assert_eq!(store.get_job("an_4").unwrap(), Some(job));
    store.cancel_admission("an_4").unwrap();
    assert_eq!(store.get_answer(ACCOUNT, &[4; 32]).unwrap(), None);
    assert_eq!(usage(store).reserved, 1);
}

/// The answer of key `[digest; 32]` of `acc_<account>`, created at `at_ms`.
fn answer_of(account: u8, digest: u8, at_ms: u64) -> IdempotentAnswer {
    answer(&format!("acc_{account}"), digest, "an_x", at_ms)
}

pub fn one_purge_removes_every_expired_answer_in_batches(store: &dyn Store) {
    // 5 accounts × 5 answers (under the cap), created at 10, 20, … 250.
    for i in 0..25u8 {
        store.put_answer(&answer_of(i % 5, i, (u64::from(i) + 1) * 10)).unwrap();
    }
    // Created at 10..=200 are older than 205: twenty answers, gone in one call of batches of 3
    // (the old purge stopped at one page per call and could fall behind).
    assert_eq!(store.purge_answers_before(205, 3).unwrap(), 20);
    for i in 0..25u8 {
        let kept = store.get_answer(&format!("acc_{}", i % 5), &[i; 32]).unwrap();
        assert_eq!(kept.is_some(), i >= 20, "answer {i}");
    }
    for account in 0..5u8 {
        assert_eq!(store.answer_count(&format!("acc_{account}")).unwrap(), 1, "acc_{account} keeps one");
    }
    assert_eq!(store.purge_answers_before(205, 3).unwrap(), 0, "nothing left to take");
    // An answer past its window is as good as absent: a new answer of the key replaces it and
    // takes its place in the count.
    let expired = answer_of(0, 20, 210 + xray::config::IDEMPOTENCY_TTL_MS);
    assert_eq!(store.put_answer(&expired).unwrap(), None);
    assert_eq!(store.get_answer("acc_0", &[20; 32]).unwrap(), Some(expired.clone()));
    assert_eq!(store.answer_count("acc_0").unwrap(), 1);
    // The purge of the replaced answer's time leaves the newer answer.
    assert_eq!(store.purge_answers_before(300, 10).unwrap(), 4);
    assert_eq!(store.get_answer("acc_0", &[20; 32]).unwrap(), Some(expired));
    assert_eq!(store.answer_count("acc_0").unwrap(), 1);
    assert_eq!(store.answer_count("acc_1").unwrap(), 0);
    // A key answered again after its old answer was purged keeps the new one.
    store.put_answer(&answer_of(1, 1, 1_000)).unwrap();
    assert_eq!(store.purge_answers_before(205, 10).unwrap(), 0);
    assert_eq!(store.get_answer("acc_1", &[1; 32]).unwrap().map(|a| a.created_at_ms), Some(1_000));
}

pub fn answers_past_the_cap_evict_the_oldest_of_that_account_only(store: &dyn Store) {
    let cap = ANSWER_CAP as u8;
    // cap + 3 answers of acc_0 (keys 1..=cap+3, oldest first), two of acc_1.
    for i in 1..=cap + 3 {
        assert_eq!(store.put_answer(&answer_of(0, i, u64::from(i) * 10)).unwrap(), None);
    }
    store.put_answer(&answer_of(1, 1, 5)).unwrap();
    store.put_answer(&answer_of(1, 2, 6)).unwrap();
    let kept = |account: u8, digest: u8| store.get_answer(&format!("acc_{account}"), &[digest; 32]).unwrap().is_some();
    assert_eq!(store.answer_count("acc_0").unwrap(), ANSWER_CAP as u64, "the cap holds");
    for i in 1..=cap + 3 {
        assert_eq!(kept(0, i), i > 3, "key {i}: the three oldest are evicted, the newest cap kept");
    }
    assert!(kept(1, 1) && kept(1, 2), "another account's answers are its own");
    assert_eq!(store.answer_count("acc_1").unwrap(), 2);
    // An evicted key used again is a new request: its answer is written, the next oldest goes.
    assert_eq!(store.put_answer(&answer_of(0, 1, 500)).unwrap(), None);
    assert!(kept(0, 1) && !kept(0, 4));
    // An answer written with its admission counts the same way, and its undo gives the place back.
    let job = xray::store::JobRecord {
        idempotency_digest: Some([50; 32]),
        account: "acc_0".into(),
        ..analysis("an_50", "Wallet50", 600)
    };
    store.admit(&job, Some(&answer("acc_0", 50, "an_50", 600))).unwrap();
    assert!(kept(0, 50) && !kept(0, 5));
    assert_eq!(store.answer_count("acc_0").unwrap(), ANSWER_CAP as u64);
    store.cancel_admission("an_50").unwrap();
    assert!(!kept(0, 50));
    assert_eq!(store.answer_count("acc_0").unwrap(), ANSWER_CAP as u64 - 1);
    // Replacing an expired answer of a kept key takes no new place.
    let again = answer_of(0, 6, 60 + xray::config::IDEMPOTENCY_TTL_MS);
    assert_eq!(store.put_answer(&again).unwrap(), None);
    assert_eq!(store.answer_count("acc_0").unwrap(), ANSWER_CAP as u64 - 1);
    // Writing on past the cap many times over still keeps exactly the newest cap.
    let later_ms = 1_000 + xray::config::IDEMPOTENCY_TTL_MS;
    for i in 100..100 + 3 * cap {
        store.put_answer(&answer_of(0, i, later_ms + u64::from(i))).unwrap();
    }
    assert_eq!(store.answer_count("acc_0").unwrap(), ANSWER_CAP as u64);
    for i in 100..100 + 3 * cap {
        assert_eq!(kept(0, i), i >= 100 + 2 * cap, "key {i}");
    }
    assert!(!kept(0, 6), "the replaced answer took its age with it: evicted among the oldest");
    // The purge takes everything and leaves nothing counted.
    assert_eq!(store.purge_answers_before(u64::MAX, 5).unwrap(), ANSWER_CAP + 2);
    assert_eq!((store.answer_count("acc_0").unwrap(), store.answer_count("acc_1").unwrap()), (0, 0));
}

pub fn writers_of_one_account_on_many_threads_keep_its_count_exact(store: &dyn Store) {
    const THREADS: u8 = 4;
    const PER_THREAD: u8 = 6;
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            scope.spawn(move || {
                for i in 0..PER_THREAD {
                    let digest = t * PER_THREAD + i;
                    store.put_answer(&answer_of(0, digest, 100 + u64::from(digest))).unwrap();
                }
            });
        }
    });
    let total = THREADS * PER_THREAD;
    let kept = (0..total).filter(|d| store.get_answer("acc_0", &[*d; 32]).unwrap().is_some()).count();
    assert_eq!(kept, ANSWER_CAP, "exactly the cap is kept");
    assert_eq!(store.answer_count("acc_0").unwrap(), ANSWER_CAP as u64, "and counted");
}

pub fn keys_round_trip_and_list_in_pages(store: &dyn Store) {
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

pub fn backlog_hands_out_running_then_queued_in_bounded_pages(store: &dyn Store) {
    for i in 0..12u64 {
        store.admit(&analysis(&format!("an_{i:02}"), &format!("W{i}"), 100 + i), None).unwrap();
    }
    for i in [3u64, 7, 9] {
        store.mark_running(&format!("an_{i:02}"), 500).unwrap();
    }
    store.admit(&analysis("an_new", "Wnew", 1_000), None).unwrap();

    let mut backlog = xray::jobs::recovery::Backlog::new(1_000);
    let mut pages = Vec::new();
    while !backlog.is_done() {
        let page = backlog.next_page(store, 4).unwrap();
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
    assert!(backlog.next_page(store, 4).unwrap().is_empty());
}

/// A rotation writes both key records and carries the old key's usage of the period to the
/// successor, nothing reserved (the embedded store takes memory's numbers, which are its own;
/// a shared store carries what it holds — the same numbers here).
pub fn a_rotation_carries_the_old_keys_usage(store: &dyn Store) {
    let old = key();
    store.put_key(&old).unwrap();
    let under_old = |id: &str| xray::store::JobRecord { key_id: old.id.as_str().into(), ..analysis(id, id, 1) };
    for (id, outcome) in [("an_1", ready("an_1")), ("an_2", failed()), ("an_3", ready("an_3"))] {
        store.admit(&under_old(id), None).unwrap();
        store.complete(id, 2, &outcome).unwrap();
    }
    store.admit(&under_old("an_4"), None).unwrap();
    let stored = store.usage(old.id.as_str(), PERIOD_MS).unwrap();
    assert_eq!(
        stored,
        UsageRecord { used: 2, reserved: 1, refunded: 1, wallet_analysis: 2, comparison: 0, transaction_scan: 0 }
    );
    let carried = UsageRecord { reserved: 0, ..stored };
    let revoked = KeyRecord { status: KeyStatus::Revoked, revoked_at_ms: Some(5), ..old.clone() };
    let successor = key();
    let carry = xray::store::UsageCarry { period_start_ms: PERIOD_MS, usage: carried };
    store.put_rotation(&revoked, &successor, &carry).unwrap();
    assert_eq!(store.get_key(old.id.as_str()).unwrap(), Some(revoked));
    assert_eq!(store.get_key(successor.id.as_str()).unwrap(), Some(successor.clone()));
    assert_eq!(store.usage(successor.id.as_str(), PERIOD_MS).unwrap(), carried);
    assert_eq!(store.usage(old.id.as_str(), PERIOD_MS).unwrap(), stored, "the old key's record stays as it was");
}

/// A job admitted with a webhook (`callbackUrl`): its callback pending, not yet due.
fn with_callback(id: &str, wallet: &str, at_ms: u64) -> xray::store::JobRecord {
    let callback = Callback::pending(format!("https://hooks.example/{id}"));
    xray::store::JobRecord { callback: Some(callback), ..analysis(id, wallet, at_ms) }
}

fn due(store: &dyn Store, now_ms: u64) -> Vec<String> {
    store.due_callbacks(now_ms, None, 100).unwrap().jobs.into_iter().map(|job| job.id).collect()
}

pub fn the_webhook_outbox_holds_finished_jobs_until_delivered_or_given_up(store: &dyn Store) {
    store.admit(&with_callback("an_1", "Wallet1", 10), None).unwrap();
    store.admit(&with_callback("an_2", "Wallet2", 10), None).unwrap();
    store.admit(&analysis("an_3", "Wallet3", 10), None).unwrap();
    assert!(due(store, u64::MAX).is_empty(), "a live job's callback is not due");
    // Completion puts a callback in the outbox, due at once; a job without one stays out.
    let done = store.complete("an_1", 100, &ready("an_1")).unwrap();
    let first = done.callback.clone().unwrap();
    assert_eq!((first.status, first.next_attempt_ms, first.attempts), (CallbackStatus::Pending, 100, 0));
    let second = store.complete("an_2", 200, &failed()).unwrap().callback.unwrap();
    store.complete("an_3", 50, &ready("an_3")).unwrap();
    assert_eq!(due(store, 99), Vec::<String>::new());
    assert_eq!(due(store, 100), ["an_1"]);
    assert_eq!(due(store, 1_000), ["an_1", "an_2"], "soonest due first");
    let page = store.due_callbacks(1_000, None, 1).unwrap();
    assert_eq!(page.jobs.len(), 1, "bounded");
    assert_eq!(page.next, Some(DueCursor { due_ms: 100, id: "an_1".into() }), "the last entry scanned");
    // A page ends on a cursor the next one starts after: the whole due set, page by page.
    let next = store.due_callbacks(1_000, page.next.as_ref(), 1).unwrap();
    assert_eq!(next.jobs.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(), ["an_2"]);
    let end = store.due_callbacks(1_000, next.next.as_ref(), 1).unwrap();
    assert!(end.jobs.is_empty() && end.next.is_none(), "the end");
    // A claim is a compare-and-set on the callback as read: a second claim of the same read
    // is refused.
    let claim = Callback { attempts: 1, next_attempt_ms: 500, ..first.clone() };
    assert_eq!(store.record_callback("an_1", &first, &claim).unwrap().callback, Some(claim.clone()));
    assert!(matches!(store.record_callback("an_1", &first, &claim), Err(StoreError::State { .. })));
    assert_eq!(due(store, 300), ["an_2"]);
    assert_eq!(due(store, 500), ["an_2", "an_1"]);
    // A failed attempt records its error (the due time may stay or move).
    let retry = Callback { last_error: Some("connection refused".into()), ..claim.clone() };
    store.record_callback("an_1", &claim, &retry).unwrap();
    let later = Callback { next_attempt_ms: 700, ..retry.clone() };
    store.record_callback("an_1", &retry, &later).unwrap();
    assert_eq!(due(store, 600), ["an_2"]);
    // Delivered or given up: out of the outbox for good.
    let delivered = Callback { status: CallbackStatus::Delivered, attempts: 2, last_error: None, ..later.clone() };
    store.record_callback("an_1", &later, &delivered).unwrap();
    let given_up = Callback { status: CallbackStatus::Failed, attempts: 1, ..second.clone() };
    store.record_callback("an_2", &second, &given_up).unwrap();
    assert!(due(store, u64::MAX).is_empty());
    assert_eq!(store.get_job("an_1").unwrap().and_then(|j| j.callback), Some(delivered));
    // Only a finished job with a callback records one.
    for id in ["an_3", "an_missing"] {
        assert!(matches!(store.record_callback(id, &first, &given_up), Err(StoreError::State { .. })), "{id}");
    }
    let live = with_callback("an_4", "Wallet4", 10);
    store.admit(&live, None).unwrap();
    let pending = live.callback.clone().unwrap();
    assert!(matches!(store.record_callback("an_4", &pending, &given_up), Err(StoreError::State { .. })), "live");
    // Retention takes a finished job's outbox entry with it.
    store.complete("an_4", 20, &ready("an_4")).unwrap();
    assert_eq!(due(store, u64::MAX), ["an_4"]);
    assert_eq!(store.purge_finished_before(30, 10).unwrap(), 1);
    assert!(due(store, u64::MAX).is_empty());
}

pub fn an_accounts_outbox_keeps_its_newest_webhooks(store: &dyn Store) {
    let other = xray::store::JobRecord { account: "acc_2".into(), ..with_callback("an_9", "Wallet9", 10) };
    store.admit(&other, None).unwrap();
    for i in 1..=4u64 {
        let id = format!("an_{i}");
        store.admit(&with_callback(&id, &format!("Wallet{i}"), 10), None).unwrap();
        store.complete(&id, 100 * i, &failed()).unwrap();
    }
    store.complete("an_9", 500, &ready("an_9")).unwrap();
    let pending = |account: &str| store.pending_callbacks(account, 100).unwrap();
    assert_eq!(pending(ACCOUNT), ["an_1", "an_2", "an_3", "an_4"], "oldest first");
    assert_eq!(store.pending_callbacks(ACCOUNT, 1).unwrap(), ["an_1"], "bounded");
    // Past the bound, the oldest are given up, their state recorded; another account's stay.
    assert_eq!(store.trim_outbox(ACCOUNT, 2).unwrap(), 2);
    assert_eq!(pending(ACCOUNT), ["an_3", "an_4"]);
    for id in ["an_1", "an_2"] {
        let callback = store.get_job(id).unwrap().and_then(|j| j.callback).unwrap();
        assert_eq!(callback.status, CallbackStatus::Failed, "{id}");
        assert_eq!(callback.last_error.as_deref(), Some(xray::store::OUTBOX_FULL_REASON), "{id}");
    }
    assert_eq!(due(store, u64::MAX), ["an_3", "an_4", "an_9"]);
    assert_eq!(pending("acc_2"), ["an_9"]);
    assert_eq!(store.trim_outbox(ACCOUNT, 2).unwrap(), 0, "within the bound");
    // A settled webhook leaves the account's outbox; retention takes a pending one with its job.
    let third = store.get_job("an_3").unwrap().and_then(|j| j.callback).unwrap();
    let delivered = Callback { status: CallbackStatus::Delivered, attempts: 1, ..third.clone() };
    store.record_callback("an_3", &third, &delivered).unwrap();
    assert_eq!(pending(ACCOUNT), ["an_4"]);
    store.purge_finished_before(450, 100).unwrap();
    assert!(pending(ACCOUNT).is_empty());
    assert_eq!(pending("acc_2"), ["an_9"]);
}

pub fn webhook_secrets_are_per_account_and_replaced_on_rotation(store: &dyn Store) {
    assert_eq!(store.get_webhook_secret(ACCOUNT).unwrap(), None);
    let first = WebhookSecret { account: ACCOUNT.into(), secret: "whsec_first".into(), created_at_ms: 1 };
    store.put_webhook_secret(&first).unwrap();
    assert_eq!(store.get_webhook_secret(ACCOUNT).unwrap(), Some(first.clone()));
    assert_eq!(store.get_webhook_secret("acc_2").unwrap(), None, "per account");
    assert_eq!(store.get_webhook_secret(&"a".repeat(300)).unwrap(), None, "an over-long account is not found");
    let rotated = WebhookSecret { secret: "whsec_second".into(), created_at_ms: 2, ..first };
    store.put_webhook_secret(&rotated).unwrap();
    assert_eq!(store.get_webhook_secret(ACCOUNT).unwrap(), Some(rotated.clone()));
    let too_long = WebhookSecret { secret: "s".repeat(65), ..rotated };
    assert!(matches!(store.put_webhook_secret(&too_long), Err(StoreError::Invalid(_))));
    assert!(!format!("{too_long:?}").contains("sss"), "Debug never shows the secret");
}

/// `attach_callback`: a later request's `callbackUrl` on an existing job. A finished job's
/// enters the outbox at once (due at the attach, ordered in its account's outbox by it); a live
/// job's when it completes; a job's webhook is never replaced; a job gone or another account's
/// is refused; nothing is charged.
pub fn a_webhook_attached_later_is_set_once_and_enters_the_outbox_when_finished(store: &dyn Store) {
    let url = |name: &str| format!("https://hooks.example/{name}");
    for (id, wallet) in [("an_1", "Wallet1"), ("an_2", "Wallet2"), ("an_3", "Wallet3")] {
        store.admit(&analysis(id, wallet, 10), None).unwrap();
    }
    store.complete("an_1", 100, &ready("an_1")).unwrap();
    store.admit(&with_callback("an_4", "Wallet4", 10), None).unwrap();
    store.complete("an_4", 200, &failed()).unwrap();
    let before = usage(store);
    // A READY job without a webhook: attached, due at once, in its account's outbox as of now.
    let Attached::New(job) = store.attach_callback("an_1", ACCOUNT, "key_1", &url("a"), 1_000).unwrap() else {
        panic!("a job without a webhook takes one")
    };
    let attached = job.callback.clone().unwrap();
    assert_eq!(
        (attached.url.as_str(), attached.status, attached.attempts),
        (url("a").as_str(), CallbackStatus::Pending, 0)
    );
    assert_eq!((attached.next_attempt_ms, attached.attached_at_ms), (1_000, Some(1_000)));
    assert_eq!((job.state, job.completed_at_ms), (JobState::Ready, Some(100)), "the job itself is unchanged");
    assert_eq!(store.get_job("an_1").unwrap(), Some(job.clone()));
    assert_eq!(store.get_result(&job).unwrap(), Some(payload("an_1")), "the payload is untouched");
    assert_eq!(due(store, 999), ["an_4"], "due at the attach, not at the completion");
    assert_eq!(due(store, 1_000), ["an_4", "an_1"]);
    assert_eq!(store.pending_callbacks(ACCOUNT, 10).unwrap(), ["an_4", "an_1"], "it entered the outbox last");
    // The same URL again changes nothing; another URL never replaces it.
    assert_eq!(store.attach_callback("an_1", ACCOUNT, "key_1", &url("a"), 2_000).unwrap(), Attached::Same(job.clone()));
    assert_eq!(
        store.attach_callback("an_1", ACCOUNT, "key_1", &url("b"), 2_000).unwrap(),
        Attached::Other(job.clone())
    );
    let creators = store.get_job("an_4").unwrap().unwrap();
    assert!(
        matches!(store.attach_callback("an_4", ACCOUNT, "key_1", &url("b"), 2_000).unwrap(), Attached::Other(j) if j == creators)
    );
    assert_eq!(due(store, u64::MAX), ["an_4", "an_1"], "one outbox entry each");
    // A live job: set now, in the outbox once it completes — due at the completion.
    let Attached::New(live) = store.attach_callback("an_2", ACCOUNT, "key_1", &url("c"), 300).unwrap() else {
        panic!("a live job without a webhook takes one")
    };
    assert_eq!(live.state, JobState::Queued);
    assert_eq!(due(store, u64::MAX), ["an_4", "an_1"], "a live job's webhook is not due");
    store.mark_running("an_2", 350).unwrap();
    let done = store.complete("an_2", 400, &ready("an_2")).unwrap();
    let callback = done.callback.unwrap();
    assert_eq!((callback.url, callback.next_attempt_ms), (url("c"), 400), "kept through start and completion");
    assert_eq!(due(store, 400), ["an_4", "an_2"]);
    // Delivered: out of the outbox like any webhook (its account's entry too).
    let delivered = Callback { status: CallbackStatus::Delivered, attempts: 1, ..attached.clone() };
    store.record_callback("an_1", &attached, &delivered).unwrap();
    assert_eq!(store.pending_callbacks(ACCOUNT, 10).unwrap(), ["an_4", "an_2"]);
    // Gone, unknown, or another account's: refused alike; nothing was ever charged.
    assert!(matches!(store.attach_callback("an_3", "acc_2", "key_1", &url("d"), 500), Err(StoreError::State { .. })));
    assert!(matches!(
        store.attach_callback("an_missing", ACCOUNT, "key_1", &url("d"), 500),
        Err(StoreError::State { .. })
    ));
    assert!(store.attach_callback("an_3", ACCOUNT, "key_1", &"u".repeat(5_000), 500).is_err(), "an over-long URL");
    assert_eq!(store.get_job("an_3").unwrap().and_then(|j| j.callback), None);
    store.purge_finished_before(u64::MAX, 10).unwrap();
    assert!(
        matches!(store.attach_callback("an_1", ACCOUNT, "key_1", &url("a"), 600), Err(StoreError::State { .. })),
        "purged"
    );
    assert!(due(store, u64::MAX).is_empty() && store.pending_callbacks(ACCOUNT, 10).unwrap().is_empty());
    let after = usage(store);
    assert_eq!((after.used, after.refunded), (before.used + 1, before.refunded), "only an_2's completion counted");
}

/// A transaction scan's unit: `used` and its own counter at once, nothing reserved, beside an
/// admitted job's reservation (which it neither touches nor is touched by).
pub fn a_synchronous_unit_is_charged_at_once_beside_reservations(store: &dyn Store) {
    store.admit(&analysis("an_1", "W1", 1), None).unwrap();
    for _ in 0..2 {
        let charged = store.charge_now(KEY_ID, PERIOD_MS, 10).unwrap();
        assert!(matches!(charged, xray::store::Charged::Done { .. }), "{charged:?}");
    }
    let u = usage(store);
    assert_eq!((u.used, u.reserved, u.transaction_scan, u.wallet_analysis), (2, 1, 2, 0), "{u:?}");
    assert!(store.charge_now("", PERIOD_MS, 10).is_err(), "an empty key id is refused");
    // A tick's units in one call: each answered, in order; one the store refuses does not
    // take the others with it.
    let unit = |key_id: &str| xray::store::UnitCharge {
        key_id: key_id.to_owned(),
        period_start_ms: PERIOD_MS,
        limit: 10,
        units: 1,
    };
    let answers = store.charge_now_each(&[unit(KEY_ID), unit(""), unit(KEY_ID), unit(KEY_ID)]);
    let done: Vec<bool> = answers.iter().map(|a| matches!(a, Ok(xray::store::Charged::Done { .. }))).collect();
    assert_eq!(done, [true, false, true, true], "{answers:?}");
    let u = usage(store);
    assert_eq!((u.used, u.reserved, u.transaction_scan), (5, 1, 5), "{u:?}");
    // Nothing to write (no unit, or only refused ones): nothing charged.
    assert!(store.charge_now_each(&[]).is_empty());
    assert!(store.charge_now_each(&[unit("")]).iter().all(Result::is_err));
    let u = usage(store);
    assert_eq!((u.used, u.transaction_scan), (5, 5), "{u:?}");
}

/// Feature records read upwards (`scan_docs`, after a cursor) and downwards (`scan_docs_rev`,
/// before a cursor), each within its kind and prefix, in pages that join up exactly.
pub fn feature_records_scan_both_ways_within_their_prefix(store: &dyn Store) {
    use xray::store::{DocKind, DocWrite, Expect};
    let put = |kind, key: &[u8]| DocWrite::put(kind, key.to_vec(), key.to_vec(), Expect::Any);
    let mut writes: Vec<DocWrite> = (0..7u8).map(|i| put(DocKind::FeedbackByTime, &[b'a', i])).collect();
    // Neighbours on both sides of the prefix, and the same prefix under another kind.
    writes.extend([
        put(DocKind::FeedbackByTime, b"\x60z"),
        put(DocKind::FeedbackByTime, b"b"),
        put(DocKind::Feedback, b"a9"),
    ]);
    store.write_docs(&writes).unwrap();
    let keys = |docs: Vec<xray::store::Doc>| docs.into_iter().map(|d| d.key).collect::<Vec<_>>();
    let expected: Vec<Vec<u8>> = (0..7u8).rev().map(|i| vec![b'a', i]).collect();

    let first = keys(store.scan_docs_rev(DocKind::FeedbackByTime, b"a", None, 3).unwrap());
    assert_eq!(first, expected[..3]);
    let second = keys(store.scan_docs_rev(DocKind::FeedbackByTime, b"a", first.last().map(Vec::as_slice), 3).unwrap());
    assert_eq!(second, expected[3..6]);
    let last = keys(store.scan_docs_rev(DocKind::FeedbackByTime, b"a", second.last().map(Vec::as_slice), 3).unwrap());
    assert_eq!(last, expected[6..]);
    assert!(store.scan_docs_rev(DocKind::FeedbackByTime, b"a", Some(&[b'a', 0]), 3).unwrap().is_empty());
    assert!(store.scan_docs_rev(DocKind::FeedbackByTime, b"a", None, 0).unwrap().is_empty());
    assert!(store.scan_docs_rev(DocKind::FeedbackByTime, b"c", None, 3).unwrap().is_empty());
    // Upwards, the same records in the other order.
    let up = keys(store.scan_docs(DocKind::FeedbackByTime, b"a", None, 10).unwrap());
    assert_eq!(up, expected.iter().rev().cloned().collect::<Vec<_>>());
    // Values and revisions come with the keys.
    let doc = store.scan_docs_rev(DocKind::FeedbackByTime, b"a", None, 1).unwrap().remove(0);
    assert_eq!((doc.value, doc.revision > 0), (vec![b'a', 6], true));
}
