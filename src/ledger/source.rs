//! `LedgerSource`: the JSON-RPC methods the ledger layer reads, and the three sources.
//!
//! Owns: the trait, `SourceSpec` (the `--ledger` flag: `demo`, `snapshot:<dir>`,
//! `rpc:<url>`) and `Source`, the enum that dispatches to the configured implementation.
//! Called from compute threads (each on its own current-thread runtime) and the CLI.
//!
//! Invariant: every method answers in wire types, exactly what a Solana node would answer for
//! the same call, so `view::build_view` cannot tell the sources apart except by `name()`.
//! Futures are deliberately not `Send`: a source is owned by one thread's runtime.

use std::path::PathBuf;

use crate::config;
use crate::ledger::demo::DemoLedger;
use crate::ledger::model::TokenProgram;
use crate::ledger::rpc::{RpcOptions, RpcSource};
use crate::ledger::snapshot::SnapshotSource;
use crate::ledger::wire::{KeyedAccount, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

/// The read side of a Solana node, as far as wallet analysis needs it.
// Futures are single-threaded on purpose (see module doc), so `Send` bounds are not wanted.
#[allow(async_fn_in_trait)]
pub trait LedgerSource {
    /// `demo`, `snapshot` or `rpc`: reported in coverage.
    fn name(&self) -> &'static str;

    /// `getAccountInfo` (jsonParsed). `value` is `None` when the account does not exist.
    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError>;

    /// `getMultipleAccounts` (jsonParsed), at most `config::MULTIPLE_ACCOUNTS_LEN_MAX`.
    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError>;

    /// `getTokenAccountsByOwner` with `{"programId": …}` (jsonParsed).
    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError>;

    /// `getSignaturesForAddress`, newest first, strictly older than `before` when given,
    /// at most `limit` (≤ `config::SIGNATURES_PAGE_LEN_MAX`).
    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError>;

    /// `getTransaction` (jsonParsed, `maxSupportedTransactionVersion: 0`) for each signature,
    /// in order; `None` where the node does not have it. Sources batch as they see fit.
    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError>;
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

/// Where ledger data comes from, as given on the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceSpec {
    Demo { seed: u64 },
    Snapshot { dir: PathBuf },
    Rpc { url: String },
}

impl std::str::FromStr for SourceSpec {
    type Err = LedgerError;

    /// `demo`, `demo:<seed>`, `snapshot:<dir>`, `rpc:<http(s) url>`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
        match (kind, rest) {
            ("demo", "") => Ok(SourceSpec::Demo { seed: crate::config::DEMO_SEED_DEFAULT }),
            ("demo", seed) => seed
                .parse()
                .map(|seed| SourceSpec::Demo { seed })
                .map_err(|_| LedgerError::Invalid(format!("demo seed must be an unsigned integer, got {seed:?}"))),
            ("snapshot", dir) if !dir.is_empty() => Ok(SourceSpec::Snapshot { dir: PathBuf::from(dir) }),
            ("rpc", url) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(SourceSpec::Rpc { url: url.to_owned() })
            }
            // The text is not echoed: a mistyped `rpc:` URL may hold an API key.
            _ => Err(LedgerError::Invalid(
                "ledger must be demo, demo:<seed>, snapshot:<dir> or rpc:<http(s)://url>".into(),
            )),
        }
    }
}

impl std::fmt::Display for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceSpec::Demo { seed } => write!(f, "demo:{seed}"),
            SourceSpec::Snapshot { dir } => write!(f, "snapshot:{}", dir.display()),
            // The URL may carry an API key in its path or query: show the origin only.
            SourceSpec::Rpc { url } => write!(f, "rpc:{}", redact_url(url)),
        }
    }
}

/// `scheme://host[:port]/…` for logs: path, query, fragment and `user:password@` hidden (any
/// of them may carry an API key).
pub fn redact_url(url: &str) -> String {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let (scheme, rest) = url.split_at(after_scheme);
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_len);
    let (user, host) = match authority.rsplit_once('@') {
        Some((_, host)) => ("…@", host),
        None => ("", authority),
    };
    let tail = if tail.len() > 1 { "/…" } else { tail };
    format!("{scheme}{user}{host}{tail}")
}

/// The configured source.
pub enum Source {
    // Boxed: the demo's tables make it much larger than the other variants.
    Demo(Box<DemoLedger>),
    Snapshot(SnapshotSource),
    Rpc(RpcSource),
}

impl Source {
    pub fn open(spec: &SourceSpec, rpc: RpcOptions) -> Result<Source, LedgerError> {
        Ok(match spec {
            SourceSpec::Demo { seed } => Source::Demo(Box::new(DemoLedger::new(*seed))),
            SourceSpec::Snapshot { dir } => Source::Snapshot(SnapshotSource::open(dir)?),
            SourceSpec::Rpc { url } => Source::Rpc(RpcSource::new(url, rpc)?),
        })
    }
}

macro_rules! dispatch {
    ($self:ident, $s:ident => $call:expr) => {
        match $self {
            Source::Demo($s) => $call,
            Source::Snapshot($s) => $call,
            Source::Rpc($s) => $call,
        }
    };
}

impl LedgerSource for Source {
    fn name(&self) -> &'static str {
        dispatch!(self, s => s.name())
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        dispatch!(self, s => s.get_account_info(address).await)
    }

    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        dispatch!(self, s => s.get_multiple_accounts(addresses).await)
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        dispatch!(self, s => s.get_token_accounts_by_owner(owner, program).await)
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        dispatch!(self, s => s.get_signatures_for_address(address, before, limit).await)
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        dispatch!(self, s => s.get_transactions(signatures).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert!(matches!("demo".parse(), Ok(SourceSpec::Demo { .. })));
        assert_eq!("demo:7".parse::<SourceSpec>().unwrap(), SourceSpec::Demo { seed: 7 });
        assert!(matches!("snapshot:/tmp/x".parse(), Ok(SourceSpec::Snapshot { .. })));
        assert!(matches!("rpc:https://api.mainnet-beta.solana.com".parse(), Ok(SourceSpec::Rpc { .. })));
        for bad in ["", "demo:x", "snapshot:", "rpc:ftp://x", "mainnet"] {
            assert!(bad.parse::<SourceSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn redacts_rpc_paths() {
        assert_eq!(redact_url("https://rpc.example.com/v2/SECRETKEY"), "https://rpc.example.com/…");
        assert_eq!(redact_url("http://127.0.0.1:8899"), "http://127.0.0.1:8899");
        assert_eq!(redact_url("http://127.0.0.1:8899/"), "http://127.0.0.1:8899/");
        assert!(!SourceSpec::Rpc { url: "https://h/?api-key=S".into() }.to_string().contains('S'));
        assert_eq!(redact_url("https://user:SECRET@rpc.example.com:8443/x"), "https://…@rpc.example.com:8443/…");
        assert_eq!(redact_url("https://SECRET@h"), "https://…@h");
        assert_eq!(redact_url("https://h?api-key=SECRET"), "https://h/…");
        assert_eq!(redact_url("https://h#SECRET"), "https://h/…");
    }

    #[test]
    fn a_spec_that_does_not_parse_is_not_echoed() {
        for bad in ["rpc:htps://h/v2/SECRET", "rcp:https://h/?api-key=SECRET", "SECRET"] {
            let message = bad.parse::<SourceSpec>().unwrap_err().to_string();
            assert!(!message.contains("SECRET"), "{message}");
        }
    }
}
