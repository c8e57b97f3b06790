//! Demo transactions as instructions with effects: what each instruction touches, how a
//! transaction's account keys are compiled, and how executing it changes account state.
//!
//! Owns: `Op` (one instruction of a program the demo uses), `Ix` (an outer instruction and
//! its CPIs), `TxSpec` (a whole transaction), `compile` (account keys in message order,
//! with address-lookup-table loading) and `execute` (fee, effects, pre/post balances).
//! Called from the demo ledger's thread while building the world and when a lazily generated
//! transaction is read.
//!
//! Invariant: pre/post lamports and token balances are measured from the state the effects
//! are applied to, so a transaction's meta always agrees with its instructions. A failed
//! transaction (`failure` set) charges only the fee, as on chain.
//! Invariant: effects never panic; an impossible effect (overdraft, missing account) is
//! applied saturating and reported as an `ExecError` so builders can test for none.
//! Deliberately absent: signature checks and program rules beyond what the demo needs.

use crate::ledger::demo::clock;
use crate::ledger::demo::keys::{self, BUILTIN};
use crate::ledger::demo::state::{
    rent, AccountExts, Acct, Data, Delegation, MintExt, StakeAcct, State, TokenAcct, STAKE_LEN,
};
use crate::ledger::model::TokenProgram;
use crate::pubkey::Pubkey;

/// Lamports per signature (the base fee).
pub const LAMPORTS_PER_SIGNATURE: u64 = 5_000;
/// Compute units a transaction may use without a compute-budget instruction.
pub const COMPUTE_UNITS_DEFAULT: u64 = 200_000;
/// Micro-lamports in a lamport (compute-unit price unit).
const MICRO_LAMPORTS_PER_LAMPORT: u64 = 1_000_000;

/// Mint and decimals of a `…Checked` token instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    pub mint: Pubkey,
    pub decimals: u8,
}

/// One instruction, of a program the demo speaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Transfer {
        from: Pubkey,
        to: Pubkey,
        lamports: u64,
    },
    CreateAccount {
        funder: Pubkey,
        account: Pubkey,
        lamports: u64,
        space: u64,
        owner: Pubkey,
    },
    Assign {
        account: Pubkey,
        owner: Pubkey,
    },
    NonceInit {
        nonce: Pubkey,
        authority: Pubkey,
    },
    NonceAdvance {
        nonce: Pubkey,
        authority: Pubkey,
    },
    NonceAuthorize {
        nonce: Pubkey,
        authority: Pubkey,
        new_authority: Pubkey,
    },
    NonceWithdraw {
        nonce: Pubkey,
        authority: Pubkey,
        to: Pubkey,
        lamports: u64,
    },
    StakeInit {
        stake: Pubkey,
        staker: Pubkey,
        withdrawer: Pubkey,
    },
    StakeDelegate {
        stake: Pubkey,
        vote: Pubkey,
        authority: Pubkey,
    },
    StakeAuthorize {
        stake: Pubkey,
        authority: Pubkey,
        new_authority: Pubkey,
        withdrawer: bool,
    },
    /// The associated-token-account program's `create`; its CPIs do the work.
    AtaCreate {
        funder: Pubkey,
        account: Pubkey,
        wallet: Pubkey,
        mint: Pubkey,
        program: TokenProgram,
    },
    /// `getAccountDataSize` (a CPI of `AtaCreate`).
    TokenDataSize {
        mint: Pubkey,
        program: TokenProgram,
        exts: AccountExts,
    },
    TokenImmutableOwner {
        account: Pubkey,
        program: TokenProgram,
    },
    /// `initializeAccount3`.
    TokenInitAccount {
        account: Pubkey,
        mint: Pubkey,
        owner: Pubkey,
        program: TokenProgram,
        decimals: u8,
        exts: AccountExts,
    },
    /// `mintToChecked`.
    TokenMintTo {
        mint: Pubkey,
        account: Pubkey,
        authority: Pubkey,
        amount: u64,
        decimals: u8,
        program: TokenProgram,
    },
    /// `thawAccount`, by the mint's freeze authority.
    TokenThaw {
        account: Pubkey,
        mint: Pubkey,
        authority: Pubkey,
        program: TokenProgram,
    },
    /// `closeAccount` of an empty token account: its rent goes to `destination`.
    TokenClose {
        account: Pubkey,
        destination: Pubkey,
        owner: Pubkey,
        program: TokenProgram,
    },
    TokenTransfer {
        source: Pubkey,
        destination: Pubkey,
        authority: Pubkey,
        amount: u64,
        program: TokenProgram,
        checked: Option<Checked>,
    },
    TokenApprove {
        account: Pubkey,
        delegate: Pubkey,
        owner: Pubkey,
        amount: u64,
        program: TokenProgram,
        checked: Option<Checked>,
    },
    /// `setAuthority` with `authorityType: accountOwner`.
    TokenSetOwner {
        account: Pubkey,
        authority: Pubkey,
        new_owner: Pubkey,
        program: TokenProgram,
    },
    /// `setAuthority` with `authorityType: closeAccount` (`None`: no close authority).
    TokenSetCloseAuthority {
        account: Pubkey,
        authority: Pubkey,
        new_authority: Option<Pubkey>,
        program: TokenProgram,
    },
    TokenRevoke {
        account: Pubkey,
        owner: Pubkey,
        program: TokenProgram,
    },
    Memo(String),
    ComputeLimit(u32),
    ComputePrice(u64),
    /// An instruction of a program no node parses; `moves` are the lamports the program
    /// moves between accounts it owns or controls (a drainer's sweep).
    Raw {
        program: Pubkey,
        accounts: Vec<(Pubkey, bool)>,
        data: Vec<u8>,
        name: &'static str,
        moves: Vec<(Pubkey, Pubkey, u64)>,
    },
}

