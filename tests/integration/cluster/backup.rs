//! A cluster's backup is etcd's snapshot (issue #43 item 4), done once as README "Backup and
//! restore" says: `etcdctl snapshot save`, every member killed and wiped, `etcdctl snapshot
//! restore` into new member directories, the members and the nodes started again — every node
//! serves the same keys, usage and results. A node's own `xray backup` refuses (409), naming
//! the snapshot.

use std::time::{Duration, Instant};

use super::etcd::{fresh_prefix, EtcdCluster};
use super::nodes::start_node_on;
use crate::api::serve_binary::{cli, keys};
use crate::api::support::{get, post, API, READY_WALLETS};

#[test]
fn an_etcd_snapshot_restores_every_nodes_keys_usage_and_results() {
    let mut etcd = EtcdCluster::start(3, &[]);
    let prefix = fresh_prefix("snapshot");
    let dirs: Vec<tempfile::TempDir> = (0..2).map(|_| tempfile::tempdir().expect("tempdir")).collect();
    let mut nodes: Vec<_> = dirs.iter().map(|d| start_node_on(&etcd.endpoints(), d.path(), &prefix, &[])).collect();
    let key = nodes.iter().find_map(|n| n.first_key.clone()).expect("the cluster's first key");
    let reader = keys(dirs[1].path(), &["create", "--name", "reader", "--scopes", "usage:read"]).expect("a key");
    let reader_key = reader["key"].as_str().expect("secret").to_owned();
    let mut ready = Vec::new();
    for wallet in &READY_WALLETS[..2] {
        let reply =
            post(nodes[0].api, &format!("{API}/intelligence/wallet"), &key, &format!(r#"{{"wallet":"{wallet}"}}"#));
        let id = reply.body["data"]["analysisId"].as_str().unwrap_or_else(|| panic!("{reply:?}")).to_owned();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let polled = get(nodes[1].api, &format!("{API}/intelligence/analysis/{id}?wait=10"), &key);
            if polled.body["data"]["status"] == "READY" {
                ready.push((id, polled.body["data"].clone()));
                break;
            }
            assert!(Instant::now() < deadline, "{polled:?}");
        }
    }
    let usage_before = get(nodes[0].api, &format!("{API}/usage"), &key).body["data"]["quota"].clone();
    assert_eq!(usage_before["used"].as_u64(), Some(2), "{usage_before}");

    let refused = cli(dirs[0].path(), "backup", &["--to", "/tmp/never-written"]);
    assert!(refused.as_ref().is_err_and(|e| e.contains("409") && e.contains("etcdctl snapshot save")), "{refused:?}");

    let snapshot = tempfile::tempdir().expect("tempdir");
    let file = snapshot.path().join("etcd.db");
    etcd.snapshot_save(&file);
    for node in &mut nodes {
        node.stop_gracefully();
    }
    etcd.restore_from_snapshot(&file);
    let nodes: Vec<_> = dirs.iter().map(|d| start_node_on(&etcd.endpoints(), d.path(), &prefix, &[])).collect();
    for node in &nodes {
        assert_eq!(node.first_key, None, "the restored keyspace has its keys");
        assert_eq!(get(node.api, &format!("{API}/status"), &reader_key).status, 200, "a key made before the snapshot");
        let usage = get(node.api, &format!("{API}/usage"), &key).body["data"]["quota"].clone();
        assert_eq!(usage, usage_before, "usage as it was at the snapshot");
        for (id, data) in &ready {
            let reply = get(node.api, &format!("{API}/intelligence/analysis/{id}"), &key);
            assert_eq!(&reply.body["data"], data, "{id} served as it was, signature included");
        }
    }
}
