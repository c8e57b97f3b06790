//! The snapshot source (placeholder until the snapshot module lands; see ARCHITECTURE.md).
use crate::ledger::model::TokenProgram;
use crate::ledger::source::LedgerSource;
use crate::ledger::wire::{KeyedAccount, RpcContext, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

pub struct SnapshotSource {
    pub dir: std::path::PathBuf,
}

impl SnapshotSource {
    pub fn open(dir: &std::path::Path) -> Result<Self, LedgerError> {
        Ok(SnapshotSource { dir: dir.to_owned() })
    }
}

fn ctx<T>(value: T) -> WithContext<T> {
    WithContext { context: RpcContext { slot: 0 }, value }
}

impl LedgerSource for SnapshotSource {
    fn name(&self) -> &'static str {
        "snapshot"
    }
    async fn get_account_info(&self, _a: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        Ok(ctx(None))
    }
    async fn get_multiple_accounts(&self, a: &[Pubkey]) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        Ok(ctx(vec![None; a.len()]))
    }
    async fn get_token_accounts_by_owner(
        &self,
        _o: &Pubkey,
        _p: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        Ok(ctx(vec![]))
    }
    async fn get_signatures_for_address(
        &self,
        _a: &Pubkey,
        _b: Option<&Signature>,
        _l: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        Ok(vec![])
    }
    async fn get_transactions(&self, s: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        Ok(vec![None; s.len()])
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct SnapshotReport {
    pub wallets: u32,
}

pub async fn record<S: LedgerSource>(
    _source: &S,
    wallets: &[Pubkey],
    _out: &std::path::Path,
    _history_depth: u32,
) -> Result<SnapshotReport, LedgerError> {
    Ok(SnapshotReport { wallets: wallets.len() as u32 })
}

pub async fn export_demo(_seed: u64, wallets: u32, _out: &std::path::Path) -> Result<SnapshotReport, LedgerError> {
    Ok(SnapshotReport { wallets })
}
