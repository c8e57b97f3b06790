//! Detectors the demo archetypes do not reach, on small hand-built views: a flagged first
//! funder, a foreign close authority, a frozen account, missing transactions, the severity
//! branches of the mint risks — and that a flagged delegate raises an open delegation to
//! critical.

use xray::engine::{self, report::Severity};
use xray::labels::Labels;
use xray::ledger::instruction::{Instruction, InstructionIndex, InstructionKind, Program};
use xray::ledger::model::*;
use xray::pubkey::{Pubkey, Signature};

fn key(b: u8) -> Pubkey {
    Pubkey([b; 32])
}

const WALLET: u8 = 1;
const FLAGGED: u8 = 9;

fn labels() -> Labels {
    Labels::from_toml(&format!(
        "version = 1\n[[label]]\naddress = \"{}\"\nname = \"bad\"\ncategory = \"flagged\"\n",
        key(FLAGGED)
    ))
    .unwrap()
}

fn tx(n: u8, slot: u64, signers: &[u8], kind: InstructionKind) -> Transaction {
    let signers: Vec<Pubkey> = signers.iter().map(|&b| key(b)).collect();
    Transaction {
        signature: Signature([n; 64]),
        slot,
        block_time: Some(1_700_000_000 + slot as i64),
        error: None,
        fee: 5000,
        fee_payer: signers[0],
        account_keys: signers.clone(),
        signers,
        version: TransactionVersion::Legacy,
        instructions: vec![Instruction {
            index: InstructionIndex { outer: 0, inner: None },
            program_id: Pubkey::default(),
            program: Program::System,
            name: "transfer".into(),
            kind,
            accounts: vec![],
        }],
        sol_changes: vec![],
        token_changes: vec![],
    }
}

fn token_account(address: u8) -> TokenAccount {
    TokenAccount {
        address: key(address),
        mint: key(50),
        owner: key(WALLET),
        program: TokenProgram::Token,
        amount: 1_000,
        decimals: 6,
        delegate: None,
        delegated_amount: 0,
        close_authority: None,
        state: TokenAccountState::Initialized,
        is_native: false,
        lamports: 2_039_280,
        extensions: vec![],
    }
}

fn view(transactions: Vec<Transaction>, token_accounts: Vec<TokenAccount>) -> WalletView {
    WalletView {
        address: key(WALLET),
        account: None,
        token_accounts,
        mints: vec![],
        nonce_accounts: vec![],
        stake_accounts: vec![],
        outsider_nonces: vec![],
        transactions,
        coverage: Coverage { source: "test".into(), as_of_slot: 100, transactions_read: 2, ..Coverage::default() },
        funder_hop: None,
    }
}

fn kinds(v: &WalletView) -> Vec<(&'static str, Severity)> {
    let xray = engine::analyze(v, &labels());
    assert_eq!(xray.check(), Ok(()));
    xray.signals.iter().map(|s| (s.kind, s.severity)).collect()
}

#[test]
fn flagged_first_funder() {
    let fund = |n, slot, from| {
        tx(n, slot, &[from], InstructionKind::SystemTransfer { from: key(from), to: key(WALLET), lamports: 5_000_000 })
    };
    // Newest first: a later gift from a clean address, the first funding from the flagged one.
    let v = view(vec![fund(2, 20, 7), fund(1, 10, FLAGGED)], vec![]);
    let found = kinds(&v);
    assert!(found.contains(&("flagged_funder", Severity::High)), "{found:?}");
    // With the history cut, the first funder is unknown: no signal, rather than a guess.
    let mut cut = v.clone();
    cut.coverage.history_truncated = true;
    assert!(!kinds(&cut).iter().any(|k| k.0 == "flagged_funder"));
}

#[test]
fn foreign_close_authority_and_frozen_account() {
    let mut closable = token_account(20);
    closable.close_authority = Some(key(7));
    let mut frozen = token_account(21);
    frozen.state = TokenAccountState::Frozen;
    let found = kinds(&view(vec![], vec![closable, frozen]));
    assert!(found.contains(&("foreign_close_authority", Severity::Medium)), "{found:?}");
    assert!(found.contains(&("frozen_token_account", Severity::Medium)), "{found:?}");
}

#[test]
fn flagged_delegate_is_critical_and_partial_approval_medium() {
    let mut flagged = token_account(20);
    (flagged.delegate, flagged.delegated_amount) = (Some(key(FLAGGED)), 10);
    let mut partial = token_account(21);
    (partial.delegate, partial.delegated_amount) = (Some(key(7)), 10);
    let found = kinds(&view(vec![], vec![flagged, partial]));
    assert_eq!(
        found.iter().filter(|k| k.0 == "open_token_delegation").map(|k| k.1).collect::<Vec<_>>(),
        [Severity::Critical, Severity::Medium]
    );
}

