//! Writing snapshots (a dev tool): `SnapshotWriter` (entry files and the manifest), `Recording`,
//! the `LedgerSource` wrapper that writes down every answer of the source it wraps, and the
//! `record` / `export_demo` commands behind `xray ledger record` and `xray ledger export-demo`.
//!
//! Owns: atomic entry writes, the merge of `getSignaturesForAddress` pages into one list per
//! address, the bytes of every account recorded (read from the source with `encoding: base64`
//! beside each parsed answer, so a scan on the snapshot runs in process), and the counts of
//! the `SnapshotReport`. Called from the CLI (`xray ledger record`,
//! `xray ledger export-demo`) and tests, on one current-thread runtime.
//!
//! Invariant: every file is written to a temporary name in its directory and renamed into
//! place, so a reader sees a whole file or none; the manifest is written last, so a directory
//! without one is a recording that did not finish (and `SnapshotSource::open` refuses it).
//! `record` writes into a hidden sibling directory and renames it into place once whole, so a
//! recording that fails leaves no partial snapshot behind.
//! A writer only writes into a new or empty directory: a snapshot never mixes two recordings.
//! When an account is answered twice, the answer at the higher slot is kept (the later one on
//! a tie). Deliberately absent: fsync (atomic for readers, not durable against power loss),
//! and files for transactions the source did not have (a missing file answers null anyway).

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::config;
use crate::engine::flows::first_funder_address;
use crate::ledger::demo::DemoLedger;
use crate::ledger::in_process;
use crate::ledger::model::TokenProgram;
use crate::ledger::read::LedgerSource;
use crate::ledger::snapshot::format::{self, Entry, Manifest, MANIFEST_FILE};
use crate::ledger::view::{build_view, read_hop, ViewOptions};
use crate::ledger::wire::{
    self, KeyedAccount, RpcContext, RpcResponse, SignatureInfo, TransactionResult, UiAccount, Value, WithContext,
};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

/// What a finished snapshot holds (printed by the CLI as JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotReport {
    pub dir: String,
    /// `name()` of the recorded source.
    pub source: String,
    pub wallets: u32,
    /// Files in the snapshot, the manifest included.
    pub files: u32,
    pub transactions: u32,
    /// Account files (`accounts/`), existing accounts and recorded absences alike.
    pub accounts: u32,
    pub bytes: u64,
    pub created_at_slot: u64,
}

/// One address's recorded signatures, newest first, each once.
#[derive(Default)]
struct SignatureList {
    entries: Vec<SignatureInfo>,
    seen: HashSet<String>,
}

impl SignatureList {
    /// Index of `signature`, searched from the oldest end: pages arrive newest to oldest, so
    /// the `before` of the next page is usually the last entry.
    fn position(&self, signature: &str) -> Option<usize> {
        self.entries.iter().rposition(|e| e.signature == signature)
    }

    /// Merges the page the node answered for `before`. The page's entries come right after
    /// `before` (at the top without one; at the end when `before` is unknown here), and an
    /// entry already present moves the insertion point past itself, so overlapping pages and
    /// pages recorded twice keep one copy of each signature in the node's order.
    fn merge_page(&mut self, before: Option<&str>, page: &[SignatureInfo]) {
        let mut cursor = match before {
            None => 0,
            Some(b) => self.position(b).map_or(self.entries.len(), |i| i + 1),
        };
        for info in page {
            if self.seen.contains(&info.signature) {
                if let Some(i) = self.position(&info.signature) {
                    cursor = i + 1;
                }
            } else {
                self.seen.insert(info.signature.clone());
                self.entries.insert(cursor, info.clone());
                cursor += 1;
            }
        }
    }
}

/// A snapshot never mixes two recordings: its directory must not exist yet or be empty.
fn require_new_or_empty(dir: &Path) -> Result<(), LedgerError> {
    let invalid = |e: std::io::Error| LedgerError::Invalid(format!("snapshot directory {}: {e}", dir.display()));
    if dir.exists() && std::fs::read_dir(dir).map_err(invalid)?.next().is_some() {
        return Err(LedgerError::Invalid(format!(
            "snapshot directory {} is not empty: a snapshot is written into a new or empty directory",
            dir.display()
        )));
    }
    Ok(())
}

