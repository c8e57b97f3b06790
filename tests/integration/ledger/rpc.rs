//! The rpc source against the local JSON-RPC server over real loopback HTTP.
//!
//! The server runs on its own thread (`spawn_in_thread`), serving either the demo ledger or
//! `Fixture`, a small in-test ledger built around a real mainnet `getTransaction` answer
//! (shared fixtures), so equality and fault tests compare non-trivial data. Every test is
//! bounded in time: backoffs are milliseconds, and faults are deterministic (see
//! `rpc_server::faults`), so no test depends on timing luck.
//!
//! Invariant: every server is stopped when its handle drops (end of each test), and every
//! time assertion has seconds of slack over what the retry arithmetic needs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use simd_json::prelude::*;
use xray::config;
use xray::config::SourceSpec;
use xray::devtools::rpc_server::{spawn_in_thread, spawn_spec_in_thread, FaultKind, FaultPlan, RunningServer};
use xray::ledger::model::TokenProgram;
use xray::ledger::read::LedgerSource;
use xray::ledger::rpc::{RpcOptions, RpcSource, NONCE_SEARCH_REFUSAL_S};
use xray::ledger::view::{build_view, ViewOptions};
use xray::ledger::wire::{
    self, KeyedAccount, ParsedAccountData, RpcContext, SignatureInfo, TransactionResult, UiAccount, UiAccountData,
    Value, WithContext,
};
use xray::ledger::{LedgerError, WalletView};
use xray::pubkey::{Pubkey, Signature};

const FIXTURE: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/solana-rpc/solders-getTransaction-jsonParsed.json");
/// Fee payer of the fixture transaction: the wallet the fixture ledger is about.
const WALLET: &str = "5p8qKVyKthA9DUb1rwQDzjcmTkaZdwN97J3LiaEywUjd";
const MINT: &str = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v";
const SLOT: u64 = 250_000_000;
/// Signatures in the wallet's history, newest first; every tenth has no transaction.
const HISTORY_LEN: u64 = 130;
const SYSTEM_PROGRAM: &str = "11111111111111111111111111111111";

/// Addresses whose `getAccountInfo` fails, one per error family.
const NOT_FOUND: Pubkey = Pubkey::new([1; 32]);
const RPC_ERROR: Pubkey = Pubkey::new([2; 32]);
const UNAVAILABLE: Pubkey = Pubkey::new([3; 32]);
const TOKEN_ACCOUNT: Pubkey = Pubkey::new([4; 32]);
const NONCE_ACCOUNT: Pubkey = Pubkey::new([5; 32]);

fn wallet() -> Pubkey {
    Pubkey::parse(WALLET).unwrap()
}

fn mint() -> Pubkey {
    Pubkey::parse(MINT).unwrap()
}

fn signature(i: u64) -> Signature {
    let mut bytes = [0xA5u8; 64];
    bytes[..8].copy_from_slice(&(i + 1).to_le_bytes());
    Signature(bytes)
}

/// A small ledger: one wallet with a SOL balance, one token account and its mint, and a
/// history of copies of the real fixture transaction.
struct Fixture {
    accounts: HashMap<Pubkey, UiAccount>,
    token_accounts: Vec<KeyedAccount>,
    /// A nonce account naming the wallet that its history does not hold.
    nonces: Vec<KeyedAccount>,
    history: Vec<SignatureInfo>,
    transactions: HashMap<Signature, TransactionResult>,
}

fn parsed_account(program: &str, lamports: u64, space: u64, parsed: Value) -> UiAccount {
    UiAccount {
        lamports,
        owner: "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA".into(),
        data: UiAccountData::Parsed(ParsedAccountData { program: program.into(), parsed, space }),
        executable: false,
        rent_epoch: u64::MAX,
        space: Some(space),
    }
}

