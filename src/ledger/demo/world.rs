//! The archetype world: genesis accounts and the scripted histories of every archetype,
//! executed in slot order into current account state and an address → transactions index.
//!
//! Owns: `World` (state, executed transactions, index), the genesis of the named cast and
//! one script per archetype. Built eagerly by `DemoLedger::new` on the caller's thread;
//! read-only afterwards.
//!
//! Invariant: every transaction is executed against the state left by the transactions
//! before it (slots strictly increasing), so pre/post balances chain from one transaction
//! to the next and the current state is exactly where history leads. A script's steps stay
//! in order whatever the seed: steps are at least 20 minutes apart and jitter is below one.
//! Invariant: the seed changes amounts (±10 %), a per-script time shift and slot jitter,
//! never who does what. Deliberately absent: the busy trader's generated transactions and
//! the background population (their own modules).

use std::collections::BTreeMap;

use crate::ledger::demo::actors::{Cast, DemoProgram, Mint};
use crate::ledger::demo::clock::{self, MINUTES_PER_DAY};
use crate::ledger::demo::keys::{self, Rng, BUILTIN};
use crate::ledger::demo::state::{rent, AccountExts, Acct, Data, MintAcct, MintExt, State, TokenAcct};
use crate::ledger::demo::tx::{self, Checked, Compiled, Executed, Ix, Op, TxSpec};
use crate::pubkey::{Pubkey, Signature};

pub const LAMPORTS_PER_SOL: u64 = 1_000_000_000;
const LAMPORTS_PER_MILLI_SOL: u64 = 1_000_000;
/// Slot jitter added to each scripted step (below one minute, so steps keep their order).
const STEP_JITTER_SLOTS: u64 = 100;
/// Largest per-script time shift.
const SCRIPT_SHIFT_MINUTES_MAX: u64 = 720;
/// Size of the vote account data (as on mainnet).
const VOTE_ACCOUNT_LEN: usize = 3_762;
const POOL_STATE_LEN: usize = 200;
/// Lamports of a native program account.
const NATIVE_PROGRAM_LAMPORTS: u64 = 1;

/// An executed world transaction.
#[derive(Debug, Clone)]
pub struct WorldTx {
    pub spec: TxSpec,
    pub compiled: Compiled,
    pub exec: Executed,
    pub signature: Signature,
}

#[derive(Debug, Clone)]
pub struct World {
    pub state: State,
    /// Oldest first; `TxId::World(n)` is `txs[n]`.
    pub txs: Vec<WorldTx>,
    /// Address → indices into `txs`, oldest first. Real program ids and sysvars are not
    /// indexed (a node's list for them would be the whole chain).
    pub index: BTreeMap<Pubkey, Vec<u32>>,
    /// Effects that could not be applied as scripted; empty for a correct world.
    pub errors: Vec<String>,
}

impl World {
    pub fn build(seed: u64, cast: &Cast) -> World {
        let mut b = Builder {
            seed,
            cast,
            rng: Rng::seeded(seed, "world", &[]),
            state: State::new(),
            pending: Vec::new(),
            shift: 0,
            errors: Vec::new(),
        };
        b.genesis();
        b.scripts();
        b.finish()
    }

    /// True for ids whose history the demo does not index.
    pub fn is_builtin(key: &Pubkey) -> bool {
        let b = &*BUILTIN;
        [
            b.system,
            b.token,
            b.token_2022,
            b.ata,
            b.memo,
            b.stake,
            b.vote,
            b.compute_budget,
            b.sysvar_rent,
            b.sysvar_clock,
            b.sysvar_recent_blockhashes,
            b.sysvar_stake_history,
            b.stake_config,
        ]
        .contains(key)
    }
}

struct Builder<'a> {
    seed: u64,
    cast: &'a Cast,
    rng: Rng,
    state: State,
    pending: Vec<TxSpec>,
    /// Minutes added to every step of the current script.
    shift: u64,
    /// Genesis inconsistencies (the world's `errors` start with them).
    errors: Vec<String>,
}

fn days(n: u64) -> u64 {
    n * MINUTES_PER_DAY
}

fn transfer(from: Pubkey, to: Pubkey, lamports: u64) -> Ix {
    Ix::new(Op::Transfer { from, to, lamports })
}

fn memo(text: &str) -> Ix {
    Ix::new(Op::Memo(text.to_owned()))
}

/// A token transfer between the associated accounts of two owners.
fn token_transfer(mint: &Mint, from: Pubkey, to: Pubkey, amount: u64, checked: bool) -> Ix {
    Ix::new(Op::TokenTransfer {
        source: mint.ata(&from),
        destination: mint.ata(&to),
        authority: from,
        amount,
        program: mint.program,
        checked: checked.then_some(Checked { mint: mint.key, decimals: mint.decimals }),
    })
}

/// `create` of the associated token account, with the CPIs the program makes.
fn ata_create(funder: Pubkey, owner: Pubkey, mint: &Mint) -> Ix {
    let account = mint.ata(&owner);
    let (program, exts) = (mint.program, mint.exts);
    let token_program = BUILTIN.token_program(program);
    let space = Acct::token_account(program, TokenAcct { exts, ..TokenAcct::new(mint.key, owner, 0) }).space();
    Ix {
        op: Op::AtaCreate { funder, account, wallet: owner, mint: mint.key, program },
        inner: vec![
            (2, Op::TokenDataSize { mint: mint.key, program, exts }),
            (2, Op::CreateAccount { funder, account, lamports: rent(space), space, owner: token_program }),
            (2, Op::TokenImmutableOwner { account, program }),
            (2, Op::TokenInitAccount { account, mint: mint.key, owner, program, decimals: mint.decimals, exts }),
        ],
    }
}

