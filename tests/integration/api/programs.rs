//! A dApp's program in the scan (issue #44 item 1): an upgradeable program the runtime does not
//! ship is loaded from its program-data account on the ledger source and runs in process. The
//! ledger is a snapshot holding the real SPL Memo ELF (tests/fixtures/programs) deployed at an
//! address of its own — read directly, and over JSON-RPC through the local server.

use serde_json::json;
use xray::devtools::recorder::SnapshotWriter;
use xray::ledger::wire::{UiAccount, UiAccountData};
use xray::pubkey::Pubkey;

use super::support::*;

const MEMO_ELF: &[u8] = include_bytes!("../../fixtures/programs/spl_memo-3.0.0.so");
const SOL: u64 = 1_000_000_000;
const SLOT: u64 = 300_000_000;
const DEPLOY_SLOT: u64 = 250_000_000;
const UPGRADEABLE_LOADER: &str = "BPFLoaderUpgradeab1e11111111111111111111111";
const SYSTEM: &str = "11111111111111111111111111111111";

const WALLET: Pubkey = Pubkey([21; 32]);
const PROGRAM: Pubkey = Pubkey([22; 32]);
const FRESH: Pubkey = Pubkey([24; 32]);

/// Where the upgradeable loader keeps the program's data: the address derived from its id.
fn program_data() -> Pubkey {
    xray::runtime::program_data_address(&PROGRAM)
}

fn bytes_account(lamports: u64, owner: &str, data: &[u8], executable: bool) -> UiAccount {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(data);
    UiAccount {
        lamports,
        owner: owner.to_owned(),
        data: UiAccountData::Binary(vec![text, "base64".to_owned()]),
        executable,
        rent_epoch: u64::MAX,
        space: Some(data.len() as u64),
    }
}

/// A snapshot of a wallet and the program at `PROGRAM` (the memo ELF in its program-data
/// account, deployed at `deploy_slot`; no program-data account at all with `None`).
fn snapshot(dir: &std::path::Path, deploy_slot: Option<u64>) -> std::path::PathBuf {
    let out = dir.join(format!("program-{deploy_slot:?}"));
    let mut w = SnapshotWriter::create(&out).expect("writer");
    let wallet = bytes_account(10 * SOL, SYSTEM, &[], false);
    w.record_account(&WALLET, SLOT, Some(&wallet)).expect("recorded");
    w.record_account_bytes(&WALLET, SLOT, Some(&wallet)).expect("recorded");
    let mut program = 2u32.to_le_bytes().to_vec();
    program.extend_from_slice(&program_data().0);
    w.record_account_bytes(&PROGRAM, SLOT, Some(&bytes_account(1_141_440, UPGRADEABLE_LOADER, &program, true)))
        .expect("recorded");
    if let Some(slot) = deploy_slot {
        // `UpgradeableLoaderState::ProgramData`: tag 3, the deploy slot, no upgrade authority
        // (its 32 bytes left zero), then the ELF at byte 45.
        let mut data = 3u32.to_le_bytes().to_vec();
        data.extend_from_slice(&slot.to_le_bytes());
        data.resize(45, 0);
        data.extend_from_slice(MEMO_ELF);
        let account = bytes_account(SOL, UPGRADEABLE_LOADER, &data, false);
        w.record_account_bytes(&program_data(), SLOT, Some(&account)).expect("recorded");
    }
    w.finish(&[WALLET], "rpc").expect("finished");
    out
}

/// The wallet logs a memo through the program at `PROGRAM` and sends 1 SOL to a new address.
fn memo_and_transfer() -> String {
    use base64::Engine as _;
    let sdk = xray::ledger::transaction::message::sdk_address;
    let memo = solana_instruction::Instruction::new_with_bytes(sdk(&PROGRAM), b"hello", vec![]);
    let transfer = solana_system_interface::instruction::transfer(&sdk(&WALLET), &sdk(&FRESH), SOL);
    let parts = [xray::instruction_parts!(memo), xray::instruction_parts!(transfer)];
    let bytes = xray::ledger::transaction::message::compile(WALLET, &parts, [3; 32], false).expect("compiles");
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn scan(server: &TestServer) -> Reply {
    let key = server.key(KeyOptions::default());
    let reply = post(server.addr, SCAN_PATH, &key.secret, &scan_body(&memo_and_transfer(), None));
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
}

/// It ran in process: the SOL left the wallet, and the program is named in `instructions`.
fn assert_ran(reply: &Reply) {
    let data = reply.data();
    assert_eq!(data["simulation"]["status"], "ok", "{reply:?}");
    assert_eq!(data["simulation"]["answeredBy"], "runtime", "{reply:?}");
    assert_eq!(data["effects"][0]["deltaLamports"], json!(-(SOL as i64) - 5_000), "{reply:?}");
    assert_eq!(data["instructions"][0]["programId"], PROGRAM.to_string(), "{reply:?}");
}

#[test]
fn an_upgradeable_program_runs_in_process_from_its_program_data_on_a_snapshot_and_over_rpc() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = snapshot(dir.path(), Some(DEPLOY_SLOT));
    let direct = serve(|c| c.ledger = xray::config::SourceSpec::Snapshot { dir: held.clone() });
    let reply = scan(&direct);
    assert_ran(&reply);
    // Over JSON-RPC: the program-data header is read (`dataSlice`), then the ELF once.
    let spec = xray::config::SourceSpec::Snapshot { dir: held };
    let over_rpc = serve_rpc_spec(spec, Default::default(), |_| {});
    let again = scan(&over_rpc);
    assert_ran(&again);
    assert_eq!(again.data()["effects"], reply.data()["effects"]);
    // A second scan on the same thread finds the program loaded at its deploy slot.
    assert_ran(&scan(&over_rpc));
}

#[test]
fn a_program_whose_program_data_is_not_held_is_skipped_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = snapshot(dir.path(), None);
    let server = serve(|c| c.ledger = xray::config::SourceSpec::Snapshot { dir: held });
    let reply = scan(&server);
    let simulation = &reply.data()["simulation"];
    assert_eq!(simulation["status"], "skipped", "{reply:?}");
    let reason = simulation["reason"].as_str().unwrap_or_default();
    assert!(reason.contains(&program_data().to_string()) && reason.contains("program-data"), "{reason}");
}
