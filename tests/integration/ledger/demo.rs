//! The demo ledger through the same fetch plan every source goes through (`build_view`):
//! each archetype's view shows its intended facts, histories are consistent between the two
//! sides of a transaction, responses are deterministic and round-trip through the wire
//! types, and building views stays fast.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant};

use xray::config;
use xray::ledger::demo::clock;
use xray::ledger::demo::DemoLedger;
use xray::ledger::instruction::{InstructionKind, Program, StakeAuthorityType, TokenAuthorityType};
use xray::ledger::model::{AccountKind, MintExtension, TokenProgram, TransactionVersion, WalletView};
use xray::ledger::read::LedgerSource;
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{self, SignatureInfo, TransactionResult, UiAccount, WithContext};
use xray::pubkey::{Pubkey, Signature};

const SEED: u64 = config::DEMO_SEED_DEFAULT;

fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

fn demo() -> DemoLedger {
    DemoLedger::new(SEED)
}

fn key(demo: &DemoLedger, name: &str) -> Pubkey {
    demo.archetype(name).unwrap_or_else(|| panic!("no archetype {name}"))
}

fn view(demo: &DemoLedger, name: &str) -> WalletView {
    block_on(build_view(demo, &key(demo, name), ViewOptions::default())).unwrap()
}

fn kinds(view: &WalletView) -> Vec<&InstructionKind> {
    view.transactions.iter().flat_map(|t| &t.instructions).map(|i| &i.kind).collect()
}

fn flagged(kind: &str) -> Vec<Pubkey> {
    DemoLedger::flagged_addresses().into_iter().filter(|(_, _, k)| *k == kind).map(|(a, _, _)| a).collect()
}

fn signatures(demo: &DemoLedger, address: &Pubkey) -> Vec<SignatureInfo> {
    block_on(demo.get_signatures_for_address(address, None, config::SIGNATURES_PAGE_LEN_MAX)).unwrap()
}

fn transaction(demo: &DemoLedger, signature: &str) -> TransactionResult {
    let sig = Signature::parse(signature).unwrap();
    block_on(demo.get_transactions(&[sig])).unwrap().remove(0).unwrap()
}

fn account(demo: &DemoLedger, address: &Pubkey) -> Option<UiAccount> {
    block_on(demo.get_account_info(address)).unwrap().value
}

#[test]
fn clean_wallet_is_ordinary() {
    let demo = demo();
    let v = view(&demo, "clean");
    let acct = v.account.as_ref().unwrap();
    assert_eq!(acct.kind, AccountKind::Wallet);
    assert_eq!(acct.owner, Pubkey::default());
    assert_eq!(v.token_accounts.len(), 1);
    assert!(v.token_accounts.iter().all(|t| t.delegate.is_none()));
    let k = kinds(&v);
    assert!(k.iter().any(|k| matches!(k, InstructionKind::SystemTransfer { .. })));
    assert!(k.iter().any(|k| matches!(k, InstructionKind::TokenTransfer { .. })));
    assert!(k.iter().any(|k| matches!(k, InstructionKind::AtaCreate { .. })));
    assert!(k.iter().any(|k| matches!(k, InstructionKind::Memo { text } if text.contains("coffee"))));
    assert!(!k.iter().any(|k| matches!(
        k,
        InstructionKind::TokenApprove { .. } | InstructionKind::SystemAssign { .. } | InstructionKind::Raw { .. }
    )));
    assert!(v.nonce_accounts.is_empty() && v.stake_accounts.is_empty());
    assert!(!v.coverage.history_truncated);
    assert_eq!(v.coverage.source, "demo");
    assert_eq!(v.coverage.as_of_slot, clock::AS_OF_SLOT);
    assert_eq!(v.coverage.items_skipped, 0);
    assert!(v.transactions.windows(2).all(|w| w[0].slot > w[1].slot), "newest first");
}

