//! Golden tests of the engine on the demo ledger: every archetype yields exactly the signal
//! kinds it documents (`xray demo list`), the clean wallet nothing above `info`, each expected
//! attack path appears, accounts that are not wallets are refused with the right reason, linked
//! pairs are linked (by the links each pair documents) and unrelated pairs unrelated, mint
//! risks cite the mint with its terms, and output is byte-identical across runs and threads.

use std::collections::BTreeSet;

use xray::config;
use xray::eligibility;
use xray::engine::changes::{changes, Previous};
use xray::engine::report::{Evidence, Fact, Severity, Signal, XRay};
use xray::engine::{self, compare};
use xray::jobs::execute::{add_funder_hop, execute, JobSpec, Outcome};
use xray::labels::Labels;
use xray::ledger::demo::DemoLedger;
use xray::ledger::instruction::InstructionKind;
use xray::ledger::model::TokenProgram;
use xray::ledger::read::LedgerSource;
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{KeyedAccount, SignatureInfo, TransactionResult, UiAccount, WithContext};
use xray::ledger::{LedgerError, WalletView};
use xray::pubkey::{Pubkey, Signature};

fn demo() -> DemoLedger {
    DemoLedger::new(config::DEMO_SEED_DEFAULT)
}

/// The evidence items a signal cites, in its order.
/// One side of a comparison with no stored analysis.
fn side<'a>(view: &'a WalletView, xray: &'a XRay) -> compare::Side<'a> {
    compare::Side { view, score: &xray.score, analysis_id: None }
}

fn cited_by<'a>(xray: &'a XRay, signal: &Signal) -> Vec<&'a Evidence> {
    signal.evidence_ids.iter().map(|id| xray.evidence.iter().find(|e| e.id() == id).unwrap()).collect()
}

/// The view a job reads under the builtin labels: the wallet's, and its first funder's hop
/// when the labels want it (they list the demo's synthetic sanctioned address, so they do).
fn view(demo: &DemoLedger, address: &Pubkey) -> WalletView {
    view_under(demo, address, &Labels::builtin())
}

fn view_under(demo: &DemoLedger, address: &Pubkey, labels: &Labels) -> WalletView {
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    rt.block_on(async {
        let mut v = build_view(demo, address, ViewOptions::default()).await.unwrap();
        add_funder_hop(demo, &mut v, labels).await;
        v
    })
}

/// Attack path kinds each archetype must show (others may add more only where listed).
const EXPECTED_PATHS: &[(&str, &[&str])] = &[
    ("clean", &[]),
    ("open_delegation", &["delegate_drain"]),
    ("owner_change_drained", &["owner_change_takeover"]),
    ("assigned_wallet", &["assign_takeover"]),
    ("foreign_nonce_authority", &["nonce_replay"]),
    ("outsider_nonce", &["presigned_nonce_phish"]),
    ("foreign_stake_authority", &["stake_theft"]),
    ("permanent_delegate_holder", &["permanent_delegate_seizure", "freeze_honeypot"]),
    ("poisoning_victim", &["poisoning_misdirect"]),
    ("drainer_contact", &[]),
    ("mint_risk_holder", &[]),
    ("sanctioned_hop", &[]),
    ("farm_a", &[]),
    ("busy_trader", &[]),
];

#[test]
fn every_archetype_yields_its_documented_signals() {
    let demo = demo();
    let labels = Labels::builtin();
    for arch in demo.archetype_list() {
        let address = Pubkey::parse(&arch.address).unwrap();
        let v = view(&demo, &address);
        if let Some(reason) = arch.expected_signals.iter().find_map(|s| s.strip_prefix("not_eligible:")) {
            // In the API's order: the local checks at admission, then the ledger's in the job.
            let refused =
                eligibility::classify_local(&address, &labels).and_then(|()| eligibility::classify_ledger(&v));
            assert_eq!(refused.map_err(|i| i.reason()), Err(reason), "{}", arch.name);
            continue;
        }
        assert_eq!(eligibility::classify_local(&address, &labels), Ok(()), "{}", arch.name);
        assert_eq!(eligibility::classify_ledger(&v), Ok(()), "{}", arch.name);
        let xray = engine::analyze(&v, &labels);
        assert_eq!(xray.check(), Ok(()), "{}", arch.name);
        let kinds: BTreeSet<&str> = xray.signals.iter().map(|s| s.kind).collect();
        let expected: BTreeSet<&str> = arch.expected_signals.iter().copied().collect();
        assert_eq!(kinds, expected, "{}", arch.name);
        if let Some((_, paths)) = EXPECTED_PATHS.iter().find(|(n, _)| *n == arch.name) {
            let got: BTreeSet<&str> = xray.attack_paths.iter().map(|p| p.kind).collect();
            assert_eq!(got, paths.iter().copied().collect::<BTreeSet<_>>(), "{} attack paths", arch.name);
        }
    }
}

