//! Three real `xray` processes sharing the shared etcd cluster (each test in a keyspace of its
//! own, `--etcd-prefix`), as an operator runs them behind a load balancer: one contract across
//! nodes (happy paths and errors asked of each node in turn, long polls and deduplication
//! across nodes, a restarted node that sees everything), keys made on one node reaching the
//! others and revocation refusing on every node within a measured bound, one key's quota
//! hammered over HTTP from three nodes, a node killed (-9) mid-job whose job another node
//! adopts, finishes and charges once, and the etcd leader killed under admissions (its own
//! 3-member etcd).

use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::etcd;
use crate::api::contract::{error_cases, Auth};
use crate::api::serve_binary::{keys, start, Server};
use crate::api::support::{
    analysis_path, assert_error, assert_error_details, compare_body, comparison_path, expected_pair_id, fresh_wallets,
    get, post, raw, refresh_body, wallet_body, API, READY_WALLETS, USAGE_PATH,
};
use crate::api::webhooks::Receiver;
use xray::devtools::rpc_server::{spawn_spec_in_thread, FaultPlan};

const WALLET: &str = "/v1/developer/intelligence/wallet";
const COMPARE: &str = "/v1/developer/intelligence/compare";
const BATCH: &str = "/v1/developer/intelligence/wallets";

/// Longest a key change may take to reach every node before a test fails (what it measures is
/// printed; the watch delivers in milliseconds on loopback).
const KEY_PROPAGATION_MAX: Duration = Duration::from_secs(2);

/// One node of a test's cluster: its data directory (admin token, address) and its process.
pub(super) struct Node {
    pub(super) dir: tempfile::TempDir,
    pub(super) server: Server,
}

pub(super) fn node(prefix: &str, extra: &[&str]) -> Node {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start_node(dir.path(), prefix, extra);
    Node { dir, server }
}

fn start_node(dir: &Path, prefix: &str, extra: &[&str]) -> Server {
    start_node_on(&etcd::shared().endpoints(), dir, prefix, extra)
}

pub(super) fn start_node_on(endpoints: &[String], dir: &Path, prefix: &str, extra: &[&str]) -> Server {
    let store = format!("etcd:{}", endpoints.join(","));
    let flags = ["--store", &store, "--etcd-prefix", prefix, "--listener-threads", "1", "--compute-threads", "1"];
    start(dir, &[&flags[..], extra].concat())
}

/// Three nodes of a fresh keyspace; the first start printed the cluster's only first key.
pub(super) fn cluster(test: &str, extra: &[&str]) -> (Vec<Node>, String) {
    let prefix = etcd::fresh_prefix(test);
    let nodes: Vec<Node> = (0..3).map(|_| node(&prefix, extra)).collect();
    let printed: Vec<&String> = nodes.iter().filter_map(|n| n.server.first_key.as_ref()).collect();
    assert_eq!(printed.len(), 1, "one first key for the cluster, printed by the node that made it");
    let key = printed[0].clone();
    (nodes, key)
}

pub(super) fn id_of(reply: &crate::api::support::Reply) -> String {
    reply.body["data"]["analysisId"].as_str().expect("analysisId").to_owned()
}

/// Polls `path` on `node` with `wait` until the job is finished (bounded).
pub(super) fn finished(node: &Node, path: &str, key: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let reply = get(node.server.api, &format!("{path}?wait=10"), key);
        assert_eq!(reply.status, 200, "{reply:?}");
        if matches!(reply.body["data"]["status"].as_str(), Some("READY" | "FAILED")) {
            return reply.body;
        }
        assert!(Instant::now() < deadline, "{path} not finished within 60 s: {reply:?}");
    }
}

pub(super) fn usage(node: &Node, key: &str) -> Value {
    let reply = get(node.server.api, USAGE_PATH, key);
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.body["data"]["quota"].clone()
}