#[test]
fn open_delegation_has_unlimited_and_flagged_delegates() {
    let demo = demo();
    let v = view(&demo, "open_delegation");
    let phishing = flagged("attacker");
    let unlimited = v.token_accounts.iter().find(|t| t.delegated_amount == u64::MAX).unwrap();
    assert!(unlimited.delegate.is_some_and(|d| !phishing.contains(&d)));
    let to_flagged = v.token_accounts.iter().find(|t| t.delegate.is_some_and(|d| phishing.contains(&d))).unwrap();
    assert_eq!(to_flagged.delegated_amount, to_flagged.amount, "full-balance approve");
    let approvals: Vec<(u64, Option<Pubkey>)> = kinds(&v)
        .into_iter()
        .filter_map(|k| match k {
            InstructionKind::TokenApprove { amount, mint, .. } => Some((*amount, *mint)),
            _ => None,
        })
        .collect();
    assert_eq!(approvals.len(), 2);
    assert!(approvals.contains(&(u64::MAX, None)), "plain approve, unlimited");
    assert!(approvals.iter().any(|(a, m)| *a == to_flagged.amount && m.is_some()), "approveChecked");
}

#[test]
fn owner_change_drained_shows_handover_and_drain() {
    let demo = demo();
    let v = view(&demo, "owner_change_drained");
    let wallet = v.address;
    let attacker = *flagged("attacker").first().unwrap();
    let k = kinds(&v);
    let handed = k
        .iter()
        .find_map(|k| match k {
            InstructionKind::TokenSetAuthority {
                target,
                authority_type: TokenAuthorityType::AccountOwner,
                authority,
                new_authority,
            } => Some((*target, *authority, *new_authority)),
            _ => None,
        })
        .unwrap();
    assert_eq!(handed.1, Some(wallet));
    assert!(DemoLedger::flagged_addresses().iter().any(|(a, _, _)| Some(*a) == handed.2));
    assert!(k.iter().any(|k| matches!(k, InstructionKind::TokenTransfer { source, authority, .. }
        if *source == handed.0 && Some(*authority) == handed.2)));
    assert!(k.iter().any(|k| matches!(k, InstructionKind::SystemTransfer { from, to, .. }
        if *from == wallet && *to == attacker)));
    // The handed-over account is no longer the wallet's, and is empty now.
    assert!(v.token_accounts.iter().all(|t| t.address != handed.0));
    let now = account(&demo, &handed.0).unwrap();
    let ta = xray::ledger::model::TokenAccount::from_wire(handed.0, &now).unwrap();
    assert_eq!((Some(ta.owner), ta.amount), (handed.2, 0));
    assert!(v.account.unwrap().lamports < 100_000_000);
    // The attacker's later sweep is in the token account's own history.
    let wallet_sigs: BTreeSet<String> = signatures(&demo, &wallet).into_iter().map(|s| s.signature).collect();
    assert!(signatures(&demo, &handed.0).iter().any(|s| !wallet_sigs.contains(&s.signature)));
}

#[test]
fn assigned_wallet_is_owned_by_a_flagged_program() {
    let demo = demo();
    let v = view(&demo, "assigned_wallet");
    let acct = v.account.as_ref().unwrap();
    let drainers = flagged("drainer_program");
    assert!(drainers.contains(&acct.owner));
    assert_eq!(acct.data_len, 0);
    assert!(!acct.executable);
    assert!(kinds(&v).iter().any(|k| matches!(k, InstructionKind::SystemAssign { account, owner }
        if *account == v.address && drainers.contains(owner))));
    // The sweep by the program shows as a lamport drop without a system transfer.
    assert!(v.transactions.iter().any(|t| t.instructions.iter().any(|i| drainers.contains(&i.program_id))
        && t.sol_changes.iter().any(|c| c.account == v.address && c.delta() < 0)));
}

