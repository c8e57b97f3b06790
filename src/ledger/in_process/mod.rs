//! In-process execution of a scanned transaction (issue #44 item 1), for every source that
//! serves accounts as bytes (`LedgerSource::get_multiple_accounts_base64`: a node, a snapshot
//! recorded with them): the real runtime (`crate::runtime`, the thread's SVM) runs it on the
//! source's accounts, and its post-state is rendered as a node renders it (jsonParsed) — so a
//! sequence runs in order on one state, which `simulateTransaction` cannot do (it has no state
//! overrides). The demo runs its own accounts through the same runtime (`demo::simulate`).
//!
//! Owns: `run` (one transaction, on `Reads`: the source's accounts under what earlier
//! transactions of a sequence left), `single` and `sequence` (the answers a source gives, with
//! the one rule of what a sequence skips, `read::SequenceProgress`), and their answers. Its
//! parts: `reads` (what is read and kept), `programs` (the ELFs a transaction reaches). Called by the rpc and snapshot sources on the
//! thread that owns them.
//!
//! Invariant: the answer is the runtime's, or `Cannot` naming why not — a program the runtime
//! does not hold (the SVM's own run: System, SPL Token and Token-2022, ATA, Memo, Stake, lookup
//! tables, Compute Budget…), an account in a layout read here only in part (a token, stake or
//! nonce account whose reading would not give back its bytes: an extension this reader does
//! not know), a source that did not give the bytes — and never a partial one; the source then
//! answers otherwise (the node's `simulateTransaction`; a snapshot skips) and says which.
//! Invariant: bounded: the accounts given are the transaction's (at most 256) and its tables,
//! read once a call (`Reads`), 100 to a request as a node allows; the runtime's own bounds hold
//! past that. A mint it does not name is read for its decimals only (never given to the
//! runtime: a program reads only the accounts passed to it), and an SPL Token mint's decimals,
//! as the source answered them, may be kept (`MintDecimals`).
//! Reads account layouts with `ledger::demo::bytes` — the crate's one reader of on-chain
//! layouts (the official interface crates' unpackers), which the demo's model happens to own.
//! An upgradeable program the runtime does not run itself is loaded from its program-data
//! account (`programs`), kept by the thread's runtime by deploy slot, and runs only in the
//! executions that name it at that slot (`runtime::ProgramUse`).
//! Deliberately absent: sysvars besides Clock (the SVM's own Rent and
//! EpochSchedule are mainnet's values; its StakeHistory is empty and its SlotHashes made up, so
//! a transaction invoking the Stake program is `Cannot` too); interrupting an execution (it runs
//! synchronously on the calling thread, bounded by the compute meter).

mod programs;
mod reads;

use std::collections::{BTreeMap, BTreeSet};

pub use reads::MintDecimals;
use reads::Reads;

