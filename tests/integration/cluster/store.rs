//! The etcd store against a real 3-member etcd cluster on loopback: the store contract (the same
//! functions the RocksDB store passes), then what only a shared store does — admission checked
//! against the shared quota from several nodes at once, idempotent repeats, deduplication,
//! a job finished by two nodes charged once, adoption after a node's lease expired, admissions
//! whose answers were lost (through a link that loses them after the commit), the key
//! watch and long polls across nodes, and a full database.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::etcd::{self, EtcdCluster};
use crate::store::contract::{self, failed, ready, usage};
use crate::store::support::*;
use xray::jobs::admission::{admit_once, AdmissionLink, Sent};
use xray::limits::quota::UsageRecord;
use xray::store::etcd::{AdmitChecks, Admitted, EtcdStore, KeyChange, Reply};
use xray::store::{IdempotentAnswer, JobRecord, Store, StoreError};

/// A node's store on the shared cluster, in a keyspace of its own.
fn open(test: &str) -> EtcdStore {
    open_at(&etcd::shared().endpoints(), &etcd::fresh_prefix(test))
}

fn open_at(endpoints: &[String], prefix: &str) -> EtcdStore {
    EtcdStore::open(endpoints, prefix, 0)
        .unwrap_or_else(|e| panic!("etcd store at {endpoints:?}: {e}"))
        .with_answers_per_account_max(ANSWER_CAP)
}

macro_rules! contract_tests {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                contract::$name(&open(stringify!($name)));
            }
        )*
    };
}

contract::every_test!(contract_tests);

fn admit(store: &EtcdStore, id: &str, wallet: &str, limit: u64, dedup: bool) -> Result<Admitted, StoreError> {
    let checks = AdmitChecks { quota_limit: Some(limit), live_max: None, dedup };
    pollster::block_on(store.admit_async(analysis(id, wallet, 1), checks, None))
}

#[test]
fn one_keys_quota_hammered_from_three_nodes_stays_exact() {
    const LIMIT: u64 = 40;
    const ATTEMPTS_PER_THREAD: usize = 30;
    let prefix = etcd::fresh_prefix("hammer");
    let nodes: Vec<Arc<EtcdStore>> = (0..3).map(|_| Arc::new(open_at(&etcd::shared().endpoints(), &prefix))).collect();
    let done = Arc::new(AtomicBool::new(false));
    // A watcher reads the usage throughout: used + reserved never passes the limit.
    let watcher = {
        let (node, done) = (Arc::clone(&nodes[0]), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut samples = 0;
            while !done.load(Ordering::Acquire) {
                let u = usage(&*node);
                assert!(u.used + u.reserved <= LIMIT as i64, "over the limit: {u:?}");
                samples += 1;
            }
            samples
        })
    };
    let workers: Vec<_> = (0..6)
        .map(|t| {
            let node = Arc::clone(&nodes[t % 3]);
            std::thread::spawn(move || {
                let (mut admitted, mut refused) = (0, 0);
                for i in 0..ATTEMPTS_PER_THREAD {
                    let id = format!("an_{t}_{i}");
                    match admit(&node, &id, &format!("W{t}_{i}"), LIMIT, true).unwrap() {
                        Admitted::New { .. } => {
                            admitted += 1;
                            // Half finish (READY or FAILED: a refund frees a unit again).
                            match i % 4 {
                                0 => drop(node.complete(&id, 10, &ready(&id)).unwrap()),
                                1 => drop(node.complete(&id, 10, &failed()).unwrap()),
                                _ => {}
                            }
                        }
                        Admitted::Exhausted { usage } => {
                            assert!(usage.used + usage.reserved >= LIMIT as i64);
                            refused += 1;
                        }
                        other => panic!("distinct wallets, no cap: {other:?}"),
                    }
                }
                (admitted, refused)
            })
        })
        .collect();
    let counts: Vec<(i64, i64)> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    done.store(true, Ordering::Release);
    assert!(watcher.join().unwrap() > 0);
    let admitted: i64 = counts.iter().map(|c| c.0).sum();
    let refused: i64 = counts.iter().map(|c| c.1).sum();
    assert_eq!(admitted + refused, 6 * ATTEMPTS_PER_THREAD as i64);
    let u = usage(&*nodes[1]);
    assert!(refused > 0, "the limit was reached: {u:?}");
    assert_eq!(u.used + u.reserved, LIMIT as i64, "every unit is spent: {u:?}");
    assert_eq!(u.used + u.reserved + u.refunded, admitted, "each admission counted once: {u:?}");
    assert_eq!(u.used, u.wallet_analysis);
}

