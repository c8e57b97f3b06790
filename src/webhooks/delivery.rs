//! The webhook delivery thread (`xray-webhooks`): it drains the store's outbox — finished jobs
//! whose callback is due — and POSTs each job's document, signed, to its `callbackUrl`.
//!
//! Owns: `Deliveries` (the thread and its stop flag), the choice of what to send next, each
//! attempt and the backoff. Reads and writes the store on its own thread, never on a listener
//! or compute thread; the HTTP requests run as tasks on a current-thread tokio runtime of its
//! own.
//!
//! The loop: while a delivery slot is free, read a page of the outbox (at most
//! `WEBHOOK_DUE_PAGE_LEN` due callbacks, soonest due first, after the cursor the last page
//! ended on — so entries that cannot be taken now never hide the rest; at the end it starts
//! over) and pick from it fairly: the account with the fewest deliveries in flight first,
//! one at a time (round-robin), never more than `in_flight_per_account_max` of one account
//! nor `in_flight_max` in all. Each pick is claimed — the store records the attempt and moves
//! its due time past the attempt's timeout, a compare-and-set on the callback as read, so two
//! nodes of a cluster never attempt one delivery at once — and sent as its own task, bounded by
//! `timeout`; its outcome is recorded when it ends, whatever the others do: `DELIVERED` on a
//! 2xx, else `PENDING` again after a backoff (1 s doubling, at most `WEBHOOK_BACKOFF_MS_MAX`),
//! or `FAILED` once `attempts_max` attempts were made or `retry_window` passed since the
//! webhook entered the outbox (the job finished, or a later request attached it to the
//! finished job) — or at once when no attempt can ever succeed (the URL is refused by the policy,
//! the account has no webhook secret, the key that asked for it can no longer read it). A freed
//! slot wakes the loop at once.
//!
//! A webhook delivers what a poll would, to whom a poll would: before each attempt, the key
//! that asked for it (the job's key, or its successor after a rotation; a monitor's event: the
//! monitor's key, whose re-analysis made it) must still be active and hold `analysis:read`, the
//! scope that reads the document and that naming a `callbackUrl` (or making a monitor) needed —
//! else the delivery ends `FAILED`, `key_cannot_read`.
//!
//! `lastError` is one of a closed set of reasons (`Failure::reason`: `timeout`, `refused`,
//! `connect_failed`, `no_public_address`, `tls`, `http_<status>`, …): never a
//! resolver's or a socket's own words, which would tell a client what the server's network
//! holds (internal names that resolve, ports that are open).
//!
//! Invariant: at least once. A process killed mid-attempt leaves the claim, due again after
//! the attempt's timeout: the receiver may see a delivery twice (same `Xray-Webhook-Id`), never
//! none while attempts remain.
//! Invariant: bounded and fair — deliveries in flight (`in_flight_max`, and per account
//! `in_flight_per_account_max`), each request's time (`timeout`), attempts per job and the time
//! they span, outbox reads per cycle; a receiver that never answers holds only its own
//! account's slots, each for at most `timeout`. Redirects are not followed.
//! Invariant: the environment's proxy variables (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`) are
//! never read: a proxy would resolve the target itself, past the address check. An operator's
//! explicit `webhook_proxy` is used as configured, and each target's name is still resolved
//! and checked here before the request goes to the proxy — but the proxy resolves it again, so
//! a name whose answer changes in between (DNS rebinding) or that the proxy's resolver answers
//! otherwise (split-horizon DNS) escapes this check: behind a proxy, the proxy must enforce the
//! same egress rules (said in the README and the setting's help).
//! Deliberately absent: a wake-up from the sink (the outbox is read every `WEBHOOK_POLL_MS`
//! while slots are free), and reading the receiver's answer body (only its status counts).

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::Notify;