#[test]
fn foreign_nonce_authority_is_someone_else() {
    let demo = demo();
    let v = view(&demo, "foreign_nonce_authority");
    assert_eq!(v.nonce_accounts.len(), 1);
    let nonce = &v.nonce_accounts[0];
    assert_ne!(nonce.authority, v.address);
    let k = kinds(&v);
    assert!(k.iter().any(|k| matches!(k, InstructionKind::SystemCreateAccount { funder, account, .. }
        if *funder == v.address && *account == nonce.address)));
    assert!(k
        .iter()
        .any(|k| matches!(k, InstructionKind::NonceInitialize { authority, .. } if *authority == nonce.authority)));
    assert!(k
        .iter()
        .any(|k| matches!(k, InstructionKind::NonceAdvance { authority, .. } if *authority == nonce.authority)));
    // Advances by the authority alone are in the nonce account's history, not the wallet's.
    assert!(signatures(&demo, &nonce.address).len() > 3);
}

#[test]
fn foreign_stake_authority_is_someone_else() {
    let demo = demo();
    let v = view(&demo, "foreign_stake_authority");
    assert_eq!(v.stake_accounts.len(), 1);
    let stake = &v.stake_accounts[0];
    assert_ne!(stake.withdrawer, v.address);
    assert_ne!(stake.staker, v.address);
    assert!(stake.voter.is_some() && stake.custodian.is_none());
    let k = kinds(&v);
    assert!(k
        .iter()
        .any(|k| matches!(k, InstructionKind::StakeInitialize { withdrawer, .. } if *withdrawer == v.address)));
    assert!(k.iter().any(|k| matches!(k, InstructionKind::StakeAuthorize {
        authority_type: StakeAuthorityType::Withdrawer, new_authority, .. } if *new_authority == stake.withdrawer)));
}

#[test]
fn permanent_delegate_holder_holds_token_2022_with_extensions() {
    let demo = demo();
    let v = view(&demo, "permanent_delegate_holder");
    assert_eq!(v.token_accounts.len(), 2);
    assert!(v.token_accounts.iter().all(|t| t.program == TokenProgram::Token2022 && t.amount > 0));
    assert!(v.token_accounts.iter().any(|t| t.extensions.contains(&"transferHookAccount".to_owned())));
    assert_eq!(v.mints.len(), 2);
    let pd = v.mints.iter().find(|m| m.permanent_delegate().is_some()).unwrap();
    assert_eq!(pd.program, TokenProgram::Token2022);
    assert!(v
        .mints
        .iter()
        .any(|m| m.extensions.iter().any(|e| matches!(e, MintExtension::TransferHook { program_id: Some(_), .. }))));
    // The transfer hook runs as a CPI of the Token-2022 transfer.
    assert!(v
        .transactions
        .iter()
        .flat_map(|t| &t.instructions)
        .any(|i| i.index.inner.is_some() && i.program == Program::Other));
}

#[test]
fn mint_risk_holder_reads_the_extensions_a_node_would_report() {
    let demo = demo();
    let v = view(&demo, "mint_risk_holder");
    assert_eq!(v.token_accounts.len(), 3);
    assert!(v.token_accounts.iter().all(|t| t.program == TokenProgram::Token2022 && t.amount > 0));
    let exts = |name: &str| v.token_accounts.iter().filter(|t| t.extensions.iter().any(|e| e == name)).count();
    assert_eq!((exts("immutableOwner"), exts("transferFeeAmount"), exts("nonTransferableAccount")), (3, 1, 1));
    let has = |f: fn(&MintExtension) -> bool| v.mints.iter().filter(|m| m.extensions.iter().any(f)).count();
    let fee = has(|e| matches!(e, MintExtension::TransferFeeConfig { basis_points: 1_000, authority: Some(_), .. }));
    let frozen = has(|e| matches!(e, MintExtension::DefaultAccountState { state } if state == "frozen"));
    let closer = has(|e| matches!(e, MintExtension::MintCloseAuthority { close_authority: Some(_) }));
    let soulbound = has(|e| matches!(e, MintExtension::NonTransferable));
    assert_eq!((fee, frozen, closer, soulbound), (1, 1, 1, 1), "{:?}", v.mints);
    // The soulbound token was minted to the wallet (it could not be transferred there). The
    // default-frozen account was thawed before it received tokens: that transaction names the
    // token account, not the wallet, so it is in the account's own history (as on a node).
    assert!(kinds(&v).iter().any(|k| matches!(k, InstructionKind::TokenMintTo { .. })));
    let is_kyc = |m: &Pubkey| v.mints.iter().any(|x| x.address == *m && x.freeze_authority.is_some());
    let kyc = v.token_accounts.iter().find(|t| is_kyc(&t.mint)).expect("the KYC account").address;
    let history = block_on(build_view(&demo, &kyc, ViewOptions::default())).unwrap();
    assert!(kinds(&history).iter().any(|k| matches!(k, InstructionKind::TokenThaw { .. })));
}

