//! The engine never panics and always keeps its payload promises: on views built from the real
//! mainnet fixtures (every account of every transaction taken as "the wallet") and on
//! arbitrary generated views (property tests). Output is deterministic.

use std::collections::BTreeMap;
use std::path::PathBuf;

use proptest::prelude::*;
use xray::engine::policy::{default_weights_hundredths, Policy, PolicyRef, SeverityRule, UNLOWERABLE_KINDS};
use xray::engine::report::Severity;
use xray::engine::signals::CATALOGUE;
use xray::engine::{self, compare};
use xray::labels::Labels;
use xray::ledger::instruction::{
    Instruction, InstructionIndex, InstructionKind, MintExtensionInit, Program, StakeAuthorityType, TokenAuthorityType,
};
use xray::ledger::model::*;
use xray::ledger::wire::{self, TransactionWithMeta, UiBlock};
use xray::pubkey::{Pubkey, Signature};

fn fixture_transactions() -> Vec<Transaction> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/solana-rpc");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let mut bytes = std::fs::read(path).unwrap();
        let doc: wire::Value = wire::parse(&mut bytes).unwrap();
        let result = simd_json::prelude::ValueObjectAccess::get(&doc, "result").unwrap_or(&doc);
        let mut text = simd_json::prelude::Writable::encode(result).into_bytes();
        if let Ok(block) = wire::parse::<UiBlock>(&mut text.clone()) {
            out.extend(
                block
                    .transactions
                    .iter()
                    .filter_map(|t| Transaction::from_wire(t, block.parent_slot + 1, block.block_time)),
            );
        } else {
            let tx: wire::TransactionResult = wire::parse(&mut text).unwrap();
            let t: &TransactionWithMeta = &tx.tx;
            out.extend(Transaction::from_wire(t, tx.slot, tx.block_time));
        }
    }
    out
}

fn view_of(address: Pubkey, transactions: Vec<Transaction>, coverage: Coverage) -> WalletView {
    WalletView {
        address,
        account: None,
        token_accounts: vec![],
        mints: vec![],
        nonce_accounts: vec![],
        stake_accounts: vec![],
        outsider_nonces: vec![],
        transactions,
        coverage,
        funder_hop: None,
    }
}

#[test]
fn fixture_views_analyze_cleanly_and_deterministically() {
    let txs = fixture_transactions();
    assert!(txs.len() >= 30);
    let labels = Labels::builtin();
    let mut wallets: Vec<Pubkey> = txs.iter().flat_map(|t| t.account_keys.iter().copied()).collect();
    wallets.sort();
    wallets.dedup();
    for wallet in wallets {
        let mine: Vec<Transaction> = txs.iter().filter(|t| t.account_keys.contains(&wallet)).cloned().collect();
        let view = view_of(wallet, mine, Coverage { source: "fixture".into(), ..Coverage::default() });
        let xray = engine::analyze(&view, &labels);
        assert_eq!(xray.check(), Ok(()), "{wallet}");
        let again = engine::analyze(&view, &labels);
        assert_eq!(serde_json::to_vec(&xray).unwrap(), serde_json::to_vec(&again).unwrap());
    }
}

// ---- arbitrary views -------------------------------------------------------------------

const POOL_LEN: usize = 6;

fn pool() -> Vec<Pubkey> {
    (0..POOL_LEN as u8).map(|i| Pubkey([i.wrapping_mul(37).wrapping_add(1); 32])).collect()
}

fn key() -> impl Strategy<Value = Pubkey> {
    (0..POOL_LEN).prop_map(|i| pool()[i])
}

fn amount() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), Just(1), Just(1_000), 0..u64::MAX, Just(u64::MAX)]
}

