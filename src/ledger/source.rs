//! `Source`: the ledger source a `config::SourceSpec` (the `--ledger` setting) names — the demo,
//! a snapshot or a live node — behind the one `LedgerSource` trait (`read.rs`).
//!
//! Owns: the enum and its dispatch to the implementation it holds. Called from compute threads
//! (each opens its own) and the CLI.
//!
//! Invariant: the only file that names all three sources; none of them imports it (they
//! implement `read::LedgerSource`), so the dependency goes one way.

use crate::config::SourceSpec;
use crate::ledger::demo::DemoLedger;
use crate::ledger::model::TokenProgram;
use crate::ledger::read::{LedgerSource, SequenceMode, Simulated};
use crate::ledger::rpc::{RpcOptions, RpcSource};
use crate::ledger::snapshot::SnapshotSource;
use crate::ledger::wire::{KeyedAccount, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

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

    /// Whether a read goes over the network (a node): the demo and snapshots are in process.
    pub fn is_remote(&self) -> bool {
        matches!(self, Source::Rpc(_))
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

    fn synthetic(&self) -> bool {
        dispatch!(self, s => s.synthetic())
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

    async fn get_multiple_accounts_base64(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        dispatch!(self, s => s.get_multiple_accounts_base64(addresses).await)
    }

    fn slices_data(&self) -> bool {
        dispatch!(self, s => s.slices_data())
    }

    async fn get_multiple_accounts_base64_head(
        &self,
        addresses: &[Pubkey],
        length: usize,
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        dispatch!(self, s => s.get_multiple_accounts_base64_head(addresses, length).await)
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        dispatch!(self, s => s.get_token_accounts_by_owner(owner, program).await)
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        dispatch!(self, s => s.get_nonce_accounts_by_authority(authority).await)
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        dispatch!(self, s => s.get_signatures_for_address(address, before, limit).await)
    }

    async fn get_signatures_until(
        &self,
        address: &Pubkey,
        until: &Signature,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        dispatch!(self, s => s.get_signatures_until(address, until, before, limit).await)
    }

    async fn simulate_transaction(&self, transaction: &[u8], accounts: &[Pubkey]) -> Result<Simulated, LedgerError> {
        dispatch!(self, s => s.simulate_transaction(transaction, accounts).await)
    }

    async fn simulate_sequence(
        &self,
        transactions: &[(&[u8], &[Pubkey])],
        mode: SequenceMode,
    ) -> Result<Vec<Simulated>, LedgerError> {
        dispatch!(self, s => s.simulate_sequence(transactions, mode).await)
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        dispatch!(self, s => s.get_transactions(signatures).await)
    }

    async fn for_each_transaction(
        &self,
        signatures: &[Signature],
        each: &mut dyn FnMut(Option<TransactionResult>),
    ) -> Result<(), LedgerError> {
        dispatch!(self, s => s.for_each_transaction(signatures, each).await)
    }
}
