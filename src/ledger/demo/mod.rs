//! The demo ledger: a deterministic synthetic Solana ledger built in-process from a seed,
//! answering the `LedgerSource` methods in the exact jsonParsed wire shapes of a node.
//!
//! Owns: `DemoLedger` — the named archetype wallets (built eagerly by `new`, a few hundred
//! transactions), the busy trader's thousands of trades (a compact table, rendered on
//! demand), the background population of `config::DEMO_POPULATION_LEN` wallets (nothing
//! kept; derived per address) and the timeline wallets (`timeline`: ordinary histories, and
//! under `demo+timeline` or `demo+script=<file>` the events that happen to them as time
//! passes) — and the catalog `xray demo list` prints. Constructed on any thread (the CLI's or
//! a compute thread's) and then only read; `&self` methods are pure, except that a timeline
//! ledger's calls read the wall clock once each, to know which events have happened.
//!
//! Invariant: same seed → byte-identical responses (a timeline ledger's: same seed, same
//! events and the same events happened). Archetype, flagged, mint and auxiliary
//! addresses come from fixed names and never depend on the seed (see `actors`); the seed
//! drives amounts, timing jitter, the busy trader's trades and the background population.
//! Invariant: a transaction appears, with the same signature and content, in the history of
//! every non-builtin account it names; pre/post balances chain from one transaction to the
//! next and end at the current account state.
//! Invariant: an address that is neither an archetype, an auxiliary account, a background
//! account nor one of the timeline's counterparties does not exist (account `null`, no
//! history, no token accounts); the timeline's unknown delegate has no account, only the
//! approve naming it in its history once that has happened.
//! Deliberately absent: histories of real program ids and sysvars (a node's would be the whole
//! chain), program-data accounts of the synthetic programs, `rewards` and `status` in
//! transaction meta (the wire types do not carry them), and background transactions in the
//! histories of the demo mints (background token transfers are unchecked and never name them).

pub mod actors;
pub mod background;
pub mod busy;
pub mod clock;
pub mod emit;
pub mod keys;
pub mod bytes;
pub mod simulate;
pub mod state;
pub mod timeline;
pub mod tx;
pub mod world;

use serde::Serialize;

use crate::config::{self, SourceSpec};
use crate::ledger::model::TokenProgram;
use crate::ledger::read::LedgerSource;
use crate::ledger::wire::{KeyedAccount, RpcContext, SignatureInfo, TransactionResult, UiAccount, WithContext};
use crate::ledger::LedgerError;
use crate::pubkey::{Pubkey, Signature};

pub use actors::{demo_mints, flagged_addresses, sanctioned_addresses};
use actors::{Cast, ARCHETYPES};
use background::{Background, BgAccount};
use busy::Busy;
use keys::TxId;
use state::{token_program_of, Acct, State};
use timeline::{Timeline, TimelineMoment, TimelinePlan, TIMELINE_ARCHETYPES};
use tx::TxFailure;
use world::World;

/// One named archetype of the demo ledger, as `xray demo list` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArchetypeInfo {
    pub name: &'static str,
    pub address: String,
    pub description: &'static str,
    pub expected_signals: Vec<&'static str>,
    /// A timeline archetype's event under the built-in timeline (`demo+timeline`); absent for
    /// the others.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline_event: Option<TimelineEventInfo>,
}

/// When a timeline archetype's event happens under `demo+timeline` and what its X-Ray gains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEventInfo {
    /// Seconds after the timeline's start.
    pub at_s: u64,
    /// Signal kinds the X-Ray has from then on besides `expected_signals`.
    pub signals_after: Vec<&'static str>,
}

/// One entry of an address's history before it is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    slot: u64,
    signature: Signature,
    failure: Option<TxFailure>,
    memo: Option<String>,
}

pub struct DemoLedger {
    seed: u64,
    /// Boxed: some sixty addresses, which would make every `Source` value large.
    cast: Box<Cast>,
    world: World,
    busy: Busy,
    background: Background,
    timeline: Timeline,
}

