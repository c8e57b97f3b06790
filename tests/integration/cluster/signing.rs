//! Signed reports on a cluster: two real `xray` nodes on the shared etcd serve one key set
//! (the first node's key won its create-if-absent), a report made on one verifies with the keys
//! fetched from the other, and a rotation on one node (`xray signing-keys rotate`) reaches the
//! other within the reload interval: it publishes the new key, keeps the old one as retired and
//! signs its next report with the new key.

use std::time::{Duration, Instant};

use serde_json::Value;
use xray::signing::{verify_report, ReportType, Verified, VerifyError, KEY_SET_PATH};

use super::etcd;
use super::nodes::{finished, id_of, node, Node};
use crate::api::serve_binary::cli;
use crate::api::support::{analysis_path, post, raw, refresh_body, READY_WALLETS};

const WALLET: &str = "/v1/developer/intelligence/wallet";
/// Longest a rotation may take to reach another node (the reload runs each second).
const ROTATION_PROPAGATION_MAX: Duration = Duration::from_secs(5);

fn key_set(node: &Node) -> Value {
    let reply = raw(node.server.api, "GET", KEY_SET_PATH, &[], "");
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.body
}

fn current_kid(keys: &Value) -> String {
    let keys = keys["keys"].as_array().expect("keys");
    let current = keys.iter().find(|k| k["status"] == "current").expect("a current key");
    current["kid"].as_str().expect("kid").to_owned()
}

/// The key id that signed the analysis `data`.
fn verified_by(data: &Value, keys: &Value) -> Result<String, VerifyError> {
    verify_report(data, keys, ReportType::Analysis).map(|Verified { key_id, .. }| key_id)
}

fn report(node: &Node, key: &str, wallet: &str) -> Value {
    let admitted = post(node.server.api, WALLET, key, &refresh_body(wallet));
    assert!(matches!(admitted.status, 200 | 202), "{admitted:?}");
    let done = finished(node, &analysis_path(&id_of(&admitted)), key);
    assert_eq!(done["data"]["status"], "READY", "{done}");
    done["data"].clone()
}

#[test]
fn nodes_share_one_signing_key_and_a_rotation_on_one_reaches_the_other() {
    let prefix = etcd::fresh_prefix("signing");
    let (a, b) = (node(&prefix, &[]), node(&prefix, &[]));
    let key = a.server.first_key.clone().or_else(|| b.server.first_key.clone()).expect("a first key");
    let first = key_set(&a);
    assert_eq!(key_set(&b), first, "one key set on every node");
    let first_kid = current_kid(&first);
    // Made on A, verified with B's keys.
    let before = report(&a, &key, READY_WALLETS[0]);
    assert_eq!(verified_by(&before, &key_set(&b)), Ok(first_kid.clone()));

    let rotation = cli(a.dir.path(), "signing-keys", &["rotate"]).expect("rotated on A");
    assert_eq!(rotation["retiredKeyId"], first_kid.as_str());
    let new_kid = rotation["keyId"].as_str().expect("keyId").to_owned();
    let rotated_at = Instant::now();
    let on_b = loop {
        let keys = key_set(&b);
        if current_kid(&keys) == new_kid {
            break keys;
        }
        assert!(
            rotated_at.elapsed() < ROTATION_PROPAGATION_MAX,
            "B still publishes {first_kid} after {:?}",
            rotated_at.elapsed()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    eprintln!("the rotation reached the other node after {:?}", rotated_at.elapsed());
    assert_eq!(on_b, key_set(&a), "the same key set on both nodes after the rotation");
    // The report signed before still verifies (retired key); B now signs with the new key.
    assert_eq!(verified_by(&before, &on_b), Ok(first_kid));
    let after = report(&b, &key, READY_WALLETS[1]);
    assert_eq!(verified_by(&after, &key_set(&a)), Ok(new_kid));
}
