//! The upgradeable programs a transaction reaches, read from the source for the runtime
//! (`runtime::ProgramUse`): a dApp's program runs in process as the chain holds it.
//!
//! Owns: `needed` — which programs the runtime must run, at which deploy slot, and the ELFs it
//! must be given. Called by `in_process::load` on the thread that owns the source (and its
//! runtime).
//!
//! Invariant: a program's deploy slot is read every time (its program-data header, with
//! `dataSlice` where the source slices: an upgrade is seen at once), its ELF only when the
//! thread's runtime does not hold it at that slot — read once, from the source itself, never
//! from what an earlier transaction of a sequence left (a simulated upgrade would otherwise be
//! kept as the program), and only when the header and the full read name the same slot. The
//! program-data account must be at the program's derived address. Anything else is `Cannot`
//! with the reason, never a run of other bytes.
//! Bounded: at most `PROGRAMS_PER_EXECUTION_MAX` programs, an ELF larger than
//! `RUNTIME_PROGRAM_ELF_BYTES_MAX` refused from the header's `space` before it is read, the
//! read within the scan's budget (a read past it is `Cannot`: the node may still answer), an
//! ELF the loader refused at that slot not read again.
//! Deliberately absent: programs of the loaders v1, v2 and v4 (their transactions are `Cannot`,
//! the runtime names the program it does not hold).

use std::collections::BTreeMap;

use super::reads::{raw, Reads};
use crate::ledger::read::LedgerSource;
use crate::ledger::wire::UiAccount;
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;
use crate::runtime::{
    deploy_slot_of, program_data_address, program_data_of, with_thread_runtime, PreAccount, ProgramUse,
    PROGRAMS_PER_EXECUTION_MAX, PROGRAM_DATA_HEADER_LEN, RUNTIME_PROGRAM_ELF_BYTES_MAX,
};

/// The upgradeable programs among `accounts` the runtime does not run itself, each at the
/// deploy slot the source names, with its program-data account where the runtime must load it;
/// or why they cannot run here.
pub async fn needed<S: LedgerSource>(
    source: &S,
    reads: &mut Reads,
    accounts: &BTreeMap<Pubkey, PreAccount>,
) -> Result<Result<Vec<ProgramUse>, String>, LedgerError> {
    let programs: Vec<(Pubkey, Pubkey)> = accounts
        .values()
        .filter_map(|a| program_data_of(a).map(|data| (a.address, data)))
        .filter(|(id, _)| !with_thread_runtime(|r| r.runs_own(id)))
        .collect();
    if programs.is_empty() {
        return Ok(Ok(Vec::new()));
    }
    if let Some(reason) = refused_upfront(reads, &programs) {
        return Ok(Err(reason));
    }
    let heads = match heads(source, reads, &programs).await? {
        Ok(heads) => heads,
        Err(reason) => return Ok(Err(reason)),
    };
    let mut uses = Vec::with_capacity(programs.len());
    let mut stale = Vec::new();
    for ((id, data), (slot, space)) in programs.iter().zip(heads) {
        if space
            .is_some_and(|s| s.saturating_sub(PROGRAM_DATA_HEADER_LEN as u64) > RUNTIME_PROGRAM_ELF_BYTES_MAX as u64)
        {
            return Ok(Err(format!(
                "program {id}'s ELF is larger than {RUNTIME_PROGRAM_ELF_BYTES_MAX} bytes: it is not loaded"
            )));
        }
        if with_thread_runtime(|r| r.refused(id, slot)) {
            return Ok(Err(format!("program {id}'s ELF at deploy slot {slot} was refused by the loader")));
        }
        if !with_thread_runtime(|r| r.holds(id, slot)) {
            stale.push(uses.len());
        }
        uses.push((ProgramUse { id: *id, deploy_slot: slot, program_data: None }, *data));
    }
    let datas: Vec<Pubkey> = stale.iter().map(|&i| uses[i].1).collect();
    let read = match reads.get(source, &datas).await {
        Ok(read) => read,
        Err(LedgerError::OverBudget(_)) => {
            return Ok(Err("a program's ELF does not fit the scan's read budget".to_owned()));
        }
        Err(e) => return Err(e),
    };
    for (&i, account) in stale.iter().zip(read) {
        let (program, _) = &mut uses[i];
        match account {
            Some(account) if deploy_slot_of(&account.data) == Some(program.deploy_slot) => {
                program.program_data = Some(account);
            }
            _ => {
                return Ok(Err(format!(
                    "program {}'s program-data account changed between two reads: its ELF is not loaded",
                    program.id
                )));
            }
        }
    }
    Ok(Ok(uses.into_iter().map(|(program, _)| program).collect()))
}