#[test]
fn clean_wallet_has_nothing_above_info_and_a_perfect_score() {
    let demo = demo();
    let address = demo.archetype("clean").unwrap();
    let xray = engine::analyze(&view(&demo, &address), &Labels::builtin());
    assert!(xray.signals.iter().all(|s| s.severity <= Severity::Info));
    assert_eq!(xray.score.value, 100);
    assert!(xray.attack_paths.is_empty());
}

#[test]
fn severe_archetypes_score_in_the_critical_band() {
    let demo = demo();
    let labels = Labels::builtin();
    for name in ["owner_change_drained", "assigned_wallet", "poisoning_victim", "drainer_contact", "open_delegation"] {
        let xray = engine::analyze(&view(&demo, &demo.archetype(name).unwrap()), &labels);
        assert_eq!(format!("{:?}", xray.score.risk_level), "Critical", "{name}: {:?}", xray.score);
    }
}

#[test]
fn evidence_points_at_real_transactions() {
    let demo = demo();
    let address = demo.archetype("open_delegation").unwrap();
    let v = view(&demo, &address);
    let xray = engine::analyze(&v, &Labels::builtin());
    let json = serde_json::to_value(&xray).unwrap();
    let mut transactions = 0;
    for e in json["evidence"].as_array().unwrap() {
        if e["kind"] == "transaction" {
            transactions += 1;
            let sig = e["signature"].as_str().unwrap();
            let tx = v
                .transactions
                .iter()
                .find(|t| t.signature.to_string() == sig)
                .expect("cited transaction is in the view");
            assert_eq!(e["slot"].as_u64().unwrap(), tx.slot);
            assert!(tx.instructions.iter().any(|i| i.index.to_string() == e["instructionIndex"].as_str().unwrap()));
        }
    }
    assert!(transactions > 0, "approvals are cited by their transactions");
}

#[test]
fn demo_pairs_have_their_relationship() {
    let demo = demo();
    let labels = Labels::builtin();
    let pairs = demo.linked_pairs();
    assert!(pairs.iter().any(|p| p.2 == "unrelated") && pairs.iter().any(|p| p.2 != "unrelated"));
    for (a, b, expected) in pairs {
        let (va, vb) = (view(&demo, &a), view(&demo, &b));
        let (xa, xb) = (engine::analyze(&va, &labels), engine::analyze(&vb, &labels));
        let ab = compare::compare(side(&va, &xa), side(&vb, &xb), &labels);
        let ba = compare::compare(side(&vb, &xb), side(&va, &xa), &labels);
        let rel = serde_json::to_value(ab.relationship).unwrap();
        assert_eq!(rel, expected, "{a} {b}: {:?}", ab.links);
        assert_eq!(ab.relationship, ba.relationship, "symmetric");
        assert_eq!(ab.similarity, ba.similarity, "symmetric");
        for l in &ab.links {
            assert!(!l.evidence_ids.is_empty());
        }
    }
}

#[test]
fn output_is_byte_identical_across_runs_and_threads() {
    // Every archetype the engine analyzes (the others are refused before it runs).
    let render = || -> Vec<Vec<u8>> {
        let demo = demo();
        let labels = Labels::builtin();
        demo.archetype_list()
            .iter()
            .filter(|a| !a.expected_signals.iter().any(|s| s.starts_with("not_eligible:")))
            .map(|a| {
                let v = view(&demo, &Pubkey::parse(&a.address).unwrap());
                serde_json::to_vec(&engine::analyze(&v, &labels)).unwrap()
            })
            .collect()
    };
    let here = render();
    let elsewhere = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2).map(|_| s.spawn(render)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    for other in elsewhere {
        assert_eq!(other, here);
    }
}

#[test]
fn readme_lists_every_archetype_address() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    for arch in demo().archetype_list() {
        assert!(readme.contains(&arch.address), "README is missing {} ({})", arch.name, arch.address);
    }
}