#[test]
fn missing_transactions_lower_confidence_without_inventing_findings() {
    let mut v = view(vec![], vec![]);
    v.coverage.transactions_missing = 3;
    let xray = engine::analyze(&v, &labels());
    assert_eq!(
        xray.signals.iter().map(|s| (s.kind, s.severity)).collect::<Vec<_>>(),
        [("missing_transactions", Severity::Info)]
    );
    assert_eq!(xray.score.value, 100);
    assert!(!xray.coverage.history_complete);
}

#[test]
fn ledger_amounts_at_their_extremes_saturate_instead_of_wrapping() {
    let empty = |address| TokenAccount { amount: 0, lamports: u64::MAX, ..token_account(address) };
    let mut v = view(vec![], vec![empty(4), empty(5)]);
    v.coverage.as_of_slot = u64::MAX;
    let xray = engine::analyze(&v, &labels());
    assert_eq!(xray.check(), Ok(()));
    let rent = xray.signals.iter().find(|s| s.kind == "rent_locked_empty_accounts").expect("rent signal");
    let facts = serde_json::to_value(&rent.facts).unwrap();
    assert_eq!(facts["reclaimableLamports"], serde_json::json!(u64::MAX), "saturated, not wrapped: {facts}");
}

/// Found by the `engine` fuzz target: block times a node sends at the ends of `i64` (the view
/// keeps them as given) made the gaps between them wrap — a wallet silent for ~292 billion
/// years read as "new" and not as dormant. Differences of block times now saturate.
#[test]
fn block_times_at_the_ends_of_i64_saturate_instead_of_wrapping() {
    let mut ancient = tx(1, 1, &[WALLET], InstructionKind::Raw { data: String::new() });
    ancient.block_time = Some(i64::MIN + 10);
    let recent = tx(2, 2, &[WALLET], InstructionKind::Raw { data: String::new() });
    let found = kinds(&view(vec![recent, ancient], vec![])); // newest first, as views are
    let names: Vec<&str> = found.iter().map(|(kind, _)| *kind).collect();
    assert!(names.contains(&"dormant_reactivated"), "a saturated gap is the longest silence: {names:?}");
    assert!(!names.contains(&"new_wallet"), "a saturated age is not new: {names:?}");
}

/// Issue #16: a sanctioned address (labels of category `sanctioned`, as `xray labels import`
/// writes them from the OFAC SDN list) is one critical signal per address, naming every role
/// it plays — here first funder, counterparty of a transfer, delegate — and the list.
#[test]
fn a_sanctioned_address_is_critical_in_every_role_and_names_its_list() {
    const SANCTIONED: u8 = 8;
    let labels = Labels::from_toml(&format!(
        "version = 1\n[[label]]\naddress = \"{}\"\nname = \"LISTED GROUP (SDN entry 1001)\"\ncategory = \"sanctioned\"\n\
         tags = [\"ofac\", \"CYBER2\"]\nsource = \"OFAC SDN 2026-11-20\"\n",
        key(SANCTIONED)
    ))
    .unwrap();
    let transfer = |n, slot, from, to| {
        tx(n, slot, &[from], InstructionKind::SystemTransfer { from: key(from), to: key(to), lamports: 5_000_000 })
    };
    let mut delegated = token_account(20);
    (delegated.delegate, delegated.delegated_amount) = (Some(key(SANCTIONED)), 10);
    // Newest first: a payment to the sanctioned address, then the first funding from it.
    let v = view(vec![transfer(2, 20, WALLET, SANCTIONED), transfer(1, 10, SANCTIONED, WALLET)], vec![delegated]);
    let xray = engine::analyze(&v, &labels);
    let found: Vec<_> = xray.signals.iter().filter(|s| s.kind == "sanctioned_counterparty").collect();
    assert_eq!(found.len(), 1, "one signal per address: {:?}", xray.signals);
    let signal = found[0];
    assert_eq!(signal.severity, Severity::Critical);
    let facts = serde_json::to_value(&signal.facts).unwrap();
    assert_eq!(facts["roles"], "delegate,funder,transfer", "{facts}");
    assert_eq!(facts["list"], "OFAC SDN 2026-11-20");
    assert_eq!(facts["counterparty"], key(SANCTIONED).to_string());
    assert!(signal.title.contains("LISTED GROUP"), "{}", signal.title);
    assert!(signal.evidence_ids.len() >= 3, "each role cited: {:?}", signal.evidence_ids);
    xray.check().expect("evidence cited exists");
    // A sanctioned address is never a hub, and the same address merely flagged is not sanctioned.
    assert!(!labels.is_hub(&key(SANCTIONED)));
    assert!(!kinds(&v).iter().any(|k| k.0 == "sanctioned_counterparty"), "not with the default test labels");
}

