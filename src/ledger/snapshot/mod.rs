//! The snapshot ledger source: recorded JSON-RPC responses in a directory, replayed offline.
//!
//! Owns: `SnapshotSource` (answers every `LedgerSource` call from the files, and runs a scanned
//! transaction in process on the recorded accounts' bytes: `ledger::in_process`) and the
//! directory format (`format`). Writing snapshots is a dev tool (`devtools::recorder`).
//! Called from compute threads (each on its own current-thread runtime) and the CLI.
//!
//! # Directory format (version 1; docs/snapshot-format.md says the same at more length)
//!
//! ```text
//! <dir>/manifest.json
//!     {"format": "xray-snapshot", "version": 1, "source": "rpc" | "demo",
//!      "createdAtSlot": 250000000, "historyDepth": 1000, "wallets": ["<address>", …],
//!      "accountBytes": true}
//! <dir>/accounts/<address>.json
//!     a getAccountInfo (jsonParsed) response: {"jsonrpc":"2.0","id":…,"result":
//!     {"context":{"slot":…},"value":{…} | null}}. Also answers getMultipleAccounts (one file
//!     per address) and getBalance (value.lamports, 0 for null).
//! <dir>/account-bytes/<address>.json
//!     a getAccountInfo (encoding base64) response, for every account recorded (listed token
//!     and nonce accounts and the Clock sysvar too) when the manifest says `accountBytes`: it
//!     answers getMultipleAccounts with base64, what a scan executes on.
//! <dir>/token-accounts/<owner>.spl-token.json
//! <dir>/token-accounts/<owner>.spl-token-2022.json
//!     a getTokenAccountsByOwner (jsonParsed, {"programId": …}) response.
//! <dir>/nonce-accounts/<authority>.json
//!     a getProgramAccounts (System program, jsonParsed, withContext, the nonce filters:
//!     dataSize 80, memcmp of the authority at offset 8) response.
//! <dir>/signatures/<address>.json
//!     {"jsonrpc":"2.0","id":…,"result":[…]}: every recorded getSignaturesForAddress entry of
//!     the address, newest first, each once; pages are cut from it on replay.
//! <dir>/transactions/<signature>.json
//!     a getTransaction (jsonParsed, maxSupportedTransactionVersion 0) response.
//! ```
//!
//! Files are JSON-RPC response bodies as a node sends them; `id` may be anything (the recorder
//! writes the method name), unknown fields are ignored, and an `error` object is replayed as
//! that error. A file that is absent answers as a node does for something it does not have:
//! no account file → `value: null` at the manifest's `createdAtSlot`; no token-account or
//! nonce-account file → an empty list at `createdAtSlot` (so a snapshot recorded before nonce
//! searches existed replays as a node without such accounts); no signatures file → no history; no transaction file →
//! `null`. `getSignaturesForAddress` returns the entries strictly after `before` in the list
//! (nothing when `before` is not in it, as a node does for an unknown signature), at most
//! `limit`. `getMultipleAccounts` answers in order, at the highest slot of the files it read.
//! Bytes are served only by a snapshot whose manifest says `accountBytes` (one recorded before
//! they were kept does not simulate: its scans are `skipped`, saying why); an account recorded
//! parsed whose bytes file is missing is refused (`Malformed`), never answered as absent.
//!
//! Invariant: a file name is always the base58 text of an address or signature (checked in
//! `format::entry_path`), so no name leaves the directory; symlinked entry files and kind
//! directories are refused; no file over `config::LEDGER_FILE_BYTES_MAX` is read. A manifest
//! of another format or version is `LedgerError::Invalid` at `open`; a file that is not the
//! wire format is `LedgerError::Malformed` naming the file (relative to the snapshot).
//! Reads are blocking `std::fs` calls inside async fns: the files are small and local and the
//! runtime is a compute thread's own, so no listener waits on them. Deliberately absent: any
//! cache (files are read again per call) and writing (that is `recorder`'s, into a new
//! directory only).

pub mod format;

use std::path::{Path, PathBuf};

