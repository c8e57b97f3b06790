//! Guards: their bytes (the program's layout), the plan's arithmetic, the guarded transaction
//! (legacy and v0 with lookup tables) — and, in the real runtime, that each guard holds on what
//! the transaction leaves and fails on a tampered run.

use solana_address::Address;
use solana_instruction::Instruction;
use solana_message::{v0, AddressLookupTableAccount, Hash, VersionedMessage};
use solana_transaction::versioned::VersionedTransaction;
use spl_token_interface::instruction as token_ix;

use super::append::{append, read as read_tx, AppendError, Budget, GUARD_UNITS_PER_INSTRUCTION};
use super::lighthouse::{AccountAfter, Assertion, Failed, GuardInstruction, PROGRAM_ID, PROGRAM_ID_TEXT};
use super::*;
use crate::ledger::model::{TokenAccountState, TokenProgram};
use crate::ledger::transaction::{decode, message};
use crate::runtime::fixtures::*;
use crate::runtime::{PostAccount, PreAccount, Runtime};

/// The signer, its mint, its token account, another's, and where SOL goes.
const ME: u8 = 1;
const MINT: u8 = 3;
const MINE: u8 = 4;
const THEIRS: u8 = 5;
const OTHER: u8 = 6;
const TO: u8 = 7;
const ATTACKER: u8 = 9;

fn world() -> Vec<PreAccount> {
    vec![
        wallet(key(ME), 10 * SOL),
        mint(key(MINT)),
        token_account(key(MINE), key(MINT), key(ME), 1_000),
        token_account(key(THEIRS), key(MINT), key(OTHER), 0),
    ]
}

fn token_transfer(amount: u64) -> Instruction {
    let t = spl_token_interface::id();
    token_ix::transfer(&t, &addr(key(MINE)), &addr(key(THEIRS)), &addr(key(ME)), &[], amount).expect("builds")
}

fn sol_transfer(lamports: u64) -> Instruction {
    solana_system_interface::instruction::transfer(&addr(key(ME)), &addr(key(TO)), lamports)
}

fn hand_away() -> Instruction {
    let t = spl_token_interface::id();
    let owner = token_ix::AuthorityType::AccountOwner;
    token_ix::set_authority(&t, &addr(key(MINE)), Some(&addr(key(ATTACKER))), owner, &addr(key(ME)), &[])
        .expect("builds")
}

const WANTED: [u8; 4] = [ME, MINE, THEIRS, TO];

/// `ixs` executed by the real runtime on `world()`: the wanted accounts after it.
fn run(ixs: &[Instruction]) -> Vec<Option<PostAccount>> {
    let wanted: Vec<Pubkey> = WANTED.iter().map(|&k| key(k)).collect();
    let ran = ran(Runtime::new().execute(&transaction(key(ME), ixs), &world(), &wanted, MOMENT).expect("runs"));
    assert_eq!(ran.err, None, "the transaction succeeds: {:?}", ran.logs);
    ran.accounts
}

fn after<'a>(posts: &'a [Option<PostAccount>], target: &Pubkey) -> Option<AccountAfter<'a>> {
    let at = WANTED.iter().position(|&k| key(k) == *target).expect("a wanted account");
    posts[at].as_ref().map(|p| AccountAfter { owner: p.owner, lamports: p.lamports, data: &p.data })
}

/// The ledger model's reading of a token account the runtime left.
fn model(address: Pubkey, post: &Option<PostAccount>) -> TokenAccount {
    let t = token_state(post);
    let key_of = |a: Option<Address>| a.map(|a| Pubkey(a.to_bytes()));
    TokenAccount {
        address,
        mint: Pubkey(t.mint.to_bytes()),
        owner: Pubkey(t.owner.to_bytes()),
        program: TokenProgram::Token,
        amount: t.amount,
        decimals: 6,
        delegate: key_of(t.delegate.into()),
        delegated_amount: t.delegated_amount,
        close_authority: key_of(t.close_authority.into()),
        state: TokenAccountState::Initialized,
        is_native: false,
        lamports: post.as_ref().map_or(0, |p| p.lamports),
        extensions: Vec::new(),
    }
}

/// The guards of what `ixs` leave (the signer's SOL and its token account), within `options`.
fn predicted(ixs: &[Instruction], options: &GuardOptions) -> Vec<GuardInstruction> {
    let posts = run(ixs);
    let mine = model(key(MINE), &posts[1]);
    let me = posts[0].as_ref().expect("me");
    let prediction = Prediction {
        signer: key(ME),
        signer_after: Some((me.lamports, me.owner)),
        token_accounts: vec![PredictedToken { after: &mine, amount_before: 1_000 }],
    };
    plan(&prediction, options, 0)
}

