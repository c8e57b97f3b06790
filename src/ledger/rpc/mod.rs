//! The rpc source: a live Solana JSON-RPC endpoint (http or https) as a `LedgerSource`.
//!
//! Owns: `RpcOptions` (timeouts, retries, batching, bounds) and `RpcSource`, which turns each
//! trait call into the JSON-RPC call a node expects and its answer into wire types. Its parts:
//! `request` (bodies), `retry` (policy), `transport` (HTTP, pool, retries, size cap). A
//! simulation runs in process (`ledger::in_process`: the real runtime on the node's accounts
//! read as bytes, sequences on one state); the node's `simulateTransaction` answers only where
//! that cannot run it, and the answer says so.
//! Called from one thread's current-thread runtime per source; futures are not `Send`.
//!
//! Invariant: answers are parsed by `wire::parse_response`, the parser every source shares;
//! JSON-RPC error objects become typed errors through `LedgerError::from_rpc_error`.
//! `for_each_transaction` sends batches of at most `batch_len_max` requests, at most
//! `concurrency_max` at once, and hands results on batch by batch, in input order (matched back by `id`, never
//! by position); once an endpoint refuses a batch, that source sends single requests only; once
//! it refuses (or never answers) the nonce search, that source skips it for
//! `RpcOptions::nonce_search_refusal_s` (`NONCE_SEARCH_REFUSAL_S` in a server, 0 in the CLI). Bounded everywhere: attempts, waits, body size, requests in flight.
//! Deliberately absent: caching (the job layer owns reuse; the one exception, the decimals of
//! SPL Token mints an in-process run read, `in_process::MintDecimals`) and websocket
//! subscriptions.

mod request;
mod retry;
mod transport;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde::de::DeserializeOwned;
use simd_json::prelude::ValueAsScalar;

use crate::config;
use crate::ledger::in_process::{self, MintDecimals, SequenceStep};
use crate::ledger::model::TokenProgram;
use crate::ledger::read::{LedgerSource, SequenceMode, Simulated};
use crate::ledger::wire::{
    self, Executor, KeyedAccount, RpcResponse, SignatureInfo, SimulateValue, TransactionResult, UiAccount, Value,
    WithContext,
};
use crate::ledger::LedgerError;
use crate::metrics::LEDGER;
use crate::pubkey::{Pubkey, Signature};
pub use retry::{backoff_ceiling_ms, parse_retry_after_s};
use transport::Transport;

/// How the rpc source talks to its endpoint. Defaults are the constants of `config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcOptions {
    /// TCP and TLS connect timeout.
    pub connect_timeout_ms: u64,
    /// Whole-request timeout: connect, headers and body of one attempt.
    pub request_timeout_ms: u64,
    /// Attempts per call, the first included (0 is read as 1).
    pub attempts_max: u32,
    /// First backoff; doubles per retry, full jitter.
    pub backoff_base_ms: u64,
    /// Longest single wait, an honoured `Retry-After` included.
    pub backoff_max_ms: u64,
    /// `getTransaction` requests per JSON-RPC batch; 1 sends plain (unbatched) requests, for
    /// endpoints that refuse batches.
    pub batch_len_max: usize,
    /// HTTP requests in flight at once per source (batches included).
    pub concurrency_max: usize,
    /// Largest answer body read; larger answers fail as `Malformed`.
    pub response_bytes_max: usize,
    /// How long, in seconds, a source whose endpoint refused the nonce search does not ask
    /// again (sparing later jobs the refusal and its retries); 0 for a one-shot run (the CLI),
    /// which has no later job to spare.
    pub nonce_search_refusal_s: u64,
}

impl Default for RpcOptions {
    fn default() -> Self {
        RpcOptions {
            connect_timeout_ms: config::RPC_CONNECT_TIMEOUT_MS,
            request_timeout_ms: config::RPC_REQUEST_TIMEOUT_MS,
            attempts_max: config::RPC_ATTEMPTS_MAX,
            backoff_base_ms: config::RPC_BACKOFF_BASE_MS,
            backoff_max_ms: config::RPC_BACKOFF_MAX_MS,
            batch_len_max: config::RPC_BATCH_LEN_MAX,
            concurrency_max: config::RPC_CONCURRENCY_MAX,
            response_bytes_max: config::RPC_RESPONSE_BYTES_MAX,
            nonce_search_refusal_s: NONCE_SEARCH_REFUSAL_S,
        }
    }
}

