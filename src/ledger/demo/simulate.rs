//! `simulateTransaction` on the demo ledger: a serialized transaction executed by the real
//! Solana runtime (`crate::runtime`, the SVM of the pinned `litesvm` crate, with the programs it
//! ships) on the demo's accounts in their on-chain layouts (`bytes`), its post-state read back
//! into the demo's model and rendered as a node renders it (`emit`).
//!
//! Owns: `simulate`, `simulate_sequence` (transactions in order on one state: each runs on an
//! `Overlay` of what the ones before it left, over the demo's accounts), on the thread's
//! `Runtime` (`runtime::with_thread_runtime`: built at a thread's first execution, ~14 ms). Called on the thread that owns the `DemoLedger` (a listener thread serving a
//! scan, the scan lane, the local JSON-RPC server); pure over the ledger's state, which it
//! never changes.
//!
//! Invariant: the accounts the runtime is given are the transaction's (static and loaded),
//! its lookup tables and the mints of its token accounts, as the demo holds them; an account
//! the transaction leaves as it was renders exactly as `getMultipleAccounts` renders it.
//! Invariant: a program the runtime does not hold skips the whole simulation with a reason
//! naming it — never a partial result. The fee, the compute meter, rent and every program
//! rule are the runtime's own.
//! Invariant: a sequence changes nothing of the demo: its overlay lives for the call; a
//! transaction that fails adds only its fee (its payer's) to it and in a bundle ends it; one
//! that cannot run ends the sequence in either mode (the ones after it skipped, naming it).
//! Deliberately absent: signature checks and the blockhash check (a scan simulates before
//! signing; `replaceRecentBlockhash` semantics).

use std::collections::BTreeMap;