#[test]
fn an_idempotency_key_admits_once_across_nodes() {
    let prefix = etcd::fresh_prefix("answers");
    let (a, b) = (open_at(&etcd::shared().endpoints(), &prefix), open_at(&etcd::shared().endpoints(), &prefix));
    let checks = AdmitChecks { quota_limit: Some(10), live_max: None, dedup: false };
    let with_key = |node: &EtcdStore, id: &str| {
        let answer = contract::answer(ACCOUNT, 9, id, 1);
        let job = xray::store::JobRecord { idempotency_digest: Some([9; 32]), ..analysis(id, "W1", 1) };
        pollster::block_on(node.admit_async(job, checks, Some(answer))).unwrap()
    };
    assert!(matches!(with_key(&a, "an_1"), Admitted::New { .. }));
    // The same key on another node, with another job (no dedup: `refresh`): the first answer.
    match with_key(&b, "an_2") {
        Admitted::Answered(first) => assert_eq!(first.job_id, "an_1"),
        other => panic!("expected the first answer, got {other:?}"),
    }
    // A repeat of the first admission (its answer lost) is still that admission.
    assert!(matches!(with_key(&a, "an_1"), Admitted::New { .. }));
    assert_eq!(usage(&a).reserved, 1, "one job, one unit");
    assert_eq!(b.get_job("an_2").unwrap(), None, "nothing recorded for the second");
}

#[test]
fn a_repeated_admission_is_answered_as_the_first_and_equal_work_deduplicates() {
    let store = open("idempotent");
    let first = admit(&store, "an_1", "W1", 10, true).unwrap();
    assert_eq!(first, Admitted::New { usage: UsageRecord { reserved: 1, ..UsageRecord::default() } });
    // The same job again (a retry after an ambiguous timeout): no second reservation.
    assert_eq!(admit(&store, "an_1", "W1", 10, true).unwrap(), first);
    assert_eq!(usage(&store).reserved, 1);
    // Another job for the same wallet while the first is live: deduplicated onto it.
    match admit(&store, "an_2", "W1", 10, true).unwrap() {
        Admitted::Live(job) => assert_eq!(job.id, "an_1"),
        other => panic!("expected deduplication, got {other:?}"),
    }
    // `refresh` (no dedup) admits a second job; the subject's pointer names the newest.
    assert!(matches!(admit(&store, "an_3", "W1", 10, false).unwrap(), Admitted::New { .. }));
    store.complete("an_1", 5, &ready("an_1")).unwrap();
    match admit(&store, "an_4", "W1", 10, true).unwrap() {
        Admitted::Live(job) => assert_eq!(job.id, "an_3", "the older job's completion left the newer pointer"),
        other => panic!("expected deduplication onto an_3, got {other:?}"),
    }
    store.complete("an_3", 6, &failed()).unwrap();
    assert!(matches!(admit(&store, "an_5", "W1", 10, true).unwrap(), Admitted::New { .. }));
    assert_eq!(
        usage(&store),
        UsageRecord { used: 1, reserved: 1, refunded: 1, wallet_analysis: 1, comparison: 0, transaction_scan: 0 }
    );
}