/// A live JSON-RPC endpoint.
pub struct RpcSource {
    transport: Transport,
    /// Set once the endpoint refused a batch (one error object, or an HTTP 4xx, for a request
    /// that works alone): from then on `getTransaction` goes one request at a time.
    batches_refused: AtomicBool,
    /// Until when the nonce search is not asked again: many endpoints refuse (or time out on)
    /// `getProgramAccounts` over the System program, and each job would otherwise pay the
    /// refusal and its retries again.
    nonce_search_refused_until: parking_lot::Mutex<Option<Instant>>,
    /// The decimals of SPL Token mints the node answered to an in-process run: a later scan
    /// need not read the mint again.
    mint_decimals: MintDecimals,
}

/// How long a server's source does not ask an endpoint that refused the nonce search again.
pub const NONCE_SEARCH_REFUSAL_S: u64 = 600;

/// What a batch request got back.
#[derive(Debug)]
enum BatchAnswer {
    /// One result per signature, in order.
    Results(Vec<Option<TransactionResult>>),
    /// The endpoint does not take batches (why, for the log).
    Refused(LedgerError),
}

/// Id of every unbatched request (each is alone on its HTTP request).
const SINGLE_ID: u64 = 1;

impl RpcSource {
    /// Checks the URL (http or https, with a host) and builds the connection pool; connects
    /// lazily, on the first call.
    pub fn new(url: &str, options: RpcOptions) -> Result<RpcSource, LedgerError> {
        Ok(RpcSource {
            transport: Transport::new(url, options)?,
            batches_refused: AtomicBool::new(false),
            nonce_search_refused_until: parking_lot::Mutex::new(None),
            mint_decimals: MintDecimals::default(),
        })
    }

    /// The endpoint as logs may show it (no path, no query).
    pub fn endpoint(&self) -> &str {
        self.transport.endpoint()
    }

    /// One unbatched call; `None` when the node answered `"result": null`.
    async fn call<T: DeserializeOwned>(&self, method: &str, params: Value) -> Result<Option<T>, LedgerError> {
        let body = request::body(SINGLE_ID, method, params)?;
        self.transport.exchange(method, body, |answer| wire::parse_response::<T>(answer)?.into_result()).await
    }

    /// `getMultipleAccounts` of `addresses` with `params` (their encoding), one answer each.
    async fn accounts_page(
        &self,
        addresses: &[Pubkey],
        params: Value,
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        crate::ledger::read::check_multiple_accounts_len(addresses.len())?;
        let page: WithContext<Vec<Option<UiAccount>>> = self.call_some(request::GET_MULTIPLE_ACCOUNTS, params).await?;
        if page.value.len() != addresses.len() {
            return Err(LedgerError::Malformed(format!(
                "getMultipleAccounts answered {} accounts for {} addresses",
                page.value.len(),
                addresses.len()
            )));
        }
        Ok(page)
    }

    /// The node's `simulateTransaction` (`runtime_skipped`: why the runtime in process did not
    /// answer it, said in the answer).
    async fn node_simulation(
        &self,
        transaction: &[u8],
        accounts: &[Pubkey],
        runtime_skipped: Option<String>,
    ) -> Result<Simulated, LedgerError> {
        let params = request::simulate_params(transaction, accounts);
        let mut answer: WithContext<SimulateValue> = self.call_some(request::SIMULATE_TRANSACTION, params).await?;
        let answered = answer.value.accounts.as_ref().map_or(0, Vec::len);
        if answer.value.err.is_none() && answered != accounts.len() {
            return Err(LedgerError::Malformed(format!(
                "simulateTransaction answered {answered} accounts for {} addresses",
                accounts.len()
            )));
        }
        answer.value.executor = Some(Executor::Node { runtime_skipped });
        Ok(Simulated::Ran(answer))
    }

    /// A call whose result a node never leaves `null`.
    async fn call_some<T: DeserializeOwned>(&self, method: &str, params: Value) -> Result<T, LedgerError> {
        self.call(method, params).await?.ok_or_else(|| LedgerError::Malformed(format!("{method} answered null")))
    }