impl DemoLedger {
    /// Builds the archetype world, the busy trader's table and the timeline; the background
    /// population is not materialized. `seed` is a demo seed, or a seed a timeline spec
    /// (`demo+timeline`, `demo+script=<file>`) stands for (`SourceSpec::demo_timeline`): then
    /// the ledger is that timeline's, of the seed it names.
    pub fn new(seed: u64) -> DemoLedger {
        let (seed, plan) = match SourceSpec::demo_timeline(seed) {
            None => (seed, TimelinePlan::none()),
            Some(timeline) => match &timeline.script {
                None => (timeline.seed, TimelinePlan::builtin()),
                Some(script) => (timeline.seed, TimelinePlan::script(script.start_unix_ms, &script.events)),
            },
        };
        let cast = Box::new(Cast::new());
        let mut world = World::build(seed, &cast);
        let setup_slot = world
            .index
            .get(&cast.busy_trader)
            .and_then(|txs| txs.last())
            .and_then(|&n| world.txs.get(n as usize))
            .map_or(0, |t| t.spec.slot);
        let busy = Busy::build(seed, &cast, &mut world.state, setup_slot);
        let background = Background::new(seed, &cast);
        let timeline = Timeline::build(seed, &cast, &world.state, plan);
        world.errors.extend(timeline.errors.iter().cloned());
        DemoLedger { seed, cast, world, busy, background, timeline }
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The instant (Unix ms) a timeline ledger's events count from; `None` without events.
    pub fn timeline_start_unix_ms(&self) -> Option<u64> {
        self.timeline.start_unix_ms()
    }

    /// Every archetype with its address, description and expected signals.
    pub fn archetype_list(&self) -> Vec<ArchetypeInfo> {
        ARCHETYPES
            .iter()
            .map(|a| ArchetypeInfo {
                name: a.name,
                address: self.cast.archetype(a.name).map(|k| k.to_string()).unwrap_or_default(),
                description: a.description,
                expected_signals: a.expected_signals.to_vec(),
                timeline_event: TIMELINE_ARCHETYPES.iter().find(|d| d.name == a.name).and_then(|d| {
                    Some(TimelineEventInfo { at_s: d.builtin_at_s?, signals_after: d.signals_after.to_vec() })
                }),
            })
            .collect()
    }

    /// The address of an archetype by name (`clean`, `busy_trader`, `token_mint`, …).
    pub fn archetype(&self, name: &str) -> Option<Pubkey> {
        self.cast.archetype(name)
    }

    /// The timeline's look-alike of a friend of `timeline_dust`: the dust's sender.
    pub fn timeline_lookalike(&self) -> Pubkey {
        self.cast.timeline_lookalike
    }

    /// Background wallet `index` (< `config::DEMO_POPULATION_LEN`).
    pub fn background_wallet(&self, index: u32) -> Option<Pubkey> {
        (index < config::DEMO_POPULATION_LEN).then(|| self.background.wallet(index))
    }

    /// Pairs of wallets with the relationship a comparison should find.
    pub fn linked_pairs(&self) -> Vec<(Pubkey, Pubkey, &'static str)> {
        let c = &self.cast;
        vec![
            (c.sybil_a, c.sybil_b, "likely_same_owner"),
            // Same first funder only: linked, not proven to be one owner.
            (c.sybil_c, c.sybil_d, "linked"),
            // Different funders; one fee payer, sweep destination and rent destination.
            (c.farm_a, c.farm_b, "likely_same_owner"),
            (c.clean, c.foreign_stake_authority, "unrelated"),
            (c.busy_trader, c.new_wallet, "unrelated"),
        ]
    }

    /// Every flagged (malicious) address the demo uses: `(address, label, kind)`.
    pub fn flagged_addresses() -> Vec<(Pubkey, &'static str, &'static str)> {
        flagged_addresses()
    }

    /// Every sanctioned address the demo uses: `(address, label, list)`.
    pub fn sanctioned_addresses() -> Vec<(Pubkey, &'static str, &'static str)> {
        sanctioned_addresses()
    }

    /// Every demo mint with its symbol.
    pub fn demo_mints() -> Vec<(Pubkey, &'static str)> {
        demo_mints()
    }

    /// Named counterparties, programs and pools that are neither archetypes nor flagged.
    pub fn auxiliary_accounts(&self) -> Vec<(Pubkey, &'static str, &'static str)> {
        self.cast.auxiliary()
    }

    /// Effects the archetype scripts (and the timeline) could not apply as written; empty for
    /// a sound world.
    pub fn inconsistencies(&self) -> &[String] {
        &self.world.errors
    }

    /// The account at `key` now (the simulation's view).
    fn account(&self, key: &Pubkey) -> Option<Acct> {
        self.account_at(key, self.timeline.moment())
    }

    fn account_at(&self, key: &Pubkey, m: TimelineMoment) -> Option<Acct> {
        match self.world.state.get(key) {
            Some(a) if a.lamports > 0 => Some(a.clone()),
            Some(_) => None,
            None if self.timeline.owns(key) => self.timeline.account(key, m),
            None => self.background.account(key),
        }
    }

    fn token_accounts(&self, owner: &Pubkey, program: TokenProgram, m: TimelineMoment) -> Vec<(Pubkey, Acct)> {
        let world = self.world.state.iter().filter(|(_, a)| {
            token_program_of(&a.owner) == Some(program) && a.token().is_some_and(|t| t.owner == *owner)
        });
        let mut out: Vec<(Pubkey, Acct)> = world.map(|(k, a)| (*k, a.clone())).collect();
        out.extend(self.timeline.token_accounts(owner, program, m));
        if let (Some(BgAccount::Wallet(i)), TokenProgram::Token) = (self.background.identify(owner), program) {
            out.extend(self.background.token_accounts(i));
        }
        out
    }

    /// Nonce accounts of the world naming `authority`, by address (the background population
    /// holds none). What `getProgramAccounts` with the nonce filters matches: System-owned,
    /// nonce-sized, the authority at its offset.
    fn nonce_accounts(&self, authority: &Pubkey) -> Vec<(Pubkey, Acct)> {
        let named = |a: &Acct| matches!(&a.data, state::Data::Nonce { authority: x, .. } if x == authority);
        let world = self.world.state.iter().filter(|(_, a)| a.lamports > 0 && named(a));
        world.map(|(k, a)| (*k, a.clone())).collect()
    }

    /// The slot of one of this ledger's transactions (that exists at `m`).
    fn slot_of(&self, signature: &Signature, m: TimelineMoment) -> Option<u64> {
        match TxId::decode(signature, self.seed)? {
            TxId::World(n) => self.world.txs.get(n as usize).map(|t| t.spec.slot),
            TxId::Busy(j) => self.busy.slot(j),
            id @ (TxId::BgPair { .. } | TxId::BgFund { .. }) => self.background.event(id).map(|e| e.slot),
            id @ TxId::Timeline { .. } => self.timeline.transaction(id, m).map(|t| t.spec.slot),
        }
    }

    /// Every transaction naming `key` at `m`, newest first (slot, then signature, descending).
    fn history(&self, key: &Pubkey, m: TimelineMoment) -> Vec<Entry> {
        let mut out: Vec<Entry> = Vec::new();
        for &n in self.world.index.get(key).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(t) = self.world.txs.get(n as usize) {
                out.push(Entry {
                    slot: t.spec.slot,
                    signature: t.signature,
                    failure: t.spec.failure,
                    memo: t.spec.memo(),
                });
            }
        }
        if self.busy.touches(key) {
            let all = *key == self.busy.trader();
            for id in self.busy.ids() {
                let TxId::Busy(j) = id else { continue };
                if !all && !self.busy.names(&self.cast, j, key) {
                    continue;
                }
                if let Some(spec) = self.busy.spec(&self.cast, j) {
                    let signature = id.signature(self.seed);
                    out.push(Entry { slot: spec.slot, signature, failure: spec.failure, memo: spec.memo() });
                }
            }
        }
        if let Some(account) = self.background.identify(key) {
            for (e, signature) in self.background.history(account) {
                out.push(Entry { slot: e.slot, signature, failure: None, memo: self.background.memo(&e) });
            }
        }
        for t in self.timeline.history(key, m) {
            out.push(Entry { slot: t.spec.slot, signature: t.signature, failure: t.spec.failure, memo: t.spec.memo() });
        }
        out.sort_by_key(|e| std::cmp::Reverse((e.slot, e.signature)));
        out
    }

