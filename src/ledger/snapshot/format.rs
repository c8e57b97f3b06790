//! The snapshot directory layout: file names, the manifest, and bounded reads of entry files.
//!
//! Owns: `Entry` (which file answers which call), `entry_path` (the only place a file name is
//! made from a name), `Manifest` and its version check, and `read_entry`, the bounded,
//! symlink-refusing file read. Called by `SnapshotSource` (compute threads, CLI) and
//! `SnapshotWriter` (CLI).
//!
//! Invariant: every path handed out is `<kind dir>/<base58 name><suffix>` where the name
//! parses as an address (or a signature, for transactions), so no name can climb out of the
//! directory or name a hidden file. A file is read only when it is a regular file (not a
//! symlink) of at most `config::LEDGER_FILE_BYTES_MAX` bytes. Errors name the file by its path
//! relative to the snapshot root, never the absolute path.
//! Deliberately absent: caching (each call reads its files again; they are small and local).

use std::io::Read;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::config;
use crate::ledger::model::TokenProgram;
use crate::ledger::wire::{self, RpcResponse};
use crate::ledger::{budget, LedgerError};
use crate::pubkey::{Pubkey, Signature};

/// `format` field of every snapshot manifest.
pub const FORMAT_NAME: &str = "xray-snapshot";
/// The only manifest version this build reads and writes.
pub const FORMAT_VERSION: u64 = 1;
/// The manifest's file name, at the root of the snapshot directory.
pub const MANIFEST_FILE: &str = "manifest.json";

/// One kind of entry file; each answers one JSON-RPC method (see the module doc of
/// `ledger::snapshot` for the full layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Entry {
    /// `accounts/<address>.json`: getAccountInfo (also getMultipleAccounts and getBalance).
    Account,
    /// `account-bytes/<address>.json`: getAccountInfo with `encoding: base64` (also
    /// getMultipleAccounts base64): what an in-process run executes on. Written for every
    /// account the recording read (listed token and nonce accounts too) when the manifest says
    /// `accountBytes`.
    AccountBytes,
    /// `token-accounts/<owner>.<spl-token|spl-token-2022>.json`: getTokenAccountsByOwner.
    TokenAccounts(TokenProgram),
    /// `nonce-accounts/<authority>.json`: getProgramAccounts of the System program with the
    /// nonce filters naming the authority (`LedgerSource::get_nonce_accounts_by_authority`).
    NonceAccounts,
    /// `signatures/<address>.json`: getSignaturesForAddress, every recorded page merged.
    Signatures,
    /// `transactions/<signature>.json`: getTransaction.
    Transaction,
}

impl Entry {
    /// Every kind's directory, created by the writer.
    pub const DIRS: [&'static str; 6] =
        ["accounts", "account-bytes", "token-accounts", "nonce-accounts", "signatures", "transactions"];

    pub fn dir(self) -> &'static str {
        match self {
            Entry::Account => "accounts",
            Entry::AccountBytes => "account-bytes",
            Entry::TokenAccounts(_) => "token-accounts",
            Entry::NonceAccounts => "nonce-accounts",
            Entry::Signatures => "signatures",
            Entry::Transaction => "transactions",
        }
    }

    fn suffix(self) -> &'static str {
        match self {
            Entry::TokenAccounts(TokenProgram::Token) => ".spl-token.json",
            Entry::TokenAccounts(TokenProgram::Token2022) => ".spl-token-2022.json",
            Entry::Account | Entry::AccountBytes | Entry::NonceAccounts | Entry::Signatures | Entry::Transaction => {
                ".json"
            }
        }
    }

    /// The name must be the base58 text of what the entry is keyed by.
    fn name_is_valid(self, name: &str) -> bool {
        match self {
            Entry::Transaction => Signature::parse(name).is_ok(),
            Entry::Account
            | Entry::AccountBytes
            | Entry::TokenAccounts(_)
            | Entry::NonceAccounts
            | Entry::Signatures => Pubkey::parse(name).is_ok(),
        }
    }
}

/// The path of an entry file relative to the snapshot root. Refuses any name that is not the
/// base58 text of an address (a signature for transactions): `..`, `/`, NUL, dots and the
/// empty name cannot pass, so the path stays inside its kind's directory.
pub fn entry_path(entry: Entry, name: &str) -> Result<PathBuf, LedgerError> {
    if !entry.name_is_valid(name) {
        let shown: String = name.chars().take(crate::pubkey::SIGNATURE_TEXT_LEN_MAX).collect();
        return Err(LedgerError::Invalid(format!(
            "snapshot entry name {shown:?} is not a base58 address or signature"
        )));
    }
    Ok(Path::new(entry.dir()).join(format!("{name}{}", entry.suffix())))
}

/// `manifest.json`: what the snapshot holds and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// Always `FORMAT_NAME`.
    pub format: String,
    /// Always `FORMAT_VERSION`.
    pub version: u64,
    /// `name()` of the source that was recorded: `rpc`, `demo` (or `snapshot` for a copy).
    pub source: String,
    /// Highest slot of any recorded response; the slot at which a missing file is read as
    /// "does not exist".
    pub created_at_slot: u64,
    /// History depth the wallets were recorded with, when known. Replaying with a larger
    /// depth sees the end of the recorded list as the end of the history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_depth: Option<u32>,
    /// The wallets whose views were recorded, in recording order.
    pub wallets: Vec<Pubkey>,
    /// Whether every account recorded has its bytes too (`account-bytes/`), so a scan runs in
    /// process on the snapshot; `false` (the default) for a snapshot recorded before bytes were
    /// kept: such a snapshot does not simulate.
    #[serde(default)]
    pub account_bytes: bool,
}