#[test]
fn an_accounts_live_jobs_are_capped_across_nodes_and_each_end_frees_a_place() {
    let prefix = etcd::fresh_prefix("live-cap");
    let (a, b) = (open_at(&etcd::shared().endpoints(), &prefix), open_at(&etcd::shared().endpoints(), &prefix));
    let capped = |node: &EtcdStore, id: &str, wallet: &str| {
        let checks = AdmitChecks { quota_limit: Some(100), live_max: Some(2), dedup: true };
        pollster::block_on(node.admit_async(analysis(id, wallet, 1), checks, None)).unwrap()
    };
    assert!(matches!(capped(&a, "an_1", "W1"), Admitted::New { .. }));
    assert!(matches!(capped(&b, "an_2", "W2"), Admitted::New { .. }));
    assert_eq!(capped(&a, "an_3", "W3"), Admitted::TooManyJobs { live_max: 2 });
    assert_eq!(capped(&b, "an_3", "W3"), Admitted::TooManyJobs { live_max: 2 }, "on every node");
    // The cap is checked after deduplication: an equal request still finds its live job.
    assert!(matches!(capped(&b, "an_4", "W1"), Admitted::Live(job) if job.id == "an_1"));
    b.complete("an_1", 5, &ready("an_1")).unwrap();
    assert!(matches!(capped(&b, "an_3", "W3"), Admitted::New { .. }), "a completion frees a place");
    a.cancel_admission("an_3").unwrap();
    assert!(matches!(capped(&a, "an_5", "W5"), Admitted::New { .. }), "an undo frees a place");
    assert_eq!(capped(&a, "an_6", "W6"), Admitted::TooManyJobs { live_max: 2 });
    // A job finished twice frees its place once.
    assert!(b.complete("an_2", 6, &failed()).is_ok());
    assert!(a.complete("an_2", 7, &failed()).is_err());
    assert!(matches!(capped(&a, "an_7", "W7"), Admitted::New { .. }));
    assert_eq!(capped(&b, "an_8", "W8"), Admitted::TooManyJobs { live_max: 2 });
}

#[test]
fn a_job_finished_by_two_nodes_is_charged_once() {
    let prefix = etcd::fresh_prefix("twice");
    let (a, b) = (open_at(&etcd::shared().endpoints(), &prefix), open_at(&etcd::shared().endpoints(), &prefix));
    admit(&a, "an_1", "W1", 10, true).unwrap();
    a.mark_running("an_1", 2).unwrap();
    b.mark_running("an_1", 3).unwrap();
    let barrier = Arc::new(std::sync::Barrier::new(2));
    let results: Vec<_> = [a, b]
        .into_iter()
        .map(|node| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                node.complete("an_1", 9, &ready("an_1")).map(|_| ())
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|t| t.join().unwrap())
        .collect();
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1, "{results:?}");
    assert!(results.iter().any(|r| matches!(r, Err(StoreError::State { .. }))), "{results:?}");
    let reader = open_at(&etcd::shared().endpoints(), &prefix);
    assert_eq!(usage(&reader), UsageRecord { used: 1, wallet_analysis: 1, ..UsageRecord::default() });
}

#[test]
fn a_dead_nodes_jobs_are_adopted_once_its_lease_expires() {
    let prefix = etcd::fresh_prefix("adopt");
    let endpoints = etcd::shared().endpoints();
    let (b, c) = (open_at(&endpoints, &prefix), open_at(&endpoints, &prefix));
    {
        let a = open_at(&endpoints, &prefix);
        admit(&a, "an_1", "W1", 10, true).unwrap();
        assert_eq!(b.owners(10).unwrap()[0].owner.as_deref(), Some(a.node_id()));
        assert!(!b.adopt("an_1").unwrap(), "a live owner's job is not adoptable");
        // Dropped without leaving: the lease is no longer renewed (as after kill -9).
    }
    let started = Instant::now();
    while b.owners(10).unwrap()[0].owner.is_some() {
        assert!(started.elapsed() < Duration::from_secs(15), "the dead node's lease never expired");
        std::thread::sleep(Duration::from_millis(100));
    }
    let adopted = [b.adopt("an_1").unwrap(), c.adopt("an_1").unwrap()];
    assert_eq!(adopted, [true, false], "exactly one node adopts");
    assert_eq!(c.owners(10).unwrap()[0].owner.as_deref(), Some(b.node_id()));
    b.mark_running("an_1", 20).unwrap();
    b.complete("an_1", 30, &ready("an_1")).unwrap();
    assert!(c.owners(10).unwrap().is_empty());
    assert_eq!(usage(&c), UsageRecord { used: 1, wallet_analysis: 1, ..UsageRecord::default() });
    assert_eq!(c.live_nodes().unwrap(), 2);
}