use crate::ledger::demo::bytes;
use crate::ledger::demo::emit;
use crate::ledger::demo::state::{token_program_of, Acct, Data};
use crate::ledger::instruction::ids;
use crate::ledger::read::{
    check_multiple_accounts_len, check_sequence_len, LedgerSource, SequenceMode, SequenceProgress, Simulated,
};
use crate::ledger::transaction::message::{self, Parsed};
use crate::ledger::transaction::{decode, Decoded};
use crate::ledger::wire::{Executor, RpcContext, SimulateValue, UiAccount, Value, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;
use crate::runtime::{with_thread_runtime, Moment, Outcome, PostAccount, PreAccount, ProgramUse};

/// The Clock sysvar: the moment the transaction runs at, read from the source.
const SYSVAR_CLOCK: &str = "SysvarC1ock11111111111111111111111111111111";

/// The Clock sysvar's address.
pub fn sysvar_clock() -> Result<Pubkey, LedgerError> {
    Pubkey::parse(SYSVAR_CLOCK).map_err(|e| LedgerError::Invalid(format!("the Clock sysvar: {e}")))
}

/// Slots an epoch holds on mainnet: the epoch of a slot when the source holds no Clock.
const SLOTS_PER_EPOCH: u64 = 432_000;

/// What one in-process run answered.
enum Run {
    Ran(Executed),
    /// It could not run here; the reason names what is missing.
    Cannot(String),
}

/// A transaction that ran (to success or to its error).
struct Executed {
    /// As a node answers `simulateTransaction`.
    answer: WithContext<SimulateValue>,
    /// What it leaves for the transactions after it (a failed one: its payer's fee).
    applies: Vec<(Pubkey, Option<PreAccount>)>,
    failed: bool,
}

/// One answer of a sequence run in process.
pub enum SequenceStep {
    Answered(Simulated),
    /// It could not run here (the first such; the ones after it are skipped naming it): the
    /// source answers it otherwise or skips it with this reason.
    Cannot(String),
}

/// Where a source's own reading failed: the reason a run could not be made, for the answer.
/// The source's own words may be logged by the source, never answered.
pub trait Unread: Fn(&LedgerError) -> String {}
impl<F: Fn(&LedgerError) -> String> Unread for F {}

/// `transaction` run alone: the runtime's answer, or why it could not run (`Err` of the inner
/// result). The transaction's own faults and the scan's spent read budget are the outer error
/// (a node would refuse them the same); any other failure to read is `unread`'s reason.
pub async fn single<S: LedgerSource>(
    source: &S,
    decimals: Option<&MintDecimals>,
    transaction: &[u8],
    wanted: &[Pubkey],
    unread: impl Unread,
) -> Result<Result<WithContext<SimulateValue>, String>, LedgerError> {
    check_multiple_accounts_len(wanted.len())?;
    Ok(match settle(run(source, decimals, &mut Reads::new(), transaction, wanted).await, &unread)? {
        Run::Ran(executed) => Ok(executed.answer),
        Run::Cannot(reason) => Err(reason),
    })
}

/// `transactions` in order on one state, in process: each on the source's accounts (read once
/// for all of them) as the ones before it left them. A failed one leaves its fee; in a bundle
/// the ones after it are skipped. The first that cannot run is `SequenceStep::Cannot`, and every one
/// after it is skipped naming it (`SequenceProgress`): what it leaves is not known here, and
/// running them on a state without it could make a drain split around it look harmless.
pub async fn sequence<S: LedgerSource>(
    source: &S,
    decimals: Option<&MintDecimals>,
    transactions: &[(&[u8], &[Pubkey])],
    mode: SequenceMode,
    unread: impl Unread,
) -> Result<Vec<SequenceStep>, LedgerError> {
    check_sequence_len(transactions.len())?;
    let mut reads = Reads::new();
    let mut out = Vec::with_capacity(transactions.len());
    let mut progress = SequenceProgress::new(mode);
    for (i, (bytes, wanted)) in transactions.iter().enumerate() {
        check_multiple_accounts_len(wanted.len())?;
        if let Some(skipped) = progress.skipped() {
            out.push(SequenceStep::Answered(skipped));
            continue;
        }
        match settle(run(source, decimals, &mut reads, bytes, wanted).await, &unread)? {
            Run::Ran(executed) => {
                if executed.failed {
                    progress.failed_at(i);
                }
                reads.leave(executed.applies);
                out.push(SequenceStep::Answered(Simulated::Ran(executed.answer)));
            }
            Run::Cannot(reason) => {
                progress.stopped_at(i);
                out.push(SequenceStep::Cannot(reason));
            }
        }
    }
    Ok(out)
}

/// Logs why a source's bytes could not be read (at most `LOGGED_DETAIL_BYTES_MAX` of it): what
/// a source said is never answered — it may name a provider's project or key.
pub fn log_unread(source: &'static str, e: &LedgerError) {
    let detail = e.to_string();
    let mut end = detail.len().min(LOGGED_DETAIL_BYTES_MAX);
    while !detail.is_char_boundary(end) {
        end -= 1;
    }
    tracing::warn!(source, detail = &detail[..end], "the accounts' bytes were not read");
}

/// The most of a source's error a log line keeps.
const LOGGED_DETAIL_BYTES_MAX: usize = 1_024;

/// A run's answer with the source's failures to read turned into `Cannot` (`unread`), and the
/// transaction's own faults and the spent read budget kept as errors.
fn settle(run: Result<Run, LedgerError>, unread: &impl Unread) -> Result<Run, LedgerError> {
    match run {
        Ok(run) => Ok(run),
        Err(e @ (LedgerError::Invalid(_) | LedgerError::OverBudget(_))) => Err(e),
        Err(e) => Ok(Run::Cannot(unread(&e))),
    }
}

/// What a transaction runs on: its accounts, the mints' decimals and the moment.
struct Loaded {
    parsed: Parsed,
    pre: Vec<PreAccount>,
    /// The upgradeable programs it reaches that the runtime must be given.
    programs: Vec<ProgramUse>,
    decimals: BTreeMap<Pubkey, u8>,
    moment: Moment,
}

/// `transaction` executed in process on the source's accounts under what `reads` holds,
/// answered as a node answers `simulateTransaction` for `wanted`.
async fn run<S: LedgerSource>(
    source: &S,
    cache: Option<&MintDecimals>,
    reads: &mut Reads,
    transaction: &[u8],
    wanted: &[Pubkey],
) -> Result<Run, LedgerError> {
    let loaded = match load(source, cache, reads, transaction).await? {
        Ok(loaded) => loaded,
        Err(reason) => return Ok(Run::Cannot(reason)),
    };
    let executed = with_thread_runtime(|runtime| {
        runtime.execute_with(transaction, &loaded.pre, &loaded.programs, wanted, loaded.moment)
    });
    let ran = match executed {
        Ok(Outcome::Ran(ran)) => ran,
        Ok(Outcome::Skipped(reason)) => return Ok(Run::Cannot(reason)),
        // The runtime's own bounds (accounts, bytes): the source may still answer otherwise.
        Err(e) => return Ok(Run::Cannot(format!("the runtime in process refused it ({e})"))),
    };
    let context = RpcContext { slot: loaded.moment.slot };
    let (units_consumed, fee) = (Some(ran.units_consumed), Some(ran.fee_lamports));
    if let Some(err) = ran.err {
        let err = simd_json::serde::to_owned_value(err).unwrap_or_else(|_| Value::from("runtime error"));
        let payer = loaded.parsed.static_keys.first().copied().unwrap_or_default();
        let paid = loaded.pre.iter().find(|a| a.address == payer).map(|a| {
            let mut a = a.clone();
            a.lamports = a.lamports.saturating_sub(ran.fee_lamports);
            a
        });
        let value = SimulateValue {
            err: Some(err),
            logs: Some(ran.logs),
            accounts: None,
            units_consumed,
            fee,
            executor: Some(Executor::Runtime),
        };
        let answer = WithContext { context, value };
        return Ok(Run::Ran(Executed { answer, applies: vec![(payer, paid)], failed: true }));
    }
    let after: Vec<Option<PreAccount>> =
        wanted.iter().zip(ran.accounts).map(|(at, post)| post.map(|p| PreAccount::from_post(*at, p))).collect();
    let rendered = match render_all(&loaded, wanted, &after) {
        Ok(rendered) => rendered,
        Err(reason) => return Ok(Run::Cannot(reason)),
    };
    let applies: Vec<(Pubkey, Option<PreAccount>)> =
        wanted.iter().copied().zip(after).filter(|(_, a)| a.as_ref().is_none_or(|a| !a.executable)).collect();
    let value = SimulateValue {
        err: None,
        logs: Some(ran.logs),
        accounts: Some(rendered),
        units_consumed,
        fee,
        executor: Some(Executor::Runtime),
    };
    Ok(Run::Ran(Executed { answer: WithContext { context, value }, applies, failed: false }))
}

/// The transaction's accounts, tables, mints' decimals and moment, read through `reads`; or
/// why it cannot run here (known before the runtime is asked).
async fn load<S: LedgerSource>(
    source: &S,
    cache: Option<&MintDecimals>,
    reads: &mut Reads,
    transaction: &[u8],
) -> Result<Result<Loaded, String>, LedgerError> {
    let parsed = message::parse(transaction).map_err(|e| LedgerError::Invalid(format!("transaction: {e}")))?;
    let table_keys: Vec<Pubkey> = parsed.lookups.iter().map(|l| l.table).collect();
    let table_accounts = reads.get(source, &table_keys).await?;
    let Some(tables) = reads::tables(&parsed, &table_accounts) else {
        return Ok(Err(format!("a lookup table it loads from is not readable on the {} source", source.name())));
    };
    let decoded = decode(&parsed, &tables).map_err(|e| LedgerError::Invalid(format!("transaction: {e}")))?;
    // Known before any account is read: no bytes are read for a run that cannot be made.
    if let Some(reason) = reads_history_sysvars(&decoded) {
        return Ok(Err(reason));
    }
    let clock = sysvar_clock()?;
    let mut named: BTreeSet<Pubkey> = decoded.resolved.accounts.iter().map(|a| a.address).collect();
    named.extend(table_keys.iter().copied());
    named.insert(clock);
    let named: Vec<Pubkey> = named.into_iter().collect();
    let held = reads.get(source, &named).await?;
    let mut accounts: BTreeMap<Pubkey, PreAccount> =
        named.iter().zip(held).filter_map(|(at, a)| a.map(|a| (*at, a))).collect();
    let (decimals, read_mints) = mints(source, cache, reads, &accounts).await?;
    // It runs in the slot after the source's (where it would land), as the demo simulates.
    let now = accounts.remove(&clock).and_then(|c| moment_of(&c.data)).unwrap_or_else(|| moment_at(reads.slot()));
    let moment = Moment { slot: now.slot.saturating_add(1), ..now };
    if let Some(reason) = unread_layout(accounts.values().chain(&read_mints)) {
        return Ok(Err(reason));
    }
    let programs = match programs::needed(source, reads, &accounts).await? {
        Ok(programs) => programs,
        Err(reason) => return Ok(Err(reason)),
    };
    Ok(Ok(Loaded { parsed, pre: accounts.into_values().collect(), programs, decimals, moment }))
}

/// The decimals of the mints of `accounts`' token accounts, and the mints read for them that
/// the transaction does not name. Such a mint is not given to the runtime (a program reads only
/// the accounts passed to it): it is read for its decimals alone, which never change — so, with
/// a `cache`, only the first time. A mint a transaction before it left is read from there,
/// never the cache; and only what the source answered of SPL Token mints is kept (they cannot
/// be closed; a Token-2022 mint with a close authority can, and be made again with others).
async fn mints<S: LedgerSource>(
    source: &S,
    cache: Option<&MintDecimals>,
    reads: &mut Reads,
    accounts: &BTreeMap<Pubkey, PreAccount>,
) -> Result<(BTreeMap<Pubkey, u8>, Vec<PreAccount>), LedgerError> {
    let unnamed: BTreeSet<Pubkey> =
        accounts.values().filter_map(mint_of).filter(|m| !accounts.contains_key(m)).collect();
    let cachable: BTreeSet<Pubkey> = unnamed.iter().filter(|m| !reads.was_left(m)).copied().collect();
    let mut decimals = cache.map(|c| c.get(&cachable)).unwrap_or_default();
    let asked: Vec<Pubkey> = unnamed.into_iter().filter(|m| !decimals.contains_key(m)).collect();
    let read_mints: Vec<PreAccount> = reads.get(source, &asked).await?.into_iter().flatten().collect();
    if let Some(cache) = cache {
        let from_source = |a: &&PreAccount| !reads.was_left(&a.address) && is_classic_mint(a);
        cache.remember(&decimals_of(accounts.values().chain(&read_mints).filter(from_source)));
    }
    decimals.extend(decimals_of(accounts.values().chain(&read_mints)));
    Ok((decimals, read_mints))
}

/// The accounts `wanted` as a node renders them after the run; or why they cannot be (a layout
/// read only in part, a token account whose mint's decimals are unknown: it would render as
/// raw bytes — a balance that seems to vanish).
fn render_all(
    loaded: &Loaded,
    wanted: &[Pubkey],
    after: &[Option<PreAccount>],
) -> Result<Vec<Option<UiAccount>>, String> {
    if let Some(reason) = unread_layout(after.iter().flatten()) {
        return Err(reason);
    }
    // A mint it creates is read from its post-state.
    let mut decimals = loaded.decimals.clone();
    decimals.extend(decimals_of(after.iter().flatten()));
    let unknown = after.iter().flatten().find(|a| mint_of(a).is_some_and(|m| !decimals.contains_key(&m)));
    if let Some(account) = unknown {
        return Err(format!("the decimals of the mint of token account {} are not known", account.address));
    }
    // A program answers as the source holds it (the runtime runs its own, not the source's bytes).
    let program = |at: &Pubkey| loaded.pre.iter().find(|p| p.address == *at && p.executable);
    Ok(wanted
        .iter()
        .zip(after)
        .map(|(at, a)| match program(at) {
            Some(held) => Some(render(held, &decimals)),
            None => a.as_ref().map(|a| render(a, &decimals)),
        })
        .collect())
}

/// A token account's mint (its first 32 bytes), whose decimals and extensions a transfer reads.
fn mint_of(account: &PreAccount) -> Option<Pubkey> {
    token_program_of(&account.owner)?;
    let data = account.data.get(..165)?;
    <[u8; 32]>::try_from(&data[..32]).ok().map(Pubkey)
}

/// Whether `account` is an SPL Token (not Token-2022) mint.
fn is_classic_mint(account: &PreAccount) -> bool {
    account.owner.to_string() == ids::TOKEN && account.data.len() == 82
}

/// Why a transaction that invokes the Stake program cannot run here: stake deactivation
/// and withdrawal read the StakeHistory sysvar, which the runtime here holds empty (only the
/// Clock is read from the source).
fn reads_history_sysvars(decoded: &Decoded) -> Option<String> {
    decoded.instructions.iter().any(|ix| ix.program_id.to_string() == ids::STAKE).then(|| {
        "it invokes the Stake program, which reads the StakeHistory sysvar the runtime in process does not hold"
            .to_owned()
    })
}

/// The Clock sysvar's slot, epoch and time (its bincode layout: slot, epoch start timestamp,
/// epoch, leader schedule epoch, unix timestamp — five 8-byte little-endian words).
fn moment_of(data: &[u8]) -> Option<Moment> {
    let word = |i: usize| data.get(i * 8..i * 8 + 8).and_then(|w| <[u8; 8]>::try_from(w).ok());
    let slot = u64::from_le_bytes(word(0)?);
    // Slot 0 is no live node's clock (the demo's sysvar is zeros): the context slot answers.
    (slot > 0).then_some(Moment {
        slot,
        epoch: u64::from_le_bytes(word(2)?),
        unix_timestamp_s: i64::from_le_bytes(word(4)?),
    })
}

/// The moment of `slot` when the source holds no Clock (a node always does; a snapshot and the
/// local JSON-RPC server over the demo do not): its epoch at mainnet's length, and now.
fn moment_at(slot: u64) -> Moment {
    let now_s = i64::try_from(crate::clock::now_unix_ms() / 1_000).unwrap_or(i64::MAX);
    Moment { slot, epoch: slot / SLOTS_PER_EPOCH, unix_timestamp_s: now_s }
}

/// The first account whose bytes the scan reads (a token account or mint, a stake or nonce
/// account) that this reader reads only in part: the source must answer it otherwise.
fn unread_layout<'a>(accounts: impl Iterator<Item = &'a PreAccount>) -> Option<String> {
    let read_by_scan = |owner: &Pubkey| {
        token_program_of(owner).is_some() || owner.to_string() == ids::STAKE || owner.to_string() == ids::SYSTEM
    };
    accounts.filter(|a| !a.executable && read_by_scan(&a.owner)).find_map(|a| {
        let read = bytes::decode(a.owner, a.lamports, &a.data, |_| Some(0));
        let partial = matches!(read.data, Data::Bytes(_)) && (a.owner.to_string() != ids::SYSTEM || a.data.len() == 80);
        partial.then(|| {
            format!(
                "account {} ({} bytes owned by {}) is in a layout the in-process run reads only in part",
                a.address,
                a.data.len(),
                a.owner
            )
        })
    })
}