    /// A state holding the world's version of every account a transaction names, for
    /// rendering a generated transaction on top of.
    fn base_state(&self, compiled: &tx::Compiled) -> State {
        compiled.keys.iter().filter_map(|k| self.world.state.get(&k.pubkey).map(|a| (k.pubkey, a.clone()))).collect()
    }

    fn transaction(&self, signature: &Signature, m: TimelineMoment) -> Option<TransactionResult> {
        let id = TxId::decode(signature, self.seed)?;
        let (spec, compiled, exec) = match id {
            TxId::World(n) => {
                let t = self.world.txs.get(n as usize)?;
                return Some(emit::transaction(&t.spec, &t.compiled, &t.exec, &t.signature, self.seed));
            }
            TxId::Timeline { .. } => {
                let t = self.timeline.transaction(id, m)?;
                return Some(emit::transaction(&t.spec, &t.compiled, &t.exec, &t.signature, self.seed));
            }
            TxId::Busy(j) => {
                let spec = self.busy.spec(&self.cast, j)?;
                let compiled = tx::compile(&spec);
                let mut state = self.base_state(&compiled);
                self.busy.prepare_state(&self.cast, j, &mut state);
                let (exec, _) = tx::execute(&spec, &compiled, &mut state, self.seed);
                (spec, compiled, exec)
            }
            TxId::BgPair { .. } | TxId::BgFund { .. } => {
                let event = self.background.event(id)?;
                let spec = self.background.spec(&event);
                let compiled = tx::compile(&spec);
                let mut state = self.base_state(&compiled);
                self.background.prepare_state(&event, &mut state);
                let (exec, _) = tx::execute(&spec, &compiled, &mut state, self.seed);
                (spec, compiled, exec)
            }
        };
        Some(emit::transaction(&spec, &compiled, &exec, signature, self.seed))
    }
}