#[test]
fn the_program_id_is_the_published_one() {
    assert_eq!(PROGRAM_ID.to_string(), PROGRAM_ID_TEXT);
}

#[test]
fn the_bytes_are_the_programs_layout_and_read_back() {
    let sol = GuardInstruction {
        target: key(ME),
        assertions: vec![Assertion::LamportsAtLeast(0x0102), Assertion::AccountOwner(key(TO))],
    };
    // AssertAccountInfoMulti, Silent, 2 assertions: Lamports (0) ≥ (4), Owner (2) == (0).
    let expected = [&[6u8, 0, 2, 0][..], &0x0102u64.to_le_bytes(), &[4, 2], &[TO; 32], &[0]].concat();
    assert_eq!(sol.encode(), expected);
    let token = GuardInstruction {
        target: key(MINE),
        assertions: vec![
            Assertion::TokenOwner(key(ME)),
            Assertion::TokenDelegate(Some(key(OTHER))),
            Assertion::TokenDelegatedAmountAtMost(9),
            Assertion::TokenCloseAuthority(None),
            Assertion::TokenAmountAtLeast(7),
        ],
    };
    // AssertTokenAccountMulti, Silent, 5: Owner (1) ==, Delegate (3) Some ==, DelegatedAmount (6)
    // ≤ (5), CloseAuthority (7) None ==, Amount (2) ≥.
    let expected = [
        &[10u8, 0, 5, 1][..],
        &[ME; 32],
        &[0, 3, 1],
        &[OTHER; 32],
        &[0, 6],
        &9u64.to_le_bytes(),
        &[5, 7, 0, 0, 2],
        &7u64.to_le_bytes(),
        &[4],
    ]
    .concat();
    assert_eq!(token.encode(), expected);
    for guard in [&sol, &token] {
        assert_eq!(GuardInstruction::decode(guard.target, &guard.encode()).as_ref(), Ok(guard));
    }
    let refused = |data: &[u8]| GuardInstruction::decode(key(ME), data).is_err();
    assert!(refused(&[sol.encode(), vec![0]].concat()), "trailing bytes");
    assert!(refused(&[&[6u8, 1][..], &sol.encode()[2..]].concat()), "another log level");
    assert!(refused(&[&[5u8][..], &sol.encode()[1..]].concat()), "another instruction");
    let mut other_operator = sol.encode();
    *other_operator.last_mut().expect("a byte") = 1;
    assert!(refused(&other_operator), "an operator no guard makes");
    assert!(refused(&[10, 0, 0]), "no assertion");
    let mut token_in_account_info = token.encode();
    token_in_account_info[0] = 6;
    assert!(refused(&token_in_account_info), "a token assertion where an account-info one goes");
}

#[test]
fn the_plan_floors_amounts_by_the_slippage_and_sol_by_the_tolerance() {
    let tokens = |amount: u64| TokenAccount {
        address: key(MINE),
        mint: key(MINT),
        owner: key(ME),
        program: TokenProgram::Token,
        amount,
        decimals: 6,
        delegate: None,
        delegated_amount: 0,
        close_authority: None,
        state: TokenAccountState::Initialized,
        is_native: false,
        lamports: 2_039_280,
        extensions: Vec::new(),
    };
    let big = tokens(1_000_000);
    let system = Pubkey::default();
    let prediction = Prediction {
        signer: key(ME),
        signer_after: Some((5_000, system)),
        token_accounts: vec![PredictedToken { after: &big, amount_before: 1_200_000 }],
    };
    let guards = plan(&prediction, &GuardOptions { slippage_bps: 50, sol_tolerance_lamports: 1_000 }, 500);
    let sol = [Assertion::LamportsAtLeast(3_500), Assertion::AccountOwner(system)];
    assert_eq!(guards[0].assertions, sol, "the signer's own account first: less the tolerance and the guards' fee");
    // 0.5 % of the 200,000 it moves, not of the 1,000,000 left.
    assert_eq!(guards[1].assertions[3], Assertion::TokenAmountAtLeast(999_000));
    // The allowed drop rounds down (the guard is never looser than asked); a tolerance that
    // covers the balance leaves the owner; an approved delegate's allowance is asserted.
    let delegated = TokenAccount { delegate: Some(key(OTHER)), delegated_amount: 5, ..tokens(3) };
    let prediction = Prediction {
        signer: key(ME),
        signer_after: Some((5_000, system)),
        token_accounts: vec![PredictedToken { after: &delegated, amount_before: 0 }],
    };
    let guards = plan(&prediction, &GuardOptions { slippage_bps: 5_000, sol_tolerance_lamports: 5_000 }, 0);
    assert_eq!(guards[0].assertions, [Assertion::AccountOwner(system)]);
    assert_eq!(guards[1].assertions[2], Assertion::TokenDelegatedAmountAtMost(5));
    assert_eq!(guards[1].assertions[4], Assertion::TokenAmountAtLeast(2), "3 less 1.5 rounded down");
    let all = plan(&prediction, &GuardOptions { slippage_bps: GUARD_SLIPPAGE_BPS_MAX, sol_tolerance_lamports: 0 }, 0);
    assert_eq!(all[1].assertions[4], Assertion::TokenAmountAtLeast(0));
}

