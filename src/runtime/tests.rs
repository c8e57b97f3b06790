//! The runtime against the real programs: transactions built with the official instruction
//! builders, accounts in their on-chain layouts, outcomes read back from the post-state.

use solana_instruction::Instruction;

use super::fixtures::*;
use super::*;

#[test]
fn a_sol_transfer_moves_the_lamports_and_charges_the_fee() {
    let (me, to) = (key(1), key(2));
    let ix = solana_system_interface::instruction::transfer(&addr(me), &addr(to), SOL);
    let mut runtime = Runtime::new();
    let out = ran(runtime.execute(&transaction(me, &[ix]), &[wallet(me, 10 * SOL)], &[me, to], MOMENT).expect("runs"));
    assert_eq!(out.err, None, "{:?}", out.logs);
    assert_eq!(out.fee_lamports, 5_000);
    assert_eq!(out.accounts[0].as_ref().map(|a| a.lamports), Some(9 * SOL - 5_000));
    assert_eq!(out.accounts[1].as_ref().map(|a| a.lamports), Some(SOL));
    assert!(out.logs.iter().any(|l| l.contains("11111111111111111111111111111111 success")), "{:?}", out.logs);
}

#[test]
fn token_transfers_and_an_owner_handed_away_show_in_the_post_state() {
    let (me, thief, m, mine, theirs) = (key(1), key(9), key(3), key(4), key(5));
    let pre = [wallet(me, SOL), mint(m), token_account(mine, m, me, 500), token_account(theirs, m, thief, 0)];
    let t = spl_token_interface::id();
    let transfer = spl_token_interface::instruction::transfer(&t, &addr(mine), &addr(theirs), &addr(me), &[], 200)
        .expect("builds");
    let give = spl_token_interface::instruction::set_authority(
        &t,
        &addr(mine),
        Some(&addr(thief)),
        spl_token_interface::instruction::AuthorityType::AccountOwner,
        &addr(me),
        &[],
    )
    .expect("builds");
    let mut runtime = Runtime::new();
    let out = ran(runtime.execute(&transaction(me, &[transfer, give]), &pre, &[mine, theirs], MOMENT).expect("runs"));
    assert_eq!(out.err, None, "{:?}", out.logs);
    assert!(out.units_consumed > 0);
    let (mine_after, theirs_after) = (token_state(&out.accounts[0]), token_state(&out.accounts[1]));
    assert_eq!((mine_after.amount, theirs_after.amount), (300, 200));
    assert_eq!(mine_after.owner, addr(thief), "the owner change is in the post-state");
}

#[test]
fn a_failed_transaction_says_why_and_applies_nothing() {
    let (me, to) = (key(1), key(2));
    let ix = solana_system_interface::instruction::transfer(&addr(me), &addr(to), 20 * SOL);
    let mut runtime = Runtime::new();
    let out = ran(runtime.execute(&transaction(me, &[ix]), &[wallet(me, 10 * SOL)], &[me, to], MOMENT).expect("runs"));
    assert_eq!(out.err, Some(serde_json::json!({"InstructionError": [0, {"Custom": 1}]})), "{:?}", out.logs);
    assert_eq!(out.accounts[0].as_ref().map(|a| a.lamports), Some(10 * SOL), "nothing applies");
    assert_eq!(out.accounts[1], None);
}

#[test]
fn a_program_the_runtime_does_not_hold_is_skipped_by_name() {
    let (me, unknown) = (key(1), key(40));
    let ix = Instruction::new_with_bytes(addr(unknown), &[1, 2, 3], vec![]);
    let mut runtime = Runtime::new();
    // Given as executable, its bytes are not loaded as a program.
    let program = PreAccount { executable: true, data: vec![0x7f, b'E', b'L', b'F'], ..wallet(unknown, SOL) };
    let Outcome::Skipped(why) =
        runtime.execute(&transaction(me, &[ix]), &[wallet(me, SOL), program], &[me], MOMENT).expect("answers")
    else {
        panic!("an unknown program cannot run")
    };
    assert!(why.contains(&unknown.to_string()), "{why}");
}