impl Fixture {
    fn load() -> Fixture {
        let mut bytes = std::fs::read(FIXTURE).unwrap();
        let base = wire::parse_response::<TransactionResult>(&mut bytes).unwrap().into_result().unwrap().unwrap();
        let mut history = Vec::new();
        let mut transactions = HashMap::new();
        for i in 0..HISTORY_LEN {
            let sig = signature(i);
            let slot = SLOT - i;
            history.push(SignatureInfo {
                signature: sig.to_string(),
                slot,
                err: None,
                memo: None,
                block_time: Some(1_700_000_000 - i as i64),
                confirmation_status: Some("finalized".into()),
            });
            if i % 10 == 7 {
                continue;
            }
            let mut tx = base.clone();
            tx.slot = slot;
            tx.tx.transaction.signatures[0] = sig.to_string();
            transactions.insert(sig, tx);
        }
        let wallet_account = UiAccount {
            lamports: 65_966_800_251,
            owner: SYSTEM_PROGRAM.into(),
            data: UiAccountData::Binary(vec![String::new(), "base64".into()]),
            executable: false,
            rent_epoch: u64::MAX,
            space: Some(0),
        };
        let token_account = parsed_account(
            "spl-token",
            2_039_280,
            165,
            simd_json::json!({"type": "account", "info": {
                "mint": MINT, "owner": WALLET, "state": "initialized", "isNative": false,
                "tokenAmount": {"amount": "1500000", "decimals": 6, "uiAmount": 1.5, "uiAmountString": "1.5"},
                "delegate": SYSTEM_PROGRAM,
                "delegatedAmount": {"amount": "1000", "decimals": 6, "uiAmount": 0.001, "uiAmountString": "0.001"}
            }}),
        );
        let mint_account = parsed_account(
            "spl-token",
            1_461_600,
            82,
            simd_json::json!({"type": "mint", "info": {
                "decimals": 6, "supply": "5034943397135068", "isInitialized": true,
                "mintAuthority": WALLET, "freezeAuthority": null
            }}),
        );
        let accounts = HashMap::from([(wallet(), wallet_account), (mint(), mint_account)]);
        let token_accounts = vec![KeyedAccount { pubkey: TOKEN_ACCOUNT.to_string(), account: token_account }];
        let mut nonce = parsed_account(
            "nonce",
            1_447_680,
            80,
            simd_json::json!({"type": "initialized", "info": {"authority": WALLET,
                "blockhash": "2NiTTzGXE7kW66iwM4FaoB7xMidgzMXZkh7k4AeagnW8",
                "feeCalculator": {"lamportsPerSignature": "5000"}}}),
        );
        nonce.owner = SYSTEM_PROGRAM.into();
        let nonces = vec![KeyedAccount { pubkey: NONCE_ACCOUNT.to_string(), account: nonce }];
        Fixture { accounts, token_accounts, nonces, history, transactions }
    }
}

fn at_slot<T>(value: T) -> WithContext<T> {
    WithContext { context: RpcContext { slot: SLOT }, value }
}