fn kind() -> impl Strategy<Value = InstructionKind> {
    prop_oneof![
        (key(), key(), amount()).prop_map(|(from, to, lamports)| InstructionKind::SystemTransfer {
            from,
            to,
            lamports
        }),
        (key(), key(), amount(), key()).prop_map(|(funder, account, lamports, owner)| {
            InstructionKind::SystemCreateAccount { funder, account, lamports, space: 0, owner }
        }),
        (key(), key()).prop_map(|(account, owner)| InstructionKind::SystemAssign { account, owner }),
        (key(), key()).prop_map(|(nonce, authority)| InstructionKind::NonceAdvance { nonce, authority }),
        (key(), key(), key()).prop_map(|(nonce, authority, new_authority)| InstructionKind::NonceAuthorize {
            nonce,
            authority,
            new_authority
        }),
        (key(), key(), key(), amount(), proptest::option::of(key())).prop_map(
            |(source, destination, authority, amount, mint)| InstructionKind::TokenTransfer {
                source,
                destination,
                authority,
                amount,
                mint
            }
        ),
        (key(), key(), key(), amount()).prop_map(|(account, delegate, owner, amount)| InstructionKind::TokenApprove {
            account,
            delegate,
            owner,
            amount,
            mint: None
        }),
        (key(), proptest::option::of(key()), proptest::option::of(key())).prop_map(
            |(target, authority, new_authority)| InstructionKind::TokenSetAuthority {
                target,
                authority_type: TokenAuthorityType::AccountOwner,
                authority,
                new_authority
            }
        ),
        (key(), key(), key(), key()).prop_map(|(funder, account, wallet, mint)| InstructionKind::AtaCreate {
            funder,
            account,
            wallet,
            mint
        }),
        (key(), key(), key()).prop_map(|(stake, staker, withdrawer)| InstructionKind::StakeInitialize {
            stake,
            staker,
            withdrawer,
            custodian: None
        }),
        (key(), key(), key()).prop_map(|(stake, authority, new_authority)| InstructionKind::StakeAuthorize {
            stake,
            authority,
            new_authority,
            authority_type: StakeAuthorityType::Withdrawer
        }),
        (key(), proptest::option::of(key())).prop_map(|(mint, delegate)| InstructionKind::TokenMintExtension {
            mint,
            extension: MintExtensionInit::PermanentDelegate { delegate }
        }),
        Just(InstructionKind::Other),
        "[a-z]{0,8}".prop_map(|data| InstructionKind::Raw { data }),
    ]
}

fn transaction() -> impl Strategy<Value = Transaction> {
    (
        any::<[u8; 8]>(),
        // Slots and times come from the ledger: extremes included (no sum may overflow).
        prop_oneof![0u64..1_000, Just(u64::MAX)],
        proptest::option::of(prop_oneof![1_600_000_000i64..1_700_000_000, Just(i64::MAX), Just(i64::MIN)]),
        proptest::option::of(Just("{\"InstructionError\":[0,{\"Custom\":1}]}".to_owned())),
        prop::collection::vec(key(), 1..3),
        prop::collection::vec((key(), kind()), 0..5),
        prop::collection::vec((key(), key(), amount(), amount()), 0..3),
    )
        .prop_map(|(sig, slot, block_time, error, signers, ixs, tokens)| {
            let mut signature = [0u8; 64];
            signature[..8].copy_from_slice(&sig);
            let instructions = ixs
                .into_iter()
                .enumerate()
                .map(|(i, (program_id, kind))| Instruction {
                    index: InstructionIndex { outer: (i / 2) as u16, inner: (i % 2 == 1).then_some(0) },
                    program_id,
                    program: Program::Other,
                    name: "x".into(),
                    kind,
                    accounts: vec![],
                })
                .collect();
            Transaction {
                signature: Signature(signature),
                slot,
                block_time,
                error,
                fee: 5000,
                fee_payer: signers[0],
                account_keys: signers.clone(),
                signers,
                version: TransactionVersion::Legacy,
                instructions,
                sol_changes: vec![],
                token_changes: tokens
                    .into_iter()
                    .map(|(account, mint, pre, post)| TokenChange {
                        account,
                        mint,
                        owner: Some(account),
                        decimals: 6,
                        pre,
                        post,
                    })
                    .collect(),
            }
        })
}

fn token_account() -> impl Strategy<Value = TokenAccount> {
    (
        key(),
        key(),
        amount(),
        proptest::option::of(key()),
        amount(),
        proptest::option::of(key()),
        any::<bool>(),
        amount(),
    )
        .prop_map(|(address, mint, amount, delegate, delegated_amount, close_authority, frozen, lamports)| {
            TokenAccount {
                address,
                mint,
                owner: pool()[0],
                program: TokenProgram::Token2022,
                amount,
                decimals: 6,
                delegate,
                delegated_amount,
                close_authority,
                state: if frozen { TokenAccountState::Frozen } else { TokenAccountState::Initialized },
                is_native: false,
                lamports,
                extensions: vec![],
            }
        })
}