/// The decimals of every mint among `accounts` (a token account's bytes do not hold them).
fn decimals_of<'a>(accounts: impl Iterator<Item = &'a PreAccount>) -> BTreeMap<Pubkey, u8> {
    accounts
        .filter(|a| token_program_of(&a.owner).is_some())
        .filter_map(|a| match bytes::decode(a.owner, a.lamports, &a.data, |_| None).data {
            Data::Mint(m) => Some((a.address, m.decimals)),
            _ => None,
        })
        .collect()
}

/// An account as a node renders it (jsonParsed).
fn render(account: &PreAccount, decimals: &BTreeMap<Pubkey, u8>) -> UiAccount {
    let read: Acct = bytes::decode(account.owner, account.lamports, &account.data, |m| decimals.get(m).copied());
    let mut rendered = emit::account(&read);
    rendered.executable = account.executable;
    rendered
}

impl PreAccount {
    /// What `post` leaves at `address`, as the next transaction of a sequence is given it.
    fn from_post(address: Pubkey, post: PostAccount) -> PreAccount {
        PreAccount { address, lamports: post.lamports, owner: post.owner, data: post.data, executable: post.executable }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_is_read_from_its_layout() {
        let clock = solana_clock::Clock {
            slot: 300_000_123,
            epoch_start_timestamp: 1,
            epoch: 694,
            leader_schedule_epoch: 695,
            unix_timestamp: 1_790_000_000,
        };
        let data = bincode::serialize(&clock).expect("serializes");
        assert_eq!(moment_of(&data), Some(Moment { slot: 300_000_123, epoch: 694, unix_timestamp_s: 1_790_000_000 }));
        assert_eq!(moment_of(&data[..39]), None, "short: not a clock");
        assert_eq!(moment_of(&[0; 40]), None, "zeros: no node's clock");
    }

    #[test]
    fn only_spl_token_mints_have_their_decimals_kept_and_stake_cannot_run_here() {
        let mint = |owner: &str| PreAccount {
            address: Pubkey([3; 32]),
            lamports: 1_461_600,
            owner: owner.parse().expect("id"),
            data: vec![1; 82],
            executable: false,
        };
        assert!(is_classic_mint(&mint(ids::TOKEN)));
        assert!(!is_classic_mint(&mint(ids::TOKEN_2022)), "a Token-2022 mint can be closed and made again");
        let stake = solana_stake_interface::instruction::deactivate_stake(
            &solana_address::Address::new_from_array([4; 32]),
            &solana_address::Address::new_from_array([5; 32]),
        );
        let bytes =
            message::compile(Pubkey([5; 32]), &[crate::instruction_parts!(stake)], [9; 32], false).expect("compiles");
        let decoded = decode(&message::parse(&bytes).expect("parses"), &[]).expect("decodes");
        assert!(reads_history_sysvars(&decoded).is_some_and(|r| r.contains("StakeHistory")));
    }

    /// The demo ledger, counting every address asked of it as bytes.
    struct Counting(crate::ledger::demo::DemoLedger, std::cell::RefCell<BTreeMap<Pubkey, u32>>);

    impl LedgerSource for Counting {
        fn name(&self) -> &'static str {
            "counting"
        }
        async fn get_account_info(&self, at: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
            self.0.get_account_info(at).await
        }
        async fn get_multiple_accounts(
            &self,
            at: &[Pubkey],
        ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
            self.0.get_multiple_accounts(at).await
        }
        async fn get_multiple_accounts_base64(
            &self,
            at: &[Pubkey],
        ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
            at.iter().for_each(|a| *self.1.borrow_mut().entry(*a).or_default() += 1);
            self.0.get_multiple_accounts_base64(at).await
        }
        async fn get_token_accounts_by_owner(
            &self,
            owner: &Pubkey,
            program: crate::ledger::model::TokenProgram,
        ) -> Result<WithContext<Vec<crate::ledger::wire::KeyedAccount>>, LedgerError> {
            self.0.get_token_accounts_by_owner(owner, program).await
        }
        async fn get_nonce_accounts_by_authority(
            &self,
            authority: &Pubkey,
        ) -> Result<WithContext<Vec<crate::ledger::wire::KeyedAccount>>, LedgerError> {
            self.0.get_nonce_accounts_by_authority(authority).await
        }
        async fn get_signatures_for_address(
            &self,
            at: &Pubkey,
            before: Option<&crate::pubkey::Signature>,
            limit: u32,
        ) -> Result<Vec<crate::ledger::wire::SignatureInfo>, LedgerError> {
            self.0.get_signatures_for_address(at, before, limit).await
        }
        async fn get_transactions(
            &self,
            signatures: &[crate::pubkey::Signature],
        ) -> Result<Vec<Option<crate::ledger::wire::TransactionResult>>, LedgerError> {
            self.0.get_transactions(signatures).await
        }
    }

