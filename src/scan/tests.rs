//! The scan's decoding and findings against instructions built by the official interface
//! crates (their builders, not our reading of the layouts), compiled into real messages.

use std::collections::BTreeSet;

use solana_message::{v0, VersionedMessage};
use solana_transaction::versioned::VersionedTransaction;

use super::findings::{self, Context, Simulation, Verdict};
use super::state::{fixtures, States};
use crate::engine::report::{Fact, Severity};
use crate::labels::{Labels, Lists};
use crate::ledger::instruction::{ids, InstructionKind as K};
use crate::ledger::transaction::message::{self, MessageVersion};
use crate::ledger::transaction::{decode, Decoded, TransactionError};
use crate::pubkey::Pubkey;

/// An instruction of any interface crate's version, as plain parts.
type Ix = message::InstructionParts;

macro_rules! sdk {
    ($ix:expr) => {
        crate::instruction_parts!($ix)
    };
}

fn addr(seed: u8) -> Pubkey {
    Pubkey([seed; 32])
}

fn sdk_addr(p: &Pubkey) -> solana_address::Address {
    message::sdk_address(p)
}

fn serialize(payer: Pubkey, ixs: &[Ix], v0: bool) -> Vec<u8> {
    message::compile(payer, ixs, [7; 32], v0).expect("compiles")
}

fn decoded(bytes: &[u8]) -> Decoded {
    decode(&message::parse(bytes).expect("parses"), &[]).expect("decodes")
}

const ME: u8 = 1;

fn judge(payer: Pubkey, ixs: &[Ix]) -> (Decoded, Vec<findings::Finding>) {
    judge_with(payer, ixs, &Labels::builtin(), None)
}

/// `judge` under `labels` (an account's lists laid over), with the accounts before it.
fn judge_with(
    payer: Pubkey,
    ixs: &[Ix],
    labels: &Labels,
    before: Option<&States>,
) -> (Decoded, Vec<findings::Finding>) {
    let tx = decoded(&serialize(payer, ixs, false));
    let seen = BTreeSet::from([addr(50)]);
    let simulation = Simulation::NotRun { status: "skipped", reason: None };
    let sweep = crate::engine::sweep::SweepThresholds::DEFAULT;
    let ctx =
        Context { signer: payer, labels, counterparties: Some(&seen), origin: None, simulation, sweep: &sweep, before };
    let found = findings::judge(&tx, &ctx);
    (tx, found)
}

fn token_id() -> solana_address::Address {
    sdk_addr(&Pubkey::parse(ids::TOKEN).expect("id"))
}

#[test]
fn an_unlimited_approval_to_a_stranger_is_critical_and_carries_its_revoke() {
    let (me, account, stranger) = (addr(ME), addr(2), addr(3));
    let approve = spl_token_interface::instruction::approve(
        &token_id(),
        &sdk_addr(&account),
        &sdk_addr(&stranger),
        &sdk_addr(&me),
        &[],
        u64::MAX,
    )
    .expect("builds");
    let (tx, found) = judge(me, &[sdk!(approve)]);
    assert!(matches!(tx.instructions[0].kind, K::TokenApprove { amount: u64::MAX, .. }), "{:?}", tx.instructions);
    assert_eq!(tx.instructions[0].name, "approve");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].kind, found[0].severity), ("token_approval", Severity::Critical));
    assert_eq!(found[0].fix_instructions.len(), 1);
    assert_eq!(found[0].fix_instructions[0].data, bs58::encode([5u8]).into_string(), "a revoke");
    assert_eq!(findings::verdict(&found), Verdict::Malicious);
}