impl LedgerSource for Fixture {
    fn name(&self) -> &'static str {
        "fixture"
    }

    async fn get_account_info(&self, address: &Pubkey) -> Result<WithContext<Option<UiAccount>>, LedgerError> {
        match *address {
            NOT_FOUND => Err(LedgerError::NotFound("no such slot".into())),
            RPC_ERROR => {
                Err(LedgerError::Rpc { code: -32010, message: "excluded from account secondary indexes".into() })
            }
            UNAVAILABLE => Err(LedgerError::Unavailable("node is behind".into())),
            _ => Ok(at_slot(self.accounts.get(address).cloned())),
        }
    }

    async fn get_multiple_accounts(
        &self,
        addresses: &[Pubkey],
    ) -> Result<WithContext<Vec<Option<UiAccount>>>, LedgerError> {
        Ok(at_slot(addresses.iter().map(|a| self.accounts.get(a).cloned()).collect()))
    }

    async fn get_token_accounts_by_owner(
        &self,
        owner: &Pubkey,
        program: TokenProgram,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        let held = *owner == wallet() && program == TokenProgram::Token;
        Ok(at_slot(if held { self.token_accounts.clone() } else { Vec::new() }))
    }

    async fn get_nonce_accounts_by_authority(
        &self,
        authority: &Pubkey,
    ) -> Result<WithContext<Vec<KeyedAccount>>, LedgerError> {
        if *authority == RPC_ERROR {
            return Err(LedgerError::Rpc { code: -32010, message: "excluded from account secondary indexes".into() });
        }
        Ok(at_slot(if *authority == wallet() { self.nonces.clone() } else { Vec::new() }))
    }

    async fn get_signatures_for_address(
        &self,
        address: &Pubkey,
        before: Option<&Signature>,
        limit: u32,
    ) -> Result<Vec<SignatureInfo>, LedgerError> {
        if *address != wallet() {
            return Ok(Vec::new());
        }
        let start = match before {
            None => 0,
            Some(b) => match self.history.iter().position(|i| i.signature == b.to_string()) {
                Some(p) => p + 1,
                None => return Ok(Vec::new()),
            },
        };
        Ok(self.history.iter().skip(start).take(limit as usize).cloned().collect())
    }

    async fn get_transactions(&self, signatures: &[Signature]) -> Result<Vec<Option<TransactionResult>>, LedgerError> {
        Ok(signatures.iter().map(|s| self.transactions.get(s).cloned()).collect())
    }
}

fn start(faults: FaultPlan) -> RunningServer {
    spawn_in_thread(|| Ok(Fixture::load()), faults).unwrap()
}

/// Millisecond backoffs so fault tests stay fast.
fn fast() -> RpcOptions {
    RpcOptions {
        connect_timeout_ms: 1_000,
        request_timeout_ms: 3_000,
        attempts_max: 5,
        backoff_base_ms: 1,
        backoff_max_ms: 20,
        ..RpcOptions::default()
    }
}

fn client(server: &RunningServer, options: RpcOptions) -> RpcSource {
    RpcSource::new(&server.url(), options).unwrap()
}

const DEPTH: ViewOptions = ViewOptions::deep(100);

async fn view<S: LedgerSource>(source: &S, address: &Pubkey) -> WalletView {
    let mut view = build_view(source, address, DEPTH).await.unwrap();
    // What the ledgers said, not which kind of source said it.
    view.coverage.source.clear();
    view.coverage.synthetic = false;
    view
}

#[tokio::test]
async fn view_over_rpc_equals_view_of_the_source() {
    let server = start(FaultPlan::default());
    let rpc = client(&server, fast());
    let fixture = Fixture::load();
    let direct = view(&fixture, &wallet()).await;
    // The fixture is not trivial: every part of the view has something in it.
    assert!(direct.account.is_some());
    assert_eq!((direct.token_accounts.len(), direct.mints.len()), (1, 1));
    assert_eq!(direct.transactions.len(), 90);
    assert_eq!(direct.coverage.transactions_missing, 10);
    assert!(direct.coverage.history_truncated);
    assert_eq!(direct.outsider_nonces.iter().map(|n| n.account.address).collect::<Vec<_>>(), vec![NONCE_ACCOUNT]);
    assert_eq!(view(&rpc, &wallet()).await, direct);
    for other in [mint(), TOKEN_ACCOUNT, Pubkey::new([9; 32])] {
        assert_eq!(view(&rpc, &other).await, view(&fixture, &other).await, "{other}");
    }
    assert_eq!(build_view(&rpc, &wallet(), DEPTH).await.unwrap().coverage.source, "rpc");
}

#[tokio::test]
async fn demo_over_rpc_equals_demo() {
    let seed = config::DEMO_SEED_DEFAULT;
    let server = spawn_spec_in_thread(SourceSpec::Demo { seed }, FaultPlan::default()).unwrap();
    let rpc = client(&server, fast());
    let demo = xray::ledger::demo::DemoLedger::new(seed);
    let mut addresses: Vec<Pubkey> =
        demo.archetype_list().iter().filter_map(|a| Pubkey::parse(&a.address).ok()).collect();
    addresses.extend([wallet(), Pubkey::new([7; 32])]);
    for address in &addresses {
        assert_eq!(view(&rpc, address).await, view(&demo, address).await, "{address}");
    }
}