#[test]
fn an_owner_change_takeover_names_the_handed_account_mint_and_balance() {
    let demo = demo();
    let v = view(&demo, &demo.archetype("owner_change_drained").unwrap());
    let xray = engine::analyze(&v, &Labels::builtin());
    let signal = xray.signals.iter().find(|s| s.kind == "token_account_owner_changed").expect("signal");
    let account = Pubkey::parse(&signal.facts["tokenAccount"].text()).unwrap();
    // Independently of the handover: the account's own history shows what it was funded with
    // before it was given away (the funding transfer does not name the wallet).
    let history = view(&demo, &account);
    let funded = history
        .transactions
        .iter()
        .flat_map(|t| &t.token_changes)
        .find(|c| c.account == account && c.pre == 0 && c.post > 0)
        .expect("the account was funded");
    assert_eq!(signal.facts["mint"], Fact::Text(funded.mint.to_string()));
    assert_eq!(signal.facts["balanceAtHandover"], Fact::token_amount(funded.post), "a token amount is a string");
    assert_eq!(signal.facts["decimals"], Fact::Unsigned(u64::from(funded.decimals)), "beside its decimals");
    let path = xray.attack_paths.iter().find(|p| p.kind == "owner_change_takeover").expect("path");
    assert_eq!(path.assets_at_risk.len(), 1, "{path:?}");
    assert_eq!(
        (path.assets_at_risk[0].mint.as_str(), &path.assets_at_risk[0].amount),
        (funded.mint.to_string().as_str(), &Fact::token_amount(funded.post))
    );
    assert_eq!(path.assets_at_risk[0].decimals, Some(funded.decimals));
}

#[test]
fn poisoning_texts_name_amounts_in_their_units() {
    let demo = demo();
    let xray = engine::analyze(&view(&demo, &demo.archetype("poisoning_victim").unwrap()), &Labels::builtin());
    let json = serde_json::to_value(&xray).unwrap();
    let sent = xray.signals.iter().find(|s| s.kind == "sent_to_lookalike").expect("signal");
    assert_eq!(sent.facts["asset"], Fact::Text("SOL".into()));
    let Fact::Unsigned(amount) = sent.facts["lamports"] else { panic!("lamports are a JSON integer: {sent:?}") };
    assert!(!sent.facts.contains_key("amount"), "the key names the unit: {sent:?}");
    assert!(sent.detail.contains(&format!("sent {amount} lamports to ")), "{}", sent.detail);
    let summaries: Vec<&str> =
        json["evidence"].as_array().unwrap().iter().filter_map(|e| e["summary"].as_str()).collect();
    let dust: Vec<&&str> = summaries.iter().filter(|d| d.starts_with("dust of ")).collect();
    assert!(!dust.is_empty(), "{summaries:?}");
    for d in summaries {
        assert!(!d.contains(" SOL"), "lamports are not SOL: {d}");
    }
}

/// The JSON type a fact must have on the wire (contract §1: lamports are integers, token
/// amounts strings of base units), by its key; `asset` is the signal's `asset` fact, if any.
fn expected_fact_type(key: &str) -> &'static str {
    let lower = key.to_ascii_lowercase();
    if lower.contains("lamports") || key == "decimals" {
        "integer"
    } else if is_token_amount(key) {
        "string"
    } else if lower.ends_with("flagged") || matches!(key, "unlimited" | "labelledStablecoin" | "advancedByAuthority") {
        "boolean"
    } else if lower.ends_with("seconds")
        || lower.ends_with("slot")
        || lower.ends_with("blocktime")
        || lower.ends_with("days")
        || matches!(key, "transactions" | "transfers" | "sent" | "signed" | "failed" | "missing" | "invocations")
        || matches!(key, "transactionsAnalyzed" | "emptyAccounts" | "sharePercent" | "lastBefore" | "firstAfter")
        || matches!(key, "feeBasisPoints" | "transfersSent" | "transfersReceived" | "funderTransactionsRead")
        || matches!(key, "outsiderNonces" | "assetsSwept" | "solSharePercent" | "sweeps")
    {
        "integer"
    } else {
        "string"
    }
}

/// Keys of facts that hold a token amount (base units): each travels with `mint` and `decimals`.
fn is_token_amount(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    lower.contains("amount") || lower.starts_with("balance") || matches!(key, "supply" | "maximumFee")
}

#[test]
fn facts_carry_lamports_counts_and_flags_as_json_numbers_and_token_amounts_as_strings() {
    let demo = demo();
    let mut seen = BTreeSet::new();
    for arch in demo.archetype_list() {
        let address = Pubkey::parse(&arch.address).unwrap();
        let v = view(&demo, &address);
        if eligibility::classify_local(&address, &Labels::builtin()).is_err()
            || eligibility::classify_ledger(&v).is_err()
        {
            continue;
        }
        let json = serde_json::to_value(engine::analyze(&v, &Labels::builtin())).unwrap();
        for signal in json["signals"].as_array().unwrap() {
            let facts = signal["facts"].as_object().unwrap();
            if facts.keys().any(|k| is_token_amount(k)) {
                // One representation (README, "Amounts"): no token amount without its token.
                assert!(facts["mint"].is_string() && facts["decimals"].is_u64(), "{}: {facts:?}", signal["kind"]);
            }
            for (key, value) in facts {
                let actual = match value {
                    serde_json::Value::String(_) => "string",
                    serde_json::Value::Bool(_) => "boolean",
                    serde_json::Value::Number(n) if n.is_u64() || n.is_i64() => "integer",
                    other => panic!("{key}: {other} is not a string, integer or boolean"),
                };
                assert_eq!(actual, expected_fact_type(key), "{}: fact {key} = {value}", signal["kind"]);
                seen.insert(actual);
            }
        }
    }
    assert_eq!(seen.len(), 3, "the archetypes exercise every fact type: {seen:?}");
}