#[test]
fn key_changes_reach_every_node_through_the_watch() {
    let prefix = etcd::fresh_prefix("watch");
    let endpoints = etcd::shared().endpoints();
    let (writer, follower) = (open_at(&endpoints, &prefix), open_at(&endpoints, &prefix));
    let (_, revision) = follower.all_keys().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    follower.watch_keys(revision, move |change| drop(tx.send((Instant::now(), change))));
    let key = contract::key();
    let written = Instant::now();
    writer.put_key(&key).unwrap();
    let (seen, change) = rx.recv_timeout(Duration::from_secs(5)).expect("the watch saw the new key");
    assert!(matches!(change, KeyChange::Put(ref k) if **k == key), "{change:?}");
    assert!(seen.duration_since(written) < Duration::from_secs(1), "{:?}", seen.duration_since(written));
    let revoked = xray::auth::record::KeyRecord {
        status: xray::auth::record::KeyStatus::Revoked,
        revoked_at_ms: Some(3),
        ..key.clone()
    };
    writer.put_key(&revoked).unwrap();
    let (_, change) = rx.recv_timeout(Duration::from_secs(5)).expect("the watch saw the revocation");
    assert!(matches!(change, KeyChange::Put(ref k) if **k == revoked), "{change:?}");
}

#[test]
fn a_key_watch_whose_revision_was_compacted_reloads_every_key() {
    // Its own member: compacting the shared cluster would cut the other tests' watches.
    let cluster = EtcdCluster::start(1, &[]);
    let (writer, follower) = (open_at(&cluster.endpoints(), "xray/"), open_at(&cluster.endpoints(), "xray/"));
    let (_, stale) = follower.all_keys().unwrap();
    let (first, second) = (contract::key(), contract::key());
    assert_ne!(first.id, second.id);
    writer.put_key(&first).unwrap();
    writer.put_key(&second).unwrap();
    let (_, now) = writer.all_keys().unwrap();
    let out = cluster.etcdctl(&["compact", &now.to_string()], b"");
    assert!(out.contains("compacted revision"), "{out}");
    let (tx, rx) = std::sync::mpsc::channel();
    follower.watch_keys(stale, move |change| drop(tx.send(change)));
    match rx.recv_timeout(Duration::from_secs(10)).expect("the follower heard back") {
        KeyChange::Reload(mut keys) => {
            keys.sort_by(|a, b| a.id.cmp(&b.id));
            let mut expected = vec![first, second];
            expected.sort_by(|a, b| a.id.cmp(&b.id));
            assert_eq!(keys, expected);
        }
        other => panic!("a compacted revision must reload everything, got {other:?}"),
    }
}

#[test]
fn a_long_poll_on_another_node_wakes_when_the_job_finishes() {
    let prefix = etcd::fresh_prefix("wait");
    let endpoints = etcd::shared().endpoints();
    let (runner, poller) = (Arc::new(open_at(&endpoints, &prefix)), open_at(&endpoints, &prefix));
    admit(&runner, "an_1", "W1", 10, true).unwrap();
    let still = pollster::block_on(poller.wait_finished_async("an_1".into(), Duration::from_millis(300))).unwrap();
    assert_eq!(still.map(|j| j.state), Some(xray::store::JobState::Queued), "no change: answered at the deadline");
    let finisher = {
        let runner = Arc::clone(&runner);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            runner.complete("an_1", 9, &ready("an_1")).unwrap();
        })
    };
    let started = Instant::now();
    let done = pollster::block_on(poller.wait_finished_async("an_1".into(), Duration::from_secs(10))).unwrap();
    finisher.join().unwrap();
    assert_eq!(done.map(|j| j.state), Some(xray::store::JobState::Ready));
    assert!(started.elapsed() < Duration::from_secs(3), "woken by the watch, not the deadline");
    assert_eq!(pollster::block_on(poller.wait_finished_async("an_x".into(), Duration::from_secs(1))).unwrap(), None);
}

