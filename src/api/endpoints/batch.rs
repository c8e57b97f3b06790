//! `POST /v1/developer/intelligence/wallets`: up to `config::BATCH_WALLETS_MAX` wallet analyses
//! in one request (an extension of the contract, issue #15), each address through the single
//! endpoint's steps on its own — validation, classification, deduplication, the account's
//! share, quota and admission — answered in one `200` that lists, in request order, each
//! address's job or its error object (the same codes as the single endpoint).
//!
//! Owns: the batch's order of steps and its item outcomes. Runs on listener threads.
//!
//! The rate limit counts items: the request's own token (taken at the edge, as for every
//! request) pays for its first item, and the batch takes one more token per further item, as
//! many as the key's bucket holds (`RateCell::take_up_to`); items past those are refused with
//! `RATE_LIMITED` (and `details.retryAfterSeconds`), nothing recorded or charged for them.
//! A queue found full refuses that item and every later one not yet answered with
//! `SERVICE_BUSY`. An address repeated within the batch gets its first occurrence's answer
//! (`deduplicated: true`), so a batch never admits one wallet twice, even with `refresh`.
//!
//! Invariant: with an `Idempotency-Key`, each item keeps its own answer (`batch_item_keys`):
//! the items' kept answers are all looked up before anything is admitted, so the same key with
//! another batch is refused whole (409) and admits nothing; a retry of the batch replays every
//! item that was answered with a job and admits the ones that were refused.
//! A `callbackUrl` becomes each new job's webhook, and is attached to the job of each item
//! answered by an existing one (deduplicated, reused, replayed) as on the single endpoint —
//! the item's `callback` says what came of it; an item whose attach the store refused is
//! refused (`SERVICE_BUSY`), nothing charged.
//!
//! Invariant: with `--sync-writes` the answer waits for one `fsync` covering every item's write;
//! when it fails, each new job is withdrawn on its own and only its items are refused, as are
//! the items whose webhook an attach wrote.
//! Deliberately absent: comparisons (one pair per request stays the compare endpoint's), and a
//! partial answer while items are still being admitted (the batch answers once, complete).

use std::collections::HashMap;

use super::{accepted_callback, checked_address, json_bytes, Answer, Asked, Endpoints};
use crate::api::error::ErrorObject;
use crate::api::idempotency::batch_item_keys;
use crate::api::json::{parse_body, BatchRequest};
use crate::api::wire::{BatchData, BatchItem, DataBody, Rfc3339Ms};
use crate::api::ApiError;
use crate::http::ApiResponse;
use crate::jobs::admission::{AdmitError, CallbackAnswer, Decision, IdempotencyKey, InFlightGuard, Work};
use crate::metrics::RejectReason;
use crate::pubkey::Pubkey;
use crate::store::{JobRecord, JobState};

/// What one item came to: its job as the answer names it, or its refusal.
#[derive(Debug, Clone)]
enum Outcome {
    Job(ItemJob),
    Refused(ApiError),
}

#[derive(Debug, Clone)]
struct ItemJob {
    analysis_id: String,
    state: JobState,
    created_at_ms: u64,
    deduplicated: bool,
    replayed: bool,
    /// What the batch's `callbackUrl` came to on this item's job.
    callback: Option<CallbackAnswer>,
}

impl ItemJob {
    fn of(decision: &Decision) -> ItemJob {
        let Answer { job, deduplicated, replayed } = Answer::of(decision);
        ItemJob {
            analysis_id: job.record.id.clone(),
            state: job.state,
            created_at_ms: job.record.created_at_ms,
            deduplicated,
            replayed,
            callback: None,
        }
    }

    /// True when this item's attach of the batch's `callbackUrl` wrote to the store.
    fn attach_wrote(&self) -> bool {
        self.callback.as_ref().is_some_and(|c| c.wrote)
    }

    /// An address repeated in the batch: its first occurrence's job, not new work.
    fn repeated(&self) -> ItemJob {
        ItemJob { deduplicated: true, ..self.clone() }
    }
}

