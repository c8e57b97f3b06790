//! The real Solana runtime inside the scan (issue #44): a serialized transaction executed by
//! the SVM — the `litesvm` crate, pinned, with the programs it ships (System, Token, Token-2022,
//! Associated Token Account, Memo, Stake, Address Lookup Table, Compute Budget…) — on the
//! accounts a ledger source read, answered with the post-state of the accounts asked for.
//!
//! Owns: `Runtime` (one SVM per thread that executes: built once, ~14 ms on this VM, then
//! reused), `PreAccount` / `PostAccount` (the accounts in and out, by value), `Outcome` and the
//! rule for what it cannot run; `programs` owns the upgradeable programs loaded from a source. Below the ledger sources and the scan: it names neither (they
//! translate their accounts into `PreAccount`s), so the dependency goes one way.
//!
//! Invariant: nothing of one execution is seen by the next. The SVM keeps only what it was
//! built with (builtins, its programs, sysvars) and the upgradeable programs a source gave
//! (`programs`: kept by program id and deploy slot, for the executions that name them at that
//! slot — a program kept for one is not held for another); every other account an execution
//! sets is removed after it (where the SVM held one, put back as it was), and a simulation
//! commits nothing.
//! Invariant: a transaction that invokes a program the SVM does not hold, or names an
//! executable account it does not hold (a program a CPI would reach), is `Skipped` with a
//! reason naming the program, never run in part; an account given as executable is never
//! loaded as a program from the caller's bytes (the SVM's own programs answer for theirs), and
//! a program is loaded only from the program-data account at its derived address
//! (`ProgramUse`), never over an account the SVM holds itself.
//! Invariant: bounded. The transaction is at most `TRANSACTION_BYTES_MAX` bytes (read as the
//! runtime reads it: fixed-width integers, no trailing bytes), its logs at most
//! `RUNTIME_LOG_BYTES_MAX`, its time by the compute meter (at most 1.4 million units, the
//! runtime's own limit), the accounts given at most `RUNTIME_ACCOUNTS_MAX` holding at most
//! `RUNTIME_PRE_DATA_BYTES_MAX`, one account's post-state copied out at most
//! `RUNTIME_POST_DATA_BYTES_MAX` (past it the answer is `Skipped`).
//! Deliberately absent: signature verification and the blockhash check (a scan judges a
//! transaction before it is signed, on a blockhash the source may not hold); programs of the
//! other loaders (v1, v2 and v4: the source's executable bytes are never loaded); sequences on
//! one state (the sources run them on an overlay of what each left: `ledger::demo::simulate`,
//! `ledger::in_process`; every execution here is alone). One runtime a thread
//! (`with_thread_runtime`), shared by whichever source executes.

#[cfg(test)]
pub(crate) mod fixtures;
mod programs;
#[cfg(test)]
mod tests;

pub use programs::{
    deploy_slot_of, program_data_address, program_data_of, ProgramUse, PROGRAMS_PER_EXECUTION_MAX,
    PROGRAM_DATA_HEADER_LEN, RUNTIME_PROGRAMS_BYTES_MAX, RUNTIME_PROGRAMS_MAX, RUNTIME_PROGRAM_ELF_BYTES_MAX,
};

use bincode::Options;
use litesvm::LiteSVM;
use solana_account::{Account, AccountSharedData, ReadableAccount};
use solana_address::Address;
use solana_clock::Clock;
use solana_transaction::versioned::VersionedTransaction;

use crate::config::TRANSACTION_BYTES_MAX;
use crate::pubkey::Pubkey;

/// The most log bytes one execution keeps (the SVM cuts the rest and says so in the logs).
pub const RUNTIME_LOG_BYTES_MAX: usize = 10_000;

/// The most accounts one execution is given: a transaction names at most 256 (its indices are
/// a byte), each token account among them may bring its mint (256 more), and the lookup tables
/// a 1,232-byte message can name (fewer than 40) come on top: 1,024 holds them all.
pub const RUNTIME_ACCOUNTS_MAX: usize = 1_024;

/// The most account bytes one execution is given, all accounts together (a demo account is at
/// most a few hundred bytes; a source's largest, a lookup table, 8 KiB).
pub const RUNTIME_PRE_DATA_BYTES_MAX: usize = 16 * 1024 * 1024;

