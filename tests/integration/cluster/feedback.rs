//! Feedback on a cluster (issue #31 item 2, issue #42 item 4): posted on one node, listed
//! through another node's admin API, its repeat on a third node a replace (one record in etcd,
//! whichever node wrote); a scan answered by one node sent back to another (the signing keys
//! are the cluster's), and the account's own page read on a third, newest first.

use serde_json::json;

use super::nodes::{admin, cluster, finished};
use crate::api::support::{demo_tx, get, post, scan_body, wallet_body, OPEN_DELEGATION, SCAN_PATH};

#[test]
fn feedback_posted_on_one_node_is_listed_by_another() {
    let (nodes, key) = cluster("feedback", &[]);
    let accepted = post(nodes[0].server.api, "/v1/developer/intelligence/wallet", &key, &wallet_body(OPEN_DELEGATION));
    assert!(matches!(accepted.status, 200 | 202), "{accepted:?}");
    let id = accepted.body["data"]["analysisId"].as_str().expect("analysisId").to_owned();
    let done = finished(&nodes[0], &format!("/v1/developer/intelligence/analysis/{id}"), &key);
    let signal = done["data"]["xray"]["signals"][0]["id"].as_str().expect("a signal").to_owned();
    let body = json!({"analysisId": id, "signalId": signal, "verdict": "false_positive"}).to_string();
    let first = post(nodes[0].server.api, "/v1/developer/feedback", &key, &body);
    assert_eq!(first.status, 201, "{first:?}");
    let again = json!({"analysisId": id, "signalId": signal, "verdict": "confirmed"}).to_string();
    let again = post(nodes[2].server.api, "/v1/developer/feedback", &key, &again);
    assert_eq!(again.status, 200, "a replace on another node: {again:?}");
    assert_eq!(again.body["data"]["feedbackId"], first.body["data"]["feedbackId"]);

    let status = get(nodes[1].server.api, "/v1/developer/status", &key);
    let account = status.body["data"]["key"]["account"].as_str().expect("account").to_owned();
    let page = admin(&nodes[1], "GET", &format!("/v1/admin/accounts/{account}/feedback"));
    assert_eq!(page.status, 200, "{page:?}");
    let listed = page.body["data"]["feedback"].as_array().expect("feedback").clone();
    assert_eq!(listed.len(), 1, "{page:?}");
    assert_eq!((listed[0]["analysisId"].as_str(), listed[0]["verdict"].as_str()), (Some(&*id), Some("confirmed")));

    // A scan answered by node 0, sent back to node 2, read back on node 1.
    let scan = post(nodes[0].server.api, SCAN_PATH, &key, &scan_body(&demo_tx("drain"), None));
    assert_eq!(scan.status, 200, "{scan:?}");
    let answer = String::from_utf8(scan.raw_body.clone()).expect("utf-8");
    let body = format!(r#"{{"verdict":"false_positive","scan":{answer}}}"#);
    let given = post(nodes[2].server.api, "/v1/developer/feedback", &key, &body);
    assert_eq!(given.status, 201, "{given:?}");
    let own = get(nodes[1].server.api, "/v1/developer/feedback?limit=1", &key);
    assert_eq!(own.status, 200, "{own:?}");
    assert_eq!(own.body["data"]["feedback"][0]["feedbackId"], given.body["data"]["feedbackId"], "{own:?}");
    let after = own.body["data"]["nextAfter"].as_str().expect("a second page").to_owned();
    let rest = get(nodes[0].server.api, &format!("/v1/developer/feedback?after={after}"), &key);
    assert_eq!(rest.body["data"]["feedback"][0]["analysisId"].as_str(), Some(&*id), "{rest:?}");
    assert!(rest.body["data"]["nextAfter"].is_null(), "{rest:?}");
}