#[test]
fn an_address_with_nothing_on_chain_says_so_and_halves_confidence() {
    let demo = demo();
    // On the curve, never seen by the demo ledger.
    let nobody = Pubkey::parse("9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM").unwrap();
    let v = view(&demo, &nobody);
    assert!(v.account.is_none() && v.transactions.is_empty(), "the address is unknown to the demo ledger");
    let xray = engine::analyze(&v, &Labels::builtin());
    assert_eq!(xray.check(), Ok(()));
    let kinds: Vec<&str> = xray.signals.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, ["no_activity"]);
    assert_eq!((xray.score.value, xray.score.confidence), (100, 0.5), "nothing known bad, nothing known at all");
    let json = serde_json::to_value(&xray).unwrap();
    assert!(json["signals"][0]["facts"]["asOfSlot"].is_u64(), "{json}");
    // An archetype with history never says it.
    let clean = engine::analyze(&view(&demo, &demo.archetype("clean").unwrap()), &Labels::builtin());
    assert!(clean.signals.iter().all(|s| s.kind != "no_activity"));
    assert_eq!(clean.score.confidence, 1.0);
}

/// The X-Ray payload of an archetype on `demo`, as the API stores it.
fn payload(demo: &DemoLedger, name: &str) -> Option<Vec<u8>> {
    let address = demo.archetype(name)?;
    let v = view(demo, &address);
    eligibility::classify_ledger(&v).ok()?;
    Some(serde_json::to_vec(&engine::analyze(&v, &Labels::builtin())).expect("json"))
}

fn previous(payload: &[u8]) -> Previous<'_> {
    Previous { analysis_id: "an_previous", completed_at: "2026-11-24T00:00:00.000Z", payload }
}

/// Issue #15: between two seeds of the demo ledger the archetypes keep their signals and
/// scores; only amounts move. `changes` says exactly that: nothing appeared or disappeared, the
/// score did not move, and each changed signal names facts that are amounts, never accounts —
/// for `open_delegation`, the balance of its unlimited delegation's token account.
#[test]
fn changes_between_two_seeds_are_the_amounts_that_moved() {
    let (one, two) = (DemoLedger::new(1), DemoLedger::new(2));
    let mut moved = Vec::new();
    for arch in one.archetype_list() {
        let (Some(before), Some(after)) = (payload(&one, arch.name), payload(&two, arch.name)) else { continue };
        let changes = changes(previous(&before), &after).expect("X-Rays").expect("same engines");
        assert!(changes.appeared.is_empty() && changes.disappeared.is_empty(), "{}: {changes:?}", arch.name);
        assert_eq!(changes.score.delta, 0, "{}", arch.name);
        for change in &changes.changed {
            assert!(
                change.facts.iter().all(|f| !["delegate", "mint", "tokenAccount"].contains(&f.as_str())),
                "{change:?}"
            );
            moved.push((arch.name.to_string(), change.signal_id.clone(), change.kind.clone(), change.facts.clone()));
        }
        // Deterministic: the same inputs, the same bytes.
        let again = changes_of(&before, &after);
        assert_eq!(serde_json::to_vec(&changes).unwrap(), again, "{}", arch.name);
    }
    let delegation: Vec<_> =
        moved.iter().filter(|m| m.0 == "open_delegation").map(|m| (m.1.as_str(), m.2.as_str(), m.3.clone())).collect();
    assert_eq!(delegation, [("sig_2", "open_token_delegation", vec!["balance".to_owned()])]);
}

fn changes_of(before: &[u8], after: &[u8]) -> Vec<u8> {
    serde_json::to_vec(&changes(previous(before), after).unwrap().unwrap()).unwrap()
}

