//! An account's policy on three real nodes sharing etcd (issue #31): a write on one node is in
//! force on the others within the reload interval (each node reads the policies each second),
//! a job admitted on another node runs under it, and the version compare-and-set holds across
//! nodes. About 10 s.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::nodes::{cluster, finished, id_of, Node};
use crate::api::support::{analysis_path, get, post, raw, wallet_body, READY_WALLETS};

const POLICY: &str = "/v1/developer/policy";
const WALLET: &str = "/v1/developer/intelligence/wallet";
/// Longest a policy write may take to reach another node (reload each 1 s, plus a tick).
const POLICY_PROPAGATION_MAX: Duration = Duration::from_secs(3);

fn put(node: &Node, key: &str, body: &Value) -> crate::api::support::Reply {
    let auth = format!("Bearer {key}");
    let headers = [("authorization", auth.as_str()), ("content-type", "application/json")];
    raw(node.server.api, "PUT", POLICY, &headers, &body.to_string())
}

/// Waits until `node` answers version `version`; returns how long it took.
fn seen(node: &Node, key: &str, version: u64) -> Duration {
    let start = Instant::now();
    loop {
        let reply = get(node.server.api, POLICY, key);
        assert_eq!(reply.status, 200, "{reply:?}");
        if reply.body["data"]["policy"]["version"] == json!(version) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < POLICY_PROPAGATION_MAX,
            "version {version} not in force within {POLICY_PROPAGATION_MAX:?}: {reply:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_policy_written_on_one_node_is_in_force_on_every_node() {
    let (nodes, key) = cluster("policy", &[]);
    let written = put(&nodes[0], &key, &json!({"version": 0, "severityOverrides": {"new_wallet": "ignore"}}));
    assert_eq!(written.status, 200, "{written:?}");
    let id = written.body["data"]["policy"]["id"].as_str().expect("id").to_owned();
    for node in &nodes[1..] {
        let took = seen(node, &key, 1);
        println!("policy version 1 in force on another node after {took:?}");
    }
    // A job admitted on the third node runs under it.
    let admitted = post(nodes[2].server.api, WALLET, &key, &wallet_body(READY_WALLETS[0]));
    assert!(matches!(admitted.status, 200 | 202), "{admitted:?}");
    let done = finished(&nodes[1], &analysis_path(&id_of(&admitted)), &key);
    assert_eq!(done["data"]["xray"]["policy"], json!({"id": id, "version": 1}), "{done}");
    // The compare-and-set holds across nodes: a stale write on B is refused, a current one lands.
    let stale = put(&nodes[1], &key, &json!({"version": 0, "denyList": []}));
    assert_eq!(stale.status, 409, "{stale:?}");
    let next = put(&nodes[1], &key, &json!({"version": 1, "denyList": [READY_WALLETS[3]]}));
    assert_eq!(next.status, 200, "{next:?}");
    assert_eq!(next.body["data"]["policy"]["id"], json!(id), "one id across nodes");
    seen(&nodes[0], &key, 2);
}