#[test]
fn a_full_etcd_refuses_admission_with_503_and_moves_no_quota() {
    // A one-member cluster with a 4 MiB backend quota, filled by one large value after another.
    let cluster = EtcdCluster::start(1, &["--quota-backend-bytes", "4194304"]);
    let store = open_at(&cluster.endpoints(), "xray/");
    admit(&store, "an_1", "W1", 10, true).unwrap();
    let filler = "x".repeat(512 * 1024);
    for i in 0.. {
        let out = cluster.etcdctl(&["put", &format!("filler/{i}")], filler.as_bytes());
        if out.contains("database space exceeded") {
            break;
        }
        assert!(i < 64, "etcd never reported NOSPACE: {out}");
    }
    match admit(&store, "an_2", "W2", 10, true) {
        Err(e @ StoreError::Full(_)) => assert!(e.to_string().contains("NOSPACE") && e.is_transient(), "{e}"),
        other => panic!("expected Full (NOSPACE), got {other:?}"),
    }
    assert!(matches!(store.complete("an_1", 2, &ready("an_1")), Err(StoreError::Full(_))));
    assert_eq!(usage(&store), UsageRecord { reserved: 1, ..UsageRecord::default() }, "nothing moved");
    assert_eq!(store.get_job("an_2").unwrap(), None);
}