use super::failure::{classify, Failure};
use super::signature::{sign, SIGNATURE_HEADER};
use super::target::{GuardedResolver, TargetPolicy};
use crate::auth::table::KeyTable;
use crate::auth::{KeyId, KeyState, Scope};
use crate::clock::now_unix_ms;
use crate::config::{
    WEBHOOK_BACKOFF_MS_BASE, WEBHOOK_BACKOFF_MS_MAX, WEBHOOK_DUE_PAGES_PER_CYCLE, WEBHOOK_DUE_PAGE_LEN,
    WEBHOOK_POLL_MS, WEBHOOK_USER_AGENT,
};
use crate::metrics::{WebhookOutcome, WEBHOOKS};
use crate::store::{Callback, CallbackStatus, DueCursor, JobRecord, JobState, Store, StoreError};

/// Makes the document a poll of a finished job answers (without `callback`), from its record
/// and its payload when READY: the API's, handed in at start so that this module does not
/// depend on it.
pub type Render = Arc<dyn Fn(&JobRecord, Option<&[u8]>) -> Result<Vec<u8>, String> + Send + Sync>;

/// How deliveries are made.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    pub policy: TargetPolicy,
    /// Deliveries in flight at once, all accounts together.
    pub in_flight_max: usize,
    /// Deliveries of one account in flight at once: a receiver that never answers holds only
    /// these.
    pub in_flight_per_account_max: usize,
    /// One request's time, connection included.
    pub timeout: Duration,
    pub attempts_max: u32,
    /// Time after the job finished past which a failed attempt is the last.
    pub retry_window: Duration,
    /// The operator's proxy for every delivery (`http://host:port`); `None`: direct. The
    /// environment's proxy variables are never read.
    pub proxy: Option<String>,
}