/// Writes one snapshot directory.
pub struct SnapshotWriter {
    root: PathBuf,
    created_at_slot: u64,
    history_depth: Option<u32>,
    account_slots: HashMap<Pubkey, u64>,
    /// The slot of each account's recorded bytes (`account-bytes/`).
    bytes_slots: HashMap<Pubkey, u64>,
    /// The source refused to serve bytes: none are asked for any more.
    bytes_refused: bool,
    listing_slots: HashMap<(Entry, Pubkey), u64>,
    transactions: HashSet<Signature>,
    /// Signature lists not yet written (see `flush`).
    pending: BTreeMap<Pubkey, SignatureList>,
    /// Size of every file written, by path relative to the root (the last write counts).
    file_bytes: HashMap<PathBuf, u64>,
}

impl SnapshotWriter {
    /// Starts a snapshot in `dir`, which must not exist or be an empty directory.
    pub fn create(dir: &Path) -> Result<SnapshotWriter, LedgerError> {
        require_new_or_empty(dir)?;
        let invalid = |e: std::io::Error| LedgerError::Invalid(format!("snapshot directory {}: {e}", dir.display()));
        for kind in Entry::DIRS {
            std::fs::create_dir_all(dir.join(kind)).map_err(invalid)?;
        }
        Ok(SnapshotWriter {
            root: dir.to_owned(),
            created_at_slot: 0,
            history_depth: None,
            account_slots: HashMap::new(),
            bytes_slots: HashMap::new(),
            bytes_refused: false,
            listing_slots: HashMap::new(),
            transactions: HashSet::new(),
            pending: BTreeMap::new(),
            file_bytes: HashMap::new(),
        })
    }

    /// Notes the history depth the views are built with (written to the manifest).
    pub fn set_history_depth(&mut self, depth: u32) {
        self.history_depth = Some(depth);
    }

    /// A `getAccountInfo` answer, or one account of a `getMultipleAccounts` answer. `None`
    /// is recorded too: it says the account did not exist at `slot`.
    pub fn record_account(
        &mut self,
        address: &Pubkey,
        slot: u64,
        account: Option<&UiAccount>,
    ) -> Result<(), LedgerError> {
        self.record_one(Entry::Account, address, slot, account)
    }

    /// One account of a `getMultipleAccounts` answer with `encoding: base64` (`None`: it did not
    /// exist at `slot`), as `record_account` keeps the parsed one.
    pub fn record_account_bytes(
        &mut self,
        address: &Pubkey,
        slot: u64,
        account: Option<&UiAccount>,
    ) -> Result<(), LedgerError> {
        self.record_one(Entry::AccountBytes, address, slot, account)
    }

    /// One account's answer as `entry` (parsed or bytes), unless one at a higher slot is kept.
    fn record_one(
        &mut self,
        entry: Entry,
        address: &Pubkey,
        slot: u64,
        account: Option<&UiAccount>,
    ) -> Result<(), LedgerError> {
        let slots = if entry == Entry::AccountBytes { &self.bytes_slots } else { &self.account_slots };
        if slots.get(address).is_some_and(|&kept| kept > slot) {
            return Ok(());
        }
        let body = WithContext { context: RpcContext { slot }, value: account };
        self.write_response(entry, &address.to_base58(), "getAccountInfo", &body)?;
        let slots = if entry == Entry::AccountBytes { &mut self.bytes_slots } else { &mut self.account_slots };
        slots.insert(*address, slot);
        self.note_slot(slot);
        Ok(())
    }

    /// Whether the bytes of `address` are recorded at least as new as its parsed answer (a
    /// parsed answer recorded again at a later slot asks for its bytes again).
    fn has_bytes(&self, address: &Pubkey) -> bool {
        let parsed = self.account_slots.get(address).copied().unwrap_or(0);
        self.bytes_slots.get(address).is_some_and(|&bytes| bytes >= parsed)
    }

    /// A `getTokenAccountsByOwner` answer.
    pub fn record_token_accounts(
        &mut self,
        owner: &Pubkey,
        program: TokenProgram,
        answer: &WithContext<Vec<KeyedAccount>>,
    ) -> Result<(), LedgerError> {
        self.record_listing(Entry::TokenAccounts(program), owner, "getTokenAccountsByOwner", answer)
    }

