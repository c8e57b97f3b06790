//! Guards: their bytes (the program's layout), the plan's arithmetic, the guarded transaction
//! (legacy and v0 with lookup tables) — and, in the real runtime, that each guard holds on what
//! the transaction leaves and fails on a tampered run.

use solana_address::Address;
use solana_instruction::Instruction;
use solana_message::{v0, AddressLookupTableAccount, Hash, VersionedMessage};
use solana_transaction::versioned::VersionedTransaction;
use spl_token_interface::instruction as token_ix;

use super::append::{append, AppendError};
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
    let prediction = Prediction {
        signer: key(ME),
        signer_lamports: posts[0].as_ref().expect("me").lamports,
        token_accounts: vec![&mine],
    };
    plan(&prediction, options)
}

#[test]
fn the_program_id_is_the_published_one() {
    assert_eq!(PROGRAM_ID.to_string(), PROGRAM_ID_TEXT);
}

#[test]
fn the_bytes_are_the_programs_layout_and_read_back() {
    let sol = GuardInstruction { target: key(ME), assertions: vec![Assertion::LamportsAtLeast(0x0102)] };
    assert_eq!(sol.encode(), [&[5u8, 0, 0][..], &0x0102u64.to_le_bytes(), &[4]].concat());
    let token = GuardInstruction {
        target: key(MINE),
        assertions: vec![
            Assertion::TokenOwner(key(ME)),
            Assertion::TokenDelegate(Some(key(OTHER))),
            Assertion::TokenCloseAuthority(None),
            Assertion::TokenAmountAtLeast(7),
        ],
    };
    let expected =
        [&[10u8, 0, 4, 1][..], &[ME; 32], &[0, 3, 1], &[OTHER; 32], &[0, 7, 0, 0, 2], &7u64.to_le_bytes(), &[4]]
            .concat();
    assert_eq!(token.encode(), expected);
    for guard in [&sol, &token] {
        assert_eq!(GuardInstruction::decode(guard.target, &guard.encode()).as_ref(), Ok(guard));
    }
    let refused = |data: &[u8]| GuardInstruction::decode(key(ME), data).is_err();
    assert!(refused(&[sol.encode(), vec![0]].concat()), "trailing bytes");
    assert!(refused(&[&[5u8, 1][..], &sol.encode()[2..]].concat()), "another log level");
    assert!(refused(&[&[9u8][..], &sol.encode()[1..]].concat()), "another instruction");
    let mut other_operator = sol.encode();
    *other_operator.last_mut().expect("a byte") = 0;
    assert!(refused(&other_operator), "an operator no guard makes");
    assert!(refused(&[10, 0, 0]), "no assertion");
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
    let (big, small) = (tokens(1_000_000), tokens(3));
    let prediction = Prediction { signer: key(ME), signer_lamports: 5_000, token_accounts: vec![&big] };
    let guards = plan(&prediction, &GuardOptions { slippage_bps: 50, sol_tolerance_lamports: 1_000 });
    assert_eq!(guards[0].assertions, [Assertion::LamportsAtLeast(4_000)], "the signer's SOL first");
    assert_eq!(guards[1].assertions[3], Assertion::TokenAmountAtLeast(995_000), "0.5 % below");
    // The allowed drop rounds down (the guard is never looser than asked); all of it is 0.
    let prediction = Prediction { signer: key(ME), signer_lamports: 5_000, token_accounts: vec![&small] };
    let guards = plan(&prediction, &GuardOptions { slippage_bps: 5_000, sol_tolerance_lamports: 5_000 });
    assert_eq!(guards.len(), 1, "no SOL guard when the tolerance covers the balance");
    assert_eq!(guards[0].assertions[3], Assertion::TokenAmountAtLeast(2));
    let all = plan(&prediction, &GuardOptions { slippage_bps: GUARD_SLIPPAGE_BPS_MAX, sol_tolerance_lamports: 0 });
    assert_eq!(all[1].assertions[3], Assertion::TokenAmountAtLeast(0));
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
    // Within the slippage (1 % of the 800 left: 792) it holds; a larger debit fails on the amount.
    let posts = run(&[token_transfer(208), sol_transfer(SOL)]);
    assert_eq!(token_guard.holds(after(&posts, &token_guard.target)), Ok(()));
    let posts = run(&[token_transfer(209), sol_transfer(SOL)]);
    let failed = token_guard.holds(after(&posts, &token_guard.target));
    assert_eq!(failed, Err(Failed::Assertion { index: 3, actual: "amount 791".into() }));
    // More SOL out than predicted fails the SOL guard; a closed token account fails its guard.
    let posts = run(&[token_transfer(200), sol_transfer(SOL + 1)]);
    assert!(matches!(sol_guard.holds(after(&posts, &sol_guard.target)), Err(Failed::Assertion { index: 0, .. })));
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
    let guarded = append(&original, &accounts, &guards).expect("appended");
    check_appended(&original, &guarded, &[], &guards);
    // Guarded again: the program is named once.
    let accounts: Vec<Pubkey> = read(&guarded, &[]).0.iter().map(|a| a.0).collect();
    let twice = append(&guarded, &accounts, &guards).expect("appended again");
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
    let guarded = append(&original, &accounts, &guards).expect("appended");
    check_appended(&original, &guarded, &tables, &guards);
}

#[test]
fn a_signed_or_too_large_transaction_is_refused_by_name() {
    let original = transaction(key(ME), &[sol_transfer(SOL)]);
    let accounts: Vec<Pubkey> = read(&original, &[]).0.iter().map(|a| a.0).collect();
    let mut signed = original.clone();
    signed[1] = 1; // the first signature's first byte
    assert_eq!(append(&signed, &accounts, &guards_of(&[ME])), Err(AppendError::Signed));
    let memo = Instruction::new_with_bytes(addr(key(50)), &[b'x'; 900], Vec::new());
    let big = transaction(key(ME), &[sol_transfer(SOL), memo]);
    let accounts: Vec<Pubkey> = read(&big, &[]).0.iter().map(|a| a.0).collect();
    let refused = append(&big, &accounts, &guards_of(&[ME, TO, ME, TO, ME, TO]));
    assert!(matches!(refused, Err(AppendError::TooLarge { bytes }) if bytes > 1_232), "{refused:?}");
    assert_eq!(refused.expect_err("refused").code(), "GUARDED_TRANSACTION_TOO_LARGE");
}
