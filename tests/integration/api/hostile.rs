//! A hostile ledger through the local JSON-RPC server (`--hostile`): a 60 MiB answer, an
//! answer that never ends, 300,000 token balances in one transaction, arrays nested 200,000
//! deep. Each time the job ends FAILED within its budget (bytes or time), refunded, and the
//! process keeps serving.

use std::time::{Duration, Instant};

use super::support::*;
use xray::config::ServeConfig;
use xray::devtools::rpc_server::{FaultPlan, Hostile};

/// Starts a server over a hostile ledger, submits one analysis and waits for its end; returns
/// the FAILED job's error object and how long the job took.
fn fail_one(hostile: Hostile, tweak: impl FnOnce(&mut ServeConfig)) -> (serde_json::Value, Duration) {
    let server = serve_rpc(FaultPlan { hostile: Some(hostile), ..FaultPlan::default() }, tweak);
    let key = server.key(KeyOptions { quota: 5, ..KeyOptions::default() });
    let k = key.secret.as_str();
    let started = Instant::now();
    let accepted = submit(&server, k, WALLET_PATH, &wallet_body(CLEAN));
    let failed = server.finish(&accepted.poll_path(), k);
    let took = started.elapsed();
    assert_eq!(failed.job_status(), "FAILED", "{failed:?}");
    assert_eq!(server.usage(k).units(), (0, 0, 5, 1), "refunded");
    let health = raw(server.addr, "GET", "/healthz", &[], "");
    assert_eq!(health.status, 200, "the process still serves: {health:?}");
    (failed.data()["error"].clone(), took)
}

fn code_and_message(error: &serde_json::Value) -> (&str, &str) {
    (error["code"].as_str().unwrap_or_default(), error["message"].as_str().unwrap_or_default())
}

#[test]
fn answers_of_60_mib_spend_the_jobs_byte_budget_and_fail_it() {
    let (error, _) = fail_one(Hostile::PaddedTo { bytes: 60 * 1024 * 1024 }, |c| {
        c.job_ledger_bytes_max = 100 * 1024 * 1024;
    });
    let (code, message) = code_and_message(&error);
    assert_eq!(code, "ANALYSIS_FAILED", "{error}");
    assert!(message.contains("budget of 100 MiB"), "{message}");
}

#[test]
fn an_answer_that_never_ends_fails_the_job_at_its_deadline() {
    let (error, took) = fail_one(Hostile::Endless, |c| c.job_deadline_s = 2);
    let (code, message) = code_and_message(&error);
    assert_eq!(code, "UPSTREAM_UNAVAILABLE", "{error}");
    assert!(message.contains("time budget of 2 s"), "{message}");
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(10), "{took:?}");
}

#[test]
fn three_hundred_thousand_token_balances_fail_the_job_not_the_process() {
    let (error, took) = fail_one(Hostile::TokenBalances { count: 300_000 }, |_| {});
    let (code, message) = code_and_message(&error);
    assert_eq!(code, "UPSTREAM_UNAVAILABLE", "{error}");
    assert!(message.contains("malformed"), "{message}");
    assert!(took < Duration::from_secs(60), "{took:?}");
}

#[test]
fn arrays_nested_200_000_deep_fail_the_job_not_the_process() {
    let (error, _) = fail_one(Hostile::Nested { depth: 200_000 }, |_| {});
    assert_eq!(code_and_message(&error).0, "UPSTREAM_UNAVAILABLE", "{error}");
}