/// The most bytes of one account's post-state copied out: a transaction that grows an account
/// past it (the runtime allows 10 MiB) is answered `Skipped`, not read — the scan reads token,
/// mint, nonce and stake layouts of a few hundred bytes, and must not copy megabytes per scan.
pub const RUNTIME_POST_DATA_BYTES_MAX: usize = 64 * 1024;

/// How many recent slots the SlotHashes sysvar holds (the runtime's own count): a lookup
/// table created at one of them is created as on a node.
const SLOT_HASHES_MAX: u64 = 512;

/// The owner of every sysvar account: the SVM holds its own, kept as built.
const SYSVAR_OWNER: Address = solana_address::address!("Sysvar1111111111111111111111111111111111111");

/// An account as the source holds it before the transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreAccount {
    pub address: Pubkey,
    pub lamports: u64,
    pub owner: Pubkey,
    pub data: Vec<u8>,
    pub executable: bool,
}

/// An account after the transaction (`None` in `Ran::accounts` when it is closed or absent;
/// an executable one comes without its data).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostAccount {
    pub lamports: u64,
    pub owner: Pubkey,
    pub data: Vec<u8>,
    pub executable: bool,
}

/// The ledger's moment a transaction runs at (the Clock sysvar it reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moment {
    pub slot: u64,
    pub epoch: u64,
    pub unix_timestamp_s: i64,
}

/// What an execution answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Ran(Ran),
    /// It could not run here; the reason names what is missing.
    Skipped(String),
}

/// A transaction that ran (to success or to its error).
#[derive(Debug, Clone, PartialEq)]
pub struct Ran {
    /// The runtime's error as a node renders it in JSON-RPC (`{"InstructionError":[0,…]}`),
    /// `None` when it succeeded.
    pub err: Option<serde_json::Value>,
    pub logs: Vec<String>,
    pub units_consumed: u64,
    pub fee_lamports: u64,
    /// The accounts asked for, in the order asked, as the transaction left them (the state
    /// before it when it failed: nothing applies).
    pub accounts: Vec<Option<PostAccount>>,
}

/// Why an execution was refused (the caller's input, not the transaction's outcome).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    #[error("not a serialized transaction ({0})")]
    Malformed(String),
    #[error("{given} accounts given; an execution takes at most {RUNTIME_ACCOUNTS_MAX}")]
    TooManyAccounts { given: usize },
    #[error("{given} bytes of accounts given; an execution takes at most {RUNTIME_PRE_DATA_BYTES_MAX}")]
    TooMuchData { given: usize },
}

thread_local! {
    /// This thread's runtime, built at its first use.
    static THREAD_RUNTIME: std::cell::RefCell<Option<Runtime>> = const { std::cell::RefCell::new(None) };
}

/// Builds this thread's runtime now (~14 ms and its programs' loading) rather than at its
/// first execution, so that no scan waits for it.
pub fn warm() {
    with_thread_runtime(|_| ());
}

/// `f` with this thread's runtime (every source that executes in process shares it: one SVM a
/// thread, whichever source asks).
pub fn with_thread_runtime<T>(f: impl FnOnce(&mut Runtime) -> T) -> T {
    THREAD_RUNTIME.with(|slot| f(slot.borrow_mut().get_or_insert_with(Runtime::new)))
}

/// One SVM, reused for every execution on its thread.
pub struct Runtime {
    svm: LiteSVM,
    moment: Option<Moment>,
    /// The accounts the current execution set, each with what the SVM held there before
    /// (put back when it ends: removed, or the SVM's own restored).
    set: Vec<(Address, Option<Account>)>,
    /// The upgradeable programs loaded from a source, and the ELFs the loader refused.
    programs: programs::Kept,
}

impl Default for Runtime {
    fn default() -> Runtime {
        Runtime::new()
    }
}

impl Runtime {
    /// The SVM with its builtins, programs and sysvars; no signature or blockhash check.
    pub fn new() -> Runtime {
        let svm = LiteSVM::new()
            .with_sigverify(false)
            .with_blockhash_check(false)
            .with_transaction_history(0)
            .with_log_bytes_limit(Some(RUNTIME_LOG_BYTES_MAX));
        Runtime { svm, moment: None, set: Vec::new(), programs: programs::Kept::default() }
    }

