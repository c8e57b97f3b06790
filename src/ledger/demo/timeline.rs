//! The demo's timeline: three archetype wallets whose ledger moves over time, so monitors
//! (which re-check watched wallets on an interval) can be tested and shown against the demo.
//!
//! Owns: `Timeline` — the timeline wallets' ordinary history (every demo ledger has it: plain
//! `demo` shows the three wallets as they are before any event), the events a timeline ledger
//! adds on top of it (the built-in timeline of `demo+timeline`, or a script's,
//! `config::SourceSpec::demo_timeline`), and which of them have happened; the catalogue of the
//! timeline archetypes (`TIMELINE_ARCHETYPES`) and the process-wide start
//! (`TIMELINE_START_UNIX_MS`). Built by `DemoLedger::new` on the caller's thread; read-only
//! afterwards, except that each read asks the clock which events have happened.
//!
//! When: an event `at_s` seconds after the timeline's start is visible from the wall-clock
//! instant `start + at_s` on (`now` from `crate::clock::now_unix_ms`, read once per ledger
//! call); `start` is the script's `start_unix_ms`, or else the instant the process opened its
//! first timeline ledger, so every ledger of the process (one per compute thread, the local
//! JSON-RPC server's) agrees. On the chain the timeline's start is the demo's as-of instant:
//! the event has block time `AS_OF_BLOCK_TIME_S + at_s` and slot `clock::slot_after(at_s)`
//! (the next free slot when events share a second), after every ordinary transaction.
//!
//! Invariant: the timeline's accounts meet no one else of the cast — their transactions name
//! only each other and builtin programs, token transfers and approves are unchecked (they never
//! name the DUSD mint) — so every other address's history, signatures and state are exactly
//! those of the demo without the timeline.
//! Invariant: same seed and same events → the same transactions, byte for byte, in any process
//! at any time (`TxId::Timeline` carries the event's action and second, so another script's
//! event has another signature); only which of them are visible depends on the clock.
//! Invariant: events run in order of `at_s` (ties in script order) on the state the ordinary
//! history and the earlier events left, so the visible events are always a prefix, balances
//! chain across them and the state shown is the one after the last visible event (a snapshot
//! per event count); a visible transaction is in the history of every non-builtin account it
//! names, and a transaction not yet visible exists nowhere (history, `getTransaction`,
//! `before`).
//! Deliberately absent: wall-clock block times (the demo's calendar stays its own, so an X-Ray
//! gains exactly the event's signal), events of any other wallet, and a context slot moving
//! with the clock (it is the as-of slot, or the last visible event's when later).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use crate::ledger::demo::actors::{Cast, Mint};
use crate::ledger::demo::clock::{self, MINUTES_PER_DAY};
use crate::ledger::demo::keys::{Rng, TxId};
use crate::ledger::demo::state::{token_program_of, Acct, State, TokenAcct};
use crate::ledger::demo::tx::{self, Compiled, Executed, Ix, Op, TxSpec};
use crate::ledger::demo::world::{World, LAMPORTS_PER_SOL};
use crate::ledger::model::TokenProgram;
use crate::pubkey::{Pubkey, Signature};

/// When the built-in timeline's delegate wallet approves, in seconds after the start.
pub const TIMELINE_DELEGATE_AT_S: u64 = 60;
/// When the built-in timeline's dust wallet gets dust from the look-alike, in seconds.
pub const TIMELINE_DUST_AT_S: u64 = 90;
/// Lamports of the look-alike's dust (at most the engine's dust bound).
const DUST_LAMPORTS: u64 = 1_000;
/// Base units of DUSD in the look-alike's dust.
const DUST_TOKEN_UNITS: u64 = 1;
/// Slot jitter of an ordinary step (below one minute; steps are days apart).
const STEP_JITTER_SLOTS: u64 = 100;
/// Largest time shift of a wallet's ordinary history.
const SHIFT_MINUTES_MAX: u64 = 720;
const LAMPORTS_PER_MILLI_SOL: u64 = 1_000_000;
const MS_PER_S: u64 = 1_000;

/// The start of every timeline of this process that does not fix its own: the wall clock when
/// the first timeline ledger was opened, Unix milliseconds.
pub static TIMELINE_START_UNIX_MS: OnceLock<u64> = OnceLock::new();

