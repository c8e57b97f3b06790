//! The demo timeline (`demo+timeline`, `demo+script=<file>`): a demo ledger that moves over
//! time. A script puts the timeline wallets' events a second or two after a start it fixes;
//! each test reads the ledger before and after (sleeping in between, a few seconds in all) and
//! checks what every read shows: histories newest first, the event's transaction and the
//! accounts it changed, the quiet wallet untouched, the X-Ray gaining exactly the event's
//! signal — in process, over the local JSON-RPC server, and from the real `xray ledger serve`.
//!
//! Invariant: every test fixes its own start (`start_unix_ms`), so tests running at once do
//! not share a clock; a test that reads "before" checks afterwards that it really was before
//! (a machine too slow for the margin fails loudly rather than passing by luck).

use std::collections::BTreeSet;
use std::time::Duration;

use xray::config::SourceSpec;
use xray::devtools::rpc_server::{spawn_spec_in_thread, FaultPlan};
use xray::jobs::execute::{execute, JobSpec, Outcome};
use xray::labels::Labels;
use xray::ledger::demo::{clock, DemoLedger};
use xray::ledger::instruction::InstructionKind;
use xray::ledger::model::{TokenAccount, TokenProgram, WalletView};
use xray::ledger::read::LedgerSource;
use xray::ledger::rpc::{RpcOptions, RpcSource};
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{self, SignatureInfo, TransactionResult};
use xray::pubkey::{Pubkey, Signature};

/// Margin between reading "before" and the first event.
const BEFORE_MARGIN_MS: u64 = 1_500;
/// Wait past the last event before reading "after".
const AFTER_MARGIN_MS: u64 = 300;

