//! `simulateTransaction` on the demo ledger: a serialized transaction executed by the real
//! Solana runtime (`crate::runtime`, the SVM of the pinned `litesvm` crate, with the programs it
//! ships) on the demo's accounts in their on-chain layouts (`bytes`), its post-state read back
//! into the demo's model and rendered as a node renders it (`emit`).
//!
//! Owns: `simulate`, and the thread's `Runtime` (built at a thread's first simulation, ~14 ms,
//! then reused). Called on the thread that owns the `DemoLedger` (a listener thread serving a
//! scan, the scan lane, the local JSON-RPC server); pure over the ledger's state, which it
//! never changes.
//!
//! Invariant: the accounts the runtime is given are the transaction's (static and loaded),
//! its lookup tables and the mints of its token accounts, as the demo holds them; an account
//! the transaction leaves as it was renders exactly as `getMultipleAccounts` renders it.
//! Invariant: a program the runtime does not hold skips the whole simulation with a reason
//! naming it — never a partial result. The fee, the compute meter, rent and every program
//! rule are the runtime's own.
//! Deliberately absent: signature checks and the blockhash check (a scan simulates before
//! signing; `replaceRecentBlockhash` semantics).

use std::cell::RefCell;
use std::collections::BTreeMap;

use super::bytes;
use super::clock::{block_time, AS_OF_SLOT, SLOTS_PER_EPOCH};
use super::emit;
use super::keys::BUILTIN;
use super::state::{Acct, Data, State};
use super::DemoLedger;
use crate::ledger::read::Simulated;
use crate::ledger::transaction::message::{self, Parsed};
use crate::ledger::transaction::{decode, Decoded};
use crate::ledger::wire::{RpcContext, SimulateValue, UiAccount, Value, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;
use crate::runtime::{Moment, Outcome, PostAccount, PreAccount, Ran, Runtime};

/// The slot a simulation runs in: the one after the demo's last.
const SIMULATION_SLOT: u64 = AS_OF_SLOT + 1;

thread_local! {
    /// This thread's runtime, built at its first simulation.
    static RUNTIME: RefCell<Option<Runtime>> = const { RefCell::new(None) };
}

/// Builds this thread's runtime now (~14 ms and its programs' loading) rather than at the
/// thread's first simulation, so that no scan waits for it.
pub fn warm() {
    RUNTIME.with(|slot| {
        slot.borrow_mut().get_or_insert_with(Runtime::new);
    });
}

pub fn simulate(ledger: &DemoLedger, bytes: &[u8], wanted: &[Pubkey]) -> Result<Simulated, LedgerError> {
    let invalid = |e: String| LedgerError::Invalid(format!("transaction: {e}"));
    let parsed = message::parse(bytes).map_err(|e| invalid(e.to_string()))?;
    let tables = tables(ledger, &parsed)?;
    let decoded = decode(&parsed, &tables).map_err(|e| invalid(e.to_string()))?;
    let state = touched_state(ledger, &parsed, &decoded);
    let pre = match state.iter().map(|(at, a)| bytes::encode(*at, a)).collect::<Result<Vec<_>, _>>() {
        Ok(pre) => pre,
        Err(reason) => return Ok(Simulated::Skipped(reason)),
    };
    let moment = Moment {
        slot: SIMULATION_SLOT,
        epoch: SIMULATION_SLOT / SLOTS_PER_EPOCH,
        unix_timestamp_s: block_time(SIMULATION_SLOT),
    };
    let outcome = RUNTIME.with(|slot| {
        let mut slot = slot.borrow_mut();
        slot.get_or_insert_with(Runtime::new).execute(bytes, &pre, wanted, moment)
    });
    let ran = match outcome.map_err(|e| invalid(e.to_string()))? {
        Outcome::Skipped(reason) => return Ok(Simulated::Skipped(reason)),
        Outcome::Ran(ran) => ran,
    };
    let context = RpcContext { slot: SIMULATION_SLOT };
    Ok(Simulated::Ran(WithContext { context, value: value(ran, wanted, &state, &pre) }))
}

/// The answer a node gives: on failure its error and no accounts (nothing applied). `pre` is
/// `state` as the runtime was given it, in the same (address) order.
fn value(ran: Ran, wanted: &[Pubkey], state: &State, pre: &[PreAccount]) -> SimulateValue {
    let Ran { err, logs, units_consumed, accounts, .. } = ran;
    let err = err.map(|e| simd_json::serde::to_owned_value(e).unwrap_or_else(|_| Value::from("runtime error")));
    if err.is_some() {
        return SimulateValue { err, logs: Some(logs), accounts: None, units_consumed: Some(units_consumed) };
    }
    // A token account's bytes do not hold its decimals: its mint's do, before the transaction
    // or, for a mint it creates (absent before), after it.
    let created_mints: BTreeMap<Pubkey, u8> = wanted
        .iter()
        .zip(&accounts)
        .filter(|(at, _)| !state.contains_key(at))
        .filter_map(|(at, post)| {
            let post = post.as_ref()?;
            match bytes::decode(post.owner, post.lamports, &post.data, |_| None).data {
                Data::Mint(m) => Some((*at, m.decimals)),
                _ => None,
            }
        })
        .collect();
    let decimals = |mint: &Pubkey| match state.get(mint).map(|a| &a.data) {
        Some(Data::Mint(m)) => Some(m.decimals),
        _ => created_mints.get(mint).copied(),
    };
    let rendered: Vec<_> =
        wanted.iter().zip(accounts).map(|(at, post)| post.map(|p| rendered(at, p, state, pre, &decimals))).collect();
    SimulateValue { err, logs: Some(logs), accounts: Some(rendered), units_consumed: Some(units_consumed) }
}

/// `post` as the demo renders it: the account as held when the transaction left it as it was,
/// and always for a program or a sysvar (the runtime answers those with its own, not the
/// demo's: a scan cannot change them).
fn rendered(
    at: &Pubkey,
    post: PostAccount,
    state: &State,
    pre: &[PreAccount],
    decimals: &impl Fn(&Pubkey) -> Option<u8>,
) -> UiAccount {
    if let Some(before) = state.get(at) {
        if post.executable || before.executable() || before.owner == BUILTIN.sysvar {
            return emit::account(before);
        }
        let given = pre.binary_search_by(|p| p.address.cmp(at)).ok().and_then(|i| pre.get(i));
        let unchanged =
            given.is_some_and(|g| (g.lamports, g.owner, &g.data) == (post.lamports, post.owner, &post.data));
        if unchanged {
            return emit::account(before);
        }
    }
    emit::account(&bytes::decode(post.owner, post.lamports, &post.data, decimals))
}

/// The addresses of each lookup table the message loads from, as the demo holds them.
fn tables(ledger: &DemoLedger, parsed: &Parsed) -> Result<Vec<Vec<Pubkey>>, LedgerError> {
    parsed
        .lookups
        .iter()
        .map(|lookup| match ledger.account(&lookup.table).map(|a| a.data) {
            Some(Data::LookupTable { addresses, .. }) => Ok(addresses),
            _ => Err(LedgerError::Invalid(format!("{} is not an address lookup table", lookup.table))),
        })
        .collect()
}

/// The accounts the transaction names, and the mints of its token accounts (their decimals
/// and Token-2022 extensions decide what a transfer does).
fn touched_state(ledger: &DemoLedger, parsed: &Parsed, decoded: &Decoded) -> State {
    let mut state = State::new();
    let tables = parsed.lookups.iter().map(|l| &l.table);
    for address in decoded.resolved.accounts.iter().map(|a| &a.address).chain(tables) {
        if let Some(a) = ledger.account(address) {
            state.insert(*address, a);
        }
    }
    let mints: Vec<Pubkey> = state.values().filter_map(Acct::token).map(|t| t.mint).collect();
    for mint in mints {
        if let Some(a) = ledger.account(&mint) {
            state.entry(mint).or_insert(a);
        }
    }
    state
}