/// What a timeline wallet does at its event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimelineAction {
    /// `approve` of its DUSD account to an unknown delegate, for every token there is.
    ApproveDelegate,
    /// SOL and DUSD dust from a look-alike of the friend it pays.
    LookalikeDust,
}

impl TimelineAction {
    /// Its byte in `TxId::Timeline` (0 is the ordinary history's).
    fn code(self) -> u8 {
        match self {
            TimelineAction::ApproveDelegate => 1,
            TimelineAction::LookalikeDust => 2,
        }
    }
}

/// A timeline archetype: what it does, when the built-in timeline has it do it, and the
/// signals its X-Ray gains then (besides the `ArchetypeDef` ones, which hold before).
pub struct TimelineDef {
    pub name: &'static str,
    pub action: Option<TimelineAction>,
    pub builtin_at_s: Option<u64>,
    pub signals_after: &'static [&'static str],
}

/// The timeline archetypes, in `ARCHETYPES` order (their descriptions are there).
pub const TIMELINE_ARCHETYPES: &[TimelineDef] = &[
    TimelineDef {
        name: "timeline_delegate",
        action: Some(TimelineAction::ApproveDelegate),
        builtin_at_s: Some(TIMELINE_DELEGATE_AT_S),
        signals_after: &["open_token_delegation"],
    },
    TimelineDef {
        name: "timeline_dust",
        action: Some(TimelineAction::LookalikeDust),
        builtin_at_s: Some(TIMELINE_DUST_AT_S),
        signals_after: &["address_poisoning_received"],
    },
    TimelineDef { name: "timeline_quiet", action: None, builtin_at_s: None, signals_after: &[] },
];

/// One event: what happens, how many seconds after the start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineEvent {
    pub action: TimelineAction,
    pub at_s: u64,
}

/// The events a ledger's timeline has and its start, before they are built.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TimelinePlan {
    /// In script order.
    pub events: Vec<TimelineEvent>,
    /// `None`: the process-wide start.
    pub start_unix_ms: Option<u64>,
    /// Events that named no timeline archetype with an action (the spec's parse refuses them;
    /// kept as inconsistencies should the two lists ever part).
    pub errors: Vec<String>,
}

impl TimelinePlan {
    /// No events: the plain demo.
    pub fn none() -> TimelinePlan {
        TimelinePlan::default()
    }

    /// `demo+timeline`: each acting timeline archetype at its built-in second.
    pub fn builtin() -> TimelinePlan {
        let events = TIMELINE_ARCHETYPES
            .iter()
            .filter_map(|d| Some(TimelineEvent { action: d.action?, at_s: d.builtin_at_s? }))
            .collect();
        TimelinePlan { events, ..TimelinePlan::default() }
    }

    /// A script's events, `(wallet, at_s)` as the spec read them.
    pub fn script(start_unix_ms: Option<u64>, events: &[(&str, u64)]) -> TimelinePlan {
        let mut plan = TimelinePlan { start_unix_ms, ..TimelinePlan::default() };
        for (wallet, at_s) in events {
            match TIMELINE_ARCHETYPES.iter().find(|d| d.name == *wallet).and_then(|d| d.action) {
                Some(action) => plan.events.push(TimelineEvent { action, at_s: *at_s }),
                None => plan.errors.push(format!("timeline event of {wallet:?}, which has no action")),
            }
        }
        plan
    }
}

/// How many of a timeline's events have happened, read once per ledger call so that one
/// answer is of one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineMoment(usize);

/// An executed timeline transaction.
#[derive(Debug, Clone)]
pub struct TimelineTx {
    pub spec: TxSpec,
    pub compiled: Compiled,
    pub exec: Executed,
    pub id: TxId,
    pub signature: Signature,
}

#[derive(Debug, Clone)]
pub struct Timeline {
    /// The ordinary history (`txs[..history_len]`, always visible), then the events in order.
    txs: Vec<TimelineTx>,
    history_len: usize,
    /// When each event happens, milliseconds after the start (ascending, as `txs`).
    event_at_ms: Vec<u64>,
    /// Address → indices into `txs`, oldest first (builtin programs are not indexed).
    index: BTreeMap<Pubkey, Vec<u32>>,
    /// The timeline's own accounts after the ordinary history and `k` events (`states[k]`).
    states: Vec<State>,
    /// `None` when there is no event (then the clock is never read).
    start_unix_ms: Option<u64>,
    /// Effects that could not be applied as scripted; empty for a sound timeline.
    pub errors: Vec<String>,
}