#[test]
fn admissions_resume_after_the_etcd_leader_is_killed_and_none_acknowledged_is_lost() {
    let mut cluster = EtcdCluster::start(3, &[]);
    let store = Arc::new(open_at(&cluster.endpoints(), "xray/"));
    let stop = Arc::new(AtomicBool::new(false));
    // Three writers: a request in flight at the kill may wait out its timeout (5 s) while the
    // others go on.
    let writers: Vec<_> = (0..3)
        .map(|t| {
            let (store, stop) = (Arc::clone(&store), Arc::clone(&stop));
            std::thread::spawn(move || {
                let (mut acknowledged, mut refused, mut i) = (Vec::new(), 0, 0);
                while !stop.load(Ordering::Acquire) {
                    let (id, sent) = (format!("an_{t}_{i}"), Instant::now());
                    match admit(&store, &id, &format!("W{t}_{i}"), 1_000_000, true) {
                        Ok(Admitted::New { .. }) => acknowledged.push((sent, Instant::now(), id)),
                        Ok(other) => panic!("{other:?}"),
                        Err(StoreError::Unavailable(_)) => refused += 1,
                        Err(e) => panic!("{e}"),
                    }
                    i += 1;
                }
                (acknowledged, refused)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let leader = cluster.leader();
    let killed = Instant::now();
    cluster.kill(leader);
    std::thread::sleep(Duration::from_secs(4));
    stop.store(true, Ordering::Release);
    let (mut acknowledged, mut refused) = (Vec::new(), 0);
    for writer in writers {
        let (acked, busy) = writer.join().unwrap();
        acknowledged.extend(acked);
        refused += busy;
    }
    // The first admission sent after the kill and acknowledged: etcd had a new leader by then.
    let after = acknowledged.iter().filter(|(sent, _, _)| *sent > killed).map(|(_, at, _)| at.duration_since(killed));
    let resumed =
        after.min().unwrap_or_else(|| panic!("no admission sent after the kill succeeded ({refused} refused)"));
    eprintln!("leader kill: writes resumed after {resumed:?}; {} acknowledged, {refused} refused", acknowledged.len());
    assert!(resumed < Duration::from_secs(3), "{resumed:?}");
    for (_, _, id) in &acknowledged {
        assert!(store.get_job(id).unwrap().is_some(), "{id} was acknowledged and is missing");
    }
    // A refusal after a timeout may still have committed (it is then recorded and reserved,
    // never acknowledged); every recorded job holds exactly one reservation.
    let recorded = store.live_jobs(xray::store::LiveState::Queued, None, u64::MAX, 10_000).unwrap().jobs.len();
    let u = usage(&*store);
    assert_eq!(u.reserved, recorded as i64, "{u:?}");
    assert!(recorded >= acknowledged.len() && recorded <= acknowledged.len() + refused, "{recorded}");
}

/// What a `LossyLink` does to each kind of operation: pass it, send it and lose its answer
/// (it committed, the node hears a timeout), or refuse it unsent (nothing reaches etcd).
#[derive(Clone, Copy, PartialEq)]
enum Fate {
    Pass,
    AnswerLost,
    Unsent,
}

/// The fates of an admission's operations, in the order it sends them.
#[derive(Clone, Copy)]
struct Fates {
    admit: Fate,
    cancel: Fate,
    read_job: Fate,
    read_usage: Fate,
}

/// A node's link to etcd that loses answers: the fault a cut connection makes after etcd
/// committed, made exactly (a TCP relay cannot tell which answer it is dropping).
struct LossyLink<'a> {
    etcd: &'a EtcdStore,
    fates: Fates,
    admits_sent: std::sync::atomic::AtomicUsize,
}

fn as_fated<T: Send + 'static>(fate: Fate, call: impl FnOnce() -> Reply<T>) -> Reply<T> {
    let lost = || StoreError::Unavailable("etcd: request timed out (answer lost)".into());
    match fate {
        Fate::Pass => call(),
        Fate::Unsent => Box::pin(async move { Err(lost()) }),
        Fate::AnswerLost => {
            let sent = call();
            Box::pin(async move {
                let _committed = sent.await;
                Err(lost())
            })
        }
    }
}

impl AdmissionLink for LossyLink<'_> {
    fn send_admit(&self, job: JobRecord, checks: AdmitChecks, answer: Option<IdempotentAnswer>) -> Reply<Admitted> {
        self.admits_sent.fetch_add(1, Ordering::Relaxed);
        as_fated(self.fates.admit, || self.etcd.admit_async(job, checks, answer))
    }
    fn send_cancel(&self, id: String) -> Reply<()> {
        as_fated(self.fates.cancel, || self.etcd.cancel_admission_async(id))
    }
    fn read_job(&self, id: String) -> Reply<Option<JobRecord>> {
        as_fated(self.fates.read_job, || self.etcd.get_job_async(id))
    }
    fn read_usage(&self, key_id: String, period_start_ms: u64) -> Reply<UsageRecord> {
        as_fated(self.fates.read_usage, || self.etcd.usage_async(key_id, period_start_ms))
    }
}

/// One admission sent through a link with these fates, on a keyspace of its own: what it
/// answered, and the store to look at afterwards.
fn admit_through(test: &str, fates: Fates) -> (Result<Sent, StoreError>, EtcdStore) {
    let etcd = open(test);
    let link = LossyLink { etcd: &etcd, fates, admits_sent: Default::default() };
    let checks = AdmitChecks { quota_limit: Some(10), live_max: Some(5), dedup: true };
    let sent = pollster::block_on(admit_once(&link, &analysis("an_1", "W1", 1), checks, None));
    assert_eq!(link.admits_sent.load(Ordering::Relaxed), 2, "a lost answer is repeated once, never more");
    (sent, etcd)
}

const LOST: Fate = Fate::AnswerLost;

#[test]
fn an_admission_whose_answers_were_lost_is_answered_as_etcd_holds_it_and_charged_once() {
    // Both answers lost after the commit, the undo unsent, the read answered: the job stands,
    // so the node answers admitted (202) — one reservation although the transaction ran twice.
    let fates = Fates { admit: LOST, cancel: Fate::Unsent, read_job: Fate::Pass, read_usage: Fate::Pass };
    let (sent, store) = admit_through("lost_answers_stood", fates);
    match sent {
        Ok(Sent::Answered(Admitted::New { usage })) => assert_eq!(usage.reserved, 1, "{usage:?}"),
        other => panic!("expected an admission that stood, got {other:?}"),
    }
    assert_eq!(usage(&store), UsageRecord { reserved: 1, ..UsageRecord::default() }, "charged once");
    assert!(store.get_job("an_1").unwrap().is_some());

    // It stood and its key's usage could not be read: still admitted (memory refreshed later).
    let (sent, store) = admit_through("lost_answers_stood_unread", Fates { read_usage: Fate::Unsent, ..fates });
    assert!(matches!(sent, Ok(Sent::Stood)), "{sent:?}");
    assert_eq!(usage(&store), UsageRecord { reserved: 1, ..UsageRecord::default() });
}

#[test]
fn an_admission_whose_answers_were_lost_is_undone_or_refused_and_never_charged() {
    let passed = Fates { admit: LOST, cancel: Fate::Pass, read_job: Fate::Pass, read_usage: Fate::Pass };
    let cases = [
        // The undo reaches etcd: refused (503), no job.
        ("lost_answers_undone", passed),
        // Every answer lost, the undo's too (it committed): 503 saying the outcome is unknown
        // and the retry deduplicates — and in fact nothing stood.
        ("lost_answers_all", Fates { cancel: LOST, read_job: LOST, read_usage: LOST, ..passed }),
        // Nothing reached etcd and the undo could not be sent: the read finds no job → 503.
        ("lost_answers_unsent", Fates { admit: Fate::Unsent, cancel: Fate::Unsent, ..passed }),
    ];
    for (test, fates) in cases {
        let (sent, store) = admit_through(test, fates);
        match sent {
            Err(StoreError::Unavailable(why)) if fates.read_job == LOST => {
                assert!(why.contains("retry the request"), "{test}: {why}")
            }
            Err(StoreError::Unavailable(_)) => {}
            other => panic!("{test}: expected 503, got {other:?}"),
        }
        assert_eq!(usage(&store), UsageRecord::default(), "{test}: nothing charged");
        assert_eq!(store.get_job("an_1").unwrap(), None, "{test}");
    }
}

#[test]
fn a_schema_1_keyspace_is_upgraded_in_place_and_an_unknown_one_refused() {
    let cluster = etcd::shared();
    let version_key = |prefix: &str| {
        String::from_utf8(xray::store::etcd::layout::Layout::new(prefix).schema_version()).expect("a text key")
    };
    let old = etcd::fresh_prefix("schema_1");
    cluster.etcdctl(&["put", &version_key(&old)], &1u32.to_be_bytes());
    drop(open_at(&cluster.endpoints(), &old));
    let stored = cluster.etcdctl(&["get", &version_key(&old), "--print-value-only"], b"");
    assert_eq!(stored.trim_end_matches('\n').as_bytes(), xray::store::SCHEMA_VERSION.to_be_bytes());
    drop(open_at(&cluster.endpoints(), &old)); // and opens again at the new version

    let unknown = etcd::fresh_prefix("schema_99");
    cluster.etcdctl(&["put", &version_key(&unknown)], &99u32.to_be_bytes());
    match EtcdStore::open(&cluster.endpoints(), &unknown, 0) {
        Err(StoreError::SchemaVersion { found: 99, .. }) => {}
        other => panic!("expected a refusal of schema 99, got {:?}", other.err()),
    }
}

#[test]
fn a_synchronous_unit_is_refused_at_the_shared_limit_and_moves_nothing() {
    let store = open("charge_now_limit");
    admit(&store, "an_1", "W1", 10, true).unwrap();
    assert!(
        matches!(store.charge_now(KEY_ID, PERIOD_MS, 2).unwrap(), xray::store::Charged::Done { usage: Some(u) } if u.used == 1)
    );
    match store.charge_now(KEY_ID, PERIOD_MS, 2).unwrap() {
        xray::store::Charged::Exhausted { usage } => assert_eq!((usage.used, usage.reserved), (1, 1)),
        other => panic!("expected a refusal at used + reserved = limit, got {other:?}"),
    }
    assert_eq!(usage(&store), UsageRecord { used: 1, reserved: 1, transaction_scan: 1, ..UsageRecord::default() });
}