    /// Executes `transaction` on `pre` (every account it reads that the SVM does not hold
    /// itself) at `moment`, without committing; answers the post-state of `wanted`. No program
    /// loaded from a source runs in it (`execute_with` names those that may).
    pub fn execute(
        &mut self,
        transaction: &[u8],
        pre: &[PreAccount],
        wanted: &[Pubkey],
        moment: Moment,
    ) -> Result<Outcome, RuntimeError> {
        self.execute_with(transaction, pre, &[], wanted, moment)
    }

    /// `execute`, with the upgradeable programs `programs` — loaded first where the runtime does
    /// not hold them at their deploy slot — and no other program loaded from a source: one it
    /// holds for another execution is not held for this one.
    pub fn execute_with(
        &mut self,
        transaction: &[u8],
        pre: &[PreAccount],
        programs: &[ProgramUse],
        wanted: &[Pubkey],
        moment: Moment,
    ) -> Result<Outcome, RuntimeError> {
        if pre.len() > RUNTIME_ACCOUNTS_MAX || wanted.len() > RUNTIME_ACCOUNTS_MAX {
            return Err(RuntimeError::TooManyAccounts { given: pre.len().max(wanted.len()) });
        }
        let bytes: usize = pre.iter().map(|a| a.data.len()).sum();
        if bytes > RUNTIME_PRE_DATA_BYTES_MAX {
            return Err(RuntimeError::TooMuchData { given: bytes });
        }
        let tx = read(transaction)?;
        if let Err(reason) = self.use_programs(programs) {
            return Ok(Outcome::Skipped(reason));
        }
        self.set_moment(moment);
        let foreign = self.programs.foreign_to(programs);
        let outcome = self.with_accounts(pre, |svm| match missing_program(svm, &tx, pre, &foreign) {
            Some(program) => Outcome::Skipped(format!(
                "the runtime does not hold program {program} (no executable loaded for it): its effects are not predicted"
            )),
            None => run(svm, tx, wanted),
        });
        Ok(outcome)
    }

    fn set_moment(&mut self, moment: Moment) {
        if self.moment == Some(moment) {
            return;
        }
        let mut clock: Clock = self.svm.get_sysvar();
        clock.slot = moment.slot;
        clock.epoch = moment.epoch;
        clock.unix_timestamp = moment.unix_timestamp_s;
        self.svm.set_sysvar(&clock);
        // The slots before it, newest first, as a node's SlotHashes holds them (the hashes are
        // not the chain's: the programs the runtime holds read only which slots are there).
        let recent = moment.slot.saturating_sub(SLOT_HASHES_MAX)..moment.slot;
        let hashes: Vec<_> = recent.rev().map(|slot| (slot, solana_hash::Hash::new_from_array([0; 32]))).collect();
        self.svm.set_sysvar(&solana_slot_hashes::SlotHashes::new(&hashes));
        self.moment = Some(moment);
    }

    /// Sets `pre` (past what the SVM holds itself), runs `f`, and removes them again — also
    /// when `f` panics, so a bug in one execution leaks nothing into the next.
    fn with_accounts<T>(&mut self, pre: &[PreAccount], f: impl FnOnce(&LiteSVM) -> T) -> T {
        struct Clear<'a>(&'a mut Runtime);
        impl Drop for Clear<'_> {
            fn drop(&mut self) {
                for (address, held) in self.0.set.drain(..).rev() {
                    // Zero lamports removes the account; what the SVM held goes back as it was
                    // (it held it, so it takes it again).
                    let _ = self.0.svm.set_account(address, held.unwrap_or_default());
                }
            }
        }
        let guard = Clear(self);
        let runtime = &mut *guard.0;
        for account in pre {
            let address = Address::new_from_array(account.address.0);
            if keeps_its_own(&runtime.svm, &address, account) {
                continue;
            }
            let value = Account {
                lamports: account.lamports,
                data: account.data.clone(),
                owner: Address::new_from_array(account.owner.0),
                executable: false,
                rent_epoch: u64::MAX,
            };
            // A sysvar-shaped or otherwise refused account is left out: the transaction then
            // sees it absent, as a node would answer for bytes it cannot hold.
            let held = runtime.svm.accounts_db().get_account_ref(&address).map(|a| Account::from(a.clone()));
            if runtime.svm.set_account(address, value).is_ok() {
                runtime.set.push((address, held));
            }
        }
        f(&runtime.svm)
    }
}

/// The transaction as the runtime reads it.
fn read(bytes: &[u8]) -> Result<VersionedTransaction, RuntimeError> {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .reject_trailing_bytes()
        .with_limit(TRANSACTION_BYTES_MAX as u64)
        .deserialize(bytes)
        .map_err(|e| RuntimeError::Malformed(e.to_string()))
}