#[test]
fn three_nodes_answer_as_one_and_a_restarted_node_sees_everything() {
    let (mut nodes, key) = cluster("contract", &[]);
    let [a, b, c] = [0, 1, 2];
    // Admitted on A, long-polled on B and C: the same finished document everywhere.
    let admitted = post(nodes[a].server.api, WALLET, &key, &wallet_body(READY_WALLETS[0]));
    assert_eq!(admitted.status, 202, "{admitted:?}");
    let id = id_of(&admitted);
    let on_b = finished(&nodes[b], &analysis_path(&id), &key);
    assert_eq!(on_b["data"]["status"], "READY", "{on_b}");
    assert_eq!(finished(&nodes[c], &analysis_path(&id), &key), on_b);
    assert_eq!(finished(&nodes[a], &analysis_path(&id), &key), on_b);
    // The same wallet on C reuses A's fresh result; on B with `refresh` a new job is made.
    let reused = post(nodes[c].server.api, WALLET, &key, &wallet_body(READY_WALLETS[0]));
    assert_eq!(
        (reused.status, id_of(&reused), &reused.body["data"]["deduplicated"]),
        (200, id.clone(), &Value::Bool(true))
    );
    // A live job admitted on one node deduplicates an equal request on another.
    let slow = post(nodes[a].server.api, WALLET, &key, &wallet_body(READY_WALLETS[1]));
    let again = post(nodes[b].server.api, WALLET, &key, &wallet_body(READY_WALLETS[1]));
    assert_eq!(again.body["data"]["deduplicated"], true, "{again:?}");
    assert_eq!(id_of(&again), id_of(&slow));
    // A comparison admitted on B is polled by pair id on C.
    let pair = post(nodes[b].server.api, COMPARE, &key, &compare_body(READY_WALLETS[2], READY_WALLETS[3]));
    assert_eq!(pair.status, 202, "{pair:?}");
    let pair_path = comparison_path(&expected_pair_id(READY_WALLETS[2], READY_WALLETS[3]));
    assert_eq!(finished(&nodes[c], &pair_path, &key)["data"]["status"], "READY");
    // The error table, each node in turn.
    for (i, n) in nodes.iter().enumerate() {
        let api = n.server.api;
        assert_error(&post(api, WALLET, &key, r#"{"wallet":"not-base58-0OIl"}"#), 400, "INVALID_ADDRESS");
        assert_error(&get(api, &analysis_path("an_1111111111111111111111"), &key), 404, "NOT_FOUND");
        assert_error(&get(api, USAGE_PATH, "svc_live_unknown"), 401, "UNAUTHENTICATED");
        assert_error(&post(api, WALLET, &key, "{"), 400, "INVALID_REQUEST");
        let status = get(api, &format!("{API}/status"), &key);
        assert_eq!(status.status, 200, "node {i}: {status:?}");
        assert!(status.header("ratelimit-policy").is_some(), "node {i}: {status:?}");
    }
    // Every node reads the same usage: two analyses and one comparison charged (after both finish).
    finished(&nodes[a], &analysis_path(&id_of(&slow)), &key);
    let counts: Vec<Value> = nodes.iter().map(|n| usage(n, &key)).collect();
    assert!(counts.iter().all(|u| u == &counts[0]), "{counts:?}");
    assert_eq!((counts[0]["used"].as_u64(), counts[0]["reserved"].as_u64()), (Some(3), Some(0)), "{counts:?}");
    let counts = idempotent_across_nodes(&nodes, &key);

    // C stops and starts again on the same etcd: the key, the jobs and the usage are all there.
    nodes[c].server.stop_gracefully();
    let prefix = etcd_prefix_of(&nodes[a]);
    nodes[c].server = start_node(nodes[c].dir.path(), &prefix, &[]);
    assert_eq!(nodes[c].server.first_key, None, "a restart prints no key");
    assert_eq!(finished(&nodes[c], &analysis_path(&id), &key), on_b);
    assert_eq!(usage(&nodes[c], &key), counts[0]);
}

/// The prefix a node was started with (read back from its command line).
/// An `Idempotency-Key` answered on one node is replayed on the others (the single endpoint and
/// a batch, each item's answer its own), and nothing is charged twice. Returns every node's
/// usage once the jobs are finished (three more units).
fn idempotent_across_nodes(nodes: &[Node], key: &str) -> Vec<Value> {
    let bearer = format!("Bearer {key}");
    let post_with = |node: &Node, path: &str, body: &str, idempotency_key: &str| {
        let headers = [
            ("Authorization", bearer.as_str()),
            ("Content-Type", "application/json"),
            ("Idempotency-Key", idempotency_key),
        ];
        raw(node.server.api, "POST", path, &headers, body)
    };
    let first = post_with(&nodes[0], WALLET, &refresh_body(READY_WALLETS[4]), "cluster-1");
    assert_eq!((first.status, first.header("idempotent-replayed")), (202, None), "{first:?}");
    for node in &nodes[1..] {
        let again = post_with(node, WALLET, &refresh_body(READY_WALLETS[4]), "cluster-1");
        assert_eq!((again.status, again.header("idempotent-replayed")), (202, Some("true")), "{again:?}");
        assert_eq!(id_of(&again), id_of(&first));
    }
    let batch = serde_json::json!({ "wallets": [READY_WALLETS[5], READY_WALLETS[6], READY_WALLETS[5]] }).to_string();
    let ids = |reply: &crate::api::support::Reply| -> Vec<String> {
        assert_eq!(reply.status, 200, "{reply:?}");
        let items = reply.body["data"]["items"].as_array().expect("items");
        items.iter().map(|item| item["analysisId"].as_str().expect("analysisId").to_owned()).collect()
    };
    let admitted = post_with(&nodes[1], BATCH, &batch, "cluster-2");
    let admitted_ids = ids(&admitted);
    assert_eq!(admitted.body["data"]["admitted"], 2, "{admitted:?}");
    assert_eq!(admitted_ids[0], admitted_ids[2], "a repeated address is one job");
    let replayed = post_with(&nodes[2], BATCH, &batch, "cluster-2");
    assert_eq!((ids(&replayed), replayed.header("idempotent-replayed")), (admitted_ids.clone(), Some("true")));
    for id in [id_of(&first), admitted_ids[0].clone(), admitted_ids[1].clone()] {
        finished(&nodes[2], &analysis_path(&id), key);
    }
    let counts: Vec<Value> = nodes.iter().map(|n| usage(n, key)).collect();
    assert!(counts.iter().all(|u| u == &counts[0]), "{counts:?}");
    assert_eq!((counts[0]["used"].as_u64(), counts[0]["reserved"].as_u64()), (Some(6), Some(0)), "{counts:?}");
    counts
}

fn etcd_prefix_of(node: &Node) -> String {
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", node.server.child.id())).expect("cmdline");
    let args: Vec<String> = cmdline.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
    let at = args.iter().position(|a| a == "--etcd-prefix").expect("--etcd-prefix");
    args[at + 1].clone()
}

/// A node started before its etcd (a boot, a script that starts both) waits for it, saying so,
/// and serves once etcd answers — instead of exiting on the first refused connection.
#[test]
fn a_node_started_before_its_etcd_waits_for_it_and_serves() {
    let mut etcd = etcd::EtcdCluster::planned(1, &[]);
    let endpoints = etcd.endpoints();
    let dir = tempfile::tempdir().expect("tempdir");
    let prefix = etcd::fresh_prefix("before_etcd");
    let path = dir.path().to_path_buf();
    let starting = std::thread::spawn(move || start_node_on(&endpoints, &path, &prefix, &[]));
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(!starting.is_finished(), "the node waits: nothing to serve before its store answers");
    etcd.spawn_all();
    let server = starting.join().expect("the node starts once etcd answers");
    let key = server.first_key.clone().expect("the cluster's first key");
    assert_eq!(raw(server.api, "GET", "/healthz", &[], "").status, 200);
    assert_eq!(get(server.api, &format!("{API}/status"), &key).status, 200, "it serves");
}

#[test]
fn every_row_of_the_error_table_on_the_nodes_in_turn() {
    let (nodes, _first) = cluster("errors", &[]);
    // Keys made on node 1 (an operator's `xray keys`), paced well above this test's requests.
    let made = |scopes: &str| {
        let flags = ["create", "--name", "table", "--scopes", scopes, "--rate-per-second", "1000", "--burst", "1000"];
        let created = keys(nodes[1].dir.path(), &flags).expect("create");
        let secret = created["key"].as_str().expect("key").to_owned();
        for n in &nodes {
            wait_for_status(n, &secret, 200, Instant::now());
        }
        secret
    };
    let (key, reader) = (made("wallet:analyze,wallet:compare,analysis:read,usage:read"), made("usage:read"));
    let unknown = xray::auth::key::ApiKey::generate().expect("random");
    let (full, reader, unknown) =
        (format!("Bearer {key}"), format!("Bearer {reader}"), format!("Bearer {}", unknown.expose_secret()));
    for (i, case) in error_cases().into_iter().enumerate() {
        let node = &nodes[i % nodes.len()];
        let authorization = match case.auth {
            Auth::Full => Some(full.as_str()),
            Auth::Reader => Some(reader.as_str()),
            Auth::Without => None,
            Auth::Header(value) => Some(value),
            Auth::Unknown => Some(unknown.as_str()),
        };
        let mut headers: Vec<(&str, &str)> = authorization.map(|a| ("Authorization", a)).into_iter().collect();
        headers.extend(case.content_type.map(|t| ("Content-Type", t)));
        let reply = raw(node.server.api, case.method, &case.path, &headers, &case.body);
        let context = format!("node {} / {}: {reply:?}", i % nodes.len(), case.name);
        assert_eq!((reply.status, reply.error()["code"].as_str()), (case.status, Some(case.code)), "{context}");
        assert_error_details(&reply, case.status, case.code, &case.details);
        if let Some((name, value)) = case.header {
            assert_eq!(reply.header(name), Some(value), "{context}");
        }
    }
    for n in &nodes {
        let u = usage(n, &key);
        assert_eq!((u["used"].as_u64(), u["reserved"].as_u64()), (Some(0), Some(0)), "nothing refused is charged: {u}");
    }
}

#[test]
fn a_key_made_on_one_node_works_on_all_and_its_revocation_refuses_on_all_within_the_bound() {
    let (nodes, _key) = cluster("revocation", &[]);
    let created = keys(nodes[0].dir.path(), &["create", "--name", "shared", "--scopes", "usage:read"]).expect("create");
    let (id, key) = (created["id"].as_str().expect("id"), created["key"].as_str().expect("key"));
    let created_at = Instant::now();
    for n in &nodes {
        wait_for_status(n, key, 200, created_at);
    }
    eprintln!("key creation reached every node after {:?}", created_at.elapsed());
    keys(nodes[0].dir.path(), &["revoke", id]).expect("revoke");
    let revoked_at = Instant::now();
    let mut slowest = Duration::ZERO;
    for n in &nodes {
        slowest = slowest.max(wait_for_status(n, key, 401, revoked_at));
    }
    eprintln!("revocation refused on every node after {slowest:?} (bound {KEY_PROPAGATION_MAX:?})");
}

/// Asks `node` until it answers `status` for `key`; how long after `since` it took.
fn wait_for_status(node: &Node, key: &str, status: u16, since: Instant) -> Duration {
    loop {
        let reply = get(node.server.api, USAGE_PATH, key);
        if reply.status == status {
            return since.elapsed();
        }
        assert!(since.elapsed() < KEY_PROPAGATION_MAX, "still {} after {:?}: {reply:?}", reply.status, since.elapsed());
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn each_node_enforces_its_share_of_a_keys_rate_and_says_so_in_its_headers() {
    let (nodes, _first) = cluster("rate", &[]);
    let flags = ["create", "--name", "paced", "--scopes", "usage:read", "--rate-per-second", "30", "--burst", "30"];
    let created = keys(nodes[0].dir.path(), &flags).expect("create");
    let key = created["key"].as_str().expect("key").to_owned();
    // Once each node has counted three live nodes (its upkeep round, every second), its bucket
    // is a third of the key's: 10 per second, burst 10.
    let share = "\"rate\";q=10;w=1";
    let started = Instant::now();
    for n in &nodes {
        loop {
            let reply = get(n.server.api, USAGE_PATH, &key);
            if reply.status == 200 && reply.header("ratelimit-policy").is_some_and(|p| p.starts_with(share)) {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(10), "no share after 10 s: {reply:?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    std::thread::sleep(Duration::from_millis(1_100)); // the probes above spent tokens: refill
    for (i, n) in nodes.iter().enumerate() {
        // 20 back to back: the burst of 10, plus what refills meanwhile (10 per second: on a
        // busy machine — 8 test threads on 2 cores — 20 requests can take a few 100 ms)...
        let allowed = (0..20).filter(|_| get(n.server.api, USAGE_PATH, &key).status == 200).count();
        assert!((10..=15).contains(&allowed), "node {i}: {allowed} of 20 allowed");
        // ...and, of the next few, one refused (a token may have refilled meanwhile), its
        // headers naming this node's share.
        let limited = (0..5)
            .map(|_| get(n.server.api, USAGE_PATH, &key))
            .find(|r| r.status != 200)
            .unwrap_or_else(|| panic!("node {i}: 5 more requests past the burst all allowed"));
        assert_error(&limited, 429, "RATE_LIMITED");
        assert!(limited.header("ratelimit-policy").is_some_and(|p| p.starts_with(share)), "{limited:?}");
    }
}

#[test]
fn one_keys_quota_hammered_over_http_from_three_nodes_stays_exact() {
    const QUOTA: u64 = 12;
    let (nodes, _first) = cluster("quota", &[]);
    let flags = ["create", "--name", "metered", "--scopes", "wallet:analyze,usage:read", "--quota", "12"];
    let flags = [&flags[..], &["--rate-per-second", "1000", "--burst", "1000"]].concat();
    let created = keys(nodes[0].dir.path(), &flags).expect("create");
    let key = created["key"].as_str().expect("key").to_owned();
    for n in &nodes {
        wait_for_status(n, &key, 200, Instant::now());
    }
    let wallets = fresh_wallets("cluster-quota", 30);
    let barrier = Arc::new(Barrier::new(3));
    let apis: Vec<_> = nodes.iter().map(|n| n.server.api).collect();
    let workers: Vec<_> = (0..3)
        .map(|t| {
            let (api, key, barrier) = (apis[t], key.clone(), Arc::clone(&barrier));
            let mine: Vec<String> = wallets.iter().skip(t).step_by(3).cloned().collect();
            std::thread::spawn(move || {
                barrier.wait();
                let (mut accepted, mut exhausted) = (0u64, 0u64);
                for wallet in mine {
                    let reply = post(api, WALLET, &key, &wallet_body(&wallet));
                    match reply.status {
                        202 => accepted += 1,
                        429 => {
                            assert_eq!(reply.body["error"]["code"], "QUOTA_EXHAUSTED", "{reply:?}");
                            exhausted += 1;
                        }
                        _ => panic!("{reply:?}"),
                    }
                }
                (accepted, exhausted)
            })
        })
        .collect();
    let counts: Vec<(u64, u64)> = workers.into_iter().map(|w| w.join().expect("worker")).collect();
    let accepted: u64 = counts.iter().map(|c| c.0).sum();
    let exhausted: u64 = counts.iter().map(|c| c.1).sum();
    assert_eq!(accepted + exhausted, 30);
    // Settle: every accepted job finishes; then the usage is exact on every node.
    let deadline = Instant::now() + Duration::from_secs(60);
    let settled = loop {
        let u = usage(&nodes[2], &key);
        if u["reserved"] == 0 {
            break u;
        }
        assert!(Instant::now() < deadline, "jobs still reserved after 60 s: {u}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let used = settled["used"].as_u64().expect("used");
    assert!(used <= QUOTA, "{settled}");
    assert_eq!(accepted, QUOTA, "exactly the quota was admitted across three nodes: {counts:?} {settled}");
    assert_eq!(used, QUOTA, "every admitted job charged once: {settled}");
    for n in &nodes {
        assert_eq!(usage(n, &key), settled);
    }
}

#[test]
fn a_node_killed_mid_job_is_replaced_by_another_that_finishes_and_charges_once() {
    // A slow ledger keeps the job running when its node dies.
    let plan = FaultPlan { latency_ms: 400, ..FaultPlan::default() };
    let rpc = spawn_spec_in_thread("demo".parse().expect("spec"), plan).expect("JSON-RPC server");
    let ledger = format!("rpc:{}", rpc.url());
    let (mut nodes, key) = cluster("adoption", &["--ledger", &ledger]);
    let admitted = post(nodes[0].server.api, WALLET, &key, &wallet_body(READY_WALLETS[4]));
    assert_eq!(admitted.status, 202, "{admitted:?}");
    let id = id_of(&admitted);
    let polled = get(nodes[1].server.api, &analysis_path(&id), &key);
    assert!(matches!(polled.body["data"]["status"].as_str(), Some("QUEUED" | "RUNNING")), "{polled:?}");
    let killed = Instant::now();
    nodes[0].server.kill_9();
    let done = finished(&nodes[2], &analysis_path(&id), &key);
    assert_eq!(done["data"]["status"], "READY", "{done}");
    eprintln!("a killed node's job finished elsewhere {:?} after the kill", killed.elapsed());
    let u = usage(&nodes[1], &key);
    assert_eq!((u["used"].as_u64(), u["reserved"].as_u64()), (Some(1), Some(0)), "charged once: {u}");
    assert_eq!(usage(&nodes[2], &key), u);
}

#[test]
fn admissions_over_http_resume_after_the_etcd_leader_is_killed_and_none_acknowledged_is_lost() {
    // Its own etcd: the shared one must keep its leader for the other tests.
    let mut members = etcd::EtcdCluster::start(3, &[]);
    let endpoints = members.endpoints();
    let nodes: Vec<Node> = (0..2)
        .map(|_| {
            let dir = tempfile::tempdir().expect("tempdir");
            let server = start_node_on(&endpoints, dir.path(), "xray/", &[]);
            Node { dir, server }
        })
        .collect();
    let flags = ["create", "--name", "writer", "--scopes", "wallet:analyze,analysis:read,usage:read"];
    let flags = [&flags[..], &["--rate-per-second", "1000", "--burst", "1000", "--quota", "1000000"]].concat();
    let created = keys(nodes[0].dir.path(), &flags).expect("create");
    let key = created["key"].as_str().expect("key").to_owned();
    for n in &nodes {
        wait_for_status(n, &key, 200, Instant::now());
    }
    let apis: Vec<_> = nodes.iter().map(|n| n.server.api).collect();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Three writers (one per connection): a request in flight at the kill may wait out etcd's
    // timeout (503 after 5 s) while the others go on.
    let writers: Vec<_> = (0..3)
        .map(|t| {
            let (stop, key, apis) = (Arc::clone(&stop), key.clone(), apis.clone());
            std::thread::spawn(move || {
                let (mut acknowledged, mut busy) = (Vec::new(), 0);
                // More than the ~5 s of this test can admit on two cores.
                for (i, wallet) in fresh_wallets(&format!("leader-kill-{t}"), 2_000).into_iter().enumerate() {
                    if stop.load(std::sync::atomic::Ordering::Acquire) {
                        break;
                    }
                    let sent = Instant::now();
                    let reply = post(apis[(i + t) % apis.len()], WALLET, &key, &wallet_body(&wallet));
                    match reply.status {
                        202 => acknowledged.push((sent, Instant::now(), id_of(&reply))),
                        503 => busy += 1, // etcd without a leader: refused, nothing acknowledged
                        // The account's jobs in flight at their maximum (the compute threads
                        // are slower than the writers on a busy machine): refused the same way.
                        429 if reply.body["error"]["code"] == "TOO_MANY_JOBS" => busy += 1,
                        _ => panic!("{reply:?}"),
                    }
                }
                (acknowledged, busy)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let killed = Instant::now();
    members.kill(members.leader());
    std::thread::sleep(Duration::from_secs(4));
    stop.store(true, std::sync::atomic::Ordering::Release);
    let (mut acknowledged, mut busy) = (Vec::new(), 0);
    for writer in writers {
        let (acked, refused) = writer.join().expect("writer");
        acknowledged.extend(acked);
        busy += refused;
    }
    // The first admission sent after the kill and acknowledged: etcd had a new leader by then.
    let after = acknowledged.iter().filter(|(sent, _, _)| *sent > killed).map(|(_, at, _)| at.duration_since(killed));
    let resumed = after.min().expect("no admission sent after the leader was killed was acknowledged");
    eprintln!(
        "leader kill over HTTP: admissions resumed after {resumed:?}; {} acknowledged, {busy} refused",
        acknowledged.len()
    );
    assert!(resumed < Duration::from_secs(3), "{resumed:?}");
    // Every acknowledged job is there, on either node.
    for (i, (_, _, id)) in acknowledged.iter().enumerate() {
        let reply = get(apis[(i + 1) % apis.len()], &analysis_path(id), &key);
        assert_eq!(reply.status, 200, "{id} was acknowledged and is missing: {reply:?}");
    }
}

/// A request to `node`'s admin listener with its token.
pub(super) fn admin(node: &Node, method: &str, path: &str) -> crate::api::support::Reply {
    let read = |name: &str| std::fs::read_to_string(node.dir.path().join(name)).expect(name).trim().to_owned();
    let addr: std::net::SocketAddr = read("admin.addr").parse().expect("admin address");
    let bearer = format!("Bearer {}", read("admin.token"));
    raw(addr, method, path, &[("authorization", &bearer)], "")
}

/// Issue #32 across nodes: an analysis made and finished on A; the same wallet with a
/// `callbackUrl` on B reuses it (200) and attaches the URL in etcd; one node's delivery thread
/// claims it (the cluster's outbox) and the receiver gets it once, signed; C, which never read
/// the job before, polls it with its webhook DELIVERED.
#[test]
fn a_callback_on_a_result_another_node_made_is_attached_and_delivered_once() {
    let (nodes, key) = cluster("attach", &["--webhook-allow-hosts", "127.0.0.1"]);
    let listed = admin(&nodes[0], "GET", "/v1/admin/keys");
    let keys = listed.body.get("data").unwrap_or(&listed.body);
    let account = keys[0]["account"].as_str().unwrap_or_else(|| panic!("the key's account: {listed:?}")).to_owned();
    let made = admin(&nodes[0], "POST", &format!("/v1/admin/accounts/{account}/webhook-secret"));
    let secret = made.body["secret"].as_str().unwrap_or_else(|| panic!("a webhook secret: {made:?}")).to_owned();
    let admitted = post(nodes[0].server.api, WALLET, &key, &wallet_body(READY_WALLETS[0]));
    let id = id_of(&admitted);
    assert_eq!(finished(&nodes[0], &analysis_path(&id), &key)["data"]["status"], "READY");

    let receiver = Receiver::start(&[200]);
    let body = serde_json::json!({ "wallet": READY_WALLETS[0], "callbackUrl": receiver.url() }).to_string();
    let reused = post(nodes[1].server.api, WALLET, &key, &body);
    assert_eq!((reused.status, id_of(&reused)), (200, id.clone()), "{reused:?}");
    let expected = serde_json::json!({
        "url": receiver.url(), "status": "PENDING", "attempts": 0, "lastError": null, "attached": true
    });
    assert_eq!(reused.body["data"]["callback"], expected, "{reused:?}");
    let got = receiver.wait_for(1);
    let now_s = xray::clock::now_unix_ms() / 1_000;
    let signature = got[0].header("xray-signature").expect("Xray-Signature");
    assert!(xray::webhooks::signature::verify(&secret, signature, &got[0].body, now_s, 300).is_ok());
    assert_eq!(got[0].header("xray-webhook-id"), Some(id.as_str()));
    let deadline = Instant::now() + Duration::from_secs(20);
    let polled = loop {
        let poll = get(nodes[2].server.api, &analysis_path(&id), &key);
        if poll.body["data"]["callback"]["status"] == "DELIVERED" {
            break poll.body;
        }
        assert!(Instant::now() < deadline, "not DELIVERED on C within 20 s: {poll:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut document = polled.clone();
    document["data"].as_object_mut().expect("data").remove("callback");
    assert_eq!(serde_json::from_slice::<Value>(&got[0].body).expect("JSON"), document, "the poll's document");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(receiver.got.lock().expect("log").len(), 1, "one delivery across three nodes");
    assert_eq!(usage(&nodes[1], &key)["used"].as_u64(), Some(1), "the attach is free");
}