    /// One batch of `getTransaction`, ids `first_id..`, results in the order of `signatures`.
    /// An endpoint that refuses batches gets this and every later chunk one request at a time.
    async fn transaction_batch(
        &self,
        first_id: u64,
        signatures: &[Signature],
    ) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        if self.transport.options().batch_len_max <= 1 || self.batches_refused.load(Ordering::Relaxed) {
            return self.transactions_one_by_one(signatures).await;
        }
        let calls = (first_id..)
            .zip(signatures)
            .map(|(id, signature)| (id, request::GET_TRANSACTION, request::transaction_params(signature)));
        let body = request::batch_body(calls)?;
        let answer = self
            .transport
            .exchange(request::GET_TRANSACTION, body, |answer| match_batch(answer, first_id, signatures.len()))
            .await;
        let refusal = match answer {
            Ok(BatchAnswer::Results(results)) => return Ok(results),
            Ok(BatchAnswer::Refused(why)) => why,
            // An HTTP 4xx other than 429 to a batch: the endpoint will not take it.
            Err(why @ LedgerError::Invalid(_)) => why,
            Err(e) => return Err(e),
        };
        if !self.batches_refused.swap(true, Ordering::Relaxed) {
            tracing::warn!(endpoint = %self.endpoint(), error = %refusal, "the endpoint refuses JSON-RPC batches: getTransaction goes one request at a time");
        }
        self.transactions_one_by_one(signatures).await
    }

    /// The endpoint refused the nonce search: a long-lived source skips it for the next jobs
    /// for `nonce_search_refusal_s` (said once, when the pause begins); a one-shot source says
    /// only that it was refused.
    fn note_nonce_search_refused(&self, error: &LedgerError) {
        let pause_s = self.transport.options().nonce_search_refusal_s;
        let endpoint = self.endpoint();
        if pause_s == 0 {
            tracing::warn!(endpoint, %error, "the endpoint refused the nonce search (getProgramAccounts)");
            return;
        }
        let until = Instant::now() + Duration::from_secs(pause_s);
        if self.nonce_search_refused_until.lock().replace(until).is_none() {
            tracing::warn!(endpoint, %error, "the endpoint refused the nonce search (getProgramAccounts): the next jobs skip it for {pause_s} s");
        }
    }

    /// One `getSignaturesForAddress` page, `until` a signature already seen when given.
    async fn signatures_page(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        until: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        // A node refuses 0 and anything over its page limit.
        let limit = limit.clamp(1, config::SIGNATURES_PAGE_LEN_MAX);
        let params = request::signatures_for_address_params(address, before, until, limit);
        let page: Vec<SignatureInfo> = self.call_some(request::GET_SIGNATURES_FOR_ADDRESS, params).await?;
        if page.len() > limit as usize {
            return Err(LedgerError::Malformed(format!("asked {limit} signatures, got {}", page.len())));
        }
        Ok(page)
    }

    async fn transactions_one_by_one(
        &self,
        signatures: &[Signature],
    ) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        let mut out = Vec::with_capacity(signatures.len());
        for signature in signatures {
            out.push(self.call(request::GET_TRANSACTION, request::transaction_params(signature)).await?);
        }
        Ok(out)
    }
}

/// Reads a batch answer and puts each result at its request's place by `id`. A missing,
/// unknown or repeated id makes the whole answer malformed (and so retried). A "not found"
/// error object for one item means the node does not have that transaction: `None`.
fn match_batch(answer: &mut [u8], first_id: u64, len: usize) -> Result<BatchAnswer, LedgerError> {
    // Endpoints without batching answer a batch with one error object instead of an array.
    if answer.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return match wire::parse_response::<Value>(answer)?.into_result() {
            Err(refusal @ (LedgerError::Rpc { .. } | LedgerError::Invalid(_))) => Ok(BatchAnswer::Refused(refusal)),
            Err(e) => Err(e),
            Ok(_) => Err(LedgerError::Malformed("batch answered with a single result".into())),
        };
    }
    let responses: Vec<RpcResponse<TransactionResult>> = wire::parse(answer)?;
    let mut slots: Vec<Option<Option<TransactionResult>>> = (0..len).map(|_| None).collect();
    for response in responses {
        let id = response.id.as_u64();
        let slot = id
            .and_then(|id| id.checked_sub(first_id))
            .and_then(|i| slots.get_mut(usize::try_from(i).ok()?))
            .filter(|slot| slot.is_none())
            .ok_or_else(|| LedgerError::Malformed(format!("batch answer has an unknown or repeated id {id:?}")))?;
        *slot = Some(match response.into_result() {
            Ok(result) => result,
            Err(LedgerError::NotFound(_)) => None,
            Err(e) => return Err(e),
        });
    }
    slots
        .into_iter()
        .map(|slot| slot.ok_or_else(|| LedgerError::Malformed("batch answer misses an id".into())))
        .collect::<Result<_, _>>()
        .map(BatchAnswer::Results)
}

