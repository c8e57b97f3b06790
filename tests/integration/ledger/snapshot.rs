//! The snapshot source over real files in temp dirs: what a `SnapshotWriter` writes,
//! `SnapshotSource` answers; pagination, missing files, refused names and files, manifest
//! versions; and a recording round trip through `build_view`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use simd_json::json;
use xray::devtools::recorder::{self, Recording, SnapshotWriter};
use xray::jobs::execute::add_funder_hop;
use xray::ledger::instruction::ids;
use xray::ledger::model::{NonceSearch, TokenProgram};
use xray::ledger::read::LedgerSource;
use xray::ledger::snapshot::{entry_path, Entry, SnapshotSource};
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{
    self, KeyedAccount, ParsedAccountData, ParsedInstruction, RpcContext, SignatureInfo, TransactionResult, UiAccount,
    UiAccountData, UiInstruction, UiMessage, Value, WithContext,
};
use xray::ledger::{LedgerError, WalletView};
use xray::pubkey::{Pubkey, Signature};

const FIXTURE_TX: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/solana-rpc/solders-getTransaction-jsonParsed.json");
const FIXTURE_SIGNATURE: &str =
    "4zExa66hUSr28i2ma6EJwEsm3nZo4VFryEyRYE5Zrr4Q6dZpP1ctzsoMqUhLnp6iHGPp5MB722rZXRBKg927WXN9";
/// Just above the fixture transaction's slot (147558327).
const SLOT: u64 = 147_558_400;

fn key(n: u8) -> Pubkey {
    Pubkey::new([n; 32])
}

fn sig(n: u16) -> Signature {
    let mut bytes = [7u8; 64];
    bytes[..2].copy_from_slice(&n.to_le_bytes());
    Signature(bytes)
}

fn ctx<T>(slot: u64, value: T) -> WithContext<T> {
    WithContext { context: RpcContext { slot }, value }
}

fn fixture_tx() -> TransactionResult {
    let mut bytes = std::fs::read(FIXTURE_TX).unwrap();
    wire::parse_response::<TransactionResult>(&mut bytes).unwrap().into_result().unwrap().unwrap()
}

/// The fixture transaction re-signed as `signature` at `slot`.
fn tx_as(signature: &Signature, slot: u64) -> TransactionResult {
    let mut tx = fixture_tx();
    tx.tx.transaction.signatures[0] = signature.to_base58();
    tx.slot = slot;
    tx
}

fn info(signature: &Signature, slot: u64) -> SignatureInfo {
    SignatureInfo {
        signature: signature.to_base58(),
        slot,
        err: None,
        memo: None,
        block_time: Some(1_661_417_105),
        confirmation_status: Some("finalized".into()),
    }
}

fn parsed_account(owner: &str, lamports: u64, program: &str, parsed: Value, space: u64) -> UiAccount {
    UiAccount {
        lamports,
        owner: owner.into(),
        data: UiAccountData::Parsed(ParsedAccountData { program: program.into(), parsed, space }),
        executable: false,
        rent_epoch: u64::MAX,
        space: Some(space),
    }
}

fn wallet_account(lamports: u64) -> UiAccount {
    through_wire(UiAccount {
        lamports,
        owner: ids::SYSTEM.into(),
        data: UiAccountData::Binary(vec![String::new(), "base64".into()]),
        executable: false,
        rent_epoch: u64::MAX,
        space: Some(0),
    })
}

/// `account` as the wire parser reads it back. Until wire.rs tries `Binary` before `Parsed`
/// in `UiAccountData`, `["", "base64"]` reads back as `Parsed { program: "", parsed:
/// "base64" }` (serde lets a struct be read from an array); comparing against the parser's
/// own reading keeps these tests about the snapshot, whichever way that is settled.
fn through_wire(account: UiAccount) -> UiAccount {
    let mut bytes = wire::to_vec(&account).unwrap();
    wire::parse(&mut bytes).unwrap()
}