fn now_ms() -> u64 {
    xray::clock::now_unix_ms()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// A script starting at `start_unix_ms` with `events` (`wallet`, `at_s`), in a directory kept
/// while the returned guard lives, and its spec (`demo:<seed>+script=<file>`).
fn script(seed: u64, start_unix_ms: u64, events: &[(&str, u64)]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timeline.toml");
    let mut text = format!("start_unix_ms = {start_unix_ms}\n");
    for (wallet, at_s) in events {
        text.push_str(&format!("\n[[event]]\nwallet = \"{wallet}\"\nat_s = {at_s}\n"));
    }
    std::fs::write(&path, text).unwrap();
    (dir, format!("demo:{seed}+script={}", path.display()))
}

/// The ledger a spec opens (what `Source::open` builds for it).
fn open(spec: &str) -> DemoLedger {
    let parsed: SourceSpec = spec.parse().unwrap();
    let SourceSpec::Demo { seed } = parsed else { panic!("{spec} is a demo spec") };
    DemoLedger::new(seed)
}

fn sleep_until(unix_ms: u64) {
    std::thread::sleep(Duration::from_millis(unix_ms.saturating_sub(now_ms())));
}

fn assert_still_before(unix_ms: u64, what: &str) {
    let now = now_ms();
    assert!(now < unix_ms, "{what} read {} ms too late: raise BEFORE_MARGIN_MS", now - unix_ms + 1);
}

fn archetype(demo: &DemoLedger, name: &str) -> Pubkey {
    demo.archetype(name).unwrap_or_else(|| panic!("no archetype {name}"))
}

/// Everything the ledger answers about `address`, serialized: account, token accounts,
/// history and each of its transactions.
fn responses<S: LedgerSource>(source: &S, address: &Pubkey) -> Vec<u8> {
    block_on(async {
        let mut out = wire::to_vec(&source.get_account_info(address).await.unwrap()).unwrap();
        out.extend(wire::to_vec(&source.get_multiple_accounts(&[*address]).await.unwrap()).unwrap());
        for p in [TokenProgram::Token, TokenProgram::Token2022] {
            out.extend(wire::to_vec(&source.get_token_accounts_by_owner(address, p).await.unwrap()).unwrap());
        }
        let sigs = source.get_signatures_for_address(address, None, 100).await.unwrap();
        out.extend(wire::to_vec(&sigs).unwrap());
        let parsed: Vec<Signature> = sigs.iter().map(|s| Signature::parse(&s.signature).unwrap()).collect();
        out.extend(wire::to_vec(&source.get_transactions(&parsed).await.unwrap()).unwrap());
        out
    })
}

fn signatures<S: LedgerSource>(source: &S, address: &Pubkey) -> Vec<SignatureInfo> {
    block_on(source.get_signatures_for_address(address, None, 100)).unwrap()
}

fn transaction<S: LedgerSource>(source: &S, signature: &str) -> Option<TransactionResult> {
    block_on(source.get_transactions(&[Signature::parse(signature).unwrap()])).unwrap().remove(0)
}

fn token_accounts<S: LedgerSource>(source: &S, owner: &Pubkey) -> Vec<TokenAccount> {
    let keyed = block_on(source.get_token_accounts_by_owner(owner, TokenProgram::Token)).unwrap().value;
    keyed.iter().map(|k| TokenAccount::from_wire(Pubkey::parse(&k.pubkey).unwrap(), &k.account).unwrap()).collect()
}

fn view<S: LedgerSource>(source: &S, address: &Pubkey) -> WalletView {
    let mut v = block_on(build_view(source, address, ViewOptions::default())).unwrap();
    // What the ledgers said, not which kind of source said it.
    v.coverage.source.clear();
    v.coverage.synthetic = false;
    v
}

/// The signal kinds of the X-Ray a job computes for `wallet` (`jobs::execute`, the compute
/// threads' path).
fn signals<S: LedgerSource>(source: &S, wallet: &Pubkey) -> BTreeSet<String> {
    let spec = JobSpec::Analysis { wallet: *wallet };
    let outcome = block_on(execute(source, &Labels::builtin(), &spec, ViewOptions::default(), &()));
    let Outcome::Ready { payload } = outcome else { panic!("{wallet}: {outcome:?}") };
    let xray: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let kinds = xray["signals"].as_array().unwrap().iter().map(|s| s["kind"].as_str().unwrap().to_owned());
    kinds.collect()
}

/// What `xray demo list` says an archetype's X-Ray shows before its event and after it.
fn documented(demo: &DemoLedger, name: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let info = demo.archetype_list().into_iter().find(|a| a.name == name).unwrap();
    let before: BTreeSet<String> = info.expected_signals.iter().map(|s| s.to_string()).collect();
    let mut after = before.clone();
    after.extend(info.timeline_event.iter().flat_map(|e| &e.signals_after).map(|s| s.to_string()));
    (before, after)
}

/// The wallet's and its token accounts' balances in a transaction, before and after.
fn balances(t: &TransactionResult, key: &Pubkey) -> (u64, u64) {
    let wire::UiMessage::Parsed(m) = &t.tx.transaction.message else { panic!("parsed") };
    let i = m.account_keys.iter().position(|k| k.pubkey == key.to_string()).unwrap();
    let meta = t.tx.meta.as_ref().unwrap();
    (meta.pre_balances[i], meta.post_balances[i])
}

/// Checks the demo's invariants for the newest transaction of `wallet`, `new`: newer than the
/// one before, balances chained from it, and in the history of every account it names.
fn check_new_transaction(demo: &DemoLedger, wallet: &Pubkey, history: &[SignatureInfo], at_s: u64) {
    let (new, previous) = (&history[0], &history[1]);
    assert!(new.slot > previous.slot && new.slot > clock::AS_OF_SLOT, "{new:?} after {previous:?}");
    assert_eq!(new.block_time, Some(clock::AS_OF_BLOCK_TIME_S + at_s as i64), "the event's second");
    let (t, p) = (transaction(demo, &new.signature).unwrap(), transaction(demo, &previous.signature).unwrap());
    assert_eq!((t.slot, t.block_time), (new.slot, new.block_time));
    assert_eq!(balances(&t, wallet).0, balances(&p, wallet).1, "balances chain");
    let wire::UiMessage::Parsed(m) = &t.tx.transaction.message else { panic!("parsed") };
    for k in &m.account_keys {
        let key = Pubkey::parse(&k.pubkey).unwrap();
        let program = block_on(demo.get_account_info(&key)).unwrap().value.is_some_and(|a| a.executable);
        if !program {
            assert!(signatures(demo, &key).iter().any(|s| s.signature == new.signature), "{key} misses it");
        }
    }
}

#[test]
fn wallets_move_at_their_second_and_the_quiet_one_never() {
    let seed = 11;
    let start = now_ms() + BEFORE_MARGIN_MS;
    let (_dir, spec) = script(seed, start, &[("timeline_dust", 1), ("timeline_delegate", 2)]);
    let demo = open(&spec);
    assert_eq!(demo.timeline_start_unix_ms(), Some(start));
    let plain = DemoLedger::new(seed);
    let (delegate, dust, quiet) =
        (archetype(&demo, "timeline_delegate"), archetype(&demo, "timeline_dust"), archetype(&demo, "timeline_quiet"));

    // Before: each wallet is what the plain demo shows, byte for byte, and ordinary.
    let before: Vec<Vec<u8>> = [delegate, dust, quiet].iter().map(|w| responses(&demo, w)).collect();
    for (w, bytes) in [delegate, dust, quiet].iter().zip(&before) {
        assert_eq!(*bytes, responses(&plain, w), "{w}: as the plain demo");
    }
    let (delegate_before, dust_before) = (signatures(&demo, &delegate), signatures(&demo, &dust));
    let delegate_tokens = token_accounts(&demo, &delegate);
    assert_eq!(delegate_tokens.len(), 1);
    assert_eq!((delegate_tokens[0].delegate, delegate_tokens[0].delegated_amount), (None, 0));
    let dust_tokens = token_accounts(&demo, &dust);
    let dust_lamports = block_on(demo.get_account_info(&dust)).unwrap().value.unwrap().lamports;
    let (delegate_xray, dust_xray) = (signals(&demo, &delegate), signals(&demo, &dust));
    assert_eq!(delegate_xray, documented(&demo, "timeline_delegate").0);
    assert_eq!(dust_xray, documented(&demo, "timeline_dust").0);
    assert!(!delegate_xray.contains("open_token_delegation") && !dust_xray.contains("address_poisoning_received"));
    assert_still_before(start + 1_000, "before");

    // Between the two events: the dust has come, the approve not yet.
    sleep_until(start + 1_000 + AFTER_MARGIN_MS);
    let dust_between = signatures(&demo, &dust);
    assert_eq!(dust_between.len(), dust_before.len() + 1);
    assert_eq!(signatures(&demo, &delegate), delegate_before);
    assert_still_before(start + 2_000, "between");

    sleep_until(start + 2_000 + AFTER_MARGIN_MS);
    // The delegate wallet: one new transaction, newest first, an unlimited approve on its DUSD
    // account to an address that has no account; the token account shows the delegation.
    let delegate_after = signatures(&demo, &delegate);
    assert_eq!(delegate_after.len(), delegate_before.len() + 1);
    assert_eq!(delegate_after[1..], delegate_before[..], "the old history stays as it was");
    check_new_transaction(&demo, &delegate, &delegate_after, 2);
    let v = view(&demo, &delegate);
    assert_eq!(v.transactions[0].signature.to_string(), delegate_after[0].signature);
    let approved = v.transactions[0].instructions.iter().find_map(|i| match i.kind {
        InstructionKind::TokenApprove { account, delegate: to, owner, amount, .. } => {
            Some((account, to, owner, amount))
        }
        _ => None,
    });
    let (account, unknown, owner, amount) = approved.expect("an approve");
    assert_eq!((account, owner, amount), (delegate_tokens[0].address, delegate, u64::MAX));
    assert!(block_on(demo.get_account_info(&unknown)).unwrap().value.is_none(), "the delegate is unknown");
    assert!(Labels::builtin().get(&unknown).is_none());
    let delegate_tokens_after = token_accounts(&demo, &delegate);
    assert_eq!(
        (delegate_tokens_after[0].delegate, delegate_tokens_after[0].delegated_amount),
        (Some(unknown), u64::MAX)
    );
    assert_eq!(delegate_tokens_after[0].amount, delegate_tokens[0].amount);
    let multiple = block_on(demo.get_multiple_accounts(&[account])).unwrap();
    assert!(multiple.context.slot >= delegate_after[0].slot, "read at or after the event's slot");
    let from_multiple = TokenAccount::from_wire(account, multiple.value[0].as_ref().unwrap()).unwrap();
    assert_eq!(from_multiple.delegate, Some(unknown));

    // The dust wallet: the look-alike's transaction, SOL and one DUSD base unit more.
    let dust_after = signatures(&demo, &dust);
    assert_eq!(dust_after, dust_between, "nothing more after its event");
    assert_eq!(dust_after[1..], dust_before[..]);
    check_new_transaction(&demo, &dust, &dust_after, 1);
    let v = view(&demo, &dust);
    let lookalike = v.transactions[0].fee_payer;
    assert_ne!(lookalike, dust);
    let lamports = block_on(demo.get_account_info(&dust)).unwrap().value.unwrap().lamports;
    assert_eq!(lamports, dust_lamports + 1_000);
    let dust_tokens_after = token_accounts(&demo, &dust);
    assert_eq!(dust_tokens_after[0].amount, dust_tokens[0].amount + 1);
    let friend = v.transactions.iter().skip(1).find_map(|t| {
        t.instructions.iter().find_map(|i| match i.kind {
            InstructionKind::SystemTransfer { from, to, .. } if from == dust => Some(to),
            _ => None,
        })
    });
    let (friend, fake) = (friend.expect("it paid a friend").to_string(), lookalike.to_string());
    assert_ne!(friend, fake);
    assert_eq!((&friend[..4], &friend[friend.len() - 4..]), (&fake[..4], &fake[fake.len() - 4..]), "a look-alike");

    // The quiet wallet: nothing new, byte for byte (the context slot aside, which moved on).
    let quiet_now = signatures(&demo, &quiet);
    assert_eq!(quiet_now, signatures(&plain, &quiet));
    assert_eq!(token_accounts(&demo, &quiet), token_accounts(&plain, &quiet));
    assert_eq!(view(&demo, &quiet).transactions, view(&plain, &quiet).transactions);

    // The X-Rays: exactly the documented signal more.
    let (delegate_xray, dust_xray) = (signals(&demo, &delegate), signals(&demo, &dust));
    assert_eq!(delegate_xray, documented(&demo, "timeline_delegate").1);
    assert!(delegate_xray.contains("open_token_delegation"));
    assert_eq!(dust_xray, documented(&demo, "timeline_dust").1);
    assert!(dust_xray.contains("address_poisoning_received"));
    assert_eq!(signals(&demo, &quiet), documented(&demo, "timeline_quiet").0);
    assert!(demo.inconsistencies().is_empty(), "{:?}", demo.inconsistencies());
}

#[test]
fn the_same_spec_over_json_rpc_gives_the_same_view() {
    let start = now_ms() + BEFORE_MARGIN_MS;
    let (_dir, spec) = script(12, start, &[("timeline_delegate", 1), ("timeline_dust", 2)]);
    let server = spawn_spec_in_thread(spec.parse().unwrap(), FaultPlan::default()).unwrap();
    let options = RpcOptions { connect_timeout_ms: 1_000, request_timeout_ms: 3_000, ..RpcOptions::default() };
    let rpc = RpcSource::new(&server.url(), options).unwrap();
    let demo = open(&spec);
    let wallets = ["timeline_delegate", "timeline_dust", "timeline_quiet"].map(|n| archetype(&demo, n));
    let before: Vec<WalletView> = wallets.iter().map(|w| view(&demo, w)).collect();
    for (w, v) in wallets.iter().zip(&before) {
        assert_eq!(view(&rpc, w), *v, "{w} before");
        assert_eq!(signals(&rpc, w), signals(&demo, w), "{w} before");
    }
    assert_still_before(start + 1_000, "before");
    sleep_until(start + 2_000 + AFTER_MARGIN_MS);
    for (w, old) in wallets.iter().zip(&before) {
        let (over_rpc, direct) = (view(&rpc, w), view(&demo, w));
        assert_eq!(over_rpc, direct, "{w} after");
        assert_eq!(signals(&rpc, w), signals(&demo, w), "{w} after");
        let moved = *w != wallets[2];
        assert_eq!(direct.transactions.len(), old.transactions.len() + usize::from(moved), "{w}");
    }
}

/// The real `xray ledger serve --ledger demo+script=…` in its own process: it serves the
/// timeline, and its transactions have the signatures this process gives them (same seed,
/// same script: a restarted server shows the same history).
#[test]
fn the_served_timeline_has_the_same_signatures_in_another_process() {
    use std::io::{BufRead, BufReader};
    // Started a minute ago: both events have happened in both processes.
    let (_dir, spec) = script(13, now_ms() - 60_000, &[("timeline_delegate", 0), ("timeline_dust", 1)]);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xray"))
        .args(["ledger", "serve", "--ledger", &spec, "--listen", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut lines = stderr.lines().map_while(Result::ok);
    let serving = lines.by_ref().find(|l| l.starts_with("serving ")).unwrap_or_default();
    let url = lines.find_map(|line| line.strip_prefix("listening on ").map(str::to_owned));
    let demo = open(&spec);
    let wallets = ["timeline_delegate", "timeline_dust", "timeline_quiet"].map(|n| archetype(&demo, n));
    let served = url.map(|url| {
        let rpc = RpcSource::new(&url, RpcOptions::default()).unwrap();
        wallets.map(|w| signatures(&rpc, &w))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(serving.starts_with("serving demo:13+script="), "{serving:?}");
    let served = served.expect("the server said where it listens");
    for (w, list) in wallets.iter().zip(&served) {
        assert_eq!(*list, signatures(&demo, w), "{w}");
    }
    assert_eq!(served[0].len(), signatures(&DemoLedger::new(13), &wallets[0]).len() + 1, "the approve is there");
}

#[test]
fn the_builtin_timeline_lists_its_wallets_and_shares_one_start() {
    let spec: SourceSpec = "demo+timeline".parse().unwrap();
    assert_eq!(spec.to_string(), format!("demo:{}+timeline", xray::config::DEMO_SEED_DEFAULT));
    let SourceSpec::Demo { seed } = spec else { panic!("{spec:?}") };
    let (a, b) = (DemoLedger::new(seed), DemoLedger::new(seed));
    let start = a.timeline_start_unix_ms().expect("a timeline");
    assert_eq!(b.timeline_start_unix_ms(), Some(start), "one start per process");
    assert_eq!(a.seed(), xray::config::DEMO_SEED_DEFAULT);
    let listed = a.archetype_list();
    let at =
        |name: &str| listed.iter().find(|i| i.name == name).and_then(|i| i.timeline_event.as_ref()).map(|e| e.at_s);
    assert_eq!((at("timeline_delegate"), at("timeline_dust"), at("timeline_quiet")), (Some(60), Some(90), None));
    assert_eq!(listed, DemoLedger::new(xray::config::DEMO_SEED_DEFAULT).archetype_list(), "the same catalogue");
    // Unless this process opened its first timeline more than a minute ago, nothing happened yet.
    let delegate = archetype(&a, "timeline_delegate");
    if now_ms() < start + 60_000 {
        let plain = DemoLedger::new(xray::config::DEMO_SEED_DEFAULT);
        assert_eq!(signatures(&a, &delegate), signatures(&plain, &delegate));
    }
}