/// An outer instruction and its cross-program invocations, each with its stack height (2+).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ix {
    pub op: Op,
    pub inner: Vec<(u32, Op)>,
}

impl Ix {
    pub fn new(op: Op) -> Ix {
        Ix { op, inner: Vec::new() }
    }

    /// The outer instruction followed by its CPIs.
    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        std::iter::once(&self.op).chain(self.inner.iter().map(|(_, op)| op))
    }
}

/// Which outer instruction failed, with which custom program error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxFailure {
    pub index: u8,
    pub code: u32,
}

/// An address lookup table a v0 transaction loads accounts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub table: Pubkey,
    pub addresses: Vec<Pubkey>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxSpec {
    pub slot: u64,
    /// The first signer pays the fee.
    pub signers: Vec<Pubkey>,
    pub ixs: Vec<Ix>,
    pub failure: Option<TxFailure>,
    /// `Some` makes it a version-0 transaction (possibly with an empty table use).
    pub lookup: Option<Lookup>,
}

impl TxSpec {
    pub fn new(slot: u64, signers: Vec<Pubkey>, ixs: Vec<Ix>) -> TxSpec {
        TxSpec { slot, signers, ixs, failure: None, lookup: None }
    }

    pub fn fee_payer(&self) -> Pubkey {
        self.signers.first().copied().unwrap_or_default()
    }

    /// The compute-unit limit and price (micro-lamports per unit) its compute-budget
    /// instructions set, or the defaults.
    pub fn compute_budget(&self) -> (u64, u64) {
        let mut limit = COMPUTE_UNITS_DEFAULT;
        let mut price = 0u64;
        for op in self.ixs.iter().map(|ix| &ix.op) {
            match op {
                Op::ComputeLimit(l) => limit = u64::from(*l),
                Op::ComputePrice(p) => price = *p,
                _ => {}
            }
        }
        (limit, price)
    }

    /// Base fee per signature plus the priority fee the compute-budget instructions ask for.
    pub fn fee(&self) -> u64 {
        let (limit, price) = self.compute_budget();
        // Saturating: a simulated transaction's limit and price are a client's numbers.
        let priority = limit.saturating_mul(price).div_ceil(MICRO_LAMPORTS_PER_LAMPORT);
        LAMPORTS_PER_SIGNATURE.saturating_mul(self.signers.len() as u64).saturating_add(priority)
    }

    /// The memo text of the first memo instruction, as `getSignaturesForAddress` reports it.
    pub fn memo(&self) -> Option<String> {
        self.ixs.iter().find_map(|ix| match &ix.op {
            Op::Memo(text) => Some(memo_entry(text)),
            _ => None,
        })
    }
}

/// A memo as `getSignaturesForAddress` reports it: `[length] text`.
pub fn memo_entry(text: &str) -> String {
    format!("[{}] {}", text.len(), text)
}