    /// A `getProgramAccounts` answer of the nonce search for `authority`.
    pub fn record_nonce_accounts(
        &mut self,
        authority: &Pubkey,
        answer: &WithContext<Vec<KeyedAccount>>,
    ) -> Result<(), LedgerError> {
        self.record_listing(Entry::NonceAccounts, authority, "getProgramAccounts", answer)
    }

    /// A refused nonce search for `authority`, as the error object the node sent (unless an
    /// answer was recorded for it: that one stays).
    pub fn record_nonce_search_error(&mut self, authority: &Pubkey, error: &LedgerError) -> Result<(), LedgerError> {
        if self.listing_slots.contains_key(&(Entry::NonceAccounts, *authority)) {
            return Ok(());
        }
        let rel = format::entry_path(Entry::NonceAccounts, &authority.to_base58())?;
        let body = RpcResponse::<Value> {
            jsonrpc: "2.0".into(),
            id: Value::from("getProgramAccounts"),
            result: None,
            error: Some(error.to_rpc_error()),
        };
        self.write_file(rel, &wire::to_vec(&body)?)
    }

    /// A list of accounts keyed by one address; the answer at the higher slot is kept.
    fn record_listing(
        &mut self,
        entry: Entry,
        key: &Pubkey,
        method: &str,
        answer: &WithContext<Vec<KeyedAccount>>,
    ) -> Result<(), LedgerError> {
        let slot = answer.context.slot;
        if self.listing_slots.get(&(entry, *key)).is_some_and(|&kept| kept > slot) {
            return Ok(());
        }
        self.write_response(entry, &key.to_base58(), method, answer)?;
        self.listing_slots.insert((entry, *key), slot);
        self.note_slot(slot);
        Ok(())
    }

    /// One `getSignaturesForAddress` page; kept in memory until `flush`.
    pub fn record_signatures(
        &mut self,
        address: &Pubkey,
        before: Option<&Signature>,
        page: &[SignatureInfo],
    ) -> Result<(), LedgerError> {
        if !self.pending.contains_key(address) {
            let list = self.written_signatures(address)?;
            self.pending.insert(*address, list);
        }
        if let Some(list) = self.pending.get_mut(address) {
            list.merge_page(before.map(|b| b.to_base58()).as_deref(), page);
        }
        let newest = page.iter().map(|i| i.slot).max().unwrap_or(0);
        self.note_slot(newest);
        Ok(())
    }

    /// A `getTransaction` answer the source had.
    pub fn record_transaction(&mut self, signature: &Signature, tx: &TransactionResult) -> Result<(), LedgerError> {
        if self.transactions.contains(signature) {
            return Ok(());
        }
        self.write_response(Entry::Transaction, &signature.to_base58(), "getTransaction", tx)?;
        self.transactions.insert(*signature);
        self.note_slot(tx.slot);
        Ok(())
    }

    /// Writes the pending signature lists and forgets them (a later page for the same
    /// address is merged into the written file). Call between wallets to bound memory.
    pub fn flush(&mut self) -> Result<(), LedgerError> {
        for (address, list) in std::mem::take(&mut self.pending) {
            self.write_response(Entry::Signatures, &address.to_base58(), "getSignaturesForAddress", &list.entries)?;
        }
        Ok(())
    }

    /// Flushes, writes the manifest and reports what the snapshot holds.
    pub fn finish(mut self, wallets: &[Pubkey], source_name: &str) -> Result<SnapshotReport, LedgerError> {
        self.flush()?;
        let mut manifest = Manifest::new(source_name, self.created_at_slot, self.history_depth, wallets.to_vec());
        // Said only when true of every account recorded: a snapshot that says it is never
        // answered "absent" for bytes it lacks.
        manifest.account_bytes =
            !self.bytes_refused && self.account_slots.keys().all(|a| self.bytes_slots.contains_key(a));
        self.write_file(PathBuf::from(MANIFEST_FILE), &wire::to_vec_pretty(&manifest)?)?;
        Ok(SnapshotReport {
            dir: self.root.display().to_string(),
            source: source_name.to_owned(),
            wallets: u32::try_from(wallets.len()).unwrap_or(u32::MAX),
            files: u32::try_from(self.file_bytes.len()).unwrap_or(u32::MAX),
            transactions: u32::try_from(self.transactions.len()).unwrap_or(u32::MAX),
            accounts: u32::try_from(self.account_slots.len()).unwrap_or(u32::MAX),
            bytes: self.file_bytes.values().sum(),
            created_at_slot: self.created_at_slot,
        })
    }

