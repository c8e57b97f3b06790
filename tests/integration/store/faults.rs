//! A fault-injecting `Store` (a real RocksDB underneath, some calls failing on demand) under
//! the job sink: a completion the store refuses keeps the job live — in the index, in the
//! store, its unit reserved in memory and on disk alike — the service `degraded`, until a retry
//! is taken; a result the store refuses for good ends the job FAILED and refunded. A panic on
//! the job path (the sink's `started` or `finished`, injected by wrapping the sink) ends the job
//! FAILED, refunded, out of the index, and the next job runs. And the group commit of
//! `--sync-writes` over a slow and a failing `fsync`.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use xray::auth::key::AccountId;
use xray::auth::record::{KeyRecord, KeySpec};
use xray::auth::scope::Scopes;
use xray::auth::table::{KeyEntry, KeyTable};
use xray::clock::now_unix_ms;
use xray::engine::policy::Policy;
use xray::engine::report::Score;
use xray::jobs::admission::{Admission, AdmitRequest, Decision, Work};
use xray::jobs::execute::{JobSpec, Outcome, ReusedScores};
use xray::jobs::finished::FinishedJobs;
use xray::jobs::index::{LiveJob, StatusIndex};
use xray::jobs::pool::{ComputePool, JobSink, PoolConfig, Ticket};
use xray::jobs::recovery::restore_quota;
use xray::jobs::sink::{Failing, StoreSink};
use xray::labels::Labels;
use xray::ledger::demo::DemoLedger;
use xray::ledger::view::ViewOptions;
use xray::limits::quota::{period_start_ms, QuotaPeriod, UsageRecord};
use xray::metrics::Metrics;
use xray::pubkey::Pubkey;
use xray::store::group_commit::GroupCommit;
use xray::store::{
    Attached, Callback, Completion, DueCursor, DuePage, IdempotentAnswer, JobCursor, JobKind, JobPage, JobRecord,
    JobState, LiveState, RocksStore, Store, StoreError, StoreResult, Subject, UsageCarry, WebhookSecret,
};

use super::support::open;

/// A RocksStore whose next `fail_completes` completions, `fail_cancels` undone admissions and
/// `fail_syncs` fsyncs fail with an I/O error (a full disk), and whose fsyncs take
/// `sync_delay_ms` longer.
struct FaultyStore {
    inner: RocksStore,
    fail_completes: AtomicU32,
    fail_cancels: AtomicU32,
    fail_syncs: AtomicU32,
    sync_delay_ms: AtomicU64,
}

impl FaultyStore {
    fn over(inner: RocksStore) -> FaultyStore {
        let (fail_completes, fail_cancels, fail_syncs) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
        FaultyStore { inner, fail_completes, fail_cancels, fail_syncs, sync_delay_ms: AtomicU64::new(0) }
    }
}

/// True (and one fewer left) while `left` is above zero.
fn take_one(left: &AtomicU32) -> bool {
    left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
}

fn disk_full() -> StoreError {
    StoreError::Io("IO error: No space left on device".into())
}