/// A wallet that took on risk, and one that shed it: the clean archetype's X-Ray as the
/// previous analysis of a wallet now showing `open_delegation`'s, and the other way round.
#[test]
fn risk_taken_on_appears_and_risk_shed_disappears_with_the_score() {
    let demo = demo();
    let (clean, risky) = (payload(&demo, "clean").expect("clean"), payload(&demo, "open_delegation").expect("risky"));
    let taken = changes(previous(&clean), &risky).unwrap().unwrap();
    let kinds = |refs: &[xray::engine::changes::SignalRef]| {
        refs.iter().map(|s| (s.signal_id.clone(), s.kind.clone())).collect::<Vec<_>>()
    };
    let both = vec![
        ("sig_1".to_owned(), "open_token_delegation".to_owned()),
        ("sig_2".to_owned(), "open_token_delegation".to_owned()),
    ];
    assert_eq!(kinds(&taken.appeared), both);
    assert!(taken.disappeared.is_empty() && taken.changed.is_empty());
    assert_eq!((taken.score.previous, taken.score.current, taken.score.delta), (100, 24, -76));
    assert_eq!(
        (taken.score.previous_risk_level.as_str(), taken.score.current_risk_level.as_str()),
        ("low", "critical")
    );
    let shed = changes(previous(&risky), &clean).unwrap().unwrap();
    assert_eq!(kinds(&shed.disappeared), both);
    assert!(shed.appeared.is_empty());
    assert_eq!(shed.score.delta, 76);
}

/// The account evidence `id` cites: `(account, slot)`.
fn cited_account<'a>(xray: &'a XRay, id: &str) -> Option<(&'a str, u64)> {
    xray.evidence.iter().find_map(|e| match e {
        Evidence::Account { id: i, account, slot, .. } if i == id => Some((account.as_str(), *slot)),
        _ => None,
    })
}

#[test]
fn mint_risks_cite_the_mint_at_the_view_slot_with_its_terms() {
    let demo = demo();
    let v = view(&demo, &demo.archetype("mint_risk_holder").unwrap());
    let xray = engine::analyze(&v, &Labels::builtin());
    for s in xray.signals.iter().filter(|s| s.kind.ends_with("_mint")) {
        let (account, slot) = cited_account(&xray, &s.evidence_ids[0]).unwrap_or_else(|| panic!("{}", s.kind));
        assert_eq!((account, slot), (s.facts["mint"].text().as_ref(), v.coverage.as_of_slot), "{}", s.kind);
    }
    let fee = xray.signals.iter().find(|s| s.kind == "transfer_fee_mint").expect("transfer fee");
    assert_eq!((fee.severity, &fee.facts["feeBasisPoints"]), (Severity::Medium, &Fact::Unsigned(1_000)));
    assert!(fee.facts.contains_key("feeAuthority"), "{:?}", fee.facts);
    // The demo's token program withheld the fee on the way in: the wallet holds what the
    // issuer sent less 10 % (rounded up; the cap is far above it).
    let held = v.token_accounts.iter().find(|t| t.mint.to_string() == fee.facts["mint"].text()).expect("FEE account");
    let sent = v
        .transactions
        .iter()
        .flat_map(|t| &t.instructions)
        .find_map(|i| match i.kind {
            InstructionKind::TokenTransfer { destination, amount, .. } if destination == held.address => Some(amount),
            _ => None,
        })
        .expect("the buy");
    assert_eq!(held.amount, sent - sent.div_ceil(10));
    let mintable: Vec<String> = xray
        .signals
        .iter()
        .filter(|s| s.kind == "mintable_supply_mint")
        .map(|s| s.facts["mint"].text().into())
        .collect();
    assert_eq!(mintable.len(), 2, "FEE and SOUL; KYC has no mint authority: {mintable:?}");
}

#[test]
fn farm_wallets_link_by_fee_payer_sweep_and_rent_destination_without_a_shared_funder() {
    let demo = demo();
    let labels = Labels::builtin();
    let (a, b) = (demo.archetype("farm_a").unwrap(), demo.archetype("farm_b").unwrap());
    let (va, vb) = (view(&demo, &a), view(&demo, &b));
    let (xa, xb) = (engine::analyze(&va, &labels), engine::analyze(&vb, &labels));
    let ab = compare::compare(side(&va, &xa), side(&vb, &xb), &labels);
    let kinds: BTreeSet<&str> = ab.links.iter().map(|l| l.kind).collect();
    for kind in ["shared_fee_payer", "shared_sweep_destination", "shared_rent_destination"] {
        let link = ab.links.iter().find(|l| l.kind == kind).unwrap_or_else(|| panic!("{kind} in {kinds:?}"));
        assert_eq!(link.evidence_ids.len(), 2, "one citation per wallet: {link:?}");
    }
    assert!(!kinds.contains("shared_funder") && !kinds.contains("direct_transfer"), "{kinds:?}");
    let closes = ab
        .evidence
        .iter()
        .filter(|e| matches!(e, Evidence::Transaction { instruction, .. } if instruction == "closeAccount"));
    assert_eq!(closes.count(), 2, "the rent link cites each wallet's closeAccount: {:?}", ab.evidence);
    // A labelled relayer is a hub (a fee-paying service): it links no one.
    let relayed = va.transactions.iter().filter(|t| t.is_signer(&a)).map(|t| t.fee_payer).find(|p| *p != a);
    let relayer = relayed.expect("a transaction the wallet signed and another paid for");
    let hub = Labels::from_toml(&format!(
        "version = 1\n[[label]]\naddress = \"{relayer}\"\nname = \"relayer\"\ncategory = \"entity\"\n"
    ))
    .unwrap();
    let unlabelled = compare::compare(side(&va, &xa), side(&vb, &xb), &hub);
    assert!(!unlabelled.links.iter().any(|l| l.kind == "shared_fee_payer"), "{:?}", unlabelled.links);
}