use super::bytes;
use super::clock::{block_time, AS_OF_SLOT, SLOTS_PER_EPOCH};
use super::emit;
use super::keys::BUILTIN;
use super::state::{Acct, Data, State};
use super::DemoLedger;
use crate::ledger::read::{SequenceMode, SequenceProgress, Simulated};
use crate::ledger::transaction::message::{self, Parsed};
use crate::ledger::transaction::{decode, Decoded};
use crate::ledger::wire::{Executor, RpcContext, SimulateValue, UiAccount, Value, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::Pubkey;
use crate::runtime::{with_thread_runtime, Moment, Outcome, PostAccount, PreAccount, Ran};

/// The slot a simulation runs in: the one after the demo's last.
const SIMULATION_SLOT: u64 = AS_OF_SLOT + 1;

pub fn simulate(ledger: &DemoLedger, bytes: &[u8], wanted: &[Pubkey]) -> Result<Simulated, LedgerError> {
    Ok(simulate_on(ledger, &Overlay::new(), bytes, wanted)?.0)
}

/// Accounts as earlier transactions of a sequence left them, over the demo's (`None`: closed).
pub type Overlay = BTreeMap<Pubkey, Option<Acct>>;
/// What one transaction leaves of the accounts it names (`None`: closed).
type Applied = Vec<(Pubkey, Option<Acct>)>;

/// What a transaction run in a sequence leaves for the ones after it.
enum Applies {
    /// It succeeded: every account it names as it left them.
    All(Applied),
    /// It failed: its fee, paid by its fee payer (a failed transaction that lands pays it).
    FeeOnly(Applied),
    /// It did not run.
    Nothing,
}

/// `transactions` executed in order on one state: each on the demo's accounts as the ones
/// before it left them, answered as `simulate` answers one (its `wanted` accounts after it).
/// A transaction that fails applies nothing but its fee; in a bundle, the transactions after a
/// failed one are `Skipped`, naming it (nothing of a bundle lands, not even a fee).
pub fn simulate_sequence(
    ledger: &DemoLedger,
    transactions: &[(&[u8], &[Pubkey])],
    mode: SequenceMode,
) -> Result<Vec<Simulated>, LedgerError> {
    let mut overlay = Overlay::new();
    let mut out = Vec::with_capacity(transactions.len());
    let mut progress = SequenceProgress::new(mode);
    for (i, (bytes, wanted)) in transactions.iter().enumerate() {
        if let Some(skipped) = progress.skipped() {
            out.push(skipped);
            continue;
        }
        // One the demo cannot run (a program the runtime does not hold, a lookup table it does
        // not hold…) is skipped by its reason, and the ones after it too, naming it: running
        // them on a state without it could make a drain split around it look harmless.
        let (simulated, applies) = simulate_on(ledger, &overlay, bytes, wanted)
            .unwrap_or_else(|e| (Simulated::Skipped(e.to_string()), Applies::Nothing));
        match applies {
            Applies::All(applied) => overlay.extend(applied),
            Applies::FeeOnly(fee) => {
                progress.failed_at(i);
                overlay.extend(fee);
            }
            Applies::Nothing => progress.stopped_at(i),
        }
        out.push(simulated);
    }
    Ok(out)
}

/// One transaction on the demo's accounts under `overlay`: its answer, and what it applies.
fn simulate_on(
    ledger: &DemoLedger,
    overlay: &Overlay,
    bytes: &[u8],
    wanted: &[Pubkey],
) -> Result<(Simulated, Applies), LedgerError> {
    let invalid = |e: String| LedgerError::Invalid(format!("transaction: {e}"));
    let parsed = message::parse(bytes).map_err(|e| invalid(e.to_string()))?;
    let now = |address: &Pubkey| match overlay.get(address) {
        Some(over) => over.clone(),
        None => ledger.account(address),
    };
    let tables = tables(&now, &parsed)?;
    let decoded = decode(&parsed, &tables).map_err(|e| invalid(e.to_string()))?;
    let state = touched_state(&now, &parsed, &decoded);
    let pre = match state.iter().map(|(at, a)| bytes::encode(*at, a)).collect::<Result<Vec<_>, _>>() {
        Ok(pre) => pre,
        Err(reason) => return Ok((Simulated::Skipped(reason), Applies::Nothing)),
    };
    let moment = Moment {
        slot: SIMULATION_SLOT,
        epoch: SIMULATION_SLOT / SLOTS_PER_EPOCH,
        unix_timestamp_s: block_time(SIMULATION_SLOT),
    };
    let outcome = with_thread_runtime(|runtime| runtime.execute(bytes, &pre, wanted, moment));
    let ran = match outcome.map_err(|e| invalid(e.to_string()))? {
        Outcome::Skipped(reason) => return Ok((Simulated::Skipped(reason), Applies::Nothing)),
        Outcome::Ran(ran) => ran,
    };
    let applied = match ran.err {
        None => Applies::All(applied(&ran, wanted, &state)),
        Some(_) => {
            let payer = parsed.static_keys.first().copied().unwrap_or_default();
            let paid = now(&payer).map(|mut a| {
                a.lamports = a.lamports.saturating_sub(ran.fee_lamports);
                a
            });
            Applies::FeeOnly(vec![(payer, paid)])
        }
    };
    let context = RpcContext { slot: SIMULATION_SLOT };
    Ok((Simulated::Ran(WithContext { context, value: value(ran, wanted, &state, &pre) }), applied))
}

/// What a transaction that succeeded leaves of `wanted` (every account it may write: they are
/// all in the message), read back into the demo's model; programs and sysvars are never its.
fn applied(ran: &Ran, wanted: &[Pubkey], state: &State) -> Applied {
    let decimals = |mint: &Pubkey| match state.get(mint).map(|a| &a.data) {
        Some(Data::Mint(m)) => Some(m.decimals),
        _ => None,
    };
    wanted
        .iter()
        .zip(&ran.accounts)
        .filter(|(at, _)| state.get(at).is_none_or(|a| !a.executable() && a.owner != BUILTIN.sysvar))
        .filter(|(_, post)| post.as_ref().is_none_or(|p| !p.executable))
        .map(|(at, post)| (*at, post.as_ref().map(|p| bytes::decode(p.owner, p.lamports, &p.data, decimals))))
        .collect()
}

/// The answer a node gives: on failure its error and no accounts (nothing applied). `pre` is
/// `state` as the runtime was given it, in the same (address) order.
fn value(ran: Ran, wanted: &[Pubkey], state: &State, pre: &[PreAccount]) -> SimulateValue {
    let Ran { err, logs, units_consumed, accounts, fee_lamports } = ran;
    let err = err.map(|e| simd_json::serde::to_owned_value(e).unwrap_or_else(|_| Value::from("runtime error")));
    let (units_consumed, fee) = (Some(units_consumed), Some(fee_lamports));
    if err.is_some() {
        return SimulateValue {
            err,
            logs: Some(logs),
            accounts: None,
            units_consumed,
            fee,
            executor: Some(Executor::Runtime),
        };
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
    SimulateValue {
        err,
        logs: Some(logs),
        accounts: Some(rendered),
        units_consumed,
        fee,
        executor: Some(Executor::Runtime),
    }
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

/// The addresses of each lookup table the message loads from, as `now` holds them.
fn tables(now: &impl Fn(&Pubkey) -> Option<Acct>, parsed: &Parsed) -> Result<Vec<Vec<Pubkey>>, LedgerError> {
    parsed
        .lookups
        .iter()
        .map(|lookup| match now(&lookup.table).map(|a| a.data) {
            Some(Data::LookupTable { addresses, .. }) => Ok(addresses),
            _ => Err(LedgerError::Invalid(format!("{} is not an address lookup table", lookup.table))),
        })
        .collect()
}

/// The accounts the transaction names, and the mints of its token accounts (their decimals
/// and Token-2022 extensions decide what a transfer does).
fn touched_state(now: &impl Fn(&Pubkey) -> Option<Acct>, parsed: &Parsed, decoded: &Decoded) -> State {
    let mut state = State::new();
    let tables = parsed.lookups.iter().map(|l| &l.table);
    for address in decoded.resolved.accounts.iter().map(|a| &a.address).chain(tables) {
        if let Some(a) = now(address) {
            state.insert(*address, a);
        }
    }
    let mints: Vec<Pubkey> = state.values().filter_map(Acct::token).map(|t| t.mint).collect();
    for mint in mints {
        if let Some(a) = now(&mint) {
            state.entry(mint).or_insert(a);
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::transaction::message::{compile, sdk_address};

    const SOL: u64 = 1_000_000_000;

    fn transfer(from: Pubkey, to: Pubkey, lamports: u64) -> Vec<u8> {
        let ix = solana_system_interface::instruction::transfer(&sdk_address(&from), &sdk_address(&to), lamports);
        compile(from, &[crate::instruction_parts!(ix)], [9; 32], false).expect("compiles")
    }

    fn fresh(n: u8) -> Pubkey {
        Pubkey([n; 32])
    }

    /// Lamports of `wanted[at]` after the transaction, and its error.
    fn after(simulated: &Simulated, at: usize) -> (Option<u64>, bool) {
        match simulated {
            Simulated::Ran(answer) => {
                let value = &answer.value;
                let lamports = value.accounts.as_ref().and_then(|a| a[at].as_ref()).map(|a| a.lamports);
                (lamports, value.err.is_some())
            }
            Simulated::Skipped(reason) => panic!("skipped: {reason}"),
        }
    }

    #[test]
    fn a_sequence_runs_each_transaction_on_what_the_ones_before_it_left() {
        let ledger = DemoLedger::new(crate::config::DEMO_SEED_DEFAULT);
        let me = ledger.archetype("clean").expect("a clean wallet");
        let (first, second) = (fresh(201), fresh(202));
        // The second transaction is paid and signed by an address only the first one funds.
        let (one, two) = (transfer(me, first, SOL), transfer(first, second, SOL / 2));
        let (wanted_one, wanted_two) = ([me, first], [first, second]);
        let alone = simulate(&ledger, &two, &wanted_two).expect("answers");
        assert!(after(&alone, 0).1, "alone, the second has no fee payer: it fails");
        let items: Vec<(&[u8], &[Pubkey])> = vec![(&one, &wanted_one), (&two, &wanted_two)];
        let answers = simulate_sequence(&ledger, &items, SequenceMode::Sequence).expect("answers");
        assert_eq!(after(&answers[0], 1), (Some(SOL), false));
        assert_eq!(after(&answers[1], 0), (Some(SOL / 2 - 5_000), false), "half sent on, and its fee");
        assert_eq!(after(&answers[1], 1), (Some(SOL / 2), false));
        // The demo itself is as it was: a sequence applies to its own overlay only.
        assert!(after(&simulate(&ledger, &two, &wanted_two).expect("answers"), 0).1);
    }

    #[test]
    fn one_that_cannot_run_ends_the_sequence_naming_it() {
        let ledger = DemoLedger::new(crate::config::DEMO_SEED_DEFAULT);
        let me = ledger.archetype("clean").expect("a clean wallet");
        // A program the runtime does not hold: what it would leave is not known here.
        let unknown = solana_instruction::Instruction::new_with_bytes(sdk_address(&fresh(250)), &[1], vec![]);
        let unknown = compile(me, &[crate::instruction_parts!(unknown)], [9; 32], false).expect("compiles");
        let pay = transfer(me, fresh(204), SOL);
        let wanted = [me, fresh(204)];
        let items: Vec<(&[u8], &[Pubkey])> = vec![(&unknown, &wanted), (&pay, &wanted)];
        let answers = simulate_sequence(&ledger, &items, SequenceMode::Sequence).expect("answers");
        assert!(matches!(&answers[0], Simulated::Skipped(r) if r.contains("does not hold program")), "{answers:?}");
        assert!(
            matches!(&answers[1], Simulated::Skipped(r) if r.contains("transaction 0 could not run")),
            "{:?}",
            answers[1]
        );
    }

    #[test]
    fn a_failed_transaction_applies_nothing_but_its_fee_and_in_a_bundle_ends_it() {
        let ledger = DemoLedger::new(crate::config::DEMO_SEED_DEFAULT);
        let me = ledger.archetype("clean").expect("a clean wallet");
        let to = fresh(203);
        let (too_much, some) = (transfer(me, to, u64::MAX / 2), transfer(me, to, SOL));
        let wanted = [me, to];
        let items: Vec<(&[u8], &[Pubkey])> = vec![(&too_much, &wanted), (&some, &wanted)];
        let sequence = simulate_sequence(&ledger, &items, SequenceMode::Sequence).expect("answers");
        assert!(after(&sequence[0], 0).1, "more than the wallet holds fails");
        assert_eq!(after(&sequence[1], 1), (Some(SOL), false), "the next runs on the state without it");
        // …but with its fee paid (a failed transaction that lands pays it): the next one's
        // payer has two fees less than alone, where it pays only its own.
        let alone = simulate(&ledger, &some, &wanted).expect("answers");
        let fee = |s: &Simulated| match s {
            Simulated::Ran(answer) => answer.value.fee,
            Simulated::Skipped(reason) => panic!("skipped: {reason}"),
        };
        assert_eq!((fee(&sequence[0]), fee(&alone)), (Some(5_000), Some(5_000)), "the fee is answered");
        assert_eq!(after(&sequence[1], 0).0, after(&alone, 0).0.map(|l| l - 5_000), "the failed one's fee");
        let bundle = simulate_sequence(&ledger, &items, SequenceMode::Bundle).expect("answers");
        assert!(
            matches!(&bundle[1], Simulated::Skipped(reason) if reason.contains("transaction 0")),
            "{:?}",
            bundle[1]
        );
    }
}