impl Op {
    pub fn program(&self) -> Pubkey {
        let b = &*BUILTIN;
        match self {
            Op::Transfer { .. }
            | Op::CreateAccount { .. }
            | Op::Assign { .. }
            | Op::NonceInit { .. }
            | Op::NonceAdvance { .. }
            | Op::NonceAuthorize { .. }
            | Op::NonceWithdraw { .. } => b.system,
            Op::StakeInit { .. } | Op::StakeDelegate { .. } | Op::StakeAuthorize { .. } => b.stake,
            Op::AtaCreate { .. } => b.ata,
            Op::TokenDataSize { program, .. }
            | Op::TokenImmutableOwner { program, .. }
            | Op::TokenInitAccount { program, .. }
            | Op::TokenMintTo { program, .. }
            | Op::TokenThaw { program, .. }
            | Op::TokenClose { program, .. }
            | Op::TokenTransfer { program, .. }
            | Op::TokenApprove { program, .. }
            | Op::TokenSetOwner { program, .. }
            | Op::TokenSetCloseAuthority { program, .. }
            | Op::TokenRevoke { program, .. } => b.token_program(*program),
            Op::Memo(_) => b.memo,
            Op::ComputeLimit(_) | Op::ComputePrice(_) => b.compute_budget,
            Op::Raw { program, .. } => *program,
        }
    }

    /// Accounts the instruction passes, with whether each is writable, in instruction order.
    pub fn metas(&self) -> Vec<(Pubkey, bool)> {
        let b = &*BUILTIN;
        match self {
            Op::Transfer { from, to, .. } => vec![(*from, true), (*to, true)],
            Op::CreateAccount { funder, account, .. } => vec![(*funder, true), (*account, true)],
            Op::Assign { account, .. } => vec![(*account, true)],
            Op::NonceInit { nonce, .. } => {
                vec![(*nonce, true), (b.sysvar_recent_blockhashes, false), (b.sysvar_rent, false)]
            }
            Op::NonceAdvance { nonce, authority } => {
                vec![(*nonce, true), (b.sysvar_recent_blockhashes, false), (*authority, false)]
            }
            Op::NonceAuthorize { nonce, authority, .. } => vec![(*nonce, true), (*authority, false)],
            Op::NonceWithdraw { nonce, authority, to, .. } => vec![
                (*nonce, true),
                (*to, true),
                (b.sysvar_recent_blockhashes, false),
                (b.sysvar_rent, false),
                (*authority, false),
            ],
            Op::StakeInit { stake, .. } => vec![(*stake, true), (b.sysvar_rent, false)],
            Op::StakeDelegate { stake, vote, authority } => vec![
                (*stake, true),
                (*vote, false),
                (b.sysvar_clock, false),
                (b.sysvar_stake_history, false),
                (b.stake_config, false),
                (*authority, false),
            ],
            Op::StakeAuthorize { stake, authority, .. } => {
                vec![(*stake, true), (b.sysvar_clock, false), (*authority, false)]
            }
            Op::AtaCreate { funder, account, wallet, mint, program } => vec![
                (*funder, true),
                (*account, true),
                (*wallet, false),
                (*mint, false),
                (b.system, false),
                (b.token_program(*program), false),
            ],
            Op::TokenDataSize { mint, .. } => vec![(*mint, false)],
            Op::TokenImmutableOwner { account, .. } => vec![(*account, true)],
            Op::TokenInitAccount { account, mint, .. } => vec![(*account, true), (*mint, false)],
            Op::TokenMintTo { mint, account, authority, .. } => {
                vec![(*mint, true), (*account, true), (*authority, false)]
            }
            Op::TokenThaw { account, mint, authority, .. } => {
                vec![(*account, true), (*mint, false), (*authority, false)]
            }
            Op::TokenClose { account, destination, owner, .. } => {
                vec![(*account, true), (*destination, true), (*owner, false)]
            }
            Op::TokenTransfer { source, destination, authority, checked, .. } => {
                let mut v = vec![(*source, true)];
                v.extend(checked.map(|c| (c.mint, false)));
                v.extend([(*destination, true), (*authority, false)]);
                v
            }
            Op::TokenApprove { account, delegate, owner, checked, .. } => {
                let mut v = vec![(*account, true)];
                v.extend(checked.map(|c| (c.mint, false)));
                v.extend([(*delegate, false), (*owner, false)]);
                v
            }
            Op::TokenSetOwner { account, authority, .. } | Op::TokenSetCloseAuthority { account, authority, .. } => {
                vec![(*account, true), (*authority, false)]
            }
            Op::TokenRevoke { account, owner, .. } => vec![(*account, true), (*owner, false)],
            Op::Memo(_) | Op::ComputeLimit(_) | Op::ComputePrice(_) => Vec::new(),
            Op::Raw { accounts, .. } => accounts.clone(),
        }
    }
}