#[tokio::test]
async fn pages_signatures_with_before() {
    let server = start(FaultPlan::default());
    let rpc = client(&server, fast());
    let first = rpc.get_signatures_for_address(&wallet(), None, 3).await.unwrap();
    let before = Signature::parse(&first[2].signature).unwrap();
    let next = rpc.get_signatures_for_address(&wallet(), Some(&before), 2).await.unwrap();
    assert_eq!(next, Fixture::load().history[3..5].to_vec());
}

/// Signatures in a scrambled order, with one the ledger never saw.
fn scrambled_signatures() -> Vec<Signature> {
    let mut sigs: Vec<Signature> = (0..HISTORY_LEN).rev().map(signature).collect();
    sigs.insert(61, Signature([0x11; 64]));
    sigs.swap(3, 100);
    sigs
}

#[tokio::test]
async fn batches_transactions_and_keeps_order() {
    let server = start(FaultPlan::default());
    let rpc = client(&server, RpcOptions { batch_len_max: 20, concurrency_max: 3, ..fast() });
    let sigs = scrambled_signatures();
    let got = rpc.get_transactions(&sigs).await.unwrap();
    assert_eq!(got, Fixture::load().get_transactions(&sigs).await.unwrap());
    assert_eq!(got.iter().filter(|t| t.is_none()).count(), 14);
    // 131 signatures in batches of 20: 7 HTTP requests, not 131.
    assert_eq!(server.requests(), 7);
    assert!(rpc.get_transactions(&[]).await.unwrap().is_empty());
    assert_eq!(server.requests(), 7);

    let unbatched = client(&server, RpcOptions { batch_len_max: 1, ..fast() });
    assert_eq!(unbatched.get_transactions(&sigs[..5]).await.unwrap(), got[..5].to_vec());
    assert_eq!(server.requests(), 12);
}

#[tokio::test]
async fn an_endpoint_that_refuses_batches_is_read_one_request_at_a_time() {
    let server = start(FaultPlan { refuse_batches: true, ..FaultPlan::default() });
    let rpc = client(&server, RpcOptions { batch_len_max: 20, concurrency_max: 1, ..fast() });
    let sigs = scrambled_signatures();
    let got = rpc.get_transactions(&sigs).await.unwrap();
    assert_eq!(got, Fixture::load().get_transactions(&sigs).await.unwrap());
    // One refused batch, then every signature alone; the refusal is not retried.
    assert_eq!(server.requests(), 1 + sigs.len() as u64);
    // The source remembers: no further batch is tried.
    let before = server.requests();
    assert_eq!(rpc.get_transactions(&sigs[..30]).await.unwrap(), got[..30].to_vec());
    assert_eq!(server.requests(), before + 30);
    // A whole view over such an endpoint is the view of the source.
    assert_eq!(view(&rpc, &wallet()).await, view(&Fixture::load(), &wallet()).await);
}

/// The answers of `call_sequence`.
type Answers = (
    WithContext<Option<UiAccount>>,
    WithContext<Vec<KeyedAccount>>,
    Vec<SignatureInfo>,
    Vec<Option<TransactionResult>>,
    WithContext<Vec<Option<UiAccount>>>,
);

/// A sequence of every kind of call, one at a time (so the fault rule's alternation hits
/// every HTTP request of it once at share 0.5).
async fn call_sequence<S: LedgerSource>(source: &S) -> Result<Answers, LedgerError> {
    let sigs: Vec<Signature> = (0..40).map(signature).collect();
    Ok((
        source.get_account_info(&wallet()).await?,
        source.get_token_accounts_by_owner(&wallet(), TokenProgram::Token).await?,
        source.get_signatures_for_address(&wallet(), None, 50).await?,
        source.get_transactions(&sigs).await?,
        source.get_multiple_accounts(&[mint(), wallet(), NOT_FOUND]).await?,
    ))
}