impl Endpoints<'_> {
    pub async fn analyze_wallets(&self) -> Result<ApiResponse, ApiError> {
        let body: BatchRequest = parse_body(self.request)?;
        let asked = Asked { refresh: body.refresh, callback_url: self.checked_callback(body.callback_url.as_deref())? };
        self.check_accepting()?;
        let keys = batch_item_keys(self.request, &body.wallets, asked)?;
        let wanted = u32::try_from(body.wallets.len() - 1).unwrap_or(u32::MAX);
        let grant = self.caller.key.rate.take_up_to(wanted, self.caller.now_ns);
        let paid = 1 + grant.granted as usize;
        let item_keys = |i: usize| keys.as_ref().map(|keys| &keys[i]);
        // Held until the answer is durable: a repeat of the batch meanwhile is told so (409).
        let _in_flight = self.enter_all(keys.as_deref().map(|keys| &keys[..paid]).unwrap_or_default())?;
        let mut outcomes = self.kept_outcomes(body.wallets.len(), paid, item_keys, asked.callback_url).await?;
        let mut first_of: HashMap<Pubkey, usize> = HashMap::with_capacity(paid);
        let (mut busy, mut wrote) = (false, false);
        // New jobs, by item: withdrawn one by one if their writes cannot be made durable.
        let mut admitted: Vec<JobRecord> = Vec::new();
        for i in 0..paid {
            let kept = outcomes[i].is_some();
            let wallet = match checked_address("wallets", &body.wallets[i], self.app) {
                Ok(wallet) => wallet,
                Err(refusal) => {
                    outcomes[i].get_or_insert(Outcome::Refused(refusal));
                    continue;
                }
            };
            if let Some(&first) = first_of.get(&wallet) {
                let repeated = match &outcomes[first] {
                    Some(Outcome::Job(job)) => Outcome::Job(job.repeated()),
                    Some(refused) => refused.clone(),
                    None => Outcome::Refused(ApiError::internal(&"a batch item without an outcome")),
                };
                outcomes[i].get_or_insert(repeated);
                continue;
            }
            first_of.insert(wallet, i);
            if kept {
                continue;
            }
            if busy {
                outcomes[i] = Some(Outcome::Refused(ApiError::ServiceBusy));
                continue;
            }
            let work = Work::Analysis { wallet };
            let decided = self.app.admission.decide(&self.admit_request(&work, asked, item_keys(i))).await;
            busy = matches!(decided, Err(AdmitError::Busy));
            wrote |= matches!(decided, Ok(_) | Err(AdmitError::Busy));
            outcomes[i] = Some(match decided {
                Ok(decision) => {
                    self.count(&work, &decision);
                    let item = self.item_of(&decision, asked.callback_url).await;
                    if let Decision::Admitted(record) = decision {
                        admitted.push(*record);
                    }
                    item
                }
                Err(refusal) => Outcome::Refused(refusal.into()),
            });
        }
        let attached = outcomes.iter().flatten().any(|o| matches!(o, Outcome::Job(job) if job.attach_wrote()));
        if let Err(failure) = self.covered(wrote || attached).await {
            let refusal = ApiError::from_store(&failure);
            refuse_attached(&mut outcomes, &refusal);
            if self.withdraw_items(admitted, &mut outcomes, &refusal) {
                self.undo_durable().await;
            }
        }
        let limited = ApiError::RateLimited { retry_after_s: u64::from(grant.retry_after_s) };
        let outcomes = outcomes.into_iter().map(|o| o.unwrap_or_else(|| Outcome::Refused(limited.clone())));
        self.batch_answer(&body.wallets, &outcomes.collect::<Vec<_>>())
    }

    /// One item's outcome of a decision: its job, with the batch's `callbackUrl` (if any)
    /// attached to it (`Admission::callback_of`); an attach the store refused refuses the item.
    async fn item_of(&self, decision: &Decision, url: Option<&str>) -> Outcome {
        let (account, key_id) = (self.caller.key.account().as_str(), self.caller.key.id().as_str());
        let callback = match url {
            None => None,
            Some(url) => match self.app.admission.callback_of(decision, account, key_id, url, self.caller.now_ms).await
            {
                Ok(answer) => Some(answer),
                Err(refusal) => return Outcome::Refused(refusal.into()),
            },
        };
        Outcome::Job(ItemJob { callback, ..ItemJob::of(decision) })
    }

    /// With `--sync-writes`, when the batch's writes could not be made durable: each new job is
    /// withdrawn on its own (`Admission::after_failed_sync`) and its items — the address and
    /// its repeats — answered with the refusal; a job a compute thread already started stands
    /// with its 202-like item. Never one refusal folded over items that were admitted.
    /// Returns true when any job was withdrawn (its undo then awaits the disk).
    fn withdraw_items(&self, admitted: Vec<JobRecord>, outcomes: &mut [Option<Outcome>], refusal: &ApiError) -> bool {
        let mut withdrew = false;
        for record in admitted {
            let id = record.id.clone();
            let refused =
                match self.app.admission.after_failed_sync(Decision::Admitted(Box::new(record)), &self.caller.key) {
                    Ok(Some(_)) => continue,
                    Ok(None) => {
                        withdrew = true;
                        refusal.clone()
                    }
                    Err(e) => ApiError::from_store(&e),
                };
            for outcome in outcomes.iter_mut() {
                if matches!(outcome, Some(Outcome::Job(job)) if job.analysis_id == id) {
                    *outcome = Some(Outcome::Refused(refused.clone()));
                }
            }
        }
        withdrew
    }

    /// Every item's key marked in flight, or — when one is still being admitted by another
    /// request — none, and the batch refused (409 `IDEMPOTENCY_KEY_IN_PROGRESS`).
    fn enter_all<'k>(&'k self, keys: &[IdempotencyKey]) -> Result<Vec<InFlightGuard<'k>>, ApiError> {
        let account = self.caller.key.account().as_str();
        Ok(keys.iter().map(|key| self.app.admission.enter(account, key)).collect::<Result<Vec<_>, _>>()?)
    }

    /// One outcome per item: the kept answer of each of the first `paid` items (none without
    /// a key), `None` for the rest. Any item's key kept for another batch refuses the whole
    /// batch (409 `IDEMPOTENCY_KEY_REUSED`). Every answer is looked up before any URL is
    /// attached: a lookup that fails the batch leaves no attach standing.
    async fn kept_outcomes<'k>(
        &self,
        items: usize,
        paid: usize,
        item_keys: impl Fn(usize) -> Option<&'k IdempotencyKey>,
        callback_url: Option<&str>,
    ) -> Result<Vec<Option<Outcome>>, ApiError> {
        let account = self.caller.key.account().as_str();
        let mut replays = Vec::with_capacity(paid);
        for i in 0..paid {
            let Some(key) = item_keys(i) else { break };
            replays.push(self.app.admission.kept(account, key, self.caller.now_ms).await?);
        }
        let mut outcomes = vec![None; items];
        for (outcome, replay) in outcomes.iter_mut().zip(replays) {
            if let Some(replay) = replay {
                *outcome = Some(self.item_of(&Decision::Replayed(replay), callback_url).await);
            }
        }
        Ok(outcomes)
    }

    /// The 200 listing every item in request order (each refusal counted in the metrics).
    fn batch_answer(&self, wallets: &[String], outcomes: &[Outcome]) -> Result<ApiResponse, ApiError> {
        let refusals: Vec<_> = outcomes
            .iter()
            .map(|outcome| match outcome {
                Outcome::Refused(refusal) => Some(refusal.render()),
                Outcome::Job(_) => None,
            })
            .collect();
        let request_id = &self.request.request_id;
        let mut data =
            BatchData { items: Vec::with_capacity(outcomes.len()), admitted: 0, deduplicated: 0, refused: 0 };
        for ((wallet, outcome), refusal) in wallets.iter().zip(outcomes).zip(&refusals) {
            let item = match (outcome, refusal) {
                (_, Some(refusal)) => {
                    data.refused += 1;
                    if let Some(reason) = RejectReason::from_code(refusal.code) {
                        self.app.metrics.reject(reason);
                    }
                    BatchItem::Refused { wallet, error: ErrorObject::of(refusal, request_id) }
                }
                (Outcome::Job(job), None) => {
                    *(if job.deduplicated { &mut data.deduplicated } else { &mut data.admitted }) += 1;
                    BatchItem::Accepted {
                        wallet,
                        analysis_id: &job.analysis_id,
                        status: job.state.as_str(),
                        poll_url: format!("{}{}", self.app.base_url(), super::analysis_path(&job.analysis_id)),
                        created_at: Rfc3339Ms::at(job.created_at_ms),
                        deduplicated: job.deduplicated,
                        replayed: job.replayed,
                        callback: job.callback.as_ref().map(accepted_callback),
                    }
                }
                (Outcome::Refused(refusal), None) => return Err(ApiError::internal(&refusal)),
            };
            data.items.push(item);
        }
        let replayed = outcomes.iter().any(|o| matches!(o, Outcome::Job(job) if job.replayed));
        let response = ApiResponse::json(200, json_bytes(&DataBody { data })?);
        Ok(if replayed { response.with_header("idempotent-replayed", "true") } else { response })
    }
}

/// With `--sync-writes`, when the batch's writes could not be made durable: the items whose
/// `callbackUrl` was attached by a write not yet on disk are refused — a delivery is never
/// promised that a crash could take back (the retry attaches it again, idempotently). The
/// attach itself stands — not undone — and may still deliver.
fn refuse_attached(outcomes: &mut [Option<Outcome>], refusal: &ApiError) {
    for outcome in outcomes.iter_mut() {
        if matches!(outcome, Some(Outcome::Job(job)) if job.attach_wrote()) {
            *outcome = Some(Outcome::Refused(refusal.clone()));
        }
    }
}