impl Store for FaultyStore {
    fn put_key(&self, key: &KeyRecord) -> StoreResult<()> {
        self.inner.put_key(key)
    }
    fn put_rotation(&self, old: &KeyRecord, new: &KeyRecord, carried: &UsageCarry) -> StoreResult<()> {
        self.inner.put_rotation(old, new, carried)
    }
    fn get_key(&self, id: &str) -> StoreResult<Option<KeyRecord>> {
        self.inner.get_key(id)
    }
    fn list_keys(&self, after: Option<&str>, limit: usize) -> StoreResult<Vec<KeyRecord>> {
        self.inner.list_keys(after, limit)
    }
    fn admit(&self, job: &JobRecord, answer: Option<&IdempotentAnswer>) -> StoreResult<()> {
        self.inner.admit(job, answer)
    }
    fn put_answer(&self, answer: &IdempotentAnswer) -> StoreResult<Option<IdempotentAnswer>> {
        self.inner.put_answer(answer)
    }
    fn get_answer(&self, account: &str, key_digest: &[u8; 32]) -> StoreResult<Option<IdempotentAnswer>> {
        self.inner.get_answer(account, key_digest)
    }
    fn purge_answers_before(&self, cutoff_ms: u64, batch_len: usize) -> StoreResult<usize> {
        self.inner.purge_answers_before(cutoff_ms, batch_len)
    }
    fn answer_count(&self, account: &str) -> StoreResult<u64> {
        self.inner.answer_count(account)
    }
    fn cancel_admission(&self, id: &str) -> StoreResult<()> {
        match take_one(&self.fail_cancels) {
            true => Err(disk_full()),
            false => self.inner.cancel_admission(id),
        }
    }
    fn mark_running(&self, id: &str, started_at_ms: u64) -> StoreResult<JobRecord> {
        self.inner.mark_running(id, started_at_ms)
    }
    fn complete(&self, id: &str, completed_at_ms: u64, outcome: &Completion) -> StoreResult<JobRecord> {
        match take_one(&self.fail_completes) {
            true => Err(disk_full()),
            false => self.inner.complete(id, completed_at_ms, outcome),
        }
    }
    fn get_job(&self, id: &str) -> StoreResult<Option<JobRecord>> {
        self.inner.get_job(id)
    }
    fn get_result(&self, job: &JobRecord) -> StoreResult<Option<Vec<u8>>> {
        self.inner.get_result(job)
    }
    fn latest_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>> {
        self.inner.latest_for(account, subject)
    }
    fn latest_ready_for(&self, account: &str, subject: Subject<'_>) -> StoreResult<Option<JobRecord>> {
        self.inner.latest_ready_for(account, subject)
    }
    fn usage(&self, key_id: &str, period_start_ms: u64) -> StoreResult<UsageRecord> {
        self.inner.usage(key_id, period_start_ms)
    }
    fn charge_now_units(
        &self,
        key_id: &str,
        period_start_ms: u64,
        limit: u64,
        units: u32,
    ) -> StoreResult<xray::store::Charged> {
        self.inner.charge_now_units(key_id, period_start_ms, limit, units)
    }
    fn live_jobs(
        &self,
        state: LiveState,
        after: Option<&JobCursor>,
        created_before_ms: u64,
        limit: usize,
    ) -> StoreResult<JobPage> {
        self.inner.live_jobs(state, after, created_before_ms, limit)
    }
    fn purge_finished_before(&self, cutoff_ms: u64, limit: usize) -> StoreResult<usize> {
        self.inner.purge_finished_before(cutoff_ms, limit)
    }
    fn due_callbacks(&self, now_ms: u64, after: Option<&DueCursor>, limit: usize) -> StoreResult<DuePage> {
        self.inner.due_callbacks(now_ms, after, limit)
    }
    fn pending_callbacks(&self, account: &str, limit: usize) -> StoreResult<Vec<String>> {
        self.inner.pending_callbacks(account, limit)
    }
    fn record_callback(&self, id: &str, expected: &Callback, callback: &Callback) -> StoreResult<JobRecord> {
        self.inner.record_callback(id, expected, callback)
    }
    fn attach_callback(&self, id: &str, account: &str, key_id: &str, url: &str, now_ms: u64) -> StoreResult<Attached> {
        self.inner.attach_callback(id, account, key_id, url, now_ms)
    }
    fn put_webhook_secret(&self, secret: &WebhookSecret) -> StoreResult<()> {
        self.inner.put_webhook_secret(secret)
    }
    fn get_webhook_secret(&self, account: &str) -> StoreResult<Option<WebhookSecret>> {
        self.inner.get_webhook_secret(account)
    }
    fn write_docs(&self, writes: &[xray::store::DocWrite]) -> StoreResult<()> {
        self.inner.write_docs(writes)
    }
    fn get_doc(&self, kind: xray::store::DocKind, key: &[u8]) -> StoreResult<Option<xray::store::Doc>> {
        self.inner.get_doc(kind, key)
    }
    fn scan_docs(
        &self,
        kind: xray::store::DocKind,
        prefix: &[u8],
        after: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<Vec<xray::store::Doc>> {
        self.inner.scan_docs(kind, prefix, after, limit)
    }
    fn scan_docs_rev(
        &self,
        kind: xray::store::DocKind,
        prefix: &[u8],
        before: Option<&[u8]>,
        limit: usize,
    ) -> StoreResult<Vec<xray::store::Doc>> {
        self.inner.scan_docs_rev(kind, prefix, before, limit)
    }
    fn sync(&self) -> StoreResult<()> {
        std::thread::sleep(Duration::from_millis(self.sync_delay_ms.load(Ordering::SeqCst)));
        match take_one(&self.fail_syncs) {
            true => Err(disk_full()),
            false => self.inner.sync(),
        }
    }
    fn logged_sequence(&self) -> u64 {
        self.inner.logged_sequence()
    }
    fn disk_usage(&self) -> StoreResult<xray::metrics::StoreDisk> {
        self.inner.disk_usage()
    }
}

/// A sink over a faulty store holding one key and one admitted, charged, indexed job.
struct Rig {
    store: Arc<FaultyStore>,
    sink: Arc<StoreSink>,
    finished: Arc<FinishedJobs>,
    index: Arc<StatusIndex>,
    keys: Arc<KeyTable>,
    key: KeyRecord,
    store_failing: Arc<AtomicBool>,
    job: JobRecord,
    _dir: tempfile::TempDir,
}

const WALLET: &str = "DpeZhDXtytSdG8iHfzcWkzDNxV32hHKKv6aCbVkMrW7z";

/// `index_len_max` 1: the rig's job fills the index, so the next admission's indexing fails.
fn rig(index_len_max: usize) -> Rig {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(FaultyStore::over(open(dir.path())));
    let now_ms = now_unix_ms();
    let spec = KeySpec {
        account: AccountId::generate().expect("random"),
        name: "faults".into(),
        scopes: Scopes::ALL,
        expires_at_ms: None,
        rate_per_second: 100,
        burst: 100,
        quota_limit: 10,
        quota_period: QuotaPeriod::Month,
    };
    let (_, key) = spec.issue(now_ms).expect("issued");
    store.put_key(&key).expect("stored");
    let job = JobRecord::queued(
        "an_CkBqBaVNZQivNt9KpjngFq".into(),
        JobKind::Analysis { wallet: WALLET.into() },
        key.account.as_str().to_owned(),
        key.id.as_str().to_owned(),
        now_ms,
        false,
        true,
        period_start_ms(now_ms, QuotaPeriod::Month),
        "xray-1".into(),
    );
    store.admit(&job, None).expect("admitted");
    let keys = Arc::new(KeyTable::from_records([key.clone()], now_ms).expect("table"));
    restore_quota(&keys, &*store, now_ms).expect("quota restored");
    let index = Arc::new(StatusIndex::new(index_len_max, 1_024));
    index.insert(Arc::new(LiveJob::new(job.clone()))).expect("indexed");
    let store_failing = Arc::new(AtomicBool::new(false));
    let failing = Failing { ledger: Arc::new(AtomicBool::new(false)), store: store_failing.clone() };
    let finished = Arc::new(FinishedJobs::new(1 << 20, 64));
    let dyn_store: Arc<dyn Store> = store.clone();
    let metrics = Arc::new(Metrics::default());
    let sink = Arc::new(StoreSink::new(dyn_store, index.clone(), finished.clone(), keys.clone(), metrics, failing));
    Rig { store, sink, finished, index, keys, key, store_failing, job, _dir: dir }
}

/// Admission over the rig's store, index and finished jobs, queueing on `pool`.
fn admission_over(rig: &Rig, pool: &Arc<ComputePool>) -> Admission {
    let store: Arc<dyn Store> = rig.store.clone();
    Admission::new(store, rig.index.clone(), pool.clone(), rig.finished.clone(), 60_000)
}

/// Admits an analysis of a demo archetype with `key`: a new job (anything else fails the test).
fn admit_archetype(admission: &Admission, key: &KeyEntry, archetype: &str) -> JobRecord {
    let demo = DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
    let work = Work::Analysis { wallet: demo.archetype(archetype).expect("archetype") };
    let request = AdmitRequest {
        key,
        work: &work,
        refresh: false,
        callback_url: None,
        now_ms: now_unix_ms(),
        idempotency: None,
        monitor: None,
    };
    match admission.admit(&request).expect("admitted") {
        Decision::Admitted(record) => *record,
        other => panic!("a new job: {other:?}"),
    }
}

/// A compute pool of one thread running one job at a time on the demo ledger, over `sink`.
fn one_job_at_a_time(sink: Arc<dyn JobSink>) -> Arc<ComputePool> {
    let seed = xray::config::DEMO_SEED_DEFAULT;
    let config = PoolConfig {
        threads: 1,
        queue_capacity: 8,
        jobs_in_flight_max: 1,
        pin: false,
        view: ViewOptions::default(),
        budget: Default::default(),
    };
    Arc::new(
        ComputePool::start(
            config,
            xray::labels::live::LiveLabels::fixed(Labels::builtin()),
            move |_| Ok(DemoLedger::new(seed)),
            sink,
        )
        .expect("pool"),
    )
}

impl Rig {
    fn ticket(&self) -> Ticket {
        let wallet = Pubkey::parse(WALLET).expect("address");
        Ticket::new(self.job.id.clone(), JobSpec::Analysis { wallet })
    }

