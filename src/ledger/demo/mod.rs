//! The demo ledger (placeholder until the demo module lands; see ARCHITECTURE.md).
use crate::ledger::model::TokenProgram;
use crate::ledger::source::LedgerSource;
use crate::ledger::wire::{KeyedAccount, RpcContext, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

pub struct DemoLedger {
    pub seed: u64,
}

impl DemoLedger {
    pub fn new(seed: u64) -> Self {
        DemoLedger { seed }
    }
}

fn ctx<T>(value: T) -> WithContext<T> {
    WithContext { context: RpcContext { slot: 0 }, value }
}

impl LedgerSource for DemoLedger {
    fn name(&self) -> &'static str {
        "demo"
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

/// One named archetype of the demo ledger.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ArchetypeInfo {
    pub name: &'static str,
    pub address: String,
    pub description: &'static str,
}

impl DemoLedger {
    pub fn archetype_list(&self) -> Vec<ArchetypeInfo> {
        Vec::new()
    }
}