/// One account key of a compiled message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub pubkey: Pubkey,
    pub signer: bool,
    pub writable: bool,
    /// Loaded from the lookup table rather than listed in the message.
    pub loaded: bool,
}

/// Account keys in message order (static, then loaded writable, then loaded readonly) and
/// the lookup-table indexes of the loaded ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    pub keys: Vec<Key>,
    pub writable_indexes: Vec<u8>,
    pub readonly_indexes: Vec<u8>,
}

/// Orders the keys as a Solana message does: writable signers (fee payer first), readonly
/// signers, writable non-signers, readonly non-signers; then moves table-listed non-signer,
/// non-program keys into the loaded sections of a v0 transaction.
pub fn compile(spec: &TxSpec) -> Compiled {
    let mut entries: Vec<Key> = Vec::new();
    let mut add = |pubkey: Pubkey, writable: bool, signer: bool| match entries.iter_mut().find(|k| k.pubkey == pubkey) {
        Some(k) => {
            k.writable |= writable;
            k.signer |= signer;
        }
        None => entries.push(Key { pubkey, signer, writable, loaded: false }),
    };
    add(spec.fee_payer(), true, true);
    for s in spec.signers.iter().skip(1) {
        add(*s, false, true);
    }
    let mut invoked: Vec<Pubkey> = Vec::new();
    for op in spec.ixs.iter().flat_map(Ix::ops) {
        for (k, w) in op.metas() {
            add(k, w, false);
        }
        add(op.program(), false, false);
        invoked.push(op.program());
    }
    let group = |k: &Key| match (k.signer, k.writable) {
        (true, true) => 0,
        (true, false) => 1,
        (false, true) => 2,
        (false, false) => 3,
    };
    entries.sort_by_key(group);
    let mut compiled = Compiled { keys: Vec::new(), writable_indexes: Vec::new(), readonly_indexes: Vec::new() };
    let (mut loaded_w, mut loaded_r) = (Vec::new(), Vec::new());
    for k in entries {
        let table_index = spec
            .lookup
            .as_ref()
            .filter(|_| !k.signer && !invoked.contains(&k.pubkey))
            .and_then(|l| l.addresses.iter().position(|a| *a == k.pubkey))
            .and_then(|i| u8::try_from(i).ok());
        match table_index {
            Some(i) if k.writable => {
                compiled.writable_indexes.push(i);
                loaded_w.push(Key { loaded: true, ..k });
            }
            Some(i) => {
                compiled.readonly_indexes.push(i);
                loaded_r.push(Key { loaded: true, ..k });
            }
            None => compiled.keys.push(k),
        }
    }
    compiled.keys.extend(loaded_w);
    compiled.keys.extend(loaded_r);
    compiled
}

/// A token account's balance in a transaction's meta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenBalance {
    pub index: u8,
    pub mint: Pubkey,
    pub owner: Pubkey,
    pub program: TokenProgram,
    pub amount: u64,
    pub decimals: u8,
}

/// What executing a transaction measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Executed {
    pub fee: u64,
    pub pre: Vec<u64>,
    pub post: Vec<u64>,
    pub pre_tokens: Vec<TokenBalance>,
    pub post_tokens: Vec<TokenBalance>,
}

/// An effect that could not be applied as written (the demo's own inconsistency).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecError(pub String);

/// Charges the fee, applies every instruction's effects unless the transaction fails, and
/// measures balances before and after. `seed` only shapes the nonce values it stores.
pub fn execute(spec: &TxSpec, compiled: &Compiled, state: &mut State, seed: u64) -> (Executed, Vec<ExecError>) {
    let mut errors = Vec::new();
    let pre = lamports_of(compiled, state);
    let pre_tokens = token_balances(compiled, state);
    let fee = spec.fee();
    debit(state, &spec.fee_payer(), fee, &mut errors);
    if spec.failure.is_none() {
        for op in spec.ixs.iter().flat_map(Ix::ops) {
            apply(op, state, spec.slot, seed, &mut errors);
        }
    }
    let post = lamports_of(compiled, state);
    let post_tokens = token_balances(compiled, state);
    (Executed { fee, pre, post, pre_tokens, post_tokens }, errors)
}