#[test]
fn a_sanctioned_address_one_hop_out_is_named_with_both_transfers_and_the_hop_in_coverage() {
    let demo = demo();
    let labels = Labels::builtin();
    let address = demo.archetype("sanctioned_hop").unwrap();
    let v = view(&demo, &address);
    let hop = v.funder_hop.as_deref().expect("the builtin labels list a sanctioned address, so the hop is read");
    assert!(hop.transactions.len() as u32 <= config::FUNDER_HOP_SIGNATURES_MAX && !hop.transactions.is_empty());
    let xray = engine::analyze(&v, &labels);
    let json = serde_json::to_value(&xray).unwrap();
    assert_eq!(json["coverage"]["funderHop"]["address"], hop.address.to_string());
    assert_eq!(json["coverage"]["funderHop"]["transactionsAnalyzed"], hop.transactions.len());
    assert_eq!(json["coverage"]["funderHop"]["historyComplete"], true);
    let signal = xray.signals.iter().find(|s| s.kind == "sanctioned_funder_exposure").unwrap();
    assert_eq!(signal.severity, Severity::High);
    let (mixer, _, list) = DemoLedger::sanctioned_addresses()[0];
    let facts = serde_json::to_value(&signal.facts).unwrap();
    assert_eq!(facts["funder"], hop.address.to_string());
    assert_eq!(facts["counterparty"], mixer.to_string());
    assert_eq!(facts["list"], list);
    assert_eq!((facts["transfersReceived"].as_u64(), facts["transfersSent"].as_u64()), (Some(1), Some(0)));
    // The wallet's first funding, then the funder's receipt from the mixer: both real
    // transactions, of the wallet's history and of the funder's.
    let cited = cited_by(&xray, signal);
    let signature = |e: &Evidence| match e {
        Evidence::Transaction { signature, .. } => signature.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(cited.len(), 2);
    assert!(v.transactions.iter().any(|t| t.signature.to_string() == signature(cited[0])));
    assert!(hop.transactions.iter().any(|t| t.signature.to_string() == signature(cited[1])));
    let funder_tx = hop.transactions.iter().find(|t| t.signature.to_string() == signature(cited[1])).unwrap();
    assert!(funder_tx.is_signer(&mixer));
    assert!(xray.coverage.as_of_slot >= funder_tx.slot);

    // Labels without a sanctioned address: no hop is read, and nothing is said of it.
    let plain = Labels::from_toml("version = 1\n").unwrap();
    let v = view_under(&demo, &address, &plain);
    assert!(v.funder_hop.is_none());
    let json = serde_json::to_value(engine::analyze(&v, &plain)).unwrap();
    assert!(json["coverage"].get("funderHop").is_none());
    assert!(json["signals"].as_array().unwrap().iter().all(|s| s["kind"] != "sanctioned_funder_exposure"));
}

/// The demo, except that one address's history cannot be read and, when `nonce_search` is
/// false, the node refuses the nonce-account search (as many nodes do).
struct Failing<'a> {
    demo: &'a DemoLedger,
    history_of: Pubkey,
    nonce_search: bool,
}

impl LedgerSource for Failing<'_> {
    fn name(&self) -> &'static str {
        self.demo.name()
    }
    fn synthetic(&self) -> bool {
        self.demo.synthetic()
    }
    async fn get_account_info(&self, a: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        self.demo.get_account_info(a).await
    }
    async fn get_multiple_accounts(&self, a: &[Pubkey]) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        self.demo.get_multiple_accounts(a).await
    }
    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        self.demo.get_token_accounts_by_owner(owner, program).await
    }
    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        if !self.nonce_search {
            return Err(LedgerError::Rpc { code: -32010, message: "excluded from account secondary indexes".into() });
        }
        self.demo.get_nonce_accounts_by_authority(authority).await
    }
    async fn get_signatures_for_address(
        &self,
        a: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        if *a == self.history_of {
            return Err(LedgerError::Unavailable("the node failed".into()));
        }
        self.demo.get_signatures_for_address(a, before, limit).await
    }
    async fn get_transactions(&self, s: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        self.demo.get_transactions(s).await
    }
}