/// `mintToChecked` of `amount` base units into `owner`'s associated account.
fn mint_to(mint: &Mint, authority: Pubkey, owner: Pubkey, amount: u64) -> Ix {
    Ix::new(Op::TokenMintTo {
        mint: mint.key,
        account: mint.ata(&owner),
        authority,
        amount,
        decimals: mint.decimals,
        program: mint.program,
    })
}

fn program_account(p: &DemoProgram) -> Acct {
    Acct {
        lamports: rent(crate::ledger::demo::state::PROGRAM_LEN),
        owner: BUILTIN.bpf_upgradeable_loader,
        data: Data::Program { program_data: p.program_data },
    }
}

impl Builder<'_> {
    fn put(&mut self, key: Pubkey, acct: Acct) {
        self.state.insert(key, acct);
    }

    fn wallet(&mut self, key: Pubkey, sol: u64) {
        self.put(key, Acct::wallet(sol * LAMPORTS_PER_SOL));
    }

    /// A genesis associated token account of `owner` holding `whole` tokens.
    fn holding(&mut self, owner: Pubkey, mint: &Mint, whole: u64) {
        let t =
            TokenAcct { amount: mint.units(whole), exts: mint.exts, ..TokenAcct::new(mint.key, owner, mint.decimals) };
        self.put(mint.ata(&owner), Acct::token_account(mint.program, t));
    }

    /// A genesis mint; `authorities` are the mint and freeze authorities.
    fn mint(&mut self, mint: &Mint, authorities: (Option<Pubkey>, Option<Pubkey>), extensions: Vec<MintExt>) {
        if AccountExts::of(&extensions) != mint.exts {
            self.errors.push(format!("mint {} has extensions its accounts do not carry", mint.key));
        }
        let m = MintAcct {
            decimals: mint.decimals,
            supply: mint.units(1_000_000_000),
            mint_authority: authorities.0,
            freeze_authority: authorities.1,
            extensions,
        };
        let mut acct = Acct { lamports: 0, owner: BUILTIN.token_program(mint.program), data: Data::Mint(m) };
        acct.lamports = rent(acct.space());
        self.put(mint.key, acct);
    }

    fn builtins(&mut self) {
        let b = &*BUILTIN;
        let native = |name: &str| Acct {
            lamports: NATIVE_PROGRAM_LAMPORTS,
            owner: b.native_loader,
            data: Data::Bytes(name.as_bytes().to_vec()),
        };
        for (key, name) in [
            (b.system, "system_program"),
            (b.stake, "stake_program"),
            (b.vote, "vote_program"),
            (b.compute_budget, "compute_budget_program"),
        ] {
            self.put(key, native(name));
        }
        // BPF programs with placeholder bytes: the demo does not ship program binaries.
        for (key, name) in [(b.token, "spl_token"), (b.ata, "spl_associated_token_account"), (b.memo, "spl_memo")] {
            let bytes = name.as_bytes().to_vec();
            self.put(key, Acct { lamports: rent(bytes.len() as u64), owner: b.bpf_loader_2, data: Data::Bytes(bytes) });
        }
        let t22_data = keys::find_pda(&[b.token_2022.as_bytes()], &b.bpf_upgradeable_loader);
        self.put(b.token_2022, program_account(&DemoProgram { id: b.token_2022, program_data: t22_data }));
        let sysvar_owner = b.sysvar;
        for (key, len) in [
            (b.sysvar_rent, 17u64),
            (b.sysvar_clock, 40),
            (b.sysvar_recent_blockhashes, 6_008),
            (b.sysvar_stake_history, 16_392),
        ] {
            let acct = Acct { lamports: rent(len), owner: sysvar_owner, data: Data::Bytes(vec![0; len as usize]) };
            self.put(key, acct);
        }
        self.put(b.stake_config, Acct { lamports: rent(10), owner: b.stake, data: Data::Bytes(vec![0; 10]) });
    }

    /// Accounts that exist before any scripted transaction.
    fn genesis(&mut self) {
        let c = self.cast;
        self.builtins();
        for p in [&c.dex, &c.router, &c.hook_program, &c.airdrop, &c.drainer_a, &c.drainer_b] {
            self.put(p.id, program_account(p));
        }
        for m in [&c.dusd, &c.demo, &c.dbonk] {
            self.mint(m, (Some(c.exchanges[0]), None), Vec::new());
        }
        let pdt = MintExt::PermanentDelegate(c.pdt_delegate);
        self.mint(&c.pdt, (Some(c.pdt_issuer), Some(c.pdt_issuer)), vec![pdt]);
        let hook = MintExt::TransferHook { authority: c.hook_issuer, program: c.hook_program.id };
        self.mint(&c.hook, (Some(c.hook_issuer), None), vec![hook]);
        self.mint_risk_mints();
        let vote = Acct {
            lamports: rent(VOTE_ACCOUNT_LEN as u64),
            owner: BUILTIN.vote,
            data: Data::Bytes(vec![0; VOTE_ACCOUNT_LEN]),
        };
        self.put(c.vote_account, vote);
        self.counterparties();
        self.dex_genesis();
    }

    /// Exchanges, friends and the other wallets the archetypes deal with, and their tokens.
    fn counterparties(&mut self) {
        let c = self.cast;
        for e in c.exchanges {
            self.wallet(e, 50_000);
            self.holding(e, &c.dusd, 50_000_000);
            self.holding(e, &c.demo, 50_000_000);
            self.holding(e, &c.dbonk, 50_000_000_000);
        }
        for (who, sol) in [(c.alice, 200), (c.bob, 150), (c.carol, 80), (c.merchant, 40), (c.friend, 50)] {
            self.wallet(who, sol);
            self.holding(who, &c.dusd, 100_000);
        }
        self.holding(c.alice, &c.demo, 1_000_000);
        for (who, sol) in [
            (c.lookalike, 5),
            (c.attacker, 1),
            (c.drainer_collector, 1),
            (c.scam_funder, 100),
            (c.phishing_delegate, 1),
            (c.dapp_delegate, 1),
            (c.nonce_operator, 10),
            (c.nonce_planter, 10),
            (c.stake_taker, 2),
            (c.pdt_issuer, 10),
            (c.hook_issuer, 10),
            (c.fee_issuer, 10),
            (c.kyc_issuer, 10),
            (c.soul_issuer, 10),
            (c.dex_admin, 10),
        ] {
            self.wallet(who, sol);
        }
        self.wallet(c.sanctioned_mixer, 200);
        self.wallet(c.hop_funder, 10);
        for who in [c.fee_relayer, c.sweep_collector, c.rent_collector] {
            self.wallet(who, 5);
        }
        self.holding(c.sweep_collector, &c.demo, 0);
        for who in c.sybil_targets.into_iter().chain(c.trader_peers) {
            self.wallet(who, 5);
        }
        self.holding(c.lookalike, &c.dusd, 1_000);
        self.holding(c.attacker, &c.dusd, 0);
        self.holding(c.drainer_collector, &c.demo, 0);
        for peer in c.trader_peers {
            self.holding(peer, &c.dusd, 1_000);
        }
        self.holding(c.pdt_issuer, &c.pdt, 10_000_000);
        self.holding(c.hook_issuer, &c.hook, 10_000_000);
        self.holding(c.fee_issuer, &c.fee, 10_000_000);
        self.holding(c.kyc_issuer, &c.kyc, 10_000_000);
    }

    /// The mints of `mint_risk_holder`: FEE (a 10 % transfer fee capped at 5,000 tokens and a
    /// close authority, still mintable by its issuer), KYC (accounts start frozen; no mint
    /// authority), SOUL (non-transferable, mintable by its issuer).
    fn mint_risk_mints(&mut self) {
        let c = self.cast;
        let fee = MintExt::TransferFee {
            authority: c.fee_issuer,
            basis_points: 1_000,
            maximum_fee: c.fee.units(5_000),
            epoch: clock::epoch(clock::days_ago(120)),
        };
        self.mint(&c.fee, (Some(c.fee_issuer), None), vec![fee, MintExt::CloseAuthority(c.fee_issuer)]);
        self.mint(&c.kyc, (None, Some(c.kyc_issuer)), vec![MintExt::DefaultFrozen]);
        self.mint(&c.soul, (Some(c.soul_issuer), None), vec![MintExt::NonTransferable]);
    }

    fn dex_genesis(&mut self) {
        let c = self.cast;
        let pool_mints = [(&c.demo, &c.dusd), (&c.dbonk, &c.dusd)];
        for (i, (base, quote)) in pool_mints.into_iter().enumerate() {
            let mut data = keys::sha256(&[b"account:Pool"])[..8].to_vec();
            for k in [base.key, quote.key, c.vaults[2 * i], c.vaults[2 * i + 1], c.pool_authority] {
                data.extend_from_slice(k.as_bytes());
            }
            data.resize(POOL_STATE_LEN, 0);
            self.put(
                c.pools[i],
                Acct { lamports: rent(POOL_STATE_LEN as u64), owner: c.dex.id, data: Data::Bytes(data) },
            );
            for (j, mint) in [base, quote].into_iter().enumerate() {
                // Deep vaults, far from u64::MAX in base units: 5e14 DUSD, 2e17 DEMO, 5e17 DBONK.
                let whole = match j {
                    1 => 500_000_000,
                    _ if i == 0 => 200_000_000,
                    _ => 5_000_000_000_000,
                };
                let t = TokenAcct {
                    amount: mint.units(whole),
                    ..TokenAcct::new(mint.key, c.pool_authority, mint.decimals)
                };
                self.put(c.vaults[2 * i + j], Acct::token_account(mint.program, t));
            }
        }
        let mut addresses = c.pools.to_vec();
        addresses.push(c.pool_authority);
        addresses.extend(c.vaults);
        let table = Data::LookupTable { authority: c.dex_admin, addresses };
        let mut acct = Acct { lamports: 0, owner: BUILTIN.lookup_table_program, data: table };
        acct.lamports = rent(acct.space());
        self.put(c.lookup_table, acct);
    }

    /// Starts a script: a fresh time shift of up to `max_minutes`.
    fn script(&mut self, max_minutes: u64) {
        self.shift = self.rng.below(max_minutes + 1);
    }

    /// `x` ± 10 %.
    fn vary(&mut self, x: u64) -> u64 {
        x / 100 * self.rng.range(90, 110)
    }

    /// About `milli` thousandths of a SOL, in lamports.
    fn sol(&mut self, milli: u64) -> u64 {
        self.vary(milli * LAMPORTS_PER_MILLI_SOL)
    }

    fn tx(&mut self, minutes_ago: u64, signers: &[Pubkey], ixs: Vec<Ix>) {
        let slot = clock::minutes_ago(minutes_ago + self.shift) - self.rng.below(STEP_JITTER_SLOTS);
        self.pending.push(TxSpec::new(slot, signers.to_vec(), ixs));
    }

    fn scripts(&mut self) {
        self.clean();
        self.open_delegation();
        self.owner_change_drained();
        self.assigned_wallet();
        self.foreign_nonce_authority();
        self.outsider_nonce();
        self.foreign_stake_authority();
        self.permanent_delegate_holder();
        self.mint_risk_holder();
        self.poisoning_victim();
        self.drainer_contact();
        self.sanctioned_contact();
        self.sanctioned_hop();
        self.sybils();
        self.farm();
        self.busy_trader_setup();
        self.new_wallet();
        self.dormant_woke();
    }

    fn clean(&mut self) {
        let c = self.cast;
        let w = c.clean;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, to_bob, from_bob, to_alice) = (self.sol(25_000), self.sol(1_500), self.sol(300), self.sol(2_000));
        let (got, coffee, later) =
            (self.vary(c.dusd.units(150)), self.vary(c.dusd.units(25)), self.vary(c.dusd.units(10)));
        self.tx(days(400), &[c.exchanges[0]], vec![transfer(c.exchanges[0], w, fund)]);
        self.tx(days(390), &[w], vec![ata_create(w, w, &c.dusd)]);
        self.tx(days(380), &[c.alice], vec![token_transfer(&c.dusd, c.alice, w, got, true)]);
        self.tx(days(300), &[w], vec![transfer(w, c.bob, to_bob)]);
        self.tx(days(200), &[w], vec![token_transfer(&c.dusd, w, c.merchant, coffee, true), memo("coffee order 1183")]);
        self.tx(days(150), &[c.bob], vec![transfer(c.bob, w, from_bob)]);
        self.tx(days(40), &[w], vec![transfer(w, c.alice, to_alice), memo("thanks for dinner")]);
        self.tx(days(5), &[w], vec![token_transfer(&c.dusd, w, c.merchant, later, false)]);
    }

    fn open_delegation(&mut self) {
        let c = self.cast;
        let w = c.open_delegation;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, to_bob) = (self.sol(12_000), self.sol(500));
        let (demo, bonk) = (self.vary(c.demo.units(5_000)), self.vary(c.dbonk.units(2_000_000)));
        let e = c.exchanges[1];
        self.tx(days(200), &[e], vec![transfer(e, w, fund)]);
        self.tx(days(199), &[w], vec![ata_create(w, w, &c.demo), ata_create(w, w, &c.dbonk)]);
        self.tx(days(198), &[c.alice], vec![token_transfer(&c.demo, c.alice, w, demo, true)]);
        self.tx(days(197), &[e], vec![token_transfer(&c.dbonk, e, w, bonk, true)]);
        let unlimited = Op::TokenApprove {
            account: c.demo.ata(&w),
            delegate: c.dapp_delegate,
            owner: w,
            amount: u64::MAX,
            program: c.demo.program,
            checked: None,
        };
        self.tx(days(120), &[w], vec![Ix::new(unlimited)]);
        self.tx(days(60), &[w], vec![transfer(w, c.bob, to_bob)]);
        let full = Op::TokenApprove {
            account: c.dbonk.ata(&w),
            delegate: c.phishing_delegate,
            owner: w,
            amount: bonk,
            program: c.dbonk.program,
            checked: Some(Checked { mint: c.dbonk.key, decimals: c.dbonk.decimals }),
        };
        self.tx(days(30), &[w], vec![Ix::new(full)]);
    }

    fn owner_change_drained(&mut self) {
        let c = self.cast;
        let w = c.owner_change_drained;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, to_carol) = (self.sol(8_000), self.sol(200));
        let tokens = self.vary(c.dusd.units(2_000));
        let e = c.exchanges[0];
        self.tx(days(100), &[e], vec![transfer(e, w, fund)]);
        self.tx(days(99), &[w], vec![ata_create(w, w, &c.dusd)]);
        self.tx(days(98), &[c.alice], vec![token_transfer(&c.dusd, c.alice, w, tokens, true)]);
        self.tx(days(50), &[w], vec![transfer(w, c.carol, to_carol)]);
        // The phishing transaction: the wallet signs away its token account's ownership and
        // its SOL; the attacker co-signs to pull half the tokens at once.
        let ata = c.dusd.ata(&w);
        let set_owner =
            Op::TokenSetOwner { account: ata, authority: w, new_owner: c.attacker, program: c.dusd.program };
        let half = tokens / 2;
        let pull = Op::TokenTransfer {
            source: ata,
            destination: c.dusd.ata(&c.attacker),
            authority: c.attacker,
            amount: half,
            program: c.dusd.program,
            checked: Some(Checked { mint: c.dusd.key, decimals: c.dusd.decimals }),
        };
        let sweep = fund - to_carol - rent(crate::ledger::demo::state::TOKEN_ACCOUNT_LEN) - 50 * LAMPORTS_PER_MILLI_SOL;
        self.tx(days(10), &[w, c.attacker], vec![Ix::new(set_owner), Ix::new(pull), transfer(w, c.attacker, sweep)]);
        let rest = Op::TokenTransfer {
            source: ata,
            destination: c.dusd.ata(&c.attacker),
            authority: c.attacker,
            amount: tokens - half,
            program: c.dusd.program,
            checked: Some(Checked { mint: c.dusd.key, decimals: c.dusd.decimals }),
        };
        self.tx(days(10) - 60, &[c.attacker], vec![Ix::new(rest)]);
    }

    fn assigned_wallet(&mut self) {
        let c = self.cast;
        let w = c.assigned_wallet;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let fund = self.sol(3_000);
        let to_alice = 100 * LAMPORTS_PER_MILLI_SOL;
        self.tx(days(60), &[c.exchanges[2]], vec![transfer(c.exchanges[2], w, fund)]);
        self.tx(days(45), &[w], vec![transfer(w, c.alice, to_alice)]);
        self.tx(days(20), &[w], vec![Ix::new(Op::Assign { account: w, owner: c.drainer_b.id })]);
        // The drainer now owns the account and sweeps all but its rent-exempt minimum.
        let left = fund - to_alice - 2 * tx::LAMPORTS_PER_SIGNATURE;
        let sweep = Op::Raw {
            program: c.drainer_b.id,
            accounts: vec![(w, true), (c.drainer_collector, true)],
            data: vec![0x5e, 0xe9, 0x01],
            name: "Sweep",
            moves: vec![(w, c.drainer_collector, left - rent(0))],
        };
        self.tx(days(20) - 30, &[c.drainer_collector], vec![Ix::new(sweep)]);
    }

    /// `funder` creates and funds nonce account `nonce` and initializes it for `authority`, with
    /// `extra` instructions in the same transaction.
    fn create_nonce(&mut self, minutes_ago: u64, funder: Pubkey, nonce: Pubkey, authority: Pubkey, extra: Vec<Ix>) {
        let space = crate::ledger::demo::state::NONCE_LEN;
        let create = Op::CreateAccount { funder, account: nonce, lamports: rent(space), space, owner: BUILTIN.system };
        let init = Op::NonceInit { nonce, authority };
        let ixs = [Ix::new(create), Ix::new(init)].into_iter().chain(extra).collect();
        self.tx(minutes_ago, &[funder, nonce], ixs);
    }

    fn foreign_nonce_authority(&mut self) {
        let c = self.cast;
        let (w, nonce, operator) = (c.foreign_nonce_authority, c.nonce_account, c.nonce_operator);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let fund = self.sol(6_000);
        self.tx(days(90), &[c.exchanges[0]], vec![transfer(c.exchanges[0], w, fund)]);
        self.create_nonce(days(45), w, nonce, operator, vec![]);
        for day in [44, 30] {
            let tip = self.sol(10);
            let advance = Ix::new(Op::NonceAdvance { nonce, authority: operator });
            self.tx(days(day), &[operator], vec![advance, transfer(operator, c.bob, tip)]);
        }
        // The durable-nonce transaction the wallet once signed, executed by the operator.
        let take = self.sol(4_000);
        let advance = Ix::new(Op::NonceAdvance { nonce, authority: operator });
        self.tx(days(2), &[operator, w], vec![advance, transfer(w, operator, take)]);
    }

    /// Another address creates a nonce account naming the wallet as authority. The creation
    /// names the wallet only in instruction data; the planter adds a tiny transfer to the
    /// wallet so that the creation does appear in its history (as a hostile one would, to pass
    /// for the wallet's own nonce).
    fn outsider_nonce(&mut self) {
        let c = self.cast;
        let (w, nonce, planter) = (c.outsider_nonce, c.planted_nonce, c.nonce_planter);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let fund = self.sol(4_000);
        self.tx(days(80), &[c.exchanges[1]], vec![transfer(c.exchanges[1], w, fund)]);
        let tiny = transfer(planter, w, 1_000_000);
        self.create_nonce(days(21), planter, nonce, w, vec![tiny]);
        let (coffee, to_alice) = (self.sol(35), self.sol(600));
        self.tx(days(14), &[w], vec![transfer(w, c.merchant, coffee), memo("coffee")]);
        self.tx(days(6), &[w], vec![transfer(w, c.alice, to_alice)]);
    }

    fn foreign_stake_authority(&mut self) {
        let c = self.cast;
        let (w, stake, taker) = (c.foreign_stake_authority, c.stake_account, c.stake_taker);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, staked) = (self.sol(40_000), self.sol(30_000));
        self.tx(days(150), &[c.exchanges[1]], vec![transfer(c.exchanges[1], w, fund)]);
        let space = crate::ledger::demo::state::STAKE_LEN;
        let ixs = vec![
            Ix::new(Op::CreateAccount { funder: w, account: stake, lamports: staked, space, owner: BUILTIN.stake }),
            Ix::new(Op::StakeInit { stake, staker: w, withdrawer: w }),
            Ix::new(Op::StakeDelegate { stake, vote: c.vote_account, authority: w }),
        ];
        self.tx(days(100), &[w, stake], ixs);
        let ixs = vec![
            Ix::new(Op::StakeAuthorize { stake, authority: w, new_authority: taker, withdrawer: false }),
            Ix::new(Op::StakeAuthorize { stake, authority: w, new_authority: taker, withdrawer: true }),
        ];
        self.tx(days(12), &[w], ixs);
    }

    fn permanent_delegate_holder(&mut self) {
        let c = self.cast;
        let w = c.permanent_delegate_holder;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, to_carol) = (self.sol(5_000), self.sol(300));
        let (pdt, hook) = (self.vary(c.pdt.units(1_000)), self.vary(c.hook.units(500)));
        self.tx(days(70), &[c.exchanges[2]], vec![transfer(c.exchanges[2], w, fund)]);
        // Both issuers airdrop: they create the wallet's Token-2022 account (which names the
        // wallet, so the transfer is in its history) and send tokens.
        let pdt_send = token_transfer(&c.pdt, c.pdt_issuer, w, pdt, true);
        self.tx(days(68), &[c.pdt_issuer], vec![ata_create(c.pdt_issuer, w, &c.pdt), pdt_send]);
        // Token-2022 calls the mint's transfer-hook program on every transfer.
        let mut with_hook = token_transfer(&c.hook, c.hook_issuer, w, hook, true);
        let execute = Op::Raw {
            program: c.hook_program.id,
            accounts: vec![
                (c.hook.ata(&c.hook_issuer), false),
                (c.hook.key, false),
                (c.hook.ata(&w), false),
                (c.hook_issuer, false),
            ],
            data: vec![0x69, 0x25, 0x65, 0x3c, 0x01],
            name: "Execute",
            moves: vec![],
        };
        with_hook.inner.push((2, execute));
        self.tx(days(50), &[c.hook_issuer], vec![ata_create(c.hook_issuer, w, &c.hook), with_hook]);
        self.tx(days(20), &[w], vec![transfer(w, c.carol, to_carol)]);
    }

    fn mint_risk_holder(&mut self) {
        let c = self.cast;
        let w = c.mint_risk_holder;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, price, to_carol) = (self.sol(4_000), self.sol(900), self.sol(250));
        let (fee_tokens, kyc_tokens) = (self.vary(c.fee.units(20_000)), self.vary(c.kyc.units(800)));
        let e = c.exchanges[1];
        self.tx(days(90), &[e], vec![transfer(e, w, fund)]);
        // An over-the-counter buy: the wallet pays SOL, the issuer sends FEE (10 % withheld).
        self.tx(days(88), &[w], vec![ata_create(w, w, &c.fee)]);
        let buy = vec![transfer(w, c.fee_issuer, price), token_transfer(&c.fee, c.fee_issuer, w, fee_tokens, true)];
        self.tx(days(87), &[w, c.fee_issuer], buy);
        // The KYC account starts frozen; the issuer thaws it, then sends tokens.
        self.tx(days(60), &[w], vec![ata_create(w, w, &c.kyc)]);
        let thaw =
            Op::TokenThaw { account: c.kyc.ata(&w), mint: c.kyc.key, authority: c.kyc_issuer, program: c.kyc.program };
        let send = token_transfer(&c.kyc, c.kyc_issuer, w, kyc_tokens, true);
        self.tx(days(59), &[c.kyc_issuer], vec![Ix::new(thaw), send]);
        // A soulbound airdrop the wallet never asked for.
        let soul = vec![ata_create(c.soul_issuer, w, &c.soul), mint_to(&c.soul, c.soul_issuer, w, 1)];
        self.tx(days(30), &[c.soul_issuer], soul);
        self.tx(days(10), &[w], vec![transfer(w, c.carol, to_carol)]);
    }

    fn poisoning_victim(&mut self) {
        let c = self.cast;
        let (w, friend, fake) = (c.poisoning_victim, c.friend, c.lookalike);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let fund = self.sol(20_000);
        let tokens = self.vary(c.dusd.units(5_000));
        let e = c.exchanges[0];
        self.tx(days(180), &[e], vec![transfer(e, w, fund)]);
        self.tx(days(179), &[w], vec![ata_create(w, w, &c.dusd)]);
        self.tx(days(178), &[e], vec![token_transfer(&c.dusd, e, w, tokens, true)]);
        for day in [170, 120, 60] {
            let amount = self.sol(1_000);
            self.tx(days(day), &[w], vec![transfer(w, friend, amount)]);
        }
        let paid = self.vary(c.dusd.units(100));
        self.tx(days(90), &[w], vec![token_transfer(&c.dusd, w, friend, paid, true)]);
        // Dust right after a real payment, so the look-alike sits next to it in the history:
        // a few lamports (which names the wallet) and one base unit of the token it uses.
        let dust = vec![transfer(fake, w, 1_000), token_transfer(&c.dusd, fake, w, 1, false)];
        self.tx(days(60) - 20, &[fake], dust);
        let mistake = self.sol(3_000);
        self.tx(days(25), &[w], vec![transfer(w, fake, mistake)]);
    }

    fn drainer_contact(&mut self) {
        let c = self.cast;
        let (w, collector) = (c.drainer_contact, c.drainer_collector);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, stolen_sol, gift) = (self.sol(10_000), self.sol(1_500), self.sol(500));
        let tokens = self.vary(c.demo.units(300));
        let e = c.exchanges[1];
        self.tx(days(80), &[e], vec![transfer(e, w, fund)]);
        self.tx(days(79), &[w], vec![ata_create(w, w, &c.demo)]);
        self.tx(days(78), &[c.alice], vec![token_transfer(&c.demo, c.alice, w, tokens, true)]);
        let (w_ata, c_ata, token_program) = (c.demo.ata(&w), c.demo.ata(&collector), BUILTIN.token);
        let steal = |amount: u64| Op::TokenTransfer {
            source: w_ata,
            destination: c_ata,
            authority: w,
            amount,
            program: c.demo.program,
            checked: None,
        };
        let claim = Op::Raw {
            program: c.drainer_a.id,
            accounts: vec![
                (w, true),
                (w_ata, true),
                (collector, true),
                (c_ata, true),
                (token_program, false),
                (BUILTIN.system, false),
            ],
            data: vec![0x3e, 0xc6, 0xd6, 0xc1, 0xd5, 0x9f, 0x6c, 0xd2],
            name: "Claim",
            moves: vec![],
        };
        let direct = Ix {
            op: claim.clone(),
            inner: vec![(2, Op::Transfer { from: w, to: collector, lamports: stolen_sol }), (2, steal(tokens / 3))],
        };
        self.tx(days(33), &[w], vec![direct]);
        let route = Op::Raw {
            program: c.router.id,
            accounts: vec![
                (w, true),
                (w_ata, true),
                (c.drainer_a.id, false),
                (collector, true),
                (c_ata, true),
                (token_program, false),
            ],
            data: vec![0xe5, 0x17, 0xcb, 0x97, 0x7a, 0xe3, 0xad, 0x2a],
            name: "Route",
            moves: vec![],
        };
        let via_router = Ix { op: route, inner: vec![(2, claim), (3, steal(tokens / 3))] };
        self.tx(days(32), &[w], vec![via_router]);
        self.tx(days(15), &[c.scam_funder], vec![transfer(c.scam_funder, w, gift)]);
    }

    fn sanctioned_contact(&mut self) {
        let c = self.cast;
        let (w, mixer) = (c.sanctioned_contact, c.sanctioned_mixer);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (fund, to_alice, back) = (self.sol(3_000), self.sol(400), self.sol(1_200));
        self.tx(days(45), &[mixer], vec![transfer(mixer, w, fund)]);
        self.tx(days(30), &[w], vec![transfer(w, c.alice, to_alice), memo("rent share")]);
        self.tx(days(12), &[w], vec![transfer(w, mixer, back)]);
    }

    /// The mixer pays an unlabelled address, which then funds the wallet: nothing sanctioned
    /// in the wallet's own history, only one hop out.
    fn sanctioned_hop(&mut self) {
        let c = self.cast;
        let (w, hop, mixer) = (c.sanctioned_hop, c.hop_funder, c.sanctioned_mixer);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let (laundered, fund, spend, to_carol) = (self.sol(2_500), self.sol(2_000), self.sol(300), self.sol(150));
        self.tx(days(70), &[mixer], vec![transfer(mixer, hop, laundered)]);
        self.tx(days(66), &[hop], vec![transfer(hop, w, fund)]);
        self.tx(days(60), &[hop], vec![transfer(hop, c.carol, to_carol)]);
        self.tx(days(35), &[w], vec![transfer(w, c.merchant, spend), memo("order 5521")]);
    }

    fn sybils(&mut self) {
        let c = self.cast;
        let (f, a, b2, cc, d) = (c.funder, c.sybil_a, c.sybil_b, c.sybil_c, c.sybil_d);
        let [t1, t2] = c.sybil_targets;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let fund = self.sol(100_000);
        self.tx(days(250), &[c.exchanges[2]], vec![transfer(c.exchanges[2], f, fund)]);
        let (fa, fb, fc, fd) = (self.sol(5_000), self.sol(5_000), self.sol(3_000), self.sol(3_000));
        self.tx(days(200), &[f], vec![transfer(f, a, fa)]);
        self.tx(days(200) - 60, &[f], vec![transfer(f, b2, fb)]);
        self.tx(days(199), &[f], vec![transfer(f, cc, fc)]);
        self.tx(days(150) + 600, &[f], vec![transfer(f, d, fd)]);
        self.tx(days(198), &[a], vec![ata_create(a, a, &c.demo)]);
        self.tx(days(198) - 45, &[b2], vec![ata_create(b2, b2, &c.demo)]);
        let direct = self.sol(1_000);
        self.tx(days(190), &[a], vec![transfer(a, b2, direct)]);
        let (ta, tb) = (self.sol(200), self.sol(200));
        self.tx(days(185), &[a, b2], vec![transfer(a, t1, ta), transfer(b2, t1, tb)]);
        for (day, target, gap) in [(180, t2, 30), (100, t1, 40)] {
            let (xa, xb) = (self.sol(300), self.sol(300));
            self.tx(days(day), &[a], vec![transfer(a, target, xa)]);
            self.tx(days(day) - gap, &[b2], vec![transfer(b2, target, xb)]);
        }
        for (who, gap) in [(a, 0), (b2, 20)] {
            let claim = Op::Raw {
                program: c.airdrop.id,
                accounts: vec![(who, true), (c.demo.ata(&who), true), (c.demo.key, false)],
                data: vec![0x3e, 0xc6, 0xd6, 0xc1],
                name: "ClaimAirdrop",
                moves: vec![],
            };
            self.tx(days(150) - gap, &[who], vec![Ix::new(claim)]);
        }
        let (c1, c2, d1, d2) = (self.sol(500), self.sol(200), self.sol(400), self.sol(300));
        self.tx(days(140), &[cc], vec![transfer(cc, c.alice, c1)]);
        self.tx(days(60), &[cc], vec![transfer(cc, c.merchant, c2)]);
        self.tx(days(120), &[d], vec![transfer(d, c.bob, d1)]);
        self.tx(days(20), &[d], vec![transfer(d, c.carol, d2)]);
    }

    /// Two farm wallets with different first funders, tied by how they are run: one relayer pays
    /// the fees of their transactions, both sell their DEMO to one collector and close the
    /// emptied account with its rent to another address, then sweep their SOL to the collector.
    fn farm(&mut self) {
        let c = self.cast;
        let (relayer, collector, rent_to) = (c.fee_relayer, c.sweep_collector, c.rent_collector);
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let seller = c.exchanges[1];
        for (w, exchange, start) in [(c.farm_a, c.exchanges[0], 160), (c.farm_b, c.exchanges[2], 130)] {
            let (fund, keep, tokens) = (self.sol(2_000), self.sol(20), self.vary(c.demo.units(300)));
            self.tx(days(start), &[exchange], vec![transfer(exchange, w, fund)]);
            self.tx(days(start - 1), &[relayer, w], vec![ata_create(w, w, &c.demo)]);
            self.tx(days(start - 2), &[seller], vec![token_transfer(&c.demo, seller, w, tokens, true)]);
            let close =
                Op::TokenClose { account: c.demo.ata(&w), destination: rent_to, owner: w, program: c.demo.program };
            let sell_and_close = vec![token_transfer(&c.demo, w, collector, tokens, true), Ix::new(close)];
            self.tx(days(start - 10), &[relayer, w], sell_and_close);
            // The account's rent went to `rent_to`: what is left is the funding less it.
            let ata_rent = rent(Acct::token_account(c.demo.program, TokenAcct::new(c.demo.key, w, 0)).space());
            let sweep = fund.saturating_sub(ata_rent).saturating_sub(keep);
            self.tx(days(start - 11), &[w], vec![transfer(w, collector, sweep)]);
        }
    }

    /// The busy trader's funding and token accounts; its thousands of trades come from
    /// `busy`, which starts where this leaves the state.
    fn busy_trader_setup(&mut self) {
        let c = self.cast;
        let w = c.busy_trader;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let fund = self.sol(800_000);
        let (dusd, demo, bonk) =
            (self.vary(c.dusd.units(50_000)), self.vary(c.demo.units(20_000)), self.vary(c.dbonk.units(10_000_000)));
        let (e1, e2) = (c.exchanges[0], c.exchanges[1]);
        self.tx(days(365), &[e1], vec![transfer(e1, w, fund)]);
        let creates = [&c.dusd, &c.demo, &c.dbonk].into_iter().map(|m| ata_create(w, w, m)).collect();
        self.tx(days(364), &[w], creates);
        self.tx(days(363), &[e1], vec![token_transfer(&c.dusd, e1, w, dusd, true)]);
        self.tx(days(363) - 60, &[e2], vec![token_transfer(&c.demo, e2, w, demo, true)]);
        self.tx(days(362), &[e2], vec![token_transfer(&c.dbonk, e2, w, bonk, true)]);
    }

    fn new_wallet(&mut self) {
        let c = self.cast;
        let w = c.new_wallet;
        self.script(30);
        let (fund, spend) = (self.sol(1_200), self.sol(100));
        self.tx(300, &[c.exchanges[2]], vec![transfer(c.exchanges[2], w, fund)]);
        self.tx(60, &[w], vec![transfer(w, c.bob, spend)]);
    }

    fn dormant_woke(&mut self) {
        let c = self.cast;
        let w = c.dormant_woke;
        self.script(SCRIPT_SHIFT_MINUTES_MAX);
        let fund = self.sol(15_000);
        self.tx(days(700), &[c.exchanges[1]], vec![transfer(c.exchanges[1], w, fund)]);
        let steps = [
            (690, w, c.bob, 2_000),
            (660, c.bob, w, 500),
            (650, w, c.carol, 1_000),
            (3, w, c.alice, 5_000),
            (1, w, c.merchant, 700),
        ];
        for (day, from, to, milli) in steps {
            let amount = self.sol(milli);
            self.tx(days(day), &[from], vec![transfer(from, to, amount)]);
        }
    }

    /// Orders the scripted transactions by slot (strictly increasing), executes them and
    /// indexes them by address.
    fn finish(mut self) -> World {
        let mut pending = std::mem::take(&mut self.pending);
        pending.sort_by_key(|s| s.slot);
        for i in 1..pending.len() {
            if pending[i].slot <= pending[i - 1].slot {
                pending[i].slot = pending[i - 1].slot + 1;
            }
        }
        let mut world = World {
            state: State::new(),
            txs: Vec::with_capacity(pending.len()),
            index: BTreeMap::new(),
            errors: std::mem::take(&mut self.errors),
        };
        for (n, spec) in pending.into_iter().enumerate() {
            let n = u32::try_from(n).unwrap_or(u32::MAX);
            let compiled = tx::compile(&spec);
            let (exec, errors) = tx::execute(&spec, &compiled, &mut self.state, self.seed);
            world.errors.extend(errors.into_iter().map(|e| format!("world tx {n}: {}", e.0)));
            for key in compiled.keys.iter().map(|k| k.pubkey).filter(|k| !World::is_builtin(k)) {
                world.index.entry(key).or_default().push(n);
            }
            let signature = keys::TxId::World(n).signature(self.seed);
            world.txs.push(WorldTx { spec, compiled, exec, signature });
        }
        world.state = self.state;
        world
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn world_executes_without_inconsistencies() {
        let cast = Cast::new();
        for seed in [0, 1, 42, u64::MAX] {
            let world = World::build(seed, &cast);
            assert!(world.errors.is_empty(), "seed {seed}: {:?}", world.errors);
            assert!(world.txs.windows(2).all(|w| w[0].spec.slot < w[1].spec.slot));
            assert!(world.txs.iter().all(|t| t.spec.slot <= clock::AS_OF_SLOT));
            assert!(world.state.values().all(|a| !matches!(a.data, Data::Uninitialized { .. })));
        }
    }

    #[test]
    fn balances_chain_between_transactions() {
        let cast = Cast::new();
        let world = World::build(3, &cast);
        let mut last_post: BTreeMap<Pubkey, u64> = BTreeMap::new();
        for t in &world.txs {
            for (i, k) in t.compiled.keys.iter().enumerate() {
                if let Some(post) = last_post.get(&k.pubkey) {
                    assert_eq!(*post, t.exec.pre[i], "{} in slot {}", k.pubkey, t.spec.slot);
                }
                last_post.insert(k.pubkey, t.exec.post[i]);
            }
        }
        for (k, lamports) in last_post {
            assert_eq!(world.state.get(&k).map_or(0, |a| a.lamports), lamports, "{k}");
        }
    }
}
