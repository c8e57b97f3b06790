//! The real mainnet JSON-RPC responses in ../shared/fixtures/solana-rpc/ parse, and what the
//! parser says about each matches facts read off the files by hand.

use std::path::PathBuf;

use xray::devtools::inspect::{inspect_file, InspectSummary};
use xray::ledger::instruction::InstructionKind;
use xray::ledger::model::{Transaction, TransactionVersion};
use xray::ledger::wire::{self, RpcResponse, TransactionResult, UiBlock};
use xray::pubkey::Pubkey;

fn fixtures_dir() -> PathBuf {
    // A copy of ../shared/fixtures/solana-rpc kept in the repository; XRAY_FIXTURES points
    // the tests at another directory of the same kind.
    std::env::var_os("XRAY_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/solana-rpc"))
}

fn summary(name: &str) -> InspectSummary {
    inspect_file(&fixtures_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn count(map: &std::collections::BTreeMap<String, u32>, key: &str) -> u32 {
    map.get(key).copied().unwrap_or(0)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(name)).unwrap()
}

/// Every fixture file parses: none is skipped, however many are added.
#[test]
fn every_fixture_parses() {
    let mut seen = 0;
    for entry in std::fs::read_dir(fixtures_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let s = inspect_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(s.transaction_count > 0, "{}", path.display());
            assert_eq!(s.undecodable, 0, "{}", path.display());
            assert_eq!(s.signatures.len() as u32, s.transaction_count);
            seen += 1;
        }
    }
    assert!(seen >= 6, "expected the six shared fixtures, saw {seen}");
}

struct Expect {
    file: &'static str,
    method: &'static str,
    transactions: u32,
    failed: u32,
    outer: &'static [(&'static str, u32)],
    inner: &'static [(&'static str, u32)],
    first_signature: &'static str,
}

const EXPECTED: &[Expect] = &[
    Expect {
        file: "solders-getTransaction-jsonParsed.json",
        method: "getTransaction",
        transactions: 1,
        failed: 0,
        outer: &[("vote:vote", 1)],
        inner: &[],
        first_signature: "4zExa66hUSr28i2ma6EJwEsm3nZo4VFryEyRYE5Zrr4Q6dZpP1ctzsoMqUhLnp6iHGPp5MB722rZXRBKg927WXN9",
    },
    Expect {
        file: "solders-getBlock-jsonParsed.json",
        method: "getBlock",
        transactions: 25,
        failed: 0,
        outer: &[("vote:vote", 2), ("spl-memo:memo", 1), ("compute-budget:unknown", 2)],
        inner: &[("spl-token:transfer", 11)],
        first_signature: "2DtNjd9uPve3HHHNroiKoNByaGZ1jgRKqsQGzh4JPcE2NjmVvbYuxJMNfAUgecQnLYqfxSgdKjvj3LNigLZeAx2N",
    },
    Expect {
        file: "chainstorage-block_241043141_v2.json",
        method: "getBlock",
        transactions: 1,
        failed: 1,
        outer: &[
            ("system:createAccountWithSeed", 1),
            ("spl-token:initializeAccount", 1),
            ("spl-associated-token-account:create", 1),
            ("spl-token:closeAccount", 1),
            ("GqCHpDuPPsyyMxtaQgYxyLLLWv1kZFyy2DD5z1cMNouR:unknown", 1),
        ],
        inner: &[("system:createAccount", 1), ("spl-token:initializeAccount3", 1)],
        first_signature: "7ynjNWxA4yAQGXD5U9gheTn2DGDjoCZ4MB68wm15oJqEeA2MdSze6hMABJiEkC2atJCf4QsUCXBLrYpAdeMzsFG",
    },
    Expect {
        file: "chainstorage-block_new_token_account.json",
        method: "getBlock",
        transactions: 1,
        failed: 0,
        outer: &[
            ("spl-associated-token-account:create", 1),
            ("JUP2jxvXaqu7NQY1GmNF4m1vodw12LVXYxbFL2uJvfo:unknown", 2),
        ],
        inner: &[("spl-token:transfer", 2), ("whirLbMiicVdio4qvUfM5KAg6Ct8VwpYzGff3uctyCc:unknown", 1)],
        first_signature: "4H6uGfHviqT87Au64fv9t7AQHYd75SZPa7NMsX2fZixdcwZgpPB11b4cQq65JVM4EzppLmNPt2d8cGeFY9ys1dBH",
    },
    Expect {
        file: "chainstorage-block_with_versioned_tx.json",
        method: "getBlock",
        transactions: 1,
        failed: 0,
        outer: &[
            ("JUP3c2Uh3WA4Ng34tw6kPd2G4C5BB21Xo36Je1s32Ph:unknown", 3),
            ("So1endDq2YkqhipRh3WViPa8hdiSpxWy6z3Z6tMCpAo:unknown", 2),
        ],
        inner: &[],
        first_signature: "5X7cr7bxjwoWvWFvSmVfmF3PhYcid4ojtNGYiDsRRP6P5cfzkahxbZfwH4YDdhy9RnSEyaT255aDw14vis5Qxvqh",
    },
    Expect {
        file: "chainstorage-transaction_err.json",
        method: "getBlock",
        transactions: 3,
        failed: 2,
        outer: &[("vote:unknown", 2), ("system:unknown", 1)],
        inner: &[],
        first_signature: "2xRnwfAMxAvv5z2eiWC1YCR6bdcPj7ebPRTKFiFZuBHvWNc8QjM33W4Ev71T8C18g3yARJcHtMzC3VWTdASDybkU",
    },
];