#[test]
fn a_failed_hop_read_leaves_the_hop_incomplete_and_the_job_ready() {
    let demo = demo();
    let address = demo.archetype("sanctioned_hop").unwrap();
    let funder = view(&demo, &address).funder_hop.unwrap().address;
    let failing = Failing { demo: &demo, history_of: funder, nonce_search: true };
    let labels = Labels::builtin();
    let spec = JobSpec::Analysis { wallet: address };
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let Outcome::Ready { payload } = rt.block_on(execute(&failing, &labels, &spec, ViewOptions::default(), &())) else {
        panic!("the job fails only on its own wallet's reads")
    };
    let xray: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let hop = &xray["coverage"]["funderHop"];
    assert_eq!((hop["address"].as_str(), hop["transactionsAnalyzed"].as_u64()), (Some(&*funder.to_string()), Some(0)));
    assert_eq!(hop["historyComplete"], false);
    assert!(xray["signals"].as_array().unwrap().iter().all(|s| s["kind"] != "sanctioned_funder_exposure"));
}

#[test]
fn a_nonce_someone_else_created_in_the_wallets_name_is_found_with_its_creator() {
    let demo = demo();
    let labels = Labels::builtin();
    let address = demo.archetype("outsider_nonce").unwrap();
    let v = view(&demo, &address);
    assert_eq!(v.outsider_nonces.len(), 1);
    let outsider = &v.outsider_nonces[0];
    let (creation, _, creator) = outsider.creation().expect("the nonce's own history reaches its creation");
    // The planter put the wallet in the creation (a tiny transfer), so the wallet's history
    // names the nonce; being named is not creating it.
    assert!(v.transactions.iter().any(|t| t.signature == creation.signature));
    assert!(v.nonce_accounts.iter().any(|n| n.address == outsider.account.address));
    assert_ne!(creator, address);
    let xray = engine::analyze(&v, &labels);
    let signal = xray.signals.iter().find(|s| s.kind == "outsider_nonce_authority").unwrap();
    assert_eq!(signal.severity, Severity::High);
    let facts = serde_json::to_value(&signal.facts).unwrap();
    assert_eq!(facts["nonceAccount"], outsider.account.address.to_string());
    assert_eq!(facts["creator"], creator.to_string());
    assert_eq!(facts["outsiderNonces"], 1);
    let cited = cited_by(&xray, signal);
    assert!(matches!(cited[0], Evidence::Account { account, .. } if *account == outsider.account.address.to_string()));
    assert!(
        matches!(cited[1], Evidence::Transaction { signature, instruction, .. } if *signature == creation.signature.to_string() && instruction == "createAccount")
    );
    let path = xray.attack_paths.iter().find(|p| p.kind == "presigned_nonce_phish").unwrap();
    assert_eq!(path.signal_ids, vec![signal.id.clone()]);
    assert_eq!(path.title, "A transaction you sign with this nonce never expires");
    assert_eq!(serde_json::to_value(&xray.coverage).unwrap()["nonceSearch"], "complete");

    // A node that refuses the search: the job is READY, says so, and finds nothing.
    let failing = Failing { demo: &demo, history_of: Pubkey::new([0; 32]), nonce_search: false };
    let spec = JobSpec::Analysis { wallet: address };
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let Outcome::Ready { payload } = rt.block_on(execute(&failing, &labels, &spec, ViewOptions::default(), &())) else {
        panic!("a refused nonce search does not fail the job")
    };
    let refused: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(refused["coverage"]["nonceSearch"], "failed");
    assert!(refused["signals"].as_array().unwrap().iter().all(|s| s["kind"] != "outsider_nonce_authority"));
}

#[test]
fn every_attack_path_has_a_fix_or_says_why_not_and_every_fix_is_signed_by_the_wallet_alone() {
    let demo = demo();
    let labels = Labels::builtin();
    let mut with_fix = BTreeSet::new();
    for arch in demo.archetype_list() {
        let address = Pubkey::parse(&arch.address).unwrap();
        let v = view(&demo, &address);
        if eligibility::classify_ledger(&v).is_err() {
            continue;
        }
        let xray = engine::analyze(&v, &labels);
        for p in &xray.attack_paths {
            // Exactly one of: instructions, or a note saying why there are none.
            assert_ne!(p.fix_instructions.is_empty(), p.fix_note.is_none(), "{} {}", arch.name, p.kind);
        }
        let signal_fixes = xray.signals.iter().flat_map(|s| s.fix_instructions.iter().map(move |f| (s.kind, f)));
        let path_fixes = xray.attack_paths.iter().flat_map(|p| p.fix_instructions.iter().map(move |f| (p.kind, f)));
        for (kind, fix) in signal_fixes.chain(path_fixes) {
            let signers: Vec<&str> = fix.accounts.iter().filter(|a| a.is_signer).map(|a| a.pubkey.as_str()).collect();
            assert_eq!(signers, [arch.address.as_str()], "{} {kind}", arch.name);
            assert!(!fix.description.is_empty() && bs58::decode(&fix.data).into_vec().is_ok());
            with_fix.insert(kind);
        }
    }
    let expected = ["delegate_drain", "open_token_delegation", "outsider_nonce_authority", "presigned_nonce_phish"];
    for kind in expected.into_iter().chain(["rent_locked_empty_accounts"]) {
        assert!(with_fix.contains(kind), "no archetype shows a fix for {kind}: {with_fix:?}");
    }
    // The catalogue names exactly the signal kinds that carried one.
    let catalogued: BTreeSet<&str> = engine::signals::FIXES.iter().map(|(k, _)| *k).collect();
    let seen: BTreeSet<&str> = with_fix.iter().copied().filter(|k| engine::signals::spec(k).is_some()).collect();
    assert!(seen.is_subset(&catalogued), "{seen:?} ⊄ {catalogued:?}");
}