    #[test]
    fn a_sequence_reads_each_account_once_and_runs_on_what_the_ones_before_left() {
        let demo = crate::ledger::demo::DemoLedger::new(crate::config::DEMO_SEED_DEFAULT);
        let me = demo.archetype("clean").expect("a clean wallet");
        let source = Counting(demo, Default::default());
        let (first, second) = (Pubkey([201; 32]), Pubkey([202; 32]));
        let transfer = |from: Pubkey, to: Pubkey, lamports: u64| {
            let sdk = message::sdk_address;
            let ix = solana_system_interface::instruction::transfer(&sdk(&from), &sdk(&to), lamports);
            message::compile(from, &[crate::instruction_parts!(ix)], [9; 32], false).expect("compiles")
        };
        // The second is paid by an address only the first funds: it runs on what the first left.
        let (one, two) = (transfer(me, first, 1_000_000_000), transfer(first, second, 500_000_000));
        let (wanted_one, wanted_two) = ([me, first], [first, second]);
        let items: Vec<(&[u8], &[Pubkey])> = vec![(&one, &wanted_one), (&two, &wanted_two)];
        let rt = crate::ledger::runtime().expect("runtime");
        let steps = rt
            .block_on(sequence(&source, None, &items, SequenceMode::Sequence, |e: &LedgerError| e.to_string()))
            .expect("answers");
        let lamports = |step: &SequenceStep, i: usize| match step {
            SequenceStep::Answered(Simulated::Ran(answer)) if answer.value.err.is_none() => {
                answer.value.accounts.as_ref().and_then(|a| a[i].as_ref()).map(|a| a.lamports)
            }
            _ => None,
        };
        assert_eq!(lamports(&steps[0], 1), Some(1_000_000_000));
        assert_eq!(lamports(&steps[1], 1), Some(500_000_000), "the second ran on what the first left");
        let asked = source.1.borrow();
        assert!(asked.values().all(|n| *n == 1), "each address asked once: {asked:?}");
        assert!(asked.contains_key(&me) && asked.contains_key(&first), "{asked:?}");
    }

    #[test]
    fn a_token_account_names_its_mint_and_a_wallet_none() {
        let mint = Pubkey([7; 32]);
        let mut data = vec![0; 165];
        data[..32].copy_from_slice(&mint.0);
        let token = PreAccount {
            address: Pubkey([1; 32]),
            lamports: 2_039_280,
            owner: ids::TOKEN.parse().expect("id"),
            data,
            executable: false,
        };
        assert_eq!(mint_of(&token), Some(mint));
        let wallet = PreAccount { owner: ids::SYSTEM.parse().expect("id"), data: Vec::new(), ..token };
        assert_eq!(mint_of(&wallet), None);
        assert_eq!(unread_layout([&wallet].into_iter()), None, "a wallet's empty data is read whole");
    }
}