#[test]
fn farm_wallets_close_their_token_account_and_let_a_relayer_pay() {
    let demo = demo();
    for name in ["farm_a", "farm_b"] {
        let v = view(&demo, name);
        assert!(v.token_accounts.is_empty(), "{name}: the DEMO account was closed");
        let close = kinds(&v).into_iter().find_map(|k| match k {
            InstructionKind::TokenCloseAccount { account, destination, owner } => {
                Some((*account, *destination, *owner))
            }
            _ => None,
        });
        let (closed, destination, owner) = close.unwrap_or_else(|| panic!("{name}: no closeAccount"));
        assert_eq!(owner, v.address);
        assert!(account(&demo, &closed).is_none(), "{name}: a closed account no longer exists");
        assert!(destination != v.address);
        let relayed = v.transactions.iter().filter(|t| t.is_signer(&v.address) && t.fee_payer != v.address).count();
        assert_eq!(relayed, 2, "{name}");
    }
}

#[test]
fn poisoning_victim_gets_dust_from_a_lookalike_and_pays_it() {
    let demo = demo();
    let v = view(&demo, "poisoning_victim");
    let w = v.address;
    let text = |k: &Pubkey| k.to_string();
    let k = kinds(&v);
    let paid: BTreeSet<Pubkey> = k
        .iter()
        .filter_map(|k| match k {
            InstructionKind::SystemTransfer { from, to, .. } if *from == w => Some(*to),
            _ => None,
        })
        .collect();
    let dust_from: Vec<Pubkey> = k
        .iter()
        .filter_map(|k| match k {
            InstructionKind::SystemTransfer { from, to, lamports } if *to == w && *lamports <= 1_000 => Some(*from),
            _ => None,
        })
        .collect();
    assert_eq!(dust_from.len(), 1);
    let fake = dust_from[0];
    let real = paid.iter().find(|p| **p != fake && text(p)[..4] == text(&fake)[..4]).unwrap();
    let (r, f) = (text(real), text(&fake));
    assert_eq!(r[r.len() - 4..], f[f.len() - 4..]);
    assert!(paid.contains(&fake), "later paid the look-alike");
    assert!(k
        .iter()
        .any(|k| matches!(k, InstructionKind::TokenTransfer { authority, amount: 1, .. } if *authority == fake)));
}

#[test]
fn drainer_contact_calls_a_flagged_program_directly_and_by_cpi() {
    let demo = demo();
    let v = view(&demo, "drainer_contact");
    let drainers = flagged("drainer_program");
    let calls: Vec<_> = v
        .transactions
        .iter()
        .flat_map(|t| t.instructions.iter().map(move |i| (t.signature, i)))
        .filter(|(_, i)| drainers.contains(&i.program_id))
        .collect();
    let outer = calls.iter().find(|(_, i)| i.index.inner.is_none()).unwrap();
    let inner = calls.iter().find(|(_, i)| i.index.inner.is_some()).unwrap();
    assert_ne!(outer.0, inner.0, "different transactions");
    let funders = flagged("scam_funder");
    assert!(kinds(&v).iter().any(|k| matches!(k, InstructionKind::SystemTransfer { from, to, .. }
        if *to == v.address && funders.contains(from))));
}