/// The two fields checked before the rest is parsed, so that a manifest of a later version
/// is refused as such rather than as malformed.
#[derive(Deserialize)]
struct ManifestHeader {
    #[serde(default)]
    format: Option<String>,
    #[serde(default)]
    version: Option<u64>,
}

impl Manifest {
    pub fn new(source: &str, created_at_slot: u64, history_depth: Option<u32>, wallets: Vec<Pubkey>) -> Manifest {
        Manifest {
            format: FORMAT_NAME.to_owned(),
            version: FORMAT_VERSION,
            source: source.to_owned(),
            created_at_slot,
            history_depth,
            wallets,
            account_bytes: false,
        }
    }

    /// Reads and checks `<root>/manifest.json`. A missing manifest (not a snapshot, or a
    /// recording that never finished) and an unknown format or version are `Invalid`.
    pub fn read(root: &Path) -> Result<Manifest, LedgerError> {
        let rel = Path::new(MANIFEST_FILE);
        if !root.is_dir() {
            return Err(LedgerError::Invalid(format!("snapshot directory {} does not exist", root.display())));
        }
        let Some(mut bytes) = read_entry(root, rel)? else {
            return Err(LedgerError::Invalid(format!(
                "{} has no {MANIFEST_FILE}: not a snapshot, or its recording did not finish",
                root.display()
            )));
        };
        let mut header_bytes = bytes.clone();
        let header: ManifestHeader = wire::parse(&mut header_bytes).map_err(|e| named(rel, e))?;
        if header.format.as_deref() != Some(FORMAT_NAME) || header.version != Some(FORMAT_VERSION) {
            return Err(LedgerError::Invalid(format!(
                "{MANIFEST_FILE}: format {:?} version {:?} is not {FORMAT_NAME:?} version {FORMAT_VERSION}",
                header.format.unwrap_or_default(),
                header.version
            )));
        }
        wire::parse(&mut bytes).map_err(|e| named(rel, e))
    }
}

/// Prefixes a parse error with the file it came from.
pub fn named(rel: &Path, e: LedgerError) -> LedgerError {
    match e {
        LedgerError::Malformed(m) => LedgerError::Malformed(format!("snapshot file {}: {m}", rel.display())),
        other => other,
    }
}

/// The bytes of `<root>/<rel>`; `None` when there is no such file.
pub fn read_entry(root: &Path, rel: &Path) -> Result<Option<Vec<u8>>, LedgerError> {
    let path = root.join(rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LedgerError::Unavailable(format!("snapshot file {}: {e}", rel.display()))),
    };
    if !meta.file_type().is_file() {
        return Err(LedgerError::Invalid(format!("snapshot file {} is not a regular file", rel.display())));
    }
    let too_big = |len: u64| {
        LedgerError::Malformed(format!(
            "snapshot file {} is {len} bytes, more than {} allowed",
            rel.display(),
            config::LEDGER_FILE_BYTES_MAX
        ))
    };
    if meta.len() > config::LEDGER_FILE_BYTES_MAX {
        return Err(too_big(meta.len()));
    }
    // The job's budget is charged before the read: a file it cannot afford is not read.
    budget::charge(meta.len())?;
    let unavailable = |e: std::io::Error| LedgerError::Unavailable(format!("snapshot file {}: {e}", rel.display()));
    let file = std::fs::File::open(&path).map_err(unavailable)?;
    // The file may grow between the size check and the read: read one byte past the limit
    // to notice, never more.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(config::LEDGER_FILE_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(unavailable)?;
    if bytes.len() as u64 > config::LEDGER_FILE_BYTES_MAX {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(Some(bytes))
}

/// Reads and parses an entry file as a JSON-RPC response; `None` when there is no file.
pub fn read_response<T: DeserializeOwned>(
    root: &Path,
    entry: Entry,
    name: &str,
) -> Result<Option<(PathBuf, RpcResponse<T>)>, LedgerError> {
    let rel = entry_path(entry, name)?;
    let Some(mut bytes) = read_entry(root, &rel)? else { return Ok(None) };
    let response = wire::parse_response(&mut bytes).map_err(|e| named(&rel, e))?;
    Ok(Some((rel, response)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ADDRESS: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";

    #[test]
    fn paths_follow_the_layout() {
        assert_eq!(entry_path(Entry::Account, ADDRESS).unwrap(), Path::new("accounts").join(format!("{ADDRESS}.json")));
        assert_eq!(
            entry_path(Entry::TokenAccounts(TokenProgram::Token2022), ADDRESS).unwrap(),
            Path::new("token-accounts").join(format!("{ADDRESS}.spl-token-2022.json"))
        );
        let sig = bs58::encode([9u8; 64]).into_string();
        assert!(entry_path(Entry::Transaction, &sig).is_ok());
        // An address is not a signature and the other way round.
        assert!(entry_path(Entry::Transaction, ADDRESS).is_err());
        assert!(entry_path(Entry::Signatures, &sig).is_err());
    }

    #[test]
    fn refuses_names_that_are_not_base58_keys() {
        for bad in ["", "..", "../manifest", "a/b", "/etc/passwd", ".hidden", "abc\0", "%2e%2e", &"1".repeat(45)] {
            assert!(matches!(entry_path(Entry::Account, bad), Err(LedgerError::Invalid(_))), "{bad:?}");
        }
    }

    #[test]
    fn manifest_round_trips() {
        let m = Manifest::new("rpc", 42, Some(10), vec![Pubkey::parse(ADDRESS).unwrap()]);
        let mut bytes = wire::to_vec(&m).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains(r#""format":"xray-snapshot""#) && text.contains(r#""createdAtSlot":42"#), "{text}");
        assert_eq!(wire::parse::<Manifest>(&mut bytes).unwrap(), m);
    }
}
