//! The upgradeable programs a transaction reaches, their ELFs read from the source for the
//! runtime (`runtime::ProgramElf`): a dApp's program runs in process as the chain holds it.
//!
//! Owns: `needed` — which programs the runtime must be given, read how. Called by
//! `in_process::load` on the thread that owns the source (and its runtime).
//!
//! Invariant: a program's ELF is read only when the runtime does not hold it at the deploy
//! slot its program-data account names now: the header (`PROGRAM_DATA_HEADER_LEN` bytes,
//! `dataSlice` on a node) is read every time — an upgrade is seen at once — the ELF only the
//! first time a thread meets that (program, slot). The SVM's own programs are never replaced.
//! Bounded: at most `PROGRAMS_PER_TRANSACTION_MAX` programs a transaction, each ELF read within
//! the scan's read budget and loaded only up to `runtime::RUNTIME_PROGRAM_ELF_BYTES_MAX`.
//! Deliberately absent: programs of the loaders v1, v2 and v4 (their transactions are `Cannot`,
//! the runtime names the program it does not hold).

use std::collections::BTreeMap;

use super::reads::{raw, Reads};
use crate::config::MULTIPLE_ACCOUNTS_LEN_MAX;
use crate::ledger::read::LedgerSource;
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;
use crate::runtime::{
    deploy_slot_of, program_data_of, with_thread_runtime, PreAccount, ProgramElf, PROGRAM_DATA_HEADER_LEN,
};

/// The most upgradeable programs one transaction may bring to the runtime (a transaction
/// invokes at most 64 instructions; a route through a handful of dApps names fewer than 16).
pub const PROGRAMS_PER_TRANSACTION_MAX: usize = 16;

/// The ELFs of the upgradeable programs among `accounts` that the runtime needs (it neither
/// runs them itself nor holds them at their deploy slot); or why they cannot be had.
pub async fn needed<S: LedgerSource>(
    source: &S,
    reads: &mut Reads,
    accounts: &BTreeMap<Pubkey, PreAccount>,
) -> Result<Result<Vec<ProgramElf>, String>, LedgerError> {
    let programs: Vec<(Pubkey, Pubkey)> = accounts
        .values()
        .filter_map(|a| program_data_of(a).map(|data| (a.address, data)))
        .filter(|(id, _)| !with_thread_runtime(|r| r.runs_own(id)))
        .collect();
    if programs.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    if programs.len() > PROGRAMS_PER_TRANSACTION_MAX {
        return Ok(Err(format!(
            "it reaches {} upgradeable programs; at most {PROGRAMS_PER_TRANSACTION_MAX} are loaded for one transaction",
            programs.len()
        )));
    }
    // One call: `PROGRAMS_PER_TRANSACTION_MAX` is within a node's 100 addresses.
    const _: () = assert!(PROGRAMS_PER_TRANSACTION_MAX <= MULTIPLE_ACCOUNTS_LEN_MAX);
    let datas: Vec<Pubkey> = programs.iter().map(|(_, data)| *data).collect();
    let heads = source.get_multiple_accounts_base64_head(&datas, PROGRAM_DATA_HEADER_LEN).await?;
    let mut stale = Vec::new();
    for ((id, data), head) in programs.iter().zip(heads.value) {
        let Some(head) = head.map(|a| raw(*data, &a)).transpose()? else {
            return Ok(Err(format!(
                "program {id}'s program-data account {data} is not on the {} source: its ELF cannot be loaded",
                source.name()
            )));
        };
        let Some(slot) = deploy_slot_of(&head.data) else {
            return Ok(Err(format!("program {id}'s program-data account {data} is not one")));
        };
        if with_thread_runtime(|r| r.loaded_slot(id)) != Some(slot) {
            stale.push((*id, *data));
        }
    }
    let datas: Vec<Pubkey> = stale.iter().map(|(_, data)| *data).collect();
    let read = reads.get(source, &datas).await?;
    Ok(stale
        .into_iter()
        .zip(read)
        .map(|((id, data), account)| match account {
            Some(program_data) => Ok(ProgramElf { id, program_data }),
            None => Err(format!("program {id}'s program-data account {data} is not on the source any more")),
        })
        .collect())
}