fn sequential() -> RpcOptions {
    RpcOptions { batch_len_max: 20, concurrency_max: 1, ..fast() }
}

#[tokio::test]
async fn every_fault_at_half_share_is_retried_to_the_clean_answer() {
    let clean_server = start(FaultPlan::default());
    let clean = call_sequence(&client(&clean_server, sequential())).await.unwrap();
    // Six HTTP requests: four calls and two batches of transactions.
    assert_eq!(clean_server.requests(), 6);
    for kind in FaultKind::ALL {
        let server = start(FaultPlan { retry_after_s: 0, ..FaultPlan::only(kind, 0.5) });
        let rpc = client(&server, sequential());
        let started = Instant::now();
        assert!(call_sequence(&rpc).await.unwrap() == clean, "{kind:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{kind:?}");
        // Each request faulted once, then answered.
        assert_eq!((server.faults(), server.requests()), (6, 12), "{kind:?}");
    }
}

#[tokio::test]
async fn early_faults_under_concurrency_leave_the_view_unchanged() {
    let expected = view(&Fixture::load(), &wallet()).await;
    let mixed = FaultPlan {
        share_429: 0.2,
        share_500: 0.2,
        share_malformed: 0.2,
        share_truncated: 0.2,
        share_drop: 0.2,
        ..FaultPlan::default()
    };
    let plans = FaultKind::ALL.map(|kind| FaultPlan::only(kind, 1.0)).into_iter().chain([mixed]);
    for plan in plans {
        // At most 4 faults in all, fewer than the 5 attempts any one call has.
        let plan = FaultPlan { first_requests_max: Some(4), retry_after_s: 0, ..plan };
        let server = start(plan.clone());
        let rpc = client(&server, fast());
        let started = Instant::now();
        assert_eq!(view(&rpc, &wallet()).await, expected, "{plan:?}");
        assert!(started.elapsed() < Duration::from_secs(5), "{plan:?}");
        assert_eq!(server.faults(), 4, "{plan:?}");
    }
}

#[tokio::test]
async fn persistent_faults_end_in_typed_errors() {
    let options = RpcOptions { attempts_max: 3, ..fast() };
    for kind in FaultKind::ALL {
        let server = start(FaultPlan { retry_after_s: 0, ..FaultPlan::only(kind, 1.0) });
        let rpc = client(&server, options.clone());
        let started = Instant::now();
        let result = rpc.get_account_info(&wallet()).await;
        match (kind, &result) {
            (FaultKind::Malformed, Err(LedgerError::Malformed(_))) => {}
            (FaultKind::Malformed, _) => panic!("malformed: {result:?}"),
            (_, Err(LedgerError::Unavailable(_))) => {}
            _ => panic!("{kind:?}: {result:?}"),
        }
        assert_eq!(server.requests(), 3, "{kind:?}");
        assert!(started.elapsed() < Duration::from_secs(3), "{kind:?}");
        let batch = rpc.get_transactions(&[signature(0), signature(1)]).await;
        assert!(batch.is_err(), "{kind:?}");
    }
}

/// An endpoint that refuses the nonce search: a server's source (the default options) does not
/// ask it again for `NONCE_SEARCH_REFUSAL_S`; a one-shot source (the CLI's, 0 s) asks each time.
#[tokio::test]
async fn a_refused_nonce_search_pauses_only_a_long_lived_source() {
    let server = start(FaultPlan::default());
    for (pause_s, asks_again) in [(NONCE_SEARCH_REFUSAL_S, false), (0, true)] {
        let rpc = client(&server, RpcOptions { nonce_search_refusal_s: pause_s, ..fast() });
        assert!(rpc.get_nonce_accounts_by_authority(&RPC_ERROR).await.is_err());
        let asked = server.requests();
        assert!(rpc.get_nonce_accounts_by_authority(&RPC_ERROR).await.is_err());
        assert_eq!(server.requests() > asked, asks_again, "pause of {pause_s} s");
    }
}