#[test]
fn amounts_are_typed_and_a_deny_listed_recipient_says_the_list_is_the_reason() {
    let (me, account, delegate, listed) = (addr(ME), addr(2), addr(3), addr(9));
    let lists = Lists::new([], [listed].into_iter().collect()).expect("lists");
    let labels = Labels::builtin().with_lists(std::sync::Arc::new(lists));
    let pay = solana_system_interface::instruction::transfer(&sdk_addr(&me), &sdk_addr(&listed), 21_780_842_148);
    let approve = spl_token_interface::instruction::approve(
        &token_id(),
        &sdk_addr(&account),
        &sdk_addr(&delegate),
        &sdk_addr(&me),
        &[],
        1_500_000,
    )
    .expect("builds");
    // The token account as it is before: mint key(90), 6 decimals (a plain `approve` names neither).
    let before = States::from([(account, fixtures::token(2, ME, 500, None))]);
    let (_, found) = judge_with(me, &[sdk!(pay), sdk!(approve.clone())], &labels, Some(&before));
    let kinds: Vec<&str> = found.iter().map(|f| f.kind).collect();
    assert_eq!(kinds, ["flagged_recipient", "token_approval"]);

    let flagged = &found[0].facts;
    assert_eq!(flagged["lamports"], Fact::Unsigned(21_780_842_148), "lamports are an integer, no unit inside");
    assert!(!flagged.contains_key("amount"), "{flagged:?}");
    assert_eq!(flagged["reason"], Fact::Text("deny_list".into()));
    assert!(found[0].title.contains("deny list") && found[0].detail.contains("deny list"), "{:?}", found[0]);
    assert!(!found[0].detail.contains("malicious"), "the account's list, not the labels: {}", found[0].detail);

    let approval = &found[1].facts;
    assert_eq!(approval["amount"], Fact::Text("1500000".into()), "a token amount is a string of base units");
    assert_eq!(approval["mint"], Fact::Text(addr(90).to_string()));
    assert_eq!(approval["decimals"], Fact::Unsigned(6));
    assert!(!approval.contains_key("reason"), "the delegate is on no list: {approval:?}");
    let json = serde_json::to_value(&found).expect("serializes");
    assert!(json[0]["facts"]["lamports"].is_u64() && json[1]["facts"]["amount"].is_string(), "{json}");

    // The token account unread: the amount alone, no mint or decimals guessed.
    let (_, unread) = judge_with(me, &[sdk!(approve)], &labels, None);
    assert_eq!(unread[0].facts.keys().copied().collect::<Vec<_>>(), ["account", "amount", "delegate"]);
}

#[test]
fn authority_changes_that_move_no_funds_are_found() {
    let (me, other) = (addr(ME), addr(9));
    let assign = solana_system_interface::instruction::assign(&sdk_addr(&me), &sdk_addr(&other));
    let owner = spl_token_interface::instruction::set_authority(
        &token_id(),
        &sdk_addr(&addr(4)),
        Some(&sdk_addr(&other)),
        spl_token_interface::instruction::AuthorityType::AccountOwner,
        &sdk_addr(&me),
        &[],
    )
    .expect("builds");
    let nonce = solana_system_interface::instruction::authorize_nonce_account(
        &sdk_addr(&addr(5)),
        &sdk_addr(&me),
        &sdk_addr(&other),
    );
    let (_, found) = judge(me, &[sdk!(assign), sdk!(owner), sdk!(nonce)]);
    let kinds: Vec<(&str, Option<u16>)> = found.iter().map(|f| (f.kind, f.instruction)).collect();
    assert_eq!(
        kinds,
        [("wallet_assign", Some(0)), ("token_owner_change", Some(1)), ("nonce_authority_change", Some(2))]
    );
    assert!(found.iter().all(|f| f.severity == Severity::Critical));
}

#[test]
fn a_durable_nonce_transaction_says_its_signature_never_expires() {
    let (me, nonce) = (addr(ME), addr(6));
    let advance = solana_system_interface::instruction::advance_nonce_account(&sdk_addr(&nonce), &sdk_addr(&me));
    let pay = solana_system_interface::instruction::transfer(&sdk_addr(&me), &sdk_addr(&addr(50)), 5);
    let (tx, found) = judge(me, &[sdk!(advance), sdk!(pay)]);
    assert!(matches!(tx.instructions[0].kind, K::NonceAdvance { nonce: n, authority: a } if n == nonce && a == me));
    assert_eq!(found.iter().map(|f| f.kind).collect::<Vec<_>>(), ["durable_nonce"]);
    // Said, and not a warning by itself: the payment is what the verdict judges.
    assert_eq!(findings::verdict(&found), Verdict::Benign);
}

