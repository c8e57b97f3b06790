//! The upgradeable programs a thread's runtime loads from a source: a dApp's program, its ELF
//! read from the program-data account at the program's derived address, so it runs in the scan
//! as the chain holds it.
//!
//! Owns: `ProgramUse` (a program an execution runs, at the deploy slot the source names now,
//! with its program-data account when the runtime must load it), `Kept` (what is loaded, and
//! the ELFs the loader refused), and `Runtime::use_programs`. Called by `Runtime::execute_with`
//! on the thread that owns the runtime; the caller (`ledger::in_process::programs`) asks
//! `holds` / `refused` / `runs_own` first so that it reads an ELF only when one is needed.
//!
//! Invariant: a program is kept by (id, deploy slot) and runs only in an execution that names
//! it at that slot (`Kept::foreign_to`): a program kept for one execution is not held for
//! another, and one the thread let go is never run from what is left of it. Its program-data
//! account is the one at `program_data_address(id)`, its header names the deploy slot it was
//! asked for, and neither account is one the SVM holds itself: no source can overwrite a sysvar
//! or a shipped program through it. A refused ELF leaves nothing behind and is not tried again
//! at that slot (`RUNTIME_REFUSED_PROGRAMS_LEN` remembered).
//! Invariant: bounded. At most `PROGRAMS_PER_EXECUTION_MAX` programs an execution, one ELF at
//! most `RUNTIME_PROGRAM_ELF_BYTES_MAX`, and a thread keeps at most `RUNTIME_PROGRAMS_MAX`
//! programs of at most `RUNTIME_PROGRAMS_BYTES_MAX` program-data bytes together, each counted
//! at least `RUNTIME_PROGRAM_CHARGE_BYTES_MIN` (the loader's copy and its compiled code come
//! beside the bytes counted; they are not measured here). Past that, every kept program is
//! forgotten at once (the SVM built again, ~14 ms), at most once an execution.
//! Deliberately absent: evicting one program (the SVM's program cache has no removal: only a
//! new SVM frees what it compiled); programs of the loaders v1, v2 and v4.

use std::collections::{HashMap, HashSet};
use std::num::NonZeroUsize;

use solana_account::{Account, ReadableAccount};
use solana_address::Address;

use super::{held_ref, Moment, PreAccount, Runtime};
use crate::pubkey::Pubkey;

/// The most bytes of one upgradeable program's ELF loaded (its program-data account past the
/// header): mainnet's largest dApp programs are 1–3 MB, and the account is read within a scan's
/// 8 MiB budget (`config::SCAN_BYTES_PER_SCAN_MAX`), base64 adding a third.
pub const RUNTIME_PROGRAM_ELF_BYTES_MAX: usize = 4 * 1024 * 1024;

/// The most program-data bytes a thread's runtime keeps loaded, every program together.
pub const RUNTIME_PROGRAMS_BYTES_MAX: usize = 48 * 1024 * 1024;

/// The most programs a thread's runtime keeps loaded.
pub const RUNTIME_PROGRAMS_MAX: usize = 64;

/// What a kept program counts at least against `RUNTIME_PROGRAMS_BYTES_MAX`: a tiny ELF still
/// costs the loader's structures and its compiled code's pages.
pub const RUNTIME_PROGRAM_CHARGE_BYTES_MIN: usize = 64 * 1024;

/// The most upgradeable programs one execution may bring (a transaction invokes at most 64
/// instructions; a route through a handful of dApps names fewer than 16).
pub const PROGRAMS_PER_EXECUTION_MAX: usize = 16;

/// ELFs the loader refused that a thread remembers, by (id, deploy slot), so that a program the
/// loader cannot take is not read and verified again at every scan.
const RUNTIME_REFUSED_PROGRAMS_LEN: usize = 256;

/// A program-data account's header (bincode `UpgradeableLoaderState::ProgramData`): the tag (3),
/// the deploy slot, the upgrade authority as an option (1 + 32 bytes); the ELF follows.
pub const PROGRAM_DATA_HEADER_LEN: usize = 45;
const PROGRAM_DATA_TAG: u32 = 3;
const PROGRAM_TAG: u32 = 2;

/// The upgradeable loader, owner of every program an execution may load.
pub const UPGRADEABLE_LOADER: Address = solana_address::address!("BPFLoaderUpgradeab1e11111111111111111111111");

/// An upgradeable program an execution runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProgramUse {
    pub id: Pubkey,
    /// The deploy slot its program-data account names now.
    pub deploy_slot: u64,
    /// That account (`PROGRAM_DATA_HEADER_LEN` bytes of header, then the ELF), when the runtime
    /// does not hold the program at `deploy_slot` (`Runtime::holds`).
    pub program_data: Option<PreAccount>,
}