/// A held Token-2022 mint (key 50, the test token accounts' mint) with `extensions`.
fn mint(mint_authority: Option<u8>, freeze_authority: Option<u8>, extensions: Vec<MintExtension>) -> MintInfo {
    MintInfo {
        address: key(50),
        program: TokenProgram::Token2022,
        decimals: 6,
        supply: 1_000_000,
        mint_authority: mint_authority.map(key),
        freeze_authority: freeze_authority.map(key),
        extensions,
    }
}

fn mint_kinds(m: MintInfo, labels: &Labels) -> Vec<(&'static str, Severity)> {
    let mut v = view(vec![], vec![token_account(20)]);
    v.mints = vec![m];
    let xray = engine::analyze(&v, labels);
    assert_eq!(xray.check(), Ok(()));
    let mut found: Vec<_> =
        xray.signals.iter().map(|s| (s.kind, s.severity)).filter(|k| k.0.ends_with("_mint")).collect();
    found.sort_by_key(|k| k.0);
    found
}

#[test]
fn mint_risks_follow_the_extension_its_size_and_who_holds_the_authority() {
    let fee =
        |basis_points| MintExtension::TransferFeeConfig { basis_points, maximum_fee: 10, authority: Some(key(7)) };
    assert_eq!(mint_kinds(mint(None, None, vec![fee(100)]), &labels()), [("transfer_fee_mint", Severity::Low)]);
    assert_eq!(mint_kinds(mint(None, None, vec![fee(500)]), &labels()), [("transfer_fee_mint", Severity::Medium)]);
    assert_eq!(mint_kinds(mint(None, None, vec![fee(0)]), &labels()), [], "a zero fee is not raised");
    let closer = |k| MintExtension::MintCloseAuthority { close_authority: Some(key(k)) };
    assert_eq!(mint_kinds(mint(None, None, vec![closer(7)]), &labels()), [("close_authority_mint", Severity::Low)]);
    assert_eq!(
        mint_kinds(mint(None, None, vec![closer(FLAGGED)]), &labels()),
        [("close_authority_mint", Severity::High)]
    );
    let none = MintExtension::MintCloseAuthority { close_authority: None };
    assert_eq!(mint_kinds(mint(None, None, vec![none]), &labels()), []);
    let soulbound = mint_kinds(mint(None, None, vec![MintExtension::NonTransferable]), &labels());
    assert_eq!(soulbound, [("non_transferable_mint", Severity::Low)]);
    let frozen = MintExtension::DefaultAccountState { state: "frozen".into() };
    assert_eq!(
        mint_kinds(mint(None, Some(7), vec![frozen]), &labels()),
        [("default_frozen_mint", Severity::Low), ("freeze_authority_mint", Severity::Low)]
    );
    let open = MintExtension::DefaultAccountState { state: "initialized".into() };
    assert_eq!(mint_kinds(mint(None, None, vec![open]), &labels()), []);
}

#[test]
fn supply_mintable_by_an_unknown_authority_is_raised_unless_a_label_explains_it() {
    assert_eq!(mint_kinds(mint(Some(7), None, vec![]), &labels()), [("mintable_supply_mint", Severity::Low)]);
    assert_eq!(mint_kinds(mint(Some(FLAGGED), None, vec![]), &labels()), [("mintable_supply_mint", Severity::High)]);
    let entity = |address: Pubkey, category: &str| {
        Labels::from_toml(&format!(
            "version = 1\n[[label]]\naddress = \"{address}\"\nname = \"known\"\ncategory = \"{category}\"\n",
        ))
        .unwrap()
    };
    // A labelled issuer or a labelled mint mints by policy.
    assert_eq!(mint_kinds(mint(Some(7), None, vec![]), &entity(key(7), "entity")), []);
    assert_eq!(mint_kinds(mint(Some(7), None, vec![]), &entity(key(50), "mint")), []);
}

/// Every signer of a signal's fix instructions, with the instructions' programs and data.
fn fixes_of(v: &WalletView, kind: &str) -> Vec<(String, Vec<String>, String)> {
    let xray = engine::analyze(v, &labels());
    let signal = xray.signals.iter().find(|s| s.kind == kind).unwrap_or_else(|| panic!("no {kind}"));
    signal
        .fix_instructions
        .iter()
        .map(|f| {
            let signers = f.accounts.iter().filter(|a| a.is_signer).map(|a| a.pubkey.clone()).collect();
            (f.program_id.clone(), signers, f.data.clone())
        })
        .collect()
}