impl LedgerSource for RpcSource {
    fn name(&self) -> &'static str {
        "rpc"
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        self.call_some(request::GET_ACCOUNT_INFO, request::account_info_params(address)).await
    }

    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        self.accounts_page(addresses, request::multiple_accounts_params(addresses)).await
    }

    async fn get_multiple_accounts_base64(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        self.accounts_page(addresses, request::multiple_accounts_base64_params(addresses, None)).await
    }

    fn slices_data(&self) -> bool {
        true
    }

    async fn get_multiple_accounts_base64_head(
        &self,
        addresses: &[Pubkey],
        length: usize,
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        self.accounts_page(addresses, request::multiple_accounts_base64_params(addresses, Some(length))).await
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        self.call_some(request::GET_TOKEN_ACCOUNTS_BY_OWNER, request::token_accounts_by_owner_params(owner, program))
            .await
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        if self.nonce_search_refused_until.lock().is_some_and(|until| Instant::now() < until) {
            return Err(LedgerError::Invalid("the endpoint refused the nonce search recently".into()));
        }
        let params = request::nonce_accounts_by_authority_params(authority);
        let answer = self.call_some(request::GET_PROGRAM_ACCOUNTS, params).await;
        // A refusal, or no answer after the retries (a budget overrun is the job's own, not the
        // endpoint's).
        if let Err(e) = &answer {
            if !matches!(e, LedgerError::OverBudget(_)) {
                self.note_nonce_search_refused(e);
            }
        }
        answer
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        self.signatures_page(address, before, None, limit).await
    }

    async fn get_signatures_until(
        &self,
        address: &Pubkey,
        until: &Signature,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        let page = self.signatures_page(address, before, Some(until), limit).await?;
        // Cut here too: a node (or a proxy) that ignores `until` must not make old activity look new.
        Ok(crate::ledger::read::cut_at(page, until))
    }

    /// In process first (`in_process`: the real runtime on the node's accounts); the node's
    /// `simulateTransaction` where that cannot run it, saying why (`Executor::Node`).
    async fn simulate_transaction(&self, transaction: &[u8], accounts: &[Pubkey]) -> Result<Simulated, LedgerError> {
        match in_process::single(self, Some(&self.mint_decimals), transaction, accounts, unread).await? {
            Ok(answer) => Ok(Simulated::Ran(answer)),
            Err(reason) => self.node_simulation(transaction, accounts, Some(reason)).await,
        }
    }

    /// `transactions` in order on one state, in process (`in_process::sequence`). One the
    /// runtime cannot run is asked of the node when it is the first (it runs on the ledger as it
    /// is); at any other place it is skipped — the node's post-state is not the runtime's, and
    /// the node cannot run it on the state the ones before it leave.
    async fn simulate_sequence(
        &self,
        transactions: &[(&[u8], &[Pubkey])],
        mode: SequenceMode,
    ) -> Result<Vec<Simulated>, LedgerError> {
        let steps = in_process::sequence(self, Some(&self.mint_decimals), transactions, mode, unread).await?;
        let mut out = Vec::with_capacity(steps.len());
        for (i, step) in steps.into_iter().enumerate() {
            out.push(match (step, transactions.get(i)) {
                (SequenceStep::Answered(simulated), _) => simulated,
                (SequenceStep::Cannot(reason), Some((bytes, wanted))) if i == 0 => {
                    self.node_simulation(bytes, wanted, Some(reason)).await?
                }
                (SequenceStep::Cannot(reason), _) => Simulated::Skipped(format!(
                    "the runtime in process could not run it ({reason}), and the node cannot run it on the state the \
                     ones before it leave"
                )),
            });
        }
        Ok(out)
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        let mut out = Vec::with_capacity(signatures.len());
        self.for_each_transaction(signatures, &mut |result| out.push(result)).await?;
        Ok(out)
    }

    async fn for_each_transaction(
        &self,
        signatures: &[Signature],
        each: &mut dyn FnMut(Option<TransactionResult>),
    ) -> Result<(), LedgerError> {
        let options = self.transport.options();
        let batch_len = options.batch_len_max.max(1);
        let batches = (0u64..)
            .step_by(batch_len)
            .zip(signatures.chunks(batch_len))
            .map(|(first_id, chunk)| self.transaction_batch(first_id, chunk));
        // `buffered` keeps input order and bounds the batches polled at once; the transport's
        // semaphore bounds them again together with the source's other calls. Each batch is
        // handed on as it comes out, so at most `concurrency_max` batches are held at once.
        let mut batches = stream::iter(batches).buffered(options.concurrency_max.max(1));
        while let Some(batch) = batches.try_next().await? {
            LEDGER.transactions_read(batch.iter().filter(|t| t.is_some()).count() as u64);
            batch.into_iter().for_each(&mut *each);
        }
        Ok(())
    }
}