#[test]
fn nothing_of_one_execution_is_seen_by_the_next() {
    let (me, to) = (key(1), key(2));
    let ix = solana_system_interface::instruction::transfer(&addr(me), &addr(to), SOL);
    let tx = transaction(me, &[ix]);
    let mut runtime = Runtime::new();
    assert_eq!(ran(runtime.execute(&tx, &[wallet(me, 10 * SOL)], &[me], MOMENT).expect("runs")).err, None);
    // The payer given the first time is gone: the same transaction without it cannot pay.
    let out = ran(runtime.execute(&tx, &[], &[me, to], MOMENT).expect("runs"));
    assert_eq!(out.err, Some(serde_json::json!("AccountNotFound")));
    assert_eq!(out.accounts, vec![None, None]);
    // The programs and sysvars it was built with stay.
    let out = ran(runtime.execute(&tx, &[wallet(me, 10 * SOL)], &[to], MOMENT).expect("runs"));
    assert_eq!(out.accounts[0].as_ref().map(|a| a.lamports), Some(SOL));
}

#[test]
fn the_moment_is_the_clock_the_programs_read_and_bad_input_is_refused() {
    let mut runtime = Runtime::new();
    runtime.set_moment(MOMENT);
    let clock: Clock = runtime.svm.get_sysvar();
    assert_eq!((clock.slot, clock.unix_timestamp), (MOMENT.slot, MOMENT.unix_timestamp_s));
    assert!(matches!(runtime.execute(b"\x01\x02", &[], &[], MOMENT), Err(RuntimeError::Malformed(_))));
    let many = vec![wallet(key(1), 1); RUNTIME_ACCOUNTS_MAX + 1];
    assert_eq!(
        runtime.execute(b"", &many, &[], MOMENT),
        Err(RuntimeError::TooManyAccounts { given: RUNTIME_ACCOUNTS_MAX + 1 })
    );
}

#[test]
fn an_executable_account_the_runtime_does_not_hold_skips_even_when_only_named() {
    // A program reached only by a CPI (a transfer hook) is named, not invoked, at the top level.
    let (me, to, hook) = (key(1), key(2), key(41));
    let mut ix = solana_system_interface::instruction::transfer(&addr(me), &addr(to), SOL);
    ix.accounts.push(solana_instruction::AccountMeta::new_readonly(addr(hook), false));
    let program = PreAccount { executable: true, ..wallet(hook, SOL) };
    let mut runtime = Runtime::new();
    let Outcome::Skipped(why) =
        runtime.execute(&transaction(me, &[ix]), &[wallet(me, 10 * SOL), program], &[me], MOMENT).expect("answers")
    else {
        panic!("a hook the runtime cannot run is not run without it")
    };
    assert!(why.contains(&hook.to_string()), "{why}");
}

#[test]
fn an_account_the_runtime_holds_is_put_back_as_it_was() {
    let mut runtime = Runtime::new();
    let own = Pubkey(runtime.svm.airdrop_pubkey().to_bytes());
    let before = runtime.svm.get_account(&addr(own)).expect("the SVM's own faucet");
    let (me, to) = (key(1), key(2));
    let ix = solana_system_interface::instruction::transfer(&addr(me), &addr(to), SOL);
    let pre = [wallet(me, 10 * SOL), wallet(own, 1)];
    assert_eq!(ran(runtime.execute(&transaction(me, &[ix]), &pre, &[own], MOMENT).expect("runs")).err, None);
    assert_eq!(runtime.svm.get_account(&addr(own)), Some(before), "restored, not removed");
}

#[test]
fn what_goes_in_and_what_is_copied_out_are_bounded() {
    let mut runtime = Runtime::new();
    let big = PreAccount { data: vec![1; RUNTIME_PRE_DATA_BYTES_MAX + 1], ..wallet(key(3), SOL) };
    assert_eq!(
        runtime.execute(b"", &[big], &[], MOMENT),
        Err(RuntimeError::TooMuchData { given: RUNTIME_PRE_DATA_BYTES_MAX + 1 })
    );
    // An account grown past the bound is not copied out: the answer says why.
    let (me, new) = (key(1), key(6));
    let space = (RUNTIME_POST_DATA_BYTES_MAX + 1) as u64;
    let ix = solana_system_interface::instruction::create_account(&addr(me), &addr(new), SOL, space, &addr(key(7)));
    let Outcome::Skipped(why) =
        runtime.execute(&transaction(me, &[ix]), &[wallet(me, 10 * SOL)], &[me, new], MOMENT).expect("answers")
    else {
        panic!("not read")
    };
    assert!(why.contains(&new.to_string()) && why.contains(&space.to_string()), "{why}");
}

#[test]
fn a_lookup_table_is_created_at_a_recent_slot_as_on_a_node() {
    let me = key(1);
    let recent = MOMENT.slot - 1;
    let (ix, table) =
        solana_address_lookup_table_interface::instruction::create_lookup_table(addr(me), addr(me), recent);
    let mut runtime = Runtime::new();
    let out = ran(runtime
        .execute(&transaction(me, &[ix]), &[wallet(me, 10 * SOL)], &[Pubkey(table.to_bytes())], MOMENT)
        .expect("runs"));
    assert_eq!(out.err, None, "{:?}", out.logs);
    assert!(out.accounts[0].is_some(), "the table exists after it");
}

