//! `LedgerSource`: the JSON-RPC methods the ledger layer reads, and the node's own bounds every
//! source checks the same way (`check_multiple_accounts_len`, `check_signatures_limit`).
//!
//! Owns: the trait every source implements (`demo`, `snapshot`, `rpc`, and `source::Source`,
//! which dispatches to one of them) and every reader uses (`view`, the compute pool, the tools),
//! and `SequenceProgress`, the one rule of what a sequence skips, for the sources that run one.
//! Called from compute threads (each on its own current-thread runtime) and the CLI.
//!
//! Invariant: every method answers in wire types, exactly what a Solana node would answer for
//! the same call, so `view::build_view` cannot tell the sources apart except by `name()`.
//! Futures are deliberately not `Send`: a source is owned by one thread's runtime.
//! Invariant: imports no source, so the sources can implement the trait without an import
//! circle (the dispatcher that names them all is `source.rs`, above them).

use crate::config;
use crate::ledger::model::TokenProgram;
use crate::ledger::wire::{KeyedAccount, SignatureInfo, SimulateValue, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

/// The read side of a Solana node, as far as wallet analysis needs it.
// Futures are single-threaded on purpose (see module doc), so `Send` bounds are not wanted.
#[allow(async_fn_in_trait)]
pub trait LedgerSource {
    /// `demo`, `snapshot` or `rpc`: reported in coverage.
    fn name(&self) -> &'static str;

    /// True when the ledger is the demo's synthetic one, or a recording of it (a snapshot
    /// `export-demo` wrote): labels tagged `demo`, which describe its actors, then count — so
    /// a replay gives the X-Ray of the demo it was exported from.
    fn synthetic(&self) -> bool {
        false
    }

    /// `getAccountInfo` (jsonParsed). `value` is `None` when the account does not exist.
    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError>;

    /// `getMultipleAccounts` (jsonParsed), at most `config::MULTIPLE_ACCOUNTS_LEN_MAX`.
    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError>;

    /// `getMultipleAccounts` with `encoding: base64`: each account's bytes
    /// (`UiAccountData::Binary`), what an in-process execution runs on; at most
    /// `config::MULTIPLE_ACCOUNTS_LEN_MAX`. By default refused: a source that holds accounts
    /// parsed only (a snapshot) cannot answer it.
    async fn get_multiple_accounts_base64(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        let _ = addresses;
        Err(LedgerError::Invalid(format!(
            "the {} source holds accounts parsed only: base64 is not served",
            self.name()
        )))
    }

    /// Whether `get_multiple_accounts_base64_head` reads only the head of each account (a node's
    /// `dataSlice`); a source in process answers whole accounts, which a caller then reads once.
    fn slices_data(&self) -> bool {
        false
    }

    /// `get_multiple_accounts_base64` of only the first `length` bytes of each account's data
    /// (`dataSlice` at offset 0): an upgradeable program's deploy slot without its ELF. A
    /// source in process answers the whole accounts (the caller reads what it needs of them).
    async fn get_multiple_accounts_base64_head(
        &self,
        addresses: &[Pubkey],
        length: usize,
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        let _ = length;
        self.get_multiple_accounts_base64(addresses).await
    }

    /// `getTokenAccountsByOwner` with `{"programId": …}` (jsonParsed).
    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError>;

    /// `getProgramAccounts` of the System program (jsonParsed, `withContext`) with the nonce
    /// account filters — `dataSize` `model::NONCE_ACCOUNT_DATA_LEN` and `memcmp` of `authority`
    /// at `model::NONCE_AUTHORITY_OFFSET` — so every nonce account that names `authority`,
    /// whoever created it (its creation need not name the authority as an account, so the
    /// authority's own history may not list it). Unbounded on a node; the view keeps
    /// `config::NAMED_NONCE_ACCOUNTS_MAX`.
    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError>;

    /// `getSignaturesForAddress`, newest first, strictly older than `before` when given,
    /// at most `limit` (≤ `config::SIGNATURES_PAGE_LEN_MAX`).
    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError>;

    /// `getSignaturesForAddress` with `until`: the page `get_signatures_for_address` answers,
    /// cut just before `until` (exclusive) — only what is newer than a signature already seen.
    /// A node stops there itself; the default cuts the page it was given, which answers the
    /// same entries for the same calls (sources that talk to a node override it to send
    /// `until`, so the node does not send what is cut).
    async fn get_signatures_until(
        &self,
        address: &Pubkey,
        until: &Signature,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        let page = self.get_signatures_for_address(address, before, limit).await?;
        Ok(cut_at(page, until))
    }

    /// `getTransaction` (jsonParsed, `maxSupportedTransactionVersion: 0`) for each signature,
    /// in order; `None` where the node does not have it. Sources batch as they see fit.
    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError>;

    /// `simulateTransaction` of a serialized transaction (`sigVerify: false`,
    /// `replaceRecentBlockhash: true`) with the post-state of `accounts` (jsonParsed, at most
    /// `config::MULTIPLE_ACCOUNTS_LEN_MAX`, in order). A source that cannot execute the
    /// transaction answers `Simulated::Skipped` with the reason; by default every source does.
    async fn simulate_transaction(&self, transaction: &[u8], accounts: &[Pubkey]) -> Result<Simulated, LedgerError> {
        let _ = (transaction, accounts);
        Ok(Simulated::Skipped(format!("the {} source does not simulate transactions", self.name())))
    }

    /// `transactions` (each with the accounts whose post-state it answers, as
    /// `simulate_transaction`) executed in order on one state, at most
    /// `config::SEQUENCE_TRANSACTIONS_MAX` — what `simulateTransaction` cannot do (it has no
    /// state overrides). A source that executes in process runs them all; by default the first
    /// is simulated alone (it runs on the ledger as it is) and each after it is `Skipped` with
    /// the reason.
    async fn simulate_sequence(
        &self,
        transactions: &[(&[u8], &[Pubkey])],
        mode: SequenceMode,
    ) -> Result<Vec<Simulated>, LedgerError> {
        let _ = mode;
        check_sequence_len(transactions.len())?;
        let mut out = Vec::with_capacity(transactions.len());
        if let Some((first, accounts)) = transactions.first() {
            out.push(self.simulate_transaction(first, accounts).await?);
        }
        let reason = format!(
            "it runs on the state the ones before it leave, and the {} source does not run transactions in \
             sequence on one state",
            self.name()
        );
        out.extend(transactions.iter().skip(1).map(|_| Simulated::Skipped(reason.clone())));
        Ok(out)
    }

    /// The finalized signature list of `address` a cache kept from an earlier read, if any
    /// (`ledger::cache`); a plain source remembers nothing.
    fn remembered_history(&self, address: &Pubkey) -> Option<History> {
        let _ = address;
        None
    }

    /// Keeps what a read of `address`'s history found, for `remembered_history`.
    fn remember_history(&self, address: &Pubkey, history: &History) {
        let _ = (address, history);
    }

    /// Accounts the last read of wallet `address` read beside it (mints, nonce and stake
    /// accounts): read in the wallet's own `getMultipleAccounts` next time. Only a hint — what
    /// the read needs is decided afresh, and anything missing is read then.
    fn remembered_accounts(&self, address: &Pubkey) -> Vec<Pubkey> {
        let _ = address;
        Vec::new()
    }

    /// Keeps the accounts a read of wallet `address` read beside it.
    fn remember_accounts(&self, address: &Pubkey, accounts: &[Pubkey]) {
        let _ = (address, accounts);
    }

    /// `get_transactions`, each result handed to `each` in order as soon as its batch is read,
    /// so a caller that converts as it goes never holds every answer at once (the fetch plan
    /// does). Sources that read over a network override it; the default reads all first.
    async fn for_each_transaction(
        &self,
        signatures: &[Signature],
        each: &mut dyn FnMut(Option<TransactionResult>),
    ) -> Result<(), LedgerError> {
        self.get_transactions(signatures).await?.into_iter().for_each(each);
        Ok(())
    }
}

/// An address's finalized signature list as a read left it: the newest `entries` (newest
/// first), read `depth` deep, and whether that depth cut it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct History {
    pub depth: u32,
    pub truncated: bool,
    pub entries: Vec<SignatureInfo>,
}