fn keyed(accounts: Vec<(Pubkey, Acct)>) -> Vec<KeyedAccount> {
    accounts.into_iter().map(|(k, a)| KeyedAccount { pubkey: k.to_string(), account: emit::account(&a) }).collect()
}

impl DemoLedger {
    /// `value` as read at `m`: at the as-of slot, or at the last visible timeline event's.
    fn ctx<T>(&self, value: T, m: TimelineMoment) -> WithContext<T> {
        WithContext { context: RpcContext { slot: self.timeline.context_slot(m) }, value }
    }
}

impl LedgerSource for DemoLedger {
    fn name(&self) -> &'static str {
        crate::ledger::model::DEMO_SOURCE
    }

    fn synthetic(&self) -> bool {
        true
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        let m = self.timeline.moment();
        Ok(self.ctx(self.account_at(address, m).as_ref().map(emit::account), m))
    }

    async fn simulate_transaction(
        &self,
        transaction: &[u8],
        accounts: &[Pubkey],
    ) -> Result<crate::ledger::read::Simulated, LedgerError> {
        crate::ledger::read::check_multiple_accounts_len(accounts.len())?;
        simulate::simulate(self, transaction, accounts)
    }

    async fn simulate_sequence(
        &self,
        transactions: &[(&[u8], &[Pubkey])],
        mode: crate::ledger::read::SequenceMode,
    ) -> Result<Vec<crate::ledger::read::Simulated>, LedgerError> {
        crate::ledger::read::check_sequence_len(transactions.len())?;
        for (_, accounts) in transactions {
            crate::ledger::read::check_multiple_accounts_len(accounts.len())?;
        }
        simulate::simulate_sequence(self, transactions, mode)
    }

    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        crate::ledger::read::check_multiple_accounts_len(addresses.len())?;
        let m = self.timeline.moment();
        Ok(self.ctx(addresses.iter().map(|a| self.account_at(a, m).as_ref().map(emit::account)).collect(), m))
    }

    /// The demo's accounts in their on-chain layouts (`bytes::encode`), as a node answers
    /// `encoding: base64`: what an rpc source over the local JSON-RPC server executes on.
    async fn get_multiple_accounts_base64(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        crate::ledger::read::check_multiple_accounts_len(addresses.len())?;
        let m = self.timeline.moment();
        let encoded = |at: &Pubkey| -> Result<Option<UiAccount>, LedgerError> {
            let Some(account) = self.account_at(at, m) else { return Ok(None) };
            let bytes = bytes::encode(*at, &account).map_err(LedgerError::Invalid)?;
            Ok(Some(emit::binary_account(&bytes)))
        };
        Ok(self.ctx(addresses.iter().map(encoded).collect::<Result<Vec<_>, _>>()?, m))
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        let m = self.timeline.moment();
        Ok(self.ctx(keyed(self.token_accounts(owner, program, m)), m))
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        let m = self.timeline.moment();
        Ok(self.ctx(keyed(self.nonce_accounts(authority)), m))
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        crate::ledger::read::check_signatures_limit(limit)?;
        let m = self.timeline.moment();
        // As a node does: a `before` signature it does not know yields an empty page.
        let start = match before {
            None => None,
            Some(sig) => match self.slot_of(sig, m) {
                Some(slot) => Some((slot, *sig)),
                None => return Ok(Vec::new()),
            },
        };
        Ok(self
            .history(address, m)
            .into_iter()
            .filter(|e| start.is_none_or(|s| (e.slot, e.signature) < s))
            .take(limit as usize)
            .map(|e| emit::signature_info(&e.signature, e.slot, e.failure, e.memo))
            .collect())
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        if signatures.len() > config::HISTORY_DEPTH_MAX as usize {
            return Err(LedgerError::Invalid(format!(
                "at most {} transactions per call, got {}",
                config::HISTORY_DEPTH_MAX,
                signatures.len()
            )));
        }
        let m = self.timeline.moment();
        Ok(signatures.iter().map(|s| self.transaction(s, m)).collect())
    }
}