fn days(n: u64) -> u64 {
    n * MINUTES_PER_DAY
}

fn transfer(from: Pubkey, to: Pubkey, lamports: u64) -> Ix {
    Ix::new(Op::Transfer { from, to, lamports })
}

/// An unchecked DUSD `transfer` between two owners' associated accounts (it names no mint).
fn token_transfer(mint: &Mint, from: Pubkey, to: Pubkey, amount: u64) -> Ix {
    let (source, destination) = (mint.ata(&from), mint.ata(&to));
    Ix::new(Op::TokenTransfer { source, destination, authority: from, amount, program: mint.program, checked: None })
}

fn memo(text: &str) -> Ix {
    Ix::new(Op::Memo(text.to_owned()))
}

struct Builder<'a> {
    seed: u64,
    cast: &'a Cast,
    /// The demo world's accounts: builtin programs are copied from it as transactions name them.
    world: &'a State,
    rng: Rng,
    state: State,
    /// Keys copied from the world (never the timeline's own accounts).
    borrowed: BTreeSet<Pubkey>,
    pending: Vec<TxSpec>,
    shift: u64,
}

impl Builder<'_> {
    fn wallet(&mut self, key: Pubkey, sol: u64) {
        self.state.insert(key, Acct::wallet(sol * LAMPORTS_PER_SOL));
    }

    /// A genesis DUSD account of `owner` holding `whole` tokens (no creation transaction:
    /// that would name the mint).
    fn holding(&mut self, owner: Pubkey, whole: u64) {
        let m = self.cast.dusd;
        let t = TokenAcct { amount: m.units(whole), exts: m.exts, ..TokenAcct::new(m.key, owner, m.decimals) };
        self.state.insert(m.ata(&owner), Acct::token_account(m.program, t));
    }

    fn genesis(&mut self) {
        let c = self.cast;
        self.wallet(c.timeline_funder, 50_000);
        self.holding(c.timeline_funder, 10_000_000);
        self.wallet(c.timeline_merchant, 10);
        self.holding(c.timeline_merchant, 0);
        self.wallet(c.timeline_friend, 25);
        self.holding(c.timeline_friend, 500);
        self.wallet(c.timeline_lookalike, 5);
        self.holding(c.timeline_lookalike, 1_000);
        for w in [c.timeline_delegate, c.timeline_dust, c.timeline_quiet] {
            self.holding(w, 0);
        }
    }

    /// `x` ± 10 %.
    fn vary(&mut self, x: u64) -> u64 {
        x / 100 * self.rng.range(90, 110)
    }

    fn sol(&mut self, milli: u64) -> u64 {
        self.vary(milli * LAMPORTS_PER_MILLI_SOL)
    }

    fn dusd(&mut self, whole: u64) -> u64 {
        let units = self.cast.dusd.units(whole);
        self.vary(units)
    }

    fn tx(&mut self, minutes_ago: u64, signers: &[Pubkey], ixs: Vec<Ix>) {
        let slot = clock::minutes_ago(minutes_ago + self.shift) - self.rng.below(STEP_JITTER_SLOTS);
        self.pending.push(TxSpec::new(slot, signers.to_vec(), ixs));
    }

    /// The three wallets' ordinary histories: funded in SOL and DUSD, then spending.
    fn histories(&mut self) {
        let c = self.cast;
        let (dusd, funder, merchant, friend) = (c.dusd, c.timeline_funder, c.timeline_merchant, c.timeline_friend);

        let w = c.timeline_delegate;
        self.shift = self.rng.below(SHIFT_MINUTES_MAX + 1);
        let (fund, tokens, pay, spend) = (self.sol(30_000), self.dusd(2_500), self.sol(1_200), self.dusd(150));
        self.tx(days(45), &[funder], vec![transfer(funder, w, fund)]);
        self.tx(days(44), &[funder], vec![token_transfer(&dusd, funder, w, tokens)]);
        self.tx(days(30), &[w], vec![transfer(w, merchant, pay), memo("order 1187")]);
        self.tx(days(12), &[w], vec![token_transfer(&dusd, w, merchant, spend)]);

        let w = c.timeline_dust;
        self.shift = self.rng.below(SHIFT_MINUTES_MAX + 1);
        let (fund, tokens, to_friend, back) = (self.sol(40_000), self.dusd(3_000), self.sol(2_000), self.sol(500));
        let tokens_to_friend = self.dusd(200);
        self.tx(days(50), &[funder], vec![transfer(funder, w, fund)]);
        self.tx(days(49), &[funder], vec![token_transfer(&dusd, funder, w, tokens)]);
        self.tx(days(35), &[w], vec![transfer(w, friend, to_friend)]);
        self.tx(days(20), &[friend], vec![transfer(friend, w, back), memo("thanks")]);
        self.tx(days(8), &[w], vec![token_transfer(&dusd, w, friend, tokens_to_friend)]);

        let w = c.timeline_quiet;
        self.shift = self.rng.below(SHIFT_MINUTES_MAX + 1);
        let (fund, tokens, pay, spend) = (self.sol(20_000), self.dusd(1_000), self.sol(800), self.dusd(50));
        self.tx(days(40), &[funder], vec![transfer(funder, w, fund)]);
        self.tx(days(39), &[funder], vec![token_transfer(&dusd, funder, w, tokens)]);
        self.tx(days(25), &[w], vec![transfer(w, merchant, pay), memo("subscription 12")]);
        self.tx(days(6), &[w], vec![token_transfer(&dusd, w, merchant, spend)]);
    }

    /// The transaction of `event` at `slot`.
    fn event(&self, event: TimelineEvent, slot: u64) -> TxSpec {
        let c = self.cast;
        match event.action {
            TimelineAction::ApproveDelegate => {
                let w = c.timeline_delegate;
                let approve = Op::TokenApprove {
                    account: c.dusd.ata(&w),
                    delegate: c.timeline_unknown_delegate,
                    owner: w,
                    amount: u64::MAX,
                    program: c.dusd.program,
                    checked: None,
                };
                TxSpec::new(slot, vec![w], vec![Ix::new(approve)])
            }
            TimelineAction::LookalikeDust => {
                let (fake, w) = (c.timeline_lookalike, c.timeline_dust);
                let dust = vec![transfer(fake, w, DUST_LAMPORTS), token_transfer(&c.dusd, fake, w, DUST_TOKEN_UNITS)];
                TxSpec::new(slot, vec![fake], dust)
            }
        }
    }

    /// Executes `spec` on the timeline's state (builtin programs copied in from the world
    /// first, so their balances in the meta are the world's) and records it as `id`.
    fn execute(&mut self, spec: TxSpec, id: TxId, out: &mut Timeline) {
        let compiled = tx::compile(&spec);
        for key in compiled.keys.iter().map(|k| k.pubkey) {
            if !self.state.contains_key(&key) {
                if let Some(a) = self.world.get(&key) {
                    self.state.insert(key, a.clone());
                    self.borrowed.insert(key);
                }
            }
        }
        let n = out.txs.len();
        let (exec, errors) = tx::execute(&spec, &compiled, &mut self.state, self.seed);
        out.errors.extend(errors.into_iter().map(|e| format!("timeline tx {n}: {}", e.0)));
        let index = u32::try_from(n).unwrap_or(u32::MAX);
        for key in compiled.keys.iter().map(|k| k.pubkey).filter(|k| !World::is_builtin(k)) {
            out.index.entry(key).or_default().push(index);
        }
        out.txs.push(TimelineTx { spec, compiled, exec, id, signature: id.signature(self.seed) });
    }

    /// The timeline's own accounts as they are now.
    fn snapshot(&self) -> State {
        self.state.iter().filter(|(k, _)| !self.borrowed.contains(k)).map(|(k, a)| (*k, a.clone())).collect()
    }
}