#[test]
fn each_guard_holds_on_what_the_runtime_leaves_and_fails_on_a_tampered_run() {
    let benign = [token_transfer(200), sol_transfer(SOL)];
    let options = GuardOptions { slippage_bps: 100, sol_tolerance_lamports: 0 };
    let guards = predicted(&benign, &options);
    assert_eq!(guards.len(), 2, "the signer's SOL and its token account");
    let posts = run(&benign);
    for guard in &guards {
        assert_eq!(guard.holds(after(&posts, &guard.target)), Ok(()), "{guard:?} holds as predicted");
    }
    let (sol_guard, token_guard) = (&guards[0], &guards[1]);
    // The owner handed away: the token account's guard fails at its first assertion.
    let posts = run(&[token_transfer(200), sol_transfer(SOL), hand_away()]);
    let failed = token_guard.holds(after(&posts, &token_guard.target));
    assert!(
        matches!(&failed, Err(Failed::Assertion { index: 0, actual }) if actual.contains(&key(ATTACKER).to_string()))
    );
    // Within the slippage (1 % of the 200 moved: 798) it holds; a larger debit fails on the amount.
    let posts = run(&[token_transfer(202), sol_transfer(SOL)]);
    assert_eq!(token_guard.holds(after(&posts, &token_guard.target)), Ok(()));
    let posts = run(&[token_transfer(203), sol_transfer(SOL)]);
    let failed = token_guard.holds(after(&posts, &token_guard.target));
    assert_eq!(failed, Err(Failed::Assertion { index: 3, actual: "amount 797".into() }));
    // More SOL out than predicted fails the SOL guard; so does the wallet assigned to another
    // program with its lamports in it; a closed token account fails its guard.
    let posts = run(&[token_transfer(200), sol_transfer(SOL + 1)]);
    assert!(matches!(sol_guard.holds(after(&posts, &sol_guard.target)), Err(Failed::Assertion { index: 0, .. })));
    let assign = solana_system_interface::instruction::assign(&addr(key(ME)), &addr(key(ATTACKER)));
    let posts = run(&[token_transfer(200), sol_transfer(SOL), assign]);
    let failed = sol_guard.holds(after(&posts, &sol_guard.target));
    assert!(
        matches!(&failed, Err(Failed::Assertion { index: 1, actual }) if actual.contains(&key(ATTACKER).to_string()))
    );
    let t = spl_token_interface::id();
    let close = token_ix::close_account(&t, &addr(key(MINE)), &addr(key(ME)), &addr(key(ME)), &[]).expect("builds");
    let posts = run(&[token_transfer(1_000), close]);
    assert_eq!(token_guard.holds(after(&posts, &token_guard.target)), Err(Failed::AccountOwnerMismatch));
}

/// The accounts, signer and writable flags of `bytes` resolved with `tables`, and its
/// instructions as (program, accounts, data).
type Ix = (Pubkey, Vec<Pubkey>, Vec<u8>);
fn read(bytes: &[u8], tables: &[Vec<Pubkey>]) -> (Vec<(Pubkey, bool, bool)>, Vec<Ix>) {
    let parsed = message::parse(bytes).expect("parses");
    let resolved = parsed.resolve(tables).expect("resolves");
    let accounts = resolved.accounts.iter().map(|a| (a.address, a.signer, a.writable)).collect();
    let at = |i: u8| resolved.accounts[usize::from(i)].address;
    let ixs = parsed
        .instructions
        .iter()
        .map(|ix| (at(ix.program), ix.accounts.iter().map(|&i| at(i)).collect(), ix.data.clone()))
        .collect();
    (accounts, ixs)
}