#[test]
fn a_transfer_to_a_lookalike_of_a_counterparty_is_poisoning() {
    let me = addr(ME);
    let real = addr(50);
    let text = real.to_string();
    // The same number plus 58⁴: its last four base58 digits are unchanged, and so (for a
    // change this small against a 256-bit number) are its first four.
    let mut bytes = real.0;
    let mut carry = 58u64.pow(4);
    for b in bytes.iter_mut().rev() {
        let sum = u64::from(*b) + (carry & 0xff);
        *b = sum as u8;
        carry = (carry >> 8) + (sum >> 8);
    }
    let fake = Pubkey(bytes);
    let t = fake.to_string();
    assert!(t != text && t[..4] == text[..4] && t[t.len() - 4..] == text[text.len() - 4..], "{t} vs {text}");
    let pay = solana_system_interface::instruction::transfer(&sdk_addr(&me), &sdk_addr(&fake), 1_000);
    let (_, found) = judge(me, &[sdk!(pay)]);
    assert_eq!(found.iter().map(|f| f.kind).collect::<Vec<_>>(), ["lookalike_recipient"]);
    assert_eq!(found[0].facts["lookalikeOf"], Fact::Text(text.clone()));
    // A plain payment to the real counterparty finds nothing.
    let pay = solana_system_interface::instruction::transfer(&sdk_addr(&me), &sdk_addr(&real), 1_000);
    assert_eq!(judge(me, &[sdk!(pay)]).1, []);
}

#[test]
fn a_staker_handed_away_carries_the_authorize_that_takes_it_back() {
    let (me, stake) = (addr(ME), addr(7));
    let authorize = solana_stake_interface::instruction::authorize(
        &stake.0.into(),
        &me.0.into(),
        &addr(9).0.into(),
        solana_stake_interface::state::StakeAuthorize::Staker,
        None,
    );
    let (tx, found) = judge(me, &[sdk!(authorize)]);
    assert_eq!(tx.instructions[0].name, "authorize");
    assert_eq!((found[0].kind, found[0].severity), ("stake_authority_change", Severity::High));
    assert_eq!(found[0].fix_instructions.len(), 1);
}

#[test]
fn token_2022_transfers_with_a_fee_memos_and_compute_budget_are_decoded() {
    let me = addr(ME);
    let t22 = sdk_addr(&Pubkey::parse(ids::TOKEN_2022).expect("id"));
    let fee = spl_token_2022_interface::extension::transfer_fee::instruction::transfer_checked_with_fee(
        &t22,
        &sdk_addr(&addr(2)),
        &sdk_addr(&addr(3)),
        &sdk_addr(&addr(4)),
        &sdk_addr(&me),
        &[],
        1_000,
        6,
        10,
    )
    .expect("builds");
    let memo = Ix { program: Pubkey::parse(ids::MEMO).expect("id"), metas: vec![], data: b"thanks".to_vec() };
    let budget = Ix {
        program: Pubkey::parse(ids::COMPUTE_BUDGET).expect("id"),
        metas: vec![],
        data: [vec![2u8], 5_000u32.to_le_bytes().to_vec()].concat(),
    };
    let tx = decoded(&serialize(me, &[sdk!(fee), memo, budget], true));
    assert_eq!(tx.version, MessageVersion::V0);
    let names: Vec<&str> = tx.instructions.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["transferCheckedWithFee", "memo", "setComputeUnitLimit"]);
    assert!(matches!(tx.instructions[0].kind, K::TokenTransfer { amount: 1_000, mint: Some(m), .. } if m == addr(3)));
    assert_eq!(tx.instructions[1].kind, K::Memo { text: "thanks".into() });
}

#[test]
fn unknown_programs_stay_raw_and_bad_input_is_refused_with_its_reason() {
    let me = addr(ME);
    let odd = Ix { program: addr(40), metas: vec![(me, true, true)], data: vec![1, 2, 3] };
    let (tx, found) = judge(me, &[odd]);
    assert_eq!(tx.instructions[0].kind, K::Raw { data: bs58::encode([1u8, 2, 3]).into_string() });
    assert_eq!(found.iter().map(|f| f.kind).collect::<Vec<_>>(), ["unknown_program_writable"]);

    let bytes = serialize(me, &[], false);
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert!(matches!(message::parse(&trailing), Err(TransactionError::Malformed(_))));
    assert!(matches!(message::parse(&bytes[..bytes.len() - 1]), Err(TransactionError::Malformed(_))));
    assert!(matches!(message::parse(&[0u8; 1_300]), Err(TransactionError::TooLarge { bytes: 1_300 })));
    assert!(matches!(message::parse(b""), Err(TransactionError::Malformed(_))));

    // A message version past v0 (prefix 0x81) is named in the refusal, not a bincode error.
    let mut v1 = serialize(me, &[], true);
    let prefix = message::parse(&v1).expect("parses").message_offset;
    assert_eq!(v1[prefix], 0x80, "a v0 message's prefix");
    v1[prefix] = 0x81;
    let Err(TransactionError::Malformed(why)) = message::parse(&v1) else { panic!("v1 is refused") };
    assert!(why.contains("message version 1 is not supported"), "{why}");
}