#[test]
fn fixture_facts() {
    for e in EXPECTED {
        let s = summary(e.file);
        assert_eq!(s.method, e.method, "{}", e.file);
        assert_eq!(s.transaction_count, e.transactions, "{}", e.file);
        assert_eq!(s.failed.len() as u32, e.failed, "{}", e.file);
        assert_eq!(s.signatures[0], e.first_signature, "{}", e.file);
        for (key, n) in e.outer {
            assert_eq!(count(&s.instructions_outer, key), *n, "{} outer {key}", e.file);
        }
        for (key, n) in e.inner {
            assert_eq!(count(&s.instructions_inner, key), *n, "{} inner {key}", e.file);
        }
        let total: u32 = s.by_program_id.values().sum();
        assert_eq!(total, s.outer_instruction_count + s.inner_instruction_count, "{}", e.file);
    }
}

#[test]
fn failed_transactions_keep_their_error() {
    let s = summary("chainstorage-block_241043141_v2.json");
    assert_eq!(s.failed[0].error, r#"{"InstructionError":[3,"ProgramFailedToComplete"]}"#);
    let s = summary("chainstorage-transaction_err.json");
    let errors: Vec<&str> = s.failed.iter().map(|f| f.error.as_str()).collect();
    assert_eq!(errors, [r#"{"InstructionError":[0,{"Custom":0}]}"#, "InvalidRentPayingAccount"]);
}

fn block_transactions(name: &str) -> Vec<Transaction> {
    let mut bytes = read(name);
    let block: UiBlock = wire::parse(&mut bytes).unwrap();
    block.transactions.iter().map(|t| Transaction::from_wire(t, 1, block.block_time).unwrap()).collect()
}

#[test]
fn v0_raw_message_resolves_loaded_addresses() {
    let tx = &block_transactions("chainstorage-block_with_versioned_tx.json")[0];
    assert_eq!(tx.version, TransactionVersion::V0);
    // 6 static keys + 24 loaded writable + 11 loaded readonly.
    assert_eq!(tx.account_keys.len(), 41);
    assert_eq!(tx.fee_payer, Pubkey::parse("JARehRjGUkkEShpjzfuV4ERJS25j8XhamL776FAktNGm").unwrap());
    // numRequiredSignatures is 2: the fee payer and one more signer.
    assert_eq!(tx.signers.len(), 2);
    assert_eq!(tx.signers[0], tx.fee_payer);
    assert_eq!(tx.fee, 10_000);
    // Instruction 0 names account 32, which only exists among the loaded addresses.
    assert_eq!(tx.instructions[0].accounts.len(), 7);
    assert!(tx.instructions[0].accounts.iter().all(|k| *k != Pubkey::default()));
    // Token balance at account index 29 (a loaded writable key) resolves and changed by +53517.
    let change = tx.token_changes.iter().find(|c| c.account == tx.account_keys[29]).unwrap();
    assert_eq!(change.delta(), 20_284_021_991 - 20_283_968_474);
    assert_eq!(change.mint, Pubkey::parse("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v").unwrap());
}

#[test]
fn parsed_instructions_decode_to_domain_kinds() {
    let tx = &block_transactions("chainstorage-block_new_token_account.json")[0];
    let wallet = Pubkey::parse("DxCsN4jatqeTW2pj6fR55TrNqoCcoo8UNAy8xosheeVf").unwrap();
    let ata = tx.instructions.iter().find(|i| matches!(i.kind, InstructionKind::AtaCreate { .. })).unwrap();
    assert_eq!(ata.index.to_string(), "0");
    assert!(matches!(ata.kind, InstructionKind::AtaCreate { wallet: w, .. } if w == wallet));
    // Inner instructions of outer 0 are numbered 0.0, 0.1, …
    let inner: Vec<String> = tx
        .instructions
        .iter()
        .filter(|i| i.index.outer == 0 && i.index.inner.is_some())
        .map(|i| i.index.to_string())
        .collect();
    assert_eq!(inner, ["0.0", "0.1", "0.2", "0.3"]);
    let transfers = tx.instructions.iter().filter(|i| matches!(i.kind, InstructionKind::TokenTransfer { .. })).count();
    assert_eq!(transfers, 2);
    assert!(tx.instructions.iter().any(|i| matches!(i.kind, InstructionKind::TokenCloseAccount { .. })));
    // A token account that appears only after the transaction counts from zero.
    let created = tx.token_changes.iter().find(|c| c.pre == 0 && c.post == 3000).unwrap();
    assert_eq!(created.delta(), 3000);
}

#[test]
fn get_transaction_envelope_parses_typed() {
    let mut bytes = read("solders-getTransaction-jsonParsed.json");
    let response: RpcResponse<TransactionResult> = wire::parse_response(&mut bytes).unwrap();
    let result = response.into_result().unwrap().unwrap();
    let tx = Transaction::from_wire(&result.tx, result.slot, result.block_time).unwrap();
    assert_eq!(tx.slot, 147_558_327);
    assert_eq!(tx.block_time, Some(1_661_417_105));
    assert_eq!(tx.sol_changes.len(), 1);
    assert_eq!(tx.sol_changes[0].delta(), -5000);
    // Round trip: what we write is what we read.
    let written = wire::to_vec(&result).unwrap();
    let mut again = written.clone();
    let reparsed: TransactionResult = wire::parse(&mut again).unwrap();
    assert_eq!(reparsed, result);
}

#[test]
fn rpc_error_objects_become_typed_errors() {
    let mut bytes = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"Slot 5 was skipped"}}"#.to_vec();
    let response: RpcResponse<TransactionResult> = wire::parse_response(&mut bytes).unwrap();
    assert!(matches!(response.into_result(), Err(xray::ledger::LedgerError::NotFound(_))));
    let mut bytes = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"Node is behind"}}"#.to_vec();
    let response: RpcResponse<TransactionResult> = wire::parse_response(&mut bytes).unwrap();
    assert!(matches!(response.into_result(), Err(xray::ledger::LedgerError::Unavailable(_))));
    let mut bytes = b"{not json".to_vec();
    assert!(matches!(
        wire::parse_response::<TransactionResult>(&mut bytes),
        Err(xray::ledger::LedgerError::Malformed(_))
    ));
}

