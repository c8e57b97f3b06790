//! The webhook delivery thread (`xray-webhooks`): it drains the store's outbox — finished jobs
//! whose callback is due — and POSTs each job's document, signed, to its `callbackUrl`.
//!
//! Owns: `Deliveries` (the thread and its stop flag), the attempt cycle and the backoff. Reads
//! and writes the store on its own thread, never on a listener or compute thread; the HTTP
//! requests run on a current-thread tokio runtime of its own.
//!
//! One cycle: take at most `in_flight_max` due callbacks (soonest due first); claim each — the
//! store records the attempt and moves its due time past the attempt's timeout, a
//! compare-and-set on the callback as read, so two nodes of a cluster never attempt one
//! delivery at once; render and sign the bodies; send them concurrently, each bounded by
//! `timeout`; record each outcome: `DELIVERED` on a 2xx, else `PENDING` again after a backoff
//! (1 s doubling, at most `WEBHOOK_BACKOFF_MS_MAX`), or `FAILED` once `attempts_max` attempts
//! were made or `retry_window` passed since the job finished — or at once when no attempt can
//! ever succeed (the URL is refused by the policy, the account has no webhook secret).
//!
//! Invariant: at least once. A process killed mid-attempt leaves the claim, due again after
//! the attempt's timeout: the receiver may see a delivery twice (same `Xray-Webhook-Id`), never
//! none while attempts remain.
//! Invariant: bounded — deliveries in flight (`in_flight_max`), each request's time
//! (`timeout`), attempts per job and the time they span; redirects are not followed.
//! Deliberately absent: a wake-up from the sink (the outbox is read every
//! `WEBHOOK_POLL_MS`), and reading the receiver's answer body (only its status counts).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use super::signature::{sign, SIGNATURE_HEADER};
use super::target::{GuardedResolver, TargetPolicy};
use crate::clock::now_unix_ms;
use crate::config::{
    WEBHOOK_BACKOFF_MS_BASE, WEBHOOK_BACKOFF_MS_MAX, WEBHOOK_ERROR_CHARS_MAX, WEBHOOK_POLL_MS, WEBHOOK_USER_AGENT,
};
use crate::metrics::{WebhookOutcome, WEBHOOKS};
use crate::store::{Callback, CallbackStatus, JobRecord, JobState, Store, StoreError};

/// Makes the document a poll of a finished job answers (without `callback`), from its record
/// and its payload when READY: the API's, handed in at start so that this module does not
/// depend on it.
pub type Render = Arc<dyn Fn(&JobRecord, Option<&[u8]>) -> Result<Vec<u8>, String> + Send + Sync>;

/// How deliveries are made.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    pub policy: TargetPolicy,
    /// Deliveries sent at once (and callbacks taken per cycle).
    pub in_flight_max: usize,
    /// One request's time, connection included.
    pub timeout: Duration,
    pub attempts_max: u32,
    /// Time after the job finished past which a failed attempt is the last.
    pub retry_window: Duration,
}

/// The running delivery thread.
pub struct Deliveries {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Deliveries {
    pub fn start(store: Arc<dyn Store>, settings: WebhookSettings, render: Render) -> Result<Deliveries, String> {
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(GuardedResolver { policy: settings.policy.clone() }))
            .redirect(reqwest::redirect::Policy::none())
            .timeout(settings.timeout)
            .connect_timeout(settings.timeout)
            .user_agent(WEBHOOK_USER_AGENT)
            .build()
            .map_err(|e| format!("webhook client: {e}"))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("webhook runtime: {e}"))?;
        let stop = Arc::new(AtomicBool::new(false));
        let worker = Worker { store, settings, render, client, stop: Arc::clone(&stop) };
        let thread = std::thread::Builder::new()
            .name("xray-webhooks".into())
            .spawn(move || worker.run(runtime))
            .map_err(|e| format!("webhook thread: {e}"))?;
        Ok(Deliveries { stop, thread: Some(thread) })
    }

    /// Ends the thread after the cycle in progress (its attempts end within `timeout`).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Worker {
    store: Arc<dyn Store>,
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
    Failed(String),
}

/// The delay before attempt `attempt + 1` after `attempt` attempts failed.
pub fn backoff_ms(attempt: u32) -> u64 {
    let doublings = attempt.saturating_sub(1).min(20);
    WEBHOOK_BACKOFF_MS_BASE.saturating_mul(1 << doublings).min(WEBHOOK_BACKOFF_MS_MAX)
}

fn bounded(mut text: String) -> String {
    if let Some((at, _)) = text.char_indices().nth(WEBHOOK_ERROR_CHARS_MAX) {
        text.truncate(at);
    }
    text
}

impl Worker {
    fn run(self, runtime: tokio::runtime::Runtime) {
        while !self.stop.load(Ordering::Acquire) {
            let sent = match self.store.due_callbacks(now_unix_ms(), self.settings.in_flight_max) {
                Ok(due) if !due.is_empty() => self.cycle(&runtime, due),
                Ok(_) => 0,
                Err(e) => {
                    tracing::warn!(error = %e, "reading the webhook outbox failed; retrying");
                    0
                }
            };
            if sent == 0 {
                std::thread::sleep(Duration::from_millis(WEBHOOK_POLL_MS));
            }
        }
        // A name lookup still running on the runtime's blocking pool is not waited for.
        runtime.shutdown_timeout(Duration::from_millis(WEBHOOK_POLL_MS));
    }