#[test]
fn the_demo_fixes_name_the_exposed_accounts_and_amounts() {
    let demo = demo();
    let labels = Labels::builtin();
    let analyze = |name: &str| {
        let v = view(&demo, &demo.archetype(name).unwrap());
        (engine::analyze(&v, &labels), v)
    };
    // Revoke: one per delegated account, naming it (writable) then the wallet (signer); data [5].
    let (xray, v) = analyze("open_delegation");
    for signal in xray.signals.iter().filter(|s| s.kind == "open_token_delegation") {
        let account = serde_json::to_value(&signal.facts).unwrap()["tokenAccount"].as_str().unwrap().to_owned();
        let program = v.token_accounts.iter().find(|t| t.address.to_string() == account).unwrap().program;
        let [fix] = signal.fix_instructions.as_slice() else { panic!("one revoke per delegation") };
        assert_eq!(fix.program_id, program.id());
        assert_eq!(fix.accounts[0].pubkey, account);
        assert_eq!(bs58::decode(&fix.data).into_vec().unwrap(), [5]);
    }
    // Withdraw the outsider nonce's whole balance to the wallet: [5,0,0,0] + u64 LE.
    let (xray, v) = analyze("outsider_nonce");
    let nonce = &v.outsider_nonces[0].account;
    let signal = xray.signals.iter().find(|s| s.kind == "outsider_nonce_authority").unwrap();
    let [fix] = signal.fix_instructions.as_slice() else { panic!("one withdraw") };
    let mut data = vec![5, 0, 0, 0];
    data.extend(nonce.lamports.to_le_bytes());
    assert_eq!(bs58::decode(&fix.data).into_vec().unwrap(), data);
    let metas: Vec<&str> = fix.accounts.iter().map(|a| a.pubkey.as_str()).collect();
    let (account, wallet) = (nonce.address.to_string(), v.address.to_string());
    assert_eq!(metas[..2], [account.as_str(), wallet.as_str()]);
    let path = xray.attack_paths.iter().find(|p| p.kind == "presigned_nonce_phish").unwrap();
    assert_eq!(path.fix_instructions, signal.fix_instructions);
    // No instruction undoes an owner change: `[]` and a note naming the new owner.
    let (xray, _) = analyze("owner_change_drained");
    let path = xray.attack_paths.iter().find(|p| p.kind == "owner_change_takeover").unwrap();
    let changed = xray.signals.iter().find(|s| s.kind == "token_account_owner_changed").unwrap();
    let new_owner = serde_json::to_value(&changed.facts).unwrap()["newOwner"].as_str().unwrap().to_owned();
    assert!(path.fix_instructions.is_empty());
    let note = path.fix_note.as_deref().unwrap();
    assert!(note.contains("already happened") && note.contains(&new_owner), "{note}");
}

#[test]
fn an_allow_listed_funder_still_shows_its_sanctions_exposure_one_hop_out() {
    use xray::engine::policy::{default_weights_hundredths, Policy, PolicyRef};
    let demo = demo();
    let wallet = demo.archetype("sanctioned_hop").unwrap();
    let funder = view(&demo, &wallet).funder_hop.as_ref().expect("the hop is read").address;
    let reference = PolicyRef { id: "pol_trusting".into(), version: 1 };
    let policy =
        Policy::new(reference, &std::collections::BTreeMap::new(), default_weights_hundredths(), &[funder], &[])
            .unwrap();
    let labels = Labels::builtin();
    let account_labels = policy.labels(&labels);
    let v = view_under(&demo, &wallet, &account_labels);
    assert!(v.funder_hop.is_some(), "an allow-listed funder's history is still read one hop out");
    let xray = engine::analyze_with(&v, &account_labels, &policy);
    assert!(xray.signals.iter().any(|s| s.kind == "sanctioned_funder_exposure"), "{:?}", xray.signals);
}