#[test]
fn sybil_pairs_share_funder_and_history() {
    let demo = demo();
    let (a, b) = (view(&demo, "sybil_a"), view(&demo, "sybil_b"));
    let funder = key(&demo, "funder");
    let funded_by = |v: &WalletView| {
        kinds(v).iter().any(
            |k| matches!(k, InstructionKind::SystemTransfer { from, to, .. } if *from == funder && *to == v.address),
        )
    };
    assert!(funded_by(&a) && funded_by(&b));
    let sigs = |v: &WalletView| v.transactions.iter().map(|t| t.signature).collect::<BTreeSet<_>>();
    let shared: Vec<Signature> = sigs(&a).intersection(&sigs(&b)).copied().collect();
    let direct = a
        .transactions
        .iter()
        .find(|t| {
            t.instructions.iter().any(|i| {
                matches!(i.kind,
        InstructionKind::SystemTransfer { from, to, .. } if from == a.address && to == b.address)
            })
        })
        .unwrap();
    assert!(shared.contains(&direct.signature));
    assert_eq!(b.transactions.iter().find(|t| t.signature == direct.signature), Some(direct));
    assert!(a.transactions.iter().any(|t| t.is_signer(&a.address) && t.is_signer(&b.address)));
    let (c, d) = (view(&demo, "sybil_c"), view(&demo, "sybil_d"));
    assert!(funded_by(&c) && funded_by(&d));
    assert!(sigs(&c).is_disjoint(&sigs(&d)));
    let pairs = demo.linked_pairs();
    assert!(pairs.contains(&(a.address, b.address, "likely_same_owner")));
    assert!(pairs.iter().any(|(_, _, r)| *r == "unrelated"));
    // The funder's history holds all four fundings.
    assert!(signatures(&demo, &funder).len() >= 5);
}