/// Why an in-process run could not read the node's accounts, for the answer. The node's own
/// words are logged, never answered: they may name the provider's project or key.
fn unread(e: &LedgerError) -> String {
    in_process::log_unread("rpc", e);
    "the node did not answer the accounts' bytes".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx_json(slot: u64) -> String {
        format!(
            r#"{{"slot":{slot},"blockTime":null,"transaction":{{"signatures":["x"],"message":{{"accountKeys":[],
            "recentBlockhash":"h","instructions":[]}}}},"meta":null}}"#
        )
    }

    /// The results of a batch answer that was not a refusal.
    fn results(answer: &mut [u8], first_id: u64, len: usize) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        match match_batch(answer, first_id, len)? {
            BatchAnswer::Results(results) => Ok(results),
            BatchAnswer::Refused(why) => panic!("read as a refusal: {why}"),
        }
    }

    #[test]
    fn matches_batch_answers_by_id() {
        let mut answer = format!(
            r#"[{{"jsonrpc":"2.0","id":12,"result":{}}},{{"jsonrpc":"2.0","id":10,"result":null}},
            {{"jsonrpc":"2.0","id":11,"error":{{"code":-32009,"message":"Slot 5 was skipped"}}}}]"#,
            tx_json(12)
        )
        .into_bytes();
        let got = results(&mut answer, 10, 3).unwrap();
        assert!(got[0].is_none() && got[1].is_none());
        assert_eq!(got[2].as_ref().map(|t| t.slot), Some(12));
    }

    #[test]
    fn refuses_batch_answers_with_bad_ids() {
        let r = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":null}}"#);
        let cases = [
            format!("[{},{}]", r("0"), r("0")),
            format!("[{}]", r("0")),
            format!("[{},{}]", r("0"), r("2")),
            format!("[{},{}]", r("0"), r("\"1\"")),
        ];
        for case in cases {
            let mut bytes = case.clone().into_bytes();
            assert!(matches!(results(&mut bytes, 0, 2), Err(LedgerError::Malformed(_))), "{case}");
        }
    }

    #[test]
    fn maps_batch_errors() {
        let mut refused =
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch too large"}}"#.to_vec();
        match match_batch(&mut refused, 0, 2) {
            Ok(BatchAnswer::Refused(why)) => {
                assert_eq!(why, LedgerError::Rpc { code: -32600, message: "batch too large".into() })
            }
            other => panic!("a single error object refuses the batch, got {other:?}"),
        }
        // A node that is behind answers a single object too: that is worth a retry, not a refusal.
        let mut behind = br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"behind"}}"#.to_vec();
        assert!(matches!(match_batch(&mut behind, 0, 1), Err(LedgerError::Unavailable(_))));
        let mut single = br#"{"jsonrpc":"2.0","id":0,"result":null}"#.to_vec();
        assert!(matches!(match_batch(&mut single, 0, 1), Err(LedgerError::Malformed(_))));
        let mut item = br#"[{"jsonrpc":"2.0","id":0,"error":{"code":-32005,"message":"behind"}}]"#.to_vec();
        assert!(matches!(results(&mut item, 0, 1), Err(LedgerError::Unavailable(_))));
        let mut garbage = b"[{".to_vec();
        assert!(matches!(results(&mut garbage, 0, 1), Err(LedgerError::Malformed(_))));
    }

    #[test]
    fn options_default_to_config() {
        let o = RpcOptions::default();
        assert_eq!(o.attempts_max, config::RPC_ATTEMPTS_MAX);
        assert_eq!(o.batch_len_max, config::RPC_BATCH_LEN_MAX);
        assert_eq!(o.response_bytes_max, config::RPC_RESPONSE_BYTES_MAX);
        assert_eq!(RpcSource::new("http://127.0.0.1:1", o).unwrap().name(), "rpc");
    }
}