/// A jsonParsed token account of `owner` for `mint`, optionally with an open delegation.
fn token_account(program: TokenProgram, owner: &Pubkey, mint: &Pubkey, delegate: Option<&Pubkey>) -> UiAccount {
    let amount = json!({"amount": "5000000", "decimals": 6, "uiAmount": 5.0, "uiAmountString": "5"});
    let (mint, owner) = (mint.to_base58(), owner.to_base58());
    let info = match delegate {
        None => json!({"mint": mint, "owner": owner, "tokenAmount": amount, "state": "initialized", "isNative": false}),
        Some(d) => json!({"mint": mint, "owner": owner, "tokenAmount": amount.clone(), "state": "initialized",
            "isNative": false, "delegate": d.to_base58(), "delegatedAmount": amount}),
    };
    let name = if program == TokenProgram::Token { "spl-token" } else { "spl-token-2022" };
    parsed_account(program.id(), 2_039_280, name, json!({"type": "account", "info": info}), 165)
}

fn mint_account(authority: &Pubkey) -> UiAccount {
    let parsed = json!({"type": "mint", "info": {"decimals": 6, "supply": "1000000000",
        "mintAuthority": authority.to_base58(), "freezeAuthority": null, "isInitialized": true}});
    parsed_account(ids::TOKEN, 1_461_600, "spl-token", parsed, 82)
}

fn nonce_account(authority: &Pubkey) -> UiAccount {
    let parsed = json!({"type": "initialized", "info": {"authority": authority.to_base58(),
        "blockhash": "2NiTTzGXE7kW66iwM4FaoB7xMidgzMXZkh7k4AeagnW8",
        "feeCalculator": {"lamportsPerSignature": "5000"}}});
    parsed_account(ids::SYSTEM, 1_447_680, "nonce", parsed, 80)
}

fn keyed(address: &Pubkey, account: UiAccount) -> KeyedAccount {
    KeyedAccount { pubkey: address.to_base58(), account }
}

/// The hand-built snapshot of `written`: one wallet with an account, a delegated token
/// account, a mint, five signatures (recorded as two pages) and the fixture transaction.
struct Written {
    wallet: Pubkey,
    absent: Pubkey,
    mint: Pubkey,
    token_accounts: WithContext<Vec<KeyedAccount>>,
    signatures: Vec<SignatureInfo>,
    tx: TransactionResult,
}