/// The program-data address an upgradeable program account names (`None`: not one).
pub fn program_data_of(program: &PreAccount) -> Option<Pubkey> {
    if program.owner.0 != UPGRADEABLE_LOADER.to_bytes() || !program.executable {
        return None;
    }
    let tag = u32::from_le_bytes(program.data.get(..4)?.try_into().ok()?);
    let address: [u8; 32] = program.data.get(4..36)?.try_into().ok()?;
    (tag == PROGRAM_TAG).then_some(Pubkey(address))
}

/// Where the upgradeable loader keeps `id`'s program data: the address derived from the id.
pub fn program_data_address(id: &Pubkey) -> Pubkey {
    let (address, _) = Address::find_program_address(&[&id.0], &UPGRADEABLE_LOADER);
    Pubkey(address.to_bytes())
}

/// The deploy slot a program-data account's header names (`None`: not one).
pub fn deploy_slot_of(data: &[u8]) -> Option<u64> {
    let tag = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    let slot = u64::from_le_bytes(data.get(4..12)?.try_into().ok()?);
    (tag == PROGRAM_DATA_TAG && data.len() >= PROGRAM_DATA_HEADER_LEN).then_some(slot)
}

/// One kept program.
struct Loaded {
    deploy_slot: u64,
    program_data: Pubkey,
    /// What it counts against `RUNTIME_PROGRAMS_BYTES_MAX`.
    charged_bytes: usize,
}

/// What a thread's runtime keeps of programs loaded from a source.
pub(super) struct Kept {
    loaded: HashMap<Pubkey, Loaded>,
    refused: lru::LruCache<(Pubkey, u64), ()>,
}

impl Default for Kept {
    fn default() -> Kept {
        let len = NonZeroUsize::new(RUNTIME_REFUSED_PROGRAMS_LEN).unwrap_or(NonZeroUsize::MIN);
        Kept { loaded: HashMap::new(), refused: lru::LruCache::new(len) }
    }
}

impl Kept {
    /// The kept programs (and their program-data accounts) an execution of `programs` must not
    /// see: those it does not name at the slot they are kept at.
    pub(super) fn foreign_to(&self, programs: &[ProgramUse]) -> HashSet<Address> {
        let named: HashSet<(Pubkey, u64)> = programs.iter().map(|p| (p.id, p.deploy_slot)).collect();
        self.loaded
            .iter()
            .filter(|(id, kept)| !named.contains(&(**id, kept.deploy_slot)))
            .map(|(id, _)| Address::new_from_array(id.0))
            .collect()
    }

    fn charged_bytes(&self) -> usize {
        self.loaded.values().map(|l| l.charged_bytes).sum()
    }
}

/// What `program_data` counts against the thread's bound.
fn charge(program_data: &PreAccount) -> usize {
    program_data.data.len().max(RUNTIME_PROGRAM_CHARGE_BYTES_MIN)
}

impl Runtime {
    /// Whether the runtime holds the program at `id` loaded from a source at `deploy_slot`.
    pub fn holds(&self, id: &Pubkey, deploy_slot: u64) -> bool {
        self.programs.loaded.get(id).is_some_and(|l| l.deploy_slot == deploy_slot)
    }

    /// Whether the loader refused `id`'s ELF at `deploy_slot` before (it is not tried again).
    pub fn refused(&self, id: &Pubkey, deploy_slot: u64) -> bool {
        self.programs.refused.contains(&(*id, deploy_slot))
    }

    /// Whether the runtime runs a program of its own at `id` (one a source's ELF never
    /// replaces).
    pub fn runs_own(&self, id: &Pubkey) -> bool {
        let address = Address::new_from_array(id.0);
        !self.programs.loaded.contains_key(id) && held_ref(&self.svm, &address).is_some_and(|a| a.executable())
    }

    /// Makes every one of `programs` held at its deploy slot, loading those given with their
    /// program-data account; or says why it cannot be (then nothing of this call stays loaded
    /// but what was kept before it).
    pub(super) fn use_programs(&mut self, programs: &[ProgramUse]) -> Result<(), String> {
        if programs.len() > PROGRAMS_PER_EXECUTION_MAX {
            return Err(format!(
                "it reaches {} upgradeable programs; at most {PROGRAMS_PER_EXECUTION_MAX} are loaded for one execution",
                programs.len()
            ));
        }
        let mut to_load = Vec::new();
        for program in programs.iter().filter(|p| !self.holds(&p.id, p.deploy_slot)) {
            let Some(data) = program.program_data.as_ref() else {
                return Err(format!(
                    "program {} is no longer held at deploy slot {} (the runtime let it go to make room)",
                    program.id, program.deploy_slot
                ));
            };
            self.check(program, data)?;
            to_load.push((program, data));
        }
        let batch: usize = to_load.iter().map(|(_, data)| charge(data)).sum();
        if batch > RUNTIME_PROGRAMS_BYTES_MAX || to_load.len() > RUNTIME_PROGRAMS_MAX {
            return Err(format!(
                "its programs' {batch} bytes are more than a runtime keeps ({RUNTIME_PROGRAMS_BYTES_MAX})"
            ));
        }
        let kept = &self.programs;
        let over = kept.charged_bytes() + batch > RUNTIME_PROGRAMS_BYTES_MAX
            || kept.loaded.len() + to_load.len() > RUNTIME_PROGRAMS_MAX;
        if over {
            self.forget_programs();
            if let Some(gone) = programs.iter().find(|p| p.program_data.is_none()) {
                return Err(format!(
                    "program {} is no longer held at deploy slot {} (the runtime let it go to make room)",
                    gone.id, gone.deploy_slot
                ));
            }
        }
        for (program, data) in to_load {
            self.load_one(program, data)?;
        }
        Ok(())
    }