#[test]
fn a_stake_whose_withdrawer_is_the_wallet_is_fixed_by_taking_the_staker_back() {
    let mut v = view(vec![], vec![]);
    let stake = StakeAccount {
        address: key(60),
        staker: key(61),
        withdrawer: key(WALLET),
        custodian: None,
        lamports: 5_000_000_000,
        voter: None,
    };
    v.stake_accounts = vec![stake.clone()];
    let fixes = fixes_of(&v, "foreign_stake_authority");
    assert_eq!(fixes.len(), 1);
    let (program, signers, data) = &fixes[0];
    assert_eq!(program, "Stake11111111111111111111111111111111111111");
    assert_eq!(signers, &vec![key(WALLET).to_string()]);
    // Authorize (1), the new authority (the wallet), StakeAuthorize::Staker (0).
    let bytes = bs58::decode(data).into_vec().unwrap();
    assert_eq!((&bytes[..4], &bytes[4..36], &bytes[36..]), (&[1, 0, 0, 0][..], &key(WALLET).0[..], &[0, 0, 0, 0][..]));

    // A foreign withdrawer leaves the wallet nothing to sign: no fix on the signal, and the
    // stake-theft path says why.
    v.stake_accounts = vec![StakeAccount { withdrawer: key(62), ..stake }];
    let xray = engine::analyze(&v, &labels());
    assert!(xray.signals.iter().all(|s| s.fix_instructions.is_empty()));
    let path = xray.attack_paths.iter().find(|p| p.kind == "stake_theft").unwrap();
    assert!(path.fix_instructions.is_empty());
    assert!(path.fix_note.as_deref().is_some_and(|n| n.contains(&key(62).to_string())));
}

#[test]
fn only_empty_accounts_the_wallet_alone_can_close_get_a_close_instruction() {
    let empty = |address: u8| TokenAccount { amount: 0, ..token_account(address) };
    let frozen = TokenAccount { state: TokenAccountState::Frozen, ..empty(21) };
    let foreign_closer = TokenAccount { close_authority: Some(key(70)), ..empty(22) };
    let withheld_fees =
        TokenAccount { program: TokenProgram::Token2022, extensions: vec!["transferFeeAmount".into()], ..empty(23) };
    let t22 = TokenAccount { program: TokenProgram::Token2022, ..empty(24) };
    let v = view(vec![], vec![empty(20), frozen, foreign_closer, withheld_fees, t22]);
    let fixes = fixes_of(&v, "rent_locked_empty_accounts");
    let programs: Vec<&str> = fixes.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(
        programs,
        ["TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"]
    );
    for (_, signers, data) in &fixes {
        assert_eq!((signers.as_slice(), data.as_str()), ([key(WALLET).to_string()].as_slice(), "A"));
        // [9]
    }
}

#[test]
fn a_past_sweep_is_drawn_at_the_accounts_thresholds() {
    use xray::engine::policy::{default_weights_hundredths, Policy, PolicyRef};
    use xray::engine::sweep::SweepThresholds;
    // The wallet signed a transfer of 80 % of its SOL (net of the fee) to an address it never
    // dealt with.
    let lamports = 8_000_000_000;
    let kind = InstructionKind::SystemTransfer { from: key(WALLET), to: key(7), lamports };
    let mut sent = tx(1, 10, &[WALLET], kind);
    sent.sol_changes = vec![
        SolChange { account: key(WALLET), pre: 10_000_000_000, post: 10_000_000_000 - lamports - 5_000 },
        SolChange { account: key(7), pre: 0, post: lamports },
    ];
    let v = view(vec![sent], vec![]);
    let swept = |policy: &Policy| {
        let xray = engine::analyze_with(&v, &labels(), policy);
        xray.signals.into_iter().find(|s| s.kind == "wallet_swept")
    };
    assert!(swept(&Policy::default_policy()).is_none(), "below the default 90 %");
    let reference = PolicyRef { id: "pol_sweeps".into(), version: 1 };
    let lower = Policy::new(reference, &std::collections::BTreeMap::new(), default_weights_hundredths(), &[], &[])
        .and_then(|p| p.with_sweep_thresholds(SweepThresholds { sol_share_percent: 75, ..SweepThresholds::DEFAULT }))
        .unwrap();
    let signal = swept(&lower).expect("a sweep at the account's 75 %");
    let facts = serde_json::to_value(&signal.facts).unwrap();
    assert_eq!((facts["solSharePercent"].as_u64(), facts["to"].as_str()), (Some(80), Some(&*key(7).to_string())));
}