fn lamports_of(compiled: &Compiled, state: &State) -> Vec<u64> {
    compiled.keys.iter().map(|k| state.get(&k.pubkey).map_or(0, |a| a.lamports)).collect()
}

fn token_balances(compiled: &Compiled, state: &State) -> Vec<TokenBalance> {
    compiled
        .keys
        .iter()
        .enumerate()
        .filter_map(|(i, k)| {
            let acct = state.get(&k.pubkey)?;
            let t = acct.token()?;
            Some(TokenBalance {
                index: u8::try_from(i).ok()?,
                mint: t.mint,
                owner: t.owner,
                program: crate::ledger::demo::state::token_program_of(&acct.owner)?,
                amount: t.amount,
                decimals: t.decimals,
            })
        })
        .collect()
}

fn debit(state: &mut State, key: &Pubkey, lamports: u64, errors: &mut Vec<ExecError>) {
    match state.get_mut(key) {
        Some(a) if a.lamports >= lamports => a.lamports -= lamports,
        Some(a) => {
            errors.push(ExecError(format!("{key} has {} lamports, needs {lamports}", a.lamports)));
            a.lamports = 0;
        }
        None if lamports == 0 => {}
        None => errors.push(ExecError(format!("{key} does not exist, needs {lamports} lamports"))),
    }
}

fn credit(state: &mut State, key: &Pubkey, lamports: u64) {
    let a = state.entry(*key).or_insert_with(|| Acct::wallet(0));
    a.lamports = a.lamports.saturating_add(lamports);
}

/// The account at `key`, or an error entry when it is missing.
fn existing<'a>(state: &'a mut State, key: &Pubkey, errors: &mut Vec<ExecError>) -> Option<&'a mut Acct> {
    let found = state.get_mut(key);
    if found.is_none() {
        errors.push(ExecError(format!("{key} does not exist")));
    }
    found
}

fn token_mut<'a>(state: &'a mut State, key: &Pubkey, errors: &mut Vec<ExecError>) -> Option<&'a mut TokenAcct> {
    let t = existing(state, key, errors)?.token_mut();
    if t.is_none() {
        errors.push(ExecError(format!("{key} is not a token account")));
    }
    t
}

/// The durable nonce value stored at `slot` (a hash, shown as base58 like a blockhash).
pub fn nonce_value(seed: u64, slot: u64) -> Pubkey {
    Pubkey(keys::seeded(seed, "durable-nonce", &slot.to_le_bytes()))
}