#[test]
fn busy_trader_history_is_truncated_at_default_depth() {
    let demo = demo();
    let started = Instant::now();
    let v = view(&demo, "busy_trader");
    let took = started.elapsed();
    assert!(v.coverage.history_truncated);
    assert_eq!(v.coverage.transactions_read, config::HISTORY_DEPTH_DEFAULT);
    assert_eq!(v.coverage.transactions_missing, 0);
    assert!(v.transactions.iter().any(|t| t.failed()));
    assert!(v.transactions.iter().any(|t| t.version == TransactionVersion::V0));
    assert!(v.transactions.iter().any(|t| t.error.as_deref() == Some(r#"{"InstructionError":[2,{"Custom":6001}]}"#)));
    assert!(v
        .transactions
        .iter()
        .flat_map(|t| &t.instructions)
        .any(|i| i.index.inner.is_some() && i.program == Program::Token));
    assert_eq!(v.token_accounts.len(), 3);
    assert!(took < Duration::from_secs(20), "busy_trader view took {took:?}");
    let all = {
        let mut out = Vec::new();
        let mut before: Option<Signature> = None;
        loop {
            let page = block_on(demo.get_signatures_for_address(&v.address, before.as_ref(), 1_000)).unwrap();
            before = page.last().map(|s| Signature::parse(&s.signature).unwrap());
            let n = page.len();
            out.extend(page);
            if n < 1_000 {
                break out;
            }
        }
    };
    assert!(all.len() >= 3_000, "{} transactions", all.len());
    let unique: BTreeSet<&str> = all.iter().map(|s| s.signature.as_str()).collect();
    assert_eq!(unique.len(), all.len());
    assert!(all.windows(2).all(|w| w[0].slot >= w[1].slot));
}

#[test]
fn busy_trades_chain_balances() {
    let demo = demo();
    let trader = key(&demo, "busy_trader");
    let sigs = block_on(demo.get_signatures_for_address(&trader, None, 300)).unwrap();
    let txs: Vec<TransactionResult> = sigs.iter().rev().map(|s| transaction(&demo, &s.signature)).collect();
    let lamports = |t: &TransactionResult, pre: bool| {
        let m = t.tx.meta.as_ref().unwrap();
        if pre {
            m.pre_balances[0]
        } else {
            m.post_balances[0]
        }
    };
    for w in txs.windows(2) {
        assert_eq!(lamports(&w[0], false), lamports(&w[1], true));
    }
    let now = account(&demo, &trader).unwrap();
    assert_eq!(now.lamports, lamports(txs.last().unwrap(), false));
}

#[test]
fn time_shaped_archetypes() {
    let demo = demo();
    let day_s = 86_400;
    let new = view(&demo, "new_wallet");
    let oldest = new.transactions.last().unwrap().block_time.unwrap();
    assert!(clock::AS_OF_BLOCK_TIME_S - oldest < day_s, "first transaction within a day");
    let dormant = view(&demo, "dormant_woke");
    let times: Vec<i64> = dormant.transactions.iter().map(|t| t.block_time.unwrap()).collect();
    assert!(times.windows(2).any(|w| w[0] - w[1] > 365 * day_s), "a gap of more than a year");
    assert!(clock::AS_OF_BLOCK_TIME_S - times[0] < 7 * day_s, "active this week");
}

#[test]
fn eligibility_fixtures_answer_account_kinds() {
    let demo = demo();
    let kind = |name: &str| {
        let a = account(&demo, &key(&demo, name)).unwrap();
        xray::ledger::model::AccountState::from_wire(&a).unwrap()
    };
    assert_eq!(kind("token_mint").kind, AccountKind::Mint);
    let ta = kind("token_account");
    assert_eq!(ta.kind, AccountKind::TokenAccount);
    assert!(!key(&demo, "token_account").is_on_curve());
    let program = kind("drainer_program");
    assert!(program.executable && program.kind == AccountKind::Program);
    assert_eq!(program.owner.to_string(), "BPFLoaderUpgradeab1e11111111111111111111111");
    let data = kind("program_data_account");
    assert!(matches!(data.kind, AccountKind::Data { program: None }));
    assert!(data.data_len > 0 && data.owner != Pubkey::default());
    assert!(!key(&demo, "program_data_account").is_on_curve());
}

#[test]
fn unknown_address_does_not_exist() {
    let demo = demo();
    let nobody = Pubkey::new([7; 32]);
    let v = block_on(build_view(&demo, &nobody, ViewOptions::default())).unwrap();
    assert!(v.account.is_none() && v.transactions.is_empty() && v.token_accounts.is_empty());
    // A background wallet of another seed is unknown too.
    let other = DemoLedger::new(SEED + 1).background_wallet(5).unwrap();
    assert!(account(&demo, &other).is_none());
    assert!(signatures(&demo, &other).is_empty());
}

#[test]
fn background_wallets_are_consistent_on_both_sides() {
    let demo = demo();
    for index in [3, 2_000, 99_999] {
        let w = demo.background_wallet(index).unwrap();
        let v = block_on(build_view(&demo, &w, ViewOptions::default())).unwrap();
        assert_eq!(v.account.as_ref().unwrap().kind, AccountKind::Wallet);
        assert_eq!(v.token_accounts.len(), 2);
        assert_eq!(v.mints.len(), 2);
        assert!(!v.transactions.is_empty());
        // A hub funds over a hundred wallets; a dozen of its transactions make the point.
        for t in v.transactions.iter().take(12) {
            // Both wallets and all token accounts named list the transaction.
            let named = t.account_keys.iter().filter(|k| account(&demo, k).is_some_and(|a| !a.executable));
            let mut count = 0;
            for k in named {
                let theirs = signatures(&demo, k);
                assert!(theirs.iter().any(|s| s.signature == t.signature.to_string()), "wallet {index}: {k}");
                count += 1;
            }
            assert!(count >= 2);
        }
        // Balances chain along the wallet's history and end at its current balance.
        let mut last: Option<u64> = None;
        for t in v.transactions.iter().rev() {
            let raw = transaction(&demo, &t.signature.to_string());
            let meta = raw.tx.meta.unwrap();
            let keys = match &raw.tx.transaction.message {
                wire::UiMessage::Parsed(m) => m.account_keys.iter().map(|k| k.pubkey.clone()).collect::<Vec<_>>(),
                wire::UiMessage::Raw(_) => unreachable!(),
            };
            let i = keys.iter().position(|k| *k == w.to_string()).unwrap();
            if let Some(prev) = last {
                assert_eq!(prev, meta.pre_balances[i]);
            }
            last = Some(meta.post_balances[i]);
        }
        assert_eq!(last, Some(v.account.unwrap().lamports));
    }
    assert!(demo.background_wallet(config::DEMO_POPULATION_LEN).is_none());
}

#[test]
fn every_world_transaction_is_in_each_named_accounts_history() {
    let demo = demo();
    let names = ["clean", "open_delegation", "owner_change_drained", "sybil_a", "drainer_contact", "poisoning_victim"];
    for name in names {
        for s in signatures(&demo, &key(&demo, name)) {
            let t = transaction(&demo, &s.signature);
            assert_eq!((t.slot, t.block_time), (s.slot, s.block_time));
            let wire::UiMessage::Parsed(m) = &t.tx.transaction.message else { panic!("parsed") };
            for k in &m.account_keys {
                let pk = Pubkey::parse(&k.pubkey).unwrap();
                if account(&demo, &pk).is_some_and(|a| a.executable) && pk != key(&demo, "drainer_program") {
                    continue; // Program ids: real ones are not indexed.
                }
                assert!(signatures(&demo, &pk).iter().any(|x| x.signature == s.signature), "{name}: {pk}");
            }
        }
    }
}

#[test]
fn busy_transactions_are_in_each_named_accounts_history() {
    let demo = demo();
    let trader = key(&demo, "busy_trader");
    let mut histories: std::collections::BTreeMap<Pubkey, BTreeSet<String>> = Default::default();
    let mut loaded = 0;
    for s in block_on(demo.get_signatures_for_address(&trader, None, 40)).unwrap() {
        let t = transaction(&demo, &s.signature);
        let wire::UiMessage::Parsed(m) = &t.tx.transaction.message else { panic!("parsed") };
        for k in &m.account_keys {
            let pk = Pubkey::parse(&k.pubkey).unwrap();
            if account(&demo, &pk).is_some_and(|a| a.executable) {
                continue;
            }
            loaded += usize::from(k.source.as_deref() == Some("lookupTable"));
            let history = histories
                .entry(pk)
                .or_insert_with(|| signatures(&demo, &pk).into_iter().map(|x| x.signature).collect());
            assert!(history.contains(&s.signature), "{pk} misses {}", s.signature);
        }
    }
    assert!(loaded > 0, "some keys come from the lookup table");
}

#[test]
fn ledger_can_move_between_threads() {
    fn check<T: Send + Sync>() {}
    check::<DemoLedger>();
}

#[test]
fn pagination_honours_before_and_limit() {
    let demo = demo();
    let w = key(&demo, "clean");
    let all = signatures(&demo, &w);
    assert!(all.len() >= 5);
    let first = block_on(demo.get_signatures_for_address(&w, None, 2)).unwrap();
    assert_eq!(first, all[..2]);
    let before = Signature::parse(&first[1].signature).unwrap();
    let rest = block_on(demo.get_signatures_for_address(&w, Some(&before), 1_000)).unwrap();
    assert_eq!(rest, all[2..]);
    let unknown = Signature([1; 64]);
    assert!(block_on(demo.get_signatures_for_address(&w, Some(&unknown), 10)).unwrap().is_empty());
    assert!(block_on(demo.get_signatures_for_address(&w, None, 0)).is_err());
    assert!(block_on(demo.get_signatures_for_address(&w, None, 1_001)).is_err());
    assert!(block_on(demo.get_multiple_accounts(&vec![w; 101])).is_err());
}

/// Every response for a set of addresses, serialized.
fn responses(demo: &DemoLedger, addresses: &[Pubkey]) -> Vec<u8> {
    let mut out = Vec::new();
    for a in addresses {
        out.extend(wire::to_vec(&block_on(demo.get_account_info(a)).unwrap()).unwrap());
        for p in [TokenProgram::Token, TokenProgram::Token2022] {
            out.extend(wire::to_vec(&block_on(demo.get_token_accounts_by_owner(a, p)).unwrap()).unwrap());
        }
        let sigs = block_on(demo.get_signatures_for_address(a, None, 60)).unwrap();
        out.extend(wire::to_vec(&sigs).unwrap());
        let parsed: Vec<Signature> = sigs.iter().map(|s| Signature::parse(&s.signature).unwrap()).collect();
        out.extend(wire::to_vec(&block_on(demo.get_transactions(&parsed)).unwrap()).unwrap());
    }
    out
}

fn sample_addresses(demo: &DemoLedger) -> Vec<Pubkey> {
    let mut out: Vec<Pubkey> = demo.archetype_list().iter().map(|a| Pubkey::parse(&a.address).unwrap()).collect();
    out.extend([1, 4_096, 131_000].map(|i| demo.background_wallet(i).unwrap()));
    out
}

#[test]
fn same_seed_gives_identical_bytes() {
    let (a, b) = (DemoLedger::new(SEED), DemoLedger::new(SEED));
    let addresses = sample_addresses(&a);
    assert_eq!(responses(&a, &addresses), responses(&b, &addresses));
    let c = DemoLedger::new(SEED + 1);
    assert_ne!(responses(&a, &addresses[..1]), responses(&c, &addresses[..1]));
    // Archetype addresses and flagged addresses do not depend on the seed.
    assert_eq!(a.archetype_list(), c.archetype_list());
}

#[test]
fn responses_round_trip_through_the_wire_types() {
    let demo = demo();
    for a in sample_addresses(&demo) {
        let info = block_on(demo.get_account_info(&a)).unwrap();
        let mut bytes = wire::to_vec(&info).unwrap();
        assert_eq!(wire::parse::<WithContext<Option<UiAccount>>>(&mut bytes).unwrap(), info);
        let sigs = block_on(demo.get_signatures_for_address(&a, None, 40)).unwrap();
        let mut bytes = wire::to_vec(&sigs).unwrap();
        assert_eq!(wire::parse::<Vec<SignatureInfo>>(&mut bytes).unwrap(), sigs);
        for s in &sigs {
            let t = transaction(&demo, &s.signature);
            let mut bytes = wire::to_vec(&t).unwrap();
            assert_eq!(wire::parse::<TransactionResult>(&mut bytes).unwrap(), t, "{}", s.signature);
        }
        let owned = block_on(demo.get_token_accounts_by_owner(&a, TokenProgram::Token2022)).unwrap();
        let mut bytes = wire::to_vec(&owned).unwrap();
        assert_eq!(wire::parse::<WithContext<Vec<wire::KeyedAccount>>>(&mut bytes).unwrap(), owned);
    }
}

/// Binary account data (`["<base64>", "base64"]`) comes back as binary, not as a struct read
/// from an array.
#[test]
fn binary_account_data_round_trips() {
    let demo = demo();
    let info = block_on(demo.get_account_info(&key(&demo, "clean"))).unwrap();
    assert!(matches!(info.value.as_ref().unwrap().data, wire::UiAccountData::Binary(_)));
    let mut bytes = wire::to_vec(&info).unwrap();
    assert_eq!(wire::parse::<WithContext<Option<UiAccount>>>(&mut bytes).unwrap(), info);
}

#[test]
fn construction_and_background_views_are_fast() {
    let started = Instant::now();
    let demo = DemoLedger::new(99);
    let built = started.elapsed();
    assert!(built < Duration::from_secs(2), "construction took {built:?} (debug build)");
    let started = Instant::now();
    // A hub funds a hundred wallets: the largest background history.
    for index in [0, 70_000] {
        let w = demo.background_wallet(index).unwrap();
        let v = block_on(build_view(&demo, &w, ViewOptions::default())).unwrap();
        assert!(!v.transactions.is_empty());
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "background views took {took:?}");
}