impl Timeline {
    /// The ordinary histories and `plan`'s events, executed in order on `world`'s builtins.
    pub fn build(seed: u64, cast: &Cast, world: &State, plan: TimelinePlan) -> Timeline {
        let mut b = Builder {
            seed,
            cast,
            world,
            rng: Rng::seeded(seed, "timeline", &[]),
            state: State::new(),
            borrowed: BTreeSet::new(),
            pending: Vec::new(),
            shift: 0,
        };
        b.genesis();
        b.histories();
        let mut history = std::mem::take(&mut b.pending);
        history.sort_by_key(|s| s.slot);
        for i in 1..history.len() {
            if history[i].slot <= history[i - 1].slot {
                history[i].slot = history[i - 1].slot + 1;
            }
        }
        let mut out = Timeline {
            txs: Vec::new(),
            history_len: history.len(),
            event_at_ms: Vec::new(),
            index: BTreeMap::new(),
            states: Vec::new(),
            start_unix_ms: None,
            errors: plan.errors,
        };
        for spec in history {
            let id = TxId::Timeline { n: u32::try_from(out.txs.len()).unwrap_or(u32::MAX), action: 0, at_s: 0 };
            b.execute(spec, id, &mut out);
        }
        out.states.push(b.snapshot());
        let mut events = plan.events;
        // Stable: events of one second keep their script order.
        events.sort_by_key(|e| e.at_s);
        let mut last_slot = out.txs.last().map_or(0, |t| t.spec.slot);
        for event in events {
            let slot = clock::slot_after(event.at_s).max(last_slot + 1);
            last_slot = slot;
            let spec = b.event(event, slot);
            let n = u32::try_from(out.txs.len()).unwrap_or(u32::MAX);
            b.execute(spec, TxId::Timeline { n, action: event.action.code(), at_s: event.at_s }, &mut out);
            out.event_at_ms.push(event.at_s.saturating_mul(MS_PER_S));
            out.states.push(b.snapshot());
        }
        if !out.event_at_ms.is_empty() {
            out.start_unix_ms = Some(
                plan.start_unix_ms.unwrap_or_else(|| *TIMELINE_START_UNIX_MS.get_or_init(crate::clock::now_unix_ms)),
            );
        }
        out
    }