/// The running delivery thread.
pub struct Deliveries {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Deliveries {
    pub fn start(
        store: Arc<dyn Store>,
        keys: Arc<KeyTable>,
        settings: WebhookSettings,
        render: Render,
    ) -> Result<Deliveries, String> {
        let client = client(&settings)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("webhook runtime: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker { store, keys, settings, render, client, stop: Arc::clone(&stop) };
        let thread = std::thread::Builder::new()
            .name("xray-webhooks".into())
            .spawn(move || worker.run(runtime))
            .map_err(|e| format!("webhook thread: {e}"))?;
        Ok(Deliveries { stop, thread: Some(thread) })
    }

    /// Ends the thread once the attempts in flight ended (each within `timeout`).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The delivery client: no redirects, bounded in time, the guarded resolver for every name it
/// connects to, and no proxy but the operator's own (`no_proxy` turns off the environment's).
pub fn client(settings: &WebhookSettings) -> Result<reqwest::Client, String> {
    let proxy_host = settings.proxy.as_deref().and_then(|p| reqwest::Url::parse(p).ok()?.host_str().map(str::to_owned));
    let mut builder = reqwest::Client::builder()
        .dns_resolver(Arc::new(GuardedResolver { policy: settings.policy.clone(), proxy_host }))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(settings.timeout)
        .connect_timeout(settings.timeout)
        .user_agent(WEBHOOK_USER_AGENT)
        .no_proxy();
    if let Some(proxy) = &settings.proxy {
        builder = builder.proxy(reqwest::Proxy::all(proxy).map_err(|e| format!("webhook_proxy: {e}"))?);
    }
    builder.build().map_err(|e| format!("webhook client: {e}"))
}

struct Worker {
    store: Arc<dyn Store>,
    /// The keys in force (a cluster node's follows etcd): who may still read a document.
    keys: Arc<KeyTable>,
    settings: WebhookSettings,
    render: Render,
    client: reqwest::Client,
    stop: Arc<AtomicBool>,
}

/// One claimed delivery, ready to send.
struct Attempt {
    job: JobRecord,
    /// The callback as the claim recorded it (attempts counted, due again after the timeout).
    claim: Callback,
    body: Vec<u8>,
    signature: String,
}

/// How one attempt ended.
enum Sent {
    Delivered,
    /// Worth another attempt later.
    Failed(Failure),
}

/// The deliveries in flight: how many in all and per account, which jobs. Shared by the loop
/// and its tasks, all on the delivery thread.
#[derive(Default)]
struct Slots {
    per_account: HashMap<String, usize>,
    jobs: HashSet<String>,
    total: usize,
    /// Woken when a delivery ends, so a freed slot is filled at once.
    freed: Rc<Notify>,
}

/// One delivery's slot, given back when its task ends (delivered, failed or dropped).
struct Slot {
    slots: Rc<RefCell<Slots>>,
    account: String,
    job: String,
}

impl Slot {
    fn take(slots: &Rc<RefCell<Slots>>, job: &JobRecord) -> Slot {
        let mut s = slots.borrow_mut();
        *s.per_account.entry(job.account.clone()).or_default() += 1;
        s.jobs.insert(job.id.clone());
        s.total += 1;
        Slot { slots: Rc::clone(slots), account: job.account.clone(), job: job.id.clone() }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.slots.borrow_mut();
        if let Some(n) = s.per_account.get_mut(&self.account) {
            *n -= 1;
            if *n == 0 {
                s.per_account.remove(&self.account);
            }
        }
        s.jobs.remove(&self.job);
        s.total -= 1;
        s.freed.notify_one();
    }
}

/// The delay before attempt `attempt + 1` after `attempt` attempts failed.
pub fn backoff_ms(attempt: u32) -> u64 {
    let doublings = attempt.saturating_sub(1).min(20);
    WEBHOOK_BACKOFF_MS_BASE.saturating_mul(1 << doublings).min(WEBHOOK_BACKOFF_MS_MAX)
}

/// Which of `due` (soonest due first) to send now, given what each account has in flight:
/// round-robin over accounts, the one with the fewest in flight first (ties: the one whose
/// callback is due soonest), each account below `per_account_max`, at most `free` in all.
/// Jobs already in flight are skipped.
fn pick(due: Vec<JobRecord>, in_flight: &Slots, free: usize, per_account_max: usize) -> Vec<JobRecord> {
    let mut queues: Vec<(usize, std::collections::VecDeque<JobRecord>)> = Vec::new();
    let mut position: HashMap<String, usize> = HashMap::new();
    for job in due.into_iter().filter(|job| !in_flight.jobs.contains(&job.id)) {
        let at = *position.entry(job.account.clone()).or_insert_with(|| {
            let held = in_flight.per_account.get(&job.account).copied().unwrap_or(0);
            queues.push((held, Default::default()));
            queues.len() - 1
        });
        queues[at].1.push_back(job);
    }
    let mut picked = Vec::new();
    while picked.len() < free {
        let next = queues
            .iter_mut()
            .filter(|(held, queue)| *held < per_account_max && !queue.is_empty())
            .min_by_key(|(held, _)| *held);
        let Some((held, queue)) = next else { break };
        *held += 1;
        picked.extend(queue.pop_front());
    }
    picked
}

impl Worker {
    fn run(self, runtime: tokio::runtime::Runtime) {
        let local = tokio::task::LocalSet::new();
        let worker = Rc::new(self);
        local.block_on(&runtime, Rc::clone(&worker).deliver());
        // A name lookup still running on the runtime's blocking pool is not waited for.
        drop(local);
        runtime.shutdown_timeout(Duration::from_millis(WEBHOOK_POLL_MS));
    }

    /// The loop: fill free slots from the outbox, sleep until a slot frees or the poll
    /// interval passes; on stop, wait for the deliveries in flight (each ends within its
    /// timeout; one cut short is due again, at least once).
    async fn deliver(self: Rc<Self>) {
        let slots = Rc::new(RefCell::new(Slots::default()));
        let freed = Rc::clone(&slots.borrow().freed);
        let mut cursor = None;
        while !self.stop.load(Ordering::Acquire) {
            self.fill(&slots, &mut cursor);
            let poll = tokio::time::sleep(Duration::from_millis(WEBHOOK_POLL_MS));
            tokio::select! {
                _ = poll => {}
                _ = freed.notified() => {}
            }
        }
        let deadline = tokio::time::Instant::now() + self.settings.timeout + Duration::from_millis(WEBHOOK_POLL_MS);
        while slots.borrow().total > 0 && tokio::time::Instant::now() < deadline {
            let _ = tokio::time::timeout_at(deadline, freed.notified()).await;
        }
    }

    /// Takes due callbacks into the free slots: at most `WEBHOOK_DUE_PAGES_PER_CYCLE` pages of
    /// the outbox, walked from `cursor` (reset at the end of the due set).
    fn fill(self: &Rc<Self>, slots: &Rc<RefCell<Slots>>, cursor: &mut Option<DueCursor>) {
        for _ in 0..WEBHOOK_DUE_PAGES_PER_CYCLE {
            let free = self.settings.in_flight_max.saturating_sub(slots.borrow().total);
            if free == 0 {
                return;
            }
            let now_ms = now_unix_ms();
            let page = match self.store.due_callbacks(now_ms, cursor.as_ref(), WEBHOOK_DUE_PAGE_LEN) {
                Ok(page) => page,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the webhook outbox failed; retrying");
                    return;
                }
            };
            // The next page starts after the last entry scanned (a record re-read or gone in
            // between does not move it), so the walk covers the whole due set.
            let full = page.next.is_some();
            *cursor = page.next;
            let picked = pick(page.jobs, &slots.borrow(), free, self.settings.in_flight_per_account_max);
            for job in picked {
                self.start(slots, job, now_ms);
            }
            if !full {
                return;
            }
        }
    }

    /// Claims one delivery and sends it as its own task, holding its slot until it ends.
    fn start(self: &Rc<Self>, slots: &Rc<RefCell<Slots>>, job: JobRecord, now_ms: u64) {
        // A claim that was not made (taken by another node, given up) holds no slot: freeing
        // one would wake the loop for nothing.
        let Some(attempt) = self.prepare(job, now_ms) else { return };
        let slot = Slot::take(slots, &attempt.job);
        let worker = Rc::clone(self);
        tokio::task::spawn_local(async move {
            let _slot = slot;
            let sent = worker.send(&attempt).await;
            worker.settle(&attempt.job, &attempt.claim, sent);
        });
    }

    /// Claims the job's delivery and makes its signed body; `None` when another attempt claimed
    /// it first, or when it was given up here (no attempt can succeed).
    fn prepare(&self, job: JobRecord, now_ms: u64) -> Option<Attempt> {
        // Due now as read here: a callback another node claimed since the outbox was read has
        // its due time moved past now, and is not claimed twice.
        let callback =
            job.callback.clone().filter(|c| c.status == CallbackStatus::Pending && c.next_attempt_ms <= now_ms)?;
        let claim = Callback {
            attempts: callback.attempts.saturating_add(1),
            next_attempt_ms: now_ms + self.settings.timeout.as_millis() as u64 + WEBHOOK_POLL_MS,
            ..callback.clone()
        };
        match self.store.record_callback(&job.id, &callback, &claim) {
            Ok(_) => {}
            Err(StoreError::State { .. }) => return None,
            Err(e) => {
                tracing::warn!(job = %job.id, error = %e, "claiming a webhook delivery failed; retrying");
                return None;
            }
        }
        match self.body(&job, &claim, now_ms) {
            Ok((body, signature)) => Some(Attempt { job, claim, body, signature }),
            Err(failure) if failure.is_final() => {
                WEBHOOKS.attempted(WebhookOutcome::Failed);
                self.record(&job, &claim, CallbackStatus::Failed, Some(failure));
                None
            }
            Err(failure) => {
                self.settle(&job, &claim, Sent::Failed(failure));
                None
            }
        }
    }

    /// The rendered, signed body, or why it cannot be sent: never (a refused URL, no secret, a
    /// document that cannot be rendered) or not now (the store did not answer: the attempt
    /// counts and is retried).
    fn body(&self, job: &JobRecord, claim: &Callback, now_ms: u64) -> Result<(Vec<u8>, String), Failure> {
        if self.settings.policy.check_url(&claim.url).is_err() {
            return Err(Failure::UrlRefused);
        }
        self.asker_may_read(job, claim, now_ms)?;
        let not_now = |what: &str, e: StoreError| {
            tracing::warn!(job = %job.id, error = %e, "reading the webhook's {what} failed; the attempt is retried");
            Failure::ServerBusy
        };
        let secret = match self.store.get_webhook_secret(&job.account) {
            Ok(Some(secret)) => secret,
            Ok(None) => return Err(Failure::NoWebhookSecret),
            Err(e) => return Err(not_now("secret", e)),
        };
        let payload = match job.state {
            JobState::Ready => self.store.get_result(job).map_err(|e| not_now("result", e))?,
            _ => None,
        };
        // A panic while rendering (a bug) gives up this delivery, never the delivery thread.
        let render = std::panic::AssertUnwindSafe(|| (self.render)(job, payload.as_deref()));
        let rendered = std::panic::catch_unwind(render).unwrap_or_else(|_| Err("rendering panicked".into()));
        let body = rendered.map_err(|e| {
            tracing::error!(job = %job.id, error = %e, "rendering a webhook body failed");
            Failure::Internal
        })?;
        let signature = sign(&secret.secret, now_ms / 1_000, &body);
        Ok((body, signature))
    }

    /// Whether the key that asked for `job`'s webhook — the request's that attached it, else
    /// the job's own — or its successor may still read what it delivers. A key this node does
    /// not know yet (a cluster's key table follows etcd) is tried again later; keys are
    /// revoked, never removed.
    fn asker_may_read(&self, job: &JobRecord, callback: &Callback, now_ms: u64) -> Result<(), Failure> {
        let asker = callback.attached_by.as_deref().unwrap_or(&job.key_id);
        let id = KeyId::parse(asker).map_err(|_| Failure::KeyCannotRead)?;
        let key = self.keys.get(&id).ok_or(Failure::ServerBusy)?;
        let key = self.keys.successor_of(&key);
        match key.state_at(now_ms) == KeyState::Active && key.scopes().contains(Scope::AnalysisRead) {
            true => Ok(()),
            false => Err(Failure::KeyCannotRead),
        }
    }

    /// One attempt, bounded as a whole by `timeout` (a proxied one's name lookup included), so
    /// it never outlives its claim.
    async fn send(&self, attempt: &Attempt) -> Sent {
        match tokio::time::timeout(self.settings.timeout, self.try_send(attempt)).await {
            Ok(sent) => sent,
            Err(_) => Sent::Failed(Failure::Timeout),
        }
    }

    async fn try_send(&self, attempt: &Attempt) -> Sent {
        if self.settings.proxy.is_some() {
            // The proxy resolves the target itself: check the name's addresses here first.
            if let Err(failure) = self.check_through_proxy(&attempt.claim.url).await {
                return Sent::Failed(failure);
            }
        }
        let request = self
            .client
            .post(attempt.claim.url.as_str())
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, attempt.signature.as_str())
            // A monitor's event is named by its event id, the same on every attempt and
            // redelivery; a job's callback by the job's id (also when the job made an event
            // of a poll-only monitor: this webhook is then another request's, for the analysis).
            .header("xray-webhook-id", attempt.job.delivered_event().map_or(attempt.job.id.as_str(), |e| e.id.as_str()))
            .header("xray-delivery-attempt", attempt.claim.attempts.to_string())
            .body(attempt.body.clone());
        match request.send().await {
            Ok(response) if response.status().is_success() => Sent::Delivered,
            Ok(response) => Sent::Failed(Failure::Http(response.status().as_u16())),
            Err(e) => {
                tracing::debug!(job = %attempt.job.id, error = %e, "a webhook attempt failed");
                Sent::Failed(classify(&e))
            }
        }
    }