impl History {
    /// Whether this list answers a read `depth` deep once what is newer is put before it: it is
    /// the whole history, or it was read at least as deep.
    pub fn covers(&self, depth: u32) -> bool {
        !self.truncated || self.depth >= depth
    }

    /// Whether every entry is final (a node answers `confirmationStatus` only when asked at a
    /// lower commitment; none means the `finalized` the request asked for).
    pub fn is_final(&self) -> bool {
        self.entries.iter().all(|e| e.confirmation_status.as_deref().is_none_or(|s| s == "finalized"))
    }
}

/// What a simulation gave: the node's answer, or why the source did not run it.
#[derive(Debug, Clone, PartialEq)]
pub enum Simulated {
    Ran(WithContext<SimulateValue>),
    Skipped(String),
}

/// A signatures page cut just before `until` (exclusive): what a node answers with `until`.
pub fn cut_at(mut page: Vec<SignatureInfo>, until: &Signature) -> Vec<SignatureInfo> {
    let until = until.to_string();
    if let Some(at) = page.iter().position(|info| info.signature == until) {
        page.truncate(at);
    }
    page
}

/// How a sequence of transactions runs (issue #44 item 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceMode {
    /// One after the other, as a wallet sends what it signed together: a transaction that
    /// fails applies nothing, and the next runs on the state without it.
    Sequence,
    /// All or nothing (a Jito bundle): once one fails, none after it runs and nothing applies.
    Bundle,
}