    /// The timeline's start (Unix ms), when it has events.
    pub fn start_unix_ms(&self) -> Option<u64> {
        self.start_unix_ms
    }

    /// How many events have happened at the wall clock's `now`.
    pub fn moment(&self) -> TimelineMoment {
        match self.start_unix_ms {
            None => TimelineMoment(0),
            Some(start) => self.moment_at(start, crate::clock::now_unix_ms()),
        }
    }

    fn moment_at(&self, start_unix_ms: u64, now_unix_ms: u64) -> TimelineMoment {
        TimelineMoment(self.event_at_ms.partition_point(|at| start_unix_ms.saturating_add(*at) <= now_unix_ms))
    }

    /// Transactions visible at `m`: the ordinary history and the events that happened.
    fn visible_len(&self, m: TimelineMoment) -> usize {
        self.history_len + m.0.min(self.event_at_ms.len())
    }

    /// Whether `key` is one of the timeline's own accounts (at any moment).
    pub fn owns(&self, key: &Pubkey) -> bool {
        self.states.last().is_some_and(|s| s.contains_key(key))
    }

    fn state(&self, m: TimelineMoment) -> Option<&State> {
        self.states.get(m.0.min(self.event_at_ms.len()))
    }

    /// The account at `key` at `m`, if the timeline owns it and it holds lamports.
    pub fn account(&self, key: &Pubkey, m: TimelineMoment) -> Option<Acct> {
        self.state(m)?.get(key).filter(|a| a.lamports > 0).cloned()
    }

    /// The timeline's token accounts of `owner` under `program` at `m`.
    pub fn token_accounts(&self, owner: &Pubkey, program: TokenProgram, m: TimelineMoment) -> Vec<(Pubkey, Acct)> {
        let Some(state) = self.state(m) else { return Vec::new() };
        let owned =
            |a: &Acct| token_program_of(&a.owner) == Some(program) && a.token().is_some_and(|t| t.owner == *owner);
        state.iter().filter(|(_, a)| owned(a)).map(|(k, a)| (*k, a.clone())).collect()
    }

    /// The visible transactions naming `key` at `m`, oldest first.
    pub fn history(&self, key: &Pubkey, m: TimelineMoment) -> impl Iterator<Item = &TimelineTx> {
        let visible = self.visible_len(m);
        let indices = self.index.get(key).map(Vec::as_slice).unwrap_or(&[]);
        indices.iter().filter(move |&&n| (n as usize) < visible).filter_map(|&n| self.txs.get(n as usize))
    }