    /// With an operator's proxy: the target's name must resolve to addresses the policy
    /// allows, as the guarded resolver checks a direct connection's.
    async fn check_through_proxy(&self, url: &str) -> Result<(), Failure> {
        let url = reqwest::Url::parse(url).map_err(|_| Failure::UrlRefused)?;
        let host = url.host_str().ok_or(Failure::UrlRefused)?;
        let port = url.port_or_known_default().unwrap_or(443);
        let resolved = match tokio::net::lookup_host((host, port)).await {
            Err(_) => return Err(Failure::NoPublicAddress),
            Ok(resolved) => resolved.collect::<Vec<_>>(),
        };
        let usable = self.settings.policy.usable(host, resolved.iter().copied());
        if usable.len() == resolved.len() && !usable.is_empty() {
            Ok(())
        } else {
            Err(Failure::NoPublicAddress)
        }
    }

    /// Records an attempt's outcome: delivered, due again after its backoff, or given up.
    fn settle(&self, job: &JobRecord, claim: &Callback, sent: Sent) {
        let failure = match sent {
            Sent::Delivered => {
                WEBHOOKS.attempted(WebhookOutcome::Delivered);
                return self.record(job, claim, CallbackStatus::Delivered, None);
            }
            Sent::Failed(failure) => failure,
        };
        // The window starts when the webhook entered the outbox: the completion, or a later
        // request's attach to the finished job.
        let entered_ms = job.outbox_entered_ms();
        let window_ms = self.settings.retry_window.as_millis() as u64;
        let next_ms = now_unix_ms() + backoff_ms(claim.attempts);
        if claim.attempts >= self.settings.attempts_max || next_ms.saturating_sub(entered_ms) > window_ms {
            WEBHOOKS.attempted(WebhookOutcome::Failed);
            return self.record(job, claim, CallbackStatus::Failed, Some(failure));
        }
        WEBHOOKS.attempted(WebhookOutcome::Retried);
        let retry = Callback { last_error: Some(failure.reason()), next_attempt_ms: next_ms, ..claim.clone() };
        if let Err(e) = self.store.record_callback(&job.id, claim, &retry) {
            tracing::warn!(job = %job.id, error = %e, "recording a webhook attempt failed");
        }
    }