/// The SVM's account at `address`, borrowed (`LiteSVM::get_account` copies it, and a program's
/// is its whole ELF: a scan must not copy programs to look at their flags).
fn held_ref<'a>(svm: &'a LiteSVM, address: &Address) -> Option<&'a AccountSharedData> {
    svm.accounts_db().get_account_ref(address)
}

/// Whether the SVM answers for `address` itself: an executable account (a program: only the
/// SVM's own run), a sysvar, or an account the caller gave as executable.
fn keeps_its_own(svm: &LiteSVM, address: &Address, account: &PreAccount) -> bool {
    account.executable
        || account.owner.0 == SYSVAR_OWNER.to_bytes()
        || held_ref(svm, address).is_some_and(|held| held.executable() || *held.owner() == SYSVAR_OWNER)
}

/// The first program the transaction would run that the SVM does not hold as executable: one
/// an instruction invokes, or an executable account it names (a program reached by a CPI —
/// a Token-2022 transfer hook — is named so; run without it, the transaction would fail here
/// where a node would run it).
/// A program loaded from a source for another execution (`foreign`) is not held for this one.
fn missing_program(
    svm: &LiteSVM,
    tx: &VersionedTransaction,
    pre: &[PreAccount],
    foreign: &std::collections::HashSet<Address>,
) -> Option<Pubkey> {
    let held = |address: &Address| !foreign.contains(address) && held_ref(svm, address).is_some_and(|a| a.executable());
    let keys = tx.message.static_account_keys();
    let invoked = tx.message.instructions().iter().filter_map(|ix| keys.get(usize::from(ix.program_id_index)));
    let named = pre.iter().filter(|a| a.executable).map(|a| Address::new_from_array(a.address.0));
    invoked.copied().chain(named).find(|program| !held(program)).map(|program| Pubkey(program.to_bytes()))
}

fn run(svm: &LiteSVM, tx: VersionedTransaction, wanted: &[Pubkey]) -> Outcome {
    let info = match svm.simulate_transaction(tx) {
        Ok(info) => info,
        Err(failed) => {
            let err =
                serde_json::to_value(&failed.err).unwrap_or_else(|_| serde_json::Value::String(failed.err.to_string()));
            return Outcome::Ran(Ran {
                err: Some(err),
                logs: failed.meta.logs,
                units_consumed: failed.meta.compute_units_consumed,
                fee_lamports: failed.meta.fee,
                accounts: wanted.iter().map(|key| held(svm, &Address::new_from_array(key.0))).collect(),
            });
        }
    };
    let grown =
        info.post_accounts.iter().find(|(_, a)| !a.executable() && a.data().len() > RUNTIME_POST_DATA_BYTES_MAX);
    if let Some((address, account)) = grown {
        return Outcome::Skipped(format!(
            "the transaction leaves account {} with {} bytes of data; past {RUNTIME_POST_DATA_BYTES_MAX} the \
             runtime's answer is not read",
            Pubkey(address.to_bytes()),
            account.data().len()
        ));
    }
    let post = |key: &Pubkey| {
        let address = Address::new_from_array(key.0);
        match info.post_accounts.iter().find(|(a, _)| *a == address) {
            Some((_, account)) => {
                post_account(account.lamports(), account.owner(), account.data(), account.executable())
            }
            None => held(svm, &address),
        }
    };
    Outcome::Ran(Ran {
        err: None,
        logs: info.meta.logs,
        units_consumed: info.meta.compute_units_consumed,
        fee_lamports: info.meta.fee,
        accounts: wanted.iter().map(post).collect(),
    })
}

/// An account as the SVM holds it (not touched by the transaction).
fn held(svm: &LiteSVM, address: &Address) -> Option<PostAccount> {
    let account = held_ref(svm, address)?;
    post_account(account.lamports(), account.owner(), account.data(), account.executable())
}

/// `None` for an account without lamports: closed, or never there. A program's data (its
/// ELF, up to megabytes) is not copied out: nothing judges it, and a scan must not pay for it.
fn post_account(lamports: u64, owner: &Address, data: &[u8], executable: bool) -> Option<PostAccount> {
    let data = if executable { Vec::new() } else { data.to_vec() };
    (lamports > 0).then(|| PostAccount { lamports, owner: Pubkey(owner.to_bytes()), data, executable })
}