/// Why the programs cannot run here before anything is read: too many, a program-data account
/// not at its derived address, or one a transaction before this one in the sequence changed.
fn refused_upfront(reads: &Reads, programs: &[(Pubkey, Pubkey)]) -> Option<String> {
    if programs.len() > PROGRAMS_PER_EXECUTION_MAX {
        return Some(format!(
            "it reaches {} upgradeable programs; at most {PROGRAMS_PER_EXECUTION_MAX} are loaded for one transaction",
            programs.len()
        ));
    }
    programs.iter().find_map(|(id, data)| {
        if *data != program_data_address(id) {
            return Some(format!("program {id}'s account names {data}, not its program-data address"));
        }
        (reads.was_left(id) || reads.was_left(data)).then(|| {
            format!("a transaction before it changes program {id}: what it leaves is not loaded as the program")
        })
    })
}

/// Each program-data account's deploy slot and size (`space`, when the source says it): its
/// header where the source slices data (one small read), else the whole account, read once.
async fn heads<S: LedgerSource>(
    source: &S,
    reads: &mut Reads,
    programs: &[(Pubkey, Pubkey)],
) -> Result<Result<Vec<(u64, Option<u64>)>, String>, LedgerError> {
    let datas: Vec<Pubkey> = programs.iter().map(|(_, data)| *data).collect();
    let heads: Vec<Option<(PreAccount, Option<u64>)>> = if source.slices_data() {
        let page = source.get_multiple_accounts_base64_head(&datas, PROGRAM_DATA_HEADER_LEN).await?;
        datas.iter().zip(page.value).map(|(at, a)| a.map(|a| head(*at, &a)).transpose()).collect::<Result<_, _>>()?
    } else {
        match reads.get(source, &datas).await {
            Ok(read) => read.into_iter().map(|a| a.map(|a| (a, None))).collect(),
            Err(LedgerError::OverBudget(_)) => {
                return Ok(Err("a program's ELF does not fit the scan's read budget".to_owned()));
            }
            Err(e) => return Err(e),
        }
    };
    let mut out = Vec::with_capacity(heads.len());
    for ((id, data), head) in programs.iter().zip(heads) {
        let Some((account, space)) = head else {
            return Ok(Err(format!(
                "program {id}'s program-data account {data} is not on the {} source: its ELF cannot be loaded",
                source.name()
            )));
        };
        let Some(slot) = deploy_slot_of(&account.data) else {
            return Ok(Err(format!("program {id}'s program-data account {data} is not one")));
        };
        out.push((slot, space));
    }
    Ok(Ok(out))
}

/// A sliced answer's bytes and the account's whole size.
fn head(at: Pubkey, account: &UiAccount) -> Result<(PreAccount, Option<u64>), LedgerError> {
    Ok((raw(at, account)?, account.space))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_data_elsewhere_or_left_by_a_transaction_before_is_refused_before_any_read() {
        let id = Pubkey([7; 32]);
        let data = program_data_address(&id);
        let mut reads = Reads::new();
        assert_eq!(refused_upfront(&reads, &[(id, data)]), None);
        let elsewhere = refused_upfront(&reads, &[(id, Pubkey([8; 32]))]);
        assert!(elsewhere.is_some_and(|r| r.contains("not its program-data address")));
        // A simulated upgrade earlier in the sequence is never kept as the program.
        reads.leave([(data, None)]);
        assert!(refused_upfront(&reads, &[(id, data)]).is_some_and(|r| r.contains("changes program")));
        let many: Vec<(Pubkey, Pubkey)> = (0..=PROGRAMS_PER_EXECUTION_MAX as u8)
            .map(|i| (Pubkey([i; 32]), program_data_address(&Pubkey([i; 32]))))
            .collect();
        assert!(refused_upfront(&Reads::new(), &many).is_some_and(|r| r.contains("at most 16")));
    }
}