/// Where a sequence run in process stands, shared by the sources that run one (the demo, rpc)
/// so both skip alike: the first transaction that failed (a bundle ends there: nothing of it
/// lands) and the first that could not run (every mode ends there: what it leaves is not
/// known, and running the rest on a state without it could make a drain split around it look
/// harmless).
#[derive(Debug)]
pub struct SequenceProgress {
    mode: SequenceMode,
    failed: Option<usize>,
    stopped: Option<usize>,
}

impl SequenceProgress {
    pub fn new(mode: SequenceMode) -> SequenceProgress {
        SequenceProgress { mode, failed: None, stopped: None }
    }

    /// The answer of the next transaction when it does not run, naming why.
    pub fn skipped(&self) -> Option<Simulated> {
        if let Some(at) = self.stopped {
            return Some(Simulated::Skipped(format!(
                "it runs on the state the ones before it leave, and transaction {at} could not run in process (what \
                 it leaves is not known here)"
            )));
        }
        match (self.mode, self.failed) {
            (SequenceMode::Bundle, Some(at)) => Some(Simulated::Skipped(format!(
                "transaction {at} of the bundle fails or cannot run here: nothing of the bundle applies"
            ))),
            _ => None,
        }
    }

    /// Transaction `i` ran to its error.
    pub fn failed_at(&mut self, i: usize) {
        self.failed = self.failed.or(Some(i));
    }

    /// Transaction `i` could not run here.
    pub fn stopped_at(&mut self, i: usize) {
        self.failed_at(i);
        self.stopped = self.stopped.or(Some(i));
    }
}

/// A sequence's length, checked against `config::SEQUENCE_TRANSACTIONS_MAX`.
pub fn check_sequence_len(len: usize) -> Result<(), LedgerError> {
    if len == 0 || len > config::SEQUENCE_TRANSACTIONS_MAX {
        return Err(LedgerError::Invalid(format!(
            "a sequence of {len} transactions: 1 to {} are run together",
            config::SEQUENCE_TRANSACTIONS_MAX
        )));
    }
    Ok(())
}

/// The node's own bound on `getMultipleAccounts` (-32602 past it), shared by every source.
pub fn check_multiple_accounts_len(len: usize) -> Result<(), LedgerError> {
    if len > config::MULTIPLE_ACCOUNTS_LEN_MAX {
        return Err(LedgerError::Invalid(format!(
            "getMultipleAccounts takes at most {} addresses, got {len}",
            config::MULTIPLE_ACCOUNTS_LEN_MAX
        )));
    }
    Ok(())
}

/// The node's own bound on a `getSignaturesForAddress` page, shared by every source.
pub fn check_signatures_limit(limit: u32) -> Result<(), LedgerError> {
    if limit == 0 || limit > config::SIGNATURES_PAGE_LEN_MAX {
        return Err(LedgerError::Invalid(format!(
            "limit must be 1..={}, got {limit}",
            config::SIGNATURES_PAGE_LEN_MAX
        )));
    }
    Ok(())
}
