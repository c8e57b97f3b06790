//! The rpc source's in-process execution (issue #44 item 1): a scanned transaction run by the
//! real runtime (`crate::runtime`, the thread's SVM) on the accounts the node holds, read as
//! bytes (`getMultipleAccounts`, `encoding: base64`), its post-state rendered as a node renders
//! it (jsonParsed) — so a sequence runs in order on one state, which `simulateTransaction`
//! cannot do (it has no state overrides).
//!
//! Owns: `run` (one transaction on the node's accounts under an `Overlay` of what earlier
//! transactions of a sequence left) and its answer `Run`. Called by `RpcSource` on the thread
//! that owns it.
//!
//! Invariant: the answer is the runtime's, or `Run::Cannot` naming why not — a program the
//! runtime does not hold (the SVM's own run: System, SPL Token and Token-2022, ATA, Memo,
//! Stake, lookup tables, Compute Budget…), an account in a layout read here only in part (a
//! token, stake or nonce account whose reading would not give back its bytes: an extension
//! this reader does not know) — and never a partial one; the caller then asks the node and
//! says which answered.
//! Invariant: bounded: the accounts given are the transaction's (at most 256) and its tables,
//! read 100 to a call as a node allows (`MULTIPLE_ACCOUNTS_LEN_MAX`), each answer within the
//! transport's byte cap and the scan's read budget; the runtime's own bounds hold past that. A
//! mint it does not name is read for its decimals only (never given to the runtime: a program
//! reads only the accounts passed to it), and an SPL Token mint's decimals, as the node
//! answered them, are kept (`RpcSource::mint_decimals`, `RPC_MINT_DECIMALS_CACHE_LEN`).
//! Reads account layouts with `ledger::demo::bytes` — the crate's one reader of on-chain
//! layouts (the official interface crates' unpackers), which the demo's model happens to own.
//! Deliberately absent: loading an upgradeable program's ELF from its program-data account
//! (such a transaction is `Cannot`: the node answers it); sysvars besides Clock (the SVM's own
//! Rent and EpochSchedule are mainnet's values; its StakeHistory is empty and its SlotHashes
//! made up, so a transaction invoking the Stake program is `Cannot` too); one read of the
//! accounts for a whole sequence (each run reads its own, within the scan's budget).

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;