    /// The transaction `id` stands for, if it is visible at `m`.
    pub fn transaction(&self, id: TxId, m: TimelineMoment) -> Option<&TimelineTx> {
        let TxId::Timeline { n, .. } = id else { return None };
        let t = self.txs.get(n as usize).filter(|_| (n as usize) < self.visible_len(m))?;
        (t.id == id).then_some(t)
    }

    /// The slot a response at `m` is read at: the as-of slot, or the last visible event's.
    pub fn context_slot(&self, m: TimelineMoment) -> u64 {
        let last = self.visible_len(m).checked_sub(1).and_then(|i| self.txs.get(i)).map_or(0, |t| t.spec.slot);
        clock::AS_OF_SLOT.max(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SourceSpec;
    use crate::ledger::demo::actors::ARCHETYPES;

    fn build(plan: TimelinePlan) -> (Cast, Timeline) {
        let cast = Cast::new();
        let world = World::build(5, &cast);
        let timeline = Timeline::build(5, &cast, &world.state, plan);
        (cast, timeline)
    }

    fn scripted() -> TimelinePlan {
        let events = [("timeline_dust", 2), ("timeline_delegate", 1), ("timeline_dust", 2)];
        TimelinePlan::script(Some(1_000_000), &events)
    }

    #[test]
    fn the_spec_grammar_names_exactly_the_acting_timeline_archetypes() {
        let acting: Vec<&str> = TIMELINE_ARCHETYPES.iter().filter(|d| d.action.is_some()).map(|d| d.name).collect();
        assert_eq!(acting, SourceSpec::DEMO_SCRIPT_WALLETS);
        let quiet: Vec<&str> = TIMELINE_ARCHETYPES.iter().filter(|d| d.action.is_none()).map(|d| d.name).collect();
        assert_eq!(quiet, [SourceSpec::DEMO_SCRIPT_QUIET_WALLET]);
        for d in TIMELINE_ARCHETYPES {
            let def = ARCHETYPES.iter().find(|a| a.name == d.name).unwrap_or_else(|| panic!("{}", d.name));
            assert!(def.expected_signals.is_empty(), "{} is ordinary before its event", d.name);
            assert_eq!(d.action.is_some(), d.builtin_at_s.is_some());
        }
        let builtin = TimelinePlan::builtin();
        let at: Vec<u64> = builtin.events.iter().map(|e| e.at_s).collect();
        assert_eq!(at, [TIMELINE_DELEGATE_AT_S, TIMELINE_DUST_AT_S]);
        assert_eq!(TimelinePlan::script(None, &[("timeline_quiet", 1)]).errors.len(), 1);
    }

    #[test]
    fn plain_timeline_has_history_and_no_clock() {
        let (cast, t) = build(TimelinePlan::none());
        assert!(t.errors.is_empty(), "{:?}", t.errors);
        assert_eq!(t.start_unix_ms(), None);
        assert_eq!(t.moment(), TimelineMoment(0));
        assert_eq!(t.txs.len(), t.history_len);
        assert!(t.txs.iter().all(|x| x.spec.slot <= clock::AS_OF_SLOT));
        for w in [cast.timeline_delegate, cast.timeline_dust, cast.timeline_quiet] {
            // Funding in SOL, two payments (a token transfer in names the token account only).
            assert!(t.history(&w, TimelineMoment(0)).count() >= 3, "{w}");
            assert!(t.account(&w, TimelineMoment(0)).is_some_and(|a| a.lamports > 0));
        }
        assert_eq!(t.context_slot(TimelineMoment(0)), clock::AS_OF_SLOT);
    }

    #[test]
    fn events_are_visible_from_their_second_on_in_order() {
        let (cast, t) = build(scripted());
        assert!(t.errors.is_empty(), "{:?}", t.errors);
        assert_eq!(t.start_unix_ms(), Some(1_000_000));
        assert_eq!(t.event_at_ms, [1_000, 2_000, 2_000]);
        let at = |ms| t.moment_at(1_000_000, ms);
        assert_eq!(
            (at(0), at(1_000_999), at(1_001_000), at(1_001_999), at(1_002_000)),
            (TimelineMoment(0), TimelineMoment(0), TimelineMoment(1), TimelineMoment(1), TimelineMoment(3))
        );
        let events = &t.txs[t.history_len..];
        // The delegate's (at 1 s) first, then the two dusts in script order, one slot apart.
        assert_eq!(events[0].id, TxId::Timeline { n: t.history_len as u32, action: 1, at_s: 1 });
        assert_eq!(events[0].spec.slot, clock::slot_after(1));
        assert_eq!((events[1].spec.slot, events[2].spec.slot), (clock::slot_after(2), clock::slot_after(2) + 1));
        assert!(t.txs.windows(2).all(|w| w[0].spec.slot < w[1].spec.slot));
        let dust = cast.timeline_dust;
        assert_eq!(t.history(&dust, TimelineMoment(1)).count() + 2, t.history(&dust, TimelineMoment(3)).count());
        let lookalike = cast.timeline_lookalike;
        assert_eq!(t.history(&lookalike, TimelineMoment(1)).count(), 0, "nothing yet");
        assert_eq!(t.history(&lookalike, TimelineMoment(3)).count(), 2);
        let delegate = cast.timeline_unknown_delegate;
        assert!(!t.owns(&delegate) && t.history(&delegate, TimelineMoment(0)).count() == 0);
        assert_eq!(t.history(&delegate, TimelineMoment(1)).count(), 1);
        assert!(
            t.transaction(events[0].id, TimelineMoment(0)).is_none()
                && t.transaction(events[0].id, TimelineMoment(1)).is_some()
        );
        assert_eq!(t.context_slot(TimelineMoment(1)), events[0].spec.slot);
        let ata = cast.dusd.ata(&cast.timeline_delegate);
        let delegated = |m| t.account(&ata, m).and_then(|a| a.token().and_then(|x| x.delegate));
        assert_eq!((delegated(TimelineMoment(0)), delegated(TimelineMoment(1))), (None, Some(delegate)));
    }

    #[test]
    fn balances_chain_and_every_transaction_is_in_each_named_accounts_history() {
        let (_, t) = build(scripted());
        let mut last_post: BTreeMap<Pubkey, u64> = BTreeMap::new();
        for (n, x) in t.txs.iter().enumerate() {
            for (i, k) in x.compiled.keys.iter().enumerate() {
                if let Some(post) = last_post.get(&k.pubkey) {
                    assert_eq!(*post, x.exec.pre[i], "{} in tx {n}", k.pubkey);
                }
                last_post.insert(k.pubkey, x.exec.post[i]);
                if !World::is_builtin(&k.pubkey) {
                    assert!(
                        t.history(&k.pubkey, TimelineMoment(3)).any(|h| h.id == x.id),
                        "{} misses tx {n}",
                        k.pubkey
                    );
                }
            }
        }
        let last = t.states.last().unwrap();
        for (k, lamports) in last_post.iter().filter(|(k, _)| t.owns(k)) {
            assert_eq!(last.get(k).map_or(0, |a| a.lamports), *lamports, "{k}");
        }
    }

    #[test]
    fn same_seed_and_events_give_the_same_signatures_and_another_time_another() {
        let (_, a) = build(scripted());
        let (_, b) = build(scripted());
        let sigs = |t: &Timeline| t.txs.iter().map(|x| x.signature).collect::<Vec<_>>();
        assert_eq!(sigs(&a), sigs(&b));
        let (_, c) = build(TimelinePlan::script(Some(1_000_000), &[("timeline_dust", 3), ("timeline_delegate", 1)]));
        assert_eq!(sigs(&a)[..a.history_len], sigs(&c)[..c.history_len], "the ordinary history is the same");
        assert_ne!(sigs(&a)[a.history_len + 1], sigs(&c)[c.history_len + 1]);
    }

    #[test]
    fn the_process_wide_start_is_shared() {
        let (_, a) = build(TimelinePlan::builtin());
        let (_, b) = build(TimelinePlan::builtin());
        assert_eq!(a.start_unix_ms(), b.start_unix_ms());
        assert_eq!(a.start_unix_ms(), TIMELINE_START_UNIX_MS.get().copied());
    }
}