fn view() -> impl Strategy<Value = WalletView> {
    (
        proptest::option::of((key(), amount())),
        prop::collection::vec(token_account(), 0..4),
        prop::collection::vec((key(), proptest::option::of(key()), proptest::option::of(key())), 0..3),
        prop::collection::vec((key(), key()), 0..2),
        prop::collection::vec((key(), key(), key()), 0..2),
        prop::collection::vec(transaction(), 0..25),
        (any::<bool>(), 0u32..5, prop_oneof![0u64..2_000, Just(u64::MAX)]),
        proptest::option::of((key(), prop::collection::vec(transaction(), 0..10), any::<bool>())),
        prop::collection::vec((key(), proptest::option::of(transaction())), 0..3),
    )
        .prop_map(
            |(
                account,
                token_accounts,
                mints,
                nonces,
                stakes,
                transactions,
                (truncated, missing, as_of),
                hop,
                outsiders,
            )| {
                let mut mints: Vec<MintInfo> = mints
                    .into_iter()
                    .map(|(address, freeze_authority, delegate)| MintInfo {
                        address,
                        program: TokenProgram::Token2022,
                        decimals: 6,
                        supply: 1,
                        mint_authority: None,
                        freeze_authority,
                        extensions: vec![
                            MintExtension::PermanentDelegate { delegate },
                            MintExtension::TransferHook { authority: None, program_id: delegate },
                        ],
                    })
                    .collect();
                mints.sort_by_key(|m| m.address);
                mints.dedup_by_key(|m| m.address);
                WalletView {
                    address: pool()[0],
                    account: account.map(|(owner, lamports)| AccountState {
                        lamports,
                        owner,
                        executable: false,
                        data_len: 0,
                        kind: AccountKind::Wallet,
                    }),
                    token_accounts,
                    mints,
                    nonce_accounts: nonces
                        .into_iter()
                        .map(|(address, authority)| NonceAccount { address, authority, lamports: 1_447_680 })
                        .collect(),
                    stake_accounts: stakes
                        .into_iter()
                        .map(|(address, staker, withdrawer)| StakeAccount {
                            address,
                            staker,
                            withdrawer,
                            custodian: None,
                            lamports: 5,
                            voter: None,
                        })
                        .collect(),
                    // Nonce accounts naming the wallet that it did not create, with or without a creation
                    // transaction (which need not create them: the engine must not trust it).
                    outsider_nonces: outsiders
                        .into_iter()
                        .map(|(address, creation)| OutsiderNonce {
                            account: NonceAccount { address, authority: pool()[0], lamports: 1_447_680 },
                            creation,
                        })
                        .collect(),
                    transactions,
                    coverage: Coverage {
                        source: "prop".into(),
                        synthetic: false,
                        as_of_slot: as_of,
                        transactions_read: 25,
                        transactions_missing: missing,
                        history_truncated: truncated,
                        items_skipped: 0,
                        nonce_search: NonceSearch::Complete,
                        outsider_nonces_found: 3,
                    },
                    // The first funder's history one hop out, as `read_hop` leaves it.
                    funder_hop: hop.map(|(address, transactions, truncated)| {
                        let coverage = Coverage {
                            source: "prop".into(),
                            as_of_slot: as_of,
                            transactions_read: transactions.len() as u32,
                            history_truncated: truncated,
                            ..Coverage::default()
                        };
                        Box::new(WalletView { address, transactions, coverage, ..WalletView::default() })
                    }),
                }
            },
        )
}

fn labels() -> Labels {
    let (flagged, sanctioned) = (pool()[3], pool()[4]);
    Labels::from_toml(&format!(
        "version = 1\n[[label]]\naddress = \"{flagged}\"\nname = \"bad\"\ncategory = \"flagged\"\n\
         [[label]]\naddress = \"{sanctioned}\"\nname = \"listed\"\ncategory = \"sanctioned\"\n"
    ))
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_views_keep_the_payload_promises(v in view()) {
        let labels = labels();
        let xray = engine::analyze(&v, &labels);
        prop_assert_eq!(xray.check(), Ok(()));
        prop_assert_eq!(serde_json::to_vec(&xray).unwrap(), serde_json::to_vec(&engine::analyze(&v, &labels)).unwrap());
    }

    #[test]
    fn arbitrary_pairs_compare_without_panic(a in view(), mut b in view()) {
        let labels = labels();
        b.address = pool()[1];
        let (xa, xb) = (engine::analyze(&a, &labels), engine::analyze(&b, &labels));
        let c = compare::compare(
            compare::Side { view: &a, score: &xa.score, analysis_id: None },
            compare::Side { view: &b, score: &xb.score, analysis_id: None },
            &labels,
        );
        prop_assert!((0.0..=1.0).contains(&c.similarity));
        let ids: Vec<&str> = c.evidence.iter().map(|e| e.id()).collect();
        for l in &c.links {
            prop_assert!(!l.evidence_ids.is_empty());
            prop_assert!(l.evidence_ids.iter().all(|e| ids.contains(&e.as_str())));
        }
    }
}

// ---- policies (issue #31) ----------------------------------------------------------------

/// The pool's addresses whose bit is set in `mask`.
fn chosen(mask: u8) -> Vec<Pubkey> {
    pool().into_iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, a)| a).collect()
}

fn reference() -> PolicyRef {
    PolicyRef { id: "pol_prop".into(), version: 1 }
}