    fn note_slot(&mut self, slot: u64) {
        self.created_at_slot = self.created_at_slot.max(slot);
    }

    /// The list an earlier `flush` wrote for `address`, or an empty one.
    fn written_signatures(&self, address: &Pubkey) -> Result<SignatureList, LedgerError> {
        let read = format::read_response::<Vec<SignatureInfo>>(&self.root, Entry::Signatures, &address.to_base58())?;
        let mut list = SignatureList::default();
        if let Some((_, response)) = read {
            list.merge_page(None, &response.into_result()?.unwrap_or_default());
        }
        Ok(list)
    }

    /// Writes `result` in a JSON-RPC envelope whose `id` names the method it answers.
    fn write_response<T: Serialize>(
        &mut self,
        entry: Entry,
        name: &str,
        method: &str,
        result: &T,
    ) -> Result<(), LedgerError> {
        let rel = format::entry_path(entry, name)?;
        let body = RpcResponse::ok(Value::from(method), result);
        self.write_file(rel, &wire::to_vec(&body)?)
    }

    /// Writes `<root>/<rel>` atomically: a temporary file in the same directory, renamed.
    fn write_file(&mut self, rel: PathBuf, bytes: &[u8]) -> Result<(), LedgerError> {
        let path = self.root.join(&rel);
        let file_name = rel.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
        // Entry names are base58 (never start with a dot), so a temporary name cannot
        // collide with an entry, and readers never open it.
        let tmp = path.with_file_name(format!(".{file_name}.tmp"));
        let failed = |e: std::io::Error| LedgerError::Invalid(format!("writing snapshot file {}: {e}", rel.display()));
        std::fs::write(&tmp, bytes).map_err(failed)?;
        std::fs::rename(&tmp, &path).map_err(failed)?;
        self.file_bytes.insert(rel, bytes.len() as u64);
        Ok(())
    }
}

/// A `LedgerSource` that answers from `inner` and writes every answer into a snapshot, so the
/// snapshot holds exactly what was read through it. Errors of `inner` are passed on and not
/// recorded.
pub struct Recording<'a, S: LedgerSource> {
    inner: &'a S,
    // Borrowed only inside non-async helpers, never across an await, so two calls of one
    // `tokio::join!` cannot overlap on it.
    writer: RefCell<SnapshotWriter>,
}

impl<'a, S: LedgerSource> Recording<'a, S> {
    pub fn new(inner: &'a S, writer: SnapshotWriter) -> Self {
        Recording { inner, writer: RefCell::new(writer) }
    }

    /// See `SnapshotWriter::flush`.
    pub fn flush(&self) -> Result<(), LedgerError> {
        self.with_writer(SnapshotWriter::flush)
    }

    /// Writes the manifest, naming the inner source.
    pub fn finish(self, wallets: &[Pubkey]) -> Result<SnapshotReport, LedgerError> {
        self.writer.into_inner().finish(wallets, self.inner.name())
    }

    /// Each account of a listing (token accounts, nonce accounts) recorded as its own account
    /// too — parsed, as the listing holds it, and its bytes — so that a scan naming it reads it
    /// on the snapshot as on the node.
    async fn record_listed(&self, answer: &WithContext<Vec<KeyedAccount>>) -> Result<(), LedgerError> {
        let addresses = listed(answer)?;
        self.with_writer(|w| {
            for (address, keyed) in addresses.iter().zip(&answer.value) {
                w.record_account(address, answer.context.slot, Some(&keyed.account))?;
            }
            Ok(())
        })?;
        self.record_bytes(&addresses).await
    }