    /// The key's usage of the job's period, on disk and in memory.
    fn usage(&self) -> (UsageRecord, UsageRecord) {
        let period = self.job.quota_period_start_ms;
        let disk = self.store.usage(self.key.id.as_str(), period).expect("usage");
        let entry = self.keys.get(&self.key.id).expect("key");
        (disk, entry.quota.snapshot_period(period).expect("period in memory"))
    }

    fn state(&self) -> JobState {
        self.store.get_job(&self.job.id).expect("read").expect("job").state
    }
}

#[test]
fn a_refused_completion_keeps_the_job_live_until_a_retry_is_taken() {
    let rig = rig(16);
    rig.sink.started(&rig.ticket()).expect("runs");
    rig.store.fail_completes.store(2, Ordering::SeqCst);
    let payload = br#"{"score":{"value":90}}"#.to_vec();
    rig.sink.finished(rig.ticket(), Outcome::Ready { payload: payload.clone() });

    // Refused: nothing moved, in memory or on disk, and the service says so.
    assert_eq!(rig.state(), JobState::Running);
    assert!(rig.index.get(&rig.job.id).is_some(), "polls still find the job live");
    assert!(rig.store_failing.load(Ordering::Relaxed));
    assert_eq!(rig.sink.unsettled_len(), 1);
    let (disk, memory) = rig.usage();
    assert_eq!((disk.reserved, disk.used, memory.reserved, memory.used), (1, 0, 1, 0));

    // Refused once more, then taken.
    rig.sink.retry_unsettled();
    assert_eq!((rig.state(), rig.sink.unsettled_len()), (JobState::Running, 1));
    rig.sink.retry_unsettled();
    assert_eq!(rig.state(), JobState::Ready);
    // The analysis's payload as stored: with its `changes` (none: the wallet's first).
    let stored = br#"{"score":{"value":90},"changes":null}"#.to_vec();
    assert_eq!(rig.store.get_result(&rig.store.get_job(&rig.job.id).unwrap().unwrap()).unwrap(), Some(stored));
    assert!(rig.index.get(&rig.job.id).is_none());
    assert!(!rig.store_failing.load(Ordering::Relaxed), "no longer degraded");
    assert_eq!(rig.sink.unsettled_len(), 0);
    let (disk, memory) = rig.usage();
    assert_eq!((disk.reserved, disk.used, disk.refunded), (0, 1, 0), "charged once");
    assert_eq!(disk, memory, "memory settles as the disk did");
}

#[test]
fn a_result_the_store_cannot_hold_ends_the_job_failed_and_refunded() {
    let rig = rig(16);
    rig.sink.started(&rig.ticket()).expect("runs");
    let huge = vec![b' '; xray::config::RESULT_BYTES_MAX + 1];
    rig.sink.finished(rig.ticket(), Outcome::Ready { payload: huge });
    let job = rig.store.get_job(&rig.job.id).unwrap().unwrap();
    assert_eq!(job.state, JobState::Failed);
    assert_eq!(job.error.map(|e| e.code), Some("ANALYSIS_FAILED".to_owned()));
    assert!(rig.index.get(&rig.job.id).is_none());
    assert!(!rig.store_failing.load(Ordering::Relaxed));
    let (disk, memory) = rig.usage();
    assert_eq!((disk.reserved, disk.used, disk.refunded), (0, 0, 1), "refunded");
    assert_eq!(disk, memory);
}

/// Where `PanickingSink` panics: once, in the first call of that method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PanicAt {
    /// After the server's sink marked the job RUNNING.
    Started,
    /// Before the server's sink settled anything.
    Finished,
}