use crate::ledger::in_process::{self, SequenceStep};
use crate::ledger::model::TokenProgram;
use crate::ledger::read::{check_sequence_len, LedgerSource, SequenceMode, Simulated};
use crate::ledger::wire::{
    KeyedAccount, RpcContext, RpcResponse, SignatureInfo, TransactionResult, UiAccount, WithContext,
};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

pub use format::{entry_path, Entry, Manifest, FORMAT_NAME, FORMAT_VERSION};

/// A snapshot directory opened for replay.
#[derive(Debug, Clone)]
pub struct SnapshotSource {
    root: PathBuf,
    manifest: Manifest,
}

impl SnapshotSource {
    /// Opens `dir`: reads and checks the manifest, refuses symlinked kind directories.
    pub fn open(dir: &Path) -> Result<SnapshotSource, LedgerError> {
        let manifest = Manifest::read(dir)?;
        for kind in Entry::DIRS {
            match std::fs::symlink_metadata(dir.join(kind)) {
                Ok(meta) if !meta.is_dir() => {
                    return Err(LedgerError::Invalid(format!("snapshot entry {kind} is not a directory")));
                }
                // A kind that was never written is simply empty.
                _ => {}
            }
        }
        Ok(SnapshotSource { root: dir.to_owned(), manifest })
    }

    pub fn dir(&self) -> &Path {
        &self.root
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// `value: None` at the snapshot's slot: what a missing file answers.
    fn absent<T>(&self, value: T) -> WithContext<T> {
        WithContext { context: RpcContext { slot: self.manifest.created_at_slot }, value }
    }

    fn account(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        match format::read_response(&self.root, Entry::Account, &address.to_base58())? {
            None => Ok(self.absent(None)),
            Some((rel, response)) => required(&rel, response),
        }
    }

    /// The account's bytes (`account-bytes/`). Absent (no file, or `null`) only where the
    /// snapshot holds no parsed account either: never "absent" for an account it holds.
    fn account_bytes(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        let bytes = match format::read_response(&self.root, Entry::AccountBytes, &address.to_base58())? {
            Some((rel, response)) => required(&rel, response)?,
            None => self.absent(None),
        };
        if bytes.value.is_none() && self.account(address)?.value.is_some() {
            return Err(LedgerError::Malformed(format!(
                "the snapshot holds account {address} parsed but not its bytes"
            )));
        }
        Ok(bytes)
    }

    /// Why this snapshot does not run scans in process, when it does not.
    fn without_bytes(&self) -> Option<String> {
        (!self.manifest.account_bytes).then(|| {
            "the snapshot was recorded without its accounts' bytes (its manifest has no accountBytes): record it \
             again to run scans in process"
                .to_owned()
        })
    }

    fn signatures(&self, address: &Pubkey) -> Result<Vec<SignatureInfo>, LedgerError> {
        match format::read_response(&self.root, Entry::Signatures, &address.to_base58())? {
            None => Ok(Vec::new()),
            Some((rel, response)) => required(&rel, response),
        }
    }

    fn transaction(&self, signature: &Signature) -> Result<Option<TransactionResult>, LedgerError> {
        let name = signature.to_base58();
        let Some((rel, response)) = format::read_response::<TransactionResult>(&self.root, Entry::Transaction, &name)?
        else {
            return Ok(None);
        };
        let tx = response.into_result()?;
        if let Some(held) = tx.as_ref().map(|t| t.tx.transaction.signatures.first()) {
            if held != Some(&name) {
                return Err(LedgerError::Malformed(format!(
                    "snapshot file {} holds transaction {:?}, not {name}",
                    rel.display(),
                    held.map_or("", String::as_str)
                )));
            }
        }
        Ok(tx)
    }
}

/// The result of a response that must have one (`null` is only an answer for getTransaction).
fn required<T>(rel: &Path, response: RpcResponse<T>) -> Result<T, LedgerError> {
    response
        .into_result()?
        .ok_or_else(|| LedgerError::Malformed(format!("snapshot file {}: result is null", rel.display())))
}

impl LedgerSource for SnapshotSource {
    fn name(&self) -> &'static str {
        "snapshot"
    }