    /// Records the bytes of those of `addresses` not yet recorded, read from the inner source
    /// (`encoding: base64`, 100 to a call), so a scan on the snapshot runs on them in process.
    /// A source that does not serve bytes (the trait's default refusal, `Invalid`) is not asked
    /// again: the snapshot is then recorded without them (its manifest says so).
    pub async fn record_bytes(&self, addresses: &[Pubkey]) -> Result<(), LedgerError> {
        let missing: Vec<Pubkey> = self.with_writer(|w| {
            let mut seen = HashSet::new();
            let wanted = !w.bytes_refused;
            Ok(addresses.iter().filter(|a| wanted && !w.has_bytes(a) && seen.insert(**a)).copied().collect())
        })?;
        for chunk in missing.chunks(config::MULTIPLE_ACCOUNTS_LEN_MAX) {
            let answer = match self.inner.get_multiple_accounts_base64(chunk).await {
                Ok(answer) => answer,
                Err(LedgerError::Invalid(why)) => {
                    tracing::warn!(%why, "the source serves no accounts' bytes: the snapshot will not simulate");
                    return self.with_writer(|w| {
                        w.bytes_refused = true;
                        Ok(())
                    });
                }
                Err(e) => return Err(e),
            };
            self.with_writer(|w| {
                for (address, account) in chunk.iter().zip(&answer.value) {
                    w.record_account_bytes(address, answer.context.slot, account.as_ref())?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }

    fn with_writer<R>(&self, f: impl FnOnce(&mut SnapshotWriter) -> Result<R, LedgerError>) -> Result<R, LedgerError> {
        let mut writer = self
            .writer
            .try_borrow_mut()
            .map_err(|_| LedgerError::Invalid("snapshot writer is already in use".into()))?;
        f(&mut writer)
    }
}

impl<S: LedgerSource> LedgerSource for Recording<'_, S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn synthetic(&self) -> bool {
        self.inner.synthetic()
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        let answer = self.inner.get_account_info(address).await?;
        self.with_writer(|w| w.record_account(address, answer.context.slot, answer.value.as_ref()))?;
        self.record_bytes(std::slice::from_ref(address)).await?;
        Ok(answer)
    }

    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        let answer = self.inner.get_multiple_accounts(addresses).await?;
        self.with_writer(|w| {
            for (address, account) in addresses.iter().zip(&answer.value) {
                w.record_account(address, answer.context.slot, account.as_ref())?;
            }
            Ok(())
        })?;
        self.record_bytes(addresses).await?;
        Ok(answer)
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        let answer = self.inner.get_token_accounts_by_owner(owner, program).await?;
        self.with_writer(|w| w.record_token_accounts(owner, program, &answer))?;
        self.record_listed(&answer).await?;
        Ok(answer)
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        // A refusal is recorded too: replayed, the search fails as it did, rather than reading
        // as a search that found nothing.
        match self.inner.get_nonce_accounts_by_authority(authority).await {
            Ok(answer) => {
                self.with_writer(|w| w.record_nonce_accounts(authority, &answer))?;
                self.record_listed(&answer).await?;
                Ok(answer)
            }
            Err(e) => {
                self.with_writer(|w| w.record_nonce_search_error(authority, &e))?;
                Err(e)
            }
        }
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        let page = self.inner.get_signatures_for_address(address, before, limit).await?;
        self.with_writer(|w| w.record_signatures(address, before, &page))?;
        Ok(page)
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        let answer = self.inner.get_transactions(signatures).await?;
        self.with_writer(|w| {
            for (signature, tx) in signatures.iter().zip(&answer) {
                if let Some(tx) = tx {
                    w.record_transaction(signature, tx)?;
                }
            }
            Ok(())
        })?;
        Ok(answer)
    }
}

/// The addresses of a listing's accounts.
fn listed(answer: &WithContext<Vec<KeyedAccount>>) -> Result<Vec<Pubkey>, LedgerError> {
    answer
        .value
        .iter()
        .map(|keyed| {
            keyed.pubkey.parse::<Pubkey>().map_err(|_| {
                LedgerError::Malformed(format!("a listed account's pubkey {:?} is not an address", keyed.pubkey))
            })
        })
        .collect()
}

/// Records the view of each wallet (duplicates once, in order) as `build_view` reads it from
/// `source` at `history_depth`, and its first funder's hop as `read_hop` reads it, into the
/// new or empty directory `out`.
///
/// The snapshot is written into a hidden sibling directory and renamed onto `out` once whole:
/// a recording that fails (a node that stops answering, a full disk) leaves `out` as it was.
pub async fn record<S: LedgerSource>(
    source: &S,
    wallets: &[Pubkey],
    out: &Path,
    history_depth: u32,
) -> Result<SnapshotReport, LedgerError> {
    let staging = Staging::new(out)?;
    let mut report = record_into(source, wallets, &staging.dir, history_depth).await?;
    staging.publish()?;
    report.dir = out.display().to_string();
    Ok(report)
}

/// A snapshot being written: `dir`, a hidden sibling of its destination `out` (one file
/// system, so the rename is atomic), removed on drop unless `publish` renamed it onto `out`.
struct Staging {
    dir: PathBuf,
    out: PathBuf,
    published: bool,
}

impl Staging {
    /// Refuses an `out` that is not new or empty (as `SnapshotWriter::create` does) before
    /// anything is read, and picks the staging directory beside it.
    fn new(out: &Path) -> Result<Staging, LedgerError> {
        require_new_or_empty(out)?;
        let invalid = |e: std::io::Error| LedgerError::Invalid(format!("snapshot directory {}: {e}", out.display()));
        let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("snapshot");
        let parent = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(invalid)?;
        let dir = parent.join(format!(".{name}.partial-{}", std::process::id()));
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(invalid)?;
        }
        Ok(Staging { dir, out: out.to_owned(), published: false })
    }