fn write_snapshot(dir: &Path) -> Written {
    let (wallet, absent, mint, delegate) = (key(1), key(2), key(3), key(4));
    let token_accounts =
        ctx(SLOT + 3, vec![keyed(&key(5), token_account(TokenProgram::Token, &wallet, &mint, Some(&delegate)))]);
    let tx = fixture_tx();
    let fixture_sig = Signature::parse(FIXTURE_SIGNATURE).unwrap();
    let mut signatures = vec![info(&sig(1), SLOT + 9), info(&sig(2), SLOT + 8)];
    signatures.push(info(&fixture_sig, tx.slot));
    signatures.extend([info(&sig(4), tx.slot - 1), info(&sig(5), tx.slot - 2)]);

    let mut w = SnapshotWriter::create(dir).unwrap();
    w.record_account(&wallet, SLOT, Some(&wallet_account(5_000_000))).unwrap();
    w.record_account(&absent, SLOT + 1, None).unwrap();
    w.record_account(&mint, SLOT + 2, Some(&mint_account(&key(6)))).unwrap();
    w.record_token_accounts(&wallet, TokenProgram::Token, &token_accounts).unwrap();
    w.record_signatures(&wallet, None, &signatures[..3]).unwrap();
    w.record_signatures(&wallet, Some(&fixture_sig), &signatures[3..]).unwrap();
    w.record_transaction(&fixture_sig, &tx).unwrap();
    let report = w.finish(&[wallet], "rpc").unwrap();
    assert_eq!((report.wallets, report.accounts, report.transactions), (1, 3, 1));
    // 3 accounts, 1 token-account list, 1 signature list, 1 transaction, the manifest.
    assert_eq!(report.files, 7);
    assert_eq!(report.created_at_slot, SLOT + 9);
    Written { wallet, absent, mint, token_accounts, signatures, tx }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

#[test]
fn answers_every_call_with_what_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let w = write_snapshot(dir.path());
    let s = SnapshotSource::open(dir.path()).unwrap();
    assert_eq!(s.name(), "snapshot");
    assert_eq!(s.manifest().wallets, vec![w.wallet]);
    assert_eq!(s.manifest().source, "rpc");
    let created = s.manifest().created_at_slot;
    rt().block_on(async {
        assert_eq!(s.get_account_info(&w.wallet).await.unwrap(), ctx(SLOT, Some(wallet_account(5_000_000))));
        // A recorded absence keeps its slot; an address never recorded is absent at the
        // snapshot's slot.
        assert_eq!(s.get_account_info(&w.absent).await.unwrap(), ctx(SLOT + 1, None));
        assert_eq!(s.get_account_info(&key(99)).await.unwrap(), ctx(created, None));

        let many = s.get_multiple_accounts(&[w.mint, w.absent, w.wallet]).await.unwrap();
        assert_eq!(many, ctx(SLOT + 2, vec![Some(mint_account(&key(6))), None, Some(wallet_account(5_000_000))]));
        let with_unknown = s.get_multiple_accounts(&[w.mint, key(99)]).await.unwrap();
        assert_eq!(with_unknown, ctx(created, vec![Some(mint_account(&key(6))), None]));
        let too_many = vec![w.mint; 101];
        assert!(matches!(s.get_multiple_accounts(&too_many).await, Err(LedgerError::Invalid(_))));

        let classic = s.get_token_accounts_by_owner(&w.wallet, TokenProgram::Token).await.unwrap();
        assert_eq!(classic, w.token_accounts);
        let t22 = s.get_token_accounts_by_owner(&w.wallet, TokenProgram::Token2022).await.unwrap();
        assert_eq!(t22, ctx(created, vec![]));

        assert_eq!(s.get_signatures_for_address(&w.wallet, None, 1000).await.unwrap(), w.signatures);
        assert!(s.get_signatures_for_address(&key(99), None, 1000).await.unwrap().is_empty());

        let fixture_sig = Signature::parse(FIXTURE_SIGNATURE).unwrap();
        let txs = s.get_transactions(&[fixture_sig, sig(1)]).await.unwrap();
        assert_eq!(txs, vec![Some(w.tx.clone()), None]);
    });
    // The files are JSON-RPC response bodies.
    let text =
        std::fs::read_to_string(dir.path().join("transactions").join(format!("{FIXTURE_SIGNATURE}.json"))).unwrap();
    assert!(text.starts_with(r#"{"jsonrpc":"2.0","id":"getTransaction","result":{"#), "{text}");
}

#[test]
fn pages_signatures_with_before_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let w = write_snapshot(dir.path());
    let s = SnapshotSource::open(dir.path()).unwrap();
    let all = &w.signatures;
    let sig_at = |i: usize| Signature::parse(&all[i].signature).unwrap();
    rt().block_on(async {
        let page = |before: Option<Signature>, limit: u32| {
            let s = &s;
            async move { s.get_signatures_for_address(&w.wallet, before.as_ref(), limit).await }
        };
        assert_eq!(page(None, 2).await.unwrap(), all[..2]);
        assert_eq!(page(Some(sig_at(1)), 2).await.unwrap(), all[2..4]);
        assert_eq!(page(Some(sig_at(3)), 1000).await.unwrap(), all[4..]);
        assert!(page(Some(sig_at(4)), 1000).await.unwrap().is_empty());
        // A signature the list does not hold: an empty page, as a node answers.
        assert!(page(Some(sig(77)), 1000).await.unwrap().is_empty());
        assert!(matches!(page(None, 0).await, Err(LedgerError::Invalid(_))));
        assert!(matches!(page(None, 1001).await, Err(LedgerError::Invalid(_))));
    });
}

#[test]
fn replays_a_file_exactly_as_the_node_sent_it() {
    let dir = tempfile::tempdir().unwrap();
    SnapshotWriter::create(dir.path()).unwrap().finish(&[], "rpc").unwrap();
    // The fixture, byte for byte: pretty-printed, `id` 1, fields the wire types do not keep.
    std::fs::copy(FIXTURE_TX, dir.path().join("transactions").join(format!("{FIXTURE_SIGNATURE}.json"))).unwrap();
    let s = SnapshotSource::open(dir.path()).unwrap();
    let txs = rt().block_on(s.get_transactions(&[Signature::parse(FIXTURE_SIGNATURE).unwrap()])).unwrap();
    assert_eq!(txs, vec![Some(fixture_tx())]);
}

#[test]
fn refuses_names_and_files_outside_the_layout() {
    for bad in ["../manifest", "..", "a/../../etc/passwd", "/etc/passwd", ".x", "", "abc\u{0}"] {
        for entry in [Entry::Account, Entry::Signatures, Entry::Transaction, Entry::TokenAccounts(TokenProgram::Token)]
        {
            assert!(matches!(entry_path(entry, bad), Err(LedgerError::Invalid(_))), "{bad:?}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let w = write_snapshot(dir.path());
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("secret.json");
    std::fs::copy(dir.path().join("accounts").join(format!("{}.json", w.wallet)), &target).unwrap();

    // A symlinked entry file is refused, not followed.
    let link = dir.path().join("accounts").join(format!("{}.json", key(42)));
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let s = SnapshotSource::open(dir.path()).unwrap();
    let e = rt().block_on(s.get_account_info(&key(42))).unwrap_err();
    assert!(matches!(&e, LedgerError::Invalid(m) if m.contains("not a regular file")), "{e}");

    // So is a symlinked kind directory.
    std::fs::remove_dir_all(dir.path().join("signatures")).unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("signatures")).unwrap();
    assert!(matches!(SnapshotSource::open(dir.path()), Err(LedgerError::Invalid(_))));
}

#[test]
fn corrupt_files_are_malformed_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let w = write_snapshot(dir.path());
    let s = SnapshotSource::open(dir.path()).unwrap();
    let account_rel = format!("accounts/{}.json", w.wallet);
    let signatures_rel = format!("signatures/{}.json", w.wallet);
    let rt = rt();

    std::fs::write(dir.path().join(&account_rel), b"{not json").unwrap();
    let e = rt.block_on(s.get_account_info(&w.wallet)).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(m) if m.contains(&account_rel)), "{e}");

    // Valid JSON of the wrong shape, and a null result where a node always sends one.
    std::fs::write(dir.path().join(&signatures_rel), br#"{"jsonrpc":"2.0","id":1,"result":{"x":1}}"#).unwrap();
    let e = rt.block_on(s.get_signatures_for_address(&w.wallet, None, 10)).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(m) if m.contains(&signatures_rel)), "{e}");
    std::fs::write(dir.path().join(&account_rel), br#"{"jsonrpc":"2.0","id":1,"result":null}"#).unwrap();
    let e = rt.block_on(s.get_account_info(&w.wallet)).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(m) if m.contains(&account_rel)), "{e}");

    // A recorded error object is replayed as that error.
    let unhealthy = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"Node is behind"}}"#;
    std::fs::write(dir.path().join(&account_rel), unhealthy).unwrap();
    assert!(matches!(rt.block_on(s.get_account_info(&w.wallet)), Err(LedgerError::Unavailable(_))));

    // A transaction file holding another transaction than its name says.
    let tx_rel = format!("transactions/{}.json", sig(1));
    std::fs::copy(FIXTURE_TX, dir.path().join(&tx_rel)).unwrap();
    let e = rt.block_on(s.get_transactions(&[sig(1)])).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(m) if m.contains(&tx_rel)), "{e}");

    // Nested 200,000 deep in the account's data (this aborted the process with a stack
    // overflow before the depth check): refused as malformed, the whole view too.
    let deep = 200_000;
    let nested = format!(
        r#"{{"jsonrpc":"2.0","id":1,"result":{{"context":{{"slot":1}},"value":{{"lamports":1,"owner":"11111111111111111111111111111111","executable":false,"rentEpoch":0,"data":{}{}}}}}}}"#,
        "[".repeat(deep),
        "]".repeat(deep)
    );
    std::fs::write(dir.path().join(&account_rel), nested).unwrap();
    let e = rt.block_on(s.get_account_info(&w.wallet)).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(m) if m.contains(&account_rel) && m.contains("nested deeper")), "{e}");
    let e = rt.block_on(build_view(&s, &w.wallet, ViewOptions::default())).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(_)), "{e}");

    // Over the size limit (a sparse file: no bytes are written or read).
    let big = std::fs::File::create(dir.path().join(&account_rel)).unwrap();
    big.set_len(xray::config::LEDGER_FILE_BYTES_MAX + 1).unwrap();
    let e = rt.block_on(s.get_account_info(&w.wallet)).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(m) if m.contains(&account_rel) && m.contains("bytes")), "{e}");
}