/// `bytes` read as `append` takes them.
fn tx(bytes: &[u8]) -> VersionedTransaction {
    read_tx(bytes).expect("a transaction")
}

fn guards_of(targets: &[u8]) -> Vec<GuardInstruction> {
    targets
        .iter()
        .map(|&t| GuardInstruction { target: key(t), assertions: vec![Assertion::LamportsAtLeast(1)] })
        .collect()
}

/// Checks `guarded` is `original` with `guards` appended and nothing else changed.
fn check_appended(original: &[u8], guarded: &[u8], tables: &[Vec<Pubkey>], guards: &[GuardInstruction]) {
    let (before_accounts, before_ixs) = read(original, tables);
    let (after_accounts, after_ixs) = read(guarded, tables);
    assert_eq!(after_ixs[..before_ixs.len()], before_ixs[..], "the transaction's own instructions, unchanged");
    for (guard, ix) in guards.iter().zip(&after_ixs[before_ixs.len()..]) {
        assert_eq!(ix, &(PROGRAM_ID, vec![guard.target], guard.encode()));
    }
    assert_eq!(after_ixs.len(), before_ixs.len() + guards.len());
    for (address, signer, writable) in &after_accounts {
        match before_accounts.iter().find(|a| a.0 == *address) {
            Some(before) => assert_eq!((signer, writable), (&before.1, &before.2), "{address} keeps its flags"),
            None => assert_eq!((*address, *signer, *writable), (PROGRAM_ID, false, false), "only the program is new"),
        }
    }
}

#[test]
fn a_legacy_transaction_gets_its_guards_appended_and_keeps_the_program_once() {
    let original = transaction(key(ME), &[token_transfer(200), sol_transfer(SOL)]);
    let accounts: Vec<Pubkey> = read(&original, &[]).0.iter().map(|a| a.0).collect();
    let guards = guards_of(&[ME, MINE]);
    let guarded = append(tx(&original), &accounts, &guards, &Budget::default()).expect("appended");
    check_appended(&original, &guarded, &[], &guards);
    // Guarded again: the program is named once.
    let accounts: Vec<Pubkey> = read(&guarded, &[]).0.iter().map(|a| a.0).collect();
    let twice = append(tx(&guarded), &accounts, &guards, &Budget::default()).expect("appended again");
    assert_eq!(read(&twice, &[]).0.len(), accounts.len(), "no second program key");
}

#[test]
fn a_v0_transaction_keeps_its_lookup_table_indices_right() {
    let table = key(40);
    let loaded = vec![key(MINE), key(THEIRS), key(TO)];
    let tables = vec![loaded.clone()];
    let lookup = AddressLookupTableAccount { key: addr(table), addresses: loaded.iter().map(|k| addr(*k)).collect() };
    let ixs = [token_transfer(200), sol_transfer(SOL)];
    let message =
        v0::Message::try_compile(&addr(key(ME)), &ixs, &[lookup], Hash::new_from_array([7; 32])).expect("compiles");
    assert!(!message.address_table_lookups.is_empty(), "accounts are loaded from the table");
    let signatures = vec![Default::default(); 1];
    let original = bincode::serialize(&VersionedTransaction { signatures, message: VersionedMessage::V0(message) })
        .expect("bytes");
    let parsed = message::parse(&original).expect("parses");
    let accounts: Vec<Pubkey> =
        decode(&parsed, &tables).expect("decodes").resolved.accounts.iter().map(|a| a.address).collect();
    let guards = guards_of(&[ME, MINE, THEIRS]);
    let guarded = append(tx(&original), &accounts, &guards, &Budget::default()).expect("appended");
    check_appended(&original, &guarded, &tables, &guards);
}

#[test]
fn a_signed_or_too_large_transaction_is_refused_by_name() {
    let original = transaction(key(ME), &[sol_transfer(SOL)]);
    let accounts: Vec<Pubkey> = read(&original, &[]).0.iter().map(|a| a.0).collect();
    let mut signed = original.clone();
    signed[1] = 1; // the first signature's first byte
    assert_eq!(append(tx(&signed), &accounts, &guards_of(&[ME]), &Budget::default()), Err(AppendError::Signed));
    let memo = Instruction::new_with_bytes(addr(key(50)), &[b'x'; 900], Vec::new());
    let big = transaction(key(ME), &[sol_transfer(SOL), memo]);
    let accounts: Vec<Pubkey> = read(&big, &[]).0.iter().map(|a| a.0).collect();
    let refused = append(tx(&big), &accounts, &guards_of(&[ME, TO, ME, TO, ME, TO]), &Budget::default());
    assert!(matches!(refused, Err(AppendError::TooLarge { bytes }) if bytes > 1_232), "{refused:?}");
    assert_eq!(refused.expect_err("refused").code(), "GUARDED_TRANSACTION_TOO_LARGE");
}