    /// Renames the finished snapshot onto `out` (which may be an empty directory: rename
    /// replaces one).
    fn publish(mut self) -> Result<(), LedgerError> {
        std::fs::rename(&self.dir, &self.out)
            .map_err(|e| LedgerError::Invalid(format!("moving the snapshot into {}: {e}", self.out.display())))?;
        self.published = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if !self.published {
            // Best effort: what cannot be removed is a hidden directory beside `out`, never
            // a snapshot that looks whole.
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `record`'s work, into `dir` directly.
async fn record_into<S: LedgerSource>(
    source: &S,
    wallets: &[Pubkey],
    dir: &Path,
    history_depth: u32,
) -> Result<SnapshotReport, LedgerError> {
    let depth = history_depth.clamp(1, config::HISTORY_DEPTH_MAX);
    let mut writer = SnapshotWriter::create(dir)?;
    writer.set_history_depth(depth);
    let recording = Recording::new(source, writer);
    let mut seen = HashSet::new();
    let wallets: Vec<Pubkey> = wallets.iter().copied().filter(|w| seen.insert(*w)).collect();
    for wallet in &wallets {
        // The first funder's hop too, whatever the labels: a job replaying the snapshot reads it
        // when its labels list sanctioned addresses, and then finds what the node answered.
        // A failed hop read is logged and skipped, as a job skips it.
        let view = build_view(&recording, wallet, ViewOptions::deep(depth)).await;
        let view = match view {
            Ok(view) => view,
            Err(e) => {
                tracing::warn!(%wallet, error = %e, "recording stopped: the wallet's view could not be read");
                return Err(e);
            }
        };
        if let Some(funder) = first_funder_address(&view) {
            if let Err(e) = read_hop(&recording, &funder).await {
                tracing::warn!(%wallet, error = %e, "the first funder's history could not be recorded");
            }
        }
        recording.flush()?;
    }
    // The moment a scan on the snapshot runs at: the source's Clock when it was recorded.
    recording.record_bytes(&[in_process::sysvar_clock()?]).await?;
    recording.finish(&wallets)
}

/// What an export of the archetypes writes, measured (default seed, 2026-11-30, with the
/// accounts' bytes: 12.25 MB in 2,443 files; other seeds differ by a few per cent).
const EXPORT_ARCHETYPES_BYTES: u64 = 12_250_000;
const EXPORT_ARCHETYPES_FILES: u64 = 2_445;
/// What each background wallet adds, measured the same way (100 wallets: 87.1 MB in 18,047
/// files), with its transactions and its counterparties' accounts.
const EXPORT_BACKGROUND_WALLET_BYTES: u64 = 750_000;
const EXPORT_BACKGROUND_WALLET_FILES: u64 = 156;

/// Roughly how much an export of `background` background wallets writes: `(bytes, files)`,
/// from the measured averages above (a guide for the operator, not a bound).
pub fn export_estimate(background: u32) -> (u64, u64) {
    let n = u64::from(background.min(config::DEMO_POPULATION_LEN));
    (
        EXPORT_ARCHETYPES_BYTES + n * EXPORT_BACKGROUND_WALLET_BYTES,
        EXPORT_ARCHETYPES_FILES + n * EXPORT_BACKGROUND_WALLET_FILES,
    )
}

/// What `xray ledger export-demo` says before it writes: how many wallets, into where, and
/// about how many bytes and files (`export_estimate`).
pub fn export_announcement(background: u32, out: &Path) -> String {
    let (bytes, files) = export_estimate(background);
    let archetypes = crate::ledger::demo::actors::ARCHETYPES.len();
    let background = background.min(config::DEMO_POPULATION_LEN);
    format!(
        "writing {archetypes} archetypes and {background} background wallets into {}: about {} MB in about {} files",
        out.display(),
        bytes.div_ceil(1_000_000),
        files
    )
}

/// Writes the demo ledger of `seed` as a snapshot: every archetype, then `wallets` background
/// wallets, each read at the default history depth.
pub async fn export_demo(seed: u64, wallets: u32, out: &Path) -> Result<SnapshotReport, LedgerError> {
    let demo = DemoLedger::new(seed);
    let list = demo_wallets(&demo, wallets)?;
    record(&demo, &list, out, config::HISTORY_DEPTH_DEFAULT).await
}

/// The demo wallets an export holds: every archetype, then the first `background` background
/// wallets (at most the demo population).
pub fn demo_wallets(demo: &DemoLedger, background: u32) -> Result<Vec<Pubkey>, LedgerError> {
    let mut out = Vec::new();
    for archetype in demo.archetype_list() {
        let address = Pubkey::parse(&archetype.address).map_err(|e| {
            LedgerError::Invalid(format!("demo archetype {} has address {:?}: {e}", archetype.name, archetype.address))
        })?;
        out.push(address);
    }
    out.extend((0..background.min(config::DEMO_POPULATION_LEN)).map_while(|index| demo.background_wallet(index)));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(n: u8) -> SignatureInfo {
        SignatureInfo {
            signature: bs58::encode([n; 64]).into_string(),
            slot: 1_000 - u64::from(n),
            err: None,
            memo: None,
            block_time: None,
            confirmation_status: None,
        }
    }

    fn names(list: &SignatureList) -> Vec<u64> {
        list.entries.iter().map(|e| 1_000 - e.slot).collect()
    }

    #[test]
    fn pages_in_order_are_appended() {
        let mut list = SignatureList::default();
        list.merge_page(None, &[info(1), info(2), info(3)]);
        list.merge_page(Some(&info(3).signature), &[info(4), info(5)]);
        assert_eq!(names(&list), [1, 2, 3, 4, 5]);
    }

    #[test]
    fn overlapping_and_repeated_pages_keep_one_copy_in_order() {
        let mut list = SignatureList::default();
        list.merge_page(None, &[info(3), info(4)]);
        // The history grew at the top: the new first page overlaps the old one.
        list.merge_page(None, &[info(1), info(2), info(3)]);
        list.merge_page(Some(&info(4).signature), &[info(5)]);
        list.merge_page(Some(&info(2).signature), &[info(3), info(4)]);
        assert_eq!(names(&list), [1, 2, 3, 4, 5]);
        // A page after an unknown signature goes to the end.
        list.merge_page(Some(&info(9).signature), &[info(6)]);
        assert_eq!(names(&list), [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn refuses_non_empty_directories() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("other"), b"x").unwrap();
        assert!(matches!(SnapshotWriter::create(dir.path()), Err(LedgerError::Invalid(_))));
        assert!(SnapshotWriter::create(&dir.path().join("new/nested")).is_ok());
    }

    #[test]
    fn keeps_the_newer_account_answer() {
        let dir = tempfile::tempdir().unwrap();
        let mut w = SnapshotWriter::create(dir.path()).unwrap();
        let key = Pubkey::new([3; 32]);
        w.record_account(&key, 9, None).unwrap();
        w.record_account(&key, 5, None).unwrap();
        let (_, r) =
            format::read_response::<WithContext<Option<UiAccount>>>(dir.path(), Entry::Account, &key.to_base58())
                .unwrap()
                .unwrap();
        assert_eq!(r.into_result().unwrap().unwrap().context.slot, 9);
        let report = w.finish(&[key], "demo").unwrap();
        assert_eq!((report.accounts, report.files, report.created_at_slot), (1, 2, 9));
    }
}