    fn record(&self, job: &JobRecord, claim: &Callback, status: CallbackStatus, failure: Option<Failure>) {
        let done = Callback { status, last_error: failure.map(Failure::reason), ..claim.clone() };
        match self.store.record_callback(&job.id, claim, &done) {
            Ok(_) => tracing::debug!(job = %job.id, status = status.as_str(), "webhook settled"),
            Err(e) => tracing::warn!(job = %job.id, error = %e, "recording a webhook outcome failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_a_second_up_to_its_cap() {
        let delays: Vec<u64> = (1..=4).map(backoff_ms).collect();
        assert_eq!(delays, [1_000, 2_000, 4_000, 8_000]);
        assert_eq!(backoff_ms(40), WEBHOOK_BACKOFF_MS_MAX);
        assert_eq!(backoff_ms(0), 1_000);
    }

    fn job(id: &str, account: &str) -> JobRecord {
        JobRecord {
            id: id.into(),
            kind: crate::store::JobKind::Analysis { wallet: "W".into() },
            account: account.into(),
            key_id: "key_1".into(),
            state: JobState::Ready,
            created_at_ms: 1,
            started_at_ms: None,
            completed_at_ms: Some(2),
            refresh: false,
            charged: true,
            quota_period_start_ms: 0,
            error: None,
            engine_version: String::new(),
            starts: 1,
            idempotency_digest: None,
            callback: Some(Callback::pending(format!("https://hooks.example/{id}"))),
            monitor: None,
            signature: None,
        }
    }

    fn ids(jobs: &[JobRecord]) -> Vec<&str> {
        jobs.iter().map(|j| j.id.as_str()).collect()
    }

    #[test]
    fn picks_round_robin_fewest_in_flight_first_within_each_cap() {
        // Account a has five due before b's two: b is not made to wait behind them.
        let due =
            ["a1", "a2", "a3", "a4", "a5", "b1", "b2"].into_iter().map(|id| job(id, &id[..1])).collect::<Vec<_>>();
        let none = Slots::default();
        assert_eq!(ids(&pick(due.clone(), &none, 4, 4)), ["a1", "b1", "a2", "b2"]);
        assert_eq!(ids(&pick(due.clone(), &none, 16, 2)), ["a1", "b1", "a2", "b2"], "two each at most");
        // a already holds two slots: b goes first, then a up to its cap.
        let mut busy = Slots::default();
        busy.per_account.insert("a".into(), 2);
        busy.jobs.insert("a1".into());
        assert_eq!(ids(&pick(due.clone(), &busy, 16, 3)), ["b1", "b2", "a2"]);
        // An account at its cap gets nothing, whatever is free.
        busy.per_account.insert("a".into(), 3);
        assert_eq!(ids(&pick(due, &busy, 16, 3)), ["b1", "b2"]);
    }
}