/// The server's sink, panicking once where the test says: a bug on the job path.
struct PanickingSink {
    inner: Arc<StoreSink>,
    at: PanicAt,
    armed: AtomicBool,
}

impl PanickingSink {
    fn fire(&self, here: PanicAt) {
        if here == self.at && self.armed.swap(false, Ordering::SeqCst) {
            panic!("an injected bug in the sink ({here:?})");
        }
    }
}

impl ReusedScores for PanickingSink {
    fn score_of(&self, analysis_id: &str, policy: &Policy) -> Option<Score> {
        self.inner.score_of(analysis_id, policy)
    }
}

impl JobSink for PanickingSink {
    fn started(&self, ticket: &Ticket) -> Result<(), Outcome> {
        let started = self.inner.started(ticket);
        self.fire(PanicAt::Started);
        started
    }
    fn finished(&self, ticket: Ticket, outcome: Outcome) {
        self.fire(PanicAt::Finished);
        self.inner.finished(ticket, outcome)
    }
    fn finished_plainly(&self, id: &str, outcome: Outcome) {
        self.inner.finished_plainly(id, outcome)
    }
}

/// Waits (bounded) until the job's stored state is `state`.
fn await_state(rig: &Rig, id: &str, state: JobState) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while rig.store.get_job(id).expect("read").expect("job").state != state {
        assert!(Instant::now() < deadline, "{id} never became {state:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Issue #28: a panic in the sink's `started` or `finished` ran outside the run's
/// `catch_unwind`, leaving the job RUNNING with its unit reserved until a restart.
#[test]
fn a_panic_on_the_job_path_ends_the_job_failed_and_refunded_and_the_next_job_runs() {
    for at in [PanicAt::Started, PanicAt::Finished] {
        let rig = rig(16);
        // One job in flight: a slot lost to the panic would stall the next job.
        let sink: Arc<dyn JobSink> =
            Arc::new(PanickingSink { inner: rig.sink.clone(), at, armed: AtomicBool::new(true) });
        let pool = one_job_at_a_time(sink);
        let live = rig.index.get(&rig.job.id).expect("live");
        pool.submit(rig.ticket()).expect("queued");
        await_state(&rig, &rig.job.id, JobState::Failed);

        // What a poll reads: FAILED with the code of a bug; the long polls were woken.
        let polled = rig.finished.job(&*rig.store, &rig.job.id).expect("read").expect("finished");
        assert_eq!(polled.record.error.as_ref().map(|e| e.code.as_str()), Some("ANALYSIS_FAILED"), "{at:?}");
        assert!(rig.index.get(&rig.job.id).is_none() && live.state().is_none(), "{at:?}: out of the index");
        let (disk, memory) = rig.usage();
        assert_eq!((disk.reserved, disk.used, disk.refunded), (0, 0, 1), "{at:?}: refunded");
        assert_eq!(disk, memory, "{at:?}");

        // The next job runs, on the slot the panic gave back.
        let entry = rig.keys.get(&rig.key.id).expect("key");
        let next = admit_archetype(&admission_over(&rig, &pool), &entry, "open_delegation");
        await_state(&rig, &next.id, JobState::Ready);
        assert!(pool.shutdown().is_empty());
        let (disk, memory) = rig.usage();
        assert_eq!((disk.reserved, disk.used, disk.refunded), (0, 1, 1), "{at:?}: the next job charged");
        assert_eq!(disk, memory, "{at:?}");
    }
}

/// The queue refuses an admission (here: the index is full) and undoing its durable record
/// fails too: the store keeps the job and its reservation, so the admission stands — admitted,
/// charged once, and run once the housekeeping thread hands its ticket to the queue — instead
/// of a 503 that says nothing was recorded (and a restart that runs and charges it anyway).
#[test]
fn an_admission_whose_undo_fails_stands_and_runs_once() {
    let rig = rig(1);
    let sink: Arc<dyn JobSink> = rig.sink.clone();
    let pool = one_job_at_a_time(sink);
    let admission = admission_over(&rig, &pool);
    let entry = rig.keys.get(&rig.key.id).expect("key");

    rig.store.fail_cancels.store(1, Ordering::SeqCst);
    let record = admit_archetype(&admission, &entry, "open_delegation");
    let (disk, memory) = rig.usage();
    assert_eq!((disk.reserved, memory.reserved), (2, 2), "reserved once, on disk and in memory");

    admission.submit_stranded();
    await_state(&rig, &record.id, JobState::Ready);
    assert!(pool.shutdown().is_empty());
    let (disk, memory) = rig.usage();
    assert_eq!((disk.used, disk.reserved), (1, 1), "charged once; the rig's own job still reserved");
    assert_eq!(disk, memory);
}

/// `--sync-writes`: an answer waits for an fsync made on the group commit's thread, so the
/// thread serving it keeps serving meanwhile; every write logged before an fsync begins shares
/// it; a failed fsync fails the answers it was to cover, and the next one succeeds.
#[test]
fn group_commit_waits_off_the_serving_thread_and_shares_each_fsync() {
    let rig = rig(16);
    let sync_delay = Duration::from_millis(300);
    rig.store.sync_delay_ms.store(300, Ordering::SeqCst);
    let dyn_store: Arc<dyn Store> = rig.store.clone();
    let group = GroupCommit::start(dyn_store).expect("sync thread");
    let admit = |i: usize| {
        let id = format!("an_groupcommit{i}");
        rig.store.admit(&JobRecord { id, ..rig.job.clone() }, None).expect("logged");
    };
    let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new().enable_timer().build().expect("runtime");
    runtime.block_on(async {
        let started = Instant::now();
        let waits: Vec<_> = (0..32)
            .map(|i| {
                admit(i);
                let group = group.clone();
                monoio::spawn(async move { group.covered().await })
            })
            .collect();
        // The thread keeps running tasks while the 32 answers wait.
        let (mut gap_max, mut last) = (Duration::ZERO, Instant::now());
        for _ in 0..20 {
            monoio::time::sleep(Duration::from_millis(10)).await;
            gap_max = gap_max.max(last.elapsed());
            last = Instant::now();
        }
        for wait in waits {
            wait.await.expect("covered");
        }
        assert!(gap_max < Duration::from_millis(150), "the serving thread stalled for {gap_max:?}");
        assert_eq!(group.syncs(), 1, "32 writes logged before the fsync began share it");
        assert!(started.elapsed() < sync_delay * 3, "{:?}", started.elapsed());

        rig.store.fail_syncs.store(1, Ordering::SeqCst);
        admit(32);
        let failed = group.covered().await;
        assert!(matches!(failed, Err(StoreError::Io(_))), "{failed:?}");
        admit(33);
        group.covered().await.expect("the next fsync covers it");
        assert_eq!(group.syncs(), 3);
    });
    group.stop();
}

/// A sink that holds each job at its start until the gate opens — a compute thread that is
/// busy — so the jobs admitted meanwhile stay `QUEUED`.
struct GatedSink {
    inner: Arc<StoreSink>,
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl GatedSink {
    fn open(&self) {
        *self.open.lock().expect("gate") = true;
        self.opened.notify_all();
    }
}

impl ReusedScores for GatedSink {
    fn score_of(&self, analysis_id: &str, policy: &Policy) -> Option<Score> {
        self.inner.score_of(analysis_id, policy)
    }
}

impl JobSink for GatedSink {
    fn started(&self, ticket: &Ticket) -> Result<(), Outcome> {
        let open = self.open.lock().expect("gate");
        let _open = self.opened.wait_while(open, |open| !*open).expect("gate");
        self.inner.started(ticket)
    }
    fn finished(&self, ticket: Ticket, outcome: Outcome) {
        self.inner.finished(ticket, outcome)
    }
    fn finished_plainly(&self, id: &str, outcome: Outcome) {
        self.inner.finished_plainly(id, outcome)
    }
}

/// `--sync-writes`: an admission whose write could not be made durable (the group commit's
/// `fsync` failed) is withdrawn while it is still queued — job, reservation, index entry and
/// idempotency answer, on disk and in memory — so the refusal the client gets charges nothing,
/// and its ticket, run later, settles nothing; one a compute thread already started stands
/// (the client gets its 202) and is charged once.
#[test]
fn an_admission_that_could_not_be_made_durable_is_withdrawn_unless_started() {
    let rig = rig(16);
    let gated = Arc::new(GatedSink {
        inner: rig.sink.clone(),
        open: std::sync::Mutex::new(false),
        opened: std::sync::Condvar::new(),
    });
    let sink: Arc<dyn JobSink> = gated.clone();
    let pool = one_job_at_a_time(sink);
    let admission = admission_over(&rig, &pool);
    let group = GroupCommit::start(rig.store.clone()).expect("sync thread");
    let entry = rig.keys.get(&rig.key.id).expect("key");
    let admit = |archetype: &str| admit_archetype(&admission, &entry, archetype);
    let failed_sync = || {
        rig.store.fail_syncs.store(1, Ordering::SeqCst);
        let mut runtime = monoio::RuntimeBuilder::<monoio::LegacyDriver>::new().enable_timer().build().expect("rt");
        runtime.block_on(group.covered()).expect_err("the fsync fails")
    };
    // The pool's one thread takes the first job and waits at the gate; the second stays queued.
    let busy = admit("open_delegation");
    let queued = admit("sybil_a");
    assert_eq!(rig.usage().0.reserved, 3, "the rig's job and two more, reserved");
    failed_sync();
    let withdrawn = admission.after_failed_sync(Decision::Admitted(Box::new(queued.clone())), &entry).expect("undone");
    assert!(withdrawn.is_none(), "a queued job is withdrawn: the request is refused");
    assert_eq!(rig.store.get_job(&queued.id).unwrap(), None, "nothing recorded");
    assert!(rig.index.get(&queued.id).is_none());
    let (disk, memory) = rig.usage();
    assert_eq!((disk.reserved, memory.reserved), (2, 2), "its unit released on disk and in memory");

    // A job a compute thread started cannot be withdrawn: it stands, and is charged once.
    rig.store.mark_running(&busy.id, now_unix_ms()).expect("started");
    failed_sync();
    let stands = admission.after_failed_sync(Decision::Admitted(Box::new(busy.clone())), &entry).expect("answered");
    assert!(matches!(stands, Some(Decision::Admitted(_))), "the admission stands: {stands:?}");
    gated.open();
    await_state(&rig, &busy.id, JobState::Ready);
    // The withdrawn job's ticket, run or still queued, finds nothing to settle.
    std::thread::sleep(Duration::from_millis(200));
    pool.shutdown();
    group.stop();
    assert_eq!(rig.store.get_job(&queued.id).unwrap(), None, "the withdrawn job never comes back");
    let (disk, memory) = rig.usage();
    assert_eq!(
        (disk.used, disk.reserved, disk.refunded),
        (1, 1, 0),
        "the started one charged once; the rig's reserved"
    );
    assert_eq!(disk, memory);
}

/// A request's `callbackUrl` is attached to the job its answer names only when the job is the
/// caller's: the store compares the caller's account with the job's (the job's own account
/// would compare the job with itself, and any caller naming it would attach).
#[test]
fn a_caller_of_another_account_cannot_attach_a_webhook_to_a_job() {
    let rig = rig(16);
    let sink: Arc<dyn JobSink> = rig.sink.clone();
    let pool = one_job_at_a_time(sink);
    let admission = admission_over(&rig, &pool);
    let decision = Decision::live(rig.index.get(&rig.job.id).expect("live"));
    let url = "https://hooks.example/attach";
    let other = AccountId::generate().expect("random");

    let refused =
        pollster::block_on(admission.callback_of(&decision, other.as_str(), rig.key.id.as_str(), url, now_unix_ms()));
    assert!(refused.is_err(), "another account's caller attached: {refused:?}");
    assert_eq!(rig.store.get_job(&rig.job.id).unwrap().unwrap().callback, None, "nothing written");

    let own = rig.key.account.as_str();
    let answer = pollster::block_on(admission.callback_of(&decision, own, rig.key.id.as_str(), url, now_unix_ms()))
        .expect("attached");
    assert!(answer.attached && answer.wrote, "the job's own account attaches: {answer:?}");
    assert!(pool.shutdown().is_empty());
}