    /// Claims, sends and records one batch; returns how many were attempted.
    fn cycle(&self, runtime: &tokio::runtime::Runtime, due: Vec<JobRecord>) -> usize {
        let now_ms = now_unix_ms();
        let attempts: Vec<Attempt> = due.into_iter().filter_map(|job| self.prepare(job, now_ms)).collect();
        let sends = attempts.iter().map(|attempt| self.send(attempt));
        let outcomes = runtime.block_on(futures_util::future::join_all(sends));
        let count = attempts.len();
        for (attempt, outcome) in attempts.into_iter().zip(outcomes) {
            self.settle(&attempt.job, &attempt.claim, outcome);
        }
        count
    }

    /// Claims the job's delivery and makes its signed body; `None` when another attempt claimed
    /// it first, or when it was given up here (no attempt can succeed).
    fn prepare(&self, job: JobRecord, now_ms: u64) -> Option<Attempt> {
        let callback = job.callback.clone().filter(|c| c.status == CallbackStatus::Pending)?;
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
            Err(Unsendable::Never(why)) => {
                WEBHOOKS.attempted(WebhookOutcome::Failed);
                self.record(&job, &claim, CallbackStatus::Failed, Some(why));
                None
            }
            Err(Unsendable::NotNow(why)) => {
                self.settle(&job, &claim, Sent::Failed(why));
                None
            }
        }
    }

    /// The rendered, signed body, or why it cannot be sent: never (a refused URL, no secret)
    /// or not now (the store did not answer: the attempt counts and is retried).
    fn body(&self, job: &JobRecord, claim: &Callback, now_ms: u64) -> Result<(Vec<u8>, String), Unsendable> {
        if let Err(refusal) = self.settings.policy.check_url(&claim.url) {
            return Err(Unsendable::Never(refusal.to_string()));
        }
        let not_now = |what: &str, e: StoreError| Unsendable::NotNow(format!("reading the {what} failed: {e}"));
        let secret = match self.store.get_webhook_secret(&job.account) {
            Ok(Some(secret)) => secret,
            Ok(None) => {
                return Err(Unsendable::Never(
                    "the account has no webhook secret: create one (admin API or CLI)".into(),
                ))
            }
            Err(e) => return Err(not_now("webhook secret", e)),
        };
        let payload = match job.state {
            JobState::Ready => self.store.get_result(job).map_err(|e| not_now("result", e))?,
            _ => None,
        };
        let body = (self.render)(job, payload.as_deref()).map_err(Unsendable::Never)?;
        let signature = sign(&secret.secret, now_ms / 1_000, &body);
        Ok((body, signature))
    }

    async fn send(&self, attempt: &Attempt) -> Sent {
        let request = self
            .client
            .post(attempt.claim.url.as_str())
            .header("content-type", "application/json")
            .header(SIGNATURE_HEADER, attempt.signature.as_str())
            .header("xray-webhook-id", attempt.job.id.as_str())
            .header("xray-delivery-attempt", attempt.claim.attempts.to_string())
            .body(attempt.body.clone());
        match request.send().await {
            Ok(response) if response.status().is_success() => Sent::Delivered,
            Ok(response) => Sent::Failed(format!("the receiver answered HTTP {}", response.status().as_u16())),
            Err(e) => Sent::Failed(describe(&e)),
        }
    }

    /// Records an attempt's outcome: delivered, due again after its backoff, or given up.
    fn settle(&self, job: &JobRecord, claim: &Callback, sent: Sent) {
        let why = match sent {
            Sent::Delivered => {
                WEBHOOKS.attempted(WebhookOutcome::Delivered);
                return self.record(job, claim, CallbackStatus::Delivered, None);
            }
            Sent::Failed(why) => why,
        };
        let finished_ms = job.completed_at_ms.unwrap_or(0);
        let window_ms = self.settings.retry_window.as_millis() as u64;
        let next_ms = now_unix_ms() + backoff_ms(claim.attempts);
        if claim.attempts >= self.settings.attempts_max || next_ms.saturating_sub(finished_ms) > window_ms {
            WEBHOOKS.attempted(WebhookOutcome::Failed);
            return self.record(job, claim, CallbackStatus::Failed, Some(why));
        }
        WEBHOOKS.attempted(WebhookOutcome::Retried);
        let retry = Callback { last_error: Some(bounded(why)), next_attempt_ms: next_ms, ..claim.clone() };
        if let Err(e) = self.store.record_callback(&job.id, claim, &retry) {
            tracing::warn!(job = %job.id, error = %e, "recording a webhook attempt failed");
        }
    }

    fn record(&self, job: &JobRecord, claim: &Callback, status: CallbackStatus, why: Option<String>) {
        let done = Callback { status, last_error: why.map(bounded), ..claim.clone() };
        match self.store.record_callback(&job.id, claim, &done) {
            Ok(_) => tracing::debug!(job = %job.id, status = status.as_str(), "webhook settled"),
            Err(e) => tracing::warn!(job = %job.id, error = %e, "recording a webhook outcome failed"),
        }
    }
}

/// Why a claimed delivery was not sent.
enum Unsendable {
    /// It can never be made (given up at once).
    Never(String),
    /// Not this time (an attempt that failed).
    NotNow(String),
}

/// A transport failure in words for the poll answer (no URL: the client knows it).
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else if e.is_redirect() {
        "redirected (not followed)"
    } else {
        "failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(inner) = source {
        cause = inner.to_string();
        source = inner.source();
    }
    if cause.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}: {cause}")
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

    #[test]
    fn errors_are_bounded_in_characters() {
        assert_eq!(bounded("é".repeat(WEBHOOK_ERROR_CHARS_MAX + 10)).chars().count(), WEBHOOK_ERROR_CHARS_MAX);
        assert_eq!(bounded("short".into()), "short");
    }
}