    /// Why `data` cannot be `program`'s program-data account, if it cannot.
    fn check(&self, program: &ProgramUse, data: &PreAccount) -> Result<(), String> {
        let id = program.id;
        if data.address != program_data_address(&id) {
            return Err(format!("program {id}'s program-data account {} is not at its derived address", data.address));
        }
        if deploy_slot_of(&data.data) != Some(program.deploy_slot) {
            return Err(format!(
                "program {id}'s program-data account does not name deploy slot {}",
                program.deploy_slot
            ));
        }
        let elf_len = data.data.len().saturating_sub(PROGRAM_DATA_HEADER_LEN);
        if elf_len > RUNTIME_PROGRAM_ELF_BYTES_MAX {
            return Err(format!(
                "program {id}'s ELF is {elf_len} bytes; past {RUNTIME_PROGRAM_ELF_BYTES_MAX} it is not loaded"
            ));
        }
        if self.refused(&id, program.deploy_slot) {
            return Err(format!("program {id}'s ELF at deploy slot {} was refused by the loader", program.deploy_slot));
        }
        // Neither account may be one the SVM answers for itself (a shipped program, a sysvar).
        let own = |at: &Pubkey| {
            !self.programs.loaded.contains_key(at)
                && !self.programs.loaded.values().any(|l| l.program_data == *at)
                && held_ref(&self.svm, &Address::new_from_array(at.0)).is_some()
        };
        if own(&id) || own(&data.address) {
            return Err(format!("program {id} is one the runtime holds itself"));
        }
        Ok(())
    }

    /// Every program loaded from a source forgotten: the SVM built again (the refused ELFs are
    /// still remembered).
    fn forget_programs(&mut self) {
        debug_assert!(self.set.is_empty(), "no execution is under way");
        let moment = self.moment;
        let refused = std::mem::take(&mut self.programs).refused;
        *self = Runtime::new();
        self.programs.refused = refused;
        if let Some(moment) = moment {
            self.set_moment(moment);
        }
    }

    /// Sets the program-data account, then the program account: the SVM loads (verifies) the
    /// ELF as the program's. It is loaded at slot 0 so that it is visible at every slot an
    /// execution names (a node's slot may go back a little between scans). A refused ELF puts
    /// the program-data account back as it was and is remembered.
    fn load_one(&mut self, program: &ProgramUse, data: &PreAccount) -> Result<(), String> {
        let moment = self.moment;
        self.set_moment(Moment { slot: 0, epoch: 0, unix_timestamp_s: 0 });
        let data_address = Address::new_from_array(data.address.0);
        let before = held_ref(&self.svm, &data_address).map(|a| Account::from(a.clone()));
        let data_account = Account {
            lamports: data.lamports.max(1),
            data: data.data.clone(),
            owner: UPGRADEABLE_LOADER,
            executable: false,
            rent_epoch: u64::MAX,
        };
        let mut state = PROGRAM_TAG.to_le_bytes().to_vec();
        state.extend_from_slice(&data.address.0);
        let program_account = Account {
            lamports: self.svm.minimum_balance_for_rent_exemption(state.len()),
            data: state,
            owner: UPGRADEABLE_LOADER,
            executable: true,
            rent_epoch: u64::MAX,
        };
        let id = Address::new_from_array(program.id.0);
        let loaded =
            self.svm.set_account(data_address, data_account).and_then(|()| self.svm.set_account(id, program_account));
        if let Err(e) = loaded {
            // The program account was not set (the load failed before it was); the old
            // program, if one was kept at another slot, stays whole with its own data.
            let _ = self.svm.set_account(data_address, before.unwrap_or_default());
            self.programs.refused.put((program.id, program.deploy_slot), ());
            if let Some(moment) = moment {
                self.set_moment(moment);
            }
            return Err(format!("program {}'s ELF was not loaded ({e})", program.id));
        }
        if let Some(moment) = moment {
            self.set_moment(moment);
        }
        let kept = Loaded { deploy_slot: program.deploy_slot, program_data: data.address, charged_bytes: charge(data) };
        self.programs.loaded.insert(program.id, kept);
        Ok(())
    }
}