#[test]
fn manifest_is_checked_at_open() {
    let dir = tempfile::tempdir().unwrap();
    // No manifest: not a snapshot, or a recording that did not finish.
    let e = SnapshotSource::open(dir.path()).unwrap_err();
    assert!(matches!(&e, LedgerError::Invalid(m) if m.contains("manifest.json")), "{e}");
    let manifest = dir.path().join("manifest.json");
    let write = |text: &str| std::fs::write(&manifest, text).unwrap();

    write(r#"{"format":"xray-snapshot","version":2,"source":"rpc","createdAtSlot":1,"wallets":[],"new":{}}"#);
    let e = SnapshotSource::open(dir.path()).unwrap_err();
    assert!(matches!(&e, LedgerError::Invalid(m) if m.contains("version")), "{e}");
    write(r#"{"format":"other","version":1,"source":"rpc","createdAtSlot":1,"wallets":[]}"#);
    assert!(matches!(SnapshotSource::open(dir.path()), Err(LedgerError::Invalid(_))));
    write(r#"{"version":1}"#);
    assert!(matches!(SnapshotSource::open(dir.path()), Err(LedgerError::Invalid(_))));

    write("{");
    let e = SnapshotSource::open(dir.path()).unwrap_err();
    assert!(matches!(&e, LedgerError::Malformed(m) if m.contains("manifest.json")), "{e}");
    write(r#"{"format":"xray-snapshot","version":1,"source":"rpc","createdAtSlot":1,"wallets":["../x"]}"#);
    assert!(matches!(SnapshotSource::open(dir.path()), Err(LedgerError::Malformed(_))));

    write(r#"{"format":"xray-snapshot","version":1,"source":"rpc","createdAtSlot":7,"wallets":[]}"#);
    let s = SnapshotSource::open(dir.path()).unwrap();
    assert_eq!(s.manifest().created_at_slot, 7);
    assert_eq!(rt().block_on(s.get_account_info(&key(1))).unwrap(), ctx(7, None));
}

/// A node in memory: enough of the ledger for `build_view` to use every method.
#[derive(Default)]
struct FakeNode {
    accounts: BTreeMap<Pubkey, UiAccount>,
    token_accounts: BTreeMap<(Pubkey, TokenProgram), Vec<KeyedAccount>>,
    nonces_by_authority: BTreeMap<Pubkey, Vec<KeyedAccount>>,
    /// Refuse the nonce search, as many nodes do.
    refuses_nonce_search: bool,
    /// A wallet whose history the node never answers (a recording that fails midway).
    history_unavailable: Option<Pubkey>,
    signatures: BTreeMap<Pubkey, Vec<SignatureInfo>>,
    transactions: HashMap<Signature, TransactionResult>,
}

impl LedgerSource for FakeNode {
    fn name(&self) -> &'static str {
        "rpc"
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        Ok(ctx(SLOT, self.accounts.get(address).cloned()))
    }

    async fn get_multiple_accounts(&self, a: &[Pubkey]) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        Ok(ctx(SLOT + 2, a.iter().map(|k| self.accounts.get(k).cloned()).collect()))
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        Ok(ctx(SLOT + 1, self.token_accounts.get(&(*owner, program)).cloned().unwrap_or_default()))
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        if self.refuses_nonce_search {
            return Err(LedgerError::Rpc { code: -32010, message: "excluded from account secondary indexes".into() });
        }
        Ok(ctx(SLOT + 1, self.nonces_by_authority.get(authority).cloned().unwrap_or_default()))
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        if self.history_unavailable == Some(*address) {
            return Err(LedgerError::Unavailable("the node stopped answering".into()));
        }
        let all = self.signatures.get(address).map(Vec::as_slice).unwrap_or(&[]);
        let start = match before {
            None => 0,
            Some(b) => all.iter().position(|i| i.signature == b.to_base58()).map_or(all.len(), |i| i + 1),
        };
        Ok(all[start..].iter().take(limit as usize).cloned().collect())
    }

    async fn get_transactions(&self, s: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        Ok(s.iter().map(|s| self.transactions.get(s).cloned()).collect())
    }
}

const HISTORY_LEN: u16 = 1_005;

/// Wallet `key(1)`: an account, a delegated classic token account, a Token-2022 account whose
/// mint the node lacks, 1,005 signatures (every 100th transaction missing), the newest of
/// which advances a nonce account; the nonce search also finds a second nonce account naming it
/// that its history does not (`key(15)`, with no history of its own). Wallet `key(2)` shares a
/// mint and one transaction. Wallet `key(3)` does not exist.
fn fake_node() -> FakeNode {
    let (a, b, mint, mint22, nonce) = (key(1), key(2), key(10), key(11), key(12));
    let mut node = FakeNode::default();
    node.accounts.insert(a, wallet_account(7_000_000));
    node.accounts.insert(b, wallet_account(1));
    node.accounts.insert(mint, mint_account(&key(13)));
    node.accounts.insert(nonce, nonce_account(&a));
    let planted = key(15);
    node.nonces_by_authority.insert(a, vec![keyed(&nonce, nonce_account(&a)), keyed(&planted, nonce_account(&a))]);
    let ta = keyed(&key(20), token_account(TokenProgram::Token, &a, &mint, Some(&key(14))));
    let ta22 = keyed(&key(21), token_account(TokenProgram::Token2022, &a, &mint22, None));
    node.token_accounts.insert((a, TokenProgram::Token), vec![ta]);
    node.token_accounts.insert((a, TokenProgram::Token2022), vec![ta22]);
    node.token_accounts
        .insert((b, TokenProgram::Token), vec![keyed(&key(22), token_account(TokenProgram::Token, &b, &mint, None))]);

    let history: Vec<SignatureInfo> = (0..HISTORY_LEN).map(|i| info(&sig(i), SLOT - u64::from(i))).collect();
    for (i, entry) in history.iter().enumerate() {
        if i % 100 != 99 {
            let s = Signature::parse(&entry.signature).unwrap();
            node.transactions.insert(s, tx_as(&s, entry.slot));
        }
    }
    let newest = node.transactions.get_mut(&sig(0)).unwrap();
    let UiMessage::Parsed(message) = &mut newest.tx.transaction.message else { panic!("fixture is jsonParsed") };
    message.instructions.push(UiInstruction::Parsed(ParsedInstruction {
        program: "system".into(),
        program_id: ids::SYSTEM.into(),
        parsed: json!({"type": "advanceNonce", "info": {"nonceAccount": nonce.to_base58(),
            "recentBlockhashesSysvar": "SysvarRecentB1ockHashes11111111111111111111", "nonceAuthority": a.to_base58()}}),
        stack_height: None,
    }));
    node.signatures.insert(b, vec![info(&sig(5000), SLOT + 5), history[3].clone(), info(&sig(5001), 1)]);
    node.transactions.insert(sig(5000), tx_as(&sig(5000), SLOT + 5));
    node.signatures.insert(a, history);
    node
}

async fn view<S: LedgerSource>(source: &S, wallet: &Pubkey, history_depth: u32) -> WalletView {
    build_view(source, wallet, ViewOptions::deep(history_depth)).await.unwrap()
}

fn same_but_source(mut replayed: WalletView, original: &WalletView) {
    assert_eq!(replayed.coverage.source, "snapshot");
    replayed.coverage.source = original.coverage.source.clone();
    if let (Some(hop), Some(original_hop)) = (replayed.funder_hop.as_deref_mut(), original.funder_hop.as_deref()) {
        assert_eq!(hop.coverage.source, "snapshot");
        hop.coverage.source = original_hop.coverage.source.clone();
    }
    assert_eq!(&replayed, original);
}

#[test]
fn recording_round_trips_through_build_view() {
    let node = fake_node();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap");
    let depth = 1_003;
    let rt = rt();
    let wallets = [key(1), key(2), key(3), key(1)];
    let report = rt.block_on(recorder::record(&node, &wallets, &out, depth)).unwrap();
    assert_eq!(report.wallets, 3);
    assert_eq!(report.source, "rpc");
    // 1,003 of wallet 1's signatures were read, 10 of them without a transaction; wallet 2
    // adds one transaction of its own and misses one.
    assert_eq!(report.transactions, 1_003 - 10 + 1);
    let snap = SnapshotSource::open(&out).unwrap();
    assert_eq!(snap.manifest().wallets, vec![key(1), key(2), key(3)]);
    assert_eq!(snap.manifest().history_depth, Some(depth));

    rt.block_on(async {
        for wallet in [key(1), key(2), key(3)] {
            for d in [depth, 10] {
                same_but_source(view(&snap, &wallet, d).await, &view(&node, &wallet, d).await);
            }
        }
        let a = view(&node, &key(1), depth).await;
        // The view exercised every method: pages, related accounts, mints, missing items.
        assert!(a.coverage.history_truncated);
        assert_eq!((a.transactions.len(), a.coverage.transactions_missing), (993, 10));
        assert_eq!((a.nonce_accounts.len(), a.mints.len(), a.token_accounts.len()), (1, 1, 2));
        // Both nonces name the wallet and its history shows it creating neither (key(12) is only
        // advanced in it); neither has a history of its own here, so their creators are unknown.
        let outsiders: Vec<Pubkey> = a.outsider_nonces.iter().map(|n| n.account.address).collect();
        assert_eq!((outsiders, a.coverage.outsider_nonces_found), (vec![key(12), key(15)], 2));
        assert!(a.outsider_nonces.iter().all(|n| n.creation.is_none()));
        assert!(a.token_accounts.iter().any(|t| t.delegate == Some(key(14))));
        assert_eq!(a.coverage.as_of_slot, SLOT + 2);
    });
    // The signature list holds what was read (depth + 1 to learn about truncation), once.
    let all = rt.block_on(snap.get_signatures_for_address(&key(1), None, 1000)).unwrap();
    let last = Signature::parse(&all[999].signature).unwrap();
    let rest = rt.block_on(snap.get_signatures_for_address(&key(1), Some(&last), 1000)).unwrap();
    assert_eq!(all.len() + rest.len(), 1_004);
}

#[test]
fn recording_wrapper_answers_as_the_inner_source() {
    let node = fake_node();
    let dir = tempfile::tempdir().unwrap();
    let recording = Recording::new(&node, SnapshotWriter::create(dir.path()).unwrap());
    assert_eq!(recording.name(), "rpc");
    let rt = rt();
    let (direct, through) =
        rt.block_on(async { (view(&node, &key(2), 50).await, view(&recording, &key(2), 50).await) });
    assert_eq!(direct, through);
    let report = recording.finish(&[key(2)]).unwrap();
    assert_eq!(report.created_at_slot, SLOT + 5);
    assert!(report.bytes > 0);
    let snap = SnapshotSource::open(dir.path()).unwrap();
    same_but_source(rt.block_on(view(&snap, &key(2), 50)), &direct);
}

#[test]
fn export_demo_replays_as_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let seed = 7;
    let rt = rt();
    let report = rt.block_on(recorder::export_demo(seed, 2, &out)).unwrap();
    let snap = SnapshotSource::open(&out).unwrap();
    assert_eq!(snap.manifest().source, "demo");
    let demo = xray::ledger::demo::DemoLedger::new(seed);
    let wallets = recorder::demo_wallets(&demo, 2).unwrap();
    assert_eq!(snap.manifest().wallets, wallets);
    assert_eq!(report.wallets as usize, wallets.len());
    // What `xray ledger export-demo` announces before writing is the right size.
    let (bytes, files) = recorder::export_estimate(2);
    assert!(report.bytes.abs_diff(bytes) < bytes / 4, "estimated {bytes} bytes, wrote {}", report.bytes);
    assert!(u64::from(report.files).abs_diff(files) < files / 4, "estimated {files} files, wrote {}", report.files);
    // Each wallet and its first funder's hop, as a job reads them under labels that list the
    // demo mixer as sanctioned (the builtin entry is tagged `demo`: it counts on the demo
    // ledger only, and the snapshot is another source).
    let (mixer, _, _) = xray::ledger::demo::DemoLedger::sanctioned_addresses()[0];
    let toml = format!("version = 1\n[[label]]\naddress = \"{mixer}\"\nname = \"m\"\ncategory = \"sanctioned\"\n");
    let labels = xray::labels::Labels::from_toml(&toml).unwrap();
    let mut hops = 0;
    rt.block_on(async {
        for wallet in &wallets {
            let depth = xray::config::HISTORY_DEPTH_DEFAULT;
            let (mut replayed, mut original) = (view(&snap, wallet, depth).await, view(&demo, wallet, depth).await);
            add_funder_hop(&snap, &mut replayed, &labels).await;
            add_funder_hop(&demo, &mut original, &labels).await;
            hops += usize::from(original.funder_hop.as_ref().is_some_and(|h| !h.transactions.is_empty()));
            same_but_source(replayed, &original);
        }
    });
    assert!(hops > 0, "the archetypes' first funders' histories were recorded and replayed");
    // A second export into the same directory is refused rather than mixed in.
    assert!(matches!(rt.block_on(recorder::export_demo(seed, 2, &out)), Err(LedgerError::Invalid(_))));
}

/// "Replay offline" gives the X-Ray of the demo it was exported from, under the builtin labels
/// too: a snapshot `export-demo` wrote is a recording of the synthetic ledger, so the builtin
/// sanctioned entry (tagged `demo`) counts there as on the demo — `sanctioned_hop` scores the
/// same, with the same signals, either way.
#[test]
fn a_demo_snapshot_gives_the_demos_xray_under_the_builtin_labels() {
    use xray::jobs::execute::{execute, JobSpec, Outcome};
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let seed = xray::config::DEMO_SEED_DEFAULT;
    let rt = rt();
    rt.block_on(recorder::export_demo(seed, 0, &out)).unwrap();
    let snap = SnapshotSource::open(&out).unwrap();
    let demo = xray::ledger::demo::DemoLedger::new(seed);
    let labels = xray::labels::Labels::builtin();
    let xray_of = |outcome: Outcome| match outcome {
        Outcome::Ready { payload } => serde_json::from_slice::<serde_json::Value>(&payload).unwrap(),
        Outcome::Failed { code, message } => panic!("{}: {message}", code.as_str()),
    };
    for archetype in ["sanctioned_hop", "sanctioned_contact", "clean"] {
        let spec = JobSpec::Analysis { wallet: demo.archetype(archetype).unwrap() };
        let options = xray::ledger::view::ViewOptions::default();
        let (mut replayed, original) = rt.block_on(async {
            let replayed = xray_of(execute(&snap, &labels, &spec, options, &()).await);
            (replayed, xray_of(execute(&demo, &labels, &spec, options, &()).await))
        });
        assert_eq!(replayed["coverage"]["ledgerSource"], "snapshot");
        replayed["coverage"]["ledgerSource"] = original["coverage"]["ledgerSource"].clone();
        assert_eq!(replayed, original, "{archetype}: the replay's X-Ray is the demo's");
    }
}

#[test]
fn a_refused_nonce_search_is_recorded_and_replays_as_refused() {
    let node = FakeNode { refuses_nonce_search: true, ..fake_node() };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap");
    let rt = rt();
    rt.block_on(recorder::record(&node, &[key(1)], &out, 50)).unwrap();
    let snap = SnapshotSource::open(&out).unwrap();
    let (replayed, original) = rt.block_on(async { (view(&snap, &key(1), 50).await, view(&node, &key(1), 50).await) });
    assert_eq!(original.coverage.nonce_search, NonceSearch::Failed);
    same_but_source(replayed, &original);
}

/// A recording that fails midway (the second wallet's history never comes) leaves no
/// snapshot: neither the destination (new, or an empty directory that stays empty) nor the
/// hidden directory it was written in.
#[test]
fn a_failed_recording_leaves_no_partial_snapshot() {
    let node = FakeNode { history_unavailable: Some(key(2)), ..fake_node() };
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let new = dir.path().join("snap");
    let failed = rt.block_on(recorder::record(&node, &[key(1), key(2)], &new, 50));
    assert!(matches!(failed, Err(LedgerError::Unavailable(_))), "{failed:?}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "nothing left behind: {left:?}");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(rt.block_on(recorder::record(&node, &[key(2)], &empty, 50)).is_err());
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "only the empty directory");
    let report = rt.block_on(recorder::record(&node, &[key(1)], &empty, 50)).unwrap();
    assert_eq!(report.dir, empty.display().to_string(), "the report names the destination");
    assert!(SnapshotSource::open(&empty).is_ok(), "an empty directory is replaced by the snapshot");
}