    fn synthetic(&self) -> bool {
        self.manifest.source == crate::ledger::model::DEMO_SOURCE
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        self.account(address)
    }

    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        crate::ledger::read::check_multiple_accounts_len(addresses.len())?;
        self.in_order(addresses, Self::account)
    }

    async fn get_multiple_accounts_base64(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        crate::ledger::read::check_multiple_accounts_len(addresses.len())?;
        if let Some(reason) = self.without_bytes() {
            return Err(LedgerError::Invalid(reason));
        }
        self.in_order(addresses, Self::account_bytes)
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        match format::read_response(&self.root, Entry::TokenAccounts(program), &owner.to_base58())? {
            None => Ok(self.absent(Vec::new())),
            Some((rel, response)) => required(&rel, response),
        }
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        match format::read_response(&self.root, Entry::NonceAccounts, &authority.to_base58())? {
            None => Ok(self.absent(Vec::new())),
            Some((rel, response)) => required(&rel, response),
        }
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        crate::ledger::read::check_signatures_limit(limit)?;
        let all = self.signatures(address)?;
        let start = match before.map(Signature::to_base58) {
            None => 0,
            Some(before) => match all.iter().position(|i| i.signature == before) {
                Some(i) => i + 1,
                None => return Ok(Vec::new()),
            },
        };
        Ok(all.into_iter().skip(start).take(limit as usize).collect())
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        signatures.iter().map(|s| self.transaction(s)).collect()
    }

    /// In process, on the recorded accounts' bytes; `Skipped` with the reason where that
    /// cannot run it (there is no node to ask).
    async fn simulate_transaction(&self, transaction: &[u8], accounts: &[Pubkey]) -> Result<Simulated, LedgerError> {
        if let Some(reason) = self.without_bytes() {
            return Ok(Simulated::Skipped(reason));
        }
        Ok(match in_process::single(self, None, transaction, accounts, unread).await? {
            Ok(answer) => Simulated::Ran(answer),
            Err(reason) => Simulated::Skipped(reason),
        })
    }

    /// In order on one state, in process (`in_process::sequence`); one that cannot run is
    /// skipped by its reason, and the ones after it naming it.
    async fn simulate_sequence(
        &self,
        transactions: &[(&[u8], &[Pubkey])],
        mode: SequenceMode,
    ) -> Result<Vec<Simulated>, LedgerError> {
        if let Some(reason) = self.without_bytes() {
            check_sequence_len(transactions.len())?;
            return Ok(transactions.iter().map(|_| Simulated::Skipped(reason.clone())).collect());
        }
        let steps = in_process::sequence(self, None, transactions, mode, unread).await?;
        Ok(steps
            .into_iter()
            .map(|step| match step {
                SequenceStep::Answered(simulated) => simulated,
                SequenceStep::Cannot(reason) => Simulated::Skipped(reason),
            })
            .collect())
    }
}

/// One account's answer (`getAccountInfo`, parsed or as bytes).
type AccountAnswer = Result<WithContext<Option<UiAccount>>, LedgerError>;

impl SnapshotSource {
    /// `read` of each address, in order, at the highest slot of the files read.
    fn in_order(
        &self,
        addresses: &[Pubkey],
        read: fn(&Self, &Pubkey) -> AccountAnswer,
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        let answers = addresses.iter().map(|a| read(self, a)).collect::<Result<Vec<_>, _>>()?;
        let slot = answers.iter().map(|a| a.context.slot).max().unwrap_or(self.manifest.created_at_slot);
        Ok(WithContext { context: RpcContext { slot }, value: answers.into_iter().map(|a| a.value).collect() })
    }
}

/// Why an in-process run could not read the snapshot's bytes. What the file said is logged,
/// never answered: a recorded error object may carry a provider's words (a URL, a key).
fn unread(e: &LedgerError) -> String {
    in_process::log_unread("snapshot", e);
    "the snapshot's bytes of an account could not be read (the server's log says why)".to_owned()
}
