//! Fixture inspector (placeholder until it lands).
use crate::ledger::LedgerError;

#[derive(Debug, Clone, serde::Serialize)]
pub struct InspectSummary {
    pub transactions: u32,
}

pub fn inspect_file(_path: &std::path::Path) -> Result<InspectSummary, LedgerError> {
    Ok(InspectSummary { transactions: 0 })
}