#[test]
fn a_token_2022_batch_is_named_and_kept_raw() {
    let me = addr(ME);
    let t22 = Pubkey::parse(ids::TOKEN_2022).expect("id");
    let data = vec![255u8, 2, 3, 4];
    let batch = Ix { program: t22, metas: vec![(me, true, true)], data: data.clone() };
    let tx = decoded(&serialize(me, &[batch], false));
    assert_eq!(tx.instructions[0].name, "batch");
    assert_eq!(tx.instructions[0].kind, K::Raw { data: bs58::encode(&data).into_string() });
}

/// An address lookup table's account data, as the program lays it out (56-byte header).
fn table_data(addresses: &[Pubkey]) -> Vec<u8> {
    let mut data = 1u32.to_le_bytes().to_vec(); // LookupTable
    data.extend(u64::MAX.to_le_bytes()); // deactivation slot: active
    data.extend(0u64.to_le_bytes()); // last extended slot
    data.push(0); // its start index
    data.push(0); // no authority (frozen)
    data.extend([0u8; 32]);
    data.extend([0u8; 2]); // padding
    for a in addresses {
        data.extend(a.0);
    }
    data
}

#[test]
fn a_v0_message_loads_its_accounts_from_lookup_tables() {
    let (me, table, to) = (addr(ME), addr(30), addr(31));
    let pay = solana_system_interface::instruction::transfer(&sdk_addr(&me), &sdk_addr(&to), 42);
    // Compile with `to` static, then move it into a table lookup (writable index 1).
    let bytes = serialize(me, &[sdk!(pay)], true);
    let mut tx: VersionedTransaction = bincode::deserialize(&bytes).expect("reads");
    let VersionedMessage::V0(m) = &mut tx.message else { unreachable!() };
    let at = m.account_keys.iter().position(|k| k.as_ref() == to.0.as_slice()).expect("listed") as u8;
    assert_eq!(usize::from(at), m.account_keys.len() - 2, "last writable unsigned, before the program");
    m.account_keys.remove(usize::from(at));
    // The program (system) now sits at `at`; `to` is the first loaded account, after it.
    let loaded = m.account_keys.len() as u8;
    m.instructions[0].accounts = vec![0, loaded];
    m.instructions[0].program_id_index = at;
    m.address_table_lookups = vec![v0::MessageAddressTableLookup {
        account_key: sdk_addr(&table),
        writable_indexes: vec![1],
        readonly_indexes: vec![],
    }];
    let bytes = bincode::serialize(&tx).expect("writes");

    let parsed = message::parse(&bytes).expect("parses");
    assert_eq!(parsed.lookups[0].table, table);
    let addresses = message::lookup_table_addresses(&table_data(&[addr(60), to])).expect("a table");
    let tx = decode(&parsed, &[addresses]).expect("decodes");
    assert!(
        matches!(tx.instructions[0].kind, K::SystemTransfer { from, to: t, lamports: 42 } if from == me && t == to)
    );
    let loaded = tx.resolved.accounts.last().expect("one loaded");
    assert!(loaded.writable && !loaded.signer);
    // A table too short for the index the message loads is a malformed message.
    assert!(matches!(decode(&parsed, &[vec![addr(60)]]), Err(TransactionError::Malformed(_))));
    assert!(message::lookup_table_addresses(&[1, 2, 3]).is_err());
}