#[test]
fn a_set_limit_is_raised_for_the_guards_and_their_fee_is_allowed_for() {
    use solana_compute_budget_interface::ComputeBudgetInstruction as CB;
    let (limit, price) = (CB::set_compute_unit_limit(10_000), CB::set_compute_unit_price(1_000_000));
    let original = transaction(key(ME), &[limit, price.clone(), sol_transfer(SOL)]);
    let budget = Budget::of(&tx(&original));
    assert_eq!((budget.limit, budget.price_micro_lamports), (Some((0, 10_000)), 1_000_000));
    // 1 lamport a unit: two guards' 2 × 2,000 units.
    assert_eq!(budget.fee_more_lamports_max(2), 2 * u64::from(GUARD_UNITS_PER_INSTRUCTION));
    let accounts: Vec<Pubkey> = read(&original, &[]).0.iter().map(|a| a.0).collect();
    let guarded = append(tx(&original), &accounts, &guards_of(&[ME, TO]), &budget).expect("appended");
    let raised = CB::set_compute_unit_limit(10_000 + 2 * GUARD_UNITS_PER_INSTRUCTION).data;
    let (before, after) = (read(&original, &[]).1, read(&guarded, &[]).1);
    assert_eq!(after[0].2, raised, "the limit, raised by the guards' units");
    assert_eq!(after[1..before.len()], before[1..], "the rest unchanged");
    // Without a limit, each guard is an instruction of a program that is not a builtin: the
    // runtime gives it 200,000 units, at the price set.
    let unlimited = Budget::of(&tx(&transaction(key(ME), &[price, sol_transfer(SOL)])));
    assert_eq!(unlimited.fee_more_lamports_max(1), 200_000);
    assert_eq!(Budget::of(&tx(&transaction(key(ME), &[sol_transfer(SOL)]))).fee_more_lamports_max(3), 0);
}

#[test]
fn a_transaction_naming_the_program_otherwise_than_read_only_is_refused_by_name() {
    // Named writable (a meta of its own instruction) rather than as a read-only program.
    let writable = Instruction::new_with_bytes(
        addr(key(50)),
        &[1],
        vec![solana_instruction::AccountMeta::new(addr(PROGRAM_ID), false)],
    );
    let original = transaction(key(ME), &[writable, sol_transfer(SOL)]);
    let accounts: Vec<Pubkey> = read(&original, &[]).0.iter().map(|a| a.0).collect();
    let refused = append(tx(&original), &accounts, &guards_of(&[ME]), &Budget::default());
    assert_eq!(refused, Err(AppendError::LighthouseNamed));
    // Or loaded from a lookup table.
    let tables = vec![vec![PROGRAM_ID, key(TO)]];
    let lookup =
        AddressLookupTableAccount { key: addr(key(40)), addresses: tables[0].iter().map(|k| addr(*k)).collect() };
    let reads = Instruction::new_with_bytes(
        addr(key(50)),
        &[1],
        vec![solana_instruction::AccountMeta::new_readonly(addr(PROGRAM_ID), false)],
    );
    let message =
        v0::Message::try_compile(&addr(key(ME)), &[reads, sol_transfer(SOL)], &[lookup], Hash::new_from_array([7; 32]))
            .expect("compiles");
    let bytes = bincode::serialize(&VersionedTransaction {
        signatures: vec![Default::default()],
        message: VersionedMessage::V0(message),
    })
    .expect("bytes");
    let accounts: Vec<Pubkey> = decode(&message::parse(&bytes).expect("parses"), &tables)
        .expect("decodes")
        .resolved
        .accounts
        .iter()
        .map(|a| a.address)
        .collect();
    assert!(accounts.iter().skip(3).any(|a| *a == PROGRAM_ID), "loaded from the table: {accounts:?}");
    assert_eq!(append(tx(&bytes), &accounts, &guards_of(&[ME]), &Budget::default()), Err(AppendError::LighthouseNamed));
}