#[test]
fn an_upgradeable_program_is_loaded_from_its_program_data_and_runs_only_where_named_at_its_slot() {
    let (me, program) = (key(1), key(50));
    let data = program_data_address(&program);
    let memo = Instruction::new_with_bytes(addr(program), b"hello", vec![]);
    let tx = transaction(me, &[memo]);
    let pre = [wallet(me, SOL), upgradeable_program(program, data)];
    let at = |slot: u64, elf: Option<&[u8]>| {
        [ProgramUse { id: program, deploy_slot: slot, program_data: elf.map(|b| program_data(data, slot, b)) }]
    };
    let mut runtime = Runtime::new();
    let run = |runtime: &mut Runtime, programs: &[ProgramUse]| {
        runtime.execute_with(&tx, &pre, programs, &[me], MOMENT).expect("answers")
    };
    let memo_ran = |outcome: Outcome| {
        let out = ran(outcome);
        assert_eq!(out.err, None, "{:?}", out.logs);
        assert!(out.logs.iter().any(|l| l.contains("Memo (len 5)")), "{:?}", out.logs);
    };
    let skipped = |outcome: Outcome| match outcome {
        Outcome::Skipped(why) => why,
        Outcome::Ran(ran) => panic!("ran: {:?}", ran.logs),
    };
    // Not given: skipped by name.
    assert!(skipped(run(&mut runtime, &[])).contains(&program.to_string()));
    memo_ran(run(&mut runtime, &at(7, Some(MEMO_ELF))));
    assert!(runtime.holds(&program, 7));
    // Kept by deploy slot: named at 7 again, it runs without its ELF given.
    memo_ran(run(&mut runtime, &at(7, None)));
    // Kept for the executions that name it: one that does not, does not run it.
    assert!(skipped(run(&mut runtime, &[])).contains(&program.to_string()));
    // Named at another slot, without its ELF: not held there.
    assert!(skipped(run(&mut runtime, &at(8, None))).contains("no longer held"));
    // An ELF the loader refuses: said so, remembered, and the one kept at 7 stays whole.
    assert!(skipped(run(&mut runtime, &at(8, Some(b"not an elf")))).contains("was not loaded"));
    assert!(runtime.refused(&program, 8) && runtime.holds(&program, 7));
    assert!(skipped(run(&mut runtime, &at(8, Some(MEMO_ELF)))).contains("refused by the loader"));
    memo_ran(run(&mut runtime, &at(7, None)));
    // An upgrade (a new deploy slot) loads the new ELF over the old.
    memo_ran(run(&mut runtime, &at(9, Some(MEMO_ELF))));
    assert!(runtime.holds(&program, 9) && !runtime.holds(&program, 7));
}

#[test]
fn a_program_is_loaded_only_from_its_own_program_data_and_never_over_the_runtimes_own() {
    let mut runtime = Runtime::new();
    let me = key(1);
    let token = token_program();
    assert!(runtime.runs_own(&token));
    let tx = transaction(me, &[Instruction::new_with_bytes(addr(key(61)), b"x", vec![])]);
    let mut refused = |id: Pubkey, data: PreAccount, slot: u64| {
        let programs = [ProgramUse { id, deploy_slot: slot, program_data: Some(data) }];
        match runtime.execute_with(&tx, &[wallet(me, SOL)], &programs, &[me], MOMENT).expect("answers") {
            Outcome::Skipped(why) => why,
            Outcome::Ran(_) => panic!("ran"),
        }
    };
    let junk = program_data(program_data_address(&token), 9, b"junk");
    assert!(refused(token, junk, 9).contains("holds itself"));
    let big = program_data(program_data_address(&key(61)), 1, &vec![0u8; RUNTIME_PROGRAM_ELF_BYTES_MAX + 1]);
    assert!(refused(key(61), big, 1).contains(&format!("past {RUNTIME_PROGRAM_ELF_BYTES_MAX}")));
    // A sysvar named as the program data: not at the program's derived address.
    let rent = "SysvarRent111111111111111111111111111111111".parse().expect("address");
    assert!(refused(key(61), program_data(rent, 1, MEMO_ELF), 1).contains("derived address"));
    let elsewhere = program_data(program_data_address(&key(61)), 2, MEMO_ELF);
    assert!(refused(key(61), elsewhere, 3).contains("does not name deploy slot 3"));
    assert!(runtime.runs_own(&token));
}