#[test]
fn a_fix_is_offered_only_while_the_wallet_can_still_sign_it() {
    let (me, account, thief) = (addr(ME), addr(2), addr(3));
    let approve = spl_token_interface::instruction::approve(
        &token_id(),
        &sdk_addr(&account),
        &sdk_addr(&thief),
        &sdk_addr(&me),
        &[],
        u64::MAX,
    )
    .expect("builds");
    let give = spl_token_interface::instruction::set_authority(
        &token_id(),
        &sdk_addr(&account),
        Some(&sdk_addr(&thief)),
        spl_token_interface::instruction::AuthorityType::AccountOwner,
        &sdk_addr(&me),
        &[],
    )
    .expect("builds");
    let (_, found) = judge(me, &[sdk!(approve.clone()), sdk!(give)]);
    assert_eq!(found[0].kind, "token_approval");
    assert!(found[0].fix_instructions.is_empty(), "the account is no longer the wallet's: {found:?}");
    let (_, alone) = judge(me, &[sdk!(approve)]);
    assert_eq!(alone[0].fix_instructions.len(), 1);

    let stake = addr(4);
    let authorize = |which| {
        solana_stake_interface::instruction::authorize(&stake.0.into(), &me.0.into(), &thief.0.into(), which, None)
    };
    use solana_stake_interface::state::StakeAuthorize::{Staker, Withdrawer};
    let (_, both) = judge(me, &[sdk!(authorize(Staker)), sdk!(authorize(Withdrawer))]);
    assert!(both.iter().all(|f| f.fix_instructions.is_empty()), "{both:?}");
    let (_, staker_only) = judge(me, &[sdk!(authorize(Staker))]);
    assert_eq!(staker_only[0].fix_instructions.len(), 1);
}

#[test]
fn every_finding_kind_is_in_the_catalogue_and_no_other() {
    let source = [include_str!("findings.rs"), include_str!("executed.rs"), include_str!("origin.rs")].concat();
    let listed: BTreeSet<&str> = super::catalogue::SCAN_FINDINGS.iter().map(|(kind, ..)| *kind).collect();
    for kind in &listed {
        assert!(source.contains(&format!("\"{kind}\"")), "{kind} is catalogued but never found");
    }
    for line in source.lines().filter(|l| l.trim_start().starts_with("kind: \"")) {
        let kind = line.trim().trim_start_matches("kind: \"").trim_end_matches("\",");
        assert!(listed.contains(kind), "{kind} is found but not catalogued");
    }
}

#[test]
fn a_sequences_accounts_are_the_signer_then_every_write_then_the_reads() {
    let signer = Pubkey([9; 32]);
    let transfer = |to: Pubkey| {
        let ix = solana_system_interface::instruction::transfer(
            &message::sdk_address(&signer),
            &message::sdk_address(&to),
            1,
        );
        let bytes = message::compile(signer, &[crate::instruction_parts!(ix)], [1; 32], false).expect("compiles");
        decode(&message::parse(&bytes).expect("parses"), &[]).expect("decodes")
    };
    let (a, b) = (Pubkey([1; 32]), Pubkey([2; 32]));
    let decoded = [transfer(a), transfer(b)];
    let each: Vec<Vec<Pubkey>> = decoded.iter().map(|d| super::accounts_to_read(d, &signer)).collect();
    assert_eq!(super::sequence_accounts(&signer, &decoded, &each), Ok(vec![signer, a, b]));
    // Accounts the messages do not write count as read-only: past the bound they are left out.
    let many: Vec<Vec<Pubkey>> = (0..2u8)
        .map(|t| {
            (0..60u8)
                .map(|i| {
                    Pubkey([
                        t + 10,
                        i,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                    ])
                })
                .collect()
        })
        .collect();
    let read = super::sequence_accounts(&signer, &decoded, &many).expect("reads are left out, not refused");
    assert_eq!(read.len(), crate::config::MULTIPLE_ACCOUNTS_LEN_MAX);
}

#[test]
fn a_sequence_writing_more_accounts_than_one_read_holds_is_refused() {
    let signer = Pubkey([9; 32]);
    // Five transactions of twenty transfers each: 100 recipients written, and the signer.
    let decoded: Vec<Decoded> = (0..5u8)
        .map(|t| {
            let ixs: Vec<_> = (0..20u8)
                .map(|i| {
                    let to = message::sdk_address(&Pubkey([
                        t + 1,
                        i + 1,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                        7,
                    ]));
                    crate::instruction_parts!(solana_system_interface::instruction::transfer(
                        &message::sdk_address(&signer),
                        &to,
                        1
                    ))
                })
                .collect();
            let bytes = message::compile(signer, &ixs, [1; 32], false).expect("compiles");
            decode(&message::parse(&bytes).expect("parses"), &[]).expect("decodes")
        })
        .collect();
    let each: Vec<Vec<Pubkey>> = decoded.iter().map(|d| super::accounts_to_read(d, &signer)).collect();
    assert_eq!(super::sequence_accounts(&signer, &decoded, &each), Err(super::SEQUENCE_WRITES_TOO_MANY));
    assert_eq!(super::sequence_accounts(&signer, &decoded[..4], &each[..4]).map(|a| a.len()), Ok(81));
}