#[tokio::test]
async fn slow_answers_time_out_as_unavailable() {
    let server = start(FaultPlan { latency_ms: 400, ..FaultPlan::default() });
    let rpc = client(&server, RpcOptions { request_timeout_ms: 100, attempts_max: 2, ..fast() });
    let started = Instant::now();
    let result = rpc.get_account_info(&wallet()).await;
    assert!(matches!(&result, Err(LedgerError::Unavailable(m)) if m.contains("timed out")), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.requests(), 2);
}

#[tokio::test]
async fn retry_after_is_honoured_up_to_the_backoff_cap() {
    let once = |retry_after_s| FaultPlan {
        retry_after_s,
        first_requests_max: Some(1),
        ..FaultPlan::only(FaultKind::TooManyRequests, 1.0)
    };
    let server = start(once(1));
    let rpc = client(&server, RpcOptions { backoff_max_ms: 3_000, ..fast() });
    let started = Instant::now();
    rpc.get_account_info(&wallet()).await.unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(1) && elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert_eq!(server.requests(), 2);

    // A Retry-After longer than the cap waits the cap only.
    let server = start(once(30));
    let rpc = client(&server, RpcOptions { backoff_max_ms: 50, ..fast() });
    let started = Instant::now();
    rpc.get_account_info(&wallet()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn json_rpc_error_objects_become_typed_errors() {
    let server = start(FaultPlan::default());
    let rpc = client(&server, fast());
    assert!(matches!(rpc.get_account_info(&NOT_FOUND).await, Err(LedgerError::NotFound(_))));
    assert_eq!(server.requests(), 1, "not found is an answer, not retried");
    let rpc_error = rpc.get_account_info(&RPC_ERROR).await;
    assert!(matches!(rpc_error, Err(LedgerError::Rpc { code: -32010, .. })), "{rpc_error:?}");
    assert_eq!(server.requests(), 2, "an rpc error is an answer, not retried");
    assert!(matches!(rpc.get_account_info(&UNAVAILABLE).await, Err(LedgerError::Unavailable(_))));
    assert_eq!(server.requests(), 7, "an unavailable node is retried");
}

async fn post(server: &RunningServer, body: impl Into<reqwest::Body>) -> (u16, Option<Value>) {
    let response = reqwest::Client::new().post(server.url()).body(body).send().await.unwrap();
    let status = response.status().as_u16();
    let mut bytes = response.bytes().await.unwrap().to_vec();
    (status, simd_json::to_owned_value(&mut bytes).ok())
}

fn error_code(answer: &Option<Value>) -> Option<i64> {
    answer.as_ref()?.get("error")?.get("code")?.as_i64()
}

#[tokio::test]
async fn server_answers_protocol_errors() {
    let server = start(FaultPlan::default());
    let unknown = r#"{"jsonrpc":"2.0","id":1,"method":"getSlot","params":[]}"#;
    assert_eq!(error_code(&post(&server, unknown).await.1), Some(-32601));
    assert_eq!(error_code(&post(&server, "{nope").await.1), Some(-32700));
    let bad_params = r#"{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["not-base58-0OIl"]}"#;
    assert_eq!(error_code(&post(&server, bad_params).await.1), Some(-32602));
    let balance = format!(r#"[{{"jsonrpc":"2.0","id":9,"method":"getBalance","params":["{WALLET}"]}}]"#);
    let (status, answer) = post(&server, balance).await;
    assert_eq!(status, 200);
    let value = answer.as_ref().and_then(|a| a.get_idx(0)?.get("result")?.get("value")?.as_u64());
    assert_eq!(value, Some(65_966_800_251));

    let get = reqwest::Client::new().get(server.url()).send().await.unwrap();
    assert_eq!(get.status().as_u16(), 405);
    let too_large = vec![b' '; config::RPC_SERVER_REQUEST_BYTES_MAX + 1];
    assert_eq!(post(&server, too_large).await.0, 413);
}

#[tokio::test]
async fn answers_over_the_size_cap_are_refused_without_retry() {
    let server = start(FaultPlan::default());
    let rpc = client(&server, RpcOptions { response_bytes_max: 2_000, ..fast() });
    let result = rpc.get_signatures_for_address(&wallet(), None, 100).await;
    assert!(matches!(result, Err(LedgerError::Malformed(_))), "{result:?}");
    assert_eq!(server.requests(), 1);
    // Small answers still pass.
    assert_eq!(rpc.get_signatures_for_address(&wallet(), None, 2).await.unwrap().len(), 2);
}

#[test]
fn cli_serves_until_killed() {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_xray"))
        .args(["ledger", "serve", "--ledger", "demo", "--listen", "127.0.0.1:0", "--fault-500", "0.5"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let url = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned));
    let result = url.map(|url| {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let rpc = RpcSource::new(&url, fast()).unwrap();
        runtime.block_on(rpc.get_account_info(&wallet()))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(matches!(result, Some(Ok(_))), "{result:?}");
}

/// The three sources agree end to end: the demo exported as a snapshot, served over real HTTP
/// by the local JSON-RPC server and read by the RPC source, gives the same views — and the
/// same X-Rays, byte for byte — as the snapshot read directly and as the demo itself.
#[tokio::test]
async fn demo_snapshot_and_rpc_agree_on_views_and_xrays() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("snap");
    let seed = config::DEMO_SEED_DEFAULT;
    xray::devtools::recorder::export_demo(seed, 3, &out).await.unwrap();
    let snapshot = xray::ledger::snapshot::SnapshotSource::open(&out).unwrap();
    let server = spawn_spec_in_thread(SourceSpec::Snapshot { dir: out.clone() }, FaultPlan::default()).unwrap();
    let rpc = client(&server, fast());
    let demo = xray::ledger::demo::DemoLedger::new(seed);
    let labels = xray::labels::Labels::builtin();
    let wallets = snapshot.manifest().wallets.clone();
    assert!(wallets.len() > 20, "every archetype and 3 background wallets");
    for wallet in &wallets {
        let full = ViewOptions::default();
        let mut from_demo = build_view(&demo, wallet, full).await.unwrap();
        let mut from_snapshot = build_view(&snapshot, wallet, full).await.unwrap();
        let mut from_rpc = build_view(&rpc, wallet, full).await.unwrap();
        for v in [&mut from_demo, &mut from_snapshot, &mut from_rpc] {
            v.coverage.source.clear();
            v.coverage.synthetic = false;
        }
        assert_eq!(from_snapshot, from_demo, "{wallet}: snapshot vs demo");
        assert_eq!(from_rpc, from_snapshot, "{wallet}: rpc vs snapshot");
        let xray = |v: &WalletView| serde_json::to_vec(&xray::engine::analyze(v, &labels)).unwrap();
        assert_eq!(xray(&from_rpc), xray(&from_demo), "{wallet}: X-Ray");
    }
}

#[tokio::test]
async fn transactions_are_handed_on_batch_by_batch_as_they_arrive() {
    // Three sequential batches of 20, each answered after 150 ms: a caller converting as it
    // goes sees the first batch about 300 ms before the last (the fetch plan holds one batch
    // in wire form at a time, not all of them).
    let server = start(FaultPlan { latency_ms: 150, ..FaultPlan::default() });
    let rpc = client(&server, RpcOptions { batch_len_max: 20, concurrency_max: 1, ..fast() });
    let sigs = &scrambled_signatures()[..60];
    let mut arrivals = Vec::new();
    rpc.for_each_transaction(sigs, &mut |result| arrivals.push((Instant::now(), result))).await.unwrap();
    assert_eq!(arrivals.len(), 60);
    let spread = arrivals[59].0 - arrivals[0].0;
    assert!(spread >= Duration::from_millis(250), "the first batch came out at the end: {spread:?}");
    let got: Vec<_> = arrivals.into_iter().map(|(_, result)| result).collect();
    assert_eq!(got, Fixture::load().get_transactions(sigs).await.unwrap(), "in order, the same results");
}