#[test]
fn a_transaction_naming_a_malformed_address_is_skipped_not_read_with_the_zero_key() {
    let mut bytes = read("solders-getTransaction-jsonParsed.json");
    let response: RpcResponse<TransactionResult> = wire::parse_response(&mut bytes).unwrap();
    let result = response.into_result().unwrap().unwrap();
    let read_with = |edit: &dyn Fn(&mut TransactionResult)| {
        let mut edited = result.clone();
        edit(&mut edited);
        Transaction::from_wire(&edited.tx, edited.slot, edited.block_time)
    };
    assert!(read_with(&|_| {}).is_some());
    let bad_key = |r: &mut TransactionResult| match &mut r.tx.transaction.message {
        wire::UiMessage::Parsed(m) => m.account_keys[0].pubkey = "not-base58-0OIl".into(),
        wire::UiMessage::Raw(m) => m.account_keys[0] = "not-base58-0OIl".into(),
    };
    assert!(read_with(&bad_key).is_none(), "a malformed account key");
    let bad_program = |r: &mut TransactionResult| match &mut r.tx.transaction.message {
        wire::UiMessage::Parsed(m) => match &mut m.instructions[0] {
            wire::UiInstruction::Parsed(p) => p.program_id = "0OIl".into(),
            wire::UiInstruction::PartiallyDecoded(p) => p.program_id = "0OIl".into(),
            wire::UiInstruction::Compiled(c) => c.program_id_index = 255,
        },
        wire::UiMessage::Raw(m) => match &mut m.instructions[0] {
            wire::UiInstruction::Compiled(c) => c.program_id_index = 255,
            _ => unreachable!("a raw message compiles its instructions"),
        },
    };
    assert!(read_with(&bad_program).is_none(), "a program id that is not an address");
}