fn apply(op: &Op, state: &mut State, slot: u64, seed: u64, errors: &mut Vec<ExecError>) {
    match op {
        Op::Transfer { from, to, lamports } => {
            debit(state, from, *lamports, errors);
            credit(state, to, *lamports);
        }
        Op::CreateAccount { funder, account, lamports, space, owner } => {
            debit(state, funder, *lamports, errors);
            let prior = state.get(account).map_or(0, |a| a.lamports);
            let data = if *space == 0 { Data::Empty } else { Data::Uninitialized { space: *space } };
            state.insert(*account, Acct { lamports: prior.saturating_add(*lamports), owner: *owner, data });
        }
        Op::Assign { account, owner } => {
            if let Some(a) = existing(state, account, errors) {
                a.owner = *owner;
            }
        }
        Op::NonceInit { nonce, authority } | Op::NonceAdvance { nonce, authority } => {
            if let Some(a) = existing(state, nonce, errors) {
                a.data = Data::Nonce { authority: *authority, blockhash: nonce_value(seed, slot) };
            }
        }
        Op::NonceAuthorize { nonce, new_authority, .. } => {
            if let Some(Acct { data: Data::Nonce { authority, .. }, .. }) = existing(state, nonce, errors) {
                *authority = *new_authority;
            }
        }
        Op::NonceWithdraw { nonce, to, lamports, .. } => {
            debit(state, nonce, *lamports, errors);
            credit(state, to, *lamports);
            // Withdrawing everything closes the account, as the System program does.
            if state.get(nonce).is_some_and(|a| a.lamports == 0) {
                state.remove(nonce);
            }
        }
        Op::StakeInit { stake, staker, withdrawer } => {
            if let Some(a) = existing(state, stake, errors) {
                let s = StakeAcct { staker: *staker, withdrawer: *withdrawer, delegation: None, credits_observed: 0 };
                a.data = Data::Stake(s);
            }
        }
        Op::StakeDelegate { stake, vote, .. } => {
            if let Some(a) = existing(state, stake, errors) {
                let amount = a.lamports.saturating_sub(rent(STAKE_LEN));
                if let Data::Stake(s) = &mut a.data {
                    let activation_epoch = clock::epoch(slot);
                    s.delegation = Some(Delegation { voter: *vote, stake: amount, activation_epoch });
                }
            }
        }
        Op::StakeAuthorize { stake, new_authority, withdrawer, .. } => {
            if let Some(Acct { data: Data::Stake(s), .. }) = existing(state, stake, errors) {
                if *withdrawer {
                    s.withdrawer = *new_authority;
                } else {
                    s.staker = *new_authority;
                }
            }
        }
        Op::TokenInitAccount { .. }
        | Op::TokenMintTo { .. }
        | Op::TokenThaw { .. }
        | Op::TokenTransfer { .. }
        | Op::TokenApprove { .. }
        | Op::TokenSetOwner { .. }
        | Op::TokenSetCloseAuthority { .. }
        | Op::TokenRevoke { .. } => apply_token(op, state, errors),
        Op::TokenClose { account, destination, .. } => {
            if state.get(account).and_then(Acct::token).is_some_and(|t| t.amount > 0) {
                errors.push(ExecError(format!("{account} still holds tokens: it cannot be closed")));
            }
            // The token program zeroes the account; with no lamports left it is gone.
            match state.remove(account) {
                Some(closed) => credit(state, destination, closed.lamports),
                None => errors.push(ExecError(format!("{account} does not exist"))),
            }
        }
        Op::Raw { moves, .. } => {
            for (from, to, lamports) in moves {
                debit(state, from, *lamports, errors);
                credit(state, to, *lamports);
            }
        }
        Op::AtaCreate { .. }
        | Op::TokenDataSize { .. }
        | Op::TokenImmutableOwner { .. }
        | Op::Memo(_)
        | Op::ComputeLimit(_)
        | Op::ComputePrice(_) => {}
    }
}

fn apply_token(op: &Op, state: &mut State, errors: &mut Vec<ExecError>) {
    match op {
        Op::TokenInitAccount { account, mint, owner, decimals, exts, .. } => {
            // A default-frozen mint's accounts start frozen, as the token program makes them.
            let frozen = mint_extensions(state, mint).contains(&MintExt::DefaultFrozen);
            if let Some(a) = existing(state, account, errors) {
                let t = TokenAcct { exts: *exts, frozen, ..TokenAcct::new(*mint, *owner, *decimals) };
                a.data = Data::Token(t);
            }
        }
        Op::TokenMintTo { mint, account, amount, .. } => {
            if let Some(Acct { data: Data::Mint(m), .. }) = existing(state, mint, errors) {
                m.supply = m.supply.saturating_add(*amount);
            }
            if let Some(t) = token_mut(state, account, errors) {
                if t.frozen {
                    errors.push(ExecError(format!("{account} is frozen: nothing can be minted to it")));
                }
                t.amount = t.amount.saturating_add(*amount);
            }
        }
        Op::TokenThaw { account, .. } => {
            if let Some(t) = token_mut(state, account, errors) {
                t.frozen = false;
            }
        }
        Op::TokenTransfer { source, destination, authority, amount, .. } => {
            token_move(state, source, destination, authority, *amount, errors)
        }
        Op::TokenApprove { account, delegate, amount, .. } => {
            if let Some(t) = token_mut(state, account, errors) {
                t.delegate = Some(*delegate);
                t.delegated_amount = *amount;
            }
        }
        Op::TokenSetOwner { account, new_owner, .. } => {
            // As the token program does: a new owner clears any delegation.
            if let Some(t) = token_mut(state, account, errors) {
                t.owner = *new_owner;
                t.delegate = None;
                t.delegated_amount = 0;
            }
        }
        Op::TokenSetCloseAuthority { account, new_authority, .. } => {
            if let Some(t) = token_mut(state, account, errors) {
                t.close_authority = *new_authority;
            }
        }
        Op::TokenRevoke { account, .. } => {
            if let Some(t) = token_mut(state, account, errors) {
                t.delegate = None;
                t.delegated_amount = 0;
            }
        }
        _ => {}
    }
}