use super::RpcSource;
use crate::config::MULTIPLE_ACCOUNTS_LEN_MAX;
use crate::ledger::demo::bytes;
use crate::ledger::demo::emit;
use crate::ledger::demo::state::{token_program_of, Acct, Data};
use crate::ledger::instruction::ids;
use crate::ledger::read::LedgerSource;
use crate::ledger::transaction::decode;
use crate::ledger::transaction::message::{self, Parsed};
use crate::ledger::wire::{Executor, RpcContext, SimulateValue, UiAccount, UiAccountData, Value, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;
use crate::runtime::{with_thread_runtime, Moment, Outcome, PostAccount, PreAccount};

/// Accounts as earlier transactions of a sequence left them, over the node's (`None`: closed).
pub(super) type Overlay = BTreeMap<Pubkey, Option<PreAccount>>;

/// The Clock sysvar: the moment the transaction runs at, read from the node.
const SYSVAR_CLOCK: &str = "SysvarC1ock11111111111111111111111111111111";

/// Slots an epoch holds on mainnet: the epoch of a slot when the node holds no Clock.
const SLOTS_PER_EPOCH: u64 = 432_000;

/// What one in-process run answered.
pub(super) enum Run {
    Ran(Executed),
    /// It could not run here; the reason names what is missing.
    Cannot(String),
}

/// A transaction that ran (to success or to its error).
pub(super) struct Executed {
    /// As a node answers `simulateTransaction`.
    pub answer: WithContext<SimulateValue>,
    /// What it leaves for the transactions after it (a failed one: its payer's fee).
    pub applies: Vec<(Pubkey, Option<PreAccount>)>,
    pub failed: bool,
}

/// `transaction` executed in process on the node's accounts under `overlay`, answered as a
/// node answers `simulateTransaction` for `wanted`.
pub(super) async fn run(
    source: &RpcSource,
    transaction: &[u8],
    wanted: &[Pubkey],
    overlay: &Overlay,
) -> Result<Run, LedgerError> {
    let parsed = message::parse(transaction).map_err(|e| LedgerError::Invalid(format!("transaction: {e}")))?;
    let table_keys: Vec<Pubkey> = parsed.lookups.iter().map(|l| l.table).collect();
    let (_, table_accounts) = read(source, &table_keys, overlay).await?;
    let Some(tables) = tables(&parsed, &table_accounts) else {
        return Ok(Run::Cannot("a lookup table it loads from is not readable on the node".into()));
    };
    let decoded = decode(&parsed, &tables).map_err(|e| LedgerError::Invalid(format!("transaction: {e}")))?;
    // Known before any account is read: no bytes are read for a run that cannot be made.
    if let Some(reason) = reads_history_sysvars(&decoded) {
        return Ok(Run::Cannot(reason));
    }
    let clock = Pubkey::parse(SYSVAR_CLOCK).map_err(|e| LedgerError::Invalid(format!("the Clock sysvar: {e}")))?;
    let mut named: BTreeSet<Pubkey> = decoded.resolved.accounts.iter().map(|a| a.address).collect();
    named.extend(table_keys.iter().copied());
    named.insert(clock);
    let named: Vec<Pubkey> = named.into_iter().collect();
    let (slot, mut held) = read(source, &named, overlay).await?;
    let mut accounts: BTreeMap<Pubkey, PreAccount> =
        named.iter().zip(held.drain(..)).filter_map(|(at, a)| a.map(|a| (*at, a))).collect();
    // A mint the transaction does not name is not given to the runtime (a program reads only
    // the accounts passed to it): it is read for its decimals alone, which never change — so
    // only the first time (`RpcSource::mint_decimals`), one round trip less after that.
    // A mint a transaction before it left (the overlay) is read from there, never the cache.
    let unnamed: BTreeSet<Pubkey> =
        accounts.values().filter_map(mint_of).filter(|m| !accounts.contains_key(m)).collect();
    let cachable: BTreeSet<Pubkey> = unnamed.iter().filter(|m| !overlay.contains_key(m)).copied().collect();
    let mut decimals = source.cached_decimals(&cachable);
    let mints: Vec<Pubkey> = unnamed.into_iter().filter(|m| !decimals.contains_key(m)).collect();
    let (_, mint_accounts) = read(source, &mints, overlay).await?;
    let read_mints: Vec<PreAccount> = mint_accounts.into_iter().flatten().collect();
    let known = decimals_of(accounts.values().chain(&read_mints));
    // Kept: only what the node answered, of SPL Token mints (which cannot be closed, so their
    // decimals never change at an address; a Token-2022 mint with a close authority can be
    // closed and made again with others) — never what a scanned transaction left.
    let from_node = |a: &&PreAccount| !overlay.contains_key(&a.address) && is_classic_mint(a);
    source.remember_decimals(&decimals_of(accounts.values().chain(&read_mints).filter(from_node)));
    decimals.extend(known);
    // It runs in the slot after the node's (where it would land), as the demo simulates.
    let now = accounts.remove(&clock).and_then(|c| moment_of(&c.data)).unwrap_or_else(|| moment_at(slot));
    let moment = Moment { slot: now.slot.saturating_add(1), ..now };
    if let Some(reason) = unread_layout(accounts.values().chain(&read_mints)) {
        return Ok(Run::Cannot(reason));
    }
    let pre: Vec<PreAccount> = accounts.into_values().collect();
    let ran = match with_thread_runtime(|runtime| runtime.execute(transaction, &pre, wanted, moment)) {
        Ok(Outcome::Ran(ran)) => ran,
        Ok(Outcome::Skipped(reason)) => return Ok(Run::Cannot(reason)),
        // The runtime's own bounds (accounts, bytes): the node may still run it.
        Err(e) => return Ok(Run::Cannot(format!("the runtime in process refused it ({e})"))),
    };
    let context = RpcContext { slot: moment.slot };
    let (units_consumed, fee) = (Some(ran.units_consumed), Some(ran.fee_lamports));
    if let Some(err) = ran.err {
        let err = simd_json::serde::to_owned_value(err).unwrap_or_else(|_| Value::from("runtime error"));
        let payer = parsed.static_keys.first().copied().unwrap_or_default();
        let paid = pre.iter().find(|a| a.address == payer).map(|a| {
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
    if let Some(reason) = unread_layout(after.iter().flatten()) {
        return Ok(Run::Cannot(reason));
    }
    // A mint it creates is read from its post-state.
    decimals.extend(decimals_of(after.iter().flatten()));
    // A token account whose mint's decimals are unknown would render as raw bytes — a balance
    // that seems to vanish: the node answers it instead.
    let unknown = after.iter().flatten().find(|a| mint_of(a).is_some_and(|m| !decimals.contains_key(&m)));
    if let Some(account) = unknown {
        return Ok(Run::Cannot(format!("the decimals of the mint of token account {} are not known", account.address)));
    }
    // A program answers as the node holds it (the runtime runs its own, not the node's bytes).
    let program = |at: &Pubkey| pre.iter().find(|p| p.address == *at && p.executable);
    let rendered: Vec<Option<UiAccount>> = wanted
        .iter()
        .zip(&after)
        .map(|(at, a)| match program(at) {
            Some(held) => Some(render(held, &decimals)),
            None => a.as_ref().map(|a| render(a, &decimals)),
        })
        .collect();
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

/// `addresses` as bytes: from `overlay` where a transaction before left them, else from the
/// node, 100 to a call; with the lowest context slot the node answered at.
async fn read(
    source: &RpcSource,
    addresses: &[Pubkey],
    overlay: &Overlay,
) -> Result<(u64, Vec<Option<PreAccount>>), LedgerError> {
    let asked: Vec<Pubkey> = addresses.iter().filter(|a| !overlay.contains_key(a)).copied().collect();
    let mut slot = u64::MAX;
    let mut from_node = BTreeMap::new();
    for chunk in asked.chunks(MULTIPLE_ACCOUNTS_LEN_MAX) {
        let page = source.get_multiple_accounts_base64(chunk).await?;
        slot = slot.min(page.context.slot);
        for (at, account) in chunk.iter().zip(page.value) {
            from_node.insert(*at, account.map(|a| raw(*at, &a)).transpose()?);
        }
    }
    let accounts = addresses
        .iter()
        .map(|at| match overlay.get(at) {
            Some(left) => left.clone(),
            None => from_node.remove(at).flatten(),
        })
        .collect();
    Ok((if slot == u64::MAX { 0 } else { slot }, accounts))
}

/// A node's base64 account as the runtime takes it.
fn raw(at: Pubkey, account: &UiAccount) -> Result<PreAccount, LedgerError> {
    let malformed = |what: &str| LedgerError::Malformed(format!("getMultipleAccounts (base64) of {at}: {what}"));
    let data = match &account.data {
        UiAccountData::Binary(parts) if parts.get(1).map(String::as_str) == Some("base64") => {
            let text = parts.first().ok_or_else(|| malformed("no data"))?;
            base64::engine::general_purpose::STANDARD.decode(text).map_err(|_| malformed("data is not base64"))?
        }
        _ => return Err(malformed("data is not [\"…\", \"base64\"]")),
    };
    let owner = account.owner.parse::<Pubkey>().map_err(|_| malformed("owner is not an address"))?;
    Ok(PreAccount { address: at, lamports: account.lamports, owner, data, executable: account.executable })
}

/// Each lookup table's addresses, in message order (`None` when one is absent or not a table).
fn tables(parsed: &Parsed, accounts: &[Option<PreAccount>]) -> Option<Vec<Vec<Pubkey>>> {
    accounts
        .iter()
        .take(parsed.lookups.len())
        .map(|a| match a.as_ref().map(|a| bytes::decode(a.owner, a.lamports, &a.data, |_| None).data) {
            Some(Data::LookupTable { addresses, .. }) => Some(addresses),
            _ => None,
        })
        .collect()
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

/// Why a transaction that invokes the Stake program is left to the node: stake deactivation
/// and withdrawal read the StakeHistory sysvar, which the runtime here holds empty (only the
/// Clock is read from the node).
fn reads_history_sysvars(decoded: &crate::ledger::transaction::Decoded) -> Option<String> {
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

/// The moment of `slot` when the node holds no Clock (a node always does; the local JSON-RPC
/// server over the demo does not): its epoch at mainnet's length, and now.
fn moment_at(slot: u64) -> Moment {
    let now_s = i64::try_from(crate::clock::now_unix_ms() / 1_000).unwrap_or(i64::MAX);
    Moment { slot, epoch: slot / SLOTS_PER_EPOCH, unix_timestamp_s: now_s }
}

/// The first account whose bytes the scan reads (a token account or mint, a stake or nonce
/// account) that this reader reads only in part: the node must answer for it.
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

impl RpcSource {
    /// The decimals this source keeps of `mints`, those it has.
    fn cached_decimals(&self, mints: &BTreeSet<Pubkey>) -> BTreeMap<Pubkey, u8> {
        let mut cache = self.mint_decimals.lock();
        mints.iter().filter_map(|m| cache.get(m).map(|d| (*m, *d))).collect()
    }

    /// Keeps `decimals` (immutable on chain) for later runs.
    fn remember_decimals(&self, decimals: &BTreeMap<Pubkey, u8>) {
        let mut cache = self.mint_decimals.lock();
        for (mint, d) in decimals {
            cache.put(*mint, *d);
        }
    }
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
    fn only_spl_token_mints_have_their_decimals_kept_and_stake_goes_to_the_node() {
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