fn lists_policy(allow: &[Pubkey], deny: &[Pubkey]) -> Policy {
    Policy::new(reference(), &BTreeMap::new(), default_weights_hundredths(), allow, deny).unwrap()
}

/// An X-Ray under `policy`, with the account's labels as the job builds them.
fn analyze_under(v: &WalletView, labels: &Labels, policy: &Policy) -> engine::report::XRay {
    engine::analyze_with(v, &policy.labels(labels), policy)
}

fn rule() -> impl Strategy<Value = SeverityRule> {
    prop_oneof![
        Just(SeverityRule::Ignore),
        Just(SeverityRule::Set(Severity::Info)),
        Just(SeverityRule::Set(Severity::Low)),
        Just(SeverityRule::Set(Severity::Medium)),
        Just(SeverityRule::Set(Severity::High)),
        Just(SeverityRule::Set(Severity::Critical)),
    ]
}

/// Five weights in hundredths that sum to 100 (four cut points on 0..=100).
fn weights() -> impl Strategy<Value = [u16; 5]> {
    prop::collection::vec(0u16..=100, 4).prop_map(|mut cuts| {
        cuts.sort_unstable();
        [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], cuts[3] - cuts[2], 100 - cuts[3]]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn an_allow_listed_counterparty_never_raises_risk(v in view(), mask in 0u8..64) {
        let labels = labels();
        let base = engine::analyze(&v, &labels);
        let allowed = analyze_under(&v, &labels, &lists_policy(&chosen(mask), &[]));
        prop_assert_eq!(allowed.check(), Ok(()));
        prop_assert!(allowed.score.value >= base.score.value, "{} < {}", allowed.score.value, base.score.value);
        for (a, b) in allowed.dimensions.iter().zip(&base.dimensions) {
            prop_assert!(a.score >= b.score, "{}: {} < {}", a.id, a.score, b.score);
        }
    }

    #[test]
    fn a_deny_listed_counterparty_never_lowers_risk(v in view(), mask in 0u8..64) {
        let labels = labels();
        let base = engine::analyze(&v, &labels);
        let denied = analyze_under(&v, &labels, &lists_policy(&[], &chosen(mask)));
        prop_assert_eq!(denied.check(), Ok(()));
        prop_assert!(denied.score.value <= base.score.value, "{} > {}", denied.score.value, base.score.value);
        for (d, b) in denied.dimensions.iter().zip(&base.dimensions) {
            prop_assert!(d.score <= b.score, "{}: {} > {}", d.id, d.score, b.score);
        }
    }

    #[test]
    fn any_policy_keeps_scores_in_range_and_ids_dense(
        v in view(),
        rules in prop::collection::vec(rule(), CATALOGUE.len()),
        picked in prop::collection::vec(any::<bool>(), CATALOGUE.len()),
        weights in weights(),
        allow in 0u8..64,
        deny in 0u8..64,
    ) {
        let severities: BTreeMap<String, SeverityRule> = CATALOGUE
            .iter()
            .zip(rules.iter().zip(&picked))
            .filter(|(_, (_, on))| **on)
            // Sanctions findings may only be raised (refused by `Policy::new` otherwise).
            .filter(|(spec, (rule, _))| {
                !UNLOWERABLE_KINDS.contains(&spec.kind) || matches!(rule, SeverityRule::Set(s) if *s >= spec.severity)
            })
            .map(|(spec, (rule, _))| (spec.kind.to_owned(), *rule))
            .collect();
        let (allow, deny) = (chosen(allow & !deny), chosen(deny));
        let policy = Policy::new(reference(), &severities, weights, &allow, &deny).unwrap();
        let xray = analyze_under(&v, &labels(), &policy);
        prop_assert_eq!(xray.check(), Ok(()));
        prop_assert!(xray.score.value <= 100);
        prop_assert_eq!(&xray.policy, policy.reference());
        for (i, s) in xray.signals.iter().enumerate() {
            prop_assert_eq!(&s.id, &format!("sig_{}", i + 1));
            prop_assert_ne!(severities.get(s.kind), Some(&SeverityRule::Ignore));
            if let Some(SeverityRule::Set(severity)) = severities.get(s.kind) {
                prop_assert_eq!(s.severity, *severity);
            }
        }
        for (i, e) in xray.evidence.iter().enumerate() {
            prop_assert_eq!(e.id(), format!("ev_{}", i + 1));
            prop_assert!(xray.signals.iter().any(|s| s.evidence_ids.iter().any(|c| c == e.id())), "{} cited by none", e.id());
        }
        let total: f64 = xray.dimensions.iter().map(|d| d.weight).sum();
        prop_assert!((total - 1.0).abs() < 1e-9);
    }
}
