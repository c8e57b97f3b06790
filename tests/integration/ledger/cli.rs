//! The one-shot CLI over `rpc:`: the real `xray analyze` against the local JSON-RPC server
//! (the demo ledger, each answer slowed so the run lasts long enough to report on). Its
//! progress line goes to stderr only when stderr is a terminal (given one by util-linux
//! `script`, where installed), and the result on stdout is the same either way.

use std::process::{Command, Output, Stdio};

use crate::api::serve_binary::BIN;
use xray::config::{SourceSpec, DEMO_SEED_DEFAULT};
use xray::devtools::rpc_server::{spawn_spec_in_thread, FaultPlan};

/// Thousands of transactions: 21 batches and pages, about a second at this latency.
const BUSY_TRADER: &str = "4Wu1mrzaAQ5Z54ANdUAEG8j4apxQM8kNED6i5mvbumiW";
/// Added to each answer of the local node.
const LATENCY_MS: u64 = 100;

fn succeeded(output: &Output) -> &[u8] {
    assert!(output.status.success(), "{output:?}");
    &output.stdout
}

#[test]
fn progress_shows_on_a_terminal_only() {
    let plan = FaultPlan { latency_ms: LATENCY_MS, ..FaultPlan::default() };
    let node = spawn_spec_in_thread(SourceSpec::Demo { seed: DEMO_SEED_DEFAULT }, plan).expect("local node");
    let ledger = format!("rpc:{}", node.url());
    let piped = Command::new(BIN)
        .args(["analyze", BUSY_TRADER, "--ledger", &ledger])
        .env("XRAY_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("xray analyze runs");
    let result = succeeded(&piped).to_vec();
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(
        !stderr.contains("ledger calls") && !stderr.contains(['\r', '\x1b']),
        "no progress off a terminal: {stderr:?}"
    );

    if Command::new("script").arg("--version").output().is_err() {
        eprintln!("util-linux script is not installed: the terminal side is not checked");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("xray.json");
    let command = format!("XRAY_LOG=warn {BIN} analyze {BUSY_TRADER} --ledger {ledger} > {}", out.display());
    let on_terminal =
        Command::new("script").args(["-qec", &command, "/dev/null"]).stdin(Stdio::null()).output().expect("script");
    let terminal = String::from_utf8_lossy(succeeded(&on_terminal)).into_owned();
    assert!(terminal.contains("ledger calls answered") && terminal.contains("transactions read"), "{terminal:?}");
    assert!(terminal.ends_with("\r\x1b[K"), "the line is erased at the end: {terminal:?}");
    assert_eq!(std::fs::read(&out).expect("result"), result, "the same result on stdout");
}