fn token_move(
    state: &mut State,
    source: &Pubkey,
    destination: &Pubkey,
    authority: &Pubkey,
    amount: u64,
    errors: &mut Vec<ExecError>,
) {
    let mint = state.get(source).and_then(Acct::token).map(|t| t.mint).unwrap_or_default();
    let extensions = mint_extensions(state, &mint);
    if extensions.contains(&MintExt::NonTransferable) {
        errors.push(ExecError(format!("tokens of {mint} are non-transferable")));
    }
    // The token program withholds the fee in the destination (`transferFeeAmount`).
    let fee = extensions.iter().map(|e| e.fee(amount)).sum::<u64>().min(amount);
    if let Some(t) = token_mut(state, source, errors) {
        if t.frozen {
            errors.push(ExecError(format!("{source} is frozen")));
        }
        if t.amount < amount {
            errors.push(ExecError(format!("{source} holds {} tokens, sends {amount}", t.amount)));
        }
        t.amount = t.amount.saturating_sub(amount);
        if t.delegate == Some(*authority) && t.owner != *authority {
            t.delegated_amount = t.delegated_amount.saturating_sub(amount);
            if t.delegated_amount == 0 {
                t.delegate = None;
            }
        }
    }
    if let Some(t) = token_mut(state, destination, errors) {
        if t.frozen {
            errors.push(ExecError(format!("{destination} is frozen")));
        }
        t.amount = t.amount.saturating_add(amount - fee);
        t.withheld = t.withheld.saturating_add(fee);
    }
}

/// The extensions of the mint at `mint` (none when it is not a mint).
fn mint_extensions(state: &State, mint: &Pubkey) -> Vec<MintExt> {
    match state.get(mint).map(|a| &a.data) {
        Some(Data::Mint(m)) => m.extensions.clone(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::demo::keys::named_wallet;

    #[test]
    fn compile_orders_signers_first_and_loads_from_table() {
        let (a, b, c, d) = (named_wallet("a"), named_wallet("b"), named_wallet("c"), named_wallet("d"));
        let program = named_wallet("p");
        let raw = Op::Raw {
            program,
            accounts: vec![(c, true), (d, false), (b, false)],
            data: vec![1],
            name: "Swap",
            moves: vec![],
        };
        let mut spec = TxSpec::new(1, vec![a, b], vec![Ix::new(raw)]);
        spec.lookup = Some(Lookup { table: named_wallet("t"), addresses: vec![d, c] });
        let compiled = compile(&spec);
        let order: Vec<Pubkey> = compiled.keys.iter().map(|k| k.pubkey).collect();
        assert_eq!(order, vec![a, b, program, c, d]);
        assert!(compiled.keys[0].signer && compiled.keys[0].writable);
        assert!(compiled.keys[1].signer && !compiled.keys[1].writable);
        assert_eq!((compiled.writable_indexes.clone(), compiled.readonly_indexes.clone()), (vec![1], vec![0]));
        assert!(compiled.keys[3].loaded && compiled.keys[4].loaded);
    }

    #[test]
    fn execute_moves_lamports_and_charges_fee() {
        let (a, b) = (named_wallet("a"), named_wallet("b"));
        let mut state = State::new();
        state.insert(a, Acct::wallet(1_000_000));
        let spec = TxSpec::new(1, vec![a], vec![Ix::new(Op::Transfer { from: a, to: b, lamports: 400_000 })]);
        let compiled = compile(&spec);
        let (exec, errors) = execute(&spec, &compiled, &mut state, 0);
        assert!(errors.is_empty());
        assert_eq!(exec.pre, vec![1_000_000, 0, 0]);
        assert_eq!(exec.post, vec![595_000, 400_000, 0]);
        let mut failing = spec.clone();
        failing.failure = Some(TxFailure { index: 0, code: 1 });
        let (exec, _) = execute(&failing, &compiled, &mut state, 0);
        assert_eq!(exec.post[0], exec.pre[0] - 5_000);
        assert_eq!(exec.post[1], exec.pre[1]);
    }

    #[test]
    fn overdraft_is_reported_not_panicking() {
        let (a, b) = (named_wallet("a"), named_wallet("b"));
        let mut state = State::new();
        state.insert(a, Acct::wallet(10_000));
        let spec = TxSpec::new(1, vec![a], vec![Ix::new(Op::Transfer { from: a, to: b, lamports: 400_000 })]);
        let (_, errors) = execute(&spec, &compile(&spec), &mut state, 0);
        assert_eq!(errors.len(), 1);
    }
}
